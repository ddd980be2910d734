/*
** What the two files of sink_transposes share (passes/merge/ only):
** transpose_through.c says how each op a Transpose moves past reads the
** Transpose's input instead, and transpose_sink.c decides where a Transpose
** moves and moves it (it calls the first, never the other way).
*/
#ifndef TILEOPT_TRANSPOSE_SINK_H
#define TILEOPT_TRANSPOSE_SINK_H

#include "passes/passes.h"
#include "passes/rewrite.h"

#define TS_MAX_PERM 16

/* What an op needs once a Transpose by q moves past it, and what it leaves. */
typedef struct moved {
    int64_t q[TS_MAX_PERM];     /* the permutation between the op's input (output) and y */
    size_t rank;
    int64_t dims[TS_MAX_PERM];  /* the dims the value had before the move, when known */
    bool dims_known;
    int64_t vals[TS_MAX_PERM];  /* the op's new axes (Slice, Squeeze), target (Reshape) */
    size_t n_vals;
    int64_t axis;            /* Gather's new axis */
    enum { SET_NONE, SET_AXES, SET_SHAPE, SET_AXIS } set;
} moved;

/* The permutation of Transpose n of an input of rank `rank` (-1: unknown),
** the reversal when perm is absent; false when it cannot be known. */
bool ts_perm_of(const Onnx__NodeProto *n, int32_t rank, int64_t *p, size_t *len);
/* The dims of value name, as numbers, into m. */
void ts_dims_of(graph *g, const char *name, moved *m);
bool ts_is_identity(const moved *m);
/* The one input slot of n that reads name; -1 when none or several do. */
int ts_slot_of(const Onnx__NodeProto *n, const char *name);
/* The ops a Transpose moves past, whatever their attributes. */
bool ts_movable(op_id op);
/* The input of movable op n that a Transpose above it reaches it through. */
const char *ts_data_input(graph *g, const Onnx__NodeProto *n);
/*
** How node r, reading y (in: Transpose(x, in->q), y's dims in in->dims) reads
** x instead: *m gets the permutation that then gives r's output, the dims
** that output had, and what r takes on x instead (axes, a target, an axis).
** False, with why (NULL for ops it never moves past, and binary ops beside a
** computed operand), when it cannot.
*/
bool ts_through(pass_ctx *pc, graph *g, int32_t r, const char *y, const moved *in, moved *m,
                const char **why);

#endif

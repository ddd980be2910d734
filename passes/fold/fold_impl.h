/*
** What the fold pass's files share (passes/fold/ only): what a sweep knows of
** each value and node, and the steps of the sweep, by file.
**
** Files call only files before them in helpers -> candidates -> try -> tile ->
** fold: phases A and B mark what may fold (candidates.c), one node folds in
** try.c, the Tile rewrites that need no values are tile.c's, and fold.c sweeps
** each graph and runs the rounds (tests/harness/file_cycles.py fails on any two
** files that call each other).
*/
#ifndef TILEOPT_FOLD_IMPL_H
#define TILEOPT_FOLD_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "passes/pass.h"
#include "shape/dim.h"

/* Phase A's verdict on a value: it may become a constant, or a partial shape. */
enum { VS_NONE = 0, VS_CONST = 1, VS_PARTIAL = 2 };

/* A node whose outputs are over the size budget but whose readers may all fold
** is evaluated anyway and kept (TR_KEPT); when every reader folded it goes too
** (TR_GONE): the big intermediate of a constant chain is never stored. */
enum { TR_NONE = 0, TR_KEPT = 1, TR_GONE = 2 };

/* What the sweep knows of a value. The bookkeeping of readers (remaining,
** needed, fold_out) is for the values the sweep started with (nv0). */
typedef struct fold_value {
    tensor *val;             /* its constant, once read or computed */
    uint8_t state;           /* phase A's verdict (VS_*) */
    bool partial;            /* a shape known in part (by shape inference), no tensor */
    bool needed;             /* a reader did not fold, or a subgraph reads it */
    bool fold_out;           /* output of a folded node */
    bool held_known;         /* held is set (else read from the graph) */
    int32_t remaining;       /* input slots still to be looked at */
    uint64_t held;           /* bytes of the file that go with it (fd_held_bytes) */
} fold_value;

typedef struct fold_node {
    op_id op;                /* looked up once (OP_NONE outside the table) */
    bool sym_only;           /* inference knows the output with named dims and no
                             ** reader needs it as a partial shape */
    bool maybe;              /* may fold */
    bool scope;              /* in the fold scope */
    bool folded;
    uint8_t transient;       /* evaluated over the size budget for readers that may
                             ** fold (TR_*) */
    uint64_t in_bytes, out_bytes, freed; /* a transient's, for its report */
} fold_node;

typedef struct fold_graph {
    pass_ctx *pc;
    graph *g;
    int64_t opset;
    uint32_t nv, nn;         /* values (grows with the graph's) and nodes of the sweep */
    uint32_t nv0;            /* values when the sweep started */
    fold_value *v;
    fold_node *node;
    bool tiles_open;         /* the model holds a Tile whose repeats are not known yet */
    int32_t *order;
    uint32_t count;
} fold_graph;

/* ---------------------------------------------------------------- helpers */

/* Index of a value in the sweep's table, which grows with the graph's values
** (-1: none, or out of memory); the value at a node's input or output slot. */
int32_t fd_vslot(fold_graph *f, const graph_value *v);
int32_t fd_vin(fold_graph *f, int32_t node, size_t slot);
int32_t fd_vout(fold_graph *f, int32_t node, size_t slot);
/* The op of node idx: the sweep's table for the nodes it started with. */
op_id fd_op_at(const fold_graph *f, int32_t idx);
/* The constant behind value i, or NULL; *partial tells a partial shape. */
void fd_get_const_at(fold_graph *f, int32_t i, tensor **out, bool *partial);
/* The type of a value, or of node's input (or output) slot; NULL when absent. */
const graph_type *fd_type_of_value(fold_graph *f, graph_value *v);
const graph_type *fd_type_in(fold_graph *f, int32_t node, size_t slot);
const graph_type *fd_type_out(fold_graph *f, int32_t node, size_t slot);
/* Shape's [start, end) window (attributes from opset 15 on), clamped; whether
** Shape (or Size) node idx reads only static dims of its input type t. */
void fd_shape_window(const Onnx__NodeProto *n, int64_t opset, int32_t rank, int64_t *s,
                     int64_t *e);
bool fd_reads_static_dims(fold_graph *f, int32_t idx, op_id op, const graph_type *t);
/* The single output of node idx when shape inference knows it as numbers though
** its inputs are not constant, and that output as a tensor. */
const shape_value *fd_known_by_inference(fold_graph *f, int32_t idx);
int fd_inferred_tensor(fold_graph *f, int32_t idx, tensor **out);
/* May input i of op be a partial shape? Only where the op moves entries. */
bool fd_partial_ok(op_id op, size_t i);
/* The size policy's accounts: the bytes of the file that go when the last
** reader of value vi folds (an initializer's entry, what a fold wrote for
** it, what a chain intermediate's node frees; none for an initializer that is
** also a graph input, which stays); what making a value called name a new
** initializer writes (its entry, the graph input listing it below IR 4, and
** the Identity that keeps a graph output's name). */
uint64_t fd_held_bytes(fold_graph *f, int32_t vi);
void fd_set_held(fold_graph *f, int32_t vi, uint64_t bytes);
uint64_t fd_new_const_bytes(fold_graph *f, const char *name, int32_t elem, const int64_t *dims,
                            size_t rank, uint64_t nbytes, bool graph_output);

/* ---------------------------------------------------------------- the sweep */

/* candidates.c: phase A (which values may become constant or partial shapes,
** and where a partial shape is worth looking at) and phase B (the scope). */
void fd_phase_sym_only(fold_graph *f);
void fd_phase_candidates(fold_graph *f);
int fd_phase_scope(fold_graph *f);

/* try.c: fold node idx if it can be (*done): decide, evaluate, record. */
int fd_try_fold(fold_graph *f, int32_t idx, bool *done);

/* tile.c: the Tile rewrites that need no values but the repeats. */
int fd_tile_rewrite(fold_graph *f, int32_t idx);

#endif

/*
** What the fuse pass's files share (passes/fuse/ only): the dims of a Tile and
** of its readers, the pass state, the plan made for each reader, the helpers
** the rules build with, and every rule, declared in the order they are
** numbered (fuse.c says what each does).
**
** Files call only files before them in helpers -> rule_redundant -> rule_sink
** -> rule_split -> rule_shape -> rule_expand -> plan -> fuse: the rules share
** the helpers, plan picks the rule for each reader of a Tile, and fuse.c walks
** the Tiles (tests/harness/file_cycles.py fails on any two files that call
** each other).
*/
#ifndef TILEOPT_FUSE_IMPL_H
#define TILEOPT_FUSE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "passes/pass.h"
#include "shape/dim.h"

#define FZ_MAX_RANK TENSOR_MAX_RANK

/*
** Rule 5 (a Tile left over size-1 axes -> Expand) applies only where ONNX
** Runtime runs the Expand no slower. Measured with its profiler (ORT 1.30, one
** thread, bench/bench_fuse.py cases expand and expand_inner, and the shapes in
** docs/passes.md), Expand is 1.2-11x faster when the innermost axis alone
** repeats a size-1 axis 16 or more times ([N,1] x [1,r]: ORT's Tile then copies
** element by element), but 0.4-1.0x for fewer repeats ([8192,1] x [1,2]), for
** an outer axis repeated too ([1,64,1,1] x [8,1,56,56], the bias shape) and for
** repeats of outer axes only ([1,2048] x [256,1], which ORT's Tile does with
** memcpy). For tileopt's evaluator and any runtime with stride-0 views Expand is
** free.
** -DFUSE_RULE5=0 turns the rule off.
*/
#define FUSE_EXPAND_MIN_REPEATS 16
#ifndef FUSE_RULE5
#define FUSE_RULE5 1
#endif

/*
** Dims in this pass are the shape layer's (shape/dim.h): a number, a named dim
** or unknown, equal only when they are the same number or the same named dim,
** never by guess, so a Tile over a dynamic batch goes through the same rules as
** a static one.
*/
typedef struct fz_shape {
    int32_t rank;
    int32_t elem;
    dim d[FZ_MAX_RANK];
} fz_shape;

/* ----------------------------------------------------------------- Tiles */

typedef struct fz_tile {
    int32_t node;
    const char *x, *reps, *out;
    fz_shape xs;                 /* d */
    dim r[FZ_MAX_RANK];
    dim t[FZ_MAX_RANK];          /* d * r */
    bool fixed;                  /* d and r all numbers: sizes and the view are known */
    size_t esize;
    uint64_t t_numel;            /* when fixed */
} fz_tile;

/* --------------------------------------------------------------- state */

enum { P_NONE, P_R1, P_R2, P_R3C, P_R3T, P_R4, P_R6 };

typedef struct fz_plan {
    int32_t node;
    int kind;
    bool r4_ok;              /* rule 4 applies: the fallback when sinking is blocked */
    int32_t other_tile;      /* P_R3T: Tile node of the other operand */
    char why[512];
} fz_plan;

typedef struct fz_state {
    pass_ctx *pc;
    graph *g;
    int64_t opset;
    int32_t *work;
    size_t n_work, cap_work;
    char **why;              /* per node: why a Tile stays */
    uint32_t *stamp;         /* per node: last Tile step that planned it */
    size_t cap_nodes;
    uint32_t step;
} fz_state;

/* ---------------------------------------------------------------- helpers */

/* The consumer's row in the op table when it is an elementwise op (graph/ops.h:
** kind, output type, broadcasting and the opset it starts at), else NULL. */
const op_info *fz_elementwise(const Onnx__NodeProto *n);

/* Shapes: elements and numbers of a static one; a value's (this or an
** enclosing scope's) when shape inference knows its rank; "[2,N,?]"; the
** dims for a report (numbers, named dims as strings, unknown as null). */
uint64_t fz_numel(const dim *d, int32_t rank);
void fz_nums(const dim *d, int32_t rank, int64_t *out);
bool fz_shape_of(graph *g, const char *name, fz_shape *s);
void fz_shape_str(char *buf, size_t cap, const dim *d, int32_t rank);
void fz_json_dims(json_w *a, const char *key, const dim *d, int32_t rank);

/* An optional input that is absent or constant; a new node whose inputs are
** all constant, which fold has to compute (pc->wake). */
bool fz_input_constant(graph *g, const char *name);
void fz_note_foldable(pass_ctx *pc, graph *g, const char *const *ins, size_t n);

/* Read Tile node i: repeats constant or of known length, input of known rank.
** 1 with *why set when the Tile cannot be analysed; a negated status when the
** Tile is invalid. */
int fz_read_tile(pass_ctx *pc, graph *g, int32_t i, fz_tile *t, char *why, size_t cap);
/* Is the Tile a broadcast: does every axis it repeats have size 1? */
bool fz_is_broadcast(const fz_tile *t);

/* The state: per-node tables that grow with the graph, the worklist, why a
** Tile stays; live readers of a value in this graph. */
void fz_strlcpy(char *dst, size_t cap, const char *src);
int fz_grow_nodes(fz_state *st);
int fz_push(fz_state *st, int32_t node);
int fz_set_why(fz_state *st, int32_t node, const char *why);
uint32_t fz_live_uses(graph *g, const char *name);

/* Rewriting: the consumer's output shape before the rewrite; attributes a copy
** of the consumer can take; a new value's type; the consumer's output element
** type; a unique name from the node's; a static shape as an initializer. */
bool fz_consumer_out(fz_state *st, const fz_tile *t, const Onnx__NodeProto *c, dim *out,
                     int32_t *ro);
bool fz_attrs_copyable(const Onnx__NodeProto *n);
int fz_copy_attrs(graph *g, Onnx__NodeProto *dst, const Onnx__NodeProto *src);
int fz_set_type(fz_state *st, const char *name, int32_t elem, const dim *d, int32_t rank);
int32_t fz_out_elem(fz_state *st, const Onnx__NodeProto *c, op_out out, const fz_tile *t);
const char *fz_hint(graph *g, int32_t node, const char *suffix);
int fz_shape_init(fz_state *st, const char *hint, const dim *d, int32_t rank,
                  const char **name);

/* The report of a rewrite (fz_report: T is no longer materialized for this
** reader). */
json_w *fz_report_as(fz_state *st, const fz_tile *t, int32_t ci, const char *action,
                    int rule, const char *rule_name, uint64_t el_before,
                    uint64_t el_after, uint64_t bytes_after, uint64_t saved);
void fz_report(fz_state *st, const fz_tile *t, int32_t ci, int rule, const char *rule_name,
               uint64_t el_before, uint64_t el_after, uint64_t bytes_after);

/* ------------------------------------------------------------------ rules */

/* Rule 1 (rule_redundant.c): reading x instead of T gives the same output;
** MatMul's batch dims as a broadcasting op's; the rewrite. */
bool fz_redundant(const fz_tile *t, const fz_shape *o, bool uni, int slot);
int fz_plan_matmul(fz_state *st, const fz_tile *t, const Onnx__NodeProto *c,
                   const char *cid, fz_plan *p);
int fz_read_through(fz_state *st, const fz_tile *t, const fz_plan *p);

/* Rules 2 and 3 (rule_sink.c): an operand invariant under the tiling, or
** tiled the same way; the rewrite C(.., T, ..) -> Tile(C(.., x, ..), r). */
bool fz_invariant(const fz_tile *t, const fz_shape *o);
int fz_same_tiling(fz_state *st, const fz_tile *t, const char *name, int32_t *tile2,
                   bool *ok);
int fz_sink(fz_state *st, const fz_tile *t, const fz_plan *p);

/* Rule 4 (rule_split.c, --fuse-split): B(T, y) -> Reshape(B(x', y'), shape(T)). */
bool fz_splittable(const fz_tile *t, const fz_shape *o);
int fz_split(fz_state *st, const fz_tile *t, const fz_plan *p);

/* Rule 6 (rule_shape.c): Shape(T) -> Mul(Shape(x), r). */
int fz_shape_reader(fz_state *st, const fz_tile *t, const fz_plan *p);

/* Rule 5 (rule_expand.c): a Tile left over size-1 axes becomes Expand where it
** pays; *declined says why it does not. */
int fz_expand(fz_state *st, int32_t ti, const char *why_kept, int *declined);

/* plan.c: the rule for one reader of a Tile, or why none applies. */
int fz_plan_consumer(fz_state *st, const fz_tile *t, int32_t ci, fz_plan *p);

#endif

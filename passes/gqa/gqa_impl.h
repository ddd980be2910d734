/*
** What the files of the gqa pass share (passes/gqa/gqa.c says what the pass
** does). Files call only files before them in repeat -> emit -> heads ->
** region -> gqa (tests/harness/file_cycles.py fails on any two that call each
** other): repeat.c proves what a value is (a repeat of heads, dims of one
** size), emit.c builds the nodes of a rewrite, heads.c folds one MatMul of a
** kv-major repeat, region.c one attention of an n-major repeat, gqa.c walks
** the graphs.
*/
#ifndef TILEOPT_GQA_IMPL_H
#define TILEOPT_GQA_IMPL_H

#include "graph/const.h"
#include "graph/ops.h"
#include "passes/passes.h"
#include "passes/rewrite.h"
#include "shape/dim.h"

/* The attention tensors are [B, heads, rows, cols]. */
#define GQA_RANK 4
/* Layout ops followed from a repeat to the MatMul that reads it. */
#define GQA_MAX_TRANSPOSES 4
/* Nodes that read the query rows for the folds' targets and the If's
** condition: Shape (and Slice before opset 15), Mul, two Concats, LessOrEqual. */
#define GQA_ROWS_NODES 6
/* Ops between the two MatMuls of one attention. */
#define GQA_MAX_CHAIN 16
/*
** The folded form's rows per MatMul (n query heads times the query rows) up to
** which it beats the export's repeat. Past them its one product per group
** loses to the export's per-head products: each pass over the folded queries
** no longer stays in the cache (ONNX Runtime 1.30, 1 thread, Llama-3-8B heads
** 32/8/128 and Gemma's 8/1/256, attention time folded against the export's:
** over a cache of 4096, 3.5x and 6x at one query, 1.3x at 128, 1.1x at 256;
** Gemma at 512 queries over 1024 keys 0.81x, Llama 1.03x; prefill of 2048,
** 0.77 to 0.87x). Where the rows are known the rewrite is made or not; where
** they are a named dim an If picks the form at run time.
*/
#define GQA_FOLD_MAX_ROWS 1024
/* The doc_string of that If: the export's form in its else branch is left to
** run as it is, not rewritten again. */
extern const char gq_dispatch_doc[];

/* ---------------------------------------------------------------- dims */

static inline const graph_type *gq_type_of(graph *g, const char *name) {
    graph_value *v = name && *name ? graph_resolve(g, name) : NULL;
    return v ? &graph_value_home(g, v, NULL)->type : NULL;
}

/* Dim i of t: a number >= 0, or -1 (named or unknown). */
static inline int64_t gq_num(const graph_type *t, int32_t i) {
    return dim_stored_n(dim_at(t, i));
}

/* Provably the same dim: the same number, or the same named dim. */
static inline bool gq_same(const graph_type *a, int32_t i, const graph_type *b, int32_t j) {
    return dim_eq(dim_at(a, i), dim_at(b, j));
}

static inline bool gq_ranked(const graph_type *t, int32_t rank) {
    return t && t->rank == rank;
}

/* Axis a of v and axis b of w provably have one size: by their shapes, by
** where they come from, or as broadcasts of the same dims (repeat.c). */
bool gq_same_dim(graph *g, const char *v, int32_t a, const char *w, int32_t b);

/* ------------------------------------------------------------- repeats */

/* A tensor repeated along its head axis. */
typedef struct gq_repeat {
    const char *src;         /* the tensor before the repeat */
    const char *out;         /* the repeated one */
    int32_t axis;            /* head axis of both */
    int64_t kv, n;           /* heads of src; copies of each */
    bool kv_major;           /* out head h is src head h div n (else h mod kv) */
    int32_t nodes[4];        /* the nodes that make it */
    int n_nodes;
} gq_repeat;

/* A MatMul's second operand seen as a repeat of heads through layout ops:
** the repeat, the Transposes from it to the operand (in the order they apply)
** and their perms. */
typedef struct gq_operand {
    gq_repeat r;
    int64_t perm[GQA_MAX_TRANSPOSES][GQA_RANK];
    int32_t layout[GQA_MAX_TRANSPOSES];
    int n_layout;
} gq_operand;

/* What gq_operand_of says of an operand that no repeat reaches: no reason to
** give (a MatMul of anything else). */
extern const char gq_not_repeat[];
/* NULL when value name (a MatMul's second operand) is a repeat of heads seen
** through Transposes that bring the head axis to axis 1 (o filled);
** gq_not_repeat when nothing repeats there; else why the repeat there is not
** one of heads. */
const char *gq_operand_of(graph *g, const char *name, gq_operand *o);
/* The axis of o's source that becomes axis i of the operand. */
int32_t gq_source_axis(const gq_operand *o, int32_t i);

/* Every live reader of value name is node `only` (and name is no graph output). */
bool gq_read_only_by(graph *g, const char *name, int32_t only);
/* The one live node reading name (no graph output, no subgraph), or -1. */
static inline int32_t gq_sole_reader(graph *g, const char *name) {
    int32_t r;
    return rw_sole_consumer(g, name, &r) ? r : -1;
}
/* The operand and its repeat have no reader but the MatMul at m: else they
** stay materialized whatever the rewrite does. */
bool gq_operand_private(graph *g, const gq_operand *o, int32_t m);

/* ------------------------------------------------------------------ emit */

typedef struct gq_emit {
    pass_ctx *pc;
    graph *g;
    int32_t at;              /* the node new names are made from */
    int64_t opset;
    int rc;                  /* the first failure; every step after it does nothing */
} gq_emit;

/* A 1-D int64 constant. */
const char *gq_ints(gq_emit *e, const char *what, const int64_t *v, size_t n);
/* A node of one output: out, or a fresh name when out is NULL; *made (may be
** NULL) gets it. */
const char *gq_node(gq_emit *e, const char *op, const char *what, const char *const *ins,
                    size_t n_in, const char *out, Onnx__NodeProto **made);
/* Reshape x to the shape in value target, every entry a size (allowzero). */
const char *gq_reshape(gq_emit *e, const char *x, const char *target, const char *out);
/* Reshape x to the shape in value target, a 0 entry copying x's dim at the
** same index (no allowzero: any opset). */
const char *gq_reshape_copying(gq_emit *e, const char *x, const char *target, const char *out);
/* The 1-D tensors ins joined (a shape made of parts). */
const char *gq_concat(gq_emit *e, const char *const *ins, size_t n);
/* Dims [start, end) of x's shape as a 1-D tensor (Shape's start and end from
** opset 15, a Slice of the whole shape before). */
const char *gq_shape_part(gq_emit *e, const char *x, int64_t start, int64_t end);
/* The query rows of a [B, heads, rows, inner] as a 1-D tensor, and (*group)
** n times them: the rows of the folded form. */
const char *gq_query_rows(gq_emit *e, const char *a, int64_t n, const char **group);
/* The condition under which the folded form runs: group <= GQA_FOLD_MAX_ROWS. */
const char *gq_few_rows(gq_emit *e, const char *group);
const char *gq_transpose(gq_emit *e, const char *x, const int64_t *perm, size_t n);
/* Unsqueeze x at axis 1. */
const char *gq_unsqueeze1(gq_emit *e, const char *x);
/* o's source with the layout ops the operand had. */
const char *gq_relayout(gq_emit *e, const gq_operand *o);
/* A copy of node i reading `in` where it read `was` (a scores tensor): its
** other 4-D operands unsqueezed at axis 1 when five (a 5-D view of the
** scores), a Softmax's axis the last one. */
const char *gq_copy_op(gq_emit *e, bool five, int32_t i, const char *was, const char *in);

/*
** The sizes a folded shape is made of: numbers where the shapes say, else read
** at run time from the MatMul's first operand a [B, heads, rows, inner] (its
** batch and rows) and from the repeat's source (the columns, and the inner
** size), never from the operand's Transpose: a second reader of it keeps ONNX
** Runtime from fusing it into the MatMul, and a Transpose not fused writes the
** whole cache out at every step.
*/
enum { GQ_BATCH = -2, GQ_ROWS = -3, GQ_GROUP_ROWS = -4, GQ_INNER = -5, GQ_COLS = -6 };
typedef struct gq_sizes {
    gq_emit *e;
    const char *a, *src;
    int32_t src_inner, src_cols;  /* the source's axes that become inner and columns */
    int64_t batch, rows, inner, cols;  /* -1: at run time */
    int64_t n;
    const char *got[5];           /* the 1-element tensors, made on first need */
} gq_sizes;
/* A 1-D shape of n entries, each a number or one of GQ_*. */
const char *gq_shape(gq_sizes *z, const int64_t *spec, int n);

/* One If writing out, a tensor of element type elem: copies of the nodes fold
** (in that order: the folded form, writing out; removed from g) run when cond
** holds, copies of the export's nodes orig (in g's order, writing out; left to
** the caller) otherwise. */
int gq_dispatch(gq_emit *e, const char *cond, const int32_t *fold, size_t n_fold,
                const int32_t *orig, size_t n_orig, const char *out, int32_t elem);
/* Node indices in g's order (the export's nodes, which the last commit sorted). */
void gq_sort_nodes(int32_t *v, size_t n);

/*
** A folded MatMul whose form an If is to pick: the nodes made for it (from
** first up to last, the last writing out) and the export's nodes they stand
** for. The two MatMuls of one attention share one If, so that its output is
** the attention's, not the big scores between them (gqa.c pairs them and
** makes the condition from the first's rows).
*/
typedef struct gq_pending {
    const char *a;           /* the MatMul's first operand: its rows decide */
    int64_t n;
    size_t rows;             /* its gq_rows */
    const char *out;
    uint32_t first, last;
    int32_t orig[GQA_MAX_TRANSPOSES + 6];
    int n_orig;
    int32_t elem;
} gq_pending;
/*
** What the kv-major folds whose query rows are a named dim read at run time:
** the targets of their two Reshapes, [0, kv, n*rows, 0] and [0, heads, rows,
** 0] (a 0 copies the dim at the same index, so batch and columns need no Shape
** and an empty batch stays exact), and the If's condition n*rows <=
** GQA_FOLD_MAX_ROWS. Made once in the main graph, before any fold's nodes, from
** the first MatMul whose rows are axis 2 of `of`; every later MatMul whose rows
** are provably the same (every layer's, in a decoder) reads them too.
*/
typedef struct gq_rows {
    const char *of;
    int64_t kv, n;
    const char *fold, *back, *cond;
    int32_t nodes[GQA_ROWS_NODES]; /* the nodes that make them, the condition's last */
    int n_nodes;
    int users;               /* the folds that read them */
} gq_rows;
/*
** What the n-major regions whose query rows are a named dim read at run time:
** the If's condition, 1 <= batch and 1 <= rows besides n*rows <=
** GQA_FOLD_MAX_ROWS, under which every Reshape target of the region can be a
** constant with one -1 (the other dims of each are then at least 1), and,
** for a region whose mask varies along the rows, the targets of the scores'
** 5-D view [0, kv, n, rows, -1] and back [0, kv, n*rows, -1]. Made once in
** the main graph, before any region's nodes, from the first queries whose
** batch and rows are provably the same as a region's.
*/
typedef struct gq_guard {
    const char *of;
    int64_t kv, n;
    const char *rows, *group_rows, *cond;
    const char *view5, *view4;   /* made when a region first needs them */
} gq_guard;
typedef struct gq_pendings {
    gq_pending *v;
    size_t n, cap;
    gq_rows *rows;
    size_t n_rows, cap_rows;
    gq_guard *guards;
    size_t n_guards, cap_guards;
} gq_pendings;


/* Bytes of a tensor type: a number, or a formula in its named dims ("" when
** not known). */
void gq_bytes_text(graph *g, const graph_type *t, char *buf, size_t cap);
/* Remove the Transposes and repeat nodes of o that nothing reads now, each
** recorded as eliminated. */
void gq_drop_repeat(pass_ctx *pc, graph *g, const gq_operand *o);
/* The words of the report for a repeat's order. */
const char *gq_order_text(const gq_repeat *r);

/* ---------------------------------------------------------------- rewrites */

/* Fold the MatMul at m, whose second operand o is a kv-major repeat (heads.c).
** *why when it does not fit (nothing changed). Where an If is to pick the
** form, the fold is pushed on later for gqa.c to dispatch. */
int gq_fold_matmul(pass_ctx *pc, graph *g, int32_t m, const gq_operand *o, gq_pendings *later,
                   const char **why);
/* Fold the attention whose scores MatMul is mm1 with an n-major repeat of K
** (region.c); *second is set to the probabilities' MatMul once found (-1
** before), *why when it does not fit. */
int gq_fold_region(pass_ctx *pc, graph *g, int32_t mm1, gq_pendings *shared, int32_t *second,
                   const char **why);

#endif

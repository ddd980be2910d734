/*
** Internals shared by the files of shape inference (shape/infer_*.c): a type
** under construction, what an op's rule sees of its node, the helpers rules
** share, and the rules by op family (the table that ties them to ops is in
** infer.c).
**
** The files of shape/ call only files before them in symdim -> dim ->
** infer_util -> infer_elementwise -> infer_data -> infer_nn -> infer: the dim
** type knows the polynomials, the rules share infer_util, and the driver
** (infer.c) holds the table of rules (tests/harness/file_cycles.py fails on any
** two files that call each other).
*/
#ifndef TILEOPT_INFER_IMPL_H
#define TILEOPT_INFER_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"
#include "shape/dim.h"

#define IR_MAX DIM_MAX_RANK /* highest rank tracked; beyond it shapes stay unknown */
#define IV_MAX 4096      /* most entries of a tracked constant value */

/* A type under construction. */
typedef struct build_type {
    int32_t elem;
    int32_t rank;
    dim d[IR_MAX];
} build_type;

typedef struct node_ctx {
    graph_model *m;          /* dim names live in its arena: types keep them */
    arena *tmp;              /* the run's scratch: tracked values */
    graph *g;
    int32_t idx;
    const Onnx__NodeProto *n;
    int64_t opset;
    size_t n_in;
    const graph_type **in;   /* NULL for absent inputs */
    const shape_value **inv; /* NULL when not known */
    size_t n_out;
    build_type *out;
    shape_value **outv;
} node_ctx;

typedef void (*infer_fn)(node_ctx *c);

/* ---------------------------------------------------------------- helpers */

/* Entry k of ov becomes entry i of xv. */
static inline void sv_take(shape_value *ov, int64_t k, const shape_value *xv, int64_t i) {
    ov->e[k] = xv->e[i];
    if (xv->f) ov->f[k] = xv->f[i];
}

static inline int64_t dmul(int64_t a, int64_t b) {
    if (a < 0 || b < 0) return -1;
    if (a != 0 && b > INT64_MAX / a) return -1;
    return a * b;
}

/* A size that is a number, or unknown (a product that overflowed). */
static inline dim size_num(int64_t v) { return v >= 0 ? dim_num(v) : dim_unknown(); }

static inline void type_unknown(build_type *t) {
    t->elem = 0;
    t->rank = -1;
}

/* The dims of a type with a known rank. */
static inline void dims_of(const graph_type *t, dim *d) {
    for (int32_t i = 0; i < t->rank; i++) d[i] = dim_at(t, i);
}

/* The number of dim i of t, -1 when it is none (the arithmetic of windows
** and pads works on sizes only). */
static inline int64_t tdim(const graph_type *t, int32_t i) {
    dim d = dim_at(t, i);
    return dim_is_num(d) ? d.n : -1;
}

static inline void put_dim(build_type *o, int32_t i, const graph_type *t, int32_t j) {
    o->d[i] = dim_at(t, j);
}

static inline const graph_type *IN(const node_ctx *c, size_t i) {
    return i < c->n_in ? c->in[i] : NULL;
}

static inline bool has_rank(const graph_type *t) { return t && t->rank >= 0 && t->rank <= IR_MAX; }

/* A number that is a size (what a declared type and an inferred one compare). */
static inline bool is_size(dim d) { return dim_is_num(d) && d.n >= 0; }

static inline int32_t in_elem(const node_ctx *c, size_t i) {
    const graph_type *t = IN(c, i);
    return t ? t->elem : 0;
}

/* Normalize an axis against rank; false when out of range. */
static inline bool norm_axis(int64_t a, int32_t rank, int32_t *out) {
    if (a < -(int64_t)rank || a >= rank) return false;
    *out = (int32_t)(a < 0 ? a + rank : a);
    return true;
}

/* Entry k of a tracked value becomes the known number x (or float f). */
static inline void sv_set(shape_value *iv, int64_t k, int64_t x) { iv->e[k] = dim_num(x); }

static inline void sv_set_float(shape_value *iv, int64_t k, double x) {
    iv->f[k] = x;
    iv->e[k] = dim_num(0);
}

/* Types: from a stored one, or rank known and every dim unknown (rank < 0 or
** over IR_MAX: unknown shape); from an initializer or a declared TypeProto. */
void type_from(build_type *o, const graph_type *t);
void type_set_rank(build_type *o, int32_t rank);
void type_from_tensor(const Onnx__TensorProto *t, build_type *o);
void type_from_proto(const Onnx__TypeProto *tp, build_type *o);
/* Product of dims [from, to) of t as dim i of o (its name kept in `names`). */
void product_dim(arena *names, const graph_type *t, int32_t from, int32_t to, build_type *o,
                 int32_t i);
/* numpy broadcasting of types, or of inputs [from, to), into o (the shape). */
void bcast(build_type *o, const graph_type *const *ts, size_t k);
void bcast_inputs(node_ctx *c, size_t from, size_t to);

/* Tracked values: a new one of n unknown entries (floats in f when is_float);
** the value of a small tensor (rank <= 1, or one element; NULL when untracked). */
shape_value *sv_new(arena *tmp, int32_t elem, int32_t rank, int64_t n, bool is_float);
shape_value *sv_of_tensor(graph_model *m, arena *tmp, const Onnx__TensorProto *t);
bool elem_is_int(int32_t e);

/* Input i's tracked value as numbers: every entry (copied into the scratch
** arena), a scalar (whole floats too, for Tile-1), up to cap floats. False
** when some entry is not known. */
bool in_ints(const node_ctx *c, size_t i, const int64_t **v, int64_t *cnt);
bool in_scalar_int(const node_ctx *c, size_t i, int64_t *out);
bool in_floats(const node_ctx *c, size_t i, double *out, int64_t cap, int64_t *cnt);
/* Axes from the attribute (before `since`) or input `input`; false when unknown. */
bool get_axes(node_ctx *c, int64_t since, size_t input, const int64_t **v, int64_t *n,
              bool *present);

/* ------------------------------------------------------------------ rules */

/* infer_elementwise.c: type-preserving, broadcasting and comparison ops, Cast,
** and the arithmetic, Equal, Max/Min and Where that shape values go through. */
void inf_same(node_ctx *c);
void inf_same_bool(node_ctx *c);
void inf_identity(node_ctx *c);
void inf_dropout(node_ctx *c);
void inf_bcast(node_ctx *c);
void inf_arith(node_ctx *c);
void inf_compare(node_ctx *c);
void inf_equal(node_ctx *c);
void inf_minmax(node_ctx *c);
void inf_where(node_ctx *c);
void inf_prelu(node_ctx *c);
void inf_cast(node_ctx *c);
void inf_castlike(node_ctx *c);

/* infer_data.c: ops that move or compute shapes and data (Shape, Reshape,
** Concat, Slice, Gather, Tile, Expand, Range, ...). */
void inf_constant(node_ctx *c);
void inf_shape(node_ctx *c);
void inf_size(node_ctx *c);
void inf_tile(node_ctx *c);
void inf_expand(node_ctx *c);
void inf_reshape(node_ctx *c);
void inf_flatten(node_ctx *c);
void inf_transpose(node_ctx *c);
void inf_squeeze(node_ctx *c);
void inf_unsqueeze(node_ctx *c);
void inf_concat(node_ctx *c);
void inf_split(node_ctx *c);
void inf_slice(node_ctx *c);
void inf_gather(node_ctx *c);
void inf_constant_of_shape(node_ctx *c);
void inf_range(node_ctx *c);
void inf_nonzero(node_ctx *c);
void inf_topk(node_ctx *c);
void inf_gather_elements(node_ctx *c);
void inf_eyelike(node_ctx *c);

/* infer_nn.c: network ops (MatMul, Gemm, convolution, pooling, normalization,
** reductions, Pad, Resize, recurrences, detection). */
void inf_matmul(node_ctx *c);
void inf_gemm(node_ctx *c);
void inf_conv(node_ctx *c);
void inf_conv_transpose(node_ctx *c);
void inf_pool(node_ctx *c);
void inf_dft(node_ctx *c);
void inf_grid_sample(node_ctx *c);
void inf_global_pool(node_ctx *c);
void inf_batchnorm(node_ctx *c);
void inf_reduce(node_ctx *c);
void inf_argreduce(node_ctx *c);
void inf_pad(node_ctx *c);
void inf_resize(node_ctx *c);
void inf_layernorm(node_ctx *c);
void inf_rnn(node_ctx *c);
void inf_nms(node_ctx *c);
void inf_roi_align(node_ctx *c);
void inf_depth_space(node_ctx *c);

#endif

/*
** Internals shared by the files of eval/ (not for passes/ or tools/): storage
** buffers, uninitialized allocation, layout helpers and the strided loop driver.
**
** Files call only files before them in tile -> tensor -> view -> broadcast ->
** elementwise -> values -> ops_shape -> ops_reduce -> ops_pad -> ops_linalg -> ops_conv ->
** ops_pool -> ops_norm -> ops_rnn -> ops_resize -> ops_index -> ops_detect ->
** ops_quant -> ops_loss -> ops_signal -> ops_string -> ops_random ->
** ops_sequence -> exec: the Tile engine only moves bytes, so tensors can
** materialize any view with it (tests/harness/file_cycles.py fails on any two
** files that call each other).
*/
#ifndef TILEOPT_EVAL_IMPL_H
#define TILEOPT_EVAL_IMPL_H

#include <string.h>

#include "eval/eval.h"

/* Checked products and sums: false on overflow. */
static inline bool eval_mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool eval_add_u64(uint64_t a, uint64_t b, uint64_t *out) {
    return !__builtin_add_overflow(a, b, out);
}
static inline bool eval_mul_i64(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}

/* Storage. A tbuf owns the bytes of one tensor; for string tensors it also owns
** the string bytes (tbuf_bytes) and may keep other buffers alive (tbuf_keep)
** when its graph_bytes point into them, as after a Tile or Gather of strings. */
tbuf *tbuf_new(size_t bytes, bool zero);
tbuf *tbuf_wrap(void *malloced, size_t bytes); /* takes ownership (free()) */
tbuf *tbuf_retain(tbuf *b);
void tbuf_release(tbuf *b);
uint8_t *tbuf_data(tbuf *b);
/* bytes owned by b (for string contents and names); NULL when out of memory */
uint8_t *tbuf_bytes(tbuf *b, size_t n);
bool tbuf_keep(tbuf *b, tbuf *dep);
/* Big buffers are mmap'd with MADV_HUGEPAGE and, when freed, kept in a small
** per-thread cache (tbuf_cache_drop in eval.h releases it). */

/* Like tensor_new but the data is left uninitialized (kernels that write every
** element). String tensors are always zeroed (empty strings). */
int tensor_alloc(int32_t elem, const int64_t *dims, int32_t rank, const eval_env *env,
                 tensor **out, errbuf *err);
/* A new handle on the storage of t with a layout the caller fills. */
tensor *tensor_share(const tensor *t);
/* Bytes of storage a value keeps alive: the span a tensor's layout covers (0
** when the data is borrowed from the model); a sequence's or optional's items
** and their handles. */
uint64_t tensor_storage_bytes(const tensor *t);
/* A sequence or optional like t whose items are fn of t's items (new handles). */
int value_map(tensor *t, int (*fn)(tensor *, const eval_env *, tensor **, errbuf *),
              const eval_env *env, tensor **out, errbuf *err);
/* Makes dst keep src's storage alive (strings copied by pointer). */
bool tensor_keep(tensor *dst, const tensor *src);
/* Is the layout a pair per axis (Tile view) rather than one axis per dim? */
static inline bool tensor_is_paired(const tensor *t) {
    return t->rank > 0 && t->vrank == 2 * t->rank;
}
size_t tensor_elem_size(const tensor *t);

/*
** One logical axis of a view as (d, s, r): r copies of d elements at byte stride
** s. Every layout eval/ builds is of this form (outer strides of Tile pairs are
** 0), which is what lets the Tile kernel materialize any view.
*/
typedef struct tile_axis {
    int64_t d, s, r;
} tile_axis;
/* Axes of t; false if its layout is not of that form. */
bool tensor_tile_axes(const tensor *t, tile_axis *ax);
/* Tile(x, repeats) checked (count, signs, output size): the axes of the result, the
** repeats multiplied into x's own, and its dims. Both the kernel and the view. */
int tile_plan(const tensor *x, const int64_t *repeats, size_t n, tile_axis *ax,
              int64_t *dims, errbuf *err);
/* Materialize axes ax[0..n) of elements of size esz from src into contiguous dst. */
void tile_engine(uint8_t *dst, const uint8_t *src, size_t esz, const tile_axis *ax,
                 int n);
/* tile_engine for an output that may be big: with env's progress set and an
** output of TILE_PROGRESS_BYTES or more, it is written slice by slice and each
** slice reported as "evaluating NAME" (name: the value's, "?" when NULL). */
void tile_fill(uint8_t *dst, const uint8_t *src, size_t esz, const tile_axis *ax, int n,
               const eval_env *env, const char *name);
/* The same with the instruction set chosen: the best the machine has, AVX2
** without the AVX-512 stores, or the SSE2 baseline (tests run every variant). */
enum { TILE_ISA_BEST, TILE_ISA_AVX2, TILE_ISA_BASE };
void tile_engine_isa(int isa, uint8_t *dst, const uint8_t *src, size_t esz,
                     const tile_axis *ax, int n);

/*
** The strided loop driver: out (contiguous, shape dims[0..rank)) and inputs
** broadcast to it numpy-style through their views. fn is called on runs of the
** innermost (coalesced) axis with per-input element strides.
*/
#define EW_MAX_IN 3
typedef void (*ew_inner)(uint8_t *out, const uint8_t *const *in, const ptrdiff_t *st,
                         size_t n, const void *param);
int ew_broadcast_shape(tensor *const *in, size_t n_in, int64_t *dims, int32_t *rank,
                       errbuf *err);
int ew_run(tensor *out, tensor *const *in, size_t n_in, ew_inner fn, const void *param,
           const eval_env *env, errbuf *err);

/* float16 / bfloat16 <-> float */
float eval_f16_to_f32(uint16_t h);
uint16_t eval_f32_to_f16(float f);
static inline float eval_bf16_to_f32(uint16_t h) {
    union { uint32_t u; float f; } v = {.u = (uint32_t)h << 16};
    return v.f;
}
uint16_t eval_f32_to_bf16(float f);

/* A node's name for messages: its name, else its op type. */
static inline const char *eval_node_name(const Onnx__NodeProto *n) {
    return n && n->name && n->name[0] ? n->name : (n && n->op_type ? n->op_type : "?");
}

/* The signature of every kernel in the tables of eval/ (kernel_fn). */
#define KERNEL_PARAMS                                                                  \
    const Onnx__NodeProto *n, int64_t opset, tensor *const *in, size_t n_in,            \
        tensor **out, size_t n_out, const eval_env *env, errbuf *err

/* x converted to element type `to` as Cast does (saturating 8-bit floats), a
** new contiguous tensor; when x has that type already, x's storage shared when
** it is contiguous (so never write into the result then), else a copy. */
int eval_cast(tensor *x, int32_t to, const eval_env *env, tensor **out, errbuf *err);

/*
** The neural-network kernels (ops_linalg, ops_conv, ops_pool, ops_norm) compute
** in float for FLOAT, FLOAT16 and BFLOAT16, and in double for DOUBLE.
** nn_input: a contiguous tensor of that working type with t's values (t itself
** referenced when it is one already); UNSUPPORTED for other element types.
** nn_output: *w converted to elem in place of itself (freed on failure too).
*/
int nn_input(tensor *t, const char *what, const eval_env *env, tensor **out, errbuf *err);
int nn_output(tensor **w, int32_t elem, const eval_env *env, errbuf *err);
/* C = alpha op(A) op(B) + beta C, row-major, through BLAS; elem DT_FLOAT or
** DT_DOUBLE; dims up to INT_MAX (the callers check). */
void nn_gemm(int32_t elem, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
             const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *c,
             int64_t ldc);

/* MatMul (numpy rules) and Conv (N, C, spatial... with the node's attributes:
** group, strides, dilations, pads, auto_pad) of tensors of one element type,
** the integer kernels' float core; b may be NULL. */
int nn_matmul(const Onnx__NodeProto *n, tensor *a, tensor *b, const eval_env *env,
              tensor **out, errbuf *err);
int nn_conv(const Onnx__NodeProto *n, tensor *x, tensor *w, tensor *b, const eval_env *env,
            tensor **out, errbuf *err);

/*
** The window geometry of Conv, ConvTranspose and the pooling ops over ns spatial
** axes: kernel, strides, dilations, pads (explicit, or from auto_pad) and the
** output size (ceil_mode for pooling). nn_window_make reads the attributes of n;
** kernel is the kernel_shape to use (from the attribute or the weights).
*/
#define NN_MAX_SPATIAL 8
typedef struct nn_window {
    int32_t ns;
    int64_t in[NN_MAX_SPATIAL], k[NN_MAX_SPATIAL], stride[NN_MAX_SPATIAL];
    int64_t dil[NN_MAX_SPATIAL], pad_b[NN_MAX_SPATIAL], pad_e[NN_MAX_SPATIAL];
    int64_t out[NN_MAX_SPATIAL];
} nn_window;
int nn_window_make(const Onnx__NodeProto *n, int32_t ns, const int64_t *in_dims,
                   const int64_t *kernel, bool ceil_mode, nn_window *w, errbuf *err);

/* Sort the n indices in idx by before(ctx, a, b) ("a goes first"), stably, with
** tmp holding n more: a merge sort that takes its context as an argument, so
** kernels keep no state between calls (qsort has no user pointer). */
void eval_sort_indices(int64_t *idx, int64_t n, int64_t *tmp,
                       bool (*before)(const void *ctx, int64_t a, int64_t b), const void *ctx);

/*
** The random stream of a node (the random generators, Dropout in training):
** splitmix64 seeded by the node's `seed` attribute or, without one, by a hash
** of its first output's name, which optimization keeps. No runtime's stream
** can be reproduced; a repeatable one is what --verify needs, since it
** compares two runs of a model.
*/
typedef struct eval_rng {
    uint64_t s;
} eval_rng;

static inline uint64_t eval_rng_next(eval_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double eval_rng_unit(eval_rng *r) {
    return (double)(eval_rng_next(r) >> 11) * 0x1.0p-53;
}

static inline eval_rng eval_rng_for(const Onnx__NodeProto *n) {
    const Onnx__AttributeProto *a = graph_attr(n, "seed");
    eval_rng r = {0x243f6a8885a308d3ull};
    if (a) {
        uint32_t bits;
        memcpy(&bits, &a->f, sizeof bits);
        r.s ^= bits;
    } else if (n->n_output > 0 && n->output[0]) {
        for (const char *c = n->output[0]; *c; c++) /* FNV-1a */
            r.s = (r.s ^ (uint8_t)*c) * 0x100000001b3ull;
    }
    eval_rng_next(&r);
    return r;
}

/* Tile-1 repeats from its `tiles`/`axis` inputs: ints, or floats holding whole numbers. */
int eval_scalar_i64(const tensor *t, const char *what, int64_t *out, errbuf *err);

/*
** The shape kernels' helpers (ops_shape.c), which the reductions (ops_reduce.c)
** share: the first `need` inputs present and an output to write; out[0] = o on
** success, o freed on failure (kern_emit_keeping: o keeps c's storage alive, c
** released either way); an element's size; an axis normalized against rank r;
** a 0-D or 1-D integer tensor, or an ints attribute, into cap entries; a new
** contiguous tensor (its shape checked); row-major element strides; a strided
** copy into contiguous memory; a string output keeping its source alive.
*/
int kern_need_io(tensor *const *in, size_t n_in, size_t need, size_t n_out, errbuf *err);
int kern_emit_result(int rc, tensor *o, tensor **out);
int kern_emit_keeping(tensor *o, tensor *c, tensor **out, errbuf *err);
size_t kern_esize(int32_t elem);
int kern_norm_axis(int64_t a, int64_t r, const char *what, int64_t *out, errbuf *err);
int kern_read_ints(tensor *t, const char *what, const eval_env *env, int64_t *out,
                   size_t cap, size_t *count, errbuf *err);
int kern_attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *out, size_t cap,
                   size_t *count, bool *present, errbuf *err);
int kern_new_tensor(int32_t elem, const int64_t *dims, int32_t rank, const eval_env *env,
                    tensor **out, errbuf *err);
void kern_row_major(const int64_t *dims, int32_t rank, int64_t *strides);
void kern_copy_strided(uint8_t *dst, const uint8_t *src, size_t es, int32_t rank,
                       const int64_t *dims, const int64_t *strides);
int kern_keep(tensor *o, const tensor *src, errbuf *err);

#endif

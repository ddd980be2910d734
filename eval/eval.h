/*
** eval/: tensors, strided views and kernels; the built-in evaluator.
**
** A tensor is element type + shape + byte strides + a pointer into a refcounted
** buffer. Stride 0 is a broadcast. Reshape of a contiguous tensor, Expand,
** Squeeze/Unsqueeze and Tile are views (no copy): Tile(x, r) is the rank-2N view
** where output axis i splits into (r_i, d_i) with byte strides (0, stride_i).
** A view is materialized only when something needs contiguous memory.
*/
#ifndef TILEOPT_EVAL_H
#define TILEOPT_EVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"
#include "graph/ops.h"

#define TENSOR_MAX_RANK 64

typedef struct tbuf tbuf; /* refcounted storage; strings: graph_bytes + their bytes */

typedef struct tensor {
    int32_t elem;                       /* TensorProto.DataType */
    int32_t rank;                       /* logical rank (dims as ONNX sees them) */
    int64_t dims[TENSOR_MAX_RANK];
    /* The storage layout: vrank axes with byte strides. For an ordinary tensor
    ** vrank == rank and vdims == dims. A Tile view has vrank == 2*rank, axis i
    ** of the logical shape being (vdims[2i], vdims[2i+1]) row-major. */
    int32_t vrank;
    int64_t vdims[2 * TENSOR_MAX_RANK];
    int64_t vstrides[2 * TENSOR_MAX_RANK]; /* bytes */
    uint8_t *data;                      /* first element */
    tbuf *buf;                          /* owner (NULL: borrowed, e.g. an initializer) */
    const char *name;
    /* A value is a tensor (EVAL_TENSOR, 0: so a zeroed struct is one), a
    ** sequence or an optional. A sequence or optional has no data, rank 0, and
    ** holds references to its items: a sequence's tensors, all of element type
    ** elem (SequenceEmpty's dtype when there are none), or an optional's one
    ** tensor or sequence (none when it is empty). Items are shared by every
    ** value holding them: read them, tensor_ref one to keep it, never free one. */
    int32_t kind;
    struct tensor **items;
    size_t n_items;
} tensor;
enum { EVAL_TENSOR = GRAPH_KIND_TENSOR, EVAL_SEQUENCE = GRAPH_KIND_SEQUENCE,
       EVAL_OPTIONAL = GRAPH_KIND_OPTIONAL };

/* What one evaluation runs under: the limits (graph/'s, the ones the loader
** enforces), and who hears of its progress: a Tile written out in full
** (kernel or materialized view) of TILE_PROGRESS_BYTES or more reports
** "evaluating NAME" in bytes, and eval_graph with run_what set reports it in
** main-graph nodes run. */
typedef struct eval_env {
    graph_limits lim;
    graph_progress progress;
    const char *run_what;    /* NULL: no report of nodes run */
} eval_env;
#define TILE_PROGRESS_BYTES ((uint64_t)64 << 20)
/* The environment of an evaluation under lim (NULL: the defaults). */
eval_env eval_env_of(const graph_limits *lim, graph_progress progress, const char *run_what);
void eval_env_default(eval_env *env);

/* ------------------------------------------------------------- tensors */

/* Big buffers freed by tensors are kept per thread for reuse (first writes to
** fresh pages cost more than the copy itself); this releases the calling
** thread's cache. tileopt_ctx_free() and each pass run call it. */
void tbuf_cache_drop(void);

/* New contiguous tensor (data zeroed). Checks the size product for overflow and
** against env (NULL: defaults). */
int tensor_new(int32_t elem, const int64_t *dims, int32_t rank, const eval_env *env,
               tensor **out, errbuf *err);
tensor *tensor_ref(tensor *t);          /* a new handle sharing storage */
void tensor_free(tensor *t);
bool tensor_is_contiguous(const tensor *t);
/* Contiguous tensor with the same values (t itself, referenced, when already so). */
int tensor_contiguous(tensor *t, const eval_env *env, tensor **out, errbuf *err);
/* Element i of t, a contiguous STRING tensor owning its storage, becomes a copy
** of len bytes (kept NUL-terminated, as every string of the evaluator is). */
int tensor_set_string(tensor *t, uint64_t i, const void *bytes, size_t len, errbuf *err);
/* A reference to t's storage for a model to keep instead of a copy of its data
** (graph_add_initializer_owned), NULL when t has none of its own (an
** initializer's data, borrowed); tensor_storage_release gives it back, its
** memory going to the system rather than to the evaluator's cache, since a
** model may outlive every evaluation of its thread. */
void *tensor_storage_retain(const tensor *t);
void tensor_storage_release(void *storage);
uint64_t tensor_numel(const tensor *t);
uint64_t tensor_nbytes(const tensor *t);   /* numel * element size */
/* Values of a 0-D/1-D integer tensor (any int type) as int64; false if not ints. */
bool tensor_to_i64(const tensor *t, int64_t *out, size_t cap, size_t *count);

/* TensorProto <-> tensor (every storage form, external data included). */
int tensor_from_proto(graph_model *m, const Onnx__TensorProto *p, const eval_env *env,
                      tensor **out, errbuf *err);
Onnx__TensorProto *tensor_to_proto(graph_model *m, const char *name, const tensor *t,
                                   errbuf *err);
/* Serialized TensorProto bytes (test-data .pb files), malloc'd. */
int tensor_decode(const void *bytes, size_t size, const eval_env *env, tensor **out,
                  errbuf *err);
int tensor_encode(const tensor *t, const char *name, void **bytes, size_t *size,
                  errbuf *err);

/* ------------------------------------------------ sequences and optionals */

/* A new sequence or optional (kind) of n empty item slots, each to be filled
** once by value_put or value_share before the value is used. elem: the element
** type of a sequence's tensors, 0 to take the first item's. Sequences hold at
** most 2^20 items (TILEOPT_LIMIT). */
int value_new(int32_t kind, int32_t elem, size_t n, tensor **out, errbuf *err);
/* Slot i of v holds x (referenced: the caller keeps its handle). A sequence
** takes tensors of its element type only, an optional a tensor or a sequence. */
int value_put(tensor *v, size_t i, tensor *x, errbuf *err);
/* Slot i of v shares item j of w. */
void value_share(tensor *v, size_t i, const tensor *w, size_t j);
const char *value_kind_name(int32_t kind);   /* "a tensor", "an optional", ... (graph_kind) */
/* A serialized value of the given kind: a TensorProto, SequenceProto or
** OptionalProto, read as the graph declares it (the bytes do not say which).
** elem is the declared element type, which an empty sequence or optional takes
** (its message has none). Sequences of sequences, maps and sparse tensors are
** TILEOPT_UNSUPPORTED. tensor_encode writes every kind. */
int value_decode(const void *bytes, size_t size, int32_t kind, int32_t elem,
                 const eval_env *env, tensor **out, errbuf *err);

/* --------------------------------------------------------------- views */

/* Tile as a view: never copies. repeats has one entry per axis (strict ONNX). */
int view_tile(tensor *x, const int64_t *repeats, size_t n, const eval_env *env,
              tensor **out, errbuf *err);
int view_expand(tensor *x, const int64_t *shape, size_t n, tensor **out, errbuf *err);
int view_reshape(tensor *x, const int64_t *shape, size_t n, const eval_env *env,
                 tensor **out, errbuf *err);

/* --------------------------------------------------------------- kernels */

/* Materialized Tile (Tile-6/13 semantics), any element type: the fast kernel. */
int kernel_tile(const tensor *x, const int64_t *repeats, size_t n, const eval_env *env,
                tensor **out, errbuf *err);
/* Tile-1 (opsets 1-5): repeats = 1 except repeats[axis] = tiles. */
int kernel_tile1(const tensor *x, int64_t tiles, int64_t axis, const eval_env *env,
                 tensor **out, errbuf *err);

/* Tile with OpenVINO Tile-1 promotion (tileopt_tile): repeats longer than the
** rank give the data leading 1-dims, shorter ones get leading 1s. */
int kernel_tile_promoted(const tensor *x, const int64_t *repeats, size_t n,
                         const eval_env *env, tensor **out, errbuf *err);

/*
** Op kernels, found by op name through tables: eval/elementwise.c provides
** kernel_table_elementwise (elementwise ops, Cast, Identity, Tile), eval/ops_shape.c
** provides kernel_table_shape (Constant, Shape, Gather, Concat, Reshape, ...). The
** evaluator (eval/exec.c) dispatches on these. A kernel reads attributes from n
** through graph_attr_*; `opset` is the model's default-domain opset; absent optional
** inputs are NULL.
*/
typedef int (*kernel_fn)(const Onnx__NodeProto *n, int64_t opset, tensor *const *in,
                         size_t n_in, tensor **out, size_t n_out, const eval_env *env,
                         errbuf *err);
typedef struct kernel_def {
    op_id op;
    int32_t since;           /* first opset this kernel implements */
    kernel_fn fn;
} kernel_def;
extern const kernel_def kernel_table_elementwise[];
extern const size_t kernel_table_elementwise_count;
extern const kernel_def kernel_table_shape[];
extern const size_t kernel_table_shape_count;
extern const kernel_def kernel_table_reduce[];   /* eval/ops_reduce.c: Reduce*, ArgMax, ArgMin, CumSum */
extern const size_t kernel_table_reduce_count;
extern const kernel_def kernel_table_linalg[];   /* eval/ops_linalg.c: MatMul, Gemm */
extern const size_t kernel_table_linalg_count;
extern const kernel_def kernel_table_conv[];     /* eval/ops_conv.c: Conv */
extern const size_t kernel_table_conv_count;
extern const kernel_def kernel_table_pool[];     /* eval/ops_pool.c: MaxPool, AveragePool, ... */
extern const size_t kernel_table_pool_count;
extern const kernel_def kernel_table_norm[];     /* eval/ops_norm.c: Softmax, BatchNormalization, ... */
extern const size_t kernel_table_norm_count;
extern const kernel_def kernel_table_pad[];      /* eval/ops_pad.c: Pad */
extern const size_t kernel_table_pad_count;
extern const kernel_def kernel_table_rnn[];      /* eval/ops_rnn.c: RNN, GRU, LSTM */
extern const size_t kernel_table_rnn_count;
extern const kernel_def kernel_table_resize[];   /* eval/ops_resize.c: Resize, Upsample */
extern const size_t kernel_table_resize_count;
extern const kernel_def kernel_table_index[];    /* eval/ops_index.c: TopK, NonZero, GatherND, scatters */
extern const size_t kernel_table_index_count;
extern const kernel_def kernel_table_detect[];   /* eval/ops_detect.c: NonMaxSuppression, RoiAlign, GridSample */
extern const size_t kernel_table_detect_count;
extern const kernel_def kernel_table_quant[];    /* eval/ops_quant.c: QuantizeLinear, DequantizeLinear, ... */
extern const size_t kernel_table_quant_count;
extern const kernel_def kernel_table_loss[];     /* eval/ops_loss.c: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss */
extern const size_t kernel_table_loss_count;
extern const kernel_def kernel_table_signal[];   /* eval/ops_signal.c: DFT, STFT, the windows, MelWeightMatrix */
extern const size_t kernel_table_signal_count;
extern const kernel_def kernel_table_string[];   /* eval/ops_string.c: StringNormalizer, TfIdfVectorizer */
extern const size_t kernel_table_string_count;
extern const kernel_def kernel_table_random[];   /* eval/ops_random.c: RandomUniform, RandomNormal, Bernoulli, ... */
extern const size_t kernel_table_random_count;
/* eval/ops_sequence.c: the sequence and optional ops, and Identity of any value.
** Only its kernels are given sequences and optionals; every other kernel gets
** tensors (the evaluator refuses a node otherwise). */
extern const kernel_def kernel_table_sequence[];
extern const size_t kernel_table_sequence_count;

/* ---------------------------------------------------- values (eval/values.c) */

/* actual against expected: floating types numpy.isclose style, |a - e| <= atol +
** rtol * |e| with NaN equal to NaN; integers, bool, strings and 8-bit floats
** exactly; sequences and optionals item by item. */
typedef struct tensor_diff {
    bool same_shape;            /* element type and shape agree (else nothing else set);
                                ** for sequences and optionals the kind, the item count
                                ** and every item's type and shape */
    int64_t bad_item;           /* sequences and optionals: the first item that differs,
                                ** -1 for none (or for a differing kind or count) */
    uint64_t n_bad;             /* elements outside the tolerance */
    uint64_t first_bad;         /* index of the first such element */
    double max_abs, max_rel;    /* over all numeric elements */
    char expected[64], actual[64]; /* the first bad pair, printed */
} tensor_diff;
int tensor_compare(const tensor *expected, const tensor *actual, double rtol, double atol,
                   tensor_diff *d, errbuf *err);
/* Element i (row-major) printed into buf; returns the length. */
size_t tensor_format(const tensor *t, uint64_t i, char *buf, size_t cap);
/* A contiguous copy owning all its bytes (strings included), for tensors that
** outlive the model they were computed from. */
int tensor_detach(tensor *t, const eval_env *env, tensor **out, errbuf *err);

/* -------------------------------------------------------------- evaluator */

/* Does the evaluator implement this op (default domain) at this opset? */
bool eval_supports(const char *op_type, int64_t opset);
bool eval_supports_op(op_id op, int64_t opset);

/*
** Evaluate one node of g given its input tensors (NULL for absent optional
** inputs); fills outputs[0..n_output). Used by the fold pass. Subgraph-bearing
** nodes (If/Loop) read outer-scope values through `scope` (may be NULL).
*/
typedef struct eval_scope eval_scope;
int eval_node(graph *g, int32_t node, tensor *const *inputs, size_t n_inputs,
              tensor **outputs, size_t n_outputs, const eval_env *env,
              eval_scope *scope, errbuf *err);

/* Run a whole graph: inputs bind in order to graph inputs that have no
** initializer. Intermediates are freed after their last use. */
int eval_graph(graph_model *m, tensor *const *inputs, size_t n_inputs, tensor ***outputs,
               size_t *n_outputs, const eval_env *env, errbuf *err);

/* Ops used in the model (recursively) that the evaluator lacks, as a
** comma-separated list into buf; returns the count. */
size_t eval_missing_ops(graph_model *m, char *buf, size_t cap);

#endif

/*
** The sequence and optional ops of the default domain: SequenceEmpty,
** SequenceConstruct, SequenceInsert, SequenceAt, SequenceErase, SequenceLength,
** ConcatFromSequence, SplitToSequence, Optional, OptionalHasElement,
** OptionalGetElement, and Identity from opset 14, which passes any value on.
**
** These are the only kernels the evaluator hands sequences and optionals to
** (exec.c refuses them to every other kernel), so each checks the kind of
** every input itself. Sequences are immutable: an op that changes one builds a
** new sequence sharing the old one's items (eval.h: value_new, value_share),
** so SequenceInsert in a Loop copies pointers, not tensors. SequenceMap runs a
** subgraph and lives with Loop and Scan in exec.c.
*/
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"

/* Input i present and of the given kind, else a message naming the node. */
static int need(const Onnx__NodeProto *n, tensor *const *in, size_t n_in, size_t i,
                int32_t kind, errbuf *err) {
    if (i >= n_in || !in[i])
        return err_set(err, TILEOPT_INVALID, "%s: input %zu is missing", eval_node_name(n), i);
    if (in[i]->kind != kind)
        return err_set(err, TILEOPT_INVALID, "%s: input %zu is %s, %s takes %s there",
                       eval_node_name(n), i, value_kind_name(in[i]->kind), n->op_type,
                       value_kind_name(kind));
    return TILEOPT_OK;
}

static int new_i64(int64_t v, const eval_env *env, tensor **out, errbuf *err) {
    int rc = tensor_new(DT_INT64, NULL, 0, env, out, err);
    if (!rc) memcpy((*out)->data, &v, sizeof v);
    return rc;
}

/*
** A position input of SequenceAt, SequenceInsert or SequenceErase: a scalar
** int32 or int64 in [-len, len - 1], or [-len, len] where inserting at the end
** is allowed; negative counts from the back.
*/
static int position(const Onnx__NodeProto *n, const tensor *p, size_t len, bool at_end,
                    size_t *out, errbuf *err) {
    int64_t v;
    size_t cnt;
    if (p->kind != EVAL_TENSOR || (p->elem != DT_INT32 && p->elem != DT_INT64) ||
        tensor_numel(p) != 1 || !tensor_to_i64(p, &v, 1, &cnt))
        return err_set(err, TILEOPT_INVALID, "%s: position must be one int32 or int64",
                       eval_node_name(n));
    int64_t hi = (int64_t)len - (at_end ? 0 : 1);
    if (v < -(int64_t)len || v > hi)
        return err_set(err, TILEOPT_INVALID,
                       "%s: position %" PRId64 " is outside [%" PRId64 ", %" PRId64 "] for a "
                       "sequence of %zu", eval_node_name(n), v, -(int64_t)len, hi, len);
    *out = (size_t)(v < 0 ? v + (int64_t)len : v);
    return TILEOPT_OK;
}

/* ---------------------------------------------------------------- sequences */

static int k_identity(KERNEL_PARAMS) {
    (void)opset;
    (void)env;
    (void)n_out;
    if (n_in < 1 || !in[0])
        return err_set(err, TILEOPT_INVALID, "%s: input missing", eval_node_name(n));
    out[0] = tensor_ref(in[0]);
    return out[0] ? TILEOPT_OK : err_set(err, TILEOPT_NOMEM, "out of memory");
}

static int k_seq_empty(KERNEL_PARAMS) {
    (void)opset;
    (void)in;
    (void)n_in;
    (void)n_out;
    (void)env;
    int64_t dt = graph_attr_int(n, "dtype", DT_FLOAT);
    if (dt <= 0 || dt > INT32_MAX || !dtype_valid((int32_t)dt))
        return err_set(err, TILEOPT_INVALID, "%s: dtype %" PRId64 " is no element type",
                       eval_node_name(n), dt);
    return value_new(EVAL_SEQUENCE, (int32_t)dt, 0, &out[0], err);
}

static int k_seq_construct(KERNEL_PARAMS) {
    (void)opset;
    (void)env;
    (void)n_out;
    int rc = TILEOPT_OK;
    for (size_t i = 0; i < n_in && !rc; i++) rc = need(n, in, n_in, i, EVAL_TENSOR, err);
    if (!rc) rc = value_new(EVAL_SEQUENCE, in[0]->elem, n_in, &out[0], err);
    for (size_t i = 0; i < n_in && !rc; i++)
        if ((rc = value_put(out[0], i, in[i], err)))
            err_prefix(err, "%s: input %zu: ", eval_node_name(n), i);
    return rc;
}

static int k_seq_insert(KERNEL_PARAMS) {
    (void)opset;
    (void)env;
    (void)n_out;
    int rc = need(n, in, n_in, 0, EVAL_SEQUENCE, err);
    if (!rc) rc = need(n, in, n_in, 1, EVAL_TENSOR, err);
    if (rc) return rc;
    const tensor *s = in[0];
    size_t at = s->n_items;
    if (n_in > 2 && in[2]) rc = position(n, in[2], s->n_items, true, &at, err);
    if (!rc) rc = value_new(EVAL_SEQUENCE, s->elem, s->n_items + 1, &out[0], err);
    if (rc) return rc;
    for (size_t i = 0; i < s->n_items; i++) value_share(out[0], i < at ? i : i + 1, s, i);
    if ((rc = value_put(out[0], at, in[1], err))) err_prefix(err, "%s: ", eval_node_name(n));
    return rc;
}

static int k_seq_at(KERNEL_PARAMS) {
    (void)opset;
    (void)env;
    (void)n_out;
    int rc = need(n, in, n_in, 0, EVAL_SEQUENCE, err);
    if (!rc) rc = need(n, in, n_in, 1, EVAL_TENSOR, err);
    size_t at = 0;
    if (!rc) rc = position(n, in[1], in[0]->n_items, false, &at, err);
    if (rc) return rc;
    out[0] = tensor_ref(in[0]->items[at]);
    return out[0] ? TILEOPT_OK : err_set(err, TILEOPT_NOMEM, "out of memory");
}

static int k_seq_erase(KERNEL_PARAMS) {
    (void)opset;
    (void)env;
    (void)n_out;
    int rc = need(n, in, n_in, 0, EVAL_SEQUENCE, err);
    if (rc) return rc;
    const tensor *s = in[0];
    if (!s->n_items)
        return err_set(err, TILEOPT_INVALID, "%s: nothing to erase from an empty sequence",
                       eval_node_name(n));
    size_t at = s->n_items - 1;
    if (n_in > 1 && in[1]) rc = position(n, in[1], s->n_items, false, &at, err);
    if (!rc) rc = value_new(EVAL_SEQUENCE, s->elem, s->n_items - 1, &out[0], err);
    if (rc) return rc;
    for (size_t i = 0; i < s->n_items; i++)
        if (i != at) value_share(out[0], i < at ? i : i - 1, s, i);
    return TILEOPT_OK;
}

static int k_seq_length(KERNEL_PARAMS) {
    (void)opset;
    (void)n_out;
    int rc = need(n, in, n_in, 0, EVAL_SEQUENCE, err);
    return rc ? rc : new_i64((int64_t)in[0]->n_items, env, &out[0], err);
}

/* --------------------------------------------------- ConcatFromSequence */

/* The output dims of concatenating (or, with new_axis, stacking) the items of s
** along axis, checked: one rank, equal dims off the axis, a total that fits. */
static int concat_dims(const Onnx__NodeProto *n, const tensor *s, bool new_axis, int64_t *axis,
                       int64_t *dims, int32_t *rank, errbuf *err) {
    const char *nm = eval_node_name(n);
    const tensor *t0 = s->items[0];
    int32_t r = t0->rank, ro = r + (new_axis ? 1 : 0);
    if (ro > TENSOR_MAX_RANK)
        return err_set(err, TILEOPT_LIMIT, "%s: rank %d over %d", nm, (int)ro, TENSOR_MAX_RANK);
    int64_t a = *axis;
    if (a < -(int64_t)ro || a >= (int64_t)ro)
        return err_set(err, TILEOPT_INVALID, "%s: axis %" PRId64 " is outside [%d, %d] for "
                       "tensors of rank %d", nm, a, -(int)ro, (int)ro - 1, (int)r);
    if (a < 0) a += ro;
    uint64_t total = 0;
    for (size_t i = 0; i < s->n_items; i++) {
        const tensor *t = s->items[i];
        bool same = t->rank == r;
        for (int32_t k = 0; same && k < r; k++)
            if ((new_axis || k != a) && t->dims[k] != t0->dims[k]) same = false;
        if (!same)
            return err_set(err, TILEOPT_INVALID, "%s: item %zu's shape differs from item 0's "
                           "off the axis", nm, i);
        if (!new_axis && (!eval_add_u64(total, (uint64_t)t->dims[a], &total) ||
                          total > (uint64_t)INT64_MAX))
            return err_set(err, TILEOPT_LIMIT, "%s: the output dim overflows", nm);
    }
    for (int32_t k = 0, j = 0; k < ro; k++)
        dims[k] = new_axis && k == a ? (int64_t)s->n_items : t0->dims[j++];
    if (!new_axis) dims[a] = (int64_t)total;
    *axis = a;
    *rank = ro;
    return TILEOPT_OK;
}

static int k_concat_from_seq(KERNEL_PARAMS) {
    (void)opset;
    (void)n_out;
    int rc = need(n, in, n_in, 0, EVAL_SEQUENCE, err);
    if (rc) return rc;
    const tensor *s = in[0];
    const Onnx__AttributeProto *ax = graph_attr(n, "axis");
    if (!ax)
        return err_set(err, TILEOPT_INVALID, "%s: attribute axis is missing", eval_node_name(n));
    bool new_axis = graph_attr_int(n, "new_axis", 0) != 0;
    if (!s->n_items)
        return err_set(err, TILEOPT_INVALID, "%s: nothing to concatenate in an empty sequence",
                       eval_node_name(n));
    int64_t axis = ax->i, dims[TENSOR_MAX_RANK];
    int32_t rank = 0;
    rc = concat_dims(n, s, new_axis, &axis, dims, &rank, err);
    tensor *o = NULL;
    if (!rc) rc = tensor_alloc(s->elem, dims, rank, env, &o, err);
    if (rc) return rc;
    /* rows of the output: outer slabs, each the items' slabs side by side */
    size_t es = tensor_elem_size(o), outer = 1, inner = es, row = 0;
    for (int64_t k = 0; k < axis; k++) outer *= (size_t)dims[k];
    for (int32_t k = (int32_t)axis + 1; k < rank; k++) inner *= (size_t)dims[k];
    for (size_t i = 0; i < s->n_items; i++)
        row += (new_axis ? 1 : (size_t)s->items[i]->dims[axis]) * inner;
    size_t off = 0;
    for (size_t i = 0; i < s->n_items && !rc; i++) {
        tensor *c = NULL;
        rc = tensor_contiguous(s->items[i], env, &c, err);
        if (rc) break;
        size_t blk = (new_axis ? 1 : (size_t)c->dims[axis]) * inner;
        for (size_t k = 0; k < outer && blk; k++)
            memcpy(o->data + k * row + off, c->data + k * blk, blk);
        off += blk;
        if (!tensor_keep(o, c)) rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        tensor_free(c);
    }
    if (rc) {
        tensor_free(o);
        return rc;
    }
    out[0] = o;
    return TILEOPT_OK;
}

/* ------------------------------------------------------ SplitToSequence */

/* The chunks along an axis of length len: split absent (chunks of 1), a scalar
** (chunks of that length, the last shorter) or a list (in `list`) summing to len. */
typedef struct split_plan {
    tensor *list;            /* int64 copy of a 1-D split, else NULL */
    int64_t chunk, len;
    size_t count;
} split_plan;

static int64_t split_len(const split_plan *p, size_t i) {
    if (p->list) return ((const int64_t *)(const void *)p->list->data)[i];
    return i + 1 < p->count ? p->chunk : p->len - p->chunk * (int64_t)i;
}

static int split_plan_make(const Onnx__NodeProto *n, tensor *split, int64_t len,
                           const eval_env *env, split_plan *p, errbuf *err) {
    const char *nm = eval_node_name(n);
    memset(p, 0, sizeof *p);
    p->chunk = 1;
    p->len = len;
    tensor *sp = NULL;
    if (split) {
        bool ints = split->elem == DT_INT32 || split->elem == DT_INT64;
        if (split->kind != EVAL_TENSOR || !ints || split->rank > 1)
            return err_set(err, TILEOPT_INVALID, "%s: split must be an int32 or int64 scalar "
                           "or 1-D tensor", nm);
        int rc = eval_cast(split, DT_INT64, env, &sp, err);
        if (rc) return rc;
        const int64_t *v = (const int64_t *)(const void *)sp->data;
        for (uint64_t i = 0; i < tensor_numel(sp); i++)
            if (v[i] <= 0) {
                tensor_free(sp);
                return err_set(err, TILEOPT_INVALID, "%s: split entry %" PRIu64 " is %" PRId64
                               ", not positive", nm, i, v[i]);
            }
        if (split->rank == 0) {
            p->chunk = v[0];
            tensor_free(sp);
        } else {
            p->list = sp;
        }
    }
    if (!p->list) {
        p->count = (size_t)(len / p->chunk + (len % p->chunk ? 1 : 0));
        return TILEOPT_OK;
    }
    p->count = (size_t)tensor_numel(p->list);
    uint64_t sum = 0;
    for (size_t i = 0; i < p->count; i++)
        if (!eval_add_u64(sum, (uint64_t)split_len(p, i), &sum) || sum > (uint64_t)len) break;
    if (sum != (uint64_t)len) {
        tensor_free(p->list);
        p->list = NULL;
        return err_set(err, TILEOPT_INVALID, "%s: the split lengths do not add up to %" PRId64,
                       nm, len);
    }
    return TILEOPT_OK;
}

/* Rows [start, start + len) along axis of contiguous x: outer slabs of the
** axis (dims before it) copied out, the axis dropped when squeeze. */
static int split_chunk(tensor *x, int32_t axis, int64_t start, int64_t len, bool squeeze,
                       const eval_env *env, tensor **out, errbuf *err) {
    int64_t dims[TENSOR_MAX_RANK];
    int32_t r = 0;
    size_t outer = 1, inner = tensor_elem_size(x);
    for (int32_t k = 0; k < x->rank; k++) {
        if (k < axis) outer *= (size_t)x->dims[k];
        if (k > axis) inner *= (size_t)x->dims[k];
        if (k != axis) dims[r++] = x->dims[k];
        else if (!squeeze) dims[r++] = len;
    }
    tensor *o = NULL;
    int rc = tensor_alloc(x->elem, dims, r, env, &o, err);
    if (rc) return rc;
    size_t blk = (size_t)len * inner, row = (size_t)x->dims[axis] * inner;
    for (size_t k = 0; k < outer && blk; k++)
        memcpy(o->data + k * blk, x->data + k * row + (size_t)start * inner, blk);
    if (!tensor_keep(o, x)) {
        tensor_free(o);
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    *out = o;
    return TILEOPT_OK;
}

static int k_split_to_seq(KERNEL_PARAMS) {
    (void)opset;
    (void)n_out;
    int rc = need(n, in, n_in, 0, EVAL_TENSOR, err);
    if (rc) return rc;
    tensor *x = in[0];
    int64_t axis = graph_attr_int(n, "axis", 0);
    if (axis < -(int64_t)x->rank || axis >= (int64_t)x->rank)
        return err_set(err, TILEOPT_INVALID, "%s: axis %" PRId64 " is outside rank %d",
                       eval_node_name(n), axis, (int)x->rank);
    if (axis < 0) axis += x->rank;
    tensor *split = n_in > 1 ? in[1] : NULL;
    /* keepdims only counts without split: chunks of 1 may lose the axis */
    bool squeeze = !split && graph_attr_int(n, "keepdims", 1) == 0;
    split_plan p;
    rc = split_plan_make(n, split, x->dims[axis], env, &p, err);
    if (rc) return rc;
    tensor *c = NULL;
    rc = value_new(EVAL_SEQUENCE, x->elem, p.count, &out[0], err);
    if (!rc) rc = tensor_contiguous(x, env, &c, err);
    int64_t start = 0;
    for (size_t i = 0; i < p.count && !rc; i++) {
        tensor *part = NULL;
        rc = split_chunk(c, (int32_t)axis, start, split_len(&p, i), squeeze, env, &part, err);
        if (!rc) rc = value_put(out[0], i, part, err);
        tensor_free(part);
        start += split_len(&p, i);
    }
    tensor_free(c);
    tensor_free(p.list);
    return rc;
}

/* ---------------------------------------------------------------- optionals */

static int k_optional(KERNEL_PARAMS) {
    (void)opset;
    (void)env;
    (void)n_out;
    if (n_in > 0 && in[0]) {
        int rc = value_new(EVAL_OPTIONAL, in[0]->elem, 1, &out[0], err);
        if (!rc && (rc = value_put(out[0], 0, in[0], err)))
            err_prefix(err, "%s: ", eval_node_name(n));
        return rc;
    }
    /* empty: the element type the type attribute declares, if any */
    const Onnx__AttributeProto *a = graph_attr(n, "type");
    int32_t elem = 0;
    if (a && a->tp) graph_type_kind(a->tp, &elem);
    return value_new(EVAL_OPTIONAL, elem, 0, &out[0], err);
}

/* From opset 18 on both take a tensor or sequence too (an optional that has
** it), and OptionalHasElement an absent input (one that has not). */
static int k_optional_has(KERNEL_PARAMS) {
    (void)opset;
    (void)n;
    (void)n_out;
    bool has = n_in > 0 && in[0] && (in[0]->kind != EVAL_OPTIONAL || in[0]->n_items > 0);
    int rc = tensor_new(DT_BOOL, NULL, 0, env, &out[0], err);
    if (!rc) out[0]->data[0] = has;
    return rc;
}

static int k_optional_get(KERNEL_PARAMS) {
    (void)opset;
    (void)env;
    (void)n_out;
    if (n_in < 1 || !in[0])
        return err_set(err, TILEOPT_INVALID, "%s: input missing", eval_node_name(n));
    tensor *v = in[0];
    if (v->kind == EVAL_OPTIONAL) {
        if (!v->n_items)
            return err_set(err, TILEOPT_INVALID, "%s: the optional is empty",
                           eval_node_name(n));
        v = v->items[0];
    }
    out[0] = tensor_ref(v);
    return out[0] ? TILEOPT_OK : err_set(err, TILEOPT_NOMEM, "out of memory");
}

const kernel_def kernel_table_sequence[] = {
    {OP_ConcatFromSequence, 11, k_concat_from_seq},
    {OP_Identity, 14, k_identity},
    {OP_Optional, 15, k_optional},
    {OP_OptionalGetElement, 15, k_optional_get},
    {OP_OptionalHasElement, 15, k_optional_has},
    {OP_SequenceAt, 11, k_seq_at},
    {OP_SequenceConstruct, 11, k_seq_construct},
    {OP_SequenceEmpty, 11, k_seq_empty},
    {OP_SequenceErase, 11, k_seq_erase},
    {OP_SequenceInsert, 11, k_seq_insert},
    {OP_SequenceLength, 11, k_seq_length},
    {OP_SplitToSequence, 11, k_split_to_seq},
};
const size_t kernel_table_sequence_count = countof(kernel_table_sequence);

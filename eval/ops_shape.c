/*
** Kernels for the ops that shape subgraphs are made of: Constant, Shape, Gather,
** Concat, Reshape, Slice, ... They move data, so they dispatch on element size
** only and work for every element type, strings included. Reshape-like ops
** (Reshape, Flatten, Squeeze, Unsqueeze) and Expand are views; the rest copy.
**
** A string tensor stores graph_bytes that point at their bytes. A copy made by
** these kernels copies the graph_bytes and makes the output keep its inputs'
** storage alive (tensor_keep).
*/
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"
#include "shape/dim.h"

#define KERNEL(name)                                                                   \
    static int name(const Onnx__NodeProto *n, int64_t opset, tensor *const *in,        \
                    size_t n_in, tensor **out, size_t n_out, const eval_env *env,  \
                    errbuf *err)
#define UNUSED(x) (void)(x)

/* ------------------------------------------------------------------ helpers */

static int need_inputs(tensor *const *in, size_t n_in, size_t need, errbuf *err) {
    if (n_in < need)
        return err_set(err, TILEOPT_INVALID, "needs %zu inputs, got %zu", need, n_in);
    for (size_t i = 0; i < need; i++)
        if (!in[i]) return err_set(err, TILEOPT_INVALID, "input %zu is missing", i);
    return TILEOPT_OK;
}

static int need_output(size_t n_out, errbuf *err) {
    if (n_out < 1) return err_set(err, TILEOPT_INVALID, "has no output");
    return TILEOPT_OK;
}

/* The common prologue: the first `need` inputs present and an output to write. */
int kern_need_io(tensor *const *in, size_t n_in, size_t need, size_t n_out, errbuf *err) {
    int rc = need_inputs(in, n_in, need, err);
    return rc ? rc : need_output(n_out, err);
}

/* The common epilogue: out[0] = o on success; o freed on failure. */
int kern_emit_result(int rc, tensor *o, tensor **out) {
    if (rc) {
        tensor_free(o);
        return rc;
    }
    out[0] = o;
    return TILEOPT_OK;
}

size_t kern_esize(int32_t elem) {
    const dtype_info *d = dtype_get(elem);
    return d ? d->size : 0;
}

/* Normalize an axis against rank r (valid range [-r, r-1]). */
int kern_norm_axis(int64_t a, int64_t r, const char *what, int64_t *out, errbuf *err) {
    if (a < -r || a >= r)
        return err_set(err, TILEOPT_INVALID, "%s %lld out of range for rank %lld", what,
                       (long long)a, (long long)r);
    *out = a < 0 ? a + r : a;
    return TILEOPT_OK;
}

static bool is_int_type(int32_t elem) {
    const dtype_info *d = dtype_get(elem);
    return d && (d->kind == KIND_SINT || d->kind == KIND_UINT);
}

/* Element i of a contiguous integer tensor as int64. */
static bool int_at(const tensor *t, uint64_t i, int64_t *v) {
    const uint8_t *p = t->data + i * kern_esize(t->elem);
    switch (t->elem) {
    case DT_INT8: { int8_t x; memcpy(&x, p, 1); *v = x; return true; }
    case DT_UINT8: { uint8_t x; memcpy(&x, p, 1); *v = x; return true; }
    case DT_INT16: { int16_t x; memcpy(&x, p, 2); *v = x; return true; }
    case DT_UINT16: { uint16_t x; memcpy(&x, p, 2); *v = x; return true; }
    case DT_INT32: { int32_t x; memcpy(&x, p, 4); *v = x; return true; }
    case DT_UINT32: { uint32_t x; memcpy(&x, p, 4); *v = x; return true; }
    case DT_INT64: { int64_t x; memcpy(&x, p, 8); *v = x; return true; }
    case DT_UINT64: {
        uint64_t x;
        memcpy(&x, p, 8);
        if (x > (uint64_t)INT64_MAX) return false;
        *v = (int64_t)x;
        return true;
    }
    default: return false;
    }
}

/*
** The values of an integer tensor (any rank) as int64 into a malloc'd array
** (*vals, *count). `what` names the input in errors.
*/
static int read_ints_alloc(tensor *t, const char *what, const eval_env *env,
                           int64_t **vals, size_t *count, errbuf *err) {
    *vals = NULL;
    *count = 0;
    if (!is_int_type(t->elem))
        return err_set(err, TILEOPT_INVALID, "%s must be an integer tensor, not %s", what,
                       dtype_name(t->elem));
    tensor *c = NULL;
    int rc = tensor_contiguous(t, env, &c, err);
    if (rc) return rc;
    uint64_t nel = tensor_numel(c);
    int64_t *v = malloc((nel ? nel : 1) * sizeof *v);
    if (!v) {
        tensor_free(c);
        return err_set(err, TILEOPT_NOMEM, "out of memory reading %s", what);
    }
    for (uint64_t i = 0; i < nel; i++) {
        if (!int_at(c, i, &v[i])) {
            free(v);
            tensor_free(c);
            return err_set(err, TILEOPT_INVALID, "%s value %llu does not fit int64", what,
                           (unsigned long long)i);
        }
    }
    tensor_free(c);
    *vals = v;
    *count = (size_t)nel;
    return TILEOPT_OK;
}

/* Gather-style indices into an axis of size dim: read (malloc'd into *idx, free
** it) and made non-negative; one out of [-dim, dim) is an error. */
static int read_indices(tensor *ind, int64_t dim, const eval_env *env, int64_t **idx,
                        size_t *ni, errbuf *err) {
    int rc = read_ints_alloc(ind, "indices", env, idx, ni, err);
    if (rc) return rc;
    for (size_t i = 0; i < *ni; i++) {
        int64_t v = (*idx)[i];
        if (v < -dim || v >= dim) {
            rc = err_set(err, TILEOPT_INVALID, "index %lld out of range [%lld, %lld]",
                         (long long)v, (long long)-dim, (long long)(dim - 1));
            free(*idx);
            *idx = NULL;
            return rc;
        }
        if (v < 0) (*idx)[i] = v + dim;
    }
    return TILEOPT_OK;
}

/* A 0-D or 1-D integer tensor into a fixed array of cap entries. */
int kern_read_ints(tensor *t, const char *what, const eval_env *env, int64_t *out,
                   size_t cap, size_t *count, errbuf *err) {
    if (t->rank > 1)
        return err_set(err, TILEOPT_INVALID, "%s must be 0-D or 1-D, got rank %d", what,
                       (int)t->rank);
    int64_t *v;
    size_t nv;
    int rc = read_ints_alloc(t, what, env, &v, &nv, err);
    if (rc) return rc;
    if (nv > cap) {
        free(v);
        return err_set(err, TILEOPT_INVALID, "%s has %zu values, at most %zu allowed", what,
                       nv, cap);
    }
    memcpy(out, v, nv * sizeof *v);
    *count = nv;
    free(v);
    return TILEOPT_OK;
}

/* An ints attribute into out (cap entries); *present tells whether it is set. */
int kern_attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *out, size_t cap,
                   size_t *count, bool *present, errbuf *err) {
    const Onnx__AttributeProto *a = graph_attr(n, name);
    *count = 0;
    *present = a != NULL;
    if (!a) return TILEOPT_OK;
    if (a->n_ints > cap)
        return err_set(err, TILEOPT_INVALID, "attribute %s has %zu values, at most %zu",
                       name, a->n_ints, cap);
    if (a->n_ints) memcpy(out, a->ints, a->n_ints * sizeof *out);
    *count = a->n_ints;
    return TILEOPT_OK;
}

/* Product of dims with overflow check. */
static bool dims_numel(const int64_t *dims, int32_t rank, uint64_t *out) {
    uint64_t p = 1;
    for (int32_t i = 0; i < rank; i++) {
        if (dims[i] < 0) return false;
        if (dims[i] == 0) {
            *out = 0;
            /* still validate the remaining dims */
            for (int32_t j = i + 1; j < rank; j++)
                if (dims[j] < 0) return false;
            return true;
        }
        if (__builtin_mul_overflow(p, (uint64_t)dims[i], &p)) return false;
    }
    *out = p;
    return true;
}

/* Row-major element strides of a shape. */
void kern_row_major(const int64_t *dims, int32_t rank, int64_t *strides) {
    int64_t s = 1;
    for (int32_t i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i] ? dims[i] : 1;
    }
}

/*
** Copy a strided source into contiguous dst: rank axes of dims, with byte strides
** (negative allowed) from src. The caller guarantees every address is in range.
*/
void kern_copy_strided(uint8_t *dst, const uint8_t *src, size_t es, int32_t rank,
                       const int64_t *dims, const int64_t *strides) {
    uint64_t total = 1;
    for (int32_t i = 0; i < rank; i++) total *= (uint64_t)dims[i];
    if (total == 0) return;
    if (rank == 0) {
        memcpy(dst, src, es);
        return;
    }
    int64_t idx[TENSOR_MAX_RANK] = {0};
    int64_t inner = dims[rank - 1], istride = strides[rank - 1];
    const uint8_t *p = src;
    for (uint64_t done = 0; done < total; done += (uint64_t)inner) {
        if (istride == (int64_t)es) {
            memcpy(dst, p, (size_t)inner * es);
            dst += (size_t)inner * es;
        } else {
            const uint8_t *q = p;
            for (int64_t j = 0; j < inner; j++, q += istride, dst += es) memcpy(dst, q, es);
        }
        /* advance the outer odometer */
        for (int32_t ax = rank - 2; ax >= 0; ax--) {
            p += strides[ax];
            if (++idx[ax] < dims[ax]) break;
            p -= strides[ax] * dims[ax];
            idx[ax] = 0;
        }
    }
}

/* A string output copied by pointer keeps its source's storage alive. */
int kern_keep(tensor *o, const tensor *src, errbuf *err) {
    if (!tensor_keep(o, src)) return err_set(err, TILEOPT_NOMEM, "out of memory");
    return TILEOPT_OK;
}

/* The common tail of copying kernels: out[0] = o, which keeps c's storage alive
** (string contents point into it); c itself is released either way. */
int kern_emit_keeping(tensor *o, tensor *c, tensor **out, errbuf *err) {
    int rc = kern_keep(o, c, err);
    tensor_free(c);
    return kern_emit_result(rc, o, out);
}

/*
** A tensor over a TensorProto's values (Constant's attributes). Kernels have no
** model at hand; a model with default limits stands in, which only refuses
** external data (a Constant never has any that this evaluator could read).
*/
static int proto_tensor(const Onnx__TensorProto *p, const eval_env *env, tensor **out,
                        errbuf *err) {
    graph_model tmp;
    memset(&tmp, 0, sizeof tmp);
    graph_limits_default(&tmp.limits);
    if (env && env->lim.max_tensor_bytes) tmp.limits.max_tensor_bytes = env->lim.max_tensor_bytes;
    return tensor_from_proto(&tmp, p, env, out, err);
}

/* A new contiguous tensor; wraps tensor_new. */
int kern_new_tensor(int32_t elem, const int64_t *dims, int32_t rank,
                    const eval_env *env, tensor **out, errbuf *err) {
    uint64_t nel;
    if (!dims_numel(dims, rank, &nel))
        return err_set(err, TILEOPT_LIMIT, "output shape overflows or has a negative dim");
    return tensor_new(elem, dims, rank, env, out, err);
}

/* A new 1-D int64 tensor holding v[0..n). */
static int new_i64_vec(const int64_t *v, size_t n, const eval_env *env, tensor **out,
                       errbuf *err) {
    int64_t d = (int64_t)n;
    int rc = tensor_new(DT_INT64, &d, 1, env, out, err);
    if (rc) return rc;
    if (n) memcpy((*out)->data, v, n * sizeof *v);
    return TILEOPT_OK;
}

static int new_i64_scalar(int64_t v, const eval_env *env, tensor **out, errbuf *err) {
    int rc = tensor_new(DT_INT64, NULL, 0, env, out, err);
    if (rc) return rc;
    memcpy((*out)->data, &v, sizeof v);
    return TILEOPT_OK;
}


/* ------------------------------------------------------------------ Constant */

KERNEL(k_constant) {
    UNUSED(in);
    UNUSED(n_in);
    UNUSED(opset);
    int rc = need_output(n_out, err);
    if (rc) return rc;
    graph_const_hdr hdr;
    const Onnx__TensorProto *tp;
    if ((rc = graph_constant_value(n, &hdr, &tp, err))) return rc;
    return proto_tensor(tp, env, &out[0], err);
}

/* ------------------------------------------------------------ ConstantOfShape */

KERNEL(k_constant_of_shape) {
    UNUSED(opset);
    int rc = kern_need_io(in, n_in, 1, n_out, err);
    if (rc) return rc;
    int64_t dims[TENSOR_MAX_RANK];
    size_t rank;
    if (in[0]->rank != 1)
        return err_set(err, TILEOPT_INVALID, "input must be 1-D, got rank %d",
                       (int)in[0]->rank);
    rc = kern_read_ints(in[0], "shape", env, dims, TENSOR_MAX_RANK, &rank, err);
    if (rc) return rc;
    for (size_t i = 0; i < rank; i++)
        if (dims[i] < 0)
            return err_set(err, TILEOPT_INVALID, "shape[%zu] = %lld is negative", i,
                           (long long)dims[i]);
    tensor *val = NULL;
    const Onnx__AttributeProto *a = graph_attr(n, "value");
    if (a) {
        if (!a->t) return err_set(err, TILEOPT_INVALID, "attribute value has no tensor");
        rc = proto_tensor(a->t, env, &val, err);
        if (rc) return rc;
        if (tensor_numel(val) != 1) {
            tensor_free(val);
            return err_set(err, TILEOPT_INVALID, "value must hold one element");
        }
        tensor *c = NULL;
        rc = tensor_contiguous(val, env, &c, err);
        tensor_free(val);
        if (rc) return rc;
        val = c;
    }
    int32_t elem = val ? val->elem : DT_FLOAT;
    tensor *o = NULL;
    rc = kern_new_tensor(elem, dims, (int32_t)rank, env, &o, err);
    if (rc) {
        tensor_free(val);
        return rc;
    }
    if (val) {
        /* one element broadcast over the output: the Tile engine's fill */
        tile_axis ax = {1, 0, (int64_t)tensor_numel(o)};
        tile_engine(o->data, val->data, kern_esize(elem), &ax, 1);
        rc = kern_keep(o, val, err);
        tensor_free(val);
    }
    return kern_emit_result(rc, o, out);
}

/* ------------------------------------------------------------- Shape, Size */

KERNEL(k_shape) {
    UNUSED(opset);
    int rc = kern_need_io(in, n_in, 1, n_out, err);
    if (rc) return rc;
    int64_t r = in[0]->rank;
    int64_t start = graph_attr_int(n, "start", 0), end = graph_attr_int(n, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    size_t cnt = end > start ? (size_t)(end - start) : 0;
    return new_i64_vec(in[0]->dims + start, cnt, env, &out[0], err);
}

KERNEL(k_size) {
    UNUSED(opset);
    UNUSED(n);
    int rc = kern_need_io(in, n_in, 1, n_out, err);
    if (rc) return rc;
    uint64_t nel;
    if (!dims_numel(in[0]->dims, in[0]->rank, &nel) || nel > (uint64_t)INT64_MAX)
        return err_set(err, TILEOPT_LIMIT, "element count overflows int64");
    return new_i64_scalar((int64_t)nel, env, &out[0], err);
}

/* ------------------------------------------------------------------ Gather */

KERNEL(k_gather) {
    UNUSED(opset);
    int rc = kern_need_io(in, n_in, 2, n_out, err);
    if (rc) return rc;
    tensor *x = in[0], *ind = in[1];
    if (x->rank < 1) return err_set(err, TILEOPT_INVALID, "data must have rank >= 1");
    int64_t axis = 0;
    rc = kern_norm_axis(graph_attr_int(n, "axis", 0), x->rank, "axis", &axis, err);
    if (rc) return rc;
    if (x->rank - 1 + ind->rank > TENSOR_MAX_RANK)
        return err_set(err, TILEOPT_LIMIT, "output rank exceeds %d", TENSOR_MAX_RANK);
    int64_t *idx;
    size_t ni;
    rc = read_indices(ind, x->dims[axis], env, &idx, &ni, err);
    if (rc) return rc;
    int64_t od[TENSOR_MAX_RANK];
    int32_t orank = 0;
    for (int64_t i = 0; i < axis; i++) od[orank++] = x->dims[i];
    for (int32_t i = 0; i < ind->rank; i++) od[orank++] = ind->dims[i];
    for (int32_t i = (int32_t)axis + 1; i < x->rank; i++) od[orank++] = x->dims[i];
    tensor *c = NULL, *o = NULL;
    rc = tensor_contiguous(x, env, &c, err);
    if (!rc) rc = kern_new_tensor(x->elem, od, orank, env, &o, err);
    if (rc) {
        free(idx);
        tensor_free(c);
        return rc;
    }
    size_t es = kern_esize(x->elem);
    uint64_t outer = 1, inner = es;
    for (int64_t i = 0; i < axis; i++) outer *= (uint64_t)x->dims[i];
    for (int32_t i = (int32_t)axis + 1; i < x->rank; i++) inner *= (uint64_t)x->dims[i];
    uint8_t *dst = o->data;
    if (inner && tensor_numel(o)) {
        for (uint64_t a = 0; a < outer; a++) {
            const uint8_t *base = c->data + a * (uint64_t)x->dims[axis] * inner;
            for (size_t j = 0; j < ni; j++, dst += inner)
                memcpy(dst, base + (uint64_t)idx[j] * inner, inner);
        }
    }
    free(idx);
    return kern_emit_keeping(o, c, out, err);
}

/* ------------------------------------------------------------------ Concat */

KERNEL(k_concat) {
    int rc = need_output(n_out, err);
    if (rc) return rc;
    if (n_in < 1) return err_set(err, TILEOPT_INVALID, "needs at least one input");
    for (size_t i = 0; i < n_in; i++)
        if (!in[i]) return err_set(err, TILEOPT_INVALID, "input %zu is missing", i);
    const Onnx__AttributeProto *aa = graph_attr(n, "axis");
    if (!aa && opset >= 4) return err_set(err, TILEOPT_INVALID, "attribute axis is missing");
    tensor *x0 = in[0];
    int32_t r = x0->rank;
    if (r < 1) return err_set(err, TILEOPT_INVALID, "inputs must have rank >= 1");
    int64_t axis = 0;
    rc = kern_norm_axis(aa ? aa->i : 1, r, "axis", &axis, err);
    if (rc) return rc;
    int64_t od[TENSOR_MAX_RANK];
    memcpy(od, x0->dims, (size_t)r * sizeof *od);
    od[axis] = 0;
    for (size_t i = 0; i < n_in; i++) {
        const tensor *x = in[i];
        if (x->elem != x0->elem)
            return err_set(err, TILEOPT_INVALID, "input %zu is %s, input 0 is %s", i,
                           dtype_name(x->elem), dtype_name(x0->elem));
        if (x->rank != r)
            return err_set(err, TILEOPT_INVALID, "input %zu has rank %d, input 0 has %d", i,
                           (int)x->rank, (int)r);
        for (int32_t d = 0; d < r; d++)
            if (d != axis && x->dims[d] != x0->dims[d])
                return err_set(err, TILEOPT_INVALID,
                               "input %zu dim %d is %lld, input 0 has %lld", i, (int)d,
                               (long long)x->dims[d], (long long)x0->dims[d]);
        if (__builtin_add_overflow(od[axis], x->dims[axis], &od[axis]))
            return err_set(err, TILEOPT_LIMIT, "output dim overflows");
    }
    tensor *o = NULL;
    rc = kern_new_tensor(x0->elem, od, r, env, &o, err);
    if (rc) return rc;
    size_t es = kern_esize(x0->elem);
    uint64_t outer = 1, inner = es;
    for (int64_t d = 0; d < axis; d++) outer *= (uint64_t)od[d];
    for (int32_t d = (int32_t)axis + 1; d < r; d++) inner *= (uint64_t)od[d];
    if (tensor_numel(o)) {
        tensor **cs = calloc(n_in, sizeof *cs);
        if (!cs) {
            tensor_free(o);
            return err_set(err, TILEOPT_NOMEM, "out of memory");
        }
        for (size_t i = 0; i < n_in && !rc; i++) rc = tensor_contiguous(in[i], env, &cs[i], err);
        if (!rc) {
            uint8_t *dst = o->data;
            for (uint64_t a = 0; a < outer; a++)
                for (size_t i = 0; i < n_in; i++) {
                    uint64_t blk = (uint64_t)in[i]->dims[axis] * inner;
                    if (blk) memcpy(dst, cs[i]->data + a * blk, blk);
                    dst += blk;
                }
        }
        for (size_t i = 0; i < n_in && !rc; i++) rc = kern_keep(o, cs[i], err);
        for (size_t i = 0; i < n_in; i++) tensor_free(cs[i]);
        free(cs);
    }
    return kern_emit_result(rc, o, out);
}

/* ---------------------------------------------------- Unsqueeze, Squeeze */

static int do_unsqueeze(tensor *x, const int64_t *axes, size_t na, const eval_env *env,
                        tensor **out, errbuf *err) {
    int64_t r = x->rank + (int64_t)na;
    if (r > TENSOR_MAX_RANK)
        return err_set(err, TILEOPT_LIMIT, "output rank %lld exceeds %d", (long long)r,
                       TENSOR_MAX_RANK);
    bool mark[TENSOR_MAX_RANK] = {false};
    for (size_t i = 0; i < na; i++) {
        int64_t a = 0;
        int rc = kern_norm_axis(axes[i], r, "axes value", &a, err);
        if (rc) return rc;
        if (mark[a])
            return err_set(err, TILEOPT_INVALID, "axis %lld repeated", (long long)axes[i]);
        mark[a] = true;
    }
    int64_t od[TENSOR_MAX_RANK];
    for (int64_t i = 0, j = 0; i < r; i++) od[i] = mark[i] ? 1 : x->dims[j++];
    return view_reshape(x, od, (size_t)r, env, out, err);
}

static int do_squeeze(tensor *x, const int64_t *axes, size_t na, bool have_axes,
                      const eval_env *env, tensor **out, errbuf *err) {
    bool mark[TENSOR_MAX_RANK] = {false};
    if (have_axes) {
        for (size_t i = 0; i < na; i++) {
            int64_t a = 0;
            int rc = kern_norm_axis(axes[i], x->rank, "axes value", &a, err);
            if (rc) return rc;
            if (x->dims[a] != 1)
                return err_set(err, TILEOPT_INVALID, "cannot squeeze axis %lld of size %lld",
                               (long long)axes[i], (long long)x->dims[a]);
            mark[a] = true;
        }
    } else {
        for (int32_t i = 0; i < x->rank; i++) mark[i] = x->dims[i] == 1;
    }
    int64_t od[TENSOR_MAX_RANK];
    size_t r = 0;
    for (int32_t i = 0; i < x->rank; i++)
        if (!mark[i]) od[r++] = x->dims[i];
    return view_reshape(x, od, r, env, out, err);
}

KERNEL(k_unsqueeze_1) {
    UNUSED(opset);
    int rc = kern_need_io(in, n_in, 1, n_out, err);
    if (rc) return rc;
    int64_t axes[TENSOR_MAX_RANK];
    size_t na = 0;
    bool have;
    rc = kern_attr_ints(n, "axes", axes, TENSOR_MAX_RANK, &na, &have, err);
    if (rc) return rc;
    if (!have) return err_set(err, TILEOPT_INVALID, "attribute axes is missing");
    return do_unsqueeze(in[0], axes, na, env, &out[0], err);
}

KERNEL(k_unsqueeze_13) {
    UNUSED(opset);
    UNUSED(n);
    int rc = kern_need_io(in, n_in, 2, n_out, err);
    if (rc) return rc;
    int64_t axes[TENSOR_MAX_RANK];
    size_t na = 0;
    rc = kern_read_ints(in[1], "axes", env, axes, TENSOR_MAX_RANK, &na, err);
    if (rc) return rc;
    return do_unsqueeze(in[0], axes, na, env, &out[0], err);
}

KERNEL(k_squeeze_1) {
    UNUSED(opset);
    int rc = kern_need_io(in, n_in, 1, n_out, err);
    if (rc) return rc;
    int64_t axes[TENSOR_MAX_RANK];
    size_t na = 0;
    bool have;
    rc = kern_attr_ints(n, "axes", axes, TENSOR_MAX_RANK, &na, &have, err);
    if (rc) return rc;
    return do_squeeze(in[0], axes, na, have, env, &out[0], err);
}

KERNEL(k_squeeze_13) {
    UNUSED(opset);
    UNUSED(n);
    int rc = kern_need_io(in, n_in, 1, n_out, err);
    if (rc) return rc;
    int64_t axes[TENSOR_MAX_RANK];
    size_t na = 0;
    bool have = n_in > 1 && in[1];
    if (have) {
        rc = kern_read_ints(in[1], "axes", env, axes, TENSOR_MAX_RANK, &na, err);
        if (rc) return rc;
    }
    return do_squeeze(in[0], axes, na, have, env, &out[0], err);
}

/* ------------------------------------------------------- Reshape, Flatten */

static int do_reshape(tensor *x, const int64_t *shape, size_t ns, bool allowzero,
                      const eval_env *env, tensor **out, errbuf *err) {
    int64_t od[TENSOR_MAX_RANK];
    int64_t infer = -1;
    uint64_t known = 1;
    bool zero = false;
    for (size_t i = 0; i < ns; i++) {
        int64_t d = shape[i];
        if (d == 0 && !allowzero) {
            if ((int64_t)i >= x->rank)
                return err_set(err, TILEOPT_INVALID,
                               "shape[%zu] = 0 copies a dim the input (rank %d) lacks", i,
                               (int)x->rank);
            d = x->dims[i];
        }
        if (d == -1) {
            if (infer >= 0)
                return err_set(err, TILEOPT_INVALID, "more than one -1 in shape");
            infer = (int64_t)i;
            od[i] = 1;
            continue;
        }
        if (d < -1)
            return err_set(err, TILEOPT_INVALID, "shape[%zu] = %lld is invalid", i,
                           (long long)d);
        if (d == 0) zero = true;
        else if (__builtin_mul_overflow(known, (uint64_t)d, &known))
            return err_set(err, TILEOPT_LIMIT, "shape overflows");
        od[i] = d;
    }
    uint64_t nel = tensor_numel(x);
    if (infer >= 0) {
        if (zero) {
            if (allowzero)
                return err_set(err, TILEOPT_INVALID, "-1 with a zero dim when allowzero=1");
            /* 0-size output: the -1 cannot be inferred; numpy rejects it too */
            return err_set(err, TILEOPT_INVALID, "cannot infer -1 with a zero-size shape");
        }
        if (nel % known)
            return err_set(err, TILEOPT_INVALID,
                           "cannot reshape %llu elements with -1 and the rest %llu",
                           (unsigned long long)nel, (unsigned long long)known);
        od[infer] = (int64_t)(nel / known);
        known = nel;
    } else if (zero) {
        known = 0;
    }
    if (known != nel)
        return err_set(err, TILEOPT_INVALID, "cannot reshape %llu elements into %llu",
                       (unsigned long long)nel, (unsigned long long)known);
    return view_reshape(x, od, ns, env, out, err);
}

KERNEL(k_reshape_1) {
    UNUSED(opset);
    int rc = kern_need_io(in, n_in, 1, n_out, err);
    if (rc) return rc;
    int64_t shape[TENSOR_MAX_RANK];
    size_t ns = 0;
    bool have;
    rc = kern_attr_ints(n, "shape", shape, TENSOR_MAX_RANK, &ns, &have, err);
    if (rc) return rc;
    if (!have) return err_set(err, TILEOPT_INVALID, "attribute shape is missing");
    return do_reshape(in[0], shape, ns, false, env, &out[0], err);
}

KERNEL(k_reshape_5) {
    int rc = kern_need_io(in, n_in, 2, n_out, err);
    if (rc) return rc;
    int64_t shape[TENSOR_MAX_RANK];
    size_t ns = 0;
    if (in[1]->rank != 1)
        return err_set(err, TILEOPT_INVALID, "shape must be 1-D, got rank %d",
                       (int)in[1]->rank);
    rc = kern_read_ints(in[1], "shape", env, shape, TENSOR_MAX_RANK, &ns, err);
    if (rc) return rc;
    bool allowzero = opset >= 14 && graph_attr_int(n, "allowzero", 0) != 0;
    return do_reshape(in[0], shape, ns, allowzero, env, &out[0], err);
}

KERNEL(k_flatten) {
    int rc = kern_need_io(in, n_in, 1, n_out, err);
    if (rc) return rc;
    tensor *x = in[0];
    int64_t r = x->rank, axis = graph_attr_int(n, "axis", 1);
    if (axis < 0 && opset >= 11) axis += r;
    if (axis < 0 || axis > r)
        return err_set(err, TILEOPT_INVALID, "axis %lld out of range for rank %lld",
                       (long long)graph_attr_int(n, "axis", 1), (long long)r);
    uint64_t a = 1, b = 1;
    if (!dims_numel(x->dims, (int32_t)axis, &a) ||
        !dims_numel(x->dims + axis, (int32_t)(r - axis), &b))
        return err_set(err, TILEOPT_LIMIT, "shape overflows");
    int64_t od[2] = {(int64_t)a, (int64_t)b};
    return view_reshape(x, od, 2, env, &out[0], err);
}

/* ------------------------------------------------------------------ Slice */

static int do_slice(tensor *x, const int64_t *starts, const int64_t *ends, size_t ns,
                    const int64_t *axes, bool have_axes, size_t na, const int64_t *steps,
                    bool have_steps, size_t nst, const eval_env *env, tensor **out,
                    errbuf *err) {
    int32_t r = x->rank;
    if (ns != (size_t)0 && (int64_t)ns > r)
        return err_set(err, TILEOPT_INVALID, "%zu starts for rank %d", ns, (int)r);
    if (have_axes && na != ns)
        return err_set(err, TILEOPT_INVALID, "%zu axes for %zu starts", na, ns);
    if (have_steps && nst != ns)
        return err_set(err, TILEOPT_INVALID, "%zu steps for %zu starts", nst, ns);
    int64_t st[TENSOR_MAX_RANK], step[TENSOR_MAX_RANK], len[TENSOR_MAX_RANK];
    bool seen[TENSOR_MAX_RANK] = {false};
    for (int32_t i = 0; i < r; i++) {
        st[i] = 0;
        step[i] = 1;
        len[i] = x->dims[i];
    }
    for (size_t k = 0; k < ns; k++) {
        int64_t a = have_axes ? axes[k] : (int64_t)k;
        int rc = kern_norm_axis(a, r, "axes value", &a, err);
        if (rc) return rc;
        if (seen[a]) return err_set(err, TILEOPT_INVALID, "axis %lld repeated", (long long)a);
        seen[a] = true;
        int64_t d = x->dims[a], s = starts[k], e = ends[k], p = have_steps ? steps[k] : 1;
        if (p == 0) return err_set(err, TILEOPT_INVALID, "step 0 on axis %lld", (long long)a);
        int64_t n = dim_slice_len(d, s, e, p);
        s = dim_slice_first(d, s, p);
        st[a] = n ? s : 0;
        step[a] = p;
        len[a] = n;
    }
    tensor *c = NULL, *o = NULL;
    int rc = kern_new_tensor(x->elem, len, r, env, &o, err);
    if (rc) return rc;
    if (tensor_numel(o)) {
        rc = tensor_contiguous(x, env, &c, err);
        if (rc) {
            tensor_free(o);
            return rc;
        }
        size_t es = kern_esize(x->elem);
        int64_t rs[TENSOR_MAX_RANK], bs[TENSOR_MAX_RANK];
        kern_row_major(x->dims, r, rs);
        int64_t off = 0;
        for (int32_t i = 0; i < r; i++) {
            off += st[i] * rs[i] * (int64_t)es;
            /* with two or more elements |step| < dim, so the product fits; a
            ** single element never moves along the axis */
            bs[i] = len[i] > 1 ? step[i] * rs[i] * (int64_t)es : 0;
        }
        kern_copy_strided(o->data, c->data + off, es, r, len, bs);
        rc = kern_keep(o, c, err);
        tensor_free(c);
        if (rc) {
            tensor_free(o);
            return rc;
        }
    }
    *out = o;
    return TILEOPT_OK;
}

KERNEL(k_slice_1) {
    UNUSED(opset);
    int rc = kern_need_io(in, n_in, 1, n_out, err);
    if (rc) return rc;
    int64_t s[TENSOR_MAX_RANK], e[TENSOR_MAX_RANK], a[TENSOR_MAX_RANK];
    size_t ns, ne, na;
    bool hs, he, ha;
    rc = kern_attr_ints(n, "starts", s, TENSOR_MAX_RANK, &ns, &hs, err);
    if (!rc) rc = kern_attr_ints(n, "ends", e, TENSOR_MAX_RANK, &ne, &he, err);
    if (!rc) rc = kern_attr_ints(n, "axes", a, TENSOR_MAX_RANK, &na, &ha, err);
    if (rc) return rc;
    if (!hs || !he) return err_set(err, TILEOPT_INVALID, "attributes starts and ends are required");
    if (ns != ne) return err_set(err, TILEOPT_INVALID, "%zu starts but %zu ends", ns, ne);
    return do_slice(in[0], s, e, ns, a, ha, na, NULL, false, 0, env, &out[0], err);
}

KERNEL(k_slice_10) {
    UNUSED(opset);
    UNUSED(n);
    int rc = kern_need_io(in, n_in, 3, n_out, err);
    if (rc) return rc;
    int64_t s[TENSOR_MAX_RANK], e[TENSOR_MAX_RANK], a[TENSOR_MAX_RANK], p[TENSOR_MAX_RANK];
    size_t ns = 0, ne = 0, na = 0, np = 0;
    bool ha = n_in > 3 && in[3], hp = n_in > 4 && in[4];
    rc = kern_read_ints(in[1], "starts", env, s, TENSOR_MAX_RANK, &ns, err);
    if (!rc) rc = kern_read_ints(in[2], "ends", env, e, TENSOR_MAX_RANK, &ne, err);
    if (!rc && ha) rc = kern_read_ints(in[3], "axes", env, a, TENSOR_MAX_RANK, &na, err);
    if (!rc && hp) rc = kern_read_ints(in[4], "steps", env, p, TENSOR_MAX_RANK, &np, err);
    if (rc) return rc;
    if (ns != ne) return err_set(err, TILEOPT_INVALID, "%zu starts but %zu ends", ns, ne);
    return do_slice(in[0], s, e, ns, a, ha, na, p, hp, np, env, &out[0], err);
}

/* ------------------------------------------------------------------ Range */

static int scalar_double(const tensor *t, double *v) {
    switch (t->elem) {
    case DT_FLOAT: { float f; memcpy(&f, t->data, 4); *v = f; return 0; }
    case DT_DOUBLE: memcpy(v, t->data, 8); return 0;
    default: return -1;
    }
}

KERNEL(k_range) {
    UNUSED(opset);
    UNUSED(n);
    int rc = kern_need_io(in, n_in, 3, n_out, err);
    if (rc) return rc;
    int32_t elem = in[0]->elem;
    for (int i = 0; i < 3; i++) {
        if (in[i]->elem != elem)
            return err_set(err, TILEOPT_INVALID, "inputs must share one type");
        if (tensor_numel(in[i]) != 1)
            return err_set(err, TILEOPT_INVALID, "input %d must be a scalar", i);
    }
    tensor *c[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3 && !rc; i++) rc = tensor_contiguous(in[i], env, &c[i], err);
    tensor *o = NULL;
    if (rc) goto done;
    if (elem == DT_FLOAT || elem == DT_DOUBLE) {
        double s, l, d;
        scalar_double(c[0], &s);
        scalar_double(c[1], &l);
        scalar_double(c[2], &d);
        if (d == 0 || !isfinite(s) || !isfinite(l) || !isfinite(d)) {
            rc = err_set(err, TILEOPT_INVALID, "start, limit and delta must be finite, delta nonzero");
            goto done;
        }
        double cnt = ceil((l - s) / d);
        if (!(cnt < 9.0e18)) {
            rc = err_set(err, TILEOPT_LIMIT, "range too long");
            goto done;
        }
        int64_t len = cnt > 0 ? (int64_t)cnt : 0;
        rc = kern_new_tensor(elem, &len, 1, env, &o, err);
        if (rc) goto done;
        for (int64_t i = 0; i < len; i++) {
            double v = s + (double)i * d;
            if (elem == DT_FLOAT) ((float *)(void *)o->data)[i] = (float)v;
            else ((double *)(void *)o->data)[i] = v;
        }
    } else if (elem == DT_INT16 || elem == DT_INT32 || elem == DT_INT64) {
        int64_t s, l, d, diff;
        int_at(c[0], 0, &s);
        int_at(c[1], 0, &l);
        int_at(c[2], 0, &d);
        if (d == 0) {
            rc = err_set(err, TILEOPT_INVALID, "delta is 0");
            goto done;
        }
        int64_t len = 0;
        if (__builtin_sub_overflow(l, s, &diff)) {
            rc = err_set(err, TILEOPT_LIMIT, "range too long");
            goto done;
        }
        if ((diff > 0 && d > 0) || (diff < 0 && d < 0)) {
            /* ceil(diff / d) on magnitudes: INT64_MIN / -1 would trap. */
            uint64_t ad = diff < 0 ? 0 - (uint64_t)diff : (uint64_t)diff;
            uint64_t dd = d < 0 ? 0 - (uint64_t)d : (uint64_t)d;
            uint64_t q = ad / dd + (ad % dd != 0);
            if (q > (uint64_t)INT64_MAX) {
                rc = err_set(err, TILEOPT_LIMIT, "range too long");
                goto done;
            }
            len = (int64_t)q;
        }
        rc = kern_new_tensor(elem, &len, 1, env, &o, err);
        if (rc) goto done;
        for (int64_t i = 0; i < len; i++) {
            int64_t v = s + i * d;
            if (elem == DT_INT16) ((int16_t *)(void *)o->data)[i] = (int16_t)v;
            else if (elem == DT_INT32) ((int32_t *)(void *)o->data)[i] = (int32_t)v;
            else ((int64_t *)(void *)o->data)[i] = v;
        }
    } else {
        rc = err_set(err, TILEOPT_UNSUPPORTED, "type %s not supported", dtype_name(elem));
    }
done:
    for (int i = 0; i < 3; i++) tensor_free(c[i]);
    return kern_emit_result(rc, o, out);
}

/* ------------------------------------------------------------------ Expand */

KERNEL(k_expand) {
    UNUSED(opset);
    UNUSED(n);
    int rc = kern_need_io(in, n_in, 2, n_out, err);
    if (rc) return rc;
    tensor *x = in[0];
    int64_t shape[TENSOR_MAX_RANK], od[TENSOR_MAX_RANK];
    size_t ns = 0;
    if (in[1]->rank != 1)
        return err_set(err, TILEOPT_INVALID, "shape must be 1-D, got rank %d",
                       (int)in[1]->rank);
    rc = kern_read_ints(in[1], "shape", env, shape, TENSOR_MAX_RANK, &ns, err);
    if (rc) return rc;
    int32_t r = x->rank > (int32_t)ns ? x->rank : (int32_t)ns;
    dim d[TENSOR_MAX_RANK];
    dim_bcast b;
    dim_bcast_start(&b);
    for (int32_t i = 0; i < x->rank; i++) d[i] = dim_num(x->dims[i]);
    dim_bcast_add(&b, d, x->rank);
    int32_t neg = -1; /* the first negative entry of the shape */
    for (int32_t i = 0; i < (int32_t)ns; i++) {
        d[i] = dim_num(shape[i]);
        if (neg < 0 && shape[i] < 0) neg = i;
    }
    dim_bcast_add(&b, d, (int32_t)ns);
    /* whichever comes first along the output axes is the error */
    if (neg >= 0 && (b.proven || neg + r - (int32_t)ns <= b.clash.out_axis))
        return err_set(err, TILEOPT_INVALID, "shape[%d] = %lld is negative", (int)neg,
                       (long long)shape[neg]);
    if (!b.proven)
        return err_set(err, TILEOPT_INVALID,
                       "cannot broadcast input dim %lld to %lld (output axis %d)",
                       (long long)b.clash.other.n, (long long)b.clash.have.n,
                       (int)b.clash.out_axis);
    dim_bcast_result(&b, d);
    for (int32_t i = 0; i < r; i++) od[i] = d[i].n;
    uint64_t nel;
    if (!dims_numel(od, r, &nel)) return err_set(err, TILEOPT_LIMIT, "output size overflows");
    return view_expand(x, od, (size_t)r, &out[0], err);
}

/* --------------------------------------------------------------- Transpose */

KERNEL(k_transpose) {
    UNUSED(opset);
    int rc = kern_need_io(in, n_in, 1, n_out, err);
    if (rc) return rc;
    tensor *x = in[0];
    int32_t r = x->rank;
    int64_t perm[TENSOR_MAX_RANK];
    size_t np;
    bool have;
    rc = kern_attr_ints(n, "perm", perm, TENSOR_MAX_RANK, &np, &have, err);
    if (rc) return rc;
    if (!have) {
        np = (size_t)r;
        for (int32_t i = 0; i < r; i++) perm[i] = r - 1 - i;
    }
    if ((int32_t)np != r)
        return err_set(err, TILEOPT_INVALID, "perm has %zu entries for rank %d", np, (int)r);
    bool seen[TENSOR_MAX_RANK] = {false};
    for (size_t i = 0; i < np; i++) {
        if (perm[i] < 0 || perm[i] >= r || seen[perm[i]])
            return err_set(err, TILEOPT_INVALID, "perm is not a permutation of 0..%d",
                           (int)r - 1);
        seen[perm[i]] = true;
    }
    int64_t od[TENSOR_MAX_RANK], rs[TENSOR_MAX_RANK], bs[TENSOR_MAX_RANK];
    size_t es = kern_esize(x->elem);
    kern_row_major(x->dims, r, rs);
    for (int32_t i = 0; i < r; i++) {
        od[i] = x->dims[perm[i]];
        bs[i] = rs[perm[i]] * (int64_t)es;
    }
    tensor *c = NULL, *o = NULL;
    rc = kern_new_tensor(x->elem, od, r, env, &o, err);
    if (!rc) rc = tensor_contiguous(x, env, &c, err);
    if (!rc) {
        kern_copy_strided(o->data, c->data, es, r, od, bs);
        rc = kern_keep(o, c, err);
    }
    tensor_free(c);
    return kern_emit_result(rc, o, out);
}

/* ------------------------------------------------------------ GatherElements */

KERNEL(k_gather_elements) {
    UNUSED(opset);
    int rc = kern_need_io(in, n_in, 2, n_out, err);
    if (rc) return rc;
    tensor *x = in[0], *ind = in[1];
    int32_t r = x->rank;
    if (r < 1) return err_set(err, TILEOPT_INVALID, "data must have rank >= 1");
    if (ind->rank != r)
        return err_set(err, TILEOPT_INVALID, "indices have rank %d, data %d", (int)ind->rank,
                       (int)r);
    int64_t axis = 0;
    rc = kern_norm_axis(graph_attr_int(n, "axis", 0), r, "axis", &axis, err);
    if (rc) return rc;
    for (int32_t i = 0; i < r; i++)
        if (i != axis && ind->dims[i] > x->dims[i])
            return err_set(err, TILEOPT_INVALID, "indices dim %d is %lld, data has %lld",
                           (int)i, (long long)ind->dims[i], (long long)x->dims[i]);
    int64_t *idx;
    size_t ni;
    rc = read_indices(ind, x->dims[axis], env, &idx, &ni, err);
    if (rc) return rc;
    tensor *c = NULL, *o = NULL;
    rc = tensor_contiguous(x, env, &c, err);
    if (!rc) rc = kern_new_tensor(x->elem, ind->dims, r, env, &o, err);
    if (rc) {
        free(idx);
        tensor_free(c);
        return rc;
    }
    size_t es = kern_esize(x->elem);
    int64_t ds[TENSOR_MAX_RANK], pos[TENSOR_MAX_RANK] = {0};
    kern_row_major(x->dims, r, ds);
    int64_t off = 0; /* data offset (elements) of pos, without the axis term */
    for (size_t i = 0; i < ni; i++) {
        memcpy(o->data + i * es, c->data + (size_t)(off + idx[i] * ds[axis]) * es, es);
        for (int32_t ax = r - 1; ax >= 0; ax--) {
            int64_t step = ax == axis ? 0 : ds[ax];
            off += step;
            if (++pos[ax] < ind->dims[ax]) break;
            off -= step * ind->dims[ax];
            pos[ax] = 0;
        }
    }
    free(idx);
    return kern_emit_keeping(o, c, out, err);
}

/* ------------------------------------------------------------------ Split */

static int do_split(const Onnx__NodeProto *n, int64_t opset, tensor *x, const int64_t *split,
                    size_t ns, bool have_split, tensor **out, size_t n_out,
                    const eval_env *env, errbuf *err) {
    if (n_out < 1) return err_set(err, TILEOPT_INVALID, "has no output");
    if (x->rank < 1) return err_set(err, TILEOPT_INVALID, "input must have rank >= 1");
    int64_t axis = 0;
    int rc = kern_norm_axis(graph_attr_int(n, "axis", 0), x->rank, "axis", &axis, err);
    if (rc) return rc;
    int64_t dim = x->dims[axis];
    int64_t *len = calloc(n_out, sizeof *len);
    if (!len) return err_set(err, TILEOPT_NOMEM, "out of memory");
    if (have_split) {
        int64_t sum = 0;
        if (ns != n_out) rc = err_set(err, TILEOPT_INVALID, "split has %zu entries for %zu outputs", ns, n_out);
        for (size_t i = 0; i < ns && !rc; i++) {
            if (split[i] < 0 || __builtin_add_overflow(sum, split[i], &sum))
                rc = err_set(err, TILEOPT_INVALID, "split[%zu] = %lld is invalid", i,
                             (long long)split[i]);
            else len[i] = split[i];
        }
        if (!rc && sum != dim)
            rc = err_set(err, TILEOPT_INVALID, "split sums to %lld, the axis has %lld",
                         (long long)sum, (long long)dim);
    } else {
        /* equal parts; from opset 18 the last may be smaller */
        int64_t k = (int64_t)n_out, chunk = dim / k + (dim % k != 0);
        if (dim % k && opset < 18)
            rc = err_set(err, TILEOPT_INVALID, "axis of %lld does not split into %zu equal parts",
                         (long long)dim, n_out);
        for (size_t i = 0, left = (size_t)dim; i < n_out && !rc; i++) {
            len[i] = (int64_t)left < chunk ? (int64_t)left : chunk;
            left -= (size_t)len[i];
        }
    }
    tensor *c = NULL;
    if (!rc) rc = tensor_contiguous(x, env, &c, err);
    size_t es = kern_esize(x->elem);
    uint64_t outer = 1, inner = es;
    for (int32_t i = 0; i < x->rank; i++) {
        if (i < axis) outer *= (uint64_t)x->dims[i];
        if (i > axis) inner *= (uint64_t)x->dims[i];
    }
    int64_t start = 0;
    for (size_t k = 0; k < n_out && !rc; k++) {
        int64_t od[TENSOR_MAX_RANK];
        memcpy(od, x->dims, (size_t)x->rank * sizeof *od);
        od[axis] = len[k];
        rc = kern_new_tensor(x->elem, od, x->rank, env, &out[k], err);
        if (rc) break;
        uint64_t blk = (uint64_t)len[k] * inner, row = (uint64_t)dim * inner;
        if (blk)
            for (uint64_t a = 0; a < outer; a++)
                memcpy(out[k]->data + a * blk, c->data + a * row + (uint64_t)start * inner, blk);
        rc = kern_keep(out[k], c, err);
        start += len[k];
    }
    tensor_free(c);
    free(len);
    if (rc)
        for (size_t k = 0; k < n_out; k++) {
            tensor_free(out[k]);
            out[k] = NULL;
        }
    return rc;
}

KERNEL(k_split_2) {
    int rc = need_inputs(in, n_in, 1, err);
    if (rc) return rc;
    int64_t split[TENSOR_MAX_RANK * 4];
    size_t ns = 0;
    bool have;
    rc = kern_attr_ints(n, "split", split, sizeof split / sizeof *split, &ns, &have, err);
    if (rc) return rc;
    return do_split(n, opset, in[0], split, ns, have, out, n_out, env, err);
}

KERNEL(k_split_13) {
    int rc = need_inputs(in, n_in, 1, err);
    if (rc) return rc;
    int64_t *split = NULL;
    size_t ns = 0;
    bool have = n_in > 1 && in[1];
    if (have) {
        rc = read_ints_alloc(in[1], "split", env, &split, &ns, err);
        if (rc) return rc;
    }
    const Onnx__AttributeProto *no = graph_attr(n, "num_outputs");
    if (!rc && no && (no->i < 1 || (uint64_t)no->i != n_out))
        rc = err_set(err, TILEOPT_INVALID, "num_outputs is %lld, the node has %zu outputs",
                     (long long)no->i, n_out);
    if (!rc) rc = do_split(n, opset, in[0], split, ns, have, out, n_out, env, err);
    free(split);
    return rc;
}

/* ------------------------------------------------------------------ Trilu */

KERNEL(k_trilu) {
    UNUSED(opset);
    int rc = kern_need_io(in, n_in, 1, n_out, err);
    if (rc) return rc;
    tensor *x = in[0];
    if (x->rank < 2) return err_set(err, TILEOPT_INVALID, "input must have rank >= 2");
    int64_t k = 0;
    if (n_in > 1 && in[1]) {
        size_t nk;
        int64_t kv[1];
        if (tensor_numel(in[1]) != 1)
            return err_set(err, TILEOPT_INVALID, "k must hold one value");
        rc = kern_read_ints(in[1], "k", env, kv, 1, &nk, err);
        if (rc) return rc;
        k = kv[0];
    }
    bool upper = graph_attr_int(n, "upper", 1) != 0;
    tensor *c = NULL, *o = NULL;
    rc = tensor_contiguous(x, env, &c, err);
    if (!rc) rc = kern_new_tensor(x->elem, x->dims, x->rank, env, &o, err);
    if (rc) {
        tensor_free(c);
        return rc;
    }
    size_t es = kern_esize(x->elem);
    int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
    uint64_t mats = tensor_numel(x) / (rows && cols ? (uint64_t)(rows * cols) : 1);
    if (rows && cols)
        for (uint64_t m = 0; m < mats; m++)
            for (int64_t i = 0; i < rows; i++)
                for (int64_t j = 0; j < cols; j++) {
                    /* kept: j - i >= k (upper) or j - i <= k (lower); the rest
                    ** stays zero (empty strings) */
                    bool keepv = upper ? j - i >= k : j - i <= k;
                    size_t at = ((size_t)m * (size_t)(rows * cols) + (size_t)(i * cols + j)) * es;
                    if (keepv) memcpy(o->data + at, c->data + at, es);
                }
    return kern_emit_keeping(o, c, out, err);
}

/* ------------------------------------------------------------------ table */

const kernel_def kernel_table_shape[] = {
    {OP_Constant, 1, k_constant},
    {OP_ConstantOfShape, 9, k_constant_of_shape},
    {OP_Shape, 1, k_shape},
    {OP_Size, 1, k_size},
    {OP_Gather, 1, k_gather},
    {OP_Concat, 1, k_concat},
    {OP_Unsqueeze, 1, k_unsqueeze_1},
    {OP_Unsqueeze, 13, k_unsqueeze_13},
    {OP_Squeeze, 1, k_squeeze_1},
    {OP_Squeeze, 13, k_squeeze_13},
    {OP_Reshape, 1, k_reshape_1},
    {OP_Reshape, 5, k_reshape_5},
    {OP_Flatten, 1, k_flatten},
    {OP_Slice, 1, k_slice_1},
    {OP_Slice, 10, k_slice_10},
    {OP_Range, 11, k_range},
    {OP_Expand, 8, k_expand},
    {OP_Transpose, 1, k_transpose},
    {OP_GatherElements, 11, k_gather_elements},
    {OP_Split, 2, k_split_2},
    {OP_Split, 13, k_split_13},
    {OP_Trilu, 14, k_trilu},
};
const size_t kernel_table_shape_count = countof(kernel_table_shape);

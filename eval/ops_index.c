/*
** Ops that select by value or by index, or place elements by index: TopK,
** NonZero, GatherND, the scatters (Scatter, ScatterElements, ScatterND with
** their reductions), Compress, OneHot, EyeLike, ReverseSequence, DepthToSpace,
** SpaceToDepth and Unique. Values
** move as bytes; comparisons and reductions read them as double (floating
** types) or as 64-bit integers (integer types), so no integer loses digits.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"

/* ------------------------------------------------------------- element access */

static bool is_float_kind(int32_t elem) {
    const dtype_info *d = dtype_get(elem);
    return d && d->kind == KIND_FLOAT;
}

/* Element i of contiguous t as double (floating types through a cast of one). */
static double get_f64(const tensor *t, int64_t i) {
    const uint8_t *p = t->data + (size_t)i * tensor_elem_size(t);
    switch (t->elem) {
    case DT_FLOAT: { float v; memcpy(&v, p, 4); return v; }
    case DT_DOUBLE: { double v; memcpy(&v, p, 8); return v; }
    case DT_FLOAT16: { uint16_t h; memcpy(&h, p, 2); return eval_f16_to_f32(h); }
    case DT_BFLOAT16: { uint16_t h; memcpy(&h, p, 2); return eval_bf16_to_f32(h); }
    default: return 0;
    }
}

static void put_f64(tensor *t, int64_t i, double v) {
    uint8_t *p = t->data + (size_t)i * tensor_elem_size(t);
    switch (t->elem) {
    case DT_FLOAT: { float f = (float)v; memcpy(p, &f, 4); break; }
    case DT_DOUBLE: memcpy(p, &v, 8); break;
    case DT_FLOAT16: { uint16_t h = eval_f32_to_f16((float)v); memcpy(p, &h, 2); break; }
    case DT_BFLOAT16: { uint16_t h = eval_f32_to_bf16((float)v); memcpy(p, &h, 2); break; }
    default: break;
    }
}

/* Element i of an integer or bool tensor, sign-extended as its type says. */
static int64_t get_i64(const tensor *t, int64_t i) {
    const uint8_t *p = t->data + (size_t)i * tensor_elem_size(t);
    switch (t->elem) {
    case DT_INT8: return (int8_t)p[0];
    case DT_UINT8: case DT_BOOL: return p[0];
    case DT_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case DT_UINT16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case DT_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case DT_UINT32: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { int64_t v; memcpy(&v, p, 8); return v; }
    }
}

static void put_i64(tensor *t, int64_t i, int64_t v) {
    size_t es = tensor_elem_size(t);
    uint64_t u = (uint64_t)v;
    /* little-endian: the low bytes are the value in the narrower type */
    for (size_t b = 0; b < es; b++) t->data[(size_t)i * es + b] = (uint8_t)(u >> (8 * b));
}

/* a < b in the element order (floating types: NaN above every number). */
static int cmp_elems(const tensor *t, int64_t a, int64_t b) {
    if (is_float_kind(t->elem)) {
        double x = get_f64(t, a), y = get_f64(t, b);
        if (isnan(x) || isnan(y)) return isnan(x) - isnan(y);
        return (x > y) - (x < y);
    }
    if (t->elem == DT_UINT64) {
        uint64_t x = (uint64_t)get_i64(t, a), y = (uint64_t)get_i64(t, b);
        return (x > y) - (x < y);
    }
    int64_t x = get_i64(t, a), y = get_i64(t, b);
    return (x > y) - (x < y);
}

static bool numeric(int32_t elem) {
    const dtype_info *d = dtype_get(elem);
    return d && (d->kind == KIND_FLOAT || d->kind == KIND_SINT || d->kind == KIND_UINT) &&
           d->size <= 8 && elem != DT_FLOAT8E4M3FN && elem != DT_FLOAT8E4M3FNUZ &&
           elem != DT_FLOAT8E5M2 && elem != DT_FLOAT8E5M2FNUZ;
}

static double dd_at(const tensor *t, int64_t i) { return ((const double *)(const void *)t->data)[i]; }

/* ---------------------------------------------------------------------- TopK */

void eval_sort_indices(int64_t *idx, int64_t n, int64_t *tmp,
                       bool (*before)(const void *ctx, int64_t a, int64_t b), const void *ctx) {
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            /* stable: from the left run unless the right one goes strictly first */
            while (i < mid && j < hi) tmp[k++] = before(ctx, idx[j], idx[i]) ? idx[j++] : idx[i++];
            while (i < mid) tmp[k++] = idx[i++];
            while (j < hi) tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
}

typedef struct topk_ctx {
    const tensor *x;
    int64_t base, stride;
    bool largest;
} topk_ctx;

/* a before b: larger (or smaller) value; equal values keep index order */
static bool topk_before(const void *ctx, int64_t a, int64_t b) {
    const topk_ctx *c = ctx;
    int r = cmp_elems(c->x, c->base + a * c->stride, c->base + b * c->stride);
    return c->largest ? r > 0 : r < 0;
}

static int k_topk(KERNEL_PARAMS) {
    const char *nm = eval_node_name(n);
    if (n_in < 1 || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "TopK %s: needs X", nm);
    tensor *X = in[0];
    if (!numeric(X->elem) || X->rank < 1)
        return err_set(err, TILEOPT_UNSUPPORTED, "TopK %s: %s of rank %d", nm,
                       dtype_name(X->elem), (int)X->rank);
    int64_t k;
    if (opset >= 10) {
        size_t c = 0;
        if (n_in < 2 || !in[1] || !tensor_to_i64(in[1], &k, 1, &c) || c != 1)
            return err_set(err, TILEOPT_INVALID, "TopK %s: K must be one integer", nm);
    } else {
        k = graph_attr_int(n, "k", -1);
    }
    int64_t axis = graph_attr_int(n, "axis", -1);
    if (axis < 0) axis += X->rank;
    if (axis < 0 || axis >= X->rank || k < 0 || k > X->dims[axis])
        return err_set(err, TILEOPT_INVALID, "TopK %s: axis %lld, K %lld", nm,
                       (long long)graph_attr_int(n, "axis", -1), (long long)k);
    bool largest = opset < 11 || graph_attr_int(n, "largest", 1);
    int64_t od[TENSOR_MAX_RANK], outer = 1, inner = 1, len = X->dims[axis];
    for (int32_t i = 0; i < X->rank; i++) {
        od[i] = i == axis ? k : X->dims[i];
        if (i < axis) outer *= X->dims[i];
        if (i > axis) inner *= X->dims[i];
    }
    tensor *x = NULL, *v = NULL, *ix = NULL;
    int64_t *order = NULL;
    int rc;
    if ((rc = tensor_contiguous(X, env, &x, err)) ||
        (rc = tensor_alloc(X->elem, od, X->rank, env, &v, err)) ||
        (rc = tensor_alloc(DT_INT64, od, X->rank, env, &ix, err)))
        goto done;
    if (!(order = malloc((size_t)(len ? len : 1) * 2 * sizeof *order))) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    size_t es = tensor_elem_size(x);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            topk_ctx c = {x, o * len * inner + j, inner, largest};
            for (int64_t i = 0; i < len; i++) order[i] = i;
            eval_sort_indices(order, len, order + len, topk_before, &c);
            for (int64_t i = 0; i < k; i++) {
                int64_t at = (o * k + i) * inner + j;
                memcpy(v->data + (size_t)at * es, x->data + (size_t)(c.base + order[i] * inner) * es, es);
                ((int64_t *)(void *)ix->data)[at] = order[i];
            }
        }
    out[0] = v;
    v = NULL;
    if (n_out > 1) {
        out[1] = ix;
        ix = NULL;
    }
done:
    free(order);
    tensor_free(x);
    tensor_free(v);
    tensor_free(ix);
    return rc;
}

/* ------------------------------------------------------------------- NonZero */

static int k_nonzero(KERNEL_PARAMS) {
    (void)opset;
    if (n_in < 1 || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "NonZero %s: needs X", eval_node_name(n));
    tensor *X = in[0], *x = NULL, *o = NULL;
    if (!numeric(X->elem) && X->elem != DT_BOOL)
        return err_set(err, TILEOPT_UNSUPPORTED, "NonZero %s: %s", eval_node_name(n),
                       dtype_name(X->elem));
    int rc = tensor_contiguous(X, env, &x, err);
    if (rc) return rc;
    uint64_t total = tensor_numel(x), nnz = 0;
    bool fl = is_float_kind(x->elem);
    for (uint64_t e = 0; e < total; e++) nnz += fl ? get_f64(x, (int64_t)e) != 0 : get_i64(x, (int64_t)e) != 0;
    int32_t r = X->rank ? X->rank : 1;
    int64_t od[2] = {r, (int64_t)nnz};
    if (!(rc = tensor_alloc(DT_INT64, od, 2, env, &o, err))) {
        int64_t *ov = (int64_t *)(void *)o->data, idx[TENSOR_MAX_RANK] = {0}, col = 0;
        for (uint64_t e = 0; e < total; e++) {
            bool nz = fl ? get_f64(x, (int64_t)e) != 0 : get_i64(x, (int64_t)e) != 0;
            if (nz) {
                for (int32_t i = 0; i < r; i++) ov[i * (int64_t)nnz + col] = X->rank ? idx[i] : 0;
                col++;
            }
            for (int32_t i = X->rank - 1; i >= 0 && ++idx[i] == X->dims[i]; i--) idx[i] = 0;
        }
        out[0] = o;
    }
    tensor_free(x);
    return rc;
}

/* ------------------------------------------------------------------ GatherND */

/* An index along an axis of size d, negative counting from the end. */
static int norm_index(int64_t i, int64_t d, int64_t *out, errbuf *err) {
    if (i < -d || i >= d)
        return err_set(err, TILEOPT_INVALID, "index %lld out of range [%lld, %lld)",
                       (long long)i, (long long)-d, (long long)d);
    *out = i < 0 ? i + d : i;
    return TILEOPT_OK;
}

static int k_gather_nd(KERNEL_PARAMS) {
    const char *nm = eval_node_name(n);
    if (n_in < 2 || !in[0] || !in[1] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "GatherND %s: needs data and indices", nm);
    tensor *D = in[0], *I = in[1];
    int64_t b = opset >= 12 ? graph_attr_int(n, "batch_dims", 0) : 0;
    if (I->rank < 1 || I->elem != DT_INT64)
        return err_set(err, TILEOPT_INVALID, "GatherND %s: indices must be int64 of rank >= 1",
                       nm);
    int64_t kk = I->dims[I->rank - 1];
    if (b < 0 || b >= I->rank || b + kk > D->rank)
        return err_set(err, TILEOPT_INVALID, "GatherND %s: batch_dims %lld, index length %lld,"
                       " data rank %d", nm, (long long)b, (long long)kk, (int)D->rank);
    for (int64_t i = 0; i < b; i++)
        if (I->dims[i] != D->dims[i])
            return err_set(err, TILEOPT_INVALID, "GatherND %s: batch dims differ", nm);
    int64_t od[TENSOR_MAX_RANK];
    int32_t orank = 0;
    for (int32_t i = 0; i < I->rank - 1; i++) od[orank++] = I->dims[i];
    for (int64_t i = b + kk; i < D->rank; i++) od[orank++] = D->dims[i];
    int64_t batch = 1, per = 1, slice = 1, dstr[TENSOR_MAX_RANK], s = 1;
    for (int32_t i = D->rank - 1; i >= 0; i--) {
        dstr[i] = s;
        s *= D->dims[i];
    }
    for (int64_t i = 0; i < b; i++) batch *= D->dims[i];
    for (int32_t i = (int32_t)b; i < I->rank - 1; i++) per *= I->dims[i];
    for (int64_t i = b + kk; i < D->rank; i++) slice *= D->dims[i];
    int64_t bstride = b ? dstr[b - 1] : 0;
    tensor *d = NULL, *ix = NULL, *o = NULL;
    int rc;
    if ((rc = tensor_contiguous(D, env, &d, err)) || (rc = tensor_contiguous(I, env, &ix, err)) ||
        (rc = tensor_alloc(D->elem, od, orank, env, &o, err)))
        goto done;
    if (!tensor_keep(o, d)) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    size_t es = tensor_elem_size(d);
    const int64_t *iv = (const int64_t *)(const void *)ix->data;
    for (int64_t bi = 0; bi < batch && !rc; bi++)
        for (int64_t p = 0; p < per && !rc; p++) {
            const int64_t *t = iv + (bi * per + p) * kk;
            int64_t off = bi * bstride;
            for (int64_t j = 0; j < kk && !rc; j++) {
                int64_t v = 0;
                rc = norm_index(t[j], D->dims[b + j], &v, err);
                off += v * dstr[b + j];
            }
            if (!rc)
                memcpy(o->data + (size_t)((bi * per + p) * slice) * es,
                       d->data + (size_t)off * es, (size_t)slice * es);
        }
done:
    tensor_free(d);
    tensor_free(ix);
    if (rc) {
        tensor_free(o);
        return rc == TILEOPT_NOMEM ? rc : (int)err_prefix(err, "GatherND %s: ", nm);
    }
    out[0] = o;
    return TILEOPT_OK;
}

/* ------------------------------------------------------------------ scatters */

typedef enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } reduction;

static int read_reduction(const Onnx__NodeProto *n, reduction *r, errbuf *err) {
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    const Onnx__AttributeProto *a = graph_attr(n, "reduction");
    *r = RED_NONE;
    if (!a || !a->s.len) return TILEOPT_OK;
    for (int i = 0; i < 5; i++)
        if (strlen(names[i]) == a->s.len && !memcmp(a->s.data, names[i], a->s.len)) {
            *r = (reduction)i;
            return TILEOPT_OK;
        }
    return err_set(err, TILEOPT_INVALID, "reduction '%.*s'", (int)a->s.len,
                   (const char *)a->s.data);
}

/* out[at] (op)= upd[from], in the element type's arithmetic. */
static void scatter_one(tensor *out, int64_t at, const tensor *upd, int64_t from, reduction r) {
    size_t es = tensor_elem_size(out);
    if (r == RED_NONE) {
        memcpy(out->data + (size_t)at * es, upd->data + (size_t)from * es, es);
    } else if (is_float_kind(out->elem)) {
        double a = get_f64(out, at), b = get_f64(upd, from);
        put_f64(out, at, r == RED_ADD ? a + b : r == RED_MUL ? a * b : r == RED_MAX ? fmax(a, b) : fmin(a, b));
    } else {
        int64_t a = get_i64(out, at), b = get_i64(upd, from);
        int64_t v = r == RED_ADD ? (int64_t)((uint64_t)a + (uint64_t)b)
                  : r == RED_MUL ? (int64_t)((uint64_t)a * (uint64_t)b)
                  : r == RED_MAX ? (a > b ? a : b)
                                 : (a < b ? a : b);
        put_i64(out, at, v);
    }
}

static int k_scatter_elements(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 3 || !in[0] || !in[1] || !in[2] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "%s %s: needs data, indices, updates", n->op_type, nm);
    tensor *D = in[0], *I = in[1], *U = in[2];
    reduction red;
    int rc = read_reduction(n, &red, err);
    if (rc) return err_prefix(err, "%s %s: ", n->op_type, nm);
    if (red != RED_NONE && !numeric(D->elem))
        return err_set(err, TILEOPT_UNSUPPORTED, "%s %s: reduction on %s", n->op_type, nm,
                       dtype_name(D->elem));
    int64_t axis = graph_attr_int(n, "axis", 0);
    if (axis < 0) axis += D->rank;
    bool shape_ok = I->rank == D->rank && U->rank == I->rank && U->elem == D->elem &&
                    axis >= 0 && axis < D->rank;
    for (int32_t i = 0; shape_ok && i < I->rank; i++) shape_ok = I->dims[i] == U->dims[i];
    if (!shape_ok || (I->elem != DT_INT64 && I->elem != DT_INT32))
        return err_set(err, TILEOPT_INVALID, "%s %s: data, indices and updates do not fit",
                       n->op_type, nm);
    tensor *o = NULL, *dc = NULL, *ix = NULL, *u = NULL;
    if ((rc = tensor_contiguous(D, env, &dc, err)) ||
        (rc = tensor_alloc(D->elem, D->dims, D->rank, env, &o, err)) ||
        (rc = tensor_contiguous(I, env, &ix, err)) || (rc = tensor_contiguous(U, env, &u, err)))
        goto done;
    memcpy(o->data, dc->data, tensor_nbytes(dc));
    int64_t dstr[TENSOR_MAX_RANK], s = 1, idx[TENSOR_MAX_RANK] = {0};
    for (int32_t i = D->rank - 1; i >= 0; i--) {
        dstr[i] = s;
        s *= D->dims[i];
    }
    uint64_t total = tensor_numel(ix);
    for (uint64_t e = 0; e < total && !rc; e++) {
        int64_t v = 0, off = 0;
        rc = norm_index(get_i64(ix, (int64_t)e), D->dims[axis], &v, err);
        for (int32_t i = 0; i < D->rank; i++) off += (i == axis ? v : idx[i]) * dstr[i];
        if (!rc) scatter_one(o, off, u, (int64_t)e, red);
        for (int32_t i = I->rank - 1; i >= 0 && ++idx[i] == I->dims[i]; i--) idx[i] = 0;
    }
done:
    tensor_free(dc);
    tensor_free(ix);
    tensor_free(u);
    if (rc) {
        tensor_free(o);
        return rc == TILEOPT_NOMEM ? rc : (int)err_prefix(err, "%s %s: ", n->op_type, nm);
    }
    out[0] = o;
    return TILEOPT_OK;
}

static int k_scatter_nd(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 3 || !in[0] || !in[1] || !in[2] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "ScatterND %s: needs data, indices, updates", nm);
    tensor *D = in[0], *I = in[1], *U = in[2];
    reduction red;
    int rc = read_reduction(n, &red, err);
    if (rc) return err_prefix(err, "ScatterND %s: ", nm);
    if (red != RED_NONE && !numeric(D->elem))
        return err_set(err, TILEOPT_UNSUPPORTED, "ScatterND %s: reduction on %s", nm,
                       dtype_name(D->elem));
    int64_t kk = I->rank ? I->dims[I->rank - 1] : 0;
    bool ok = I->rank >= 1 && I->elem == DT_INT64 && kk <= D->rank && U->elem == D->elem &&
              U->rank == I->rank - 1 + D->rank - kk;
    for (int32_t i = 0; ok && i < I->rank - 1; i++) ok = U->dims[i] == I->dims[i];
    for (int64_t i = kk; ok && i < D->rank; i++) ok = U->dims[I->rank - 1 + i - kk] == D->dims[i];
    if (!ok)
        return err_set(err, TILEOPT_INVALID, "ScatterND %s: data, indices and updates do not "
                       "fit", nm);
    int64_t dstr[TENSOR_MAX_RANK], s = 1, slice = 1, count = 1;
    for (int32_t i = D->rank - 1; i >= 0; i--) {
        dstr[i] = s;
        s *= D->dims[i];
    }
    for (int64_t i = kk; i < D->rank; i++) slice *= D->dims[i];
    for (int32_t i = 0; i < I->rank - 1; i++) count *= I->dims[i];
    tensor *o = NULL, *dc = NULL, *ix = NULL, *u = NULL;
    if ((rc = tensor_contiguous(D, env, &dc, err)) ||
        (rc = tensor_alloc(D->elem, D->dims, D->rank, env, &o, err)) ||
        (rc = tensor_contiguous(I, env, &ix, err)) || (rc = tensor_contiguous(U, env, &u, err)))
        goto done;
    memcpy(o->data, dc->data, tensor_nbytes(dc));
    const int64_t *iv = (const int64_t *)(const void *)ix->data;
    for (int64_t c = 0; c < count && !rc; c++) {
        int64_t off = 0;
        for (int64_t j = 0; j < kk && !rc; j++) {
            int64_t v = 0;
            rc = norm_index(iv[c * kk + j], D->dims[j], &v, err);
            off += v * dstr[j];
        }
        for (int64_t q = 0; q < slice && !rc; q++) scatter_one(o, off + q, u, c * slice + q, red);
    }
done:
    tensor_free(dc);
    tensor_free(ix);
    tensor_free(u);
    if (rc) {
        tensor_free(o);
        return rc == TILEOPT_NOMEM ? rc : (int)err_prefix(err, "ScatterND %s: ", nm);
    }
    out[0] = o;
    return TILEOPT_OK;
}

/* ----------------------------------------------------- placement by index */

/* A contiguous copy of t, and the output o of dims/rank and t's type. */
static int copy_setup(tensor *t, const int64_t *dims, int32_t rank, const eval_env *env,
                      tensor **src, tensor **o, errbuf *err) {
    *src = *o = NULL;
    int rc = tensor_contiguous(t, env, src, err);
    if (!rc) rc = tensor_new(t->elem, dims, rank, env, o, err);
    if (!rc && !tensor_keep(*o, *src)) rc = err_set(err, TILEOPT_NOMEM, "out of memory");
    return rc;
}

/* The common epilogue: out[0] = o on success, both freed on failure. */
static int finish(int rc, tensor *src, tensor *o, tensor **out) {
    tensor_free(src);
    if (rc) {
        tensor_free(o);
        return rc;
    }
    out[0] = o;
    return TILEOPT_OK;
}

/* DepthToSpace (DCR or CRD) and SpaceToDepth on [N, C, H, W]. */
static int depth_space(const Onnx__NodeProto *n, bool to_space, tensor *const *in, size_t n_in,
                       tensor **out, size_t n_out, const eval_env *env, errbuf *err) {
    const char *nm = eval_node_name(n);
    if (n_in < 1 || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "%s %s: needs an input", n->op_type, nm);
    tensor *X = in[0];
    int64_t b = graph_attr_int(n, "blocksize", 0);
    const Onnx__AttributeProto *m = graph_attr(n, "mode");
    bool crd = m && m->s.len == 3 && !memcmp(m->s.data, "CRD", 3);
    if (X->rank != 4 || b < 1 ||
        (to_space ? X->dims[1] % (b * b) : X->dims[2] % b || X->dims[3] % b))
        return err_set(err, TILEOPT_INVALID, "%s %s: input of rank %d, blocksize %lld",
                       n->op_type, nm, (int)X->rank, (long long)b);
    int64_t N = X->dims[0], C = X->dims[1], H = X->dims[2], W = X->dims[3];
    int64_t od[4] = {N, to_space ? C / (b * b) : C * b * b, to_space ? H * b : H / b,
                     to_space ? W * b : W / b};
    tensor *x, *o;
    int rc = copy_setup(X, od, 4, env, &x, &o, err);
    if (rc) return finish(rc, x, o, out);
    size_t es = tensor_elem_size(x);
    int64_t oc = od[1], oh = od[2], ow = od[3];
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < oc; c++)
            for (int64_t h = 0; h < oh; h++)
                for (int64_t w = 0; w < ow; w++) {
                    int64_t ic, ih, iw;
                    if (to_space) {
                        int64_t hb = h % b, wb = w % b;
                        ic = crd ? c * b * b + hb * b + wb : (hb * b + wb) * oc + c;
                        ih = h / b;
                        iw = w / b;
                    } else {
                        int64_t blk = c / C, cc = c % C;
                        ic = cc;
                        ih = h * b + blk / b;
                        iw = w * b + blk % b;
                    }
                    memcpy(o->data + (size_t)(((i * oc + c) * oh + h) * ow + w) * es,
                           x->data + (size_t)(((i * C + ic) * H + ih) * W + iw) * es, es);
                }
    return finish(TILEOPT_OK, x, o, out);
}

static int k_depth_to_space(KERNEL_PARAMS) {
    (void)opset;
    return depth_space(n, true, in, n_in, out, n_out, env, err);
}
static int k_space_to_depth(KERNEL_PARAMS) {
    (void)opset;
    return depth_space(n, false, in, n_in, out, n_out, env, err);
}

/* Compress: the slices along axis (or of the flattened input) whose condition
** entry is true; a shorter condition leaves the rest out. */
static int k_compress(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 2 || !in[0] || !in[1] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "Compress %s: needs input and condition", nm);
    tensor *X = in[0], *cnd = NULL;
    bool has_axis = graph_attr(n, "axis") != NULL;
    int64_t axis = graph_attr_int(n, "axis", 0);
    if (has_axis && axis < 0) axis += X->rank;
    if (in[1]->rank != 1 || (has_axis && (axis < 0 || axis >= X->rank)))
        return err_set(err, TILEOPT_INVALID, "Compress %s: condition must be 1-D, axis inside "
                       "the rank", nm);
    int64_t len = has_axis ? X->dims[axis] : (int64_t)tensor_numel(X);
    int64_t outer = 1, inner = 1, kept = 0;
    for (int32_t i = 0; has_axis && i < X->rank; i++) {
        if (i < axis) outer *= X->dims[i];
        if (i > axis) inner *= X->dims[i];
    }
    int rc = eval_cast(in[1], DT_BOOL, env, &cnd, err);
    if (rc) return rc;
    int64_t nc = (int64_t)tensor_numel(cnd);
    if (nc > len) {
        tensor_free(cnd);
        return err_set(err, TILEOPT_INVALID, "Compress %s: %lld conditions for %lld slices", nm,
                       (long long)nc, (long long)len);
    }
    for (int64_t i = 0; i < nc; i++) kept += cnd->data[i] != 0;
    int64_t od[TENSOR_MAX_RANK];
    int32_t orank = has_axis ? X->rank : 1;
    for (int32_t i = 0; i < orank; i++) od[i] = has_axis ? (i == axis ? kept : X->dims[i]) : kept;
    tensor *x, *o;
    rc = copy_setup(X, od, orank, env, &x, &o, err);
    if (!rc) {
        size_t es = tensor_elem_size(x), blk = (size_t)inner * es;
        int64_t at = 0;
        for (int64_t p = 0; p < outer; p++)
            for (int64_t i = 0; i < nc; i++)
                if (cnd->data[i])
                    memcpy(o->data + (size_t)(at++) * blk,
                           x->data + (size_t)((p * len + i) * inner) * es, blk);
    }
    tensor_free(cnd);
    return finish(rc, x, o, out);
}

/* OneHot: depth inserted at axis, values[1] where the index matches. */
static int k_one_hot(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 3 || !in[0] || !in[1] || !in[2] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "OneHot %s: needs indices, depth, values", nm);
    tensor *I = in[0], *D = NULL, *V = NULL, *ix = NULL;
    int rc = eval_cast(in[1], DT_DOUBLE, env, &D, err);
    if (!rc) rc = tensor_contiguous(in[2], env, &V, err);
    if (!rc) rc = eval_cast(I, DT_DOUBLE, env, &ix, err);
    if (rc) goto fail;
    if (tensor_numel(D) != 1 || tensor_numel(V) != 2 || I->rank >= TENSOR_MAX_RANK) {
        rc = err_set(err, TILEOPT_INVALID, "OneHot %s: depth must be one value, values two", nm);
        goto fail;
    }
    int64_t depth = (int64_t)dd_at(D, 0);
    int64_t axis = graph_attr_int(n, "axis", -1);
    int32_t r = I->rank + 1;
    if (axis < 0) axis += r;
    if (depth < 0 || axis < 0 || axis >= r) {
        rc = err_set(err, TILEOPT_INVALID, "OneHot %s: depth %lld, axis %lld", nm,
                     (long long)depth, (long long)graph_attr_int(n, "axis", -1));
        goto fail;
    }
    int64_t od[TENSOR_MAX_RANK], outer = 1, inner = 1;
    for (int32_t i = 0, j = 0; i < r; i++) {
        od[i] = i == axis ? depth : I->dims[j++];
        if (i < axis) outer *= od[i];
        if (i > axis) inner *= od[i];
    }
    tensor *o = NULL;
    if ((rc = tensor_alloc(V->elem, od, r, env, &o, err))) goto fail;
    size_t es = tensor_elem_size(V);
    for (int64_t p = 0; p < outer; p++)
        for (int64_t k = 0; k < depth; k++)
            for (int64_t q = 0; q < inner; q++) {
                double iv = dd_at(ix, p * inner + q);
                int64_t want = (int64_t)(iv < 0 ? iv + (double)depth : iv);
                memcpy(o->data + (size_t)((p * depth + k) * inner + q) * es,
                       V->data + (want == k ? es : 0), es);
            }
    tensor_free(D);
    tensor_free(V);
    tensor_free(ix);
    out[0] = o;
    return TILEOPT_OK;
fail:
    tensor_free(D);
    tensor_free(V);
    tensor_free(ix);
    return rc;
}

/* EyeLike: ones on diagonal k of a 2-D shape, in `dtype` or the input's type. */
static int k_eye_like(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 1 || !in[0] || n_out < 1 || in[0]->rank != 2)
        return err_set(err, TILEOPT_INVALID, "EyeLike %s: needs a 2-D input", nm);
    int32_t elem = (int32_t)graph_attr_int(n, "dtype", in[0]->elem);
    int64_t k = graph_attr_int(n, "k", 0), rows = in[0]->dims[0], cols = in[0]->dims[1];
    tensor *d = NULL, *o = NULL;
    int rc = tensor_new(DT_DOUBLE, in[0]->dims, 2, env, &d, err);
    for (int64_t i = 0; !rc && i < rows; i++)
        if (i + k >= 0 && i + k < cols) ((double *)(void *)d->data)[i * cols + i + k] = 1;
    if (!rc) rc = eval_cast(d, elem, env, &o, err);
    tensor_free(d);
    if (rc) return rc;
    out[0] = o;
    return TILEOPT_OK;
}

/* ReverseSequence: the first sequence_lens[b] steps of each batch entry
** reversed along time_axis, the rest kept. */
static int k_reverse_sequence(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 2 || !in[0] || !in[1] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "ReverseSequence %s: needs input and lengths", nm);
    tensor *X = in[0];
    int64_t ba = graph_attr_int(n, "batch_axis", 1), ta = graph_attr_int(n, "time_axis", 0);
    if (X->rank < 2 || ba < 0 || ta < 0 || ba >= X->rank || ta >= X->rank || ba == ta || ba > 1 ||
        ta > 1)
        return err_set(err, TILEOPT_INVALID, "ReverseSequence %s: batch_axis %lld, time_axis "
                       "%lld", nm, (long long)ba, (long long)ta);
    int64_t B = X->dims[ba], T = X->dims[ta], inner = 1, lens[4096];
    size_t cnt = 0;
    if (B > 4096 || !tensor_to_i64(in[1], lens, 4096, &cnt) || (int64_t)cnt != B)
        return err_set(err, TILEOPT_INVALID, "ReverseSequence %s: sequence_lens needs %lld "
                       "values", nm, (long long)B);
    for (int32_t i = 2; i < X->rank; i++) inner *= X->dims[i];
    tensor *x, *o;
    int rc = copy_setup(X, X->dims, X->rank, env, &x, &o, err);
    if (rc) return finish(rc, x, o, out);
    size_t es = tensor_elem_size(x), blk = (size_t)inner * es;
    for (int64_t b = 0; b < B && !rc; b++) {
        if (lens[b] < 0 || lens[b] > T) {
            rc = err_set(err, TILEOPT_INVALID, "ReverseSequence %s: length %lld outside [0, "
                         "%lld]", nm, (long long)lens[b], (long long)T);
            break;
        }
        for (int64_t t = 0; t < T; t++) {
            int64_t src = t < lens[b] ? lens[b] - 1 - t : t;
            int64_t to = ta == 0 ? t * B + b : b * T + t, from = ta == 0 ? src * B + b : b * T + src;
            memcpy(o->data + (size_t)to * blk, x->data + (size_t)from * blk, blk);
        }
    }
    return finish(rc, x, o, out);
}

/* -------------------------------------------------------------------- Unique */

/* X as `len` slices along an axis (or, without one, as its elements). */
typedef struct uniq_ctx {
    const tensor *x;
    int64_t outer, len, inner;
} uniq_ctx;

/* Slices a and b compared element by element in row-major order. */
static int slice_cmp(const uniq_ctx *c, int64_t a, int64_t b) {
    for (int64_t o = 0; o < c->outer; o++)
        for (int64_t i = 0; i < c->inner; i++) {
            int r = cmp_elems(c->x, (o * c->len + a) * c->inner + i,
                              (o * c->len + b) * c->inner + i);
            if (r) return r;
        }
    return 0;
}

static bool uniq_before(const void *ctx, int64_t a, int64_t b) {
    return slice_cmp(ctx, a, b) < 0;
}

static bool first_before(const void *ctx, int64_t a, int64_t b) {
    const int64_t *first = ctx;
    return first[a] < first[b];
}

/*
** The distinct slices of X along `axis` (without one: its distinct elements),
** sorted ascending or in order of first occurrence, with where each first
** occurs, which distinct slice each input slice is, and how often each occurs.
*/
static int k_unique(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 1 || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "Unique %s: needs X", nm);
    tensor *X = in[0];
    if (!numeric(X->elem) && X->elem != DT_BOOL)
        return err_set(err, TILEOPT_UNSUPPORTED, "Unique %s: element type %s", nm,
                       dtype_name(X->elem));
    bool sorted = graph_attr_int(n, "sorted", 1) != 0, by_axis = graph_attr(n, "axis") != NULL;
    int64_t axis = graph_attr_int(n, "axis", 0);
    if (by_axis && axis < 0) axis += X->rank;
    if (by_axis && (axis < 0 || axis >= X->rank))
        return err_set(err, TILEOPT_INVALID, "Unique %s: axis outside rank %d", nm, (int)X->rank);
    tensor *x = NULL, *o[4] = {NULL};
    int64_t *idx = NULL, *tmp = NULL, *first = NULL, *count = NULL, *grp = NULL, *order = NULL;
    int rc = tensor_contiguous(X, env, &x, err);
    if (rc) return rc;
    uniq_ctx c = {x, 1, (int64_t)tensor_numel(x), 1};
    if (by_axis) {
        c.len = X->dims[axis];
        for (int32_t i = 0; i < X->rank; i++) {
            if (i < axis) c.outer *= X->dims[i];
            if (i > axis) c.inner *= X->dims[i];
        }
    }
    size_t L = (size_t)c.len ? (size_t)c.len : 1;
    idx = malloc(L * sizeof *idx);
    tmp = malloc(L * sizeof *tmp);
    first = malloc(L * sizeof *first);
    count = malloc(L * sizeof *count);
    grp = malloc(L * sizeof *grp);
    order = malloc(2 * L * sizeof *order);
    if (!idx || !tmp || !first || !count || !grp || !order) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < c.len; i++) idx[i] = i;
    /* stable: the first slice of each run of equal ones is its first occurrence */
    eval_sort_indices(idx, c.len, tmp, uniq_before, &c);
    int64_t U = 0;
    for (int64_t j = 0; j < c.len; j++) {
        if (j == 0 || slice_cmp(&c, idx[j - 1], idx[j]) != 0) {
            first[U] = idx[j];
            count[U++] = 0;
        }
        count[U - 1]++;
        grp[idx[j]] = U - 1;
    }
    /* order[u]: the group at output position u; order[L + g]: g's position */
    for (int64_t u = 0; u < U; u++) order[u] = u;
    if (!sorted) eval_sort_indices(order, U, tmp, first_before, first);
    for (int64_t u = 0; u < U; u++) order[L + order[u]] = u;
    int64_t yd[TENSOR_MAX_RANK];
    int32_t yr = by_axis ? X->rank : 1;
    if (by_axis) memcpy(yd, X->dims, (size_t)X->rank * sizeof *yd);
    yd[by_axis ? axis : 0] = U;
    int64_t len_d[1] = {U}, inv_d[1] = {c.len};
    if ((rc = tensor_alloc(X->elem, yd, yr, env, &o[0], err)) ||
        (rc = tensor_alloc(DT_INT64, len_d, 1, env, &o[1], err)) ||
        (rc = tensor_alloc(DT_INT64, inv_d, 1, env, &o[2], err)) ||
        (rc = tensor_alloc(DT_INT64, len_d, 1, env, &o[3], err)))
        goto done;
    size_t es = tensor_elem_size(x), blk = (size_t)c.inner * es;
    int64_t *iv = (int64_t *)(void *)o[1]->data, *inv = (int64_t *)(void *)o[2]->data;
    int64_t *cv = (int64_t *)(void *)o[3]->data;
    for (int64_t u = 0; u < U; u++) {
        int64_t g = order[u];
        iv[u] = first[g];
        cv[u] = count[g];
        for (int64_t q = 0; q < c.outer && blk; q++)
            memcpy(o[0]->data + (size_t)((q * U + u) * c.inner) * es,
                   x->data + (size_t)((q * c.len + first[g]) * c.inner) * es, blk);
    }
    for (int64_t i = 0; i < c.len; i++) inv[i] = order[L + grp[i]];
done:
    free(idx);
    free(tmp);
    free(first);
    free(count);
    free(grp);
    free(order);
    tensor_free(x);
    for (size_t k = 0; k < 4; k++) {
        if (!rc && k < n_out) out[k] = o[k];
        else tensor_free(o[k]);
    }
    return rc;
}

const kernel_def kernel_table_index[] = {
    {OP_TopK, 1, k_topk},
    {OP_NonZero, 9, k_nonzero},
    {OP_GatherND, 11, k_gather_nd},
    {OP_Scatter, 9, k_scatter_elements},
    {OP_ScatterElements, 11, k_scatter_elements},
    {OP_ScatterND, 11, k_scatter_nd},
    {OP_DepthToSpace, 1, k_depth_to_space},
    {OP_SpaceToDepth, 1, k_space_to_depth},
    {OP_Compress, 9, k_compress},
    {OP_OneHot, 9, k_one_hot},
    {OP_EyeLike, 9, k_eye_like},
    {OP_ReverseSequence, 10, k_reverse_sequence},
    {OP_Unique, 11, k_unique},
};
const size_t kernel_table_index_count = countof(kernel_table_index);

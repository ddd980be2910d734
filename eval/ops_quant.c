/*
** Linear quantization: QuantizeLinear, DequantizeLinear (per tensor, and per
** axis from opset 13) and DynamicQuantizeLinear, between float and 8-bit (or,
** for dequantization, 32-bit) integers; rounding half to even, saturating.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"

static double *dd(tensor *t) { return (double *)(void *)t->data; }

/* The range of an integer element type (the quantized side). */
static bool int_range(int32_t elem, double *lo, double *hi) {
    switch (elem) {
    case DT_UINT8: *lo = 0; *hi = 255; return true;
    case DT_INT8: *lo = -128; *hi = 127; return true;
    case DT_INT32: *lo = -2147483648.0; *hi = 2147483647.0; return true;
    default: return false;
    }
}

/* Scale and zero point read as double, each of one value or of dims[axis]. */
typedef struct qparams {
    tensor *scale, *zp;          /* zp NULL: 0 */
    int64_t axis, count, inner;  /* value index of element e: (e / inner) % count */
} qparams;

static int qparams_read(const Onnx__NodeProto *n, int64_t opset, const tensor *x,
                        tensor *scale, tensor *zp, const eval_limits *lim, qparams *q,
                        errbuf *err) {
    memset(q, 0, sizeof *q);
    q->count = (int64_t)tensor_numel(scale);
    q->inner = 1;
    if (zp && tensor_numel(zp) != (uint64_t)q->count)
        return err_set(err, TILEOPT_INVALID, "scale and zero point differ in size");
    if (q->count != 1 || scale->rank > 0) {
        if (q->count != 1 || scale->rank == 1) {
            if (opset < 13 || scale->rank != 1)
                return err_set(err, TILEOPT_INVALID, "per-axis scale needs opset 13 and a 1-D "
                               "scale");
            q->axis = graph_attr_int(n, "axis", 1);
            if (q->axis < 0) q->axis += x->rank;
            if (q->axis < 0 || q->axis >= x->rank || x->dims[q->axis] != q->count)
                return err_set(err, TILEOPT_INVALID, "scale of %lld values for axis %lld",
                               (long long)q->count, (long long)graph_attr_int(n, "axis", 1));
            for (int32_t i = (int32_t)q->axis + 1; i < x->rank; i++) q->inner *= x->dims[i];
        }
    }
    int rc = eval_cast(scale, DT_DOUBLE, lim, &q->scale, err);
    if (!rc && zp) rc = eval_cast(zp, DT_DOUBLE, lim, &q->zp, err);
    return rc;
}

static void qparams_free(qparams *q) {
    tensor_free(q->scale);
    tensor_free(q->zp);
}

/* x / scale in the input's precision: float inputs divide in float, as every
** runtime does, and a quotient near .5 rounds the way theirs does. */
static double quot(bool in_float, double x, double s) {
    return in_float ? (double)((float)x / (float)s) : x / s;
}

static int64_t qidx(const qparams *q, uint64_t e) {
    return q->count == 1 ? 0 : (int64_t)((e / (uint64_t)q->inner) % (uint64_t)q->count);
}

/* round(v) + zp, saturated: the rounding (half to even, the default mode)
** comes before the zero point is added, as the schema orders it. */
static double quantize_one(double v, double zp, double lo, double hi) {
    v = nearbyint(v) + zp;
    return v < lo ? lo : v > hi ? hi : v;
}

static int k_quantize(KERNEL_PARAMS) {
    const char *nm = eval_node_name(n);
    if (n_in < 2 || !in[0] || !in[1] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "QuantizeLinear %s: needs x and y_scale", nm);
    tensor *zp = n_in > 2 ? in[2] : NULL;
    int32_t to = zp ? zp->elem : DT_UINT8;
    double lo, hi;
    if (!int_range(to, &lo, &hi) || to == DT_INT32)
        return err_set(err, TILEOPT_UNSUPPORTED, "QuantizeLinear %s: to %s", nm, dtype_name(to));
    qparams q;
    tensor *x = NULL, *y = NULL;
    int rc = qparams_read(n, opset, in[0], in[1], zp, lim, &q, err);
    if (!rc) rc = eval_cast(in[0], DT_DOUBLE, lim, &x, err);
    if (!rc) rc = tensor_alloc(DT_DOUBLE, in[0]->dims, in[0]->rank, lim, &y, err);
    for (uint64_t e = 0; !rc && e < tensor_numel(x); e++) {
        int64_t k = qidx(&q, e);
        double s = dd(q.scale)[k];
        dd(y)[e] = quantize_one(quot(in[0]->elem != DT_DOUBLE, dd(x)[e], s),
                                q.zp ? dd(q.zp)[k] : 0, lo, hi);
    }
    if (!rc) rc = nn_output(&y, to, lim, err);
    qparams_free(&q);
    tensor_free(x);
    if (rc) {
        tensor_free(y);
        return rc == TILEOPT_NOMEM ? rc : (int)err_prefix(err, "QuantizeLinear %s: ", nm);
    }
    out[0] = y;
    return TILEOPT_OK;
}

static int k_dequantize(KERNEL_PARAMS) {
    const char *nm = eval_node_name(n);
    if (n_in < 2 || !in[0] || !in[1] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "DequantizeLinear %s: needs x and x_scale", nm);
    double lo, hi;
    if (!int_range(in[0]->elem, &lo, &hi))
        return err_set(err, TILEOPT_UNSUPPORTED, "DequantizeLinear %s: from %s", nm,
                       dtype_name(in[0]->elem));
    qparams q;
    tensor *x = NULL, *y = NULL;
    int rc = qparams_read(n, opset, in[0], in[1], n_in > 2 ? in[2] : NULL, lim, &q, err);
    if (!rc) rc = eval_cast(in[0], DT_DOUBLE, lim, &x, err);
    if (!rc) rc = tensor_alloc(DT_DOUBLE, in[0]->dims, in[0]->rank, lim, &y, err);
    for (uint64_t e = 0; !rc && e < tensor_numel(x); e++) {
        int64_t k = qidx(&q, e);
        dd(y)[e] = (dd(x)[e] - (q.zp ? dd(q.zp)[k] : 0)) * dd(q.scale)[k];
    }
    if (!rc) rc = nn_output(&y, in[1]->elem, lim, err);
    qparams_free(&q);
    tensor_free(x);
    if (rc) {
        tensor_free(y);
        return rc == TILEOPT_NOMEM ? rc : (int)err_prefix(err, "DequantizeLinear %s: ", nm);
    }
    out[0] = y;
    return TILEOPT_OK;
}

/* uint8 quantization of x over its own range, widened to include 0. */
static int k_dynamic_quantize(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 1 || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "DynamicQuantizeLinear %s: needs x", nm);
    tensor *x = NULL, *y = NULL, *s = NULL, *z = NULL;
    int rc = eval_cast(in[0], DT_DOUBLE, lim, &x, err);
    if (!rc) rc = tensor_alloc(DT_DOUBLE, in[0]->dims, in[0]->rank, lim, &y, err);
    if (!rc) rc = tensor_new(DT_FLOAT, NULL, 0, lim, &s, err);
    if (!rc) rc = tensor_new(DT_UINT8, NULL, 0, lim, &z, err);
    if (rc) goto done;
    double mn = 0, mx = 0;
    for (uint64_t e = 0; e < tensor_numel(x); e++) {
        mn = fmin(mn, dd(x)[e]);
        mx = fmax(mx, dd(x)[e]);
    }
    /* the scale is a float: the zero point and the data use that float */
    float scale = (float)((mx - mn) / 255.0);
    double zp = scale ? quantize_one(0 - quot(true, mn, scale), 0, 0, 255) : 0;
    memcpy(s->data, &scale, sizeof scale);
    z->data[0] = (uint8_t)zp;
    for (uint64_t e = 0; e < tensor_numel(x); e++)
        dd(y)[e] = scale ? quantize_one(quot(true, dd(x)[e], scale), zp, 0, 255) : zp;
    rc = nn_output(&y, DT_UINT8, lim, err);
done:
    tensor_free(x);
    if (rc) {
        tensor_free(y);
        tensor_free(s);
        tensor_free(z);
        return rc;
    }
    out[0] = y;
    if (n_out > 1) out[1] = s; else tensor_free(s);
    if (n_out > 2) out[2] = z; else tensor_free(z);
    return TILEOPT_OK;
}

const kernel_def kernel_table_quant[] = {
    {OP_QuantizeLinear, 10, k_quantize},
    {OP_DequantizeLinear, 10, k_dequantize},
    {OP_DynamicQuantizeLinear, 11, k_dynamic_quantize},
};
const size_t kernel_table_quant_count = countof(kernel_table_quant);

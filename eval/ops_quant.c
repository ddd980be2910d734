/*
** Linear quantization: QuantizeLinear, DequantizeLinear (per tensor, and per
** axis from opset 13) and DynamicQuantizeLinear, between float and 8-bit (or,
** for dequantization, 32-bit) integers; rounding half to even, saturating.
** And the integer ops built on them: MatMulInteger, ConvInteger, QLinearMatMul
** and QLinearConv.
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
                        tensor *scale, tensor *zp, const eval_env *env, qparams *q,
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
    int rc = eval_cast(scale, DT_DOUBLE, env, &q->scale, err);
    if (!rc && zp) rc = eval_cast(zp, DT_DOUBLE, env, &q->zp, err);
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
    int rc = qparams_read(n, opset, in[0], in[1], zp, env, &q, err);
    if (!rc) rc = eval_cast(in[0], DT_DOUBLE, env, &x, err);
    if (!rc) rc = tensor_alloc(DT_DOUBLE, in[0]->dims, in[0]->rank, env, &y, err);
    for (uint64_t e = 0; !rc && e < tensor_numel(x); e++) {
        int64_t k = qidx(&q, e);
        double s = dd(q.scale)[k];
        dd(y)[e] = quantize_one(quot(in[0]->elem != DT_DOUBLE, dd(x)[e], s),
                                q.zp ? dd(q.zp)[k] : 0, lo, hi);
    }
    if (!rc) rc = nn_output(&y, to, env, err);
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
    int rc = qparams_read(n, opset, in[0], in[1], n_in > 2 ? in[2] : NULL, env, &q, err);
    if (!rc) rc = eval_cast(in[0], DT_DOUBLE, env, &x, err);
    if (!rc) rc = tensor_alloc(DT_DOUBLE, in[0]->dims, in[0]->rank, env, &y, err);
    for (uint64_t e = 0; !rc && e < tensor_numel(x); e++) {
        int64_t k = qidx(&q, e);
        dd(y)[e] = (dd(x)[e] - (q.zp ? dd(q.zp)[k] : 0)) * dd(q.scale)[k];
    }
    if (!rc) rc = nn_output(&y, in[1]->elem, env, err);
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
    int rc = eval_cast(in[0], DT_DOUBLE, env, &x, err);
    if (!rc) rc = tensor_alloc(DT_DOUBLE, in[0]->dims, in[0]->rank, env, &y, err);
    if (!rc) rc = tensor_new(DT_FLOAT, NULL, 0, env, &s, err);
    if (!rc) rc = tensor_new(DT_UINT8, NULL, 0, env, &z, err);
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
    rc = nn_output(&y, DT_UINT8, env, err);
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

/* ------------------------------------------------- integer MatMul and Conv */

/*
** MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv run the float
** kernels (nn_matmul, nn_conv) in double on inputs with their zero points
** subtracted: 8-bit products are exact in double and their sums stay exact
** up to 2^53, so the integer accumulator comes out exactly.
*/

/* Values of a scale or zero point for x along `axis`: one value for the whole
** tensor, or one per index of that axis (inner: the elements after it). */
typedef struct per_axis {
    tensor *v;              /* double; NULL: 0 (an absent zero point) */
    int64_t count, inner;
} per_axis;

static int per_axis_read(const char *what, tensor *t, const tensor *x, int32_t axis,
                         const eval_env *env, per_axis *p, errbuf *err) {
    memset(p, 0, sizeof *p);
    p->count = 1;
    p->inner = 1;
    if (!t) return TILEOPT_OK;
    int64_t c = (int64_t)tensor_numel(t);
    if (c != 1) {
        if (axis < 0 || axis >= x->rank || x->dims[axis] != c)
            return err_set(err, TILEOPT_INVALID, "%s has %lld values, expected 1%s", what,
                           (long long)c, axis >= 0 && axis < x->rank ? " or one per row" : "");
        p->count = c;
        for (int32_t i = axis + 1; i < x->rank; i++) p->inner *= x->dims[i];
    }
    return eval_cast(t, DT_DOUBLE, env, &p->v, err);
}

static double per_axis_at(const per_axis *p, uint64_t e, double dflt) {
    if (!p->v) return dflt;
    return dd(p->v)[p->count == 1 ? 0 : (int64_t)((e / (uint64_t)p->inner) % (uint64_t)p->count)];
}

/* x - zp as a new double tensor, zp along `axis` of x (or one value). */
static int shifted(const char *what, tensor *x, tensor *zp, int32_t axis, const eval_env *env,
                   tensor **out, errbuf *err) {
    *out = NULL;
    double lo, hi;
    if (!int_range(x->elem, &lo, &hi) || x->elem == DT_INT32)
        return err_set(err, TILEOPT_UNSUPPORTED, "%s of type %s, expected int8 or uint8", what,
                       dtype_name(x->elem));
    if (zp && zp->elem != x->elem)
        return err_set(err, TILEOPT_INVALID, "%s is %s but its zero point is %s", what,
                       dtype_name(x->elem), dtype_name(zp->elem));
    per_axis z;
    tensor *xv = NULL, *y = NULL;
    int rc = per_axis_read("zero point", zp, x, axis, env, &z, err);
    if (!rc) rc = eval_cast(x, DT_DOUBLE, env, &xv, err);
    if (!rc) rc = tensor_alloc(DT_DOUBLE, x->dims, x->rank, env, &y, err);
    for (uint64_t e = 0; !rc && e < tensor_numel(x); e++)
        dd(y)[e] = dd(xv)[e] - per_axis_at(&z, e, 0);
    tensor_free(z.v);
    tensor_free(xv);
    if (rc) {
        tensor_free(y);
        return rc;
    }
    *out = y;
    return TILEOPT_OK;
}

/* The rows of A and the columns of B, the axes per-row and per-column values follow. */
static int32_t row_axis(const tensor *a) { return a->rank >= 2 ? a->rank - 2 : -1; }
static int32_t col_axis(const tensor *b) { return b->rank >= 2 ? b->rank - 1 : -1; }

/* The exact integer product of A - a_zp and B - b_zp, as double. */
static int int_matmul(const Onnx__NodeProto *n, tensor *A, tensor *azp, tensor *B, tensor *bzp,
                      const eval_env *env, tensor **acc, errbuf *err) {
    tensor *a = NULL, *b = NULL;
    int rc = shifted("A", A, azp, row_axis(A), env, &a, err);
    if (!rc) rc = shifted("B", B, bzp, col_axis(B), env, &b, err);
    if (!rc) rc = nn_matmul(n, a, b, env, acc, err);
    tensor_free(a);
    tensor_free(b);
    return rc;
}

/* The exact integer convolution of x - x_zp and w - w_zp (per output channel),
** plus the int32 bias when given, as double. */
static int int_conv(const Onnx__NodeProto *n, tensor *X, tensor *xzp, tensor *W, tensor *wzp,
                    tensor *B, const eval_env *env, tensor **acc, errbuf *err) {
    tensor *x = NULL, *w = NULL, *b = NULL;
    int rc = xzp && tensor_numel(xzp) != 1
                 ? (int)err_set(err, TILEOPT_INVALID, "x's zero point must be one value")
                 : shifted("x", X, xzp, -1, env, &x, err);
    if (!rc) rc = shifted("w", W, wzp, 0, env, &w, err);
    if (!rc && B) rc = eval_cast(B, DT_DOUBLE, env, &b, err);
    if (!rc) rc = nn_conv(n, x, w, b, env, acc, err);
    tensor_free(x);
    tensor_free(w);
    tensor_free(b);
    return rc;
}

/* The int32 result of an exact double accumulator. */
static int emit_int32(const char *op, const Onnx__NodeProto *n, int rc, tensor *acc,
                      const eval_env *env, tensor **out, errbuf *err) {
    if (!rc) rc = nn_output(&acc, DT_INT32, env, err);
    if (rc) {
        tensor_free(acc);
        return rc == TILEOPT_NOMEM ? rc : (int)err_prefix(err, "%s %s: ", op, eval_node_name(n));
    }
    out[0] = acc;
    return TILEOPT_OK;
}

static int k_matmul_integer(KERNEL_PARAMS) {
    (void)opset;
    if (n_in < 2 || !in[0] || !in[1] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "MatMulInteger %s: needs A and B", eval_node_name(n));
    tensor *acc = NULL;
    int rc = int_matmul(n, in[0], n_in > 2 ? in[2] : NULL, in[1], n_in > 3 ? in[3] : NULL, env,
                        &acc, err);
    return emit_int32("MatMulInteger", n, rc, acc, env, out, err);
}

static int k_conv_integer(KERNEL_PARAMS) {
    (void)opset;
    if (n_in < 2 || !in[0] || !in[1] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "ConvInteger %s: needs x and w", eval_node_name(n));
    tensor *acc = NULL;
    int rc = int_conv(n, in[0], n_in > 2 ? in[2] : NULL, in[1], n_in > 3 ? in[3] : NULL, NULL,
                      env, &acc, err);
    return emit_int32("ConvInteger", n, rc, acc, env, out, err);
}

/* y = round(acc * scale(e)) + y_zp, saturated to y_zp's type, scale(e) the
** product of the input scales over the output scale at output element e. */
static int requantize(tensor **acc, const per_axis *s1, const per_axis *s2, tensor *ys,
                      tensor *yzp, const eval_env *env, errbuf *err) {
    if (!ys || !yzp || tensor_numel(ys) != 1 || tensor_numel(yzp) != 1)
        return err_set(err, TILEOPT_INVALID, "y_scale and y_zero_point must be one value each");
    double lo, hi;
    if (!int_range(yzp->elem, &lo, &hi) || yzp->elem == DT_INT32)
        return err_set(err, TILEOPT_UNSUPPORTED, "output type %s", dtype_name(yzp->elem));
    tensor *s = NULL, *z = NULL;
    int rc = eval_cast(ys, DT_DOUBLE, env, &s, err);
    if (!rc) rc = eval_cast(yzp, DT_DOUBLE, env, &z, err);
    if (!rc) {
        double *v = dd(*acc), y_s = dd(s)[0], y_z = dd(z)[0];
        for (uint64_t e = 0; e < tensor_numel(*acc); e++)
            v[e] = quantize_one(v[e] * (per_axis_at(s1, e, 1) * per_axis_at(s2, e, 1) / y_s),
                                y_z, lo, hi);
        rc = nn_output(acc, yzp->elem, env, err);
    }
    tensor_free(s);
    tensor_free(z);
    return rc;
}

/* Inputs: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point. */
static int k_qlinear_matmul(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    for (size_t i = 0; i < 8; i++)
        if (i >= n_in || !in[i] || n_out < 1)
            return err_set(err, TILEOPT_INVALID, "QLinearMatMul %s: needs 8 inputs", nm);
    tensor *acc = NULL;
    per_axis sa = {0}, sb = {0};
    int rc = int_matmul(n, in[0], in[2], in[3], in[5], env, &acc, err);
    /* the scales follow the output's rows and columns: per-row values step
    ** every N elements, per-column ones every element */
    if (!rc) {
        int64_t cols = in[3]->rank >= 2 ? in[3]->dims[in[3]->rank - 1] : 1;
        tensor *rows_like = in[0]->rank >= 2 ? in[0] : NULL;
        rc = per_axis_read("a_scale", in[1], in[0], row_axis(in[0]), env, &sa, err);
        if (!rc && rows_like) sa.inner = cols;
    }
    if (!rc) {
        rc = per_axis_read("b_scale", in[4], in[3], col_axis(in[3]), env, &sb, err);
        sb.inner = 1;
    }
    if (!rc) rc = requantize(&acc, &sa, &sb, in[6], in[7], env, err);
    tensor_free(sa.v);
    tensor_free(sb.v);
    if (rc) {
        tensor_free(acc);
        return rc == TILEOPT_NOMEM ? rc : (int)err_prefix(err, "QLinearMatMul %s: ", nm);
    }
    out[0] = acc;
    return TILEOPT_OK;
}

/* Inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
** y_zero_point, optional int32 bias B. */
static int k_qlinear_conv(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    for (size_t i = 0; i < 8; i++)
        if (i >= n_in || !in[i] || n_out < 1)
            return err_set(err, TILEOPT_INVALID, "QLinearConv %s: needs 8 inputs", nm);
    tensor *acc = NULL;
    per_axis sx = {0}, sw = {0};
    int rc = tensor_numel(in[1]) != 1
                 ? (int)err_set(err, TILEOPT_INVALID, "x_scale must be one value")
                 : int_conv(n, in[0], in[2], in[3], in[5], n_in > 8 ? in[8] : NULL, env, &acc,
                            err);
    if (!rc) rc = per_axis_read("x_scale", in[1], in[0], -1, env, &sx, err);
    /* per output channel: axis 1 of the output, as axis 0 of w */
    if (!rc) rc = per_axis_read("w_scale", in[4], acc, 1, env, &sw, err);
    if (!rc) rc = requantize(&acc, &sx, &sw, in[6], in[7], env, err);
    tensor_free(sx.v);
    tensor_free(sw.v);
    if (rc) {
        tensor_free(acc);
        return rc == TILEOPT_NOMEM ? rc : (int)err_prefix(err, "QLinearConv %s: ", nm);
    }
    out[0] = acc;
    return TILEOPT_OK;
}

const kernel_def kernel_table_quant[] = {
    {OP_QuantizeLinear, 10, k_quantize},
    {OP_DequantizeLinear, 10, k_dequantize},
    {OP_DynamicQuantizeLinear, 11, k_dynamic_quantize},
    {OP_MatMulInteger, 10, k_matmul_integer},
    {OP_ConvInteger, 10, k_conv_integer},
    {OP_QLinearMatMul, 10, k_qlinear_matmul},
    {OP_QLinearConv, 10, k_qlinear_conv},
};
const size_t kernel_table_quant_count = countof(kernel_table_quant);

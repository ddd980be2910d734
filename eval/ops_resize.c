/*
** Resize and Upsample: nearest (four rounding modes), linear and cubic
** (cubic_coeff_a, exclude_outside) over any axes, with every coordinate
** transformation of the schemas up to opset 17 (half_pixel, pytorch_half_pixel,
** align_corners, asymmetric, tf_half_pixel_for_nn at 11 only, tf_crop_and_resize
** with its roi and extrapolation_value) and Resize-19's half_pixel_symmetric. Separable: one axis at a time, each output
** position reading up to four taps of the axis, in double.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"

typedef enum { RS_NEAREST, RS_LINEAR, RS_CUBIC } rs_mode;
typedef enum {
    CT_HALF_PIXEL, CT_PYTORCH_HALF_PIXEL, CT_ALIGN_CORNERS, CT_ASYMMETRIC, CT_TF_HALF_PIXEL,
    CT_TF_CROP, CT_HALF_PIXEL_SYMMETRIC
} rs_coord;
typedef enum { NR_PREFER_FLOOR, NR_PREFER_CEIL, NR_FLOOR, NR_CEIL } rs_round;

typedef struct rs_opts {
    rs_mode mode;
    rs_coord coord;
    rs_round round;
    double cubic_a, extrapolation;
    bool exclude_outside;
} rs_opts;

/* The attribute's string among names (its index), else def; -1 when unknown. */
static int str_attr(const Onnx__NodeProto *n, const char *attr, const char *const *names,
                    int count, int def) {
    const Onnx__AttributeProto *a = graph_attr(n, attr);
    if (!a || !a->s.len) return def;
    for (int i = 0; i < count; i++)
        if (strlen(names[i]) == a->s.len && !memcmp(a->s.data, names[i], a->s.len)) return i;
    return -1;
}

static int read_opts(const Onnx__NodeProto *n, int64_t opset, rs_opts *o, errbuf *err) {
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                         "asymmetric", "tf_half_pixel_for_nn",
                                         "tf_crop_and_resize", "half_pixel_symmetric"};
    static const char *const rounds[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                         "ceil"};
    int m = str_attr(n, "mode", modes, 3, RS_NEAREST);
    /* Upsample-7 called linear "bilinear" */
    if (m < 0 && graph_attr(n, "mode") && graph_attr(n, "mode")->s.len == 8 &&
        !memcmp(graph_attr(n, "mode")->s.data, "bilinear", 8))
        m = RS_LINEAR;
    /* before Resize-11, coordinates were asymmetric and nearest floored */
    bool legacy = opset < 11 || !strcmp(n->op_type, "Upsample");
    int c = legacy ? CT_ASYMMETRIC : str_attr(n, "coordinate_transformation_mode", coords,
                                              opset >= 19 ? 7 : 6, CT_HALF_PIXEL);
    int r = legacy ? NR_FLOOR : str_attr(n, "nearest_mode", rounds, 4, NR_PREFER_FLOOR);
    if (m < 0 || c < 0 || r < 0 || (legacy && m == RS_CUBIC))
        return err_set(err, TILEOPT_INVALID, "unknown mode, coordinate transformation or "
                       "nearest mode");
    /* Resize-13 dropped it: a model at 13 or later that still uses it means
    ** what its runtime makes of it, so verify gives no verdict rather than
    ** vouch for a conversion that kept it */
    if (c == CT_TF_HALF_PIXEL && opset >= 13)
        return err_set(err, TILEOPT_UNSUPPORTED, "tf_half_pixel_for_nn is a coordinate "
                       "transformation of Resize-11 only, not of opset %lld", (long long)opset);
    if (graph_attr_int(n, "antialias", 0) ||
        str_attr(n, "keep_aspect_ratio_policy", (const char *const[]){"stretch"}, 1, 0) != 0 ||
        graph_attr(n, "axes"))
        return err_set(err, TILEOPT_UNSUPPORTED, "antialias, keep_aspect_ratio_policy and "
                       "axes (opset 18) are not supported");
    o->mode = (rs_mode)m;
    o->coord = (rs_coord)c;
    o->round = (rs_round)r;
    o->cubic_a = graph_attr_float(n, "cubic_coeff_a", -0.75f);
    o->exclude_outside = graph_attr_int(n, "exclude_outside", 0) != 0;
    o->extrapolation = graph_attr_float(n, "extrapolation_value", 0.0f);
    return TILEOPT_OK;
}

/* x_resized -> x_original along one axis. lout is the resized length as the
** schema defines it, input length times scale before any rounding (the
** sizes given, when they are). */
static double to_original(const rs_opts *o, double x, double scale, double lout, int64_t lin,
                          double roi_start, double roi_end) {
    switch (o->coord) {
    case CT_HALF_PIXEL: return (x + 0.5) / scale - 0.5;
    case CT_PYTORCH_HALF_PIXEL: return lout > 1 ? (x + 0.5) / scale - 0.5 : 0;
    case CT_ALIGN_CORNERS: return lout == 1 ? 0 : x * (double)(lin - 1) / (lout - 1);
    case CT_ASYMMETRIC: return x / scale;
    case CT_TF_HALF_PIXEL: return (x + 0.5) / scale;
    case CT_HALF_PIXEL_SYMMETRIC: {
        /* the implicit ROI's centre at the output's: differs from half_pixel
        ** only where scales make a fractional length */
        double adjust = floor(lout) / lout;
        return (double)lin / 2 * (1 - adjust) + (x + 0.5) / scale - 0.5;
    }
    case CT_TF_CROP: break;
    }
    return lout > 1 ? roi_start * (double)(lin - 1) +
                          x * (roi_end - roi_start) * (double)(lin - 1) / (lout - 1)
                    : 0.5 * (roi_start + roi_end) * (double)(lin - 1);
}

static int64_t round_nearest(rs_round r, double x) {
    switch (r) {
    case NR_FLOOR: return (int64_t)floor(x);
    case NR_CEIL: return (int64_t)ceil(x);
    case NR_PREFER_CEIL: return (int64_t)floor(x + 0.5);
    default: return x == floor(x) + 0.5 ? (int64_t)floor(x) : (int64_t)floor(x + 0.5);
    }
}

static void cubic_weights(double a, double t, double *w) {
    double s = t + 1, u = 1 - t, v = 2 - t;
    w[0] = ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
    w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
    w[2] = ((a + 2) * u - (a + 3)) * u * u + 1;
    w[3] = ((a * v - 5 * a) * v + 8 * a) * v - 4 * a;
}

/* The taps (up to 4) of output position x along an axis, edge-clamped; false
** when tf_crop_and_resize puts it outside the input (extrapolation). */
static bool axis_taps(const rs_opts *o, int64_t x, double scale, double lout, int64_t lin,
                      double rs, double re, int64_t *idx, double *w, int *nt) {
    double xo = to_original(o, (double)x, scale, lout, lin, rs, re);
    if (o->coord == CT_TF_CROP && (xo < 0 || xo > (double)(lin - 1))) {
        *nt = 0;
        return false;
    }
    if (o->mode == RS_NEAREST) {
        int64_t i = round_nearest(o->round, xo);
        idx[0] = i < 0 ? 0 : i >= lin ? lin - 1 : i;
        w[0] = 1;
        *nt = 1;
        return true;
    }
    double f = floor(xo), t = xo - f;
    int64_t base = (int64_t)f;
    if (o->mode == RS_LINEAR) {
        idx[0] = base;
        idx[1] = base + 1;
        w[0] = 1 - t;
        w[1] = t;
        *nt = 2;
    } else {
        for (int k = 0; k < 4; k++) idx[k] = base - 1 + k;
        cubic_weights(o->cubic_a, t, w);
        *nt = 4;
    }
    double sum = 0;
    for (int k = 0; k < *nt; k++) {
        if (o->exclude_outside && (idx[k] < 0 || idx[k] >= lin)) w[k] = 0;
        sum += w[k];
        idx[k] = idx[k] < 0 ? 0 : idx[k] >= lin ? lin - 1 : idx[k];
    }
    if (o->exclude_outside && sum != 0)
        for (int k = 0; k < *nt; k++) w[k] /= sum;
    return true;
}

/* Floats of an optional float input (empty: count 0). */
static int float_values(tensor *t, const eval_env *env, double *out, int64_t cap,
                        int64_t *count, errbuf *err) {
    *count = 0;
    if (!t) return TILEOPT_OK;
    tensor *d = NULL;
    int rc = eval_cast(t, DT_DOUBLE, env, &d, err);
    if (rc) return rc;
    int64_t n = (int64_t)tensor_numel(d);
    if (n > cap) {
        tensor_free(d);
        return err_set(err, TILEOPT_INVALID, "%lld values where at most %lld fit",
                       (long long)n, (long long)cap);
    }
    memcpy(out, d->data, (size_t)n * sizeof *out);
    *count = n;
    tensor_free(d);
    return TILEOPT_OK;
}

static int resize(const Onnx__NodeProto *n, int64_t opset, tensor *const *in, size_t n_in,
                  tensor **out, size_t n_out, const eval_env *env, errbuf *err) {
    if (n_in < 1 || !in[0] || n_out < 1) return err_set(err, TILEOPT_INVALID, "needs X");
    tensor *X = in[0];
    int32_t r = X->rank;
    rs_opts o = {0};
    int rc = read_opts(n, opset, &o, err);
    if (rc) return rc;
    bool upsample = !strcmp(n->op_type, "Upsample");
    /* where the scales, sizes and roi come from */
    tensor *t_roi = NULL, *t_scales = NULL, *t_sizes = NULL;
    double scales[TENSOR_MAX_RANK], roi[2 * TENSOR_MAX_RANK];
    int64_t ns = 0, nroi = 0, sizes[TENSOR_MAX_RANK];
    size_t nsz = 0;
    if (upsample && opset < 9) {
        const Onnx__AttributeProto *a = graph_attr(n, "scales");
        for (size_t i = 0; a && i < a->n_floats && i < TENSOR_MAX_RANK; i++)
            scales[ns++] = a->floats[i];
    } else if (upsample || opset < 11) {
        t_scales = n_in > 1 ? in[1] : NULL;
    } else {
        t_roi = n_in > 1 ? in[1] : NULL;
        t_scales = n_in > 2 ? in[2] : NULL;
        t_sizes = n_in > 3 ? in[3] : NULL;
    }
    /* Upsample-7's scales came from its attribute above */
    if ((t_scales && (rc = float_values(t_scales, env, scales, TENSOR_MAX_RANK, &ns, err))) ||
        (o.coord == CT_TF_CROP &&
         (rc = float_values(t_roi, env, roi, 2 * TENSOR_MAX_RANK, &nroi, err))))
        return rc;
    if (t_sizes && tensor_numel(t_sizes) &&
        !tensor_to_i64(t_sizes, sizes, TENSOR_MAX_RANK, &nsz))
        return err_set(err, TILEOPT_INVALID, "sizes must be integers");
    if ((nsz && ns) || (nsz ? (int64_t)nsz : ns) != r)
        return err_set(err, TILEOPT_INVALID, "needs %d scales or sizes, not both", (int)r);
    if (o.coord == CT_TF_CROP && nroi != 2 * r)
        return err_set(err, TILEOPT_INVALID, "tf_crop_and_resize needs a roi of %d values",
                       2 * (int)r);
    int64_t od[TENSOR_MAX_RANK];
    for (int32_t i = 0; i < r; i++) {
        if (nsz) {
            od[i] = sizes[i];
            scales[i] = X->dims[i] ? (double)sizes[i] / (double)X->dims[i] : 1;
        } else {
            double v = floor((double)X->dims[i] * scales[i]);
            if (!(scales[i] > 0) || !(v < 9.0e15))
                return err_set(err, TILEOPT_INVALID, "scale %g on axis %d", scales[i], (int)i);
            od[i] = (int64_t)v;
        }
        if (od[i] < 0 || (od[i] > 0 && X->dims[i] == 0))
            return err_set(err, TILEOPT_INVALID, "axis %d of size %lld resized to %lld",
                           (int)i, (long long)X->dims[i], (long long)od[i]);
    }
    tensor *cur = NULL;
    uint8_t *outside[TENSOR_MAX_RANK] = {NULL};
    int64_t *idx = NULL;
    double *wts = NULL;
    if ((rc = eval_cast(X, DT_DOUBLE, env, &cur, err))) return rc;
    for (int32_t a = 0; a < r && !rc; a++) {
        int64_t lin = cur->dims[a], lout = od[a];
        bool identity = lin == lout && scales[a] == 1 && o.coord != CT_TF_CROP;
        if (identity) continue;
        idx = malloc((size_t)(lout ? lout : 1) * 4 * sizeof *idx);
        wts = malloc((size_t)(lout ? lout : 1) * 4 * sizeof *wts);
        int *nt = malloc((size_t)(lout ? lout : 1) * sizeof *nt);
        outside[a] = calloc((size_t)(lout ? lout : 1), 1);
        if (!idx || !wts || !nt || !outside[a]) {
            free(nt);
            rc = err_set(err, TILEOPT_NOMEM, "out of memory");
            break;
        }
        for (int64_t x = 0; x < lout; x++)
            outside[a][x] = !axis_taps(&o, x, scales[a], (double)lin * scales[a], lin,
                                       nroi ? roi[a] : 0, nroi ? roi[a + r] : 1,
                                       idx + 4 * x, wts + 4 * x, &nt[x]);
        int64_t nd[TENSOR_MAX_RANK];
        memcpy(nd, cur->dims, (size_t)r * sizeof *nd);
        nd[a] = lout;
        tensor *next = NULL;
        rc = tensor_new(DT_DOUBLE, nd, r, env, &next, err);
        if (!rc) {
            int64_t outer = 1, inner = 1;
            for (int32_t i = 0; i < a; i++) outer *= nd[i];
            for (int32_t i = a + 1; i < r; i++) inner *= nd[i];
            const double *src = (const double *)(const void *)cur->data;
            double *dst = (double *)(void *)next->data;
            for (int64_t p = 0; p < outer; p++)
                for (int64_t x = 0; x < lout; x++) {
                    double *drow = dst + (p * lout + x) * inner;
                    for (int k = 0; k < nt[x]; k++) {
                        const double *srow = src + (p * lin + idx[4 * x + k]) * inner;
                        double wk = wts[4 * x + k];
                        for (int64_t i = 0; i < inner; i++) drow[i] += wk * srow[i];
                    }
                }
            tensor_free(cur);
            cur = next;
        }
        free(nt);
        free(idx);
        free(wts);
        idx = NULL;
        wts = NULL;
    }
    /* tf_crop_and_resize: positions outside the input on any axis */
    if (!rc && o.coord == CT_TF_CROP) {
        int64_t pos[TENSOR_MAX_RANK] = {0};
        uint64_t total = tensor_numel(cur);
        double *v = (double *)(void *)cur->data;
        for (uint64_t e = 0; e < total; e++) {
            bool ext = false;
            for (int32_t a = 0; a < r && !ext; a++) ext = outside[a] && outside[a][pos[a]];
            if (ext) v[e] = o.extrapolation;
            for (int32_t a = r - 1; a >= 0 && ++pos[a] == od[a]; a--) pos[a] = 0;
        }
    }
    for (int32_t a = 0; a < r; a++) free(outside[a]);
    if (!rc) rc = nn_output(&cur, X->elem, env, err);
    if (rc) {
        tensor_free(cur);
        return rc;
    }
    out[0] = cur;
    return TILEOPT_OK;
}

static int k_resize(KERNEL_PARAMS) {
    int rc = resize(n, opset, in, n_in, out, n_out, env, err);
    return rc && rc != TILEOPT_NOMEM ? (int)err_prefix(err, "%s %s: ", n->op_type, eval_node_name(n)) : rc;
}

const kernel_def kernel_table_resize[] = {
    {OP_Resize, 10, k_resize},
    {OP_Upsample, 7, k_resize},
};
const size_t kernel_table_resize_count = countof(kernel_table_resize);

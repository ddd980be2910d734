/*
** Detection post-processing and sampling: NonMaxSuppression, RoiAlign (average
** mode, both coordinate transformations), MaxRoiPool and GridSample (bilinear,
** nearest, bicubic; zeros, border and reflection padding). Computed in double.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"

static double *dvals(tensor *t) { return (double *)(void *)t->data; }

/* ------------------------------------------------------- NonMaxSuppression */

typedef struct nms_box {
    double y1, x1, y2, x2, area;
} nms_box;

static nms_box nms_read(const double *b, bool center) {
    nms_box r;
    if (center) {
        r.x1 = b[0] - b[2] / 2;
        r.x2 = b[0] + b[2] / 2;
        r.y1 = b[1] - b[3] / 2;
        r.y2 = b[1] + b[3] / 2;
    } else {
        /* corners in either order */
        r.y1 = fmin(b[0], b[2]);
        r.y2 = fmax(b[0], b[2]);
        r.x1 = fmin(b[1], b[3]);
        r.x2 = fmax(b[1], b[3]);
    }
    r.area = (r.y2 - r.y1) * (r.x2 - r.x1);
    return r;
}

static double nms_iou(const nms_box *a, const nms_box *b) {
    double h = fmin(a->y2, b->y2) - fmax(a->y1, b->y1), w = fmin(a->x2, b->x2) - fmax(a->x1, b->x1);
    if (h <= 0 || w <= 0) return 0;
    double inter = h * w, uni = a->area + b->area - inter;
    return uni > 0 ? inter / uni : 0;
}

/* a before b: the higher score (equal scores keep index order) */
static bool nms_before(const void *scores, int64_t a, int64_t b) {
    const double *s = scores;
    return s[a] > s[b];
}

/* An optional scalar input as double (def when absent). */
static int scalar_in(tensor *const *in, size_t n_in, size_t i, double def,
                     const eval_env *env, double *v, errbuf *err) {
    *v = def;
    if (i >= n_in || !in[i]) return TILEOPT_OK;
    if (tensor_numel(in[i]) != 1) return err_set(err, TILEOPT_INVALID, "input %zu must be one value", i);
    tensor *t = NULL;
    int rc = eval_cast(in[i], DT_DOUBLE, env, &t, err);
    if (!rc) *v = dvals(t)[0];
    tensor_free(t);
    return rc;
}

static int k_nms(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 2 || !in[0] || !in[1] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "NonMaxSuppression %s: needs boxes and scores", nm);
    tensor *B = in[0], *S = in[1];
    if (B->rank != 3 || B->dims[2] != 4 || S->rank != 3 || S->dims[0] != B->dims[0] ||
        S->dims[2] != B->dims[1])
        return err_set(err, TILEOPT_INVALID, "NonMaxSuppression %s: boxes [B, N, 4] and "
                       "scores [B, C, N] do not fit", nm);
    double maxo, iou_t, score_t;
    bool has_score_t = n_in > 4 && in[4];
    int rc;
    if ((rc = scalar_in(in, n_in, 2, 0, env, &maxo, err)) ||
        (rc = scalar_in(in, n_in, 3, 0, env, &iou_t, err)) ||
        (rc = scalar_in(in, n_in, 4, 0, env, &score_t, err)))
        return err_prefix(err, "NonMaxSuppression %s: ", nm);
    bool center = graph_attr_int(n, "center_point_box", 0) != 0;
    int64_t nb = B->dims[0], nc = S->dims[1], nbox = B->dims[1];
    int64_t max_out = maxo > (double)nbox ? nbox : (int64_t)maxo;
    tensor *b = NULL, *s = NULL, *o = NULL;
    int64_t *order = NULL, *sel = NULL, nsel = 0, cap = 0;
    nms_box *boxes = NULL;
    if ((rc = eval_cast(B, DT_DOUBLE, env, &b, err)) || (rc = eval_cast(S, DT_DOUBLE, env, &s, err)))
        goto done;
    order = malloc((size_t)(nbox ? nbox : 1) * 2 * sizeof *order);
    boxes = malloc((size_t)(nbox ? nbox : 1) * sizeof *boxes);
    int64_t *kept = malloc((size_t)(nbox ? nbox : 1) * sizeof *kept);
    if (!order || !boxes || !kept) {
        free(kept);
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    for (int64_t bi = 0; bi < nb && !rc; bi++) {
        for (int64_t i = 0; i < nbox; i++) boxes[i] = nms_read(dvals(b) + (bi * nbox + i) * 4, center);
        for (int64_t c = 0; c < nc && !rc; c++) {
            const double *sc = dvals(s) + (bi * nc + c) * nbox;
            int64_t cand = 0, nk = 0;
            for (int64_t i = 0; i < nbox; i++)
                if (!has_score_t || sc[i] > score_t) order[cand++] = i;
            eval_sort_indices(order, cand, order + nbox, nms_before, sc);
            for (int64_t q = 0; q < cand && nk < max_out; q++) {
                bool keep = true;
                for (int64_t j = 0; j < nk && keep; j++)
                    keep = nms_iou(&boxes[order[q]], &boxes[kept[j]]) <= iou_t;
                if (!keep) continue;
                kept[nk++] = order[q];
                if (nsel == cap) {
                    cap = cap ? cap * 2 : 64;
                    int64_t *g = realloc(sel, (size_t)cap * 3 * sizeof *g);
                    if (!g) {
                        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
                        break;
                    }
                    sel = g;
                }
                sel[nsel * 3] = bi;
                sel[nsel * 3 + 1] = c;
                sel[nsel * 3 + 2] = order[q];
                nsel++;
            }
        }
    }
    free(kept);
    if (rc) goto done;
    int64_t od[2] = {nsel, 3};
    if ((rc = tensor_alloc(DT_INT64, od, 2, env, &o, err))) goto done;
    if (nsel) memcpy(o->data, sel, (size_t)nsel * 3 * sizeof *sel);
    out[0] = o;
    o = NULL;
done:
    free(order);
    free(boxes);
    free(sel);
    tensor_free(b);
    tensor_free(s);
    tensor_free(o);
    return rc;
}

/* ------------------------------------------------------------------ RoiAlign */

/* Bilinear value at (y, x) of an h x w plane, zero well outside it. */
static double roi_bilinear(const double *p, int64_t h, int64_t w, double y, double x) {
    if (y < -1.0 || y > (double)h || x < -1.0 || x > (double)w) return 0;
    if (y <= 0) y = 0;
    if (x <= 0) x = 0;
    int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1, x1;
    if (y0 >= h - 1) {
        y1 = y0 = h - 1;
        y = (double)y0;
    } else {
        y1 = y0 + 1;
    }
    if (x0 >= w - 1) {
        x1 = x0 = w - 1;
        x = (double)x0;
    } else {
        x1 = x0 + 1;
    }
    double ly = y - (double)y0, lx = x - (double)x0, hy = 1 - ly, hx = 1 - lx;
    return hy * hx * p[y0 * w + x0] + hy * lx * p[y0 * w + x1] + ly * hx * p[y1 * w + x0] +
           ly * lx * p[y1 * w + x1];
}

static int k_roi_align(KERNEL_PARAMS) {
    const char *nm = eval_node_name(n);
    if (n_in < 3 || !in[0] || !in[1] || !in[2] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "RoiAlign %s: needs X, rois, batch_indices", nm);
    tensor *X = in[0], *R = in[1], *BI = in[2];
    if (X->rank != 4 || R->rank != 2 || R->dims[1] != 4 || BI->rank != 1 ||
        BI->dims[0] != R->dims[0])
        return err_set(err, TILEOPT_INVALID, "RoiAlign %s: X [N,C,H,W], rois [R,4], "
                       "batch_indices [R] do not fit", nm);
    const Onnx__AttributeProto *mode = graph_attr(n, "mode");
    if (mode && !(mode->s.len == 3 && !memcmp(mode->s.data, "avg", 3)))
        return err_set(err, TILEOPT_UNSUPPORTED, "RoiAlign %s: only mode avg is supported "
                       "(runtimes disagree on max)", nm);
    const Onnx__AttributeProto *ct = graph_attr(n, "coordinate_transformation_mode");
    /* half_pixel from opset 16 on by default; output_half_pixel before */
    bool half = opset >= 16 && !(ct && ct->s.len == 17 &&
                                 !memcmp(ct->s.data, "output_half_pixel", 17));
    int64_t oh = graph_attr_int(n, "output_height", 1), ow = graph_attr_int(n, "output_width", 1);
    int64_t ratio = graph_attr_int(n, "sampling_ratio", 0);
    double scale = graph_attr_float(n, "spatial_scale", 1.0f);
    if (oh < 1 || ow < 1 || ratio < 0)
        return err_set(err, TILEOPT_INVALID, "RoiAlign %s: output %lldx%lld, sampling_ratio "
                       "%lld", nm, (long long)oh, (long long)ow, (long long)ratio);
    int64_t N = X->dims[0], C = X->dims[1], H = X->dims[2], W = X->dims[3], nr = R->dims[0];
    int64_t od[4] = {nr, C, oh, ow};
    tensor *x = NULL, *r = NULL, *y = NULL;
    int64_t *bidx = malloc((size_t)(nr ? nr : 1) * sizeof *bidx);
    size_t cnt = 0;
    int rc = TILEOPT_OK;
    if (!bidx) return err_set(err, TILEOPT_NOMEM, "out of memory");
    if (!tensor_to_i64(BI, bidx, (size_t)nr, &cnt) || (int64_t)cnt != nr) {
        rc = err_set(err, TILEOPT_INVALID, "RoiAlign %s: batch_indices must be integers", nm);
        goto done;
    }
    if ((rc = eval_cast(X, DT_DOUBLE, env, &x, err)) || (rc = eval_cast(R, DT_DOUBLE, env, &r, err)) ||
        (rc = tensor_alloc(DT_DOUBLE, od, 4, env, &y, err)))
        goto done;
    double off = half ? 0.5 : 0;
    for (int64_t q = 0; q < nr; q++) {
        if (bidx[q] < 0 || bidx[q] >= N) {
            rc = err_set(err, TILEOPT_INVALID, "RoiAlign %s: batch index %lld outside [0, %lld)",
                         nm, (long long)bidx[q], (long long)N);
            goto done;
        }
        const double *rb = dvals(r) + q * 4;
        double sw = rb[0] * scale - off, sh = rb[1] * scale - off;
        double rw = rb[2] * scale - off - sw, rh = rb[3] * scale - off - sh;
        if (!half) {
            rw = fmax(rw, 1.0);
            rh = fmax(rh, 1.0);
        }
        double bh = rh / (double)oh, bw = rw / (double)ow;
        int64_t gh = ratio > 0 ? ratio : (int64_t)ceil(rh / (double)oh);
        int64_t gw = ratio > 0 ? ratio : (int64_t)ceil(rw / (double)ow);
        double count = (double)(gh * gw > 1 ? gh * gw : 1);
        for (int64_t c = 0; c < C; c++) {
            const double *plane = dvals(x) + (bidx[q] * C + c) * H * W;
            for (int64_t ph = 0; ph < oh; ph++)
                for (int64_t pw = 0; pw < ow; pw++) {
                    double sum = 0;
                    for (int64_t iy = 0; iy < gh; iy++) {
                        double yy = sh + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
                        for (int64_t ix = 0; ix < gw; ix++) {
                            double xx = sw + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
                            sum += roi_bilinear(plane, H, W, yy, xx);
                        }
                    }
                    dvals(y)[((q * C + c) * oh + ph) * ow + pw] = sum / count;
                }
        }
    }
    rc = nn_output(&y, X->elem, env, err);
    if (!rc) {
        out[0] = y;
        y = NULL;
    }
done:
    free(bidx);
    tensor_free(x);
    tensor_free(r);
    tensor_free(y);
    return rc;
}

/* ---------------------------------------------------------------- GridSample */

typedef enum { GS_ZEROS, GS_BORDER, GS_REFLECTION } gs_pad;

/* Reflect coordinate v into [lo, hi] as often as needed. */
static double reflect(double v, double lo, double hi) {
    double span = hi - lo;
    if (span <= 0) return lo;
    double d = fabs(v - lo);
    double flips = floor(d / span), extra = d - flips * span;
    return fmod(flips, 2) == 0 ? lo + extra : hi - extra;
}

/* Pixel (iy, ix) of a plane with the padding mode applied to the pixel index. */
static double gs_pixel(const double *p, int64_t h, int64_t w, int64_t iy, int64_t ix,
                       gs_pad pad, bool align) {
    if (iy >= 0 && iy < h && ix >= 0 && ix < w) return p[iy * w + ix];
    if (pad == GS_ZEROS) return 0;
    double y = (double)iy, x = (double)ix;
    if (pad == GS_REFLECTION) {
        y = align ? reflect(y, 0, (double)(h - 1)) : reflect(y, -0.5, (double)h - 0.5);
        x = align ? reflect(x, 0, (double)(w - 1)) : reflect(x, -0.5, (double)w - 0.5);
    }
    int64_t cy = (int64_t)fmin(fmax(round(y), 0), (double)(h - 1));
    int64_t cx = (int64_t)fmin(fmax(round(x), 0), (double)(w - 1));
    return p[cy * w + cx];
}

static void cubic_coeffs(double t, double *c) {
    const double a = -0.75;
    double s = t + 1, u = 1 - t, v = 2 - t;
    c[0] = ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
    c[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
    c[2] = ((a + 2) * u - (a + 3)) * u * u + 1;
    c[3] = ((a * v - 5 * a) * v + 8 * a) * v - 4 * a;
}

static int k_grid_sample(KERNEL_PARAMS) {
    const char *nm = eval_node_name(n);
    if (n_in < 2 || !in[0] || !in[1] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "GridSample %s: needs X and grid", nm);
    tensor *X = in[0], *G = in[1];
    if (X->rank != 4 || G->rank != 4 || G->dims[0] != X->dims[0] || G->dims[3] != 2)
        return err_set(err, TILEOPT_INVALID, "GridSample %s: X [N,C,H,W] and grid [N,Ho,Wo,2] "
                       "do not fit", nm);
    const Onnx__AttributeProto *ma = graph_attr(n, "mode"), *pa = graph_attr(n, "padding_mode");
    int mode = 0; /* 0 bilinear, 1 nearest, 2 bicubic; GridSample-20 says linear, cubic */
    if (ma && ma->s.len) {
        const char *cubic = opset >= 20 ? "cubic" : "bicubic";
        const char *linear = opset >= 20 ? "linear" : "bilinear";
        if (ma->s.len == 7 && !memcmp(ma->s.data, "nearest", 7)) mode = 1;
        else if (ma->s.len == strlen(cubic) && !memcmp(ma->s.data, cubic, ma->s.len)) mode = 2;
        else if (!(ma->s.len == strlen(linear) && !memcmp(ma->s.data, linear, ma->s.len)))
            return err_set(err, TILEOPT_INVALID, "GridSample %s: mode '%.*s'", nm,
                           (int)ma->s.len, (const char *)ma->s.data);
    }
    gs_pad pad = GS_ZEROS;
    if (pa && pa->s.len) {
        if (pa->s.len == 6 && !memcmp(pa->s.data, "border", 6)) pad = GS_BORDER;
        else if (pa->s.len == 10 && !memcmp(pa->s.data, "reflection", 10)) pad = GS_REFLECTION;
        else if (!(pa->s.len == 5 && !memcmp(pa->s.data, "zeros", 5)))
            return err_set(err, TILEOPT_INVALID, "GridSample %s: padding_mode '%.*s'", nm,
                           (int)pa->s.len, (const char *)pa->s.data);
    }
    bool align = graph_attr_int(n, "align_corners", 0) != 0;
    int64_t N = X->dims[0], C = X->dims[1], H = X->dims[2], W = X->dims[3];
    int64_t Ho = G->dims[1], Wo = G->dims[2], od[4] = {N, C, Ho, Wo};
    tensor *x = NULL, *g = NULL, *y = NULL;
    int rc;
    if ((rc = eval_cast(X, DT_DOUBLE, env, &x, err)) || (rc = eval_cast(G, DT_DOUBLE, env, &g, err)) ||
        (rc = tensor_alloc(DT_DOUBLE, od, 4, env, &y, err)))
        goto done;
    for (int64_t b = 0; b < N; b++)
        for (int64_t i = 0; i < Ho; i++)
            for (int64_t j = 0; j < Wo; j++) {
                const double *gp = dvals(g) + ((b * Ho + i) * Wo + j) * 2;
                /* normalized [-1, 1] to pixel coordinates */
                double xx = align ? (gp[0] + 1) / 2 * (double)(W - 1) : ((gp[0] + 1) * (double)W - 1) / 2;
                double yy = align ? (gp[1] + 1) / 2 * (double)(H - 1) : ((gp[1] + 1) * (double)H - 1) / 2;
                if (pad == GS_BORDER) {
                    xx = fmin(fmax(xx, 0), (double)(W - 1));
                    yy = fmin(fmax(yy, 0), (double)(H - 1));
                } else if (pad == GS_REFLECTION && mode != 2) {
                    xx = align ? reflect(xx, 0, (double)(W - 1)) : reflect(xx, -0.5, (double)W - 0.5);
                    yy = align ? reflect(yy, 0, (double)(H - 1)) : reflect(yy, -0.5, (double)H - 0.5);
                    xx = fmin(fmax(xx, 0), (double)(W - 1));
                    yy = fmin(fmax(yy, 0), (double)(H - 1));
                }
                for (int64_t c = 0; c < C; c++) {
                    const double *plane = dvals(x) + (b * C + c) * H * W;
                    double v;
                    if (mode == 1) {
                        v = gs_pixel(plane, H, W, (int64_t)nearbyint(yy), (int64_t)nearbyint(xx),
                                     pad, align);
                    } else if (mode == 0) {
                        int64_t y0 = (int64_t)floor(yy), x0 = (int64_t)floor(xx);
                        double ly = yy - (double)y0, lx = xx - (double)x0;
                        v = (1 - ly) * (1 - lx) * gs_pixel(plane, H, W, y0, x0, pad, align) +
                            (1 - ly) * lx * gs_pixel(plane, H, W, y0, x0 + 1, pad, align) +
                            ly * (1 - lx) * gs_pixel(plane, H, W, y0 + 1, x0, pad, align) +
                            ly * lx * gs_pixel(plane, H, W, y0 + 1, x0 + 1, pad, align);
                    } else {
                        int64_t y0 = (int64_t)floor(yy) - 1, x0 = (int64_t)floor(xx) - 1;
                        double cy[4], cx[4];
                        cubic_coeffs(yy - floor(yy), cy);
                        cubic_coeffs(xx - floor(xx), cx);
                        v = 0;
                        for (int p = 0; p < 4; p++)
                            for (int q = 0; q < 4; q++)
                                v += cy[p] * cx[q] * gs_pixel(plane, H, W, y0 + p, x0 + q, pad, align);
                    }
                    dvals(y)[((b * C + c) * Ho + i) * Wo + j] = v;
                }
            }
    rc = nn_output(&y, X->elem, env, err);
    if (!rc) {
        out[0] = y;
        y = NULL;
    }
done:
    tensor_free(x);
    tensor_free(g);
    tensor_free(y);
    return rc;
}

/*
** MaxRoiPool (Fast R-CNN's RoI pooling): each region (batch index, x1, y1, x2,
** y2, in input coordinates times spatial_scale, rounded) is split into
** pooled_shape bins, floor to ceil, and each bin takes its maximum; an empty
** bin gives 0.
*/
static int k_max_roi_pool(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 2 || !in[0] || !in[1] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "MaxRoiPool %s: needs X and rois", nm);
    tensor *X = in[0], *R = in[1];
    const Onnx__AttributeProto *ps = graph_attr(n, "pooled_shape");
    if (X->rank != 4 || R->rank != 2 || R->dims[1] != 5 || !ps || ps->n_ints != 2 ||
        ps->ints[0] < 1 || ps->ints[1] < 1)
        return err_set(err, TILEOPT_INVALID, "MaxRoiPool %s: needs X [N, C, H, W], rois "
                       "[num_rois, 5] and a pooled_shape of two positive dims", nm);
    double scale = graph_attr_float(n, "spatial_scale", 1.0f);
    int64_t N = X->dims[0], C = X->dims[1], H = X->dims[2], W = X->dims[3];
    int64_t PH = ps->ints[0], PW = ps->ints[1], nr = R->dims[0];
    int64_t od[4] = {nr, C, PH, PW};
    tensor *x = NULL, *r = NULL, *y = NULL;
    int rc = eval_cast(X, DT_DOUBLE, env, &x, err);
    if (!rc) rc = eval_cast(R, DT_DOUBLE, env, &r, err);
    if (!rc) rc = tensor_alloc(DT_DOUBLE, od, 4, env, &y, err);
    for (int64_t k = 0; !rc && k < nr; k++) {
        const double *roi = dvals(r) + k * 5;
        int64_t b = (int64_t)roi[0];
        if (!(roi[0] >= 0 && roi[0] < (double)N)) {
            rc = err_set(err, TILEOPT_INVALID, "MaxRoiPool %s: region %lld names batch %g of %lld",
                         nm, (long long)k, roi[0], (long long)N);
            break;
        }
        double x1 = round(roi[1] * scale), y1 = round(roi[2] * scale);
        double x2 = round(roi[3] * scale), y2 = round(roi[4] * scale);
        double bw = fmax(x2 - x1 + 1, 1) / (double)PW, bh = fmax(y2 - y1 + 1, 1) / (double)PH;
        for (int64_t c = 0; c < C; c++) {
            const double *plane = dvals(x) + (b * C + c) * H * W;
            double *out = dvals(y) + (k * C + c) * PH * PW;
            for (int64_t i = 0; i < PH; i++)
                for (int64_t j = 0; j < PW; j++) {
                    double h0 = fmin(fmax(floor((double)i * bh) + y1, 0), (double)H);
                    double h1 = fmin(fmax(ceil((double)(i + 1) * bh) + y1, 0), (double)H);
                    double w0 = fmin(fmax(floor((double)j * bw) + x1, 0), (double)W);
                    double w1 = fmin(fmax(ceil((double)(j + 1) * bw) + x1, 0), (double)W);
                    double m = h1 > h0 && w1 > w0 ? -INFINITY : 0;
                    for (int64_t yy = (int64_t)h0; yy < (int64_t)h1; yy++)
                        for (int64_t xx = (int64_t)w0; xx < (int64_t)w1; xx++)
                            m = fmax(m, plane[yy * W + xx]);
                    out[i * PW + j] = m;
                }
        }
    }
    tensor_free(x);
    tensor_free(r);
    if (!rc) rc = nn_output(&y, X->elem, env, err);
    if (rc) {
        tensor_free(y);
        return rc;
    }
    out[0] = y;
    return TILEOPT_OK;
}

const kernel_def kernel_table_detect[] = {
    {OP_NonMaxSuppression, 10, k_nms},
    {OP_RoiAlign, 10, k_roi_align},
    {OP_GridSample, 16, k_grid_sample},
    {OP_MaxRoiPool, 1, k_max_roi_pool},
};
const size_t kernel_table_detect_count = countof(kernel_table_detect);

/*
** Convolution: Conv through im2col and BLAS, ConvTranspose through BLAS and
** col2im (a 1x1 convolution with unit
** strides and no padding reads its input as the matrix itself), in float for
** FLOAT and the 16-bit floats and in double for DOUBLE, over any number of
** spatial axes, with groups, strides, dilations, pads and auto_pad. Also the
** window geometry the pooling ops share (nn_window_make).
*/
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"

/* ------------------------------------------------------------- the window */

/* Attribute `name` as ns values (or 2*ns for pads), else def. */
static int ints_attr(const Onnx__NodeProto *n, const char *name, int32_t count, int64_t def,
                     int64_t *out, errbuf *err) {
    const Onnx__AttributeProto *a = graph_attr(n, name);
    for (int32_t i = 0; i < count; i++) out[i] = def;
    if (!a || a->n_ints == 0) return TILEOPT_OK;
    if (a->n_ints != (size_t)count)
        return err_set(err, TILEOPT_INVALID, "%s has %zu values for %d", name, a->n_ints,
                       (int)count);
    for (int32_t i = 0; i < count; i++) out[i] = a->ints[i];
    return TILEOPT_OK;
}

int nn_window_make(const Onnx__NodeProto *n, int32_t ns, const int64_t *in_dims,
                   const int64_t *kernel, bool ceil_mode, nn_window *w, errbuf *err) {
    if (ns < 1 || ns > NN_MAX_SPATIAL)
        return err_set(err, TILEOPT_UNSUPPORTED, "%d spatial axes", (int)ns);
    w->ns = ns;
    int64_t pads[2 * NN_MAX_SPATIAL];
    int rc;
    if ((rc = ints_attr(n, "strides", ns, 1, w->stride, err)) ||
        (rc = ints_attr(n, "dilations", ns, 1, w->dil, err)) ||
        (rc = ints_attr(n, "pads", 2 * ns, 0, pads, err)))
        return rc;
    const Onnx__AttributeProto *ap = graph_attr(n, "auto_pad");
    char mode[16] = "NOTSET";
    if (ap && ap->s.len && ap->s.len < sizeof mode) {
        memcpy(mode, ap->s.data, ap->s.len);
        mode[ap->s.len] = 0;
    }
    bool same_upper = !strcmp(mode, "SAME_UPPER"), same_lower = !strcmp(mode, "SAME_LOWER");
    bool valid = !strcmp(mode, "VALID");
    if (!same_upper && !same_lower && !valid && strcmp(mode, "NOTSET"))
        return err_set(err, TILEOPT_INVALID, "auto_pad '%s'", mode);
    for (int32_t i = 0; i < ns; i++) {
        int64_t d = in_dims[i], k = kernel[i], s = w->stride[i], dl = w->dil[i];
        if (d < 0 || k < 1 || s < 1 || dl < 1 || pads[i] < 0 || pads[i + ns] < 0)
            return err_set(err, TILEOPT_INVALID,
                           "axis %d: input %lld, kernel %lld, stride %lld, dilation %lld, "
                           "pads %lld/%lld", (int)i, (long long)d, (long long)k,
                           (long long)s, (long long)dl, (long long)pads[i],
                           (long long)pads[i + ns]);
        int64_t span;
        if (!eval_mul_i64(k - 1, dl, &span) || span > INT64_MAX / 4)
            return err_set(err, TILEOPT_INVALID, "axis %d: kernel span overflows", (int)i);
        span += 1;
        w->in[i] = d;
        w->k[i] = k;
        if (same_upper || same_lower) {
            int64_t o = (d + s - 1) / s;
            int64_t total = (o - 1) * s + span - d;
            if (total < 0) total = 0;
            w->pad_b[i] = same_upper ? total / 2 : total - total / 2;
            w->pad_e[i] = total - w->pad_b[i];
            w->out[i] = o;
            continue;
        }
        w->pad_b[i] = valid ? 0 : pads[i];
        w->pad_e[i] = valid ? 0 : pads[i + ns];
        if (pads[i] > INT64_MAX / 4 || pads[i + ns] > INT64_MAX / 4 || d > INT64_MAX / 4)
            return err_set(err, TILEOPT_INVALID, "axis %d: pads overflow", (int)i);
        int64_t room = d + w->pad_b[i] + w->pad_e[i] - span;
        if (room < 0) {
            w->out[i] = 0;
            continue;
        }
        int64_t o = (ceil_mode ? (room + s - 1) / s : room / s) + 1;
        /* a window must start inside the input or its leading pad */
        if (ceil_mode && (o - 1) * s >= d + w->pad_b[i]) o--;
        w->out[i] = o;
    }
    return TILEOPT_OK;
}

/* ------------------------------------------------------------------- im2col */

/* col[(c, kernel offset), output position] for one image and one group of cg
** channels starting at x; zero where the window reads padding. */
#define IM2COL(T)                                                                      \
    static void im2col_##T(const T *x, int64_t cg, const nn_window *w, T *col) {       \
        int32_t ns = w->ns;                                                            \
        int64_t isz = 1, osz = 1, ksz = 1, istr[NN_MAX_SPATIAL];                       \
        for (int32_t d = ns - 1; d >= 0; d--) {                                        \
            istr[d] = isz;                                                             \
            isz *= w->in[d];                                                           \
            osz *= w->out[d];                                                          \
            ksz *= w->k[d];                                                            \
        }                                                                              \
        for (int64_t c = 0; c < cg; c++) {                                             \
            const T *xc = x + c * isz;                                                 \
            for (int64_t kk = 0; kk < ksz; kk++) {                                     \
                int64_t base[NN_MAX_SPATIAL], rem = kk;                                \
                for (int32_t d = ns - 1; d >= 0; d--) {                                \
                    base[d] = (rem % w->k[d]) * w->dil[d] - w->pad_b[d];               \
                    rem /= w->k[d];                                                    \
                }                                                                      \
                T *row = col + (c * ksz + kk) * osz;                                   \
                int64_t o[NN_MAX_SPATIAL] = {0};                                       \
                for (int64_t p = 0; p < osz; p++) {                                    \
                    int64_t off = 0;                                                   \
                    bool in = true;                                                    \
                    for (int32_t d = 0; d < ns && in; d++) {                           \
                        int64_t ic = o[d] * w->stride[d] + base[d];                    \
                        in = ic >= 0 && ic < w->in[d];                                 \
                        off += ic * istr[d];                                           \
                    }                                                                  \
                    row[p] = in ? xc[off] : (T)0;                                      \
                    for (int32_t d = ns - 1; d >= 0 && ++o[d] == w->out[d]; d--)       \
                        o[d] = 0;                                                      \
                }                                                                      \
            }                                                                          \
        }                                                                              \
    }
IM2COL(float)
IM2COL(double)

/* ---------------------------------------------------------------------- Conv */

static bool is_pointwise(const nn_window *w) {
    for (int32_t d = 0; d < w->ns; d++)
        if (w->k[d] != 1 || w->stride[d] != 1 || w->pad_b[d] || w->pad_e[d]) return false;
    return true;
}

int nn_conv(const Onnx__NodeProto *n, tensor *X, tensor *W, tensor *B, const eval_env *env,
            tensor **out, errbuf *err) {
    const char *nm = eval_node_name(n);
    *out = NULL;
    int32_t ns = X->rank - 2;
    if (X->rank < 3 || W->rank != X->rank)
        return err_set(err, TILEOPT_INVALID, "Conv %s: X of rank %d, W of rank %d", nm,
                       (int)X->rank, (int)W->rank);
    if (W->elem != X->elem || (B && B->elem != X->elem))
        return err_set(err, TILEOPT_INVALID, "Conv %s: operands of different types", nm);
    int64_t N = X->dims[0], C = X->dims[1], M = W->dims[0], group = graph_attr_int(n, "group", 1);
    if (group < 1 || C % group || M % group || W->dims[1] != C / group)
        return err_set(err, TILEOPT_INVALID,
                       "Conv %s: %lld input channels, W [%lld, %lld, ...], group %lld", nm,
                       (long long)C, (long long)M, (long long)W->dims[1], (long long)group);
    if (B && (B->rank != 1 || B->dims[0] != M))
        return err_set(err, TILEOPT_INVALID, "Conv %s: B must be [%lld]", nm, (long long)M);
    int64_t kernel[NN_MAX_SPATIAL];
    if (ns > NN_MAX_SPATIAL)
        return err_set(err, TILEOPT_UNSUPPORTED, "Conv %s: %d spatial axes", nm, (int)ns);
    for (int32_t d = 0; d < ns; d++) kernel[d] = W->dims[2 + d];
    const Onnx__AttributeProto *ks = graph_attr(n, "kernel_shape");
    for (size_t d = 0; ks && d < ks->n_ints && d < (size_t)ns; d++)
        if (ks->ints[d] != kernel[d])
            return err_set(err, TILEOPT_INVALID, "Conv %s: kernel_shape disagrees with W", nm);
    nn_window w;
    int rc = nn_window_make(n, ns, X->dims + 2, kernel, false, &w, err);
    if (rc) return err_prefix(err, "Conv %s: ", nm);
    int64_t od[TENSOR_MAX_RANK] = {N, M};
    int64_t osz = 1, isz = 1, ksz = 1;
    for (int32_t d = 0; d < ns; d++) {
        od[2 + d] = w.out[d];
        osz *= w.out[d];
        isz *= w.in[d];
        ksz *= w.k[d];
    }
    int64_t cg = C / group, mg = M / group, rows = cg * ksz;
    if (rows > INT_MAX || osz > INT_MAX || mg > INT_MAX)
        return err_set(err, TILEOPT_LIMIT, "Conv %s: a matrix exceeds what BLAS takes", nm);
    tensor *x = NULL, *wt = NULL, *b = NULL, *o = NULL;
    void *col = NULL;
    if ((rc = nn_input(X, "Conv", env, &x, err)) || (rc = nn_input(W, "Conv", env, &wt, err)) ||
        (B && (rc = nn_input(B, "Conv", env, &b, err))) ||
        (rc = tensor_alloc(x->elem, od, X->rank, env, &o, err)))
        goto done;
    size_t es = x->elem == DT_DOUBLE ? 8 : 4;
    bool direct = is_pointwise(&w);
    uint64_t col_bytes;
    if (!direct) {
        if (!eval_mul_u64((uint64_t)rows * (uint64_t)osz, es, &col_bytes) ||
            (env && env->lim.max_tensor_bytes && col_bytes > env->lim.max_tensor_bytes)) {
            rc = err_set(err, TILEOPT_LIMIT, "Conv %s: its im2col matrix is over the tensor "
                         "size limit", nm);
            goto done;
        }
        if (!(col = malloc(col_bytes ? col_bytes : 1))) {
            rc = err_set(err, TILEOPT_NOMEM, "out of memory");
            goto done;
        }
    }
    for (int64_t i = 0; i < N; i++)
        for (int64_t g = 0; g < group; g++) {
            const uint8_t *xg = x->data + (size_t)((i * C + g * cg) * isz) * es;
            const void *mat = xg;
            if (!direct) {
                if (es == 8) im2col_double((const double *)(const void *)xg, cg, &w, col);
                else im2col_float((const float *)(const void *)xg, cg, &w, col);
                mat = col;
            }
            uint8_t *yg = o->data + (size_t)((i * M + g * mg) * osz) * es;
            nn_gemm(x->elem, false, false, mg, osz, rows, 1.0,
                    wt->data + (size_t)(g * mg * rows) * es, rows, mat, osz, 0.0, yg, osz);
            for (int64_t m = 0; b && m < mg; m++) {
                if (es == 8) {
                    double bv = ((const double *)(const void *)b->data)[g * mg + m];
                    double *y = (double *)(void *)yg + m * osz;
                    for (int64_t p = 0; p < osz; p++) y[p] += bv;
                } else {
                    float bv = ((const float *)(const void *)b->data)[g * mg + m];
                    float *y = (float *)(void *)yg + m * osz;
                    for (int64_t p = 0; p < osz; p++) y[p] += bv;
                }
            }
        }
    rc = nn_output(&o, X->elem, env, err);
done:
    free(col);
    tensor_free(x);
    tensor_free(wt);
    tensor_free(b);
    if (rc) {
        tensor_free(o);
        return rc == TILEOPT_NOMEM ? rc : (int)err_prefix(err, "Conv %s: ", nm);
    }
    *out = o;
    return TILEOPT_OK;
}

static int k_conv(KERNEL_PARAMS) {
    (void)opset;
    if (n_in < 2 || !in[0] || !in[1] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "Conv %s: needs X and W", eval_node_name(n));
    return nn_conv(n, in[0], in[1], n_in > 2 ? in[2] : NULL, env, &out[0], err);
}

/* ------------------------------------------------------------ ConvTranspose */

/* The output size and pads of ConvTranspose along each axis: from output_shape
** (pads derived, the extra going to the end for SAME_UPPER and to the start
** otherwise), auto_pad SAME (output = input * stride) or explicit pads. */
static int deconv_geometry(const Onnx__NodeProto *n, int32_t ns, const int64_t *in,
                           const int64_t *k, int64_t *stride, int64_t *dil, int64_t *pb,
                           int64_t *pe, int64_t *outd, errbuf *err) {
    int64_t pads[2 * NN_MAX_SPATIAL], opad[NN_MAX_SPATIAL], oshape[NN_MAX_SPATIAL];
    int rc;
    if ((rc = ints_attr(n, "strides", ns, 1, stride, err)) ||
        (rc = ints_attr(n, "dilations", ns, 1, dil, err)) ||
        (rc = ints_attr(n, "pads", 2 * ns, 0, pads, err)) ||
        (rc = ints_attr(n, "output_padding", ns, 0, opad, err)))
        return rc;
    const Onnx__AttributeProto *os = graph_attr(n, "output_shape");
    const Onnx__AttributeProto *ap = graph_attr(n, "auto_pad");
    bool same = ap && ap->s.len > 5 && !memcmp(ap->s.data, "SAME_", 5);
    bool upper = same && ap->s.len == 10 && !memcmp(ap->s.data, "SAME_UPPER", 10);
    bool valid = ap && ap->s.len == 5 && !memcmp(ap->s.data, "VALID", 5);
    if (os && os->n_ints) {
        /* output_shape may list the spatial dims alone or all of them */
        if (os->n_ints != (size_t)ns && os->n_ints != (size_t)ns + 2)
            return err_set(err, TILEOPT_INVALID, "output_shape has %zu values", os->n_ints);
        for (int32_t d = 0; d < ns; d++) oshape[d] = os->ints[os->n_ints - (size_t)ns + (size_t)d];
    }
    for (int32_t d = 0; d < ns; d++) {
        if (in[d] < 0 || k[d] < 1 || stride[d] < 1 || dil[d] < 1 || opad[d] < 0 ||
            in[d] > INT64_MAX / 8 / stride[d] || k[d] > INT64_MAX / 8 / dil[d])
            return err_set(err, TILEOPT_INVALID, "axis %d: input %lld, kernel %lld, stride "
                           "%lld, dilation %lld", (int)d, (long long)in[d], (long long)k[d],
                           (long long)stride[d], (long long)dil[d]);
        int64_t full = stride[d] * (in[d] - 1) + opad[d] + (k[d] - 1) * dil[d] + 1;
        if ((os && os->n_ints) || same) {
            int64_t want = (os && os->n_ints) ? oshape[d] : in[d] * stride[d];
            int64_t total = full - want;
            if (total < 0) total = 0;
            pb[d] = upper ? total / 2 : total - total / 2;
            pe[d] = total - pb[d];
            outd[d] = want;
        } else {
            pb[d] = valid ? 0 : pads[d];
            pe[d] = valid ? 0 : pads[d + ns];
            outd[d] = full - pb[d] - pe[d];
        }
        if (outd[d] < 0 || pb[d] < 0 || pe[d] < 0)
            return err_set(err, TILEOPT_INVALID, "axis %d: output size %lld", (int)d,
                           (long long)outd[d]);
    }
    return TILEOPT_OK;
}

/* Y = col2im(W_g^T X_g) per image and group, plus the bias. */
#define COL2IM(T)                                                                      \
    static void col2im_##T(const T *col, int64_t mg, int32_t ns, const int64_t *in,    \
                           const int64_t *k, const int64_t *st, const int64_t *dl,       \
                           const int64_t *pb, const int64_t *od, T *y) {                 \
        int64_t isz = 1, osz = 1, ksz = 1, ostr[NN_MAX_SPATIAL];                       \
        for (int32_t d = ns - 1; d >= 0; d--) {                                        \
            ostr[d] = osz;                                                             \
            osz *= od[d];                                                              \
            isz *= in[d];                                                              \
            ksz *= k[d];                                                               \
        }                                                                              \
        for (int64_t m = 0; m < mg; m++)                                               \
            for (int64_t kk = 0; kk < ksz; kk++) {                                     \
                int64_t base[NN_MAX_SPATIAL], rem = kk;                                \
                for (int32_t d = ns - 1; d >= 0; d--) {                                \
                    base[d] = (rem % k[d]) * dl[d] - pb[d];                            \
                    rem /= k[d];                                                       \
                }                                                                      \
                const T *row = col + (m * ksz + kk) * isz;                             \
                int64_t p[NN_MAX_SPATIAL] = {0};                                       \
                for (int64_t q = 0; q < isz; q++) {                                    \
                    int64_t off = 0;                                                   \
                    bool inside = true;                                                \
                    for (int32_t d = 0; d < ns && inside; d++) {                       \
                        int64_t oc = p[d] * st[d] + base[d];                           \
                        inside = oc >= 0 && oc < od[d];                                \
                        off += oc * ostr[d];                                           \
                    }                                                                  \
                    if (inside) y[m * osz + off] += row[q];                            \
                    for (int32_t d = ns - 1; d >= 0 && ++p[d] == in[d]; d--) p[d] = 0; \
                }                                                                      \
            }                                                                          \
    }
COL2IM(float)
COL2IM(double)

static int k_conv_transpose(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 2 || !in[0] || !in[1] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "ConvTranspose %s: needs X and W", nm);
    tensor *X = in[0], *W = in[1], *B = n_in > 2 ? in[2] : NULL;
    int32_t ns = X->rank - 2;
    if (X->rank < 3 || W->rank != X->rank || ns > NN_MAX_SPATIAL)
        return err_set(err, TILEOPT_INVALID, "ConvTranspose %s: X of rank %d, W of rank %d",
                       nm, (int)X->rank, (int)W->rank);
    if (W->elem != X->elem || (B && B->elem != X->elem))
        return err_set(err, TILEOPT_INVALID, "ConvTranspose %s: operands of different types",
                       nm);
    int64_t N = X->dims[0], C = X->dims[1], group = graph_attr_int(n, "group", 1);
    if (group < 1 || C % group || W->dims[0] != C)
        return err_set(err, TILEOPT_INVALID, "ConvTranspose %s: %lld input channels, W [%lld, "
                       "...], group %lld", nm, (long long)C, (long long)W->dims[0],
                       (long long)group);
    int64_t mg = W->dims[1], M = mg * group, cg = C / group;
    if (B && (B->rank != 1 || B->dims[0] != M))
        return err_set(err, TILEOPT_INVALID, "ConvTranspose %s: B must be [%lld]", nm,
                       (long long)M);
    int64_t k[NN_MAX_SPATIAL], st[NN_MAX_SPATIAL], dl[NN_MAX_SPATIAL], pb[NN_MAX_SPATIAL],
        pe[NN_MAX_SPATIAL], od[TENSOR_MAX_RANK] = {N, M};
    for (int32_t d = 0; d < ns; d++) k[d] = W->dims[2 + d];
    int rc = deconv_geometry(n, ns, X->dims + 2, k, st, dl, pb, pe, od + 2, err);
    if (rc) return err_prefix(err, "ConvTranspose %s: ", nm);
    int64_t isz = 1, osz = 1, ksz = 1;
    for (int32_t d = 0; d < ns; d++) {
        isz *= X->dims[2 + d];
        osz *= od[2 + d];
        ksz *= k[d];
    }
    int64_t rows = mg * ksz;
    if (rows > INT_MAX || isz > INT_MAX || cg > INT_MAX)
        return err_set(err, TILEOPT_LIMIT, "ConvTranspose %s: a matrix exceeds what BLAS takes",
                       nm);
    tensor *x = NULL, *wt = NULL, *b = NULL, *o = NULL;
    void *col = NULL;
    if ((rc = nn_input(X, "ConvTranspose", env, &x, err)) ||
        (rc = nn_input(W, "ConvTranspose", env, &wt, err)) ||
        (B && (rc = nn_input(B, "ConvTranspose", env, &b, err))) ||
        (rc = tensor_new(x->elem, od, X->rank, env, &o, err)))
        goto done;
    size_t es = x->elem == DT_DOUBLE ? 8 : 4;
    uint64_t col_bytes;
    if (!eval_mul_u64((uint64_t)rows * (uint64_t)isz, es, &col_bytes) ||
        (env && env->lim.max_tensor_bytes && col_bytes > env->lim.max_tensor_bytes)) {
        rc = err_set(err, TILEOPT_LIMIT, "ConvTranspose %s: its column matrix is over the "
                     "tensor size limit", nm);
        goto done;
    }
    if (!(col = malloc(col_bytes ? col_bytes : 1))) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < N; i++)
        for (int64_t g = 0; g < group; g++) {
            const uint8_t *xg = x->data + (size_t)((i * C + g * cg) * isz) * es;
            const uint8_t *wg = wt->data + (size_t)(g * cg * rows) * es;
            nn_gemm(x->elem, true, false, rows, isz, cg, 1.0, wg, rows, xg, isz, 0.0, col, isz);
            uint8_t *yg = o->data + (size_t)((i * M + g * mg) * osz) * es;
            if (es == 8)
                col2im_double(col, mg, ns, X->dims + 2, k, st, dl, pb, od + 2,
                              (double *)(void *)yg);
            else
                col2im_float(col, mg, ns, X->dims + 2, k, st, dl, pb, od + 2,
                             (float *)(void *)yg);
            for (int64_t m = 0; b && m < mg; m++)
                for (int64_t p = 0; p < osz; p++) {
                    if (es == 8)
                        ((double *)(void *)yg)[m * osz + p] +=
                            ((const double *)(const void *)b->data)[g * mg + m];
                    else
                        ((float *)(void *)yg)[m * osz + p] +=
                            ((const float *)(const void *)b->data)[g * mg + m];
                }
        }
    rc = nn_output(&o, X->elem, env, err);
done:
    free(col);
    tensor_free(x);
    tensor_free(wt);
    tensor_free(b);
    if (rc) {
        tensor_free(o);
        return rc == TILEOPT_NOMEM ? rc : (int)err_prefix(err, "ConvTranspose %s: ", nm);
    }
    out[0] = o;
    return TILEOPT_OK;
}

/* -------------------------------------------------------------------- table */

const kernel_def kernel_table_conv[] = {
    {OP_Conv, 1, k_conv},
    {OP_ConvTranspose, 1, k_conv_transpose},
};
const size_t kernel_table_conv_count = countof(kernel_table_conv);

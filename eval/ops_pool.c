/*
** Pooling: MaxPool (with its Indices output), AveragePool, LpPool,
** GlobalAveragePool, GlobalMaxPool and GlobalLpPool, and MaxUnpool, over any number of spatial axes. Values are
** read as double and the result goes back to the input's element type, which
** is exact for the maximum of any type and rounds an average once.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"

typedef enum { POOL_MAX, POOL_AVG, POOL_LP } pool_kind;

/* Kernel attribute, required by every windowed pooling op. */
static int pool_kernel(const Onnx__NodeProto *n, int32_t ns, int64_t *k, errbuf *err) {
    const Onnx__AttributeProto *a = graph_attr(n, "kernel_shape");
    if (!a || a->n_ints != (size_t)ns)
        return err_set(err, TILEOPT_INVALID, "kernel_shape must have %d values", (int)ns);
    for (int32_t d = 0; d < ns; d++) k[d] = a->ints[d];
    return TILEOPT_OK;
}

/* LpPool's p: a float before opset 2, an int from then on. */
static double lp_exponent(const Onnx__NodeProto *n) {
    const Onnx__AttributeProto *a = graph_attr(n, "p");
    if (!a) return 2;
    return a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT ? (double)a->f : (double)a->i;
}

static int pool(const Onnx__NodeProto *n, int64_t opset, pool_kind kind, tensor *const *in,
                size_t n_in, tensor **out, size_t n_out, const eval_env *env,
                errbuf *err) {
    const char *nm = eval_node_name(n);
    if (n_in < 1 || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "%s %s: needs X", n->op_type, nm);
    tensor *X = in[0];
    int32_t ns = X->rank - 2;
    if (ns < 1 || ns > NN_MAX_SPATIAL)
        return err_set(err, TILEOPT_INVALID, "%s %s: X of rank %d", n->op_type, nm,
                       (int)X->rank);
    int64_t k[NN_MAX_SPATIAL];
    nn_window w;
    bool ceil_mode = opset >= 10 && graph_attr_int(n, "ceil_mode", 0);
    int rc = pool_kernel(n, ns, k, err);
    if (!rc) rc = nn_window_make(n, ns, X->dims + 2, k, ceil_mode, &w, err);
    if (rc) return err_prefix(err, "%s %s: ", n->op_type, nm);
    bool include_pad = kind == POOL_AVG && graph_attr_int(n, "count_include_pad", 0);
    double p_norm = kind == POOL_LP ? lp_exponent(n) : 0;
    bool col_major = graph_attr_int(n, "storage_order", 0) != 0;
    bool want_idx = kind == POOL_MAX && n_out > 1 && n->output[1] && n->output[1][0];
    int64_t od[TENSOR_MAX_RANK] = {X->dims[0], X->dims[1]};
    int64_t isz = 1, osz = 1, ksz = 1, istr[NN_MAX_SPATIAL];
    for (int32_t d = ns - 1; d >= 0; d--) {
        istr[d] = isz;
        isz *= w.in[d];
        osz *= w.out[d];
        ksz *= w.k[d];
        od[2 + d] = w.out[d];
    }
    tensor *x = NULL, *y = NULL, *idx = NULL;
    if ((rc = eval_cast(X, DT_DOUBLE, env, &x, err)) ||
        (rc = tensor_alloc(DT_DOUBLE, od, X->rank, env, &y, err)) ||
        (want_idx && (rc = tensor_alloc(DT_INT64, od, X->rank, env, &idx, err))))
        goto done;
    const double *xv = (const double *)(const void *)x->data;
    double *yv = (double *)(void *)y->data;
    int64_t *iv = idx ? (int64_t *)(void *)idx->data : NULL;
    int64_t planes = X->dims[0] * X->dims[1];
    for (int64_t pl = 0; pl < planes; pl++) {
        const double *xp = xv + pl * isz;
        int64_t o[NN_MAX_SPATIAL] = {0};
        for (int64_t p = 0; p < osz; p++) {
            double acc = kind == POOL_MAX ? -INFINITY : 0;
            int64_t count = 0, arg = -1;
            int64_t kk[NN_MAX_SPATIAL] = {0};
            for (int64_t q = 0; q < ksz; q++) {
                int64_t off = 0;
                bool inside = true, padded = true;
                for (int32_t d = 0; d < ns; d++) {
                    int64_t ic = o[d] * w.stride[d] + kk[d] * w.dil[d] - w.pad_b[d];
                    inside = inside && ic >= 0 && ic < w.in[d];
                    padded = padded && ic >= -w.pad_b[d] && ic < w.in[d] + w.pad_e[d];
                    off += ic * istr[d];
                }
                if (inside) {
                    double v = xp[off];
                    if (kind == POOL_AVG) acc += v;
                    else if (kind == POOL_LP) acc += pow(fabs(v), p_norm);
                    else if (v > acc || arg < 0) {
                        acc = v;
                        arg = off;
                    }
                }
                count += include_pad ? padded : inside;
                for (int32_t d = ns - 1; d >= 0 && ++kk[d] == w.k[d]; d--) kk[d] = 0;
            }
            yv[pl * osz + p] = kind == POOL_AVG  ? (count ? acc / (double)count : NAN)
                               : kind == POOL_LP ? pow(acc, 1.0 / p_norm)
                                                 : acc;
            if (iv) {
                /* the flat index into X, row-major or (storage_order=1) column-major
                ** within the image plane */
                int64_t local = arg < 0 ? 0 : arg;
                if (col_major) {
                    int64_t c[NN_MAX_SPATIAL], rem = local, cm = 0, mul = 1;
                    for (int32_t d = ns - 1; d >= 0; d--) {
                        c[d] = rem % w.in[d];
                        rem /= w.in[d];
                    }
                    for (int32_t d = 0; d < ns; d++) {
                        cm += c[d] * mul;
                        mul *= w.in[d];
                    }
                    local = cm;
                }
                iv[pl * osz + p] = pl * isz + local;
            }
            for (int32_t d = ns - 1; d >= 0 && ++o[d] == w.out[d]; d--) o[d] = 0;
        }
    }
    rc = nn_output(&y, X->elem, env, err);
done:
    tensor_free(x);
    if (rc) {
        tensor_free(y);
        tensor_free(idx);
        return rc == TILEOPT_NOMEM ? rc : (int)err_prefix(err, "%s %s: ", n->op_type, nm);
    }
    out[0] = y;
    if (want_idx) out[1] = idx;
    return TILEOPT_OK;
}

static int k_max_pool(KERNEL_PARAMS) { return pool(n, opset, POOL_MAX, in, n_in, out, n_out, env, err); }
static int k_average_pool(KERNEL_PARAMS) { return pool(n, opset, POOL_AVG, in, n_in, out, n_out, env, err); }
static int k_lp_pool(KERNEL_PARAMS) { return pool(n, opset, POOL_LP, in, n_in, out, n_out, env, err); }

/* MaxUnpool: X's values placed at the flat Indices (as MaxPool gives them)
** of the unpooled shape (N, C, (in - 1) * stride + kernel - pads), zeros
** elsewhere; an output_shape input larger than that keeps each value at the
** same coordinates and pads the end of every spatial axis with zeros. */
static int k_max_unpool(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 2 || !in[0] || !in[1] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "MaxUnpool %s: needs X and I", nm);
    tensor *X = in[0], *I = in[1];
    int32_t ns = X->rank - 2;
    if (ns < 1 || ns > NN_MAX_SPATIAL || I->rank != X->rank ||
        memcmp(I->dims, X->dims, (size_t)X->rank * sizeof *X->dims))
        return err_set(err, TILEOPT_INVALID, "MaxUnpool %s: X and I must have one shape of "
                       "rank 3 or more", nm);
    int64_t k[NN_MAX_SPATIAL], st[NN_MAX_SPATIAL], pads[2 * NN_MAX_SPATIAL];
    int rc = pool_kernel(n, ns, k, err);
    const Onnx__AttributeProto *sa = graph_attr(n, "strides"), *pa = graph_attr(n, "pads");
    if (!rc && ((sa && sa->n_ints != (size_t)ns) || (pa && pa->n_ints != 2 * (size_t)ns)))
        rc = err_set(err, TILEOPT_INVALID, "strides or pads of the wrong length");
    if (rc) return err_prefix(err, "MaxUnpool %s: ", nm);
    int64_t def[TENSOR_MAX_RANK] = {X->dims[0], X->dims[1]}, od[TENSOR_MAX_RANK];
    for (int32_t d = 0; d < ns; d++) {
        st[d] = sa ? sa->ints[d] : 1;
        pads[d] = pa ? pa->ints[d] : 0;
        pads[ns + d] = pa ? pa->ints[ns + d] : 0;
        def[2 + d] = (X->dims[2 + d] - 1) * st[d] + k[d] - pads[d] - pads[ns + d];
        if (st[d] < 1 || k[d] < 1 || def[2 + d] < 0)
            return err_set(err, TILEOPT_INVALID, "MaxUnpool %s: bad kernel, stride or pads", nm);
    }
    memcpy(od, def, sizeof od);
    if (n_in > 2 && in[2]) {
        size_t c = 0;
        if (!tensor_to_i64(in[2], od, TENSOR_MAX_RANK, &c) || c != (size_t)X->rank)
            return err_set(err, TILEOPT_INVALID, "MaxUnpool %s: output_shape must have %d "
                           "values", nm, (int)X->rank);
        for (int32_t d = 0; d < X->rank; d++)
            if (od[d] < def[d] || (d < 2 && od[d] != def[d]))
                return err_set(err, TILEOPT_INVALID, "MaxUnpool %s: output_shape smaller "
                               "than the unpooled shape", nm);
    }
    tensor *y = NULL, *idx = NULL;
    if ((rc = tensor_new(X->elem, od, X->rank, env, &y, err)) ||
        (rc = eval_cast(I, DT_INT64, env, &idx, err)))
        goto done;
    tensor *x = NULL;
    if ((rc = tensor_contiguous(X, env, &x, err))) goto done;
    size_t es = tensor_elem_size(X);
    uint64_t total = 1;
    for (int32_t d = 0; d < X->rank; d++) total *= (uint64_t)def[d];
    const int64_t *iv = (const int64_t *)(const void *)idx->data;
    for (uint64_t e = 0; e < tensor_numel(x) && !rc; e++) {
        int64_t f = iv[e];
        if (f < 0 || (uint64_t)f >= total) {
            rc = err_set(err, TILEOPT_INVALID, "MaxUnpool %s: index %lld outside the %llu "
                         "elements of the unpooled shape", nm, (long long)f,
                         (unsigned long long)total);
            break;
        }
        /* the coordinates of f in the unpooled shape, at their place in the output */
        int64_t off = 0, mul = 1;
        for (int32_t d = X->rank - 1; d >= 0; d--) {
            off += (f % def[d]) * mul;
            f /= def[d];
            mul *= od[d];
        }
        memcpy(y->data + (size_t)off * es, x->data + (size_t)e * es, es);
    }
    tensor_free(x);
done:
    tensor_free(idx);
    if (rc) {
        tensor_free(y);
        return rc;
    }
    out[0] = y;
    return TILEOPT_OK;
}

typedef enum { GLOBAL_AVG, GLOBAL_MAX, GLOBAL_LP } global_kind;

/* Global pooling: one value per (n, c) over every spatial position. */
static int global_pool(const Onnx__NodeProto *n, global_kind kind, tensor *const *in,
                       size_t n_in, tensor **out, size_t n_out, const eval_env *env,
                       errbuf *err) {
    const char *nm = eval_node_name(n);
    if (n_in < 1 || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "%s %s: needs X", n->op_type, nm);
    tensor *X = in[0];
    if (X->rank < 2)
        return err_set(err, TILEOPT_INVALID, "%s %s: X of rank %d", n->op_type, nm,
                       (int)X->rank);
    double p = kind == GLOBAL_LP ? (double)graph_attr_int(n, "p", 2) : 0;
    int64_t od[TENSOR_MAX_RANK], sp = 1;
    for (int32_t d = 0; d < X->rank; d++) {
        od[d] = d < 2 ? X->dims[d] : 1;
        if (d >= 2) sp *= X->dims[d];
    }
    tensor *x = NULL, *y = NULL;
    int rc;
    if ((rc = eval_cast(X, DT_DOUBLE, env, &x, err)) ||
        (rc = tensor_alloc(DT_DOUBLE, od, X->rank, env, &y, err)))
        goto done;
    const double *xv = (const double *)(const void *)x->data;
    double *yv = (double *)(void *)y->data;
    for (int64_t pl = 0; pl < X->dims[0] * X->dims[1]; pl++) {
        const double *xp = xv + pl * sp;
        double acc = kind == GLOBAL_MAX ? -INFINITY : 0;
        for (int64_t i = 0; i < sp; i++) {
            if (kind == GLOBAL_MAX) acc = xp[i] > acc ? xp[i] : acc;
            else if (kind == GLOBAL_AVG) acc += xp[i];
            else acc += pow(fabs(xp[i]), p);
        }
        yv[pl] = kind == GLOBAL_AVG ? (sp ? acc / (double)sp : NAN)
                 : kind == GLOBAL_LP ? pow(acc, 1.0 / p)
                                     : acc;
    }
    rc = nn_output(&y, X->elem, env, err);
done:
    tensor_free(x);
    if (rc) {
        tensor_free(y);
        return rc;
    }
    out[0] = y;
    return TILEOPT_OK;
}

static int k_global_average_pool(KERNEL_PARAMS) {
    (void)opset;
    return global_pool(n, GLOBAL_AVG, in, n_in, out, n_out, env, err);
}
static int k_global_max_pool(KERNEL_PARAMS) {
    (void)opset;
    return global_pool(n, GLOBAL_MAX, in, n_in, out, n_out, env, err);
}
static int k_global_lp_pool(KERNEL_PARAMS) {
    (void)opset;
    return global_pool(n, GLOBAL_LP, in, n_in, out, n_out, env, err);
}

const kernel_def kernel_table_pool[] = {
    {OP_MaxPool, 1, k_max_pool},
    {OP_AveragePool, 1, k_average_pool},
    {OP_LpPool, 1, k_lp_pool},
    {OP_MaxUnpool, 9, k_max_unpool},
    {OP_GlobalAveragePool, 1, k_global_average_pool},
    {OP_GlobalMaxPool, 1, k_global_max_pool},
    {OP_GlobalLpPool, 2, k_global_lp_pool},
};
const size_t kernel_table_pool_count = countof(kernel_table_pool);

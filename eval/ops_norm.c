/*
** Normalization and friends: Softmax, LogSoftmax, Hardmax, BatchNormalization
** (inference and training mode), InstanceNormalization, LayerNormalization,
** LRN, LpNormalization, MeanVarianceNormalization, and Dropout (as inference
** runs it, and in training from the node's own random stream). Values are
** computed in double and go back to the input's element type once.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"

/* A contiguous double copy of t. */
static int as_double(tensor *t, const eval_env *env, tensor **out, errbuf *err) {
    return eval_cast(t, DT_DOUBLE, env, out, err);
}

static double *dv(tensor *t) { return (double *)(void *)t->data; }

/* x: X as a contiguous double tensor, y: a new double tensor of X's shape
** (both NULL on failure). */
static int double_pair(tensor *X, const eval_env *env, tensor **x, tensor **y,
                       errbuf *err) {
    *y = NULL;
    int rc = as_double(X, env, x, err);
    if (!rc) rc = tensor_alloc(DT_DOUBLE, X->dims, X->rank, env, y, err);
    if (rc) {
        tensor_free(*x);
        *x = NULL;
    }
    return rc;
}

/* out[0] = y converted to elem; y freed. */
static int emit(tensor *y, int32_t elem, const eval_env *env, tensor **out, errbuf *err) {
    int rc = nn_output(&y, elem, env, err);
    if (rc) return rc;
    out[0] = y;
    return TILEOPT_OK;
}

static int64_t prod(const int64_t *d, int32_t from, int32_t to) {
    int64_t p = 1;
    for (int32_t i = from; i < to; i++) p *= d[i];
    return p;
}

/* ------------------------------------------------------------------ softmax */

typedef enum { SM_SOFT, SM_LOG, SM_HARD } sm_kind;

/* Before opset 13 the input is read as 2-D [prod(dims[:axis]), prod(dims[axis:])]
** and each row normalized; from 13 on, only along `axis`. */
static int softmax(const Onnx__NodeProto *n, int64_t opset, sm_kind kind, tensor *const *in,
                   size_t n_in, tensor **out, size_t n_out, const eval_env *env,
                   errbuf *err) {
    const char *nm = eval_node_name(n);
    if (n_in < 1 || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "%s %s: needs an input", n->op_type, nm);
    tensor *X = in[0];
    int32_t r = X->rank;
    int64_t axis = graph_attr_int(n, "axis", opset >= 13 ? -1 : 1);
    if (axis < -r || axis >= (r ? r : 1))
        return err_set(err, TILEOPT_INVALID, "%s %s: axis %lld outside rank %d", n->op_type,
                       nm, (long long)axis, (int)r);
    if (axis < 0) axis += r;
    int64_t outer = prod(X->dims, 0, (int32_t)axis);
    int64_t len = opset >= 13 ? (r ? X->dims[axis] : 1) : prod(X->dims, (int32_t)axis, r);
    int64_t inner = opset >= 13 ? prod(X->dims, (int32_t)axis + 1, r) : 1;
    tensor *x = NULL, *y = NULL;
    int rc = double_pair(X, env, &x, &y, err);
    if (rc) return rc;
    const double *xv = dv(x);
    double *yv = dv(y);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            const double *xr = xv + o * len * inner + j;
            double *yr = yv + o * len * inner + j;
            double mx = -INFINITY;
            int64_t arg = 0;
            for (int64_t i = 0; i < len; i++)
                if (xr[i * inner] > mx) {
                    mx = xr[i * inner];
                    arg = i;
                }
            if (kind == SM_HARD) {
                for (int64_t i = 0; i < len; i++) yr[i * inner] = i == arg;
                continue;
            }
            double sum = 0;
            for (int64_t i = 0; i < len; i++) sum += exp(xr[i * inner] - mx);
            for (int64_t i = 0; i < len; i++)
                yr[i * inner] = kind == SM_LOG ? xr[i * inner] - mx - log(sum)
                                               : exp(xr[i * inner] - mx) / sum;
        }
    tensor_free(x);
    return emit(y, X->elem, env, out, err);
}

static int k_softmax(KERNEL_PARAMS) { return softmax(n, opset, SM_SOFT, in, n_in, out, n_out, env, err); }
static int k_log_softmax(KERNEL_PARAMS) { return softmax(n, opset, SM_LOG, in, n_in, out, n_out, env, err); }
static int k_hardmax(KERNEL_PARAMS) { return softmax(n, opset, SM_HARD, in, n_in, out, n_out, env, err); }

/* ------------------------------------------------------------ batch norm */

/* Per-channel parameter i of t (double, contiguous), for channel c of
** `per` elements each (spatial=0 before opset 9: one value per element). */
static int k_batch_norm(KERNEL_PARAMS) {
    const char *nm = eval_node_name(n);
    if (n_in < 5 || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "BatchNormalization %s: needs 5 inputs", nm);
    for (size_t i = 0; i < 5; i++)
        if (!in[i])
            return err_set(err, TILEOPT_INVALID, "BatchNormalization %s: input %zu missing",
                           nm, i);
    tensor *X = in[0];
    if (X->rank < 2)
        return err_set(err, TILEOPT_INVALID, "BatchNormalization %s: X of rank %d", nm,
                       (int)X->rank);
    double eps = graph_attr_float(n, "epsilon", 1e-5f);
    double momentum = graph_attr_float(n, "momentum", 0.9f);
    bool training = opset >= 14 && graph_attr_int(n, "training_mode", 0);
    /* before opset 9, spatial=0 gives every element of a sample its own statistics */
    bool spatial = opset >= 9 || graph_attr_int(n, "spatial", 1);
    int64_t N = X->dims[0], C = X->dims[1], sp = prod(X->dims, 2, X->rank);
    int64_t groups = spatial ? C : C * sp, per = spatial ? sp : 1;
    for (size_t i = 1; i < 5; i++)
        if ((int64_t)tensor_numel(in[i]) != groups)
            return err_set(err, TILEOPT_INVALID,
                           "BatchNormalization %s: input %zu has %llu values for %lld", nm, i,
                           (unsigned long long)tensor_numel(in[i]), (long long)groups);
    tensor *t[5] = {NULL}, *y = NULL, *rm = NULL, *rv = NULL;
    int rc = TILEOPT_OK;
    for (size_t i = 0; i < 5 && !rc; i++) rc = as_double(in[i], env, &t[i], err);
    if (!rc) rc = tensor_alloc(DT_DOUBLE, X->dims, X->rank, env, &y, err);
    if (!rc && training) {
        if ((rc = tensor_alloc(DT_DOUBLE, in[3]->dims, in[3]->rank, env, &rm, err)) ||
            (rc = tensor_alloc(DT_DOUBLE, in[4]->dims, in[4]->rank, env, &rv, err)))
            goto done;
    }
    if (rc) goto done;
    const double *x = dv(t[0]), *sc = dv(t[1]), *b = dv(t[2]), *mean = dv(t[3]), *var = dv(t[4]);
    double *yv = dv(y);
    for (int64_t g = 0; g < groups; g++) {
        int64_t c = spatial ? g : g / sp, s0 = spatial ? 0 : g % sp;
        double m = mean[g], v = var[g];
        if (training) {
            double sum = 0, sq = 0;
            int64_t cnt = N * per;
            for (int64_t i = 0; i < N; i++)
                for (int64_t s = 0; s < per; s++) sum += x[(i * C + c) * sp + s0 + s];
            m = cnt ? sum / (double)cnt : 0;
            for (int64_t i = 0; i < N; i++)
                for (int64_t s = 0; s < per; s++) {
                    double d = x[(i * C + c) * sp + s0 + s] - m;
                    sq += d * d;
                }
            v = cnt ? sq / (double)cnt : 0;
            dv(rm)[g] = mean[g] * momentum + m * (1 - momentum);
            dv(rv)[g] = var[g] * momentum + v * (1 - momentum);
        }
        double k = sc[g] / sqrt(v + eps);
        for (int64_t i = 0; i < N; i++)
            for (int64_t s = 0; s < per; s++) {
                int64_t at = (i * C + c) * sp + s0 + s;
                yv[at] = (x[at] - m) * k + b[g];
            }
    }
    if ((rc = nn_output(&y, X->elem, env, err))) goto done;
    if (training && n_out > 1 && (rc = nn_output(&rm, in[3]->elem, env, err))) goto done;
    if (training && n_out > 2 && (rc = nn_output(&rv, in[4]->elem, env, err))) goto done;
    out[0] = y;
    y = NULL;
    if (training && n_out > 1) {
        out[1] = rm;
        rm = NULL;
    }
    if (training && n_out > 2) {
        out[2] = rv;
        rv = NULL;
    }
done:
    for (size_t i = 0; i < 5; i++) tensor_free(t[i]);
    tensor_free(y);
    tensor_free(rm);
    tensor_free(rv);
    return rc;
}

/* ------------------------------------------------- instance and layer norm */

static int k_instance_norm(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 3 || !in[0] || !in[1] || !in[2] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "InstanceNormalization %s: needs 3 inputs", nm);
    tensor *X = in[0];
    if (X->rank < 3)
        return err_set(err, TILEOPT_INVALID, "InstanceNormalization %s: X of rank %d", nm,
                       (int)X->rank);
    int64_t N = X->dims[0], C = X->dims[1], sp = prod(X->dims, 2, X->rank);
    if ((int64_t)tensor_numel(in[1]) != C || (int64_t)tensor_numel(in[2]) != C)
        return err_set(err, TILEOPT_INVALID, "InstanceNormalization %s: scale and B need %lld "
                       "values", nm, (long long)C);
    double eps = graph_attr_float(n, "epsilon", 1e-5f);
    tensor *x = NULL, *s = NULL, *b = NULL, *y = NULL;
    int rc;
    if ((rc = as_double(X, env, &x, err)) || (rc = as_double(in[1], env, &s, err)) ||
        (rc = as_double(in[2], env, &b, err)) ||
        (rc = tensor_alloc(DT_DOUBLE, X->dims, X->rank, env, &y, err)))
        goto done;
    for (int64_t p = 0; p < N * C; p++) {
        const double *xp = dv(x) + p * sp;
        double *yp = dv(y) + p * sp, sum = 0, sq = 0;
        for (int64_t i = 0; i < sp; i++) sum += xp[i];
        double m = sp ? sum / (double)sp : 0;
        for (int64_t i = 0; i < sp; i++) sq += (xp[i] - m) * (xp[i] - m);
        double k = dv(s)[p % C] / sqrt((sp ? sq / (double)sp : 0) + eps);
        for (int64_t i = 0; i < sp; i++) yp[i] = (xp[i] - m) * k + dv(b)[p % C];
    }
    rc = emit(y, X->elem, env, out, err);
    y = NULL;
done:
    tensor_free(x);
    tensor_free(s);
    tensor_free(b);
    tensor_free(y);
    return rc;
}

/* Normalized over axes [axis, rank); Scale and B broadcast to that block;
** Mean and InvStdDev keep the leading dims with 1s after them. */
static int k_layer_norm(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 2 || !in[0] || !in[1] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "LayerNormalization %s: needs X and Scale", nm);
    tensor *X = in[0], *B = n_in > 2 ? in[2] : NULL;
    int32_t r = X->rank;
    int64_t axis = graph_attr_int(n, "axis", -1);
    if (axis < -r || axis >= r)
        return err_set(err, TILEOPT_INVALID, "LayerNormalization %s: axis %lld outside rank %d",
                       nm, (long long)axis, (int)r);
    if (axis < 0) axis += r;
    double eps = graph_attr_float(n, "epsilon", 1e-5f);
    int64_t outer = prod(X->dims, 0, (int32_t)axis), len = prod(X->dims, (int32_t)axis, r);
    int64_t sd[TENSOR_MAX_RANK];
    for (int32_t i = 0; i < r; i++) sd[i] = i < axis ? X->dims[i] : 1;
    tensor *x = NULL, *se = NULL, *be = NULL, *s = NULL, *b = NULL, *y = NULL, *mo = NULL,
           *io = NULL;
    int rc;
    if ((rc = as_double(X, env, &x, err)) ||
        (rc = view_expand(in[1], X->dims + axis, (size_t)(r - axis), &se, err)) ||
        (rc = as_double(se, env, &s, err)) ||
        (B && ((rc = view_expand(B, X->dims + axis, (size_t)(r - axis), &be, err)) ||
               (rc = as_double(be, env, &b, err)))) ||
        (rc = tensor_alloc(DT_DOUBLE, X->dims, r, env, &y, err)) ||
        (rc = tensor_alloc(DT_DOUBLE, sd, r, env, &mo, err)) ||
        (rc = tensor_alloc(DT_DOUBLE, sd, r, env, &io, err)))
        goto done;
    if ((int64_t)tensor_numel(s) != len || (b && (int64_t)tensor_numel(b) != len)) {
        rc = err_set(err, TILEOPT_INVALID, "LayerNormalization %s: Scale or B does not "
                     "broadcast to the normalized axes", nm);
        goto done;
    }
    for (int64_t o = 0; o < outer; o++) {
        const double *xr = dv(x) + o * len;
        double *yr = dv(y) + o * len, sum = 0, sq = 0;
        for (int64_t i = 0; i < len; i++) sum += xr[i];
        double m = len ? sum / (double)len : 0;
        for (int64_t i = 0; i < len; i++) sq += (xr[i] - m) * (xr[i] - m);
        double inv = 1 / sqrt((len ? sq / (double)len : 0) + eps);
        for (int64_t i = 0; i < len; i++)
            yr[i] = (xr[i] - m) * inv * dv(s)[i] + (b ? dv(b)[i] : 0);
        dv(mo)[o] = m;
        dv(io)[o] = inv;
    }
    /* Mean and InvStdDev are in the stash type (float unless stash_type says) */
    int32_t stash = (int32_t)graph_attr_int(n, "stash_type", DT_FLOAT);
    if ((rc = nn_output(&y, X->elem, env, err)) ||
        (rc = nn_output(&mo, stash, env, err)) || (rc = nn_output(&io, stash, env, err)))
        goto done;
    out[0] = y;
    y = NULL;
    if (n_out > 1) {
        out[1] = mo;
        mo = NULL;
    }
    if (n_out > 2) {
        out[2] = io;
        io = NULL;
    }
done:
    tensor_free(x);
    tensor_free(se);
    tensor_free(be);
    tensor_free(s);
    tensor_free(b);
    tensor_free(y);
    tensor_free(mo);
    tensor_free(io);
    return rc;
}

/* ---------------------------------------------------------------- LRN, MVN */

static int k_lrn(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 1 || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "LRN %s: needs X", nm);
    tensor *X = in[0];
    int64_t size = graph_attr_int(n, "size", 0);
    if (X->rank < 2 || size < 1)
        return err_set(err, TILEOPT_INVALID, "LRN %s: X of rank %d, size %lld", nm,
                       (int)X->rank, (long long)size);
    double alpha = graph_attr_float(n, "alpha", 1e-4f), beta = graph_attr_float(n, "beta", 0.75f);
    double bias = graph_attr_float(n, "bias", 1.0f);
    int64_t N = X->dims[0], C = X->dims[1], sp = prod(X->dims, 2, X->rank);
    int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    tensor *x = NULL, *y = NULL;
    int rc = double_pair(X, env, &x, &y, err);
    if (rc) return rc;
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t s = 0; s < sp; s++) {
                double sq = 0;
                for (int64_t q = c - lo; q <= c + hi; q++)
                    if (q >= 0 && q < C) {
                        double v = dv(x)[(i * C + q) * sp + s];
                        sq += v * v;
                    }
                int64_t at = (i * C + c) * sp + s;
                dv(y)[at] = dv(x)[at] / pow(bias + alpha / (double)size * sq, beta);
            }
    tensor_free(x);
    return emit(y, X->elem, env, out, err);
}

/* X over its L1 or L2 norm along `axis`; a zero norm leaves zeros (0/0 is
** no direction, and runtimes give 0 there rather than NaN). */
static int k_lp_norm(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 1 || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "LpNormalization %s: needs an input", nm);
    tensor *X = in[0];
    int32_t r = X->rank;
    int64_t axis = graph_attr_int(n, "axis", -1), p = graph_attr_int(n, "p", 2);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r || (p != 1 && p != 2))
        return err_set(err, TILEOPT_INVALID, "LpNormalization %s: axis %lld of rank %d, p %lld",
                       nm, (long long)graph_attr_int(n, "axis", -1), (int)r, (long long)p);
    int64_t outer = prod(X->dims, 0, (int32_t)axis), len = X->dims[axis];
    int64_t inner = prod(X->dims, (int32_t)axis + 1, r);
    tensor *x = NULL, *y = NULL;
    int rc = double_pair(X, env, &x, &y, err);
    if (rc) return rc;
    const double *xv = dv(x);
    double *yv = dv(y);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            int64_t base = o * len * inner + j;
            double norm = 0;
            for (int64_t i = 0; i < len; i++) {
                double v = xv[base + i * inner];
                norm += p == 1 ? fabs(v) : v * v;
            }
            if (p == 2) norm = sqrt(norm);
            for (int64_t i = 0; i < len; i++)
                yv[base + i * inner] = norm == 0 ? 0 : xv[base + i * inner] / norm;
        }
    tensor_free(x);
    return emit(y, X->elem, env, out, err);
}

/* (X - mean) / sqrt(var), mean and variance over `axes` (default 0, 2, 3). */
static int k_mvn(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 1 || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "MeanVarianceNormalization %s: needs X", nm);
    tensor *X = in[0];
    int32_t r = X->rank;
    bool red[TENSOR_MAX_RANK] = {false};
    const Onnx__AttributeProto *a = graph_attr(n, "axes");
    if (a) {
        for (size_t i = 0; i < a->n_ints; i++) {
            int64_t ax = a->ints[i] < 0 ? a->ints[i] + r : a->ints[i];
            if (ax < 0 || ax >= r)
                return err_set(err, TILEOPT_INVALID, "MeanVarianceNormalization %s: axis "
                               "%lld outside rank %d", nm, (long long)a->ints[i], (int)r);
            red[ax] = true;
        }
    } else {
        for (int32_t ax = 0; ax < r; ax++) red[ax] = ax == 0 || ax == 2 || ax == 3;
    }
    /* groups: the kept axes; a group's elements: the reduced ones */
    int64_t total = prod(X->dims, 0, r), gsz = 1;
    for (int32_t i = 0; i < r; i++)
        if (red[i]) gsz *= X->dims[i];
    int64_t groups = gsz ? total / gsz : 0;
    tensor *x = NULL, *y = NULL;
    double *sum = NULL, *sq = NULL;
    int rc;
    if ((rc = as_double(X, env, &x, err)) ||
        (rc = tensor_alloc(DT_DOUBLE, X->dims, r, env, &y, err)))
        goto done;
    sum = calloc((size_t)(groups ? groups : 1), sizeof *sum);
    sq = calloc((size_t)(groups ? groups : 1), sizeof *sq);
    if (!sum || !sq) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    /* the group of flat index e: its coordinates along the kept axes */
    for (int pass = 0; pass < 3; pass++) {
        int64_t idx[TENSOR_MAX_RANK] = {0};
        for (int64_t e = 0; e < total; e++) {
            int64_t g = 0;
            for (int32_t i = 0; i < r; i++)
                if (!red[i]) g = g * X->dims[i] + idx[i];
            double v = dv(x)[e];
            if (pass == 0) sum[g] += v;
            else if (pass == 1) sq[g] += (v - sum[g] / (double)gsz) * (v - sum[g] / (double)gsz);
            else dv(y)[e] = (v - sum[g] / (double)gsz) / sqrt(sq[g] / (double)gsz);
            for (int32_t i = r - 1; i >= 0 && ++idx[i] == X->dims[i]; i--) idx[i] = 0;
        }
    }
    rc = emit(y, X->elem, env, out, err);
    y = NULL;
done:
    free(sum);
    free(sq);
    tensor_free(x);
    tensor_free(y);
    return rc;
}

/* ----------------------------------------------------------------- Dropout */

/* Inference: Y = X and a mask of ones. Training mode draws random numbers no
** other runtime would draw alike: refused unless the ratio is 0. */
/* Training mode: each element kept with probability 1 - ratio and scaled by
** 1 / (1 - ratio), from the node's own random stream; the mask says which. */
static int dropout_train(const Onnx__NodeProto *n, int64_t opset, tensor *X, double ratio,
                         tensor **out, size_t n_out, const eval_env *env, errbuf *err) {
    if (!(ratio >= 0 && ratio <= 1))
        return err_set(err, TILEOPT_INVALID, "Dropout %s: ratio %g outside [0, 1]",
                       eval_node_name(n), ratio);
    bool want_mask = n_out > 1 && n->output[1] && n->output[1][0];
    tensor *x = NULL, *y = NULL, *m = NULL;
    int rc = as_double(X, env, &x, err);
    if (!rc) rc = tensor_alloc(DT_DOUBLE, X->dims, X->rank, env, &y, err);
    if (!rc && want_mask) rc = tensor_alloc(DT_DOUBLE, X->dims, X->rank, env, &m, err);
    if (!rc) {
        eval_rng r = eval_rng_for(n);
        double scale = ratio < 1 ? 1.0 / (1.0 - ratio) : 0;
        for (uint64_t i = 0; i < tensor_numel(y); i++) {
            bool keep = eval_rng_unit(&r) >= ratio;
            dv(y)[i] = keep ? dv(x)[i] * scale : 0;
            if (m) dv(m)[i] = keep;
        }
        rc = nn_output(&y, X->elem, env, err);
    }
    /* the mask: bool from opset 10 on, before it X's type */
    if (!rc && m) rc = nn_output(&m, opset >= 10 ? DT_BOOL : X->elem, env, err);
    tensor_free(x);
    if (rc) {
        tensor_free(y);
        tensor_free(m);
        return rc;
    }
    out[0] = y;
    if (m) out[1] = m;
    return TILEOPT_OK;
}

static int k_dropout(KERNEL_PARAMS) {
    const char *nm = eval_node_name(n);
    if (n_in < 1 || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "Dropout %s: needs X", nm);
    bool training = false;
    double ratio = graph_attr_float(n, "ratio", 0.5f);
    if (opset >= 12) {
        if (n_in > 2 && in[2]) {
            if (in[2]->elem != DT_BOOL || tensor_numel(in[2]) != 1)
                return err_set(err, TILEOPT_INVALID, "Dropout %s: training_mode must be one "
                               "bool", nm);
            tensor *t = NULL;
            int rc = tensor_contiguous(in[2], env, &t, err);
            if (rc) return rc;
            training = t->data[0] != 0;
            tensor_free(t);
        }
        if (n_in > 1 && in[1]) {
            tensor *r = NULL;
            int rc = as_double(in[1], env, &r, err);
            if (rc) return rc;
            ratio = tensor_numel(r) ? dv(r)[0] : ratio;
            tensor_free(r);
        }
    } else if (opset < 7) {
        training = graph_attr_int(n, "is_test", 0) == 0;
    }
    if (training && ratio != 0) return dropout_train(n, opset, in[0], ratio, out, n_out, env, err);
    out[0] = tensor_ref(in[0]);
    if (!out[0]) return err_set(err, TILEOPT_NOMEM, "out of memory");
    if (n_out > 1 && n->output[1] && n->output[1][0]) {
        /* the mask: bool from opset 10 on, before it X's type */
        tensor *m;
        int rc = tensor_new(opset >= 10 ? DT_BOOL : in[0]->elem, in[0]->dims, in[0]->rank,
                            env, &m, err);
        if (rc) return rc;
        if (opset >= 10) {
            memset(m->data, 1, tensor_nbytes(m));
        } else {
            tensor *one = NULL, *ones = NULL;
            int64_t d1 = 1;
            rc = tensor_new(DT_DOUBLE, &d1, 0, env, &one, err);
            if (!rc) {
                dv(one)[0] = 1;
                rc = eval_cast(one, in[0]->elem, env, &ones, err);
            }
            size_t es = tensor_elem_size(m);
            for (uint64_t i = 0; !rc && i < tensor_numel(m); i++)
                memcpy(m->data + i * es, ones->data, es);
            tensor_free(one);
            tensor_free(ones);
            if (rc) {
                tensor_free(m);
                return rc;
            }
        }
        out[1] = m;
    }
    return TILEOPT_OK;
}

const kernel_def kernel_table_norm[] = {
    {OP_Softmax, 1, k_softmax},
    {OP_LogSoftmax, 1, k_log_softmax},
    {OP_Hardmax, 1, k_hardmax},
    {OP_BatchNormalization, 1, k_batch_norm},
    {OP_InstanceNormalization, 1, k_instance_norm},
    {OP_LayerNormalization, 17, k_layer_norm},
    {OP_LRN, 1, k_lrn},
    {OP_LpNormalization, 1, k_lp_norm},
    {OP_MeanVarianceNormalization, 9, k_mvn},
    {OP_Dropout, 1, k_dropout},
};
const size_t kernel_table_norm_count = countof(kernel_table_norm);

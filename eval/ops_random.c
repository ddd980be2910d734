/*
** The random generators: RandomUniform, RandomNormal, their *Like forms,
** Bernoulli and Multinomial. No runtime's stream can be reproduced (ONNX
** Runtime's and numpy's generators differ), so what matters is that a run is
** repeatable: --verify compares two runs of a model. Each node draws from a
** stream of its own (eval_rng_for in eval_impl.h). Kernels keep no state, so a
** node in a Loop draws the same values on every iteration.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"

/* Standard normal by Box-Muller (1 - u keeps the logarithm finite). */
static double rng_normal(eval_rng *r) {
    double u = 1.0 - eval_rng_unit(r), v = eval_rng_unit(r);
    return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

/* The output type: the `dtype` attribute, else dflt. Only floating types. */
static int out_type(const Onnx__NodeProto *n, int32_t dflt, int32_t *elem, errbuf *err) {
    *elem = (int32_t)graph_attr_int(n, "dtype", dflt);
    const dtype_info *d = dtype_get(*elem);
    if (!d || d->kind != KIND_FLOAT || d->size > 8)
        return err_set(err, TILEOPT_INVALID, "%s %s: dtype %s is not a floating type",
                       n->op_type, eval_node_name(n), dtype_name(*elem));
    return TILEOPT_OK;
}

typedef enum { DRAW_UNIFORM, DRAW_NORMAL } draw_kind;

/* A tensor of dims filled from the node's stream, as elem. */
static int draw(const Onnx__NodeProto *n, draw_kind kind, const int64_t *dims, int32_t rank,
                int32_t elem, const eval_env *env, tensor **out, errbuf *err) {
    double lo = graph_attr_float(n, "low", 0.0f), hi = graph_attr_float(n, "high", 1.0f);
    double mean = graph_attr_float(n, "mean", 0.0f), scale = graph_attr_float(n, "scale", 1.0f);
    tensor *y = NULL;
    int rc = tensor_alloc(DT_DOUBLE, dims, rank, env, &y, err);
    if (rc) return rc;
    eval_rng r = eval_rng_for(n);
    double *v = (double *)(void *)y->data;
    for (uint64_t i = 0; i < tensor_numel(y); i++)
        v[i] = kind == DRAW_UNIFORM ? lo + (hi - lo) * eval_rng_unit(&r) : mean + scale * rng_normal(&r);
    rc = nn_output(&y, elem, env, err);
    if (rc) return rc;
    out[0] = y;
    return TILEOPT_OK;
}

/* RandomUniform and RandomNormal: the shape comes from the `shape` attribute. */
static int from_attr(const Onnx__NodeProto *n, draw_kind kind, tensor **out, size_t n_out,
                     const eval_env *env, errbuf *err) {
    const Onnx__AttributeProto *s = graph_attr(n, "shape");
    if (!s || s->n_ints > TENSOR_MAX_RANK || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "%s %s: needs a shape of at most %d dims",
                       n->op_type, eval_node_name(n), TENSOR_MAX_RANK);
    int64_t dims[TENSOR_MAX_RANK];
    for (size_t i = 0; i < s->n_ints; i++) {
        if (s->ints[i] < 0)
            return err_set(err, TILEOPT_INVALID, "%s %s: negative dim in shape", n->op_type,
                           eval_node_name(n));
        dims[i] = s->ints[i];
    }
    int32_t elem;
    int rc = out_type(n, DT_FLOAT, &elem, err);
    return rc ? rc : draw(n, kind, dims, (int32_t)s->n_ints, elem, env, out, err);
}

/* The *Like forms: the input's shape, and its type unless `dtype` says otherwise. */
static int like(const Onnx__NodeProto *n, draw_kind kind, tensor *const *in, size_t n_in,
                tensor **out, size_t n_out, const eval_env *env, errbuf *err) {
    if (n_in < 1 || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "%s %s: needs an input", n->op_type,
                       eval_node_name(n));
    int32_t elem;
    int rc = out_type(n, in[0]->elem, &elem, err);
    return rc ? rc : draw(n, kind, in[0]->dims, in[0]->rank, elem, env, out, err);
}

static int k_random_uniform(KERNEL_PARAMS) {
    (void)opset, (void)in, (void)n_in;
    return from_attr(n, DRAW_UNIFORM, out, n_out, env, err);
}
static int k_random_normal(KERNEL_PARAMS) {
    (void)opset, (void)in, (void)n_in;
    return from_attr(n, DRAW_NORMAL, out, n_out, env, err);
}
static int k_random_uniform_like(KERNEL_PARAMS) {
    (void)opset;
    return like(n, DRAW_UNIFORM, in, n_in, out, n_out, env, err);
}
static int k_random_normal_like(KERNEL_PARAMS) {
    (void)opset;
    return like(n, DRAW_NORMAL, in, n_in, out, n_out, env, err);
}

/* 1 with probability p (the input), else 0, as `dtype` (default: the input's). */
static int k_bernoulli(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 1 || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "Bernoulli %s: needs an input", nm);
    int32_t elem = (int32_t)graph_attr_int(n, "dtype", in[0]->elem);
    if (!dtype_valid(elem) || elem == DT_STRING)
        return err_set(err, TILEOPT_INVALID, "Bernoulli %s: dtype %d", nm, (int)elem);
    tensor *p = NULL, *y = NULL;
    int rc = eval_cast(in[0], DT_DOUBLE, env, &p, err);
    if (!rc) rc = tensor_alloc(DT_DOUBLE, in[0]->dims, in[0]->rank, env, &y, err);
    if (rc) {
        tensor_free(p);
        return rc;
    }
    eval_rng r = eval_rng_for(n);
    const double *pv = (const double *)(const void *)p->data;
    double *v = (double *)(void *)y->data;
    for (uint64_t i = 0; i < tensor_numel(y); i++) v[i] = eval_rng_unit(&r) < pv[i] ? 1.0 : 0.0;
    tensor_free(p);
    rc = nn_output(&y, elem, env, err);
    if (rc) return rc;
    out[0] = y;
    return TILEOPT_OK;
}

/* sample_size class indices per batch row, drawn by the row's unnormalized
** log-probabilities. */
static int k_multinomial(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 1 || !in[0] || n_out < 1 || in[0]->rank != 2)
        return err_set(err, TILEOPT_INVALID, "Multinomial %s: needs a [batch, classes] input",
                       nm);
    int64_t samples = graph_attr_int(n, "sample_size", 1);
    int32_t elem = (int32_t)graph_attr_int(n, "dtype", DT_INT32);
    if (samples < 0 || (elem != DT_INT32 && elem != DT_INT64))
        return err_set(err, TILEOPT_INVALID, "Multinomial %s: sample_size %lld, dtype %s", nm,
                       (long long)samples, dtype_name(elem));
    int64_t B = in[0]->dims[0], C = in[0]->dims[1], dims[2] = {B, samples};
    tensor *x = NULL, *y = NULL;
    double *cdf = NULL;
    int rc = eval_cast(in[0], DT_DOUBLE, env, &x, err);
    if (!rc) rc = tensor_alloc(DT_INT64, dims, 2, env, &y, err);
    if (!rc && !(cdf = malloc((size_t)(C ? C : 1) * sizeof *cdf)))
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
    eval_rng r = eval_rng_for(n);
    for (int64_t b = 0; !rc && b < B; b++) {
        const double *lp = (const double *)(const void *)x->data + b * C;
        double mx = -INFINITY, acc = 0;
        for (int64_t c = 0; c < C; c++) mx = fmax(mx, lp[c]);
        for (int64_t c = 0; c < C; c++) cdf[c] = acc += exp(lp[c] - mx);
        for (int64_t s = 0; s < samples; s++) {
            double u = eval_rng_unit(&r) * acc;
            int64_t c = 0;
            while (c < C - 1 && cdf[c] <= u) c++;
            ((int64_t *)(void *)y->data)[b * samples + s] = c;
        }
    }
    free(cdf);
    tensor_free(x);
    if (!rc) rc = nn_output(&y, elem, env, err);
    if (rc) {
        tensor_free(y);
        return rc;
    }
    out[0] = y;
    return TILEOPT_OK;
}

const kernel_def kernel_table_random[] = {
    {OP_RandomUniform, 1, k_random_uniform},
    {OP_RandomNormal, 1, k_random_normal},
    {OP_RandomUniformLike, 1, k_random_uniform_like},
    {OP_RandomNormalLike, 1, k_random_normal_like},
    {OP_Bernoulli, 15, k_bernoulli},
    {OP_Multinomial, 7, k_multinomial},
};
const size_t kernel_table_random_count = countof(kernel_table_random);

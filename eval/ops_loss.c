/*
** The loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss. Both
** read scores of shape (N, C, d1..dk) and integer targets of shape (N, d1..dk),
** pick the score of each target class, weight it by the optional per-class
** weight, and reduce (none, sum, or a mean weighted by the weights taken).
** A target equal to ignore_index takes no part: its loss and weight are 0.
** Values are computed in double and go back to the scores' type once.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"

static double *dv(tensor *t) { return (double *)(void *)t->data; }

typedef enum { LOSS_NONE, LOSS_SUM, LOSS_MEAN } loss_reduction;

/* The picked-and-weighted losses of -logp (double, (N, C, D) flattened) at the
** targets, then reduced as the `reduction` attribute says, into out[0]. */
static int nll(const Onnx__NodeProto *n, const double *logp, const tensor *score,
               tensor *target, tensor *weight, const eval_env *env, tensor **out,
               errbuf *err) {
    const char *nm = eval_node_name(n);
    const char *red_s = graph_attr_string(n, "reduction", "mean");
    loss_reduction red = !strcmp(red_s, "none") ? LOSS_NONE
                         : !strcmp(red_s, "sum") ? LOSS_SUM
                         : !strcmp(red_s, "mean") ? LOSS_MEAN
                                                  : (loss_reduction)-1;
    if ((int)red < 0)
        return err_set(err, TILEOPT_INVALID, "%s %s: reduction \"%s\" is none of none, sum, mean",
                       n->op_type, nm, red_s);
    bool has_ignore = graph_attr(n, "ignore_index") != NULL;
    int64_t ignore = graph_attr_int(n, "ignore_index", 0);
    int64_t N = score->dims[0], C = score->dims[1], D = 1;
    for (int32_t i = 2; i < score->rank; i++) D *= score->dims[i];
    /* the target is the scores' shape without C */
    bool shape_ok = target->rank == score->rank - 1 && target->dims[0] == N;
    for (int32_t i = 1; shape_ok && i < target->rank; i++)
        shape_ok = target->dims[i] == score->dims[i + 1];
    if (!shape_ok)
        return err_set(err, TILEOPT_INVALID, "%s %s: target shape does not match (N, d1..dk) "
                       "of the scores", n->op_type, nm);
    if (weight && (weight->rank != 1 || weight->dims[0] != C))
        return err_set(err, TILEOPT_INVALID, "%s %s: weight must have C=%lld values", n->op_type,
                       nm, (long long)C);
    tensor *t = NULL, *w = NULL, *y = NULL;
    int rc = eval_cast(target, DT_INT64, env, &t, err);
    if (!rc && weight) rc = eval_cast(weight, DT_DOUBLE, env, &w, err);
    if (rc) goto done;
    if (red == LOSS_NONE)
        rc = tensor_alloc(DT_DOUBLE, target->dims, target->rank, env, &y, err);
    else
        rc = tensor_alloc(DT_DOUBLE, NULL, 0, env, &y, err);
    if (rc) goto done;
    const int64_t *tv = (const int64_t *)(const void *)t->data;
    const double *wv = w ? dv(w) : NULL;
    double *yv = dv(y), sum = 0, wsum = 0;
    for (int64_t i = 0; i < N; i++)
        for (int64_t d = 0; d < D; d++) {
            int64_t c = tv[i * D + d];
            double l = 0, wt = 0;
            if (!has_ignore || c != ignore) {
                if (c < 0 || c >= C) {
                    rc = err_set(err, TILEOPT_INVALID, "%s %s: target %lld outside [0, %lld)",
                                 n->op_type, nm, (long long)c, (long long)C);
                    goto done;
                }
                wt = wv ? wv[c] : 1;
                l = -logp[(i * C + c) * D + d] * wt;
            }
            if (red == LOSS_NONE) yv[i * D + d] = l;
            sum += l;
            wsum += wt;
        }
    if (red == LOSS_SUM) yv[0] = sum;
    /* a mean over no counted target is 0/0, as the reference computes it */
    if (red == LOSS_MEAN) yv[0] = sum / wsum;
    rc = nn_output(&y, score->elem, env, err);
    if (!rc) out[0] = y;
    y = NULL;
done:
    tensor_free(t);
    tensor_free(w);
    tensor_free(y);
    return rc;
}

/* Inputs: scores (N, C, ...), target, optional weight. */
static int loss_inputs(const Onnx__NodeProto *n, tensor *const *in, size_t n_in, size_t n_out,
                       errbuf *err) {
    const char *nm = eval_node_name(n);
    if (n_in < 2 || !in[0] || !in[1] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "%s %s: needs scores and a target", n->op_type, nm);
    if (in[0]->rank < 2)
        return err_set(err, TILEOPT_INVALID, "%s %s: scores of rank %d, need (N, C, ...)",
                       n->op_type, nm, (int)in[0]->rank);
    return TILEOPT_OK;
}

static int k_nll_loss(KERNEL_PARAMS) {
    (void)opset;
    int rc = loss_inputs(n, in, n_in, n_out, err);
    if (rc) return rc;
    tensor *x = NULL;
    if ((rc = eval_cast(in[0], DT_DOUBLE, env, &x, err))) return rc;
    /* NegativeLogLikelihoodLoss takes log-probabilities already */
    rc = nll(n, dv(x), in[0], in[1], n_in > 2 ? in[2] : NULL, env, out, err);
    tensor_free(x);
    return rc;
}

/* Log-softmax over axis 1 of the scores, then the NLL loss; the second output,
** when asked for, is the log-probabilities. */
static int k_sce_loss(KERNEL_PARAMS) {
    (void)opset;
    int rc = loss_inputs(n, in, n_in, n_out, err);
    if (rc) return rc;
    tensor *X = in[0], *x = NULL, *lp = NULL;
    if ((rc = eval_cast(X, DT_DOUBLE, env, &x, err)) ||
        (rc = tensor_alloc(DT_DOUBLE, X->dims, X->rank, env, &lp, err))) {
        tensor_free(x);
        return rc;
    }
    int64_t N = X->dims[0], C = X->dims[1], D = 1;
    for (int32_t i = 2; i < X->rank; i++) D *= X->dims[i];
    const double *xv = dv(x);
    double *v = dv(lp);
    for (int64_t i = 0; i < N; i++)
        for (int64_t d = 0; d < D; d++) {
            const double *r = xv + i * C * D + d;
            double mx = -INFINITY, s = 0;
            for (int64_t c = 0; c < C; c++) mx = fmax(mx, r[c * D]);
            for (int64_t c = 0; c < C; c++) s += exp(r[c * D] - mx);
            double ls = log(s);
            for (int64_t c = 0; c < C; c++) v[i * C * D + d + c * D] = r[c * D] - mx - ls;
        }
    tensor_free(x);
    rc = nll(n, v, X, in[1], n_in > 2 ? in[2] : NULL, env, out, err);
    if (!rc && n_out > 1) {
        rc = nn_output(&lp, X->elem, env, err);
        if (!rc) out[1] = lp;
        lp = NULL;
    }
    tensor_free(lp);
    return rc;
}

const kernel_def kernel_table_loss[] = {
    {OP_NegativeLogLikelihoodLoss, 12, k_nll_loss},
    {OP_SoftmaxCrossEntropyLoss, 12, k_sce_loss},
};
const size_t kernel_table_loss_count = countof(kernel_table_loss);

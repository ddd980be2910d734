/*
** fuse_bn_into_conv: a BatchNormalization at inference after a Conv is a
** per-channel affine map, y = (x - mean) / sqrt(var + epsilon) * scale + B,
** so the Conv computes it with weights times s = scale / sqrt(var + epsilon)
** and bias (bias - mean) * s + B (ONNX Runtime's basic level and
** onnxoptimizer do the same). The sums round differently: the verify
** tolerances cover it, and ONNX Runtime folds the original the same way, so
** it runs the same sums for both. It does so after a 2-D MatMul by a constant
** too, whose columns are the BN's channels (BatchNorm1d after a Linear): the
** MatMul becomes Gemm(A, B * s, B - mean * s), as its MatMul+BN fusion makes
** it. A batched MatMul's columns are its last axis, not the BN's axis 1: it
** stays. After a ConvTranspose or a Gemm the same map would fold as well
** (cv_fold knows their layouts), but ONNX Runtime folds neither: the folded
** weights would then round differently from what it computes for the
** original, and an output near zero can move past the contract's atol
** (PaddleOCR v4 detection's ConvTranspose + BN did, by 1.5e-7): they stay. So does a BN that may train
** (training_mode, or its running statistics read), whose variance plus
** epsilon is not positive, whose per-element form (spatial=0 before opset 9)
** has no channel vector, or whose producer has other readers or shared
** weights, with its reason.
*/
#include <math.h>
#include <stdlib.h>

#include "passes/conv/conv_impl.h"

/*
** s = scale / sqrt(var + epsilon) into scale, the new bias into bias, each
** step in type T as ONNX Runtime's Conv+BatchNormalization fusion takes them:
** (b - mean) * s + B with the Conv's bias b, B - mean * s without. Sets why
** for a variance plus epsilon that is not positive.
*/
#define BN_FOLD(T, SQRT)                                                                 \
    for (int64_t i = 0; i < c.m; i++) {                                                  \
        T ve = (T)var[i] + (T)eps;                                                       \
        if (!(ve > 0)) {                                                                 \
            why = "a variance plus epsilon is not positive";                             \
            break;                                                                       \
        }                                                                                \
        T s = (T)scale[i] / SQRT(ve);                                                    \
        T nb = c.b ? ((T)c.b[i] - (T)mean[i]) * s + (T)bias[i] : (T)bias[i] - (T)mean[i] * s; \
        scale[i] = s;                                                                    \
        bias[i] = nb;                                                                    \
    }

/* Why BN node n is no per-channel map at inference, or NULL. */
static const char *not_inference(graph *g, const Onnx__NodeProto *n) {
    if (graph_attr_int(n, "training_mode", 0) != 0) return "training_mode is set";
    if (graph_attr_int(n, "spatial", 1) == 0) return "spatial=0: statistics per element";
    for (size_t o = 1; o < n->n_output; o++) {
        rw_reads r = rw_reads_of(g, n->output[o]);
        if (r.slots || r.implicit || r.output) return "its running statistics are read";
    }
    return NULL;
}

static const char *rule_of(op_id op) {
    switch (op) {
    case OP_Conv: return "BatchNormalization into the Conv before it";
    case OP_ConvTranspose: return "BatchNormalization into the ConvTranspose before it";
    case OP_Gemm: return "BatchNormalization into the Gemm before it";
    default: return "BatchNormalization into the MatMul before it, made a Gemm";
    }
}

static int bn_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    if (op_of(n) != OP_BatchNormalization || n->n_input < 5) return TILEOPT_OK;
    cv_conv c;
    bool found;
    const char *why;
    int rc = cv_find(pc, g, node, 0, &c, &found, &why);
    if (rc || !found) return rc;
    if (!why) why = not_inference(g, n);
    if (!why && c.out_rank < 0) why = "the MatMul's output rank is unknown";
    if (!why && c.axis != 1)
        why = "the MatMul is batched: its weight's columns are its output's last axis, and "
              "the BN normalizes axis 1";
    if (!why && (c.op == OP_ConvTranspose || c.op == OP_Gemm))
        why = "ONNX Runtime folds a BatchNormalization only into a Conv or a MatMul, and the "
              "folded weights would round differently from the original there";
    double *v = why ? NULL : malloc(4 * (size_t)c.m * sizeof *v);
    if (!why && !v) {
        cv_free(&c);
        return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    }
    double *scale = v, *bias = v ? v + c.m : NULL, *mean = v ? v + 2 * c.m : NULL,
           *var = v ? v + 3 * c.m : NULL;
    if (!why && (!cv_channel_values(pc, g, &c, graph_node_input(n, 1), scale) ||
                 !cv_channel_values(pc, g, &c, graph_node_input(n, 2), bias) ||
                 !cv_channel_values(pc, g, &c, graph_node_input(n, 3), mean) ||
                 !cv_channel_values(pc, g, &c, graph_node_input(n, 4), var)))
        why = c.op == OP_Conv ? "its scale, bias, mean and variance are not constants of the "
                                "Conv's type with one value per output channel"
                              : "its scale, bias, mean and variance are not constants of the "
                                "weight's type with one value per output channel";
    float eps = graph_attr_float(n, "epsilon", 1e-5f);
    if (!why && c.elem == DT_FLOAT) BN_FOLD(float, sqrtf);
    if (!why && c.elem == DT_DOUBLE) BN_FOLD(double, sqrt);
    bool done = false;
    if (!why) rc = cv_fold(pc, g, &c, node, scale, bias, &done, &why);
    cv_free(&c);
    free(v);
    if (rc) return rc;
    if (!done) {
        cv_skip(pc, g, node, &c, why);
        return TILEOPT_OK;
    }
    json_w *a = pass_action(pc, g, node, "eliminated");
    if (a) {
        json_put_str(a, "rule", rule_of(c.op));
        json_put_str(a, "into", graph_node_id(g, c.node));
    }
    return TILEOPT_OK;
}

int pass_fuse_bn_into_conv(pass_ctx *pc) {
    return rw_walk(pc, bn_rule);
}

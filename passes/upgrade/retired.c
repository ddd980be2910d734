/*
** Ops of the early experimental set that ONNX later dropped from its schemas, met
** in old exported models (ImageScaler above all). Each is rewritten into current
** ops: the node goes, a short chain takes its place and ends in its output name.
** This file holds those rewrites and their table.
*/
#include <string.h>

#include "passes/upgrade/upgrade_impl.h"

typedef struct chain {
    up *u;
    graph *g;
    int32_t node;            /* the removed node, for names */
    int32_t elem;            /* element type of x */
} chain;

/* op(ins) -> a fresh value, or -> out when out is given (the chain's last step). */
static int ch_op(chain *c, const char *op, const char **ins, size_t n, const char *out,
                 const char **res, Onnx__NodeProto **np) {
    if (!out) return up_emit(c->u, c->g, c->node, op, ins, n, res, np);
    const char *nm = up_fresh(c->u, c->g, c->node, op);
    Onnx__NodeProto *p = nm ? graph_add_node(c->g, op, nm, ins, n, &out, 1, NULL) : NULL;
    if (!p) return up_nomem(c->u);
    *res = out;
    if (np) *np = p;
    return 0;
}

/* x * v (skipped when v is 1 and out is not needed) */
static int ch_mul(chain *c, const char *x, float v, const char *out, const char **res) {
    if (v == 1.0f && !out) {
        *res = x;
        return 0;
    }
    const char *k;
    int rc = up_emit_scalar(c->u, c->g, c->node, "scale", c->elem, v, &k);
    const char *ins[2] = {x, k};
    return rc ? rc : ch_op(c, "Mul", ins, 2, out, res, NULL);
}

static int ch_add(chain *c, const char *x, float v, const char *out, const char **res) {
    const char *k;
    int rc = up_emit_scalar(c->u, c->g, c->node, "bias", c->elem, v, &k);
    const char *ins[2] = {x, k};
    return rc ? rc : ch_op(c, "Add", ins, 2, out, res, NULL);
}

static int ch_begin(up *u, graph *g, int32_t *node, chain *c, const char **x,
                    const char **out) {
    Onnx__NodeProto *n = graph_node(g, *node);
    *x = graph_node_input(n, 0);
    if (!*x || n->n_output != 1 || !n->output[0][0])
        return err_set(u->err, TILEOPT_INVALID, "node %s: %s needs one input and one output",
                       graph_node_id(g, *node), n->op_type);
    if (u->tgt < 7)
        return err_set(u->err, TILEOPT_UNSUPPORTED,
                       "node %s: %s migrates to opset 7 and above only",
                       graph_node_id(g, *node), n->op_type);
    c->u = u;
    c->g = g;
    c->node = *node;
    c->elem = up_data_elem(u, g, *node, *x);
    *out = n->output[0];
    graph_remove_node(g, *node);
    return 0;
}

/* ImageScaler: y = scale * x + bias[c] over NCHW. */
static int r_image_scaler(up *u, graph *g, int32_t *node, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    float scale = graph_attr_float(n, "scale", 1.0f);
    Onnx__AttributeProto *b = graph_attr(n, "bias");
    chain c = {0};
    const char *x = NULL, *out = NULL, *t = NULL;
    int rc = ch_begin(u, g, node, &c, &x, &out);
    if (rc) return rc;
    if (!b || b->n_floats == 0) return ch_mul(&c, x, scale, out, &t);
    if ((rc = ch_mul(&c, x, scale, NULL, &t))) return rc;
    int64_t dims[3] = {(int64_t)b->n_floats, 1, 1};
    const char *bias;
    if ((rc = up_emit_const(u, g, c.node, "bias", DT_FLOAT, dims, 3, b->floats,
                            b->n_floats * sizeof(float), &bias)))
        return rc;
    if (c.elem != DT_FLOAT) {
        Onnx__NodeProto *cast = NULL;
        const char *in = bias;
        if ((rc = up_emit(u, g, c.node, "Cast", &in, 1, &bias, &cast))) return rc;
        if (graph_node_set_attr_int(g, cast, "to", c.elem)) return up_nomem(u);
    }
    const char *ins[2] = {t, bias};
    if (act) json_put_str(act, "rewrite", "Mul+Add");
    return ch_op(&c, "Add", ins, 2, out, &t, NULL);
}

/* Affine: y = alpha * x + beta. */
static int r_affine(up *u, graph *g, int32_t *node, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    float alpha = graph_attr_float(n, "alpha", 1.0f), beta = graph_attr_float(n, "beta", 0.0f);
    chain c = {0};
    const char *x = NULL, *out = NULL, *t = NULL;
    int rc = ch_begin(u, g, node, &c, &x, &out);
    if (!rc) rc = ch_mul(&c, x, alpha, NULL, &t);
    if (!rc) rc = ch_add(&c, t, beta, out, &t);
    if (!rc && act) json_put_str(act, "rewrite", "Mul+Add");
    return rc;
}

/* Scale: y = scale * x. */
static int r_scale(up *u, graph *g, int32_t *node, json_w *act) {
    float scale = graph_attr_float(graph_node(g, *node), "scale", 1.0f);
    chain c = {0};
    const char *x = NULL, *out = NULL, *t = NULL;
    int rc = ch_begin(u, g, node, &c, &x, &out);
    if (!rc) rc = ch_mul(&c, x, scale, out, &t);
    if (!rc && act) json_put_str(act, "rewrite", "Mul");
    return rc;
}

/* ScaledTanh: y = alpha * tanh(beta * x); ParametricSoftplus: alpha * softplus(beta * x). */
static int scaled_unary(up *u, graph *g, int32_t *node, json_w *act, const char *op) {
    Onnx__NodeProto *n = graph_node(g, *node);
    float alpha = graph_attr_float(n, "alpha", 1.0f), beta = graph_attr_float(n, "beta", 1.0f);
    chain c = {0};
    const char *x = NULL, *out = NULL, *t = NULL;
    int rc = ch_begin(u, g, node, &c, &x, &out);
    if (!rc) rc = ch_mul(&c, x, beta, NULL, &t);
    if (!rc) rc = ch_op(&c, op, &t, 1, NULL, &t, NULL);
    if (!rc) rc = ch_mul(&c, t, alpha, out, &t);
    if (!rc && act) json_put_str(act, "rewrite", op);
    return rc;
}

static int r_scaled_tanh(up *u, graph *g, int32_t *node, json_w *act) {
    return scaled_unary(u, g, node, act, "Tanh");
}

static int r_parametric_softplus(up *u, graph *g, int32_t *node, json_w *act) {
    return scaled_unary(u, g, node, act, "Softplus");
}

/* ThresholdedRelu was experimental before 10 with the same meaning: the op itself
** from a target of 10, below that x * (x > alpha). */
static int r_thresholded_relu(up *u, graph *g, int32_t *node, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    if (u->tgt >= 10) {
        const char *ins[1] = {graph_node_input(n, 0)};
        return up_replace_node(u, g, node, "ThresholdedRelu", ins, ins[0] ? 1 : 0, 0);
    }
    float alpha = graph_attr_float(n, "alpha", 1.0f);
    chain c = {0};
    const char *x = NULL, *out = NULL, *k = NULL, *gt = NULL, *m = NULL;
    int rc = ch_begin(u, g, node, &c, &x, &out);
    if (!rc) rc = up_emit_scalar(u, g, c.node, "alpha", c.elem, alpha, &k);
    const char *i1[2] = {x, k};
    Onnx__NodeProto *cast = NULL;
    if (!rc) rc = ch_op(&c, "Greater", i1, 2, NULL, &gt, NULL);
    if (!rc) rc = ch_op(&c, "Cast", &gt, 1, NULL, &m, &cast);
    if (!rc && graph_node_set_attr_int(g, cast, "to", c.elem)) rc = up_nomem(u);
    const char *i2[2] = {x, m};
    if (!rc) rc = ch_op(&c, "Mul", i2, 2, out, &m, NULL);
    if (!rc && act) json_put_str(act, "rewrite", "Greater+Cast+Mul");
    return rc;
}

static const retired retired_ops[] = {
    {"Affine", r_affine},
    {"ImageScaler", r_image_scaler},
    {"ParametricSoftplus", r_parametric_softplus},
    {"Scale", r_scale},
    {"ScaledTanh", r_scaled_tanh},
    {"ThresholdedRelu", r_thresholded_relu},
};

const retired *up_retired_find(const char *op) {
    for (size_t i = 0; i < countof(retired_ops); i++)
        if (strcmp(retired_ops[i].op, op) == 0) return &retired_ops[i];
    return NULL;
}

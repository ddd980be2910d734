/*
** Adapters that rebuild the node rather than edit it: BatchNormalization-14's
** single output, Dropout-10's bool mask, Softmax/LogSoftmax/Hardmax's old 2-D
** coercion, Scatter renamed ScatterElements.
*/
#include "passes/upgrade/upgrade_impl.h"

/* A value no node reads and that is no graph output. */
static bool value_unused(graph *g, const char *name) {
    if (!name || !*name) return true;
    graph_value *v = graph_find(g, name);
    return !graph_value_is_output(g, name) && (!v || v->n_uses == 0);
}

/* BatchNormalization-14 has only Y outside training mode. */
int up_adapt_bn_14(up *u, graph *g, int32_t *node, json_w *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    if (n->n_output <= 1) return 0;
    for (size_t i = 1; i < n->n_output; i++)
        if (!value_unused(g, n->output[i]))
            return err_set(u->err, TILEOPT_UNSUPPORTED,
                           "node %s: BatchNormalization training outputs are used",
                           graph_node_id(g, *node));
    const char *ins[8];
    size_t k = up_node_inputs(n, ins, 8);
    return up_replace_node(u, g, node, n->op_type, ins, k, 1);
}

/* Dropout-10's mask is bool where 7's had the data's type (all ones outside
** training): a Cast back to that type keeps every reader of the mask, and a mask
** that is a graph output, as they were. */
int up_adapt_dropout_7_10(up *u, graph *g, int32_t *node, json_w *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    if (n->n_output < 2 || !n->output[1] || !*n->output[1]) return 0;
    const char *mask = n->output[1];
    int32_t elem = up_data_elem(u, g, *node, n->input[0]);
    const char *bool_mask = up_fresh(u, g, *node, "mask");
    if (!bool_mask) return TILEOPT_NOMEM;
    const char *ins[2];
    size_t k = up_node_inputs(n, ins, 2);
    const char *outs[2] = {n->output[0], bool_mask};
    int rc = up_replace_node_as(u, g, node, "Dropout", ins, k, 2, outs);
    if (rc) return rc;
    const char *cast_name = up_fresh(u, g, *node, "mask_cast");
    if (!cast_name) return TILEOPT_NOMEM;
    Onnx__NodeProto *c = graph_add_node(g, "Cast", cast_name, &bool_mask, 1, &mask, 1, NULL);
    if (!c) return up_nomem(u);
    return graph_node_set_attr_int(g, c, "to", elem) ? up_nomem(u) : 0;
}

/*
** Softmax, LogSoftmax, Hardmax before 13 coerced the input to 2-D at `axis` and
** normalized over the flattened trailing part. When axis is the last axis both
** agree; otherwise Flatten(axis) -> op(axis=-1) -> Reshape back to shape(x).
*/
int up_adapt_softmax_11_13(up *u, graph *g, int32_t *node, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *x = graph_node_input(n, 0);
    if (!x || n->n_output != 1)
        return err_set(u->err, TILEOPT_INVALID, "node %s: %s needs one input and one output",
                       graph_node_id(g, *node), n->op_type);
    int64_t axis = graph_attr_int(n, "axis", 1);
    int32_t r = up_rank_of(g, x);
    if (r >= 0 && axis < 0) axis += r;
    if (r >= 0 && (axis < 0 || axis > r))
        return err_set(u->err, TILEOPT_INVALID, "node %s: axis %lld out of range for rank %d",
                       graph_node_id(g, *node), (long long)axis, r);
    if (r > 0 && axis == r - 1)
        return graph_node_set_attr_int(g, n, "axis", axis) ? up_nomem(u) : 0;
    const char *flat = NULL, *shape = NULL, *mid = NULL;
    Onnx__NodeProto *f = NULL;
    int rc;
    if ((rc = up_emit(u, g, *node, "Flatten", &x, 1, &flat, &f))) return rc;
    if (graph_node_set_attr_int(g, f, "axis", axis)) return up_nomem(u);
    if ((rc = up_emit(u, g, *node, "Shape", &x, 1, &shape, NULL))) return rc;
    /* The node keeps its outputs' name through a new node that reads a fresh
    ** intermediate: op(flat) -> mid, Reshape(mid, shape) -> the original output. */
    const char *out = n->output[0];
    mid = up_fresh(u, g, *node, "2d");
    if (!mid) return TILEOPT_NOMEM;
    const char *op = n->op_type;
    Onnx__AttributeProto **attrs = n->attribute;
    size_t n_attr = n->n_attribute;
    const char *name = n->name;
    char *doc = n->doc_string;
    graph_remove_node(g, *node);
    int32_t idx;
    Onnx__NodeProto *s = graph_add_node(g, op, name, &flat, 1, &mid, 1, &idx);
    if (!s) return up_nomem(u);
    s->n_attribute = n_attr;
    s->attribute = attrs;
    s->doc_string = doc;
    if (graph_node_set_attr_int(g, s, "axis", -1)) return up_nomem(u);
    const char *rn = up_fresh(u, g, idx, "Reshape");
    const char *ins[2] = {mid, shape};
    if (!rn || !graph_add_node(g, "Reshape", rn, ins, 2, &out, 1, NULL)) return up_nomem(u);
    *node = idx;
    if (act) json_put_str(act, "rewrite", "Flatten+Reshape");
    return 0;
}

int up_adapt_scatter_9_11(up *u, graph *g, int32_t *node, json_w *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *ins[3];
    size_t k = up_node_inputs(n, ins, 3);
    return up_replace_node(u, g, node, "ScatterElements", ins, k, 0);
}

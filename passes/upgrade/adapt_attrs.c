/*
** Adapters for steps that only drop, retype or default an attribute in place:
** consumed_inputs, Concat's axis, Cast's string `to`, is_test, BatchNormalization's
** spatial, RNN/GRU/LSTM's output_sequence, LpPool's float p, RoiAlign's mode,
** GridSample's mode names.
*/
#include <math.h>
#include <string.h>
#include <strings.h>

#include "passes/upgrade/upgrade_impl.h"

int up_adapt_consumed_inputs(up *u, graph *g, int32_t *node, json_w *act) {
    (void)u;
    (void)act;
    graph_node_del_attr(graph_node(g, *node), "consumed_inputs");
    return 0;
}

int up_adapt_concat_3_4(up *u, graph *g, int32_t *node, json_w *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    if (!graph_attr(n, "axis") && graph_node_set_attr_int(g, n, "axis", 1)) return up_nomem(u);
    return 0;
}

/* Cast's `to` was a string (the DataType name) until opset 6. */
int up_adapt_cast_5_6(up *u, graph *g, int32_t *node, json_w *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    Onnx__AttributeProto *a = graph_attr(n, "to");
    if (!a || a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING) return 0;
    char name[32];
    size_t len = a->s.len < sizeof name - 1 ? a->s.len : sizeof name - 1;
    memcpy(name, a->s.data, len);
    name[len] = 0;
    for (int32_t e = 1; e < DT_COUNT; e++) {
        if (strcasecmp(dtype_name(e), name) != 0) continue;
        graph_node_del_attr(n, "to");
        return graph_node_set_attr_int(g, n, "to", e) ? up_nomem(u) : 0;
    }
    return err_set(u->err, TILEOPT_INVALID, "node %s: Cast to unknown type '%s'",
                   graph_node_id(g, *node), name);
}

/* is_test went away in opset 7: those ops always run in inference mode then. */
int up_adapt_is_test(up *u, graph *g, int32_t *node, json_w *act) {
    (void)u;
    (void)act;
    graph_node_del_attr(graph_node(g, *node), "is_test");
    return 0;
}

int up_adapt_bn_spatial(up *u, graph *g, int32_t *node, json_w *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    if (graph_attr_int(n, "spatial", 1) == 0)
        return err_set(u->err, TILEOPT_UNSUPPORTED,
                       "node %s: BatchNormalization spatial=0 has no opset-9 form",
                       graph_node_id(g, *node));
    graph_node_del_attr(n, "spatial");
    return 0;
}

/* RNN, GRU, LSTM before 7: output_sequence only said whether Y was wanted, which
** an absent optional output says now. */
int up_adapt_rnn_7(up *u, graph *g, int32_t *node, json_w *act) {
    (void)u;
    (void)act;
    graph_node_del_attr(graph_node(g, *node), "output_sequence");
    return 0;
}

/* LpPool's p was a float until opset 2. */
int up_adapt_lppool_1_2(up *u, graph *g, int32_t *node, json_w *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    Onnx__AttributeProto *a = graph_attr(n, "p");
    if (!a || a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) return 0;
    float p = a->f;
    if (p != floorf(p) || p < 1 || p > 1e6)
        return err_set(u->err, TILEOPT_UNSUPPORTED, "node %s: LpPool p=%g is not whole",
                       graph_node_id(g, *node), (double)p);
    graph_node_del_attr(n, "p");
    return graph_node_set_attr_int(g, n, "p", (int64_t)p) ? up_nomem(u) : 0;
}

/* RoiAlign-16 changed the default coordinate mode; keep the old one. */
int up_adapt_roialign_10_16(up *u, graph *g, int32_t *node, json_w *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    if (graph_attr(n, "coordinate_transformation_mode")) return 0;
    return graph_node_set_attr_string(g, n, "coordinate_transformation_mode",
                                      "output_half_pixel") ? up_nomem(u) : 0;
}

/* GridSample-20 took N-D grids and renamed its modes: bilinear is linear, bicubic
** cubic (the default, bilinear, keeps its meaning under the new name). */
int up_adapt_gridsample_16_20(up *u, graph *g, int32_t *node, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *mode = graph_attr_string(n, "mode", "bilinear");
    const char *now = strcmp(mode, "bilinear") == 0  ? "linear"
                      : strcmp(mode, "bicubic") == 0 ? "cubic"
                                                     : NULL;
    if (!now || !graph_attr(n, "mode")) return 0;
    if (act) json_put_str(act, "mode", now);
    return graph_node_set_attr_string(g, n, "mode", now) ? up_nomem(u) : 0;
}

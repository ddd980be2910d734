/*
** Adapters for Upsample and Resize: Upsample-1's scale attributes, Upsample-7's
** scales attribute, Upsample to Resize at 10, Resize-10's coordinate defaults,
** Resize-11's tf_half_pixel_for_nn.
*/
#include <string.h>

#include "passes/upgrade/upgrade_impl.h"

/* Upsample-1: height_scale/width_scale on NCHW; taken straight to the input form of
** Upsample-9 (a floats attribute is what Upsample-7 wants, and only 7..8 have it). */
int up_adapt_upsample_1_7(up *u, graph *g, int32_t *node, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    if (u->tgt < 9)
        return err_set(u->err, TILEOPT_UNSUPPORTED,
                       "node %s: Upsample-1 migrates to opset 9 and above only",
                       graph_node_id(g, *node));
    Onnx__AttributeProto *h = graph_attr(n, "height_scale"), *w = graph_attr(n, "width_scale");
    if (!h || !w)
        return err_set(u->err, TILEOPT_INVALID,
                       "node %s: Upsample-1 needs height_scale and width_scale",
                       graph_node_id(g, *node));
    float scales[4] = {1, 1, h->f, w->f};
    int64_t dim = 4;
    const char *c;
    int rc = up_emit_const(u, g, *node, "scales", DT_FLOAT, &dim, 1, scales, sizeof scales, &c);
    if (rc) return rc;
    const char *mode = graph_attr_string(n, "mode", "nearest");
    graph_node_del_attr(n, "height_scale");
    graph_node_del_attr(n, "width_scale");
    if (strcmp(mode, "bilinear") == 0 && graph_node_set_attr_string(g, n, "mode", "linear"))
        return up_nomem(u);
    if (act) json_put_floats(act, "scales", scales, 4);
    const char *ins[2] = {graph_node_input(n, 0), c};
    return up_replace_node(u, g, node, "Upsample", ins, 2, 0);
}

int up_adapt_upsample_7_9(up *u, graph *g, int32_t *node, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    Onnx__AttributeProto *a = graph_attr(n, "scales");
    if (!a) {
        if (graph_node_input(n, 1)) return 0; /* already an input (from Upsample-1) */
        return err_set(u->err, TILEOPT_INVALID, "node %s: Upsample without scales",
                       graph_node_id(g, *node));
    }
    int64_t dim = (int64_t)a->n_floats;
    const char *c;
    int rc = up_emit_const(u, g, *node, "scales", DT_FLOAT, &dim, 1, a->floats,
                           a->n_floats * sizeof(float), &c);
    if (rc) return rc;
    if (act) json_put_floats(act, "scales", a->floats, (int)a->n_floats);
    graph_node_del_attr(n, "scales");
    const char *ins[2] = {graph_node_input(n, 0), c};
    return up_replace_node(u, g, node, "Upsample", ins, 2, 0);
}

/* Upsample is deprecated at 10; Resize-10 takes the same inputs and modes. */
int up_adapt_upsample_9_10(up *u, graph *g, int32_t *node, json_w *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *ins[2];
    size_t k = up_node_inputs(n, ins, 2);
    return up_replace_node(u, g, node, "Resize", ins, k, 0);
}

/* Resize-10 (and the Upsample it came from) computed source coordinates as
** out / scale and picked the floor for nearest; Resize-11's defaults differ. */
int up_adapt_resize_10_11(up *u, graph *g, int32_t *node, json_w *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    int64_t zero = 0;
    const char *roi;
    int rc = up_emit_const(u, g, *node, "roi", DT_FLOAT, &zero, 1, NULL, 0, &roi);
    if (rc) return rc;
    const char *mode = graph_attr_string(n, "mode", "nearest");
    if (graph_node_set_attr_string(g, n, "coordinate_transformation_mode", "asymmetric"))
        return up_nomem(u);
    if (strcmp(mode, "nearest") == 0 && graph_node_set_attr_string(g, n, "nearest_mode", "floor"))
        return up_nomem(u);
    const char *ins[3] = {graph_node_input(n, 0), roi, graph_node_input(n, 1)};
    if (!ins[2]) ins[2] = "";
    return up_replace_node(u, g, node, "Resize", ins, 3, 0);
}

/* Resize-13 dropped tf_half_pixel_for_nn, x_original = (x + 0.5) / scale: it is
** half_pixel's h = (x + 0.5) / scale - 0.5 plus 0.5, so nearest's floor of it is
** round_prefer_ceil of h (floor(h + 0.5)) and its round_prefer_floor is the
** ceil of h (ceil(x_original - 0.5)). Its ceil and round_prefer_ceil are one
** past those, and linear or cubic sample at h + 0.5: none has a Resize-13 form.
** Left as it was, the mode is one Resize-13 does not define (ONNX Runtime still
** runs it, the evaluator gives no verdict on it). */
int up_adapt_resize_11_13(up *u, graph *g, int32_t *node, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *ctm = graph_attr_string(n, "coordinate_transformation_mode", "half_pixel");
    if (strcmp(ctm, "tf_half_pixel_for_nn") != 0) return 0;
    const char *mode = graph_attr_string(n, "mode", "nearest");
    const char *round = graph_attr_string(n, "nearest_mode", "round_prefer_floor");
    const char *to = NULL;
    if (strcmp(mode, "nearest") == 0 && strcmp(round, "floor") == 0) to = "round_prefer_ceil";
    if (strcmp(mode, "nearest") == 0 && strcmp(round, "round_prefer_floor") == 0) to = "ceil";
    if (!to)
        return err_set(u->err, TILEOPT_UNSUPPORTED,
                       "node %s: Resize-13 has no coordinate transformation equal to "
                       "tf_half_pixel_for_nn with mode %s%s%s", graph_node_id(g, *node), mode,
                       strcmp(mode, "nearest") == 0 ? " and nearest_mode " : "",
                       strcmp(mode, "nearest") == 0 ? round : "");
    if (graph_node_set_attr_string(g, n, "coordinate_transformation_mode", "half_pixel") ||
        graph_node_set_attr_string(g, n, "nearest_mode", to))
        return up_nomem(u);
    if (act) {
        json_put_str(act, "coordinate_transformation_mode", "half_pixel");
        json_put_str(act, "nearest_mode", to);
    }
    return 0;
}

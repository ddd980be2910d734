/*
** fuse_pad_into_conv: a Conv of Pad(x) by zeros on the spatial axes only is
** the Conv of x with those pads added to its own: a Conv pads with zeros, so
** it reads the same values at the same places, and its output size counts
** the same total. Pads that are not that (edge or reflect mode, a value other
** than 0, a crop, the batch or channels padded), a Pad read elsewhere, and a
** Conv whose auto_pad computes its pads stay, with their reason.
*/
#include <string.h>

#include "passes/conv/conv_impl.h"

static int pad_conv_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    if (op_of(n) != OP_Conv) return TILEOPT_OK;
    cv_pad p;
    bool found;
    const char *why;
    int rc = cv_pad_find(pc, g, node, &p, &found, &why);
    if (rc || !found) return rc;
    if (!why && strcmp(graph_attr_string(n, "auto_pad", "NOTSET"), "NOTSET") != 0)
        why = "the Conv's auto_pad computes its pads from the input it reads";
    if (why) {
        pass_skip(pc, g, node, "not merged with the Pad before it: %s", why);
        return TILEOPT_OK;
    }
    if ((rc = cv_pad_merge(pc, g, node, &p))) return rc;
    json_w *a = pass_action(pc, g, node, "rewritten");
    if (a) {
        json_put_str(a, "rule", "zero Pad into the Conv's pads");
        json_put_str(a, "from", graph_node_id(g, p.node));
    }
    rw_drop_unread(pc, g, p.node, "into the Conv's pads");
    return TILEOPT_OK;
}

int pass_fuse_pad_into_conv(pass_ctx *pc) {
    static const op_id ops[] = {OP_Pad};
    if (!rw_model_has(pc->model, ops, countof(ops))) return TILEOPT_OK;
    return rw_walk(pc, pad_conv_rule);
}

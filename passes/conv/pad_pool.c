/*
** fuse_pad_into_pool: an AveragePool of Pad(x) by zeros on the spatial axes
** is the AveragePool of x with those pads added to its own when the pool
** counts its padding (count_include_pad=1): the Pad's zeros are elements the
** average divides by, and so are the pool's own zero pads. A pool that leaves
** its pads out of the divisor (count_include_pad=0, the default) but has none
** of its own divides every window by its full size, the Pad's zeros included:
** it takes the Pad's as its own and counts them (count_include_pad=1). One
** with pads of its own as well would have to count some pads and not others:
** that pair stays. So does a pool with ceil_mode (a last window can run past
** the padded end, and runtimes have differed on what such a window divides
** by), one whose auto_pad computes its pads, and a MaxPool: it pads with -inf,
** and a zero Pad can be the maximum of a window of negatives.
*/
#include <string.h>

#include "passes/conv/conv_impl.h"

/* Does pool n pad by nothing itself? */
static bool no_own_pads(const Onnx__NodeProto *n) {
    const Onnx__AttributeProto *a = graph_attr(n, "pads");
    for (size_t i = 0; a && i < a->n_ints; i++)
        if (a->ints[i] != 0) return false;
    return true;
}

/* Why pool n cannot take a zero Pad as its own pads, or NULL. */
static const char *not_exact(pass_ctx *pc, const Onnx__NodeProto *n) {
    if (op_of(n) == OP_MaxPool)
        return "MaxPool pads with -inf, and a zero Pad can be a window's maximum";
    if (graph_opset(pc->model, "") < 7)
        return "before opset 7 AveragePool cannot count its pads, which the Pad's zeros are";
    if (graph_attr_int(n, "count_include_pad", 0) == 0 && !no_own_pads(n))
        return "count_include_pad=0 with pads of its own: it would have to count the Pad's "
               "zeros and not its own";
    if (graph_attr_int(n, "ceil_mode", 0) != 0)
        return "ceil_mode: a last window can run past the padded end, and runtimes have "
               "differed on what it divides by";
    if (strcmp(graph_attr_string(n, "auto_pad", "NOTSET"), "NOTSET") != 0)
        return "the pool's auto_pad computes its pads from the input it reads";
    return NULL;
}

static int pad_pool_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    op_id op = op_of(n);
    if (op != OP_AveragePool && op != OP_MaxPool) return TILEOPT_OK;
    const char *x = graph_node_input(n, 0);
    bool counts = graph_attr_int(n, "count_include_pad", 0) != 0;
    int rc = cv_pad_fold(pc, g, node, not_exact,
                         counts ? "zero Pad into the AveragePool's pads (count_include_pad)"
                                : "zero Pad into the pads of an AveragePool without its own, "
                                  "now counting them (count_include_pad=1)",
                         "into the pool's pads");
    /* the pool reads the Pad's input once it took the Pad */
    if (rc || counts || graph_node_input(graph_node(g, node), 0) == x) return rc;
    rc = graph_node_set_attr_int(g, graph_node(g, node), "count_include_pad", 1);
    return rc ? err_set(pc->err, rc, "out of memory") : TILEOPT_OK;
}

int pass_fuse_pad_into_pool(pass_ctx *pc) {
    return rw_walk(pc, pad_pool_rule);
}

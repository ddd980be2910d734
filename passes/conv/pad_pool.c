/*
** fuse_pad_into_pool: an AveragePool of Pad(x) by zeros on the spatial axes
** is the AveragePool of x with those pads added to its own only when the pool
** counts its padding (count_include_pad=1): the Pad's zeros are elements the
** average divides by, and only then are the pool's own zero pads too. With
** count_include_pad=0 (the default) the pool leaves its pads out of the
** divisor, and a window over the padded border would average fewer values:
** that pair stays. So does a pool with ceil_mode (a last window can run past
** the padded end, and runtimes have differed on what such a window divides
** by), one whose auto_pad computes its pads, and a MaxPool: it pads with -inf, and a zero Pad can be the maximum
** of a window of negatives.
*/
#include <string.h>

#include "passes/conv/conv_impl.h"

/* Why pool n cannot take a zero Pad as its own pads, or NULL. */
static const char *not_exact(pass_ctx *pc, const Onnx__NodeProto *n) {
    if (op_of(n) == OP_MaxPool)
        return "MaxPool pads with -inf, and a zero Pad can be a window's maximum";
    if (graph_opset(pc->model, "") < 7 || graph_attr_int(n, "count_include_pad", 0) == 0)
        return "count_include_pad=0: the pool would leave the padded zeros out of its "
               "averages, which count the Pad's";
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
    return cv_pad_fold(pc, g, node, not_exact,
                       "zero Pad into the AveragePool's pads (count_include_pad)",
                       "into the pool's pads");
}

int pass_fuse_pad_into_pool(pass_ctx *pc) {
    static const op_id ops[] = {OP_Pad};
    if (!rw_model_has(pc->model, ops, countof(ops))) return TILEOPT_OK;
    return rw_walk(pc, pad_pool_rule);
}

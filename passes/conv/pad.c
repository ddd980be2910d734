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

/* The Conv's auto_pad computes its pads: a Pad's cannot be added to them. */
static const char *conv_guard(pass_ctx *pc, const Onnx__NodeProto *n) {
    (void)pc;
    return strcmp(graph_attr_string(n, "auto_pad", "NOTSET"), "NOTSET") != 0
               ? "the Conv's auto_pad computes its pads from the input it reads"
               : NULL;
}

static int pad_conv_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    if (op_of(n) != OP_Conv) return TILEOPT_OK;
    return cv_pad_fold(pc, g, node, conv_guard, "zero Pad into the Conv's pads",
                       "into the Conv's pads");
}

int pass_fuse_pad_into_conv(pass_ctx *pc) {
    return rw_walk(pc, pad_conv_rule);
}

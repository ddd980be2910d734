/*
** eliminate_identity: an Identity hands its input on, so its readers read the
** input. Exporters write one for every shared weight and every renamed output
** (torchvision's models hold one per Conv of a shared parameter); runtimes
** copy or alias it at every run. A graph output keeps its name: the node that
** computes the Identity's input writes the output instead.
*/
#include "passes/eliminate/eliminate_impl.h"

static int identity_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    const char *x = op_of(n) == OP_Identity ? graph_node_input(n, 0) : NULL;
    if (!x || n->n_output != 1) return TILEOPT_OK;
    return rw_eliminate_into(pc, g, node, x, "Identity");
}

int pass_eliminate_identity(pass_ctx *pc) {
    return rw_walk(pc, identity_rule);
}

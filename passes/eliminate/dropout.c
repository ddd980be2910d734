/*
** eliminate_dropout: at inference a Dropout hands its input on, so it goes.
** It stays where it may train: is_test=0 before opset 7 (the default), a
** training_mode input that is true or only known at run time from opset 12,
** or a mask output somebody reads (a mask of ones would have to be built).
*/
#include "passes/eliminate/eliminate_impl.h"

/* Why node may drop elements at run time, or NULL when it cannot. */
static const char *training(pass_ctx *pc, graph *g, const Onnx__NodeProto *n) {
    int64_t opset = graph_opset(pc->model, "");
    if (opset < 7 && graph_attr_int(n, "is_test", 0) == 0)
        return "is_test is 0: before opset 7 that is training, which scales and drops";
    const char *mode = opset >= 12 ? graph_node_input(n, 2) : NULL;
    double v;
    if (mode && !rw_const_uniform(pc, g, mode, &v))
        return "training_mode is only known at run time";
    if (mode && v != 0) return "training_mode is true";
    return NULL;
}

static int dropout_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    const char *x = op_of(n) == OP_Dropout ? graph_node_input(n, 0) : NULL;
    if (!x || !n->n_output) return TILEOPT_OK;
    const char *why = training(pc, g, n);
    if (!why && n->n_output > 1) {
        rw_reads r = rw_reads_of(g, n->output[1]);
        if (r.slots || r.implicit || r.output) why = "its mask is read";
    }
    if (why) {
        pass_skip(pc, g, node, "%s", why);
        return TILEOPT_OK;
    }
    return rw_eliminate_into(pc, g, node, x, "Dropout at inference");
}

int pass_eliminate_dropout(pass_ctx *pc) {
    return rw_walk(pc, dropout_rule);
}

/*
** eliminate_argmax_monotone: ArgMax and ArgMin of f(x) give the indices they
** give of x when f keeps every order and every difference: a Cast to a type
** that holds each value exactly (int8 to int32, float to double). Ops that
** are monotone only in real arithmetic stay, with their reason: rounding maps
** nearby values onto one (Exp saturates, Softmax of close logits rounds to one
** probability, Log and Sqrt compress), and ArgMax then picks the first of the
** tied indices where x had a strict maximum.
*/
#include "passes/eliminate/eliminate_impl.h"

static const op_id rounded_monotone[] = {OP_Exp, OP_Log, OP_LogSoftmax, OP_Sigmoid,
                                         OP_Softmax, OP_Sqrt, OP_Tanh};

static int argmax_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    op_id op = op_of(n);
    const char *fx = op == OP_ArgMax || op == OP_ArgMin ? graph_node_input(n, 0) : NULL;
    int32_t p;
    const Onnx__NodeProto *f = fx ? rw_producer(g, fx, &p) : NULL;
    if (!f || !rw_sole_reader(g, fx, node)) return TILEOPT_OK;
    op_id fop = op_of(f);
    const char *x = graph_node_input(f, 0);
    if (fop == OP_Cast && x && rw_cast_exact(el_elem(g, x), el_elem(g, fx))) {
        int rc = graph_node_set_input(g, node, 0, x);
        if (rc) return err_set(pc->err, rc, "out of memory");
        json_w *a = pass_action(pc, g, node, "rewritten");
        if (a) json_put_str(a, "rule", "reads the input of an exact Cast");
        rw_drop_unread(pc, g, p, "its reader ArgMax reads its input");
        return TILEOPT_OK;
    }
    for (size_t i = 0; i < countof(rounded_monotone); i++)
        if (fop == rounded_monotone[i])
            pass_skip(pc, g, node, "%s is monotone, but rounding can tie values that differ, "
                      "and the tie changes the index %s picks", f->op_type, n->op_type);
    return TILEOPT_OK;
}

int pass_eliminate_argmax_monotone(pass_ctx *pc) {
    static const op_id ops[] = {OP_ArgMax, OP_ArgMin};
    if (!rw_model_has(pc->model, ops, countof(ops))) return TILEOPT_OK;
    return rw_walk(pc, argmax_rule);
}

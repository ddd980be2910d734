/*
** eliminate_idempotent: f(f(x)) is f(x) for the ops below, exactly (each maps
** its results to themselves: Relu of a non-negative number, Floor of a whole
** one...), so the second application goes and its readers read the first.
*/
#include "passes/eliminate/eliminate_impl.h"

static const op_id idempotent_ops[] = {OP_Abs, OP_Ceil, OP_Floor, OP_Relu, OP_Round, OP_Sign};

static bool idempotent(op_id op) {
    for (size_t i = 0; i < countof(idempotent_ops); i++)
        if (idempotent_ops[i] == op) return true;
    return false;
}

static int idempotent_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    op_id op = op_of(n);
    const char *x = idempotent(op) ? graph_node_input(n, 0) : NULL;
    const Onnx__NodeProto *p = x ? rw_producer(g, x, NULL) : NULL;
    if (!p || op_of(p) != op || n->n_output != 1) return TILEOPT_OK;
    bool done;
    const char *why;
    int rc = rw_forward(pc, g, node, 0, x, &done, &why);
    if (rc) return rc;
    if (!done) {
        pass_skip(pc, g, node, "%s of a %s, but %s", n->op_type, p->op_type, why);
        return TILEOPT_OK;
    }
    json_w *a = pass_action(pc, g, node, "eliminated");
    if (a) json_put_str(a, "rule", "applied twice");
    return TILEOPT_OK;
}

int pass_eliminate_idempotent(pass_ctx *pc) {
    if (!op_model_has(pc->model, idempotent_ops, countof(idempotent_ops))) return TILEOPT_OK;
    return rw_walk(pc, idempotent_rule);
}

/*
** No-op tests of arithmetic by a neutral constant: x + 0, 0 + x, x - 0, x * 1,
** 1 * x, x / 1 and x ^ 1. Exporters leave them behind a normalization whose
** mean is 0 or whose scale is 1, or a log-mel front end that subtracts a
** reference of 0.
**
** Each gives x back for every x, NaN and the infinities included, with one
** exception ONNX Runtime's basic level makes too: adding +0 (or subtracting
** -0) to a -0 gives +0, a zero of the other sign, equal to it in every
** comparison. The constant must not broadcast x to a larger shape: then the
** node does more than hand x on, and stays.
**
** Only a constant of one element is taken, as ONNX Runtime takes it. A vector
** of 1s or 0s is a parameter that happens to hold its initial value (the
** weight and bias of a LayerNorm an untrained export writes out op by op):
** ONNX Runtime fuses such a Mul and Add with the ops around them into one
** LayerNormalization, and without them it cannot (PyTorch's nn.Transformer
** ran 0.69x as fast with them gone).
*/
#include "passes/eliminate/eliminate_impl.h"

size_t el_arith_operand(graph *g, const Onnx__NodeProto *n) {
    graph_const c;
    op_id op = op_of(n);
    bool commutes = op == OP_Add || op == OP_Mul;
    const char *a = graph_node_input(n, 0), *b = graph_node_input(n, 1);
    if (commutes && a && b && graph_const_find(g, a, &c) && !graph_const_find(g, b, &c))
        return 1;
    return 0;
}

/* Each op's neutral constant (on the constant's side: second for Sub, Div and
** Pow) and the rule it makes. */
static const struct {
    op_id op;
    double neutral;
    const char *rule;
} arith[] = {
    {OP_Add, 0.0, "adds 0"},          {OP_Sub, 0.0, "subtracts 0"},
    {OP_Mul, 1.0, "multiplies by 1"}, {OP_Div, 1.0, "divides by 1"},
    {OP_Pow, 1.0, "raises to the power 1"},
};

/* A constant of 1s in every dim, of no more dims than x (a scalar whatever
** x's rank), broadcasts to x's shape whatever that is. */
static bool keeps_shape(graph *g, const char *k, const char *x) {
    const graph_type *tk = rw_type(g, k);
    int32_t rx = rw_rank(g, x);
    if (!tk || tk->rank < 0 || (tk->rank > 0 && tk->rank > rx)) return false;
    for (int32_t i = 0; i < tk->rank; i++)
        if (!dim_is(dim_at(tk, i), 1)) return false;
    return true;
}

/* The most elements a neutral vector is read for, to say why it stays: a
** LayerNorm's width and more; bigger constants are no neutral parameter. */
#define NEUTRAL_VECTOR_MAX 65536

int el_nop_arith(pass_ctx *pc, graph *g, int32_t node, const char **rule, const char **why) {
    const Onnx__NodeProto *n = graph_node(g, node);
    op_id op = op_of(n);
    size_t row = 0;
    while (row < countof(arith) && arith[row].op != op) row++;
    if (row == countof(arith) || n->n_input != 2 || n->n_output < 1 || !n->output[0][0])
        return TILEOPT_OK;
    size_t slot = el_arith_operand(g, n);
    const char *x = graph_node_input(n, slot), *k = graph_node_input(n, 1 - slot);
    /* the count from the type first: reading every Mul's weights to find them
    ** not neutral would copy each, on every round */
    const graph_type *tk = k ? rw_type(g, k) : NULL;
    uint64_t count;
    double v;
    if (!x || !tk || !graph_type_numel(tk, &count) || count > NEUTRAL_VECTOR_MAX ||
        !rw_const_uniform(pc, g, k, &v) || v != arith[row].neutral)
        return TILEOPT_OK;
    if (count != 1) {
        *why = "its neutral constant has several elements, a parameter at its first value (a "
               "LayerNorm's weight of 1s, a bias of 0s): ONNX Runtime fuses the op into its "
               "neighbours, and the nodes left without it would run slower";
        return TILEOPT_OK;
    }
    /* Pow's exponent may have another type than x; the others share one */
    if (el_elem(g, x) == 0 || el_elem(g, x) != el_elem(g, n->output[0])) {
        *why = "the types of its input and output are not known to be one";
        return TILEOPT_OK;
    }
    if (!rw_same_shape(g, x, n->output[0]) && !keeps_shape(g, k, x)) {
        *why = "the constant may broadcast its input to a larger shape";
        return TILEOPT_OK;
    }
    *rule = arith[row].rule;
    return TILEOPT_OK;
}

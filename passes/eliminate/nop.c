/*
** eliminate_nop: nodes that hand their input on unchanged go, their readers
** reading the input (onnxoptimizer's eliminate_nop_* passes, one table here).
** Which nodes are no-ops is decided by the tests of nop_layout.c, nop_data.c
** and nop_arith.c from shapes and constants alone, so a node whose effect depends on
** values only known at run time (a Reshape to a computed shape that inference
** cannot follow, a Squeeze of a dim that may not be 1) stays.
*/
#include "passes/eliminate/eliminate_impl.h"

static const struct {
    op_id op;
    el_nop_test test;
} nop_tests[] = {
    {OP_Add, el_nop_arith},           {OP_Cast, el_nop_cast},
    {OP_CastLike, el_nop_cast},       {OP_Concat, el_nop_concat},
    {OP_Div, el_nop_arith},           {OP_Expand, el_nop_same_shape},
    {OP_Flatten, el_nop_flatten},     {OP_Mul, el_nop_arith},
    {OP_Pad, el_nop_pad},             {OP_Pow, el_nop_arith},
    {OP_Reshape, el_nop_reshape},     {OP_Slice, el_nop_slice},
    {OP_Split, el_nop_split},         {OP_Squeeze, el_nop_same_shape},
    {OP_Sub, el_nop_arith},           {OP_Transpose, el_nop_transpose},
    {OP_Unsqueeze, el_nop_same_shape},
};

static int nop_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    op_id op = op_of(n);
    el_nop_test test = NULL;
    for (size_t i = 0; i < countof(nop_tests) && !test; i++)
        if (nop_tests[i].op == op) test = nop_tests[i].test;
    /* the operand handed on: input 0, but for a neutral constant first */
    const char *x = test ? graph_node_input(n, test == el_nop_arith ? el_arith_operand(g, n) : 0)
                         : NULL;
    if (!x) return TILEOPT_OK;
    const char *rule = NULL, *why = NULL;
    int rc = test(pc, g, node, &rule, &why);
    if (rc || !rule) {
        if (!rc && why) pass_skip(pc, g, node, "not a no-op: %s", why);
        return rc;
    }
    bool done;
    rc = rw_forward(pc, g, node, 0, x, &done, &why);
    if (rc) return rc;
    if (!done) {
        pass_skip(pc, g, node, "a no-op (%s), but %s", rule, why);
        return TILEOPT_OK;
    }
    json_w *a = pass_action(pc, g, node, "eliminated");
    if (a) json_put_str(a, "rule", rule);
    return TILEOPT_OK;
}

int pass_eliminate_nop(pass_ctx *pc) {
    op_id ops[countof(nop_tests)];
    for (size_t i = 0; i < countof(nop_tests); i++) ops[i] = nop_tests[i].op;
    if (!op_model_has(pc->model, ops, countof(ops))) return TILEOPT_OK;
    return rw_walk(pc, nop_rule);
}

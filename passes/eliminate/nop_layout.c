/*
** No-op tests of the layout ops: a Reshape, Flatten, Squeeze, Unsqueeze or
** Expand whose output shape is provably its input's moves no element (they
** only relabel or broadcast), and a Transpose that permutes nothing, or only
** axes of size 1, leaves every element where it was.
*/
#include "passes/eliminate/eliminate_impl.h"

int el_nop_same_shape(pass_ctx *pc, graph *g, int32_t node, const char **rule,
                      const char **why) {
    (void)pc;
    (void)why;
    const Onnx__NodeProto *n = graph_node(g, node);
    const char *x = graph_node_input(n, 0);
    if (!x || n->n_output < 1 || !n->output[0][0]) return TILEOPT_OK;
    if (el_elem(g, x) != el_elem(g, n->output[0])) return TILEOPT_OK;
    /* named dims count as equal only when they are the same dim (dim_eq) */
    if (rw_same_shape(g, x, n->output[0])) *rule = "output shape equals input shape";
    return TILEOPT_OK;
}

int el_nop_transpose(pass_ctx *pc, graph *g, int32_t node, const char **rule,
                     const char **why) {
    (void)pc;
    (void)why;
    const Onnx__NodeProto *n = graph_node(g, node);
    const char *x = graph_node_input(n, 0);
    const graph_type *t = rw_type(g, x);
    const Onnx__AttributeProto *perm = graph_attr(n, "perm");
    if (!x || !t || t->rank < 0) return TILEOPT_OK;
    if (!perm) {
        /* no perm reverses the axes */
        if (t->rank <= 1) *rule = "reverses at most one axis";
        return TILEOPT_OK;
    }
    if (perm->n_ints != (size_t)t->rank) return TILEOPT_OK;
    bool identity = true, ones_only = true;
    for (int32_t i = 0; i < t->rank; i++) {
        int64_t p = perm->ints[i];
        if (p < 0 || p >= t->rank) return TILEOPT_OK;
        if (p == i) continue;
        identity = false;
        ones_only = ones_only && dim_is(dim_at(t, i), 1) && dim_is(dim_at(t, (int32_t)p), 1);
    }
    if (identity) *rule = "identity permutation";
    else if (ones_only) *rule = "moves only axes of size 1";
    return TILEOPT_OK;
}

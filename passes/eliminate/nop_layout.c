/*
** No-op tests of the layout ops: a Reshape, Flatten, Squeeze, Unsqueeze or
** Expand whose output shape is provably its input's moves no element (they
** only relabel or broadcast), and a Transpose that permutes nothing, or only
** axes of size 1, leaves every element where it was. A Reshape and a Flatten
** are no-ops by their form too, whatever dims inference knows: a target that
** copies (0) or repeats each dim, and a Flatten of a 2-D input at axis 1.
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

/*
** Reshape to a target of x's rank that gives each dim back: a 0 copies it
** (unless allowzero makes 0 a size), a number is the dim inference knows, and
** one -1 is the element count over the other dims, which is the dim left when
** the others are known positive numbers (a 0 among them leaves -1 undefined),
** or when it is the only one.
*/
int el_nop_reshape(pass_ctx *pc, graph *g, int32_t node, const char **rule,
                   const char **why) {
    int rc = el_nop_same_shape(pc, g, node, rule, why);
    const Onnx__NodeProto *n = graph_node(g, node);
    int64_t opset = graph_opset(pc->model, "");
    const graph_type *t = rw_type(g, graph_node_input(n, 0));
    int64_t s[DIM_MAX_RANK];
    size_t len;
    if (rc || *rule || opset < 5 || !t || t->rank < 0 ||
        !rw_const_ints(g, graph_node_input(n, 1), s, DIM_MAX_RANK, &len) ||
        len != (size_t)t->rank)
        return rc;
    bool zero_is_size = opset >= 14 && graph_attr_int(n, "allowzero", 0) != 0;
    int32_t minus = -1;
    bool others_positive = true;
    for (int32_t i = 0; i < t->rank; i++) {
        dim d = dim_at(t, i);
        if (s[i] == -1 && minus < 0) {
            minus = i;
            continue;
        }
        if (s[i] == 0 && !zero_is_size) {
            others_positive = others_positive && dim_is_num(d) && d.n > 0;
            continue;
        }
        if (!dim_is(d, s[i]) || s[i] < 0) return TILEOPT_OK;
        others_positive = others_positive && s[i] > 0;
    }
    if (minus >= 0 && t->rank > 1 && !others_positive) return TILEOPT_OK;
    *rule = "its target gives every dim back";
    return TILEOPT_OK;
}

/* Flatten of a 2-D input at axis 1 (or -1) keeps both dims as they are. */
int el_nop_flatten(pass_ctx *pc, graph *g, int32_t node, const char **rule,
                   const char **why) {
    int rc = el_nop_same_shape(pc, g, node, rule, why);
    const Onnx__NodeProto *n = graph_node(g, node);
    int64_t axis = graph_attr_int(n, "axis", 1);
    if (!rc && !*rule && rw_rank(g, graph_node_input(n, 0)) == 2 && (axis == 1 || axis == -1))
        *rule = "flattens a 2-D input at axis 1";
    return rc;
}

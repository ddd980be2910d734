/*
** fold_reshape_target: a Reshape whose target is computed at run time from
** shapes (Shape, Gather, Concat...) but known to shape inference entry by
** entry becomes a Reshape to a constant. Exporters write Reshape(x,
** Concat(Shape(x)[0], 200)) for a flatten that keeps a dynamic batch, and
** Reshape(q, Concat(Shape(q)[0], Shape(q)[1], 8, 16)) to split heads: these are
** Reshape(x, [-1, 200]) and Reshape(q, [0, 0, 8, 16]), the same maps without a
** shape subgraph at run time (ONNX Runtime's basic level makes such constants).
**
** Each entry keeps its meaning. A number stays. An entry provably equal to x's
** dim at the same index becomes 0, which copies that dim (Reshape without
** allowzero). One entry known only at run time may become -1: the original
** reshapes x to a target whose element count is x's, so that entry is x's count
** over the product of the others, which is what -1 computes, wherever the
** original runs. That needs the others known numbers of at least 1 (a copied 0
** or a 0 size would leave -1 dividing by a product that can be 0), and the
** entry provably a size.
**
** A target that -1 cannot stand for may still be x's own dims with 1s put in
** or taken out (Reshape(x, Concat(Shape(x)[0], [1], Shape(x)[1:]))): the
** Reshape is then an Unsqueeze or a Squeeze of x at those axes, exact for every
** x, an empty batch too (ONNX Runtime's basic level writes [0, 1, -1, 120] for
** PaddleOCR's such Reshape, which fails on an empty batch). The dims compare by
** shape inference's equality (the same number, or the same named dim).
**
** The shape subgraph goes with its last reader, so the target is taken only
** when the Reshape alone reads it: with another reader the constant would add
** bytes and remove none.
*/
#include "passes/passes.h"
#include "passes/rewrite.h"

/* The entries of target sv as a constant into s (see above): NULL when they
** can be one, else why not. tx is x's type. */
static const char *as_constant(const shape_value *sv, bool allowzero, const graph_type *tx,
                               int64_t *s) {
    int32_t rx = tx ? tx->rank : -1;
    bool minus_one = false, zeros = false, made_minus_one = false;
    for (int32_t i = 0; i < sv->n; i++) {
        dim d = sv->e[i];
        if (dim_is_num(d)) {
            if (d.n < -1) return "its target holds a negative entry";
            minus_one |= d.n == -1;
            zeros |= d.n == 0;
            s[i] = d.n;
        } else if (!allowzero && i < rx && dim_eq(d, dim_at(tx, i))) {
            zeros = true;
            s[i] = 0;
        } else {
            if (minus_one) return "more than one entry of its target is known only at run time";
            if (!dim_nonneg(d)) return "the entry known only at run time may be negative";
            minus_one = made_minus_one = true;
            s[i] = -1;
        }
    }
    if (made_minus_one && zeros)
        return "its target holds a 0 (a copied dim or a size) beside the entry known only at "
               "run time, which -1 would divide by";
    return NULL;
}

/*
** The axes at which the entries of target sv (a 0 copying x's dim there, as
** Reshape reads it without allowzero) put 1s into x's dims (*unsqueeze) or
** take dims of 1 out of them: false when the target is no such relabelling.
** A -1 stands for one dim of x, whichever it is (the dims of 1 around it go
** first when some must): the element count over the other entries, which are
** x's other dims and 1s, is that dim wherever the original runs.
*/
static bool relabels_ones(const shape_value *sv, bool allowzero, const graph_type *tx,
                          int64_t *axes, size_t *n_axes, bool *unsqueeze) {
    int32_t rx = tx ? tx->rank : -1, rt = sv->n;
    if (rx < 0 || rx == rt) return false;
    dim t[DIM_MAX_RANK];
    bool rest[DIM_MAX_RANK] = {false}, seen_rest = false;
    for (int32_t i = 0; i < rt; i++) {
        t[i] = sv->e[i];
        if (dim_is(t[i], 0) && !allowzero) {
            if (i >= rx) return false;
            t[i] = dim_at(tx, i);
        } else if (dim_is(t[i], -1) && !seen_rest) {
            rest[i] = seen_rest = true;
        } else if (dim_is_num(t[i]) && t[i].n < 0) {
            return false;
        }
    }
    *n_axes = 0;
    *unsqueeze = rt > rx;
    int32_t i = 0, j = 0;
    /* walk both: a dim that is not the other's next must be a 1 of the longer */
    while (i < rt || j < rx) {
        if (i < rt && rest[i] && j < rx) {
            while (!*unsqueeze && j + 1 < rx && dim_is(dim_at(tx, j), 1) && rx - j > rt - i)
                axes[(*n_axes)++] = j++;
            i++, j++;
        } else if (i < rt && j < rx && dim_eq(t[i], dim_at(tx, j))) {
            i++, j++;
        } else if (*unsqueeze && i < rt && dim_is(t[i], 1)) {
            axes[(*n_axes)++] = i++;
        } else if (!*unsqueeze && j < rx && dim_is(dim_at(tx, j), 1)) {
            axes[(*n_axes)++] = j++;
        } else {
            return false;
        }
    }
    return true;
}

/* Reshape node becomes an Unsqueeze or a Squeeze of its input at axes. */
static int make_relabel(pass_ctx *pc, graph *g, int32_t node, bool unsqueeze,
                        const int64_t *axes, size_t n_axes) {
    const Onnx__NodeProto *n = graph_node(g, node);
    const char *op = unsqueeze ? "Unsqueeze" : "Squeeze";
    bool axes_input = graph_opset(pc->model, "") >= 13;
    const char *ins[2] = {n->input[0], NULL};
    const char *name = n->name && n->name[0] ? n->name : NULL;
    int rc = axes_input ? rw_add_ints(pc, g, n->input[1], axes, n_axes, 1, &ins[1]) : TILEOPT_OK;
    if (rc) return rc;
    json_w *a = pass_action(pc, g, node, "rewritten");
    if (a) {
        json_put_str(a, "rule", unsqueeze ? "a target of its input's dims with 1s put in made "
                                            "an Unsqueeze"
                                          : "a target of its input's dims with 1s taken out "
                                            "made a Squeeze");
        json_put_str(a, "op_now", op);
    }
    Onnx__NodeProto *m;
    if ((rc = rw_replace(pc, g, node, op, name, ins, axes_input ? 2 : 1, &m, NULL))) return rc;
    if (!axes_input && graph_node_set_attr_ints(g, m, "axes", axes, n_axes))
        return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    return TILEOPT_OK;
}

static int target_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    const char *t = op_of(n) == OP_Reshape ? graph_node_input(n, 1) : NULL;
    graph_const c;
    graph_value *v = t ? graph_find(g, t) : NULL;
    const shape_value *sv = v ? v->shape_value : NULL;
    /* a target known in every entry is fold's to make a constant */
    if (!sv || sv->rank != 1 || sv->n > DIM_MAX_RANK || shape_value_static(sv) ||
        graph_const_find(g, t, &c))
        return TILEOPT_OK;
    int64_t s[DIM_MAX_RANK];
    bool allowzero = graph_opset(pc->model, "") >= 14 && graph_attr_int(n, "allowzero", 0);
    const graph_type *tx = rw_type(g, n->input[0]);
    const char *why = as_constant(sv, allowzero, tx, s);
    bool sole = rw_sole_reader(g, t, node), unsqueeze;
    size_t n_axes;
    if (why && sole && relabels_ones(sv, allowzero, tx, s, &n_axes, &unsqueeze))
        return make_relabel(pc, g, node, unsqueeze, s, n_axes);
    if (!why && !sole)
        why = "its target is read elsewhere too: a constant beside it would remove nothing";
    if (why) {
        pass_skip(pc, g, node, "target not made a constant: %s", why);
        return TILEOPT_OK;
    }
    const char *name;
    int rc = rw_add_ints(pc, g, t, s, (size_t)sv->n, 1, &name);
    if (!rc) rc = graph_node_set_input(g, node, 1, name);
    if (rc) return err_set(pc->err, rc, "out of memory");
    pc->changed = true;
    json_w *a = pass_action(pc, g, node, "rewritten");
    if (a) {
        json_put_str(a, "rule", "target known entry by entry made a constant (0 copying x's "
                                "dims, -1 for one known only at run time)");
        json_put_str(a, "target", name);
    }
    return TILEOPT_OK;
}

int pass_fold_reshape_target(pass_ctx *pc) {
    return rw_walk(pc, target_rule);
}

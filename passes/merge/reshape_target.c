/*
** fold_reshape_target: a Reshape whose target is computed at run time from
** shapes (Shape, Gather, Concat...) but known to shape inference in every entry
** but one becomes a Reshape to a constant with -1 in that entry. Exporters
** write Reshape(x, Concat(Shape(x)[0], 200)) for a flatten that keeps a dynamic
** batch; Reshape(x, [-1, 200]) is the same map and needs no shape subgraph at
** run time (ONNX Runtime's basic level makes the same constant).
**
** Exact whenever the original runs: it reshapes x to a target whose element
** count is x's, so the one entry not known here is x's count over the product
** of the others, which is what -1 computes. That needs every other entry a
** number of at least 1 (a 0 copies a dim of x, or is a size with allowzero:
** dividing by a product that can be 0 leaves -1 undefined) and the unknown
** entry provably a size, not a -1 or a 0 of its own. The shape subgraph goes
** with its last reader, so the target is taken only when the Reshape alone
** reads it: with another reader the constant would add bytes and remove none.
*/
#include "passes/passes.h"
#include "passes/rewrite.h"

/* The entries of target sv, known but for one, as a constant with -1 there,
** into s: NULL when they can be, else why not. */
static const char *with_minus_one(const shape_value *sv, int64_t *s) {
    bool unknown = false;
    for (int32_t i = 0; i < sv->n; i++) {
        dim d = sv->e[i];
        if (!dim_is_num(d)) {
            if (unknown) return "more than one entry of its target is known only at run time";
            if (!dim_nonneg(d)) return "the entry known only at run time may be negative";
            unknown = true;
            s[i] = -1;
        } else if (d.n < 1) {
            return "its target holds a 0 or a -1 beside the entry known only at run time";
        } else {
            s[i] = d.n;
        }
    }
    return NULL;
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
    const char *why = with_minus_one(sv, s);
    if (!why && !rw_sole_reader(g, t, node))
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
        json_put_str(a, "rule", "target known but for one entry made a constant with -1 there");
        json_put_str(a, "target", name);
    }
    return TILEOPT_OK;
}

int pass_fold_reshape_target(pass_ctx *pc) {
    return rw_walk(pc, target_rule);
}

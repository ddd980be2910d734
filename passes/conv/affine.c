/*
** fuse_affine_into_conv: Mul, Add or Sub of a Conv's output by a constant that
** holds one value per output channel (or one for all) is folded into the
** Conv: a Mul scales its weights and bias, an Add or Sub (the bias an exporter
** writes as its own node) shifts its bias, so the Conv writes the result. The
** constant has to broadcast along the channel axis alone: one of shape
** [C, 1, 1] or [1, C, 1, 1] does, one of shape [W] or [1, 1, H, W] varies
** within a channel and stays, as does one whose rank would add axes to the
** output. A constant Sub from (c - conv) stays: the weights would change sign.
*/
#include <stdlib.h>
#include <string.h>

#include "graph/const.h"
#include "passes/conv/conv_impl.h"

/* Why constant k (of the Conv's type, or not) cannot be a per-channel map
** over the Conv's output, or NULL. */
static const char *not_per_channel(graph *g, const cv_conv *c, const char *k) {
    const graph_type *t = rw_type(g, k);
    if (!t || t->rank < 0) return "the constant's shape is unknown";
    if (t->rank > c->rank) return "the constant has more axes than the output";
    for (int32_t i = 0; i < t->rank; i++) {
        int32_t axis = c->rank - t->rank + i; /* right-aligned, as broadcasting goes */
        dim d = dim_at(t, i);
        if (dim_is(d, 1)) continue;
        if (axis == 1 && dim_is(d, c->m)) continue;
        return "the constant varies along an axis other than the channels";
    }
    return NULL;
}

static int affine_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    op_id op = op_of(n);
    if ((op != OP_Mul && op != OP_Add && op != OP_Sub) || n->n_input != 2) return TILEOPT_OK;
    /* the constant picks the slot: a node of two computed inputs (a residual
    ** Add) is no match, and says nothing */
    graph_const k_const;
    size_t slot = graph_const_find(g, graph_node_input(n, 1), &k_const) ? 0 : 1;
    const char *k = graph_node_input(n, 1 - slot);
    if (slot == 1 && !graph_const_find(g, k, &k_const)) return TILEOPT_OK;
    cv_conv c;
    bool found;
    const char *why;
    int rc = cv_find(pc, g, node, slot, &c, &found, &why);
    if (rc || !found) return rc;
    if (!why && op == OP_Sub && slot == 1) why = "the Conv's output is subtracted from a constant";
    if (!why) why = not_per_channel(g, &c, k);
    double *v = why ? NULL : malloc((size_t)c.m * sizeof *v);
    if (!why && !v) {
        cv_free(&c);
        return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    }
    if (!why && !cv_channel_values(pc, g, &c, k, v))
        why = "the other input is no constant of the Conv's type";
    for (int64_t i = 0; !why && op == OP_Sub && i < c.m; i++) v[i] = -v[i];
    bool done = false;
    if (!why)
        rc = cv_fold(pc, g, &c, node, op == OP_Mul ? v : NULL, op == OP_Mul ? NULL : v, &done,
                     &why);
    cv_free(&c);
    free(v);
    if (rc) return rc;
    if (!done) {
        cv_skip(pc, g, node, &c, why);
        return TILEOPT_OK;
    }
    json_w *a = pass_action(pc, g, node, "eliminated");
    if (a) {
        json_put_str(a, "rule", op == OP_Mul ? "Mul by a constant into the Conv's weights"
                                             : "bias into the Conv");
        json_put_str(a, "into", graph_node_id(g, c.node));
    }
    return TILEOPT_OK;
}

int pass_fuse_affine_into_conv(pass_ctx *pc) {
    static const op_id ops[] = {OP_Conv};
    if (!rw_model_has(pc->model, ops, countof(ops))) return TILEOPT_OK;
    return rw_walk(pc, affine_rule);
}

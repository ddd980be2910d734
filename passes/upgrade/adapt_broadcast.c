/*
** Adapters from legacy broadcasting (the broadcast and axis attributes of the
** binary ops before opset 7, Gemm's broadcast, PRelu's per-channel slope) to
** numpy broadcasting.
*/
#include "passes/upgrade/upgrade_impl.h"

/*
** Input slot of node reads b; legacy broadcasting aligned b's axes with ref's
** starting at axis, numpy aligns trailing axes. Append size-1 axes to b so both
** agree: Unsqueeze when the ranks are known, otherwise a Reshape to
** shape(b) ++ ones(rank(ref) - axis - rank(b)) computed at run time.
*/
static int align_at_axis(up *u, graph *g, int32_t *node, size_t slot, const char *ref,
                         int64_t axis, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *b = graph_node_input(n, slot);
    int32_t rb = up_rank_of(g, b), rr = up_rank_of(g, ref);
    if (axis < 0 && rr >= 0) axis += rr;
    const char *nb;
    int rc;
    if (rb >= 0 && (rr >= 0 || axis < 0)) {
        int64_t trailing = axis < 0 ? -axis - rb : rr - axis - rb;
        if (trailing < 0 || (rr >= 0 && (axis < 0 || axis > rr)))
            return err_set(u->err, TILEOPT_INVALID,
                           "node %s: broadcast axis %lld does not fit rank %d against %d",
                           graph_node_id(g, *node), (long long)axis, rb, rr);
        if (trailing == 0) return 0;
        if (trailing > 64)
            return err_set(u->err, TILEOPT_INVALID, "node %s: broadcast rank too large",
                           graph_node_id(g, *node));
        int64_t axes[64];
        for (int64_t i = 0; i < trailing; i++) axes[i] = rb + i;
        if ((rc = up_emit_axes_op(u, g, *node, "Unsqueeze", b, axes, (size_t)trailing, &nb)))
            return rc;
        if (act) json_put_num(act, "unsqueezed", (double)trailing);
    } else {
        if (u->tgt < 9)
            return err_set(u->err, TILEOPT_UNSUPPORTED,
                           "node %s: legacy broadcast with unknown ranks needs target "
                           "opset >= 9", graph_node_id(g, *node));
        const char *sb = NULL, *rkb = NULL, *sr = NULL, *rkr = NULL, *d = NULL, *cnt = NULL,
                   *ones = NULL, *shape = NULL, *axc = NULL;
        Onnx__NodeProto *cs = NULL, *cat = NULL;
        if ((rc = up_emit(u, g, *node, "Shape", &b, 1, &sb, NULL))) return rc;
        if ((rc = up_emit(u, g, *node, "Shape", &sb, 1, &rkb, NULL))) return rc;
        if ((rc = up_emit(u, g, *node, "Shape", &ref, 1, &sr, NULL))) return rc;
        if ((rc = up_emit(u, g, *node, "Shape", &sr, 1, &rkr, NULL))) return rc;
        int64_t av = axis;
        if (axis < 0) {
            /* count = -axis - rank(b), independent of ref */
            av = -axis;
            rkr = NULL;
        }
        if ((rc = up_emit_i64(u, g, *node, "axis", &av, 1, false, &axc))) return rc;
        if (rkr) {
            const char *i1[2] = {rkr, axc};
            if ((rc = up_emit(u, g, *node, "Sub", i1, 2, &d, NULL))) return rc;
        } else {
            d = axc;
        }
        const char *i2[2] = {d, rkb};
        if ((rc = up_emit(u, g, *node, "Sub", i2, 2, &cnt, NULL))) return rc;
        if ((rc = up_emit(u, g, *node, "ConstantOfShape", &cnt, 1, &ones, &cs))) return rc;
        int64_t one = 1, dim1 = 1;
        Onnx__TensorProto *t = graph_tensor_new(u->m, NULL, DT_INT64, &dim1, 1, &one,
                                                sizeof one);
        if (!t || graph_node_set_attr_tensor(g, cs, "value", t)) return up_nomem(u);
        const char *i3[2] = {sb, ones};
        if ((rc = up_emit(u, g, *node, "Concat", i3, 2, &shape, &cat))) return rc;
        if (graph_node_set_attr_int(g, cat, "axis", 0)) return up_nomem(u);
        const char *i4[2] = {b, shape};
        if ((rc = up_emit(u, g, *node, "Reshape", i4, 2, &nb, NULL))) return rc;
        if (act) json_put_str(act, "unsqueezed", "runtime");
    }
    return graph_node_set_input(g, *node, slot, nb) ? up_nomem(u) : 0;
}

/* False when the known parts of two shapes already differ: a rank or a static dim. */
static bool same_shape_possible(graph *g, const char *a, const char *b) {
    graph_value *va = up_value_of(g, a), *vb = up_value_of(g, b);
    if (!va || !vb || va->type.rank < 0 || vb->type.rank < 0) return true;
    if (va->type.rank != vb->type.rank) return false;
    for (int32_t i = 0; i < va->type.rank; i++)
        if (va->type.dims[i] >= 0 && vb->type.dims[i] >= 0 && va->type.dims[i] != vb->type.dims[i])
            return false;
    return true;
}

int up_adapt_broadcast(up *u, graph *g, int32_t *node, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    int64_t bc = graph_attr_int(n, "broadcast", 0);
    bool has_axis = graph_attr(n, "axis") != NULL;
    int64_t axis = graph_attr_int(n, "axis", 0);
    if (!bc && !same_shape_possible(g, graph_node_input(n, 0), graph_node_input(n, 1)))
        return err_set(u->err, TILEOPT_INVALID,
                       "node %s (%s): inputs of different shapes need broadcast=1 before "
                       "opset 7", graph_node_id(g, *node), n->op_type);
    graph_node_del_attr(n, "broadcast");
    graph_node_del_attr(n, "axis");
    if (!bc || !has_axis) return 0;
    if (!graph_node_input(n, 0) || !graph_node_input(n, 1))
        return err_set(u->err, TILEOPT_INVALID, "node %s: broadcast needs inputs A and B",
                       graph_node_id(g, *node));
    if (act) json_put_num(act, "axis", (double)axis);
    return align_at_axis(u, g, node, 1, graph_node_input(n, 0), axis, act);
}

int up_adapt_drop_broadcast(up *u, graph *g, int32_t *node, json_w *act) {
    (void)u;
    (void)act;
    graph_node_del_attr(graph_node(g, *node), "broadcast");
    return 0;
}

/* PRelu before 7 applied a slope of shape [C] along axis 1; numpy broadcasting
** needs it as [C, 1, ...]. */
int up_adapt_prelu_6_7(up *u, graph *g, int32_t *node, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *slope = graph_node_input(n, 1);
    if (!slope || !graph_node_input(n, 0))
        return err_set(u->err, TILEOPT_INVALID, "node %s: PRelu needs X and slope",
                       graph_node_id(g, *node));
    graph_value *v = up_value_of(g, slope);
    int32_t k = up_rank_of(g, slope);
    if (k < 0) {
        pass_warn(u->pc, "node %s: PRelu slope rank unknown; left as is",
                  graph_node_id(g, *node));
        return 0;
    }
    if (k != 1) return 0;
    int64_t c = -1;
    if (v && v->type.rank == 1) c = v->type.dims[0];
    Onnx__TensorProto *t = graph_initializer(g, slope);
    if (t && t->n_dims == 1) c = t->dims[0];
    if (c == 1) return 0;
    return align_at_axis(u, g, node, 1, graph_node_input(n, 0), 1, act);
}

/*
** fuse_consecutive_reshapes: Reshape(R(x), s), where R is a Reshape,
** Flatten, Squeeze or Unsqueeze, is Reshape(x, s') for the right s'. Each of
** them keeps the elements and their order and only relabels the dims, so the
** second Reshape lays out the same sequence of elements whatever shape the
** first gave it. Its target reads the first's output shape in two places
** only: a -1 takes the element count, which the first keeps (x has as many),
** and a 0 (without allowzero) copies dim i of the first's output. Such a 0
** stays when shape inference proves x's dim i the same dim, becomes that dim
** when it is a known number, and otherwise the pair stays, with its reason: a
** 0 copying x's dim instead could give another shape. The first goes with its
** last reader; while another node or a graph output reads it, the pair stays
** (the second reading x would remove nothing).
*/
#include "passes/passes.h"
#include "passes/rewrite.h"

/* The ops whose output is their input's elements in order, relabelled. */
static const op_id relabel_ops[] = {OP_Reshape, OP_Flatten, OP_Squeeze, OP_Unsqueeze};

static bool relabels(op_id op) {
    for (size_t i = 0; i < countof(relabel_ops); i++)
        if (relabel_ops[i] == op) return true;
    return false;
}

/* The constant target of Reshape n (the attribute before opset 5). */
static bool target_of(graph *g, const Onnx__NodeProto *n, int64_t opset, int64_t *s,
                      size_t *len) {
    if (opset >= 5) return rw_const_ints(g, graph_node_input(n, 1), s, DIM_MAX_RANK, len);
    const Onnx__AttributeProto *a = graph_attr(n, "shape");
    if (!a || a->n_ints > DIM_MAX_RANK) return false;
    for (size_t i = 0; i < a->n_ints; i++) s[i] = a->ints[i];
    *len = a->n_ints;
    return true;
}

/* Make every 0 of s (a dim copied from y) mean the same when copied from x:
** NULL when it does, else why not. *changed when an entry became a number. */
static const char *rebase_zeros(graph *g, const char *x, const char *y, int64_t *s, size_t len,
                                bool *changed) {
    const graph_type *tx = rw_type(g, x), *ty = rw_type(g, y);
    *changed = false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != 0) continue;
        if (!ty || ty->rank <= (int32_t)i)
            return "its target copies a dim (0) of the first's output, whose rank is unknown";
        dim d = dim_at(ty, (int32_t)i);
        if (tx && tx->rank > (int32_t)i && dim_eq(dim_at(tx, (int32_t)i), d)) continue;
        /* a copied 0 written as 0 would copy again */
        if (!dim_is_num(d) || d.n <= 0)
            return "its target copies a dim (0) of the first's output that is neither "
                   "provably the same dim of x nor a known number";
        s[i] = d.n;
        *changed = true;
    }
    return NULL;
}

static int reshape_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    const char *y = op_of(n) == OP_Reshape ? graph_node_input(n, 0) : NULL;
    int32_t first;
    const Onnx__NodeProto *p = y ? rw_producer(g, y, &first) : NULL;
    if (!p || !relabels(op_of(p)) || !graph_node_input(p, 0)) return TILEOPT_OK;
    const char *x = graph_node_input(p, 0);
    if (!rw_only_reader(pc, g, node, y, p, "merging would remove nothing")) return TILEOPT_OK;
    int64_t opset = graph_opset(pc->model, "");
    int64_t s[DIM_MAX_RANK];
    size_t len;
    if (!target_of(g, n, opset, s, &len)) {
        pass_skip(pc, g, node, "reads a %s, but its target shape is no constant", p->op_type);
        return TILEOPT_OK;
    }
    bool allowzero = opset >= 14 && graph_attr_int(n, "allowzero", 0) != 0, changed = false;
    const char *why = allowzero ? NULL : rebase_zeros(g, x, y, s, len, &changed);
    if (why) {
        pass_skip(pc, g, node, "not merged with the %s before it: %s", p->op_type, why);
        return TILEOPT_OK;
    }
    int rc = TILEOPT_OK;
    if (changed && opset >= 5) {
        const char *name;
        rc = rw_add_ints(pc, g, graph_node_input(n, 1), s, len, 1, &name);
        if (!rc) rc = graph_node_set_input(g, node, 1, name);
    } else if (changed) {
        rc = graph_node_set_attr_ints(g, graph_node(g, node), "shape", s, len);
    }
    if (rc) return err_set(pc->err, rc, "out of memory");
    json_w *a;
    if ((rc = rw_reread(pc, g, node, x, first, "merged with the reshaping op before it", &a)))
        return rc;
    rw_drop_unread(pc, g, first, "merged into the Reshape after it");
    return TILEOPT_OK;
}

int pass_fuse_consecutive_reshapes(pass_ctx *pc) {
    return rw_walk(pc, reshape_rule);
}

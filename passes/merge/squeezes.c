/*
** fuse_consecutive_squeezes: Squeeze(Squeeze(x)) is one Squeeze, and
** Unsqueeze(Unsqueeze(x)) one Unsqueeze. Each takes out (or puts in) dims of
** size 1 and keeps the others in their order, so two in a row take out (put
** in) the union of their axes, once both lists count from one rank:
**  - two Squeezes count from x: the second names dims of what the first left,
**    and the k-th of those is the k-th axis of x the first did not take;
**  - two Unsqueezes count from the final output: the first names dims of its
**    own output, which sit, in order, at the final positions the second did
**    not fill.
** A negative axis counts from its node's rank, which must then be known. A
** Squeeze without axes takes whatever dims are 1 at run time: it is matched
** only when inference knows every dim as a number. The second keeps its place
** and reads x; the first goes with its last reader, and while another node or
** a graph output reads it the pair stays (the second reading x would remove
** nothing).
*/
#include "passes/passes.h"
#include "passes/rewrite.h"
#include "passes/merge/merge_impl.h"

/* The k-th integer from 0 up that sorted, distinct s (n of them) leaves out. */
static int64_t nth_outside(const int64_t *s, size_t n, int64_t k) {
    int64_t v = k;
    for (size_t i = 0; i < n && s[i] <= v; i++) v++;
    return v;
}

static bool distinct(const int64_t *s, size_t n) {
    for (size_t i = 1; i < n; i++)
        if (s[i] == s[i - 1]) return false;
    return true;
}

static int squeezes_rule(pass_ctx *pc, graph *g, int32_t node) {
    Onnx__NodeProto *n = graph_node(g, node);
    op_id op = op_of(n);
    const char *y = op == OP_Squeeze || op == OP_Unsqueeze ? graph_node_input(n, 0) : NULL;
    int32_t first;
    const Onnx__NodeProto *p = y ? rw_producer(g, y, &first) : NULL;
    if (!p || op_of(p) != op || !graph_node_input(p, 0)) return TILEOPT_OK;
    const char *x = graph_node_input(p, 0);
    if (!rw_only_reader(pc, g, node, y, p, "merging would remove nothing")) return TILEOPT_OK;
    int64_t opset = graph_opset(pc->model, "");
    bool squeeze = op == OP_Squeeze;
    /* a Squeeze counts from its input's rank, an Unsqueeze from its output's */
    const char *pr = squeeze ? x : y, *nr = squeeze ? y : n->output[0];
    const graph_type *tp = rw_type(g, pr), *tn = rw_type(g, nr);
    int64_t a[DIM_MAX_RANK], b[DIM_MAX_RANK], m[2 * DIM_MAX_RANK];
    size_t na, nb;
    if (!merge_axes_of(g, p, opset >= 13, tp ? tp->rank : -1, tp, a, &na) ||
        !merge_axes_of(g, n, opset >= 13, tn ? tn->rank : -1, tn, b, &nb)) {
        pass_skip(pc, g, node, "reads another %s, but the axes of one are not known (not "
                  "constant, negative with an unknown rank, or a Squeeze of every 1 of an "
                  "unknown shape)", p->op_type);
        return TILEOPT_OK;
    }
    if (!na || !nb || !distinct(a, na) || !distinct(b, nb)) {
        pass_skip(pc, g, node, "reads another %s, and one of them names no axis or an axis twice",
                  p->op_type);
        return TILEOPT_OK;
    }
    /* the list already counted from the shared rank, then the other one
    ** moved onto the positions it leaves */
    const int64_t *kept = squeeze ? a : b, *moved = squeeze ? b : a;
    size_t nk = squeeze ? na : nb, nm = squeeze ? nb : na, len = 0;
    for (size_t i = 0; i < nk; i++) m[len++] = kept[i];
    for (size_t i = 0; i < nm; i++) m[len++] = nth_outside(kept, nk, moved[i]);
    merge_sort_axes(m, len);
    int rc;
    if (opset >= 13) {
        const char *name, *hint = graph_node_input(n, 1);
        rc = rw_add_ints(pc, g, hint ? hint : "axes", m, len, 1, &name);
        if (!rc) rc = graph_node_set_input(g, node, 1, name);
    } else {
        rc = graph_node_set_attr_ints(g, n, "axes", m, len);
    }
    if (rc) return err_set(pc->err, rc, "out of memory");
    json_w *act;
    if ((rc = rw_reread(pc, g, node, x, first, squeeze ? "merged with the Squeeze before it"
                                                       : "merged with the Unsqueeze before it",
                        &act)))
        return rc;
    if (act) json_put_ints(act, "axes", m, len);
    rw_drop_unread(pc, g, first, squeeze ? "merged into the Squeeze after it"
                                         : "merged into the Unsqueeze after it");
    return TILEOPT_OK;
}

int pass_fuse_consecutive_squeezes(pass_ctx *pc) {
    return rw_walk(pc, squeezes_rule);
}

/*
** fuse_consecutive_slices: Slice(Slice(x)) whose two lists of axes share none
** is one Slice over the axes of both. A Slice on some axes leaves every other
** dim as it was, so the second's starts and ends clamp against the same dim of
** x they clamped against in the first's output, and the two cut independent
** axes: one Slice with the lists put end to end cuts the same elements. Both
** need constant starts, ends, axes and steps (attributes before opset 10,
** inputs from 10, written as int64 since all four share one type); a negative
** axis needs the rank. Two Slices of one axis stay, with their reason: the
** second counts its starts on what the first left, so merging them is no
** concatenation. The second keeps its place and reads x; the first goes with
** its last reader, and while another node or a graph output reads it the pair
** stays (the second reading x would remove nothing).
*/
#include "passes/passes.h"
#include "passes/rewrite.h"
#include "passes/merge/merge_impl.h"

typedef struct slice_args {
    int64_t starts[DIM_MAX_RANK], ends[DIM_MAX_RANK], axes[DIM_MAX_RANK],
        steps[DIM_MAX_RANK];
    size_t n;
} slice_args;

static bool attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *v, size_t *len) {
    const Onnx__AttributeProto *a = graph_attr(n, name);
    if (!a || a->n_ints > DIM_MAX_RANK) return false;
    for (size_t i = 0; i < a->n_ints; i++) v[i] = a->ints[i];
    *len = a->n_ints;
    return true;
}

/* The constant arguments of Slice n, axes counted from rank (-1 when unknown):
** NULL, or why they are not known. */
static const char *args_of(graph *g, const Onnx__NodeProto *n, int64_t opset, int32_t rank,
                           slice_args *s) {
    size_t ne, na = 0, nst = 0;
    bool ok, has_axes, has_steps = false;
    if (opset >= 10) {
        const char *ax = graph_node_input(n, 3), *st = graph_node_input(n, 4);
        ok = rw_const_ints(g, graph_node_input(n, 1), s->starts, DIM_MAX_RANK, &s->n) &&
             rw_const_ints(g, graph_node_input(n, 2), s->ends, DIM_MAX_RANK, &ne);
        has_axes = ax != NULL;
        has_steps = st != NULL;
        ok = ok && (!has_axes || rw_const_ints(g, ax, s->axes, DIM_MAX_RANK, &na));
        ok = ok && (!has_steps || rw_const_ints(g, st, s->steps, DIM_MAX_RANK, &nst));
    } else {
        ok = attr_ints(n, "starts", s->starts, &s->n) && attr_ints(n, "ends", s->ends, &ne);
        has_axes = graph_attr(n, "axes") != NULL;
        ok = ok && (!has_axes || attr_ints(n, "axes", s->axes, &na));
    }
    if (!ok) return "its starts, ends, axes or steps are not all constants";
    if (ne != s->n || (has_axes && na != s->n) || (has_steps && nst != s->n) || !s->n)
        return "its starts, ends, axes and steps differ in length, or are empty";
    for (size_t i = 0; i < s->n; i++) {
        if (!has_axes) s->axes[i] = (int64_t)i;
        if (!has_steps) s->steps[i] = 1;
        if (s->axes[i] < 0 && rank < 0) return "it names a negative axis of an unknown rank";
        if (s->axes[i] < 0) s->axes[i] += rank;
    }
    return NULL;
}

/* An axis both lists name, or -1. */
static int64_t shared_axis(const slice_args *a, const slice_args *b) {
    int64_t all[2 * DIM_MAX_RANK];
    size_t n = 0;
    for (size_t i = 0; i < a->n; i++) all[n++] = a->axes[i];
    for (size_t i = 0; i < b->n; i++) all[n++] = b->axes[i];
    merge_sort_axes(all, n);
    for (size_t i = 1; i < n; i++)
        if (all[i] == all[i - 1]) return all[i];
    return -1;
}

/* Input slot `slot` of node set to a new int64 constant v (hint: the old
** input's name). */
static int set_ints(pass_ctx *pc, graph *g, int32_t node, size_t slot, const char *hint,
                    const int64_t *v, size_t n) {
    const char *old = graph_node_input(graph_node(g, node), slot), *name;
    int rc = rw_add_ints(pc, g, old ? old : hint, v, n, 1, &name);
    return rc ? rc : graph_node_set_input(g, node, slot, name);
}

static int slices_rule(pass_ctx *pc, graph *g, int32_t node) {
    Onnx__NodeProto *n = graph_node(g, node);
    const char *y = op_of(n) == OP_Slice ? graph_node_input(n, 0) : NULL;
    int32_t first;
    const Onnx__NodeProto *p = y ? rw_producer(g, y, &first) : NULL;
    if (!p || op_of(p) != OP_Slice || !graph_node_input(p, 0)) return TILEOPT_OK;
    const char *x = graph_node_input(p, 0);
    if (!rw_only_reader(pc, g, node, y, p, "merging would remove nothing")) return TILEOPT_OK;
    int64_t opset = graph_opset(pc->model, "");
    int32_t rank = rw_rank(g, x);
    slice_args a, b;
    const char *why = args_of(g, p, opset, rank, &a);
    if (why) {
        pass_skip(pc, g, node, "reads a Slice, but %s", why);
        return TILEOPT_OK;
    }
    why = args_of(g, n, opset, rank, &b);
    if (why) {
        pass_skip(pc, g, node, "reads a Slice, but %s", why);
        return TILEOPT_OK;
    }
    int64_t axis = shared_axis(&a, &b);
    if (axis >= 0) {
        pass_skip(pc, g, node, "reads a Slice of the same axis (%lld): it counts its starts "
                  "and ends on what the first left", (long long)axis);
        return TILEOPT_OK;
    }
    slice_args m = {.n = a.n + b.n};
    if (m.n > DIM_MAX_RANK) return TILEOPT_OK; /* more axes than any tensor has */
    for (size_t i = 0; i < m.n; i++) {
        const slice_args *s = i < a.n ? &a : &b;
        size_t k = i < a.n ? i : i - a.n;
        m.starts[i] = s->starts[k];
        m.ends[i] = s->ends[k];
        m.axes[i] = s->axes[k];
        m.steps[i] = s->steps[k];
    }
    bool steps = graph_node_input(n, 4) != NULL;
    for (size_t i = 0; i < m.n; i++) steps = steps || m.steps[i] != 1;
    int rc;
    if (opset >= 10) {
        rc = set_ints(pc, g, node, 1, "starts", m.starts, m.n);
        if (!rc) rc = set_ints(pc, g, node, 2, "ends", m.ends, m.n);
        if (!rc) rc = set_ints(pc, g, node, 3, "axes", m.axes, m.n);
        if (!rc && steps) rc = set_ints(pc, g, node, 4, "steps", m.steps, m.n);
    } else {
        rc = graph_node_set_attr_ints(g, n, "starts", m.starts, m.n);
        if (!rc) rc = graph_node_set_attr_ints(g, n, "ends", m.ends, m.n);
        if (!rc) rc = graph_node_set_attr_ints(g, n, "axes", m.axes, m.n);
    }
    if (rc) return err_set(pc->err, rc, "out of memory");
    json_w *act;
    if ((rc = rw_reread(pc, g, node, x, first, "merged with the Slice before it, of other axes",
                        &act)))
        return rc;
    if (act) json_put_ints(act, "axes", m.axes, m.n);
    rw_drop_unread(pc, g, first, "merged into the Slice after it");
    return TILEOPT_OK;
}

int pass_fuse_consecutive_slices(pass_ctx *pc) {
    return rw_walk(pc, slices_rule);
}

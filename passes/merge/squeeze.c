/*
** fuse_squeeze_unsqueeze: a Squeeze and an Unsqueeze in a row (either order)
** on the same axes give back their input. Squeeze then Unsqueeze: the Squeeze
** only takes dims that are 1 (anything else is an error at run time, in the
** original as in the output), and the Unsqueeze puts 1s back where they were.
** Unsqueeze then Squeeze: the 1s put in are the ones taken out. Both lists
** count from the same rank (the Squeeze's input, the Unsqueeze's output), so
** they cancel exactly when they name the same axes. A Squeeze without axes
** takes every dim that is 1 at run time: it is matched only when shape
** inference knows every dim as a number. The second goes, its readers read the
** input of the first; the first goes with its last reader.
*/
#include <stdlib.h>

#include "passes/passes.h"
#include "passes/rewrite.h"
#include "passes/merge/merge_impl.h"

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void merge_sort_axes(int64_t *ax, size_t n) {
    qsort(ax, n, sizeof *ax, cmp_i64);
}

bool merge_axes_of(graph *g, const Onnx__NodeProto *n, bool as_input, int32_t rank,
                   const graph_type *t, int64_t *ax, size_t *len) {
    const char *in = as_input ? graph_node_input(n, 1) : NULL;
    const Onnx__AttributeProto *a = as_input ? NULL : graph_attr(n, "axes");
    *len = 0;
    if (in) {
        if (!rw_const_ints(g, in, ax, DIM_MAX_RANK, len)) return false;
    } else if (a) {
        if (a->n_ints > DIM_MAX_RANK) return false;
        for (size_t i = 0; i < a->n_ints; i++) ax[i] = a->ints[i];
        *len = a->n_ints;
    } else {
        if (op_of(n) != OP_Squeeze || !t || t->rank < 0) return false;
        for (int32_t i = 0; i < t->rank; i++) {
            dim d = dim_at(t, i);
            if (!dim_is_num(d)) return false;
            if (d.n == 1) ax[(*len)++] = i;
        }
    }
    for (size_t i = 0; i < *len; i++) {
        if (ax[i] < 0 && rank < 0) return false;
        if (ax[i] < 0) ax[i] += rank;
    }
    merge_sort_axes(ax, *len);
    return true;
}

static int squeeze_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    op_id op = op_of(n), want = op == OP_Squeeze ? OP_Unsqueeze : OP_Squeeze;
    const char *y = op == OP_Squeeze || op == OP_Unsqueeze ? graph_node_input(n, 0) : NULL;
    int32_t first;
    const Onnx__NodeProto *p = y ? rw_producer(g, y, &first) : NULL;
    if (!p || op_of(p) != want || !graph_node_input(p, 0)) return TILEOPT_OK;
    const char *x = graph_node_input(p, 0);
    /* the wider of the two tensors, from whose rank both lists count */
    const char *wide = want == OP_Squeeze ? x : y;
    const graph_type *t = rw_type(g, wide);
    int32_t rank = t ? t->rank : -1;
    int64_t opset = graph_opset(pc->model, "");
    int64_t a[DIM_MAX_RANK], b[DIM_MAX_RANK];
    size_t na, nb;
    if (!merge_axes_of(g, p, opset >= 13, rank, t, a, &na) ||
        !merge_axes_of(g, n, opset >= 13, rank, t, b, &nb)) {
        pass_skip(pc, g, node, "reads %s, but the axes of one are not known (not constant, "
                  "negative with an unknown rank, or a Squeeze of every 1 of an unknown "
                  "shape)", want == OP_Squeeze ? "a Squeeze" : "an Unsqueeze");
        return TILEOPT_OK;
    }
    bool same = na == nb;
    for (size_t i = 0; same && i < na; i++) same = a[i] == b[i];
    if (!same) {
        pass_skip(pc, g, node, "reads %s on other axes: they do not cancel",
                  want == OP_Squeeze ? "a Squeeze" : "an Unsqueeze");
        return TILEOPT_OK;
    }
    bool done;
    const char *why;
    int rc = rw_forward(pc, g, node, 0, x, &done, &why);
    if (rc) return rc;
    if (!done) {
        pass_skip(pc, g, node, "cancels the %s before it, but %s", p->op_type, why);
        return TILEOPT_OK;
    }
    json_w *act = pass_action(pc, g, node, "eliminated");
    if (act) {
        json_put_str(act, "rule", op == OP_Squeeze ? "undoes the Unsqueeze before it"
                                                   : "undoes the Squeeze before it");
        json_put_str(act, "from", graph_node_id(g, first));
    }
    rw_drop_unread(pc, g, first, "the op after it undid it");
    return TILEOPT_OK;
}

int pass_fuse_squeeze_unsqueeze(pass_ctx *pc) {
    return rw_walk(pc, squeeze_rule);
}

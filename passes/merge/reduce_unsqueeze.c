/*
** fuse_consecutive_reduce_unsqueeze: a reduction with keepdims=0 followed by
** an Unsqueeze of the axes it reduced is the reduction with keepdims=1. The
** reduction takes those dims out, and the Unsqueeze, counting from the rank
** of x again, puts a 1 back at each: what keepdims=1 leaves, the same values
** in the same order. The axes are an attribute until the opset where each
** reduction takes them as an input (ReduceSum 13, the others 18); there,
** empty or absent axes reduce every axis unless noop_with_empty_axes makes
** the reduction an identity, which is left alone. A reduction of every axis
** matches an Unsqueeze of every axis of x, whose rank must then be known.
** Unsqueezing other axes gives another shape, and stays; so does a reduction
** another node or a graph output reads (keepdims=1 would change what it
** reads). The reduction writes the Unsqueeze's output, which goes.
*/
#include "passes/passes.h"
#include "passes/rewrite.h"
#include "passes/merge/merge_impl.h"

static const op_id reduce_ops[] = {
    OP_ReduceL1,  OP_ReduceL2,  OP_ReduceLogSum, OP_ReduceLogSumExp, OP_ReduceMax,
    OP_ReduceMean, OP_ReduceMin, OP_ReduceProd,  OP_ReduceSum,       OP_ReduceSumSquare,
};

bool merge_reduces(op_id op) {
    for (size_t i = 0; i < countof(reduce_ops); i++)
        if (reduce_ops[i] == op) return true;
    return false;
}

int64_t merge_axes_input_since(op_id op) {
    if (op == OP_Slice) return 10;
    if (op == OP_Squeeze || op == OP_Unsqueeze || op == OP_ReduceSum) return 13;
    return merge_reduces(op) ? 18 : 0;
}

const char *merge_reduced_axes(graph *g, const Onnx__NodeProto *p, int64_t opset, int32_t rank,
                               int64_t *ax, size_t *len, bool *all) {
    bool as_input = opset >= merge_axes_input_since(op_of(p));
    bool given = as_input ? graph_node_input(p, 1) != NULL : graph_attr(p, "axes") != NULL;
    *len = 0;
    *all = false;
    if (given && !merge_axes_of(g, p, as_input, rank, NULL, ax, len))
        return "its axes are not known (not constant, or negative with an unknown rank)";
    if (*len) return NULL;
    if (given && !as_input) return "its axes attribute is an empty list";
    if (as_input && graph_attr_int(p, "noop_with_empty_axes", 0))
        return "it reduces no axis (noop_with_empty_axes without axes)";
    if (rank < 0) return "it reduces every axis of an input of unknown rank";
    *all = true;
    for (int32_t i = 0; i < rank; i++) ax[(*len)++] = i;
    return NULL;
}

static int reduce_unsqueeze_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    const char *y = op_of(n) == OP_Unsqueeze ? graph_node_input(n, 0) : NULL;
    int32_t first;
    Onnx__NodeProto *p = y ? rw_producer(g, y, &first) : NULL;
    if (!p || !merge_reduces(op_of(p)) || p->n_output != 1 || !graph_node_input(p, 0) ||
        graph_attr_int(p, "keepdims", 1) != 0)
        return TILEOPT_OK;
    if (!rw_only_reader(pc, g, node, y, p, "keepdims=1 would change what it reads")) return TILEOPT_OK;
    int64_t opset = graph_opset(pc->model, "");
    int32_t rank = rw_rank(g, graph_node_input(p, 0));
    int64_t a[DIM_MAX_RANK], b[DIM_MAX_RANK];
    size_t na, nb;
    bool all;
    const char *why = merge_reduced_axes(g, p, opset, rank, a, &na, &all);
    if (why) {
        pass_skip(pc, g, node, "reads a %s with keepdims=0, but %s", p->op_type, why);
        return TILEOPT_OK;
    }
    if (!merge_axes_of(g, n, opset >= 13, rank, NULL, b, &nb)) {
        pass_skip(pc, g, node, "reads a %s with keepdims=0, but its own axes are not known "
                  "(not constant, or negative with an unknown rank)", p->op_type);
        return TILEOPT_OK;
    }
    bool same = na == nb;
    for (size_t i = 0; same && i < na; i++) same = a[i] == b[i] && (!i || a[i] != a[i - 1]);
    if (!same) {
        pass_skip(pc, g, node, "puts in other axes than the %s took out: keepdims=1 would "
                  "give another shape", p->op_type);
        return TILEOPT_OK;
    }
    const char *u = graph_strdup(g, n->output[0]);
    if (!u) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    json_w *act = pass_action(pc, g, first, "rewritten");
    if (act) {
        json_put_str(act, "rule", "keepdims=1 in place of the Unsqueeze after it");
        json_put_str(act, "from", graph_node_id(g, node));
    }
    act = pass_action(pc, g, node, "eliminated");
    if (act) {
        json_put_str(act, "rule", "the reduction before it keeps the dims it put back");
        json_put_str(act, "into", graph_node_id(g, first));
    }
    graph_remove_node(g, node);
    int rc = graph_node_set_output(g, first, 0, u);
    if (!rc) rc = graph_node_set_attr_int(g, p, "keepdims", 1);
    if (rc) return err_set(pc->err, rc, "out of memory");
    pc->changed = true;
    return TILEOPT_OK;
}

int pass_fuse_consecutive_reduce_unsqueeze(pass_ctx *pc) {
    return rw_walk(pc, reduce_unsqueeze_rule);
}

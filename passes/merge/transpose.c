/*
** fuse_consecutive_transposes: Transpose(Transpose(x, p), q) is one
** Transpose of x by r[i] = p[q[i]], and none at all when r keeps every axis
** in place (exporters of NHWC models write such pairs around each layer). The
** second node reads x with r; the first goes once nothing else reads it, and
** stays, computing what it did, for a reader that still needs it (a graph
** output, another node), so no output changes name or value.
*/
#include "passes/passes.h"
#include "passes/rewrite.h"

#define MAX_PERM 16

/* The permutation of Transpose n of an input of rank `rank` (-1: unknown),
** the reversal when perm is absent; false when it cannot be known. */
static bool perm_of(const Onnx__NodeProto *n, int32_t rank, int64_t *p, size_t *len) {
    const Onnx__AttributeProto *a = graph_attr(n, "perm");
    if (!a) {
        if (rank < 0 || rank > MAX_PERM) return false;
        for (int32_t i = 0; i < rank; i++) p[i] = rank - 1 - i;
        *len = (size_t)rank;
        return true;
    }
    if (a->n_ints > MAX_PERM) return false;
    for (size_t i = 0; i < a->n_ints; i++) {
        if (a->ints[i] < 0 || a->ints[i] >= (int64_t)a->n_ints) return false;
        p[i] = a->ints[i];
    }
    *len = a->n_ints;
    return true;
}

static int transpose_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    const char *y = op_of(n) == OP_Transpose ? graph_node_input(n, 0) : NULL;
    int32_t first;
    const Onnx__NodeProto *t = y ? rw_producer(g, y, &first) : NULL;
    if (!t || op_of(t) != OP_Transpose || !graph_node_input(t, 0)) return TILEOPT_OK;
    const char *x = graph_node_input(t, 0);
    int64_t p[MAX_PERM], q[MAX_PERM], r[MAX_PERM];
    size_t np, nq;
    if (!perm_of(t, rw_rank(g, x), p, &np) || !perm_of(n, (int32_t)np, q, &nq) || np != nq) {
        pass_skip(pc, g, node, "reads a Transpose, but a permutation is unknown or the ranks "
                  "differ");
        return TILEOPT_OK;
    }
    bool identity = true;
    for (size_t i = 0; i < nq; i++) {
        r[i] = p[q[i]];
        identity = identity && r[i] == (int64_t)i;
    }
    if (identity) {
        bool done;
        const char *why;
        int rc = rw_forward(pc, g, node, 0, x, &done, &why);
        if (rc) return rc;
        if (done) {
            json_w *a = pass_action(pc, g, node, "eliminated");
            if (a) json_put_str(a, "rule", "undoes the Transpose before it");
            rw_drop_unread(pc, g, first, "the Transpose after it undid it");
            return TILEOPT_OK;
        }
        /* the output keeps its name: one Transpose by the identity stays */
    }
    Onnx__NodeProto *nn = graph_node(g, node);
    int rc = graph_node_set_input(g, node, 0, x);
    if (!rc) rc = graph_node_set_attr_ints(g, nn, "perm", r, nq);
    if (rc) return err_set(pc->err, rc, "out of memory");
    pc->changed = true;
    json_w *a = pass_action(pc, g, node, "rewritten");
    if (a) json_put_str(a, "rule", "merged with the Transpose before it");
    rw_drop_unread(pc, g, first, "merged into the Transpose after it");
    return TILEOPT_OK;
}

int pass_fuse_consecutive_transposes(pass_ctx *pc) {
    return rw_walk(pc, transpose_rule);
}

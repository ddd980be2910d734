/*
** fuse_transpose_into_gemm: Gemm(Transpose(A), B) is Gemm(A, B) with transA
** flipped, and likewise for B and transB: Gemm's operands are 2-D, so the
** only Transpose there is swaps the two axes, and Gemm reads either operand
** transposed by itself. The Transpose goes with its last reader; while
** another node or a graph output reads it, it stays and the Gemm keeps reading
** it (flipping would remove nothing).
*/
#include "passes/passes.h"
#include "passes/rewrite.h"

static const char *const trans_attr[2] = {"transA", "transB"};

/* Is Transpose t the swap of two axes? */
static bool swaps_2d(graph *g, const Onnx__NodeProto *t) {
    const Onnx__AttributeProto *p = graph_attr(t, "perm");
    if (!p) return rw_rank(g, graph_node_input(t, 0)) == 2;
    return p->n_ints == 2 && p->ints[0] == 1 && p->ints[1] == 0;
}

static int gemm_transpose_rule(pass_ctx *pc, graph *g, int32_t node) {
    if (op_of(graph_node(g, node)) != OP_Gemm) return TILEOPT_OK;
    for (size_t slot = 0; slot < 2; slot++) {
        Onnx__NodeProto *n = graph_node(g, node);
        const char *v = graph_node_input(n, slot);
        int32_t ti, sole;
        const Onnx__NodeProto *t = v ? rw_producer(g, v, &ti) : NULL;
        if (!t || op_of(t) != OP_Transpose || !graph_node_input(t, 0)) continue;
        if (!swaps_2d(g, t)) continue; /* an invalid model: Gemm reads 2-D operands */
        if (!rw_sole_consumer(g, v, &sole) || sole != node) {
            pass_skip(pc, g, node, "reads a Transpose as %s that is read elsewhere too (a node "
                      "or a graph output): flipping %s would remove nothing",
                      slot ? "B" : "A", trans_attr[slot]);
            continue;
        }
        int64_t flag = graph_attr_int(n, trans_attr[slot], 0) ? 0 : 1;
        int rc = graph_node_set_input(g, node, slot, graph_node_input(t, 0));
        if (!rc) rc = graph_node_set_attr_int(g, graph_node(g, node), trans_attr[slot], flag);
        if (rc) return err_set(pc->err, rc, "out of memory");
        pc->changed = true;
        json_w *a = pass_action(pc, g, node, "rewritten");
        if (a) {
            json_put_str(a, "rule", slot ? "Transpose of B into transB"
                                         : "Transpose of A into transA");
            json_put_str(a, "from", graph_node_id(g, ti));
        }
        rw_drop_unread(pc, g, ti, "into the Gemm after it");
    }
    return TILEOPT_OK;
}

int pass_fuse_transpose_into_gemm(pass_ctx *pc) {
    return rw_walk(pc, gemm_transpose_rule);
}

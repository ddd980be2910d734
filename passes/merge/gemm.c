/*
** fuse_matmul_add_into_gemm: Add(MatMul(A, B), C), A 2-D and B a 2-D
** constant, is Gemm(A, B, C) when C broadcasts to the product's [M, N] as
** Gemm's C does (each of its dims, right-aligned, 1 or the product's; rank at
** most 2), so the Add's output keeps its shape. Gemm adds C to the same
** products: one node instead of two, which ONNX Runtime's basic level makes
** too. The MatMul goes with the Add (its output read elsewhere, the pair
** stays); a batched or unknown-rank A, a computed B, a C that would widen the
** output, and types ONNX Runtime's Gemm does not run (anything but float and
** double) stay, with their reason.
*/
#include "passes/passes.h"
#include "passes/rewrite.h"

/* Why Add node n, reading MatMul mm's output in slot `slot`, cannot be
** Gemm(A, B, C), or NULL. */
static const char *not_gemm(pass_ctx *pc, graph *g, const Onnx__NodeProto *n, size_t slot,
                            const Onnx__NodeProto *mm) {
    const char *a = graph_node_input(mm, 0), *b = graph_node_input(mm, 1),
               *c = graph_node_input(n, 1 - slot);
    graph_const k;
    const graph_type *ta = rw_type(g, a), *tb = rw_type(g, b), *tc = rw_type(g, c),
                     *ty = rw_type(g, mm->output[0]);
    if (graph_opset(pc->model, "") < 7)
        return "before opset 7 Gemm's C broadcasts only with its broadcast attribute";
    if (!ta || ta->rank != 2) return "the MatMul's first operand is not known to be 2-D";
    if (!b || !graph_const_find(g, b, &k) || !tb || tb->rank != 2)
        return "the MatMul's second operand is no 2-D constant";
    if (!ty || (ty->elem != DT_FLOAT && ty->elem != DT_DOUBLE))
        return "ONNX Runtime's Gemm runs float and double only";
    if (!tc || tc->rank < 0 || tc->rank > 2 || ty->rank != 2)
        return "the other operand's shape is unknown or of rank over 2";
    for (int32_t i = 0; i < tc->rank; i++) {
        dim d = dim_at(tc, i), o = dim_at(ty, 2 - tc->rank + i);
        if (!dim_is(d, 1) && !dim_eq(d, o))
            return "the other operand does not broadcast to the product's [M, N] as Gemm's C";
    }
    return NULL;
}

static int gemm_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    if (op_of(n) != OP_Add || n->n_input != 2) return TILEOPT_OK;
    int32_t mi = -1, sole;
    size_t slot = 0;
    const Onnx__NodeProto *mm = NULL;
    for (; slot < 2 && !mm; slot++) {
        mm = rw_producer(g, graph_node_input(n, slot), &mi);
        if (mm && op_of(mm) != OP_MatMul) mm = NULL;
    }
    if (!mm) return TILEOPT_OK;
    slot--;
    const char *why = NULL;
    if (!rw_sole_consumer(g, n->input[slot], &sole) || sole != node)
        why = "the MatMul's output is read elsewhere too (a node or a graph output)";
    if (!why) why = not_gemm(pc, g, n, slot, mm);
    if (why) {
        pass_skip(pc, g, node, "not merged with the MatMul before it into a Gemm: %s", why);
        return TILEOPT_OK;
    }
    const char *ins[3] = {mm->input[0], mm->input[1], n->input[1 - slot]};
    const char *name = mm->name && mm->name[0] ? mm->name : NULL;
    json_w *a = pass_action(pc, g, node, "eliminated");
    if (a) {
        json_put_str(a, "rule", "MatMul + Add into Gemm");
        json_put_str(a, "into", graph_node_id(g, mi));
    }
    int rc = rw_replace(pc, g, node, "Gemm", name, ins, 3, NULL, NULL);
    if (rc) return rc;
    rw_drop_unread(pc, g, mi, "with the Add after it into a Gemm");
    return TILEOPT_OK;
}

int pass_fuse_matmul_add_into_gemm(pass_ctx *pc) {
    return rw_walk(pc, gemm_rule);
}

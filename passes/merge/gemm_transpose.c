/*
** fuse_transpose_into_gemm: Gemm(Transpose(A), B) is Gemm(A, B) with transA
** flipped, and likewise for B and transB: Gemm's operands are 2-D, so the
** only Transpose there is swaps the two axes, and Gemm reads either operand
** transposed by itself. The Transpose goes with its last reader; while
** another node or a graph output reads it, it stays and the Gemm keeps reading
** it (flipping would remove nothing).
**
** And a Transpose of a Gemm's output: (alpha A'B' + beta C)^T is alpha B'^T A'^T
** + beta C^T, so Gemm(B, A, C^T) with transA = !transB and transB = !transA
** writes it, and the Transpose goes. C^T is C when it is one value; otherwise a
** new initializer (a [N] C is the row [1, N], so [N, 1]), within the size
** policy: a C another node reads stays beside its transposed copy. A Gemm read
** elsewhere (both products would be needed), a computed C, and a C of more
** than one value before opset 7 (whose Gemm broadcasts only by its attribute)
** stay, with their reason.
*/
#include <string.h>

#include "passes/passes.h"
#include "passes/rewrite.h"

static const char *const trans_attr[2] = {"transA", "transB"};

/* Is Transpose t the swap of two axes? */
static bool swaps_2d(graph *g, const Onnx__NodeProto *t) {
    const Onnx__AttributeProto *p = graph_attr(t, "perm");
    if (!p) return rw_rank(g, graph_node_input(t, 0)) == 2;
    return p->n_ints == 2 && p->ints[0] == 1 && p->ints[1] == 0;
}

/* Bytes of the file that go with value name when node no longer reads it: an
** initializer of g no one else reads. */
static uint64_t freed_with(graph *g, const char *name, int32_t node) {
    graph_value *v = name && name[0] ? graph_find(g, name) : NULL;
    if (!v || v->initializer < 0 || v->input >= 0 || !rw_sole_reader(g, name, node)) return 0;
    return graph_initializer_bytes(g->pb->initializer[v->initializer]);
}

/*
** C^T for Gemm gi, whose Transpose ti goes: *ct the name to read (C itself
** when it is one value, or a new initializer), or *why it cannot be made.
*/
static int transposed_c(pass_ctx *pc, graph *g, int32_t gi, int32_t ti, const char *c,
                        const char **ct, const char **why) {
    tensor *t = NULL, *nt = NULL;
    *ct = NULL;
    if (rw_const_tensor(pc, g, c, &t) || !t || t->kind != EVAL_TENSOR || t->rank > 2) {
        tensor_free(t);
        *why = "its C is no constant of rank 2 or less";
        return TILEOPT_OK;
    }
    if (tensor_numel(t) == 1) {
        tensor_free(t);
        *ct = c;
        return TILEOPT_OK;
    }
    if (graph_opset(pc->model, "") < 7) {
        tensor_free(t);
        *why = "before opset 7 a transposed C would broadcast only by Gemm's attribute";
        return TILEOPT_OK;
    }
    tensor *src = NULL;
    int rc = tensor_contiguous(t, &pc->eval, &src, pc->err);
    tensor_free(t);
    if (rc) return rc;
    int64_t r = src->rank == 2 ? src->dims[0] : 1, cols = src->dims[src->rank - 1];
    int64_t dims[2] = {cols, r};
    uint64_t es = tensor_nbytes(src) / tensor_numel(src);
    uint64_t written = graph_new_initializer_bytes(strlen(c) + 4, src->elem, dims, 2,
                                                   tensor_nbytes(src));
    uint64_t freed = freed_with(g, c, gi) + graph_node_bytes(graph_node(g, ti));
    if (written > freed && written - freed > pc->opt->fold_limit) {
        tensor_free(src);
        *why = "its transposed C would take more bytes than what goes, over --fold-limit "
               "(a C another node reads stays beside the copy)";
        return TILEOPT_OK;
    }
    rc = tensor_new(src->elem, dims, 2, &pc->eval, &nt, pc->err);
    for (int64_t i = 0; !rc && i < r; i++)
        for (int64_t j = 0; j < cols; j++)
            memcpy(nt->data + (uint64_t)(j * r + i) * es, src->data + (uint64_t)(i * cols + j) * es,
                   es);
    if (!rc) rc = rw_add_tensor(pc, g, c, nt, ct);
    tensor_free(src);
    tensor_free(nt);
    return rc;
}

/* Transpose node of a Gemm's output: the Gemm computes the transpose itself. */
static int transpose_after_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *t = graph_node(g, node);
    const char *x = graph_node_input(t, 0);
    int32_t gi, sole;
    const Onnx__NodeProto *gemm = x ? rw_producer(g, x, &gi) : NULL;
    if (!gemm || op_of(gemm) != OP_Gemm || !swaps_2d(g, t) || !graph_node_input(gemm, 1))
        return TILEOPT_OK;
    const char *c = graph_node_input(gemm, 2), *ct = NULL, *why = NULL;
    if (!rw_sole_consumer(g, x, &sole) || sole != node)
        why = "the Gemm's output is read elsewhere too: both products would be needed";
    int rc = why || !c ? TILEOPT_OK : transposed_c(pc, g, gi, node, c, &ct, &why);
    if (rc) return rc;
    if (why) {
        pass_skip(pc, g, node, "not folded into the Gemm before it: %s", why);
        return TILEOPT_OK;
    }
    const char *a = graph_node_input(gemm, 0), *b = graph_node_input(gemm, 1),
               *y = graph_strdup(g, t->output[0]);
    int64_t ta = graph_attr_int(gemm, "transA", 0) ? 1 : 0,
            tb = graph_attr_int(gemm, "transB", 0) ? 1 : 0;
    if (!y) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    json_w *ac = pass_action(pc, g, node, "eliminated");
    if (ac) {
        json_put_str(ac, "rule", "Transpose of a Gemm's output: its operands swapped, "
                                 "(AB)^T = B^T A^T");
        json_put_str(ac, "into", graph_node_id(g, gi));
    }
    /* the Gemm writes the Transpose's output under its name: the value it
    ** wrote had the other shape, and goes with whatever declared it */
    graph_remove_node(g, node);
    rc = graph_node_set_output(g, gi, 0, y);
    if (!rc) rc = graph_node_set_input(g, gi, 0, b);
    if (!rc) rc = graph_node_set_input(g, gi, 1, a);
    if (!rc && ct) rc = graph_node_set_input(g, gi, 2, ct);
    if (!rc) rc = graph_node_set_attr_int(g, graph_node(g, gi), "transA", 1 - tb);
    if (!rc) rc = graph_node_set_attr_int(g, graph_node(g, gi), "transB", 1 - ta);
    if (rc) return err_set(pc->err, rc, "out of memory");
    pc->changed = true;
    return TILEOPT_OK;
}

static int gemm_transpose_rule(pass_ctx *pc, graph *g, int32_t node) {
    if (op_of(graph_node(g, node)) == OP_Transpose) return transpose_after_rule(pc, g, node);
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

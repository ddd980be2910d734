/*
** fuse_affine_into_conv: Mul or Add of a Conv's output by a constant of one
** value per output channel is folded into the Conv: a Mul scales its weights
** and bias, an Add (the bias an exporter writes as its own node) shifts its
** bias, so the Conv writes the result. Only the forms ONNX Runtime fuses
** itself are taken (a 2-D or wider Conv, the constant second, shaped [C, 1,
** 1...] or a scalar for Mul), computed as it computes them: ONNX Runtime then
** runs the same sums for the original and the output. Other forms ([1, C, 1,
** 1], a constant first, a Sub) would round differently from the original
** there, and stay with their reason; constants that vary within a channel
** are no per-channel map at all.
**
** After a ConvTranspose, a Gemm or a MatMul by a constant ONNX Runtime fuses
** neither, so only folds that are exact are made, in any operand order, the
** constant one value per output channel (axis 1 of a ConvTranspose's output,
** the last of a Gemm's or a MatMul's) or a scalar: a Mul by powers of two
** (scaling by one commutes with every rounding of the sums) scales the
** weights' channels, a batched MatMul's columns of B too; an Add becomes the
** bias of a ConvTranspose that has none (ONNX Runtime adds a bias after the
** sums, as the Add did). Other scales, an Add to a ConvTranspose's bias (b + k
** rounds once more) and an Add into a Gemm's C (which ONNX Runtime adds into
** its sums, block by block) stay, with their reason. After a MatMul an Add is
** fuse_matmul_add_into_gemm's (a MatMul has no bias of its own to shift).
*/
#include <stdlib.h>
#include <string.h>

#include "graph/const.h"
#include "passes/conv/conv_impl.h"

/* Why constant k cannot be folded into the Conv in ONNX Runtime's form, or
** NULL. */
static const char *not_ort_form(graph *g, const cv_conv *c, op_id op, const char *k) {
    const graph_type *t = rw_type(g, k);
    if (!t || t->rank < 0) return "the constant's shape is unknown";
    if (c->rank < 4) return "a 1-D Conv: ONNX Runtime fuses only 2-D and wider ones";
    if (t->rank == 0 && op == OP_Mul) return NULL;
    bool ort = t->rank == c->rank - 1 && dim_is(dim_at(t, 0), c->m);
    bool channel = t->rank <= c->rank;
    for (int32_t i = 0; i < t->rank; i++) {
        dim d = dim_at(t, i);
        int32_t axis = c->rank - t->rank + i; /* right-aligned, as broadcasting goes */
        if (i > 0 && !dim_is(d, 1)) ort = false;
        if (!dim_is(d, 1) && !(axis == 1 && dim_is(d, c->m))) channel = false;
    }
    if (!channel) return "the constant varies along an axis other than the channels";
    if (!ort)
        return "ONNX Runtime fuses only a constant shaped [C, 1, 1...] (or a scalar Mul), and "
               "the folded weights would round differently from the original there";
    return NULL;
}

/* Why constant k is no per-channel map over the output of c (no Conv), or
** NULL. */
static const char *not_channel(graph *g, const cv_conv *c, const char *k) {
    const graph_type *t = rw_type(g, k);
    if (!t || t->rank < 0) return "the constant's shape is unknown";
    if (c->out_rank < 0) return "the rank of the output it reads is unknown";
    if (t->rank > c->out_rank) return "the constant has more axes than the output: it widens it";
    for (int32_t i = 0; i < t->rank; i++) {
        dim d = dim_at(t, i);
        int32_t axis = c->out_rank - t->rank + i;
        if (!dim_is(d, 1) && !(axis == c->axis && dim_is(d, c->m)))
            return "the constant varies along an axis other than the channels";
    }
    return NULL;
}

/* Why folding the constant's values v after c (no Conv) would not give
** what ONNX Runtime computes for the original, bit for bit, or NULL. */
static const char *not_exact(const cv_conv *c, op_id op, const double *v) {
    if (op == OP_Mul)
        return cv_exact_scale(c, v) ? NULL
                                    : "a scale other than a power of two (or one that leaves "
                                      "the normal range): ONNX Runtime runs the Mul itself, "
                                      "and the folded weights would round differently there";
    if (c->op == OP_Gemm)
        return "ONNX Runtime adds a Gemm's C into its sums, a block of them at a time, and "
               "the Add after all of them: the order would change";
    if (c->b)
        return "the ConvTranspose has a bias: b + k would round once more than adding b, "
               "then k";
    return NULL;
}

static const char *rule_of(op_id producer, op_id op) {
    if (op == OP_Mul) {
        switch (producer) {
        case OP_Conv: return "Mul by a constant into the Conv's weights";
        case OP_ConvTranspose: return "Mul by a constant into the ConvTranspose's weights";
        case OP_Gemm: return "Mul by a constant into the Gemm's B";
        default: return "Mul by a constant into the MatMul's B";
        }
    }
    switch (producer) {
    case OP_Conv: return "bias into the Conv";
    case OP_ConvTranspose: return "bias into the ConvTranspose";
    default: return "bias into the Gemm's C";
    }
}

static int affine_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    op_id op = op_of(n);
    if ((op != OP_Mul && op != OP_Add) || n->n_input != 2) return TILEOPT_OK;
    /* the constant picks the slot: a node of two computed inputs (a residual
    ** Add) is no match, and says nothing */
    graph_const k_const;
    size_t slot = graph_const_find(g, graph_node_input(n, 1), &k_const) ? 0 : 1;
    const char *k = graph_node_input(n, 1 - slot);
    if (slot == 1 && !graph_const_find(g, k, &k_const)) return TILEOPT_OK;
    cv_conv c;
    bool found;
    const char *why;
    int rc = cv_find(pc, g, node, slot, &c, &found, &why);
    if (rc || !found) return rc;
    if (c.op == OP_MatMul && op == OP_Add) {
        cv_free(&c);
        return TILEOPT_OK;
    }
    if (!why) why = c.op == OP_Conv ? not_ort_form(g, &c, op, k) : not_channel(g, &c, k);
    if (!why && slot == 1 && c.op == OP_Conv)
        why = "the constant comes first: ONNX Runtime fuses only the Conv's output first, and "
              "the folded weights would round differently from the original there";
    double *v = why ? NULL : malloc((size_t)c.m * sizeof *v);
    if (!why && !v) {
        cv_free(&c);
        return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    }
    if (!why && !cv_channel_values(pc, g, &c, k, v))
        why = c.op == OP_Conv ? "the other input is no constant of the Conv's type"
                              : "the other input is no constant of the weight's type";
    if (!why && c.op != OP_Conv) why = not_exact(&c, op, v);
    /* the new bias b + k, in the weights' precision (k alone without b) */
    for (int64_t i = 0; !why && op == OP_Add && c.b && i < c.m; i++)
        v[i] = c.elem == DT_FLOAT ? (double)((float)c.b[i] + (float)v[i]) : c.b[i] + v[i];
    bool done = false;
    if (!why)
        rc = cv_fold(pc, g, &c, node, op == OP_Mul ? v : NULL, op == OP_Mul ? NULL : v, &done,
                     &why);
    cv_free(&c);
    free(v);
    if (rc) return rc;
    if (!done) {
        cv_skip(pc, g, node, &c, why);
        return TILEOPT_OK;
    }
    json_w *a = pass_action(pc, g, node, "eliminated");
    if (a) {
        json_put_str(a, "rule", rule_of(c.op, op));
        json_put_str(a, "into", graph_node_id(g, c.node));
    }
    return TILEOPT_OK;
}

int pass_fuse_affine_into_conv(pass_ctx *pc) {
    return rw_walk(pc, affine_rule);
}

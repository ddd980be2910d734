/*
** No-op tests of the ops that pick, pad, convert or join data: a Slice that
** takes every element forwards, a Pad by zeros on every side, a Cast to the
** type its input has, a Concat of one input, a Split into one part.
*/
#include <stdint.h>

#include "passes/eliminate/eliminate_impl.h"

/* An end at or past this (exporters write INT64_MAX for "to the end") covers
** any axis a tensor can have. */
#define END_OF_AXIS (INT64_MAX / 2)

/* Slice's starts, ends, axes and steps: inputs from opset 10, attributes
** before. False when one is not constant. */
static bool slice_params(graph *g, const Onnx__NodeProto *n, int64_t opset, int64_t *v[4],
                         size_t cnt[4], size_t cap) {
    static const char *const attrs[3] = {"starts", "ends", "axes"};
    for (int k = 0; k < 4; k++) {
        cnt[k] = 0;
        if (opset < 10) {
            const Onnx__AttributeProto *a = k < 3 ? graph_attr(n, attrs[k]) : NULL;
            if (!a) continue;
            if (a->n_ints > cap) return false;
            for (size_t i = 0; i < a->n_ints; i++) v[k][i] = a->ints[i];
            cnt[k] = a->n_ints;
            continue;
        }
        const char *in = graph_node_input(n, (size_t)k + 1);
        if (in && !rw_const_ints(g, in, v[k], cap, &cnt[k])) return false;
    }
    return true;
}

int el_nop_slice(pass_ctx *pc, graph *g, int32_t node, const char **rule, const char **why) {
    const Onnx__NodeProto *n = graph_node(g, node);
    const char *x = graph_node_input(n, 0);
    const graph_type *t = rw_type(g, x);
    if (!x || !t || t->rank < 0 || t->rank > DIM_MAX_RANK) return TILEOPT_OK;
    int64_t st[DIM_MAX_RANK], en[DIM_MAX_RANK], ax[DIM_MAX_RANK], sp[DIM_MAX_RANK];
    int64_t *v[4] = {st, en, ax, sp};
    size_t cnt[4];
    if (!slice_params(g, n, graph_opset(pc->model, ""), v, cnt, DIM_MAX_RANK) ||
        cnt[0] != cnt[1] || (cnt[2] && cnt[2] != cnt[0]) || (cnt[3] && cnt[3] != cnt[0]))
        return TILEOPT_OK;
    for (size_t i = 0; i < cnt[0]; i++) {
        int64_t a = cnt[2] ? ax[i] : (int64_t)i;
        if (a < 0) a += t->rank;
        if (a < 0 || a >= t->rank) return TILEOPT_OK;
        if (cnt[3] && sp[i] != 1) {
            if (sp[i] < 0) *why = "a negative step reverses the axis";
            return TILEOPT_OK;
        }
        dim d = dim_at(t, (int32_t)a);
        /* the whole axis: from its first element to its end */
        bool from_start = st[i] == 0 || (dim_is_num(d) && st[i] <= -d.n);
        bool to_end = en[i] >= END_OF_AXIS || (dim_is_num(d) && en[i] >= d.n);
        if (!from_start || !to_end) return TILEOPT_OK;
    }
    *rule = "takes every element of each axis";
    return TILEOPT_OK;
}

int el_nop_pad(pass_ctx *pc, graph *g, int32_t node, const char **rule, const char **why) {
    (void)why;
    const Onnx__NodeProto *n = graph_node(g, node);
    int64_t pads[2 * DIM_MAX_RANK];
    size_t np = 0;
    if (graph_opset(pc->model, "") < 11) {
        const Onnx__AttributeProto *a = graph_attr(n, "pads");
        if (!a || a->n_ints > 2 * DIM_MAX_RANK) return TILEOPT_OK;
        for (size_t i = 0; i < a->n_ints; i++) pads[i] = a->ints[i];
        np = a->n_ints;
    } else if (!rw_const_ints(g, graph_node_input(n, 1), pads, 2 * DIM_MAX_RANK, &np)) {
        return TILEOPT_OK;
    }
    for (size_t i = 0; i < np; i++)
        if (pads[i] != 0) return TILEOPT_OK;
    *rule = "pads every side by 0";
    return TILEOPT_OK;
}

int el_nop_cast(pass_ctx *pc, graph *g, int32_t node, const char **rule, const char **why) {
    (void)pc;
    (void)why;
    const Onnx__NodeProto *n = graph_node(g, node);
    int32_t from = el_elem(g, graph_node_input(n, 0));
    int32_t to = op_of(n) == OP_CastLike ? el_elem(g, graph_node_input(n, 1))
                                         : (int32_t)graph_attr_int(n, "to", 0);
    if (from && from == to) *rule = "casts to the type its input has";
    return TILEOPT_OK;
}

int el_nop_concat(pass_ctx *pc, graph *g, int32_t node, const char **rule, const char **why) {
    (void)pc;
    (void)g;
    (void)why;
    if (graph_node(g, node)->n_input == 1) *rule = "joins one input";
    return TILEOPT_OK;
}

int el_nop_split(pass_ctx *pc, graph *g, int32_t node, const char **rule, const char **why) {
    (void)pc;
    (void)why;
    /* one part is the whole input (any other split sizes make the model invalid) */
    if (graph_node(g, node)->n_output == 1) *rule = "splits into one part";
    return TILEOPT_OK;
}

/*
** Adapters for attributes that became inputs: Reshape's shape, Slice's
** starts/ends/axes, TopK's k, the axes of Squeeze/Unsqueeze/ReduceSum (13) and
** the other reductions (18), Split's split, Pad's pads and value, Clip's
** min/max, Dropout's ratio, DFT's axis; Split-1's split input, which became an
** attribute, and Split-18's num_outputs.
*/
#include <stdlib.h>
#include <string.h>

#include "graph/const.h"

#include "passes/upgrade/upgrade_impl.h"

/* Move an ints attribute to a new int64 input at slot (absent attribute: absent
** input, which every opset-13 form concerned treats as the attribute's default). */
static int ints_attr_to_input(up *u, graph *g, int32_t *node, const char *attr, size_t slot,
                              json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    Onnx__AttributeProto *a = graph_attr(n, attr);
    if (!a) return 0;
    const char *ins[8];
    size_t k = up_node_inputs(n, ins, 8);
    if (slot >= 8) return err_set(u->err, TILEOPT_INVALID, "upgrade: bad slot");
    while (k < slot) ins[k++] = "";
    const char *c;
    int rc = up_emit_i64(u, g, *node, attr, a->ints, a->n_ints, false, &c);
    if (rc) return rc;
    if (act) json_put_ints(act, attr, a->ints, a->n_ints);
    ins[slot] = c;
    if (k <= slot) k = slot + 1;
    graph_node_del_attr(n, attr);
    return up_replace_node(u, g, node, n->op_type, ins, k, 0);
}

int up_adapt_reshape_4_5(up *u, graph *g, int32_t *node, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    graph_node_del_attr(n, "consumed_inputs");
    if (!graph_attr(n, "shape"))
        return err_set(u->err, TILEOPT_INVALID, "node %s: Reshape-1 without a shape attribute",
                       graph_node_id(g, *node));
    return ints_attr_to_input(u, g, node, "shape", 1, act);
}

int up_adapt_slice_1_10(up *u, graph *g, int32_t *node, json_w *act) {
    int rc = ints_attr_to_input(u, g, node, "starts", 1, act);
    if (!rc) rc = ints_attr_to_input(u, g, node, "ends", 2, act);
    if (!rc) rc = ints_attr_to_input(u, g, node, "axes", 3, act);
    return rc;
}

int up_adapt_topk_1_10(up *u, graph *g, int32_t *node, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    Onnx__AttributeProto *a = graph_attr(n, "k");
    if (!a)
        return err_set(u->err, TILEOPT_INVALID, "node %s: TopK without k",
                       graph_node_id(g, *node));
    const char *c;
    int rc = up_emit_i64(u, g, *node, "k", &a->i, 1, false, &c);
    if (rc) return rc;
    if (act) json_put_num(act, "k", (double)a->i);
    graph_node_del_attr(n, "k");
    const char *ins[2] = {graph_node_input(n, 0), c};
    return up_replace_node(u, g, node, "TopK", ins, 2, 0);
}

int up_adapt_axes_to_input(up *u, graph *g, int32_t *node, json_w *act) {
    return ints_attr_to_input(u, g, node, "axes", 1, act);
}

int up_adapt_split_1_2(up *u, graph *g, int32_t *node, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *s = graph_node_input(n, 1);
    if (!s) return 0;
    int64_t v[64];
    size_t cnt;
    int32_t elem;
    bool found;
    int rc = up_const_ints(u, g, *node, s, "split", v, 64, &cnt, &elem, &found);
    if (rc) return rc;
    if (!found)
        return err_set(u->err, TILEOPT_UNSUPPORTED,
                       "node %s: Split-1 with a split input computed at run time",
                       graph_node_id(g, *node));
    if (graph_node_set_attr_ints(g, n, "split", v, cnt)) return up_nomem(u);
    if (act) json_put_ints(act, "split", v, cnt);
    const char *ins[1] = {graph_node_input(n, 0)};
    return up_replace_node(u, g, node, "Split", ins, 1, 0);
}

int up_adapt_split_12_13(up *u, graph *g, int32_t *node, json_w *act) {
    return ints_attr_to_input(u, g, node, "split", 1, act);
}

/* Split-18 wants the split input or num_outputs: without the input, Split-13
** split the axis into as many equal parts as it has outputs, which num_outputs
** says (its uneven last part never happens: 13 required equal parts). */
int up_adapt_split_13_18(up *u, graph *g, int32_t *node, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    if (graph_node_input(n, 1)) return 0;
    if (act) json_put_num(act, "num_outputs", (double)n->n_output);
    return graph_node_set_attr_int(g, n, "num_outputs", (int64_t)n->n_output) ? up_nomem(u) : 0;
}

/* DFT-20 reads the axis from a scalar input, whose default (-2, the last
** signal axis) is not DFT-17's attribute default (1): the axis is always given. */
int up_adapt_dft_17_20(up *u, graph *g, int32_t *node, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    int64_t axis = graph_attr_int(n, "axis", 1);
    const char *ins[3];
    size_t k = up_node_inputs(n, ins, 3);
    while (k < 2) ins[k++] = "";
    const char *c;
    int rc = up_emit_i64(u, g, *node, "axis", &axis, 1, true, &c);
    if (rc) return rc;
    if (act) json_put_num(act, "axis", (double)axis);
    ins[2] = c;
    graph_node_del_attr(n, "axis");
    return up_replace_node(u, g, node, "DFT", ins, 3, 0);
}

int up_adapt_pad_1_2(up *u, graph *g, int32_t *node, json_w *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    Onnx__AttributeProto *a = graph_attr(n, "paddings");
    if (!a) return 0;
    if (graph_node_set_attr_ints(g, n, "pads", a->ints, a->n_ints)) return up_nomem(u);
    graph_node_del_attr(n, "paddings");
    return 0;
}

int up_adapt_pad_2_11(up *u, graph *g, int32_t *node, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    Onnx__AttributeProto *v = graph_attr(n, "value");
    float value = v ? v->f : 0.0f;
    const char *mode = graph_attr_string(n, "mode", "constant");
    int rc = ints_attr_to_input(u, g, node, "pads", 1, act);
    if (rc) return rc;
    n = graph_node(g, *node);
    graph_node_del_attr(n, "value");
    if (value == 0.0f || strcmp(mode, "constant") != 0) return 0;
    const char *c;
    if ((rc = up_emit_scalar(u, g, *node, "value", up_data_elem(u, g, *node, n->input[0]), value,
                             &c)))
        return rc;
    return graph_node_set_input(g, *node, 2, c) ? up_nomem(u) : 0;
}

int up_adapt_clip_6_11(up *u, graph *g, int32_t *node, json_w *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    Onnx__AttributeProto *lo = graph_attr(n, "min"), *hi = graph_attr(n, "max");
    const char *ins[3] = {graph_node_input(n, 0), "", ""};
    size_t k = 1;
    int32_t elem = (lo || hi) ? up_data_elem(u, g, *node, ins[0]) : DT_FLOAT;
    int rc;
    if (lo) {
        if ((rc = up_emit_scalar(u, g, *node, "min", elem, lo->f, &ins[1]))) return rc;
        k = 2;
    }
    if (hi) {
        if ((rc = up_emit_scalar(u, g, *node, "max", elem, hi->f, &ins[2]))) return rc;
        k = 3;
    }
    graph_node_del_attr(n, "min");
    graph_node_del_attr(n, "max");
    return up_replace_node(u, g, node, "Clip", ins, k, 0);
}

int up_adapt_dropout_10_12(up *u, graph *g, int32_t *node, json_w *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    Onnx__AttributeProto *a = graph_attr(n, "ratio");
    if (!a) return 0;
    const char *c;
    int rc = up_emit_const(u, g, *node, "ratio", DT_FLOAT, NULL, 0, &a->f, sizeof a->f, &c);
    if (rc) return rc;
    graph_node_del_attr(n, "ratio");
    return graph_node_set_input(g, *node, 1, c) ? up_nomem(u) : 0;
}

/*
** GroupNormalization-18 scaled and shifted per group, 21 per channel: each of
** scale and bias is repeated C / num_groups times, element by element (numpy's
** repeat). Constants with a known C become constants of C values; otherwise
** Reshape to [G, 1], Expand to [G, C / G] and Reshape to [C] do it at run time,
** with C / G from the input's shape when the model does not give C.
*/
typedef struct group_ctx {
    int32_t node;
    const char *x;
    int64_t groups, channels;
    const char *per_group;   /* [1, C / G], made when first needed */
} group_ctx;

static int group_shape(up *u, graph *g, group_ctx *gc) {
    if (gc->per_group) return 0;
    if (gc->channels > 0) {
        int64_t shape[2] = {1, gc->channels / gc->groups};
        return up_emit_i64(u, g, gc->node, "shape", shape, 2, false, &gc->per_group);
    }
    Onnx__NodeProto *p;
    const char *cs, *gv, *one, *div;
    int64_t one_v = 1;
    int rc;
    if ((rc = up_emit(u, g, gc->node, "Shape", &gc->x, 1, &cs, &p))) return rc;
    if (graph_node_set_attr_int(g, p, "start", 1) || graph_node_set_attr_int(g, p, "end", 2))
        return up_nomem(u);
    if ((rc = up_emit_i64(u, g, gc->node, "groups", &gc->groups, 1, false, &gv)) ||
        (rc = up_emit_i64(u, g, gc->node, "one", &one_v, 1, false, &one)))
        return rc;
    const char *i_div[2] = {cs, gv};
    if ((rc = up_emit(u, g, gc->node, "Div", i_div, 2, &div, NULL))) return rc;
    const char *i_cat[2] = {one, div};
    if ((rc = up_emit(u, g, gc->node, "Concat", i_cat, 2, &gc->per_group, &p))) return rc;
    return graph_node_set_attr_int(g, p, "axis", 0) ? up_nomem(u) : 0;
}

/* The constant v of G values repeated as C values, when C is known; *done tells. */
static int group_repeat_const(up *u, graph *g, group_ctx *gc, const char *v, const char **out,
                              bool *done) {
    *done = false;
    graph_const c;
    const Onnx__TensorProto *t = gc->channels > 0 && graph_const_find(g, v, &c) ? c.tensor : NULL;
    if (!t) return 0;
    graph_tensor_data td;
    int rc = graph_tensor_read(u->m, t, &td, u->err);
    if (rc) return rc;
    size_t each = td.numel ? td.nbytes / td.numel : 0;
    if (td.numel == (uint64_t)gc->groups && each > 0) {
        char *rep = malloc((size_t)gc->channels * each);
        int64_t k = gc->channels / gc->groups;
        if (!rep) {
            rc = up_nomem(u);
        } else {
            for (int64_t i = 0; i < gc->channels; i++)
                memcpy(rep + (size_t)i * each, (const char *)td.data + (size_t)(i / k) * each,
                       each);
            rc = up_emit_const(u, g, gc->node, "per_channel", td.elem, &gc->channels, 1, rep,
                               (size_t)gc->channels * each, out);
            *done = rc == 0;
            free(rep);
        }
    }
    if (td.owned) free(td.data);
    return rc;
}

static int group_repeat(up *u, graph *g, group_ctx *gc, const char *v, const char **out) {
    bool done;
    int rc = group_repeat_const(u, g, gc, v, out, &done);
    if (rc || done) return rc;
    static const int64_t col[2] = {-1, 1}, flat[1] = {-1};
    const char *s_col, *s_flat, *a, *b;
    if ((rc = group_shape(u, g, gc)) ||
        (rc = up_emit_i64(u, g, gc->node, "shape", col, 2, false, &s_col)) ||
        (rc = up_emit_i64(u, g, gc->node, "shape", flat, 1, false, &s_flat)))
        return rc;
    const char *i_a[2] = {v, s_col};
    if ((rc = up_emit(u, g, gc->node, "Reshape", i_a, 2, &a, NULL))) return rc;
    const char *i_b[2] = {a, gc->per_group};
    if ((rc = up_emit(u, g, gc->node, "Expand", i_b, 2, &b, NULL))) return rc;
    const char *i_c[2] = {b, s_flat};
    return up_emit(u, g, gc->node, "Reshape", i_c, 2, out, NULL);
}

int up_adapt_groupnorm_18_21(up *u, graph *g, int32_t *node, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    group_ctx gc = {*node, graph_node_input(n, 0), graph_attr_int(n, "num_groups", 0), -1, NULL};
    if (gc.groups <= 0 || !gc.x || !graph_node_input(n, 1) || !graph_node_input(n, 2))
        return err_set(u->err, TILEOPT_INVALID, "node %s: GroupNormalization needs num_groups "
                       "and its three inputs", graph_node_id(g, *node));
    graph_value *x = up_value_of(g, gc.x);
    if (x && x->type.rank >= 2 && x->type.dims[1] > 0) {
        gc.channels = x->type.dims[1];
        if (gc.channels % gc.groups)
            return err_set(u->err, TILEOPT_INVALID, "node %s: %lld channels in %lld groups",
                           graph_node_id(g, *node), (long long)gc.channels,
                           (long long)gc.groups);
    }
    const char *ins[3] = {gc.x, NULL, NULL};
    for (size_t i = 1; i < 3; i++) {
        int rc = group_repeat(u, g, &gc, graph_node_input(n, i), &ins[i]);
        if (rc) return rc;
    }
    if (act && gc.channels > 0)
        json_put_num(act, "channels_per_group",
                                (double)(gc.channels / gc.groups));
    return up_replace_node(u, g, node, "GroupNormalization", ins, 3, 0);
}

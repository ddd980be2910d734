/*
** Going down: a node steps from each schema version to the one before it, in
** turn, until the target's. A step with a row in the table below has an
** adapter that holds exactly (an input that became an attribute, read when it
** is constant; Tile-6 back to Tile-1 when one axis repeats). Any other step is
** exact when the version above changed no meaning (the upgrade's adapter table
** has no row for it: only types, or optional inputs and attributes whose
** defaults keep the old meaning, were added) and the node uses nothing the
** older version lacks: attributes, inputs, element types (the generated table
** lists each version's). Nothing is guessed: what fails says why, and the run
** stops with every such node listed.
**
** Every adapter runs twice, planning then applying, and checks everything before
** it changes anything: its checks end at its `if (u->plan) return` line, and
** only rewrites follow. So planning sees exactly the checks applying does, and
** an applied step never stops half way.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/const.h"
#include "passes/passes.h"
#include "passes/upgrade/opset_table.h"
#include "passes/upgrade/upgrade_impl.h"

static void use_of(const Onnx__NodeProto *n, node_use *use) {
    use->inputs = n->n_input;
    while (use->inputs > 0 && !graph_node_input(n, use->inputs - 1)) use->inputs--;
    use->n_attrs = 0;
    for (size_t i = 0; i < n->n_attribute && use->n_attrs < USE_MAX_ATTRS; i++)
        use->attrs[use->n_attrs++] = n->attribute[i]->name ? n->attribute[i]->name : "";
}

static void use_del(node_use *use, const char *attr) {
    for (size_t i = 0; i < use->n_attrs; i++)
        if (strcmp(use->attrs[i], attr) == 0) use->attrs[i--] = use->attrs[--use->n_attrs];
}

static void use_add(node_use *use, const char *attr) {
    use_del(use, attr);
    if (use->n_attrs < USE_MAX_ATTRS) use->attrs[use->n_attrs++] = attr;
}

typedef struct down_adapter {
    const char *op;
    int32_t from, to;        /* schema since_versions: from is the newer */
    down_fn fn;
} down_adapter;

/* An input that became an attribute: the constant int64 values of input slot
** (the node's last input in every form this serves). */
typedef struct ints_input {
    bool given;              /* an absent input: the attribute's absence means the same */
    int64_t v[64];
    size_t n;
} ints_input;

/* Read it; *why when it is computed at run time. The node's use loses the
** input and gains the attribute. */
static int read_ints_input(up *u, graph *g, int32_t node, size_t slot, const char *attr,
                           node_use *use, const char **why, ints_input *in) {
    const char *name = graph_node_input(graph_node(g, node), slot);
    in->given = name != NULL;
    in->n = 0;
    if (!name) return 0;
    if (use->inputs > slot) use->inputs = slot;
    use_add(use, attr);
    int32_t elem;
    bool found;
    int rc = up_const_ints(u, g, node, name, attr, in->v, 64, &in->n, &elem, &found);
    if (!rc && !found) *why = "an input that became an attribute is computed at run time";
    return rc;
}

/* Rewrite the node with the values as attribute attr, without the input. */
static int ints_input_to_attr(up *u, graph *g, int32_t *node, size_t slot, const char *attr,
                              json_w *act, const ints_input *in) {
    if (!in->given) return 0;
    Onnx__NodeProto *n = graph_node(g, *node);
    if (graph_node_set_attr_ints(g, n, attr, in->v, in->n)) return up_nomem(u);
    json_put_ints(act, attr, in->v, in->n);
    const char *ins[8];
    size_t k = up_node_inputs(n, ins, 8);
    if (k > slot) k = slot;
    while (k > 0 && !*ins[k - 1]) k--; /* trailing absent inputs go too */
    return up_replace_node(u, g, node, n->op_type, ins, k, 0);
}

/* Input slot back to attribute attr, when that is all the step takes. */
static int input_to_ints_attr(up *u, graph *g, int32_t *node, size_t slot, const char *attr,
                              json_w *act, node_use *use, const char **why) {
    ints_input in;
    int rc = read_ints_input(u, g, *node, slot, attr, use, why, &in);
    if (rc || *why || u->plan) return rc;
    return ints_input_to_attr(u, g, node, slot, attr, act, &in);
}

/* Squeeze and Unsqueeze 13 -> 11: axes back to an attribute. */
static int down_axes(up *u, graph *g, int32_t *node, json_w *act, node_use *use,
                     const char **why) {
    return input_to_ints_attr(u, g, node, 1, "axes", act, use, why);
}

/* The reductions' axes input (ReduceSum's from 13, the others' from 18) back to
** an attribute; noop_with_empty_axes has no older form, and with no axes it
** makes the node pass its input through. */
static int down_reduce_axes(up *u, graph *g, int32_t *node, json_w *act, node_use *use,
                            const char **why) {
    static const char no_older_form[] =
        "noop_with_empty_axes with axes that may be empty has no older form";
    Onnx__NodeProto *n = graph_node(g, *node);
    bool noop = graph_attr_int(n, "noop_with_empty_axes", 0) != 0;
    if (noop && !graph_node_input(n, 1)) {
        *why = no_older_form;
        return 0;
    }
    use_del(use, "noop_with_empty_axes");
    ints_input axes;
    int rc = read_ints_input(u, g, *node, 1, "axes", use, why, &axes);
    if (rc || *why) return rc;
    if (noop && axes.given && axes.n == 0) {
        *why = no_older_form;
        return 0;
    }
    if (u->plan) return 0;
    rc = ints_input_to_attr(u, g, node, 1, "axes", act, &axes);
    if (!rc) graph_node_del_attr(graph_node(g, *node), "noop_with_empty_axes");
    return rc;
}

static int down_split_13(up *u, graph *g, int32_t *node, json_w *act, node_use *use,
                         const char **why) {
    return input_to_ints_attr(u, g, node, 1, "split", act, use, why);
}

/* Split-18's num_outputs: Split-13 without a split input cuts equal parts, so
** the attribute goes when the axis divides evenly, and an uneven cut (its last
** part smaller) becomes a constant split input; an axis of unknown size cannot
** tell which. */
static int down_split_18(up *u, graph *g, int32_t *node, json_w *act, node_use *use,
                         const char **why) {
    Onnx__NodeProto *n = graph_node(g, *node);
    if (!graph_attr(n, "num_outputs")) return 0;
    int64_t k = graph_attr_int(n, "num_outputs", 0);
    use_del(use, "num_outputs");
    if (graph_node_input(n, 1)) { /* the split input says it all */
        if (u->plan) return 0;
        graph_node_del_attr(n, "num_outputs");
        return 0;
    }
    graph_value *x = up_value_of(g, graph_node_input(n, 0));
    int64_t axis = graph_attr_int(n, "axis", 0);
    int32_t r = x ? x->type.rank : -1;
    if (r > 0 && axis < 0) axis += r;
    int64_t dim = r > 0 && axis >= 0 && axis < r ? x->type.dims[axis] : -1;
    if (dim < 0 || k <= 0 || (size_t)k != n->n_output || k > 64) {
        *why = "num_outputs of an axis whose size is unknown: Split-13 cuts equal parts only";
        return 0;
    }
    if (dim % k) use->inputs = 2; /* an uneven cut: a split input */
    if (u->plan) return 0;
    graph_node_del_attr(n, "num_outputs");
    if (act) json_put_num(act, "num_outputs", (double)k);
    if (dim % k == 0) return 0;
    int64_t sizes[64], chunk = dim / k + 1, left = dim;
    for (int64_t i = 0; i < k; i++) {
        sizes[i] = left < chunk ? left : chunk;
        left -= sizes[i];
    }
    const char *c;
    int rc = up_emit_i64(u, g, *node, "split", sizes, (size_t)k, false, &c);
    if (rc) return rc;
    if (act) json_put_ints(act, "split", sizes, (size_t)k);
    const char *ins[2] = {graph_node_input(n, 0), c};
    return up_replace_node(u, g, node, "Split", ins, 2, 0);
}

/* A constant float scalar (float or double), for Clip's bounds. */
static int const_float(up *u, graph *g, const char *name, double *out, bool *found) {
    size_t n = 0;
    int rc = up_const_floats(u, g, name, out, 1, &n, found);
    if (!rc && n != 1) *found = false;
    return rc;
}

/* Clip-11's min and max inputs back to Clip-6's attributes (absent: Clip-6's
** own defaults, the float range). */
static int down_clip_11(up *u, graph *g, int32_t *node, json_w *act, node_use *use,
                        const char **why) {
    Onnx__NodeProto *n = graph_node(g, *node);
    static const char *const attr[2] = {"min", "max"};
    double v[2];
    bool has[2];
    for (size_t i = 0; i < 2; i++) {
        const char *name = graph_node_input(n, i + 1);
        has[i] = name != NULL;
        if (!has[i]) continue;
        bool found;
        int rc = const_float(u, g, name, &v[i], &found);
        if (rc) return rc;
        if (!found) {
            *why = "Clip's min or max is not a float constant";
            return 0;
        }
        use_add(use, attr[i]);
    }
    use->inputs = 1;
    if (u->plan) return 0;
    for (size_t i = 0; i < 2; i++) {
        if (!has[i]) continue;
        if (graph_node_set_attr_float(g, n, attr[i], (float)v[i])) return up_nomem(u);
        if (act) json_put_num(act, attr[i], v[i]);
    }
    const char *ins[1] = {graph_node_input(n, 0)};
    return up_replace_node(u, g, node, "Clip", ins, 1, 0);
}

/* Pad-11's pads and constant_value inputs back to Pad-2's attributes, when
** they are constants (the value a float or double scalar). */
static int down_pad_11(up *u, graph *g, int32_t *node, json_w *act, node_use *use,
                       const char **why) {
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *value = graph_node_input(n, 2);
    double v = 0;
    if (value) {
        bool found;
        int rc = const_float(u, g, value, &v, &found);
        if (rc) return rc;
        if (!found) {
            *why = "Pad's constant_value is not a float constant";
            return 0;
        }
        use_add(use, "value");
    }
    int rc = input_to_ints_attr(u, g, node, 1, "pads", act, use, why);
    if (rc || *why || u->plan || !value) return rc;
    if (act) json_put_num(act, "value", v);
    return graph_node_set_attr_float(g, graph_node(g, *node), "value", (float)v) ? up_nomem(u)
                                                                                 : 0;
}

/* A scalar constant of a float type holding a small whole number v (|v| <=
** 2048, exact in float16 too); other types get a float. */
static int emit_float_scalar(up *u, graph *g, int32_t node, const char *what, int32_t elem,
                             int64_t v, const char **out) {
    if (elem == DT_DOUBLE) {
        double d = (double)v;
        return up_emit_const(u, g, node, what, DT_DOUBLE, NULL, 0, &d, sizeof d, out);
    }
    if (elem == DT_FLOAT16) {
        uint64_t m = (uint64_t)(v < 0 ? -v : v);
        uint16_t bits = v < 0 ? 0x8000 : 0;
        if (m) {
            int e = 63 - __builtin_clzll(m);
            bits |= (uint16_t)((e + 15) << 10) | (uint16_t)(((m << 10) >> e) & 0x3ff);
        }
        return up_emit_const(u, g, node, what, DT_FLOAT16, NULL, 0, &bits, sizeof bits, out);
    }
    float f = (float)v;
    return up_emit_const(u, g, node, what, DT_FLOAT, NULL, 0, &f, sizeof f, out);
}

/* Tile-6 -> Tile-1 (input, tiles, axis): constant repeats that are 1 on every
** axis but at most one; tiles and axis are of the data's type there. */
static int down_tile_6(up *u, graph *g, int32_t *node, json_w *act, node_use *use,
                       const char **why) {
    Onnx__NodeProto *n = graph_node(g, *node);
    int64_t rep[64];
    size_t cnt;
    int32_t elem;
    bool found;
    const char *name = graph_node_input(n, 1);
    int rc = name ? up_const_ints(u, g, *node, name, "repeats", rep, 64, &cnt, &elem, &found)
                  : 0;
    if (rc) return rc;
    if (!name || !found || cnt == 0) {
        *why = "Tile-1 needs constant repeats";
        return 0;
    }
    int64_t axis = 0, tiles = 1;
    size_t tiled = 0;
    for (size_t i = 0; i < cnt; i++)
        if (rep[i] != 1) {
            tiled++;
            axis = (int64_t)i;
            tiles = rep[i];
        }
    if (tiled > 1) {
        *why = "Tile-1 repeats one axis, these repeats tile more";
        return 0;
    }
    int32_t elem_x = up_elem_of(g, graph_node_input(n, 0));
    if (tiles > 2048) {
        *why = "Tile-1 holds tiles in the data's float type, exact up to 2048";
        return 0;
    }
    use->inputs = 3;
    if (u->plan) return 0;
    const char *t, *a;
    if ((rc = emit_float_scalar(u, g, *node, "tiles", elem_x, tiles, &t)) ||
        (rc = emit_float_scalar(u, g, *node, "axis", elem_x, axis, &a)))
        return rc;
    if (act) {
        json_put_num(act, "tiles", (double)tiles);
        json_put_num(act, "axis", (double)axis);
    }
    const char *ins[3] = {graph_node_input(n, 0), t, a};
    return up_replace_node(u, g, node, "Tile", ins, 3, 0);
}

/* Slice-10's starts, ends and axes inputs back to Slice-1's attributes: all
** constant, steps absent or all 1, axes made non-negative (Slice-1 took no
** negative ones). */
static int down_slice_10(up *u, graph *g, int32_t *node, json_w *act, node_use *use,
                         const char **why) {
    Onnx__NodeProto *n = graph_node(g, *node);
    static const char *const what[4] = {"starts", "ends", "axes", "steps"};
    int64_t v[4][64];
    size_t cnt[4] = {0, 0, 0, 0};
    bool has[4] = {false, false, false, false};
    for (size_t i = 0; i < 4; i++) {
        const char *name = graph_node_input(n, i + 1);
        if (!name) continue;
        int32_t elem;
        bool found;
        int rc = up_const_ints(u, g, *node, name, what[i], v[i], 64, &cnt[i], &elem, &found);
        if (rc) return rc;
        if (!found) {
            *why = "Slice's starts, ends, axes or steps are computed at run time";
            return 0;
        }
        has[i] = true;
    }
    if (!has[0] || !has[1]) {
        *why = "Slice without starts or ends";
        return 0;
    }
    for (size_t k = 0; has[3] && k < cnt[3]; k++)
        if (v[3][k] != 1) {
            *why = "Slice-1 takes no steps other than 1";
            return 0;
        }
    int32_t r = up_rank_of(g, graph_node_input(n, 0));
    for (size_t k = 0; has[2] && k < cnt[2]; k++)
        if (v[2][k] < 0) {
            if (r <= 0) {
                *why = "negative Slice axes of an input of unknown rank";
                return 0;
            }
            v[2][k] += r;
        }
    use->inputs = 1;
    for (size_t i = 0; i < 3; i++)
        if (has[i]) use_add(use, what[i]);
    if (u->plan) return 0;
    for (size_t i = 0; i < 3; i++) {
        if (!has[i]) continue;
        if (graph_node_set_attr_ints(g, n, what[i], v[i], cnt[i])) return up_nomem(u);
        if (act) json_put_ints(act, what[i], v[i], cnt[i]);
    }
    const char *ins[1] = {graph_node_input(n, 0)};
    return up_replace_node(u, g, node, "Slice", ins, 1, 0);
}

/* Resize-11 requires roi and scales: empty ones, as Resize-13 reads absent ones
** (roi only matters for tf_crop_and_resize; sizes then decides). */
static int down_resize_13(up *u, graph *g, int32_t *node, json_w *act, node_use *use,
                          const char **why) {
    (void)act;
    (void)why;
    Onnx__NodeProto *n = graph_node(g, *node);
    if (use->inputs < 3) use->inputs = 3;
    if (u->plan || (graph_node_input(n, 1) && graph_node_input(n, 2))) return 0;
    const char *ins[4];
    size_t k = up_node_inputs(n, ins, 4);
    while (k < 3) ins[k++] = "";
    static const char *const what[3] = {NULL, "roi", "scales"};
    for (size_t i = 1; i < 3; i++) {
        if (*ins[i]) continue;
        int64_t zero = 0;
        int rc = up_emit_const(u, g, *node, what[i], DT_FLOAT, &zero, 1, NULL, 0, &ins[i]);
        if (rc) return rc;
    }
    return up_replace_node(u, g, node, "Resize", ins, k, 0);
}

/*
** MaxPool-10 -> 8: ceil_mode and dilations are new in 10. Dilations of 1 are
** MaxPool-8's; ceil_mode=1 is MaxPool-8 with more padding at the end of each
** spatial axis, enough that the floor of the output size formula gives the
** ceiling's count. Padding counts as -inf for a max, so the values agree. The
** input's spatial dims must be known, the padding explicit, the Indices output
** unused (it would count the extra padding), and the last window must start
** inside the input or its leading pad: where runtimes disagree about a window
** beyond that, there is no one count to match.
*/
static int down_maxpool_10(up *u, graph *g, int32_t *node, json_w *act, node_use *use,
                           const char **why) {
    Onnx__NodeProto *n = graph_node(g, *node);
    const Onnx__AttributeProto *dil = graph_attr(n, "dilations");
    for (size_t i = 0; dil && i < dil->n_ints; i++)
        if (dil->ints[i] != 1) {
            *why = "MaxPool-8 has no dilations";
            return 0;
        }
    use_del(use, "dilations");
    bool ceil = graph_attr_int(n, "ceil_mode", 0) != 0;
    use_del(use, "ceil_mode");
    int64_t pads[2 * 8];
    size_t spatial = 0;
    if (ceil) {
        const Onnx__AttributeProto *k = graph_attr(n, "kernel_shape");
        const Onnx__AttributeProto *st = graph_attr(n, "strides");
        const Onnx__AttributeProto *pa = graph_attr(n, "pads");
        graph_value *x = up_value_of(g, graph_node_input(n, 0));
        spatial = k ? k->n_ints : 0;
        bool ok = x && x->type.rank == (int32_t)spatial + 2 && spatial > 0 && spatial <= 8 &&
                  strcmp(graph_attr_string(n, "auto_pad", "NOTSET"), "NOTSET") == 0 &&
                  (!st || st->n_ints == spatial) && (!pa || pa->n_ints == 2 * spatial) &&
                  (n->n_output < 2 || !*n->output[1]);
        for (size_t i = 0; ok && i < spatial; i++) {
            int64_t in = x->type.dims[i + 2], kk = k->ints[i], s = st ? st->ints[i] : 1;
            int64_t pb = pa ? pa->ints[i] : 0, pe = pa ? pa->ints[i + spatial] : 0;
            int64_t span = in + pb + pe - kk;
            ok = in > 0 && kk > 0 && s > 0 && span >= 0 && in < ((int64_t)1 << 40);
            if (!ok) break;
            int64_t out = (span + s - 1) / s + 1;
            ok = (out - 1) * s < in + pb;
            pads[i] = pb;
            pads[i + spatial] = pe + (out - 1) * s + kk - (in + pb + pe);
        }
        if (!ok) {
            *why = "ceil_mode=1 needs known spatial dims, explicit pads, no Indices output "
                   "and a last window that starts inside the input";
            return 0;
        }
        use_add(use, "pads");
    }
    if (u->plan) return 0;
    graph_node_del_attr(n, "dilations");
    graph_node_del_attr(n, "ceil_mode");
    if (!ceil) return 0;
    if (act) json_put_ints(act, "pads", pads, 2 * spatial);
    return graph_node_set_attr_ints(g, n, "pads", pads, 2 * spatial) ? up_nomem(u) : 0;
}

/* Resize-11 -> 10: Resize-10 maps output coordinates as out / scale and takes
** the floor for nearest, and knows no cubic: the node must say asymmetric (and
** floor) to mean that. roi only serves tf_crop_and_resize and cubic_coeff_a only
** cubic, so both go; a sizes input becomes the scales Resize-11 derives from it
** (sizes / input size, as float), which needs a constant sizes and an input of
** known shape. */
static int down_resize_11(up *u, graph *g, int32_t *node, json_w *act, node_use *use,
                          const char **why) {
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *mode = graph_attr_string(n, "mode", "nearest");
    if (strcmp(mode, "nearest") != 0 && strcmp(mode, "linear") != 0) {
        *why = "Resize-10 has no cubic mode";
        return 0;
    }
    if (strcmp(graph_attr_string(n, "coordinate_transformation_mode", "half_pixel"),
               "asymmetric") != 0) {
        *why = "Resize-10 maps coordinates as asymmetric only";
        return 0;
    }
    if (strcmp(mode, "nearest") == 0 &&
        strcmp(graph_attr_string(n, "nearest_mode", "round_prefer_floor"), "floor") != 0) {
        *why = "Resize-10 rounds nearest with floor only";
        return 0;
    }
    static const char *const gone[] = {"coordinate_transformation_mode", "nearest_mode",
                                       "cubic_coeff_a", "extrapolation_value"};
    for (size_t i = 0; i < countof(gone); i++) use_del(use, gone[i]);
    use->inputs = 2;
    const char *x = graph_node_input(n, 0), *scales = graph_node_input(n, 2);
    const char *sizes = graph_node_input(n, 3);
    graph_const sc_const;
    if (scales && sizes && graph_const_find(g, scales, &sc_const) && sc_const.tensor &&
        sc_const.tensor->n_dims == 1 && sc_const.tensor->dims[0] == 0)
        scales = NULL; /* the empty scales Resize-11 requires beside sizes */
    float sc[64];
    size_t cnt = 0;
    if (!scales) {
        int64_t sz[64];
        int32_t elem;
        bool found = false;
        int rc = sizes ? up_const_ints(u, g, *node, sizes, "sizes", sz, 64, &cnt, &elem, &found)
                       : 0;
        if (rc) return rc;
        graph_value *xv = up_value_of(g, x);
        if (!found || !xv || xv->type.rank != (int32_t)cnt) {
            *why = "Resize-10 needs scales: sizes must be constant and the input's shape known";
            return 0;
        }
        for (size_t k = 0; k < cnt; k++) {
            int64_t d = xv->type.dims[k];
            sc[k] = d > 0 ? (float)sz[k] / (float)d : 0.0f;
            if (d <= 0 || (int64_t)((float)d * sc[k]) != sz[k]) {
                *why = "Resize-10 needs scales: sizes must be constant and the input's shape "
                       "known";
                return 0;
            }
        }
    }
    if (u->plan) return 0;
    for (size_t i = 0; i < countof(gone); i++) graph_node_del_attr(n, gone[i]);
    if (!scales) {
        int64_t dim = (int64_t)cnt;
        int rc = up_emit_const(u, g, *node, "scales", DT_FLOAT, &dim, 1, sc, cnt * sizeof *sc,
                               &scales);
        if (rc) return rc;
        if (act) json_put_floats(act, "scales", sc, (int)cnt);
    }
    const char *ins[2] = {x, scales};
    return up_replace_node(u, g, node, "Resize", ins, 2, 0);
}

/* Softmax, LogSoftmax and Hardmax before 13 flatten the input to 2-D at axis
** (default 1) and normalize each row: the same as 13's one axis when that axis
** is the last. */
static int down_softmax_13(up *u, graph *g, int32_t *node, json_w *act, node_use *use,
                           const char **why) {
    Onnx__NodeProto *n = graph_node(g, *node);
    int32_t r = up_rank_of(g, graph_node_input(n, 0));
    int64_t axis = graph_attr_int(n, "axis", -1);
    if (r > 0 && axis < 0) axis += r;
    if (r <= 0 || axis != r - 1) {
        *why = "before 13 the op normalizes every axis from axis on: the same only when axis "
               "is the last of an input of known rank";
        return 0;
    }
    use_add(use, "axis");
    if (u->plan) return 0;
    if (act) json_put_num(act, "axis", (double)axis);
    return graph_node_set_attr_int(g, n, "axis", axis) ? up_nomem(u) : 0;
}

/* Before 11 these ops counted axes from the front only (Gather and Scatter
** took negative ones already): negative axis or axes values become the
** non-negative ones they mean, which needs the rank. Unsqueeze's axes index
** its output, one dim longer per axis. */
static int down_negative_axes(up *u, graph *g, int32_t *node, json_w *act, node_use *use,
                              const char **why) {
    (void)use;
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *attr = graph_attr(n, "axes") ? "axes" : "axis";
    const Onnx__AttributeProto *a = graph_attr(n, attr);
    if (!a) return 0; /* the default axis is non-negative in every older form */
    bool list = a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    int64_t v[64];
    size_t cnt = list ? a->n_ints : 1;
    if (cnt > countof(v)) {
        *why = "more axes than this step adapts";
        return 0;
    }
    bool negative = false;
    for (size_t k = 0; k < cnt; k++) {
        v[k] = list ? a->ints[k] : a->i;
        negative |= v[k] < 0;
    }
    if (!negative) return 0;
    int32_t r = up_rank_of(g, graph_node_input(n, 0));
    if (r >= 0 && graph_node_is(n, "Unsqueeze")) r += (int32_t)cnt;
    for (size_t k = 0; r > 0 && k < cnt; k++)
        if (v[k] < 0) v[k] += r;
    for (size_t k = 0; k < cnt; k++)
        if (v[k] < 0) {
            *why = r > 0 ? "an axis below -rank" :
                           "a negative axis of an input of unknown rank: before 11 axes "
                           "count from the front only";
            return 0;
        }
    if (u->plan) return 0;
    if (list) json_put_ints(act, attr, v, cnt);
    else json_put_int(act, attr, v[0]);
    int rc = list ? graph_node_set_attr_ints(g, n, attr, v, cnt)
                  : graph_node_set_attr_int(g, n, attr, v[0]);
    return rc ? up_nomem(u) : 0;
}

/* Sorted by op, then the newer version. */
static const down_adapter down_adapters[] = {
    {"ArgMax", 11, 1, down_negative_axes},
    {"ArgMin", 11, 1, down_negative_axes},
    {"Clip", 11, 6, down_clip_11},
    {"Compress", 11, 9, down_negative_axes},
    {"Concat", 11, 4, down_negative_axes},
    {"Flatten", 11, 9, down_negative_axes},
    {"Hardmax", 11, 1, down_negative_axes},
    {"Hardmax", 13, 11, down_softmax_13},
    {"LogSoftmax", 11, 1, down_negative_axes},
    {"LogSoftmax", 13, 11, down_softmax_13},
    {"MaxPool", 10, 8, down_maxpool_10},
    {"Pad", 11, 2, down_pad_11},
    {"ReduceL1", 11, 1, down_negative_axes},
    {"ReduceL1", 18, 13, down_reduce_axes},
    {"ReduceL2", 11, 1, down_negative_axes},
    {"ReduceL2", 18, 13, down_reduce_axes},
    {"ReduceLogSum", 11, 1, down_negative_axes},
    {"ReduceLogSum", 18, 13, down_reduce_axes},
    {"ReduceLogSumExp", 11, 1, down_negative_axes},
    {"ReduceLogSumExp", 18, 13, down_reduce_axes},
    {"ReduceMax", 11, 1, down_negative_axes},
    {"ReduceMax", 18, 13, down_reduce_axes},
    {"ReduceMean", 11, 1, down_negative_axes},
    {"ReduceMean", 18, 13, down_reduce_axes},
    {"ReduceMin", 11, 1, down_negative_axes},
    {"ReduceMin", 18, 13, down_reduce_axes},
    {"ReduceProd", 11, 1, down_negative_axes},
    {"ReduceProd", 18, 13, down_reduce_axes},
    {"ReduceSum", 11, 1, down_negative_axes},
    {"ReduceSum", 13, 11, down_reduce_axes},
    {"ReduceSumSquare", 11, 1, down_negative_axes},
    {"ReduceSumSquare", 18, 13, down_reduce_axes},
    {"Resize", 11, 10, down_resize_11},
    {"Resize", 13, 11, down_resize_13},
    {"Slice", 10, 1, down_slice_10},
    {"Softmax", 11, 1, down_negative_axes},
    {"Softmax", 13, 11, down_softmax_13},
    {"Split", 11, 2, down_negative_axes},
    {"Split", 13, 11, down_split_13},
    {"Split", 18, 13, down_split_18},
    {"Squeeze", 11, 1, down_negative_axes},
    {"Squeeze", 13, 11, down_axes},
    {"Tile", 6, 1, down_tile_6},
    {"TopK", 11, 10, down_negative_axes},
    {"Unsqueeze", 11, 1, down_negative_axes},
    {"Unsqueeze", 13, 11, down_axes},
};

static const down_adapter *down_find(const char *op, int32_t from) {
    for (size_t i = 0; i < countof(down_adapters); i++) {
        int c = strcmp(op, down_adapters[i].op);
        if (c < 0) break;
        if (c == 0 && down_adapters[i].from == from) return &down_adapters[i];
    }
    return NULL;
}

/* For the tests: the table, to check its order and its versions. */
size_t downgrade_adapter_count(void) { return countof(down_adapters); }
void downgrade_adapter_at(size_t i, const char **op, int32_t *from, int32_t *to) {
    *op = down_adapters[i].op;
    *from = down_adapters[i].from;
    *to = down_adapters[i].to;
}

/* Values a version added to an attribute older versions already had: the
** attribute is there below, so only its value tells the step cannot be taken. */
static const struct added_value {
    const char *op;
    int32_t since;
    const char *attr, *value;
} added_values[] = {
    {"Pad", 19, "mode", "wrap"},
    {"Resize", 19, "coordinate_transformation_mode", "half_pixel_symmetric"},
    {"ScatterElements", 18, "reduction", "max"},
    {"ScatterElements", 18, "reduction", "min"},
    {"ScatterND", 18, "reduction", "max"},
    {"ScatterND", 18, "reduction", "min"},
};

static const struct added_value *value_added(const Onnx__NodeProto *n, const char *op,
                                             int32_t since) {
    for (size_t i = 0; i < countof(added_values); i++) {
        const struct added_value *a = &added_values[i];
        if (a->since == since && strcmp(a->op, op) == 0 &&
            strcmp(graph_attr_string(n, a->attr, ""), a->value) == 0)
            return a;
    }
    return NULL;
}

/* The element types input (or output) slot k of schema s takes; a variadic last
** slot stands for the rest; 0 when the table lists none. */
static uint32_t slot_types(const opset_schema *s, bool input, size_t k) {
    const uint32_t *t = input ? s->in_types : s->out_types;
    size_t n = input ? s->n_in_types : s->n_out_types;
    return n ? t[k < n ? k : n - 1] : 0;
}

/* The value of node n's attribute a as the schema's default text writes it
** (ints and strings; NULL for other types). */
static bool attr_is(const Onnx__AttributeProto *a, const char *text) {
    if (!a || !text) return false;
    if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) {
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", (long long)a->i);
        return strcmp(buf, text) == 0;
    }
    if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)
        return a->s.len == strlen(text) && memcmp(a->s.data, text, a->s.len) == 0;
    return false;
}

/*
** Node n, using use, at schema older instead of newer, where nothing about its
** meaning changed: NULL when it fits, else why not (in buf). An attribute older
** lacks fits when it holds newer's default (it is dropped when applying); the
** inputs must be as many as older takes, those older requires given; the
** element types must be older's when the step added types. After an adapter
** (adapted set) the inputs are the adapter's business: only attributes and
** types are checked.
*/
static const char *fit_down(up *u, graph *g, int32_t node, node_use *use,
                            const opset_schema *newer, const opset_schema *older, bool adapted,
                            char *buf, size_t cap) {
    Onnx__NodeProto *n = graph_node(g, node);
    /* attributes the older version lacks that hold their default (which is
    ** the older meaning): they go, once every check has passed */
    const char *drop[USE_MAX_ATTRS];
    size_t n_drop = 0;
    for (size_t i = 0; i < use->n_attrs; i++) {
        const char *a = use->attrs[i];
        bool known = false;
        for (size_t k = 0; k < older->n_attrs && !known; k++) known = strcmp(a, older->attrs[k]) == 0;
        if (known) continue;
        const char *dflt = NULL;
        for (size_t k = 0; k < newer->n_attrs; k++)
            if (strcmp(a, newer->attrs[k]) == 0) dflt = newer->defaults[k];
        if (!attr_is(graph_attr(n, a), dflt)) {
            snprintf(buf, cap, "attribute '%s' is not in version %d", a, (int)older->since);
            return buf;
        }
        drop[n_drop++] = a;
        use_del(use, a);
        i--;
    }
    if (!adapted && older->max_inputs != 255 && use->inputs > older->max_inputs) {
        snprintf(buf, cap, "%zu inputs, version %d takes %d", use->inputs, (int)older->since,
                 (int)older->max_inputs);
        return buf;
    }
    for (size_t k = 0; k < 32 && !adapted; k++)
        if ((older->required >> k & 1u) && (k >= use->inputs || !graph_node_input(n, k))) {
            snprintf(buf, cap, "input %zu, required in version %d, is not given", k,
                     (int)older->since);
            return buf;
        }
    /* slot by slot: where the step added types, the node's must be older's;
    ** after an adapter only the data (input 0) and the outputs are the node's */
    size_t n_slots = n->n_input + n->n_output;
    for (size_t i = 0; i < n_slots; i++) {
        bool is_in = i < n->n_input;
        size_t slot = is_in ? i : i - n->n_input;
        if (is_in && (slot >= use->inputs || (adapted && slot > 0))) continue;
        uint32_t now = slot_types(newer, is_in, slot), was = slot_types(older, is_in, slot);
        if (!(now & ~was) || !was) continue;
        const char *name = is_in ? graph_node_input(n, slot) : n->output[slot];
        if (!name || !*name) continue;
        int32_t elem = up_elem_of(g, name);
        if (elem <= 0) {
            snprintf(buf, cap, "the element type of '%s' is unknown, and version %d takes "
                     "fewer types", name, (int)older->since);
            return buf;
        }
        if (elem >= 32 || !(was & (1u << elem))) {
            snprintf(buf, cap, "element type %s is not in version %d", dtype_name(elem),
                     (int)older->since);
            return buf;
        }
    }
    if (u->plan) return NULL;
    for (size_t i = 0; i < n_drop; i++) graph_node_del_attr(n, drop[i]);
    return NULL;
}

/* One rewrite of node i, now *node: a down adapter's step, or the expansion
** below the op's first version. Planning only checks; applying records the
** step from -> to in the report (with the ops it became, when into is given).
** *why is set when the node cannot take it. */
static int run_step(up *u, graph *g, int32_t i, int32_t *node, down_fn fn, node_use *use,
                    const char *op, int32_t from, int32_t to, const char *into,
                    const char **why) {
    up_act act = {0};
    json_w *w = u->plan ? NULL : up_act_open(&act);
    if (!u->plan && !w) {
        up_act_free(&act);
        return up_nomem(u);
    }
    int rc = fn(u, g, node, w, use, why);
    if (!rc && !*why) {
        u->n_work++;
        if (w) {
            if (into) json_put_str(w, "into", into);
            up_record_step(u, g, i, &act, op, from, to);
        }
    }
    up_act_free(&act);
    return rc;
}

int up_downgrade_node(up *u, graph *g, int32_t i, char *why, size_t cap) {
    why[0] = '\0';
    const Onnx__NodeProto *n = graph_node(g, i);
    const char *op = n->op_type ? n->op_type : "";
    const opset_entry *e = opset_table_find(op);
    if (!e) return snprintf(why, cap, "no ai.onnx schema for this op"), 0;
    int32_t from = opset_schema_at(e, u->src), to = opset_schema_at(e, u->tgt);
    if (from == 0) return snprintf(why, cap, "op does not exist at the source opset"), 0;
    const down_expansion *x = NULL;
    if (to == 0) {
        /* younger than the target: down to its first version, then older ops */
        x = up_expansion_find(op);
        if (!x) return snprintf(why, cap, "op does not exist at the target opset"), 0;
        if (u->tgt < 7)
            return snprintf(why, cap, "op does not exist at the target opset, and its "
                            "rewrite as older ops needs numpy broadcasting (opset 7)"), 0;
        to = e->versions[0];
    }
    if (n->n_attribute > USE_MAX_ATTRS)
        return snprintf(why, cap, "more than %d attributes", USE_MAX_ATTRS), 0;
    int32_t node = i;
    node_use use;
    use_of(n, &use);
    size_t k = 0;
    while (e->versions[k] != from) k++;
    for (; e->versions[k] > to; k--) {
        int32_t newer = e->versions[k], older = e->versions[k - 1];
        const struct added_value *av = value_added(graph_node(g, node), op, newer);
        if (av) {
            snprintf(why, cap, "%s '%s' is new in version %d", av->attr, av->value, (int)newer);
            return 0;
        }
        const down_adapter *d = down_find(op, newer);
        if (d) {
            const char *reason = NULL;
            int rc = run_step(u, g, i, &node, d->fn, &use, op, newer, older, NULL, &reason);
            if (rc || reason) {
                if (reason) snprintf(why, cap, "%s", reason);
                return rc;
            }
            if (!u->plan) use_of(graph_node(g, node), &use); /* the rewritten node itself */
            if (fit_down(u, g, node, &use, &e->schemas[k], &e->schemas[k - 1], true, why, cap))
                return 0;
            continue;
        }
        if (up_adapter_find(op, newer)) {
            snprintf(why, cap, "no downgrade adapter for the change at version %d",
                     (int)newer);
            return 0;
        }
        if (e->deprecated && newer >= e->deprecated) {
            snprintf(why, cap, "op deprecated at version %d", (int)e->deprecated);
            return 0;
        }
        if (fit_down(u, g, node, &use, &e->schemas[k], &e->schemas[k - 1], false, why, cap))
            return 0;
    }
    if (!x) return 0;
    const char *reason = NULL;
    int rc = run_step(u, g, i, &node, x->fn, &use, op, to, (int32_t)u->tgt, x->into, &reason);
    if (reason) snprintf(why, cap, "op does not exist at the target opset: %s", reason);
    return rc;
}

/*
** Going down below an op's first version: the op did not exist yet at the
** target opset, so the node is written as older ops that compute the same,
** each built in the target's form (an axes input or attribute, as the target's
** schema has it). HardSwish and LayerNormalization are what their ONNX function
** bodies say; GreaterOrEqual and LessOrEqual are Or(Greater, Equal), which
** keeps NaN false, as Not(Less) would not; Resize is Upsample when its
** coordinates are Upsample's (out / scale, the floor for nearest).
**
** Every rewrite needs numpy broadcasting (opset 7) and an element type each
** op it builds takes at the target; planning (u->plan) checks all of it and
** rewrites nothing, so applying never fails for a reason planning missed.
*/
#include <stdio.h>
#include <string.h>

#include "passes/passes.h"
#include "passes/upgrade/upgrade_impl.h"

/* Whether every op in ops takes elem at the target, else *why. */
static bool ops_take(up *u, const char *const *ops, size_t n, int32_t elem, const char **why) {
    if (elem <= 0) {
        *why = "the element type is unknown";
        return false;
    }
    for (size_t i = 0; i < n; i++)
        if (!up_op_takes(ops[i], u->tgt, elem)) {
            *why = "an op the rewrite needs does not take this element type at the target";
            return false;
        }
    return true;
}

/* HardSwish(x) = x * HardSigmoid(x) with alpha 1/6 and beta 0.5. */
static int expand_hardswish(up *u, graph *g, int32_t *node, json_w *act, node_use *use,
                            const char **why) {
    (void)use; /* these replace the node whole: no older schema checks it after */
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *x = graph_node_input(n, 0);
    static const char *const ops[] = {"HardSigmoid", "Mul"};
    if (!ops_take(u, ops, countof(ops), up_elem_of(g, x), why) || u->plan) return 0;
    const char *hs;
    Onnx__NodeProto *p;
    int rc = up_emit(u, g, *node, "HardSigmoid", &x, 1, &hs, &p);
    if (rc) return rc;
    if (graph_node_set_attr_float(g, p, "alpha", 1.0f / 6.0f) ||
        graph_node_set_attr_float(g, p, "beta", 0.5f))
        return up_nomem(u);
    (void)act;
    const char *ins[2] = {x, hs};
    return up_replace_node(u, g, node, "Mul", ins, 2, 1);
}

/* a >= b as Or(Greater(a, b), Equal(a, b)); a <= b with Less. */
static int expand_or_equal(up *u, graph *g, int32_t *node, const char *strict) {
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *ins[2] = {graph_node_input(n, 0), graph_node_input(n, 1)};
    const char *lt, *eq;
    int rc;
    if ((rc = up_emit(u, g, *node, strict, ins, 2, &lt, NULL)) ||
        (rc = up_emit(u, g, *node, "Equal", ins, 2, &eq, NULL)))
        return rc;
    const char *both[2] = {lt, eq};
    return up_replace_node(u, g, node, "Or", both, 2, 1);
}

static int expand_compare(up *u, graph *g, int32_t *node, const char **why,
                          const char *strict) {
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *ops[2] = {strict, "Equal"};
    int32_t elem = up_elem_of(g, graph_node_input(n, 0));
    if (!ops_take(u, ops, 2, elem, why) || u->plan) return 0;
    return expand_or_equal(u, g, node, strict);
}

static int expand_greater_or_equal(up *u, graph *g, int32_t *node, json_w *act, node_use *use,
                                   const char **why) {
    (void)use; /* these replace the node whole: no older schema checks it after */
    (void)act;
    return expand_compare(u, g, node, why, "Greater");
}

static int expand_less_or_equal(up *u, graph *g, int32_t *node, json_w *act, node_use *use,
                                const char **why) {
    (void)use; /* these replace the node whole: no older schema checks it after */
    (void)act;
    return expand_compare(u, g, node, why, "Less");
}

/*
** LayerNormalization over the axes from axis on, in stash_type (float unless it
** says otherwise): D = X - mean(X), Y = D / sqrt(mean(D*D) + epsilon) * Scale
** (+ B). Mean and InvStdDev, when the node has them, are the named steps'
** results, kept dims as the op defines them. The axes are listed, so the rank
** must be known.
*/
static int expand_layernorm(up *u, graph *g, int32_t *node, json_w *act, node_use *use,
                            const char **why) {
    (void)use; /* these replace the node whole: no older schema checks it after */
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *x = graph_node_input(n, 0);
    int32_t r = up_rank_of(g, x), elem = up_elem_of(g, x);
    int64_t axis = graph_attr_int(n, "axis", -1);
    int32_t stash = (int32_t)graph_attr_int(n, "stash_type", DT_FLOAT);
    if (r <= 0) {
        *why = "the rank of the input is unknown, so the normalized axes are";
        return 0;
    }
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r || r > 64) {
        *why = "axis out of range for the input's rank";
        return 0;
    }
    static const char *const in_stash[] = {"ReduceMean", "Sub", "Mul", "Add", "Sqrt",
                                           "Reciprocal"};
    static const char *const in_elem[] = {"Mul", "Add", "Cast"};
    bool cast = elem != stash;
    if (!ops_take(u, in_stash, countof(in_stash), stash, why) ||
        !ops_take(u, in_elem, cast ? 3 : 2, elem, why))
        return 0;
    if (cast && !up_op_takes("Cast", u->tgt, stash)) {
        *why = "Cast does not take the stash type at the target";
        return 0;
    }
    if (u->plan) return 0;
    float eps = 1e-5f;
    const Onnx__AttributeProto *ea = graph_attr(n, "epsilon");
    if (ea && ea->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) eps = ea->f;
    int64_t axes[64];
    size_t n_axes = 0;
    for (int64_t a = axis; a < r; a++) axes[n_axes++] = a;
    const char *mean_out = n->n_output > 1 ? n->output[1] : NULL;
    const char *inv_out = n->n_output > 2 ? n->output[2] : NULL;
    const char *xs = x, *mean, *d, *dd, *var, *e, *ve, *sd, *inv, *norm, *y;
    Onnx__NodeProto *p;
    int rc;
    if (cast) {
        if ((rc = up_emit(u, g, *node, "Cast", &x, 1, &xs, &p))) return rc;
        if (graph_node_set_attr_int(g, p, "to", stash)) return up_nomem(u);
    }
    if ((rc = up_emit_axes_op(u, g, *node, "ReduceMean", xs, axes, n_axes, &mean))) return rc;
    const char *i_d[2] = {xs, mean};
    if ((rc = up_emit(u, g, *node, "Sub", i_d, 2, &d, NULL))) return rc;
    const char *i_dd[2] = {d, d};
    if ((rc = up_emit(u, g, *node, "Mul", i_dd, 2, &dd, NULL)) ||
        (rc = up_emit_axes_op(u, g, *node, "ReduceMean", dd, axes, n_axes, &var)) ||
        (rc = up_emit_scalar(u, g, *node, "epsilon", stash, eps, &e)))
        return rc;
    const char *i_ve[2] = {var, e};
    if ((rc = up_emit(u, g, *node, "Add", i_ve, 2, &ve, NULL)) ||
        (rc = up_emit(u, g, *node, "Sqrt", &ve, 1, &sd, NULL)) ||
        (rc = up_emit_as(u, g, *node, "Reciprocal", &sd, 1, inv_out, &inv, NULL)))
        return rc;
    const char *i_norm[2] = {d, inv};
    if ((rc = up_emit(u, g, *node, "Mul", i_norm, 2, &norm, NULL))) return rc;
    if (cast) {
        if ((rc = up_emit(u, g, *node, "Cast", &norm, 1, &norm, &p))) return rc;
        if (graph_node_set_attr_int(g, p, "to", elem)) return up_nomem(u);
    }
    if (mean_out && *mean_out) {
        /* the mean under its own name: the op's output, in the stash type */
        const char *i_id[1] = {mean};
        if ((rc = up_emit_as(u, g, *node, "Identity", i_id, 1, mean_out, &mean, NULL))) return rc;
    }
    const char *scale = graph_node_input(n, 1), *bias = graph_node_input(n, 2);
    const char *i_y[2] = {norm, scale};
    if (bias) {
        if ((rc = up_emit(u, g, *node, "Mul", i_y, 2, &y, NULL))) return rc;
        i_y[0] = y;
        i_y[1] = bias;
    }
    if (act) json_put_ints(act, "axes", axes, n_axes);
    rc = up_replace_node(u, g, node, bias ? "Add" : "Mul", i_y, 2, 1);
    if (rc) return rc;
    n = graph_node(g, *node);
    graph_node_del_attr(n, "axis");
    graph_node_del_attr(n, "epsilon");
    graph_node_del_attr(n, "stash_type");
    return 0;
}

/*
** Resize-10 (as the step down from 11 leaves it: x, scales) is Upsample-9;
** Upsample-7 holds the scales as an attribute, so they must be constant there
** (a Resize-11 node sized by its sizes input got constant scales in that step).
*/
static int expand_resize(up *u, graph *g, int32_t *node, json_w *act, node_use *use,
                         const char **why) {
    (void)use; /* these replace the node whole: no older schema checks it after */
    Onnx__NodeProto *n = graph_node(g, *node);
    if (!ops_take(u, (const char *const[]){"Upsample"}, 1, up_elem_of(g, graph_node_input(n, 0)),
                  why))
        return 0;
    /* planning sees the node as it came: scales are input 2 from Resize-11 on */
    const char *scales = graph_node_input(n, n->n_input > 2 ? 2 : 1);
    if (u->tgt >= 9 || (u->plan && !scales)) {
        if (u->plan) return 0;
        const char *ins[2] = {graph_node_input(n, 0), scales};
        return up_replace_node(u, g, node, "Upsample", ins, 2, 0);
    }
    double d[64];
    float v[64];
    size_t cnt = 0;
    bool found;
    int rc = up_const_floats(u, g, scales, d, 64, &cnt, &found);
    if (rc) return rc;
    if (!found || cnt == 0) {
        *why = "Upsample-7 holds scales as an attribute: they must be constant";
        return 0;
    }
    for (size_t i = 0; i < cnt; i++) v[i] = (float)d[i];
    if (u->plan) return 0;
    if (graph_node_set_attr_floats(g, n, "scales", v, cnt)) return up_nomem(u);
    if (act) json_put_floats(act, "scales", v, (int)cnt);
    const char *ins[1] = {graph_node_input(n, 0)};
    return up_replace_node(u, g, node, "Upsample", ins, 1, 0);
}

/* Sorted by op. */
static const down_expansion expansions[] = {
    {"GreaterOrEqual", "Greater, Equal, Or", expand_greater_or_equal},
    {"HardSwish", "HardSigmoid, Mul", expand_hardswish},
    {"LayerNormalization", "ReduceMean, Sub, Mul, Add, Sqrt, Reciprocal", expand_layernorm},
    {"LessOrEqual", "Less, Equal, Or", expand_less_or_equal},
    {"Resize", "Upsample", expand_resize},
};

const down_expansion *up_expansion_find(const char *op) {
    for (size_t i = 0; i < countof(expansions); i++) {
        int c = strcmp(op, expansions[i].op);
        if (c < 0) break;
        if (c == 0) return &expansions[i];
    }
    return NULL;
}

size_t downgrade_expansion_count(void) { return countof(expansions); }
const char *downgrade_expansion_op(size_t i) { return expansions[i].op; }

/*
** The Tile-1 adapter: (input, tiles, axis) becomes Tile-6's (input, repeats),
** constant when the values and rank are known, computed at run time otherwise.
*/
#include <math.h>

#include "graph/const.h"
#include "passes/upgrade/upgrade_impl.h"

/*
** The value of name computed by the evaluator from constants: a chain of nodes the
** evaluator implements whose inputs all come down to initializers or Constant
** nodes (at most `depth` nodes deep, each with at most 3 inputs). NULL when it is
** not such a value or the evaluation fails (then the run-time form takes over).
** The caller frees it.
*/
static tensor *eval_const(up *u, graph *g, const char *name, int depth) {
    if (!name || !*name || depth <= 0) return NULL;
    graph_const c; /* t may point into it */
    const Onnx__TensorProto *t = graph_const_find(g, name, &c) ? c.tensor : NULL;
    errbuf e;
    err_clear(&e);
    const eval_env *env = &u->pc->eval;
    if (t) {
        tensor *out = NULL;
        return tensor_from_proto(u->m, t, env, &out, &e) ? NULL : out;
    }
    int32_t pi;
    Onnx__NodeProto *p = graph_producer(g, name, &pi);
    /* depth and fan-in bounds keep a hostile DAG from costing more than 3^depth */
    if (!p || p->n_output != 1 || p->n_input > 3 || graph_node_subgraphs(g, pi) ||
        !graph_domain_is_default(p->domain) || !eval_supports(p->op_type, u->src))
        return NULL;
    tensor *in[3] = {NULL};
    bool ok = true;
    for (size_t i = 0; i < p->n_input && ok; i++) {
        const char *nm = graph_node_input(p, i);
        if (nm && !(in[i] = eval_const(u, g, nm, depth - 1))) ok = false;
    }
    tensor *out = NULL;
    if (ok && eval_node(g, pi, in, p->n_input, &out, 1, env, NULL, &e)) out = NULL;
    for (size_t i = 0; i < p->n_input; i++)
        if (in[i]) tensor_free(in[i]);
    return out;
}

/* One whole number from an evaluated 0-D or 1-element tensor (ints, float, double). */
static int tensor_whole(up *u, graph *g, int32_t node, tensor *t, const char *what,
                        int64_t *out, bool *found) {
    *found = false;
    if (tensor_numel(t) != 1) return 0;
    size_t cnt;
    if (tensor_to_i64(t, out, 1, &cnt) && cnt == 1) {
        *found = true;
        return 0;
    }
    double v;
    if (t->elem == DT_FLOAT)
        v = *(const float *)t->data;
    else if (t->elem == DT_DOUBLE)
        v = *(const double *)t->data;
    else
        return 0;
    if (!(v == floor(v)) || fabs(v) >= 9.2e18)
        return err_set(u->err, TILEOPT_INVALID, "node %s: %s %g is not a whole number",
                       graph_node_id(g, node), what, v);
    *out = (int64_t)v;
    *found = true;
    return 0;
}

/* Cast(x) to int64, as a fresh value. */
static int emit_i64_cast(up *u, graph *g, int32_t node, const char *x, const char **out) {
    Onnx__NodeProto *p = NULL;
    int rc = up_emit(u, g, node, "Cast", &x, 1, out, &p);
    if (rc) return rc;
    return graph_node_set_attr_int(g, p, "to", DT_INT64) ? up_nomem(u) : 0;
}

/*
** Run-time Tile-1 repeats for an input of known rank r, with opset-7 ops only:
** repeats = 1 + sel * (tiles - 1), sel being 1 at the axis and 0 elsewhere. sel
** is a constant when the axis is, else Cast(Equal(iota, axis) or
** Equal(iota - r, axis)): a negative axis counts from the end.
*/
static int tile1_repeats_ranked(up *u, graph *g, int32_t node, int32_t r,
                                const int64_t *tiles, const char *tn, const int64_t *axis,
                                const char *an, const char **out) {
    int64_t v[TENSOR_MAX_RANK], one = 1; /* r <= TENSOR_MAX_RANK: the caller checks */
    const char *sel = NULL, *t64 = NULL, *one1 = NULL, *extra = NULL, *scaled = NULL;
    int rc;
    if (axis) {
        int64_t a = axis[0] < 0 ? axis[0] + r : axis[0];
        for (int32_t i = 0; i < r; i++) v[i] = i == a;
        if ((rc = up_emit_i64(u, g, node, "axis_mask", v, (size_t)r, false, &sel))) return rc;
    } else {
        const char *ax = NULL, *iota = NULL, *iota_neg = NULL, *at = NULL, *at_neg = NULL,
                   *either = NULL;
        if ((rc = emit_i64_cast(u, g, node, an, &ax))) return rc;
        for (int32_t i = 0; i < r; i++) v[i] = i;
        if ((rc = up_emit_i64(u, g, node, "iota", v, (size_t)r, false, &iota))) return rc;
        for (int32_t i = 0; i < r; i++) v[i] = i - r;
        if ((rc = up_emit_i64(u, g, node, "iota_neg", v, (size_t)r, false, &iota_neg))) return rc;
        const char *e1[2] = {iota, ax}, *e2[2] = {iota_neg, ax};
        if ((rc = up_emit(u, g, node, "Equal", e1, 2, &at, NULL)) ||
            (rc = up_emit(u, g, node, "Equal", e2, 2, &at_neg, NULL)))
            return rc;
        const char *o[2] = {at, at_neg};
        if ((rc = up_emit(u, g, node, "Or", o, 2, &either, NULL)) ||
            (rc = emit_i64_cast(u, g, node, either, &sel)))
            return rc;
    }
    if (tiles)
        rc = up_emit_i64(u, g, node, "tiles", tiles, 1, false, &t64);
    else
        rc = emit_i64_cast(u, g, node, tn, &t64);
    if (rc || (rc = up_emit_i64(u, g, node, "one", &one, 1, true, &one1))) return rc;
    const char *d[2] = {t64, one1};
    if ((rc = up_emit(u, g, node, "Sub", d, 2, &extra, NULL))) return rc;
    const char *m[2] = {sel, extra};
    if ((rc = up_emit(u, g, node, "Mul", m, 2, &scaled, NULL))) return rc;
    const char *a[2] = {scaled, one1};
    return up_emit(u, g, node, "Add", a, 2, out, NULL);
}

/*
** Tile-1 (input, tiles, axis) -> Tile-6 (input, repeats). Constant tiles and axis
** with a known rank give a constant repeats; otherwise repeats is computed at run
** time: from the known rank with opset-7 ops (tile1_repeats_ranked), or, when
** the rank too is only known at run time, Where(Range(rank(x)) == axis', tiles, 1)
** with axis' = axis (+ rank when negative), which needs Range (opset 11).
*/
int up_adapt_tile_1_6(up *u, graph *g, int32_t *node, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *id = graph_node_id(g, *node);
    const char *x = graph_node_input(n, 0), *tn = graph_node_input(n, 1),
               *an = graph_node_input(n, 2);
    if (!x || !tn || !an)
        return err_set(u->err, TILEOPT_INVALID, "node %s: Tile-1 needs input, tiles and axis",
                       id);
    int32_t xe = up_elem_of(g, x);
    int32_t te = up_elem_of(g, tn), ae = up_elem_of(g, an);
    if ((te && te != xe) || (ae && ae != xe))
        pass_warn(u->pc, "node %s: Tile-1 tiles/axis typed %s/%s, the schema wants the "
                  "input's type %s; source fails the checker, migrated anyway", id,
                  dtype_name(te), dtype_name(ae), dtype_name(xe));
    int64_t tv[2], av[2];
    size_t tc, ac;
    int32_t el;
    bool tf, af;
    int rc = up_const_ints(u, g, *node, tn, "Tile tiles", tv, 2, &tc, &el, &tf);
    if (!rc) rc = up_const_ints(u, g, *node, an, "Tile axis", av, 2, &ac, &el, &af);
    if (rc) return rc;
    /* Not a plain constant: maybe a small constant computation the evaluator can do. */
    for (int k = 0; k < 2 && !rc; k++) {
        bool *f = k ? &af : &tf;
        if (*f) continue;
        tensor *t = eval_const(u, g, k ? an : tn, 5);
        if (!t) continue;
        rc = tensor_whole(u, g, *node, t, k ? "Tile axis" : "Tile tiles", k ? av : tv, f);
        if (*f) *(k ? &ac : &tc) = 1;
        tensor_free(t);
    }
    if (rc) return rc;
    if ((tf && tc != 1) || (af && ac != 1))
        return err_set(u->err, TILEOPT_INVALID,
                       "node %s: Tile tiles and axis must hold one value each", id);
    if (tf && tv[0] < 0)
        return err_set(u->err, TILEOPT_INVALID, "node %s: Tile tiles %lld is negative", id,
                       (long long)tv[0]);
    int32_t r = up_rank_of(g, x);
    if (af && r >= 0 && (av[0] < -(int64_t)r || av[0] >= r))
        return err_set(u->err, TILEOPT_INVALID,
                       "node %s: Tile axis %lld out of range for rank %d", id,
                       (long long)av[0], r);
    const char *rep;
    if (tf && af && r >= 0) {
        int64_t reps[TENSOR_MAX_RANK];
        if (r > TENSOR_MAX_RANK)
            return err_set(u->err, TILEOPT_LIMIT, "node %s: rank %d too large", id, r);
        for (int32_t i = 0; i < r; i++) reps[i] = 1;
        reps[av[0] < 0 ? av[0] + r : av[0]] = tv[0];
        if ((rc = up_emit_i64(u, g, *node, "repeats", reps, (size_t)r, false, &rep))) return rc;
        if (act) json_put_ints(act, "repeats", reps, (size_t)r);
    } else if (r > 0 && r <= TENSOR_MAX_RANK && u->tgt >= 7) {
        if ((rc = tile1_repeats_ranked(u, g, *node, r, tf ? tv : NULL, tn, af ? av : NULL, an,
                                       &rep)))
            return rc;
        /* repeats only exist at run time (the report schema keeps "repeats" for
        ** arrays) */
        if (act) json_put_bool(act, "runtime_repeats", 1);
    } else {
        if (u->tgt < 11)
            return err_set(u->err, TILEOPT_UNSUPPORTED,
                           "node %s: Tile-1 with %s needs target opset >= %d", id,
                           r < 0 ? "an input of unknown rank" : "run-time tiles or axis",
                           r < 0 ? 11 : 7);
        const char *shape = NULL, *rank1 = NULL, *rank0 = NULL, *zero = NULL, *one1 = NULL,
                   *idx = NULL, *ax = NULL, *t64 = NULL, *eq = NULL, *emp = NULL;
        int64_t z = 0, o = 1;
        if ((rc = up_emit(u, g, *node, "Shape", &x, 1, &shape, NULL)) ||
            (rc = up_emit(u, g, *node, "Shape", &shape, 1, &rank1, NULL)) ||
            (rc = up_emit_i64(u, g, *node, "scalar_shape", NULL, 0, false, &emp)))
            return rc;
        const char *i0[2] = {rank1, emp};
        if ((rc = up_emit(u, g, *node, "Reshape", i0, 2, &rank0, NULL)) ||
            (rc = up_emit_i64(u, g, *node, "zero", &z, 1, true, &zero)) ||
            (rc = up_emit_i64(u, g, *node, "one", &o, 1, true, &one1)))
            return rc;
        const char *i1[3] = {zero, rank0, one1};
        if ((rc = up_emit(u, g, *node, "Range", i1, 3, &idx, NULL))) return rc;
        bool maybe_neg = true;
        if (af) {
            maybe_neg = av[0] < 0;
            if ((rc = up_emit_i64(u, g, *node, "axis", av, 1, false, &ax))) return rc;
        } else {
            if ((rc = emit_i64_cast(u, g, *node, an, &ax))) return rc;
        }
        if (maybe_neg) {
            const char *neg, *sum, *na;
            const char *i2[2] = {ax, zero};
            if ((rc = up_emit(u, g, *node, "Less", i2, 2, &neg, NULL))) return rc;
            const char *i3[2] = {ax, rank0};
            if ((rc = up_emit(u, g, *node, "Add", i3, 2, &sum, NULL))) return rc;
            const char *i4[3] = {neg, sum, ax};
            if ((rc = up_emit(u, g, *node, "Where", i4, 3, &na, NULL))) return rc;
            ax = na;
        }
        const char *i5[2] = {idx, ax};
        if ((rc = up_emit(u, g, *node, "Equal", i5, 2, &eq, NULL))) return rc;
        if (tf) {
            if ((rc = up_emit_i64(u, g, *node, "tiles", tv, 1, false, &t64))) return rc;
        } else {
            if ((rc = emit_i64_cast(u, g, *node, tn, &t64))) return rc;
        }
        const char *i6[3] = {eq, t64, one1};
        if ((rc = up_emit(u, g, *node, "Where", i6, 3, &rep, NULL))) return rc;
        /* repeats only exist at run time (the report schema keeps "repeats" for
        ** arrays) */
        if (act) json_put_bool(act, "runtime_repeats", 1);
    }
    const char *ins[2] = {x, rep};
    return up_replace_node(u, g, node, "Tile", ins, 2, 0);
}

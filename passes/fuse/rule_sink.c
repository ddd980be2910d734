/*
** Rules 2 and 3: U(T) -> Tile(U(x), r) for a unary elementwise U, B(T, c) ->
** Tile(B(x, c), r) for c invariant under the tiling, and B(Tile(x, r),
** Tile(w, r)) -> Tile(B(x, w), r) for equal shapes of x and w: the op runs on
** prod(d) elements and the Tile moves after it.
*/
#include <stdio.h>
#include <string.h>

#include "passes/fuse/fuse_impl.h"

/* Does o stay the same along the tiled axes of x without widening it? */
bool fz_invariant(const fz_tile *t, const fz_shape *o) {
    if (o->rank > t->xs.rank) return false;
    for (int32_t j = 0; j < o->rank; j++) {
        int32_t i = j + t->xs.rank - o->rank;
        bool one = dim_is(o->d[j], 1);
        if (!dim_is(t->r[i], 1) ? !one : (!one && !dim_eq(o->d[j], t->xs.d[i]))) return false;
    }
    return true;
}

/* Is `name` the output of a Tile with the same repeats over an equal shape? */
int fz_same_tiling(fz_state *st, const fz_tile *t, const char *name,
                   int32_t *tile2, bool *ok) {
    *ok = false;
    int32_t i2;
    Onnx__NodeProto *p = graph_producer(st->g, name, &i2);
    if (!p || !graph_node_is(p, "Tile")) return TILEOPT_OK;
    fz_tile t2;
    char why[256];
    int rc = fz_read_tile(st->pc, st->g, i2, &t2, why, sizeof why);
    if (rc < 0) return -rc;
    if (rc) return TILEOPT_OK;
    if (strcmp(t2.x, t->out) == 0 ||
        !dims_eq(t->xs.d, t->xs.rank, t2.xs.d, t2.xs.rank) ||
        !dims_eq(t->r, t->xs.rank, t2.r, t2.xs.rank))
        return TILEOPT_OK;
    *tile2 = i2;
    *ok = true;
    return TILEOPT_OK;
}

/* Rules 2 and 3: C(.., T, ..) -> Tile(C(.., x, ..), r). */
int fz_sink(fz_state *st, const fz_tile *t, const fz_plan *p) {
    graph *g = st->g;
    pass_ctx *pc = st->pc;
    const Onnx__NodeProto *c = graph_node(g, p->node);
    fz_tile t2 = *t;
    if (p->kind == P_R3T && p->other_tile != t->node) {
        char why[256];
        int rc = fz_read_tile(pc, g, p->other_tile, &t2, why, sizeof why);
        if (rc < 0) return -rc;
        if (rc) return err_set(pc->err, TILEOPT_ERROR, "fuse: %s", why);
    }
    int32_t elem = fz_out_elem(st, c, fz_elementwise(c)->out, t);
    dim cshape[FZ_MAX_RANK];
    int32_t crank;
    uint64_t el_before = t->t_numel;
    if (t->fixed && fz_consumer_out(st, t, c, cshape, &crank) &&
        dims_static(cshape, crank))
        el_before = fz_numel(cshape, crank);

    const char *ins[8];
    size_t n_in = c->n_input;
    if (n_in > 8) return err_set(pc->err, TILEOPT_ERROR, "fuse: too many inputs");
    for (size_t k = 0; k < n_in; k++) {
        ins[k] = c->input[k];
        if (strcmp(ins[k], t->out) == 0) ins[k] = t->x;
        else if (p->kind == P_R3T && strcmp(ins[k], t2.out) == 0) ins[k] = t2.x;
    }
    const char *op = c->op_type, *cout = c->output[0];
    const char *small = fz_hint(g, p->node, "untiled");
    const char *nname = fz_hint(g, p->node, "fused");
    const char *tname = fz_hint(g, p->node, "tile");
    if (!small || !nname || !tname) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    int rule = p->kind == P_R2 ? 2 : 3;
    const char *rname = p->kind == P_R2   ? "unary op before the Tile"
                        : p->kind == P_R3C && n_in > 2
                            ? "elementwise op with tiling-invariant operands"
                        : p->kind == P_R3C ? "binary op with a tiling-invariant operand"
                                           : "binary op on equally tiled operands";
    uint64_t el_after = t->fixed ? fz_numel(t->xs.d, t->xs.rank) : 0;
    const dtype_info *od = dtype_get(elem);
    uint64_t bytes_after = od ? t->t_numel * od->size : 0;
    fz_report(st, t, p->node, rule, rname, el_before, el_after, bytes_after);

    /* Remove C first so its output name is free for the new Tile: every name
    ** keeps its meaning, graph outputs included. */
    Onnx__NodeProto *keep = graph_node(g, p->node);
    graph_remove_node(g, p->node);
    int32_t ni, ti;
    Onnx__NodeProto *nn = graph_add_node(g, op, nname, ins, n_in, &small, 1, &ni);
    if (!nn) return err_set(pc->err, TILEOPT_NOMEM, "fuse: cannot add node %s", nname);
    int rc = fz_copy_attrs(g, nn, keep);
    if (rc) return err_set(pc->err, rc, "fuse: cannot copy attributes of %s", op);
    fz_note_foldable(pc, g, ins, n_in);
    rc = fz_set_type(st, small, elem, t->xs.d, t->xs.rank);
    if (rc) return rc;
    const char *tin[2] = {small, t->reps};
    if (!graph_add_node(g, "Tile", tname, tin, 2, &cout, 1, &ti))
        return err_set(pc->err, TILEOPT_NOMEM, "fuse: cannot add node %s", tname);
    rc = fz_set_type(st, cout, elem, t->t, t->xs.rank);
    if (rc) return rc;
    if ((rc = fz_grow_nodes(st)) || (rc = fz_push(st, ti))) return rc;
    if (p->kind == P_R3T && t2.node != t->node) {
        /* the other Tile lost a reader: it may be removable or sinkable now */
        if (!fz_live_uses(g, t2.out) && !graph_value_is_output(g, t2.out))
            graph_remove_node(g, t2.node);
        else if ((rc = fz_push(st, t2.node)))
            return rc;
    }
    return TILEOPT_OK;
}

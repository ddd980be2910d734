/*
** Rule 1: B(T, y) -> B(x, y) when every tiled axis of x has size 1 and the
** broadcast gives the same output shape (the Tile was a broadcast B does by
** itself), for elementwise ops and for MatMul's batch dims.
*/
#include <stdio.h>
#include <string.h>

#include "passes/fuse/fuse_impl.h"

/* Rule 1: reading x instead of T gives the same output. */
bool fz_redundant(const fz_tile *t, const fz_shape *o, bool uni, int slot) {
    if (!fz_is_broadcast(t)) return false;
    if (uni) {
        /* the slope (slot 1) broadcasts to X one way only */
        if (slot != 1 || t->xs.rank > o->rank) return false;
        for (int32_t j = 0; j < t->xs.rank; j++) {
            dim xd = t->xs.d[j], od = o->d[j + o->rank - t->xs.rank];
            if (!dim_is(xd, 1) && !dim_eq(xd, od)) return false;
        }
        return true;
    }
    dim a[FZ_MAX_RANK], b[FZ_MAX_RANK];
    int32_t ra, rb;
    return dim_broadcast2(t->t, t->xs.rank, o->d, o->rank, a, &ra) &&
           dim_broadcast2(t->xs.d, t->xs.rank, o->d, o->rank, b, &rb) &&
           dims_eq(a, ra, b, rb);
}

/*
** Rule 1 for MatMul: its batch dims (all but the last two) broadcast as an
** elementwise op's do, so a Tile over size-1 batch axes only is a broadcast
** MatMul does itself when the other operand's batch dims give the same result:
** MatMul(a[B,M,K], Tile(w[1,K,N], [B,1,1])) is MatMul(a, w).
*/
int fz_plan_matmul(fz_state *st, const fz_tile *t, const Onnx__NodeProto *c,
                   const char *cid, fz_plan *p) {
    const char *a = graph_node_input(c, 0), *b = graph_node_input(c, 1);
    int32_t r = t->xs.rank;
    if (!a || !b || (strcmp(a, t->out) == 0) == (strcmp(b, t->out) == 0)) {
        snprintf(p->why, sizeof p->why, "consumer %s (MatMul) reads the Tile as both "
                 "operands", cid);
        return TILEOPT_OK;
    }
    fz_shape o;
    if (!fz_shape_of(st->g, strcmp(a, t->out) == 0 ? b : a, &o) || o.rank < 2 ||
        r < 3) {
        snprintf(p->why, sizeof p->why, "consumer %s (MatMul): no batch dims to broadcast "
                 "(or the other operand's rank is unknown)", cid);
        return TILEOPT_OK;
    }
    dim bt[FZ_MAX_RANK], bx[FZ_MAX_RANK];
    int32_t rt, rx;
    if (!dim_is(t->r[r - 1], 1) || !dim_is(t->r[r - 2], 1) || !fz_is_broadcast(t) ||
        !dim_broadcast2(t->t, r - 2, o.d, o.rank - 2, bt, &rt) ||
        !dim_broadcast2(t->xs.d, r - 2, o.d, o.rank - 2, bx, &rx) || !dims_eq(bt, rt, bx, rx)) {
        snprintf(p->why, sizeof p->why, "consumer %s (MatMul) does not broadcast the Tile "
                 "away: it tiles a matrix axis or an axis of size > 1, or the other "
                 "operand's batch dims do not carry the repeats", cid);
        return TILEOPT_OK;
    }
    p->kind = P_R1;
    return TILEOPT_OK;
}

/* Rule 1: the consumer reads x where it read T. */
int fz_read_through(fz_state *st, const fz_tile *t, const fz_plan *p) {
    graph *g = st->g;
    const Onnx__NodeProto *c = graph_node(g, p->node);
    dim cs[FZ_MAX_RANK];
    int32_t cr;
    uint64_t el = t->fixed && fz_elementwise(c) && fz_consumer_out(st, t, c, cs, &cr) &&
                          dims_static(cs, cr)
                      ? fz_numel(cs, cr)
                      : 0;
    fz_report(st, t, p->node, 1,
              fz_elementwise(c) ? "redundant Tile: the op broadcasts x itself"
                                : "redundant Tile: MatMul broadcasts the batch dims "
                                  "itself",
              el, el, 0);
    for (size_t s = 0; s < c->n_input; s++) {
        int rc = strcmp(c->input[s], t->out) == 0 ? graph_node_set_input(g, p->node, s, t->x)
                                                  : TILEOPT_OK;
        if (rc) return rc;
    }
    return TILEOPT_OK;
}

/*
** Which rule rewrites each reader of a Tile, or why none does: the cheap match
** on the consumer's op and operands, then the rules' own tests.
*/
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "passes/fuse/fuse_impl.h"

/* Why rules 1 and 3 fail against operand shape o (what names it): a broadcast
** Tile whose repeated dims o does not carry, or a real tiling o varies along. */
static void fz_why_varies(const fz_tile *t, const Onnx__NodeProto *c,
                          const char *cid, const char *what, const fz_shape *o,
                          fz_plan *p) {
    char os[160], rs[160];
    fz_shape_str(os, sizeof os, o->d, o->rank);
    fz_shape_str(rs, sizeof rs, t->r, t->xs.rank);
    if (fz_is_broadcast(t))
        snprintf(p->why, sizeof p->why, "consumer %s (%s): %s %s does not carry the "
                 "repeated dims (repeats %s), so the Tile is more than the broadcast the "
                 "op does", cid, c->op_type, what, os, rs);
    else
        snprintf(p->why, sizeof p->why, "consumer %s (%s): %s %s %s along the tiled axes: "
                 "a real tiling (repeats %s)", cid, c->op_type, what, os,
                 t->fixed && dims_static(o->d, o->rank) ? "varies"
                                                           : "is not known to stay the same",
                 rs);
}

/*
** Three or more operands broadcast together (Where, Sum/Max/Min/Mean): every
** operand but the Tile's folds into one broadcast shape o, and rules 1 and 3
** apply against o as they do against a binary op's other operand. Equally tiled
** operands (rule 3) and rule 4 stay binary-only.
*/
static int fz_plan_nary(fz_state *st, const fz_tile *t, const Onnx__NodeProto *c,
                        const char *cid, fz_plan *p) {
    fz_shape o = {.rank = 0};
    int slot = -1;
    for (size_t k = 0; k < c->n_input; k++) {
        const char *in = c->input[k];
        if (strcmp(in, t->out) == 0) {
            if (slot < 0) slot = (int)k;
            continue;
        }
        fz_shape s;
        dim b[FZ_MAX_RANK];
        int32_t rb;
        if (!fz_shape_of(st->g, in, &s)) {
            snprintf(p->why, sizeof p->why, "consumer %s (%s): rank of operand '%s' "
                     "unknown", cid, c->op_type, in);
            return TILEOPT_OK;
        }
        if (!dim_broadcast2(o.d, o.rank, s.d, s.rank, b, &rb)) {
            snprintf(p->why, sizeof p->why, "consumer %s (%s): operand '%s' does not "
                     "broadcast with the others", cid, c->op_type, in);
            return TILEOPT_OK;
        }
        memcpy(o.d, b, (size_t)rb * sizeof *b);
        o.rank = rb;
    }
    if (fz_redundant(t, &o, false, slot)) {
        p->kind = P_R1;
        return TILEOPT_OK;
    }
    if (fz_invariant(t, &o)) {
        p->kind = P_R3C;
        return TILEOPT_OK;
    }
    fz_why_varies(t, c, cid, "its other operands broadcast to", &o, p);
    return TILEOPT_OK;
}

int fz_plan_consumer(fz_state *st, const fz_tile *t, int32_t ci, fz_plan *p) {
    graph *g = st->g;
    const Onnx__NodeProto *c = graph_node(g, ci);
    const char *cid = graph_node_id(g, ci);
    p->node = ci;
    p->kind = P_NONE;
    p->r4_ok = false;
    p->other_tile = -1;
    p->why[0] = 0;
    if (c->n_output != 1) {
        snprintf(p->why, sizeof p->why, "consumer %s (%s) has %zu outputs", cid,
                 c->op_type, c->n_output);
        return TILEOPT_OK;
    }
    const op_info *e = fz_elementwise(c);
    if (e && e->kind == OPK_UNARY) {
        if (c->n_input < 1 || strcmp(c->input[0], t->out) != 0) {
            snprintf(p->why, sizeof p->why, "consumer %s (%s) reads the Tile as a "
                     "parameter, not as its data input", cid, c->op_type);
            return TILEOPT_OK;
        }
        for (size_t k = 1; k < c->n_input; k++) {
            const char *in = graph_node_input(c, k);
            if (in && strcmp(in, t->out) == 0) {
                snprintf(p->why, sizeof p->why, "consumer %s (%s) also reads the Tile "
                         "as a parameter", cid, c->op_type);
                return TILEOPT_OK;
            }
            if (!fz_input_constant(g, in)) {
                snprintf(p->why, sizeof p->why, "consumer %s (%s): input %zu ('%s') "
                         "is not a constant", cid, c->op_type, k, in);
                return TILEOPT_OK;
            }
        }
        if (!fz_attrs_copyable(c)) {
            snprintf(p->why, sizeof p->why, "consumer %s (%s) has attributes of a "
                     "kind the pass does not copy", cid, c->op_type);
            return TILEOPT_OK;
        }
        p->kind = P_R2;
        return TILEOPT_OK;
    }
    if (op_of(c) == OP_MatMul) return fz_plan_matmul(st, t, c, cid, p);
    if (op_of(c) == OP_Shape) {
        /* a window of the whole shape (start 0, no end: what the dynamo
        ** exporter writes for x.shape) is the whole shape */
        int64_t r = t->xs.rank;
        int64_t from = st->opset >= 15 ? graph_attr_int(c, "start", 0) : 0;
        int64_t to = st->opset >= 15 ? graph_attr_int(c, "end", r) : r;
        from = from < 0 ? from + r : from;
        to = to < 0 ? to + r : to;
        if ((from > 0 ? from : 0) != 0 || (to < r ? to : r) != r) {
            snprintf(p->why, sizeof p->why, "consumer %s (Shape) reads a window of the "
                     "Tile's shape (start/end)", cid);
            return TILEOPT_OK;
        }
        p->kind = P_R6;
        return TILEOPT_OK;
    }
    if (!e) {
        snprintf(p->why, sizeof p->why, "consumer %s (%s) is not an elementwise op "
                 "the pass handles", cid, c->op_type);
        return TILEOPT_OK;
    }
    if (e->bcast == BC_NONE || st->opset < e->bcast_since) {
        snprintf(p->why, sizeof p->why, "consumer %s: %s before opset %" PRId32
                 " has no numpy broadcasting", cid, c->op_type, e->bcast_since);
        return TILEOPT_OK;
    }
    bool uni = e->bcast == BC_UNI;
    size_t want = e->kind == OPK_SELECT ? 3 : e->kind == OPK_BINARY ? 2 : 0;
    bool all_there = c->n_input >= 2;
    for (size_t k = 0; k < c->n_input; k++)
        if (!graph_node_input(c, k)) all_there = false;
    if ((want && c->n_input != want) || !all_there) {
        snprintf(p->why, sizeof p->why, "consumer %s (%s) has %zu inputs, not %zu", cid,
                 c->op_type, c->n_input, want ? want : (size_t)2);
        return TILEOPT_OK;
    }
    if (!fz_attrs_copyable(c)) {
        snprintf(p->why, sizeof p->why, "consumer %s (%s) has attributes of a kind "
                 "the pass does not copy", cid, c->op_type);
        return TILEOPT_OK;
    }
    if (c->n_input > 2) return fz_plan_nary(st, t, c, cid, p);
    const char *in0 = graph_node_input(c, 0), *in1 = graph_node_input(c, 1);
    bool on0 = strcmp(in0, t->out) == 0, on1 = strcmp(in1, t->out) == 0;
    if (on0 && on1) {
        p->kind = P_R3T;
        p->other_tile = t->node;
        return TILEOPT_OK;
    }
    int slot = on0 ? 0 : 1;
    const char *other = on0 ? in1 : in0;
    fz_shape o;
    if (!fz_shape_of(g, other, &o)) {
        snprintf(p->why, sizeof p->why, "consumer %s (%s): rank of operand '%s' "
                 "unknown", cid, c->op_type, other);
        return TILEOPT_OK;
    }
    if (fz_redundant(t, &o, uni, slot)) {
        p->kind = P_R1;
        return TILEOPT_OK;
    }
    if ((!uni || slot == 0) && fz_invariant(t, &o)) {
        p->kind = P_R3C;
        return TILEOPT_OK;
    }
    bool same = false;
    int rc = fz_same_tiling(st, t, other, &p->other_tile, &same);
    if (rc) return rc;
    if (same) {
        p->kind = P_R3T;
        return TILEOPT_OK;
    }
    if (!uni && fz_splittable(t, &o)) {
        if (st->pc->opt->fuse_split) {
            p->kind = P_R4;
            p->r4_ok = true;
            return TILEOPT_OK;
        }
        snprintf(p->why, sizeof p->why, "consumer %s (%s): operand '%s' is full-size; "
                 "reading x through the view needs the repeat axes split out (rule 4, "
                 "--fuse-split; off by default: ONNX Runtime can run that form slower)", cid, c->op_type,
                 other);
        return TILEOPT_OK;
    }
    char what[160];
    snprintf(what, sizeof what, "operand '%.120s'", other);
    fz_why_varies(t, c, cid, what, &o, p);
    return TILEOPT_OK;
}

/*
** What a value is: a repeat of heads, a dim of the same size as another. The
** facts the gqa pass rewrites on, each proven, never guessed.
*/
#include <stdlib.h>
#include <string.h>

#include "passes/gqa/gqa_impl.h"

/* The single axis Unsqueeze node u inserts, or -1. */
static int32_t unsqueezed_axis(graph *g, int32_t u, int32_t out_rank) {
    const Onnx__NodeProto *n = graph_node(g, u);
    int64_t axes[2];
    size_t cnt = 0;
    if (graph_node_input(n, 1)) {
        bool found;
        errbuf e;
        if (graph_const_ints(g, graph_node_input(n, 1), axes, 2, &cnt, &found, &e) || !found)
            return -1;
    } else {
        const Onnx__AttributeProto *a = graph_attr(n, "axes");
        if (!a || a->n_ints > 2) return -1;
        cnt = a->n_ints;
        for (size_t k = 0; k < cnt; k++) axes[k] = a->ints[k];
    }
    if (cnt != 1) return -1;
    int64_t p = axes[0] < 0 ? axes[0] + out_rank : axes[0];
    return p >= 0 && p < out_rank ? (int32_t)p : -1;
}

/* The constant repeats of Tile node t over rank axes; false when not known. */
static bool tile_repeats(graph *g, int32_t t, int64_t *reps, int32_t rank) {
    size_t cnt = 0;
    bool found;
    errbuf e;
    return !graph_const_ints(g, graph_node_input(graph_node(g, t), 1), reps, (size_t)rank,
                             &cnt, &found, &e) &&
           found && cnt == (size_t)rank;
}

/* ------------------------------------------------------------- dim proofs */

/* Shape inference gives a dim no name where it cannot follow the values (a
** sequence length sliced out by a computed start), yet the exporters build a
** repeat's target shapes from Shape of the very tensor they repeat. So a dim is
** also known by where it comes from: axis a of value v is the same size as the
** axis it was carried over from, through the ops that carry axes (Transpose,
** Unsqueeze, elementwise), an Expand whose target entry there is 1 or that axis
** itself, a Reshape whose target entry copies it (0) or reads it from a Shape.
** Two dims with one origin are equal whatever their size. */
#define GQA_MAX_STEPS 24

/* The constant value of entry i of 1-D int tensor t, or where it comes from:
** axis *axis of *of (from a Shape of it). False when neither is known. */
static bool entry_of(graph *g, const char *t, int64_t i, int64_t *value, const char **of,
                     int32_t *axis, int depth);

/* Slice node n of a 1-D tensor with one constant start and end (axes [0] or
** none, no steps): *start and *end. */
static bool one_slice(graph *g, const Onnx__NodeProto *n, int64_t *start, int64_t *end) {
    int64_t st[2], en[2], ax[2] = {0};
    size_t a = 0, b = 0, c = 1;
    bool f1 = false, f2 = false, f3 = true;
    errbuf e;
    if (!graph_node_is(n, "Slice") || n->n_input < 3 ||
        graph_const_ints(g, n->input[1], st, 2, &a, &f1, &e) ||
        graph_const_ints(g, n->input[2], en, 2, &b, &f2, &e) || !f1 || !f2 || a != 1 || b != 1)
        return false;
    if (graph_node_input(n, 3) &&
        (graph_const_ints(g, n->input[3], ax, 2, &c, &f3, &e) || !f3 || c != 1 || ax[0]))
        return false;
    if (graph_node_input(n, 4)) return false;
    *start = st[0];
    *end = en[0];
    return true;
}

/* Entries of 1-D tensor t: by its type, or, for the part of a shape this
** pass made (no type until inference runs again: a Shape with start and end,
** or a Slice of a whole Shape before opset 15), by its bounds; -1 when
** unknown. */
static int64_t entries(graph *g, const char *t, int depth) {
    const graph_type *tt = gq_type_of(g, t);
    if (tt && tt->rank == 1) return gq_num(tt, 0);
    int32_t idx;
    const Onnx__NodeProto *n = graph_producer(g, t, &idx);
    if (!n || graph_node_removed(g, idx) || depth > GQA_MAX_STEPS) return -1;
    int64_t start, end;
    if (graph_node_is(n, "Shape")) {
        const graph_type *tx = gq_type_of(g, n->input[0]);
        if (!tx || tx->rank < 0) return -1;
        return dim_slice_len(tx->rank, graph_attr_int(n, "start", 0),
                             graph_attr_int(n, "end", tx->rank), 1);
    }
    if (!one_slice(g, n, &start, &end)) return -1;
    int64_t whole = entries(g, n->input[0], depth + 1);
    return whole < 0 ? -1 : dim_slice_len(whole, start, end, 1);
}

static bool entry_of(graph *g, const char *t, int64_t i, int64_t *value, const char **of,
                     int32_t *axis, int depth) {
    *of = NULL;
    if (!t || depth > GQA_MAX_STEPS || i < 0) return false;
    int64_t vals[64];
    size_t cnt = 0;
    bool found = false;
    errbuf e;
    if (!graph_const_ints(g, t, vals, 64, &cnt, &found, &e) && found) {
        if ((size_t)i >= cnt) return false;
        *value = vals[i];
        return true;
    }
    int32_t idx;
    const Onnx__NodeProto *n = graph_producer(g, t, &idx);
    if (!n || graph_node_removed(g, idx)) return false;
    switch (op_of(n)) {
    case OP_Shape: {
        const graph_type *tx = gq_type_of(g, n->input[0]);
        if (!tx || tx->rank < 0) return false;
        int64_t start = graph_attr_int(n, "start", 0);
        if (start < 0) start += tx->rank;
        if (start < 0 || start + i >= tx->rank) return false;
        *of = n->input[0];
        *axis = (int32_t)(start + i);
        return true;
    }
    case OP_Concat: {
        if (graph_attr_int(n, "axis", 0) != 0) return false;
        int64_t at = i;
        for (size_t k = 0; k < n->n_input; k++) {
            int64_t len = entries(g, n->input[k], depth + 1);
            if (len < 0) return false;
            if (at < len) return entry_of(g, n->input[k], at, value, of, axis, depth + 1);
            at -= len;
        }
        return false;
    }
    case OP_Unsqueeze:
    case OP_Squeeze:
    case OP_Cast:
    case OP_Identity:
    case OP_Reshape: {
        /* the same entries in another rank-0 or rank-1 form */
        const graph_type *tx = gq_type_of(g, n->input[0]), *tt = gq_type_of(g, t);
        if (!tx || !tt || tx->rank > 1 || tt->rank > 1) return false;
        return entry_of(g, n->input[0], i, value, of, axis, depth + 1);
    }
    case OP_ConstantOfShape: {
        const Onnx__AttributeProto *va = graph_attr(n, "value");
        int64_t fill = 0;
        if (va && va->t) {
            graph_tensor_data d;
            if (graph_tensor_read(g->model, va->t, &d, &e)) return false;
            bool ok = d.numel == 1 && d.elem == DT_INT64;
            if (ok) memcpy(&fill, d.data, sizeof fill);
            if (d.owned) free(d.data);
            if (!ok) return false;
        }
        *value = fill;
        return true;
    }
    case OP_Mul: {
        /* a constant entry times a constant scalar (the -1s of an Expand guard) */
        int64_t a, b;
        const char *oa, *ob;
        int32_t xa, xb;
        const graph_type *tb = gq_type_of(g, n->input[1]);
        if (!entry_of(g, n->input[0], i, &a, &oa, &xa, depth + 1) || oa || !tb ||
            !entry_of(g, n->input[1], tb->rank == 0 || gq_num(tb, 0) == 1 ? 0 : i, &b, &ob, &xb,
                      depth + 1) ||
            ob || __builtin_mul_overflow(a, b, value))
            return false;
        return true;
    }
    case OP_Where: {
        /* Where(Equal(x, -1s), 1s, x), an exporter's guard for -1 in Expand's
        ** shape: an entry that is a dim or a number >= 0 is never -1 */
        int32_t ci;
        const Onnx__NodeProto *cond = graph_producer(g, n->input[0], &ci);
        if (!cond || !graph_node_is(cond, "Equal") || strcmp(cond->input[0], n->input[2]) != 0)
            return false;
        int64_t x, m;
        const char *ox, *om;
        int32_t ax, am;
        if (!entry_of(g, n->input[2], i, &x, &ox, &ax, depth + 1) ||
            !entry_of(g, cond->input[1], i, &m, &om, &am, depth + 1) || om || m >= 0 ||
            (!ox && x < 0))
            return false;
        return entry_of(g, n->input[2], i, value, of, axis, depth + 1);
    }
    case OP_Gather: {
        int64_t c[2];
        size_t nc = 0;
        bool fc = false;
        if (graph_attr_int(n, "axis", 0) != 0 || i != 0 ||
            graph_const_ints(g, n->input[1], c, 2, &nc, &fc, &e) || !fc || nc != 1)
            return false;
        return entry_of(g, n->input[0], c[0], value, of, axis, depth + 1);
    }
    case OP_Slice: {
        int64_t st, en;
        if (!one_slice(g, n, &st, &en) || st < 0 || en <= st + i) return false;
        return entry_of(g, n->input[0], st + i, value, of, axis, depth + 1);
    }
    default:
        return false;
    }
}

/* The axis that axis a of value v was carried over from, as far back as it
** provably goes: *root and *raxis. */
static void origin(graph *g, const char *v, int32_t a, const char **root, int32_t *raxis) {
    *root = v;
    *raxis = a;
    for (int step = 0; step < GQA_MAX_STEPS; step++) {
        int32_t idx;
        const Onnx__NodeProto *n = graph_producer(g, v, &idx);
        if (!n || graph_node_removed(g, idx)) return;
        const graph_type *to = gq_type_of(g, v), *tx = gq_type_of(g, graph_node_input(n, 0));
        op_id op = op_of(n);
        /* a Reshape this pass made reads an input inference has not typed yet;
        ** its target's entries read from a Shape need no type */
        bool tx_known = tx && tx->rank >= 0;
        if (!to || to->rank < 0 || (!tx_known && op != OP_Reshape)) return;
        int32_t next = -1;
        if (op == OP_Transpose) {
            const Onnx__AttributeProto *pa = graph_attr(n, "perm");
            if (pa && (int32_t)pa->n_ints == to->rank && a < to->rank) next = (int32_t)pa->ints[a];
            else if (!pa) next = to->rank - 1 - a;
        } else if (op == OP_Unsqueeze) {
            /* the axis inserted is a 1 of its own: the others keep their order */
            int32_t p = to->rank - tx->rank == 1 ? unsqueezed_axis(g, idx, to->rank) : -1;
            if (p >= 0 && a != p) next = a < p ? a : a - 1;
        } else if (op == OP_Expand || op == OP_Reshape) {
            int64_t val;
            const char *of;
            int32_t ax;
            int64_t off = op == OP_Expand ? (int64_t)to->rank - tx->rank : 0;
            if (entry_of(g, graph_node_input(n, 1), a, &val, &of, &ax, 0)) {
                if (of) {
                    /* the target reads the dim straight from a Shape */
                    v = of;
                    a = ax;
                    *root = v;
                    *raxis = a;
                    continue;
                }
                if (op == OP_Expand && val == 1 && a - off >= 0) next = (int32_t)(a - off);
                if (op == OP_Reshape && val == 0 && !graph_attr_int(n, "allowzero", 0) &&
                    tx_known && a < tx->rank)
                    next = a;
            }
        } else if (op == OP_Tile) {
            int64_t reps[GQA_RANK + 1];
            if (to->rank <= GQA_RANK + 1 && tile_repeats(g, idx, reps, to->rank) && reps[a] == 1)
                next = a;
        } else if (op != OP_NONE && op_table[op].kind == OPK_UNARY && to->rank == tx->rank) {
            next = a;
        }
        if (next < 0 || !tx_known || next >= tx->rank) return;
        v = graph_node_input(n, 0);
        a = next;
        *root = v;
        *raxis = a;
    }
}

/*
** A dim may also be a broadcast: numpy broadcasting of dims d1..dk gives their
** one value other than 1 (or 1), in any order and grouping, however often a
** dim occurs. So a broadcast dim is known by the set of its leaves, and two
** sets with provably the same leaves are the same dim. That proves what
** inference leaves unknown in a rotary embedding, whose cos/sin table is
** sliced to a length read at run time: Q's rows are {Sq, table rows}, K's are
** the same set, and so are the probabilities' after an additive mask of Sq
** rows. The leaves are followed through broadcasting ops, a Concat along
** another axis (its inputs' one dim), a MatMul's rows and columns (and its
** broadcast batch axes), and a Softmax, wherever inference left the dim
** unknown (a dim it names is a leaf); a dim of 1 adds nothing. The walk
** visits at most GQA_LEAF_VISITS values and keeps at most GQA_MAX_LEAVES
** leaves, so it stays small on any graph.
*/
#define GQA_MAX_LEAVES 8
#define GQA_LEAF_VISITS 64
#define GQA_LEAF_INPUTS 4

typedef struct leaf_set {
    const char *v[GQA_MAX_LEAVES];
    int32_t a[GQA_MAX_LEAVES];
    int n;
    int visits;
    bool ok;                 /* false once a bound was reached: nothing proven */
} leaf_set;

static bool same_origin(graph *g, const char *v, int32_t a, const char *w, int32_t b);

static void add_leaves(graph *g, const char *v, int32_t a, leaf_set *s);

/* Axis a of the output of rank r, in operand x (right-aligned): -1 where x
** has no such axis. */
static void add_operand(graph *g, const char *x, int32_t r, int32_t a, leaf_set *s) {
    const graph_type *tx = gq_type_of(g, x);
    if (!tx || tx->rank < 0) {
        s->ok = false;
        return;
    }
    int32_t ax = a - (r - tx->rank);
    if (ax >= 0) add_leaves(g, x, ax, s);
}

static void add_leaves(graph *g, const char *v, int32_t a, leaf_set *s) {
    if (!s->ok || ++s->visits > GQA_LEAF_VISITS) {
        s->ok = false;
        return;
    }
    const char *r;
    int32_t ra, idx;
    origin(g, v, a, &r, &ra);
    const graph_type *t = gq_type_of(g, r);
    if (!t || t->rank < 0 || ra >= t->rank) {
        s->ok = false;
        return;
    }
    if (gq_num(t, ra) == 1) return;
    /* a dim inference named is a leaf: only an unknown one is taken apart */
    const Onnx__NodeProto *n =
        dim_is_unknown(dim_at(t, ra)) ? graph_producer(g, r, &idx) : NULL;
    op_id op = n && !graph_node_removed(g, idx) && n->n_output >= 1 &&
                       strcmp(n->output[0], r) == 0 && n->n_input <= GQA_LEAF_INPUTS
                   ? op_of(n)
                   : OP_NONE;
    if (op == OP_Concat) {
        int64_t axis = graph_attr_int(n, "axis", 0);
        if (axis != ra && axis + t->rank != ra) {
            for (size_t k = 0; k < n->n_input; k++) add_operand(g, n->input[k], t->rank, ra, s);
            return;
        }
    } else if (op == OP_MatMul && t->rank >= 2 && n->n_input == 2) {
        const graph_type *ta = gq_type_of(g, n->input[0]), *tb = gq_type_of(g, n->input[1]);
        if (ta && tb && ta->rank >= 2 && tb->rank >= 2) {
            if (ra < t->rank - 2) {
                add_operand(g, n->input[0], t->rank, ra, s);
                add_operand(g, n->input[1], t->rank, ra, s);
            } else {
                bool rows = ra == t->rank - 2;
                add_leaves(g, n->input[rows ? 0 : 1], (rows ? ta : tb)->rank - (t->rank - ra), s);
            }
            return;
        }
    } else if (op == OP_Softmax || op == OP_LogSoftmax) {
        add_leaves(g, n->input[0], ra, s);
        return;
    } else if (op != OP_NONE && op_table[op].bcast == BC_MULTI) {
        for (size_t k = 0; k < n->n_input; k++) add_operand(g, n->input[k], t->rank, ra, s);
        return;
    }
    for (int i = 0; i < s->n; i++)
        if (same_origin(g, s->v[i], s->a[i], r, ra)) return;
    if (s->n == GQA_MAX_LEAVES) {
        s->ok = false;
        return;
    }
    s->v[s->n] = r;
    s->a[s->n++] = ra;
}

/* Every leaf of x is provably one of y's. */
static bool leaves_within(graph *g, const leaf_set *x, const leaf_set *y) {
    for (int i = 0; i < x->n; i++) {
        int j = 0;
        while (j < y->n && !same_origin(g, x->v[i], x->a[i], y->v[j], y->a[j])) j++;
        if (j == y->n) return false;
    }
    return true;
}

static bool same_origin(graph *g, const char *v, int32_t a, const char *w, int32_t b) {
    const graph_type *tv = gq_type_of(g, v), *tw = gq_type_of(g, w);
    if (tv && tw && a < tv->rank && b < tw->rank && gq_same(tv, a, tw, b)) return true;
    const char *rv, *rw;
    int32_t av, aw;
    origin(g, v, a, &rv, &av);
    origin(g, w, b, &rw, &aw);
    if (strcmp(rv, rw) == 0 && av == aw) return true;
    tv = gq_type_of(g, rv);
    tw = gq_type_of(g, rw);
    return tv && tw && av < tv->rank && aw < tw->rank && gq_same(tv, av, tw, aw);
}

/* Axis a of v and axis b of w provably have one size. */
bool gq_same_dim(graph *g, const char *v, int32_t a, const char *w, int32_t b) {
    if (same_origin(g, v, a, w, b)) return true;
    leaf_set x = {.ok = true}, y = {.ok = true};
    add_leaves(g, v, a, &x);
    add_leaves(g, w, b, &y);
    return x.ok && y.ok && leaves_within(g, &x, &y) && leaves_within(g, &y, &x);
}

/* ------------------------------------------------------------- repeats */

/* Does broadcasting node b (Expand or Tile) turn x into y by repeating axis p
** alone, n times, from a size-1 axis when it is an Expand? */
static bool repeats_one_axis(graph *g, int32_t b, const char *x, const char *y, int32_t p,
                             int64_t *n) {
    const graph_type *tx = gq_type_of(g, x), *ty = gq_type_of(g, y);
    int32_t r = tx ? tx->rank : -1;
    if (!gq_ranked(ty, r) || p < 0 || p >= r) return false;
    for (int32_t i = 0; i < r; i++)
        if (i != p && !gq_same_dim(g, x, i, y, i)) return false;
    const Onnx__NodeProto *bn = graph_node(g, b);
    if (graph_node_is(bn, "Tile")) {
        int64_t reps[GQA_RANK + 1];
        if (r > GQA_RANK + 1 || !tile_repeats(g, b, reps, r)) return false;
        for (int32_t i = 0; i < r; i++)
            if (i != p && reps[i] != 1) return false;
        *n = reps[p];
        return *n > 1 && gq_num(tx, p) >= 1 && gq_num(ty, p) == gq_num(tx, p) * *n;
    }
    if (gq_num(tx, p) != 1) return false;
    *n = gq_num(ty, p);
    return *n > 1;
}

/* The producer of name in g when it is op (and live), else -1. */
static int32_t producer_is(graph *g, const char *name, const char *op) {
    int32_t idx;
    const Onnx__NodeProto *p = name ? graph_producer(g, name, &idx) : NULL;
    return p && graph_node_is(p, op) && !graph_node_removed(g, idx) ? idx : -1;
}

/* An Expand that changes nothing (its output shape is its input's): exporters
** write Expand(x, ones) before a Tile. */
static const char *through_noop_expand(graph *g, const char *name, gq_repeat *r) {
    int32_t e = producer_is(g, name, "Expand");
    if (e < 0) return name;
    const char *x = graph_node_input(graph_node(g, e), 0);
    const graph_type *tx = gq_type_of(g, x), *ty = gq_type_of(g, name);
    if (!tx || !ty || tx->rank != ty->rank || tx->rank < 0) return name;
    for (int32_t i = 0; i < tx->rank; i++)
        if (!gq_same_dim(g, x, i, name, i)) return name;
    if (r->n_nodes < 4) r->nodes[r->n_nodes++] = e;
    return x;
}

const char gq_not_repeat[] = "no K/V head repeat reaches it";

/* Is value name a repeat of a tensor along its head axis? NULL when it is
** (r filled), gq_not_repeat when nothing there repeats, else why the repeat
** there is not one of heads. */
static const char *find_repeat(graph *g, const char *name, gq_repeat *r) {
    memset(r, 0, sizeof *r);
    const graph_type *to = gq_type_of(g, name);
    if (!to || to->rank < 1 || to->rank > GQA_RANK) return gq_not_repeat;
    int32_t R = to->rank, t, e, u;
    int64_t n;
    if ((t = producer_is(g, name, "Tile")) >= 0 || (t = producer_is(g, name, "Expand")) >= 0) {
        /* Tile (n-major) or an Expand of a single head (kv = 1) */
        gq_repeat found = {.out = name};
        found.nodes[found.n_nodes++] = t;
        const char *x = through_noop_expand(g, graph_node_input(graph_node(g, t), 0), &found);
        const graph_type *tx = gq_type_of(g, x);
        if (!gq_ranked(tx, R)) return "the repeat changes the rank";
        for (int32_t a = 0; a < R; a++) {
            if (gq_same_dim(g, x, a, name, a)) continue;
            if (!repeats_one_axis(g, t, x, name, a, &n))
                return graph_node_is(graph_node(g, t), "Tile")
                           ? "the Tile repeats more than one axis, or by unknown repeats"
                           : "the Expand broadcasts more than one axis, or an axis not of size 1";
            found.src = x;
            found.axis = a;
            found.kv = gq_num(tx, a);
            found.n = n;
            found.kv_major = found.kv == 1;
            *r = found;
            return NULL;
        }
        return "the Tile or Expand repeats nothing";
    }
    int32_t rs = producer_is(g, name, "Reshape");
    if (rs < 0) return gq_not_repeat;
    const char *ev = graph_node_input(graph_node(g, rs), 0);
    if ((e = producer_is(g, ev, "Expand")) < 0 && (e = producer_is(g, ev, "Tile")) < 0)
        return gq_not_repeat;
    const char *uv = graph_node_input(graph_node(g, e), 0);
    if ((u = producer_is(g, uv, "Unsqueeze")) < 0) return gq_not_repeat;
    const char *x = graph_node_input(graph_node(g, u), 0);
    const graph_type *tx = gq_type_of(g, x), *tu = gq_type_of(g, uv), *te = gq_type_of(g, ev);
    int32_t p = unsqueezed_axis(g, u, R + 1);
    if (!gq_ranked(tx, R) || !gq_ranked(tu, R + 1) || !te || p < 0 || gq_num(tu, p) != 1)
        return "the Unsqueeze inserts more than one axis, or shapes are unknown";
    if (!repeats_one_axis(g, e, uv, ev, p, &n))
        return "the Expand (or Tile) repeats another axis than the one Unsqueeze inserted";
    /* the Reshape merges the new axis with its neighbour: after the head axis
    ** (p - 1) the repeats of a head sit together, before it (p) they go round */
    for (int kv_major = 1; kv_major >= 0; kv_major--) {
        int32_t a = kv_major ? p - 1 : p;
        if (a < 0 || a >= R || gq_num(tx, a) < 1 || gq_num(to, a) != gq_num(tx, a) * n) continue;
        bool ok = true;
        for (int32_t i = 0; i < R && ok; i++) ok = i == a || gq_same_dim(g, x, i, name, i);
        if (!ok) continue;
        *r = (gq_repeat){x, name, a, gq_num(tx, a), n, kv_major || gq_num(tx, a) == 1, {rs, e, u}, 3};
        return NULL;
    }
    return "the Reshape does not merge the inserted axis with a neighbouring axis of known size";
}

/* -------------------------------------------------------------- operands */

const char *gq_operand_of(graph *g, const char *name, gq_operand *o) {
    gq_repeat *r = &o->r;
    int64_t(*perms)[GQA_RANK] = o->perm;
    int32_t *nodes = o->layout;
    int *n_perm = &o->n_layout;
    int32_t map[GQA_RANK] = {0, 1, 2, 3}; /* operand axis i is value axis map[i] */
    *n_perm = 0;
    const char *at = name;
    for (;;) {
        const char *why = find_repeat(g, at, r);
        if (!why) break;
        if (why != gq_not_repeat) return why;
        int32_t t = producer_is(g, at, "Transpose");
        if (t < 0 || *n_perm == GQA_MAX_TRANSPOSES) return gq_not_repeat;
        const Onnx__AttributeProto *pa = graph_attr(graph_node(g, t), "perm");
        if (!pa || pa->n_ints != GQA_RANK) return "a Transpose without a 4-D perm";
        int32_t m2[GQA_RANK];
        for (int i = 0; i < GQA_RANK; i++) {
            if (pa->ints[i] < 0 || pa->ints[i] >= GQA_RANK) return "a malformed perm";
            m2[i] = map[pa->ints[i]];
        }
        memcpy(map, m2, sizeof map);
        nodes[*n_perm] = t;
        for (int i = 0; i < GQA_RANK; i++) perms[*n_perm][i] = pa->ints[i];
        (*n_perm)++;
        at = graph_node_input(graph_node(g, t), 0);
    }
    if (gq_type_of(g, r->src)->rank != GQA_RANK) return "the repeated tensor is not 4-D";
    /* perms were found last first: put them in the order they apply */
    for (int i = 0; i < *n_perm / 2; i++) {
        int j = *n_perm - 1 - i;
        int64_t tmp[GQA_RANK];
        memcpy(tmp, perms[i], sizeof tmp);
        memcpy(perms[i], perms[j], sizeof tmp);
        memcpy(perms[j], tmp, sizeof tmp);
        int32_t tn = nodes[i];
        nodes[i] = nodes[j];
        nodes[j] = tn;
    }
    if (map[1] != r->axis) return "the repeated axis is not the MatMul's head axis";
    return NULL;
}

bool gq_read_only_by(graph *g, const char *name, int32_t only) {
    if (graph_value_is_output(g, name)) return false;
    graph_value *v = graph_find(g, name);
    if (!v) return false;
    for (uint32_t i = 0; i < v->n_uses; i++) {
        int32_t c = v->uses[i].node;
        if (!graph_node_removed(g, c) && c != only) return false;
    }
    return true;
}

int32_t gq_source_axis(const gq_operand *o, int32_t i) {
    int32_t at[GQA_RANK] = {0, 1, 2, 3}; /* axis j of the result is axis at[j] of src */
    for (int p = 0; p < o->n_layout; p++) {
        int32_t next[GQA_RANK];
        for (int j = 0; j < GQA_RANK; j++) next[j] = at[o->perm[p][j]];
        memcpy(at, next, sizeof at);
    }
    return at[i];
}

bool gq_operand_private(graph *g, const gq_operand *o, int32_t m) {
    for (int i = 0; i < o->n_layout; i++)
        if (!gq_read_only_by(g, graph_node(g, o->layout[i])->output[0],
                             i + 1 < o->n_layout ? o->layout[i + 1] : m))
            return false;
    return gq_read_only_by(g, o->r.out, o->n_layout ? o->layout[0] : m);
}

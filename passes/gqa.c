/*
** gqa: grouped-query attention without materializing the repeated K and V heads.
**
** A model with H query heads and kv < H key/value heads shares each K and V head
** among n = H / kv query heads; exporters write that as a repeat of K and V along
** the head axis before the two attention MatMuls:
**   kv-major  head h reads kv head h div n: Unsqueeze -> Expand (or Tile) ->
**             Reshape merging the new axis after the head axis (Hugging Face's
**             repeat_kv, repeat_interleave);
**   n-major   head h reads kv head h mod kv: Tile on the head axis (.repeat),
**             or the new axis merged before the head axis;
**   kv = 1    (multi-query) an Expand or Tile of the single head: both orders.
** At decoding the repeated K and V are the whole KV cache copied n times, most of
** the attention's cost. The rewrite folds each group of n query heads into the
** rows of one MatMul against its own K and V head, the "folded rows" form:
**   Q [B,H,Sq,D] -> Q' [B,kv,n*Sq,D]   (a Reshape; kv-major needs no Transpose,
**                                        n-major one, both exact)
**   S = Q' K^T       [B,kv,n*Sq,S]     (K as it was before the repeat)
**   ops between the MatMuls on S       (scale, mask, Softmax, ...; viewed as
**                                        [B,kv,n,Sq,S] when an operand varies
**                                        along Sq)
**   O = P V          [B,kv,n*Sq,D]  -> Reshape (and Transpose) back to [B,H,Sq,D]
** so every reader of the attention's output sees the same tensor. Only standard
** ONNX: every runtime gains. A 5-D MatMul broadcasting K over the group axis is
** as fast on CPU, but GPU MatMuls materialize broadcast batch axes, so this one
** keeps plain 4-D MatMuls.
**
** Every fact is proven from the shapes shape inference gives (named dims by
** name); a region that does not fit is left with its reason.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/const.h"
#include "graph/ops.h"
#include "passes/passes.h"
#include "shape/dim.h"
#include "shape/infer.h"

/* The attention tensors are [B, heads, rows, cols]. */
#define GQA_RANK 4
/* Layout ops followed from a repeat to the MatMul that reads it. */
#define GQA_MAX_TRANSPOSES 4
/* Ops between the two MatMuls. */
#define GQA_MAX_CHAIN 16

/* ---------------------------------------------------------------- dims */

static const graph_type *type_of(graph *g, const char *name) {
    graph_value *v = name && *name ? graph_resolve(g, name) : NULL;
    return v ? &graph_value_home(g, v, NULL)->type : NULL;
}

/* Dim i of t: a number >= 0, or -1 (named or unknown). */
static int64_t num(const graph_type *t, int32_t i) { return dim_stored_n(dim_at(t, i)); }

/* Provably the same dim: the same number, or the same named dim. */
static bool same(const graph_type *a, int32_t i, const graph_type *b, int32_t j) {
    return dim_eq(dim_at(a, i), dim_at(b, j));
}

static bool ranked(const graph_type *t, int32_t rank) { return t && t->rank == rank; }

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
        const graph_type *tx = type_of(g, n->input[0]);
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
            const graph_type *tp = type_of(g, n->input[k]);
            if (!tp || tp->rank != 1 || num(tp, 0) < 0) return false;
            if (at < num(tp, 0)) return entry_of(g, n->input[k], at, value, of, axis, depth + 1);
            at -= num(tp, 0);
        }
        return false;
    }
    case OP_Unsqueeze:
    case OP_Squeeze:
    case OP_Cast:
    case OP_Identity:
    case OP_Reshape: {
        /* the same entries in another rank-0 or rank-1 form */
        const graph_type *tx = type_of(g, n->input[0]), *tt = type_of(g, t);
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
        const graph_type *tb = type_of(g, n->input[1]);
        if (!entry_of(g, n->input[0], i, &a, &oa, &xa, depth + 1) || oa || !tb ||
            !entry_of(g, n->input[1], tb->rank == 0 || num(tb, 0) == 1 ? 0 : i, &b, &ob, &xb,
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
        int64_t st[2], en[2], ax[2] = {0};
        size_t a = 0, b = 0, c = 1;
        bool f1 = false, f2 = false, f3 = true;
        if (n->n_input < 3 || graph_const_ints(g, n->input[1], st, 2, &a, &f1, &e) ||
            graph_const_ints(g, n->input[2], en, 2, &b, &f2, &e) || !f1 || !f2 || a != 1 ||
            b != 1)
            return false;
        if (graph_node_input(n, 3) &&
            (graph_const_ints(g, n->input[3], ax, 2, &c, &f3, &e) || !f3 || c != 1 || ax[0]))
            return false;
        if (graph_node_input(n, 4)) return false;
        if (st[0] < 0 || en[0] <= st[0] + i) return false;
        return entry_of(g, n->input[0], st[0] + i, value, of, axis, depth + 1);
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
        const graph_type *to = type_of(g, v), *tx = type_of(g, graph_node_input(n, 0));
        if (!to || to->rank < 0 || !tx || tx->rank < 0) return;
        op_id op = op_of(n);
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
                    a < tx->rank)
                    next = a;
            }
        } else if (op == OP_Tile) {
            int64_t reps[GQA_RANK + 1];
            if (to->rank <= GQA_RANK + 1 && tile_repeats(g, idx, reps, to->rank) && reps[a] == 1)
                next = a;
        } else if (op != OP_NONE && op_table[op].kind == OPK_UNARY && to->rank == tx->rank) {
            next = a;
        }
        if (next < 0 || next >= tx->rank) return;
        v = graph_node_input(n, 0);
        a = next;
        *root = v;
        *raxis = a;
    }
}

/* Axis a of v and axis b of w provably have one size. */
static bool same_dim(graph *g, const char *v, int32_t a, const char *w, int32_t b) {
    const graph_type *tv = type_of(g, v), *tw = type_of(g, w);
    if (tv && tw && a < tv->rank && b < tw->rank && same(tv, a, tw, b)) return true;
    const char *rv, *rw;
    int32_t av, aw;
    origin(g, v, a, &rv, &av);
    origin(g, w, b, &rw, &aw);
    if (strcmp(rv, rw) == 0 && av == aw) return true;
    tv = type_of(g, rv);
    tw = type_of(g, rw);
    return tv && tw && av < tv->rank && aw < tw->rank && same(tv, av, tw, aw);
}

/* ------------------------------------------------------------- repeats */

/* A tensor repeated along its head axis. */
typedef struct repeat {
    const char *src;         /* the tensor before the repeat */
    const char *out;         /* the repeated one */
    int32_t axis;            /* head axis of both */
    int64_t kv, n;           /* heads of src; copies of each */
    bool kv_major;           /* out head h is src head h div n (else h mod kv) */
    int32_t nodes[4];        /* the nodes that make it */
    int n_nodes;
} repeat;

/* Does broadcasting node b (Expand or Tile) turn x into y by repeating axis p
** alone, n times, from a size-1 axis when it is an Expand? */
static bool repeats_one_axis(graph *g, int32_t b, const char *x, const char *y, int32_t p,
                             int64_t *n) {
    const graph_type *tx = type_of(g, x), *ty = type_of(g, y);
    int32_t r = tx ? tx->rank : -1;
    if (!ranked(ty, r) || p < 0 || p >= r) return false;
    for (int32_t i = 0; i < r; i++)
        if (i != p && !same_dim(g, x, i, y, i)) return false;
    const Onnx__NodeProto *bn = graph_node(g, b);
    if (graph_node_is(bn, "Tile")) {
        int64_t reps[GQA_RANK + 1];
        if (r > GQA_RANK + 1 || !tile_repeats(g, b, reps, r)) return false;
        for (int32_t i = 0; i < r; i++)
            if (i != p && reps[i] != 1) return false;
        *n = reps[p];
        return *n > 1 && num(tx, p) >= 1 && num(ty, p) == num(tx, p) * *n;
    }
    if (num(tx, p) != 1) return false;
    *n = num(ty, p);
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
static const char *through_noop_expand(graph *g, const char *name, repeat *r) {
    int32_t e = producer_is(g, name, "Expand");
    if (e < 0) return name;
    const char *x = graph_node_input(graph_node(g, e), 0);
    const graph_type *tx = type_of(g, x), *ty = type_of(g, name);
    if (!tx || !ty || tx->rank != ty->rank || tx->rank < 0) return name;
    for (int32_t i = 0; i < tx->rank; i++)
        if (!same_dim(g, x, i, name, i)) return name;
    if (r->n_nodes < 4) r->nodes[r->n_nodes++] = e;
    return x;
}

/* What find_repeat says of a value that nothing repeats: no reason to give. */
static const char not_repeat[] = "no K/V head repeat reaches it";

/* Is value name a repeat of a tensor along its head axis? NULL when it is
** (r filled), not_repeat when nothing there repeats, else why the repeat
** there is not one of heads. */
static const char *find_repeat(graph *g, const char *name, repeat *r) {
    memset(r, 0, sizeof *r);
    const graph_type *to = type_of(g, name);
    if (!to || to->rank < 1 || to->rank > GQA_RANK) return not_repeat;
    int32_t R = to->rank, t, e, u;
    int64_t n;
    if ((t = producer_is(g, name, "Tile")) >= 0 || (t = producer_is(g, name, "Expand")) >= 0) {
        /* Tile (n-major) or an Expand of a single head (kv = 1) */
        repeat found = {.out = name};
        found.nodes[found.n_nodes++] = t;
        const char *x = through_noop_expand(g, graph_node_input(graph_node(g, t), 0), &found);
        const graph_type *tx = type_of(g, x);
        if (!ranked(tx, R)) return "the repeat changes the rank";
        for (int32_t a = 0; a < R; a++) {
            if (same_dim(g, x, a, name, a)) continue;
            if (!repeats_one_axis(g, t, x, name, a, &n))
                return graph_node_is(graph_node(g, t), "Tile")
                           ? "the Tile repeats more than one axis, or by unknown repeats"
                           : "the Expand broadcasts more than one axis, or an axis not of size 1";
            found.src = x;
            found.axis = a;
            found.kv = num(tx, a);
            found.n = n;
            found.kv_major = found.kv == 1;
            *r = found;
            return NULL;
        }
        return "the Tile or Expand repeats nothing";
    }
    int32_t rs = producer_is(g, name, "Reshape");
    if (rs < 0) return not_repeat;
    const char *ev = graph_node_input(graph_node(g, rs), 0);
    if ((e = producer_is(g, ev, "Expand")) < 0 && (e = producer_is(g, ev, "Tile")) < 0)
        return not_repeat;
    const char *uv = graph_node_input(graph_node(g, e), 0);
    if ((u = producer_is(g, uv, "Unsqueeze")) < 0) return not_repeat;
    const char *x = graph_node_input(graph_node(g, u), 0);
    const graph_type *tx = type_of(g, x), *tu = type_of(g, uv), *te = type_of(g, ev);
    int32_t p = unsqueezed_axis(g, u, R + 1);
    if (!ranked(tx, R) || !ranked(tu, R + 1) || !te || p < 0 || num(tu, p) != 1)
        return "the Unsqueeze inserts more than one axis, or shapes are unknown";
    if (!repeats_one_axis(g, e, uv, ev, p, &n))
        return "the Expand (or Tile) repeats another axis than the one Unsqueeze inserted";
    /* the Reshape merges the new axis with its neighbour: after the head axis
    ** (p - 1) the repeats of a head sit together, before it (p) they go round */
    for (int kv_major = 1; kv_major >= 0; kv_major--) {
        int32_t a = kv_major ? p - 1 : p;
        if (a < 0 || a >= R || num(tx, a) < 1 || num(to, a) != num(tx, a) * n) continue;
        bool ok = true;
        for (int32_t i = 0; i < R && ok; i++) ok = i == a || same_dim(g, x, i, name, i);
        if (!ok) continue;
        *r = (repeat){x, name, a, num(tx, a), n, kv_major || num(tx, a) == 1, {rs, e, u}, 3};
        return NULL;
    }
    return "the Reshape does not merge the inserted axis with a neighbouring axis of known size";
}

/* ------------------------------------------------------------- regions */

/* One attention: S = MatMul(Q, K'), the ops on S, O = MatMul(P, V'), where K'
** and V' are repeats of K and V seen through Transposes. */
typedef struct region {
    int32_t mm1, mm2;
    int32_t chain[GQA_MAX_CHAIN];
    int n_chain;
    repeat k, v;
    int64_t kperm[GQA_MAX_TRANSPOSES][GQA_RANK], vperm[GQA_MAX_TRANSPOSES][GQA_RANK];
    int n_kperm, n_vperm;
    int32_t kt[GQA_MAX_TRANSPOSES], vt[GQA_MAX_TRANSPOSES]; /* the Transpose nodes */
    int64_t kv, n, heads, head_size;
    bool kv_major;
    /* The ops from first5 to last5 of the chain (-1: none) have an operand that
    ** varies along Sq: they run on a [B,kv,n,Sq,S] view of the scores. The ops
    ** before and after stay 4-D, so that ONNX Runtime still fuses a scale into
    ** the MatMul before it. */
    int first5, last5;
} region;

/* Follow a MatMul operand back through Transposes to a repeat. The repeat's
** head axis must come out at axis 1 of the operand, its batch axis at 0. */
static const char *operand_repeat(graph *g, const char *name, repeat *r,
                                  int64_t perms[][GQA_RANK], int32_t *nodes, int *n_perm) {
    int32_t map[GQA_RANK] = {0, 1, 2, 3}; /* operand axis i is value axis map[i] */
    *n_perm = 0;
    const char *at = name;
    for (;;) {
        const char *why = find_repeat(g, at, r);
        if (!why) break;
        if (why != not_repeat) return why;
        int32_t t = producer_is(g, at, "Transpose");
        if (t < 0 || *n_perm == GQA_MAX_TRANSPOSES) return not_repeat;
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
    if (type_of(g, r->src)->rank != GQA_RANK) return "the repeated tensor is not 4-D";
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

/* Every live reader of value name is node `only` (and name is no graph output). */
static bool read_only_by(graph *g, const char *name, int32_t only) {
    if (graph_value_is_output(g, name)) return false;
    graph_value *v = graph_find(g, name);
    if (!v) return false;
    for (uint32_t i = 0; i < v->n_uses; i++) {
        int32_t c = v->uses[i].node;
        if (!graph_node_removed(g, c) && c != only) return false;
    }
    return true;
}

/* The one live node reading name, or -1. */
static int32_t sole_reader(graph *g, const char *name) {
    if (graph_value_is_output(g, name)) return -1;
    graph_value *v = graph_find(g, name);
    int32_t found = -1;
    for (uint32_t i = 0; v && i < v->n_uses; i++) {
        int32_t c = v->uses[i].node;
        if (graph_node_removed(g, c) || c == found) continue;
        if (found >= 0 || v->uses[i].input < 0) return -1;
        found = c;
    }
    return found;
}

/* How an operand of an op between the MatMuls, read against [B,H,Sq,S], fits
** the folded form: 0 as it is, 1 in the 5-D view only, -1 not at all. */
static int operand_fit(const graph_type *c) {
    if (!c || c->rank < 0 || c->rank > GQA_RANK) return -1;
    int32_t off = GQA_RANK - c->rank;
    /* axis 1 (heads) must be 1: an operand that differs per head is not grouped */
    if (off <= 1 && num(c, 1 - off) != 1) return -1;
    /* axis 2 (query rows) of size 1 broadcasts over n*Sq rows as well */
    if (off <= 2 && num(c, 2 - off) != 1) return 1;
    return 0;
}

/* Is node i one of the ops that may sit between the MatMuls, reading the
** chain's value at input slot `in`? *why otherwise. *five tells whether an
** operand needs the 5-D view. */
static bool chain_op(graph *g, int32_t i, const char *in, bool *five, const char **why) {
    const Onnx__NodeProto *n = graph_node(g, i);
    op_id op = op_of(n);
    if (op == OP_NONE) {
        *why = "an op outside the default domain between the MatMuls";
        return false;
    }
    const op_info *info = &op_table[op];
    if (op == OP_Softmax || op == OP_LogSoftmax) {
        int64_t axis = graph_attr_int(n, "axis", -1);
        if (axis != -1 && axis != GQA_RANK - 1) {
            *why = "a Softmax over another axis than the last";
            return false;
        }
        return true;
    }
    if (op == OP_Dropout) {
        const char *tm = graph_node_input(n, 2);
        int64_t train[1];
        size_t cnt = 0;
        bool found = false;
        errbuf e;
        if (tm && (graph_const_ints(g, tm, train, 1, &cnt, &found, &e) || !found || train[0])) {
            *why = "a Dropout that may train";
            return false;
        }
        if (n->n_output > 1 && n->output[1][0] && graph_find(g, n->output[1]) &&
            graph_find(g, n->output[1])->n_uses) {
            *why = "a Dropout whose mask is read";
            return false;
        }
        return strcmp(n->input[0], in) == 0 || (*why = "Dropout's ratio is the chain", false);
    }
    if (info->kind == OPK_OTHER) {
        *why = "an op between the MatMuls that is not elementwise";
        return false;
    }
    if (info->bcast == BC_UNI && strcmp(n->input[0], in) != 0) {
        *why = "a one-way broadcast into the scores";
        return false;
    }
    for (size_t k = 0; k < n->n_input; k++) {
        const char *x = graph_node_input(n, k);
        if (!x || strcmp(x, in) == 0) continue;
        int fit = operand_fit(type_of(g, x));
        if (fit < 0) {
            *why = "an operand between the MatMuls that differs per head (or has no known shape)";
            return false;
        }
        if (fit) *five = true;
    }
    return true;
}

/* The region whose scores MatMul is mm1, reading the repeated K. *why when it
** does not fit; *second names the MatMul that reads the probabilities once the
** walk found it (-1 before), so that it is not taken for a region of its own. */
static bool find_region(graph *g, int32_t mm1, region *rg, const char **why, int32_t *second) {
    memset(rg, 0, sizeof *rg);
    rg->mm1 = mm1;
    rg->first5 = rg->last5 = -1;
    *second = -1;
    const Onnx__NodeProto *m1 = graph_node(g, mm1);
    const char *q = graph_node_input(m1, 0), *kop = graph_node_input(m1, 1);
    if ((*why = operand_repeat(g, kop, &rg->k, rg->kperm, rg->kt, &rg->n_kperm))) return false;
    /* the ops from the scores to the probabilities, each read by the next only */
    const char *at = m1->output[0];
    for (;;) {
        int32_t next = sole_reader(g, at);
        if (next < 0) {
            *why = "the scores (or a value made of them) are read elsewhere too";
            return false;
        }
        const Onnx__NodeProto *nn = graph_node(g, next);
        if (graph_node_is(nn, "MatMul")) {
            if (strcmp(graph_node_input(nn, 0), at) != 0) {
                *why = "the scores are the second operand of the next MatMul";
                return false;
            }
            rg->mm2 = *second = next;
            break;
        }
        if (rg->n_chain == GQA_MAX_CHAIN) {
            *why = "too many ops between the MatMuls";
            return false;
        }
        bool five = false;
        if (!chain_op(g, next, at, &five, why)) return false;
        if (five && rg->first5 < 0) rg->first5 = rg->n_chain;
        if (five) rg->last5 = rg->n_chain;
        rg->chain[rg->n_chain++] = next;
        at = nn->output[0];
    }
    const graph_type *tq = type_of(g, q), *tk = type_of(g, kop), *ts = type_of(g, m1->output[0]);
    if (!ranked(tq, GQA_RANK) || !ranked(tk, GQA_RANK) || !ranked(ts, GQA_RANK)) {
        *why = "the attention's shapes are not 4-D and known";
        return false;
    }
    rg->kv = rg->k.kv;
    rg->n = rg->k.n;
    rg->heads = rg->kv * rg->n;
    rg->kv_major = rg->k.kv_major;
    rg->head_size = num(tq, 3);
    if (num(tq, 1) != rg->heads || !same(tq, 0, tk, 0)) {
        *why = "the query's heads or batch do not match the repeated K's";
        return false;
    }
    if (rg->head_size < 1) {
        *why = "the head size is not a number";
        return false;
    }
    if (graph_opset(g->model, "") < 14) {
        *why = "opset below 14: a Reshape without allowzero cannot keep an empty axis empty";
        return false;
    }
    const Onnx__NodeProto *m2 = graph_node(g, rg->mm2);
    const char *vop = graph_node_input(m2, 1);
    const char *vwhy = operand_repeat(g, vop, &rg->v, rg->vperm, rg->vt, &rg->n_vperm);
    if (vwhy) {
        *why = "K's heads are repeated but V's are not seen to be";
        return false;
    }
    if (rg->v.kv != rg->kv || rg->v.n != rg->n ||
        (rg->kv > 1 && rg->v.kv_major != rg->kv_major)) {
        *why = "K and V are repeated differently";
        return false;
    }
    const graph_type *tv = type_of(g, vop), *tp = type_of(g, at);
    if (!ranked(tv, GQA_RANK) || !ranked(tp, GQA_RANK) || !same(tp, 0, tv, 0) ||
        num(tp, 1) != rg->heads) {
        *why = "the probabilities' heads or batch do not match the repeated V's";
        return false;
    }
    /* the repeats and their layout ops must have no other reader, or they
    ** would stay materialized anyway */
    for (int i = 0; i < rg->n_kperm; i++)
        if (!read_only_by(g, graph_node(g, rg->kt[i])->output[0],
                          i + 1 < rg->n_kperm ? rg->kt[i + 1] : mm1)) {
            *why = "the repeated K is read elsewhere too";
            return false;
        }
    if (!read_only_by(g, rg->k.out, rg->n_kperm ? rg->kt[0] : mm1)) {
        *why = "the repeated K is read elsewhere too";
        return false;
    }
    for (int i = 0; i < rg->n_vperm; i++)
        if (!read_only_by(g, graph_node(g, rg->vt[i])->output[0],
                          i + 1 < rg->n_vperm ? rg->vt[i + 1] : rg->mm2)) {
            *why = "the repeated V is read elsewhere too";
            return false;
        }
    if (!read_only_by(g, rg->v.out, rg->n_vperm ? rg->vt[0] : rg->mm2)) {
        *why = "the repeated V is read elsewhere too";
        return false;
    }
    return true;
}

/* ------------------------------------------------------------- rewrite */

typedef struct emit {
    pass_ctx *pc;
    graph *g;
    int32_t at;              /* the node new names are made from */
    int64_t opset;
    int rc;                  /* the first failure; every step after it does nothing */
} emit;

static const char *fresh(emit *e, const char *what) {
    if (e->rc) return NULL;
    const Onnx__NodeProto *n = graph_node(e->g, e->at);
    char buf[256];
    snprintf(buf, sizeof buf, "%s_gqa_%s", n->name && n->name[0] ? n->name : n->op_type, what);
    const char *name = graph_unique_name(e->g, buf);
    if (!name) e->rc = err_set(e->pc->err, TILEOPT_NOMEM, "out of memory");
    return name;
}

/* A 1-D int64 constant. */
static const char *ints(emit *e, const char *what, const int64_t *v, size_t n) {
    if (e->rc) return NULL;
    const char *name;
    int64_t dim = (int64_t)n;
    if ((e->rc = graph_add_initializer(e->g, what, DT_INT64, &dim, 1, v, n * sizeof *v, &name,
                                       e->pc->err)))
        return NULL;
    return name;
}

/* A node of one output: out, or a fresh name when out is NULL. */
static const char *node(emit *e, const char *op, const char *what, const char *const *ins,
                        size_t n_in, const char *out, Onnx__NodeProto **made) {
    const char *o = out ? out : fresh(e, what);
    const char *nm = fresh(e, what);
    if (e->rc) return NULL;
    int32_t idx;
    Onnx__NodeProto *n = graph_add_node(e->g, op, nm, ins, n_in, &o, 1, &idx);
    if (!n) {
        e->rc = err_set(e->pc->err, TILEOPT_NOMEM, "gqa: cannot add a %s node", op);
        return NULL;
    }
    if (made) *made = n;
    return o;
}

/* Reshape x to the shape in value target. allowzero: every entry is the size
** itself, so an empty axis stays one (a 0 would copy the input's dim). */
static const char *reshape(emit *e, const char *x, const char *target, const char *out) {
    Onnx__NodeProto *r = NULL;
    const char *o = node(e, "Reshape", "reshape", (const char *[]){x, target}, 2, out, &r);
    if (r && graph_node_set_attr_int(e->g, r, "allowzero", 1))
        e->rc = err_set(e->pc->err, TILEOPT_NOMEM, "out of memory");
    return o;
}

static const char *transpose(emit *e, const char *x, const int64_t *perm, size_t n) {
    Onnx__NodeProto *t = NULL;
    const char *o = node(e, "Transpose", "transpose", &x, 1, NULL, &t);
    if (t && graph_node_set_attr_ints(e->g, t, "perm", perm, n))
        e->rc = err_set(e->pc->err, TILEOPT_NOMEM, "out of memory");
    return o;
}

/* Dims [start, end) of x's shape as a 1-D tensor (Shape's start and end from
** opset 15, a Slice of the whole shape before). */
static const char *shape_part(emit *e, const char *x, int64_t start, int64_t end) {
    Onnx__NodeProto *s = NULL;
    const char *sh = node(e, "Shape", "shape", &x, 1, NULL, &s);
    if (!s) return NULL;
    if (e->opset >= 15) {
        if (graph_node_set_attr_int(e->g, s, "start", start) ||
            graph_node_set_attr_int(e->g, s, "end", end))
            e->rc = err_set(e->pc->err, TILEOPT_NOMEM, "out of memory");
        return sh;
    }
    const char *ins[3] = {sh, ints(e, "gqa_start", &start, 1), ints(e, "gqa_end", &end, 1)};
    return node(e, "Slice", "slice", ins, 3, NULL, NULL);
}

/* Unsqueeze x at axis 1 (the axes an attribute before opset 13). */
static const char *unsqueeze1(emit *e, const char *x) {
    int64_t one = 1;
    if (e->opset >= 13) {
        const char *ins[2] = {x, ints(e, "gqa_axes", &one, 1)};
        return node(e, "Unsqueeze", "unsqueeze", ins, 2, NULL, NULL);
    }
    Onnx__NodeProto *u = NULL;
    const char *o = node(e, "Unsqueeze", "unsqueeze", &x, 1, NULL, &u);
    if (u && graph_node_set_attr_ints(e->g, u, "axes", &one, 1))
        e->rc = err_set(e->pc->err, TILEOPT_NOMEM, "out of memory");
    return o;
}

/* x with the layout ops the MatMul operand had, applied before the repeat. */
static const char *relayout(emit *e, const char *x, int64_t perms[][GQA_RANK], int n) {
    for (int i = 0; i < n; i++) x = transpose(e, x, perms[i], GQA_RANK);
    return x;
}

/* A copy of chain node i reading `in` where it read `was`, in the folded form. */
static const char *chain_copy(emit *e, bool five, int32_t i, const char *was,
                              const char *in) {
    graph *g = e->g;
    const Onnx__NodeProto *n = graph_node(g, i);
    const char *ins[8];
    size_t n_in = n->n_input < 8 ? n->n_input : 8;
    for (size_t k = 0; k < n_in; k++) {
        const char *x = graph_node_input(n, k);
        if (!x) ins[k] = "";
        else if (strcmp(x, was) == 0) ins[k] = in;
        else if (five && type_of(g, x)->rank == GQA_RANK) ins[k] = unsqueeze1(e, x);
        else ins[k] = x;
    }
    /* Dropout in inference: its data alone */
    if (op_of(n) == OP_Dropout) n_in = 1;
    Onnx__NodeProto *c = NULL;
    const char *o = node(e, n->op_type, "op", ins, n_in, NULL, &c);
    if (!c) return NULL;
    for (size_t a = 0; a < n->n_attribute && !e->rc; a++) {
        const Onnx__AttributeProto *at = n->attribute[a];
        const char *an = at->name ? at->name : "";
        int rc = 0;
        if ((op_of(n) == OP_Softmax || op_of(n) == OP_LogSoftmax) && strcmp(an, "axis") == 0)
            continue; /* set below: the last axis of whichever rank */
        if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) rc = graph_node_set_attr_int(g, c, an, at->i);
        else if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) rc = graph_node_set_attr_float(g, c, an, at->f);
        else if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS) rc = graph_node_set_attr_ints(g, c, an, at->ints, at->n_ints);
        else if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING) rc = graph_node_set_attr_string(g, c, an, graph_attr_string(n, an, ""));
        else rc = TILEOPT_UNSUPPORTED;
        if (rc) e->rc = err_set(e->pc->err, rc, "gqa: cannot copy attribute %s of %s", an, n->op_type);
    }
    if ((op_of(n) == OP_Softmax || op_of(n) == OP_LogSoftmax) && !e->rc &&
        graph_node_set_attr_int(g, c, "axis", -1))
        e->rc = err_set(e->pc->err, TILEOPT_NOMEM, "out of memory");
    if (n->domain && n->domain[0] && !e->rc) c->domain = n->domain;
    return o;
}

/* Bytes of a tensor type: a number, or a formula in its named dims; "" when
** not known. */
static void bytes_text(graph *g, const graph_type *t, char *buf, size_t cap) {
    const dtype_info *d = dtype_get(t->elem);
    dim dims[GQA_RANK + 1], prod;
    buf[0] = '\0';
    if (!d || t->rank < 0 || t->rank > GQA_RANK) return;
    for (int32_t i = 0; i < t->rank; i++) dims[i] = dim_at(t, i);
    dims[t->rank] = dim_num((int64_t)d->size);
    if (dim_product(g->model->arena, dims, t->rank + 1, &prod) &&
        dims_print(buf, cap, &prod, 1) >= cap)
        buf[0] = '\0';
}

static void record(pass_ctx *pc, graph *g, const region *rg) {
    json_w *a = pass_action(pc, g, rg->mm2, "rewritten");
    json_put_str(a, "rule", "grouped-query attention: query heads grouped on their K/V head");
    json_put_num(a, "heads", (double)rg->heads);
    json_put_num(a, "kv_heads", (double)rg->kv);
    json_put_num(a, "group", (double)rg->n);
    json_put_str(a, "order", rg->kv == 1 ? "one K/V head"
                             : rg->kv_major ? "kv-major (query head h reads K/V head h div n)"
                                            : "n-major (query head h reads K/V head h mod kv)");
    json_put_str(a, "scores", rg->first5 >= 0 ? "[B, kv, n, Sq, S] view: an operand varies along Sq"
                                       : "[B, kv, n*Sq, S]");
    char kb[160], vb[160];
    bytes_text(g, type_of(g, rg->k.out), kb, sizeof kb);
    bytes_text(g, type_of(g, rg->v.out), vb, sizeof vb);
    json_put_str(a, "k_bytes_not_materialized", kb[0] ? kb : "unknown");
    json_put_str(a, "v_bytes_not_materialized", vb[0] ? vb : "unknown");
    json_put_str(a, "scores_matmul", graph_node_id(g, rg->mm1));
    for (int i = -1; i < rg->n_chain; i++) {
        int32_t id = i < 0 ? rg->mm1 : rg->chain[i];
        json_w *b = pass_action(pc, g, id, "rewritten");
        json_put_str(b, "rule", "grouped-query attention: on the grouped heads");
        json_put_str(b, "attention", graph_node_id(g, rg->mm2));
    }
}

/* Remove what read or made the repeated K and V once nothing reads it. */
static void drop_repeat(pass_ctx *pc, graph *g, const repeat *r, const int32_t *layout, int n) {
    int32_t order[GQA_MAX_TRANSPOSES + 4];
    int k = 0;
    for (int i = n - 1; i >= 0; i--) order[k++] = layout[i];
    for (int i = 0; i < r->n_nodes; i++) order[k++] = r->nodes[i];
    for (int i = 0; i < k; i++) {
        int32_t id = order[i];
        if (graph_node_removed(g, id)) continue;
        const Onnx__NodeProto *nd = graph_node(g, id);
        bool read = false;
        for (size_t o = 0; o < nd->n_output && !read; o++) {
            graph_value *v = nd->output[o][0] ? graph_find(g, nd->output[o]) : NULL;
            read = graph_value_is_output(g, nd->output[o]);
            for (uint32_t u = 0; v && !read && u < v->n_uses; u++)
                read = !graph_node_removed(g, v->uses[u].node);
        }
        if (read) break;
        json_w *a = pass_action(pc, g, id, "eliminated");
        json_put_str(a, "rule", "a K/V head repeat nothing reads now");
        graph_remove_node(g, id);
    }
}

/* The sizes the folded shapes are made of: numbers where the shapes say, else
** read at run time from the query (batch, rows) and K before its layout ops
** (columns). Not from the scores, nor from K's Transpose: a second reader of
** either keeps ONNX Runtime from fusing the scale and the Transpose into the
** MatMul, and a Transpose not fused writes out the whole cache at every step. */
enum { D_BATCH = -2, D_ROWS = -3, D_GROUP_ROWS = -4, D_COLS = -5 };

typedef struct sizes {
    emit *e;
    const char *q, *k;
    int32_t k_cols;             /* the axis of k that ends up as the scores' columns */
    int64_t batch, rows, cols;  /* -1: at run time */
    int64_t n;
    const char *got[4];         /* the 1-element tensors, made on first need */
} sizes;

static int64_t size_known(const sizes *z, int64_t spec) {
    switch (spec) {
    case D_BATCH: return z->batch;
    case D_ROWS: return z->rows;
    case D_COLS: return z->cols;
    case D_GROUP_ROWS: return z->rows >= 0 ? z->rows * z->n : -1;
    default: return spec;
    }
}

static const char *size_tensor(sizes *z, int64_t spec) {
    int k = (int)(D_BATCH - spec);
    if (z->got[k]) return z->got[k];
    switch (spec) {
    case D_BATCH: z->got[k] = shape_part(z->e, z->q, 0, 1); break;
    case D_ROWS: z->got[k] = shape_part(z->e, z->q, 2, 3); break;
    case D_COLS: z->got[k] = shape_part(z->e, z->k, z->k_cols, z->k_cols + 1); break;
    default: {
        const char *ins[2] = {size_tensor(z, D_ROWS), ints(z->e, "gqa_group", &z->n, 1)};
        z->got[k] = node(z->e, "Mul", "group_rows", ins, 2, NULL, NULL);
    }
    }
    return z->got[k];
}

/* A shape of n entries, each a number or one of the sizes above. */
static const char *shape_of(sizes *z, const int64_t *spec, int n) {
    int64_t run[8];
    int n_run = 0, n_parts = 0;
    const char *parts[8];
    for (int i = 0; i <= n; i++) {
        int64_t v = i < n ? size_known(z, spec[i]) : -1;
        if (i < n && v >= 0) {
            run[n_run++] = v;
            continue;
        }
        if (n_run) parts[n_parts++] = ints(z->e, "gqa_shape", run, (size_t)n_run);
        n_run = 0;
        if (i < n) parts[n_parts++] = size_tensor(z, spec[i]);
    }
    if (n_parts == 1) return parts[0];
    Onnx__NodeProto *c = NULL;
    const char *o = node(z->e, "Concat", "shape", parts, (size_t)n_parts, NULL, &c);
    if (c && graph_node_set_attr_int(z->e->g, c, "axis", 0))
        z->e->rc = err_set(z->e->pc->err, TILEOPT_NOMEM, "out of memory");
    return o;
}

static int rewrite(pass_ctx *pc, graph *g, region *rg) {
    const Onnx__NodeProto *m1 = graph_node(g, rg->mm1), *m2 = graph_node(g, rg->mm2);
    emit e = {pc, g, rg->mm2, graph_opset(g->model, ""), 0};
    const char *q = graph_node_input(m1, 0), *out = m2->output[0];
    int64_t kv = rg->kv, n = rg->n, H = rg->heads, D = rg->head_size;
    bool kv_major = rg->kv_major || kv == 1;
    const char *kx = relayout(&e, rg->k.src, rg->kperm, rg->n_kperm);
    const graph_type *tq = type_of(g, q), *ts = type_of(g, m1->output[0]);
    /* K's layout ops in the order they apply: axis i of their result is axis
    ** at[i] of K */
    int32_t at[GQA_RANK] = {0, 1, 2, 3};
    for (int p = 0; p < rg->n_kperm; p++) {
        int32_t next[GQA_RANK];
        for (int i = 0; i < GQA_RANK; i++) next[i] = at[rg->kperm[p][i]];
        memcpy(at, next, sizeof at);
    }
    sizes z = {&e, q, rg->k.src, at[3], num(tq, 0), num(tq, 2), num(ts, 3), n, {NULL}};
    /* Q [B,H,Sq,D] -> [B,kv,n*Sq,D], query head h = (g, j) going with K/V head g */
    const char *qg;
    if (kv_major) {
        qg = reshape(&e, q, shape_of(&z, (int64_t[]){D_BATCH, kv, D_GROUP_ROWS, D}, 4), NULL);
    } else {
        const char *q5 =
            reshape(&e, q, shape_of(&z, (int64_t[]){D_BATCH, n, kv, D_ROWS, D}, 5), NULL);
        const char *qt = transpose(&e, q5, (int64_t[]){0, 2, 1, 3, 4}, 5);
        qg = reshape(&e, qt, shape_of(&z, (int64_t[]){D_BATCH, kv, D_GROUP_ROWS, D}, 4), NULL);
    }
    const char *s4 = node(&e, "MatMul", "scores", (const char *[]){qg, kx}, 2, NULL, NULL);
    const char *cur = s4;
    const char *was = m1->output[0];
    for (int i = 0; i < rg->n_chain; i++) {
        if (i == rg->first5)
            cur = reshape(&e, cur, shape_of(&z, (int64_t[]){D_BATCH, kv, n, D_ROWS, D_COLS}, 5),
                          NULL);
        const char *next = chain_copy(&e, i >= rg->first5 && i <= rg->last5 && rg->first5 >= 0,
                                      rg->chain[i], was, cur);
        was = graph_node(g, rg->chain[i])->output[0];
        cur = next;
        if (i == rg->last5)
            cur = reshape(&e, cur,
                          shape_of(&z, (int64_t[]){D_BATCH, kv, D_GROUP_ROWS, D_COLS}, 4), NULL);
    }
    const char *vx = relayout(&e, rg->v.src, rg->vperm, rg->n_vperm);
    const char *o4 = node(&e, "MatMul", "out", (const char *[]){cur, vx}, 2, NULL, NULL);
    const char *back = shape_of(&z, (int64_t[]){D_BATCH, H, D_ROWS, D}, 4);
    const char *o5 = NULL;
    if (!kv_major)
        o5 = reshape(&e, o4, shape_of(&z, (int64_t[]){D_BATCH, kv, n, D_ROWS, D}, 5), NULL);
    if (e.rc) return e.rc;
    record(pc, g, rg);
    /* the MatMul goes first, so its output name is free for the last Reshape:
    ** every name keeps its meaning, graph outputs included */
    graph_remove_node(g, rg->mm2);
    if (kv_major)
        reshape(&e, o4, back, out);
    else
        reshape(&e, transpose(&e, o5, (int64_t[]){0, 2, 1, 3, 4}, 5), back, out);
    if (e.rc) return e.rc;
    graph_remove_node(g, rg->mm1);
    for (int i = 0; i < rg->n_chain; i++) graph_remove_node(g, rg->chain[i]);
    drop_repeat(pc, g, &rg->k, rg->kt, rg->n_kperm);
    drop_repeat(pc, g, &rg->v, rg->vt, rg->n_vperm);
    pc->changed = true;
    return TILEOPT_OK;
}

static int gqa_graph(pass_ctx *pc, graph *g) {
    uint32_t n0 = graph_n_nodes(g);
    /* the probabilities' MatMul of a region found (rewritten or not) */
    bool *second = calloc(n0 ? n0 : 1, sizeof *second);
    if (!second) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    int rc = TILEOPT_OK;
    for (uint32_t i = 0; !rc && i < n0; i++) {
        if (graph_node_removed(g, (int32_t)i) || second[i] ||
            op_of(graph_node(g, (int32_t)i)) != OP_MatMul)
            continue;
        /* only a MatMul whose second operand is a repeat is an attention's */
        repeat r;
        int64_t perms[GQA_MAX_TRANSPOSES][GQA_RANK];
        int32_t tn[GQA_MAX_TRANSPOSES];
        int np;
        const Onnx__NodeProto *mm = graph_node(g, (int32_t)i);
        const char *near = operand_repeat(g, graph_node_input(mm, 1), &r, perms, tn, &np);
        if (near == not_repeat) continue;
        if (near) {
            /* a repeat into a 4-D MatMul that is not one of heads: say so */
            const graph_type *t0 = type_of(g, graph_node_input(mm, 0));
            if (ranked(t0, GQA_RANK))
                pass_skip(pc, g, (int32_t)i, "grouped-query attention left as it is: %s", near);
            continue;
        }
        region rg;
        const char *why = NULL;
        int32_t mm2;
        bool fits = find_region(g, (int32_t)i, &rg, &why, &mm2);
        if (mm2 >= 0 && (uint32_t)mm2 < n0) second[mm2] = true;
        if (fits) rc = rewrite(pc, g, &rg);
        else pass_skip(pc, g, (int32_t)i, "grouped-query attention left as it is: %s", why);
    }
    free(second);
    return rc;
}

int pass_gqa(pass_ctx *pc) {
    /* Types the model declares come from the loader; inference adds the rest. */
    int rc = infer_shapes(pc->model, pc->err);
    if (!rc) rc = pass_for_each_graph(pc, pc->model->main, gqa_graph);
    if (rc) return rc;
    return pc->changed ? graph_commit(pc->model->main, pc->err) : TILEOPT_OK;
}

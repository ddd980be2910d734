/*
** sink_transposes: a Transpose moves down, toward the graph outputs, past the
** ops that do not care about the order of axes, until it meets another
** Transpose (the two become one, or none), until the ops it passed leave every
** axis in place without it, or until a Concat whose inputs are all Transposes
** by one permutation (one Transpose after the Concat instead of one per
** input). Exporters write such layout changes around reshaping code: an
** unfold written as Slice -> Transpose -> Unsqueeze per row and a Concat keeps
** a Transpose per row that fuse_consecutive_transposes never sees, as none of
** them sits next to another; ShuffleNet's channel shuffle (Reshape, Transpose,
** Reshape, then a Gather of each half) keeps a Transpose the Gathers make
** needless.
**
** The ops it moves past, with y = Transpose(x, p) (y's axis i is x's axis p[i]):
** - elementwise ops on one input (the op table's unary kind: Relu, Cast, Clip
**   with its scalar bounds...), and binary ones beside a constant of one
**   value: op(y) = Transpose(op(x), p);
** - Unsqueeze: the same axes inserted into x, the new axes kept in place by the
**   permutation and the others sent where p sends them;
** - Squeeze of constant axes s: x's axes p[s] squeezed, the permutation
**   renumbered over the axes left;
** - Slice with constant (or absent) axes a: x sliced on p[a], starts, ends and
**   steps as they were;
** - Gather of indices of rank 0 or 1 on axis a: x gathered on p[a] (rank 0
**   drops the axis, and the permutation is renumbered over the others);
** - Reshape that only splits axes (shapes known as numbers; dims of 1 may come
**   and go): x's axes split alike, the permutation moving whole groups.
** Each keeps its node; only its input, its axes or target, and the name of its
** output (whose shape changes, so an old value_info never describes it)
** change. An op after which nothing is left to permute keeps its output name.
**
** When: only where the Transpose is sure to go. The ops after it, followed
** through every reader (a value read by several nodes branches), must each end
** at a Transpose (merged into it) or where the permutation left is the
** identity; or, along one path, at such a Concat. Then no copy is ever made.
** Otherwise nothing moves: a Transpose pushed past ops toward a Conv or a
** graph output removes nothing and would only churn the model. Every rewrite
** removes a Transpose, or moves one to a Concat the same walk then merges, so
** the node count never grows and a second run finds the Transposes where the
** first left them.
*/
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "passes/rewrite.h"
#include "shape/infer.h"

#define MAX_PERM 16

/* The permutation of Transpose n of an input of rank `rank` (-1: unknown),
** the reversal when perm is absent; false when it cannot be known. */
static bool perm_of(const Onnx__NodeProto *n, int32_t rank, int64_t *p, size_t *len) {
    const Onnx__AttributeProto *a = graph_attr(n, "perm");
    if (!a) {
        if (rank < 0 || rank > MAX_PERM) return false;
        for (int32_t i = 0; i < rank; i++) p[i] = rank - 1 - i;
        *len = (size_t)rank;
        return true;
    }
    if (a->n_ints > MAX_PERM || (rank >= 0 && a->n_ints != (size_t)rank)) return false;
    bool seen[MAX_PERM] = {false};
    for (size_t i = 0; i < a->n_ints; i++) {
        if (a->ints[i] < 0 || a->ints[i] >= (int64_t)a->n_ints || seen[a->ints[i]]) return false;
        seen[a->ints[i]] = true;
        p[i] = a->ints[i];
    }
    *len = a->n_ints;
    return true;
}

/* What an op needs once a Transpose by q moves past it, and what it leaves. */
typedef struct moved {
    int64_t q[MAX_PERM];     /* the permutation between the op's input (output) and y */
    size_t rank;
    int64_t dims[MAX_PERM];  /* the dims the value had before the move, when known */
    bool dims_known;
    int64_t vals[MAX_PERM];  /* the op's new axes (Slice, Squeeze), target (Reshape) */
    size_t n_vals;
    int64_t axis;            /* Gather's new axis */
    enum { SET_NONE, SET_AXES, SET_SHAPE, SET_AXIS } set;
} moved;

/* The dims of value name, as numbers, into m. */
static void dims_of(graph *g, const char *name, moved *m) {
    const graph_type *t = rw_type(g, name);
    m->dims_known = t && t->rank == (int32_t)m->rank;
    for (size_t i = 0; m->dims_known && i < m->rank; i++) {
        dim d = dim_at(t, (int32_t)i);
        m->dims_known = dim_is_num(d) && d.n > 0;
        if (m->dims_known) m->dims[i] = d.n;
    }
}

static bool is_identity(const moved *m) {
    for (size_t i = 0; i < m->rank; i++)
        if (m->q[i] != (int64_t)i) return false;
    return true;
}

/* Integer axes of node n: input slot `in` from opset `since`, attribute `axes`
** before. *present is false when the node has none. */
static bool axes_of(graph *g, const Onnx__NodeProto *n, int64_t opset, int64_t since, size_t in,
                    int64_t *ax, size_t *len, bool *present) {
    *len = 0;
    *present = true;
    if (opset >= since) {
        const char *name = graph_node_input(n, in);
        if (!name) {
            *present = false;
            return true;
        }
        return rw_const_ints(g, name, ax, MAX_PERM, len);
    }
    const Onnx__AttributeProto *a = graph_attr(n, "axes");
    if (!a) {
        *present = false;
        return true;
    }
    if (a->n_ints > MAX_PERM) return false;
    for (size_t i = 0; i < a->n_ints; i++) ax[i] = a->ints[i];
    *len = a->n_ints;
    return true;
}

/* Axes counted from the end made non-negative; false when one is out of
** range or named twice. */
static bool normalize(int64_t *ax, size_t n, size_t rank) {
    bool seen[MAX_PERM] = {false};
    for (size_t i = 0; i < n; i++) {
        if (ax[i] < 0) ax[i] += (int64_t)rank;
        if (ax[i] < 0 || ax[i] >= (int64_t)rank || seen[ax[i]]) return false;
        seen[ax[i]] = true;
    }
    return true;
}

/* The one input slot of n that reads name; -1 when none or several do (then
** the rewired slot and the others would stop reading one value). */
static int slot_of(const Onnx__NodeProto *n, const char *name) {
    int slot = -1;
    for (size_t k = 0; k < n->n_input; k++) {
        if (!n->input[k] || strcmp(n->input[k], name) != 0) continue;
        if (slot >= 0) return -1;
        slot = (int)k;
    }
    return slot;
}

/* The ops a Transpose moves past, whatever their attributes. */
static bool movable(op_id op) {
    return op == OP_Unsqueeze || op == OP_Squeeze || op == OP_Slice || op == OP_Gather ||
           op == OP_Reshape ||
           (op != OP_NONE && (op_table[op].kind == OPK_UNARY || op_table[op].kind == OPK_BINARY));
}

/* The input of movable op n that a Transpose above it would reach it through:
** for a binary op the one beside a constant, else the first. */
static const char *data_input(graph *g, const Onnx__NodeProto *n) {
    graph_const c;
    if (op_table[op_of(n)].kind == OPK_BINARY && n->n_input == 2 &&
        graph_const_find(g, graph_node_input(n, 0), &c))
        return graph_node_input(n, 1);
    return graph_node_input(n, 0);
}

/* Gather(y, indices, axis a) is Gather(x, indices, axis p[a]) with y's other
** axes in their order: indices of rank 1 keep the axis where it was, a scalar
** drops it. Higher ranks would insert axes; they are left. */
static bool through_gather(graph *g, const Onnx__NodeProto *n, const moved *in, moved *m,
                           const char **why) {
    const graph_type *it = rw_type(g, graph_node_input(n, 1));
    int64_t a = graph_attr_int(n, "axis", 0);
    if (a < 0) a += (int64_t)in->rank;
    if (!it || it->rank < 0 || it->rank > 1 || a < 0 || a >= (int64_t)in->rank) {
        *why = "the Gather after it has indices of rank 2 or more (or unknown), or an axis out "
               "of range";
        return false;
    }
    int64_t pa = in->q[a];
    size_t j = 0;
    for (size_t i = 0; i < in->rank; i++) {
        if (it->rank == 1) m->q[j++] = in->q[i];
        else if ((int64_t)i != a) m->q[j++] = in->q[i] - (in->q[i] > pa);
    }
    m->rank = j;
    m->axis = pa;
    m->set = SET_AXIS;
    dims_of(g, n->output[0], m);
    return true;
}

/*
** Reshape(y) that only splits y's axes: y's axis i becomes the run of output
** dims whose product it is (dims of 1 may join any run, and an axis of 1 may
** vanish). Then x's axis p[i] splits into the same run, and the permutation
** moves whole runs. Both shapes must be known as numbers: the new target is
** written out in them.
*/
static bool through_reshape(graph *g, const Onnx__NodeProto *n, int64_t opset, const moved *in,
                            moved *m, const char **why) {
    const graph_type *t = rw_type(g, n->output[0]);
    if (opset < 5 || !graph_node_input(n, 1)) return false;
    if (!in->dims_known || !t || t->rank < 1 || t->rank > MAX_PERM || in->rank < 1) {
        *why = "the Reshape after it has shapes not known as numbers";
        return false;
    }
    size_t s = (size_t)t->rank, start[MAX_PERM], len[MAX_PERM], j = 0;
    int64_t o[MAX_PERM];
    for (size_t k = 0; k < s; k++) {
        dim d = dim_at(t, (int32_t)k);
        if (!dim_is_num(d) || d.n <= 0) {
            *why = "the Reshape after it has shapes not known as numbers";
            return false;
        }
        o[k] = d.n;
    }
    bool split = true;
    for (size_t i = 0; split && i < in->rank; i++) {
        int64_t prod = 1;
        start[i] = j;
        while (j < s && prod < in->dims[i]) prod *= o[j++];
        split = prod == in->dims[i];
        len[i] = j - start[i];
    }
    while (split && j < s && o[j] == 1) j++, len[in->rank - 1]++;
    if (!split || j != s) {
        *why = "the Reshape after it merges axes (or splits them across others), which the "
               "permutation does not move together";
        return false;
    }
    /* x's axis k is y's axis inv[k]: its run goes at offset off[k] of the new target */
    int64_t inv[MAX_PERM], off[MAX_PERM];
    for (size_t i = 0; i < in->rank; i++) inv[in->q[i]] = (int64_t)i;
    size_t pos = 0;
    for (size_t k = 0; k < in->rank; k++) {
        size_t i = (size_t)inv[k];
        off[k] = (int64_t)pos;
        for (size_t u = 0; u < len[i]; u++) m->vals[pos++] = o[start[i] + u];
    }
    for (size_t i = 0; i < in->rank; i++)
        for (size_t u = 0; u < len[i]; u++) m->q[start[i] + u] = off[in->q[i]] + (int64_t)u;
    m->rank = s;
    m->n_vals = s;
    m->set = SET_SHAPE;
    for (size_t k = 0; k < s; k++) m->dims[k] = o[k];
    m->dims_known = true;
    return true;
}

/*
** How node r, reading y (in: Transpose(x, in->q), y's dims in in->dims) reads
** x instead: *m gets the permutation that then gives r's output, the dims
** that output had, and what r takes on x instead (axes, a target, an axis).
** False, with why (NULL for ops it never moves past, and binary ops beside a
** computed operand), when it cannot.
*/
static bool through(pass_ctx *pc, graph *g, int32_t r, const char *y, const moved *in,
                    moved *m, const char **why) {
    const Onnx__NodeProto *n = graph_node(g, r);
    op_id op = op_of(n);
    const int64_t *p = in->q;
    size_t rank = in->rank;
    *why = NULL;
    m->set = SET_NONE;
    m->n_vals = 0;
    m->dims_known = false;
    int slot = slot_of(n, y);
    if (!movable(op) || slot < 0 || n->n_output != 1 || graph_node_subgraphs(g, r)) return false;
    int64_t opset = graph_opset(pc->model, "");
    if (op_table[op].kind == OPK_BINARY) {
        /* op(y, c) is Transpose(op(x, c), p) when c is one value broadcast
        ** alike over every axis; a constant of other values would need a
        ** transposed copy, and the bytes of both while another node reads it */
        graph_const c;
        const char *other = n->n_input == 2 && slot < 2 ? graph_node_input(n, 1 - (size_t)slot)
                                                        : NULL;
        if (!other || op_table[op].bcast != BC_MULTI || opset < op_table[op].bcast_since ||
            !graph_const_find(g, other, &c))
            return false;
        int64_t numel = 1;
        for (size_t i = 0; i < c.tensor->n_dims; i++) numel *= c.tensor->dims[i];
        if (numel != 1 || c.tensor->n_dims > rank) {
            *why = "the elementwise op after it reads a constant of more than one value "
                   "(or of a higher rank): it would need a transposed copy";
            return false;
        }
    } else if (slot != 0) {
        return false;
    }
    if (op_table[op].kind == OPK_UNARY || op_table[op].kind == OPK_BINARY) {
        for (size_t i = 0; i < rank; i++) m->q[i] = p[i];
        m->rank = rank;
        dims_of(g, n->output[0], m);
        return true;
    }
    if (op == OP_Gather) return through_gather(g, n, in, m, why);
    if (op == OP_Reshape) return through_reshape(g, n, opset, in, m, why);
    int64_t ax[MAX_PERM];
    size_t na;
    bool present;
    if (op == OP_Unsqueeze) {
        if (!axes_of(g, n, opset, 13, 1, ax, &na, &present) || !present) {
            *why = "the axes of the Unsqueeze after it are not constant";
            return false;
        }
        size_t out = rank + na;
        if (out > MAX_PERM || !normalize(ax, na, out)) {
            *why = "the axes of the Unsqueeze after it are out of range";
            return false;
        }
        bool inserted[MAX_PERM] = {false};
        for (size_t i = 0; i < na; i++) inserted[ax[i]] = true;
        /* x's axes land on the positions not inserted, in order */
        int64_t kept[MAX_PERM];
        size_t nk = 0;
        for (size_t j = 0; j < out; j++)
            if (!inserted[j]) kept[nk++] = (int64_t)j;
        for (size_t j = 0, i = 0; j < out; j++)
            m->q[j] = inserted[j] ? (int64_t)j : kept[p[i++]];
        m->rank = out;
        dims_of(g, n->output[0], m);
        return true;
    }
    if (op == OP_Squeeze) {
        if (!axes_of(g, n, opset, 13, 1, ax, &na, &present) || !present) {
            *why = "the Squeeze after it has no constant axes (without them it takes the "
                   "dims that are 1 at run time)";
            return false;
        }
        if (!normalize(ax, na, rank) || na > rank) {
            *why = "the axes of the Squeeze after it are out of range";
            return false;
        }
        bool gone_y[MAX_PERM] = {false}, gone_x[MAX_PERM] = {false};
        for (size_t i = 0; i < na; i++) {
            gone_y[ax[i]] = true;
            gone_x[p[ax[i]]] = true;
            m->vals[i] = p[ax[i]];
        }
        /* where each axis of x left after the Squeeze lands */
        int64_t pos[MAX_PERM];
        for (size_t a = 0, k = 0; a < rank; a++) pos[a] = gone_x[a] ? -1 : (int64_t)k++;
        size_t j = 0;
        for (size_t i = 0; i < rank; i++)
            if (!gone_y[i]) m->q[j++] = pos[p[i]];
        m->rank = j;
        m->n_vals = na;
        m->set = SET_AXES;
        dims_of(g, n->output[0], m);
        return true;
    }
    /* Slice: starts, ends and steps go with their axes */
    if (!axes_of(g, n, opset, 10, 3, ax, &na, &present)) {
        *why = "the axes of the Slice after it are computed at run time";
        return false;
    }
    if (!present) {
        /* every axis from 0, as many as starts has entries */
        const Onnx__AttributeProto *a = opset < 10 ? graph_attr(n, "starts") : NULL;
        const graph_type *t = opset >= 10 ? rw_type(g, graph_node_input(n, 1)) : NULL;
        if (a) {
            na = a->n_ints;
        } else if (t && t->rank == 1 && dim_is_num(dim_at(t, 0))) {
            na = (size_t)dim_at(t, 0).n;
        } else {
            *why = "the Slice after it has no axes and starts of unknown length";
            return false;
        }
        if (na > rank) {
            *why = "the Slice after it has more starts than axes";
            return false;
        }
        for (size_t i = 0; i < na; i++) ax[i] = (int64_t)i;
    }
    if (!normalize(ax, na, rank)) {
        *why = "the axes of the Slice after it are out of range";
        return false;
    }
    for (size_t i = 0; i < na; i++) m->vals[i] = p[ax[i]];
    for (size_t i = 0; i < rank; i++) m->q[i] = p[i];
    m->rank = rank;
    m->n_vals = na;
    m->set = SET_AXES;
    dims_of(g, n->output[0], m);
    return true;
}

/* What one walk of a graph remembers: whether each Concat can take one
** Transpose for its inputs' (asked once per Concat, however many inputs ask). */
typedef struct walk_state {
    int8_t *concat_ok;       /* per node at the walk's start: 0 not asked, 1 yes, 2 no */
    uint32_t n;
} walk_state;

/* The moves a Transpose's readers lead to, followed through every branch. */
typedef struct item {
    int32_t node;
    const char *cur;         /* the value the node reads now (y's side) */
    const char *in;          /* what it reads once the Transpose has moved past (apply) */
    moved m;                 /* the Transpose it has to take */
} item;

typedef struct items {
    item *v;
    size_t n, cap;
} items;

static int push(pass_ctx *pc, items *w, int32_t node, const char *cur, const char *in,
                const moved *m) {
    if (w->n == w->cap) {
        size_t nc = w->cap ? 2 * w->cap : 16;
        item *grown = realloc(w->v, nc * sizeof *grown);
        if (!grown) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
        w->v = grown;
        w->cap = nc;
    }
    w->v[w->n++] = (item){node, cur, in, *m};
    return TILEOPT_OK;
}

/* Each live node reading value name in an input slot, once; *implicit when a
** subgraph reads it. */
static int readers_of(pass_ctx *pc, graph *g, const char *name, items *w, const char *in,
                      const moved *m, bool *implicit, size_t *count) {
    graph_value *v = graph_find(g, name);
    *count = 0;
    for (uint32_t u = 0; v && u < v->n_uses; u++) {
        int32_t r = v->uses[u].node;
        if (r < 0 || graph_node_removed(g, r)) continue;
        if (v->uses[u].input < 0) {
            *implicit = true;
            continue;
        }
        /* a node reading it in two slots is listed once, for its first */
        const Onnx__NodeProto *rn = graph_node(g, r);
        bool again = false;
        for (int32_t k = 0; k < v->uses[u].input && !again; k++)
            again = rn->input[k] && strcmp(rn->input[k], name) == 0;
        if (again) continue;
        int rc = push(pc, w, r, name, in, m);
        if (rc) return rc;
        (*count)++;
    }
    return TILEOPT_OK;
}

/* What the readers of a Transpose lead to. */
typedef struct plan {
    size_t leaves, undone;   /* ends, and those at a Transpose or the identity */
    size_t concats;          /* ends at a Concat */
    int32_t concat;
    bool moves, branched;
    const char *why;         /* what stopped a move that was in question */
} plan;

static const char *const LEADS_NOWHERE =
    "the ops after it lead to an op it does not move past, not to another Transpose: moving "
    "it would remove nothing";

/* Follow every reader of y (the output of a Transpose by m0) through the ops
** it moves past, to where each path ends. */
static int plan_moves(pass_ctx *pc, graph *g, const char *y, const moved *m0, plan *pl) {
    items w = {0};
    bool implicit = false;
    size_t count;
    *pl = (plan){0, 0, 0, -1, false, false, NULL};
    int rc = readers_of(pc, g, y, &w, NULL, m0, &implicit, &count);
    while (!rc && w.n) {
        item it = w.v[--w.n];
        op_id op = op_of(graph_node(g, it.node));
        pl->leaves++;
        if (op == OP_Transpose) {
            pl->undone++;
            continue;
        }
        if (op == OP_Concat) {
            pl->concats++;
            pl->concat = it.node;
            continue;
        }
        moved next;
        const char *why;
        if (!through(pc, g, it.node, it.cur, &it.m, &next, &why)) {
            if (!why && strcmp(it.cur, y) != 0) why = LEADS_NOWHERE;
            if (!pl->why) pl->why = why;
            continue;
        }
        pl->moves = true;
        if (is_identity(&next)) {
            pl->undone++;
            continue;
        }
        const char *out = graph_node(g, it.node)->output[0];
        bool inner = false;
        if (graph_value_is_output(g, out)) {
            if (!pl->why) pl->why = "the ops after it lead to a graph output, not to another "
                                    "Transpose: moving it would remove nothing";
            continue;
        }
        pl->leaves--;
        rc = readers_of(pc, g, out, &w, NULL, &next, &inner, &count);
        if (inner || !count) {
            pl->leaves++;
            if (!pl->why) pl->why = inner ? "a subgraph reads a value of the ops after it"
                                          : LEADS_NOWHERE;
        }
        if (count > 1) pl->branched = true;
    }
    free(w.v);
    return rc;
}

/*
** Can every input of Concat c be a Transpose by one permutation, once the
** Transposes above its inputs have moved down to it? Each input is followed up
** through the ops a Transpose moves past (each output read by the next op
** alone) to a Transpose read by that chain alone; at least two distinct ones.
*/
static int concat_ok(pass_ctx *pc, graph *g, walk_state *ws, int32_t c, bool *ok) {
    *ok = false;
    if (c >= 0 && (uint32_t)c < ws->n && ws->concat_ok[c]) {
        *ok = ws->concat_ok[c] == 1;
        return TILEOPT_OK;
    }
    const Onnx__NodeProto *n = graph_node(g, c);
    int32_t *chain = NULL;
    size_t cap = 0, distinct = 0;
    int64_t want[MAX_PERM];
    size_t want_rank = 0;
    int32_t prev_top = -1;
    bool good = n->n_input >= 2;
    for (size_t k = 0; good && k < n->n_input; k++) {
        const char *v = graph_node_input(n, k);
        int32_t child = c, pi;
        size_t len = 0;
        const Onnx__NodeProto *pn = NULL;
        good = false;
        pi = -1;
        while (v && (pn = rw_producer(g, v, &pi))) {
            int32_t sole;
            if (!rw_sole_consumer(g, v, &sole) || sole != child) break;
            if (op_of(pn) == OP_Transpose) {
                good = true;
                break;
            }
            if (!movable(op_of(pn))) break;
            if (len == cap) {
                size_t nc = cap ? 2 * cap : 8;
                int32_t *grown = realloc(chain, nc * sizeof *grown);
                if (!grown) {
                    free(chain);
                    return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
                }
                chain = grown;
                cap = nc;
            }
            chain[len++] = pi;
            child = pi;
            v = data_input(g, pn);
        }
        int64_t p[MAX_PERM];
        size_t rank;
        const char *x = good ? graph_node_input(pn, 0) : NULL;
        good = x && perm_of(pn, rw_rank(g, x), p, &rank);
        moved m;
        for (size_t i = 0; good && i < rank; i++) m.q[i] = p[i];
        m.rank = good ? rank : 0;
        if (good) dims_of(g, pn->output[0], &m);
        const char *why;
        /* a permutation the ops undo on the way never reaches the Concat */
        for (size_t i = len; good && i > 0; i--) {
            moved next;
            const Onnx__NodeProto *cn = graph_node(g, chain[i - 1]);
            good = through(pc, g, chain[i - 1], data_input(g, cn), &m, &next, &why) &&
                   !is_identity(&next);
            m = next;
        }
        if (!good) break;
        if (k == 0) {
            for (size_t i = 0; i < m.rank; i++) want[i] = m.q[i];
            want_rank = m.rank;
        } else {
            good = m.rank == want_rank;
            for (size_t i = 0; good && i < m.rank; i++) good = want[i] == m.q[i];
        }
        if (pi != prev_top) distinct++;
        prev_top = pi;
    }
    free(chain);
    *ok = good && distinct >= 2;
    if (c >= 0 && (uint32_t)c < ws->n) ws->concat_ok[c] = *ok ? 1 : 2;
    return TILEOPT_OK;
}

/* Output 0 of node r under a fresh name (its shape changes): returns it. */
static int rename_output(pass_ctx *pc, graph *g, int32_t r, const char **fresh) {
    *fresh = rw_name(g, r, "_moved");
    if (!*fresh || graph_node_set_output(g, r, 0, *fresh))
        return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    return TILEOPT_OK;
}

/* Node r takes on x what m says (a Slice's or a Squeeze's axes, a Reshape's
** target, a Gather's axis): integer inputs of the type their others have, or
** the attribute of old opsets. */
static int set_new(pass_ctx *pc, graph *g, int32_t r, const moved *m) {
    Onnx__NodeProto *n = graph_node(g, r);
    op_id op = op_of(n);
    int64_t opset = graph_opset(pc->model, "");
    if (m->set == SET_NONE) return TILEOPT_OK;
    if (m->set == SET_AXIS) {
        if (graph_node_set_attr_int(g, n, "axis", m->axis))
            return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
        return TILEOPT_OK;
    }
    if (m->set == SET_AXES && opset < (op == OP_Slice ? 10 : 13)) {
        if (graph_node_set_attr_ints(g, n, "axes", m->vals, m->n_vals))
            return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
        return TILEOPT_OK;
    }
    /* Slice's starts, ends, axes and steps share one integer type */
    const graph_type *st = op == OP_Slice ? rw_type(g, graph_node_input(n, 1)) : NULL;
    const char *name;
    int rc;
    if (st && st->elem == DT_INT32) {
        int32_t v[MAX_PERM];
        int64_t dims[1] = {(int64_t)m->n_vals};
        for (size_t i = 0; i < m->n_vals; i++) v[i] = (int32_t)m->vals[i];
        rc = graph_add_initializer(g, "axes", DT_INT32, dims, 1, v, m->n_vals * sizeof *v, &name,
                                   pc->err);
    } else {
        rc = rw_add_ints(pc, g, m->set == SET_SHAPE ? "shape" : "axes", m->vals, m->n_vals, 1,
                         &name);
    }
    if (rc) return rc;
    size_t slot = op == OP_Slice ? 3 : 1;
    /* an absent axes input sits before steps as "", or is appended */
    while (!rc && n->n_input < slot) rc = graph_node_set_input(g, r, n->n_input, "");
    if (!rc) rc = graph_node_set_input(g, r, slot, name);
    if (rc) return err_set(pc->err, rc, "out of memory");
    return TILEOPT_OK;
}

/* Transpose e, reading value v that lacks permutation q, reads it by the one
** permutation both make; none at all when they cancel. */
static int merge_into(pass_ctx *pc, graph *g, int32_t e, const char *v, const moved *q) {
    Onnx__NodeProto *n = graph_node(g, e);
    int64_t p2[MAX_PERM], r[MAX_PERM];
    size_t n2;
    if (!perm_of(n, (int32_t)q->rank, p2, &n2) || n2 != q->rank)
        return err_set(pc->err, TILEOPT_ERROR, "sink_transposes: a planned merge failed");
    bool identity = true;
    for (size_t i = 0; i < n2; i++) {
        r[i] = q->q[p2[i]];
        identity = identity && r[i] == (int64_t)i;
    }
    if (graph_node_set_input(g, e, 0, v)) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    if (identity) {
        bool done;
        const char *why;
        int rc = rw_forward(pc, g, e, 0, v, &done, &why);
        if (rc) return rc;
        if (done) {
            json_w *a = pass_action(pc, g, e, "eliminated");
            if (a) json_put_str(a, "rule", "undoes the Transpose moved down to it");
            return TILEOPT_OK;
        }
        /* a graph output keeps its name: one Transpose by the identity stays */
    }
    if (graph_node_set_attr_ints(g, graph_node(g, e), "perm", r, n2))
        return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    json_w *a = pass_action(pc, g, e, "rewritten");
    if (a) json_put_str(a, "rule", "merged with the Transpose moved down to it");
    return TILEOPT_OK;
}

/*
** Move the Transpose of x (output y, permutation m0) past the ops its plan
** follows: each op reads what the one before it now writes (x for the first)
** and writes under a fresh name, or under its own when nothing is left to
** permute; a Transpose at the end merges. With gather, the one path ends at a
** Concat: Transpose t itself moves there, writing the value the Concat reads.
*/
static int apply_moves(pass_ctx *pc, graph *g, int32_t t, const char *y, const char *x,
                       const moved *m0, bool gather) {
    items w = {0};
    bool implicit = false;
    size_t count;
    int rc = readers_of(pc, g, y, &w, x, m0, &implicit, &count);
    while (!rc && w.n) {
        item it = w.v[--w.n];
        Onnx__NodeProto *n = graph_node(g, it.node);
        op_id op = op_of(n);
        if (op == OP_Transpose) {
            rc = merge_into(pc, g, it.node, it.in, &it.m);
            continue;
        }
        if (op == OP_Concat) {
            if (!gather) break;
            if (graph_node_set_input(g, t, 0, it.in) || graph_node_set_output(g, t, 0, it.cur) ||
                graph_node_set_attr_ints(g, graph_node(g, t), "perm", it.m.q, it.m.rank))
                rc = err_set(pc->err, TILEOPT_NOMEM, "out of memory");
            continue;
        }
        moved next;
        const char *why, *fresh;
        int slot = slot_of(n, it.cur);
        if (slot < 0 || !through(pc, g, it.node, it.cur, &it.m, &next, &why)) break;
        rc = set_new(pc, g, it.node, &next);
        if (!rc && graph_node_set_input(g, it.node, (size_t)slot, it.in))
            rc = err_set(pc->err, TILEOPT_NOMEM, "out of memory");
        if (rc) break;
        json_w *a = pass_action(pc, g, it.node, "rewritten");
        if (a) json_put_str(a, "rule", "reads the input of the Transpose moved past it");
        if (is_identity(&next)) continue;
        const char *out = graph_strdup(g, n->output[0]);
        if (!out) {
            rc = err_set(pc->err, TILEOPT_NOMEM, "out of memory");
            break;
        }
        /* its readers go on reading the old name until their turn */
        size_t before = w.n;
        rc = readers_of(pc, g, out, &w, NULL, &next, &implicit, &count);
        if (!rc) rc = rename_output(pc, g, it.node, &fresh);
        for (size_t i = before; !rc && i < w.n; i++) w.v[i].in = fresh;
    }
    bool stuck = !rc && w.n;
    free(w.v);
    if (stuck) return err_set(pc->err, TILEOPT_ERROR, "sink_transposes: a planned move failed");
    return rc;
}

static int sink_rule(pass_ctx *pc, graph *g, walk_state *ws, int32_t t);

/*
** Concat c of Transposes by one permutation q, each read by c alone, at least
** two of them: c joins their inputs on axis q[axis], and one Transpose by q
** after it writes its output.
*/
static int concat_rule(pass_ctx *pc, graph *g, walk_state *ws, int32_t c) {
    const Onnx__NodeProto *n = graph_node(g, c);
    int64_t q[MAX_PERM], p[MAX_PERM];
    size_t rank = 0, distinct = 0;
    int32_t prev = -1;
    bool any = false, same = true, alone = true;
    for (size_t k = 0; k < n->n_input; k++) {
        int32_t ti, sole;
        const Onnx__NodeProto *t = rw_producer(g, graph_node_input(n, k), &ti);
        if (!t || op_of(t) != OP_Transpose || !graph_node_input(t, 0)) return TILEOPT_OK;
        size_t len;
        if (!perm_of(t, rw_rank(g, graph_node_input(t, 0)), p, &len)) return TILEOPT_OK;
        if (!any) {
            for (size_t i = 0; i < len; i++) q[i] = p[i];
            rank = len;
        } else {
            same = same && len == rank;
            for (size_t i = 0; same && i < len; i++) same = p[i] == q[i];
        }
        any = true;
        alone = alone && rw_sole_consumer(g, t->output[0], &sole) && sole == c;
        if (ti != prev) distinct++;
        prev = ti;
    }
    if (!any || n->n_input < 2 || distinct < 2) return TILEOPT_OK;
    if (!same) {
        pass_skip(pc, g, c, "its inputs are Transposes by different permutations: one "
                  "Transpose after it cannot stand for them");
        return TILEOPT_OK;
    }
    if (!alone) {
        pass_skip(pc, g, c, "its inputs are Transposes, but another node or a graph output "
                  "reads one of them too: it would stay beside the one after the Concat");
        return TILEOPT_OK;
    }
    int64_t axis = graph_attr_int(n, "axis", 0);
    if (axis < 0) axis += (int64_t)rank;
    if (axis < 0 || axis >= (int64_t)rank) {
        pass_skip(pc, g, c, "its axis is out of range");
        return TILEOPT_OK;
    }
    int32_t *tops = malloc(n->n_input * sizeof *tops);
    if (!tops) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    int rc = TILEOPT_OK;
    for (size_t k = 0; !rc && k < n->n_input; k++) {
        const Onnx__NodeProto *t = rw_producer(g, graph_node_input(n, k), &tops[k]);
        if (graph_node_set_input(g, c, k, graph_node_input(t, 0))) rc = TILEOPT_NOMEM;
    }
    Onnx__NodeProto *cn = graph_node(g, c);
    if (!rc) rc = graph_node_set_attr_int(g, cn, "axis", q[axis]);
    const char *out = cn->output[0], *fresh = NULL;
    int32_t ni = -1;
    if (!rc) {
        out = graph_strdup(g, out);
        fresh = rw_name(g, c, "_moved");
        rc = !out || !fresh || graph_node_set_output(g, c, 0, fresh) ? TILEOPT_NOMEM : TILEOPT_OK;
    }
    Onnx__NodeProto *nt = NULL;
    if (!rc) {
        const char *hint = graph_unique_name(g, "Transpose_moved");
        nt = hint ? graph_add_node(g, "Transpose", hint, &fresh, 1, &out, 1, &ni) : NULL;
        rc = !nt || graph_node_set_attr_ints(g, nt, "perm", q, rank) ? TILEOPT_NOMEM : TILEOPT_OK;
    }
    if (rc) {
        free(tops);
        return err_set(pc->err, rc, "out of memory");
    }
    pc->changed = true;
    json_w *a = pass_action(pc, g, c, "rewritten");
    if (a) {
        json_put_str(a, "rule", "joins the inputs of its Transposes, one Transpose after it");
        json_put_ints(a, "perm", q, rank);
    }
    for (size_t k = 0; k < n->n_input; k++)
        rw_drop_unread(pc, g, tops[k], "one Transpose after the Concat took its place");
    free(tops);
    /* the new Transpose is no node this walk visits: it moves on now */
    return sink_rule(pc, g, ws, ni);
}

static int sink_rule(pass_ctx *pc, graph *g, walk_state *ws, int32_t t) {
    const Onnx__NodeProto *n = graph_node(g, t);
    if (op_of(n) == OP_Concat) return concat_rule(pc, g, ws, t);
    const char *x = op_of(n) == OP_Transpose ? graph_node_input(n, 0) : NULL;
    if (!x || n->n_output != 1 || !n->output[0][0]) return TILEOPT_OK;
    const char *y = graph_strdup(g, n->output[0]);
    moved m0;
    if (!y) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    if (!perm_of(n, rw_rank(g, x), m0.q, &m0.rank)) return TILEOPT_OK;
    dims_of(g, y, &m0);
    plan pl;
    int rc = plan_moves(pc, g, y, &m0, &pl);
    if (rc) return rc;
    /* no op to move past: fuse_consecutive_transposes and the Concat rule take
    ** what reads it directly */
    if (!pl.moves && !pl.why) return TILEOPT_OK;
    rw_reads reads = rw_reads_of(g, y);
    const char *why = NULL;
    bool gather = false;
    if (reads.output)
        why = "its output is a graph output: it has to stay, and a copy moved down would "
              "add a node";
    else if (reads.implicit)
        why = "a subgraph reads its output";
    else if (pl.leaves > pl.undone + pl.concats)
        why = pl.why ? pl.why
                     : "it has several readers, and not each leads to a Transpose: a copy moved "
                       "down each would add nodes";
    else if (pl.concats) {
        gather = pl.leaves == 1 && !pl.branched;
        bool ok = false;
        if (gather && (rc = concat_ok(pc, g, ws, pl.concat, &ok))) return rc;
        if (!gather)
            why = "the ops after it lead to a Concat and elsewhere too: a copy moved down each "
                  "would add nodes";
        else if (!ok)
            why = "the ops after it lead to a Concat whose inputs do not all come from "
                  "Transposes by one permutation: moving it would remove nothing";
    }
    if (why) {
        pass_skip(pc, g, t, "%s", why);
        return TILEOPT_OK;
    }
    const char *xs = graph_strdup(g, x);
    if (!xs) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    pc->changed = true;
    json_w *a = pass_action(pc, g, t, gather ? "rewritten" : "eliminated");
    if (a) {
        json_put_str(a, "rule", gather ? "moved past the ops after it to the Concat of "
                                         "Transposes they lead to"
                                       : "moved past the ops after it until a Transpose or "
                                         "the ops themselves undo it");
        json_put_int(a, "ends", (int64_t)pl.leaves);
    }
    rc = apply_moves(pc, g, t, y, xs, &m0, gather);
    if (!rc && !gather && !graph_node_removed(g, t)) graph_remove_node(g, t);
    return rc;
}

/* g's nodes in topological order, then the subgraphs of the nodes still live;
** the Concat verdicts are kept for the walk of one graph. */
static int walk_graph(pass_ctx *pc, graph *g) {
    uint32_t n = graph_n_nodes(g), count = 0;
    int32_t *order = malloc((n ? n : 1) * sizeof *order);
    walk_state ws = {calloc(n ? n : 1, 1), n};
    int rc = !order || !ws.concat_ok ? (int)err_set(pc->err, TILEOPT_NOMEM, "out of memory")
                                     : graph_toposort(g, order, &count, pc->err);
    for (uint32_t k = 0; !rc && k < count; k++)
        if (!graph_node_removed(g, order[k])) rc = sink_rule(pc, g, &ws, order[k]);
    free(order);
    free(ws.concat_ok);
    for (uint32_t i = 0; !rc && i < graph_n_nodes(g); i++) {
        if (graph_node_removed(g, (int32_t)i)) continue;
        for (graph *s = graph_node_subgraphs(g, (int32_t)i); !rc && s; s = s->next_sibling)
            rc = walk_graph(pc, s);
    }
    return rc;
}

int pass_sink_transposes(pass_ctx *pc) {
    int rc = infer_shapes(pc->model, pc->err);
    if (!rc) rc = walk_graph(pc, pc->model->main);
    if (rc) return rc;
    return pc->changed ? graph_commit(pc->model->main, pc->err) : TILEOPT_OK;
}

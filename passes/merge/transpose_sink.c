/*
** sink_transposes: a Transpose moves down, toward the graph outputs, past the
** ops that do not care about the order of axes, until it meets another
** Transpose (the two become one, or none) or a Concat whose inputs are all
** Transposes by one permutation (one Transpose after the Concat instead of one
** per input). Exporters write such layout changes around reshaping code: an
** unfold written as Slice -> Transpose -> Unsqueeze per row and a Concat keeps a
** Transpose per row that fuse_consecutive_transposes never sees, as none of
** them sits next to another.
**
** The ops it moves past, with y = Transpose(x, p) (y's axis i is x's axis p[i]):
** - elementwise ops on one input (the op table's unary kind: Relu, Cast, Clip
**   with its scalar bounds...): op(y) = Transpose(op(x), p);
** - Unsqueeze: the same axes inserted into x, the new axes kept in place by the
**   permutation and the others sent where p sends them;
** - Squeeze of constant axes s: x's axes p[s] squeezed, the permutation
**   renumbered over the axes left;
** - Slice with constant (or absent) axes a: x sliced on p[a], starts, ends and
**   steps as they were.
** Each keeps its node; only its input, its axes, and the name of its output
** (whose shape changes, so an old value_info never describes it) change.
**
** When: only where the Transpose is sure to go. With one reader, the ops after
** it lead to a Transpose (merged into it) or to such a Concat; with several
** readers, every reader's ops lead to a Transpose, so each merges there and no
** copy is made. Otherwise nothing moves: a Transpose pushed past ops toward a
** Conv or a graph output removes nothing and would only churn the model. Every
** rewrite removes a Transpose or moves one to a Concat the same walk then
** merges, so the node count never grows and a second run finds the same
** Transposes where the first left them.
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

/* Where an op leaves a Transpose moved past it. */
typedef struct moved {
    int64_t q[MAX_PERM];     /* the permutation that then gives the op's output */
    size_t rank;
    int64_t axes[MAX_PERM];  /* Slice and Squeeze: the axes they take on x */
    size_t n_axes;
    bool new_axes;
} moved;

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
    return op == OP_Unsqueeze || op == OP_Squeeze || op == OP_Slice ||
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

/*
** How node r, reading y = Transpose(x, p) (rank elements), reads x instead:
** *m gets the permutation that then gives r's output, and the axes a Slice or
** Squeeze takes on x. False, with why (NULL for ops it never moves past, and
** binary ops beside a computed operand), when it cannot.
*/
static bool through(pass_ctx *pc, graph *g, int32_t r, const char *y, const int64_t *p,
                    size_t rank, moved *m, const char **why) {
    const Onnx__NodeProto *n = graph_node(g, r);
    op_id op = op_of(n);
    *why = NULL;
    m->new_axes = false;
    m->n_axes = 0;
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
        return true;
    }
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
            m->axes[i] = p[ax[i]];
        }
        /* where each axis of x left after the Squeeze lands */
        int64_t pos[MAX_PERM];
        for (size_t a = 0, k = 0; a < rank; a++) pos[a] = gone_x[a] ? -1 : (int64_t)k++;
        size_t j = 0;
        for (size_t i = 0; i < rank; i++)
            if (!gone_y[i]) m->q[j++] = pos[p[i]];
        m->rank = j;
        m->n_axes = na;
        m->new_axes = true;
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
    for (size_t i = 0; i < na; i++) m->axes[i] = p[ax[i]];
    for (size_t i = 0; i < rank; i++) m->q[i] = p[i];
    m->rank = rank;
    m->n_axes = na;
    m->new_axes = true;
    return true;
}

/* Where the ops after a Transpose lead. */
enum { END_NONE, END_TRANSPOSE, END_CONCAT };

typedef struct walk_state {
    int8_t *concat_ok;       /* per node at the walk's start: 0 not asked, 1 yes, 2 no */
    uint32_t n;
} walk_state;

/*
** Follow reader r (reading the output of a Transpose by p) through the ops a
** Transpose moves past, each output read by one node alone: the end (a
** Transpose or a Concat, else END_NONE) in *end, and how many ops lie before
** it in *steps. *why says what stopped it, NULL when r itself is no op a
** Transpose moves past (nothing was in question).
*/
static int follow(pass_ctx *pc, graph *g, int32_t r, const char *y, const int64_t *p,
                  size_t rank, int32_t *end, size_t *steps, const char **why) {
    moved m;
    for (size_t i = 0; i < rank; i++) m.q[i] = p[i];
    m.rank = rank;
    *steps = 0;
    *why = NULL;
    for (;;) {
        *end = r;
        op_id op = op_of(graph_node(g, r));
        if (op == OP_Transpose) return END_TRANSPOSE;
        if (op == OP_Concat) return END_CONCAT;
        moved next;
        if (!through(pc, g, r, y, m.q, m.rank, &next, why)) {
            if (!*why && *steps)
                *why = "the ops after it lead to an op it does not move past, not to another "
                       "Transpose: moving it would remove nothing";
            return END_NONE;
        }
        int32_t nr;
        y = graph_node(g, r)->output[0];
        if (!rw_sole_consumer(g, y, &nr)) {
            *why = "the ops after it lead to a value several nodes or a graph output read, "
                   "not to another Transpose: moving it would remove nothing";
            return END_NONE;
        }
        m = next;
        (*steps)++;
        r = nr;
    }
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
        const char *why;
        for (size_t i = len; good && i > 0; i--) {
            moved next;
            const Onnx__NodeProto *cn = graph_node(g, chain[i - 1]);
            good = through(pc, g, chain[i - 1], data_input(g, cn), m.q, m.rank, &next, &why);
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

/* Node r takes axes m->axes on x (a Slice or a Squeeze whose input lost its
** Transpose), as an input of the type its others have or as the attribute. */
static int set_axes(pass_ctx *pc, graph *g, int32_t r, const moved *m) {
    Onnx__NodeProto *n = graph_node(g, r);
    op_id op = op_of(n);
    int64_t opset = graph_opset(pc->model, "");
    if (opset < (op == OP_Slice ? 10 : 13)) {
        if (graph_node_set_attr_ints(g, n, "axes", m->axes, m->n_axes))
            return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
        return TILEOPT_OK;
    }
    /* Slice's starts, ends, axes and steps share one integer type */
    const graph_type *st = op == OP_Slice ? rw_type(g, graph_node_input(n, 1)) : NULL;
    const char *name;
    int rc;
    if (st && st->elem == DT_INT32) {
        int32_t v[MAX_PERM];
        int64_t dims[1] = {(int64_t)m->n_axes};
        for (size_t i = 0; i < m->n_axes; i++) v[i] = (int32_t)m->axes[i];
        rc = graph_add_initializer(g, "axes", DT_INT32, dims, 1, v, m->n_axes * sizeof *v, &name,
                                   pc->err);
    } else {
        rc = rw_add_ints(pc, g, "axes", m->axes, m->n_axes, 1, &name);
    }
    if (rc) return rc;
    size_t slot = op == OP_Slice ? 3 : 1;
    /* an absent axes input sits before steps as "", or is appended */
    while (!rc && n->n_input < slot) rc = graph_node_set_input(g, r, n->n_input, "");
    if (!rc) rc = graph_node_set_input(g, r, slot, name);
    if (rc) return err_set(pc->err, rc, "out of memory");
    return TILEOPT_OK;
}

/*
** Move the Transpose reading x by p past `steps` ops from reader r on (its
** slot 0 reads the Transpose's output): each reads what the one before it now
** writes, x for the first, under a fresh name. *last gets the value the last
** one writes (x when there is none), *old the name it wrote before (which its
** reader goes on reading unless relink), and *q the permutation it lacks.
*/
static int move_past(pass_ctx *pc, graph *g, int32_t r, const char *y, const char *x,
                     const int64_t *p, size_t rank, size_t steps, bool relink,
                     const char **last, const char **old, moved *q) {
    moved m;
    for (size_t i = 0; i < rank; i++) m.q[i] = p[i];
    m.rank = rank;
    const char *in = x, *cur = y;
    *old = NULL;
    for (size_t s = 0; s < steps; s++) {
        moved next;
        const char *why;
        int32_t nr;
        const char *out = graph_strdup(g, graph_node(g, r)->output[0]);
        if (!out) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
        int slot = slot_of(graph_node(g, r), cur);
        if (slot < 0 || !through(pc, g, r, cur, m.q, m.rank, &next, &why) ||
            !rw_sole_consumer(g, out, &nr))
            return err_set(pc->err, TILEOPT_ERROR, "sink_transposes: a planned move failed");
        int rc = next.new_axes ? set_axes(pc, g, r, &next) : TILEOPT_OK;
        if (!rc && graph_node_set_input(g, r, (size_t)slot, in))
            rc = err_set(pc->err, TILEOPT_NOMEM, "out of memory");
        if (!rc) rc = rename_output(pc, g, r, &in);
        if (rc) return rc;
        /* its reader reads the new name in each slot that read the old */
        if ((relink || s + 1 < steps) && graph_replace_uses(g, out, in))
            return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
        cur = in;
        *old = out;
        m = next;
        r = nr;
    }
    *last = in;
    *q = m;
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

/* At most this many readers are planned on the stack; more are refused. */
#define MAX_READERS 256

/* A reader of a Transpose and where the ops from it on lead. */
typedef struct reader {
    int32_t node, end;
    size_t steps;
    int kind;
    const char *why;
} reader;

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
    const char *y = n->output[0];
    graph_value *v = graph_find(g, y);
    int64_t p[MAX_PERM];
    size_t rank;
    if (!v || !perm_of(n, rw_rank(g, x), p, &rank)) return TILEOPT_OK;
    reader rd[MAX_READERS];
    size_t nr = 0;
    bool implicit = false, other_slot = false, too_many = false, matched = false;
    for (uint32_t u = 0; u < v->n_uses; u++) {
        int32_t r = v->uses[u].node;
        if (r < 0 || graph_node_removed(g, r)) continue;
        if (v->uses[u].input < 0) {
            implicit = true;
            continue;
        }
        bool seen = false;
        for (size_t i = 0; i < nr && !seen; i++) seen = rd[i].node == r;
        if (seen) continue;
        const Onnx__NodeProto *rn = graph_node(g, r);
        if (op_of(rn) != OP_Concat && slot_of(rn, y) < 0) {
            other_slot = true;
            continue;
        }
        if (nr == MAX_READERS) {
            too_many = true;
            continue;
        }
        reader *d = &rd[nr++];
        d->node = r;
        d->kind = follow(pc, g, r, y, p, rank, &d->end, &d->steps, &d->why);
        matched = matched || d->steps || d->why;
    }
    /* no op to move past: fuse_consecutive_transposes and the Concat rule take
    ** what reads it directly */
    if (!matched) return TILEOPT_OK;
    const char *why = NULL;
    if (v->output >= 0)
        why = "its output is a graph output: it has to stay, and a copy moved down would "
              "add a node";
    else if (implicit)
        why = "a subgraph reads its output";
    else if (other_slot)
        why = "a node reads it in two input slots";
    else if (too_many)
        why = "it has too many readers to follow";
    for (size_t i = 0; i < nr && !why; i++)
        if (rd[i].kind == END_NONE) why = rd[i].why;
    if (!why && nr > 1) {
        for (size_t i = 0; i < nr && !why; i++)
            if (rd[i].kind != END_TRANSPOSE)
                why = "it has several readers, and not each leads to a Transpose: a copy "
                      "moved down each would add nodes";
    }
    if (!why && nr == 1 && rd[0].kind == END_CONCAT) {
        bool ok;
        int rc = concat_ok(pc, g, ws, rd[0].end, &ok);
        if (rc) return rc;
        if (!ok)
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
    if (rd[0].kind == END_CONCAT) {
        /* the Transpose itself moves: it reads what the last op now writes, and
        ** writes the value the Concat reads, whose shape is the one it had */
        const char *last, *old;
        moved q;
        int rc = move_past(pc, g, rd[0].node, y, xs, p, rank, rd[0].steps, false, &last, &old, &q);
        if (rc) return rc;
        if (graph_node_set_input(g, t, 0, last) || graph_node_set_output(g, t, 0, old) ||
            graph_node_set_attr_ints(g, graph_node(g, t), "perm", q.q, q.rank))
            return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
        json_w *a = pass_action(pc, g, t, "rewritten");
        if (a) {
            json_put_str(a, "rule", "moved past the ops after it to the Concat of Transposes "
                         "they lead to");
            json_put_int(a, "past", (int64_t)rd[0].steps);
        }
        return TILEOPT_OK;
    }
    for (size_t i = 0; i < nr; i++) {
        const char *last, *old;
        moved q;
        int rc = move_past(pc, g, rd[i].node, y, xs, p, rank, rd[i].steps, true, &last, &old, &q);
        if (!rc) rc = merge_into(pc, g, rd[i].end, last, &q);
        if (rc) return rc;
    }
    json_w *a = pass_action(pc, g, t, "eliminated");
    if (a) {
        json_put_str(a, "rule", "moved past the ops after it into the Transposes they lead to");
        json_put_int(a, "readers", (int64_t)nr);
    }
    if (!graph_node_removed(g, t)) graph_remove_node(g, t);
    return TILEOPT_OK;
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
    static const op_id ops[] = {OP_Transpose};
    if (!rw_model_has(pc->model, ops, countof(ops))) return TILEOPT_OK;
    int rc = infer_shapes(pc->model, pc->err);
    if (!rc) rc = walk_graph(pc, pc->model->main);
    if (rc) return rc;
    return pc->changed ? graph_commit(pc->model->main, pc->err) : TILEOPT_OK;
}

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
**   and go): x's axes split alike, the permutation moving whole groups;
** - a reduction (Reduce*) of constant axes a: x reduced on p[a], with keepdims
**   the permutation as it was, without it renumbered as after a Squeeze.
** Each keeps its node; only its input, its axes or target, and the name of its
** output (whose shape changes, so an old value_info never describes it)
** change. An op after which nothing is left to permute keeps its output name.
**
** When: only where the Transpose is sure to go. The ops after it, followed
** through every reader (a value read by several nodes branches), must each end
** at a Transpose (merged into it) or where the permutation left is the
** identity; or, along one path, at such a Concat. Then no copy is ever made.
** Where it has to stay (a graph output, a subgraph or another reader reads
** it), a reader whose every path ends at a Transpose, one of them its
** inverse, still reads x instead: that inverse goes (ONNX Runtime's
** transpose optimizer does the same, for a YOLOv8 NMS head's scores). Otherwise
** nothing moves: a Transpose pushed past ops toward a Conv or a graph output
** removes nothing and would only churn the model. Every rewrite removes a
** Transpose, or moves one to a Concat the same walk then merges, so the node
** count never grows and a second run finds the Transposes where the first
** left them.
*/
#include <stdlib.h>
#include <string.h>

#include "passes/merge/merge_impl.h"
#include "passes/merge/transpose_sink.h"
#include "shape/infer.h"

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
    item *grown = rw_room(w->v, &w->cap, w->n, sizeof *grown);
    if (!grown) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    w->v = grown;
    w->v[w->n++] = (item){node, cur, in, *m};
    return TILEOPT_OK;
}

/* Each live node reading value name in an input slot, once; *implicit when a
** subgraph reads it. */
static int readers_of(pass_ctx *pc, graph *g, const char *name, items *w, const char *in,
                      const moved *m, int32_t only, bool *implicit, size_t *count) {
    graph_value *v = graph_find(g, name);
    *count = 0;
    for (uint32_t u = 0; v && u < v->n_uses; u++) {
        int32_t r = v->uses[u].node;
        if (r < 0 || graph_node_removed(g, r) || (only >= 0 && r != only)) continue;
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
    size_t cancels;          /* ends at a Transpose that the moved one undoes */
    size_t concats;          /* ends at a Concat */
    int32_t concat;
    bool moves, branched;
    const char *why;         /* what stopped a move that was in question */
} plan;

static const char *const LEADS_NOWHERE =
    "the ops after it lead to an op it does not move past, not to another Transpose: moving "
    "it would remove nothing";

/* Transpose e, reading a value that lacks permutation q, by the one
** permutation both make: into r; true when that is the identity. */
static bool merged_perm(const Onnx__NodeProto *e, const moved *q, int64_t *r, size_t *n) {
    int64_t p2[TS_MAX_PERM];
    bool identity = ts_perm_of(e, (int32_t)q->rank, p2, n) && *n == q->rank;
    if (!identity) return false;
    for (size_t i = 0; i < *n; i++) {
        r[i] = q->q[p2[i]];
        identity = identity && r[i] == (int64_t)i;
    }
    return identity;
}

/* Follow every reader of y (the output of a Transpose by m0; reader `only`
** alone when >= 0) through the ops it moves past, to where each path ends. */
static int plan_moves(pass_ctx *pc, graph *g, const char *y, const moved *m0, int32_t only,
                      plan *pl) {
    items w = {0};
    bool implicit = false;
    size_t count;
    *pl = (plan){0, 0, 0, 0, -1, false, false, NULL};
    int rc = readers_of(pc, g, y, &w, NULL, m0, only, &implicit, &count);
    while (!rc && w.n) {
        item it = w.v[--w.n];
        op_id op = op_of(graph_node(g, it.node));
        pl->leaves++;
        if (op == OP_Transpose) {
            int64_t r[TS_MAX_PERM];
            size_t n;
            pl->undone++;
            pl->cancels += merged_perm(graph_node(g, it.node), &it.m, r, &n);
            continue;
        }
        if (op == OP_Concat) {
            pl->concats++;
            pl->concat = it.node;
            continue;
        }
        moved next;
        const char *why;
        if (!ts_through(pc, g, it.node, it.cur, &it.m, &next, &why)) {
            if (!why && strcmp(it.cur, y) != 0) why = LEADS_NOWHERE;
            if (!pl->why) pl->why = why;
            continue;
        }
        pl->moves = true;
        if (ts_is_identity(&next)) {
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
        rc = readers_of(pc, g, out, &w, NULL, &next, -1, &inner, &count);
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
    int64_t want[TS_MAX_PERM];
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
            if (!ts_movable(op_of(pn))) break;
            int32_t *grown = rw_room(chain, &cap, len, sizeof *grown);
            if (!grown) {
                free(chain);
                return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
            }
            chain = grown;
            chain[len++] = pi;
            child = pi;
            v = ts_data_input(g, pn);
        }
        int64_t p[TS_MAX_PERM];
        size_t rank;
        const char *x = good ? graph_node_input(pn, 0) : NULL;
        good = x && ts_perm_of(pn, rw_rank(g, x), p, &rank);
        moved m;
        for (size_t i = 0; good && i < rank; i++) m.q[i] = p[i];
        m.rank = good ? rank : 0;
        if (good) ts_dims_of(g, pn->output[0], &m);
        const char *why;
        /* a permutation the ops undo on the way never reaches the Concat */
        for (size_t i = len; good && i > 0; i--) {
            moved next;
            const Onnx__NodeProto *cn = graph_node(g, chain[i - 1]);
            good = ts_through(pc, g, chain[i - 1], ts_data_input(g, cn), &m, &next, &why) &&
                   !ts_is_identity(&next);
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
    if (m->set == SET_AXES && opset < merge_axes_input_since(op)) {
        if (graph_node_set_attr_ints(g, n, "axes", m->vals, m->n_vals))
            return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
        return TILEOPT_OK;
    }
    /* Slice's starts, ends, axes and steps share one integer type */
    const graph_type *st = op == OP_Slice ? rw_type(g, graph_node_input(n, 1)) : NULL;
    const char *name;
    int rc;
    if (st && st->elem == DT_INT32) {
        int32_t v[TS_MAX_PERM];
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
    int64_t p2[TS_MAX_PERM], r[TS_MAX_PERM];
    size_t n2;
    if (!ts_perm_of(graph_node(g, e), (int32_t)q->rank, p2, &n2) || n2 != q->rank)
        return err_set(pc->err, TILEOPT_ERROR, "sink_transposes: a planned merge failed");
    bool identity = merged_perm(graph_node(g, e), q, r, &n2);
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
                       const moved *m0, bool gather, int32_t only) {
    items w = {0};
    bool implicit = false;
    size_t count;
    int rc = readers_of(pc, g, y, &w, x, m0, only, &implicit, &count);
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
        int slot = ts_slot_of(n, it.cur);
        if (slot < 0 || !ts_through(pc, g, it.node, it.cur, &it.m, &next, &why)) break;
        rc = set_new(pc, g, it.node, &next);
        if (!rc && graph_node_set_input(g, it.node, (size_t)slot, it.in))
            rc = err_set(pc->err, TILEOPT_NOMEM, "out of memory");
        if (rc) break;
        json_w *a = pass_action(pc, g, it.node, "rewritten");
        if (a) json_put_str(a, "rule", "reads the input of the Transpose moved past it");
        if (ts_is_identity(&next)) continue;
        const char *out = graph_strdup(g, n->output[0]);
        if (!out) {
            rc = err_set(pc->err, TILEOPT_NOMEM, "out of memory");
            break;
        }
        /* its readers go on reading the old name until their turn */
        size_t before = w.n;
        rc = readers_of(pc, g, out, &w, NULL, &next, -1, &implicit, &count);
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
** The Transpose stays (a graph output, a subgraph or a reader whose ops lead
** elsewhere reads it), but a reader whose every path ends at a Transpose it
** undoes reads x instead, its ops moved past as above: that Transpose goes,
** and nothing is copied. *n_moved counts those readers.
*/
static int sink_branches(pass_ctx *pc, graph *g, int32_t t, const char *y, const char *x,
                         const moved *m0, size_t *n_moved) {
    graph_value *v = graph_find(g, y);
    size_t n = v ? v->n_uses : 0;
    int32_t *readers = malloc((n ? n : 1) * sizeof *readers);
    if (!readers) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    for (size_t u = 0; u < n; u++) readers[u] = v->uses[u].input < 0 ? -1 : v->uses[u].node;
    int rc = TILEOPT_OK;
    *n_moved = 0;
    for (size_t u = 0; !rc && u < n; u++) {
        int32_t r = readers[u];
        bool seen = false;
        for (size_t k = 0; k < u && !seen; k++) seen = readers[k] == r;
        if (r < 0 || seen || graph_node_removed(g, r)) continue;
        plan bp;
        rc = plan_moves(pc, g, y, m0, r, &bp);
        if (rc || !bp.cancels || bp.concats || bp.leaves > bp.undone) continue;
        rc = apply_moves(pc, g, t, y, x, m0, false, r);
        (*n_moved)++;
    }
    free(readers);
    return rc;
}

/*
** Concat c of Transposes by one permutation q, each read by c alone, at least
** two of them: c joins their inputs on axis q[axis], and one Transpose by q
** after it writes its output.
*/
static int concat_rule(pass_ctx *pc, graph *g, walk_state *ws, int32_t c) {
    const Onnx__NodeProto *n = graph_node(g, c);
    int64_t q[TS_MAX_PERM], p[TS_MAX_PERM];
    size_t rank = 0, distinct = 0;
    int32_t prev = -1;
    bool any = false, same = true, alone = true;
    for (size_t k = 0; k < n->n_input; k++) {
        int32_t ti, sole;
        const Onnx__NodeProto *t = rw_producer(g, graph_node_input(n, k), &ti);
        if (!t || op_of(t) != OP_Transpose || !graph_node_input(t, 0)) return TILEOPT_OK;
        size_t len;
        if (!ts_perm_of(t, rw_rank(g, graph_node_input(t, 0)), p, &len)) return TILEOPT_OK;
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
    if (!ts_perm_of(n, rw_rank(g, x), m0.q, &m0.rank)) return TILEOPT_OK;
    ts_dims_of(g, y, &m0);
    plan pl;
    int rc = plan_moves(pc, g, y, &m0, -1, &pl);
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
    const char *xs = graph_strdup(g, x);
    if (!xs) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    if (why) {
        size_t moved_down = 0;
        /* a branch can only undo it where the whole walk met an inverse */
        if (!pl.concats && pl.cancels &&
            (rc = sink_branches(pc, g, t, y, xs, &m0, &moved_down)))
            return rc;
        if (moved_down) {
            pc->changed = true;
            pass_skip(pc, g, t, "%s; %zu of its readers, whose ops end at a Transpose that "
                      "undoes it, read its input instead", why, moved_down);
        } else {
            pass_skip(pc, g, t, "%s", why);
        }
        return TILEOPT_OK;
    }
    pc->changed = true;
    json_w *a = pass_action(pc, g, t, gather ? "rewritten" : "eliminated");
    if (a) {
        json_put_str(a, "rule", gather ? "moved past the ops after it to the Concat of "
                                         "Transposes they lead to"
                                       : "moved past the ops after it until a Transpose or "
                                         "the ops themselves undo it");
        json_put_int(a, "ends", (int64_t)pl.leaves);
    }
    rc = apply_moves(pc, g, t, y, xs, &m0, gather, -1);
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

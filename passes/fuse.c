/*
** fuse: stop materializing Tile outputs that only feed elementwise ops.
**
** T = Tile(x, r) is a strided view of x: output axis i splits into (r_i, d_i) with
** byte strides (0, stride_i). Rewritten with standard ONNX ops, so every runtime
** benefits, not only ours:
**   1  B(T, y) -> B(x, y) when every tiled axis of x has size 1 and the broadcast
**      gives the same output shape (the Tile was a broadcast B does by itself).
**   2  U(T) -> Tile(U(x), r) for unary elementwise U: U runs on prod(d) elements.
**   3  B(T, c) -> Tile(B(x, c), r) for c invariant under the tiling, and
**      B(Tile(x, r), Tile(w, r)) -> Tile(B(x, w), r) for equal shapes of x and w.
**   Rules 1 and 3 with a tiling-invariant operand hold for ops of three or more
**   operands too (Where, Sum, Max, Min, Mean): y is then all other operands
**   broadcast together.
**   4  (--fuse-split) B(T, y) -> Reshape(B(x', y'), shape(T)): y' splits every
**      axis with r_i > 1 and d_i > 1 into (r_i, d_i) and x' = Reshape(x) puts a 1
**      in front of d_i, so B broadcasts x over the repeats.
**   5  a Tile left over size-1 axes only -> Expand (opset >= 8), the stride-0
**      view, where ONNX Runtime runs it no slower (see FUSE_RULE5 below).
**   6  Shape(T) -> Mul(Shape(x), r): a reader of T's shape alone reads x's.
** Rules 2 and 3 move the Tile after the op; they are applied only when every
** reader of T gets rewritten, so T disappears instead of being materialized
** twice. The new Tile goes back on the worklist, so Tiles sink to the end of
** elementwise chains and the rules combine up to a fixed point.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/const.h"
#include "shape/dim.h"
#include "shape/infer.h"
#include "passes/pass.h"
#include "passes/passes.h"

#define FZ_MAX_RANK TENSOR_MAX_RANK

/* ------------------------------------------------------------- op table */

/* The consumer's row in the op table when it is an elementwise op (graph/ops.h:
** kind, output type, broadcasting and the opset it starts at), else NULL. */
static const op_info *fz_elementwise(const Onnx__NodeProto *n) {
    op_id op = op_of(n);
    if (op == OP_NONE || op_table[op].kind == OPK_OTHER) return NULL;
    return &op_table[op];
}

/*
** Rule 5 (a Tile left over size-1 axes -> Expand) applies only where ONNX
** Runtime runs the Expand no slower. Measured with its profiler (ORT 1.30, one
** thread, bench/bench_fuse.py cases expand and expand_inner, and the shapes in
** README), Expand is 1.2-11x faster when the innermost axis alone repeats a
** size-1 axis 16 or more times ([N,1] x [1,r]: ORT's Tile then copies element
** by element), but 0.4-1.0x for fewer repeats ([8192,1] x [1,2]), for an outer
** axis repeated too ([1,64,1,1] x [8,1,56,56], the bias shape) and for repeats
** of outer axes only ([1,2048] x [256,1], which ORT's Tile does with memcpy).
** For tileopt's evaluator and any runtime with stride-0 views Expand is free.
** -DFUSE_RULE5=0 turns the rule off.
*/
#define FUSE_EXPAND_MIN_REPEATS 16
#ifndef FUSE_RULE5
#define FUSE_RULE5 1
#endif

/* ---------------------------------------------------------------- shapes */

/*
** Dims in this pass are the shape layer's (shape/dim.h): a number, a named dim
** or unknown, equal only when they are the same number or the same named dim,
** never by guess, so a Tile over a dynamic batch goes through the same rules as
** a static one.
*/

/* Size of an axis of size d repeated r times: a number, a named dim when the
** other factor is 1, else unknown. */
static dim fz_tiled_dim(dim d, dim r) {
    if (dim_is(r, 1)) return d;
    if (dim_is(d, 1)) return r;
    if (dim_is(d, 0) || dim_is(r, 0)) return dim_num(0);
    int64_t p;
    if (!dim_is_num(d) || !dim_is_num(r) || __builtin_mul_overflow(d.n, r.n, &p))
        return dim_unknown();
    return dim_num(p);
}

typedef struct fz_shape {
    int32_t rank;
    int32_t elem;
    dim d[FZ_MAX_RANK];
} fz_shape;

/* Elements of a static shape (the callers have checked it fits). */
static uint64_t fz_numel(const dim *d, int32_t rank) {
    uint64_t n = 1;
    for (int32_t i = 0; i < rank; i++) n *= (uint64_t)d[i].n;
    return n;
}

/* The numbers of a static shape. */
static void fz_nums(const dim *d, int32_t rank, int64_t *out) {
    for (int32_t i = 0; i < rank; i++) out[i] = d[i].n;
}

/* Shape of a value (this or an enclosing scope) whose rank shape inference
** knows; its dims may be named or unknown. */
static bool fz_shape_of(graph *g, const char *name, fz_shape *s) {
    graph_value *v = name ? graph_resolve(g, name) : NULL;
    if (!v || v->type.rank < 0 || v->type.rank > FZ_MAX_RANK) return false;
    s->rank = v->type.rank;
    s->elem = v->type.elem;
    for (int32_t i = 0; i < s->rank; i++) s->d[i] = dim_at(&v->type, i);
    return true;
}

/* "[2,N,?]" */
static void fz_shape_str(char *buf, size_t cap, const dim *d, int32_t rank) {
    size_t k = (size_t)snprintf(buf, cap, "[");
    if (k < cap) k += dims_print(buf + k, cap - k, d, rank);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

/* Dims for a report: numbers, named dims as strings, unknown as null. */
static cJSON *fz_json_dims(const dim *d, int32_t rank) {
    cJSON *a = cJSON_CreateArray();
    for (int32_t i = 0; a && i < rank; i++)
        cJSON_AddItemToArray(a, dim_is_num(d[i])     ? pass_json_int(d[i].n)
                                : dim_is_named(d[i]) ? cJSON_CreateString(d[i].sym)
                                                     : cJSON_CreateNull());
    return a;
}

/* ----------------------------------------------------------- constants */

/* Constant repeats of Tile node `node` (graph/const.h says what is constant).
** *found false when they are not constant. Constant repeats that break the spec
** make the model invalid (pass_check_repeats, as in fold). */
static int fz_const_repeats(pass_ctx *pc, graph *g, int32_t node, const char *name,
                            const graph_type *xt, dim *out, size_t *n, bool *found) {
    *found = false;
    graph_const c;
    if (!graph_const_find(g, name, &c)) return TILEOPT_OK;
    const Onnx__TensorProto *tp = c.tensor;
    tensor *rt = NULL;
    int rc = tensor_from_proto(g->model, tp, &pc->opt->eval_lim, &rt, pc->err);
    if (rc) return err_prefix(pc->err, "node %s (Tile): repeats '%s': ",
                              graph_node_id(g, node), name);
    rc = pass_check_repeats(pc, g, node, rt, xt);
    int64_t v[FZ_MAX_RANK];
    if (!rc) *found = tensor_to_i64(rt, v, FZ_MAX_RANK, n);
    for (size_t i = 0; *found && i < *n; i++) out[i] = dim_num(v[i]);
    tensor_free(rt);
    return rc;
}

/* A Clip bound (or any optional input) that is absent or constant. */
static bool fz_input_constant(graph *g, const char *name) {
    graph_const c;
    return !name || graph_const_find(g, name, &c);
}

/* A new node whose inputs are all constant is fold's to compute: say so, so the
** run reaches its fixed point (a second optimize would fold it). */
static void fz_note_foldable(pass_ctx *pc, graph *g, const char *const *ins, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (!fz_input_constant(g, ins[k])) return;
    pc->fold_again = true;
}

/* ----------------------------------------------------------------- Tiles */

typedef struct fz_tile {
    int32_t node;
    const char *x, *reps, *out;
    fz_shape xs;                 /* d */
    dim r[FZ_MAX_RANK];
    dim t[FZ_MAX_RANK];          /* d * r */
    bool fixed;                  /* d and r all numbers: sizes and the view are known */
    size_t esize;
    uint64_t t_numel;            /* when fixed */
} fz_tile;

/* Repeats that are no constant but whose length is known: each entry a number
** or a named dim where shape inference tracked the value (Shape -> Gather ->
** Concat, as exporters compute a batch repeat), else unknown. Unary ops move
** past any Tile; the other rules need the entries they compare. */
static bool fz_runtime_repeats(graph *g, const char *name, dim *out, size_t *n) {
    graph_value *v = graph_resolve(g, name);
    if (!v) return false;
    const shape_value *sv = v->shape_value;
    if (sv && sv->rank == 1 && sv->n <= FZ_MAX_RANK) {
        /* a negative repeat fails at run time: nothing is known of it */
        for (int32_t i = 0; i < sv->n; i++) out[i] = dim_size(sv->e[i]);
        *n = (size_t)sv->n;
        return true;
    }
    const graph_type *rt = &v->type;
    if (rt->rank != 1 || !rt->dims || rt->dims[0] < 0 || rt->dims[0] > FZ_MAX_RANK)
        return false;
    *n = (size_t)rt->dims[0];
    for (size_t i = 0; i < *n; i++) out[i] = dim_unknown();
    return true;
}

/* Read Tile node i: repeats constant or of known length, input of known rank.
** 1 with *why set when the Tile cannot be analysed; a negated status when the
** Tile is invalid (an output too large for any machine is an error, never a
** skip). */
static int fz_read_tile(pass_ctx *pc, graph *g, int32_t i, fz_tile *t,
                        char *why, size_t cap) {
    const Onnx__NodeProto *n = graph_node(g, i);
    t->node = i;
    if (n->n_input != 2 || n->n_output != 1) {
        snprintf(why, cap, "Tile with %zu inputs (Tile-1 form, opset < 6): run the "
                 "upgrade pass first", n->n_input);
        return 1;
    }
    t->x = graph_node_input(n, 0);
    t->reps = graph_node_input(n, 1);
    t->out = n->output[0];
    if (!t->x || !t->reps || !t->out || !t->out[0]) {
        snprintf(why, cap, "Tile without input or repeats");
        return 1;
    }
    graph_value *xv = graph_resolve(g, t->x);
    size_t nr = 0;
    bool found;
    int rc = fz_const_repeats(pc, g, i, t->reps, xv ? &xv->type : NULL, t->r, &nr, &found);
    if (rc) return -rc;
    if (!found && !fz_runtime_repeats(g, t->reps, t->r, &nr)) {
        snprintf(why, cap, "repeats '%s' are not a constant int64 tensor, and their "
                 "length is unknown", t->reps);
        return 1;
    }
    if (!fz_shape_of(g, t->x, &t->xs)) {
        snprintf(why, cap, "rank of input '%s' unknown (run shape inference or "
                 "declare it in value_info)", t->x);
        return 1;
    }
    const dtype_info *di = dtype_get(t->xs.elem);
    if (!di) {
        snprintf(why, cap, "element type of input '%s' unknown", t->x);
        return 1;
    }
    t->esize = di->size;
    /* pass_check_repeats (in fz_const_repeats) has checked constant repeats
    ** against a static shape: one non-negative repeat per axis, sizes that fit. */
    if ((int32_t)nr != t->xs.rank) {
        snprintf(why, cap, "repeats have %zu entries for an input of rank %" PRId32, nr,
                 t->xs.rank);
        return 1;
    }
    for (int32_t k = 0; k < t->xs.rank; k++) t->t[k] = fz_tiled_dim(t->xs.d[k], t->r[k]);
    t->fixed = dims_static(t->xs.d, t->xs.rank) && dims_static(t->r, t->xs.rank);
    t->t_numel = t->fixed ? fz_numel(t->t, t->xs.rank) : 0;
    return 0;
}

/* Is the Tile a broadcast: does every axis it repeats have size 1? */
static bool fz_is_broadcast(const fz_tile *t) {
    for (int32_t i = 0; i < t->xs.rank; i++)
        if (!dim_is(t->r[i], 1) && !dim_is(t->xs.d[i], 1)) return false;
    return true;
}

/* --------------------------------------------------------------- state */

enum { P_NONE, P_R1, P_R2, P_R3C, P_R3T, P_R4, P_R6 };

typedef struct fz_plan {
    int32_t node;
    int kind;
    bool r4_ok;              /* rule 4 applies: the fallback when sinking is blocked */
    int32_t other_tile;      /* P_R3T: Tile node of the other operand */
    char why[512];
} fz_plan;

static void fz_strlcpy(char *dst, size_t cap, const char *src) {
    size_t n = strlen(src);
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

typedef struct fz_state {
    pass_ctx *pc;
    graph *g;
    int64_t opset;
    int32_t *work;
    size_t n_work, cap_work;
    char **why;              /* per node: why a Tile stays */
    uint32_t *stamp;         /* per node: last Tile step that planned it */
    size_t cap_nodes;
    uint32_t step;
} fz_state;

static int fz_grow_nodes(fz_state *st) {
    size_t need = graph_n_nodes(st->g);
    if (need <= st->cap_nodes) return TILEOPT_OK;
    size_t cap = st->cap_nodes ? st->cap_nodes : 16;
    while (cap < need) cap *= 2;
    char **w = realloc(st->why, cap * sizeof *w);
    if (!w) return err_set(st->pc->err, TILEOPT_NOMEM, "out of memory");
    st->why = w;
    uint32_t *s = realloc(st->stamp, cap * sizeof *s);
    if (!s) return err_set(st->pc->err, TILEOPT_NOMEM, "out of memory");
    st->stamp = s;
    memset(w + st->cap_nodes, 0, (cap - st->cap_nodes) * sizeof *w);
    memset(s + st->cap_nodes, 0, (cap - st->cap_nodes) * sizeof *s);
    st->cap_nodes = cap;
    return TILEOPT_OK;
}

static int fz_push(fz_state *st, int32_t node) {
    if (st->n_work == st->cap_work) {
        size_t cap = st->cap_work ? st->cap_work * 2 : 64;
        int32_t *w = realloc(st->work, cap * sizeof *w);
        if (!w) return err_set(st->pc->err, TILEOPT_NOMEM, "out of memory");
        st->work = w;
        st->cap_work = cap;
    }
    st->work[st->n_work++] = node;
    return TILEOPT_OK;
}

static int fz_set_why(fz_state *st, int32_t node, const char *why) {
    int rc = fz_grow_nodes(st);
    if (rc) return rc;
    free(st->why[node]);
    st->why[node] = NULL;
    if (why && !(st->why[node] = strdup(why)))
        return err_set(st->pc->err, TILEOPT_NOMEM, "out of memory");
    return TILEOPT_OK;
}

/* Live readers of a value in this graph (slot -1: read inside a subgraph). */
static uint32_t fz_live_uses(graph *g, const char *name) {
    graph_value *v = graph_find(g, name);
    uint32_t n = 0;
    for (uint32_t k = 0; v && k < v->n_uses; k++)
        if (v->uses[k].node < 0 || !graph_node_removed(g, v->uses[k].node)) n++;
    return n;
}

/* ------------------------------------------------------------- planning */

/* Shape of the consumer's output before the rewrite, for the report. */
static bool fz_consumer_out(fz_state *st, const fz_tile *t, const Onnx__NodeProto *c,
                            dim *out, int32_t *ro) {
    *ro = t->xs.rank;
    memcpy(out, t->t, (size_t)t->xs.rank * sizeof *out);
    const op_info *e = fz_elementwise(c);
    size_t n_data = e && e->kind == OPK_UNARY ? 1 : c->n_input;
    for (size_t k = 0; k < n_data; k++) {
        const char *in = graph_node_input(c, k);
        if (!in || strcmp(in, t->out) == 0) continue;
        fz_shape o;
        if (!fz_shape_of(st->g, in, &o) || !dim_broadcast2(out, *ro, o.d, o.rank, out, ro))
            return false;
    }
    return true;
}

static bool fz_attrs_copyable(const Onnx__NodeProto *n) {
    for (size_t i = 0; i < n->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->attribute[i];
        if (a->ref_attr_name && a->ref_attr_name[0]) return false;
        switch (a->type) {
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
            if (a->s.len && memchr(a->s.data, 0, a->s.len)) return false;
            break;
        default:
            return false;
        }
    }
    return true;
}

static int fz_copy_attrs(graph *g, Onnx__NodeProto *dst, const Onnx__NodeProto *src) {
    for (size_t i = 0; i < src->n_attribute; i++) {
        const Onnx__AttributeProto *a = src->attribute[i];
        int rc = TILEOPT_OK;
        switch (a->type) {
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
            rc = graph_node_set_attr_int(g, dst, a->name, a->i);
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
            rc = graph_node_set_attr_ints(g, dst, a->name, a->ints, a->n_ints);
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
            rc = graph_node_set_attr_float(g, dst, a->name, a->f);
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
            rc = graph_node_set_attr_tensor(g, dst, a->name, a->t);
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
            char *s = arena_alloc(g->model->arena, a->s.len + 1);
            if (!s) return TILEOPT_NOMEM;
            if (a->s.len) memcpy(s, a->s.data, a->s.len);
            s[a->s.len] = 0;
            rc = graph_node_set_attr_string(g, dst, a->name, s);
            break;
        }
        default:
            rc = TILEOPT_UNSUPPORTED; /* excluded by fz_attrs_copyable */
        }
        if (rc) return rc;
    }
    return TILEOPT_OK;
}

/* Does o stay the same along the tiled axes of x without widening it? */
static bool fz_invariant(const fz_tile *t, const fz_shape *o) {
    if (o->rank > t->xs.rank) return false;
    for (int32_t j = 0; j < o->rank; j++) {
        int32_t i = j + t->xs.rank - o->rank;
        bool one = dim_is(o->d[j], 1);
        if (!dim_is(t->r[i], 1) ? !one : (!one && !dim_eq(o->d[j], t->xs.d[i]))) return false;
    }
    return true;
}

/* Rule 1: reading x instead of T gives the same output. */
static bool fz_redundant(const fz_tile *t, const fz_shape *o, bool uni, int slot) {
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

/* Rule 4 preconditions: o is full-size (shape of T) and some axis has both
** r_i > 1 and d_i > 1 (otherwise rule 1 covers it). */
static bool fz_splittable(const fz_tile *t, const fz_shape *o) {
    if (!t->fixed || !dims_eq(t->t, t->xs.rank, o->d, o->rank)) return false;
    int32_t split = 0;
    for (int32_t i = 0; i < t->xs.rank; i++) {
        int64_t r = t->r[i].n, d = t->xs.d[i].n; /* fixed: numbers */
        if (r < 1 || d < 1) return false;
        if (r > 1 && d > 1) split++;
    }
    return split > 0 && t->xs.rank + split <= FZ_MAX_RANK;
}

/* Is `name` the output of a Tile with the same repeats over an equal shape? */
static int fz_same_tiling(fz_state *st, const fz_tile *t, const char *name,
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

/*
** Rule 1 for MatMul: its batch dims (all but the last two) broadcast as an
** elementwise op's do, so a Tile over size-1 batch axes only is a broadcast
** MatMul does itself when the other operand's batch dims give the same result:
** MatMul(a[B,M,K], Tile(w[1,K,N], [B,1,1])) is MatMul(a, w).
*/
static int fz_plan_matmul(fz_state *st, const fz_tile *t, const Onnx__NodeProto *c,
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

static int fz_plan_consumer(fz_state *st, const fz_tile *t, int32_t ci, fz_plan *p) {
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
        if (st->opset >= 15 && (graph_attr(c, "start") || graph_attr(c, "end"))) {
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

/* ------------------------------------------------------------- rewrites */

static int fz_set_type(fz_state *st, const char *name, int32_t elem, const dim *d,
                       int32_t rank) {
    graph_value *v = graph_find(st->g, name);
    if (!v) return err_set(st->pc->err, TILEOPT_ERROR, "fuse: new value '%s' not indexed",
                           name);
    if (!dims_to_type(st->g->model->arena, d, rank, &v->type))
        return err_set(st->pc->err, TILEOPT_NOMEM, "out of memory");
    v->type.elem = elem;
    return TILEOPT_OK;
}

/* Element type of the consumer's output. */
static int32_t fz_out_elem(fz_state *st, const Onnx__NodeProto *c, op_out out,
                           const fz_tile *t) {
    graph_value *v = graph_resolve(st->g, c->output[0]);
    if (v && v->type.elem) return v->type.elem;
    if (out == OUT_BOOL) return DT_BOOL;
    if (out == OUT_ATTR_TO) return (int32_t)graph_attr_int(c, "to", 0);
    const char *like = graph_node_input(c, out == OUT_LIKE_IN1 ? 1 : 0);
    if (like && strcmp(like, t->out) == 0) return t->xs.elem;
    fz_shape s;
    return like && fz_shape_of(st->g, like, &s) ? s.elem : 0;
}

static const char *fz_hint(graph *g, int32_t node, const char *suffix) {
    const Onnx__NodeProto *n = graph_node(g, node);
    char buf[256];
    snprintf(buf, sizeof buf, "%s_%s",
             n->name && n->name[0] ? n->name : n->op_type, suffix);
    return graph_unique_name(g, buf);
}

static cJSON *fz_report_as(fz_state *st, const fz_tile *t, int32_t ci, const char *action,
                         int rule, const char *rule_name, uint64_t el_before,
                         uint64_t el_after, uint64_t bytes_after, uint64_t saved) {
    cJSON *a = pass_action(st->pc, st->g, ci, action);
    if (!a) return NULL;
    pass_add_number(a, "rule", rule);
    pass_add_static(a, "rule_name", rule_name); /* every caller's is a literal */
    pass_add_text(a, "tile", graph_node_id(st->g, t->node));
    /* "repeats" holds numbers only; repeats with named or unknown entries go
    ** under their own key, and sizes are then unknown */
    cJSON_AddItemToObjectCS(a, dims_static(t->r, t->xs.rank) ? "repeats" : "repeats_symbolic",
                            fz_json_dims(t->r, t->xs.rank));
    cJSON_AddItemToObjectCS(a, "input_shape", fz_json_dims(t->xs.d, t->xs.rank));
    cJSON_AddItemToObjectCS(a, "tiled_shape", fz_json_dims(t->t, t->xs.rank));
    if (!t->fixed) return a;
    int64_t vs[2 * FZ_MAX_RANK], vst[2 * FZ_MAX_RANK];
    int64_t stride = (int64_t)t->esize;
    for (int32_t i = t->xs.rank - 1; i >= 0; i--) {
        vs[2 * i] = t->r[i].n;
        vs[2 * i + 1] = t->xs.d[i].n;
        vst[2 * i] = 0;
        vst[2 * i + 1] = stride;
        stride *= t->xs.d[i].n;
    }
    cJSON *view = cJSON_AddObjectToObject(a, "view");
    if (view) {
        cJSON_AddItemToObject(view, "shape", pass_json_ints(vs, 2 * (size_t)t->xs.rank));
        cJSON_AddItemToObject(view, "strides", pass_json_ints(vst, 2 * (size_t)t->xs.rank));
    }
    uint64_t tb = t->t_numel * t->esize;
    pass_add_number(a, "bytes_before", (double)tb);
    pass_add_number(a, "bytes_after", (double)bytes_after);
    pass_add_number(a, "tile_bytes_not_materialized", (double)saved);
    pass_add_number(a, "elements_before", (double)el_before);
    pass_add_number(a, "elements_after", (double)el_after);
    return a;
}

/* A consumer rewrite: T itself is no longer materialized for this reader. */
static void fz_report(fz_state *st, const fz_tile *t, int32_t ci, int rule,
                      const char *rule_name, uint64_t el_before, uint64_t el_after,
                      uint64_t bytes_after) {
    fz_report_as(st, t, ci, "fused", rule, rule_name, el_before, el_after, bytes_after,
                 t->t_numel * t->esize);
}

/* Rules 2 and 3: C(.., T, ..) -> Tile(C(.., x, ..), r). */
static int fz_sink(fz_state *st, const fz_tile *t, const fz_plan *p) {
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

/* A static shape as an int64 initializer. */
static int fz_shape_init(fz_state *st, const char *hint, const dim *d, int32_t rank,
                         const char **name) {
    int64_t n = rank, v[FZ_MAX_RANK];
    fz_nums(d, rank, v);
    return graph_add_initializer(st->g, hint, DT_INT64, &n, 1, v,
                                 (size_t)rank * sizeof *v, name, st->pc->err);
}

/* Rule 4: B(T, y) -> Reshape(B(x', y'), shape(T)). */
static int fz_split(fz_state *st, const fz_tile *t, const fz_plan *p) {
    graph *g = st->g;
    pass_ctx *pc = st->pc;
    const Onnx__NodeProto *c = graph_node(g, p->node);
    bool on0 = strcmp(c->input[0], t->out) == 0;
    const char *y = on0 ? c->input[1] : c->input[0];
    dim xd[FZ_MAX_RANK], yd[FZ_MAX_RANK];
    int32_t r = 0;
    for (int32_t i = 0; i < t->xs.rank; i++) {
        int64_t ri = t->r[i].n, di = t->xs.d[i].n; /* fz_splittable: numbers */
        if (ri > 1 && di > 1) {
            xd[r] = dim_num(1);
            yd[r++] = dim_num(ri);
        }
        xd[r] = dim_num(di);
        yd[r++] = dim_num(di * (ri > 1 && di > 1 ? 1 : ri));
    }
    int32_t elem = fz_out_elem(st, c, fz_elementwise(c)->out, t);
    fz_shape ys;
    int32_t yelem = fz_shape_of(g, y, &ys) ? ys.elem : 0;
    fz_report(st, t, p->node, 4, "split repeat axes, broadcast x", t->t_numel,
              t->t_numel, 0);

    const char *xs_n, *ys_n, *ts_n;
    int rc;
    if ((rc = fz_shape_init(st, "fuse_x_shape", xd, r, &xs_n)) ||
        (rc = fz_shape_init(st, "fuse_y_shape", yd, r, &ys_n)) ||
        (rc = fz_shape_init(st, "fuse_out_shape", t->t, t->xs.rank, &ts_n)))
        return rc;
    const char *op = c->op_type, *cout = c->output[0];
    const char *xr = fz_hint(g, p->node, "x_split");
    const char *yr = fz_hint(g, p->node, "y_split");
    const char *br = fz_hint(g, p->node, "split_out");
    if (!xr || !yr || !br) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    Onnx__NodeProto *keep = graph_node(g, p->node);
    graph_remove_node(g, p->node);
    const char *in_x[2] = {t->x, xs_n}, *in_y[2] = {y, ys_n};
    const char *in_b[2] = {on0 ? xr : yr, on0 ? yr : xr}, *in_o[2] = {br, ts_n};
    int32_t ni;
    Onnx__NodeProto *nb;
    if (!graph_add_node(g, "Reshape", fz_hint(g, p->node, "reshape_x"), in_x, 2, &xr, 1,
                        &ni) ||
        !graph_add_node(g, "Reshape", fz_hint(g, p->node, "reshape_y"), in_y, 2, &yr, 1,
                        &ni) ||
        !(nb = graph_add_node(g, op, fz_hint(g, p->node, "split"), in_b, 2, &br, 1,
                              &ni)) ||
        !graph_add_node(g, "Reshape", fz_hint(g, p->node, "reshape_out"), in_o, 2, &cout,
                        1, &ni))
        return err_set(pc->err, TILEOPT_NOMEM, "fuse: cannot add nodes for %s", op);
    if ((rc = fz_copy_attrs(g, nb, keep)))
        return err_set(pc->err, rc, "fuse: cannot copy attributes of %s", op);
    if ((rc = fz_set_type(st, xr, t->xs.elem, xd, r)) ||
        (rc = fz_set_type(st, yr, yelem, yd, r)) ||
        (rc = fz_set_type(st, br, elem, yd, r)))
        return rc;
    return fz_grow_nodes(st);
}

/* Rule 6: Shape(T) -> Mul(Shape(x), r). T's shape is x's times the repeats,
** so a reader that wants only the shape (zeros_like of a Tile, as DETR's
** decoder target is) no longer keeps T alive. */
static int fz_shape_reader(fz_state *st, const fz_tile *t, const fz_plan *p) {
    graph *g = st->g;
    const Onnx__NodeProto *c = graph_node(g, p->node);
    const char *cout = c->output[0];
    const char *sx = fz_hint(g, p->node, "input_shape");
    const char *sname = fz_hint(g, p->node, "of_input"), *mname = fz_hint(g, p->node, "mul");
    if (!sx || !sname || !mname) return err_set(st->pc->err, TILEOPT_NOMEM, "out of memory");
    fz_report_as(st, t, p->node, "fused", 6, "Shape of a Tile from its input's shape",
                 (uint64_t)t->xs.rank, (uint64_t)t->xs.rank, 0, t->t_numel * t->esize);
    graph_remove_node(g, p->node);
    int32_t ni;
    int rc;
    /* a static input shape is a constant, not a Shape node for fold to find */
    if (dims_static(t->xs.d, t->xs.rank)) {
        if ((rc = fz_shape_init(st, sx, t->xs.d, t->xs.rank, &sx))) return rc;
    } else if (!graph_add_node(g, "Shape", sname, &t->x, 1, &sx, 1, &ni)) {
        return err_set(st->pc->err, TILEOPT_NOMEM, "fuse: cannot add Shape");
    }
    const char *mul_in[2] = {sx, t->reps};
    if (!graph_add_node(g, "Mul", mname, mul_in, 2, &cout, 1, &ni))
        return err_set(st->pc->err, TILEOPT_NOMEM, "fuse: cannot add Mul");
    fz_note_foldable(st->pc, g, mul_in, 2);
    dim rank = dim_num(t->xs.rank);
    if (!dims_static(t->xs.d, t->xs.rank) && (rc = fz_set_type(st, sx, DT_INT64, &rank, 1)))
        return rc;
    return fz_grow_nodes(st);
}

/* ------------------------------------------------------------ per Tile */

static int fz_tile_step(fz_state *st, int32_t ti) {
    graph *g = st->g;
    pass_ctx *pc = st->pc;
    if (graph_node_removed(g, ti) || !graph_node_is(graph_node(g, ti), "Tile"))
        return TILEOPT_OK;
    fz_tile t;
    char why[320];
    int rc = fz_read_tile(pc, g, ti, &t, why, sizeof why);
    if (rc < 0) return -rc;
    if (rc) return fz_set_why(st, ti, why);
    bool is_out = graph_value_is_output(g, t.out);

    graph_value *v = graph_find(g, t.out);
    uint32_t n_uses = v ? v->n_uses : 0;
    graph_use *uses = NULL;
    fz_plan *plans = NULL;
    uint32_t n_plans = 0;
    if (n_uses) {
        uses = malloc(n_uses * sizeof *uses);
        plans = malloc(n_uses * sizeof *plans);
        if (!uses || !plans) {
            rc = err_set(pc->err, TILEOPT_NOMEM, "out of memory");
            goto done;
        }
        memcpy(uses, v->uses, n_uses * sizeof *uses);
    }
    if ((rc = fz_grow_nodes(st))) goto done;
    st->step++;
    char block_buf[320], out_why[320];
    const char *block = NULL;
    if (is_out) {
        /* say what the output is: a real tiling stays whatever rule 5 finds */
        char rs[160];
        fz_shape_str(rs, sizeof rs, t.r, t.xs.rank);
        snprintf(out_why, sizeof out_why, "it is a graph output%s%s",
                 fz_is_broadcast(&t) ? "" : ": a real tiling, repeats ",
                 fz_is_broadcast(&t) ? "" : rs);
        block = out_why;
    }
    for (uint32_t k = 0; k < n_uses; k++) {
        int32_t ci = uses[k].node;
        if (ci < 0) {
            block = "it is an output of its graph";
            continue;
        }
        if (graph_node_removed(g, ci)) continue;
        if (uses[k].input < 0) {
            snprintf(block_buf, sizeof block_buf, "it is read inside a subgraph of %s",
                     graph_node_id(g, ci));
            block = block_buf;
            continue;
        }
        if (st->stamp[ci] == st->step) continue;
        st->stamp[ci] = st->step;
        fz_plan *p = &plans[n_plans++];
        if ((rc = fz_plan_consumer(st, &t, ci, p))) goto done;
        if (p->kind == P_NONE && !block) {
            fz_strlcpy(block_buf, sizeof block_buf, p->why);
            block = block_buf;
        }
    }
    /* Sinking past one reader while another keeps T would materialize twice. */
    if (block) {
        for (uint32_t k = 0; k < n_plans; k++) {
            fz_plan *p = &plans[k];
            if (p->kind != P_R2 && p->kind != P_R3C && p->kind != P_R3T) continue;
            if (p->r4_ok) {
                p->kind = P_R4;
                continue;
            }
            p->kind = P_NONE;
            snprintf(p->why, sizeof p->why, "not sunk past %s: the Tile stays because %s",
                     graph_node_id(g, p->node), block);
        }
    }
    const char *first_why = NULL;
    for (uint32_t k = 0; k < n_plans; k++) {
        fz_plan *p = &plans[k];
        switch (p->kind) {
        case P_R1: {
            const Onnx__NodeProto *c = graph_node(g, p->node);
            dim cs[FZ_MAX_RANK];
            int32_t cr;
            uint64_t el = t.fixed && fz_elementwise(c) && fz_consumer_out(st, &t, c, cs, &cr) &&
                                  dims_static(cs, cr)
                              ? fz_numel(cs, cr)
                              : 0;
            fz_report(st, &t, p->node, 1,
                      fz_elementwise(c) ? "redundant Tile: the op broadcasts x itself"
                                        : "redundant Tile: MatMul broadcasts the batch dims "
                                          "itself",
                      el, el, 0);
            for (size_t s = 0; s < c->n_input; s++)
                if (strcmp(c->input[s], t.out) == 0 &&
                    (rc = graph_node_set_input(g, p->node, s, t.x)))
                    goto done;
            break;
        }
        case P_R2:
        case P_R3C:
        case P_R3T:
            if ((rc = fz_sink(st, &t, p))) goto done;
            break;
        case P_R4:
            if ((rc = fz_split(st, &t, p))) goto done;
            break;
        case P_R6:
            if ((rc = fz_shape_reader(st, &t, p))) goto done;
            break;
        default:
            if (!first_why) first_why = p->why;
            continue;
        }
        pc->changed = true;
    }
    if (!is_out && !fz_live_uses(g, t.out)) {
        if (!n_plans) {
            /* nothing read it to begin with */
            cJSON *a = pass_action(pc, g, ti, "eliminated");
            if (a) cJSON_AddStringToObject(a, "rule_name", "Tile nobody reads");
        }
        graph_remove_node(g, ti);
        pc->changed = true;
        rc = fz_set_why(st, ti, NULL);
    } else {
        rc = fz_set_why(st, ti, first_why ? first_why : block ? block : "kept");
    }
done:
    free(uses);
    free(plans);
    return rc;
}

#if FUSE_RULE5
/* Rule 5's guard (see FUSE_EXPAND_MIN_REPEATS): axes of size 1 that do not
** repeat change nothing, so the last of the others must be a size-1 axis
** repeated often enough, and the one before it must not repeat. 0 when it
** pays, 1 when it does not, 2 when only the count is unknown (a named dim). */
static int fz_expand_pays(const fz_tile *t) {
    int32_t last = -1, prev = -1;
    for (int32_t i = 0; i < t->xs.rank; i++) {
        if (dim_is(t->xs.d[i], 1) && dim_is(t->r[i], 1)) continue;
        prev = last;
        last = i;
    }
    if (last < 0 || !dim_is(t->xs.d[last], 1) || (prev >= 0 && !dim_is(t->r[prev], 1)))
        return 1;
    dim r = t->r[last];
    return !dim_is_num(r) ? 2 : r.n >= FUSE_EXPAND_MIN_REPEATS ? 0 : 1;
}

/* Rule 5: a Tile left over size-1 axes is Expand, the stride-0 view. Sets
** *declined (1, or 2 when the deciding count is not a number) when the Tile is
** such a broadcast but the guard keeps it.
** Expand(x, r) is Tile(x, r) exactly when every repeated axis of x has size 1
** (an axis with r_i = 1 keeps its size in both), so the Tile's own repeats
** value is the shape, named dims and all. */
static int fz_expand(fz_state *st, int32_t ti, const char *why_kept, int *declined) {
    graph *g = st->g;
    fz_tile t;
    char why[320];
    *declined = 0;
    int rc = fz_read_tile(st->pc, g, ti, &t, why, sizeof why);
    if (rc) return rc < 0 ? -rc : TILEOPT_OK;
    for (int32_t i = 0; i < t.xs.rank; i++)
        if (dim_is(t.r[i], 0) || (!dim_is(t.r[i], 1) && !dim_is(t.xs.d[i], 1)))
            return TILEOPT_OK;
    if ((*declined = fz_expand_pays(&t))) return TILEOPT_OK;
    /* Expand writes the same bytes in a runtime that materializes it; ours and
    ** any runtime with stride-0 views need not. */
    uint64_t tb = t.t_numel * t.esize;
    cJSON *a = fz_report_as(st, &t, ti, "rewritten", 5, "Tile over size-1 axes -> Expand",
                            t.t_numel, t.t_numel, tb, 0);
    if (a && why_kept) cJSON_AddStringToObject(a, "kept_because", why_kept);
    const char *x = t.x, *out = t.out;
    graph_remove_node(g, ti);
    const char *in[2] = {x, t.reps};
    int32_t ni;
    if (!graph_add_node(g, "Expand", fz_hint(g, ti, "expand"), in, 2, &out, 1, &ni))
        return err_set(st->pc->err, TILEOPT_NOMEM, "fuse: cannot add Expand");
    st->pc->changed = true;
    return fz_set_why(st, ti, NULL);
}
#endif

static int fz_graph(pass_ctx *pc, graph *g) {
    fz_state st = {.pc = pc, .g = g, .opset = graph_opset(g->model, "")};
    int rc = fz_grow_nodes(&st);
    uint32_t n0 = graph_n_nodes(g);
    for (uint32_t i = 0; !rc && i < n0; i++)
        if (!graph_node_removed(g, (int32_t)i) && graph_node_is(graph_node(g, (int32_t)i), "Tile"))
            rc = fz_push(&st, (int32_t)i);
    /* LIFO: a Tile a rewrite creates is handled next, sinking it down the chain. */
    uint64_t steps = 0;
    while (!rc && st.n_work) {
        rc = fz_tile_step(&st, st.work[--st.n_work]);
        /* the worklist grows while it drains: total is done + still queued */
        if (++steps % 4096 == 0) pass_progress(pc, "fuse", steps, steps + st.n_work);
    }
    if (!rc && steps >= 4096) pass_progress(pc, "fuse", steps, steps); /* reaches 100% */
    uint32_t n1 = graph_n_nodes(g);
    for (uint32_t i = 0; !rc && i < n1; i++) {
        if (graph_node_removed(g, (int32_t)i) || !graph_node_is(graph_node(g, (int32_t)i), "Tile"))
            continue;
        const char *why = i < st.cap_nodes ? st.why[i] : NULL;
        int declined = 0;
#if FUSE_RULE5
        if (st.opset >= 8 && (rc = fz_expand(&st, (int32_t)i, why, &declined))) break;
        if (graph_node_removed(g, (int32_t)i)) continue;
#endif
        if (declined)
            pass_skip(pc, g, (int32_t)i,
                      "%s%snot made Expand (rule 5): ONNX Runtime runs Expand slower than "
                      "Tile unless the innermost axis alone repeats a size-1 axis %d or "
                      "more times%s", why ? why : "", why ? "; " : "",
                      FUSE_EXPAND_MIN_REPEATS,
                      declined == 2 ? ", and that count is not known before run time" : "");
        else if (why)
            pass_skip(pc, g, (int32_t)i, "%s", why);
    }
    for (size_t i = 0; i < st.cap_nodes; i++) free(st.why[i]);
    free(st.why);
    free(st.stamp);
    free(st.work);
    return rc;
}

int pass_fuse(pass_ctx *pc) {
    /* Types the model declares come from the loader; inference adds the rest. */
    int rc = infer_shapes(pc->model, pc->err);
    if (rc) return rc;
    rc = pass_for_each_graph(pc, pc->model->main, fz_graph);
    if (rc) return rc;
    return pc->changed ? graph_commit(pc->model->main, pc->err) : TILEOPT_OK;
}

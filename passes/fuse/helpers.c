/*
** What the fuse pass's rules share: shapes as dims, reading a Tile, the pass
** state, and the pieces each rewrite builds and reports with.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/const.h"
#include "passes/fuse/fuse_impl.h"

/* ------------------------------------------------------------- op table */

/* The consumer's row in the op table when it is an elementwise op (graph/ops.h:
** kind, output type, broadcasting and the opset it starts at), else NULL. */
const op_info *fz_elementwise(const Onnx__NodeProto *n) {
    op_id op = op_of(n);
    if (op == OP_NONE || op_table[op].kind == OPK_OTHER) return NULL;
    return &op_table[op];
}

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

/* Elements of a static shape (the callers have checked it fits). */
uint64_t fz_numel(const dim *d, int32_t rank) {
    uint64_t n = 1;
    for (int32_t i = 0; i < rank; i++) n *= (uint64_t)d[i].n;
    return n;
}

/* The numbers of a static shape. */
void fz_nums(const dim *d, int32_t rank, int64_t *out) {
    for (int32_t i = 0; i < rank; i++) out[i] = d[i].n;
}

/* Shape of a value (this or an enclosing scope) whose rank shape inference
** knows; its dims may be named or unknown. */
bool fz_shape_of(graph *g, const char *name, fz_shape *s) {
    graph_value *v = name ? graph_resolve(g, name) : NULL;
    if (!v || v->type.rank < 0 || v->type.rank > FZ_MAX_RANK) return false;
    s->rank = v->type.rank;
    s->elem = v->type.elem;
    for (int32_t i = 0; i < s->rank; i++) s->d[i] = dim_at(&v->type, i);
    return true;
}

/* "[2,N,?]" */
void fz_shape_str(char *buf, size_t cap, const dim *d, int32_t rank) {
    size_t k = (size_t)snprintf(buf, cap, "[");
    if (k < cap) k += dims_print(buf + k, cap - k, d, rank);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

/* Dims for a report: numbers, named dims as strings, unknown as null. */
void fz_json_dims(json_w *a, const char *key, const dim *d, int32_t rank) {
    json_key(a, key);
    json_array(a);
    for (int32_t i = 0; i < rank; i++) {
        if (dim_is_num(d[i])) json_int(a, d[i].n);
        else if (dim_is_named(d[i])) json_str(a, d[i].sym);
        else json_null(a);
    }
    json_end(a);
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
    int rc = tensor_from_proto(g->model, tp, &pc->eval, &rt, pc->err);
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
bool fz_input_constant(graph *g, const char *name) {
    graph_const c;
    return !name || graph_const_find(g, name, &c);
}

/* A new node whose inputs are all constant is fold's to compute: say so, so the
** run reaches its fixed point (a second optimize would fold it). */
void fz_note_foldable(pass_ctx *pc, graph *g, const char *const *ins, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (!fz_input_constant(g, ins[k])) return;
    pc->wake = true;
}

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
int fz_read_tile(pass_ctx *pc, graph *g, int32_t i, fz_tile *t,
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
bool fz_is_broadcast(const fz_tile *t) {
    for (int32_t i = 0; i < t->xs.rank; i++)
        if (!dim_is(t->r[i], 1) && !dim_is(t->xs.d[i], 1)) return false;
    return true;
}

void fz_strlcpy(char *dst, size_t cap, const char *src) {
    size_t n = strlen(src);
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

int fz_grow_nodes(fz_state *st) {
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

int fz_push(fz_state *st, int32_t node) {
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

int fz_set_why(fz_state *st, int32_t node, const char *why) {
    int rc = fz_grow_nodes(st);
    if (rc) return rc;
    free(st->why[node]);
    st->why[node] = NULL;
    if (why && !(st->why[node] = strdup(why)))
        return err_set(st->pc->err, TILEOPT_NOMEM, "out of memory");
    return TILEOPT_OK;
}

/* Live readers of a value in this graph (slot -1: read inside a subgraph). */
uint32_t fz_live_uses(graph *g, const char *name) {
    graph_value *v = graph_find(g, name);
    uint32_t n = 0;
    for (uint32_t k = 0; v && k < v->n_uses; k++)
        if (v->uses[k].node < 0 || !graph_node_removed(g, v->uses[k].node)) n++;
    return n;
}

/* ------------------------------------------------------------- planning */

/* Shape of the consumer's output before the rewrite, for the report. */
bool fz_consumer_out(fz_state *st, const fz_tile *t, const Onnx__NodeProto *c,
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

bool fz_attrs_copyable(const Onnx__NodeProto *n) {
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

int fz_copy_attrs(graph *g, Onnx__NodeProto *dst, const Onnx__NodeProto *src) {
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

/* ------------------------------------------------------------- rewrites */

int fz_set_type(fz_state *st, const char *name, int32_t elem, const dim *d,
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
int32_t fz_out_elem(fz_state *st, const Onnx__NodeProto *c, op_out out,
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

const char *fz_hint(graph *g, int32_t node, const char *suffix) {
    const Onnx__NodeProto *n = graph_node(g, node);
    char buf[256];
    snprintf(buf, sizeof buf, "%s_%s",
             n->name && n->name[0] ? n->name : n->op_type, suffix);
    return graph_unique_name(g, buf);
}

json_w *fz_report_as(fz_state *st, const fz_tile *t, int32_t ci, const char *action,
                    int rule, const char *rule_name, uint64_t el_before,
                    uint64_t el_after, uint64_t bytes_after, uint64_t saved) {
    json_w *a = pass_action(st->pc, st->g, ci, action);
    if (!a) return NULL;
    json_put_num(a, "rule", rule);
    json_put_str(a, "rule_name", rule_name); /* every caller's is a literal */
    pass_log_tile(st->pc->log, graph_node_id(st->g, t->node));
    /* "repeats" holds numbers only; repeats with named or unknown entries go
    ** under their own key, and sizes are then unknown */
    fz_json_dims(a, dims_static(t->r, t->xs.rank) ? "repeats" : "repeats_symbolic", t->r,
                 t->xs.rank);
    fz_json_dims(a, "input_shape", t->xs.d, t->xs.rank);
    fz_json_dims(a, "tiled_shape", t->t, t->xs.rank);
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
    json_key(a, "view");
    json_object(a);
    json_put_ints(a, "shape", vs, 2 * (size_t)t->xs.rank);
    json_put_ints(a, "strides", vst, 2 * (size_t)t->xs.rank);
    json_end(a);
    uint64_t tb = t->t_numel * t->esize;
    json_put_num(a, "bytes_before", (double)tb);
    json_put_num(a, "bytes_after", (double)bytes_after);
    json_put_num(a, "tile_bytes_not_materialized", (double)saved);
    json_put_num(a, "elements_before", (double)el_before);
    json_put_num(a, "elements_after", (double)el_after);
    return a;
}

/* A consumer rewrite: T itself is no longer materialized for this reader. */
void fz_report(fz_state *st, const fz_tile *t, int32_t ci, int rule,
               const char *rule_name, uint64_t el_before, uint64_t el_after,
               uint64_t bytes_after) {
    fz_report_as(st, t, ci, "fused", rule, rule_name, el_before, el_after, bytes_after,
                 t->t_numel * t->esize);
}

/* A static shape as an int64 initializer. */
int fz_shape_init(fz_state *st, const char *hint, const dim *d, int32_t rank,
                  const char **name) {
    int64_t n = rank, v[FZ_MAX_RANK];
    fz_nums(d, rank, v);
    return graph_add_initializer(st->g, hint, DT_INT64, &n, 1, v,
                                 (size_t)rank * sizeof *v, name, st->pc->err);
}

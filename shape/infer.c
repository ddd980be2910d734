/*
** Shape inference. One walk per graph in topological order; each node's op has an
** infer function in a table. Besides types, small integer tensors whose values
** are known at compile time ("shape values": initializers, Constant nodes, and
** what Shape/Gather/Slice/Concat/Unsqueeze/Cast/arithmetic make of them) are
** tracked entry by entry as shape values (shape/dim.h), an entry being a dim: a
** number, a named dim, or unknown. That is what turns Reshape/Tile/Expand inputs
** computed from Shape into known dims.
*/
#include "shape/infer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/const.h"
#include "graph/ops.h"
#include "shape/infer_impl.h"

typedef struct value_scope {
    graph *g;
    shape_value **iv;        /* per value index */
    uint8_t *tried;          /* initializer values read already */
    struct value_scope *parent;
} value_scope;

typedef struct infer_run {
    graph_model *m;
    arena *tmp;              /* tracked values and per-scope tables of this run */
    int64_t opset;
    bool strict;             /* conflicts with declared types are errors */
    errbuf *err;
    build_type *outs;               /* per-node output scratch */
    shape_value **outv;
    size_t cap_outs;
    const graph_type **ins;
    const shape_value **inv;
    size_t cap_ins;
    /* The shapes stored so far (see type_store): open addressing, power of two. */
    struct stored_shape *shapes;
    uint32_t n_shapes, cap_shapes;
} infer_run;

/* A network's values share a handful of shapes ([N, 768] a thousand times), so
** a run stores each distinct dims (and syms) array once, in the model's arena,
** and values point at it: at 400k values that is 13 MB less. Nothing writes
** into a stored type's arrays; a type that changes gets new ones. */
typedef struct stored_shape {
    uint32_t hash;
    int32_t rank;
    int64_t *dims;
    const char **syms;       /* NULL when no dim is named */
} stored_shape;

static uint32_t shape_hash(const build_type *o) {
    uint32_t h = graph_hash_bytes(GRAPH_HASH_SEED, &o->rank, sizeof o->rank);
    for (int32_t i = 0; i < o->rank; i++) {
        int64_t n = dim_stored_n(o->d[i]);
        const char *s = dim_stored_sym(o->d[i]);
        h = graph_hash_bytes(h, &n, sizeof n);
        if (s) h = graph_hash_bytes(h, s, strlen(s));
    }
    return h;
}

static bool shape_is(const stored_shape *e, const build_type *o, bool any_sym) {
    if (e->rank != o->rank || (e->syms != NULL) != any_sym) return false;
    for (int32_t i = 0; i < o->rank; i++) {
        if (e->dims[i] != dim_stored_n(o->d[i])) return false;
        const char *a = e->syms ? e->syms[i] : NULL, *b = dim_stored_sym(o->d[i]);
        if (a != b && (!a || !b || strcmp(a, b) != 0)) return false;
    }
    return true;
}

static bool shapes_grow(infer_run *r) {
    uint32_t cap = r->cap_shapes ? r->cap_shapes * 2 : 256;
    stored_shape *t = calloc(cap, sizeof *t);
    if (!t) return false;
    for (uint32_t i = 0; i < r->cap_shapes; i++) {
        if (!r->shapes[i].dims) continue;
        uint32_t k = r->shapes[i].hash & (cap - 1);
        while (t[k].dims) k = (k + 1) & (cap - 1);
        t[k] = r->shapes[i];
    }
    free(r->shapes);
    r->shapes = t;
    r->cap_shapes = cap;
    return true;
}

/* Store o into t: its dims and syms in the model's arena, shared with every
** value of this run that has the same. */
static int type_store(infer_run *r, const build_type *o, graph_type *t) {
    t->elem = o->elem;
    t->rank = o->rank;
    t->dims = NULL;
    t->syms = NULL;
    if (o->rank <= 0) return TILEOPT_OK;
    bool any_sym = false;
    for (int32_t i = 0; i < o->rank; i++)
        if (dim_is_named(o->d[i])) any_sym = true;
    uint32_t h = shape_hash(o);
    if ((uint64_t)(r->n_shapes + 1) * 2 > r->cap_shapes && !shapes_grow(r))
        return err_set(r->err, TILEOPT_NOMEM, "shape inference: out of memory");
    uint32_t k = h & (r->cap_shapes - 1);
    for (; r->shapes[k].dims; k = (k + 1) & (r->cap_shapes - 1))
        if (r->shapes[k].hash == h && shape_is(&r->shapes[k], o, any_sym)) {
            t->dims = r->shapes[k].dims;
            t->syms = r->shapes[k].syms;
            return TILEOPT_OK;
        }
    arena *a = r->m->arena;
    t->dims = arena_alloc(a, (size_t)o->rank * sizeof *t->dims);
    if (!t->dims) return err_set(r->err, TILEOPT_NOMEM, "shape inference: out of memory");
    for (int32_t i = 0; i < o->rank; i++) t->dims[i] = dim_stored_n(o->d[i]);
    if (any_sym) {
        t->syms = arena_calloc(a, (size_t)o->rank, sizeof *t->syms);
        if (!t->syms) return err_set(r->err, TILEOPT_NOMEM, "shape inference: out of memory");
        for (int32_t i = 0; i < o->rank; i++) t->syms[i] = dim_stored_sym(o->d[i]);
    }
    r->shapes[k] = (stored_shape){h, o->rank, t->dims, t->syms};
    r->n_shapes++;
    return TILEOPT_OK;
}

/* Keep iv on the value (model arena) when it is an integer tensor of at most
** SHAPE_VALUE_MAX entries, every one a number or a named dim. */
static int shape_value_store(graph_model *m, const shape_value *iv, graph_value *v,
                             errbuf *err) {
    v->shape_value = NULL;
    if (!iv || iv->f || iv->rank > 1 || iv->n < 1 || iv->n > SHAPE_VALUE_MAX) return TILEOPT_OK;
    for (int32_t k = 0; k < iv->n; k++)
        if (dim_is_unknown(iv->e[k])) return TILEOPT_OK;
    shape_value *sv = arena_alloc(m->arena, sizeof *sv);
    dim *e = sv ? arena_alloc(m->arena, (size_t)iv->n * sizeof *e) : NULL;
    if (!e) return err_set(err, TILEOPT_NOMEM, "shape inference: out of memory");
    memcpy(e, iv->e, (size_t)iv->n * sizeof *e);
    *sv = (shape_value){.elem = iv->elem, .rank = iv->rank, .n = iv->n, .e = e};
    v->shape_value = sv;
    return TILEOPT_OK;
}

/* "float[2,N,?]"; a number that is no size prints as unknown. */
static const char *type_str(int32_t elem, int32_t rank, const dim *d, char *buf, size_t cap) {
    if (!cap) return buf;
    size_t len = (size_t)snprintf(buf, cap, "%s", elem ? dtype_name(elem) : "?");
    if (len >= cap) return buf;
    if (rank < 0) {
        snprintf(buf + len, cap - len, "[unknown shape]");
        return buf;
    }
    len += (size_t)snprintf(buf + len, cap - len, "[");
    dim sizes[IR_MAX];
    for (int32_t i = 0; i < rank; i++) sizes[i] = dim_size(d[i]);
    if (len < cap) len += dims_print(buf + len, cap - len, sizes, rank);
    if (len < cap) snprintf(buf + len, cap - len, "]");
    return buf;
}

/* --------------------------------------------------------- control flow */

/* If: each output is what both branches agree on (the driver has inferred the
** branches first). */
static void inf_if(node_ctx *c) {
    const Onnx__AttributeProto *ta = graph_attr(c->n, "then_branch");
    const Onnx__AttributeProto *ea = graph_attr(c->n, "else_branch");
    if (!ta || !ea || !ta->g || !ea->g) return;
    graph *tg = NULL, *eg = NULL;
    for (graph *s = graph_node_subgraphs(c->g, c->idx); s; s = s->next_sibling) {
        if (s->pb == ta->g) tg = s;
        if (s->pb == ea->g) eg = s;
    }
    if (!tg || !eg) return;
    for (size_t k = 0; k < c->n_out; k++) {
        if (k >= tg->pb->n_output || k >= eg->pb->n_output) break;
        graph_value *tv = graph_find(tg, tg->pb->output[k]->name);
        graph_value *ev = graph_find(eg, eg->pb->output[k]->name);
        if (!tv || !ev) continue;
        tv = graph_value_home(tg, tv, NULL);
        ev = graph_value_home(eg, ev, NULL);
        const graph_type *a = &tv->type, *b = &ev->type;
        build_type *o = &c->out[k];
        o->elem = a->elem == b->elem ? a->elem : 0;
        if (!has_rank(a) || !has_rank(b) || a->rank != b->rank) continue;
        type_set_rank(o, a->rank);
        for (int32_t i = 0; i < a->rank; i++)
            if (dim_eq(dim_at(a, i), dim_at(b, i))) o->d[i] = dim_at(a, i);
    }
}

/* Loop/Scan: element types only where the schema ties them to inputs. */
static void inf_loop(node_ctx *c) {
    /* Loop outputs: carried values keep their element type (inputs 2..). */
    for (size_t k = 0; k < c->n_out; k++)
        if (k + 2 < c->n_in) c->out[k].elem = in_elem(c, k + 2);
}

/* ---------------------------------------------------------------- rules */

/*
** Ops with a rule of their own. Elementwise ops without a row here get theirs from
** the op table (graph/ops.h): unary ops keep their input's type and shape (bool
** for IsNaN/IsInf), broadcasting ops broadcast their inputs, comparisons give
** bool. Arithmetic keeps a row to track shape values through it.
*/
static const infer_fn infer_hooks[OP_COUNT] = {
    [OP_Add] = inf_arith, [OP_ArgMax] = inf_argreduce, [OP_ArgMin] = inf_argreduce,
    [OP_AveragePool] = inf_pool, [OP_BatchNormalization] = inf_batchnorm,
    [OP_Cast] = inf_cast, [OP_CastLike] = inf_castlike, [OP_Concat] = inf_concat,
    [OP_Constant] = inf_constant, [OP_ConstantOfShape] = inf_constant_of_shape,
    [OP_Conv] = inf_conv, [OP_ConvTranspose] = inf_conv_transpose, [OP_CumSum] = inf_same,
    [OP_DepthToSpace] = inf_depth_space, [OP_Div] = inf_arith, [OP_Dropout] = inf_dropout,
    [OP_Expand] = inf_expand, [OP_EyeLike] = inf_eyelike, [OP_Flatten] = inf_flatten,
    [OP_DFT] = inf_dft, [OP_Gather] = inf_gather, [OP_GatherElements] = inf_gather_elements,
    [OP_GridSample] = inf_grid_sample, [OP_ScatterElements] = inf_same,
    [OP_ScatterND] = inf_same,
    [OP_Gemm] = inf_gemm, [OP_GlobalAveragePool] = inf_global_pool,
    [OP_GlobalLpPool] = inf_global_pool, [OP_GlobalMaxPool] = inf_global_pool,
    [OP_Hardmax] = inf_same, [OP_Identity] = inf_identity, [OP_If] = inf_if,
    [OP_InstanceNormalization] = inf_same, [OP_LRN] = inf_same,
    [OP_LayerNormalization] = inf_layernorm, [OP_LogSoftmax] = inf_same,
    [OP_Loop] = inf_loop, [OP_LpNormalization] = inf_same, [OP_LpPool] = inf_pool,
    [OP_MatMul] = inf_matmul, [OP_MaxPool] = inf_pool,
    [OP_MeanVarianceNormalization] = inf_same, [OP_Mul] = inf_arith,
    [OP_NonZero] = inf_nonzero, [OP_PRelu] = inf_prelu, [OP_Pad] = inf_pad,
    [OP_Range] = inf_range, [OP_ReduceL1] = inf_reduce, [OP_ReduceL2] = inf_reduce,
    [OP_ReduceLogSum] = inf_reduce, [OP_ReduceLogSumExp] = inf_reduce,
    [OP_ReduceMax] = inf_reduce, [OP_ReduceMean] = inf_reduce, [OP_ReduceMin] = inf_reduce,
    [OP_ReduceProd] = inf_reduce, [OP_ReduceSum] = inf_reduce,
    [OP_ReduceSumSquare] = inf_reduce, [OP_Reshape] = inf_reshape,
    [OP_Resize] = inf_resize, [OP_Shape] = inf_shape, [OP_Size] = inf_size,
    [OP_Slice] = inf_slice, [OP_Softmax] = inf_same, [OP_SpaceToDepth] = inf_depth_space,
    [OP_Split] = inf_split, [OP_Squeeze] = inf_squeeze, [OP_Sub] = inf_arith,
    [OP_Tile] = inf_tile, [OP_TopK] = inf_topk, [OP_Transpose] = inf_transpose,
    [OP_Trilu] = inf_same, [OP_Unsqueeze] = inf_unsqueeze, [OP_Upsample] = inf_resize,
    [OP_Where] = inf_where, [OP_Equal] = inf_equal, [OP_Max] = inf_minmax,
    [OP_Min] = inf_minmax, [OP_RNN] = inf_rnn, [OP_GRU] = inf_rnn, [OP_LSTM] = inf_rnn,
    [OP_RoiAlign] = inf_roi_align, [OP_NonMaxSuppression] = inf_nms,
};

static infer_fn infer_lookup(const Onnx__NodeProto *n) {
    op_id op = op_of(n);
    if (op == OP_NONE) return NULL;
    if (infer_hooks[op]) return infer_hooks[op];
    const op_info *r = &op_table[op];
    switch (r->kind) {
    case OPK_UNARY:
        return r->out == OUT_BOOL ? inf_same_bool : r->out == OUT_LIKE_IN0 ? inf_same : NULL;
    case OPK_BINARY:
    case OPK_VARIADIC:
        return r->out == OUT_BOOL ? inf_compare : r->out == OUT_LIKE_IN0 ? inf_bcast : NULL;
    default:
        return NULL;
    }
}

/* ----------------------------------------------------------------- driver */

/* The tracked value behind a value entry (following outer-scope references). */
static const shape_value *value_ival(infer_run *r, value_scope *sc, graph_value *v) {
    graph *g;
    v = graph_value_home(sc->g, v, &g);
    value_scope *s = sc;
    while (s && s->g != g) s = s->parent;
    if (!s) return NULL;
    uint32_t i = (uint32_t)(v - g->values);
    if (i >= g->n_values) return NULL;
    /* an initializer the caller may override has a type but no known value */
    if (!s->iv[i] && v->initializer >= 0 && !s->tried[i] && graph_value_const(g, v)) {
        s->tried[i] = 1;
        s->iv[i] = sv_of_tensor(r->m, r->tmp, g->pb->initializer[v->initializer]);
    }
    return s->iv[i];
}

/* Declared type of a node output (value_info, or graph output), unknown if none. */
static void declared_type(graph *g, const graph_value *v, build_type *o) {
    type_unknown(o);
    if (v->value_info >= 0 && (size_t)v->value_info < g->pb->n_value_info)
        type_from_proto(g->pb->value_info[v->value_info]->type, o);
    else if (v->output >= 0 && (size_t)v->output < g->pb->n_output)
        type_from_proto(g->pb->output[v->output]->type, o);
}

/* Merge inferred `a` with declared `b` into a. Conflicts: strict -> error. */
static int merge_declared(infer_run *r, graph *g, const char *name, build_type *a, const build_type *b) {
    bool conflict = false;
    if (a->elem && b->elem && a->elem != b->elem) conflict = true;
    if (a->rank >= 0 && b->rank >= 0 && a->rank != b->rank) conflict = true;
    if (!conflict && a->rank >= 0 && b->rank >= 0)
        for (int32_t i = 0; i < a->rank; i++)
            if (is_size(a->d[i]) && is_size(b->d[i]) && a->d[i].n != b->d[i].n) conflict = true;
    if (conflict && r->strict) {
        char s1[256], s2[256];
        return err_set(r->err, TILEOPT_INVALID,
                       "value %s%s%s: inferred type %s conflicts with the declared %s", name,
                       g->parent ? " (in a subgraph of node " : "",
                       g->parent ? graph_node_id(g->parent, g->parent_node) : "",
                       type_str(a->elem, a->rank, a->d, s1, sizeof s1),
                       type_str(b->elem, b->rank, b->d, s2, sizeof s2));
    }
    if (!a->elem) a->elem = b->elem;
    else if (b->elem && a->elem != b->elem) a->elem = 0;
    if (a->rank < 0) {
        int32_t elem = a->elem;
        *a = *b;
        a->elem = elem;
        return TILEOPT_OK;
    }
    if (b->rank < 0) return TILEOPT_OK;
    if (a->rank != b->rank) {
        a->rank = -1;
        return TILEOPT_OK;
    }
    for (int32_t i = 0; i < a->rank; i++) {
        dim *x = &a->d[i], y = b->d[i];
        if (is_size(*x) && is_size(y) && x->n != y.n) *x = dim_unknown();
        else if (!is_size(*x) && (is_size(y) || (!dim_is_named(*x) && dim_is_named(y)))) *x = y;
    }
    return TILEOPT_OK;
}

static int grow_scratch(infer_run *r, size_t n_in, size_t n_out) {
    if (n_in > r->cap_ins) {
        size_t cap = n_in * 2;
        const graph_type **a = realloc(r->ins, cap * sizeof *a);
        if (!a) return err_set(r->err, TILEOPT_NOMEM, "shape inference: out of memory");
        r->ins = a;
        const shape_value **b = realloc(r->inv, cap * sizeof *b);
        if (!b) return err_set(r->err, TILEOPT_NOMEM, "shape inference: out of memory");
        r->inv = b;
        r->cap_ins = cap;
    }
    if (n_out > r->cap_outs) {
        size_t cap = n_out * 2;
        build_type *a = realloc(r->outs, cap * sizeof *a);
        if (!a) return err_set(r->err, TILEOPT_NOMEM, "shape inference: out of memory");
        r->outs = a;
        shape_value **b = realloc(r->outv, cap * sizeof *b);
        if (!b) return err_set(r->err, TILEOPT_NOMEM, "shape inference: out of memory");
        r->outv = b;
        r->cap_outs = cap;
    }
    return TILEOPT_OK;
}

static int infer_graph(infer_run *r, graph *g, value_scope *parent);

static int infer_node(infer_run *r, value_scope *sc, graph *g, int32_t idx) {
    Onnx__NodeProto *n = graph_node(g, idx);
    for (graph *s = graph_node_subgraphs(g, idx); s; s = s->next_sibling) {
        int rc = infer_graph(r, s, sc);
        if (rc) return rc;
    }
    /* Inference functions may read input slots past n_input (a hostile node can
    ** have fewer inputs than its op takes, as fuzz_load found for ConstantOfShape):
    ** spare slots that read NULL keep them in bounds. */
    enum { SPARE_SLOTS = 4 };
    int rc = grow_scratch(r, n->n_input + SPARE_SLOTS, n->n_output + 1);
    if (rc) return rc;
    node_ctx c = {.m = r->m, .tmp = r->tmp, .g = g, .idx = idx, .n = n, .opset = r->opset,
              .n_in = n->n_input, .in = r->ins, .inv = r->inv, .n_out = n->n_output,
              .out = r->outs, .outv = r->outv};
    for (size_t i = 0; i < n->n_input; i++) {
        graph_value *v = graph_node_in(g, idx, i);
        if (!v) {
            c.in[i] = NULL;
            c.inv[i] = NULL;
            continue;
        }
        c.in[i] = &graph_value_home(g, v, NULL)->type;
        c.inv[i] = value_ival(r, sc, v);
    }
    for (size_t i = n->n_input; i < n->n_input + SPARE_SLOTS; i++) {
        c.in[i] = NULL;
        c.inv[i] = NULL;
    }
    for (size_t k = 0; k < n->n_output; k++) {
        type_unknown(&c.out[k]);
        c.outv[k] = NULL;
    }
    infer_fn fn = infer_lookup(n);
    if (fn && n->n_output > 0) fn(&c);
    for (size_t k = 0; k < n->n_output; k++) {
        const char *name = n->output[k];
        graph_value *v = graph_node_out(g, idx, k);
        if (!v || v->outer >= 0) continue;
        build_type decl;
        declared_type(g, v, &decl);
        rc = merge_declared(r, g, name, &c.out[k], &decl);
        if (rc) return rc;
        rc = type_store(r, &c.out[k], &v->type);
        if (rc) return rc;
        uint32_t vi = (uint32_t)(v - g->values);
        /* a value is trusted only when the declared type agrees with its length */
        if (c.outv[k] && vi < g->n_values) sc->iv[vi] = c.outv[k];
        rc = shape_value_store(r->m, c.outv[k], v, r->err);
        if (rc) return rc;
    }
    return TILEOPT_OK;
}

static int infer_graph(infer_run *r, graph *g, value_scope *parent) {
    value_scope sc = {.g = g, .parent = parent};
    uint32_t nn = graph_n_nodes(g);
    /* per-value tables are big on big graphs: malloc, not the scratch arena */
    sc.iv = calloc(g->n_values ? g->n_values : 1, sizeof *sc.iv);
    sc.tried = calloc(g->n_values ? g->n_values : 1, 1);
    int32_t *order = malloc((nn ? nn : 1) * sizeof *order);
    int rc = TILEOPT_OK;
    if (!sc.iv || !sc.tried || !order)
        rc = err_set(r->err, TILEOPT_NOMEM, "shape inference: out of memory");
    build_type t;
    /* graph inputs and initializers: what the model says */
    for (size_t i = 0; !rc && i < g->pb->n_input; i++) {
        graph_value *v = graph_find(g, g->pb->input[i]->name);
        if (!v || v->outer >= 0) continue;
        type_from_proto(g->pb->input[i]->type, &t);
        rc = type_store(r, &t, &v->type);
    }
    for (size_t i = 0; !rc && i < g->pb->n_initializer; i++) {
        const Onnx__TensorProto *tp = g->pb->initializer[i];
        graph_value *v = tp->name ? graph_find(g, tp->name) : NULL;
        if (!v || v->outer >= 0) continue;
        type_from_tensor(tp, &t);
        rc = type_store(r, &t, &v->type);
    }
    uint32_t count = 0;
    if (!rc) rc = graph_toposort(g, order, &count, r->err);
    for (uint32_t k = 0; rc == TILEOPT_OK && k < count; k++)
        rc = infer_node(r, &sc, g, order[k]);
    free(order);
    free(sc.iv);
    free(sc.tried);
    return rc;
}

static int infer_model(graph_model *m, bool strict, errbuf *err) {
    if (!m || !m->main) return err_set(err, TILEOPT_MISUSE, "shape inference: no model");
    infer_run r = {.m = m, .strict = strict, .err = err};
    r.opset = graph_opset(m, "");
    r.tmp = arena_new();
    if (!r.tmp) return err_set(err, TILEOPT_NOMEM, "shape inference: out of memory");
    int rc = infer_graph(&r, m->main, NULL);
    m->shapes_current = rc == TILEOPT_OK;
    arena_free(r.tmp);
    free(r.ins);
    free(r.inv);
    free(r.outs);
    free(r.outv);
    free(r.shapes);
    return rc;
}

int infer_shapes(graph_model *m, errbuf *err) {
    if (m && m->main && m->shapes_current) return TILEOPT_OK;
    return infer_model(m, false, err);
}

/* ------------------------------------------------------ value_info writer */

static int write_graph(graph_model *m, graph *g, errbuf *err) {
    Onnx__GraphProto *pb = g->pb;
    /* count the new entries first: one allocation for the grown array */
    size_t add = 0;
    for (uint32_t i = 0; i < g->n_values; i++) {
        graph_value *v = &g->values[i];
        if (v->outer >= 0 || v->producer < 0 || v->value_info >= 0 || v->output >= 0) continue;
        if (v->type.elem) add++;
    }
    if (add) {
        size_t n = pb->n_value_info;
        Onnx__ValueInfoProto **arr =
            arena_grow(m->arena, pb->value_info, n * sizeof *arr, (n + add) * sizeof *arr);
        if (!arr) return err_set(err, TILEOPT_NOMEM, "writing value_info: out of memory");
        pb->value_info = arr;
    }
    for (uint32_t i = 0; i < g->n_values; i++) {
        graph_value *v = &g->values[i];
        if (v->outer >= 0 || v->producer < 0) continue;
        Onnx__ValueInfoProto *vi = NULL;
        if (v->value_info >= 0) vi = pb->value_info[v->value_info];
        else if (v->output >= 0) vi = pb->output[v->output];
        if (!vi) {
            if (!v->type.elem) continue;
            vi = graph_value_info_new(m, v->name, &v->type);
            if (!vi) return err_set(err, TILEOPT_NOMEM, "writing value_info: out of memory");
            pb->value_info[pb->n_value_info++] = vi;
            continue;
        }
        if (graph_value_info_refine(m, vi, &v->type))
            return err_set(err, TILEOPT_NOMEM, "writing value_info: out of memory");
    }
    for (uint32_t k = 0; k < graph_n_nodes(g); k++) {
        for (graph *s = graph_node_subgraphs(g, (int32_t)k); s; s = s->next_sibling) {
            int rc = write_graph(m, s, err);
            if (rc) return rc;
        }
    }
    return TILEOPT_OK;
}

int infer_write_value_info(graph_model *m, errbuf *err) {
    int rc = infer_model(m, true, err);
    if (rc) return rc;
    rc = write_graph(m, m->main, err);
    if (rc) return rc;
    return graph_model_reindex(m, err);
}

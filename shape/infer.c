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

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/const.h"
#include "graph/ops.h"
#include "shape/dim.h"

#define IR_MAX DIM_MAX_RANK /* highest rank tracked; beyond it shapes stay unknown */
#define IV_MAX 4096      /* most entries of a tracked constant value */

/* A type under construction. */
typedef struct build_type {
    int32_t elem;
    int32_t rank;
    dim d[IR_MAX];
} build_type;

/* Entry k of ov becomes entry i of xv. */
static void known_take(shape_value *ov, int64_t k, const shape_value *xv, int64_t i) {
    ov->e[k] = xv->e[i];
    if (xv->f) ov->f[k] = xv->f[i];
}

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

typedef struct node_ctx {
    infer_run *r;
    value_scope *sc;
    graph *g;
    int32_t idx;
    const Onnx__NodeProto *n;
    int64_t opset;
    size_t n_in;
    const graph_type **in;   /* NULL for absent inputs */
    const shape_value **inv; /* NULL when not known */
    size_t n_out;
    build_type *out;
    shape_value **outv;
} node_ctx;

/* ---------------------------------------------------------------- helpers */

static int64_t dmul(int64_t a, int64_t b) {
    if (a < 0 || b < 0) return -1;
    if (a != 0 && b > INT64_MAX / a) return -1;
    return a * b;
}

/* A size that is a number, or unknown (a product that overflowed). */
static dim size_num(int64_t v) { return v >= 0 ? dim_num(v) : dim_unknown(); }

static void type_unknown(build_type *t) {
    t->elem = 0;
    t->rank = -1;
}

static void type_from(build_type *o, const graph_type *t) {
    o->elem = t ? t->elem : 0;
    o->rank = (t && t->rank >= 0 && t->rank <= IR_MAX) ? t->rank : -1;
    for (int32_t i = 0; i < o->rank; i++) o->d[i] = dim_at(t, i);
}

static void type_set_rank(build_type *o, int32_t rank) {
    if (rank < 0 || rank > IR_MAX) {
        o->rank = -1;
        return;
    }
    o->rank = rank;
    for (int32_t i = 0; i < rank; i++) o->d[i] = dim_unknown();
}

/* The dims of a type with a known rank. */
static void dims_of(const graph_type *t, dim *d) {
    for (int32_t i = 0; i < t->rank; i++) d[i] = dim_at(t, i);
}

/* The number of dim i of t, -1 when it is none (the arithmetic of windows
** and pads works on sizes only). */
static int64_t tdim(const graph_type *t, int32_t i) {
    dim d = dim_at(t, i);
    return dim_is_num(d) ? d.n : -1;
}

static void put_dim(build_type *o, int32_t i, const graph_type *t, int32_t j) {
    o->d[i] = dim_at(t, j);
}

/* A computed dim as dim i of o; unknown when it is no size (a negative number)
** or has no form. */
static void put_calc(build_type *o, int32_t i, bool ok, dim d) {
    o->d[i] = ok ? dim_size(d) : dim_unknown();
}

static const graph_type *IN(const node_ctx *c, size_t i) {
    return i < c->n_in ? c->in[i] : NULL;
}

static bool has_rank(const graph_type *t) { return t && t->rank >= 0 && t->rank <= IR_MAX; }

/* A number that is a size (what a declared type and an inferred one compare). */
static bool is_size(dim d) { return dim_is_num(d) && d.n >= 0; }

static int32_t in_elem(const node_ctx *c, size_t i) {
    const graph_type *t = IN(c, i);
    return t ? t->elem : 0;
}

/* Product of dims [from, to) of t as dim i of o. */
static void product_dim(infer_run *r, const graph_type *t, int32_t from, int32_t to,
                        build_type *o, int32_t i) {
    dim d[IR_MAX], p;
    for (int32_t k = from; k < to; k++) d[k - from] = dim_at(t, k);
    bool ok = dim_product(r->m->arena, d, to - from, &p);
    if (ok) put_calc(o, i, ok, p);
}

/* Normalize an axis against rank; false when out of range. */
static bool norm_axis(int64_t a, int32_t rank, int32_t *out) {
    if (a < -(int64_t)rank || a >= rank) return false;
    *out = (int32_t)(a < 0 ? a + rank : a);
    return true;
}

static const Onnx__AttributeProto *attr_ints(const Onnx__NodeProto *n, const char *name) {
    const Onnx__AttributeProto *a = graph_attr(n, name);
    return a ? a : NULL;
}

/* Known integer entries of input i (all entries must be known), copied into
** the run's scratch arena. */
static bool in_ints(const node_ctx *c, size_t i, const int64_t **v, int64_t *cnt) {
    const shape_value *iv = i < c->n_in ? c->inv[i] : NULL;
    if (!iv || iv->f) return false;
    int64_t *out = arena_alloc(c->r->tmp, (size_t)(iv->n ? iv->n : 1) * sizeof *out);
    if (!out) return false;
    for (int32_t k = 0; k < iv->n; k++) {
        if (!dim_is_num(iv->e[k])) return false;
        out[k] = iv->e[k].n;
    }
    *v = out;
    *cnt = iv->n;
    return true;
}

/* An integer scalar or 1-element input, float inputs accepted when whole (Tile-1). */
static bool in_scalar_int(const node_ctx *c, size_t i, int64_t *out) {
    const shape_value *iv = i < c->n_in ? c->inv[i] : NULL;
    if (!iv || iv->n != 1 || !dim_is_num(iv->e[0])) return false;
    if (!iv->f) {
        *out = iv->e[0].n;
        return true;
    }
    double f = iv->f[0];
    if (!(f == floor(f)) || fabs(f) > 9.0e15) return false;
    *out = (int64_t)f;
    return true;
}

static bool in_floats(const node_ctx *c, size_t i, double *out, int64_t cap, int64_t *cnt) {
    const shape_value *iv = i < c->n_in ? c->inv[i] : NULL;
    if (!iv || iv->n > cap) return false;
    for (int32_t k = 0; k < iv->n; k++) {
        if (!dim_is_num(iv->e[k])) return false;
        out[k] = iv->f ? iv->f[k] : (double)iv->e[k].n;
    }
    *cnt = iv->n;
    return true;
}

/* A tracked value of n unknown entries (floats in f when is_float). */
static shape_value *known_new(infer_run *r, int32_t elem, int32_t rank, int64_t n,
                              bool is_float) {
    if (n < 0 || n > IV_MAX) return NULL;
    /* one block: the struct, the entries, the floats (each part 8-byte
    ** aligned); shape chains make one of these per value */
    size_t cnt = n ? (size_t)n : 1;
    size_t head = (sizeof(shape_value) + 7) / 8 * 8;
    size_t size = head + cnt * sizeof(dim) + (is_float ? cnt * sizeof(double) : 0);
    uint8_t *p = arena_alloc(r->tmp, size);
    if (!p) return NULL;
    shape_value *iv = (shape_value *)(void *)p;
    iv->elem = elem;
    iv->rank = rank;
    iv->n = (int32_t)n;
    iv->e = (dim *)(void *)(p + head);
    iv->f = is_float ? (double *)(void *)(p + head + cnt * sizeof(dim)) : NULL;
    for (int64_t k = 0; k < n; k++) iv->e[k] = dim_unknown();
    return iv;
}

/* Entry k of a tracked value becomes the known number x (or float f). */
static void known_set(shape_value *iv, int64_t k, int64_t x) { iv->e[k] = dim_num(x); }
static void known_set_float(shape_value *iv, int64_t k, double x) {
    iv->f[k] = x;
    iv->e[k] = dim_num(0);
}

static bool elem_is_int(int32_t e) {
    const dtype_info *di = dtype_get(e);
    return di && (di->kind == KIND_SINT || di->kind == KIND_UINT || di->kind == KIND_BOOL);
}

/* Compile-time value of tensor data (small int/float tensors of rank <= 1 count;
** larger ranks with one element as well, as a scalar would). */
static shape_value *known_from_data(infer_run *r, const graph_tensor_data *td) {
    if (td->numel > IV_MAX) return NULL;
    int32_t rank = td->rank;
    if (rank > 1) return NULL; /* only scalars and vectors are tracked */
    bool fl;
    if (elem_is_int(td->elem)) fl = false;
    else if (td->elem == DT_FLOAT || td->elem == DT_DOUBLE) fl = true;
    else return NULL;
    shape_value *iv = known_new(r, td->elem, rank, (int64_t)td->numel, fl);
    if (!iv) return NULL;
    const uint8_t *p = td->data;
    for (uint64_t k = 0; k < td->numel; k++) {
        switch (td->elem) {
        case DT_FLOAT: { float x; memcpy(&x, p + 4 * k, 4); known_set_float(iv, k, x); break; }
        case DT_DOUBLE: { double x; memcpy(&x, p + 8 * k, 8); known_set_float(iv, k, x); break; }
        case DT_INT64: { int64_t x; memcpy(&x, p + 8 * k, 8); known_set(iv, k, x); break; }
        case DT_UINT64: {
            uint64_t x;
            memcpy(&x, p + 8 * k, 8);
            if (x > INT64_MAX) return NULL;
            known_set(iv, k, (int64_t)x);
            break;
        }
        case DT_INT32: { int32_t x; memcpy(&x, p + 4 * k, 4); known_set(iv, k, x); break; }
        case DT_UINT32: { uint32_t x; memcpy(&x, p + 4 * k, 4); known_set(iv, k, x); break; }
        case DT_INT16: { int16_t x; memcpy(&x, p + 2 * k, 2); known_set(iv, k, x); break; }
        case DT_UINT16: { uint16_t x; memcpy(&x, p + 2 * k, 2); known_set(iv, k, x); break; }
        case DT_INT8: known_set(iv, k, (int8_t)p[k]); break;
        case DT_UINT8: known_set(iv, k, p[k]); break;
        case DT_BOOL: known_set(iv, k, p[k] != 0); break;
        default: return NULL;
        }
    }
    return iv;
}

static shape_value *known_from_tensor(infer_run *r, const Onnx__TensorProto *t) {
    if (!t) return NULL;
    uint64_t numel = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0) return NULL;
        numel = (uint64_t)dmul((int64_t)numel, t->dims[i]);
        if ((int64_t)numel < 0 || numel > IV_MAX) return NULL;
    }
    if (t->n_dims > 1) return NULL;
    if (graph_tensor_is_external(t)) return NULL;
    graph_tensor_data td;
    errbuf e;
    if (graph_tensor_read(r->m, t, &td, &e) != TILEOPT_OK) return NULL;
    shape_value *iv = known_from_data(r, &td);
    if (td.owned) free(td.data);
    return iv;
}

static int type_from_tensor(infer_run *r, const Onnx__TensorProto *t, build_type *o) {
    (void)r;
    o->elem = t->has_data_type ? t->data_type : 0;
    if (t->n_dims > IR_MAX) {
        o->rank = -1;
        return 0;
    }
    o->rank = (int32_t)t->n_dims;
    for (size_t i = 0; i < t->n_dims; i++) o->d[i] = size_num(t->dims[i]);
    return 0;
}

static void type_from_proto(const Onnx__TypeProto *tp, build_type *o) {
    type_unknown(o);
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return;
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (tt->has_elem_type) o->elem = tt->elem_type;
    if (!tt->shape || tt->shape->n_dim > IR_MAX) return;
    o->rank = (int32_t)tt->shape->n_dim;
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        o->d[i] = dim_unknown();
        if (!d) continue;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            d->dim_value >= 0)
            o->d[i] = dim_num(d->dim_value);
        else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                 d->dim_param && d->dim_param[0])
            o->d[i] = dim_named(d->dim_param);
    }
}

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

const char *infer_type_str(const graph_type *t, char *buf, size_t cap) {
    dim d[IR_MAX];
    int32_t rank = has_rank(t) ? t->rank : -1;
    if (rank >= 0) dims_of(t, d);
    return type_str(t->elem, rank, d, buf, cap);
}

/* Numpy broadcasting of the given types into o (shape only). */
static void bcast(build_type *o, const graph_type *const *ts, size_t k) {
    dim_bcast b;
    dim_bcast_start(&b);
    for (size_t j = 0; j < k; j++) {
        if (!has_rank(ts[j])) {
            o->rank = -1;
            return;
        }
        dim d[IR_MAX];
        dims_of(ts[j], d);
        dim_bcast_add(&b, d, ts[j]->rank);
    }
    o->rank = b.rank;
    dim_bcast_result(&b, o->d);
}

/* -------------------------------------------------------- infer functions */

typedef void (*infer_fn)(node_ctx *c);

static void inf_same(node_ctx *c) {
    type_from(&c->out[0], IN(c, 0));
}

static void inf_same_bool(node_ctx *c) {
    type_from(&c->out[0], IN(c, 0));
    c->out[0].elem = DT_BOOL;
}

static void inf_identity(node_ctx *c) {
    type_from(&c->out[0], IN(c, 0));
    if (c->n_in > 0) c->outv[0] = (shape_value *)c->inv[0];
}

static void inf_dropout(node_ctx *c) {
    inf_identity(c);
    if (c->n_out > 1) {
        type_from(&c->out[1], IN(c, 0));
        c->out[1].elem = DT_BOOL;
    }
}

static void bcast_inputs(node_ctx *c, size_t from, size_t to) {
    const graph_type *ts[64];
    size_t k = 0;
    for (size_t i = from; i < to && i < c->n_in; i++) {
        if (k == 64) {
            c->out[0].rank = -1;
            return;
        }
        ts[k++] = IN(c, i);
    }
    bcast(&c->out[0], ts, k);
}

/* Integer arithmetic on tracked values, where both entries are known. */
typedef enum { AR_ADD, AR_SUB, AR_MUL, AR_DIV, AR_OTHER } arith;

static void arith_values(node_ctx *c, arith op) {
    if (c->n_in != 2 || !c->inv[0] || !c->inv[1]) return;
    const shape_value *a = c->inv[0], *b = c->inv[1];
    if (a->f || b->f) return;
    if (a->rank > 1 || b->rank > 1) return;
    if (a->n != b->n && a->n != 1 && b->n != 1) return;
    int64_t n = a->n > b->n ? a->n : b->n;
    int32_t rank = a->rank > b->rank ? a->rank : b->rank;
    shape_value *o = known_new(c->r, a->elem, rank, n, false);
    if (!o) return;
    for (int64_t k = 0; k < n; k++) {
        dim x = a->e[a->n == 1 ? 0 : k], y = b->e[b->n == 1 ? 0 : k];
        if (dim_is_num(x) && dim_is_num(y)) {
            int64_t z;
            bool ok = true;
            switch (op) {
            case AR_ADD: ok = !__builtin_add_overflow(x.n, y.n, &z); break;
            case AR_SUB: ok = !__builtin_sub_overflow(x.n, y.n, &z); break;
            case AR_MUL: ok = !__builtin_mul_overflow(x.n, y.n, &z); break;
            case AR_DIV:
                /* truncation and floor agree for non-negative operands only */
                ok = x.n >= 0 && y.n > 0;
                z = ok ? x.n / y.n : 0;
                break;
            default: ok = false; z = 0; break;
            }
            if (ok) known_set(o, k, z);
            continue;
        }
        /* named dims: 4*N, N + 1, and Div(Mul(N, 4), N) back to 4 */
        static const dim_op ops[] = {[AR_ADD] = DIM_ADD, [AR_SUB] = DIM_SUB,
                                     [AR_MUL] = DIM_MUL, [AR_DIV] = DIM_DIV};
        dim z;
        if (op != AR_OTHER && dim_calc(c->r->m->arena, ops[op], x, y, &z)) o->e[k] = z;
    }
    c->outv[0] = o;
}

static void inf_bcast(node_ctx *c) {
    bcast_inputs(c, 0, c->n_in);
    c->out[0].elem = in_elem(c, 0);
}

static arith arith_of(const char *op) {
    if (!strcmp(op, "Add")) return AR_ADD;
    if (!strcmp(op, "Sub")) return AR_SUB;
    if (!strcmp(op, "Mul")) return AR_MUL;
    if (!strcmp(op, "Div")) return AR_DIV;
    return AR_OTHER;
}

static void inf_arith(node_ctx *c) {
    inf_bcast(c);
    arith_values(c, arith_of(c->n->op_type));
}

static void inf_compare(node_ctx *c) {
    bcast_inputs(c, 0, c->n_in);
    c->out[0].elem = DT_BOOL;
}

/* An output value for the tracked integer values of inputs [from, to), which
** broadcast entry-wise (each of one entry or n); NULL when some is not tracked. */
static shape_value *values_zip(node_ctx *c, size_t from, size_t to, int32_t elem) {
    int64_t n = 1;
    int32_t rank = 0;
    for (size_t i = from; i < to; i++) {
        const shape_value *v = i < c->n_in ? c->inv[i] : NULL;
        if (!v || v->f || v->rank > 1 || (v->n != 1 && n != 1 && v->n != n)) return NULL;
        if (v->n != 1) n = v->n;
        if (v->rank > rank) rank = v->rank;
    }
    return known_new(c->r, elem, rank, n, false);
}

/* Entry k of v broadcast to the zipped length. */
static dim zk(const shape_value *v, int64_t k) { return v->e[v->n == 1 ? 0 : k]; }

/* Equal on shape values, as exporters test a shape against -1 before Expand:
** equal numbers or the same named dim are equal; a named dim (>= 0) is not a
** negative number. */
static void inf_equal(node_ctx *c) {
    inf_compare(c);
    shape_value *o = c->n_in == 2 ? values_zip(c, 0, 2, DT_BOOL) : NULL;
    if (!o) return;
    for (int32_t k = 0; k < o->n; k++) {
        dim x = zk(c->inv[0], k), y = zk(c->inv[1], k);
        bool neg_vs_dim = (dim_is_num(x) && x.n < 0 && dim_nonneg(y)) ||
                          (dim_is_num(y) && y.n < 0 && dim_nonneg(x));
        if (dim_eq(x, y) || (dim_is_num(x) && dim_is_num(y)) || neg_vs_dim)
            known_set(o, k, dim_eq(x, y));
    }
    c->outv[0] = o;
}

/* Max/Min of shape values: numbers, the same named dim, or a size against a
** number <= 0. */
static void inf_minmax(node_ctx *c) {
    inf_bcast(c);
    bool max = op_of(c->n) == OP_Max;
    shape_value *o = c->n_in == 2 ? values_zip(c, 0, 2, in_elem(c, 0)) : NULL;
    if (!o) return;
    for (int32_t k = 0; k < o->n; k++) {
        dim x = zk(c->inv[0], k), y = zk(c->inv[1], k);
        if (dim_eq(x, y) || (dim_is_num(x) && dim_is_num(y))) {
            bool x_wins = dim_is_num(x) ? (max ? x.n >= y.n : x.n <= y.n) : true;
            o->e[k] = x_wins ? x : y;
        } else if (dim_is_num(y) && y.n <= 0 && dim_nonneg(x)) {
            o->e[k] = max ? x : y;
        } else if (dim_is_num(x) && x.n <= 0 && dim_nonneg(y)) {
            o->e[k] = max ? y : x;
        }
    }
    c->outv[0] = o;
}

static void inf_where(node_ctx *c) {
    bcast_inputs(c, 0, 3);
    c->out[0].elem = in_elem(c, 1) ? in_elem(c, 1) : in_elem(c, 2);
    /* a known condition picks shape-value entries */
    shape_value *o = values_zip(c, 0, 3, c->out[0].elem);
    if (!o) return;
    for (int32_t k = 0; k < o->n; k++) {
        dim cond = zk(c->inv[0], k);
        if (dim_is_num(cond)) o->e[k] = zk(cond.n ? c->inv[1] : c->inv[2], k);
    }
    c->outv[0] = o;
}

static void inf_prelu(node_ctx *c) {
    type_from(&c->out[0], IN(c, 0));
}

static void inf_cast(node_ctx *c) {
    type_from(&c->out[0], IN(c, 0));
    int64_t to = graph_attr_int(c->n, "to", 0);
    c->out[0].elem = dtype_valid((int32_t)to) ? (int32_t)to : 0;
    const shape_value *a = c->n_in ? c->inv[0] : NULL;
    if (!a || !c->out[0].elem) return;
    int32_t te = c->out[0].elem;
    bool to_int = elem_is_int(te), to_float = te == DT_FLOAT || te == DT_DOUBLE;
    if (!to_int && !to_float) return;
    shape_value *o = known_new(c->r, te, a->rank, a->n, to_float);
    if (!o) return;
    const dtype_info *di = dtype_get(te);
    for (int32_t k = 0; k < a->n; k++) {
        if (!dim_is_num(a->e[k])) {
            if (to_int && !a->f) o->e[k] = a->e[k];
            continue;
        }
        if (to_float) {
            double x = a->f ? a->f[k] : (double)a->e[k].n;
            known_set_float(o, k, te == DT_FLOAT ? (float)x : x);
            continue;
        }
        int64_t x;
        if (!a->f) {
            x = a->e[k].n;
        } else {
            double f = a->f[k];
            if (!(fabs(f) < 9.0e18)) return;
            x = (int64_t)f; /* C cast truncates toward zero, as ONNX Cast does */
        }
        if (te == DT_BOOL) x = x != 0;
        /* values outside the target type would wrap: leave those unknown */
        if (di->kind == KIND_UINT && x < 0) continue;
        if (di->size < 8) {
            int bits = di->size * 8 - (di->kind == KIND_SINT ? 1 : 0);
            if (te != DT_BOOL && (x >= ((int64_t)1 << bits) || x < -((int64_t)1 << bits)))
                continue;
        }
        known_set(o, k, x);
    }
    c->outv[0] = o;
}

static void inf_castlike(node_ctx *c) {
    type_from(&c->out[0], IN(c, 0));
    c->out[0].elem = in_elem(c, 1);
}

/* Every attribute form of Constant reads as a TensorProto (graph_constant_value):
** its type, and its values when they are a small vector. */
static void inf_constant(node_ctx *c) {
    graph_const_hdr hdr;
    const Onnx__TensorProto *t;
    errbuf e;
    if (graph_constant_value(c->n, &hdr, &t, &e) != TILEOPT_OK) return;
    type_from_tensor(c->r, t, &c->out[0]);
    c->outv[0] = known_from_tensor(c->r, t);
}

static void inf_shape(node_ctx *c) {
    build_type *o = &c->out[0];
    o->elem = DT_INT64;
    o->rank = 1;
    o->d[0] = dim_unknown();
    const graph_type *x = IN(c, 0);
    if (!has_rank(x)) return;
    int64_t r = x->rank;
    /* start/end exist from Shape-15 on; earlier opsets ignore such attributes */
    bool window = c->opset >= 15;
    int64_t start = window ? graph_attr_int(c->n, "start", 0) : 0;
    int64_t end = window ? graph_attr_int(c->n, "end", r) : r;
    if (start < 0) start += r;
    if (end < 0) end += r;
    if (start < 0) start = 0;
    if (start > r) start = r;
    if (end < 0) end = 0;
    if (end > r) end = r;
    int64_t n = end > start ? end - start : 0;
    o->d[0] = dim_num(n);
    shape_value *iv = known_new(c->r, DT_INT64, 1, n, false);
    if (!iv) return;
    for (int64_t k = 0; k < n; k++) iv->e[k] = dim_at(x, (int32_t)(start + k));
    c->outv[0] = iv;
}

static void inf_size(node_ctx *c) {
    c->out[0].elem = DT_INT64;
    c->out[0].rank = 0;
    const graph_type *x = IN(c, 0);
    uint64_t numel;
    if (x && graph_type_numel(x, &numel) && numel <= INT64_MAX) {
        shape_value *iv = known_new(c->r, DT_INT64, 0, 1, false);
        if (iv) known_set(iv, 0, (int64_t)numel);
        c->outv[0] = iv;
        return;
    }
    dim d[IR_MAX], p;
    if (!has_rank(x)) return;
    dims_of(x, d);
    if (!dim_product(c->r->m->arena, d, x->rank, &p)) return;
    shape_value *iv = known_new(c->r, DT_INT64, 0, 1, false);
    if (!iv) return;
    iv->e[0] = p;
    c->outv[0] = iv;
}

/* Tile whose repeats shape inference tracks with named entries: each axis is
** dim times repeat, as a polynomial (an axis of size 1 takes the repeat's name). */
static void tile_symbolic(node_ctx *c, const graph_type *x) {
    build_type *o = &c->out[0];
    const shape_value *rv = c->n_in > 1 ? c->inv[1] : NULL;
    type_set_rank(o, x->rank);
    if (!rv || rv->f || rv->rank != 1 || rv->n != x->rank) return;
    for (int32_t i = 0; i < x->rank; i++) {
        dim p;
        if (dim_is_num(rv->e[i]) && rv->e[i].n < 0) {
            type_set_rank(o, x->rank);
            return;
        }
        if (dim_calc(c->r->m->arena, DIM_MUL, dim_at(x, i), rv->e[i], &p)) o->d[i] = dim_size(p);
    }
}

/* Tile-6/13 and the legacy Tile-1 (input, tiles, axis) form. */
static void inf_tile(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x)) return;
    type_from(o, x);
    int64_t rep[IR_MAX];
    int32_t r = x->rank;
    if (c->opset < 6) {
        int64_t tiles, axis;
        int32_t ax;
        if (!in_scalar_int(c, 1, &tiles) || !in_scalar_int(c, 2, &axis) || tiles < 0 ||
            !norm_axis(axis, r, &ax)) {
            type_set_rank(o, r);
            return;
        }
        for (int32_t i = 0; i < r; i++) rep[i] = 1;
        rep[ax] = tiles;
    } else {
        const int64_t *v;
        int64_t n;
        if (!in_ints(c, 1, &v, &n)) {
            tile_symbolic(c, x);
            return;
        }
        if (n != r) {
            type_set_rank(o, r);
            return;
        }
        for (int32_t i = 0; i < r; i++) {
            if (v[i] < 0) {
                type_set_rank(o, r);
                return;
            }
            rep[i] = v[i];
        }
    }
    for (int32_t i = 0; i < r; i++) {
        if (rep[i] == 1) continue;
        o->d[i] = rep[i] == 0 ? dim_num(0)
                  : dim_is_num(o->d[i]) ? size_num(dmul(o->d[i].n, rep[i]))
                                        : dim_unknown();
    }
}

static void inf_expand(node_ctx *c) {
    c->out[0].elem = in_elem(c, 0);
    const shape_value *sv = c->n_in > 1 ? c->inv[1] : NULL;
    const graph_type *x = IN(c, 0);
    bool known = sv && !sv->f && sv->rank == 1 && sv->n <= IR_MAX;
    for (int32_t k = 0; known && k < sv->n; k++)
        if (dim_is_num(sv->e[k]) && sv->e[k].n < 0) known = false;
    if (!known) {
        const graph_type *s = IN(c, 1);
        /* the rank is still known when the shape's length is */
        dim len = s && s->rank == 1 ? dim_at(s, 0) : dim_unknown();
        if (has_rank(x) && dim_is_num(len) && len.n <= IR_MAX)
            type_set_rank(&c->out[0], len.n > x->rank ? (int32_t)len.n : x->rank);
        return;
    }
    if (!has_rank(x)) {
        c->out[0].rank = -1;
        return;
    }
    dim xd[IR_MAX];
    dims_of(x, xd);
    dim_bcast b;
    dim_bcast_start(&b);
    dim_bcast_add(&b, xd, x->rank);
    dim_bcast_add(&b, sv->e, sv->n);
    c->out[0].rank = b.rank;
    dim_bcast_result(&b, c->out[0].d);
}

static void inf_reshape(node_ctx *c) {
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    const graph_type *x = IN(c, 0);
    int64_t n;
    dim target[IR_MAX];
    if (c->opset < 5) {
        const Onnx__AttributeProto *a = attr_ints(c->n, "shape");
        if (!a || a->n_ints > IR_MAX) return;
        n = (int64_t)a->n_ints;
        for (int64_t i = 0; i < n; i++) target[i] = dim_num(a->ints[i]);
    } else {
        const shape_value *sv = c->n_in > 1 ? c->inv[1] : NULL;
        if (!sv || sv->f || sv->rank != 1 || sv->n > IR_MAX) {
            const graph_type *s = IN(c, 1);
            dim len = s && s->rank == 1 ? dim_at(s, 0) : dim_unknown();
            if (dim_is_num(len) && len.n <= IR_MAX) type_set_rank(o, (int32_t)len.n);
            return;
        }
        n = sv->n;
        memcpy(target, sv->e, (size_t)n * sizeof *target);
    }
    bool allowzero = graph_attr_int(c->n, "allowzero", 0) != 0;
    type_set_rank(o, (int32_t)n);
    int32_t neg = -1;
    for (int32_t i = 0; i < o->rank; i++) {
        dim t = target[i];
        if (!dim_is_num(t)) {
            o->d[i] = t;
        } else if (t.n == 0 && !allowzero) {
            if (has_rank(x) && i < x->rank) put_dim(o, i, x, i);
        } else if (t.n == -1) {
            if (neg >= 0) { /* two -1: invalid model, say nothing */
                type_set_rank(o, o->rank);
                return;
            }
            neg = i;
        } else if (t.n >= 0) {
            o->d[i] = t;
        } else {
            type_set_rank(o, o->rank);
            return;
        }
    }
    /* the -1: the input's size divided by the other output dims, exactly,
    ** named dims cancelling ([N,16,64] to [N,-1] gives 1024) */
    if (neg >= 0 && has_rank(x)) {
        dim xd[IR_MAX], others[IR_MAX], q;
        dims_of(x, xd);
        int32_t k = 0;
        for (int32_t i = 0; i < o->rank; i++)
            if (i != neg) others[k++] = o->d[i];
        if (dim_quotient(c->r->m->arena, xd, x->rank, others, k, &q)) o->d[neg] = dim_size(q);
    }
    /* a tracked value keeps its entries through a reshape to rank <= 1 */
    const shape_value *xv = c->n_in ? c->inv[0] : NULL;
    if (xv && o->rank <= 1) {
        int64_t cnt = o->rank == 0 ? 1 : (dim_is_num(o->d[0]) ? o->d[0].n : -1);
        if (cnt == xv->n) {
            shape_value *ov = known_new(c->r, xv->elem, o->rank, cnt, xv->f != NULL);
            if (ov) {
                for (int64_t k = 0; k < cnt; k++) known_take(ov, k, xv, k);
                c->outv[0] = ov;
            }
        }
    }
}

static void inf_flatten(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    type_set_rank(o, 2);
    if (!has_rank(x)) return;
    int64_t axis = graph_attr_int(c->n, "axis", 1);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis > x->rank) return;
    product_dim(c->r, x, 0, (int32_t)axis, o, 0);
    product_dim(c->r, x, (int32_t)axis, x->rank, o, 1);
}

static void inf_transpose(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x)) return;
    int32_t r = x->rank;
    const Onnx__AttributeProto *a = graph_attr(c->n, "perm");
    if (a && a->n_ints != (size_t)r) return; /* invalid: not even the rank is sure */
    type_set_rank(o, r);
    bool seen[IR_MAX] = {false};
    for (int32_t i = 0; i < r; i++) {
        int64_t p = a ? a->ints[i] : r - 1 - i;
        if (p < 0 || p >= r || seen[p]) {
            o->rank = -1;
            return;
        }
        seen[p] = true;
        put_dim(o, i, x, (int32_t)p);
    }
}

/* Axes from the attribute (before `since`) or input 1; false when unknown. */
static bool get_axes(node_ctx *c, int64_t since, size_t input, const int64_t **v, int64_t *n,
                     bool *present) {
    if (c->opset < since) {
        const Onnx__AttributeProto *a = graph_attr(c->n, "axes");
        *present = a != NULL;
        *v = a ? a->ints : NULL;
        *n = a ? (int64_t)a->n_ints : 0;
        return true;
    }
    const char *name = graph_node_input(c->n, input);
    *present = name != NULL;
    if (!name) {
        *v = NULL;
        *n = 0;
        return true;
    }
    return in_ints(c, input, v, n);
}

static void inf_squeeze(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x)) return;
    const int64_t *axes;
    int64_t n;
    bool present;
    if (!get_axes(c, 13, 1, &axes, &n, &present)) return;
    bool drop[IR_MAX] = {false};
    if (!present || n == 0) {
        for (int32_t i = 0; i < x->rank; i++) {
            if (!dim_is_num(dim_at(x, i))) return;
            drop[i] = dim_is(dim_at(x, i), 1);
        }
    } else {
        for (int64_t k = 0; k < n; k++) {
            int32_t ax;
            if (!norm_axis(axes[k], x->rank, &ax)) return;
            drop[ax] = true;
        }
    }
    int32_t r = 0;
    for (int32_t i = 0; i < x->rank; i++)
        if (!drop[i]) put_dim(o, r++, x, i);
    o->rank = r;
    const shape_value *xv = c->inv[0];
    if (xv && r == 0 && xv->n == 1) {
        shape_value *ov = known_new(c->r, xv->elem, 0, 1, xv->f != NULL);
        if (ov) {
            known_take(ov, 0, xv, 0);
            c->outv[0] = ov;
        }
    }
}

static void inf_unsqueeze(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x)) return;
    const int64_t *axes;
    int64_t n;
    bool present;
    if (!get_axes(c, 13, 1, &axes, &n, &present) || !present) return;
    if (n > IR_MAX || x->rank + n > IR_MAX) return;
    int32_t r = x->rank + (int32_t)n;
    bool ins[IR_MAX] = {false};
    for (int64_t k = 0; k < n; k++) {
        int32_t ax;
        if (!norm_axis(axes[k], r, &ax) || ins[ax]) return;
        ins[ax] = true;
    }
    o->rank = r;
    int32_t j = 0;
    for (int32_t i = 0; i < r; i++) {
        if (ins[i]) {
            o->d[i] = dim_num(1);
        } else {
            put_dim(o, i, x, j++);
        }
    }
    const shape_value *xv = c->inv[0];
    if (xv && r == 1) {
        shape_value *ov = known_new(c->r, xv->elem, 1, xv->n, xv->f != NULL);
        if (ov) {
            for (int64_t k = 0; k < xv->n; k++) known_take(ov, k, xv, k);
            c->outv[0] = ov;
        }
    }
}

static void inf_concat(node_ctx *c) {
    build_type *o = &c->out[0];
    o->elem = 0;
    int32_t r = -1;
    for (size_t i = 0; i < c->n_in; i++) {
        const graph_type *t = IN(c, i);
        if (t && t->elem && !o->elem) o->elem = t->elem;
        if (has_rank(t)) r = t->rank;
    }
    if (r < 0) return;
    int64_t axis = graph_attr_int(c->n, "axis", 0);
    int32_t ax;
    if (!norm_axis(axis, r, &ax)) return;
    type_set_rank(o, r);
    /* the axis adds up, named dims too: Concat of [N,..] and [1,..] is [N + 1,..] */
    dim *along = arena_alloc(c->r->tmp, (c->n_in ? c->n_in : 1) * sizeof *along);
    bool all = along != NULL;
    for (size_t i = 0; i < c->n_in; i++) {
        const graph_type *t = IN(c, i);
        if (!has_rank(t)) {
            all = false;
            continue;
        }
        if (t->rank != r) {
            type_set_rank(o, r);
            return;
        }
        for (int32_t k = 0; k < r; k++) {
            if (k == ax) continue;
            dim d = dim_at(t, k);
            if (dim_is_unknown(o->d[k]) || (dim_is_named(o->d[k]) && dim_is_num(d))) o->d[k] = d;
        }
        if (all) along[i] = dim_at(t, ax);
    }
    dim sum;
    if (all && dim_sum(c->r->m->arena, along, (int32_t)c->n_in, &sum)) o->d[ax] = dim_size(sum);
    /* values: concatenation of tracked 1-D values */
    if (r != 1 || c->n_in == 0) return;
    int64_t total = 0;
    bool fl = false;
    for (size_t i = 0; i < c->n_in; i++) {
        const shape_value *v = c->inv[i];
        if (!v || v->rank != 1) return;
        if (i == 0) fl = v->f != NULL;
        else if ((v->f != NULL) != fl) return;
        total += v->n;
        if (total > IV_MAX) return;
    }
    shape_value *ov = known_new(c->r, c->inv[0]->elem, 1, total, fl);
    if (!ov) return;
    int64_t k = 0;
    for (size_t i = 0; i < c->n_in; i++)
        for (int32_t e = 0; e < c->inv[i]->n; e++, k++) known_take(ov, k, c->inv[i], e);
    c->outv[0] = ov;
}

static void inf_split(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    for (size_t k = 0; k < c->n_out; k++) c->out[k].elem = in_elem(c, 0);
    if (!has_rank(x)) return;
    int32_t ax;
    if (!norm_axis(graph_attr_int(c->n, "axis", 0), x->rank, &ax)) return;
    for (size_t k = 0; k < c->n_out; k++) {
        type_from(&c->out[k], x);
        c->out[k].d[ax] = dim_unknown();
    }
    const int64_t *sp = NULL;
    int64_t nsp = 0;
    if (c->opset < 13) {
        const Onnx__AttributeProto *a = graph_attr(c->n, "split");
        if (a && a->n_ints) {
            sp = a->ints;
            nsp = (int64_t)a->n_ints;
        }
    } else if (graph_node_input(c->n, 1)) {
        if (!in_ints(c, 1, &sp, &nsp)) return;
    }
    if (sp) {
        if (nsp != (int64_t)c->n_out) return;
        for (size_t k = 0; k < c->n_out; k++)
            if (sp[k] >= 0) c->out[k].d[ax] = dim_num(sp[k]);
        return;
    }
    dim dx = dim_at(x, ax);
    int64_t d = dx.n, parts = (int64_t)c->n_out;
    if (!dim_is_num(dx) || parts == 0) return;
    if (graph_attr(c->n, "num_outputs")) {
        /* opset 18: the last chunk may be smaller */
        int64_t chunk = d / parts + (d % parts != 0);
        for (int64_t k = 0; k < parts; k++) {
            int64_t used;
            if (__builtin_mul_overflow(chunk, k, &used)) return;
            int64_t left = d - used;
            c->out[k].d[ax] = dim_num(left < 0 ? 0 : (left < chunk ? left : chunk));
        }
        return;
    }
    if (d % parts) return;
    for (int64_t k = 0; k < parts; k++) c->out[k].d[ax] = dim_num(d / parts);
}

static int64_t clampi(int64_t v, int64_t lo, int64_t hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

/* Elements one Slice step selects along a dim of size d. */
static int64_t slice_len(int64_t d, int64_t start, int64_t end, int64_t step) {
    if (step > 0) {
        start = start < 0 ? clampi(start + d, 0, d) : clampi(start, 0, d);
        end = end < 0 ? clampi(end + d, 0, d) : clampi(end, 0, d);
        return end > start ? (end - start - 1) / step + 1 : 0;
    }
    start = start < 0 ? clampi(start + d, 0, d - 1) : clampi(start, 0, d - 1);
    end = end < 0 ? clampi(end + d, -1, d - 1) : clampi(end, -1, d - 1);
    /* -step would overflow for INT64_MIN: divide by the negative step instead */
    return start > end ? -((start - end - 1) / step) + 1 : 0;
}

static int64_t slice_first(int64_t d, int64_t start, int64_t step) {
    if (step > 0) return start < 0 ? clampi(start + d, 0, d) : clampi(start, 0, d);
    return start < 0 ? clampi(start + d, 0, d - 1) : clampi(start, 0, d - 1);
}

static void inf_slice(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x)) return;
    int32_t r = x->rank;
    type_from(o, x);
    const int64_t *st, *en, *ax = NULL, *sp = NULL;
    int64_t nst, nen, nax = 0, nsp = 0;
    bool ok = true;
    if (c->opset < 10) {
        const Onnx__AttributeProto *a = graph_attr(c->n, "starts");
        const Onnx__AttributeProto *b = graph_attr(c->n, "ends");
        const Onnx__AttributeProto *x3 = graph_attr(c->n, "axes");
        if (!a || !b) ok = false;
        else {
            st = a->ints; nst = (int64_t)a->n_ints;
            en = b->ints; nen = (int64_t)b->n_ints;
            if (x3) { ax = x3->ints; nax = (int64_t)x3->n_ints; }
        }
    } else {
        ok = in_ints(c, 1, &st, &nst) && in_ints(c, 2, &en, &nen);
        if (ok && graph_node_input(c->n, 3)) ok = in_ints(c, 3, &ax, &nax);
        if (ok && graph_node_input(c->n, 4)) ok = in_ints(c, 4, &sp, &nsp);
    }
    if (ok && (nen != nst || (ax && nax != nst) || (sp && nsp != nst))) ok = false;
    if (!ok) {
        /* which axes change is unknown unless the axes are */
        if (c->opset >= 10 && graph_node_input(c->n, 3) && in_ints(c, 3, &ax, &nax)) {
            for (int64_t k = 0; k < nax; k++) {
                int32_t a;
                if (!norm_axis(ax[k], r, &a)) {
                    type_set_rank(o, r);
                    return;
                }
                o->d[a] = dim_unknown();
            }
            return;
        }
        type_set_rank(o, r);
        return;
    }
    int64_t first[IR_MAX], stepv[IR_MAX];
    bool sliced[IR_MAX] = {false};
    for (int64_t k = 0; k < nst; k++) {
        int32_t a;
        if (!norm_axis(ax ? ax[k] : k, r, &a) || sliced[a]) {
            type_set_rank(o, r);
            return;
        }
        sliced[a] = true;
        int64_t step = sp ? sp[k] : 1;
        if (step == 0) {
            type_set_rank(o, r);
            return;
        }
        dim d = dim_at(x, a);
        stepv[a] = step;
        if (dim_is_num(d)) {
            o->d[a] = dim_num(slice_len(d.n, st[k], en[k], step));
            first[a] = slice_first(d.n, st[k], step);
        } else {
            /* the whole of an unknown dim keeps its symbol */
            bool whole = step == 1 && st[k] == 0 && en[k] >= INT32_MAX;
            if (!whole) o->d[a] = dim_unknown();
            first[a] = whole ? 0 : -1;
        }
    }
    /* a tracked 1-D value slices entry by entry */
    const shape_value *xv = c->inv[0];
    if (xv && r == 1 && xv->rank == 1 && dim_is_num(o->d[0]) && first[0] >= 0 && sliced[0]) {
        shape_value *ov = known_new(c->r, xv->elem, 1, o->d[0].n, xv->f != NULL);
        if (!ov) return;
        for (int64_t k = 0; k < o->d[0].n; k++) {
            int64_t i = first[0] + k * stepv[0];
            if (i < 0 || i >= xv->n) return;
            known_take(ov, k, xv, i);
        }
        c->outv[0] = ov;
    }
}

static void inf_gather(node_ctx *c) {
    const graph_type *x = IN(c, 0), *idx = IN(c, 1);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x) || !has_rank(idx)) return;
    int32_t ax;
    if (!norm_axis(graph_attr_int(c->n, "axis", 0), x->rank, &ax)) return;
    int32_t r = x->rank - 1 + idx->rank;
    if (r > IR_MAX) return;
    type_set_rank(o, r);
    int32_t j = 0;
    for (int32_t i = 0; i < ax; i++) put_dim(o, j++, x, i);
    for (int32_t i = 0; i < idx->rank; i++) put_dim(o, j++, idx, i);
    for (int32_t i = ax + 1; i < x->rank; i++) put_dim(o, j++, x, i);
    const shape_value *xv = c->inv[0], *iv = c->inv[1];
    if (!xv || !iv || xv->rank != 1 || iv->f || iv->rank > 1) return;
    shape_value *ov = known_new(c->r, xv->elem, iv->rank, iv->n, xv->f != NULL);
    if (!ov) return;
    for (int32_t k = 0; k < iv->n; k++) {
        if (!dim_is_num(iv->e[k])) return;
        int64_t i = iv->e[k].n;
        if (i < 0) i += xv->n;
        if (i < 0 || i >= xv->n) return;
        known_take(ov, k, xv, i);
    }
    c->outv[0] = ov;
}

static void inf_constant_of_shape(node_ctx *c) {
    build_type *o = &c->out[0];
    o->elem = DT_FLOAT;
    const Onnx__AttributeProto *va = graph_attr(c->n, "value");
    if (va && va->t && va->t->has_data_type) o->elem = va->t->data_type;
    const shape_value *sv = c->inv[0];
    const graph_type *s = IN(c, 0);
    if (!sv || sv->f || sv->rank != 1 || sv->n > IR_MAX) {
        dim len = s && s->rank == 1 ? dim_at(s, 0) : dim_unknown();
        if (dim_is_num(len) && len.n <= IR_MAX) type_set_rank(o, (int32_t)len.n);
        return;
    }
    type_set_rank(o, sv->n);
    int64_t numel = 1;
    for (int32_t k = 0; k < sv->n; k++) {
        dim e = sv->e[k];
        if (dim_is_num(e) && e.n < 0) {
            type_set_rank(o, o->rank);
            return;
        }
        o->d[k] = e;
        numel = dim_is_num(e) ? dmul(numel, e.n) : -1;
    }
    /* ConstantOfShape([n], 1) feeding Tile's repeats is common: track it */
    if (o->rank != 1 || numel < 0 || numel > IV_MAX) return;
    shape_value *fill = NULL;
    if (va && va->t) fill = known_from_tensor(c->r, va->t);
    else if (!va) {
        fill = known_new(c->r, DT_FLOAT, 0, 1, true);
        if (fill) known_set_float(fill, 0, 0.0);
    }
    if (!fill || fill->n != 1) return;
    shape_value *ov = known_new(c->r, fill->elem, 1, numel, fill->f != NULL);
    if (!ov) return;
    for (int64_t k = 0; k < numel; k++) known_take(ov, k, fill, 0);
    c->outv[0] = ov;
}

static void inf_range(node_ctx *c) {
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    type_set_rank(o, 1);
    const shape_value *a = c->inv[0], *b = c->n_in > 1 ? c->inv[1] : NULL,
                      *d = c->n_in > 2 ? c->inv[2] : NULL;
    if (!a || !b || !d || a->n != 1 || b->n != 1 || d->n != 1) return;
    bool ints = !a->f && !b->f && !d->f;
    if (ints && dim_is(d->e[0], 1) && (!dim_is_num(a->e[0]) || !dim_is_num(b->e[0]))) {
        /* Range(s, l, 1) has max(l - s, 0) entries: l - s when provably >= 0 */
        dim len;
        if (dim_calc(c->r->m->arena, DIM_SUB, b->e[0], a->e[0], &len) && dim_nonneg(len))
            o->d[0] = dim_size(len);
        return;
    }
    if (!dim_is_num(a->e[0]) || !dim_is_num(b->e[0]) || !dim_is_num(d->e[0])) return;
    if (ints) {
        int64_t s = a->e[0].n, l = b->e[0].n, st = d->e[0].n;
        if (st == 0) return;
        int64_t diff;
        if (__builtin_sub_overflow(l, s, &diff)) return;
        if (st == -1 && diff == INT64_MIN) return;
        int64_t n = diff / st + ((diff % st != 0 && ((diff < 0) == (st < 0))) ? 1 : 0);
        if (n < 0) n = 0;
        o->d[0] = dim_num(n);
        if (n <= IV_MAX) {
            shape_value *ov = known_new(c->r, a->elem, 1, n, false);
            if (ov) {
                /* within [s, l): no overflow, n being what it is */
                for (int64_t k = 0; k < n; k++) known_set(ov, k, s + k * st);
                c->outv[0] = ov;
            }
        }
        return;
    }
    if (a->f && b->f && d->f) {
        double s = a->f[0], l = b->f[0], st = d->f[0];
        if (st == 0) return;
        double n = ceil((l - s) / st);
        if (!(n < 9.0e15)) return;
        o->d[0] = dim_num(n > 0 ? (int64_t)n : 0);
    }
}

/* MatMul with numpy semantics: 1-D operands are promoted, batch dims broadcast. */
static void inf_matmul(node_ctx *c) {
    const graph_type *a = IN(c, 0), *b = IN(c, 1);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(a) || !has_rank(b) || a->rank == 0 || b->rank == 0) return;
    /* batch dims: broadcast a[:-2] with b[:-2] */
    dim ad[IR_MAX], bd[IR_MAX];
    dims_of(a, ad);
    dims_of(b, bd);
    dim_bcast bc;
    dim_bcast_start(&bc);
    dim_bcast_add(&bc, ad, a->rank >= 2 ? a->rank - 2 : 0);
    dim_bcast_add(&bc, bd, b->rank >= 2 ? b->rank - 2 : 0);
    dim_bcast_result(&bc, o->d);
    int32_t r = bc.rank;
    if (a->rank >= 2) {
        if (r + 1 > IR_MAX) { o->rank = -1; return; }
        put_dim(o, r++, a, a->rank - 2);
    }
    if (b->rank >= 2) {
        if (r + 1 > IR_MAX) { o->rank = -1; return; }
        put_dim(o, r++, b, b->rank - 1);
    }
    o->rank = r;
}

static void inf_gemm(node_ctx *c) {
    const graph_type *a = IN(c, 0), *b = IN(c, 1);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    type_set_rank(o, 2);
    bool ta = graph_attr_int(c->n, "transA", 0) != 0;
    bool tb = graph_attr_int(c->n, "transB", 0) != 0;
    if (has_rank(a) && a->rank == 2) put_dim(o, 0, a, ta ? 1 : 0);
    if (has_rank(b) && b->rank == 2) put_dim(o, 1, b, tb ? 0 : 1);
}

/* Attribute ints with a default for every spatial axis. */
static bool spatial_attr(const Onnx__NodeProto *n, const char *name, int32_t count,
                         int64_t dflt, int64_t *out) {
    const Onnx__AttributeProto *a = graph_attr(n, name);
    if (!a || a->n_ints == 0) {
        for (int32_t i = 0; i < count; i++) out[i] = dflt;
        return true;
    }
    if (a->n_ints != (size_t)count) return false;
    for (int32_t i = 0; i < count; i++) out[i] = a->ints[i];
    return true;
}

static int64_t floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

static int64_t ceildiv(int64_t a, int64_t b) { return -floordiv(-a, b); }

/* Output spatial dims of Conv/pooling. kernel[] must be known. */
static void window_dims(node_ctx *c, const graph_type *x, const int64_t *kernel, int32_t ns,
                        bool use_dilation, bool ceil_mode, build_type *o) {
    int64_t strides[IR_MAX], dil[IR_MAX], pads[2 * IR_MAX];
    if (!spatial_attr(c->n, "strides", ns, 1, strides)) return;
    if (!spatial_attr(c->n, "dilations", ns, 1, dil)) return;
    if (!use_dilation)
        for (int32_t i = 0; i < ns; i++) dil[i] = 1;
    if (!spatial_attr(c->n, "pads", 2 * ns, 0, pads)) return;
    const char *ap = graph_attr_string(c->n, "auto_pad", "NOTSET");
    for (int32_t i = 0; i < ns; i++) {
        int64_t in = tdim(x, 2 + i);
        if (in < 0 || strides[i] <= 0 || dil[i] <= 0 || kernel[i] <= 0) continue;
        int64_t ek, span;
        if (__builtin_mul_overflow(kernel[i] - 1, dil[i], &ek) || ek == INT64_MAX) continue;
        ek += 1;
        int64_t out;
        if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
            out = ceildiv(in, strides[i]);
        } else if (!strcmp(ap, "VALID")) {
            out = ceildiv(in - ek + 1, strides[i]);
        } else {
            if (__builtin_add_overflow(in, pads[i], &span) ||
                __builtin_add_overflow(span, pads[i + ns], &span) ||
                __builtin_sub_overflow(span, ek, &span) || span < 0)
                continue;
            out = (ceil_mode ? ceildiv(span, strides[i]) : floordiv(span, strides[i])) + 1;
        }
        if (out >= 0) o->d[2 + i] = dim_num(out);
    }
}

static void inf_conv(node_ctx *c) {
    const graph_type *x = IN(c, 0), *w = IN(c, 1);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x) || x->rank < 3) return;
    int32_t ns = x->rank - 2;
    type_set_rank(o, x->rank);
    put_dim(o, 0, x, 0);
    if (has_rank(w) && w->rank == x->rank) put_dim(o, 1, w, 0);
    int64_t kernel[IR_MAX];
    const Onnx__AttributeProto *ka = graph_attr(c->n, "kernel_shape");
    if (ka) {
        if (ka->n_ints != (size_t)ns) return;
        for (int32_t i = 0; i < ns; i++) kernel[i] = ka->ints[i];
    } else {
        if (!has_rank(w) || w->rank != x->rank) return;
        for (int32_t i = 0; i < ns; i++) kernel[i] = tdim(w, 2 + i);
    }
    window_dims(c, x, kernel, ns, true, false, o);
}

static void inf_conv_transpose(node_ctx *c) {
    const graph_type *x = IN(c, 0), *w = IN(c, 1);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x) || x->rank < 3) return;
    int32_t ns = x->rank - 2;
    type_set_rank(o, x->rank);
    put_dim(o, 0, x, 0);
    int64_t group = graph_attr_int(c->n, "group", 1);
    if (has_rank(w) && w->rank == x->rank && tdim(w, 1) >= 0)
        o->d[1] = dim_num(dmul(tdim(w, 1), group));
    const Onnx__AttributeProto *os = graph_attr(c->n, "output_shape");
    if (os && os->n_ints) {
        if (os->n_ints < (size_t)ns) return;
        for (int32_t i = 0; i < ns; i++)
            o->d[2 + i] = dim_num(os->ints[os->n_ints - (size_t)ns + (size_t)i]);
        return;
    }
    int64_t kernel[IR_MAX], strides[IR_MAX], dil[IR_MAX], opad[IR_MAX], pads[2 * IR_MAX];
    const Onnx__AttributeProto *ka = graph_attr(c->n, "kernel_shape");
    if (ka) {
        if (ka->n_ints != (size_t)ns) return;
        for (int32_t i = 0; i < ns; i++) kernel[i] = ka->ints[i];
    } else {
        if (!has_rank(w) || w->rank != x->rank) return;
        for (int32_t i = 0; i < ns; i++) kernel[i] = tdim(w, 2 + i);
    }
    if (!spatial_attr(c->n, "strides", ns, 1, strides) ||
        !spatial_attr(c->n, "dilations", ns, 1, dil) ||
        !spatial_attr(c->n, "output_padding", ns, 0, opad) ||
        !spatial_attr(c->n, "pads", 2 * ns, 0, pads))
        return;
    const char *ap = graph_attr_string(c->n, "auto_pad", "NOTSET");
    bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
    for (int32_t i = 0; i < ns; i++) {
        int64_t in = tdim(x, 2 + i);
        if (in < 0 || kernel[i] < 0) continue;
        int64_t out;
        if (same) {
            if (__builtin_mul_overflow(in, strides[i], &out)) continue;
        } else {
            int64_t a, b;
            if (in < 1 || __builtin_mul_overflow(strides[i], in - 1, &a) ||
                __builtin_mul_overflow(kernel[i] - 1, dil[i], &b) ||
                __builtin_add_overflow(a, b, &out) || __builtin_add_overflow(out, opad[i], &out) ||
                __builtin_add_overflow(out, 1, &out))
                continue;
            if (strcmp(ap, "VALID") != 0 &&
                (__builtin_sub_overflow(out, pads[i], &out) ||
                 __builtin_sub_overflow(out, pads[i + ns], &out)))
                continue;
        }
        if (out >= 0) o->d[2 + i] = dim_num(out);
    }
}

static void inf_pool(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    for (size_t k = 0; k < c->n_out; k++) c->out[k].elem = k ? DT_INT64 : in_elem(c, 0);
    if (!has_rank(x) || x->rank < 3) return;
    int32_t ns = x->rank - 2;
    build_type *o = &c->out[0];
    type_set_rank(o, x->rank);
    put_dim(o, 0, x, 0);
    put_dim(o, 1, x, 1);
    const Onnx__AttributeProto *ka = graph_attr(c->n, "kernel_shape");
    if (ka && ka->n_ints == (size_t)ns) {
        bool ceil_mode = graph_attr_int(c->n, "ceil_mode", 0) != 0;
        bool dil = graph_node_is(c->n, "MaxPool");
        window_dims(c, x, ka->ints, ns, dil, ceil_mode, o);
    }
    for (size_t k = 1; k < c->n_out; k++) {
        int32_t e = c->out[k].elem;
        c->out[k] = *o;
        c->out[k].elem = e;
    }
}

/* DFT: the input's shape with the signal axis dft_length long (half of it plus
** one when onesided) and a last axis of 2 (real, imaginary). The axis is an
** attribute (default 1) before opset 20 and an input (default -2) from it. */
static void inf_dft(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x) || x->rank < 2) return;
    int32_t r = x->rank, ax;
    int64_t axis = c->opset >= 20 ? -2 : graph_attr_int(c->n, "axis", 1);
    bool axis_known = c->opset < 20 || !graph_node_input(c->n, 2) || in_scalar_int(c, 2, &axis);
    if (!axis_known || !norm_axis(axis, r, &ax) || ax == r - 1) {
        type_set_rank(o, r);
        return;
    }
    type_from(o, x);
    dim len = dim_at(x, ax);
    int64_t given;
    if (graph_node_input(c->n, 1))
        len = in_scalar_int(c, 1, &given) && given >= 1 ? dim_num(given) : dim_unknown();
    if (graph_attr_int(c->n, "onesided", 0))
        len = dim_is_num(len) ? dim_num(len.n / 2 + 1) : dim_unknown();
    o->d[ax] = len;
    o->d[r - 1] = dim_num(2);
}

/* X [N, C, H, W] sampled at grid [N, Ho, Wo, 2]: [N, C, Ho, Wo] (and N-D alike
** from opset 20: the grid's middle axes are the output's spatial ones). */
static void inf_grid_sample(node_ctx *c) {
    const graph_type *x = IN(c, 0), *grid = IN(c, 1);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x) || !has_rank(grid) || x->rank < 3 || grid->rank != x->rank) return;
    type_from(o, x);
    for (int32_t i = 2; i < x->rank; i++) o->d[i] = dim_at(grid, i - 1);
}

static void inf_global_pool(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x) || x->rank < 2) return;
    type_from(o, x);
    for (int32_t i = 2; i < x->rank; i++) o->d[i] = dim_num(1);
}

static void inf_batchnorm(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    type_from(&c->out[0], x);
    for (size_t k = 1; k < c->n_out; k++) {
        build_type *o = &c->out[k];
        o->elem = in_elem(c, 1) ? in_elem(c, 1) : in_elem(c, 0);
        if (c->opset >= 9) {
            type_set_rank(o, 1);
            if (has_rank(x) && x->rank >= 2) put_dim(o, 0, x, 1);
        }
    }
}

/* x's dims without the reduced axes, or with 1 in their place when keep is set. */
static void reduced_dims(build_type *o, const graph_type *x, const bool *red, bool keep) {
    int32_t r = 0;
    for (int32_t i = 0; i < x->rank; i++) {
        if (!red[i]) put_dim(o, r++, x, i);
        else if (keep)
            o->d[r++] = dim_num(1);
    }
    o->rank = r;
}

static void inf_reduce(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x)) return;
    bool keep = graph_attr_int(c->n, "keepdims", 1) != 0;
    int64_t since = graph_node_is(c->n, "ReduceSum") ? 13 : 18;
    const int64_t *axes;
    int64_t n;
    bool present;
    if (!get_axes(c, since, 1, &axes, &n, &present)) {
        if (keep) type_set_rank(o, x->rank);
        return;
    }
    bool red[IR_MAX] = {false};
    if (!present || n == 0) {
        if (c->opset >= since && graph_attr_int(c->n, "noop_with_empty_axes", 0)) {
            type_from(o, x);
            return;
        }
        for (int32_t i = 0; i < x->rank; i++) red[i] = true;
    } else {
        for (int64_t k = 0; k < n; k++) {
            int32_t a;
            if (!norm_axis(axes[k], x->rank, &a)) return;
            red[a] = true;
        }
    }
    reduced_dims(o, x, red, keep);
}

static void inf_argreduce(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = DT_INT64;
    if (!has_rank(x)) return;
    int32_t a;
    if (!norm_axis(graph_attr_int(c->n, "axis", 0), x->rank, &a)) return;
    bool red[IR_MAX] = {false};
    red[a] = true;
    reduced_dims(o, x, red, graph_attr_int(c->n, "keepdims", 1) != 0);
}

static void inf_pad(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x)) return;
    int32_t r = x->rank;
    type_set_rank(o, r);
    const int64_t *pads = NULL;
    int64_t np = 0;
    if (c->opset < 11) {
        const Onnx__AttributeProto *a = graph_attr(c->n, c->opset < 2 ? "paddings" : "pads");
        if (!a) return;
        pads = a->ints;
        np = (int64_t)a->n_ints;
    } else if (!in_ints(c, 1, &pads, &np)) {
        return;
    }
    const int64_t *axes = NULL;
    int64_t nax = r;
    if (c->opset >= 18 && graph_node_input(c->n, 3)) {
        if (!in_ints(c, 3, &axes, &nax)) return;
    }
    if (np != 2 * nax) return;
    type_from(o, x);
    for (int64_t k = 0; k < nax; k++) {
        int32_t a;
        if (!norm_axis(axes ? axes[k] : k, r, &a)) {
            type_set_rank(o, r);
            return;
        }
        int64_t d = tdim(x, a);
        if (d < 0) {
            if (pads[k] != 0 || pads[k + nax] != 0) o->d[a] = dim_unknown();
            continue;
        }
        int64_t v;
        if (__builtin_add_overflow(d, pads[k], &v) || __builtin_add_overflow(v, pads[k + nax], &v))
            v = -1;
        o->d[a] = size_num(v);
    }
}

/* Resize (opset 10: X, scales; 11+: X, roi, scales, sizes) and Upsample. */
static void inf_resize(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x)) return;
    int32_t r = x->rank;
    type_set_rank(o, r);
    if (graph_attr(c->n, "axes")) return; /* opset 18 subset form: not handled */
    bool upsample = graph_node_is(c->n, "Upsample");
    size_t scales_in = (upsample || c->opset < 11) ? 1 : 2;
    if (!upsample && c->opset >= 11 && graph_node_input(c->n, 3)) {
        const int64_t *sz;
        int64_t n;
        if (in_ints(c, 3, &sz, &n) && n == r)
            for (int32_t i = 0; i < r; i++) o->d[i] = size_num(sz[i]);
        return;
    }
    double sc[IR_MAX];
    int64_t n = 0;
    if (upsample && c->opset < 9) {
        const Onnx__AttributeProto *a = graph_attr(c->n, "scales");
        if (!a || a->n_floats != (size_t)r) return;
        for (int32_t i = 0; i < r; i++) sc[i] = a->floats[i];
        n = r;
    } else if (!in_floats(c, scales_in, sc, IR_MAX, &n)) {
        return;
    }
    if (n != r) return;
    for (int32_t i = 0; i < r; i++) {
        int64_t d = tdim(x, i);
        if (sc[i] == 1.0) {
            put_dim(o, i, x, i);
            continue;
        }
        if (d < 0 || !(sc[i] > 0)) continue;
        double v = floor((double)d * (float)sc[i]);
        if (v < 9.0e15) o->d[i] = dim_num((int64_t)v);
    }
}

static void inf_nonzero(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = DT_INT64;
    type_set_rank(o, 2);
    if (has_rank(x)) o->d[0] = dim_num(x->rank);
}

static void inf_topk(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    c->out[0].elem = in_elem(c, 0);
    if (c->n_out > 1) c->out[1].elem = DT_INT64;
    if (!has_rank(x)) return;
    int32_t a;
    if (!norm_axis(graph_attr_int(c->n, "axis", -1), x->rank, &a)) return;
    int64_t k = -1;
    if (c->opset < 10) {
        k = graph_attr_int(c->n, "k", -1);
    } else {
        int64_t v;
        if (in_scalar_int(c, 1, &v)) k = v;
    }
    for (size_t j = 0; j < c->n_out && j < 2; j++) {
        int32_t e = c->out[j].elem;
        type_from(&c->out[j], x);
        c->out[j].elem = e;
        c->out[j].d[a] = size_num(k);
    }
}

static void inf_gather_elements(node_ctx *c) {
    type_from(&c->out[0], IN(c, 1));
    c->out[0].elem = in_elem(c, 0);
}

static void inf_eyelike(node_ctx *c) {
    type_from(&c->out[0], IN(c, 0));
    int64_t dt = graph_attr_int(c->n, "dtype", 0);
    if (dt) c->out[0].elem = dtype_valid((int32_t)dt) ? (int32_t)dt : 0;
}

/* Y is like X; Mean and InvStdDev are in stash_type, the axes from axis on
** kept as 1. */
static void inf_layernorm(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    type_from(&c->out[0], x);
    int32_t stash = (int32_t)graph_attr_int(c->n, "stash_type", DT_FLOAT);
    int64_t axis = graph_attr_int(c->n, "axis", -1);
    for (size_t k = 1; k < c->n_out && k < 3; k++) {
        build_type *o = &c->out[k];
        o->elem = stash;
        if (!has_rank(x)) continue;
        if (axis < 0) axis += x->rank;
        if (axis < 0 || axis >= x->rank) continue;
        type_from(o, x);
        o->elem = stash;
        for (int32_t i = (int32_t)axis; i < x->rank; i++) o->d[i] = dim_num(1);
    }
}

/*
** RNN, GRU and LSTM: Y is [seq, directions, batch, hidden] and Y_h (LSTM's Y_c
** too) [directions, batch, hidden]; layout 1 puts batch first in both. All of X's
** element type.
*/
static void inf_rnn(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    int64_t hidden = graph_attr_int(c->n, "hidden_size", -1);
    bool batch_first = graph_attr_int(c->n, "layout", 0) == 1;
    int64_t dirs = strcmp(graph_attr_string(c->n, "direction", "forward"), "bidirectional")
                       ? 1 : 2;
    for (size_t k = 0; k < c->n_out && k < 3; k++) {
        build_type *o = &c->out[k];
        o->elem = in_elem(c, 0);
        if (!has_rank(x) || x->rank != 3) continue;
        int32_t r = k == 0 ? 4 : 3, seq = batch_first ? 1 : 0, batch = batch_first ? 0 : 1;
        type_set_rank(o, r);
        int32_t at = 0;
        if (k == 0 && !batch_first) put_dim(o, at++, x, seq);
        if (batch_first) put_dim(o, at++, x, batch);
        if (k == 0 && batch_first) put_dim(o, at++, x, seq);
        o->d[at++] = dim_num(dirs);
        if (!batch_first) put_dim(o, at++, x, batch);
        o->d[at] = hidden > 0 ? dim_num(hidden) : dim_unknown();
    }
}

/* NonMaxSuppression: int64 [selected, 3] (batch, class, box), the count data. */
static void inf_nms(node_ctx *c) {
    build_type *o = &c->out[0];
    o->elem = DT_INT64;
    type_set_rank(o, 2);
    o->d[1] = dim_num(3);
}

/* RoiAlign: [rois, channels, output_height, output_width] of X's type. */
static void inf_roi_align(node_ctx *c) {
    const graph_type *x = IN(c, 0), *rois = IN(c, 1);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    type_set_rank(o, 4);
    if (has_rank(rois) && rois->rank == 2) put_dim(o, 0, rois, 0);
    if (has_rank(x) && x->rank == 4) put_dim(o, 1, x, 1);
    int64_t h = graph_attr_int(c->n, "output_height", 1), w = graph_attr_int(c->n, "output_width", 1);
    o->d[2] = h > 0 ? dim_num(h) : dim_unknown();
    o->d[3] = w > 0 ? dim_num(w) : dim_unknown();
}

/* DepthToSpace / SpaceToDepth: NCHW, channels traded for blocksize^2 space. */
static void inf_depth_space(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x) || x->rank != 4) return;
    type_set_rank(o, 4);
    int64_t b = graph_attr_int(c->n, "blocksize", 0);
    if (b <= 0) return;
    int64_t b2 = dmul(b, b);
    put_dim(o, 0, x, 0);
    bool to_space = graph_node_is(c->n, "DepthToSpace");
    int64_t ch = tdim(x, 1);
    if (ch >= 0) o->d[1] = size_num(to_space ? (ch % b2 ? -1 : ch / b2) : dmul(ch, b2));
    for (int32_t i = 2; i < 4; i++) {
        int64_t d = tdim(x, i);
        if (d >= 0) o->d[i] = size_num(to_space ? dmul(d, b) : (d % b ? -1 : d / b));
    }
}

/* If: each output is what both branches agree on. */
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
        s->iv[i] = known_from_tensor(r, g->pb->initializer[v->initializer]);
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
    node_ctx c = {.r = r, .sc = sc, .g = g, .idx = idx, .n = n, .opset = r->opset,
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
        type_from_tensor(r, tp, &t);
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

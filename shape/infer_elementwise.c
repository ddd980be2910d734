/*
** Shape inference for elementwise ops: their output keeps the input's shape or
** broadcasts the inputs' (numpy); arithmetic, Equal, Max/Min, Where and Cast
** also carry shape values entry by entry (4*N, N + 1, a named dim against -1).
*/
#include <math.h>
#include <string.h>

#include "graph/ops.h"
#include "shape/infer_impl.h"

void inf_same(node_ctx *c) {
    type_from(&c->out[0], IN(c, 0));
}

void inf_same_bool(node_ctx *c) {
    type_from(&c->out[0], IN(c, 0));
    c->out[0].elem = DT_BOOL;
}

void inf_identity(node_ctx *c) {
    type_from(&c->out[0], IN(c, 0));
    if (c->n_in > 0) c->outv[0] = (shape_value *)c->inv[0];
}

void inf_dropout(node_ctx *c) {
    inf_identity(c);
    if (c->n_out > 1) {
        type_from(&c->out[1], IN(c, 0));
        c->out[1].elem = DT_BOOL;
    }
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
    shape_value *o = sv_new(c->tmp, a->elem, rank, n, false);
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
            if (ok) sv_set(o, k, z);
            continue;
        }
        /* named dims: 4*N, N + 1, and Div(Mul(N, 4), N) back to 4 */
        static const dim_op ops[] = {[AR_ADD] = DIM_ADD, [AR_SUB] = DIM_SUB,
                                     [AR_MUL] = DIM_MUL, [AR_DIV] = DIM_DIV};
        dim z;
        if (op != AR_OTHER && dim_calc(c->m->arena, ops[op], x, y, &z)) o->e[k] = z;
    }
    c->outv[0] = o;
}

void inf_bcast(node_ctx *c) {
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

void inf_arith(node_ctx *c) {
    inf_bcast(c);
    arith_values(c, arith_of(c->n->op_type));
}

void inf_compare(node_ctx *c) {
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
    return sv_new(c->tmp, elem, rank, n, false);
}

/* Entry k of v broadcast to the zipped length. */
static dim zk(const shape_value *v, int64_t k) { return v->e[v->n == 1 ? 0 : k]; }

/* Equal on shape values, as exporters test a shape against -1 before Expand:
** equal numbers or the same named dim are equal; a named dim (>= 0) is not a
** negative number. */
void inf_equal(node_ctx *c) {
    inf_compare(c);
    shape_value *o = c->n_in == 2 ? values_zip(c, 0, 2, DT_BOOL) : NULL;
    if (!o) return;
    for (int32_t k = 0; k < o->n; k++) {
        dim x = zk(c->inv[0], k), y = zk(c->inv[1], k);
        bool neg_vs_dim = (dim_is_num(x) && x.n < 0 && dim_nonneg(y)) ||
                          (dim_is_num(y) && y.n < 0 && dim_nonneg(x));
        if (dim_eq(x, y) || (dim_is_num(x) && dim_is_num(y)) || neg_vs_dim)
            sv_set(o, k, dim_eq(x, y));
    }
    c->outv[0] = o;
}

/* Max/Min of shape values: numbers, the same named dim, or a size against a
** number <= 0. */
void inf_minmax(node_ctx *c) {
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

void inf_where(node_ctx *c) {
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

void inf_prelu(node_ctx *c) {
    type_from(&c->out[0], IN(c, 0));
}

void inf_cast(node_ctx *c) {
    type_from(&c->out[0], IN(c, 0));
    int64_t to = graph_attr_int(c->n, "to", 0);
    c->out[0].elem = dtype_valid((int32_t)to) ? (int32_t)to : 0;
    const shape_value *a = c->n_in ? c->inv[0] : NULL;
    if (!a || !c->out[0].elem) return;
    int32_t te = c->out[0].elem;
    bool to_int = elem_is_int(te), to_float = te == DT_FLOAT || te == DT_DOUBLE;
    if (!to_int && !to_float) return;
    shape_value *o = sv_new(c->tmp, te, a->rank, a->n, to_float);
    if (!o) return;
    const dtype_info *di = dtype_get(te);
    for (int32_t k = 0; k < a->n; k++) {
        if (!dim_is_num(a->e[k])) {
            if (to_int && !a->f) o->e[k] = a->e[k];
            continue;
        }
        if (to_float) {
            double x = a->f ? a->f[k] : (double)a->e[k].n;
            sv_set_float(o, k, te == DT_FLOAT ? (float)x : x);
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
        sv_set(o, k, x);
    }
    c->outv[0] = o;
}

void inf_castlike(node_ctx *c) {
    type_from(&c->out[0], IN(c, 0));
    c->out[0].elem = in_elem(c, 1);
}

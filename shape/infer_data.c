/*
** Shape inference for the ops shape subgraphs are made of, and ops that move
** data: Constant, Shape, Size, Tile, Expand, Reshape, Flatten, Transpose,
** Squeeze, Unsqueeze, Concat, Split, Slice, Gather, ConstantOfShape, Range and
** the index ops. Most carry shape values too, so Reshape/Tile/Expand inputs
** computed from Shape give known dims.
*/
#include <math.h>
#include <string.h>

#include "graph/const.h"
#include "shape/infer_impl.h"

/* Every attribute form of Constant reads as a TensorProto (graph_constant_value):
** its type, and its values when they are a small vector. */
void inf_constant(node_ctx *c) {
    graph_const_hdr hdr;
    const Onnx__TensorProto *t;
    errbuf e;
    if (graph_constant_value(c->n, &hdr, &t, &e) != TILEOPT_OK) return;
    type_from_tensor(t, &c->out[0]);
    c->outv[0] = sv_of_tensor(c->m, c->tmp, t);
}

void inf_shape(node_ctx *c) {
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
    int64_t n = dim_slice_len(r, start, end, 1);
    start = dim_slice_first(r, start, 1);
    o->d[0] = dim_num(n);
    shape_value *iv = sv_new(c->tmp, DT_INT64, 1, n, false);
    if (!iv) return;
    for (int64_t k = 0; k < n; k++) iv->e[k] = dim_at(x, (int32_t)(start + k));
    c->outv[0] = iv;
}

void inf_size(node_ctx *c) {
    c->out[0].elem = DT_INT64;
    c->out[0].rank = 0;
    const graph_type *x = IN(c, 0);
    uint64_t numel;
    if (x && graph_type_numel(x, &numel) && numel <= INT64_MAX) {
        shape_value *iv = sv_new(c->tmp, DT_INT64, 0, 1, false);
        if (iv) sv_set(iv, 0, (int64_t)numel);
        c->outv[0] = iv;
        return;
    }
    dim d[IR_MAX], p;
    if (!has_rank(x)) return;
    dims_of(x, d);
    if (!dim_product(c->m->arena, d, x->rank, &p)) return;
    shape_value *iv = sv_new(c->tmp, DT_INT64, 0, 1, false);
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
        if (dim_calc(c->m->arena, DIM_MUL, dim_at(x, i), rv->e[i], &p)) o->d[i] = dim_size(p);
    }
}

/* Tile-6/13 and the legacy Tile-1 (input, tiles, axis) form. */
void inf_tile(node_ctx *c) {
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

void inf_expand(node_ctx *c) {
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

static const Onnx__AttributeProto *attr_ints(const Onnx__NodeProto *n, const char *name) {
    const Onnx__AttributeProto *a = graph_attr(n, name);
    return a ? a : NULL;
}

void inf_reshape(node_ctx *c) {
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
        if (dim_quotient(c->m->arena, xd, x->rank, others, k, &q)) o->d[neg] = dim_size(q);
    }
    /* a tracked value keeps its entries through a reshape to rank <= 1 */
    const shape_value *xv = c->n_in ? c->inv[0] : NULL;
    if (xv && o->rank <= 1) {
        int64_t cnt = o->rank == 0 ? 1 : (dim_is_num(o->d[0]) ? o->d[0].n : -1);
        if (cnt == xv->n) {
            shape_value *ov = sv_new(c->tmp, xv->elem, o->rank, cnt, xv->f != NULL);
            if (ov) {
                for (int64_t k = 0; k < cnt; k++) sv_take(ov, k, xv, k);
                c->outv[0] = ov;
            }
        }
    }
}

void inf_flatten(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    type_set_rank(o, 2);
    if (!has_rank(x)) return;
    int64_t axis = graph_attr_int(c->n, "axis", 1);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis > x->rank) return;
    product_dim(c->m->arena, x, 0, (int32_t)axis, o, 0);
    product_dim(c->m->arena, x, (int32_t)axis, x->rank, o, 1);
}

void inf_transpose(node_ctx *c) {
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

void inf_squeeze(node_ctx *c) {
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
        shape_value *ov = sv_new(c->tmp, xv->elem, 0, 1, xv->f != NULL);
        if (ov) {
            sv_take(ov, 0, xv, 0);
            c->outv[0] = ov;
        }
    }
}

void inf_unsqueeze(node_ctx *c) {
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
        shape_value *ov = sv_new(c->tmp, xv->elem, 1, xv->n, xv->f != NULL);
        if (ov) {
            for (int64_t k = 0; k < xv->n; k++) sv_take(ov, k, xv, k);
            c->outv[0] = ov;
        }
    }
}

void inf_concat(node_ctx *c) {
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
    dim few[16];
    dim *along = c->n_in <= 16 ? few : arena_alloc(c->tmp, c->n_in * sizeof *along);
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
    if (all && dim_sum(c->m->arena, along, (int32_t)c->n_in, &sum)) o->d[ax] = dim_size(sum);
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
    shape_value *ov = sv_new(c->tmp, c->inv[0]->elem, 1, total, fl);
    if (!ov) return;
    int64_t k = 0;
    for (size_t i = 0; i < c->n_in; i++)
        for (int32_t e = 0; e < c->inv[i]->n; e++, k++) sv_take(ov, k, c->inv[i], e);
    c->outv[0] = ov;
}

void inf_split(node_ctx *c) {
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

void inf_slice(node_ctx *c) {
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
            o->d[a] = dim_num(dim_slice_len(d.n, st[k], en[k], step));
            first[a] = dim_slice_first(d.n, st[k], step);
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
        shape_value *ov = sv_new(c->tmp, xv->elem, 1, o->d[0].n, xv->f != NULL);
        if (!ov) return;
        for (int64_t k = 0; k < o->d[0].n; k++) {
            int64_t i = first[0] + k * stepv[0];
            if (i < 0 || i >= xv->n) return;
            sv_take(ov, k, xv, i);
        }
        c->outv[0] = ov;
    }
}

void inf_gather(node_ctx *c) {
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
    shape_value *ov = sv_new(c->tmp, xv->elem, iv->rank, iv->n, xv->f != NULL);
    if (!ov) return;
    for (int32_t k = 0; k < iv->n; k++) {
        if (!dim_is_num(iv->e[k])) return;
        int64_t i = iv->e[k].n;
        if (i < 0) i += xv->n;
        if (i < 0 || i >= xv->n) return;
        sv_take(ov, k, xv, i);
    }
    c->outv[0] = ov;
}

void inf_constant_of_shape(node_ctx *c) {
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
    if (va && va->t) fill = sv_of_tensor(c->m, c->tmp, va->t);
    else if (!va) {
        fill = sv_new(c->tmp, DT_FLOAT, 0, 1, true);
        if (fill) sv_set_float(fill, 0, 0.0);
    }
    if (!fill || fill->n != 1) return;
    shape_value *ov = sv_new(c->tmp, fill->elem, 1, numel, fill->f != NULL);
    if (!ov) return;
    for (int64_t k = 0; k < numel; k++) sv_take(ov, k, fill, 0);
    c->outv[0] = ov;
}

void inf_range(node_ctx *c) {
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
        if (dim_calc(c->m->arena, DIM_SUB, b->e[0], a->e[0], &len) && dim_nonneg(len))
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
            shape_value *ov = sv_new(c->tmp, a->elem, 1, n, false);
            if (ov) {
                /* within [s, l): no overflow, n being what it is */
                for (int64_t k = 0; k < n; k++) sv_set(ov, k, s + k * st);
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

void inf_nonzero(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = DT_INT64;
    type_set_rank(o, 2);
    if (has_rank(x)) o->d[0] = dim_num(x->rank);
}

void inf_topk(node_ctx *c) {
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

void inf_gather_elements(node_ctx *c) {
    type_from(&c->out[0], IN(c, 1));
    c->out[0].elem = in_elem(c, 0);
}

void inf_eyelike(node_ctx *c) {
    type_from(&c->out[0], IN(c, 0));
    int64_t dt = graph_attr_int(c->n, "dtype", 0);
    if (dt) c->out[0].elem = dtype_valid((int32_t)dt) ? (int32_t)dt : 0;
}

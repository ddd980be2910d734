/*
** What shape inference's rules share: types from stored, tensor and declared
** forms, broadcasting, tracked values and reading inputs as numbers.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shape/infer_impl.h"

/* Compile-time value of tensor data (small int/float tensors of rank <= 1 count;
** larger ranks with one element as well, as a scalar would). */
static shape_value *sv_of_data(arena *tmp, const graph_tensor_data *td) {
    if (td->numel > IV_MAX) return NULL;
    int32_t rank = td->rank;
    if (rank > 1) return NULL; /* only scalars and vectors are tracked */
    bool fl;
    if (elem_is_int(td->elem)) fl = false;
    else if (td->elem == DT_FLOAT || td->elem == DT_DOUBLE) fl = true;
    else return NULL;
    shape_value *iv = sv_new(tmp, td->elem, rank, (int64_t)td->numel, fl);
    if (!iv) return NULL;
    const uint8_t *p = td->data;
    for (uint64_t k = 0; k < td->numel; k++) {
        switch (td->elem) {
        case DT_FLOAT: { float x; memcpy(&x, p + 4 * k, 4); sv_set_float(iv, k, x); break; }
        case DT_DOUBLE: { double x; memcpy(&x, p + 8 * k, 8); sv_set_float(iv, k, x); break; }
        case DT_INT64: { int64_t x; memcpy(&x, p + 8 * k, 8); sv_set(iv, k, x); break; }
        case DT_UINT64: {
            uint64_t x;
            memcpy(&x, p + 8 * k, 8);
            if (x > INT64_MAX) return NULL;
            sv_set(iv, k, (int64_t)x);
            break;
        }
        case DT_INT32: { int32_t x; memcpy(&x, p + 4 * k, 4); sv_set(iv, k, x); break; }
        case DT_UINT32: { uint32_t x; memcpy(&x, p + 4 * k, 4); sv_set(iv, k, x); break; }
        case DT_INT16: { int16_t x; memcpy(&x, p + 2 * k, 2); sv_set(iv, k, x); break; }
        case DT_UINT16: { uint16_t x; memcpy(&x, p + 2 * k, 2); sv_set(iv, k, x); break; }
        case DT_INT8: sv_set(iv, k, (int8_t)p[k]); break;
        case DT_UINT8: sv_set(iv, k, p[k]); break;
        case DT_BOOL: sv_set(iv, k, p[k] != 0); break;
        default: return NULL;
        }
    }
    return iv;
}

void type_from(build_type *o, const graph_type *t) {
    o->elem = t ? t->elem : 0;
    o->rank = (t && t->rank >= 0 && t->rank <= IR_MAX) ? t->rank : -1;
    for (int32_t i = 0; i < o->rank; i++) o->d[i] = dim_at(t, i);
}

void type_set_rank(build_type *o, int32_t rank) {
    if (rank < 0 || rank > IR_MAX) {
        o->rank = -1;
        return;
    }
    o->rank = rank;
    for (int32_t i = 0; i < rank; i++) o->d[i] = dim_unknown();
}

/* Product of dims [from, to) of t as dim i of o. */
void product_dim(arena *names, const graph_type *t, int32_t from, int32_t to,
                 build_type *o, int32_t i) {
    dim d[IR_MAX], p;
    for (int32_t k = from; k < to; k++) d[k - from] = dim_at(t, k);
    if (dim_product(names, d, to - from, &p)) o->d[i] = dim_size(p);
}

/* Known integer entries of input i (all entries must be known), copied into
** the run's scratch arena. */
bool in_ints(const node_ctx *c, size_t i, const int64_t **v, int64_t *cnt) {
    const shape_value *iv = i < c->n_in ? c->inv[i] : NULL;
    if (!iv || iv->f) return false;
    int64_t *out = arena_alloc(c->tmp, (size_t)(iv->n ? iv->n : 1) * sizeof *out);
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
bool in_scalar_int(const node_ctx *c, size_t i, int64_t *out) {
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

bool in_floats(const node_ctx *c, size_t i, double *out, int64_t cap, int64_t *cnt) {
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
shape_value *sv_new(arena *tmp, int32_t elem, int32_t rank, int64_t n, bool is_float) {
    if (n < 0 || n > IV_MAX) return NULL;
    /* one block: the struct, the entries, the floats (each part 8-byte
    ** aligned); shape chains make one of these per value */
    size_t cnt = n ? (size_t)n : 1;
    size_t head = (sizeof(shape_value) + 7) / 8 * 8;
    size_t size = head + cnt * sizeof(dim) + (is_float ? cnt * sizeof(double) : 0);
    uint8_t *p = arena_alloc(tmp, size);
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

bool elem_is_int(int32_t e) {
    const dtype_info *di = dtype_get(e);
    return di && (di->kind == KIND_SINT || di->kind == KIND_UINT || di->kind == KIND_BOOL);
}

shape_value *sv_of_tensor(graph_model *m, arena *tmp, const Onnx__TensorProto *t) {
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
    if (graph_tensor_read(m, t, &td, &e) != TILEOPT_OK) return NULL;
    shape_value *iv = sv_of_data(tmp, &td);
    if (td.owned) free(td.data);
    return iv;
}

void type_from_tensor(const Onnx__TensorProto *t, build_type *o) {
    o->elem = t->has_data_type ? t->data_type : 0;
    if (t->n_dims > IR_MAX) {
        o->rank = -1;
        return;
    }
    o->rank = (int32_t)t->n_dims;
    for (size_t i = 0; i < t->n_dims; i++) o->d[i] = size_num(t->dims[i]);
}

void type_from_proto(const Onnx__TypeProto *tp, build_type *o) {
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

/* Axes from the attribute (before `since`) or input 1; false when unknown. */
bool get_axes(node_ctx *c, int64_t since, size_t input, const int64_t **v, int64_t *n,
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

/* Numpy broadcasting of the given types into o (shape only). */
void bcast(build_type *o, const graph_type *const *ts, size_t k) {
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

void bcast_inputs(node_ctx *c, size_t from, size_t to) {
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

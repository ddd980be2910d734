/*
** Reading values out of tensors for people and tests: compare two tensors the
** way ONNX's backend tests do (numpy.isclose for floating types, exactly for the
** rest; sequences and optionals item by item), print one element, and detach a
** value from the model's memory before it leaves the library.
*/
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "eval/eval_impl.h"

/* Numeric view of element i of a contiguous tensor: component c (complex has
** two). false for types compared bit-exactly (string, 8-bit floats). */
static bool elem_double(const tensor *t, uint64_t i, int c, double *v) {
    const uint8_t *p = t->data + i * tensor_elem_size(t);
    switch (t->elem) {
    case DT_FLOAT: { float f; memcpy(&f, p, 4); *v = f; return true; }
    case DT_DOUBLE: memcpy(v, p, 8); return true;
    case DT_FLOAT16: { uint16_t h; memcpy(&h, p, 2); *v = eval_f16_to_f32(h); return true; }
    case DT_BFLOAT16: { uint16_t h; memcpy(&h, p, 2); *v = eval_bf16_to_f32(h); return true; }
    case DT_COMPLEX64: { float f; memcpy(&f, p + 4 * c, 4); *v = f; return true; }
    case DT_COMPLEX128: memcpy(v, p + 8 * c, 8); return true;
    case DT_BOOL: *v = *p != 0; return true;
    case DT_INT8: { int8_t x; memcpy(&x, p, 1); *v = x; return true; }
    case DT_UINT8: *v = *p; return true;
    case DT_INT16: { int16_t x; memcpy(&x, p, 2); *v = x; return true; }
    case DT_UINT16: { uint16_t x; memcpy(&x, p, 2); *v = x; return true; }
    case DT_INT32: { int32_t x; memcpy(&x, p, 4); *v = x; return true; }
    case DT_UINT32: { uint32_t x; memcpy(&x, p, 4); *v = x; return true; }
    case DT_INT64: { int64_t x; memcpy(&x, p, 8); *v = (double)x; return true; }
    case DT_UINT64: { uint64_t x; memcpy(&x, p, 8); *v = (double)x; return true; }
    default: return false;
    }
}

static int components(int32_t elem) {
    return elem == DT_COMPLEX64 || elem == DT_COMPLEX128 ? 2 : 1;
}

size_t tensor_format(const tensor *t, uint64_t i, char *buf, size_t cap) {
    if (!cap) return 0;
    buf[0] = '\0';
    if (t->kind != EVAL_TENSOR || i >= tensor_numel(t)) return 0;
    tensor *c = NULL;
    if (tensor_contiguous((tensor *)t, NULL, &c, NULL)) return 0;
    const uint8_t *p = c->data + i * tensor_elem_size(c);
    int w = 0;
    double v, im;
    if (c->elem == DT_STRING) {
        const graph_bytes *s = (const graph_bytes *)(const void *)p;
        int len = s->len > 40 ? 40 : (int)s->len;
        w = snprintf(buf, cap, "\"%.*s\"%s", len, s->data ? (const char *)s->data : "",
                     s->len > 40 ? "..." : "");
    } else if (c->elem == DT_INT64) {
        int64_t x;
        memcpy(&x, p, 8);
        w = snprintf(buf, cap, "%" PRId64, x);
    } else if (c->elem == DT_UINT64) {
        uint64_t x;
        memcpy(&x, p, 8);
        w = snprintf(buf, cap, "%" PRIu64, x);
    } else if (components(c->elem) == 2 && elem_double(c, i, 0, &v) &&
               elem_double(c, i, 1, &im)) {
        w = snprintf(buf, cap, "%.9g%+.9gj", v, im);
    } else if (elem_double(c, i, 0, &v)) {
        const dtype_info *d = dtype_get(c->elem);
        if (d && d->kind == KIND_FLOAT) w = snprintf(buf, cap, "%.9g", v);
        else w = snprintf(buf, cap, "%.0f", v);
    } else {
        w = snprintf(buf, cap, "0x%02x", *p);
    }
    tensor_free(c);
    return w > 0 ? (size_t)w : 0;
}

/* Sequences and optionals item by item: the kinds, the item counts and every
** item's type and shape must agree (else same_shape is false); the differences
** add up and the first bad item is named. An empty optional equals an empty
** optional. */
static int compare_items(const tensor *expected, const tensor *actual, double rtol,
                         double atol, tensor_diff *d, errbuf *err) {
    if (expected->kind != actual->kind || expected->n_items != actual->n_items)
        return TILEOPT_OK;
    d->same_shape = true;
    for (size_t i = 0; i < actual->n_items; i++) {
        tensor_diff di;
        int rc = tensor_compare(expected->items[i], actual->items[i], rtol, atol, &di, err);
        if (rc) return rc;
        if (di.max_abs > d->max_abs) d->max_abs = di.max_abs;
        if (di.max_rel > d->max_rel) d->max_rel = di.max_rel;
        if (d->bad_item < 0 && (!di.same_shape || di.n_bad)) {
            d->bad_item = (int64_t)i;
            d->first_bad = di.first_bad;
            memcpy(d->expected, di.expected, sizeof d->expected);
            memcpy(d->actual, di.actual, sizeof d->actual);
        }
        if (!di.same_shape) {
            d->same_shape = false;
            return TILEOPT_OK;
        }
        d->n_bad += di.n_bad;
    }
    return TILEOPT_OK;
}

int tensor_compare(const tensor *expected, const tensor *actual, double rtol, double atol,
                   tensor_diff *d, errbuf *err) {
    memset(d, 0, sizeof *d);
    d->first_bad = UINT64_MAX;
    d->bad_item = -1;
    if (expected->kind != EVAL_TENSOR || actual->kind != EVAL_TENSOR)
        return compare_items(expected, actual, rtol, atol, d, err);
    if (expected->elem != actual->elem || expected->rank != actual->rank ||
        memcmp(expected->dims, actual->dims, (size_t)expected->rank * sizeof(int64_t)) != 0)
        return TILEOPT_OK;
    d->same_shape = true;
    tensor *e = NULL, *a = NULL;
    int rc = tensor_contiguous((tensor *)expected, NULL, &e, err);
    if (!rc) rc = tensor_contiguous((tensor *)actual, NULL, &a, err);
    if (rc) {
        tensor_free(e);
        return rc;
    }
    uint64_t n = tensor_numel(e);
    size_t es = tensor_elem_size(e);
    int nc = components(e->elem);
    /* Tolerance is for rounding, which only floating types have: an integer, a
    ** bool or a string that differs at all is a different result (an int64 off by
    ** one at 1e18 is within any relative tolerance). */
    const dtype_info *di = dtype_get(e->elem);
    bool exact = !di || (di->kind != KIND_FLOAT && di->kind != KIND_COMPLEX);
    for (uint64_t i = 0; i < n; i++) {
        bool ok = true;
        double ev, av;
        if (e->elem == DT_STRING) {
            const graph_bytes *x = (const graph_bytes *)(const void *)(e->data + i * es);
            const graph_bytes *y = (const graph_bytes *)(const void *)(a->data + i * es);
            ok = x->len == y->len && (!x->len || memcmp(x->data, y->data, x->len) == 0);
        } else if (exact || !elem_double(e, i, 0, &ev)) {
            ok = memcmp(e->data + i * es, a->data + i * es, es) == 0;
            if (!ok && elem_double(e, i, 0, &ev) && elem_double(a, i, 0, &av)) {
                double diff = fabs(av - ev), rel = ev != 0 ? diff / fabs(ev) : INFINITY;
                if (diff > d->max_abs) d->max_abs = diff;
                if (rel > d->max_rel) d->max_rel = rel;
            }
        } else {
            for (int c = 0; c < nc; c++) {
                elem_double(e, i, c, &ev);
                elem_double(a, i, c, &av);
                if (isnan(ev) || isnan(av)) {
                    if (!(isnan(ev) && isnan(av))) ok = false;
                    continue;
                }
                if (ev == av) continue; /* equal infinities too */
                double diff = fabs(av - ev);
                double rel = ev != 0 ? diff / fabs(ev) : INFINITY;
                if (!isnan(diff) && diff > d->max_abs) d->max_abs = diff;
                if (!isnan(rel) && rel > d->max_rel) d->max_rel = rel;
                if (!(diff <= atol + rtol * fabs(ev))) ok = false;
            }
        }
        if (!ok) {
            if (d->n_bad++ == 0) {
                d->first_bad = i;
                tensor_format(e, i, d->expected, sizeof d->expected);
                tensor_format(a, i, d->actual, sizeof d->actual);
            }
        }
    }
    tensor_free(e);
    tensor_free(a);
    return TILEOPT_OK;
}

int tensor_detach(tensor *t, const eval_env *env, tensor **out, errbuf *err) {
    *out = NULL;
    if (t->kind != EVAL_TENSOR) return value_map(t, tensor_detach, env, out, err);
    tensor *c = NULL;
    int rc = tensor_contiguous(t, env, &c, err);
    if (rc) return rc;
    if (c->buf && c->elem != DT_STRING) {
        c->name = NULL; /* a name would point into the model, which may go first */
        *out = c;
        return TILEOPT_OK;
    }
    /* A detached string tensor owns a copy of every element's bytes: a Tile of a
    ** 1 MiB string 100,000 times is 100 GB here, though the view shared one copy.
    ** The limit counts those bytes, not only the 16-byte element headers. */
    if (c->elem == DT_STRING) {
        const eval_env *l = env;
        eval_env dflt;
        if (!l) {
            eval_env_default(&dflt);
            l = &dflt;
        }
        /* The smaller limit that is set, and its flag, for the message. */
        uint64_t cap = l->lim.max_tensor_bytes;
        const char *flag = "max-tensor-bytes";
        if (l->lim.max_eval_bytes && (!cap || l->lim.max_eval_bytes < cap)) {
            cap = l->lim.max_eval_bytes;
            flag = "max-eval-bytes";
        }
        const graph_bytes *s = (const graph_bytes *)(const void *)c->data;
        uint64_t total = tensor_nbytes(c), n = tensor_numel(c);
        for (uint64_t i = 0; i < n; i++) {
            bool over = !eval_add_u64(total, s[i].len, &total) || (cap && total > cap);
            if (over) {
                tensor_free(c);
                return err_set(err, TILEOPT_LIMIT,
                               "a string tensor of %" PRIu64 " elements holds more than %" PRIu64
                               " bytes of text (%s)", n, cap ? cap : UINT64_MAX, flag);
            }
        }
    }
    tensor *o = NULL;
    rc = tensor_alloc(c->elem, c->dims, c->rank, env, &o, err);
    if (rc) {
        tensor_free(c);
        return rc;
    }
    size_t nb = (size_t)tensor_nbytes(c);
    if (nb) memcpy(o->data, c->data, nb);
    if (c->elem == DT_STRING) {
        graph_bytes *s = (graph_bytes *)(void *)o->data;
        for (uint64_t i = 0; i < tensor_numel(o); i++) {
            if (!s[i].len) continue;
            uint8_t *p = tbuf_bytes(o->buf, s[i].len + 1);
            if (!p) {
                tensor_free(o);
                tensor_free(c);
                return err_set(err, TILEOPT_NOMEM, "out of memory");
            }
            memcpy(p, s[i].data, s[i].len);
            p[s[i].len] = '\0'; /* every string of the evaluator is NUL-terminated */
            s[i].data = p;
        }
    }
    o->name = NULL;
    tensor_free(c);
    *out = o;
    return TILEOPT_OK;
}

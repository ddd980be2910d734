/*
** The dim type (shape/dim.h): equality, arithmetic through the canonical
** polynomials of shape/symdim.h, and numpy broadcasting.
*/
#include "shape/dim.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "shape/symdim.h"

const char dim_unknown_text[] = "?";

bool dim_named_eq(dim a, dim b) {
    if (!a.sym || !b.sym || a.sym == dim_unknown_text || b.sym == dim_unknown_text)
        return false;
    return a.sym == b.sym || strcmp(a.sym, b.sym) == 0;
}

bool dims_eq(const dim *a, int32_t ra, const dim *b, int32_t rb) {
    if (ra != rb) return false;
    for (int32_t i = 0; i < ra; i++)
        if (!dim_eq(a[i], b[i])) return false;
    return true;
}

bool dims_static(const dim *d, int32_t rank) {
    for (int32_t i = 0; i < rank; i++)
        if (!dim_is_num(d[i])) return false;
    return true;
}

bool dims_to_type(arena *a, const dim *d, int32_t rank, graph_type *t) {
    int64_t *dims = arena_alloc(a, (size_t)(rank ? rank : 1) * sizeof *dims);
    if (!dims) return false;
    const char **syms = NULL;
    for (int32_t i = 0; i < rank; i++) {
        dims[i] = dim_stored_n(d[i]);
        if (dim_is_named(d[i]) && !syms) {
            syms = arena_calloc(a, (size_t)rank, sizeof *syms);
            if (!syms) return false;
        }
        if (syms) syms[i] = dim_stored_sym(d[i]);
    }
    t->rank = rank;
    t->dims = dims;
    t->syms = syms;
    return true;
}

size_t dims_print(char *buf, size_t cap, const dim *d, int32_t n) {
    size_t k = 0;
    if (cap) buf[0] = 0;
    for (int32_t i = 0; i < n && k < cap; i++) {
        const char *sep = i ? "," : "";
        k += (size_t)(dim_is_num(d[i]) ? snprintf(buf + k, cap - k, "%s%" PRId64, sep, d[i].n)
                                       : snprintf(buf + k, cap - k, "%s%s", sep, d[i].sym));
    }
    return k;
}

/* ------------------------------------------------------------ arithmetic */

static bool poly_of(dim d, sym_poly *p) {
    if (dim_is_num(d)) {
        sym_const(d.n, p);
        return true;
    }
    return dim_is_named(d) && sym_parse(d.sym, p);
}

/* Back to a dim: its number, or its canonical text. */
static bool dim_of_poly(arena *a, const sym_poly *p, dim *out) {
    int64_t c;
    if (sym_is_const(p, &c)) {
        *out = dim_num(c);
        return true;
    }
    char buf[128];
    if (!sym_render(p, buf, sizeof buf)) return false;
    const char *s = arena_strdup(a, buf);
    if (!s) return false;
    *out = dim_named(s);
    return true;
}

static bool poly_calc(dim_op op, const sym_poly *x, const sym_poly *y, sym_poly *o) {
    switch (op) {
    case DIM_ADD: return sym_add(x, y, 1, o);
    case DIM_SUB: return sym_add(x, y, -1, o);
    case DIM_MUL: return sym_mul(x, y, o);
    case DIM_DIV: return sym_div(x, y, o);
    }
    return false;
}

bool dim_calc(arena *a, dim_op op, dim x, dim y, dim *out) {
    sym_poly px, py, r;
    return poly_of(x, &px) && poly_of(y, &py) && poly_calc(op, &px, &py, &r) &&
           dim_of_poly(a, &r, out);
}

/* The sum or product of d[0..n) when they are all numbers, as the polynomials
** would give it (false on overflow): shapes are mostly numbers, and need no
** polynomial made. */
static bool nums_fold(dim_op op, int64_t start, const dim *d, int32_t n, int64_t *r) {
    *r = start;
    for (int32_t i = 0; i < n; i++)
        if (op == DIM_ADD ? __builtin_add_overflow(*r, d[i].n, r)
                          : __builtin_mul_overflow(*r, d[i].n, r))
            return false;
    return true;
}

/* d[0..n) folded with op from `start`, as one polynomial (texts are made
** once, at the end). */
static bool poly_fold(dim_op op, int64_t start, const dim *d, int32_t n, sym_poly *p) {
    sym_const(start, p);
    for (int32_t i = 0; i < n; i++) {
        sym_poly x, q;
        if (!poly_of(d[i], &x) || !poly_calc(op, p, &x, &q)) return false;
        *p = q;
    }
    return true;
}

static bool dim_fold(arena *a, dim_op op, int64_t start, const dim *d, int32_t n, dim *out) {
    int64_t r;
    sym_poly p;
    if (!dims_static(d, n)) return poly_fold(op, start, d, n, &p) && dim_of_poly(a, &p, out);
    if (!nums_fold(op, start, d, n, &r)) return false;
    *out = dim_num(r);
    return true;
}

bool dim_sum(arena *a, const dim *d, int32_t n, dim *out) {
    return dim_fold(a, DIM_ADD, 0, d, n, out);
}

bool dim_product(arena *a, const dim *d, int32_t n, dim *out) {
    return dim_fold(a, DIM_MUL, 1, d, n, out);
}

bool dim_quotient(arena *a, const dim *num, int32_t nn, const dim *den, int32_t nd,
                  dim *out) {
    int64_t x, y;
    if (dims_static(num, nn) && dims_static(den, nd)) {
        if (!nums_fold(DIM_MUL, 1, num, nn, &x) || !nums_fold(DIM_MUL, 1, den, nd, &y) ||
            y == 0 || (y == -1 && x == INT64_MIN) || x % y)
            return false;
        *out = dim_num(x / y);
        return true;
    }
    sym_poly pn, pd, q;
    return poly_fold(DIM_MUL, 1, num, nn, &pn) && poly_fold(DIM_MUL, 1, den, nd, &pd) &&
           sym_div(&pn, &pd, &q) && dim_of_poly(a, &q, out);
}

bool dim_nonneg(dim d) {
    if (dim_is_num(d)) return d.n >= 0;
    sym_poly p;
    if (!dim_is_named(d) || !sym_parse(d.sym, &p)) return false;
    for (int i = 0; i < p.n; i++)
        if (p.t[i].coef < 0) return false;
    return true;
}

static int64_t clampi(int64_t v, int64_t lo, int64_t hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

int64_t dim_slice_len(int64_t d, int64_t start, int64_t end, int64_t step) {
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

int64_t dim_slice_first(int64_t d, int64_t start, int64_t step) {
    if (step > 0) return start < 0 ? clampi(start + d, 0, d) : clampi(start, 0, d);
    return start < 0 ? clampi(start + d, 0, d - 1) : clampi(start, 0, d - 1);
}

/* ---------------------------------------------------------- broadcasting */

void dim_bcast_start(dim_bcast *b) {
    b->rank = 0;
    b->added = 0;
    b->proven = true;
    b->invalid = 0;
}

void dim_bcast_add(dim_bcast *b, const dim *d, int32_t rank) {
    for (int32_t j = b->rank; j < rank; j++) b->rev[j] = dim_num(1);
    if (rank > b->rank) b->rank = rank;
    for (int32_t i = 0; i < rank; i++) {
        int32_t j = rank - 1 - i;
        dim e = d[i], *r = &b->rev[j];
        if ((b->invalid >> j & 1) || dim_is(e, 1) || dim_eq(*r, e)) continue;
        if (dim_is(*r, 1)) {
            *r = e;
            continue;
        }
        if (b->proven) {
            b->proven = false;
            b->clash = (dim_clash){b->added, i, b->rank - 1 - j, e, *r};
        }
        if (dim_is_num(*r) && dim_is_num(e)) {
            *r = dim_unknown();
            b->invalid |= (uint64_t)1 << j;
        } else if (dim_is_num(e)) {
            *r = e;
        } else if (!dim_is_num(*r)) {
            *r = dim_unknown();
        }
    }
    b->added++;
}

void dim_bcast_result(const dim_bcast *b, dim *out) {
    for (int32_t i = 0; i < b->rank; i++) out[i] = b->rev[b->rank - 1 - i];
}

bool dim_broadcast2(const dim *a, int32_t ra, const dim *b, int32_t rb, dim *out,
                    int32_t *rank) {
    dim_bcast bc;
    dim_bcast_start(&bc);
    dim_bcast_add(&bc, a, ra);
    dim_bcast_add(&bc, b, rb);
    if (!bc.proven) return false;
    dim_bcast_result(&bc, out);
    *rank = bc.rank;
    return true;
}

/* ---------------------------------------------------------- shape values */

bool shape_value_static(const shape_value *v) {
    return dims_static(v->e, v->n);
}

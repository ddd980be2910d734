/*
** Symbolic dims as canonical polynomials (shape/symdim.h says the form).
** Everything here is small and fixed-size: at most SYM_TERMS terms, so the
** quadratic loops below stay a few dozen steps.
*/
#include "shape/symdim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int factor_cmp(const sym_factor *a, const sym_factor *b) {
    uint32_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->s, b->s, n);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* Terms order: higher degree first, then by factors; the constant last. */
static int term_cmp(const sym_term *a, const sym_term *b) {
    if (a->n != b->n) return a->n > b->n ? -1 : 1;
    for (int i = 0; i < a->n; i++) {
        int c = factor_cmp(&a->f[i], &b->f[i]);
        if (c) return c;
    }
    return 0;
}

static void sort_factors(sym_term *t) {
    for (int i = 1; i < t->n; i++)
        for (int j = i; j > 0 && factor_cmp(&t->f[j - 1], &t->f[j]) > 0; j--) {
            sym_factor x = t->f[j];
            t->f[j] = t->f[j - 1];
            t->f[j - 1] = x;
        }
}

/* Sort terms, combine like ones, drop zeros. Takes up to `n` raw terms in raw
** (more than SYM_TERMS while multiplying); false when the result has too many. */
static bool normalize(sym_term *raw, int n, sym_poly *o) {
    for (int i = 0; i < n; i++) sort_factors(&raw[i]);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && term_cmp(&raw[j - 1], &raw[j]) > 0; j--) {
            sym_term x = raw[j];
            raw[j] = raw[j - 1];
            raw[j - 1] = x;
        }
    int k = 0;
    sym_term acc[SYM_TERMS * SYM_TERMS];
    for (int i = 0; i < n; i++) {
        if (k && term_cmp(&acc[k - 1], &raw[i]) == 0) {
            if (__builtin_add_overflow(acc[k - 1].coef, raw[i].coef, &acc[k - 1].coef))
                return false;
            continue;
        }
        acc[k++] = raw[i];
    }
    o->n = 0;
    for (int i = 0; i < k; i++) {
        if (!acc[i].coef) continue;
        /* a coefficient with no positive counterpart cannot be printed */
        if (acc[i].coef == INT64_MIN || o->n == SYM_TERMS) return false;
        o->t[o->n++] = acc[i];
    }
    return true;
}

void sym_const(int64_t v, sym_poly *p) {
    p->n = v != 0;
    p->t[0].coef = v;
    p->t[0].n = 0;
}

bool sym_is_const(const sym_poly *p, int64_t *v) {
    if (p->n == 0) {
        *v = 0;
        return true;
    }
    if (p->n != 1 || p->t[0].n != 0) return false;
    *v = p->t[0].coef;
    return true;
}

/* Where the next term starts: " + " or " - " at s[i]. */
static bool term_sep(const char *s, size_t i, size_t len) {
    return i + 2 < len && s[i] == ' ' && (s[i + 1] == '+' || s[i + 1] == '-') && s[i + 2] == ' ';
}

static bool parse_term(const char *s, size_t len, int64_t sign, sym_term *t) {
    t->coef = sign;
    t->n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != '*') continue;
        size_t fl = i - start;
        const char *f = s + start;
        if (!fl) return false;
        bool digits = fl <= 18;
        for (size_t k = 0; digits && k < fl; k++) digits = f[k] >= '0' && f[k] <= '9';
        if (digits) {
            int64_t v = strtoll(f, NULL, 10);
            if (__builtin_mul_overflow(t->coef, v, &t->coef)) return false;
        } else {
            if (t->n == SYM_FACTORS) return false;
            t->f[t->n].s = f;
            t->f[t->n++].len = (uint32_t)fl;
        }
        start = i + 1;
    }
    return true;
}

bool sym_parse(const char *name, sym_poly *p) {
    size_t len = strlen(name);
    if (!len || len > 4096) return false;
    sym_term raw[SYM_TERMS];
    int n = 0;
    size_t start = 0;
    int64_t sign = 1;
    if (name[0] == '-' && len > 1) {
        sign = -1;
        start = 1;
    }
    for (size_t i = start; i <= len; i++) {
        if (i < len && !term_sep(name, i, len)) continue;
        if (n == SYM_TERMS || !parse_term(name + start, i - start, sign, &raw[n++]))
            return false;
        if (i < len) {
            sign = name[i + 1] == '-' ? -1 : 1;
            start = i + 3;
            i += 2;
        }
    }
    if (!normalize(raw, n, p)) return false;
    /* a name that reads as a plain number is still a name, never that number;
    ** one whose terms cancel to a number ("N - N") cannot be written as a name */
    int64_t v;
    if (sym_is_const(p, &v)) {
        if (strchr(name, '*') || strstr(name, " + ") || strstr(name, " - ")) return false;
        p->n = 1;
        p->t[0].coef = 1;
        p->t[0].n = 1;
        p->t[0].f[0].s = name;
        p->t[0].f[0].len = (uint32_t)len;
    }
    return true;
}

bool sym_add(const sym_poly *a, const sym_poly *b, int sign, sym_poly *o) {
    sym_term raw[2 * SYM_TERMS];
    int n = 0;
    for (int i = 0; i < a->n; i++) raw[n++] = a->t[i];
    for (int i = 0; i < b->n; i++) {
        raw[n] = b->t[i];
        if (__builtin_mul_overflow(raw[n].coef, (int64_t)sign, &raw[n].coef)) return false;
        n++;
    }
    return normalize(raw, n, o);
}

bool sym_mul(const sym_poly *a, const sym_poly *b, sym_poly *o) {
    sym_term raw[SYM_TERMS * SYM_TERMS];
    int n = 0;
    for (int i = 0; i < a->n; i++)
        for (int j = 0; j < b->n; j++) {
            sym_term *t = &raw[n++];
            if (a->t[i].n + b->t[j].n > SYM_FACTORS ||
                __builtin_mul_overflow(a->t[i].coef, b->t[j].coef, &t->coef))
                return false;
            t->n = 0;
            for (int k = 0; k < a->t[i].n; k++) t->f[t->n++] = a->t[i].f[k];
            for (int k = 0; k < b->t[j].n; k++) t->f[t->n++] = b->t[j].f[k];
        }
    return normalize(raw, n, o);
}

static bool same_poly(const sym_poly *a, const sym_poly *b) {
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++)
        if (a->t[i].coef != b->t[i].coef || term_cmp(&a->t[i], &b->t[i])) return false;
    return true;
}

/* t / d for one term: the coefficient divides and d's factors are among t's. */
static bool term_div(const sym_term *t, const sym_term *d, sym_term *q) {
    if (d->coef == 0 || t->coef % d->coef) return false;
    q->coef = t->coef / d->coef;
    bool used[SYM_FACTORS] = {false};
    for (int j = 0; j < d->n; j++) {
        int k = 0;
        while (k < t->n && (used[k] || factor_cmp(&t->f[k], &d->f[j]))) k++;
        if (k == t->n) return false;
        used[k] = true;
    }
    q->n = 0;
    for (int k = 0; k < t->n; k++)
        if (!used[k]) q->f[q->n++] = t->f[k];
    return true;
}

bool sym_div(const sym_poly *a, const sym_poly *b, sym_poly *o) {
    if (b->n == 0) return false;
    if (same_poly(a, b)) {
        sym_const(1, o);
        return true;
    }
    if (b->n != 1) return false;
    sym_term raw[SYM_TERMS];
    for (int i = 0; i < a->n; i++)
        if (!term_div(&a->t[i], &b->t[0], &raw[i])) return false;
    return normalize(raw, a->n, o);
}

size_t sym_render(const sym_poly *p, char *buf, size_t cap) {
    size_t k = 0;
    if (!cap) return 0;
    buf[0] = 0;
    if (p->n == 0) return (size_t)snprintf(buf, cap, "0") < cap ? 1 : 0;
    for (int i = 0; i < p->n; i++) {
        const sym_term *t = &p->t[i];
        int64_t c = t->coef < 0 ? -t->coef : t->coef;
        const char *sep = i == 0 ? (t->coef < 0 ? "-" : "") : (t->coef < 0 ? " - " : " + ");
        int w = (c != 1 || t->n == 0)
                    ? snprintf(buf + k, cap - k, "%s%lld%s", sep, (long long)c, t->n ? "*" : "")
                    : snprintf(buf + k, cap - k, "%s", sep);
        if (w < 0 || (size_t)w >= cap - k) return 0;
        k += (size_t)w;
        for (int j = 0; j < t->n; j++) {
            w = snprintf(buf + k, cap - k, "%s%.*s", j ? "*" : "", (int)t->f[j].len, t->f[j].s);
            if (w < 0 || (size_t)w >= cap - k) return 0;
            k += (size_t)w;
        }
    }
    return k;
}

/*
** Symbolic dims: integer polynomials over named dims, written in one canonical
** form, so that two dims are provably equal when their strings are equal:
**     "N"   "2*N"   "M*N"   "N + 1"   "2*N*T - M"
** Factors within a term are sorted, like terms combined, terms sorted (higher
** degree first, the constant last); "*" joins factors, " + " and " - " join
** terms (the form ONNX Runtime's symbolic shape inference writes). A dim_param
** that reads as such a form means that polynomial; any other name is one
** factor. Shape inference uses this for Add/Sub/Mul/Div of shape values, Concat
** along an axis, Tile and Reshape, so Div(Mul(N, 4), N) is 4 and a Tile's
** repeats [2*N] match a dim "2*N" computed elsewhere.
**
** Sizes are bounded (SYM_TERMS terms of SYM_FACTORS factors); an operation
** whose result does not fit fails, and the caller leaves the dim unknown.
*/
#ifndef TILEOPT_SYMDIM_H
#define TILEOPT_SYMDIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SYM_TERMS 8
#define SYM_FACTORS 6

typedef struct sym_factor {
    const char *s;           /* not NUL-terminated: a slice of a dim name */
    uint32_t len;
} sym_factor;

typedef struct sym_term {
    int64_t coef;            /* never 0 in a normalized polynomial */
    int n;                   /* factors; 0 for the constant term */
    sym_factor f[SYM_FACTORS];
} sym_term;

typedef struct sym_poly {
    int n;                   /* terms; 0 is the number 0 */
    sym_term t[SYM_TERMS];
} sym_poly;

/* The polynomial a dim name stands for. The factors point into name, which
** must outlive p. False when name holds operators but too many terms or
** factors to represent, or terms that cancel to a number. */
bool sym_parse(const char *name, sym_poly *p);

void sym_const(int64_t v, sym_poly *p);

/* True (and *v) when p is a number. */
bool sym_is_const(const sym_poly *p, int64_t *v);

/* o = a + sign*b (sign 1 or -1), o = a*b, o = a/b when b divides a exactly
** (b a single term dividing every term of a, or b equal to a). o may alias
** neither input. False on overflow, on a result too large, or for a division
** that is not exact. */
bool sym_add(const sym_poly *a, const sym_poly *b, int sign, sym_poly *o);
bool sym_mul(const sym_poly *a, const sym_poly *b, sym_poly *o);
bool sym_div(const sym_poly *a, const sym_poly *b, sym_poly *o);

/* Write the canonical form into buf; the length, or 0 when it does not fit. */
size_t sym_render(const sym_poly *p, char *buf, size_t cap);

#endif

/*
** Dims, and the small integer tensors shape subgraphs compute, as every layer
** above graph/ sees them: shape inference, the evaluator's shape checks, fold
** and fuse.
**
** A dim is a number, a named dim or unknown. A named dim's text is the
** canonical form of its polynomial (shape/symdim.h: "N", "2*N", "N + 1"), so
** equal text is provably equal; an unknown dim equals nothing, not even another
** unknown one (dim_eq). A number in a shape is a size (>= 0); an entry of a
** shape value may be any integer (the -1 of a Reshape target).
**
** graph_type keeps a shape as two arrays (dims, syms), the form the loader and
** the saver share with the public API; dim_at reads a dim out of it, and shape
** inference writes its results back in that form.
*/
#ifndef TILEOPT_DIM_H
#define TILEOPT_DIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"

/* Highest rank of a shape anything above graph/ works on (the loader's
** default --max-rank). */
#define DIM_MAX_RANK 64

typedef struct dim {
    int64_t n;               /* the number, when sym is NULL */
    const char *sym;         /* a named dim's text, dim_unknown_text, or NULL */
} dim;

/* The text an unknown dim prints as ("?"). An unknown dim is told by this
** pointer, never by its text: a model may name a dim "?". */
extern const char dim_unknown_text[];

static inline dim dim_num(int64_t n) { return (dim){n, NULL}; }
static inline dim dim_unknown(void) { return (dim){0, dim_unknown_text}; }
/* A named dim; unknown when name is NULL. */
static inline dim dim_named(const char *name) {
    return name ? (dim){0, name} : dim_unknown();
}
static inline bool dim_is_num(dim d) { return !d.sym; }
static inline bool dim_is_named(dim d) { return d.sym && d.sym != dim_unknown_text; }
static inline bool dim_is_unknown(dim d) { return d.sym == dim_unknown_text; }
/* Is d the number v? */
static inline bool dim_is(dim d, int64_t v) { return !d.sym && d.n == v; }
/* A number that is no size (negative) is unknown as a dim. */
static inline dim dim_size(dim d) { return !d.sym && d.n < 0 ? dim_unknown() : d; }

/* Provably equal: the same number, or the same named dim (dim_named_eq). */
bool dim_named_eq(dim a, dim b);
static inline bool dim_eq(dim a, dim b) {
    if (!a.sym || !b.sym) return !a.sym && !b.sym && a.n == b.n;
    return dim_named_eq(a, b);
}
bool dims_eq(const dim *a, int32_t ra, const dim *b, int32_t rb);
/* Every dim a number. */
bool dims_static(const dim *d, int32_t rank);

/* Dim i of a stored type: a number (>= 0), the named dim syms[i], or unknown. */
static inline dim dim_at(const graph_type *t, int32_t i) {
    int64_t n = t->dims ? t->dims[i] : -1;
    return n >= 0 ? dim_num(n) : dim_named(t->syms ? t->syms[i] : NULL);
}
/* A dim as graph_type stores it: dims[i] (-1 when it is no number) and syms[i]. */
static inline int64_t dim_stored_n(dim d) { return dim_is_num(d) ? d.n : -1; }
static inline const char *dim_stored_sym(dim d) { return dim_is_named(d) ? d.sym : NULL; }
/* t's shape becomes d[0..rank), its arrays allocated in `a` (syms NULL when no
** dim is named); false when out of memory. */
bool dims_to_type(arena *a, const dim *d, int32_t rank, graph_type *t);

/* "2,N,?" into buf, the way printf would write it into a buffer of cap bytes;
** returns the length the whole text has (>= cap when it was cut). */
size_t dims_print(char *buf, size_t cap, const dim *d, int32_t n);

/*
** Arithmetic on dims as polynomials of named dims. False when an operand is
** unknown, the result does not fit symdim's bounds (or 128 characters), the
** division is not exact, or a number overflows; a named result's text is
** allocated in `a` (the model's arena: types keep it). A result whose terms
** cancel is a number: Div(Mul(N, 4), N) is 4.
*/
typedef enum { DIM_ADD, DIM_SUB, DIM_MUL, DIM_DIV } dim_op;
bool dim_calc(arena *a, dim_op op, dim x, dim y, dim *out);
/* The sum or the product of n dims (1 for none), as one polynomial. */
bool dim_sum(arena *a, const dim *d, int32_t n, dim *out);
bool dim_product(arena *a, const dim *d, int32_t n, dim *out);
/* The product of num[0..nn) over the product of den[0..nd), when exact: what
** Reshape's -1 stands for ([N,16,64] to [N,-1] gives 1024). */
bool dim_quotient(arena *a, const dim *num, int32_t nn, const dim *den, int32_t nd,
                  dim *out);
/* Provably >= 0: a number that is, or a polynomial with no negative
** coefficient (every named dim is a size). */
bool dim_nonneg(dim d);

/* Slice's arithmetic along a dim of size d (Shape's start and end too, with
** step 1): the first index taken, and how many elements are taken, from start
** and end clamped as the operator does (negative ones count from the end). */
int64_t dim_slice_first(int64_t d, int64_t start, int64_t step);
int64_t dim_slice_len(int64_t d, int64_t start, int64_t end, int64_t step);

/*
** numpy broadcasting of shapes, added one at a time (right-aligned). Each axis
** of the result is what the non-1 dims there say: their common dim when they
** are provably equal; else, when the model is taken to be valid, a number
** among them decides ([3] with [?] is [3]) and two named or unknown dims give
** unknown. `proven` stays true while every axis provably broadcasts; `clash`
** says where it first did not (numbers that differ make the model invalid).
** Shape inference reads the result, fuse asks for proof, and the evaluator's
** static shapes fail on any clash.
*/
typedef struct dim_clash {
    size_t input;            /* the shape that clashed (0 for the first added) */
    int32_t axis;            /* its axis */
    int32_t out_axis;        /* the axis of the result */
    dim have, other;         /* its dim, and the result's so far */
} dim_clash;

typedef struct dim_bcast {
    int32_t rank;            /* of the result so far */
    size_t added;            /* shapes added so far */
    bool proven;
    dim_clash clash;         /* the first axis that was not proven */
    uint64_t invalid;        /* result axes, last first, where numbers differed */
    dim rev[DIM_MAX_RANK];   /* the result so far, last axis first */
} dim_bcast;

void dim_bcast_start(dim_bcast *b);
/* Add a shape of rank <= DIM_MAX_RANK. */
void dim_bcast_add(dim_bcast *b, const dim *d, int32_t rank);
/* The result into out (rank b->rank); b->proven says whether it is proven. */
void dim_bcast_result(const dim_bcast *b, dim *out);
/* Two shapes, provably: false when they are not known to broadcast. */
bool dim_broadcast2(const dim *a, int32_t ra, const dim *b, int32_t rb, dim *out,
                    int32_t *rank);

/*
** A small integer tensor known entry by entry ("shape value"): rank 0 or 1, n
** entries, each a dim (a number, a named dim or unknown). Shape inference
** tracks them through shape subgraphs (Shape, Gather, Concat, arithmetic, ...)
** and keeps those whose every entry is a number or a named dim on the value
** (graph_value.shape_value, at most SHAPE_VALUE_MAX entries), so passes read
** repeats and shapes computed from Shape without evaluating anything; a value
** is SSA, so what it holds stays true while passes rewrite around it.
** Inside inference a float tensor (Resize's scales, Tile-1's float tiles) is
** tracked the same way: f holds its entries, each known where e says a number.
*/
typedef struct shape_value {
    int32_t elem;            /* TensorProto.DataType */
    int32_t rank;            /* 0 or 1 */
    int32_t n;               /* entries */
    dim *e;
    double *f;               /* float tensors only */
} shape_value;

#define SHAPE_VALUE_MAX 64

/* Every entry a number. */
bool shape_value_static(const shape_value *v);

#endif

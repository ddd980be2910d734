/*
** What the files of the eliminate passes share (passes/eliminate/ only). Each
** file is one pass, or its rules: identity.c, dropout.c, idempotent.c,
** monotone_argmax.c, if_const.c, dedup.c, cse.c and dead.c each run one pass;
** nop.c runs the no-op pass over the tests in nop_layout.c, nop_data.c and
** nop_arith.c.
**
** Files call only files before them in nop_layout -> nop_data -> nop_arith ->
** nop, and the
** passes call only passes/rewrite.c besides (tests/harness/file_cycles.py fails
** on any two files that call each other).
*/
#ifndef TILEOPT_ELIMINATE_IMPL_H
#define TILEOPT_ELIMINATE_IMPL_H

#include "passes/passes.h"
#include "passes/rewrite.h"

/*
** A no-op test: is node (of the op its row names) its input 0, unchanged?
** Sets *rule to what makes it one, or *why to why a node that looks like one
** is not (a skip worth reporting); both NULL for a node that is plainly no
** no-op. Returns a status (out of memory).
*/
typedef int (*el_nop_test)(pass_ctx *pc, graph *g, int32_t node, const char **rule,
                           const char **why);

/* nop_layout.c: Reshape, Flatten, Squeeze, Unsqueeze and Expand whose output
** shape is provably their input's; Transpose that keeps every element where
** it is. */
int el_nop_same_shape(pass_ctx *pc, graph *g, int32_t node, const char **rule,
                      const char **why);
int el_nop_transpose(pass_ctx *pc, graph *g, int32_t node, const char **rule,
                     const char **why);
/* Reshape and Flatten: the same shape, or a form that keeps every dim (a
** target of 0s or x's own dims, a Flatten of a 2-D input at axis 1). */
int el_nop_reshape(pass_ctx *pc, graph *g, int32_t node, const char **rule,
                   const char **why);
int el_nop_flatten(pass_ctx *pc, graph *g, int32_t node, const char **rule,
                   const char **why);

/* nop_data.c: Slice taking everything forwards, Pad by zeros, Cast to the
** type it has, Concat of one input, Split into one part. */
int el_nop_slice(pass_ctx *pc, graph *g, int32_t node, const char **rule, const char **why);
int el_nop_pad(pass_ctx *pc, graph *g, int32_t node, const char **rule, const char **why);
int el_nop_cast(pass_ctx *pc, graph *g, int32_t node, const char **rule, const char **why);
int el_nop_concat(pass_ctx *pc, graph *g, int32_t node, const char **rule, const char **why);
int el_nop_split(pass_ctx *pc, graph *g, int32_t node, const char **rule, const char **why);

/* nop_arith.c: Add or Sub of 0, Mul, Div or Pow by 1, the constant second
** (first too for Add and Mul). el_arith_operand: the slot of the operand that
** is handed on (1 when a commuting op's constant comes first, else 0). */
int el_nop_arith(pass_ctx *pc, graph *g, int32_t node, const char **rule, const char **why);
size_t el_arith_operand(graph *g, const Onnx__NodeProto *n);

/* The element type of a value, 0 when unknown. */
static inline int32_t el_elem(graph *g, const char *name) {
    const graph_type *t = rw_type(g, name);
    return t ? t->elem : 0;
}

#endif

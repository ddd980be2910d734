/*
** What the merge passes share (passes/merge/): the axes a Squeeze, an
** Unsqueeze or a reduction names, in either of its opsets' forms.
*/
#ifndef TILEOPT_MERGE_IMPL_H
#define TILEOPT_MERGE_IMPL_H

#include "passes/rewrite.h"

/* Sort n integers in ascending order. */
void merge_sort_axes(int64_t *ax, size_t n);

/*
** The axes of node n, counted from rank (-1 when unknown), sorted: its second
** input when as_input (the constant that became an input at some opset), else
** its "axes" attribute. A Squeeze without axes takes the dims of type t (its
** input's) that are 1, when every dim is known. False when they cannot be
** known: not constant, negative with an unknown rank, absent from another op.
*/
bool merge_axes_of(graph *g, const Onnx__NodeProto *n, bool as_input, int32_t rank,
                   const graph_type *t, int64_t *ax, size_t *len);

/* Whether op is one of the Reduce* reductions. */
bool merge_reduces(op_id op);
/* The opset from which op (Slice, Squeeze, Unsqueeze, a reduction) takes its
** axes as an input instead of an attribute: Slice 10, Squeeze, Unsqueeze and
** ReduceSum 13, the other reductions 18; 0 for other ops. */
int64_t merge_axes_input_since(op_id op);
/*
** The axes reduction p takes out of its input (rank, -1 when unknown),
** sorted, every axis when it names none; *all tells that case apart. NULL, or
** why they are not known (noop_with_empty_axes without axes: it reduces none).
*/
const char *merge_reduced_axes(graph *g, const Onnx__NodeProto *p, int64_t opset, int32_t rank,
                               int64_t *ax, size_t *len, bool *all);

#endif

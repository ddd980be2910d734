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

#endif

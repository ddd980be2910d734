/*
** Shape inference: element type and shape (static dims, symbolic dims by name)
** for every value of the main graph and its subgraphs, in topological order.
** Results land in graph_value.type (arena memory of the model). Ops it does not
** know leave their outputs unknown: a dim is either right or unknown, never wrong.
*/
#ifndef TILEOPT_INFER_H
#define TILEOPT_INFER_H

#include "graph/graph.h"

/* Fill graph_value.type everywhere. Where the model declares a type (value_info,
** graph outputs) that disagrees with the inferred one, the disagreeing parts are
** left unknown. opt may be NULL. */
int infer_shapes(graph_model *m, errbuf *err);

/* Infer, then write the inferred types into value_info (and refine the declared
** shapes of graph outputs and value_info where they leave dims unknown). A
** conflict with what the model declares is an error naming both types. */
int infer_write_value_info(graph_model *m, errbuf *err);

#endif

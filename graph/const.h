/*
** "Is this value a constant, and what is it?" answered once for every layer.
**
** A value read in scope g is constant when the entry that defines it (outer-scope
** references followed) is
**   - an initializer that cannot be overridden: from IR 4 on, an initializer that
**     is also listed as an input of its graph is only a default the caller may
**     replace; before IR 4 every initializer had to be listed as an input, so the
**     listing says nothing and the initializer is constant;
**   - or the output of a live Constant node, in any of its attribute forms.
*/
#ifndef TILEOPT_CONST_H
#define TILEOPT_CONST_H

#include "graph/graph.h"

/* The entry that defines v, read in scope g (outer-scope references followed),
** and in *owner the graph that holds it. */
graph_value *graph_value_home(graph *g, graph_value *v, graph **owner);

/* Can v's initializer be replaced at run time (v defined in owner)? */
bool graph_value_overridable(const graph *owner, const graph_value *v);

/* Is v, defined in owner (see graph_value_home), a constant by the rule above? */
bool graph_value_const(const graph *owner, const graph_value *v);

/*
** A constant found by graph_const_find. tensor may point into hdr (the scalar and
** list forms of Constant), so the struct is filled in place and never copied.
*/
typedef struct graph_const {
    const Onnx__TensorProto *tensor;
    graph_const_hdr hdr;
    graph *owner;            /* the graph that defines the value */
    int32_t node;            /* the Constant node in owner, or -1 for an initializer */
} graph_const;

/* Is name, read in scope g, a constant? Fills *c when it is. A Constant node whose
** value cannot be read (sparse_value, a malformed attribute) is not a constant. */
bool graph_const_find(graph *g, const char *name, graph_const *c);

/* The integer values of a constant of at most cap entries, in out[0..*n): any
** integer type, bool, and float or double holding whole numbers. *found is false
** when name is not such a constant; errors only for data that cannot be read. */
int graph_const_ints(graph *g, const char *name, int64_t *out, size_t cap, size_t *n,
                     bool *found, errbuf *err);

#endif

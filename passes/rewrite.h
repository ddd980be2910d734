/*
** What the rewrite passes share (passes/rewrite.c): the walk over every node
** of every graph, the questions each rule asks before it touches a node (who
** else reads this value, is it a constant, what is its type) and the edits
** that keep the model valid (a value stood in for by another, a graph output
** keeping its name, a constant added).
**
** The rewrite passes are the families in passes/eliminate/, passes/conv/ and
** passes/merge/: each pass is one rule or a small group of rules, and says in
** its report entry what it did to each node (an action with a "rule") and why
** it left a node it matched (a skip with a "reason").
*/
#ifndef TILEOPT_REWRITE_H
#define TILEOPT_REWRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/const.h"
#include "graph/ops.h"
#include "passes/pass.h"
#include "shape/dim.h"

/* One rule applied to node `node` of g. */
typedef int (*rw_rule)(pass_ctx *pc, graph *g, int32_t node);

/*
** The walk every rewrite pass makes: shape inference (when the model changed
** since it last ran), then rule on each live node of each graph (a graph before
** its subgraphs, its nodes in topological order, so a rule that merges a node
** into its producer finds the producer already done and collapses a chain in
** one walk), then graph_commit when the pass changed anything. Nodes a rule
** adds are not visited in this walk: the driver's rounds give them theirs.
*/
int rw_walk(pass_ctx *pc, rw_rule rule);

/* -------------------------------------------------------------- readers */

/* Live reads of value name in g: input slots of live nodes, reads inside
** subgraphs (each node holding one counts once), and whether g outputs it. */
typedef struct rw_reads {
    uint32_t slots, implicit;
    bool output;
} rw_reads;
rw_reads rw_reads_of(graph *g, const char *name);
/* Is every read of name an input slot of node (none inside a subgraph, no
** graph output)? */
bool rw_sole_reader(graph *g, const char *name, int32_t node);
/* The live node of g that writes name (in *idx), or NULL. */
Onnx__NodeProto *rw_producer(graph *g, const char *name, int32_t *idx);
/* The live node of g that reads name, when it is the only read of name (an
** input slot, no subgraph, no graph output); its index in *idx. */
Onnx__NodeProto *rw_sole_consumer(graph *g, const char *name, int32_t *idx);
/* Room for item n of array v of *cap items of size bytes each: v, or v
** moved to a block twice as big; NULL when out of memory (v is then left as
** it was, still the caller's to free). */
void *rw_room(void *v, size_t *cap, size_t n, size_t size);
/* Whether node is the only reader of y, the output of p (no other node, no
** graph output); if not, a skip is recorded on node: "reads a <p's op> whose
** output is read elsewhere too (a node or a graph output): <consequence>". */
bool rw_only_reader(pass_ctx *pc, graph *g, int32_t node, const char *y,
                    const Onnx__NodeProto *p, const char *consequence);

/* ---------------------------------------------------------------- types */

/* The type of name read in g (outer scopes followed), NULL when absent. */
const graph_type *rw_type(graph *g, const char *name);
/* Its rank, -1 when unknown. */
int32_t rw_rank(graph *g, const char *name);
/* Two values of provably one shape (every dim dim_eq). */
bool rw_same_shape(graph *g, const char *a, const char *b);

/* ------------------------------------------------------------ constants */

/* The value of constant name (initializer or Constant node, outer scopes
** followed) as an evaluator tensor in *out; NULL when name is no constant or
** its data cannot be read. Free it with tensor_free. */
int rw_const_tensor(pass_ctx *pc, graph *g, const char *name, tensor **out);
/* Up to cap integers of an integer constant (int64 or int32 only: the types
** ONNX gives axes, pads and shapes); false when it is no such constant. */
bool rw_const_ints(graph *g, const char *name, int64_t *out, size_t cap, size_t *n);
/* Every element of constant name as a double (one when it is a scalar of any
** numeric type): false when it is no constant, or its elements differ. */
bool rw_const_uniform(pass_ctx *pc, graph *g, const char *name, double *v);
/* A new int64 initializer [n] (rank 1) or scalar (rank 0), named from hint. */
int rw_add_ints(pass_ctx *pc, graph *g, const char *hint, const int64_t *v, size_t n,
                int32_t rank, const char **name);
/* A new initializer holding tensor t (contiguous), named from hint. */
int rw_add_tensor(pass_ctx *pc, graph *g, const char *hint, const tensor *t,
                  const char **name);

/* Does type `to` hold every value of type `from` exactly (int8 in int16,
** float in double, uint16 in float, bool in any number)? Then a Cast from one
** to the other loses nothing, and converting the result further gives what
** converting the original would. */
bool rw_cast_exact(int32_t from, int32_t to);

/* ---------------------------------------------------------------- edits */

/*
** Output slot `out` of node (value y) is the value x: every reader of y reads
** x instead and the node goes once nothing reads it. A y that is a graph
** output keeps its name: the node that writes x (in this graph, x no graph
** output itself) writes y instead, and x's readers read y. Otherwise *why
** says why y has to stay (false, nothing changed).
*/
int rw_forward(pass_ctx *pc, graph *g, int32_t node, size_t out, const char *x, bool *done,
               const char **why);
/* Node's only output forwarded to x (rw_forward) and the node recorded as
** eliminated by rule, or skipped with why it has to stay. */
int rw_eliminate_into(pass_ctx *pc, graph *g, int32_t node, const char *x, const char *rule);
/* Node reads x in input 0 in place of the output of node first before it
** (merged into it, or passed over), recorded as "rewritten" by rule, "from"
** first; *act is that action, for more details (NULL when not kept). The
** caller then lets first go (rw_drop_unread). */
int rw_reread(pass_ctx *pc, graph *g, int32_t node, const char *x, int32_t first,
              const char *rule, json_w **act);
/* Node goes and a node of op_type, named name (NULL: one is made), reading
** ins, writes its output 0 in its place: the node another op is made of. The
** new node in *made and its index in *idx (each may be NULL); NOMEM on
** failure. Record the action on node before: it is gone after. */
int rw_replace(pass_ctx *pc, graph *g, int32_t node, const char *op_type, const char *name,
               const char *const *ins, size_t n_ins, Onnx__NodeProto **made, int32_t *idx);
/* Remove node when nothing reads its outputs any more, with an "eliminated"
** action naming the rule that took its readers (merged into another node). */
void rw_drop_unread(pass_ctx *pc, graph *g, int32_t node, const char *rule);
/* A fresh value name from node's output (its name, for readable models). */
const char *rw_name(graph *g, int32_t node, const char *suffix);

#endif

/*
** What the upgrade pass's files share (passes/upgrade/ only): the pass state, the
** adapter and retired-op table rows, the lookups into both tables, the graph
** helpers the adapters build with, and every adapter, declared by family.
*/
#ifndef TILEOPT_UPGRADE_IMPL_H
#define TILEOPT_UPGRADE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "passes/pass.h"

typedef struct up {
    pass_ctx *pc;
    graph_model *m;
    errbuf *err;
    int64_t src, tgt;
    int64_t ir_out;          /* IR of the result: constants differ below IR 4 */
    bool plan;               /* planning: collect blocked steps, change nothing */
    uint32_t n_blocked;
    uint32_t n_work;         /* planned rewrites (adapter steps, retired ops) */
    size_t msg_len;
    char msg[1536];          /* the blocked list for the error */
    bool msg_full;
} up;

typedef int (*adapt_fn)(up *u, graph *g, int32_t *node, json_w *act);

typedef struct adapter {
    const char *op;
    int32_t from, to;        /* schema since_versions */
    adapt_fn fn;             /* NULL: a semantic change nobody can migrate */
    const char *renamed;     /* the op the node becomes, or NULL */
} adapter;

typedef struct retired {
    const char *op;
    adapt_fn fn;
} retired;

/*
** What a node uses that a schema version must have, going down: its input slots
** and its attribute names. Planning rewrites nothing, so a rewrite's effect on
** them is tracked here, for the checks of the steps below it.
*/
#define USE_MAX_ATTRS 64
typedef struct node_use {
    size_t inputs;
    const char *attrs[USE_MAX_ATTRS];
    size_t n_attrs;
} node_use;

/* A rewrite going down (downgrade.c's adapters, expand.c's expansions) checks
** in planning mode (u->plan) and rewrites otherwise; a node it cannot take gets
** *why (static text) and is left alone. Either way it notes in use what the
** node uses after it. */
typedef int (*down_fn)(up *u, graph *g, int32_t *node, json_w *act, node_use *use,
                       const char **why);

/* expand.c: an op younger than the target opset, rebuilt from older ops. */
typedef struct down_expansion {
    const char *op;
    const char *into;        /* the ops it becomes, for the report */
    down_fn fn;
} down_expansion;
const down_expansion *up_expansion_find(const char *op);

/* downgrade.c: take node i of g from the source opset down to the target. In
** planning mode only check; why is set (else "") when the node cannot go down. */
int up_downgrade_node(up *u, graph *g, int32_t i, char *why, size_t cap);

/* adapters.c: the row for the schema step of op that lands on since_version to. */
const adapter *up_adapter_find(const char *op, int32_t to);
/* retired.c: the rewrite of an op ONNX dropped from its schemas, or NULL. */
const retired *up_retired_find(const char *op);

/* helpers.c: reading the graph around a node. */
int up_nomem(up *u);
graph_value *up_value_of(graph *g, const char *name);
int32_t up_rank_of(graph *g, const char *name);
int32_t up_elem_of(graph *g, const char *name);
int32_t up_data_elem(up *u, graph *g, int32_t node, const char *name);
int up_const_ints(up *u, graph *g, int32_t node, const char *name, const char *what,
                  int64_t *out, size_t cap, size_t *count, int32_t *elem, bool *found);
/* The values of a constant float or double tensor of at most cap entries;
** *found false otherwise (computed at run time, other types, too long). */
int up_const_floats(up *u, graph *g, const char *name, double *out, size_t cap,
                    size_t *count, bool *found);
size_t up_node_inputs(const Onnx__NodeProto *n, const char **ins, size_t cap);
/* An adapter's details, written while it rewrites: they reach the report
** only with a step that went through. up_act_open starts them (NULL when
** out of memory), up_act_free releases them. */
typedef struct up_act {
    pass_text text;
    json_w w;
} up_act;
json_w *up_act_open(up_act *a);
void up_act_free(up_act *a);
/* helpers.c: the report's action for node i's step from one version to another
** ("upgraded" or "downgraded"), with the adapter's details. */
void up_record_step(up *u, graph *g, int32_t i, const up_act *details, const char *step_op,
                    int64_t from, int64_t to);

/* helpers.c: building the nodes and constants that take a node's place. */
const char *up_fresh(up *u, graph *g, int32_t node, const char *what);
int up_emit(up *u, graph *g, int32_t node, const char *op, const char *const *ins,
            size_t n_in, const char **out, Onnx__NodeProto **np);
/* The same with the output named name (a fresh name when NULL or empty). */
int up_emit_as(up *u, graph *g, int32_t node, const char *op, const char *const *ins,
               size_t n_in, const char *name, const char **out, Onnx__NodeProto **np);
int up_emit_const(up *u, graph *g, int32_t node, const char *what, int32_t elem,
                  const int64_t *dims, size_t rank, const void *data, size_t nbytes,
                  const char **out);
int up_emit_i64(up *u, graph *g, int32_t node, const char *what, const int64_t *v,
                size_t n, bool scalar, const char **out);
int up_emit_scalar(up *u, graph *g, int32_t node, const char *what, int32_t elem,
                   float v, const char **out);
/* helpers.c: what the schemas at an opset allow, for the nodes a rewrite builds. */
struct opset_schema;
const struct opset_schema *up_schema_at(const char *op, int64_t opset);
bool up_schema_has_attr(const struct opset_schema *s, const char *attr);
bool up_op_takes(const char *op, int64_t opset, int32_t elem);
int up_emit_axes_op(up *u, graph *g, int32_t node, const char *op, const char *x,
                    const int64_t *axes, size_t n, const char **out);
int up_replace_node_as(up *u, graph *g, int32_t *node, const char *op,
                       const char *const *ins, size_t n_in, size_t n_out,
                       const char *const *outs_new);
int up_replace_node(up *u, graph *g, int32_t *node, const char *op,
                    const char *const *ins, size_t n_in, size_t n_out);

/* adapt_attrs.c: attributes dropped, retyped or given their old default in place. */
int up_adapt_consumed_inputs(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_concat_3_4(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_cast_5_6(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_is_test(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_bn_spatial(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_rnn_7(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_lppool_1_2(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_roialign_10_16(up *u, graph *g, int32_t *node, json_w *act);

/* adapt_broadcast.c: legacy broadcast/axis to numpy broadcasting. */
int up_adapt_broadcast(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_drop_broadcast(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_prelu_6_7(up *u, graph *g, int32_t *node, json_w *act);

/* adapt_inputs.c: attributes that became inputs (and Split-1's input that became
** an attribute). */
int up_adapt_reshape_4_5(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_slice_1_10(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_topk_1_10(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_axes_to_input(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_split_1_2(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_split_12_13(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_split_13_18(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_dft_17_20(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_gridsample_16_20(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_pad_1_2(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_pad_2_11(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_clip_6_11(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_dropout_10_12(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_groupnorm_18_21(up *u, graph *g, int32_t *node, json_w *act);

/* adapt_tile.c: Tile-1's (input, tiles, axis) to Tile-6's (input, repeats). */
int up_adapt_tile_1_6(up *u, graph *g, int32_t *node, json_w *act);

/* adapt_resize.c: Upsample's forms, Upsample to Resize, Resize-10's defaults. */
int up_adapt_upsample_1_7(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_upsample_7_9(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_upsample_9_10(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_resize_10_11(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_resize_11_13(up *u, graph *g, int32_t *node, json_w *act);

/* adapt_rewrite.c: steps that rebuild the node: outputs, op name or a chain. */
int up_adapt_bn_14(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_dropout_7_10(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_softmax_11_13(up *u, graph *g, int32_t *node, json_w *act);
int up_adapt_scatter_9_11(up *u, graph *g, int32_t *node, json_w *act);

/* adapt_scan.c: Scan-8's batch axis. */
int up_adapt_scan_8_9(up *u, graph *g, int32_t *node, json_w *act);

#endif

/*
** fuse_consecutive_concats: a Concat reading another Concat on the same axis
** reads the inner one's inputs in its place. Concatenation along one axis is
** associative: the inner one's pieces, put in at the slot its output had, lay
** out the same elements in the same order. Axes compare after a negative one
** is counted from the rank (all inputs of a Concat have its output's rank);
** an unknown rank leaves a pair whose axes differ in sign. The inner Concat
** goes once nothing reads it: while another node or a graph output reads it
** the pair stays (splicing would remove nothing), and so does a Concat on
** another axis, which lays its pieces out otherwise. A chain collapses in one
** walk: each Concat, visited after the ones it reads, finds them merged.
*/
#include <stdlib.h>

#include "passes/passes.h"
#include "passes/rewrite.h"

/* The axis of Concat n (before opset 4 it defaults to 1), counted from rank
** when negative; false when it is absent or cannot be counted. */
static bool axis_of(const Onnx__NodeProto *n, int64_t opset, int32_t rank, int64_t *axis) {
    const Onnx__AttributeProto *a = graph_attr(n, "axis");
    if (!a && opset >= 4) return false;
    *axis = a ? a->i : 1;
    if (*axis < 0 && rank < 0) return false;
    if (*axis < 0) *axis += rank;
    return true;
}

/* Is input slot i of Concat n (axis k) the output of a Concat it can splice
** in? *why says why not when it reads a Concat it leaves. */
static const Onnx__NodeProto *splice_of(graph *g, int32_t node, const char *in, int64_t opset,
                                        int32_t rank, int64_t k, int32_t *inner,
                                        const char **why) {
    const Onnx__NodeProto *p = rw_producer(g, in, inner);
    int32_t sole;
    int64_t pk;
    *why = NULL;
    if (!p || op_of(p) != OP_Concat || !p->n_output) return NULL;
    if (!rw_sole_consumer(g, in, &sole) || sole != node)
        *why = "reads a Concat whose output is read elsewhere too (a node or a graph output): "
               "splicing it in would remove nothing";
    else if (!axis_of(p, opset, rank, &pk) || k < 0)
        *why = "reads a Concat whose axis cannot be compared with its own (absent, or negative "
               "with an unknown rank)";
    else if (pk != k)
        *why = "reads a Concat on another axis: its pieces would be laid out otherwise";
    return *why ? NULL : p;
}

static int concats_rule(pass_ctx *pc, graph *g, int32_t node) {
    Onnx__NodeProto *n = graph_node(g, node);
    if (op_of(n) != OP_Concat || !n->n_output) return TILEOPT_OK;
    int64_t opset = graph_opset(pc->model, ""), k;
    int32_t rank = rw_rank(g, n->output[0]), inner;
    if (!axis_of(n, opset, rank, &k)) k = -1;
    const char *why;
    size_t total = 0, spliced = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        const Onnx__NodeProto *p = splice_of(g, node, n->input[i], opset, rank, k, &inner, &why);
        if (why) pass_skip(pc, g, node, "%s", why);
        total += p ? p->n_input : 1;
        spliced += p != NULL;
    }
    if (!spliced) return TILEOPT_OK;
    /* every name of the new list, read before the first slot changes */
    const char **ins = malloc(total * sizeof *ins);
    int32_t *from = malloc(n->n_input * sizeof *from);
    if (!ins || !from) {
        free(ins);
        free(from);
        return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    }
    size_t len = 0, nf = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        const Onnx__NodeProto *p = splice_of(g, node, n->input[i], opset, rank, k, &inner, &why);
        if (!p) {
            ins[len++] = n->input[i];
            continue;
        }
        for (size_t j = 0; j < p->n_input; j++) ins[len++] = p->input[j];
        from[nf++] = inner;
    }
    int rc = TILEOPT_OK;
    for (size_t i = 0; !rc && i < len; i++) rc = graph_node_set_input(g, node, i, ins[i]);
    free(ins);
    if (rc) {
        free(from);
        return err_set(pc->err, rc, "out of memory");
    }
    pc->changed = true;
    /* an inner Concat read in two slots is listed twice and goes once */
    for (size_t f = 0; f < nf; f++) {
        if (graph_node_removed(g, from[f])) continue;
        json_w *act = pass_action(pc, g, node, "rewritten");
        if (act) {
            json_put_str(act, "rule", "reads the inputs of the Concat before it, on its axis");
            json_put_str(act, "from", graph_node_id(g, from[f]));
        }
        rw_drop_unread(pc, g, from[f], "spliced into the Concat after it");
    }
    free(from);
    return TILEOPT_OK;
}

int pass_fuse_consecutive_concats(pass_ctx *pc) {
    static const op_id ops[] = {OP_Concat};
    if (!rw_model_has(pc->model, ops, countof(ops))) return TILEOPT_OK;
    return rw_walk(pc, concats_rule);
}

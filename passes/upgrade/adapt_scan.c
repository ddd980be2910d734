/*
** The Scan-8 adapter: Scan-9 has no batch axis, so the batch is squeezed away or
** unrolled into one Scan per item.
*/
#include "passes/upgrade/upgrade_impl.h"

/* Unsqueeze(x, 0) written to the given name, in the target opset's form. */
static int unsqueeze0_as(up *u, graph *g, int32_t node, const char *x, const char *name) {
    const int64_t zero = 0;
    const char *ax = NULL;
    int rc;
    if (u->tgt >= 13 && (rc = up_emit_i64(u, g, node, "axes", &zero, 1, false, &ax))) return rc;
    const char *ins[2] = {x, ax};
    const char *nm = up_fresh(u, g, node, "Unsqueeze");
    Onnx__NodeProto *un =
        nm ? graph_add_node(g, "Unsqueeze", nm, ins, u->tgt >= 13 ? 2 : 1, &name, 1, NULL)
           : NULL;
    if (!un) return up_nomem(u);
    if (u->tgt < 13 && graph_node_set_attr_ints(g, un, "axes", &zero, 1)) return up_nomem(u);
    return 0;
}

/* A larger Scan-8 batch is unrolled, with a copy of the body per item: above
** this, the model would grow too much for what it gains. */
#define SCAN8_MAX_BATCH 16

/*
** Scan-8 carried a batch axis on every state and scan input and output; Scan-9
** dropped it. With a batch of one (the common export) that is Squeeze(0) on the
** way in and Unsqueeze(0) on the way out; scan axes move from 1 to 0 with it. A
** larger static batch is unrolled: item b reads Gather(input, b), runs its own
** Scan-9 (a copy of the body), and Concat of the items' Unsqueeze(0)'d results
** gives back each batched output.
*/
int up_adapt_scan_8_9(up *u, graph *g, int32_t *node, json_w *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *id = graph_node_id(g, *node);
    if (graph_node_input(n, 0))
        return err_set(u->err, TILEOPT_UNSUPPORTED,
                       "node %s: Scan-8 with sequence_lens has no opset-9 form", id);
    if (n->n_input < 2 || n->n_input > 64 || n->n_output > 64)
        return err_set(u->err, TILEOPT_INVALID, "node %s: Scan-8 with %zu inputs", id,
                       n->n_input);
    Onnx__AttributeProto *body_attr = graph_attr(n, "body");
    if (!body_attr || !body_attr->g)
        return err_set(u->err, TILEOPT_INVALID, "node %s: Scan-8 without a body", id);
    Onnx__GraphProto *body = body_attr->g;
    int64_t batch = -1;
    for (size_t i = 1; i < n->n_input && batch < 0; i++) {
        graph_value *v = up_value_of(g, n->input[i]);
        if (v && v->type.rank >= 1 && v->type.dims[0] >= 0) batch = v->type.dims[0];
    }
    if (batch < 1 || batch > SCAN8_MAX_BATCH)
        return err_set(u->err, TILEOPT_UNSUPPORTED,
                       "node %s: Scan-8 with batch size %s has no opset-9 form here (a "
                       "static batch of 1 to %d)", id,
                       batch < 0 ? "unknown" : batch == 0 ? "0" : "above the limit",
                       SCAN8_MAX_BATCH);
    /* The body was migrated already; sweep it now, since the node that holds it is
    ** about to be replaced and graph_commit only walks the live nodes' bodies. */
    for (graph *s = graph_node_subgraphs(g, *node); s; s = s->next_sibling) {
        int rc = graph_commit(s, u->err);
        if (rc) return rc;
    }
    const int64_t zero = 0;
    int rc;
    Onnx__AttributeProto *dir = graph_attr(n, "directions");
    int64_t dirs[64];
    size_t nd = dir ? (dir->n_ints < 64 ? dir->n_ints : 64) : 0;
    for (size_t k = 0; k < nd; k++) dirs[k] = dir->ints[k];
    graph_node_del_attr(n, "directions");
    int64_t n_scan = graph_attr_int(n, "num_scan_inputs", 0);
    const char *const *old_ins = (const char *const *)n->input;
    const char *const *old_outs = (const char *const *)n->output;
    size_t n_in = n->n_input - 1, n_out = n->n_output;
    const char *outs[SCAN8_MAX_BATCH][64];
    for (int64_t b = 0; b < batch; b++) {
        const char *ins[64], *item = NULL;
        if (batch > 1 && (rc = up_emit_i64(u, g, *node, "item", &b, 1, true, &item))) return rc;
        for (size_t i = 0; i < n_in; i++) {
            const char *gi[2] = {old_ins[i + 1], item};
            rc = batch == 1 ? up_emit_axes_op(u, g, *node, "Squeeze", gi[0], &zero, 1, &ins[i])
                            : up_emit(u, g, *node, "Gather", gi, 2, &ins[i], NULL);
            if (rc) return rc;
        }
        for (size_t k = 0; k < n_out; k++)
            if (!(outs[b][k] = up_fresh(u, g, *node, "scan9"))) return TILEOPT_NOMEM;
        Onnx__NodeProto *s9;
        if (b == 0) { /* the node itself, keeping its name and attributes */
            if ((rc = up_replace_node_as(u, g, node, "Scan", ins, n_in, 0, outs[0]))) return rc;
            s9 = graph_node(g, *node);
        } else {
            Onnx__GraphProto *copy = graph_pb_clone(u->m, body);
            const char *nm = copy ? up_fresh(u, g, *node, "Scan") : NULL;
            s9 = nm ? graph_add_node(g, "Scan", nm, ins, n_in, outs[b], n_out, NULL) : NULL;
            if (!s9 || graph_node_set_attr_int(g, s9, "num_scan_inputs", n_scan) ||
                graph_node_set_attr_graph(g, s9, "body", copy))
                return up_nomem(u);
        }
        if (nd && graph_node_set_attr_ints(g, s9, "scan_input_directions", dirs, nd))
            return up_nomem(u);
    }
    /* The new nodes write fresh names; Unsqueeze(0), and Concat over the items,
    ** give back the old ones. */
    for (size_t k = 0; k < n_out; k++) {
        const char *orig = old_outs[k];
        if (!orig || !*orig) continue;
        if (batch == 1) {
            if ((rc = unsqueeze0_as(u, g, *node, outs[0][k], orig))) return rc;
            continue;
        }
        const char *parts[SCAN8_MAX_BATCH];
        for (int64_t b = 0; b < batch; b++)
            if ((rc = up_emit_axes_op(u, g, *node, "Unsqueeze", outs[b][k], &zero, 1, &parts[b])))
                return rc;
        const char *nm = up_fresh(u, g, *node, "Concat");
        Onnx__NodeProto *c =
            nm ? graph_add_node(g, "Concat", nm, parts, (size_t)batch, &orig, 1, NULL) : NULL;
        if (!c || graph_node_set_attr_int(g, c, "axis", 0)) return up_nomem(u);
    }
    if (act) json_put_num(act, "batch", (double)batch);
    return 0;
}

/*
** eliminate_dead: nodes whose outputs nobody reads (no node, no subgraph, no
** graph output) and initializers nobody reads (and no caller can override)
** go. graph_commit sweeps both whenever a pass changed something; this pass
** makes the sweep happen on a model no other pass touched, so a default run
** always drops them. The report names each node ("outputs unused") and the
** initializers it removed.
*/
#include "passes/eliminate/eliminate_impl.h"

/* Is some live read of v left (a node's slot or a subgraph's), or is it a
** graph output? */
static bool read(const graph *g, const graph_value *v) {
    if (v->output >= 0) return true;
    for (uint32_t u = 0; u < v->n_uses; u++)
        if (v->uses[u].node < 0 || !graph_node_removed(g, v->uses[u].node)) return true;
    return false;
}

static bool node_dead(graph *g, int32_t i) {
    const Onnx__NodeProto *n = graph_node(g, i);
    if (n->n_output == 0) return false;
    for (size_t k = 0; k < n->n_output; k++) {
        if (!n->output[k][0]) continue;
        const graph_value *v = graph_node_out(g, i, k);
        if (!v || read(g, v)) return false;
    }
    return true;
}

/* Does g (or a subgraph) hold something the sweep would take? */
static bool graph_dead(graph *g) {
    for (uint32_t i = 0; i < graph_n_nodes(g); i++) {
        if (graph_node_removed(g, (int32_t)i)) continue;
        if (node_dead(g, (int32_t)i)) return true;
        for (graph *s = graph_node_subgraphs(g, (int32_t)i); s; s = s->next_sibling)
            if (graph_dead(s)) return true;
    }
    bool listed = !g->parent && g->model->pb->ir_version < 4;
    for (size_t i = 0; i < g->pb->n_initializer; i++) {
        const Onnx__TensorProto *t = g->pb->initializer[i];
        const graph_value *v = graph_find(g, t->name ? t->name : "");
        if (v && (v->input < 0 || listed) && !read(g, v)) return true;
    }
    return false;
}

int pass_eliminate_dead(pass_ctx *pc) {
    /* a sweep counts the reads of a subgraph removed in the same commit until
    ** the next one: sweep until nothing is left, so one run is the fixed point */
    for (int k = 0; k < 8 && graph_dead(pc->model->main); k++) {
        pc->changed = true;
        int rc = graph_commit(pc->model->main, pc->err);
        if (rc) return rc;
    }
    return TILEOPT_OK;
}

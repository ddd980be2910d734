/*
** eliminate_common_subexpression: two nodes of one graph with the same op,
** the same inputs and the same attributes compute the same outputs, so the
** later one goes and its readers read the first. Exporters write the shape
** arithmetic of a dynamic batch once per use (a Shape of the input for every
** Reshape); after the first pair merges, their readers have equal inputs too,
** and the topological walk merges the whole duplicated chain in one go.
** Random ops and nodes with subgraphs never merge, nor do ops of other
** domains (nothing says they are pure).
*/
#include <stdlib.h>
#include <string.h>

#include "passes/eliminate/eliminate_impl.h"

typedef struct cse_state {
    int32_t *slot;           /* node index, -1 = empty */
    uint32_t *hash;
    size_t cap, used;
} cse_state;

static bool eligible(graph *g, int32_t i) {
    const Onnx__NodeProto *n = graph_node(g, i);
    op_id op = op_of(n);
    return op != OP_NONE && !op_random(op) && n->n_output > 0 && !graph_node_subgraphs(g, i);
}

static uint32_t node_hash(const Onnx__NodeProto *n) {
    uint32_t h = graph_name_hash(n->op_type);
    for (size_t k = 0; k < n->n_input; k++) {
        h = graph_hash_bytes(h, n->input[k], strlen(n->input[k]) + 1);
    }
    h = graph_hash_bytes(h, &n->n_output, sizeof n->n_output);
    return h ^ (graph_attrs_hash(n) * 2654435761u);
}

static bool same_node(const Onnx__NodeProto *a, const Onnx__NodeProto *b) {
    if (strcmp(a->op_type, b->op_type) != 0 || a->n_input != b->n_input ||
        a->n_output != b->n_output)
        return false;
    for (size_t k = 0; k < a->n_input; k++)
        if (strcmp(a->input[k], b->input[k]) != 0) return false;
    /* an output one of them leaves out the other may not compute */
    for (size_t k = 0; k < a->n_output; k++)
        if (!a->output[k][0] != !b->output[k][0]) return false;
    return graph_attrs_equal(a, b);
}

/* The readers of dup's outputs read keep's. */
static int merge(pass_ctx *pc, graph *g, int32_t dup, int32_t keep) {
    const Onnx__NodeProto *d = graph_node(g, dup), *k = graph_node(g, keep);
    const char *why = NULL;
    for (size_t o = 0; o < d->n_output; o++) {
        if (!d->output[o][0]) continue;
        bool done;
        const char *w;
        int rc = rw_forward(pc, g, dup, o, k->output[o], &done, &w);
        if (rc) return rc;
        if (!done) why = w;
    }
    if (why) {
        pass_skip(pc, g, dup, "computes what %s does, but %s", graph_node_id(g, keep), why);
        return TILEOPT_OK;
    }
    json_w *a = pass_action(pc, g, dup, "eliminated");
    if (a) {
        json_put_str(a, "rule", "common subexpression");
        json_put_str(a, "same_as", graph_node_id(g, keep));
    }
    return TILEOPT_OK;
}

static int cse_rule(pass_ctx *pc, graph *g, int32_t node, cse_state *st) {
    if (!eligible(g, node)) return TILEOPT_OK;
    const Onnx__NodeProto *n = graph_node(g, node);
    uint32_t h = node_hash(n);
    size_t s = h & (st->cap - 1);
    for (; st->slot[s] >= 0; s = (s + 1) & (st->cap - 1)) {
        int32_t other = st->slot[s];
        if (st->hash[s] == h && !graph_node_removed(g, other) &&
            same_node(graph_node(g, other), n))
            return merge(pc, g, node, other);
    }
    st->slot[s] = node;
    st->hash[s] = h;
    st->used++;
    return TILEOPT_OK;
}

static int cse_graph(pass_ctx *pc, graph *g) {
    uint32_t n = graph_n_nodes(g), count = 0;
    cse_state st = {.cap = 16};
    while (st.cap < 2 * (size_t)n) st.cap *= 2;
    st.slot = malloc(st.cap * sizeof *st.slot);
    st.hash = malloc(st.cap * sizeof *st.hash);
    int32_t *order = malloc((n ? n : 1) * sizeof *order);
    int rc = st.slot && st.hash && order ? TILEOPT_OK
                                         : err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < st.cap; i++) st.slot[i] = -1;
    if (!rc) rc = graph_toposort(g, order, &count, pc->err);
    for (uint32_t k = 0; !rc && k < count; k++)
        if (!graph_node_removed(g, order[k])) rc = cse_rule(pc, g, order[k], &st);
    free(order);
    free(st.slot);
    free(st.hash);
    return rc;
}

int pass_eliminate_common_subexpression(pass_ctx *pc) {
    int rc = pass_for_each_graph(pc, pc->model->main, cse_graph);
    if (rc) return rc;
    return pc->changed ? graph_commit(pc->model->main, pc->err) : TILEOPT_OK;
}

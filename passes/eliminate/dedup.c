/*
** eliminate_duplicate_initializers: initializers of one graph with the same
** element type, dims and bytes are one constant stored twice (exporters write
** a copy per use of a shared parameter, and folding makes equal small shapes);
** every reader of a copy reads the first, and the copies go. Bytes compare
** exactly, so 0.0 and -0.0, or two NaNs of different bits, stay apart. An
** initializer the caller may override (a graph input, from IR 4 on), a graph
** output, and data stored outside the model file are left alone.
*/
#include <stdlib.h>
#include <string.h>

#include "passes/eliminate/eliminate_impl.h"

typedef struct dd_entry {
    uint32_t hash;
    int32_t init;            /* index in pb->initializer, -1 = empty */
    graph_tensor_data data;
} dd_entry;

static uint32_t data_hash(const graph_tensor_data *d) {
    uint32_t h = graph_hash_bytes(GRAPH_HASH_SEED, &d->elem, sizeof d->elem);
    h = graph_hash_bytes(h, d->dims, (size_t)d->rank * sizeof *d->dims);
    /* strings are graph_bytes: their text, not their pointers */
    if (d->elem != DT_STRING) return graph_hash_bytes(h, d->data, d->nbytes);
    const graph_bytes *s = d->data;
    for (uint64_t i = 0; i < d->numel; i++) h = graph_hash_bytes(h, s[i].data, s[i].len);
    return h;
}

/* memcmp of n bytes, where a scalar's dims or an empty tensor's data may be NULL */
static bool same_bytes(const void *x, const void *y, size_t n) {
    return n == 0 || memcmp(x, y, n) == 0;
}

static bool data_equal(const graph_tensor_data *a, const graph_tensor_data *b) {
    if (a->elem != b->elem || a->rank != b->rank || a->numel != b->numel ||
        !same_bytes(a->dims, b->dims, (size_t)a->rank * sizeof *a->dims))
        return false;
    if (a->elem != DT_STRING)
        return a->nbytes == b->nbytes && same_bytes(a->data, b->data, (size_t)a->nbytes);
    const graph_bytes *x = a->data, *y = b->data;
    for (uint64_t i = 0; i < a->numel; i++)
        if (x[i].len != y[i].len || (x[i].len && memcmp(x[i].data, y[i].data, x[i].len)))
            return false;
    return true;
}

/* May the initializer be merged into another: a constant of this graph,
** stored in the file. */
static bool mergeable(graph *g, const Onnx__TensorProto *t) {
    graph_value *v = t->name ? graph_find(g, t->name) : NULL;
    return v && v->output < 0 && graph_value_const(g, v) && !graph_tensor_is_external(t);
}

/* Every reader of dup reads keep: each reading node is named in the report. */
static int merge(pass_ctx *pc, graph *g, const char *dup, const char *keep) {
    graph_value *v = graph_find(g, dup);
    for (uint32_t u = 0; v && u < v->n_uses; u++) {
        int32_t r = v->uses[u].node;
        if (r < 0 || graph_node_removed(g, r)) continue;
        json_w *a = pass_action(pc, g, r, "rewritten");
        if (a) {
            json_put_str(a, "rule", "duplicate initializer");
            json_put_str(a, "from", dup);
            json_put_str(a, "to", keep);
        }
    }
    pc->changed = true;
    return graph_replace_uses(g, dup, keep) ? err_set(pc->err, TILEOPT_NOMEM, "out of memory")
                                            : TILEOPT_OK;
}

static int dedup_graph(pass_ctx *pc, graph *g) {
    size_t n = g->pb->n_initializer, cap = 16;
    while (cap < 2 * n) cap *= 2;
    dd_entry *tab = malloc(cap * sizeof *tab);
    if (!tab) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    for (size_t i = 0; i < cap; i++) tab[i].init = -1;
    int rc = TILEOPT_OK;
    for (size_t i = 0; !rc && i < n; i++) {
        const Onnx__TensorProto *t = g->pb->initializer[i];
        graph_tensor_data d;
        errbuf e = {0};
        if (!mergeable(g, t) || graph_tensor_read(g->model, t, &d, &e)) continue;
        uint32_t h = data_hash(&d);
        size_t s = h & (cap - 1);
        bool merged = false;
        for (; tab[s].init >= 0; s = (s + 1) & (cap - 1)) {
            if (tab[s].hash != h || !data_equal(&tab[s].data, &d)) continue;
            rc = merge(pc, g, t->name, g->pb->initializer[tab[s].init]->name);
            merged = true;
            break;
        }
        if (merged) {
            if (d.owned) free(d.data);
            continue;
        }
        tab[s] = (dd_entry){.hash = h, .init = (int32_t)i, .data = d};
    }
    for (size_t i = 0; i < cap; i++)
        if (tab[i].init >= 0 && tab[i].data.owned) free(tab[i].data.data);
    free(tab);
    return rc;
}

int pass_eliminate_duplicate_initializers(pass_ctx *pc) {
    int rc = pass_for_each_graph(pc, pc->model->main, dedup_graph);
    if (rc) return rc;
    return pc->changed ? graph_commit(pc->model->main, pc->err) : TILEOPT_OK;
}

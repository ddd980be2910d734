/*
** What the rewrite passes share: the walk, who reads a value, types,
** constants, and the edits that keep names and graph outputs where they were.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shape/infer.h"
#include "passes/rewrite.h"

/* ----------------------------------------------------------------- walk */

/* g's nodes in topological order, then the subgraphs of the nodes still live. */
static int walk_graph(pass_ctx *pc, graph *g, rw_rule rule) {
    uint32_t n = graph_n_nodes(g), count = 0;
    int32_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    int rc = graph_toposort(g, order, &count, pc->err);
    for (uint32_t k = 0; !rc && k < count; k++)
        if (!graph_node_removed(g, order[k])) rc = rule(pc, g, order[k]);
    free(order);
    for (uint32_t i = 0; !rc && i < graph_n_nodes(g); i++) {
        if (graph_node_removed(g, (int32_t)i)) continue;
        for (graph *s = graph_node_subgraphs(g, (int32_t)i); !rc && s; s = s->next_sibling)
            rc = walk_graph(pc, s, rule);
    }
    return rc;
}

int rw_walk(pass_ctx *pc, rw_rule rule) {
    int rc = infer_shapes(pc->model, pc->err);
    if (!rc) rc = walk_graph(pc, pc->model->main, rule);
    if (rc) return rc;
    return pc->changed ? graph_commit(pc->model->main, pc->err) : TILEOPT_OK;
}

/* -------------------------------------------------------------- readers */

rw_reads rw_reads_of(graph *g, const char *name) {
    rw_reads r = {0};
    graph_value *v = name && name[0] ? graph_find(g, name) : NULL;
    if (!v) return r;
    r.output = v->output >= 0;
    for (uint32_t u = 0; u < v->n_uses; u++) {
        int32_t node = v->uses[u].node;
        if (node < 0 || graph_node_removed(g, node)) continue;
        if (v->uses[u].input >= 0) r.slots++;
        else r.implicit++;
    }
    return r;
}

bool rw_sole_reader(graph *g, const char *name, int32_t node) {
    graph_value *v = name && name[0] ? graph_find(g, name) : NULL;
    if (!v || v->output >= 0) return false;
    for (uint32_t u = 0; u < v->n_uses; u++) {
        int32_t r = v->uses[u].node;
        if (r < 0 || graph_node_removed(g, r)) continue;
        if (r != node || v->uses[u].input < 0) return false;
    }
    return true;
}

Onnx__NodeProto *rw_producer(graph *g, const char *name, int32_t *idx) {
    return name && name[0] ? graph_producer(g, name, idx) : NULL;
}

Onnx__NodeProto *rw_sole_consumer(graph *g, const char *name, int32_t *idx) {
    graph_value *v = name && name[0] ? graph_find(g, name) : NULL;
    if (!v || v->output >= 0) return NULL;
    int32_t found = -1;
    for (uint32_t u = 0; u < v->n_uses; u++) {
        int32_t r = v->uses[u].node;
        if (r < 0 || graph_node_removed(g, r)) continue;
        if (v->uses[u].input < 0 || (found >= 0 && found != r)) return NULL;
        found = r;
    }
    /* one node reading it in two slots is still one consumer */
    if (found < 0) return NULL;
    if (idx) *idx = found;
    return graph_node(g, found);
}

void *rw_room(void *v, size_t *cap, size_t n, size_t size) {
    if (v && n < *cap) return v;
    size_t c = *cap ? 2 * *cap : 16;
    void *w = realloc(v, c * size);
    if (w) *cap = c;
    return w;
}

bool rw_only_reader(pass_ctx *pc, graph *g, int32_t node, const char *y,
                    const Onnx__NodeProto *p, const char *consequence) {
    int32_t sole;
    if (rw_sole_consumer(g, y, &sole) && sole == node) return true;
    pass_skip(pc, g, node, "reads a %s whose output is read elsewhere too (a node or a graph "
              "output): %s", p->op_type, consequence);
    return false;
}

/* ---------------------------------------------------------------- types */

const graph_type *rw_type(graph *g, const char *name) {
    graph_value *v = name && name[0] ? graph_resolve(g, name) : NULL;
    return v ? &graph_value_home(g, v, NULL)->type : NULL;
}

int32_t rw_rank(graph *g, const char *name) {
    const graph_type *t = rw_type(g, name);
    return t ? t->rank : -1;
}

bool rw_same_shape(graph *g, const char *a, const char *b) {
    const graph_type *ta = rw_type(g, a), *tb = rw_type(g, b);
    if (!ta || !tb || ta->rank < 0 || ta->rank != tb->rank) return false;
    for (int32_t i = 0; i < ta->rank; i++)
        if (!dim_eq(dim_at(ta, i), dim_at(tb, i))) return false;
    return true;
}

/* ------------------------------------------------------------ constants */

int rw_const_tensor(pass_ctx *pc, graph *g, const char *name, tensor **out) {
    *out = NULL;
    graph_const c;
    if (!name || !name[0] || !graph_const_find(g, name, &c)) return TILEOPT_OK;
    errbuf e = {0};
    int rc = tensor_from_proto(g->model, c.tensor, &pc->eval, out, &e);
    if (rc == TILEOPT_NOMEM) return err_set(pc->err, rc, "%s", e.msg);
    if (rc) *out = NULL; /* unreadable: the loader's or the evaluator's business */
    return TILEOPT_OK;
}

bool rw_const_ints(graph *g, const char *name, int64_t *out, size_t cap, size_t *n) {
    graph_const c;
    if (!name || !name[0] || !graph_const_find(g, name, &c)) return false;
    int32_t elem = c.tensor->has_data_type ? c.tensor->data_type : 0;
    if (elem != DT_INT64 && elem != DT_INT32) return false;
    bool found;
    errbuf e = {0};
    return !graph_const_ints(g, name, out, cap, n, &found, &e) && found;
}

/* Element i of a contiguous numeric tensor as a double; false for strings. */
static bool elem_double(const tensor *t, uint64_t i, double *v) {
    const uint8_t *p = t->data;
    switch (t->elem) {
    case DT_FLOAT: { float x; memcpy(&x, p + 4 * i, 4); *v = x; return true; }
    case DT_DOUBLE: memcpy(v, p + 8 * i, 8); return true;
    case DT_INT64: { int64_t x; memcpy(&x, p + 8 * i, 8); *v = (double)x; return true; }
    case DT_INT32: { int32_t x; memcpy(&x, p + 4 * i, 4); *v = x; return true; }
    case DT_INT16: { int16_t x; memcpy(&x, p + 2 * i, 2); *v = x; return true; }
    case DT_INT8: *v = (int8_t)p[i]; return true;
    case DT_UINT8: case DT_BOOL: *v = p[i]; return true;
    case DT_UINT16: { uint16_t x; memcpy(&x, p + 2 * i, 2); *v = x; return true; }
    case DT_UINT32: { uint32_t x; memcpy(&x, p + 4 * i, 4); *v = x; return true; }
    default: return false;
    }
}

bool rw_const_uniform(pass_ctx *pc, graph *g, const char *name, double *v) {
    tensor *t = NULL;
    if (rw_const_tensor(pc, g, name, &t) || !t) return false;
    bool ok = t->kind == EVAL_TENSOR && tensor_is_contiguous(t) && tensor_numel(t) > 0;
    uint64_t n = ok ? tensor_numel(t) : 0;
    double first = 0, x;
    for (uint64_t i = 0; ok && i < n; i++) {
        ok = elem_double(t, i, &x);
        if (i == 0) first = x;
        /* NaN equals nothing, so a NaN constant is never uniform */
        else ok = ok && x == first;
    }
    ok = ok && first == first;
    if (ok) *v = first;
    tensor_free(t);
    return ok;
}

int rw_add_ints(pass_ctx *pc, graph *g, const char *hint, const int64_t *v, size_t n,
                int32_t rank, const char **name) {
    int64_t dims[1] = {(int64_t)n};
    return graph_add_initializer(g, hint, DT_INT64, dims, rank ? 1 : 0, v, n * sizeof *v, name,
                                 pc->err);
}

int rw_add_tensor(pass_ctx *pc, graph *g, const char *hint, const tensor *t,
                  const char **name) {
    return graph_add_initializer(g, hint, t->elem, t->dims, (size_t)t->rank, t->data,
                                 (size_t)tensor_nbytes(t), name, pc->err);
}

/* The integers a type holds exactly: 2^bits of the mantissa for floats. */
static const struct {
    int32_t elem;
    int8_t kind;             /* 0 int, 1 unsigned, 2 float, 3 bool */
    uint8_t bits;            /* value bits (ints), mantissa bits + 1 (floats) */
    uint8_t exp_bits;        /* floats: exponent width */
} exact_types[] = {
    {DT_BOOL, 3, 1, 0},    {DT_UINT8, 1, 8, 0},     {DT_INT8, 0, 7, 0},
    {DT_UINT16, 1, 16, 0}, {DT_INT16, 0, 15, 0},    {DT_UINT32, 1, 32, 0},
    {DT_INT32, 0, 31, 0},  {DT_UINT64, 1, 64, 0},   {DT_INT64, 0, 63, 0},
    {DT_FLOAT16, 2, 11, 5}, {DT_BFLOAT16, 2, 8, 8}, {DT_FLOAT, 2, 24, 8},
    {DT_DOUBLE, 2, 53, 11},
};

bool rw_cast_exact(int32_t from, int32_t to) {
    int f = -1, t = -1;
    for (int i = 0; i < (int)countof(exact_types); i++) {
        if (exact_types[i].elem == from) f = i;
        if (exact_types[i].elem == to) t = i;
    }
    if (f < 0 || t < 0) return false;
    if (f == t) return true;
    int fk = exact_types[f].kind, tk = exact_types[t].kind;
    int fb = exact_types[f].bits, tb = exact_types[t].bits;
    if (fk == 3) return true;               /* 0 and 1 */
    if (tk == 3) return false;
    if (tk == 2) {
        /* a float holds the integers up to 2^bits, and a narrower float when
        ** both its mantissa and its exponent fit (float16 in float, not in
        ** bfloat16) */
        if (fk == 2) return fb <= tb && exact_types[f].exp_bits <= exact_types[t].exp_bits;
        return fb <= tb;
    }
    if (fk == 2) return false;              /* fractions */
    if (fk == 1 && tk == 0) return fb <= tb; /* uint8 in int16 (15 value bits) */
    if (fk == 0 && tk == 1) return false;   /* negatives */
    return fb <= tb;
}

/* ---------------------------------------------------------------- edits */

const char *rw_name(graph *g, int32_t node, const char *suffix) {
    const Onnx__NodeProto *n = graph_node(g, node);
    const char *base = n->n_output && n->output[0][0] ? n->output[0] : graph_node_id(g, node);
    size_t len = strlen(base) + strlen(suffix) + 1;
    char *buf = malloc(len);
    if (!buf) return NULL;
    memcpy(buf, base, strlen(base));
    memcpy(buf + strlen(base), suffix, strlen(suffix) + 1);
    const char *name = graph_unique_name(g, buf);
    free(buf);
    return name;
}

/* No live node reads any output of node, and none is a graph output. */
static bool unread(graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    for (size_t o = 0; o < n->n_output; o++) {
        rw_reads r = rw_reads_of(g, n->output[o]);
        if (r.slots || r.implicit || r.output) return false;
    }
    return true;
}

int rw_replace(pass_ctx *pc, graph *g, int32_t node, const char *op_type, const char *name,
               const char *const *ins, size_t n_ins, Onnx__NodeProto **made, int32_t *idx) {
    const char *out = graph_node(g, node)->output[0];
    graph_remove_node(g, node);
    Onnx__NodeProto *m = graph_add_node(g, op_type, name, ins, n_ins, &out, 1, idx);
    if (made) *made = m;
    if (!m) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    pc->changed = true;
    return TILEOPT_OK;
}

int rw_reread(pass_ctx *pc, graph *g, int32_t node, const char *x, int32_t first,
              const char *rule, json_w **act) {
    *act = NULL;
    if (graph_node_set_input(g, node, 0, x))
        return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    pc->changed = true;
    *act = pass_action(pc, g, node, "rewritten");
    if (*act) {
        json_put_str(*act, "rule", rule);
        json_put_str(*act, "from", graph_node_id(g, first));
    }
    return TILEOPT_OK;
}

void rw_drop_unread(pass_ctx *pc, graph *g, int32_t node, const char *rule) {
    if (graph_node_removed(g, node) || !unread(g, node)) return;
    json_w *a = pass_action(pc, g, node, "eliminated");
    if (a) json_put_str(a, "rule", rule);
    graph_remove_node(g, node);
}

int rw_forward(pass_ctx *pc, graph *g, int32_t node, size_t out, const char *x, bool *done,
               const char **why) {
    const Onnx__NodeProto *n = graph_node(g, node);
    *done = false;
    *why = NULL;
    if (out >= n->n_output || !n->output[out][0]) {
        *why = "it writes no output there, so there is nothing to hand on";
        return TILEOPT_OK;
    }
    const char *y = n->output[out];
    char *xc = graph_strdup(g, x), *yc = graph_strdup(g, y);
    if (!xc || !yc) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    if (!graph_value_is_output(g, y)) {
        if (graph_replace_uses(g, yc, xc))
            return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
        *done = true;
        pc->changed = true;
        if (unread(g, node)) graph_remove_node(g, node);
        return TILEOPT_OK;
    }
    /* y names a graph output: the node that writes x writes y instead */
    int32_t p;
    if (!rw_producer(g, x, &p) || p == node) {
        *why = "its output is a graph output and its input is no node's output in this "
               "graph (a graph input, a constant or an outer value), so the name stays";
        return TILEOPT_OK;
    }
    if (graph_value_is_output(g, x)) {
        *why = "its input and its output are both graph outputs";
        return TILEOPT_OK;
    }
    if (graph_node(g, node)->n_output != 1) {
        *why = "its output is a graph output and the node has other outputs";
        return TILEOPT_OK;
    }
    graph_remove_node(g, node);
    int rc = graph_node_set_output(g, p, (size_t)graph_find(g, xc)->producer_out, yc);
    if (!rc) rc = graph_replace_uses(g, xc, yc);
    if (rc) return err_set(pc->err, rc, "out of memory");
    *done = true;
    pc->changed = true;
    return TILEOPT_OK;
}

int rw_eliminate_into(pass_ctx *pc, graph *g, int32_t node, const char *x, const char *rule) {
    bool done;
    const char *why;
    int rc = rw_forward(pc, g, node, 0, x, &done, &why);
    if (rc) return rc;
    if (!done) {
        pass_skip(pc, g, node, "%s", why);
        return TILEOPT_OK;
    }
    json_w *a = pass_action(pc, g, node, "eliminated");
    if (a) json_put_str(a, "rule", rule);
    return TILEOPT_OK;
}

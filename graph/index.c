/*
** The graph index: value name -> producer, uses, initializer, input/output slot and
** type, through an open-addressing hash map, built in O(nodes + values) per scope.
** Subgraphs get their own index; a name a subgraph reads from an enclosing scope
** gets a local proxy entry (outer != NULL), and the enclosing node records an
** implicit use (input slot -1) so dead-code elimination and renames see it.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

static graph_value *find_hashed(graph *g, const char *name, uint32_t h) {
    uint32_t mask = g->n_slots - 1;
    for (uint32_t i = h & mask;; i = (i + 1) & mask) {
        const graph_slot *s = &g->slots[i];
        if (!s->index) return NULL;
        if (s->hash != h) continue;
        /* node inputs share their value's name string (interned at index time),
        ** so most hits need no string compare */
        const char *vn = g->values[s->index - 1].name;
        if (vn == name || strcmp(vn, name) == 0) return &g->values[s->index - 1];
    }
}

graph_value *graph_find(graph *g, const char *name) {
    if (!name || !g->n_slots) return NULL;
    return find_hashed(g, name, graph_name_hash(name));
}

static graph_value *slot_value(graph *g, int32_t node, bool output, size_t slot) {
    const Onnx__NodeProto *n = g->pb->node[node];
    const char *name = output ? (slot < n->n_output ? n->output[slot] : NULL)
                              : (slot < n->n_input ? n->input[slot] : NULL);
    if (!name || !name[0]) return NULL;
    if ((uint32_t)node < g->n_hinted) {
        uint64_t at = (uint64_t)g->hint_at[2 * (uint32_t)node + output] + slot;
        int32_t vi = at < g->n_hints ? g->hints[at] : -1;
        if (vi >= 0 && (uint32_t)vi < g->n_values && g->values[vi].name == name)
            return &g->values[vi];
    }
    return graph_find(g, name);
}

graph_value *graph_node_in(graph *g, int32_t node, size_t slot) {
    return slot_value(g, node, false, slot);
}

graph_value *graph_node_out(graph *g, int32_t node, size_t slot) {
    return slot_value(g, node, true, slot);
}

static void hint(graph *g, uint32_t node, bool output, size_t slot, const graph_value *v) {
    g->hints[g->hint_at[2 * node + output] + slot] = (int32_t)(v - g->values);
}

/* The map holds at most 5/8 as many values as slots: a missing name (which
** fresh-name checks look up) costs a few probes still, and a 550k-value graph
** takes 1M slots instead of 2M. */
static bool slots_full(uint64_t values, uint64_t slots) { return values * 8 > slots * 5; }

static void slot_put(graph_slot *slots, uint32_t n_slots, uint32_t h, uint32_t index) {
    uint32_t mask = n_slots - 1, i = h & mask;
    while (slots[i].index) i = (i + 1) & mask;
    slots[i] = (graph_slot){h, index};
}

static int rehash(graph *g, uint32_t n_slots) {
    graph_slot *slots = arena_calloc(g->model->arena, n_slots, sizeof *slots);
    if (!slots) return TILEOPT_NOMEM;
    for (uint32_t i = 0; i < g->n_slots; i++)
        if (g->slots[i].index) slot_put(slots, n_slots, g->slots[i].hash, g->slots[i].index);
    arena_release(g->model->arena, g->slots, (size_t)g->n_slots * sizeof *g->slots);
    g->slots = slots;
    g->n_slots = n_slots;
    return TILEOPT_OK;
}

/* The entry for name in this scope, created empty when missing. */
static graph_value *value_get(graph *g, const char *name) {
    uint32_t h = graph_name_hash(name);
    graph_value *v = g->n_slots ? find_hashed(g, name, h) : NULL;
    if (v) return v;
    if (slots_full((uint64_t)g->n_values + 1, g->n_slots) &&
        rehash(g, g->n_slots ? g->n_slots * 2 : 64))
        return NULL;
    if (g->n_values == g->cap_values) {
        uint32_t cap = g->cap_values ? g->cap_values * 2 : 64;
        graph_value *nv = arena_grow(g->model->arena, g->values,
                                     g->n_values * sizeof *nv, cap * sizeof *nv);
        if (!nv) return NULL;
        g->values = nv;
        g->cap_values = cap;
    }
    v = &g->values[g->n_values];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->producer = v->initializer = v->sparse = v->input = v->output = v->value_info =
        v->outer = -1;
    v->type.rank = -1;
    slot_put(g->slots, g->n_slots, h, ++g->n_values);
    return v;
}

int graph_value_add_use(graph *g, graph_value *v, int32_t node, int32_t slot) {
    if (v->n_uses == v->cap_uses) {
        uint32_t cap = v->cap_uses ? v->cap_uses * 2 : 2;
        graph_use *u = arena_grow(g->model->arena, v->uses, v->n_uses * sizeof *u,
                                  cap * sizeof *u);
        if (!u) return TILEOPT_NOMEM;
        v->uses = u;
        v->cap_uses = cap;
    }
    v->uses[v->n_uses++] = (graph_use){node, slot};
    return TILEOPT_OK;
}

static graph_value *resolve_use(graph *g, const char *name, int32_t node, int32_t slot);

/* The local entry for a name, linked to the enclosing scope that defines it when
** this scope does not; the enclosing node records an implicit use. */
static graph_value *link_value(graph *g, const char *name) {
    graph_value *v = graph_find(g, name);
    if (v && (graph_value_defined(v) || v->outer >= 0)) return v;
    if (!g->parent) return NULL;
    graph_value *o = resolve_use(g->parent, name, g->parent_node, -1);
    if (!o) return NULL;
    int32_t oi = (int32_t)(o - g->parent->values);
    graph_type ot = o->type;
    v = value_get(g, name);
    if (!v) return NULL;
    v->outer = oi;
    v->outer_graph = g->parent;
    if (v->type.rank < 0 && !v->type.elem) v->type = ot;
    return v;
}

static graph_value *resolve_use(graph *g, const char *name, int32_t node, int32_t slot) {
    graph_value *v = link_value(g, name);
    if (!v) return NULL;
    /* A subgraph reading the same outer name twice needs one implicit use. */
    if (slot < 0 && v->n_uses && v->uses[v->n_uses - 1].node == node &&
        v->uses[v->n_uses - 1].input < 0)
        return v;
    return graph_value_add_use(g, v, node, slot) ? NULL : v;
}

graph_value *graph_index_entry(graph *g, const char *name) { return value_get(g, name); }

graph_value *graph_link_use(graph *g, const char *name, int32_t node, int32_t slot) {
    return node < 0 ? link_value(g, name) : resolve_use(g, name, node, slot);
}

graph_value *graph_resolve(graph *g, const char *name) {
    graph_value *v = graph_find(g, name);
    while (v && !graph_value_defined(v) && v->outer >= 0) {
        g = v->outer_graph;
        v = &g->values[v->outer];
    }
    if (v && graph_value_defined(v)) return v;
    return g->parent ? graph_resolve(g->parent, name) : NULL;
}

static int type_from_proto(graph *g, const Onnx__TypeProto *tp, graph_type *t,
                           errbuf *err) {
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) return TILEOPT_OK;
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (tt->has_elem_type && tt->elem_type != 0 && !dtype_valid(tt->elem_type))
        return err_set(err, TILEOPT_INVALID, "unknown element type %d", (int)tt->elem_type);
    if (tt->has_elem_type) t->elem = tt->elem_type;
    if (!tt->shape) return TILEOPT_OK;
    const graph_limits *lim = &g->model->limits;
    if (tt->shape->n_dim > lim->max_rank)
        return err_set(err, TILEOPT_LIMIT, "a shape has rank %zu, over the limit %" PRIu32,
                       tt->shape->n_dim, lim->max_rank);
    size_t r = tt->shape->n_dim;
    t->rank = (int32_t)r;
    t->dims = arena_alloc(g->model->arena, (r ? r : 1) * sizeof *t->dims);
    t->syms = arena_calloc(g->model->arena, r ? r : 1, sizeof *t->syms);
    if (!t->dims || !t->syms) return err_set(err, TILEOPT_NOMEM, "out of memory");
    for (size_t i = 0; i < r; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        t->dims[i] = -1;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            d->dim_value >= 0)
            t->dims[i] = d->dim_value;
        else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
            t->syms[i] = d->dim_param;
    }
    return TILEOPT_OK;
}

static int type_from_tensor(graph *g, const Onnx__TensorProto *tp, graph_type *t,
                            errbuf *err) {
    const graph_limits *lim = &g->model->limits;
    if (!tp->has_data_type || !dtype_valid(tp->data_type))
        return err_set(err, TILEOPT_INVALID, "initializer '%s' has unknown data type %d",
                       tp->name ? tp->name : "", tp->has_data_type ? (int)tp->data_type : 0);
    for (size_t i = 0; i < tp->n_dims; i++)
        if (tp->dims[i] < 0)
            return err_set(err, TILEOPT_INVALID, "initializer '%s' has negative dim %lld",
                           tp->name ? tp->name : "", (long long)tp->dims[i]);
    if (tp->n_dims > lim->max_rank)
        return err_set(err, TILEOPT_LIMIT, "initializer '%s' has rank %zu, over the limit %" PRIu32,
                       tp->name ? tp->name : "", tp->n_dims, lim->max_rank);
    t->elem = tp->has_data_type ? tp->data_type : 0;
    t->rank = (int32_t)tp->n_dims;
    t->dims = tp->dims;
    t->syms = arena_calloc(g->model->arena, tp->n_dims ? tp->n_dims : 1, sizeof *t->syms);
    if (!t->syms) return err_set(err, TILEOPT_NOMEM, "out of memory");
    return TILEOPT_OK;
}

bool graph_type_static(const graph_type *t) {
    if (t->rank < 0) return false;
    for (int32_t i = 0; i < t->rank; i++)
        if (t->dims[i] < 0) return false;
    return true;
}

bool graph_type_numel(const graph_type *t, uint64_t *out) {
    if (!graph_type_static(t)) return false;
    uint64_t n = 1;
    for (int32_t i = 0; i < t->rank; i++) {
        if (t->dims[i] && n > UINT64_MAX / (uint64_t)t->dims[i]) return false;
        n *= (uint64_t)t->dims[i];
    }
    *out = n;
    return true;
}

static const char *safe(const char *s) { return s ? s : ""; }

void graph_path_step(char *buf, size_t cap, size_t used, const char *node_id, const char *attr,
                     int32_t list) {
    if (used + 1 >= cap) return;
    if (list < 0)
        snprintf(buf + used, cap - used, "%s%s/%s", used ? "/" : "", node_id, safe(attr));
    else
        snprintf(buf + used, cap - used, "%s%s/%s[%" PRId32 "]", used ? "/" : "", node_id,
                 safe(attr), list);
}

const char *graph_path(graph *g, char *buf, size_t cap) {
    if (!g->parent || !cap) return NULL;
    /* Outer path first, written straight into buf. */
    const char *up = graph_path(g->parent, buf, cap);
    size_t used = up ? strlen(buf) : 0;
    if (!up) buf[0] = '\0';
    graph_path_step(buf, cap, used, graph_node_id(g->parent, g->parent_node), g->parent_attr,
                    g->parent_list);
    return buf;
}

static const char *graph_where(graph *g) {
    return g->parent ? " (in a subgraph)" : "";
}

/* Building the index is a hash probe per name into tables far bigger than the
** caches. Asking for the slots of the names a few nodes ahead lets those
** misses overlap; a hint to the processor that changes nothing. */
#define PREFETCH_AHEAD 8

static void prefetch_slots(const graph *g, size_t i, bool outputs) {
    if (i >= g->pb->n_node || !g->n_slots) return;
    const Onnx__NodeProto *n = g->pb->node[i];
    size_t count = outputs ? n->n_output : n->n_input;
    char *const *names = outputs ? n->output : n->input;
    for (size_t k = 0; k < count; k++)
        if (names[k][0]) __builtin_prefetch(&g->slots[graph_name_hash(names[k]) & (g->n_slots - 1)]);
}

static int index_definitions(graph *g, errbuf *err) {
    Onnx__GraphProto *pb = g->pb;
    for (size_t i = 0; i < pb->n_initializer; i++) {
        const Onnx__TensorProto *t = pb->initializer[i];
        graph_value *v = value_get(g, safe(t->name));
        if (!v) return err_set(err, TILEOPT_NOMEM, "out of memory");
        if (v->initializer >= 0)
            return err_set(err, TILEOPT_INVALID, "initializer '%s' is defined twice%s",
                           v->name, graph_where(g));
        v->initializer = (int32_t)i;
        int rc = type_from_tensor(g, t, &v->type, err);
        if (rc) return rc;
    }
    for (size_t i = 0; i < pb->n_sparse_initializer; i++) {
        const Onnx__SparseTensorProto *sp = pb->sparse_initializer[i];
        graph_value *v = value_get(g, safe(sp->values ? sp->values->name : NULL));
        if (!v) return err_set(err, TILEOPT_NOMEM, "out of memory");
        if (v->initializer >= 0 || v->sparse >= 0)
            return err_set(err, TILEOPT_INVALID, "initializer '%s' is defined twice%s",
                           v->name, graph_where(g));
        v->sparse = (int32_t)i;
        v->type.elem = sp->values && sp->values->has_data_type ? sp->values->data_type : 0;
    }
    for (size_t i = 0; i < pb->n_input; i++) {
        graph_value *v = value_get(g, safe(pb->input[i]->name));
        if (!v) return err_set(err, TILEOPT_NOMEM, "out of memory");
        if (v->input >= 0)
            return err_set(err, TILEOPT_INVALID, "graph input '%s' is listed twice%s", v->name,
                           graph_where(g));
        v->input = (int32_t)i;
        if (v->initializer < 0) {
            int rc = type_from_proto(g, pb->input[i]->type, &v->type, err);
            if (rc) return err_prefix(err, "graph input '%s': ", v->name);
        }
    }
    for (size_t i = 0; i < pb->n_node; i++) {
        const Onnx__NodeProto *n = pb->node[i];
        prefetch_slots(g, i + PREFETCH_AHEAD, true);
        for (size_t o = 0; o < n->n_output; o++) {
            if (!n->output[o][0]) continue;
            graph_value *v = value_get(g, n->output[o]);
            if (!v) return err_set(err, TILEOPT_NOMEM, "out of memory");
            if (v->producer >= 0)
                return err_set(err, TILEOPT_INVALID,
                               "value '%s' is produced by two nodes: %s and %s%s", v->name,
                               graph_node_id(g, v->producer), graph_node_id(g, (int32_t)i),
                               graph_where(g));
            /* A node may not redefine what the graph already defines: readers would
            ** see two values under one name, and fold would use the wrong one. */
            if (v->input >= 0)
                return err_set(err, TILEOPT_INVALID,
                               "value '%s' is defined twice: as a graph input and as the "
                               "output of node %s%s",
                               v->name, graph_node_id(g, (int32_t)i), graph_where(g));
            if (v->initializer >= 0 || v->sparse >= 0)
                return err_set(err, TILEOPT_INVALID,
                               "value '%s' is defined twice: as an initializer and as the "
                               "output of node %s%s",
                               v->name, graph_node_id(g, (int32_t)i), graph_where(g));
            v->producer = (int32_t)i;
            v->producer_out = (int32_t)o;
            hint(g, (uint32_t)i, true, o, v);
        }
    }
    for (size_t i = 0; i < pb->n_value_info; i++) {
        graph_value *v = value_get(g, safe(pb->value_info[i]->name));
        if (!v) return err_set(err, TILEOPT_NOMEM, "out of memory");
        v->value_info = (int32_t)i;
        if (v->type.rank < 0 && !v->type.elem) {
            int rc = type_from_proto(g, pb->value_info[i]->type, &v->type, err);
            if (rc) return err_prefix(err, "value_info '%s': ", v->name);
        }
    }
    for (size_t i = 0; i < pb->n_output; i++) {
        graph_value *v = value_get(g, safe(pb->output[i]->name));
        if (!v) return err_set(err, TILEOPT_NOMEM, "out of memory");
        if (v->output < 0) v->output = (int32_t)i;
        if (v->type.rank < 0 && !v->type.elem) {
            int rc = type_from_proto(g, pb->output[i]->type, &v->type, err);
            if (rc) return err_prefix(err, "graph output '%s': ", v->name);
        }
    }
    return TILEOPT_OK;
}

static int index_graph(graph_model *m, graph *g, errbuf *err);

/* The graph attribute `name` of n; NULL when it is missing or not a graph. */
static const Onnx__GraphProto *body_of(const Onnx__NodeProto *n, const char *name) {
    const Onnx__AttributeProto *a = graph_attr(n, name);
    return a ? a->g : NULL;
}

/*
** Structure ONNX's checker enforces and every pass and the evaluator rely on:
** control-flow bodies whose inputs and outputs fit their node, and Tile with the
** inputs of its opset. A model that breaks it would run with values wired to the
** wrong places, so it is refused here, once, with the node named.
*/
static int check_node_structure(graph *g, int32_t node, errbuf *err) {
    const Onnx__NodeProto *n = graph_node(g, node);
    if (!graph_domain_is_default(n->domain) || !n->op_type) return TILEOPT_OK;
    const char *id = graph_node_id(g, node), *op = n->op_type, *where = graph_where(g);
    int64_t opset = graph_opset(g->model, "");
    if (strcmp(op, "Tile") == 0) {
        size_t want = opset >= 6 ? 2 : 3;
        bool all = n->n_input == want;
        for (size_t k = 0; all && k < want; k++) all = n->input[k][0] != '\0';
        if (!all)
            return err_set(err, TILEOPT_INVALID,
                           "node %s (Tile): takes %s at opset %lld, not these %zu inputs%s", id,
                           want == 2 ? "input and repeats" : "input, tiles and axis",
                           (long long)opset, n->n_input, where);
        return TILEOPT_OK;
    }
    if (strcmp(op, "If") == 0) {
        static const char *const branches[2] = {"then_branch", "else_branch"};
        for (size_t b = 0; b < 2; b++) {
            const Onnx__GraphProto *body = body_of(n, branches[b]);
            if (!body)
                return err_set(err, TILEOPT_INVALID, "node %s (If): %s is missing or not a graph%s",
                               id, branches[b], where);
            if (body->n_output != n->n_output)
                return err_set(err, TILEOPT_INVALID,
                               "node %s (If): %s has %zu outputs but the node has %zu%s", id,
                               branches[b], body->n_output, n->n_output, where);
        }
        return TILEOPT_OK;
    }
    if (strcmp(op, "Loop") == 0) {
        /* inputs M, cond, N loop-carried; body (iter, cond, N) -> (cond, N, K scans) */
        const Onnx__GraphProto *body = body_of(n, "body");
        if (!body)
            return err_set(err, TILEOPT_INVALID, "node %s (Loop): body is missing or not a graph%s",
                           id, where);
        if (n->n_input < 2 || body->n_input != n->n_input || body->n_output != n->n_output + 1)
            return err_set(err, TILEOPT_INVALID,
                           "node %s (Loop): a node of %zu inputs and %zu outputs needs a body of "
                           "%zu inputs and %zu outputs, not %zu and %zu%s",
                           id, n->n_input, n->n_output, n->n_input < 2 ? 2 : n->n_input,
                           n->n_output + 1, body->n_input, body->n_output, where);
        return TILEOPT_OK;
    }
    /* Scan-8 (sequence_lens first) is checked by the upgrade pass that rewrites
    ** it: mid-migration a body holds Scan-9 nodes while the opset still says 8. */
    if (strcmp(op, "Scan") == 0 && opset >= 9) {
        const Onnx__GraphProto *body = body_of(n, "body");
        if (!body)
            return err_set(err, TILEOPT_INVALID, "node %s (Scan): body is missing or not a graph%s",
                           id, where);
        size_t states_and_scans = n->n_input;
        int64_t m = graph_attr_int(n, "num_scan_inputs", -1);
        if (m < 1 || (uint64_t)m > states_and_scans)
            return err_set(err, TILEOPT_INVALID,
                           "node %s (Scan): num_scan_inputs %lld is not in 1..%zu%s", id,
                           (long long)m, states_and_scans, where);
        if (body->n_input != states_and_scans || body->n_output != n->n_output)
            return err_set(err, TILEOPT_INVALID,
                           "node %s (Scan): the body has %zu inputs and %zu outputs, the node "
                           "needs %zu and %zu%s",
                           id, body->n_input, body->n_output, states_and_scans, n->n_output, where);
        const Onnx__AttributeProto *axes = graph_attr(n, "scan_input_axes");
        if (axes && axes->n_ints != (size_t)m)
            return err_set(err, TILEOPT_INVALID,
                           "node %s (Scan): scan_input_axes has %zu entries for %lld scan inputs%s",
                           id, axes->n_ints, (long long)m, where);
        for (size_t k = 0; axes && k < axes->n_ints; k++) {
            const char *in = graph_node_input(n, states_and_scans - (size_t)m + k);
            graph_value *v = in ? graph_resolve(g, in) : NULL;
            int64_t r = v ? v->type.rank : -1;
            if (r >= 0 && (axes->ints[k] < -r || axes->ints[k] >= r))
                return err_set(err, TILEOPT_INVALID,
                               "node %s (Scan): scan_input_axes[%zu] = %lld is out of range for "
                               "input '%s' of rank %lld%s",
                               id, k, (long long)axes->ints[k], in, (long long)r, where);
        }
    }
    return TILEOPT_OK;
}

static int index_uses_and_subgraphs(graph *g, errbuf *err) {
    Onnx__GraphProto *pb = g->pb;
    for (size_t i = 0; i < pb->n_node; i++) {
        const Onnx__NodeProto *n = pb->node[i];
        prefetch_slots(g, i + PREFETCH_AHEAD, false);
        for (size_t k = 0; k < n->n_input; k++) {
            if (!n->input[k][0]) continue;
            graph_value *v = resolve_use(g, n->input[k], (int32_t)i, (int32_t)k);
            if (!v)
                return err_set(err, TILEOPT_INVALID, "node %s (%s) reads undefined value '%s'%s",
                               graph_node_id(g, (int32_t)i), safe(n->op_type), n->input[k],
                               graph_where(g));
            n->input[k] = (char *)v->name; /* the same text, one string (arena-owned) */
            hint(g, (uint32_t)i, false, k, v);
        }
        graph **link = &g->subgraphs[i];
        for (size_t a = 0; a < n->n_attribute; a++) {
            const Onnx__AttributeProto *at = n->attribute[a];
            Onnx__GraphProto *one[1] = {at->g};
            Onnx__GraphProto **gs = at->g ? one : at->graphs;
            size_t count = at->g ? 1 : at->n_graphs;
            for (size_t j = 0; j < count; j++) {
                graph *sub = arena_calloc(g->model->arena, 1, sizeof *sub);
                if (!sub) return err_set(err, TILEOPT_NOMEM, "out of memory");
                sub->pb = gs[j];
                sub->model = g->model;
                sub->parent = g;
                sub->parent_node = (int32_t)i;
                sub->parent_attr = safe(at->name);
                sub->parent_list = at->g ? -1 : (int32_t)j;
                sub->depth = g->depth + 1;
                if (sub->depth > g->model->limits.max_depth)
                    return err_set(err, TILEOPT_LIMIT,
                                   "node %s: subgraphs nest deeper than the limit %" PRIu32,
                                   graph_node_id(g, (int32_t)i), g->model->limits.max_depth);
                *link = sub;
                link = &sub->next_sibling;
                int rc = index_graph(g->model, sub, err);
                if (rc) return err_prefix(err, "node %s attribute '%s': ",
                                          graph_node_id(g, (int32_t)i), safe(at->name));
            }
        }
        int rc = check_node_structure(g, (int32_t)i, err);
        if (rc) return rc;
    }
    for (size_t i = 0; i < pb->n_output; i++) {
        const char *name = safe(pb->output[i]->name);
        graph_value *v = graph_find(g, name);
        if (v && graph_value_defined(v)) continue;
        if (!link_value(g, name))
            return err_set(err, TILEOPT_INVALID, "graph output '%s' is never produced%s", name,
                           graph_where(g));
    }
    return TILEOPT_OK;
}

/* A reindex builds every table anew: the old ones (and those of the subgraph
** entries it replaces) are given back, so repeated commits on a big graph do
** not pile up copies. Nothing may hold a graph_value across a reindex. */
static void release_tables(graph *g) {
    arena *a = g->model->arena;
    for (uint32_t i = 0; g->subgraphs && i < g->cap_tables; i++)
        for (graph *s = g->subgraphs[i]; s; s = s->next_sibling) release_tables(s);
    arena_release(a, g->values, (size_t)g->cap_values * sizeof *g->values);
    arena_release(a, g->slots, (size_t)g->n_slots * sizeof *g->slots);
    arena_release(a, g->removed, (size_t)g->cap_tables * sizeof *g->removed);
    arena_release(a, g->subgraphs, (size_t)g->cap_tables * sizeof *g->subgraphs);
    arena_release(a, g->hints, (size_t)g->n_hints * sizeof *g->hints);
    arena_release(a, g->hint_at, (size_t)g->n_hinted * 2 * sizeof *g->hint_at);
    g->hints = NULL;
    g->hint_at = NULL;
    g->n_hints = g->n_hinted = 0;
    g->values = NULL;
    g->slots = NULL;
    g->removed = NULL;
    g->subgraphs = NULL;
    g->cap_tables = 0;
}

static int index_graph(graph_model *m, graph *g, errbuf *err) {
    g->model = m;
    m->shapes_current = false; /* the types come from the protobuf again */
    m->op_present_current = false;
    release_tables(g);
    g->values = NULL;
    g->n_values = g->cap_values = 0;
    g->slots = NULL;
    g->n_slots = 0;
    g->n_removed = 0;
    g->cap_nodes = (uint32_t)g->pb->n_node + 16;
    g->removed = arena_calloc(m->arena, g->cap_nodes, sizeof *g->removed);
    g->subgraphs = arena_calloc(m->arena, g->cap_nodes, sizeof *g->subgraphs);
    if (!g->removed || !g->subgraphs) return err_set(err, TILEOPT_NOMEM, "out of memory");
    g->cap_tables = g->cap_nodes;
    g->n_indexed = (uint32_t)g->pb->n_node;
    /* Size the tables once: regrowing big ones leaves dead copies in the arena,
    ** and first writes to fresh pages dominate indexing time on big graphs. */
    const Onnx__GraphProto *pb = g->pb;
    uint64_t expect = (uint64_t)pb->n_initializer + pb->n_sparse_initializer + pb->n_input +
                      pb->n_output + pb->n_value_info + 16;
    uint64_t slots_total = 0;
    for (size_t i = 0; i < pb->n_node; i++) {
        expect += pb->node[i]->n_output;
        slots_total += pb->node[i]->n_input + pb->node[i]->n_output;
    }
    if (expect > UINT32_MAX / 4 || slots_total > UINT32_MAX / 4)
        return err_set(err, TILEOPT_LIMIT, "the graph has too many values");
    g->hints = arena_alloc(m->arena, (slots_total ? slots_total : 1) * sizeof *g->hints);
    g->hint_at = arena_alloc(m->arena, (pb->n_node ? pb->n_node : 1) * 2 * sizeof *g->hint_at);
    if (!g->hints || !g->hint_at) return err_set(err, TILEOPT_NOMEM, "out of memory");
    g->n_hints = (uint32_t)slots_total;
    g->n_hinted = (uint32_t)pb->n_node;
    for (uint32_t i = 0, at = 0; i < g->n_hinted; i++) {
        g->hint_at[2 * i] = at;
        at += (uint32_t)pb->node[i]->n_input;
        g->hint_at[2 * i + 1] = at;
        at += (uint32_t)pb->node[i]->n_output;
    }
    memset(g->hints, 0xff, (slots_total ? slots_total : 1) * sizeof *g->hints);
    g->cap_values = (uint32_t)expect;
    g->values = arena_alloc(m->arena, expect * sizeof *g->values);
    uint32_t slots = 64;
    while (slots_full(expect, slots)) slots *= 2;
    if (!g->values || rehash(g, slots)) return err_set(err, TILEOPT_NOMEM, "out of memory");
    int rc = index_definitions(g, err);
    if (rc) return rc;
    rc = index_uses_and_subgraphs(g, err);
    if (rc) return rc;
    /* Reject cycles now: every pass relies on a DAG. */
    int32_t *order = malloc((g->pb->n_node ? g->pb->n_node : 1) * sizeof *order);
    if (!order) return err_set(err, TILEOPT_NOMEM, "out of memory");
    uint32_t count;
    rc = graph_toposort(g, order, &count, err);
    free(order);
    return rc;
}

int graph_reindex(graph *g, errbuf *err) { return index_graph(g->model, g, err); }

int graph_model_reindex(graph_model *m, errbuf *err) {
    if (!m->pb->graph) return err_set(err, TILEOPT_INVALID, "the model has no graph");
    if (!m->main) {
        m->main = arena_calloc(m->arena, 1, sizeof *m->main);
        if (!m->main) return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    m->main->pb = m->pb->graph;
    m->main->model = m;
    return index_graph(m, m->main, err);
}

const char *graph_node_id(graph *g, int32_t i) {
    const Onnx__NodeProto *n = g->pb->node[i];
    if (n->name && n->name[0]) return n->name;
    char buf[32];
    snprintf(buf, sizeof buf, "#%" PRId32, i);
    char *s = arena_strdup(g->model->arena, buf);
    return s ? s : "#?";
}

bool graph_domain_is_default(const char *domain) {
    return !domain || !domain[0] || strcmp(domain, "ai.onnx") == 0;
}

bool graph_node_is(const Onnx__NodeProto *n, const char *op_type) {
    if (!n->op_type || strcmp(n->op_type, op_type) != 0) return false;
    return graph_domain_is_default(n->domain);
}

Onnx__NodeProto *graph_producer(graph *g, const char *name, int32_t *index) {
    graph_value *v = graph_find(g, name);
    if (!v || v->producer < 0 || g->removed[v->producer]) return NULL;
    if (index) *index = v->producer;
    return g->pb->node[v->producer];
}

Onnx__TensorProto *graph_initializer(graph *g, const char *name) {
    for (; g; g = g->parent) {
        graph_value *v = graph_find(g, name);
        if (v && v->initializer >= 0) return g->pb->initializer[v->initializer];
        if (v && (v->producer >= 0 || v->input >= 0)) return NULL; /* shadowed */
    }
    return NULL;
}

const char *graph_node_input(const Onnx__NodeProto *n, size_t i) {
    if (i >= n->n_input || !n->input[i][0]) return NULL;
    return n->input[i];
}

bool graph_value_is_output(graph *g, const char *name) {
    graph_value *v = graph_find(g, name);
    return v && v->output >= 0;
}

graph *graph_node_subgraphs(graph *g, int32_t node) { return g->subgraphs[node]; }

Onnx__AttributeProto *graph_attr(const Onnx__NodeProto *n, const char *name) {
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0)
            return n->attribute[i];
    return NULL;
}

int64_t graph_attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt) {
    const Onnx__AttributeProto *a = graph_attr(n, name);
    return a && a->has_i ? a->i : dflt;
}

float graph_attr_float(const Onnx__NodeProto *n, const char *name, float dflt) {
    const Onnx__AttributeProto *a = graph_attr(n, name);
    return a && a->has_f ? a->f : dflt;
}

const char *graph_attr_string(const Onnx__NodeProto *n, const char *name,
                              const char *dflt) {
    const Onnx__AttributeProto *a = graph_attr(n, name);
    /* Strings are bytes in the schema; the loader terminates them (load.c),
    ** and so does graph_node_set_attr_string. */
    if (!a || !a->has_s) return dflt;
    return a->s.data ? (const char *)a->s.data : "";
}

int64_t graph_opset(const graph_model *m, const char *domain) {
    bool dflt = graph_domain_is_default(domain);
    size_t at = m->default_opset_at;
    if (dflt && at < m->pb->n_opset_import && graph_domain_is_default(m->pb->opset_import[at]->domain))
        return m->pb->opset_import[at]->has_version ? m->pb->opset_import[at]->version : 0;
    for (size_t i = 0; i < m->pb->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->pb->opset_import[i];
        const char *d = o->domain ? o->domain : "";
        if (dflt ? graph_domain_is_default(d) : strcmp(d, domain) == 0)
            return o->has_version ? o->version : 0;
    }
    /* Before IR 3 there were no opset imports: such a model is at opset 1. */
    if (dflt && m->pb->n_opset_import == 0 && m->pb->ir_version < 3) return 1;
    return 0;
}

/* Most graphs come sorted (exporters write them so, and commit keeps them so):
** when every use of a value, subgraph reads included, comes after its producer,
** the order is the index order, found without the heap. */
static bool sorted_already(const graph *g, int32_t *order, uint32_t *count) {
    uint32_t n = graph_n_nodes(g), live = 0;
    for (uint32_t v = 0; v < g->n_values; v++) {
        int32_t p = g->values[v].producer;
        if (p < 0 || (uint32_t)p >= n || g->removed[p]) continue;
        const graph_value *val = &g->values[v];
        for (uint32_t u = 0; u < val->n_uses; u++) {
            int32_t c = val->uses[u].node;
            if (c >= 0 && !g->removed[c] && c <= p) return false;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        if (!g->removed[i]) order[live++] = (int32_t)i;
    *count = live;
    return true;
}

int graph_toposort(graph *g, int32_t *order, uint32_t *count, errbuf *err) {
    if (sorted_already(g, order, count)) return TILEOPT_OK;
    uint32_t n = graph_n_nodes(g);
    uint32_t *indeg = calloc(n ? n : 1, sizeof *indeg);
    /* A min-heap of ready nodes by index keeps an already sorted graph as it is. */
    int32_t *heap = malloc((n ? n : 1) * sizeof *heap);
    /* Node -> the values it produces, from the index (no name lookups): value
    ** indices vals[off[i] .. off[i+1]). */
    uint32_t *off = calloc((size_t)n + 1, sizeof *off);
    uint32_t *vals = malloc((g->n_values ? g->n_values : 1) * sizeof *vals);
    if (!indeg || !heap || !off || !vals) {
        free(indeg);
        free(heap);
        free(off);
        free(vals);
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    for (uint32_t v = 0; v < g->n_values; v++) {
        int32_t p = g->values[v].producer;
        if (p >= 0 && (uint32_t)p < n && !g->removed[p]) off[p + 1]++;
    }
    for (uint32_t i = 0; i < n; i++) off[i + 1] += off[i];
    /* indeg, still zero, serves as each node's fill cursor, then is cleared */
    for (uint32_t v = 0, *fill = indeg; v < g->n_values; v++) {
        int32_t p = g->values[v].producer;
        if (p >= 0 && (uint32_t)p < n && !g->removed[p]) vals[off[p] + fill[p]++] = v;
    }
    memset(indeg, 0, (n ? n : 1) * sizeof *indeg);
    uint32_t live = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (g->removed[i]) continue;
        live++;
        for (uint32_t k = off[i]; k < off[i + 1]; k++) {
            const graph_value *v = &g->values[vals[k]];
            for (uint32_t u = 0; u < v->n_uses; u++)
                if (v->uses[u].node >= 0 && !g->removed[v->uses[u].node])
                    indeg[v->uses[u].node]++;
        }
    }
    uint32_t hn = 0, out = 0;
#define HEAP_PUSH(x)                                                        \
    do {                                                                    \
        uint32_t hc_ = hn++;                                                  \
        heap[hc_] = (x);                                                      \
        while (hc_ && heap[(hc_ - 1) / 2] > heap[hc_]) {                          \
            int32_t t_ = heap[hc_];                                            \
            heap[hc_] = heap[(hc_ - 1) / 2];                                    \
            heap[(hc_ - 1) / 2] = t_;                                          \
            hc_ = (hc_ - 1) / 2;                                                \
        }                                                                   \
    } while (0)
    for (uint32_t i = 0; i < n; i++)
        if (!g->removed[i] && !indeg[i]) HEAP_PUSH((int32_t)i);
    while (hn) {
        int32_t i = heap[0];
        heap[0] = heap[--hn];
        for (uint32_t c = 0;;) {
            uint32_t l = 2 * c + 1, r = l + 1, s = c;
            if (l < hn && heap[l] < heap[s]) s = l;
            if (r < hn && heap[r] < heap[s]) s = r;
            if (s == c) break;
            int32_t t = heap[c];
            heap[c] = heap[s];
            heap[s] = t;
            c = s;
        }
        order[out++] = i;
        for (uint32_t k = off[i]; k < off[i + 1]; k++) {
            const graph_value *v = &g->values[vals[k]];
            for (uint32_t u = 0; u < v->n_uses; u++) {
                int32_t c = v->uses[u].node;
                if (c >= 0 && !g->removed[c] && --indeg[c] == 0) HEAP_PUSH(c);
            }
        }
    }
#undef HEAP_PUSH
    int rc = TILEOPT_OK;
    if (out != live) {
        uint32_t i = 0;
        while (i < n && (g->removed[i] || !indeg[i])) i++;
        rc = err_set(err, TILEOPT_INVALID, "the graph has a cycle through node %s (%s)%s",
                     graph_node_id(g, (int32_t)i), g->pb->node[i]->op_type,
                     g->parent ? " (in a subgraph)" : "");
    }
    *count = out;
    free(indeg);
    free(heap);
    free(off);
    free(vals);
    return rc;
}

/* ------------------------------------------------------- attribute content */

/* An attribute's serialized bytes (malloc'd; NULL when out of memory or when
** it holds a graph, which never compares equal). */
static uint8_t *attr_bytes(const Onnx__AttributeProto *a, size_t *len) {
    if (a->g || a->n_graphs) return NULL;
    *len = onnx__attribute_proto__get_packed_size(a);
    uint8_t *b = malloc(*len ? *len : 1);
    if (b) onnx__attribute_proto__pack(a, b);
    return b;
}

static bool attr_equal(const Onnx__AttributeProto *a, const Onnx__AttributeProto *b) {
    size_t la = 0, lb = 0;
    uint8_t *ba = attr_bytes(a, &la), *bb = attr_bytes(b, &lb);
    bool eq = ba && bb && la == lb && memcmp(ba, bb, la) == 0;
    free(ba);
    free(bb);
    return eq;
}

bool graph_attrs_equal(const Onnx__NodeProto *a, const Onnx__NodeProto *b) {
    if (a->n_attribute != b->n_attribute) return false;
    for (size_t i = 0; i < a->n_attribute; i++) {
        const Onnx__AttributeProto *x = a->attribute[i];
        const Onnx__AttributeProto *y = graph_attr(b, x->name ? x->name : "");
        if (!y || !attr_equal(x, y)) return false;
    }
    return true;
}

uint32_t graph_attrs_hash(const Onnx__NodeProto *n) {
    uint32_t h = 0;
    for (size_t i = 0; i < n->n_attribute; i++) {
        size_t len = 0;
        uint8_t *b = attr_bytes(n->attribute[i], &len);
        /* a sum, so the order of the attributes does not count */
        h += b ? graph_hash_bytes(GRAPH_HASH_SEED, b, len) : 1;
        free(b);
    }
    return h;
}

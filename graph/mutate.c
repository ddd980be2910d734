/*
** Editing a graph. Every edit keeps the index in step (producers, uses), so a pass
** can rewrite to a fixed point without rebuilding; graph_commit() then sweeps
** removed and dead nodes, sorts, and rebuilds once.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

char *graph_strdup(graph *g, const char *s) { return arena_strdup(g->model->arena, s); }

/* ------------------------------------------------------------ unique names */

static bool names_has(const graph_model *m, const char *s) {
    uint32_t mask = m->cap_names - 1;
    for (uint32_t i = graph_name_hash(s) & mask; m->names[i]; i = (i + 1) & mask)
        if (strcmp(m->names[i], s) == 0) return true;
    return false;
}

static int names_add(graph_model *m, const char *s);

static int names_grow(graph_model *m) {
    uint32_t cap = m->cap_names ? m->cap_names * 2 : 1024;
    const char **old = m->names;
    uint32_t old_cap = m->cap_names;
    m->names = arena_calloc(m->arena, cap, sizeof *m->names);
    if (!m->names) return TILEOPT_NOMEM;
    m->cap_names = cap;
    m->n_names = 0;
    for (uint32_t i = 0; i < old_cap; i++)
        if (old[i]) names_add(m, old[i]);
    return TILEOPT_OK;
}

static int names_add(graph_model *m, const char *s) {
    if ((uint64_t)(m->n_names + 1) * 2 > m->cap_names && names_grow(m)) return TILEOPT_NOMEM;
    if (names_has(m, s)) return TILEOPT_OK;
    uint32_t mask = m->cap_names - 1, i = graph_name_hash(s) & mask;
    while (m->names[i]) i = (i + 1) & mask;
    m->names[i] = s;
    m->n_names++;
    return TILEOPT_OK;
}

static int names_collect(graph_model *m, graph *g) {
    for (uint32_t i = 0; i < g->n_values; i++)
        if (names_add(m, g->values[i].name)) return TILEOPT_NOMEM;
    for (uint32_t i = 0; i < graph_n_nodes(g); i++)
        for (graph *s = g->subgraphs[i]; s; s = s->next_sibling)
            if (names_collect(m, s)) return TILEOPT_NOMEM;
    return TILEOPT_OK;
}

const char *graph_unique_name(graph *g, const char *hint) {
    graph_model *m = g->model;
    if (!m->names && (names_grow(m) || names_collect(m, m->main))) return NULL;
    if (!hint || !hint[0]) hint = "t";
    size_t n = strlen(hint) + 32;
    char *buf = arena_alloc(m->arena, n);
    if (!buf) return NULL;
    snprintf(buf, n, "%s", hint);
    while (names_has(m, buf)) snprintf(buf, n, "%s_%" PRIu64, hint, ++m->name_counter);
    return names_add(m, buf) ? NULL : buf;
}

/* --------------------------------------------------------------- arrays */

/* Append p to a protobuf-c array, regrowing it in the arena by doubling. */
static int push(arena *a, void ***arr, size_t *n, size_t *cap, void *p) {
    if (*cap < *n) *cap = *n; /* as unpacked: exactly full */
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 8;
        void **grown = arena_grow(a, *arr, *n * sizeof *grown, c * sizeof *grown);
        if (!grown) return TILEOPT_NOMEM;
        *arr = grown;
        *cap = c;
    }
    (*arr)[(*n)++] = p;
    return TILEOPT_OK;
}

static int grow_node_arrays(graph *g) {
    size_t n = g->pb->n_node;
    if (n < g->cap_nodes && g->node_array_owned) return TILEOPT_OK;
    uint32_t cap = g->cap_nodes > n ? g->cap_nodes : (uint32_t)n;
    if (n >= cap) cap = cap ? cap * 2 : 16;
    arena *a = g->model->arena;
    Onnx__NodeProto **nodes = arena_grow(a, g->pb->node, n * sizeof *nodes, cap * sizeof *nodes);
    bool *removed = arena_calloc(a, cap, sizeof *removed);
    graph **subs = arena_calloc(a, cap, sizeof *subs);
    if (!nodes || !removed || !subs) return TILEOPT_NOMEM;
    memcpy(removed, g->removed, n * sizeof *removed);
    memcpy(subs, g->subgraphs, n * sizeof *subs);
    arena_release(a, g->removed, g->cap_tables * sizeof *removed);
    arena_release(a, g->subgraphs, g->cap_tables * sizeof *subs);
    g->cap_tables = cap;
    g->pb->node = nodes;
    g->removed = removed;
    g->subgraphs = subs;
    g->cap_nodes = cap;
    g->node_array_owned = true;
    return TILEOPT_OK;
}

/* ------------------------------------------------------------------ nodes */

static graph_value *value_for(graph *g, const char *name);

Onnx__NodeProto *graph_add_node(graph *g, const char *op_type, const char *name,
                                const char *const *inputs, size_t n_inputs,
                                const char *const *outputs, size_t n_outputs,
                                int32_t *index) {
    arena *a = g->model->arena;
    if (grow_node_arrays(g)) return NULL;
    Onnx__NodeProto *n = arena_alloc(a, sizeof *n);
    if (!n) return NULL;
    onnx__node_proto__init(n);
    n->op_type = arena_strdup(a, op_type);
    n->name = name ? arena_strdup(a, name) : NULL;
    n->input = arena_calloc(a, n_inputs ? n_inputs : 1, sizeof *n->input);
    n->output = arena_calloc(a, n_outputs ? n_outputs : 1, sizeof *n->output);
    if (!n->op_type || !n->input || !n->output) return NULL;
    int32_t i = (int32_t)g->pb->n_node;
    g->pb->node[i] = n;
    g->pb->n_node++;
    g->removed[i] = false;
    g->subgraphs[i] = NULL;
    for (size_t k = 0; k < n_outputs; k++) {
        n->output[k] = arena_strdup(a, outputs[k]);
        if (!n->output[k]) return NULL;
        n->n_output++;
        if (!outputs[k][0]) continue;
        graph_value *v = value_for(g, n->output[k]);
        if (!v) return NULL;
        v->producer = i;
        v->producer_out = (int32_t)k;
        if (g->model->names) names_add(g->model, v->name);
    }
    for (size_t k = 0; k < n_inputs; k++) {
        n->input[k] = arena_strdup(a, inputs[k] ? inputs[k] : "");
        if (!n->input[k]) return NULL;
        n->n_input++;
        if (n->input[k][0] && graph_node_set_input(g, i, k, n->input[k])) return NULL;
    }
    if (index) *index = i;
    return n;
}

static graph_value *value_for(graph *g, const char *name) { return graph_index_entry(g, name); }

/* From the back: passes remove readers last-first, so a shared constant's use
** list shrinks in O(1) per removal instead of a scan. */
static void drop_use(graph_value *v, int32_t node, int32_t slot) {
    for (uint32_t u = v->n_uses; u-- > 0;)
        if (v->uses[u].node == node && v->uses[u].input == slot) {
            v->uses[u] = v->uses[--v->n_uses];
            return;
        }
}

int graph_node_set_input(graph *g, int32_t node, size_t slot, const char *name) {
    Onnx__NodeProto *n = g->pb->node[node];
    arena *a = g->model->arena;
    if (slot > n->n_input) return TILEOPT_MISUSE;
    if (slot == n->n_input) {
        char **in = arena_grow(a, n->input, n->n_input * sizeof *in, (n->n_input + 1) * sizeof *in);
        if (!in) return TILEOPT_NOMEM;
        in[n->n_input++] = (char *)"";
        n->input = in;
    } else if (n->input[slot][0]) {
        graph_value *old = graph_find(g, n->input[slot]);
        if (old) drop_use(old, node, (int32_t)slot);
    }
    if (n->input[slot] != name) {
        char *copy = arena_strdup(a, name);
        if (!copy) return TILEOPT_NOMEM;
        n->input[slot] = copy;
    }
    if (!name[0]) return TILEOPT_OK;
    graph_value *v = graph_link_use(g, n->input[slot], node, (int32_t)slot);
    return v ? TILEOPT_OK : TILEOPT_INVALID;
}

int graph_node_set_output(graph *g, int32_t node, size_t slot, const char *name) {
    Onnx__NodeProto *n = g->pb->node[node];
    if (slot >= n->n_output || !name[0]) return TILEOPT_MISUSE;
    graph_value *nv = graph_find(g, name);
    if (nv && (graph_value_defined(nv) && !(nv->producer == node && nv->producer_out ==
                                            (int32_t)slot)))
        return TILEOPT_MISUSE;
    char *copy = arena_strdup(g->model->arena, name);
    if (!copy) return TILEOPT_NOMEM;
    if (n->output[slot][0]) {
        graph_value *old = graph_find(g, n->output[slot]);
        if (old && old->producer == node) old->producer = -1;
    }
    n->output[slot] = copy;
    nv = value_for(g, copy);
    if (!nv) return TILEOPT_NOMEM;
    nv->producer = node;
    nv->producer_out = (int32_t)slot;
    return g->model->names && !names_has(g->model, copy) ? names_add(g->model, copy)
                                                          : TILEOPT_OK;
}

/* The attribute `name` of n, added or reset, with its type set. */
static int attr_slot(graph *g, Onnx__NodeProto *n, const char *name,
                     Onnx__AttributeProto__AttributeType type, Onnx__AttributeProto **out) {
    arena *a = g->model->arena;
    Onnx__AttributeProto *at = graph_attr(n, name);
    if (!at) {
        at = arena_alloc(a, sizeof *at);
        if (!at) return TILEOPT_NOMEM;
        size_t cap = n->n_attribute;
        if (push(a, (void ***)&n->attribute, &n->n_attribute, &cap, at)) return TILEOPT_NOMEM;
    }
    onnx__attribute_proto__init(at);
    at->name = arena_strdup(a, name);
    at->has_type = 1;
    at->type = type;
    *out = at;
    return at->name ? TILEOPT_OK : TILEOPT_NOMEM;
}

int graph_node_set_attr_int(graph *g, Onnx__NodeProto *n, const char *name, int64_t v) {
    Onnx__AttributeProto *at;
    int rc = attr_slot(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, &at);
    if (rc) return rc;
    at->has_i = 1;
    at->i = v;
    return TILEOPT_OK;
}

int graph_node_set_attr_ints(graph *g, Onnx__NodeProto *n, const char *name,
                             const int64_t *v, size_t count) {
    Onnx__AttributeProto *at;
    int rc = attr_slot(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, &at);
    if (rc) return rc;
    at->ints = arena_alloc(g->model->arena, (count ? count : 1) * sizeof *at->ints);
    if (!at->ints) return TILEOPT_NOMEM;
    if (count) memcpy(at->ints, v, count * sizeof *v);
    at->n_ints = count;
    return TILEOPT_OK;
}

int graph_node_set_attr_floats(graph *g, Onnx__NodeProto *n, const char *name,
                               const float *v, size_t count) {
    Onnx__AttributeProto *at;
    int rc = attr_slot(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS, &at);
    if (rc) return rc;
    at->floats = arena_alloc(g->model->arena, (count ? count : 1) * sizeof *at->floats);
    if (!at->floats) return TILEOPT_NOMEM;
    if (count) memcpy(at->floats, v, count * sizeof *v);
    at->n_floats = count;
    return TILEOPT_OK;
}

int graph_node_set_attr_float(graph *g, Onnx__NodeProto *n, const char *name, float v) {
    Onnx__AttributeProto *at;
    int rc = attr_slot(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, &at);
    if (rc) return rc;
    at->has_f = 1;
    at->f = v;
    return TILEOPT_OK;
}

int graph_node_set_attr_string(graph *g, Onnx__NodeProto *n, const char *name,
                               const char *v) {
    Onnx__AttributeProto *at;
    int rc = attr_slot(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, &at);
    if (rc) return rc;
    char *s = arena_strdup(g->model->arena, v);
    if (!s) return TILEOPT_NOMEM;
    at->has_s = 1;
    at->s.data = (uint8_t *)s;
    at->s.len = strlen(s);
    return TILEOPT_OK;
}

int graph_node_set_attr_tensor(graph *g, Onnx__NodeProto *n, const char *name,
                               Onnx__TensorProto *t) {
    Onnx__AttributeProto *at;
    int rc = attr_slot(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR, &at);
    if (rc) return rc;
    at->t = t;
    return TILEOPT_OK;
}

int graph_node_set_attr_graph(graph *g, Onnx__NodeProto *n, const char *name,
                              Onnx__GraphProto *sub) {
    Onnx__AttributeProto *at;
    int rc = attr_slot(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH, &at);
    if (rc) return rc;
    at->g = sub;
    return TILEOPT_OK;
}

int graph_attr_terminate(graph_model *m, Onnx__AttributeProto *at) {
    if (!at->has_s) return TILEOPT_OK;
    uint8_t *s = arena_alloc(m->arena, at->s.len + 1);
    if (!s) return TILEOPT_NOMEM;
    if (at->s.len) memcpy(s, at->s.data, at->s.len);
    s[at->s.len] = 0;
    at->s.data = s;
    return TILEOPT_OK;
}

static int terminate_graph(graph_model *m, Onnx__GraphProto *g) {
    int rc = TILEOPT_OK;
    for (size_t i = 0; !rc && i < g->n_node; i++)
        for (size_t a = 0; !rc && a < g->node[i]->n_attribute; a++) {
            Onnx__AttributeProto *at = g->node[i]->attribute[a];
            rc = graph_attr_terminate(m, at);
            if (!rc && at->g) rc = terminate_graph(m, at->g);
            for (size_t k = 0; !rc && k < at->n_graphs; k++) rc = terminate_graph(m, at->graphs[k]);
        }
    return rc;
}

Onnx__GraphProto *graph_pb_clone(graph_model *m, const Onnx__GraphProto *src) {
    /* Through the wire format: protobuf-c has no deep copy, and this keeps every
    ** field, unknown ones included, as a save would. */
    size_t n = onnx__graph_proto__get_packed_size(src);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) return NULL;
    onnx__graph_proto__pack(src, buf);
    Onnx__GraphProto *c = onnx__graph_proto__unpack(arena_pb_allocator(m->arena), n, buf);
    free(buf);
    return c && !terminate_graph(m, c) ? c : NULL;
}

/* A deep copy of one node in the model's arena (through the wire format, as
** graph_pb_clone). */
static Onnx__NodeProto *node_clone(graph_model *m, const Onnx__NodeProto *src) {
    size_t n = onnx__node_proto__get_packed_size(src);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) return NULL;
    onnx__node_proto__pack(src, buf);
    Onnx__NodeProto *c = onnx__node_proto__unpack(arena_pb_allocator(m->arena), n, buf);
    free(buf);
    for (size_t a = 0; c && a < c->n_attribute; a++) {
        Onnx__AttributeProto *at = c->attribute[a];
        int rc = graph_attr_terminate(m, at);
        if (!rc && at->g) rc = terminate_graph(m, at->g);
        for (size_t k = 0; !rc && k < at->n_graphs; k++) rc = terminate_graph(m, at->graphs[k]);
        if (rc) return NULL;
    }
    return c;
}

/* A value_info of name with a tensor type of element type elem, shape unknown. */
static Onnx__ValueInfoProto *tensor_value_info(arena *a, const char *name, int32_t elem) {
    Onnx__ValueInfoProto *vi = arena_alloc(a, sizeof *vi);
    Onnx__TypeProto *tp = arena_alloc(a, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = arena_alloc(a, sizeof *tt);
    if (!vi || !tp || !tt) return NULL;
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->type = tp;
    vi->name = arena_strdup(a, name);
    return vi->name ? vi : NULL;
}

Onnx__GraphProto *graph_subgraph_of_copies(graph *g, int32_t at, const int32_t *nodes, size_t n,
                                           const char *out, int32_t elem, const char *name,
                                           errbuf *err) {
    graph_model *m = g->model;
    arena *a = m->arena;
    Onnx__GraphProto *sg = arena_alloc(a, sizeof *sg);
    if (!sg) goto nomem;
    onnx__graph_proto__init(sg);
    sg->name = arena_strdup(a, name);
    sg->node = arena_calloc(a, n ? n : 1, sizeof *sg->node);
    /* each copied output's old and new name, in the order the copies write them */
    size_t n_out = 0, cap = 0;
    for (size_t i = 0; i < n; i++) cap += graph_node(g, nodes[i])->n_output;
    const char **was = arena_calloc(a, cap ? cap : 1, sizeof *was);
    const char **now = arena_calloc(a, cap ? cap : 1, sizeof *now);
    if (!sg->name || !sg->node || !was || !now) goto nomem;
    const char *result = NULL;
    for (size_t i = 0; i < n; i++) {
        Onnx__NodeProto *c = node_clone(m, graph_node(g, nodes[i]));
        if (!c) goto nomem;
        for (size_t k = 0; k < c->n_input; k++) {
            const char *x = c->input[k];
            if (!x || !x[0]) continue;
            size_t j = n_out;
            /* the copies are few (one attention's nodes): a scan is cheapest */
            while (j > 0 && strcmp(was[j - 1], x) != 0) j--;
            if (j > 0) {
                c->input[k] = (char *)now[j - 1];
            } else if (!graph_link_use(g, x, at, -1)) {
                return err_set(err, TILEOPT_INVALID, "%s reads '%s', which no scope defines",
                               graph_node_id(g, nodes[i]), x), NULL;
            }
        }
        for (size_t k = 0; k < c->n_output; k++) {
            if (!c->output[k] || !c->output[k][0]) continue;
            const char *fresh = graph_unique_name(g, c->output[k]);
            if (!fresh) goto nomem;
            was[n_out] = graph_node(g, nodes[i])->output[k];
            now[n_out++] = fresh;
            if (strcmp(c->output[k], out) == 0) result = fresh;
            c->output[k] = (char *)fresh;
        }
        sg->node[sg->n_node++] = c;
    }
    if (!result)
        return err_set(err, TILEOPT_MISUSE, "no node copied into subgraph %s writes '%s'", name,
                       out), NULL;
    sg->output = arena_alloc(a, sizeof *sg->output);
    if (!sg->output || !(sg->output[0] = tensor_value_info(a, result, elem))) goto nomem;
    sg->n_output = 1;
    return sg;
nomem:
    err_set(err, TILEOPT_NOMEM, "out of memory");
    return NULL;
}

void graph_node_del_attr(Onnx__NodeProto *n, const char *name) {
    size_t k = 0;
    for (size_t i = 0; i < n->n_attribute; i++)
        if (!n->attribute[i]->name || strcmp(n->attribute[i]->name, name) != 0)
            n->attribute[k++] = n->attribute[i];
    n->n_attribute = k;
}

/* ----------------------------------------------------------- initializers */

/* Register t (its name unique already) as a new initializer of g. */
static int add_initializer(graph *g, Onnx__TensorProto *t, const char **name_out,
                           errbuf *err) {
    graph_model *m = g->model;
    const char *name = t->name;
    int32_t elem = t->data_type;
    size_t rank = t->n_dims;
    if (push(m->arena, (void ***)&g->pb->initializer, &g->pb->n_initializer,
             &g->cap_initializers, t))
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    graph_value *v = value_for(g, name);
    if (!v) return err_set(err, TILEOPT_NOMEM, "out of memory");
    v->initializer = (int32_t)g->pb->n_initializer - 1;
    v->type.elem = elem;
    v->type.rank = (int32_t)rank;
    v->type.dims = t->dims;
    v->type.syms = arena_calloc(m->arena, rank ? rank : 1, sizeof *v->type.syms);
    /* Before IR 4 every initializer had to be a graph input too. */
    if (!g->parent && m->pb->has_ir_version && m->pb->ir_version < 4) {
        Onnx__ValueInfoProto *vi = graph_value_info_new(m, name, &v->type);
        if (!vi || push(m->arena, (void ***)&g->pb->input, &g->pb->n_input, &g->cap_inputs, vi))
            return err_set(err, TILEOPT_NOMEM, "out of memory");
        v->input = (int32_t)g->pb->n_input - 1;
    }
    *name_out = name;
    return TILEOPT_OK;
}

int graph_list_initializers_as_inputs(graph *g, errbuf *err) {
    graph_model *m = g->model;
    for (size_t i = 0; i < g->pb->n_initializer; i++) {
        const char *name = g->pb->initializer[i]->name;
        graph_value *v = name ? graph_find(g, name) : NULL;
        if (!v || v->input >= 0) continue;
        Onnx__ValueInfoProto *vi = graph_value_info_new(m, name, &v->type);
        if (!vi || push(m->arena, (void ***)&g->pb->input, &g->pb->n_input, &g->cap_inputs, vi))
            return err_set(err, TILEOPT_NOMEM, "out of memory");
        v->input = (int32_t)g->pb->n_input - 1;
    }
    return TILEOPT_OK;
}

int graph_add_initializer(graph *g, const char *hint, int32_t elem, const int64_t *dims,
                          size_t rank, const void *data, size_t nbytes,
                          const char **name_out, errbuf *err) {
    const char *name = graph_unique_name(g, hint);
    Onnx__TensorProto *t =
        name ? graph_tensor_new(g->model, name, elem, dims, rank, data, nbytes) : NULL;
    if (!t) return err_set(err, TILEOPT_NOMEM, "out of memory");
    return add_initializer(g, t, name_out, err);
}

int graph_add_initializer_owned(graph *g, const char *hint, int32_t elem,
                                const int64_t *dims, size_t rank, const void *data,
                                size_t nbytes, void *owner, void (*release)(void *owner),
                                const char **name_out, errbuf *err) {
    graph_model *m = g->model;
    if (elem == DT_STRING) {
        release(owner);
        return err_set(err, TILEOPT_MISUSE, "a STRING initializer holds its own copy");
    }
    graph_owned *o = malloc(sizeof *o);
    const char *name = o ? graph_unique_name(g, hint) : NULL;
    Onnx__TensorProto *t = name ? graph_tensor_new(m, name, elem, dims, rank, NULL, 0) : NULL;
    if (!t) {
        free(o);
        release(owner);
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    /* from here t points into data: the model holds owner whatever happens next */
    *o = (graph_owned){owner, release, m->owned};
    m->owned = o;
    t->raw_data.data = (uint8_t *)(uintptr_t)data;
    t->raw_data.len = nbytes;
    return add_initializer(g, t, name_out, err);
}

/* ------------------------------------------------------------- rewiring */

int graph_replace_uses(graph *g, const char *from, const char *to) {
    graph_value *v = graph_find(g, from);
    if (!v || strcmp(from, to) == 0) return TILEOPT_OK;
    char *to_copy = graph_strdup(g, to);
    if (!to_copy) return TILEOPT_NOMEM;
    /* Take the uses out first: re-linking below appends to other entries. */
    uint32_t n = v->n_uses;
    graph_use *uses = malloc((n ? n : 1) * sizeof *uses);
    if (!uses) return TILEOPT_NOMEM;
    if (n) memcpy(uses, v->uses, n * sizeof *uses); /* uses is NULL when n == 0 (UBSan) */
    int rc = TILEOPT_OK;
    for (uint32_t k = 0; !rc && k < n; k++) {
        graph_use u = uses[k];
        if (u.node < 0 || g->removed[u.node]) continue;
        if (u.input >= 0) {
            rc = graph_node_set_input(g, u.node, (size_t)u.input, to_copy);
            continue;
        }
        v = graph_find(g, from);
        drop_use(v, u.node, -1);
        for (graph *s = g->subgraphs[u.node]; !rc && s; s = s->next_sibling) {
            rc = graph_replace_uses(s, from, to_copy);
            /* A subgraph output that names the outer value directly. */
            for (size_t o = 0; !rc && o < s->pb->n_output; o++)
                if (s->pb->output[o]->name && strcmp(s->pb->output[o]->name, from) == 0) {
                    s->pb->output[o]->name = to_copy;
                    if (!graph_link_use(s, to_copy, -1, -1)) rc = TILEOPT_INVALID;
                }
        }
    }
    free(uses);
    return rc;
}

void graph_remove_node(graph *g, int32_t node) {
    if (g->removed[node]) return;
    Onnx__NodeProto *n = g->pb->node[node];
    g->removed[node] = true;
    g->n_removed++;
    g->model->nodes_removed++;
    for (size_t k = 0; k < n->n_input; k++) {
        graph_value *v = graph_node_in(g, node, k);
        if (v) drop_use(v, node, (int32_t)k);
    }
    for (size_t k = 0; k < n->n_output; k++) {
        graph_value *v = graph_node_out(g, node, k);
        if (v && v->producer == node) v->producer = -1;
    }
    /* Implicit uses that this node's subgraphs made of enclosing values. */
    for (graph *s = g->subgraphs[node]; s; s = s->next_sibling)
        for (uint32_t i = 0; i < s->n_values; i++)
            if (s->values[i].outer >= 0 && s->values[i].outer_graph == g)
                drop_use(&g->values[s->values[i].outer], node, -1);
}

/* -------------------------------------------------------------- commit */

static bool node_dead(graph *g, int32_t i) {
    const Onnx__NodeProto *n = g->pb->node[i];
    if (g->removed[i] || n->n_output == 0) return false;
    for (size_t k = 0; k < n->n_output; k++) {
        if (!n->output[k][0]) continue;
        graph_value *v = graph_node_out(g, i, k);
        if (!v || v->n_uses || v->output >= 0) return false;
    }
    return true;
}

/* Remove nodes whose outputs nobody reads, following chains back. */
static int dead_code(graph *g) {
    uint32_t n = graph_n_nodes(g), top = 0;
    int32_t *stack = malloc((n ? n : 1) * sizeof *stack);
    if (!stack) return TILEOPT_NOMEM;
    /* pushed first to last, so removal runs last to first: a constant many
    ** nodes read loses its last use each time, which drop_use finds at once */
    for (uint32_t i = 0; i < n; i++)
        if (node_dead(g, (int32_t)i)) stack[top++] = (int32_t)i;
    while (top) {
        int32_t i = stack[--top];
        if (!node_dead(g, i)) continue;
        graph_remove_node(g, i);
        const Onnx__NodeProto *nd = g->pb->node[i];
        for (size_t k = 0; k < nd->n_input; k++) {
            graph_value *v = graph_node_in(g, i, k);
            /* Each node is pushed at most once per removed consumer slot, and a
            ** removed consumer never comes back: the stack stays within n. */
            if (v && v->producer >= 0 && top < n && node_dead(g, v->producer))
                stack[top++] = v->producer;
        }
    }
    free(stack);
    return TILEOPT_OK;
}

/* value_info describes values that still exist after the sweep. */
static bool value_exists(graph *g, const char *name) {
    graph_value *v = graph_find(g, name);
    return v && (graph_value_defined(v) || v->outer >= 0);
}

/* Sweeps and sorts g and its subgraphs, innermost first, without reindexing:
** each reindex covers the whole subtree below it, so reindexing at every level
** would cost the square of the nesting depth. The caller reindexes once. Between
** the two, a parent still counts the outer-scope reads of removed subgraph nodes
** as uses, so a sweep may keep a value one commit longer, never drop a live one.
** *dirty is set when anything moved or went: otherwise the index still holds
** and the caller need not rebuild it (a pass that changed nothing pays only for
** the sweep's scan and the sort). */
static int commit_tree(graph *g, bool *dirty, errbuf *err) {
    for (uint32_t i = 0; i < graph_n_nodes(g); i++)
        for (graph *s = g->subgraphs[i]; s; s = s->next_sibling)
            if (!g->removed[i]) {
                int rc = commit_tree(s, dirty, err);
                if (rc) return rc;
            }
    if (dead_code(g)) return err_set(err, TILEOPT_NOMEM, "out of memory");
    uint32_t n = graph_n_nodes(g), live = 0;
    int32_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return err_set(err, TILEOPT_NOMEM, "out of memory");
    int rc = graph_toposort(g, order, &live, err);
    if (rc) {
        free(order);
        return rc;
    }
    /* nothing removed, nothing added since the index was built, in order */
    bool same = live == n && !g->n_removed && n == g->n_indexed;
    for (uint32_t k = 0; same && k < live; k++) same = order[k] == (int32_t)k;
    if (!same) {
        Onnx__NodeProto **sorted =
            arena_alloc(g->model->arena, (live ? live : 1) * sizeof *sorted);
        if (!sorted) {
            free(order);
            return err_set(err, TILEOPT_NOMEM, "out of memory");
        }
        for (uint32_t k = 0; k < live; k++) sorted[k] = g->pb->node[order[k]];
        g->pb->node = sorted;
        g->pb->n_node = live;
        g->node_array_owned = false;
        g->cap_nodes = 0;
    }
    free(order);
    size_t n_init = g->pb->n_initializer, n_vi = g->pb->n_value_info;

    /* Initializers nobody reads go, unless the graph exposes them as inputs.
    ** Below IR 4 the main graph had to list every initializer as an input,
    ** and runtimes take them as constants: that listing goes with them. */
    bool listed = !g->parent && g->model->pb->ir_version < 4;
    size_t k = 0, n_in = g->pb->n_input;
    for (size_t i = 0; i < g->pb->n_initializer; i++) {
        Onnx__TensorProto *t = g->pb->initializer[i];
        graph_value *v = graph_find(g, t->name ? t->name : "");
        if (v && !v->n_uses && (v->input < 0 || listed) && v->output < 0) {
            if (v->input >= 0) g->pb->input[v->input] = NULL;
            v->initializer = -1; /* gone: its value_info goes below too */
            v->input = -1;
            continue;
        }
        g->pb->initializer[k++] = t;
    }
    g->pb->n_initializer = k;
    k = 0;
    for (size_t i = 0; i < g->pb->n_input; i++)
        if (g->pb->input[i]) g->pb->input[k++] = g->pb->input[i];
    g->pb->n_input = k;
    k = 0;
    for (size_t i = 0; i < g->pb->n_value_info; i++) {
        Onnx__ValueInfoProto *vi = g->pb->value_info[i];
        if (vi->name && value_exists(g, vi->name)) g->pb->value_info[k++] = vi;
    }
    g->pb->n_value_info = k;
    if (!same || g->pb->n_initializer != n_init || k != n_vi || g->pb->n_input != n_in)
        *dirty = true;
    return TILEOPT_OK;
}

int graph_commit(graph *g, errbuf *err) {
    bool dirty = false;
    int rc = commit_tree(g, &dirty, err);
    return rc || !dirty ? rc : graph_reindex(g, err);
}

/* ------------------------------------------------------------------ opsets */

int graph_set_opset(graph_model *m, const char *domain, int64_t version, errbuf *err) {
    bool dflt = graph_domain_is_default(domain);
    size_t at = m->default_opset_at;
    if (dflt && at < m->pb->n_opset_import && graph_domain_is_default(m->pb->opset_import[at]->domain)) {
        m->pb->opset_import[at]->has_version = 1;
        m->pb->opset_import[at]->version = version;
        return TILEOPT_OK;
    }
    for (size_t i = 0; i < m->pb->n_opset_import; i++) {
        Onnx__OperatorSetIdProto *o = m->pb->opset_import[i];
        const char *d = o->domain ? o->domain : "";
        if (dflt ? graph_domain_is_default(d) : strcmp(d, domain) == 0) {
            o->has_version = 1;
            o->version = version;
            return TILEOPT_OK;
        }
    }
    Onnx__OperatorSetIdProto *o = arena_alloc(m->arena, sizeof *o);
    if (!o) return err_set(err, TILEOPT_NOMEM, "out of memory");
    onnx__operator_set_id_proto__init(o);
    o->domain = arena_strdup(m->arena, dflt ? "" : domain);
    o->has_version = 1;
    o->version = version;
    size_t cap = m->pb->n_opset_import;
    if (!o->domain || push(m->arena, (void ***)&m->pb->opset_import, &m->pb->n_opset_import,
                           &cap, o))
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    if (dflt) m->default_opset_at = m->pb->n_opset_import - 1;
    return TILEOPT_OK;
}

/* ------------------------------------------------------ fixed input shapes */

/* Every dim declared as dim_param sym, in g's inputs, outputs and value_info and
** those of its subgraphs, becomes the value v: a named dim means one size
** throughout the model. */
static void bind_dim_param(graph *g, const char *sym, int64_t v) {
    Onnx__ValueInfoProto **lists[3] = {g->pb->input, g->pb->output, g->pb->value_info};
    size_t counts[3] = {g->pb->n_input, g->pb->n_output, g->pb->n_value_info};
    for (size_t l = 0; l < 3; l++)
        for (size_t i = 0; i < counts[l]; i++) {
            const Onnx__TypeProto *tp = lists[l][i]->type;
            if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
                !tp->tensor_type || !tp->tensor_type->shape)
                continue;
            Onnx__TensorShapeProto *sp = tp->tensor_type->shape;
            for (size_t k = 0; k < sp->n_dim; k++) {
                Onnx__TensorShapeProto__Dimension *d = sp->dim[k];
                if (!d || d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM ||
                    !d->dim_param || strcmp(d->dim_param, sym) != 0)
                    continue;
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d->dim_value = v;
            }
        }
    for (uint32_t n = 0; n < graph_n_nodes(g); n++)
        for (graph *s = graph_node_subgraphs(g, (int32_t)n); s; s = s->next_sibling)
            bind_dim_param(s, sym, v);
}

int graph_fix_input_shape(graph_model *m, const char *name, const int64_t *dims,
                          int32_t rank, errbuf *err) {
    graph *g = m->main;
    m->shapes_current = false; /* inference from the new dims on */
    graph_value *v = graph_find(g, name);
    if (!v || v->input < 0)
        return err_set(err, TILEOPT_MISUSE, "input shape for '%s': the model has no graph "
                       "input of that name", name);
    if (v->initializer >= 0)
        return err_set(err, TILEOPT_MISUSE, "input shape for '%s': it is an initializer, "
                       "its shape is its data's", name);
    const graph_type *t = &v->type;
    if (t->rank >= 0 && t->rank != rank)
        return err_set(err, TILEOPT_MISUSE, "input shape for '%s': %d dims given, the model "
                       "declares %d", name, (int)rank, (int)t->rank);
    for (int32_t i = 0; t->rank >= 0 && i < rank; i++) {
        if (t->dims && t->dims[i] >= 0 && t->dims[i] != dims[i])
            return err_set(err, TILEOPT_MISUSE, "input shape for '%s': dim %d is %" PRId64
                           " in the model, %" PRId64 " given", name, (int)i, t->dims[i],
                           dims[i]);
        for (int32_t j = 0; j < i; j++)
            if (t->syms && t->syms[i] && t->syms[j] && strcmp(t->syms[i], t->syms[j]) == 0 &&
                dims[i] != dims[j])
                return err_set(err, TILEOPT_MISUSE, "input shape for '%s': dims %d and %d "
                               "are both '%s' in the model, %" PRId64 " and %" PRId64
                               " given", name, (int)j, (int)i, t->syms[i], dims[j], dims[i]);
    }
    /* named dims first: they bind every use of the name, this input's included */
    for (int32_t i = 0; t->rank >= 0 && t->syms && i < rank; i++)
        if (t->syms[i]) bind_dim_param(g, t->syms[i], dims[i]);
    graph_type fixed = {t->elem, rank, (int64_t *)dims, NULL};
    Onnx__ValueInfoProto *vi = g->pb->input[v->input];
    if (graph_value_info_refine(m, vi, &fixed))
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    return graph_model_reindex(m, err);
}

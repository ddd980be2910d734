/*
** What a pass changed in the model that its actions do not name. Passes report
** the nodes they rewrite; graph_commit then also sweeps dead nodes, initializers
** nobody reads and value_info of values that are gone, and the upgrade pass
** moves the opset and IR version and may take initializers out of the graph
** inputs. A snapshot taken before the pass and compared after it names all of
** that in the pass's report entry, so no difference between input and output
** goes unreported, whichever code made it.
**
** Identity: graphs by their GraphProto, nodes by their NodeProto (the arena
** never reuses memory while the model lives), initializers, graph inputs and
** value_info by name within their graph. Graphs that appear during the pass
** (clones) are new; graphs that disappear went with a node that is reported.
** One hash table over all of it keeps the comparison linear in the model.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"

enum { K_GRAPH, K_NODE, K_INIT, K_INPUT, K_VI, K_COUNT };
enum { SEEN_BEFORE = 1, SEEN_AFTER = 2 };

/* Report keys of the removed (and added) names, per kind. */
static const struct {
    const char *removed, *added;
} kind_keys[K_COUNT] = {
    [K_GRAPH] = {NULL, NULL},
    [K_NODE] = {NULL, NULL},
    [K_INIT] = {"initializers_removed", "initializers_added"},
    [K_INPUT] = {"inputs_removed", "inputs_added"},
    [K_VI] = {"value_info_removed", NULL},
};

typedef struct slot {
    const void *ptr;         /* GraphProto (names), or the NodeProto/GraphProto itself */
    const char *name;        /* NULL for nodes and graphs */
    uint32_t hash;
    uint8_t kind, seen;      /* kind + 1; 0 = empty */
} slot;

/* One graph as it was: its place, to name it in the report. */
typedef struct snap_graph {
    const Onnx__GraphProto *pb;
    int32_t parent;          /* index in graphs, -1 for the main graph */
    const char *parent_name; /* the holding node's name, or NULL */
    uint32_t parent_index;   /* its index then, for "#index" */
    char *path;              /* built on first use */
} snap_graph;

/* One thing as it was, in model order. */
typedef struct item {
    uint8_t kind;
    uint32_t graph;
    const void *node;        /* K_NODE */
    const char *name;        /* K_INIT, K_INPUT, K_VI; the node's name for K_NODE */
    const char *op;          /* K_NODE */
    uint32_t index;          /* K_NODE: index in its graph then */
} item;

struct pass_snapshot {
    slot *slots;
    uint32_t cap, used;
    snap_graph *graphs;
    uint32_t n_graphs, cap_graphs;
    item *items;
    size_t n_items, cap_items;
    int64_t ir;
    size_t n_opsets;
    const char **opset_domain;
    int64_t *opset_version;
    char **keys;             /* node keys the actions name (the table points at them) */
    size_t n_keys;
};

/* ------------------------------------------------------------ hash table */

static uint32_t hash_of(const void *ptr, const char *name, uint8_t kind) {
    uint64_t h = (uint64_t)(uintptr_t)ptr * 0x9E3779B97F4A7C15ull ^ kind;
    if (name)
        for (const char *s = name; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001B3ull;
    return (uint32_t)(h ^ (h >> 32));
}

static slot *lookup(pass_snapshot *s, const void *ptr, const char *name, uint8_t kind,
                    uint32_t h) {
    uint32_t mask = s->cap - 1;
    for (uint32_t i = h & mask;; i = (i + 1) & mask) {
        slot *e = &s->slots[i];
        if (!e->kind) return e;
        if (e->hash == h && e->kind == kind + 1 && e->ptr == ptr &&
            (e->name == name || (e->name && name && strcmp(e->name, name) == 0)))
            return e;
    }
}

static int grow(pass_snapshot *s) {
    uint32_t cap = s->cap ? s->cap * 2 : 1024;
    slot *old = s->slots;
    uint32_t old_cap = s->cap;
    s->slots = calloc(cap, sizeof *s->slots);
    if (!s->slots) {
        s->slots = old;
        return TILEOPT_NOMEM;
    }
    s->cap = cap;
    for (uint32_t i = 0; i < old_cap; i++)
        if (old[i].kind) *lookup(s, old[i].ptr, old[i].name, old[i].kind - 1, old[i].hash) = old[i];
    free(old);
    return TILEOPT_OK;
}

/* Mark (ptr, name, kind) seen; *was receives the marks it had before. */
static int mark(pass_snapshot *s, const void *ptr, const char *name, uint8_t kind,
                uint8_t seen, uint8_t *was) {
    if (s->used + 1 > s->cap / 2 && grow(s)) return TILEOPT_NOMEM;
    uint32_t h = hash_of(ptr, name, kind);
    slot *e = lookup(s, ptr, name, kind, h);
    if (!e->kind) {
        *e = (slot){ptr, name, h, (uint8_t)(kind + 1), 0};
        s->used++;
    }
    if (was) *was = e->seen;
    e->seen |= seen;
    return TILEOPT_OK;
}

static uint8_t seen_of(pass_snapshot *s, const void *ptr, const char *name, uint8_t kind) {
    slot *e = lookup(s, ptr, name, kind, hash_of(ptr, name, kind));
    return e->kind ? e->seen : 0;
}

/* ------------------------------------------------------------------ walk */

static int push_item(pass_snapshot *s, item it) {
    if (s->n_items == s->cap_items) {
        size_t cap = s->cap_items ? s->cap_items * 2 : 256;
        item *p = realloc(s->items, cap * sizeof *p);
        if (!p) return TILEOPT_NOMEM;
        s->items = p;
        s->cap_items = cap;
    }
    s->items[s->n_items++] = it;
    return TILEOPT_OK;
}

static const char *safe(const char *s) { return s ? s : ""; }

/* Before the pass: record g (at index gi) and everything below it. */
static int take_graph(pass_snapshot *s, graph *g, int32_t parent, int32_t parent_node) {
    if (s->n_graphs == s->cap_graphs) {
        uint32_t cap = s->cap_graphs ? s->cap_graphs * 2 : 8;
        snap_graph *p = realloc(s->graphs, cap * sizeof *p);
        if (!p) return TILEOPT_NOMEM;
        s->graphs = p;
        s->cap_graphs = cap;
    }
    uint32_t gi = s->n_graphs++;
    const Onnx__GraphProto *pb = g->pb;
    const Onnx__NodeProto *holder = parent >= 0 ? graph_node(g->parent, parent_node) : NULL;
    s->graphs[gi] = (snap_graph){pb, parent, holder && holder->name && holder->name[0]
                                                 ? holder->name : NULL,
                                 (uint32_t)parent_node, NULL};
    int rc = mark(s, pb, NULL, K_GRAPH, SEEN_BEFORE, NULL);
    for (size_t i = 0; !rc && i < pb->n_initializer; i++) {
        const char *n = safe(pb->initializer[i]->name);
        rc = mark(s, pb, n, K_INIT, SEEN_BEFORE, NULL);
        if (!rc) rc = push_item(s, (item){K_INIT, gi, NULL, n, NULL, 0});
    }
    for (size_t i = 0; !rc && i < pb->n_input; i++) {
        const char *n = safe(pb->input[i]->name);
        rc = mark(s, pb, n, K_INPUT, SEEN_BEFORE, NULL);
        if (!rc) rc = push_item(s, (item){K_INPUT, gi, NULL, n, NULL, 0});
    }
    for (size_t i = 0; !rc && i < pb->n_value_info; i++) {
        const char *n = safe(pb->value_info[i]->name);
        rc = mark(s, pb, n, K_VI, SEEN_BEFORE, NULL);
        if (!rc) rc = push_item(s, (item){K_VI, gi, NULL, n, NULL, 0});
    }
    for (uint32_t i = 0; !rc && i < graph_n_nodes(g); i++) {
        if (graph_node_removed(g, (int32_t)i)) continue;
        const Onnx__NodeProto *n = graph_node(g, (int32_t)i);
        rc = mark(s, n, NULL, K_NODE, SEEN_BEFORE, NULL);
        if (!rc) rc = push_item(s, (item){K_NODE, gi, n, n->name, safe(n->op_type), i});
        for (graph *sub = graph_node_subgraphs(g, (int32_t)i); !rc && sub; sub = sub->next_sibling)
            rc = take_graph(s, sub, (int32_t)gi, (int32_t)i);
    }
    return rc;
}

/* After the pass: mark what is still there. Graphs that were not there before
** are skipped with everything below them. */
static int mark_graph(pass_snapshot *s, graph *g) {
    const Onnx__GraphProto *pb = g->pb;
    if (!(seen_of(s, pb, NULL, K_GRAPH) & SEEN_BEFORE)) return TILEOPT_OK;
    int rc = mark(s, pb, NULL, K_GRAPH, SEEN_AFTER, NULL);
    for (size_t i = 0; !rc && i < pb->n_initializer; i++)
        rc = mark(s, pb, safe(pb->initializer[i]->name), K_INIT, SEEN_AFTER, NULL);
    for (size_t i = 0; !rc && i < pb->n_input; i++)
        rc = mark(s, pb, safe(pb->input[i]->name), K_INPUT, SEEN_AFTER, NULL);
    for (size_t i = 0; !rc && i < pb->n_value_info; i++)
        rc = mark(s, pb, safe(pb->value_info[i]->name), K_VI, SEEN_AFTER, NULL);
    for (uint32_t i = 0; !rc && i < graph_n_nodes(g); i++) {
        if (graph_node_removed(g, (int32_t)i)) continue;
        rc = mark(s, graph_node(g, (int32_t)i), NULL, K_NODE, SEEN_AFTER, NULL);
        for (graph *sub = graph_node_subgraphs(g, (int32_t)i); !rc && sub; sub = sub->next_sibling)
            rc = mark_graph(s, sub);
    }
    return rc;
}

int pass_snapshot_take(graph_model *m, pass_snapshot **out) {
    *out = NULL;
    pass_snapshot *s = calloc(1, sizeof *s);
    if (!s) return TILEOPT_NOMEM;
    s->ir = m->pb->ir_version;
    s->n_opsets = m->pb->n_opset_import;
    s->opset_domain = calloc(s->n_opsets ? s->n_opsets : 1, sizeof *s->opset_domain);
    s->opset_version = calloc(s->n_opsets ? s->n_opsets : 1, sizeof *s->opset_version);
    int rc = s->opset_domain && s->opset_version ? grow(s) : TILEOPT_NOMEM;
    for (size_t i = 0; !rc && i < s->n_opsets; i++) {
        s->opset_domain[i] = safe(m->pb->opset_import[i]->domain);
        s->opset_version[i] = m->pb->opset_import[i]->version;
    }
    if (!rc) rc = take_graph(s, m->main, -1, -1);
    if (rc) {
        pass_snapshot_free(s);
        return rc;
    }
    *out = s;
    return TILEOPT_OK;
}

void pass_snapshot_free(pass_snapshot *s) {
    if (!s) return;
    for (uint32_t i = 0; i < s->n_graphs; i++) free(s->graphs[i].path);
    free(s->graphs);
    free(s->items);
    free(s->slots);
    free(s->opset_domain);
    free(s->opset_version);
    for (size_t i = 0; i < s->n_keys; i++) free(s->keys[i]);
    free(s->keys);
    free(s);
}

/* ---------------------------------------------------------------- report */

/* "If_0/then_branch"-style path of graph gi as the pass found it; NULL for the
** main graph (the same text pass_action puts in "graph"). */
static const char *graph_path_of(pass_snapshot *s, uint32_t gi) {
    snap_graph *sg = &s->graphs[gi];
    if (sg->parent < 0) return NULL;
    if (sg->path) return sg->path;
    const char *up = graph_path_of(s, (uint32_t)sg->parent);
    char id[32];
    const char *name = sg->parent_name;
    if (!name) {
        snprintf(id, sizeof id, "#%u", sg->parent_index);
        name = id;
    }
    size_t len = (up ? strlen(up) + 1 : 0) + strlen(name) + 1;
    sg->path = malloc(len);
    if (sg->path) snprintf(sg->path, len, "%s%s%s", up ? up : "", up ? "/" : "", name);
    return sg->path;
}

static const char *node_id(const item *it, char *buf, size_t cap) {
    if (it->name && it->name[0]) return it->name;
    snprintf(buf, cap, "#%u", it->index);
    return buf;
}

/* A "graph path \x1f node id" key for the set of nodes the actions name. */
static char *node_key(const char *path, const char *id) {
    size_t len = (path ? strlen(path) : 0) + strlen(id) + 2;
    char *k = malloc(len);
    if (k) snprintf(k, len, "%s\x1f%s", path ? path : "", id);
    return k;
}

/* The nodes the pass's actions name (by "node", and by "tile" for the Tile a
** fused consumer no longer reads), as keys in s's table under kind K_COUNT. */
static int named_nodes(pass_snapshot *s, const cJSON *actions) {
    const cJSON *a;
    size_t n = (size_t)cJSON_GetArraySize(actions) * 2;
    s->keys = calloc(n ? n : 1, sizeof *s->keys);
    if (!s->keys) return TILEOPT_NOMEM;
    int rc = TILEOPT_OK;
    cJSON_ArrayForEach(a, actions) {
        const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "action"));
        if (!kind || strcmp(kind, "skipped") == 0) continue;
        const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "graph"));
        static const char *const keys_naming[] = {"node", "tile"};
        for (size_t j = 0; !rc && j < 2; j++) {
            const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, keys_naming[j]));
            if (!id) continue;
            char *key = node_key(path, id);
            if (!key) rc = TILEOPT_NOMEM;
            else {
                s->keys[s->n_keys++] = key;
                rc = mark(s, NULL, key, K_COUNT, SEEN_BEFORE, NULL);
            }
        }
        if (rc) break;
    }
    return rc;
}

static cJSON *name_ref(pass_snapshot *s, const item *it) {
    const char *path = graph_path_of(s, it->graph);
    if (!path) return cJSON_CreateString(it->name);
    cJSON *o = cJSON_CreateObject();
    if (o) {
        cJSON_AddStringToObject(o, "name", it->name);
        cJSON_AddStringToObject(o, "graph", path);
    }
    return o;
}

/* Append ref to changes[key] (created on first use). */
static int add_ref(cJSON *changes, const char *key, cJSON *ref) {
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(changes, key);
    if (!arr && !(arr = cJSON_AddArrayToObject(changes, key))) {
        cJSON_Delete(ref);
        return TILEOPT_NOMEM;
    }
    if (!ref || !cJSON_AddItemToArray(arr, ref)) return TILEOPT_NOMEM;
    return TILEOPT_OK;
}

static cJSON *from_to(const char *domain, int64_t from, bool has_from, int64_t to,
                      bool has_to) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    if (domain) cJSON_AddStringToObject(o, "domain", domain);
    cJSON_AddItemToObject(o, "from", has_from ? cJSON_CreateNumber((double)from) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "to", has_to ? cJSON_CreateNumber((double)to) : cJSON_CreateNull());
    return o;
}

static int opset_changes(pass_snapshot *s, graph_model *m, cJSON *changes) {
    cJSON *list = NULL;
    const Onnx__ModelProto *pb = m->pb;
    /* Domains before (changed or dropped), then domains that are new. */
    for (size_t i = 0; i < s->n_opsets + pb->n_opset_import; i++) {
        bool before = i < s->n_opsets;
        const char *d = before ? s->opset_domain[i] : safe(pb->opset_import[i - s->n_opsets]->domain);
        int64_t v = before ? s->opset_version[i] : pb->opset_import[i - s->n_opsets]->version;
        bool other = false;
        int64_t ov = 0;
        size_t n_other = before ? pb->n_opset_import : s->n_opsets;
        for (size_t k = 0; k < n_other && !other; k++) {
            const char *od = before ? safe(pb->opset_import[k]->domain) : s->opset_domain[k];
            if (strcmp(od, d) == 0) {
                other = true;
                ov = before ? pb->opset_import[k]->version : s->opset_version[k];
            }
        }
        if ((other && (!before || ov == v))) continue;
        cJSON *e = before ? from_to(d, v, true, ov, other) : from_to(d, 0, false, v, true);
        if (!e) return TILEOPT_NOMEM;
        if (!list && !(list = cJSON_AddArrayToObject(changes, "opset_import"))) {
            cJSON_Delete(e);
            return TILEOPT_NOMEM;
        }
        cJSON_AddItemToArray(list, e);
    }
    return TILEOPT_OK;
}

int pass_snapshot_report(pass_snapshot *s, pass_ctx *pc, cJSON **out) {
    *out = NULL;
    graph_model *m = pc->model;
    cJSON *changes = cJSON_CreateObject();
    if (!changes) return TILEOPT_NOMEM;
    int rc = mark_graph(s, m->main);
    if (!rc) rc = opset_changes(s, m, changes);
    if (!rc && m->pb->ir_version != s->ir) {
        cJSON *e = from_to(NULL, s->ir, true, m->pb->ir_version, true);
        if (!e || !cJSON_AddItemToObject(changes, "ir_version", e)) rc = TILEOPT_NOMEM;
    }
    /* Removed: what was there before, in a graph still there, and is gone. */
    bool keys_built = false;
    for (size_t i = 0; !rc && i < s->n_items; i++) {
        const item *it = &s->items[i];
        const snap_graph *sg = &s->graphs[it->graph];
        if (!(seen_of(s, sg->pb, NULL, K_GRAPH) & SEEN_AFTER)) continue;
        const void *ptr = it->kind == K_NODE ? it->node : (const void *)sg->pb;
        if (seen_of(s, ptr, it->kind == K_NODE ? NULL : it->name, it->kind) & SEEN_AFTER)
            continue;
        if (it->kind != K_NODE) {
            rc = add_ref(changes, kind_keys[it->kind].removed, name_ref(s, it));
            continue;
        }
        if (!keys_built) {
            rc = named_nodes(s, pc->actions);
            keys_built = true;
            if (rc) break;
        }
        char buf[32];
        const char *id = node_id(it, buf, sizeof buf);
        const char *path = graph_path_of(s, it->graph);
        char *key = node_key(path, id);
        if (!key) {
            rc = TILEOPT_NOMEM;
            break;
        }
        bool named = seen_of(s, NULL, key, K_COUNT) != 0;
        free(key);
        if (named) continue;
        /* Removed without an action of its own: graph_commit swept it because
        ** nothing read its outputs. */
        cJSON *a = cJSON_CreateObject();
        if (!a) {
            rc = TILEOPT_NOMEM;
            break;
        }
        cJSON_AddStringToObject(a, "node", id);
        cJSON_AddStringToObject(a, "op", it->op[0] ? it->op : "?");
        if (path) cJSON_AddStringToObject(a, "graph", path);
        cJSON_AddStringToObject(a, "action", "eliminated");
        cJSON_AddStringToObject(a, "rule", "outputs unused");
        cJSON_AddItemToArray(pc->actions, a);
        pc->changed = true;
    }
    /* Added: initializers and graph inputs of graphs that were there before. */
    for (uint32_t gi = 0; !rc && gi < s->n_graphs; gi++) {
        const Onnx__GraphProto *pb = s->graphs[gi].pb;
        if (!(seen_of(s, pb, NULL, K_GRAPH) & SEEN_AFTER)) continue;
        for (size_t i = 0; !rc && i < pb->n_initializer; i++) {
            item it = {K_INIT, gi, NULL, safe(pb->initializer[i]->name), NULL, 0};
            if (!(seen_of(s, pb, it.name, K_INIT) & SEEN_BEFORE))
                rc = add_ref(changes, kind_keys[K_INIT].added, name_ref(s, &it));
        }
        for (size_t i = 0; !rc && i < pb->n_input; i++) {
            item it = {K_INPUT, gi, NULL, safe(pb->input[i]->name), NULL, 0};
            if (!(seen_of(s, pb, it.name, K_INPUT) & SEEN_BEFORE))
                rc = add_ref(changes, kind_keys[K_INPUT].added, name_ref(s, &it));
        }
    }
    if (rc || !changes->child) {
        cJSON_Delete(changes);
        return rc;
    }
    pc->changed = true;
    *out = changes;
    return TILEOPT_OK;
}

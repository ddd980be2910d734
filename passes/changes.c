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
** Two hash tables sized once (names, node pointers) keep the comparison linear
** in the model. The node table is built only when the pass removed a node:
** graph_remove_node is the only way a node leaves a graph, and the model
** counts its calls.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"

enum { K_GRAPH, K_INIT, K_INPUT, K_VI, K_COUNT };
enum { SEEN_BEFORE = 1, SEEN_AFTER = 2 };

/* The lists of removed (and added) names, per kind: the report's key and the
** statistic counting its names; -1 where a kind has no such list. */
typedef struct change_list {
    const char *key;
    int stat;
} change_list;
static const struct {
    change_list removed, added;
} kind_lists[K_COUNT] = {
    [K_GRAPH] = {{NULL, -1}, {NULL, -1}},
    [K_INIT] = {{"initializers_removed", TILEOPT_PASS_INITIALIZERS_REMOVED},
                {"initializers_added", TILEOPT_PASS_INITIALIZERS_ADDED}},
    [K_INPUT] = {{"inputs_removed", TILEOPT_PASS_INPUTS_REMOVED},
                 {"inputs_added", TILEOPT_PASS_INPUTS_ADDED}},
    [K_VI] = {{"value_info_removed", TILEOPT_PASS_VALUE_INFO_REMOVED}, {NULL, -1}},
};

typedef struct slot {
    const void *ptr;         /* the GraphProto the name belongs to, or the graph itself */
    const char *name;        /* NULL for graphs */
    uint32_t hash;
    uint8_t kind, seen;      /* kind + 1; 0 = empty */
} slot;

/* One graph as it was: its place, to name it in the report, and its nodes. */
typedef struct snap_graph {
    const Onnx__GraphProto *pb;
    int32_t parent;          /* index in graphs, -1 for the main graph */
    const char *parent_name; /* the holding node's name, or NULL */
    uint32_t parent_index;   /* its index then, for "#index" */
    const char *parent_attr; /* the attribute holding the graph */
    int32_t parent_list;     /* its place in a GRAPHS attribute, or -1 */
    char *path;              /* built on first use */
    const Onnx__NodeProto **nodes; /* live nodes then, by index (NULL: removed) */
    uint32_t n_nodes;
    bool alive;              /* still in the model after the pass */
} snap_graph;

/* One initializer, graph input or value_info name as it was, in model order. */
typedef struct item {
    uint8_t kind;
    uint32_t graph;
    const char *name;
} item;

struct pass_snapshot {
    slot *slots;             /* names (and graphs), open addressing */
    uint32_t cap, used;
    uintptr_t *node_set;     /* NodeProto pointers, open addressing; bit 0: seen after */
    uint32_t node_cap;
    snap_graph *graphs;
    uint32_t n_graphs, cap_graphs;
    item *items;
    size_t n_items, cap_items;
    size_t n_nodes;
    uint64_t nodes_removed;  /* the model's count when the snapshot was taken */
    int64_t ir;
    size_t n_opsets;
    const char **opset_domain;
    int64_t *opset_version;
};

/* ----------------------------------------------------------- hash tables */

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

/* A power of two at least twice n (and 64). */
static uint32_t table_cap(size_t n) {
    uint32_t cap = 64;
    while (cap < 2 * n && cap < (1u << 31)) cap *= 2;
    return cap;
}

static int grow(pass_snapshot *s, size_t want) {
    uint32_t cap = table_cap(want);
    if (cap <= s->cap) cap = s->cap * 2;
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

/* Mark (ptr, name, kind) seen. */
static int mark(pass_snapshot *s, const void *ptr, const char *name, uint8_t kind,
                uint8_t seen) {
    if (s->used + 1 > s->cap / 2 && grow(s, (size_t)s->used + 1)) return TILEOPT_NOMEM;
    uint32_t h = hash_of(ptr, name, kind);
    slot *e = lookup(s, ptr, name, kind, h);
    if (!e->kind) {
        *e = (slot){ptr, name, h, (uint8_t)(kind + 1), 0};
        s->used++;
    }
    e->seen |= seen;
    return TILEOPT_OK;
}

static uint8_t seen_of(pass_snapshot *s, const void *ptr, const char *name, uint8_t kind) {
    slot *e = lookup(s, ptr, name, kind, hash_of(ptr, name, kind));
    return e->kind ? e->seen : 0;
}

/* The node set's slot for n (empty or holding n). */
/* The first slot to look at for node n. */
static uint32_t node_home(const pass_snapshot *s, const Onnx__NodeProto *n) {
    return (uint32_t)(((uint64_t)(uintptr_t)n * 0x9E3779B97F4A7C15ull) >> 32) & (s->node_cap - 1);
}

static uintptr_t *node_slot(pass_snapshot *s, const Onnx__NodeProto *n) {
    uint32_t mask = s->node_cap - 1;
    for (uint32_t i = node_home(s, n);; i = (i + 1) & mask) {
        uintptr_t e = s->node_set[i];
        if (!e || (e & ~(uintptr_t)1) == (uintptr_t)n) return &s->node_set[i];
    }
}

/* Both tables are far bigger than the caches on big models: asking for the
** slot of the entry a few ahead lets the misses overlap (a hint to the
** processor that changes nothing). */
#define AHEAD 8

static void prefetch_name(const pass_snapshot *s, const void *ptr, const char *name,
                          uint8_t kind) {
    if (s->cap) __builtin_prefetch(&s->slots[hash_of(ptr, name, kind) & (s->cap - 1)]);
}

static void prefetch_node(const pass_snapshot *s, const Onnx__NodeProto *n) {
    if (n && s->node_set) __builtin_prefetch(&s->node_set[node_home(s, n)]);
}

/* ------------------------------------------------------------------ walk */

static const char *safe(const char *s) { return s ? s : ""; }

static int push_name(pass_snapshot *s, uint8_t kind, uint32_t gi, const char *name) {
    if (s->n_items == s->cap_items) {
        size_t cap = s->cap_items ? s->cap_items * 2 : 256;
        item *p = realloc(s->items, cap * sizeof *p);
        if (!p) return TILEOPT_NOMEM;
        s->items = p;
        s->cap_items = cap;
    }
    s->items[s->n_items++] = (item){kind, gi, safe(name)};
    return TILEOPT_OK;
}

/* Before the pass: record g and everything below it. */
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
    uint32_t nn = graph_n_nodes(g);
    s->graphs[gi] = (snap_graph){pb, parent,
                                 holder && holder->name && holder->name[0] ? holder->name : NULL,
                                 (uint32_t)parent_node, g->parent_attr, g->parent_list,
                                 NULL, NULL, nn, false};
    const Onnx__NodeProto **nodes = malloc((nn ? nn : 1) * sizeof *nodes);
    if (!nodes) return TILEOPT_NOMEM;
    s->graphs[gi].nodes = nodes;
    int rc = TILEOPT_OK;
    for (size_t i = 0; !rc && i < pb->n_initializer; i++)
        rc = push_name(s, K_INIT, gi, pb->initializer[i]->name);
    for (size_t i = 0; !rc && i < pb->n_input; i++)
        rc = push_name(s, K_INPUT, gi, pb->input[i]->name);
    for (size_t i = 0; !rc && i < pb->n_value_info; i++)
        rc = push_name(s, K_VI, gi, pb->value_info[i]->name);
    for (uint32_t i = 0; !rc && i < nn; i++) {
        bool removed = graph_node_removed(g, (int32_t)i);
        nodes[i] = removed ? NULL : graph_node(g, (int32_t)i);
        if (removed) continue;
        s->n_nodes++;
        for (graph *sub = graph_node_subgraphs(g, (int32_t)i); !rc && sub; sub = sub->next_sibling)
            rc = take_graph(s, sub, (int32_t)gi, (int32_t)i);
    }
    return rc;
}

/* After the pass: mark what is still there. Graphs that were not there before
** are skipped with everything below them. */
static int mark_graph(pass_snapshot *s, graph *g) {
    const Onnx__GraphProto *pb = g->pb;
    slot *e = lookup(s, pb, NULL, K_GRAPH, hash_of(pb, NULL, K_GRAPH));
    if (!e->kind) return TILEOPT_OK;
    e->seen |= SEEN_AFTER;
    int rc = TILEOPT_OK;
    for (size_t i = 0; !rc && i < pb->n_initializer; i++) {
        if (i + AHEAD < pb->n_initializer)
            prefetch_name(s, pb, safe(pb->initializer[i + AHEAD]->name), K_INIT);
        rc = mark(s, pb, safe(pb->initializer[i]->name), K_INIT, SEEN_AFTER);
    }
    for (size_t i = 0; !rc && i < pb->n_input; i++)
        rc = mark(s, pb, safe(pb->input[i]->name), K_INPUT, SEEN_AFTER);
    for (size_t i = 0; !rc && i < pb->n_value_info; i++)
        rc = mark(s, pb, safe(pb->value_info[i]->name), K_VI, SEEN_AFTER);
    for (uint32_t i = 0; !rc && i < graph_n_nodes(g); i++) {
        if (graph_node_removed(g, (int32_t)i)) continue;
        if (i + AHEAD < graph_n_nodes(g)) prefetch_node(s, graph_node(g, (int32_t)(i + AHEAD)));
        if (s->node_set) {
            uintptr_t *ns = node_slot(s, graph_node(g, (int32_t)i));
            if (*ns) *ns |= 1;
        }
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
    int rc = s->opset_domain && s->opset_version ? TILEOPT_OK : TILEOPT_NOMEM;
    for (size_t i = 0; !rc && i < s->n_opsets; i++) {
        s->opset_domain[i] = safe(m->pb->opset_import[i]->domain);
        s->opset_version[i] = m->pb->opset_import[i]->version;
    }
    s->nodes_removed = m->nodes_removed;
    if (!rc) rc = take_graph(s, m->main, -1, -1);
    /* The name table sized once, now that the counts are known. */
    if (!rc) rc = grow(s, s->n_items + s->n_graphs);
    for (uint32_t gi = 0; !rc && gi < s->n_graphs; gi++)
        rc = mark(s, s->graphs[gi].pb, NULL, K_GRAPH, SEEN_BEFORE);
    for (size_t i = 0; !rc && i < s->n_items; i++) {
        const item *ahead = i + AHEAD < s->n_items ? &s->items[i + AHEAD] : NULL;
        if (ahead) prefetch_name(s, s->graphs[ahead->graph].pb, ahead->name, ahead->kind);
        rc = mark(s, s->graphs[s->items[i].graph].pb, s->items[i].name, s->items[i].kind,
                  SEEN_BEFORE);
    }
    if (rc) {
        pass_snapshot_free(s);
        return rc;
    }
    *out = s;
    return TILEOPT_OK;
}

void pass_snapshot_free(pass_snapshot *s) {
    if (!s) return;
    for (uint32_t i = 0; i < s->n_graphs; i++) {
        free(s->graphs[i].path);
        free(s->graphs[i].nodes);
    }
    free(s->graphs);
    free(s->items);
    free(s->slots);
    free(s->node_set);
    free(s->opset_domain);
    free(s->opset_version);
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
    size_t used = up ? strlen(up) : 0;
    /* two slashes, "[place]" of a GRAPHS attribute (at most 13 bytes), the NUL */
    size_t len = used + strlen(name) + strlen(sg->parent_attr ? sg->parent_attr : "") + 20;
    sg->path = malloc(len);
    if (!sg->path) return NULL;
    memcpy(sg->path, up ? up : "", used + 1);
    graph_path_step(sg->path, len, used, name, sg->parent_attr, sg->parent_list);
    return sg->path;
}

static const char *node_id(const Onnx__NodeProto *n, uint32_t index, char *buf, size_t cap) {
    if (n->name && n->name[0]) return n->name;
    snprintf(buf, cap, "#%u", index);
    return buf;
}

/* The names of one list, in the order found; the graph paths they need are
** the snapshot's, so the text is written before the snapshot goes. */
typedef struct found_list {
    const change_list *list;
    item *v;
    size_t n, cap;
} found_list;

/* The lists found so far, in the order each was first met (the report's). */
typedef struct found {
    found_list lists[2 * K_COUNT];
    size_t n;
} found;

static int add_ref(found *f, const change_list *list, const item *it) {
    found_list *l = NULL;
    for (size_t i = 0; i < f->n && !l; i++)
        if (f->lists[i].list == list) l = &f->lists[i];
    if (!l) {
        l = &f->lists[f->n++];
        *l = (found_list){list, NULL, 0, 0};
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        item *v = realloc(l->v, cap * sizeof *v);
        if (!v) return TILEOPT_NOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *it;
    return TILEOPT_OK;
}

static void found_free(found *f) {
    for (size_t i = 0; i < f->n; i++) free(f->lists[i].v);
}

/* A name of the main graph as a string, of a subgraph as {name, graph}. */
static void write_ref(pass_snapshot *s, json_w *w, const item *it) {
    const char *path = graph_path_of(s, it->graph);
    if (!path) {
        json_str(w, it->name);
        return;
    }
    json_object(w);
    json_put_str(w, "name", it->name);
    json_put_str(w, "graph", path);
    json_end(w);
}

static void from_to(json_w *w, const char *domain, int64_t from, bool has_from, int64_t to,
                    bool has_to) {
    json_object(w);
    if (domain) json_put_str(w, "domain", domain);
    json_key(w, "from");
    if (has_from) json_num(w, (double)from);
    else json_null(w);
    json_key(w, "to");
    if (has_to) json_num(w, (double)to);
    else json_null(w);
    json_end(w);
}

/* Index + 1 of domain d in a table of cap slots (a power of two) over the n
** domains dom(i), 0 when absent. */
typedef const char *(*domain_at)(const void *list, size_t i);
static size_t domain_find(const uint32_t *table, uint32_t cap, const void *list, domain_at dom,
                          const char *d) {
    for (uint32_t i = graph_name_hash(d) & (cap - 1); table[i]; i = (i + 1) & (cap - 1))
        if (strcmp(dom(list, table[i] - 1), d) == 0) return table[i];
    return 0;
}

static const char *snap_domain(const void *list, size_t i) {
    return ((const pass_snapshot *)list)->opset_domain[i];
}
static const char *model_domain(const void *list, size_t i) {
    return safe(((const Onnx__ModelProto *)list)->opset_import[i]->domain);
}

/* One hash table per side, so that a model importing 100,000 domains costs
** linear time (a scan of one list per entry of the other took minutes). */
static int opset_changes(pass_snapshot *s, graph_model *m, json_w *w) {
    const Onnx__ModelProto *pb = m->pb;
    bool same = s->n_opsets == pb->n_opset_import;
    for (size_t i = 0; same && i < s->n_opsets; i++)
        same = s->opset_version[i] == pb->opset_import[i]->version &&
               strcmp(s->opset_domain[i], model_domain(pb, i)) == 0;
    if (same) return TILEOPT_OK;
    uint32_t cap_b = table_cap(s->n_opsets), cap_a = table_cap(pb->n_opset_import);
    uint32_t *tb = calloc(cap_b, sizeof *tb), *ta = calloc(cap_a, sizeof *ta);
    if (!tb || !ta) {
        free(tb);
        free(ta);
        return TILEOPT_NOMEM;
    }
    /* the first entry of a domain listed twice is the one compared */
    for (size_t i = s->n_opsets; i-- > 0;) {
        uint32_t k = graph_name_hash(s->opset_domain[i]) & (cap_b - 1);
        while (tb[k] && strcmp(s->opset_domain[tb[k] - 1], s->opset_domain[i]) != 0)
            k = (k + 1) & (cap_b - 1);
        tb[k] = (uint32_t)i + 1;
    }
    for (size_t i = pb->n_opset_import; i-- > 0;) {
        const char *d = model_domain(pb, i);
        uint32_t k = graph_name_hash(d) & (cap_a - 1);
        while (ta[k] && strcmp(model_domain(pb, ta[k] - 1), d) != 0) k = (k + 1) & (cap_a - 1);
        ta[k] = (uint32_t)i + 1;
    }
    bool listed = false;
    /* Domains before (changed or dropped), then domains that are new. */
    for (size_t i = 0; i < s->n_opsets + pb->n_opset_import; i++) {
        bool before = i < s->n_opsets;
        const char *d = before ? s->opset_domain[i] : model_domain(pb, i - s->n_opsets);
        int64_t v = before ? s->opset_version[i] : pb->opset_import[i - s->n_opsets]->version;
        size_t k = before ? domain_find(ta, cap_a, pb, model_domain, d)
                          : domain_find(tb, cap_b, s, snap_domain, d);
        bool other = k != 0;
        int64_t ov = !other ? 0 : before ? pb->opset_import[k - 1]->version
                                         : s->opset_version[k - 1];
        if ((other && (!before || ov == v))) continue;
        if (!listed) {
            json_key(w, "opset_import");
            json_array(w);
            listed = true;
        }
        if (before) from_to(w, d, v, true, ov, other);
        else from_to(w, d, 0, false, v, true);
    }
    if (listed) json_end(w);
    free(tb);
    free(ta);
    return TILEOPT_OK;
}

/* A node gone without an action naming it: graph_commit swept it because
** nothing read its outputs. */
static void swept_node(pass_snapshot *s, pass_ctx *pc, uint32_t gi, uint32_t i) {
    const Onnx__NodeProto *n = s->graphs[gi].nodes[i];
    char buf[32];
    const char *id = node_id(n, i, buf, sizeof buf);
    const char *path = graph_path_of(s, gi);
    if (pass_log_names(pc->log, path, id)) return;
    json_w *a = pass_log_begin(pc->log, id, n->op_type && n->op_type[0] ? n->op_type : "?",
                               path, "eliminated");
    json_put_str(a, "rule", "outputs unused");
    pc->changed = true;
}

/* The nodes as they were, in a set that marking after the pass fills: built
** only when some node was removed, since no node leaves a graph otherwise. */
static int node_set_build(pass_snapshot *s) {
    s->node_cap = table_cap(s->n_nodes);
    s->node_set = calloc(s->node_cap, sizeof *s->node_set);
    if (!s->node_set) return TILEOPT_NOMEM;
    for (uint32_t gi = 0; gi < s->n_graphs; gi++) {
        const snap_graph *sg = &s->graphs[gi];
        for (uint32_t i = 0; i < sg->n_nodes; i++) {
            if (i + AHEAD < sg->n_nodes) prefetch_node(s, sg->nodes[i + AHEAD]);
            if (sg->nodes[i]) *node_slot(s, sg->nodes[i]) = (uintptr_t)sg->nodes[i];
        }
    }
    return TILEOPT_OK;
}

/* Where the "changes" object sits in the report: in a pass entry, in the
** passes array, in the report. */
#define CHANGES_DEPTH 2

int pass_snapshot_report(pass_snapshot *s, pass_ctx *pc, char **json, uint64_t *stat) {
    *json = NULL;
    graph_model *m = pc->model;
    pass_text t = {0};
    json_w w;
    json_init(&w, &t, true, CHANGES_DEPTH);
    json_object(&w);
    found f = {.n = 0};
    int rc = m->nodes_removed != s->nodes_removed ? node_set_build(s) : TILEOPT_OK;
    if (!rc) rc = mark_graph(s, m->main);
    for (uint32_t gi = 0; gi < s->n_graphs; gi++)
        s->graphs[gi].alive = seen_of(s, s->graphs[gi].pb, NULL, K_GRAPH) & SEEN_AFTER;
    if (!rc) rc = opset_changes(s, m, &w);
    if (!rc && m->pb->ir_version != s->ir) {
        json_key(&w, "ir_version");
        from_to(&w, NULL, s->ir, true, m->pb->ir_version, true);
    }
    /* Removed: what was there before, in a graph still there, and is gone. */
    for (size_t i = 0; !rc && i < s->n_items; i++) {
        const item *it = &s->items[i];
        const snap_graph *sg = &s->graphs[it->graph];
        const item *ahead = i + AHEAD < s->n_items ? &s->items[i + AHEAD] : NULL;
        if (ahead) prefetch_name(s, s->graphs[ahead->graph].pb, ahead->name, ahead->kind);
        if (sg->alive && !(seen_of(s, sg->pb, it->name, it->kind) & SEEN_AFTER))
            rc = add_ref(&f, &kind_lists[it->kind].removed, it);
    }
    for (uint32_t gi = 0; !rc && s->node_set && gi < s->n_graphs; gi++) {
        const snap_graph *sg = &s->graphs[gi];
        for (uint32_t i = 0; !rc && sg->alive && i < sg->n_nodes; i++) {
            if (i + AHEAD < sg->n_nodes) prefetch_node(s, sg->nodes[i + AHEAD]);
            if (sg->nodes[i] && !(*node_slot(s, sg->nodes[i]) & 1)) swept_node(s, pc, gi, i);
        }
    }
    /* Added: initializers and graph inputs of graphs that were there before. */
    for (uint32_t gi = 0; !rc && gi < s->n_graphs; gi++) {
        const Onnx__GraphProto *pb = s->graphs[gi].pb;
        if (!s->graphs[gi].alive) continue;
        for (size_t i = 0; !rc && i < pb->n_initializer; i++) {
            if (i + AHEAD < pb->n_initializer)
                prefetch_name(s, pb, safe(pb->initializer[i + AHEAD]->name), K_INIT);
            item it = {K_INIT, gi, safe(pb->initializer[i]->name)};
            if (!(seen_of(s, pb, it.name, K_INIT) & SEEN_BEFORE))
                rc = add_ref(&f, &kind_lists[K_INIT].added, &it);
        }
        for (size_t i = 0; !rc && i < pb->n_input; i++) {
            item it = {K_INPUT, gi, safe(pb->input[i]->name)};
            if (!(seen_of(s, pb, it.name, K_INPUT) & SEEN_BEFORE))
                rc = add_ref(&f, &kind_lists[K_INPUT].added, &it);
        }
    }
    for (size_t l = 0; !rc && l < f.n; l++) {
        const found_list *fl = &f.lists[l];
        stat[fl->list->stat] = fl->n;
        json_key(&w, fl->list->key);
        json_array(&w);
        for (size_t i = 0; i < fl->n; i++) write_ref(s, &w, &fl->v[i]);
        json_end(&w);
    }
    found_free(&f);
    bool any = w.count[0] != 0;
    json_end(&w);
    pass_text_put(&t, "", 1);
    if (!rc && t.failed) rc = TILEOPT_NOMEM;
    if (rc || !any) {
        free(t.p);
        return rc;
    }
    pc->changed = true;
    *json = t.p;
    return TILEOPT_OK;
}

/* The drawings of the page (api/html.h): a region's nodes and their one-hop
** neighbourhood on each side, laid out as a layered graph and written as SVG or
** as a record for the page's script. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/html.h"

/* ------------------------------------------------------------------ text */

/* Walk s as UTF-8, up to max bytes: runs of characters that need nothing go
** out as they are; each byte `special` names, each byte that is no character
** and each control character goes to put alone (c NULL for the last two). */
typedef void (*char_fn)(pass_text *t, const unsigned char *c);

static void each_char(pass_text *t, const char *s, size_t max, const bool special[128],
                      char_fn put) {
    if (!s) return;
    const unsigned char *p = (const unsigned char *)s;
    size_t len = strlen(s), used = 0, run = 0;
    while (used < len) {
        unsigned char b = p[used];
        size_t k = b < 0x80 ? 1 : graph_utf8_len(p + used, len - used);
        if (used + (k ? k : 1) > max) {
            pass_text_put(t, (const char *)p + run, used - run);
            pass_text_str(t, "\xe2\x80\xa6"); /* … */
            return;
        }
        if (k > 1 || (k == 1 && b >= 0x20 && b != 0x7f && !(b < 0x80 && special[b]))) {
            used += k;
            continue;
        }
        pass_text_put(t, (const char *)p + run, used - run);
        put(t, k ? p + used : NULL);
        used += k ? k : 1;
        run = used;
    }
    pass_text_put(t, (const char *)p + run, used - run);
}

static void put_html(pass_text *t, const unsigned char *c) {
    static const struct { char c; const char *entity; } entities[] = {
        {'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&quot;"}, {'\'', "&#39;"}};
    for (size_t i = 0; c && i < countof(entities); i++)
        if (*c == (unsigned char)entities[i].c) {
            pass_text_str(t, entities[i].entity);
            return;
        }
    pass_text_str(t, "\xef\xbf\xbd"); /* U+FFFD */
}

static void put_json(pass_text *t, const unsigned char *c) {
    if (!c) {
        pass_text_str(t, "\\ufffd");
    } else if (*c == '"' || *c == '\\') {
        char e[2] = {'\\', (char)*c};
        pass_text_put(t, e, 2);
    } else {
        pass_text_printf(t, "\\u%04x", *c);
    }
}

/* The bytes each writer escapes, as tables: the escaping runs over every name
** of every drawing. */
static const bool html_special[128] = {['&'] = 1, ['<'] = 1, ['>'] = 1, ['"'] = 1, ['\''] = 1};
static const bool json_special[128] = {['"'] = 1, ['\\'] = 1, ['<'] = 1, ['>'] = 1, ['&'] = 1};

void html_esc(pass_text *t, const char *s, size_t max) {
    each_char(t, s, max, html_special, put_html);
}

void html_jstr(pass_text *t, const char *s, size_t max) {
    pass_text_put(t, "\"", 1);
    each_char(t, s, max, json_special, put_json);
    pass_text_put(t, "\"", 1);
}

/* ------------------------------------------------------------------ sides */

/* A node's key across the two models: its name, or for an unnamed node its
** first output (prefixed so it cannot meet a name). */
static const char *node_key(const Onnx__NodeProto *n, char *buf, size_t cap) {
    if (n->name && n->name[0]) return n->name;
    snprintf(buf, cap, "\x01%s", n->n_output && n->output[0] ? n->output[0] : "");
    return buf;
}

static int side_of_graph(html_side *s, graph *g) {
    memset(s, 0, sizeof *s);
    if (!g) return TILEOPT_OK;
    s->g = g;
    uint32_t n = graph_n_nodes(s->g);
    uint32_t slots = 16;
    while ((uint64_t)slots < 2 * (uint64_t)n + 2) {
        if (slots > UINT32_MAX / 2) return TILEOPT_LIMIT;
        slots *= 2;
    }
    if (!(s->slots = calloc(slots, sizeof *s->slots))) return TILEOPT_NOMEM;
    s->n_slots = slots;
    char buf[512];
    for (uint32_t i = 0; i < n; i++) {
        if (graph_node_removed(s->g, (int32_t)i)) continue;
        const char *k = node_key(graph_node(s->g, (int32_t)i), buf, sizeof buf);
        uint32_t h = graph_name_hash(k) & (slots - 1);
        bool dup = false;
        for (; s->slots[h]; h = (h + 1) & (slots - 1)) {
            char b2[512];
            if (strcmp(node_key(graph_node(s->g, (int32_t)s->slots[h] - 1), b2, sizeof b2), k) ==
                0) {
                dup = true; /* a name given twice: the first node keeps it */
                break;
            }
        }
        if (!dup) s->slots[h] = i + 1;
    }
    return TILEOPT_OK;
}

int html_side_init(html_side *s, tileopt_model *m) {
    return side_of_graph(s, m ? m->g->main : NULL);
}

void html_side_free(html_side *s) {
    free(s->slots);
    for (size_t i = 0; i < s->n_graphs; i++) free(s->paths[i]);
    free(s->paths);
    free(s->graphs);
    if (s->sub) html_side_free(s->sub);
    free(s->sub);
    memset(s, 0, sizeof *s);
}

/* Every subgraph below g with its path, appended to s's lists. */
static bool list_graphs(html_side *s, graph *g, size_t *cap) {
    for (uint32_t i = 0; i < graph_n_nodes(g); i++) {
        if (graph_node_removed(g, (int32_t)i)) continue;
        for (graph *sub = graph_node_subgraphs(g, (int32_t)i); sub; sub = sub->next_sibling) {
            if (s->n_graphs == *cap) {
                size_t nc = *cap ? *cap * 2 : 16;
                char **np = realloc(s->paths, nc * sizeof *np);
                if (!np) return false;
                s->paths = np;
                graph **ng = realloc(s->graphs, nc * sizeof *ng);
                if (!ng) return false;
                s->graphs = ng;
                *cap = nc;
            }
            char buf[2048];
            const char *path = graph_path(sub, buf, sizeof buf);
            if (!(s->paths[s->n_graphs] = strdup(path ? path : ""))) return false;
            s->graphs[s->n_graphs++] = sub;
            if (!list_graphs(s, sub, cap)) return false;
        }
    }
    return true;
}

const html_side *html_side_sub(html_side *s, const char *path) {
    if (!s->g || !path) return NULL;
    if (!s->listed) {
        size_t cap = 0;
        s->listed = true;
        if (!list_graphs(s, s->g, &cap)) return NULL;
    }
    if (s->sub && strcmp(s->paths[s->sub_at], path) == 0) return s->sub;
    for (size_t i = 0; i < s->n_graphs; i++) {
        if (strcmp(s->paths[i], path) != 0) continue;
        if (!s->sub && !(s->sub = calloc(1, sizeof *s->sub))) return NULL;
        html_side_free(s->sub);
        if (side_of_graph(s->sub, s->graphs[i])) return NULL;
        s->sub_at = i;
        return s->sub;
    }
    return NULL;
}

static int32_t side_find(const html_side *s, const char *key) {
    if (!s->g || !key) return -1;
    uint32_t mask = s->n_slots - 1;
    char buf[512];
    for (uint32_t h = graph_name_hash(key) & mask; s->slots[h]; h = (h + 1) & mask) {
        int32_t i = (int32_t)s->slots[h] - 1;
        if (strcmp(node_key(graph_node(s->g, i), buf, sizeof buf), key) == 0) return i;
    }
    /* reports name an unnamed node "#index" */
    if (key[0] == '#' && key[1] >= '0' && key[1] <= '9') {
        char *end;
        unsigned long i = strtoul(key + 1, &end, 10);
        if (!*end && i < graph_n_nodes(s->g) && !graph_node_removed(s->g, (int32_t)i)) {
            const Onnx__NodeProto *n = graph_node(s->g, (int32_t)i);
            if (!n->name || !n->name[0]) return (int32_t)i;
        }
    }
    return -1;
}

/* ------------------------------------------------------------- drawings */

enum { K_NODE, K_CONST, K_INPUT, K_OUTPUT, K_DUMMY };
/* classes as the page's style names them */
enum { C_PLAIN, C_REMOVED, C_ADDED, C_CHANGED, C_COUNT };
static const char *const class_name[C_COUNT] = {"plain", "removed", "added", "changed"};
_Static_assert(countof(class_name) == C_COUNT, "a name per class");
static const char *const kind_name[] = {"node", "const", "input", "output", "dummy"};

/* Bounds that keep a drawing readable and its cost fixed: a value read by
** thousands of nodes shows the first few of them. */
#define MAX_CORE 8
#define MAX_VALUES 48
#define MAX_USES 6
#define MAX_ITEMS 64
#define MAX_EDGES 96
#define MAX_DRAWN (MAX_ITEMS + 4 * MAX_EDGES) /* items and the bends of long edges */
#define POOL_BYTES 8192

/* Geometry, in pixels: the page's monospace font at 11px is 6.6px a character. */
#define CHAR_W 7
#define BOX_H 34
#define SMALL_H 30
#define GAP_X 22
#define GAP_Y 40
#define MARGIN 10

typedef struct ditem {
    uint8_t kind, cls, focus;
    int32_t node;            /* K_NODE: the node; else -1 */
    const char *value;       /* K_CONST, K_INPUT, K_OUTPUT: the value's name */
    const char *l1, *l2;     /* the two lines */
    int layer;
    double order;
    int x, y, w, h;
} ditem;

typedef struct dedge {
    int from, to;
    const char *label;
    int path[MAX_DRAWN];     /* bends: the dummy items between from and to */
    int n_path;
} dedge;

typedef struct drawing {
    ditem it[MAX_DRAWN];
    int n;
    dedge e[MAX_EDGES];
    int ne;
    int w, h;
    bool cut;                /* a bound left something out */
    char pool[POOL_BYTES];
    size_t pool_used;
} drawing;

struct html_pair {
    drawing d[2];
    const char *values[MAX_VALUES];
    bool after_only[MAX_VALUES]; /* where the output put what the region made */
    int n_values;
    int32_t core[2][MAX_CORE];
    int n_core[2];
};

html_pair *html_pair_new(void) { return malloc(sizeof(html_pair)); }
void html_pair_free(html_pair *p) { free(p); }

static const char *pool_text(drawing *d, const char *s) {
    size_t n = strlen(s) + 1;
    if (d->pool_used + n > POOL_BYTES) return "";
    char *o = d->pool + d->pool_used;
    memcpy(o, s, n);
    d->pool_used += n;
    return o;
}

/* "FLOAT [N,8]": dims by number or by name, "?" where unknown. */
static void type_text(const graph_type *t, bool with_type, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    if (with_type && t->elem) n += (size_t)snprintf(buf, cap, "%s ", dtype_name(t->elem));
    if (t->rank < 0 || (t->rank > 0 && !t->dims) || n >= cap) {
        if (n && n < cap) buf[n - 1] = '\0';
        return;
    }
    n += (size_t)snprintf(buf + n, cap - n, "[");
    for (int32_t i = 0; i < t->rank && n < cap; i++) {
        const char *sym = t->syms ? t->syms[i] : NULL;
        if (t->dims[i] >= 0) n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "", (long long)t->dims[i]);
        else n += (size_t)snprintf(buf + n, cap - n, "%s%.24s", i ? "," : "", sym ? sym : "?");
    }
    if (n < cap) snprintf(buf + n, cap - n, "]");
    if (n + 1 >= cap && cap > 4) memcpy(buf + cap - 4, "..]", 4);
}

static bool has_value(const html_pair *p, const char *name) {
    for (int i = 0; i < p->n_values; i++)
        if (strcmp(p->values[i], name) == 0) return true;
    return false;
}

static void add_value(html_pair *p, const char *name) {
    if (!name || !name[0] || has_value(p, name)) return;
    if (p->n_values < MAX_VALUES) {
        p->after_only[p->n_values] = false;
        p->values[p->n_values++] = name;
    } else {
        p->d[0].cut = p->d[1].cut = true;
    }
}

/* Where the output keeps what a removed region computed: from the region's
** nodes the output lacks, downstream through nodes it lacks too (a folded
** chain), to the first values the output has (the initializer a fold made)
** or to the first node it has, with what that node reads now. Those are
** drawn on the after side alone. */
static void follow_removed(html_pair *p, const html_side *before, const html_side *after) {
    int32_t queue[32];
    int head = 0, tail = 0;
    char buf[512];
    for (int i = 0; i < p->n_core[0]; i++) {
        int32_t n = p->core[0][i];
        if (side_find(after, node_key(graph_node(before->g, n), buf, sizeof buf)) < 0 && tail < 32)
            queue[tail++] = n;
    }
    while (head < tail) {
        const Onnx__NodeProto *n = graph_node(before->g, queue[head++]);
        for (size_t o = 0; o < n->n_output; o++) {
            const char *name = n->output[o];
            if (!name || !name[0]) continue;
            graph_value *va = graph_find(after->g, name);
            if (va && (va->initializer >= 0 || va->producer >= 0 || va->input >= 0)) {
                if (!has_value(p, name) && p->n_values < MAX_VALUES) {
                    p->after_only[p->n_values] = true;
                    p->values[p->n_values++] = name;
                }
                continue;
            }
            graph_value *vb = graph_find(before->g, name);
            for (uint32_t u = 0; vb && u < vb->n_uses && u < MAX_USES; u++) {
                int32_t c = vb->uses[u].node;
                if (vb->uses[u].input < 0 || tail == 32) continue;
                int32_t kept = side_find(after, node_key(graph_node(before->g, c), buf, sizeof buf));
                if (kept >= 0) {
                    /* the chain ends at a node both have: the new values it
                    ** reads (the constant the chain became) */
                    const Onnx__NodeProto *k = graph_node(after->g, kept);
                    for (size_t in = 0; in < k->n_input; in++)
                        if (k->input[in] && k->input[in][0] && !has_value(p, k->input[in]) &&
                            !graph_find(before->g, k->input[in]) && p->n_values < MAX_VALUES) {
                            p->after_only[p->n_values] = true;
                            p->values[p->n_values++] = k->input[in];
                        }
                    continue;
                }
                bool seen = false;
                for (int k = 0; k < tail; k++) seen |= queue[k] == c;
                if (!seen) queue[tail++] = c;
            }
        }
    }
}

static void add_core(html_pair *p, int side, int32_t node) {
    if (node < 0) return;
    for (int i = 0; i < p->n_core[side]; i++)
        if (p->core[side][i] == node) return;
    if (p->n_core[side] < MAX_CORE) p->core[side][p->n_core[side]++] = node;
}

static void touch_values(html_pair *p, const graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    for (size_t i = 0; i < n->n_input; i++) add_value(p, n->input[i]);
    for (size_t i = 0; i < n->n_output; i++) add_value(p, n->output[i]);
}

/* Whether node i of g differs from its namesake in other (same op, inputs and
** outputs): -1 when other has none. */
static int node_differs(const graph *g, int32_t i, const html_side *other) {
    char buf[512];
    const Onnx__NodeProto *a = graph_node(g, i);
    int32_t j = side_find(other, node_key(a, buf, sizeof buf));
    if (j < 0) return -1;
    const Onnx__NodeProto *b = graph_node(other->g, j);
    if (strcmp(a->op_type ? a->op_type : "", b->op_type ? b->op_type : "") != 0 ||
        a->n_input != b->n_input || a->n_output != b->n_output || a->n_attribute != b->n_attribute)
        return 1;
    for (size_t k = 0; k < a->n_input; k++)
        if (strcmp(a->input[k], b->input[k]) != 0) return 1;
    for (size_t k = 0; k < a->n_output; k++)
        if (strcmp(a->output[k], b->output[k]) != 0) return 1;
    return 0;
}

static int find_item(const drawing *d, int kind, int32_t node, const char *value) {
    for (int i = 0; i < d->n; i++) {
        if (d->it[i].kind != kind) continue;
        if (kind == K_NODE ? d->it[i].node == node : strcmp(d->it[i].value, value) == 0) return i;
    }
    return -1;
}

static int label_w(const char *a, const char *b) {
    size_t la = a ? strlen(a) : 0, lb = b ? strlen(b) : 0;
    size_t n = la > lb ? la : lb;
    if (n > HTML_LABEL_BYTES) n = HTML_LABEL_BYTES + 1;
    return (int)n * CHAR_W + 16;
}

static int add_node_item(drawing *d, const graph *g, int32_t node, const html_side *other,
                         int side, bool focus) {
    int k = find_item(d, K_NODE, node, NULL);
    if (k >= 0) {
        d->it[k].focus |= focus;
        return k;
    }
    if (d->n >= MAX_ITEMS) {
        d->cut = true;
        return -1;
    }
    const Onnx__NodeProto *n = graph_node(g, node);
    int diff = other->g ? node_differs(g, node, other) : 0;
    ditem *it = &d->it[d->n];
    *it = (ditem){.kind = K_NODE, .node = node, .focus = focus, .layer = 0};
    it->cls = diff < 0 ? (side ? C_ADDED : C_REMOVED) : diff || focus ? C_CHANGED : C_PLAIN;
    it->l1 = n->op_type ? n->op_type : "?";
    it->l2 = n->name && n->name[0] ? n->name : "(unnamed)";
    it->w = label_w(it->l1, it->l2);
    it->h = BOX_H;
    return d->n++;
}

static int add_value_item(drawing *d, int kind, const graph_value *v, int cls) {
    int k = find_item(d, kind, -1, v->name);
    if (k >= 0) return k;
    if (d->n >= MAX_ITEMS) {
        d->cut = true;
        return -1;
    }
    char buf[160];
    type_text(&v->type, true, buf, sizeof buf);
    ditem *it = &d->it[d->n];
    *it = (ditem){.kind = (uint8_t)kind, .cls = (uint8_t)cls, .node = -1, .value = v->name};
    it->l1 = v->name;
    it->l2 = pool_text(d, buf);
    it->w = label_w(it->l1, it->l2);
    it->h = SMALL_H;
    return d->n++;
}

static void add_edge(drawing *d, int from, int to, const char *label) {
    if (from < 0 || to < 0 || from == to) return;
    for (int i = 0; i < d->ne; i++) {
        if (d->e[i].from == from && d->e[i].to == to) return;
        /* a value read by several nodes: its shape is said once, at its source */
        if (d->e[i].from == from && d->e[i].label == label) label = NULL;
    }
    if (d->ne >= MAX_EDGES) {
        d->cut = true;
        return;
    }
    d->e[d->ne++] = (dedge){.from = from, .to = to, .label = label};
}

static bool initializer_in(const html_side *s, const char *name) {
    if (!s->g) return false;
    graph_value *v = graph_find(s->g, name);
    return v && v->initializer >= 0;
}

/* The items and edges of one side: the core nodes, every node producing or
** consuming a region value, and the constants, inputs and outputs among them. */
static void gather(html_pair *p, int side, const html_side *s, const html_side *other) {
    drawing *d = &p->d[side];
    graph *g = s->g;
    for (int i = 0; i < p->n_core[side]; i++) add_node_item(d, g, p->core[side][i], other, side, true);
    for (int i = 0; i < p->n_values; i++) {
        graph_value *v = side || !p->after_only[i] ? graph_find(g, p->values[i]) : NULL;
        if (!v) continue;
        if (v->producer >= 0 && !graph_node_removed(g, v->producer))
            add_node_item(d, g, v->producer, other, side, false);
        uint32_t shown = 0;
        for (uint32_t u = 0; u < v->n_uses; u++) {
            if (v->uses[u].input < 0 || graph_node_removed(g, v->uses[u].node)) continue;
            if (shown++ == MAX_USES) {
                d->cut = true;
                break;
            }
            add_node_item(d, g, v->uses[u].node, other, side, false);
        }
    }
    for (int i = 0; i < p->n_values; i++) {
        graph_value *v = side || !p->after_only[i] ? graph_find(g, p->values[i]) : NULL;
        if (!v) continue;
        char shape[128];
        type_text(&v->type, false, shape, sizeof shape);
        const char *label = pool_text(d, shape);
        int src = -1;
        if (v->producer >= 0) src = find_item(d, K_NODE, v->producer, NULL);
        else if (v->initializer >= 0)
            src = add_value_item(d, K_CONST, v,
                                 initializer_in(other, v->name) || !other->g ? C_PLAIN
                                 : side                                      ? C_ADDED
                                                                             : C_REMOVED);
        /* a graph input, or in a subgraph a value of an enclosing scope */
        else if (v->input >= 0 || v->outer >= 0) src = add_value_item(d, K_INPUT, v, C_PLAIN);
        if (src < 0) continue;
        /* the consumers drawn are among the first MAX_USES: a constant read by
        ** 50k nodes costs no more than one read by two */
        uint32_t seen = 0;
        for (uint32_t u = 0; u < v->n_uses && seen <= MAX_USES; u++) {
            if (v->uses[u].input < 0 || graph_node_removed(g, v->uses[u].node)) continue;
            seen++;
            int to = find_item(d, K_NODE, v->uses[u].node, NULL);
            if (to >= 0) add_edge(d, src, to, label);
        }
        if (v->output >= 0) add_edge(d, src, add_value_item(d, K_OUTPUT, v, C_PLAIN), label);
    }
}

/* Layers by longest path from the sources (the region is a piece of a DAG;
** a cycle, which a valid model lacks, stops the relaxation after n rounds). */
static void layer_items(drawing *d) {
    for (int i = 0; i < d->n; i++) d->it[i].layer = 0;
    for (int round = 0; round < d->n; round++) {
        bool moved = false;
        for (int k = 0; k < d->ne; k++) {
            ditem *a = &d->it[d->e[k].from], *b = &d->it[d->e[k].to];
            if (b->layer < a->layer + 1) {
                b->layer = a->layer + 1;
                moved = true;
            }
        }
        if (!moved) break;
    }
    /* a cycle, which no valid model has, would push layers up without end */
    for (int i = 0; i < d->n; i++)
        if (d->it[i].layer > MAX_ITEMS) d->it[i].layer = MAX_ITEMS;
    /* a graph output sits right under its producer */
    for (int k = 0; k < d->ne; k++)
        if (d->it[d->e[k].to].kind == K_OUTPUT)
            d->it[d->e[k].to].layer = d->it[d->e[k].from].layer + 1;
    /* a source sits right above its first consumer, not at the top */
    for (int i = 0; i < d->n; i++) {
        if (d->it[i].kind != K_CONST && d->it[i].kind != K_INPUT) continue;
        int best = -1;
        for (int k = 0; k < d->ne; k++)
            if (d->e[k].from == i && (best < 0 || d->it[d->e[k].to].layer - 1 < best))
                best = d->it[d->e[k].to].layer - 1;
        if (best > d->it[i].layer) d->it[i].layer = best;
    }
    /* long edges bend through a dummy item on each layer they cross */
    for (int k = 0; k < d->ne; k++) {
        dedge *e = &d->e[k];
        int la = d->it[e->from].layer, lb = d->it[e->to].layer;
        for (int l = la + 1; l < lb && d->n < MAX_DRAWN; l++) {
            ditem *it = &d->it[d->n];
            *it = (ditem){.kind = K_DUMMY, .node = -1, .layer = l, .w = 4, .h = 2};
            e->path[e->n_path++] = d->n++;
        }
    }
}

/* The edges as one-layer segments (an edge through its bends), a to b. */
typedef struct segs {
    int a[MAX_EDGES + MAX_DRAWN], b[MAX_EDGES + MAX_DRAWN];
    int n;
} segs;

static void make_segs(const drawing *d, segs *s) {
    s->n = 0;
    for (int k = 0; k < d->ne; k++) {
        const dedge *e = &d->e[k];
        int prev = e->from;
        for (int j = 0; j <= e->n_path; j++) {
            int next = j < e->n_path ? e->path[j] : e->to;
            if (s->n < MAX_EDGES + MAX_DRAWN) {
                s->a[s->n] = prev;
                s->b[s->n] = next;
                s->n++;
            }
            prev = next;
        }
    }
}

/* Items by layer, then by order within it (insertion sort: a drawing holds a
** few dozen). */
static int sorted_items(const drawing *d, int *idx) {
    int m = 0;
    for (int i = 0; i < d->n; i++) {
        int j = m++;
        for (; j > 0; j--) {
            const ditem *p = &d->it[idx[j - 1]], *q = &d->it[i];
            if (p->layer < q->layer || (p->layer == q->layer && p->order <= q->order)) break;
            idx[j] = idx[j - 1];
        }
        idx[j] = i;
    }
    return m;
}

/* Crossings between adjacent layers: two segments between the same two
** layers cross when their ends are in opposite orders. */
static int count_crossings(const drawing *d, const segs *s) {
    int n = 0;
    for (int i = 0; i < s->n; i++)
        for (int j = i + 1; j < s->n; j++) {
            const ditem *a = &d->it[s->a[i]], *b = &d->it[s->b[i]];
            const ditem *c = &d->it[s->a[j]], *e = &d->it[s->b[j]];
            if (a->layer != c->layer || b->layer != e->layer || b->layer != a->layer + 1) continue;
            n += (a->order - c->order) * (b->order - e->order) < 0;
        }
    return n;
}

static void renumber(drawing *d, int l) {
    int idx[MAX_DRAWN];
    int m = sorted_items(d, idx);
    for (int a = 0, pos = 0; a < m; a++)
        if (d->it[idx[a]].layer == l) d->it[idx[a]].order = pos++;
}

/* Order within layers: sweeps down and up, each layer sorted by the mean
** position of its neighbours in the layer just swept (barycenters), the best
** order seen kept, then neighbours swapped while that removes crossings (the
** usual Sugiyama steps): edges cross where they must and seldom elsewhere. */
static void order_items(drawing *d, const segs *s) {
    int max_layer = 0;
    for (int i = 0; i < d->n; i++) {
        d->it[i].order = i;
        if (d->it[i].layer > max_layer) max_layer = d->it[i].layer;
    }
    for (int l = 0; l <= max_layer; l++) renumber(d, l);
    double best[MAX_DRAWN];
    int best_x = count_crossings(d, s);
    for (int i = 0; i < d->n; i++) best[i] = d->it[i].order;
    for (int sweep = 0; sweep < 8 && best_x; sweep++) {
        bool down = sweep % 2 == 0;
        for (int step = 1; step <= max_layer; step++) {
            int l = down ? step : max_layer - step;
            double sum[MAX_DRAWN] = {0};
            int count[MAX_DRAWN] = {0};
            for (int k = 0; k < s->n; k++) {
                int self = down ? s->b[k] : s->a[k], other = down ? s->a[k] : s->b[k];
                if (d->it[self].layer == l && d->it[other].layer == (down ? l - 1 : l + 1)) {
                    sum[self] += d->it[other].order;
                    count[self]++;
                }
            }
            for (int i = 0; i < d->n; i++)
                if (d->it[i].layer == l && count[i]) d->it[i].order = sum[i] / count[i];
            /* ties kept stable */
            renumber(d, l);
        }
        int x = count_crossings(d, s);
        if (x < best_x) {
            best_x = x;
            for (int i = 0; i < d->n; i++) best[i] = d->it[i].order;
        }
    }
    for (int i = 0; i < d->n; i++) d->it[i].order = best[i];
    /* transpose: a crossing count per try, so only for drawings of modest size */
    for (int round = 0; round < 4 && best_x && s->n <= 160; round++) {
        bool better = false;
        for (int i = 0; i < d->n; i++)
            for (int j = 0; j < d->n; j++) {
                ditem *a = &d->it[i], *b = &d->it[j];
                if (a->layer != b->layer || b->order != a->order + 1) continue;
                a->order += 1;
                b->order -= 1;
                int x = count_crossings(d, s);
                if (x < best_x) {
                    best_x = x;
                    better = true;
                } else {
                    a->order -= 1;
                    b->order += 1;
                }
            }
        if (!better) break;
    }
}

/* Coordinates: rows GAP_Y apart; in each row the items keep their order and
** gaps, and sit as near as they can to the mean of their neighbours in the
** row above (then below, then above again), so edges run short and straight:
** each row placed pushing right from where its items want to be, and pulling
** left, and the two averaged (both keep the gaps, so their mean does). */
static void place_items(drawing *d, const segs *s) {
    int idx[MAX_DRAWN];
    int m = sorted_items(d, idx), max_layer = 0;
    double c[MAX_DRAWN];
    for (int a = 0, x = 0; a < m; a++) {
        ditem *it = &d->it[idx[a]];
        if (a && it->layer != d->it[idx[a - 1]].layer) x = 0;
        c[idx[a]] = x + it->w / 2.0;
        x += it->w + GAP_X;
        if (it->layer > max_layer) max_layer = it->layer;
    }
    for (int pass = 0; pass < 3; pass++) {
        bool down = pass % 2 == 0;
        for (int step = 1; step <= max_layer; step++) {
            int l = down ? step : max_layer - step;
            double sum[MAX_DRAWN] = {0}, want[MAX_DRAWN], right[MAX_DRAWN], left[MAX_DRAWN];
            int count[MAX_DRAWN] = {0};
            for (int k = 0; k < s->n; k++) {
                int self = down ? s->b[k] : s->a[k], other = down ? s->a[k] : s->b[k];
                if (d->it[self].layer == l && d->it[other].layer == (down ? l - 1 : l + 1)) {
                    sum[self] += c[other];
                    count[self]++;
                }
            }
            int row[MAX_DRAWN], n = 0;
            for (int a = 0; a < m; a++)
                if (d->it[idx[a]].layer == l) row[n++] = idx[a];
            for (int a = 0; a < n; a++) {
                int i = row[a];
                want[a] = count[i] ? sum[i] / count[i] : c[i];
            }
            for (int a = 0; a < n; a++) {
                double gap = a ? (d->it[row[a - 1]].w + d->it[row[a]].w) / 2.0 + GAP_X : 0;
                right[a] = a && right[a - 1] + gap > want[a] ? right[a - 1] + gap : want[a];
            }
            for (int a = n - 1; a >= 0; a--) {
                double gap = a + 1 < n ? (d->it[row[a]].w + d->it[row[a + 1]].w) / 2.0 + GAP_X : 0;
                left[a] = a + 1 < n && left[a + 1] - gap < want[a] ? left[a + 1] - gap : want[a];
            }
            for (int a = 0; a < n; a++) c[row[a]] = (right[a] + left[a]) / 2;
        }
    }
    double lo = 0, hi = 0;
    for (int i = 0; i < d->n; i++) {
        double l = c[i] - d->it[i].w / 2.0, r = c[i] + d->it[i].w / 2.0;
        if (!i || l < lo) lo = l;
        if (!i || r > hi) hi = r;
    }
    for (int i = 0; i < d->n; i++) {
        ditem *it = &d->it[i];
        it->x = MARGIN + (int)(c[i] - it->w / 2.0 - lo + 0.5);
        it->y = MARGIN + it->layer * (BOX_H + GAP_Y) + (BOX_H - it->h) / 2;
    }
    d->w = (int)(hi - lo + 0.5) + 2 * MARGIN;
    d->h = (max_layer + 1) * (BOX_H + GAP_Y) - GAP_Y + 2 * MARGIN;
    if (!d->n) {
        d->w = 200;
        d->h = 40;
    }
}

static void lay_out(drawing *d) {
    layer_items(d);
    segs s;
    make_segs(d, &s);
    order_items(d, &s);
    place_items(d, &s);
}

void html_pair_build(html_pair *p, const html_side *before, const html_side *after,
                     const html_action *a) {
    for (int s = 0; s < 2; s++) {
        p->d[s].n = p->d[s].ne = 0;
        p->d[s].cut = false;
        p->d[s].pool_used = 0;
        p->n_core[s] = 0;
    }
    p->n_values = 0;
    const html_side *sides[2] = {before, after};
    /* the nodes the action names: its own, and a Tile it fused */
    const char *named[2] = {a->node, jr_str(a->obj, "tile")};
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < 2; k++) add_core(p, s, side_find(sides[s], named[k]));
    for (int i = 0; i < p->n_core[0]; i++) touch_values(p, before->g, p->core[0][i]);
    for (int i = 0; i < p->n_core[1]; i++) touch_values(p, after->g, p->core[1][i]);
    /* nodes of the output that touch the region and the input lacks: added */
    if (after->g) {
        int n0 = p->n_values;
        for (int i = 0; i < n0; i++) {
            graph_value *v = graph_find(after->g, p->values[i]);
            if (!v) continue;
            char buf[512];
            if (v->producer >= 0 && !graph_node_removed(after->g, v->producer) &&
                side_find(before, node_key(graph_node(after->g, v->producer), buf, sizeof buf)) < 0)
                add_core(p, 1, v->producer);
            for (uint32_t u = 0; u < v->n_uses && u < MAX_USES; u++)
                if (v->uses[u].input >= 0 && !graph_node_removed(after->g, v->uses[u].node) &&
                    side_find(before, node_key(graph_node(after->g, v->uses[u].node), buf,
                                                sizeof buf)) < 0)
                    add_core(p, 1, v->uses[u].node);
        }
        for (int i = 0; i < p->n_core[1]; i++) touch_values(p, after->g, p->core[1][i]);
        if (before->g) follow_removed(p, before, after);
    }
    for (int s = 0; s < 2; s++) {
        drawing *d = &p->d[s];
        if (sides[s]->g) gather(p, s, sides[s], sides[1 - s]);
        /* nothing found on this side (a node in a subgraph, or one the other
        ** side alone has): the action's node alone, as the report names it */
        if (!d->n && (!s || !p->n_core[0]) && a->node && (s == 0 || !sides[0]->g)) {
            ditem *it = &d->it[d->n++];
            *it = (ditem){.kind = K_NODE, .node = -1, .focus = 1, .cls = C_CHANGED};
            it->l1 = a->op ? a->op : "?";
            it->l2 = a->node;
            it->w = label_w(it->l1, it->l2);
            it->h = BOX_H;
        }
        lay_out(d);
    }
}

/* ------------------------------------------------------------------ output */

/* The points of an edge: from the bottom of its source through its bends to the
** top of its target. */
static int edge_points(const drawing *d, const dedge *e, int *xy) {
    int n = 0;
    const ditem *a = &d->it[e->from], *b = &d->it[e->to];
    xy[n++] = a->x + a->w / 2;
    xy[n++] = a->y + a->h;
    for (int j = 0; j < e->n_path; j++) {
        const ditem *m = &d->it[e->path[j]];
        xy[n++] = m->x + m->w / 2;
        xy[n++] = m->y + m->h / 2;
    }
    xy[n++] = b->x + b->w / 2;
    xy[n++] = b->y;
    return n / 2;
}

void html_pair_svg(pass_text *t, const html_pair *p, int side) {
    const drawing *d = &p->d[side];
    pass_text_printf(t, "<svg class=\"g\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\">",
                d->w, d->h, d->w, d->h);
    for (int k = 0; k < d->ne; k++) {
        int xy[2 * (MAX_DRAWN + 2)];
        int n = edge_points(d, &d->e[k], xy);
        pass_text_str(t, "<path class=\"e\" d=\"");
        for (int j = 0; j < n; j++) pass_text_printf(t, "%c%d %d", j ? 'L' : 'M', xy[2 * j], xy[2 * j + 1]);
        pass_text_str(t, "\"/>");
        if (d->e[k].label && d->e[k].label[0]) {
            pass_text_printf(t, "<text class=\"el\" x=\"%d\" y=\"%d\">", xy[0] + 4, xy[1] + 13);
            html_esc(t, d->e[k].label, HTML_LABEL_BYTES);
            pass_text_str(t, "</text>");
        }
    }
    for (int i = 0; i < d->n; i++) {
        const ditem *it = &d->it[i];
        if (it->kind == K_DUMMY) continue;
        pass_text_printf(t, "<g class=\"%s %s%s\"><title>", kind_name[it->kind], class_name[it->cls],
                    it->focus ? " focus" : "");
        html_esc(t, it->l1, HTML_NAME_BYTES);
        pass_text_str(t, " ");
        html_esc(t, it->l2, HTML_NAME_BYTES);
        pass_text_printf(t, "</title><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"%d\"/>",
                    it->x, it->y, it->w, it->h, it->kind == K_NODE ? 4 : 12);
        pass_text_printf(t, "<text x=\"%d\" y=\"%d\" class=\"l1\">", it->x + it->w / 2, it->y + 14);
        html_esc(t, it->l1, HTML_LABEL_BYTES);
        pass_text_printf(t, "</text><text x=\"%d\" y=\"%d\" class=\"l2\">", it->x + it->w / 2,
                    it->y + it->h - 6);
        html_esc(t, it->l2, HTML_LABEL_BYTES);
        pass_text_str(t, "</text></g>");
    }
    if (!d->n)
        pass_text_str(t, "<text class=\"none\" x=\"10\" y=\"24\">nothing of this region "
                         "is left</text>");
    pass_text_str(t, "</svg>");
}

/* sep then v in decimal: records hold millions of small numbers, which
** printf would spend most of the page's time on */
static void put_int(pass_text *t, char sep, int v) {
    char buf[16], *e = buf + sizeof buf, *q = e;
    unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;
    do *--q = (char)('0' + u % 10); while (u /= 10);
    if (v < 0) *--q = '-';
    if (sep) *--q = sep;
    pass_text_put(t, q, (size_t)(e - q));
}

void html_pair_record(pass_text *t, const html_pair *p) {
    for (int s = 0; s < 2; s++) {
        const drawing *d = &p->d[s];
        pass_text_str(t, s ? ",[" : "[");
        put_int(t, 0, d->w);
        put_int(t, ',', d->h);
        pass_text_str(t, ",[");
        bool first = true;
        for (int i = 0; i < d->n; i++) {
            const ditem *it = &d->it[i];
            if (it->kind == K_DUMMY) continue;
            pass_text_str(t, first ? "[" : ",[");
            put_int(t, 0, it->x);
            put_int(t, ',', it->y);
            put_int(t, ',', it->w);
            put_int(t, ',', it->h);
            put_int(t, ',', it->kind);
            put_int(t, ',', it->cls | (it->focus ? 8 : 0));
            pass_text_put(t, ",", 1);
            html_jstr(t, it->l1, HTML_LABEL_BYTES);
            pass_text_put(t, ",", 1);
            html_jstr(t, it->l2, HTML_LABEL_BYTES);
            pass_text_put(t, "]", 1);
            first = false;
        }
        pass_text_str(t, "],[");
        for (int k = 0; k < d->ne; k++) {
            int xy[2 * (MAX_DRAWN + 2)];
            int n = edge_points(d, &d->e[k], xy);
            pass_text_str(t, k ? ",[[" : "[[");
            for (int j = 0; j < 2 * n; j++) put_int(t, j ? ',' : 0, xy[j]);
            pass_text_str(t, "],");
            html_jstr(t, d->e[k].label ? d->e[k].label : "", HTML_LABEL_BYTES);
            pass_text_put(t, "]", 1);
        }
        pass_text_str(t, "]]");
    }
}

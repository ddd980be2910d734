/*
** The actions of one pass run, kept as JSON text.
**
** A big model's pass acts on hundreds of thousands of nodes. As a cJSON tree a
** record costs five to fifteen allocations of 64 bytes or more; as text it
** costs its 80 to 300 bytes. So a record is written as text while its pass fills
** it, and the next record (or the end of the run) closes it. What the report
** and the change check need later (which nodes the actions name, how many were
** changed or skipped) is kept beside the text.
*/
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"

/* -------------------------------------------------------------------- log */

/* Where a pass entry's actions sit in the report (report, passes, entry,
** actions): each record on a line of its own at that depth. */
#define RECORD_DEPTH 3

enum { NAMED_NODE = 1, NAMED_TILE = 2 };

typedef struct log_key {
    size_t at;               /* offset in key_text of: graph path, \x1f, node id, \0 */
    uint32_t hash;
    uint8_t named;           /* NAMED_*: by a record that is no skip */
    uint32_t skips;          /* skip records naming it as node */
} log_key;

typedef struct log_record {
    size_t start;            /* offset of its ",\n" in text */
    int32_t skip_key;        /* a skip: its node's key; -1 otherwise */
} log_record;

struct pass_log {
    pass_text text;          /* ",\n<indent>{...}" per record */
    json_w open;             /* the writer inside the record being filled */
    bool is_open, open_skip;
    int32_t open_key;
    log_record *recs;
    size_t n_recs, cap_recs;
    log_key *keys;
    pass_text key_text;      /* the keys' texts, one after another: one allocation
                             ** where a malloc each cost more than the lookups */
    uint32_t n_keys, cap_keys;
    uint32_t *slots;         /* key index + 1; power-of-two count, at most half full */
    uint32_t n_slots;
    bool failed;
};

pass_log *pass_log_new(void) {
    pass_log *l = calloc(1, sizeof *l);
    if (l) json_init(&l->open, &l->text, false, 0);
    return l;
}

void pass_log_free(pass_log *l) {
    if (!l) return;
    free(l->text.p);
    free(l->recs);
    free(l->key_text.p);
    free(l->keys);
    free(l->slots);
    free(l);
}

/* Keys are a graph path (pn bytes of path, none for the main graph), \x1f and a
** node id. */
static uint32_t key_hash(const char *path, size_t pn, const char *id) {
    uint32_t h = graph_hash_bytes(GRAPH_HASH_SEED, path, pn);
    return graph_hash_bytes(graph_hash_bytes(h, "\x1f", 1), id, strlen(id));
}

static int32_t key_find(const pass_log *l, const char *path, size_t pn, const char *id,
                        uint32_t h) {
    if (!l->n_slots) return -1;
    uint32_t mask = l->n_slots - 1;
    for (uint32_t i = h & mask; l->slots[i]; i = (i + 1) & mask) {
        const log_key *k = &l->keys[l->slots[i] - 1];
        const char *text = l->key_text.p + k->at;
        if (k->hash == h && memcmp(text, path, pn) == 0 && text[pn] == '\x1f' &&
            strcmp(text + pn + 1, id) == 0)
            return (int32_t)(l->slots[i] - 1);
    }
    return -1;
}

static bool slots_grow(pass_log *l) {
    uint32_t n = l->n_slots ? l->n_slots * 2 : 1024;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots) return false;
    for (uint32_t k = 0; k < l->n_keys; k++) {
        uint32_t i = l->keys[k].hash & (n - 1);
        while (slots[i]) i = (i + 1) & (n - 1);
        slots[i] = k + 1;
    }
    free(l->slots);
    l->slots = slots;
    l->n_slots = n;
    return true;
}

/* The key of node id in the graph at path, made on first use; -1 when out of
** memory. */
static int32_t key_get(pass_log *l, const char *path, size_t pn, const char *id) {
    uint32_t h = key_hash(path, pn, id);
    int32_t found = key_find(l, path, pn, id, h);
    if (found >= 0) return found;
    if ((uint64_t)(l->n_keys + 1) * 2 > l->n_slots && !slots_grow(l)) return -1;
    if (l->n_keys == l->cap_keys) {
        uint32_t cap = l->cap_keys ? l->cap_keys * 2 : 256;
        log_key *keys = realloc(l->keys, cap * sizeof *keys);
        if (!keys) return -1;
        l->keys = keys;
        l->cap_keys = cap;
    }
    size_t at = l->key_text.len;
    pass_text_put(&l->key_text, path, pn);
    pass_text_put(&l->key_text, "\x1f", 1);
    pass_text_put(&l->key_text, id, strlen(id) + 1);
    if (l->key_text.failed) return -1;
    l->keys[l->n_keys] = (log_key){at, h, 0, 0};
    uint32_t mask = l->n_slots - 1, i = h & mask;
    while (l->slots[i]) i = (i + 1) & mask;
    l->slots[i] = ++l->n_keys;
    return (int32_t)(l->n_keys - 1);
}

/* Close the open record. */
static void close_open(pass_log *l) {
    if (!l->is_open) return;
    l->is_open = false;
    json_end(&l->open);
    if (l->text.failed) l->failed = true;
}

void pass_log_tile(pass_log *l, const char *tile) {
    if (!l->is_open) return;
    json_put_str(&l->open, "tile", tile);
    if (l->open_skip || l->open_key < 0) return;
    /* the Tile a fused consumer no longer reads sits in the same graph; its
    ** path is copied, since adding the tile's key may move the key texts */
    const char *node = l->key_text.p + l->keys[l->open_key].at;
    size_t pn = (size_t)(strchr(node, '\x1f') - node);
    char small[256], *path = pn < sizeof small ? small : malloc(pn + 1);
    int32_t k = -1;
    if (path) {
        memcpy(path, node, pn);
        k = key_get(l, path, pn, tile);
        if (path != small) free(path);
    }
    if (k < 0) l->failed = true;
    else l->keys[k].named |= NAMED_TILE;
}

json_w *pass_log_begin(pass_log *l, const char *node, const char *op, const char *graph,
                       const char *action) {
    close_open(l);
    if (l->failed) return NULL;
    if (l->n_recs == l->cap_recs) {
        size_t cap = l->cap_recs ? l->cap_recs * 2 : 256;
        log_record *r = realloc(l->recs, cap * sizeof *r);
        if (!r) {
            l->failed = true;
            return NULL;
        }
        l->recs = r;
        l->cap_recs = cap;
    }
    bool skip = strcmp(action, "skipped") == 0;
    int32_t key = node[0] ? key_get(l, graph ? graph : "", graph ? strlen(graph) : 0, node) : -1;
    if (node[0] && key < 0) {
        l->failed = true;
        return NULL;
    }
    if (key >= 0) {
        if (skip) l->keys[key].skips++;
        else l->keys[key].named |= NAMED_NODE;
    }
    l->recs[l->n_recs++] = (log_record){l->text.len, skip ? key : -1};
    pass_text_put(&l->text, ",\n", 2);
    pass_text_indent(&l->text, RECORD_DEPTH);
    json_w *w = &l->open;
    json_object(w);
    json_put_str(w, "node", node);
    json_put_str(w, "op", op);
    if (graph) json_put_str(w, "graph", graph);
    json_put_str(w, "action", action);
    l->is_open = true;
    l->open_skip = skip;
    l->open_key = key;
    return w;
}

size_t pass_log_mark(pass_log *l) {
    close_open(l);
    return l->n_recs;
}

void pass_log_drop_skips(pass_log *l, size_t mark) {
    close_open(l);
    size_t kept = mark, to = mark < l->n_recs ? l->recs[mark].start : l->text.len;
    for (size_t i = mark; i < l->n_recs; i++) {
        size_t from = l->recs[i].start;
        size_t end = i + 1 < l->n_recs ? l->recs[i + 1].start : l->text.len;
        if (l->recs[i].skip_key >= 0) {
            l->keys[l->recs[i].skip_key].skips--;
            continue;
        }
        memmove(l->text.p + to, l->text.p + from, end - from);
        l->recs[kept++] = (log_record){to, -1};
        to += end - from;
    }
    l->n_recs = kept;
    l->text.len = to;
}

bool pass_log_names(pass_log *l, const char *graph, const char *node) {
    close_open(l);
    size_t pn = graph ? strlen(graph) : 0;
    if (!graph) graph = "";
    int32_t k = key_find(l, graph, pn, node, key_hash(graph, pn, node));
    return k >= 0 && l->keys[k].named;
}

int pass_log_finish(pass_log *l, char **json, size_t *changed, size_t *skipped) {
    *json = NULL;
    close_open(l);
    *changed = *skipped = 0;
    for (uint32_t i = 0; i < l->n_keys; i++) {
        *changed += (l->keys[i].named & NAMED_NODE) != 0;
        *skipped += l->keys[i].skips != 0;
    }
    if (l->failed || l->text.failed) return TILEOPT_NOMEM; /* the text may be missing */
    if (l->n_recs) {
        l->text.p[0] = '['; /* the first record's comma */
        pass_text_put(&l->text, "\n", 1);
        pass_text_indent(&l->text, RECORD_DEPTH - 1);
        pass_text_put(&l->text, "]", 1);
    } else {
        pass_text_put(&l->text, "[]", 2);
    }
    pass_text_put(&l->text, "", 1); /* the terminator */
    if (l->failed || l->text.failed) return TILEOPT_NOMEM;
    *json = l->text.p;
    l->text = (pass_text){0};
    l->n_recs = 0;
    return TILEOPT_OK;
}

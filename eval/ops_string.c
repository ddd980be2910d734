/*
** The text ops: StringNormalizer and TfIdfVectorizer, what converters of
** bag-of-words models (scikit-learn's CountVectorizer and TfidfVectorizer) emit
** around their tokenizer. Their expected behaviour is that of ONNX Runtime, which
** those converters are checked against, wherever the spec leaves room.
**
** Case mapping is the simple Unicode one of glibc's C.UTF-8 LC_CTYPE, used
** through towlower_l/towupper_l on a locale object made for the call: setlocale
** and uselocale would change what other threads see. glibc's other locales map
** as this one does but the Turkic ones (dotted and dotless i), refused here.
** Bytes that are not UTF-8 pass through unchanged rather than failing the run.
**
** The n-gram pool of TfIdfVectorizer is a trie held in one hash table of edges
** (parent node, item) -> child, so each position of the input costs one lookup
** per n-gram length whatever the size of the pool. String items are first
** numbered by an interning table, and the trie then only sees integers.
*/
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

#include "eval/eval_impl.h"

/* --------------------------------------------------------------- hashing */

static uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t hash_bytes(const uint8_t *p, size_t len) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return mix64(h ^ len);
}

/* A power of two at least twice n, so that probes stay short; false when the
** table of entries of esz bytes would not fit in memory. */
static bool table_cap(size_t n, size_t esz, size_t *cap) {
    size_t c = 8;
    while (c / 2 < n) {
        if (c > SIZE_MAX / 2) return false;
        c *= 2;
    }
    if (c > SIZE_MAX / esz) return false;
    *cap = c;
    return true;
}

/* A set of byte strings, each with a value (its number when interning). The
** strings are borrowed: they outlive the table. */
typedef struct str_slot {
    const uint8_t *p;
    size_t len;
    int64_t val; /* -1: empty slot */
} str_slot;
typedef struct str_set {
    str_slot *slot;
    size_t cap, n;
} str_set;

static bool str_set_init(str_set *s, size_t n) {
    s->slot = NULL;
    s->n = 0;
    if (!table_cap(n, sizeof *s->slot, &s->cap)) return false;
    s->slot = malloc(s->cap * sizeof *s->slot);
    if (!s->slot) return false;
    for (size_t i = 0; i < s->cap; i++) s->slot[i].val = -1;
    return true;
}

static str_slot *str_set_slot(const str_set *s, const uint8_t *p, size_t len) {
    size_t m = s->cap - 1;
    for (size_t i = (size_t)hash_bytes(p, len) & m;; i = (i + 1) & m) {
        str_slot *e = &s->slot[i];
        if (e->val < 0 || (e->len == len && (!len || !memcmp(e->p, p, len)))) return e;
    }
}

/* The value of p, or -1. */
static int64_t str_set_find(const str_set *s, const uint8_t *p, size_t len) {
    return s->cap ? str_set_slot(s, p, len)->val : -1;
}

/* The value of p, adding it with value s->n when new (the caller sized the
** table for every string it adds). */
static int64_t str_set_add(str_set *s, const uint8_t *p, size_t len) {
    str_slot *e = str_set_slot(s, p, len);
    if (e->val < 0) {
        e->p = p;
        e->len = len;
        e->val = (int64_t)s->n++;
    }
    return e->val;
}

/* ------------------------------------------------------------ case mapping */

typedef enum { CASE_NONE, CASE_LOWER, CASE_UPPER } case_action;

/* The code point at s[0..len), its length in *n; false when the bytes there
** are not well-formed UTF-8 (overlong forms and surrogates included). */
static bool utf8_decode(const uint8_t *s, size_t len, uint32_t *cp, size_t *n) {
    uint8_t b = s[0];
    uint32_t c, min;
    size_t k;
    if (b < 0x80) {
        *cp = b;
        *n = 1;
        return true;
    }
    if (b >= 0xc2 && b <= 0xdf) k = 2, c = b & 0x1fu, min = 0x80;
    else if (b >= 0xe0 && b <= 0xef) k = 3, c = b & 0x0fu, min = 0x800;
    else if (b >= 0xf0 && b <= 0xf4) k = 4, c = b & 0x07u, min = 0x10000;
    else return false;
    if (len < k) return false;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80) return false;
        c = (c << 6) | (s[i] & 0x3fu);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return false;
    *cp = c;
    *n = k;
    return true;
}

static size_t utf8_encode(uint32_t c, uint8_t *d) {
    if (c < 0x80) {
        d[0] = (uint8_t)c;
        return 1;
    }
    if (c < 0x800) {
        d[0] = (uint8_t)(0xc0 | (c >> 6));
        d[1] = (uint8_t)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        d[0] = (uint8_t)(0xe0 | (c >> 12));
        d[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
        d[2] = (uint8_t)(0x80 | (c & 0x3f));
        return 3;
    }
    d[0] = (uint8_t)(0xf0 | (c >> 18));
    d[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3f));
    d[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
    d[3] = (uint8_t)(0x80 | (c & 0x3f));
    return 4;
}

/* s[0..len) case-mapped into dst (NULL: only measure); returns the length,
** which may differ from len (U+023A lowers to the three-byte U+2C65). Without
** a locale (C.UTF-8 missing) only ASCII letters map. */
static size_t case_map(const uint8_t *s, size_t len, case_action act, locale_t loc,
                       uint8_t *dst) {
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        uint32_t c;
        size_t k;
        uint8_t tmp[4];
        if (!utf8_decode(s + i, len - i, &c, &k)) {
            if (dst) dst[o] = s[i];
            o++;
            i++;
            continue;
        }
        i += k;
        if (loc) {
            wint_t w = act == CASE_LOWER ? towlower_l((wint_t)c, loc) : towupper_l((wint_t)c, loc);
            /* a mapping that leaves Unicode would not encode back */
            if (w <= 0x10ffff && !(w >= 0xd800 && w <= 0xdfff)) c = (uint32_t)w;
        } else if (act == CASE_LOWER && c >= 'A' && c <= 'Z') {
            c += 'a' - 'A';
        } else if (act == CASE_UPPER && c >= 'a' && c <= 'z') {
            c -= 'a' - 'A';
        }
        size_t e = utf8_encode(c, dst ? dst + o : tmp);
        o += e;
    }
    return o;
}

/* Is the attribute a the string s? */
static bool attr_is(const Onnx__AttributeProto *a, const char *s) {
    size_t len = strlen(s);
    return a->s.len == len && (!len || !memcmp(a->s.data, s, len));
}

/* Turkish and Azeri map i and I to and from dotted and dotless forms. */
static bool locale_is_turkic(const Onnx__AttributeProto *a) {
    if (!a || !a->has_s || a->s.len < 2) return false;
    const uint8_t *p = a->s.data;
    bool tr = (p[0] | 0x20) == 't' && (p[1] | 0x20) == 'r';
    bool az = (p[0] | 0x20) == 'a' && (p[1] | 0x20) == 'z';
    return (tr || az) && (a->s.len == 2 || (p[2] && strchr("_-.@", p[2])));
}

/* ------------------------------------------------------- StringNormalizer */

/*
** Drops the stopwords from X ([C] or [1, C]) and changes the case of the rest.
** Without case sensitivity, words and stopwords are compared in the case the
** output takes (lower when the action is NONE), as ONNX Runtime compares them.
** An output with nothing left holds one empty string.
*/
static int k_string_normalizer(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 1 || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "StringNormalizer %s: needs an input", nm);
    tensor *X = in[0];
    if (X->elem != DT_STRING)
        return err_set(err, TILEOPT_INVALID, "StringNormalizer %s: input of type %s, not strings",
                       nm, dtype_name(X->elem));
    if (X->rank != 1 && !(X->rank == 2 && X->dims[0] == 1))
        return err_set(err, TILEOPT_INVALID, "StringNormalizer %s: input must be [C] or [1, C]",
                       nm);
    const Onnx__AttributeProto *a = graph_attr(n, "case_change_action");
    case_action act = CASE_NONE;
    if (a && a->has_s && !attr_is(a, "NONE")) {
        if (attr_is(a, "LOWER")) act = CASE_LOWER;
        else if (attr_is(a, "UPPER")) act = CASE_UPPER;
        else
            return err_set(err, TILEOPT_INVALID, "StringNormalizer %s: case_change_action "
                           "\"%.*s\" is none of LOWER, UPPER, NONE", nm,
                           (int)(a->s.len > 40 ? 40 : a->s.len), (const char *)a->s.data);
    }
    bool sensitive = graph_attr_int(n, "is_case_sensitive", 0) != 0;
    const Onnx__AttributeProto *lc = graph_attr(n, "locale");
    if (locale_is_turkic(lc))
        return err_set(err, TILEOPT_UNSUPPORTED, "StringNormalizer %s: locale \"%.*s\" (only "
                       "the Unicode default case mapping is implemented)", nm, (int)lc->s.len,
                       (const char *)lc->s.data);
    const Onnx__AttributeProto *sw = graph_attr(n, "stopwords");
    size_t n_stop = sw ? sw->n_strings : 0;
    case_action cmp = sensitive || !n_stop ? CASE_NONE : act == CASE_UPPER ? CASE_UPPER
                                                                          : CASE_LOWER;

    int rc = TILEOPT_OK;
    locale_t loc = (locale_t)0;
    tensor *x = NULL, *y = NULL;
    str_set stop = {0};
    uint8_t *stop_bytes = NULL, *scratch = NULL;
    bool *keep = NULL;
    size_t scratch_cap = 0;
    if (act != CASE_NONE || cmp != CASE_NONE)
        loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    if (n_stop && !str_set_init(&stop, n_stop)) goto nomem;
    if (cmp != CASE_NONE) {
        /* the mapped stopwords, end to end */
        uint64_t total = 0;
        for (size_t i = 0; i < n_stop; i++)
            if (!eval_add_u64(total, case_map(sw->strings[i].data, sw->strings[i].len, cmp, loc,
                                              NULL), &total))
                goto nomem;
        if (total > SIZE_MAX - 1 || !(stop_bytes = malloc((size_t)total + 1))) goto nomem;
        size_t off = 0;
        for (size_t i = 0; i < n_stop; i++) {
            uint8_t *d = stop_bytes + off;
            size_t len = case_map(sw->strings[i].data, sw->strings[i].len, cmp, loc, d);
            str_set_add(&stop, d, len);
            off += len;
        }
    } else {
        for (size_t i = 0; i < n_stop; i++)
            str_set_add(&stop, sw->strings[i].data, sw->strings[i].len);
    }

    if ((rc = eval_cast(X, DT_STRING, env, &x, err))) goto done;
    const graph_bytes *s = (const graph_bytes *)(const void *)x->data;
    uint64_t C = tensor_numel(x), kept = 0;
    if (!(keep = malloc(C ? (size_t)C : 1))) goto nomem;
    for (uint64_t i = 0; i < C; i++) {
        const uint8_t *p = s[i].data;
        size_t len = s[i].len;
        if (cmp != CASE_NONE) {
            size_t m = case_map(p, len, cmp, loc, NULL);
            if (m > scratch_cap) {
                free(scratch);
                scratch_cap = m;
                if (!(scratch = malloc(m))) goto nomem;
            }
            len = case_map(p, len, cmp, loc, scratch);
            p = scratch;
        }
        keep[i] = str_set_find(&stop, p, len) < 0;
        kept += keep[i];
    }

    int64_t dims[2] = {1, kept ? (int64_t)kept : 1};
    if ((rc = tensor_alloc(DT_STRING, dims + (X->rank == 1), X->rank, env, &y, err))) goto done;
    graph_bytes *o = (graph_bytes *)(void *)y->data;
    for (uint64_t i = 0, j = 0; i < C; i++) {
        if (!keep[i]) continue;
        if (act == CASE_NONE) {
            o[j++] = s[i];
            continue;
        }
        size_t m = case_map(s[i].data, s[i].len, act, loc, NULL);
        uint8_t *p = tbuf_bytes(y->buf, m + 1);
        if (!p) goto nomem;
        case_map(s[i].data, s[i].len, act, loc, p);
        p[m] = '\0';
        o[j].data = p;
        o[j++].len = m;
    }
    if (act == CASE_NONE && kept && !tensor_keep(y, x)) goto nomem;
    out[0] = y;
    y = NULL;
    goto done;
nomem:
    rc = err_set(err, TILEOPT_NOMEM, "StringNormalizer %s: out of memory", nm);
done:
    if (loc) freelocale(loc);
    free(stop.slot);
    free(stop_bytes);
    free(scratch);
    free(keep);
    tensor_free(x);
    tensor_free(y);
    return rc;
}

/* -------------------------------------------------------- TfIdfVectorizer */

/* The pool as a trie: node 0 is the root, id[v] is 1 + the number of the
** n-gram ending at node v in the pool (0: a prefix only). */
typedef struct trie_edge {
    int64_t key;
    uint32_t parent, child; /* child 0: empty slot */
} trie_edge;
typedef struct trie {
    trie_edge *edge;
    size_t cap;
    uint32_t n_nodes;
    int64_t *id;
} trie;

static trie_edge *trie_slot(const trie *t, uint32_t parent, int64_t key) {
    size_t m = t->cap - 1;
    for (size_t i = (size_t)mix64((uint64_t)key ^ mix64(parent)) & m;; i = (i + 1) & m) {
        trie_edge *e = &t->edge[i];
        if (!e->child || (e->parent == parent && e->key == key)) return e;
    }
}

/* The child of parent by key, 0 when absent. */
static uint32_t trie_find(const trie *t, uint32_t parent, int64_t key) {
    return trie_slot(t, parent, key)->child;
}

/* The child of parent by key, added when absent (the table has room for one
** node per pool item). */
static uint32_t trie_add(trie *t, uint32_t parent, int64_t key) {
    trie_edge *e = trie_slot(t, parent, key);
    if (!e->child) {
        e->key = key;
        e->parent = parent;
        e->child = t->n_nodes++;
    }
    return e->child;
}

typedef enum { TF_TF, TF_IDF, TF_TFIDF } tf_mode;

/* What the attributes say, checked. */
typedef struct tf_plan {
    tf_mode mode;
    int64_t min_len, max_len, max_skip, out_size;
    const int64_t *index; /* ngram_indexes */
    size_t n_index;
    const float *weights; /* NULL: all 1 */
    const Onnx__AttributeProto *pool_i, *pool_s;
    size_t pool_n;
    int64_t depth; /* the longest n-gram loaded into the trie */
} tf_plan;

static int tf_attrs(const Onnx__NodeProto *n, tf_plan *p, errbuf *err) {
    const char *nm = eval_node_name(n);
    const char *req[] = {"mode", "min_gram_length", "max_gram_length", "max_skip_count",
                         "ngram_counts", "ngram_indexes"};
    for (size_t i = 0; i < countof(req); i++)
        if (!graph_attr(n, req[i]))
            return err_set(err, TILEOPT_INVALID, "TfIdfVectorizer %s: attribute %s is missing",
                           nm, req[i]);
    const Onnx__AttributeProto *a = graph_attr(n, "mode");
    if (attr_is(a, "TF")) p->mode = TF_TF;
    else if (attr_is(a, "IDF")) p->mode = TF_IDF;
    else if (attr_is(a, "TFIDF")) p->mode = TF_TFIDF;
    else
        return err_set(err, TILEOPT_INVALID, "TfIdfVectorizer %s: mode \"%.*s\" is none of TF, "
                       "IDF, TFIDF", nm, (int)(a->s.len > 40 ? 40 : a->s.len),
                       (const char *)a->s.data);
    p->min_len = graph_attr_int(n, "min_gram_length", 0);
    p->max_len = graph_attr_int(n, "max_gram_length", 0);
    p->max_skip = graph_attr_int(n, "max_skip_count", -1);
    if (p->min_len < 1 || p->max_len < p->min_len || p->max_skip < 0)
        return err_set(err, TILEOPT_INVALID, "TfIdfVectorizer %s: gram lengths %lld to %lld and "
                       "max_skip_count %lld, need 1 <= min <= max and a count >= 0", nm,
                       (long long)p->min_len, (long long)p->max_len, (long long)p->max_skip);
    a = graph_attr(n, "ngram_indexes");
    p->index = a->ints;
    p->n_index = a->n_ints;
    if (!p->n_index)
        return err_set(err, TILEOPT_INVALID, "TfIdfVectorizer %s: ngram_indexes is empty", nm);
    int64_t mx = 0;
    for (size_t i = 0; i < p->n_index; i++) {
        if (p->index[i] < 0 || p->index[i] == INT64_MAX)
            return err_set(err, TILEOPT_INVALID, "TfIdfVectorizer %s: ngram_indexes[%zu] = %lld "
                           "is out of range", nm, i, (long long)p->index[i]);
        if (p->index[i] > mx) mx = p->index[i];
    }
    p->out_size = mx + 1;
    p->pool_i = graph_attr(n, "pool_int64s");
    p->pool_s = graph_attr(n, "pool_strings");
    if (!p->pool_i == !p->pool_s)
        return err_set(err, TILEOPT_INVALID, "TfIdfVectorizer %s: needs exactly one of "
                       "pool_int64s and pool_strings, has %s", nm, p->pool_i ? "both" : "neither");
    p->pool_n = p->pool_i ? p->pool_i->n_ints : p->pool_s->n_strings;
    /* ONNX Runtime and the ONNX reference scale output coordinate i by
    ** weights[i], and converters write the weights in that order; it is the
    ** spec's "weight of the i-th n-gram" when ngram_indexes is 0, 1, 2, ... */
    a = graph_attr(n, "weights");
    p->weights = a && a->n_floats && p->mode != TF_TF ? a->floats : NULL;
    if (p->weights && a->n_floats < (uint64_t)p->out_size)
        return err_set(err, TILEOPT_INVALID, "TfIdfVectorizer %s: %zu weights for %lld outputs",
                       nm, a->n_floats, (long long)p->out_size);
    return TILEOPT_OK;
}

/* The pool's n-grams of the lengths asked for into t, numbered through all
** lengths as ngram_counts lays them out; string items become their numbers in
** strs. */
static int tf_build(const Onnx__NodeProto *n, tf_plan *p, trie *t, str_set *strs,
                    errbuf *err) {
    const char *nm = eval_node_name(n);
    const Onnx__AttributeProto *ca = graph_attr(n, "ngram_counts");
    const int64_t *counts = ca->ints;
    size_t levels = ca->n_ints, total = p->pool_n;
    if (total >= UINT32_MAX)
        return err_set(err, TILEOPT_LIMIT, "TfIdfVectorizer %s: pool of %zu items", nm, total);
    if (!table_cap(total + 1, sizeof *t->edge, &t->cap) ||
        !(t->edge = calloc(t->cap, sizeof *t->edge)) ||
        !(t->id = calloc(total + 1, sizeof *t->id)))
        return err_set(err, TILEOPT_NOMEM, "TfIdfVectorizer %s: out of memory", nm);
    t->n_nodes = 1;
    if (p->pool_s && !str_set_init(strs, total))
        return err_set(err, TILEOPT_NOMEM, "TfIdfVectorizer %s: out of memory", nm);
    uint64_t id = 1;
    p->depth = 0;
    for (size_t i = 0; i < levels; i++) {
        uint64_t size = (uint64_t)i + 1;
        int64_t start = counts[i], end = i + 1 < levels ? counts[i + 1] : (int64_t)total;
        if (start < 0 || end < start || (uint64_t)end > total)
            return err_set(err, TILEOPT_INVALID, "TfIdfVectorizer %s: ngram_counts[%zu] = %lld "
                           "to %lld is not an increasing range of the pool's %zu items", nm, i,
                           (long long)start, (long long)end, total);
        uint64_t items = (uint64_t)(end - start);
        if (items % size)
            return err_set(err, TILEOPT_INVALID, "TfIdfVectorizer %s: %llu items of %llu-grams "
                           "are not whole n-grams", nm, (unsigned long long)items,
                           (unsigned long long)size);
        uint64_t grams = items / size;
        if (id - 1 + grams > p->n_index)
            return err_set(err, TILEOPT_INVALID, "TfIdfVectorizer %s: the pool holds more "
                           "n-grams than the %zu of ngram_indexes", nm, p->n_index);
        if ((int64_t)size < p->min_len || (int64_t)size > p->max_len) {
            id += grams;
            continue;
        }
        if (grams) p->depth = (int64_t)size;
        for (uint64_t g = 0; g < grams; g++, id++) {
            uint32_t v = 0;
            for (uint64_t k = 0; k < size; k++) {
                size_t at = (size_t)start + (size_t)(g * size + k);
                int64_t key = p->pool_i ? p->pool_i->ints[at]
                                        : str_set_add(strs, p->pool_s->strings[at].data,
                                                      p->pool_s->strings[at].len);
                v = trie_add(t, v, key);
            }
            /* a repeated n-gram counts where its last copy says */
            t->id[v] = (int64_t)id;
        }
    }
    return TILEOPT_OK;
}

/* Counts of row x[0..C) into cnt[0..out_size): every n-gram of length
** min_len..max_len whose items are d apart for d = 1..max_skip+1, a unigram
** once (it has no gaps to vary). */
static void tf_count(const tf_plan *p, const trie *t, const int64_t *x, int64_t C,
                     uint64_t *cnt) {
    int64_t max_len = p->max_len < p->depth ? p->max_len : p->depth, start = p->min_len;
    if (max_len < start) return;
    /* items d apart with d >= C never make an n-gram of two */
    int64_t dmax = C < 2 || max_len < 2 ? 1 : p->max_skip >= C - 1 ? C - 1 : p->max_skip + 1;
    for (int64_t d = 1; d <= dmax; d++) {
        for (int64_t s = 0; s < C; s++) {
            /* no room left for start items d apart */
            if ((start - 1) > (C - 1 - s) / d) break;
            uint32_t v = 0;
            int64_t item = s;
            for (int64_t len = 1; len <= max_len && item < C; len++, item += d) {
                v = trie_find(t, v, x[item]);
                if (!v) break;
                if (len >= start && t->id[v]) cnt[p->index[t->id[v] - 1]]++;
            }
        }
        if (start == 1 && ++start > max_len) break;
    }
}

/*
** Counts the n-grams of the pool in each row of X ([C] or [N, C]; a scalar is
** one item) into Y ([out_size] or [N, out_size]), weighted as mode says.
*/
static int k_tfidf(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 1 || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "TfIdfVectorizer %s: needs an input", nm);
    tensor *X = in[0];
    tf_plan p = {0};
    int rc = tf_attrs(n, &p, err);
    if (rc) return rc;
    bool ints = X->elem == DT_INT32 || X->elem == DT_INT64;
    if (p.pool_i ? !ints : X->elem != DT_STRING)
        return err_set(err, TILEOPT_INVALID, "TfIdfVectorizer %s: input of type %s for %s", nm,
                       dtype_name(X->elem), p.pool_i ? "pool_int64s" : "pool_strings");
    if (X->rank > 2 || (X->rank == 2 && X->dims[0] < 1))
        return err_set(err, TILEOPT_INVALID, "TfIdfVectorizer %s: input must be [C] or [N, C] "
                       "with N > 0", nm);
    int64_t rows = X->rank == 2 ? X->dims[0] : 1;
    int64_t C = X->rank == 0 ? 1 : X->dims[X->rank - 1];

    trie t = {0};
    str_set strs = {0};
    tensor *x = NULL, *y = NULL;
    int64_t *keys = NULL;
    uint64_t *cnt = NULL;
    if ((rc = tf_build(n, &p, &t, &strs, err))) goto done;
    int64_t dims[2] = {rows, p.out_size};
    if ((rc = tensor_alloc(DT_FLOAT, dims + (X->rank < 2), X->rank < 2 ? 1 : 2, env, &y, err)))
        goto done;
    uint64_t cbytes;
    if (!eval_mul_u64((uint64_t)p.out_size, sizeof *cnt, &cbytes) || cbytes > SIZE_MAX ||
        !(cnt = malloc((size_t)cbytes)))
        goto nomem;
    const int64_t *kv;
    if (ints) {
        if ((rc = eval_cast(X, DT_INT64, env, &x, err))) goto done;
        kv = (const int64_t *)(const void *)x->data;
    } else {
        /* items outside the pool get -1, which no interned string has */
        if ((rc = eval_cast(X, DT_STRING, env, &x, err))) goto done;
        uint64_t numel = tensor_numel(x), kb;
        if (!eval_mul_u64(numel ? numel : 1, sizeof *keys, &kb) || kb > SIZE_MAX ||
            !(keys = malloc((size_t)kb)))
            goto nomem;
        const graph_bytes *s = (const graph_bytes *)(const void *)x->data;
        for (uint64_t i = 0; i < numel; i++) keys[i] = str_set_find(&strs, s[i].data, s[i].len);
        kv = keys;
    }
    float *yv = (float *)(void *)y->data;
    for (int64_t r = 0; r < rows; r++) {
        memset(cnt, 0, (size_t)cbytes);
        if (C) tf_count(&p, &t, kv + r * C, C, cnt);
        float *o = yv + r * p.out_size;
        for (int64_t i = 0; i < p.out_size; i++) {
            float w = p.weights ? p.weights[i] : 1.0f;
            switch (p.mode) {
            case TF_TF: o[i] = (float)cnt[i]; break;
            case TF_IDF: o[i] = cnt[i] ? w : 0.0f; break;
            case TF_TFIDF: o[i] = (float)cnt[i] * w; break;
            }
        }
    }
    out[0] = y;
    y = NULL;
    goto done;
nomem:
    rc = err_set(err, TILEOPT_NOMEM, "TfIdfVectorizer %s: out of memory", nm);
done:
    free(t.edge);
    free(t.id);
    free(strs.slot);
    free(keys);
    free(cnt);
    tensor_free(x);
    tensor_free(y);
    return rc;
}

const kernel_def kernel_table_string[] = {
    {OP_StringNormalizer, 10, k_string_normalizer},
    {OP_TfIdfVectorizer, 9, k_tfidf},
};
const size_t kernel_table_string_count = countof(kernel_table_string);

/* Tensors: refcounted storage, handles, layouts, and TensorProto conversion;
** sequences and optionals: their shared items, and their test-data messages. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "eval/eval_impl.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "raw_data is little-endian; tileopt assumes a little-endian host"
#endif

eval_env eval_env_of(const graph_limits *lim, graph_progress progress, const char *run_what) {
    eval_env env = {.progress = progress, .run_what = run_what};
    if (lim) env.lim = *lim;
    else graph_limits_default(&env.lim);
    return env;
}

void eval_env_default(eval_env *env) { *env = eval_env_of(NULL, (graph_progress){0}, NULL); }

/* ------------------------------------------------------------------ tbuf */

typedef struct tchunk {
    struct tchunk *next;
    size_t used, cap;
    _Alignas(16) uint8_t mem[];
} tchunk;

struct tbuf {
    size_t refs;
    uint8_t *data;
    size_t size;
    size_t map_size;   /* > 0: mmap'd */
    tchunk *chunks;    /* string bytes and names */
    tbuf **deps;
    size_t n_deps, cap_deps;
};

#define BIG_BYTES ((size_t)1 << 20)
#define HUGE_PAGE ((size_t)2 << 20)
#define CACHE_SLOTS 4
#define CACHE_MAX_BYTES ((size_t)1 << 30)

/* Freed big buffers, kept warm for the next allocation of a similar size. Per
** thread, so contexts on different threads never share one. */
static _Thread_local struct {
    uint8_t *p;
    size_t size;
} cache[CACHE_SLOTS];
static _Thread_local size_t cache_bytes;

static uint8_t *big_take(size_t size) {
    int best = -1;
    for (int i = 0; i < CACHE_SLOTS; i++) {
        /* A cached buffer much bigger than asked would pin memory for nothing. */
        if (cache[i].p && cache[i].size >= size && cache[i].size - size <= size / 4 &&
            (best < 0 || cache[i].size < cache[best].size))
            best = i;
    }
    if (best < 0) return NULL;
    uint8_t *p = cache[best].p;
    cache_bytes -= cache[best].size;
    cache[best].p = NULL;
    return p;
}

static void big_give(uint8_t *p, size_t size) {
    if (size <= CACHE_MAX_BYTES) {
        int slot = -1;
        for (int i = 0; i < CACHE_SLOTS; i++)
            if (!cache[i].p) slot = i;
        if (slot < 0) { /* evict the first: callers mostly cycle through sizes */
            munmap(cache[0].p, cache[0].size);
            cache_bytes -= cache[0].size;
            cache[0].p = NULL;
            slot = 0;
        }
        while (cache_bytes + size > CACHE_MAX_BYTES) {
            int v = -1;
            for (int i = 0; i < CACHE_SLOTS; i++)
                if (cache[i].p && (v < 0 || cache[i].size > cache[v].size)) v = i;
            if (v < 0) break;
            munmap(cache[v].p, cache[v].size);
            cache_bytes -= cache[v].size;
            cache[v].p = NULL;
        }
        if (cache_bytes + size <= CACHE_MAX_BYTES) {
            cache[slot].p = p;
            cache[slot].size = size;
            cache_bytes += size;
            return;
        }
    }
    munmap(p, size);
}

void tbuf_cache_drop(void) {
    for (int i = 0; i < CACHE_SLOTS; i++) {
        if (cache[i].p) munmap(cache[i].p, cache[i].size);
        cache[i].p = NULL;
    }
    cache_bytes = 0;
}

tbuf *tbuf_new(size_t bytes, bool zero) {
    tbuf *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->refs = 1;
    b->size = bytes;
    if (bytes >= BIG_BYTES) {
        size_t ms = (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        uint8_t *p = big_take(ms);
        if (p) {
            if (zero) memset(p, 0, bytes);
        } else {
            void *m = mmap(NULL, ms, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                           0);
            if (m == MAP_FAILED) {
                free(b);
                return NULL;
            }
            p = m;
            madvise(p, ms, MADV_HUGEPAGE); /* advisory: failure only costs speed */
        }
        b->data = p;
        b->map_size = ms;
        return b;
    }
    size_t n = (bytes + 63) & ~(size_t)63;
    b->data = aligned_alloc(64, n ? n : 64);
    if (!b->data) {
        free(b);
        return NULL;
    }
    if (zero) memset(b->data, 0, n ? n : 64);
    return b;
}

tbuf *tbuf_wrap(void *malloced, size_t bytes) {
    tbuf *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->refs = 1;
    b->data = malloced;
    b->size = bytes;
    return b;
}

tbuf *tbuf_retain(tbuf *b) {
    if (b) b->refs++;
    return b;
}

static void tbuf_drop(tbuf *b, bool cache) {
    if (!b || --b->refs > 0) return;
    if (b->map_size && cache)
        big_give(b->data, b->map_size);
    else if (b->map_size)
        munmap(b->data, b->map_size);
    else
        free(b->data);
    for (tchunk *c = b->chunks, *nx; c; c = nx) {
        nx = c->next;
        free(c);
    }
    for (size_t i = 0; i < b->n_deps; i++) tbuf_drop(b->deps[i], cache);
    free(b->deps);
    free(b);
}

void tbuf_release(tbuf *b) { tbuf_drop(b, true); }

void *tensor_storage_retain(const tensor *t) { return tbuf_retain(t->buf); }

void tensor_storage_release(void *storage) { tbuf_drop(storage, false); }

uint8_t *tbuf_data(tbuf *b) { return b->data; }

uint8_t *tbuf_bytes(tbuf *b, size_t n) {
    if (n > SIZE_MAX / 2) return NULL; /* the rounding and the chunk header must fit */
    n = (n + 15) & ~(size_t)15;
    tchunk *c = b->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 4096 ? n : 4096;
        c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->cap = cap;
        c->used = 0;
        c->next = b->chunks;
        b->chunks = c;
    }
    uint8_t *p = c->mem + c->used;
    c->used += n;
    return p;
}

bool tbuf_keep(tbuf *b, tbuf *dep) {
    if (!dep || dep == b) return true;
    for (size_t i = 0; i < b->n_deps; i++)
        if (b->deps[i] == dep) return true;
    if (b->n_deps == b->cap_deps) {
        size_t cap = b->cap_deps ? 2 * b->cap_deps : 4;
        tbuf **d = realloc(b->deps, cap * sizeof *d);
        if (!d) return false;
        b->deps = d;
        b->cap_deps = cap;
    }
    b->deps[b->n_deps++] = tbuf_retain(dep);
    return true;
}

/* --------------------------------------------------------------- tensors */

size_t tensor_elem_size(const tensor *t) {
    const dtype_info *d = dtype_get(t->elem);
    return d ? d->size : 0;
}

static void set_plain_layout(tensor *t, size_t esz) {
    t->vrank = t->rank;
    int64_t st = (int64_t)esz;
    for (int32_t i = t->rank - 1; i >= 0; i--) {
        t->vdims[i] = t->dims[i];
        t->vstrides[i] = st;
        /* An empty tensor may have other dims whose product overflows (check_shape
        ** only bounds the element count); its strides are never used then. */
        if (!eval_mul_i64(st, t->dims[i] > 0 ? t->dims[i] : 1, &st)) st = 0;
    }
}

static int check_shape(int32_t elem, const int64_t *dims, int32_t rank,
                       const eval_env *env, uint64_t *bytes, errbuf *err) {
    const dtype_info *d = dtype_get(elem);
    if (!d) return err_set(err, TILEOPT_INVALID, "unknown element type %d", elem);
    if (rank < 0 || rank > TENSOR_MAX_RANK)
        return err_set(err, TILEOPT_LIMIT, "rank %d outside 0..%d", rank, TENSOR_MAX_RANK);
    uint64_t n = 1;
    for (int32_t i = 0; i < rank; i++) {
        if (dims[i] < 0) return err_set(err, TILEOPT_INVALID, "negative dim %lld at axis %d",
                                        (long long)dims[i], i);
        if (!eval_mul_u64(n, (uint64_t)dims[i], &n) || n > (uint64_t)INT64_MAX)
            return err_set(err, TILEOPT_LIMIT, "element count overflows");
    }
    uint64_t b;
    if (!eval_mul_u64(n, d->size, &b) || b > SIZE_MAX / 2)
        return err_set(err, TILEOPT_LIMIT, "tensor size overflows");
    eval_env dl;
    if (!env) {
        eval_env_default(&dl);
        env = &dl;
    }
    if (env->lim.max_tensor_bytes && b > env->lim.max_tensor_bytes)
        return err_set(err, TILEOPT_LIMIT,
                       "tensor of %llu bytes exceeds the limit of %llu (max-tensor-bytes)",
                       (unsigned long long)b, (unsigned long long)env->lim.max_tensor_bytes);
    *bytes = b;
    return TILEOPT_OK;
}

static int tensor_make(int32_t elem, const int64_t *dims, int32_t rank,
                       const eval_env *env, bool zero, tensor **out, errbuf *err) {
    *out = NULL;
    uint64_t bytes;
    int rc = check_shape(elem, dims, rank, env, &bytes, err);
    if (rc) return rc;
    tensor *t = calloc(1, sizeof *t);
    if (!t) return err_set(err, TILEOPT_NOMEM, "out of memory");
    t->buf = tbuf_new((size_t)bytes, zero || elem == DT_STRING);
    if (!t->buf) {
        free(t);
        return err_set(err, TILEOPT_NOMEM, "out of memory for a tensor of %llu bytes",
                       (unsigned long long)bytes);
    }
    t->elem = elem;
    t->rank = rank;
    if (rank) memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
    set_plain_layout(t, dtype_get(elem)->size);
    t->data = tbuf_data(t->buf);
    *out = t;
    return TILEOPT_OK;
}

int tensor_new(int32_t elem, const int64_t *dims, int32_t rank, const eval_env *env,
               tensor **out, errbuf *err) {
    return tensor_make(elem, dims, rank, env, true, out, err);
}

int tensor_alloc(int32_t elem, const int64_t *dims, int32_t rank, const eval_env *env,
                 tensor **out, errbuf *err) {
    return tensor_make(elem, dims, rank, env, false, out, err);
}

int tensor_set_string(tensor *t, uint64_t i, const void *bytes, size_t len, errbuf *err) {
    if (t->elem != DT_STRING || !t->buf || !tensor_is_contiguous(t) || i >= tensor_numel(t))
        return err_set(err, TILEOPT_MISUSE, "tensor_set_string: element %llu of %s",
                       (unsigned long long)i, dtype_name(t->elem));
    if (len > SIZE_MAX / 2)
        return err_set(err, TILEOPT_LIMIT, "a string of %zu bytes", len);
    uint8_t *p = tbuf_bytes(t->buf, len + 1);
    if (!p) return err_set(err, TILEOPT_NOMEM, "out of memory for a string of %zu bytes", len);
    if (len) memcpy(p, bytes, len);
    p[len] = '\0';
    graph_bytes *s = (graph_bytes *)(void *)t->data;
    s[i].data = p;
    s[i].len = len;
    return TILEOPT_OK;
}

/* ---------------------------------------------------- values and items */

/* Sequences hold at most this many items: their arrays of pointers stay
** within 16 MB, and a count past it is bad data, not a model's. */
#define VALUE_MAX_ITEMS ((size_t)1 << 20)

/*
** The items of a sequence or optional: an array shared by every handle on the
** value (tensor_ref copies no item), whose slots point to items, each a handle
** shared by every value holding it (SequenceInsert copies pointers, not handles
** of a few KB). Both are counted, and carry their storage bytes, so what a Loop
** passes on each iteration costs the same however long its sequence is. An
** item's count lives in a small record of its own beside the array, not in the
** handle: a long sequence's counts then sit close together in memory, and
** SequenceInsert touches them, not one 2.6 KB handle per item.
*/
typedef struct titem {
    size_t refs;
    uint64_t bytes;          /* tensor_storage_bytes of t */
    tensor *t;
} titem;
typedef struct tseq {
    size_t refs;
    uint64_t bytes;          /* the items' bytes and handles */
    size_t n;
    tensor *items[];         /* what tensor.items points to; then n titem pointers */
} tseq;

static tseq *seq_of(const tensor *t) {
    return (tseq *)(void *)((char *)t->items - offsetof(tseq, items));
}
static titem **holders(tseq *q) { return (titem **)(void *)(q->items + q->n); }

uint64_t tensor_storage_bytes(const tensor *t) {
    if (!t) return 0;
    if (t->kind != EVAL_TENSOR) return t->items ? seq_of(t)->bytes : 0;
    if (!t->buf) return 0;
    const dtype_info *d = dtype_get(t->elem);
    uint64_t span = d ? d->size : 1;
    for (int32_t i = 0; i < t->vrank; i++) {
        if (t->vdims[i] == 0) return 0;
        int64_t s = t->vstrides[i] < 0 ? -t->vstrides[i] : t->vstrides[i];
        span += (uint64_t)(t->vdims[i] - 1) * (uint64_t)s;
    }
    return span;
}

static void item_release(titem *ti) {
    if (!ti || --ti->refs > 0) return;
    tensor_free(ti->t);
    free(ti);
}

/* What a handle holds: its storage, or its share of the items. */
static void handle_release(tensor *t) {
    tbuf_release(t->buf);
    if (!t->items) return;
    tseq *q = seq_of(t);
    if (--q->refs > 0) return;
    for (size_t i = 0; i < q->n; i++) item_release(holders(q)[i]);
    free(q);
}

tensor *tensor_share(const tensor *t) {
    tensor *c = malloc(sizeof *c);
    if (!c) return NULL;
    memcpy(c, t, sizeof *c);
    tbuf_retain(c->buf);
    if (c->items) seq_of(c)->refs++;
    return c;
}

tensor *tensor_ref(tensor *t) { return t ? tensor_share(t) : NULL; }

void tensor_free(tensor *t) {
    if (!t) return;
    handle_release(t);
    free(t);
}

const char *value_kind_name(int32_t kind) {
    static const char *const names[] = {"a tensor", "a sequence", "an optional",
                                        "a map or sparse tensor"};
    return kind >= 0 && (size_t)kind < countof(names) ? names[kind] : "a value";
}

int value_new(int32_t kind, int32_t elem, size_t n, tensor **out, errbuf *err) {
    *out = NULL;
    if (kind != EVAL_SEQUENCE && kind != EVAL_OPTIONAL)
        return err_set(err, TILEOPT_MISUSE, "value_new: kind %d", (int)kind);
    if (kind == EVAL_OPTIONAL && n > 1)
        return err_set(err, TILEOPT_MISUSE, "an optional of %zu items", n);
    if (n > VALUE_MAX_ITEMS)
        return err_set(err, TILEOPT_LIMIT, "a sequence of %zu items, over the limit of %zu", n,
                       VALUE_MAX_ITEMS);
    tensor *v = calloc(1, sizeof *v);
    tseq *q = calloc(1, sizeof *q + n * (sizeof *q->items + sizeof(titem *)));
    if (!v || !q) {
        free(v);
        free(q);
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    q->refs = 1;
    q->n = n;
    q->bytes = (uint64_t)n * (sizeof(titem) + sizeof(tensor));
    v->items = q->items;
    v->kind = kind;
    v->elem = elem;
    v->n_items = n;
    *out = v;
    return TILEOPT_OK;
}

/* Slots are filled while the value is built, before anything shares it. */
static bool fillable(const tensor *v, size_t i) {
    return v->items && i < v->n_items && !v->items[i] && seq_of(v)->refs == 1;
}

int value_put(tensor *v, size_t i, tensor *x, errbuf *err) {
    if (!fillable(v, i))
        return err_set(err, TILEOPT_MISUSE, "value_put: slot %zu of %zu", i, v->n_items);
    if (v->kind == EVAL_SEQUENCE && x->kind != EVAL_TENSOR)
        return err_set(err, TILEOPT_UNSUPPORTED,
                       "a sequence cannot hold %s: the evaluator's sequences hold tensors",
                       value_kind_name(x->kind));
    if (v->kind == EVAL_OPTIONAL && x->kind == EVAL_OPTIONAL)
        return err_set(err, TILEOPT_UNSUPPORTED, "an optional of an optional");
    /* an empty sequence with no declared type takes its first item's */
    bool fresh = v->kind == EVAL_OPTIONAL || !v->elem;
    if (!fresh && x->elem != v->elem)
        return err_set(err, TILEOPT_INVALID,
                       "a sequence of %s tensors cannot hold a tensor of %s",
                       dtype_name(v->elem), dtype_name(x->elem));
    titem *ti = malloc(sizeof *ti);
    if (ti) ti->t = tensor_share(x);
    if (!ti || !ti->t) {
        free(ti);
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    ti->refs = 1;
    ti->bytes = tensor_storage_bytes(x);
    tseq *q = seq_of(v);
    holders(q)[i] = ti;
    v->items[i] = ti->t;
    if (!eval_add_u64(q->bytes, ti->bytes, &q->bytes)) q->bytes = UINT64_MAX;
    if (fresh) v->elem = x->elem;
    return TILEOPT_OK;
}

void value_share(tensor *v, size_t i, const tensor *w, size_t j) {
    titem *ti = holders(seq_of(w))[j];
    ti->refs++;
    tseq *q = seq_of(v);
    holders(q)[i] = ti;
    v->items[i] = ti->t;
    if (!eval_add_u64(q->bytes, ti->bytes, &q->bytes)) q->bytes = UINT64_MAX;
}

/* A new value of t's kind whose items are fn of t's items (fn makes new handles). */
int value_map(tensor *t, int (*fn)(tensor *, const eval_env *, tensor **, errbuf *),
              const eval_env *env, tensor **out, errbuf *err) {
    tensor *v = NULL;
    int rc = value_new(t->kind, t->elem, t->n_items, &v, err);
    for (size_t i = 0; i < t->n_items && !rc; i++) {
        tensor *x = NULL;
        rc = fn(t->items[i], env, &x, err);
        if (!rc) rc = value_put(v, i, x, err);
        tensor_free(x);
    }
    if (rc) {
        tensor_free(v);
        return rc;
    }
    v->name = t->name;
    *out = v;
    return TILEOPT_OK;
}

bool tensor_keep(tensor *dst, const tensor *src) {
    if (dst->elem != DT_STRING || !src->buf || !dst->buf) return true;
    return tbuf_keep(dst->buf, src->buf);
}

bool tensor_tile_axes(const tensor *t, tile_axis *ax) {
    if (t->vrank == t->rank) {
        for (int32_t i = 0; i < t->rank; i++) {
            ax[i].d = t->vdims[i];
            ax[i].s = t->vstrides[i];
            ax[i].r = 1;
        }
        return true;
    }
    if (!tensor_is_paired(t)) return false;
    for (int32_t i = 0; i < t->rank; i++) {
        int64_t r = t->vdims[2 * i], d = t->vdims[2 * i + 1];
        if (r > 1 && d != 0 && t->vstrides[2 * i] != 0) return false;
        ax[i].d = d;
        ax[i].s = t->vstrides[2 * i + 1];
        ax[i].r = r;
    }
    return true;
}

uint64_t tensor_numel(const tensor *t) {
    uint64_t n = 1;
    for (int32_t i = 0; i < t->rank; i++) n *= (uint64_t)t->dims[i];
    return n;
}

uint64_t tensor_nbytes(const tensor *t) { return tensor_numel(t) * tensor_elem_size(t); }

bool tensor_is_contiguous(const tensor *t) {
    if (tensor_numel(t) == 0) return true;
    tile_axis ax[TENSOR_MAX_RANK];
    if (!tensor_tile_axes(t, ax)) return false;
    int64_t expect = (int64_t)tensor_elem_size(t);
    for (int32_t i = t->rank - 1; i >= 0; i--) {
        if (ax[i].d * ax[i].r == 1) continue;
        if (ax[i].r != 1 || ax[i].s != expect) return false;
        expect *= ax[i].d;
    }
    return true;
}

int tensor_contiguous(tensor *t, const eval_env *env, tensor **out, errbuf *err) {
    *out = NULL;
    if (t->kind != EVAL_TENSOR) return value_map(t, tensor_contiguous, env, out, err);
    if (tensor_is_contiguous(t)) {
        tensor *c = tensor_share(t);
        if (!c) return err_set(err, TILEOPT_NOMEM, "out of memory");
        set_plain_layout(c, tensor_elem_size(t));
        *out = c;
        return TILEOPT_OK;
    }
    tile_axis ax[TENSOR_MAX_RANK];
    if (!tensor_tile_axes(t, ax))
        return err_set(err, TILEOPT_ERROR, "tensor %s: unsupported view layout",
                       t->name ? t->name : "?");
    tensor *c;
    int rc = tensor_alloc(t->elem, t->dims, t->rank, env, &c, err);
    if (rc) return rc;
    tile_fill(c->data, t->data, tensor_elem_size(t), ax, t->rank, env, t->name);
    if (!tensor_keep(c, t)) {
        tensor_free(c);
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    c->name = t->name;
    *out = c;
    return TILEOPT_OK;
}

/* Element at a logical row-major index, through the view. For small tensors. */
static const uint8_t *tensor_at(const tensor *t, uint64_t idx) {
    tile_axis ax[TENSOR_MAX_RANK];
    if (!tensor_tile_axes(t, ax)) return NULL;
    int64_t off = 0;
    for (int32_t i = t->rank - 1; i >= 0; i--) {
        uint64_t len = (uint64_t)t->dims[i];
        uint64_t c = idx % len;
        idx /= len;
        off += (int64_t)(c % (uint64_t)ax[i].d) * ax[i].s;
    }
    return t->data + off;
}

bool tensor_to_i64(const tensor *t, int64_t *out, size_t cap, size_t *count) {
    if (t->rank > 1) return false;
    const dtype_info *d = dtype_get(t->elem);
    if (!d || (d->kind != KIND_SINT && d->kind != KIND_UINT)) return false;
    uint64_t n = tensor_numel(t);
    if (n > cap) return false;
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *p = tensor_at(t, i);
        if (!p) return false;
        int64_t v;
        switch (t->elem) {
        case DT_INT8: { int8_t x; memcpy(&x, p, 1); v = x; break; }
        case DT_UINT8: v = *p; break;
        case DT_INT16: { int16_t x; memcpy(&x, p, 2); v = x; break; }
        case DT_UINT16: { uint16_t x; memcpy(&x, p, 2); v = x; break; }
        case DT_INT32: { int32_t x; memcpy(&x, p, 4); v = x; break; }
        case DT_UINT32: { uint32_t x; memcpy(&x, p, 4); v = x; break; }
        case DT_INT64: memcpy(&v, p, 8); break;
        case DT_UINT64: {
            uint64_t x;
            memcpy(&x, p, 8);
            if (x > (uint64_t)INT64_MAX) return false;
            v = (int64_t)x;
            break;
        }
        default: return false;
        }
        out[i] = v;
    }
    *count = (size_t)n;
    return true;
}

/* ------------------------------------------------------------ TensorProto */

/* A tensor over the values graph_tensor_read produced; copies when the bytes are
** borrowed but misaligned for the element type, or when `copy` asks (the source
** goes away: tensor_decode). */
static int tensor_from_data(graph_tensor_data *d, const char *name, bool copy,
                            const eval_env *env, tensor **out, errbuf *err) {
    *out = NULL;
    uint64_t bytes;
    int rc = check_shape(d->elem, d->dims, d->rank, env, &bytes, err);
    if (rc) goto fail;
    if (bytes != d->nbytes) {
        rc = err_set(err, TILEOPT_INVALID,
                     "tensor %s: %zu bytes of data for a %s tensor that needs %llu",
                     name ? name : "?", d->nbytes, dtype_name(d->elem),
                     (unsigned long long)bytes);
        goto fail;
    }
    size_t esz = dtype_get(d->elem)->size;
    size_t align = esz >= 8 ? 8 : esz;
    bool misaligned = d->data && ((uintptr_t)d->data % align) != 0;
    tensor *t = calloc(1, sizeof *t);
    if (!t) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto fail;
    }
    t->elem = d->elem;
    t->rank = d->rank;
    if (d->rank) memcpy(t->dims, d->dims, (size_t)d->rank * sizeof *d->dims);
    set_plain_layout(t, esz);
    if (d->owned && !copy && !misaligned) {
        t->buf = tbuf_wrap(d->data, d->nbytes);
        if (!t->buf) goto nomem;
        d->owned = false; /* the tbuf frees it now */
        t->data = d->data;
    } else if (!copy && !misaligned && d->data && d->elem != DT_STRING) {
        t->data = d->data; /* borrowed from the model, which outlives evaluation */
    } else {
        t->buf = tbuf_new(d->nbytes, false);
        if (!t->buf) goto nomem;
        t->data = tbuf_data(t->buf);
        if (d->nbytes) memcpy(t->data, d->data, d->nbytes);
        if (d->elem == DT_STRING && copy) { /* the bytes go with the proto */
            graph_bytes *s = (graph_bytes *)(void *)t->data;
            for (uint64_t i = 0; i < bytes / sizeof *s; i++) {
                uint8_t *p = tbuf_bytes(t->buf, s[i].len + 1);
                if (!p) goto nomem;
                if (s[i].len) memcpy(p, s[i].data, s[i].len);
                p[s[i].len] = '\0';
                s[i].data = p;
            }
        }
    }
    if (d->owned) free(d->data);
    d->owned = false;
    t->name = name;
    if (copy && name) {
        size_t n = strlen(name) + 1;
        uint8_t *p = t->buf ? tbuf_bytes(t->buf, n) : NULL;
        if (!p) {
            tensor_free(t);
            return err_set(err, TILEOPT_NOMEM, "out of memory");
        }
        memcpy(p, name, n);
        t->name = (const char *)p;
    }
    *out = t;
    return TILEOPT_OK;
nomem:
    tensor_free(t);
    rc = err_set(err, TILEOPT_NOMEM, "out of memory");
fail:
    if (d->owned) free(d->data);
    d->owned = false;
    return rc;
}

int tensor_from_proto(graph_model *m, const Onnx__TensorProto *p, const eval_env *env,
                      tensor **out, errbuf *err) {
    *out = NULL;
    graph_tensor_data d;
    int rc = graph_tensor_read(m, p, &d, err);
    if (rc) return rc;
    return tensor_from_data(&d, p->name, false, env, out, err);
}

Onnx__TensorProto *tensor_to_proto(graph_model *m, const char *name, const tensor *t,
                                   errbuf *err) {
    if (t->kind != EVAL_TENSOR) {
        err_set(err, TILEOPT_UNSUPPORTED, "%s: %s is no TensorProto", name ? name : "?",
                value_kind_name(t->kind));
        return NULL;
    }
    tensor *c;
    if (tensor_contiguous((tensor *)t, NULL, &c, err)) return NULL;
    size_t dims_rank = (size_t)c->rank;
    Onnx__TensorProto *p = graph_tensor_new(m, name, c->elem, c->dims, dims_rank, c->data,
                                            (size_t)tensor_nbytes(c));
    tensor_free(c);
    if (!p) err_set(err, TILEOPT_NOMEM, "out of memory building tensor %s", name);
    return p;
}

/* graph_tensor_decode's callback: the tensor, copied (the proto goes away). */
typedef struct decode_arg {
    const eval_env *env;
    tensor **out;
} decode_arg;

static int decoded(graph_tensor_data *d, const char *name, void *arg, errbuf *err) {
    decode_arg *a = arg;
    return tensor_from_data(d, name, true, a->env, a->out, err);
}

int tensor_decode(const void *bytes, size_t size, const eval_env *env, tensor **out,
                  errbuf *err) {
    *out = NULL;
    decode_arg a = {env, out};
    return graph_tensor_decode(bytes, size, decoded, &a, err);
}

/* ------------------------------------------------ sequences and optionals */

/* Test data nests an optional's sequence's tensor at most: a few levels more
** are a clear refusal below, many more the wire check's limit. */
#define VALUE_MAX_LEVELS 8

static int from_value_data(graph_value_data *d, int32_t elem, const eval_env *env,
                           tensor **out, errbuf *err) {
    if (d->kind == GRAPH_KIND_TENSOR)
        return tensor_from_data(&d->tensor, d->name, true, env, out, err);
    tensor *v = NULL;
    int rc = value_new(d->kind, 0, d->n_items, &v, err);
    for (size_t i = 0; i < d->n_items && !rc; i++) {
        if (d->kind == GRAPH_KIND_SEQUENCE && d->items[i].kind != GRAPH_KIND_TENSOR) {
            rc = err_set(err, TILEOPT_UNSUPPORTED, "a sequence cannot hold %s: the "
                         "evaluator's sequences hold tensors",
                         value_kind_name(d->items[i].kind));
            break;
        }
        tensor *x = NULL;
        rc = from_value_data(&d->items[i], elem, env, &x, err);
        if (!rc) rc = value_put(v, i, x, err);
        tensor_free(x);
        if (rc) err_prefix(err, "item %zu: ", i);
    }
    if (rc) {
        tensor_free(v);
        return rc;
    }
    if (!v->n_items) v->elem = elem;
    *out = v;
    return TILEOPT_OK;
}

typedef struct value_arg {
    int32_t elem;
    const eval_env *env;
    tensor **out;
} value_arg;

static int value_decoded(graph_value_data *d, void *arg, errbuf *err) {
    value_arg *a = arg;
    return from_value_data(d, a->elem, a->env, a->out, err);
}

int value_decode(const void *bytes, size_t size, int32_t kind, int32_t elem,
                 const eval_env *env, tensor **out, errbuf *err) {
    *out = NULL;
    if (kind == EVAL_TENSOR) return tensor_decode(bytes, size, env, out, err);
    value_arg a = {elem, env, out};
    return graph_value_decode(bytes, size, (graph_kind)kind, VALUE_MAX_LEVELS, value_decoded,
                              &a, err);
}

static void value_data_free(graph_value_data *d) {
    for (size_t i = 0; d->items && i < d->n_items; i++) value_data_free(&d->items[i]);
    free(d->items);
}

/* The tree graph_value_encode writes, over the contiguous items of v. */
static int to_value_data(const tensor *v, const char *name, graph_value_data *d, errbuf *err) {
    memset(d, 0, sizeof *d);
    d->kind = (graph_kind)v->kind;
    d->name = name;
    if (v->kind == EVAL_TENSOR) {
        d->tensor = (graph_tensor_data){v->elem, v->rank, v->dims, tensor_numel(v), v->data,
                                        (size_t)tensor_nbytes(v), false};
        return TILEOPT_OK;
    }
    d->items = calloc(v->n_items ? v->n_items : 1, sizeof *d->items);
    if (!d->items) return err_set(err, TILEOPT_NOMEM, "out of memory");
    d->n_items = v->n_items;
    for (size_t i = 0; i < v->n_items; i++) {
        int rc = to_value_data(v->items[i], NULL, &d->items[i], err);
        if (rc) return rc;
    }
    return TILEOPT_OK;
}

static int value_encode(const tensor *t, const char *name, void **bytes, size_t *size,
                        errbuf *err) {
    tensor *c = NULL;
    int rc = tensor_contiguous((tensor *)t, NULL, &c, err);
    if (rc) return rc;
    graph_value_data d;
    rc = to_value_data(c, name ? name : t->name, &d, err);
    if (!rc) rc = graph_value_encode(&d, bytes, size, err);
    value_data_free(&d);
    tensor_free(c);
    return rc;
}

int tensor_encode(const tensor *t, const char *name, void **bytes, size_t *size,
                  errbuf *err) {
    *bytes = NULL;
    *size = 0;
    if (t->kind != EVAL_TENSOR) return value_encode(t, name, bytes, size, err);
    tensor *c;
    int rc = tensor_contiguous((tensor *)t, NULL, &c, err);
    if (rc) return rc;
    rc = graph_tensor_encode(name ? name : c->name, c->elem, c->dims, (size_t)c->rank, c->data,
                             (size_t)tensor_nbytes(c), bytes, size, err);
    tensor_free(c);
    return rc;
}

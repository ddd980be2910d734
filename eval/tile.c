/*
** The materializing Tile kernel. Data only moves, so it dispatches on element
** size alone and serves every element type (strings are graph_bytes).
**
** Speed comes from never computing an index per element: after merging axes, the
** innermost block of the input is copied once, and every repetition is a copy of
** output that is already written. Repetitions of a small block first double it
** up to a few KB (so the source stays in L1), then copy that pattern across the
** rest. Outputs bigger than the last-level cache are written with non-temporal
** stores, which skip the read-for-ownership of each destination line.
*/
#include <string.h>
#include <unistd.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "eval/eval_impl.h"

/* Below this a block is doubled; above it copied as is. */
#define PATTERN_BYTES 2048

typedef uint8_t v16 __attribute__((vector_size(16), aligned(1), may_alias));

/* A copy loop gcc cannot turn back into a memcpy call: glibc's memcpy takes its
** rep-movsb path for KB-sized copies, which is slower here than plain vector
** moves from an L1-resident source. */
static inline void copy_block(uint8_t *restrict d, const uint8_t *restrict s, size_t n) {
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        v16 a = *(const v16 *)(s + i), b = *(const v16 *)(s + i + 16);
        v16 c = *(const v16 *)(s + i + 32), e = *(const v16 *)(s + i + 48);
        *(v16 *)(d + i) = a;
        *(v16 *)(d + i + 16) = b;
        *(v16 *)(d + i + 32) = c;
        *(v16 *)(d + i + 48) = e;
    }
    if (i < n) memcpy(d + i, s + i, n - i);
}

static void copy_stream(uint8_t *restrict d, const uint8_t *restrict s, size_t n) {
#if defined(__SSE2__)
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (head > n) head = n;
    memcpy(d, s, head);
    size_t i = head;
    for (; i + 64 <= n; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 48));
        _mm_stream_si128((__m128i *)(void *)(d + i), a);
        _mm_stream_si128((__m128i *)(void *)(d + i + 16), b);
        _mm_stream_si128((__m128i *)(void *)(d + i + 32), c);
        _mm_stream_si128((__m128i *)(void *)(d + i + 48), e);
    }
    if (i < n) memcpy(d + i, s + i, n - i);
#else
    copy_block(d, s, n);
#endif
}

typedef struct engine {
    size_t esz;
    int n;
    bool stream;
    tile_axis ax[TENSOR_MAX_RANK];
    size_t blk[TENSOR_MAX_RANK + 1]; /* output bytes of axes i..n-1 */
} engine;

/* dst[0..b) is written; repeat it until dst[0..total) is. */
static void replicate(const engine *e, uint8_t *dst, size_t b, size_t total) {
    size_t p = b;
    while (p < total && p < PATTERN_BYTES) {
        size_t n = total - p < p ? total - p : p;
        memcpy(dst + p, dst, n);
        p += n;
    }
    if (p >= total) return;
    /* p is a whole number of blocks: copy that pattern over the rest */
    if (e->stream && total - p >= ((size_t)1 << 16)) {
        for (size_t o = p; o < total; o += p) copy_stream(dst + o, dst, total - o < p ? total - o : p);
    } else {
        for (size_t o = p; o < total; o += p) copy_block(dst + o, dst, total - o < p ? total - o : p);
    }
}

/* r copies of one element: typed stores that gcc turns into vector broadcasts. */
static bool fill_elem(uint8_t *dst, const uint8_t *src, size_t esz, size_t r) {
    switch (esz) {
    case 1: memset(dst, *src, r); return true;
#define FILL(T)                                                                        \
    {                                                                                  \
        T v;                                                                           \
        memcpy(&v, src, sizeof v);                                                     \
        T *o = (T *)(void *)dst;                                                       \
        for (size_t i = 0; i < r; i++) o[i] = v;                                       \
        return true;                                                                   \
    }
    case 2: FILL(uint16_t)
    case 4: FILL(uint32_t)
    case 8: FILL(uint64_t)
#undef FILL
    default: return false;
    }
}

/* d elements at byte stride s into contiguous dst. */
static void gather(uint8_t *dst, const uint8_t *src, size_t esz, int64_t d, int64_t s) {
    if (s == (int64_t)esz) {
        memcpy(dst, src, (size_t)d * esz);
        return;
    }
    switch (esz) {
#define GATHER(T)                                                                      \
    for (int64_t i = 0; i < d; i++) memcpy(dst + (size_t)i * sizeof(T), src + i * s, sizeof(T)); \
    return;
    case 1: GATHER(uint8_t)
    case 2: GATHER(uint16_t)
    case 4: GATHER(uint32_t)
    case 8: GATHER(uint64_t)
#undef GATHER
    default:
        for (int64_t i = 0; i < d; i++) memcpy(dst + (size_t)i * esz, src + i * s, esz);
    }
}

static void fill(const engine *e, int i, uint8_t *dst, const uint8_t *src) {
    const tile_axis *a = &e->ax[i];
    if (i == e->n - 1) {
        if (a->d == 1 && fill_elem(dst, src, e->esz, (size_t)a->r)) return;
        gather(dst, src, e->esz, a->d, a->s);
    } else {
        for (int64_t k = 0; k < a->d; k++) fill(e, i + 1, dst + (size_t)k * e->blk[i + 1], src + k * a->s);
    }
    replicate(e, dst, (size_t)a->d * e->blk[i + 1], e->blk[i]);
}

static size_t stream_threshold(void) {
    long l3 = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
    l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    /* Streaming pays once the output cannot stay in the last-level cache. */
    return l3 > 0 ? (size_t)l3 : (size_t)32 << 20;
}

void tile_engine(uint8_t *dst, const uint8_t *src, size_t esz, const tile_axis *ax, int n) {
    engine e;
    e.esz = esz;
    e.n = 0;
    for (int i = 0; i < n; i++) {
        if (ax[i].d == 0 || ax[i].r == 0) return; /* empty output */
        if (ax[i].d * ax[i].r == 1) continue;
        tile_axis b = ax[i];
        if (b.d == 1 || b.s == 0) b = (tile_axis){1, 0, b.d * b.r}; /* a broadcast */
        /* Merge with the axis outside when the pair is one tile of a flat run:
        ** (1, r1)(d2, r2) -> (d2, r1 r2); (d1, r1)(d2, 1) -> (d1 d2, r1) when the
        ** input is contiguous across them. */
        while (e.n > 0) {
            tile_axis a = e.ax[e.n - 1];
            bool shape_ok = b.r == 1 || a.d == 1;
            bool stride_ok = a.d == 1 || b.d == 1 || a.s == b.d * b.s;
            if (!shape_ok || !stride_ok) break;
            tile_axis m = {a.d * b.d, b.d == 1 ? a.s : b.s, a.r * b.r};
            if (a.d == 1) m.s = b.s;
            b = m;
            e.n--;
        }
        e.ax[e.n++] = b;
    }
    if (e.n == 0) { /* a single element */
        memcpy(dst, src, esz);
        return;
    }
    e.blk[e.n] = esz;
    for (int i = e.n - 1; i >= 0; i--)
        e.blk[i] = e.blk[i + 1] * (size_t)e.ax[i].d * (size_t)e.ax[i].r;
    e.stream = e.blk[0] > stream_threshold();
    fill(&e, 0, dst, src);
#if defined(__SSE2__)
    if (e.stream) _mm_sfence();
#endif
}

/* ---------------------------------------------------------------- kernels */

int kernel_tile(const tensor *x, const int64_t *repeats, size_t n, const eval_limits *lim,
                tensor **out, errbuf *err) {
    *out = NULL;
    if (n != (size_t)x->rank)
        return err_set(err, TILEOPT_INVALID,
                       "Tile: repeats has %zu entries for an input of rank %d", n, x->rank);
    tile_axis ax[TENSOR_MAX_RANK];
    if (!tensor_tile_axes(x, ax))
        return err_set(err, TILEOPT_ERROR, "Tile: unsupported view layout");
    int64_t dims[TENSOR_MAX_RANK];
    for (size_t i = 0; i < n; i++) {
        if (repeats[i] < 0)
            return err_set(err, TILEOPT_INVALID, "Tile: negative repeat %lld at axis %zu",
                           (long long)repeats[i], i);
        if (!eval_mul_i64(ax[i].r, repeats[i], &ax[i].r) ||
            !eval_mul_i64(ax[i].r, ax[i].d, &dims[i]))
            return err_set(err, TILEOPT_LIMIT, "Tile: output size overflows at axis %zu", i);
    }
    tensor *t;
    int rc = tensor_alloc(x->elem, dims, x->rank, lim, &t, err);
    if (rc) return err_prefix(err, "Tile: ");
    tile_engine(t->data, x->data, tensor_elem_size(x), ax, x->rank);
    if (!tensor_keep(t, x)) {
        tensor_free(t);
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    *out = t;
    return TILEOPT_OK;
}

int kernel_tile1(const tensor *x, int64_t tiles, int64_t axis, const eval_limits *lim,
                 tensor **out, errbuf *err) {
    *out = NULL;
    if (x->rank == 0)
        return err_set(err, TILEOPT_INVALID, "Tile-1: input is a scalar, it has no axis");
    if (axis < -(int64_t)x->rank || axis >= x->rank)
        return err_set(err, TILEOPT_INVALID, "Tile-1: axis %lld outside [-%d, %d)",
                       (long long)axis, x->rank, x->rank);
    if (axis < 0) axis += x->rank;
    if (tiles < 0)
        return err_set(err, TILEOPT_INVALID, "Tile-1: negative tiles %lld", (long long)tiles);
    int64_t rep[TENSOR_MAX_RANK];
    for (int32_t i = 0; i < x->rank; i++) rep[i] = 1;
    rep[axis] = tiles;
    return kernel_tile(x, rep, (size_t)x->rank, lim, out, err);
}

int kernel_tile_promoted(const tensor *x, const int64_t *repeats, size_t n,
                         const eval_limits *lim, tensor **out, errbuf *err) {
    *out = NULL;
    if (n > TENSOR_MAX_RANK)
        return err_set(err, TILEOPT_LIMIT, "Tile: %zu repeats, over the rank limit %d", n,
                       TENSOR_MAX_RANK);
    if (n >= (size_t)x->rank) {
        /* data gets leading 1-dims: a view with stride-0 size-1 axes in front */
        tensor *v = tensor_share(x);
        if (!v) return err_set(err, TILEOPT_NOMEM, "out of memory");
        tile_axis ax[TENSOR_MAX_RANK];
        if (!tensor_tile_axes(x, ax)) {
            tensor_free(v);
            return err_set(err, TILEOPT_ERROR, "Tile: unsupported view layout");
        }
        size_t lead = n - (size_t)x->rank;
        v->rank = (int32_t)n;
        v->vrank = (int32_t)(2 * n);
        for (size_t i = 0; i < n; i++) {
            tile_axis a = i < lead ? (tile_axis){1, 0, 1} : ax[i - lead];
            v->dims[i] = a.d * a.r;
            v->vdims[2 * i] = a.r;
            v->vstrides[2 * i] = 0;
            v->vdims[2 * i + 1] = a.d;
            v->vstrides[2 * i + 1] = a.s;
        }
        if (n == 0) v->vrank = 0;
        int rc = kernel_tile(v, repeats, n, lim, out, err);
        tensor_free(v);
        return rc;
    }
    int64_t rep[TENSOR_MAX_RANK];
    size_t lead = (size_t)x->rank - n;
    for (size_t i = 0; i < (size_t)x->rank; i++) rep[i] = i < lead ? 1 : repeats[i - lead];
    return kernel_tile(x, rep, (size_t)x->rank, lim, out, err);
}

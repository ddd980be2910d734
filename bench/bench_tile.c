/*
** Tile kernel benchmark: for each case, the write ceiling over the output size
** (memset and non-temporal memset, the faster), what the Tile must move (the
** output memset and the input read in each round), kernel_tile, and a plain
** memcpy-and-double C Tile (checked equal to kernel_tile); then
** Add(Tile(x[64,256], [16,4]), y[1024,1024]) read through the Tile view against
** materialize-then-add, with the memcpy bandwidth bound of the bytes it moves.
** Times are the best of N runs, each operation in its own loop (steady state:
** buffers warm, as a model run that reuses its memory sees them, and as numpy
** is timed by bench_tile.py). Output: one JSON object per line, which
** bench/bench_tile.py joins with numpy's times.
**
**   bench_tile [ROUNDS [CASE]]
**   bench_tile cliff
**
** CASE, a number from 1, runs that Tile case alone (for a profiler). cliff
** prints memset's speed over buffers of 4 to 64 MB instead.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "bench/tile_cases.h"
#include "eval/eval_impl.h"

static void die(const char *what, const errbuf *err) {
    fprintf(stderr, "bench_tile: %s: %s\n", what, err ? err->msg : "");
    exit(1);
}

static void nt_memset(uint8_t *p, int v, size_t n) {
#if defined(__SSE2__)
    size_t i = 0;
    __m128i x = _mm_set1_epi8((char)v);
    for (; i < n && ((uintptr_t)(p + i) & 15); i++) p[i] = (uint8_t)v;
    for (; i + 64 <= n; i += 64) {
        _mm_stream_si128((__m128i *)(void *)(p + i), x);
        _mm_stream_si128((__m128i *)(void *)(p + i + 16), x);
        _mm_stream_si128((__m128i *)(void *)(p + i + 32), x);
        _mm_stream_si128((__m128i *)(void *)(p + i + 48), x);
    }
    for (; i < n; i++) p[i] = (uint8_t)v;
    _mm_sfence();
#else
    memset(p, v, n);
#endif
}

/*
** The plain C Tile the targets are stated against: axis by axis from the innermost
** out, the block is written (a memcpy of an input row at the innermost axis) and
** then doubled with memcpy until it holds all its repeats. ob[i] and ib[i] are
** the output and input bytes under one index of axis i-1.
*/
static void plain_tile(uint8_t *dst, const uint8_t *src, const int64_t *d, const int64_t *r,
                       const size_t *ob, const size_t *ib, int rank, int i) {
    size_t have;
    if (i == rank - 1) {
        have = ib[i];
        memcpy(dst, src, have);
    } else {
        for (int64_t k = 0; k < d[i]; k++)
            plain_tile(dst + (size_t)k * ob[i + 1], src + (size_t)k * ib[i + 1], d, r, ob, ib,
                       rank, i + 1);
        have = (size_t)d[i] * ob[i + 1];
    }
    for (size_t total = have * (size_t)r[i]; have < total;) {
        size_t n = total - have < have ? total - have : have;
        memcpy(dst + have, dst, n);
        have += n;
    }
}

static void plain_tile_run(uint8_t *dst, const tensor *x, const int64_t *r) {
    size_t ob[TENSOR_MAX_RANK + 1], ib[TENSOR_MAX_RANK + 1];
    ob[x->rank] = ib[x->rank] = tensor_elem_size(x);
    for (int i = x->rank - 1; i >= 0; i--) {
        ib[i] = ib[i + 1] * (size_t)x->dims[i];
        ob[i] = ob[i + 1] * (size_t)(x->dims[i] * r[i]);
    }
    plain_tile(dst, x->data, x->dims, r, ob, ib, x->rank, 0);
}

/* Keeps the compiler from dropping writes nobody reads. */
static volatile uint8_t sink;

/* Reads n bytes, as a Tile must read its input once. */
static void read_all(const uint8_t *p, size_t n) {
    uint8_t acc = 0;
#if defined(__SSE2__)
    __m128i a = _mm_setzero_si128(), b = a;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a = _mm_xor_si128(a, _mm_loadu_si128((const __m128i *)(const void *)(p + i)));
        b = _mm_xor_si128(b, _mm_loadu_si128((const __m128i *)(const void *)(p + i + 16)));
    }
    acc = (uint8_t)_mm_cvtsi128_si32(_mm_xor_si128(a, b));
    for (; i < n; i++) acc ^= p[i];
#else
    for (size_t i = 0; i < n; i++) acc ^= p[i];
#endif
    sink = acc;
}

static tensor *random_tensor(int32_t elem, const int64_t *dims, int32_t rank, unsigned seed) {
    tensor *t;
    errbuf err;
    if (tensor_new(elem, dims, rank, NULL, &t, &err)) die("tensor_new", &err);
    size_t n = (size_t)tensor_nbytes(t);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        t->data[i] = (uint8_t)(seed >> 16);
    }
    if (elem == DT_FLOAT) { /* small finite floats for the Add case */
        float *f = (float *)(void *)t->data;
        for (size_t i = 0; i < n / 4; i++) f[i] = (float)(t->data[i * 4] % 64) / 8.0f;
    }
    return t;
}

typedef struct shape {
    int32_t elem, rank;
    int64_t dims[TENSOR_MAX_RANK];
} shape;

/* An output tensor from the evaluator's allocator, as kernel_tile gets one. */
static tensor *out_tensor(const shape *s) {
    tensor *t;
    errbuf err;
    if (tensor_alloc(s->elem, s->dims, s->rank, NULL, &t, &err)) die("tensor_alloc", &err);
    return t;
}

/* memset speed over buffer sizes: where it drops is how much last-level cache
** the machine gives this process (a buffer rewritten in a loop stays there) */
static void cache_cliff(void) {
    static const int mbs[] = {4, 8, 12, 16, 18, 20, 24, 32, 64};
    for (size_t k = 0; k < sizeof mbs / sizeof *mbs; k++) {
        size_t n = (size_t)mbs[k] << 20;
        uint8_t *p = big_buffer(n);
        double best = 1e30;
        for (int r = 0; r < 30; r++) {
            double t0 = now_ms();
            memset(p, 1 + r % 255, n);
            double dt = now_ms() - t0;
            if (dt < best) best = dt;
        }
        sink = p[n - 1];
        munmap(p, n);
        printf("{\"cliff_mb\": %d, \"memset_gbs\": %.1f}\n", mbs[k], (double)n / best / 1e6);
    }
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "cliff")) {
        cache_cliff();
        return 0;
    }
    int rounds = argc > 1 ? atoi(argv[1]) : 30;
    if (rounds < 1) rounds = 1;
    size_t only = argc > 2 ? (size_t)atoi(argv[2]) : 0;
    errbuf err;
    for (size_t c = 0; c < TILE_CASES; c++) {
        if (only && c + 1 != only) continue;
        const tile_case *tc = &tile_cases[c];
        tensor *x = random_tensor(tc->elem, tc->dims, tc->rank, 7u + (unsigned)c);
        tensor *y;
        if (kernel_tile(x, tc->reps, (size_t)tc->rank, NULL, &y, &err)) die(tc->name, &err);
        size_t bytes = (size_t)tensor_nbytes(y);
        shape out = {y->elem, y->rank, {0}};
        memcpy(out.dims, y->dims, sizeof(int64_t) * (size_t)y->rank);
        tensor_free(y);
        /* Each in its own loop, as numpy's np.tile is timed: steady state, the
        ** output buffer reused (and so warm) from one run to the next. Every
        ** contender writes into the buffer the evaluator's allocator hands out,
        ** the same one each time (its cache of freed big buffers), so all are
        ** timed on the same memory. */
        double best_set = 1e30, best_nt = 1e30, best_move = 1e30, best_ours = 1e30,
               best_plain = 1e30;
        /* Never zero bytes: on the Zen 4 host zero lines reach memory twice as
        ** fast as any other value (205 MB: memset and the non-temporal memset
        ** 55-62 GB/s for zeros, 26-28 GB/s for 0x01, 0x5a, 0x80 or 0xff), and a
        ** Tile output is data, so zeros would give a ceiling no kernel writing
        ** it can reach. */
        for (int r = 0; r < rounds; r++) {
            tensor *o = out_tensor(&out);
            double t0 = now_ms();
            memset(o->data, 1 + r % 255, bytes);
            double t1 = now_ms();
            tensor_free(o);
            if (t1 - t0 < best_set) best_set = t1 - t0;
        }
        for (int r = 0; r < rounds; r++) {
            tensor *o = out_tensor(&out);
            double t0 = now_ms();
            nt_memset(o->data, 1 + r % 255, bytes);
            double t1 = now_ms();
            tensor_free(o);
            if (t1 - t0 < best_nt) best_nt = t1 - t0;
        }
        /* What a Tile must move: the output written and the input read, in one
        ** round (their working set is what decides whether the output stays in
        ** the last-level cache from round to round). */
        for (int r = 0; r < rounds; r++) {
            tensor *o = out_tensor(&out);
            double t0 = now_ms();
            memset(o->data, 1 + r % 255, bytes);
            read_all(x->data, (size_t)tensor_nbytes(x));
            double t1 = now_ms();
            tensor_free(o);
            if (t1 - t0 < best_move) best_move = t1 - t0;
        }
        for (int r = 0; r < rounds; r++) {
            double t0 = now_ms();
            if (kernel_tile(x, tc->reps, (size_t)tc->rank, NULL, &y, &err)) die(tc->name, &err);
            double t1 = now_ms();
            sink = y->data[bytes - 1];
            tensor_free(y);
            if (t1 - t0 < best_ours) best_ours = t1 - t0;
        }
        tensor *plain = NULL;
        for (int r = 0; r < rounds; r++) {
            tensor_free(plain);
            plain = out_tensor(&out);
            double t0 = now_ms();
            plain_tile_run(plain->data, x, tc->reps);
            double t1 = now_ms();
            if (t1 - t0 < best_plain) best_plain = t1 - t0;
        }
        if (kernel_tile(x, tc->reps, (size_t)tc->rank, NULL, &y, &err)) die(tc->name, &err);
        if (memcmp(plain->data, y->data, bytes)) die("the plain Tile and kernel_tile differ", NULL);
        tensor_free(y);
        tensor_free(plain);
        printf("{\"case\": \"%s\", \"bytes\": %zu, \"memset_ms\": %.4f, \"nt_memset_ms\": %.4f, "
               "\"move_ms\": %.4f, "
               "\"ours_ms\": %.4f, \"plain_ms\": %.4f}\n",
               tc->name, bytes, best_set, best_nt, best_move, best_ours, best_plain);
        fflush(stdout);
        tensor_free(x);
    }

    if (only) return 0;
    /* Add(Tile(x, [16,4]), y) through the view vs materialized */
    kernel_fn add = NULL;
    for (size_t i = 0; i < kernel_table_elementwise_count; i++)
        if (kernel_table_elementwise[i].op == OP_Add) add = kernel_table_elementwise[i].fn;
    if (!add) die("no Add kernel", NULL);
    Onnx__NodeProto node = ONNX__NODE_PROTO__INIT;
    node.op_type = (char *)"Add";
    node.name = (char *)"bench";
    const int64_t xd[2] = {64, 256}, yd[2] = {1024, 1024}, rep[2] = {16, 4};
    tensor *x = random_tensor(DT_FLOAT, xd, 2, 11), *yy = random_tensor(DT_FLOAT, yd, 2, 13);
    size_t ybytes = (size_t)tensor_nbytes(yy);
    uint8_t *dst = big_buffer(ybytes);
    double best_view = 1e30, best_mat = 1e30, best_cpy = 1e30;
    for (int r = 0; r < rounds; r++) {
        tensor *v, *m, *o1, *o2;
        double t0 = now_ms();
        if (view_tile(x, rep, 2, NULL, &v, &err)) die("view_tile", &err);
        tensor *in1[2] = {v, yy};
        if (add(&node, 13, in1, 2, &o1, 1, NULL, &err)) die("Add view", &err);
        double t1 = now_ms();
        if (kernel_tile(x, rep, 2, NULL, &m, &err)) die("kernel_tile", &err);
        tensor *in2[2] = {m, yy};
        if (add(&node, 13, in2, 2, &o2, 1, NULL, &err)) die("Add", &err);
        double t2 = now_ms();
        memcpy(dst, yy->data, ybytes);
        double t3 = now_ms();
        if (memcmp(o1->data, o2->data, ybytes)) die("view and materialized Add differ", NULL);
        tensor_free(v);
        tensor_free(m);
        tensor_free(o1);
        tensor_free(o2);
        if (t1 - t0 < best_view) best_view = t1 - t0;
        if (t2 - t1 < best_mat) best_mat = t2 - t1;
        if (t3 - t2 < best_cpy) best_cpy = t3 - t2;
    }
    sink = dst[ybytes - 1];
    munmap(dst, ybytes);
    /* bytes the view Add moves: x and y read, the output written */
    double moved = (double)tensor_nbytes(x) + 2.0 * (double)ybytes;
    double bw = 2.0 * (double)ybytes / best_cpy; /* bytes per ms, read + written */
    printf("{\"case\": \"Add(Tile(x[64,256],[16,4]), y[1024,1024])\", \"view_ms\": %.4f, "
           "\"materialize_ms\": %.4f, \"memcpy_ms\": %.4f, \"bound_ms\": %.4f}\n",
           best_view, best_mat, best_cpy, moved / bw);
    tensor_free(x);
    tensor_free(yy);
    tbuf_cache_drop();
    return 0;
}

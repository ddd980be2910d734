/*
** The engine of the materializing Tile kernels (kernel_tile in view.c) and of
** tensor_contiguous. Data only moves, so it dispatches on element size alone
** and serves every element type (strings are graph_bytes).
**
** No index is computed per element. Axes are merged first ((1,r1)(d2,r2) and
** (d1,r1)(d2,1) are each one tiled axis), then the output is written block by
** block, innermost first, each repetition a copy of what is already written:
** - a block of at most 16 bytes (one element broadcast, a short row) is stored
**   from a pattern held in vector registers;
** - a row or pattern of 64 bytes to 1792 bytes repeated in place is stored
**   from AVX-512 registers where the machine has them, and one of up to 4 KB
**   repeated many times with its first 1792 bytes from them;
** - a small block is doubled up to a few KB, then that L1-resident pattern is
**   copied over the rest;
** - a big block is copied chunk by chunk when it has few copies and is 64 KB
**   or more (the source chunk stays in L1), whole otherwise;
** - a big block that is mostly repetition of a small input is written again
**   from the input for each copy, so the output is only written, never read.
** Outputs bigger than the last-level cache use non-temporal stores, which skip
** the read-for-ownership of each destination line.
*/
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "eval/eval_impl.h"

/* Below this a block is doubled; above it copied as is. */
#define PATTERN_BYTES 2048
/* Blocks of at least CHUNKED_BLOCK bytes with at most FEW_COPIES copies are
** copied CHUNK_BYTES at a time to every copy. Measured on Zen 4 (4 copies of
** each block of a 4 MB input, share of the memset ceiling): 2 KB chunks give
** 63-86% from 64 KB blocks up, whole copies 35-57%; below 16 KB chunking
** interleaves destinations a few KB apart and loses (4 KB blocks: whole 64-78%,
** 2 KB chunks 44-52%). */
#define CHUNK_BYTES 2048
#define CHUNKED_BLOCK ((size_t)64 << 10)
#define FEW_COPIES 8
/* Blocks of at most this many bytes are stored from a pattern in registers. */
#define SMALL_BLOCK 16
/* Above this, a block that is mostly repetition of a much smaller input is
** written from the input again for every copy instead of copied back out of
** the output: the input stays in L1/L2 and the output is only written. */
#define REGEN_BYTES ((size_t)256 << 10)

/* Blocks of REG_MIN..REG_MAX bytes repeated in a row are stored with their
** first REG_BYTES from AVX-512 registers (28 of the 32 hold 1792 bytes), the
** rest copied from the L1-resident source. Measured on Zen 4, share of the
** memset ceiling: 768-byte rows repeated 16 times (the [64,64,3] x [16,16,1]
** case) 98-103% against 67-78% for copies out of L1; a 4 KB row repeated 4096
** times 94-101% with 16 registers against 81-90%, and 1-7 points more with 28
** (medians of in-process A/B runs, bench/ab_tile.sh). */
#define REG_MIN 64
#define REG_BYTES 1792
#define REG_MAX 4096

typedef struct engine {
    size_t esz;
    int n;
    bool stream;
    bool regs512; /* repeat_from_registers is usable */
    tile_axis ax[TENSOR_MAX_RANK];
    size_t blk[TENSOR_MAX_RANK + 1]; /* output bytes of axes i..n-1 */
    size_t in[TENSOR_MAX_RANK + 1];  /* input bytes under one copy of those axes */
    /* For an innermost block of b <= SMALL_BLOCK bytes: the AVX2 engine's byte
    ** shuffle that spreads it over lcm(b, 32) bytes, (32j + t) mod b. */
    size_t small_p;
    _Alignas(32) uint8_t shuf[32 * SMALL_BLOCK];
} engine;

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_AVX512_REPEAT 1
/*
** r copies of src[0..b), REG_MIN <= b <= REG_MAX: the first n = min(b,
** REG_BYTES) / 64 vectors are loaded once into the top n of 28 registers
** and each copy jumps into the unrolled stores so that they run at ascending
** addresses (descending stores lost a third of the speed); the rest of a
** longer block is copied from src, and an unaligned tail is one overlapping
** store of the block's last 64 bytes.
*/
#define RLOAD(i) __m512i v##i = _mm512_loadu_si512(i >= k0 ? (const void *)(sb + 64 * i) : src)
#define RSTORE(i)                                                                      \
    case 28 - i:                                                                       \
        _mm512_storeu_si512((void *)(qb + 64 * i), v##i);                              \
        __attribute__((fallthrough));
__attribute__((target("avx512f"))) static void repeat_from_registers(uint8_t *dst,
                                                                     const uint8_t *src,
                                                                     size_t b, size_t r) {
    size_t n = (b < REG_BYTES ? b : REG_BYTES) / 64, k0 = 28 - n; /* in v[k0..28) */
    /* v[i] is at offset 64 (i - k0); integers, so that no pointer is formed
    ** before the buffers (the offsets stay constants in the stores) */
    uintptr_t sb = (uintptr_t)src - 64 * k0;
    RLOAD(0); RLOAD(1); RLOAD(2); RLOAD(3); RLOAD(4); RLOAD(5); RLOAD(6); RLOAD(7);
    RLOAD(8); RLOAD(9); RLOAD(10); RLOAD(11); RLOAD(12); RLOAD(13); RLOAD(14); RLOAD(15);
    RLOAD(16); RLOAD(17); RLOAD(18); RLOAD(19); RLOAD(20); RLOAD(21); RLOAD(22); RLOAD(23);
    RLOAD(24); RLOAD(25); RLOAD(26); RLOAD(27);
    __m512i tail = _mm512_loadu_si512(src + b - 64);
    for (size_t j = 0; j < r; j++) {
        uint8_t *q = dst + j * b;
        uintptr_t qb = (uintptr_t)q - 64 * k0;
        switch (n) { /* case n stores v[k0] first: the stores ascend */
            RSTORE(0) RSTORE(1) RSTORE(2) RSTORE(3) RSTORE(4) RSTORE(5) RSTORE(6) RSTORE(7)
            RSTORE(8) RSTORE(9) RSTORE(10) RSTORE(11) RSTORE(12) RSTORE(13) RSTORE(14)
            RSTORE(15) RSTORE(16) RSTORE(17) RSTORE(18) RSTORE(19) RSTORE(20) RSTORE(21)
            RSTORE(22) RSTORE(23) RSTORE(24) RSTORE(25) RSTORE(26) RSTORE(27)
        default:
            break;
        }
        for (size_t i = REG_BYTES; i + 64 <= b; i += 64)
            _mm512_storeu_si512(q + i, _mm512_loadu_si512(src + i));
        if (b % 64) _mm512_storeu_si512(q + b - 64, tail);
    }
    _mm256_zeroupper();
}
#undef RLOAD
#undef RSTORE
#else
static void repeat_from_registers(uint8_t *dst, const uint8_t *src, size_t b, size_t r) {
    (void)dst, (void)src, (void)b, (void)r; /* never called: regs512 is false */
}
#endif

/*
** The engine is compiled twice: for the baseline (SSE2, 16-byte vectors) and,
** on x86-64, for AVX2 (32-byte vectors), picked at run time. Stores from
** registers into cache-resident output run at half speed with 16-byte
** vectors, and the kernels are store-bound.
*/
#define ENGINE(name) name##_base
#define VBYTES 16
#include "eval/tile_engine.h"
#undef ENGINE
#undef VBYTES

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_AVX2_ENGINE 1
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif
#define ENGINE(name) name##_avx2
#define VBYTES 32
#include "eval/tile_engine.h"
#undef ENGINE
#undef VBYTES
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif

static size_t stream_threshold(void) {
    long l3 = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
    l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    /* Streaming pays once the output cannot stay in the last-level cache. VMs
    ** may report the host's whole L3 (hundreds of MB), hence the cap. */
    size_t cap = (size_t)32 << 20;
    return l3 > 0 && (size_t)l3 < cap ? (size_t)l3 : cap;
}

void tile_engine(uint8_t *dst, const uint8_t *src, size_t esz, const tile_axis *ax, int n) {
    tile_engine_isa(TILE_ISA_BEST, dst, src, esz, ax, n);
}

void tile_engine_isa(int isa, uint8_t *dst, const uint8_t *src, size_t esz, const tile_axis *ax,
                     int n) {
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
    e.in[e.n] = esz;
    for (int i = e.n - 1; i >= 0; i--) {
        e.blk[i] = e.blk[i + 1] * (size_t)e.ax[i].d * (size_t)e.ax[i].r;
        e.in[i] = e.in[i + 1] * (size_t)e.ax[i].d;
    }
    e.stream = e.blk[0] > stream_threshold();
    e.small_p = 0;
    size_t b = (size_t)e.ax[e.n - 1].d * esz;
    if (b <= SMALL_BLOCK) {
        memset(e.shuf, 0, sizeof e.shuf);
        e.small_p = 32;
        while (e.small_p % b) e.small_p += 32;
        for (size_t i = 0; i < e.small_p; i++) e.shuf[i] = (uint8_t)(i % b);
    }
    e.regs512 = false;
#ifdef HAVE_AVX512_REPEAT
    e.regs512 = isa == TILE_ISA_BEST && __builtin_cpu_supports("avx512f");
#endif
    (void)isa;
#ifdef HAVE_AVX2_ENGINE
    if (isa != TILE_ISA_BASE && __builtin_cpu_supports("avx2")) {
        run_avx2(&e, dst, src);
        return;
    }
#endif
    run_base(&e, dst, src);
}

/* ------------------------------------------------------------ progress */

/* How far apart a big fill reports: a slice is written between two reports. */
#define TILE_SLICE_BYTES ((uint64_t)16 << 20)

typedef struct fill_job {
    const eval_env *env;
    char what[128];
    size_t esz;
    uint64_t done, total, next;
} fill_job;

static void fill_advance(fill_job *j, uint64_t n) {
    j->done += n;
    if (j->done >= j->next || j->done == j->total) {
        graph_progress_tell(&j->env->progress, j->what, j->done, j->total);
        j->next = j->done + TILE_SLICE_BYTES;
    }
}

static uint64_t out_bytes(const tile_axis *ax, int n, size_t esz) {
    uint64_t b = esz;
    for (int i = 0; i < n; i++) b *= (uint64_t)ax[i].d * (uint64_t)ax[i].r;
    return b;
}

/*
** The output by slices of the outermost axis: each output index of it is an
** independent Tile of the axes inside (recursed into when one index is itself
** more than a slice), rows of the first copy are written by the engine a few
** at a time, and the other copies of that block are copied from it.
*/
static void fill_sliced(fill_job *j, uint8_t *dst, const uint8_t *src, const tile_axis *ax,
                        int n) {
    while (n > 0 && ax[0].d * ax[0].r == 1) { /* a size-1 axis moves nothing */
        ax++;
        n--;
    }
    uint64_t total = out_bytes(ax, n, j->esz);
    if (n == 0 || total <= TILE_SLICE_BYTES) {
        tile_engine(dst, src, j->esz, ax, n);
        fill_advance(j, total);
        return;
    }
    int64_t d = ax[0].d, r = ax[0].r;
    uint64_t row = total / ((uint64_t)d * (uint64_t)r);
    if (row > TILE_SLICE_BYTES) {
        for (int64_t i = 0; i < d; i++)
            fill_sliced(j, dst + (uint64_t)i * row, src + i * ax[0].s, ax + 1, n - 1);
    } else {
        int64_t rows = (int64_t)(TILE_SLICE_BYTES / row);
        tile_axis sub[TENSOR_MAX_RANK];
        memcpy(sub, ax, (size_t)n * sizeof *ax);
        for (int64_t i = 0; i < d; i += rows) {
            int64_t k = d - i < rows ? d - i : rows;
            sub[0] = (tile_axis){k, ax[0].s, 1};
            tile_engine(dst + (uint64_t)i * row, src + i * ax[0].s, j->esz, sub, n);
            fill_advance(j, (uint64_t)k * row);
        }
    }
    uint64_t block = (uint64_t)d * row;
    for (int64_t c = 1; c < r; c++)
        for (uint64_t off = 0; off < block; off += TILE_SLICE_BYTES) {
            uint64_t m = block - off < TILE_SLICE_BYTES ? block - off : TILE_SLICE_BYTES;
            memcpy(dst + (uint64_t)c * block + off, dst + off, (size_t)m);
            fill_advance(j, m);
        }
}

void tile_fill(uint8_t *dst, const uint8_t *src, size_t esz, const tile_axis *ax, int n,
               const eval_env *env, const char *name) {
    uint64_t total = out_bytes(ax, n, esz);
    if (!env || !env->progress.fn || total < TILE_PROGRESS_BYTES) {
        tile_engine(dst, src, esz, ax, n);
        return;
    }
    fill_job j = {.env = env, .esz = esz, .total = total, .next = TILE_SLICE_BYTES};
    int len = snprintf(j.what, sizeof j.what, "evaluating %s", name ? name : "?");
    /* a name from the model goes to a terminal: no control bytes */
    for (int i = 0; i < len && j.what[i]; i++)
        if ((unsigned char)j.what[i] < 0x20 || j.what[i] == 0x7f) j.what[i] = '?';
    graph_progress_tell(&env->progress, j.what, 0, total);
    fill_sliced(&j, dst, src, ax, n);
}

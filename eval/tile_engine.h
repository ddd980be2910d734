/*
** The Tile engine's loops, included by eval/tile.c once per vector width:
** ENGINE(name) gives each function its suffix, VBYTES the vector size (16 or
** 32). No include guard: that is the point.
*/

typedef uint8_t ENGINE(vec) __attribute__((vector_size(VBYTES), aligned(1), may_alias));
#define VEC ENGINE(vec)
#define VLOAD(p) (*(const VEC *)(const void *)(p))
#define VSTORE(p, v) (*(VEC *)(void *)(p) = (v))

/* A copy loop gcc cannot turn back into a memcpy call: glibc's memcpy takes its
** rep-movsb path for KB-sized copies, which is slower here than plain vector
** moves from an L1-resident source. */
static inline void ENGINE(copy_block)(uint8_t *restrict d, const uint8_t *restrict s, size_t n) {
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
#if VBYTES == 32
        VEC a = VLOAD(s + i), b = VLOAD(s + i + 32);
        VSTORE(d + i, a);
        VSTORE(d + i + 32, b);
#else
        VEC a = VLOAD(s + i), b = VLOAD(s + i + 16), c = VLOAD(s + i + 32), e = VLOAD(s + i + 48);
        VSTORE(d + i, a);
        VSTORE(d + i + 16, b);
        VSTORE(d + i + 32, c);
        VSTORE(d + i + 48, e);
#endif
    }
    if (i < n) memcpy(d + i, s + i, n - i);
}

/* Non-temporal copy: the output bypasses the caches (it would not fit). */
static void ENGINE(copy_stream)(uint8_t *restrict d, const uint8_t *restrict s, size_t n) {
#if defined(__SSE2__)
    size_t head = (VBYTES - ((uintptr_t)d & (VBYTES - 1))) & (VBYTES - 1);
    if (head > n) head = n;
    memcpy(d, s, head);
    size_t i = head;
    for (; i + 64 <= n; i += 64) {
#if VBYTES == 32
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(s + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(s + i + 32));
        _mm256_stream_si256((__m256i *)(void *)(d + i), a);
        _mm256_stream_si256((__m256i *)(void *)(d + i + 32), b);
#else
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 48));
        _mm_stream_si128((__m128i *)(void *)(d + i), a);
        _mm_stream_si128((__m128i *)(void *)(d + i + 16), b);
        _mm_stream_si128((__m128i *)(void *)(d + i + 32), c);
        _mm_stream_si128((__m128i *)(void *)(d + i + 48), e);
#endif
    }
    if (i < n) memcpy(d + i, s + i, n - i);
#else
    ENGINE(copy_block)(d, s, n);
#endif
}

static inline void ENGINE(copy_to)(const engine *e, uint8_t *restrict d,
                                   const uint8_t *restrict s, size_t n) {
    if (e->stream)
        ENGINE(copy_stream)(d, s, n);
    else
        ENGINE(copy_block)(d, s, n);
}

/* r copies of src[0..b). Few copies of a big block: chunk by chunk to every
** destination, so each source chunk is read from L1 instead of from L3 or
** memory once per copy. With many copies, or destinations only a few KB
** apart, interleaving the destination streams costs more than it saves. */
static void ENGINE(scatter)(const engine *e, uint8_t *dst, const uint8_t *src, size_t b,
                            size_t r) {
    if (r > FEW_COPIES || b < CHUNKED_BLOCK) {
        for (size_t k = 0; k < r; k++) ENGINE(copy_to)(e, dst + k * b, src, b);
        return;
    }
    for (size_t off = 0; off < b; off += CHUNK_BYTES) {
        size_t n = b - off < CHUNK_BYTES ? b - off : CHUNK_BYTES;
        for (size_t k = 0; k < r; k++) ENGINE(copy_to)(e, dst + k * b + off, src + off, n);
    }
}

/* dst[0..b) is written; repeat it until dst[0..total) is. */
static void ENGINE(replicate)(const engine *e, uint8_t *dst, size_t b, size_t total) {
    if (b >= total) return;
    if (b > 2 * PATTERN_BYTES) {
        ENGINE(scatter)(e, dst + b, dst, b, total / b - 1);
        return;
    }
    size_t p = b;
    while (p < total && p < PATTERN_BYTES) {
        size_t n = total - p < p ? total - p : p;
        ENGINE(copy_block)(dst + p, dst, n);
        p += n;
    }
    /* p is a whole number of blocks: copy that pattern over the rest */
    size_t o = p;
    if (e->regs512 && !e->stream && p >= REG_MIN && p <= REG_MAX) {
        size_t k = (total - p) / p;
        repeat_from_registers(dst + p, dst, p, k);
        o += k * p;
    }
    for (; o < total; o += p)
        ENGINE(copy_to)(e, dst + o, dst, total - o < p ? total - o : p);
}

/*
** A block of at most SMALL_BLOCK bytes repeated (one element broadcast, or a
** short row): doubling it would take a dozen dependent tiny copies. Instead
** build lcm(b, VBYTES) bytes of pattern once and store it vector by vector.
*/
static void ENGINE(fill_small)(const engine *e, uint8_t *dst, const uint8_t *blk, size_t b,
                               size_t total) {
    _Alignas(VBYTES) uint8_t pat[VBYTES * SMALL_BLOCK];
#if VBYTES == 32
    /* one shuffle per pattern vector, with indices computed once per call */
    (void)b;
    size_t p = e->small_p;
    __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)blk));
    for (size_t k = 0; k < p; k += 32)
        _mm256_store_si256((__m256i *)(void *)(pat + k),
                           _mm256_shuffle_epi8(v, _mm256_load_si256((const __m256i *)(const void *)(e->shuf + k))));
#else
    size_t p = VBYTES;
    while (p % b) p += VBYTES;
    memcpy(pat, blk, b);
    for (size_t q = b; q < p; q *= 2) memcpy(pat + q, pat, q <= p - q ? q : p - q);
#endif
    size_t off = 0;
#if defined(__SSE2__)
    if (e->stream && !((uintptr_t)dst & (VBYTES - 1))) {
        for (; off + p <= total; off += p)
            for (size_t k = 0; k < p; k += VBYTES) {
#if VBYTES == 32
                _mm256_stream_si256((__m256i *)(void *)(dst + off + k),
                                    _mm256_load_si256((const __m256i *)(const void *)(pat + k)));
#else
                _mm_stream_si128((__m128i *)(void *)(dst + off + k),
                                 _mm_load_si128((const __m128i *)(const void *)(pat + k)));
#endif
            }
        if (off < total) memcpy(dst + off, pat, total - off);
        return;
    }
#else
    (void)e;
#endif
    if (p == VBYTES) {
        VEC a = VLOAD(pat);
        for (; off + VBYTES <= total; off += VBYTES) VSTORE(dst + off, a);
    } else if (p == 3 * VBYTES) {
        VEC a = VLOAD(pat), c = VLOAD(pat + VBYTES), d = VLOAD(pat + 2 * VBYTES);
        for (; off + 3 * VBYTES <= total; off += 3 * VBYTES) {
            VSTORE(dst + off, a);
            VSTORE(dst + off + VBYTES, c);
            VSTORE(dst + off + 2 * VBYTES, d);
        }
    } else {
        for (; off + p <= total; off += p)
            for (size_t k = 0; k < p; k += VBYTES) VSTORE(dst + off + k, VLOAD(pat + k));
    }
    if (off < total) memcpy(dst + off, pat, total - off);
}

/* d elements at byte stride s into contiguous dst. */
static void ENGINE(gather)(uint8_t *dst, const uint8_t *src, size_t esz, int64_t d, int64_t s) {
    if (s == (int64_t)esz) {
        size_t n = (size_t)d * esz;
        if (n <= SMALL_BLOCK) { /* a library call would cost more than the copy */
            for (size_t j = 0; j < n; j++) dst[j] = src[j];
            return;
        }
        ENGINE(copy_block)(dst, src, n);
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

/* The small innermost block for `rows` consecutive outer indices (input rows
** `stride` bytes apart): the per-row work is a handful of instructions, so it
** is done in one loop with the shuffle indices in registers. */
static void ENGINE(small_rows)(const engine *e, uint8_t *dst, const uint8_t *src, int64_t rows,
                               int64_t stride) {
    const tile_axis *a = &e->ax[e->n - 1];
    size_t b = (size_t)a->d * e->esz, total = e->blk[e->n - 1];
    uint8_t blk[SMALL_BLOCK] = {0};
#if VBYTES == 32
    if (!e->stream && (e->small_p == 32 || e->small_p == 96)) {
        __m256i s0 = _mm256_load_si256((const __m256i *)(const void *)e->shuf);
        __m256i s1 = _mm256_load_si256((const __m256i *)(const void *)(e->shuf + 32));
        __m256i s2 = _mm256_load_si256((const __m256i *)(const void *)(e->shuf + 64));
        size_t p = e->small_p, whole = total - total % p;
        for (int64_t k = 0; k < rows; k++, dst += total, src += stride) {
            ENGINE(gather)(blk, src, e->esz, a->d, a->s);
            __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)blk));
            __m256i x0 = _mm256_shuffle_epi8(v, s0);
            size_t off = 0;
            if (p == 32) {
                for (; off < whole; off += 32) _mm256_storeu_si256((__m256i *)(void *)(dst + off), x0);
            } else {
                __m256i x1 = _mm256_shuffle_epi8(v, s1), x2 = _mm256_shuffle_epi8(v, s2);
                for (; off < whole; off += 96) {
                    _mm256_storeu_si256((__m256i *)(void *)(dst + off), x0);
                    _mm256_storeu_si256((__m256i *)(void *)(dst + off + 32), x1);
                    _mm256_storeu_si256((__m256i *)(void *)(dst + off + 64), x2);
                }
            }
            if (off < total) { /* a part of the pattern is left */
                _Alignas(32) uint8_t pat[96];
                _mm256_store_si256((__m256i *)(void *)pat, x0);
                if (p == 96) {
                    _mm256_store_si256((__m256i *)(void *)(pat + 32), _mm256_shuffle_epi8(v, s1));
                    _mm256_store_si256((__m256i *)(void *)(pat + 64), _mm256_shuffle_epi8(v, s2));
                }
                memcpy(dst + off, pat, total - off);
            }
        }
        return;
    }
#endif
    for (int64_t k = 0; k < rows; k++, dst += total, src += stride) {
        ENGINE(gather)(blk, src, e->esz, a->d, a->s);
        ENGINE(fill_small)(e, dst, blk, b, total);
    }
}

static void ENGINE(fill)(const engine *e, int i, uint8_t *dst, const uint8_t *src) {
    const tile_axis *a = &e->ax[i];
    size_t b = (size_t)a->d * e->blk[i + 1], r = (size_t)a->r;
    if (i == e->n - 1) {
        if (b <= SMALL_BLOCK && r > 1) {
            uint8_t blk[SMALL_BLOCK] = {0};
            ENGINE(gather)(blk, src, e->esz, a->d, a->s);
            ENGINE(fill_small)(e, dst, blk, b, e->blk[i]);
            return;
        }
        /* a row longer than the registers hold only with many copies: with
        ** few, most of what is copied comes from the input, not from L1 (4 KB
        ** rows repeated 4 times: 49-66% of the ceiling this way against 51-80%
        ** copied whole) */
        bool regs = b <= REG_BYTES ? r > 1 : b <= REG_MAX && r > FEW_COPIES;
        if (e->regs512 && regs && b >= REG_MIN && !e->stream) {
            uint8_t blk[REG_MAX];
            const uint8_t *from = src;
            if (a->s != (int64_t)e->esz) {
                ENGINE(gather)(blk, src, e->esz, a->d, a->s);
                from = blk;
            }
            repeat_from_registers(dst, from, b, r);
            return;
        }
        /* every copy straight from the input: fewer, larger copies than doubling
        ** unless the block is small and repeated many times */
        if (a->s == (int64_t)e->esz && (b >= PATTERN_BYTES || (b >= 256 && r <= 32))) {
            ENGINE(scatter)(e, dst, src, b, r);
            return;
        }
        ENGINE(gather)(dst, src, e->esz, a->d, a->s);
    }
    bool small_child = i == e->n - 2 && e->small_p && e->ax[i + 1].r > 1;
    if (i < e->n - 1 && b > REGEN_BYTES && e->in[i] * 4 <= b) {
        for (size_t c = 0; c < r; c++) {
            if (small_child) {
                ENGINE(small_rows)(e, dst + c * b, src, a->d, a->s);
                continue;
            }
            for (int64_t k = 0; k < a->d; k++)
                ENGINE(fill)(e, i + 1, dst + c * b + (size_t)k * e->blk[i + 1], src + k * a->s);
        }
        return;
    }
    if (small_child) {
        ENGINE(small_rows)(e, dst, src, a->d, a->s);
    } else if (i < e->n - 1) {
        for (int64_t k = 0; k < a->d; k++)
            ENGINE(fill)(e, i + 1, dst + (size_t)k * e->blk[i + 1], src + k * a->s);
    }
    ENGINE(replicate)(e, dst, b, e->blk[i]);
}

static void ENGINE(run)(const engine *e, uint8_t *dst, const uint8_t *src) {
    ENGINE(fill)(e, 0, dst, src);
#if defined(__SSE2__)
    if (e->stream) _mm_sfence();
#endif
}

#undef VEC
#undef VLOAD
#undef VSTORE

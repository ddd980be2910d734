/* Unit tests of graph/arena.c: a randomized workload that checks every promise
** the allocator makes (alignment, no overlap, contents kept across growth), and in
** sanitizer builds that the bytes around each allocation are poisoned, so an
** overrun inside an arena chunk is reported like a malloc overrun. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "graph/arena.h"

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif
#ifdef HAVE_ASAN
#include <sanitizer/asan_interface.h>
#endif

/* A small deterministic generator: the failing case must replay exactly. */
static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Sizes spread over every order of magnitude from 1 byte to 6 MB, with odd sizes
** and the ones next to the chunk and big-allocation thresholds over-represented. */
static size_t pick_size(uint64_t *s) {
    static const size_t edges[] = {1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 4095, 4096,
                                   65535, 65536, 65537, (1u << 20) - 17, (1u << 20) - 1,
                                   1u << 20, (1u << 20) + 1, (2u << 20) - 16};
    uint64_t r = rng_next(s);
    if (r % 8 == 0) return edges[(r >> 8) % (sizeof edges / sizeof edges[0])];
    unsigned bits = (unsigned)((r >> 16) % 23);       /* up to 4 MB */
    size_t size = (size_t)1 << bits;
    return size + (size_t)((r >> 32) % size) + 1;     /* 1 .. 2^(bits+1) */
}

typedef struct live {
    uint8_t *p;
    size_t size;
    uint8_t fill;
} live;

static void check_fill(const live *l) {
    for (size_t i = 0; i < l->size; i += 1 + i / 64) assert_int_equal(l->p[i], l->fill);
    assert_int_equal(l->p[l->size - 1], l->fill);
}

#ifdef HAVE_ASAN
static void check_poisoned_after(const live *l) {
    /* The byte past the end belongs to nobody: reading it must be a report. */
    assert_true(__asan_address_is_poisoned(l->p + l->size));
    assert_null(__asan_region_is_poisoned(l->p, l->size));
}
#endif

static void arena_should_keep_random_allocations_aligned_and_apart(void **state) {
    (void)state;
    enum { ROUNDS = 3, N = 1500 };
    for (uint64_t seed = 1; seed <= ROUNDS; seed++) {
        uint64_t s = seed * 0x9e3779b97f4a7c15ull;
        arena *a = arena_new();
        assert_non_null(a);
        live *l = calloc(N, sizeof *l);
        assert_non_null(l);
        size_t n = 0, bytes = 0;
        while (n < N && bytes < ((size_t)96 << 20)) {
            uint64_t r = rng_next(&s);
            size_t size = pick_size(&s);
            uint8_t *p;
            if (n && r % 5 == 0) {
                /* Growth: the old contents move, the old array is dead. */
                live *old = &l[r % n];
                size_t grown = old->size + pick_size(&s) % 4096 + 1;
                p = arena_grow(a, old->p, old->size, grown);
                assert_non_null(p);
                for (size_t i = 0; i < old->size; i += 1 + i / 64)
                    assert_int_equal(p[i], old->fill);
                memset(p, old->fill, grown);
                bytes += grown - old->size; /* a big old array goes back */
                old->p = p;
                old->size = grown;
#ifdef HAVE_ASAN
                check_poisoned_after(old);
#endif
                continue;
            }
            p = r % 7 == 0 ? arena_calloc(a, size, 1) : arena_alloc(a, size);
            assert_non_null(p);
            assert_int_equal((uintptr_t)p % (size <= 64 ? 8 : 16), 0);
            if (r % 7 == 0)
                for (size_t i = 0; i < size; i += 1 + i / 64) assert_int_equal(p[i], 0);
            l[n] = (live){p, size, (uint8_t)(n * 37 + 1)};
            memset(p, l[n].fill, size);
#ifdef HAVE_ASAN
            check_poisoned_after(&l[n]);
#endif
            bytes += size;
            n++;
        }
        /* Every block still holds its own fill: nothing overlapped anything; the
        ** arena holds at least the live bytes. */
        for (size_t i = 0; i < n; i++) check_fill(&l[i]);
        assert_true(arena_bytes(a) >= bytes);
        free(l);
        arena_free(a);
    }
}

/* The shape of a model that once crashed the loader: one large constant, then
** thousands of small allocations that end a chunk a few bytes short of 16-byte
** alignment, where a 16-aligned request must take a new chunk. */
static void arena_should_start_a_new_chunk_when_alignment_passes_its_end(void **state) {
    (void)state;
    for (size_t first = 399990; first <= 400020; first++) {
        arena *a = arena_new();
        assert_non_null(a);
        uint8_t *big = arena_alloc(a, first);
        assert_non_null(big);
        memset(big, 0x5a, first);
        for (int i = 0; i < 5000; i++) {
            size_t size = i % 3 == 0 ? 72 : i % 3 == 1 ? 8 : 24;
            uint8_t *p = arena_alloc(a, size);
            assert_non_null(p);
            assert_int_equal((uintptr_t)p % (size <= 64 ? 8 : 16), 0);
            memset(p, 0xc3, size);
        }
        assert_int_equal(big[0], 0x5a);
        assert_int_equal(big[first - 1], 0x5a);
        arena_free(a);
    }
}

/* A big allocation given back leaves the arena at once (sanitizer builds keep
** it mapped and poisoned instead, to report late reads); a small one stays; a
** grown big array gives its old copy back. */
static void arena_should_give_back_big_allocations(void **state) {
    (void)state;
    arena *a = arena_new();
    assert_non_null(a);
    size_t base = arena_bytes(a);
    uint8_t *big = arena_alloc(a, (size_t)3 << 20);
    uint8_t *small = arena_alloc(a, 100);
    assert_non_null(big);
    assert_non_null(small);
    memset(big, 7, (size_t)3 << 20);
    size_t with_big = arena_bytes(a);
    assert_true(with_big >= base + ((size_t)3 << 20));
    arena_release(a, small, 100);
    assert_int_equal(arena_bytes(a), with_big);
    uint8_t *grown = arena_grow(a, big, (size_t)3 << 20, (size_t)4 << 20);
    assert_non_null(grown);
    assert_int_equal(grown[((size_t)3 << 20) - 1], 7);
#ifndef HAVE_ASAN
    assert_true(arena_bytes(a) < with_big + ((size_t)4 << 20));
#endif
    size_t before = arena_bytes(a);
    arena_release(a, grown, (size_t)4 << 20);
#ifndef HAVE_ASAN
    assert_true(arena_bytes(a) <= before - ((size_t)4 << 20));
#else
    (void)before;
#endif
    arena_release(a, NULL, 0);
    arena_free(a);
}

static void arena_should_give_zero_byte_requests_distinct_pointers(void **state) {
    (void)state;
    arena *a = arena_new();
    void *p = arena_alloc(a, 0), *q = arena_alloc(a, 0);
    assert_non_null(p);
    assert_non_null(q);
    assert_ptr_not_equal(p, q);
    assert_null(arena_alloc(a, SIZE_MAX - 8));
    assert_null(arena_calloc(a, SIZE_MAX / 2, 4));
    arena_free(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(arena_should_keep_random_allocations_aligned_and_apart),
        cmocka_unit_test(arena_should_start_a_new_chunk_when_alignment_passes_its_end),
        cmocka_unit_test(arena_should_give_zero_byte_requests_distinct_pointers),
        cmocka_unit_test(arena_should_give_back_big_allocations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

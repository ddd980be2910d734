#include "graph/arena.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Allocations past BIG get a mapping of their own (tensor payloads); the rest are
** bumped out of chunks that double in size up to CHUNK_MAX. */
#define CHUNK_MIN ((size_t)64 << 10)
#define CHUNK_MAX ((size_t)8 << 20)
#define BIG ((size_t)1 << 20)
#define PAGE ((size_t)4096)

/* AddressSanitizer cannot see inside our mappings on its own: an overrun of one
** allocation lands in the next, or in chunk space nobody was given, and goes
** unreported. In sanitizer builds every byte the arena has not handed out is
** poisoned and each allocation is followed by a poisoned redzone, so an overrun
** is a sanitizer report like any malloc overrun. Release builds pay nothing. */
#if defined(__SANITIZE_ADDRESS__)
#define ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_ASAN 1
#endif
#endif
#ifdef ARENA_ASAN
#include <sanitizer/asan_interface.h>
#define REDZONE ((size_t)16)
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define REDZONE ((size_t)0)
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

typedef struct block {
    struct block *next, *prev;
    size_t size;             /* bytes mapped, header included */
    int single;              /* one allocation of BIG or more: arena_release unmaps it */
} block;

/* Where a block's payload starts: after the header, 16-byte aligned. */
#define PAYLOAD_OFFSET ((sizeof(block) + 15) & ~(size_t)15)

struct arena {
    block *blocks;
    uint8_t *cur, *end;      /* the current chunk's free space; NULL before the first */
    size_t next_chunk;
    size_t total;
    ProtobufCAllocator pb;
    bool pb_failed;          /* an allocation for protobuf-c came back NULL */
};

static block *map_block(arena *a, size_t payload) {
    size_t size = payload + PAYLOAD_OFFSET;
    if (size < payload) return NULL;
    /* The kernel maps whole pages anyway; owning them keeps the slack poisoned.
    ** No MADV_HUGEPAGE: on the VM this project measures on, the kernel's
    ** compaction and 2 MB zeroing for it doubled system time (a 400k-node run
    ** 0.39-0.49 s of system time without, 0.70-1.18 s with; the 504 MB model
    ** loads no slower without). */
    if (size > SIZE_MAX - PAGE) return NULL;
    size = (size + PAGE - 1) & ~(PAGE - 1);
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    block *b = p;
    b->size = size;
    b->single = 0;
    b->prev = NULL;
    b->next = a->blocks;
    if (a->blocks) a->blocks->prev = b;
    a->blocks = b;
    a->total += size;
    POISON((uint8_t *)b + PAYLOAD_OFFSET, size - PAYLOAD_OFFSET);
    return b;
}

static void *pb_alloc(void *data, size_t size) {
    arena *a = data;
    void *p = arena_alloc(a, size);
    if (!p) a->pb_failed = true;
    return p;
}
static void release_block(arena *a, block *b);

/* protobuf-c frees only its scratch (the member slabs of a big message): a
** mapping of its own goes back at once, the rest with the arena. The size is
** not given, so the block is looked for; these frees are few. */
static void pb_free(void *data, void *p) {
    arena *a = data;
    block *b = p ? (block *)((uint8_t *)p - PAYLOAD_OFFSET) : NULL;
    for (block *x = a->blocks; b && x; x = x->next)
        if (x == b) {
            if (b->single) release_block(a, b);
            return;
        }
}

arena *arena_new(void) {
    arena *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->next_chunk = CHUNK_MIN;
    a->pb.alloc = pb_alloc;
    a->pb.free = pb_free;
    a->pb.allocator_data = a;
    return a;
}

void arena_free(arena *a) {
    if (!a) return;
    for (block *b = a->blocks, *next; b; b = next) {
        next = b->next;
        /* The shadow outlives the mapping: a later mmap at the same address would
        ** otherwise start out poisoned. */
        UNPOISON(b, b->size);
        munmap(b, b->size);
    }
    free(a);
}

void *arena_alloc(arena *a, size_t size) {
    /* Small blocks (names, protobuf structs) need 8-byte alignment; larger ones get
    ** 16 so tensor payloads suit vector loads. Every byte here is a fresh page
    ** written once, so padding costs time. */
    if (size > SIZE_MAX / 2) return NULL;
    size_t align = size <= 64 ? 8 : 16;
    /* A zero-byte request still gets a distinct pointer, with nothing readable. */
    size_t need = ((size ? size : 1) + 7) / 8 * 8 + REDZONE;
    uint8_t *p;
    if (need >= BIG) {
        block *b = map_block(a, need);
        if (!b) return NULL;
        b->single = 1;
        p = (uint8_t *)b + PAYLOAD_OFFSET;
    } else {
        /* Align by offset, never by moving cur first: the rounded pointer can lie
        ** past the end of the chunk, and end - cur would then wrap around. */
        size_t pad = a->cur ? (size_t)(-(uintptr_t)a->cur & (align - 1)) : 0;
        size_t room = a->cur ? (size_t)(a->end - a->cur) : 0;
        if (!a->cur || room < pad || room - pad < need) {
            size_t chunk = a->next_chunk > need ? a->next_chunk : need;
            if (a->next_chunk < CHUNK_MAX) a->next_chunk *= 2;
            block *b = map_block(a, chunk);
            if (!b) return NULL;
            a->cur = (uint8_t *)b + PAYLOAD_OFFSET;
            a->end = (uint8_t *)b + b->size;
            pad = 0;
        }
        p = a->cur + pad;
        a->cur = p + need;
    }
    UNPOISON(p, size);
    return p;
}

void *arena_calloc(arena *a, size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) return NULL;
    /* Fresh mappings are zeroed, but chunk space may follow a grown array. */
    void *p = arena_alloc(a, count * size);
    if (p) memset(p, 0, count * size);
    return p;
}

char *arena_strdup(arena *a, const char *s) {
    size_t n = strlen(s) + 1;
    char *p = arena_alloc(a, n);
    if (p) memcpy(p, s, n);
    return p;
}

void *arena_grow(arena *a, void *old, size_t old_size, size_t new_size) {
    void *p = arena_alloc(a, new_size);
    if (p && old && old_size) memcpy(p, old, old_size < new_size ? old_size : new_size);
    if (p && old) arena_release(a, old, old_size);
    return p;
}

/* The old allocation is dead: a pointer still aimed at it is a bug, which
** sanitizer builds report (the memory stays mapped, poisoned); other builds
** unmap it and would meet such a bug as a fault. */
static void release_block(arena *a, block *b) {
#ifdef ARENA_ASAN
    (void)a;
    POISON((uint8_t *)b + PAYLOAD_OFFSET, b->size - PAYLOAD_OFFSET);
#else
    if (b->prev) b->prev->next = b->next;
    else a->blocks = b->next;
    if (b->next) b->next->prev = b->prev;
    a->total -= b->size;
    munmap(b, b->size);
#endif
}

void arena_release(arena *a, void *p, size_t size) {
    if (!p) return;
    size_t need = (size + 7) / 8 * 8 + REDZONE;
    if (size > SIZE_MAX / 2 || need < BIG) {
        POISON(p, size); /* stays mapped until arena_free */
        return;
    }
    /* an allocation this big got a mapping of its own, p at its payload */
    block *b = (block *)((uint8_t *)p - PAYLOAD_OFFSET);
    if (b->single) release_block(a, b);
}

ProtobufCAllocator *arena_pb_allocator(arena *a) { return &a->pb; }

bool arena_pb_failed(const arena *a) { return a->pb_failed; }
size_t arena_bytes(const arena *a) { return a->total; }

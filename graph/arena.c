#include "graph/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Allocations past BIG get a mapping of their own (tensor payloads); the rest are
** bumped out of chunks that double in size up to CHUNK_MAX. */
#define CHUNK_MIN ((size_t)64 << 10)
#define CHUNK_MAX ((size_t)8 << 20)
#define BIG ((size_t)1 << 20)
#define HUGE_PAGE ((size_t)2 << 20)

typedef struct block {
    struct block *next;
    size_t size;             /* bytes mapped, header included */
} block;

struct arena {
    block *blocks;
    uint8_t *cur, *end;
    size_t next_chunk;
    size_t total;
    ProtobufCAllocator pb;
};

static block *map_block(arena *a, size_t payload) {
    size_t size = payload + sizeof(block);
    if (size < payload) return NULL;
    if (size >= HUGE_PAGE) size = (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
    if (size >= HUGE_PAGE) madvise(p, size, MADV_HUGEPAGE);
#endif
    block *b = p;
    b->size = size;
    b->next = a->blocks;
    a->blocks = b;
    a->total += size;
    return b;
}

/* One spare zero byte after every protobuf allocation makes bytes fields (attribute
** strings) readable as C strings without a copy. */
static void *pb_alloc(void *data, size_t size) {
    uint8_t *p = size < SIZE_MAX ? arena_alloc(data, size + 1) : NULL;
    if (p) p[size] = 0;
    return p;
}
static void pb_free(void *data, void *p) {
    (void)data;
    (void)p;
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
        munmap(b, b->size);
    }
    free(a);
}

void *arena_alloc(arena *a, size_t size) {
    /* Small blocks (names, protobuf structs) need 8-byte alignment; larger ones get
    ** 16 so tensor payloads suit vector loads. Every byte here is a fresh page
    ** written once, so padding costs time. */
    size_t align = size <= 64 ? 8 : 16;
    if (size > SIZE_MAX / 2) return NULL;
    if (size == 0) size = 8;
    a->cur = (uint8_t *)(((uintptr_t)a->cur + align - 1) & ~(uintptr_t)(align - 1));
    size = (size + 7) & ~(size_t)7;
    if (size >= BIG) {
        block *b = map_block(a, size + 16);
        return b ? (uint8_t *)b + ((sizeof(block) + 15) & ~(size_t)15) : NULL;
    }
    if ((size_t)(a->end - a->cur) < size) {
        size_t chunk = a->next_chunk > size ? a->next_chunk : size;
        if (a->next_chunk < CHUNK_MAX) a->next_chunk *= 2;
        block *b = map_block(a, chunk);
        if (!b) return NULL;
        a->cur = (uint8_t *)b + ((sizeof(block) + 15) & ~(size_t)15);
        a->end = (uint8_t *)b + b->size;
    }
    void *p = a->cur;
    a->cur += size;
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
    return p;
}

ProtobufCAllocator *arena_pb_allocator(arena *a) { return &a->pb; }
size_t arena_bytes(const arena *a) { return a->total; }

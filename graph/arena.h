/* A bump allocator for everything one model holds, in blocks from mmap: one
** free for a whole model, and big blocks that go back to the system at once
** when released. */
#ifndef TILEOPT_ARENA_H
#define TILEOPT_ARENA_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct arena arena;

arena *arena_new(void);
void arena_free(arena *a);
/* 8-byte aligned, 16 for sizes over 64; NULL when out of memory. */
void *arena_alloc(arena *a, size_t size);
void *arena_calloc(arena *a, size_t count, size_t size);
char *arena_strdup(arena *a, const char *s);
/* Grow an array allocated from the arena (old contents copied). */
void *arena_grow(arena *a, void *old, size_t old_size, size_t new_size);
/* Done with an allocation of size bytes (as asked for): one of 1 MiB or more
** goes back at once, smaller ones stay until arena_free. p must not be used
** again. */
void arena_release(arena *a, void *p, size_t size);
/* A protobuf-c allocator drawing from the arena (free is a no-op). */
ProtobufCAllocator *arena_pb_allocator(arena *a);
/* Whether an allocation for protobuf-c failed: an unpack that returns NULL
** then ran out of memory rather than met a bad message. */
bool arena_pb_failed(const arena *a);
size_t arena_bytes(const arena *a);

#endif

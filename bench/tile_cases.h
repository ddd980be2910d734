/*
** What bench_tile.c and ab_tile.c share: the Tile kernel's benchmark cases
** (bench_tile.py's numpy child lists the same), a clock, and big buffers faulted
** in up front.
** Static definitions: each benchmark is one source file.
*/
#ifndef TILEOPT_BENCH_TILE_CASES_H
#define TILEOPT_BENCH_TILE_CASES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "graph/dtype.h"

typedef struct tile_case {
    const char *name;
    int32_t elem;
    int32_t rank;
    int64_t dims[4], reps[4];
} tile_case;

static const tile_case tile_cases[] = {
    {"f32 [1024] x [4096]", DT_FLOAT, 1, {1024}, {4096}},
    {"f32 [1024,1024] x [4,1]", DT_FLOAT, 2, {1024, 1024}, {4, 1}},
    {"f32 [1024,1024] x [1,4]", DT_FLOAT, 2, {1024, 1024}, {1, 4}},
    {"f32 [64,64,3] x [16,16,1]", DT_FLOAT, 3, {64, 64, 3}, {16, 16, 1}},
    {"f32 [1,512,1,1] x [32,1,56,56]", DT_FLOAT, 4, {1, 512, 1, 1}, {32, 1, 56, 56}},
    {"i8 [4096,3] x [1,1024]", DT_INT8, 2, {4096, 3}, {1, 1024}},
};
#define TILE_CASES (sizeof tile_cases / sizeof *tile_cases)

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Faulted in with huge pages asked for: what is timed is writing, not faults. */
static uint8_t *big_buffer(size_t n) {
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    madvise(p, n, MADV_HUGEPAGE);
    memset(p, 1, n);
    return p;
}

#endif

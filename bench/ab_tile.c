/*
** In-process A/B of the Tile engine: this tree's tile_engine against
** old_tile_engine, the same code at an older revision with its symbols renamed
** (bench/ab_tile.sh builds both and links them here).
**
** Why in one process: on the project's VM the same binary runs up to 2x faster
** or slower from one process to the next (where the host placed its memory), so
** two binaries timed in turn compare their processes more than their code.
** Here both engines write the same output buffer from the same input, in
** passes that alternate which goes first; each pass keeps each engine's best of
** N rounds as a share of the memset ceiling of that pass, and the medians over
** the passes are compared.
**
**   ab_tile [CASE [PASSES]]   (CASE 0: all six cases of bench_tile)
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "eval/eval_impl.h"

void old_tile_engine(uint8_t *dst, const uint8_t *src, size_t esz, const tile_axis *ax, int n);

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint8_t *big_buffer(size_t n) {
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("ab_tile: mmap");
        exit(1);
    }
    madvise(p, n, MADV_HUGEPAGE);
    memset(p, 1, n);
    return p;
}

typedef struct tcase {
    const char *name;
    size_t esz;
    int rank;
    int64_t dims[4], reps[4];
} tcase;

/* bench_tile's cases */
static const tcase cases[] = {
    {"f32 [1024] x [4096]", 4, 1, {1024}, {4096}},
    {"f32 [1024,1024] x [4,1]", 4, 2, {1024, 1024}, {4, 1}},
    {"f32 [1024,1024] x [1,4]", 4, 2, {1024, 1024}, {1, 4}},
    {"f32 [64,64,3] x [16,16,1]", 4, 3, {64, 64, 3}, {16, 16, 1}},
    {"f32 [1,512,1,1] x [32,1,56,56]", 4, 4, {1, 512, 1, 1}, {32, 1, 56, 56}},
    {"i8 [4096,3] x [1,1024]", 1, 2, {4096, 3}, {1, 1024}},
};

#define MAX_PASSES 64

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int only = argc > 1 ? atoi(argv[1]) : 0;
    int passes = argc > 2 ? atoi(argv[2]) : 12;
    if (passes < 1 || passes > MAX_PASSES) passes = 12;
    for (int c = 0; c < (int)(sizeof cases / sizeof *cases); c++) {
        if (only && c + 1 != only) continue;
        const tcase *t = &cases[c];
        tile_axis ax[4];
        size_t in = t->esz, out = t->esz;
        for (int i = t->rank - 1; i >= 0; i--) {
            ax[i] = (tile_axis){t->dims[i], (int64_t)in, t->reps[i]};
            in *= (size_t)t->dims[i];
            out *= (size_t)(t->dims[i] * t->reps[i]);
        }
        uint8_t *src = big_buffer(in), *dst = big_buffer(out), *check = big_buffer(out);
        for (size_t i = 0; i < in; i++) src[i] = (uint8_t)(i * 7 + 3);
        old_tile_engine(check, src, t->esz, ax, t->rank);
        tile_engine(dst, src, t->esz, ax, t->rank);
        if (memcmp(check, dst, out)) {
            fprintf(stderr, "ab_tile: %s: the two engines differ\n", t->name);
            return 1;
        }
        int rounds = out > ((size_t)64 << 20) ? 5 : 20;
        double share[2][MAX_PASSES];
        for (int p = 0; p < passes; p++) {
            double best[3] = {1e30, 1e30, 1e30}; /* memset, old, new */
            for (int r = 0; r < rounds; r++) {
                double t0 = now_ms();
                memset(dst, 1 + r % 255, out); /* never zeros: see bench_tile.c */
                double dt = now_ms() - t0;
                if (dt < best[0]) best[0] = dt;
            }
            for (int k = 0; k < 2; k++) {
                int which = k ^ (p & 1);
                for (int r = 0; r < rounds; r++) {
                    double t0 = now_ms();
                    if (which)
                        tile_engine(dst, src, t->esz, ax, t->rank);
                    else
                        old_tile_engine(dst, src, t->esz, ax, t->rank);
                    double dt = now_ms() - t0;
                    if (dt < best[1 + which]) best[1 + which] = dt;
                }
            }
            share[0][p] = best[0] / best[1];
            share[1][p] = best[0] / best[2];
        }
        qsort(share[0], (size_t)passes, sizeof(double), by_value);
        qsort(share[1], (size_t)passes, sizeof(double), by_value);
        printf("%-32s old %4.0f%% [%3.0f..%3.0f]   new %4.0f%% [%3.0f..%3.0f]\n", t->name,
               100 * share[0][passes / 2], 100 * share[0][0], 100 * share[0][passes - 1],
               100 * share[1][passes / 2], 100 * share[1][0], 100 * share[1][passes - 1]);
        munmap(src, in);
        munmap(dst, out);
        munmap(check, out);
    }
    return 0;
}

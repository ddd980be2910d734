/*
** In-process A/B of the Tile engine: this tree's tile_engine against
** old_tile_engine, the same code at an older revision with its symbols renamed
** (bench/ab_tile.sh builds both and links them here).
**
** Why in one process: on the project's VM the same binary runs up to 2x faster
** or slower from one process to the next (probably where the host placed its
** memory), so two binaries timed in turn compare their processes more than
** their code.
** Here both engines write the same output buffer from the same input, in
** passes that alternate which goes first; each pass keeps each engine's best of
** N rounds as a share of the memset ceiling of that pass, and the medians over
** the passes are compared.
**
**   ab_tile [CASE [PASSES]]   (CASE 0: all six cases of bench_tile)
*/
#include "bench/tile_cases.h"
#include "eval/eval_impl.h"

void old_tile_engine(uint8_t *dst, const uint8_t *src, size_t esz, const tile_axis *ax, int n);

#define MAX_PASSES 64

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int only = argc > 1 ? atoi(argv[1]) : 0;
    int passes = argc > 2 ? atoi(argv[2]) : 12;
    if (passes < 1 || passes > MAX_PASSES) passes = 12;
    for (int c = 0; c < (int)TILE_CASES; c++) {
        if (only && c + 1 != only) continue;
        const tile_case *t = &tile_cases[c];
        tile_axis ax[4];
        size_t esz = dtype_get(t->elem)->size, in = esz, out = esz;
        for (int i = t->rank - 1; i >= 0; i--) {
            ax[i] = (tile_axis){t->dims[i], (int64_t)in, t->reps[i]};
            in *= (size_t)t->dims[i];
            out *= (size_t)(t->dims[i] * t->reps[i]);
        }
        uint8_t *src = big_buffer(in), *dst = big_buffer(out), *check = big_buffer(out);
        for (size_t i = 0; i < in; i++) src[i] = (uint8_t)(i * 7 + 3);
        old_tile_engine(check, src, esz, ax, t->rank);
        tile_engine(dst, src, esz, ax, t->rank);
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
                        tile_engine(dst, src, esz, ax, t->rank);
                    else
                        old_tile_engine(dst, src, esz, ax, t->rank);
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

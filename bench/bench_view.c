/*
** tileopt's evaluator: Add(Tile(x, r), y) with the Tile as a strided view (what
** the evaluator does) vs the Tile materialized first (kernel_tile, then Add).
** Prints the median times and the ratio materialized/view for two shapes:
**   tile_add  x[64,256] r[16,4] + y[1024,1024]       (models/tile_add.onnx)
**   bias      b[1,64,1,1] r[8,1,56,56] + y[8,64,56,56]
** Built by meson (bench/bench_view), run by bench/bench_fuse.py; usage: bench_view [ROUNDS]
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eval/eval.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static kernel_fn find_kernel(const char *op) {
    for (size_t i = 0; i < kernel_table_elementwise_count; i++)
        if (strcmp(op_table[kernel_table_elementwise[i].op].name, op) == 0)
            return kernel_table_elementwise[i].fn;
    return NULL;
}

static tensor *random_tensor(const int64_t *dims, int32_t rank, unsigned seed) {
    tensor *t;
    errbuf err = {0};
    if (tensor_new(DT_FLOAT, dims, rank, NULL, &t, &err)) {
        fprintf(stderr, "bench_view: %s\n", err.msg);
        exit(1);
    }
    float *p = (float *)t->data;
    uint64_t n = tensor_numel(t);
    for (uint64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
    return t;
}

/* One Add(Tile(x, r), y); returns ms, or a negative value on failure. */
static double run_once(kernel_fn add, const Onnx__NodeProto *node, tensor *x,
                       const int64_t *reps, size_t n, tensor *y, bool view,
                       tensor **keep) {
    errbuf err = {0};
    eval_env lim;
    eval_env_default(&lim);
    double t0 = now_ms();
    tensor *t = NULL, *out = NULL;
    int rc = view ? view_tile(x, reps, n, &lim, &t, &err)
                  : kernel_tile(x, reps, n, &lim, &t, &err);
    if (!rc) {
        tensor *in[2] = {t, y};
        rc = add(node, 13, in, 2, &out, 1, &lim, &err);
    }
    double ms = now_ms() - t0;
    tensor_free(t);
    if (rc) {
        fprintf(stderr, "bench_view: %s\n", err.msg);
        return -1;
    }
    if (*keep) tensor_free(*keep);
    *keep = out;
    return ms;
}

static int bench(const char *label, const int64_t *xd, const int64_t *reps,
                 const int64_t *yd, int32_t rank, int rounds) {
    kernel_fn add = find_kernel("Add");
    if (!add) {
        fprintf(stderr, "bench_view: no Add kernel\n");
        return 1;
    }
    Onnx__NodeProto node;
    onnx__node_proto__init(&node);
    node.op_type = (char *)"Add";
    tensor *x = random_tensor(xd, rank, 1), *y = random_tensor(yd, rank, 2);
    double *tv = malloc(sizeof(double) * (size_t)rounds);
    double *tm = malloc(sizeof(double) * (size_t)rounds);
    tensor *ov = NULL, *om = NULL;
    int rc = 0;
    for (int k = -3; k < rounds && !rc; k++) {
        double a = run_once(add, &node, x, reps, (size_t)rank, y, true, &ov);
        double b = run_once(add, &node, x, reps, (size_t)rank, y, false, &om);
        if (a < 0 || b < 0) rc = 1;
        else if (k >= 0) tv[k] = a, tm[k] = b;
    }
    if (!rc) {
        /* same values both ways, or the comparison means nothing */
        const float *p = (const float *)ov->data, *q = (const float *)om->data;
        if (!tensor_is_contiguous(ov) || !tensor_is_contiguous(om) ||
            memcmp(p, q, tensor_nbytes(om)) != 0) {
            fprintf(stderr, "bench_view: %s: view and materialized results differ\n", label);
            rc = 1;
        }
    }
    if (!rc) {
        qsort(tv, (size_t)rounds, sizeof *tv, cmp_d);
        qsort(tm, (size_t)rounds, sizeof *tm, cmp_d);
        double mv = tv[rounds / 2], mm = tm[rounds / 2];
        printf("%-9s view %8.3f ms  materialized %8.3f ms  ratio %5.2fx\n", label, mv, mm,
               mm / mv);
    }
    tensor_free(ov);
    tensor_free(om);
    tensor_free(x);
    tensor_free(y);
    free(tv);
    free(tm);
    return rc;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 30;
    if (rounds < 1) rounds = 30;
    const int64_t xd[2] = {64, 256}, r[2] = {16, 4}, yd[2] = {1024, 1024};
    const int64_t bd[4] = {1, 64, 1, 1}, br[4] = {8, 1, 56, 56}, byd[4] = {8, 64, 56, 56};
    int rc = bench("tile_add", xd, r, yd, 2, rounds);
    rc |= bench("bias", bd, br, byd, 4, rounds);
    return rc;
}

/*
** Matrix products for the evaluator: OpenBLAS when the machine has it, loaded at
** first use, else built-in loops. The library links no BLAS, so a program (or a
** Python wheel) that carries it runs where OpenBLAS is not installed; verify
** then compares two models on the same kernels either way.
*/
#ifndef TILEOPT_EVAL_BLAS_H
#define TILEOPT_EVAL_BLAS_H

#include <stdbool.h>
#include <stdint.h>

/* C = alpha op(A) op(B) + beta C, row-major; float when dbl is false, double
** when true; dims up to INT_MAX (the callers check). */
void blas_gemm(bool dbl, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
               const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *c,
               int64_t ldc);

/* The library that computes blas_gemm: the file name of the BLAS loaded, or
** "built-in". */
const char *blas_backend(void);

/* Tests: compute with the built-in loops (true) or whatever was found (false). */
void blas_force_builtin(bool on);

#endif

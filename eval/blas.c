/*
** eval/blas.h: OpenBLAS through dlopen, or built-in loops when it is absent.
** The handle and its two entry points are process-wide, found once: they never
** change after that, so contexts on other threads share them safely.
*/
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "eval/blas.h"

/* CBLAS's enum values (cblas.h), fixed by the standard interface. */
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };

typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha,
                         const float *a, int lda, const float *b, int ldb, float beta, float *c,
                         int ldc);
typedef void (*dgemm_fn)(int order, int ta, int tb, int m, int n, int k, double alpha,
                         const double *a, int lda, const double *b, int ldb, double beta,
                         double *c, int ldc);

/* Debian's OpenBLAS, then the BLAS alternative (OpenBLAS or another CBLAS). */
static const char *const candidates[] = {"libopenblas.so.0", "libopenblas.so", "libblas.so.3"};

static pthread_once_t found_once = PTHREAD_ONCE_INIT;
static sgemm_fn found_sgemm;
static dgemm_fn found_dgemm;
static const char *found_name = "built-in";
static atomic_bool builtin_only;

static void find_blas(void) {
    for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++) {
        void *h = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) continue;
        /* function pointers from dlsym: POSIX guarantees the conversion */
        sgemm_fn s;
        dgemm_fn d;
        *(void **)(void *)&s = dlsym(h, "cblas_sgemm");
        *(void **)(void *)&d = dlsym(h, "cblas_dgemm");
        if (s && d) {
            found_sgemm = s;
            found_dgemm = d;
            found_name = candidates[i];
            return; /* kept open for the life of the process */
        }
        dlclose(h);
    }
}

const char *blas_backend(void) {
    pthread_once(&found_once, find_blas);
    return atomic_load(&builtin_only) || !found_sgemm ? "built-in" : found_name;
}

void blas_force_builtin(bool on) { atomic_store(&builtin_only, on); }

/*
** The built-in product, for one element type T: C scaled by beta first (beta 0
** clears it, NaNs included, as BLAS does), then with B not transposed the rows
** of B are added along C's row (contiguous, vectorized), and with B transposed
** each element is a dot product of two rows.
*/
#define BUILTIN_GEMM(NAME, T)                                                                \
    static void NAME(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T *a, \
                     int64_t lda, const T *b, int64_t ldb, T beta, T *c, int64_t ldc) {      \
        for (int64_t i = 0; i < m; i++) {                                                    \
            T *ci = c + i * ldc;                                                             \
            for (int64_t j = 0; j < n; j++) ci[j] = beta == 0 ? 0 : ci[j] * beta;            \
            if (!tb) {                                                                       \
                for (int64_t p = 0; p < k; p++) {                                            \
                    T av = alpha * (ta ? a[p * lda + i] : a[i * lda + p]);                   \
                    const T *bp = b + p * ldb;                                               \
                    for (int64_t j = 0; j < n; j++) ci[j] += av * bp[j];                     \
                }                                                                            \
                continue;                                                                    \
            }                                                                                \
            for (int64_t j = 0; j < n; j++) {                                                \
                const T *bj = b + j * ldb;                                                   \
                T s = 0;                                                                     \
                if (ta)                                                                      \
                    for (int64_t p = 0; p < k; p++) s += a[p * lda + i] * bj[p];             \
                else                                                                         \
                    for (int64_t p = 0; p < k; p++) s += a[i * lda + p] * bj[p];             \
                ci[j] += alpha * s;                                                          \
            }                                                                                \
        }                                                                                    \
    }

BUILTIN_GEMM(gemm_f32, float)
BUILTIN_GEMM(gemm_f64, double)

void blas_gemm(bool dbl, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
               const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *c,
               int64_t ldc) {
    if (m == 0 || n == 0) return;
    pthread_once(&found_once, find_blas);
    if (!found_sgemm || atomic_load(&builtin_only)) {
        if (dbl) gemm_f64(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        else gemm_f32(ta, tb, m, n, k, (float)alpha, a, lda, b, ldb, (float)beta, c, ldc);
        return;
    }
    /* BLAS wants leading dimensions of at least 1 even for empty operands */
    int la = (int)(lda > 0 ? lda : 1), lb = (int)(ldb > 0 ? ldb : 1);
    int A = ta ? CBLAS_TRANS : CBLAS_NO_TRANS, B = tb ? CBLAS_TRANS : CBLAS_NO_TRANS;
    if (dbl)
        found_dgemm(CBLAS_ROW_MAJOR, A, B, (int)m, (int)n, (int)k, alpha, a, la, b, lb, beta, c,
                    (int)ldc);
    else
        found_sgemm(CBLAS_ROW_MAJOR, A, B, (int)m, (int)n, (int)k, (float)alpha, a, la, b, lb,
                    (float)beta, c, (int)ldc);
}

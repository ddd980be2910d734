/*
** Linear algebra: MatMul, Gemm, Det and Einsum. Floating types go through BLAS (eval/blas.h:
** OpenBLAS when present): float for FLOAT, FLOAT16 and BFLOAT16, double for DOUBLE.
** Integer MatMul/Gemm accumulate in 64 bits and wrap as the element type does.
** Also the helpers the other neural-network kernels share (eval_impl.h):
** nn_input, nn_output and nn_gemm.
*/
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/blas.h"
#include "eval/eval_impl.h"

/* ------------------------------------------------------------------ helpers */

int nn_input(tensor *t, const char *what, const eval_env *env, tensor **out, errbuf *err) {
    *out = NULL;
    switch (t->elem) {
    case DT_FLOAT:
    case DT_DOUBLE:
        return tensor_contiguous(t, env, out, err);
    case DT_FLOAT16:
    case DT_BFLOAT16:
        return eval_cast(t, DT_FLOAT, env, out, err);
    default:
        return err_set(err, TILEOPT_UNSUPPORTED, "%s: element type %s is not supported",
                       what, dtype_name(t->elem));
    }
}

int nn_output(tensor **w, int32_t elem, const eval_env *env, errbuf *err) {
    if ((*w)->elem == elem) return TILEOPT_OK;
    tensor *o = NULL;
    int rc = eval_cast(*w, elem, env, &o, err);
    tensor_free(*w);
    *w = o;
    return rc;
}

void nn_gemm(int32_t elem, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
             const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *c,
             int64_t ldc) {
    blas_gemm(elem == DT_DOUBLE, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static bool blas_dim(int64_t v) { return v >= 0 && v <= INT_MAX; }

static bool is_int_elem(int32_t e) {
    return e == DT_INT32 || e == DT_INT64 || e == DT_UINT32 || e == DT_UINT64;
}

/* Element i of an integer tensor's contiguous data, widened. */
static uint64_t int_at(const tensor *t, int64_t i) {
    switch (t->elem) {
    case DT_INT32: return (uint64_t)(int64_t)((const int32_t *)(const void *)t->data)[i];
    case DT_UINT32: return ((const uint32_t *)(const void *)t->data)[i];
    default: return ((const uint64_t *)(const void *)t->data)[i];
    }
}

static void int_put(tensor *t, int64_t i, uint64_t v) {
    switch (t->elem) {
    case DT_INT32:
    case DT_UINT32: ((uint32_t *)(void *)t->data)[i] = (uint32_t)v; break;
    default: ((uint64_t *)(void *)t->data)[i] = v; break;
    }
}

/* ------------------------------------------------------------------- MatMul */

/* numpy matmul: 1-D operands get a 1 prepended (A) or appended (B) and lose it
** again; batch dims (all but the last two) broadcast. */
typedef struct mm_plan {
    int64_t m, k, n, batch;
    int32_t brank;
    int64_t bdims[TENSOR_MAX_RANK];
    int64_t astep[TENSOR_MAX_RANK], bstep[TENSOR_MAX_RANK]; /* elements per batch index, 0: broadcast */
    int64_t odims[TENSOR_MAX_RANK];
    int32_t orank;
} mm_plan;

static int mm_plan_make(const Onnx__NodeProto *nd, const tensor *a, const tensor *b,
                        mm_plan *p, errbuf *err) {
    if (a->rank == 0 || b->rank == 0)
        return err_set(err, TILEOPT_INVALID, "MatMul %s: an operand is a scalar",
                       eval_node_name(nd));
    int32_t ra = a->rank, rb = b->rank;
    p->m = ra == 1 ? 1 : a->dims[ra - 2];
    p->k = a->dims[ra - 1];
    int64_t kb = rb == 1 ? b->dims[0] : b->dims[rb - 2];
    p->n = rb == 1 ? 1 : b->dims[rb - 1];
    if (kb != p->k)
        return err_set(err, TILEOPT_INVALID, "MatMul %s: inner dims differ (%lld and %lld)",
                       eval_node_name(nd), (long long)p->k, (long long)kb);
    int32_t ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0;
    p->brank = ba > bb ? ba : bb;
    int64_t sa = p->m * p->k, sb = p->k * p->n;
    p->batch = 1;
    for (int32_t i = p->brank - 1; i >= 0; i--) {
        int32_t ia = i - (p->brank - ba), ib = i - (p->brank - bb);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return err_set(err, TILEOPT_INVALID,
                           "MatMul %s: batch dims %lld and %lld do not broadcast",
                           eval_node_name(nd), (long long)da, (long long)db);
        p->bdims[i] = da == 1 ? db : da;
        p->astep[i] = da == 1 ? 0 : sa;
        p->bstep[i] = db == 1 ? 0 : sb;
        sa *= da;
        sb *= db;
        if (!eval_mul_i64(p->batch, p->bdims[i], &p->batch))
            return err_set(err, TILEOPT_LIMIT, "MatMul %s: output too large",
                           eval_node_name(nd));
    }
    p->orank = 0;
    for (int32_t i = 0; i < p->brank; i++) p->odims[p->orank++] = p->bdims[i];
    if (ra > 1) p->odims[p->orank++] = p->m;
    if (rb > 1) p->odims[p->orank++] = p->n;
    return TILEOPT_OK;
}

/* Offsets (elements) of batch index i in A and B. */
static void mm_offsets(const mm_plan *p, int64_t i, int64_t *oa, int64_t *ob) {
    *oa = *ob = 0;
    for (int32_t d = p->brank - 1; d >= 0; d--) {
        int64_t x = i % p->bdims[d];
        i /= p->bdims[d];
        *oa += x * p->astep[d];
        *ob += x * p->bstep[d];
    }
}

static int matmul_int(const mm_plan *p, tensor *a, tensor *b, tensor *o) {
    for (int64_t bi = 0; bi < p->batch; bi++) {
        int64_t oa, ob;
        mm_offsets(p, bi, &oa, &ob);
        int64_t oc = bi * p->m * p->n;
        for (int64_t i = 0; i < p->m; i++)
            for (int64_t j = 0; j < p->n; j++) {
                uint64_t acc = 0;
                for (int64_t q = 0; q < p->k; q++)
                    acc += int_at(a, oa + i * p->k + q) * int_at(b, ob + q * p->n + j);
                int_put(o, oc + i * p->n + j, acc);
            }
    }
    return TILEOPT_OK;
}

int nn_matmul(const Onnx__NodeProto *n, tensor *A, tensor *B, const eval_env *env,
              tensor **out, errbuf *err) {
    tensor *in[2] = {A, B};
    *out = NULL;
    if (in[0]->elem != in[1]->elem)
        return err_set(err, TILEOPT_INVALID, "MatMul %s: operands of types %s and %s",
                       eval_node_name(n), dtype_name(in[0]->elem), dtype_name(in[1]->elem));
    mm_plan p;
    int rc = mm_plan_make(n, in[0], in[1], &p, err);
    if (rc) return rc;
    int32_t elem = in[0]->elem;
    tensor *a = NULL, *b = NULL, *o = NULL;
    if (is_int_elem(elem)) {
        if (!(rc = tensor_contiguous(in[0], env, &a, err)) &&
            !(rc = tensor_contiguous(in[1], env, &b, err)) &&
            !(rc = tensor_alloc(elem, p.odims, p.orank, env, &o, err)))
            rc = matmul_int(&p, a, b, o);
    } else {
        if (!blas_dim(p.m) || !blas_dim(p.n) || !blas_dim(p.k))
            rc = err_set(err, TILEOPT_LIMIT, "MatMul %s: a dim exceeds what BLAS takes",
                         eval_node_name(n));
        if (!rc && !(rc = nn_input(in[0], "MatMul", env, &a, err)) &&
            !(rc = nn_input(in[1], "MatMul", env, &b, err)) &&
            !(rc = tensor_alloc(a->elem, p.odims, p.orank, env, &o, err))) {
            size_t es = a->elem == DT_DOUBLE ? 8 : 4;
            for (int64_t bi = 0; bi < p.batch; bi++) {
                int64_t oa, ob;
                mm_offsets(&p, bi, &oa, &ob);
                nn_gemm(a->elem, false, false, p.m, p.n, p.k, 1.0, a->data + oa * es, p.k,
                        b->data + ob * es, p.n, 0.0, o->data + (size_t)(bi * p.m * p.n) * es,
                        p.n);
            }
            rc = nn_output(&o, elem, env, err);
        }
    }
    tensor_free(a);
    tensor_free(b);
    if (rc) {
        tensor_free(o);
        return err_prefix(err, "MatMul %s: ", eval_node_name(n));
    }
    *out = o;
    return TILEOPT_OK;
}

static int k_matmul(KERNEL_PARAMS) {
    (void)opset;
    if (n_in != 2 || !in[0] || !in[1] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "MatMul %s: needs two inputs", eval_node_name(n));
    return nn_matmul(n, in[0], in[1], env, &out[0], err);
}

/* --------------------------------------------------------------------- Gemm */

/* Y = alpha A' B' + beta C, C broadcast one way to [M, N] (before opset 7 only
** with broadcast=1; without it C must be [M, N] already). */
static int k_gemm(KERNEL_PARAMS) {
    const char *nm = eval_node_name(n);
    if (n_in < 2 || !in[0] || !in[1] || n_out < 1 || (opset < 11 && (n_in < 3 || !in[2])))
        return err_set(err, TILEOPT_INVALID, "Gemm %s: needs A, B%s", nm,
                       opset < 11 ? " and C" : "");
    tensor *A = in[0], *B = in[1], *C = n_in > 2 ? in[2] : NULL;
    if (A->rank != 2 || B->rank != 2)
        return err_set(err, TILEOPT_INVALID, "Gemm %s: A and B must be 2-D", nm);
    if (A->elem != B->elem || (C && C->elem != A->elem))
        return err_set(err, TILEOPT_INVALID, "Gemm %s: operands of different types", nm);
    bool ta = graph_attr_int(n, "transA", 0) != 0, tb = graph_attr_int(n, "transB", 0) != 0;
    double alpha = graph_attr_float(n, "alpha", 1.0f), beta = graph_attr_float(n, "beta", 1.0f);
    int64_t m = ta ? A->dims[1] : A->dims[0], k = ta ? A->dims[0] : A->dims[1];
    int64_t kb = tb ? B->dims[1] : B->dims[0], nn = tb ? B->dims[0] : B->dims[1];
    if (k != kb)
        return err_set(err, TILEOPT_INVALID, "Gemm %s: inner dims differ (%lld and %lld)", nm,
                       (long long)k, (long long)kb);
    int64_t od[2] = {m, nn};
    if (C && opset < 7 && !graph_attr_int(n, "broadcast", 0) &&
        !(C->rank == 2 && C->dims[0] == m && C->dims[1] == nn))
        return err_set(err, TILEOPT_INVALID, "Gemm %s: C must be [M, N] without broadcast=1",
                       nm);
    int32_t elem = A->elem;
    bool ints = is_int_elem(elem);
    tensor *a = NULL, *b = NULL, *cv = NULL, *o = NULL;
    int rc = TILEOPT_OK;
    if (!ints && (!blas_dim(m) || !blas_dim(nn) || !blas_dim(k)))
        rc = err_set(err, TILEOPT_LIMIT, "a dim exceeds what BLAS takes");
    if (!rc) rc = ints ? tensor_contiguous(A, env, &a, err) : nn_input(A, "Gemm", env, &a, err);
    if (!rc) rc = ints ? tensor_contiguous(B, env, &b, err) : nn_input(B, "Gemm", env, &b, err);
    if (!rc) rc = tensor_new(ints ? elem : a->elem, od, 2, env, &o, err);
    /* Y starts as beta C broadcast to [M, N] */
    if (!rc && C && beta != 0) {
        tensor *ce = NULL, *cw = NULL;
        rc = view_expand(C, od, 2, &ce, err);
        if (!rc && (ce->rank != 2 || ce->dims[0] != m || ce->dims[1] != nn))
            rc = err_set(err, TILEOPT_INVALID, "C does not broadcast to [M, N]");
        if (!rc) rc = ints ? tensor_contiguous(ce, env, &cw, err) : nn_input(ce, "Gemm", env, &cw, err);
        tensor_free(ce);
        cv = cw;
        for (int64_t i = 0; !rc && i < m * nn; i++) {
            if (ints)
                int_put(o, i, int_at(cv, i) * (uint64_t)(int64_t)beta);
            else if (o->elem == DT_DOUBLE)
                ((double *)(void *)o->data)[i] = beta * ((const double *)(const void *)cv->data)[i];
            else
                ((float *)(void *)o->data)[i] =
                    (float)(beta * ((const float *)(const void *)cv->data)[i]);
        }
    }
    if (!rc && ints) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < nn; j++) {
                uint64_t acc = 0;
                for (int64_t q = 0; q < k; q++)
                    acc += int_at(a, ta ? q * m + i : i * k + q) *
                           int_at(b, tb ? j * k + q : q * nn + j);
                int_put(o, i * nn + j, int_at(o, i * nn + j) + acc * (uint64_t)(int64_t)alpha);
            }
    } else if (!rc) {
        nn_gemm(a->elem, ta, tb, m, nn, k, alpha, a->data, ta ? m : k, b->data, tb ? k : nn,
                1.0, o->data, nn);
        rc = nn_output(&o, elem, env, err);
    }
    tensor_free(a);
    tensor_free(b);
    tensor_free(cv);
    if (rc) {
        tensor_free(o);
        return err_prefix(err, "Gemm %s: ", nm);
    }
    out[0] = o;
    return TILEOPT_OK;
}

/* ---------------------------------------------------------------------- Det */

/* Determinants of the trailing [M, M] matrices, by LU decomposition with
** partial pivoting in double. */
static int k_det(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 1 || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "Det %s: needs X", nm);
    tensor *X = in[0];
    int32_t r = X->rank;
    if (r < 2 || X->dims[r - 1] != X->dims[r - 2])
        return err_set(err, TILEOPT_INVALID, "Det %s: X must end in a square [M, M]", nm);
    int64_t m = X->dims[r - 1], batch = 1;
    for (int32_t i = 0; i < r - 2; i++) batch *= X->dims[i];
    tensor *x = NULL, *y = NULL;
    double *a = NULL;
    int rc = eval_cast(X, DT_DOUBLE, env, &x, err);
    if (!rc) rc = tensor_alloc(DT_DOUBLE, X->dims, r - 2, env, &y, err);
    size_t cells = (size_t)(m * m);
    if (!rc && !(a = malloc((cells ? cells : 1) * sizeof *a)))
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
    for (int64_t b = 0; !rc && b < batch; b++) {
        memcpy(a, (const double *)(const void *)x->data + b * m * m, cells * sizeof *a);
        double det = 1;
        for (int64_t c = 0; c < m && det != 0; c++) {
            int64_t p = c;
            for (int64_t i = c + 1; i < m; i++)
                if (fabs(a[i * m + c]) > fabs(a[p * m + c])) p = i;
            if (a[p * m + c] == 0) {
                det = 0;
                break;
            }
            if (p != c) {
                for (int64_t j = 0; j < m; j++) {
                    double t = a[c * m + j];
                    a[c * m + j] = a[p * m + j];
                    a[p * m + j] = t;
                }
                det = -det;
            }
            det *= a[c * m + c];
            for (int64_t i = c + 1; i < m; i++) {
                double f = a[i * m + c] / a[c * m + c];
                for (int64_t j = c; j < m; j++) a[i * m + j] -= f * a[c * m + j];
            }
        }
        ((double *)(void *)y->data)[b] = det;
    }
    free(a);
    tensor_free(x);
    if (!rc && X->elem != DT_DOUBLE) rc = nn_output(&y, X->elem, env, err);
    if (rc) {
        tensor_free(y);
        return rc == TILEOPT_NOMEM ? rc : (int)err_prefix(err, "Det %s: ", nm);
    }
    out[0] = y;
    return TILEOPT_OK;
}

/* ------------------------------------------------------------------- Einsum */

/*
** Einsum sums, over every label the output does not keep, the products of
** the operands' elements the labels select. Labels are a-z and A-Z; "..."
** stands for the same broadcast dims in every operand. A label repeated in one
** operand takes its diagonal. Without "->", the output is the ellipsis dims,
** then the labels used once, in alphabetical order.
*/
#define ES_LETTERS 52
#define ES_LABELS (ES_LETTERS + TENSOR_MAX_RANK)  /* letters, then ellipsis dims */
#define ES_MAX_OPERANDS 16

typedef struct es_term {
    int32_t n;                      /* labels of the term, one per axis */
    int32_t label[TENSOR_MAX_RANK];
} es_term;

static int es_letter(char c) {
    if (c >= 'a' && c <= 'z') return c - 'a';
    if (c >= 'A' && c <= 'Z') return 26 + c - 'A';
    return -1;
}

/* One term of s[0..len): letters and at most one "...", expanding to the last
** `ell` of the ellipsis labels (ell < 0: as many as the operand's rank needs). */
static int es_parse_term(const char *s, size_t len, int32_t rank, int32_t *ell, es_term *t,
                         errbuf *err) {
    int32_t letters = 0, pos = -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') continue;
        if (s[i] == '.') {
            if (pos >= 0 || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.')
                return err_set(err, TILEOPT_INVALID, "a malformed ellipsis");
            pos = letters;
            i += 2;
            continue;
        }
        if (es_letter(s[i]) < 0)
            return err_set(err, TILEOPT_INVALID, "label '%c' is not a letter", s[i]);
        letters++;
    }
    int32_t e = 0;
    if (pos >= 0) e = rank >= 0 ? rank - letters : *ell;
    if (e < 0 || letters + e > TENSOR_MAX_RANK || (rank >= 0 && letters + e != rank))
        return err_set(err, TILEOPT_INVALID, "a term of %d labels for rank %d", (int)letters,
                       (int)rank);
    if (rank >= 0 && pos >= 0 && e > *ell) *ell = e;
    t->n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') continue;
        if (s[i] == '.') {
            /* ellipsis dims align on the right, as numpy broadcasts them */
            for (int32_t k = 0; k < e; k++) t->label[t->n++] = ES_LETTERS + TENSOR_MAX_RANK - e + k;
            i += 2;
            continue;
        }
        t->label[t->n++] = es_letter(s[i]);
    }
    return TILEOPT_OK;
}

static int k_einsum(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    const char *eq = graph_attr_string(n, "equation", NULL);
    if (!eq) return err_set(err, TILEOPT_INVALID, "Einsum %s: no equation", nm);
    if (n_in < 1 || n_in > ES_MAX_OPERANDS || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "Einsum %s: %zu operands (1 to %d)", nm, n_in,
                       ES_MAX_OPERANDS);
    int32_t elem = in[0] ? in[0]->elem : 0;
    for (size_t k = 0; k < n_in; k++)
        if (!in[k] || in[k]->elem != elem)
            return err_set(err, TILEOPT_INVALID, "Einsum %s: operands missing or of mixed types",
                           nm);
    const dtype_info *di = dtype_get(elem);
    if (!di || (di->kind != KIND_FLOAT && di->kind != KIND_SINT && di->kind != KIND_UINT))
        return err_set(err, TILEOPT_UNSUPPORTED, "Einsum %s: element type %s", nm,
                       dtype_name(elem));
    es_term term[ES_MAX_OPERANDS], ot;
    int32_t ell = 0;
    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
    size_t start = 0, k = 0;
    int rc = TILEOPT_OK;
    for (size_t i = 0; i <= lhs_len && !rc; i++) {
        if (i < lhs_len && eq[i] != ',') continue;
        if (k >= n_in) {
            rc = err_set(err, TILEOPT_INVALID, "more terms than the %zu operands", n_in);
            break;
        }
        rc = es_parse_term(eq + start, i - start, in[k]->rank, &ell, &term[k], err);
        k++;
        start = i + 1;
    }
    if (!rc && k != n_in) rc = err_set(err, TILEOPT_INVALID, "%zu terms for %zu operands", k, n_in);
    /* the size of each label, a broadcast 1 giving way to the other size */
    int64_t size[ES_LABELS];
    int32_t uses[ES_LABELS] = {0};
    for (int32_t l = 0; l < ES_LABELS; l++) size[l] = -1;
    for (size_t o = 0; o < n_in && !rc; o++)
        for (int32_t a = 0; a < term[o].n && !rc; a++) {
            int32_t l = term[o].label[a];
            int64_t d = in[o]->dims[a];
            uses[l]++;
            if (size[l] < 0 || (size[l] == 1 && l >= ES_LETTERS)) size[l] = d;
            else if (d != size[l] && !(d == 1 && l >= ES_LETTERS))
                rc = err_set(err, TILEOPT_INVALID, "label sizes %lld and %lld differ",
                             (long long)size[l], (long long)d);
        }
    if (!rc && arrow) {
        const char *r = arrow + 2;
        rc = es_parse_term(r, strlen(r), -1, &ell, &ot, err);
        for (int32_t a = 0; a < ot.n && !rc; a++) {
            for (int32_t b = 0; b < a; b++)
                if (ot.label[b] == ot.label[a])
                    rc = err_set(err, TILEOPT_INVALID, "an output label repeats");
            if (!rc && size[ot.label[a]] < 0)
                rc = err_set(err, TILEOPT_INVALID, "output label not in any input");
        }
    } else if (!rc) {
        ot.n = 0;
        for (int32_t l = ES_LETTERS + TENSOR_MAX_RANK - ell; l < ES_LABELS; l++) ot.label[ot.n++] = l;
        /* alphabetical: numpy orders upper-case letters before lower-case ones */
        for (int32_t c = 26; c < 52 && ot.n < TENSOR_MAX_RANK; c++)
            if (uses[c] == 1) ot.label[ot.n++] = c;
        for (int32_t c = 0; c < 26 && ot.n < TENSOR_MAX_RANK; c++)
            if (uses[c] == 1) ot.label[ot.n++] = c;
    }
    if (rc) return err_prefix(err, "Einsum %s: \"%s\": ", nm, eq);
    /* loop labels: the output's, then the summed ones */
    int32_t loop[ES_LABELS], nl = 0;
    bool kept[ES_LABELS] = {false};
    int64_t odims[TENSOR_MAX_RANK];
    for (int32_t a = 0; a < ot.n; a++) {
        loop[nl++] = ot.label[a];
        kept[ot.label[a]] = true;
        odims[a] = size[ot.label[a]];
    }
    int32_t n_kept = nl;
    for (int32_t l = 0; l < ES_LABELS; l++)
        if (size[l] >= 0 && !kept[l]) loop[nl++] = l;
    /* element strides of each operand per loop label (0: broadcast or unused);
    ** a repeated label adds its axes' strides, which walks the diagonal */
    int64_t stride[ES_MAX_OPERANDS][ES_LABELS];
    tensor *x[ES_MAX_OPERANDS] = {NULL}, *y = NULL;
    bool ints = di->kind != KIND_FLOAT;
    for (size_t o = 0; o < n_in && !rc; o++) {
        rc = eval_cast(in[o], ints ? DT_INT64 : DT_DOUBLE, env, &x[o], err);
        int64_t s = 1;
        for (int32_t l = 0; l < ES_LABELS; l++) stride[o][l] = 0;
        for (int32_t a = term[o].n - 1; a >= 0; a--) {
            if (in[o]->dims[a] != 1) stride[o][term[o].label[a]] += s;
            s *= in[o]->dims[a];
        }
    }
    if (!rc) rc = tensor_alloc(ints ? DT_INT64 : DT_DOUBLE, odims, ot.n, env, &y, err);
    if (rc) goto done;
    int64_t total_out = (int64_t)tensor_numel(y), inner = 1;
    for (int32_t i = n_kept; i < nl; i++)
        if (!eval_mul_i64(inner, size[loop[i]], &inner)) {
            rc = err_set(err, TILEOPT_LIMIT, "Einsum %s: too many products", nm);
            goto done;
        }
    int64_t idx[ES_LABELS] = {0};
    for (int64_t e = 0; e < total_out; e++) {
        /* the output index of element e */
        int64_t r = e;
        for (int32_t i = n_kept - 1; i >= 0; i--) {
            idx[i] = r % size[loop[i]];
            r /= size[loop[i]];
        }
        int64_t base[ES_MAX_OPERANDS] = {0};
        for (size_t o = 0; o < n_in; o++)
            for (int32_t i = 0; i < n_kept; i++) base[o] += idx[i] * stride[o][loop[i]];
        double accf = 0;
        int64_t acci = 0;
        for (int32_t i = n_kept; i < nl; i++) idx[i] = 0;
        for (int64_t q = 0; q < inner; q++) {
            double pf = 1;
            uint64_t pi = 1;
            for (size_t o = 0; o < n_in; o++) {
                int64_t off = base[o];
                for (int32_t i = n_kept; i < nl; i++) off += idx[i] * stride[o][loop[i]];
                if (ints) pi *= (uint64_t)((const int64_t *)(const void *)x[o]->data)[off];
                else pf *= ((const double *)(const void *)x[o]->data)[off];
            }
            accf += pf;
            acci = (int64_t)((uint64_t)acci + pi);
            for (int32_t i = nl - 1; i >= n_kept; i--) {
                if (++idx[i] < size[loop[i]]) break;
                idx[i] = 0;
            }
        }
        if (ints) ((int64_t *)(void *)y->data)[e] = acci;
        else ((double *)(void *)y->data)[e] = accf;
    }
    rc = nn_output(&y, elem, env, err);
done:
    for (size_t o = 0; o < n_in; o++) tensor_free(x[o]);
    if (rc) {
        tensor_free(y);
        return rc;
    }
    out[0] = y;
    return TILEOPT_OK;
}

/* -------------------------------------------------------------------- table */

const kernel_def kernel_table_linalg[] = {
    {OP_MatMul, 1, k_matmul},
    {OP_Gemm, 1, k_gemm},
    {OP_Det, 11, k_det},
    {OP_Einsum, 12, k_einsum},
};
const size_t kernel_table_linalg_count = countof(kernel_table_linalg);

/*
** The signal ops of opset 17: DFT, STFT, the Hann, Hamming and Blackman
** windows, and MelWeightMatrix. A complex value is a trailing axis of 2 (real,
** imaginary) and a real one a trailing axis of 1, as the ops lay them out.
** Values are computed in double and go to the output's element type once.
**
** Transforms run an iterative radix-2 FFT when the length is a power of two and
** Bluestein's chirp-z rewrite (a convolution done with power-of-two FFTs)
** otherwise, so a prime or otherwise awkward dft_length costs O(n log n) too
** instead of the O(n^2) of the direct sum.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"

static const double pi = 3.14159265358979323846;

static double *dv(tensor *t) { return (double *)(void *)t->data; }

/* ------------------------------------------------------------- inputs */

/* The input types T1 of DFT and STFT. */
static bool is_signal_type(int32_t e) {
    return e == DT_FLOAT || e == DT_DOUBLE || e == DT_FLOAT16 || e == DT_BFLOAT16;
}

/* The numeric types output_datatype may name (T2 of the windows, T3 of MelWeightMatrix). */
static bool is_output_type(int64_t e) {
    switch (e) {
    case DT_UINT8: case DT_UINT16: case DT_UINT32: case DT_UINT64:
    case DT_INT8: case DT_INT16: case DT_INT32: case DT_INT64:
    case DT_FLOAT16: case DT_FLOAT: case DT_DOUBLE: case DT_BFLOAT16:
        return true;
    default:
        return false;
    }
}

/* An attribute that is a switch: anything but 0 or 1 is a model error, not a
** "true" to guess at. */
static int flag_attr(const Onnx__NodeProto *n, const char *name, int64_t dflt, bool *out,
                     errbuf *err) {
    int64_t v = graph_attr_int(n, name, dflt);
    *out = v == 1;
    if (v != 0 && v != 1)
        return err_set(err, TILEOPT_INVALID, "%s %s: %s is %lld, must be 0 or 1", n->op_type,
                       eval_node_name(n), name, (long long)v);
    return TILEOPT_OK;
}

/* The value of a scalar integer input (int32 or int64 by the schemas). */
static int int_input(const Onnx__NodeProto *n, tensor *t, const char *what, int64_t *v,
                     errbuf *err) {
    *v = 0;
    const dtype_info *d = dtype_get(t->elem);
    if (!d || (d->kind != KIND_SINT && d->kind != KIND_UINT))
        return err_set(err, TILEOPT_INVALID, "%s %s: %s has element type %s, expected an "
                       "integer", n->op_type, eval_node_name(n), what, dtype_name(t->elem));
    size_t count = 0;
    if (t->rank > 1 || !tensor_to_i64(t, v, 1, &count) || count != 1)
        return err_set(err, TILEOPT_INVALID, "%s %s: %s must be a scalar", n->op_type,
                       eval_node_name(n), what);
    return TILEOPT_OK;
}

/* The value of a scalar float input. */
static int float_input(const Onnx__NodeProto *n, tensor *t, const char *what,
                       const eval_env *env, double *v, errbuf *err) {
    if (!is_signal_type(t->elem))
        return err_set(err, TILEOPT_INVALID, "%s %s: %s has element type %s, expected a "
                       "float", n->op_type, eval_node_name(n), what, dtype_name(t->elem));
    if (tensor_numel(t) != 1 || t->rank > 1)
        return err_set(err, TILEOPT_INVALID, "%s %s: %s must be a scalar", n->op_type,
                       eval_node_name(n), what);
    tensor *c = NULL;
    int rc = eval_cast(t, DT_DOUBLE, env, &c, err);
    if (rc) return rc;
    memcpy(v, c->data, sizeof *v);
    tensor_free(c);
    return TILEOPT_OK;
}

/* Product of dims[from..to), false on overflow (a 0 elsewhere in the shape can
** leave the others' product unbounded). */
static bool dims_prod(const int64_t *dims, int32_t from, int32_t to, uint64_t *out) {
    uint64_t p = 1;
    for (int32_t i = from; i < to; i++)
        if (!eval_mul_u64(p, (uint64_t)dims[i], &p)) return false;
    *out = p;
    return true;
}

/* ------------------------------------------------------------ the transform */

typedef struct cplx {
    double re, im;
} cplx;

static cplx cmul(cplx a, cplx b) {
    return (cplx){a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}

/*
** The forward DFT of one length n, planned once per node and run on each of
** its signals (sig holds the signal in and its transform out). Twiddles and
** the chirp come from cos/sin of each angle rather than a recurrence, whose
** rounding error grows with n.
*/
typedef struct fft_plan {
    size_t n, m;   /* the length, and that of the power-of-two FFT underneath */
    cplx *sig;     /* n values */
    cplx *tw;      /* m/2 twiddles exp(-2 pi i k / m) */
    cplx *chirp;   /* Bluestein (m != n): n values exp(-pi i j^2 / n) */
    cplx *kern;    /* Bluestein: the FFT of the conjugate chirp, wrapped to m */
    cplx *work;    /* Bluestein: m values */
} fft_plan;

/* In-place forward FFT of m (a power of two) values. */
static void fft_pow2(cplx *a, size_t m, const cplx *tw) {
    for (size_t i = 1, j = 0; i < m; i++) {
        size_t bit = m >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j |= bit;
        if (i < j) {
            cplx t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
    }
    for (size_t len = 2; len <= m; len <<= 1) {
        size_t half = len >> 1, step = m / len;
        for (size_t s = 0; s < m; s += len)
            for (size_t k = 0; k < half; k++) {
                cplx u = a[s + k], v = cmul(a[s + k + half], tw[k * step]);
                a[s + k] = (cplx){u.re + v.re, u.im + v.im};
                a[s + k + half] = (cplx){u.re - v.re, u.im - v.im};
            }
    }
}

static void fft_plan_free(fft_plan *p) {
    free(p->sig);
    free(p->tw);
    free(p->chirp);
    free(p->kern);
    free(p->work);
    memset(p, 0, sizeof *p);
}

static int fft_plan_make(const Onnx__NodeProto *n, uint64_t len, const eval_env *env,
                         fft_plan *p, errbuf *err) {
    memset(p, 0, sizeof *p);
    eval_env dl;
    if (!env) {
        eval_env_default(&dl);
        env = &dl;
    }
    bool pow2 = (len & (len - 1)) == 0;
    uint64_t m = 1, values = 0, bytes = 0;
    /* Bluestein's linear convolution of 2n-1 terms must not wrap around */
    while (m < (pow2 ? len : 2 * len - 1) && m <= UINT64_MAX / 4) m <<= 1;
    bool ok = m >= (pow2 ? len : 2 * len - 1) &&
              eval_add_u64(len, m / 2, &values) &&
              (pow2 || (eval_add_u64(values, len, &values) &&
                        eval_add_u64(values, 2 * m, &values))) &&
              eval_mul_u64(values, sizeof(cplx), &bytes) && bytes <= SIZE_MAX;
    if (!ok || (env->lim.max_tensor_bytes && bytes > env->lim.max_tensor_bytes))
        return err_set(err, TILEOPT_LIMIT, "%s %s: the scratch space of a transform of length "
                       "%llu is over the tensor size limit", n->op_type, eval_node_name(n),
                       (unsigned long long)len);
    p->n = (size_t)len;
    p->m = (size_t)m;
    p->sig = malloc(p->n * sizeof(cplx));
    p->tw = malloc((p->m / 2 ? p->m / 2 : 1) * sizeof(cplx));
    if (!pow2) {
        p->chirp = malloc(p->n * sizeof(cplx));
        p->kern = malloc(p->m * sizeof(cplx));
        p->work = malloc(p->m * sizeof(cplx));
    }
    if (!p->sig || !p->tw || (!pow2 && (!p->chirp || !p->kern || !p->work))) {
        fft_plan_free(p);
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    for (size_t k = 0; k < p->m / 2; k++) {
        double a = 2 * pi * (double)k / (double)p->m;
        p->tw[k] = (cplx){cos(a), -sin(a)};
    }
    if (pow2) return TILEOPT_OK;
    /* j^2 mod 2n, kept reduced so the angle stays exact for large j */
    uint64_t q = 0, two_n = 2 * (uint64_t)p->n;
    for (size_t j = 0; j < p->n; j++) {
        if (j) {
            q += 2 * (uint64_t)j - 1;
            if (q >= two_n) q -= two_n;
        }
        double a = pi * (double)q / (double)p->n;
        p->chirp[j] = (cplx){cos(a), -sin(a)};
    }
    memset(p->kern, 0, p->m * sizeof(cplx));
    for (size_t j = 0; j < p->n; j++) {
        cplx c = {p->chirp[j].re, -p->chirp[j].im};
        p->kern[j] = c;
        if (j) p->kern[p->m - j] = c;
    }
    fft_pow2(p->kern, p->m, p->tw);
    return TILEOPT_OK;
}

/*
** p->sig replaced by its forward DFT. Bluestein: with c_j = exp(-pi i j^2 / n),
** X_k = c_k sum_j (x_j c_j) conj(c_{k-j}), since 2jk = j^2 + k^2 - (k-j)^2; the
** sum is a convolution, done as a product of FFTs, the inverse one being the
** forward FFT of the conjugate.
*/
static void fft_run(const fft_plan *p) {
    if (!p->chirp) {
        fft_pow2(p->sig, p->n, p->tw);
        return;
    }
    size_t n = p->n, m = p->m;
    cplx *w = p->work;
    for (size_t j = 0; j < n; j++) w[j] = cmul(p->sig[j], p->chirp[j]);
    memset(w + n, 0, (m - n) * sizeof *w);
    fft_pow2(w, m, p->tw);
    for (size_t k = 0; k < m; k++) {
        cplx v = cmul(w[k], p->kern[k]);
        w[k] = (cplx){v.re, -v.im};
    }
    fft_pow2(w, m, p->tw);
    double s = 1.0 / (double)m;
    for (size_t k = 0; k < n; k++)
        p->sig[k] = cmul(p->chirp[k], (cplx){w[k].re * s, -w[k].im * s});
}

/* p->sig replaced by its DFT, or by its inverse DFT (1/n included) through the
** conjugate of the forward one. */
static void dft_run(const fft_plan *p, bool inverse) {
    if (inverse)
        for (size_t j = 0; j < p->n; j++) p->sig[j].im = -p->sig[j].im;
    fft_run(p);
    if (inverse) {
        double s = 1.0 / (double)p->n;
        for (size_t k = 0; k < p->n; k++)
            p->sig[k] = (cplx){p->sig[k].re * s, -p->sig[k].im * s};
    }
}

/* -------------------------------------------------------------------- DFT */

/*
** input [batch][d1]..[dN][1 or 2], transformed along `axis` over dft_length
** points (the signal cut or zero-padded to it); onesided keeps the first
** floor(dft_length/2)+1 outputs, inverse scales by 1/dft_length as numpy's
** ifft does.
*/
static int k_dft(KERNEL_PARAMS) {
    const char *nm = eval_node_name(n);
    size_t most = opset >= 20 ? 3 : 2;
    if (n_in < 1 || n_in > most || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "DFT %s: takes input, an optional dft_length%s, "
                       "got %zu inputs", nm, opset >= 20 ? " and an optional axis" : "", n_in);
    tensor *X = in[0];
    if (!is_signal_type(X->elem))
        return err_set(err, TILEOPT_INVALID, "DFT %s: input of element type %s, expected a "
                       "float type", nm, dtype_name(X->elem));
    int32_t r = X->rank;
    if (r < 2 || (X->dims[r - 1] != 1 && X->dims[r - 1] != 2))
        return err_set(err, TILEOPT_INVALID, "DFT %s: input of rank %d needs a last axis of 1 "
                       "(real) or 2 (complex)", nm, (int)r);
    int64_t ch = X->dims[r - 1];
    /* the last axis holds the parts of one value: it cannot be transformed. DFT-20
    ** moved axis to an input, with another default. */
    int64_t axis = opset >= 20 ? -2 : graph_attr_int(n, "axis", 1);
    int rc;
    if (opset >= 20 && n_in > 2 && in[2] && (rc = int_input(n, in[2], "axis", &axis, err)))
        return rc;
    if (axis < -r || axis > r - 2 || axis == -1)
        return err_set(err, TILEOPT_INVALID, "DFT %s: axis %lld is outside [%d, -2] and "
                       "[0, %d]", nm, (long long)axis, -(int)r, (int)r - 2);
    if (axis < 0) axis += r;
    bool inverse, onesided;
    if ((rc = flag_attr(n, "inverse", 0, &inverse, err)) ||
        (rc = flag_attr(n, "onesided", 0, &onesided, err)))
        return rc;
    if (onesided && ch == 2)
        return err_set(err, TILEOPT_INVALID, "DFT %s: onesided needs a real input, not a "
                       "complex one", nm);
    int64_t len = X->dims[axis], L = len;
    if (n_in > 1 && in[1] && (rc = int_input(n, in[1], "dft_length", &L, err))) return rc;
    if (L < 1)
        return err_set(err, TILEOPT_INVALID, "DFT %s: a transform of length %lld, must be at "
                       "least 1", nm, (long long)L);
    uint64_t outer, inner;
    if (!dims_prod(X->dims, 0, (int32_t)axis, &outer) ||
        !dims_prod(X->dims, (int32_t)axis + 1, r - 1, &inner))
        return err_set(err, TILEOPT_INVALID, "DFT %s: the input's shape overflows", nm);
    int64_t out_len = onesided ? L / 2 + 1 : L;
    int64_t od[TENSOR_MAX_RANK];
    memcpy(od, X->dims, (size_t)r * sizeof *od);
    od[axis] = out_len;
    od[r - 1] = 2;
    tensor *x = NULL, *y = NULL;
    fft_plan p = {0};
    if ((rc = eval_cast(X, DT_DOUBLE, env, &x, err)) ||
        (rc = tensor_alloc(DT_DOUBLE, od, r, env, &y, err)))
        goto done;
    if (outer && inner && (rc = fft_plan_make(n, (uint64_t)L, env, &p, err))) goto done;
    const double *xv = dv(x);
    double *yv = dv(y);
    uint64_t take = (uint64_t)(len < L ? len : L), ulen = (uint64_t)len, uol = (uint64_t)out_len;
    for (uint64_t o = 0; o < outer; o++)
        for (uint64_t i = 0; i < inner; i++) {
            for (uint64_t j = 0; j < take; j++) {
                const double *v = xv + ((o * ulen + j) * inner + i) * (uint64_t)ch;
                p.sig[j] = (cplx){v[0], ch == 2 ? v[1] : 0};
            }
            for (uint64_t j = take; j < (uint64_t)L; j++) p.sig[j] = (cplx){0, 0};
            dft_run(&p, inverse);
            for (uint64_t k = 0; k < uol; k++) {
                double *v = yv + ((o * uol + k) * inner + i) * 2;
                v[0] = p.sig[k].re;
                v[1] = p.sig[k].im;
            }
        }
    rc = nn_output(&y, X->elem, env, err);
    if (!rc) out[0] = y;
    y = NULL;
done:
    fft_plan_free(&p);
    tensor_free(x);
    tensor_free(y);
    return rc;
}

/* ------------------------------------------------------------------- STFT */

/*
** signal [batch][length][1 or 2] cut into frames of frame_length every
** frame_step samples (the last frame ends inside the signal), each multiplied
** by the window and transformed: [batch][frames][bins][2].
*/
static int k_stft(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in < 2 || n_in > 4 || !in[0] || !in[1] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "STFT %s: takes signal, frame_step and optional "
                       "window and frame_length, got %zu inputs", nm, n_in);
    tensor *S = in[0], *W = n_in > 2 ? in[2] : NULL, *FL = n_in > 3 ? in[3] : NULL;
    if (!is_signal_type(S->elem))
        return err_set(err, TILEOPT_INVALID, "STFT %s: signal of element type %s, expected a "
                       "float type", nm, dtype_name(S->elem));
    if (S->rank != 3 || (S->dims[2] != 1 && S->dims[2] != 2))
        return err_set(err, TILEOPT_INVALID, "STFT %s: signal of rank %d, expected "
                       "[batch][length][1 or 2]", nm, (int)S->rank);
    int64_t ch = S->dims[2], N = S->dims[1], step, F;
    bool onesided;
    int rc;
    if ((rc = flag_attr(n, "onesided", 1, &onesided, err))) return rc;
    if (onesided && ch == 2)
        return err_set(err, TILEOPT_INVALID, "STFT %s: onesided (the default) needs a real "
                       "signal, not a complex one", nm);
    if ((rc = int_input(n, in[1], "frame_step", &step, err))) return rc;
    if (step < 1)
        return err_set(err, TILEOPT_INVALID, "STFT %s: frame_step %lld, must be at least 1", nm,
                       (long long)step);
    if (W && (!is_signal_type(W->elem) || W->rank != 1))
        return err_set(err, TILEOPT_INVALID, "STFT %s: the window must be a 1-D float tensor",
                       nm);
    if (FL) {
        if ((rc = int_input(n, FL, "frame_length", &F, err))) return rc;
        if (W && W->dims[0] != F)
            return err_set(err, TILEOPT_INVALID, "STFT %s: a window of %lld values for "
                           "frame_length %lld", nm, (long long)W->dims[0], (long long)F);
    } else {
        /* as ONNX's reference has it: the window's length, else one frame of all */
        F = W ? W->dims[0] : N;
    }
    if (F < 1 || F > N)
        return err_set(err, TILEOPT_INVALID, "STFT %s: frame length %lld, must be in [1, %lld] "
                       "(the signal's length)", nm, (long long)F, (long long)N);
    int64_t frames = (N - F) / step + 1, bins = onesided ? F / 2 + 1 : F;
    int64_t od[4] = {S->dims[0], frames, bins, 2};
    tensor *x = NULL, *w = NULL, *y = NULL;
    fft_plan p = {0};
    if ((rc = eval_cast(S, DT_DOUBLE, env, &x, err)) ||
        (W && (rc = eval_cast(W, DT_DOUBLE, env, &w, err))) ||
        (rc = tensor_alloc(DT_DOUBLE, od, 4, env, &y, err)))
        goto done;
    if (S->dims[0] && (rc = fft_plan_make(n, (uint64_t)F, env, &p, err))) goto done;
    const double *xv = dv(x), *wv = w ? dv(w) : NULL;
    double *yv = dv(y);
    for (int64_t b = 0; b < S->dims[0]; b++)
        for (int64_t f = 0; f < frames; f++) {
            const double *s = xv + (b * N + f * step) * ch;
            for (int64_t j = 0; j < F; j++) {
                double g = wv ? wv[j] : 1;
                p.sig[j] = (cplx){s[j * ch] * g, ch == 2 ? s[j * ch + 1] * g : 0};
            }
            dft_run(&p, false);
            double *v = yv + (b * frames + f) * bins * 2;
            for (int64_t k = 0; k < bins; k++) {
                v[2 * k] = p.sig[k].re;
                v[2 * k + 1] = p.sig[k].im;
            }
        }
    rc = nn_output(&y, S->elem, env, err);
    if (!rc) out[0] = y;
    y = NULL;
done:
    fft_plan_free(&p);
    tensor_free(x);
    tensor_free(w);
    tensor_free(y);
    return rc;
}

/* ---------------------------------------------------------------- windows */

/*
** The cosine-sum windows a0 - a1 cos(2 pi k / N) + a2 cos(4 pi k / N) for k in
** [0, size): N = size when periodic, size - 1 when symmetric.
*/
static int window(const Onnx__NodeProto *n, double a0, double a1, double a2, tensor *const *in,
                  size_t n_in, tensor **out, size_t n_out, const eval_env *env,
                  errbuf *err) {
    const char *nm = eval_node_name(n);
    if (n_in != 1 || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "%s %s: takes one input, size", n->op_type, nm);
    int64_t size;
    bool periodic;
    int rc;
    if ((rc = int_input(n, in[0], "size", &size, err)) ||
        (rc = flag_attr(n, "periodic", 1, &periodic, err)))
        return rc;
    if (size < 0)
        return err_set(err, TILEOPT_INVALID, "%s %s: size %lld is negative", n->op_type, nm,
                       (long long)size);
    int64_t dt = graph_attr_int(n, "output_datatype", DT_FLOAT);
    if (!is_output_type(dt))
        return err_set(err, TILEOPT_INVALID, "%s %s: output_datatype %lld is not a numeric "
                       "type", n->op_type, nm, (long long)dt);
    tensor *y = NULL;
    if ((rc = tensor_alloc(DT_DOUBLE, &size, 1, env, &y, err))) return rc;
    double *v = dv(y), N = (double)(periodic ? size : size - 1);
    /* A symmetric window of one point is 0/0 by the formula (NaN in ONNX's
    ** later reference); numpy, scipy and torch give the window's peak, 1. */
    if (size == 1 && !periodic) v[0] = a0 + a1 + a2;
    else
        for (int64_t k = 0; k < size; k++) {
            double t = 2 * pi * (double)k / N;
            v[k] = a0 - a1 * cos(t) + a2 * cos(2 * t);
        }
    rc = nn_output(&y, (int32_t)dt, env, err);
    if (!rc) out[0] = y;
    return rc;
}

static int k_hann(KERNEL_PARAMS) {
    (void)opset;
    return window(n, 0.5, 0.5, 0, in, n_in, out, n_out, env, err);
}

static int k_hamming(KERNEL_PARAMS) {
    (void)opset;
    return window(n, 25.0 / 46, 21.0 / 46, 0, in, n_in, out, n_out, env, err);
}

static int k_blackman(KERNEL_PARAMS) {
    (void)opset;
    return window(n, 0.42, 0.5, 0.08, in, n_in, out, n_out, env, err);
}

/* -------------------------------------------------------- MelWeightMatrix */

/*
** [floor(dft_length/2)+1][num_mel_bins] triangles peaking at 1, as ONNX's
** reference builds them: num_mel_bins+2 edges evenly spaced in mel from
** lower_edge_hertz in steps of (upper - lower) / (num_mel_bins + 2), each
** taken to the spectrogram bin floor((dft_length + 1) hz / sample_rate);
** band i rises from edge i to edge i+1 and falls to edge i+2.
*/
static int k_mel_weight_matrix(KERNEL_PARAMS) {
    (void)opset;
    const char *nm = eval_node_name(n);
    if (n_in != 5 || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "MelWeightMatrix %s: takes 5 inputs, got %zu", nm,
                       n_in);
    for (size_t i = 0; i < 5; i++)
        if (!in[i])
            return err_set(err, TILEOPT_INVALID, "MelWeightMatrix %s: input %zu is missing",
                           nm, i);
    int64_t nmb, dft_len, rate;
    double lo, hi;
    int rc;
    if ((rc = int_input(n, in[0], "num_mel_bins", &nmb, err)) ||
        (rc = int_input(n, in[1], "dft_length", &dft_len, err)) ||
        (rc = int_input(n, in[2], "sample_rate", &rate, err)) ||
        (rc = float_input(n, in[3], "lower_edge_hertz", env, &lo, err)) ||
        (rc = float_input(n, in[4], "upper_edge_hertz", env, &hi, err)))
        return rc;
    if (nmb < 0 || dft_len < 1 || rate < 1)
        return err_set(err, TILEOPT_INVALID, "MelWeightMatrix %s: num_mel_bins %lld, "
                       "dft_length %lld and sample_rate %lld must be >= 0, >= 1 and >= 1", nm,
                       (long long)nmb, (long long)dft_len, (long long)rate);
    if (!isfinite(lo) || !isfinite(hi))
        return err_set(err, TILEOPT_INVALID, "MelWeightMatrix %s: the edge frequencies must be "
                       "finite", nm);
    int64_t dt = graph_attr_int(n, "output_datatype", DT_FLOAT);
    if (!is_output_type(dt))
        return err_set(err, TILEOPT_INVALID, "MelWeightMatrix %s: output_datatype %lld is not "
                       "a numeric type", nm, (long long)dt);
    int64_t nsb = dft_len / 2 + 1, od[2] = {nsb, nmb};
    tensor *y = NULL;
    int64_t *edge = NULL;
    /* zeroed: the triangles cover only part of each column */
    if ((rc = tensor_new(DT_DOUBLE, od, 2, env, &y, err))) return rc;
    uint64_t n_edges = (uint64_t)nmb + 2;
    /* the matrix fits the limits, so the nmb + 2 edges fit memory */
    if (nmb && !(edge = malloc(n_edges * sizeof *edge))) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    double lo_mel = 2595 * log10(1 + lo / 700), hi_mel = 2595 * log10(1 + hi / 700);
    double step = (hi_mel - lo_mel) / (double)n_edges;
    for (uint64_t e = 0; nmb && e < n_edges; e++) {
        double hz = 700 * (pow(10, ((double)e * step + lo_mel) / 2595) - 1);
        double bin = floor(((double)dft_len + 1) * hz / (double)rate);
        if (!(bin >= 0 && bin < (double)nsb)) {
            rc = err_set(err, TILEOPT_INVALID, "MelWeightMatrix %s: band edge %llu (%g Hz) "
                         "falls on spectrogram bin %g, outside [0, %lld): the edges must lie "
                         "in [0, sample_rate / 2]", nm, (unsigned long long)e, hz, bin,
                         (long long)nsb);
            goto done;
        }
        edge[e] = (int64_t)bin;
    }
    double *v = dv(y);
    for (int64_t i = 0; i < nmb; i++) {
        int64_t l = edge[i], c = edge[i + 1], h = edge[i + 2];
        if (c == l)
            v[c * nmb + i] = 1;
        else
            for (int64_t j = l; j <= c; j++) v[j * nmb + i] = (double)(j - l) / (double)(c - l);
        for (int64_t j = c; j < h; j++) v[j * nmb + i] = (double)(h - j) / (double)(h - c);
    }
    rc = nn_output(&y, (int32_t)dt, env, err);
    if (!rc) out[0] = y;
    y = NULL;
done:
    free(edge);
    tensor_free(y);
    return rc;
}

const kernel_def kernel_table_signal[] = {
    {OP_DFT, 17, k_dft},
    {OP_STFT, 17, k_stft},
    {OP_HannWindow, 17, k_hann},
    {OP_HammingWindow, 17, k_hamming},
    {OP_BlackmanWindow, 17, k_blackman},
    {OP_MelWeightMatrix, 17, k_mel_weight_matrix},
};
const size_t kernel_table_signal_count = countof(kernel_table_signal);

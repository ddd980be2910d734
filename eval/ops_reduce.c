/*
** The reductions: ReduceSum and ReduceProd of shape subgraphs and the rest of
** the Reduce family (one loop serves them all), ArgMax/ArgMin, and CumSum, which
** accumulates the way ReduceSum does. They share the shape kernels' helpers
** (ops_shape.c).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"

/* --------------------------------------------------------------- Reduce* */

/*
** ReduceSum and ReduceProd belong to shape subgraphs; the other Reduce ops come
** with them because the same loop serves them all. Floats
** accumulate in double, signed integers in int64 and unsigned in uint64
** (wrapping like the fixed-width types do); the result is stored back in the
** input's type.
*/
typedef enum {
    RED_SUM, RED_PROD, RED_MAX, RED_MIN, RED_MEAN,
    /* sums of a transformed value, some with a final transform */
    RED_L1, RED_L2, RED_SUMSQ, RED_LOGSUM, RED_LOGSUMEXP
} red_kind;

/* Kinds whose result needs floating point even for integer inputs. */
static bool red_float_math(red_kind k) {
    return k == RED_L2 || k == RED_LOGSUM || k == RED_LOGSUMEXP;
}

static bool red_is_sum(red_kind k) {
    return k != RED_PROD && k != RED_MAX && k != RED_MIN;
}

typedef union red_acc {
    double d;
    int64_t i;
    uint64_t u;
} red_acc;

typedef enum { ACC_F, ACC_I, ACC_U } acc_class;

static bool red_class(int32_t e, acc_class *c) {
    const dtype_info *d = dtype_get(e);
    if (!d) return false;
    if (e == DT_FLOAT || e == DT_DOUBLE || e == DT_FLOAT16 || e == DT_BFLOAT16) *c = ACC_F;
    else if (d->kind == KIND_SINT) *c = ACC_I;
    else if (d->kind == KIND_UINT) *c = ACC_U;
    else return false;
    return true;
}

static red_acc red_load(int32_t e, const uint8_t *p) {
    red_acc a;
    switch (e) {
    case DT_FLOAT: { float f; memcpy(&f, p, 4); a.d = f; break; }
    case DT_DOUBLE: memcpy(&a.d, p, 8); break;
    case DT_FLOAT16: { uint16_t h; memcpy(&h, p, 2); a.d = eval_f16_to_f32(h); break; }
    case DT_BFLOAT16: { uint16_t h; memcpy(&h, p, 2); a.d = eval_bf16_to_f32(h); break; }
    case DT_INT8: { int8_t x; memcpy(&x, p, 1); a.i = x; break; }
    case DT_INT16: { int16_t x; memcpy(&x, p, 2); a.i = x; break; }
    case DT_INT32: { int32_t x; memcpy(&x, p, 4); a.i = x; break; }
    case DT_INT64: memcpy(&a.i, p, 8); break;
    case DT_UINT8: a.u = *p; break;
    case DT_UINT16: { uint16_t x; memcpy(&x, p, 2); a.u = x; break; }
    case DT_UINT32: { uint32_t x; memcpy(&x, p, 4); a.u = x; break; }
    default: memcpy(&a.u, p, 8); break;
    }
    return a;
}

static void red_store(int32_t e, uint8_t *p, red_acc a) {
    switch (e) {
    case DT_FLOAT: { float f = (float)a.d; memcpy(p, &f, 4); break; }
    case DT_DOUBLE: memcpy(p, &a.d, 8); break;
    case DT_FLOAT16: { uint16_t h = eval_f32_to_f16((float)a.d); memcpy(p, &h, 2); break; }
    case DT_BFLOAT16: { uint16_t h = eval_f32_to_bf16((float)a.d); memcpy(p, &h, 2); break; }
    case DT_INT8: case DT_UINT8: *p = (uint8_t)a.u; break;
    case DT_INT16: case DT_UINT16: { uint16_t x = (uint16_t)a.u; memcpy(p, &x, 2); break; }
    case DT_INT32: case DT_UINT32: { uint32_t x = (uint32_t)a.u; memcpy(p, &x, 4); break; }
    default: memcpy(p, &a.u, 8); break;
    }
}

/* The identity of the reduction (max and min of nothing: -inf / +inf, or the
** type's extreme for integers). */
static red_acc red_init(red_kind k, acc_class c, int32_t e) {
    red_acc a;
    a.u = 0;
    unsigned bits = 8u * dtype_get(e)->size;
    switch (k) {
    case RED_PROD:
        if (c == ACC_F) a.d = 1.0;
        else a.u = 1;
        break;
    case RED_MAX:
        if (c == ACC_F) a.d = -INFINITY;
        else if (c == ACC_I) a.i = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
        else a.u = 0;
        break;
    case RED_MIN:
        if (c == ACC_F) a.d = INFINITY;
        else if (c == ACC_I) a.i = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
        else a.u = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
        break;
    default:
        if (c == ACC_F) a.d = 0.0;
        break;
    }
    return a;
}

static red_acc red_step(red_kind k, acc_class c, red_acc a, red_acc v) {
    switch (c) {
    case ACC_F:
        if (red_is_sum(k)) a.d += v.d;
        else if (k == RED_PROD) a.d *= v.d;
        else if (isnan(v.d) || isnan(a.d)) a.d = NAN;
        else if (k == RED_MAX ? v.d > a.d : v.d < a.d) a.d = v.d;
        break;
    case ACC_I:
        if (red_is_sum(k)) a.u += v.u;
        else if (k == RED_PROD) a.u *= v.u;
        else if (k == RED_MAX ? v.i > a.i : v.i < a.i) a.i = v.i;
        break;
    case ACC_U:
        if (red_is_sum(k)) a.u += v.u;
        else if (k == RED_PROD) a.u *= v.u;
        else if (k == RED_MAX ? v.u > a.u : v.u < a.u) a.u = v.u;
        break;
    }
    return a;
}

/* The per-element transform of L1, L2, SumSquare and LogSumExp. */
static red_acc red_pre(red_kind k, acc_class c, red_acc v) {
    switch (k) {
    case RED_L1:
        if (c == ACC_F) v.d = fabs(v.d);
        else if (c == ACC_I && v.i < 0) v.u = (uint64_t)0 - v.u;
        break;
    case RED_L2: case RED_SUMSQ:
        if (c == ACC_F) v.d *= v.d;
        else v.u *= v.u;
        break;
    case RED_LOGSUMEXP:
        v.d = exp(v.d);
        break;
    default:
        break;
    }
    return v;
}

/* The final transform, and back from double for integer outputs. */
static red_acc red_post(red_kind k, acc_class work, acc_class out, red_acc a) {
    if (work != ACC_F) return a;
    if (k == RED_L2) a.d = sqrt(a.d);
    else if (k == RED_LOGSUM || k == RED_LOGSUMEXP) a.d = log(a.d);
    if (out == ACC_F) return a;
    double d = isnan(a.d) ? 0.0 : trunc(a.d);
    if (out == ACC_I)
        a.i = d >= 9.2233720368547758e18    ? INT64_MAX
              : d <= -9.2233720368547758e18 ? INT64_MIN
                                            : (int64_t)d;
    else
        a.u = d >= 1.8446744073709552e19 ? UINT64_MAX : d <= 0 ? 0 : (uint64_t)d;
    return a;
}

static int do_reduce(red_kind kind, tensor *x, const int64_t *axes, size_t na,
                     bool keepdims, bool noop_empty, const eval_env *env, tensor **out,
                     errbuf *err) {
    int32_t r = x->rank, e = x->elem;
    acc_class cls;
    if (!red_class(e, &cls))
        return err_set(err, TILEOPT_UNSUPPORTED, "type %s not supported", dtype_name(e));
    if (na == 0 && noop_empty) {
        *out = tensor_ref(x);
        return *out ? TILEOPT_OK : err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    bool red[TENSOR_MAX_RANK] = {false};
    for (size_t i = 0; i < na; i++) {
        int64_t a = 0;
        int rc = kern_norm_axis(axes[i], r, "axes value", &a, err);
        if (rc) return rc;
        red[a] = true;
    }
    if (na == 0)
        for (int32_t i = 0; i < r; i++) red[i] = true;
    int64_t od[TENSOR_MAX_RANK], kd[TENSOR_MAX_RANK];
    int32_t orank = 0;
    uint64_t group = 1; /* input elements per output element */
    for (int32_t i = 0; i < r; i++) {
        kd[i] = red[i] ? 1 : x->dims[i];
        if (red[i]) group *= (uint64_t)x->dims[i];
        if (!red[i] || keepdims) od[orank++] = kd[i];
    }
    tensor *o = NULL, *c = NULL;
    int rc = kern_new_tensor(e, od, orank, env, &o, err);
    if (!rc) rc = tensor_contiguous(x, env, &c, err);
    if (rc) {
        tensor_free(o);
        return rc;
    }
    uint64_t onel = tensor_numel(o), nel = tensor_numel(c);
    size_t es = kern_esize(e);
    red_acc *acc = malloc((onel ? onel : 1) * sizeof *acc);
    if (!acc) {
        tensor_free(o);
        tensor_free(c);
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    acc_class work = red_float_math(kind) ? ACC_F : cls;
    red_acc init = red_init(kind, work, e);
    for (uint64_t i = 0; i < onel; i++) acc[i] = init;
    /* output element strides per input axis (0 on reduced axes) */
    int64_t ks[TENSOR_MAX_RANK], os[TENSOR_MAX_RANK], idx[TENSOR_MAX_RANK] = {0};
    kern_row_major(kd, r, ks);
    for (int32_t i = 0; i < r; i++) os[i] = red[i] ? 0 : ks[i];
    uint64_t oi = 0;
    for (uint64_t i = 0; i < nel; i++) {
        red_acc v = red_load(e, c->data + i * es);
        if (work == ACC_F && cls != ACC_F) v.d = cls == ACC_I ? (double)v.i : (double)v.u;
        acc[oi] = red_step(kind, work, acc[oi], red_pre(kind, work, v));
        for (int32_t ax = r - 1; ax >= 0; ax--) {
            oi += (uint64_t)os[ax];
            if (++idx[ax] < x->dims[ax]) break;
            oi -= (uint64_t)os[ax] * (uint64_t)x->dims[ax];
            idx[ax] = 0;
        }
    }
    for (uint64_t i = 0; i < onel; i++) {
        red_acc a = acc[i];
        if (kind == RED_MEAN) {
            /* the mean of nothing is NaN for floats, 0 for integers */
            if (cls == ACC_F) a.d = group ? a.d / (double)group : NAN;
            else if (cls == ACC_I) a.i = group ? (int64_t)a.u / (int64_t)group : 0;
            else a.u = group ? a.u / group : 0;
        }
        red_store(e, o->data + i * es, red_post(kind, work, cls, a));
    }
    free(acc);
    tensor_free(c);
    *out = o;
    return TILEOPT_OK;
}

static int reduce_attr(red_kind kind, const Onnx__NodeProto *n, tensor *const *in,
                       size_t n_in, tensor **out, size_t n_out, const eval_env *env,
                       errbuf *err) {
    int rc = kern_need_io(in, n_in, 1, n_out, err);
    if (rc) return rc;
    int64_t axes[TENSOR_MAX_RANK];
    size_t na = 0;
    bool have;
    rc = kern_attr_ints(n, "axes", axes, TENSOR_MAX_RANK, &na, &have, err);
    if (rc) return rc;
    return do_reduce(kind, in[0], axes, na, graph_attr_int(n, "keepdims", 1) != 0, false,
                     env, &out[0], err);
}

static int reduce_input(red_kind kind, const Onnx__NodeProto *n, tensor *const *in,
                        size_t n_in, tensor **out, size_t n_out, const eval_env *env,
                        errbuf *err) {
    int rc = kern_need_io(in, n_in, 1, n_out, err);
    if (rc) return rc;
    int64_t axes[TENSOR_MAX_RANK];
    size_t na = 0;
    if (n_in > 1 && in[1]) {
        rc = kern_read_ints(in[1], "axes", env, axes, TENSOR_MAX_RANK, &na, err);
        if (rc) return rc;
    }
    return do_reduce(kind, in[0], axes, na, graph_attr_int(n, "keepdims", 1) != 0,
                     graph_attr_int(n, "noop_with_empty_axes", 0) != 0, env, &out[0], err);
}

/* axes as an attribute (before ReduceSum-13 and the others' opset 18), then as
** an input */
#define REDUCE_KERNELS(name, kind)                                                     \
    static int k_##name##_attr(KERNEL_PARAMS) {                                        \
        (void)opset;                                                                   \
        return reduce_attr(kind, n, in, n_in, out, n_out, env, err);                   \
    }                                                                                  \
    static int k_##name##_input(KERNEL_PARAMS) {                                       \
        (void)opset;                                                                   \
        return reduce_input(kind, n, in, n_in, out, n_out, env, err);                  \
    }
REDUCE_KERNELS(reduce_sum, RED_SUM)
REDUCE_KERNELS(reduce_prod, RED_PROD)
REDUCE_KERNELS(reduce_max, RED_MAX)
REDUCE_KERNELS(reduce_min, RED_MIN)
REDUCE_KERNELS(reduce_mean, RED_MEAN)
REDUCE_KERNELS(reduce_l1, RED_L1)
REDUCE_KERNELS(reduce_l2, RED_L2)
REDUCE_KERNELS(reduce_sum_square, RED_SUMSQ)
REDUCE_KERNELS(reduce_log_sum, RED_LOGSUM)
REDUCE_KERNELS(reduce_log_sum_exp, RED_LOGSUMEXP)

/* ------------------------------------------------------------ ArgMax, ArgMin */

/* Index of the first (or, select_last_index, the last) extreme along one axis.
** NaN counts as the extreme, as in numpy. */
static int do_arg(bool is_max, const Onnx__NodeProto *n, int64_t opset, tensor *const *in,
                  size_t n_in, tensor **out, size_t n_out, const eval_env *env,
                  errbuf *err) {
    int rc = kern_need_io(in, n_in, 1, n_out, err);
    if (rc) return rc;
    tensor *x = in[0];
    acc_class cls;
    if (!red_class(x->elem, &cls))
        return err_set(err, TILEOPT_UNSUPPORTED, "type %s not supported", dtype_name(x->elem));
    if (x->rank < 1) return err_set(err, TILEOPT_INVALID, "input must have rank >= 1");
    int64_t axis = 0;
    rc = kern_norm_axis(graph_attr_int(n, "axis", 0), x->rank, "axis", &axis, err);
    if (rc) return rc;
    if (x->dims[axis] == 0)
        return err_set(err, TILEOPT_INVALID, "cannot take Arg%s over an empty axis",
                       is_max ? "Max" : "Min");
    bool keep = graph_attr_int(n, "keepdims", 1) != 0;
    bool last = opset >= 12 && graph_attr_int(n, "select_last_index", 0) != 0;
    int64_t od[TENSOR_MAX_RANK];
    int32_t orank = 0;
    uint64_t outer = 1, inner = 1, len = (uint64_t)x->dims[axis];
    for (int32_t i = 0; i < x->rank; i++) {
        if (i < axis) outer *= (uint64_t)x->dims[i];
        if (i > axis) inner *= (uint64_t)x->dims[i];
        if (i != axis) od[orank++] = x->dims[i];
        else if (keep) od[orank++] = 1;
    }
    tensor *o = NULL, *c = NULL;
    rc = kern_new_tensor(DT_INT64, od, orank, env, &o, err);
    if (!rc) rc = tensor_contiguous(x, env, &c, err);
    if (rc) {
        tensor_free(o);
        return rc;
    }
    size_t es = kern_esize(x->elem);
    int64_t *res = (int64_t *)(void *)o->data;
    for (uint64_t a = 0; a < outer; a++)
        for (uint64_t b = 0; b < inner; b++) {
            const uint8_t *base = c->data + (a * len * inner + b) * es;
            red_acc best = red_load(x->elem, base);
            uint64_t bi = 0;
            for (uint64_t j = 1; j < len; j++) {
                red_acc v = red_load(x->elem, base + j * inner * es);
                bool better, equal;
                if (cls == ACC_F) {
                    if (isnan(best.d)) break;
                    better = isnan(v.d) || (is_max ? v.d > best.d : v.d < best.d);
                    equal = v.d == best.d;
                } else if (cls == ACC_I) {
                    better = is_max ? v.i > best.i : v.i < best.i;
                    equal = v.i == best.i;
                } else {
                    better = is_max ? v.u > best.u : v.u < best.u;
                    equal = v.u == best.u;
                }
                if (better || (last && equal)) {
                    best = v;
                    bi = j;
                }
            }
            res[a * inner + b] = (int64_t)bi;
        }
    tensor_free(c);
    out[0] = o;
    return TILEOPT_OK;
}

static int k_argmax(KERNEL_PARAMS) { return do_arg(true, n, opset, in, n_in, out, n_out, env, err); }
static int k_argmin(KERNEL_PARAMS) { return do_arg(false, n, opset, in, n_in, out, n_out, env, err); }

/* ------------------------------------------------------------------ CumSum */

static int k_cumsum(KERNEL_PARAMS) {
    (void)opset;
    int rc = kern_need_io(in, n_in, 2, n_out, err);
    if (rc) return rc;
    tensor *x = in[0];
    acc_class cls;
    if (!red_class(x->elem, &cls))
        return err_set(err, TILEOPT_UNSUPPORTED, "type %s not supported", dtype_name(x->elem));
    if (tensor_numel(in[1]) != 1) return err_set(err, TILEOPT_INVALID, "axis must hold one value");
    if (x->rank < 1) return err_set(err, TILEOPT_INVALID, "input must have rank >= 1");
    int64_t av[1], axis = 0;
    size_t na = 0;
    rc = kern_read_ints(in[1], "axis", env, av, 1, &na, err);
    if (!rc) rc = kern_norm_axis(av[0], x->rank, "axis", &axis, err);
    if (rc) return rc;
    bool excl = graph_attr_int(n, "exclusive", 0) != 0;
    bool rev = graph_attr_int(n, "reverse", 0) != 0;
    tensor *c = NULL, *o = NULL;
    rc = tensor_contiguous(x, env, &c, err);
    if (!rc) rc = kern_new_tensor(x->elem, x->dims, x->rank, env, &o, err);
    if (rc) {
        tensor_free(c);
        return rc;
    }
    size_t es = kern_esize(x->elem);
    uint64_t outer = 1, inner = 1, len = (uint64_t)x->dims[axis];
    for (int32_t i = 0; i < x->rank; i++) {
        if (i < axis) outer *= (uint64_t)x->dims[i];
        if (i > axis) inner *= (uint64_t)x->dims[i];
    }
    for (uint64_t a = 0; a < outer; a++)
        for (uint64_t b = 0; b < inner; b++) {
            red_acc s = red_init(RED_SUM, cls, x->elem);
            for (uint64_t t = 0; t < len; t++) {
                uint64_t j = rev ? len - 1 - t : t;
                size_t at = (size_t)((a * len + j) * inner + b) * es;
                red_acc v = red_load(x->elem, c->data + at);
                if (excl) red_store(x->elem, o->data + at, s);
                s = red_step(RED_SUM, cls, s, v);
                if (!excl) red_store(x->elem, o->data + at, s);
            }
        }
    tensor_free(c);
    out[0] = o;
    return TILEOPT_OK;
}

/* ------------------------------------------------------------------ table */

const kernel_def kernel_table_reduce[] = {
    {OP_ReduceSum, 1, k_reduce_sum_attr},
    {OP_ReduceSum, 13, k_reduce_sum_input},
    {OP_ReduceProd, 1, k_reduce_prod_attr},
    {OP_ReduceProd, 18, k_reduce_prod_input},
    {OP_ReduceMax, 1, k_reduce_max_attr},
    {OP_ReduceMax, 18, k_reduce_max_input},
    {OP_ReduceMin, 1, k_reduce_min_attr},
    {OP_ReduceMin, 18, k_reduce_min_input},
    {OP_ReduceMean, 1, k_reduce_mean_attr},
    {OP_ReduceMean, 18, k_reduce_mean_input},
    {OP_ReduceL1, 1, k_reduce_l1_attr},
    {OP_ReduceL1, 18, k_reduce_l1_input},
    {OP_ReduceL2, 1, k_reduce_l2_attr},
    {OP_ReduceL2, 18, k_reduce_l2_input},
    {OP_ReduceSumSquare, 1, k_reduce_sum_square_attr},
    {OP_ReduceSumSquare, 18, k_reduce_sum_square_input},
    {OP_ReduceLogSum, 1, k_reduce_log_sum_attr},
    {OP_ReduceLogSum, 18, k_reduce_log_sum_input},
    {OP_ReduceLogSumExp, 1, k_reduce_log_sum_exp_attr},
    {OP_ReduceLogSumExp, 18, k_reduce_log_sum_exp_input},
    {OP_ArgMax, 1, k_argmax},
    {OP_ArgMin, 1, k_argmin},
    {OP_CumSum, 11, k_cumsum},
};
const size_t kernel_table_reduce_count = countof(kernel_table_reduce);

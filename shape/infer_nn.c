/*
** Shape inference for network ops: MatMul and Gemm, convolution and pooling
** windows, normalization, reductions, Pad, Resize, DFT, GridSample,
** recurrences and detection.
*/
#include <math.h>
#include <string.h>

#include "shape/infer_impl.h"

/* MatMul with numpy semantics: 1-D operands are promoted, batch dims broadcast. */
void inf_matmul(node_ctx *c) {
    const graph_type *a = IN(c, 0), *b = IN(c, 1);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(a) || !has_rank(b) || a->rank == 0 || b->rank == 0) return;
    /* batch dims: broadcast a[:-2] with b[:-2] */
    dim ad[IR_MAX], bd[IR_MAX];
    dims_of(a, ad);
    dims_of(b, bd);
    dim_bcast bc;
    dim_bcast_start(&bc);
    dim_bcast_add(&bc, ad, a->rank >= 2 ? a->rank - 2 : 0);
    dim_bcast_add(&bc, bd, b->rank >= 2 ? b->rank - 2 : 0);
    dim_bcast_result(&bc, o->d);
    int32_t r = bc.rank;
    if (a->rank >= 2) {
        if (r + 1 > IR_MAX) { o->rank = -1; return; }
        put_dim(o, r++, a, a->rank - 2);
    }
    if (b->rank >= 2) {
        if (r + 1 > IR_MAX) { o->rank = -1; return; }
        put_dim(o, r++, b, b->rank - 1);
    }
    o->rank = r;
}

void inf_gemm(node_ctx *c) {
    const graph_type *a = IN(c, 0), *b = IN(c, 1);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    type_set_rank(o, 2);
    bool ta = graph_attr_int(c->n, "transA", 0) != 0;
    bool tb = graph_attr_int(c->n, "transB", 0) != 0;
    if (has_rank(a) && a->rank == 2) put_dim(o, 0, a, ta ? 1 : 0);
    if (has_rank(b) && b->rank == 2) put_dim(o, 1, b, tb ? 0 : 1);
}

/* Attribute ints with a default for every spatial axis. */
static bool spatial_attr(const Onnx__NodeProto *n, const char *name, int32_t count,
                         int64_t dflt, int64_t *out) {
    const Onnx__AttributeProto *a = graph_attr(n, name);
    if (!a || a->n_ints == 0) {
        for (int32_t i = 0; i < count; i++) out[i] = dflt;
        return true;
    }
    if (a->n_ints != (size_t)count) return false;
    for (int32_t i = 0; i < count; i++) out[i] = a->ints[i];
    return true;
}

static int64_t floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

static int64_t ceildiv(int64_t a, int64_t b) { return -floordiv(-a, b); }

/* Output spatial dims of Conv/pooling. kernel[] must be known. */
static void window_dims(node_ctx *c, const graph_type *x, const int64_t *kernel, int32_t ns,
                        bool use_dilation, bool ceil_mode, build_type *o) {
    int64_t strides[IR_MAX], dil[IR_MAX], pads[2 * IR_MAX];
    if (!spatial_attr(c->n, "strides", ns, 1, strides)) return;
    if (!spatial_attr(c->n, "dilations", ns, 1, dil)) return;
    if (!use_dilation)
        for (int32_t i = 0; i < ns; i++) dil[i] = 1;
    if (!spatial_attr(c->n, "pads", 2 * ns, 0, pads)) return;
    const char *ap = graph_attr_string(c->n, "auto_pad", "NOTSET");
    for (int32_t i = 0; i < ns; i++) {
        int64_t in = tdim(x, 2 + i);
        if (in < 0 || strides[i] <= 0 || dil[i] <= 0 || kernel[i] <= 0) continue;
        int64_t ek, span;
        if (__builtin_mul_overflow(kernel[i] - 1, dil[i], &ek) || ek == INT64_MAX) continue;
        ek += 1;
        int64_t out;
        if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
            out = ceildiv(in, strides[i]);
        } else if (!strcmp(ap, "VALID")) {
            out = ceildiv(in - ek + 1, strides[i]);
        } else {
            if (__builtin_add_overflow(in, pads[i], &span) ||
                __builtin_add_overflow(span, pads[i + ns], &span) ||
                __builtin_sub_overflow(span, ek, &span) || span < 0)
                continue;
            out = (ceil_mode ? ceildiv(span, strides[i]) : floordiv(span, strides[i])) + 1;
        }
        if (out >= 0) o->d[2 + i] = dim_num(out);
    }
}

/* The kernel's spatial dims: the attribute, else the weight's; false when
** neither says. */
static bool conv_kernel(node_ctx *c, const graph_type *x, const graph_type *w, int32_t ns,
                        int64_t *kernel) {
    const Onnx__AttributeProto *ka = graph_attr(c->n, "kernel_shape");
    if (ka) {
        if (ka->n_ints != (size_t)ns) return false;
        for (int32_t i = 0; i < ns; i++) kernel[i] = ka->ints[i];
        return true;
    }
    if (!has_rank(w) || w->rank != x->rank) return false;
    for (int32_t i = 0; i < ns; i++) kernel[i] = tdim(w, 2 + i);
    return true;
}

void inf_conv(node_ctx *c) {
    const graph_type *x = IN(c, 0), *w = IN(c, 1);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x) || x->rank < 3) return;
    int32_t ns = x->rank - 2;
    type_set_rank(o, x->rank);
    put_dim(o, 0, x, 0);
    if (has_rank(w) && w->rank == x->rank) put_dim(o, 1, w, 0);
    int64_t kernel[IR_MAX];
    if (!conv_kernel(c, x, w, ns, kernel)) return;
    window_dims(c, x, kernel, ns, true, false, o);
}

void inf_conv_transpose(node_ctx *c) {
    const graph_type *x = IN(c, 0), *w = IN(c, 1);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x) || x->rank < 3) return;
    int32_t ns = x->rank - 2;
    type_set_rank(o, x->rank);
    put_dim(o, 0, x, 0);
    int64_t group = graph_attr_int(c->n, "group", 1);
    if (has_rank(w) && w->rank == x->rank && tdim(w, 1) >= 0)
        o->d[1] = dim_num(dmul(tdim(w, 1), group));
    const Onnx__AttributeProto *os = graph_attr(c->n, "output_shape");
    if (os && os->n_ints) {
        if (os->n_ints < (size_t)ns) return;
        for (int32_t i = 0; i < ns; i++)
            o->d[2 + i] = dim_num(os->ints[os->n_ints - (size_t)ns + (size_t)i]);
        return;
    }
    int64_t kernel[IR_MAX], strides[IR_MAX], dil[IR_MAX], opad[IR_MAX], pads[2 * IR_MAX];
    if (!conv_kernel(c, x, w, ns, kernel)) return;
    if (!spatial_attr(c->n, "strides", ns, 1, strides) ||
        !spatial_attr(c->n, "dilations", ns, 1, dil) ||
        !spatial_attr(c->n, "output_padding", ns, 0, opad) ||
        !spatial_attr(c->n, "pads", 2 * ns, 0, pads))
        return;
    const char *ap = graph_attr_string(c->n, "auto_pad", "NOTSET");
    bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
    for (int32_t i = 0; i < ns; i++) {
        int64_t in = tdim(x, 2 + i);
        if (in < 0 || kernel[i] < 0) continue;
        int64_t out;
        if (same) {
            if (__builtin_mul_overflow(in, strides[i], &out)) continue;
        } else {
            int64_t a, b;
            if (in < 1 || __builtin_mul_overflow(strides[i], in - 1, &a) ||
                __builtin_mul_overflow(kernel[i] - 1, dil[i], &b) ||
                __builtin_add_overflow(a, b, &out) || __builtin_add_overflow(out, opad[i], &out) ||
                __builtin_add_overflow(out, 1, &out))
                continue;
            if (strcmp(ap, "VALID") != 0 &&
                (__builtin_sub_overflow(out, pads[i], &out) ||
                 __builtin_sub_overflow(out, pads[i + ns], &out)))
                continue;
        }
        if (out >= 0) o->d[2 + i] = dim_num(out);
    }
}

void inf_pool(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    for (size_t k = 0; k < c->n_out; k++) c->out[k].elem = k ? DT_INT64 : in_elem(c, 0);
    if (!has_rank(x) || x->rank < 3) return;
    int32_t ns = x->rank - 2;
    build_type *o = &c->out[0];
    type_set_rank(o, x->rank);
    put_dim(o, 0, x, 0);
    put_dim(o, 1, x, 1);
    const Onnx__AttributeProto *ka = graph_attr(c->n, "kernel_shape");
    if (ka && ka->n_ints == (size_t)ns) {
        bool ceil_mode = graph_attr_int(c->n, "ceil_mode", 0) != 0;
        bool dil = graph_node_is(c->n, "MaxPool");
        window_dims(c, x, ka->ints, ns, dil, ceil_mode, o);
    }
    for (size_t k = 1; k < c->n_out; k++) {
        int32_t e = c->out[k].elem;
        c->out[k] = *o;
        c->out[k].elem = e;
    }
}

/* DFT: the input's shape with the signal axis dft_length long (half of it plus
** one when onesided) and a last axis of 2 (real, imaginary). The axis is an
** attribute (default 1) before opset 20 and an input (default -2) from it. */
void inf_dft(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x) || x->rank < 2) return;
    int32_t r = x->rank, ax;
    int64_t axis = c->opset >= 20 ? -2 : graph_attr_int(c->n, "axis", 1);
    bool axis_known = c->opset < 20 || !graph_node_input(c->n, 2) || in_scalar_int(c, 2, &axis);
    if (!axis_known || !norm_axis(axis, r, &ax) || ax == r - 1) {
        type_set_rank(o, r);
        return;
    }
    type_from(o, x);
    dim len = dim_at(x, ax);
    int64_t given;
    if (graph_node_input(c->n, 1))
        len = in_scalar_int(c, 1, &given) && given >= 1 ? dim_num(given) : dim_unknown();
    if (graph_attr_int(c->n, "onesided", 0))
        len = dim_is_num(len) ? dim_num(len.n / 2 + 1) : dim_unknown();
    o->d[ax] = len;
    o->d[r - 1] = dim_num(2);
}

/* X [N, C, H, W] sampled at grid [N, Ho, Wo, 2]: [N, C, Ho, Wo] (and N-D alike
** from opset 20: the grid's middle axes are the output's spatial ones). */
void inf_grid_sample(node_ctx *c) {
    const graph_type *x = IN(c, 0), *grid = IN(c, 1);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x) || !has_rank(grid) || x->rank < 3 || grid->rank != x->rank) return;
    type_from(o, x);
    for (int32_t i = 2; i < x->rank; i++) o->d[i] = dim_at(grid, i - 1);
}

void inf_global_pool(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x) || x->rank < 2) return;
    type_from(o, x);
    for (int32_t i = 2; i < x->rank; i++) o->d[i] = dim_num(1);
}

void inf_batchnorm(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    type_from(&c->out[0], x);
    for (size_t k = 1; k < c->n_out; k++) {
        build_type *o = &c->out[k];
        o->elem = in_elem(c, 1) ? in_elem(c, 1) : in_elem(c, 0);
        if (c->opset >= 9) {
            type_set_rank(o, 1);
            if (has_rank(x) && x->rank >= 2) put_dim(o, 0, x, 1);
        }
    }
}

/* x's dims without the reduced axes, or with 1 in their place when keep is set. */
static void reduced_dims(build_type *o, const graph_type *x, const bool *red, bool keep) {
    int32_t r = 0;
    for (int32_t i = 0; i < x->rank; i++) {
        if (!red[i]) put_dim(o, r++, x, i);
        else if (keep)
            o->d[r++] = dim_num(1);
    }
    o->rank = r;
}

void inf_reduce(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x)) return;
    bool keep = graph_attr_int(c->n, "keepdims", 1) != 0;
    int64_t since = graph_node_is(c->n, "ReduceSum") ? 13 : 18;
    const int64_t *axes;
    int64_t n;
    bool present;
    if (!get_axes(c, since, 1, &axes, &n, &present)) {
        if (keep) type_set_rank(o, x->rank);
        return;
    }
    bool red[IR_MAX] = {false};
    if (!present || n == 0) {
        if (c->opset >= since && graph_attr_int(c->n, "noop_with_empty_axes", 0)) {
            type_from(o, x);
            return;
        }
        for (int32_t i = 0; i < x->rank; i++) red[i] = true;
    } else {
        for (int64_t k = 0; k < n; k++) {
            int32_t a;
            if (!norm_axis(axes[k], x->rank, &a)) return;
            red[a] = true;
        }
    }
    reduced_dims(o, x, red, keep);
}

void inf_argreduce(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = DT_INT64;
    if (!has_rank(x)) return;
    int32_t a;
    if (!norm_axis(graph_attr_int(c->n, "axis", 0), x->rank, &a)) return;
    bool red[IR_MAX] = {false};
    red[a] = true;
    reduced_dims(o, x, red, graph_attr_int(c->n, "keepdims", 1) != 0);
}

void inf_pad(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x)) return;
    int32_t r = x->rank;
    type_set_rank(o, r);
    const int64_t *pads = NULL;
    int64_t np = 0;
    if (c->opset < 11) {
        const Onnx__AttributeProto *a = graph_attr(c->n, c->opset < 2 ? "paddings" : "pads");
        if (!a) return;
        pads = a->ints;
        np = (int64_t)a->n_ints;
    } else if (!in_ints(c, 1, &pads, &np)) {
        return;
    }
    const int64_t *axes = NULL;
    int64_t nax = r;
    if (c->opset >= 18 && graph_node_input(c->n, 3)) {
        if (!in_ints(c, 3, &axes, &nax)) return;
    }
    if (np != 2 * nax) return;
    type_from(o, x);
    for (int64_t k = 0; k < nax; k++) {
        int32_t a;
        if (!norm_axis(axes ? axes[k] : k, r, &a)) {
            type_set_rank(o, r);
            return;
        }
        int64_t d = tdim(x, a);
        if (d < 0) {
            if (pads[k] != 0 || pads[k + nax] != 0) o->d[a] = dim_unknown();
            continue;
        }
        int64_t v;
        if (__builtin_add_overflow(d, pads[k], &v) || __builtin_add_overflow(v, pads[k + nax], &v))
            v = -1;
        o->d[a] = size_num(v);
    }
}

/* Resize (opset 10: X, scales; 11+: X, roi, scales, sizes) and Upsample. */
void inf_resize(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x)) return;
    int32_t r = x->rank;
    type_set_rank(o, r);
    if (graph_attr(c->n, "axes")) return; /* opset 18 subset form: not handled */
    bool upsample = graph_node_is(c->n, "Upsample");
    size_t scales_in = (upsample || c->opset < 11) ? 1 : 2;
    if (!upsample && c->opset >= 11 && graph_node_input(c->n, 3)) {
        const int64_t *sz;
        int64_t n;
        if (in_ints(c, 3, &sz, &n) && n == r)
            for (int32_t i = 0; i < r; i++) o->d[i] = size_num(sz[i]);
        return;
    }
    double sc[IR_MAX];
    int64_t n = 0;
    if (upsample && c->opset < 9) {
        const Onnx__AttributeProto *a = graph_attr(c->n, "scales");
        if (!a || a->n_floats != (size_t)r) return;
        for (int32_t i = 0; i < r; i++) sc[i] = a->floats[i];
        n = r;
    } else if (!in_floats(c, scales_in, sc, IR_MAX, &n)) {
        return;
    }
    if (n != r) return;
    for (int32_t i = 0; i < r; i++) {
        int64_t d = tdim(x, i);
        if (sc[i] == 1.0) {
            put_dim(o, i, x, i);
            continue;
        }
        if (d < 0 || !(sc[i] > 0)) continue;
        double v = floor((double)d * (float)sc[i]);
        if (v < 9.0e15) o->d[i] = dim_num((int64_t)v);
    }
}

/* Y is like X; Mean and InvStdDev are in stash_type, the axes from axis on
** kept as 1. */
void inf_layernorm(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    type_from(&c->out[0], x);
    int32_t stash = (int32_t)graph_attr_int(c->n, "stash_type", DT_FLOAT);
    int64_t axis = graph_attr_int(c->n, "axis", -1);
    for (size_t k = 1; k < c->n_out && k < 3; k++) {
        build_type *o = &c->out[k];
        o->elem = stash;
        if (!has_rank(x)) continue;
        if (axis < 0) axis += x->rank;
        if (axis < 0 || axis >= x->rank) continue;
        type_from(o, x);
        o->elem = stash;
        for (int32_t i = (int32_t)axis; i < x->rank; i++) o->d[i] = dim_num(1);
    }
}

/*
** RNN, GRU and LSTM: Y is [seq, directions, batch, hidden] and Y_h (LSTM's Y_c
** too) [directions, batch, hidden]; layout 1 puts batch first in both. All of X's
** element type.
*/
void inf_rnn(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    int64_t hidden = graph_attr_int(c->n, "hidden_size", -1);
    bool batch_first = graph_attr_int(c->n, "layout", 0) == 1;
    int64_t dirs = strcmp(graph_attr_string(c->n, "direction", "forward"), "bidirectional")
                       ? 1 : 2;
    for (size_t k = 0; k < c->n_out && k < 3; k++) {
        build_type *o = &c->out[k];
        o->elem = in_elem(c, 0);
        if (!has_rank(x) || x->rank != 3) continue;
        int32_t r = k == 0 ? 4 : 3, seq = batch_first ? 1 : 0, batch = batch_first ? 0 : 1;
        type_set_rank(o, r);
        int32_t at = 0;
        if (k == 0 && !batch_first) put_dim(o, at++, x, seq);
        if (batch_first) put_dim(o, at++, x, batch);
        if (k == 0 && batch_first) put_dim(o, at++, x, seq);
        o->d[at++] = dim_num(dirs);
        if (!batch_first) put_dim(o, at++, x, batch);
        o->d[at] = hidden > 0 ? dim_num(hidden) : dim_unknown();
    }
}

/* NonMaxSuppression: int64 [selected, 3] (batch, class, box), the count data. */
void inf_nms(node_ctx *c) {
    build_type *o = &c->out[0];
    o->elem = DT_INT64;
    type_set_rank(o, 2);
    o->d[1] = dim_num(3);
}

/* RoiAlign: [rois, channels, output_height, output_width] of X's type. */
void inf_roi_align(node_ctx *c) {
    const graph_type *x = IN(c, 0), *rois = IN(c, 1);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    type_set_rank(o, 4);
    if (has_rank(rois) && rois->rank == 2) put_dim(o, 0, rois, 0);
    if (has_rank(x) && x->rank == 4) put_dim(o, 1, x, 1);
    int64_t h = graph_attr_int(c->n, "output_height", 1), w = graph_attr_int(c->n, "output_width", 1);
    o->d[2] = h > 0 ? dim_num(h) : dim_unknown();
    o->d[3] = w > 0 ? dim_num(w) : dim_unknown();
}

/* DepthToSpace / SpaceToDepth: NCHW, channels traded for blocksize^2 space. */
void inf_depth_space(node_ctx *c) {
    const graph_type *x = IN(c, 0);
    build_type *o = &c->out[0];
    o->elem = in_elem(c, 0);
    if (!has_rank(x) || x->rank != 4) return;
    type_set_rank(o, 4);
    int64_t b = graph_attr_int(c->n, "blocksize", 0);
    if (b <= 0) return;
    int64_t b2 = dmul(b, b);
    put_dim(o, 0, x, 0);
    bool to_space = graph_node_is(c->n, "DepthToSpace");
    int64_t ch = tdim(x, 1);
    if (ch >= 0) o->d[1] = size_num(to_space ? (ch % b2 ? -1 : ch / b2) : dmul(ch, b2));
    for (int32_t i = 2; i < 4; i++) {
        int64_t d = tdim(x, i);
        if (d >= 0) o->d[i] = size_num(to_space ? dmul(d, b) : (d % b ? -1 : d / b));
    }
}

/*
** Pad: constant, reflect, edge and wrap modes, negative pads (cropping), the
** attribute forms (opsets 1 and 2) and the input forms (11 on, `axes` from 18).
** It moves data, so it dispatches on element size and works for every type but
** strings.
*/
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"

typedef enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } pad_mode;

static int pad_mode_of(const Onnx__NodeProto *n, pad_mode *m, errbuf *err) {
    const Onnx__AttributeProto *a = graph_attr(n, "mode");
    static const struct {
        const char *name;
        pad_mode mode;
    } modes[] = {{"constant", PAD_CONSTANT}, {"reflect", PAD_REFLECT}, {"edge", PAD_EDGE},
                 {"wrap", PAD_WRAP}};
    *m = PAD_CONSTANT;
    if (!a || !a->s.len) return TILEOPT_OK;
    for (size_t i = 0; i < countof(modes); i++)
        if (strlen(modes[i].name) == a->s.len && !memcmp(a->s.data, modes[i].name, a->s.len)) {
            *m = modes[i].mode;
            return TILEOPT_OK;
        }
    return err_set(err, TILEOPT_INVALID, "unknown mode '%.*s'", (int)a->s.len,
                   (const char *)a->s.data);
}

/* pads[0..2r): begins then ends, from the attribute or the inputs (with axes). */
static int pad_amounts(const Onnx__NodeProto *n, int64_t opset, tensor *const *in,
                       size_t n_in, int32_t r, int64_t *pads, errbuf *err) {
    memset(pads, 0, 2 * (size_t)r * sizeof *pads);
    if (opset < 11) {
        const Onnx__AttributeProto *a = graph_attr(n, opset < 2 ? "paddings" : "pads");
        if (!a || a->n_ints != 2 * (size_t)r)
            return err_set(err, TILEOPT_INVALID, "pads must have %d values", 2 * (int)r);
        for (int32_t i = 0; i < 2 * r; i++) pads[i] = a->ints[i];
        return TILEOPT_OK;
    }
    if (n_in < 2 || !in[1])
        return err_set(err, TILEOPT_INVALID, "the pads input is missing");
    int64_t p[2 * TENSOR_MAX_RANK], axes[TENSOR_MAX_RANK];
    size_t np = 0, na = (size_t)r;
    if (in[1]->elem != DT_INT64 || !tensor_to_i64(in[1], p, 2 * TENSOR_MAX_RANK, &np))
        return err_set(err, TILEOPT_INVALID, "pads must be int64");
    for (int32_t i = 0; i < r; i++) axes[i] = i;
    if (opset >= 18 && n_in > 3 && in[3] &&
        !tensor_to_i64(in[3], axes, TENSOR_MAX_RANK, &na))
        return err_set(err, TILEOPT_INVALID, "axes must be integers");
    if (np != 2 * na)
        return err_set(err, TILEOPT_INVALID, "%zu pads for %zu axes", np, na);
    for (size_t i = 0; i < na; i++) {
        int64_t ax = axes[i] < 0 ? axes[i] + r : axes[i];
        if (ax < 0 || ax >= r)
            return err_set(err, TILEOPT_INVALID, "axis %lld outside rank %d",
                           (long long)axes[i], (int)r);
        pads[ax] = p[i];
        pads[ax + r] = p[i + na];
    }
    return TILEOPT_OK;
}

/* The source coordinate of output coordinate o along an axis of size d, or -1
** for the constant. */
static int64_t pad_source(int64_t o, int64_t begin, int64_t d, pad_mode m) {
    int64_t i = o - begin;
    if (i >= 0 && i < d) return i;
    if (m == PAD_CONSTANT || d == 0) return -1;
    if (m == PAD_EDGE) return i < 0 ? 0 : d - 1;
    if (m == PAD_WRAP) return ((i % d) + d) % d;
    if (d == 1) return 0;
    /* reflect without repeating the edge, folding back as often as needed */
    int64_t period = 2 * (d - 1), k = ((i % period) + period) % period;
    return k < d ? k : period - k;
}

static int k_pad(KERNEL_PARAMS) {
    const char *nm = eval_node_name(n);
    if (n_in < 1 || !in[0] || n_out < 1)
        return err_set(err, TILEOPT_INVALID, "Pad %s: needs data", nm);
    tensor *X = in[0];
    if (X->elem == DT_STRING)
        return err_set(err, TILEOPT_UNSUPPORTED, "Pad %s: string data", nm);
    int32_t r = X->rank;
    pad_mode mode;
    int64_t pads[2 * TENSOR_MAX_RANK], od[TENSOR_MAX_RANK];
    int rc = pad_mode_of(n, &mode, err);
    if (!rc) rc = pad_amounts(n, opset, in, n_in, r, pads, err);
    if (rc) return err_prefix(err, "Pad %s: ", nm);
    for (int32_t i = 0; i < r; i++) {
        od[i] = X->dims[i] + pads[i] + pads[i + r];
        if (od[i] < 0 || (mode != PAD_CONSTANT && X->dims[i] == 0 && od[i] > 0))
            return err_set(err, TILEOPT_INVALID, "Pad %s: axis %d of size %lld padded by "
                           "%lld and %lld", nm, (int)i, (long long)X->dims[i],
                           (long long)pads[i], (long long)pads[i + r]);
    }
    /* the constant, in the element type */
    tensor *x = NULL, *o = NULL, *cval = NULL, *c0 = NULL;
    if ((rc = tensor_contiguous(X, env, &x, err)) ||
        (rc = tensor_new(X->elem, od, r, env, &o, err)))
        goto done;
    if (mode == PAD_CONSTANT) {
        tensor *src = opset >= 11 && n_in > 2 && in[2] ? in[2] : NULL;
        if (!src) {
            int64_t one = 1;
            if ((rc = tensor_new(DT_DOUBLE, &one, 0, env, &c0, err))) goto done;
            double v = opset < 11 ? graph_attr_float(n, "value", 0.0f) : 0.0;
            memcpy(c0->data, &v, sizeof v);
            src = c0;
        }
        if (tensor_numel(src) != 1) {
            rc = err_set(err, TILEOPT_INVALID, "Pad %s: constant_value must be one value", nm);
            goto done;
        }
        if ((rc = eval_cast(src, X->elem, env, &cval, err))) goto done;
    }
    size_t es = tensor_elem_size(x);
    int64_t istr[TENSOR_MAX_RANK], s = 1;
    for (int32_t i = r - 1; i >= 0; i--) {
        istr[i] = s;
        s *= X->dims[i];
    }
    int64_t idx[TENSOR_MAX_RANK] = {0};
    uint64_t total = tensor_numel(o);
    for (uint64_t e = 0; e < total; e++) {
        int64_t off = 0;
        bool fill = false;
        for (int32_t i = 0; i < r && !fill; i++) {
            int64_t src = pad_source(idx[i], pads[i], X->dims[i], mode);
            fill = src < 0;
            off += src * istr[i];
        }
        memcpy(o->data + e * es, fill ? cval->data : x->data + (size_t)off * es, es);
        for (int32_t i = r - 1; i >= 0 && ++idx[i] == od[i]; i--) idx[i] = 0;
    }
done:
    tensor_free(x);
    tensor_free(c0);
    tensor_free(cval);
    if (rc) {
        tensor_free(o);
        return rc;
    }
    out[0] = o;
    return TILEOPT_OK;
}

const kernel_def kernel_table_pad[] = {
    {OP_Pad, 1, k_pad},
};
const size_t kernel_table_pad_count = countof(kernel_table_pad);

/*
** Fuzz target (c): decode a TensorProto, then Tile it every way tileopt can and
** run one elementwise kernel on it, with fuzzed repeats, op and attributes.
**
** Input: byte 0 picks the elementwise op, byte 1 holds the repeat count (low 4
** bits) and the kernel's input count (bits 4-5), byte 2 the opset and byte 3
** the Cast target; then one byte per repeat (int8; 127, -128 and 126 stand for
** INT64_MAX, INT64_MIN and 2^40, to reach the overflow checks); the rest is the
** serialized TensorProto.
**
** The same bytes are also read as a SequenceProto and an OptionalProto.
**
** Properties beyond "no crash": the materialized Tile kernel and the Tile view
** made contiguous agree byte for byte; with as many repeats as axes,
** tileopt_tile (promoting) agrees with both; encode then decode keeps the type
** and shape.
*/
#include <stdint.h>

#include "eval/eval.h"
#include "fuzz_common.h"
#include "api/ctx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const eval_env fuzz_lim = {.lim = {.max_tensor_bytes = 262144,
                                          .max_eval_bytes = 2097152,
                                          .max_eval_steps = 1 << 20, .max_depth = 16}};

static int64_t repeat_of(uint8_t b) {
    int8_t v = (int8_t)b;
    if (v == 127) return INT64_MAX;
    if (v == -128) return INT64_MIN;
    if (v == 126) return (int64_t)1 << 40;
    return v;
}

/* Same element type, shape and values (strings by content). */
static bool same_values(const tensor *a, const tensor *b) {
    if (a->elem != b->elem || a->rank != b->rank) return false;
    for (int32_t i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    uint64_t n = tensor_numel(a);
    if (a->elem != DT_STRING) return memcmp(a->data, b->data, tensor_nbytes(a)) == 0;
    const graph_bytes *sa = (const void *)a->data, *sb = (const void *)b->data;
    for (uint64_t i = 0; i < n; i++)
        if (sa[i].len != sb[i].len || (sa[i].len && memcmp(sa[i].data, sb[i].data, sa[i].len)))
            return false;
    return true;
}

static void check_tiles(tileopt_ctx *ctx, tileopt_tensor *in, const int64_t *rep, size_t n) {
    errbuf e1 = {0}, e2 = {0}, e3 = {0};
    tensor *mat = NULL, *view = NULL, *flat = NULL;
    int rc_mat = kernel_tile(in->t, rep, n, &fuzz_lim, &mat, &e1);
    int rc_view = view_tile(in->t, rep, n, &fuzz_lim, &view, &e2);
    FUZZ_CHECK(!rc_mat || e1.msg[0], "kernel_tile failed without a message");
    FUZZ_CHECK(!rc_view || e2.msg[0], "view_tile failed without a message");
    /* A view never allocates, so it may succeed where the kernel hits a limit;
    ** the reverse would mean the two disagree about the repeats. */
    FUZZ_CHECK(rc_mat || !rc_view, "kernel_tile accepted what view_tile refused: %s", e2.msg);
    if (!rc_view) {
        int rc = tensor_contiguous(view, &fuzz_lim, &flat, &e3);
        FUZZ_CHECK(!rc || e3.msg[0], "tensor_contiguous failed without a message");
        if (!rc && !rc_mat)
            FUZZ_CHECK(same_values(mat, flat), "Tile kernel and Tile view disagree");
    }
    tileopt_tensor *pt = NULL;
    tileopt_status st = tileopt_tile(ctx, in, rep, n, &pt);
    if (st != TILEOPT_OK) fuzz_failed(ctx, st, "tileopt_tile");
    else if (!rc_mat && n == (size_t)in->t->rank)
        FUZZ_CHECK(same_values(mat, pt->t), "tileopt_tile and kernel_tile disagree");
    tileopt_tensor_free(pt);
    tensor_free(flat);
    tensor_free(view);
    tensor_free(mat);
}

static void check_kernel(const uint8_t *ctl, tileopt_tensor *in, const int64_t *rep, size_t n) {
    const kernel_def *k = &kernel_table_elementwise[ctl[0] % kernel_table_elementwise_count];
    size_t n_in = 1 + ((ctl[1] >> 4) & 3) % 3;
    int64_t opset = 1 + ctl[2] % 17;
    errbuf e = {0};
    tensor *view = NULL;
    /* The second input is the tiled view when the repeats fit, to drive the
    ** broadcasting loops over stride-0 axes. */
    if (view_tile(in->t, rep, n, &fuzz_lim, &view, &e)) view = tensor_ref(in->t);
    tensor *ins[3] = {in->t, view, in->t};

    Onnx__AttributeProto to = ONNX__ATTRIBUTE_PROTO__INIT, alpha = ONNX__ATTRIBUTE_PROTO__INIT;
    to.name = "to";
    to.has_type = 1;
    to.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    to.has_i = 1;
    to.i = ctl[3] % 24;
    alpha.name = "alpha";
    alpha.has_type = 1;
    alpha.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    alpha.has_f = 1;
    alpha.f = (float)(int8_t)ctl[3] / 8.0f;
    Onnx__AttributeProto *attrs[] = {&to, &alpha};
    Onnx__NodeProto node = ONNX__NODE_PROTO__INIT;
    node.op_type = (char *)op_table[k->op].name;
    node.name = "fuzz_node";
    node.attribute = attrs;
    node.n_attribute = 2;

    tensor *out[1] = {NULL};
    memset(&e, 0, sizeof e);
    int rc = k->fn(&node, opset, ins, n_in, out, 1, &fuzz_lim, &e);
    FUZZ_CHECK(!rc || e.msg[0], "%s failed without a message", op_table[k->op].name);
    if (!rc) {
        FUZZ_CHECK(out[0] != NULL, "%s succeeded without an output", op_table[k->op].name);
        tensor *flat = NULL;
        if (!tensor_contiguous(out[0], &fuzz_lim, &flat, &e)) tensor_free(flat);
    }
    tensor_free(out[0]);
    tensor_free(view);
}

static void check_encode(tileopt_tensor *in) {
    void *bytes = NULL;
    size_t size = 0;
    errbuf e = {0};
    if (tensor_encode(in->t, "fuzz", &bytes, &size, &e)) {
        FUZZ_CHECK(e.msg[0], "tensor_encode failed without a message");
        return;
    }
    tensor *back = NULL;
    int rc = tensor_decode(bytes, size, &fuzz_lim, &back, &e);
    FUZZ_CHECK(!rc, "an encoded tensor does not decode: %s", e.msg);
    FUZZ_CHECK(!tensor_is_contiguous(in->t) || same_values(in->t, back),
               "encode/decode changed the tensor");
    tensor_free(back);
    free(bytes);
}

/* The same bytes read as a SequenceProto and as an OptionalProto (the bytes
** do not say which they hold): an error has a message, and what decodes
** encodes and decodes again to the same kind and item count. */
static void check_containers(const uint8_t *proto, size_t size, int32_t elem) {
    static const int32_t kinds[] = {EVAL_SEQUENCE, EVAL_OPTIONAL};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        tensor *v = NULL, *back = NULL;
        errbuf e = {0};
        if (value_decode(proto, size, kinds[k], elem, &fuzz_lim, &v, &e)) {
            FUZZ_CHECK(e.msg[0], "value_decode failed without a message");
            continue;
        }
        void *bytes = NULL;
        size_t n = 0;
        if (tensor_encode(v, "fuzz", &bytes, &n, &e)) {
            FUZZ_CHECK(e.msg[0], "encoding a decoded value failed without a message");
        } else {
            int rc = value_decode(bytes, n, kinds[k], elem, &fuzz_lim, &back, &e);
            FUZZ_CHECK(!rc, "an encoded value does not decode: %s", e.msg);
            FUZZ_CHECK(rc || (back->kind == v->kind && back->n_items == v->n_items),
                       "encode/decode changed the value's kind or item count");
        }
        tensor_free(back);
        tensor_free(v);
        free(bytes);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 4) return 0;
    uint8_t ctl[4];
    memcpy(ctl, data, 4);
    size_t n = ctl[1] & 15;
    if (size < 4 + n) return 0;
    int64_t rep[16];
    for (size_t i = 0; i < n; i++) rep[i] = repeat_of(data[4 + i]);
    const uint8_t *proto = data + 4 + n;
    size_t proto_size = size - 4 - n;

    /* the Cast target byte doubles as an empty container's element type */
    check_containers(proto, proto_size, ctl[3] % 17);
    tileopt_ctx *ctx = fuzz_ctx();
    tileopt_tensor *in = NULL;
    tileopt_status st = tileopt_tensor_load_buffer(ctx, proto, proto_size, &in);
    if (st != TILEOPT_OK) {
        fuzz_failed(ctx, st, "tensor decode");
        tileopt_ctx_free(ctx);
        return 0;
    }
    check_tiles(ctx, in, rep, n);
    check_kernel(ctl, in, rep, n);
    check_encode(in);
    tileopt_tensor_free(in);
    tileopt_ctx_free(ctx);
    return 0;
}

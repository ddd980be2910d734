/* Unit tests of the shape-subgraph kernels (eval/ops_shape.c), run through
** single-node models so the dispatch by op and opset is exercised too. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "builder.h"

/* Run one node `op` with inputs named x0.. and one output y; the model's
** inputs are the given tensors (no type declared: any type flows). */
static int run_node(Onnx__NodeProto *n, int64_t opset, tensor **in, size_t n_in,
                    tensor **out, errbuf *err) {
    Onnx__GraphProto *g = b_graph_new("g");
    b_add(g, n);
    for (size_t i = 0; i < n_in; i++) {
        char name[24];
        snprintf(name, sizeof name, "x%zu", i);
        b_input(g, b_value(name, in[i]->elem, -1, NULL));
    }
    b_output(g, b_value("y", 0, -1, NULL));
    graph_model *m = NULL;
    int rc = b_load(g, opset, &m, err);
    if (rc) return rc;
    tensor **outs = NULL;
    size_t no = 0;
    rc = eval_graph(m, in, n_in, &outs, &no, NULL, err);
    if (!rc) {
        rc = tensor_detach(outs[0], NULL, out, err);
        tensor_free(outs[0]);
        free(outs);
    }
    graph_model_free(m);
    return rc;
}

static void free_all(tensor **t, size_t n) {
    for (size_t i = 0; i < n; i++) tensor_free(t[i]);
}

static void assert_dims(const tensor *t, int rank, const int64_t *dims) {
    assert_int_equal(t->rank, rank);
    for (int i = 0; i < rank; i++) assert_int_equal(t->dims[i], dims[i]);
}

static const int64_t *i64(const tensor *t) { return (const int64_t *)(const void *)t->data; }
static const float *f32(const tensor *t) { return (const float *)(const void *)t->data; }

static void ops_shape_should_gather_with_negative_indices(void **state) {
    (void)state;
    float x[6] = {0, 1, 2, 3, 4, 5};
    int64_t xd[2] = {3, 2}, idx[2] = {-1, 0}, id[1] = {2};
    tensor *in[2] = {b_make(DT_FLOAT, 2, xd, x), b_make(DT_INT64, 1, id, idx)};
    tensor *y = NULL;
    errbuf err = {0};
    assert_int_equal(run_node(b_node("Gather", "x0,x1", "y"), 13, in, 2, &y, &err), 0);
    int64_t want[2] = {2, 2};
    assert_dims(y, 2, want);
    float exp[4] = {4, 5, 0, 1};
    assert_memory_equal(y->data, exp, sizeof exp);
    tensor_free(y);
    free_all(in, 2);
    b_free_all();
}

static void ops_shape_should_reject_gather_index_out_of_range(void **state) {
    (void)state;
    float x[3] = {0, 1, 2};
    int64_t xd[1] = {3}, idx[1] = {3}, id[1] = {1};
    tensor *in[2] = {b_make(DT_FLOAT, 1, xd, x), b_make(DT_INT64, 1, id, idx)};
    tensor *y = NULL;
    errbuf err = {0};
    assert_int_equal(run_node(b_node("Gather", "x0,x1", "y"), 13, in, 2, &y, &err),
                     TILEOPT_INVALID);
    assert_non_null(strstr(err.msg, "Gather"));
    assert_non_null(strstr(err.msg, "out of range"));
    free_all(in, 2);
    b_free_all();
}

static void ops_shape_should_reshape_with_zero_and_minus_one(void **state) {
    (void)state;
    int64_t xd[3] = {2, 3, 4}, sd[1] = {3}, shape[3] = {0, -1, 2};
    tensor *in[2] = {b_make(DT_FLOAT, 3, xd, NULL), b_make(DT_INT64, 1, sd, shape)};
    for (int i = 0; i < 24; i++) ((float *)(void *)in[0]->data)[i] = (float)i;
    tensor *y = NULL;
    errbuf err = {0};
    assert_int_equal(run_node(b_node("Reshape", "x0,x1", "y"), 13, in, 2, &y, &err), 0);
    int64_t want[3] = {2, 6, 2};
    assert_dims(y, 3, want);
    assert_true(f32(y)[23] == 23.0f);
    tensor_free(y);
    /* allowzero: 0 is a real zero-size dim, and the element counts differ */
    Onnx__NodeProto *n = b_node("Reshape", "x0,x1", "y");
    b_attr_int(n, "allowzero", 1);
    assert_int_equal(run_node(n, 14, in, 2, &y, &err), TILEOPT_INVALID);
    free_all(in, 2);
    b_free_all();
}

static void ops_shape_should_reject_reshape_size_mismatch(void **state) {
    (void)state;
    int64_t xd[1] = {6}, sd[1] = {2}, shape[2] = {4, 2};
    tensor *in[2] = {b_make(DT_FLOAT, 1, xd, NULL), b_make(DT_INT64, 1, sd, shape)};
    tensor *y = NULL;
    errbuf err = {0};
    assert_int_equal(run_node(b_node("Reshape", "x0,x1", "y"), 13, in, 2, &y, &err),
                     TILEOPT_INVALID);
    assert_non_null(strstr(err.msg, "cannot reshape"));
    free_all(in, 2);
    b_free_all();
}

static void ops_shape_should_slice_with_negative_steps_and_clamping(void **state) {
    (void)state;
    int64_t x[5] = {0, 1, 2, 3, 4}, xd[1] = {5}, one[1] = {1};
    int64_t st[1] = {100}, en[1] = {-100}, ax[1] = {0}, sp[1] = {-2};
    tensor *in[5] = {b_make(DT_INT64, 1, xd, x), b_make(DT_INT64, 1, one, st),
                     b_make(DT_INT64, 1, one, en), b_make(DT_INT64, 1, one, ax),
                     b_make(DT_INT64, 1, one, sp)};
    tensor *y = NULL;
    errbuf err = {0};
    assert_int_equal(run_node(b_node("Slice", "x0,x1,x2,x3,x4", "y"), 13, in, 5, &y, &err), 0);
    int64_t want[1] = {3}, exp[3] = {4, 2, 0};
    assert_dims(y, 1, want);
    assert_memory_equal(y->data, exp, sizeof exp);
    tensor_free(y);
    /* the attribute form (opset 1-9) */
    Onnx__NodeProto *n = b_node("Slice", "x0", "y");
    int64_t s1[1] = {1}, e1[1] = {-1};
    b_attr_ints(n, "starts", s1, 1);
    b_attr_ints(n, "ends", e1, 1);
    assert_int_equal(run_node(n, 9, in, 1, &y, &err), 0);
    int64_t exp2[3] = {1, 2, 3};
    assert_int_equal(y->dims[0], 3);
    assert_memory_equal(y->data, exp2, sizeof exp2);
    tensor_free(y);
    /* step 0 is an error */
    sp[0] = 0;
    memcpy(in[4]->data, sp, sizeof sp);
    assert_int_equal(run_node(b_node("Slice", "x0,x1,x2,x3,x4", "y"), 13, in, 5, &y, &err),
                     TILEOPT_INVALID);
    free_all(in, 5);
    b_free_all();
}

static void ops_shape_should_concat_and_transpose_strings(void **state) {
    (void)state;
    int64_t d[2] = {1, 2};
    tensor *a = b_make(DT_STRING, 2, d, NULL), *b = b_make(DT_STRING, 2, d, NULL);
    graph_bytes *sa = (graph_bytes *)(void *)a->data, *sb = (graph_bytes *)(void *)b->data;
    sa[0] = (graph_bytes){(const uint8_t *)"a", 1};
    sa[1] = (graph_bytes){(const uint8_t *)"bb", 2};
    sb[0] = (graph_bytes){(const uint8_t *)"ccc", 3};
    sb[1] = (graph_bytes){(const uint8_t *)"", 0};
    tensor *in[2] = {a, b};
    Onnx__NodeProto *n = b_node("Concat", "x0,x1", "y");
    b_attr_int(n, "axis", 0);
    tensor *y = NULL;
    errbuf err = {0};
    assert_int_equal(run_node(n, 13, in, 2, &y, &err), 0);
    int64_t want[2] = {2, 2};
    assert_dims(y, 2, want);
    const graph_bytes *s = (const graph_bytes *)(const void *)y->data;
    assert_int_equal(s[2].len, 3);
    assert_memory_equal(s[2].data, "ccc", 3);
    tensor *t = NULL;
    tensor *tin[1] = {y};
    assert_int_equal(run_node(b_node("Transpose", "x0", "y"), 13, tin, 1, &t, &err), 0);
    s = (const graph_bytes *)(const void *)t->data;
    assert_int_equal(s[1].len, 3); /* [[a, ccc], [bb, ""]] */
    assert_int_equal(s[2].len, 2);
    tensor_free(t);
    tensor_free(y);
    free_all(in, 2);
    b_free_all();
}

static void ops_shape_should_squeeze_and_unsqueeze_by_opset(void **state) {
    (void)state;
    int64_t xd[3] = {1, 3, 1}, ad[1] = {1}, axes[1] = {-1};
    tensor *in[2] = {b_make(DT_FLOAT, 3, xd, NULL), b_make(DT_INT64, 1, ad, axes)};
    tensor *y = NULL;
    errbuf err = {0};
    assert_int_equal(run_node(b_node("Squeeze", "x0,x1", "y"), 13, in, 2, &y, &err), 0);
    int64_t w1[2] = {1, 3};
    assert_dims(y, 2, w1);
    tensor_free(y);
    assert_int_equal(run_node(b_node("Squeeze", "x0", "y"), 13, in, 1, &y, &err), 0);
    assert_dims(y, 1, &xd[1]);
    tensor_free(y);
    Onnx__NodeProto *n = b_node("Unsqueeze", "x0", "y");
    int64_t ua[2] = {0, 4};
    b_attr_ints(n, "axes", ua, 2);
    assert_int_equal(run_node(n, 11, in, 1, &y, &err), 0);
    int64_t w2[5] = {1, 1, 3, 1, 1};
    assert_dims(y, 5, w2);
    tensor_free(y);
    /* squeezing a dim that is not 1 */
    axes[0] = 1;
    memcpy(in[1]->data, axes, sizeof axes);
    assert_int_equal(run_node(b_node("Squeeze", "x0,x1", "y"), 13, in, 2, &y, &err),
                     TILEOPT_INVALID);
    free_all(in, 2);
    b_free_all();
}

static void ops_shape_should_take_shape_start_end_and_size(void **state) {
    (void)state;
    int64_t xd[4] = {2, 3, 4, 5};
    tensor *in[1] = {b_make(DT_UINT8, 4, xd, NULL)};
    Onnx__NodeProto *n = b_node("Shape", "x0", "y");
    b_attr_int(n, "start", -3);
    b_attr_int(n, "end", 3);
    tensor *y = NULL;
    errbuf err = {0};
    assert_int_equal(run_node(n, 15, in, 1, &y, &err), 0);
    assert_int_equal(y->dims[0], 2);
    assert_int_equal(i64(y)[0], 3);
    assert_int_equal(i64(y)[1], 4);
    tensor_free(y);
    assert_int_equal(run_node(b_node("Size", "x0", "y"), 13, in, 1, &y, &err), 0);
    assert_int_equal(y->rank, 0);
    assert_int_equal(i64(y)[0], 120);
    tensor_free(y);
    free_all(in, 1);
    b_free_all();
}

static void ops_shape_should_make_range_expand_and_constant_of_shape(void **state) {
    (void)state;
    int64_t s = 10, l = 1, dl = -3;
    tensor *in[3] = {b_make(DT_INT64, 0, NULL, &s), b_make(DT_INT64, 0, NULL, &l),
                     b_make(DT_INT64, 0, NULL, &dl)};
    tensor *y = NULL;
    errbuf err = {0};
    assert_int_equal(run_node(b_node("Range", "x0,x1,x2", "y"), 11, in, 3, &y, &err), 0);
    int64_t exp[3] = {10, 7, 4};
    assert_int_equal(y->dims[0], 3);
    assert_memory_equal(y->data, exp, sizeof exp);
    tensor_free(y);
    free_all(in, 3);
    /* Expand broadcasts both ways: [3,1] with [2,1,4] -> [2,3,4] */
    int64_t xd[2] = {3, 1}, sd[1] = {3}, shape[3] = {2, 1, 4};
    float x[3] = {1, 2, 3};
    tensor *e[2] = {b_make(DT_FLOAT, 2, xd, x), b_make(DT_INT64, 1, sd, shape)};
    assert_int_equal(run_node(b_node("Expand", "x0,x1", "y"), 13, e, 2, &y, &err), 0);
    int64_t want[3] = {2, 3, 4};
    assert_dims(y, 3, want);
    assert_true(f32(y)[23] == 3.0f && f32(y)[4] == 2.0f);
    tensor_free(y);
    /* ConstantOfShape with an int32 value */
    Onnx__NodeProto *n = b_node("ConstantOfShape", "x0", "y");
    int32_t seven = 7;
    int64_t one = 1;
    b_attr_tensor(n, "value", b_tensor("v", DT_INT32, 1, &one, &seven, 4));
    tensor *c[1] = {e[1]};
    assert_int_equal(run_node(n, 13, c, 1, &y, &err), 0);
    assert_int_equal(y->elem, DT_INT32);
    assert_int_equal(tensor_numel(y), 8);
    assert_int_equal(((int32_t *)(void *)y->data)[7], 7);
    tensor_free(y);
    free_all(e, 2);
    b_free_all();
}

static void ops_shape_should_reduce_by_opset_form(void **state) {
    (void)state;
    int64_t xd[2] = {2, 3}, ad[1] = {1}, axes[1] = {1};
    float x[6] = {1, 2, 3, 4, 5, 6};
    tensor *in[2] = {b_make(DT_FLOAT, 2, xd, x), b_make(DT_INT64, 1, ad, axes)};
    tensor *y = NULL;
    errbuf err = {0};
    Onnx__NodeProto *n = b_node("ReduceSum", "x0,x1", "y");
    b_attr_int(n, "keepdims", 0);
    assert_int_equal(run_node(n, 13, in, 2, &y, &err), 0);
    assert_int_equal(y->rank, 1);
    assert_true(f32(y)[0] == 6.0f && f32(y)[1] == 15.0f);
    tensor_free(y);
    /* ReduceProd before opset 18 takes axes as an attribute; all axes by default */
    assert_int_equal(run_node(b_node("ReduceProd", "x0", "y"), 13, in, 1, &y, &err), 0);
    int64_t w[2] = {1, 1};
    assert_dims(y, 2, w);
    assert_true(f32(y)[0] == 720.0f);
    tensor_free(y);
    /* noop_with_empty_axes */
    n = b_node("ReduceSum", "x0", "y");
    b_attr_int(n, "noop_with_empty_axes", 1);
    assert_int_equal(run_node(n, 13, in, 1, &y, &err), 0);
    assert_dims(y, 2, xd);
    tensor_free(y);
    free_all(in, 2);
    b_free_all();
}

static void ops_shape_should_reduce_every_kind_over_ints_floats_and_nan(void **state) {
    (void)state;
    int64_t xd[2] = {2, 3};
    int8_t xi[6] = {-128, 5, 7, -3, 2, 1};
    tensor *in[1] = {b_make(DT_INT8, 2, xd, xi)};
    tensor *y = NULL;
    errbuf err = {0};
    int64_t ax[1] = {1};
    Onnx__NodeProto *n = b_node("ReduceMax", "x0", "y");
    b_attr_ints(n, "axes", ax, 1);
    assert_int_equal(run_node(n, 13, in, 1, &y, &err), 0);
    int8_t wmax[2] = {7, 2};
    assert_memory_equal(y->data, wmax, 2);
    tensor_free(y);
    n = b_node("ReduceMin", "x0", "y");
    b_attr_int(n, "keepdims", 0);
    assert_int_equal(run_node(n, 13, in, 1, &y, &err), 0);
    assert_int_equal(y->rank, 0);
    assert_int_equal(((int8_t *)(void *)y->data)[0], -128);
    tensor_free(y);
    n = b_node("ReduceMean", "x0", "y");
    b_attr_ints(n, "axes", ax, 1);
    assert_int_equal(run_node(n, 13, in, 1, &y, &err), 0);
    int8_t wmean[2] = {-38, 0}; /* (-116)/3 and 0/3, truncated */
    assert_memory_equal(y->data, wmean, 2);
    tensor_free(y);
    tensor_free(in[0]);
    float xf[3] = {1.0f, NAN, 3.0f};
    int64_t fd[1] = {3};
    in[0] = b_make(DT_FLOAT, 1, fd, xf);
    assert_int_equal(run_node(b_node("ReduceMax", "x0", "y"), 13, in, 1, &y, &err), 0);
    assert_true(isnan(f32(y)[0]));
    tensor_free(y);
    tensor_free(in[0]);
    /* L2 of integers goes through floating point: sqrt(3^2 + 4^2) */
    int32_t xi2[2] = {3, -4};
    int64_t d2[1] = {2};
    in[0] = b_make(DT_INT32, 1, d2, xi2);
    assert_int_equal(run_node(b_node("ReduceL2", "x0", "y"), 13, in, 1, &y, &err), 0);
    assert_int_equal(((int32_t *)(void *)y->data)[0], 5);
    tensor_free(y);
    assert_int_equal(run_node(b_node("ReduceL1", "x0", "y"), 13, in, 1, &y, &err), 0);
    assert_int_equal(((int32_t *)(void *)y->data)[0], 7);
    tensor_free(y);
    tensor_free(in[0]);
    float xf2[2] = {0.0f, 0.0f};
    in[0] = b_make(DT_FLOAT, 1, d2, xf2);
    assert_int_equal(run_node(b_node("ReduceLogSumExp", "x0", "y"), 13, in, 1, &y, &err), 0);
    assert_true(fabsf(f32(y)[0] - logf(2.0f)) < 1e-6f);
    tensor_free(y);
    tensor_free(in[0]);
    b_free_all();
}

static void ops_shape_should_reject_missing_input(void **state) {
    (void)state;
    int64_t xd[1] = {2};
    tensor *in[1] = {b_make(DT_FLOAT, 1, xd, NULL)};
    tensor *y = NULL;
    errbuf err = {0};
    assert_int_equal(run_node(b_node("Reshape", "x0", "y"), 13, in, 1, &y, &err),
                     TILEOPT_INVALID);
    assert_non_null(strstr(err.msg, "Reshape"));
    assert_non_null(strstr(err.msg, "needs 2 inputs"));
    free_all(in, 1);
    b_free_all();
}

static void ops_shape_should_build_constants_from_every_attribute_form(void **state) {
    (void)state;
    tensor *y = NULL;
    errbuf err = {0};
    Onnx__NodeProto *n = b_node("Constant", "", "y");
    int64_t v[3] = {5, -1, 7};
    b_attr_ints(n, "value_ints", v, 3);
    assert_int_equal(run_node(n, 13, NULL, 0, &y, &err), 0);
    assert_int_equal(y->elem, DT_INT64);
    assert_memory_equal(y->data, v, sizeof v);
    tensor_free(y);
    n = b_node("Constant", "", "y");
    Onnx__AttributeProto *a = b_attr(n, "value_strings");
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    a->n_strings = 2;
    a->strings = b_alloc(2 * sizeof *a->strings);
    a->strings[0] = (ProtobufCBinaryData){2, (uint8_t *)b_str("hi")};
    a->strings[1] = (ProtobufCBinaryData){0, NULL};
    assert_int_equal(run_node(n, 13, NULL, 0, &y, &err), 0);
    assert_int_equal(y->elem, DT_STRING);
    assert_int_equal(y->dims[0], 2);
    assert_memory_equal(((const graph_bytes *)(const void *)y->data)[0].data, "hi", 2);
    tensor_free(y);
    n = b_node("Constant", "", "y");
    a = b_attr(n, "value_float");
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    a->has_f = 1;
    a->f = 2.5f;
    assert_int_equal(run_node(n, 13, NULL, 0, &y, &err), 0);
    assert_int_equal(y->rank, 0);
    assert_true(f32(y)[0] == 2.5f);
    tensor_free(y);
    /* two value attributes */
    b_attr_int(n, "value_int", 1);
    assert_int_equal(run_node(n, 13, NULL, 0, &y, &err), TILEOPT_INVALID);
    b_free_all();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ops_shape_should_gather_with_negative_indices),
        cmocka_unit_test(ops_shape_should_reject_gather_index_out_of_range),
        cmocka_unit_test(ops_shape_should_reshape_with_zero_and_minus_one),
        cmocka_unit_test(ops_shape_should_reject_reshape_size_mismatch),
        cmocka_unit_test(ops_shape_should_slice_with_negative_steps_and_clamping),
        cmocka_unit_test(ops_shape_should_concat_and_transpose_strings),
        cmocka_unit_test(ops_shape_should_squeeze_and_unsqueeze_by_opset),
        cmocka_unit_test(ops_shape_should_take_shape_start_end_and_size),
        cmocka_unit_test(ops_shape_should_make_range_expand_and_constant_of_shape),
        cmocka_unit_test(ops_shape_should_reduce_by_opset_form),
        cmocka_unit_test(ops_shape_should_reduce_every_kind_over_ints_floats_and_nan),
        cmocka_unit_test(ops_shape_should_reject_missing_input),
        cmocka_unit_test(ops_shape_should_build_constants_from_every_attribute_form),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

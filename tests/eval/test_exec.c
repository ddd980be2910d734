/* Unit tests of graph execution (eval/exec.c): order, freeing, limits, If,
** Loop, unsupported ops and bad models. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "builder.h"

static int run(graph_model *m, tensor **in, size_t n_in, tensor ***outs, size_t *no,
               const eval_env *lim, errbuf *err) {
    return eval_graph(m, in, n_in, outs, no, lim, err);
}

static void free_outs(tensor **o, size_t n) {
    for (size_t i = 0; i < n; i++) tensor_free(o[i]);
    free(o);
}

static void exec_should_report_unsupported_op_with_node_name(void **state) {
    (void)state;
    Onnx__GraphProto *g = b_graph_new("g");
    int64_t d[1] = {2};
    b_input(g, b_value("x", DT_FLOAT, 1, d));
    Onnx__NodeProto *n = b_add(g, b_node("FooBar", "x", "y"));
    n->name = b_str("the_node");
    b_output(g, b_value("y", DT_FLOAT, 1, d));
    graph_model *m = NULL;
    errbuf err = {0};
    assert_int_equal(b_load(g, 13, &m, &err), 0);
    tensor *x = b_make(DT_FLOAT, 1, d, NULL), **o = NULL;
    size_t no = 0;
    assert_int_equal(run(m, &x, 1, &o, &no, NULL, &err), TILEOPT_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "FooBar"));
    assert_non_null(strstr(err.msg, "the_node"));
    assert_null(o);
    char buf[256];
    assert_int_equal(eval_missing_ops(m, buf, sizeof buf), 1);
    assert_string_equal(buf, "FooBar");
    tensor_free(x);
    graph_model_free(m);
    b_free_all();
}

static graph_model *concat_model(errbuf *err) {
    Onnx__GraphProto *g = b_graph_new("g");
    int64_t d[1] = {2}, d2[1] = {4};
    b_input(g, b_value("x", DT_FLOAT, 1, d));
    Onnx__NodeProto *n = b_add(g, b_node("Concat", "x,x", "y"));
    b_attr_int(n, "axis", 0);
    b_output(g, b_value("y", DT_FLOAT, 1, d2));
    graph_model *m = NULL;
    assert_int_equal(b_load(g, 13, &m, err), 0);
    return m;
}

static void exec_should_reject_wrong_input_count_and_type(void **state) {
    (void)state;
    errbuf err = {0};
    graph_model *m = concat_model(&err);
    int64_t d[1] = {2};
    tensor *x[2] = {b_make(DT_FLOAT, 1, d, NULL), b_make(DT_FLOAT, 1, d, NULL)}, **o = NULL;
    size_t no = 0;
    assert_int_equal(run(m, x, 2, &o, &no, NULL, &err), TILEOPT_INVALID);
    assert_non_null(strstr(err.msg, "takes 1 inputs, got 2"));
    assert_int_equal(run(m, x, 0, &o, &no, NULL, &err), TILEOPT_INVALID);
    tensor *i = b_make(DT_INT64, 1, d, NULL);
    assert_int_equal(run(m, &i, 1, &o, &no, NULL, &err), TILEOPT_INVALID);
    assert_non_null(strstr(err.msg, "INT64"));
    assert_int_equal(run(m, x, 1, &o, &no, NULL, &err), 0);
    assert_int_equal(no, 1);
    assert_int_equal(o[0]->dims[0], 4);
    free_outs(o, no);
    tensor_free(i);
    tensor_free(x[0]);
    tensor_free(x[1]);
    graph_model_free(m);
    b_free_all();
}

static void exec_should_free_intermediates_after_last_use(void **state) {
    (void)state;
    /* x -> T -> T -> T -> T -> y, each 400 kB: about 800 kB live at any time
    ** when every intermediate goes after its last use, 2 MB if none did. */
    Onnx__GraphProto *g = b_graph_new("g");
    int64_t d[1] = {100000};
    b_input(g, b_value("x", DT_FLOAT, 1, d));
    b_add(g, b_node("Transpose", "x", "t1"));
    b_add(g, b_node("Transpose", "t1", "t2"));
    b_add(g, b_node("Transpose", "t2", "t3"));
    b_add(g, b_node("Transpose", "t3", "y"));
    b_output(g, b_value("y", DT_FLOAT, 1, d));
    graph_model *m = NULL;
    errbuf err = {0};
    assert_int_equal(b_load(g, 13, &m, &err), 0);
    tensor *x = b_make(DT_FLOAT, 1, d, NULL), **o = NULL;
    size_t no = 0;
    eval_env lim;
    eval_env_default(&lim);
    lim.lim.max_eval_bytes = 1000000;
    assert_int_equal(run(m, &x, 1, &o, &no, &lim, &err), 0);
    free_outs(o, no);
    /* and the limit does bite */
    lim.lim.max_eval_bytes = 700000;
    assert_int_equal(run(m, &x, 1, &o, &no, &lim, &err), TILEOPT_LIMIT);
    assert_non_null(strstr(err.msg, "limit"));
    tensor_free(x);
    graph_model_free(m);
    b_free_all();
}

static void exec_should_reject_data_length_not_matching_shape(void **state) {
    (void)state;
    Onnx__GraphProto *g = b_graph_new("g");
    int64_t d[1] = {3};
    float w[2] = {1, 2};
    b_init(g, b_tensor("w", DT_FLOAT, 1, d, w, sizeof w)); /* 8 bytes for 3 floats */
    b_add(g, b_node("Transpose", "w", "y"));
    b_output(g, b_value("y", DT_FLOAT, 1, d));
    graph_model *m = NULL;
    errbuf err = {0};
    int rc = b_load(g, 13, &m, &err);
    if (rc == 0) {
        tensor **o = NULL;
        size_t no = 0;
        rc = run(m, NULL, 0, &o, &no, NULL, &err);
        assert_null(o);
    }
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(err.msg, "'w'"));
    graph_model_free(m);
    b_free_all();
}

static void exec_should_run_if_reading_outer_scope(void **state) {
    (void)state;
    int64_t d[1] = {2}, d4[1] = {4}, d6[1] = {6};
    Onnx__GraphProto *then_g = b_graph_new("then");
    Onnx__NodeProto *tn = b_add(then_g, b_node("Concat", "x,x", "t"));
    b_attr_int(tn, "axis", 0);
    b_output(then_g, b_value("t", DT_FLOAT, 1, d4));
    Onnx__GraphProto *else_g = b_graph_new("else");
    Onnx__NodeProto *en = b_add(else_g, b_node("Concat", "x,x,x", "e"));
    b_attr_int(en, "axis", 0);
    b_output(else_g, b_value("e", DT_FLOAT, 1, d6));

    Onnx__GraphProto *g = b_graph_new("g");
    b_input(g, b_value("c", DT_BOOL, 0, NULL));
    b_input(g, b_value("x0", DT_FLOAT, 1, d));
    b_add(g, b_node("Transpose", "x0", "x")); /* an intermediate the branches read */
    Onnx__NodeProto *n = b_add(g, b_node("If", "c", "y"));
    b_attr_graph(n, "then_branch", then_g);
    b_attr_graph(n, "else_branch", else_g);
    b_output(g, b_value("y", DT_FLOAT, 1, NULL));
    graph_model *m = NULL;
    errbuf err = {0};
    assert_int_equal(b_load(g, 13, &m, &err), 0);
    uint8_t t = 1, f = 0;
    float xv[2] = {1, 2};
    tensor *in[2] = {b_make(DT_BOOL, 0, NULL, &t), b_make(DT_FLOAT, 1, d, xv)}, **o = NULL;
    size_t no = 0;
    assert_int_equal(run(m, in, 2, &o, &no, NULL, &err), 0);
    assert_int_equal(o[0]->dims[0], 4);
    assert_true(((float *)(void *)o[0]->data)[3] == 2.0f);
    free_outs(o, no);
    memcpy(in[0]->data, &f, 1);
    assert_int_equal(run(m, in, 2, &o, &no, NULL, &err), 0);
    assert_int_equal(o[0]->dims[0], 6);
    free_outs(o, no);
    /* a cond that is not a single bool */
    tensor *bad[2] = {b_make(DT_FLOAT, 1, d, NULL), in[1]};
    assert_int_equal(run(m, bad, 2, &o, &no, NULL, &err), TILEOPT_INVALID);
    tensor_free(bad[0]);
    /* eval_node without a frame: the branch reads a non-constant outer value */
    tensor *ni[1] = {in[0]}, *no1[1] = {NULL};
    int32_t if_node = 1;
    assert_int_not_equal(eval_node(m->main, if_node, ni, 1, no1, 1, NULL, NULL, &err), 0);
    assert_null(no1[0]);
    tensor_free(in[0]);
    tensor_free(in[1]);
    graph_model_free(m);
    b_free_all();
}

static void exec_should_run_loop_with_scan_outputs(void **state) {
    (void)state;
    int64_t d1[1] = {1};
    /* body(i, cond, v): v' = Concat-free arithmetic: v + i; scan = v' */
    Onnx__GraphProto *body = b_graph_new("body");
    b_input(body, b_value("i", DT_INT64, 0, NULL));
    b_input(body, b_value("cin", DT_BOOL, 0, NULL));
    b_input(body, b_value("v", DT_INT64, 1, d1));
    b_add(body, b_node("Identity", "cin", "cout"));
    b_add(body, b_node("Add", "v,i", "v2"));
    b_add(body, b_node("Identity", "v2", "s"));
    b_output(body, b_value("cout", DT_BOOL, 0, NULL));
    b_output(body, b_value("v2", DT_INT64, 1, d1));
    b_output(body, b_value("s", DT_INT64, 1, d1));

    Onnx__GraphProto *g = b_graph_new("g");
    b_input(g, b_value("M", DT_INT64, 0, NULL));
    b_input(g, b_value("v0", DT_INT64, 1, d1));
    Onnx__NodeProto *n = b_add(g, b_node("Loop", "M,,v0", "vf,scan"));
    b_attr_graph(n, "body", body);
    b_output(g, b_value("vf", DT_INT64, 1, d1));
    b_output(g, b_value("scan", DT_INT64, 2, NULL));
    graph_model *m = NULL;
    errbuf err = {0};
    assert_int_equal(b_load(g, 13, &m, &err), 0);
    int64_t trips = 4, v0 = 10;
    tensor *in[2] = {b_make(DT_INT64, 0, NULL, &trips), b_make(DT_INT64, 1, d1, &v0)};
    tensor **o = NULL;
    size_t no = 0;
    assert_int_equal(run(m, in, 2, &o, &no, NULL, &err), 0);
    assert_int_equal(no, 2);
    assert_int_equal(((int64_t *)(void *)o[0]->data)[0], 16); /* 10+0+1+2+3 */
    assert_int_equal(o[1]->rank, 2);
    assert_int_equal(o[1]->dims[0], 4);
    assert_int_equal(o[1]->dims[1], 1);
    int64_t exp[4] = {10, 11, 13, 16};
    assert_memory_equal(o[1]->data, exp, sizeof exp);
    free_outs(o, no);
    /* zero trips: outputs are the initial values and an empty scan */
    trips = 0;
    memcpy(in[0]->data, &trips, sizeof trips);
    assert_int_equal(run(m, in, 2, &o, &no, NULL, &err), 0);
    assert_int_equal(((int64_t *)(void *)o[0]->data)[0], 10);
    assert_int_equal(o[1]->dims[0], 0);
    free_outs(o, no);
    tensor_free(in[0]);
    tensor_free(in[1]);
    graph_model_free(m);
    b_free_all();
}

static void exec_should_list_missing_ops_in_subgraphs(void **state) {
    (void)state;
    Onnx__GraphProto *then_g = b_graph_new("then");
    b_add(then_g, b_node("Bazz", "x", "t"));
    b_output(then_g, b_value("t", DT_FLOAT, -1, NULL));
    Onnx__GraphProto *else_g = b_graph_new("else");
    b_add(else_g, b_node("FooBar", "x", "e"));
    b_output(else_g, b_value("e", DT_FLOAT, -1, NULL));
    Onnx__GraphProto *g = b_graph_new("g");
    b_input(g, b_value("c", DT_BOOL, 0, NULL));
    b_input(g, b_value("x", DT_FLOAT, -1, NULL));
    b_add(g, b_node("FooBar", "x", "z"));
    Onnx__NodeProto *n = b_add(g, b_node("If", "c", "y"));
    b_attr_graph(n, "then_branch", then_g);
    b_attr_graph(n, "else_branch", else_g);
    b_output(g, b_value("y", DT_FLOAT, -1, NULL));
    b_output(g, b_value("z", DT_FLOAT, -1, NULL));
    graph_model *m = NULL;
    errbuf err = {0};
    assert_int_equal(b_load(g, 13, &m, &err), 0);
    char buf[64];
    assert_int_equal(eval_missing_ops(m, buf, sizeof buf), 2);
    assert_string_equal(buf, "FooBar,Bazz");
    assert_true(eval_supports("If", 13));
    assert_true(eval_supports("Reshape", 4));
    assert_true(eval_supports("Tile", 13));
    assert_false(eval_supports("Range", 10));
    assert_false(eval_supports("Bazz", 13));
    graph_model_free(m);
    b_free_all();
}

static void exec_should_detach_outputs_from_the_model(void **state) {
    (void)state;
    Onnx__GraphProto *g = b_graph_new("g");
    int64_t d[1] = {2};
    int64_t w[2] = {4, 5};
    b_init(g, b_tensor("w", DT_INT64, 1, d, w, sizeof w));
    b_add(g, b_node("Identity", "w", "y"));
    Onnx__NodeProto *c = b_add(g, b_node("Constant", "", "s"));
    Onnx__AttributeProto *a = b_attr(c, "value_strings");
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    a->n_strings = 1;
    a->strings = b_alloc(sizeof *a->strings);
    a->strings[0] = (ProtobufCBinaryData){5, (uint8_t *)b_str("hello")};
    b_output(g, b_value("y", DT_INT64, 1, d));
    b_output(g, b_value("s", DT_STRING, 1, NULL));
    graph_model *m = NULL;
    errbuf err = {0};
    assert_int_equal(b_load(g, 13, &m, &err), 0);
    tensor **o = NULL, *y = NULL, *s = NULL;
    size_t no = 0;
    assert_int_equal(run(m, NULL, 0, &o, &no, NULL, &err), 0);
    assert_int_equal(tensor_detach(o[0], NULL, &y, &err), 0);
    assert_int_equal(tensor_detach(o[1], NULL, &s, &err), 0);
    free_outs(o, no);
    graph_model_free(m);
    b_free_all(); /* the model's bytes are gone: the copies must not need them */
    assert_memory_equal(y->data, w, sizeof w);
    const graph_bytes *sb = (const graph_bytes *)(const void *)s->data;
    assert_int_equal(sb[0].len, 5);
    assert_memory_equal(sb[0].data, "hello", 5);
    tensor_free(y);
    tensor_free(s);
}

static void exec_should_compare_like_isclose(void **state) {
    (void)state;
    int64_t d[1] = {4};
    float e[4] = {1.0f, 0.0f, (float)NAN, 1000.0f};
    float a[4] = {1.0005f, 0.0f, (float)NAN, 1001.5f};
    tensor *te = b_make(DT_FLOAT, 1, d, e), *ta = b_make(DT_FLOAT, 1, d, a);
    tensor_diff df;
    errbuf err = {0};
    assert_int_equal(tensor_compare(te, ta, 1e-3, 1e-7, &df, &err), 0);
    assert_true(df.same_shape);
    assert_int_equal(df.n_bad, 1);
    assert_int_equal(df.first_bad, 3);
    assert_string_equal(df.expected, "1000");
    tensor *ti = b_make(DT_INT64, 1, d, NULL);
    assert_int_equal(tensor_compare(te, ti, 1e-3, 1e-7, &df, &err), 0);
    assert_false(df.same_shape);
    tensor_free(te);
    tensor_free(ta);
    tensor_free(ti);
    b_free_all();
}

/* Sequences share their items: a value made of another's items, a handle on
** a sequence, and the values decoded from their own encoding all see the same
** items and compare equal; each frees only what it holds (ASan checks). */
static void exec_should_share_sequence_items_and_round_trip_them(void **state) {
    (void)state;
    int64_t d[1] = {3};
    float a[3] = {1, 2, 3}, b[3] = {4, 5, 6};
    tensor *ta = b_make(DT_FLOAT, 1, d, a), *tb = b_make(DT_FLOAT, 1, d, b), *ti = NULL;
    errbuf err = {0};
    tensor *s = NULL, *s2 = NULL, *opt = NULL;
    assert_int_equal(value_new(EVAL_SEQUENCE, 0, 2, &s, &err), TILEOPT_OK);
    assert_int_equal(value_put(s, 0, ta, &err), TILEOPT_OK);
    assert_int_equal(value_put(s, 1, tb, &err), TILEOPT_OK);
    assert_int_equal(s->elem, DT_FLOAT);
    tensor_free(ta); /* the sequence keeps its own reference */
    int64_t one = 1;
    ti = b_make(DT_INT64, 0, NULL, &one);
    assert_int_equal(value_new(EVAL_SEQUENCE, DT_FLOAT, 1, &s2, &err), TILEOPT_OK);
    assert_int_equal(value_put(s2, 0, ti, &err), TILEOPT_INVALID);
    value_share(s2, 0, s, 1);
    assert_ptr_equal(s2->items[0], s->items[1]);
    tensor *h = tensor_ref(s);
    tensor_free(s);
    assert_int_equal(value_new(EVAL_OPTIONAL, 0, 1, &opt, &err), TILEOPT_OK);
    assert_int_equal(value_put(opt, 0, h, &err), TILEOPT_OK);
    void *bytes = NULL;
    size_t size = 0;
    assert_int_equal(tensor_encode(opt, "o", &bytes, &size, &err), TILEOPT_OK);
    tensor *back = NULL;
    assert_int_equal(value_decode(bytes, size, EVAL_OPTIONAL, 0, NULL, &back, &err), TILEOPT_OK);
    free(bytes);
    tensor_diff df;
    assert_int_equal(tensor_compare(opt, back, 1e-3, 1e-7, &df, &err), TILEOPT_OK);
    assert_true(df.same_shape);
    assert_int_equal(df.n_bad, 0);
    assert_int_equal(tensor_compare(opt, s2, 1e-3, 1e-7, &df, &err), TILEOPT_OK);
    assert_false(df.same_shape);
    assert_int_equal(tensor_compare(h, s2, 1e-3, 1e-7, &df, &err), TILEOPT_OK);
    assert_false(df.same_shape); /* 2 items against 1 */
    tensor *c = NULL;
    assert_int_equal(tensor_detach(h, NULL, &c, &err), TILEOPT_OK);
    assert_int_equal(c->kind, EVAL_SEQUENCE);
    assert_int_equal(c->n_items, 2);
    assert_memory_equal(c->items[1]->data, b, sizeof b);
    tensor_free(c);
    tensor_free(back);
    tensor_free(opt);
    tensor_free(h);
    assert_memory_equal(s2->items[0]->data, b, sizeof b);
    tensor_free(s2);
    tensor_free(tb);
    tensor_free(ti);
    b_free_all();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(exec_should_report_unsupported_op_with_node_name),
        cmocka_unit_test(exec_should_reject_wrong_input_count_and_type),
        cmocka_unit_test(exec_should_free_intermediates_after_last_use),
        cmocka_unit_test(exec_should_reject_data_length_not_matching_shape),
        cmocka_unit_test(exec_should_run_if_reading_outer_scope),
        cmocka_unit_test(exec_should_run_loop_with_scan_outputs),
        cmocka_unit_test(exec_should_list_missing_ops_in_subgraphs),
        cmocka_unit_test(exec_should_detach_outputs_from_the_model),
        cmocka_unit_test(exec_should_compare_like_isclose),
        cmocka_unit_test(exec_should_share_sequence_items_and_round_trip_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

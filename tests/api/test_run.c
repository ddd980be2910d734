/* Public API around the evaluator (api/tensor.c, api/run.c): tensors (from
** memory and back, compare, format),
** tileopt_model_run, tileopt_tile with OpenVINO promotion, tileopt_model_verify. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "tests/eval/builder.h"
#include "api/ctx.h"
#include "tileopt.h"

/* A public tensor from values, through the serialized form. */
static tileopt_tensor *api_tensor(tileopt_ctx *ctx, int32_t elem, int rank,
                                  const int64_t *dims, const void *data, size_t nbytes) {
    Onnx__TensorProto *p = b_tensor("t", elem, rank, dims, data, nbytes);
    size_t len = onnx__tensor_proto__get_packed_size(p);
    uint8_t *buf = b_alloc(len);
    onnx__tensor_proto__pack(p, buf);
    tileopt_tensor *t = NULL;
    assert_int_equal(tileopt_tensor_load_buffer(ctx, buf, len, &t), TILEOPT_OK);
    return t;
}

static void check_tile(tileopt_ctx *ctx, const int64_t *xd, int xr, const int64_t *rep,
                       size_t nr, const int64_t *want, size_t wr) {
    uint64_t n = 1;
    for (int i = 0; i < xr; i++) n *= (uint64_t)xd[i];
    int32_t *v = b_alloc(n * sizeof *v);
    for (uint64_t i = 0; i < n; i++) v[i] = (int32_t)i;
    tileopt_tensor *x = api_tensor(ctx, DT_INT32, xr, xd, v, n * sizeof *v), *y = NULL;
    assert_int_equal(tileopt_tile(ctx, x, rep, nr, &y), TILEOPT_OK);
    assert_int_equal(tileopt_tensor_rank(y), wr);
    assert_memory_equal(tileopt_tensor_dims(y), want, wr * sizeof *want);
    /* the last element of the output is the last element of the input */
    const int32_t *yv = (const int32_t *)(const void *)y->t->data;
    assert_int_equal(yv[tensor_numel(y->t) - 1], (int32_t)(n - 1));
    /* the first row of the innermost axis repeats the input's first row */
    int64_t inner = xd[xr - 1];
    for (int64_t i = 0; i < want[wr - 1]; i++) assert_int_equal(yv[i], (int32_t)(i % inner));
    tileopt_tensor_free(x);
    tileopt_tensor_free(y);
}

static void api_should_tile_with_openvino_promotion(void **state) {
    (void)state;
    tileopt_ctx *ctx = NULL;
    assert_int_equal(tileopt_ctx_new(&ctx), TILEOPT_OK);
    /* OpenVINO Tile-1 specification examples */
    int64_t d1[3] = {2, 3, 4}, r1[3] = {1, 2, 3}, w1[3] = {2, 6, 12};
    check_tile(ctx, d1, 3, r1, 3, w1, 3);
    int64_t r2[4] = {5, 1, 2, 3}, w2[4] = {5, 2, 6, 12};
    check_tile(ctx, d1, 3, r2, 4, w2, 4);
    int64_t d3[4] = {5, 2, 3, 4}, r3[3] = {1, 2, 3}, w3[4] = {5, 2, 6, 12};
    check_tile(ctx, d3, 4, r3, 3, w3, 4);
    /* negative repeats are still errors */
    int32_t v[2] = {1, 2};
    int64_t dd[1] = {2}, neg[1] = {-1};
    tileopt_tensor *x = api_tensor(ctx, DT_INT32, 1, dd, v, sizeof v), *y = NULL;
    assert_int_not_equal(tileopt_tile(ctx, x, neg, 1, &y), TILEOPT_OK);
    assert_null(y);
    assert_true(strlen(tileopt_ctx_errmsg(ctx)) > 0);
    tileopt_tensor_free(x);
    tileopt_ctx_free(ctx);
    b_free_all();
}

static void api_should_save_and_load_tensor_files(void **state) {
    (void)state;
    tileopt_ctx *ctx = NULL;
    assert_int_equal(tileopt_ctx_new(&ctx), TILEOPT_OK);
    double v[3] = {1.5, -2, 3};
    int64_t d[1] = {3};
    tileopt_tensor *t = api_tensor(ctx, DT_DOUBLE, 1, d, v, sizeof v), *u = NULL;
    char path[] = "/tmp/tileopt_api_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(tileopt_tensor_save(ctx, t, path), TILEOPT_OK);
    assert_int_equal(tileopt_tensor_load(ctx, path, &u), TILEOPT_OK);
    assert_int_equal(tileopt_tensor_dtype(u), DT_DOUBLE);
    assert_string_equal(tileopt_tensor_name(u), "t");
    assert_memory_equal(u->t->data, v, sizeof v);
    unlink(path);
    tileopt_tensor_free(u);
    u = NULL;
    assert_int_equal(tileopt_tensor_load(ctx, path, &u), TILEOPT_IO);
    assert_null(u);
    assert_non_null(strstr(tileopt_ctx_errmsg(ctx), path));
    /* data length not matching the shape */
    Onnx__TensorProto *p = b_tensor("bad", DT_FLOAT, 1, d, v, 8);
    size_t len = onnx__tensor_proto__get_packed_size(p);
    uint8_t *buf = b_alloc(len);
    onnx__tensor_proto__pack(p, buf);
    assert_int_equal(tileopt_tensor_load_buffer(ctx, buf, len, &u), TILEOPT_INVALID);
    assert_null(u);
    tileopt_tensor_free(t);
    tileopt_ctx_free(ctx);
    b_free_all();
}

/* y = op(x) over x FLOAT [N, 2] (N symbolic) */
static tileopt_model *unary_model(tileopt_ctx *ctx, const char *op) {
    Onnx__GraphProto *g = b_graph_new("g");
    int64_t d[2] = {-1, 2};
    b_input(g, b_value("x", DT_FLOAT, 2, d));
    /* "domain:op" places the node outside the default domain */
    const char *colon = strchr(op, ':');
    Onnx__NodeProto *n = b_add(g, b_node(colon ? colon + 1 : op, "x", "y"));
    if (colon) {
        char domain[64];
        snprintf(domain, sizeof domain, "%.*s", (int)(colon - op), op);
        n->domain = b_str(domain);
    }
    if (strcmp(op, "Transpose") == 0) {
        int64_t perm[2] = {0, 1};
        b_attr_ints(n, "perm", perm, 2);
    }
    b_output(g, b_value("y", DT_FLOAT, -1, NULL));
    size_t len;
    uint8_t *buf = b_pack(g, 13, &len);
    tileopt_model *m = NULL;
    assert_int_equal(tileopt_model_load_buffer(ctx, buf, len, NULL, &m), TILEOPT_OK);
    return m;
}

/* The report as the library prints it, parsed: the test's own tree, freed at
** the next call (NULL only frees it). */
static const cJSON *report_tree(tileopt_ctx *ctx) {
    static cJSON *tree;
    cJSON_Delete(tree);
    tree = NULL;
    if (!ctx) return NULL;
    char *text = NULL;
    tree = tileopt_report_string(ctx, &text) == TILEOPT_OK ? cJSON_Parse(text) : NULL;
    tileopt_free(text);
    return tree;
}

static const cJSON *verify_json(tileopt_ctx *ctx) {
    const cJSON *r = report_tree(ctx);
    assert_non_null(r);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "verify");
    assert_non_null(v);
    return v;
}

static void api_should_verify_match_mismatch_and_skip(void **state) {
    (void)state;
    tileopt_ctx *ctx = NULL;
    assert_int_equal(tileopt_ctx_new(&ctx), TILEOPT_OK);
    tileopt_model *before = unary_model(ctx, "Transpose"); /* identity permutation */
    tileopt_model *same = unary_model(ctx, "Identity");
    tileopt_model *other = unary_model(ctx, "Neg");
    /* every default-domain op up to opset 17 runs: a custom op is what it lacks */
    tileopt_model *lacking = unary_model(ctx, "com.example:Frobnicate");
    assert_int_equal(tileopt_report_begin(ctx, before, "before.onnx"), TILEOPT_OK);

    assert_int_equal(tileopt_model_verify(ctx, before, same), TILEOPT_OK);
    const cJSON *v = verify_json(ctx);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(v, "verdict")), "match");
    const char *why = "unset";
    assert_int_equal(tileopt_report_verdict(ctx, &why), TILEOPT_VERDICT_MATCH);
    assert_null(why);
    const cJSON *in0 = cJSON_GetArrayItem(cJSON_GetObjectItem(v, "inputs"), 0);
    assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(in0, "shape"), 0)->valueint, 2);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(in0, "symbolic"), "N")->valueint, 2);

    assert_int_equal(tileopt_model_verify(ctx, before, other), TILEOPT_MISMATCH);
    v = verify_json(ctx);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(v, "verdict")), "mismatch");
    const cJSON *o0 = cJSON_GetArrayItem(cJSON_GetObjectItem(v, "outputs"), 0);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(o0, "match")));
    assert_true(cJSON_GetObjectItem(o0, "max_abs_diff")->valuedouble > 0);
    assert_non_null(strstr(tileopt_ctx_errmsg(ctx), "'y'"));

    assert_int_equal(tileopt_model_verify(ctx, before, lacking), TILEOPT_OK);
    v = verify_json(ctx);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(v, "verdict")), "skipped");
    assert_int_equal(tileopt_report_verdict(ctx, &why), TILEOPT_VERDICT_SKIPPED);
    assert_string_equal(why, cJSON_GetStringValue(cJSON_GetObjectItem(v, "reason")));
    assert_string_equal(tileopt_verdict_str(TILEOPT_VERDICT_SKIPPED), "skipped");
    const cJSON *ops = cJSON_GetObjectItem(v, "ops");
    assert_int_equal(cJSON_GetArraySize(ops), 1);
    assert_string_equal(cJSON_GetArrayItem(ops, 0)->valuestring, "com.example:Frobnicate");
    /* strict: no verdict is a failure, with the reason; a match still passes */
    assert_int_equal(tileopt_ctx_set(ctx, "verify-strict", "1"), TILEOPT_OK);
    assert_int_equal(tileopt_model_verify(ctx, before, lacking), TILEOPT_UNSUPPORTED);
    assert_non_null(strstr(tileopt_ctx_errmsg(ctx), "Frobnicate"));
    assert_int_equal(tileopt_model_verify(ctx, before, same), TILEOPT_OK);
    assert_int_equal(tileopt_ctx_set(ctx, "verify-strict", "0"), TILEOPT_OK);

    /* the same seed gives the same inputs: the recorded diff repeats */
    assert_int_equal(tileopt_model_verify(ctx, before, other), TILEOPT_MISMATCH);
    double d1 = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(verify_json(ctx),
                                                                           "outputs"), 0),
                                    "max_abs_diff")->valuedouble;
    assert_int_equal(tileopt_model_verify(ctx, before, other), TILEOPT_MISMATCH);
    double d2 = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(verify_json(ctx),
                                                                           "outputs"), 0),
                                    "max_abs_diff")->valuedouble;
    assert_true(d1 == d2);
    report_tree(NULL);
    tileopt_model_free(before);
    tileopt_model_free(same);
    tileopt_model_free(other);
    tileopt_model_free(lacking);
    tileopt_ctx_free(ctx);
    b_free_all();
}

static void api_should_keep_run_outputs_after_the_model_is_freed(void **state) {
    (void)state;
    tileopt_ctx *ctx = NULL;
    assert_int_equal(tileopt_ctx_new(&ctx), TILEOPT_OK);
    Onnx__GraphProto *g = b_graph_new("g");
    int64_t d[1] = {3};
    float w[3] = {1, 2, 3};
    b_init(g, b_tensor("w", DT_FLOAT, 1, d, w, sizeof w));
    b_add(g, b_node("Identity", "w", "y"));
    b_output(g, b_value("y", DT_FLOAT, 1, d));
    size_t len;
    uint8_t *buf = b_pack(g, 13, &len);
    tileopt_model *m = NULL;
    assert_int_equal(tileopt_model_load_buffer(ctx, buf, len, NULL, &m), TILEOPT_OK);
    tileopt_tensor **outs = NULL;
    size_t no = 0;
    assert_int_equal(tileopt_model_run(ctx, m, NULL, 0, &outs, &no), TILEOPT_OK);
    tileopt_model_free(m);
    b_free_all();
    assert_int_equal(no, 1);
    assert_string_equal(tileopt_tensor_name(outs[0]), "y");
    assert_memory_equal(outs[0]->t->data, w, sizeof w);
    tileopt_tensor_free(outs[0]);
    tileopt_free(outs);
    tileopt_ctx_free(ctx);
}

static void api_should_compare_tensors_with_the_verify_tolerances(void **state) {
    (void)state;
    tileopt_ctx *ctx = NULL;
    assert_int_equal(tileopt_ctx_new(&ctx), TILEOPT_OK);
    int64_t d[1] = {3}, d2[2] = {1, 3};
    float a[3] = {1, 2, NAN}, close[3] = {1.0005f, 2, NAN}, far[3] = {1, 2.1f, NAN};
    tileopt_tensor *ta = api_tensor(ctx, DT_FLOAT, 1, d, a, sizeof a);
    tileopt_tensor *tc = api_tensor(ctx, DT_FLOAT, 1, d, close, sizeof close);
    tileopt_tensor *tf = api_tensor(ctx, DT_FLOAT, 1, d, far, sizeof far);
    tileopt_tensor *t2 = api_tensor(ctx, DT_FLOAT, 2, d2, a, sizeof a);
    /* within rtol 1e-3, NaN equal to NaN */
    assert_int_equal(tileopt_tensor_compare(ctx, ta, tc), TILEOPT_OK);
    assert_int_equal(tileopt_tensor_compare(ctx, ta, tf), TILEOPT_MISMATCH);
    assert_non_null(strstr(tileopt_ctx_errmsg(ctx), "1 of 3 values differ; first at index 1"));
    assert_int_equal(tileopt_tensor_compare(ctx, ta, t2), TILEOPT_MISMATCH);
    assert_string_equal(tileopt_ctx_errmsg(ctx), "expected FLOAT [3], got FLOAT [1,3]");
    /* integers exactly */
    int32_t i1[3] = {1, 2, 3}, i2[3] = {1, 2, 4};
    tileopt_tensor *ti1 = api_tensor(ctx, DT_INT32, 1, d, i1, sizeof i1);
    tileopt_tensor *ti2 = api_tensor(ctx, DT_INT32, 1, d, i2, sizeof i2);
    assert_int_equal(tileopt_tensor_compare(ctx, ti1, ti2), TILEOPT_MISMATCH);
    /* bfloat16 stored as UINT16 by ONNX's test data: read as its bits */
    uint16_t bits[3] = {0x3f80, 0x4000, 0x4040}; /* 1, 2, 3 */
    tileopt_tensor *tu = api_tensor(ctx, DT_UINT16, 1, d, bits, sizeof bits);
    tileopt_tensor *tb = api_tensor(ctx, DT_BFLOAT16, 1, d, bits, sizeof bits);
    assert_int_equal(tileopt_tensor_compare(ctx, tu, tb), TILEOPT_OK);
    assert_int_equal(tileopt_tensor_compare(ctx, tb, tu), TILEOPT_MISMATCH);
    assert_int_equal(tileopt_tensor_dtype(tu), DT_UINT16); /* the caller's tensor stays */
    tileopt_tensor *all[] = {ta, tc, tf, t2, ti1, ti2, tu, tb};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tileopt_tensor_free(all[i]);
    tileopt_ctx_free(ctx);
}

static void api_should_format_a_tensor_as_text(void **state) {
    (void)state;
    tileopt_ctx *ctx = NULL;
    assert_int_equal(tileopt_ctx_new(&ctx), TILEOPT_OK);
    int64_t d[2] = {2, 3};
    int64_t v[6] = {1, 2, 3, 4, 5, -6};
    tileopt_tensor *t = api_tensor(ctx, DT_INT64, 2, d, v, sizeof v);
    char *text = NULL;
    assert_int_equal(tileopt_tensor_format(ctx, t, 8, &text), TILEOPT_OK);
    assert_string_equal(text, "INT64 [2,3] = [1, 2, 3, 4, 5, -6]");
    tileopt_free(text);
    assert_int_equal(tileopt_tensor_format(ctx, t, 2, &text), TILEOPT_OK);
    assert_string_equal(text, "INT64 [2,3] = [1, 2, ...]");
    tileopt_free(text);
    assert_int_equal(tileopt_tensor_format(ctx, NULL, 2, &text), TILEOPT_MISUSE);
    assert_null(text);
    tileopt_tensor_free(t);
    tileopt_ctx_free(ctx);
}

static void api_should_bind_uint16_test_data_to_a_bfloat16_input(void **state) {
    (void)state;
    tileopt_ctx *ctx = NULL;
    assert_int_equal(tileopt_ctx_new(&ctx), TILEOPT_OK);
    Onnx__GraphProto *g = b_graph_new("g");
    int64_t d[1] = {2};
    b_input(g, b_value("x", DT_BFLOAT16, 1, d));
    b_add(g, b_node("Identity", "x", "y"));
    b_output(g, b_value("y", DT_BFLOAT16, 1, d));
    size_t len;
    uint8_t *buf = b_pack(g, 13, &len);
    tileopt_model *m = NULL;
    assert_int_equal(tileopt_model_load_buffer(ctx, buf, len, NULL, &m), TILEOPT_OK);
    uint16_t bits[2] = {0x3f80, 0xc000}; /* 1, -2 */
    tileopt_tensor *x = api_tensor(ctx, DT_UINT16, 1, d, bits, sizeof bits);
    tileopt_tensor **outs = NULL;
    size_t no = 0;
    assert_int_equal(tileopt_model_run(ctx, m, &x, 1, &outs, &no), TILEOPT_OK);
    assert_int_equal(no, 1);
    assert_int_equal(tileopt_tensor_dtype(outs[0]), DT_BFLOAT16);
    assert_int_equal(tileopt_tensor_dtype(x), DT_UINT16);
    assert_int_equal(tileopt_tensor_compare(ctx, x, outs[0]), TILEOPT_OK);
    tileopt_tensor_free(outs[0]);
    tileopt_free(outs);
    tileopt_tensor_free(x);
    tileopt_model_free(m);
    b_free_all();
    tileopt_ctx_free(ctx);
}

static void api_should_refuse_to_run_a_node_with_inputs_its_op_does_not_take(void **state) {
    (void)state;
    tileopt_ctx *ctx = NULL;
    assert_int_equal(tileopt_ctx_new(&ctx), TILEOPT_OK);
    Onnx__GraphProto *g = b_graph_new("g");
    int64_t d[1] = {2};
    b_input(g, b_value("x", DT_FLOAT, 1, d));
    b_add(g, b_node("Relu", "x,x", "y"));
    b_output(g, b_value("y", DT_FLOAT, 1, d));
    size_t len;
    uint8_t *buf = b_pack(g, 13, &len);
    tileopt_model *m = NULL;
    assert_int_equal(tileopt_model_load_buffer(ctx, buf, len, NULL, &m), TILEOPT_OK);
    float v[2] = {1, -1};
    tileopt_tensor *x = api_tensor(ctx, DT_FLOAT, 1, d, v, sizeof v);
    tileopt_tensor **outs = NULL;
    size_t no = 0;
    assert_int_equal(tileopt_model_run(ctx, m, &x, 1, &outs, &no), TILEOPT_INVALID);
    assert_non_null(strstr(tileopt_ctx_errmsg(ctx), "Relu takes 1..1 inputs, it has 2"));
    assert_null(outs);
    /* and comparing with a tensor that is not there is a misuse, not a crash */
    assert_int_equal(tileopt_tensor_compare(ctx, x, NULL), TILEOPT_MISUSE);
    tileopt_tensor_free(x);
    tileopt_model_free(m);
    b_free_all();
    tileopt_ctx_free(ctx);
}

static tileopt_model *tile_relu_model(tileopt_ctx *ctx);

static void api_should_run_a_pass_list_and_refuse_unknown_names(void **state) {
    (void)state;
    tileopt_ctx *ctx = NULL;
    assert_int_equal(tileopt_ctx_new(&ctx), TILEOPT_OK);
    tileopt_model *m = tile_relu_model(ctx);
    /* an unknown name is refused before any pass runs */
    const char *bad[] = {"fuse", "nosuch"}, *null_name[] = {NULL};
    assert_int_equal(tileopt_passes_run(ctx, m, bad, 2), TILEOPT_MISUSE);
    assert_non_null(strstr(tileopt_ctx_errmsg(ctx), "unknown pass 'nosuch'"));
    assert_int_equal(tileopt_passes_run(ctx, m, NULL, 1), TILEOPT_MISUSE);
    assert_int_equal(tileopt_passes_run(ctx, m, null_name, 1), TILEOPT_MISUSE);
    /* no names: nothing to do */
    assert_int_equal(tileopt_passes_run(ctx, m, NULL, 0), TILEOPT_OK);
    const char *good[] = {"fold", "fuse"};
    assert_int_equal(tileopt_passes_run(ctx, m, good, 2), TILEOPT_OK);
    tileopt_model_free(m);
    b_free_all();
    tileopt_ctx_free(ctx);
}

/* The tile model above: x [1, 3] tiled [2, 1] into a Relu. */
static tileopt_model *tile_relu_model(tileopt_ctx *ctx) {
    Onnx__GraphProto *g = b_graph_new("g");
    int64_t d[2] = {1, 3}, two[2] = {2, 1}, t[2] = {2, 3};
    b_input(g, b_value("x", DT_FLOAT, 2, d));
    b_init(g, b_tensor("reps", DT_INT64, 1, (int64_t[]){2}, two, sizeof two));
    b_add(g, b_node("Tile", "x,reps", "t"));
    b_add(g, b_node("Relu", "t", "y"));
    b_output(g, b_value("y", DT_FLOAT, 2, t));
    size_t len;
    uint8_t *buf = b_pack(g, 13, &len);
    tileopt_model *m = NULL;
    assert_int_equal(tileopt_model_load_buffer(ctx, buf, len, NULL, &m), TILEOPT_OK);
    return m;
}

/* How many pass entries the report holds. */
static int report_passes(tileopt_ctx *ctx) {
    int n = cJSON_GetArraySize(cJSON_GetObjectItem(report_tree(ctx), "passes"));
    assert_int_equal(n, (int)tileopt_report_pass_count(ctx));
    return n;
}

static void api_should_optimize_with_the_default_pipeline_or_a_list(void **state) {
    (void)state;
    tileopt_ctx *ctx = NULL;
    assert_int_equal(tileopt_ctx_new(&ctx), TILEOPT_OK);
    tileopt_model *m = tile_relu_model(ctx);
    assert_int_equal(tileopt_report_begin(ctx, m, NULL), TILEOPT_OK);
    /* malformed lists are refused before any pass runs */
    const char *bad[] = {"fold,nosuch", ",fold", "fold,", "", "fold,,fuse"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(tileopt_optimize(ctx, m, bad[i]), TILEOPT_MISUSE);
        assert_int_equal(report_passes(ctx), 0);
    }
    assert_int_equal(tileopt_optimize(ctx, m, "none"), TILEOPT_OK);
    assert_int_equal(report_passes(ctx), 0);
    assert_int_equal(tileopt_optimize(ctx, m, "fold"), TILEOPT_OK);
    assert_int_equal(report_passes(ctx), 1);
    /* NULL: every pass, in the default order */
    assert_int_equal(tileopt_optimize(ctx, m, NULL), TILEOPT_OK);
    const cJSON *passes = cJSON_GetObjectItem(report_tree(ctx), "passes");
    for (size_t i = 0; tileopt_pass_name(i); i++) {
        assert_string_equal(
            cJSON_GetObjectItem(cJSON_GetArrayItem(passes, 1 + (int)i), "name")->valuestring,
            tileopt_pass_name(i));
        assert_string_equal(tileopt_report_pass_name(ctx, 1 + i), tileopt_pass_name(i));
    }
    report_tree(NULL);
    tileopt_model_free(m);
    b_free_all();
    tileopt_ctx_free(ctx);
}

/* The accessors say what the report's text says. */
static void api_should_give_the_report_as_accessors_and_string(void **state) {
    (void)state;
    tileopt_ctx *ctx = NULL;
    assert_int_equal(tileopt_ctx_new(&ctx), TILEOPT_OK);
    tileopt_model *m = tile_relu_model(ctx);
    /* nothing to read before a report begins */
    assert_int_equal(tileopt_report_pass_count(ctx), 0);
    assert_false(tileopt_report_has(ctx, TILEOPT_INPUT));
    assert_null(tileopt_report_path(ctx, TILEOPT_INPUT));
    assert_int_equal(tileopt_report_begin(ctx, m, "m.onnx"), TILEOPT_OK);
    assert_int_equal(tileopt_optimize(ctx, m, "fuse"), TILEOPT_OK);
    assert_int_equal(tileopt_report_pass_count(ctx), 1);
    assert_string_equal(tileopt_report_pass_name(ctx, 0), "fuse");
    assert_null(tileopt_report_pass_name(ctx, 1));
    assert_int_equal(tileopt_report_pass_stat(ctx, 0, TILEOPT_PASS_NODES_CHANGED), 1);
    assert_int_equal(tileopt_report_pass_stat(ctx, 0, TILEOPT_PASS_NODES_SKIPPED), 1);
    assert_int_equal(tileopt_report_pass_stat(ctx, 0, TILEOPT_PASS_ROUND), 1);
    assert_int_equal(tileopt_report_pass_stat(ctx, 0, TILEOPT_PASS_CHANGED), 1);
    assert_int_equal(tileopt_report_pass_stat(ctx, 0, TILEOPT_PASS_STAT_COUNT_), 0);
    assert_null(tileopt_report_pass_error(ctx, 0));
    assert_int_equal(tileopt_report_verdict(ctx, NULL), TILEOPT_VERDICT_NONE);
    assert_false(tileopt_report_has(ctx, TILEOPT_OUTPUT));
    assert_int_equal(tileopt_report_model_stat(ctx, TILEOPT_OUTPUT, TILEOPT_MODEL_NODES), 0);
    assert_int_equal(tileopt_report_end(ctx, m, "out.onnx"), TILEOPT_OK);
    assert_string_equal(tileopt_report_path(ctx, TILEOPT_INPUT), "m.onnx");
    assert_string_equal(tileopt_report_path(ctx, TILEOPT_OUTPUT), "out.onnx");

    const cJSON *r = report_tree(ctx);
    const cJSON *entry = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "passes"), 0);
    assert_int_equal(cJSON_GetObjectItem(entry, "nodes_changed")->valueint, 1);
    assert_int_equal(cJSON_GetObjectItem(entry, "nodes_skipped")->valueint, 1);
    const cJSON *actions = cJSON_GetObjectItem(entry, "actions");
    assert_true(cJSON_IsArray(actions));
    const cJSON *a = cJSON_GetArrayItem(actions, 0);
    assert_string_equal(cJSON_GetObjectItem(a, "op")->valuestring, "Relu");
    assert_string_equal(cJSON_GetObjectItem(a, "action")->valuestring, "fused");
    assert_int_equal(cJSON_GetArraySize(actions), 2);
    for (int side = 0; side < 2; side++) {
        const cJSON *s = cJSON_GetObjectItem(r, side ? "output" : "input");
        static const struct { tileopt_model_stat stat; const char *key; } keys[] = {
            {TILEOPT_MODEL_IR_VERSION, "ir_version"},
            {TILEOPT_MODEL_NODES, "nodes"},
            {TILEOPT_MODEL_TILES, "tiles"},
            {TILEOPT_MODEL_INITIALIZER_BYTES, "initializer_bytes"},
            {TILEOPT_MODEL_FILE_BYTES, "file_bytes"},
            {TILEOPT_MODEL_EXTERNAL_DATA_BYTES, "external_data_bytes"},
        };
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            assert_int_equal(tileopt_report_model_stat(ctx, (tileopt_side)side, keys[k].stat),
                             (int64_t)cJSON_GetObjectItem(s, keys[k].key)->valuedouble);
        const cJSON *opsets = cJSON_GetObjectItem(s, "opset_import");
        assert_int_equal(tileopt_report_opset_count(ctx, (tileopt_side)side),
                         (size_t)cJSON_GetArraySize(opsets));
        int64_t version = 0;
        assert_string_equal(tileopt_report_opset(ctx, (tileopt_side)side, 0, &version),
                            cJSON_GetArrayItem(opsets, 0)->child->valuestring);
        assert_int_equal(version, 13);
        assert_int_equal(tileopt_report_model_stat(ctx, (tileopt_side)side, TILEOPT_MODEL_OPSET),
                         13);
        const cJSON *ops = cJSON_GetObjectItem(s, "ops");
        assert_int_equal(tileopt_report_op_count(ctx, (tileopt_side)side),
                         (size_t)cJSON_GetArraySize(ops));
        for (size_t i = 0; i < tileopt_report_op_count(ctx, (tileopt_side)side); i++) {
            uint64_t n = 0;
            const char *op = tileopt_report_op(ctx, (tileopt_side)side, i, &n);
            assert_int_equal(n, (uint64_t)cJSON_GetObjectItem(ops, op)->valuedouble);
        }
    }
    assert_int_equal(tileopt_report_model_stat(ctx, TILEOPT_INPUT, TILEOPT_MODEL_TILES), 1);
    report_tree(NULL);
    tileopt_model_free(m);
    b_free_all();
    tileopt_ctx_free(ctx);
}

static void api_should_build_tensors_from_memory_and_read_them_back(void **state) {
    (void)state;
    tileopt_ctx *ctx = NULL;
    assert_int_equal(tileopt_ctx_new(&ctx), TILEOPT_OK);
    const int64_t dims[] = {2, 3};
    const float v[] = {1, 2, 3, 4, 5, 6};
    tileopt_tensor *x = NULL, *y = NULL;
    /* a byte count that is not the shape's is refused, naming both */
    assert_int_equal(tileopt_tensor_new(ctx, DT_FLOAT, dims, 2, v, 20, &x), TILEOPT_MISUSE);
    assert_null(x);
    assert_non_null(strstr(tileopt_ctx_errmsg(ctx), "takes 24 bytes, not 20"));
    assert_int_equal(tileopt_tensor_new(ctx, DT_STRING, dims, 2, v, 24, &x), TILEOPT_MISUSE);
    assert_int_equal(tileopt_tensor_new(ctx, 999, dims, 2, v, 24, &x), TILEOPT_INVALID);
    const int64_t neg[] = {-1};
    assert_int_equal(tileopt_tensor_new(ctx, DT_FLOAT, neg, 1, v, 0, &x), TILEOPT_INVALID);
    assert_int_equal(tileopt_tensor_new(ctx, DT_FLOAT, dims, 65, v, 24, &x), TILEOPT_LIMIT);

    assert_int_equal(tileopt_tensor_new(ctx, DT_FLOAT, dims, 2, v, sizeof v, &x), TILEOPT_OK);
    /* a Tile result read back row-major */
    const int64_t rep[] = {1, 2};
    assert_int_equal(tileopt_tile(ctx, x, rep, 2, &y), TILEOPT_OK);
    const void *data;
    size_t nbytes;
    assert_int_equal(tileopt_tensor_data(ctx, y, &data, &nbytes), TILEOPT_OK);
    const float want[] = {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6};
    assert_int_equal(nbytes, sizeof want);
    assert_memory_equal(data, want, sizeof want);

    /* bool: any nonzero byte is true, stored as 1 */
    const uint8_t bools[] = {0, 7, 1};
    const int64_t three[] = {3};
    tileopt_tensor *b = NULL;
    assert_int_equal(tileopt_tensor_new(ctx, DT_BOOL, three, 1, bools, 3, &b), TILEOPT_OK);
    assert_int_equal(tileopt_tensor_data(ctx, b, &data, &nbytes), TILEOPT_OK);
    assert_memory_equal(data, ((const uint8_t[]){0, 1, 1}), 3);

    /* strings keep their bytes, NULs included */
    const char *strs[] = {"a", "", "x\0y"};
    const size_t lens[] = {1, 0, 3};
    tileopt_tensor *s = NULL;
    assert_int_equal(tileopt_tensor_new_strings(ctx, three, 1, strs, lens, &s), TILEOPT_OK);
    const char *got;
    size_t len;
    assert_int_equal(tileopt_tensor_string(ctx, s, 2, &got, &len), TILEOPT_OK);
    assert_int_equal(len, 3);
    assert_memory_equal(got, "x\0y", 4);
    assert_int_equal(tileopt_tensor_string(ctx, s, 1, &got, &len), TILEOPT_OK);
    assert_int_equal(len, 0);
    assert_int_equal(tileopt_tensor_string(ctx, s, 3, &got, &len), TILEOPT_MISUSE);
    assert_int_equal(tileopt_tensor_data(ctx, s, &data, &nbytes), TILEOPT_MISUSE);
    assert_int_equal(tileopt_tensor_string(ctx, x, 0, &got, &len), TILEOPT_MISUSE);

    /* a sequence takes one element type; items come back as handles */
    tileopt_tensor *seq = NULL, *opt = NULL, *none = NULL, *item = NULL;
    const tileopt_tensor *items[] = {x, y};
    assert_int_equal(tileopt_tensor_new_sequence(ctx, 0, items, 2, &seq), TILEOPT_OK);
    assert_int_equal(tileopt_tensor_kind(seq), TILEOPT_VALUE_SEQUENCE);
    assert_int_equal(tileopt_tensor_dtype(seq), DT_FLOAT);
    assert_int_equal(tileopt_tensor_items(seq), 2);
    assert_int_equal(tileopt_tensor_item(ctx, seq, 1, &item), TILEOPT_OK);
    assert_int_equal(tileopt_tensor_dims(item)[1], 6);
    tileopt_tensor *past = NULL;
    assert_int_equal(tileopt_tensor_item(ctx, seq, 2, &past), TILEOPT_MISUSE);
    assert_null(past);
    assert_int_equal(tileopt_tensor_data(ctx, seq, &data, &nbytes), TILEOPT_MISUSE);
    tileopt_tensor *mixed = NULL;
    const tileopt_tensor *two_types[] = {x, b};
    assert_int_equal(tileopt_tensor_new_sequence(ctx, 0, two_types, 2, &mixed), TILEOPT_INVALID);
    assert_null(mixed);
    assert_non_null(strstr(tileopt_ctx_errmsg(ctx), "item 1"));
    assert_int_equal(tileopt_tensor_new_optional(ctx, seq, &opt), TILEOPT_OK);
    assert_int_equal(tileopt_tensor_items(opt), 1);
    assert_int_equal(tileopt_tensor_new_optional(ctx, NULL, &none), TILEOPT_OK);
    assert_int_equal(tileopt_tensor_kind(none), TILEOPT_VALUE_OPTIONAL);
    assert_int_equal(tileopt_tensor_items(none), 0);
    assert_int_equal(tileopt_tensor_compare(ctx, opt, opt), TILEOPT_OK);
    assert_int_equal(tileopt_tensor_compare(ctx, opt, none), TILEOPT_MISMATCH);

    tileopt_tensor *all[] = {x, y, b, s, seq, opt, none, item};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) tileopt_tensor_free(all[i]);
    tileopt_ctx_free(ctx);
}

/* Strings a run hands out end in a NUL the length does not count (the header
** says so), and a Tile view of a run's output reads back in full through
** tileopt_tensor_data while the dims handed out before stay valid. */
static void api_should_hand_out_run_strings_with_a_nul_and_views_in_full(void **state) {
    (void)state;
    tileopt_ctx *ctx = NULL;
    assert_int_equal(tileopt_ctx_new(&ctx), TILEOPT_OK);
    Onnx__GraphProto *g = b_graph_new("g");
    int64_t d[1] = {2}, d4[1] = {4}, d1[1] = {1};
    b_input(g, b_value("x", DT_STRING, 1, d));
    b_input(g, b_value("f", DT_FLOAT, 1, d));
    b_add(g, b_node("Tile", "x,r", "y"));
    b_add(g, b_node("Tile", "f,r", "z"));
    b_init(g, b_tensor("r", DT_INT64, 1, d1, (int64_t[]){2}, 8));
    b_output(g, b_value("y", DT_STRING, 1, d4));
    b_output(g, b_value("z", DT_FLOAT, 1, d4));
    size_t len;
    uint8_t *buf = b_pack(g, 13, &len);
    tileopt_model *m = NULL;
    assert_int_equal(tileopt_model_load_buffer(ctx, buf, len, NULL, &m), TILEOPT_OK);
    const char *strs[] = {"ab", "xyz"};
    const size_t lens[] = {2, 3};
    tileopt_tensor *in[2] = {NULL, NULL}, **outs = NULL;
    assert_int_equal(tileopt_tensor_new_strings(ctx, d, 1, strs, lens, &in[0]), TILEOPT_OK);
    assert_int_equal(tileopt_tensor_new(ctx, DT_FLOAT, d, 1, (float[]){1, 2}, 8, &in[1]),
                     TILEOPT_OK);
    size_t no = 0;
    assert_int_equal(tileopt_model_run(ctx, m, in, 2, &outs, &no), TILEOPT_OK);
    tileopt_model_free(m); /* the outputs must not need it */
    for (size_t i = 0; i < 4; i++) {
        const char *s;
        size_t n;
        assert_int_equal(tileopt_tensor_string(ctx, outs[0], i, &s, &n), TILEOPT_OK);
        assert_int_equal(n, lens[i % 2]);
        assert_memory_equal(s, strs[i % 2], n);
        assert_int_equal(s[n], '\0');
    }
    const int64_t *dims = tileopt_tensor_dims(outs[1]);
    const void *data;
    size_t nbytes;
    assert_int_equal(tileopt_tensor_data(ctx, outs[1], &data, &nbytes), TILEOPT_OK);
    assert_int_equal(nbytes, 16);
    assert_memory_equal(data, ((float[]){1, 2, 1, 2}), 16);
    assert_int_equal(dims[0], 4);
    assert_ptr_equal(dims, tileopt_tensor_dims(outs[1]));
    for (size_t i = 0; i < no; i++) tileopt_tensor_free(outs[i]);
    tileopt_free(outs);
    tileopt_tensor_free(in[0]);
    tileopt_tensor_free(in[1]);
    b_free_all();
    tileopt_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(api_should_tile_with_openvino_promotion),
        cmocka_unit_test(api_should_save_and_load_tensor_files),
        cmocka_unit_test(api_should_verify_match_mismatch_and_skip),
        cmocka_unit_test(api_should_keep_run_outputs_after_the_model_is_freed),
        cmocka_unit_test(api_should_compare_tensors_with_the_verify_tolerances),
        cmocka_unit_test(api_should_format_a_tensor_as_text),
        cmocka_unit_test(api_should_bind_uint16_test_data_to_a_bfloat16_input),
        cmocka_unit_test(api_should_refuse_to_run_a_node_with_inputs_its_op_does_not_take),
        cmocka_unit_test(api_should_run_a_pass_list_and_refuse_unknown_names),
        cmocka_unit_test(api_should_optimize_with_the_default_pipeline_or_a_list),
        cmocka_unit_test(api_should_give_the_report_as_accessors_and_string),
        cmocka_unit_test(api_should_build_tensors_from_memory_and_read_them_back),
        cmocka_unit_test(api_should_hand_out_run_strings_with_a_nul_and_views_in_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests of eval/ tensors, views, the Tile kernel and elementwise kernels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "eval/blas.h"
#include "eval/eval_impl.h"

/* ------------------------------------------------------------- helpers */

static tensor *make(int32_t elem, const int64_t *dims, int32_t rank) {
    tensor *t;
    errbuf err;
    assert_int_equal(tensor_new(elem, dims, rank, NULL, &t, &err), TILEOPT_OK);
    return t;
}

static tensor *make_f32(const int64_t *dims, int32_t rank, float base) {
    tensor *t = make(DT_FLOAT, dims, rank);
    float *p = (float *)(void *)t->data;
    for (uint64_t i = 0; i < tensor_numel(t); i++) p[i] = base + (float)i;
    return t;
}

static tensor *make_i64(const int64_t *v, int64_t n) {
    tensor *t = make(DT_INT64, &n, 1);
    memcpy(t->data, v, (size_t)n * 8);
    return t;
}

/* Plain row-major reference of Tile, for any element size. */
static void ref_tile(const uint8_t *x, const int64_t *dims, int rank, const int64_t *rep,
                     size_t esz, uint8_t *out) {
    int64_t odims[TENSOR_MAX_RANK], n = 1;
    for (int i = 0; i < rank; i++) {
        odims[i] = dims[i] * rep[i];
        n *= odims[i];
    }
    for (int64_t o = 0; o < n; o++) {
        int64_t rem = o, src = 0, mul = 1;
        for (int i = rank - 1; i >= 0; i--) {
            int64_t c = rem % odims[i];
            rem /= odims[i];
            src += (c % dims[i]) * mul;
            mul *= dims[i];
        }
        memcpy(out + o * (int64_t)esz, x + src * (int64_t)esz, esz);
    }
}

/* Values of any tensor (view or not) as contiguous bytes, malloc'd. */
static uint8_t *values(tensor *t) {
    tensor *c;
    errbuf err;
    assert_int_equal(tensor_contiguous(t, NULL, &c, &err), TILEOPT_OK);
    size_t n = (size_t)tensor_nbytes(c);
    uint8_t *p = malloc(n ? n : 1);
    memcpy(p, c->data, n);
    tensor_free(c);
    return p;
}

static Onnx__NodeProto node_of(const char *op) {
    Onnx__NodeProto n = ONNX__NODE_PROTO__INIT;
    n.op_type = (char *)op;
    n.name = (char *)"n0";
    return n;
}

static const kernel_def *find_kernel(const char *op) {
    for (size_t i = 0; i < kernel_table_elementwise_count; i++)
        if (!strcmp(op_table[kernel_table_elementwise[i].op].name, op)) return &kernel_table_elementwise[i];
    fail_msg("no kernel %s", op);
    return NULL;
}

static int run_op(const char *op, int64_t opset, Onnx__NodeProto *n, tensor **in, size_t n_in,
                  tensor **out, errbuf *err) {
    return find_kernel(op)->fn(n, opset, in, n_in, out, 1, NULL, err);
}

/* ------------------------------------------------------------------ tile */

static void check_tile_case(int32_t elem, const int64_t *dims, int rank, const int64_t *rep) {
    tensor *x = make(elem, dims, rank);
    size_t esz = tensor_elem_size(x);
    for (size_t i = 0; i < tensor_nbytes(x); i++) x->data[i] = (uint8_t)(i * 7 + 3);
    tensor *y;
    errbuf err;
    assert_int_equal(kernel_tile(x, rep, (size_t)rank, NULL, &y, &err), TILEOPT_OK);
    uint64_t n = tensor_numel(y);
    uint8_t *want = malloc(n * esz + 1);
    ref_tile(x->data, dims, rank, rep, esz, want);
    for (int i = 0; i < rank; i++) assert_int_equal(y->dims[i], dims[i] * rep[i]);
    assert_memory_equal(y->data, want, n * esz);
    /* the engines for other machines too: AVX2 without AVX-512, the baseline */
    tile_axis ax[TENSOR_MAX_RANK];
    for (int i = 0; i < rank; i++) ax[i] = (tile_axis){dims[i], 0, rep[i]};
    for (int i = rank - 1, st = (int)esz; i >= 0; st *= (int)dims[i], i--) ax[i].s = st;
    const int isas[] = {TILE_ISA_AVX2, TILE_ISA_BASE};
    for (size_t k = 0; k < sizeof isas / sizeof *isas; k++) {
        memset(y->data, 0, n * esz);
        tile_engine_isa(isas[k], y->data, x->data, esz, ax, rank);
        assert_memory_equal(y->data, want, n * esz);
    }
    /* the same through the view */
    tensor *v;
    assert_int_equal(view_tile(x, rep, (size_t)rank, NULL, &v, &err), TILEOPT_OK);
    assert_ptr_equal(v->data, x->data);
    uint8_t *got = values(v);
    assert_memory_equal(got, want, n * esz);
    free(got);
    free(want);
    tensor_free(v);
    tensor_free(y);
    tensor_free(x);
}

static void tile_should_match_reference_on_small_shapes(void **state) {
    (void)state;
    const int32_t elems[] = {DT_UINT8, DT_FLOAT16, DT_FLOAT, DT_DOUBLE, DT_COMPLEX128};
    for (size_t e = 0; e < sizeof elems / sizeof *elems; e++) {
        check_tile_case(elems[e], (int64_t[]){3}, 1, (int64_t[]){4});
        check_tile_case(elems[e], (int64_t[]){2, 3}, 2, (int64_t[]){2, 2});
        check_tile_case(elems[e], (int64_t[]){2, 3}, 2, (int64_t[]){1, 5});
        check_tile_case(elems[e], (int64_t[]){2, 3}, 2, (int64_t[]){3, 1});
        check_tile_case(elems[e], (int64_t[]){1, 4, 1}, 3, (int64_t[]){3, 1, 700});
        check_tile_case(elems[e], (int64_t[]){2, 1, 3, 1}, 4, (int64_t[]){2, 3, 1, 2});
        check_tile_case(elems[e], (int64_t[]){5, 7}, 2, (int64_t[]){60, 70});
    }
}

/* The paths for big blocks: chunked copies (few copies of a block of 64 KB or
** more), whole copies (many, or a smaller block), blocks
** written again from a small input, and non-temporal stores past 32 MB. */
static void tile_should_match_reference_on_big_blocks(void **state) {
    (void)state;
    check_tile_case(DT_FLOAT, (int64_t[]){300000}, 1, (int64_t[]){3});
    check_tile_case(DT_FLOAT, (int64_t[]){5000}, 1, (int64_t[]){20});
    check_tile_case(DT_FLOAT, (int64_t[]){5000}, 1, (int64_t[]){3});
    check_tile_case(DT_FLOAT, (int64_t[]){1, 64, 1, 1}, 4, (int64_t[]){3, 1, 40, 40});
    check_tile_case(DT_FLOAT, (int64_t[]){1, 600, 1, 1}, 4, (int64_t[]){4, 1, 60, 60});
    check_tile_case(DT_INT8, (int64_t[]){7, 3}, 2, (int64_t[]){1, 1700000});
    check_tile_case(DT_UINT16, (int64_t[]){3, 1000, 3}, 3, (int64_t[]){2, 3, 3000});
    /* rows of 400 bytes: copied from the input (few copies) or doubled (many) */
    check_tile_case(DT_FLOAT, (int64_t[]){8, 100}, 2, (int64_t[]){3, 5});
    check_tile_case(DT_FLOAT, (int64_t[]){8, 100}, 2, (int64_t[]){2, 20});
    check_tile_case(DT_FLOAT, (int64_t[]){8, 100}, 2, (int64_t[]){2, 50});
}

/* What a progress callback was told: the calls, and whether done only grew. */
typedef struct told {
    int calls;
    uint64_t last, total;
    bool monotonic, named;
} told;

static void tell(void *user, const char *what, uint64_t done, uint64_t total) {
    told *t = user;
    t->monotonic &= t->calls == 0 ? done == 0 : done >= t->last;
    t->named &= strncmp(what, "evaluating ", 11) == 0;
    t->calls++;
    t->last = done;
    t->total = total;
}

/* x tiled by rep (or, with rep NULL, the view v made contiguous) with progress
** asked for: the same bytes as without, and a report from 0 up to the whole. */
static void check_sliced(tensor *x, const int64_t *rep, tensor *v) {
    errbuf err;
    told t = {0, 0, 0, true, true};
    eval_env lim;
    eval_env_default(&lim);
    lim.progress = (graph_progress){tell, &t};
    tensor *plain, *sliced;
    if (rep) {
        assert_int_equal(kernel_tile(x, rep, (size_t)x->rank, NULL, &plain, &err), TILEOPT_OK);
        assert_int_equal(kernel_tile(x, rep, (size_t)x->rank, &lim, &sliced, &err), TILEOPT_OK);
    } else {
        assert_int_equal(tensor_contiguous(v, NULL, &plain, &err), TILEOPT_OK);
        assert_int_equal(tensor_contiguous(v, &lim, &sliced, &err), TILEOPT_OK);
    }
    uint64_t n = tensor_nbytes(plain);
    assert_true(n >= TILE_PROGRESS_BYTES);
    assert_memory_equal(plain->data, sliced->data, n);
    assert_true(t.calls >= 4 && t.monotonic && t.named);
    assert_int_equal(t.last, n);
    assert_int_equal(t.total, n);
    tensor_free(plain);
    tensor_free(sliced);
}

/* A Tile written out with progress goes slice by slice: rows of the first copy
** a few at a time, the other copies in steps, one row bigger than a slice by
** the axes inside it, a broadcast (stride 0) axis row by row; the bytes are
** the engine's own. */
static void tile_should_write_big_outputs_in_slices_when_progress_is_asked(void **state) {
    (void)state;
    tensor *x = make_f32((int64_t[]){70, 1 << 18}, 2, 0.5f); /* 70 MiB */
    check_sliced(x, (int64_t[]){2, 1}, NULL);
    check_sliced(x, (int64_t[]){1, 2}, NULL);
    tensor_free(x);
    x = make_f32((int64_t[]){2, 1 << 23}, 2, 1.0f); /* rows of 32 MiB */
    check_sliced(x, (int64_t[]){1, 2}, NULL);
    check_sliced(x, (int64_t[]){3, 1}, NULL);
    tensor_free(x);
    x = make(DT_UINT8, (int64_t[]){3, 5, 1 << 18}, 3);
    for (uint64_t i = 0; i < tensor_numel(x); i++) x->data[i] = (uint8_t)(i * 7 + i / 255);
    check_sliced(x, (int64_t[]){2, 3, 4}, NULL);
    tensor_free(x);
    x = make_f32((int64_t[]){1, 1 << 16}, 2, 2.0f);
    tensor *v;
    errbuf err;
    assert_int_equal(view_expand(x, (int64_t[]){300, 1 << 16}, 2, &v, &err), TILEOPT_OK);
    check_sliced(NULL, NULL, v);
    tensor_free(v);
    tensor_free(x);
}

/* Rows of 64 bytes to 4 KB repeated in place are stored with their first 1792
** bytes from registers where AVX-512 is: one register, sixteen, all 28, a tail
** that is not a whole one, longer rows with many copies (the rest copied) and
** with few (not this path), and a doubled pattern of 2560 bytes. */
static void tile_should_match_reference_on_rows_stored_from_registers(void **state) {
    (void)state;
    check_tile_case(DT_FLOAT, (int64_t[]){3, 16}, 2, (int64_t[]){2, 5});
    check_tile_case(DT_FLOAT, (int64_t[]){3, 256}, 2, (int64_t[]){1, 3});
    check_tile_case(DT_FLOAT, (int64_t[]){2, 17}, 2, (int64_t[]){1, 4});
    check_tile_case(DT_FLOAT, (int64_t[]){2, 255}, 2, (int64_t[]){3, 2});
    check_tile_case(DT_UINT8, (int64_t[]){3, 65}, 2, (int64_t[]){2, 9});
    check_tile_case(DT_FLOAT, (int64_t[]){64, 64, 3}, 3, (int64_t[]){2, 16, 1});
    check_tile_case(DT_FLOAT, (int64_t[]){3, 448}, 2, (int64_t[]){1, 3});
    check_tile_case(DT_FLOAT, (int64_t[]){300}, 1, (int64_t[]){12});
    check_tile_case(DT_FLOAT, (int64_t[]){460}, 1, (int64_t[]){11});
    check_tile_case(DT_FLOAT, (int64_t[]){333}, 1, (int64_t[]){10});
    check_tile_case(DT_FLOAT, (int64_t[]){1024}, 1, (int64_t[]){9});
    check_tile_case(DT_FLOAT, (int64_t[]){3, 300}, 2, (int64_t[]){2, 4});
    check_tile_case(DT_FLOAT, (int64_t[]){10}, 1, (int64_t[]){100});
}

static void tile_should_give_empty_output_for_zero_repeats_and_dims(void **state) {
    (void)state;
    check_tile_case(DT_FLOAT, (int64_t[]){2, 3}, 2, (int64_t[]){0, 2});
    check_tile_case(DT_FLOAT, (int64_t[]){2, 0}, 2, (int64_t[]){3, 2});
    check_tile_case(DT_INT8, (int64_t[]){0}, 1, (int64_t[]){5});
}

static void tile_should_copy_a_scalar(void **state) {
    (void)state;
    tensor *x = make(DT_INT32, NULL, 0), *y;
    *(int32_t *)(void *)x->data = 42;
    errbuf err;
    assert_int_equal(kernel_tile(x, NULL, 0, NULL, &y, &err), TILEOPT_OK);
    assert_int_equal(y->rank, 0);
    assert_int_equal(*(int32_t *)(void *)y->data, 42);
    tensor_free(x);
    tensor_free(y);
}

static void tile_should_reject_negative_repeats(void **state) {
    (void)state;
    tensor *x = make_f32((int64_t[]){2, 3}, 2, 0), *y = NULL;
    errbuf err;
    assert_int_equal(kernel_tile(x, (int64_t[]){1, -1}, 2, NULL, &y, &err), TILEOPT_INVALID);
    assert_null(y);
    assert_non_null(strstr(err.msg, "negative"));
    assert_int_equal(view_tile(x, (int64_t[]){-2, 1}, 2, NULL, &y, &err), TILEOPT_INVALID);
    tensor_free(x);
}

static void tile_should_reject_wrong_repeats_length(void **state) {
    (void)state;
    tensor *x = make_f32((int64_t[]){2, 3}, 2, 0), *y = NULL;
    errbuf err;
    assert_int_equal(kernel_tile(x, (int64_t[]){2, 2, 2}, 3, NULL, &y, &err), TILEOPT_INVALID);
    assert_non_null(strstr(err.msg, "3 entries"));
    assert_int_equal(view_tile(x, (int64_t[]){2}, 1, NULL, &y, &err), TILEOPT_INVALID);
    tensor_free(x);
}

static void tile_should_reject_output_size_overflow(void **state) {
    (void)state;
    tensor *x = make_f32((int64_t[]){2, 3}, 2, 0), *y = NULL;
    errbuf err;
    int64_t big = INT64_MAX / 2;
    assert_int_equal(kernel_tile(x, (int64_t[]){big, 1}, 2, NULL, &y, &err), TILEOPT_LIMIT);
    assert_int_equal(kernel_tile(x, (int64_t[]){1 << 30, 1 << 30}, 2, NULL, &y, &err),
                     TILEOPT_LIMIT);
    assert_int_equal(view_tile(x, (int64_t[]){big, big}, 2, NULL, &y, &err), TILEOPT_LIMIT);
    /* within int64 but over the tensor byte limit */
    eval_env lim;
    eval_env_default(&lim);
    lim.lim.max_tensor_bytes = 1000;
    assert_int_equal(kernel_tile(x, (int64_t[]){100, 1}, 2, &lim, &y, &err), TILEOPT_LIMIT);
    assert_null(y);
    tensor_free(x);
}

static void tile_should_keep_string_bytes_alive(void **state) {
    (void)state;
    int64_t d = 2;
    tensor *x = make(DT_STRING, &d, 1), *y;
    graph_bytes *s = (graph_bytes *)(void *)x->data;
    const char *words[2] = {"alpha", "be"};
    for (int i = 0; i < 2; i++) {
        uint8_t *p = tbuf_bytes(x->buf, strlen(words[i]));
        memcpy(p, words[i], strlen(words[i]));
        s[i].data = p;
        s[i].len = strlen(words[i]);
    }
    errbuf err;
    assert_int_equal(kernel_tile(x, (int64_t[]){3}, 1, NULL, &y, &err), TILEOPT_OK);
    tensor_free(x); /* y must still own the bytes (ASan checks) */
    const graph_bytes *o = (const graph_bytes *)(const void *)y->data;
    for (int i = 0; i < 6; i++) {
        assert_int_equal(o[i].len, strlen(words[i % 2]));
        assert_memory_equal(o[i].data, words[i % 2], o[i].len);
    }
    tensor_free(y);
}

static void tile1_should_tile_one_axis(void **state) {
    (void)state;
    tensor *x = make_f32((int64_t[]){2, 3}, 2, 0), *y;
    errbuf err;
    assert_int_equal(kernel_tile1(x, 2, -1, NULL, &y, &err), TILEOPT_OK);
    assert_int_equal(y->dims[0], 2);
    assert_int_equal(y->dims[1], 6);
    const float *p = (const float *)(const void *)y->data;
    const float want[] = {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5};
    assert_memory_equal(p, want, sizeof want);
    tensor_free(y);
    assert_int_equal(kernel_tile1(x, 2, 2, NULL, &y, &err), TILEOPT_INVALID);
    assert_int_equal(kernel_tile1(x, -1, 0, NULL, &y, &err), TILEOPT_INVALID);
    tensor_free(x);
}

static void tile_promoted_should_follow_openvino_rules(void **state) {
    (void)state;
    errbuf err;
    tensor *x = make_f32((int64_t[]){2, 3, 4}, 3, 0), *y;
    /* repeats shorter than the rank: leading 1s -> [2, 6, 12] */
    assert_int_equal(kernel_tile_promoted(x, (int64_t[]){2, 3}, 2, NULL, &y, &err), TILEOPT_OK);
    assert_int_equal(y->rank, 3);
    assert_int_equal(y->dims[0], 2);
    assert_int_equal(y->dims[1], 6);
    assert_int_equal(y->dims[2], 12);
    tensor_free(y);
    /* data [2,3,4], repeats [1,2,3] -> [2, 6, 12] */
    assert_int_equal(kernel_tile_promoted(x, (int64_t[]){1, 2, 3}, 3, NULL, &y, &err),
                     TILEOPT_OK);
    assert_int_equal(y->dims[1], 6);
    assert_int_equal(y->dims[2], 12);
    uint8_t *want = malloc(tensor_nbytes(y));
    ref_tile(x->data, x->dims, 3, (int64_t[]){1, 2, 3}, 4, want);
    assert_memory_equal(y->data, want, tensor_nbytes(y));
    free(want);
    tensor_free(y);
    /* data [2,3,4], repeats [5,1,2,3]: data gets a leading 1 -> [5, 2, 6, 12] */
    assert_int_equal(kernel_tile_promoted(x, (int64_t[]){5, 1, 2, 3}, 4, NULL, &y, &err),
                     TILEOPT_OK);
    assert_int_equal(y->rank, 4);
    const int64_t d4[] = {5, 2, 6, 12};
    for (int i = 0; i < 4; i++) assert_int_equal(y->dims[i], d4[i]);
    want = malloc(tensor_nbytes(y));
    ref_tile(x->data, (int64_t[]){1, 2, 3, 4}, 4, (int64_t[]){5, 1, 2, 3}, 4, want);
    assert_memory_equal(y->data, want, tensor_nbytes(y));
    free(want);
    tensor_free(y);
    tensor_free(x);
    /* data [5,2,3,4], repeats [1,2,3]: repeats get a leading 1 -> [5, 2, 6, 12] */
    x = make_f32((int64_t[]){5, 2, 3, 4}, 4, 0);
    assert_int_equal(kernel_tile_promoted(x, (int64_t[]){1, 2, 3}, 3, NULL, &y, &err),
                     TILEOPT_OK);
    for (int i = 0; i < 4; i++) assert_int_equal(y->dims[i], d4[i]);
    want = malloc(tensor_nbytes(y));
    ref_tile(x->data, x->dims, 4, (int64_t[]){1, 1, 2, 3}, 4, want);
    assert_memory_equal(y->data, want, tensor_nbytes(y));
    free(want);
    tensor_free(y);
    tensor_free(x);
}

/* ------------------------------------------------------------------ views */

static void view_should_tile_without_copying(void **state) {
    (void)state;
    tensor *x = make_f32((int64_t[]){2, 3}, 2, 1), *v;
    errbuf err;
    assert_int_equal(view_tile(x, (int64_t[]){2, 2}, 2, NULL, &v, &err), TILEOPT_OK);
    assert_ptr_equal(v->data, x->data);
    assert_int_equal(v->vrank, 4);
    assert_int_equal(v->dims[0], 4);
    assert_int_equal(v->dims[1], 6);
    /* axis i -> (r_i, d_i) with byte strides (0, stride_i) */
    assert_int_equal(v->vdims[0], 2);
    assert_int_equal(v->vstrides[0], 0);
    assert_int_equal(v->vdims[1], 2);
    assert_int_equal(v->vstrides[1], 12);
    assert_int_equal(v->vdims[3], 3);
    assert_int_equal(v->vstrides[3], 4);
    assert_false(tensor_is_contiguous(v));
    tensor_free(v);
    tensor_free(x);
}

static void view_should_compose_tile_of_tile(void **state) {
    (void)state;
    tensor *x = make_f32((int64_t[]){2, 3}, 2, 0), *a, *b, *direct;
    errbuf err;
    assert_int_equal(view_tile(x, (int64_t[]){2, 3}, 2, NULL, &a, &err), TILEOPT_OK);
    assert_int_equal(view_tile(a, (int64_t[]){3, 1}, 2, NULL, &b, &err), TILEOPT_OK);
    assert_int_equal(kernel_tile(x, (int64_t[]){6, 3}, 2, NULL, &direct, &err), TILEOPT_OK);
    uint8_t *got = values(b);
    assert_int_equal(b->dims[0], 12);
    assert_int_equal(b->dims[1], 9);
    assert_memory_equal(got, direct->data, tensor_nbytes(direct));
    free(got);
    tensor_free(a);
    tensor_free(b);
    tensor_free(direct);
    tensor_free(x);
}

static void view_should_expand_with_stride_zero(void **state) {
    (void)state;
    tensor *x = make_f32((int64_t[]){3, 1}, 2, 1), *v;
    errbuf err;
    assert_int_equal(view_expand(x, (int64_t[]){2, 1, 4}, 3, &v, &err), TILEOPT_OK);
    assert_int_equal(v->rank, 3);
    assert_int_equal(v->dims[0], 2);
    assert_int_equal(v->dims[1], 3);
    assert_int_equal(v->dims[2], 4);
    float *p = (float *)(void *)values(v);
    for (int i = 0; i < 24; i++) assert_true(p[i] == (float)(1 + (i / 4) % 3));
    free(p);
    tensor_free(v);
    assert_int_equal(view_expand(x, (int64_t[]){2, 4}, 2, &v, &err), TILEOPT_INVALID);
    tensor_free(x);
}

static void view_should_reshape_contiguous_without_copying(void **state) {
    (void)state;
    tensor *x = make_f32((int64_t[]){2, 6}, 2, 0), *v, *t, *r;
    errbuf err;
    assert_int_equal(view_reshape(x, (int64_t[]){3, 2, 2}, 3, NULL, &v, &err), TILEOPT_OK);
    assert_ptr_equal(v->data, x->data);
    assert_int_equal(view_reshape(x, (int64_t[]){5}, 1, NULL, &r, &err), TILEOPT_INVALID);
    /* a Tile view reshaped is materialized */
    assert_int_equal(view_tile(x, (int64_t[]){2, 1}, 2, NULL, &t, &err), TILEOPT_OK);
    assert_int_equal(view_reshape(t, (int64_t[]){24}, 1, NULL, &r, &err), TILEOPT_OK);
    assert_true(tensor_is_contiguous(r));
    const float *p = (const float *)(const void *)r->data;
    for (int i = 0; i < 24; i++) assert_true(p[i] == (float)(i % 12));
    tensor_free(r);
    tensor_free(t);
    tensor_free(v);
    tensor_free(x);
}

/* ------------------------------------------------------------ broadcasting */

static void broadcast_should_add_through_a_tile_view(void **state) {
    (void)state;
    errbuf err;
    tensor *x = make_f32((int64_t[]){4, 6}, 2, 0), *y = make_f32((int64_t[]){8, 18}, 2, 100);
    tensor *v, *m, *r1, *r2;
    assert_int_equal(view_tile(x, (int64_t[]){2, 3}, 2, NULL, &v, &err), TILEOPT_OK);
    assert_int_equal(kernel_tile(x, (int64_t[]){2, 3}, 2, NULL, &m, &err), TILEOPT_OK);
    Onnx__NodeProto n = node_of("Add");
    tensor *a[2] = {v, y}, *b[2] = {m, y};
    assert_int_equal(run_op("Add", 13, &n, a, 2, &r1, &err), TILEOPT_OK);
    assert_int_equal(run_op("Add", 13, &n, b, 2, &r2, &err), TILEOPT_OK);
    assert_memory_equal(r1->data, r2->data, tensor_nbytes(r2));
    const float *p = (const float *)(const void *)r1->data;
    assert_true(p[7] == 107.0f + 1.0f);          /* y[0][7] + x[0][7 % 6] */
    assert_true(p[18 * 5 + 13] == 203.0f + 7.0f); /* y[5][13] + x[1][1] */
    tensor_free(r1);
    tensor_free(r2);
    tensor_free(v);
    tensor_free(m);
    tensor_free(x);
    tensor_free(y);
}

static void broadcast_should_mix_two_incompatible_tile_views(void **state) {
    (void)state;
    errbuf err;
    tensor *x = make_f32((int64_t[]){2}, 1, 0), *y = make_f32((int64_t[]){3}, 1, 10);
    tensor *vx, *vy, *mx, *my, *r1, *r2;
    assert_int_equal(view_tile(x, (int64_t[]){3}, 1, NULL, &vx, &err), TILEOPT_OK);
    assert_int_equal(view_tile(y, (int64_t[]){2}, 1, NULL, &vy, &err), TILEOPT_OK);
    assert_int_equal(kernel_tile(x, (int64_t[]){3}, 1, NULL, &mx, &err), TILEOPT_OK);
    assert_int_equal(kernel_tile(y, (int64_t[]){2}, 1, NULL, &my, &err), TILEOPT_OK);
    Onnx__NodeProto n = node_of("Mul");
    tensor *a[2] = {vx, vy}, *b[2] = {mx, my};
    assert_int_equal(run_op("Mul", 13, &n, a, 2, &r1, &err), TILEOPT_OK);
    assert_int_equal(run_op("Mul", 13, &n, b, 2, &r2, &err), TILEOPT_OK);
    assert_memory_equal(r1->data, r2->data, tensor_nbytes(r2));
    tensor_free(r1);
    tensor_free(r2);
    tensor_free(vx);
    tensor_free(vy);
    tensor_free(mx);
    tensor_free(my);
    tensor_free(x);
    tensor_free(y);
}

static void broadcast_should_reject_incompatible_shapes(void **state) {
    (void)state;
    errbuf err;
    tensor *x = make_f32((int64_t[]){2, 3}, 2, 0), *y = make_f32((int64_t[]){4}, 1, 0), *r = NULL;
    Onnx__NodeProto n = node_of("Add");
    tensor *a[2] = {x, y};
    assert_int_equal(run_op("Add", 13, &n, a, 2, &r, &err), TILEOPT_INVALID);
    assert_null(r);
    assert_non_null(strstr(err.msg, "broadcast"));
    tensor_free(x);
    tensor_free(y);
}

static void elementwise_should_reject_mixed_types(void **state) {
    (void)state;
    errbuf err;
    int64_t d = 2;
    tensor *x = make_f32(&d, 1, 0), *s = make(DT_STRING, &d, 1), *i = make(DT_INT64, &d, 1);
    tensor *r = NULL;
    Onnx__NodeProto n = node_of("Add");
    tensor *a[2] = {x, s}, *b[2] = {x, i}, *c[2] = {s, s};
    assert_int_equal(run_op("Add", 13, &n, a, 2, &r, &err), TILEOPT_INVALID);
    assert_non_null(strstr(err.msg, "STRING"));
    assert_int_equal(run_op("Add", 13, &n, b, 2, &r, &err), TILEOPT_INVALID);
    assert_int_equal(run_op("Add", 13, &n, c, 2, &r, &err), TILEOPT_UNSUPPORTED);
    assert_null(r);
    tensor_free(x);
    tensor_free(s);
    tensor_free(i);
}

static void elementwise_should_divide_ints_by_zero_as_zero(void **state) {
    (void)state;
    errbuf err;
    tensor *x = make_i64((int64_t[]){7, INT64_MIN, -7, 5}, 4);
    tensor *y = make_i64((int64_t[]){0, -1, 2, -3}, 4), *r;
    Onnx__NodeProto n = node_of("Div");
    tensor *a[2] = {x, y};
    assert_int_equal(run_op("Div", 13, &n, a, 2, &r, &err), TILEOPT_OK);
    const int64_t *p = (const int64_t *)(const void *)r->data;
    assert_int_equal(p[0], 0);
    assert_int_equal(p[1], INT64_MIN);
    assert_int_equal(p[2], -3);
    assert_int_equal(p[3], -1);
    tensor_free(r);
    /* Mod, fmod=0: sign of the divisor, as Python */
    n = node_of("Mod");
    assert_int_equal(run_op("Mod", 13, &n, a, 2, &r, &err), TILEOPT_OK);
    p = (const int64_t *)(const void *)r->data;
    assert_int_equal(p[0], 0);
    assert_int_equal(p[2], 1);
    assert_int_equal(p[3], -1);
    tensor_free(r);
    tensor_free(x);
    tensor_free(y);
}

static void cast_should_round_trip_half_types(void **state) {
    (void)state;
    const float vals[] = {0.0f, 1.0f, -2.5f, 65504.0f, 0.000061035156f, 3.140625f};
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
        assert_true(eval_f16_to_f32(eval_f32_to_f16(vals[i])) == vals[i]);
        assert_true(eval_bf16_to_f32(eval_f32_to_bf16(vals[i])) ==
                    eval_bf16_to_f32(eval_f32_to_bf16(vals[i])));
    }
    assert_int_equal(eval_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(eval_f32_to_f16(-2.0f), 0xc000);
    assert_int_equal(eval_f32_to_f16(1e6f), 0x7c00);
    assert_int_equal(eval_f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(eval_f32_to_f16(5.9604645e-08f), 0x0001); /* smallest subnormal */
}

static void tile_node_should_read_float_tiles_and_reject_fractions(void **state) {
    (void)state;
    errbuf err;
    tensor *x = make_f32((int64_t[]){2, 3}, 2, 0), *r;
    tensor *tiles = make(DT_FLOAT, NULL, 0), *axis = make(DT_FLOAT, (int64_t[]){1}, 1);
    *(float *)(void *)tiles->data = 3.0f;
    *(float *)(void *)axis->data = 0.0f;
    Onnx__NodeProto n = node_of("Tile");
    tensor *in[3] = {x, tiles, axis};
    assert_int_equal(run_op("Tile", 1, &n, in, 3, &r, &err), TILEOPT_OK);
    assert_int_equal(r->dims[0], 6);
    assert_int_equal(r->dims[1], 3);
    tensor_free(r);
    *(float *)(void *)tiles->data = 2.5f;
    assert_int_equal(run_op("Tile", 1, &n, in, 3, &r, &err), TILEOPT_INVALID);
    assert_non_null(strstr(err.msg, "whole"));
    /* Tile-6: repeats of the wrong length */
    tensor *rep = make_i64((int64_t[]){2, 2, 2}, 3);
    tensor *in6[2] = {x, rep};
    assert_int_equal(run_op("Tile", 13, &n, in6, 2, &r, &err), TILEOPT_INVALID);
    /* the Tile-1 form after opset 6 */
    *(float *)(void *)tiles->data = 2.0f;
    assert_int_equal(run_op("Tile", 13, &n, in, 3, &r, &err), TILEOPT_INVALID);
    tensor_free(rep);
    tensor_free(tiles);
    tensor_free(axis);
    tensor_free(x);
}

static void tensor_should_round_trip_through_encode_and_decode(void **state) {
    (void)state;
    errbuf err;
    tensor *x = make_f32((int64_t[]){2, 3}, 2, 0.5f), *v, *back;
    assert_int_equal(view_tile(x, (int64_t[]){1, 2}, 2, NULL, &v, &err), TILEOPT_OK);
    void *bytes;
    size_t size;
    assert_int_equal(tensor_encode(v, "t", &bytes, &size, &err), TILEOPT_OK);
    assert_int_equal(tensor_decode(bytes, size, NULL, &back, &err), TILEOPT_OK);
    free(bytes);
    assert_string_equal(back->name, "t");
    assert_int_equal(back->dims[1], 6);
    uint8_t *want = values(v);
    assert_memory_equal(back->data, want, tensor_nbytes(back));
    free(want);
    tensor_free(back);
    assert_int_equal(tensor_decode("\xff\xff\xff", 3, NULL, &back, &err), TILEOPT_PARSE);
    tensor_free(v);
    tensor_free(x);
}


static tensor *make_strings(const char *const *w, int64_t n) {
    tensor *t = make(DT_STRING, &n, 1);
    graph_bytes *s = (graph_bytes *)(void *)t->data;
    for (int64_t i = 0; i < n; i++) {
        size_t len = strlen(w[i]);
        uint8_t *p = tbuf_bytes(t->buf, len + 1);
        memcpy(p, w[i], len + 1);
        s[i].data = p;
        s[i].len = len;
    }
    return t;
}

static void where_should_pick_strings_and_keep_them_alive(void **state) {
    (void)state;
    errbuf err;
    const char *a[] = {"x", "yy"}, *b[] = {"p", "qq"};
    tensor *ta = make_strings(a, 2), *tb = make_strings(b, 2), *c = make(DT_BOOL, (int64_t[]){2, 1}, 2), *r;
    c->data[0] = 1;
    c->data[1] = 0;
    Onnx__NodeProto n = node_of("Where");
    tensor *in[3] = {c, ta, tb};
    assert_int_equal(run_op("Where", 16, &n, in, 3, &r, &err), TILEOPT_OK);
    tensor_free(ta);
    tensor_free(tb);
    assert_int_equal(r->dims[0], 2);
    assert_int_equal(r->dims[1], 2);
    const graph_bytes *s = (const graph_bytes *)(const void *)r->data;
    const char *want[] = {"x", "yy", "p", "qq"};
    for (int i = 0; i < 4; i++) assert_memory_equal(s[i].data, want[i], s[i].len);
    tensor_free(r);
    /* a numeric condition is a mix-up */
    tensor *f = make_f32((int64_t[]){2}, 1, 0);
    tensor *bad[3] = {f, f, f};
    assert_int_equal(run_op("Where", 16, &n, bad, 3, &r, &err), TILEOPT_INVALID);
    tensor_free(f);
    tensor_free(c);
}

static void cast_should_convert_strings_both_ways(void **state) {
    (void)state;
    errbuf err;
    const char *w[] = {"1.5", "-2", "inf"};
    tensor *s = make_strings(w, 3), *f, *back;
    Onnx__AttributeProto to = ONNX__ATTRIBUTE_PROTO__INIT, *attrs[1] = {&to};
    to.name = (char *)"to";
    to.has_i = 1;
    to.i = DT_FLOAT;
    Onnx__NodeProto n = node_of("Cast");
    n.n_attribute = 1;
    n.attribute = attrs;
    assert_int_equal(run_op("Cast", 13, &n, &s, 1, &f, &err), TILEOPT_OK);
    const float *p = (const float *)(const void *)f->data;
    assert_true(p[0] == 1.5f && p[1] == -2.0f && p[2] > 1e38f);
    to.i = DT_STRING;
    assert_int_equal(run_op("Cast", 13, &n, &f, 1, &back, &err), TILEOPT_OK);
    const graph_bytes *b = (const graph_bytes *)(const void *)back->data;
    assert_int_equal(b[0].len, 3);
    assert_memory_equal(b[0].data, "1.5", 3);
    assert_memory_equal(b[2].data, "INF", 3);
    tensor_free(back);
    tensor_free(f);
    /* not a number */
    const char *bad[] = {"abc"};
    tensor *sb = make_strings(bad, 1);
    to.i = DT_FLOAT;
    assert_int_equal(run_op("Cast", 13, &n, &sb, 1, &f, &err), TILEOPT_INVALID);
    assert_non_null(strstr(err.msg, "abc"));
    tensor_free(sb);
    tensor_free(s);
}

static void broadcast_should_follow_legacy_axis_rule(void **state) {
    (void)state;
    errbuf err;
    /* opset 6, broadcast=1, axis=0: B [2] matches A's axis 0 of [2,3] */
    tensor *a = make_f32((int64_t[]){2, 3}, 2, 0), *b = make_f32((int64_t[]){2}, 1, 10), *r;
    Onnx__AttributeProto bc = ONNX__ATTRIBUTE_PROTO__INIT, ax = ONNX__ATTRIBUTE_PROTO__INIT;
    bc.name = (char *)"broadcast";
    bc.has_i = 1;
    bc.i = 1;
    ax.name = (char *)"axis";
    ax.has_i = 1;
    ax.i = 0;
    Onnx__AttributeProto *attrs[2] = {&bc, &ax};
    Onnx__NodeProto n = node_of("Add");
    n.n_attribute = 2;
    n.attribute = attrs;
    tensor *in[2] = {a, b};
    assert_int_equal(run_op("Add", 6, &n, in, 2, &r, &err), TILEOPT_OK);
    const float *p = (const float *)(const void *)r->data;
    const float want[] = {10, 11, 12, 14, 15, 16};
    assert_memory_equal(p, want, sizeof want);
    tensor_free(r);
    tensor_free(a);
    tensor_free(b);
}

static tensor *cast_to(tensor *x, int32_t to, int saturate) {
    errbuf err;
    Onnx__AttributeProto a = ONNX__ATTRIBUTE_PROTO__INIT, s = ONNX__ATTRIBUTE_PROTO__INIT;
    Onnx__AttributeProto *attrs[2] = {&a, &s};
    a.name = (char *)"to";
    a.has_i = 1;
    a.i = to;
    s.name = (char *)"saturate";
    s.has_i = 1;
    s.i = saturate;
    Onnx__NodeProto n = node_of("Cast");
    n.n_attribute = 2;
    n.attribute = attrs;
    tensor *r;
    assert_int_equal(run_op("Cast", 19, &n, &x, 1, &r, &err), TILEOPT_OK);
    return r;
}

static void cast_should_round_trip_every_float8_code(void **state) {
    (void)state;
    const int32_t types[] = {DT_FLOAT8E4M3FN, DT_FLOAT8E4M3FNUZ, DT_FLOAT8E5M2,
                             DT_FLOAT8E5M2FNUZ};
    for (int k = 0; k < 4; k++) {
        tensor *codes = make(types[k], (int64_t[]){256}, 1);
        for (int i = 0; i < 256; i++) codes->data[i] = (uint8_t)i;
        tensor *f = cast_to(codes, DT_FLOAT, 1), *back = cast_to(f, types[k], 1);
        const float *v = (const float *)(const void *)f->data;
        for (int i = 0; i < 256; i++) {
            if (v[i] != v[i]) continue; /* NaN codes need not come back alike */
            if (isinf(v[i])) continue;  /* saturated to the max */
            assert_int_equal(back->data[i], i);
        }
        tensor_free(back);
        tensor_free(f);
        tensor_free(codes);
    }
    /* known values, rounding and the out-of-range rules */
    tensor *x = make(DT_FLOAT, (int64_t[]){6}, 1);
    float *p = (float *)(void *)x->data;
    p[0] = 1.0f;
    p[1] = 448.0f;
    p[2] = 1000.0f;
    p[3] = -0.0f;
    p[4] = 1.0625f; /* halfway between 1 and 1.125: even is 1 */
    p[5] = 0.001953125f; /* 2^-9, E4M3FN's smallest subnormal */
    tensor *a = cast_to(x, DT_FLOAT8E4M3FN, 1), *b = cast_to(x, DT_FLOAT8E4M3FN, 0);
    tensor *c = cast_to(x, DT_FLOAT8E5M2, 0), *d = cast_to(x, DT_FLOAT8E4M3FNUZ, 1);
    assert_int_equal(a->data[0], 0x38);
    assert_int_equal(a->data[1], 0x7e);
    assert_int_equal(a->data[2], 0x7e); /* saturated */
    assert_int_equal(b->data[2], 0x7f); /* NaN */
    assert_int_equal(c->data[2], 0x64); /* 1024 = 2^10 in E5M2: (10 + 15) << 2 */
    assert_int_equal(a->data[3], 0x80);
    assert_int_equal(d->data[3], 0x00); /* no negative zero */
    assert_int_equal(a->data[4], 0x38);
    assert_int_equal(a->data[5], 0x01);
    tensor_free(a);
    tensor_free(b);
    tensor_free(c);
    tensor_free(d);
    tensor_free(x);
}

/* ---------------------------------------------------------------- signal */

static int run_signal(const char *op, Onnx__NodeProto *n, tensor **in, size_t n_in,
                      tensor **out, errbuf *err) {
    for (size_t i = 0; i < kernel_table_signal_count; i++)
        if (!strcmp(op_table[kernel_table_signal[i].op].name, op))
            return kernel_table_signal[i].fn(n, 17, in, n_in, out, 1, NULL, err);
    fail_msg("no kernel %s", op);
    return TILEOPT_ERROR;
}

static tensor *scalar_i64(int64_t v) {
    tensor *t = make(DT_INT64, NULL, 0);
    memcpy(t->data, &v, 8);
    return t;
}

static void dft_should_match_the_direct_sum_for_any_length(void **state) {
    (void)state;
    errbuf err;
    Onnx__AttributeProto inv = ONNX__ATTRIBUTE_PROTO__INIT, *attrs[1] = {&inv};
    inv.name = (char *)"inverse";
    inv.has_i = 1;
    Onnx__NodeProto n = node_of("DFT");
    n.n_attribute = 1;
    n.attribute = attrs;
    /* powers of two run the radix-2 FFT, the rest Bluestein's; dft_length both
    ** cuts the signal (len < 9) and zero-pads it */
    for (int64_t len = 1; len <= 40; len++)
        for (inv.i = 0; inv.i <= 1; inv.i++) {
            tensor *x = make(DT_DOUBLE, (int64_t[]){1, 9, 2}, 3), *dl = scalar_i64(len), *y;
            double *xv = (double *)(void *)x->data;
            for (int i = 0; i < 18; i++) xv[i] = sin(1.7 * i + 0.3) * (i % 3 + 1);
            tensor *in[2] = {x, dl};
            assert_int_equal(run_signal("DFT", &n, in, 2, &y, &err), TILEOPT_OK);
            assert_int_equal(y->dims[1], len);
            const double *yv = (const double *)(const void *)y->data;
            double sign = inv.i ? 1 : -1, scale = inv.i ? 1.0 / (double)len : 1;
            for (int64_t k = 0; k < len; k++) {
                double re = 0, im = 0;
                for (int64_t j = 0; j < len && j < 9; j++) {
                    double a = sign * 2 * 3.14159265358979323846 * (double)((j * k) % len) /
                               (double)len;
                    re += xv[2 * j] * cos(a) - xv[2 * j + 1] * sin(a);
                    im += xv[2 * j] * sin(a) + xv[2 * j + 1] * cos(a);
                }
                assert_true(fabs(yv[2 * k] - re * scale) <= 1e-12);
                assert_true(fabs(yv[2 * k + 1] - im * scale) <= 1e-12);
            }
            tensor_free(y);
            tensor_free(dl);
            tensor_free(x);
        }
}

static void signal_ops_should_reject_bad_inputs(void **state) {
    (void)state;
    errbuf err;
    tensor *y = NULL;
    /* DFT over the real/imaginary axis */
    Onnx__AttributeProto ax = ONNX__ATTRIBUTE_PROTO__INIT, *attrs[1] = {&ax};
    ax.name = (char *)"axis";
    ax.has_i = 1;
    ax.i = 2;
    Onnx__NodeProto dft = node_of("DFT");
    dft.n_attribute = 1;
    dft.attribute = attrs;
    tensor *x = make(DT_FLOAT, (int64_t[]){1, 8, 1}, 3);
    assert_int_equal(run_signal("DFT", &dft, &x, 1, &y, &err), TILEOPT_INVALID);
    assert_non_null(strstr(err.msg, "n0"));
    /* STFT frames longer than the signal */
    Onnx__NodeProto stft = node_of("STFT");
    tensor *step = scalar_i64(1), *fl = scalar_i64(9);
    tensor *st_in[4] = {x, step, NULL, fl};
    assert_int_equal(run_signal("STFT", &stft, st_in, 4, &y, &err), TILEOPT_INVALID);
    assert_non_null(strstr(err.msg, "frame length 9"));
    /* a negative window size */
    Onnx__NodeProto hann = node_of("HannWindow");
    tensor *neg = scalar_i64(-1);
    assert_int_equal(run_signal("HannWindow", &hann, &neg, 1, &y, &err), TILEOPT_INVALID);
    /* mel bands reaching past the last spectrogram bin (upper edge at the sample rate) */
    Onnx__NodeProto mel = node_of("MelWeightMatrix");
    tensor *lo = make(DT_FLOAT, NULL, 0), *hi = make(DT_FLOAT, NULL, 0);
    ((float *)(void *)hi->data)[0] = 100;
    tensor *nmb = scalar_i64(8), *dl = scalar_i64(16), *rate = scalar_i64(100);
    tensor *min[5] = {nmb, dl, rate, lo, hi};
    assert_int_equal(run_signal("MelWeightMatrix", &mel, min, 5, &y, &err), TILEOPT_INVALID);
    assert_null(y);
    tensor *all[] = {x, step, fl, neg, lo, hi, nmb, dl, rate};
    for (size_t i = 0; i < countof(all); i++) tensor_free(all[i]);
}

/* ------------------------------------------------------------ text ops */

static const kernel_def *string_kernel(op_id op) {
    for (size_t i = 0; i < kernel_table_string_count; i++)
        if (kernel_table_string[i].op == op) return &kernel_table_string[i];
    fail_msg("no kernel %s", op_table[op].name);
    return NULL;
}

static Onnx__AttributeProto attr_ints(const char *name, const int64_t *v, size_t n) {
    Onnx__AttributeProto a = ONNX__ATTRIBUTE_PROTO__INIT;
    a.name = (char *)name;
    a.n_ints = n;
    a.ints = (int64_t *)v;
    return a;
}

static Onnx__AttributeProto attr_int(const char *name, int64_t v) {
    Onnx__AttributeProto a = ONNX__ATTRIBUTE_PROTO__INIT;
    a.name = (char *)name;
    a.has_i = 1;
    a.i = v;
    return a;
}

static Onnx__AttributeProto attr_str(const char *name, const char *v) {
    Onnx__AttributeProto a = ONNX__ATTRIBUTE_PROTO__INIT;
    a.name = (char *)name;
    a.has_s = 1;
    a.s.data = (uint8_t *)v;
    a.s.len = strlen(v);
    return a;
}

static Onnx__AttributeProto attr_strs(const char *name, ProtobufCBinaryData *b,
                                      const char *const *v, size_t n) {
    Onnx__AttributeProto a = ONNX__ATTRIBUTE_PROTO__INIT;
    a.name = (char *)name;
    for (size_t i = 0; i < n; i++) {
        b[i].data = (uint8_t *)v[i];
        b[i].len = strlen(v[i]);
    }
    a.n_strings = n;
    a.strings = b;
    return a;
}

/* TfIdfVectorizer over 1- and 2-grams without skips; spool (strings) replaces
** pool when given; n_w == 0 leaves the weights out. */
static int run_tfidf(const char *mode, const int64_t *counts, size_t n_counts,
                     const int64_t *idx, size_t n_idx, const int64_t *pool,
                     const char *const *spool, size_t n_pool, const float *w, size_t n_w,
                     tensor *x, tensor **y, errbuf *err) {
    ProtobufCBinaryData sb[16];
    assert_true(n_pool <= 16);
    Onnx__AttributeProto a[8] = {
        attr_str("mode", mode),
        attr_int("min_gram_length", 1),
        attr_int("max_gram_length", 2),
        attr_int("max_skip_count", 0),
        attr_ints("ngram_counts", counts, n_counts),
        attr_ints("ngram_indexes", idx, n_idx),
        spool ? attr_strs("pool_strings", sb, spool, n_pool)
              : attr_ints("pool_int64s", pool, n_pool),
        ONNX__ATTRIBUTE_PROTO__INIT,
    };
    a[7].name = (char *)"weights";
    a[7].n_floats = n_w;
    a[7].floats = (float *)w;
    Onnx__AttributeProto *attrs[8];
    for (int i = 0; i < 8; i++) attrs[i] = &a[i];
    Onnx__NodeProto n = node_of("TfIdfVectorizer");
    n.n_attribute = n_w ? 8 : 7;
    n.attribute = attrs;
    *y = NULL;
    return string_kernel(OP_TfIdfVectorizer)->fn(&n, 9, &x, 1, y, 1, NULL, err);
}

static void tfidf_should_reject_bad_ngram_attributes(void **state) {
    (void)state;
    errbuf err;
    tensor *x = make_i64((int64_t[]){1, 2, 3, 2, 3}, 5), *y;
    const int64_t pool[] = {2, 3, 2, 3}, idx[] = {0, 1, 2};
    /* unigrams 2 and 3, the bigram (2, 3) */
    assert_int_equal(run_tfidf("TF", (int64_t[]){0, 2}, 2, idx, 3, pool, NULL, 4, NULL, 0, x,
                               &y, &err), TILEOPT_OK);
    assert_memory_equal(y->data, ((float[]){2, 2, 2}), 3 * sizeof(float));
    tensor_free(y);
    static const struct {
        int64_t counts[2], idx[3];
        size_t n_idx, n_w;
        const char *says;
    } bad[] = {
        {{0, 5}, {0, 1, 2}, 3, 0, "ngram_counts"}, /* past the pool */
        {{3, 2}, {0, 1, 2}, 3, 0, "ngram_counts"}, /* decreasing */
        {{-1, 2}, {0, 1, 2}, 3, 0, "ngram_counts"},
        {{0, 1}, {0, 1, 2}, 3, 0, "whole"},        /* 3 items of 2-grams */
        {{0, 2}, {0, 1}, 2, 0, "ngram_indexes"},   /* an n-gram without a coordinate */
        {{0, 2}, {0, -1, 2}, 3, 0, "ngram_indexes"},
        {{0, 2}, {0, 1, 2}, 3, 2, "weights"},      /* fewer weights than outputs */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = run_tfidf("IDF", bad[i].counts, 2, bad[i].idx, bad[i].n_idx, pool, NULL, 4,
                           (float[]){1, 1}, bad[i].n_w, x, &y, &err);
        assert_int_equal(rc, TILEOPT_INVALID);
        assert_null(y);
        assert_non_null(strstr(err.msg, bad[i].says));
        assert_non_null(strstr(err.msg, "n0"));
    }
    assert_int_equal(run_tfidf("BM25", (int64_t[]){0, 2}, 2, idx, 3, pool, NULL, 4, NULL, 0, x,
                               &y, &err), TILEOPT_INVALID);
    tensor_free(x);
}

static void tfidf_should_weight_output_coordinates_of_string_ngrams(void **state) {
    (void)state;
    errbuf err;
    const char *words[] = {"a", "b", "a", "x", "a"}, *pool[] = {"a", "b", "a", "b"};
    tensor *x = make_strings(words, 5), *y;
    /* n-grams a, b, (a b) go to outputs 2, 0, 1; their counts are 3, 1, 1 */
    const int64_t counts[] = {0, 2}, idx[] = {2, 0, 1};
    const float w[] = {1, 10, 100};
    assert_int_equal(run_tfidf("TFIDF", counts, 2, idx, 3, NULL, pool, 4, w, 3, x, &y, &err),
                     TILEOPT_OK);
    assert_memory_equal(y->data, ((float[]){1, 10, 300}), 3 * sizeof(float));
    tensor_free(y);
    assert_int_equal(run_tfidf("IDF", counts, 2, idx, 3, NULL, pool, 4, w, 3, x, &y, &err),
                     TILEOPT_OK);
    assert_memory_equal(y->data, ((float[]){1, 10, 100}), 3 * sizeof(float));
    tensor_free(y);
    /* an int input for a string pool is a mix-up */
    tensor *xi = make_i64((int64_t[]){1}, 1);
    assert_int_equal(run_tfidf("TF", counts, 2, idx, 3, NULL, pool, 4, NULL, 0, xi, &y, &err),
                     TILEOPT_INVALID);
    tensor_free(xi);
    tensor_free(x);
}

static void string_normalizer_should_map_utf8_and_compare_in_output_case(void **state) {
    (void)state;
    errbuf err;
    /* long s uppers to S, so it matches the stopword s compared in upper case;
    ** bytes that are not UTF-8 pass through */
    const char *words[] = {"\xc3\x89t\xc3\xa9", "MONDAY", "\xc5\xbf", "x\xff"};
    const char *stop[] = {"monday", "s"};
    tensor *x = make_strings(words, 4), *y;
    ProtobufCBinaryData sb[2];
    Onnx__AttributeProto a[2] = {attr_str("case_change_action", "UPPER"),
                                 attr_strs("stopwords", sb, stop, 2)};
    Onnx__AttributeProto *attrs[2] = {&a[0], &a[1]};
    Onnx__NodeProto n = node_of("StringNormalizer");
    n.n_attribute = 2;
    n.attribute = attrs;
    const kernel_def *k = string_kernel(OP_StringNormalizer);
    assert_int_equal(k->fn(&n, 10, &x, 1, &y, 1, NULL, &err), TILEOPT_OK);
    assert_int_equal(y->rank, 1);
    assert_int_equal(y->dims[0], 2);
    const graph_bytes *s = (const graph_bytes *)(const void *)y->data;
    assert_int_equal(s[0].len, 5);
    assert_memory_equal(s[0].data, "\xc3\x89T\xc3\x89", 5);
    assert_int_equal(s[1].len, 2);
    assert_memory_equal(s[1].data, "X\xff", 2);
    tensor_free(y);
    tensor_free(x);
    /* [2, 1] is neither [C] nor [1, C] */
    tensor *x2 = make(DT_STRING, (int64_t[]){2, 1}, 2);
    assert_int_equal(k->fn(&n, 10, &x2, 1, &y, 1, NULL, &err), TILEOPT_INVALID);
    tensor_free(x2);
}


static uint64_t lcg(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* The built-in product (what a machine without OpenBLAS computes) agrees with
** the BLAS the library found, within verify's tolerance, for every transpose,
** alpha and beta, float and double, odd sizes and padded leading dimensions. */
static void blas_builtin_should_agree_with_the_library_found(void **state) {
    (void)state;
    uint64_t s = 7;
    for (int round = 0; round < 40; round++) {
        bool dbl = round & 1, ta = round & 2, tb = round & 4;
        int64_t m = 1 + (int64_t)(lcg(&s) % 37), n = 1 + (int64_t)(lcg(&s) % 41),
                k = 1 + (int64_t)(lcg(&s) % 53), pad = (int64_t)(lcg(&s) % 3);
        int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
        double alpha = round % 3 ? 1.0 : 0.5, beta = round % 5 == 0 ? 0.75 : 0.0;
        size_t es = dbl ? 8 : 4;
        size_t na = (size_t)((ta ? k : m) * lda), nb = (size_t)((tb ? n : k) * ldb),
               nc = (size_t)(m * ldc);
        uint8_t *a = malloc(na * es), *b = malloc(nb * es), *c1 = malloc(nc * es),
                *c2 = malloc(nc * es);
        assert_non_null(a && b && c1 && c2);
        for (size_t i = 0; i < na + nb + nc; i++) {
            double v = (double)(lcg(&s) % 2001) / 1000.0 - 1.0;
            uint8_t *p = i < na ? a + i * es : i < na + nb ? b + (i - na) * es
                                                            : c1 + (i - na - nb) * es;
            if (dbl) memcpy(p, &v, 8);
            else {
                float f = (float)v;
                memcpy(p, &f, 4);
            }
        }
        memcpy(c2, c1, nc * es);
        blas_force_builtin(true);
        blas_gemm(dbl, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c1, ldc);
        blas_force_builtin(false);
        blas_gemm(dbl, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c2, ldc);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                size_t at = (size_t)(i * ldc + j);
                double x, y;
                if (dbl) {
                    memcpy(&x, c1 + at * 8, 8);
                    memcpy(&y, c2 + at * 8, 8);
                } else {
                    float fx, fy;
                    memcpy(&fx, c1 + at * 4, 4);
                    memcpy(&fy, c2 + at * 4, 4);
                    x = fx;
                    y = fy;
                }
                /* verify's tolerance, with k terms of rounding in float */
                assert_true(fabs(x - y) <= 1e-5 * (double)k + 1e-3 * fabs(y));
            }
        free(a);
        free(b);
        free(c1);
        free(c2);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(blas_builtin_should_agree_with_the_library_found),
        cmocka_unit_test(tile_should_match_reference_on_small_shapes),
        cmocka_unit_test(tile_should_match_reference_on_big_blocks),
        cmocka_unit_test(tile_should_match_reference_on_rows_stored_from_registers),
        cmocka_unit_test(tile_should_give_empty_output_for_zero_repeats_and_dims),
        cmocka_unit_test(tile_should_copy_a_scalar),
        cmocka_unit_test(tile_should_write_big_outputs_in_slices_when_progress_is_asked),
        cmocka_unit_test(tile_should_reject_negative_repeats),
        cmocka_unit_test(tile_should_reject_wrong_repeats_length),
        cmocka_unit_test(tile_should_reject_output_size_overflow),
        cmocka_unit_test(tile_should_keep_string_bytes_alive),
        cmocka_unit_test(tile1_should_tile_one_axis),
        cmocka_unit_test(tile_promoted_should_follow_openvino_rules),
        cmocka_unit_test(view_should_tile_without_copying),
        cmocka_unit_test(view_should_compose_tile_of_tile),
        cmocka_unit_test(view_should_expand_with_stride_zero),
        cmocka_unit_test(view_should_reshape_contiguous_without_copying),
        cmocka_unit_test(broadcast_should_add_through_a_tile_view),
        cmocka_unit_test(broadcast_should_mix_two_incompatible_tile_views),
        cmocka_unit_test(broadcast_should_reject_incompatible_shapes),
        cmocka_unit_test(elementwise_should_reject_mixed_types),
        cmocka_unit_test(elementwise_should_divide_ints_by_zero_as_zero),
        cmocka_unit_test(cast_should_round_trip_half_types),
        cmocka_unit_test(tile_node_should_read_float_tiles_and_reject_fractions),
        cmocka_unit_test(tensor_should_round_trip_through_encode_and_decode),
        cmocka_unit_test(where_should_pick_strings_and_keep_them_alive),
        cmocka_unit_test(cast_should_convert_strings_both_ways),
        cmocka_unit_test(broadcast_should_follow_legacy_axis_rule),
        cmocka_unit_test(cast_should_round_trip_every_float8_code),
        cmocka_unit_test(tfidf_should_reject_bad_ngram_attributes),
        cmocka_unit_test(tfidf_should_weight_output_coordinates_of_string_ngrams),
        cmocka_unit_test(string_normalizer_should_map_utf8_and_compare_in_output_case),
        cmocka_unit_test(dft_should_match_the_direct_sum_for_any_length),
        cmocka_unit_test(signal_ops_should_reject_bad_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

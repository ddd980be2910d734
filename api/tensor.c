/*
** Public API: tensors. Loading and saving them as ONNX's test data stores them,
** building them from memory and reading their values back (language bindings),
** comparing them with the tolerance of ONNX's backend tests, and printing them.
*/
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eval/eval.h"
#include "api/ctx.h"
#include "api/npy.h"

/* ------------------------------------------------------- loading and saving */

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

tileopt_status api_wrap_tensor(tileopt_ctx *ctx, tensor *t, const char *name,
                               tileopt_tensor **out) {
    tileopt_tensor *w = calloc(1, sizeof *w);
    char *nm = dup_str(name ? name : "");
    if (!w || !nm) {
        free(w);
        free(nm);
        tensor_free(t);
        return ctx_fail(ctx, &(errbuf){TILEOPT_NOMEM, "out of memory"});
    }
    w->t = t;
    w->name = nm;
    *out = w;
    return TILEOPT_OK;
}

tileopt_status tileopt_tensor_load_buffer(tileopt_ctx *ctx, const void *data, size_t size,
                                          tileopt_tensor **out) {
    *out = NULL;
    tensor *t = NULL;
    eval_env env = api_eval_env(ctx, NULL);
    /* a .npy file says so in its first bytes, which no TensorProto starts with */
    if (npy_is_npy(data, size) ? npy_decode(data, size, &env, &t, &ctx->err)
                               : tensor_decode(data, size, &env, &t, &ctx->err))
        return ctx_fail(ctx, &ctx->err);
    return api_wrap_tensor(ctx, t, t->name, out);
}

int api_read_file(const char *path, uint64_t max, void **data, size_t *size, errbuf *err) {
    *data = NULL;
    *size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return err_set(err, TILEOPT_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return err_set(err, TILEOPT_IO, "'%s' is not a regular file", path);
    }
    if ((uint64_t)st.st_size > max) {
        close(fd);
        return err_set(err, TILEOPT_LIMIT, "'%s' has %" PRIu64 " bytes, over the limit %" PRIu64,
                       path, (uint64_t)st.st_size, max);
    }
    size_t n = (size_t)st.st_size, got = 0;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        close(fd);
        return err_set(err, TILEOPT_NOMEM, "out of memory reading '%s'", path);
    }
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            int e = errno;
            free(buf);
            close(fd);
            return err_set(err, TILEOPT_IO, "cannot read '%s': %s", path,
                           r < 0 ? strerror(e) : "file shrank");
        }
        got += (size_t)r;
    }
    close(fd);
    *data = buf;
    *size = n;
    return TILEOPT_OK;
}

tileopt_status tileopt_tensor_load(tileopt_ctx *ctx, const char *path, tileopt_tensor **out) {
    *out = NULL;
    void *data;
    size_t size;
    /* a serialized tensor is its data plus a little framing */
    uint64_t max = ctx->opt.lim.max_tensor_bytes + ((uint64_t)1 << 20);
    if (api_read_file(path, max, &data, &size, &ctx->err)) return ctx_fail(ctx, &ctx->err);
    tileopt_status rc = tileopt_tensor_load_buffer(ctx, data, size, out);
    free(data);
    if (rc) {
        err_prefix(&ctx->err, "%s: ", path);
        return ctx_fail(ctx, &ctx->err);
    }
    return TILEOPT_OK;
}

tileopt_status tileopt_tensor_save(tileopt_ctx *ctx, const tileopt_tensor *t,
                                   const char *path) {
    void *bytes;
    size_t size;
    size_t len = strlen(path);
    bool npy = len >= 4 && strcmp(path + len - 4, ".npy") == 0;
    if (npy ? npy_encode(t->t, &bytes, &size, &ctx->err)
            : tensor_encode(t->t, t->name, &bytes, &size, &ctx->err))
        return ctx_fail(ctx, &ctx->err);
    int rc = graph_write_atomic(path, bytes, size, ctx->temp_hook, ctx->temp_user, &ctx->err);
    free(bytes);
    return rc ? ctx_fail(ctx, &ctx->err) : TILEOPT_OK;
}

/* The graph input `index` counts the inputs without an initializer, as
** tileopt_model_run binds them; NULL past the end. */
static const Onnx__ValueInfoProto *io_info(graph *g, bool output, size_t index) {
    Onnx__GraphProto *pb = g->pb;
    if (output) return index < pb->n_output ? pb->output[index] : NULL;
    for (size_t i = 0, k = 0; i < pb->n_input; i++) {
        graph_value *v = graph_find(g, pb->input[i]->name);
        if (v && v->initializer >= 0) continue;
        if (k++ == index) return pb->input[i];
    }
    return NULL;
}

size_t tileopt_model_input_count(const tileopt_model *model) {
    graph *g = model->g->main;
    size_t n = 0;
    for (size_t i = 0; i < g->pb->n_input; i++) {
        graph_value *v = graph_find(g, g->pb->input[i]->name);
        n += !(v && v->initializer >= 0);
    }
    return n;
}

const char *tileopt_model_input_name(const tileopt_model *model, size_t i) {
    const Onnx__ValueInfoProto *vi = io_info(model->g->main, false, i);
    return vi ? vi->name : NULL;
}

size_t tileopt_model_output_count(const tileopt_model *model) {
    return model->g->main->pb->n_output;
}

const char *tileopt_model_output_name(const tileopt_model *model, size_t i) {
    const Onnx__ValueInfoProto *vi = io_info(model->g->main, true, i);
    return vi ? vi->name : NULL;
}

/* A value file read as the graph input or output it is for declares it. */
static tileopt_status value_load(tileopt_ctx *ctx, const tileopt_model *model, bool output,
                                 size_t index, const char *path, tileopt_tensor **out) {
    *out = NULL;
    if (!model || !path)
        return ctx_fail(ctx, &(errbuf){TILEOPT_MISUSE, "loading a value: NULL argument"});
    const Onnx__ValueInfoProto *vi = io_info(model->g->main, output, index);
    const char *io = output ? "output" : "input";
    int32_t elem = 0;
    graph_kind kind = vi ? graph_type_kind(vi->type, &elem) : GRAPH_KIND_NONE;
    if (kind == GRAPH_KIND_NONE) kind = GRAPH_KIND_TENSOR;
    if (kind == GRAPH_KIND_OTHER) {
        err_set(&ctx->err, TILEOPT_UNSUPPORTED, "%s: graph %s '%s' is a map or sparse tensor, "
                "which the evaluator does not take", path, io, vi->name);
        return ctx_fail(ctx, &ctx->err);
    }
    void *data;
    size_t size;
    uint64_t max = ctx->opt.lim.max_tensor_bytes + ((uint64_t)1 << 20);
    if (api_read_file(path, max, &data, &size, &ctx->err)) return ctx_fail(ctx, &ctx->err);
    tensor *t = NULL;
    eval_env env = api_eval_env(ctx, NULL);
    int rc = npy_is_npy(data, size)
                 ? npy_decode(data, size, &env, &t, &ctx->err)
                 : value_decode(data, size, kind, elem, &env, &t, &ctx->err);
    free(data);
    if (rc) {
        /* the bytes do not say which message they hold: say what they were read as */
        if (!vi) err_prefix(&ctx->err, "%s: ", path);
        else err_prefix(&ctx->err, "%s (read as %s, as graph %s '%s' declares): ", path,
                        value_kind_name(kind), io, vi->name);
        return ctx_fail(ctx, &ctx->err);
    }
    return api_wrap_tensor(ctx, t, t->name ? t->name : vi ? vi->name : "", out);
}

tileopt_status tileopt_model_input_load(tileopt_ctx *ctx, const tileopt_model *model,
                                        size_t index, const char *path, tileopt_tensor **out) {
    return value_load(ctx, model, false, index, path, out);
}

tileopt_status tileopt_model_output_load(tileopt_ctx *ctx, const tileopt_model *model,
                                         size_t index, const char *path, tileopt_tensor **out) {
    return value_load(ctx, model, true, index, path, out);
}

void tileopt_tensor_free(tileopt_tensor *t) {
    if (!t) return;
    tensor_free(t->t);
    tensor_free(t->plain);
    free(t->name);
    free(t);
}

int tileopt_tensor_dtype(const tileopt_tensor *t) { return t->t->elem; }
_Static_assert((int)TILEOPT_VALUE_TENSOR == (int)EVAL_TENSOR &&
                   (int)TILEOPT_VALUE_SEQUENCE == (int)EVAL_SEQUENCE &&
                   (int)TILEOPT_VALUE_OPTIONAL == (int)EVAL_OPTIONAL,
               "the public value kinds are the evaluator's");
int tileopt_tensor_kind(const tileopt_tensor *t) { return t->t->kind; }
size_t tileopt_tensor_rank(const tileopt_tensor *t) { return (size_t)t->t->rank; }
const int64_t *tileopt_tensor_dims(const tileopt_tensor *t) { return t->t->dims; }
const char *tileopt_tensor_name(const tileopt_tensor *t) { return t->name; }

/* ------------------------------------------------- from memory and back */

/* A new contiguous tensor of dtype and dims[0..rank) from the caller's shape. */
static tileopt_status new_tensor(tileopt_ctx *ctx, int dtype, const int64_t *dims, size_t rank,
                                 tensor **out) {
    *out = NULL;
    if (!dims && rank)
        return ctx_fail(ctx, &(errbuf){TILEOPT_MISUSE, "a new tensor: NULL dims"});
    if (rank > TENSOR_MAX_RANK) {
        err_set(&ctx->err, TILEOPT_LIMIT, "a new tensor of rank %zu, over the limit %d", rank,
                TENSOR_MAX_RANK);
        return ctx_fail(ctx, &ctx->err);
    }
    eval_env env = api_eval_env(ctx, NULL);
    if (tensor_new(dtype, dims, (int32_t)rank, &env, out, &ctx->err))
        return ctx_fail(ctx, &ctx->err);
    return TILEOPT_OK;
}

tileopt_status tileopt_tensor_new(tileopt_ctx *ctx, int dtype, const int64_t *dims, size_t rank,
                                  const void *data, size_t nbytes, tileopt_tensor **out) {
    *out = NULL;
    if (dtype == DT_STRING)
        return ctx_fail(ctx, &(errbuf){TILEOPT_MISUSE, "tileopt_tensor_new: a STRING tensor "
                                                       "is made by tileopt_tensor_new_strings"});
    tensor *t;
    tileopt_status rc = new_tensor(ctx, dtype, dims, rank, &t);
    if (rc) return rc;
    uint64_t want = tensor_nbytes(t);
    if (nbytes != want || (!data && nbytes)) {
        err_set(&ctx->err, TILEOPT_MISUSE, "a %s tensor of %" PRIu64 " elements takes %" PRIu64
                " bytes, not %zu", dtype_name(dtype), tensor_numel(t), want, nbytes);
        tensor_free(t);
        return ctx_fail(ctx, &ctx->err);
    }
    if (nbytes) memcpy(t->data, data, nbytes);
    /* kernels read a bool as 0 or 1 */
    if (dtype == DT_BOOL)
        for (size_t i = 0; i < nbytes; i++) t->data[i] = t->data[i] != 0;
    return api_wrap_tensor(ctx, t, "", out);
}

tileopt_status tileopt_tensor_new_strings(tileopt_ctx *ctx, const int64_t *dims, size_t rank,
                                          const char *const *strs, const size_t *lens,
                                          tileopt_tensor **out) {
    *out = NULL;
    tensor *t;
    tileopt_status rc = new_tensor(ctx, DT_STRING, dims, rank, &t);
    if (rc) return rc;
    uint64_t n = tensor_numel(t);
    if (n && (!strs || !lens)) {
        tensor_free(t);
        return ctx_fail(ctx, &(errbuf){TILEOPT_MISUSE, "tileopt_tensor_new_strings: NULL "
                                                       "strings"});
    }
    for (uint64_t i = 0; i < n; i++) {
        if ((!strs[i] && lens[i]) || tensor_set_string(t, i, strs[i], lens[i], &ctx->err)) {
            if (!strs[i] && lens[i])
                err_set(&ctx->err, TILEOPT_MISUSE, "string %" PRIu64 " is NULL", i);
            tensor_free(t);
            return ctx_fail(ctx, &ctx->err);
        }
    }
    return api_wrap_tensor(ctx, t, "", out);
}

/* A sequence or optional holding the tensors of items[0..n). */
static tileopt_status new_value(tileopt_ctx *ctx, int32_t kind, int dtype,
                                const tileopt_tensor *const *items, size_t n,
                                tileopt_tensor **out) {
    *out = NULL;
    if (!items && n) return ctx_fail(ctx, &(errbuf){TILEOPT_MISUSE, "a new value: NULL items"});
    if (dtype && !dtype_valid(dtype)) {
        err_set(&ctx->err, TILEOPT_INVALID, "unknown element type %d", dtype);
        return ctx_fail(ctx, &ctx->err);
    }
    tensor *v;
    if (value_new(kind, dtype, n, &v, &ctx->err)) return ctx_fail(ctx, &ctx->err);
    for (size_t i = 0; i < n; i++) {
        if (!items[i] || value_put(v, i, items[i]->t, &ctx->err)) {
            if (!items[i]) err_set(&ctx->err, TILEOPT_MISUSE, "item %zu is NULL", i);
            else err_prefix(&ctx->err, "item %zu: ", i);
            tensor_free(v);
            return ctx_fail(ctx, &ctx->err);
        }
    }
    return api_wrap_tensor(ctx, v, "", out);
}

tileopt_status tileopt_tensor_new_sequence(tileopt_ctx *ctx, int dtype,
                                           const tileopt_tensor *const *items, size_t n,
                                           tileopt_tensor **out) {
    return new_value(ctx, EVAL_SEQUENCE, dtype, items, n, out);
}

tileopt_status tileopt_tensor_new_optional(tileopt_ctx *ctx, const tileopt_tensor *item,
                                           tileopt_tensor **out) {
    return new_value(ctx, EVAL_OPTIONAL, 0, &item, item ? 1 : 0, out);
}

/* The handle's tensor laid out row-major: itself, or a broadcast or Tile view
** materialized once into t->plain (t->t stays, so dims handed out stay valid). */
static const tensor *plain_of(tileopt_ctx *ctx, tileopt_tensor *t, int32_t want_string,
                              const char *what) {
    if (!t) {
        err_set(&ctx->err, TILEOPT_MISUSE, "%s: NULL tensor", what);
        ctx_fail(ctx, &ctx->err);
        return NULL;
    }
    if (t->t->kind != EVAL_TENSOR || (t->t->elem == DT_STRING) != want_string) {
        char shape[256];
        api_shape_text(t->t, shape, sizeof shape);
        err_set(&ctx->err, TILEOPT_MISUSE, "%s: the value is %s%s", what, shape,
                want_string ? ", not a STRING tensor" : "");
        ctx_fail(ctx, &ctx->err);
        return NULL;
    }
    if (tensor_is_contiguous(t->t)) return t->t;
    eval_env env = api_eval_env(ctx, NULL);
    if (!t->plain && tensor_contiguous(t->t, &env, &t->plain, &ctx->err)) {
        ctx_fail(ctx, &ctx->err);
        return NULL;
    }
    return t->plain;
}

tileopt_status tileopt_tensor_data(tileopt_ctx *ctx, tileopt_tensor *tensor_h,
                                   const void **data, size_t *nbytes) {
    *data = NULL;
    *nbytes = 0;
    const tensor *t = plain_of(ctx, tensor_h, 0, "tileopt_tensor_data");
    if (!t) return ctx->err.code;
    *data = t->data;
    *nbytes = (size_t)tensor_nbytes(t);
    return TILEOPT_OK;
}

tileopt_status tileopt_tensor_string(tileopt_ctx *ctx, tileopt_tensor *tensor_h, size_t i,
                                     const char **s, size_t *len) {
    *s = NULL;
    *len = 0;
    const tensor *t = plain_of(ctx, tensor_h, 1, "tileopt_tensor_string");
    if (!t) return ctx->err.code;
    if (i >= tensor_numel(t)) {
        err_set(&ctx->err, TILEOPT_MISUSE, "string %zu of a tensor of %" PRIu64, i,
                tensor_numel(t));
        return ctx_fail(ctx, &ctx->err);
    }
    const graph_bytes *b = (const graph_bytes *)(const void *)t->data + i;
    *s = b->len ? (const char *)b->data : "";
    *len = b->len;
    return TILEOPT_OK;
}

size_t tileopt_tensor_items(const tileopt_tensor *value) {
    return value && value->t->kind != EVAL_TENSOR ? value->t->n_items : 0;
}

tileopt_status tileopt_tensor_item(tileopt_ctx *ctx, const tileopt_tensor *value, size_t i,
                                   tileopt_tensor **out) {
    *out = NULL;
    if (!value || i >= tileopt_tensor_items(value)) {
        err_set(&ctx->err, TILEOPT_MISUSE, "item %zu of a value of %zu items", i,
                tileopt_tensor_items(value));
        return ctx_fail(ctx, &ctx->err);
    }
    tensor *t = tensor_ref(value->t->items[i]);
    if (!t) return ctx_fail(ctx, &(errbuf){TILEOPT_NOMEM, "out of memory"});
    return api_wrap_tensor(ctx, t, value->name, out);
}

/* ---------------------------------------------------- comparing and printing */

bool api_bits_for(int32_t want, const tensor *t) {
    bool float8 = want == DT_FLOAT8E4M3FN || want == DT_FLOAT8E4M3FNUZ ||
                  want == DT_FLOAT8E5M2 || want == DT_FLOAT8E5M2FNUZ;
    return (want == DT_BFLOAT16 && t->elem == DT_UINT16) || (float8 && t->elem == DT_UINT8);
}

void api_shape_text(const tensor *t, char *buf, size_t cap) {
    if (t->kind == EVAL_SEQUENCE) {
        snprintf(buf, cap, "a sequence of %zu %s tensors", t->n_items,
                 t->elem ? dtype_name(t->elem) : "?");
        return;
    }
    if (t->kind == EVAL_OPTIONAL) {
        char in[200] = "";
        if (t->n_items) api_shape_text(t->items[0], in, sizeof in);
        snprintf(buf, cap, t->n_items ? "an optional of %s" : "an empty optional%s", in);
        return;
    }
    size_t len = (size_t)snprintf(buf, cap, "%s [", dtype_name(t->elem));
    for (int32_t i = 0; i < t->rank && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, i ? "," : "", t->dims[i]);
    if (len < cap) snprintf(buf + len, cap - len, "]");
}

static int compare_tensors(const tensor *expected, const tensor *actual, errbuf *err) {
    tensor *e = tensor_ref((tensor *)expected);
    if (!e) return err_set(err, TILEOPT_NOMEM, "out of memory");
    if (api_bits_for(actual->elem, e)) e->elem = actual->elem;
    tensor_diff d;
    int rc = tensor_compare(e, actual, COMPARE_RTOL, COMPARE_ATOL, &d, err);
    if (!rc && !d.same_shape) {
        char se[256], sa[256];
        api_shape_text(e, se, sizeof se);
        api_shape_text(actual, sa, sizeof sa);
        rc = err_set(err, TILEOPT_MISMATCH, "expected %s, got %s", se, sa);
    } else if (!rc && d.n_bad) {
        rc = err_set(err, TILEOPT_MISMATCH,
                     "%" PRIu64 " of %" PRIu64 " values differ; first at index %" PRIu64
                     ": expected %s, got %s (max abs diff %.6g, max rel diff %.6g)",
                     d.n_bad, tensor_numel(actual), d.first_bad, d.expected, d.actual,
                     d.max_abs, d.max_rel);
    }
    tensor_free(e);
    return rc;
}

/* Sequences and optionals: the kinds and item counts, then item by item with
** the tolerance of tensors; the message names the first item that differs. */
static int compare_values(const tensor *e, const tensor *a, errbuf *err) {
    if (e->kind == EVAL_TENSOR && a->kind == EVAL_TENSOR) return compare_tensors(e, a, err);
    if (e->kind != a->kind || e->n_items != a->n_items) {
        char se[256], sa[256];
        api_shape_text(e, se, sizeof se);
        api_shape_text(a, sa, sizeof sa);
        return err_set(err, TILEOPT_MISMATCH, "expected %s, got %s", se, sa);
    }
    for (size_t i = 0; i < a->n_items; i++) {
        int rc = compare_values(e->items[i], a->items[i], err);
        if (rc && a->kind == EVAL_SEQUENCE) err_prefix(err, "item %zu: ", i);
        if (rc) return rc;
    }
    return TILEOPT_OK;
}

tileopt_status tileopt_tensor_compare(tileopt_ctx *ctx, const tileopt_tensor *expected,
                                      const tileopt_tensor *actual) {
    if (!expected || !actual)
        return ctx_fail(ctx, &(errbuf){TILEOPT_MISUSE, "tileopt_tensor_compare: NULL tensor"});
    err_clear(&ctx->err);
    int rc = compare_values(expected->t, actual->t, &ctx->err);
    return rc ? ctx_fail(ctx, &ctx->err) : TILEOPT_OK;
}

static char *format_tensor(const tensor *t, size_t max_values) {
    uint64_t n = tensor_numel(t), shown = n < max_values ? n : max_values;
    /* one value prints in at most 96 bytes; a shape in at most 21 per dim */
    size_t cap = 64 + (size_t)t->rank * 22 + (size_t)shown * 98 + 8;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    api_shape_text(t, buf, cap);
    size_t len = strlen(buf);
    len += (size_t)snprintf(buf + len, cap - len, " = [");
    for (uint64_t k = 0; k < shown; k++) {
        char v[96];
        tensor_format(t, k, v, sizeof v);
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", k ? ", " : "", v);
    }
    snprintf(buf + len, cap - len, "%s]", n > shown ? ", ..." : "");
    return buf;
}

/* a + b into a new string; frees both (either may be NULL: then NULL) */
static char *concat_free(char *a, char *b) {
    char *r = NULL;
    if (a && b) {
        size_t la = strlen(a), lb = strlen(b);
        if ((r = malloc(la + lb + 1))) {
            memcpy(r, a, la);
            memcpy(r + la, b, lb + 1);
        }
    }
    free(a);
    free(b);
    return r;
}

/* Sequences show their first max_values items, each as a tensor is shown. */
static char *format_value(const tensor *t, size_t max_values) {
    if (t->kind == EVAL_TENSOR) return format_tensor(t, max_values);
    if (t->kind == EVAL_OPTIONAL)
        return t->n_items ? concat_free(dup_str("optional: "),
                                        format_value(t->items[0], max_values))
                          : dup_str("empty optional");
    char head[128];
    snprintf(head, sizeof head, "sequence of %zu %s tensors: [", t->n_items,
             t->elem ? dtype_name(t->elem) : "?");
    char *r = dup_str(head);
    size_t shown = t->n_items < max_values ? t->n_items : max_values;
    for (size_t i = 0; i < shown && r; i++)
        r = concat_free(concat_free(r, dup_str(i ? "; " : "")),
                        format_tensor(t->items[i], max_values));
    return concat_free(r, dup_str(t->n_items > shown ? "; ...]" : "]"));
}

tileopt_status tileopt_tensor_format(tileopt_ctx *ctx, const tileopt_tensor *value,
                                     size_t max_values, char **out) {
    *out = NULL;
    if (!value)
        return ctx_fail(ctx, &(errbuf){TILEOPT_MISUSE, "tileopt_tensor_format: NULL tensor"});
    *out = format_value(value->t, max_values);
    return *out ? TILEOPT_OK : ctx_fail(ctx, &(errbuf){TILEOPT_NOMEM, "out of memory"});
}


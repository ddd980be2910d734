/*
** Public API: tensors (load, save, inspect), running a model in the built-in
** evaluator, tileopt_tile, and verifying an optimized model against its input.
*/
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eval/eval.h"
#include "api/ctx.h"

/* rtol/atol of ONNX's backend tests, the one place the tolerances of verify,
** run --test-dir and tileopt_tensor_compare are set */
#define COMPARE_RTOL 1e-3
#define COMPARE_ATOL 1e-7
/* The value a symbolic or unknown dim takes in generated inputs: the leading
** axis (the batch, for every exporter) is VERIFY_DIM; the other axes take the
** sizes below in turn until the input model runs, since sequences and images
** shorter than a model's kernels and strides make it fail (an audio model's
** framing convolution, an OCR model's width). */
#define VERIFY_DIM 2
static const int64_t verify_sizes[] = {VERIFY_DIM, 64, 512};

/* ------------------------------------------------------------------ tensors */

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Wrap t (taken over) in a public handle named name. */
static tileopt_status wrap_tensor(tileopt_ctx *ctx, tensor *t, const char *name,
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
    if (tensor_decode(data, size, &ctx->opt.eval_lim, &t, &ctx->err))
        return ctx_fail(ctx, &ctx->err);
    return wrap_tensor(ctx, t, t->name, out);
}

static int read_file(const char *path, uint64_t max, void **data, size_t *size, errbuf *err) {
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
    uint64_t max = ctx->opt.eval_lim.max_tensor_bytes + ((uint64_t)1 << 20);
    if (read_file(path, max, &data, &size, &ctx->err)) return ctx_fail(ctx, &ctx->err);
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
    if (tensor_encode(t->t, t->name, &bytes, &size, &ctx->err)) return ctx_fail(ctx, &ctx->err);
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
    uint64_t max = ctx->opt.eval_lim.max_tensor_bytes + ((uint64_t)1 << 20);
    if (read_file(path, max, &data, &size, &ctx->err)) return ctx_fail(ctx, &ctx->err);
    tensor *t = NULL;
    int rc = value_decode(data, size, kind, elem, &ctx->opt.eval_lim, &t, &ctx->err);
    free(data);
    if (rc) {
        /* the bytes do not say which message they hold: say what they were read as */
        if (!vi) err_prefix(&ctx->err, "%s: ", path);
        else err_prefix(&ctx->err, "%s (read as %s, as graph %s '%s' declares): ", path,
                        value_kind_name(kind), io, vi->name);
        return ctx_fail(ctx, &ctx->err);
    }
    return wrap_tensor(ctx, t, t->name ? t->name : vi ? vi->name : "", out);
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

/* ------------------------------------------------------------------ run */

/* ONNX's test data stores bfloat16 tensors as UINT16 (numpy has no bfloat16): such
** a tensor where a BFLOAT16 one belongs is read as the bits it holds. */
static bool bf16_bits(int32_t want, const tensor *t) {
    return want == DT_BFLOAT16 && t->elem == DT_UINT16;
}

static void shape_text(const tensor *t, char *buf, size_t cap) {
    if (t->kind == EVAL_SEQUENCE) {
        snprintf(buf, cap, "a sequence of %zu %s tensors", t->n_items,
                 t->elem ? dtype_name(t->elem) : "?");
        return;
    }
    if (t->kind == EVAL_OPTIONAL) {
        char in[200] = "";
        if (t->n_items) shape_text(t->items[0], in, sizeof in);
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
    if (bf16_bits(actual->elem, e)) e->elem = DT_BFLOAT16;
    tensor_diff d;
    int rc = tensor_compare(e, actual, COMPARE_RTOL, COMPARE_ATOL, &d, err);
    if (!rc && !d.same_shape) {
        char se[256], sa[256];
        shape_text(e, se, sizeof se);
        shape_text(actual, sa, sizeof sa);
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
        shape_text(e, se, sizeof se);
        shape_text(a, sa, sizeof sa);
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
    shape_text(t, buf, cap);
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

tileopt_status tileopt_model_run(tileopt_ctx *ctx, tileopt_model *model,
                                 tileopt_tensor *const *inputs, size_t n_inputs,
                                 tileopt_tensor ***outputs, size_t *n_outputs) {
    *outputs = NULL;
    *n_outputs = 0;
    tensor **in = calloc(n_inputs ? n_inputs : 1, sizeof *in);
    if (!in) return ctx_fail(ctx, &(errbuf){TILEOPT_NOMEM, "out of memory"});
    int rc = TILEOPT_OK;
    graph *g = model->g->main;
    size_t k = 0;
    for (size_t i = 0; i < g->pb->n_input && k < n_inputs && !rc; i++) {
        graph_value *v = graph_find(g, g->pb->input[i]->name);
        if (v && v->initializer >= 0) continue;
        tensor *t = inputs[k] ? inputs[k]->t : NULL;
        in[k] = t ? tensor_ref(t) : NULL;
        if (t && !in[k]) rc = err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
        else if (t && v && bf16_bits(v->type.elem, t)) in[k]->elem = DT_BFLOAT16;
        k++;
    }
    for (; k < n_inputs && !rc; k++) {
        in[k] = inputs[k] && inputs[k]->t ? tensor_ref(inputs[k]->t) : NULL;
        if (inputs[k] && inputs[k]->t && !in[k])
            rc = err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    }
    tensor **outs = NULL;
    size_t no = 0;
    if (!rc)
        rc = eval_graph(model->g, in, n_inputs, &outs, &no, &ctx->opt.eval_lim, &ctx->err);
    for (size_t i = 0; i < n_inputs; i++) tensor_free(in[i]);
    free(in);
    if (rc) return ctx_fail(ctx, &ctx->err);
    tileopt_tensor **res = calloc(no ? no : 1, sizeof *res);
    if (!res) rc = err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    Onnx__GraphProto *pb = model->g->main->pb;
    for (size_t i = 0; i < no && !rc; i++) {
        /* The caller may free the model first: no output may point into it. */
        tensor *d = NULL;
        rc = tensor_detach(outs[i], &ctx->opt.eval_lim, &d, &ctx->err);
        if (!rc) rc = wrap_tensor(ctx, d, pb->output[i]->name, &res[i]);
    }
    for (size_t i = 0; i < no; i++) tensor_free(outs[i]);
    free(outs);
    if (rc) {
        if (res)
            for (size_t i = 0; i < no; i++) tileopt_tensor_free(res[i]);
        free(res);
        return ctx_fail(ctx, &ctx->err);
    }
    *outputs = res;
    *n_outputs = no;
    return TILEOPT_OK;
}

tileopt_status tileopt_tile(tileopt_ctx *ctx, const tileopt_tensor *input,
                            const int64_t *repeats, size_t n_repeats, tileopt_tensor **out) {
    *out = NULL;
    tensor *t = NULL;
    if (!input || (!repeats && n_repeats))
        return ctx_fail(ctx, &(errbuf){TILEOPT_MISUSE, "tileopt_tile: NULL argument"});
    if (kernel_tile_promoted(input->t, repeats, n_repeats, &ctx->opt.eval_lim, &t, &ctx->err))
        return ctx_fail(ctx, &ctx->err);
    return wrap_tensor(ctx, t, input->name, out);
}

/* ------------------------------------------------------------------ verify */

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* uniform in [-1, 1) */
static double rng_unit(uint64_t *s) {
    return (double)(rng_next(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/*
** Random values by element type. Floats lie in [-1, 1); integers in [0, 4], so
** inputs that end up as indices, repeats or shapes stay valid for small dims;
** 16-bit floats are built from bits (magnitudes 1/16 .. 1); 8-bit floats are
** small positive finite codes in every variant.
*/
static void fill_random(tensor *t, uint64_t *s) {
    uint64_t n = tensor_numel(t);
    uint8_t *p = t->data;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t r = rng_next(s);
        switch (t->elem) {
        case DT_FLOAT: { float f = (float)rng_unit(s); memcpy(p + 4 * i, &f, 4); break; }
        case DT_DOUBLE: { double d = rng_unit(s); memcpy(p + 8 * i, &d, 8); break; }
        case DT_COMPLEX64: {
            float f[2] = {(float)rng_unit(s), (float)rng_unit(s)};
            memcpy(p + 8 * i, f, 8);
            break;
        }
        case DT_COMPLEX128: {
            double d[2] = {rng_unit(s), rng_unit(s)};
            memcpy(p + 16 * i, d, 16);
            break;
        }
        case DT_FLOAT16: {
            uint16_t h = (uint16_t)(((r & 1) << 15) | ((11 + (r >> 1) % 4) << 10) |
                                    ((r >> 8) & 0x3ff));
            memcpy(p + 2 * i, &h, 2);
            break;
        }
        case DT_BFLOAT16: {
            uint16_t h = (uint16_t)(((r & 1) << 15) | ((123 + (r >> 1) % 4) << 7) |
                                    ((r >> 8) & 0x7f));
            memcpy(p + 2 * i, &h, 2);
            break;
        }
        case DT_FLOAT8E4M3FN: case DT_FLOAT8E4M3FNUZ: case DT_FLOAT8E5M2:
        case DT_FLOAT8E5M2FNUZ:
            p[i] = (uint8_t)(r & 0x3f);
            break;
        case DT_BOOL: p[i] = (uint8_t)(r & 1); break;
        case DT_INT8: case DT_UINT8: p[i] = (uint8_t)(r % 5); break;
        case DT_INT16: case DT_UINT16: { uint16_t v = (uint16_t)(r % 5); memcpy(p + 2 * i, &v, 2); break; }
        case DT_INT32: case DT_UINT32: { uint32_t v = (uint32_t)(r % 5); memcpy(p + 4 * i, &v, 4); break; }
        case DT_INT64: case DT_UINT64: { uint64_t v = r % 5; memcpy(p + 8 * i, &v, 8); break; }
        default: break;
        }
    }
}

/* A random string tensor: values drawn from a fixed set of static strings, so
** the elements can point at them for as long as the program runs. */
static int random_strings(const int64_t *dims, int32_t rank, uint64_t *s,
                          const eval_limits *lim, tensor **out, errbuf *err) {
    /* numbers, so a Cast from string has something to parse */
    static const char *const words[] = {"0", "1", "-2.5", "0.125", "3"};
    int rc = tensor_new(DT_STRING, dims, rank, lim, out, err);
    if (rc) return rc;
    graph_bytes *v = (graph_bytes *)(void *)(*out)->data;
    for (uint64_t i = 0; i < tensor_numel(*out); i++) {
        const char *w = words[rng_next(s) % 5];
        v[i].data = (const uint8_t *)w;
        v[i].len = strlen(w);
    }
    return TILEOPT_OK;
}

typedef struct verify_run {
    tensor **inputs;
    size_t n_inputs;
    tensor **out_before, **out_after;
    size_t n_before, n_after;
} verify_run;

/* Inputs for the graph inputs of m, symbolic dims past the leading axis at
** size `inner`; records them under "inputs". *why set (and TILEOPT_OK
** returned) when an input's type or rank is unknown. *sized tells whether some
** dim took `inner`. */
static int inputs_sized(tileopt_ctx *ctx, graph_model *m, cJSON *rep, verify_run *vr,
                        int64_t inner, bool *sized, cJSON *named, char *why, size_t why_cap) {
    graph *g = m->main;
    uint64_t seed = ctx->opt.seed;
    cJSON *arr = cJSON_AddArrayToObject(rep, "inputs");
    vr->inputs = calloc(g->pb->n_input ? g->pb->n_input : 1, sizeof *vr->inputs);
    if (!vr->inputs) return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    for (size_t i = 0; i < g->pb->n_input; i++) {
        const char *name = g->pb->input[i]->name;
        graph_value *v = graph_find(g, name);
        if (!v || v->initializer >= 0) continue;
        const graph_type *ty = &v->type;
        graph_kind kind = graph_type_kind(g->pb->input[i]->type, NULL);
        if (kind != GRAPH_KIND_TENSOR && kind != GRAPH_KIND_NONE) {
            snprintf(why, why_cap, "input '%s' is %s; verify generates tensors only", name,
                     value_kind_name(kind));
            return TILEOPT_OK;
        }
        if (!dtype_valid(ty->elem)) {
            snprintf(why, why_cap, "input '%s' has no known element type", name);
            return TILEOPT_OK;
        }
        if (ty->rank < 0 || ty->rank > TENSOR_MAX_RANK) {
            snprintf(why, why_cap, "input '%s' has no known rank", name);
            return TILEOPT_OK;
        }
        int64_t dims[TENSOR_MAX_RANK];
        cJSON *in = cJSON_CreateObject(), *shape = cJSON_CreateArray(), *sym = NULL;
        cJSON_AddItemToArray(arr, in);
        cJSON_AddStringToObject(in, "name", name);
        cJSON_AddStringToObject(in, "dtype", dtype_name(ty->elem));
        cJSON_AddItemToObject(in, "shape", shape);
        for (int32_t k = 0; k < ty->rank; k++) {
            const char *dn = ty->dims[k] < 0 && ty->syms ? ty->syms[k] : NULL;
            const cJSON *seen = dn ? cJSON_GetObjectItemCaseSensitive(named, dn) : NULL;
            dims[k] = ty->dims[k] >= 0 ? ty->dims[k]
                      : seen           ? (int64_t)seen->valuedouble
                      : k == 0         ? VERIFY_DIM
                                       : inner;
            if (dn && !seen) cJSON_AddNumberToObject(named, dn, (double)dims[k]);
            if (ty->dims[k] < 0 && !seen && k > 0) *sized = true;
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)dims[k]));
            if (ty->dims[k] >= 0) continue;
            char key[256];
            if (ty->syms && ty->syms[k]) snprintf(key, sizeof key, "%s", ty->syms[k]);
            else snprintf(key, sizeof key, "%s[%d]", name, (int)k);
            if (!sym) sym = cJSON_AddObjectToObject(in, "symbolic");
            if (!cJSON_GetObjectItemCaseSensitive(sym, key))
                cJSON_AddNumberToObject(sym, key, (double)dims[k]);
        }
        tensor *t = NULL;
        int rc;
        if (ty->elem == DT_STRING) {
            rc = random_strings(dims, ty->rank, &seed, &ctx->opt.eval_lim, &t, &ctx->err);
        } else {
            rc = tensor_new(ty->elem, dims, ty->rank, &ctx->opt.eval_lim, &t, &ctx->err);
            if (!rc) fill_random(t, &seed);
        }
        if (rc) return err_prefix(&ctx->err, "input '%s': ", name);
        vr->inputs[vr->n_inputs++] = t;
    }
    return TILEOPT_OK;
}

static int make_inputs(tileopt_ctx *ctx, graph_model *m, cJSON *rep, verify_run *vr,
                       int64_t inner, bool *sized, char *why, size_t why_cap) {
    /* a named dim takes one size in every input: the first place it occurs decides */
    cJSON *named = cJSON_CreateObject();
    if (!named) return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    int rc = inputs_sized(ctx, m, rep, vr, inner, sized, named, why, why_cap);
    cJSON_Delete(named);
    return rc;
}

static void verify_free(verify_run *vr) {
    for (size_t i = 0; i < vr->n_inputs; i++) tensor_free(vr->inputs[i]);
    for (size_t i = 0; i < vr->n_before; i++) tensor_free(vr->out_before[i]);
    for (size_t i = 0; i < vr->n_after; i++) tensor_free(vr->out_after[i]);
    free(vr->inputs);
    free(vr->out_before);
    free(vr->out_after);
}

/* The comma-separated list from eval_missing_ops into a JSON array (deduped). */
static void add_ops(cJSON *ops, const char *list) {
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        bool dup = false;
        const cJSON *o;
        cJSON_ArrayForEach(o, ops) if (strcmp(o->valuestring, tok) == 0) dup = true;
        if (!dup) cJSON_AddItemToArray(ops, cJSON_CreateString(tok));
    }
}

tileopt_status tileopt_model_verify(tileopt_ctx *ctx, tileopt_model *before,
                                    tileopt_model *after) {
    if (!before || !after)
        return ctx_fail(ctx, &(errbuf){TILEOPT_MISUSE, "tileopt_model_verify: NULL model"});
    if (ctx->report) cJSON_DeleteItemFromObjectCaseSensitive(ctx->report, "verify");
    cJSON *rep = ctx_report_section(ctx, "verify", 0);
    cJSON *own = NULL;
    if (!rep) rep = own = cJSON_CreateObject(); /* no report begun: compute anyway */
    if (!rep) return ctx_fail(ctx, &(errbuf){TILEOPT_NOMEM, "out of memory"});
    cJSON_AddNumberToObject(rep, "seed", (double)ctx->opt.seed);
    verify_run vr = {0};
    int rc = TILEOPT_OK;
    char why[4096] = "";
    const char *verdict = "match";

    char m1[1024], m2[1024];
    size_t n1 = eval_missing_ops(before->g, m1, sizeof m1);
    size_t n2 = eval_missing_ops(after->g, m2, sizeof m2);
    if (n1 + n2) {
        cJSON *ops = cJSON_AddArrayToObject(rep, "ops");
        add_ops(ops, m1);
        add_ops(ops, m2);
        verdict = "skipped";
        /* each op named once, whether the input or the output holds it */
        size_t k = (size_t)snprintf(why, sizeof why, "the evaluator lacks ");
        const cJSON *o;
        cJSON_ArrayForEach(o, ops) if (k < sizeof why) k += (size_t)snprintf(
            why + k, sizeof why - k, "%s%s", o == ops->child ? "" : ", ", o->valuestring);
        goto done;
    }
    errbuf e;
    for (size_t attempt = 0;; attempt++) {
        bool sized = false;
        cJSON_DeleteItemFromObjectCaseSensitive(rep, "inputs");
        verify_free(&vr);
        memset(&vr, 0, sizeof vr);
        rc = make_inputs(ctx, before->g, rep, &vr, verify_sizes[attempt], &sized, why,
                         sizeof why);
        if (rc) goto done;
        if (why[0]) {
            verdict = "skipped";
            goto done;
        }
        err_clear(&e);
        if (!eval_graph(before->g, vr.inputs, vr.n_inputs, &vr.out_before, &vr.n_before,
                        &ctx->opt.eval_lim, &e))
            break;
        if (!sized || attempt + 1 == countof(verify_sizes)) {
            /* Random inputs need not be valid for every model (data-dependent
            ** shapes, indices): no verdict either way. */
            verdict = "skipped";
            snprintf(why, sizeof why, "the input model does not run on generated inputs "
                     "(--input-shape fixes their dims): %s", e.msg);
            goto done;
        }
    }
    if (eval_graph(after->g, vr.inputs, vr.n_inputs, &vr.out_after, &vr.n_after,
                   &ctx->opt.eval_lim, &e)) {
        verdict = "mismatch";
        snprintf(why, sizeof why, "the output model fails where the input model runs: %s",
                 e.msg);
        rc = err_set(&ctx->err, TILEOPT_MISMATCH, "%s", why);
        goto done;
    }
    if (vr.n_before != vr.n_after) {
        verdict = "mismatch";
        snprintf(why, sizeof why, "the input model has %zu outputs, the output model %zu",
                 vr.n_before, vr.n_after);
        rc = err_set(&ctx->err, TILEOPT_MISMATCH, "%s", why);
        goto done;
    }
    cJSON *outs = cJSON_AddArrayToObject(rep, "outputs");
    Onnx__GraphProto *pb = after->g->main->pb;
    for (size_t i = 0; i < vr.n_after; i++) {
        tensor_diff d;
        if (tensor_compare(vr.out_before[i], vr.out_after[i], COMPARE_RTOL, COMPARE_ATOL, &d,
                           &ctx->err)) {
            rc = ctx->err.code;
            goto done;
        }
        bool ok = d.same_shape && d.n_bad == 0;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(outs, o);
        cJSON_AddStringToObject(o, "name", pb->output[i]->name);
        if (d.same_shape) {
            cJSON_AddNumberToObject(o, "max_abs_diff", d.max_abs);
            cJSON_AddNumberToObject(o, "max_rel_diff", d.max_rel);
        } else {
            cJSON_AddNullToObject(o, "max_abs_diff");
            cJSON_AddNullToObject(o, "max_rel_diff");
        }
        cJSON_AddBoolToObject(o, "match", ok);
        if (ok) continue;
        char msg[768], where[48] = "";
        const tensor *tb = vr.out_before[i], *ta = vr.out_after[i];
        if (d.bad_item >= 0) snprintf(where, sizeof where, " in item %" PRId64, d.bad_item);
        if (!d.same_shape && (tb->kind != EVAL_TENSOR || ta->kind != EVAL_TENSOR)) {
            char sb[256], sa[256];
            shape_text(tb, sb, sizeof sb);
            shape_text(ta, sa, sizeof sa);
            snprintf(msg, sizeof msg, "output '%s': %s vs %s%s", pb->output[i]->name, sb, sa,
                     where);
        } else if (!d.same_shape)
            snprintf(msg, sizeof msg, "output '%s': type or shape differs (%s rank %d vs %s rank %d)",
                     pb->output[i]->name, dtype_name(vr.out_before[i]->elem),
                     (int)vr.out_before[i]->rank, dtype_name(vr.out_after[i]->elem),
                     (int)vr.out_after[i]->rank);
        else
            snprintf(msg, sizeof msg,
                     "output '%s': %" PRIu64 " elements differ, first%s at index %" PRIu64
                     ": expected %s, got %s",
                     pb->output[i]->name, d.n_bad, where, d.first_bad, d.expected, d.actual);
        cJSON_AddStringToObject(o, "reason", msg);
        if (strcmp(verdict, "mismatch") != 0) {
            verdict = "mismatch";
            snprintf(why, sizeof why, "%s", msg);
            rc = err_set(&ctx->err, TILEOPT_MISMATCH, "%s", msg);
        }
    }
done:
    if (rc == TILEOPT_OK || rc == TILEOPT_MISMATCH) {
        cJSON_AddStringToObject(rep, "verdict", verdict);
        if (why[0]) cJSON_AddStringToObject(rep, "reason", why);
    }
    if (rc == TILEOPT_OK && ctx->opt.verify_strict && strcmp(verdict, "skipped") == 0)
        rc = err_set(&ctx->err, TILEOPT_UNSUPPORTED, "no verdict (--verify=strict): %s", why);
    verify_free(&vr);
    cJSON_Delete(own);
    return rc ? ctx_fail(ctx, &ctx->err) : TILEOPT_OK;
}

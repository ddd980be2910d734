/* The public API (include/tileopt.h): contexts, options, models, passes. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "api/ctx.h"
#include "shape/infer.h"
#include "passes/upgrade/opset_table.h"

static const char *const status_text[] = {
    [TILEOPT_OK] = "ok",
    [TILEOPT_ERROR] = "error",
    [TILEOPT_NOMEM] = "out of memory",
    [TILEOPT_IO] = "input/output error",
    [TILEOPT_PARSE] = "malformed protobuf",
    [TILEOPT_INVALID] = "invalid model or tensor",
    [TILEOPT_UNSUPPORTED] = "unsupported",
    [TILEOPT_LIMIT] = "resource limit exceeded",
    [TILEOPT_MISMATCH] = "outputs differ",
    [TILEOPT_MISUSE] = "bad argument",
};
_Static_assert(countof(status_text) == TILEOPT_STATUS_COUNT_,
               "one message per status");

const char *tileopt_status_str(tileopt_status status) {
    if ((unsigned)status >= TILEOPT_STATUS_COUNT_) return "unknown status";
    return status_text[status];
}

const char *tileopt_version(void) { return TILEOPT_VERSION; }
void tileopt_free(void *p) { free(p); }

tileopt_status ctx_fail(tileopt_ctx *ctx, const errbuf *err) {
    if (err != &ctx->err) ctx->err = *err;
    if (ctx->err.code == TILEOPT_OK) ctx->err.code = TILEOPT_ERROR;
    return ctx->err.code;
}

tileopt_status tileopt_ctx_new(tileopt_ctx **out) {
    *out = calloc(1, sizeof **out);
    if (!*out) return TILEOPT_NOMEM;
    pass_options_default(&(*out)->opt);
    (*out)->verify.seed = 1;
    return TILEOPT_OK;
}

void tileopt_ctx_free(tileopt_ctx *ctx) {
    if (!ctx) return;
    tbuf_cache_drop();
    api_report_free(ctx);
    for (size_t i = 0; i < ctx->n_input_shapes; i++) free(ctx->input_shapes[i].name);
    free(ctx->input_shapes);
    for (size_t i = 0; i < ctx->verify.n_shapes; i++) free(ctx->verify.shapes[i].name);
    free(ctx->verify.shapes);
    for (size_t i = 0; i < ctx->verify.n_files; i++) free(ctx->verify.files[i]);
    free(ctx->verify.files);
    free(ctx);
}

const char *tileopt_ctx_errmsg(const tileopt_ctx *ctx) { return ctx ? ctx->err.msg : ""; }

eval_env api_eval_env(const tileopt_ctx *ctx, const char *run_what) {
    return eval_env_of(&ctx->opt.lim, ctx->progress, run_what);
}

void tileopt_ctx_set_progress(tileopt_ctx *ctx, tileopt_progress_fn fn, void *user) {
    ctx->progress = (graph_progress){fn, user};
}

void tileopt_ctx_set_temp_hook(tileopt_ctx *ctx, tileopt_temp_fn fn, void *user) {
    ctx->temp_hook = fn;
    ctx->temp_user = user;
}

/* ---------------------------------------------------------------- options */

#define MAX_DEPTH_CEILING 256

typedef enum opt_kind {
    OPT_U64, OPT_BYTES, OPT_U32, OPT_OPSET, OPT_FACTOR, OPT_BOOL, OPT_SCOPE,
    OPT_SHAPE,               /* repeatable, kept in the context, not in pass_options */
    OPT_NAME,                /* a file name, kept in the context */
    OPT_VERIFY_SHAPE,        /* a size, or a shape like OPT_SHAPE's */
    OPT_PATH,                /* repeatable, kept in the context */
} opt_kind;

typedef struct opt_def {
    const char *name;
    opt_kind kind;
    size_t offset;           /* into the context */
} opt_def;

#define OPT(name, kind, field) {name, kind, offsetof(struct tileopt_ctx, field)}
static const opt_def options[] = {
    OPT("target-opset", OPT_OPSET, opt.target_opset),
    OPT("fold-limit", OPT_BYTES, opt.fold_limit),
    OPT("fold-max-growth", OPT_FACTOR, opt.fold_max_growth),
    OPT("fold-scope", OPT_SCOPE, opt.fold_scope_all),
    OPT("fuse-split", OPT_BOOL, opt.fuse_split),
    OPT("keep-initializer-inputs", OPT_BOOL, opt.keep_initializer_inputs),
    OPT("max-tensor-bytes", OPT_BYTES, opt.lim.max_tensor_bytes),
    OPT("max-eval-bytes", OPT_BYTES, opt.lim.max_eval_bytes),
    OPT("max-eval-steps", OPT_U64, opt.lim.max_eval_steps),
    OPT("max-depth", OPT_U32, opt.lim.max_depth),
    OPT("max-rank", OPT_U32, opt.lim.max_rank),
    OPT("seed", OPT_U64, verify.seed),
    OPT("verify-strict", OPT_BOOL, verify.strict),
    {"input-shape", OPT_SHAPE, 0},
    OPT("data-name", OPT_NAME, data_name),
    {"verify-shape", OPT_VERIFY_SHAPE, 0},
    {"verify-inputs", OPT_PATH, 0},
};
#undef OPT

static bool parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s || *s == '-') return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return false;
    *out = v;
    return true;
}

/*
** A size in bytes as GNU tools write it: a number with an optional suffix, K, M,
** G, T or KiB, MiB, GiB, TiB for powers of 1024, KB, MB, GB, TB for powers of
** 1000 (B alone for bytes), or "unlimited".
*/
static bool parse_bytes(const char *s, uint64_t *out) {
    if (s && strcmp(s, "unlimited") == 0) {
        *out = UINT64_MAX;
        return true;
    }
    if (!s || !*s || *s < '0' || *s > '9') return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno) return false;
    static const struct {
        const char *suffix;
        uint64_t scale;
    } units[] = {
        {"", 1}, {"B", 1},
        {"K", 1ull << 10}, {"KiB", 1ull << 10}, {"KB", 1000ull},
        {"M", 1ull << 20}, {"MiB", 1ull << 20}, {"MB", 1000000ull},
        {"G", 1ull << 30}, {"GiB", 1ull << 30}, {"GB", 1000000000ull},
        {"T", 1ull << 40}, {"TiB", 1ull << 40}, {"TB", 1000000000000ull},
    };
    for (size_t i = 0; i < countof(units); i++)
        if (strcmp(end, units[i].suffix) == 0)
            return !__builtin_mul_overflow((uint64_t)v, units[i].scale, out);
    return false;
}

/* Dims past this are no real input's: a typo, or a size that overflows the
** element count before any limit could say so. */
#define SHAPE_DIM_MAX ((int64_t)1 << 40)

/* "NAME:D1,D2,..." (NAME may hold ':' itself, as TensorFlow's "x:0" does: the last
** one separates; "NAME:" is a scalar) added to the list of option `flag`. The
** same name again replaces it. */
static tileopt_status add_shape(tileopt_ctx *ctx, const char *flag, const char *value,
                                api_input_shape **list, size_t *count) {
    const char *colon = value ? strrchr(value, ':') : NULL;
    if (!colon || colon == value)
        return err_set(&ctx->err, TILEOPT_MISUSE,
                       "--%s takes NAME:D1,D2,... , not '%s'", flag, value ? value : "");
    api_input_shape s = {.rank = 0};
    for (const char *p = colon + 1; *p;) {
        char *end;
        errno = 0;
        long long d = *p >= '0' && *p <= '9' ? strtoll(p, &end, 10) : -1;
        if (d < 0 || errno || (*end && *end != ',') || (*end == ',' && !end[1]) ||
            s.rank == TENSOR_MAX_RANK)
            return err_set(&ctx->err, TILEOPT_MISUSE,
                           "--%s '%s': dims are numbers 0 and up separated by ',' "
                           "(at most %d)", flag, value, TENSOR_MAX_RANK);
        if (d > SHAPE_DIM_MAX)
            return err_set(&ctx->err, TILEOPT_MISUSE, "--%s '%s': a dim of %lld is over %lld",
                           flag, value, d, (long long)SHAPE_DIM_MAX);
        s.dims[s.rank++] = d;
        p = *end ? end + 1 : end;
    }
    size_t nlen = (size_t)(colon - value);
    s.name = malloc(nlen + 1);
    if (!s.name) return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    memcpy(s.name, value, nlen);
    s.name[nlen] = '\0';
    for (size_t i = 0; i < *count; i++)
        if (strcmp((*list)[i].name, s.name) == 0) {
            free((*list)[i].name);
            (*list)[i] = s;
            return TILEOPT_OK;
        }
    api_input_shape *grown = realloc(*list, (*count + 1) * sizeof *grown);
    if (!grown) {
        free(s.name);
        return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    }
    *list = grown;
    (*list)[(*count)++] = s;
    return TILEOPT_OK;
}

/* --verify-shape: a bare size for every open dim, or one input's shape. */
static tileopt_status set_verify_shape(tileopt_ctx *ctx, const char *value) {
    if (value && strchr(value, ':'))
        return add_shape(ctx, "verify-shape", value, &ctx->verify.shapes, &ctx->verify.n_shapes);
    uint64_t u;
    if (!parse_u64(value, &u) || u > (uint64_t)SHAPE_DIM_MAX)
        return err_set(&ctx->err, TILEOPT_MISUSE, "--verify-shape takes a size from 0 to %lld "
                       "or NAME:D1,D2,..., not '%s'", (long long)SHAPE_DIM_MAX,
                       value ? value : "");
    ctx->verify.dim_given = true;
    ctx->verify.dim = (int64_t)u;
    return TILEOPT_OK;
}

static tileopt_status add_path(tileopt_ctx *ctx, const char *value) {
    if (!value || !*value)
        return err_set(&ctx->err, TILEOPT_MISUSE, "--verify-inputs takes a file or a folder");
    char **grown = realloc(ctx->verify.files, (ctx->verify.n_files + 1) * sizeof *grown);
    if (!grown) return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    ctx->verify.files = grown;
    if (!(grown[ctx->verify.n_files] = strdup(value)))
        return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    ctx->verify.n_files++;
    return TILEOPT_OK;
}

tileopt_status tileopt_ctx_set(tileopt_ctx *ctx, const char *name, const char *value) {
    const opt_def *o = NULL;
    for (size_t i = 0; i < countof(options); i++)
        if (strcmp(options[i].name, name) == 0) o = &options[i];
    if (!o) return err_set(&ctx->err, TILEOPT_MISUSE, "unknown option '%s'", name);
    if (o->kind == OPT_SHAPE)
        return add_shape(ctx, name, value, &ctx->input_shapes, &ctx->n_input_shapes);
    if (o->kind == OPT_VERIFY_SHAPE) return set_verify_shape(ctx, value);
    if (o->kind == OPT_PATH) return add_path(ctx, value);
    uint8_t *field = (uint8_t *)ctx + o->offset;
    uint64_t u;
    switch (o->kind) {
    case OPT_U64:
    case OPT_BYTES:
    case OPT_U32:
        if (!(o->kind == OPT_BYTES ? parse_bytes(value, &u) : parse_u64(value, &u)) ||
            (o->kind == OPT_U32 && (u == 0 || u > UINT32_MAX))) {
            if (o->kind == OPT_BYTES)
                return err_set(&ctx->err, TILEOPT_MISUSE, "--%s takes a size in bytes "
                               "(1048576, 512K, 16M, 1GiB, 2GB or unlimited), not '%s'", name,
                               value);
            break;
        }
        /* The loader's wire scan, protobuf-c's unpacker, the index, every pass and
        ** the evaluator recurse once per subgraph level: 256 levels stay well inside
        ** a default thread stack, under the sanitizers too (3,000 overflowed it). */
        if (strcmp(name, "max-depth") == 0 && u > MAX_DEPTH_CEILING)
            return err_set(&ctx->err, TILEOPT_MISUSE,
                           "--%s takes 1 to %d levels of subgraphs, not '%s'", name,
                           MAX_DEPTH_CEILING, value);
        if (o->kind == OPT_U32) {
            uint32_t v = (uint32_t)u;
            memcpy(field, &v, sizeof v);
        } else {
            memcpy(field, &u, sizeof u);
        }
        return TILEOPT_OK;
    case OPT_OPSET:
        if (!parse_u64(value, &u) || u < 1 || u > (uint64_t)opset_table_max_opset) {
            return err_set(&ctx->err, TILEOPT_MISUSE, "--%s takes an opset from 1 to %d, not '%s'",
                           name, (int)opset_table_max_opset, value);
        }
        ctx->opt.target_opset = (int64_t)u;
        return TILEOPT_OK;
    case OPT_FACTOR: {
        char *end;
        errno = 0;
        double d = strtod(value, &end);
        if (errno || *end || !(d >= 0) || d > 1e12) break;
        memcpy(field, &d, sizeof d);
        return TILEOPT_OK;
    }
    case OPT_BOOL:
        if (strcmp(value, "0") && strcmp(value, "1")) break;
        *(bool *)field = value[0] == '1';
        return TILEOPT_OK;
    case OPT_SHAPE:
    case OPT_VERIFY_SHAPE:
    case OPT_PATH:
        break;
    case OPT_NAME:
        /* one component beside OUT; the save checks the rest (not OUT itself) */
        if (!value[0] || strchr(value, '/') || !strcmp(value, ".") || !strcmp(value, "..") ||
            strlen(value) >= sizeof ctx->data_name)
            return err_set(&ctx->err, TILEOPT_MISUSE,
                           "--%s takes a file name (no '/'), not '%s'", name, value);
        memcpy(field, value, strlen(value) + 1);
        return TILEOPT_OK;
    case OPT_SCOPE:
        if (strcmp(value, "tile") && strcmp(value, "all")) {
            return err_set(&ctx->err, TILEOPT_MISUSE, "--%s takes 'tile' or 'all', not '%s'",
                           name, value);
        }
        *(bool *)field = strcmp(value, "all") == 0;
        return TILEOPT_OK;
    }
    return err_set(&ctx->err, TILEOPT_MISUSE, "bad value '%s' for --%s", value, name);
}

uint64_t tileopt_memory_budget(unsigned workers) { return graph_memory_budget(workers); }

/* ------------------------------------------------------------------ models */

/* Wrap a loaded model, with the input shapes the context fixes applied. */
static tileopt_status wrap_model(tileopt_ctx *ctx, graph_model *g, tileopt_model **out) {
    for (size_t i = 0; i < ctx->n_input_shapes; i++) {
        const api_input_shape *s = &ctx->input_shapes[i];
        if (graph_fix_input_shape(g, s->name, s->dims, s->rank, &ctx->err)) {
            graph_model_free(g);
            return ctx_fail(ctx, &ctx->err);
        }
    }
    *out = malloc(sizeof **out);
    if (!*out) {
        graph_model_free(g);
        return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    }
    (*out)->g = g;
    return TILEOPT_OK;
}

tileopt_status tileopt_model_load(tileopt_ctx *ctx, const char *path, tileopt_model **out) {
    *out = NULL;
    graph_model *g;
    if (graph_model_load_path(path, &ctx->opt.lim, &ctx->progress, &g, &ctx->err))
        return ctx_fail(ctx, &ctx->err);
    return wrap_model(ctx, g, out);
}

tileopt_status tileopt_model_load_buffer(tileopt_ctx *ctx, const void *data, size_t size,
                                         const char *base_dir, tileopt_model **out) {
    *out = NULL;
    graph_model *g;
    if (graph_model_load_buffer(data, size, base_dir, &ctx->opt.lim, &ctx->progress, &g,
                                &ctx->err))
        return ctx_fail(ctx, &ctx->err);
    return wrap_model(ctx, g, out);
}

void tileopt_model_free(tileopt_model *model) {
    if (!model) return;
    graph_model_free(model->g);
    free(model);
}

tileopt_status tileopt_model_save(tileopt_ctx *ctx, tileopt_model *model, const char *path) {
    model->g->progress = ctx->progress;
    model->g->temp_hook = ctx->temp_hook;
    model->g->temp_user = ctx->temp_user;
    model->g->data_name = ctx->data_name[0] ? ctx->data_name : NULL;
    int rc = graph_model_save_path(model->g, path, &ctx->err);
    model->g->progress = (graph_progress){0};
    model->g->temp_hook = NULL;
    model->g->data_name = NULL;
    if (rc) return ctx_fail(ctx, &ctx->err);
    return TILEOPT_OK;
}

tileopt_status tileopt_model_check_output(tileopt_ctx *ctx, tileopt_model *model,
                                          const char *path) {
    if (!model || !path)
        return ctx_fail(ctx, &(errbuf){TILEOPT_MISUSE, "tileopt_model_check_output: NULL argument"});
    if (graph_model_check_target(model->g, path, &ctx->err)) return ctx_fail(ctx, &ctx->err);
    return TILEOPT_OK;
}

tileopt_status tileopt_model_save_buffer(tileopt_ctx *ctx, tileopt_model *model, void **out,
                                         size_t *size) {
    if (graph_model_save_buffer(model->g, out, size, &ctx->err)) return ctx_fail(ctx, &ctx->err);
    return TILEOPT_OK;
}

tileopt_status tileopt_model_infer_shapes(tileopt_ctx *ctx, tileopt_model *model) {
    if (infer_write_value_info(model->g, &ctx->err)) return ctx_fail(ctx, &ctx->err);
    return TILEOPT_OK;
}

/* ------------------------------------------------------------------ passes */

const char *tileopt_pass_name(size_t i) {
    return i < pass_count ? pass_registry[i].name : NULL;
}

/* What loading changed in the model (duplicate opset imports merged) goes to
** the warnings of the first pass run on it, so the report says so. */
static void take_load_warning(tileopt_ctx *ctx, tileopt_model *model) {
    if (!model->g->load_warning) return;
    pass_strings_add(&ctx->results.warnings, model->g->load_warning);
    model->g->load_warning = NULL;
}

static pass_run_env run_env(const tileopt_ctx *ctx) {
    return (pass_run_env){&ctx->opt, ctx->progress};
}

tileopt_status tileopt_pass_run(tileopt_ctx *ctx, tileopt_model *model, const char *name) {
    const pass_def *p = pass_find(name);
    if (!p) return err_set(&ctx->err, TILEOPT_MISUSE, "unknown pass '%s'", name);
    take_load_warning(ctx, model);
    pass_run_env env = run_env(ctx);
    if (pass_run_one(model->g, &env, p, &ctx->results, &ctx->err)) return ctx_fail(ctx, &ctx->err);
    return TILEOPT_OK;
}

/* At most this many passes in one --passes text: a longer one is a mistake,
** and the names live on the stack. */
#define OPTIMIZE_MAX_PASSES 64

tileopt_status tileopt_passes_run(tileopt_ctx *ctx, tileopt_model *model,
                                  const char *const *names, size_t n) {
    if (!names && n) return err_set(&ctx->err, TILEOPT_MISUSE, "no pass names");
    const pass_def **list = malloc((n ? n : 1) * sizeof *list);
    if (!list) return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    tileopt_status st = TILEOPT_OK;
    for (size_t i = 0; !st && i < n; i++)
        if (!(list[i] = pass_find(names[i])))
            st = err_set(&ctx->err, TILEOPT_MISUSE, "unknown pass '%s'",
                         names[i] ? names[i] : "(null)");
    if (!st) take_load_warning(ctx, model);
    pass_run_env env = run_env(ctx);
    if (!st && pass_pipeline(model->g, &env, list, n, &ctx->results, &ctx->err))
        st = ctx_fail(ctx, &ctx->err);
    free(list);
    return st;
}

tileopt_status tileopt_optimize(tileopt_ctx *ctx, tileopt_model *model, const char *passes) {
    const char *names[OPTIMIZE_MAX_PASSES];
    size_t n = 0;
    if (!passes) {
        for (const char *p; n < OPTIMIZE_MAX_PASSES && (p = tileopt_pass_name(n));) names[n++] = p;
        return tileopt_passes_run(ctx, model, names, n);
    }
    if (strcmp(passes, "none") == 0) return tileopt_passes_run(ctx, model, NULL, 0);
    char buf[1024];
    if (strlen(passes) >= sizeof buf)
        return err_set(&ctx->err, TILEOPT_MISUSE, "pass list longer than %zu bytes",
                       sizeof buf - 1);
    memcpy(buf, passes, strlen(passes) + 1);
    for (char *s = buf;;) {
        char *comma = strchr(s, ',');
        if (comma) *comma = '\0';
        if (!*s) return err_set(&ctx->err, TILEOPT_MISUSE, "an empty pass name in '%s'", passes);
        if (n == OPTIMIZE_MAX_PASSES)
            return err_set(&ctx->err, TILEOPT_MISUSE, "more than %d passes",
                           OPTIMIZE_MAX_PASSES);
        names[n++] = s;
        if (!comma) break;
        s = comma + 1;
    }
    return tileopt_passes_run(ctx, model, names, n);
}

/*
** Public API: a model's input values. From files (TensorProto, .npy, .npz, a
** folder of them) bound to the graph inputs by name or in order, generated at
** random from the declared shapes (what verify and `run --random` use), checked
** against what each input declares, and written back as .npz or .npy.
*/
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/ctx.h"
#include "api/npy.h"

/* ------------------------------------------------------------ declarations */

void api_decl_text(const graph_value *v, const Onnx__ValueInfoProto *vi, char *buf,
                   size_t cap) {
    int32_t elem = 0;
    graph_kind kind = vi ? graph_type_kind(vi->type, &elem) : GRAPH_KIND_NONE;
    const graph_type *ty = &v->type;
    if (kind == GRAPH_KIND_SEQUENCE || kind == GRAPH_KIND_OPTIONAL || kind == GRAPH_KIND_OTHER) {
        snprintf(buf, cap, "%s%s%s", value_kind_name(kind), elem ? " of " : "",
                 elem ? dtype_name(elem) : "");
        return;
    }
    size_t k = (size_t)snprintf(buf, cap, "%s", ty->elem ? dtype_name(ty->elem) : "any type");
    if (ty->rank < 0) {
        snprintf(buf + k, cap - k, " (any shape)");
        return;
    }
    k += (size_t)snprintf(buf + k, cap - k, " [");
    for (int32_t i = 0; i < ty->rank && k < cap; i++) {
        const char *sep = i ? "," : "";
        if (ty->dims[i] >= 0)
            k += (size_t)snprintf(buf + k, cap - k, "%s%" PRId64, sep, ty->dims[i]);
        else
            k += (size_t)snprintf(buf + k, cap - k, "%s%s", sep,
                                  ty->syms && ty->syms[i] ? ty->syms[i] : "?");
    }
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

int api_check_input(const graph_value *v, const Onnx__ValueInfoProto *vi, const tensor *t,
                    errbuf *err) {
    if (t->kind != EVAL_TENSOR) return TILEOPT_OK; /* kinds: the evaluator's check */
    const graph_type *ty = &v->type;
    bool ok = !ty->elem || ty->elem == t->elem || api_bits_for(ty->elem, t);
    ok = ok && (ty->rank < 0 || ty->rank == t->rank);
    for (int32_t i = 0; ok && ty->rank >= 0 && i < ty->rank; i++)
        ok = ty->dims[i] < 0 || ty->dims[i] == t->dims[i];
    if (ok) return TILEOPT_OK;
    char want[512], got[256];
    api_decl_text(v, vi, want, sizeof want);
    api_shape_text(t, got, sizeof got);
    return err_set(err, TILEOPT_MISUSE, "input '%s' is %s, the model expects %s", v->name, got,
                   want);
}

/* The inputs a run binds (no initializer), in order. */
typedef struct bound_inputs {
    graph *g;
    size_t n;
    graph_value **v;
    const Onnx__ValueInfoProto **vi;
    tensor **val;
    char **from;             /* the file each value came from */
} bound_inputs;

static void bound_free(bound_inputs *b) {
    for (size_t i = 0; i < b->n; i++) {
        tensor_free(b->val ? b->val[i] : NULL);
        free(b->from ? b->from[i] : NULL);
    }
    free(b->v);
    free(b->vi);
    free(b->val);
    free(b->from);
}

static int bound_init(graph *g, bound_inputs *b, errbuf *err) {
    memset(b, 0, sizeof *b);
    b->g = g;
    size_t cap = g->pb->n_input ? g->pb->n_input : 1;
    b->v = calloc(cap, sizeof *b->v);
    b->vi = calloc(cap, sizeof *b->vi);
    b->val = calloc(cap, sizeof *b->val);
    b->from = calloc(cap, sizeof *b->from);
    if (!b->v || !b->vi || !b->val || !b->from) return err_set(err, TILEOPT_NOMEM, "out of memory");
    for (size_t i = 0; i < g->pb->n_input; i++) {
        graph_value *v = graph_find(g, g->pb->input[i]->name);
        if (!v || v->initializer >= 0) continue;
        b->v[b->n] = v;
        b->vi[b->n++] = g->pb->input[i];
    }
    return TILEOPT_OK;
}

/* "x FLOAT [N,1,28,28], mask BOOL [N,?]": what the model takes. */
static void bound_list(const bound_inputs *b, char *buf, size_t cap) {
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < b->n && k < cap; i++) {
        char d[512];
        api_decl_text(b->v[i], b->vi[i], d, sizeof d);
        k += (size_t)snprintf(buf + k, cap - k, "%s'%s' %s", i ? ", " : "", b->v[i]->name, d);
    }
    if (!b->n) snprintf(buf, cap, "no inputs");
}

int api_inputs_missing(graph *g, size_t given, errbuf *err) {
    bound_inputs b;
    int rc = bound_init(g, &b, err);
    if (!rc) {
        char list[2048];
        bound_list(&b, list, sizeof list);
        rc = err_set(err, TILEOPT_MISUSE, "the model takes %zu input%s, %zu given: %s", b.n,
                     b.n == 1 ? "" : "s", given, list);
    }
    bound_free(&b);
    return rc;
}

/* Bind t (taken over) from file to input i, checked against its declaration. */
static int bind_at(bound_inputs *b, size_t i, tensor *t, const char *file, errbuf *err) {
    if (b->val[i]) {
        tensor_free(t);
        return err_set(err, TILEOPT_MISUSE, "input '%s' is given twice: by '%s' and by '%s'",
                       b->v[i]->name, b->from[i], file);
    }
    int rc = api_check_input(b->v[i], b->vi[i], t, err);
    if (rc) {
        tensor_free(t);
        return err_prefix(err, "%s: ", file);
    }
    /* a file of numpy's holds bfloat16 and 8-bit floats as their bits */
    if (api_bits_for(b->v[i]->type.elem, t)) t->elem = b->v[i]->type.elem;
    b->val[i] = t;
    b->from[i] = strdup(file);
    return b->from[i] ? TILEOPT_OK : err_set(err, TILEOPT_NOMEM, "out of memory");
}

static int bind_named(bound_inputs *b, const char *name, tensor *t, const char *file,
                      errbuf *err) {
    for (size_t i = 0; i < b->n; i++)
        if (strcmp(b->v[i]->name, name) == 0) return bind_at(b, i, t, file, err);
    tensor_free(t);
    char list[2048];
    bound_list(b, list, sizeof list);
    return err_set(err, TILEOPT_MISUSE, "%s: '%s' is no input of the model (it takes %s)", file,
                   name, list);
}

/* ------------------------------------------------------------------ files */

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static bool ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

/* A TensorProto (SequenceProto, OptionalProto) file: bound to the input its
** name field names, else to the first input still unbound, read as that input
** declares it (the bytes do not say which message they hold). */
static int bind_proto(tileopt_ctx *ctx, bound_inputs *b, const void *data, size_t size,
                      const char *path) {
    size_t next = 0;
    while (next < b->n && b->val[next]) next++;
    int32_t elem = 0;
    graph_kind kind = next < b->n ? graph_type_kind(b->vi[next]->type, &elem) : GRAPH_KIND_NONE;
    if (kind != GRAPH_KIND_SEQUENCE && kind != GRAPH_KIND_OPTIONAL) kind = GRAPH_KIND_TENSOR;
    tensor *t = NULL;
    eval_env env = api_eval_env(ctx, NULL);
    if (value_decode(data, size, kind, elem, &env, &t, &ctx->err)) {
        /* the bytes do not say which message they hold: say what they were read as */
        if (next == b->n) return err_prefix(&ctx->err, "%s: ", path);
        return err_prefix(&ctx->err, "%s (read as %s, as graph input '%s' declares): ", path,
                          value_kind_name(kind), b->v[next]->name);
    }
    for (size_t i = 0; t->name && i < b->n; i++)
        if (strcmp(b->v[i]->name, t->name) == 0) return bind_at(b, i, t, path, &ctx->err);
    if (next == b->n) {
        tensor_free(t);
        return err_set(&ctx->err, TILEOPT_MISUSE, "%s: more input files than the model's %zu "
                       "inputs", path, b->n);
    }
    return bind_at(b, next, t, path, &ctx->err);
}

static int bind_file(tileopt_ctx *ctx, bound_inputs *b, const char *path) {
    void *data;
    size_t size;
    /* a value file is its data plus a header; an archive may hold every input */
    uint64_t max = ctx->opt.lim.max_tensor_bytes;
    if (max < UINT64_MAX / 4) max = max * 4 + ((uint64_t)1 << 20);
    if (api_read_file(path, max, &data, &size, &ctx->err)) return ctx->err.code;
    int rc;
    eval_env env = api_eval_env(ctx, NULL);
    if (npy_is_zip(data, size) || ends_with(path, ".npz")) {
        npz_arrays a;
        rc = npz_decode(data, size, &env, &a, &ctx->err);
        if (rc) err_prefix(&ctx->err, "%s: ", path);
        for (size_t i = 0; !rc && i < a.n; i++) {
            char where[4096];
            snprintf(where, sizeof where, "%s[%s]", path, a.names[i]);
            rc = bind_named(b, a.names[i], a.values[i], where, &ctx->err);
            a.values[i] = NULL;
        }
        if (!rc) npz_free(&a);
        else {
            for (size_t i = 0; i < a.n; i++) free(a.names[i]), tensor_free(a.values[i]);
            free(a.names);
            free(a.values);
        }
    } else if (npy_is_npy(data, size)) {
        tensor *t = NULL;
        rc = npy_decode(data, size, &env, &t, &ctx->err);
        if (rc) err_prefix(&ctx->err, "%s: ", path);
        else {
            /* x.npy is input 'x' */
            const char *base = base_name(path);
            size_t n = strlen(base);
            char *name = malloc(n + 1);
            if (!name) {
                tensor_free(t);
                rc = err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
            } else {
                memcpy(name, base, n + 1);
                if (ends_with(name, ".npy")) name[n - 4] = '\0';
                rc = bind_named(b, name, t, path, &ctx->err);
                free(name);
            }
        }
    } else {
        rc = bind_proto(ctx, b, data, size, path);
    }
    free(data);
    return rc;
}

typedef struct numbered_file {
    unsigned long num;
    char *path;
} numbered_file;

static int by_number(const void *a, const void *b) {
    const numbered_file *x = a, *y = b;
    return x->num < y->num ? -1 : x->num > y->num ? 1 : strcmp(x->path, y->path);
}

/* A folder: its input_N.pb in the order of N, else its .npy files by name. */
static int bind_folder(tileopt_ctx *ctx, bound_inputs *b, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return err_set(&ctx->err, TILEOPT_IO, "cannot open '%s': %s", dir, strerror(errno));
    numbered_file *pb = NULL, *npy = NULL;
    size_t n_pb = 0, n_npy = 0;
    int rc = TILEOPT_OK;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        const char *s = e->d_name;
        char *end;
        bool is_pb = strncmp(s, "input_", 6) == 0 && s[6] >= '0' && s[6] <= '9' &&
                     (strtoul(s + 6, &end, 10), strcmp(end, ".pb") == 0);
        bool is_npy = s[0] != '.' && ends_with(s, ".npy");
        if (!is_pb && !is_npy) continue;
        numbered_file **list = is_pb ? &pb : &npy;
        size_t *n = is_pb ? &n_pb : &n_npy;
        numbered_file *g = realloc(*list, (*n + 1) * sizeof *g);
        size_t len = strlen(dir) + strlen(s) + 2;
        char *path = malloc(len);
        if (g) *list = g;
        if (!g || !path) {
            free(path);
            rc = err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
            break;
        }
        snprintf(path, len, "%s/%s", dir, s);
        g[(*n)++] = (numbered_file){is_pb ? strtoul(s + 6, NULL, 10) : 0, path};
    }
    closedir(d);
    numbered_file *use = n_pb ? pb : npy;
    size_t n_use = n_pb ? n_pb : n_npy;
    if (!rc && !n_use)
        rc = err_set(&ctx->err, TILEOPT_MISUSE, "'%s' holds no input_N.pb and no .npy file", dir);
    if (!rc) qsort(use, n_use, sizeof *use, by_number);
    for (size_t i = 0; !rc && i < n_use; i++) rc = bind_file(ctx, b, use[i].path);
    for (size_t i = 0; i < n_pb; i++) free(pb[i].path);
    for (size_t i = 0; i < n_npy; i++) free(npy[i].path);
    free(pb);
    free(npy);
    return rc;
}

/* Every input has its value: a missing one is an error naming it with its
** declaration, except an optional one, which is an empty optional. */
static int bound_complete(bound_inputs *b, errbuf *err) {
    for (size_t i = 0; i < b->n; i++) {
        if (b->val[i]) continue;
        if (graph_type_kind(b->vi[i]->type, NULL) == GRAPH_KIND_OPTIONAL) {
            int rc = value_new(EVAL_OPTIONAL, 0, 0, &b->val[i], err);
            if (rc) return rc;
            continue;
        }
        char d[512], list[2048];
        api_decl_text(b->v[i], b->vi[i], d, sizeof d);
        bound_list(b, list, sizeof list);
        return err_set(err, TILEOPT_MISUSE, "input '%s' (%s) is missing: no file gives it (the "
                       "model takes %s)", b->v[i]->name, d, list);
    }
    return TILEOPT_OK;
}

/* b's values handed out as public handles in input order. */
static tileopt_status bound_hand_out(tileopt_ctx *ctx, bound_inputs *b, tileopt_tensor ***out,
                                     size_t *n) {
    tileopt_tensor **res = calloc(b->n ? b->n : 1, sizeof *res);
    if (!res) return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    for (size_t i = 0; i < b->n; i++) {
        tensor *t = b->val[i];
        b->val[i] = NULL;
        if (api_wrap_tensor(ctx, t, b->v[i]->name, &res[i]) != TILEOPT_OK) {
            for (size_t k = 0; k < i; k++) tileopt_tensor_free(res[k]);
            free(res);
            return ctx->err.code;
        }
    }
    *out = res;
    *n = b->n;
    return TILEOPT_OK;
}

/* Bind the values of every path (a file or a folder), then fill in the rest. */
static int bind_paths(tileopt_ctx *ctx, bound_inputs *b, const char *const *paths,
                      size_t n_paths) {
    int rc = TILEOPT_OK;
    for (size_t i = 0; !rc && i < n_paths; i++) {
        struct stat st;
        if (!paths[i]) rc = err_set(&ctx->err, TILEOPT_MISUSE, "a NULL path");
        else if (stat(paths[i], &st) != 0)
            rc = err_set(&ctx->err, TILEOPT_IO, "cannot open '%s': %s", paths[i],
                         strerror(errno));
        else rc = S_ISDIR(st.st_mode) ? bind_folder(ctx, b, paths[i])
                                      : bind_file(ctx, b, paths[i]);
    }
    return rc ? rc : bound_complete(b, &ctx->err);
}

int api_inputs_from_files(tileopt_ctx *ctx, graph *g, const char *const *paths, size_t n_paths,
                          tensor ***values, char ***from, size_t *n) {
    *values = NULL;
    *from = NULL;
    *n = 0;
    bound_inputs b;
    int rc = bound_init(g, &b, &ctx->err);
    if (!rc) rc = bind_paths(ctx, &b, paths, n_paths);
    if (!rc) {
        *values = b.val;
        *from = b.from;
        *n = b.n;
        b.val = NULL;
        b.from = NULL;
        b.n = 0;
    }
    bound_free(&b);
    return rc;
}

tileopt_status tileopt_model_inputs_load(tileopt_ctx *ctx, const tileopt_model *model,
                                         const char *const *paths, size_t n_paths,
                                         tileopt_tensor ***inputs, size_t *n_inputs) {
    *inputs = NULL;
    *n_inputs = 0;
    if (!model || (!paths && n_paths))
        return ctx_fail(ctx, &(errbuf){TILEOPT_MISUSE, "tileopt_model_inputs_load: NULL argument"});
    bound_inputs b;
    int rc = bound_init(model->g->main, &b, &ctx->err);
    if (!rc) rc = bind_paths(ctx, &b, paths, n_paths);
    if (!rc) rc = bound_hand_out(ctx, &b, inputs, n_inputs);
    bound_free(&b);
    return rc ? ctx_fail(ctx, &ctx->err) : TILEOPT_OK;
}

/* ------------------------------------------------------------ random inputs */

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
                          const eval_env *env, tensor **out, errbuf *err) {
    /* numbers, so a Cast from string has something to parse */
    static const char *const words[] = {"0", "1", "-2.5", "0.125", "3"};
    int rc = tensor_new(DT_STRING, dims, rank, env, out, err);
    if (rc) return rc;
    graph_bytes *v = (graph_bytes *)(void *)(*out)->data;
    for (uint64_t i = 0; i < tensor_numel(*out); i++) {
        const char *w = words[rng_next(s) % 5];
        v[i].data = (const uint8_t *)w;
        v[i].len = strlen(w);
    }
    return TILEOPT_OK;
}

/* The size each named dim took: a named dim takes one size in every input, the
** first place it occurs deciding. */
typedef struct named_dims {
    const char **name;
    int64_t *size;
    size_t n, cap;
} named_dims;

static const int64_t *named_find(const named_dims *nd, const char *name) {
    for (size_t i = 0; i < nd->n; i++)
        if (strcmp(nd->name[i], name) == 0) return &nd->size[i];
    return NULL;
}

static bool named_add(named_dims *nd, const char *name, int64_t size) {
    if (nd->n == nd->cap) {
        size_t cap = nd->cap ? nd->cap * 2 : 16;
        const char **nv = realloc(nd->name, cap * sizeof *nv);
        if (!nv) return false;
        nd->name = nv;
        int64_t *sv = realloc(nd->size, cap * sizeof *sv);
        if (!sv) return false;
        nd->size = sv;
        nd->cap = cap;
    }
    nd->name[nd->n] = name;
    nd->size[nd->n++] = size;
    return true;
}

/* The shape --verify-shape gives input `name`, or NULL. */
static const api_input_shape *shape_for(const tileopt_ctx *ctx, const char *name) {
    for (size_t i = 0; i < ctx->verify.n_shapes; i++)
        if (strcmp(ctx->verify.shapes[i].name, name) == 0) return &ctx->verify.shapes[i];
    return NULL;
}

/* The dims of one generated input: static dims as declared, an input's
** --verify-shape as given, a named dim as it was first sized, the others
** `lead` on the leading axis and `inner` elsewhere. The dims it leaves open are
** written under "symbolic" (its own name or name[axis]). */
static int sized_dims(tileopt_ctx *ctx, const char *name, const graph_type *ty, int64_t lead,
                      int64_t inner, named_dims *named, json_w *w, bool *sized, int64_t *dims,
                      char *why, size_t why_cap) {
    const api_input_shape *given = shape_for(ctx, name);
    if (given && given->rank != ty->rank) {
        snprintf(why, why_cap, "--verify-shape gives input '%s' rank %d, the model declares "
                 "rank %d", name, (int)given->rank, (int)ty->rank);
        return err_set(&ctx->err, TILEOPT_MISUSE, "%s", why);
    }
    char keys[TENSOR_MAX_RANK][256];
    int64_t key_size[TENSOR_MAX_RANK];
    int n_keys = 0;
    for (int32_t k = 0; k < ty->rank; k++) {
        const char *dn = ty->dims[k] < 0 && ty->syms ? ty->syms[k] : NULL;
        const int64_t *seen = dn ? named_find(named, dn) : NULL;
        if (given && ty->dims[k] >= 0 && given->dims[k] != ty->dims[k]) {
            snprintf(why, why_cap, "--verify-shape gives input '%s' dim %d = %" PRId64 ", the "
                     "model declares %" PRId64, name, (int)k, given->dims[k], ty->dims[k]);
            return err_set(&ctx->err, TILEOPT_MISUSE, "%s", why);
        }
        dims[k] = ty->dims[k] >= 0 ? ty->dims[k]
                  : given          ? given->dims[k]
                  : seen           ? *seen
                  : k == 0         ? lead
                                   : inner;
        if (dn && !seen && !named_add(named, dn, dims[k]))
            return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
        if (ty->dims[k] < 0 && !seen && !given && k > 0) *sized = true;
        if (ty->dims[k] >= 0) continue;
        char key[256];
        if (dn) snprintf(key, sizeof key, "%s", dn);
        else snprintf(key, sizeof key, "%s[%d]", name, (int)k);
        bool dup = false;
        for (int j = 0; j < n_keys && !dup; j++) dup = strcmp(keys[j], key) == 0;
        if (dup) continue;
        memcpy(keys[n_keys], key, sizeof key);
        key_size[n_keys++] = dims[k];
    }
    if (w && n_keys) {
        json_key(w, "symbolic");
        json_object(w);
        for (int j = 0; j < n_keys; j++) json_put_num(w, keys[j], (double)key_size[j]);
        json_end(w);
    }
    return TILEOPT_OK;
}

int api_random_inputs(tileopt_ctx *ctx, graph *g, int64_t lead, int64_t inner, json_w *w,
                      tensor ***values, size_t *n, bool *sized, char *why, size_t why_cap) {
    uint64_t seed = ctx->verify.seed;
    *values = calloc(g->pb->n_input ? g->pb->n_input : 1, sizeof **values);
    *n = 0;
    if (!*values) return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    named_dims named = {0};
    int rc = TILEOPT_OK;
    if (w) {
        json_key(w, "inputs");
        json_array(w);
    }
    for (size_t i = 0; i < g->pb->n_input && !rc && !why[0]; i++) {
        const char *name = g->pb->input[i]->name;
        graph_value *v = graph_find(g, name);
        if (!v || v->initializer >= 0) continue;
        const graph_type *ty = &v->type;
        graph_kind kind = graph_type_kind(g->pb->input[i]->type, NULL);
        if (kind != GRAPH_KIND_TENSOR && kind != GRAPH_KIND_NONE)
            snprintf(why, why_cap, "input '%s' is %s; only tensors are generated", name,
                     value_kind_name(kind));
        else if (!dtype_valid(ty->elem))
            snprintf(why, why_cap, "input '%s' has no known element type", name);
        else if (ty->rank < 0 || ty->rank > TENSOR_MAX_RANK)
            snprintf(why, why_cap, "input '%s' has no known rank", name);
        if (why[0]) break;
        int64_t dims[TENSOR_MAX_RANK];
        if (w) {
            json_object(w);
            json_put_str(w, "name", name);
            json_put_str(w, "dtype", dtype_name(ty->elem));
        }
        rc = sized_dims(ctx, name, ty, lead, inner, &named, w, sized, dims, why, why_cap);
        if (rc) break;
        if (w) {
            json_key(w, "shape");
            json_array(w);
            for (int32_t k = 0; k < ty->rank; k++) json_num(w, (double)dims[k]);
            json_end(w);
            json_end(w);
        }
        tensor *t = NULL;
        eval_env env = api_eval_env(ctx, NULL);
        if (ty->elem == DT_STRING) {
            rc = random_strings(dims, ty->rank, &seed, &env, &t, &ctx->err);
        } else {
            rc = tensor_new(ty->elem, dims, ty->rank, &env, &t, &ctx->err);
            if (!rc) fill_random(t, &seed);
        }
        if (rc) err_prefix(&ctx->err, "input '%s': ", name);
        else (*values)[(*n)++] = t;
    }
    if (w) json_end(w);
    free(named.name);
    free(named.size);
    return rc;
}

tileopt_status tileopt_model_inputs_random(tileopt_ctx *ctx, const tileopt_model *model,
                                           tileopt_tensor ***inputs, size_t *n_inputs) {
    *inputs = NULL;
    *n_inputs = 0;
    if (!model)
        return ctx_fail(ctx, &(errbuf){TILEOPT_MISUSE, "tileopt_model_inputs_random: NULL model"});
    bound_inputs b;
    int rc = bound_init(model->g->main, &b, &ctx->err);
    tensor **values = NULL;
    size_t n = 0;
    bool sized = false;
    char why[1024] = "";
    int64_t dim = ctx->verify.dim_given ? ctx->verify.dim : API_RANDOM_DIM;
    if (!rc) rc = api_random_inputs(ctx, model->g->main, dim, dim, NULL, &values, &n, &sized,
                                    why, sizeof why);
    if (!rc && why[0]) rc = err_set(&ctx->err, TILEOPT_UNSUPPORTED, "%s", why);
    for (size_t i = 0; i < n; i++) {
        if (!rc) b.val[i] = values[i];
        else tensor_free(values[i]);
    }
    free(values);
    if (!rc) rc = bound_hand_out(ctx, &b, inputs, n_inputs);
    bound_free(&b);
    return rc ? ctx_fail(ctx, &ctx->err) : TILEOPT_OK;
}

/* ------------------------------------------------------------------ saving */

tileopt_status tileopt_tensors_save(tileopt_ctx *ctx, tileopt_tensor *const *values, size_t n,
                                    const char *path) {
    if (!path || (!values && n))
        return ctx_fail(ctx, &(errbuf){TILEOPT_MISUSE, "tileopt_tensors_save: NULL argument"});
    if (!ends_with(path, ".npz")) {
        if (n != 1)
            return ctx_fail(ctx, &(errbuf){TILEOPT_MISUSE, "several values go to an .npz "
                                                           "archive: name the file *.npz"});
        return tileopt_tensor_save(ctx, values[0], path);
    }
    const tensor **t = calloc(n ? n : 1, sizeof *t);
    const char **names = calloc(n ? n : 1, sizeof *names);
    int rc = t && names ? TILEOPT_OK : err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        t[i] = values[i]->t;
        names[i] = values[i]->name;
        for (size_t k = 0; k < i && !rc; k++)
            if (strcmp(names[k], names[i]) == 0)
                rc = err_set(&ctx->err, TILEOPT_MISUSE, "two values are named '%s'", names[i]);
    }
    void *bytes = NULL;
    size_t size = 0;
    if (!rc) rc = npz_encode(t, names, n, &bytes, &size, &ctx->err);
    if (!rc) rc = graph_write_atomic(path, bytes, size, ctx->temp_hook, ctx->temp_user, &ctx->err);
    free(bytes);
    free(t);
    free(names);
    return rc ? ctx_fail(ctx, &ctx->err) : TILEOPT_OK;
}

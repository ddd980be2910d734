/*
** `tileopt run MODEL.onnx [INPUT ...] [--random[=SEED]] [--test-dir DIR] [-o OUT]`:
** evaluate a model on .npz, .npy or serialized TensorProto inputs (SequenceProto
** and OptionalProto for sequences and optionals, as in ONNX's backend test
** data), or on random ones.
*/
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"

/* values shown per output when printing results */
#define RUN_SHOW 8

typedef struct path_list {
    char **paths;
    size_t n;
} path_list;

static void paths_free(path_list *l) {
    for (size_t i = 0; i < l->n; i++) free(l->paths[i]);
    free(l->paths);
    l->paths = NULL;
    l->n = 0;
}

typedef struct numbered {
    unsigned long num;
    char *path;
} numbered;

static int by_num(const void *a, const void *b) {
    unsigned long x = ((const numbered *)a)->num, y = ((const numbered *)b)->num;
    return x < y ? -1 : x > y;
}

/* DIR/<prefix>N<suffix> in numeric order of N. */
static int list_numbered(const char *dir, const char *prefix, const char *suffix,
                         path_list *out) {
    out->paths = NULL;
    out->n = 0;
    DIR *d = opendir(dir);
    if (!d) return tool_error(EXIT_FAIL, "cannot open test folder '%s': %s", dir, strerror(errno));
    numbered *items = NULL;
    size_t n = 0, cap = 0, plen = strlen(prefix);
    int rc = EXIT_OK;
    for (struct dirent *e; (e = readdir(d));) {
        const char *s = e->d_name;
        if (strncmp(s, prefix, plen) != 0) continue;
        char *end;
        errno = 0;
        unsigned long num = strtoul(s + plen, &end, 10);
        if (end == s + plen || errno || strcmp(end, suffix) != 0) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            numbered *g = realloc(items, cap * sizeof *g);
            if (!g) {
                rc = tool_error(EXIT_FAIL, "out of memory");
                break;
            }
            items = g;
        }
        size_t len = strlen(dir) + strlen(s) + 2;
        items[n].path = malloc(len);
        if (!items[n].path) {
            rc = tool_error(EXIT_FAIL, "out of memory");
            break;
        }
        snprintf(items[n].path, len, "%s/%s", dir, s);
        items[n++].num = num;
    }
    closedir(d);
    if (n) qsort(items, n, sizeof *items, by_num);
    for (size_t i = 1; i < n && !rc; i++)
        if (items[i].num == items[i - 1].num)
            rc = tool_error(EXIT_FAIL, "'%s' and '%s' have the same number", items[i - 1].path,
                            items[i].path);
    if (!rc) {
        out->paths = malloc((n ? n : 1) * sizeof *out->paths);
        if (!out->paths) rc = tool_error(EXIT_FAIL, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        if (!rc) out->paths[out->n++] = items[i].path;
        else free(items[i].path);
    }
    free(items);
    return rc;
}

static void free_tensors(tileopt_tensor **t, size_t n) {
    if (!t) return;
    for (size_t i = 0; i < n; i++) tileopt_tensor_free(t[i]);
    free(t);
}

typedef tileopt_status (*value_loader)(tileopt_ctx *ctx, const tileopt_model *model,
                                       size_t index, const char *path, tileopt_tensor **out);

/* File i read as graph input (or output) i declares it: a tensor, a sequence
** or an optional. */
static int load_values(tileopt_ctx *ctx, const tileopt_model *model, value_loader load,
                       char *const *paths, size_t n, tileopt_tensor ***out) {
    tileopt_tensor **t = calloc(n ? n : 1, sizeof *t);
    *out = t;
    if (!t) return tool_error(EXIT_FAIL, "out of memory");
    for (size_t i = 0; i < n; i++)
        if (load(ctx, model, i, paths[i], &t[i]) != TILEOPT_OK)
            return tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
    return EXIT_OK;
}

/* Compare outputs with the expected tensors; prints every mismatch. */
static int compare(tileopt_ctx *ctx, tileopt_tensor **expected, size_t n_expected,
                   tileopt_tensor *const *actual, size_t n_actual, const char *dir) {
    if (n_expected != n_actual)
        return tool_error(EXIT_FAIL, "%s holds %zu expected outputs, the model gives %zu", dir,
                          n_expected, n_actual);
    int rc = EXIT_OK;
    for (size_t i = 0; i < n_actual; i++)
        if (tileopt_tensor_compare(ctx, expected[i], actual[i]) != TILEOPT_OK)
            rc = tool_error(EXIT_FAIL, "%s: output %zu '%s': %s", dir, i,
                            tileopt_tensor_name(actual[i]), tileopt_ctx_errmsg(ctx));
    return rc;
}

static int write_outputs(tileopt_ctx *ctx, const char *dir, tileopt_tensor *const *outs,
                         size_t n) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return tool_error(EXIT_FAIL, "cannot create '%s': %s", dir, strerror(errno));
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        if (snprintf(path, sizeof path, "%s/output_%zu.pb", dir, i) >= (int)sizeof path)
            return tool_error(EXIT_FAIL, "output folder path too long");
        if (tileopt_tensor_save(ctx, outs[i], path) != TILEOPT_OK)
            return tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
    }
    return EXIT_OK;
}

static int print_outputs(tileopt_ctx *ctx, tileopt_tensor *const *outs, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char *text;
        if (tileopt_tensor_format(ctx, outs[i], RUN_SHOW, &text) != TILEOPT_OK)
            return tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
        printf("%s: %s\n", tileopt_tensor_name(outs[i]), text);
        tileopt_free(text);
    }
    return EXIT_OK;
}

static void free_outputs(tileopt_tensor **outs, size_t n) {
    if (!outs) return;
    for (size_t i = 0; i < n; i++) tileopt_tensor_free(outs[i]);
    tileopt_free(outs);
}

/* One data set: DIR/input_*.pb through the model, the outputs compared with
** DIR/output_*.pb, and written to out_dir when given. */
static int run_data_set(tileopt_ctx *ctx, tileopt_model *model, const char *dir,
                        const char *out_dir) {
    path_list in_paths = {0}, out_paths = {0};
    tileopt_tensor **in = NULL, **expected = NULL, **outs = NULL;
    size_t n_outs = 0;
    int rc = list_numbered(dir, "input_", ".pb", &in_paths);
    if (!rc) rc = list_numbered(dir, "output_", ".pb", &out_paths);
    if (!rc && !out_paths.n)
        rc = tool_error(EXIT_FAIL, "%s holds no output_*.pb to compare with", dir);
    if (!rc)
        rc = load_values(ctx, model, tileopt_model_input_load, in_paths.paths, in_paths.n, &in);
    if (!rc)
        rc = load_values(ctx, model, tileopt_model_output_load, out_paths.paths, out_paths.n,
                         &expected);
    if (!rc && tileopt_model_run(ctx, model, in, in_paths.n, &outs, &n_outs) != TILEOPT_OK)
        rc = tool_error(EXIT_FAIL, "%s: %s", dir, tileopt_ctx_errmsg(ctx));
    if (!rc) rc = compare(ctx, expected, out_paths.n, outs, n_outs, dir);
    if (!rc && out_dir) rc = write_outputs(ctx, out_dir, outs, n_outs);
    if (!rc) printf("%s: %zu output%s match\n", dir, n_outs, n_outs == 1 ? "" : "s");
    free_tensors(in, in_paths.n);
    free_tensors(expected, out_paths.n);
    free_outputs(outs, n_outs);
    paths_free(&in_paths);
    paths_free(&out_paths);
    return rc;
}

/* A backend test folder runs each of its DIR/test_data_set_N (all of them, a
** failing one not stopping the rest); any other folder is one data set. */
static int run_test_dir(tileopt_ctx *ctx, tileopt_model *model, const char *dir,
                        const char *out_dir) {
    path_list sets = {0};
    int rc = list_numbered(dir, "test_data_set_", "", &sets);
    if (rc || !sets.n) {
        paths_free(&sets);
        return rc ? rc : run_data_set(ctx, model, dir, out_dir);
    }
    if (out_dir && mkdir(out_dir, 0777) != 0 && errno != EEXIST)
        rc = tool_error(EXIT_FAIL, "cannot create '%s': %s", out_dir, strerror(errno));
    size_t failed = 0;
    for (size_t i = 0; i < sets.n && !rc; i++) {
        char sub[4096];
        const char *base = strrchr(sets.paths[i], '/') + 1;
        if (out_dir && snprintf(sub, sizeof sub, "%s/%s", out_dir, base) >= (int)sizeof sub) {
            rc = tool_error(EXIT_FAIL, "output folder path too long");
            break;
        }
        if (run_data_set(ctx, model, sets.paths[i], out_dir ? sub : NULL)) failed++;
    }
    if (!rc && sets.n > 1)
        printf("%s: %zu of %zu data sets match\n", dir, sets.n - failed, sets.n);
    paths_free(&sets);
    return rc ? rc : failed ? EXIT_FAIL : EXIT_OK;
}

/* What `run` was asked for. */
typedef struct run_args {
    const char *test_dir, *out;
    bool random;
    const char *seed;        /* NULL: 1 */
} run_args;

static int take_option(void *user, const cli_option *o, const char *value) {
    run_args *r = user;
    const char **slot = o->id == ID_TEST_DIR ? &r->test_dir : o->id == ID_OUTPUT ? &r->out : NULL;
    if (slot && *slot) return tool_error(EXIT_USAGE, "%s given twice", o->name);
    if (slot) *slot = value;
    if (o->id == ID_RANDOM) {
        r->random = true;
        r->seed = value;
    }
    return EXIT_OK;
}

static bool ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

/* The inputs of one run: from files, or random. */
static int load_inputs(tileopt_ctx *ctx, tileopt_model *model, const run_args *r,
                       char *const *files, size_t n_files, tileopt_tensor ***in, size_t *n_in) {
    tileopt_status st;
    if (r->random) {
        if (r->seed && tileopt_ctx_set(ctx, "seed", r->seed) != TILEOPT_OK)
            return tool_error(EXIT_USAGE, "--random takes a seed from 0 to 2^64-1, not '%s'",
                              r->seed);
        st = tileopt_model_inputs_random(ctx, model, in, n_in);
    } else {
        st = tileopt_model_inputs_load(ctx, model, (const char *const *)files, n_files, in,
                                       n_in);
    }
    if (st == TILEOPT_MISUSE && !n_files && !r->random)
        return tool_error(EXIT_USAGE, "%s; give them as .npz, .npy or .pb files, or --random",
                          tileopt_ctx_errmsg(ctx));
    return st ? cli_fail(ctx, st, NULL) : EXIT_OK;
}

int cmd_run(tileopt_ctx *ctx, int argc, char **argv) {
    const cli_command *cmd = cli_command_find("run");
    if (cli_wants_help(cmd, argc, argv)) return EXIT_OK;
    char **operands = calloc((size_t)(argc > 0 ? argc : 1), sizeof *operands);
    if (!operands) return tool_error(EXIT_FAIL, "out of memory");
    run_args r = {0};
    size_t n_operands = 0;
    int rc = cli_parse(ctx, cmd, argc, argv, take_option, &r, operands, &n_operands);
    const char *model_path = n_operands ? operands[0] : NULL;
    char **inputs = operands + (n_operands ? 1 : 0);
    size_t n_inputs = n_operands ? n_operands - 1 : 0;
    char default_model[4096];
    if (!rc && !model_path && r.test_dir &&
        snprintf(default_model, sizeof default_model, "%s/model.onnx", r.test_dir) <
            (int)sizeof default_model &&
        access(default_model, F_OK) == 0)
        model_path = default_model; /* a backend test folder holds its model */
    if (!rc && !model_path) rc = tool_error(EXIT_USAGE, "run needs a model");
    if (!rc && (r.test_dir || r.random) && n_inputs)
        rc = tool_error(EXIT_USAGE, "give input files, --random or --test-dir: one of them");
    if (!rc && r.test_dir && r.random)
        rc = tool_error(EXIT_USAGE, "give --random or --test-dir, not both");
    if (!rc && r.test_dir && r.out && ends_with(r.out, ".npz"))
        rc = tool_error(EXIT_USAGE, "with --test-dir, -o is a folder (one per data set)");
    if (rc) {
        free(operands);
        return rc;
    }

    tileopt_model *model = NULL;
    tileopt_tensor **in = NULL, **outs = NULL;
    size_t n_in = 0, n_outs = 0;
    if (isatty(STDERR_FILENO)) tileopt_ctx_set_progress(ctx, cli_progress, NULL);
    tileopt_status st = tileopt_model_load(ctx, model_path, &model);
    if (st) {
        rc = tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
        goto done;
    }
    if (r.test_dir) {
        rc = run_test_dir(ctx, model, r.test_dir, r.out);
        goto done;
    }
    rc = load_inputs(ctx, model, &r, inputs, n_inputs, &in, &n_in);
    if (rc) goto done;
    if ((st = tileopt_model_run(ctx, model, in, n_in, &outs, &n_outs)) != TILEOPT_OK) {
        rc = cli_fail(ctx, st, NULL);
        goto done;
    }
    if (r.out && ends_with(r.out, ".npz"))
        rc = tileopt_tensors_save(ctx, outs, n_outs, r.out) ? cli_fail(ctx, TILEOPT_IO, NULL)
                                                             : EXIT_OK;
    else if (r.out)
        rc = write_outputs(ctx, r.out, outs, n_outs);
    else
        rc = print_outputs(ctx, outs, n_outs);
done:
    if (in)
        for (size_t i = 0; i < n_in; i++) tileopt_tensor_free(in[i]);
    tileopt_free(in);
    free_outputs(outs, n_outs);
    tileopt_model_free(model);
    free(operands);
    return rc;
}

/*
** `tileopt run MODEL.onnx [INPUT.pb ...] [--test-dir DIR] [-o OUTDIR]`: evaluate a
** model on serialized TensorProto inputs, as in ONNX's backend test data.
*/
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd.h"

/* values shown per output when printing results */
#define RUN_SHOW 8

static const char run_usage[] =
    "usage: tileopt run MODEL.onnx [INPUT.pb ...] [--test-dir DIR] [-o OUTDIR]\n"
    "  Evaluate MODEL with the built-in evaluator. Inputs are serialized TensorProto\n"
    "  files bound in order to the graph inputs that have no initializer.\n"
    "  --test-dir DIR  read DIR/input_*.pb, compare the outputs with DIR/output_*.pb\n"
    "                  (floats: rtol 1e-3, atol 1e-7; other types exactly); exit 1 on a\n"
    "                  mismatch\n"
    "  -o OUTDIR       write the outputs as OUTDIR/output_N.pb\n"
    "  --max-tensor-bytes B, --max-eval-bytes B, --max-eval-steps N, --max-depth N,\n"
    "  --max-rank N\n"
    "                  resource limits, as for optimize\n"
    "  Without --test-dir or -o the outputs are printed.\n";

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

/* DIR/<prefix>N.pb in numeric order of N. */
static int list_numbered(const char *dir, const char *prefix, path_list *out) {
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
        if (end == s + plen || errno || strcmp(end, ".pb") != 0) continue;
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

static int load_tensors(tileopt_ctx *ctx, char *const *paths, size_t n,
                        tileopt_tensor ***out) {
    tileopt_tensor **t = calloc(n ? n : 1, sizeof *t);
    *out = t;
    if (!t) return tool_error(EXIT_FAIL, "out of memory");
    for (size_t i = 0; i < n; i++)
        if (tileopt_tensor_load(ctx, paths[i], &t[i]) != TILEOPT_OK)
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
            rc = tool_error(EXIT_FAIL, "output %zu '%s': %s", i,
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

int cmd_run(tileopt_ctx *ctx, int argc, char **argv) {
    const char *model_path = NULL, *test_dir = NULL, *out_dir = NULL;
    char **inputs = calloc((size_t)(argc > 0 ? argc : 1), sizeof *inputs);
    size_t n_inputs = 0;
    if (!inputs) return tool_error(EXIT_FAIL, "out of memory");
    int rc = EXIT_OK;
    for (int i = 1; i < argc && !rc; i++) {
        const char *s = argv[i];
        bool has_next = i + 1 < argc;
        if (strcmp(s, "--test-dir") == 0) {
            if (!has_next) rc = tool_error(EXIT_USAGE, "--test-dir needs a folder");
            else if (test_dir) rc = tool_error(EXIT_USAGE, "--test-dir given twice");
            else test_dir = argv[++i];
        } else if (strcmp(s, "-o") == 0 || strcmp(s, "--output") == 0) {
            if (!has_next) rc = tool_error(EXIT_USAGE, "%s needs a folder", s);
            else if (out_dir) rc = tool_error(EXIT_USAGE, "%s given twice", s);
            else out_dir = argv[++i];
        } else if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
            fputs(run_usage, stdout);
            free(inputs);
            return EXIT_OK;
        } else if (s[0] == '-' && s[1]) {
            int fr = cmd_option_flag(ctx, argc, argv, &i, true);
            if (fr < 0) rc = tool_error(EXIT_USAGE, "unknown option '%s' for run", s);
            else rc = fr;
        } else if (!model_path) {
            model_path = s;
        } else {
            inputs[n_inputs++] = argv[i];
        }
    }
    if (!rc && !model_path) rc = tool_error(EXIT_USAGE, "run needs a model");
    if (!rc && test_dir && n_inputs)
        rc = tool_error(EXIT_USAGE, "give input files or --test-dir, not both");
    if (rc) {
        free(inputs);
        return rc;
    }

    tileopt_model *model = NULL;
    tileopt_tensor **in = NULL, **expected = NULL, **outs = NULL;
    size_t n_in = n_inputs, n_expected = 0, n_outs = 0;
    path_list in_paths = {0}, out_paths = {0};
    if (tileopt_model_load(ctx, model_path, &model) != TILEOPT_OK) {
        rc = tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
        goto done;
    }
    if (test_dir) {
        rc = list_numbered(test_dir, "input_", &in_paths);
        if (!rc) rc = list_numbered(test_dir, "output_", &out_paths);
        if (!rc && !out_paths.n)
            rc = tool_error(EXIT_FAIL, "%s holds no output_*.pb to compare with", test_dir);
        if (!rc) rc = load_tensors(ctx, in_paths.paths, in_paths.n, &in);
        if (!rc) rc = load_tensors(ctx, out_paths.paths, out_paths.n, &expected);
        n_in = in_paths.n;
        n_expected = out_paths.n;
    } else {
        rc = load_tensors(ctx, inputs, n_inputs, &in);
    }
    if (rc) goto done;
    if (tileopt_model_run(ctx, model, in, n_in, &outs, &n_outs) != TILEOPT_OK) {
        rc = tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
        goto done;
    }
    if (test_dir) {
        rc = compare(ctx, expected, n_expected, outs, n_outs, test_dir);
        if (rc) goto done;
    }
    if (out_dir) {
        rc = write_outputs(ctx, out_dir, outs, n_outs);
        if (rc) goto done;
    }
    if (test_dir)
        printf("%s: %zu output%s match\n", test_dir, n_outs, n_outs == 1 ? "" : "s");
    else if (!out_dir)
        rc = print_outputs(ctx, outs, n_outs);
done:
    free_tensors(in, n_in);
    free_tensors(expected, n_expected);
    if (outs) {
        for (size_t i = 0; i < n_outs; i++) tileopt_tensor_free(outs[i]);
        tileopt_free(outs);
    }
    paths_free(&in_paths);
    paths_free(&out_paths);
    tileopt_model_free(model);
    free(inputs);
    return rc;
}

/*
** The tileopt command line: usage and dispatch. Each command lives in a file of
** its own (cmd_optimize.c, cmd_run.c, cmd_inspect.c) and what they share in
** cli.c; tools/ is the only code that prints or exits, and it sees the library
** only through include/tileopt.h.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static const char usage_text[] =
    "usage:\n"
    "  tileopt optimize IN.onnx -o OUT.onnx [--passes P,...|none]\n"
    "                   [--target-opset N] [--fold-limit BYTES] [--fold-max-growth K]\n"
    "                   [--fold-scope tile|all] [--fuse-split] [--infer-shapes]\n"
    "                   [--keep-initializer-inputs] [--input-shape NAME:D1,D2,...]\n"
    "                   [--report FILE|-] [--verify[=strict]] [--quiet]\n"
    "                   [--max-tensor-bytes B] [--max-eval-bytes B] [--max-eval-steps N]\n"
    "                   [--max-depth N] [--max-rank N] [--seed N]\n"
    "  tileopt run MODEL.onnx [INPUT.pb ...] [--test-dir DIR] [-o OUTDIR] [--max-... as above]\n"
    "  tileopt inspect MODEL.onnx [--json] [--all] [--max-... as above]\n"
    "  tileopt --help | --version; tileopt COMMAND --help for every option\n";

static const struct {
    const char *name;
    int (*run)(tileopt_ctx *ctx, int argc, char **argv);
} commands[] = {
    {"optimize", cmd_optimize},
    {"run", cmd_run},
    {"inspect", cmd_inspect},
};

/* Flags whose value is optional keep "=VALUE" attached: "--verify" alone means
** something else than "--verify strict" would. */
static const char *const optional_value_flags[] = {"--verify"};

/*
** GNU style: every long option also takes its value as "--name=value". The
** commands parse "--name value"; this splits the first form into the second.
** The strings stay argv's; only the array is new (NULL when out of memory).
*/
static char **split_long_options(int argc, char **argv, int *out_argc) {
    char **v = malloc((2 * (size_t)argc + 1) * sizeof *v);
    if (!v) return NULL;
    int n = 0;
    for (int i = 0; i < argc; i++) {
        char *eq = argv[i][0] == '-' && argv[i][1] == '-' ? strchr(argv[i], '=') : NULL;
        bool keep = !eq;
        for (size_t k = 0; eq && k < sizeof optional_value_flags / sizeof *optional_value_flags; k++)
            keep = keep || (strlen(optional_value_flags[k]) == (size_t)(eq - argv[i]) &&
                            strncmp(argv[i], optional_value_flags[k], (size_t)(eq - argv[i])) == 0);
        if (keep || i == 0) {
            v[n++] = argv[i];
            continue;
        }
        *eq = '\0';
        v[n++] = argv[i];
        v[n++] = eq + 1;
    }
    v[n] = NULL;
    *out_argc = n;
    return v;
}

int main(int argc, char **argv) {
    if (argc < 2) return tool_error(EXIT_USAGE, "no command given");
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage_text, stdout);
        return EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("tileopt %s\n", tileopt_version());
        return EXIT_OK;
    }
    size_t k = 0, n = sizeof commands / sizeof commands[0];
    while (k < n && strcmp(commands[k].name, cmd) != 0) k++;
    if (k == n) return tool_error(EXIT_USAGE, "unknown command '%s'", cmd);
    tileopt_ctx *ctx;
    if (tileopt_ctx_new(&ctx) != TILEOPT_OK) return tool_error(EXIT_FAIL, "out of memory");
    cli_clean_up_on_signals(ctx);
    int nargc;
    char **nargv = split_long_options(argc - 1, argv + 1, &nargc);
    int rc = nargv ? commands[k].run(ctx, nargc, nargv) : tool_error(EXIT_FAIL, "out of memory");
    free(nargv);
    tileopt_ctx_free(ctx);
    return rc;
}

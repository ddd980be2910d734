/*
** `tileopt inspect MODEL.onnx... [--json]`: each model's summary and its Tile
** nodes, as text or as the library's JSON.
*/
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

/* Tiles the text form lists without --all: a 6,600-node model has thousands. */
#define SHORT_TILE_LIST 10

typedef struct inspect_args {
    bool json, all;
} inspect_args;

static int take_option(void *user, const cli_option *o, const char *value) {
    (void)value;
    inspect_args *a = user;
    if (o->id == ID_JSON) a->json = true;
    if (o->id == ID_ALL) a->all = true;
    return EXIT_OK;
}

/* One model's summary: text, or JSON (an element of an array when there are
** several). */
static int inspect_one(tileopt_ctx *ctx, const char *path, const inspect_args *a,
                       bool several, bool first) {
    tileopt_model *m;
    if (tileopt_model_load(ctx, path, &m) != TILEOPT_OK)
        return tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
    tileopt_status st;
    char *text;
    st = a->json ? tileopt_model_inspect(ctx, m, &text)
                 : tileopt_model_describe(ctx, m, a->all ? SIZE_MAX : SHORT_TILE_LIST, &text);
    tileopt_model_free(m);
    if (st != TILEOPT_OK) return cli_fail(ctx, st, NULL);
    if (a->json) {
        if (several) fputs(first ? "" : ",\n", stdout);
        fputs(text, stdout);
        if (!several) fputc('\n', stdout);
    } else {
        if (several) printf("%s== %s\n", first ? "" : "\n", path);
        fputs(text, stdout);
    }
    tileopt_free(text);
    return EXIT_OK;
}

int cmd_inspect(tileopt_ctx *ctx, int argc, char **argv) {
    const cli_command *cmd = cli_command_find("inspect");
    if (cli_wants_help(cmd, argc, argv)) return EXIT_OK;
    char **paths = calloc((size_t)argc, sizeof *paths);
    if (!paths) return tool_error(EXIT_FAIL, "out of memory");
    inspect_args a = {0};
    size_t n = 0;
    int rc = cli_parse(ctx, cmd, argc, argv, take_option, &a, paths, &n);
    if (!rc && !n) rc = tool_error(EXIT_USAGE, "inspect needs a model");
    if (rc) {
        free(paths);
        return rc;
    }
    /* a model that fails is an error line; the others are still shown */
    bool several = n > 1, first = true;
    if (several && a.json) fputs("[\n", stdout);
    for (size_t i = 0; i < n; i++) {
        int one = inspect_one(ctx, paths[i], &a, several, first);
        if (one) rc = rc ? rc : one;
        else first = false;
        fflush(stdout);
    }
    if (several && a.json) fputs("\n]\n", stdout);
    free(paths);
    return rc;
}

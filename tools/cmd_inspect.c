/*
** `tileopt inspect MODEL.onnx [--json]`: the model's summary and its Tile nodes,
** as text or as the library's JSON.
*/
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static const char inspect_help[] =
    "usage: tileopt inspect MODEL.onnx [--json] [--all]\n"
    "Prints opsets, IR version, graph inputs and outputs, node counts per op type,\n"
    "initializers and the Tile nodes.\n"
    "options:\n"
    "  --json                    print one JSON object instead, every Tile included\n"
    "                            (default: text)\n"
    "  --all                     list every Tile (default: the first 10)\n";

/* Tiles the text form lists without --all: a 6,600-node model has thousands. */
#define SHORT_TILE_LIST 10

int cmd_inspect(tileopt_ctx *ctx, int argc, char **argv) {
    if (cli_wants_help(argc, argv, inspect_help)) return EXIT_OK;
    const char *path = NULL;
    bool json = false, all = false;
    for (int i = 1; i < argc; i++) {
        int rc;
        if (strcmp(argv[i], "--json") == 0) json = true;
        else if (strcmp(argv[i], "--all") == 0) all = true;
        else if (argv[i][0] == '-' && argv[i][1] && (rc = cmd_option_flag(ctx, argc, argv, &i, true)) >= 0) {
            if (rc) return rc;
        } else if (argv[i][0] == '-' && argv[i][1]) return tool_error(EXIT_USAGE, "unknown option '%s'", argv[i]);
        else if (!path) path = argv[i];
        else return tool_error(EXIT_USAGE, "unexpected argument '%s'", argv[i]);
    }
    if (!path) return tool_error(EXIT_USAGE, "inspect needs a model");
    tileopt_model *m;
    if (tileopt_model_load(ctx, path, &m) != TILEOPT_OK)
        return tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
    char *text;
    tileopt_status st = json ? tileopt_model_inspect(ctx, m, &text)
                             : tileopt_model_describe(ctx, m, all ? SIZE_MAX : SHORT_TILE_LIST,
                                                      &text);
    tileopt_model_free(m);
    if (st != TILEOPT_OK) return tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
    if (json) puts(text);
    else fputs(text, stdout);
    tileopt_free(text);
    return EXIT_OK;
}

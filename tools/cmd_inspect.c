/*
** `tileopt inspect MODEL.onnx [--json]`: the model's summary and its Tile nodes,
** as text or as the library's JSON.
*/
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cmd.h"

static void print_shape(const cJSON *shape) {
    if (!cJSON_IsArray(shape)) {
        fputs("?", stdout);
        return;
    }
    const cJSON *d;
    fputs("[", stdout);
    int i = 0;
    cJSON_ArrayForEach(d, shape) {
        if (i++) fputs(",", stdout);
        if (cJSON_IsNumber(d)) printf("%.0f", d->valuedouble);
        else if (cJSON_IsString(d)) fputs(d->valuestring, stdout);
        else fputs("?", stdout);
    }
    fputs("]", stdout);
}

static const char inspect_help[] =
    "usage: tileopt inspect MODEL.onnx [--json]\n"
    "Prints opsets, IR version, node and initializer counts and every Tile.\n"
    "options:\n"
    "  --json                    print one JSON object instead (default: text)\n";

int cmd_inspect(tileopt_ctx *ctx, int argc, char **argv) {
    if (cli_wants_help(argc, argv, inspect_help)) return EXIT_OK;
    const char *path = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        int rc;
        if (strcmp(argv[i], "--json") == 0) json = true;
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
    tileopt_status st = tileopt_model_inspect(ctx, m, &text);
    tileopt_model_free(m);
    if (st != TILEOPT_OK) return tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
    if (json) {
        puts(text);
        tileopt_free(text);
        return EXIT_OK;
    }
    cJSON *o = cJSON_Parse(text);
    tileopt_free(text);
    if (!o) return tool_error(EXIT_FAIL, "out of memory");
#define NUM(k) cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k))
    printf("%s\n  ir_version %.0f, producer '%s'\n  opsets:", path, NUM("ir_version"),
           cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "producer")));
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "opset_import")) {
        const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "domain"));
        printf(" %s=%.0f", d && d[0] ? d : "ai.onnx",
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "version")));
    }
    printf("\n  nodes %.0f, initializers %.0f (%.0f bytes)\n", NUM("nodes"), NUM("initializers"),
           NUM("initializer_bytes"));
    const cJSON *tiles = cJSON_GetObjectItemCaseSensitive(o, "tiles");
    printf("  Tile nodes: %d\n", cJSON_GetArraySize(tiles));
#undef NUM
    cJSON_ArrayForEach(e, tiles) {
        printf("    %s (%s): ", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "node")),
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "form")));
        print_shape(cJSON_GetObjectItemCaseSensitive(e, "input_shape"));
        fputs(" x repeats ", stdout);
        print_shape(cJSON_GetObjectItemCaseSensitive(e, "repeats"));
        fputs(" -> ", stdout);
        print_shape(cJSON_GetObjectItemCaseSensitive(e, "output_shape"));
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(e, "graph");
        if (g) printf("  (inside %s)", cJSON_GetStringValue(g));
        fputs("\n", stdout);
    }
    cJSON_Delete(o);
    return EXIT_OK;
}

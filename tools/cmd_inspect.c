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
    "usage: tileopt inspect MODEL.onnx [--json] [--all]\n"
    "Prints opsets, IR version, graph inputs and outputs, node counts per op type,\n"
    "initializers and the Tile nodes.\n"
    "options:\n"
    "  --json                    print one JSON object instead, every Tile included\n"
    "                            (default: text)\n"
    "  --all                     list every Tile (default: the first 10)\n";

/* Tiles the text form lists without --all: a 6,600-node model has thousands. */
#define SHORT_TILE_LIST 10

static void print_io(const char *what, const cJSON *list) {
    const cJSON *e;
    cJSON_ArrayForEach(e, list) {
        printf("  %s %s: %s ", what,
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "name")),
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "dtype")));
        print_shape(cJSON_GetObjectItemCaseSensitive(e, "shape"));
        fputs("\n", stdout);
    }
}

/* "Conv 20, Relu 17, ..." most frequent first (ties by name), wrapped. */
static void print_ops(const cJSON *ops) {
    int n = cJSON_GetArraySize(ops);
    const cJSON **v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) return;
    int k = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, ops) v[k++] = e;
    for (int i = 1; i < n; i++) /* insertion sort: op types are few */
        for (int j = i; j > 0; j--) {
            const cJSON *a = v[j - 1], *b = v[j];
            if (a->valuedouble > b->valuedouble ||
                (a->valuedouble == b->valuedouble && strcmp(a->string, b->string) <= 0))
                break;
            v[j - 1] = b;
            v[j] = a;
        }
    fputs("  ops:", stdout);
    int col = 6;
    for (int i = 0; i < n; i++) {
        char item[600];
        int len = snprintf(item, sizeof item, " %s %.0f%s", v[i]->string, v[i]->valuedouble,
                           i + 1 < n ? "," : "");
        if (col + len > 80) {
            fputs("\n      ", stdout);
            col = 6;
        }
        fputs(item, stdout);
        col += len;
    }
    fputs("\n", stdout);
    free(v);
}

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
    fputs("\n", stdout);
    print_io("input", cJSON_GetObjectItemCaseSensitive(o, "inputs"));
    print_io("output", cJSON_GetObjectItemCaseSensitive(o, "outputs"));
    printf("  nodes %.0f, initializers %.0f (%.0f bytes)\n", NUM("nodes"), NUM("initializers"),
           NUM("initializer_bytes"));
    print_ops(cJSON_GetObjectItemCaseSensitive(o, "ops"));
    const cJSON *tiles = cJSON_GetObjectItemCaseSensitive(o, "tiles");
    int n_tiles = cJSON_GetArraySize(tiles), shown = 0;
    printf("  Tile nodes: %d\n", n_tiles);
#undef NUM
    cJSON_ArrayForEach(e, tiles) {
        if (!all && shown++ == SHORT_TILE_LIST) {
            printf("    ... %d more (--all lists every Tile)\n", n_tiles - SHORT_TILE_LIST);
            break;
        }
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

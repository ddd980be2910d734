/*
** `tileopt report REPORT.json IN.onnx OUT.onnx -o PAGE.html`: the page that
** optimize --html writes, from a report written earlier and its two models.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd.h"

/* A report of a 400k-node model is tens of MB; past this it is no report. */
#define REPORT_MAX_BYTES ((size_t)1 << 31)

static int take_option(void *user, const cli_option *o, const char *value) {
    if (o->id == ID_OUTPUT) *(const char **)user = value;
    return EXIT_OK;
}

static int read_all(const char *path, char **text, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return tool_error(EXIT_FAIL, "cannot read '%s': %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        if (cap >= REPORT_MAX_BYTES) {
            free(buf);
            fclose(f);
            return tool_error(EXIT_FAIL, "'%s' is over 2 GiB: no report", path);
        }
        char *nb = realloc(buf, cap * 2);
        if (!nb) free(buf);
        buf = nb;
        cap *= 2;
    }
    bool bad = !buf || ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return tool_error(EXIT_FAIL, buf ? "cannot read '%s'" : "out of memory reading '%s'", path);
    }
    *text = buf;
    *len = n;
    return EXIT_OK;
}

int cmd_report(tileopt_ctx *ctx, int argc, char **argv) {
    const cli_command *cmd = cli_command_find("report");
    if (cli_wants_help(cmd, argc, argv)) return EXIT_OK;
    char **ops = calloc((size_t)argc, sizeof *ops);
    if (!ops) return tool_error(EXIT_FAIL, "out of memory");
    const char *page = NULL;
    size_t n = 0;
    int rc = cli_parse(ctx, cmd, argc, argv, take_option, &page, ops, &n);
    tileopt_model *in = NULL, *out = NULL;
    char *text = NULL;
    size_t len = 0;
    if (rc) goto done;
    if (n != 3) {
        rc = tool_error(EXIT_USAGE, "report needs REPORT.json IN.onnx OUT.onnx (got %zu operand%s)",
                        n, n == 1 ? "" : "s");
        goto done;
    }
    if (!page) {
        rc = tool_error(EXIT_USAGE, "report needs -o PAGE.html");
        goto done;
    }
    /* the page never replaces what it is made from */
    for (size_t i = 0; i < 3; i++)
        if (cli_same_file(ops[i], page)) {
            rc = tool_error(EXIT_USAGE, "-o '%s' is one of the files the page is made from", page);
            goto done;
        }
    struct stat st;
    if (stat(page, &st) == 0 && !S_ISREG(st.st_mode)) {
        rc = tool_error(EXIT_FAIL, "'%s' exists and is not a regular file", page);
        goto done;
    }
    if ((rc = read_all(ops[0], &text, &len))) goto done;
    tileopt_status s = tileopt_model_load(ctx, ops[1], &in);
    if (!s) s = tileopt_model_load(ctx, ops[2], &out);
    if (s) {
        rc = cli_fail(ctx, s, NULL);
        goto done;
    }
    s = tileopt_html_save(ctx, text, len, in, out, page);
    /* a file that is no report is named, as a model that fails to load is */
    if (s) rc = cli_fail(ctx, s, s == TILEOPT_PARSE || s == TILEOPT_INVALID ? ops[0] : NULL);
done:
    tileopt_model_free(in);
    tileopt_model_free(out);
    free(text);
    free(ops);
    return rc;
}

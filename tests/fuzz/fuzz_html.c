/*
** Fuzz target (e): the page of --html. The bytes are read as a report's JSON
** text and made into a page, with the demo model (models/legacy_repeat.onnx,
** found through SRCDIR) on both sides when it can be read, so actions that
** name its nodes are drawn.
**
** Properties beyond "no crash": a page is valid UTF-8 and holds no script but
** its own (one <script> and the data blocks), whatever the report's strings
** say; a text that is no report fails with TILEOPT_PARSE or TILEOPT_INVALID.
*/
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/err.h"
#include "tileopt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool valid_utf8(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t k = graph_utf8_len((const unsigned char *)s + i, n - i);
        if (!k) return false;
        i += k;
    }
    return true;
}

static size_t count(const char *s, const char *what) {
    size_t n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
    return n;
}

/* The demo model, read once: a fuzz process runs the target many times. */
static tileopt_model *demo(tileopt_ctx *ctx) {
    static tileopt_model *model;
    static bool tried;
    if (!tried) {
        tried = true;
        const char *src = getenv("SRCDIR");
        char path[4096];
        snprintf(path, sizeof path, "%s/models/legacy_repeat.onnx", src ? src : ".");
        if (tileopt_model_load(ctx, path, &model) != TILEOPT_OK) model = NULL;
    }
    return model;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tileopt_ctx *ctx;
    if (tileopt_ctx_new(&ctx) != TILEOPT_OK) return 0;
    tileopt_model *m = demo(ctx);
    char *page = NULL;
    size_t n = 0;
    tileopt_status st = tileopt_html(ctx, (const char *)data, size, m, m, &page, &n);
    if (st == TILEOPT_OK) {
        if (!page || strlen(page) != n || !valid_utf8(page, n)) abort();
        size_t blocks = count(page, "<script type=\"application/x-tileopt\"");
        if (count(page, "<script") != blocks + 1 || count(page, "<script>") != 1) abort();
        if (count(page, "<img") || count(page, "<iframe")) abort();
    } else if (st != TILEOPT_PARSE && st != TILEOPT_INVALID && st != TILEOPT_NOMEM &&
               st != TILEOPT_LIMIT) {
        abort();
    }
    tileopt_free(page);
    tileopt_ctx_free(ctx);
    return 0;
}

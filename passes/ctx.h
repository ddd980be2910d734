/* The public context (tileopt_ctx) behind the API in tileopt.h. */
#ifndef TILEOPT_CTX_H
#define TILEOPT_CTX_H

#include <cjson/cJSON.h>

#include "passes/pass.h"
#include "tileopt.h"

struct tileopt_ctx {
    pass_options opt;
    errbuf err;
    cJSON *report;           /* NULL until tileopt_report_begin() */
    tileopt_progress_fn progress;
    void *progress_user;
    tileopt_temp_fn temp_hook;
    void *temp_user;
};

struct tileopt_model {
    graph_model *g;
};

struct tileopt_tensor {
    tensor *t;
    char *name;
};

/* Copy an errbuf failure into ctx and return its code. */
tileopt_status ctx_fail(tileopt_ctx *ctx, const errbuf *err);
/* The report's top-level section `key`, an array when type_array is set and an
** object otherwise, created on first use; owned by the report. */
cJSON *ctx_report_section(tileopt_ctx *ctx, const char *key, int type_array);

#endif

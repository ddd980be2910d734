/* The options and the helpers every pass uses to report what it did. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"

void pass_options_default(pass_options *o) {
    memset(o, 0, sizeof *o);
    o->target_opset = 0;
    o->fold_limit = (uint64_t)1 << 20;
    o->seed = 1;
    graph_limits_default(&o->graph_lim);
    eval_limits_default(&o->eval_lim);
}

/* o is NULL when the log ran out of memory (its finish reports it). */
void pass_add_text(cJSON *o, const char *key, const char *text) {
    if (o) cJSON_AddItemToObjectCS(o, key, cJSON_CreateString(text));
}

void pass_add_static(cJSON *o, const char *key, const char *text) {
    if (o) cJSON_AddItemToObjectCS(o, key, cJSON_CreateStringReference(text));
}

void pass_add_number(cJSON *o, const char *key, double v) {
    if (o) cJSON_AddItemToObjectCS(o, key, cJSON_CreateNumber(v));
}

cJSON *pass_action(pass_ctx *pc, graph *g, int32_t node, const char *action) {
    if (strcmp(action, "skipped") != 0) pc->changed = true;
    if (!g || node < 0) return pass_log_begin(pc->log, "", "", NULL, action);
    const Onnx__NodeProto *n = graph_node(g, node);
    char buf[512];
    return pass_log_begin(pc->log, graph_node_id(g, node), n->op_type ? n->op_type : "",
                          graph_path(g, buf, sizeof buf), action);
}

cJSON *pass_skip(pass_ctx *pc, graph *g, int32_t node, const char *fmt, ...) {
    char reason[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    cJSON *a = pass_action(pc, g, node, "skipped");
    if (a) pass_add_text(a, "reason", reason);
    return a;
}

void pass_warn(pass_ctx *pc, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (pc->warnings) cJSON_AddItemToArray(pc->warnings, cJSON_CreateString(msg));
}

cJSON *pass_json_int(int64_t v) {
    cJSON *item = cJSON_CreateNumber((double)v);
    /* A double holds integers exactly only up to 2^53: past that the exact
    ** digits ride along in valuestring, which cJSON frees with the item, for
    ** the report's writer. */
    const int64_t exact = (int64_t)1 << 53;
    if (!item || (v >= -exact && v <= exact)) return item;
    char text[24];
    snprintf(text, sizeof text, "%" PRId64, v);
    if (!(item->valuestring = strdup(text))) {
        cJSON_Delete(item);
        return NULL;
    }
    return item;
}

cJSON *pass_json_ints(const int64_t *v, size_t n) {
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < n; i++) cJSON_AddItemToArray(arr, pass_json_int(v[i]));
    return arr;
}

void pass_progress(pass_ctx *pc, const char *what, uint64_t done, uint64_t total) {
    if (pc->progress) pc->progress(pc->progress_user, what, done, total);
}

eval_limits pass_eval_limits(const pass_ctx *pc) {
    eval_limits lim = pc->opt->eval_lim;
    lim.progress = pc->progress;
    lim.progress_user = pc->progress_user;
    return lim;
}

int pass_for_each_graph(pass_ctx *pc, graph *g, int (*fn)(pass_ctx *, graph *)) {
    int rc = fn(pc, g);
    for (uint32_t i = 0; !rc && i < graph_n_nodes(g); i++) {
        if (graph_node_removed(g, (int32_t)i)) continue;
        for (graph *s = graph_node_subgraphs(g, (int32_t)i); !rc && s; s = s->next_sibling)
            rc = pass_for_each_graph(pc, s, fn);
    }
    return rc;
}

int pass_check_repeats(pass_ctx *pc, graph *g, int32_t node, const tensor *repeats,
                       const graph_type *input) {
    int64_t rep[TENSOR_MAX_RANK];
    size_t n = 0;
    int rc;
    if (repeats->elem == DT_INT64 && repeats->rank == 1 &&
        !tensor_to_i64(repeats, rep, TENSOR_MAX_RANK, &n))
        rc = err_set(pc->err, TILEOPT_INVALID, "more than %d repeats", TENSOR_MAX_RANK);
    else
        rc = op_tile_check_repeats(repeats->elem, repeats->rank, rep, n, input, pc->err);
    if (rc) return (int)err_prefix(pc->err, "node %s (Tile): ", graph_node_id(g, node));
    return TILEOPT_OK;
}

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
    /* fold everything, never growing the file (--fold-scope tile --fold-limit 1M
    ** is what fold did before it simplified whole models) */
    o->fold_limit = 0;
    o->fold_scope_all = true;
    graph_limits_default(&o->lim);
}

void pass_strings_add(pass_strings *s, const char *text) {
    if (s->failed) return;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        char **v = realloc(s->v, cap * sizeof *v);
        if (!v) {
            s->failed = true;
            return;
        }
        s->v = v;
        s->cap = cap;
    }
    if (!(s->v[s->n] = strdup(text))) s->failed = true;
    else s->n++;
}

void pass_strings_clear(pass_strings *s) {
    for (size_t i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
    *s = (pass_strings){0};
}

json_w *pass_action(pass_ctx *pc, graph *g, int32_t node, const char *action) {
    if (strcmp(action, "skipped") != 0) pc->changed = true;
    if (!g || node < 0) return pass_log_begin(pc->log, "", "", NULL, action);
    const Onnx__NodeProto *n = graph_node(g, node);
    char buf[512];
    return pass_log_begin(pc->log, graph_node_id(g, node), n->op_type ? n->op_type : "",
                          graph_path(g, buf, sizeof buf), action);
}

json_w *pass_skip(pass_ctx *pc, graph *g, int32_t node, const char *fmt, ...) {
    char reason[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    json_w *a = pass_action(pc, g, node, "skipped");
    json_put_str(a, "reason", reason);
    return a;
}

void pass_warn(pass_ctx *pc, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pass_strings_add(pc->warnings, msg);
}

void pass_progress(pass_ctx *pc, const char *what, uint64_t done, uint64_t total) {
    graph_progress_tell(&pc->eval.progress, what, done, total);
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

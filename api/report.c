/* The JSON report (schema: tests/report.schema.json), model summaries, and running
** a pass with its report entry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/ctx.h"
#include "passes/passes.h"
#include "shape/infer.h"

bool api_json_put(cJSON *parent, const char *key, cJSON *item) {
    bool ok = parent && item &&
              (key ? cJSON_AddItemToObject(parent, key, item) : cJSON_AddItemToArray(parent, item));
    if (!ok) cJSON_Delete(item);
    return ok;
}

/* count[key] += 1 in a JSON object of counts; false when out of memory. */
static bool bump(cJSON *count, const char *key) {
    cJSON *v = cJSON_GetObjectItemCaseSensitive(count, key);
    if (v) cJSON_SetNumberValue(v, v->valuedouble + 1);
    return v || cJSON_AddNumberToObject(count, key, 1);
}

static void count_graph(const Onnx__GraphProto *g, api_counts *c) {
    c->nodes += g->n_node;
    c->inits += g->n_initializer;
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        c->init_bytes += t->has_raw_data ? t->raw_data.len
                       : t->n_float_data * 4 + t->n_int32_data * 4 + t->n_int64_data * 8 +
                             t->n_double_data * 8 + t->n_uint64_data * 8;
        for (size_t k = 0; k < t->n_string_data; k++) c->init_bytes += t->string_data[k].len;
        for (size_t k = 0; k < t->n_external_data; k++) {
            const Onnx__StringStringEntryProto *e = t->external_data[k];
            if (!e->key || !e->value) continue;
            if (strcmp(e->key, "length") == 0) {
                uint64_t len = strtoull(e->value, NULL, 10);
                c->init_bytes += len;
                c->ext_bytes += len;
            } else if (strcmp(e->key, "location") == 0 && c->ext_files &&
                       !cJSON_GetObjectItemCaseSensitive(c->ext_files, e->value)) {
                if (!cJSON_AddTrueToObject(c->ext_files, e->value)) c->failed = true;
            }
        }
    }
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        op_id id = op_of(n);
        if (id == OP_Tile) c->tiles++;
        if (c->ops && id != OP_NONE) {
            /* the entry kept per op: a model of 400k nodes bumps it 400k times */
            cJSON *e = c->op_count[id];
            if (e) cJSON_SetNumberValue(e, e->valuedouble + 1);
            else if (!(c->op_count[id] = cJSON_AddNumberToObject(c->ops, op_table[id].name, 1)))
                c->failed = true;
        } else if (c->ops) {
            char key[512];
            const char *op = n->op_type ? n->op_type : "";
            if (graph_domain_is_default(n->domain)) snprintf(key, sizeof key, "%s", op);
            else snprintf(key, sizeof key, "%s:%s", n->domain, op);
            if (!bump(c->ops, key)) c->failed = true;
        }
        for (size_t a = 0; a < n->n_attribute; a++) {
            if (n->attribute[a]->g) count_graph(n->attribute[a]->g, c);
            for (size_t k = 0; k < n->attribute[a]->n_graphs; k++)
                count_graph(n->attribute[a]->graphs[k], c);
        }
    }
}

cJSON *api_opsets_json(const graph_model *m) {
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < m->pb->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->pb->opset_import[i];
        cJSON *e = cJSON_CreateObject();
        if (!api_json_put(arr, NULL, e) ||
            !cJSON_AddStringToObject(e, "domain", o->domain ? o->domain : "") ||
            !api_json_put(e, "version", pass_json_int(o->version))) {
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

void api_count(const graph_model *m, api_counts *c) {
    memset(c, 0, sizeof *c);
    c->ops = cJSON_CreateObject();
    c->ext_files = cJSON_CreateObject();
    c->failed = !c->ops || !c->ext_files;
    count_graph(m->pb->graph, c);
}

void api_counts_free(api_counts *c) {
    cJSON_Delete(c->ops);
    cJSON_Delete(c->ext_files);
    c->ops = c->ext_files = NULL;
}

/* The file names of a set (the keys of an object) as a JSON array. */
static cJSON *names_of(const cJSON *set) {
    cJSON *arr = cJSON_CreateArray();
    const cJSON *e;
    cJSON_ArrayForEach(e, set) {
        if (!api_json_put(arr, NULL, cJSON_CreateString(e->string))) {
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

static cJSON *summary(const graph_model *m, const char *path, uint64_t file_bytes) {
    api_counts c;
    api_count(m, &c);
    cJSON *s = cJSON_CreateObject();
    /* all of it or nothing: a report never leaves a key out for want of memory */
    bool ok = s && !c.failed && cJSON_AddStringToObject(s, "path", path ? path : "") &&
              api_json_put(s, "ir_version", pass_json_int(m->pb->ir_version)) &&
              api_json_put(s, "opset_import", api_opsets_json(m)) &&
              cJSON_AddNumberToObject(s, "nodes", (double)c.nodes) &&
              cJSON_AddNumberToObject(s, "tiles", (double)c.tiles) &&
              cJSON_AddNumberToObject(s, "initializer_bytes", (double)c.init_bytes) &&
              cJSON_AddNumberToObject(s, "file_bytes", (double)file_bytes) &&
              cJSON_AddNumberToObject(s, "external_data_bytes", (double)c.ext_bytes) &&
              api_json_put(s, "external_data_files", names_of(c.ext_files)) &&
              api_json_put(s, "ops", cJSON_Duplicate(c.ops, 1));
    api_counts_free(&c);
    if (ok) return s;
    cJSON_Delete(s);
    return NULL;
}

tileopt_status tileopt_report_begin(tileopt_ctx *ctx, tileopt_model *input,
                                    const char *input_path) {
    cJSON_Delete(ctx->report);
    pass_json_failed(); /* what failed before is not this report's */
    cJSON *r = ctx->report = cJSON_CreateObject();
    bool ok = r && cJSON_AddStringToObject(r, "tool", "tileopt") &&
              cJSON_AddStringToObject(r, "version", TILEOPT_VERSION) &&
              api_json_put(r, "input", summary(input->g, input_path, input->g->file_bytes));
    if (ok && ctx->n_input_shapes) {
        cJSON *fixed = cJSON_AddArrayToObject(r, "input_shapes");
        ok = fixed != NULL;
        for (size_t i = 0; ok && i < ctx->n_input_shapes; i++) {
            const api_input_shape *f = &ctx->input_shapes[i];
            cJSON *e = cJSON_CreateObject();
            ok = api_json_put(fixed, NULL, e) && cJSON_AddStringToObject(e, "name", f->name) &&
                 api_json_put(e, "shape", pass_json_ints(f->dims, (size_t)f->rank));
        }
    }
    ok = ok && cJSON_AddArrayToObject(r, "passes") && cJSON_AddArrayToObject(r, "warnings") &&
         !pass_json_failed();
    if (ok) return TILEOPT_OK;
    cJSON_Delete(r);
    ctx->report = NULL;
    return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
}

tileopt_status tileopt_report_end(tileopt_ctx *ctx, tileopt_model *output,
                                  const char *output_path) {
    if (!ctx->report) return err_set(&ctx->err, TILEOPT_MISUSE, "no report was begun");
    /* The bytes the last save wrote, or what packing would write. */
    uint64_t bytes = output->g->saved_bytes ? output->g->saved_bytes
                                            : graph_model_packed_size(output->g);
    /* a failure since the passes ran (a warning, the verify section) counts
    ** too; on failure an output section from before stays */
    cJSON *s = summary(output->g, output_path, bytes);
    if (!s || pass_json_failed()) {
        cJSON_Delete(s);
        return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    }
    cJSON_DeleteItemFromObject(ctx->report, "output");
    return api_json_put(ctx->report, "output", s)
               ? TILEOPT_OK
               : err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
}

char *api_json_print(const cJSON *root) {
    pass_text t = {0};
    pass_json_write(&t, root, 0, true);
    pass_text_put(&t, "", 1);
    if (t.failed) {
        free(t.p);
        return NULL;
    }
    return t.p;
}

const void *tileopt_report_overview(const tileopt_ctx *ctx) { return ctx->report; }

/* The overview with each pass's actions text parsed into an array. The
** texts (34 MB for a 400k-node model) are parsed from the overview's own
** items: they are taken out while the tree is copied, not copied too. */
const void *tileopt_report_json(tileopt_ctx *ctx) {
    cJSON_Delete(ctx->report_full);
    ctx->report_full = NULL;
    if (!ctx->report) return NULL;
    cJSON *passes = cJSON_GetObjectItemCaseSensitive(ctx->report, "passes");
    int n = cJSON_GetArraySize(passes);
    char **texts = calloc(n > 0 ? (size_t)n : 1, sizeof *texts);
    if (!texts) return NULL;
    int k = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, passes) {
        cJSON *raw = cJSON_GetObjectItemCaseSensitive(e, "actions");
        if (cJSON_IsRaw(raw)) {
            texts[k] = raw->valuestring;
            raw->valuestring = NULL;
        }
        k++;
    }
    cJSON *full = cJSON_Duplicate(ctx->report, 1);
    k = 0;
    cJSON_ArrayForEach(e, passes) {
        cJSON *raw = cJSON_GetObjectItemCaseSensitive(e, "actions");
        if (cJSON_IsRaw(raw)) raw->valuestring = texts[k];
        k++;
    }
    k = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(full, "passes")) {
        cJSON *arr = texts[k] ? cJSON_Parse(texts[k]) : NULL;
        k++;
        if (!arr || !cJSON_ReplaceItemInObjectCaseSensitive(e, "actions", arr)) {
            cJSON_Delete(arr);
            cJSON_Delete(full);
            full = NULL;
            break;
        }
    }
    free(texts);
    ctx->report_full = full;
    return full;
}

tileopt_status tileopt_report_string(const tileopt_ctx *ctx, char **out) {
    *out = ctx->report ? api_json_print(ctx->report) : NULL;
    return *out ? TILEOPT_OK : TILEOPT_NOMEM;
}

tileopt_status tileopt_report_save(tileopt_ctx *ctx, const char *path) {
    if (!ctx->report) return err_set(&ctx->err, TILEOPT_MISUSE, "no report was begun");
    char *text = api_json_print(ctx->report);
    if (!text) return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    size_t n = strlen(text);
    text[n] = '\n'; /* the terminator becomes the final newline a text file wants */
    int rc = graph_write_atomic(path, text, n + 1, ctx->temp_hook, ctx->temp_user, &ctx->err);
    free(text);
    return rc ? err_prefix(&ctx->err, "report: ") : TILEOPT_OK;
}

cJSON *ctx_report_section(tileopt_ctx *ctx, const char *key, int type_array) {
    if (!ctx->report) return NULL;
    cJSON *s = cJSON_GetObjectItemCaseSensitive(ctx->report, key);
    if (!s) {
        s = type_array ? cJSON_CreateArray() : cJSON_CreateObject();
        cJSON_AddItemToObject(ctx->report, key, s);
    }
    return s;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Run pass p once as the given round (1 for the run asked for). *changed tells
** whether it changed the model, *fold_again whether it left ops on constant
** inputs for fold; either may be NULL. */
static tileopt_status run_pass(tileopt_ctx *ctx, tileopt_model *model, const pass_def *p,
                               int round, bool *changed, bool *fold_again) {
    const char *name = p->name;
    pass_json_failed(); /* what failed before is not this entry's */
    cJSON *entry = cJSON_CreateObject();
    pass_log *log = pass_log_new();
    cJSON *scratch_warnings = cJSON_CreateArray();
    cJSON *warnings = ctx_report_section(ctx, "warnings", 1);
    if (!entry || !log || !scratch_warnings) {
        cJSON_Delete(entry);
        pass_log_free(log);
        cJSON_Delete(scratch_warnings);
        return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    }
    pass_ctx pc = {
        .model = model->g,
        .opt = &ctx->opt,
        .log = log,
        .warnings = warnings ? warnings : scratch_warnings,
        .err = &ctx->err,
        .progress = ctx->progress,
        .progress_user = ctx->progress_user,
    };
    err_clear(&ctx->err);
    double t0 = now_ms();
    pass_snapshot *snap;
    cJSON *changes = NULL;
    int rc = pass_snapshot_take(model->g, &snap);
    if (rc) {
        err_set(&ctx->err, rc, "out of memory");
    } else {
        rc = p->run(&pc);
        tbuf_cache_drop();
        if (!rc && (rc = pass_snapshot_report(snap, &pc, &changes)))
            err_set(&ctx->err, rc, "out of memory");
        pass_snapshot_free(snap);
    }
    if (pc.changed || changes) model->g->shapes_current = false;
    char *actions = NULL;
    size_t n_changed = 0, n_skipped = 0;
    int lrc = pass_log_finish(log, &actions, &n_changed, &n_skipped);
    pass_log_free(log);
    cJSON *raw = actions ? cJSON_CreateRaw("") : NULL;
    if (raw) { /* the text is taken over, not copied: it can be big */
        free(raw->valuestring);
        raw->valuestring = actions;
    } else {
        free(actions);
        if (!rc) rc = err_set(&ctx->err, lrc ? lrc : TILEOPT_NOMEM, "out of memory");
    }
    cJSON_AddStringToObject(entry, "name", name);
    if (round > 1) cJSON_AddNumberToObject(entry, "round", round);
    cJSON_AddNumberToObject(entry, "duration_ms", now_ms() - t0);
    cJSON_AddBoolToObject(entry, "changed", pc.changed);
    cJSON_AddNumberToObject(entry, "nodes_changed", (double)n_changed);
    cJSON_AddNumberToObject(entry, "nodes_skipped", (double)n_skipped);
    cJSON_AddItemToObject(entry, "actions", raw ? raw : cJSON_CreateArray());
    if (changes) cJSON_AddItemToObject(entry, "changes", changes);
    cJSON *passes = ctx_report_section(ctx, "passes", 1);
    if (!api_json_put(passes, NULL, entry)) entry = NULL;
    /* the entry, the warnings and the changes are whole, or the run fails */
    if (pass_json_failed() && !rc) rc = err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    if (rc && entry) cJSON_AddStringToObject(entry, "error", ctx->err.msg);
    cJSON_Delete(scratch_warnings);
    if (rc) return ctx_fail(ctx, &ctx->err);
    if (changed) *changed = pc.changed;
    if (fold_again) *fold_again = pc.fold_again;
    return TILEOPT_OK;
}

tileopt_status tileopt_pass_run(tileopt_ctx *ctx, tileopt_model *model, const char *name) {
    const pass_def *p = pass_find(name);
    if (!p) return err_set(&ctx->err, TILEOPT_MISUSE, "unknown pass '%s'", name);
    return run_pass(ctx, model, p, 1, NULL, NULL);
}

/* Rounds of fold and fuse in all, the first included: each further round needs
** a fuse rewrite that put an op on constant inputs, which is rare, and each
** round is linear. */
#define PASS_ROUNDS 4

tileopt_status tileopt_passes_run(tileopt_ctx *ctx, tileopt_model *model,
                                  const char *const *names, size_t n) {
    if (!names && n) return err_set(&ctx->err, TILEOPT_MISUSE, "no pass names");
    for (size_t i = 0; i < n; i++)
        if (!pass_find(names[i]))
            return err_set(&ctx->err, TILEOPT_MISUSE, "unknown pass '%s'",
                           names[i] ? names[i] : "(null)");
    const pass_def *fold = NULL, *fuse = NULL;
    bool again = false;
    for (size_t i = 0; i < n; i++) {
        const pass_def *p = pass_find(names[i]);
        if (p->run == pass_fold) fold = p;
        if (p->run == pass_fuse) fuse = p;
        bool left = false;
        if (run_pass(ctx, model, p, 1, NULL, &left) != TILEOPT_OK)
            return err_prefix(&ctx->err, "pass %s: ", p->name);
        again |= left;
    }
    /* fuse can move an op onto a constant input; fold computes it, which may
    ** let fuse go on: repeat both until neither has work, so that one run is
    ** the fixed point a second optimize would reach */
    for (int round = 2; fold && fuse && again && round <= PASS_ROUNDS; round++) {
        bool folded = false;
        if (run_pass(ctx, model, fold, round, &folded, NULL) != TILEOPT_OK)
            return err_prefix(&ctx->err, "pass %s: ", fold->name);
        again = false;
        if (folded && run_pass(ctx, model, fuse, round, NULL, &again) != TILEOPT_OK)
            return err_prefix(&ctx->err, "pass %s: ", fuse->name);
    }
    return TILEOPT_OK;
}

/* At most this many passes in one list: a longer one is a mistake, and the
** names live on the stack. */
#define OPTIMIZE_MAX_PASSES 64

tileopt_status tileopt_optimize(tileopt_ctx *ctx, tileopt_model *model, const char *passes) {
    const char *names[OPTIMIZE_MAX_PASSES];
    size_t n = 0;
    if (!passes) {
        for (const char *p; n < OPTIMIZE_MAX_PASSES && (p = tileopt_pass_name(n));) names[n++] = p;
        return tileopt_passes_run(ctx, model, names, n);
    }
    if (strcmp(passes, "none") == 0) return tileopt_passes_run(ctx, model, NULL, 0);
    char buf[1024];
    if (strlen(passes) >= sizeof buf)
        return err_set(&ctx->err, TILEOPT_MISUSE, "pass list longer than %zu bytes",
                       sizeof buf - 1);
    memcpy(buf, passes, strlen(passes) + 1);
    for (char *s = buf;;) {
        char *comma = strchr(s, ',');
        if (comma) *comma = '\0';
        if (!*s) return err_set(&ctx->err, TILEOPT_MISUSE, "an empty pass name in '%s'", passes);
        if (n == OPTIMIZE_MAX_PASSES)
            return err_set(&ctx->err, TILEOPT_MISUSE, "more than %d passes",
                           OPTIMIZE_MAX_PASSES);
        names[n++] = s;
        if (!comma) break;
        s = comma + 1;
    }
    return tileopt_passes_run(ctx, model, names, n);
}

/* The report (schema: tests/report.schema.json): model summaries, the pass
** runs of the driver, the verify section; as JSON text and through typed
** accessors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/ctx.h"

/* ------------------------------------------------------------------ names */

static bool names_grow(api_names *s) {
    uint32_t n = s->n_slots ? s->n_slots * 2 : 64;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots) return false;
    for (size_t k = 0; k < s->n; k++) {
        uint32_t i = graph_name_hash(s->name[k]) & (n - 1);
        while (slots[i]) i = (i + 1) & (n - 1);
        slots[i] = (uint32_t)k + 1;
    }
    free(s->slots);
    s->slots = slots;
    s->n_slots = n;
    return true;
}

bool api_names_bump(api_names *s, const char *name, uint64_t by) {
    if ((uint64_t)(s->n + 1) * 2 > s->n_slots && !names_grow(s)) return false;
    uint32_t mask = s->n_slots - 1, i = graph_name_hash(name) & mask;
    for (; s->slots[i]; i = (i + 1) & mask)
        if (strcmp(s->name[s->slots[i] - 1], name) == 0) {
            s->count[s->slots[i] - 1] += by;
            return true;
        }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        char **nv = realloc(s->name, cap * sizeof *nv);
        if (!nv) return false;
        s->name = nv;
        uint64_t *cv = realloc(s->count, cap * sizeof *cv);
        if (!cv) return false;
        s->count = cv;
        s->cap = cap;
    }
    if (!(s->name[s->n] = strdup(name))) return false;
    s->count[s->n] = by;
    s->slots[i] = (uint32_t)++s->n;
    return true;
}

size_t api_names_find(const api_names *s, const char *name) {
    if (!s->n_slots) return SIZE_MAX;
    uint32_t mask = s->n_slots - 1;
    for (uint32_t i = graph_name_hash(name) & mask; s->slots[i]; i = (i + 1) & mask)
        if (strcmp(s->name[s->slots[i] - 1], name) == 0) return s->slots[i] - 1;
    return SIZE_MAX;
}

void api_names_free(api_names *s) {
    for (size_t i = 0; i < s->n; i++) free(s->name[i]);
    free(s->name);
    free(s->count);
    free(s->slots);
    *s = (api_names){0};
}

/* -------------------------------------------------------------- summaries */

typedef struct counting {
    api_summary *s;
    uint32_t op_index[OP_COUNT]; /* index + 1 in s->ops of each default-domain op seen */
    bool failed;
} counting;

static void count_graph(const Onnx__GraphProto *g, counting *c) {
    int64_t *st = c->s->stat;
    st[TILEOPT_MODEL_NODES] += (int64_t)g->n_node;
    st[TILEOPT_MODEL_INITIALIZERS] += (int64_t)g->n_initializer;
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        uint64_t bytes = t->has_raw_data ? t->raw_data.len
                         : t->n_float_data * 4 + t->n_int32_data * 4 + t->n_int64_data * 8 +
                               t->n_double_data * 8 + t->n_uint64_data * 8;
        for (size_t k = 0; k < t->n_string_data; k++) bytes += t->string_data[k].len;
        st[TILEOPT_MODEL_INITIALIZER_BYTES] += (int64_t)bytes;
        for (size_t k = 0; k < t->n_external_data; k++) {
            const Onnx__StringStringEntryProto *e = t->external_data[k];
            if (!e->key || !e->value) continue;
            if (strcmp(e->key, "length") == 0) {
                int64_t len = (int64_t)strtoull(e->value, NULL, 10);
                st[TILEOPT_MODEL_INITIALIZER_BYTES] += len;
                st[TILEOPT_MODEL_EXTERNAL_DATA_BYTES] += len;
            } else if (strcmp(e->key, "location") == 0 &&
                       !api_names_bump(&c->s->files, e->value, 1)) {
                c->failed = true;
            }
        }
    }
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        op_id id = op_of(n);
        if (id == OP_Tile) st[TILEOPT_MODEL_TILES]++;
        if (id != OP_NONE && c->op_index[id]) {
            /* a model of 400k nodes counts 400k times: no lookup for the known ops */
            c->s->ops.count[c->op_index[id] - 1]++;
        } else {
            char key[512];
            const char *op = n->op_type ? n->op_type : "";
            if (id != OP_NONE) snprintf(key, sizeof key, "%s", op_table[id].name);
            else if (graph_domain_is_default(n->domain)) snprintf(key, sizeof key, "%s", op);
            else snprintf(key, sizeof key, "%s:%s", n->domain, op);
            if (!api_names_bump(&c->s->ops, key, 1)) c->failed = true;
            else if (id != OP_NONE) c->op_index[id] = (uint32_t)c->s->ops.n;
        }
        for (size_t a = 0; a < n->n_attribute; a++) {
            if (n->attribute[a]->g) count_graph(n->attribute[a]->g, c);
            for (size_t k = 0; k < n->attribute[a]->n_graphs; k++)
                count_graph(n->attribute[a]->graphs[k], c);
        }
    }
}

int api_summarize(const graph_model *m, const char *path, uint64_t file_bytes, api_summary *s) {
    memset(s, 0, sizeof *s);
    counting c = {.s = s};
    const Onnx__ModelProto *pb = m->pb;
    s->stat[TILEOPT_MODEL_IR_VERSION] = pb->ir_version;
    s->stat[TILEOPT_MODEL_OPSET] = graph_opset(m, "");
    s->stat[TILEOPT_MODEL_FILE_BYTES] = (int64_t)file_bytes;
    s->path = strdup(path ? path : "");
    s->opset_domain = calloc(pb->n_opset_import ? pb->n_opset_import : 1, sizeof *s->opset_domain);
    s->opset_version = calloc(pb->n_opset_import ? pb->n_opset_import : 1,
                              sizeof *s->opset_version);
    if (!s->path || !s->opset_domain || !s->opset_version) return TILEOPT_NOMEM;
    for (size_t i = 0; i < pb->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = pb->opset_import[i];
        if (!(s->opset_domain[i] = strdup(o->domain ? o->domain : ""))) return TILEOPT_NOMEM;
        s->opset_version[i] = o->version;
        s->n_opsets++;
    }
    count_graph(pb->graph, &c);
    return c.failed ? TILEOPT_NOMEM : TILEOPT_OK;
}

void api_summary_free(api_summary *s) {
    free(s->path);
    api_names_free(&s->ops);
    api_names_free(&s->files);
    for (size_t i = 0; i < s->n_opsets; i++) free(s->opset_domain[i]);
    free(s->opset_domain);
    free(s->opset_version);
    memset(s, 0, sizeof *s);
}

void api_opsets_write(json_w *w, const api_summary *s) {
    json_array(w);
    for (size_t i = 0; i < s->n_opsets; i++) {
        json_object(w);
        json_put_str(w, "domain", s->opset_domain[i]);
        json_put_int(w, "version", s->opset_version[i]);
        json_end(w);
    }
    json_end(w);
}

static void summary_write(json_w *w, const api_summary *s) {
    json_object(w);
    json_put_str(w, "path", s->path);
    json_put_int(w, "ir_version", s->stat[TILEOPT_MODEL_IR_VERSION]);
    json_key(w, "opset_import");
    api_opsets_write(w, s);
    json_put_num(w, "nodes", (double)s->stat[TILEOPT_MODEL_NODES]);
    json_put_num(w, "tiles", (double)s->stat[TILEOPT_MODEL_TILES]);
    json_put_num(w, "initializer_bytes", (double)s->stat[TILEOPT_MODEL_INITIALIZER_BYTES]);
    json_put_num(w, "file_bytes", (double)s->stat[TILEOPT_MODEL_FILE_BYTES]);
    json_put_num(w, "external_data_bytes", (double)s->stat[TILEOPT_MODEL_EXTERNAL_DATA_BYTES]);
    json_key(w, "external_data_files");
    json_array(w);
    for (size_t i = 0; i < s->files.n; i++) json_str(w, s->files.name[i]);
    json_end(w);
    json_key(w, "ops");
    json_object(w);
    for (size_t i = 0; i < s->ops.n; i++) json_put_num(w, s->ops.name[i], (double)s->ops.count[i]);
    json_end(w);
    json_end(w);
}

/* ----------------------------------------------------------------- report */

void api_verify_clear(api_verify *v) {
    free(v->json);
    free(v->reason);
    free(v->inputs);
    memset(v, 0, sizeof *v);
}

static void report_clear(tileopt_ctx *ctx) {
    api_report *r = &ctx->report;
    api_summary_free(&r->input);
    api_summary_free(&r->output);
    api_verify_clear(&r->verify);
    r->begun = r->has_output = false;
    pass_results_clear(&ctx->results);
}

void api_report_free(tileopt_ctx *ctx) { report_clear(ctx); }

tileopt_status tileopt_report_begin(tileopt_ctx *ctx, tileopt_model *input,
                                    const char *input_path) {
    report_clear(ctx);
    if (api_summarize(input->g, input_path, input->g->file_bytes, &ctx->report.input)) {
        api_summary_free(&ctx->report.input);
        return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    }
    ctx->report.begun = true;
    return TILEOPT_OK;
}

tileopt_status tileopt_report_end(tileopt_ctx *ctx, tileopt_model *output,
                                  const char *output_path) {
    if (!ctx->report.begun) return err_set(&ctx->err, TILEOPT_MISUSE, "no report was begun");
    /* The bytes the last save wrote, or what packing would write. */
    uint64_t bytes = output->g->saved_bytes ? output->g->saved_bytes
                                            : graph_model_packed_size(output->g);
    /* on failure an output section from before stays */
    api_summary s;
    if (api_summarize(output->g, output_path, bytes, &s)) {
        api_summary_free(&s);
        return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    }
    api_summary_free(&ctx->report.output);
    ctx->report.output = s;
    ctx->report.has_output = true;
    return TILEOPT_OK;
}

char *api_text_finish(pass_text *t) {
    pass_text_put(t, "", 1);
    if (!t->failed) return t->p;
    free(t->p);
    return NULL;
}

static void entry_write(json_w *w, const pass_entry *e) {
    json_object(w);
    json_put_str(w, "name", e->name);
    if (e->stat[TILEOPT_PASS_ROUND] > 1)
        json_put_num(w, "round", (double)e->stat[TILEOPT_PASS_ROUND]);
    json_put_num(w, "duration_ms", e->duration_ms);
    json_put_bool(w, "changed", e->stat[TILEOPT_PASS_CHANGED] != 0);
    json_put_num(w, "nodes_changed", (double)e->stat[TILEOPT_PASS_NODES_CHANGED]);
    json_put_num(w, "nodes_skipped", (double)e->stat[TILEOPT_PASS_NODES_SKIPPED]);
    json_key(w, "actions");
    json_raw(w, e->actions ? e->actions : "[]");
    if (e->changes) {
        json_key(w, "changes");
        json_raw(w, e->changes);
    }
    if (e->error) json_put_str(w, "error", e->error);
    json_end(w);
}

/* The report as text, or NULL when out of memory (or when a warning could not
** be kept: a report never leaves something out). */
static char *report_text(const tileopt_ctx *ctx) {
    const api_report *r = &ctx->report;
    if (ctx->results.warnings.failed) return NULL;
    pass_text t = {0};
    json_w w;
    json_init(&w, &t, true, 0);
    json_object(&w);
    json_put_str(&w, "tool", "tileopt");
    json_put_str(&w, "version", TILEOPT_VERSION);
    json_key(&w, "input");
    summary_write(&w, &r->input);
    if (ctx->n_input_shapes) {
        json_key(&w, "input_shapes");
        json_array(&w);
        for (size_t i = 0; i < ctx->n_input_shapes; i++) {
            const api_input_shape *f = &ctx->input_shapes[i];
            json_object(&w);
            json_put_str(&w, "name", f->name);
            json_put_ints(&w, "shape", f->dims, (size_t)f->rank);
            json_end(&w);
        }
        json_end(&w);
    }
    json_key(&w, "passes");
    json_array(&w);
    for (size_t i = 0; i < ctx->results.n; i++) entry_write(&w, &ctx->results.v[i]);
    json_end(&w);
    json_key(&w, "warnings");
    json_array(&w);
    for (size_t i = 0; i < ctx->results.warnings.n; i++) json_str(&w, ctx->results.warnings.v[i]);
    json_end(&w);
    if (r->verify.json) {
        json_key(&w, "verify");
        json_raw(&w, r->verify.json);
    }
    if (r->has_output) {
        json_key(&w, "output");
        summary_write(&w, &r->output);
    }
    json_end(&w);
    return api_text_finish(&t);
}

tileopt_status tileopt_report_string(const tileopt_ctx *ctx, char **out) {
    *out = ctx->report.begun ? report_text(ctx) : NULL;
    return *out ? TILEOPT_OK : TILEOPT_NOMEM;
}

tileopt_status tileopt_report_save(tileopt_ctx *ctx, const char *path) {
    if (!ctx->report.begun) return err_set(&ctx->err, TILEOPT_MISUSE, "no report was begun");
    char *text = report_text(ctx);
    if (!text) return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    size_t n = strlen(text);
    text[n] = '\n'; /* the terminator becomes the final newline a text file wants */
    int rc = graph_write_atomic(path, text, n + 1, ctx->temp_hook, ctx->temp_user, &ctx->err);
    free(text);
    return rc ? err_prefix(&ctx->err, "report: ") : TILEOPT_OK;
}

/* -------------------------------------------------------------- accessors */

static const api_summary *side_of(const tileopt_ctx *ctx, tileopt_side side) {
    const api_report *r = &ctx->report;
    if (!r->begun) return NULL;
    if (side == TILEOPT_INPUT) return &r->input;
    return side == TILEOPT_OUTPUT && r->has_output ? &r->output : NULL;
}

int tileopt_report_has(const tileopt_ctx *ctx, tileopt_side side) {
    return side_of(ctx, side) != NULL;
}

const char *tileopt_report_path(const tileopt_ctx *ctx, tileopt_side side) {
    const api_summary *s = side_of(ctx, side);
    return s ? s->path : NULL;
}

int64_t tileopt_report_model_stat(const tileopt_ctx *ctx, tileopt_side side,
                                  tileopt_model_stat stat) {
    const api_summary *s = side_of(ctx, side);
    return s && (unsigned)stat < TILEOPT_MODEL_STAT_COUNT_ ? s->stat[stat] : 0;
}

size_t tileopt_report_op_count(const tileopt_ctx *ctx, tileopt_side side) {
    const api_summary *s = side_of(ctx, side);
    return s ? s->ops.n : 0;
}

const char *tileopt_report_op(const tileopt_ctx *ctx, tileopt_side side, size_t i,
                              uint64_t *nodes) {
    const api_summary *s = side_of(ctx, side);
    if (!s || i >= s->ops.n) return NULL;
    if (nodes) *nodes = s->ops.count[i];
    return s->ops.name[i];
}

size_t tileopt_report_opset_count(const tileopt_ctx *ctx, tileopt_side side) {
    const api_summary *s = side_of(ctx, side);
    return s ? s->n_opsets : 0;
}

const char *tileopt_report_opset(const tileopt_ctx *ctx, tileopt_side side, size_t i,
                                 int64_t *version) {
    const api_summary *s = side_of(ctx, side);
    if (!s || i >= s->n_opsets) return NULL;
    if (version) *version = s->opset_version[i];
    return s->opset_domain[i];
}

size_t tileopt_report_data_file_count(const tileopt_ctx *ctx, tileopt_side side) {
    const api_summary *s = side_of(ctx, side);
    return s ? s->files.n : 0;
}

const char *tileopt_report_data_file(const tileopt_ctx *ctx, tileopt_side side, size_t i) {
    const api_summary *s = side_of(ctx, side);
    return s && i < s->files.n ? s->files.name[i] : NULL;
}

static const pass_entry *entry_at(const tileopt_ctx *ctx, size_t i) {
    return ctx->report.begun && i < ctx->results.n ? &ctx->results.v[i] : NULL;
}

size_t tileopt_report_pass_count(const tileopt_ctx *ctx) {
    return ctx->report.begun ? ctx->results.n : 0;
}

const char *tileopt_report_pass_name(const tileopt_ctx *ctx, size_t i) {
    const pass_entry *e = entry_at(ctx, i);
    return e ? e->name : NULL;
}

uint64_t tileopt_report_pass_stat(const tileopt_ctx *ctx, size_t i, tileopt_pass_stat stat) {
    const pass_entry *e = entry_at(ctx, i);
    return e && (unsigned)stat < TILEOPT_PASS_STAT_COUNT_ ? e->stat[stat] : 0;
}

double tileopt_report_pass_ms(const tileopt_ctx *ctx, size_t i) {
    const pass_entry *e = entry_at(ctx, i);
    return e ? e->duration_ms : 0;
}

const char *tileopt_report_pass_error(const tileopt_ctx *ctx, size_t i) {
    const pass_entry *e = entry_at(ctx, i);
    return e ? e->error : NULL;
}

const char *tileopt_report_verify_inputs(const tileopt_ctx *ctx) {
    return ctx->report.begun ? ctx->report.verify.inputs : NULL;
}

tileopt_verdict tileopt_report_verdict(const tileopt_ctx *ctx, const char **reason) {
    if (reason) *reason = ctx->report.begun ? ctx->report.verify.reason : NULL;
    return ctx->report.begun ? ctx->report.verify.verdict : TILEOPT_VERDICT_NONE;
}

size_t tileopt_report_warning_count(const tileopt_ctx *ctx) {
    return ctx->report.begun ? ctx->results.warnings.n : 0;
}

const char *tileopt_report_warning(const tileopt_ctx *ctx, size_t i) {
    return ctx->report.begun && i < ctx->results.warnings.n ? ctx->results.warnings.v[i] : NULL;
}

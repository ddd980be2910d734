/* The JSON report (schema: tests/report.schema.json), model summaries, inspect,
** and running a pass with its report entry. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "passes/ctx.h"
#include "passes/infer.h"

typedef struct counts {
    uint64_t nodes, tiles, inits, init_bytes;
} counts;

static void count_graph(const Onnx__GraphProto *g, counts *c) {
    c->nodes += g->n_node;
    c->inits += g->n_initializer;
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        c->init_bytes += t->has_raw_data ? t->raw_data.len
                       : t->n_float_data * 4 + t->n_int32_data * 4 + t->n_int64_data * 8 +
                             t->n_double_data * 8 + t->n_uint64_data * 8;
        for (size_t k = 0; k < t->n_string_data; k++) c->init_bytes += t->string_data[k].len;
        for (size_t k = 0; k < t->n_external_data; k++)
            if (t->external_data[k]->key && strcmp(t->external_data[k]->key, "length") == 0)
                c->init_bytes += strtoull(t->external_data[k]->value, NULL, 10);
    }
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (graph_node_is(n, "Tile")) c->tiles++;
        for (size_t a = 0; a < n->n_attribute; a++) {
            if (n->attribute[a]->g) count_graph(n->attribute[a]->g, c);
            for (size_t k = 0; k < n->attribute[a]->n_graphs; k++)
                count_graph(n->attribute[a]->graphs[k], c);
        }
    }
}

static cJSON *opsets_json(const graph_model *m) {
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < m->pb->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->pb->opset_import[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "domain", o->domain ? o->domain : "");
        cJSON_AddItemToObject(e, "version", pass_json_int(o->version));
        cJSON_AddItemToArray(arr, e);
    }
    return arr;
}

static cJSON *summary(const graph_model *m, const char *path, uint64_t file_bytes) {
    counts c = {0, 0, 0, 0};
    count_graph(m->pb->graph, &c);
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "path", path ? path : "");
    cJSON_AddItemToObject(s, "ir_version", pass_json_int(m->pb->ir_version));
    cJSON_AddItemToObject(s, "opset_import", opsets_json(m));
    cJSON_AddNumberToObject(s, "nodes", (double)c.nodes);
    cJSON_AddNumberToObject(s, "tiles", (double)c.tiles);
    cJSON_AddNumberToObject(s, "initializer_bytes", (double)c.init_bytes);
    cJSON_AddNumberToObject(s, "file_bytes", (double)file_bytes);
    return s;
}

tileopt_status tileopt_report_begin(tileopt_ctx *ctx, tileopt_model *input,
                                    const char *input_path) {
    cJSON_Delete(ctx->report);
    ctx->report = cJSON_CreateObject();
    if (!ctx->report) return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    cJSON_AddStringToObject(ctx->report, "tool", "tileopt");
    cJSON_AddStringToObject(ctx->report, "version", TILEOPT_VERSION);
    cJSON_AddItemToObject(ctx->report, "input",
                          summary(input->g, input_path, input->g->file_bytes));
    cJSON_AddItemToObject(ctx->report, "passes", cJSON_CreateArray());
    cJSON_AddItemToObject(ctx->report, "warnings", cJSON_CreateArray());
    return TILEOPT_OK;
}

tileopt_status tileopt_report_end(tileopt_ctx *ctx, tileopt_model *output,
                                  const char *output_path) {
    if (!ctx->report) return err_set(&ctx->err, TILEOPT_MISUSE, "no report was begun");
    /* The bytes the last save wrote, or what packing would write. */
    uint64_t bytes = output->g->saved_bytes ? output->g->saved_bytes
                                            : graph_model_packed_size(output->g);
    cJSON_DeleteItemFromObject(ctx->report, "output");
    cJSON_AddItemToObject(ctx->report, "output", summary(output->g, output_path, bytes));
    return TILEOPT_OK;
}

/*
** JSON text that any parser reads back exactly: integers as integers, never in
** exponent form (an opset of 2^62 is not 4.611686018427388e+18), with the exact
** digits pass_json_int kept; and valid UTF-8, names from the model included,
** with each byte that is not UTF-8 written as the text \xNN, as error messages
** do. The tree stays as callers of tileopt_report_json see it: a copy is printed.
*/
/* s with each byte that is not UTF-8 written as the text \xNN; NULL when s is
** valid already (or out of memory, which leaves s as it is). */
static char *utf8_fixed(const char *s) {
    const unsigned char *t = (const unsigned char *)s;
    size_t n = strlen(s), bad = 0;
    for (size_t i = 0, len; i < n; i += len ? len : 1)
        if (!(len = graph_utf8_len(t + i, n - i))) bad++;
    char *fixed = bad ? malloc(n + 3 * bad + 1) : NULL;
    if (!fixed) return NULL;
    size_t k = 0;
    for (size_t i = 0, len; i < n; i += len ? len : 1) {
        len = graph_utf8_len(t + i, n - i);
        if (len) {
            memcpy(fixed + k, t + i, len);
            k += len;
        } else {
            k += (size_t)sprintf(fixed + k, "\\x%02x", t[i]);
        }
    }
    fixed[k] = '\0';
    return fixed;
}

static void make_printable(cJSON *item) {
    for (; item; item = item->next) {
        /* Keys come from the model too (a dim_param naming a verify input). */
        char *key = item->string ? utf8_fixed(item->string) : NULL;
        if (key && !(item->type & cJSON_StringIsConst)) {
            free(item->string);
            item->string = key;
        } else {
            free(key);
        }
        if (cJSON_IsNumber(item)) {
            char text[32];
            const char *exact = item->valuestring;
            double v = item->valuedouble;
            if (!exact && v == floor(v) && fabs(v) < 9.2e18) {
                snprintf(text, sizeof text, "%lld", (long long)v);
                exact = text;
            }
            char *copy = exact ? strdup(exact) : NULL;
            if (copy) {
                free(item->valuestring);
                item->valuestring = copy;
                item->type = cJSON_Raw;
            }
        } else if (cJSON_IsString(item) && item->valuestring) {
            char *fixed = utf8_fixed(item->valuestring);
            if (fixed) {
                free(item->valuestring);
                item->valuestring = fixed;
            }
        }
        make_printable(item->child);
    }
}

static char *report_print(const cJSON *root) {
    cJSON *copy = cJSON_Duplicate(root, 1);
    if (!copy) return NULL;
    make_printable(copy);
    char *text = cJSON_Print(copy);
    cJSON_Delete(copy);
    return text;
}

const void *tileopt_report_json(const tileopt_ctx *ctx) { return ctx->report; }

tileopt_status tileopt_report_string(const tileopt_ctx *ctx, char **out) {
    *out = ctx->report ? report_print(ctx->report) : NULL;
    return *out ? TILEOPT_OK : TILEOPT_NOMEM;
}

tileopt_status tileopt_report_save(tileopt_ctx *ctx, const char *path) {
    if (!ctx->report) return err_set(&ctx->err, TILEOPT_MISUSE, "no report was begun");
    char *text = report_print(ctx->report);
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

tileopt_status tileopt_pass_run(tileopt_ctx *ctx, tileopt_model *model, const char *name) {
    const pass_def *p = pass_find(name);
    if (!p) return err_set(&ctx->err, TILEOPT_MISUSE, "unknown pass '%s'", name);
    cJSON *entry = cJSON_CreateObject();
    cJSON *actions = cJSON_CreateArray();
    cJSON *scratch_warnings = cJSON_CreateArray();
    cJSON *warnings = ctx_report_section(ctx, "warnings", 1);
    if (!entry || !actions || !scratch_warnings) {
        cJSON_Delete(entry);
        cJSON_Delete(actions);
        cJSON_Delete(scratch_warnings);
        return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    }
    pass_ctx pc = {
        .model = model->g,
        .opt = &ctx->opt,
        .actions = actions,
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
    cJSON_AddStringToObject(entry, "name", name);
    cJSON_AddNumberToObject(entry, "duration_ms", now_ms() - t0);
    cJSON_AddBoolToObject(entry, "changed", pc.changed);
    cJSON_AddItemToObject(entry, "actions", actions);
    if (changes) cJSON_AddItemToObject(entry, "changes", changes);
    if (rc) cJSON_AddStringToObject(entry, "error", ctx->err.msg);
    cJSON *passes = ctx_report_section(ctx, "passes", 1);
    if (passes)
        cJSON_AddItemToArray(passes, entry);
    else
        cJSON_Delete(entry);
    cJSON_Delete(scratch_warnings);
    if (rc) return ctx_fail(ctx, &ctx->err);
    return TILEOPT_OK;
}

/* ------------------------------------------------------------------ inspect */

/* Values of a small constant int tensor from an initializer or Constant node. */
static bool const_ints(graph *g, const char *name, int64_t *out, size_t cap, size_t *n) {
    if (!name) return false;
    const Onnx__TensorProto *t = graph_initializer(g, name);
    if (!t) {
        const Onnx__NodeProto *p = NULL;
        for (graph *s = g; s && !p; s = s->parent) p = graph_producer(s, name, NULL);
        const Onnx__AttributeProto *a = p && graph_node_is(p, "Constant") ? graph_attr(p, "value") : NULL;
        t = a ? a->t : NULL;
    }
    if (!t) return false;
    graph_tensor_data d;
    errbuf err;
    if (graph_tensor_read(g->model, t, &d, &err) || d.numel > cap) return false;
    bool ok = true;
    for (uint64_t i = 0; i < d.numel; i++) {
        switch (d.elem) {
        case DT_INT64: out[i] = ((const int64_t *)d.data)[i]; break;
        case DT_INT32: out[i] = ((const int32_t *)d.data)[i]; break;
        case DT_FLOAT:
        case DT_DOUBLE: {
            /* Tile-1 tiles/axis may be floats; converting NaN or a value past int64
            ** is undefined behaviour, so such repeats are just unknown. */
            double v = d.elem == DT_FLOAT ? ((const float *)d.data)[i] : ((const double *)d.data)[i];
            if (v >= -9.2e18 && v <= 9.2e18) out[i] = (int64_t)v;
            else ok = false;
            break;
        }
        default: ok = false;
        }
    }
    *n = (size_t)d.numel;
    if (d.owned) free(d.data);
    return ok;
}

static cJSON *shape_json(const graph_type *t) {
    if (t->rank < 0) return cJSON_CreateNull();
    cJSON *arr = cJSON_CreateArray();
    for (int32_t i = 0; i < t->rank; i++) {
        if (t->dims[i] >= 0)
            cJSON_AddItemToArray(arr, pass_json_int(t->dims[i]));
        else if (t->syms && t->syms[i])
            cJSON_AddItemToArray(arr, cJSON_CreateString(t->syms[i]));
        else
            cJSON_AddItemToArray(arr, cJSON_CreateNull());
    }
    return arr;
}

static void inspect_tiles(graph *g, int64_t opset, cJSON *list) {
    for (uint32_t i = 0; i < graph_n_nodes(g); i++) {
        const Onnx__NodeProto *n = graph_node(g, (int32_t)i);
        for (graph *s = graph_node_subgraphs(g, (int32_t)i); s; s = s->next_sibling)
            inspect_tiles(s, opset, list);
        if (!graph_node_is(n, "Tile")) continue;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "node", graph_node_id(g, (int32_t)i));
        if (g->parent) cJSON_AddStringToObject(e, "graph", graph_node_id(g->parent, g->parent_node));
        cJSON_AddStringToObject(e, "form", opset < 6 ? "Tile-1" : "Tile-6");
        const char *in = graph_node_input(n, 0);
        graph_value *v = in ? graph_find(g, in) : NULL;
        graph_type none = {0, -1, NULL, NULL};
        const graph_type *it = v ? &v->type : &none;
        if (v && v->outer >= 0) it = &v->outer_graph->values[v->outer].type;
        cJSON_AddStringToObject(e, "input", in ? in : "");
        cJSON_AddItemToObject(e, "input_shape", shape_json(it));
        int64_t reps[64];
        size_t nr = 0;
        bool known = false;
        if (opset < 6) {
            int64_t tiles[1], axis[1];
            size_t a, b;
            if (const_ints(g, graph_node_input(n, 1), tiles, 1, &a) &&
                const_ints(g, graph_node_input(n, 2), axis, 1, &b) && a == 1 && b == 1) {
                cJSON_AddNumberToObject(e, "tiles", (double)tiles[0]);
                cJSON_AddNumberToObject(e, "axis", (double)axis[0]);
                if (it->rank > 0 && it->rank <= 64) {
                    int64_t ax = axis[0] < 0 ? axis[0] + it->rank : axis[0];
                    if (ax >= 0 && ax < it->rank) {
                        nr = (size_t)it->rank;
                        for (size_t k = 0; k < nr; k++) reps[k] = (int64_t)k == ax ? tiles[0] : 1;
                        known = true;
                    }
                }
            }
        } else {
            known = const_ints(g, graph_node_input(n, 1), reps, 64, &nr);
        }
        cJSON_AddItemToObject(e, "repeats", known ? pass_json_ints(reps, nr) : cJSON_CreateNull());
        /* A symbolic dim keeps its name only where it is repeated once. */
        const char *syms[64];
        int64_t dims[64];
        graph_type ot = *it;
        if (known && it->rank == (int32_t)nr) {
            for (size_t k = 0; k < nr; k++) {
                /* Hostile repeats (negative, or overflowing the product) give an
                ** unknown dim rather than signed overflow. */
                int64_t od;
                dims[k] = it->dims[k] >= 0 && reps[k] >= 0 &&
                          !__builtin_mul_overflow(it->dims[k], reps[k], &od) ? od : -1;
                syms[k] = it->dims[k] < 0 && reps[k] == 1 && it->syms ? it->syms[k] : NULL;
            }
            ot.dims = dims;
            ot.syms = syms;
        } else {
            const char *out = n->n_output ? n->output[0] : NULL;
            graph_value *ov = out ? graph_find(g, out) : NULL;
            ot = ov ? ov->type : none;
        }
        cJSON_AddItemToObject(e, "output_shape", shape_json(&ot));
        cJSON_AddItemToArray(list, e);
    }
}

tileopt_status tileopt_model_inspect(tileopt_ctx *ctx, tileopt_model *model, char **json_out) {
    *json_out = NULL;
    graph_model *m = model->g;
    counts c = {0, 0, 0, 0};
    count_graph(m->pb->graph, &c);
    /* Shapes the model does not declare come from inference; a model inference
    ** cannot follow still gets inspected with what is declared. */
    errbuf ignored;
    infer_shapes(m, &ctx->opt, &ignored);
    cJSON *o = cJSON_CreateObject();
    if (!o) return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    cJSON_AddStringToObject(o, "path", m->path ? m->path : "");
    cJSON_AddItemToObject(o, "ir_version", pass_json_int(m->pb->ir_version));
    cJSON_AddStringToObject(o, "producer", m->pb->producer_name ? m->pb->producer_name : "");
    cJSON_AddItemToObject(o, "opset_import", opsets_json(m));
    cJSON_AddNumberToObject(o, "nodes", (double)c.nodes);
    cJSON_AddNumberToObject(o, "initializers", (double)c.inits);
    cJSON_AddNumberToObject(o, "initializer_bytes", (double)c.init_bytes);
    cJSON_AddNumberToObject(o, "file_bytes", (double)m->file_bytes);
    cJSON *tiles = cJSON_CreateArray();
    inspect_tiles(m->main, graph_opset(m, ""), tiles);
    cJSON_AddItemToObject(o, "tiles", tiles);
    *json_out = report_print(o);
    cJSON_Delete(o);
    return *json_out ? TILEOPT_OK : err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
}

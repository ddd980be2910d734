/* tileopt_model_inspect and tileopt_model_describe: the model summary plus
** every Tile with its input shape, repeats and output shape, as JSON (schema:
** tests/inspect.schema.json) and as text for people. One walk writes either,
** so the two never disagree. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/ctx.h"
#include "graph/const.h"
#include "shape/infer.h"

/* Where an inspection goes: JSON (w), text (t), or both. */
typedef struct out {
    json_w *w;
    pass_text *t;
    size_t max_tiles;        /* Tiles the text lists */
    size_t tiles;            /* Tiles met so far */
    int64_t all_tiles;       /* in the model */
} out;

/* Values of a small constant integer tensor; false when not one. */
static bool const_ints(graph *g, const char *name, int64_t *out, size_t cap, size_t *n) {
    bool found = false;
    errbuf ignored;
    return graph_const_ints(g, name, out, cap, n, &found, &ignored) == TILEOPT_OK && found;
}

static void textf(pass_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void textf(pass_text *t, const char *fmt, ...) {
    if (!t) return;
    va_list ap;
    va_start(ap, fmt);
    pass_text_vprintf(t, fmt, ap);
    va_end(ap);
}

/* A shape: numbers, named dims by name, unknown dims as null ("?" in text);
** an unknown rank is null ("?"). */
static void shape_out(json_w *w, pass_text *t, const graph_type *ty) {
    if (ty->rank < 0) {
        json_null(w);
        textf(t, "?");
        return;
    }
    json_array(w);
    textf(t, "[");
    for (int32_t i = 0; i < ty->rank; i++) {
        if (i) textf(t, ",");
        if (ty->dims && ty->dims[i] >= 0) {
            json_int(w, ty->dims[i]);
            textf(t, "%lld", (long long)ty->dims[i]);
        } else if (ty->syms && ty->syms[i]) {
            json_str(w, ty->syms[i]);
            textf(t, "%s", ty->syms[i]);
        } else {
            json_null(w);
            textf(t, "?");
        }
    }
    json_end(w);
    textf(t, "]");
}

/* Every Tile of g and its subgraphs. */
static void inspect_tiles(graph *g, int64_t opset, out *o) {
    for (uint32_t i = 0; i < graph_n_nodes(g); i++) {
        const Onnx__NodeProto *n = graph_node(g, (int32_t)i);
        for (graph *s = graph_node_subgraphs(g, (int32_t)i); s; s = s->next_sibling)
            inspect_tiles(s, opset, o);
        if (!graph_node_is(n, "Tile")) continue;
        json_w *w = o->w;
        pass_text *t = o->tiles < o->max_tiles ? o->t : NULL;
        if (o->t && o->tiles++ == o->max_tiles)
            textf(o->t, "    ... %lld more (--all lists every Tile)\n",
                  (long long)(o->all_tiles - (int64_t)o->max_tiles));
        char path[512];
        const char *id = graph_node_id(g, (int32_t)i), *gp = graph_path(g, path, sizeof path);
        const char *form = opset < 6 ? "Tile-1" : "Tile-6";
        json_object(w);
        json_put_str(w, "node", id);
        if (gp) json_put_str(w, "graph", gp);
        json_put_str(w, "form", form);
        textf(t, "    %s (%s): ", id, form);
        const char *in = graph_node_input(n, 0);
        graph_value *v = in ? graph_find(g, in) : NULL;
        graph_type none = {0, -1, NULL, NULL};
        const graph_type *it = v ? &graph_value_home(g, v, NULL)->type : &none;
        json_put_str(w, "input", in ? in : "");
        json_key(w, "input_shape");
        shape_out(w, t, it);
        int64_t reps[64];
        size_t nr = 0;
        bool known = false;
        if (opset < 6) {
            int64_t tiles[1], axis[1];
            size_t a, b;
            if (const_ints(g, graph_node_input(n, 1), tiles, 1, &a) &&
                const_ints(g, graph_node_input(n, 2), axis, 1, &b) && a == 1 && b == 1) {
                json_put_num(w, "tiles", (double)tiles[0]);
                json_put_num(w, "axis", (double)axis[0]);
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
        json_key(w, "repeats");
        textf(t, " x repeats ");
        if (known) {
            json_ints(w, reps, nr);
            textf(t, "[");
            for (size_t k = 0; k < nr; k++) textf(t, "%s%lld", k ? "," : "", (long long)reps[k]);
            textf(t, "]");
        } else {
            json_null(w);
            textf(t, "?");
        }
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
            const char *outn = n->n_output ? n->output[0] : NULL;
            graph_value *ov = outn ? graph_find(g, outn) : NULL;
            ot = ov ? ov->type : none;
        }
        json_key(w, "output_shape");
        textf(t, " -> ");
        shape_out(w, t, &ot);
        json_end(w);
        if (gp) textf(t, "  (inside %s)", gp);
        textf(t, "\n");
    }
}

/* The main graph's inputs (initializers listed as inputs left out) or outputs,
** each with its element type and shape where declared or inferred. */
static void inspect_io(graph *g, bool inputs, out *o) {
    json_array(o->w);
    size_t n = inputs ? g->pb->n_input : g->pb->n_output;
    for (size_t i = 0; i < n; i++) {
        const Onnx__ValueInfoProto *vi = inputs ? g->pb->input[i] : g->pb->output[i];
        graph_value *v = vi->name ? graph_find(g, vi->name) : NULL;
        if (!v || (inputs && v->initializer >= 0)) continue;
        /* a sequence or optional says so around its tensors' element type */
        int32_t elem = 0;
        graph_kind kind = graph_type_kind(vi->type, &elem);
        const char *en = elem ? dtype_name(elem) : "unknown";
        char dt[64];
        bool bare = kind == GRAPH_KIND_SEQUENCE || kind == GRAPH_KIND_OPTIONAL;
        if (bare)
            snprintf(dt, sizeof dt, "%s(%s)", kind == GRAPH_KIND_SEQUENCE ? "sequence" : "optional",
                     en);
        else
            snprintf(dt, sizeof dt, "%s", v->type.elem ? dtype_name(v->type.elem) : "unknown");
        json_object(o->w);
        json_put_str(o->w, "name", vi->name);
        json_put_str(o->w, "dtype", dt);
        json_key(o->w, "shape");
        textf(o->t, "  %s %s: %s ", inputs ? "input" : "output", vi->name, dt);
        graph_type none = {0, -1, NULL, NULL};
        shape_out(o->w, o->t, bare ? &none : &v->type);
        textf(o->t, "\n");
        json_end(o->w);
    }
    json_end(o->w);
}

/* "Conv 20, Relu 17, ..." most frequent first (ties by name), wrapped. */
static void ops_text(pass_text *t, const api_names *ops) {
    size_t n = ops->n;
    size_t *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) {
        t->failed = true;
        return;
    }
    for (size_t i = 0; i < n; i++) v[i] = i;
    for (size_t i = 1; i < n; i++) /* insertion sort: op types are few */
        for (size_t j = i; j > 0; j--) {
            size_t a = v[j - 1], b = v[j];
            if (ops->count[a] > ops->count[b] ||
                (ops->count[a] == ops->count[b] && strcmp(ops->name[a], ops->name[b]) <= 0))
                break;
            v[j - 1] = b;
            v[j] = a;
        }
    textf(t, "  ops:");
    int col = 6;
    for (size_t i = 0; i < n; i++) {
        char item[600];
        int len = snprintf(item, sizeof item, " %s %llu%s", ops->name[v[i]],
                           (unsigned long long)ops->count[v[i]], i + 1 < n ? "," : "");
        if (col + len > 80) {
            textf(t, "\n      ");
            col = 6;
        }
        textf(t, "%s", item);
        col += len;
    }
    textf(t, "\n");
    free(v);
}

static tileopt_status inspect(tileopt_ctx *ctx, tileopt_model *model, out *o) {
    graph_model *m = model->g;
    api_summary s;
    int rc = api_summarize(m, m->path, m->file_bytes, &s);
    /* Shapes the model does not declare come from inference; a model inference
    ** cannot follow still gets inspected with what is declared. Out of memory
    ** may leave inference half done: then no shapes to show. */
    errbuf e = {0};
    if (!rc && infer_shapes(m, &e) == TILEOPT_NOMEM) rc = TILEOPT_NOMEM;
    if (rc) {
        api_summary_free(&s);
        return err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
    }
    const char *producer = m->pb->producer_name ? m->pb->producer_name : "";
    json_w *w = o->w;
    json_object(w);
    json_put_str(w, "path", s.path);
    json_put_int(w, "ir_version", m->pb->ir_version);
    json_put_str(w, "producer", producer);
    json_key(w, "opset_import");
    api_opsets_write(w, &s);
    json_put_num(w, "nodes", (double)s.stat[TILEOPT_MODEL_NODES]);
    json_put_num(w, "initializers", (double)s.stat[TILEOPT_MODEL_INITIALIZERS]);
    json_put_num(w, "initializer_bytes", (double)s.stat[TILEOPT_MODEL_INITIALIZER_BYTES]);
    json_put_num(w, "file_bytes", (double)m->file_bytes);
    textf(o->t, "%s\n  ir_version %lld, producer '%s'\n  opsets:", s.path,
          (long long)m->pb->ir_version, producer);
    for (size_t i = 0; i < s.n_opsets; i++)
        textf(o->t, " %s=%lld", s.opset_domain[i][0] ? s.opset_domain[i] : "ai.onnx",
              (long long)s.opset_version[i]);
    textf(o->t, "\n");
    json_key(w, "inputs");
    inspect_io(m->main, true, o);
    json_key(w, "outputs");
    inspect_io(m->main, false, o);
    textf(o->t, "  nodes %lld, initializers %lld (%lld bytes)\n",
          (long long)s.stat[TILEOPT_MODEL_NODES], (long long)s.stat[TILEOPT_MODEL_INITIALIZERS],
          (long long)s.stat[TILEOPT_MODEL_INITIALIZER_BYTES]);
    json_key(w, "ops");
    json_object(w);
    for (size_t i = 0; i < s.ops.n; i++) json_put_num(w, s.ops.name[i], (double)s.ops.count[i]);
    json_end(w);
    if (o->t) ops_text(o->t, &s.ops);
    o->all_tiles = s.stat[TILEOPT_MODEL_TILES];
    textf(o->t, "  Tile nodes: %lld\n", (long long)o->all_tiles);
    json_key(w, "tiles");
    json_array(w);
    inspect_tiles(m->main, graph_opset(m, ""), o);
    json_end(w);
    json_end(w);
    api_summary_free(&s);
    return TILEOPT_OK;
}

tileopt_status tileopt_model_inspect(tileopt_ctx *ctx, tileopt_model *model, char **json_out) {
    pass_text t = {0};
    json_w w;
    json_init(&w, &t, true, 0);
    out o = {.w = &w};
    tileopt_status st = inspect(ctx, model, &o);
    *json_out = st ? NULL : api_text_finish(&t);
    if (st) free(t.p);
    return st ? st : *json_out ? TILEOPT_OK : err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
}

tileopt_status tileopt_model_describe(tileopt_ctx *ctx, tileopt_model *model, size_t max_tiles,
                                      char **text_out) {
    pass_text t = {0};
    out o = {.t = &t, .max_tiles = max_tiles};
    tileopt_status st = inspect(ctx, model, &o);
    *text_out = st ? NULL : api_text_finish(&t);
    if (st) free(t.p);
    return st ? st : *text_out ? TILEOPT_OK : err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
}

/* tileopt_model_inspect: the model summary plus every Tile with its input shape,
** repeats and output shape, as JSON (schema: tests/inspect.schema.json). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/ctx.h"
#include "graph/const.h"
#include "shape/infer.h"

/* Values of a small constant integer tensor; false when not one. */
static bool const_ints(graph *g, const char *name, int64_t *out, size_t cap, size_t *n) {
    bool found = false;
    errbuf ignored;
    return graph_const_ints(g, name, out, cap, n, &found, &ignored) == TILEOPT_OK && found;
}

/* NULL when out of memory (as every builder here). */
static cJSON *shape_json(const graph_type *t) {
    if (t->rank < 0) return cJSON_CreateNull();
    cJSON *arr = cJSON_CreateArray();
    for (int32_t i = 0; arr && i < t->rank; i++) {
        cJSON *d = t->dims && t->dims[i] >= 0 ? pass_json_int(t->dims[i])
                   : t->syms && t->syms[i]    ? cJSON_CreateString(t->syms[i])
                                              : cJSON_CreateNull();
        if (!api_json_put(arr, NULL, d)) {
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

/* Every Tile of g and its subgraphs appended to list; false when out of memory. */
static bool inspect_tiles(graph *g, int64_t opset, cJSON *list) {
    for (uint32_t i = 0; i < graph_n_nodes(g); i++) {
        const Onnx__NodeProto *n = graph_node(g, (int32_t)i);
        for (graph *s = graph_node_subgraphs(g, (int32_t)i); s; s = s->next_sibling)
            if (!inspect_tiles(s, opset, list)) return false;
        if (!graph_node_is(n, "Tile")) continue;
        cJSON *e = cJSON_CreateObject();
        char path[512];
        bool ok = api_json_put(list, NULL, e) &&
                  cJSON_AddStringToObject(e, "node", graph_node_id(g, (int32_t)i)) &&
                  (!graph_path(g, path, sizeof path) ||
                   cJSON_AddStringToObject(e, "graph", path)) &&
                  cJSON_AddStringToObject(e, "form", opset < 6 ? "Tile-1" : "Tile-6");
        const char *in = graph_node_input(n, 0);
        graph_value *v = in ? graph_find(g, in) : NULL;
        graph_type none = {0, -1, NULL, NULL};
        const graph_type *it = v ? &graph_value_home(g, v, NULL)->type : &none;
        ok = ok && cJSON_AddStringToObject(e, "input", in ? in : "") &&
             api_json_put(e, "input_shape", shape_json(it));
        int64_t reps[64];
        size_t nr = 0;
        bool known = false;
        if (opset < 6) {
            int64_t tiles[1], axis[1];
            size_t a, b;
            if (const_ints(g, graph_node_input(n, 1), tiles, 1, &a) &&
                const_ints(g, graph_node_input(n, 2), axis, 1, &b) && a == 1 && b == 1) {
                ok = ok && cJSON_AddNumberToObject(e, "tiles", (double)tiles[0]) &&
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
        ok = ok &&
             api_json_put(e, "repeats", known ? pass_json_ints(reps, nr) : cJSON_CreateNull());
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
        if (!ok || !api_json_put(e, "output_shape", shape_json(&ot))) return false;
    }
    return true;
}

/* The main graph's inputs (initializers listed as inputs left out) or outputs,
** each with its element type and shape where declared or inferred. */
static cJSON *io_json(graph *g, bool inputs) {
    cJSON *arr = cJSON_CreateArray();
    size_t n = inputs ? g->pb->n_input : g->pb->n_output;
    for (size_t i = 0; arr && i < n; i++) {
        const Onnx__ValueInfoProto *vi = inputs ? g->pb->input[i] : g->pb->output[i];
        graph_value *v = vi->name ? graph_find(g, vi->name) : NULL;
        if (!v || (inputs && v->initializer >= 0)) continue;
        cJSON *e = cJSON_CreateObject();
        bool ok = api_json_put(arr, NULL, e) && cJSON_AddStringToObject(e, "name", vi->name);
        /* a sequence or optional says so around its tensors' element type */
        int32_t elem = 0;
        graph_kind kind = graph_type_kind(vi->type, &elem);
        const char *en = elem ? dtype_name(elem) : "unknown";
        char dt[64];
        if (kind == GRAPH_KIND_SEQUENCE || kind == GRAPH_KIND_OPTIONAL)
            snprintf(dt, sizeof dt, "%s(%s)", kind == GRAPH_KIND_SEQUENCE ? "sequence" : "optional",
                     en);
        else
            snprintf(dt, sizeof dt, "%s", v->type.elem ? dtype_name(v->type.elem) : "unknown");
        bool bare = kind == GRAPH_KIND_SEQUENCE || kind == GRAPH_KIND_OPTIONAL;
        if (!ok || !cJSON_AddStringToObject(e, "dtype", dt) ||
            !api_json_put(e, "shape", bare ? cJSON_CreateNull() : shape_json(&v->type))) {
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

tileopt_status tileopt_model_inspect(tileopt_ctx *ctx, tileopt_model *model, char **json_out) {
    *json_out = NULL;
    graph_model *m = model->g;
    api_counts c;
    api_count(m, &c);
    /* Shapes the model does not declare come from inference; a model inference
    ** cannot follow still gets inspected with what is declared. */
    errbuf e = {0};
    cJSON *o = NULL, *tiles = NULL;
    pass_json_failed(); /* what failed before is not this tree's */
    /* out of memory may leave inference half done: then no shapes to show */
    bool ok = !c.failed && infer_shapes(m, &e) != TILEOPT_NOMEM;
    ok = ok && (o = cJSON_CreateObject()) != NULL &&
         cJSON_AddStringToObject(o, "path", m->path ? m->path : "") &&
         api_json_put(o, "ir_version", pass_json_int(m->pb->ir_version)) &&
         cJSON_AddStringToObject(o, "producer",
                                 m->pb->producer_name ? m->pb->producer_name : "") &&
         api_json_put(o, "opset_import", api_opsets_json(m)) &&
         cJSON_AddNumberToObject(o, "nodes", (double)c.nodes) &&
         cJSON_AddNumberToObject(o, "initializers", (double)c.inits) &&
         cJSON_AddNumberToObject(o, "initializer_bytes", (double)c.init_bytes) &&
         cJSON_AddNumberToObject(o, "file_bytes", (double)m->file_bytes) &&
         api_json_put(o, "inputs", io_json(m->main, true)) &&
         api_json_put(o, "outputs", io_json(m->main, false)) &&
         api_json_put(o, "ops", cJSON_Duplicate(c.ops, 1)) &&
         api_json_put(o, "tiles", tiles = cJSON_CreateArray()) &&
         inspect_tiles(m->main, graph_opset(m, ""), tiles);
    api_counts_free(&c);
    if (ok && !pass_json_failed()) *json_out = api_json_print(o);
    cJSON_Delete(o);
    return *json_out ? TILEOPT_OK : err_set(&ctx->err, TILEOPT_NOMEM, "out of memory");
}

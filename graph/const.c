/* Constant values for every layer (graph/const.h). */
#include "graph/const.h"

#include <stdlib.h>
#include <string.h>

graph_value *graph_value_home(graph *g, graph_value *v, graph **owner) {
    while (v->outer >= 0 && v->outer_graph && (uint32_t)v->outer < v->outer_graph->n_values) {
        g = v->outer_graph;
        v = &g->values[v->outer];
    }
    if (owner) *owner = g;
    return v;
}

bool graph_value_overridable(const graph *owner, const graph_value *v) {
    if (v->initializer < 0 || v->input < 0) return false;
    const Onnx__ModelProto *mp = owner->model->pb;
    return !mp->has_ir_version || mp->ir_version >= 4;
}

bool graph_value_const(const graph *owner, const graph_value *v) {
    if (v->initializer >= 0) return !graph_value_overridable(owner, v);
    return v->producer >= 0 && !graph_node_removed(owner, v->producer) &&
           graph_node_is(graph_node(owner, v->producer), "Constant");
}

bool graph_const_find(graph *g, const char *name, graph_const *c) {
    if (!name || !*name) return false;
    graph *owner = NULL;
    graph_value *v = NULL;
    /* as graph_resolve, keeping the scope that defines the value */
    for (graph *s = g; s && !v; s = s->parent) {
        v = graph_find(s, name);
        if (v) v = graph_value_home(s, v, &owner);
        if (v && !graph_value_defined(v)) v = NULL;
    }
    if (!v) return false;
    if (!graph_value_const(owner, v)) return false;
    c->owner = owner;
    c->node = -1;
    if (v->initializer >= 0) {
        c->tensor = owner->pb->initializer[v->initializer];
        return true;
    }
    errbuf e;
    if (graph_constant_value(graph_node(owner, v->producer), &c->hdr, &c->tensor, &e))
        return false;
    c->node = v->producer;
    return true;
}

int graph_const_ints(graph *g, const char *name, int64_t *out, size_t cap, size_t *n,
                     bool *found, errbuf *err) {
    *found = false;
    *n = 0;
    graph_const c;
    if (!graph_const_find(g, name, &c)) return TILEOPT_OK;
    graph_tensor_data d;
    int rc = graph_tensor_read(g->model, c.tensor, &d, err);
    if (rc) return rc;
    bool ok = d.numel <= cap;
    for (uint64_t i = 0; ok && i < d.numel; i++) {
        const uint8_t *p = (const uint8_t *)d.data;
        switch (d.elem) {
        case DT_INT64: memcpy(&out[i], p + 8 * i, 8); break;
        case DT_INT32: { int32_t x; memcpy(&x, p + 4 * i, 4); out[i] = x; break; }
        case DT_INT16: { int16_t x; memcpy(&x, p + 2 * i, 2); out[i] = x; break; }
        case DT_INT8: out[i] = (int8_t)p[i]; break;
        case DT_UINT32: { uint32_t x; memcpy(&x, p + 4 * i, 4); out[i] = x; break; }
        case DT_UINT16: { uint16_t x; memcpy(&x, p + 2 * i, 2); out[i] = x; break; }
        case DT_UINT8: out[i] = p[i]; break;
        case DT_BOOL: out[i] = p[i] != 0; break;
        case DT_UINT64: {
            uint64_t x;
            memcpy(&x, p + 8 * i, 8);
            if (x > INT64_MAX) ok = false;
            out[i] = (int64_t)x;
            break;
        }
        case DT_FLOAT:
        case DT_DOUBLE: {
            /* Tile-1's tiles and axis were often stored as floats; a whole value
            ** is the integer meant, anything else (NaN, past int64) is not one */
            double x;
            if (d.elem == DT_FLOAT) {
                float f;
                memcpy(&f, p + 4 * i, 4);
                x = f;
            } else {
                memcpy(&x, p + 8 * i, 8);
            }
            if (!(x >= -9.2e18 && x <= 9.2e18) || x != (double)(int64_t)x) ok = false;
            else out[i] = (int64_t)x;
            break;
        }
        default: ok = false;
        }
    }
    if (d.owned) free(d.data);
    if (ok) {
        *n = (size_t)d.numel;
        *found = true;
    }
    return TILEOPT_OK;
}

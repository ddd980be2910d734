/*
** Graph helpers the adapters (both ways) and the retired-op rewrites share:
** reading ranks, types and constants around a node, adding the nodes and
** constants that take its place in the target opset's form, and the report's
** record of each step.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/const.h"
#include "passes/upgrade/opset_table.h"
#include "passes/upgrade/upgrade_impl.h"
#include "shape/dim.h"

int up_nomem(up *u) { return err_set(u->err, TILEOPT_NOMEM, "upgrade: out of memory"); }

graph_value *up_value_of(graph *g, const char *name) {
    return name && *name ? graph_resolve(g, name) : NULL;
}

int32_t up_rank_of(graph *g, const char *name) {
    graph_value *v = up_value_of(g, name);
    if (v && v->type.rank >= 0) return v->type.rank;
    Onnx__TensorProto *t = name && *name ? graph_initializer(g, name) : NULL;
    return t ? (int32_t)t->n_dims : -1;
}

int32_t up_elem_of(graph *g, const char *name) {
    graph_value *v = up_value_of(g, name);
    if (v && v->type.elem) return v->type.elem;
    Onnx__TensorProto *t = name && *name ? graph_initializer(g, name) : NULL;
    return t ? t->data_type : 0;
}

/* Integer values of a constant. Float values must be whole; *found is false when
** the value is not a constant we can read. *elem: the constant's element type. */
int up_const_ints(up *u, graph *g, int32_t node, const char *name, const char *what,
                  int64_t *out, size_t cap, size_t *count, int32_t *elem, bool *found) {
    *found = false;
    *count = 0;
    graph_const c; /* t may point into it */
    const Onnx__TensorProto *t = graph_const_find(g, name, &c) ? c.tensor : NULL;
    double dv[64];
    size_t n = 0;
    if (t) {
        graph_tensor_data td;
        int rc = graph_tensor_read(u->m, t, &td, u->err);
        if (rc) return err_prefix(u->err, "node %s: %s: ", graph_node_id(g, node), what);
        if (td.numel > cap || td.numel > 64) {
            if (td.owned) free(td.data);
            return 0;
        }
        n = (size_t)td.numel;
        *elem = td.elem;
        bool ok = true;
        for (size_t i = 0; i < n && ok; i++) {
            switch (td.elem) {
            case DT_FLOAT: dv[i] = ((const float *)td.data)[i]; break;
            case DT_DOUBLE: dv[i] = ((const double *)td.data)[i]; break;
            case DT_INT8: out[i] = ((const int8_t *)td.data)[i]; break;
            case DT_UINT8: out[i] = ((const uint8_t *)td.data)[i]; break;
            case DT_INT16: out[i] = ((const int16_t *)td.data)[i]; break;
            case DT_UINT16: out[i] = ((const uint16_t *)td.data)[i]; break;
            case DT_INT32: out[i] = ((const int32_t *)td.data)[i]; break;
            case DT_UINT32: out[i] = ((const uint32_t *)td.data)[i]; break;
            case DT_INT64: out[i] = ((const int64_t *)td.data)[i]; break;
            case DT_UINT64: {
                uint64_t x = ((const uint64_t *)td.data)[i];
                if (x > (uint64_t)INT64_MAX) ok = false;
                out[i] = (int64_t)x;
                break;
            }
            default: ok = false; break;
            }
        }
        if (td.owned) free(td.data);
        if (!ok) return 0; /* e.g. float16: leave it to the run-time form */
        if (td.elem != DT_FLOAT && td.elem != DT_DOUBLE) {
            *count = n;
            *found = true;
            return 0;
        }
    } else {
        /* shape inference proved every entry (a shape computation of static dims) */
        graph_value *v = up_value_of(g, name);
        const shape_value *sv = v ? v->shape_value : NULL;
        if (!sv || !shape_value_static(sv) || sv->n < 0 || (size_t)sv->n > cap ||
            v->type.elem <= 0)
            return 0;
        for (int32_t i = 0; i < sv->n; i++) out[i] = sv->e[i].n;
        *count = (size_t)sv->n;
        *elem = v->type.elem;
        *found = true;
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        /* 2^63 is the first double past INT64_MAX */
        if (!(dv[i] == floor(dv[i])) || dv[i] >= 9223372036854775808.0 ||
            dv[i] < -9223372036854775808.0)
            return err_set(u->err, TILEOPT_INVALID,
                           "node %s: %s %g is not a whole number", graph_node_id(g, node),
                           what, dv[i]);
        out[i] = (int64_t)dv[i];
    }
    *count = n;
    *found = true;
    return 0;
}

int up_const_floats(up *u, graph *g, const char *name, double *out, size_t cap,
                    size_t *count, bool *found) {
    *found = false;
    *count = 0;
    graph_const c;
    const Onnx__TensorProto *t = name && graph_const_find(g, name, &c) ? c.tensor : NULL;
    if (!t) return 0;
    graph_tensor_data td;
    int rc = graph_tensor_read(u->m, t, &td, u->err);
    if (rc) return rc;
    if ((td.elem == DT_FLOAT || td.elem == DT_DOUBLE) && td.numel <= cap) {
        for (size_t i = 0; i < td.numel; i++)
            out[i] = td.elem == DT_FLOAT ? ((const float *)td.data)[i]
                                         : ((const double *)td.data)[i];
        *count = (size_t)td.numel;
        *found = true;
    }
    if (td.owned) free(td.data);
    return 0;
}

/* A name for a new node or value derived from the node being migrated. */
static const char *node_hint(graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    return n->name && *n->name ? n->name : n->op_type ? n->op_type : "node";
}

const char *up_fresh(up *u, graph *g, int32_t node, const char *what) {
    char hint[256];
    snprintf(hint, sizeof hint, "%s_%s", node_hint(g, node), what);
    const char *s = graph_unique_name(g, hint);
    if (!s) up_nomem(u);
    return s;
}

/* Add a node producing one fresh value; its name lands in *out. */
int up_emit(up *u, graph *g, int32_t node, const char *op, const char *const *ins,
            size_t n_in, const char **out, Onnx__NodeProto **np) {
    return up_emit_as(u, g, node, op, ins, n_in, NULL, out, np);
}

int up_emit_as(up *u, graph *g, int32_t node, const char *op, const char *const *ins,
               size_t n_in, const char *name, const char **out, Onnx__NodeProto **np) {
    const char *o = name && *name ? name : up_fresh(u, g, node, op);
    const char *nm = o ? up_fresh(u, g, node, op) : NULL;
    if (!nm) return TILEOPT_NOMEM;
    Onnx__NodeProto *n = graph_add_node(g, op, nm, ins, n_in, &o, 1, NULL);
    if (!n) return up_nomem(u);
    *out = o;
    if (np) *np = n;
    return 0;
}

/* A constant tensor: an initializer, or from a Constant node when the result's IR
** is below 4 (there every initializer would also have to be a graph input). */
int up_emit_const(up *u, graph *g, int32_t node, const char *what, int32_t elem,
                  const int64_t *dims, size_t rank, const void *data, size_t nbytes,
                  const char **out) {
    if (u->ir_out >= 4 || g->parent == NULL) {
        char hint[256];
        snprintf(hint, sizeof hint, "%s_%s", node_hint(g, node), what);
        return graph_add_initializer(g, hint, elem, dims, rank, data, nbytes, out, u->err);
    }
    Onnx__TensorProto *t = graph_tensor_new(u->m, NULL, elem, dims, rank, data, nbytes);
    if (!t) return up_nomem(u);
    Onnx__NodeProto *c = NULL;
    int rc = up_emit(u, g, node, "Constant", NULL, 0, out, &c);
    if (rc) return rc;
    if (graph_node_set_attr_tensor(g, c, "value", t)) return up_nomem(u);
    return 0;
}

int up_emit_i64(up *u, graph *g, int32_t node, const char *what, const int64_t *v,
                size_t n, bool scalar, const char **out) {
    int64_t dim = (int64_t)n;
    return up_emit_const(u, g, node, what, DT_INT64, &dim, scalar ? 0 : 1, v,
                         n * sizeof(int64_t), out);
}

/* A scalar (rank 0) constant of elem holding v; element types other than float
** come from a float constant and a Cast, which is exact for attribute values. */
int up_emit_scalar(up *u, graph *g, int32_t node, const char *what, int32_t elem,
                   float v, const char **out) {
    int rc = up_emit_const(u, g, node, what, DT_FLOAT, NULL, 0, &v, sizeof v, out);
    if (rc || elem == DT_FLOAT) return rc;
    Onnx__NodeProto *c = NULL;
    const char *in = *out;
    if ((rc = up_emit(u, g, node, "Cast", &in, 1, out, &c))) return rc;
    return graph_node_set_attr_int(g, c, "to", elem) ? up_nomem(u) : 0;
}

/* The schema of op in force at opset (NULL when op is unknown or younger). */
const opset_schema *up_schema_at(const char *op, int64_t opset) {
    const opset_entry *e = opset_table_find(op);
    int32_t v = e ? opset_schema_at(e, opset) : 0;
    for (size_t k = 0; v && k < e->count; k++)
        if (e->versions[k] == v) return &e->schemas[k];
    return NULL;
}

bool up_schema_has_attr(const opset_schema *s, const char *attr) {
    for (size_t k = 0; s && k < s->n_attrs; k++)
        if (strcmp(s->attrs[k], attr) == 0) return true;
    return false;
}

/* Whether op at opset takes element type elem in input slot 0 (every op the
** rewrites build holds its data there). */
bool up_op_takes(const char *op, int64_t opset, int32_t elem) {
    const opset_schema *s = up_schema_at(op, opset);
    if (!s || elem <= 0 || elem >= 32) return false;
    return s->n_in_types == 0 || (s->in_types[0] & (1u << elem)) != 0;
}

/* Squeeze, Unsqueeze or a reduction of x over axes, in the target opset's form
** (axes an attribute or an input: the schema at the target says which). */
int up_emit_axes_op(up *u, graph *g, int32_t node, const char *op, const char *x,
                    const int64_t *axes, size_t n, const char **out) {
    Onnx__NodeProto *p = NULL;
    int rc;
    if (!up_schema_has_attr(up_schema_at(op, u->tgt), "axes")) {
        const char *ax;
        if ((rc = up_emit_i64(u, g, node, "axes", axes, n, false, &ax))) return rc;
        const char *ins[2] = {x, ax};
        return up_emit(u, g, node, op, ins, 2, out, &p);
    }
    if ((rc = up_emit(u, g, node, op, &x, 1, out, &p))) return rc;
    return graph_node_set_attr_ints(g, p, "axes", axes, n) ? up_nomem(u) : 0;
}

/* The element type of a node's data input for the constants an adapter adds:
** the legacy ops concerned only take float types, so float is the guess when the
** model does not say (with a warning). */
int32_t up_data_elem(up *u, graph *g, int32_t node, const char *name) {
    int32_t e = up_elem_of(g, name);
    if (e) return e;
    pass_warn(u->pc, "node %s: element type of %s unknown, assuming float",
              graph_node_id(g, node), name);
    return DT_FLOAT;
}

/*
** Replace node *node by a node of op with these inputs, keeping its name, outputs
** (the first n_out; 0 = all; outs, when given, renames them), attributes and doc
** string. The old node is removed (deferred) and *node becomes the new one's index.
*/
int up_replace_node_as(up *u, graph *g, int32_t *node, const char *op,
                       const char *const *ins, size_t n_in, size_t n_out,
                       const char *const *outs_new) {
    Onnx__NodeProto *old = graph_node(g, *node);
    const char *name = old->name;
    size_t n_attr = old->n_attribute;
    Onnx__AttributeProto **attrs = old->attribute;
    char *doc = old->doc_string;
    char *domain = old->domain;
    if (n_out == 0 || n_out > old->n_output) n_out = old->n_output;
    const char *const *outs = outs_new ? outs_new : (const char *const *)old->output;
    graph_remove_node(g, *node);
    int32_t idx;
    Onnx__NodeProto *n = graph_add_node(g, op, name, ins, n_in, outs, n_out, &idx);
    if (!n) return up_nomem(u);
    /* The attributes move as they are: the adapters edit them after the swap. */
    n->n_attribute = n_attr;
    n->attribute = attrs;
    n->doc_string = doc;
    if (domain && *domain) n->domain = domain;
    *node = idx;
    return 0;
}

int up_replace_node(up *u, graph *g, int32_t *node, const char *op,
                    const char *const *ins, size_t n_in, size_t n_out) {
    return up_replace_node_as(u, g, node, op, ins, n_in, n_out, NULL);
}

/* The node's inputs as an array with room for extra slots. */
size_t up_node_inputs(const Onnx__NodeProto *n, const char **ins, size_t cap) {
    size_t k = n->n_input < cap ? n->n_input : cap;
    for (size_t i = 0; i < k; i++) ins[i] = n->input[i];
    return k;
}

/* ------------------------------------------------------------- the report */

/* The original node (still in the protobuf until commit) names the action: a
** replacement's index means nothing after the commit. */
json_w *up_act_open(up_act *a) {
    a->text = (pass_text){0};
    json_init(&a->w, &a->text, false, 0);
    json_object(&a->w);
    return a->text.failed ? NULL : &a->w;
}

void up_act_free(up_act *a) {
    free(a->text.p);
    a->text = (pass_text){0};
}

void up_record_step(up *u, graph *g, int32_t i, const up_act *details, const char *step_op,
                    int64_t from, int64_t to) {
    json_w *rec = pass_action(u->pc, g, i, from > to ? "downgraded" : "upgraded");
    if (step_op && strcmp(step_op, graph_node(g, i)->op_type) != 0)
        json_put_str(rec, "step_op", step_op);
    json_put_num(rec, "from", (double)from);
    json_put_num(rec, "to", (double)to);
    json_members(rec, &details->w);
}

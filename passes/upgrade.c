/*
** The upgrade pass: migrate a model's default-domain nodes from the opset it
** imports to the target opset (6..17), one schema change at a time.
**
** For every node the generated opset table (opset_table.c) gives the since_versions
** between the source and the target. A step whose schema change altered semantics
** or the node's form has a row in the adapter table below; a row with no function
** is a known change we cannot migrate. Steps with no row only extended types and
** need nothing. The pass plans first: if any node needs a step nobody can adapt,
** it fails with one error listing them all and changes nothing.
**
** Without a target the model keeps its opset from UPGRADE_KEEP_FROM on (fold and
** fuse work at any such opset, and a new opset may change what a runtime does);
** older models, whose Tile-1 and legacy broadcast no current runtime runs, go to
** UPGRADE_DEFAULT_TARGET. A target below the model's opset is reached only when
** no node's schema differs between the two: there are no downgrade adapters yet.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shape/infer.h"
#include "passes/upgrade/opset_table.h"
#include "passes/pass.h"
#include "passes/passes.h"

/* ------------------------------------------------------------ opset table */

static int entry_cmp(const void *key, const void *elem) {
    return strcmp((const char *)key, ((const opset_entry *)elem)->op);
}

const opset_entry *opset_table_find(const char *op) {
    if (!op) return NULL;
    return bsearch(op, opset_table, opset_table_count, sizeof opset_table[0], entry_cmp);
}

int opset_table_versions(const char *op, const int32_t **versions, size_t *count) {
    const opset_entry *e = opset_table_find(op);
    if (!e) return -1;
    *versions = e->versions;
    *count = e->count;
    return 0;
}

int32_t opset_schema_at(const opset_entry *e, int64_t opset) {
    int32_t v = 0;
    for (size_t i = 0; i < e->count && e->versions[i] <= opset; i++) v = e->versions[i];
    return v;
}

/* The IR version each opset first shipped with (onnx.helper.VERSION_TABLE): a
** model importing that opset needs at least this IR. */
static const struct {
    int32_t opset, ir;
} ir_for_opset[] = {
    {1, 3}, {9, 4}, {10, 5}, {11, 6}, {12, 7}, {15, 8},
};
#define IR_ROWS (sizeof ir_for_opset / sizeof ir_for_opset[0])
_Static_assert(IR_ROWS == 6, "ir_for_opset rows");

int64_t upgrade_ir_for_opset(int64_t opset) {
    int64_t ir = 3;
    for (size_t i = 0; i < IR_ROWS; i++)
        if (ir_for_opset[i].opset <= opset) ir = ir_for_opset[i].ir;
    return ir;
}

#define UPGRADE_KEEP_FROM 7
#define UPGRADE_DEFAULT_TARGET 13

/* The opset a model at opset src goes to, for an asked target (0: none asked). */
static int64_t upgrade_target_for(int64_t src, int64_t asked) {
    if (asked) return asked;
    return src >= UPGRADE_KEEP_FROM ? src : UPGRADE_DEFAULT_TARGET;
}

/* ----------------------------------------------------------------- state */

typedef struct up {
    pass_ctx *pc;
    graph_model *m;
    errbuf *err;
    int64_t src, tgt;
    int64_t ir_in;           /* the source's IR: below 4 initializers are constants */
    int64_t ir_out;          /* IR of the result: constants differ below IR 4 */
    bool plan;               /* planning: collect blocked steps, change nothing */
    uint32_t n_blocked;
    uint32_t n_work;         /* planned rewrites (adapter steps, retired ops) */
    size_t msg_len;
    char msg[768];           /* the blocked list for the error */
    bool msg_full;
} up;

typedef int (*adapt_fn)(up *u, graph *g, int32_t *node, cJSON *act);

typedef struct adapter {
    const char *op;
    int32_t from, to;        /* schema since_versions */
    adapt_fn fn;             /* NULL: a semantic change nobody can migrate */
    const char *renamed;     /* the op the node becomes, or NULL */
} adapter;

static int nomem(up *u) { return err_set(u->err, TILEOPT_NOMEM, "upgrade: out of memory"); }

/* ------------------------------------------------------- graph helpers */

static graph_value *value_of(graph *g, const char *name) {
    return name && *name ? graph_resolve(g, name) : NULL;
}

static int32_t rank_of(graph *g, const char *name) {
    graph_value *v = value_of(g, name);
    if (v && v->type.rank >= 0) return v->type.rank;
    Onnx__TensorProto *t = name && *name ? graph_initializer(g, name) : NULL;
    return t ? (int32_t)t->n_dims : -1;
}

static int32_t elem_of(graph *g, const char *name) {
    graph_value *v = value_of(g, name);
    if (v && v->type.elem) return v->type.elem;
    Onnx__TensorProto *t = name && *name ? graph_initializer(g, name) : NULL;
    return t ? t->data_type : 0;
}

/* A value no node reads and that is no graph output. */
static bool value_unused(graph *g, const char *name) {
    if (!name || !*name) return true;
    graph_value *v = graph_find(g, name);
    return !graph_value_is_output(g, name) && (!v || v->n_uses == 0);
}

/* The TensorProto behind a constant value: an initializer (unless, from IR 4 on,
** it is also a graph input and so only a default the caller may override) or a
** Constant node's value in any attribute form (a header in *hdr for the scalar
** and list forms). */
static const Onnx__TensorProto *const_tensor(up *u, graph *g, const char *name,
                                             graph_const_hdr *hdr) {
    if (!name || !*name) return NULL;
    Onnx__TensorProto *t = graph_initializer(g, name);
    if (t) {
        graph_value *v = graph_find(g, name);
        if (v && v->input >= 0 && u->ir_in >= 4) return NULL;
        return t;
    }
    Onnx__NodeProto *p = graph_producer(g, name, NULL);
    const Onnx__TensorProto *c;
    errbuf e;
    if (!p || !graph_node_is(p, "Constant") || graph_constant_value(p, hdr, &c, &e))
        return NULL;
    return c;
}

/* Integer values of a constant. Float values must be whole; *found is false when
** the value is not a constant we can read. *elem: the constant's element type. */
static int const_ints(up *u, graph *g, int32_t node, const char *name, const char *what,
                      int64_t *out, size_t cap, size_t *count, int32_t *elem, bool *found) {
    *found = false;
    *count = 0;
    graph_const_hdr hdr;
    const Onnx__TensorProto *t = const_tensor(u, g, name, &hdr);
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

/*
** The value of name computed by the evaluator from constants: a chain of nodes the
** evaluator implements whose inputs all come down to initializers or Constant
** nodes (at most `depth` nodes deep, each with at most 3 inputs). NULL when it is not such a value or the
** evaluation fails (then the run-time form takes over). The caller frees it.
*/
static tensor *eval_const(up *u, graph *g, const char *name, int depth) {
    if (!name || !*name || depth <= 0) return NULL;
    graph_const_hdr hdr;
    const Onnx__TensorProto *t = const_tensor(u, g, name, &hdr);
    errbuf e;
    err_clear(&e);
    const eval_limits *lim = &u->pc->opt->eval_lim;
    if (t) {
        tensor *out = NULL;
        return tensor_from_proto(u->m, t, lim, &out, &e) ? NULL : out;
    }
    int32_t pi;
    Onnx__NodeProto *p = graph_producer(g, name, &pi);
    /* depth and fan-in bounds keep a hostile DAG from costing more than 3^depth */
    if (!p || p->n_output != 1 || p->n_input > 3 || graph_node_subgraphs(g, pi) ||
        !graph_domain_is_default(p->domain) || !eval_supports(p->op_type, u->src))
        return NULL;
    tensor *in[3] = {NULL};
    bool ok = true;
    for (size_t i = 0; i < p->n_input && ok; i++) {
        const char *nm = graph_node_input(p, i);
        if (nm && !(in[i] = eval_const(u, g, nm, depth - 1))) ok = false;
    }
    tensor *out = NULL;
    if (ok && eval_node(g, pi, in, p->n_input, &out, 1, lim, NULL, &e)) out = NULL;
    for (size_t i = 0; i < p->n_input; i++)
        if (in[i]) tensor_free(in[i]);
    return out;
}

/* One whole number from an evaluated 0-D or 1-element tensor (ints, float, double). */
static int tensor_whole(up *u, graph *g, int32_t node, tensor *t, const char *what,
                        int64_t *out, bool *found) {
    *found = false;
    if (tensor_numel(t) != 1) return 0;
    size_t cnt;
    if (tensor_to_i64(t, out, 1, &cnt) && cnt == 1) {
        *found = true;
        return 0;
    }
    double v;
    if (t->elem == DT_FLOAT)
        v = *(const float *)t->data;
    else if (t->elem == DT_DOUBLE)
        v = *(const double *)t->data;
    else
        return 0;
    if (!(v == floor(v)) || fabs(v) >= 9.2e18)
        return err_set(u->err, TILEOPT_INVALID, "node %s: %s %g is not a whole number",
                       graph_node_id(g, node), what, v);
    *out = (int64_t)v;
    *found = true;
    return 0;
}

/* A name for a new node or value derived from the node being migrated. */
static const char *node_hint(graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    return n->name && *n->name ? n->name : n->op_type ? n->op_type : "node";
}

static const char *fresh(up *u, graph *g, int32_t node, const char *what) {
    char hint[256];
    snprintf(hint, sizeof hint, "%s_%s", node_hint(g, node), what);
    const char *s = graph_unique_name(g, hint);
    if (!s) nomem(u);
    return s;
}

/* Add a node producing one fresh value; its name lands in *out. */
static int emit(up *u, graph *g, int32_t node, const char *op, const char *const *ins,
                size_t n_in, const char **out, Onnx__NodeProto **np) {
    const char *o = fresh(u, g, node, op);
    const char *nm = o ? fresh(u, g, node, op) : NULL;
    if (!nm) return TILEOPT_NOMEM;
    Onnx__NodeProto *n = graph_add_node(g, op, nm, ins, n_in, &o, 1, NULL);
    if (!n) return nomem(u);
    *out = o;
    if (np) *np = n;
    return 0;
}

/* A constant tensor: an initializer, or from a Constant node when the result's IR
** is below 4 (there every initializer would also have to be a graph input). */
static int emit_const(up *u, graph *g, int32_t node, const char *what, int32_t elem,
                      const int64_t *dims, size_t rank, const void *data, size_t nbytes,
                      const char **out) {
    if (u->ir_out >= 4 || g->parent == NULL) {
        char hint[256];
        snprintf(hint, sizeof hint, "%s_%s", node_hint(g, node), what);
        return graph_add_initializer(g, hint, elem, dims, rank, data, nbytes, out, u->err);
    }
    Onnx__TensorProto *t = graph_tensor_new(u->m, NULL, elem, dims, rank, data, nbytes);
    if (!t) return nomem(u);
    Onnx__NodeProto *c = NULL;
    int rc = emit(u, g, node, "Constant", NULL, 0, out, &c);
    if (rc) return rc;
    if (graph_node_set_attr_tensor(g, c, "value", t)) return nomem(u);
    return 0;
}

static int emit_i64(up *u, graph *g, int32_t node, const char *what, const int64_t *v,
                    size_t n, bool scalar, const char **out) {
    int64_t dim = (int64_t)n;
    return emit_const(u, g, node, what, DT_INT64, &dim, scalar ? 0 : 1, v,
                      n * sizeof(int64_t), out);
}

/* A scalar (rank 0) constant of elem holding v; element types other than float
** come from a float constant and a Cast, which is exact for attribute values. */
static int emit_scalar(up *u, graph *g, int32_t node, const char *what, int32_t elem,
                       float v, const char **out) {
    int rc = emit_const(u, g, node, what, DT_FLOAT, NULL, 0, &v, sizeof v, out);
    if (rc || elem == DT_FLOAT) return rc;
    Onnx__NodeProto *c = NULL;
    const char *in = *out;
    if ((rc = emit(u, g, node, "Cast", &in, 1, out, &c))) return rc;
    return graph_node_set_attr_int(g, c, "to", elem) ? nomem(u) : 0;
}

/* Squeeze or Unsqueeze of x over axes, in the target opset's form (axes became an
** input at 13). */
static int emit_axes_op(up *u, graph *g, int32_t node, const char *op, const char *x,
                        const int64_t *axes, size_t n, const char **out) {
    Onnx__NodeProto *p = NULL;
    int rc;
    if (u->tgt >= 13) {
        const char *ax;
        if ((rc = emit_i64(u, g, node, "axes", axes, n, false, &ax))) return rc;
        const char *ins[2] = {x, ax};
        return emit(u, g, node, op, ins, 2, out, &p);
    }
    if ((rc = emit(u, g, node, op, &x, 1, out, &p))) return rc;
    return graph_node_set_attr_ints(g, p, "axes", axes, n) ? nomem(u) : 0;
}

/* The element type of a node's data input for the constants an adapter adds:
** the legacy ops concerned only take float types, so float is the guess when the
** model does not say (with a warning). */
static int32_t data_elem(up *u, graph *g, int32_t node, const char *name) {
    int32_t e = elem_of(g, name);
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
static int replace_node_as(up *u, graph *g, int32_t *node, const char *op,
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
    if (!n) return nomem(u);
    /* The attributes move as they are: the adapters edit them after the swap. */
    n->n_attribute = n_attr;
    n->attribute = attrs;
    n->doc_string = doc;
    if (domain && *domain) n->domain = domain;
    *node = idx;
    return 0;
}

static int replace_node(up *u, graph *g, int32_t *node, const char *op,
                        const char *const *ins, size_t n_in, size_t n_out) {
    return replace_node_as(u, g, node, op, ins, n_in, n_out, NULL);
}

/* The node's inputs as an array with room for extra slots. */
static size_t node_inputs(const Onnx__NodeProto *n, const char **ins, size_t cap) {
    size_t k = n->n_input < cap ? n->n_input : cap;
    for (size_t i = 0; i < k; i++) ins[i] = n->input[i];
    return k;
}

/* Move an ints attribute to a new int64 input at slot (absent attribute: absent
** input, which every opset-13 form concerned treats as the attribute's default). */
static int ints_attr_to_input(up *u, graph *g, int32_t *node, const char *attr, size_t slot,
                              cJSON *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    Onnx__AttributeProto *a = graph_attr(n, attr);
    if (!a) return 0;
    const char *ins[8];
    size_t k = node_inputs(n, ins, 8);
    if (slot >= 8) return err_set(u->err, TILEOPT_INVALID, "upgrade: bad slot");
    while (k < slot) ins[k++] = "";
    const char *c;
    int rc = emit_i64(u, g, *node, attr, a->ints, a->n_ints, false, &c);
    if (rc) return rc;
    if (act) cJSON_AddItemToObject(act, attr, pass_json_ints(a->ints, a->n_ints));
    ins[slot] = c;
    if (k <= slot) k = slot + 1;
    graph_node_del_attr(n, attr);
    return replace_node(u, g, node, n->op_type, ins, k, 0);
}

/* ------------------------------------------------------------ adapters */

static int a_consumed_inputs(up *u, graph *g, int32_t *node, cJSON *act) {
    (void)u;
    (void)act;
    graph_node_del_attr(graph_node(g, *node), "consumed_inputs");
    return 0;
}

static int a_concat_3_4(up *u, graph *g, int32_t *node, cJSON *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    if (!graph_attr(n, "axis") && graph_node_set_attr_int(g, n, "axis", 1)) return nomem(u);
    return 0;
}

static int a_reshape_4_5(up *u, graph *g, int32_t *node, cJSON *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    graph_node_del_attr(n, "consumed_inputs");
    if (!graph_attr(n, "shape"))
        return err_set(u->err, TILEOPT_INVALID, "node %s: Reshape-1 without a shape attribute",
                       graph_node_id(g, *node));
    return ints_attr_to_input(u, g, node, "shape", 1, act);
}

/* Cast's `to` was a string (the DataType name) until opset 6. */
static int a_cast_5_6(up *u, graph *g, int32_t *node, cJSON *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    Onnx__AttributeProto *a = graph_attr(n, "to");
    if (!a || a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING) return 0;
    char name[32];
    size_t len = a->s.len < sizeof name - 1 ? a->s.len : sizeof name - 1;
    memcpy(name, a->s.data, len);
    name[len] = 0;
    for (int32_t e = 1; e < DT_COUNT; e++) {
        if (strcasecmp(dtype_name(e), name) != 0) continue;
        graph_node_del_attr(n, "to");
        return graph_node_set_attr_int(g, n, "to", e) ? nomem(u) : 0;
    }
    return err_set(u->err, TILEOPT_INVALID, "node %s: Cast to unknown type '%s'",
                   graph_node_id(g, *node), name);
}

/*
** Input slot of node reads b; legacy broadcasting aligned b's axes with ref's
** starting at axis, numpy aligns trailing axes. Append size-1 axes to b so both
** agree: Unsqueeze when the ranks are known, otherwise a Reshape to
** shape(b) ++ ones(rank(ref) - axis - rank(b)) computed at run time.
*/
static int align_at_axis(up *u, graph *g, int32_t *node, size_t slot, const char *ref,
                         int64_t axis, cJSON *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *b = graph_node_input(n, slot);
    int32_t rb = rank_of(g, b), rr = rank_of(g, ref);
    if (axis < 0 && rr >= 0) axis += rr;
    const char *nb;
    int rc;
    if (rb >= 0 && (rr >= 0 || axis < 0)) {
        int64_t trailing = axis < 0 ? -axis - rb : rr - axis - rb;
        if (trailing < 0 || (rr >= 0 && (axis < 0 || axis > rr)))
            return err_set(u->err, TILEOPT_INVALID,
                           "node %s: broadcast axis %lld does not fit rank %d against %d",
                           graph_node_id(g, *node), (long long)axis, rb, rr);
        if (trailing == 0) return 0;
        if (trailing > 64)
            return err_set(u->err, TILEOPT_INVALID, "node %s: broadcast rank too large",
                           graph_node_id(g, *node));
        int64_t axes[64];
        for (int64_t i = 0; i < trailing; i++) axes[i] = rb + i;
        if ((rc = emit_axes_op(u, g, *node, "Unsqueeze", b, axes, (size_t)trailing, &nb)))
            return rc;
        if (act) cJSON_AddNumberToObject(act, "unsqueezed", (double)trailing);
    } else {
        if (u->tgt < 9)
            return err_set(u->err, TILEOPT_UNSUPPORTED,
                           "node %s: legacy broadcast with unknown ranks needs target "
                           "opset >= 9", graph_node_id(g, *node));
        const char *sb = NULL, *rkb = NULL, *sr = NULL, *rkr = NULL, *d = NULL, *cnt = NULL,
                   *ones = NULL, *shape = NULL, *axc = NULL;
        Onnx__NodeProto *cs = NULL, *cat = NULL;
        if ((rc = emit(u, g, *node, "Shape", &b, 1, &sb, NULL))) return rc;
        if ((rc = emit(u, g, *node, "Shape", &sb, 1, &rkb, NULL))) return rc;
        if ((rc = emit(u, g, *node, "Shape", &ref, 1, &sr, NULL))) return rc;
        if ((rc = emit(u, g, *node, "Shape", &sr, 1, &rkr, NULL))) return rc;
        int64_t av = axis;
        if (axis < 0) {
            /* count = -axis - rank(b), independent of ref */
            av = -axis;
            rkr = NULL;
        }
        if ((rc = emit_i64(u, g, *node, "axis", &av, 1, false, &axc))) return rc;
        if (rkr) {
            const char *i1[2] = {rkr, axc};
            if ((rc = emit(u, g, *node, "Sub", i1, 2, &d, NULL))) return rc;
        } else {
            d = axc;
        }
        const char *i2[2] = {d, rkb};
        if ((rc = emit(u, g, *node, "Sub", i2, 2, &cnt, NULL))) return rc;
        if ((rc = emit(u, g, *node, "ConstantOfShape", &cnt, 1, &ones, &cs))) return rc;
        int64_t one = 1, dim1 = 1;
        Onnx__TensorProto *t = graph_tensor_new(u->m, NULL, DT_INT64, &dim1, 1, &one,
                                                sizeof one);
        if (!t || graph_node_set_attr_tensor(g, cs, "value", t)) return nomem(u);
        const char *i3[2] = {sb, ones};
        if ((rc = emit(u, g, *node, "Concat", i3, 2, &shape, &cat))) return rc;
        if (graph_node_set_attr_int(g, cat, "axis", 0)) return nomem(u);
        const char *i4[2] = {b, shape};
        if ((rc = emit(u, g, *node, "Reshape", i4, 2, &nb, NULL))) return rc;
        if (act) cJSON_AddStringToObject(act, "unsqueezed", "runtime");
    }
    return graph_node_set_input(g, *node, slot, nb) ? nomem(u) : 0;
}

/* False when the known parts of two shapes already differ: a rank or a static dim. */
static bool same_shape_possible(graph *g, const char *a, const char *b) {
    graph_value *va = value_of(g, a), *vb = value_of(g, b);
    if (!va || !vb || va->type.rank < 0 || vb->type.rank < 0) return true;
    if (va->type.rank != vb->type.rank) return false;
    for (int32_t i = 0; i < va->type.rank; i++)
        if (va->type.dims[i] >= 0 && vb->type.dims[i] >= 0 && va->type.dims[i] != vb->type.dims[i])
            return false;
    return true;
}

static int a_broadcast(up *u, graph *g, int32_t *node, cJSON *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    int64_t bc = graph_attr_int(n, "broadcast", 0);
    bool has_axis = graph_attr(n, "axis") != NULL;
    int64_t axis = graph_attr_int(n, "axis", 0);
    if (!bc && !same_shape_possible(g, graph_node_input(n, 0), graph_node_input(n, 1)))
        return err_set(u->err, TILEOPT_INVALID,
                       "node %s (%s): inputs of different shapes need broadcast=1 before "
                       "opset 7", graph_node_id(g, *node), n->op_type);
    graph_node_del_attr(n, "broadcast");
    graph_node_del_attr(n, "axis");
    if (!bc || !has_axis) return 0;
    if (!graph_node_input(n, 0) || !graph_node_input(n, 1))
        return err_set(u->err, TILEOPT_INVALID, "node %s: broadcast needs inputs A and B",
                       graph_node_id(g, *node));
    if (act) cJSON_AddNumberToObject(act, "axis", (double)axis);
    return align_at_axis(u, g, node, 1, graph_node_input(n, 0), axis, act);
}

static int a_drop_broadcast(up *u, graph *g, int32_t *node, cJSON *act) {
    (void)u;
    (void)act;
    graph_node_del_attr(graph_node(g, *node), "broadcast");
    return 0;
}

/* is_test went away in opset 7: those ops always run in inference mode then. */
static int a_is_test(up *u, graph *g, int32_t *node, cJSON *act) {
    (void)u;
    (void)act;
    graph_node_del_attr(graph_node(g, *node), "is_test");
    return 0;
}

static int a_bn_spatial(up *u, graph *g, int32_t *node, cJSON *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    if (graph_attr_int(n, "spatial", 1) == 0)
        return err_set(u->err, TILEOPT_UNSUPPORTED,
                       "node %s: BatchNormalization spatial=0 has no opset-9 form",
                       graph_node_id(g, *node));
    graph_node_del_attr(n, "spatial");
    return 0;
}

/* BatchNormalization-14 has only Y outside training mode. */
static int a_bn_14(up *u, graph *g, int32_t *node, cJSON *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    if (n->n_output <= 1) return 0;
    for (size_t i = 1; i < n->n_output; i++)
        if (!value_unused(g, n->output[i]))
            return err_set(u->err, TILEOPT_UNSUPPORTED,
                           "node %s: BatchNormalization training outputs are used",
                           graph_node_id(g, *node));
    const char *ins[8];
    size_t k = node_inputs(n, ins, 8);
    return replace_node(u, g, node, n->op_type, ins, k, 1);
}

/* Upsample-1: height_scale/width_scale on NCHW; taken straight to the input form of
** Upsample-9 (a floats attribute is what Upsample-7 wants, and only 7..8 have it). */
static int a_upsample_1_7(up *u, graph *g, int32_t *node, cJSON *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    if (u->tgt < 9)
        return err_set(u->err, TILEOPT_UNSUPPORTED,
                       "node %s: Upsample-1 migrates to opset 9 and above only",
                       graph_node_id(g, *node));
    Onnx__AttributeProto *h = graph_attr(n, "height_scale"), *w = graph_attr(n, "width_scale");
    if (!h || !w)
        return err_set(u->err, TILEOPT_INVALID,
                       "node %s: Upsample-1 needs height_scale and width_scale",
                       graph_node_id(g, *node));
    float scales[4] = {1, 1, h->f, w->f};
    int64_t dim = 4;
    const char *c;
    int rc = emit_const(u, g, *node, "scales", DT_FLOAT, &dim, 1, scales, sizeof scales, &c);
    if (rc) return rc;
    const char *mode = graph_attr_string(n, "mode", "nearest");
    graph_node_del_attr(n, "height_scale");
    graph_node_del_attr(n, "width_scale");
    if (strcmp(mode, "bilinear") == 0 && graph_node_set_attr_string(g, n, "mode", "linear"))
        return nomem(u);
    if (act) cJSON_AddItemToObject(act, "scales", cJSON_CreateFloatArray(scales, 4));
    const char *ins[2] = {graph_node_input(n, 0), c};
    return replace_node(u, g, node, "Upsample", ins, 2, 0);
}

static int a_upsample_7_9(up *u, graph *g, int32_t *node, cJSON *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    Onnx__AttributeProto *a = graph_attr(n, "scales");
    if (!a) {
        if (graph_node_input(n, 1)) return 0; /* already an input (from Upsample-1) */
        return err_set(u->err, TILEOPT_INVALID, "node %s: Upsample without scales",
                       graph_node_id(g, *node));
    }
    int64_t dim = (int64_t)a->n_floats;
    const char *c;
    int rc = emit_const(u, g, *node, "scales", DT_FLOAT, &dim, 1, a->floats,
                        a->n_floats * sizeof(float), &c);
    if (rc) return rc;
    if (act) cJSON_AddItemToObject(act, "scales", cJSON_CreateFloatArray(a->floats,
                                                                         (int)a->n_floats));
    graph_node_del_attr(n, "scales");
    const char *ins[2] = {graph_node_input(n, 0), c};
    return replace_node(u, g, node, "Upsample", ins, 2, 0);
}

/* Upsample is deprecated at 10; Resize-10 takes the same inputs and modes. */
static int a_upsample_9_10(up *u, graph *g, int32_t *node, cJSON *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *ins[2];
    size_t k = node_inputs(n, ins, 2);
    return replace_node(u, g, node, "Resize", ins, k, 0);
}

/* Resize-10 (and the Upsample it came from) computed source coordinates as
** out / scale and picked the floor for nearest; Resize-11's defaults differ. */
static int a_resize_10_11(up *u, graph *g, int32_t *node, cJSON *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    int64_t zero = 0;
    const char *roi;
    int rc = emit_const(u, g, *node, "roi", DT_FLOAT, &zero, 1, NULL, 0, &roi);
    if (rc) return rc;
    const char *mode = graph_attr_string(n, "mode", "nearest");
    if (graph_node_set_attr_string(g, n, "coordinate_transformation_mode", "asymmetric"))
        return nomem(u);
    if (strcmp(mode, "nearest") == 0 && graph_node_set_attr_string(g, n, "nearest_mode", "floor"))
        return nomem(u);
    const char *ins[3] = {graph_node_input(n, 0), roi, graph_node_input(n, 1)};
    if (!ins[2]) ins[2] = "";
    return replace_node(u, g, node, "Resize", ins, 3, 0);
}

static int a_scatter_9_11(up *u, graph *g, int32_t *node, cJSON *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *ins[3];
    size_t k = node_inputs(n, ins, 3);
    return replace_node(u, g, node, "ScatterElements", ins, k, 0);
}

static int a_slice_1_10(up *u, graph *g, int32_t *node, cJSON *act) {
    int rc = ints_attr_to_input(u, g, node, "starts", 1, act);
    if (!rc) rc = ints_attr_to_input(u, g, node, "ends", 2, act);
    if (!rc) rc = ints_attr_to_input(u, g, node, "axes", 3, act);
    return rc;
}

static int a_topk_1_10(up *u, graph *g, int32_t *node, cJSON *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    Onnx__AttributeProto *a = graph_attr(n, "k");
    if (!a)
        return err_set(u->err, TILEOPT_INVALID, "node %s: TopK without k",
                       graph_node_id(g, *node));
    const char *c;
    int rc = emit_i64(u, g, *node, "k", &a->i, 1, false, &c);
    if (rc) return rc;
    if (act) cJSON_AddNumberToObject(act, "k", (double)a->i);
    graph_node_del_attr(n, "k");
    const char *ins[2] = {graph_node_input(n, 0), c};
    return replace_node(u, g, node, "TopK", ins, 2, 0);
}

static int a_clip_6_11(up *u, graph *g, int32_t *node, cJSON *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    Onnx__AttributeProto *lo = graph_attr(n, "min"), *hi = graph_attr(n, "max");
    const char *ins[3] = {graph_node_input(n, 0), "", ""};
    size_t k = 1;
    int32_t elem = (lo || hi) ? data_elem(u, g, *node, ins[0]) : DT_FLOAT;
    int rc;
    if (lo) {
        if ((rc = emit_scalar(u, g, *node, "min", elem, lo->f, &ins[1]))) return rc;
        k = 2;
    }
    if (hi) {
        if ((rc = emit_scalar(u, g, *node, "max", elem, hi->f, &ins[2]))) return rc;
        k = 3;
    }
    graph_node_del_attr(n, "min");
    graph_node_del_attr(n, "max");
    return replace_node(u, g, node, "Clip", ins, k, 0);
}

static int a_pad_1_2(up *u, graph *g, int32_t *node, cJSON *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    Onnx__AttributeProto *a = graph_attr(n, "paddings");
    if (!a) return 0;
    if (graph_node_set_attr_ints(g, n, "pads", a->ints, a->n_ints)) return nomem(u);
    graph_node_del_attr(n, "paddings");
    return 0;
}

static int a_pad_2_11(up *u, graph *g, int32_t *node, cJSON *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    Onnx__AttributeProto *v = graph_attr(n, "value");
    float value = v ? v->f : 0.0f;
    const char *mode = graph_attr_string(n, "mode", "constant");
    int rc = ints_attr_to_input(u, g, node, "pads", 1, act);
    if (rc) return rc;
    n = graph_node(g, *node);
    graph_node_del_attr(n, "value");
    if (value == 0.0f || strcmp(mode, "constant") != 0) return 0;
    const char *c;
    if ((rc = emit_scalar(u, g, *node, "value", data_elem(u, g, *node, n->input[0]), value,
                          &c)))
        return rc;
    return graph_node_set_input(g, *node, 2, c) ? nomem(u) : 0;
}

/* Dropout-10's mask is bool where 7's had the data's type (all ones outside
** training): a Cast back to that type keeps every reader of the mask, and a mask
** that is a graph output, as they were. */
static int a_dropout_7_10(up *u, graph *g, int32_t *node, cJSON *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    if (n->n_output < 2 || !n->output[1] || !*n->output[1]) return 0;
    const char *mask = n->output[1];
    int32_t elem = data_elem(u, g, *node, n->input[0]);
    const char *bool_mask = fresh(u, g, *node, "mask");
    if (!bool_mask) return TILEOPT_NOMEM;
    const char *ins[2];
    size_t k = node_inputs(n, ins, 2);
    const char *outs[2] = {n->output[0], bool_mask};
    int rc = replace_node_as(u, g, node, "Dropout", ins, k, 2, outs);
    if (rc) return rc;
    const char *cast_name = fresh(u, g, *node, "mask_cast");
    if (!cast_name) return TILEOPT_NOMEM;
    Onnx__NodeProto *c = graph_add_node(g, "Cast", cast_name, &bool_mask, 1, &mask, 1, NULL);
    if (!c) return nomem(u);
    return graph_node_set_attr_int(g, c, "to", elem) ? nomem(u) : 0;
}

static int a_dropout_10_12(up *u, graph *g, int32_t *node, cJSON *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    Onnx__AttributeProto *a = graph_attr(n, "ratio");
    if (!a) return 0;
    const char *c;
    int rc = emit_const(u, g, *node, "ratio", DT_FLOAT, NULL, 0, &a->f, sizeof a->f, &c);
    if (rc) return rc;
    graph_node_del_attr(n, "ratio");
    return graph_node_set_input(g, *node, 1, c) ? nomem(u) : 0;
}

static int a_axes_to_input(up *u, graph *g, int32_t *node, cJSON *act) {
    return ints_attr_to_input(u, g, node, "axes", 1, act);
}

static int a_split_1_2(up *u, graph *g, int32_t *node, cJSON *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *s = graph_node_input(n, 1);
    if (!s) return 0;
    int64_t v[64];
    size_t cnt;
    int32_t elem;
    bool found;
    int rc = const_ints(u, g, *node, s, "split", v, 64, &cnt, &elem, &found);
    if (rc) return rc;
    if (!found)
        return err_set(u->err, TILEOPT_UNSUPPORTED,
                       "node %s: Split-1 with a split input computed at run time",
                       graph_node_id(g, *node));
    if (graph_node_set_attr_ints(g, n, "split", v, cnt)) return nomem(u);
    if (act) cJSON_AddItemToObject(act, "split", pass_json_ints(v, cnt));
    const char *ins[1] = {graph_node_input(n, 0)};
    return replace_node(u, g, node, "Split", ins, 1, 0);
}

static int a_split_12_13(up *u, graph *g, int32_t *node, cJSON *act) {
    return ints_attr_to_input(u, g, node, "split", 1, act);
}

/*
** Softmax, LogSoftmax, Hardmax before 13 coerced the input to 2-D at `axis` and
** normalized over the flattened trailing part. When axis is the last axis both
** agree; otherwise Flatten(axis) -> op(axis=-1) -> Reshape back to shape(x).
*/
static int a_softmax_11_13(up *u, graph *g, int32_t *node, cJSON *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *x = graph_node_input(n, 0);
    if (!x || n->n_output != 1)
        return err_set(u->err, TILEOPT_INVALID, "node %s: %s needs one input and one output",
                       graph_node_id(g, *node), n->op_type);
    int64_t axis = graph_attr_int(n, "axis", 1);
    int32_t r = rank_of(g, x);
    if (r >= 0 && axis < 0) axis += r;
    if (r >= 0 && (axis < 0 || axis > r))
        return err_set(u->err, TILEOPT_INVALID, "node %s: axis %lld out of range for rank %d",
                       graph_node_id(g, *node), (long long)axis, r);
    if (r > 0 && axis == r - 1)
        return graph_node_set_attr_int(g, n, "axis", axis) ? nomem(u) : 0;
    const char *flat = NULL, *shape = NULL, *mid = NULL;
    Onnx__NodeProto *f = NULL;
    int rc;
    if ((rc = emit(u, g, *node, "Flatten", &x, 1, &flat, &f))) return rc;
    if (graph_node_set_attr_int(g, f, "axis", axis)) return nomem(u);
    if ((rc = emit(u, g, *node, "Shape", &x, 1, &shape, NULL))) return rc;
    /* The node keeps its outputs' name through a new node that reads a fresh
    ** intermediate: op(flat) -> mid, Reshape(mid, shape) -> the original output. */
    const char *out = n->output[0];
    mid = fresh(u, g, *node, "2d");
    if (!mid) return TILEOPT_NOMEM;
    const char *op = n->op_type;
    Onnx__AttributeProto **attrs = n->attribute;
    size_t n_attr = n->n_attribute;
    const char *name = n->name;
    char *doc = n->doc_string;
    graph_remove_node(g, *node);
    int32_t idx;
    Onnx__NodeProto *s = graph_add_node(g, op, name, &flat, 1, &mid, 1, &idx);
    if (!s) return nomem(u);
    s->n_attribute = n_attr;
    s->attribute = attrs;
    s->doc_string = doc;
    if (graph_node_set_attr_int(g, s, "axis", -1)) return nomem(u);
    const char *rn = fresh(u, g, idx, "Reshape");
    const char *ins[2] = {mid, shape};
    if (!rn || !graph_add_node(g, "Reshape", rn, ins, 2, &out, 1, NULL)) return nomem(u);
    *node = idx;
    if (act) cJSON_AddStringToObject(act, "rewrite", "Flatten+Reshape");
    return 0;
}

/* PRelu before 7 applied a slope of shape [C] along axis 1; numpy broadcasting
** needs it as [C, 1, ...]. */
static int a_prelu_6_7(up *u, graph *g, int32_t *node, cJSON *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *slope = graph_node_input(n, 1);
    if (!slope || !graph_node_input(n, 0))
        return err_set(u->err, TILEOPT_INVALID, "node %s: PRelu needs X and slope",
                       graph_node_id(g, *node));
    graph_value *v = value_of(g, slope);
    int32_t k = rank_of(g, slope);
    if (k < 0) {
        pass_warn(u->pc, "node %s: PRelu slope rank unknown; left as is",
                  graph_node_id(g, *node));
        return 0;
    }
    if (k != 1) return 0;
    int64_t c = -1;
    if (v && v->type.rank == 1) c = v->type.dims[0];
    Onnx__TensorProto *t = graph_initializer(g, slope);
    if (t && t->n_dims == 1) c = t->dims[0];
    if (c == 1) return 0;
    return align_at_axis(u, g, node, 1, graph_node_input(n, 0), 1, act);
}

/* Cast(x) to int64, as a fresh value. */
static int emit_i64_cast(up *u, graph *g, int32_t node, const char *x, const char **out) {
    Onnx__NodeProto *p = NULL;
    int rc = emit(u, g, node, "Cast", &x, 1, out, &p);
    if (rc) return rc;
    return graph_node_set_attr_int(g, p, "to", DT_INT64) ? nomem(u) : 0;
}

/*
** Run-time Tile-1 repeats for an input of known rank r, with opset-7 ops only:
** repeats = 1 + sel * (tiles - 1), sel being 1 at the axis and 0 elsewhere. sel
** is a constant when the axis is, else Cast(Equal(iota, axis) or
** Equal(iota - r, axis)): a negative axis counts from the end.
*/
static int tile1_repeats_ranked(up *u, graph *g, int32_t node, int32_t r,
                                const int64_t *tiles, const char *tn, const int64_t *axis,
                                const char *an, const char **out) {
    int64_t v[TENSOR_MAX_RANK], one = 1; /* r <= TENSOR_MAX_RANK: the caller checks */
    const char *sel = NULL, *t64 = NULL, *one1 = NULL, *extra = NULL, *scaled = NULL;
    int rc;
    if (axis) {
        int64_t a = axis[0] < 0 ? axis[0] + r : axis[0];
        for (int32_t i = 0; i < r; i++) v[i] = i == a;
        if ((rc = emit_i64(u, g, node, "axis_mask", v, (size_t)r, false, &sel))) return rc;
    } else {
        const char *ax = NULL, *iota = NULL, *iota_neg = NULL, *at = NULL, *at_neg = NULL,
                   *either = NULL;
        if ((rc = emit_i64_cast(u, g, node, an, &ax))) return rc;
        for (int32_t i = 0; i < r; i++) v[i] = i;
        if ((rc = emit_i64(u, g, node, "iota", v, (size_t)r, false, &iota))) return rc;
        for (int32_t i = 0; i < r; i++) v[i] = i - r;
        if ((rc = emit_i64(u, g, node, "iota_neg", v, (size_t)r, false, &iota_neg))) return rc;
        const char *e1[2] = {iota, ax}, *e2[2] = {iota_neg, ax};
        if ((rc = emit(u, g, node, "Equal", e1, 2, &at, NULL)) ||
            (rc = emit(u, g, node, "Equal", e2, 2, &at_neg, NULL)))
            return rc;
        const char *o[2] = {at, at_neg};
        if ((rc = emit(u, g, node, "Or", o, 2, &either, NULL)) ||
            (rc = emit_i64_cast(u, g, node, either, &sel)))
            return rc;
    }
    if (tiles)
        rc = emit_i64(u, g, node, "tiles", tiles, 1, false, &t64);
    else
        rc = emit_i64_cast(u, g, node, tn, &t64);
    if (rc || (rc = emit_i64(u, g, node, "one", &one, 1, true, &one1))) return rc;
    const char *d[2] = {t64, one1};
    if ((rc = emit(u, g, node, "Sub", d, 2, &extra, NULL))) return rc;
    const char *m[2] = {sel, extra};
    if ((rc = emit(u, g, node, "Mul", m, 2, &scaled, NULL))) return rc;
    const char *a[2] = {scaled, one1};
    return emit(u, g, node, "Add", a, 2, out, NULL);
}

/*
** Tile-1 (input, tiles, axis) -> Tile-6 (input, repeats). Constant tiles and axis
** with a known rank give a constant repeats; otherwise repeats is computed at run
** time: from the known rank with opset-7 ops (tile1_repeats_ranked), or, when
** the rank too is only known at run time, Where(Range(rank(x)) == axis', tiles, 1)
** with axis' = axis (+ rank when negative), which needs Range (opset 11).
*/
static int a_tile_1_6(up *u, graph *g, int32_t *node, cJSON *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *id = graph_node_id(g, *node);
    const char *x = graph_node_input(n, 0), *tn = graph_node_input(n, 1),
               *an = graph_node_input(n, 2);
    if (!x || !tn || !an)
        return err_set(u->err, TILEOPT_INVALID, "node %s: Tile-1 needs input, tiles and axis",
                       id);
    int32_t xe = elem_of(g, x);
    int32_t te = elem_of(g, tn), ae = elem_of(g, an);
    if ((te && te != xe) || (ae && ae != xe))
        pass_warn(u->pc, "node %s: Tile-1 tiles/axis typed %s/%s, the schema wants the "
                  "input's type %s; source fails the checker, migrated anyway", id,
                  dtype_name(te), dtype_name(ae), dtype_name(xe));
    int64_t tv[2], av[2];
    size_t tc, ac;
    int32_t el;
    bool tf, af;
    int rc = const_ints(u, g, *node, tn, "Tile tiles", tv, 2, &tc, &el, &tf);
    if (!rc) rc = const_ints(u, g, *node, an, "Tile axis", av, 2, &ac, &el, &af);
    if (rc) return rc;
    /* Not a plain constant: maybe a small constant computation the evaluator can do. */
    for (int k = 0; k < 2 && !rc; k++) {
        bool *f = k ? &af : &tf;
        if (*f) continue;
        tensor *t = eval_const(u, g, k ? an : tn, 5);
        if (!t) continue;
        rc = tensor_whole(u, g, *node, t, k ? "Tile axis" : "Tile tiles", k ? av : tv, f);
        if (*f) *(k ? &ac : &tc) = 1;
        tensor_free(t);
    }
    if (rc) return rc;
    if ((tf && tc != 1) || (af && ac != 1))
        return err_set(u->err, TILEOPT_INVALID,
                       "node %s: Tile tiles and axis must hold one value each", id);
    if (tf && tv[0] < 0)
        return err_set(u->err, TILEOPT_INVALID, "node %s: Tile tiles %lld is negative", id,
                       (long long)tv[0]);
    int32_t r = rank_of(g, x);
    if (af && r >= 0 && (av[0] < -(int64_t)r || av[0] >= r))
        return err_set(u->err, TILEOPT_INVALID,
                       "node %s: Tile axis %lld out of range for rank %d", id,
                       (long long)av[0], r);
    const char *rep;
    if (tf && af && r >= 0) {
        int64_t reps[TENSOR_MAX_RANK];
        if (r > TENSOR_MAX_RANK)
            return err_set(u->err, TILEOPT_LIMIT, "node %s: rank %d too large", id, r);
        for (int32_t i = 0; i < r; i++) reps[i] = 1;
        reps[av[0] < 0 ? av[0] + r : av[0]] = tv[0];
        if ((rc = emit_i64(u, g, *node, "repeats", reps, (size_t)r, false, &rep))) return rc;
        if (act) cJSON_AddItemToObject(act, "repeats", pass_json_ints(reps, (size_t)r));
    } else if (r > 0 && r <= TENSOR_MAX_RANK && u->tgt >= 7) {
        if ((rc = tile1_repeats_ranked(u, g, *node, r, tf ? tv : NULL, tn, af ? av : NULL, an,
                                       &rep)))
            return rc;
        /* repeats only exist at run time (the report schema keeps "repeats" for
        ** arrays) */
        if (act) cJSON_AddBoolToObject(act, "runtime_repeats", 1);
    } else {
        if (u->tgt < 11)
            return err_set(u->err, TILEOPT_UNSUPPORTED,
                           "node %s: Tile-1 with %s needs target opset >= %d", id,
                           r < 0 ? "an input of unknown rank" : "run-time tiles or axis",
                           r < 0 ? 11 : 7);
        const char *shape = NULL, *rank1 = NULL, *rank0 = NULL, *zero = NULL, *one1 = NULL,
                   *idx = NULL, *ax = NULL, *t64 = NULL, *eq = NULL, *emp = NULL;
        int64_t z = 0, o = 1;
        if ((rc = emit(u, g, *node, "Shape", &x, 1, &shape, NULL)) ||
            (rc = emit(u, g, *node, "Shape", &shape, 1, &rank1, NULL)) ||
            (rc = emit_i64(u, g, *node, "scalar_shape", NULL, 0, false, &emp)))
            return rc;
        const char *i0[2] = {rank1, emp};
        if ((rc = emit(u, g, *node, "Reshape", i0, 2, &rank0, NULL)) ||
            (rc = emit_i64(u, g, *node, "zero", &z, 1, true, &zero)) ||
            (rc = emit_i64(u, g, *node, "one", &o, 1, true, &one1)))
            return rc;
        const char *i1[3] = {zero, rank0, one1};
        if ((rc = emit(u, g, *node, "Range", i1, 3, &idx, NULL))) return rc;
        bool maybe_neg = true;
        if (af) {
            maybe_neg = av[0] < 0;
            if ((rc = emit_i64(u, g, *node, "axis", av, 1, false, &ax))) return rc;
        } else {
            if ((rc = emit_i64_cast(u, g, *node, an, &ax))) return rc;
        }
        if (maybe_neg) {
            const char *neg, *sum, *na;
            const char *i2[2] = {ax, zero};
            if ((rc = emit(u, g, *node, "Less", i2, 2, &neg, NULL))) return rc;
            const char *i3[2] = {ax, rank0};
            if ((rc = emit(u, g, *node, "Add", i3, 2, &sum, NULL))) return rc;
            const char *i4[3] = {neg, sum, ax};
            if ((rc = emit(u, g, *node, "Where", i4, 3, &na, NULL))) return rc;
            ax = na;
        }
        const char *i5[2] = {idx, ax};
        if ((rc = emit(u, g, *node, "Equal", i5, 2, &eq, NULL))) return rc;
        if (tf) {
            if ((rc = emit_i64(u, g, *node, "tiles", tv, 1, false, &t64))) return rc;
        } else {
            if ((rc = emit_i64_cast(u, g, *node, tn, &t64))) return rc;
        }
        const char *i6[3] = {eq, t64, one1};
        if ((rc = emit(u, g, *node, "Where", i6, 3, &rep, NULL))) return rc;
        /* repeats only exist at run time (the report schema keeps "repeats" for
        ** arrays) */
        if (act) cJSON_AddBoolToObject(act, "runtime_repeats", 1);
    }
    const char *ins[2] = {x, rep};
    return replace_node(u, g, node, "Tile", ins, 2, 0);
}

/* Unsqueeze(x, 0) written to the given name, in the target opset's form. */
static int unsqueeze0_as(up *u, graph *g, int32_t node, const char *x, const char *name) {
    const int64_t zero = 0;
    const char *ax = NULL;
    int rc;
    if (u->tgt >= 13 && (rc = emit_i64(u, g, node, "axes", &zero, 1, false, &ax))) return rc;
    const char *ins[2] = {x, ax};
    const char *nm = fresh(u, g, node, "Unsqueeze");
    Onnx__NodeProto *un =
        nm ? graph_add_node(g, "Unsqueeze", nm, ins, u->tgt >= 13 ? 2 : 1, &name, 1, NULL)
           : NULL;
    if (!un) return nomem(u);
    if (u->tgt < 13 && graph_node_set_attr_ints(g, un, "axes", &zero, 1)) return nomem(u);
    return 0;
}

/* A larger Scan-8 batch is unrolled, with a copy of the body per item: above
** this, the model would grow too much for what it gains. */
#define SCAN8_MAX_BATCH 16

/*
** Scan-8 carried a batch axis on every state and scan input and output; Scan-9
** dropped it. With a batch of one (the common export) that is Squeeze(0) on the
** way in and Unsqueeze(0) on the way out; scan axes move from 1 to 0 with it. A
** larger static batch is unrolled: item b reads Gather(input, b), runs its own
** Scan-9 (a copy of the body), and Concat of the items' Unsqueeze(0)'d results
** gives back each batched output.
*/
static int a_scan_8_9(up *u, graph *g, int32_t *node, cJSON *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    const char *id = graph_node_id(g, *node);
    if (graph_node_input(n, 0))
        return err_set(u->err, TILEOPT_UNSUPPORTED,
                       "node %s: Scan-8 with sequence_lens has no opset-9 form", id);
    if (n->n_input < 2 || n->n_input > 64 || n->n_output > 64)
        return err_set(u->err, TILEOPT_INVALID, "node %s: Scan-8 with %zu inputs", id,
                       n->n_input);
    Onnx__AttributeProto *body_attr = graph_attr(n, "body");
    if (!body_attr || !body_attr->g)
        return err_set(u->err, TILEOPT_INVALID, "node %s: Scan-8 without a body", id);
    Onnx__GraphProto *body = body_attr->g;
    int64_t batch = -1;
    for (size_t i = 1; i < n->n_input && batch < 0; i++) {
        graph_value *v = value_of(g, n->input[i]);
        if (v && v->type.rank >= 1 && v->type.dims[0] >= 0) batch = v->type.dims[0];
    }
    if (batch < 1 || batch > SCAN8_MAX_BATCH)
        return err_set(u->err, TILEOPT_UNSUPPORTED,
                       "node %s: Scan-8 with batch size %s has no opset-9 form here (a "
                       "static batch of 1 to %d)", id,
                       batch < 0 ? "unknown" : batch == 0 ? "0" : "above the limit",
                       SCAN8_MAX_BATCH);
    /* The body was migrated already; sweep it now, since the node that holds it is
    ** about to be replaced and graph_commit only walks the live nodes' bodies. */
    for (graph *s = graph_node_subgraphs(g, *node); s; s = s->next_sibling) {
        int rc = graph_commit(s, u->err);
        if (rc) return rc;
    }
    const int64_t zero = 0;
    int rc;
    Onnx__AttributeProto *dir = graph_attr(n, "directions");
    int64_t dirs[64];
    size_t nd = dir ? (dir->n_ints < 64 ? dir->n_ints : 64) : 0;
    for (size_t k = 0; k < nd; k++) dirs[k] = dir->ints[k];
    graph_node_del_attr(n, "directions");
    int64_t n_scan = graph_attr_int(n, "num_scan_inputs", 0);
    const char *const *old_ins = (const char *const *)n->input;
    const char *const *old_outs = (const char *const *)n->output;
    size_t n_in = n->n_input - 1, n_out = n->n_output;
    const char *outs[SCAN8_MAX_BATCH][64];
    for (int64_t b = 0; b < batch; b++) {
        const char *ins[64], *item = NULL;
        if (batch > 1 && (rc = emit_i64(u, g, *node, "item", &b, 1, true, &item))) return rc;
        for (size_t i = 0; i < n_in; i++) {
            const char *gi[2] = {old_ins[i + 1], item};
            rc = batch == 1 ? emit_axes_op(u, g, *node, "Squeeze", gi[0], &zero, 1, &ins[i])
                            : emit(u, g, *node, "Gather", gi, 2, &ins[i], NULL);
            if (rc) return rc;
        }
        for (size_t k = 0; k < n_out; k++)
            if (!(outs[b][k] = fresh(u, g, *node, "scan9"))) return TILEOPT_NOMEM;
        Onnx__NodeProto *s9;
        if (b == 0) { /* the node itself, keeping its name and attributes */
            if ((rc = replace_node_as(u, g, node, "Scan", ins, n_in, 0, outs[0]))) return rc;
            s9 = graph_node(g, *node);
        } else {
            Onnx__GraphProto *copy = graph_pb_clone(u->m, body);
            const char *nm = copy ? fresh(u, g, *node, "Scan") : NULL;
            s9 = nm ? graph_add_node(g, "Scan", nm, ins, n_in, outs[b], n_out, NULL) : NULL;
            if (!s9 || graph_node_set_attr_int(g, s9, "num_scan_inputs", n_scan) ||
                graph_node_set_attr_graph(g, s9, "body", copy))
                return nomem(u);
        }
        if (nd && graph_node_set_attr_ints(g, s9, "scan_input_directions", dirs, nd))
            return nomem(u);
    }
    /* The new nodes write fresh names; Unsqueeze(0), and Concat over the items,
    ** give back the old ones. */
    for (size_t k = 0; k < n_out; k++) {
        const char *orig = old_outs[k];
        if (!orig || !*orig) continue;
        if (batch == 1) {
            if ((rc = unsqueeze0_as(u, g, *node, outs[0][k], orig))) return rc;
            continue;
        }
        const char *parts[SCAN8_MAX_BATCH];
        for (int64_t b = 0; b < batch; b++)
            if ((rc = emit_axes_op(u, g, *node, "Unsqueeze", outs[b][k], &zero, 1, &parts[b])))
                return rc;
        const char *nm = fresh(u, g, *node, "Concat");
        Onnx__NodeProto *c =
            nm ? graph_add_node(g, "Concat", nm, parts, (size_t)batch, &orig, 1, NULL) : NULL;
        if (!c || graph_node_set_attr_int(g, c, "axis", 0)) return nomem(u);
    }
    if (act) cJSON_AddNumberToObject(act, "batch", (double)batch);
    return 0;
}

/* RNN, GRU, LSTM before 7: output_sequence only said whether Y was wanted, which
** an absent optional output says now. */
static int a_rnn_7(up *u, graph *g, int32_t *node, cJSON *act) {
    (void)u;
    (void)act;
    graph_node_del_attr(graph_node(g, *node), "output_sequence");
    return 0;
}

/* LpPool's p was a float until opset 2. */
static int a_lppool_1_2(up *u, graph *g, int32_t *node, cJSON *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    Onnx__AttributeProto *a = graph_attr(n, "p");
    if (!a || a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) return 0;
    float p = a->f;
    if (p != floorf(p) || p < 1 || p > 1e6)
        return err_set(u->err, TILEOPT_UNSUPPORTED, "node %s: LpPool p=%g is not whole",
                       graph_node_id(g, *node), (double)p);
    graph_node_del_attr(n, "p");
    return graph_node_set_attr_int(g, n, "p", (int64_t)p) ? nomem(u) : 0;
}

/* RoiAlign-16 changed the default coordinate mode; keep the old one. */
static int a_roialign_10_16(up *u, graph *g, int32_t *node, cJSON *act) {
    (void)act;
    Onnx__NodeProto *n = graph_node(g, *node);
    if (graph_attr(n, "coordinate_transformation_mode")) return 0;
    return graph_node_set_attr_string(g, n, "coordinate_transformation_mode",
                                      "output_half_pixel") ? nomem(u) : 0;
}

/* ------------------------------------------------------ retired ops */

/*
** Ops of the early experimental set that ONNX later dropped from its schemas, met
** in old exported models (ImageScaler above all). Each is rewritten into current
** ops: the node goes, a short chain takes its place and ends in its output name.
*/
typedef struct chain {
    up *u;
    graph *g;
    int32_t node;            /* the removed node, for names */
    int32_t elem;            /* element type of x */
} chain;

/* op(ins) -> a fresh value, or -> out when out is given (the chain's last step). */
static int ch_op(chain *c, const char *op, const char **ins, size_t n, const char *out,
                 const char **res, Onnx__NodeProto **np) {
    if (!out) return emit(c->u, c->g, c->node, op, ins, n, res, np);
    const char *nm = fresh(c->u, c->g, c->node, op);
    Onnx__NodeProto *p = nm ? graph_add_node(c->g, op, nm, ins, n, &out, 1, NULL) : NULL;
    if (!p) return nomem(c->u);
    *res = out;
    if (np) *np = p;
    return 0;
}

/* x * v (skipped when v is 1 and out is not needed) */
static int ch_mul(chain *c, const char *x, float v, const char *out, const char **res) {
    if (v == 1.0f && !out) {
        *res = x;
        return 0;
    }
    const char *k;
    int rc = emit_scalar(c->u, c->g, c->node, "scale", c->elem, v, &k);
    const char *ins[2] = {x, k};
    return rc ? rc : ch_op(c, "Mul", ins, 2, out, res, NULL);
}

static int ch_add(chain *c, const char *x, float v, const char *out, const char **res) {
    const char *k;
    int rc = emit_scalar(c->u, c->g, c->node, "bias", c->elem, v, &k);
    const char *ins[2] = {x, k};
    return rc ? rc : ch_op(c, "Add", ins, 2, out, res, NULL);
}

static int ch_begin(up *u, graph *g, int32_t *node, chain *c, const char **x,
                    const char **out) {
    Onnx__NodeProto *n = graph_node(g, *node);
    *x = graph_node_input(n, 0);
    if (!*x || n->n_output != 1 || !n->output[0][0])
        return err_set(u->err, TILEOPT_INVALID, "node %s: %s needs one input and one output",
                       graph_node_id(g, *node), n->op_type);
    if (u->tgt < 7)
        return err_set(u->err, TILEOPT_UNSUPPORTED,
                       "node %s: %s migrates to opset 7 and above only",
                       graph_node_id(g, *node), n->op_type);
    c->u = u;
    c->g = g;
    c->node = *node;
    c->elem = data_elem(u, g, *node, *x);
    *out = n->output[0];
    graph_remove_node(g, *node);
    return 0;
}

/* ImageScaler: y = scale * x + bias[c] over NCHW. */
static int r_image_scaler(up *u, graph *g, int32_t *node, cJSON *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    float scale = graph_attr_float(n, "scale", 1.0f);
    Onnx__AttributeProto *b = graph_attr(n, "bias");
    chain c;
    const char *x = NULL, *out = NULL, *t = NULL;
    int rc = ch_begin(u, g, node, &c, &x, &out);
    if (rc) return rc;
    if (!b || b->n_floats == 0) return ch_mul(&c, x, scale, out, &t);
    if ((rc = ch_mul(&c, x, scale, NULL, &t))) return rc;
    int64_t dims[3] = {(int64_t)b->n_floats, 1, 1};
    const char *bias;
    if ((rc = emit_const(u, g, c.node, "bias", DT_FLOAT, dims, 3, b->floats,
                         b->n_floats * sizeof(float), &bias)))
        return rc;
    if (c.elem != DT_FLOAT) {
        Onnx__NodeProto *cast = NULL;
        const char *in = bias;
        if ((rc = emit(u, g, c.node, "Cast", &in, 1, &bias, &cast))) return rc;
        if (graph_node_set_attr_int(g, cast, "to", c.elem)) return nomem(u);
    }
    const char *ins[2] = {t, bias};
    if (act) cJSON_AddStringToObject(act, "rewrite", "Mul+Add");
    return ch_op(&c, "Add", ins, 2, out, &t, NULL);
}

/* Affine: y = alpha * x + beta. */
static int r_affine(up *u, graph *g, int32_t *node, cJSON *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    float alpha = graph_attr_float(n, "alpha", 1.0f), beta = graph_attr_float(n, "beta", 0.0f);
    chain c;
    const char *x = NULL, *out = NULL, *t = NULL;
    int rc = ch_begin(u, g, node, &c, &x, &out);
    if (!rc) rc = ch_mul(&c, x, alpha, NULL, &t);
    if (!rc) rc = ch_add(&c, t, beta, out, &t);
    if (!rc && act) cJSON_AddStringToObject(act, "rewrite", "Mul+Add");
    return rc;
}

/* Scale: y = scale * x. */
static int r_scale(up *u, graph *g, int32_t *node, cJSON *act) {
    float scale = graph_attr_float(graph_node(g, *node), "scale", 1.0f);
    chain c;
    const char *x = NULL, *out = NULL, *t = NULL;
    int rc = ch_begin(u, g, node, &c, &x, &out);
    if (!rc) rc = ch_mul(&c, x, scale, out, &t);
    if (!rc && act) cJSON_AddStringToObject(act, "rewrite", "Mul");
    return rc;
}

/* ScaledTanh: y = alpha * tanh(beta * x); ParametricSoftplus: alpha * softplus(beta * x). */
static int scaled_unary(up *u, graph *g, int32_t *node, cJSON *act, const char *op) {
    Onnx__NodeProto *n = graph_node(g, *node);
    float alpha = graph_attr_float(n, "alpha", 1.0f), beta = graph_attr_float(n, "beta", 1.0f);
    chain c;
    const char *x = NULL, *out = NULL, *t = NULL;
    int rc = ch_begin(u, g, node, &c, &x, &out);
    if (!rc) rc = ch_mul(&c, x, beta, NULL, &t);
    if (!rc) rc = ch_op(&c, op, &t, 1, NULL, &t, NULL);
    if (!rc) rc = ch_mul(&c, t, alpha, out, &t);
    if (!rc && act) cJSON_AddStringToObject(act, "rewrite", op);
    return rc;
}

static int r_scaled_tanh(up *u, graph *g, int32_t *node, cJSON *act) {
    return scaled_unary(u, g, node, act, "Tanh");
}

static int r_parametric_softplus(up *u, graph *g, int32_t *node, cJSON *act) {
    return scaled_unary(u, g, node, act, "Softplus");
}

/* ThresholdedRelu was experimental before 10 with the same meaning: the op itself
** from a target of 10, below that x * (x > alpha). */
static int r_thresholded_relu(up *u, graph *g, int32_t *node, cJSON *act) {
    Onnx__NodeProto *n = graph_node(g, *node);
    if (u->tgt >= 10) {
        const char *ins[1] = {graph_node_input(n, 0)};
        return replace_node(u, g, node, "ThresholdedRelu", ins, ins[0] ? 1 : 0, 0);
    }
    float alpha = graph_attr_float(n, "alpha", 1.0f);
    chain c;
    const char *x = NULL, *out = NULL, *k = NULL, *gt = NULL, *m = NULL;
    int rc = ch_begin(u, g, node, &c, &x, &out);
    if (!rc) rc = emit_scalar(u, g, c.node, "alpha", c.elem, alpha, &k);
    const char *i1[2] = {x, k};
    Onnx__NodeProto *cast = NULL;
    if (!rc) rc = ch_op(&c, "Greater", i1, 2, NULL, &gt, NULL);
    if (!rc) rc = ch_op(&c, "Cast", &gt, 1, NULL, &m, &cast);
    if (!rc && graph_node_set_attr_int(g, cast, "to", c.elem)) rc = nomem(u);
    const char *i2[2] = {x, m};
    if (!rc) rc = ch_op(&c, "Mul", i2, 2, out, &m, NULL);
    if (!rc && act) cJSON_AddStringToObject(act, "rewrite", "Greater+Cast+Mul");
    return rc;
}

typedef struct retired {
    const char *op;
    adapt_fn fn;
} retired;

static const retired retired_ops[] = {
    {"Affine", r_affine},
    {"ImageScaler", r_image_scaler},
    {"ParametricSoftplus", r_parametric_softplus},
    {"Scale", r_scale},
    {"ScaledTanh", r_scaled_tanh},
    {"ThresholdedRelu", r_thresholded_relu},
};
#define N_RETIRED (sizeof retired_ops / sizeof retired_ops[0])
_Static_assert(N_RETIRED == 6, "retired op table count");

static const retired *retired_find(const char *op) {
    for (size_t i = 0; i < N_RETIRED; i++)
        if (strcmp(retired_ops[i].op, op) == 0) return &retired_ops[i];
    return NULL;
}

/* -------------------------------------------------------- adapter table */

/* Sorted by op, then version (tests check the order and that from/to match the
** generated table). */
static const adapter adapters[] = {
    {"Abs", 1, 6, a_consumed_inputs, NULL},
    {"Add", 1, 6, a_consumed_inputs, NULL},
    {"Add", 6, 7, a_broadcast, NULL},
    {"And", 1, 7, a_broadcast, NULL},
    {"BatchNormalization", 1, 6, a_consumed_inputs, NULL},
    {"BatchNormalization", 6, 7, a_is_test, NULL},
    {"BatchNormalization", 7, 9, a_bn_spatial, NULL},
    {"BatchNormalization", 9, 14, a_bn_14, NULL},
    {"Cast", 1, 6, a_cast_5_6, NULL},
    {"Ceil", 1, 6, a_consumed_inputs, NULL},
    {"Clip", 1, 6, a_consumed_inputs, NULL},
    {"Clip", 6, 11, a_clip_6_11, NULL},
    {"Concat", 1, 4, a_concat_3_4, NULL},
    {"Div", 1, 6, a_consumed_inputs, NULL},
    {"Div", 6, 7, a_broadcast, NULL},
    {"Dropout", 1, 6, a_consumed_inputs, NULL},
    {"Dropout", 6, 7, a_is_test, NULL},
    {"Dropout", 7, 10, a_dropout_7_10, NULL},
    {"Dropout", 10, 12, a_dropout_10_12, NULL},
    {"Elu", 1, 6, a_consumed_inputs, NULL},
    {"Equal", 1, 7, a_broadcast, NULL},
    {"Exp", 1, 6, a_consumed_inputs, NULL},
    {"Floor", 1, 6, a_consumed_inputs, NULL},
    {"GRU", 3, 7, a_rnn_7, NULL},
    {"Gemm", 6, 7, a_drop_broadcast, NULL},
    {"GlobalLpPool", 1, 2, a_lppool_1_2, NULL},
    {"Greater", 1, 7, a_broadcast, NULL},
    {"HardSigmoid", 1, 6, a_consumed_inputs, NULL},
    {"Hardmax", 11, 13, a_softmax_11_13, NULL},
    {"InstanceNormalization", 1, 6, a_consumed_inputs, NULL},
    {"LSTM", 1, 7, a_rnn_7, NULL},
    {"LeakyRelu", 1, 6, a_consumed_inputs, NULL},
    {"Less", 1, 7, a_broadcast, NULL},
    {"Log", 1, 6, a_consumed_inputs, NULL},
    {"LogSoftmax", 11, 13, a_softmax_11_13, NULL},
    {"LpPool", 1, 2, a_lppool_1_2, NULL},
    {"Max", 1, 6, a_consumed_inputs, NULL},
    {"Mean", 1, 6, a_consumed_inputs, NULL},
    {"Min", 1, 6, a_consumed_inputs, NULL},
    {"Mul", 1, 6, a_consumed_inputs, NULL},
    {"Mul", 6, 7, a_broadcast, NULL},
    {"Neg", 1, 6, a_consumed_inputs, NULL},
    {"Or", 1, 7, a_broadcast, NULL},
    {"PRelu", 1, 6, a_consumed_inputs, NULL},
    {"PRelu", 6, 7, a_prelu_6_7, NULL},
    {"Pad", 1, 2, a_pad_1_2, NULL},
    {"Pad", 2, 11, a_pad_2_11, NULL},
    {"Pow", 1, 7, a_broadcast, NULL},
    {"RNN", 1, 7, a_rnn_7, NULL},
    {"Reciprocal", 1, 6, a_consumed_inputs, NULL},
    {"ReduceSum", 11, 13, a_axes_to_input, NULL},
    {"Relu", 1, 6, a_consumed_inputs, NULL},
    {"Reshape", 1, 5, a_reshape_4_5, NULL},
    {"Resize", 10, 11, a_resize_10_11, NULL},
    {"RoiAlign", 10, 16, a_roialign_10_16, NULL},
    {"Scan", 8, 9, a_scan_8_9, NULL},
    {"Scatter", 9, 11, a_scatter_9_11, "ScatterElements"},
    {"Selu", 1, 6, a_consumed_inputs, NULL},
    {"Sigmoid", 1, 6, a_consumed_inputs, NULL},
    {"Slice", 1, 10, a_slice_1_10, NULL},
    {"Softmax", 11, 13, a_softmax_11_13, NULL},
    {"Split", 1, 2, a_split_1_2, NULL},
    {"Split", 11, 13, a_split_12_13, NULL},
    {"Sqrt", 1, 6, a_consumed_inputs, NULL},
    {"Squeeze", 11, 13, a_axes_to_input, NULL},
    {"Sub", 1, 6, a_consumed_inputs, NULL},
    {"Sub", 6, 7, a_broadcast, NULL},
    {"Sum", 1, 6, a_consumed_inputs, NULL},
    {"Tanh", 1, 6, a_consumed_inputs, NULL},
    {"Tile", 1, 6, a_tile_1_6, NULL},
    {"TopK", 1, 10, a_topk_1_10, NULL},
    {"Unsqueeze", 11, 13, a_axes_to_input, NULL},
    {"Upsample", 1, 7, a_upsample_1_7, NULL},
    {"Upsample", 7, 9, a_upsample_7_9, NULL},
    {"Upsample", 9, 10, a_upsample_9_10, "Resize"},
    {"Xor", 1, 7, a_broadcast, NULL},
};
#define N_ADAPTERS (sizeof adapters / sizeof adapters[0])
_Static_assert(N_ADAPTERS == 76, "adapter table count");

typedef struct adapter_key {
    const char *op;
    int32_t to;
} adapter_key;

static int adapter_cmp(const void *key, const void *elem) {
    const adapter_key *k = key;
    const adapter *a = elem;
    int c = strcmp(k->op, a->op);
    if (c) return c;
    return (k->to > a->to) - (k->to < a->to);
}

static const adapter *adapter_find(const char *op, int32_t to) {
    adapter_key k = {op, to};
    return bsearch(&k, adapters, N_ADAPTERS, sizeof adapters[0], adapter_cmp);
}

/* For the tests: the table, so they can check its order and versions. */
size_t upgrade_adapter_count(void) { return N_ADAPTERS; }
void upgrade_adapter_at(size_t i, const char **op, int32_t *from, int32_t *to, bool *has_fn) {
    *op = adapters[i].op;
    *from = adapters[i].from;
    *to = adapters[i].to;
    *has_fn = adapters[i].fn != NULL;
}

/* ------------------------------------------------------------------ driver */

static void block(up *u, graph *g, int32_t node, const char *op, int64_t from, int64_t to,
                  const char *why) {
    u->n_blocked++;
    cJSON *a = pass_skip(u->pc, g, node, "%s", why);
    if (a) {
        cJSON_AddNumberToObject(a, "from", (double)from);
        cJSON_AddNumberToObject(a, "to", (double)to);
    }
    char item[256];
    snprintf(item, sizeof item, "%s%s (%s %lld->%lld)", u->n_blocked > 1 ? ", " : "",
             graph_node_id(g, node), op, (long long)from, (long long)to);
    size_t len = strlen(item);
    if (!u->msg_full && u->msg_len + len + 16 < sizeof u->msg) {
        memcpy(u->msg + u->msg_len, item, len + 1);
        u->msg_len += len;
    } else {
        u->msg_full = true;
    }
}

/*
** Constant held float types only before opset 9, yet exporters of the time wrote
** int64 shapes with it: such a source fails the checker at its own opset. From a
** target of 9 on the node is valid as it is; below, the value moves to an
** initializer, which has no type restriction.
*/
static int constant_quirk(up *u, graph *g, int32_t node) {
    Onnx__NodeProto *n = graph_node(g, node);
    Onnx__AttributeProto *a = graph_attr(n, "value");
    if (u->src >= 9 || !a || !a->t || n->n_output != 1) return 0;
    int32_t elem = a->t->data_type;
    if (elem == DT_FLOAT || elem == DT_DOUBLE || elem == DT_FLOAT16) return 0;
    const char *id = graph_node_id(g, node);
    pass_warn(u->pc, "node %s: Constant of %s is not valid before opset 9; the source fails "
              "the checker, migrated anyway", id, dtype_name(elem));
    const char *out = n->output[0];
    if (u->tgt >= 9 || elem == DT_STRING || graph_value_is_output(g, out)) return 0;
    graph_tensor_data td;
    int rc = graph_tensor_read(u->m, a->t, &td, u->err);
    if (rc) return err_prefix(u->err, "node %s: ", id);
    const char *name;
    rc = graph_add_initializer(g, out, elem, td.dims, (size_t)td.rank, td.data, td.nbytes,
                               &name, u->err);
    if (td.owned) free(td.data);
    if (rc) return rc;
    if (graph_replace_uses(g, out, name)) return nomem(u);
    cJSON *act = pass_action(u->pc, g, node, "upgraded");
    if (act) cJSON_AddStringToObject(act, "initializer", name);
    graph_remove_node(g, node);
    return 0;
}

/* The "upgraded" action for node i of g, with the adapter's details moved in. The
** original node (still in the protobuf until commit) names it: a replacement's
** index means nothing after the commit. */
static void record(up *u, graph *g, int32_t i, cJSON *details, const char *step_op,
                   int64_t from, int64_t to) {
    cJSON *rec = pass_action(u->pc, g, i, "upgraded");
    if (rec) {
        if (step_op && strcmp(step_op, graph_node(g, i)->op_type) != 0)
            cJSON_AddStringToObject(rec, "step_op", step_op);
        cJSON_AddNumberToObject(rec, "from", (double)from);
        cJSON_AddNumberToObject(rec, "to", (double)to);
        for (cJSON *c = details->child; c;) {
            cJSON *next = c->next;
            cJSON_AddItemToObject(rec, c->string, cJSON_DetachItemViaPointer(details, c));
            c = next;
        }
    }
    cJSON_Delete(details);
}

/* Going down, a node passes unchanged when its schema is the same at both
** opsets; anything else would need an adapter, and none exists yet. */
static void downgrade_node(up *u, graph *g, int32_t i) {
    const Onnx__NodeProto *n = graph_node(g, i);
    const char *op = n->op_type ? n->op_type : "";
    const opset_entry *e = opset_table_find(op);
    int32_t from = e ? opset_schema_at(e, u->src) : 0, to = e ? opset_schema_at(e, u->tgt) : 0;
    if (!e)
        block(u, g, i, op, u->src, u->tgt, "no ai.onnx schema for this op");
    else if (from == 0)
        block(u, g, i, op, u->src, u->tgt, "op does not exist at the source opset");
    else if (to == 0)
        block(u, g, i, op, from, u->tgt, "op does not exist at the target opset");
    else if (from != to)
        block(u, g, i, op, from, to, "no downgrade adapter for this schema change");
}

/* Walk node i of g from the source opset to the target, one schema step at a
** time; in planning mode only record what would block. */
static int upgrade_node(up *u, graph *g, int32_t i) {
    Onnx__NodeProto *n = graph_node(g, i);
    if (!graph_domain_is_default(n->domain)) return 0;
    if (u->src > u->tgt) {
        if (u->plan) downgrade_node(u, g, i);
        return 0;
    }
    /* At its own opset a node needs no step: an op this table does not know
    ** (a newer opset's) is left to the runtime, as it was. */
    bool converting = u->src != u->tgt;
    const char *op = n->op_type ? n->op_type : "";
    const opset_entry *e = opset_table_find(op);
    const retired *r = (!e || opset_schema_at(e, u->src) == 0) ? retired_find(op) : NULL;
    if (r) {
        if (u->plan) {
            pass_warn(u->pc, "node %s: %s is a retired experimental op; the source fails "
                      "the checker, migrated anyway", graph_node_id(g, i), op);
            u->n_work++;
            return 0;
        }
        cJSON *act = cJSON_CreateObject();
        if (!act) return nomem(u);
        int32_t node = i;
        int rc = r->fn(u, g, &node, act);
        if (rc)
            cJSON_Delete(act);
        else
            record(u, g, i, act, NULL, 1, u->tgt);
        return rc;
    }
    if (!e) {
        if (u->plan && converting)
            block(u, g, i, op, u->src, u->tgt, "no ai.onnx schema for this op");
        return 0;
    }
    int32_t cur = opset_schema_at(e, u->src);
    if (cur == 0) {
        if (u->plan && converting)
            block(u, g, i, op, u->src, u->tgt, "op does not exist at the source opset");
        return 0;
    }
    if (strcmp(op, "Constant") == 0 && u->src < 9) {
        if (u->plan) {
            u->n_work += u->tgt < 9; /* maybe an initializer to make */
        } else {
            int rc = constant_quirk(u, g, i);
            if (rc || graph_node_removed(g, i)) return rc;
        }
    }
    int32_t node = i;
    for (size_t k = 0; k < e->count; k++) {
        int32_t v = e->versions[k];
        if (v <= cur) continue;
        if (v > u->tgt) break;
        const adapter *a = adapter_find(op, v);
        if (!a || !a->fn) {
            if (a || (e->deprecated && v >= e->deprecated)) {
                if (u->plan)
                    block(u, g, node, op, cur, v,
                          a ? "no adapter for this schema change"
                            : "op deprecated, no replacement adapter");
                return 0;
            }
            cur = v; /* only the types changed */
            continue;
        }
        u->n_work++;
        if (!u->plan) {
            cJSON *act = cJSON_CreateObject();
            if (!act) return nomem(u);
            int rc = a->fn(u, g, &node, act);
            if (rc) {
                cJSON_Delete(act);
                return rc;
            }
            record(u, g, i, act, op, cur, v);
        }
        cur = v;
        if (a->renamed) {
            op = a->renamed;
            e = opset_table_find(op);
            if (!e) return err_set(u->err, TILEOPT_ERROR, "upgrade: no schema for %s", op);
            k = (size_t)-1; /* restart over the new op's history, from cur */
        }
    }
    return 0;
}

static int upgrade_graph(up *u, graph *g) {
    uint32_t n0 = graph_n_nodes(g); /* nodes added here are already in target form */
    for (uint32_t i = 0; i < n0; i++) {
        if (graph_node_removed(g, (int32_t)i)) continue;
        for (graph *s = graph_node_subgraphs(g, (int32_t)i); s; s = s->next_sibling) {
            int rc = upgrade_graph(u, s);
            if (rc) return rc;
        }
        int rc = upgrade_node(u, g, (int32_t)i);
        if (rc) return rc;
        if (!u->plan) pass_progress(u->pc, "upgrade", i + 1, n0);
    }
    return 0;
}

/*
** From IR 4 on, an initializer listed among the graph inputs is only a default
** the caller may override: ONNX Runtime then no longer folds it as a constant.
** Below IR 4 every initializer had to be listed, so raising the IR past 3 takes
** them out (unless the caller asked to keep them). The values keep their
** index entries; graph_commit rebuilds the index.
*/
static void drop_initializer_inputs(up *u) {
    graph *g = u->m->main;
    Onnx__GraphProto *pb = g->pb;
    size_t k = 0;
    for (size_t i = 0; i < pb->n_input; i++) {
        const char *name = pb->input[i]->name ? pb->input[i]->name : "";
        graph_value *v = graph_find(g, name);
        if (v && (v->initializer >= 0 || v->sparse >= 0)) {
            v->input = -1;
            continue;
        }
        pb->input[k++] = pb->input[i];
    }
    pb->n_input = k;
}

int pass_upgrade(pass_ctx *pc) {
    up u;
    memset(&u, 0, sizeof u);
    u.pc = pc;
    u.m = pc->model;
    u.err = pc->err;
    int64_t asked = pc->opt->target_opset;
    if (asked && (asked < 6 || asked > opset_table_max_opset))
        return err_set(u.err, TILEOPT_MISUSE, "upgrade: target opset %lld outside 6..%d",
                       (long long)asked, (int)opset_table_max_opset);
    u.src = graph_opset(u.m, "");
    if (u.src == 0) {
        pass_warn(pc, "upgrade: the model imports no ai.onnx opset; nothing to migrate");
        return 0;
    }
    u.tgt = upgrade_target_for(u.src, asked);
    /* The table's schemas end at its newest opset: past it, whether a node's
    ** schema changed is unknown, so nothing can be shown to go down exactly. */
    if (u.src > u.tgt && u.src > opset_table_max_opset)
        return err_set(u.err, TILEOPT_UNSUPPORTED,
                       "upgrade: model opset %lld is newer than the newest opset known "
                       "here (%d); it cannot be converted to %lld",
                       (long long)u.src, (int)opset_table_max_opset, (long long)u.tgt);
    int64_t ir_in = u.m->pb->ir_version;
    u.ir_in = ir_in;
    int64_t ir_need = upgrade_ir_for_opset(u.tgt);
    u.ir_out = ir_in > ir_need ? ir_in : ir_need;

    /* Planning needs no shapes: it only looks up schema versions. */
    u.plan = true;
    int rc = upgrade_graph(&u, u.m->main);
    if (rc) return rc;
    if (u.n_blocked)
        return err_set(u.err, TILEOPT_UNSUPPORTED,
                       "%s to opset %lld: %u node%s need%s a step with no adapter: %s%s",
                       u.src > u.tgt ? "downgrade" : "upgrade", (long long)u.tgt,
                       u.n_blocked, u.n_blocked > 1 ? "s" : "", u.n_blocked > 1 ? "" : "s",
                       u.msg, u.msg_full ? ", ..." : "");
    if (u.src == u.tgt && u.n_work == 0) return 0; /* leave the model untouched */
    if (ir_in < upgrade_ir_for_opset(u.src))
        pass_warn(pc, "upgrade: source IR version %lld is below what opset %lld needs (%lld); "
                  "the source fails the checker, migrated anyway", (long long)ir_in,
                  (long long)u.src, (long long)upgrade_ir_for_opset(u.src));

    /* Ranks of intermediate values let more Tile-1 nodes get constant repeats and
    ** more legacy broadcasts a plain Unsqueeze. Inference knows the legacy forms;
    ** when it gives up, values stay unknown and the run-time forms take over. */
    errbuf ie;
    err_clear(&ie);
    if (u.n_work && infer_shapes(u.m, &ie))
        pass_warn(pc, "upgrade: shape inference stopped (%s); ranks it did not reach are "
                  "treated as unknown", ie.msg);
    u.plan = false;
    /* Raised first so graph_add_initializer sees the result's IR (below 4 it also
    ** lists new initializers as graph inputs). There is no graph.h setter for
    ** this one scalar of the model. */
    u.m->pb->ir_version = u.ir_out;
    u.m->pb->has_ir_version = 1;
    if ((rc = upgrade_graph(&u, u.m->main))) return rc;
    if ((rc = graph_set_opset(u.m, "", u.tgt, u.err))) return rc;
    if (ir_in < 4 && u.ir_out >= 4 && !pc->opt->keep_initializer_inputs)
        drop_initializer_inputs(&u);
    pc->changed = true;
    return graph_commit(u.m->main, u.err);
}

/* The nodes a gqa rewrite builds (gqa_impl.h says each). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/gqa/gqa_impl.h"

static const char *fresh(gq_emit *e, const char *what) {
    if (e->rc) return NULL;
    const Onnx__NodeProto *n = graph_node(e->g, e->at);
    char buf[256];
    snprintf(buf, sizeof buf, "%s_gqa_%s", n->name && n->name[0] ? n->name : n->op_type, what);
    const char *name = graph_unique_name(e->g, buf);
    if (!name) e->rc = err_set(e->pc->err, TILEOPT_NOMEM, "out of memory");
    return name;
}

const char *gq_ints(gq_emit *e, const char *what, const int64_t *v, size_t n) {
    if (e->rc) return NULL;
    const char *name;
    int64_t dim = (int64_t)n;
    if ((e->rc = graph_add_initializer(e->g, what, DT_INT64, &dim, 1, v, n * sizeof *v, &name,
                                       e->pc->err)))
        return NULL;
    return name;
}

const char *gq_node(gq_emit *e, const char *op, const char *what, const char *const *ins,
                        size_t n_in, const char *out, Onnx__NodeProto **made) {
    const char *o = out ? out : fresh(e, what);
    const char *nm = fresh(e, what);
    if (e->rc) return NULL;
    int32_t idx;
    Onnx__NodeProto *n = graph_add_node(e->g, op, nm, ins, n_in, &o, 1, &idx);
    if (!n) {
        e->rc = err_set(e->pc->err, TILEOPT_NOMEM, "gqa: cannot add a %s node", op);
        return NULL;
    }
    if (made) *made = n;
    return o;
}

/* allowzero: every entry is the size itself, so an empty axis stays one (a 0
** would copy the input's dim); from opset 14, which the pass asks for. */
const char *gq_reshape(gq_emit *e, const char *x, const char *target, const char *out) {
    Onnx__NodeProto *r = NULL;
    const char *o = gq_node(e, "Reshape", "reshape", (const char *[]){x, target}, 2, out, &r);
    if (r && graph_node_set_attr_int(e->g, r, "allowzero", 1))
        e->rc = err_set(e->pc->err, TILEOPT_NOMEM, "out of memory");
    return o;
}

const char *gq_transpose(gq_emit *e, const char *x, const int64_t *perm, size_t n) {
    Onnx__NodeProto *t = NULL;
    const char *o = gq_node(e, "Transpose", "transpose", &x, 1, NULL, &t);
    if (t && graph_node_set_attr_ints(e->g, t, "perm", perm, n))
        e->rc = err_set(e->pc->err, TILEOPT_NOMEM, "out of memory");
    return o;
}

const char *gq_concat(gq_emit *e, const char *const *ins, size_t n) {
    Onnx__NodeProto *c = NULL;
    const char *o = gq_node(e, "Concat", "shape", ins, n, NULL, &c);
    if (c && graph_node_set_attr_int(e->g, c, "axis", 0))
        e->rc = err_set(e->pc->err, TILEOPT_NOMEM, "out of memory");
    return o;
}

const char *gq_reshape_copying(gq_emit *e, const char *x, const char *target, const char *out) {
    return gq_node(e, "Reshape", "reshape", (const char *[]){x, target}, 2, out, NULL);
}

const char *gq_shape_part(gq_emit *e, const char *x, int64_t start, int64_t end) {
    Onnx__NodeProto *s = NULL;
    const char *sh = gq_node(e, "Shape", "shape", &x, 1, NULL, &s);
    if (!s) return NULL;
    if (e->opset >= 15) {
        if (graph_node_set_attr_int(e->g, s, "start", start) ||
            graph_node_set_attr_int(e->g, s, "end", end))
            e->rc = err_set(e->pc->err, TILEOPT_NOMEM, "out of memory");
        return sh;
    }
    const char *ins[3] = {sh, gq_ints(e, "gqa_start", &start, 1), gq_ints(e, "gqa_end", &end, 1)};
    return gq_node(e, "Slice", "slice", ins, 3, NULL, NULL);
}

const char *gq_query_rows(gq_emit *e, const char *a, int64_t n, const char **group) {
    const char *rows = gq_shape_part(e, a, 2, 3);
    *group = gq_node(e, "Mul", "group_rows", (const char *[]){rows, gq_ints(e, "gqa_group", &n, 1)},
                     2, NULL, NULL);
    return rows;
}

const char *gq_few_rows(gq_emit *e, const char *group) {
    int64_t max = GQA_FOLD_MAX_ROWS;
    return gq_node(e, "LessOrEqual", "fold_rows",
                   (const char *[]){group, gq_ints(e, "gqa_max_rows", &max, 1)}, 2, NULL, NULL);
}

/* The axes an attribute before opset 13. */
const char *gq_unsqueeze1(gq_emit *e, const char *x) {
    int64_t one = 1;
    if (e->opset >= 13) {
        const char *ins[2] = {x, gq_ints(e, "gqa_axes", &one, 1)};
        return gq_node(e, "Unsqueeze", "unsqueeze", ins, 2, NULL, NULL);
    }
    Onnx__NodeProto *u = NULL;
    const char *o = gq_node(e, "Unsqueeze", "unsqueeze", &x, 1, NULL, &u);
    if (u && graph_node_set_attr_ints(e->g, u, "axes", &one, 1))
        e->rc = err_set(e->pc->err, TILEOPT_NOMEM, "out of memory");
    return o;
}

const char *gq_relayout(gq_emit *e, const gq_operand *o) {
    const char *x = o->r.src;
    for (int i = 0; i < o->n_layout; i++) x = gq_transpose(e, x, o->perm[i], GQA_RANK);
    return x;
}

const char *gq_copy_op(gq_emit *e, bool five, int32_t i, const char *was, const char *in) {
    graph *g = e->g;
    const Onnx__NodeProto *n = graph_node(g, i);
    const char *ins[8];
    size_t n_in = n->n_input < 8 ? n->n_input : 8;
    for (size_t k = 0; k < n_in; k++) {
        const char *x = graph_node_input(n, k);
        if (!x) ins[k] = "";
        else if (strcmp(x, was) == 0) ins[k] = in;
        else if (five && gq_type_of(g, x)->rank == GQA_RANK) ins[k] = gq_unsqueeze1(e, x);
        else ins[k] = x;
    }
    /* Dropout in inference: its data alone */
    if (op_of(n) == OP_Dropout) n_in = 1;
    Onnx__NodeProto *c = NULL;
    const char *o = gq_node(e, n->op_type, "op", ins, n_in, NULL, &c);
    if (!c) return NULL;
    for (size_t a = 0; a < n->n_attribute && !e->rc; a++) {
        const Onnx__AttributeProto *at = n->attribute[a];
        const char *an = at->name ? at->name : "";
        int rc = 0;
        if ((op_of(n) == OP_Softmax || op_of(n) == OP_LogSoftmax) && strcmp(an, "axis") == 0)
            continue; /* set below: the last axis of whichever rank */
        if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) rc = graph_node_set_attr_int(g, c, an, at->i);
        else if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) rc = graph_node_set_attr_float(g, c, an, at->f);
        else if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS) rc = graph_node_set_attr_ints(g, c, an, at->ints, at->n_ints);
        else if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING) rc = graph_node_set_attr_string(g, c, an, graph_attr_string(n, an, ""));
        else rc = TILEOPT_UNSUPPORTED;
        if (rc) e->rc = err_set(e->pc->err, rc, "gqa: cannot copy attribute %s of %s", an, n->op_type);
    }
    if ((op_of(n) == OP_Softmax || op_of(n) == OP_LogSoftmax) && !e->rc &&
        graph_node_set_attr_int(g, c, "axis", -1))
        e->rc = err_set(e->pc->err, TILEOPT_NOMEM, "out of memory");
    if (n->domain && n->domain[0] && !e->rc) c->domain = n->domain;
    return o;
}

void gq_bytes_text(graph *g, const graph_type *t, char *buf, size_t cap) {
    const dtype_info *d = dtype_get(t->elem);
    dim dims[GQA_RANK + 1], prod;
    buf[0] = '\0';
    if (!d || t->rank < 0 || t->rank > GQA_RANK) return;
    for (int32_t i = 0; i < t->rank; i++) dims[i] = dim_at(t, i);
    dims[t->rank] = dim_num((int64_t)d->size);
    if (dim_product(g->model->arena, dims, t->rank + 1, &prod) &&
        dims_print(buf, cap, &prod, 1) >= cap)
        buf[0] = '\0';
}

void gq_drop_repeat(pass_ctx *pc, graph *g, const gq_operand *o) {
    int32_t order[GQA_MAX_TRANSPOSES + 4];
    int k = 0;
    for (int i = o->n_layout - 1; i >= 0; i--) order[k++] = o->layout[i];
    for (int i = 0; i < o->r.n_nodes; i++) order[k++] = o->r.nodes[i];
    for (int i = 0; i < k; i++) {
        int32_t id = order[i];
        if (graph_node_removed(g, id)) continue;
        const Onnx__NodeProto *nd = graph_node(g, id);
        bool read = false;
        for (size_t o = 0; o < nd->n_output && !read; o++) {
            graph_value *v = nd->output[o][0] ? graph_find(g, nd->output[o]) : NULL;
            read = graph_value_is_output(g, nd->output[o]);
            for (uint32_t u = 0; v && !read && u < v->n_uses; u++)
                read = !graph_node_removed(g, v->uses[u].node);
        }
        if (read) break;
        json_w *a = pass_action(pc, g, id, "eliminated");
        json_put_str(a, "rule", "a K/V head repeat nothing reads now");
        graph_remove_node(g, id);
    }
}

/* ----------------------------------------------------------------- sizes */

static int64_t size_known(const gq_sizes *z, int64_t spec) {
    switch (spec) {
    case GQ_BATCH: return z->batch;
    case GQ_ROWS: return z->rows;
    case GQ_INNER: return z->inner;
    case GQ_COLS: return z->cols;
    case GQ_GROUP_ROWS: return z->rows >= 0 ? z->rows * z->n : -1;
    default: return spec;
    }
}

static const char *size_tensor(gq_sizes *z, int64_t spec) {
    int k = (int)(GQ_BATCH - spec);
    if (z->got[k]) return z->got[k];
    switch (spec) {
    case GQ_BATCH: z->got[k] = gq_shape_part(z->e, z->a, 0, 1); break;
    case GQ_ROWS: z->got[k] = gq_shape_part(z->e, z->a, 2, 3); break;
    case GQ_INNER: z->got[k] = gq_shape_part(z->e, z->src, z->src_inner, z->src_inner + 1); break;
    case GQ_COLS: z->got[k] = gq_shape_part(z->e, z->src, z->src_cols, z->src_cols + 1); break;
    default: {
        const char *ins[2] = {size_tensor(z, GQ_ROWS), gq_ints(z->e, "gqa_group", &z->n, 1)};
        z->got[k] = gq_node(z->e, "Mul", "group_rows", ins, 2, NULL, NULL);
    }
    }
    return z->got[k];
}

const char *gq_shape(gq_sizes *z, const int64_t *spec, int n) {
    int64_t run[8];
    int n_run = 0, n_parts = 0;
    const char *parts[8];
    for (int i = 0; i <= n; i++) {
        int64_t v = i < n ? size_known(z, spec[i]) : -1;
        if (i < n && v >= 0) {
            run[n_run++] = v;
            continue;
        }
        if (n_run) parts[n_parts++] = gq_ints(z->e, "gqa_shape", run, (size_t)n_run);
        n_run = 0;
        if (i < n) parts[n_parts++] = size_tensor(z, spec[i]);
    }
    return n_parts == 1 ? parts[0] : gq_concat(z->e, parts, (size_t)n_parts);
}

/* ------------------------------------------------------------ dispatch */

const char gq_dispatch_doc[] =
    "tileopt gqa: grouped-query attention in the folded form for few query rows, the "
    "export's repeated K/V heads for many";

static int by_index(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

void gq_sort_nodes(int32_t *v, size_t n) { qsort(v, n, sizeof *v, by_index); }

int gq_dispatch(gq_emit *e, const char *cond, const int32_t *fold, size_t n_fold,
                const int32_t *orig, size_t n_orig, const char *out, int32_t elem) {
    if (e->rc) return e->rc;
    graph *g = e->g;
    for (size_t i = 0; i < n_fold; i++) graph_remove_node(g, fold[i]);
    Onnx__NodeProto *ifn = NULL;
    gq_node(e, "If", "dispatch", &cond, 1, out, &ifn);
    int32_t at = (int32_t)graph_n_nodes(g) - 1;
    Onnx__GraphProto *then = NULL, *els = NULL;
    if (!e->rc) {
        then = graph_subgraph_of_copies(g, at, fold, n_fold, out, elem, "gqa_folded",
                                        e->pc->err);
        els = then ? graph_subgraph_of_copies(g, at, orig, n_orig, out, elem, "gqa_repeated",
                                              e->pc->err)
                   : NULL;
        if (!els) e->rc = e->pc->err->code ? e->pc->err->code : TILEOPT_NOMEM;
    }
    if (e->rc) return e->rc;
    if (graph_node_set_attr_graph(g, ifn, "then_branch", then) ||
        graph_node_set_attr_graph(g, ifn, "else_branch", els) ||
        !(ifn->doc_string = graph_strdup(g, gq_dispatch_doc)))
        e->rc = err_set(e->pc->err, TILEOPT_NOMEM, "out of memory");
    return e->rc;
}

const char *gq_order_text(const gq_repeat *r) {
    return r->kv == 1     ? "one K/V head"
           : r->kv_major ? "kv-major (query head h reads K/V head h div n)"
                         : "n-major (query head h reads K/V head h mod kv)";
}

/*
** What the fold pass's steps share: the sweep's tables of values and nodes,
** constants read once, types, and what shape inference knows of an output.
*/
#include <stdlib.h>
#include <string.h>

#include "graph/const.h"
#include "passes/fold/fold_impl.h"

/* ---------------------------------------------------------------- helpers */

/* Index of a value; the table grows with the graph's values (the rewrites add
** initializers that later nodes read). -1: none, or out of memory. */
int32_t fd_vslot(fold_graph *f, const graph_value *v) {
    if (!v) return -1;
    uint32_t i = (uint32_t)(v - f->g->values);
    if (i >= f->nv) {
        uint32_t nv = f->g->n_values;
        fold_value *grown = realloc(f->v, nv * sizeof *grown);
        if (!grown) return -1;
        memset(grown + f->nv, 0, (nv - f->nv) * sizeof *grown);
        f->v = grown;
        f->nv = nv;
    }
    return (int32_t)i;
}

/* The value at a node's input (or output) slot, -1 when absent. */
int32_t fd_vin(fold_graph *f, int32_t node, size_t slot) {
    return fd_vslot(f, graph_node_in(f->g, node, slot));
}

int32_t fd_vout(fold_graph *f, int32_t node, size_t slot) {
    return fd_vslot(f, graph_node_out(f->g, node, slot));
}

/* The op of node idx: the sweep's table for the nodes it started with. */
op_id fd_op_at(const fold_graph *f, int32_t idx) {
    return (uint32_t)idx < f->nn ? f->node[idx].op : op_of(graph_node(f->g, idx));
}

/* The constant behind value i, or NULL; *partial tells a partial shape. */
void fd_get_const_at(fold_graph *f, int32_t i, tensor **out, bool *partial) {
    *out = NULL;
    *partial = false;
    if (i < 0) return;
    if (f->v[i].val || f->v[i].partial) {
        *out = f->v[i].val;
        *partial = f->v[i].partial;
        return;
    }
    graph *hg;
    graph_value *hv = graph_value_home(f->g, &f->g->values[i], &hg);
    if (!graph_value_const(hg, hv)) return;
    /* Constant nodes of this graph fold as nodes (so the scope decides). */
    if (hg == f->g && hv->initializer < 0) return;
    tensor *t = NULL;
    errbuf e = {0};
    int rc;
    if (hv->initializer >= 0) {
        rc = tensor_from_proto(hg->model, hg->pb->initializer[hv->initializer],
                               &f->pc->eval, &t, &e);
    } else {
        tensor *outs[1] = {NULL};
        const Onnx__NodeProto *cn = graph_node(hg, hv->producer);
        if (cn->n_output != 1) return;
        rc = eval_node(hg, hv->producer, NULL, 0, outs, 1, &f->pc->eval, NULL, &e);
        t = outs[0];
    }
    if (rc) {
        /* an unreadable constant is the loader's or evaluator's business: not folded */
        tensor_free(t);
        return;
    }
    f->v[i].val = t;
    *out = t;
}

const graph_type *fd_type_of_value(fold_graph *f, graph_value *v) {
    return v ? &graph_value_home(f->g, v, NULL)->type : NULL;
}

/* The type of node's input (or output) slot; NULL when absent. */
const graph_type *fd_type_in(fold_graph *f, int32_t node, size_t slot) {
    return fd_type_of_value(f, graph_node_in(f->g, node, slot));
}

const graph_type *fd_type_out(fold_graph *f, int32_t node, size_t slot) {
    return fd_type_of_value(f, graph_node_out(f->g, node, slot));
}

/* Shape's [start, end) window (attributes from opset 15 on), clamped. */
void fd_shape_window(const Onnx__NodeProto *n, int64_t opset, int32_t rank, int64_t *s,
                     int64_t *e) {
    int64_t r = rank;
    int64_t start = opset >= 15 ? graph_attr_int(n, "start", 0) : 0;
    int64_t end = opset >= 15 ? graph_attr_int(n, "end", r) : r;
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : (start > r ? r : start);
    end = end < 0 ? 0 : (end > r ? r : end);
    *s = start;
    *e = end > start ? end : start;
}

/* Are dims [s, e) of t all numbers? */
static bool dims_known(const graph_type *t, int64_t s, int64_t e) {
    for (int64_t d = s; d < e; d++)
        if (!t->dims || t->dims[d] < 0) return false;
    return true;
}

/* Does Shape (or Size) node idx read only static dims of its input type t? */
bool fd_reads_static_dims(fold_graph *f, int32_t idx, op_id op, const graph_type *t) {
    int64_t s = 0, e = t->rank;
    if (op == OP_Shape) fd_shape_window(graph_node(f->g, idx), f->opset, t->rank, &s, &e);
    return dims_known(t, s, e);
}

/* ---------------------------------------------------------------- phase A */

/* The single output of n when shape inference knows it as numbers although its
** inputs are not constant: named dims that cancel (Div(Mul(N, 4), N) is 4, the
** -1 of a Reshape of [N, 16, 64] to [N, -1] is 1024). */
const shape_value *fd_known_by_inference(fold_graph *f, int32_t idx) {
    const Onnx__NodeProto *n = graph_node(f->g, idx);
    if (n->n_output != 1) return NULL;
    graph_value *v = graph_node_out(f->g, idx, 0);
    const shape_value *sv = v ? v->shape_value : NULL;
    if (!sv || !shape_value_static(sv) || (v->type.elem != DT_INT64 && v->type.elem != DT_INT32))
        return NULL;
    return sv;
}

/* That output as a tensor. */
int fd_inferred_tensor(fold_graph *f, int32_t idx, tensor **out) {
    graph_value *v = graph_node_out(f->g, idx, 0);
    const shape_value *sv = v->shape_value;
    int64_t len = sv->n;
    int rc = tensor_new(v->type.elem, &len, sv->rank, &f->pc->eval, out, f->pc->err);
    if (rc) return rc;
    for (int32_t k = 0; k < sv->n; k++) {
        if (v->type.elem == DT_INT64) {
            memcpy((*out)->data + (size_t)k * 8, &sv->e[k].n, 8);
        } else {
            int32_t x = (int32_t)sv->e[k].n;
            memcpy((*out)->data + (size_t)k * 4, &x, 4);
        }
    }
    return TILEOPT_OK;
}

/* May input i of n be a partial shape? Only where the op moves entries without
** computing with them. */
bool fd_partial_ok(op_id op, size_t i) {
    if (op == OP_Concat) return true;
    if (i != 0) return false;
    return op == OP_Gather || op == OP_Slice || op == OP_Unsqueeze || op == OP_Squeeze ||
           op == OP_Identity;
}

/* ------------------------------------------------------------ size policy */

uint64_t fd_held_bytes(fold_graph *f, int32_t vi) {
    if (f->v[vi].held_known) return f->v[vi].held;
    const graph_value *v = &f->g->values[vi];
    if (v->outer >= 0 || v->initializer < 0) return 0;
    uint64_t b = graph_initializer_bytes(f->g->pb->initializer[v->initializer]);
    if (v->input < 0) return b;
    /* a graph input stays, but below IR 4 every initializer of the main graph
    ** is listed as one, and that listing goes with it (graph_commit) */
    if (f->g->parent || f->g->model->pb->ir_version >= 4) return 0;
    return b + graph_value_info_bytes(f->g->pb->input[v->input]);
}

void fd_set_held(fold_graph *f, int32_t vi, uint64_t bytes) {
    f->v[vi].held = bytes;
    f->v[vi].held_known = true;
}

/* The digits of the suffix graph_unique_name may give a new name (name_N,
** N a counter of the whole run): counted at their widest, never at the
** counter's value now, so a second run over the output decides as the first
** did (a fold at the margin would otherwise go through once the counter is
** short again). */
#define NAME_SUFFIX_DIGITS 10

uint64_t fd_new_const_bytes(fold_graph *f, const char *name, int32_t elem, const int64_t *dims,
                            size_t rank, uint64_t nbytes, bool graph_output) {
    size_t len = strlen(name) + 1 + NAME_SUFFIX_DIGITS;
    uint64_t b = graph_new_initializer_bytes(len, elem, dims, rank, nbytes);
    /* below IR 4 it is listed as a graph input too: name, element type and
    ** dims, each field with its tag and length (at most 12 bytes a dim) */
    if (f->g->model->pb->ir_version < 4) b += len + 16 + 12 * (uint64_t)rank;
    /* Identity(name_N) -> name: op_type, both names, tags and lengths */
    if (graph_output) b += 2 * (uint64_t)len + 20;
    return b;
}

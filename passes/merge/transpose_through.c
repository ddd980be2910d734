/*
** How each op a Transpose moves past (sink_transposes, transpose_sink.c) reads
** the Transpose's input instead: the permutation it then leaves behind, and
** the axes, target or axis it takes on that input.
*/
#include <stdlib.h>
#include <string.h>

#include "passes/merge/merge_impl.h"
#include "passes/merge/transpose_sink.h"

/* The permutation of Transpose n of an input of rank `rank` (-1: unknown),
** the reversal when perm is absent; false when it cannot be known. */
bool ts_perm_of(const Onnx__NodeProto *n, int32_t rank, int64_t *p, size_t *len) {
    const Onnx__AttributeProto *a = graph_attr(n, "perm");
    if (!a) {
        if (rank < 0 || rank > TS_MAX_PERM) return false;
        for (int32_t i = 0; i < rank; i++) p[i] = rank - 1 - i;
        *len = (size_t)rank;
        return true;
    }
    if (a->n_ints > TS_MAX_PERM || (rank >= 0 && a->n_ints != (size_t)rank)) return false;
    bool seen[TS_MAX_PERM] = {false};
    for (size_t i = 0; i < a->n_ints; i++) {
        if (a->ints[i] < 0 || a->ints[i] >= (int64_t)a->n_ints || seen[a->ints[i]]) return false;
        seen[a->ints[i]] = true;
        p[i] = a->ints[i];
    }
    *len = a->n_ints;
    return true;
}


/* The dims of value name, as numbers, into m. */
void ts_dims_of(graph *g, const char *name, moved *m) {
    const graph_type *t = rw_type(g, name);
    m->dims_known = t && t->rank == (int32_t)m->rank;
    for (size_t i = 0; m->dims_known && i < m->rank; i++) {
        dim d = dim_at(t, (int32_t)i);
        m->dims_known = dim_is_num(d) && d.n > 0;
        if (m->dims_known) m->dims[i] = d.n;
    }
}

bool ts_is_identity(const moved *m) {
    for (size_t i = 0; i < m->rank; i++)
        if (m->q[i] != (int64_t)i) return false;
    return true;
}

/* Integer axes of node n: input slot `in` from opset `since`, attribute `axes`
** before. *present is false when the node has none. */
static bool axes_of(graph *g, const Onnx__NodeProto *n, int64_t opset, int64_t since, size_t in,
                    int64_t *ax, size_t *len, bool *present) {
    *len = 0;
    *present = true;
    if (opset >= since) {
        const char *name = graph_node_input(n, in);
        if (!name) {
            *present = false;
            return true;
        }
        return rw_const_ints(g, name, ax, TS_MAX_PERM, len);
    }
    const Onnx__AttributeProto *a = graph_attr(n, "axes");
    if (!a) {
        *present = false;
        return true;
    }
    if (a->n_ints > TS_MAX_PERM) return false;
    for (size_t i = 0; i < a->n_ints; i++) ax[i] = a->ints[i];
    *len = a->n_ints;
    return true;
}

/* Axes counted from the end made non-negative; false when one is out of
** range or named twice. */
static bool normalize(int64_t *ax, size_t n, size_t rank) {
    bool seen[TS_MAX_PERM] = {false};
    for (size_t i = 0; i < n; i++) {
        if (ax[i] < 0) ax[i] += (int64_t)rank;
        if (ax[i] < 0 || ax[i] >= (int64_t)rank || seen[ax[i]]) return false;
        seen[ax[i]] = true;
    }
    return true;
}

/* The one input slot of n that reads name; -1 when none or several do (then
** the rewired slot and the others would stop reading one value). */
int ts_slot_of(const Onnx__NodeProto *n, const char *name) {
    int slot = -1;
    for (size_t k = 0; k < n->n_input; k++) {
        if (!n->input[k] || strcmp(n->input[k], name) != 0) continue;
        if (slot >= 0) return -1;
        slot = (int)k;
    }
    return slot;
}

/* The ops a Transpose moves past, whatever their attributes. */
bool ts_movable(op_id op) {
    return op == OP_Unsqueeze || op == OP_Squeeze || op == OP_Slice || op == OP_Gather ||
           op == OP_Reshape || merge_reduces(op) ||
           (op != OP_NONE && (op_table[op].kind == OPK_UNARY || op_table[op].kind == OPK_BINARY));
}

/* The input of movable op n that a Transpose above it would reach it through:
** for a binary op the one beside a constant, else the first. */
const char *ts_data_input(graph *g, const Onnx__NodeProto *n) {
    graph_const c;
    if (op_table[op_of(n)].kind == OPK_BINARY && n->n_input == 2 &&
        graph_const_find(g, graph_node_input(n, 0), &c))
        return graph_node_input(n, 1);
    return graph_node_input(n, 0);
}

/* y's axes ax[0..na) go (a Squeeze, a reduction without keepdims): x's axes
** p[ax] go instead, named in m->vals, and the permutation is renumbered over
** the axes left. */
static void drop_axes(const moved *in, const int64_t *ax, size_t na, moved *m) {
    const int64_t *p = in->q;
    bool gone_y[TS_MAX_PERM] = {false}, gone_x[TS_MAX_PERM] = {false};
    for (size_t i = 0; i < na; i++) {
        gone_y[ax[i]] = true;
        gone_x[p[ax[i]]] = true;
        m->vals[i] = p[ax[i]];
    }
    /* where each axis of x left after the drop lands */
    int64_t pos[TS_MAX_PERM];
    for (size_t a = 0, k = 0; a < in->rank; a++) pos[a] = gone_x[a] ? -1 : (int64_t)k++;
    size_t j = 0;
    for (size_t i = 0; i < in->rank; i++)
        if (!gone_y[i]) m->q[j++] = pos[p[i]];
    m->rank = j;
    m->n_vals = na;
}

/*
** A reduction of y's axes a is one of x's axes p[a], its values the same:
** with keepdims the permutation stays as it was, without it the axes go as a
** Squeeze's would. One of every axis (no axes named) keeps its form; one of
** none (noop_with_empty_axes) is an identity.
*/
static bool through_reduce(graph *g, const Onnx__NodeProto *n, int64_t opset, const moved *in,
                           moved *m, const char **why) {
    int64_t ax[DIM_MAX_RANK];
    size_t na;
    bool all;
    bool as_input = opset >= merge_axes_input_since(op_of(n));
    bool keep = graph_attr_int(n, "keepdims", 1) != 0;
    if (as_input && !graph_node_input(n, 1) && graph_attr_int(n, "noop_with_empty_axes", 0))
        keep = all = true, na = 0;
    else if (merge_reduced_axes(g, n, opset, (int32_t)in->rank, ax, &na, &all) ||
             na > in->rank || !normalize(ax, na, in->rank)) {
        *why = "the axes of the reduction after it are not constant (or out of range)";
        return false;
    }
    if (keep) {
        for (size_t i = 0; i < in->rank; i++) m->q[i] = in->q[i];
        m->rank = in->rank;
        for (size_t i = 0; !all && i < na; i++) m->vals[i] = in->q[ax[i]];
        m->n_vals = all ? 0 : na;
    } else {
        drop_axes(in, ax, na, m);
    }
    if (!all) {
        merge_sort_axes(m->vals, m->n_vals);
        m->set = SET_AXES;
    }
    ts_dims_of(g, n->output[0], m);
    return true;
}

/* Gather(y, indices, axis a) is Gather(x, indices, axis p[a]) with y's other
** axes in their order: indices of rank 1 keep the axis where it was, a scalar
** drops it. Higher ranks would insert axes; they are left. */
static bool through_gather(graph *g, const Onnx__NodeProto *n, const moved *in, moved *m,
                           const char **why) {
    const graph_type *it = rw_type(g, graph_node_input(n, 1));
    int64_t a = graph_attr_int(n, "axis", 0);
    if (a < 0) a += (int64_t)in->rank;
    if (!it || it->rank < 0 || it->rank > 1 || a < 0 || a >= (int64_t)in->rank) {
        *why = "the Gather after it has indices of rank 2 or more (or unknown), or an axis out "
               "of range";
        return false;
    }
    int64_t pa = in->q[a];
    size_t j = 0;
    for (size_t i = 0; i < in->rank; i++) {
        if (it->rank == 1) m->q[j++] = in->q[i];
        else if ((int64_t)i != a) m->q[j++] = in->q[i] - (in->q[i] > pa);
    }
    m->rank = j;
    m->axis = pa;
    m->set = SET_AXIS;
    ts_dims_of(g, n->output[0], m);
    return true;
}

/*
** Reshape(y) that only splits y's axes: y's axis i becomes the run of output
** dims whose product it is (dims of 1 may join any run, and an axis of 1 may
** vanish). Then x's axis p[i] splits into the same run, and the permutation
** moves whole runs. Both shapes must be known as numbers: the new target is
** written out in them.
*/
static bool through_reshape(graph *g, const Onnx__NodeProto *n, int64_t opset, const moved *in,
                            moved *m, const char **why) {
    const graph_type *t = rw_type(g, n->output[0]);
    if (opset < 5 || !graph_node_input(n, 1)) return false;
    if (!in->dims_known || !t || t->rank < 1 || t->rank > TS_MAX_PERM || in->rank < 1) {
        *why = "the Reshape after it has shapes not known as numbers";
        return false;
    }
    size_t s = (size_t)t->rank, start[TS_MAX_PERM], len[TS_MAX_PERM], j = 0;
    int64_t o[TS_MAX_PERM];
    for (size_t k = 0; k < s; k++) {
        dim d = dim_at(t, (int32_t)k);
        if (!dim_is_num(d) || d.n <= 0) {
            *why = "the Reshape after it has shapes not known as numbers";
            return false;
        }
        o[k] = d.n;
    }
    bool split = true;
    for (size_t i = 0; split && i < in->rank; i++) {
        int64_t prod = 1;
        start[i] = j;
        while (j < s && prod < in->dims[i]) prod *= o[j++];
        split = prod == in->dims[i];
        len[i] = j - start[i];
    }
    while (split && j < s && o[j] == 1) j++, len[in->rank - 1]++;
    if (!split || j != s) {
        *why = "the Reshape after it merges axes (or splits them across others), which the "
               "permutation does not move together";
        return false;
    }
    /* x's axis k is y's axis inv[k]: its run goes at offset off[k] of the new target */
    int64_t inv[TS_MAX_PERM], off[TS_MAX_PERM];
    for (size_t i = 0; i < in->rank; i++) inv[in->q[i]] = (int64_t)i;
    size_t pos = 0;
    for (size_t k = 0; k < in->rank; k++) {
        size_t i = (size_t)inv[k];
        off[k] = (int64_t)pos;
        for (size_t u = 0; u < len[i]; u++) m->vals[pos++] = o[start[i] + u];
    }
    for (size_t i = 0; i < in->rank; i++)
        for (size_t u = 0; u < len[i]; u++) m->q[start[i] + u] = off[in->q[i]] + (int64_t)u;
    m->rank = s;
    m->n_vals = s;
    m->set = SET_SHAPE;
    for (size_t k = 0; k < s; k++) m->dims[k] = o[k];
    m->dims_known = true;
    return true;
}

/*
** How node r, reading y (in: Transpose(x, in->q), y's dims in in->dims) reads
** x instead: *m gets the permutation that then gives r's output, the dims
** that output had, and what r takes on x instead (axes, a target, an axis).
** False, with why (NULL for ops it never moves past, and binary ops beside a
** computed operand), when it cannot.
*/
bool ts_through(pass_ctx *pc, graph *g, int32_t r, const char *y, const moved *in,
                    moved *m, const char **why) {
    const Onnx__NodeProto *n = graph_node(g, r);
    op_id op = op_of(n);
    const int64_t *p = in->q;
    size_t rank = in->rank;
    *why = NULL;
    m->set = SET_NONE;
    m->n_vals = 0;
    m->dims_known = false;
    int slot = ts_slot_of(n, y);
    if (!ts_movable(op) || slot < 0 || n->n_output != 1 || graph_node_subgraphs(g, r)) return false;
    int64_t opset = graph_opset(pc->model, "");
    if (op_table[op].kind == OPK_BINARY) {
        /* op(y, c) is Transpose(op(x, c), p) when c is one value broadcast
        ** alike over every axis; a constant of other values would need a
        ** transposed copy, and the bytes of both while another node reads it */
        graph_const c;
        const char *other = n->n_input == 2 && slot < 2 ? graph_node_input(n, 1 - (size_t)slot)
                                                        : NULL;
        if (!other || op_table[op].bcast != BC_MULTI || opset < op_table[op].bcast_since ||
            !graph_const_find(g, other, &c))
            return false;
        int64_t numel = 1;
        for (size_t i = 0; i < c.tensor->n_dims; i++) numel *= c.tensor->dims[i];
        if (numel != 1 || c.tensor->n_dims > rank) {
            *why = "the elementwise op after it reads a constant of more than one value "
                   "(or of a higher rank): it would need a transposed copy";
            return false;
        }
    } else if (slot != 0) {
        return false;
    }
    if (op_table[op].kind == OPK_UNARY || op_table[op].kind == OPK_BINARY) {
        for (size_t i = 0; i < rank; i++) m->q[i] = p[i];
        m->rank = rank;
        ts_dims_of(g, n->output[0], m);
        return true;
    }
    if (op == OP_Gather) return through_gather(g, n, in, m, why);
    if (merge_reduces(op)) return through_reduce(g, n, opset, in, m, why);
    if (op == OP_Reshape) return through_reshape(g, n, opset, in, m, why);
    int64_t ax[TS_MAX_PERM];
    size_t na;
    bool present;
    if (op == OP_Unsqueeze) {
        if (!axes_of(g, n, opset, merge_axes_input_since(op), 1, ax, &na, &present) || !present) {
            *why = "the axes of the Unsqueeze after it are not constant";
            return false;
        }
        size_t out = rank + na;
        if (out > TS_MAX_PERM || !normalize(ax, na, out)) {
            *why = "the axes of the Unsqueeze after it are out of range";
            return false;
        }
        bool inserted[TS_MAX_PERM] = {false};
        for (size_t i = 0; i < na; i++) inserted[ax[i]] = true;
        /* x's axes land on the positions not inserted, in order */
        int64_t kept[TS_MAX_PERM];
        size_t nk = 0;
        for (size_t j = 0; j < out; j++)
            if (!inserted[j]) kept[nk++] = (int64_t)j;
        for (size_t j = 0, i = 0; j < out; j++)
            m->q[j] = inserted[j] ? (int64_t)j : kept[p[i++]];
        m->rank = out;
        ts_dims_of(g, n->output[0], m);
        return true;
    }
    if (op == OP_Squeeze) {
        if (!axes_of(g, n, opset, merge_axes_input_since(op), 1, ax, &na, &present) || !present) {
            *why = "the Squeeze after it has no constant axes (without them it takes the "
                   "dims that are 1 at run time)";
            return false;
        }
        if (!normalize(ax, na, rank) || na > rank) {
            *why = "the axes of the Squeeze after it are out of range";
            return false;
        }
        drop_axes(in, ax, na, m);
        m->set = SET_AXES;
        ts_dims_of(g, n->output[0], m);
        return true;
    }
    /* Slice: starts, ends and steps go with their axes */
    if (!axes_of(g, n, opset, merge_axes_input_since(op), 3, ax, &na, &present)) {
        *why = "the axes of the Slice after it are computed at run time";
        return false;
    }
    if (!present) {
        /* every axis from 0, as many as starts has entries */
        const Onnx__AttributeProto *a = opset < 10 ? graph_attr(n, "starts") : NULL;
        const graph_type *t = opset >= 10 ? rw_type(g, graph_node_input(n, 1)) : NULL;
        if (a) {
            na = a->n_ints;
        } else if (t && t->rank == 1 && dim_is_num(dim_at(t, 0))) {
            na = (size_t)dim_at(t, 0).n;
        } else {
            *why = "the Slice after it has no axes and starts of unknown length";
            return false;
        }
        if (na > rank) {
            *why = "the Slice after it has more starts than axes";
            return false;
        }
        for (size_t i = 0; i < na; i++) ax[i] = (int64_t)i;
    }
    if (!normalize(ax, na, rank)) {
        *why = "the axes of the Slice after it are out of range";
        return false;
    }
    for (size_t i = 0; i < na; i++) m->vals[i] = p[ax[i]];
    for (size_t i = 0; i < rank; i++) m->q[i] = p[i];
    m->rank = rank;
    m->n_vals = na;
    m->set = SET_AXES;
    ts_dims_of(g, n->output[0], m);
    return true;
}


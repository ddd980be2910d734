/*
** Phases A and B of a fold sweep: which values may become constant (or partial
** shapes), and which candidate nodes are in the fold scope.
*/
#include <stdlib.h>

#include "graph/const.h"
#include "passes/fold/fold_impl.h"

/* Ops whose value differs from run to run (op_random), and ops that make
** sequences and optionals (an initializer holds a tensor only): never folded. */
static const op_id never_fold[] = {
    OP_Optional, OP_SequenceConstruct, OP_SequenceEmpty, OP_SequenceErase, OP_SequenceInsert,
    OP_SplitToSequence,
};

static bool never_folds(op_id op) {
    for (size_t i = 0; i < countof(never_fold); i++)
        if (op == never_fold[i]) return true;
    return op_random(op);
}

static uint8_t input_state(fold_graph *f, int32_t node, size_t slot) {
    if (!graph_node_input(graph_node(f->g, node), slot)) return VS_CONST; /* absent optional input */
    int32_t i = fd_vin(f, node, slot);
    if (i < 0) return VS_NONE;
    if (f->v[i].state) return f->v[i].state;
    graph *hg;
    graph_value *hv = graph_value_home(f->g, &f->g->values[i], &hg);
    if (hg != f->g && graph_value_const(hg, hv)) return VS_CONST;
    return VS_NONE;
}

/* Whether node idx's single output is known to shape inference entry by entry,
** with a named dim among them: then it is not a constant. */
static bool symbolic_output(fold_graph *f, int32_t idx) {
    if (graph_node(f->g, idx)->n_output != 1) return false;
    const graph_value *v = graph_node_out(f->g, idx, 0);
    return v && v->shape_value && !shape_value_static(v->shape_value);
}

/* A partial shape is worth looking at only for a reader that may pick static
** entries out of it, directly or down a chain of readers that only move
** entries. Where shape inference knows a node's output with named dims and no
** reader could end with numbers only, nothing down the chain can fold.
** Exporters emit such a chain for every dynamic batch (Shape -> Gather ->
** Unsqueeze -> Concat -> Tile): leaving them out keeps the sweep from visiting
** four nodes per batch repeat. Readers come before producers in reverse order,
** so one sweep decides every node. A reader inside a subgraph never sees this
** graph's partial shapes, so it needs none. */
void fd_phase_sym_only(fold_graph *f) {
    graph *g = f->g;
    for (uint32_t k = f->count; k-- > 0;) {
        int32_t idx = f->order[k];
        if (!symbolic_output(f, idx)) continue;
        const graph_value *v = graph_node_out(g, idx, 0);
        bool needed = false;
        for (uint32_t u = 0; u < v->n_uses && !needed; u++) {
            int32_t r = v->uses[u].node, i = v->uses[u].input;
            if (r < 0 || i < 0 || (uint32_t)r >= f->nn || !fd_partial_ok(f->node[r].op, (size_t)i))
                continue;
            needed = !f->node[r].sym_only;
        }
        f->node[idx].sym_only = !needed;
    }
}

void fd_phase_candidates(fold_graph *f) {
    graph *g = f->g;
    for (uint32_t i = 0; i < f->nv; i++) {
        graph_value *v = &g->values[i];
        if (v->outer < 0 && v->initializer >= 0 && graph_value_const(g, v))
            f->v[i].state = VS_CONST;
    }
    for (uint32_t k = 0; k < f->count; k++) {
        int32_t idx = f->order[k];
        const Onnx__NodeProto *n = graph_node(g, idx);
        if (!n->op_type || !graph_domain_is_default(n->domain) || n->n_output == 0) continue;
        op_id op = f->node[idx].op;
        if (graph_node_subgraphs(g, idx) || never_folds(op)) continue;
        uint8_t out = VS_NONE;
        if (op == OP_Constant) {
            out = VS_CONST;
        } else if (op == OP_Shape || op == OP_Size) {
            const graph_type *t = fd_type_in(f, idx, 0);
            if (t && t->rank >= 0) {
                bool shape = op == OP_Shape;
                if (fd_reads_static_dims(f, idx, op, t)) out = VS_CONST;
                else if (shape && !f->node[idx].sym_only) out = VS_PARTIAL;
            }
        } else if (n->n_input > 0 && eval_supports_op(op, f->opset)) {
            /* A partial shape passes through ops that only move entries; Gather
            ** and Slice may pick static entries only (optimistic: phase C knows). */
            bool pick = op == OP_Gather || op == OP_Slice;
            bool any_partial = false;
            out = VS_CONST;
            for (size_t i = 0; i < n->n_input && out; i++) {
                uint8_t s = input_state(f, idx, i);
                if (s == VS_PARTIAL && fd_partial_ok(op, i)) any_partial = true;
                else if (s != VS_CONST) out = VS_NONE;
            }
            if (out && any_partial && !pick) out = VS_PARTIAL;
            if (any_partial && f->node[idx].sym_only) out = VS_NONE;
        }
        if (out == VS_NONE && n->n_input > 0 && fd_known_by_inference(f, idx)) out = VS_CONST;
        if (out == VS_NONE) continue;
        f->node[idx].maybe = true;
        for (size_t o = 0; o < n->n_output; o++) {
            int32_t vi = fd_vout(f, idx, o);
            if (vi >= 0) f->v[vi].state = out;
        }
    }
}

/* ---------------------------------------------------------------- phase B */

static bool has_tile(graph *g) {
    for (uint32_t i = 0; i < graph_n_nodes(g); i++) {
        if (graph_node_removed(g, (int32_t)i)) continue;
        if (graph_node_is(graph_node(g, (int32_t)i), "Tile")) return true;
        for (graph *s = graph_node_subgraphs(g, (int32_t)i); s; s = s->next_sibling)
            if (has_tile(s)) return true;
    }
    return false;
}

static void scope_reach(fold_graph *f, const graph_value *v, int32_t *stack, uint32_t *top) {
    if (!v || v->outer >= 0 || v->producer < 0) return;
    int32_t p = v->producer;
    if ((uint32_t)p >= f->nn || !f->node[p].maybe || f->node[p].scope) return;
    f->node[p].scope = true;
    stack[(*top)++] = p;
}

int fd_phase_scope(fold_graph *f) {
    graph *g = f->g;
    if (f->pc->opt->fold_scope_all) {
        /* Tiles too: their rewrites need no constant input */
        for (uint32_t i = 0; i < f->nn; i++)
            f->node[i].scope = f->node[i].maybe || f->node[i].op == OP_Tile;
        return TILEOPT_OK;
    }
    int32_t *stack = malloc((f->nn ? f->nn : 1) * sizeof *stack);
    if (!stack) return err_set(f->pc->err, TILEOPT_NOMEM, "fold: out of memory");
    uint32_t top = 0;
    for (uint32_t k = 0; k < f->count; k++) {
        int32_t idx = f->order[k];
        bool root = f->node[idx].op == OP_Tile;
        /* a node whose subgraphs hold a Tile: what they read from here counts */
        for (graph *s = graph_node_subgraphs(g, idx); s && !root; s = s->next_sibling)
            root = has_tile(s);
        if (root) {
            f->node[idx].scope = true;
            stack[top++] = idx;
        }
    }
    /* While some Tile's repeats are unknown, what decides another op's output
    ** shape is in scope too when that shape is unknown: Pad's pads, Reshape's
    ** shape, Resize's sizes. Folded, they let shape inference follow shapes
    ** through the graph to the Shape nodes that compute the repeats. */
    for (uint32_t k = 0; f->tiles_open && k < f->count; k++) {
        int32_t idx = f->order[k];
        const Onnx__NodeProto *n = graph_node(g, idx);
        op_id op = f->node[idx].op;
        if (op == OP_NONE || !op_table[op].shape_in || op == OP_Tile || n->n_output < 1)
            continue;
        const graph_type *t = fd_type_out(f, idx, 0);
        if (t && graph_type_static(t)) continue;
        for (size_t i = 0; i < n->n_input && i < 32; i++)
            if (op_table[op].shape_in & OP_IN(i))
                scope_reach(f, graph_node_in(g, idx, i), stack, &top);
    }
    /* Each node is pushed once (when its scope flag is set): linear. */
    while (top) {
        int32_t idx = stack[--top];
        const Onnx__NodeProto *n = graph_node(g, idx);
        for (size_t i = 0; i < n->n_input; i++)
            scope_reach(f, graph_node_in(g, idx, i), stack, &top);
        for (graph *s = graph_node_subgraphs(g, idx); s; s = s->next_sibling)
            for (uint32_t i = 0; i < s->n_values; i++)
                if (s->values[i].outer >= 0 && s->values[i].outer_graph == g)
                    scope_reach(f, &g->values[s->values[i].outer], stack, &top);
    }
    free(stack);
    return TILEOPT_OK;
}

/*
** fold: constant-fold Tile and the small shape subgraphs that feed it.
**
** Per graph, in four linear sweeps over one topological order (the order is the
** worklist: a node is looked at once, after everything it reads):
**   A. which values may become constant (initializers, Constant outputs, what
**      constant inputs produce, Shape/Size of known shapes; a Shape with some
**      unknown dims is "partial": Gather/Slice may still pick static dims of it,
**      unless shape inference names the dims and no reader could pick them);
**   B. the scope: every candidate node, or (--fold-scope tile) the Tile nodes and
**      the candidates that reach a Tile's inputs through candidate chains;
**   C. fold the scope under the size policy: decide whether a node may fold,
**      get its outputs (the evaluator; shape inference for what it knows), and
**      record the result; apply the Tile rewrites that need no values (repeats
**      all 1, Tile of Tile, repeats made an initializer);
**   D. (during C) when the last reader of a folded value has been looked at,
**      make it an initializer if something still reads it, and drop it; the
**      folded nodes go at the end.
** A partial value is never a tensor: what is known of it entry by entry is
** shape inference's (graph_value.shape_value), so a node that picks static
** entries out of one folds to what inference knows of its output.
** Subgraphs go next (they see the outer scope's new initializers), and one
** graph_commit at the end sweeps dead nodes, unused initializers and stale
** value_info everywhere.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/const.h"
#include "shape/dim.h"
#include "shape/infer.h"
#include "passes/passes.h"

/* Outputs up to this size never count as growth (--fold-max-growth): a Shape
** replaces no constant bytes at all, yet folding it is what makes graphs static. */
#define FOLD_GROWTH_FLOOR 4096

/* Phase A's verdict on a value: it may become a constant, or a partial shape. */
enum { VS_NONE = 0, VS_CONST = 1, VS_PARTIAL = 2 };
/* A node whose outputs are over the size budget but whose readers may all fold
** is evaluated anyway and kept (TR_KEPT); when every reader folded it goes too
** (TR_GONE): the big intermediate of a constant chain is never stored. */
enum { TR_NONE = 0, TR_KEPT = 1, TR_GONE = 2 };

/* Ops whose value differs from run to run, and ops that make sequences and
** optionals (an initializer holds a tensor only): never folded. */
static const op_id never_fold[] = {
    OP_RandomNormal, OP_RandomNormalLike, OP_RandomUniform, OP_RandomUniformLike,
    OP_Multinomial, OP_Bernoulli,
    OP_Optional, OP_SequenceConstruct, OP_SequenceEmpty, OP_SequenceErase, OP_SequenceInsert,
    OP_SplitToSequence,
};

/* What the sweep knows of a value. The bookkeeping of readers (remaining,
** needed, fold_out) is for the values the sweep started with (nv0). */
typedef struct fold_value {
    tensor *val;             /* its constant, once read or computed */
    uint8_t state;           /* phase A's verdict (VS_*) */
    bool partial;            /* a shape known in part (by shape inference), no tensor */
    bool needed;             /* a reader did not fold, or a subgraph reads it */
    bool fold_out;           /* output of a folded node */
    int32_t remaining;       /* input slots still to be looked at */
} fold_value;

typedef struct fold_node {
    op_id op;                /* looked up once (OP_NONE outside the table) */
    bool sym_only;           /* inference knows the output with named dims and no
                             ** reader needs it as a partial shape */
    bool maybe;              /* may fold */
    bool scope;              /* in the fold scope */
    bool folded;
    uint8_t transient;       /* evaluated over the size budget for readers that may
                             ** fold (TR_*) */
} fold_node;

typedef struct fold_graph {
    pass_ctx *pc;
    graph *g;
    int64_t opset;
    uint32_t nv, nn;         /* values (grows with the graph's) and nodes of the sweep */
    uint32_t nv0;            /* values when the sweep started */
    fold_value *v;
    fold_node *node;
    bool tiles_open;         /* the model holds a Tile whose repeats are not known yet */
    int32_t *order;
    uint32_t count;
} fold_graph;

/* ---------------------------------------------------------------- helpers */

/* Index of a value; the table grows with the graph's values (the rewrites add
** initializers that later nodes read). -1: none, or out of memory. */
static int32_t vslot(fold_graph *f, const graph_value *v) {
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
static int32_t vin(fold_graph *f, int32_t node, size_t slot) {
    return vslot(f, graph_node_in(f->g, node, slot));
}

static int32_t vout(fold_graph *f, int32_t node, size_t slot) {
    return vslot(f, graph_node_out(f->g, node, slot));
}

static bool never_folds(op_id op) {
    for (size_t i = 0; i < countof(never_fold); i++)
        if (op == never_fold[i]) return true;
    return false;
}

/* The op of node idx: the sweep's table for the nodes it started with. */
static op_id op_at(const fold_graph *f, int32_t idx) {
    return (uint32_t)idx < f->nn ? f->node[idx].op : op_of(graph_node(f->g, idx));
}

/* The constant behind value i, or NULL; *partial tells a partial shape. */
static void get_const_at(fold_graph *f, int32_t i, tensor **out, bool *partial) {
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
                               &f->pc->opt->eval_lim, &t, &e);
    } else {
        tensor *outs[1] = {NULL};
        const Onnx__NodeProto *cn = graph_node(hg, hv->producer);
        if (cn->n_output != 1) return;
        rc = eval_node(hg, hv->producer, NULL, 0, outs, 1, &f->pc->opt->eval_lim, NULL, &e);
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

static uint8_t input_state(fold_graph *f, int32_t node, size_t slot) {
    if (!graph_node_input(graph_node(f->g, node), slot)) return VS_CONST; /* absent optional input */
    int32_t i = vin(f, node, slot);
    if (i < 0) return VS_NONE;
    if (f->v[i].state) return f->v[i].state;
    graph *hg;
    graph_value *hv = graph_value_home(f->g, &f->g->values[i], &hg);
    if (hg != f->g && graph_value_const(hg, hv)) return VS_CONST;
    return VS_NONE;
}

static const graph_type *type_of_value(fold_graph *f, graph_value *v) {
    return v ? &graph_value_home(f->g, v, NULL)->type : NULL;
}

/* The type of node's input (or output) slot; NULL when absent. */
static const graph_type *type_in(fold_graph *f, int32_t node, size_t slot) {
    return type_of_value(f, graph_node_in(f->g, node, slot));
}

static const graph_type *type_out(fold_graph *f, int32_t node, size_t slot) {
    return type_of_value(f, graph_node_out(f->g, node, slot));
}

/* Shape's [start, end) window (attributes from opset 15 on), clamped. */
static void shape_window(const Onnx__NodeProto *n, int64_t opset, int32_t rank, int64_t *s,
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
static bool reads_static_dims(fold_graph *f, int32_t idx, op_id op, const graph_type *t) {
    int64_t s = 0, e = t->rank;
    if (op == OP_Shape) shape_window(graph_node(f->g, idx), f->opset, t->rank, &s, &e);
    return dims_known(t, s, e);
}

/* ---------------------------------------------------------------- phase A */

/* The single output of n when shape inference knows it as numbers although its
** inputs are not constant: named dims that cancel (Div(Mul(N, 4), N) is 4, the
** -1 of a Reshape of [N, 16, 64] to [N, -1] is 1024). */
static const shape_value *known_by_inference(fold_graph *f, int32_t idx) {
    const Onnx__NodeProto *n = graph_node(f->g, idx);
    if (n->n_output != 1) return NULL;
    graph_value *v = graph_node_out(f->g, idx, 0);
    const shape_value *sv = v ? v->shape_value : NULL;
    if (!sv || !shape_value_static(sv) || (v->type.elem != DT_INT64 && v->type.elem != DT_INT32))
        return NULL;
    return sv;
}

/* That output as a tensor. */
static int inferred_tensor(fold_graph *f, int32_t idx, tensor **out) {
    graph_value *v = graph_node_out(f->g, idx, 0);
    const shape_value *sv = v->shape_value;
    int64_t len = sv->n;
    int rc = tensor_new(v->type.elem, &len, sv->rank, &f->pc->opt->eval_lim, out, f->pc->err);
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
static bool partial_ok(op_id op, size_t i) {
    if (op == OP_Concat) return true;
    if (i != 0) return false;
    return op == OP_Gather || op == OP_Slice || op == OP_Unsqueeze || op == OP_Squeeze ||
           op == OP_Identity;
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
static void phase_sym_only(fold_graph *f) {
    graph *g = f->g;
    for (uint32_t k = f->count; k-- > 0;) {
        int32_t idx = f->order[k];
        if (!symbolic_output(f, idx)) continue;
        const graph_value *v = graph_node_out(g, idx, 0);
        bool needed = false;
        for (uint32_t u = 0; u < v->n_uses && !needed; u++) {
            int32_t r = v->uses[u].node, i = v->uses[u].input;
            if (r < 0 || i < 0 || (uint32_t)r >= f->nn || !partial_ok(f->node[r].op, (size_t)i))
                continue;
            needed = !f->node[r].sym_only;
        }
        f->node[idx].sym_only = !needed;
    }
}

static void phase_candidates(fold_graph *f) {
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
            const graph_type *t = type_in(f, idx, 0);
            if (t && t->rank >= 0) {
                bool shape = op == OP_Shape;
                if (reads_static_dims(f, idx, op, t)) out = VS_CONST;
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
                if (s == VS_PARTIAL && partial_ok(op, i)) any_partial = true;
                else if (s != VS_CONST) out = VS_NONE;
            }
            if (out && any_partial && !pick) out = VS_PARTIAL;
            if (any_partial && f->node[idx].sym_only) out = VS_NONE;
        }
        if (out == VS_NONE && n->n_input > 0 && known_by_inference(f, idx)) out = VS_CONST;
        if (out == VS_NONE) continue;
        f->node[idx].maybe = true;
        for (size_t o = 0; o < n->n_output; o++) {
            int32_t vi = vout(f, idx, o);
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

static int phase_scope(fold_graph *f) {
    graph *g = f->g;
    if (f->pc->opt->fold_scope_all) {
        for (uint32_t i = 0; i < f->nn; i++) f->node[i].scope = f->node[i].maybe;
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
        const graph_type *t = type_out(f, idx, 0);
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

/* ---------------------------------------------------------------- phase C */

static void add_shape(cJSON *a, const char *key, const tensor *t) {
    cJSON_AddItemToObject(a, key, pass_json_ints(t->dims, (size_t)t->rank));
}

/* Shape of static dims from the inferred type. */
static int shape_tensor(fold_graph *f, int32_t idx, tensor **out) {
    const Onnx__NodeProto *n = graph_node(f->g, idx);
    const graph_type *t = type_in(f, idx, 0);
    *out = NULL;
    if (!t || t->rank < 0) return TILEOPT_OK;
    int64_t s, e;
    shape_window(n, f->opset, t->rank, &s, &e);
    int64_t len = e - s;
    int rc = tensor_new(DT_INT64, &len, 1, &f->pc->opt->eval_lim, out, f->pc->err);
    if (rc) return rc;
    if (len) memcpy((*out)->data, t->dims + s, (size_t)len * sizeof *t->dims);
    return TILEOPT_OK;
}

static int size_value(fold_graph *f, int32_t idx, tensor **out) {
    const graph_type *t = type_in(f, idx, 0);
    uint64_t numel;
    *out = NULL;
    if (!t || !graph_type_numel(t, &numel) || numel > INT64_MAX) return TILEOPT_OK;
    int rc = tensor_new(DT_INT64, NULL, 0, &f->pc->opt->eval_lim, out, f->pc->err);
    if (rc) return rc;
    int64_t v = (int64_t)numel;
    memcpy((*out)->data, &v, sizeof v);
    return TILEOPT_OK;
}

/* Bytes a partial shape would take as a tensor, by its inferred type. */
static uint64_t partial_bytes(fold_graph *f, int32_t vi) {
    const graph_type *t = type_of_value(f, &f->g->values[vi]);
    const dtype_info *di = dtype_get(t->elem);
    uint64_t numel;
    return di && graph_type_numel(t, &numel) ? numel * di->size : 0;
}

/* The inferred byte size of output slot o of node idx (0 when unknown); false
** when a static shape's byte size does not fit in 64 bits, which no machine
** could hold. */
static bool predicted_bytes(fold_graph *f, int32_t idx, size_t o, uint64_t *bytes) {
    const graph_type *t = type_out(f, idx, o);
    uint64_t numel;
    const dtype_info *di = t ? dtype_get(t->elem) : NULL;
    *bytes = 0;
    if (!di || !graph_type_static(t)) return true;
    if (!graph_type_numel(t, &numel) || numel > UINT64_MAX / di->size) return false;
    *bytes = numel * di->size;
    return true;
}

/* The node stays: its outputs take (or, predicted, would take) `bytes`, which
** less the `freed` bytes of the constants that would go with it is more than
** --fold-limit. */
static void skip_over_limit(pass_ctx *pc, graph *g, int32_t idx, const char *verb,
                            uint64_t in_bytes, uint64_t bytes, uint64_t freed) {
    cJSON *a = pass_skip(pc, g, idx, "outputs %s %" PRIu64 " bytes and free %" PRIu64
                         ": %" PRIu64 " more, over --fold-limit %" PRIu64, verb, bytes, freed,
                         bytes - freed, pc->opt->fold_limit);
    if (!a) return;
    cJSON_AddNumberToObject(a, "bytes_before", (double)in_bytes);
    cJSON_AddNumberToObject(a, "bytes_after", (double)bytes);
    cJSON_AddNumberToObject(a, "bytes_freed", (double)freed);
    cJSON_AddStringToObject(a, "rule", "fold-limit");
}

/* Whether folding adds more than --fold-limit bytes: the outputs against the
** constants that go away with the node (a Transpose of a weight adds none). */
static bool over_budget(const pass_options *opt, uint64_t bytes, uint64_t freed) {
    return bytes > freed && bytes - freed > opt->fold_limit;
}

/* Bytes of the constant inputs that go away when n folds: values of this graph
** (initializers, Constant or folded outputs) that n alone reads, that no graph
** output or subgraph needs. */
static uint64_t freed_bytes(fold_graph *f, int32_t node, tensor *const *in) {
    const Onnx__NodeProto *n = graph_node(f->g, node);
    uint64_t b = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        int32_t vi = in[i] ? vin(f, node, i) : -1;
        if (vi < 0 || (uint32_t)vi >= f->nv0) continue;
        const graph_value *v = &f->g->values[vi];
        int32_t slots = 0;
        bool again = false;
        for (size_t j = 0; j < n->n_input; j++) {
            const char *o = graph_node_input(n, j);
            if (!o || strcmp(o, v->name) != 0) continue;
            slots++;
            again = again || j < i;
        }
        if (again || v->outer >= 0 || v->output >= 0 || f->v[vi].needed ||
            f->v[vi].remaining != slots)
            continue;
        b += tensor_nbytes(in[i]);
    }
    return b;
}

/* Some reader of n's outputs is a node of this sweep that may fold: a chain
** through n may end in a small constant. */
static bool chain_possible(fold_graph *f, int32_t idx) {
    const Onnx__NodeProto *n = graph_node(f->g, idx);
    for (size_t o = 0; o < n->n_output; o++) {
        const graph_value *v = graph_node_out(f->g, idx, o);
        for (uint32_t u = 0; v && u < v->n_uses; u++) {
            int32_t r = v->uses[u].node;
            if (v->uses[u].input >= 0 && r >= 0 && (uint32_t)r < f->nn && f->node[r].scope &&
                f->node[r].maybe)
                return true;
        }
    }
    return false;
}

static void free_outs(tensor **outs, size_t n) {
    for (size_t i = 0; i < n; i++) {
        tensor_free(outs[i]);
        outs[i] = NULL;
    }
}

/*
** A Tile that repeats only axes of size 1, read only by broadcasting ops whose
** other operands already have the tiled size on those axes, is a broadcast the
** consumers do anyway: folding it would store the repeated bytes for nothing
** (the fuse pass drops such a Tile instead).
*/
static bool tile_is_redundant_broadcast(fold_graph *f, int32_t idx, const tensor *x,
                                        const tensor *reps) {
    int64_t rep[TENSOR_MAX_RANK];
    size_t nr;
    if (!reps || reps->elem != DT_INT64 || !tensor_to_i64(reps, rep, TENSOR_MAX_RANK, &nr) ||
        nr != (size_t)x->rank || nr == 0)
        return false;
    bool any = false;
    for (size_t i = 0; i < nr; i++) {
        if (rep[i] == 1) continue;
        if (x->dims[i] != 1) return false;
        any = true;
    }
    graph_value *y = graph_node_out(f->g, idx, 0);
    if (!any || !y || y->output >= 0 || y->n_uses == 0) return false;
    for (uint32_t u = 0; u < y->n_uses; u++) {
        if (y->uses[u].input < 0) return false;
        const Onnx__NodeProto *c = graph_node(f->g, y->uses[u].node);
        if (!op_broadcasts(op_of(c), f->opset)) return false;
        /* some other operand must carry the tiled size on every repeated axis */
        bool covered = false;
        for (size_t k = 0; k < c->n_input && !covered; k++) {
            graph_value *cv = graph_node_in(f->g, y->uses[u].node, k);
            if (!cv || cv == y) continue;
            const graph_type *t = type_of_value(f, cv);
            if (!t || t->rank < (int32_t)nr || !t->dims) continue;
            covered = true;
            for (size_t i = 0; i < nr && covered; i++)
                if (rep[i] != 1 && t->dims[t->rank - (int32_t)nr + (int32_t)i] != rep[i])
                    covered = false;
        }
        if (!covered) return false;
    }
    return true;
}

/*
** Folding node idx takes three steps: decide (are its inputs constant, or
** partial shapes it picks from, or is its output known to shape inference?),
** evaluate (its outputs, within the size policy) and record (the values for
** its readers, and the report). A step that leaves the node says why in the
** report where the reason is worth knowing; errors that are not the node's
** fault (out of memory) come back as a status.
*/
typedef struct fold_try {
    int32_t idx;
    const Onnx__NodeProto *n;
    op_id op;
    size_t n_in, n_out;
    tensor **in, **outs;     /* one block: inputs (NULL: not a constant), outputs, */
    bool *stand_in;          /* and which inputs are stand-ins of partial shapes */
    uint64_t in_bytes, freed;
    const char *rule;
    bool inferred;           /* the output is known to shape inference, not constant */
    bool in_partial;         /* a partial shape where the op moves entries */
    bool partial_out;        /* the output is a partial shape: no tensor */
    bool chain;              /* readers of an over-budget result may fold */
} fold_try;

/* Decide: false when the node cannot fold. */
static bool fold_decide(fold_graph *f, fold_try *t) {
    t->rule = t->op == OP_Constant ? "Constant node -> initializer" : "constant inputs";
    for (size_t i = 0; i < t->n_in; i++) {
        if (!graph_node_input(t->n, i)) continue;
        int32_t vi = vin(f, t->idx, i);
        bool part;
        get_const_at(f, vi, &t->in[i], &part);
        if (part) {
            /* arithmetic on unknown dims: folds only where they cancel */
            if (!partial_ok(t->op, i)) {
                if (!known_by_inference(f, t->idx)) return false;
                t->inferred = true;
            } else {
                t->in_partial = true;
            }
            t->in_bytes += partial_bytes(f, vi);
            continue;
        }
        if (!t->in[i]) {
            /* Shape and Size read only the inferred type of their input */
            if (t->op == OP_Shape || t->op == OP_Size) continue;
            if (!known_by_inference(f, t->idx)) return false; /* a failed upstream fold said why */
            t->inferred = true;
            continue;
        }
        t->in_bytes += tensor_nbytes(t->in[i]);
    }
    t->freed = freed_bytes(f, t->idx, t->in);
    if (t->op == OP_Tile && t->n_in == 2 && t->in[0] &&
        tile_is_redundant_broadcast(f, t->idx, t->in[0], t->in[1])) {
        cJSON *a = pass_skip(f->pc, f->g, t->idx, "a broadcast its readers do anyway: "
                                                  "folding would only store repeated bytes");
        if (a) cJSON_AddStringToObject(a, "rule", "broadcast");
        return false;
    }
    return true;
}

/*
** A node that picks entries out of partial shapes still runs in the evaluator,
** on stand-ins of their size: what it can take depends on the shapes alone (a
** Gather index out of range makes the model invalid), and the values it would
** compute are shape inference's. Stand-ins are zeros, never read as values.
*/
static int stand_ins(fold_graph *f, fold_try *t, const eval_limits *lim, bool *all) {
    *all = true;
    for (size_t i = 0; i < t->n_in && *all; i++) {
        int32_t vi = graph_node_input(t->n, i) ? vin(f, t->idx, i) : -1;
        if (vi < 0 || !f->v[vi].partial) continue;
        const graph_type *ty = type_of_value(f, &f->g->values[vi]);
        /* nothing to check it with: inference alone decides */
        *all = graph_type_static(ty) && dtype_get(ty->elem);
        if (!*all) break;
        int rc = tensor_new(ty->elem, ty->dims, ty->rank, lim, &t->in[i], f->pc->err);
        if (rc) return rc;
        t->stand_in[i] = true;
    }
    return TILEOPT_OK;
}

/* Evaluate with the evaluator, within the size budget: *go false when the node
** stays (a skip says why). */
static int fold_by_evaluator(fold_graph *f, fold_try *t, bool *go) {
    pass_ctx *pc = f->pc;
    graph *g = f->g;
    const pass_options *opt = pc->opt;
    int32_t idx = t->idx;
    *go = false;
    /* refuse before evaluating when the inferred output size says so */
    uint64_t predicted = 0;
    for (size_t o = 0; o < t->n_out; o++) {
        uint64_t b = 0;
        if (t->n->output[o][0] &&
            (!predicted_bytes(f, idx, o, &b) || predicted + b < predicted))
            return err_set(pc->err, TILEOPT_INVALID,
                           "node %s (%s): output '%s' has more bytes than fit in 64 bits",
                           graph_node_id(g, idx), t->n->op_type, t->n->output[o]);
        predicted += b;
    }
    t->chain = chain_possible(f, idx);
    if (over_budget(opt, predicted, t->freed) && !t->chain) {
        skip_over_limit(pc, g, idx, "would take", t->in_bytes, predicted, t->freed);
        return TILEOPT_OK;
    }
    /* no tensor of the evaluation may outgrow what the fold may keep or the
    ** inputs it reads (a ConstantOfShape of an unknown-size output fails
    ** early, not after 4 GiB), unless it is the intermediate of a chain:
    ** then the evaluator's own limit (--max-tensor-bytes) holds */
    eval_limits lim = pass_eval_limits(pc);
    uint64_t base = t->freed > t->in_bytes ? t->freed : t->in_bytes;
    uint64_t keep = opt->fold_limit + base < opt->fold_limit ? UINT64_MAX
                                                              : opt->fold_limit + base;
    if (!t->chain && (!lim.max_tensor_bytes || lim.max_tensor_bytes > keep))
        lim.max_tensor_bytes = keep;
    errbuf e = {0};
    bool check = true;
    int rc = t->in_partial ? stand_ins(f, t, &lim, &check) : TILEOPT_OK;
    if (rc) return rc;
    if (check &&
        eval_node(g, idx, t->in, t->n_in, t->outs, t->n_out, &lim, NULL, &e) != TILEOPT_OK) {
        if (e.code == TILEOPT_NOMEM) return err_set(pc->err, TILEOPT_NOMEM, "%s", e.msg);
        /* Constant inputs a node cannot take make the model invalid (it would
        ** fail the same way in any runtime); limits and gaps are skips. */
        if (e.code == TILEOPT_INVALID)
            return err_set(pc->err, TILEOPT_INVALID, "node %s (%s): %s", graph_node_id(g, idx),
                           graph_node(g, idx)->op_type, e.msg);
        cJSON *a = pass_skip(pc, g, idx, "evaluation failed: %s", e.msg);
        if (a && e.code == TILEOPT_LIMIT) cJSON_AddStringToObject(a, "rule", "fold-limit");
        return TILEOPT_OK;
    }
    *go = true;
    if (!t->in_partial) return TILEOPT_OK;
    /* what shape inference knows of the output is all there is, numbers or not */
    free_outs(t->outs, t->n_out);
    t->partial_out = !known_by_inference(f, idx);
    return t->partial_out ? TILEOPT_OK : inferred_tensor(f, idx, &t->outs[0]);
}

/* Evaluate: the outputs, from shape inference where it knows them. */
static int fold_evaluate(fold_graph *f, fold_try *t, bool *go) {
    *go = true;
    if (t->inferred) {
        t->rule = "known by shape inference";
        return inferred_tensor(f, t->idx, &t->outs[0]);
    }
    if (t->op == OP_Shape) {
        t->rule = "static shape";
        const graph_type *x = type_in(f, t->idx, 0);
        t->partial_out = x && x->rank >= 0 && !reads_static_dims(f, t->idx, t->op, x);
        return t->partial_out ? TILEOPT_OK : shape_tensor(f, t->idx, &t->outs[0]);
    }
    if (t->op == OP_Size) {
        t->rule = "static shape";
        return size_value(f, t->idx, &t->outs[0]);
    }
    if (t->in_partial) t->rule = "static dims of a shape";
    return fold_by_evaluator(f, t, go);
}

/* Record: the outputs become the readers' constants (or partial shapes) and
** the node folds, unless the size policy keeps it. */
static void fold_record(fold_graph *f, fold_try *t, bool *done) {
    pass_ctx *pc = f->pc;
    graph *g = f->g;
    const pass_options *opt = pc->opt;
    int32_t idx = t->idx;
    /* a partial shape counts the bytes it would take as a tensor */
    uint64_t out_bytes = 0;
    for (size_t o = 0; o < t->n_out; o++) {
        int32_t vi = t->partial_out ? vout(f, idx, o) : -1;
        if (vi >= 0) out_bytes += partial_bytes(f, vi);
        if (t->partial_out) continue;
        if (!t->outs[o]) return; /* Shape/Size of an unknown type */
        if (t->outs[o]->kind != EVAL_TENSOR) return; /* Identity of a sequence, say */
        out_bytes += tensor_nbytes(t->outs[o]);
    }
    bool over = over_budget(opt, out_bytes, t->freed);
    if (over && !t->chain) {
        skip_over_limit(pc, g, idx, "take", t->in_bytes, out_bytes, t->freed);
        return;
    }
    if (!over && opt->fold_max_growth > 0 && out_bytes > FOLD_GROWTH_FLOOR &&
        (double)out_bytes > opt->fold_max_growth * (double)t->in_bytes) {
        cJSON *a = pass_skip(pc, g, idx,
                             "output takes %" PRIu64 " bytes, more than %g times the %" PRIu64
                             " bytes of constant inputs (--fold-max-growth)",
                             out_bytes, opt->fold_max_growth, t->in_bytes);
        if (a) {
            cJSON_AddNumberToObject(a, "bytes_before", (double)t->in_bytes);
            cJSON_AddNumberToObject(a, "bytes_after", (double)out_bytes);
            cJSON_AddStringToObject(a, "rule", "fold-max-growth");
        }
        return;
    }
    if (over || t->partial_out) {
        /* readers get the values (a partial shape, to pick static entries
        ** from); the node stays, over the budget unless they all fold */
        for (size_t o = 0; o < t->n_out; o++) {
            int32_t vi = vout(f, idx, o);
            if (vi < 0) continue;
            f->v[vi].val = t->outs[o];
            f->v[vi].partial = t->partial_out;
            f->v[vi].fold_out = false;
            t->outs[o] = NULL;
        }
        if (over) f->node[idx].transient = TR_KEPT;
        return;
    }
    for (size_t o = 0; o < t->n_out; o++) {
        int32_t vi = vout(f, idx, o);
        if (vi < 0) continue;
        f->v[vi].val = t->outs[o];
        f->v[vi].fold_out = true;
        t->outs[o] = NULL;
    }
    f->node[idx].folded = true;
    *done = true;
    cJSON *a = pass_action(pc, g, idx, "folded");
    if (a) {
        cJSON_AddStringToObject(a, "rule", t->rule);
        cJSON_AddNumberToObject(a, "bytes_before", (double)t->in_bytes);
        cJSON_AddNumberToObject(a, "bytes_after", (double)out_bytes);
        int32_t v0 = vout(f, idx, 0);
        if (v0 >= 0 && f->v[v0].val) add_shape(a, "output_shape", f->v[v0].val);
        int64_t rep[TENSOR_MAX_RANK];
        size_t nr;
        if (t->op == OP_Tile && t->n->n_input == 2 && t->in[1] && t->in[1]->elem == DT_INT64 &&
            tensor_to_i64(t->in[1], rep, TENSOR_MAX_RANK, &nr))
            cJSON_AddItemToObject(a, "repeats", pass_json_ints(rep, nr));
    }
}

/* Fold node idx if it can be (*done). */
static int try_fold(fold_graph *f, int32_t idx, bool *done) {
    const Onnx__NodeProto *n = graph_node(f->g, idx);
    fold_try t = {.idx = idx, .n = n, .op = op_at(f, idx), .n_in = n->n_input,
                  .n_out = n->n_output};
    *done = false;
    size_t ptrs = (t.n_in + t.n_out + 1) * sizeof *t.in;
    t.in = calloc(1, ptrs + t.n_in + 1);
    if (!t.in) return err_set(f->pc->err, TILEOPT_NOMEM, "fold: out of memory");
    t.outs = t.in + t.n_in;
    t.stand_in = (bool *)((char *)t.in + ptrs);
    bool go = false;
    int rc = TILEOPT_OK;
    if (fold_decide(f, &t)) rc = fold_evaluate(f, &t, &go);
    if (!rc && go) fold_record(f, &t, done);
    free_outs(t.outs, t.n_out);
    for (size_t i = 0; i < t.n_in; i++)
        if (t.stand_in[i]) tensor_free(t.in[i]);
    free(t.in);
    return rc;
}

/* Repeats of a Tile-6/13 node as int64, when constant. */
static bool tile_repeats(fold_graph *f, int32_t idx, int64_t *rep, size_t *cnt) {
    tensor *t;
    bool part;
    get_const_at(f, vin(f, idx, 1), &t, &part);
    if (!t || part) return false;
    return t->elem == DT_INT64 && tensor_to_i64(t, rep, TENSOR_MAX_RANK, cnt);
}

static int add_int64_initializer(fold_graph *f, const char *hint, const int64_t *v, size_t n,
                                 const char **name) {
    int64_t dims[1] = {(int64_t)n};
    return graph_add_initializer(f->g, hint, DT_INT64, dims, 1, v, n * sizeof *v, name,
                                 f->pc->err);
}

/* Rewrites of a Tile that need no values but its repeats. */
static int tile_rewrite(fold_graph *f, int32_t idx) {
    graph *g = f->g;
    pass_ctx *pc = f->pc;
    Onnx__NodeProto *n = graph_node(g, idx);
    if (n->n_input != 2 || n->n_output != 1 || !graph_node_input(n, 0)) return TILEOPT_OK;
    int64_t rep[TENSOR_MAX_RANK];
    size_t nr;
    /* Constant repeats that break the spec make the model invalid: say so now
    ** rather than leave a Tile that fails at run time. */
    tensor *rt;
    bool part;
    get_const_at(f, vin(f, idx, 1), &rt, &part);
    if (rt && !part) {
        int rc = pass_check_repeats(pc, g, idx, rt, type_in(f, idx, 0));
        if (rc) return rc;
    }
    if (!tile_repeats(f, idx, rep, &nr)) {
        graph_value *rin = graph_node_in(g, idx, 1);
        graph_value *rv = rin ? graph_value_home(g, rin, NULL) : NULL;
        if (rv && rv->shape_value && !shape_value_static(rv->shape_value)) {
            /* say what they are: a named dim decides, fuse may still drop the Tile */
            char text[256];
            dims_print(text, sizeof text, rv->shape_value->e, rv->shape_value->n);
            pass_skip(pc, g, idx, "repeats are known only symbolically: [%s]", text);
        } else {
            pass_skip(pc, g, idx, "repeats are not constant");
        }
        return TILEOPT_OK;
    }
    const char *x = graph_node_input(n, 0);
    const char *y = n->output[0];
    bool ones = true;
    for (size_t i = 0; i < nr; i++)
        if (rep[i] != 1) ones = false;
    const graph_type *xt = type_in(f, idx, 0);
    if (ones && (!xt || xt->rank < 0 || (size_t)xt->rank == nr)) {
        /* Tile with all repeats 1 is the identity (a wrong repeats length would
        ** be an error at run time: keep those). */
        cJSON *a = pass_action(pc, g, idx, "eliminated");
        if (a) {
            cJSON_AddStringToObject(a, "rule", "repeats all 1");
            cJSON_AddItemToObject(a, "repeats", pass_json_ints(rep, nr));
        }
        const char *xs = graph_strdup(g, x), *ys = graph_strdup(g, y);
        if (!xs || !ys) return err_set(pc->err, TILEOPT_NOMEM, "fold: out of memory");
        int rc = graph_replace_uses(g, ys, xs);
        if (rc) return err_set(pc->err, rc, "fold: out of memory rewiring the uses of '%s'", ys);
        graph_remove_node(g, idx);
        if (graph_value_is_output(g, ys)) {
            /* graph outputs keep their names */
            if (!graph_add_node(g, "Identity", NULL, &xs, 1, &ys, 1, NULL))
                return err_set(pc->err, TILEOPT_NOMEM, "fold: out of memory");
        }
        return TILEOPT_OK;
    }
    /* Tile(Tile(x, a), b) -> Tile(x, a*b) when nobody else reads the inner Tile. */
    graph_value *xv = graph_node_in(g, idx, 0);
    int32_t p = xv && xv->outer < 0 ? xv->producer : -1;
    if (p >= 0 && (uint32_t)p < f->nn && !f->node[p].folded && !graph_node_removed(g, p) &&
        xv->n_uses == 1 && xv->output < 0) {
        Onnx__NodeProto *inner = graph_node(g, p);
        int64_t ra[TENSOR_MAX_RANK];
        size_t na;
        if (f->node[p].op == OP_Tile && inner->n_input == 2 && graph_node_input(inner, 0) &&
            tile_repeats(f, p, ra, &na) && na == nr) {
            int64_t prod[TENSOR_MAX_RANK];
            bool ok = true;
            for (size_t i = 0; i < nr; i++)
                if (ra[i] < 0 || rep[i] < 0 || __builtin_mul_overflow(ra[i], rep[i], &prod[i]))
                    ok = false;
            if (!ok) {
                pass_skip(pc, g, idx, "Tile of Tile: repeats are negative or overflow");
                return TILEOPT_OK;
            }
            const char *rname;
            int rc = add_int64_initializer(f, "repeats", prod, nr, &rname);
            if (rc) return rc;
            const char *inner_x = graph_strdup(g, graph_node_input(inner, 0));
            if (!inner_x) return err_set(pc->err, TILEOPT_NOMEM, "fold: out of memory");
            cJSON *a = pass_action(pc, g, idx, "rewritten");
            if (a) {
                cJSON_AddStringToObject(a, "rule", "Tile(Tile(x,a),b) -> Tile(x,a*b)");
                cJSON_AddStringToObject(a, "inner", graph_node_id(g, p));
                cJSON_AddItemToObject(a, "repeats", pass_json_ints(prod, nr));
            }
            graph_remove_node(g, p);
            if (graph_node_set_input(g, idx, 0, inner_x) || graph_node_set_input(g, idx, 1, rname))
                return err_set(pc->err, TILEOPT_NOMEM, "fold: out of memory");
            return TILEOPT_OK;
        }
    }
    /* Constant repeats that are not an initializer become one. Repeats computed
    ** by nodes folded here are materialized by phase D already. */
    const char *rn = graph_node_input(n, 1);
    if (graph_initializer(g, rn)) return TILEOPT_OK;
    graph_value *rv = graph_node_in(g, idx, 1);
    if (rv && rv->outer < 0 && rv->producer >= 0 && (uint32_t)rv->producer < f->nn &&
        f->node[rv->producer].folded)
        return TILEOPT_OK;
    const char *rname;
    int rc = add_int64_initializer(f, "repeats", rep, nr, &rname);
    if (rc) return rc;
    cJSON *a = pass_action(pc, g, idx, "rewritten");
    if (a) {
        cJSON_AddStringToObject(a, "rule", "constant repeats -> initializer");
        cJSON_AddItemToObject(a, "repeats", pass_json_ints(rep, nr));
    }
    if (graph_node_set_input(g, idx, 1, rname))
        return err_set(pc->err, TILEOPT_NOMEM, "fold: out of memory");
    return TILEOPT_OK;
}

/*
** Values are released when their last reader has been looked at (uses counted
** at the start): a folded value that some reader did not fold, a graph output,
** or a value a subgraph reads becomes an initializer then; the rest is dropped.
** That keeps memory to the live frontier instead of every folded value.
*/
/* Results from this size on are kept in the evaluator's buffer, not copied. */
#define OWN_MIN_BYTES ((uint64_t)1 << 20)

static int materialize(fold_graph *f, int32_t vi) {
    graph *g = f->g;
    errbuf *err = f->pc->err;
    const char *old = graph_strdup(g, g->values[vi].name);
    if (!old) return err_set(err, TILEOPT_NOMEM, "fold: out of memory");
    tensor *c;
    eval_limits lim = pass_eval_limits(f->pc);
    int rc = tensor_contiguous(f->v[vi].val, &lim, &c, err);
    int32_t p = g->values[vi].producer;
    if (rc && p >= 0)
        return err_prefix(err, "node %s (%s), output '%s': ", graph_node_id(g, p),
                          graph_node(g, p)->op_type, old);
    if (rc) return err_prefix(err, "value '%s': ", old);
    const char *name;
    /* A big result becomes the initializer's data as it is: copying it into the
    ** model would write every byte again (the slowest part of a big fold). */
    size_t nbytes = (size_t)tensor_nbytes(c);
    void *owner = nbytes >= OWN_MIN_BYTES && c->elem != DT_STRING ? tensor_storage_retain(c)
                                                                  : NULL;
    if (owner)
        rc = graph_add_initializer_owned(g, old, c->elem, c->dims, (size_t)c->rank, c->data,
                                         nbytes, owner, tensor_storage_release, &name, err);
    else
        rc = graph_add_initializer(g, old, c->elem, c->dims, (size_t)c->rank, c->data, nbytes,
                                   &name, err);
    tensor_free(c);
    if (rc) return rc;
    rc = graph_replace_uses(g, old, name);
    if (rc) return err_set(err, rc, "fold: out of memory rewiring the uses of '%s'", old);
    /* graph outputs keep their names: Identity from the new initializer (it
    ** takes over as producer; the folded node goes at the end of the sweep) */
    if (graph_value_is_output(g, old) &&
        !graph_add_node(g, "Identity", NULL, &name, 1, &old, 1, NULL))
        return err_set(err, TILEOPT_NOMEM, "fold: out of memory");
    return TILEOPT_OK;
}

static int release(fold_graph *f, int32_t vi) {
    int rc = TILEOPT_OK;
    if (f->v[vi].val && f->v[vi].fold_out && (f->v[vi].needed || f->g->values[vi].output >= 0))
        rc = materialize(f, vi);
    tensor_free(f->v[vi].val);
    f->v[vi].val = NULL;
    f->v[vi].partial = false;
    return rc;
}

/* Whether every reader of n's outputs folded or went as part of a chain. */
static bool readers_gone(fold_graph *f, int32_t idx) {
    const Onnx__NodeProto *n = graph_node(f->g, idx);
    for (size_t o = 0; o < n->n_output; o++) {
        if (!n->output[o][0]) continue;
        const graph_value *v = graph_node_out(f->g, idx, o);
        if (!v || v->output >= 0) return false;
        for (uint32_t u = 0; u < v->n_uses; u++) {
            int32_t r = v->uses[u].node;
            if (v->uses[u].input < 0 || r < 0 || (uint32_t)r >= f->nn ||
                !(f->node[r].folded || f->node[r].transient == TR_GONE))
                return false;
        }
    }
    return true;
}

/* Chain intermediates, last first (so a chain settles from its end): gone
** when all their readers are, else they stay and say why. */
static void settle_chains(fold_graph *f) {
    for (uint32_t k = f->count; k-- > 0;) {
        int32_t idx = f->order[k];
        if (f->node[idx].transient != TR_KEPT || graph_node_removed(f->g, idx)) continue;
        if (!readers_gone(f, idx)) {
            cJSON *a = pass_skip(f->pc, f->g, idx, "outputs over --fold-limit %" PRIu64
                                 ", and not every reader folded", f->pc->opt->fold_limit);
            if (a) cJSON_AddStringToObject(a, "rule", "fold-limit");
            continue;
        }
        f->node[idx].transient = TR_GONE;
        f->node[idx].folded = true;
        cJSON *a = pass_action(f->pc, f->g, idx, "folded");
        if (a) cJSON_AddStringToObject(a, "rule", "inside a constant chain");
    }
}

static int phase_fold(fold_graph *f) {
    graph *g = f->g;
    int32_t *ins = NULL;
    size_t cap = 0;
    for (uint32_t k = 0; k < f->count; k++) {
        int32_t idx = f->order[k];
        if (graph_node_removed(g, idx)) continue;
        const Onnx__NodeProto *n = graph_node(g, idx);
        /* the readers' bookkeeping uses the inputs as they were before rewrites */
        if (n->n_input > cap) {
            cap = n->n_input * 2;
            int32_t *grown = realloc(ins, cap * sizeof *ins);
            if (!grown) {
                free(ins);
                return err_set(f->pc->err, TILEOPT_NOMEM, "fold: out of memory");
            }
            ins = grown;
        }
        size_t n_in = n->n_input;
        for (size_t i = 0; i < n_in; i++) {
            int32_t vi = vin(f, idx, i);
            ins[i] = vi >= 0 && (uint32_t)vi < f->nv0 ? vi : -1;
        }
        bool done = false;
        int rc = TILEOPT_OK;
        const fold_node *fn = &f->node[idx];
        if (fn->scope && fn->maybe) rc = try_fold(f, idx, &done);
        if (!rc && !done && fn->scope && !fn->transient && fn->op == OP_Tile && f->opset >= 6)
            rc = tile_rewrite(f, idx);
        for (size_t i = 0; !rc && i < n_in; i++) {
            int32_t vi = ins[i];
            if (vi < 0) continue;
            if (!done) f->v[vi].needed = true;
            if (f->v[vi].remaining > 0 && --f->v[vi].remaining == 0) rc = release(f, vi);
        }
        /* folded outputs nobody reads through an input slot: settle them now */
        for (size_t o = 0; !rc && done && o < n->n_output; o++) {
            int32_t vi = vout(f, idx, o);
            if (vi >= 0 && (uint32_t)vi < f->nv0 && f->v[vi].remaining == 0) rc = release(f, vi);
        }
        if (rc) {
            free(ins);
            return rc;
        }
        if ((k & 4095) == 0) pass_progress(f->pc, "fold", k, f->count);
    }
    free(ins);
    if (f->count > 4096) pass_progress(f->pc, "fold", f->count, f->count); /* reaches 100% */
    /* readers that were never looked at (none expected) count as not folded */
    for (uint32_t vi = 0; vi < f->nv0; vi++) {
        if (!f->v[vi].val) continue;
        if (f->v[vi].remaining > 0) f->v[vi].needed = true;
        int rc = release(f, vi);
        if (rc) return rc;
    }
    settle_chains(f);
    /* Last folded first: a shared constant's most recent readers go first, which
    ** keeps removal cheap for an index that looks up uses from the back. */
    for (uint32_t k = f->count; k-- > 0;)
        if (f->node[f->order[k]].folded) graph_remove_node(g, f->order[k]);
    return TILEOPT_OK;
}

/* ----------------------------------------------------------------- driver */

static int fold_one(pass_ctx *pc, graph *g, bool tiles_open) {
    fold_graph f = {.pc = pc, .g = g, .opset = graph_opset(pc->model, ""),
                    .tiles_open = tiles_open};
    f.nv = f.nv0 = g->n_values;
    f.nn = graph_n_nodes(g);
    f.v = calloc(f.nv ? f.nv : 1, sizeof *f.v);
    f.node = calloc(f.nn ? f.nn : 1, sizeof *f.node);
    f.order = malloc((f.nn ? f.nn : 1) * sizeof *f.order);
    int rc = TILEOPT_OK;
    if (!f.v || !f.node || !f.order) rc = err_set(pc->err, TILEOPT_NOMEM, "fold: out of memory");
    for (uint32_t i = 0; !rc && i < f.nn; i++) f.node[i].op = op_of(graph_node(g, (int32_t)i));
    for (uint32_t i = 0; !rc && i < f.nv0; i++) {
        const graph_value *v = &g->values[i];
        for (uint32_t u = 0; u < v->n_uses; u++) {
            if (v->uses[u].input >= 0) f.v[i].remaining++;
            else f.v[i].needed = true; /* read inside a subgraph */
        }
    }
    if (!rc) rc = graph_toposort(g, f.order, &f.count, pc->err);
    if (!rc) {
        phase_sym_only(&f);
        phase_candidates(&f);
        rc = phase_scope(&f);
    }
    if (!rc) rc = phase_fold(&f);
    for (uint32_t i = 0; f.v && i < f.nv; i++) tensor_free(f.v[i].val);
    free(f.v);
    free(f.node);
    free(f.order);
    return rc;
}

/* This graph first, so its subgraphs see the initializers it made. */
static int fold_tree(pass_ctx *pc, graph *g, bool tiles_open) {
    int rc = fold_one(pc, g, tiles_open);
    for (uint32_t i = 0; !rc && i < graph_n_nodes(g); i++) {
        if (graph_node_removed(g, (int32_t)i)) continue;
        for (graph *s = graph_node_subgraphs(g, (int32_t)i); !rc && s; s = s->next_sibling)
            rc = fold_tree(pc, s, tiles_open);
    }
    return rc;
}

/* Is some Tile of g (or of its subgraphs) left with repeats nobody knows? */
static bool tile_open(graph *g) {
    for (uint32_t i = 0; i < graph_n_nodes(g); i++) {
        if (graph_node_removed(g, (int32_t)i)) continue;
        const Onnx__NodeProto *n = graph_node(g, (int32_t)i);
        const char *r = graph_node_is(n, "Tile") ? graph_node_input(n, 1) : NULL;
        graph_const c;
        if (r && !graph_const_find(g, r, &c)) {
            /* numbers shape inference knows are as good as a constant here */
            graph_value *rv = graph_resolve(g, r);
            const shape_value *sv = rv ? rv->shape_value : NULL;
            if (!sv || !shape_value_static(sv)) return true;
        }
        for (graph *s = graph_node_subgraphs(g, (int32_t)i); s; s = s->next_sibling)
            if (tile_open(s)) return true;
    }
    return false;
}

/* Rounds of inference and folding: each round's constants can make shapes
** static that the next round folds further (a Pad whose pads folded gives the
** feature maps static shapes, whose Shape then gives a Tile's repeats). Each
** round is linear; the rounds stop when one folds nothing. */
#define FOLD_MAX_ROUNDS 8

int pass_fold(pass_ctx *pc) {
    graph_model *m = pc->model;
    int rc = TILEOPT_OK;
    for (int round = 0; round < FOLD_MAX_ROUNDS && !rc; round++) {
        size_t mark = pass_log_mark(pc->log);
        bool changed = pc->changed;
        pc->changed = false;
        rc = infer_shapes(m, pc->err);
        if (!rc) rc = fold_tree(pc, m->main, tile_open(m->main));
        if (!rc) rc = graph_commit(m->main, pc->err);
        /* a round that folds nothing is the last; its skips say why what is
        ** left stays (earlier rounds' skips are stale) */
        bool last = rc || !pc->changed || round + 1 == FOLD_MAX_ROUNDS;
        pc->changed |= changed;
        if (last) break;
        pass_log_drop_skips(pc->log, mark);
    }
    return rc;
}

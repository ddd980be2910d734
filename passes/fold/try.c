/*
** Phase C for one node: whether it folds, under the size policy (--fold-limit,
** --fold-max-growth, chains of intermediates), and what the report says.
*/
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "passes/fold/fold_impl.h"

/* Outputs up to this size never count as growth (--fold-max-growth): a Shape
** replaces no constant bytes at all, yet folding it is what makes graphs static. */
#define FOLD_GROWTH_FLOOR 4096

static void add_shape(json_w *a, const char *key, const tensor *t) {
    json_put_ints(a, key, t->dims, (size_t)t->rank);
}

/* Shape of static dims from the inferred type. */
static int shape_tensor(fold_graph *f, int32_t idx, tensor **out) {
    const Onnx__NodeProto *n = graph_node(f->g, idx);
    const graph_type *t = fd_type_in(f, idx, 0);
    *out = NULL;
    if (!t || t->rank < 0) return TILEOPT_OK;
    int64_t s, e;
    fd_shape_window(n, f->opset, t->rank, &s, &e);
    int64_t len = e - s;
    int rc = tensor_new(DT_INT64, &len, 1, &f->pc->eval, out, f->pc->err);
    if (rc) return rc;
    if (len) memcpy((*out)->data, t->dims + s, (size_t)len * sizeof *t->dims);
    return TILEOPT_OK;
}

static int size_value(fold_graph *f, int32_t idx, tensor **out) {
    const graph_type *t = fd_type_in(f, idx, 0);
    uint64_t numel;
    *out = NULL;
    if (!t || !graph_type_numel(t, &numel) || numel > INT64_MAX) return TILEOPT_OK;
    int rc = tensor_new(DT_INT64, NULL, 0, &f->pc->eval, out, f->pc->err);
    if (rc) return rc;
    int64_t v = (int64_t)numel;
    memcpy((*out)->data, &v, sizeof v);
    return TILEOPT_OK;
}

/* Bytes a partial shape would take as a tensor, by its inferred type. */
static uint64_t partial_bytes(fold_graph *f, int32_t vi) {
    const graph_type *t = fd_type_of_value(f, &f->g->values[vi]);
    const dtype_info *di = dtype_get(t->elem);
    uint64_t numel;
    return di && graph_type_numel(t, &numel) ? numel * di->size : 0;
}

/* The inferred byte size of output slot o of node idx (0 when unknown); false
** when a static shape's byte size does not fit in 64 bits, which no machine
** could hold. */
static bool predicted_bytes(fold_graph *f, int32_t idx, size_t o, uint64_t *bytes) {
    const graph_type *t = fd_type_out(f, idx, o);
    uint64_t numel;
    const dtype_info *di = t ? dtype_get(t->elem) : NULL;
    *bytes = 0;
    if (!di || !graph_type_static(t)) return true;
    if (!graph_type_numel(t, &numel) || numel > UINT64_MAX / di->size) return false;
    *bytes = numel * di->size;
    return true;
}

/*
** The size policy: a fold may add at most --fold-limit bytes to the file
** (default 0: never grows it). What it adds is what it writes (its outputs as
** initializers, a graph output's Identity) less what it removes (the node
** itself and the constants nobody else reads). A constant of an enclosing graph
** stays for the other readers there, so a copy folded into each branch of an
** If counts once per branch; a generated weight (ConstantOfShape, Range, a Tile
** of a small constant) writes far more than it removes, and stays generated.
*/
static bool over_budget(const pass_options *opt, uint64_t written, uint64_t freed) {
    return written > freed && written - freed > opt->fold_limit;
}

/* The node stays: it would write `written` bytes and remove `freed`. */
static void skip_over_limit(pass_ctx *pc, graph *g, int32_t idx, const char *verb,
                            uint64_t in_bytes, uint64_t out_bytes, uint64_t written,
                            uint64_t freed) {
    json_w *a = pass_skip(pc, g, idx, "folding %s write %" PRIu64 " bytes and remove %" PRIu64
                         ": the file would grow by %" PRIu64 ", over --fold-limit %" PRIu64
                         "%s", verb, written, freed, written - freed, pc->opt->fold_limit,
                         freed < in_bytes ? " (constants read elsewhere stay)" : "");
    if (!a) return;
    json_put_num(a, "bytes_before", (double)in_bytes);
    json_put_num(a, "bytes_after", (double)out_bytes);
    json_put_num(a, "bytes_written", (double)written);
    json_put_num(a, "bytes_freed", (double)freed);
    json_put_str(a, "rule", "fold-limit");
}

/* Bytes node idx frees when it folds: its own entry, and what the file holds
** of the constant inputs that go with it: values of this graph (initializers,
** Constant or folded outputs) that n alone reads, that no graph output or
** subgraph needs. */
static uint64_t freed_bytes(fold_graph *f, int32_t node, tensor *const *in) {
    const Onnx__NodeProto *n = graph_node(f->g, node);
    uint64_t b = graph_node_bytes(n);
    for (size_t i = 0; i < n->n_input; i++) {
        int32_t vi = in[i] ? fd_vin(f, node, i) : -1;
        if (vi < 0 || (uint32_t)vi >= f->nv0) continue;
        const graph_value *v = &f->g->values[vi];
        /* the value's own uses, not a scan of n's inputs: a Concat of N
        ** constants would otherwise cost N^2 name comparisons */
        int32_t slots = 0;
        bool again = false;
        for (uint32_t u = 0; u < v->n_uses; u++) {
            if (v->uses[u].node != node || v->uses[u].input < 0) continue;
            slots++;
            again = again || (size_t)v->uses[u].input < i;
        }
        if (again || v->outer >= 0 || v->output >= 0 || f->v[vi].needed ||
            f->v[vi].remaining != slots)
            continue;
        b += fd_held_bytes(f, vi);
    }
    return b;
}

/* What making output o of node idx an initializer writes for data of nbytes. */
static uint64_t written_bytes(fold_graph *f, int32_t idx, size_t o, const tensor *t) {
    const char *name = graph_node(f->g, idx)->output[o];
    const graph_value *v = graph_node_out(f->g, idx, o);
    return fd_new_const_bytes(f, name, t->elem, t->dims, (size_t)t->rank, tensor_nbytes(t),
                              v && v->output >= 0);
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
            const graph_type *t = fd_type_of_value(f, cv);
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
        int32_t vi = fd_vin(f, t->idx, i);
        bool part;
        fd_get_const_at(f, vi, &t->in[i], &part);
        if (part) {
            /* arithmetic on unknown dims: folds only where they cancel */
            if (!fd_partial_ok(t->op, i)) {
                if (!fd_known_by_inference(f, t->idx)) return false;
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
            if (!fd_known_by_inference(f, t->idx)) return false; /* a failed upstream fold said why */
            t->inferred = true;
            continue;
        }
        t->in_bytes += tensor_nbytes(t->in[i]);
    }
    t->freed = freed_bytes(f, t->idx, t->in);
    if (t->op == OP_Tile && t->n_in == 2 && t->in[0] &&
        tile_is_redundant_broadcast(f, t->idx, t->in[0], t->in[1])) {
        json_w *a = pass_skip(f->pc, f->g, t->idx, "a broadcast its readers do anyway: "
                                                  "folding would only store repeated bytes");
        if (a) json_put_str(a, "rule", "broadcast");
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
static int stand_ins(fold_graph *f, fold_try *t, const eval_env *env, bool *all) {
    *all = true;
    for (size_t i = 0; i < t->n_in && *all; i++) {
        int32_t vi = graph_node_input(t->n, i) ? fd_vin(f, t->idx, i) : -1;
        if (vi < 0 || !f->v[vi].partial) continue;
        const graph_type *ty = fd_type_of_value(f, &f->g->values[vi]);
        /* nothing to check it with: inference alone decides */
        *all = graph_type_static(ty) && dtype_get(ty->elem);
        if (!*all) break;
        int rc = tensor_new(ty->elem, ty->dims, ty->rank, env, &t->in[i], f->pc->err);
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
    /* the data alone is a lower bound of what the fold would write */
    if (over_budget(opt, predicted, t->freed) && !t->chain) {
        skip_over_limit(pc, g, idx, "would", t->in_bytes, predicted, predicted, t->freed);
        return TILEOPT_OK;
    }
    /* no tensor of the evaluation may outgrow what the fold may keep or the
    ** inputs it reads (a ConstantOfShape of an unknown-size output fails
    ** early, not after 4 GiB), unless it is the intermediate of a chain:
    ** then the evaluator's own limit (--max-tensor-bytes) holds */
    eval_env env = pc->eval;
    uint64_t base = t->freed > t->in_bytes ? t->freed : t->in_bytes;
    uint64_t keep = opt->fold_limit + base < opt->fold_limit ? UINT64_MAX
                                                              : opt->fold_limit + base;
    if (!t->chain && (!env.lim.max_tensor_bytes || env.lim.max_tensor_bytes > keep))
        env.lim.max_tensor_bytes = keep;
    errbuf e = {0};
    bool check = true;
    int rc = t->in_partial ? stand_ins(f, t, &env, &check) : TILEOPT_OK;
    if (rc) return rc;
    if (check &&
        eval_node(g, idx, t->in, t->n_in, t->outs, t->n_out, &env, NULL, &e) != TILEOPT_OK) {
        if (e.code == TILEOPT_NOMEM) return err_set(pc->err, TILEOPT_NOMEM, "%s", e.msg);
        /* Constant inputs a node cannot take make the model invalid (it would
        ** fail the same way in any runtime); limits and gaps are skips. */
        if (e.code == TILEOPT_INVALID)
            return err_set(pc->err, TILEOPT_INVALID, "node %s (%s): %s", graph_node_id(g, idx),
                           graph_node(g, idx)->op_type, e.msg);
        json_w *a = pass_skip(pc, g, idx, "evaluation failed: %s", e.msg);
        if (a && e.code == TILEOPT_LIMIT) json_put_str(a, "rule", "fold-limit");
        return TILEOPT_OK;
    }
    *go = true;
    if (!t->in_partial) return TILEOPT_OK;
    /* what shape inference knows of the output is all there is, numbers or not */
    free_outs(t->outs, t->n_out);
    t->partial_out = !fd_known_by_inference(f, idx);
    return t->partial_out ? TILEOPT_OK : fd_inferred_tensor(f, idx, &t->outs[0]);
}

/* Evaluate: the outputs, from shape inference where it knows them. */
static int fold_evaluate(fold_graph *f, fold_try *t, bool *go) {
    *go = true;
    t->chain = chain_possible(f, t->idx);
    if (t->inferred) {
        t->rule = "known by shape inference";
        return fd_inferred_tensor(f, t->idx, &t->outs[0]);
    }
    if (t->op == OP_Shape) {
        t->rule = "static shape";
        const graph_type *x = fd_type_in(f, t->idx, 0);
        t->partial_out = x && x->rank >= 0 && !fd_reads_static_dims(f, t->idx, t->op, x);
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
    /* a partial shape counts the bytes it would take as a tensor, and is
    ** never written */
    uint64_t out_bytes = 0, written = 0;
    for (size_t o = 0; o < t->n_out; o++) {
        int32_t vi = t->partial_out ? fd_vout(f, idx, o) : -1;
        if (vi >= 0) out_bytes += partial_bytes(f, vi);
        if (t->partial_out) continue;
        if (!t->outs[o]) return; /* Shape/Size of an unknown type */
        if (t->outs[o]->kind != EVAL_TENSOR) return; /* Identity of a sequence, say */
        out_bytes += tensor_nbytes(t->outs[o]);
        if (t->n->output[o][0]) written += written_bytes(f, idx, o, t->outs[o]);
    }
    bool over = over_budget(opt, written, t->freed);
    if (over && !t->chain) {
        skip_over_limit(pc, g, idx, "would", t->in_bytes, out_bytes, written, t->freed);
        return;
    }
    if (!over && opt->fold_max_growth > 0 && out_bytes > FOLD_GROWTH_FLOOR &&
        (double)out_bytes > opt->fold_max_growth * (double)t->in_bytes) {
        json_w *a = pass_skip(pc, g, idx,
                             "output takes %" PRIu64 " bytes, more than %g times the %" PRIu64
                             " bytes of constant inputs (--fold-max-growth)",
                             out_bytes, opt->fold_max_growth, t->in_bytes);
        if (a) {
            json_put_num(a, "bytes_before", (double)t->in_bytes);
            json_put_num(a, "bytes_after", (double)out_bytes);
            json_put_str(a, "rule", "fold-max-growth");
        }
        return;
    }
    if (over || t->partial_out) {
        /* readers get the values (a partial shape, to pick static entries
        ** from); the node stays, over the budget unless they all fold */
        for (size_t o = 0; o < t->n_out; o++) {
            int32_t vi = fd_vout(f, idx, o);
            if (vi < 0) continue;
            f->v[vi].val = t->outs[o];
            f->v[vi].partial = t->partial_out;
            f->v[vi].fold_out = false;
            /* a chain intermediate is never written: a reader that folds
            ** frees what this node frees when it goes (one output only, or
            ** a reader of one output would count what the others keep) */
            fd_set_held(f, vi, over && t->n_out == 1 ? t->freed : 0);
            t->outs[o] = NULL;
        }
        if (over) {
            fold_node *fn = &f->node[idx];
            fn->transient = TR_KEPT;
            fn->in_bytes = t->in_bytes;
            fn->out_bytes = out_bytes;
            fn->freed = t->freed;
        }
        return;
    }
    for (size_t o = 0; o < t->n_out; o++) {
        int32_t vi = fd_vout(f, idx, o);
        if (vi < 0) continue;
        f->v[vi].val = t->outs[o];
        f->v[vi].fold_out = true;
        fd_set_held(f, vi, t->n->output[o][0] ? written_bytes(f, idx, o, t->outs[o]) : 0);
        t->outs[o] = NULL;
    }
    f->node[idx].folded = true;
    *done = true;
    json_w *a = pass_action(pc, g, idx, "folded");
    if (a) {
        json_put_str(a, "rule", t->rule);
        json_put_num(a, "bytes_before", (double)t->in_bytes);
        json_put_num(a, "bytes_after", (double)out_bytes);
        json_put_num(a, "bytes_written", (double)written);
        json_put_num(a, "bytes_freed", (double)t->freed);
        int32_t v0 = fd_vout(f, idx, 0);
        if (v0 >= 0 && f->v[v0].val) add_shape(a, "output_shape", f->v[v0].val);
        int64_t rep[TENSOR_MAX_RANK];
        size_t nr;
        if (t->op == OP_Tile && t->n->n_input == 2 && t->in[1] && t->in[1]->elem == DT_INT64 &&
            tensor_to_i64(t->in[1], rep, TENSOR_MAX_RANK, &nr))
            json_put_ints(a, "repeats", rep, nr);
    }
}

/* Fold node idx if it can be (*done). */
int fd_try_fold(fold_graph *f, int32_t idx, bool *done) {
    const Onnx__NodeProto *n = graph_node(f->g, idx);
    fold_try t = {.idx = idx, .n = n, .op = fd_op_at(f, idx), .n_in = n->n_input,
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

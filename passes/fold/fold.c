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
**
** This file sweeps each graph (phases C and D) and runs the rounds:
** candidates.c marks what may fold, try.c folds one node, tile.c rewrites
** Tiles (fold_impl.h lists them).
*/
#include <inttypes.h>
#include <stdlib.h>

#include "graph/const.h"
#include "shape/infer.h"
#include "passes/passes.h"
#include "passes/fold/fold_impl.h"

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
    eval_env env = f->pc->eval;
    int rc = tensor_contiguous(f->v[vi].val, &env, &c, err);
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
        fold_node *fn = &f->node[idx];
        if (!readers_gone(f, idx)) {
            json_w *a = pass_skip(f->pc, f->g, idx, "folding it alone would grow the file "
                                 "(--fold-limit %" PRIu64 "), and not every reader of its "
                                 "outputs folded", f->pc->opt->fold_limit);
            if (a) {
                json_put_num(a, "bytes_before", (double)fn->in_bytes);
                json_put_num(a, "bytes_after", (double)fn->out_bytes);
                json_put_str(a, "rule", "fold-limit");
            }
            continue;
        }
        fn->transient = TR_GONE;
        fn->folded = true;
        /* never written: its readers' folds freed what it held */
        json_w *a = pass_action(f->pc, f->g, idx, "folded");
        if (a) {
            json_put_str(a, "rule", "inside a constant chain");
            json_put_num(a, "bytes_before", (double)fn->in_bytes);
            json_put_num(a, "bytes_after", (double)fn->out_bytes);
            json_put_num(a, "bytes_written", 0);
            json_put_num(a, "bytes_freed", (double)fn->freed);
        }
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
            int32_t vi = fd_vin(f, idx, i);
            ins[i] = vi >= 0 && (uint32_t)vi < f->nv0 ? vi : -1;
        }
        bool done = false;
        int rc = TILEOPT_OK;
        const fold_node *fn = &f->node[idx];
        if (fn->scope && fn->maybe) rc = fd_try_fold(f, idx, &done);
        if (!rc && !done && fn->scope && !fn->transient && fn->op == OP_Tile && f->opset >= 6)
            rc = fd_tile_rewrite(f, idx);
        for (size_t i = 0; !rc && i < n_in; i++) {
            int32_t vi = ins[i];
            if (vi < 0) continue;
            if (!done) f->v[vi].needed = true;
            if (f->v[vi].remaining > 0 && --f->v[vi].remaining == 0) rc = release(f, vi);
        }
        /* folded outputs nobody reads through an input slot: settle them now */
        for (size_t o = 0; !rc && done && o < n->n_output; o++) {
            int32_t vi = fd_vout(f, idx, o);
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
        fd_phase_sym_only(&f);
        fd_phase_candidates(&f);
        rc = fd_phase_scope(&f);
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

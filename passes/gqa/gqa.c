/*
** gqa: grouped-query attention without materializing the repeated K and V heads.
**
** A model with H query heads and kv < H key/value heads shares each K and V head
** among n = H / kv query heads; exporters write that as a repeat of K and V along
** the head axis before the two attention MatMuls:
**   kv-major  head h reads kv head h div n: Unsqueeze -> Expand (or Tile) ->
**             Reshape merging the new axis after the head axis (Hugging Face's
**             repeat_kv, repeat_interleave);
**   n-major   head h reads kv head h mod kv: Tile on the head axis (.repeat),
**             or the new axis merged before the head axis;
**   kv = 1    (multi-query) an Expand or Tile of the single head: both orders.
** At decoding the repeated K and V are the whole KV cache copied n times, most of
** the attention's cost. The rewrite folds each group of n query heads into the
** rows of one MatMul against its own K and V head, the "folded rows" form:
**   Q [B,H,Sq,D] -> Q' [B,kv,n*Sq,D]   (a Reshape; n-major needs a Transpose too)
**   S = Q' K^T       [B,kv,n*Sq,S]     (K as it was before the repeat)
**   O = P' V         [B,kv,n*Sq,D]  -> [B,H,Sq,D]
** Only standard ONNX: every runtime gains. A 5-D MatMul broadcasting K over the
** group axis is as fast on CPU, but GPU MatMuls materialize broadcast batch
** axes, so this keeps plain 4-D MatMuls.
**
** A kv-major repeat keeps the heads of a group together in memory, so each
** MatMul folds on its own and the scores between them are the export's own
** tensor (heads.c); an n-major one regroups the queries, and the whole
** attention between the MatMuls moves to the folded layout (region.c). Every
** fact is proven from shapes and the Shape subgraphs that made them
** (repeat.c); what does not fit is left with its reason. The folded form wins
** only for few query rows (GQA_FOLD_MAX_ROWS): with more the export's form
** stays, picked at run time by an If where the query length is a named dim.
*/
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "passes/gqa/gqa_impl.h"
#include "shape/infer.h"

/* The else branch of an If this pass made: the export's form, kept for many
** query rows, stays as it is. */
static bool kept_for_many_rows(graph *g) {
    if (!g->parent || strcmp(g->parent_attr, "else_branch") != 0) return false;
    const Onnx__NodeProto *n = graph_node(g->parent, g->parent_node);
    return op_of(n) == OP_If && n->doc_string && strcmp(n->doc_string, gq_dispatch_doc) == 0;
}

/* The pending fold whose nodes hold node i (the rows it read from its own
** operand among them), or -1. */
static ptrdiff_t pending_of(const gq_pendings *p, int32_t i) {
    for (size_t k = 0; k < p->n; k++) {
        const gq_rows *w = &p->rows[p->v[k].rows];
        if ((uint32_t)i >= p->v[k].first && (uint32_t)i < p->v[k].last) return (ptrdiff_t)k;
        for (int j = 0; w->of == p->v[k].a && j < w->n_nodes; j++)
            if (w->nodes[j] == i) return (ptrdiff_t)k;
    }
    return -1;
}

/* The pending fold all of whose nodes' reads of name are every read of it
** (no graph output, no subgraph), or -1. */
static ptrdiff_t read_by_one_fold(graph *g, const gq_pendings *p, const char *name) {
    if (graph_value_is_output(g, name)) return -1;
    graph_value *v = graph_find(g, name);
    ptrdiff_t k = -1;
    for (uint32_t u = 0; v && u < v->n_uses; u++) {
        int32_t r = v->uses[u].node;
        if (graph_node_removed(g, r)) continue;
        ptrdiff_t at = v->uses[u].input < 0 ? -1 : pending_of(p, r);
        if (at < 0 || (k >= 0 && at != k)) return -1;
        k = at;
    }
    return k;
}

/* The export's nodes from the scores a writes to the fold that reads what
** they make, when nothing else reads any of them (the mask's Add, Softmax,
** ...): chain[] and the index of that fold, or -1. */
static ptrdiff_t chain_to_next(graph *g, uint32_t n0, const gq_pendings *p, const gq_pending *a,
                               int32_t *chain, size_t *n_chain) {
    const char *cur = a->out;
    *n_chain = 0;
    for (;;) {
        ptrdiff_t k = read_by_one_fold(g, p, cur);
        if (k >= 0) return &p->v[k] == a ? -1 : k;
        int32_t r = gq_sole_reader(g, cur);
        if (r < 0) return -1;
        const Onnx__NodeProto *n = graph_node(g, r);
        if ((uint32_t)r >= n0 || *n_chain == GQA_MAX_CHAIN || n->n_output != 1 ||
            graph_node_subgraphs(g, r))
            return -1;
        chain[(*n_chain)++] = r;
        cur = n->output[0];
    }
}

/*
** One If per attention where both of its MatMuls wait for one: its output is
** the attention's [B,H,Sq,D], not the scores [B,H,Sq,S] between them, which
** would otherwise leave an If (and ONNX Runtime copies a subgraph's big
** outputs: 1.5% of a prefill of 512). The rest get an If each.
*/
static int dispatch_pending(pass_ctx *pc, graph *g, uint32_t n0, gq_pendings *p) {
    bool *done = calloc(p->n ? p->n : 1, sizeof *done);
    int32_t *fold = NULL, *orig = NULL;
    size_t cap = 0;
    for (size_t k = 0; k < p->n; k++)
        cap += p->v[k].last - p->v[k].first + GQA_MAX_TRANSPOSES + 6 + GQA_ROWS_NODES;
    cap += GQA_MAX_CHAIN;
    fold = malloc(cap * sizeof *fold);
    orig = malloc(cap * sizeof *orig);
    int rc = done && fold && orig ? TILEOPT_OK : err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    for (size_t k = 0; !rc && k < p->n; k++) {
        if (done[k]) continue;
        const gq_pending *a = &p->v[k], *b = NULL;
        int32_t chain[GQA_MAX_CHAIN];
        size_t n_chain = 0, n_fold = 0, n_orig = 0;
        ptrdiff_t j = chain_to_next(g, n0, p, a, chain, &n_chain);
        if (j >= 0 && !done[j]) b = &p->v[j];
        /* rows the second read from its own operand (not provably the
        ** first's): that operand moves into the If, and they go with it when
        ** no other fold reads them; the first's condition decides */
        gq_rows *own = b && b->rows != a->rows ? &p->rows[b->rows] : NULL;
        if (own && (own->users > 1 || own->of != b->a)) b = NULL, own = NULL;
        const gq_pending *parts[2] = {a, b};
        for (int s = 0; s < (b ? 2 : 1); s++) {
            for (int i = 0; s == 1 && own && i < own->n_nodes - 1; i++) fold[n_fold++] = own->nodes[i];
            for (uint32_t i = parts[s]->first; i < parts[s]->last; i++) fold[n_fold++] = (int32_t)i;
            for (int i = 0; i < parts[s]->n_orig; i++) orig[n_orig++] = parts[s]->orig[i];
            /* the export's nodes between the MatMuls run in both forms */
            for (size_t i = 0; s == 0 && b && i < n_chain; i++) {
                fold[n_fold++] = chain[i];
                orig[n_orig++] = chain[i];
            }
        }
        if (own) graph_remove_node(g, own->nodes[own->n_nodes - 1]);
        gq_sort_nodes(orig, n_orig);
        gq_emit e = {pc, g, orig[n_orig - 1], graph_opset(g->model, ""), 0};
        rc = gq_dispatch(&e, p->rows[a->rows].cond, fold, n_fold, orig, n_orig,
                         b ? b->out : a->out, a->elem);
        done[k] = true;
        if (b) done[j] = true;
    }
    free(done);
    free(fold);
    free(orig);
    return rc;
}

/*
** Attention without a KV cache: the MatMul's key length (the scores' columns,
** or the probabilities' own) is provably its query length, a named dim. There
** the repeat copies as many rows as the queries have, 1/Sq of the attention's
** work, and the fold wins only for a handful of rows (1.01-1.09x up to 256
** tokens at Llama-3-8B's and Gemma's heads), while the If that would pick the
** form costs its nodes, its bytes and a call frame at every run. With a cache
** the repeat copies the whole cache at every step, and the If pays.
*/
static const char no_cache_why[] =
    "attention without a KV cache (the key length is the query length, a named dim): the "
    "repeat copies 1/Sq of the attention's work there, too little to pay for the If that "
    "would pick the form at run time";

static bool keys_are_queries(graph *g, const Onnx__NodeProto *mm) {
    const char *a = graph_node_input(mm, 0);
    const graph_type *ta = gq_type_of(g, a);
    if (!gq_ranked(ta, GQA_RANK) || gq_num(ta, 2) >= 0) return false;
    /* the scores' columns are the second operand's, K^T's */
    return gq_same_dim(g, a, 2, graph_node_input(mm, 1), 3) || gq_same_dim(g, a, 2, a, 3);
}

/* The MatMul that reads the probabilities made from the scores mm writes
** (each op between read by the next alone), or -1: the attention's second
** MatMul, whose own query rows may not be provable (a mask of unknown rows
** broadcast into the scores). */
static int32_t probs_matmul(graph *g, const Onnx__NodeProto *mm) {
    const char *at = mm->output[0];
    for (int k = 0; k <= GQA_MAX_CHAIN; k++) {
        int32_t r = gq_sole_reader(g, at);
        if (r < 0) return -1;
        const Onnx__NodeProto *n = graph_node(g, r);
        if (op_of(n) == OP_MatMul) return strcmp(graph_node_input(n, 0), at) == 0 ? r : -1;
        if (n->n_output != 1 || !n->output[0][0]) return -1;
        at = n->output[0];
    }
    return -1;
}

static int gqa_graph(pass_ctx *pc, graph *g) {
    if (kept_for_many_rows(g)) return TILEOPT_OK;
    uint32_t n0 = graph_n_nodes(g);
    /* MatMuls met as the second of an attention seen from its first */
    enum { FREE, IN_REGION, NO_CACHE };
    unsigned char *second = calloc(n0 ? n0 : 1, sizeof *second);
    if (!second) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    int rc = TILEOPT_OK;
    gq_pendings later = {NULL, 0, 0, NULL, 0, 0, NULL, 0, 0};
    for (uint32_t i = 0; !rc && i < n0; i++) {
        if (graph_node_removed(g, (int32_t)i) || second[i] == IN_REGION ||
            op_of(graph_node(g, (int32_t)i)) != OP_MatMul || graph_node(g, (int32_t)i)->n_output != 1)
            continue;
        const Onnx__NodeProto *mm = graph_node(g, (int32_t)i);
        gq_operand o;
        const char *why = gq_operand_of(g, graph_node_input(mm, 1), &o);
        if (why == gq_not_repeat) continue;
        if (!why && (second[i] == NO_CACHE || keys_are_queries(g, mm))) {
            why = no_cache_why;
            int32_t p = probs_matmul(g, mm);
            if (p >= 0 && (uint32_t)p < n0) second[p] = NO_CACHE;
        } else if (!why && (o.r.kv_major || o.r.kv == 1)) {
            rc = gq_fold_matmul(pc, g, (int32_t)i, &o, &later, &why);
        } else if (!why) {
            int32_t mm2 = -1;
            rc = gq_fold_region(pc, g, (int32_t)i, &later, &mm2, &why);
            if (mm2 >= 0 && (uint32_t)mm2 < n0) second[mm2] = IN_REGION;
        }
        /* a repeat into a 4-D MatMul that is not one of heads: say so */
        if (!rc && why && gq_ranked(gq_type_of(g, graph_node_input(mm, 0)), GQA_RANK))
            pass_skip(pc, g, (int32_t)i, "grouped-query attention left as it is: %s", why);
    }
    free(second);
    if (!rc && later.n) rc = dispatch_pending(pc, g, n0, &later);
    free(later.v);
    free(later.rows);
    free(later.guards);
    return rc;
}

int pass_gqa(pass_ctx *pc) {
    /* Types the model declares come from the loader; inference adds the rest. */
    int rc = infer_shapes(pc->model, pc->err);
    if (!rc) rc = pass_for_each_graph(pc, pc->model->main, gqa_graph);
    if (rc) return rc;
    return pc->changed ? graph_commit(pc->model->main, pc->err) : TILEOPT_OK;
}

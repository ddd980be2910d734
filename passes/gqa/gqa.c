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

static int gqa_graph(pass_ctx *pc, graph *g) {
    if (kept_for_many_rows(g)) return TILEOPT_OK;
    uint32_t n0 = graph_n_nodes(g);
    /* the probabilities' MatMul of an n-major region found (rewritten or not) */
    bool *second = calloc(n0 ? n0 : 1, sizeof *second);
    if (!second) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    int rc = TILEOPT_OK;
    for (uint32_t i = 0; !rc && i < n0; i++) {
        if (graph_node_removed(g, (int32_t)i) || second[i] ||
            op_of(graph_node(g, (int32_t)i)) != OP_MatMul)
            continue;
        const Onnx__NodeProto *mm = graph_node(g, (int32_t)i);
        gq_operand o;
        const char *why = gq_operand_of(g, graph_node_input(mm, 1), &o);
        if (why == gq_not_repeat) continue;
        if (!why && (o.r.kv_major || o.r.kv == 1)) {
            rc = gq_fold_matmul(pc, g, (int32_t)i, &o, &why);
        } else if (!why) {
            int32_t mm2 = -1;
            rc = gq_fold_region(pc, g, (int32_t)i, &mm2, &why);
            if (mm2 >= 0 && (uint32_t)mm2 < n0) second[mm2] = true;
        }
        /* a repeat into a 4-D MatMul that is not one of heads: say so */
        if (!rc && why && gq_ranked(gq_type_of(g, graph_node_input(mm, 0)), GQA_RANK))
            pass_skip(pc, g, (int32_t)i, "grouped-query attention left as it is: %s", why);
    }
    free(second);
    return rc;
}

int pass_gqa(pass_ctx *pc) {
    /* Types the model declares come from the loader; inference adds the rest. */
    int rc = infer_shapes(pc->model, pc->err);
    if (!rc) rc = pass_for_each_graph(pc, pc->model->main, gqa_graph);
    if (rc) return rc;
    return pc->changed ? graph_commit(pc->model->main, pc->err) : TILEOPT_OK;
}

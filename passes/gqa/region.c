/*
** One attention of an n-major repeat: K and V heads repeated by a Tile
** (`.repeat`), so that query head h = j*kv + g meets K/V head g. A group's
** query heads are not next to one another in memory, so the queries are
** regrouped by a Transpose (small: [B,H,Sq,D]) and so is the output, and the
** ops between the two MatMuls run on the folded scores [B,kv,n*Sq,S]; an
** operand of theirs that varies along the query rows (a mask) reads a
** [B,kv,n,Sq,S] view of them. That needs the whole region: both MatMuls, and
** ops between them that no one else reads and that treat every head alike.
** Past GQA_FOLD_MAX_ROWS folded rows the region is left, or, with the rows a
** named dim, an If runs the folded region or a copy of the export's.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/gqa/gqa_impl.h"


/* One attention: S = MatMul(Q, K'), the ops on S, O = MatMul(P, V'), where K'
** and V' are repeats of K and V seen through Transposes. */
typedef struct region {
    int32_t mm1, mm2;
    int32_t chain[GQA_MAX_CHAIN];
    int n_chain;
    gq_operand k, v;
    int64_t kv, n, heads, head_size;
    bool kv_major;
    /* The ops from first5 to last5 of the chain (-1: none) have an operand that
    ** varies along Sq: they run on a [B,kv,n,Sq,S] view of the scores. The ops
    ** before and after stay 4-D, so that ONNX Runtime still fuses a scale into
    ** the MatMul before it. */
    int first5, last5;
} region;

/* How an operand of an op between the MatMuls, read against [B,H,Sq,S], fits
** the folded form: 0 as it is, 1 in the 5-D view only, -1 not at all. */
static int operand_fit(const graph_type *c) {
    if (!c || c->rank < 0 || c->rank > GQA_RANK) return -1;
    int32_t off = GQA_RANK - c->rank;
    /* axis 1 (heads) must be 1: an operand that differs per head is not grouped */
    if (off <= 1 && gq_num(c, 1 - off) != 1) return -1;
    /* axis 2 (query rows) of size 1 broadcasts over n*Sq rows as well */
    if (off <= 2 && gq_num(c, 2 - off) != 1) return 1;
    return 0;
}

/* Is node i one of the ops that may sit between the MatMuls, reading the
** chain's value at input slot `in`? *why otherwise. *five tells whether an
** operand needs the 5-D view. */
static bool chain_op(graph *g, int32_t i, const char *in, bool *five, const char **why) {
    const Onnx__NodeProto *n = graph_node(g, i);
    op_id op = op_of(n);
    if (op == OP_NONE) {
        *why = "an op outside the default domain between the MatMuls";
        return false;
    }
    const op_info *info = &op_table[op];
    if (op == OP_Softmax || op == OP_LogSoftmax) {
        int64_t axis = graph_attr_int(n, "axis", -1);
        if (axis != -1 && axis != GQA_RANK - 1) {
            *why = "a Softmax over another axis than the last";
            return false;
        }
        return true;
    }
    if (op == OP_Dropout) {
        const char *tm = graph_node_input(n, 2);
        int64_t train[1];
        size_t cnt = 0;
        bool found = false;
        errbuf e;
        if (tm && (graph_const_ints(g, tm, train, 1, &cnt, &found, &e) || !found || train[0])) {
            *why = "a Dropout that may train";
            return false;
        }
        if (n->n_output > 1 && n->output[1][0] && graph_find(g, n->output[1]) &&
            graph_find(g, n->output[1])->n_uses) {
            *why = "a Dropout whose mask is read";
            return false;
        }
        return strcmp(n->input[0], in) == 0 || (*why = "Dropout's ratio is the chain", false);
    }
    if (info->kind == OPK_OTHER) {
        *why = "an op between the MatMuls that is not elementwise";
        return false;
    }
    if (info->bcast == BC_UNI && strcmp(n->input[0], in) != 0) {
        *why = "a one-way broadcast into the scores";
        return false;
    }
    for (size_t k = 0; k < n->n_input; k++) {
        const char *x = graph_node_input(n, k);
        if (!x || strcmp(x, in) == 0) continue;
        int fit = operand_fit(gq_type_of(g, x));
        if (fit < 0) {
            *why = "an operand between the MatMuls that differs per head (or has no known shape)";
            return false;
        }
        if (fit) *five = true;
    }
    return true;
}

/* The region whose scores MatMul is mm1, reading the repeated K. *why when it
** does not fit; *second names the MatMul that reads the probabilities once the
** walk found it (-1 before), so that it is not taken for a region of its own. */
static bool find_region(graph *g, int32_t mm1, region *rg, const char **why, int32_t *second) {
    memset(rg, 0, sizeof *rg);
    rg->mm1 = mm1;
    rg->first5 = rg->last5 = -1;
    *second = -1;
    const Onnx__NodeProto *m1 = graph_node(g, mm1);
    const char *q = graph_node_input(m1, 0), *kop = graph_node_input(m1, 1);
    if ((*why = gq_operand_of(g, kop, &rg->k))) return false;
    /* the ops from the scores to the probabilities, each read by the next only */
    const char *at = m1->output[0];
    for (;;) {
        int32_t next = gq_sole_reader(g, at);
        if (next < 0) {
            *why = "the scores (or a value made of them) are read elsewhere too";
            return false;
        }
        const Onnx__NodeProto *nn = graph_node(g, next);
        if (nn->n_output != 1 || !nn->output[0][0]) {
            *why = "an op after the scores writes no output, or several";
            return false;
        }
        if (graph_node_is(nn, "MatMul")) {
            if (strcmp(graph_node_input(nn, 0), at) != 0) {
                *why = "the scores are the second operand of the next MatMul";
                return false;
            }
            rg->mm2 = *second = next;
            break;
        }
        if (rg->n_chain == GQA_MAX_CHAIN) {
            *why = "too many ops between the MatMuls";
            return false;
        }
        bool five = false;
        if (!chain_op(g, next, at, &five, why)) return false;
        if (five && rg->first5 < 0) rg->first5 = rg->n_chain;
        if (five) rg->last5 = rg->n_chain;
        rg->chain[rg->n_chain++] = next;
        at = nn->output[0];
    }
    const graph_type *tq = gq_type_of(g, q), *tk = gq_type_of(g, kop), *ts = gq_type_of(g, m1->output[0]);
    if (!gq_ranked(tq, GQA_RANK) || !gq_ranked(tk, GQA_RANK) || !gq_ranked(ts, GQA_RANK)) {
        *why = "the attention's shapes are not 4-D and known";
        return false;
    }
    rg->kv = rg->k.r.kv;
    rg->n = rg->k.r.n;
    rg->heads = rg->kv * rg->n;
    rg->kv_major = rg->k.r.kv_major;
    rg->head_size = gq_num(tq, 3);
    if (gq_num(tq, 1) != rg->heads || !gq_same(tq, 0, tk, 0)) {
        *why = "the query's heads or batch do not match the repeated K's";
        return false;
    }
    if (rg->head_size < 1) {
        *why = "the head size is not a number";
        return false;
    }
    if (graph_opset(g->model, "") < 14) {
        *why = "opset below 14: a Reshape without allowzero cannot keep an empty axis empty";
        return false;
    }
    if (gq_num(tq, 2) == 0) {
        *why = "the queries have no rows";
        return false;
    }
    if (gq_num(tq, 2) > GQA_FOLD_MAX_ROWS / rg->n) {
        *why = "many query rows: the folded form's one product per group is slower there "
               "than the export's products per head";
        return false;
    }
    const Onnx__NodeProto *m2 = graph_node(g, rg->mm2);
    const char *vop = graph_node_input(m2, 1);
    const char *vwhy = gq_operand_of(g, vop, &rg->v);
    if (vwhy) {
        *why = "K's heads are repeated but V's are not seen to be";
        return false;
    }
    if (rg->v.r.kv != rg->kv || rg->v.r.n != rg->n ||
        (rg->kv > 1 && rg->v.r.kv_major != rg->kv_major)) {
        *why = "K and V are repeated differently";
        return false;
    }
    const graph_type *tv = gq_type_of(g, vop), *tp = gq_type_of(g, at);
    if (!gq_ranked(tv, GQA_RANK) || !gq_ranked(tp, GQA_RANK) || !gq_same(tp, 0, tv, 0) ||
        gq_num(tp, 1) != rg->heads) {
        *why = "the probabilities' heads or batch do not match the repeated V's";
        return false;
    }
    /* the repeats and their layout ops must have no other reader, or they
    ** would stay materialized anyway */
    if (!gq_operand_private(g, &rg->k, mm1)) {
        *why = "the repeated K is read elsewhere too";
        return false;
    }
    if (!gq_operand_private(g, &rg->v, rg->mm2)) {
        *why = "the repeated V is read elsewhere too";
        return false;
    }
    return true;
}


static void record(pass_ctx *pc, graph *g, const region *rg, bool dispatch) {
    json_w *a = pass_action(pc, g, rg->mm2, "rewritten");
    json_put_str(a, "rule", "grouped-query attention: query heads grouped on their K/V head");
    json_put_num(a, "heads", (double)rg->heads);
    json_put_num(a, "kv_heads", (double)rg->kv);
    json_put_num(a, "group", (double)rg->n);
    json_put_str(a, "order", gq_order_text(&rg->k.r));
    json_put_str(a, "scores", rg->first5 >= 0 ? "[B, kv, n, Sq, S] view: an operand varies along Sq"
                                       : "[B, kv, n*Sq, S]");
    char kb[160], vb[160];
    gq_bytes_text(g, gq_type_of(g, rg->k.r.out), kb, sizeof kb);
    gq_bytes_text(g, gq_type_of(g, rg->v.r.out), vb, sizeof vb);
    json_put_str(a, "k_bytes_not_materialized", kb[0] ? kb : "unknown");
    json_put_str(a, "v_bytes_not_materialized", vb[0] ? vb : "unknown");
    json_put_str(a, "scores_matmul", graph_node_id(g, rg->mm1));
    if (dispatch) json_put_num(a, "folded_up_to_rows", GQA_FOLD_MAX_ROWS);
    for (int i = -1; i < rg->n_chain; i++) {
        int32_t id = i < 0 ? rg->mm1 : rg->chain[i];
        json_w *b = pass_action(pc, g, id, "rewritten");
        json_put_str(b, "rule", "grouped-query attention: on the grouped heads");
        json_put_str(b, "attention", graph_node_id(g, rg->mm2));
    }
}

/* The gq_guard for queries q (their batch and rows), kv and n, with the 5-D
** view's targets when five: one made before, else new ones read from q
** (p->n_guards when out of memory). Its nodes are made before the region's. */
static size_t guard_of(gq_emit *e, gq_pendings *p, const char *q, int64_t kv, int64_t n,
                       bool five) {
    size_t i = 0;
    while (i < p->n_guards &&
           !(p->guards[i].kv == kv && p->guards[i].n == n &&
             gq_same_dim(e->g, p->guards[i].of, 0, q, 0) &&
             gq_same_dim(e->g, p->guards[i].of, 2, q, 2)))
        i++;
    if (i == p->n_guards) {
        gq_guard *grown = rw_room(p->guards, &p->cap_guards, p->n_guards, sizeof *grown);
        if (!grown) {
            e->rc = err_set(e->pc->err, TILEOPT_NOMEM, "out of memory");
            return p->n_guards;
        }
        p->guards = grown;
        int64_t zero = 0;
        const char *group;
        const char *rows = gq_query_rows(e, q, n, &group);
        const char *few = gq_few_rows(e, group);
        /* no query and no batch element: every -1 below divides by them */
        const char *size = gq_node(e, "Size", "size", &q, 1, NULL, NULL);
        const char *some = gq_node(e, "Greater", "some",
                                   (const char *[]){size, gq_ints(e, "gqa_zero", &zero, 1)}, 2,
                                   NULL, NULL);
        const char *cond =
            gq_node(e, "And", "fold_cond", (const char *[]){few, some}, 2, NULL, NULL);
        if (e->rc) return p->n_guards;
        p->guards[p->n_guards++] = (gq_guard){q, kv, n, rows, group, cond, NULL, NULL};
    }
    gq_guard *w = &p->guards[i];
    if (five && !w->view5) {
        int64_t lead5[3] = {0, kv, n}, lead4[2] = {0, kv}, rest = -1;
        const char *last = gq_ints(e, "gqa_rest", &rest, 1);
        w->view5 = gq_concat(e, (const char *[]){gq_ints(e, "gqa_lead", lead5, 3), w->rows, last}, 3);
        w->view4 =
            gq_concat(e, (const char *[]){gq_ints(e, "gqa_lead", lead4, 2), w->group_rows, last}, 3);
    }
    return e->rc ? p->n_guards : i;
}

/*
** The attention in the folded form, its n-major heads regrouped by a Transpose
** of the queries and one of the output. Every Reshape copies the batch (a 0)
** and names the rest: the rows where they are a number (at least 1), a -1 for
** them under the If's guard where they are named. The scores' 5-D view
** names the columns: read at run time where the rows are a number (allowzero:
** an empty batch stays empty), a -1 under the guard.
*/
static int rewrite(pass_ctx *pc, graph *g, region *rg, gq_pendings *shared) {
    const Onnx__NodeProto *m1 = graph_node(g, rg->mm1), *m2 = graph_node(g, rg->mm2);
    gq_emit e = {pc, g, rg->mm2, graph_opset(g->model, ""), 0};
    const char *q = graph_node_input(m1, 0), *out = m2->output[0];
    int64_t kv = rg->kv, n = rg->n, H = rg->heads, D = rg->head_size;
    const graph_type *tq = gq_type_of(g, q), *ts = gq_type_of(g, m1->output[0]);
    int64_t R = gq_num(tq, 2);
    gq_sizes z = {&e, q, rg->k.r.src, gq_source_axis(&rg->k, 2), gq_source_axis(&rg->k, 3),
                  gq_num(tq, 0), R, D, gq_num(ts, 3), n, {NULL}};
    /* what the types say is read now: new values may move the index's entries */
    int32_t elem = tq->elem;
    /* rows a named dim: the form is picked at run time */
    size_t gi = R < 0 ? guard_of(&e, shared, q, kv, n, rg->first5 >= 0) : 0;
    if (e.rc) return e.rc;
    const gq_guard *gd = R < 0 ? &shared->guards[gi] : NULL;
    int64_t r = gd ? -1 : R, nr = gd ? -1 : R * n;
    uint32_t first = graph_n_nodes(g);
    const char *kx = gq_relayout(&e, &rg->k);
    /* Q [B,H,Sq,D], head h = j*kv + g -> [B,kv,n*Sq,D], rows (j, Sq) of group g */
    const char *q5 = gq_reshape_copying(
        &e, q, gq_ints(&e, "gqa_shape", (int64_t[]){0, n, kv, r, D}, 5), NULL);
    const char *qt = gq_transpose(&e, q5, (int64_t[]){0, 2, 1, 3, 4}, 5);
    const char *qg = gq_reshape_copying(
        &e, qt, gq_ints(&e, "gqa_shape", (int64_t[]){0, kv, nr, D}, 4), NULL);
    const char *s4 = gq_node(&e, "MatMul", "scores", (const char *[]){qg, kx}, 2, NULL, NULL);
    const char *cur = s4;
    const char *was = m1->output[0];
    for (int i = 0; i < rg->n_chain; i++) {
        if (i == rg->first5)
            cur = gd ? gq_reshape_copying(&e, cur, gd->view5, NULL)
                     : gq_reshape(&e, cur,
                                  gq_shape(&z, (int64_t[]){GQ_BATCH, kv, n, GQ_ROWS, GQ_COLS}, 5),
                                  NULL);
        const char *next = gq_copy_op(&e, i >= rg->first5 && i <= rg->last5 && rg->first5 >= 0,
                                      rg->chain[i], was, cur);
        was = graph_node(g, rg->chain[i])->output[0];
        cur = next;
        if (i == rg->last5)
            cur = gd ? gq_reshape_copying(&e, cur, gd->view4, NULL)
                     : gq_reshape(
                           &e, cur,
                           gq_shape(&z, (int64_t[]){GQ_BATCH, kv, GQ_GROUP_ROWS, GQ_COLS}, 4),
                           NULL);
    }
    const char *vx = gq_relayout(&e, &rg->v);
    const char *o4 = gq_node(&e, "MatMul", "out", (const char *[]){cur, vx}, 2, NULL, NULL);
    const char *back = gq_ints(&e, "gqa_shape", (int64_t[]){0, H, r, D}, 4);
    const char *o5 = gq_reshape_copying(
        &e, o4, gq_ints(&e, "gqa_shape", (int64_t[]){0, kv, n, r, D}, 5), NULL);
    if (e.rc) return e.rc;
    record(pc, g, rg, gd != NULL);
    /* the MatMul goes first, so its output name is free for the last Reshape:
    ** every name keeps its meaning, graph outputs included */
    graph_remove_node(g, rg->mm2);
    gq_reshape_copying(&e, gq_transpose(&e, o5, (int64_t[]){0, 2, 1, 3, 4}, 5), back, out);
    if (gd) {
        int32_t orig[2 * (GQA_MAX_TRANSPOSES + 4) + GQA_MAX_CHAIN + 2];
        size_t n_orig = 0;
        const gq_operand *ops[2] = {&rg->k, &rg->v};
        for (int k = 0; k < 2; k++) {
            for (int i = 0; i < ops[k]->r.n_nodes; i++) orig[n_orig++] = ops[k]->r.nodes[i];
            for (int i = 0; i < ops[k]->n_layout; i++) orig[n_orig++] = ops[k]->layout[i];
        }
        orig[n_orig++] = rg->mm1;
        for (int i = 0; i < rg->n_chain; i++) orig[n_orig++] = rg->chain[i];
        orig[n_orig++] = rg->mm2;
        gq_sort_nodes(orig, n_orig);
        size_t n_fold = graph_n_nodes(g) - first;
        int32_t *fold = malloc((n_fold ? n_fold : 1) * sizeof *fold);
        if (!fold) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
        for (size_t i = 0; i < n_fold; i++) fold[i] = (int32_t)(first + i);
        gq_dispatch(&e, gd->cond, fold, n_fold, orig, n_orig, out, elem);
        free(fold);
    }
    if (e.rc) return e.rc;
    graph_remove_node(g, rg->mm1);
    for (int i = 0; i < rg->n_chain; i++) graph_remove_node(g, rg->chain[i]);
    gq_drop_repeat(pc, g, &rg->k);
    gq_drop_repeat(pc, g, &rg->v);
    pc->changed = true;
    return TILEOPT_OK;
}

int gq_fold_region(pass_ctx *pc, graph *g, int32_t mm1, gq_pendings *shared, int32_t *second,
                   const char **why) {
    region rg;
    if (!find_region(g, mm1, &rg, why, second)) return TILEOPT_OK;
    return rewrite(pc, g, &rg, shared);
}

/*
** One MatMul of a kv-major repeat: A [B,H,R,C] times X, the heads of X being
** K/V head h div n repeated. Query head h = g*n + j meets K/V head g, and in
** A's memory the n heads of group g sit one after another, so A viewed as
** [B,kv,n*R,C] has each group's heads as the rows of one matrix:
**
**   MatMul(A, X)  ->  Reshape(MatMul(Reshape(A, [B,kv,n*R,C]), X'), [B,H,R,N])
**
** with X' the source of the repeat through the same layout ops. The product's
** rows come out in A's order, so its reshape is the original product, bit for
** bit, and every op after it (scale, mask, Softmax, the attention weights as a
** graph output, a bias per head) reads what it read before. That holds for the
** scores MatMul (A the queries, X the keys) and the output one (A the
** probabilities, X the values) alike, each on its own.
**
** A scalar scale right after the MatMul moves before the Reshape, where ONNX
** Runtime fuses it into the MatMul as it did in the export.
**
** Past GQA_FOLD_MAX_ROWS folded rows the export's form is faster: with the
** rows known the MatMul is left, with them named the fold waits for gqa.c,
** whose If runs it or a copy of the export's repeat and MatMul (the scale too,
** and the whole attention when both MatMuls fold) by the rows it gets.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/gqa/gqa_impl.h"

/* The reader of m's output when it is a Mul or Div by a constant scalar (the
** attention's 1/sqrt(d)), else -1. */
static int32_t scalar_scale(graph *g, const char *out) {
    int32_t r = gq_sole_reader(g, out);
    if (r < 0) return -1;
    const Onnx__NodeProto *n = graph_node(g, r);
    op_id op = op_of(n);
    if ((op != OP_Mul && op != OP_Div) || n->n_input != 2) return -1;
    if (op == OP_Div && strcmp(n->input[0], out) != 0) return -1;
    const char *c = strcmp(n->input[0], out) == 0 ? n->input[1] : n->input[0];
    const graph_type *t = gq_type_of(g, c);
    graph_const k;
    if (!t || t->rank < 0 || t->rank > GQA_RANK || !graph_const_find(g, c, &k)) return -1;
    for (int32_t i = 0; i < t->rank; i++)
        if (gq_num(t, i) != 1) return -1;
    return r;
}

/* [lead0, lead1, mid, 0]: a Reshape target whose dims 0 and 3 are copied. */
static const char *copying_target(gq_emit *e, int64_t lead1, const char *mid) {
    int64_t lead[2] = {0, lead1}, zero = 0;
    const char *ins[3] = {gq_ints(e, "gqa_lead", lead, 2), mid, gq_ints(e, "gqa_zero", &zero, 1)};
    return gq_concat(e, ins, 3);
}

/* The gq_rows for a's rows (axis 2), kv and n: one made before whose rows are
** provably these, else new ones read from a (p->n_rows when out of memory). */
static size_t rows_of(gq_emit *e, gq_pendings *p, const char *a, int64_t kv, int64_t n) {
    for (size_t i = 0; i < p->n_rows; i++) {
        gq_rows *w = &p->rows[i];
        if (w->kv == kv && w->n == n && gq_same_dim(e->g, w->of, 2, a, 2)) {
            w->users++;
            return i;
        }
    }
    gq_rows *grown = rw_room(p->rows, &p->cap_rows, p->n_rows, sizeof *grown);
    if (!grown) {
        e->rc = err_set(e->pc->err, TILEOPT_NOMEM, "out of memory");
        return p->n_rows;
    }
    p->rows = grown;
    uint32_t first = graph_n_nodes(e->g);
    const char *group;
    const char *rows = gq_query_rows(e, a, n, &group);
    /* one statement each: the condition must be made last (gqa.c tells it from
    ** the targets that way), and an initializer list does not order its calls */
    const char *fold = copying_target(e, kv, group);
    const char *back = copying_target(e, kv * n, rows);
    gq_rows w = {a, kv, n, fold, back, gq_few_rows(e, group), {0}, 0, 1};
    if (e->rc) return p->n_rows;
    for (uint32_t i = first; i < graph_n_nodes(e->g); i++) w.nodes[w.n_nodes++] = (int32_t)i;
    p->rows[p->n_rows] = w;
    return p->n_rows++;
}

int gq_fold_matmul(pass_ctx *pc, graph *g, int32_t m, const gq_operand *o, gq_pendings *later,
                   const char **why) {
    const Onnx__NodeProto *mm = graph_node(g, m);
    const char *a = graph_node_input(mm, 0), *x = graph_node_input(mm, 1), *out = mm->output[0];
    const gq_repeat *r = &o->r;
    const graph_type *ta = gq_type_of(g, a), *ty = gq_type_of(g, out);
    int64_t H = r->kv * r->n;
    *why = NULL;
    if (!gq_ranked(ta, GQA_RANK) || !gq_ranked(ty, GQA_RANK)) {
        *why = "the MatMul's shapes are not 4-D and known";
    } else if (gq_num(ta, 1) != H || !gq_same_dim(g, a, 0, x, 0)) {
        *why = "the first operand's heads or batch do not match the repeated operand's";
    } else if (!gq_operand_private(g, o, m)) {
        *why = "the repeated tensor is read elsewhere too";
    } else if (gq_num(ta, 2) < 0 && graph_opset(g->model, "") < 12) {
        *why = "opset below 12: the If that picks the form for a named query length needs "
               "LessOrEqual";
    } else if (gq_num(ta, 2) > GQA_FOLD_MAX_ROWS / r->n) {
        *why = "many query rows: the folded form's one product per group is slower there "
               "than the export's products per head";
    }
    if (*why) return TILEOPT_OK;

    gq_emit e = {pc, g, m, graph_opset(g->model, ""), 0};
    int32_t scale = scalar_scale(g, out);
    /* what the types say is read now: new values may move the index's entries */
    int32_t elem = ta->elem;
    /* rows a named dim: the form is picked at run time (gqa.c); the targets
    ** are made before `first`, outside the nodes the If takes */
    int64_t R = gq_num(ta, 2);
    bool later_if = R < 0;
    size_t rows = later_if ? rows_of(&e, later, a, r->kv, r->n) : 0;
    if (e.rc) return e.rc;
    const char *fold_to = later_if ? later->rows[rows].fold
                                   : gq_ints(&e, "gqa_shape", (int64_t[]){0, r->kv, R * r->n, 0}, 4);
    const char *back = later_if ? later->rows[rows].back
                                : gq_ints(&e, "gqa_shape", (int64_t[]){0, H, R, 0}, 4);
    uint32_t first = graph_n_nodes(g);
    const char *ag = gq_reshape_copying(&e, a, fold_to, NULL);
    const char *y = gq_node(&e, "MatMul", "grouped", (const char *[]){ag, gq_relayout(&e, o)}, 2,
                            NULL, NULL);
    if (scale >= 0) y = gq_copy_op(&e, false, scale, out, y);
    if (e.rc) return e.rc;

    json_w *act = pass_action(pc, g, m, "rewritten");
    json_put_str(act, "rule", "grouped-query attention: query heads grouped on their K/V head");
    json_put_num(act, "heads", (double)H);
    json_put_num(act, "kv_heads", (double)r->kv);
    json_put_num(act, "group", (double)r->n);
    json_put_str(act, "order", gq_order_text(r));
    json_put_str(act, "repeated", x);
    char bytes[160];
    gq_bytes_text(g, gq_type_of(g, r->out), bytes, sizeof bytes);
    json_put_str(act, "bytes_not_materialized", bytes[0] ? bytes : "unknown");
    if (later_if) json_put_num(act, "folded_up_to_rows", GQA_FOLD_MAX_ROWS);
    /* the last node goes first, so its output name is free for the Reshape:
    ** every name keeps its meaning, graph outputs included */
    const char *keep = out;
    if (scale >= 0) {
        json_w *s = pass_action(pc, g, scale, "rewritten");
        json_put_str(s, "rule", "grouped-query attention: the scale before the regrouping");
        json_put_str(s, "matmul", graph_node_id(g, m));
        keep = graph_node(g, scale)->output[0];
        graph_remove_node(g, scale);
    }
    graph_remove_node(g, m);
    gq_reshape_copying(&e, y, back, keep);
    if (e.rc) return e.rc;
    if (later_if) {
        gq_pending *grown = rw_room(later->v, &later->cap, later->n, sizeof *grown);
        if (!grown) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
        later->v = grown;
        gq_pending *p = &later->v[later->n++];
        *p = (gq_pending){a, r->n, rows, keep, first, graph_n_nodes(g), {0}, 0, elem};
        for (int i = 0; i < r->n_nodes; i++) p->orig[p->n_orig++] = r->nodes[i];
        for (int i = 0; i < o->n_layout; i++) p->orig[p->n_orig++] = o->layout[i];
        p->orig[p->n_orig++] = m;
        if (scale >= 0) p->orig[p->n_orig++] = scale;
    }
    gq_drop_repeat(pc, g, o);
    pc->changed = true;
    return TILEOPT_OK;
}

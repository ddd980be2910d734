/*
** Rule 6: a reader of the Tile's shape alone reads its input's.
*/
#include "passes/fuse/fuse_impl.h"

/* Rule 6: Shape(T) -> Mul(Shape(x), r). T's shape is x's times the repeats,
** so a reader that wants only the shape (zeros_like of a Tile, as DETR's
** decoder target is) no longer keeps T alive. */
int fz_shape_reader(fz_state *st, const fz_tile *t, const fz_plan *p) {
    graph *g = st->g;
    const Onnx__NodeProto *c = graph_node(g, p->node);
    const char *cout = c->output[0];
    const char *sx = fz_hint(g, p->node, "input_shape");
    const char *sname = fz_hint(g, p->node, "of_input"), *mname = fz_hint(g, p->node, "mul");
    if (!sx || !sname || !mname) return err_set(st->pc->err, TILEOPT_NOMEM, "out of memory");
    fz_report_as(st, t, p->node, "fused", 6, "Shape of a Tile from its input's shape",
                 (uint64_t)t->xs.rank, (uint64_t)t->xs.rank, 0, t->t_numel * t->esize);
    graph_remove_node(g, p->node);
    int32_t ni;
    int rc;
    /* a static input shape is a constant, not a Shape node for fold to find */
    if (dims_static(t->xs.d, t->xs.rank)) {
        if ((rc = fz_shape_init(st, sx, t->xs.d, t->xs.rank, &sx))) return rc;
    } else if (!graph_add_node(g, "Shape", sname, &t->x, 1, &sx, 1, &ni)) {
        return err_set(st->pc->err, TILEOPT_NOMEM, "fuse: cannot add Shape");
    }
    const char *mul_in[2] = {sx, t->reps};
    if (!graph_add_node(g, "Mul", mname, mul_in, 2, &cout, 1, &ni))
        return err_set(st->pc->err, TILEOPT_NOMEM, "fuse: cannot add Mul");
    fz_note_foldable(st->pc, g, mul_in, 2);
    dim rank = dim_num(t->xs.rank);
    if (!dims_static(t->xs.d, t->xs.rank) && (rc = fz_set_type(st, sx, DT_INT64, &rank, 1)))
        return rc;
    return fz_grow_nodes(st);
}

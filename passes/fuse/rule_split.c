/*
** Rule 4 (--fuse-split): B(T, y) -> Reshape(B(x', y'), shape(T)), where y'
** splits every axis with r_i > 1 and d_i > 1 into (r_i, d_i) and x' =
** Reshape(x) puts a 1 in front of d_i, so B broadcasts x over the repeats.
*/
#include <string.h>

#include "passes/fuse/fuse_impl.h"

/* Rule 4 preconditions: o is full-size (shape of T) and some axis has both
** r_i > 1 and d_i > 1 (otherwise rule 1 covers it). */
bool fz_splittable(const fz_tile *t, const fz_shape *o) {
    if (!t->fixed || !dims_eq(t->t, t->xs.rank, o->d, o->rank)) return false;
    int32_t split = 0;
    for (int32_t i = 0; i < t->xs.rank; i++) {
        int64_t r = t->r[i].n, d = t->xs.d[i].n; /* fixed: numbers */
        if (r < 1 || d < 1) return false;
        if (r > 1 && d > 1) split++;
    }
    return split > 0 && t->xs.rank + split <= FZ_MAX_RANK;
}

/* Rule 4: B(T, y) -> Reshape(B(x', y'), shape(T)). */
int fz_split(fz_state *st, const fz_tile *t, const fz_plan *p) {
    graph *g = st->g;
    pass_ctx *pc = st->pc;
    const Onnx__NodeProto *c = graph_node(g, p->node);
    bool on0 = strcmp(c->input[0], t->out) == 0;
    const char *y = on0 ? c->input[1] : c->input[0];
    dim xd[FZ_MAX_RANK], yd[FZ_MAX_RANK];
    int32_t r = 0;
    for (int32_t i = 0; i < t->xs.rank; i++) {
        int64_t ri = t->r[i].n, di = t->xs.d[i].n; /* fz_splittable: numbers */
        if (ri > 1 && di > 1) {
            xd[r] = dim_num(1);
            yd[r++] = dim_num(ri);
        }
        xd[r] = dim_num(di);
        yd[r++] = dim_num(di * (ri > 1 && di > 1 ? 1 : ri));
    }
    int32_t elem = fz_out_elem(st, c, fz_elementwise(c)->out, t);
    fz_shape ys;
    int32_t yelem = fz_shape_of(g, y, &ys) ? ys.elem : 0;
    fz_report(st, t, p->node, 4, "split repeat axes, broadcast x", t->t_numel,
              t->t_numel, 0);

    const char *xs_n, *ys_n, *ts_n;
    int rc;
    if ((rc = fz_shape_init(st, "fuse_x_shape", xd, r, &xs_n)) ||
        (rc = fz_shape_init(st, "fuse_y_shape", yd, r, &ys_n)) ||
        (rc = fz_shape_init(st, "fuse_out_shape", t->t, t->xs.rank, &ts_n)))
        return rc;
    const char *op = c->op_type, *cout = c->output[0];
    const char *xr = fz_hint(g, p->node, "x_split");
    const char *yr = fz_hint(g, p->node, "y_split");
    const char *br = fz_hint(g, p->node, "split_out");
    if (!xr || !yr || !br) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    Onnx__NodeProto *keep = graph_node(g, p->node);
    graph_remove_node(g, p->node);
    const char *in_x[2] = {t->x, xs_n}, *in_y[2] = {y, ys_n};
    const char *in_b[2] = {on0 ? xr : yr, on0 ? yr : xr}, *in_o[2] = {br, ts_n};
    int32_t ni;
    Onnx__NodeProto *nb;
    if (!graph_add_node(g, "Reshape", fz_hint(g, p->node, "reshape_x"), in_x, 2, &xr, 1,
                        &ni) ||
        !graph_add_node(g, "Reshape", fz_hint(g, p->node, "reshape_y"), in_y, 2, &yr, 1,
                        &ni) ||
        !(nb = graph_add_node(g, op, fz_hint(g, p->node, "split"), in_b, 2, &br, 1,
                              &ni)) ||
        !graph_add_node(g, "Reshape", fz_hint(g, p->node, "reshape_out"), in_o, 2, &cout,
                        1, &ni))
        return err_set(pc->err, TILEOPT_NOMEM, "fuse: cannot add nodes for %s", op);
    if ((rc = fz_copy_attrs(g, nb, keep)))
        return err_set(pc->err, rc, "fuse: cannot copy attributes of %s", op);
    if ((rc = fz_set_type(st, xr, t->xs.elem, xd, r)) ||
        (rc = fz_set_type(st, yr, yelem, yd, r)) ||
        (rc = fz_set_type(st, br, elem, yd, r)))
        return rc;
    return fz_grow_nodes(st);
}

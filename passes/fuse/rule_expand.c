/*
** Rule 5: a Tile left over size-1 axes becomes Expand, the stride-0 view,
** where ONNX Runtime runs it no slower (fuse_impl.h says where).
*/
#include "passes/fuse/fuse_impl.h"

/* Rule 5's guard (see FUSE_EXPAND_MIN_REPEATS): axes of size 1 that do not
** repeat change nothing, so the last of the others must be a size-1 axis
** repeated often enough, and the one before it must not repeat. 0 when it
** pays, 1 when it does not, 2 when only the count is unknown (a named dim). */
static int fz_expand_pays(const fz_tile *t) {
    int32_t last = -1, prev = -1;
    for (int32_t i = 0; i < t->xs.rank; i++) {
        if (dim_is(t->xs.d[i], 1) && dim_is(t->r[i], 1)) continue;
        prev = last;
        last = i;
    }
    if (last < 0 || !dim_is(t->xs.d[last], 1) || (prev >= 0 && !dim_is(t->r[prev], 1)))
        return 1;
    dim r = t->r[last];
    return !dim_is_num(r) ? 2 : r.n >= FUSE_EXPAND_MIN_REPEATS ? 0 : 1;
}

/* Rule 5: a Tile left over size-1 axes is Expand, the stride-0 view. Sets
** *declined (1, or 2 when the deciding count is not a number) when the Tile is
** such a broadcast but the guard keeps it.
** Expand(x, r) is Tile(x, r) exactly when every repeated axis of x has size 1
** (an axis with r_i = 1 keeps its size in both), so the Tile's own repeats
** value is the shape, named dims and all. */
int fz_expand(fz_state *st, int32_t ti, const char *why_kept, int *declined) {
    graph *g = st->g;
    fz_tile t;
    char why[320];
    *declined = 0;
    int rc = fz_read_tile(st->pc, g, ti, &t, why, sizeof why);
    if (rc) return rc < 0 ? -rc : TILEOPT_OK;
    for (int32_t i = 0; i < t.xs.rank; i++)
        if (dim_is(t.r[i], 0) || (!dim_is(t.r[i], 1) && !dim_is(t.xs.d[i], 1)))
            return TILEOPT_OK;
    if ((*declined = fz_expand_pays(&t))) return TILEOPT_OK;
    /* Expand writes the same bytes in a runtime that materializes it; ours and
    ** any runtime with stride-0 views need not. */
    uint64_t tb = t.t_numel * t.esize;
    json_w *a = fz_report_as(st, &t, ti, "rewritten", 5, "Tile over size-1 axes -> Expand",
                            t.t_numel, t.t_numel, tb, 0);
    if (a && why_kept) json_put_str(a, "kept_because", why_kept);
    const char *x = t.x, *out = t.out;
    graph_remove_node(g, ti);
    const char *in[2] = {x, t.reps};
    int32_t ni;
    if (!graph_add_node(g, "Expand", fz_hint(g, ti, "expand"), in, 2, &out, 1, &ni))
        return err_set(st->pc->err, TILEOPT_NOMEM, "fuse: cannot add Expand");
    st->pc->changed = true;
    return fz_set_why(st, ti, NULL);
}

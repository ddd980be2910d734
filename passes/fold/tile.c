/*
** The Tile rewrites that need no values but the repeats: repeats all 1, a Tile
** of a Tile, constant repeats made an initializer; and a Tile whose repeats
** fold nowhere says what they are.
*/
#include "graph/const.h"
#include "passes/fold/fold_impl.h"

/* Repeats of a Tile-6/13 node as int64, when constant. */
static bool tile_repeats(fold_graph *f, int32_t idx, int64_t *rep, size_t *cnt) {
    tensor *t;
    bool part;
    fd_get_const_at(f, fd_vin(f, idx, 1), &t, &part);
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
int fd_tile_rewrite(fold_graph *f, int32_t idx) {
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
    fd_get_const_at(f, fd_vin(f, idx, 1), &rt, &part);
    if (rt && !part) {
        int rc = pass_check_repeats(pc, g, idx, rt, fd_type_in(f, idx, 0));
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
    const graph_type *xt = fd_type_in(f, idx, 0);
    if (ones && (!xt || xt->rank < 0 || (size_t)xt->rank == nr)) {
        /* Tile with all repeats 1 is the identity (a wrong repeats length would
        ** be an error at run time: keep those). */
        json_w *a = pass_action(pc, g, idx, "eliminated");
        if (a) {
            json_put_str(a, "rule", "repeats all 1");
            json_put_ints(a, "repeats", rep, nr);
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
            json_w *a = pass_action(pc, g, idx, "rewritten");
            if (a) {
                json_put_str(a, "rule", "Tile(Tile(x,a),b) -> Tile(x,a*b)");
                json_put_str(a, "inner", graph_node_id(g, p));
                json_put_ints(a, "repeats", prod, nr);
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
    json_w *a = pass_action(pc, g, idx, "rewritten");
    if (a) {
        json_put_str(a, "rule", "constant repeats -> initializer");
        json_put_ints(a, "repeats", rep, nr);
    }
    if (graph_node_set_input(g, idx, 1, rname))
        return err_set(pc->err, TILEOPT_NOMEM, "fold: out of memory");
    return TILEOPT_OK;
}

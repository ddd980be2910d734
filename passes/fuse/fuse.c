/*
** fuse: stop materializing Tile outputs that only feed elementwise ops.
**
** T = Tile(x, r) is a strided view of x: output axis i splits into (r_i, d_i) with
** byte strides (0, stride_i). Rewritten with standard ONNX ops, so every runtime
** benefits, not only ours:
**   1  B(T, y) -> B(x, y) when every tiled axis of x has size 1 and the broadcast
**      gives the same output shape (the Tile was a broadcast B does by itself).
**   2  U(T) -> Tile(U(x), r) for unary elementwise U: U runs on prod(d) elements.
**   3  B(T, c) -> Tile(B(x, c), r) for c invariant under the tiling, and
**      B(Tile(x, r), Tile(w, r)) -> Tile(B(x, w), r) for equal shapes of x and w.
**   Rules 1 and 3 with a tiling-invariant operand hold for ops of three or more
**   operands too (Where, Sum, Max, Min, Mean): y is then all other operands
**   broadcast together.
**   4  (--fuse-split) B(T, y) -> Reshape(B(x', y'), shape(T)): y' splits every
**      axis with r_i > 1 and d_i > 1 into (r_i, d_i) and x' = Reshape(x) puts a 1
**      in front of d_i, so B broadcasts x over the repeats.
**   5  a Tile left over size-1 axes only -> Expand (opset >= 8), the stride-0
**      view, where ONNX Runtime runs it no slower (see FUSE_RULE5 in fuse_impl.h).
**   6  Shape(T) -> Mul(Shape(x), r): a reader of T's shape alone reads x's.
** Rules 2 and 3 move the Tile after the op; they are applied only when every
** reader of T gets rewritten, so T disappears instead of being materialized
** twice. The new Tile goes back on the worklist, so Tiles sink to the end of
** elementwise chains and the rules combine up to a fixed point.
**
** This file walks the Tiles: plan.c picks the rule for each reader, one file
** per rule rewrites (fuse_impl.h lists them).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shape/infer.h"
#include "passes/passes.h"
#include "passes/fuse/fuse_impl.h"

/* ------------------------------------------------------------ per Tile */

static int fz_tile_step(fz_state *st, int32_t ti) {
    graph *g = st->g;
    pass_ctx *pc = st->pc;
    if (graph_node_removed(g, ti) || !graph_node_is(graph_node(g, ti), "Tile"))
        return TILEOPT_OK;
    fz_tile t;
    char why[320];
    int rc = fz_read_tile(pc, g, ti, &t, why, sizeof why);
    if (rc < 0) return -rc;
    if (rc) return fz_set_why(st, ti, why);
    bool is_out = graph_value_is_output(g, t.out);

    graph_value *v = graph_find(g, t.out);
    uint32_t n_uses = v ? v->n_uses : 0;
    graph_use *uses = NULL;
    fz_plan *plans = NULL;
    uint32_t n_plans = 0;
    if (n_uses) {
        uses = malloc(n_uses * sizeof *uses);
        plans = malloc(n_uses * sizeof *plans);
        if (!uses || !plans) {
            rc = err_set(pc->err, TILEOPT_NOMEM, "out of memory");
            goto done;
        }
        memcpy(uses, v->uses, n_uses * sizeof *uses);
    }
    if ((rc = fz_grow_nodes(st))) goto done;
    st->step++;
    char block_buf[320], out_why[320];
    const char *block = NULL;
    if (is_out) {
        /* say what the output is: a real tiling stays whatever rule 5 finds */
        char rs[160];
        fz_shape_str(rs, sizeof rs, t.r, t.xs.rank);
        snprintf(out_why, sizeof out_why, "it is a graph output%s%s",
                 fz_is_broadcast(&t) ? "" : ": a real tiling, repeats ",
                 fz_is_broadcast(&t) ? "" : rs);
        block = out_why;
    }
    for (uint32_t k = 0; k < n_uses; k++) {
        int32_t ci = uses[k].node;
        if (ci < 0) {
            block = "it is an output of its graph";
            continue;
        }
        if (graph_node_removed(g, ci)) continue;
        if (uses[k].input < 0) {
            snprintf(block_buf, sizeof block_buf, "it is read inside a subgraph of %s",
                     graph_node_id(g, ci));
            block = block_buf;
            continue;
        }
        if (st->stamp[ci] == st->step) continue;
        st->stamp[ci] = st->step;
        fz_plan *p = &plans[n_plans++];
        if ((rc = fz_plan_consumer(st, &t, ci, p))) goto done;
        if (p->kind == P_NONE && !block) {
            fz_strlcpy(block_buf, sizeof block_buf, p->why);
            block = block_buf;
        }
    }
    /* Sinking past one reader while another keeps T would materialize twice. */
    if (block) {
        for (uint32_t k = 0; k < n_plans; k++) {
            fz_plan *p = &plans[k];
            if (p->kind != P_R2 && p->kind != P_R3C && p->kind != P_R3T) continue;
            if (p->r4_ok) {
                p->kind = P_R4;
                continue;
            }
            p->kind = P_NONE;
            snprintf(p->why, sizeof p->why, "not sunk past %s: the Tile stays because %s",
                     graph_node_id(g, p->node), block);
        }
    }
    const char *first_why = NULL;
    for (uint32_t k = 0; k < n_plans; k++) {
        fz_plan *p = &plans[k];
        switch (p->kind) {
        case P_R1:
            if ((rc = fz_read_through(st, &t, p))) goto done;
            break;
        case P_R2:
        case P_R3C:
        case P_R3T:
            if ((rc = fz_sink(st, &t, p))) goto done;
            break;
        case P_R4:
            if ((rc = fz_split(st, &t, p))) goto done;
            break;
        case P_R6:
            if ((rc = fz_shape_reader(st, &t, p))) goto done;
            break;
        default:
            if (!first_why) first_why = p->why;
            continue;
        }
        pc->changed = true;
    }
    if (!is_out && !fz_live_uses(g, t.out)) {
        if (!n_plans) {
            /* nothing read it to begin with */
            json_w *a = pass_action(pc, g, ti, "eliminated");
            if (a) json_put_str(a, "rule_name", "Tile nobody reads");
        }
        graph_remove_node(g, ti);
        pc->changed = true;
        rc = fz_set_why(st, ti, NULL);
    } else {
        rc = fz_set_why(st, ti, first_why ? first_why : block ? block : "kept");
    }
done:
    free(uses);
    free(plans);
    return rc;
}

static int fz_graph(pass_ctx *pc, graph *g) {
    fz_state st = {.pc = pc, .g = g, .opset = graph_opset(g->model, "")};
    int rc = fz_grow_nodes(&st);
    uint32_t n0 = graph_n_nodes(g);
    for (uint32_t i = 0; !rc && i < n0; i++)
        if (!graph_node_removed(g, (int32_t)i) && graph_node_is(graph_node(g, (int32_t)i), "Tile"))
            rc = fz_push(&st, (int32_t)i);
    /* LIFO: a Tile a rewrite creates is handled next, sinking it down the chain. */
    uint64_t steps = 0;
    while (!rc && st.n_work) {
        rc = fz_tile_step(&st, st.work[--st.n_work]);
        /* the worklist grows while it drains: total is done + still queued */
        if (++steps % 4096 == 0) pass_progress(pc, "fuse", steps, steps + st.n_work);
    }
    if (!rc && steps >= 4096) pass_progress(pc, "fuse", steps, steps); /* reaches 100% */
    uint32_t n1 = graph_n_nodes(g);
    for (uint32_t i = 0; !rc && i < n1; i++) {
        if (graph_node_removed(g, (int32_t)i) || !graph_node_is(graph_node(g, (int32_t)i), "Tile"))
            continue;
        const char *why = i < st.cap_nodes ? st.why[i] : NULL;
        int declined = 0;
#if FUSE_RULE5
        if (st.opset >= 8 && (rc = fz_expand(&st, (int32_t)i, why, &declined))) break;
        if (graph_node_removed(g, (int32_t)i)) continue;
#endif
        if (declined)
            pass_skip(pc, g, (int32_t)i,
                      "%s%snot made Expand (rule 5): ONNX Runtime runs Expand slower than "
                      "Tile unless the innermost axis alone repeats a size-1 axis %d or "
                      "more times%s", why ? why : "", why ? "; " : "",
                      FUSE_EXPAND_MIN_REPEATS,
                      declined == 2 ? ", and that count is not known before run time" : "");
        else if (why)
            pass_skip(pc, g, (int32_t)i, "%s", why);
    }
    for (size_t i = 0; i < st.cap_nodes; i++) free(st.why[i]);
    free(st.why);
    free(st.stamp);
    free(st.work);
    return rc;
}

int pass_fuse(pass_ctx *pc) {
    /* Types the model declares come from the loader; inference adds the rest. */
    int rc = infer_shapes(pc->model, pc->err);
    if (rc) return rc;
    rc = pass_for_each_graph(pc, pc->model->main, fz_graph);
    if (rc) return rc;
    return pc->changed ? graph_commit(pc->model->main, pc->err) : TILEOPT_OK;
}

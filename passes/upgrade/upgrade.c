/*
** The upgrade pass's entry and walk: migrate a model's default-domain nodes from
** the opset it imports to the target opset (6..26), one schema change at a time.
**
** For every node the generated opset table (opset_table.c) gives the since_versions
** between the source and the target. A step whose schema change altered semantics
** or the node's form has a row in the adapter table (adapters.c); a row with no
** function is a known change we cannot migrate. Steps with no row only extended
** types and need nothing. The pass plans first: if any node needs a step nobody
** can adapt, it fails with one error listing them all and changes nothing.
**
** Without a target the model keeps its opset from UPGRADE_KEEP_FROM on (fold and
** fuse work at any such opset, and a new opset may change what a runtime does);
** older models, whose Tile-1 and legacy broadcast no current runtime runs, go to
** UPGRADE_DEFAULT_TARGET. A target below the model's opset is reached step by
** step down (downgrade.c), or not at all: the run fails listing every node that
** cannot go down and why.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "passes/upgrade/opset_table.h"
#include "passes/upgrade/upgrade_impl.h"
#include "shape/infer.h"

#define UPGRADE_KEEP_FROM 7
#define UPGRADE_DEFAULT_TARGET 13

/* The opset a model at opset src goes to, for an asked target (0: none asked). */
static int64_t upgrade_target_for(int64_t src, int64_t asked) {
    if (asked) return asked;
    return src >= UPGRADE_KEEP_FROM ? src : UPGRADE_DEFAULT_TARGET;
}

static void block(up *u, graph *g, int32_t node, const char *op, int64_t from, int64_t to,
                  const char *why) {
    u->n_blocked++;
    json_w *a = pass_skip(u->pc, g, node, "%s", why);
    if (a) {
        json_put_num(a, "from", (double)from);
        json_put_num(a, "to", (double)to);
    }
    char item[384];
    snprintf(item, sizeof item, "%s%s (%s %lld->%lld: %s)", u->n_blocked > 1 ? ", " : "",
             graph_node_id(g, node), op, (long long)from, (long long)to, why);
    size_t len = strlen(item);
    if (!u->msg_full && u->msg_len + len + 16 < sizeof u->msg) {
        memcpy(u->msg + u->msg_len, item, len + 1);
        u->msg_len += len;
    } else {
        u->msg_full = true;
    }
}

/*
** Constant held float types only before opset 9, yet exporters of the time wrote
** int64 shapes with it: such a source fails the checker at its own opset. From a
** target of 9 on the node is valid as it is; below, the value moves to an
** initializer, which has no type restriction.
*/
static int constant_quirk(up *u, graph *g, int32_t node) {
    Onnx__NodeProto *n = graph_node(g, node);
    Onnx__AttributeProto *a = graph_attr(n, "value");
    if (u->src >= 9 || !a || !a->t || n->n_output != 1) return 0;
    int32_t elem = a->t->data_type;
    if (elem == DT_FLOAT || elem == DT_DOUBLE || elem == DT_FLOAT16) return 0;
    const char *id = graph_node_id(g, node);
    pass_warn(u->pc, "node %s: Constant of %s is not valid before opset 9; the source fails "
              "the checker, migrated anyway", id, dtype_name(elem));
    const char *out = n->output[0];
    if (u->tgt >= 9 || elem == DT_STRING || graph_value_is_output(g, out)) return 0;
    graph_tensor_data td;
    int rc = graph_tensor_read(u->m, a->t, &td, u->err);
    if (rc) return err_prefix(u->err, "node %s: ", id);
    const char *name;
    rc = graph_add_initializer(g, out, elem, td.dims, (size_t)td.rank, td.data, td.nbytes,
                               &name, u->err);
    if (td.owned) free(td.data);
    if (rc) return rc;
    if (graph_replace_uses(g, out, name)) return up_nomem(u);
    json_w *act = pass_action(u->pc, g, node, "upgraded");
    if (act) json_put_str(act, "initializer", name);
    graph_remove_node(g, node);
    return 0;
}

/* Going down (downgrade.c): planning records a node that cannot go down, with
** its schema versions and why; applying cannot meet one. */
static int downgrade_node(up *u, graph *g, int32_t i) {
    const Onnx__NodeProto *n = graph_node(g, i);
    const char *op = n->op_type ? n->op_type : "";
    const opset_entry *e = opset_table_find(op);
    int64_t from = e && opset_schema_at(e, u->src) ? opset_schema_at(e, u->src) : u->src;
    int64_t to = e && opset_schema_at(e, u->tgt) ? opset_schema_at(e, u->tgt) : u->tgt;
    char why[256];
    int rc = up_downgrade_node(u, g, i, why, sizeof why);
    if (rc || !why[0]) return rc;
    if (!u->plan)
        return err_set(u->err, TILEOPT_ERROR, "downgrade: node %s: %s", graph_node_id(g, i),
                       why);
    block(u, g, i, op, from, to, why);
    return 0;
}

/* Walk node i of g from the source opset to the target, one schema step at a
** time; in planning mode only record what would block. */
static int upgrade_node(up *u, graph *g, int32_t i) {
    Onnx__NodeProto *n = graph_node(g, i);
    if (!graph_domain_is_default(n->domain)) return 0;
    if (u->src > u->tgt) return downgrade_node(u, g, i);
    /* At its own opset a node needs no step: an op this table does not know
    ** (a newer opset's) is left to the runtime, as it was. */
    bool converting = u->src != u->tgt;
    const char *op = n->op_type ? n->op_type : "";
    const opset_entry *e = opset_table_find(op);
    const retired *r = (!e || opset_schema_at(e, u->src) == 0) ? up_retired_find(op) : NULL;
    if (r) {
        if (u->plan) {
            pass_warn(u->pc, "node %s: %s is a retired experimental op; the source fails "
                      "the checker, migrated anyway", graph_node_id(g, i), op);
            u->n_work++;
            return 0;
        }
        up_act act;
        if (!up_act_open(&act)) return up_nomem(u);
        int32_t node = i;
        int rc = r->fn(u, g, &node, &act.w);
        if (!rc) up_record_step(u, g, i, &act, NULL, 1, u->tgt);
        up_act_free(&act);
        return rc;
    }
    if (!e) {
        if (u->plan && converting)
            block(u, g, i, op, u->src, u->tgt, "no ai.onnx schema for this op");
        return 0;
    }
    int32_t cur = opset_schema_at(e, u->src);
    if (cur == 0) {
        if (u->plan && converting)
            block(u, g, i, op, u->src, u->tgt, "op does not exist at the source opset");
        return 0;
    }
    if (strcmp(op, "Constant") == 0 && u->src < 9) {
        if (u->plan) {
            u->n_work += u->tgt < 9; /* maybe an initializer to make */
        } else {
            int rc = constant_quirk(u, g, i);
            if (rc || graph_node_removed(g, i)) return rc;
        }
    }
    int32_t node = i;
    for (size_t k = 0; k < e->count; k++) {
        int32_t v = e->versions[k];
        if (v <= cur) continue;
        if (v > u->tgt) break;
        const adapter *a = up_adapter_find(op, v);
        if (!a || !a->fn) {
            if (a || (e->deprecated && v >= e->deprecated)) {
                if (u->plan)
                    block(u, g, node, op, cur, v,
                          a ? "no adapter for this schema change"
                            : "op deprecated, no replacement adapter");
                return 0;
            }
            cur = v; /* only the types changed */
            continue;
        }
        u->n_work++;
        if (!u->plan) {
            up_act act;
            if (!up_act_open(&act)) return up_nomem(u);
            int rc = a->fn(u, g, &node, &act.w);
            if (!rc) up_record_step(u, g, i, &act, op, cur, v);
            up_act_free(&act);
            if (rc) return rc;
        }
        cur = v;
        if (a->renamed) {
            op = a->renamed;
            e = opset_table_find(op);
            if (!e) return err_set(u->err, TILEOPT_ERROR, "upgrade: no schema for %s", op);
            k = (size_t)-1; /* restart over the new op's history, from cur */
        }
    }
    return 0;
}

static int upgrade_graph(up *u, graph *g) {
    uint32_t n0 = graph_n_nodes(g); /* nodes added here are already in target form */
    for (uint32_t i = 0; i < n0; i++) {
        if (graph_node_removed(g, (int32_t)i)) continue;
        for (graph *s = graph_node_subgraphs(g, (int32_t)i); s; s = s->next_sibling) {
            int rc = upgrade_graph(u, s);
            if (rc) return rc;
        }
        int rc = upgrade_node(u, g, (int32_t)i);
        if (rc) return rc;
        if (!u->plan) pass_progress(u->pc, "upgrade", i + 1, n0);
    }
    return 0;
}

/*
** From IR 4 on, an initializer listed among the graph inputs is only a default
** the caller may override: ONNX Runtime then no longer folds it as a constant.
** Below IR 4 every initializer had to be listed, so raising the IR past 3 takes
** them out (unless the caller asked to keep them). The values keep their
** index entries; graph_commit rebuilds the index.
*/
static void drop_initializer_inputs(up *u) {
    graph *g = u->m->main;
    Onnx__GraphProto *pb = g->pb;
    size_t k = 0;
    for (size_t i = 0; i < pb->n_input; i++) {
        const char *name = pb->input[i]->name ? pb->input[i]->name : "";
        graph_value *v = graph_find(g, name);
        if (v && (v->initializer >= 0 || v->sparse >= 0)) {
            v->input = -1;
            continue;
        }
        pb->input[k++] = pb->input[i];
    }
    pb->n_input = k;
}

int pass_upgrade(pass_ctx *pc) {
    up u;
    memset(&u, 0, sizeof u);
    u.pc = pc;
    u.m = pc->model;
    u.err = pc->err;
    int64_t asked = pc->opt->target_opset;
    if (asked && (asked < 1 || asked > opset_table_max_opset))
        return err_set(u.err, TILEOPT_MISUSE, "upgrade: target opset %lld outside 1..%d",
                       (long long)asked, (int)opset_table_max_opset);
    u.src = graph_opset(u.m, "");
    if (u.src == 0) {
        pass_warn(pc, "upgrade: the model imports no ai.onnx opset; nothing to migrate");
        return 0;
    }
    u.tgt = upgrade_target_for(u.src, asked);
    /* The table's schemas end at its newest opset: past it, whether a node's
    ** schema changed is unknown, so nothing can be shown to go down exactly. */
    if (u.src > u.tgt && u.src > opset_table_max_opset)
        return err_set(u.err, TILEOPT_UNSUPPORTED,
                       "upgrade: model opset %lld is newer than the newest opset known "
                       "here (%d); it cannot be converted to %lld",
                       (long long)u.src, (int)opset_table_max_opset, (long long)u.tgt);
    int64_t ir_in = u.m->pb->ir_version;
    int64_t ir_need = upgrade_ir_for_opset(u.tgt);
    /* Up, the IR rises to what the target needs; down it goes with the opset, to
    ** the IR that opset shipped with, which runtimes of that time read. */
    u.ir_out = u.src > u.tgt || ir_in < ir_need ? ir_need : ir_in;

    /* Planning up needs no shapes: it only looks up schema versions. Going down,
    ** it checks every node's element types (and Split's axis sizes). */
    errbuf ie;
    err_clear(&ie);
    if (u.src > u.tgt && infer_shapes(u.m, &ie))
        pass_warn(pc, "downgrade: shape inference stopped (%s); nodes whose types it did not "
                  "reach cannot be shown to go down", ie.msg);
    u.plan = true;
    int rc = upgrade_graph(&u, u.m->main);
    if (rc) return rc;
    if (u.n_blocked)
        return err_set(u.err, TILEOPT_UNSUPPORTED,
                       "%s to opset %lld: %u node%s need%s a step with no adapter: %s%s",
                       u.src > u.tgt ? "downgrade" : "upgrade", (long long)u.tgt,
                       u.n_blocked, u.n_blocked > 1 ? "s" : "", u.n_blocked > 1 ? "" : "s",
                       u.msg, u.msg_full ? ", ..." : "");
    if (u.src == u.tgt && u.n_work == 0) return 0; /* leave the model untouched */
    if (ir_in < upgrade_ir_for_opset(u.src))
        pass_warn(pc, "upgrade: source IR version %lld is below what opset %lld needs (%lld); "
                  "the source fails the checker, migrated anyway", (long long)ir_in,
                  (long long)u.src, (long long)upgrade_ir_for_opset(u.src));

    /* Dropped before inference and the adapters run, so the constants they read are those of the
    ** result (graph/const.h): initializers that are no inputs. Kept as inputs
    ** (--keep-initializer-inputs), they become defaults a caller may override from
    ** IR 4 on, and the adapters treat them so. */
    if (ir_in < 4 && u.ir_out >= 4 && !pc->opt->keep_initializer_inputs) {
        drop_initializer_inputs(&u);
        if ((rc = graph_commit(u.m->main, u.err))) return rc;
    }

    /* Ranks of intermediate values let more Tile-1 nodes get constant repeats and
    ** more legacy broadcasts a plain Unsqueeze. Inference knows the legacy forms;
    ** when it gives up, values stay unknown and the run-time forms take over. */
    err_clear(&ie);
    if (u.n_work && u.src <= u.tgt && infer_shapes(u.m, &ie))
        pass_warn(pc, "upgrade: shape inference stopped (%s); ranks it did not reach are "
                  "treated as unknown", ie.msg);
    u.plan = false;
    /* Raised first so graph_add_initializer sees the result's IR (below 4 it also
    ** lists new initializers as graph inputs). There is no graph.h setter for
    ** this one scalar of the model. */
    u.m->pb->ir_version = u.ir_out;
    u.m->pb->has_ir_version = 1;
    if ((rc = upgrade_graph(&u, u.m->main))) return rc;
    if ((rc = graph_set_opset(u.m, "", u.tgt, u.err))) return rc;
    pc->changed = true;
    if ((rc = graph_commit(u.m->main, u.err))) return rc;
    /* Down below IR 4 every initializer left is a graph input again, as IR 3 wants. */
    if (ir_in >= 4 && u.ir_out < 4) rc = graph_list_initializers_as_inputs(u.m->main, u.err);
    return rc;
}

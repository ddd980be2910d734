/*
** fuse_consecutive_casts: Cast(Cast(x, A), B) reads x directly when the
** first Cast is exact, that is when A holds every value of x's type T
** (rw_cast_exact's table: float in double, int8 in int16, uint8 in float,
** bool in anything). Then Cast(x, A) is x's value, and converting it on to B
** gives what converting x gives. When B is T the pair is x itself and both
** go. Any other first Cast rounds, wraps or drops fractions, and the second
** sees what it lost (int32 -> float -> int32 changes 2^24 + 1; float ->
** int32 -> float drops fractions; double -> float -> float16 rounds twice):
** those pairs stay, with their reason. The first goes with its last reader;
** while another node or a graph output reads it, a pair that does not give x
** back stays (the second reading x would remove nothing).
*/
#include "graph/dtype.h"
#include "passes/passes.h"
#include "passes/rewrite.h"

static const char *type_name(int32_t elem) {
    const dtype_info *d = dtype_get(elem);
    return d ? d->name : "an unknown type";
}

static int cast_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    const char *y = op_of(n) == OP_Cast ? graph_node_input(n, 0) : NULL;
    int32_t first;
    const Onnx__NodeProto *p = y ? rw_producer(g, y, &first) : NULL;
    if (!p || op_of(p) != OP_Cast || !graph_node_input(p, 0)) return TILEOPT_OK;
    const char *x = graph_node_input(p, 0);
    const graph_type *tx = rw_type(g, x);
    int32_t from = tx ? tx->elem : 0, mid = (int32_t)graph_attr_int(p, "to", 0),
            to = (int32_t)graph_attr_int(n, "to", 0);
    if (!from) {
        pass_skip(pc, g, node, "reads a Cast whose input type is unknown");
        return TILEOPT_OK;
    }
    if (!rw_cast_exact(from, mid)) {
        pass_skip(pc, g, node, "reads a Cast from %s to %s, which does not hold every value "
                  "exactly: a direct Cast could give other values", type_name(from),
                  type_name(mid));
        return TILEOPT_OK;
    }
    if (to == from) {
        bool done;
        const char *why;
        int rc = rw_forward(pc, g, node, 0, x, &done, &why);
        if (rc) return rc;
        if (!done) {
            pass_skip(pc, g, node, "gives back the input of the exact Cast before it, but %s",
                      why);
            return TILEOPT_OK;
        }
        json_w *a = pass_action(pc, g, node, "eliminated");
        if (a) {
            json_put_str(a, "rule", "converts back what an exact Cast converted");
            json_put_str(a, "from", graph_node_id(g, first));
        }
        rw_drop_unread(pc, g, first, "the Cast after it converted back");
        return TILEOPT_OK;
    }
    if (!rw_only_reader(pc, g, node, y, p, "merging would remove nothing")) return TILEOPT_OK;
    json_w *a;
    int rc = rw_reread(pc, g, node, x, first, "merged with the exact Cast before it", &a);
    if (rc) return rc;
    rw_drop_unread(pc, g, first, "merged into the Cast after it");
    return TILEOPT_OK;
}

int pass_fuse_consecutive_casts(pass_ctx *pc) {
    return rw_walk(pc, cast_rule);
}

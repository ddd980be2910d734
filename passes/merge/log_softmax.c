/*
** fuse_consecutive_log_softmax: Log(Softmax(x)) is LogSoftmax(x) with the
** Softmax's axis. At every opset the two ops share their reading of axis:
** before 13 both flatten x to 2-D at the axis and normalize the rows, from 13
** both normalize along that one axis, and both default it alike (1 before 13,
** -1 from it), so the attribute carries over as it is, absent or not. The one
** node computes x - max - log(sum(exp(x - max))), which stays finite where the
** Softmax underflows to 0 and its Log gives -inf. The Softmax goes with the
** Log; while another node or a graph output reads it the pair stays (a
** LogSoftmax beside the Softmax would remove nothing).
*/
#include "passes/passes.h"
#include "passes/rewrite.h"

static int log_softmax_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    const char *y = op_of(n) == OP_Log && n->n_output == 1 ? graph_node_input(n, 0) : NULL;
    int32_t first;
    const Onnx__NodeProto *p = y ? rw_producer(g, y, &first) : NULL;
    if (!p || op_of(p) != OP_Softmax || !graph_node_input(p, 0)) return TILEOPT_OK;
    if (!rw_only_reader(pc, g, node, y, p, "a LogSoftmax beside it would remove nothing")) return TILEOPT_OK;
    const Onnx__AttributeProto *axis = graph_attr(p, "axis");
    const char *x = graph_node_input(p, 0);
    const char *name = p->name && p->name[0] ? p->name : NULL;
    json_w *act = pass_action(pc, g, node, "eliminated");
    if (act) {
        json_put_str(act, "rule", "Log of a Softmax into LogSoftmax");
        json_put_str(act, "into", graph_node_id(g, first));
    }
    Onnx__NodeProto *ls;
    int rc = rw_replace(pc, g, node, "LogSoftmax", name, &x, 1, &ls, NULL);
    if (rc) return rc;
    if (axis && graph_node_set_attr_int(g, ls, "axis", axis->i))
        return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    rw_drop_unread(pc, g, first, "with the Log after it into a LogSoftmax");
    return TILEOPT_OK;
}

int pass_fuse_consecutive_log_softmax(pass_ctx *pc) {
    return rw_walk(pc, log_softmax_rule);
}

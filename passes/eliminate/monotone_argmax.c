/*
** eliminate_nop_monotone_argmax: ArgMax or ArgMin of f(x), f strictly
** increasing, is the same index of x: f keeps the order of the elements it
** compares, so f goes when the ArgMax is its only reader. f is Exp, Log or
** Sqrt, elementwise; or Softmax or LogSoftmax, which is strictly increasing
** only among elements that share a denominator, so only where every slice the
** ArgMax reduces lies within one normalized group:
**
**   from opset 13 Softmax normalizes along its axis alone, and a slice along
**   another axis crosses groups: the ArgMax must reduce that same axis;
**
**   before 13 it normalizes each row of its input coerced to 2-D, axes
**   [0, axis) against [axis, rank): a slice along any axis k >= axis keeps
**   the row coordinates fixed, so it lies in one row, while k < axis crosses
**   rows. The ArgMax's axis at or after the Softmax's makes it the same
**   reduction order.
**
** Ties. Over the reals f is strictly increasing; in floating point it is only
** non-decreasing: two different inputs close enough (x and the next float,
** for Exp near 0), or past where f overflows or underflows, give one output.
** The ArgMax of the original then picks the first of the tied outputs (the
** last with select_last_index), and the rewritten ArgMax the true maximum of
** the inputs, which can be a later index. We take the rewrite, as
** onnxoptimizer does: a tie comes only from inputs f cannot tell apart in
** the output's precision, where the original's index is what rounding chose,
** not what the model computes; the index of the true maximum is as right.
** The ops that tie on ordinary inputs stay, with their reason: Tanh, Sigmoid
** and Erf saturate (Tanh gives 1 for every float input above about 9,
** Sigmoid above about 17, Erf above 4), so confident logits would tie and
** the rewrite would change which one wins. Log and Sqrt outside their domain
** (negative inputs) give NaN, whose place in an ArgMax ONNX does not define;
** we read their inputs, which ArgMax orders.
*/
#include "passes/eliminate/eliminate_impl.h"

static const op_id monotone_ops[] = {OP_Exp, OP_Log, OP_Sqrt, OP_Softmax, OP_LogSoftmax};
static const op_id saturating_ops[] = {OP_Tanh, OP_Sigmoid, OP_Erf};

static bool one_of(op_id op, const op_id *ops, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (ops[i] == op) return true;
    return false;
}

/* axis counted from the front of rank axes, or -1 when the rank it needs is
** unknown (or it is out of range). */
static int64_t from_front(int64_t axis, int32_t rank) {
    if (axis < 0) axis = rank >= 0 ? axis + rank : -1;
    return rank >= 0 && axis >= rank ? -1 : axis;
}

/* Why the ArgMax n over the output of Softmax or LogSoftmax s is not the
** same reduction as one over its input, or NULL. */
static const char *softmax_differs(pass_ctx *pc, graph *g, const Onnx__NodeProto *n,
                                   const Onnx__NodeProto *s) {
    int64_t opset = graph_opset(pc->model, "");
    int32_t rank = rw_rank(g, graph_node_input(s, 0));
    int64_t k = from_front(graph_attr_int(n, "axis", 0), rank);
    int64_t a = from_front(graph_attr_int(s, "axis", opset < 13 ? 1 : -1), rank);
    if (k < 0 || a < 0) return "an axis counts from the end of a rank that is unknown";
    if (opset >= 13 && k != a)
        return "the ArgMax reduces another axis than the one it normalizes, whose slices "
               "cross its denominators";
    if (opset < 13 && k < a)
        return "the ArgMax reduces an axis before the one it coerces its input to 2-D at: "
               "its slices cross the rows it normalizes";
    return NULL;
}

static int argmax_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    op_id op = op_of(n);
    if (op != OP_ArgMax && op != OP_ArgMin) return TILEOPT_OK;
    const char *y = graph_node_input(n, 0);
    int32_t fi, sole;
    const Onnx__NodeProto *f = y ? rw_producer(g, y, &fi) : NULL;
    op_id fop = f ? op_of(f) : OP_NONE;
    bool monotone = one_of(fop, monotone_ops, countof(monotone_ops));
    if (!monotone && !one_of(fop, saturating_ops, countof(saturating_ops))) return TILEOPT_OK;
    const char *x = graph_node_input(f, 0), *why = NULL;
    if (!x) return TILEOPT_OK;
    if (!monotone)
        why = "it saturates: inputs past a moderate size give one output, and the first of "
              "them is not the largest";
    else if (!rw_sole_consumer(g, y, &sole) || sole != node)
        why = "its output is read elsewhere too: it stays either way";
    else if (fop == OP_Softmax || fop == OP_LogSoftmax)
        why = softmax_differs(pc, g, n, f);
    if (why) {
        pass_skip(pc, g, node, "%s of a strictly increasing %s, but %s", n->op_type,
                  f->op_type, why);
        return TILEOPT_OK;
    }
    json_w *a;
    int rc = rw_reread(pc, g, node, x, fi, "reads the input of the strictly increasing op "
                       "before it", &a);
    if (rc) return rc;
    rw_drop_unread(pc, g, fi, "the ArgMax after it reads its input");
    return TILEOPT_OK;
}

int pass_eliminate_nop_monotone_argmax(pass_ctx *pc) {
    return rw_walk(pc, argmax_rule);
}

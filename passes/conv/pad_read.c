/*
** Reading the Pad before a Conv or a pool: what it pads, by how much on each
** side of each axis, and whether it is the zero padding those nodes do
** themselves (mode constant, value 0, nothing cropped, batch and channels
** untouched).
*/
#include <string.h>

#include "passes/conv/conv_impl.h"

/* pads[2 * na] over the axes given (all of them, in order, when axes is
** NULL) into p->pads, begins then ends over p->rank axes. */
static bool spread(cv_pad *p, const int64_t *pads, size_t np, const int64_t *axes, size_t na) {
    int32_t r = p->rank;
    size_t n = axes ? na : (size_t)r;
    if (np != 2 * n) return false;
    memset(p->pads, 0, sizeof p->pads);
    for (size_t i = 0; i < n; i++) {
        int64_t a = axes ? axes[i] : (int64_t)i;
        if (a < 0) a += r;
        if (a < 0 || a >= r) return false;
        p->pads[a] = pads[i];
        p->pads[r + a] = pads[n + i];
    }
    return true;
}

/* The pads and the value of Pad n, whatever its opset's form: attributes
** "paddings" (opset 1) or "pads" and "value" (2-10), inputs from 11 (axes
** from 18). NULL, or why they cannot be known. */
static const char *pad_params(pass_ctx *pc, graph *g, const Onnx__NodeProto *n, cv_pad *p,
                              double *value) {
    int64_t opset = graph_opset(pc->model, "");
    int64_t raw[2 * CV_PAD_RANK], axes[CV_PAD_RANK];
    size_t np = 0, na = 0;
    *value = 0;
    if (opset < 11) {
        const Onnx__AttributeProto *a = graph_attr(n, opset < 2 ? "paddings" : "pads");
        if (!a || a->n_ints > 2 * CV_PAD_RANK) return "the Pad's pads are missing or too many";
        for (size_t i = 0; i < a->n_ints; i++) raw[i] = a->ints[i];
        np = a->n_ints;
        *value = graph_attr_float(n, "value", 0.0f);
    } else {
        const char *v = graph_node_input(n, 2), *ax = graph_node_input(n, 3);
        if (!rw_const_ints(g, graph_node_input(n, 1), raw, 2 * CV_PAD_RANK, &np))
            return "the Pad's pads are no constant";
        if (v && !rw_const_uniform(pc, g, v, value)) return "the Pad's value is no constant";
        if (ax && !rw_const_ints(g, ax, axes, CV_PAD_RANK, &na))
            return "the Pad's axes are no constant";
        if (ax && !spread(p, raw, np, axes, na)) return "the Pad's axes are out of range";
        if (ax) return NULL;
    }
    if (!spread(p, raw, np, NULL, 0)) return "the Pad's pads do not match its input's rank";
    return NULL;
}

int cv_pad_find(pass_ctx *pc, graph *g, int32_t reader, cv_pad *p, bool *found,
                const char **why) {
    memset(p, 0, sizeof *p);
    *found = false;
    *why = NULL;
    const char *y = graph_node_input(graph_node(g, reader), 0);
    int32_t pi, sole;
    const Onnx__NodeProto *n = y ? rw_producer(g, y, &pi) : NULL;
    if (!n || op_of(n) != OP_Pad || !graph_node_input(n, 0)) return TILEOPT_OK;
    *found = true;
    p->node = pi;
    p->x = graph_node_input(n, 0);
    p->rank = rw_rank(g, p->x);
    if (!rw_sole_consumer(g, y, &sole) || sole != reader) {
        *why = "the Pad's output is read elsewhere too (a node or a graph output)";
        return TILEOPT_OK;
    }
    if (strcmp(graph_attr_string(n, "mode", "constant"), "constant") != 0) {
        *why = "the Pad's mode is not constant: it copies edge or reflected values";
        return TILEOPT_OK;
    }
    if (p->rank < 3 || p->rank > CV_PAD_RANK) {
        *why = "the padded tensor's rank is unknown";
        return TILEOPT_OK;
    }
    double value;
    if ((*why = pad_params(pc, g, n, p, &value))) return TILEOPT_OK;
    if (value != 0) {
        *why = "the Pad's value is not 0";
        return TILEOPT_OK;
    }
    for (int32_t i = 0; i < 2 * p->rank; i++) {
        int32_t axis = i % p->rank;
        if (p->pads[i] < 0) *why = "the Pad crops (a negative pad)";
        else if (axis < 2 && p->pads[i] != 0) *why = "the Pad pads the batch or channel axis";
        if (*why) return TILEOPT_OK;
    }
    return TILEOPT_OK;
}

int cv_pad_merge(pass_ctx *pc, graph *g, int32_t reader, const cv_pad *p) {
    Onnx__NodeProto *n = graph_node(g, reader);
    int32_t k = p->rank - 2;
    int64_t pads[2 * CV_PAD_RANK] = {0};
    const Onnx__AttributeProto *old = graph_attr(n, "pads");
    for (int32_t i = 0; i < 2 * k; i++) {
        int64_t before = old && old->n_ints == (size_t)(2 * k) ? old->ints[i] : 0;
        pads[i] = before + p->pads[i < k ? 2 + i : p->rank + 2 + (i - k)];
    }
    int rc = graph_node_set_attr_ints(g, n, "pads", pads, (size_t)(2 * k));
    if (!rc) rc = graph_node_set_input(g, reader, 0, p->x);
    if (rc) return err_set(pc->err, rc, "out of memory");
    pc->changed = true;
    return TILEOPT_OK;
}

int cv_pad_fold(pass_ctx *pc, graph *g, int32_t reader,
                const char *(*guard)(pass_ctx *pc, const Onnx__NodeProto *n),
                const char *rule, const char *into) {
    cv_pad p;
    bool found;
    const char *why;
    int rc = cv_pad_find(pc, g, reader, &p, &found, &why);
    if (rc || !found) return rc;
    if (!why) why = guard(pc, graph_node(g, reader));
    if (why) {
        pass_skip(pc, g, reader, "not merged with the Pad before it: %s", why);
        return TILEOPT_OK;
    }
    if ((rc = cv_pad_merge(pc, g, reader, &p))) return rc;
    json_w *a = pass_action(pc, g, reader, "rewritten");
    if (a) {
        json_put_str(a, "rule", rule);
        json_put_str(a, "from", graph_node_id(g, p.node));
    }
    rw_drop_unread(pc, g, p.node, into);
    return TILEOPT_OK;
}

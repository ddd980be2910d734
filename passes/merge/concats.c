/*
** fuse_consecutive_concats: a Concat reading another Concat on the same axis
** reads the inner one's inputs in its place. Concatenation along one axis is
** associative: the inner one's pieces, put in at the slot its output had, lay
** out the same elements in the same order. Axes compare after a negative one
** is counted from the rank (all inputs of a Concat have its output's rank);
** an unknown rank leaves a pair whose axes differ in sign. The inner Concat
** goes once nothing reads it: while another node or a graph output reads it
** the pair stays (splicing would remove nothing), and so does a Concat on
** another axis, which lays its pieces out otherwise. A chain (or a tree) of
** such Concats becomes one in one walk, written once by the outermost: the
** ones it will take in wait for it.
*/
#include <stdlib.h>

#include "passes/passes.h"
#include "passes/rewrite.h"

/* The axis of Concat n (before opset 4 it defaults to 1), counted from rank
** when negative; false when it is absent or cannot be counted. */
static bool axis_of(const Onnx__NodeProto *n, int64_t opset, int32_t rank, int64_t *axis) {
    const Onnx__AttributeProto *a = graph_attr(n, "axis");
    if (!a && opset >= 4) return false;
    *axis = a ? a->i : 1;
    if (*axis < 0 && rank < 0) return false;
    if (*axis < 0) *axis += rank;
    return true;
}

/* The Concat writing value in, when Concat node (axis k, of rank rank) reads
** it and can splice it in; *why says why not when it reads a Concat it
** leaves. */
static const Onnx__NodeProto *splice_of(graph *g, int32_t node, const char *in, int64_t opset,
                                        int32_t rank, int64_t k, int32_t *inner,
                                        const char **why) {
    const Onnx__NodeProto *p = rw_producer(g, in, inner);
    int32_t sole;
    int64_t pk;
    *why = NULL;
    if (!p || op_of(p) != OP_Concat || !p->n_output) return NULL;
    if (!rw_sole_consumer(g, in, &sole) || sole != node)
        *why = "reads a Concat whose output is read elsewhere too (a node or a graph output): "
               "splicing it in would remove nothing";
    else if (!axis_of(p, opset, rank, &pk) || k < 0)
        *why = "reads a Concat whose axis cannot be compared with its own (absent, or negative "
               "with an unknown rank)";
    else if (pk != k)
        *why = "reads a Concat on another axis: its pieces would be laid out otherwise";
    return *why ? NULL : p;
}

typedef struct pending {
    const char *name;
    int32_t reader; /* the Concat reading it: the outer one or one spliced in */
} pending;

typedef struct flat {
    pending *st;     /* names still to place, the next one last */
    const char **ins;
    int32_t *from;
    size_t top, len, nf, cap_st, cap_ins, cap_from;
} flat;

/* Push a Concat's inputs, its first on top. */
static bool push_inputs(flat *f, const Onnx__NodeProto *c, int32_t reader) {
    for (size_t i = c->n_input; i-- > 0;) {
        pending *st = rw_room(f->st, &f->cap_st, f->top, sizeof *st);
        if (!st) return false;
        f->st = st;
        f->st[f->top++] = (pending){c->input[i], reader};
    }
    return true;
}

/*
** Concat node with its spliceable Concats flattened into one list of inputs
** (f->ins), in order, depth first (a spliced Concat's own spliceable inputs
** spliced too). f->from lists the Concats spliced, each after the one that
** read it.
*/
static int flatten(pass_ctx *pc, graph *g, int32_t node, int64_t opset, int32_t rank, int64_t k,
                   flat *f) {
    bool ok = push_inputs(f, graph_node(g, node), node);
    while (ok && f->top) {
        pending e = f->st[--f->top];
        int32_t inner;
        const char *why;
        const Onnx__NodeProto *p = splice_of(g, e.reader, e.name, opset, rank, k, &inner, &why);
        if (why) pass_skip(pc, g, e.reader, "%s", why);
        if (!p) {
            const char **ins = rw_room(f->ins, &f->cap_ins, f->len, sizeof *ins);
            if ((ok = ins != NULL)) {
                f->ins = ins;
                f->ins[f->len++] = e.name;
            }
            continue;
        }
        int32_t *from = rw_room(f->from, &f->cap_from, f->nf, sizeof *from);
        if ((ok = from != NULL)) {
            f->from = from;
            f->from[f->nf++] = inner;
            ok = push_inputs(f, p, inner);
        }
    }
    return ok ? TILEOPT_OK : err_set(pc->err, TILEOPT_NOMEM, "out of memory");
}

/* The axis Concat node is on, from the rank of its output (-1 when it cannot
** be compared). */
static int64_t concat_axis(graph *g, const Onnx__NodeProto *n, int64_t opset, int32_t *rank) {
    int64_t k;
    *rank = rw_rank(g, n->output[0]);
    return axis_of(n, opset, *rank, &k) ? k : -1;
}

static int concats_rule(pass_ctx *pc, graph *g, int32_t node) {
    Onnx__NodeProto *n = graph_node(g, node);
    if (op_of(n) != OP_Concat || !n->n_output) return TILEOPT_OK;
    int64_t opset = graph_opset(pc->model, "");
    int32_t rank, reader, inner, outer_rank;
    const char *why;
    /* a Concat the one reading it will splice in waits for it: each list of
    ** a chain is then written once, by the outermost, and not once a link */
    const Onnx__NodeProto *c = rw_sole_consumer(g, n->output[0], &reader);
    if (c && op_of(c) == OP_Concat) {
        int64_t ck = concat_axis(g, c, opset, &outer_rank);
        if (splice_of(g, reader, n->output[0], opset, outer_rank, ck, &inner, &why))
            return TILEOPT_OK;
    }
    int64_t k = concat_axis(g, n, opset, &rank);
    flat f = {0};
    int rc = flatten(pc, g, node, opset, rank, k, &f);
    for (size_t i = 0; !rc && f.nf && i < f.len; i++)
        if ((rc = graph_node_set_input(g, node, i, f.ins[i])))
            rc = err_set(pc->err, rc, "out of memory");
    if (!rc && f.nf) pc->changed = true;
    /* each after the one that read it, which is gone by then; one read in two
    ** slots is listed twice and goes once */
    for (size_t i = 0; !rc && i < f.nf; i++) {
        if (graph_node_removed(g, f.from[i])) continue;
        json_w *act = pass_action(pc, g, node, "rewritten");
        if (act) {
            json_put_str(act, "rule", "reads the inputs of a Concat before it, on its axis");
            json_put_str(act, "from", graph_node_id(g, f.from[i]));
        }
        rw_drop_unread(pc, g, f.from[i], "spliced into the Concat after it");
    }
    free(f.st);
    free(f.ins);
    free(f.from);
    return rc;
}

int pass_fuse_consecutive_concats(pass_ctx *pc) {
    return rw_walk(pc, concats_rule);
}

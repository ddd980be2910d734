/*
** The evaluator: one node (eval_node, also used by the fold pass) or a whole
** graph (eval_graph), with If and Loop subgraphs.
**
** A frame holds the tensors of one graph being run, one slot per index entry.
** Subgraph frames chain to the frame of the graph that holds their node, so a
** name a subgraph reads from an outer scope resolves through the index's outer
** links to the enclosing frame's slot. A value is freed after its last use in
** its own graph; a use inside a subgraph counts as a use by the node holding
** it (the index records those with input slot -1).
*/
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"

struct eval_scope {
    graph *g;
    tensor **vals;           /* per index entry of g */
    eval_scope *parent;
    const eval_limits *lim;
    uint64_t *live;          /* bytes held by live tensors, shared by all frames */
    uint32_t depth;
};

/* ------------------------------------------------------------ dispatch */

static bool default_domain(const Onnx__NodeProto *n) {
    return !n->domain || !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0;
}

/* The kernel for op at opset: the entry with the highest since <= opset. */
static const kernel_def *find_kernel(const char *op, int64_t opset) {
    static const struct {
        const kernel_def *defs;
        const size_t *count;
    } tables[] = {
        {kernel_table_elementwise, &kernel_table_elementwise_count},
        {kernel_table_shape, &kernel_table_shape_count},
    };
    const kernel_def *best = NULL;
    if (!op) return NULL;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (size_t i = 0; i < *tables[t].count; i++) {
            const kernel_def *k = &tables[t].defs[i];
            if (k->since <= opset && strcmp(k->op, op) == 0 &&
                (!best || k->since > best->since))
                best = k;
        }
    return best;
}

/* Control-flow ops the evaluator runs itself, with their first opset. */
static const struct {
    const char *op;
    int32_t since;
} control_ops[] = {{"If", 1}, {"Loop", 1}};
#define CONTROL_OPS 2
_Static_assert(sizeof control_ops / sizeof control_ops[0] == CONTROL_OPS, "control_ops count");

static bool is_control(const char *op, int64_t opset) {
    for (size_t i = 0; i < CONTROL_OPS; i++)
        if (op && strcmp(op, control_ops[i].op) == 0 && opset >= control_ops[i].since)
            return true;
    return false;
}

bool eval_supports(const char *op_type, int64_t opset) {
    return is_control(op_type, opset) || find_kernel(op_type, opset) != NULL;
}

/* ------------------------------------------------------------ accounting */

/* Bytes of storage a tensor keeps alive: the span its layout covers (0 when the
** data is borrowed from the model). Views sharing a buffer are counted once
** each, which errs on the safe side. */
static uint64_t storage_bytes(const tensor *t) {
    if (!t || !t->buf) return 0;
    const dtype_info *d = dtype_get(t->elem);
    uint64_t span = d ? d->size : 1;
    for (int32_t i = 0; i < t->vrank; i++) {
        if (t->vdims[i] == 0) return 0;
        int64_t s = t->vstrides[i] < 0 ? -t->vstrides[i] : t->vstrides[i];
        span += (uint64_t)(t->vdims[i] - 1) * (uint64_t)s;
    }
    return span;
}

static int account(eval_scope *f, const tensor *t, const char *what, errbuf *err) {
    uint64_t b = storage_bytes(t);
    *f->live += b;
    if (f->lim->max_total_bytes && *f->live > f->lim->max_total_bytes)
        return err_set(err, TILEOPT_LIMIT,
                       "%s: live tensors take %" PRIu64 " bytes, over the limit %" PRIu64,
                       what, *f->live, f->lim->max_total_bytes);
    return TILEOPT_OK;
}

static void release(eval_scope *f, tensor **slot) {
    if (!*slot) return;
    uint64_t b = storage_bytes(*slot);
    *f->live = *f->live >= b ? *f->live - b : 0;
    tensor_free(*slot);
    *slot = NULL;
}

/* ------------------------------------------------------------ frames */

static int frame_open(eval_scope *f, graph *g, eval_scope *parent, const eval_limits *lim,
                      uint64_t *live, errbuf *err) {
    memset(f, 0, sizeof *f);
    f->g = g;
    f->parent = parent;
    f->lim = lim;
    f->live = live;
    f->depth = parent ? parent->depth + 1 : 0;
    if (lim->max_depth && f->depth > lim->max_depth)
        return err_set(err, TILEOPT_LIMIT, "subgraphs nest deeper than the limit %" PRIu32,
                       lim->max_depth);
    f->vals = calloc(g->n_values ? g->n_values : 1, sizeof *f->vals);
    if (!f->vals) return err_set(err, TILEOPT_NOMEM, "out of memory");
    return TILEOPT_OK;
}

static void frame_close(eval_scope *f) {
    if (!f->vals) return;
    for (uint32_t i = 0; i < f->g->n_values; i++) release(f, &f->vals[i]);
    free(f->vals);
    f->vals = NULL;
}

/*
** The tensor a name stands for, seen from frame f (borrowed: the frame keeps
** it). Initializers are converted on first use. Outer-scope names follow the
** index's links to the enclosing frames.
*/
static int frame_get(eval_scope *f, const char *name, tensor **out, errbuf *err) {
    graph_value *v = graph_find(f->g, name);
    while (f) {
        if (v && graph_value_defined(v)) {
            size_t idx = (size_t)(v - f->g->values);
            if (f->vals[idx]) {
                *out = f->vals[idx];
                return TILEOPT_OK;
            }
            if (v->initializer >= 0) {
                tensor *t = NULL;
                int rc = tensor_from_proto(f->g->model, f->g->pb->initializer[v->initializer],
                                           f->lim, &t, err);
                if (rc) return err_prefix(err, "initializer '%s': ", name);
                f->vals[idx] = t;
                *out = t;
                return account(f, t, name, err);
            }
            return err_set(err, TILEOPT_INVALID, "value '%s' is not available", name);
        }
        /* Not defined here: follow the outer link, or look the name up one
        ** scope out. */
        graph *og = v && v->outer >= 0 ? v->outer_graph : NULL;
        eval_scope *p = f->parent;
        if (og) {
            while (p && p->g != og) p = p->parent;
            if (p) {
                f = p;
                v = &og->values[v->outer];
                continue;
            }
        }
        f = f->parent;
        v = f ? graph_find(f->g, name) : NULL;
    }
    return err_set(err, TILEOPT_INVALID, "value '%s' is not available in this scope", name);
}

static int run_frame(eval_scope *f, tensor *const *inputs, size_t n_inputs, tensor **outs,
                     size_t n_outs, errbuf *err);

/* ------------------------------------------------------------ If, Loop */

static graph *branch(graph *g, int32_t node, const char *attr) {
    const Onnx__AttributeProto *a = graph_attr(graph_node(g, node), attr);
    if (!a || !a->g) return NULL;
    for (graph *s = graph_node_subgraphs(g, node); s; s = s->next_sibling)
        if (s->pb == a->g) return s;
    return NULL;
}

static int read_bool(tensor *t, const char *what, const eval_limits *lim, bool *v,
                     errbuf *err) {
    if (t->elem != DT_BOOL || tensor_numel(t) != 1)
        return err_set(err, TILEOPT_INVALID, "%s must be a single bool, got %s with %" PRIu64
                       " elements", what, dtype_name(t->elem), tensor_numel(t));
    tensor *c = NULL;
    int rc = tensor_contiguous(t, lim, &c, err);
    if (rc) return rc;
    *v = c->data[0] != 0;
    tensor_free(c);
    return TILEOPT_OK;
}

/* Runs subgraph sg in a frame below parent (a temporary root when NULL). */
static int run_sub(graph *sg, eval_scope *parent, const eval_limits *lim,
                   tensor *const *in, size_t n_in, tensor **outs, size_t n_outs,
                   errbuf *err) {
    uint64_t own_live = 0;
    eval_scope f;
    int rc = frame_open(&f, sg, parent, lim, parent ? parent->live : &own_live, err);
    if (!rc) rc = run_frame(&f, in, n_in, outs, n_outs, err);
    frame_close(&f);
    return rc;
}

static int exec_if(graph *g, int32_t node, tensor *const *in, size_t n_in, tensor **out,
                   size_t n_out, const eval_limits *lim, eval_scope *scope, errbuf *err) {
    if (n_in < 1 || !in[0]) return err_set(err, TILEOPT_INVALID, "input cond is missing");
    bool c;
    int rc = read_bool(in[0], "cond", lim, &c, err);
    if (rc) return rc;
    const char *attr = c ? "then_branch" : "else_branch";
    graph *sg = branch(g, node, attr);
    if (!sg) return err_set(err, TILEOPT_INVALID, "attribute %s is missing", attr);
    if (sg->pb->n_output != n_out)
        return err_set(err, TILEOPT_INVALID, "%s has %zu outputs, the node %zu", attr,
                       sg->pb->n_output, n_out);
    rc = run_sub(sg, scope, lim, NULL, 0, out, n_out, err);
    return rc ? err_prefix(err, "%s: ", attr) : TILEOPT_OK;
}

static int new_scalar(int32_t elem, const void *v, size_t size, const eval_limits *lim,
                      tensor **out, errbuf *err) {
    int rc = tensor_new(elem, NULL, 0, lim, out, err);
    if (!rc) memcpy((*out)->data, v, size);
    return rc;
}

/* Scan outputs of a Loop: the per-iteration values stacked on a new axis 0. */
static int stack(graph *body, size_t out_index, tensor **items, int64_t n,
                 const eval_limits *lim, tensor **out, errbuf *err) {
    int64_t dims[TENSOR_MAX_RANK];
    int32_t rank = 1, elem;
    dims[0] = n;
    if (n == 0) {
        /* No iteration ran: the type, and the shape where static, come from the
        ** body's declaration. */
        graph_value *v = graph_find(body, body->pb->output[out_index]->name);
        elem = v && v->type.elem ? v->type.elem : DT_FLOAT;
        if (v && graph_type_static(&v->type) && v->type.rank < TENSOR_MAX_RANK) {
            for (int32_t i = 0; i < v->type.rank; i++) dims[1 + i] = v->type.dims[i];
            rank += v->type.rank;
        }
        return tensor_new(elem, dims, rank, lim, out, err);
    }
    const tensor *t0 = items[0];
    if (t0->rank + 1 > TENSOR_MAX_RANK)
        return err_set(err, TILEOPT_LIMIT, "scan output rank exceeds %d", TENSOR_MAX_RANK);
    elem = t0->elem;
    for (int32_t i = 0; i < t0->rank; i++) dims[1 + i] = t0->dims[i];
    rank += t0->rank;
    for (int64_t k = 1; k < n; k++) {
        const tensor *t = items[k];
        if (t->elem != elem || t->rank != t0->rank ||
            memcmp(t->dims, t0->dims, (size_t)t0->rank * sizeof *t->dims) != 0)
            return err_set(err, TILEOPT_INVALID,
                           "scan output %zu changes type or shape at iteration %" PRId64,
                           out_index, k);
    }
    tensor *o = NULL;
    int rc = tensor_new(elem, dims, rank, lim, &o, err);
    if (rc) return rc;
    size_t blk = (size_t)tensor_nbytes(t0);
    for (int64_t k = 0; k < n && !rc; k++) {
        tensor *c = NULL;
        rc = tensor_contiguous(items[k], lim, &c, err);
        if (!rc && blk) memcpy(o->data + (size_t)k * blk, c->data, blk);
        if (!rc && !tensor_keep(o, c)) rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        tensor_free(c);
    }
    if (rc) {
        tensor_free(o);
        return rc;
    }
    *out = o;
    return TILEOPT_OK;
}

static int exec_loop(graph *g, int32_t node, tensor *const *in, size_t n_in, tensor **out,
                     size_t n_out, const eval_limits *lim, eval_scope *scope, errbuf *err) {
    graph *body = branch(g, node, "body");
    if (!body) return err_set(err, TILEOPT_INVALID, "attribute body is missing");
    if (n_in < 2) return err_set(err, TILEOPT_INVALID, "needs inputs M and cond (may be empty)");
    size_t nc = n_in - 2;
    if (body->pb->n_input != nc + 2)
        return err_set(err, TILEOPT_INVALID, "body has %zu inputs, expected %zu",
                       body->pb->n_input, nc + 2);
    if (body->pb->n_output < nc + 1)
        return err_set(err, TILEOPT_INVALID, "body has %zu outputs, expected at least %zu",
                       body->pb->n_output, nc + 1);
    size_t ns = body->pb->n_output - 1 - nc;
    if (n_out != nc + ns)
        return err_set(err, TILEOPT_INVALID, "has %zu outputs, the body gives %zu", n_out,
                       nc + ns);
    for (size_t i = 0; i < nc; i++)
        if (!in[2 + i])
            return err_set(err, TILEOPT_INVALID, "loop-carried input %zu is missing", i);
    int64_t trips = INT64_MAX;
    bool cond = true;
    int rc = TILEOPT_OK;
    if (!in[0] && !in[1])
        return err_set(err, TILEOPT_UNSUPPORTED, "a Loop without M and cond never ends");
    if (in[0]) {
        tensor *c = NULL;
        if (in[0]->elem != DT_INT64 || tensor_numel(in[0]) != 1)
            return err_set(err, TILEOPT_INVALID, "M must be a single int64");
        rc = tensor_contiguous(in[0], lim, &c, err);
        if (rc) return rc;
        memcpy(&trips, c->data, sizeof trips);
        tensor_free(c);
    }
    if (in[1]) {
        rc = read_bool(in[1], "cond", lim, &cond, err);
        if (rc) return rc;
    }
    size_t nb_in = nc + 2, nb_out = 1 + nc + ns;
    tensor **carried = calloc(nc ? nc : 1, sizeof *carried);
    tensor **bin = calloc(nb_in, sizeof *bin);
    tensor **bout = calloc(nb_out, sizeof *bout);
    tensor ***scans = calloc(ns ? ns : 1, sizeof *scans);
    int64_t n_iter = 0, cap = 0;
    if (!carried || !bin || !bout || !scans) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < nc; i++) carried[i] = tensor_ref(in[2 + i]);
    for (int64_t it = 0; it < trips && cond; it++) {
        rc = new_scalar(DT_INT64, &it, sizeof it, lim, &bin[0], err);
        uint8_t cb = 1;
        if (!rc) rc = new_scalar(DT_BOOL, &cb, 1, lim, &bin[1], err);
        if (rc) goto done;
        for (size_t i = 0; i < nc; i++) bin[2 + i] = carried[i];
        rc = run_sub(body, scope, lim, bin, nb_in, bout, nb_out, err);
        tensor_free(bin[0]);
        tensor_free(bin[1]);
        bin[0] = bin[1] = NULL;
        if (rc) {
            err_prefix(err, "iteration %" PRId64 ": ", it);
            goto done;
        }
        rc = read_bool(bout[0], "body output cond", lim, &cond, err);
        tensor_free(bout[0]);
        bout[0] = NULL;
        for (size_t i = 0; i < nc; i++) {
            tensor_free(carried[i]);
            carried[i] = bout[1 + i];
            bout[1 + i] = NULL;
        }
        if (ns && n_iter == cap) {
            int64_t ncap = cap ? cap * 2 : 8;
            for (size_t k = 0; k < ns; k++) {
                tensor **s = realloc(scans[k], (size_t)ncap * sizeof *s);
                if (!s) {
                    rc = err_set(err, TILEOPT_NOMEM, "out of memory");
                    break;
                }
                scans[k] = s;
            }
            cap = ncap;
        }
        for (size_t k = 0; k < ns; k++) {
            if (!rc) scans[k][n_iter] = bout[1 + nc + k];
            else tensor_free(bout[1 + nc + k]);
            bout[1 + nc + k] = NULL;
        }
        if (rc) goto done;
        n_iter++;
        /* scan items stay alive until the end: count them */
        for (size_t k = 0; k < ns && !rc; k++)
            if (scope) rc = account(scope, scans[k][n_iter - 1], "Loop scan output", err);
        if (rc) goto done;
    }
    for (size_t k = 0; k < ns && !rc; k++)
        rc = stack(body, 1 + nc + k, scans[k], n_iter, lim, &out[nc + k], err);
    if (rc) goto done;
    for (size_t i = 0; i < nc; i++) {
        out[i] = carried[i];
        carried[i] = NULL;
    }
done:
    if (carried)
        for (size_t i = 0; i < nc; i++) tensor_free(carried[i]);
    if (scans)
        for (size_t k = 0; k < ns; k++) {
            for (int64_t i = 0; i < n_iter; i++) {
                if (scope) {
                    uint64_t b = storage_bytes(scans[k][i]);
                    *scope->live = *scope->live >= b ? *scope->live - b : 0;
                }
                tensor_free(scans[k][i]);
            }
            free(scans[k]);
        }
    free(scans);
    free(carried);
    free(bin);
    if (bout)
        for (size_t i = 0; i < nb_out; i++) tensor_free(bout[i]);
    free(bout);
    if (rc)
        for (size_t i = 0; i < n_out; i++) {
            tensor_free(out[i]);
            out[i] = NULL;
        }
    return rc;
}

/* ------------------------------------------------------------ one node */

static int node_run(graph *g, int32_t node, tensor *const *inputs, size_t n_inputs,
                    tensor **outputs, size_t n_outputs, const eval_limits *lim,
                    eval_scope *scope, errbuf *err) {
    const Onnx__NodeProto *n = graph_node(g, node);
    for (size_t i = 0; i < n_outputs; i++) outputs[i] = NULL;
    if (!default_domain(n))
        return err_set(err, TILEOPT_UNSUPPORTED, "op %s:%s is not supported by the evaluator",
                       n->domain, n->op_type ? n->op_type : "?");
    int64_t opset = graph_opset(g->model, "");
    const char *op = n->op_type ? n->op_type : "";
    if (strcmp(op, "If") == 0)
        return exec_if(g, node, inputs, n_inputs, outputs, n_outputs, lim, scope, err);
    if (strcmp(op, "Loop") == 0)
        return exec_loop(g, node, inputs, n_inputs, outputs, n_outputs, lim, scope, err);
    const kernel_def *k = find_kernel(op, opset);
    if (!k)
        return err_set(err, TILEOPT_UNSUPPORTED,
                       "op %s (opset %" PRId64 ") is not supported by the evaluator", op,
                       opset);
    int rc = k->fn(n, opset, inputs, n_inputs, outputs, n_outputs, lim, err);
    if (rc) {
        for (size_t i = 0; i < n_outputs; i++) {
            tensor_free(outputs[i]);
            outputs[i] = NULL;
        }
        return rc;
    }
    /* every named output must be produced */
    for (size_t i = 0; i < n_outputs; i++) {
        const char *on = i < n->n_output ? n->output[i] : NULL;
        if (on && on[0] && !outputs[i]) {
            for (size_t j = 0; j < n_outputs; j++) {
                tensor_free(outputs[j]);
                outputs[j] = NULL;
            }
            return err_set(err, TILEOPT_UNSUPPORTED, "output %zu ('%s') is not computed", i,
                           on);
        }
    }
    return TILEOPT_OK;
}

int eval_node(graph *g, int32_t node, tensor *const *inputs, size_t n_inputs,
              tensor **outputs, size_t n_outputs, const eval_limits *lim, eval_scope *scope,
              errbuf *err) {
    eval_limits dl;
    if (!lim) {
        eval_limits_default(&dl);
        lim = &dl;
    }
    if (node < 0 || (uint32_t)node >= graph_n_nodes(g))
        return err_set(err, TILEOPT_MISUSE, "node index %" PRId32 " out of range", node);
    const Onnx__NodeProto *n = graph_node(g, node);
    int rc;
    if (!scope && graph_node_subgraphs(g, node)) {
        /* A pass evaluating a control-flow node: a frame for g with nothing in
        ** it, so the subgraph reads only constants from outside. */
        uint64_t live = 0;
        eval_scope f;
        rc = frame_open(&f, g, NULL, lim, &live, err);
        if (!rc) {
            f.depth = g->depth;
            rc = node_run(g, node, inputs, n_inputs, outputs, n_outputs, lim, &f, err);
        }
        frame_close(&f);
    } else {
        rc = node_run(g, node, inputs, n_inputs, outputs, n_outputs, lim, scope, err);
    }
    if (rc)
        return err_prefix(err, "node %s (%s): ", graph_node_id(g, node),
                          n->op_type ? n->op_type : "?");
    return TILEOPT_OK;
}

/* ------------------------------------------------------------ graphs */

/* An input must have the declared element type: kernels dispatch on it. Its
** shape may differ from the declaration (ONNX's own test data does that);
** evaluation follows the actual shape. */
static int check_input(const graph_value *v, const tensor *t, errbuf *err) {
    if (v->type.elem && v->type.elem != t->elem)
        return err_set(err, TILEOPT_INVALID, "input '%s' is %s, the model expects %s",
                       v->name, dtype_name(t->elem), dtype_name(v->type.elem));
    return TILEOPT_OK;
}

/*
** Run the graph of frame f: bind inputs (graph inputs without an initializer,
** in order), run nodes in topological order freeing each value after its last
** use, and hand out new references to the graph outputs.
*/
static int run_frame(eval_scope *f, tensor *const *inputs, size_t n_inputs, tensor **outs,
                     size_t n_outs, errbuf *err) {
    graph *g = f->g;
    Onnx__GraphProto *pb = g->pb;
    int rc = TILEOPT_OK;
    size_t k = 0;
    for (size_t i = 0; i < pb->n_input; i++) {
        graph_value *v = graph_find(g, pb->input[i]->name);
        if (!v) return err_set(err, TILEOPT_INVALID, "graph input %zu is not indexed", i);
        if (v->initializer >= 0) continue;
        if (k >= n_inputs) {
            k++;
            continue;
        }
        if (!inputs[k]) return err_set(err, TILEOPT_INVALID, "input '%s' is missing", v->name);
        rc = check_input(v, inputs[k], err);
        if (rc) return rc;
        size_t idx = (size_t)(v - g->values);
        release(f, &f->vals[idx]);
        f->vals[idx] = tensor_ref(inputs[k]);
        if (!f->vals[idx]) return err_set(err, TILEOPT_NOMEM, "out of memory");
        rc = account(f, f->vals[idx], v->name, err);
        if (rc) return rc;
        k++;
    }
    if (k != n_inputs)
        return err_set(err, TILEOPT_INVALID, "the graph takes %zu inputs, got %zu", k, n_inputs);
    if (pb->n_output != n_outs)
        return err_set(err, TILEOPT_INVALID, "the graph has %zu outputs, %zu expected",
                       pb->n_output, n_outs);

    uint32_t nn = graph_n_nodes(g), count = 0;
    int32_t *order = malloc((nn ? nn : 1) * sizeof *order);
    int32_t *pos = malloc((nn ? nn : 1) * sizeof *pos);
    /* values to free after each position: a list per position */
    int32_t *head = malloc((nn ? nn : 1) * sizeof *head);
    int32_t *next = malloc((g->n_values ? g->n_values : 1) * sizeof *next);
    tensor **nin = NULL, **nout = NULL;
    if (!order || !pos || !head || !next) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    rc = graph_toposort(g, order, &count, err);
    if (rc) goto done;
    for (uint32_t i = 0; i < nn; i++) pos[i] = -1;
    for (uint32_t p = 0; p < count; p++) {
        pos[order[p]] = (int32_t)p;
        head[p] = -1;
    }
    size_t max_io = 1;
    for (uint32_t p = 0; p < count; p++) {
        const Onnx__NodeProto *n = graph_node(g, order[p]);
        if (n->n_input > max_io) max_io = n->n_input;
        if (n->n_output > max_io) max_io = n->n_output;
    }
    for (uint32_t vi = 0; vi < g->n_values; vi++) {
        const graph_value *v = &g->values[vi];
        next[vi] = -1;
        if (v->output >= 0 || !graph_value_defined(v)) continue;
        int32_t last = v->producer >= 0 ? pos[v->producer] : -1;
        for (uint32_t u = 0; u < v->n_uses; u++) {
            int32_t p = v->uses[u].node >= 0 && (uint32_t)v->uses[u].node < nn
                            ? pos[v->uses[u].node]
                            : -1;
            if (p > last) last = p;
        }
        if (last < 0) continue;
        next[vi] = head[last];
        head[last] = (int32_t)vi;
    }
    nin = calloc(max_io, sizeof *nin);
    nout = calloc(max_io, sizeof *nout);
    if (!nin || !nout) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    for (uint32_t p = 0; p < count; p++) {
        int32_t ni = order[p];
        const Onnx__NodeProto *n = graph_node(g, ni);
        for (size_t i = 0; i < n->n_input; i++) {
            const char *name = graph_node_input(n, i);
            nin[i] = NULL;
            if (!name) continue;
            rc = frame_get(f, name, &nin[i], err);
            if (rc) {
                err_prefix(err, "node %s (%s): ", graph_node_id(g, ni),
                           n->op_type ? n->op_type : "?");
                goto done;
            }
        }
        rc = eval_node(g, ni, nin, n->n_input, nout, n->n_output, f->lim, f, err);
        if (rc) goto done;
        for (size_t o = 0; o < n->n_output; o++) {
            const char *on = n->output[o];
            graph_value *v = on && on[0] ? graph_find(g, on) : NULL;
            if (!v) {
                tensor_free(nout[o]);
                nout[o] = NULL;
                continue;
            }
            size_t idx = (size_t)(v - g->values);
            release(f, &f->vals[idx]);
            f->vals[idx] = nout[o];
            nout[o] = NULL;
            if (!rc) rc = account(f, f->vals[idx], on, err);
        }
        if (rc) {
            err_prefix(err, "node %s (%s): ", graph_node_id(g, ni),
                       n->op_type ? n->op_type : "?");
            goto done;
        }
        for (int32_t vi = head[p]; vi >= 0; vi = next[vi]) release(f, &f->vals[vi]);
    }
    for (size_t o = 0; o < n_outs; o++) {
        tensor *t = NULL;
        rc = frame_get(f, pb->output[o]->name, &t, err);
        if (rc) {
            err_prefix(err, "graph output %zu: ", o);
            for (size_t j = 0; j < o; j++) {
                tensor_free(outs[j]);
                outs[j] = NULL;
            }
            goto done;
        }
        outs[o] = tensor_ref(t);
    }
done:
    free(order);
    free(pos);
    free(head);
    free(next);
    free(nin);
    free(nout);
    return rc;
}

int eval_graph(graph_model *m, tensor *const *inputs, size_t n_inputs, tensor ***outputs,
               size_t *n_outputs, const eval_limits *lim, errbuf *err) {
    *outputs = NULL;
    *n_outputs = 0;
    eval_limits dl;
    if (!lim) {
        eval_limits_default(&dl);
        lim = &dl;
    }
    if (!m || !m->main) return err_set(err, TILEOPT_INVALID, "the model has no graph");
    size_t no = m->main->pb->n_output;
    tensor **outs = calloc(no ? no : 1, sizeof *outs);
    if (!outs) return err_set(err, TILEOPT_NOMEM, "out of memory");
    uint64_t live = 0;
    eval_scope f;
    int rc = frame_open(&f, m->main, NULL, lim, &live, err);
    if (!rc) rc = run_frame(&f, inputs, n_inputs, outs, no, err);
    frame_close(&f);
    /* Outputs leave contiguous: callers compare and serialize them. */
    for (size_t i = 0; i < no && !rc; i++) {
        tensor *c = NULL;
        rc = tensor_contiguous(outs[i], lim, &c, err);
        if (!rc) {
            tensor_free(outs[i]);
            outs[i] = c;
        }
    }
    if (rc) {
        for (size_t i = 0; i < no; i++) tensor_free(outs[i]);
        free(outs);
        return rc;
    }
    *outputs = outs;
    *n_outputs = no;
    return TILEOPT_OK;
}

/* ------------------------------------------------------------ missing ops */

typedef struct missing {
    char *buf;
    size_t cap, len, count;
    const char **seen;       /* op names found missing so far */
    const char **seen_dom;
    size_t n_seen, cap_seen;
} missing;

static void note_missing(missing *ms, const Onnx__NodeProto *n) {
    const char *op = n->op_type ? n->op_type : "?";
    const char *dom = default_domain(n) ? "" : n->domain;
    for (size_t i = 0; i < ms->n_seen; i++)
        if (strcmp(ms->seen[i], op) == 0 && strcmp(ms->seen_dom[i], dom) == 0) return;
    if (ms->n_seen == ms->cap_seen) {
        size_t cap = ms->cap_seen ? ms->cap_seen * 2 : 16;
        const char **s = realloc(ms->seen, cap * sizeof *s);
        if (!s) return;
        ms->seen = s;
        const char **d = realloc(ms->seen_dom, cap * sizeof *d);
        if (!d) return;
        ms->seen_dom = d;
        ms->cap_seen = cap;
    }
    ms->seen[ms->n_seen] = op;
    ms->seen_dom[ms->n_seen++] = dom;
    ms->count++;
    if (ms->cap && ms->len < ms->cap) {
        int w = snprintf(ms->buf + ms->len, ms->cap - ms->len, "%s%s%s%s",
                         ms->count > 1 ? "," : "", dom, dom[0] ? ":" : "", op);
        if (w > 0) ms->len += (size_t)w < ms->cap - ms->len ? (size_t)w : ms->cap - ms->len - 1;
    }
}

static void scan_missing(graph *g, int64_t opset, missing *ms) {
    for (uint32_t i = 0; i < graph_n_nodes(g); i++) {
        if (graph_node_removed(g, (int32_t)i)) continue;
        const Onnx__NodeProto *n = graph_node(g, (int32_t)i);
        if (!default_domain(n) || !eval_supports(n->op_type, opset)) note_missing(ms, n);
        for (graph *s = graph_node_subgraphs(g, (int32_t)i); s; s = s->next_sibling)
            scan_missing(s, opset, ms);
    }
}

size_t eval_missing_ops(graph_model *m, char *buf, size_t cap) {
    missing ms = {buf, cap, 0, 0, NULL, NULL, 0, 0};
    if (cap) buf[0] = '\0';
    if (!m || !m->main) return 0;
    scan_missing(m->main, graph_opset(m, ""), &ms);
    free(ms.seen);
    free(ms.seen_dom);
    return ms.count;
}

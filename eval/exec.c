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
#include <threads.h>

#include "eval/eval_impl.h"

/* What one evaluation has used so far, shared by all its frames. */
typedef struct eval_usage {
    uint64_t bytes;          /* held by live tensors */
    uint64_t steps;          /* nodes run and Loop iterations begun */
} eval_usage;

struct eval_scope {
    graph *g;
    tensor **vals;           /* per index entry of g */
    eval_scope *parent;
    const eval_env *env;
    eval_usage *use;
    uint32_t depth;
};

/* One unit of work against the run's budget. A per-Loop cap alone would let
** nested Loops multiply it (40 nested Loops of 2 trips, or 10^6 x 10^6); one
** count for the whole run bounds them all. */
static int steps_add(eval_scope *f, uint64_t n, errbuf *err) {
    if (f->env->lim.max_eval_steps && (f->use->steps += n) > f->env->lim.max_eval_steps)
        return err_set(err, TILEOPT_LIMIT,
                       "the evaluation ran more than %" PRIu64 " nodes and Loop iterations "
                       "(max-eval-steps)", f->env->lim.max_eval_steps);
    return TILEOPT_OK;
}
static int step(eval_scope *f, errbuf *err) { return steps_add(f, 1, err); }

/* A node that makes a sequence copies its item pointers: one more step per
** this many, so a Loop growing a sequence by an item per iteration (work
** quadratic in its length) stays within the run's budget too. */
#define ITEMS_PER_STEP 64
static uint64_t item_steps(const tensor *t) {
    return t && t->kind != EVAL_TENSOR ? t->n_items / ITEMS_PER_STEP : 0;
}

/* ------------------------------------------------------------ dispatch */

static const struct {
    const kernel_def *defs;
    const size_t *count;
} kernel_tables[] = {
    {kernel_table_elementwise, &kernel_table_elementwise_count},
    {kernel_table_shape, &kernel_table_shape_count},
    {kernel_table_reduce, &kernel_table_reduce_count},
    {kernel_table_linalg, &kernel_table_linalg_count},
    {kernel_table_conv, &kernel_table_conv_count},
    {kernel_table_pool, &kernel_table_pool_count},
    {kernel_table_norm, &kernel_table_norm_count},
    {kernel_table_pad, &kernel_table_pad_count},
    {kernel_table_rnn, &kernel_table_rnn_count},
    {kernel_table_resize, &kernel_table_resize_count},
    {kernel_table_index, &kernel_table_index_count},
    {kernel_table_detect, &kernel_table_detect_count},
    {kernel_table_quant, &kernel_table_quant_count},
    {kernel_table_loss, &kernel_table_loss_count},
    {kernel_table_signal, &kernel_table_signal_count},
    {kernel_table_string, &kernel_table_string_count},
    {kernel_table_random, &kernel_table_random_count},
    {kernel_table_sequence, &kernel_table_sequence_count},
};

/* Every kernel grouped by op, built once: dispatch runs for every node fold
** looks at and every node a run executes, and a scan of all the tables each
** time cost as much as the tables are long. kernel_first[op] .. [op + 1] are
** op's entries in kernel_by_op; NULL when the build ran out of memory (the
** scan then serves). */
static const kernel_def **kernel_by_op;
static uint32_t kernel_first[OP_COUNT + 1];
static once_flag kernel_once = ONCE_FLAG_INIT;

static void kernel_index_build(void) {
    size_t total = 0;
    for (size_t t = 0; t < countof(kernel_tables); t++) total += *kernel_tables[t].count;
    const kernel_def **by = malloc((total ? total : 1) * sizeof *by);
    if (!by) return;
    uint32_t fill[OP_COUNT];
    memset(kernel_first, 0, sizeof kernel_first);
    for (size_t t = 0; t < countof(kernel_tables); t++)
        for (size_t i = 0; i < *kernel_tables[t].count; i++) {
            op_id op = kernel_tables[t].defs[i].op;
            if (op > OP_NONE && op < OP_COUNT) kernel_first[op + 1]++;
        }
    for (int op = 0; op < OP_COUNT; op++) kernel_first[op + 1] += kernel_first[op];
    memcpy(fill, kernel_first, sizeof fill);
    for (size_t t = 0; t < countof(kernel_tables); t++)
        for (size_t i = 0; i < *kernel_tables[t].count; i++) {
            const kernel_def *k = &kernel_tables[t].defs[i];
            if (k->op > OP_NONE && k->op < OP_COUNT) by[fill[k->op]++] = k;
        }
    kernel_by_op = by;
}

/* The kernel for op at opset: the entry with the highest since <= opset. */
static const kernel_def *find_kernel(op_id op, int64_t opset) {
    const kernel_def *best = NULL;
    if (op <= OP_NONE || op >= OP_COUNT) return NULL;
    call_once(&kernel_once, kernel_index_build);
    if (kernel_by_op) {
        for (uint32_t i = kernel_first[op]; i < kernel_first[op + 1]; i++) {
            const kernel_def *k = kernel_by_op[i];
            if (k->since <= opset && (!best || k->since > best->since)) best = k;
        }
        return best;
    }
    for (size_t t = 0; t < countof(kernel_tables); t++)
        for (size_t i = 0; i < *kernel_tables[t].count; i++) {
            const kernel_def *k = &kernel_tables[t].defs[i];
            if (k->since <= opset && k->op == op &&
                (!best || k->since > best->since))
                best = k;
        }
    return best;
}

/* Control-flow ops the evaluator runs itself (from their first opset). */
static bool is_control(op_id op) {
    return op == OP_If || op == OP_Loop || op == OP_Scan || op == OP_SequenceMap;
}

/* Kernels that take sequences and optionals: those of ops_sequence.c. */
static bool takes_values(const kernel_def *k) {
    for (size_t i = 0; i < kernel_table_sequence_count; i++)
        if (k == &kernel_table_sequence[i]) return true;
    return false;
}

bool eval_supports_op(op_id op, int64_t opset) {
    return is_control(op) || find_kernel(op, opset) != NULL;
}

bool eval_supports(const char *op_type, int64_t opset) {
    return eval_supports_op(op_find(op_type), opset);
}

/* ------------------------------------------------------------ accounting */

/* Bytes of storage a value keeps alive (tensor_storage_bytes). Views sharing a
** buffer are counted once each, which errs on the safe side. */
static uint64_t storage_bytes(const tensor *t) { return tensor_storage_bytes(t); }

static int account(eval_scope *f, const tensor *t, const char *what, errbuf *err) {
    uint64_t b = storage_bytes(t);
    f->use->bytes += b;
    if (f->env->lim.max_eval_bytes && f->use->bytes > f->env->lim.max_eval_bytes)
        return err_set(err, TILEOPT_LIMIT,
                       "%s: live tensors take %" PRIu64 " bytes, over the limit %" PRIu64,
                       what, f->use->bytes, f->env->lim.max_eval_bytes);
    return TILEOPT_OK;
}

static void release(eval_scope *f, tensor **slot) {
    if (!*slot) return;
    uint64_t b = storage_bytes(*slot);
    f->use->bytes = f->use->bytes >= b ? f->use->bytes - b : 0;
    tensor_free(*slot);
    *slot = NULL;
}

/* ------------------------------------------------------------ frames */

static int frame_open(eval_scope *f, graph *g, eval_scope *parent, const eval_env *env,
                      eval_usage *use, errbuf *err) {
    memset(f, 0, sizeof *f);
    f->g = g;
    f->parent = parent;
    f->env = env;
    f->use = use;
    f->depth = parent ? parent->depth + 1 : 0;
    if (env->lim.max_depth && f->depth > env->lim.max_depth)
        return err_set(err, TILEOPT_LIMIT, "subgraphs nest deeper than the limit %" PRIu32,
                       env->lim.max_depth);
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
static int frame_get_value(eval_scope *f, graph_value *v, const char *name, tensor **out,
                           errbuf *err) {
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
                                           f->env, &t, err);
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

/*
** How to run one graph: the topological order, and per position the values
** whose last use it is (a list through next[]). Built once per run of a graph,
** and once per Loop for all its iterations.
*/
typedef struct exec_plan {
    int32_t *order;
    uint32_t count;
    int32_t *head;           /* per position: first value to free, -1 none */
    int32_t *next;           /* per value: the next one freed at the same position */
    size_t max_io;           /* most inputs or outputs of one node */
    /* index entries of each node's inputs and outputs (NULL: absent), looked up
    ** once: names can be long and a Loop body runs many times */
    graph_value **vals;
    size_t *first;           /* per position: offset of its inputs, then outputs */
    graph_value **gin, **gout; /* the graph's inputs and outputs */
    const kernel_def **kern; /* per position, NULL for If/Loop and unsupported ops */
} exec_plan;

static void plan_free(exec_plan *p) {
    free(p->order);
    free(p->head);
    free(p->next);
    free(p->vals);
    free(p->first);
    free(p->gin);
    free(p->gout);
    free(p->kern);
    memset(p, 0, sizeof *p);
}

static int plan_build(graph *g, exec_plan *p, errbuf *err) {
    memset(p, 0, sizeof *p);
    uint32_t nn = graph_n_nodes(g);
    int32_t *pos = malloc((nn ? nn : 1) * sizeof *pos);
    p->order = malloc((nn ? nn : 1) * sizeof *p->order);
    p->head = malloc((nn ? nn : 1) * sizeof *p->head);
    p->next = malloc((g->n_values ? g->n_values : 1) * sizeof *p->next);
    int rc = TILEOPT_OK;
    if (!pos || !p->order || !p->head || !p->next) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    rc = graph_toposort(g, p->order, &p->count, err);
    if (rc) goto done;
    for (uint32_t i = 0; i < nn; i++) pos[i] = -1;
    p->max_io = 1;
    for (uint32_t k = 0; k < p->count; k++) {
        pos[p->order[k]] = (int32_t)k;
        p->head[k] = -1;
        const Onnx__NodeProto *n = graph_node(g, p->order[k]);
        if (n->n_input > p->max_io) p->max_io = n->n_input;
        if (n->n_output > p->max_io) p->max_io = n->n_output;
    }
    size_t total = 0;
    p->first = malloc(((size_t)p->count + 1) * sizeof *p->first);
    if (!p->first) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    for (uint32_t k = 0; k < p->count; k++) {
        const Onnx__NodeProto *n = graph_node(g, p->order[k]);
        p->first[k] = total;
        total += n->n_input + n->n_output;
    }
    p->first[p->count] = total;
    p->vals = malloc((total ? total : 1) * sizeof *p->vals);
    if (!p->vals) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    for (uint32_t k = 0; k < p->count; k++) {
        const Onnx__NodeProto *n = graph_node(g, p->order[k]);
        graph_value **v = p->vals + p->first[k];
        for (size_t i = 0; i < n->n_input; i++) {
            const char *name = graph_node_input(n, i);
            v[i] = name ? graph_find(g, name) : NULL;
        }
        for (size_t o = 0; o < n->n_output; o++) {
            const char *on = n->output[o];
            v[n->n_input + o] = on && on[0] ? graph_find(g, on) : NULL;
        }
    }
    p->kern = malloc((p->count ? p->count : 1) * sizeof *p->kern);
    if (!p->kern) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    int64_t opset = graph_opset(g->model, "");
    for (uint32_t k = 0; k < p->count; k++) {
        const Onnx__NodeProto *n = graph_node(g, p->order[k]);
        p->kern[k] =
            find_kernel(op_of(n), opset);
    }
    p->gin = malloc((g->pb->n_input ? g->pb->n_input : 1) * sizeof *p->gin);
    p->gout = malloc((g->pb->n_output ? g->pb->n_output : 1) * sizeof *p->gout);
    if (!p->gin || !p->gout) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < g->pb->n_input; i++) p->gin[i] = graph_find(g, g->pb->input[i]->name);
    for (size_t i = 0; i < g->pb->n_output; i++)
        p->gout[i] = graph_find(g, g->pb->output[i]->name);
    for (uint32_t vi = 0; vi < g->n_values; vi++) {
        const graph_value *v = &g->values[vi];
        p->next[vi] = -1;
        if (v->output >= 0 || !graph_value_defined(v)) continue;
        int32_t last = v->producer >= 0 ? pos[v->producer] : -1;
        for (uint32_t u = 0; u < v->n_uses; u++) {
            int32_t at = v->uses[u].node >= 0 && (uint32_t)v->uses[u].node < nn
                             ? pos[v->uses[u].node]
                             : -1;
            if (at > last) last = at;
        }
        if (last < 0) continue;
        p->next[vi] = p->head[last];
        p->head[last] = (int32_t)vi;
    }
done:
    free(pos);
    if (rc) plan_free(p);
    return rc;
}

static int run_frame(eval_scope *f, const exec_plan *plan, tensor *const *inputs,
                     size_t n_inputs, tensor **outs, size_t n_outs, errbuf *err);

/* ------------------------------------------------------------ If, Loop */

static graph *branch(graph *g, int32_t node, const char *attr) {
    const Onnx__AttributeProto *a = graph_attr(graph_node(g, node), attr);
    if (!a || !a->g) return NULL;
    for (graph *s = graph_node_subgraphs(g, node); s; s = s->next_sibling)
        if (s->pb == a->g) return s;
    return NULL;
}

static int read_bool(tensor *t, const char *what, const eval_env *env, bool *v,
                     errbuf *err) {
    if (t->kind != EVAL_TENSOR)
        return err_set(err, TILEOPT_INVALID, "%s must be a single bool, got %s", what,
                       value_kind_name(t->kind));
    if (t->elem != DT_BOOL || tensor_numel(t) != 1)
        return err_set(err, TILEOPT_INVALID, "%s must be a single bool, got %s with %" PRIu64
                       " elements", what, dtype_name(t->elem), tensor_numel(t));
    tensor *c = NULL;
    int rc = tensor_contiguous(t, env, &c, err);
    if (rc) return rc;
    *v = c->data[0] != 0;
    tensor_free(c);
    return TILEOPT_OK;
}

/* Runs subgraph sg in a frame below parent (a temporary root when NULL). */
static int run_sub(graph *sg, const exec_plan *plan, eval_scope *parent,
                   const eval_env *env, tensor *const *in, size_t n_in, tensor **outs,
                   size_t n_outs, errbuf *err) {
    eval_usage own = {0, 0};
    eval_scope f;
    int rc = frame_open(&f, sg, parent, env, parent ? parent->use : &own, err);
    if (!rc) rc = run_frame(&f, plan, in, n_in, outs, n_outs, err);
    frame_close(&f);
    return rc;
}

static int exec_if(graph *g, int32_t node, tensor *const *in, size_t n_in, tensor **out,
                   size_t n_out, const eval_env *env, eval_scope *scope, errbuf *err) {
    if (n_in < 1 || !in[0]) return err_set(err, TILEOPT_INVALID, "input cond is missing");
    bool c;
    int rc = read_bool(in[0], "cond", env, &c, err);
    if (rc) return rc;
    const char *attr = c ? "then_branch" : "else_branch";
    graph *sg = branch(g, node, attr);
    if (!sg) return err_set(err, TILEOPT_INVALID, "attribute %s is missing", attr);
    if (sg->pb->n_output != n_out)
        return err_set(err, TILEOPT_INVALID, "%s has %zu outputs, the node %zu", attr,
                       sg->pb->n_output, n_out);
    rc = run_sub(sg, NULL, scope, env, NULL, 0, out, n_out, err);
    return rc ? err_prefix(err, "%s: ", attr) : TILEOPT_OK;
}

static int new_scalar(int32_t elem, const void *v, size_t size, const eval_env *env,
                      tensor **out, errbuf *err) {
    int rc = tensor_new(elem, NULL, 0, env, out, err);
    if (!rc) memcpy((*out)->data, v, size);
    return rc;
}

/*
** A scan output of a Loop: the per-iteration values stacked on a new axis 0.
** Values are appended to one growing buffer as they come, so a long loop holds
** its data and not a tensor per iteration; strings keep their tensors (the
** bytes live in them).
*/
typedef struct scan_acc {
    int32_t elem, rank;
    int64_t dims[TENSOR_MAX_RANK];
    uint8_t *bytes;
    size_t len, cap;
    tensor **items;          /* strings only */
    size_t n_items, cap_items;
} scan_acc;

static int scan_add(scan_acc *s, int64_t iter, size_t index, tensor *t, eval_scope *scope,
                    const eval_env *env, errbuf *err) {
    if (t->kind != EVAL_TENSOR)
        return err_set(err, TILEOPT_INVALID, "scan output %zu is %s, not a tensor", index,
                       value_kind_name(t->kind));
    if (iter == 0) {
        s->elem = t->elem;
        s->rank = t->rank;
        memcpy(s->dims, t->dims, (size_t)t->rank * sizeof *t->dims);
        if (t->rank + 1 > TENSOR_MAX_RANK)
            return err_set(err, TILEOPT_LIMIT, "scan output rank exceeds %d", TENSOR_MAX_RANK);
    } else if (t->elem != s->elem || t->rank != s->rank ||
               memcmp(t->dims, s->dims, (size_t)s->rank * sizeof *s->dims) != 0) {
        return err_set(err, TILEOPT_INVALID,
                       "scan output %zu changes type or shape at iteration %" PRId64, index,
                       iter);
    }
    if (t->elem == DT_STRING) {
        if (s->n_items == s->cap_items) {
            size_t cap = s->cap_items ? s->cap_items * 2 : 16;
            tensor **it = realloc(s->items, cap * sizeof *it);
            if (!it) return err_set(err, TILEOPT_NOMEM, "out of memory");
            s->items = it;
            s->cap_items = cap;
        }
        s->items[s->n_items] = tensor_ref(t);
        if (!s->items[s->n_items]) return err_set(err, TILEOPT_NOMEM, "out of memory");
        s->n_items++;
        return TILEOPT_OK;
    }
    tensor *c = NULL;
    int rc = tensor_contiguous(t, env, &c, err);
    if (rc) return rc;
    size_t nb = (size_t)tensor_nbytes(c);
    if (s->len + nb > s->cap) {
        size_t cap = s->cap ? s->cap : 256;
        while (cap < s->len + nb) {
            if (cap > SIZE_MAX / 2) {
                tensor_free(c);
                return err_set(err, TILEOPT_LIMIT, "scan output too large");
            }
            cap *= 2;
        }
        uint8_t *b = realloc(s->bytes, cap);
        if (!b) {
            tensor_free(c);
            return err_set(err, TILEOPT_NOMEM, "out of memory");
        }
        s->bytes = b;
        s->cap = cap;
    }
    if (nb) memcpy(s->bytes + s->len, c->data, nb);
    s->len += nb;
    tensor_free(c);
    if (!scope) return TILEOPT_OK;
    scope->use->bytes += nb;
    if (env->lim.max_eval_bytes && scope->use->bytes > env->lim.max_eval_bytes)
        return err_set(err, TILEOPT_LIMIT,
                       "Loop scan outputs take %zu bytes, over the limit %" PRIu64, s->len,
                       env->lim.max_eval_bytes);
    return TILEOPT_OK;
}

static void scan_free(scan_acc *s, eval_scope *scope) {
    if (scope) scope->use->bytes = scope->use->bytes >= s->len ? scope->use->bytes - s->len : 0;
    for (size_t i = 0; i < s->n_items; i++) tensor_free(s->items[i]);
    free(s->items);
    free(s->bytes);
}

static int scan_stack(scan_acc *s, graph *body, size_t out_index, int64_t n,
                      const eval_env *env, tensor **out, errbuf *err) {
    int64_t dims[TENSOR_MAX_RANK];
    int32_t rank = 1, elem = s->elem;
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
        return tensor_new(elem, dims, rank, env, out, err);
    }
    for (int32_t i = 0; i < s->rank; i++) dims[1 + i] = s->dims[i];
    rank += s->rank;
    tensor *o = NULL;
    int rc = tensor_alloc(elem, dims, rank, env, &o, err);
    if (rc) return rc;
    if (elem != DT_STRING) {
        if (s->len) memcpy(o->data, s->bytes, s->len);
    } else {
        size_t blk = 0;
        for (int64_t k = 0; k < n && !rc; k++) {
            tensor *c = NULL;
            rc = tensor_contiguous(s->items[k], env, &c, err);
            if (rc) break;
            blk = (size_t)tensor_nbytes(c);
            if (blk) memcpy(o->data + (size_t)k * blk, c->data, blk);
            if (!tensor_keep(o, c)) rc = err_set(err, TILEOPT_NOMEM, "out of memory");
            tensor_free(c);
        }
    }
    if (rc) {
        tensor_free(o);
        return rc;
    }
    *out = o;
    return TILEOPT_OK;
}

/* Loops past this many iterations stop with TILEOPT_LIMIT: a trip count computed
** from bad data (a division by zero saturated to INT64_MAX, say) must not hang
** the evaluator. */
#define EVAL_MAX_LOOP_ITERATIONS ((int64_t)1 << 20)

static int exec_loop(graph *g, int32_t node, tensor *const *in, size_t n_in, tensor **out,
                     size_t n_out, const eval_env *env, eval_scope *scope, errbuf *err) {
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
        if (in[0]->kind != EVAL_TENSOR || in[0]->elem != DT_INT64 || tensor_numel(in[0]) != 1)
            return err_set(err, TILEOPT_INVALID, "M must be a single int64");
        rc = tensor_contiguous(in[0], env, &c, err);
        if (rc) return rc;
        memcpy(&trips, c->data, sizeof trips);
        tensor_free(c);
    }
    if (in[1]) {
        rc = read_bool(in[1], "cond", env, &cond, err);
        if (rc) return rc;
    }
    size_t nb_in = nc + 2, nb_out = 1 + nc + ns;
    tensor **carried = calloc(nc ? nc : 1, sizeof *carried);
    tensor **bin = calloc(nb_in, sizeof *bin);
    tensor **bout = calloc(nb_out, sizeof *bout);
    scan_acc *scans = calloc(ns ? ns : 1, sizeof *scans);
    int64_t n_iter = 0;
    exec_plan plan = {0};
    if (!carried || !bin || !bout || !scans) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    rc = plan_build(body, &plan, err);
    if (rc) goto done;
    for (size_t i = 0; i < nc && !rc; i++)
        if (in[2 + i] && !(carried[i] = tensor_ref(in[2 + i])))
            rc = err_set(err, TILEOPT_NOMEM, "out of memory");
    if (rc) goto done;
    for (int64_t it = 0; it < trips && cond; it++) {
        if (it >= EVAL_MAX_LOOP_ITERATIONS) {
            rc = err_set(err, TILEOPT_LIMIT, "more than %" PRId64 " iterations",
                         EVAL_MAX_LOOP_ITERATIONS);
            goto done;
        }
        if (scope && (rc = step(scope, err))) goto done;
        rc = new_scalar(DT_INT64, &it, sizeof it, env, &bin[0], err);
        uint8_t cb = 1;
        if (!rc) rc = new_scalar(DT_BOOL, &cb, 1, env, &bin[1], err);
        if (rc) goto done;
        for (size_t i = 0; i < nc; i++) bin[2 + i] = carried[i];
        rc = run_sub(body, &plan, scope, env, bin, nb_in, bout, nb_out, err);
        tensor_free(bin[0]);
        tensor_free(bin[1]);
        bin[0] = bin[1] = NULL;
        if (rc) {
            err_prefix(err, "iteration %" PRId64 ": ", it);
            goto done;
        }
        rc = read_bool(bout[0], "body output cond", env, &cond, err);
        for (size_t i = 0; i < nc; i++) {
            tensor_free(carried[i]);
            carried[i] = bout[1 + i];
            bout[1 + i] = NULL;
        }
        for (size_t k = 0; k < ns && !rc; k++)
            rc = scan_add(&scans[k], n_iter, 1 + nc + k, bout[1 + nc + k], scope, env, err);
        for (size_t i = 0; i < nb_out; i++) {
            tensor_free(bout[i]);
            bout[i] = NULL;
        }
        if (rc) goto done;
        n_iter++;
    }
    for (size_t k = 0; k < ns && !rc; k++)
        rc = scan_stack(&scans[k], body, 1 + nc + k, n_iter, env, &out[nc + k], err);
    if (rc) goto done;
    for (size_t i = 0; i < nc; i++) {
        out[i] = carried[i];
        carried[i] = NULL;
    }
done:
    plan_free(&plan);
    if (carried)
        for (size_t i = 0; i < nc; i++) tensor_free(carried[i]);
    if (scans)
        for (size_t k = 0; k < ns; k++) scan_free(&scans[k], scope);
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

/* ------------------------------------------------------------------- Scan */

/* Slice idx of contiguous t along axis, without that axis. */
static int slice_axis(tensor *t, int32_t axis, int64_t idx, const eval_env *env,
                      tensor **out, errbuf *err) {
    int64_t dims[TENSOR_MAX_RANK], outer = 1, inner = 1, len = t->dims[axis];
    int32_t r = 0;
    for (int32_t i = 0; i < t->rank; i++) {
        if (i < axis) outer *= t->dims[i];
        if (i > axis) inner *= t->dims[i];
        if (i != axis) dims[r++] = t->dims[i];
    }
    tensor *o = NULL;
    int rc = tensor_alloc(t->elem, dims, r, env, &o, err);
    if (rc) return rc;
    size_t es = tensor_elem_size(t), blk = (size_t)inner * es;
    for (int64_t i = 0; i < outer && blk; i++)
        memcpy(o->data + (size_t)i * blk, t->data + (size_t)((i * len + idx) * inner) * es, blk);
    if (!tensor_keep(o, t)) {
        tensor_free(o);
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    *out = o;
    return TILEOPT_OK;
}

/* Copies s (any layout) to index idx along axis of contiguous o, whose other
** dims are s's. */
static int place_axis(tensor *o, int32_t axis, int64_t idx, tensor *s, const eval_env *env,
                      errbuf *err) {
    tensor *c = NULL;
    int rc = tensor_contiguous(s, env, &c, err);
    if (rc) return rc;
    int64_t outer = 1, inner = 1, len = o->dims[axis];
    for (int32_t i = 0; i < o->rank; i++) {
        if (i < axis) outer *= o->dims[i];
        if (i > axis) inner *= o->dims[i];
    }
    size_t es = tensor_elem_size(o), blk = (size_t)inner * es;
    for (int64_t i = 0; i < outer && blk; i++)
        memcpy(o->data + (size_t)((i * len + idx) * inner) * es, c->data + (size_t)i * blk, blk);
    if (!tensor_keep(o, c)) rc = err_set(err, TILEOPT_NOMEM, "out of memory");
    tensor_free(c);
    return rc;
}

/* The axes and directions of a Scan node (opset 9 on): per scan input and per
** scan output, an axis (negative counts from the end of that value's rank)
** and whether the scan goes backward. */
typedef struct scan_dirs {
    const Onnx__AttributeProto *in_axes, *in_dirs, *out_axes, *out_dirs;
} scan_dirs;

static int64_t attr_at(const Onnx__AttributeProto *a, size_t i) {
    return a && i < a->n_ints ? a->ints[i] : 0;
}

/* n values stacked along axis (of rank + 1 dims), entry t going to t or, going
** backward, to n - 1 - t. */
static int stack_along(tensor *const *v, int64_t n, int64_t axis, bool backward, graph *body,
                       size_t body_out, const eval_env *env, tensor **out, errbuf *err) {
    int64_t dims[TENSOR_MAX_RANK];
    int32_t rank, elem;
    for (int64_t t = 0; t < n; t++)
        if (v[t]->kind != EVAL_TENSOR)
            return err_set(err, TILEOPT_INVALID, "scan output %zu is %s, not a tensor",
                           body_out, value_kind_name(v[t]->kind));
    if (n > 0) {
        rank = v[0]->rank;
        elem = v[0]->elem;
        for (int64_t t = 1; t < n; t++)
            if (v[t]->elem != elem || v[t]->rank != rank ||
                memcmp(v[t]->dims, v[0]->dims, (size_t)rank * sizeof *dims))
                return err_set(err, TILEOPT_INVALID, "scan output %zu changes type or shape at "
                               "iteration %" PRId64, body_out, t);
        memcpy(dims, v[0]->dims, (size_t)rank * sizeof *dims);
    } else {
        /* no iteration ran: the body's declaration gives type and shape */
        graph_value *d = graph_find(body, body->pb->output[body_out]->name);
        if (!d || !d->type.elem || !graph_type_static(&d->type))
            return err_set(err, TILEOPT_UNSUPPORTED, "a scan of length 0 with scan output %zu "
                           "of undeclared shape", body_out);
        rank = d->type.rank;
        elem = d->type.elem;
        memcpy(dims, d->type.dims, (size_t)rank * sizeof *dims);
    }
    if (rank + 1 > TENSOR_MAX_RANK)
        return err_set(err, TILEOPT_LIMIT, "scan output rank exceeds %d", TENSOR_MAX_RANK);
    if (axis < 0) axis += rank + 1;
    if (axis < 0 || axis > rank)
        return err_set(err, TILEOPT_INVALID, "scan output axis outside rank %d", (int)rank + 1);
    memmove(dims + axis + 1, dims + axis, (size_t)(rank - axis) * sizeof *dims);
    dims[axis] = n;
    tensor *o = NULL;
    int rc = tensor_alloc(elem, dims, rank + 1, env, &o, err);
    for (int64_t t = 0; t < n && !rc; t++)
        rc = place_axis(o, (int32_t)axis, backward ? n - 1 - t : t, v[t], env, err);
    if (rc) {
        tensor_free(o);
        return rc;
    }
    *out = o;
    return TILEOPT_OK;
}

/* One scan: ns states and nx scan inputs (along their axes) through the body,
** giving ns final states and ny stacked scan outputs in out. */
static int scan_run(graph *body, const exec_plan *plan, eval_scope *scope, const scan_dirs *sd,
                    tensor *const *state, size_t ns, tensor *const *xs, size_t nx, size_t ny,
                    const eval_env *env, tensor **out, errbuf *err) {
    int64_t T = -1;
    int32_t *axis = calloc(nx ? nx : 1, sizeof *axis);
    tensor **x = calloc(nx ? nx : 1, sizeof *x), **carried = calloc(ns ? ns : 1, sizeof *carried);
    tensor **bin = calloc(ns + nx ? ns + nx : 1, sizeof *bin);
    tensor **bout = calloc(ns + ny ? ns + ny : 1, sizeof *bout);
    tensor **ys = NULL;
    int rc = TILEOPT_OK;
    if (!axis || !x || !carried || !bin || !bout) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < nx && !rc; i++) {
        int64_t a = attr_at(sd->in_axes, i);
        if (a < 0) a += xs[i]->rank;
        if (a < 0 || a >= xs[i]->rank) {
            rc = err_set(err, TILEOPT_INVALID, "scan input %zu: axis outside rank %d", i,
                         (int)xs[i]->rank);
            break;
        }
        axis[i] = (int32_t)a;
        if (T >= 0 && xs[i]->dims[a] != T)
            rc = err_set(err, TILEOPT_INVALID, "scan inputs of lengths %" PRId64 " and %" PRId64,
                         T, xs[i]->dims[a]);
        T = xs[i]->dims[a];
        if (!rc) rc = tensor_contiguous(xs[i], env, &x[i], err);
    }
    if (rc) goto done;
    if (T < 0) T = 0;
    if (ny && (uint64_t)T > SIZE_MAX / ny / sizeof *ys) {
        rc = err_set(err, TILEOPT_LIMIT, "scan too long");
        goto done;
    }
    size_t n_ys = ny * (size_t)T;
    if (!(ys = calloc(n_ys ? n_ys : 1, sizeof *ys))) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < ns; i++)
        if (!(carried[i] = tensor_ref(state[i]))) {
            rc = err_set(err, TILEOPT_NOMEM, "out of memory");
            goto done;
        }
    for (int64_t t = 0; t < T && !rc; t++) {
        if (scope && (rc = step(scope, err))) break;
        for (size_t i = 0; i < ns; i++) bin[i] = carried[i];
        for (size_t i = 0; i < nx && !rc; i++)
            rc = slice_axis(x[i], axis[i], attr_at(sd->in_dirs, i) ? T - 1 - t : t, env,
                            &bin[ns + i], err);
        if (!rc) rc = run_sub(body, plan, scope, env, bin, ns + nx, bout, ns + ny, err);
        for (size_t i = 0; i < nx; i++) {
            tensor_free(bin[ns + i]);
            bin[ns + i] = NULL;
        }
        if (rc) {
            err_prefix(err, "iteration %" PRId64 ": ", t);
            break;
        }
        for (size_t i = 0; i < ns; i++) {
            tensor_free(carried[i]);
            carried[i] = bout[i];
            bout[i] = NULL;
        }
        for (size_t k = 0; k < ny; k++) {
            ys[k * (size_t)T + (size_t)t] = bout[ns + k];
            bout[ns + k] = NULL;
        }
    }
    for (size_t k = 0; k < ny && !rc; k++)
        rc = stack_along(ys + k * (size_t)T, T, attr_at(sd->out_axes, k),
                         attr_at(sd->out_dirs, k) != 0, body, ns + k, env, &out[ns + k], err);
    for (size_t i = 0; i < ns && !rc; i++) {
        out[i] = carried[i];
        carried[i] = NULL;
    }
done:
    for (size_t i = 0; x && i < nx; i++) tensor_free(x[i]);
    for (size_t i = 0; carried && i < ns; i++) tensor_free(carried[i]);
    for (size_t i = 0; ys && i < ny * (size_t)T; i++) tensor_free(ys[i]);
    free(axis);
    free(x);
    free(carried);
    free(bin);
    free(bout);
    free(ys);
    return rc;
}

/*
** Scan from opset 9: inputs are the initial states then num_scan_inputs scan
** inputs. Opset 8's Scan has an optional sequence_lens input first and a batch
** axis 0 on every input and output, scanning along axis 1: it runs as one scan
** per batch entry, restacked.
*/
static int exec_scan(graph *g, int32_t node, tensor *const *in, size_t n_in, tensor **out,
                     size_t n_out, const eval_env *env, eval_scope *scope, errbuf *err) {
    const Onnx__NodeProto *n = graph_node(g, node);
    graph *body = branch(g, node, "body");
    if (!body) return err_set(err, TILEOPT_INVALID, "attribute body is missing");
    bool batched = graph_opset(g->model, "") < 9;
    size_t first = batched ? 1 : 0;
    int64_t m = graph_attr_int(n, "num_scan_inputs", -1);
    if (m < 1 || (size_t)m > n_in - first)
        return err_set(err, TILEOPT_INVALID, "num_scan_inputs %" PRId64 " with %zu inputs", m,
                       n_in - first);
    size_t nx = (size_t)m, ns = n_in - first - nx;
    if (body->pb->n_input != ns + nx || body->pb->n_output < ns || n_out != body->pb->n_output)
        return err_set(err, TILEOPT_INVALID, "body has %zu inputs and %zu outputs for %zu states, "
                       "%zu scan inputs and %zu outputs", body->pb->n_input,
                       body->pb->n_output, ns, nx, n_out);
    size_t ny = n_out - ns;
    for (size_t i = first; i < n_in; i++)
        if (!in[i]) return err_set(err, TILEOPT_INVALID, "input %zu is missing", i);
    scan_dirs sd = {graph_attr(n, "scan_input_axes"), graph_attr(n, "scan_input_directions"),
                    graph_attr(n, "scan_output_axes"), graph_attr(n, "scan_output_directions")};
    if (batched) sd = (scan_dirs){NULL, graph_attr(n, "directions"), NULL, NULL};
    exec_plan plan = {0};
    int rc = plan_build(body, &plan, err);
    if (rc) return rc;
    if (!batched) {
        rc = scan_run(body, &plan, scope, &sd, in, ns, in + ns, nx, ny, env, out, err);
        plan_free(&plan);
        return rc;
    }
    /* opset 8: every input has the batch on axis 0 */
    int64_t B = in[1]->rank ? in[1]->dims[0] : 0;
    for (size_t i = 1; i < n_in && !rc; i++)
        if (in[i]->rank < 1 || in[i]->dims[0] != B)
            rc = err_set(err, TILEOPT_INVALID, "input %zu does not have the batch of %" PRId64
                         " on axis 0", i, B);
    if (!rc && in[0]) {
        /* a shorter sequence would leave the tail of its scan outputs undefined */
        tensor *l = NULL;
        rc = eval_cast(in[0], DT_INT64, env, &l, err);
        const tensor *x0 = in[1 + ns];
        for (uint64_t b = 0; !rc && b < tensor_numel(l); b++)
            if (x0->rank < 2 || ((const int64_t *)(const void *)l->data)[b] != x0->dims[1])
                rc = err_set(err, TILEOPT_UNSUPPORTED, "sequence_lens other than the scan "
                             "inputs' length");
        tensor_free(l);
    }
    size_t nio = n_in - 1;
    tensor **sl = calloc(nio ? nio : 1, sizeof *sl), **res = calloc(n_out * (size_t)(B ? B : 1) + 1, sizeof *res);
    if (!rc && (!sl || !res)) rc = err_set(err, TILEOPT_NOMEM, "out of memory");
    for (int64_t b = 0; b < B && !rc; b++) {
        tensor *c = NULL;
        for (size_t i = 0; i < nio && !rc; i++) {
            tensor_free(sl[i]);
            sl[i] = NULL;
            if (!(rc = tensor_contiguous(in[1 + i], env, &c, err)))
                rc = slice_axis(c, 0, b, env, &sl[i], err);
            tensor_free(c);
            c = NULL;
        }
        if (!rc)
            rc = scan_run(body, &plan, scope, &sd, sl, ns, sl + ns, nx, ny, env,
                          res + (size_t)b * n_out, err);
    }
    for (size_t k = 0; k < n_out && !rc; k++) {
        tensor **col = calloc((size_t)(B ? B : 1), sizeof *col);
        if (!col) {
            rc = err_set(err, TILEOPT_NOMEM, "out of memory");
            break;
        }
        for (int64_t b = 0; b < B; b++) col[b] = res[(size_t)b * n_out + k];
        rc = stack_along(col, B, 0, false, body, k, env, &out[k], err);
        free(col);
    }
    for (size_t i = 0; sl && i < nio; i++) tensor_free(sl[i]);
    for (size_t i = 0; res && i < n_out * (size_t)B; i++) tensor_free(res[i]);
    free(sl);
    free(res);
    plan_free(&plan);
    if (rc)
        for (size_t k = 0; k < n_out; k++) {
            tensor_free(out[k]);
            out[k] = NULL;
        }
    return rc;
}

/* ------------------------------------------------------------ SequenceMap */

/*
** SequenceMap: the body runs once per item of the first input, a sequence;
** every other input is a sequence of as many items (the body gets the item of
** the run) or a tensor (the body gets it each time). Output k is the sequence
** of the body's output k over the runs, its element type declared by the body
** when there are none.
*/
static int exec_sequence_map(graph *g, int32_t node, tensor *const *in, size_t n_in,
                             tensor **out, size_t n_out, const eval_env *env,
                             eval_scope *scope, errbuf *err) {
    graph *body = branch(g, node, "body");
    if (!body) return err_set(err, TILEOPT_INVALID, "attribute body is missing");
    if (body->pb->n_input != n_in || body->pb->n_output != n_out)
        return err_set(err, TILEOPT_INVALID, "body has %zu inputs and %zu outputs, the node "
                       "%zu and %zu", body->pb->n_input, body->pb->n_output, n_in, n_out);
    if (!in[0] || in[0]->kind != EVAL_SEQUENCE)
        return err_set(err, TILEOPT_INVALID, "input 0 must be a sequence");
    size_t len = in[0]->n_items;
    for (size_t j = 0; j < n_in; j++) {
        if (!in[j]) return err_set(err, TILEOPT_INVALID, "input %zu is missing", j);
        if (in[j]->kind == EVAL_OPTIONAL ||
            (in[j]->kind == EVAL_SEQUENCE && in[j]->n_items != len))
            return err_set(err, TILEOPT_INVALID, "input %zu is %s of %zu items where a "
                           "sequence of %zu or a tensor belongs", j,
                           value_kind_name(in[j]->kind), in[j]->n_items, len);
    }
    tensor **bin = calloc(n_in, sizeof *bin), **bout = calloc(n_out ? n_out : 1, sizeof *bout);
    exec_plan plan = {0};
    uint64_t held = 0;
    int rc = TILEOPT_OK;
    if (!bin || !bout) rc = err_set(err, TILEOPT_NOMEM, "out of memory");
    if (!rc) rc = plan_build(body, &plan, err);
    for (size_t k = 0; k < n_out && !rc; k++) {
        int32_t elem = 0;
        if (!len) graph_type_kind(body->pb->output[k]->type, &elem);
        rc = value_new(EVAL_SEQUENCE, elem, len, &out[k], err);
    }
    for (size_t i = 0; i < len && !rc; i++) {
        if (scope && (rc = step(scope, err))) break;
        for (size_t j = 0; j < n_in; j++)
            bin[j] = in[j]->kind == EVAL_SEQUENCE ? in[j]->items[i] : in[j];
        rc = run_sub(body, &plan, scope, env, bin, n_in, bout, n_out, err);
        for (size_t k = 0; k < n_out && !rc; k++) {
            if ((rc = value_put(out[k], i, bout[k], err))) err_prefix(err, "output %zu: ", k);
            held += storage_bytes(bout[k]);
        }
        for (size_t k = 0; k < n_out; k++) {
            tensor_free(bout[k]);
            bout[k] = NULL;
        }
        /* what the outputs hold so far counts against the run, as Loop's scans do */
        if (!rc && scope && env->lim.max_eval_bytes &&
            scope->use->bytes + held > env->lim.max_eval_bytes)
            rc = err_set(err, TILEOPT_LIMIT, "the output sequences take %" PRIu64 " bytes, "
                         "over the limit %" PRIu64, held, env->lim.max_eval_bytes);
        if (rc) err_prefix(err, "item %zu: ", i);
    }
    plan_free(&plan);
    free(bin);
    free(bout);
    if (rc)
        for (size_t k = 0; k < n_out; k++) {
            tensor_free(out[k]);
            out[k] = NULL;
        }
    return rc;
}

/* ------------------------------------------------------------ one node */

/*
** Sequences and optionals reach only what takes them: the kernels of
** ops_sequence.c, Loop's carried values and SequenceMap. Every other kernel,
** If's condition, Loop's M and cond and Scan's inputs read tensors, and a
** value there is refused before it could be read as one.
*/
static int check_kinds(const char *op, op_id id, const kernel_def *k, tensor *const *in,
                       size_t n_in, errbuf *err) {
    size_t i = 0;
    while (i < n_in && (!in[i] || in[i]->kind == EVAL_TENSOR)) i++;
    if (i == n_in) return TILEOPT_OK;
    size_t tensors_only = id == OP_Loop                           ? 2
                          : id == OP_SequenceMap || (k && takes_values(k)) ? 0
                                                                  : n_in;
    if (i >= tensors_only) return TILEOPT_OK;
    return err_set(err, TILEOPT_INVALID, "op %s input %zu is %s; it takes tensors there", op,
                   i, value_kind_name(in[i]->kind));
}

/* k: the node's kernel when the caller looked it up already, else NULL. */
static int node_run(graph *g, int32_t node, const kernel_def *k, tensor *const *inputs,
                    size_t n_inputs, tensor **outputs, size_t n_outputs,
                    const eval_env *env, eval_scope *scope, errbuf *err) {
    const Onnx__NodeProto *n = graph_node(g, node);
    for (size_t i = 0; i < n_outputs; i++) outputs[i] = NULL;
    if (!graph_domain_is_default(n->domain))
        return err_set(err, TILEOPT_UNSUPPORTED, "op %s:%s is not supported by the evaluator",
                       n->domain, n->op_type ? n->op_type : "?");
    int64_t opset = graph_opset(g->model, "");
    const char *op = n->op_type ? n->op_type : "";
    op_id id = op_of(n);
    /* Kernels index their inputs by position: a count outside the op's schema
    ** is refused here once, naming the node. */
    if (id != OP_NONE && (n->n_input < (size_t)op_table[id].min_in ||
                          n->n_input > (size_t)op_table[id].max_in))
        return err_set(err, TILEOPT_INVALID, "node %s: %s takes %" PRId32 "..%" PRId32
                       " inputs, it has %zu", graph_node_id(g, node), op,
                       op_table[id].min_in, op_table[id].max_in, n->n_input);
    if (!is_control(id) && !k) k = find_kernel(id, opset);
    if (!is_control(id) && !k)
        return err_set(err, TILEOPT_UNSUPPORTED,
                       "op %s (opset %" PRId64 ") is not supported by the evaluator", op,
                       opset);
    int rc = check_kinds(op, id, k, inputs, n_inputs, err);
    if (rc) return rc;
    if (id == OP_If)
        return exec_if(g, node, inputs, n_inputs, outputs, n_outputs, env, scope, err);
    if (id == OP_Loop)
        return exec_loop(g, node, inputs, n_inputs, outputs, n_outputs, env, scope, err);
    if (id == OP_Scan)
        return exec_scan(g, node, inputs, n_inputs, outputs, n_outputs, env, scope, err);
    if (id == OP_SequenceMap)
        return exec_sequence_map(g, node, inputs, n_inputs, outputs, n_outputs, env, scope,
                                 err);
    rc = k->fn(n, opset, inputs, n_inputs, outputs, n_outputs, env, err);
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
              tensor **outputs, size_t n_outputs, const eval_env *env, eval_scope *scope,
              errbuf *err) {
    eval_env dl;
    if (!env) {
        eval_env_default(&dl);
        env = &dl;
    }
    if (node < 0 || (uint32_t)node >= graph_n_nodes(g))
        return err_set(err, TILEOPT_MISUSE, "node index %" PRId32 " out of range", node);
    const Onnx__NodeProto *n = graph_node(g, node);
    int rc;
    if (!scope && graph_node_subgraphs(g, node)) {
        /* A pass evaluating a control-flow node: a frame for g with nothing in
        ** it, so the subgraph reads only constants from outside. */
        eval_usage use = {0, 0};
        eval_scope f;
        rc = frame_open(&f, g, NULL, env, &use, err);
        if (!rc) {
            f.depth = g->depth;
            rc = node_run(g, node, NULL, inputs, n_inputs, outputs, n_outputs, env, &f, err);
        }
        frame_close(&f);
    } else {
        rc = node_run(g, node, NULL, inputs, n_inputs, outputs, n_outputs, env, scope, err);
    }
    if (rc)
        return err_prefix(err, "node %s (%s): ", graph_node_id(g, node),
                          n->op_type ? n->op_type : "?");
    for (size_t o = 0; o < n_outputs && o < n->n_output; o++)
        if (outputs[o]) outputs[o]->name = n->output[o];
    return TILEOPT_OK;
}

/* ------------------------------------------------------------ graphs */

/* An input must have the declared element type: kernels dispatch on it. Its
** shape may differ from the declaration (ONNX's own test data does that);
** evaluation follows the actual shape. */
static int check_input(const graph_value *v, const Onnx__ValueInfoProto *vi, const tensor *t,
                       errbuf *err) {
    graph_kind want = graph_type_kind(vi->type, NULL);
    /* a tensor or sequence where an optional is declared is one that holds it:
    ** a Loop-16 body carries an optional in and its sequence out */
    if (want != GRAPH_KIND_NONE && want != (graph_kind)t->kind &&
        !(want == GRAPH_KIND_OPTIONAL && t->kind != EVAL_OPTIONAL))
        return err_set(err, TILEOPT_INVALID, "input '%s' is %s, the model expects %s",
                       v->name, value_kind_name(t->kind), value_kind_name(want));
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
static int run_frame(eval_scope *f, const exec_plan *plan, tensor *const *inputs,
                     size_t n_inputs, tensor **outs, size_t n_outs, errbuf *err) {
    graph *g = f->g;
    Onnx__GraphProto *pb = g->pb;
    int rc = TILEOPT_OK;
    size_t k = 0;
    tensor **nin = NULL, **nout = NULL;
    exec_plan own = {0};
    if (!plan) {
        rc = plan_build(g, &own, err);
        if (rc) return rc;
        plan = &own;
    }
    for (size_t i = 0; i < pb->n_input; i++) {
        graph_value *v = plan->gin[i];
        if (!v) {
            rc = err_set(err, TILEOPT_INVALID, "graph input %zu is not indexed", i);
            goto done;
        }
        if (v->initializer >= 0) continue;
        if (k >= n_inputs) {
            k++;
            continue;
        }
        if (!inputs[k]) {
            rc = err_set(err, TILEOPT_INVALID, "input '%s' is missing", v->name);
            goto done;
        }
        rc = check_input(v, pb->input[i], inputs[k], err);
        if (rc) goto done;
        size_t idx = (size_t)(v - g->values);
        release(f, &f->vals[idx]);
        f->vals[idx] = tensor_ref(inputs[k]);
        if (!f->vals[idx]) {
            rc = err_set(err, TILEOPT_NOMEM, "out of memory");
            goto done;
        }
        rc = account(f, f->vals[idx], v->name, err);
        if (rc) goto done;
        k++;
    }
    if (k != n_inputs) {
        rc = err_set(err, TILEOPT_INVALID, "the graph takes %zu inputs, got %zu", k, n_inputs);
        goto done;
    }
    if (pb->n_output != n_outs) {
        rc = err_set(err, TILEOPT_INVALID, "the graph has %zu outputs, %zu expected",
                     pb->n_output, n_outs);
        goto done;
    }
    /* the main graph's nodes are counted for progress, about a hundred times */
    uint32_t report_every = 0;
    if (f->env->progress.fn && f->env->run_what && !f->parent)
        report_every = plan->count >= 100 ? plan->count / 100 : 1;
    nin = calloc(plan->max_io, sizeof *nin);
    nout = calloc(plan->max_io, sizeof *nout);
    if (!nin || !nout) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        goto done;
    }
    for (uint32_t p = 0; p < plan->count; p++) {
        int32_t ni = plan->order[p];
        const Onnx__NodeProto *n = graph_node(g, ni);
        graph_value **pv = plan->vals + plan->first[p];
        if ((rc = step(f, err))) goto done;
        for (size_t i = 0; i < n->n_input; i++) {
            const char *name = graph_node_input(n, i);
            nin[i] = NULL;
            if (!name) continue;
            rc = frame_get_value(f, pv[i], name, &nin[i], err);
            if (rc) {
                err_prefix(err, "node %s (%s): ", graph_node_id(g, ni),
                           n->op_type ? n->op_type : "?");
                goto done;
            }
        }
        rc = node_run(g, ni, plan->kern[p], nin, n->n_input, nout, n->n_output, f->env, f,
                      err);
        if (rc) {
            err_prefix(err, "node %s (%s): ", graph_node_id(g, ni),
                       n->op_type ? n->op_type : "?");
            goto done;
        }
        for (size_t o = 0; o < n->n_output; o++) {
            const char *on = n->output[o];
            graph_value *v = pv[n->n_input + o];
            if (!v) {
                tensor_free(nout[o]);
                nout[o] = NULL;
                continue;
            }
            size_t idx = (size_t)(v - g->values);
            release(f, &f->vals[idx]);
            /* named for what reports on it (the progress of materializing it) */
            if (nout[o]) nout[o]->name = on;
            f->vals[idx] = nout[o];
            nout[o] = NULL;
            if (!rc) rc = account(f, f->vals[idx], on, err);
            if (!rc) rc = steps_add(f, item_steps(f->vals[idx]), err);
        }
        if (rc) {
            err_prefix(err, "node %s (%s): ", graph_node_id(g, ni),
                       n->op_type ? n->op_type : "?");
            goto done;
        }
        for (int32_t vi = plan->head[p]; vi >= 0; vi = plan->next[vi]) release(f, &f->vals[vi]);
        if (report_every && ((p + 1) % report_every == 0 || p + 1 == plan->count))
            graph_progress_tell(&f->env->progress, f->env->run_what, p + 1, plan->count);
    }
    for (size_t o = 0; o < n_outs; o++) {
        tensor *t = NULL;
        rc = frame_get_value(f, plan->gout[o], pb->output[o]->name, &t, err);
        if (rc) {
            err_prefix(err, "graph output %zu: ", o);
            for (size_t j = 0; j < o; j++) {
                tensor_free(outs[j]);
                outs[j] = NULL;
            }
            goto done;
        }
        if (!(outs[o] = tensor_ref(t))) {
            rc = err_set(err, TILEOPT_NOMEM, "out of memory");
            for (size_t j = 0; j < o; j++) {
                tensor_free(outs[j]);
                outs[j] = NULL;
            }
            goto done;
        }
    }
done:
    plan_free(&own);
    free(nin);
    free(nout);
    return rc;
}

int eval_graph(graph_model *m, tensor *const *inputs, size_t n_inputs, tensor ***outputs,
               size_t *n_outputs, const eval_env *env, errbuf *err) {
    *outputs = NULL;
    *n_outputs = 0;
    eval_env dl;
    if (!env) {
        eval_env_default(&dl);
        env = &dl;
    }
    if (!m || !m->main) return err_set(err, TILEOPT_INVALID, "the model has no graph");
    size_t no = m->main->pb->n_output;
    tensor **outs = calloc(no ? no : 1, sizeof *outs);
    if (!outs) return err_set(err, TILEOPT_NOMEM, "out of memory");
    eval_usage use = {0, 0};
    eval_scope f;
    int rc = frame_open(&f, m->main, NULL, env, &use, err);
    if (!rc) rc = run_frame(&f, NULL, inputs, n_inputs, outs, no, err);
    frame_close(&f);
    /* Outputs leave contiguous: callers compare and serialize them. */
    for (size_t i = 0; i < no && !rc; i++) {
        tensor *c = NULL;
        rc = tensor_contiguous(outs[i], env, &c, err);
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
    const char *dom = graph_domain_is_default(n->domain) ? "" : n->domain;
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
        if (!graph_domain_is_default(n->domain) || !eval_supports(n->op_type, opset))
            note_missing(ms, n);
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

/*
** eliminate_if: an If whose condition is a constant always runs the same
** branch, so that branch's nodes take its place in the enclosing graph and
** the other branch goes. Every value the branch defines gets a fresh name
** (a branch may reuse names of another scope), except that a branch output
** computed by a branch node takes the If's output name, so readers and graph
** outputs keep theirs. A branch that holds subgraphs of its own stays (its
** inner scopes would need the renaming too), with its reason.
*/
#include <stdlib.h>
#include <string.h>

#include "passes/eliminate/eliminate_impl.h"

/* Old name -> new name of the values the branch defines: an open-addressing
** table (a power-of-two count, at most half full), so renaming is linear in
** the branch's size. */
typedef struct rename {
    const char **from, **to;
    size_t n, cap;
} rename;

static const char *renamed(const rename *r, const char *name) {
    if (!r->cap) return name;
    for (size_t s = graph_name_hash(name) & (r->cap - 1); r->from[s]; s = (s + 1) & (r->cap - 1))
        if (strcmp(r->from[s], name) == 0) return r->to[s];
    return name; /* an outer value keeps its name */
}

static int rename_init(rename *r, size_t n) {
    r->cap = 16;
    while (r->cap < 2 * n) r->cap *= 2;
    r->from = calloc(r->cap, sizeof *r->from);
    r->to = calloc(r->cap, sizeof *r->to);
    return r->from && r->to ? TILEOPT_OK : TILEOPT_NOMEM;
}

/* The first rename of a name holds. */
static int rename_add(rename *r, const char *from, const char *to) {
    if (!to) return TILEOPT_NOMEM;
    size_t s = graph_name_hash(from) & (r->cap - 1);
    for (; r->from[s]; s = (s + 1) & (r->cap - 1))
        if (strcmp(r->from[s], from) == 0) return TILEOPT_OK;
    if (2 * (r->n + 1) > r->cap) return TILEOPT_NOMEM; /* sized by rename_init */
    r->from[s] = from;
    r->to[s] = to;
    r->n++;
    return TILEOPT_OK;
}

/* The branch the constant condition picks, or NULL. */
static graph *chosen_branch(graph *g, int32_t node, bool cond) {
    const char *attr = cond ? "then_branch" : "else_branch";
    for (graph *s = graph_node_subgraphs(g, node); s; s = s->next_sibling)
        if (s->parent_attr && strcmp(s->parent_attr, attr) == 0) return s;
    return NULL;
}

/* Why the branch cannot move into g as it is, or NULL. */
static const char *not_inlinable(graph *b) {
    if (b->pb->n_sparse_initializer) return "the branch holds sparse initializers";
    if (b->pb->n_input) return "the branch declares inputs";
    for (uint32_t i = 0; i < graph_n_nodes(b); i++)
        if (graph_node_subgraphs(b, (int32_t)i))
            return "the branch holds subgraphs of its own";
    return NULL;
}

/* Is branch output k the first branch output naming its value, and computed by
** a branch node? Then it can be written under the If's output name. */
static bool takes_if_name(graph *b, size_t k) {
    const char *name = b->pb->output[k]->name;
    for (size_t j = 0; j < k; j++)
        if (strcmp(b->pb->output[j]->name, name) == 0) return false;
    graph_value *v = graph_find(b, name);
    return v && v->outer < 0 && v->producer >= 0;
}

/* The branch nodes' outputs under their new names (If outputs taken first);
** initializers get theirs as move_branch adds them. */
static int plan_names(graph *g, const Onnx__NodeProto *n, graph *b, rename *r) {
    for (size_t k = 0; k < b->pb->n_output && k < n->n_output; k++)
        if (n->output[k][0] && takes_if_name(b, k) &&
            rename_add(r, b->pb->output[k]->name, n->output[k]))
            return TILEOPT_NOMEM;
    for (uint32_t i = 0; i < graph_n_nodes(b); i++) {
        const Onnx__NodeProto *bn = graph_node(b, (int32_t)i);
        for (size_t o = 0; o < bn->n_output; o++) {
            const char *name = bn->output[o];
            if (!name[0] || renamed(r, name) != name) continue;
            if (rename_add(r, name, graph_unique_name(g, name))) return TILEOPT_NOMEM;
        }
    }
    return TILEOPT_OK;
}

/* The branch's initializers and nodes, renamed, added to g. */
/* A moved node's name: the If's, then its own, so it stays unique among the
** enclosing graph's node names (ONNX Runtime refuses two alike). */
static const char *moved_name(graph *g, const char *if_name, const char *name) {
    if (!name || !name[0]) return NULL;
    size_t a = strlen(if_name), b = strlen(name);
    char *buf = malloc(a + b + 2);
    if (!buf) return NULL;
    memcpy(buf, if_name, a);
    buf[a] = '/';
    memcpy(buf + a + 1, name, b + 1);
    const char *u = graph_unique_name(g, buf);
    free(buf);
    return u;
}

static int move_branch(pass_ctx *pc, graph *g, const char *if_name, graph *b, rename *r) {
    for (size_t i = 0; i < b->pb->n_initializer; i++) {
        const Onnx__TensorProto *t = b->pb->initializer[i];
        tensor *v;
        const char *name;
        int rc = tensor_from_proto(g->model, t, &pc->eval, &v, pc->err);
        if (rc) return rc;
        rc = graph_add_initializer(g, t->name, v->elem, v->dims, (size_t)v->rank, v->data,
                                   (size_t)tensor_nbytes(v), &name, pc->err);
        tensor_free(v);
        if (!rc && rename_add(r, t->name, name))
            rc = err_set(pc->err, TILEOPT_NOMEM, "out of memory");
        if (rc) return rc;
    }
    for (uint32_t i = 0; i < graph_n_nodes(b); i++) {
        const Onnx__NodeProto *bn = graph_node(b, (int32_t)i);
        const char **names = malloc((bn->n_input + bn->n_output + 1) * sizeof *names);
        if (!names) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
        for (size_t k = 0; k < bn->n_input; k++) names[k] = renamed(r, bn->input[k]);
        for (size_t k = 0; k < bn->n_output; k++)
            names[bn->n_input + k] = renamed(r, bn->output[k]);
        const char *name = moved_name(g, if_name, bn->name);
        Onnx__NodeProto *nn = graph_add_node(g, bn->op_type, name, names, bn->n_input,
                                             names + bn->n_input, bn->n_output, NULL);
        free(names);
        if (!nn) return err_set(pc->err, TILEOPT_NOMEM, "out of memory");
        /* the branch goes with the If: its node's fields move over as they are */
        nn->domain = bn->domain;
        nn->doc_string = bn->doc_string;
        nn->attribute = bn->attribute;
        nn->n_attribute = bn->n_attribute;
    }
    return TILEOPT_OK;
}

/* If outputs the branch nodes do not write under the If's name: readers read
** the branch's value; a graph output gets an Identity of it. */
static int connect_outputs(pass_ctx *pc, graph *g, const Onnx__NodeProto *n, graph *b,
                           const rename *r) {
    for (size_t k = 0; k < b->pb->n_output && k < n->n_output; k++) {
        const char *y = n->output[k];
        const char *v = renamed(r, b->pb->output[k]->name);
        if (!y[0] || strcmp(v, y) == 0) continue;
        int rc;
        if (graph_value_is_output(g, y))
            rc = graph_add_node(g, "Identity", NULL, &v, 1, &y, 1, NULL) ? TILEOPT_OK
                                                                        : TILEOPT_NOMEM;
        else
            rc = graph_replace_uses(g, y, v);
        if (rc) return err_set(pc->err, rc, "out of memory");
    }
    return TILEOPT_OK;
}

static int if_rule(pass_ctx *pc, graph *g, int32_t node) {
    const Onnx__NodeProto *n = graph_node(g, node);
    double c;
    const char *cond = op_of(n) == OP_If ? graph_node_input(n, 0) : NULL;
    if (!cond || !rw_const_uniform(pc, g, cond, &c)) return TILEOPT_OK;
    graph *b = chosen_branch(g, node, c != 0);
    if (!b) return TILEOPT_OK;
    const char *why = not_inlinable(b);
    if (why) {
        pass_skip(pc, g, node, "the condition is constant, but %s", why);
        return TILEOPT_OK;
    }
    json_w *a = pass_action(pc, g, node, "eliminated");
    if (a) {
        json_put_str(a, "rule", "constant condition");
        json_put_str(a, "branch", c != 0 ? "then_branch" : "else_branch");
        json_put_num(a, "nodes_inlined", (double)graph_n_nodes(b));
    }
    rename r = {0};
    size_t defs = b->pb->n_initializer;
    for (uint32_t i = 0; i < graph_n_nodes(b); i++) defs += graph_node(b, (int32_t)i)->n_output;
    int rc = rename_init(&r, defs) || plan_names(g, n, b, &r)
                 ? err_set(pc->err, TILEOPT_NOMEM, "out of memory")
                 : 0;
    const char *if_name = rc ? NULL : graph_strdup(g, graph_node_id(g, node));
    if (!rc && !if_name) rc = err_set(pc->err, TILEOPT_NOMEM, "out of memory");
    /* the If goes first: its outputs are free for the branch nodes to write */
    if (!rc) graph_remove_node(g, node);
    if (!rc) rc = move_branch(pc, g, if_name, b, &r);
    if (!rc) rc = connect_outputs(pc, g, n, b, &r);
    free(r.from);
    free(r.to);
    return rc;
}

int pass_eliminate_if(pass_ctx *pc) {
    return rw_walk(pc, if_rule);
}

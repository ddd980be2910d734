/*
** Test helper: build small ONNX models in C (protobuf-c structs), serialize them
** and load them through graph_model_load_buffer, so evaluator tests run on real
** loaded models. Everything built comes from a pool released by b_free_all().
*/
#ifndef TILEOPT_TEST_BUILDER_H
#define TILEOPT_TEST_BUILDER_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval.h"
#include "graph/graph.h"

static void **b_pool;
static size_t b_n, b_cap;

static inline void *b_alloc(size_t n) {
    void *p = calloc(1, n ? n : 1);
    if (!p) abort();
    if (b_n == b_cap) {
        b_cap = b_cap ? b_cap * 2 : 256;
        b_pool = realloc(b_pool, b_cap * sizeof *b_pool);
        if (!b_pool) abort();
    }
    b_pool[b_n++] = p;
    return p;
}

static inline void b_free_all(void) {
    for (size_t i = 0; i < b_n; i++) free(b_pool[i]);
    free(b_pool);
    b_pool = NULL;
    b_n = b_cap = 0;
}

static inline char *b_str(const char *s) {
    char *d = b_alloc(strlen(s) + 1);
    strcpy(d, s);
    return d;
}

/* "a,b,,c" -> array of names ("" kept: an absent optional input) */
static inline char **b_names(const char *list, size_t *n) {
    *n = 0;
    if (!list || !list[0]) return NULL;
    size_t cnt = 1;
    for (const char *p = list; *p; p++) cnt += *p == ',';
    char **v = b_alloc(cnt * sizeof *v);
    const char *s = list;
    for (size_t i = 0; i < cnt; i++) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        v[i] = b_alloc(len + 1);
        memcpy(v[i], s, len);
        s = e ? e + 1 : s + len;
    }
    *n = cnt;
    return v;
}

/* A tensor-typed value info; rank < 0: no shape. dims[i] < 0: symbolic "N". */
static inline Onnx__ValueInfoProto *b_value(const char *name, int32_t elem, int rank,
                                     const int64_t *dims) {
    Onnx__ValueInfoProto *v = b_alloc(sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = b_str(name);
    Onnx__TypeProto *tp = b_alloc(sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = b_alloc(sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    if (rank >= 0) {
        Onnx__TensorShapeProto *sh = b_alloc(sizeof *sh);
        onnx__tensor_shape_proto__init(sh);
        sh->n_dim = (size_t)rank;
        sh->dim = b_alloc((size_t)(rank ? rank : 1) * sizeof *sh->dim);
        for (int i = 0; i < rank; i++) {
            Onnx__TensorShapeProto__Dimension *d = b_alloc(sizeof *d);
            onnx__tensor_shape_proto__dimension__init(d);
            if (dims && dims[i] >= 0) {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d->dim_value = dims[i];
            } else {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                d->dim_param = b_str("N");
            }
            sh->dim[i] = d;
        }
        tt->shape = sh;
    }
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->type = tp;
    return v;
}

static inline Onnx__NodeProto *b_node(const char *op, const char *inputs, const char *outputs) {
    Onnx__NodeProto *n = b_alloc(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = b_str(op);
    n->name = b_str(op);
    n->input = b_names(inputs, &n->n_input);
    n->output = b_names(outputs, &n->n_output);
    return n;
}

static inline Onnx__AttributeProto *b_attr(Onnx__NodeProto *n, const char *name) {
    Onnx__AttributeProto **a = b_alloc((n->n_attribute + 1) * sizeof *a);
    if (n->n_attribute) memcpy(a, n->attribute, n->n_attribute * sizeof *a);
    Onnx__AttributeProto *at = b_alloc(sizeof *at);
    onnx__attribute_proto__init(at);
    at->name = b_str(name);
    at->has_type = 1;
    a[n->n_attribute++] = at;
    n->attribute = a;
    return at;
}

static inline void b_attr_int(Onnx__NodeProto *n, const char *name, int64_t v) {
    Onnx__AttributeProto *a = b_attr(n, name);
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->has_i = 1;
    a->i = v;
}

static inline void b_attr_ints(Onnx__NodeProto *n, const char *name, const int64_t *v, size_t k) {
    Onnx__AttributeProto *a = b_attr(n, name);
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    a->n_ints = k;
    a->ints = b_alloc((k ? k : 1) * sizeof *a->ints);
    memcpy(a->ints, v, k * sizeof *v);
}

static inline void b_attr_graph(Onnx__NodeProto *n, const char *name, Onnx__GraphProto *g) {
    Onnx__AttributeProto *a = b_attr(n, name);
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    a->g = g;
}

/* A TensorProto with raw data (nbytes may deliberately not match the shape). */
static inline Onnx__TensorProto *b_tensor(const char *name, int32_t elem, int rank,
                                   const int64_t *dims, const void *data, size_t nbytes) {
    Onnx__TensorProto *t = b_alloc(sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = b_str(name);
    t->has_data_type = 1;
    t->data_type = elem;
    t->n_dims = (size_t)rank;
    t->dims = b_alloc((size_t)(rank ? rank : 1) * sizeof *t->dims);
    if (rank) memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
    t->has_raw_data = 1;
    t->raw_data.len = nbytes;
    t->raw_data.data = b_alloc(nbytes);
    if (nbytes) memcpy(t->raw_data.data, data, nbytes);
    return t;
}

static inline void b_attr_tensor(Onnx__NodeProto *n, const char *name, Onnx__TensorProto *t) {
    Onnx__AttributeProto *a = b_attr(n, name);
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    a->t = t;
}

typedef struct b_graph {
    Onnx__GraphProto *g;
} b_graph;

static inline Onnx__GraphProto *b_graph_new(const char *name) {
    Onnx__GraphProto *g = b_alloc(sizeof *g);
    onnx__graph_proto__init(g);
    g->name = b_str(name);
    g->node = b_alloc(64 * sizeof *g->node);
    g->input = b_alloc(16 * sizeof *g->input);
    g->output = b_alloc(16 * sizeof *g->output);
    g->initializer = b_alloc(16 * sizeof *g->initializer);
    return g;
}

static inline Onnx__NodeProto *b_add(Onnx__GraphProto *g, Onnx__NodeProto *n) {
    g->node[g->n_node++] = n;
    return n;
}
static inline void b_input(Onnx__GraphProto *g, Onnx__ValueInfoProto *v) { g->input[g->n_input++] = v; }
static inline void b_output(Onnx__GraphProto *g, Onnx__ValueInfoProto *v) { g->output[g->n_output++] = v; }
static inline void b_init(Onnx__GraphProto *g, Onnx__TensorProto *t) {
    g->initializer[g->n_initializer++] = t;
}

/* Serialize a model around g at the given opset (bytes from the pool). */
static inline uint8_t *b_pack(Onnx__GraphProto *g, int64_t opset, size_t *len) {
    Onnx__ModelProto m;
    onnx__model_proto__init(&m);
    m.has_ir_version = 1;
    m.ir_version = 8;
    Onnx__OperatorSetIdProto os;
    onnx__operator_set_id_proto__init(&os);
    os.domain = b_str("");
    os.has_version = 1;
    os.version = opset;
    Onnx__OperatorSetIdProto *osp = &os;
    m.n_opset_import = 1;
    m.opset_import = &osp;
    m.graph = g;
    *len = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = b_alloc(*len);
    onnx__model_proto__pack(&m, buf);
    return buf;
}

/* Serialize a model around g at the given opset and load it. */
static inline int b_load(Onnx__GraphProto *g, int64_t opset, graph_model **out, errbuf *err) {
    size_t len;
    uint8_t *buf = b_pack(g, opset, &len);
    graph_limits lim;
    graph_limits_default(&lim);
    return graph_model_load_buffer(buf, len, NULL, &lim, NULL, out, err);
}

/* A contiguous tensor of elem with dims, copied from data. */
static inline tensor *b_make(int32_t elem, int rank, const int64_t *dims, const void *data) {
    tensor *t = NULL;
    if (tensor_new(elem, dims, rank, NULL, &t, NULL)) abort();
    if (data) memcpy(t->data, data, (size_t)tensor_nbytes(t));
    return t;
}

#endif

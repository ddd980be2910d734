/* Unit tests of graph/: load, index, mutation, commit, save. Fixtures are the
** sample models in models/ (SRCDIR points at the source tree). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "graph/graph.h"
#include "tests/graph/sample.h"

static void index_should_link_producers_and_uses(void **state) {
    (void)state;
    graph_model *m = load_sample("bias_tile.onnx");
    graph *g = m->main;
    graph_value *bt = graph_find(g, "bt");
    assert_non_null(bt);
    assert_int_equal(bt->producer, 0);
    assert_int_equal(bt->n_uses, 1);
    assert_int_equal(bt->uses[0].node, 1);
    assert_int_equal(bt->uses[0].input, 1);
    graph_value *bias = graph_find(g, "bias");
    assert_int_equal(bias->initializer, 0);
    assert_int_equal(bias->type.rank, 4);
    assert_int_equal(bias->type.dims[1], 16);
    assert_true(graph_value_is_output(g, "y"));
    assert_null(graph_find(g, "nope"));
    assert_int_equal(graph_opset(m, ""), 13);
    assert_int_equal(graph_opset(m, "ai.onnx"), 13);
    assert_int_equal(graph_opset(m, "com.other"), 0);
    graph_model_free(m);
}

static void unique_name_should_avoid_every_existing_name(void **state) {
    (void)state;
    graph_model *m = load_sample("bias_tile.onnx");
    const char *a = graph_unique_name(m->main, "bt");
    const char *b = graph_unique_name(m->main, "bt");
    assert_string_not_equal(a, "bt");
    assert_string_not_equal(a, b);
    assert_string_equal(graph_unique_name(m->main, "fresh"), "fresh");
    graph_model_free(m);
}

/* Replace Add(x, Tile(bias)) by Add(x, bias): the Tile dies in commit, and the
** reps initializer it alone read goes with it. */
static void commit_should_sweep_dead_nodes_and_initializers(void **state) {
    (void)state;
    graph_model *m = load_sample("bias_tile.onnx");
    graph *g = m->main;
    errbuf err = {0};
    assert_int_equal(graph_node_set_input(g, 1, 1, "bias"), TILEOPT_OK);
    assert_int_equal(graph_find(g, "bt")->n_uses, 0);
    assert_int_equal(graph_find(g, "bias")->n_uses, 2);
    assert_int_equal(graph_commit(g, &err), TILEOPT_OK);
    assert_int_equal(graph_n_nodes(g), 1);
    assert_true(graph_node_is(graph_node(g, 0), "Add"));
    assert_int_equal(g->pb->n_initializer, 1);
    assert_string_equal(g->pb->initializer[0]->name, "bias");
    graph_model_free(m);
}

static void add_node_should_index_and_sort_topologically(void **state) {
    (void)state;
    graph_model *m = load_sample("bias_tile.onnx");
    graph *g = m->main;
    errbuf err = {0};
    /* y = Add(x, bt) becomes y = Relu(Add(...)): the new Relu is appended last but
    ** the Add must come to read its output, so rename through the API. */
    const char *mid = graph_unique_name(g, "pre");
    const char *in[] = {"x"}, *out[] = {mid};
    int32_t idx;
    assert_non_null(graph_add_node(g, "Relu", "r", in, 1, out, 1, &idx));
    assert_int_equal(graph_find(g, mid)->producer, idx);
    assert_int_equal(graph_replace_uses(g, "x", mid), TILEOPT_OK);
    /* The Relu itself read x; put it back. */
    assert_int_equal(graph_node_set_input(g, idx, 0, "x"), TILEOPT_OK);
    assert_int_equal(graph_find(g, mid)->n_uses, 1);
    assert_int_equal(graph_commit(g, &err), TILEOPT_OK);
    assert_int_equal(graph_n_nodes(g), 3);
    /* Relu (appended) now sorts before the Add that reads it. */
    uint32_t relu_at = 99, add_at = 99;
    for (uint32_t i = 0; i < graph_n_nodes(g); i++) {
        if (graph_node_is(graph_node(g, (int32_t)i), "Relu")) relu_at = i;
        if (graph_node_is(graph_node(g, (int32_t)i), "Add")) add_at = i;
    }
    assert_true(relu_at < add_at);
    graph_model_free(m);
}

static void add_initializer_should_be_readable_back(void **state) {
    (void)state;
    graph_model *m = load_sample("shape_repeats.onnx");
    graph *g = m->main;
    errbuf err = {0};
    const int64_t dims[] = {3};
    const int64_t vals[] = {4, 1, 1};
    const char *name;
    assert_int_equal(graph_add_initializer(g, "reps", DT_INT64, dims, 1, vals, sizeof vals,
                                           &name, &err),
                     TILEOPT_OK);
    assert_string_not_equal(name, "reps"); /* a node output already has that name */
    graph_tensor_data d;
    assert_int_equal(graph_tensor_read(m, graph_initializer(g, name), &d, &err), TILEOPT_OK);
    assert_int_equal(d.numel, 3);
    assert_memory_equal(d.data, vals, sizeof vals);
    graph_model_free(m);
}

static void save_buffer_should_round_trip(void **state) {
    (void)state;
    graph_model *m = load_sample("legacy_tile1.onnx");
    void *buf;
    size_t size;
    errbuf err = {0};
    assert_int_equal(graph_model_save_buffer(m, &buf, &size, &err), TILEOPT_OK);
    assert_int_equal(size, m->file_bytes);
    graph_model *again = NULL;
    assert_int_equal(graph_model_load_buffer(buf, size, NULL, NULL, NULL, &again, &err), TILEOPT_OK);
    assert_int_equal(graph_opset(again, ""), 5);
    assert_int_equal(graph_n_nodes(again->main), 3);
    free(buf);
    graph_model_free(again);
    graph_model_free(m);
}

static void load_should_reject_garbage_with_a_message(void **state) {
    (void)state;
    graph_model *m = (graph_model *)1;
    errbuf err = {0};
    static const uint8_t junk[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
    assert_int_not_equal(graph_model_load_buffer(junk, sizeof junk, NULL, NULL, NULL, &m, &err),
                         TILEOPT_OK);
    assert_null(m);
    assert_non_null(strstr(err.msg, "malformed"));
    assert_int_equal(graph_model_load_buffer(junk, 0, NULL, NULL, NULL, &m, &err), TILEOPT_PARSE);
    assert_non_null(strstr(err.msg, "empty"));
}

/* 200 nested GraphProto levels: the wire pre-scan must stop before protobuf-c's
** recursive unpacker does. Built by hand: Model.graph(7) -> Graph.node(1) ->
** Node.attribute(5) -> Attribute.g(6) -> ... */
static void load_should_refuse_deep_nesting(void **state) {
    (void)state;
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap), *tmp = malloc(cap);
    assert_non_null(buf);
    assert_non_null(tmp);
    static const uint8_t tags[] = {(6 << 3) | 2, (5 << 3) | 2, (1 << 3) | 2};
    for (int level = 0; level < 600; level++) {
        uint8_t tag = tags[level % 3];
        size_t hdr = 0;
        tmp[hdr++] = tag;
        size_t v = len;
        do {
            uint8_t b = v & 0x7f;
            v >>= 7;
            tmp[hdr++] = b | (v ? 0x80 : 0);
        } while (v);
        assert_true(hdr + len <= cap);
        memcpy(tmp + hdr, buf, len);
        len += hdr;
        uint8_t *swap = buf;
        buf = tmp;
        tmp = swap;
    }
    /* Wrap in ModelProto.graph (field 7). */
    uint8_t model[1 << 16];
    size_t n = 0, v = len;
    model[n++] = (7 << 3) | 2;
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        model[n++] = b | (v ? 0x80 : 0);
    } while (v);
    memcpy(model + n, buf, len);
    graph_model *m;
    errbuf err = {0};
    assert_int_equal(graph_model_load_buffer(model, n + len, NULL, NULL, NULL, &m, &err), TILEOPT_LIMIT);
    assert_non_null(strstr(err.msg, "nest"));
    free(buf);
    free(tmp);
}

static void save_path_should_fail_cleanly_in_a_missing_folder(void **state) {
    (void)state;
    graph_model *m = load_sample("bias_tile.onnx");
    errbuf err = {0};
    assert_int_equal(graph_model_save_path(m, "/nonexistent-dir/x/out.onnx", &err), TILEOPT_IO);
    assert_non_null(strstr(err.msg, "does not exist"));
    graph_model_free(m);
}

/* Past max_inline_bytes the big initializers move to "<output>.data"; the
** model reloads with equal values, and the model in memory is the saved one:
** it reads the data file, and its record says tileopt wrote that file. */
static void save_should_externalize_a_model_over_the_inline_limit(void **state) {
    (void)state;
    graph_model *m = load_sample_with_data();
    errbuf err = {0};
    const char *name = "w";
    static float w[4096];
    for (size_t i = 0; i < 4096; i++) w[i] = (float)i;
    char dir[] = "/tmp/tileopt_graph_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], data[256];
    snprintf(path, sizeof path, "%s/out.onnx", dir);
    snprintf(data, sizeof data, "%s/out.onnx.data", dir);
    assert_int_equal(graph_model_save_path(m, path, &err), TILEOPT_OK);
    for (graph_model *from = m; from;) {
        const Onnx__TensorProto *t = graph_initializer(from->main, name);
        assert_true(graph_tensor_is_external(t));
        const char *loc = NULL;
        for (size_t k = 0; k < t->n_external_data; k++)
            if (!strcmp(t->external_data[k]->key, "location")) loc = t->external_data[k]->value;
        assert_string_equal(loc, "out.onnx.data");
        graph_tensor_data d;
        assert_int_equal(graph_tensor_read(from, t, &d, &err), TILEOPT_OK);
        assert_true(d.owned);
        assert_memory_equal(d.data, w, sizeof w);
        free(d.data);
        assert_int_equal(from->n_own_data, 1);
        assert_string_equal(from->own_data[0], "out.onnx.data");
        graph_model *back = NULL;
        if (from == m) assert_int_equal(graph_model_load_path(path, NULL, NULL, &back, &err), TILEOPT_OK);
        else graph_model_free(from);
        from = back;
    }
    assert_int_equal(access(data, R_OK), 0);
    graph_model_free(m);
    unlink(path);
    unlink(data);
    rmdir(dir);
}

/* Requests between the first chunk size and the big-block threshold must get a
** chunk large enough to hold them. */
static void arena_should_serve_requests_larger_than_its_chunk(void **state) {
    (void)state;
    arena *a = arena_new();
    assert_non_null(a);
    for (size_t size = 1000; size < (4u << 20); size *= 3) {
        uint8_t *p = arena_alloc(a, size);
        assert_non_null(p);
        memset(p, 0xab, size);
        assert_int_equal(p[size - 1], 0xab);
    }
    assert_null(arena_alloc(a, SIZE_MAX - 8));
    arena_free(a);
}

/* graph_tensor_decode's callback for the tests: keeps what it was shown. */
typedef struct seen {
    int32_t elem, rank;
    int64_t dims[4];
    char name[16];
    graph_bytes str[2];
    char text[2][8];
} seen;

static int keep_seen(graph_tensor_data *d, const char *name, void *arg, errbuf *err) {
    (void)err;
    seen *s = arg;
    s->elem = d->elem;
    s->rank = d->rank;
    for (int32_t i = 0; i < d->rank && i < 4; i++) s->dims[i] = d->dims[i];
    snprintf(s->name, sizeof s->name, "%s", name ? name : "");
    if (d->elem == DT_STRING)
        for (uint64_t i = 0; i < d->numel && i < 2; i++) {
            const graph_bytes *b = (const graph_bytes *)d->data + i;
            snprintf(s->text[i], sizeof s->text[i], "%.*s", (int)b->len, (const char *)b->data);
        }
    return TILEOPT_OK;
}

static void tensor_encode_should_round_trip_strings_through_decode(void **state) {
    (void)state;
    const graph_bytes strs[2] = {{(const uint8_t *)"ab", 2}, {(const uint8_t *)"", 0}};
    const int64_t dims[] = {2, 1};
    void *bytes;
    size_t size;
    errbuf err = {0};
    assert_int_equal(graph_tensor_encode("s", DT_STRING, dims, 2, strs, sizeof strs, &bytes,
                                         &size, &err),
                     TILEOPT_OK);
    seen s = {0};
    assert_int_equal(graph_tensor_decode(bytes, size, keep_seen, &s, &err), TILEOPT_OK);
    free(bytes);
    assert_int_equal(s.elem, DT_STRING);
    assert_int_equal(s.rank, 2);
    assert_int_equal(s.dims[0], 2);
    assert_int_equal(s.dims[1], 1);
    assert_string_equal(s.name, "s");
    assert_string_equal(s.text[0], "ab");
    assert_string_equal(s.text[1], "");
    /* truncated: the parser must refuse it, not read past the end */
    assert_int_equal(graph_tensor_encode("f", DT_FLOAT, dims, 2, "\0\0\0\0\0\0\0\0", 8,
                                         &bytes, &size, &err),
                     TILEOPT_OK);
    assert_int_equal(graph_tensor_decode(bytes, size - 3, keep_seen, &s, &err), TILEOPT_PARSE);
    assert_true(err.msg[0] != 0);
    free(bytes);
}

static void constant_value_should_cover_every_attribute_form(void **state) {
    (void)state;
    int64_t ints[] = {4, 5, 6};
    Onnx__AttributeProto a = ONNX__ATTRIBUTE_PROTO__INIT, b = ONNX__ATTRIBUTE_PROTO__INIT;
    Onnx__AttributeProto *attrs[] = {&a, &b};
    Onnx__NodeProto n = ONNX__NODE_PROTO__INIT;
    n.attribute = attrs;
    n.n_attribute = 1;
    a.name = (char *)"value_ints";
    a.ints = ints;
    a.n_ints = 3;
    graph_const_hdr hdr;
    const Onnx__TensorProto *t;
    errbuf err = {0};
    assert_int_equal(graph_constant_value(&n, &hdr, &t, &err), TILEOPT_OK);
    assert_int_equal(t->data_type, DT_INT64);
    assert_int_equal(t->n_dims, 1);
    assert_int_equal(t->dims[0], 3);
    assert_ptr_equal(t->int64_data, ints); /* no copy: the header points at them */
    a.name = (char *)"value_string";
    a.s = (ProtobufCBinaryData){3, (uint8_t *)"xyz"};
    assert_int_equal(graph_constant_value(&n, &hdr, &t, &err), TILEOPT_OK);
    assert_int_equal(t->data_type, DT_STRING);
    assert_int_equal(t->n_dims, 0);
    assert_int_equal(t->n_string_data, 1);
    a.name = (char *)"value_float";
    a.f = 2.5f;
    assert_int_equal(graph_constant_value(&n, &hdr, &t, &err), TILEOPT_OK);
    assert_int_equal(t->data_type, DT_FLOAT);
    assert_int_equal(t->n_dims, 0);
    assert_int_equal(t->n_float_data, 1);
    assert_true(t->float_data[0] == 2.5f);
    a.name = (char *)""; /* neither form: no list suffix to read before the name */
    assert_int_equal(graph_constant_value(&n, &hdr, &t, &err), TILEOPT_INVALID);
    assert_non_null(strstr(err.msg, "unknown attribute"));
    a.name = (char *)"sparse_value";
    assert_int_equal(graph_constant_value(&n, &hdr, &t, &err), TILEOPT_UNSUPPORTED);
    a.name = (char *)"value_int";
    b.name = (char *)"value_float";
    n.n_attribute = 2;
    assert_int_equal(graph_constant_value(&n, &hdr, &t, &err), TILEOPT_INVALID);
    assert_non_null(strstr(err.msg, "exactly one"));
    assert_null(t);
}

static void pb_clone_should_copy_a_subgraph_deeply(void **state) {
    (void)state;
    graph_model *m = load_sample("bias_tile.onnx");
    Onnx__GraphProto *src = m->pb->graph;
    Onnx__GraphProto *c = graph_pb_clone(m, src);
    assert_non_null(c);
    assert_ptr_not_equal(c, src);
    assert_int_equal(c->n_node, src->n_node);
    assert_ptr_not_equal(c->node[0], src->node[0]);
    assert_string_equal(c->node[0]->op_type, src->node[0]->op_type);
    c->node[0]->name = (char *)"renamed";
    assert_string_not_equal(src->node[0]->name ? src->node[0]->name : "", "renamed");
    /* and attached to a node as its body attribute */
    graph *g = m->main;
    const char *in = src->input[0]->name, *out = graph_unique_name(g, "holder_out");
    Onnx__NodeProto *n = graph_add_node(g, "Identity", "holder", &in, 1, &out, 1, NULL);
    assert_non_null(n);
    assert_int_equal(graph_node_set_attr_graph(g, n, "body", c), TILEOPT_OK);
    assert_int_equal(graph_attr(n, "body")->type, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    graph_model_free(m);
}

/* Subgraph paths name the holding node and the attribute at each level: an If's
** two branches are two graphs, and a GRAPHS attribute adds each graph's place. */
static void path_should_tell_branches_and_list_places_apart(void **state) {
    (void)state;
    graph_model *m = load_sample("bias_tile.onnx");
    graph *g = m->main;
    Onnx__GraphProto *src = m->pb->graph;
    const char *in = src->input[0]->name;
    const char *outs[2] = {graph_unique_name(g, "gate_out"), NULL};
    Onnx__NodeProto *gate = graph_add_node(g, "Identity", "gate", &in, 1, outs, 1, NULL);
    assert_non_null(gate);
    assert_int_equal(graph_node_set_attr_graph(g, gate, "then_branch", graph_pb_clone(m, src)),
                     TILEOPT_OK);
    assert_int_equal(graph_node_set_attr_graph(g, gate, "else_branch", graph_pb_clone(m, src)),
                     TILEOPT_OK);
    outs[0] = graph_unique_name(g, "list_out");
    Onnx__NodeProto *list = graph_add_node(g, "Identity", NULL, &in, 1, outs, 1, NULL);
    assert_non_null(list);
    assert_int_equal(graph_node_set_attr_graph(g, list, "branches", graph_pb_clone(m, src)),
                     TILEOPT_OK);
    /* the setter makes a GRAPH attribute; turn it into a GRAPHS one of two */
    static Onnx__GraphProto *pair[2];
    Onnx__AttributeProto *at = (Onnx__AttributeProto *)graph_attr(list, "branches");
    pair[0] = at->g;
    pair[1] = graph_pb_clone(m, src);
    assert_non_null(pair[1]);
    at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS;
    at->g = NULL;
    at->graphs = pair;
    at->n_graphs = 2;
    errbuf err = {0};
    /* a reindex, not a commit: nothing reads the new nodes, a commit would sweep them */
    assert_int_equal(graph_reindex(g, &err), TILEOPT_OK);
    char buf[128], want[64];
    size_t k = 0, in_list = 0;
    for (uint32_t i = 0; i < graph_n_nodes(g); i++)
        for (graph *s = graph_node_subgraphs(g, (int32_t)i); s; s = s->next_sibling, k++) {
            if (graph_node(g, (int32_t)i) == gate)
                snprintf(want, sizeof want, "gate/%s", k % 2 ? "else_branch" : "then_branch");
            else
                snprintf(want, sizeof want, "#%u/branches[%zu]", i, in_list++);
            assert_string_equal(graph_path(s, buf, sizeof buf), want);
        }
    assert_int_equal(k, 4);
    assert_null(graph_path(g, buf, sizeof buf));
    /* a buffer too small keeps a terminated prefix */
    char small[6];
    graph *then_g = NULL;
    for (uint32_t i = 0; i < graph_n_nodes(g); i++)
        if (graph_node(g, (int32_t)i) == gate) then_g = graph_node_subgraphs(g, (int32_t)i);
    assert_non_null(then_g);
    assert_string_equal(graph_path(then_g, small, sizeof small), "gate/");
    graph_model_free(m);
}

/* A quarter of the physical memory (or less under a cgroup limit), shared
** among the workers, never under 256 MiB; 0 workers count as one. */
static void memory_budget_should_share_a_quarter_of_the_memory_among_workers(void **state) {
    (void)state;
    uint64_t mem = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t one = graph_memory_budget(1), floor = (uint64_t)256 << 20;
    assert_true(one <= mem / 4 || one == floor);
    assert_true(one >= floor);
    assert_int_equal(graph_memory_budget(0), one);
    for (unsigned w = 2; w <= 64; w *= 2) {
        uint64_t b = graph_memory_budget(w);
        assert_true(b == floor || (b <= one / w + 1 && b + 1 >= one / w));
        assert_true(b <= graph_memory_budget(w / 2));
    }
    assert_int_equal(graph_memory_budget(1u << 30), floor);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(index_should_link_producers_and_uses),
        cmocka_unit_test(unique_name_should_avoid_every_existing_name),
        cmocka_unit_test(commit_should_sweep_dead_nodes_and_initializers),
        cmocka_unit_test(add_node_should_index_and_sort_topologically),
        cmocka_unit_test(add_initializer_should_be_readable_back),
        cmocka_unit_test(save_buffer_should_round_trip),
        cmocka_unit_test(load_should_reject_garbage_with_a_message),
        cmocka_unit_test(load_should_refuse_deep_nesting),
        cmocka_unit_test(save_path_should_fail_cleanly_in_a_missing_folder),
        cmocka_unit_test(save_should_externalize_a_model_over_the_inline_limit),
        cmocka_unit_test(arena_should_serve_requests_larger_than_its_chunk),
        cmocka_unit_test(tensor_encode_should_round_trip_strings_through_decode),
        cmocka_unit_test(constant_value_should_cover_every_attribute_form),
        cmocka_unit_test(pb_clone_should_copy_a_subgraph_deeply),
        cmocka_unit_test(path_should_tell_branches_and_list_places_apart),
        cmocka_unit_test(memory_budget_should_share_a_quarter_of_the_memory_among_workers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The op table (graph/ops.h): sorted for its binary search, every row found by
** its name, and lookups that respect the domain and the broadcasting opset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "graph/ops.h"

static void ops_should_be_sorted_by_name(void **state) {
    (void)state;
    for (int i = 1; i < OP_COUNT; i++)
        if (strcmp(op_table[i - 1].name, op_table[i].name) >= 0)
            fail_msg("%s before %s", op_table[i - 1].name, op_table[i].name);
}

static void ops_should_find_every_row_by_its_name(void **state) {
    (void)state;
    for (int i = 0; i < OP_COUNT; i++) assert_int_equal(op_find(op_table[i].name), i);
    assert_int_equal(op_find("NoSuchOp"), OP_NONE);
    assert_int_equal(op_find("tile"), OP_NONE);
    assert_int_equal(op_find(NULL), OP_NONE);
}

static void ops_should_know_default_domain_nodes_only(void **state) {
    (void)state;
    Onnx__NodeProto n;
    onnx__node_proto__init(&n);
    n.op_type = "Tile";
    assert_int_equal(op_of(&n), OP_Tile);
    n.domain = "ai.onnx";
    assert_int_equal(op_of(&n), OP_Tile);
    n.domain = "com.microsoft";
    assert_int_equal(op_of(&n), OP_NONE);
}

static void ops_should_broadcast_from_their_opset_on(void **state) {
    (void)state;
    assert_false(op_broadcasts(OP_Add, 6));
    assert_true(op_broadcasts(OP_Add, 7));
    assert_false(op_broadcasts(OP_Where, 8));
    assert_true(op_broadcasts(OP_Where, 9));
    /* PRelu's slope broadcasts one way only; Tile does not broadcast */
    assert_false(op_broadcasts(OP_PRelu, 13));
    assert_false(op_broadcasts(OP_Tile, 13));
    assert_false(op_broadcasts(OP_NONE, 13));
}

static void ops_should_describe_elementwise_ops_consistently(void **state) {
    (void)state;
    for (int i = 0; i < OP_COUNT; i++) {
        const op_info *r = &op_table[i];
        switch (r->kind) {
        case OPK_OTHER:
            assert_int_equal(r->out, OUT_RULE);
            assert_int_equal(r->bcast, BC_NONE);
            break;
        case OPK_UNARY:
            assert_int_equal(r->min_in, 1);
            assert_int_equal(r->bcast, BC_NONE);
            assert_int_not_equal(r->out, OUT_RULE);
            break;
        case OPK_BINARY:
        case OPK_VARIADIC:
        case OPK_SELECT:
            if (r->bcast == BC_NONE || r->bcast_since < 1 || r->out == OUT_RULE)
                fail_msg("%s: broadcasting elementwise op without its opset or type", r->name);
            break;
        }
    }
}

static void ops_should_check_tile_repeats_against_the_schema(void **state) {
    (void)state;
    errbuf e;
    int64_t dims[2] = {3, 4}, rep[2] = {2, 5};
    graph_type x = {DT_FLOAT, 2, dims, NULL};
    assert_int_equal(op_tile_check_repeats(DT_INT64, 1, rep, 2, &x, &e), TILEOPT_OK);
    assert_int_equal(op_tile_check_repeats(DT_INT64, 1, rep, 2, NULL, &e), TILEOPT_OK);
    assert_int_equal(op_tile_check_repeats(DT_INT32, 1, rep, 2, &x, &e), TILEOPT_INVALID);
    assert_non_null(strstr(e.msg, "int64"));
    assert_int_equal(op_tile_check_repeats(DT_INT64, 2, rep, 2, &x, &e), TILEOPT_INVALID);
    assert_int_equal(op_tile_check_repeats(DT_INT64, 1, rep, 1, &x, &e), TILEOPT_INVALID);
    assert_non_null(strstr(e.msg, "rank 2"));
    int64_t neg[2] = {1, -1};
    assert_int_equal(op_tile_check_repeats(DT_INT64, 1, neg, 2, NULL, &e), TILEOPT_INVALID);
    assert_non_null(strstr(e.msg, "negative"));
    int64_t huge[2] = {INT64_MAX / 2, 1};
    assert_int_equal(op_tile_check_repeats(DT_INT64, 1, huge, 2, &x, &e), TILEOPT_INVALID);
    assert_non_null(strstr(e.msg, "overflows"));
    /* fits in elements, not in bytes */
    int64_t big[2] = {INT64_MAX / 3 / 4, 1}, one[2] = {3, 4};
    graph_type y = {DT_DOUBLE, 2, one, NULL};
    assert_int_equal(op_tile_check_repeats(DT_INT64, 1, big, 2, &y, &e), TILEOPT_INVALID);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ops_should_be_sorted_by_name),
        cmocka_unit_test(ops_should_find_every_row_by_its_name),
        cmocka_unit_test(ops_should_know_default_domain_nodes_only),
        cmocka_unit_test(ops_should_broadcast_from_their_opset_on),
        cmocka_unit_test(ops_should_describe_elementwise_ops_consistently),
        cmocka_unit_test(ops_should_check_tile_repeats_against_the_schema),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

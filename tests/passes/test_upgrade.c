/* Unit tests of the upgrade pass's tables: the generated opset history, the
** adapter table it is keyed against, and the opset -> IR mapping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "passes/passes.h"
#include "passes/upgrade/opset_table.h"

static void opset_table_should_be_sorted_for_bsearch(void **state) {
    (void)state;
    assert_true(opset_table_count > 150);
    for (size_t i = 1; i < opset_table_count; i++)
        assert_true(strcmp(opset_table[i - 1].op, opset_table[i].op) < 0);
    for (size_t i = 0; i < opset_table_count; i++) {
        const opset_entry *e = &opset_table[i];
        assert_true(e->count >= 1);
        for (size_t k = 1; k < e->count; k++) assert_true(e->versions[k - 1] < e->versions[k]);
        assert_ptr_equal(opset_table_find(e->op), e);
    }
    assert_null(opset_table_find("NoSuchOp"));
    assert_null(opset_table_find(""));
}

static void opset_table_should_give_the_schema_in_force(void **state) {
    (void)state;
    const opset_entry *tile = opset_table_find("Tile");
    assert_non_null(tile);
    assert_int_equal(opset_schema_at(tile, 1), 1);
    assert_int_equal(opset_schema_at(tile, 5), 1);
    assert_int_equal(opset_schema_at(tile, 6), 6);
    assert_int_equal(opset_schema_at(tile, 12), 6);
    assert_int_equal(opset_schema_at(tile, 17), 13);
    const opset_entry *range = opset_table_find("Range");
    assert_non_null(range);
    assert_int_equal(opset_schema_at(range, 10), 0);
    assert_int_equal(opset_schema_at(range, 11), 11);
    const opset_entry *ups = opset_table_find("Upsample");
    assert_non_null(ups);
    assert_int_equal(ups->deprecated, 10);
    const int32_t *v;
    size_t n;
    assert_int_equal(opset_table_versions("Softmax", &v, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(v[0], 1);
    assert_int_equal(v[1], 11);
    assert_int_equal(v[2], 13);
    assert_int_equal(opset_table_versions("NoSuchOp", &v, &n), -1);
    assert_int_equal(opset_table_max_opset, 26);
    /* from onnx's changelog past what python3-onnx 1.12 knows */
    assert_int_equal(opset_table_versions("ReduceMean", &v, &n), 0);
    assert_int_equal(v[n - 1], 18);
    assert_int_equal(opset_table_versions("Reshape", &v, &n), 0);
    assert_int_equal(v[n - 1], 25);
}

/* Every adapter row sits on a real schema step: `to` is a since_version of the op
** and `from` the one before it; rows are sorted by (op, to) for bsearch. */
/* Every downgrade row sits on a real schema step too, going down: `from` is a
** since_version and `to` the one before it; sorted by (op, from) for the lookup. */
static void downgrade_should_key_adapters_on_real_schema_steps(void **state) {
    (void)state;
    size_t n = downgrade_adapter_count();
    assert_true(n >= 15);
    const char *prev_op = "";
    int32_t prev_from = 0;
    for (size_t i = 0; i < n; i++) {
        const char *op;
        int32_t from, to;
        downgrade_adapter_at(i, &op, &from, &to);
        int c = strcmp(prev_op, op);
        if (!(c < 0 || (c == 0 && prev_from < from)))
            fail_msg("row %zu (%s) out of order", i, op);
        prev_op = op;
        prev_from = from;
        const opset_entry *e = opset_table_find(op);
        if (!e) fail_msg("row %zu: %s has no schema", i, op);
        size_t k = 0;
        while (k < e->count && e->versions[k] != from) k++;
        if (k == e->count || k == 0) fail_msg("row %zu: %s %d is not a schema step", i, op, from);
        if (e->versions[k - 1] != to)
            fail_msg("row %zu: %s step down from %d goes to %d, not %d", i, op, from,
                     e->versions[k - 1], to);
    }
}

/* The ops rewritten below their first version: sorted for the lookup, each an
** ai.onnx op younger than opset 7 (the rewrites need numpy broadcasting, so an
** older op could never use its row). */
static void downgrade_should_list_expansions_of_ops_younger_than_7(void **state) {
    (void)state;
    size_t n = downgrade_expansion_count();
    assert_true(n >= 5);
    for (size_t i = 0; i < n; i++) {
        const char *op = downgrade_expansion_op(i);
        if (i && strcmp(downgrade_expansion_op(i - 1), op) >= 0)
            fail_msg("row %zu (%s) out of order", i, op);
        const opset_entry *e = opset_table_find(op);
        if (!e) fail_msg("row %zu: %s has no schema", i, op);
        if (e->versions[0] <= 7) fail_msg("row %zu: %s exists at opset 7", i, op);
    }
}

static void upgrade_should_key_adapters_on_real_schema_steps(void **state) {
    (void)state;
    size_t n = upgrade_adapter_count();
    assert_true(n > 40);
    const char *prev_op = "";
    int32_t prev_to = 0;
    for (size_t i = 0; i < n; i++) {
        const char *op;
        int32_t from, to;
        bool has_fn;
        upgrade_adapter_at(i, &op, &from, &to, &has_fn);
        int c = strcmp(prev_op, op);
        if (!(c < 0 || (c == 0 && prev_to < to))) fail_msg("row %zu (%s) out of order", i, op);
        prev_op = op;
        prev_to = to;
        const opset_entry *e = opset_table_find(op);
        if (!e) fail_msg("row %zu: %s has no schema", i, op);
        size_t k = 0;
        while (k < e->count && e->versions[k] != to) k++;
        if (k == e->count || k == 0) fail_msg("row %zu: %s %d is not a schema step", i, op, to);
        if (e->versions[k - 1] != from)
            fail_msg("row %zu: %s step to %d comes from %d, not %d", i, op, to,
                     e->versions[k - 1], from);
    }
}

static void upgrade_should_map_opsets_to_their_ir_version(void **state) {
    (void)state;
    assert_int_equal(upgrade_ir_for_opset(1), 3);
    assert_int_equal(upgrade_ir_for_opset(6), 3);
    assert_int_equal(upgrade_ir_for_opset(8), 3);
    assert_int_equal(upgrade_ir_for_opset(9), 4);
    assert_int_equal(upgrade_ir_for_opset(10), 5);
    assert_int_equal(upgrade_ir_for_opset(11), 6);
    assert_int_equal(upgrade_ir_for_opset(13), 7);
    assert_int_equal(upgrade_ir_for_opset(14), 7);
    assert_int_equal(upgrade_ir_for_opset(15), 8);
    assert_int_equal(upgrade_ir_for_opset(17), 8);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(opset_table_should_be_sorted_for_bsearch),
        cmocka_unit_test(opset_table_should_give_the_schema_in_force),
        cmocka_unit_test(upgrade_should_key_adapters_on_real_schema_steps),
        cmocka_unit_test(downgrade_should_key_adapters_on_real_schema_steps),
        cmocka_unit_test(downgrade_should_list_expansions_of_ops_younger_than_7),
        cmocka_unit_test(upgrade_should_map_opsets_to_their_ir_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

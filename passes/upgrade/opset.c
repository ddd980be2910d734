/*
** Opset and IR accessors: lookups into the generated schema-version table
** (opset_table.c) and the IR version each opset needs.
*/
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "passes/passes.h"
#include "passes/upgrade/opset_table.h"

static int entry_cmp(const void *key, const void *elem) {
    return strcmp((const char *)key, ((const opset_entry *)elem)->op);
}

const opset_entry *opset_table_find(const char *op) {
    if (!op) return NULL;
    return bsearch(op, opset_table, opset_table_count, sizeof opset_table[0], entry_cmp);
}

int opset_table_versions(const char *op, const int32_t **versions, size_t *count) {
    const opset_entry *e = opset_table_find(op);
    if (!e) return -1;
    *versions = e->versions;
    *count = e->count;
    return 0;
}

int32_t opset_schema_at(const opset_entry *e, int64_t opset) {
    int32_t v = 0;
    for (size_t i = 0; i < e->count && e->versions[i] <= opset; i++) v = e->versions[i];
    return v;
}

/* The IR version each opset first shipped with (onnx.helper.VERSION_TABLE): a
** model importing that opset needs at least this IR. */
static const struct {
    int32_t opset, ir;
} ir_for_opset[] = {
    {1, 3}, {9, 4}, {10, 5}, {11, 6}, {12, 7}, {15, 8}, {19, 9}, {21, 10}, {23, 11},
    {24, 12}, {25, 13},
};

int64_t upgrade_ir_for_opset(int64_t opset) {
    int64_t ir = 3;
    for (size_t i = 0; i < countof(ir_for_opset); i++)
        if (ir_for_opset[i].opset <= opset) ir = ir_for_opset[i].ir;
    return ir;
}

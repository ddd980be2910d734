/* The op table (graph/ops.h) and lookups by name. */
#include "graph/ops.h"

#include <stdlib.h>
#include <string.h>

const op_info op_table[OP_COUNT] = {
#define X(name_, min_, max_, kind_, out_, bcast_, since_) \
    {#name_, min_, max_, kind_, out_, bcast_, since_},
    TILEOPT_OPS(X)
#undef X
};

static int by_name(const void *key, const void *row) {
    return strcmp((const char *)key, ((const op_info *)row)->name);
}

op_id op_find(const char *name) {
    if (!name) return OP_NONE;
    const op_info *r = bsearch(name, op_table, OP_COUNT, sizeof op_table[0], by_name);
    return r ? (op_id)(r - op_table) : OP_NONE;
}

op_id op_of(const Onnx__NodeProto *n) {
    if (!n || !graph_domain_is_default(n->domain)) return OP_NONE;
    return op_find(n->op_type);
}

bool op_broadcasts(op_id op, int64_t opset) {
    if (op < 0 || op >= OP_COUNT) return false;
    const op_info *r = &op_table[op];
    return r->bcast == BC_MULTI && opset >= r->bcast_since;
}

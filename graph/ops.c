/* The op table (graph/ops.h) and lookups by name. */
#include "graph/ops.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

const op_info op_table[OP_COUNT] = {
#define X(name_, min_, max_, kind_, out_, bcast_, since_, shape_in_) \
    {#name_, min_, max_, kind_, out_, bcast_, since_, shape_in_},
    TILEOPT_OPS(X)
#undef X
};

/* Every pass asks each node its op: a hash of the names, built once, answers
** with one string compare where a binary search took eight. At most half full. */
#define NAME_SLOTS 1024
_Static_assert(OP_COUNT * 2 <= NAME_SLOTS, "the op-name table must stay half empty");
static int16_t name_slots[NAME_SLOTS]; /* op + 1; 0 = empty */
static once_flag names_once = ONCE_FLAG_INIT;

static void names_build(void) {
    for (int op = 0; op < OP_COUNT; op++) {
        uint32_t i = graph_name_hash(op_table[op].name) & (NAME_SLOTS - 1);
        while (name_slots[i]) i = (i + 1) & (NAME_SLOTS - 1);
        name_slots[i] = (int16_t)(op + 1);
    }
}

op_id op_find(const char *name) {
    if (!name) return OP_NONE;
    call_once(&names_once, names_build);
    for (uint32_t i = graph_name_hash(name) & (NAME_SLOTS - 1); name_slots[i];
         i = (i + 1) & (NAME_SLOTS - 1))
        if (strcmp(op_table[name_slots[i] - 1].name, name) == 0)
            return (op_id)(name_slots[i] - 1);
    return OP_NONE;
}

op_id op_of(const Onnx__NodeProto *n) {
    if (!n || !graph_domain_is_default(n->domain)) return OP_NONE;
    return op_find(n->op_type);
}

static void mark_present(graph *g, uint8_t *bits) {
    for (uint32_t i = 0; i < graph_n_nodes(g); i++) {
        if (graph_node_removed(g, (int32_t)i)) continue;
        op_id op = op_of(graph_node(g, (int32_t)i));
        if (op != OP_NONE) bits[op / 8] |= (uint8_t)(1u << (op % 8));
        for (graph *s = graph_node_subgraphs(g, (int32_t)i); s; s = s->next_sibling)
            mark_present(s, bits);
    }
}

bool op_model_has(graph_model *m, const op_id *ops, size_t n) {
    if (!m->op_present && !(m->op_present = arena_calloc(m->arena, (OP_COUNT + 7) / 8, 1)))
        return true;
    if (!m->op_present_current) {
        memset(m->op_present, 0, (OP_COUNT + 7) / 8);
        mark_present(m->main, m->op_present);
        m->op_present_current = true;
    }
    for (size_t k = 0; k < n; k++)
        if (ops[k] != OP_NONE && (m->op_present[ops[k] / 8] & (1u << (ops[k] % 8)))) return true;
    return false;
}

bool op_random(op_id op) {
    static const op_id random_ops[] = {
        OP_RandomNormal, OP_RandomNormalLike, OP_RandomUniform, OP_RandomUniformLike,
        OP_Multinomial, OP_Bernoulli,
    };
    for (size_t i = 0; i < countof(random_ops); i++)
        if (op == random_ops[i]) return true;
    return false;
}

bool op_broadcasts(op_id op, int64_t opset) {
    if (op < 0 || op >= OP_COUNT) return false;
    const op_info *r = &op_table[op];
    return r->bcast == BC_MULTI && opset >= r->bcast_since;
}

int op_tile_check_repeats(int32_t elem, int32_t rank, const int64_t *rep, size_t n,
                          const graph_type *input, errbuf *err) {
    if (elem != DT_INT64)
        return err_set(err, TILEOPT_INVALID, "repeats must be int64, not %s", dtype_name(elem));
    if (rank != 1)
        return err_set(err, TILEOPT_INVALID, "repeats must be 1-D, not of rank %d", (int)rank);
    if (input && input->rank >= 0 && (size_t)input->rank != n)
        return err_set(err, TILEOPT_INVALID, "%zu repeats for an input of rank %d", n,
                       (int)input->rank);
    bool known = input && graph_type_static(input);
    uint64_t total = 1;
    for (size_t i = 0; i < n; i++) {
        if (rep[i] < 0)
            return err_set(err, TILEOPT_INVALID, "repeats[%zu] = %" PRId64 " is negative", i,
                           rep[i]);
        int64_t d;
        if (known && (__builtin_mul_overflow(input->dims[i], rep[i], &d) ||
                      (d && total > UINT64_MAX / (uint64_t)d)))
            return err_set(err, TILEOPT_INVALID,
                           "the output size overflows (axis %zu: %" PRId64 " x %" PRId64 ")",
                           i, input->dims[i], rep[i]);
        if (known) total *= (uint64_t)d;
    }
    const dtype_info *di = known ? dtype_get(input->elem) : NULL;
    if (di && total > UINT64_MAX / di->size)
        return err_set(err, TILEOPT_INVALID,
                       "the output byte size overflows (%" PRIu64 " elements of %zu bytes)",
                       total, (size_t)di->size);
    return TILEOPT_OK;
}

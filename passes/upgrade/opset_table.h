/* Every ai.onnx operator's schema version history (generated: opset_table.c). */
#ifndef TILEOPT_OPSET_TABLE_H
#define TILEOPT_OPSET_TABLE_H

#include <stddef.h>
#include <stdint.h>

/* What one schema version of an op allows a node. */
typedef struct opset_schema {
    int32_t since;
    uint8_t max_inputs;       /* 255: variadic */
    uint32_t required;        /* bit k: input slot k must be given */
    uint32_t types;           /* bit k: TensorProto.DataType k is taken somewhere */
    const char *const *attrs; /* attribute names, sorted */
    const char *const *defaults; /* per attribute: an int's or string's default as
                                 ** text, NULL when it has none (or is of another type) */
    uint8_t n_attrs;
    /* per input and output slot, the element types it takes (0: not a tensor
    ** type listed here); a variadic last slot stands for the rest */
    const uint32_t *in_types;
    uint8_t n_in_types;
    const uint32_t *out_types;
    uint8_t n_out_types;
} opset_schema;

typedef struct opset_entry {
    const char *op;
    const int32_t *versions;  /* since_versions, ascending */
    const opset_schema *schemas; /* one per version, in the same order */
    size_t count;
    int32_t deprecated;       /* since_version of the deprecated schema, or 0 */
} opset_entry;

/* Sorted by op (strcmp order). */
extern const opset_entry opset_table[];
extern const size_t opset_table_count;
extern const int32_t opset_table_max_opset;

/* NULL when the op has no ai.onnx schema. */
const opset_entry *opset_table_find(const char *op);
/* 0 and the versions when op is known, -1 when it is not. */
int opset_table_versions(const char *op, const int32_t **versions, size_t *count);
/* The schema version in force at an opset (largest since_version <= opset), or 0
** when the op did not exist yet. */
int32_t opset_schema_at(const opset_entry *e, int64_t opset);

#endif

/* The element-type table: one row per ONNX TensorProto.DataType. */
#ifndef TILEOPT_DTYPE_H
#define TILEOPT_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    DT_UNDEFINED = 0, DT_FLOAT = 1, DT_UINT8 = 2, DT_INT8 = 3, DT_UINT16 = 4,
    DT_INT16 = 5, DT_INT32 = 6, DT_INT64 = 7, DT_STRING = 8, DT_BOOL = 9,
    DT_FLOAT16 = 10, DT_DOUBLE = 11, DT_UINT32 = 12, DT_UINT64 = 13,
    DT_COMPLEX64 = 14, DT_COMPLEX128 = 15, DT_BFLOAT16 = 16,
    DT_FLOAT8E4M3FN = 17, DT_FLOAT8E4M3FNUZ = 18, DT_FLOAT8E5M2 = 19,
    DT_FLOAT8E5M2FNUZ = 20,
    DT_COUNT = 21
};

/* Which TensorProto repeated field carries the values when raw_data is absent. */
typedef enum dtype_field {
    FIELD_NONE, FIELD_FLOAT, FIELD_INT32, FIELD_STRING, FIELD_INT64, FIELD_DOUBLE,
    FIELD_UINT64
} dtype_field;

typedef enum dtype_kind {
    KIND_NONE, KIND_FLOAT, KIND_SINT, KIND_UINT, KIND_BOOL, KIND_STRING, KIND_COMPLEX
} dtype_kind;

typedef struct dtype_info {
    const char *name;        /* as onnx.TensorProto.DataType.Name() */
    uint8_t size;            /* bytes per element in memory (string: graph_bytes) */
    dtype_kind kind;
    dtype_field field;
    uint8_t field_per_elem;  /* typed-field entries per element (complex: 2) */
} dtype_info;

/* NULL for codes outside the table or UNDEFINED. */
const dtype_info *dtype_get(int32_t elem);
static inline bool dtype_valid(int32_t elem) { return dtype_get(elem) != NULL; }
const char *dtype_name(int32_t elem); /* "?" when unknown */

#endif

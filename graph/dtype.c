#include "graph/dtype.h"

#include "graph/graph.h"

/* Strings sit in memory as graph_bytes so data-moving kernels can treat them as
** fixed-size elements. */
static const dtype_info table[] = {
    [DT_UNDEFINED] = {NULL, 0, KIND_NONE, FIELD_NONE, 0},
    [DT_FLOAT] = {"FLOAT", 4, KIND_FLOAT, FIELD_FLOAT, 1},
    [DT_UINT8] = {"UINT8", 1, KIND_UINT, FIELD_INT32, 1},
    [DT_INT8] = {"INT8", 1, KIND_SINT, FIELD_INT32, 1},
    [DT_UINT16] = {"UINT16", 2, KIND_UINT, FIELD_INT32, 1},
    [DT_INT16] = {"INT16", 2, KIND_SINT, FIELD_INT32, 1},
    [DT_INT32] = {"INT32", 4, KIND_SINT, FIELD_INT32, 1},
    [DT_INT64] = {"INT64", 8, KIND_SINT, FIELD_INT64, 1},
    [DT_STRING] = {"STRING", sizeof(graph_bytes), KIND_STRING, FIELD_STRING, 1},
    [DT_BOOL] = {"BOOL", 1, KIND_BOOL, FIELD_INT32, 1},
    [DT_FLOAT16] = {"FLOAT16", 2, KIND_FLOAT, FIELD_INT32, 1},
    [DT_DOUBLE] = {"DOUBLE", 8, KIND_FLOAT, FIELD_DOUBLE, 1},
    [DT_UINT32] = {"UINT32", 4, KIND_UINT, FIELD_UINT64, 1},
    [DT_UINT64] = {"UINT64", 8, KIND_UINT, FIELD_UINT64, 1},
    [DT_COMPLEX64] = {"COMPLEX64", 8, KIND_COMPLEX, FIELD_FLOAT, 2},
    [DT_COMPLEX128] = {"COMPLEX128", 16, KIND_COMPLEX, FIELD_DOUBLE, 2},
    [DT_BFLOAT16] = {"BFLOAT16", 2, KIND_FLOAT, FIELD_INT32, 1},
    [DT_FLOAT8E4M3FN] = {"FLOAT8E4M3FN", 1, KIND_FLOAT, FIELD_INT32, 1},
    [DT_FLOAT8E4M3FNUZ] = {"FLOAT8E4M3FNUZ", 1, KIND_FLOAT, FIELD_INT32, 1},
    [DT_FLOAT8E5M2] = {"FLOAT8E5M2", 1, KIND_FLOAT, FIELD_INT32, 1},
    [DT_FLOAT8E5M2FNUZ] = {"FLOAT8E5M2FNUZ", 1, KIND_FLOAT, FIELD_INT32, 1},
};
_Static_assert(countof(table) == DT_COUNT, "one row per data type");

const dtype_info *dtype_get(int32_t elem) {
    if (elem <= DT_UNDEFINED || elem >= DT_COUNT) return NULL;
    return &table[elem];
}

const char *dtype_name(int32_t elem) {
    const dtype_info *d = dtype_get(elem);
    return d ? d->name : "?";
}

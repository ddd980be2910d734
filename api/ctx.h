/* api/: the public API in tileopt.h over the passes. The context (tileopt_ctx),
** the model and tensor handles, and what the API files share. */
#ifndef TILEOPT_CTX_H
#define TILEOPT_CTX_H

#include <cjson/cJSON.h>

#include "passes/pass.h"
#include "tileopt.h"

/* One --input-shape: a main-graph input's dims, fixed at every load. */
typedef struct api_input_shape {
    char *name;
    int32_t rank;
    int64_t dims[TENSOR_MAX_RANK];
} api_input_shape;

struct tileopt_ctx {
    pass_options opt;
    api_input_shape *input_shapes;
    size_t n_input_shapes;
    errbuf err;
    cJSON *report;           /* NULL until tileopt_report_begin(); actions as text */
    cJSON *report_full;      /* the last tileopt_report_json(), actions parsed */
    tileopt_progress_fn progress;
    void *progress_user;
    tileopt_temp_fn temp_hook;
    void *temp_user;
};

struct tileopt_model {
    graph_model *g;
};

struct tileopt_tensor {
    tensor *t;
    char *name;
    tensor *plain;           /* t laid out in full, made on first need (or NULL) */
};

/* rtol/atol of ONNX's backend tests, the one place the tolerances of verify,
** run --test-dir and tileopt_tensor_compare are set */
#define COMPARE_RTOL 1e-3
#define COMPARE_ATOL 1e-7

/* Wrap t (taken over, freed on failure) in a public handle named name. */
tileopt_status api_wrap_tensor(tileopt_ctx *ctx, tensor *t, const char *name,
                               tileopt_tensor **out);
/* numpy has no bfloat16 or 8-bit floats, so ONNX's test data and numpy callers
** hand them over as their bits: a UINT16 tensor where a BFLOAT16 one belongs, or
** a UINT8 one where an 8-bit float belongs, is read as the bits it holds. */
bool api_bits_for(int32_t want, const tensor *t);
/* "FLOAT [2,3]", "a sequence of 3 FLOAT tensors", "an empty optional" */
void api_shape_text(const tensor *t, char *buf, size_t cap);

/* ctx's evaluation limits with its progress callback: a run reports its
** main-graph nodes as run_what, and a big Tile written out its bytes. */
eval_limits api_eval_limits(const tileopt_ctx *ctx, const char *run_what);

/* Copy an errbuf failure into ctx and return its code. */
tileopt_status ctx_fail(tileopt_ctx *ctx, const errbuf *err);
/* The report's top-level section `key`, an array when type_array is set and an
** object otherwise, created on first use; owned by the report. */
cJSON *ctx_report_section(tileopt_ctx *ctx, const char *key, int type_array);

/* Node, Tile and initializer counts over the main graph and every subgraph;
** of the initializer bytes, those stored in external data files. ops: how many
** nodes of each op type ("domain:op" outside the default domain); ext_files:
** the external data files the initializers name, each once (both JSON, owned
** by the caller, NULL when out of memory). */
typedef struct api_counts {
    uint64_t nodes, tiles, inits, init_bytes, ext_bytes;
    cJSON *ops, *ext_files;
    cJSON *op_count[OP_COUNT]; /* the ops entry of each default-domain op, once seen */
    bool failed;             /* out of memory: ops or ext_files lack entries */
} api_counts;
void api_count(const graph_model *m, api_counts *c);
void api_counts_free(api_counts *c);
/* The model's opset_import as a JSON array of {domain, version}; NULL when out
** of memory. */
cJSON *api_opsets_json(const graph_model *m);
/* item under key in parent (appended when key is NULL): false, item freed, when
** either is NULL or the key cannot be copied. The report and inspect build
** their JSON through it, so a tree is whole or its call fails. */
bool api_json_put(cJSON *parent, const char *key, cJSON *item);
/* JSON text for reports and inspect (pass_json_write, pretty): exact int64s,
** \xNN for bytes that are not UTF-8. Free with free(). */
char *api_json_print(const cJSON *root);

#endif

/* api/: the public API in tileopt.h over the passes. The context (tileopt_ctx),
** the model and tensor handles, and what the API files share. */
#ifndef TILEOPT_CTX_H
#define TILEOPT_CTX_H

#include "passes/pass.h"
#include "tileopt.h"

/* One --input-shape: a main-graph input's dims, fixed at every load. */
typedef struct api_input_shape {
    char *name;
    int32_t rank;
    int64_t dims[TENSOR_MAX_RANK];
} api_input_shape;

/* Names in the order first met, each with a count, found again through a hash
** table: a model names thousands of external data files in the worst case. */
typedef struct api_names {
    char **name;
    uint64_t *count;
    size_t n, cap;
    uint32_t *slots;         /* index + 1; a power of two, at most half full */
    uint32_t n_slots;
} api_names;
/* count[name] += by, the name added on first use; false when out of memory. */
bool api_names_bump(api_names *s, const char *name, uint64_t by);
/* The index of name in s, or SIZE_MAX when s lacks it. */
size_t api_names_find(const api_names *s, const char *name);
void api_names_free(api_names *s);

/* A model as the report and inspect describe it: the counts over the main graph
** and every subgraph, its op types ("domain:op" outside the default domain),
** the external data files its initializers name, its opset imports. */
typedef struct api_summary {
    char *path;
    int64_t stat[TILEOPT_MODEL_STAT_COUNT_];
    api_names ops;
    api_names files;
    char **opset_domain;
    int64_t *opset_version;
    size_t n_opsets;
} api_summary;
/* TILEOPT_NOMEM, or TILEOPT_OK with s filled (free it either way). */
int api_summarize(const graph_model *m, const char *path, uint64_t file_bytes, api_summary *s);
void api_summary_free(api_summary *s);
/* The opset imports as a JSON array of {domain, version}. */
void api_opsets_write(json_w *w, const api_summary *s);

/* The verify section of the report: its JSON text, laid out for its place,
** and what the typed accessors give. */
typedef struct api_verify {
    char *json;              /* NULL: no verify since the report began */
    tileopt_verdict verdict;
    char *reason;            /* NULL: none */
    char *inputs;            /* the inputs it ran on, as the summary says them; NULL: none */
} api_verify;
void api_verify_clear(api_verify *v);

/* What the report holds besides the passes' entries (ctx->results). */
typedef struct api_report {
    bool begun;
    api_summary input, output;
    bool has_output;
    api_verify verify;
} api_report;

/* How tileopt_model_verify runs: verify is no pass, so its options live here. */
typedef struct api_verify_options {
    uint64_t seed;           /* of the generated inputs */
    bool strict;             /* no verdict is a failure */
    bool dim_given;          /* --verify-shape N: every open dim takes dim; else sizes */
    int64_t dim;             /* are tried in turn (VERIFY_SIZES) */
    api_input_shape *shapes; /* --verify-shape NAME:D1,...: one input's shape */
    size_t n_shapes;
    char **files;            /* --verify-inputs: run on these instead */
    size_t n_files;
} api_verify_options;

/* The size an open dim of a generated input takes first (and for run --random). */
#define API_RANDOM_DIM 2

struct tileopt_ctx {
    pass_options opt;
    api_verify_options verify;
    api_input_shape *input_shapes;
    size_t n_input_shapes;
    errbuf err;
    api_report report;
    pass_results results;    /* the pass runs since the report began */
    graph_progress progress;
    tileopt_temp_fn temp_hook;
    void *temp_user;
    char data_name[256];     /* "data-name": "" for OUT's name and ".data" */
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

/* What an evaluation on ctx goes by: its limits and its progress callback; a
** run reports its main-graph nodes as run_what, a big Tile written out its
** bytes. */
eval_env api_eval_env(const tileopt_ctx *ctx, const char *run_what);

/* Read a whole regular file of at most max bytes into a new buffer. */
int api_read_file(const char *path, uint64_t max, void **data, size_t *size, errbuf *err);

/* What graph input v declares, as people read it: "FLOAT [N,3,224,224]". */
void api_decl_text(const graph_value *v, const Onnx__ValueInfoProto *vi, char *buf, size_t cap);
/* t fits input v: its element type, rank and static dims (TILEOPT_MISUSE naming
** the input, what it got and what the model declares). */
int api_check_input(const graph_value *v, const Onnx__ValueInfoProto *vi, const tensor *t,
                    errbuf *err);
/* TILEOPT_MISUSE: the model takes other inputs than the `given` count, listed. */
int api_inputs_missing(graph *g, size_t given, errbuf *err);
/* Values for g's inputs from files (tileopt_model_inputs_load): values[i] for
** input i and from[i] the file that gave it, n of each, all the caller's. */
int api_inputs_from_files(tileopt_ctx *ctx, graph *g, const char *const *paths, size_t n_paths,
                          tensor ***values, char ***from, size_t *n);
/* Random values for g's inputs (the seed and --verify-shape of ctx; open dims
** `lead` on the leading axis, `inner` elsewhere), each described under
** "inputs" in w when w is not NULL. why is set (TILEOPT_OK returned) when an
** input cannot be generated; *sized tells whether some dim took `inner`. */
int api_random_inputs(tileopt_ctx *ctx, graph *g, int64_t lead, int64_t inner, json_w *w,
                      tensor ***values, size_t *n, bool *sized, char *why, size_t why_cap);

/* Release what the report and the pass results hold (tileopt_ctx_free). */
void api_report_free(tileopt_ctx *ctx);

/* Copy an errbuf failure into ctx and return its code. */
tileopt_status ctx_fail(tileopt_ctx *ctx, const errbuf *err);

/* Finish a JSON text written into t (a NUL at its end): the text, or NULL
** (and t freed) when an allocation failed. */
char *api_text_finish(pass_text *t);

#endif

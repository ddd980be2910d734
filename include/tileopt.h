/*
** tileopt: optimize ONNX models around the Tile operator.
**
** This header is the whole public interface of libtileopt. Anything not declared
** here is not API: internal headers under graph/, eval/ and passes/ may change in
** any release.
**
** Conventions
** - Every function that can fail returns a tileopt_status. TILEOPT_OK is 0.
**   tileopt_status_str() gives a static English phrase for a status;
**   tileopt_ctx_errmsg() gives the details of the last failure on that context
**   (what went wrong and where: node, field, file).
** - Handles are opaque. Constructors take an out-parameter and set it to NULL on
**   failure. Every *_free() accepts NULL and does nothing.
** - Ownership: the caller owns every handle it receives and frees it with the
**   matching *_free(). Strings returned as `const char *` belong to the handle they
**   came from and stay valid until the next call on that handle or its free.
**   Strings and buffers returned through `char **` / `void **` out-parameters are
**   the caller's, to release with tileopt_free().
** - There is no global state. A tileopt_ctx holds options, limits, the report and
**   the error message; use one per thread.
** - The library never prints and never exits.
*/
#ifndef TILEOPT_H
#define TILEOPT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(TILEOPT_BUILDING) && defined(__GNUC__)
#define TILEOPT_API __attribute__((visibility("default")))
#else
#define TILEOPT_API
#endif

#define TILEOPT_VERSION "0.1.0"

typedef enum tileopt_status {
    TILEOPT_OK = 0,
    TILEOPT_ERROR = 1,       /* generic failure */
    TILEOPT_NOMEM = 2,       /* out of memory */
    TILEOPT_IO = 3,          /* cannot read or write a file */
    TILEOPT_PARSE = 4,       /* bytes are not a well-formed ONNX protobuf */
    TILEOPT_INVALID = 5,     /* well-formed but not a valid model or tensor */
    TILEOPT_UNSUPPORTED = 6, /* valid, but outside what tileopt handles */
    TILEOPT_LIMIT = 7,       /* a resource limit was hit */
    TILEOPT_MISMATCH = 8,    /* outputs differ (run --test-dir, verify) */
    TILEOPT_MISUSE = 9,      /* bad argument: unknown option, pass or value */
    TILEOPT_STATUS_COUNT_ = 10
} tileopt_status;

/* A static phrase for a status code; never NULL. */
TILEOPT_API const char *tileopt_status_str(tileopt_status status);
/* The library version, TILEOPT_VERSION at build time. */
TILEOPT_API const char *tileopt_version(void);
/* Release memory handed out through a char ** or void ** out-parameter. */
TILEOPT_API void tileopt_free(void *p);

/* ---------------------------------------------------------------- context */

typedef struct tileopt_ctx tileopt_ctx;

TILEOPT_API tileopt_status tileopt_ctx_new(tileopt_ctx **out);
TILEOPT_API void tileopt_ctx_free(tileopt_ctx *ctx);
/* Details of the last failure on ctx ("" when none). Owned by ctx. */
TILEOPT_API const char *tileopt_ctx_errmsg(const tileopt_ctx *ctx);

/*
** Options, by the CLI flag's name without dashes and the flag's text value:
**   "target-opset"     1..26 (upgrade); by default a model keeps its opset from
**                      7 on and goes to 13 below 7. A target below the model's
**                      opset is reached one schema step down at a time where
**                      each holds exactly (TILEOPT_UNSUPPORTED naming every node
**                      that cannot, and why, else)
**   "fold-limit"       bytes, default 1048576 (fold)
**   "fold-max-growth"  factor, default 0 = off (fold)
**   "fold-scope"       "tile" (default) or "all" (fold)
**   "fuse-split"       "0" (default) or "1" (fuse)
**   "keep-initializer-inputs" "0" (default) or "1" (upgrade): when the IR
**                      version goes from below 4 to 4 or more, initializers
**                      stay listed among the graph inputs (by default they are
**                      taken out: from IR 4 on a listed initializer is an input
**                      the caller may override, which runtimes do not fold)
**   "max-tensor-bytes" bytes one evaluated tensor may take, default 4 GiB
**   "max-eval-bytes"   bytes all live evaluator tensors may take, default
**                      tileopt_memory_budget(1)
**   "max-eval-steps"   nodes run plus Loop iterations in one evaluation (run,
**                      verify, each fold; a node making a sequence counts one
**                      more per 64 items), default 2^22; 0 = no limit
**   "max-depth"        subgraph nesting depth, 1 to 256, default 64
**   "max-rank"         tensor rank, default 64
**   "seed"             seed for --verify inputs, default 1
**   "verify-strict"    "0" (default) or "1": tileopt_model_verify fails with
**                      TILEOPT_UNSUPPORTED where it would give no verdict
**   "data-name"        the file name (one component, beside OUT) of the external
**                      data a save writes, default OUT's name plus ".data";
**                      tileopt_model_save refuses one that exists unless an
**                      earlier save to OUT wrote it
**   "verify-shape"     N: every symbolic or unknown dim of a generated input
**                      takes N (default: 2 on the leading axis, elsewhere 2,
**                      64, then 512 until the input model runs); or
**                      "NAME:D1,D2,..." (repeatable): input NAME's shape in
**                      generated inputs (the model is not changed, unlike
**                      "input-shape"). Dims above 2^40 are refused.
**   "verify-inputs"    a path (repeatable): tileopt_model_verify runs on the
**                      values these files give (as tileopt_model_inputs_load
**                      reads them) instead of generated ones
**   "input-shape"      "NAME:D1,D2,..." (repeatable; the last ':' separates, so
**                      names like "x:0" work; "NAME:" is a scalar): every model
**                      loaded afterwards gets that main-graph input's dims
**                      fixed, and each named dim (dim_param) of it bound to its
**                      size wherever the model declares it. A name that is no
**                      graph input, another rank, or a static dim that differs
**                      fails the load with TILEOPT_MISUSE. The report lists them
**                      in "input_shapes".
** Unknown names and malformed values give TILEOPT_MISUSE.
*/
TILEOPT_API tileopt_status tileopt_ctx_set(tileopt_ctx *ctx, const char *name,
                                           const char *value);
/* The default of "max-eval-bytes" for one of `workers` processes working at
** once (0 counts as 1): a quarter of the machine's physical memory, or of the
** process's cgroup limit when that is lower, divided among them, and at least
** 256 MiB. A program running models in parallel sets each one's option to it. */
TILEOPT_API uint64_t tileopt_memory_budget(unsigned workers);

/*
** Progress callback for long work; `done` of `total` units of `what`, the phase:
**   "loading"               bytes of a model file of 64 MiB or more, unpacked
**   "upgrade", "fold", "fuse"  nodes a pass has looked at
**   "evaluating NAME"       bytes written of value NAME, a Tile of 64 MiB or
**                           more written out (by fold, run or verify)
**   "running", "verify: input model", "verify: output model"
**                           main-graph nodes tileopt_model_run or
**                           tileopt_model_verify has run
**   "saving", "saving data" bytes of the model file and of its external data
** Phases that count bytes are exactly those whose name starts with "loading",
** "evaluating" or "saving". Each phase starts at 0 (or its first step) and ends
** with done == total. The CLI uses it to draw progress on a terminal. NULL (the
** default) reports nothing.
*/
typedef void (*tileopt_progress_fn)(void *user, const char *what, uint64_t done,
                                    uint64_t total);
TILEOPT_API void tileopt_ctx_set_progress(tileopt_ctx *ctx, tileopt_progress_fn fn,
                                          void *user);

/*
** Called with the path of each temporary file a save creates (OUT, its external
** data, a report) just before it is created, and with NULL once it has been
** renamed into place or removed. A program that may be killed while saving keeps
** the last path and removes it from its signal handler (unlink is
** async-signal-safe; a path not created yet is simply not there); the CLI does so
** on SIGINT, SIGTERM and SIGHUP. NULL (the default) tells nothing.
*/
typedef void (*tileopt_temp_fn)(void *user, const char *tmp_path);
TILEOPT_API void tileopt_ctx_set_temp_hook(tileopt_ctx *ctx, tileopt_temp_fn fn, void *user);

/* ------------------------------------------------------------------ model */

typedef struct tileopt_model tileopt_model;

/* Load a model file. External data is resolved relative to the file's folder
** and read only when a value is needed. */
TILEOPT_API tileopt_status tileopt_model_load(tileopt_ctx *ctx, const char *path,
                                              tileopt_model **out);
/* Load from memory; the bytes are copied. `base_dir` resolves external data
** (NULL: external data is refused). */
TILEOPT_API tileopt_status tileopt_model_load_buffer(tileopt_ctx *ctx, const void *data,
                                                     size_t size, const char *base_dir,
                                                     tileopt_model **out);
TILEOPT_API void tileopt_model_free(tileopt_model *model);

/* Save atomically, with the external data the output needs: kept by reference
** when `path` sits in the model's folder (files tileopt wrote for the model's
** own file excepted: those are copied), copied into one data file beside it
** otherwise ("data-name", default path + ".data"); big initializers go there
** too when the model passes 2 GB. Each file has no name until it is complete,
** `path` and its data are put in place together, and the data files an earlier
** save to `path` wrote and the new one no longer reads are removed
** (docs/cli.md: The output's external data files). On success the model reads
** the files `path` reads. A path that is the file the model was loaded from, or
** one of its external data files, however spelled (a symlink, a hard link), is
** TILEOPT_MISUSE before anything is written. */
TILEOPT_API tileopt_status tileopt_model_save(tileopt_ctx *ctx, tileopt_model *model,
                                              const char *path);
/* The check tileopt_model_save makes of its path, alone: TILEOPT_MISUSE when
** path is the model's own file or one of its external data files, so a caller
** refuses such an output before any work. */
TILEOPT_API tileopt_status tileopt_model_check_output(tileopt_ctx *ctx, tileopt_model *model,
                                                      const char *path);
/* Serialize to a new buffer (*out, *size), freed with tileopt_free(). Fails with
** TILEOPT_LIMIT for models that need external data. */
TILEOPT_API tileopt_status tileopt_model_save_buffer(tileopt_ctx *ctx,
                                                     tileopt_model *model, void **out,
                                                     size_t *size);

/* Infer element types and shapes of every value (static and symbolic dims) and
** write them into value_info. A conflict with a type the model declares is an
** error naming both. */
TILEOPT_API tileopt_status tileopt_model_infer_shapes(tileopt_ctx *ctx, tileopt_model *model);

/* A JSON summary (ir_version, opsets, counts, every Tile with its form, shapes
** and repeats where known), as a new string freed with tileopt_free(). */
TILEOPT_API tileopt_status tileopt_model_inspect(tileopt_ctx *ctx, tileopt_model *model,
                                                 char **json_out);
/* The same summary as text for people, as `tileopt inspect` prints it, listing
** at most max_tiles Tiles (SIZE_MAX: all): a new string freed with
** tileopt_free(). Its layout may change between releases; programs read the
** JSON. */
TILEOPT_API tileopt_status tileopt_model_describe(tileopt_ctx *ctx, tileopt_model *model,
                                                  size_t max_tiles, char **text_out);

/* ----------------------------------------------------------------- passes */

/* The i-th pass in default order ("upgrade", "fold", "fuse", "gqa"), NULL past the end;
** static storage. */
TILEOPT_API const char *tileopt_pass_name(size_t i);
/* Run one pass by name on model, recording its actions in ctx's report. */
TILEOPT_API tileopt_status tileopt_pass_run(tileopt_ctx *ctx, tileopt_model *model,
                                            const char *name);
/* Run the n passes named, in order, as `optimize --passes` does, to a fixed
** point: a pass whose rewrites give another pass of the list new work (fold
** leaving a Tile for fuse, fuse moving an op onto constant inputs for fold)
** has that pass run again, in rounds (a few at most), until none has work, so
** that optimizing the result changes nothing. Each run is an entry of the
** report's passes; the extra ones carry "round" (2, 3, ...). An error names the
** failing pass; the passes before it have changed the model. */
TILEOPT_API tileopt_status tileopt_passes_run(tileopt_ctx *ctx, tileopt_model *model,
                                              const char *const *names, size_t n);
/* The pipeline `tileopt optimize` runs: passes is a comma-separated list of pass
** names ("fold,fuse"), "none" for no pass, or NULL for every pass in default
** order; then as tileopt_passes_run. An unknown or empty name is
** TILEOPT_MISUSE, before any pass runs. */
TILEOPT_API tileopt_status tileopt_optimize(tileopt_ctx *ctx, tileopt_model *model,
                                            const char *passes);

/*
** The report of everything run on ctx since tileopt_report_begin(): the input
** and output models, each pass run, the verify verdict and the warnings. As
** JSON text (schema: tests/report.schema.json) it is an object with tool,
** version, input, output, passes, verify and warnings; each pass entry names
** every change the pass made to the model: its actions, and "changes" for what
** they do not name (opset and IR steps, initializers, graph inputs and
** value_info removed or added). The same facts are read one by one through the
** accessors below, which need no JSON.
*/
TILEOPT_API tileopt_status tileopt_report_begin(tileopt_ctx *ctx, tileopt_model *input,
                                                const char *input_path);
TILEOPT_API tileopt_status tileopt_report_end(tileopt_ctx *ctx, tileopt_model *output,
                                              const char *output_path);
/* The report as JSON text, a new string freed with tileopt_free(). */
TILEOPT_API tileopt_status tileopt_report_string(const tileopt_ctx *ctx, char **out);
/* Write the report to path atomically (a temporary file beside it, then rename):
** a failed write leaves whatever path held before. */
TILEOPT_API tileopt_status tileopt_report_save(tileopt_ctx *ctx, const char *path);

/* The two models a report describes: the input as tileopt_report_begin() saw it,
** the output as tileopt_report_end() did. */
typedef enum tileopt_side {
    TILEOPT_INPUT = 0,
    TILEOPT_OUTPUT = 1,
} tileopt_side;

/* What the report says of a model. */
typedef enum tileopt_model_stat {
    TILEOPT_MODEL_IR_VERSION = 0,
    TILEOPT_MODEL_OPSET = 1,             /* of the default domain; 0 when not imported */
    TILEOPT_MODEL_NODES = 2,             /* main graph and every subgraph */
    TILEOPT_MODEL_TILES = 3,
    TILEOPT_MODEL_INITIALIZERS = 4,
    TILEOPT_MODEL_INITIALIZER_BYTES = 5, /* stored in the file or in external data */
    TILEOPT_MODEL_FILE_BYTES = 6,        /* the .onnx file alone */
    TILEOPT_MODEL_EXTERNAL_DATA_BYTES = 7,
    TILEOPT_MODEL_STAT_COUNT_ = 8
} tileopt_model_stat;

/* Whether the report describes that model yet (the output: once
** tileopt_report_end() ran). Without it the accessors below give 0 and NULL. */
TILEOPT_API int tileopt_report_has(const tileopt_ctx *ctx, tileopt_side side);
/* The path the model was named by ("" when none was given). */
TILEOPT_API const char *tileopt_report_path(const tileopt_ctx *ctx, tileopt_side side);
TILEOPT_API int64_t tileopt_report_model_stat(const tileopt_ctx *ctx, tileopt_side side,
                                              tileopt_model_stat stat);
/* The model's op types ("domain:op" outside the default domain) in the order the
** model first uses them, with their node counts: how many, and the i-th (its
** name, NULL past the end, and *nodes). */
TILEOPT_API size_t tileopt_report_op_count(const tileopt_ctx *ctx, tileopt_side side);
TILEOPT_API const char *tileopt_report_op(const tileopt_ctx *ctx, tileopt_side side, size_t i,
                                          uint64_t *nodes);
/* The model's opset imports: how many, and the i-th domain ("" for ai.onnx;
** NULL past the end) with its *version. */
TILEOPT_API size_t tileopt_report_opset_count(const tileopt_ctx *ctx, tileopt_side side);
TILEOPT_API const char *tileopt_report_opset(const tileopt_ctx *ctx, tileopt_side side, size_t i,
                                             int64_t *version);
/* The external data files the model's initializers name, each once. */
TILEOPT_API size_t tileopt_report_data_file_count(const tileopt_ctx *ctx, tileopt_side side);
TILEOPT_API const char *tileopt_report_data_file(const tileopt_ctx *ctx, tileopt_side side,
                                                 size_t i);

/* What the report says of a pass run. */
typedef enum tileopt_pass_stat {
    TILEOPT_PASS_ROUND = 0,              /* 1; 2, 3... for the runs the pipeline added */
    TILEOPT_PASS_CHANGED = 1,            /* 1 when the run changed the model */
    TILEOPT_PASS_NODES_CHANGED = 2,      /* distinct nodes its actions changed */
    TILEOPT_PASS_NODES_SKIPPED = 3,      /* distinct nodes it left, with a reason */
    TILEOPT_PASS_INITIALIZERS_REMOVED = 4,
    TILEOPT_PASS_INITIALIZERS_ADDED = 5,
    TILEOPT_PASS_INPUTS_REMOVED = 6,     /* graph inputs */
    TILEOPT_PASS_INPUTS_ADDED = 7,
    TILEOPT_PASS_VALUE_INFO_REMOVED = 8,
    TILEOPT_PASS_STAT_COUNT_ = 9
} tileopt_pass_stat;

/* The pass runs, in order: how many, and of the i-th its name (NULL past the
** end), a statistic, its time, and why it failed (NULL when it ran through). */
TILEOPT_API size_t tileopt_report_pass_count(const tileopt_ctx *ctx);
TILEOPT_API const char *tileopt_report_pass_name(const tileopt_ctx *ctx, size_t i);
TILEOPT_API uint64_t tileopt_report_pass_stat(const tileopt_ctx *ctx, size_t i,
                                              tileopt_pass_stat stat);
TILEOPT_API double tileopt_report_pass_ms(const tileopt_ctx *ctx, size_t i);
TILEOPT_API const char *tileopt_report_pass_error(const tileopt_ctx *ctx, size_t i);

/* The verdict of the last tileopt_model_verify() since the report began, and
** its reason (*reason NULL when it has none; reason may be NULL). */
typedef enum tileopt_verdict {
    TILEOPT_VERDICT_NONE = 0,            /* no verify ran */
    TILEOPT_VERDICT_MATCH = 1,
    TILEOPT_VERDICT_MISMATCH = 2,
    TILEOPT_VERDICT_SKIPPED = 3,         /* no verdict: see the reason */
} tileopt_verdict;
TILEOPT_API tileopt_verdict tileopt_report_verdict(const tileopt_ctx *ctx, const char **reason);
/* The inputs the last verify ran on, as one line: each input's name, element
** type and shape, and the file it came from or "random (seed N)"; NULL when
** no verify ran. Owned by ctx. */
TILEOPT_API const char *tileopt_report_verify_inputs(const tileopt_ctx *ctx);
/* "match", "mismatch", "skipped" (the report's words), "none"; static. */
TILEOPT_API const char *tileopt_verdict_str(tileopt_verdict verdict);

/* The warnings of the passes: how many, and the i-th (NULL past the end). */
TILEOPT_API size_t tileopt_report_warning_count(const tileopt_ctx *ctx);
TILEOPT_API const char *tileopt_report_warning(const tileopt_ctx *ctx, size_t i);

/* ------------------------------------------------------------------- page */

/*
** The report as one self-contained HTML page (no network, no external script,
** style or font): the models' sizes, node and Tile counts, opsets, the verify
** verdict with its inputs and the time at the top; the nodes per op type and
** the passes; then a card per action with the before and after drawings of its
** region (its nodes and their one-hop neighbours, laid out top to bottom, edge
** shapes with symbolic dims by name, constants' shapes, the rule in words;
** colours for removed, added and changed nodes); then the nodes the passes left
** alone, grouped by reason, each drawn when opened. The first 300 cards are
** inline SVG; past them the cards are grouped by rule and drawn by the page's
** own script (the only script its Content-Security-Policy lets run) from data
** the page holds. Every string from the model or the report is escaped.
**
** report_json: len bytes of a report (tileopt_report_string, or a --report
** file); before and after: the models it describes (their main graphs are
** drawn; either may be NULL, drawing that side empty). Shape inference runs on
** the models' index for the edge labels; the models' contents do not change.
** TILEOPT_PARSE for text that is no JSON, TILEOPT_INVALID for JSON that is no
** report. *html_out: a new NUL-terminated string freed with tileopt_free(),
** *html_size its length.
*/
TILEOPT_API tileopt_status tileopt_html(tileopt_ctx *ctx, const char *report_json, size_t len,
                                        tileopt_model *before, tileopt_model *after,
                                        char **html_out, size_t *html_size);
/* The same page written to path atomically (a temporary file beside it, then
** rename). */
TILEOPT_API tileopt_status tileopt_html_save(tileopt_ctx *ctx, const char *report_json,
                                             size_t len, tileopt_model *before,
                                             tileopt_model *after, const char *path);

/* One model of a batch, as its row of the index page. */
typedef struct tileopt_html_row {
    const char *model;       /* the input's path */
    const char *page;        /* its page, relative to the index; NULL: none */
    const char *error;       /* why it failed; NULL when it did not */
    int64_t bytes_before, bytes_after;     /* the .onnx files and their external data */
    int64_t nodes_before, nodes_after, tiles_before, tiles_after;
    const char *verdict;     /* "match", "mismatch", "skipped"; NULL: no verify */
    double seconds;
} tileopt_html_row;
/* The index page of a batch (optimize --html DIR): a row per model with its
** sizes, counts, verdict and a link to its page, totals on top; written to
** path atomically, as tileopt_html_save writes a page. */
TILEOPT_API tileopt_status tileopt_html_index(tileopt_ctx *ctx, const tileopt_html_row *rows,
                                              size_t n, const char *path);

/* ---------------------------------------------------------------- tensors */

/* A value: a tensor, or a sequence or optional of tensors (see tileopt_tensor_kind). */
typedef struct tileopt_tensor tileopt_tensor;

/* Decode a serialized TensorProto (as in ONNX test data: input_0.pb) or a .npy
** file (told by its magic bytes). */
TILEOPT_API tileopt_status tileopt_tensor_load(tileopt_ctx *ctx, const char *path,
                                               tileopt_tensor **out);
TILEOPT_API tileopt_status tileopt_tensor_load_buffer(tileopt_ctx *ctx, const void *data,
                                                      size_t size, tileopt_tensor **out);
/* Write a tensor as a serialized TensorProto, a sequence as a SequenceProto and
** an optional as an OptionalProto; a path ending in ".npy" gets a .npy file
** (bfloat16 as uint16 and the 8-bit floats as uint8 arrays of their bits,
** strings as a 'U' array). */
TILEOPT_API tileopt_status tileopt_tensor_save(tileopt_ctx *ctx,
                                               const tileopt_tensor *tensor,
                                               const char *path);
TILEOPT_API void tileopt_tensor_free(tileopt_tensor *tensor);

/*
** Decode the value file for graph input `index` of model (counting the inputs
** that are not initializers, as tileopt_model_run binds them) or for graph
** output `index`, as that input or output declares its type: a TensorProto, or
** for a sequence or an optional the SequenceProto or OptionalProto of
** onnx-data.proto, as ONNX's test data stores them (the bytes alone do not say
** which). An index past the graph's inputs or outputs, or one declaring no
** type, reads a TensorProto. Sequences of sequences, maps and sparse tensors
** are TILEOPT_UNSUPPORTED.
*/
TILEOPT_API tileopt_status tileopt_model_input_load(tileopt_ctx *ctx,
                                                    const tileopt_model *model, size_t index,
                                                    const char *path, tileopt_tensor **out);
TILEOPT_API tileopt_status tileopt_model_output_load(tileopt_ctx *ctx,
                                                     const tileopt_model *model, size_t index,
                                                     const char *path, tileopt_tensor **out);

/* What a tileopt_tensor holds: a tensor, a sequence of tensors of one element
** type (tileopt_tensor_dtype), or an optional (holding a tensor, a sequence, or
** nothing). Sequences and optionals have rank 0. */
typedef enum tileopt_value_kind {
    TILEOPT_VALUE_TENSOR = 0,
    TILEOPT_VALUE_SEQUENCE = 1,
    TILEOPT_VALUE_OPTIONAL = 2,
} tileopt_value_kind;
TILEOPT_API int tileopt_tensor_kind(const tileopt_tensor *tensor);
/* ONNX TensorProto.DataType code, rank, and dims (owned by tensor). */
TILEOPT_API int tileopt_tensor_dtype(const tileopt_tensor *tensor);
TILEOPT_API size_t tileopt_tensor_rank(const tileopt_tensor *tensor);
TILEOPT_API const int64_t *tileopt_tensor_dims(const tileopt_tensor *tensor);
/* The tensor's name (from the TensorProto or the graph), owned by tensor. */
TILEOPT_API const char *tileopt_tensor_name(const tileopt_tensor *tensor);

/*
** Tensors from memory and back, for programs (and language bindings) that hold
** their values in arrays rather than in TensorProto files.
**
** tileopt_tensor_new: a tensor of element type dtype (a TensorProto.DataType
** code other than STRING) and shape dims[0..rank), its values copied from data,
** row-major: nbytes must be the element count times the element size (float16,
** bfloat16 and the 8-bit floats as their bit patterns, complex types as (real,
** imaginary) pairs, bool one byte each, any nonzero byte read as true).
** tileopt_tensor_new_strings: a STRING tensor whose i-th element (row-major) is
** a copy of the lens[i] bytes at strs[i].
** tileopt_tensor_new_sequence: a sequence of the n tensors items[0..n), all of
** element type dtype (which an empty sequence takes; 0 takes the first item's).
** tileopt_tensor_new_optional: an optional holding item (a tensor or a
** sequence), or an empty one for NULL.
** A sequence or optional refers to its items' values: the caller still frees
** the handles it passed. The new tensors are named "".
*/
TILEOPT_API tileopt_status tileopt_tensor_new(tileopt_ctx *ctx, int dtype, const int64_t *dims,
                                              size_t rank, const void *data, size_t nbytes,
                                              tileopt_tensor **out);
TILEOPT_API tileopt_status tileopt_tensor_new_strings(tileopt_ctx *ctx, const int64_t *dims,
                                                      size_t rank, const char *const *strs,
                                                      const size_t *lens,
                                                      tileopt_tensor **out);
TILEOPT_API tileopt_status tileopt_tensor_new_sequence(tileopt_ctx *ctx, int dtype,
                                                       const tileopt_tensor *const *items,
                                                       size_t n, tileopt_tensor **out);
TILEOPT_API tileopt_status tileopt_tensor_new_optional(tileopt_ctx *ctx,
                                                       const tileopt_tensor *item,
                                                       tileopt_tensor **out);
/*
** The values of a tensor that is not STRING, row-major as tileopt_tensor_new
** takes them: *data (owned by tensor, valid until it is freed) and *nbytes.
** A tensor the evaluator holds as a broadcast view is laid out in full on the
** first call. TILEOPT_MISUSE for a STRING tensor, a sequence or an optional.
*/
TILEOPT_API tileopt_status tileopt_tensor_data(tileopt_ctx *ctx, tileopt_tensor *tensor,
                                               const void **data, size_t *nbytes);
/* Element i (row-major) of a STRING tensor: *s, *len bytes (owned by tensor,
** followed by a NUL that is not counted; a string may hold NULs of its own). */
TILEOPT_API tileopt_status tileopt_tensor_string(tileopt_ctx *ctx, tileopt_tensor *tensor,
                                                 size_t i, const char **s, size_t *len);
/* How many items a sequence or optional holds (an empty optional: 0; a tensor: 0). */
TILEOPT_API size_t tileopt_tensor_items(const tileopt_tensor *value);
/* Item i of a sequence or optional, as a new handle the caller frees. */
TILEOPT_API tileopt_status tileopt_tensor_item(tileopt_ctx *ctx, const tileopt_tensor *value,
                                               size_t i, tileopt_tensor **out);

/*
** Compare actual against expected the way `run --test-dir` and verify do:
** floating types numpy.isclose style (|a - e| <= atol + rtol * |e|, rtol 1e-3,
** atol 1e-7, NaN equal to NaN); integers, bool, strings and 8-bit floats exactly;
** sequences and optionals item by item (an empty optional equals an empty one).
** An expected UINT16 tensor against a BFLOAT16 one is read as the bfloat16 bits
** it holds, a UINT8 one against an 8-bit float as its bits (ONNX's test data
** stores them so: numpy has neither type). TILEOPT_OK when they agree;
** TILEOPT_MISMATCH when they do not, with tileopt_ctx_errmsg() saying how (the
** two element types and shapes, or how many values differ, the first one and the
** largest differences); another status on error.
*/
TILEOPT_API tileopt_status tileopt_tensor_compare(tileopt_ctx *ctx,
                                                  const tileopt_tensor *expected,
                                                  const tileopt_tensor *actual);

/*
** The tensor as text, "FLOAT [2,3] = [1, 2, 3, 4, 5, 6]", with at most max_values
** values and ", ..." when there are more; a sequence as "sequence of 3 FLOAT
** tensors: [...; ...]" with at most max_values items, an optional as
** "optional: ..." or "empty optional". On success *out is a new string the
** caller frees with tileopt_free().
*/
TILEOPT_API tileopt_status tileopt_tensor_format(tileopt_ctx *ctx, const tileopt_tensor *tensor,
                                                 size_t max_values, char **out);

/* The graph inputs tileopt_model_run binds (those that are not initializers)
** and the graph outputs it returns, in order: how many, and the name of the
** i-th (owned by model; NULL past the end). */
TILEOPT_API size_t tileopt_model_input_count(const tileopt_model *model);
TILEOPT_API const char *tileopt_model_input_name(const tileopt_model *model, size_t i);
TILEOPT_API size_t tileopt_model_output_count(const tileopt_model *model);
TILEOPT_API const char *tileopt_model_output_name(const tileopt_model *model, size_t i);

/*
** Evaluate model with the built-in evaluator. inputs[i] binds to the i-th graph
** input that is not an initializer: each must be given and fit the input's
** element type, rank and static dims (TILEOPT_MISUSE naming the input with
** what it declares, before anything runs); a UINT16 tensor bound to a BFLOAT16 input
** is taken as the bfloat16 bits it holds, a UINT8 one bound to an 8-bit float
** input as its bits (numpy, and so ONNX's test data, has neither type); a tensor
** or sequence bound to an input declared optional is the optional holding it. On
** success *outputs is a new array of *n_outputs tensors; free each with
** tileopt_tensor_free() and the array with tileopt_free().
*/
TILEOPT_API tileopt_status tileopt_model_run(tileopt_ctx *ctx, tileopt_model *model,
                                             tileopt_tensor *const *inputs,
                                             size_t n_inputs, tileopt_tensor ***outputs,
                                             size_t *n_outputs);

/*
** Run `before` and `after` in the built-in evaluator on the same seeded random
** inputs (option "seed"; element types and static shapes from `before`'s graph
** inputs; symbolic or unknown dims 2 on the leading axis, elsewhere 2, 64, then
** 512 until `before` runs) and record in the report's "verify" object the
** inputs used, per output the max abs/rel difference, and the verdict: "match",
** "mismatch" (TILEOPT_MISMATCH; rtol 1e-3, atol 1e-7) or "skipped" (the
** evaluator lacks an op, listed in "ops", or the input model itself cannot run
** on such inputs, with the "reason"): TILEOPT_OK, or TILEOPT_UNSUPPORTED with
** the option "verify-strict".
*/
TILEOPT_API tileopt_status tileopt_model_verify(tileopt_ctx *ctx, tileopt_model *before,
                                                tileopt_model *after);

/*
** Values for model's inputs (those tileopt_model_run binds) from files, as
** `tileopt run` and `--verify-inputs` read them. Each path is
**   - an .npz archive (numpy.savez, or savez_compressed: deflated members are
**     inflated): each array goes to the input of its name;
**   - a .npy file: to the input its file name names (x.npy: input 'x');
**   - any other file: a serialized TensorProto (SequenceProto, OptionalProto
**     where the input declares one), to the input its name field names, else
**     to the first input not yet given (input_0.pb, input_1.pb, ...);
**   - a folder: its input_N.pb in the order of N, else its .npy files.
** Every input must be given exactly once and fit its declaration (element type,
** rank, static dims); an optional input left out is an empty optional. A
** missing, unknown, doubly given or mis-shaped input is TILEOPT_MISUSE, its
** message naming the file and the input with its declared type and shape
** ("input 'x' (FLOAT [N,1,28,28]) is missing"); a file that cannot be read or
** decoded gets the status that says why. On success *inputs is a new array of
** *n_inputs values in input order, for tileopt_model_run: free each with
** tileopt_tensor_free() and the array with tileopt_free().
*/
TILEOPT_API tileopt_status tileopt_model_inputs_load(tileopt_ctx *ctx,
                                                     const tileopt_model *model,
                                                     const char *const *paths, size_t n_paths,
                                                     tileopt_tensor ***inputs,
                                                     size_t *n_inputs);
/*
** Random values for model's inputs, as verify generates them (option "seed";
** floats in [-1, 1), integers in [0, 4]), of the declared shapes with the dims
** "input-shape" fixed at load; the open ones take option "verify-shape"'s
** sizes, else 2. TILEOPT_UNSUPPORTED for an input of no known element type
** or rank, or one that is no tensor. Ownership as tileopt_model_inputs_load.
*/
TILEOPT_API tileopt_status tileopt_model_inputs_random(tileopt_ctx *ctx,
                                                       const tileopt_model *model,
                                                       tileopt_tensor ***inputs,
                                                       size_t *n_inputs);
/*
** Write n values to path: a path ending in ".npz" gets an archive of stored
** members, one per value, named by tileopt_tensor_name() (numpy.load reads
** them by that name); any other path takes one value, as tileopt_tensor_save.
** Atomic, as every save.
*/
TILEOPT_API tileopt_status tileopt_tensors_save(tileopt_ctx *ctx, tileopt_tensor *const *values,
                                                size_t n, const char *path);

/*
** Tile with OpenVINO Tile-1 promotion: when repeats is longer than the rank the
** data gets leading 1-dims; when shorter, repeats gets leading 1s. ONNX nodes
** stay strict (equal lengths). Any element type.
*/
TILEOPT_API tileopt_status tileopt_tile(tileopt_ctx *ctx, const tileopt_tensor *input,
                                        const int64_t *repeats, size_t n_repeats,
                                        tileopt_tensor **out);

#ifdef __cplusplus
}
#endif
#endif /* TILEOPT_H */

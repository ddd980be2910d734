/*
** passes/: one file per pass, plus the driver (options, report helpers), the
** snapshot diff (changes.c) and the registry.
** A pass is small: a cheap match, guards that record why they skip, a rewrite
** through the graph API, deferred deletion, then graph_commit().
**
** Files call only files before them in opset_table -> log -> driver -> changes ->
** upgrade -> fold -> fuse -> registry: the passes use the driver's helpers and
** only the registry names the passes (tests/harness/file_cycles.py fails on any
** two files that call each other).
*/
#ifndef TILEOPT_PASS_H
#define TILEOPT_PASS_H

#include <stdbool.h>
#include <stdint.h>

#include "eval/eval.h"
#include "graph/graph.h"
#include "graph/ops.h"
#include "passes/json.h"
#include "tileopt.h"

typedef struct pass_options {
    int64_t target_opset;    /* upgrade; 0 = keep from opset 7 on, else 13 */
    bool keep_initializer_inputs; /* upgrade: raising IR past 3 leaves them listed */
    uint64_t fold_limit;     /* fold: bytes one fold may add to the file */
    double fold_max_growth;  /* fold: 0 = off */
    bool fold_scope_all;     /* fold: --fold-scope all */
    bool fuse_split;         /* fuse: rule 4 */
    graph_limits lim;        /* what an evaluation (fold's) may take */
} pass_options;
void pass_options_default(pass_options *o);

/* Strings a run collects (its warnings), each malloc'd; a failed allocation
** sets failed and drops the string. */
typedef struct pass_strings {
    char **v;
    size_t n, cap;
    bool failed;
} pass_strings;
void pass_strings_add(pass_strings *s, const char *text);
void pass_strings_clear(pass_strings *s);

/*
** The actions of one pass run (passes/log.c), held as JSON text. pass_log_begin
** writes a record's node, op, graph (NULL in the main graph) and action, and
** returns the writer inside the open record for its other members, which the
** next begin (or mark, or finish) closes: write them at once, never keep it.
** NULL when out of memory (the finish then fails).
**
** pass_log_mark and pass_log_drop_skips take out the skips recorded since a
** mark (fold's rounds keep only the last round's). pass_log_tile writes the
** open record's "tile" member: the Tile a fused consumer no longer reads, which
** the record then names too. pass_log_names tells whether a record that is no
** skip names the node (as "node", or as "tile" of a fused consumer).
** pass_log_finish gives the records as the JSON text of an array (malloc'd,
** NUL-terminated, laid out for a pass entry of the report) and how many
** distinct nodes were changed and skipped.
*/
typedef struct pass_log pass_log;
pass_log *pass_log_new(void);
void pass_log_free(pass_log *l);
json_w *pass_log_begin(pass_log *l, const char *node, const char *op, const char *graph,
                       const char *action);
void pass_log_tile(pass_log *l, const char *tile);
size_t pass_log_mark(pass_log *l);
void pass_log_drop_skips(pass_log *l, size_t mark);
bool pass_log_names(pass_log *l, const char *graph, const char *node);
int pass_log_finish(pass_log *l, char **json, size_t *changed, size_t *skipped);

typedef struct pass_ctx {
    graph_model *model;
    const pass_options *opt;
    pass_log *log;           /* this pass's actions */
    pass_strings *warnings;  /* the run's warnings */
    bool changed;
    /* set by a rewrite that leaves work for the pass this one's registry row
    ** wakes, where the row leaves it to the pass to tell (fuse moving an op onto
    ** a constant input leaves work for fold) */
    bool wake;
    errbuf *err;
    /* the options' limits and who hears of the pass's progress: what every
    ** evaluation the pass runs goes by */
    eval_env eval;
} pass_ctx;

typedef int (*pass_run_fn)(pass_ctx *pc);

typedef struct pass_def {
    const char *name;
    pass_run_fn run;
    const char *summary;
    /* The passes whose work this one's rewrites can create (names separated
    ** by commas), or NULL: the pipeline runs them again after this one, in
    ** rounds, until no pass has work. With
    ** wake_on_change any change of the model wakes it; otherwise only a run
    ** that sets pc->wake does, for a pass that can tell which of its rewrites
    ** leave work behind. */
    const char *wakes;
    bool wake_on_change;
    /* Its rewrites can round otherwise than the original (a BatchNormalization
    ** folded into weights): exact in ONNX Runtime, which fuses the original the
    ** same way, but not always within --verify's tolerance in the evaluator,
    ** which does not. A verify mismatch names the ones that acted. */
    bool rounds;
    /* The ops the pass rewrites around (n_ops of them), or none: a model
    ** without any of them gives it nothing to do, and the driver records its
    ** run without making it (no snapshot of the model, no walk). */
    const op_id *ops;
    size_t n_ops;
} pass_def;

/* A registry row's ops: OPS(OP_Conv, OP_Add), or ANY_OPS for a pass that
** runs whatever the model holds. */
#define OPS(...) (const op_id[]){__VA_ARGS__}, countof(((const op_id[]){__VA_ARGS__}))
#define ANY_OPS NULL, 0

/* The registry, in default order; pass_count entries. */
extern const pass_def pass_registry[];
extern const size_t pass_count;
const pass_def *pass_find(const char *name);

/*
** A new action in pc->log: {"node", "op", "action"}, plus "graph" when the node
** sits in a subgraph. Write its details with the json_put_* functions into the
** writer returned (see pass_log_begin: at once). action is one of upgraded,
** downgraded, folded, fused, eliminated, rewritten, skipped.
*/
json_w *pass_action(pass_ctx *pc, graph *g, int32_t node, const char *action);
/* A skipped action with its reason (printf-style). */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
json_w *pass_skip(pass_ctx *pc, graph *g, int32_t node, const char *fmt, ...);
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void pass_warn(pass_ctx *pc, const char *fmt, ...);
/* "upgrade", "fold", ...: nodes the pass has looked at, of all. */
void pass_progress(pass_ctx *pc, const char *what, uint64_t done, uint64_t total);

/*
** A Tile-6/13 node's constant repeats against the ONNX spec: 1-D int64, one
** non-negative entry per input axis (when the input rank is known), an output
** size that fits (when the input shape is static). A violation makes the model
** invalid: TILEOPT_INVALID with the node named in pc->err.
*/
int pass_check_repeats(pass_ctx *pc, graph *g, int32_t node, const tensor *repeats,
                       const graph_type *input);

/*
** What a pass changed beyond its actions (passes/changes.c): take a snapshot
** before the pass; after it, pass_snapshot_report adds an "eliminated" action for
** each node gone without an action naming it, gives the report entry's "changes"
** object as JSON text laid out for a pass entry (opset and IR version,
** initializers, graph inputs and value_info removed or added; NULL when there
** are none) in *json, the length of each list in stat (TILEOPT_PASS_*_REMOVED
** and _ADDED), and sets pc->changed when anything changed.
*/
typedef struct pass_snapshot pass_snapshot;
int pass_snapshot_take(graph_model *m, pass_snapshot **out);
int pass_snapshot_report(pass_snapshot *s, pass_ctx *pc, char **json, uint64_t *stat);
void pass_snapshot_free(pass_snapshot *s);

/* Apply fn to g and every subgraph below it, depth first. */
int pass_for_each_graph(pass_ctx *pc, graph *g, int (*fn)(pass_ctx *, graph *));

/*
** The pipeline (passes/driver.c). Each run of a pass is an entry: what the
** report's pass entry says, as plain data. The entries and warnings of every
** run since the results were cleared accumulate in a pass_results.
*/
typedef struct pass_entry {
    const char *name;        /* the registry's */
    double duration_ms;
    uint64_t stat[TILEOPT_PASS_STAT_COUNT_];
    char *actions;           /* JSON text of the actions array, laid out for the entry */
    char *changes;           /* JSON text of the "changes" object, likewise, or NULL */
    char *error;             /* why the run failed, or NULL */
} pass_entry;

typedef struct pass_results {
    pass_entry *v;
    size_t n, cap;
    pass_strings warnings;
} pass_results;
void pass_results_clear(pass_results *r);

/* The options, and who hears how the passes are getting on. */
typedef struct pass_run_env {
    const pass_options *opt;
    graph_progress progress;
} pass_run_env;

/* Run one pass once, its entry appended to out (also when it fails). */
int pass_run_one(graph_model *m, const pass_run_env *env, const pass_def *p, pass_results *out,
                 errbuf *err);
/*
** Run the n passes of list in order, then again in rounds (2, 3, ...) the ones
** a run woke (pass_def's wakes) until none has work, so that one run reaches
** the fixed point a second optimize would: at most PASS_ROUNDS rounds, each
** linear. A failure names the pass ("pass NAME: ..."); the passes before it have
** changed the model.
*/
#define PASS_ROUNDS 4
int pass_pipeline(graph_model *m, const pass_run_env *env, const pass_def *const *list,
                  size_t n, pass_results *out, errbuf *err);

#endif

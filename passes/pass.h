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

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "eval/eval.h"
#include "graph/graph.h"

typedef struct pass_options {
    int64_t target_opset;    /* upgrade; 0 = keep from opset 7 on, else 13 */
    bool keep_initializer_inputs; /* upgrade: raising IR past 3 leaves them listed */
    uint64_t fold_limit;     /* fold: bytes */
    double fold_max_growth;  /* fold: 0 = off */
    bool fold_scope_all;     /* fold: --fold-scope all */
    bool fuse_split;         /* fuse: rule 4 */
    bool verify_strict;      /* verify: no verdict is a failure */
    uint64_t seed;           /* verify inputs */
    graph_limits graph_lim;
    eval_limits eval_lim;
} pass_options;
void pass_options_default(pass_options *o);

/*
** Text and the JSON writer (passes/log.c). pass_text grows as text is put; a
** failed allocation sets failed and drops what follows. pass_json_write puts
** item as JSON: integers exact (with the digits pass_json_int keeps), bytes
** that are not UTF-8 as the text \xNN, raw items as they are; pretty puts each
** object member on a line of its own, indented with tabs from depth.
*/
typedef struct pass_text {
    char *p;
    size_t len, cap;
    bool failed;
} pass_text;
void pass_text_put(pass_text *t, const char *s, size_t n);
void pass_json_write(pass_text *t, const cJSON *item, int depth, bool pretty);
/* cJSON allocates through malloc and free wrapped to note a failure (installed
** once, for the process: cJSON's hooks are global). pass_json_failed tells
** whether a cJSON allocation of this thread failed since it last asked, and
** forgets it: a tree built since then may lack members. */
void pass_json_hooks(void);
bool pass_json_failed(void);

/*
** The actions of one pass run (passes/log.c), held as JSON text. pass_log_begin
** writes a record's node, op, graph (NULL in the main graph) and action, and
** returns an object for the record's other members, which the next begin (or
** mark, or finish) writes out and empties: fill it at once, never keep it.
** NULL when out of memory (the finish then fails).
**
** pass_log_mark and pass_log_drop_skips take out the skips recorded since a
** mark (fold's rounds keep only the last round's). pass_log_names tells
** whether a record that is no skip names the node (as "node", or as "tile" of
** a fused consumer); it writes out the open record first, whose "tile" counts
** only then. pass_log_finish gives the records as the JSON text of an
** array (malloc'd, NUL-terminated, laid out for a pass entry of the report)
** and how many distinct nodes were changed and skipped.
*/
typedef struct pass_log pass_log;
pass_log *pass_log_new(void);
void pass_log_free(pass_log *l);
cJSON *pass_log_begin(pass_log *l, const char *node, const char *op, const char *graph,
                      const char *action);
size_t pass_log_mark(pass_log *l);
void pass_log_drop_skips(pass_log *l, size_t mark);
bool pass_log_names(pass_log *l, const char *graph, const char *node);
int pass_log_finish(pass_log *l, char **json, size_t *changed, size_t *skipped);

typedef struct pass_ctx {
    graph_model *model;
    const pass_options *opt;
    pass_log *log;           /* this pass's actions */
    cJSON *warnings;         /* array of strings: the report's warnings */
    bool changed;
    /* set by a rewrite that leaves an op whose inputs are all constant (fuse
    ** moving an op onto a constant input): fold has work again */
    bool fold_again;
    errbuf *err;
    tileopt_progress_fn progress;
    void *progress_user;
} pass_ctx;

typedef int (*pass_run_fn)(pass_ctx *pc);

typedef struct pass_def {
    const char *name;
    pass_run_fn run;
    const char *summary;
} pass_def;

/* The registry, in default order; pass_count entries. */
extern const pass_def pass_registry[];
extern const size_t pass_count;
const pass_def *pass_find(const char *name);

/*
** A new action in pc->log: {"node", "op", "action"}, plus "graph" when the node
** sits in a subgraph. Add details to the object returned with cJSON_Add*ToObject
** (see pass_log_begin: at once). action is one of upgraded, downgraded, folded,
** fused, eliminated, rewritten, skipped.
*/
cJSON *pass_action(pass_ctx *pc, graph *g, int32_t node, const char *action);
/* A string member of a report record under a static key (a literal): text is
** copied; pass_add_static points at text, which must be static too. A big
** model's report holds hundreds of thousands of records, so these copies count. */
void pass_add_text(cJSON *o, const char *key, const char *text);
void pass_add_static(cJSON *o, const char *key, const char *text);
void pass_add_number(cJSON *o, const char *key, double v);
/* A skipped action with its reason (printf-style). */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
cJSON *pass_skip(pass_ctx *pc, graph *g, int32_t node, const char *fmt, ...);
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void pass_warn(pass_ctx *pc, const char *fmt, ...);
/* A JSON int array. */
/* An int64 as a JSON number printed exactly, even past 2^53. */
cJSON *pass_json_int(int64_t v);
cJSON *pass_json_ints(const int64_t *v, size_t n);
void pass_progress(pass_ctx *pc, const char *what, uint64_t done, uint64_t total);
/* The options' evaluation limits, with the pass's progress for what a long
** evaluation reports (a big Tile written out). */
eval_limits pass_eval_limits(const pass_ctx *pc);

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
** object in *out (opset and IR version, initializers, graph inputs and value_info
** removed or added; NULL when there are none), and sets pc->changed when
** anything changed.
*/
typedef struct pass_snapshot pass_snapshot;
int pass_snapshot_take(graph_model *m, pass_snapshot **out);
int pass_snapshot_report(pass_snapshot *s, pass_ctx *pc, cJSON **out);
void pass_snapshot_free(pass_snapshot *s);

/* Apply fn to g and every subgraph below it, depth first. */
int pass_for_each_graph(pass_ctx *pc, graph *g, int (*fn)(pass_ctx *, graph *));

#endif

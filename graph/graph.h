/*
** graph/: load, save, index and mutate ONNX models. This is the only layer that
** touches protobuf-c. The protobuf-c structs stay the storage (so nothing the
** passes do not touch is lost); the index adds name lookups, producers, consumers,
** types and shapes on top of them.
**
** Memory: everything a model holds (the unpacked protobuf, index, names, new nodes
** and initializers) lives in the model's arena and is released with the model.
** Nothing here is freed piecemeal.
**
** Files call only files before them in arena -> dtype -> err -> wire -> tensor ->
** files -> index -> load -> mutate -> save, so each reads knowing only what comes before it
** (tests/harness/file_cycles.py fails on any two that call each other).
*/
#ifndef TILEOPT_GRAPH_H
#define TILEOPT_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/arena.h"
#include "graph/dtype.h"
#include "graph/err.h"
#include "onnx.pb-c.h"

/* Rows of a table. Every table is tied to the enum it is indexed by or to its
** lookup's count through _Static_assert(countof(t) == X_COUNT), never to a number
** typed beside it. */
#define countof(a) (sizeof(a) / sizeof((a)[0]))

typedef struct graph graph;
typedef struct graph_model graph_model;

/* Who hears how long work is getting on (a load, a save, an evaluation, a
** pass): the library's callback, tileopt_progress_fn, with its user pointer;
** fn NULL for nobody. graph_progress_tell is the one place that calls it. */
typedef struct graph_progress {
    tileopt_progress_fn fn;
    void *user;
} graph_progress;
static inline void graph_progress_tell(const graph_progress *p, const char *what,
                                       uint64_t done, uint64_t total) {
    if (p && p->fn) p->fn(p->user, what, done, total);
}

/* Told the path of each temporary file a save creates, just before it is
** created, and NULL once it is renamed or removed: a program that is killed in
** between can remove it (the CLI does, on SIGINT, SIGTERM and SIGHUP). */
typedef void (*graph_temp_fn)(void *user, const char *tmp_path);

/* Limits, so hostile input fails with an error instead of exhausting the
** machine: one set for loading a model and for evaluating it (the evaluator
** takes them through eval/'s environment), so the two can never disagree. */
typedef struct graph_limits {
    uint32_t max_depth;      /* subgraph and protobuf message nesting, loaded or run */
    uint32_t max_rank;
    uint64_t max_tensor_bytes; /* one tensor, read from a file or computed */
    uint64_t max_eval_bytes;   /* every tensor an evaluation holds at once */
    /* nodes run plus Loop iterations in one evaluation (a node making a
    ** sequence counts one more per 64 items); 0 = no limit */
    uint64_t max_eval_steps;
    /* A model whose serialized size passes this is saved with its big
    ** initializers as external data (protobuf's own limit is 2 GB). */
    uint64_t max_inline_bytes;
} graph_limits;
#define LOAD_PROGRESS_BYTES ((uint64_t)64 << 20)
void graph_limits_default(graph_limits *lim);
/* The bytes one of `workers` processes (0 counts as 1) may give to evaluated
** tensors by default: a quarter of the machine's memory (or of the cgroup's
** limit when that is lower) shared among them, at least 256 MiB each. */
uint64_t graph_memory_budget(unsigned workers);

/* ------------------------------------------------------------------ types */

/* Element type and shape of a value. rank < 0: shape unknown. dims[i] < 0: that
** dim is unknown; syms[i] (may be NULL) names it when symbolic. */
typedef struct graph_type {
    int32_t elem;            /* TensorProto.DataType, 0 = unknown */
    int32_t rank;
    int64_t *dims;
    const char **syms;
} graph_type;

bool graph_type_static(const graph_type *t); /* rank known and every dim known */
/* Element count of a static shape; false on overflow or unknown. */
bool graph_type_numel(const graph_type *t, uint64_t *out);

/* ------------------------------------------------------------------ index */

typedef struct graph_use {
    int32_t node;            /* consuming node in this graph */
    int32_t input;           /* input slot, or -1: used inside the node's subgraph */
} graph_use;

/* What shape inference knows of a small integer value entry by entry (its
** shape_value, defined by shape/dim.h, the layer that makes them). */
struct shape_value;

typedef struct graph_value {
    const char *name;
    int32_t producer;        /* node index, or -1 */
    int32_t producer_out;    /* output slot of producer */
    int32_t initializer;     /* index in pb->initializer, or -1 */
    int32_t sparse;          /* index in pb->sparse_initializer, or -1 */
    int32_t input;           /* index in pb->input, or -1 */
    int32_t output;          /* index in pb->output (first), or -1 */
    int32_t value_info;      /* index in pb->value_info, or -1 */
    /* Names a subgraph reads from an enclosing scope get an entry here that
    ** stands for outer_graph->values[outer] (indices: tables grow and move). */
    int32_t outer;           /* -1 when the value is defined in this scope */
    uint32_t n_uses, cap_uses;
    graph_use *uses;
    graph_type type;
    const struct shape_value *shape_value; /* NULL: not known entry by entry */
    graph *outer_graph;
} graph_value;

/* A hash-map slot: the name's hash (compared before the string, so most probes
** never touch the name) and index+1 into values (0 = empty). */
typedef struct graph_slot {
    uint32_t hash;
    uint32_t index;
} graph_slot;

struct graph {
    Onnx__GraphProto *pb;
    graph_model *model;
    graph *parent;           /* enclosing graph, NULL for the main graph */
    int32_t parent_node;     /* node in parent whose attribute holds this graph */
    const char *parent_attr; /* that attribute's name */
    int32_t parent_list;     /* place in a GRAPHS attribute; -1 for a GRAPH one */
    uint32_t depth;

    /* values, by name through an open-addressing hash map */
    graph_value *values;
    uint32_t n_values, cap_values;
    graph_slot *slots;       /* open addressing, power-of-two count */
    uint32_t n_slots;

    bool *removed;           /* per node, deferred removal */
    uint32_t cap_nodes;      /* capacity of removed/subgraphs (and pb->node once grown) */
    uint32_t cap_tables;     /* entries removed and subgraphs were allocated with */
    bool node_array_owned;   /* pb->node was regrown by us (capacity cap_nodes) */
    size_t cap_initializers; /* same for pb->initializer, 0 = as unpacked */
    size_t cap_inputs;
    graph **subgraphs;       /* per node: first subgraph, chained by next_sibling */
    /* Where each node's slots found their values when the index was built:
    ** hints[hint_at[2 * node + output] + slot] is an index into values. A hint
    ** is used only when that value's name is the slot's string (node inputs
    ** share their value's name), so an edit since only costs a lookup. */
    int32_t *hints;
    uint32_t *hint_at;
    uint32_t n_hints, n_hinted;
    graph *next_sibling;     /* next subgraph of the same node */
    uint32_t n_removed;
    uint32_t n_indexed;      /* nodes when the index was built: more means added */
};

/* A file by identity, whatever path names it. */
typedef struct graph_file_id {
    uint64_t dev, ino;
} graph_file_id;

/* A buffer of another layer that a model's initializers point into. */
typedef struct graph_owned {
    void *owner;
    void (*release)(void *owner);
    struct graph_owned *next;
} graph_owned;

struct graph_model {
    arena *arena;
    Onnx__ModelProto *pb;
    graph *main;
    char *path;              /* file it came from, or NULL */
    char *base_dir;          /* folder external data is relative to, or NULL */
    graph_limits limits;
    uint64_t file_bytes;     /* size of the serialized input */
    uint64_t saved_bytes;    /* size the last graph_model_save_path wrote, 0 = none */
    graph_progress progress; /* a save's: "saving", "saving data" */
    graph_temp_fn temp_hook;    /* NULL: none */
    void *temp_user;
    /* the name of the external data file a save writes beside OUT (NULL: OUT's
    ** own name and ".data") */
    const char *data_name;
    /* the external data files the model has read from, sorted: a save never
    ** removes or writes over one of them (they are the input's) */
    graph_file_id *read_files;
    size_t n_read_files;
    /* the file the model was loaded from, which no save writes over (a file a
    ** save wrote it to is not: saving again replaces that) */
    graph_file_id source_id;
    bool has_source_id;
    /* the data files its record says tileopt wrote for this very file (see
    ** graph/files.h), which a save beside it copies rather than shares */
    char **own_data;
    size_t n_own_data;
    /* the input file, mapped, when loaded from a path */
    void *map;
    size_t map_size;
    /* every value name in every scope, for unique names (built on first use) */
    const char **names;
    uint32_t n_names, cap_names;
    uint64_t name_counter;
    /* buffers of other layers that initializers point into, released at free */
    graph_owned *owned;
    /* nodes graph_remove_node has taken out, in every graph, since load: the
    ** only way a node leaves a graph, so a pass that leaves it as it was
    ** removed none */
    uint64_t nodes_removed;
    /* where the default domain's opset import is in pb->opset_import (a hint,
    ** checked on use: a model may import 100,000 domains, the default last) */
    size_t default_opset_at;
    /* what loading changed that the run's report must say (NULL: nothing);
    ** the API hands it to the report's warnings once */
    const char *load_warning;
    /* the index's types are shape inference's for the model as it stands: set
    ** by inference, cleared by every reindex and by a pass that changed the
    ** model, so a pass after one that changed nothing infers nothing again */
    bool shapes_current;
    /* which ops of the op table some live node holds, in any graph (one bit
    ** each, built on first use by op_model_has); op_present_current is cleared
    ** by every reindex and by a pass that changed the model, as shapes_current */
    uint8_t *op_present;
    bool op_present_current;
};

/* --------------------------------------------------------- load and save */


/* Loading a file of LOAD_PROGRESS_BYTES or more tells progress (may be NULL)
** how it is getting on, as "loading". */
int graph_model_load_path(const char *path, const graph_limits *lim,
                          const graph_progress *progress, graph_model **out, errbuf *err);
int graph_model_load_buffer(const void *data, size_t size, const char *base_dir,
                            const graph_limits *lim, const graph_progress *progress,
                            graph_model **out, errbuf *err);
void graph_model_free(graph_model *m);
/* Build the index of the main graph and every subgraph (called by load; call
** again after editing the protobuf directly). */
int graph_model_reindex(graph_model *m, errbuf *err);

/* Save to path with the external data files the model needs beside it, and
** put both in place so that a failure or a kill at any moment leaves the old
** OUT reading its old data or the new OUT its new data (graph/save.c tells how).
** On success the model in memory is the one on disk: its tensors name the data
** files OUT reads. */
int graph_model_save_path(graph_model *m, const char *path, errbuf *err);
/* TILEOPT_MISUSE when path is the file m was loaded from or one of its external
** data files, however spelled (graph_model_save_path refuses those). */
int graph_model_check_target(graph_model *m, const char *path, errbuf *err);
int graph_model_save_buffer(graph_model *m, void **out, size_t *size, errbuf *err);
/* Serialized size in bytes, as the saver would write it (without external data). */
size_t graph_model_packed_size(const graph_model *m);
/* Write n bytes to path through a temporary file beside it, fsync and rename: the
** file is either its old self or complete, never half written. */
int graph_write_atomic(const char *path, const void *data, size_t n, graph_temp_fn hook,
                       void *hook_user, errbuf *err);

/* ------------------------------------------------------------------ opsets */

/* Opset version imported for a domain ("" and "ai.onnx" are the same), 0 if none. */
int64_t graph_opset(const graph_model *m, const char *domain);
int graph_set_opset(graph_model *m, const char *domain, int64_t version, errbuf *err);

/* ------------------------------------------------------------------ lookup */

/* The one hash of names (FNV-1a) the name tables use. graph_hash_bytes goes on
** from h over n more bytes, for keys made of several pieces. */
#define GRAPH_HASH_SEED 2166136261u
static inline uint32_t graph_hash_bytes(uint32_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 16777619u;
    return h;
}
static inline uint32_t graph_name_hash(const char *s) {
    uint32_t h = GRAPH_HASH_SEED;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

graph_value *graph_find(graph *g, const char *name);        /* this scope only */
/* The value node reads at input slot (or writes at output slot) in this scope,
** as graph_find would give it, mostly without a lookup; NULL for an absent
** slot ("" or past the end). */
graph_value *graph_node_in(graph *g, int32_t node, size_t slot);
graph_value *graph_node_out(graph *g, int32_t node, size_t slot);
graph_value *graph_resolve(graph *g, const char *name);     /* this and outer scopes */
/* Is the value defined in this scope (initializer, input or node output)? */
static inline bool graph_value_defined(const graph_value *v) {
    return v->producer >= 0 || v->initializer >= 0 || v->input >= 0 || v->sparse >= 0;
}
static inline Onnx__NodeProto *graph_node(const graph *g, int32_t i) {
    return g->pb->node[i];
}
static inline uint32_t graph_n_nodes(const graph *g) { return (uint32_t)g->pb->n_node; }
static inline bool graph_node_removed(const graph *g, int32_t i) { return g->removed[i]; }
/* "name" or "#index" when unnamed: stable ids for reports and errors. */
const char *graph_node_id(graph *g, int32_t i);
/* Where a subgraph sits, from the outside in: per level the id of the node
** holding it and the attribute ("loop/body/if_0/then_branch"; a graph of a GRAPHS
** attribute adds its place, "node/branches[1]"), written into buf; NULL for the
** main graph. The id alone would not do: an If's two branches would share it.
** Reports and inspect name subgraphs this one way. */
const char *graph_path(graph *g, char *buf, size_t cap);
/* One level of that path, appended to buf (which holds used bytes): the same
** text for a snapshot of a graph whose holder may be gone by now. */
void graph_path_step(char *buf, size_t cap, size_t used, const char *node_id, const char *attr,
                     int32_t list);
/* Default domain test ("" or "ai.onnx"). */
bool graph_node_is(const Onnx__NodeProto *n, const char *op_type);
/* True for the default ONNX domain, spelled "" or "ai.onnx". */
bool graph_domain_is_default(const char *domain);
/* The producing node of a value in this scope, or NULL. */
Onnx__NodeProto *graph_producer(graph *g, const char *name, int32_t *index);
/* The initializer for a name in this or an outer scope, or NULL. */
Onnx__TensorProto *graph_initializer(graph *g, const char *name);
/* An optional input is absent when the slot is missing or the name is "". */
const char *graph_node_input(const Onnx__NodeProto *n, size_t i);

/* Attributes */
Onnx__AttributeProto *graph_attr(const Onnx__NodeProto *n, const char *name);
int64_t graph_attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt);
float graph_attr_float(const Onnx__NodeProto *n, const char *name, float dflt);
const char *graph_attr_string(const Onnx__NodeProto *n, const char *name,
                              const char *dflt);

/* ---------------------------------------------------------------- mutation */

/* Attribute strings are bytes in the schema, unpacked without a terminator;
** graph_attr_string hands them out as C strings, so load and clone give each a
** terminated copy (a spare byte after every protobuf allocation would cost 8
** bytes for most of them, about 13 MB at 400k nodes). */
int graph_attr_terminate(graph_model *m, Onnx__AttributeProto *at);

/* A fresh value name based on hint, unused in this graph and all its scopes. */
const char *graph_unique_name(graph *g, const char *hint);
char *graph_strdup(graph *g, const char *s);

/* Append a node; it is indexed at once. Node order is fixed by graph_commit(). */
Onnx__NodeProto *graph_add_node(graph *g, const char *op_type, const char *name,
                                const char *const *inputs, size_t n_inputs,
                                const char *const *outputs, size_t n_outputs,
                                int32_t *index);
int graph_node_set_attr_int(graph *g, Onnx__NodeProto *n, const char *name, int64_t v);
int graph_node_set_attr_ints(graph *g, Onnx__NodeProto *n, const char *name,
                             const int64_t *v, size_t count);
int graph_node_set_attr_float(graph *g, Onnx__NodeProto *n, const char *name, float v);
int graph_node_set_attr_floats(graph *g, Onnx__NodeProto *n, const char *name,
                               const float *v, size_t count);
int graph_node_set_attr_string(graph *g, Onnx__NodeProto *n, const char *name,
                               const char *v);
int graph_node_set_attr_tensor(graph *g, Onnx__NodeProto *n, const char *name,
                               Onnx__TensorProto *t);
/* A subgraph attribute; it is indexed by the next graph_commit. */
int graph_node_set_attr_graph(graph *g, Onnx__NodeProto *n, const char *name,
                              Onnx__GraphProto *sub);
/* A deep copy of a subgraph in the model's arena, for another node (each node owns
** its subgraphs: passes edit them in place). NULL when out of memory. */
Onnx__GraphProto *graph_pb_clone(graph_model *m, const Onnx__GraphProto *src);
/*
** A subgraph for node `at` of g (an If, for one of its branches) made of copies
** of g's nodes, given in an order where each reads only what g's scopes or an
** earlier copy define: each copy's outputs get fresh names, which the later
** copies read in their place; what else they read comes from the enclosing
** scopes, and `at` records an implicit use of it, so that it stays alive and
** ordered before `at` until graph_commit indexes the subgraph. Its one output
** is the copy of value out, declared as a tensor of element type elem. The
** originals are left as they are. NULL (err set) on failure.
*/
Onnx__GraphProto *graph_subgraph_of_copies(graph *g, int32_t at, const int32_t *nodes, size_t n,
                                           const char *out, int32_t elem, const char *name,
                                           errbuf *err);
void graph_node_del_attr(Onnx__NodeProto *n, const char *name);
/* Change input slot i of node to name (slot may be == n_input to append). */
int graph_node_set_input(graph *g, int32_t node, size_t slot, const char *name);
/* Output slot of node writes name instead: a value no live node, initializer
** or input defines (the one a removed node wrote), so a rewrite can hand a
** graph output's name to the node that now computes it. TILEOPT_MISUSE when
** name is defined. */
int graph_node_set_output(graph *g, int32_t node, size_t slot, const char *name);
/* Attributes compared and hashed by content, whatever their order (the
** attribute lists of two nodes that do the same thing); nodes with a
** subgraph attribute are never equal. */
bool graph_attrs_equal(const Onnx__NodeProto *a, const Onnx__NodeProto *b);
uint32_t graph_attrs_hash(const Onnx__NodeProto *n);

/* A new initializer holding a copy of data (contiguous, native layout). Its name
** is unique, from hint; *name_out receives it. */
int graph_add_initializer(graph *g, const char *hint, int32_t elem, const int64_t *dims,
                          size_t rank, const void *data, size_t nbytes,
                          const char **name_out, errbuf *err);
/* List every initializer of g that is not a graph input among the inputs, as
** IR versions below 4 require (new ones are listed by graph_add_initializer). */
int graph_list_initializers_as_inputs(graph *g, errbuf *err);
/* The same without the copy: the initializer's raw_data is data itself, kept
** alive by owner, of which the model takes over one reference and which it
** gives to release(owner) when it is freed (at once when the initializer could
** not be made). For big values another layer computed (fold's results): no
** second copy of each. Not for STRING. */
int graph_add_initializer_owned(graph *g, const char *hint, int32_t elem,
                                const int64_t *dims, size_t rank, const void *data,
                                size_t nbytes, void *owner, void (*release)(void *owner),
                                const char **name_out, errbuf *err);

/* Every node input that reads `from` reads `to` instead (graph outputs are left
** alone: use graph_value_is_output and keep their names). */
int graph_replace_uses(graph *g, const char *from, const char *to);
bool graph_value_is_output(graph *g, const char *name);

/* Deferred removal: the node stops counting as producer/consumer at once and is
** dropped from the protobuf by graph_commit(). */
void graph_remove_node(graph *g, int32_t node);

/*
** Sweep removed nodes, drop dead nodes (outputs unused and not graph outputs),
** initializers nobody reads (unless they are also graph inputs) and value_info of
** values that no longer exist, sort nodes topologically, and rebuild the index.
** Recurses into subgraphs. Fails on a cycle.
*/
int graph_commit(graph *g, errbuf *err);
/*
** Fix the shape of a main-graph input for this run (--input-shape; dims are 0 or
** more, as the option's parser makes sure): rank and the
** declared static dims must agree, and each named dim (dim_param) of the input
** becomes its given size wherever the model declares it, as one name means one
** size. The input's declaration is rewritten and the model reindexed.
** TILEOPT_MISUSE names what does not fit.
*/
int graph_fix_input_shape(graph_model *m, const char *name, const int64_t *dims,
                          int32_t rank, errbuf *err);
/* Topological order of live nodes into order[] (n_nodes capacity); count out. */
int graph_toposort(graph *g, int32_t *order, uint32_t *count, errbuf *err);

/* Attribute subgraphs of node i (If: then/else, Loop/Scan: body), chained. */
graph *graph_node_subgraphs(graph *g, int32_t node);

/* Used inside graph/ to keep the index in step with edits. */
int graph_value_add_use(graph *g, graph_value *v, int32_t node, int32_t slot);
int graph_reindex(graph *g, errbuf *err);
graph_value *graph_index_entry(graph *g, const char *name);
/* Record that node's input slot reads name (linking outer scopes as needed);
** node < 0 only links. NULL when the name is defined nowhere. */
graph_value *graph_link_use(graph *g, const char *name, int32_t node, int32_t slot);
/* Write what t knows into vi's tensor type, keeping what vi already declares (a
** missing type, element type, shape or dim is filled in); other kinds of type
** (sequences, maps) are left alone. */
int graph_value_info_refine(graph_model *m, Onnx__ValueInfoProto *vi, const graph_type *t);
Onnx__ValueInfoProto *graph_value_info_new(graph_model *m, const char *name,
                                           const graph_type *t);

/* ---------------------------------------------------------------- tensors */

/*
** Values of a TensorProto as contiguous native-layout bytes: raw_data, the typed
** fields, or external data (read from base_dir on demand). Strings come out as an
** array of graph_bytes. *data is borrowed from the model when possible (owned =
** false) or allocated with malloc (owned = true: free it).
*/
typedef struct graph_bytes {
    const uint8_t *data;
    size_t len;
} graph_bytes;
typedef struct graph_tensor_data {
    int32_t elem;
    int32_t rank;
    const int64_t *dims;     /* borrowed from the TensorProto */
    uint64_t numel;
    void *data;
    size_t nbytes;
    bool owned;
} graph_tensor_data;
int graph_tensor_read(graph_model *m, const Onnx__TensorProto *t, graph_tensor_data *out,
                      errbuf *err);
/* Dims, data length and external file size agree, without reading any data
** (the loader checks every tensor with it). */
int graph_tensor_check(graph_model *m, const Onnx__TensorProto *t, errbuf *err);
/* A new TensorProto in the model's arena, raw_data (or string_data) filled. */
Onnx__TensorProto *graph_tensor_new(graph_model *m, const char *name, int32_t elem,
                                    const int64_t *dims, size_t rank, const void *data,
                                    size_t nbytes);
/* Where an external tensor's bytes are: checked against the file (it exists, is
** long enough, the length matches the shape). path is malloc'd: free it. */
typedef struct graph_extent {
    char *path;
    uint64_t offset, length;
    graph_file_id id;        /* the file's, as stat'ed when checked */
} graph_extent;
int graph_external_extent(const graph_model *m, const Onnx__TensorProto *t,
                          graph_extent *out, errbuf *err);
/* graph_tensor_check, giving an external tensor's extent in *ext (ext->path
** NULL for one that is not external; else malloc'd: free it). */
int graph_tensor_check_extent(graph_model *m, const Onnx__TensorProto *t, graph_extent *ext,
                              errbuf *err);
int graph_extent_read(const graph_extent *e, void *dst, errbuf *err);
/* Is the TensorProto's data outside the model file? */
bool graph_tensor_is_external(const Onnx__TensorProto *t);

/*
** Bytes an entry takes in its GraphProto as the saver writes it, the field's
** tag and length prefix included: what removing it saves and adding it costs
** (fold's size policy weighs one against the other). An initializer counts its
** external data too; graph_new_initializer_bytes is what graph_add_initializer
** would write for data of nbytes (not STRING) under a name of name_len bytes.
*/
uint64_t graph_initializer_bytes(const Onnx__TensorProto *t);
uint64_t graph_new_initializer_bytes(size_t name_len, int32_t elem, const int64_t *dims,
                                     size_t rank, uint64_t nbytes);
uint64_t graph_node_bytes(const Onnx__NodeProto *n);
uint64_t graph_value_info_bytes(const Onnx__ValueInfoProto *vi);

/*
** The value of a Constant node as a TensorProto: its value attribute as is, or
** for value_float(s), value_int(s) and value_string(s) a header built in *hdr
** over the attribute's own arrays (valid while the node and *hdr are). One
** conversion from TensorProto then serves every form. sparse_value is
** TILEOPT_UNSUPPORTED.
*/
typedef struct graph_const_hdr {
    Onnx__TensorProto tp;
    int64_t dim;
    ProtobufCBinaryData one;
} graph_const_hdr;
int graph_constant_value(const Onnx__NodeProto *n, graph_const_hdr *hdr,
                         const Onnx__TensorProto **out, errbuf *err);

/*
** Standalone serialized TensorProtos (the .pb files of ONNX's test data, and
** tileopt's tensor files). graph_tensor_decode reads one with the default
** limits and calls fn with its data and name, which are valid only during the
** call; external data is refused (a lone tensor has no model directory).
** graph_tensor_encode writes one: raw_data, or string_data for DT_STRING (data
** is then an array of graph_bytes); *bytes is malloc'd: free it.
*/
typedef int (*graph_tensor_fn)(graph_tensor_data *d, const char *name, void *arg,
                               errbuf *err);
int graph_tensor_decode(const void *bytes, size_t size, graph_tensor_fn fn, void *arg,
                        errbuf *err);
int graph_tensor_encode(const char *name, int32_t elem, const int64_t *dims, size_t rank,
                        const void *data, size_t nbytes, void **bytes, size_t *size,
                        errbuf *err);

/* ------------------------------------------------ sequences and optionals */

/*
** What a value is, as a TypeProto declares it and as test data holds it: a
** tensor, a sequence (onnx-data.proto's SequenceProto) or an optional
** (OptionalProto). Maps, sparse tensors and opaque types are GRAPH_KIND_OTHER;
** GRAPH_KIND_NONE is a type that declares nothing.
*/
typedef enum graph_kind {
    GRAPH_KIND_NONE = -1,
    GRAPH_KIND_TENSOR,
    GRAPH_KIND_SEQUENCE,
    GRAPH_KIND_OPTIONAL,
    GRAPH_KIND_OTHER,
} graph_kind;
/* The kind tp declares (tp may be NULL), and in *elem (may be NULL) the element
** type of the tensors inside it at any depth, 0 when not declared. */
graph_kind graph_type_kind(const Onnx__TypeProto *tp, int32_t *elem);

/* Bytes of a protobuf message walked without unpacking: nesting past max_levels
** messages is TILEOPT_LIMIT (protobuf-c's unpacker would recurse that deep), a
** string holding a NUL byte TILEOPT_INVALID. */
int graph_wire_check(const ProtobufCMessageDescriptor *d, const void *data, size_t size,
                     uint32_t max_levels, errbuf *err);
/* A base-128 varint at *p (before end), *p moved past it; false when it runs
** past end or over 64 bits. */
bool graph_wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *out);

/*
** A sequence or optional of test data as a tree: a tensor's values (as
** graph_tensor_read gives them), or the items of a sequence, or the one item
** of an optional (none when it is empty).
*/
typedef struct graph_value_data {
    graph_kind kind;
    const char *name;
    graph_tensor_data tensor;           /* GRAPH_KIND_TENSOR */
    struct graph_value_data *items;     /* GRAPH_KIND_SEQUENCE, GRAPH_KIND_OPTIONAL */
    size_t n_items;
} graph_value_data;
typedef int (*graph_value_fn)(graph_value_data *v, void *arg, errbuf *err);
/* Decode a serialized SequenceProto (kind GRAPH_KIND_SEQUENCE) or OptionalProto
** (GRAPH_KIND_OPTIONAL): the bytes alone do not say which message they hold.
** fn sees the tree, valid only during the call (it may take a tensor's owned
** data as graph_tensor_decode's callback may). Maps and sparse tensors are
** TILEOPT_UNSUPPORTED, external data is refused, and messages nest at most
** max_levels deep. */
int graph_value_decode(const void *bytes, size_t size, graph_kind kind, uint32_t max_levels,
                       graph_value_fn fn, void *arg, errbuf *err);
/* v (a sequence or optional; its tensors' elem, rank, dims, data and nbytes as
** graph_tensor_encode takes them) as a serialized SequenceProto or
** OptionalProto; *bytes is malloc'd: free it. */
int graph_value_encode(const graph_value_data *v, void **bytes, size_t *size, errbuf *err);

#endif

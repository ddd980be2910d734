/*
** Loading: map the file, check the wire format's nesting depth (protobuf-c's
** unpacker recurses without a bound), unpack into the model's arena, refuse
** external-data locations that leave the model's folder, then index.
*/
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/graph.h"

/* ---------------------------------------------------------- external data */

static const char *ext_location(const Onnx__TensorProto *t) {
    for (size_t i = 0; i < t->n_external_data; i++)
        if (t->external_data[i]->key && strcmp(t->external_data[i]->key, "location") == 0)
            return t->external_data[i]->value ? t->external_data[i]->value : "";
    return NULL;
}

/* CVE-2022-25882: an external-data location must stay inside the model's folder. */
static int check_external(graph_model *m, const Onnx__TensorProto *t, errbuf *err) {
    /* Every tensor's dims and data length too (graph_tensor_check). */
    if (!graph_tensor_is_external(t)) return graph_tensor_check(m, t, err);
    const char *name = t->name ? t->name : "";
    const char *loc = ext_location(t);
    if (!loc || !loc[0])
        return err_set(err, TILEOPT_INVALID, "tensor '%s': external data without a location",
                       name);
    if (loc[0] == '/' || loc[0] == '\\')
        return err_set(err, TILEOPT_INVALID,
                       "tensor '%s': external data location '%s' is absolute", name, loc);
    for (const char *s = loc; *s;) {
        size_t n = strcspn(s, "/\\");
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return err_set(err, TILEOPT_INVALID,
                           "tensor '%s': external data location '%s' leaves the model's folder",
                           name, loc);
        s += n;
        if (*s) s++;
    }
    if (!m->base_dir)
        return err_set(err, TILEOPT_INVALID,
                       "tensor '%s': external data '%s' but the model was loaded from memory "
                       "without a folder",
                       name, loc);
    return graph_tensor_check(m, t, err);
}

static int check_graph_tensors(graph_model *m, const Onnx__GraphProto *g, errbuf *err);

static int check_node_tensors(graph_model *m, const Onnx__NodeProto *n, errbuf *err) {
    for (size_t a = 0; a < n->n_attribute; a++) {
        Onnx__AttributeProto *at = n->attribute[a];
        int rc = graph_attr_terminate(m, at) ? err_set(err, TILEOPT_NOMEM, "out of memory")
                                             : TILEOPT_OK;
        if (!rc && at->t) rc = check_external(m, at->t, err);
        for (size_t i = 0; !rc && i < at->n_tensors; i++)
            rc = check_external(m, at->tensors[i], err);
        if (!rc && at->g) rc = check_graph_tensors(m, at->g, err);
        for (size_t i = 0; !rc && i < at->n_graphs; i++)
            rc = check_graph_tensors(m, at->graphs[i], err);
        if (rc) return rc;
    }
    return TILEOPT_OK;
}

static int check_graph_tensors(graph_model *m, const Onnx__GraphProto *g, errbuf *err) {
    for (size_t i = 0; i < g->n_initializer; i++) {
        int rc = check_external(m, g->initializer[i], err);
        if (rc) return rc;
    }
    for (size_t i = 0; i < g->n_sparse_initializer; i++) {
        const Onnx__SparseTensorProto *s = g->sparse_initializer[i];
        int rc = s->values ? check_external(m, s->values, err) : TILEOPT_OK;
        if (!rc && s->indices) rc = check_external(m, s->indices, err);
        if (rc) return rc;
    }
    for (size_t i = 0; i < g->n_node; i++) {
        int rc = check_node_tensors(m, g->node[i], err);
        if (rc) return rc;
    }
    return TILEOPT_OK;
}

/* ------------------------------------------------------------ validity */

/* Without an IR version nothing says how to read the rest (initializers as
** inputs, opset imports), and without a default-domain import no standard node
** has a schema: ONNX's checker refuses both, and so do we rather than guess. */
static int check_header(const Onnx__ModelProto *pb, errbuf *err) {
    if (!pb->has_ir_version || pb->ir_version <= 0)
        return err_set(err, TILEOPT_INVALID, "the model has no ir_version");
    if (pb->ir_version < 3) return TILEOPT_OK; /* opset 1 was implied then */
    for (size_t i = 0; i < pb->n_opset_import; i++) {
        const char *d = pb->opset_import[i]->domain ? pb->opset_import[i]->domain : "";
        if (graph_domain_is_default(d)) return TILEOPT_OK;
    }
    /* A model of custom-domain nodes alone needs no default-domain import. */
    const Onnx__GraphProto *g = pb->graph;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (!graph_domain_is_default(n->domain)) continue;
        if (n->name && n->name[0])
            return err_set(err, TILEOPT_INVALID,
                           "the model imports no opset for the default domain (ai.onnx), "
                           "which node %s (%s) needs", n->name, n->op_type ? n->op_type : "");
        return err_set(err, TILEOPT_INVALID,
                       "the model imports no opset for the default domain (ai.onnx), which "
                       "node #%zu (%s) needs", i, n->op_type ? n->op_type : "");
    }
    return TILEOPT_OK;
}

/* Adds name to an open-addressing set of cap slots (a power of two, never more than
** half full); false when it was there already. */
static bool name_set_add(const char **set, size_t cap, const char *name) {
    for (size_t i = graph_name_hash(name) & (cap - 1);; i = (i + 1) & (cap - 1)) {
        if (!set[i]) {
            set[i] = name;
            return true;
        }
        if (strcmp(set[i], name) == 0) return false;
    }
}

/* A function body follows the graph rules: every name is defined once, by a
** function input or by one node output. */
static int check_function_names(const Onnx__FunctionProto *f, errbuf *err) {
    size_t n = f->n_input;
    for (size_t i = 0; i < f->n_node; i++) n += f->node[i]->n_output;
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    const char **set = calloc(cap, sizeof *set);
    if (!set) return err_set(err, TILEOPT_NOMEM, "out of memory");
    const char *fname = f->name ? f->name : "";
    int rc = TILEOPT_OK;
    for (size_t i = 0; !rc && i < f->n_input; i++)
        if (!name_set_add(set, cap, f->input[i] ? f->input[i] : ""))
            rc = err_set(err, TILEOPT_INVALID, "function %s: input '%s' is listed twice", fname,
                         f->input[i]);
    for (size_t i = 0; !rc && i < f->n_node; i++) {
        const Onnx__NodeProto *nd = f->node[i];
        for (size_t o = 0; !rc && o < nd->n_output; o++)
            if (nd->output[o][0] && !name_set_add(set, cap, nd->output[o]))
                rc = err_set(err, TILEOPT_INVALID,
                             "function %s: value '%s' is defined twice (again by node #%zu, %s)",
                             fname, nd->output[o], i, nd->op_type ? nd->op_type : "");
    }
    free(set);
    return rc;
}

/* ------------------------------------------------------------------ load */

/*
** Unpacking copies each field into memory it allocates, one after the other,
** and the copies of big tensors are what takes the time (the first writes to
** fresh pages). The allocator in between reports, at each allocation, the bytes
** of the fields before it: those are copied by then.
*/
typedef struct load_progress {
    ProtobufCAllocator base;
    ProtobufCAllocator *arena;
    const graph_progress *progress;
    uint64_t done, pending, total, next;
} load_progress;

static void *progress_alloc(void *data, size_t n) {
    load_progress *p = data;
    p->done += p->pending;
    p->pending = n;
    if (p->done >= p->next && p->done < p->total) {
        graph_progress_tell(p->progress, "loading", p->done, p->total);
        p->next = p->done + p->total / 64;
    }
    return p->arena->alloc(p->arena->allocator_data, n);
}

static void progress_free(void *data, void *ptr) {
    load_progress *p = data;
    p->arena->free(p->arena->allocator_data, ptr);
}

static int load_common(graph_model *m, const uint8_t *data, size_t size,
                       const graph_progress *progress, errbuf *err) {
    if (size == 0) return err_set(err, TILEOPT_PARSE, "the file is empty, not an ONNX model");
    int rc = graph_wire_check(&onnx__model_proto__descriptor, data, size,
                              4 * m->limits.max_depth + 16, err);
    if (rc) return rc;
    load_progress prog = {{progress_alloc, progress_free, &prog}, arena_pb_allocator(m->arena),
                          progress, 0, 0, size, 0};
    bool told = progress && progress->fn && size >= LOAD_PROGRESS_BYTES;
    m->pb = onnx__model_proto__unpack(told ? &prog.base : arena_pb_allocator(m->arena), size,
                                      data);
    if (told && m->pb) graph_progress_tell(progress, "loading", size, size);
    if (!m->pb && arena_pb_failed(m->arena))
        return err_set(err, TILEOPT_NOMEM, "out of memory reading the model");
    if (!m->pb)
        return err_set(err, TILEOPT_PARSE,
                       "not a valid ONNX model: the protobuf is malformed or truncated");
    if (!m->pb->graph)
        return err_set(err, TILEOPT_INVALID, "not an ONNX model: it has no graph");
    rc = check_header(m->pb, err);
    if (rc) return rc;
    m->file_bytes = size;
    rc = check_graph_tensors(m, m->pb->graph, err);
    for (size_t i = 0; !rc && i < m->pb->n_functions; i++)
        rc = check_function_names(m->pb->functions[i], err);
    for (size_t i = 0; !rc && i < m->pb->n_functions; i++)
        for (size_t j = 0; !rc && j < m->pb->functions[i]->n_node; j++)
            rc = check_node_tensors(m, m->pb->functions[i]->node[j], err);
    for (size_t i = 0; !rc && i < m->pb->n_training_info; i++) {
        const Onnx__TrainingInfoProto *t = m->pb->training_info[i];
        if (t->initialization) rc = check_graph_tensors(m, t->initialization, err);
        if (!rc && t->algorithm) rc = check_graph_tensors(m, t->algorithm, err);
    }
    if (rc) return rc;
    return graph_model_reindex(m, err);
}

static graph_model *model_new(const graph_limits *lim) {
    graph_model *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->arena = arena_new();
    if (!m->arena) {
        free(m);
        return NULL;
    }
    if (lim)
        m->limits = *lim;
    else
        graph_limits_default(&m->limits);
    return m;
}

static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

int graph_model_load_path(const char *path, const graph_limits *lim,
                          const graph_progress *progress, graph_model **out,
                          errbuf *err) {
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return err_set(err, TILEOPT_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return err_set(err, TILEOPT_IO, "'%s' is %s, not a model file", path,
                       S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
    }
    /* Protobuf messages stop at 2 GiB; a bigger file is no model, and mapping it
    ** whole first would only cost memory. */
    if (st.st_size > INT32_MAX) {
        close(fd);
        return err_set(err, TILEOPT_INVALID,
                       "'%s' is %lld bytes, over the 2 GiB a protobuf model can hold (big "
                       "tensors belong in external data)", path, (long long)st.st_size);
    }
    graph_model *m = model_new(lim);
    if (!m) {
        close(fd);
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    m->path = strdup(path);
    m->base_dir = dir_of(path);
    int rc = TILEOPT_OK;
    if (st.st_size > 0) {
        m->map_size = (size_t)st.st_size;
        m->map = mmap(NULL, m->map_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
        if (m->map == MAP_FAILED) {
            m->map = NULL;
            rc = err_set(err, TILEOPT_IO, "cannot map '%s': %s", path, strerror(errno));
        }
    }
    close(fd);
    if (!rc && (!m->path || !m->base_dir)) rc = err_set(err, TILEOPT_NOMEM, "out of memory");
    if (!rc) rc = load_common(m, m->map, m->map_size, progress, err);
    /* The unpacked model holds copies; the mapping is no longer needed. */
    if (m->map) munmap(m->map, m->map_size);
    m->map = NULL;
    if (rc) {
        err_prefix(err, "%s: ", path);
        graph_model_free(m);
        return rc;
    }
    *out = m;
    return TILEOPT_OK;
}

int graph_model_load_buffer(const void *data, size_t size, const char *base_dir,
                            const graph_limits *lim, const graph_progress *progress,
                            graph_model **out, errbuf *err) {
    *out = NULL;
    graph_model *m = model_new(lim);
    if (!m) return err_set(err, TILEOPT_NOMEM, "out of memory");
    if (base_dir && !(m->base_dir = strdup(base_dir))) {
        graph_model_free(m);
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    int rc = load_common(m, data, size, progress, err);
    if (rc) {
        graph_model_free(m);
        return rc;
    }
    *out = m;
    return TILEOPT_OK;
}

void graph_model_free(graph_model *m) {
    if (!m) return;
    if (m->map) munmap(m->map, m->map_size);
    arena_free(m->arena);
    for (graph_owned *o = m->owned, *next; o; o = next) {
        next = o->next;
        o->release(o->owner);
        free(o);
    }
    free(m->path);
    free(m->base_dir);
    free(m);
}

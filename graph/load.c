/*
** Loading: map the file, check the wire format's nesting depth (protobuf-c's
** unpacker recurses without a bound), unpack into the model's arena, refuse
** external-data locations that leave the model's folder, then index.
*/
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/files.h"
#include "graph/graph.h"

/* ---------------------------------------------------------- external data */

static const char *ext_location(const Onnx__TensorProto *t) {
    for (size_t i = 0; i < t->n_external_data; i++)
        if (t->external_data[i]->key && strcmp(t->external_data[i]->key, "location") == 0)
            return t->external_data[i]->value ? t->external_data[i]->value : "";
    return NULL;
}

/* Every external tensor's extent, gathered while the tensors are checked. */
typedef struct ext_item {
    graph_file_id id;
    uint64_t offset, length;
    const char *tensor;
    char *path;
} ext_item;
typedef struct ext_list {
    ext_item *v;
    size_t n, cap;
} ext_list;

static void ext_list_free(ext_list *x) {
    for (size_t i = 0; i < x->n; i++) free(x->v[i].path);
    free(x->v);
}

/* CVE-2022-25882: an external-data location must stay inside the model's folder. */
static int check_external(graph_model *m, const Onnx__TensorProto *t, ext_list *x,
                          errbuf *err) {
    const char *name = t->name ? t->name : "";
    if (graph_tensor_is_external(t)) {
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
                               "tensor '%s': external data location '%s' leaves the model's "
                               "folder", name, loc);
            s += n;
            if (*s) s++;
        }
        if (!m->base_dir)
            return err_set(err, TILEOPT_INVALID,
                           "tensor '%s': external data '%s' but the model was loaded from "
                           "memory without a folder", name, loc);
    }
    /* Every tensor's dims and data length too. */
    graph_extent e;
    int rc = graph_tensor_check_extent(m, t, &e, err);
    if (rc || !e.path) return rc;
    if (x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 64;
        ext_item *v = realloc(x->v, cap * sizeof *v);
        if (!v) {
            free(e.path);
            return err_set(err, TILEOPT_NOMEM, "out of memory");
        }
        x->v = v;
        x->cap = cap;
    }
    x->v[x->n++] = (ext_item){e.id, e.offset, e.length, name, e.path};
    return TILEOPT_OK;
}

static int check_graph_tensors(graph_model *m, const Onnx__GraphProto *g, ext_list *x,
                               errbuf *err);

static int check_node_tensors(graph_model *m, const Onnx__NodeProto *n, ext_list *x,
                              errbuf *err) {
    for (size_t a = 0; a < n->n_attribute; a++) {
        Onnx__AttributeProto *at = n->attribute[a];
        int rc = graph_attr_terminate(m, at) ? err_set(err, TILEOPT_NOMEM, "out of memory")
                                             : TILEOPT_OK;
        if (!rc && at->t) rc = check_external(m, at->t, x, err);
        for (size_t i = 0; !rc && i < at->n_tensors; i++)
            rc = check_external(m, at->tensors[i], x, err);
        if (!rc && at->g) rc = check_graph_tensors(m, at->g, x, err);
        for (size_t i = 0; !rc && i < at->n_graphs; i++)
            rc = check_graph_tensors(m, at->graphs[i], x, err);
        if (rc) return rc;
    }
    return TILEOPT_OK;
}

static int check_graph_tensors(graph_model *m, const Onnx__GraphProto *g, ext_list *x,
                               errbuf *err) {
    for (size_t i = 0; i < g->n_initializer; i++) {
        int rc = check_external(m, g->initializer[i], x, err);
        if (rc) return rc;
    }
    for (size_t i = 0; i < g->n_sparse_initializer; i++) {
        const Onnx__SparseTensorProto *s = g->sparse_initializer[i];
        int rc = s->values ? check_external(m, s->values, x, err) : TILEOPT_OK;
        if (!rc && s->indices) rc = check_external(m, s->indices, x, err);
        if (rc) return rc;
    }
    for (size_t i = 0; i < g->n_node; i++) {
        int rc = check_node_tensors(m, g->node[i], x, err);
        if (rc) return rc;
    }
    return TILEOPT_OK;
}

static int by_extent(const void *a, const void *b) {
    const ext_item *x = a, *y = b;
    if (x->id.dev != y->id.dev) return x->id.dev < y->id.dev ? -1 : 1;
    if (x->id.ino != y->id.ino) return x->id.ino < y->id.ino ? -1 : 1;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return x->length < y->length ? -1 : x->length > y->length;
}

/*
** Two tensors may name the same bytes (tied weights stored once), but bytes
** shared in part are refused: no exporter writes them, and a file of 1 GB
** claimed a thousand times at shifted offsets would make a save write a TB.
** The files the model reads are kept by identity, for saves to leave alone.
*/
static int check_extents(graph_model *m, ext_list *x, errbuf *err) {
    if (!x->n) return TILEOPT_OK;
    qsort(x->v, x->n, sizeof *x->v, by_extent);
    const ext_item *far = NULL; /* the extent reaching furthest in this file so far */
    size_t files = 0;
    for (size_t i = 0; i < x->n; i++) {
        const ext_item *e = &x->v[i];
        bool same_file = i && e->id.dev == x->v[i - 1].id.dev && e->id.ino == x->v[i - 1].id.ino;
        if (!same_file) {
            files++;
            far = NULL;
        }
        if (!e->length) continue;
        if (far && e->offset < far->offset + far->length &&
            (e->offset != far->offset || e->length != far->length))
            return err_set(err, TILEOPT_INVALID,
                           "tensors '%s' and '%s' overlap in external data '%s' (bytes %" PRIu64
                           " to %" PRIu64 " and %" PRIu64 " to %" PRIu64 ")",
                           far->tensor, e->tensor, e->path, far->offset,
                           far->offset + far->length, e->offset, e->offset + e->length);
        if (!far || e->offset + e->length > far->offset + far->length) far = e;
    }
    m->read_files = malloc(files * sizeof *m->read_files);
    if (!m->read_files) return err_set(err, TILEOPT_NOMEM, "out of memory");
    for (size_t i = 0; i < x->n; i++)
        if (!i || x->v[i].id.dev != x->v[i - 1].id.dev || x->v[i].id.ino != x->v[i - 1].id.ino)
            m->read_files[m->n_read_files++] = x->v[i].id;
    return TILEOPT_OK;
}

/* The data files tileopt wrote for this very file, as its record says. */
static int read_owned(graph_model *m, errbuf *err) {
    const Onnx__ModelProto *pb = m->pb;
    data_record r = {0};
    bool ok = true;
    for (size_t i = 0; ok && i < pb->n_metadata_props; i++) {
        const Onnx__StringStringEntryProto *e = pb->metadata_props[i];
        if (e->key)
            ok = data_record_entry(&r, e->key, strlen(e->key), e->value ? e->value : "",
                                   e->value ? strlen(e->value) : 0);
    }
    const char *slash = m->path ? strrchr(m->path, '/') : NULL;
    const char *base = slash ? slash + 1 : m->path;
    if (ok && base && r.data_for && strcmp(r.data_for, base) == 0 && r.files.n) {
        m->own_data = r.files.v;
        m->n_own_data = r.files.n;
        r.files = (name_list){0};
    }
    data_record_free(&r);
    return ok ? TILEOPT_OK : err_set(err, TILEOPT_NOMEM, "out of memory");
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

/* An opset import's domain as one spelling: "ai.onnx" is the default "". */
static const char *opset_domain(const Onnx__OperatorSetIdProto *o) {
    return graph_domain_is_default(o->domain) ? "" : o->domain;
}

/*
** A domain imported twice makes the opset ambiguous: a converter that rewrites
** the first entry leaves the others, and ONNX Runtime then refuses the model.
** Entries that agree are merged into the first (the load warning says so);
** entries that disagree are refused. One hash table: some models import
** 100,000 domains.
*/
static int merge_opset_imports(graph_model *m, errbuf *err) {
    Onnx__ModelProto *pb = m->pb;
    size_t n = pb->n_opset_import, cap = 16, kept = 0, dups = 0;
    m->default_opset_at = n;
    if (n < 2) {
        if (n == 1 && graph_domain_is_default(pb->opset_import[0]->domain))
            m->default_opset_at = 0;
        return TILEOPT_OK;
    }
    while (cap < 2 * n) cap *= 2;
    size_t *table = calloc(cap, sizeof *table); /* index + 1 among the kept */
    if (!table) return err_set(err, TILEOPT_NOMEM, "out of memory");
    const char *first_dup = NULL;
    int64_t dup_version = 0;
    size_t first_dup_count = 1;
    int rc = TILEOPT_OK;
    for (size_t i = 0; !rc && i < n; i++) {
        Onnx__OperatorSetIdProto *o = pb->opset_import[i];
        const char *d = opset_domain(o);
        int64_t v = o->has_version ? o->version : 0;
        size_t k = graph_name_hash(d) & (cap - 1);
        while (table[k] && strcmp(opset_domain(pb->opset_import[table[k] - 1]), d) != 0)
            k = (k + 1) & (cap - 1);
        if (!table[k]) {
            pb->opset_import[kept] = o;
            table[k] = ++kept;
            continue;
        }
        const Onnx__OperatorSetIdProto *was = pb->opset_import[table[k] - 1];
        int64_t w = was->has_version ? was->version : 0;
        if (w != v) {
            rc = err_set(err, TILEOPT_INVALID,
                         "opset_import gives %s%s%s versions %lld and %lld: which one the "
                         "nodes mean is ambiguous", d[0] ? "domain '" : "the default domain",
                         d, d[0] ? "'" : "", (long long)w, (long long)v);
            break;
        }
        dups++;
        if (!first_dup) {
            first_dup = d;
            dup_version = v;
        }
        if (strcmp(first_dup, d) == 0) first_dup_count++;
    }
    free(table);
    if (rc) return rc;
    pb->n_opset_import = kept;
    for (size_t i = 0; i < kept; i++)
        if (!opset_domain(pb->opset_import[i])[0]) m->default_opset_at = i;
    if (!dups) return TILEOPT_OK;
    char msg[512];
    snprintf(msg, sizeof msg,
             "opset_import listed %s%s%s %zu times, each at version %lld%s: merged into one "
             "entry each, so that an opset change cannot leave a stale one behind",
             first_dup[0] ? "domain '" : "the default domain", first_dup,
             first_dup[0] ? "'" : "", first_dup_count, (long long)dup_version,
             dups + 1 > first_dup_count ? ", and other domains more than once too" : "");
    m->load_warning = arena_strdup(m->arena, msg);
    return m->load_warning ? TILEOPT_OK : err_set(err, TILEOPT_NOMEM, "out of memory");
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
    if (!rc) rc = merge_opset_imports(m, err);
    if (rc) return rc;
    m->file_bytes = size;
    ext_list x = {0};
    rc = check_graph_tensors(m, m->pb->graph, &x, err);
    for (size_t i = 0; !rc && i < m->pb->n_functions; i++)
        rc = check_function_names(m->pb->functions[i], err);
    for (size_t i = 0; !rc && i < m->pb->n_functions; i++)
        for (size_t j = 0; !rc && j < m->pb->functions[i]->n_node; j++)
            rc = check_node_tensors(m, m->pb->functions[i]->node[j], &x, err);
    for (size_t i = 0; !rc && i < m->pb->n_training_info; i++) {
        const Onnx__TrainingInfoProto *t = m->pb->training_info[i];
        if (t->initialization) rc = check_graph_tensors(m, t->initialization, &x, err);
        if (!rc && t->algorithm) rc = check_graph_tensors(m, t->algorithm, &x, err);
    }
    if (!rc) rc = check_extents(m, &x, err);
    ext_list_free(&x);
    if (!rc) rc = read_owned(m, err);
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
    m->source_id = (graph_file_id){(uint64_t)st.st_dev, (uint64_t)st.st_ino};
    m->has_source_id = true;
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
    free(m->read_files);
    for (size_t i = 0; i < m->n_own_data; i++) free(m->own_data[i]);
    free(m->own_data);
    free(m);
}

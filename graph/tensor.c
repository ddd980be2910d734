/* TensorProto values: every storage form in, raw_data out; sequences and
** optionals of test data (SequenceProto, OptionalProto) in and out. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/arena.h"
#include "graph/graph.h"
#include "onnx-data.pb-c.h"

void graph_limits_default(graph_limits *lim) {
    lim->max_depth = 64;
    lim->max_rank = 64;
    lim->max_tensor_bytes = (uint64_t)4 << 30;
    lim->max_eval_bytes = graph_memory_budget(1);
    /* About 4 s of the smallest nodes (1 us each in a release build); a real
    ** model's run takes thousands of steps, a long Loop a few hundred thousand. */
    lim->max_eval_steps = (uint64_t)1 << 22;
    lim->max_inline_bytes = INT32_MAX;
}

/* The cgroup v2 or v1 memory limit of this process, or 0 when none is set
** (or none can be read). A container sees its own cgroup at the root. */
static uint64_t cgroup_memory_limit(void) {
    static const char *const files[] = {"/sys/fs/cgroup/memory.max",
                                        "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
    for (size_t i = 0; i < countof(files); i++) {
        FILE *f = fopen(files[i], "re");
        if (!f) continue;
        unsigned long long v = 0;
        int got = fscanf(f, "%llu", &v); /* "max": no limit */
        fclose(f);
        if (got == 1 && v > 0) return v;
    }
    return 0;
}

uint64_t graph_memory_budget(unsigned workers) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t mem = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : (uint64_t)8 << 30;
    uint64_t cg = cgroup_memory_limit();
    if (cg && cg < mem) mem = cg;
    /* verify holds the input's values and then the output's, beside the two
    ** models; the rest of the machine goes on working meanwhile */
    uint64_t b = mem / 4 / (workers ? workers : 1), floor = (uint64_t)256 << 20;
    return b > floor ? b : floor;
}

bool graph_tensor_is_external(const Onnx__TensorProto *t) {
    return t->has_data_location &&
           t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
}

static const char *ext_field(const Onnx__TensorProto *t, const char *key) {
    for (size_t i = 0; i < t->n_external_data; i++)
        if (t->external_data[i]->key && strcmp(t->external_data[i]->key, key) == 0)
            return t->external_data[i]->value;
    return NULL;
}

/* The first key listed twice, or NULL. Readers disagree on which copy counts (onnx
** takes the last, ext_field the first): a second `location` could point one
** reader at a file the checks never saw. */
static const char *ext_duplicate_key(const Onnx__TensorProto *t) {
    for (size_t i = 0; i < t->n_external_data; i++)
        for (size_t j = 0; j < i; j++)
            if (t->external_data[i]->key && t->external_data[j]->key &&
                strcmp(t->external_data[i]->key, t->external_data[j]->key) == 0)
                return t->external_data[i]->key;
    return NULL;
}

/* True when real (a resolved path) lies below folder dir, itself resolved. */
static bool path_below(const char *real, const char *dir) {
    char base[PATH_MAX];
    if (!dir || !realpath(dir, base)) return false;
    size_t n = strlen(base);
    return strncmp(real, base, n) == 0 && (real[n] == '/' || (n == 1 && base[0] == '/'));
}

/* The real path of the data file, refused unless it lies inside the model's real
** folder: the textual check of the location cannot see a symlink (w.bin ->
** ../secret.bin, or an absolute link) that would copy a file from elsewhere
** into the output. The folder of the model file's own target counts too, as in
** ONNX Runtime: caches such as Hugging Face's link both the model and its data
** from a snapshot folder into one folder of blobs. */
static int ext_resolve(const graph_model *m, const char *name, char **path, errbuf *err) {
    char real[PATH_MAX], model_real[PATH_MAX];
    if (!realpath(*path, real))
        return err_set(err, TILEOPT_IO, "tensor '%s': external data '%s' is missing: %s", name,
                       *path, strerror(errno));
    bool inside = path_below(real, m->base_dir);
    if (!inside && m->path && realpath(m->path, model_real)) {
        char *slash = strrchr(model_real, '/');
        if (slash) *slash = '\0';
        inside = path_below(real, slash == model_real ? "/" : model_real);
    }
    if (!inside)
        return err_set(err, TILEOPT_INVALID,
                       "tensor '%s': external data '%s' resolves to '%s', outside the model's "
                       "folder", name, *path, real);
    char *copy = strdup(real);
    if (!copy) return err_set(err, TILEOPT_NOMEM, "out of memory");
    free(*path);
    *path = copy;
    return TILEOPT_OK;
}

static bool parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || s[0] == '-') return false;
    *out = v;
    return true;
}

/* Bytes of a tensor's values, or false when the shape's size overflows. */
static bool shape_bytes(const Onnx__TensorProto *t, const dtype_info *d, uint64_t *out) {
    uint64_t n = d->size;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0 || (t->dims[i] && n > UINT64_MAX / (uint64_t)t->dims[i]))
            return false;
        n *= (uint64_t)t->dims[i];
    }
    *out = n;
    return true;
}

int graph_external_extent(const graph_model *m, const Onnx__TensorProto *t,
                          graph_extent *out, errbuf *err) {
    const char *name = t->name ? t->name : "";
    const char *loc = ext_field(t, "location");
    const dtype_info *d = dtype_get(t->has_data_type ? t->data_type : 0);
    memset(out, 0, sizeof *out);
    if (!d) return err_set(err, TILEOPT_INVALID, "tensor '%s': unknown data type", name);
    if (d->kind == KIND_STRING)
        return err_set(err, TILEOPT_INVALID, "tensor '%s': strings cannot be external data", name);
    uint64_t nbytes;
    if (!shape_bytes(t, d, &nbytes))
        return err_set(err, TILEOPT_INVALID, "tensor '%s': negative dims or a size that overflows",
                       name);
    out->length = nbytes;
    if (ext_field(t, "offset") && !parse_u64(ext_field(t, "offset"), &out->offset))
        return err_set(err, TILEOPT_INVALID, "tensor '%s': bad external data offset", name);
    if (ext_field(t, "length") && !parse_u64(ext_field(t, "length"), &out->length))
        return err_set(err, TILEOPT_INVALID, "tensor '%s': bad external data length", name);
    if (!loc || !loc[0] || !m->base_dir)
        return err_set(err, TILEOPT_INVALID, "tensor '%s': external data has no location", name);
    const char *dup = ext_duplicate_key(t);
    if (dup)
        return err_set(err, TILEOPT_INVALID, "tensor '%s': external data key '%s' is given twice",
                       name, dup);
    if (out->length != nbytes)
        return err_set(err, TILEOPT_INVALID,
                       "tensor '%s': external data length %" PRIu64 " does not match its shape (%" PRIu64 " bytes)",
                       name, out->length, nbytes);
    size_t n = strlen(m->base_dir) + strlen(loc) + 2;
    out->path = malloc(n);
    if (!out->path) return err_set(err, TILEOPT_NOMEM, "out of memory");
    snprintf(out->path, n, "%s/%s", m->base_dir, loc);
    struct stat st;
    int rc = ext_resolve(m, name, &out->path, err);
    if (!rc && stat(out->path, &st) != 0)
        rc = err_set(err, TILEOPT_IO, "tensor '%s': external data '%s' is missing: %s", name,
                     out->path, strerror(errno));
    else if (!rc && !S_ISREG(st.st_mode))
        rc = err_set(err, TILEOPT_INVALID,
                     "tensor '%s': external data '%s' is not a regular file", name, out->path);
    if (!rc) out->id = (graph_file_id){(uint64_t)st.st_dev, (uint64_t)st.st_ino};
    if (!rc && (out->offset > (uint64_t)st.st_size ||
                out->length > (uint64_t)st.st_size - out->offset))
        rc = err_set(err, TILEOPT_INVALID,
                     "tensor '%s': external data '%s' (%lld bytes) is shorter than offset %" PRIu64 " + length %" PRIu64,
                     name, out->path, (long long)st.st_size, out->offset, out->length);
    if (rc) {
        free(out->path);
        out->path = NULL;
    }
    return rc;
}

int graph_extent_read(const graph_extent *e, void *dst, errbuf *err) {
    /* The path was resolved at load: a symlink planted there since is refused. */
    int fd = open(e->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return err_set(err, TILEOPT_IO, "cannot open external data '%s': %s", e->path,
                       strerror(errno));
    int rc = TILEOPT_OK;
    for (uint64_t got = 0; !rc && got < e->length;) {
        ssize_t r = pread(fd, (uint8_t *)dst + got, e->length - got, (off_t)(e->offset + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            rc = err_set(err, TILEOPT_IO, "reading external data '%s' failed (file shrank?)",
                         e->path);
        else
            got += (uint64_t)r;
    }
    close(fd);
    return rc;
}

static int read_external(graph_model *m, const Onnx__TensorProto *t, graph_tensor_data *out,
                         errbuf *err) {
    graph_extent e;
    int rc = graph_external_extent(m, t, &e, err);
    if (rc) return rc;
    out->data = malloc(e.length ? e.length : 1);
    out->owned = true;
    if (out->data)
        rc = graph_extent_read(&e, out->data, err);
    else
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
    if (rc) err_prefix(err, "tensor '%s': ", t->name ? t->name : "");
    free(e.path);
    return rc;
}

/* Typed fields hold narrow types widened (int32_data for int8..uint16, bool and
** the 16-bit floats, uint64_data for uint32): narrow them into place. */
static void narrow_copy(const dtype_info *d, const Onnx__TensorProto *t, void *dst,
                        size_t count) {
    uint8_t *o = dst;
    switch (d->field) {
    case FIELD_FLOAT: memcpy(o, t->float_data, count * sizeof(float)); break;
    case FIELD_DOUBLE: memcpy(o, t->double_data, count * sizeof(double)); break;
    case FIELD_INT64: memcpy(o, t->int64_data, count * sizeof(int64_t)); break;
    case FIELD_INT32:
        for (size_t i = 0; i < count; i++) {
            int32_t v = t->int32_data[i];
            if (d->size == 4) memcpy(o + 4 * i, &v, 4);
            else if (d->size == 2) { uint16_t s = (uint16_t)v; memcpy(o + 2 * i, &s, 2); }
            else o[i] = (uint8_t)v;
        }
        break;
    case FIELD_UINT64:
        for (size_t i = 0; i < count; i++) {
            uint64_t v = t->uint64_data[i];
            if (d->size == 4) { uint32_t s = (uint32_t)v; memcpy(o + 4 * i, &s, 4); }
            else memcpy(o + 8 * i, &v, 8);
        }
        break;
    case FIELD_STRING: {
        graph_bytes *b = dst;
        for (size_t i = 0; i < count; i++) b[i] = (graph_bytes){t->string_data[i].data, t->string_data[i].len};
        break;
    }
    case FIELD_NONE: break;
    }
}

static size_t field_count(const dtype_info *d, const Onnx__TensorProto *t) {
    switch (d->field) {
    case FIELD_FLOAT: return t->n_float_data;
    case FIELD_INT32: return t->n_int32_data;
    case FIELD_STRING: return t->n_string_data;
    case FIELD_INT64: return t->n_int64_data;
    case FIELD_DOUBLE: return t->n_double_data;
    case FIELD_UINT64: return t->n_uint64_data;
    case FIELD_NONE: break;
    }
    return 0;
}

/*
** The loader runs this on every TensorProto, so a model
** that claims more data than it holds (a 100-GB initializer with no bytes, dims
** whose size overflows, a short or missing external file) fails at load, before
** anything is allocated, instead of round-tripping or failing deep in a pass.
** It reads no tensor bytes: external files are only stat'ed.
*/
int graph_tensor_check(graph_model *m, const Onnx__TensorProto *t, errbuf *err) {
    graph_extent e;
    int rc = graph_tensor_check_extent(m, t, &e, err);
    free(e.path);
    return rc;
}

int graph_tensor_check_extent(graph_model *m, const Onnx__TensorProto *t, graph_extent *ext,
                              errbuf *err) {
    memset(ext, 0, sizeof *ext);
    const char *name = t->name ? t->name : "";
    const dtype_info *d = dtype_get(t->has_data_type ? t->data_type : 0);
    if (!d) return TILEOPT_OK; /* refused where the value is indexed or read */
    if (t->n_dims > m->limits.max_rank)
        return err_set(err, TILEOPT_LIMIT, "tensor '%s': rank %zu is over the limit %" PRIu32,
                       name, t->n_dims, m->limits.max_rank);
    uint64_t numel = 1, nbytes;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0)
            return err_set(err, TILEOPT_INVALID, "tensor '%s': negative dim %" PRId64 " at axis %zu",
                           name, t->dims[i], i);
        if (__builtin_mul_overflow(numel, (uint64_t)t->dims[i], &numel))
            return err_set(err, TILEOPT_INVALID,
                           "tensor '%s': dims overflow (the element count passes 2^64 at axis %zu)",
                           name, i);
    }
    if (__builtin_mul_overflow(numel, (uint64_t)d->size, &nbytes) || nbytes > SIZE_MAX / 2)
        return err_set(err, TILEOPT_INVALID,
                       "tensor '%s': dims overflow (%" PRIu64 " elements of %s)", name, numel,
                       d->name);
    if (graph_tensor_is_external(t)) return graph_external_extent(m, t, ext, err);
    if (t->has_raw_data) {
        if (d->field != FIELD_STRING && t->raw_data.len != nbytes)
            return err_set(err, TILEOPT_INVALID,
                           "tensor '%s': raw_data has %zu bytes but its dims need %" PRIu64, name,
                           t->raw_data.len, nbytes);
        return TILEOPT_OK;
    }
    size_t have = field_count(d, t);
    if (have != numel * d->field_per_elem)
        return err_set(err, TILEOPT_INVALID,
                       "tensor '%s': holds %zu values but its dims need %" PRIu64, name, have,
                       numel * d->field_per_elem);
    return TILEOPT_OK;
}

int graph_tensor_read(graph_model *m, const Onnx__TensorProto *t, graph_tensor_data *out,
                      errbuf *err) {
    memset(out, 0, sizeof *out);
    const char *name = t->name ? t->name : "";
    int32_t elem = t->has_data_type ? t->data_type : 0;
    const dtype_info *d = dtype_get(elem);
    if (!d) return err_set(err, TILEOPT_INVALID, "tensor '%s': unknown data type %" PRId32, name, elem);
    if (t->n_dims > m->limits.max_rank)
        return err_set(err, TILEOPT_LIMIT, "tensor '%s': rank %zu is over the limit %" PRIu32,
                       name, t->n_dims, m->limits.max_rank);
    uint64_t numel = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0)
            return err_set(err, TILEOPT_INVALID, "tensor '%s': negative dim %" PRId64, name, t->dims[i]);
        if (t->dims[i] && numel > UINT64_MAX / (uint64_t)t->dims[i])
            return err_set(err, TILEOPT_INVALID, "tensor '%s': element count overflows", name);
        numel *= (uint64_t)t->dims[i];
    }
    if (numel > m->limits.max_tensor_bytes / d->size)
        return err_set(err, TILEOPT_LIMIT,
                       "tensor '%s': %" PRIu64 " elements of %s exceed the tensor size limit of %" PRIu64 " bytes",
                       name, numel, d->name, m->limits.max_tensor_bytes);
    out->elem = elem;
    out->rank = (int32_t)t->n_dims;
    out->dims = t->dims;
    out->numel = numel;
    out->nbytes = (size_t)numel * d->size;
    if (graph_tensor_is_external(t)) return read_external(m, t, out, err);
    if (t->has_raw_data) {
        if (elem == DT_STRING)
            return err_set(err, TILEOPT_INVALID, "tensor '%s': a string tensor cannot use raw_data", name);
        if (t->raw_data.len != out->nbytes)
            return err_set(err, TILEOPT_INVALID,
                           "tensor '%s': raw_data has %zu bytes but shape needs %zu", name,
                           t->raw_data.len, out->nbytes);
        out->data = t->raw_data.data;
        return TILEOPT_OK;
    }
    size_t have = field_count(d, t);
    if (have != numel * d->field_per_elem)
        return err_set(err, TILEOPT_INVALID,
                       "tensor '%s': holds %zu values but its shape needs %" PRIu64, name, have,
                       numel * d->field_per_elem);
    if (numel == 0) return TILEOPT_OK;
    /* float, double, int64 in their own field already have the in-memory layout. */
    if ((d->field == FIELD_FLOAT && t->float_data) || (d->field == FIELD_DOUBLE && t->double_data) ||
        (d->field == FIELD_INT64 && t->int64_data)) {
        out->data = d->field == FIELD_FLOAT ? (void *)t->float_data
                  : d->field == FIELD_DOUBLE ? (void *)t->double_data : (void *)t->int64_data;
        return TILEOPT_OK;
    }
    out->data = malloc(out->nbytes);
    if (!out->data) return err_set(err, TILEOPT_NOMEM, "out of memory");
    out->owned = true;
    narrow_copy(d, t, out->data, (size_t)numel);
    return TILEOPT_OK;
}

Onnx__TensorProto *graph_tensor_new(graph_model *m, const char *name, int32_t elem,
                                    const int64_t *dims, size_t rank, const void *data,
                                    size_t nbytes) {
    arena *a = m->arena;
    Onnx__TensorProto *t = arena_alloc(a, sizeof *t);
    if (!t) return NULL;
    onnx__tensor_proto__init(t);
    t->name = name ? arena_strdup(a, name) : NULL;
    t->has_data_type = 1;
    t->data_type = elem;
    t->dims = arena_alloc(a, (rank ? rank : 1) * sizeof *t->dims);
    if (!t->dims || (name && !t->name)) return NULL;
    if (rank) memcpy(t->dims, dims, rank * sizeof *dims);
    t->n_dims = rank;
    if (elem == DT_STRING) {
        size_t count = nbytes / sizeof(graph_bytes);
        const graph_bytes *src = data;
        t->string_data = arena_alloc(a, (count ? count : 1) * sizeof *t->string_data);
        if (!t->string_data) return NULL;
        for (size_t i = 0; i < count; i++) {
            uint8_t *p = arena_alloc(a, src[i].len + 1);
            if (!p) return NULL;
            if (src[i].len) memcpy(p, src[i].data, src[i].len);
            t->string_data[i] = (ProtobufCBinaryData){src[i].len, p};
        }
        t->n_string_data = count;
        return t;
    }
    t->has_raw_data = 1;
    t->raw_data.len = nbytes;
    t->raw_data.data = arena_alloc(a, nbytes ? nbytes : 1);
    if (!t->raw_data.data) return NULL;
    if (nbytes) memcpy(t->raw_data.data, data, nbytes);
    return t;
}

int graph_value_info_refine(graph_model *m, Onnx__ValueInfoProto *vi, const graph_type *t) {
    arena *a = m->arena;
    if (!vi->type) {
        Onnx__TypeProto *tp = arena_alloc(a, sizeof *tp);
        if (!tp) return TILEOPT_NOMEM;
        onnx__type_proto__init(tp);
        vi->type = tp;
    }
    Onnx__TypeProto *tp = vi->type;
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
        tp->value_case != ONNX__TYPE_PROTO__VALUE__NOT_SET)
        return TILEOPT_OK;
    Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (!tt) {
        tt = arena_alloc(a, sizeof *tt);
        if (!tt) return TILEOPT_NOMEM;
        onnx__type_proto__tensor__init(tt);
        tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        tp->tensor_type = tt;
    }
    if (t->elem && !tt->has_elem_type) {
        tt->has_elem_type = 1;
        tt->elem_type = t->elem;
    }
    if (t->rank < 0) return TILEOPT_OK;
    Onnx__TensorShapeProto *sp = tt->shape;
    if (!sp) {
        sp = arena_alloc(a, sizeof *sp);
        if (!sp) return TILEOPT_NOMEM;
        onnx__tensor_shape_proto__init(sp);
        sp->n_dim = (size_t)t->rank;
        sp->dim = arena_calloc(a, t->rank ? (size_t)t->rank : 1, sizeof *sp->dim);
        if (!sp->dim) return TILEOPT_NOMEM;
        tt->shape = sp;
    }
    if (sp->n_dim != (size_t)t->rank) return TILEOPT_OK; /* a conflict is not ours to fix */
    for (int32_t i = 0; i < t->rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = sp->dim[i];
        if (!d) {
            d = arena_alloc(a, sizeof *d);
            if (!d) return TILEOPT_NOMEM;
            onnx__tensor_shape_proto__dimension__init(d);
            sp->dim[i] = d;
        }
        int64_t dim = t->dims ? t->dims[i] : -1;
        const char *sym = dim < 0 && t->syms ? t->syms[i] : NULL;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) continue;
        if (dim >= 0) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dim;
        } else if (sym && d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = arena_strdup(a, sym);
            if (!d->dim_param) return TILEOPT_NOMEM;
        }
    }
    return TILEOPT_OK;
}

Onnx__ValueInfoProto *graph_value_info_new(graph_model *m, const char *name,
                                           const graph_type *gt) {
    Onnx__ValueInfoProto *vi = arena_alloc(m->arena, sizeof *vi);
    if (!vi) return NULL;
    onnx__value_info_proto__init(vi);
    vi->name = arena_strdup(m->arena, name);
    if (!vi->name || graph_value_info_refine(m, vi, gt)) return NULL;
    return vi;
}

/* A throwaway model: the arena and limits graph_tensor_read expects, and the
** arena a standalone message is unpacked into (freed with it). */
static int tmp_model(graph_model *tmp, errbuf *err) {
    memset(tmp, 0, sizeof *tmp);
    tmp->arena = arena_new();
    if (!tmp->arena) return err_set(err, TILEOPT_NOMEM, "out of memory");
    graph_limits_default(&tmp->limits);
    return TILEOPT_OK;
}

/* A standalone message unpacked into tmp's arena; the error tells a message
** that ran out of memory from a bad one. */
static int unpack_into(graph_model *tmp, const ProtobufCMessageDescriptor *d, const void *bytes,
                       size_t size, ProtobufCMessage **out, errbuf *err) {
    *out = protobuf_c_message_unpack(d, arena_pb_allocator(tmp->arena), size, bytes);
    if (*out) return TILEOPT_OK;
    if (arena_pb_failed(tmp->arena))
        return err_set(err, TILEOPT_NOMEM, "out of memory reading a %s", d->short_name);
    return err_set(err, TILEOPT_PARSE, "not a serialized %s", d->short_name);
}

int graph_tensor_decode(const void *bytes, size_t size, graph_tensor_fn fn, void *arg,
                        errbuf *err) {
    graph_model tmp;
    int rc = tmp_model(&tmp, err);
    if (rc) return rc;
    ProtobufCMessage *msg;
    rc = unpack_into(&tmp, &onnx__tensor_proto__descriptor, bytes, size, &msg, err);
    const Onnx__TensorProto *p = (const Onnx__TensorProto *)msg;
    if (!rc && graph_tensor_is_external(p))
        rc = err_set(err, TILEOPT_UNSUPPORTED,
                     "tensor %s: external data in a standalone tensor file",
                     p->name ? p->name : "?");
    graph_tensor_data d;
    if (!rc && !(rc = graph_tensor_read(&tmp, p, &d, err))) {
        rc = fn(&d, p->name, arg, err);
        if (d.owned) free(d.data);
    }
    arena_free(tmp.arena);
    return rc;
}

int graph_tensor_encode(const char *name, int32_t elem, const int64_t *dims, size_t rank,
                        const void *data, size_t nbytes, void **bytes, size_t *size,
                        errbuf *err) {
    *bytes = NULL;
    *size = 0;
    Onnx__TensorProto p = ONNX__TENSOR_PROTO__INIT;
    p.n_dims = rank;
    p.dims = (int64_t *)dims;
    p.has_data_type = 1;
    p.data_type = elem;
    p.name = (char *)(name ? name : "");
    ProtobufCBinaryData *sd = NULL;
    if (elem == DT_STRING) {
        size_t n = nbytes / sizeof(graph_bytes);
        sd = calloc(n ? n : 1, sizeof *sd);
        if (!sd) return err_set(err, TILEOPT_NOMEM, "out of memory");
        const graph_bytes *s = data;
        for (size_t i = 0; i < n; i++) sd[i] = (ProtobufCBinaryData){s[i].len, (uint8_t *)s[i].data};
        p.n_string_data = n;
        p.string_data = sd;
    } else {
        p.has_raw_data = 1;
        p.raw_data = (ProtobufCBinaryData){nbytes, (uint8_t *)data};
    }
    size_t len = onnx__tensor_proto__get_packed_size(&p);
    uint8_t *buf = malloc(len ? len : 1);
    int rc = TILEOPT_OK;
    if (!buf) {
        rc = err_set(err, TILEOPT_NOMEM, "out of memory");
    } else {
        onnx__tensor_proto__pack(&p, buf);
        *bytes = buf;
        *size = len;
    }
    free(sd);
    return rc;
}

/* ------------------------------------------------ sequences and optionals */

graph_kind graph_type_kind(const Onnx__TypeProto *tp, int32_t *elem) {
    if (elem) *elem = 0;
    /* the outer kind; the element type from the tensor type at the bottom */
    graph_kind kind = GRAPH_KIND_NONE;
    for (bool outer = true; tp; outer = false) {
        graph_kind k;
        const Onnx__TypeProto *next = NULL;
        switch (tp->value_case) {
        case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
            if (elem && tp->tensor_type && tp->tensor_type->has_elem_type)
                *elem = tp->tensor_type->elem_type;
            k = GRAPH_KIND_TENSOR;
            break;
        case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
            k = GRAPH_KIND_SEQUENCE;
            next = tp->sequence_type ? tp->sequence_type->elem_type : NULL;
            break;
        case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
            k = GRAPH_KIND_OPTIONAL;
            next = tp->optional_type ? tp->optional_type->elem_type : NULL;
            break;
        case ONNX__TYPE_PROTO__VALUE__NOT_SET:
            k = GRAPH_KIND_NONE;
            break;
        default:
            k = GRAPH_KIND_OTHER;
            break;
        }
        if (outer) kind = k;
        tp = next;
    }
    return kind;
}

/* The DataType codes of SequenceProto and OptionalProto: the same numbers in both. */
enum { VD_UNDEFINED = 0, VD_TENSOR = 1, VD_SPARSE = 2, VD_SEQUENCE = 3, VD_MAP = 4,
       VD_OPTIONAL = 5 };

/* A throwaway model gives graph_tensor_read the arena and limits it expects. */
static void value_data_release(graph_value_data *v) {
    if (v->kind == GRAPH_KIND_TENSOR && v->tensor.owned) free(v->tensor.data);
    v->tensor.owned = false;
    for (size_t i = 0; v->items && i < v->n_items; i++) value_data_release(&v->items[i]);
}

static int dec_sequence(graph_model *m, const Onnx__SequenceProto *p, graph_value_data *out,
                        errbuf *err);
static int dec_optional(graph_model *m, const Onnx__OptionalProto *p, graph_value_data *out,
                        errbuf *err);

static int dec_tensor(graph_model *m, const Onnx__TensorProto *p, graph_value_data *out,
                      errbuf *err) {
    out->kind = GRAPH_KIND_TENSOR;
    out->name = p->name;
    if (graph_tensor_is_external(p))
        return err_set(err, TILEOPT_UNSUPPORTED,
                       "tensor %s: external data in a standalone value file",
                       p->name ? p->name : "?");
    return graph_tensor_read(m, p, &out->tensor, err);
}

/* Room for n items in the arena; the items start empty (kind tensor, no data). */
static int dec_items(graph_model *m, size_t n, graph_value_data *out, errbuf *err) {
    out->n_items = 0;
    out->items = arena_calloc(m->arena, n ? n : 1, sizeof *out->items);
    if (!out->items) return err_set(err, TILEOPT_NOMEM, "out of memory");
    out->n_items = n;
    return TILEOPT_OK;
}

static int dec_sequence(graph_model *m, const Onnx__SequenceProto *p, graph_value_data *out,
                        errbuf *err) {
    const char *nm = p->name ? p->name : "";
    out->kind = GRAPH_KIND_SEQUENCE;
    out->name = p->name;
    if (p->n_map_values || p->n_sparse_tensor_values ||
        (p->has_elem_type && (p->elem_type == VD_MAP || p->elem_type == VD_SPARSE)))
        return err_set(err, TILEOPT_UNSUPPORTED,
                       "SequenceProto '%s': sequences of maps or sparse tensors are not "
                       "supported", nm);
    size_t nt = p->n_tensor_values, ns = p->n_sequence_values, no = p->n_optional_values;
    int32_t holds = nt ? VD_TENSOR : ns ? VD_SEQUENCE : no ? VD_OPTIONAL : VD_UNDEFINED;
    if ((nt > 0) + (ns > 0) + (no > 0) > 1 ||
        (holds && p->has_elem_type && p->elem_type != VD_UNDEFINED && p->elem_type != holds))
        return err_set(err, TILEOPT_INVALID,
                       "SequenceProto '%s': its elem_type %" PRId32 " disagrees with the "
                       "values it holds", nm, p->has_elem_type ? p->elem_type : 0);
    int rc = dec_items(m, nt + ns + no, out, err);
    for (size_t i = 0; i < nt && !rc; i++)
        rc = dec_tensor(m, p->tensor_values[i], &out->items[i], err);
    for (size_t i = 0; i < ns && !rc; i++)
        rc = dec_sequence(m, p->sequence_values[i], &out->items[i], err);
    for (size_t i = 0; i < no && !rc; i++)
        rc = dec_optional(m, p->optional_values[i], &out->items[i], err);
    return rc;
}

static int dec_optional(graph_model *m, const Onnx__OptionalProto *p, graph_value_data *out,
                        errbuf *err) {
    const char *nm = p->name ? p->name : "";
    out->kind = GRAPH_KIND_OPTIONAL;
    out->name = p->name;
    if (p->map_value || p->sparse_tensor_value)
        return err_set(err, TILEOPT_UNSUPPORTED,
                       "OptionalProto '%s': optional maps or sparse tensors are not supported",
                       nm);
    int32_t holds = p->tensor_value     ? VD_TENSOR
                    : p->sequence_value ? VD_SEQUENCE
                    : p->optional_value ? VD_OPTIONAL
                                        : VD_UNDEFINED;
    int present = (p->tensor_value != NULL) + (p->sequence_value != NULL) +
                  (p->optional_value != NULL);
    if (present > 1 ||
        (holds && p->has_elem_type && p->elem_type != VD_UNDEFINED && p->elem_type != holds))
        return err_set(err, TILEOPT_INVALID,
                       "OptionalProto '%s': its elem_type %" PRId32 " disagrees with the "
                       "value it holds", nm, p->has_elem_type ? p->elem_type : 0);
    int rc = dec_items(m, holds ? 1 : 0, out, err);
    if (rc || !holds) return rc;
    if (holds == VD_TENSOR) return dec_tensor(m, p->tensor_value, &out->items[0], err);
    if (holds == VD_SEQUENCE) return dec_sequence(m, p->sequence_value, &out->items[0], err);
    return dec_optional(m, p->optional_value, &out->items[0], err);
}

int graph_value_decode(const void *bytes, size_t size, graph_kind kind, uint32_t max_levels,
                       graph_value_fn fn, void *arg, errbuf *err) {
    if (kind != GRAPH_KIND_SEQUENCE && kind != GRAPH_KIND_OPTIONAL)
        return err_set(err, TILEOPT_MISUSE, "graph_value_decode: not a sequence or optional");
    bool seq = kind == GRAPH_KIND_SEQUENCE;
    const ProtobufCMessageDescriptor *d =
        seq ? &onnx__sequence_proto__descriptor : &onnx__optional_proto__descriptor;
    int rc = graph_wire_check(d, bytes, size, max_levels, err);
    if (rc) return rc;
    graph_model tmp;
    if ((rc = tmp_model(&tmp, err))) return rc;
    ProtobufCMessage *msg;
    rc = unpack_into(&tmp, d, bytes, size, &msg, err);
    graph_value_data root;
    memset(&root, 0, sizeof root);
    if (!rc)
        rc = seq ? dec_sequence(&tmp, (const Onnx__SequenceProto *)msg, &root, err)
                 : dec_optional(&tmp, (const Onnx__OptionalProto *)msg, &root, err);
    if (!rc) rc = fn(&root, arg, err);
    value_data_release(&root);
    arena_free(tmp.arena);
    return rc;
}

static int enc_value(graph_model *m, const graph_value_data *v, void **out, errbuf *err);

static int enc_tensor(graph_model *m, const graph_value_data *v, void **out, errbuf *err) {
    const graph_tensor_data *t = &v->tensor;
    *out = graph_tensor_new(m, v->name, t->elem, t->dims, (size_t)t->rank, t->data, t->nbytes);
    return *out ? TILEOPT_OK : err_set(err, TILEOPT_NOMEM, "out of memory");
}

/* The items of a sequence, all of one kind, go to the list of that kind. */
static int enc_sequence(graph_model *m, const graph_value_data *v, void **out, errbuf *err) {
    Onnx__SequenceProto *p = arena_alloc(m->arena, sizeof *p);
    void **items = arena_calloc(m->arena, v->n_items ? v->n_items : 1, sizeof *items);
    char *name = v->name ? arena_strdup(m->arena, v->name) : NULL;
    if (!p || !items || (v->name && !name)) return err_set(err, TILEOPT_NOMEM, "out of memory");
    onnx__sequence_proto__init(p);
    p->name = name;
    graph_kind k = v->n_items ? v->items[0].kind : GRAPH_KIND_TENSOR;
    for (size_t i = 0; i < v->n_items; i++) {
        if (v->items[i].kind != k)
            return err_set(err, TILEOPT_INVALID, "a sequence holding items of different kinds");
        int rc = enc_value(m, &v->items[i], &items[i], err);
        if (rc) return rc;
    }
    p->has_elem_type = 1;
    if (k == GRAPH_KIND_TENSOR) {
        p->elem_type = VD_TENSOR;
        p->n_tensor_values = v->n_items;
        p->tensor_values = (Onnx__TensorProto **)items;
    } else if (k == GRAPH_KIND_SEQUENCE) {
        p->elem_type = VD_SEQUENCE;
        p->n_sequence_values = v->n_items;
        p->sequence_values = (Onnx__SequenceProto **)items;
    } else {
        p->elem_type = VD_OPTIONAL;
        p->n_optional_values = v->n_items;
        p->optional_values = (Onnx__OptionalProto **)items;
    }
    *out = p;
    return TILEOPT_OK;
}

static int enc_optional(graph_model *m, const graph_value_data *v, void **out, errbuf *err) {
    Onnx__OptionalProto *p = arena_alloc(m->arena, sizeof *p);
    char *name = v->name ? arena_strdup(m->arena, v->name) : NULL;
    if (!p || (v->name && !name)) return err_set(err, TILEOPT_NOMEM, "out of memory");
    onnx__optional_proto__init(p);
    p->name = name;
    p->has_elem_type = 1;
    p->elem_type = VD_UNDEFINED;
    *out = p;
    if (!v->n_items) return TILEOPT_OK;
    const graph_value_data *it = &v->items[0];
    void *item = NULL;
    int rc = enc_value(m, it, &item, err);
    if (rc) return rc;
    if (it->kind == GRAPH_KIND_TENSOR) {
        p->elem_type = VD_TENSOR;
        p->tensor_value = item;
    } else if (it->kind == GRAPH_KIND_SEQUENCE) {
        p->elem_type = VD_SEQUENCE;
        p->sequence_value = item;
    } else {
        p->elem_type = VD_OPTIONAL;
        p->optional_value = item;
    }
    return TILEOPT_OK;
}

static int enc_value(graph_model *m, const graph_value_data *v, void **out, errbuf *err) {
    *out = NULL;
    switch (v->kind) {
    case GRAPH_KIND_TENSOR: return enc_tensor(m, v, out, err);
    case GRAPH_KIND_SEQUENCE: return enc_sequence(m, v, out, err);
    case GRAPH_KIND_OPTIONAL: return enc_optional(m, v, out, err);
    default:
        return err_set(err, TILEOPT_MISUSE, "graph_value_encode: a value of kind %d",
                       (int)v->kind);
    }
}

int graph_value_encode(const graph_value_data *v, void **bytes, size_t *size, errbuf *err) {
    *bytes = NULL;
    *size = 0;
    if (v->kind != GRAPH_KIND_SEQUENCE && v->kind != GRAPH_KIND_OPTIONAL)
        return err_set(err, TILEOPT_MISUSE, "graph_value_encode: not a sequence or optional");
    graph_model tmp;
    int rc = tmp_model(&tmp, err);
    if (rc) return rc;
    void *msg = NULL;
    rc = enc_value(&tmp, v, &msg, err);
    if (!rc) {
        size_t len = protobuf_c_message_get_packed_size(msg);
        uint8_t *buf = malloc(len ? len : 1);
        if (!buf) {
            rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        } else {
            protobuf_c_message_pack(msg, buf);
            *bytes = buf;
            *size = len;
        }
    }
    arena_free(tmp.arena);
    return rc;
}

/* Values in a Constant's value_<type>s attribute (list): a 1-D tensor of n, its
** one dim kept in hdr; value_<type> is a scalar of one. */
static size_t const_count(Onnx__TensorProto *tp, graph_const_hdr *hdr, bool list, size_t n) {
    if (!list) return 1;
    hdr->dim = (int64_t)n;
    tp->n_dims = 1;
    tp->dims = &hdr->dim;
    return n;
}

int graph_constant_value(const Onnx__NodeProto *n, graph_const_hdr *hdr,
                         const Onnx__TensorProto **out, errbuf *err) {
    *out = NULL;
    const Onnx__AttributeProto *found = NULL;
    for (size_t i = 0; i < n->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->attribute[i];
        if (!a->name) continue;
        if (found)
            return err_set(err, TILEOPT_INVALID,
                           "exactly one value attribute allowed, got %s and %s",
                           found->name, a->name);
        found = a;
    }
    if (!found) return err_set(err, TILEOPT_INVALID, "has no value attribute");
    const char *an = found->name;
    Onnx__TensorProto *tp = &hdr->tp;
    onnx__tensor_proto__init(tp);
    tp->has_data_type = 1;
    size_t al = strlen(an);
    bool list = al && an[al - 1] == 's'; /* value_floats, value_ints, value_strings */
    if (!strcmp(an, "value")) {
        if (!found->t) return err_set(err, TILEOPT_INVALID, "attribute value has no tensor");
        *out = found->t;
        return TILEOPT_OK;
    } else if (!strcmp(an, "sparse_value")) {
        return err_set(err, TILEOPT_UNSUPPORTED, "sparse_value is not supported");
    } else if (!strcmp(an, "value_float") || !strcmp(an, "value_floats")) {
        tp->data_type = DT_FLOAT;
        tp->n_float_data = const_count(tp, hdr, list, found->n_floats);
        tp->float_data = list ? found->floats : (float *)&found->f;
    } else if (!strcmp(an, "value_int") || !strcmp(an, "value_ints")) {
        tp->data_type = DT_INT64;
        tp->n_int64_data = const_count(tp, hdr, list, found->n_ints);
        tp->int64_data = list ? found->ints : (int64_t *)&found->i;
    } else if (!strcmp(an, "value_string") || !strcmp(an, "value_strings")) {
        hdr->one = found->s;
        tp->data_type = DT_STRING;
        tp->n_string_data = const_count(tp, hdr, list, found->n_strings);
        tp->string_data = list ? found->strings : &hdr->one;
    } else {
        return err_set(err, TILEOPT_INVALID, "unknown attribute %s", an);
    }
    *out = tp;
    return TILEOPT_OK;
}

/* ----------------------------------------------------------------- sizes */

/* Bytes of a varint, and of a length-delimited field holding len bytes whose
** field number fits one tag byte (all GraphProto's do). */
static uint64_t varint_bytes(uint64_t v) {
    uint64_t n = 1;
    for (; v >= 0x80; v >>= 7) n++;
    return n;
}
static uint64_t field_bytes(uint64_t len) { return 1 + varint_bytes(len) + len; }

uint64_t graph_initializer_bytes(const Onnx__TensorProto *t) {
    uint64_t b = field_bytes(onnx__tensor_proto__get_packed_size(t));
    if (graph_tensor_is_external(t)) {
        const char *len = ext_field(t, "length");
        if (len) b += strtoull(len, NULL, 10);
    }
    return b;
}

uint64_t graph_new_initializer_bytes(size_t name_len, int32_t elem, const int64_t *dims,
                                     size_t rank, uint64_t nbytes) {
    /* dims (field 1) are written unpacked, one tag per dim */
    uint64_t b = 0;
    for (size_t i = 0; i < rank; i++)
        b += 1 + (dims[i] < 0 ? 10 : varint_bytes((uint64_t)dims[i]));
    b += 1 + varint_bytes((uint64_t)(elem < 0 ? 0 : elem)); /* data_type */
    b += field_bytes(name_len);                            /* name */
    b += field_bytes(nbytes);                              /* raw_data */
    return field_bytes(b);
}

uint64_t graph_node_bytes(const Onnx__NodeProto *n) {
    return field_bytes(onnx__node_proto__get_packed_size(n));
}

uint64_t graph_value_info_bytes(const Onnx__ValueInfoProto *vi) {
    return field_bytes(onnx__value_info_proto__get_packed_size(vi));
}

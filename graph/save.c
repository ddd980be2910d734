/*
** Saving: pack straight into a temporary file beside the target (no second copy of
** big tensors in memory), fsync, rename. External data is kept by reference when
** the output sits in the source folder, copied beside the output otherwise. A model
** past 2 GB moves its big initializers into "<output>.data".
*/
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/graph.h"

/* Saves report progress about every this many bytes. */
#define PROGRESS_STEP ((uint64_t)64 << 20)
/* Tensors smaller than this stay inline even when a model goes external. */
#define EXTERNAL_MIN_BYTES 1024

typedef struct file_sink {
    ProtobufCBuffer base;
    int fd;
    int error;               /* errno of the first failed write */
    uint64_t written, total, next_report;
    const graph_model *model;
    size_t used;
    uint8_t buf[1 << 20];
} file_sink;

static void write_all(file_sink *s, const uint8_t *p, size_t n) {
    while (n && !s->error) {
        ssize_t w = write(s->fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            s->error = errno;
            return;
        }
        p += w;
        n -= (size_t)w;
        s->written += (uint64_t)w;
    }
    if (s->model->progress && s->written >= s->next_report) {
        s->model->progress(s->model->progress_user, "saving", s->written, s->total);
        s->next_report = s->written + PROGRESS_STEP;
    }
}

static void sink_flush(file_sink *s) {
    write_all(s, s->buf, s->used);
    s->used = 0;
}

static void sink_append(ProtobufCBuffer *b, size_t len, const uint8_t *data) {
    file_sink *s = (file_sink *)b;
    if (s->used + len > sizeof s->buf) sink_flush(s);
    if (len >= sizeof s->buf) {
        write_all(s, data, len); /* big tensors go straight to the file */
        return;
    }
    memcpy(s->buf + s->used, data, len);
    s->used += len;
}

size_t graph_model_packed_size(const graph_model *m) {
    return onnx__model_proto__get_packed_size(m->pb);
}

/* Write `n` bytes via a temporary file in path's folder, atomically. */
typedef int (*write_fn)(int fd, void *user, errbuf *err);

static int write_atomic(const char *path, write_fn fn, void *user, errbuf *err) {
    char *copy = strdup(path);
    if (!copy) return err_set(err, TILEOPT_NOMEM, "out of memory");
    char *dir = dirname(copy);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        int rc = err_set(err, TILEOPT_IO, "cannot write '%s': folder '%s' does not exist", path,
                         dir);
        free(copy);
        return rc;
    }
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp) {
        free(copy);
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    snprintf(tmp, n, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int rc = err_set(err, TILEOPT_IO, "cannot write '%s': %s", path, strerror(errno));
        free(tmp);
        free(copy);
        return rc;
    }
    int rc = fn(fd, user, err);
    if (!rc && fsync(fd) != 0)
        rc = err_set(err, TILEOPT_IO, "cannot write '%s': %s", path, strerror(errno));
    /* mkstemp makes 0600; a model file should be as readable as cp would make it. */
    mode_t mask = umask(0);
    umask(mask);
    if (!rc) fchmod(fd, 0666 & ~mask);
    if (close(fd) != 0 && !rc)
        rc = err_set(err, TILEOPT_IO, "cannot write '%s': %s", path, strerror(errno));
    if (!rc && rename(tmp, path) != 0)
        rc = err_set(err, TILEOPT_IO, "cannot write '%s': %s", path, strerror(errno));
    if (rc) {
        unlink(tmp);
    } else {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
    }
    free(tmp);
    free(copy);
    return rc;
}

typedef struct pack_job {
    const graph_model *model;
    uint64_t total;
    uint64_t *written;
} pack_job;

static int pack_to_fd(int fd, void *user, errbuf *err) {
    const pack_job *pack = user;
    file_sink *s = malloc(sizeof *s);
    if (!s) return err_set(err, TILEOPT_NOMEM, "out of memory");
    s->base.append = sink_append;
    s->fd = fd;
    s->error = 0;
    s->written = 0;
    s->used = 0;
    s->model = pack->model;
    s->total = pack->total;
    s->next_report = PROGRESS_STEP;
    protobuf_c_message_pack_to_buffer(&pack->model->pb->base, &s->base);
    sink_flush(s);
    if (s->model->progress && s->written >= PROGRESS_STEP)
        s->model->progress(s->model->progress_user, "saving", s->total, s->total);
    int rc = s->error ? err_set(err, TILEOPT_IO, "write failed: %s", strerror(s->error))
                      : TILEOPT_OK;
    *pack->written = s->written;
    free(s);
    return rc;
}

/* ------------------------------------------------------- external data */

typedef struct copy_job {
    const char *src;
} copy_job;

static int copy_to_fd(int fd, void *user, errbuf *err) {
    const copy_job *job = user;
    int in = open(job->src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return err_set(err, TILEOPT_IO, "cannot read external data '%s': %s", job->src,
                       strerror(errno));
    static const size_t chunk = 1 << 20;
    uint8_t *buf = malloc(chunk);
    int rc = buf ? TILEOPT_OK : err_set(err, TILEOPT_NOMEM, "out of memory");
    for (ssize_t r; !rc && (r = read(in, buf, chunk)) != 0;) {
        if (r < 0) {
            if (errno == EINTR) continue;
            rc = err_set(err, TILEOPT_IO, "cannot read '%s': %s", job->src, strerror(errno));
            break;
        }
        for (ssize_t off = 0; off < r;) {
            ssize_t w = write(fd, buf + off, (size_t)(r - off));
            if (w < 0) {
                if (errno == EINTR) continue;
                rc = err_set(err, TILEOPT_IO, "write failed: %s", strerror(errno));
                break;
            }
            off += w;
        }
    }
    free(buf);
    close(in);
    return rc;
}

static const char *ext_location(const Onnx__TensorProto *t) {
    for (size_t i = 0; i < t->n_external_data; i++)
        if (t->external_data[i]->key && strcmp(t->external_data[i]->key, "location") == 0)
            return t->external_data[i]->value;
    return NULL;
}

typedef struct ext_list {
    const char **locs;
    size_t n, cap;
} ext_list;

static int ext_collect(ext_list *l, const Onnx__TensorProto *t) {
    if (!graph_tensor_is_external(t)) return TILEOPT_OK;
    const char *loc = ext_location(t);
    if (!loc) return TILEOPT_OK;
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->locs[i], loc) == 0) return TILEOPT_OK;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        const char **p = realloc(l->locs, cap * sizeof *p);
        if (!p) return TILEOPT_NOMEM;
        l->locs = p;
        l->cap = cap;
    }
    l->locs[l->n++] = loc;
    return TILEOPT_OK;
}

static int ext_collect_graph(ext_list *l, const Onnx__GraphProto *g) {
    int rc = TILEOPT_OK;
    for (size_t i = 0; !rc && i < g->n_initializer; i++) rc = ext_collect(l, g->initializer[i]);
    for (size_t i = 0; !rc && i < g->n_sparse_initializer; i++) {
        const Onnx__SparseTensorProto *s = g->sparse_initializer[i];
        if (s->values) rc = ext_collect(l, s->values);
        if (!rc && s->indices) rc = ext_collect(l, s->indices);
    }
    for (size_t i = 0; !rc && i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t a = 0; !rc && a < n->n_attribute; a++) {
            const Onnx__AttributeProto *at = n->attribute[a];
            if (at->t) rc = ext_collect(l, at->t);
            for (size_t k = 0; !rc && k < at->n_tensors; k++) rc = ext_collect(l, at->tensors[k]);
            if (!rc && at->g) rc = ext_collect_graph(l, at->g);
            for (size_t k = 0; !rc && k < at->n_graphs; k++)
                rc = ext_collect_graph(l, at->graphs[k]);
        }
    }
    return rc;
}

static bool same_dir(const char *a, const char *b) {
    char ra[PATH_MAX], rb[PATH_MAX];
    if (!realpath(a, ra) || !realpath(b, rb)) return false;
    return strcmp(ra, rb) == 0;
}

static int mkdirs_for(const char *path) {
    char *p = strdup(path);
    if (!p) return -1;
    for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            free(p);
            return -1;
        }
        *s = '/';
    }
    free(p);
    return 0;
}

/* Copy every external-data file the model references into out_dir. */
static int copy_external(graph_model *m, const char *out_dir, errbuf *err) {
    ext_list l = {0};
    int rc = ext_collect_graph(&l, m->pb->graph);
    if (rc) {
        free(l.locs);
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    if (l.n && !m->base_dir) {
        free(l.locs);
        return err_set(err, TILEOPT_INVALID, "the model references external data but has no folder");
    }
    if (l.n && same_dir(m->base_dir, out_dir)) l.n = 0;
    for (size_t i = 0; !rc && i < l.n; i++) {
        size_t n1 = strlen(m->base_dir) + strlen(l.locs[i]) + 2;
        size_t n2 = strlen(out_dir) + strlen(l.locs[i]) + 2;
        char *src = malloc(n1), *dst = malloc(n2);
        if (!src || !dst) {
            rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        } else {
            snprintf(src, n1, "%s/%s", m->base_dir, l.locs[i]);
            snprintf(dst, n2, "%s/%s", out_dir, l.locs[i]);
            copy_job job = {src};
            if (mkdirs_for(dst) != 0)
                rc = err_set(err, TILEOPT_IO, "cannot create the folder for '%s': %s", dst,
                             strerror(errno));
            else
                rc = write_atomic(dst, copy_to_fd, &job, err);
        }
        free(src);
        free(dst);
    }
    free(l.locs);
    return rc;
}

/* ------------------------------------------------- models past 2 GB */

typedef struct moved {
    Onnx__TensorProto *t;
    Onnx__TensorProto saved;
} moved;

typedef struct big_save {
    graph_model *m;
    moved *list;
    size_t n;
    const char *data_path;
} big_save;

static int write_tensor_data(int fd, void *user, errbuf *err) {
    big_save *b = user;
    for (size_t i = 0; i < b->n; i++) {
        const ProtobufCBinaryData *d = &b->list[i].saved.raw_data;
        for (size_t off = 0; off < d->len;) {
            ssize_t w = write(fd, d->data + off, d->len - off);
            if (w < 0) {
                if (errno == EINTR) continue;
                return err_set(err, TILEOPT_IO, "cannot write '%s': %s", b->data_path,
                               strerror(errno));
            }
            off += (size_t)w;
        }
    }
    return TILEOPT_OK;
}

static Onnx__StringStringEntryProto *entry(arena *a, const char *k, const char *v) {
    Onnx__StringStringEntryProto *e = arena_alloc(a, sizeof *e);
    if (!e) return NULL;
    onnx__string_string_entry_proto__init(e);
    e->key = arena_strdup(a, k);
    e->value = arena_strdup(a, v);
    return e->key && e->value ? e : NULL;
}

/* Point the big initializers at "<output>.data", write it, and return the list so
** the caller can restore the in-memory model after packing. */
static int externalize(graph_model *m, const char *path, big_save *b, errbuf *err) {
    const Onnx__GraphProto *g = m->pb->graph;
    b->list = calloc(g->n_initializer ? g->n_initializer : 1, sizeof *b->list);
    if (!b->list) return err_set(err, TILEOPT_NOMEM, "out of memory");
    size_t dlen = strlen(path) + 6;
    char *data_path = malloc(dlen);
    if (!data_path) return err_set(err, TILEOPT_NOMEM, "out of memory");
    snprintf(data_path, dlen, "%s.data", path);
    b->data_path = data_path;
    const char *base = strrchr(data_path, '/');
    base = base ? base + 1 : data_path;
    uint64_t offset = 0;
    for (size_t i = 0; i < g->n_initializer; i++) {
        Onnx__TensorProto *t = g->initializer[i];
        if (graph_tensor_is_external(t) || !t->has_raw_data ||
            t->raw_data.len < EXTERNAL_MIN_BYTES)
            continue;
        moved *mv = &b->list[b->n++];
        mv->t = t;
        mv->saved = *t;
        char off[32], len[32];
        snprintf(off, sizeof off, "%" PRIu64, offset);
        snprintf(len, sizeof len, "%zu", t->raw_data.len);
        Onnx__StringStringEntryProto **ed = arena_alloc(m->arena, 3 * sizeof *ed);
        if (!ed || !(ed[0] = entry(m->arena, "location", base)) ||
            !(ed[1] = entry(m->arena, "offset", off)) ||
            !(ed[2] = entry(m->arena, "length", len)))
            return err_set(err, TILEOPT_NOMEM, "out of memory");
        offset += t->raw_data.len;
        t->has_raw_data = 0;
        t->raw_data.len = 0;
        t->raw_data.data = NULL;
        t->external_data = ed;
        t->n_external_data = 3;
        t->has_data_location = 1;
        t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    }
    return write_atomic(data_path, write_tensor_data, b, err);
}

static void restore(big_save *b) {
    for (size_t i = 0; i < b->n; i++) *b->list[i].t = b->list[i].saved;
    free(b->list);
    free((char *)b->data_path);
}

int graph_model_save_path(graph_model *m, const char *path, errbuf *err) {
    char *copy = strdup(path);
    if (!copy) return err_set(err, TILEOPT_NOMEM, "out of memory");
    int rc = copy_external(m, dirname(copy), err);
    free(copy);
    if (rc) return rc;
    big_save b = {m, NULL, 0, NULL};
    uint64_t limit = m->limits.max_inline_bytes;
    uint64_t total = graph_model_packed_size(m);
    if (total > limit) {
        rc = externalize(m, path, &b, err);
        total = graph_model_packed_size(m);
        if (!rc && total > limit)
            rc = err_set(err, TILEOPT_LIMIT,
                         "the model stays over %" PRIu64 " bytes with its initializers as external data",
                         limit);
    }
    uint64_t written = 0;
    pack_job job = {m, total, &written};
    if (!rc) rc = write_atomic(path, pack_to_fd, &job, err);
    if (!rc) m->saved_bytes = written;
    restore(&b);
    return rc;
}

int graph_model_save_buffer(graph_model *m, void **out, size_t *size, errbuf *err) {
    *out = NULL;
    *size = 0;
    size_t n = graph_model_packed_size(m);
    if (n > INT32_MAX)
        return err_set(err, TILEOPT_LIMIT,
                       "the model is over 2 GB and needs external data: save it to a path");
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) return err_set(err, TILEOPT_NOMEM, "out of memory");
    onnx__model_proto__pack(m->pb, buf);
    *out = buf;
    *size = n;
    return TILEOPT_OK;
}

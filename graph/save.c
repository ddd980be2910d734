/*
** Saving: pack straight into a temporary file beside the target (no second copy of
** big tensors in memory), fsync, rename. External data is kept by reference when
** the output sits in the source folder; otherwise its bytes, and those of big
** initializers when the model passes the inline limit (2 GB), go to
** "<output>.data" beside the output.
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
#include <time.h>
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
        /* a big tensor goes out in steps, so that progress moves while it does */
        ssize_t w = write(s->fd, p, n < PROGRESS_STEP ? n : PROGRESS_STEP);
        if (w < 0) {
            if (errno == EINTR) continue;
            s->error = errno;
            return;
        }
        p += w;
        n -= (size_t)w;
        s->written += (uint64_t)w;
        if (s->model->progress.fn && s->written >= s->next_report) {
            graph_progress_tell(&s->model->progress, "saving", s->written, s->total);
            s->next_report = s->written + PROGRESS_STEP;
        }
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
    if (len) memcpy(s->buf + s->used, data, len); /* empty fields come with data NULL */
    s->used += len;
}

size_t graph_model_packed_size(const graph_model *m) {
    return onnx__model_proto__get_packed_size(m->pb);
}

/* Write `n` bytes via a temporary file in path's folder, atomically. */
typedef int (*write_fn)(int fd, void *user, errbuf *err);

/* A fresh temporary file in dir, named .tileopt-XXXXXXXX: short, so a path whose
** own name is near NAME_MAX still has room, and hidden. It is created with mode
** 0666 and the kernel applies the umask, as for any new file; reading the umask
** would mean setting it, process-wide state that a threaded caller races on. */
/* Eight characters of [0-9a-z] that differ from call to call and process to
** process (time, pid, an address), for names no other save is using. */
static void random_tag(char tag[9], uint64_t *state) {
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    if (!*state) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        *state = (((uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull) ^
                  ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)state) | 1;
    }
    for (int k = 0; k < 8; k++) {
        *state = *state * 6364136223846793005ull + 1442695040888963407ull;
        tag[k] = digits[(*state >> 33) % 36];
    }
    tag[8] = '\0';
}

/* The hook hears each name before the file is created: a signal between the two
** then finds no file to remove, which is harmless, where told after the open it
** would leave a file the handler never heard of. */
static int open_temp(const char *dir, char **tmp_out, graph_temp_fn hook, void *hook_user) {
    size_t n = strlen(dir) + 32;
    char *tmp = malloc(n);
    if (!tmp) {
        errno = ENOMEM;
        return -1;
    }
    uint64_t x = 0;
    for (int attempt = 0; attempt < 100; attempt++) {
        char name[9];
        random_tag(name, &x);
        snprintf(tmp, n, "%s/.tileopt-%s", dir, name);
        if (hook) hook(hook_user, tmp);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) {
            if (fd >= 0) {
                *tmp_out = tmp;
                return fd;
            }
            int e = errno;
            if (hook) hook(hook_user, NULL);
            free(tmp);
            errno = e;
            return fd;
        }
    }
    if (hook) hook(hook_user, NULL);
    free(tmp);
    errno = EEXIST;
    return -1;
}

static int write_atomic(const char *path, write_fn fn, void *user, graph_temp_fn hook,
                        void *hook_user, errbuf *err) {
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
    char *tmp = NULL;
    int fd = open_temp(dir, &tmp, hook, hook_user);
    if (fd < 0) {
        int rc = err_set(err, TILEOPT_IO, "cannot write '%s': %s", path, strerror(errno));
        free(copy);
        return rc;
    }
    int rc = fn(fd, user, err);
    if (!rc && fsync(fd) != 0)
        rc = err_set(err, TILEOPT_IO, "cannot write '%s': %s", path, strerror(errno));
    if (close(fd) != 0 && !rc)
        rc = err_set(err, TILEOPT_IO, "cannot write '%s': %s", path, strerror(errno));
    if (!rc && rename(tmp, path) != 0)
        rc = err_set(err, TILEOPT_IO, "cannot write '%s': %s", path, strerror(errno));
    if (rc) unlink(tmp);
    if (hook) hook(hook_user, NULL);
    if (!rc) {
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

typedef struct bytes_job {
    const void *data;
    size_t n;
} bytes_job;

static int write_bytes(int fd, void *user, errbuf *err) {
    const bytes_job *j = user;
    const uint8_t *p = j->data;
    for (size_t left = j->n; left;) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return err_set(err, TILEOPT_IO, "write failed: %s", strerror(errno));
        p += w;
        left -= (size_t)w;
    }
    return TILEOPT_OK;
}

int graph_write_atomic(const char *path, const void *data, size_t n, graph_temp_fn hook,
                       void *hook_user, errbuf *err) {
    bytes_job j = {data, n};
    return write_atomic(path, write_bytes, &j, hook, hook_user, err);
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
    if (s->written >= PROGRESS_STEP)
        graph_progress_tell(&s->model->progress, "saving", s->total, s->total);
    int rc = s->error ? err_set(err, TILEOPT_IO, "write failed: %s", strerror(s->error))
                      : TILEOPT_OK;
    *pack->written = s->written;
    free(s);
    return rc;
}

/* ------------------------------------------------------- external data */

/*
** Relocation: for one save, the tensors whose bytes go to "<output>.data": external
** tensors when the output leaves the source folder (their files are read, never
** copied whole, so two models' "weights.bin" cannot clobber each other), and big
** inline tensors when the model would pass the inline limit. The in-memory model
** is restored after packing.
*/
typedef struct moved {
    Onnx__TensorProto *t;
    Onnx__TensorProto saved;
    graph_extent src;        /* path NULL: the bytes are t's raw_data */
} moved;

typedef struct relocation {
    graph_model *m;
    moved *list;
    size_t n, cap;
    char *data_path;
    const char *data_name;   /* basename of data_path, the new location */
    bool move_external, move_inline;
    /* set for the walk that refuses a destination holding the model's own data */
    const struct stat *target;
    const char *target_path;
} relocation;

static int reloc_push(relocation *r, Onnx__TensorProto *t, errbuf *err) {
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        moved *p = realloc(r->list, cap * sizeof *p);
        if (!p) return err_set(err, TILEOPT_NOMEM, "out of memory");
        r->list = p;
        r->cap = cap;
    }
    moved *mv = &r->list[r->n];
    memset(mv, 0, sizeof *mv);
    mv->t = t;
    mv->saved = *t;
    if (graph_tensor_is_external(t)) {
        int rc = graph_external_extent(r->m, t, &mv->src, err);
        if (rc) return rc;
    }
    r->n++;
    return TILEOPT_OK;
}

/* A destination that is one of the model's external data files: the rename at
** the end of the save would replace bytes the model still reads. */
static int target_check(relocation *r, Onnx__TensorProto *t, errbuf *err) {
    graph_extent src;
    errbuf later;            /* a tensor whose extent is bad: the save says why */
    if (graph_external_extent(r->m, t, &src, &later)) return TILEOPT_OK;
    struct stat st;
    bool same = src.path && stat(src.path, &st) == 0 && st.st_dev == r->target->st_dev &&
                st.st_ino == r->target->st_ino;
    free(src.path);
    if (same)
        return err_set(err, TILEOPT_MISUSE,
                       "'%s' is the external data of the input model ('%s'): write to another "
                       "file", r->target_path, t->name ? t->name : "");
    return TILEOPT_OK;
}

static int reloc_tensor(relocation *r, Onnx__TensorProto *t, errbuf *err) {
    if (r->target) return graph_tensor_is_external(t) ? target_check(r, t, err) : TILEOPT_OK;
    if (graph_tensor_is_external(t)) return r->move_external ? reloc_push(r, t, err) : TILEOPT_OK;
    if (r->move_inline && t->has_raw_data && t->raw_data.len >= EXTERNAL_MIN_BYTES)
        return reloc_push(r, t, err);
    return TILEOPT_OK;
}

static int reloc_graph(relocation *r, Onnx__GraphProto *g, errbuf *err);

static int reloc_node(relocation *r, Onnx__NodeProto *n, errbuf *err) {
    int rc = TILEOPT_OK;
    for (size_t a = 0; !rc && a < n->n_attribute; a++) {
        Onnx__AttributeProto *at = n->attribute[a];
        if (at->t) rc = reloc_tensor(r, at->t, err);
        for (size_t k = 0; !rc && k < at->n_tensors; k++) rc = reloc_tensor(r, at->tensors[k], err);
        if (!rc && at->g) rc = reloc_graph(r, at->g, err);
        for (size_t k = 0; !rc && k < at->n_graphs; k++) rc = reloc_graph(r, at->graphs[k], err);
    }
    return rc;
}

static int reloc_graph(relocation *r, Onnx__GraphProto *g, errbuf *err) {
    int rc = TILEOPT_OK;
    for (size_t i = 0; !rc && i < g->n_initializer; i++) rc = reloc_tensor(r, g->initializer[i], err);
    for (size_t i = 0; !rc && i < g->n_sparse_initializer; i++) {
        Onnx__SparseTensorProto *sp = g->sparse_initializer[i];
        if (sp->values) rc = reloc_tensor(r, sp->values, err);
        if (!rc && sp->indices) rc = reloc_tensor(r, sp->indices, err);
    }
    for (size_t i = 0; !rc && i < g->n_node; i++) rc = reloc_node(r, g->node[i], err);
    return rc;
}

static int reloc_model(relocation *r, errbuf *err) {
    Onnx__ModelProto *pb = r->m->pb;
    int rc = reloc_graph(r, pb->graph, err);
    for (size_t i = 0; !rc && i < pb->n_training_info; i++) {
        if (pb->training_info[i]->initialization)
            rc = reloc_graph(r, pb->training_info[i]->initialization, err);
        if (!rc && pb->training_info[i]->algorithm)
            rc = reloc_graph(r, pb->training_info[i]->algorithm, err);
    }
    for (size_t i = 0; !rc && i < pb->n_functions; i++)
        for (size_t k = 0; !rc && k < pb->functions[i]->n_node; k++)
            rc = reloc_node(r, pb->functions[i]->node[k], err);
    return rc;
}

static int write_all_fd(int fd, const uint8_t *p, size_t n, const char *path, errbuf *err) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return err_set(err, TILEOPT_IO, "cannot write '%s': %s", path, strerror(errno));
        p += w;
        n -= (size_t)w;
    }
    return TILEOPT_OK;
}

/* Progress of the external data file in bytes, as the model file's "saving". */
typedef struct data_progress {
    graph_model *m;
    uint64_t written, total, next;
} data_progress;

static void data_progress_add(data_progress *p, uint64_t n) {
    p->written += n;
    if (!p->m->progress.fn || p->total < PROGRESS_STEP) return;
    if (p->written >= p->next || p->written == p->total) {
        graph_progress_tell(&p->m->progress, "saving data", p->written, p->total);
        p->next = p->written + PROGRESS_STEP;
    }
}

static int write_data_file(int fd, void *user, errbuf *err) {
    relocation *r = user;
    uint8_t *buf = NULL;
    size_t buf_cap = 0;
    int rc = TILEOPT_OK;
    data_progress prog = {r->m, 0, 0, PROGRESS_STEP};
    for (size_t i = 0; i < r->n; i++)
        prog.total += r->list[i].src.path ? r->list[i].src.length : r->list[i].saved.raw_data.len;
    for (size_t i = 0; !rc && i < r->n; i++) {
        const moved *mv = &r->list[i];
        if (!mv->src.path) {
            const uint8_t *p = mv->saved.raw_data.data;
            for (size_t left = mv->saved.raw_data.len; !rc && left;) {
                size_t n = left < PROGRESS_STEP ? left : PROGRESS_STEP;
                rc = write_all_fd(fd, p, n, r->data_path, err);
                if (!rc) data_progress_add(&prog, n);
                p += n;
                left -= n;
            }
            continue;
        }
        /* External source: stream the extent through a bounded buffer. */
        const size_t chunk = (size_t)16 << 20;
        for (uint64_t done = 0; !rc && done < mv->src.length;) {
            size_t n = mv->src.length - done < chunk ? (size_t)(mv->src.length - done) : chunk;
            if (n > buf_cap) {
                uint8_t *nb = realloc(buf, n);
                if (!nb) {
                    rc = err_set(err, TILEOPT_NOMEM, "out of memory");
                    break;
                }
                buf = nb;
                buf_cap = n;
            }
            graph_extent part = {mv->src.path, mv->src.offset + done, n};
            rc = graph_extent_read(&part, buf, err);
            if (!rc) rc = write_all_fd(fd, buf, n, r->data_path, err);
            if (!rc) data_progress_add(&prog, n);
            done += n;
        }
    }
    free(buf);
    return rc;
}

static Onnx__StringStringEntryProto *entry(arena *a, const char *k, const char *v) {
    Onnx__StringStringEntryProto *e = arena_alloc(a, sizeof *e);
    if (!e) return NULL;
    onnx__string_string_entry_proto__init(e);
    e->key = arena_strdup(a, k);
    e->value = arena_strdup(a, v);
    return e->key && e->value ? e : NULL;
}

/* Point every moved tensor at its extent of the data file. */
static int reloc_apply(relocation *r, errbuf *err) {
    arena *a = r->m->arena;
    uint64_t offset = 0;
    for (size_t i = 0; i < r->n; i++) {
        moved *mv = &r->list[i];
        Onnx__TensorProto *t = mv->t;
        uint64_t len = mv->src.path ? mv->src.length : mv->saved.raw_data.len;
        char off[32], lens[32];
        snprintf(off, sizeof off, "%" PRIu64, offset);
        snprintf(lens, sizeof lens, "%" PRIu64, len);
        Onnx__StringStringEntryProto **ed = arena_alloc(a, 3 * sizeof *ed);
        if (!ed || !(ed[0] = entry(a, "location", r->data_name)) ||
            !(ed[1] = entry(a, "offset", off)) || !(ed[2] = entry(a, "length", lens)))
            return err_set(err, TILEOPT_NOMEM, "out of memory");
        offset += len;
        t->has_raw_data = 0;
        t->raw_data.len = 0;
        t->raw_data.data = NULL;
        t->external_data = ed;
        t->n_external_data = 3;
        t->has_data_location = 1;
        t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    }
    return TILEOPT_OK;
}

static void reloc_restore(relocation *r) {
    for (size_t i = 0; i < r->n; i++) {
        *r->list[i].t = r->list[i].saved;
        free(r->list[i].src.path);
    }
    free(r->list);
    free(r->data_path);
}

static bool same_dir(const char *a, const char *b) {
    char ra[PATH_MAX], rb[PATH_MAX];
    if (!realpath(a, ra) || !realpath(b, rb)) return false;
    return strcmp(ra, rb) == 0;
}

/* Refuse, before anything is written, a destination that is the file the model
** was loaded from or one of its external data files, however spelled (a
** symlink, a hard link): every caller that writes gets the check the CLI makes. */
int graph_model_check_target(graph_model *m, const char *path, errbuf *err) {
    struct stat dst, src;
    if (stat(path, &dst) != 0) return TILEOPT_OK; /* a new file is nobody's */
    if (m->path && stat(m->path, &src) == 0 && src.st_dev == dst.st_dev &&
        src.st_ino == dst.st_ino)
        return err_set(err, TILEOPT_MISUSE, "'%s' is the input model: write to another file",
                       path);
    if (!m->base_dir) return TILEOPT_OK;
    relocation r = {.m = m, .target = &dst, .target_path = path};
    return reloc_model(&r, err);
}

int graph_model_save_path(graph_model *m, const char *path, errbuf *err) {
    int checked = graph_model_check_target(m, path, err);
    if (checked) return checked;
    relocation r = {m, NULL, 0, 0, NULL, NULL, false, false, NULL, NULL};
    char *copy = strdup(path);
    size_t dlen = strlen(path) + 16;
    r.data_path = malloc(dlen);
    if (!copy || !r.data_path) {
        free(copy);
        free(r.data_path);
        return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    /* Each save's data goes to a file of its own, "<path>.<tag>.data", and OUT is
    ** renamed last: until then the old OUT still reads the old data, and a save
    ** that fails part way leaves the old pair as it was. */
    uint64_t x = 0;
    do {
        char tag[9];
        random_tag(tag, &x);
        snprintf(r.data_path, dlen, "%s.%s.data", path, tag);
    } while (access(r.data_path, F_OK) == 0);
    const char *slash = strrchr(r.data_path, '/');
    r.data_name = slash ? slash + 1 : r.data_path;
    r.move_external = m->base_dir && !same_dir(m->base_dir, dirname(copy));
    free(copy);
    uint64_t limit = m->limits.max_inline_bytes;
    uint64_t total = graph_model_packed_size(m);
    r.move_inline = total > limit;
    int rc = r.move_external || r.move_inline ? reloc_model(&r, err) : TILEOPT_OK;
    bool wrote_data = false;
    if (!rc && r.n) {
        rc = reloc_apply(&r, err);
        if (!rc)
            rc = write_atomic(r.data_path, write_data_file, &r, m->temp_hook, m->temp_user, err);
        wrote_data = !rc;
        total = graph_model_packed_size(m);
        if (!rc && total > limit)
            rc = err_set(err, TILEOPT_LIMIT,
                         "the model stays over %" PRIu64 " bytes with its initializers as external data",
                         limit);
    }
    uint64_t written = 0;
    pack_job job = {m, total, &written};
    if (!rc) rc = write_atomic(path, pack_to_fd, &job, m->temp_hook, m->temp_user, err);
    if (!rc) m->saved_bytes = written;
    if (rc && wrote_data) unlink(r.data_path); /* no OUT refers to it */
    reloc_restore(&r);
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

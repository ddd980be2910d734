/*
** Saving. The model is packed straight into its file (no second copy of big
** tensors in memory). External data is kept by reference when OUT sits in the
** model's folder; otherwise its bytes, and those of big initializers when the
** model passes the inline limit (2 GB), go to one data file beside OUT, named
** OUT's name plus ".data" (or the model's data_name).
**
** OUT and its data change together. Every file is written with no name
** (O_TMPFILE) and named only when complete, so a kill while writing leaves
** nothing. Then, holding a lock on the folder:
**   1. the new data is linked in under a staging name S that OUT does not read;
**   2. when the old OUT reads files tileopt wrote for it (its record, see
**      graph/files.h) that must go, OUT is replaced by a model reading S whose
**      record lists them for removal, and they are removed;
**   3. S gets its final name A (a second link to the same file);
**   4. OUT is replaced by the final model, reading A; S is unlinked.
** Until OUT is replaced the old OUT reads its old data; after, the new OUT its
** new data. A kill between two of these steps can leave a staging name, a
** second link to the new data, or a file marked for removal; the next save to
** OUT finds each by its name and removes it first. A data file tileopt did not
** write for OUT is never removed or overwritten: A existing without OUT's
** record naming it is an error.
*/
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/files.h"
#include "graph/graph.h"

/* Saves report progress about every this many bytes. */
#define PROGRESS_STEP ((uint64_t)64 << 20)
/* Tensors smaller than this stay inline even when a model goes external. */
#define EXTERNAL_MIN_BYTES 1024
/* Tensors this big start at a multiple of DATA_ALIGN in the data file: pages
** for runtimes that map it, blocks for file systems that share extents. */
#define ALIGN_MIN_BYTES ((uint64_t)1 << 20)
#define DATA_ALIGN 4096

typedef struct file_sink {
    ProtobufCBuffer base;
    int fd;
    int error;               /* errno of the first failed write */
    uint64_t written, total, next_report;
    const graph_model *model;
    bool quiet;              /* no progress */
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
        if (!s->quiet && s->model->progress.fn && s->written >= s->next_report) {
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

static int pack_to_fd(const graph_model *m, int fd, bool quiet, uint64_t *written,
                      errbuf *err) {
    file_sink *s = malloc(sizeof *s);
    if (!s) return err_set(err, TILEOPT_NOMEM, "out of memory");
    s->base.append = sink_append;
    s->fd = fd;
    s->error = 0;
    s->written = 0;
    s->used = 0;
    s->model = m;
    s->quiet = quiet;
    s->total = graph_model_packed_size(m);
    s->next_report = PROGRESS_STEP;
    protobuf_c_message_pack_to_buffer(&m->pb->base, &s->base);
    sink_flush(s);
    if (!quiet && m->progress.fn && s->written >= PROGRESS_STEP)
        graph_progress_tell(&m->progress, "saving", s->total, s->total);
    int rc = s->error ? err_set(err, TILEOPT_IO, "write failed: %s", strerror(s->error))
                      : TILEOPT_OK;
    *written = s->written;
    free(s);
    return rc;
}

/* ---------------------------------------------------------------- folders */

/* path split into its folder (malloc'd) and last component (inside path). */
static char *split_path(const char *path, const char **base) {
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

static int open_dir(const char *path, const char *dir, int *dirfd, errbuf *err) {
    *dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (*dirfd >= 0) return TILEOPT_OK;
    if (errno == ENOENT || errno == ENOTDIR)
        return err_set(err, TILEOPT_IO, "cannot write '%s': folder '%s' does not exist", path,
                       dir);
    return err_set(err, TILEOPT_IO, "cannot write '%s': %s", path, strerror(errno));
}

static void sync_dir(int dirfd) { fsync(dirfd); }

static bool stat_id(int dirfd, const char *name, graph_file_id *id) {
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
    *id = (graph_file_id){(uint64_t)st.st_dev, (uint64_t)st.st_ino};
    return true;
}

static bool same_id(graph_file_id a, graph_file_id b) { return a.dev == b.dev && a.ino == b.ino; }

/* ------------------------------------------------------ single files */

typedef int (*write_fn)(int fd, void *user, errbuf *err);

/* Write one file at path through an unnamed file, fsync, and rename it in. */
static int write_atomic(const char *path, write_fn fn, void *user, graph_temp_fn hook,
                        void *hook_user, errbuf *err) {
    const char *base;
    char *dir = split_path(path, &base);
    if (!dir) return err_set(err, TILEOPT_NOMEM, "out of memory");
    int dirfd;
    int rc = open_dir(path, dir, &dirfd, err);
    out_file f = OUT_FILE_NONE;
    if (!rc) rc = out_file_open(&f, dirfd, dir, base, hook, hook_user, err);
    if (!rc) rc = fn(f.fd, user, err);
    if (!rc) rc = out_file_sync(&f, base, err);
    if (!rc) {
        char stage[32];
        out_file_random_name(stage);
        rc = out_file_replace(&f, dirfd, base, stage, err);
    }
    if (!rc) sync_dir(dirfd);
    out_file_discard(&f, dirfd);
    if (dirfd >= 0) close(dirfd);
    if (rc) err_prefix(err, "%s: ", path);
    free(dir);
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

/* ------------------------------------------------------- external data */

/*
** Relocation: for one save, the tensors whose bytes go to the new data file:
** external tensors when OUT leaves the model's folder (their files are read,
** never copied whole, so two models' "weights.bin" cannot clobber each other)
** or when they live in a file tileopt wrote for the model itself (which a
** later save of that model removes), and big inline tensors when the model
** would pass the inline limit. The model in memory is restored on failure.
*/
typedef struct moved {
    Onnx__TensorProto *t;
    Onnx__TensorProto saved;
    graph_extent src;        /* path NULL: the bytes are t's raw_data */
    uint64_t offset;         /* in the new data file */
    bool shared;             /* the bytes of list[leader], an earlier entry */
    size_t leader;
    Onnx__StringStringEntryProto *location;
} moved;

typedef struct relocation {
    graph_model *m;
    moved *list;
    size_t n, cap;
    uint64_t bytes;          /* of the data file */
    bool move_external, move_inline;
} relocation;

static bool owned_location(const graph_model *m, const Onnx__TensorProto *t) {
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        if (!e->key || strcmp(e->key, "location") != 0 || !e->value) continue;
        for (size_t k = 0; k < m->n_own_data; k++)
            if (strcmp(m->own_data[k], e->value) == 0) return true;
    }
    return false;
}

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

static int reloc_tensor(relocation *r, Onnx__TensorProto *t, errbuf *err) {
    if (graph_tensor_is_external(t))
        return r->move_external || owned_location(r->m, t) ? reloc_push(r, t, err) : TILEOPT_OK;
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

static uint64_t moved_length(const moved *mv) {
    return mv->src.path ? mv->src.length : mv->saved.raw_data.len;
}

static const relocation *sort_reloc; /* qsort has no user argument */
static int by_source(const void *a, const void *b) {
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const graph_extent *x = &sort_reloc->list[i].src, *y = &sort_reloc->list[j].src;
    if (x->id.dev != y->id.dev) return x->id.dev < y->id.dev ? -1 : 1;
    if (x->id.ino != y->id.ino) return x->id.ino < y->id.ino ? -1 : 1;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->length != y->length) return x->length < y->length ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* Where each tensor goes in the data file: in model order, big ones aligned;
** tensors reading the same bytes of the same file (tied weights) share the
** copy of the first of them. */
static int reloc_layout(relocation *r, errbuf *err) {
    size_t *order = malloc((r->n ? r->n : 1) * sizeof *order);
    if (!order) return err_set(err, TILEOPT_NOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->list[i].src.path) order[k++] = i;
    sort_reloc = r;
    qsort(order, k, sizeof *order, by_source);
    for (size_t i = 1; i < k; i++) {
        moved *b = &r->list[order[i]];
        const moved *a = &r->list[order[i - 1]];
        if (same_id(a->src.id, b->src.id) && a->src.offset == b->src.offset &&
            a->src.length == b->src.length) {
            b->shared = true;
            b->leader = a->shared ? a->leader : order[i - 1];
        }
    }
    free(order);
    uint64_t at = 0;
    for (size_t i = 0; i < r->n; i++) {
        moved *mv = &r->list[i];
        if (mv->shared) { /* its leader comes earlier in the list */
            mv->offset = r->list[mv->leader].offset;
            continue;
        }
        uint64_t len = moved_length(mv);
        if (len >= ALIGN_MIN_BYTES) at = (at + DATA_ALIGN - 1) / DATA_ALIGN * DATA_ALIGN;
        mv->offset = at;
        at += len;
    }
    r->bytes = at;
    return TILEOPT_OK;
}

/* Progress of the external data file in bytes, as the model file's "saving". */
typedef struct data_progress {
    graph_model *m;
    uint64_t written, total, next;
} data_progress;

static void data_progress_add(void *user, uint64_t n) {
    data_progress *p = user;
    p->written += n;
    if (!p->m->progress.fn || p->total < PROGRESS_STEP) return;
    if (p->written >= p->next || p->written == p->total) {
        graph_progress_tell(&p->m->progress, "saving data", p->written, p->total);
        p->next = p->written + PROGRESS_STEP;
    }
}

static int write_fd(int fd, const uint8_t *p, uint64_t n, errbuf *err) {
    while (n) {
        ssize_t w = write(fd, p, n < PROGRESS_STEP ? (size_t)n : (size_t)PROGRESS_STEP);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0)
            return err_set(err, TILEOPT_IO, "cannot write the external data: %s",
                           strerror(errno));
        p += w;
        n -= (uint64_t)w;
    }
    return TILEOPT_OK;
}

/* The data file's bytes, in layout order: inline tensors written, external
** ones copied by extent (copy_file_range), zeros up to each aligned start. */
static int write_data_file(relocation *r, int fd, errbuf *err) {
    const size_t cap = (size_t)16 << 20;
    uint8_t *buf = NULL;
    int src_fd = -1;
    const char *src_path = NULL;
    int rc = TILEOPT_OK;
    data_progress prog = {r->m, 0, r->bytes, PROGRESS_STEP};
    uint64_t at = 0;
    for (size_t i = 0; !rc && i < r->n; i++) {
        const moved *mv = &r->list[i];
        if (mv->shared) continue;
        static const uint8_t zeros[DATA_ALIGN];
        if (mv->offset > at) rc = write_fd(fd, zeros, mv->offset - at, err);
        at = mv->offset + moved_length(mv);
        if (rc) break;
        if (!mv->src.path) {
            const uint8_t *p = mv->saved.raw_data.data;
            for (uint64_t left = mv->saved.raw_data.len; !rc && left;) {
                uint64_t n = left < PROGRESS_STEP ? left : PROGRESS_STEP;
                rc = write_fd(fd, p, n, err);
                if (!rc) data_progress_add(&prog, n);
                p += n;
                left -= n;
            }
            continue;
        }
        if (!src_path || strcmp(src_path, mv->src.path) != 0) {
            if (src_fd >= 0) close(src_fd);
            /* the path was resolved at load: a symlink planted there since is refused */
            src_fd = open(mv->src.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
            src_path = mv->src.path;
            if (src_fd < 0) {
                rc = err_set(err, TILEOPT_IO, "cannot open external data '%s': %s", src_path,
                             strerror(errno));
                break;
            }
        }
        if (!buf && !(buf = malloc(cap))) {
            rc = err_set(err, TILEOPT_NOMEM, "out of memory");
            break;
        }
        rc = graph_copy_range(fd, src_fd, src_path, mv->src.offset, mv->src.length, buf, cap,
                              data_progress_add, &prog, err);
    }
    if (src_fd >= 0) close(src_fd);
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

/* Point every moved tensor at its extent of the data file, named `name`
** (reloc_rename changes the name of every one at once). */
static int reloc_apply(relocation *r, const char *name, errbuf *err) {
    arena *a = r->m->arena;
    for (size_t i = 0; i < r->n; i++) {
        moved *mv = &r->list[i];
        Onnx__TensorProto *t = mv->t;
        char off[32], lens[32];
        snprintf(off, sizeof off, "%" PRIu64, mv->offset);
        snprintf(lens, sizeof lens, "%" PRIu64, moved_length(mv));
        Onnx__StringStringEntryProto **ed = arena_alloc(a, 3 * sizeof *ed);
        if (!ed || !(ed[0] = entry(a, "location", name)) ||
            !(ed[1] = entry(a, "offset", off)) || !(ed[2] = entry(a, "length", lens)))
            return err_set(err, TILEOPT_NOMEM, "out of memory");
        mv->location = ed[0];
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

static void reloc_rename(relocation *r, char *name) {
    for (size_t i = 0; i < r->n; i++) r->list[i].location->value = name;
}

static void reloc_restore(relocation *r) {
    for (size_t i = 0; i < r->n; i++) *r->list[i].t = r->list[i].saved;
}

static void reloc_free(relocation *r) {
    for (size_t i = 0; i < r->n; i++) free(r->list[i].src.path);
    free(r->list);
}

/* ------------------------------------------------------------ the save */

/* One save to a path: its names, what it writes, the plan it commits. */
typedef struct save_job {
    graph_model *m;
    const char *path, *base;
    char *dir;
    int dirfd;
    relocation r;
    char *data_name;         /* A, in the model's arena */
    char *stage_names[2];    /* S: two, so a new one never is the one OUT reads */
    char model_stage[40];    /* the name OUT's replacement is linked under */
    bool write_data;
    bool resave;             /* OUT is the file the model came from */
    graph_file_id *owned_ids;
    size_t n_owned_ids;
    Onnx__StringStringEntryProto **meta_saved;
    size_t n_meta_saved;
} save_job;

/* What a commit does, decided from OUT's record under the folder's lock. */
typedef struct plan {
    int stage;               /* the staging name of the new data */
    name_list remove;        /* files to remove once OUT no longer reads them */
} plan;

static uint64_t name_hash64(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

static int by_id(const void *a, const void *b) {
    const graph_file_id *x = a, *y = b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static bool reads_file(const graph_model *m, graph_file_id id) {
    return m->n_read_files &&
           bsearch(&id, m->read_files, m->n_read_files, sizeof id, by_id) != NULL;
}

/* A file the model reads, which a save keeps, unless it is one tileopt wrote
** for the model's own file and the save goes back to that file. */
static bool protected_id(const save_job *j, graph_file_id id) {
    if (!reads_file(j->m, id)) return false;
    for (size_t i = 0; j->resave && i < j->n_owned_ids; i++)
        if (same_id(j->owned_ids[i], id)) return false;
    return true;
}

static bool record_valid(const save_job *j, const data_record *rec, uint64_t nlink) {
    /* a second link to OUT is another model reading the same files */
    return rec->data_for && strcmp(rec->data_for, j->base) == 0 && nlink == 1;
}

/* Files that earlier saves to OUT left behind when killed between steps: a
** staging name OUT does not read (and A when it is a second link to it), the
** files OUT's record marks for removal, a linked replacement of OUT. */
static void recover(const save_job *j, const data_record *rec, uint64_t nlink) {
    graph_file_id a, s;
    if (record_valid(j, rec, nlink))
        for (size_t i = 0; i < rec->remove.n; i++) {
            const char *p = rec->remove.v[i];
            if (!name_list_has(&rec->files, p) && stat_id(j->dirfd, p, &a) &&
                !protected_id(j, a))
                unlinkat(j->dirfd, p, 0);
        }
    for (int k = 0; k < 2; k++) {
        if (!stat_id(j->dirfd, j->stage_names[k], &s)) continue;
        /* A as a second link of a staging name is this protocol's own */
        if (!name_list_has(&rec->files, j->data_name) && stat_id(j->dirfd, j->data_name, &a) &&
            same_id(a, s))
            unlinkat(j->dirfd, j->data_name, 0);
        if (!name_list_has(&rec->files, j->stage_names[k])) unlinkat(j->dirfd, j->stage_names[k], 0);
    }
    unlinkat(j->dirfd, j->model_stage, 0);
}

static int plan_make(const save_job *j, const data_record *rec, uint64_t nlink, plan *p,
                     errbuf *err) {
    *p = (plan){0};
    bool valid = record_valid(j, rec, nlink);
    p->stage = name_list_has(&rec->files, j->stage_names[0]) ? 1 : 0;
    const char *a = j->data_name;
    graph_file_id id;
    if (j->write_data && stat_id(j->dirfd, a, &id)) {
        if (!valid && nlink > 1 && name_list_has(&rec->files, a))
            return err_set(err, TILEOPT_IO,
                           "'%s/%s' is read by '%s', which has %" PRIu64 " links: a model of "
                           "another name reads it too; remove that link, or name another data "
                           "file (--data-name)", j->dir, a, j->base, nlink);
        if (!valid || !name_list_has(&rec->files, a))
            return err_set(err, TILEOPT_IO,
                           "'%s/%s' exists and no earlier save of '%s' wrote it: remove it, or "
                           "name another data file (--data-name)", j->dir, a, j->base);
        if (protected_id(j, id))
            return err_set(err, TILEOPT_IO,
                           "'%s/%s' is external data the model reads: name another data file "
                           "(--data-name)", j->dir, a);
    }
    for (int l = 0; valid && l < 2; l++) {
        const name_list *from = l ? &rec->remove : &rec->files;
        for (size_t i = 0; i < from->n; i++) {
            const char *f = from->v[i];
            if (strcmp(f, j->stage_names[p->stage]) == 0 || name_list_has(&p->remove, f) ||
                !stat_id(j->dirfd, f, &id) || protected_id(j, id))
                continue;
            if (!name_list_add(&p->remove, f, strlen(f))) {
                name_list_free(&p->remove);
                return err_set(err, TILEOPT_NOMEM, "out of memory");
            }
        }
    }
    return TILEOPT_OK;
}

static bool plan_same(const plan *a, const plan *b) {
    if (a->stage != b->stage || a->remove.n != b->remove.n) return false;
    for (size_t i = 0; i < a->remove.n; i++)
        if (strcmp(a->remove.v[i], b->remove.v[i]) != 0) return false;
    return true;
}

/* Under the folder's lock: OUT's record read, what killed saves left removed,
** and the plan made. */
static int plan_locked(save_job *j, plan *p, errbuf *err) {
    int lock = dir_lock(j->dirfd);
    data_record rec;
    uint64_t nlink;
    int rc = data_record_read(j->dirfd, j->base, &rec, &nlink, err);
    if (!rc) {
        recover(j, &rec, nlink);
        rc = plan_make(j, &rec, nlink, p, err);
    }
    data_record_free(&rec);
    dir_unlock(lock);
    return rc;
}

/* metadata_props with tileopt's record set to `files` and `remove` ('/'-joined;
** NULL leaves the key out): a record the model brought along described its
** own file. */
static int meta_set(save_job *j, const char *files, const char *remove, errbuf *err) {
    Onnx__ModelProto *pb = j->m->pb;
    arena *a = j->m->arena;
    size_t n = 0;
    Onnx__StringStringEntryProto **v =
        arena_alloc(a, (j->n_meta_saved + 3) * sizeof *v);
    if (!v) return err_set(err, TILEOPT_NOMEM, "out of memory");
    for (size_t i = 0; i < j->n_meta_saved; i++) {
        const char *k = j->meta_saved[i]->key;
        if (k && (!strcmp(k, DATA_KEY_FOR) || !strcmp(k, DATA_KEY_FILES) ||
                  !strcmp(k, DATA_KEY_REMOVE)))
            continue;
        v[n++] = j->meta_saved[i];
    }
    if (files || remove) {
        if (!(v[n++] = entry(a, DATA_KEY_FOR, j->base)))
            return err_set(err, TILEOPT_NOMEM, "out of memory");
        if (files && !(v[n++] = entry(a, DATA_KEY_FILES, files)))
            return err_set(err, TILEOPT_NOMEM, "out of memory");
        if (remove && !(v[n++] = entry(a, DATA_KEY_REMOVE, remove)))
            return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    pb->metadata_props = v;
    pb->n_metadata_props = n;
    return TILEOPT_OK;
}

/* The names of l joined by '/', in the model's arena (NULL when empty). */
static char *joined(arena *a, const name_list *l, bool *nomem) {
    if (!l->n) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++) n += strlen(l->v[i]) + 1;
    char *s = arena_alloc(a, n);
    if (!s) {
        *nomem = true;
        return NULL;
    }
    s[0] = '\0';
    for (size_t i = 0; i < l->n; i++) {
        if (i) strcat(s, "/");
        strcat(s, l->v[i]);
    }
    return s;
}

/* Pack the model as it stands into a new unnamed file in OUT's folder. */
static int pack_file(save_job *j, out_file *f, bool quiet, uint64_t *written, errbuf *err) {
    int rc = out_file_open(f, j->dirfd, j->dir, j->base, j->m->temp_hook, j->m->temp_user, err);
    if (!rc) rc = pack_to_fd(j->m, f->fd, quiet, written, err);
    if (!rc) rc = out_file_sync(f, j->base, err);
    if (rc) err_prefix(err, "%s: ", j->path);
    return rc;
}

/* The data name A: one component, not OUT itself, that fits the file system. */
static int data_name_check(save_job *j, errbuf *err) {
    const char *a = j->data_name;
    if (!a[0] || strchr(a, '/') || !strcmp(a, ".") || !strcmp(a, "..") ||
        !strcmp(a, j->base) || strlen(a) > NAME_MAX)
        return err_set(err, TILEOPT_MISUSE,
                       "the external data file '%s' of '%s' must be a file name of at most "
                       "%d bytes beside it, not OUT itself (--data-name)", a, j->path, NAME_MAX);
    return TILEOPT_OK;
}

/* Names of this save: A, the two staging names (A's and ".tileopt-0" or "-1",
** or from A's hash when that is too long: the same for every save to OUT), the
** replacement's link name. */
static int job_names(save_job *j, errbuf *err) {
    arena *a = j->m->arena;
    size_t n = strlen(j->base) + 6;
    if (j->m->data_name) {
        j->data_name = arena_strdup(a, j->m->data_name);
    } else if ((j->data_name = arena_alloc(a, n))) {
        snprintf(j->data_name, n, "%s.data", j->base);
    }
    if (!j->data_name) return err_set(err, TILEOPT_NOMEM, "out of memory");
    int rc = data_name_check(j, err);
    if (rc) return rc;
    /* no leading '.': OUT reads S for a moment, and onnx's loader strips one */
    unsigned long long h = (unsigned long long)name_hash64(j->data_name);
    bool fits = strlen(j->data_name) + 10 <= NAME_MAX;
    for (int k = 0; k < 2; k++) {
        char s[NAME_MAX + 1];
        if (fits) snprintf(s, sizeof s, "%s.tileopt-%d", j->data_name, k);
        else snprintf(s, sizeof s, "tileopt-%016llx.%d.data", h, k);
        if (!(j->stage_names[k] = arena_strdup(a, s)))
            return err_set(err, TILEOPT_NOMEM, "out of memory");
    }
    snprintf(j->model_stage, sizeof j->model_stage, ".tileopt-%016llx.onnx",
             (unsigned long long)name_hash64(j->base));
    return TILEOPT_OK;
}

/* Why a save may not write over the file id (path names it), or OK. A file the
** model reads may still be replaced by a save back to the model's own file
** when tileopt wrote it for that file (protect says which apply). */
static int refuse_target(const graph_model *m, graph_file_id id, bool protect,
                         const char *path, errbuf *err) {
    if (m->has_source_id && same_id(id, m->source_id))
        return err_set(err, TILEOPT_MISUSE, "'%s' is the input model: write to another file",
                       path);
    if (protect)
        return err_set(err, TILEOPT_MISUSE,
                       "'%s' is external data the model reads: write to another file", path);
    return TILEOPT_OK;
}

int graph_model_check_target(graph_model *m, const char *path, errbuf *err) {
    struct stat st;
    if (stat(path, &st) != 0) return TILEOPT_OK; /* a new file is nobody's */
    graph_file_id id = {(uint64_t)st.st_dev, (uint64_t)st.st_ino};
    return refuse_target(m, id, reads_file(m, id), path, err);
}

/* Refusals before any work: OUT is the file the model was loaded from, or one
** of the files it reads. */
static int job_check_out(save_job *j, errbuf *err) {
    graph_file_id id;
    if (!stat_id(j->dirfd, j->base, &id)) return TILEOPT_OK;
    return refuse_target(j->m, id, protected_id(j, id), j->path, err);
}

/* Is OUT the file the model came from? Then the files its record names are
** the model's own to replace. */
static int job_resave(save_job *j, errbuf *err) {
    graph_file_id out, from;
    struct stat st;
    if (!j->m->path || !stat_id(j->dirfd, j->base, &out) || stat(j->m->path, &st) != 0)
        return TILEOPT_OK;
    from = (graph_file_id){(uint64_t)st.st_dev, (uint64_t)st.st_ino};
    j->resave = same_id(out, from);
    if (!j->resave || !j->m->n_own_data) return TILEOPT_OK;
    j->owned_ids = malloc(j->m->n_own_data * sizeof *j->owned_ids);
    if (!j->owned_ids) return err_set(err, TILEOPT_NOMEM, "out of memory");
    for (size_t i = 0; i < j->m->n_own_data; i++)
        if (stat_id(j->dirfd, j->m->own_data[i], &j->owned_ids[j->n_owned_ids]))
            j->n_owned_ids++;
    return TILEOPT_OK;
}

/*
** The steps under the folder's lock (see the top of the file). Each failure
** before OUT is replaced undoes what it named; the first replacement of a
** two-step commit is the point of no return.
*/
static int commit(save_job *j, const plan *p, out_file *data, out_file *first,
                  out_file *final, errbuf *err) {
    const char *s = j->stage_names[p->stage], *a = j->data_name;
    int rc = TILEOPT_OK;
    bool s_named = false, a_named = false, first_in = false;
    if (data->fd >= 0) {
        rc = out_file_link(data, j->dirfd, s, err);
        s_named = !rc;
    }
    if (!rc && first->fd >= 0) {
        rc = out_file_replace(first, j->dirfd, j->base, j->model_stage, err);
        first_in = !rc;
        if (first_in) {
            sync_dir(j->dirfd);
            for (size_t i = 0; i < p->remove.n; i++) unlinkat(j->dirfd, p->remove.v[i], 0);
        }
    }
    if (!rc && s_named) {
        if (linkat(j->dirfd, s, j->dirfd, a, 0) == 0) {
            a_named = true;
        } else if ((errno == EPERM || errno == EOPNOTSUPP || errno == EMLINK) &&
                   renameat(j->dirfd, s, j->dirfd, a) == 0) {
            /* no hard links here: OUT reads a missing S until the rename below */
            s_named = false;
            a_named = true;
        } else {
            rc = err_set(err, TILEOPT_IO, "cannot name '%s/%s': %s", j->dir, a, strerror(errno));
        }
    }
    if (!rc) rc = out_file_replace(final, j->dirfd, j->base, j->model_stage, err);
    if (!rc) {
        if (s_named) unlinkat(j->dirfd, s, 0);
        sync_dir(j->dirfd);
        return TILEOPT_OK;
    }
    if (first_in) {
        err_prefix(err, "'%s' holds the new model, reading its data from '%s' (the next save "
                        "to it names the file '%s'): ", j->path, s, a);
        return rc;
    }
    if (a_named) unlinkat(j->dirfd, a, 0);
    if (s_named) unlinkat(j->dirfd, s, 0);
    return rc;
}

/* After success the model in memory is OUT: it reads OUT's data, its record
** is OUT's, and the data file is its own. Allocated before the commit, so that
** nothing can fail once OUT is in place. */
typedef struct adoption {
    char *path, *dir, *data_name;
    char **own;
} adoption;

static int adopt_prepare(save_job *j, adoption *ad, errbuf *err) {
    graph_model *m = j->m;
    ad->path = strdup(j->path);
    ad->dir = strdup(j->dir);
    if (j->write_data) {
        ad->own = malloc(sizeof *ad->own);
        ad->data_name = strdup(j->data_name);
    }
    graph_file_id *ids = realloc(m->read_files, (m->n_read_files + 1) * sizeof *ids);
    if (ids) m->read_files = ids;
    if (ad->path && ad->dir && ids && (!j->write_data || (ad->own && ad->data_name)))
        return TILEOPT_OK;
    free(ad->path);
    free(ad->dir);
    free(ad->own);
    free(ad->data_name);
    *ad = (adoption){0};
    return err_set(err, TILEOPT_NOMEM, "out of memory");
}

static void adopt(save_job *j, adoption *ad) {
    graph_model *m = j->m;
    free(m->path);
    free(m->base_dir);
    m->path = ad->path;
    m->base_dir = ad->dir;
    for (size_t i = 0; i < m->n_own_data; i++) free(m->own_data[i]);
    free(m->own_data);
    m->own_data = ad->own;
    m->n_own_data = 0;
    if (ad->own) ad->own[m->n_own_data++] = ad->data_name;
    graph_file_id id;
    if (j->write_data && stat_id(j->dirfd, j->data_name, &id)) {
        m->read_files[m->n_read_files++] = id;
        qsort(m->read_files, m->n_read_files, sizeof *m->read_files, by_id);
    }
    *ad = (adoption){0};
}

static void adoption_free(adoption *ad) {
    free(ad->path);
    free(ad->dir);
    free(ad->own);
    free(ad->data_name);
}

int graph_model_save_path(graph_model *m, const char *path, errbuf *err) {
    save_job j = {.m = m, .path = path, .dirfd = -1};
    j.r.m = m;
    j.meta_saved = m->pb->metadata_props;
    j.n_meta_saved = m->pb->n_metadata_props;
    out_file data = OUT_FILE_NONE, first = OUT_FILE_NONE, final = OUT_FILE_NONE;
    plan p0 = {0}, p1 = {0};
    int rc = (j.dir = split_path(path, &j.base)) ? TILEOPT_OK
                                                 : err_set(err, TILEOPT_NOMEM, "out of memory");
    if (!rc) rc = open_dir(path, j.dir, &j.dirfd, err);
    if (!rc) rc = job_names(&j, err);
    if (!rc) rc = job_resave(&j, err);
    if (!rc) rc = job_check_out(&j, err);
    if (!rc) {
        char real[PATH_MAX], base_real[PATH_MAX];
        j.r.move_external = m->base_dir && !(realpath(m->base_dir, base_real) &&
                                             realpath(j.dir, real) && !strcmp(real, base_real));
        j.r.move_inline = graph_model_packed_size(m) > m->limits.max_inline_bytes;
        rc = reloc_model(&j.r, err);
    }
    j.write_data = !rc && j.r.n;
    if (!rc) rc = reloc_layout(&j.r, err);
    if (!rc) rc = plan_locked(&j, &p0, err);
    if (!rc && j.write_data) {
        rc = out_file_open(&data, j.dirfd, j.dir, j.data_name, m->temp_hook, m->temp_user, err);
        if (!rc) rc = write_data_file(&j.r, data.fd, err);
        if (!rc) rc = out_file_sync(&data, j.data_name, err);
        if (rc) err_prefix(err, "%s/%s: ", j.dir, j.data_name);
    }
    if (!rc && j.write_data) rc = reloc_apply(&j.r, j.data_name, err);
    if (!rc && j.write_data && graph_model_packed_size(m) > m->limits.max_inline_bytes)
        rc = err_set(err, TILEOPT_LIMIT,
                     "the model stays over %" PRIu64 " bytes with its initializers as external data",
                     m->limits.max_inline_bytes);
    bool nomem = false;
    if (!rc && p0.remove.n) { /* the first replacement: reads S, marks the old files */
        reloc_rename(&j.r, j.stage_names[p0.stage]);
        rc = meta_set(&j, j.write_data ? j.stage_names[p0.stage] : NULL,
                      joined(m->arena, &p0.remove, &nomem), err);
        if (!rc && nomem) rc = err_set(err, TILEOPT_NOMEM, "out of memory");
        uint64_t ignored;
        if (!rc) rc = pack_file(&j, &first, true, &ignored, err);
        reloc_rename(&j.r, j.data_name);
    }
    uint64_t written = 0;
    if (!rc) rc = meta_set(&j, j.write_data ? j.data_name : NULL, NULL, err);
    if (!rc) rc = pack_file(&j, &final, false, &written, err);
    adoption ad = {0};
    if (!rc) rc = adopt_prepare(&j, &ad, err);
    if (!rc) {
        int lock = dir_lock(j.dirfd);
        data_record rec;
        uint64_t nlink;
        rc = data_record_read(j.dirfd, j.base, &rec, &nlink, err);
        if (!rc) {
            recover(&j, &rec, nlink);
            rc = plan_make(&j, &rec, nlink, &p1, err);
        }
        if (!rc && !plan_same(&p0, &p1))
            rc = err_set(err, TILEOPT_IO, "'%s' changed while it was being saved (another save "
                         "to it?): nothing was written", path);
        if (!rc) rc = commit(&j, &p0, &data, &first, &final, err);
        data_record_free(&rec);
        dir_unlock(lock);
    }
    if (!rc) {
        adopt(&j, &ad);
        m->saved_bytes = written;
    } else {
        reloc_restore(&j.r);
        m->pb->metadata_props = j.meta_saved;
        m->pb->n_metadata_props = j.n_meta_saved;
    }
    int dirfd = j.dirfd >= 0 ? j.dirfd : AT_FDCWD;
    out_file_discard(&data, dirfd);
    out_file_discard(&first, dirfd);
    out_file_discard(&final, dirfd);
    adoption_free(&ad);
    reloc_free(&j.r);
    name_list_free(&p0.remove);
    name_list_free(&p1.remove);
    free(j.owned_ids);
    if (j.dirfd >= 0) close(j.dirfd);
    free(j.dir);
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

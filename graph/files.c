/*
** The file-system side of saving (graph/files.h): unnamed files linked in when
** complete, in-kernel copies, the folder lock, and the record of the data files
** tileopt wrote for a model.
*/
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "graph/files.h"

/* ------------------------------------------------------------ out files */

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

/* A named temporary .tileopt-XXXXXXXX: short, so a target whose own name is
** near NAME_MAX still has room, and hidden. The hook hears each name before the
** file is created: a signal between the two then finds no file to remove, which
** is harmless, where told after the open it would leave a file the handler
** never heard of. */
static int open_named(out_file *f, int dirfd, const char *dir) {
    size_t n = strlen(dir) + 32;
    f->tmp = malloc(n);
    if (!f->tmp) {
        errno = ENOMEM;
        return -1;
    }
    uint64_t x = 0;
    for (int attempt = 0; attempt < 100; attempt++) {
        char tag[9];
        random_tag(tag, &x);
        snprintf(f->tmp, n, "%s/.tileopt-%s", dir, tag);
        f->tmp_name = strrchr(f->tmp, '/') + 1;
        if (f->hook) f->hook(f->hook_user, f->tmp);
        /* created with mode 0666 and the umask applied by the kernel: reading
        ** the umask would mean setting it, process-wide state threads race on */
        f->fd = openat(dirfd, f->tmp_name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (f->fd >= 0) return 0;
        if (errno != EEXIST) break;
    }
    int e = errno;
    if (f->hook) f->hook(f->hook_user, NULL);
    free(f->tmp);
    f->tmp = NULL;
    errno = e;
    return -1;
}

void out_file_random_name(char name[32]) {
    uint64_t x = 0;
    char tag[9];
    random_tag(tag, &x);
    snprintf(name, 32, ".tileopt-%s", tag);
}

int out_file_open(out_file *f, int dirfd, const char *dir, const char *what,
                  graph_temp_fn hook, void *hook_user, errbuf *err) {
    *f = (out_file)OUT_FILE_NONE;
    f->hook = hook;
    f->hook_user = hook_user;
    /* no name until it is whole: a SIGKILL or the OOM killer leaves nothing */
    f->fd = openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    if (f->fd >= 0 || open_named(f, dirfd, dir) == 0) return TILEOPT_OK;
    return err_set(err, TILEOPT_IO, "cannot write %s in '%s': %s", what, dir, strerror(errno));
}

int out_file_sync(out_file *f, const char *what, errbuf *err) {
    if (fsync(f->fd) == 0) return TILEOPT_OK;
    return err_set(err, TILEOPT_IO, "cannot write %s: %s", what, strerror(errno));
}

/* Link the unnamed file: AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH, the /proc
** path does not. */
static int link_unnamed(int fd, int dirfd, const char *name) {
    if (linkat(fd, "", dirfd, name, AT_EMPTY_PATH) == 0) return 0;
    if (errno == EEXIST) return -1;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW);
}

static void named_done(out_file *f) {
    if (f->hook) f->hook(f->hook_user, NULL);
    free(f->tmp);
    f->tmp = NULL;
}

int out_file_link(out_file *f, int dirfd, const char *name, errbuf *err) {
    int rc;
    if (!f->tmp) {
        rc = link_unnamed(f->fd, dirfd, name);
    } else {
        rc = renameat2(dirfd, f->tmp_name, dirfd, name, RENAME_NOREPLACE);
        if (rc != 0 && errno == EINVAL) { /* a file system without the flag */
            rc = linkat(dirfd, f->tmp_name, dirfd, name, 0);
            if (rc == 0) unlinkat(dirfd, f->tmp_name, 0);
        }
        if (rc == 0) named_done(f);
    }
    if (rc == 0) return TILEOPT_OK;
    return err_set(err, TILEOPT_IO, "cannot name '%s': %s", name, strerror(errno));
}

int out_file_replace(out_file *f, int dirfd, const char *name, const char *stage,
                     errbuf *err) {
    const char *from = f->tmp ? f->tmp_name : stage;
    if (!f->tmp) {
        unlinkat(dirfd, stage, 0);
        if (link_unnamed(f->fd, dirfd, stage) != 0)
            return err_set(err, TILEOPT_IO, "cannot write '%s': %s", name, strerror(errno));
    }
    if (renameat(dirfd, from, dirfd, name) != 0) {
        int e = errno;
        if (!f->tmp) unlinkat(dirfd, stage, 0);
        return err_set(err, TILEOPT_IO, "cannot write '%s': %s", name, strerror(e));
    }
    if (f->tmp) named_done(f);
    return TILEOPT_OK;
}

void out_file_discard(out_file *f, int dirfd) {
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
    if (f->tmp) {
        unlinkat(dirfd, f->tmp_name, 0);
        named_done(f);
    }
}

/* ---------------------------------------------------------------- copies */

/* Why copy_file_range declined, so the copy goes through user space: another
** file system, an old kernel, a file system without it. */
static bool copy_declined(int e) {
    return e == EXDEV || e == ENOSYS || e == EOPNOTSUPP || e == EINVAL || e == EBADF ||
           e == ETXTBSY || e == EPERM;
}

static int shrank(const char *src_path, errbuf *err) {
    return err_set(err, TILEOPT_IO,
                   "external data '%s' ended early while it was copied (the file shrank)",
                   src_path);
}

int graph_copy_range(int dst_fd, int src_fd, const char *src_path, uint64_t src_off,
                     uint64_t len, uint8_t *buf, size_t buf_cap,
                     void (*progress)(void *user, uint64_t n), void *user, errbuf *err) {
    /* steps of 64 MiB: progress moves, and no call runs for seconds */
    const uint64_t step = (uint64_t)64 << 20;
    bool kernel = true;
    loff_t off = (loff_t)src_off;
    for (uint64_t left = len; left;) {
        size_t want = (size_t)(left < step ? left : step);
        ssize_t got;
        if (kernel) {
            got = copy_file_range(src_fd, &off, dst_fd, NULL, want, 0);
            if (got < 0 && errno == EINTR) continue;
            if (got < 0 && copy_declined(errno)) {
                kernel = false;
                continue;
            }
            if (got < 0)
                return err_set(err, TILEOPT_IO, "copying external data '%s' failed: %s",
                               src_path, strerror(errno));
        } else {
            if (want > buf_cap) want = buf_cap;
            got = pread(src_fd, buf, want, off);
            if (got < 0 && errno == EINTR) continue;
            if (got < 0)
                return err_set(err, TILEOPT_IO, "reading external data '%s' failed: %s",
                               src_path, strerror(errno));
            for (ssize_t done = 0; done < got;) {
                ssize_t w = write(dst_fd, buf + done, (size_t)(got - done));
                if (w < 0 && errno == EINTR) continue;
                if (w < 0)
                    return err_set(err, TILEOPT_IO, "cannot write the external data: %s",
                                   strerror(errno));
                done += w;
            }
            off += got;
        }
        if (got == 0) return shrank(src_path, err);
        left -= (uint64_t)got;
        if (progress) progress(user, (uint64_t)got);
    }
    return TILEOPT_OK;
}

/* ---------------------------------------------------------------- locks */

int dir_lock(int dirfd) {
    while (flock(dirfd, LOCK_EX) != 0)
        if (errno != EINTR) return -1;
    return dirfd;
}

void dir_unlock(int lock) {
    if (lock >= 0) flock(lock, LOCK_UN);
}

/* --------------------------------------------------------------- records */

bool name_list_add(name_list *l, const char *s, size_t len) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v) return false;
        l->v = v;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strndup(s, len))) return false;
    l->n++;
    return true;
}

bool name_list_has(const name_list *l, const char *s) {
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0) return true;
    return false;
}

void name_list_free(name_list *l) {
    for (size_t i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    *l = (name_list){0};
}

static bool key_is(const char *key, size_t klen, const char *want) {
    return strlen(want) == klen && memcmp(key, want, klen) == 0;
}

/* The '/'-separated names of value into l (empty parts and "." or ".." are no
** file names and are skipped). */
static bool add_names(name_list *l, const char *value, size_t vlen) {
    for (size_t i = 0; i < vlen;) {
        size_t j = i;
        while (j < vlen && value[j] != '/') j++;
        size_t n = j - i;
        bool dots = (n == 1 && value[i] == '.') || (n == 2 && value[i] == '.' && value[i + 1] == '.');
        if (n && !dots && !memchr(value + i, '\0', n) && !name_list_add(l, value + i, n))
            return false;
        i = j + 1;
    }
    return true;
}

bool data_record_entry(data_record *r, const char *key, size_t klen, const char *value,
                       size_t vlen) {
    if (key_is(key, klen, DATA_KEY_FOR)) {
        free(r->data_for);
        return (r->data_for = strndup(value, vlen)) != NULL;
    }
    if (key_is(key, klen, DATA_KEY_FILES)) return add_names(&r->files, value, vlen);
    if (key_is(key, klen, DATA_KEY_REMOVE)) return add_names(&r->remove, value, vlen);
    return true;
}

void data_record_free(data_record *r) {
    free(r->data_for);
    name_list_free(&r->files);
    name_list_free(&r->remove);
    *r = (data_record){0};
}

/* The key and value of a StringStringEntryProto's bytes. */
static void entry_fields(const uint8_t *p, const uint8_t *end, const uint8_t **k, size_t *kn,
                         const uint8_t **v, size_t *vn) {
    while (p < end) {
        uint64_t tag, len;
        if (!graph_wire_varint(&p, end, &tag) || (tag & 7) != 2 ||
            !graph_wire_varint(&p, end, &len) || len > (uint64_t)(end - p))
            return;
        if (tag >> 3 == 1) *k = p, *kn = (size_t)len;
        if (tag >> 3 == 2) *v = p, *vn = (size_t)len;
        p += len;
    }
}

/* ModelProto.metadata_props (field 14) walked on the wire: the graph, however
** big, is skipped in one step. */
static bool scan_metadata(const uint8_t *p, const uint8_t *end, data_record *r) {
    while (p < end) {
        uint64_t tag, len;
        if (!graph_wire_varint(&p, end, &tag)) return true;
        switch (tag & 7) {
        case 0:
            if (!graph_wire_varint(&p, end, &len)) return true;
            break;
        case 1: if ((size_t)(end - p) < 8) return true; p += 8; break;
        case 5: if ((size_t)(end - p) < 4) return true; p += 4; break;
        case 2:
            if (!graph_wire_varint(&p, end, &len) || len > (uint64_t)(end - p)) return true;
            if (tag >> 3 == 14) {
                const uint8_t *k = NULL, *v = NULL;
                size_t kn = 0, vn = 0;
                entry_fields(p, p + len, &k, &kn, &v, &vn);
                if (k && !data_record_entry(r, (const char *)k, kn, v ? (const char *)v : "", vn))
                    return false;
            }
            p += len;
            break;
        default: return true; /* not a model this walk can read: no record */
        }
    }
    return true;
}

int data_record_read(int dirfd, const char *name, data_record *r, uint64_t *nlink,
                     errbuf *err) {
    *r = (data_record){0};
    *nlink = 0;
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return TILEOPT_OK; /* none, or no regular file: nothing claimed */
    struct stat st;
    int rc = TILEOPT_OK;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        st.st_size <= INT32_MAX) {
        *nlink = (uint64_t)st.st_nlink;
        void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map != MAP_FAILED) {
            if (!scan_metadata(map, (const uint8_t *)map + st.st_size, r))
                rc = err_set(err, TILEOPT_NOMEM, "out of memory");
            munmap(map, (size_t)st.st_size);
        }
    } else if (S_ISREG(st.st_mode)) {
        *nlink = (uint64_t)st.st_nlink;
    }
    close(fd);
    if (rc) data_record_free(r);
    return rc;
}

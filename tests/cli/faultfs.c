/*
** LD_PRELOAD shim for the file-system tests: what a save meets on disks and
** file systems that this machine's does not show, each set by an environment
** variable:
**   FAULTFS_KILL_AT=N       SIGKILL the process at its N-th step (from 1): a
**                           write or copy to a regular file, fsync, link,
**                           rename, unlink or lock, before it happens (the OOM
**                           killer gives no notice either)
**   FAULTFS_LOG=PATH        each step's name appended as it comes (the killed
**                           one included): a run without FAULTFS_KILL_AT lists
**                           its steps
**   FAULTFS_NO_TMPFILE=1    open(O_TMPFILE) fails with EOPNOTSUPP, as on file
**                           systems without unnamed files
**   FAULTFS_NO_COPY_RANGE=1 copy_file_range fails with EXDEV, as across file
**                           systems and on kernels without it
**   FAULTFS_ENOSPC_AFTER=B  writes and copies to regular files fail with ENOSPC
**                           once B bytes went through
**   FAULTFS_SHRINK=PATH     PATH is cut to half its size as the first copy out
**                           of a file or read at an offset starts (a data file
**                           that changes while it is read)
** The real calls are the next library's (glibc), found with dlsym(RTLD_NEXT).
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/* the plain and the 64 names are both entry points: large-file headers would
** make the plain ones the 64 ones */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static long steps, kill_at = -1;
static long long written, enospc_after = -1;
static int no_tmpfile, no_copy_range, shrunk, log_fd = -1;
static const char *shrink_path;

__attribute__((constructor)) static void init(void) {
    const char *v;
    if ((v = getenv("FAULTFS_KILL_AT"))) kill_at = strtol(v, NULL, 10);
    if ((v = getenv("FAULTFS_ENOSPC_AFTER"))) enospc_after = strtoll(v, NULL, 10);
    no_tmpfile = getenv("FAULTFS_NO_TMPFILE") != NULL;
    no_copy_range = getenv("FAULTFS_NO_COPY_RANGE") != NULL;
    shrink_path = getenv("FAULTFS_SHRINK");
    if ((v = getenv("FAULTFS_LOG")))
        log_fd = (int)syscall(SYS_openat, AT_FDCWD, v, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                              0644);
}

/* (the object-to-function pointer copy POSIX prescribes for dlsym) */
#define REAL(ret, name, ...)                                                 \
    static ret (*real)(__VA_ARGS__);                                         \
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, name)

/* One step of a save: logged, and the process killed when it is the chosen one. */
static void step(const char *what) {
    steps++;
    if (log_fd >= 0) {
        char line[64];
        int n = snprintf(line, sizeof line, "%ld %s\n", steps, what);
        syscall(SYS_write, log_fd, line, (size_t)n);
    }
    if (steps == kill_at) raise(SIGKILL);
}

static int regular(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

/* How much of n bytes may be written before the disk is full (-1: none). */
static long long room(size_t n) {
    if (enospc_after < 0) return (long long)n;
    long long left = enospc_after - written;
    if (left <= 0) {
        errno = ENOSPC;
        return -1;
    }
    return left < (long long)n ? left : (long long)n;
}

static void shrink(void) {
    if (!shrink_path || shrunk) return;
    shrunk = 1;
    struct stat st;
    if (stat(shrink_path, &st) == 0 && truncate(shrink_path, st.st_size / 2) != 0) shrunk = 2;
}

ssize_t write(int fd, const void *buf, size_t n) {
    REAL(ssize_t, "write", int, const void *, size_t);
    if (!regular(fd)) return real(fd, buf, n);
    step("write");
    long long k = room(n);
    if (k < 0) return -1;
    ssize_t w = real(fd, buf, (size_t)k);
    if (w > 0) written += w;
    return w;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    REAL(ssize_t, "pwrite", int, const void *, size_t, off_t);
    if (!regular(fd)) return real(fd, buf, n, off);
    step("pwrite");
    long long k = room(n);
    if (k < 0) return -1;
    ssize_t w = real(fd, buf, (size_t)k, off);
    if (w > 0) written += w;
    return w;
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) { return pwrite(fd, buf, n, off); }

ssize_t pread(int fd, void *buf, size_t n, off_t off) {
    REAL(ssize_t, "pread", int, void *, size_t, off_t);
    shrink();
    return real(fd, buf, n, off);
}

ssize_t pread64(int fd, void *buf, size_t n, off_t off) { return pread(fd, buf, n, off); }

ssize_t copy_file_range(int in, off_t *in_off, int out, off_t *out_off, size_t n,
                        unsigned flags) {
    REAL(ssize_t, "copy_file_range", int, off_t *, int, off_t *, size_t, unsigned);
    shrink();
    step("copy_file_range");
    if (no_copy_range) {
        errno = EXDEV;
        return -1;
    }
    long long k = room(n);
    if (k < 0) return -1;
    ssize_t w = real(in, in_off, out, out_off, (size_t)k, flags);
    if (w > 0) written += w;
    return w;
}

static int tmpfile_refused(int flags) {
    if (!no_tmpfile || (flags & O_TMPFILE) != O_TMPFILE) return 0;
    errno = EOPNOTSUPP;
    return 1;
}

/* The mode argument that comes with O_CREAT and O_TMPFILE. */
#define MODE_ARG(flags) \
    mode_t mode = 0; \
    if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) { \
        va_list ap; \
        va_start(ap, flags); \
        mode = va_arg(ap, mode_t); \
        va_end(ap); \
    }

static int open_at(int dirfd, const char *path, int flags, mode_t mode) {
    REAL(int, "openat", int, const char *, int, ...);
    if (tmpfile_refused(flags)) return -1;
    return real(dirfd, path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...) {
    MODE_ARG(flags)
    return open_at(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...) {
    MODE_ARG(flags)
    return open_at(dirfd, path, flags, mode);
}

int open(const char *path, int flags, ...) {
    MODE_ARG(flags)
    return open_at(AT_FDCWD, path, flags, mode);
}

int open64(const char *path, int flags, ...) {
    MODE_ARG(flags)
    return open_at(AT_FDCWD, path, flags, mode);
}

int fsync(int fd) {
    REAL(int, "fsync", int);
    step("fsync");
    return real(fd);
}

int linkat(int olddir, const char *old, int newdir, const char *new_, int flags) {
    REAL(int, "linkat", int, const char *, int, const char *, int);
    step("linkat");
    return real(olddir, old, newdir, new_, flags);
}

int renameat(int olddir, const char *old, int newdir, const char *new_) {
    REAL(int, "renameat", int, const char *, int, const char *);
    step("renameat");
    return real(olddir, old, newdir, new_);
}

int renameat2(int olddir, const char *old, int newdir, const char *new_, unsigned flags) {
    REAL(int, "renameat2", int, const char *, int, const char *, unsigned);
    step("renameat2");
    return real(olddir, old, newdir, new_, flags);
}

int rename(const char *old, const char *new_) {
    REAL(int, "rename", const char *, const char *);
    step("rename");
    return real(old, new_);
}

int unlinkat(int dir, const char *path, int flags) {
    REAL(int, "unlinkat", int, const char *, int);
    step("unlinkat");
    return real(dir, path, flags);
}

int unlink(const char *path) {
    REAL(int, "unlink", const char *);
    step("unlink");
    return real(path);
}

int flock(int fd, int op) {
    REAL(int, "flock", int, int);
    step("flock");
    return real(fd, op);
}

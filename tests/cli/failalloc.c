/*
** LD_PRELOAD shim for the out-of-memory tests: the FAILALLOC_AT-th allocation
** (malloc, calloc, realloc, aligned forms, anonymous mmap; counted from 0 once
** the program's own code may run) fails as the system would, with ENOMEM, and
** every other one goes through. With FAILALLOC_COUNT set, the number of
** allocations counted is written to that file at exit, so a test knows how many
** failure points a run has.
**
** glibc's own entry points (__libc_malloc and the rest) do the real work: no
** dlsym, which may itself allocate before the shim knows where to go.
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void *__mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);

static long fail_at = -1;
static long counted;
static int armed;

static int fails(void) {
    if (!armed) return 0;
    if (counted++ != fail_at) return 0;
    errno = ENOMEM;
    return 1;
}

static void write_count(void) {
    const char *path = getenv("FAILALLOC_COUNT");
    armed = 0;
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f) return;
    fprintf(f, "%ld\n", counted);
    fclose(f);
}

/* Runs after the libraries' constructors (OpenBLAS sizes its buffers there):
** what they allocate is not the program's to handle. */
__attribute__((constructor(65535))) static void arm(void) {
    const char *at = getenv("FAILALLOC_AT");
    fail_at = at ? strtol(at, NULL, 10) : -1;
    atexit(write_count);
    armed = 1;
}

void *malloc(size_t n) { return fails() ? NULL : __libc_malloc(n); }

void *calloc(size_t n, size_t size) { return fails() ? NULL : __libc_calloc(n, size); }

void *realloc(void *p, size_t n) {
    /* a shrink to nothing frees; only a request for memory can fail */
    if (p && n == 0) return __libc_realloc(p, n);
    return fails() ? NULL : __libc_realloc(p, n);
}

void *aligned_alloc(size_t align, size_t n) {
    return fails() ? NULL : __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n) {
    if (fails()) return ENOMEM;
    void *p = __libc_memalign(align, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    if ((flags & MAP_ANONYMOUS) && fails()) return MAP_FAILED;
    return __mmap(addr, len, prot, flags, fd, off);
}

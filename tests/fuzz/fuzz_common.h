/*
** Shared set-up of the libFuzzer targets: a context whose limits are small, so a
** fuzzed model that claims big tensors is refused (or evaluated) in kilobytes and
** a run stays fast; and a scratch folder holding a few external-data files, so
** fuzzed locations can reach the external-data reader without leaving it.
*/
#ifndef TILEOPT_FUZZ_COMMON_H
#define TILEOPT_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tileopt.h"

/* Stop the fuzzer with a message: libFuzzer saves the input that got here. */
#define FUZZ_CHECK(cond, ...)                                                           \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "fuzz check failed: %s: ", #cond);                          \
            fprintf(stderr, __VA_ARGS__);                                               \
            fputc('\n', stderr);                                                        \
            abort();                                                                    \
        }                                                                               \
    } while (0)

static inline tileopt_ctx *fuzz_ctx(void) {
    tileopt_ctx *ctx = NULL;
    FUZZ_CHECK(tileopt_ctx_new(&ctx) == TILEOPT_OK, "no context");
    static const char *const opts[][2] = {
        {"max-tensor-bytes", "262144"}, {"max-eval-bytes", "2097152"},
        {"max-depth", "16"},            {"max-rank", "16"},
        {"fold-limit", "65536"},        {"max-eval-steps", "20000"},
    };
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        FUZZ_CHECK(tileopt_ctx_set(ctx, opts[i][0], opts[i][1]) == TILEOPT_OK, "%s",
                   opts[i][0]);
    return ctx;
}

/* A failure must say what went wrong: an empty message is a bug too. */
static inline void fuzz_failed(tileopt_ctx *ctx, tileopt_status st, const char *what) {
    FUZZ_CHECK(st > TILEOPT_OK && st < TILEOPT_STATUS_COUNT_, "%s: status %d", what, (int)st);
    FUZZ_CHECK(tileopt_ctx_errmsg(ctx)[0] != '\0', "%s failed (%s) without a message", what,
               tileopt_status_str(st));
}

static char fuzz_dir_[512];

static void fuzz_scratch_remove(void) {
    static const char *const names[] = {"sub/data.bin", "sub", "short.bin", "data.bin"};
    char path[600];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", fuzz_dir_, names[i]);
        remove(path);
    }
    rmdir(fuzz_dir_);
}

/* The scratch folder: data.bin (256 bytes), short.bin (3 bytes), sub/data.bin;
** removed at exit. */
static inline const char *fuzz_scratch_dir(void) {
    char *dir = fuzz_dir_;
    if (dir[0]) return dir;
    /* Under run_fuzz.py's own temporary folder, which goes even when a crash
    ** skips the atexit handler. */
    const char *parent = getenv("TILEOPT_FUZZ_TMP");
    snprintf(fuzz_dir_, sizeof fuzz_dir_, "%s/tileopt_fuzz_XXXXXX",
             parent && parent[0] && strlen(parent) < 400 ? parent : "/tmp");
    FUZZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    atexit(fuzz_scratch_remove);
    char path[600];
    unsigned char bytes[256];
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (unsigned char)(i * 37u + 11u);
    static const struct { const char *name; size_t len; } files[] = {
        {"data.bin", 256}, {"short.bin", 3}, {"sub/data.bin", 256}};
    snprintf(path, sizeof path, "%s/sub", dir);
    FUZZ_CHECK(mkdir(path, 0700) == 0, "mkdir");
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
        FILE *f = fopen(path, "wb");
        FUZZ_CHECK(f && fwrite(bytes, 1, files[i].len, f) == files[i].len && fclose(f) == 0,
                   "%s", path);
    }
    return dir;
}

#endif

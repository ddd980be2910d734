/*
** `tileopt optimize` over many models: several inputs, or folders searched for
** *.onnx, each written under -o OUTDIR at its relative path. Every model runs in
** a child process of its own (-j at once), so a model that fails, or crashes,
** is one failed row and the batch goes on. `--shard I/N` keeps the I-th of N
** contiguous slices of the sorted list, for job arrays that split a model zoo
** across machines without talking to each other.
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"

/* Folders nest at most this deep below an input folder (symlinked folders are
** not followed, so this only bounds honest trees). */
#define WALK_MAX_DEPTH 64

typedef struct model {
    char *in, *rel;          /* the input's path, and its path below OUTDIR */
    /* filled when it has run */
    int rc;                  /* exit code; -1: killed by a signal */
    int signal;
    double seconds, in_bytes, out_bytes;
    int tiles_before, tiles_after;
    int64_t nodes_before, nodes_after;
    tileopt_verdict verdict;
    char error[512];
} model;

typedef struct list {
    model *m;
    size_t n, cap;
} list;

/* What a child sends back through its pipe: one write, under PIPE_BUF. */
typedef struct result {
    int rc;
    double in_bytes, out_bytes;
    int tiles_before, tiles_after;
    int64_t nodes_before, nodes_after;
    tileopt_verdict verdict;
} result;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int add_model(list *l, const char *in, const char *rel) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        model *m = realloc(l->m, cap * sizeof *m);
        if (!m) return -1;
        l->m = m;
        l->cap = cap;
    }
    model *m = &l->m[l->n];
    memset(m, 0, sizeof *m);
    m->in = strdup(in);
    m->rel = strdup(rel);
    if (!m->in || !m->rel) {
        free(m->in);
        free(m->rel);
        return -1;
    }
    l->n++;
    return 0;
}

/* A file argument's place below OUTDIR: its path as written, without a leading
** '/', "." parts or ".." parts (which would climb out of OUTDIR). */
static void rel_of_file(const char *path, char *out, size_t cap) {
    size_t k = 0;
    out[0] = '\0';
    for (const char *p = path; *p;) {
        while (*p == '/') p++;
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        bool skip = len == 0 || (len == 1 && p[0] == '.') || (len == 2 && !strncmp(p, "..", 2));
        if (!skip && k + len + 2 < cap) {
            if (k) out[k++] = '/';
            memcpy(out + k, p, len);
            k += len;
            out[k] = '\0';
        }
        p += len;
    }
}

static bool is_onnx(const char *name) {
    size_t n = strlen(name);
    return n > 5 && strcmp(name + n - 5, ".onnx") == 0;
}

/* Every *.onnx below dir (rel: its path below the input folder), skipping the
** folders the batch writes to, so a second run does not take outputs as inputs. */
static int walk(list *l, const char *dir, const char *rel, int depth, char *const *skip,
                size_t n_skip) {
    if (depth > WALK_MAX_DEPTH)
        return tool_error(EXIT_FAIL, "'%s': folders nest deeper than %d", dir, WALK_MAX_DEPTH);
    char real[PATH_MAX];
    if (realpath(dir, real))
        for (size_t i = 0; i < n_skip; i++)
            if (skip[i] && strcmp(real, skip[i]) == 0) return EXIT_OK;
    DIR *d = opendir(dir);
    if (!d) return tool_error(EXIT_FAIL, "'%s': %s", dir, strerror(errno));
    int rc = EXIT_OK;
    for (struct dirent *e; rc == EXIT_OK && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue; /* ., .. and hidden entries */
        char path[PATH_MAX], sub[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path ||
            snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name) >=
                (int)sizeof sub)
            continue;
        struct stat st;
        if (lstat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            rc = walk(l, path, sub, depth + 1, skip, n_skip);
        } else if (is_onnx(e->d_name) && (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))) {
            if (add_model(l, path, sub)) rc = tool_error(EXIT_FAIL, "out of memory");
        }
    }
    closedir(d);
    return rc;
}

static int by_input(const void *x, const void *y) {
    return strcmp(((const model *)x)->in, ((const model *)y)->in);
}

static int by_rel(const void *x, const void *y) {
    return strcmp(((const model *)x)->rel, ((const model *)y)->rel);
}

/* mkdir -p of path's folder. */
static int make_parents(const char *path) {
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return 0;
}

/* The folder path, made when missing; a file there is refused before any model
** runs (each would fail alone otherwise). */
static int make_folder(const char *path) {
    struct stat st;
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return tool_error(EXIT_FAIL, "cannot make '%s': %s", path, strerror(errno));
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return tool_error(EXIT_FAIL, "'%s' exists and is not a folder: a batch writes a "
                          "folder of models", path);
    return EXIT_OK;
}

/* o[key] as a number, 0 when it is missing (a model that failed early). */
/* The child: one model, its messages to errfd, its result to the pipe. */
static void child_run(tileopt_ctx *ctx, const batch_opts *b, const model *m, int out_fd,
                      int err_fd) {
    dup2(err_fd, STDERR_FILENO);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
    char out[PATH_MAX], rep[PATH_MAX], page[PATH_MAX];
    result r = {EXIT_FAIL, 0, 0, 0, 0, 0, 0, TILEOPT_VERDICT_NONE};
    opt_args a = *b->common;
    a.in = m->in;
    a.out = out;
    a.report = NULL;
    a.quiet = true;
    if (snprintf(out, sizeof out, "%s/%s", b->outdir, m->rel) >= (int)sizeof out ||
        make_parents(out) != 0) {
        tool_error(EXIT_FAIL, "cannot make the folder for '%s'", out);
    } else if (b->report_dir &&
               (snprintf(rep, sizeof rep, "%s/%s.json", b->report_dir, m->rel) >=
                    (int)sizeof rep ||
                make_parents(rep) != 0)) {
        tool_error(EXIT_FAIL, "cannot make the folder for '%s'", rep);
    } else if (b->html_dir &&
               (snprintf(page, sizeof page, "%s/%s.html", b->html_dir, m->rel) >=
                    (int)sizeof page ||
                make_parents(page) != 0)) {
        tool_error(EXIT_FAIL, "cannot make the folder for '%s'", page);
    } else {
        if (b->report_dir) a.report = rep;
        if (b->html_dir) a.html = page;
        r.rc = b->one(ctx, &a, b->passes, b->n_passes);
        r.in_bytes = (double)tileopt_report_model_stat(ctx, TILEOPT_INPUT, TILEOPT_MODEL_FILE_BYTES);
        r.out_bytes = (double)tileopt_report_model_stat(ctx, TILEOPT_OUTPUT, TILEOPT_MODEL_FILE_BYTES);
        r.tiles_before = (int)tileopt_report_model_stat(ctx, TILEOPT_INPUT, TILEOPT_MODEL_TILES);
        r.tiles_after = (int)tileopt_report_model_stat(ctx, TILEOPT_OUTPUT, TILEOPT_MODEL_TILES);
        r.nodes_before = tileopt_report_model_stat(ctx, TILEOPT_INPUT, TILEOPT_MODEL_NODES);
        r.nodes_after = tileopt_report_model_stat(ctx, TILEOPT_OUTPUT, TILEOPT_MODEL_NODES);
        r.verdict = tileopt_report_verdict(ctx, NULL);
    }
    fflush(NULL);
    ssize_t w = write(out_fd, &r, sizeof r);
    _exit(w == (ssize_t)sizeof r ? r.rc : EXIT_FAIL);
}

/* s into out, cut to fit. */
static void copy_cut(char *out, size_t cap, const char *s) {
    size_t n = strlen(s);
    if (n >= cap) n = cap - 1;
    memcpy(out, s, n);
    out[n] = '\0';
}

/* The last "tileopt: error: ..." line the child wrote, else its last line. */
static void read_error(FILE *f, char *out, size_t cap) {
    char line[1024], last[1024] = "";
    out[0] = '\0';
    rewind(f);
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!line[0]) continue;
        copy_cut(last, sizeof last, line);
        if (!strncmp(line, "tileopt: error: ", 16)) copy_cut(out, cap, line + 16);
    }
    if (!out[0]) copy_cut(out, cap, last);
}

typedef struct slot {
    pid_t pid;
    size_t index;
    int pipe_fd;
    FILE *err;
    double t0;
} slot;

static void progress(size_t done, size_t failed, size_t total, size_t running) {
    char what[96];
    snprintf(what, sizeof what, "batch (%zu failed, %zu running)", failed, running);
    cli_progress(NULL, what, done, total);
}

/* A path from the disk as printable text: control bytes as \xNN, so a file
** name cannot drive the terminal (tool_error does the same for its lines). */
static void put_path_to(FILE *f, const char *s) {
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c < 0x20 || *c == 0x7f) fprintf(f, "\\x%02x", *c);
        else fputc(*c, f);
    }
}

static void put_path(const char *s) { put_path_to(stdout, s); }

static void print_row(const model *m) {
    char a[32], b[32];
    fputs(m->rc == EXIT_OK ? "ok    " : "FAIL  ", stdout);
    put_path(m->rel);
    if (m->rc == EXIT_OK)
        printf("  %s -> %s  Tile %d -> %d  %.2f s\n", cli_human_bytes(m->in_bytes, a, sizeof a),
               cli_human_bytes(m->out_bytes, b, sizeof b), m->tiles_before, m->tiles_after,
               m->seconds);
    else
        printf("  %s\n", m->error);
    fflush(stdout);
}

/* The child's warnings, on stderr with the model named: a batch shows them as
** a single run would, whatever --quiet says. */
static void forward_warnings(FILE *f, const char *in) {
    static const char tag[] = "tileopt: warning: ";
    char line[4096];
    rewind(f);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, tag, sizeof tag - 1) != 0) continue;
        cli_progress_clear();
        fputs(tag, stderr);
        put_path_to(stderr, in);
        fprintf(stderr, ": %s%s", line + sizeof tag - 1, strchr(line, '\n') ? "" : "\n");
    }
}

/* Collect one finished child into its model row. */
static void reap(slot *s, model *m, int status) {
    m->seconds = now_s() - s->t0;
    result r;
    ssize_t got = read(s->pipe_fd, &r, sizeof r);
    close(s->pipe_fd);
    forward_warnings(s->err, m->in);
    read_error(s->err, m->error, sizeof m->error);
    fclose(s->err);
    if (WIFSIGNALED(status)) {
        m->rc = -1;
        m->signal = WTERMSIG(status);
        snprintf(m->error, sizeof m->error, "crashed (signal %d: %s)", m->signal,
                 strsignal(m->signal));
        return;
    }
    m->rc = WIFEXITED(status) ? WEXITSTATUS(status) : EXIT_FAIL;
    if (got == (ssize_t)sizeof r) {
        m->in_bytes = r.in_bytes;
        m->out_bytes = r.out_bytes;
        m->tiles_before = r.tiles_before;
        m->tiles_after = r.tiles_after;
        m->nodes_before = r.nodes_before;
        m->nodes_after = r.nodes_after;
        m->verdict = r.verdict;
    } else if (m->rc == EXIT_OK) {
        m->rc = EXIT_FAIL;
        snprintf(m->error, sizeof m->error, "the worker sent no result");
    }
    if (m->rc != EXIT_OK && !m->error[0])
        snprintf(m->error, sizeof m->error, "exit %d", m->rc);
}

static int start(tileopt_ctx *ctx, const batch_opts *b, model *m, size_t index, slot *s) {
    int fds[2];
    FILE *err = tmpfile();
    if (!err || pipe(fds) != 0) {
        if (err) fclose(err);
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        fclose(err);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        child_run(ctx, b, m, fds[1], fileno(err));
    }
    close(fds[1]);
    *s = (slot){pid, index, fds[0], err, now_s()};
    return 0;
}

/* s as a JSON string: UTF-8 kept, control characters escaped, and a byte that
** is no part of valid UTF-8 written as the text \xNN, as the report does. */
static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        unsigned c = *p;
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
                   : (c & 0xf8) == 0xf0 ? 4 : 0;
        bool valid = len > 0 && !(len == 2 && c < 0xc2);
        for (size_t k = 1; valid && k < len; k++) valid = (p[k] & 0xc0) == 0x80;
        if (!valid) {
            fprintf(f, "\\\\x%02x", c);
            p++;
        } else if (len > 1) {
            fwrite(p, 1, len, f);
            p += len;
        } else {
            if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
            else if (c < 0x20) fprintf(f, "\\u%04x", c);
            else fputc((int)c, f);
            p++;
        }
    }
    fputc('"', f);
}

/* "key": "value" and "key": number members, the first of an object without a comma. */
static void member_str(FILE *f, bool *first, const char *key, const char *value) {
    fprintf(f, "%s\n    \"%s\": ", *first ? "" : ",", key);
    json_string(f, value);
    *first = false;
}

static void member_num(FILE *f, bool *first, const char *key, double value) {
    fprintf(f, "%s\n    \"%s\": %.17g", *first ? "" : ",", key, value);
    *first = false;
}

static int write_summary(const batch_opts *b, const list *l, double seconds, size_t failed) {
    char path[PATH_MAX], tmp[PATH_MAX];
    snprintf(path, sizeof path, "%s/batch.json", b->report_dir);
    snprintf(tmp, sizeof tmp, "%s/.batch.json.%ld", b->report_dir, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (f) {
        fputs("{\n  \"models\": [", f);
        for (size_t i = 0; i < l->n; i++) {
            const model *m = &l->m[i];
            char out[PATH_MAX], rep[PATH_MAX];
            snprintf(out, sizeof out, "%s/%s", b->outdir, m->rel);
            snprintf(rep, sizeof rep, "%s/%s.json", b->report_dir, m->rel);
            bool first = true;
            fputs(i ? ", {" : "{", f);
            member_str(f, &first, "input", m->in);
            member_str(f, &first, "output", out);
            member_str(f, &first, "report", rep);
            member_str(f, &first, "status", m->rc == EXIT_OK ? "ok" : "failed");
            if (m->rc != EXIT_OK) member_str(f, &first, "error", m->error);
            member_num(f, &first, "seconds", m->seconds);
            member_num(f, &first, "input_bytes", m->in_bytes);
            member_num(f, &first, "output_bytes", m->out_bytes);
            member_num(f, &first, "tiles_before", m->tiles_before);
            member_num(f, &first, "tiles_after", m->tiles_after);
            fputs("\n  }", f);
        }
        fprintf(f, "],\n  \"done\": %zu,\n  \"failed\": %zu,\n  \"seconds\": %.17g", l->n - failed,
                failed, seconds);
        if (b->shard_n) fprintf(f, ",\n  \"shard\": %d,\n  \"shards\": %d", b->shard_i, b->shard_n);
        fputs("\n}\n", f);
    }
    bool ok = f && !ferror(f);
    if (f && fclose(f) != 0) ok = false;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return tool_error(EXIT_FAIL, "cannot write '%s'", path);
    }
    return EXIT_OK;
}

/* html_dir/index.html: a row per model, linking the pages the workers wrote. */
static int write_index(tileopt_ctx *ctx, const batch_opts *b, const list *l) {
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/index.html", b->html_dir) >= (int)sizeof path)
        return tool_error(EXIT_FAIL, "'%s/index.html': path too long", b->html_dir);
    tileopt_html_row *rows = calloc(l->n + 1, sizeof *rows);
    char **pages = calloc(l->n + 1, sizeof *pages);
    int rc = EXIT_OK;
    if (!rows || !pages) rc = tool_error(EXIT_FAIL, "out of memory");
    for (size_t i = 0; rc == EXIT_OK && i < l->n; i++) {
        const model *m = &l->m[i];
        size_t len = strlen(m->rel) + sizeof ".html";
        if (m->rc == EXIT_OK && (pages[i] = malloc(len))) snprintf(pages[i], len, "%s.html", m->rel);
        rows[i] = (tileopt_html_row){
            .model = m->in, .page = pages[i], .error = m->rc == EXIT_OK ? NULL : m->error,
            .bytes_before = (int64_t)m->in_bytes, .bytes_after = (int64_t)m->out_bytes,
            .nodes_before = m->nodes_before, .nodes_after = m->nodes_after,
            .tiles_before = m->tiles_before, .tiles_after = m->tiles_after,
            .verdict = m->verdict == TILEOPT_VERDICT_NONE ? NULL : tileopt_verdict_str(m->verdict),
            .seconds = m->seconds};
    }
    if (rc == EXIT_OK && tileopt_html_index(ctx, rows, l->n, path) != TILEOPT_OK)
        rc = tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
    for (size_t i = 0; pages && i < l->n; i++) free(pages[i]);
    free(pages);
    free(rows);
    return rc;
}

int cmd_batch(tileopt_ctx *ctx, const batch_opts *b, char *const *inputs, size_t n_inputs) {
    list l = {0};
    /* the folders written to, when they exist already, are not searched */
    char *skip[2] = {realpath(b->outdir, NULL),
                     b->report_dir ? realpath(b->report_dir, NULL) : NULL};
    int rc = EXIT_OK;
    for (size_t i = 0; i < n_inputs && rc == EXIT_OK; i++) {
        struct stat st;
        if (stat(inputs[i], &st) != 0) {
            rc = tool_error(EXIT_FAIL, "'%s': %s", inputs[i], strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            size_t before = l.n;
            rc = walk(&l, inputs[i], "", 0, skip, 2);
            if (rc == EXIT_OK && l.n == before)
                rc = tool_error(EXIT_FAIL, "'%s' is a directory with no .onnx models in it",
                                inputs[i]);
        } else {
            char rel[PATH_MAX];
            rel_of_file(inputs[i], rel, sizeof rel);
            if (add_model(&l, inputs[i], rel)) rc = tool_error(EXIT_FAIL, "out of memory");
        }
    }
    free(skip[0]);
    free(skip[1]);
    /* two inputs landing on one output would overwrite each other */
    if (rc == EXIT_OK && l.n) {
        qsort(l.m, l.n, sizeof *l.m, by_rel);
        for (size_t i = 1; i < l.n && rc == EXIT_OK; i++)
            if (strcmp(l.m[i].rel, l.m[i - 1].rel) == 0)
                rc = tool_error(EXIT_USAGE, "'%s' and '%s' would both be written to %s/%s",
                                l.m[i - 1].in, l.m[i].in, b->outdir, l.m[i].rel);
    }
    size_t first = 0, count = l.n;
    if (rc == EXIT_OK && l.n) {
        qsort(l.m, l.n, sizeof *l.m, by_input);
        if (b->shard_n) {
            first = l.n * (size_t)b->shard_i / (size_t)b->shard_n;
            count = l.n * (size_t)(b->shard_i + 1) / (size_t)b->shard_n - first;
        }
    }
    /* nothing is created before the list stands */
    if (rc == EXIT_OK) rc = make_folder(b->outdir);
    if (rc == EXIT_OK && b->report_dir) rc = make_folder(b->report_dir);
    if (rc == EXIT_OK && b->html_dir) rc = make_folder(b->html_dir);
    /* the workers share the machine's memory: unless asked otherwise, each
    ** evaluates within its part of the default budget */
    if (rc == EXIT_OK && !b->common->eval_bytes_asked) {
        char v[32];
        unsigned workers = (unsigned)(count < (size_t)b->jobs ? count : (size_t)b->jobs);
        snprintf(v, sizeof v, "%llu", (unsigned long long)tileopt_memory_budget(workers));
        if (tileopt_ctx_set(ctx, "max-eval-bytes", v) != TILEOPT_OK)
            rc = tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
    }
    size_t failed = 0, done = 0;
    double t0 = now_s();
    slot *slots = rc == EXIT_OK ? calloc((size_t)b->jobs, sizeof *slots) : NULL;
    if (rc == EXIT_OK && !slots) rc = tool_error(EXIT_FAIL, "out of memory");
    bool shown = b->progress;
    size_t next = first, running = 0;
    while (rc == EXIT_OK && (next < first + count || running)) {
        while (next < first + count && running < (size_t)b->jobs) {
            if (start(ctx, b, &l.m[next], next, &slots[running]) != 0) {
                rc = tool_error(EXIT_FAIL, "cannot start a worker: %s", strerror(errno));
                break;
            }
            next++;
            running++;
        }
        if (shown) progress(done, failed, count, running);
        if (!running) break;
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == EINTR) continue;
            rc = tool_error(EXIT_FAIL, "waiting for a worker: %s", strerror(errno));
            break;
        }
        for (size_t k = 0; k < running; k++) {
            if (slots[k].pid != pid) continue;
            model *m = &l.m[slots[k].index];
            reap(&slots[k], m, status);
            slots[k] = slots[--running];
            done++;
            failed += m->rc != EXIT_OK;
            if (shown) cli_progress_clear();
            if (!b->quiet) print_row(m);
            /* quiet keeps errors: a failed model is named on stderr, as a single
            ** run's error would be */
            else if (m->rc != EXIT_OK && strncmp(m->error, m->in, strlen(m->in)) == 0)
                tool_error(EXIT_FAIL, "%s", m->error); /* the error names the file */
            else if (m->rc != EXIT_OK)
                tool_error(EXIT_FAIL, "%s: %s", m->in, m->error);
            break;
        }
    }
    free(slots);
    double seconds = now_s() - t0;
    if (shown) cli_progress_clear();
    if (rc == EXIT_OK) {
        double in = 0, out = 0;
        int tb = 0, ta = 0;
        for (size_t i = first; i < first + count; i++) {
            in += l.m[i].in_bytes;
            out += l.m[i].out_bytes;
            tb += l.m[i].tiles_before;
            ta += l.m[i].rc == EXIT_OK ? l.m[i].tiles_after : l.m[i].tiles_before;
        }
        char a[32], c[32];
        if (!b->quiet) {
            printf("batch: %zu models, %zu done, %zu failed, %.2f s (%.2f models/s, -j %d)\n",
                   count, count - failed, failed, seconds, seconds > 0 ? count / seconds : 0.0,
                   b->jobs);
            printf("  bytes %s -> %s, Tiles %d -> %d (%d removed)\n",
                   cli_human_bytes(in, a, sizeof a), cli_human_bytes(out, c, sizeof c), tb, ta,
                   tb - ta);
            if (b->shard_n)
                printf("  shard %d of %d: models %zu to %zu of %zu\n", b->shard_i, b->shard_n,
                       first + 1, first + count, l.n);
        }
        if (b->report_dir) {
            list shard = {l.m + first, count, count};
            int wrc = write_summary(b, &shard, seconds, failed);
            if (wrc) rc = wrc;
        }
        if (b->html_dir) {
            list shard = {l.m + first, count, count};
            int wrc = write_index(ctx, b, &shard);
            if (wrc) rc = wrc;
        }
        if (rc == EXIT_OK && failed) rc = EXIT_FAIL;
    }
    for (size_t i = 0; i < l.n; i++) {
        free(l.m[i].in);
        free(l.m[i].rel);
    }
    free(l.m);
    return rc;
}

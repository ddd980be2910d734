/*
** The tileopt command line: usage, dispatch, optimize and inspect (cmd_run.c has
** run). tools/ is the only code that prints or exits: everything else is the
** library behind include/tileopt.h.
*/
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "tileopt.h"
#include "tools/cmd.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

static const char usage_text[] =
    "usage:\n"
    "  tileopt optimize IN.onnx -o OUT.onnx [--passes upgrade,fold,fuse|none]\n"
    "                   [--target-opset N] [--fold-limit BYTES] [--fold-max-growth K]\n"
    "                   [--fold-scope tile|all] [--fuse-split] [--infer-shapes]\n"
    "                   [--keep-initializer-inputs]\n"
    "                   [--report FILE|-] [--verify] [--quiet]\n"
    "                   [--max-tensor-bytes B] [--max-eval-bytes B] [--max-eval-steps N]\n"
    "                   [--max-depth N] [--max-rank N] [--seed N]\n"
    "  tileopt run MODEL.onnx [INPUT.pb ...] [--test-dir DIR] [-o OUTDIR] [--max-... as above]\n"
    "  tileopt inspect MODEL.onnx [--json] [--max-... as above]\n"
    "  tileopt --help | --version\n";

int tool_error(int code, const char *fmt, ...) {
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* The library escapes what it reports; paths from the command line get the
    ** same treatment, so an error is one line that cannot drive the terminal. */
    fputs("tileopt: error: ", stderr);
    for (const unsigned char *c = (const unsigned char *)msg; *c; c++) {
        if (*c < 0x20 || *c == 0x7f) fprintf(stderr, "\\x%02x", *c);
        else fputc(*c, stderr);
    }
    fputc('\n', stderr);
    if (code == EXIT_USAGE) fputs("(tileopt --help shows the usage)\n", stderr);
    return code;
}

/* The temporary file a save is writing right now (the library tells us through
** tileopt_ctx_set_temp_hook), so that SIGINT or SIGTERM in the middle of a long
** write leaves no half-written file behind. */
static char pending_tmp[PATH_MAX];
static volatile sig_atomic_t pending_set;

static void note_temp(void *user, const char *tmp) {
    (void)user;
    pending_set = 0;
    size_t n = tmp ? strlen(tmp) : 0;
    if (n && n < sizeof pending_tmp) {
        memcpy(pending_tmp, tmp, n + 1);
        pending_set = 1;
    }
}

static void on_fatal_signal(int sig) {
    if (pending_set) unlink(pending_tmp);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void clean_up_on_signals(tileopt_ctx *ctx) {
    tileopt_ctx_set_temp_hook(ctx, note_temp, NULL);
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        /* A signal the caller ignores (nohup, a background job) stays ignored. */
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

/* Progress on a terminal only: a single line redrawn in place. */
static void progress(void *user, const char *what, uint64_t done, uint64_t total) {
    (void)user;
    if (total)
        fprintf(stderr, "\r%s: %llu/%llu (%3.0f%%)", what, (unsigned long long)done,
                (unsigned long long)total, 100.0 * (double)done / (double)total);
    else
        fprintf(stderr, "\r%s: %llu", what, (unsigned long long)done);
    if (done == total) fputs("\r\033[K", stderr);
    fflush(stderr);
}

/* ---------------------------------------------------------------- optimize */

/* Flags that map one to one onto library options (tileopt_ctx_set). */
static const struct {
    const char *flag;
    const char *option;
    bool takes_value;
    bool limit;              /* a resource limit: every command takes it */
} option_flags[] = {
    {"--target-opset", "target-opset", true, false},
    {"--fold-limit", "fold-limit", true, false},
    {"--fold-max-growth", "fold-max-growth", true, false},
    {"--fold-scope", "fold-scope", true, false},
    {"--fuse-split", "fuse-split", false, false},
    {"--keep-initializer-inputs", "keep-initializer-inputs", false, false},
    {"--seed", "seed", true, false},
    {"--max-tensor-bytes", "max-tensor-bytes", true, true},
    {"--max-eval-bytes", "max-eval-bytes", true, true},
    {"--max-eval-steps", "max-eval-steps", true, true},
    {"--max-depth", "max-depth", true, true},
    {"--max-rank", "max-rank", true, true},
};

int cmd_option_flag(tileopt_ctx *ctx, int argc, char **argv, int *i, bool limits_only) {
    const char *s = argv[*i];
    size_t k = 0, n = sizeof option_flags / sizeof option_flags[0];
    while (k < n && strcmp(option_flags[k].flag, s) != 0) k++;
    if (k == n || (limits_only && !option_flags[k].limit)) return -1;
    const char *value = "1";
    if (option_flags[k].takes_value) {
        if (*i + 1 >= argc) return tool_error(EXIT_USAGE, "%s needs a value", s);
        value = argv[++*i];
    }
    if (tileopt_ctx_set(ctx, option_flags[k].option, value) != TILEOPT_OK)
        return tool_error(EXIT_USAGE, "%s", tileopt_ctx_errmsg(ctx));
    return 0;
}

typedef struct opt_args {
    const char *in, *out, *passes, *report;
    bool verify, quiet, infer_shapes;
} opt_args;

static void known_passes(char *buf, size_t cap) {
    buf[0] = '\0';
    for (size_t i = 0; tileopt_pass_name(i); i++) {
        if (i) strncat(buf, ", ", cap - strlen(buf) - 1);
        strncat(buf, tileopt_pass_name(i), cap - strlen(buf) - 1);
    }
    if (!buf[0]) strncat(buf, "(none yet)", cap - 1);
}

/* Split --passes into names, checking each; "none" gives an empty list. */
static int parse_passes(const char *spec, const char **names, size_t cap, size_t *count,
                        char *storage, size_t storage_cap) {
    *count = 0;
    if (!spec) {
        for (size_t i = 0; tileopt_pass_name(i) && i < cap; i++) names[(*count)++] = tileopt_pass_name(i);
        return EXIT_OK;
    }
    if (strcmp(spec, "none") == 0) return EXIT_OK;
    snprintf(storage, storage_cap, "%s", spec);
    for (char *tok = strtok(storage, ","); tok; tok = strtok(NULL, ",")) {
        bool found = false;
        for (size_t i = 0; tileopt_pass_name(i); i++) found |= strcmp(tileopt_pass_name(i), tok) == 0;
        if (!found) {
            char known[256];
            known_passes(known, sizeof known);
            return tool_error(EXIT_USAGE, "unknown pass '%s' in --passes (known: %s, or none)",
                              tok, known);
        }
        if (*count == cap) return tool_error(EXIT_USAGE, "too many passes in --passes");
        names[(*count)++] = tok;
    }
    if (!*count) return tool_error(EXIT_USAGE, "--passes is empty");
    return EXIT_OK;
}

static int write_report(tileopt_ctx *ctx, const char *dest) {
    if (strcmp(dest, "-") != 0) {
        if (tileopt_report_save(ctx, dest) == TILEOPT_OK) return EXIT_OK;
        return tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
    }
    char *text;
    if (tileopt_report_string(ctx, &text) != TILEOPT_OK)
        return tool_error(EXIT_FAIL, "report: out of memory");
    puts(text);
    tileopt_free(text);
    return EXIT_OK;
}

/* path with its folder resolved (symlinks, "." and ".."): two spellings of a file
** that does not exist yet resolve alike. false when the folder does not exist. */
static bool resolve_path(const char *path, char *out) {
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    char real[PATH_MAX];
    if (!realpath(dir, real)) return false;
    return snprintf(out, PATH_MAX, "%s/%s", real, base) < PATH_MAX;
}

/* True when a and b name one file, however spelled: ./m.onnx, a symlink, a hard
** link (one inode), or the same resolved path when either does not exist yet. */
static bool same_file(const char *a, const char *b) {
    struct stat sa, sb;
    bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea != eb) return false;
    char ra[PATH_MAX], rb[PATH_MAX];
    return resolve_path(a, ra) && resolve_path(b, rb) && strcmp(ra, rb) == 0;
}

/* Refuse, before anything is read or written, the paths that would destroy data:
** OUT or the report naming the input, the report naming OUT, and a destination
** that exists but is no regular file (the atomic rename would replace a device
** such as /dev/null with a file, or fail on a folder only after all the work). */
static int check_paths(const opt_args *a) {
    if (same_file(a->in, a->out))
        return tool_error(EXIT_USAGE, "-o '%s' is the input model: write to another file",
                          a->out);
    const char *dests[2] = {a->out, a->report && strcmp(a->report, "-") ? a->report : NULL};
    for (size_t i = 0; i < 2; i++) {
        struct stat st;
        if (dests[i] && stat(dests[i], &st) == 0 && !S_ISREG(st.st_mode))
            return tool_error(EXIT_FAIL, "'%s' exists and is not a regular file%s", dests[i],
                              i ? " (--report - writes to stdout)" : "");
    }
    if (!dests[1]) return EXIT_OK;
    if (same_file(a->in, a->report))
        return tool_error(EXIT_USAGE, "--report '%s' is the input model", a->report);
    if (same_file(a->out, a->report))
        return tool_error(EXIT_USAGE, "--report '%s' is the output model", a->report);
    return EXIT_OK;
}

/* The name lists of a pass's "changes" in the report, as the summary words them. */
static const struct {
    const char *key, *words;
} change_words[] = {
    {"initializers_removed", "initializers removed"},
    {"initializers_added", "initializers added"},
    {"inputs_removed", "graph inputs removed"},
    {"inputs_added", "graph inputs added"},
    {"value_info_removed", "value_info removed"},
};

static double default_opset(const cJSON *summary) {
    const cJSON *o;
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(summary, "opset_import")) {
        const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "domain"));
        if (d && (!d[0] || strcmp(d, "ai.onnx") == 0))
            return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "version"));
    }
    return 0;
}

static void print_summary(tileopt_ctx *ctx, FILE *f) {
    const cJSON *r = tileopt_report_json(ctx);
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(r, "input");
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(r, "output");
#define NUM(o, k) cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k))
    fprintf(f, "%s -> %s\n", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(in, "path")),
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(out, "path")));
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(r, "passes")) {
        const cJSON *a;
        int done = 0, skipped = 0;
        cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(p, "actions")) {
            const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "action"));
            if (kind && strcmp(kind, "skipped") == 0) skipped++;
            else done++;
        }
        fprintf(f, "  %-8s %4d changes, %4d skipped, %.1f ms",
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "name")), done, skipped,
                NUM(p, "duration_ms"));
        const cJSON *changes = cJSON_GetObjectItemCaseSensitive(p, "changes");
        const char *sep = "; ";
        for (size_t k = 0; k < sizeof change_words / sizeof change_words[0]; k++) {
            int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(changes, change_words[k].key));
            if (!n) continue;
            fprintf(f, "%s%d %s", sep, n, change_words[k].words);
            sep = ", ";
        }
        fputc('\n', f);
    }
    fprintf(f, "  nodes %.0f -> %.0f, Tile %.0f -> %.0f, initializers %.0f -> %.0f bytes, file %.0f -> %.0f bytes\n",
            NUM(in, "nodes"), NUM(out, "nodes"), NUM(in, "tiles"), NUM(out, "tiles"),
            NUM(in, "initializer_bytes"), NUM(out, "initializer_bytes"), NUM(in, "file_bytes"),
            NUM(out, "file_bytes"));
    double op_in = default_opset(in), op_out = default_opset(out);
    double ir_in = NUM(in, "ir_version"), ir_out = NUM(out, "ir_version");
    if (op_in != op_out && ir_in != ir_out)
        fprintf(f, "  opset %.0f -> %.0f, IR %.0f -> %.0f\n", op_in, op_out, ir_in, ir_out);
    else if (op_in != op_out)
        fprintf(f, "  opset %.0f -> %.0f\n", op_in, op_out);
    else if (ir_in != ir_out)
        fprintf(f, "  IR %.0f -> %.0f\n", ir_in, ir_out);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "verify");
    if (v) fprintf(f, "  verify: %s\n", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "verdict")));
    const cJSON *w;
    cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(r, "warnings"))
        fprintf(f, "  warning: %s\n", cJSON_GetStringValue(w));
#undef NUM
}

/* The output size the report states now. */
static double output_file_bytes(tileopt_ctx *ctx) {
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(tileopt_report_json(ctx), "output");
    return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(out, "file_bytes"));
}

static int optimize(tileopt_ctx *ctx, const opt_args *a, const char *const *passes,
                    size_t n_passes) {
    tileopt_model *model = NULL, *before = NULL;
    int rc = EXIT_FAIL;
    if (tileopt_model_load(ctx, a->in, &model) != TILEOPT_OK ||
        (a->verify && tileopt_model_load(ctx, a->in, &before) != TILEOPT_OK)) {
        tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
        goto done;
    }
    tileopt_report_begin(ctx, model, a->in);
    for (size_t i = 0; i < n_passes; i++) {
        if (tileopt_pass_run(ctx, model, passes[i]) != TILEOPT_OK) {
            tool_error(EXIT_FAIL, "pass %s: %s", passes[i], tileopt_ctx_errmsg(ctx));
            goto report;
        }
    }
    if (a->infer_shapes && tileopt_model_infer_shapes(ctx, model) != TILEOPT_OK) {
        tool_error(EXIT_FAIL, "infer shapes: %s", tileopt_ctx_errmsg(ctx));
        goto report;
    }
    if (a->verify && tileopt_model_verify(ctx, before, model) != TILEOPT_OK) {
        tool_error(EXIT_FAIL, "verify: %s", tileopt_ctx_errmsg(ctx));
        goto report;
    }
    /* The report goes first, with the size the output will have: when it cannot
    ** be written the run fails before OUT is touched. */
    tileopt_report_end(ctx, model, a->out);
    if (a->report && strcmp(a->report, "-") != 0 && write_report(ctx, a->report) != EXIT_OK)
        goto done;
    double predicted = output_file_bytes(ctx);
    if (tileopt_model_save(ctx, model, a->out) != TILEOPT_OK) {
        tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
        goto report;
    }
    rc = EXIT_OK;
    /* OUT is in place: the report is rewritten only when the save's size differs
    ** from the prediction (tensors moved to external data), and a rewrite that
    ** fails leaves the first report and a warning, never a failed run. */
    tileopt_report_end(ctx, model, a->out);
    if (a->report && strcmp(a->report, "-") != 0 && output_file_bytes(ctx) != predicted &&
        tileopt_report_save(ctx, a->report) != TILEOPT_OK)
        fprintf(stderr, "tileopt: warning: %s (it states the predicted output size)\n",
                tileopt_ctx_errmsg(ctx));
    if (a->report && strcmp(a->report, "-") == 0) write_report(ctx, a->report);
    goto summary;
report:
    tileopt_report_end(ctx, model, a->out);
    if (a->report) write_report(ctx, a->report);
summary:
    if (rc == EXIT_OK && !a->quiet)
        print_summary(ctx, a->report && strcmp(a->report, "-") == 0 ? stderr : stdout);
done:
    tileopt_model_free(model);
    tileopt_model_free(before);
    return rc;
}

static int cmd_optimize(tileopt_ctx *ctx, int argc, char **argv) {
    opt_args a = {0};
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        bool has_next = i + 1 < argc;
        if (strcmp(s, "-o") == 0 || strcmp(s, "--output") == 0) {
            if (!has_next) return tool_error(EXIT_USAGE, "%s needs a path", s);
            a.out = argv[++i];
        } else if (strcmp(s, "--passes") == 0) {
            if (!has_next) return tool_error(EXIT_USAGE, "--passes needs a list");
            a.passes = argv[++i];
        } else if (strcmp(s, "--report") == 0) {
            if (!has_next) return tool_error(EXIT_USAGE, "--report needs a path or -");
            a.report = argv[++i];
        } else if (strcmp(s, "--infer-shapes") == 0) {
            a.infer_shapes = true;
        } else if (strcmp(s, "--verify") == 0) {
            a.verify = true;
        } else if (strcmp(s, "--quiet") == 0 || strcmp(s, "-q") == 0) {
            a.quiet = true;
        } else if (s[0] == '-' && s[1]) {
            int rc = cmd_option_flag(ctx, argc, argv, &i, false);
            if (rc < 0) return tool_error(EXIT_USAGE, "unknown option '%s'", s);
            if (rc) return rc;
        } else if (!a.in) {
            a.in = s;
        } else {
            return tool_error(EXIT_USAGE, "unexpected argument '%s'", s);
        }
    }
    if (!a.in) return tool_error(EXIT_USAGE, "optimize needs an input model");
    if (!a.out) return tool_error(EXIT_USAGE, "optimize needs -o OUT.onnx");
    int prc = check_paths(&a);
    if (prc) return prc;
    if (!a.quiet && isatty(STDERR_FILENO)) tileopt_ctx_set_progress(ctx, progress, NULL);
    const char *names[64];
    size_t n_names;
    char storage[1024];
    int rc = parse_passes(a.passes, names, 64, &n_names, storage, sizeof storage);
    if (rc) return rc;
    return optimize(ctx, &a, names, n_names);
}

/* ----------------------------------------------------------------- inspect */

static void print_shape(const cJSON *shape) {
    if (!cJSON_IsArray(shape)) {
        fputs("?", stdout);
        return;
    }
    const cJSON *d;
    fputs("[", stdout);
    int i = 0;
    cJSON_ArrayForEach(d, shape) {
        if (i++) fputs(",", stdout);
        if (cJSON_IsNumber(d)) printf("%.0f", d->valuedouble);
        else if (cJSON_IsString(d)) fputs(d->valuestring, stdout);
        else fputs("?", stdout);
    }
    fputs("]", stdout);
}

static int cmd_inspect(tileopt_ctx *ctx, int argc, char **argv) {
    const char *path = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        int rc;
        if (strcmp(argv[i], "--json") == 0) json = true;
        else if (argv[i][0] == '-' && argv[i][1] && (rc = cmd_option_flag(ctx, argc, argv, &i, true)) >= 0) {
            if (rc) return rc;
        } else if (argv[i][0] == '-' && argv[i][1]) return tool_error(EXIT_USAGE, "unknown option '%s'", argv[i]);
        else if (!path) path = argv[i];
        else return tool_error(EXIT_USAGE, "unexpected argument '%s'", argv[i]);
    }
    if (!path) return tool_error(EXIT_USAGE, "inspect needs a model");
    tileopt_model *m;
    if (tileopt_model_load(ctx, path, &m) != TILEOPT_OK)
        return tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
    char *text;
    tileopt_status st = tileopt_model_inspect(ctx, m, &text);
    tileopt_model_free(m);
    if (st != TILEOPT_OK) return tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
    if (json) {
        puts(text);
        tileopt_free(text);
        return EXIT_OK;
    }
    cJSON *o = cJSON_Parse(text);
    tileopt_free(text);
    if (!o) return tool_error(EXIT_FAIL, "out of memory");
#define NUM(k) cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k))
    printf("%s\n  ir_version %.0f, producer '%s'\n  opsets:", path, NUM("ir_version"),
           cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "producer")));
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "opset_import")) {
        const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "domain"));
        printf(" %s=%.0f", d && d[0] ? d : "ai.onnx",
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "version")));
    }
    printf("\n  nodes %.0f, initializers %.0f (%.0f bytes)\n", NUM("nodes"), NUM("initializers"),
           NUM("initializer_bytes"));
    const cJSON *tiles = cJSON_GetObjectItemCaseSensitive(o, "tiles");
    printf("  Tile nodes: %d\n", cJSON_GetArraySize(tiles));
#undef NUM
    cJSON_ArrayForEach(e, tiles) {
        printf("    %s (%s): ", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "node")),
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "form")));
        print_shape(cJSON_GetObjectItemCaseSensitive(e, "input_shape"));
        fputs(" x repeats ", stdout);
        print_shape(cJSON_GetObjectItemCaseSensitive(e, "repeats"));
        fputs(" -> ", stdout);
        print_shape(cJSON_GetObjectItemCaseSensitive(e, "output_shape"));
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(e, "graph");
        if (g) printf("  (inside %s)", cJSON_GetStringValue(g));
        fputs("\n", stdout);
    }
    cJSON_Delete(o);
    return EXIT_OK;
}

/* -------------------------------------------------------------------- main */

int main(int argc, char **argv) {
    if (argc < 2) return tool_error(EXIT_USAGE, "no command given");
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage_text, stdout);
        return EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("tileopt %s\n", tileopt_version());
        return EXIT_OK;
    }
    tileopt_ctx *ctx;
    if (tileopt_ctx_new(&ctx) != TILEOPT_OK) return tool_error(EXIT_FAIL, "out of memory");
    clean_up_on_signals(ctx);
    int rc;
    if (strcmp(cmd, "run") == 0)
        rc = cmd_run(ctx, argc - 1, argv + 1);
    else if (strcmp(cmd, "optimize") == 0)
        rc = cmd_optimize(ctx, argc - 1, argv + 1);
    else if (strcmp(cmd, "inspect") == 0)
        rc = cmd_inspect(ctx, argc - 1, argv + 1);
    else
        rc = tool_error(EXIT_USAGE, "unknown command '%s'", cmd);
    tileopt_ctx_free(ctx);
    return rc;
}

/*
** `tileopt optimize IN.onnx -o OUT.onnx ...`: load, run the passes, verify, write
** the report and OUT, and print the summary.
*/
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"

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
            char known[1024];
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
    tileopt_pass_stat stat;
    const char *words;
} change_words[] = {
    {TILEOPT_PASS_INITIALIZERS_REMOVED, "initializers removed"},
    {TILEOPT_PASS_INITIALIZERS_ADDED, "initializers added"},
    {TILEOPT_PASS_INPUTS_REMOVED, "graph inputs removed"},
    {TILEOPT_PASS_INPUTS_ADDED, "graph inputs added"},
    {TILEOPT_PASS_VALUE_INFO_REMOVED, "value_info removed"},
};

/* Nodes of op type `op` in the model on that side of the report. */
static uint64_t op_nodes(const tileopt_ctx *ctx, tileopt_side side, const char *op) {
    for (size_t i = 0; i < tileopt_report_op_count(ctx, side); i++) {
        uint64_t n;
        if (strcmp(tileopt_report_op(ctx, side, i, &n), op) == 0) return n;
    }
    return 0;
}

/* One row per op type, nodes before and after: changed rows first, then the
** rest, each group most frequent first. */
static void print_op_table(FILE *f, const tileopt_ctx *ctx) {
    size_t nb = tileopt_report_op_count(ctx, TILEOPT_INPUT);
    size_t na = tileopt_report_op_count(ctx, TILEOPT_OUTPUT);
    struct row { const char *op; uint64_t b, a; } *rows = malloc((nb + na + 1) * sizeof *rows);
    if (!rows) return;
    size_t n = 0;
    for (size_t i = 0; i < nb; i++) {
        rows[n].op = tileopt_report_op(ctx, TILEOPT_INPUT, i, &rows[n].b);
        rows[n].a = op_nodes(ctx, TILEOPT_OUTPUT, rows[n].op);
        n++;
    }
    for (size_t i = 0; i < na; i++) {
        const char *op = tileopt_report_op(ctx, TILEOPT_OUTPUT, i, &rows[n].a);
        if (op_nodes(ctx, TILEOPT_INPUT, op)) continue;
        rows[n].op = op;
        rows[n].b = 0;
        n++;
    }
    for (size_t i = 1; i < n; i++) /* insertion sort: op types are few */
        for (size_t j = i; j > 0; j--) {
            struct row *x = &rows[j - 1], *y = &rows[j];
            bool cx = x->b != x->a, cy = y->b != y->a;
            uint64_t mx = x->b > x->a ? x->b : x->a, my = y->b > y->a ? y->b : y->a;
            bool in_order = cx != cy ? cx : mx != my ? mx > my : strcmp(x->op, y->op) <= 0;
            if (in_order) break;
            struct row t = *x;
            *x = *y;
            *y = t;
        }
    fprintf(f, "  %-24s %8s %8s\n", "op", "before", "after");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "  %-24s %8llu %8llu%s\n", rows[i].op, (unsigned long long)rows[i].b,
                (unsigned long long)rows[i].a, rows[i].b != rows[i].a ? "  *" : "");
    free(rows);
}

#define STAT(side, s) tileopt_report_model_stat(ctx, side, TILEOPT_MODEL_##s)

/* Model size: the .onnx file plus its external data, with the files named. */
static void print_sizes(FILE *f, const tileopt_ctx *ctx) {
    char b1[32], b2[32], b3[32], b4[32];
    double ext_in = (double)STAT(TILEOPT_INPUT, EXTERNAL_DATA_BYTES);
    double ext_out = (double)STAT(TILEOPT_OUTPUT, EXTERNAL_DATA_BYTES);
    fprintf(f, "  model size %s -> %s",
            cli_human_bytes((double)STAT(TILEOPT_INPUT, FILE_BYTES) + ext_in, b1, sizeof b1),
            cli_human_bytes((double)STAT(TILEOPT_OUTPUT, FILE_BYTES) + ext_out, b2, sizeof b2));
    fprintf(f, " (initializers %s -> %s, external data %s -> %s)\n",
            cli_human_bytes((double)STAT(TILEOPT_INPUT, INITIALIZER_BYTES), b1, sizeof b1),
            cli_human_bytes((double)STAT(TILEOPT_OUTPUT, INITIALIZER_BYTES), b2, sizeof b2),
            cli_human_bytes(ext_in, b3, sizeof b3), cli_human_bytes(ext_out, b4, sizeof b4));
    for (int k = 0; k < 2; k++) {
        tileopt_side side = k ? TILEOPT_OUTPUT : TILEOPT_INPUT;
        size_t n = tileopt_report_data_file_count(ctx, side);
        if (!n) continue;
        fprintf(f, "  external data of the %s:", k ? "output" : "input");
        for (size_t i = 0; i < n; i++) fprintf(f, " %s", tileopt_report_data_file(ctx, side, i));
        fputc('\n', f);
    }
}

static void print_summary(tileopt_ctx *ctx, const opt_args *args, FILE *f) {
    cli_progress_clear();
    fprintf(f, "%s -> %s\n", tileopt_report_path(ctx, TILEOPT_INPUT),
            tileopt_report_path(ctx, TILEOPT_OUTPUT));
    for (size_t i = 0; i < tileopt_report_pass_count(ctx); i++) {
        int done = (int)tileopt_report_pass_stat(ctx, i, TILEOPT_PASS_NODES_CHANGED);
        int skipped = (int)tileopt_report_pass_stat(ctx, i, TILEOPT_PASS_NODES_SKIPPED);
        fprintf(f, "  %-8s %4d node%s changed, %4d skipped, %.1f ms",
                tileopt_report_pass_name(ctx, i), done, done == 1 ? "" : "s", skipped,
                tileopt_report_pass_ms(ctx, i));
        const char *sep = "; ";
        for (size_t k = 0; k < sizeof change_words / sizeof change_words[0]; k++) {
            int n = (int)tileopt_report_pass_stat(ctx, i, change_words[k].stat);
            if (!n) continue;
            fprintf(f, "%s%d %s", sep, n, change_words[k].words);
            sep = ", ";
        }
        fputc('\n', f);
    }
    print_op_table(f, ctx);
    fprintf(f, "  nodes %lld -> %lld, Tile %lld -> %lld\n", (long long)STAT(TILEOPT_INPUT, NODES),
            (long long)STAT(TILEOPT_OUTPUT, NODES), (long long)STAT(TILEOPT_INPUT, TILES),
            (long long)STAT(TILEOPT_OUTPUT, TILES));
    print_sizes(f, ctx);
    int64_t op_in = STAT(TILEOPT_INPUT, OPSET), op_out = STAT(TILEOPT_OUTPUT, OPSET);
    int64_t ir_in = STAT(TILEOPT_INPUT, IR_VERSION), ir_out = STAT(TILEOPT_OUTPUT, IR_VERSION);
    const char *why_opset = args->target_asked ? "--target-opset asks for it"
                            : "opsets below 7 go to 13 by default: no current runtime runs "
                              "Tile-1 or the legacy broadcast";
    if (op_in != op_out && ir_in != ir_out)
        fprintf(f, "  opset %lld -> %lld, IR %lld -> %lld (%s; the IR version is the one the "
                "opset needs)\n", (long long)op_in, (long long)op_out, (long long)ir_in,
                (long long)ir_out, why_opset);
    else if (op_in != op_out)
        fprintf(f, "  opset %lld -> %lld (%s)\n", (long long)op_in, (long long)op_out, why_opset);
    else if (ir_in != ir_out)
        fprintf(f, "  IR %lld -> %lld\n", (long long)ir_in, (long long)ir_out);
    const char *why;
    tileopt_verdict v = tileopt_report_verdict(ctx, &why);
    if (v != TILEOPT_VERDICT_NONE)
        fprintf(f, "  verify: %s%s%s\n", tileopt_verdict_str(v), why ? ": " : "", why ? why : "");
    for (size_t i = 0; i < tileopt_report_warning_count(ctx); i++)
        fprintf(f, "  warning: %s\n", tileopt_report_warning(ctx, i));
}

/* Whether the last pass the report lists is `name` and failed. */
static bool failed_pass_is(tileopt_ctx *ctx, const char *name) {
    size_t n = tileopt_report_pass_count(ctx);
    const char *got = n ? tileopt_report_pass_name(ctx, n - 1) : NULL;
    return got && strcmp(got, name) == 0 && tileopt_report_pass_error(ctx, n - 1);
}

/* The output size the report states now. */
static double output_file_bytes(tileopt_ctx *ctx) {
    return (double)STAT(TILEOPT_OUTPUT, FILE_BYTES);
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
    if (tileopt_report_begin(ctx, model, a->in) != TILEOPT_OK) {
        tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
        goto done;
    }
    tileopt_status st = tileopt_passes_run(ctx, model, passes, n_passes);
    if (st != TILEOPT_OK) {
        tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
        if (st == TILEOPT_UNSUPPORTED && failed_pass_is(ctx, "upgrade"))
            fputs("(to go on: --passes fold,fuse keeps the model's opset, or give a "
                  "--target-opset that every node listed allows)\n", stderr);
        goto report;
    }
    if (a->infer_shapes && tileopt_model_infer_shapes(ctx, model) != TILEOPT_OK) {
        tool_error(EXIT_FAIL, "infer shapes: %s", tileopt_ctx_errmsg(ctx));
        goto report;
    }
    if (a->verify && tileopt_model_verify(ctx, before, model) != TILEOPT_OK) {
        tool_error(EXIT_FAIL, "verify: %s", tileopt_ctx_errmsg(ctx));
        goto report;
    }
    /* A report file goes first, with the size the output will have: when it
    ** cannot be written the run fails before OUT is touched. A report on stdout
    ** comes after the save, but is made here too, so that it exists whatever
    ** happens after OUT is in place. (Predicting the size walks the whole
    ** model, so a run without a report skips it.) */
    bool file_report = a->report && strcmp(a->report, "-") != 0;
    double predicted = 0;
    if (a->report) {
        if (tileopt_report_end(ctx, model, a->out) != TILEOPT_OK) {
            tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
            goto done;
        }
        if (file_report && write_report(ctx, a->report) != EXIT_OK) goto done;
        predicted = output_file_bytes(ctx);
    }
    if (tileopt_model_save(ctx, model, a->out) != TILEOPT_OK) {
        tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
        goto report;
    }
    rc = EXIT_OK;
    /* OUT is in place: the report is rewritten only when the save's size differs
    ** from the prediction (tensors moved to external data), and a rewrite that
    ** fails leaves the first report and a warning, never a failed run. */
    if (tileopt_report_end(ctx, model, a->out) != TILEOPT_OK) {
        if (!a->report) { /* nothing to summarize from */
            if (!a->quiet)
                fprintf(stderr, "tileopt: warning: %s (no summary)\n", tileopt_ctx_errmsg(ctx));
            goto done;
        }
        fprintf(stderr, "tileopt: warning: %s (the report states the predicted output size)\n",
                tileopt_ctx_errmsg(ctx));
    } else if (file_report && output_file_bytes(ctx) != predicted &&
               tileopt_report_save(ctx, a->report) != TILEOPT_OK) {
        fprintf(stderr, "tileopt: warning: %s (it states the predicted output size)\n",
                tileopt_ctx_errmsg(ctx));
    }
    if (a->report && strcmp(a->report, "-") == 0) write_report(ctx, a->report);
    goto summary;
report:
    tileopt_report_end(ctx, model, a->out);
    if (a->report) write_report(ctx, a->report);
summary:
    if (rc == EXIT_OK && !a->quiet)
        print_summary(ctx, a, a->report && strcmp(a->report, "-") == 0 ? stderr : stdout);
done:
    tileopt_model_free(model);
    tileopt_model_free(before);
    return rc;
}

/* One model of a batch: its paths checked as a single run's are. */
static int optimize_checked(tileopt_ctx *ctx, const opt_args *a, const char *const *passes,
                            size_t n_passes) {
    int rc = check_paths(a);
    return rc ? rc : optimize(ctx, a, passes, n_passes);
}

/* "I/N" with 0 <= I < N. */
static bool parse_shard(const char *s, int *i, int *n) {
    char *end;
    long a = strtol(s, &end, 10);
    if (end == s || *end != '/') return false;
    const char *t = end + 1;
    long b = strtol(t, &end, 10);
    if (end == t || *end || b < 1 || b > 1000000 || a < 0 || a >= b) return false;
    *i = (int)a;
    *n = (int)b;
    return true;
}

static const char optimize_help[] =
    "usage: tileopt optimize IN.onnx -o OUT.onnx [options]\n"
    "       tileopt optimize IN... -o OUTDIR [-j N] [--shard I/N] [options]\n"
    "Runs the passes on IN and writes OUT atomically; IN is never modified.\n"
    "With several inputs, or a folder (searched for *.onnx), each model is written\n"
    "under OUTDIR at its relative path, in a process of its own; a failed model is\n"
    "a row of the final table and the exit code is 1.\n"
    "options:\n"
    "  -o, --output OUT.onnx     the optimized model (required; never IN itself), or\n"
    "                            the output folder of a batch\n"
    "  -j, --jobs N              batch: models optimized at once (default: the number\n"
    "                            of cores)\n"
    "  --shard I/N               batch: only the I-th (0 to N-1) of N contiguous slices\n"
    "                            of the sorted model list (default: all)\n"
    "  --passes LIST             passes in order, comma-separated, or none (load and\n"
    "                            save only) (default: every pass, in the order upgrade,\n"
    "                            fold, fuse, gqa, then the simplifications eliminate_*\n"
    "                            and fuse_*; an unknown name lists them all)\n"
    "  --target-opset N          the opset upgrade converts to, 1 to 26, up or down\n"
    "                            (default: the model's own from opset 7, else 13)\n"
    "  --keep-initializer-inputs keep initializers listed as graph inputs when the IR\n"
    "                            goes past 3 (default: take them out)\n"
    "  --fold-scope tile|all     fold Tiles and what feeds them, or every constant node\n"
    "                            (default all)\n"
    "  --fold-limit SIZE         most bytes one fold may add to the model, what it\n"
    "                            writes less what goes with it (default 0: never grow)\n"
    "  --fold-max-growth K       also refuse outputs over K times their constant inputs\n"
    "                            (default 0: off)\n"
    "  --fuse-split              fuse a Tile into a binary op with a full-size operand\n"
    "                            by reshaping both to broadcast (default off)\n"
    "  --input-shape NAME:D1,... fix a graph input's dims (repeatable; default none)\n"
    "  --infer-shapes            write inferred types and shapes into value_info\n"
    "                            (default off)\n"
    "  --verify[=strict]         run IN and OUT on the same random inputs and fail on a\n"
    "                            difference; strict also fails without a verdict\n"
    "                            (default off)\n"
    "  --seed N                  seed of --verify's inputs (default 1)\n"
    "  --report FILE|-           write the JSON report to FILE or stdout; for a batch\n"
    "                            a folder: one report per model and batch.json\n"
    "                            (default none)\n"
    "  -q, --quiet               no progress and no summary (default: progress on a\n"
    "                            terminal, summary on stdout)\n";

/* The command line of `optimize`: one model's options, its inputs, and the
** batch's. */
typedef struct opt_cmd {
    opt_args a;
    char **inputs;
    size_t n_inputs;
    int jobs, shard_i, shard_n; /* 0: not given */
} opt_cmd;

static int parse_args(tileopt_ctx *ctx, int argc, char **argv, opt_cmd *c);
static int run_optimize(tileopt_ctx *ctx, opt_cmd *c);

int cmd_optimize(tileopt_ctx *ctx, int argc, char **argv) {
    if (cli_wants_help(argc, argv, optimize_help)) return EXIT_OK;
    opt_cmd c = {.inputs = calloc((size_t)argc, sizeof *c.inputs)};
    if (!c.inputs) return tool_error(EXIT_FAIL, "out of memory");
    int rc = parse_args(ctx, argc, argv, &c);
    if (rc == EXIT_OK) rc = run_optimize(ctx, &c);
    free(c.inputs);
    return rc;
}

static int parse_args(tileopt_ctx *ctx, int argc, char **argv, opt_cmd *c) {
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
        } else if (strcmp(s, "--verify") == 0 || strcmp(s, "--verify=strict") == 0) {
            a.verify = true;
            /* strict: a model the evaluator cannot run fails the command */
            if (s[8] && tileopt_ctx_set(ctx, "verify-strict", "1") != TILEOPT_OK)
                return tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
        } else if (strcmp(s, "--quiet") == 0 || strcmp(s, "-q") == 0) {
            a.quiet = true;
        } else if (strcmp(s, "-j") == 0 || strcmp(s, "--jobs") == 0) {
            char *end;
            long j = has_next ? strtol(argv[i + 1], &end, 10) : 0;
            if (!has_next || *end || end == argv[i + 1] || j < 1 || j > 4096)
                return tool_error(EXIT_USAGE, "%s needs a number of jobs from 1 to 4096", s);
            c->jobs = (int)j;
            i++;
        } else if (strcmp(s, "--shard") == 0) {
            if (!has_next || !parse_shard(argv[i + 1], &c->shard_i, &c->shard_n))
                return tool_error(EXIT_USAGE, "--shard needs I/N with 0 <= I < N");
            i++;
        } else if (s[0] == '-' && s[1]) {
            if (strcmp(s, "--target-opset") == 0) a.target_asked = true;
            int rc = cmd_option_flag(ctx, argc, argv, &i, false);
            if (rc < 0) return tool_error(EXIT_USAGE, "unknown option '%s'", s);
            if (rc) return rc;
        } else {
            c->inputs[c->n_inputs++] = argv[i];
        }
    }
    if (!c->n_inputs) return tool_error(EXIT_USAGE, "optimize needs an input model");
    a.in = c->inputs[0];
    if (!a.out) return tool_error(EXIT_USAGE, "optimize needs -o OUT.onnx");
    c->a = a;
    return EXIT_OK;
}

static int run_optimize(tileopt_ctx *ctx, opt_cmd *c) {
    opt_args a = c->a;
    struct stat st;
    bool batch = c->n_inputs > 1 || (stat(a.in, &st) == 0 && S_ISDIR(st.st_mode));
    if (!batch && (c->jobs || c->shard_n))
        return tool_error(EXIT_USAGE, "-j and --shard apply to several models or a folder");
    const char *names[64];
    size_t n_names;
    char storage[1024];
    int rc = parse_passes(a.passes, names, 64, &n_names, storage, sizeof storage);
    if (rc) return rc;
    bool tty = !a.quiet && isatty(STDERR_FILENO);
    if (batch) {
        if (a.report && strcmp(a.report, "-") == 0)
            return tool_error(EXIT_USAGE, "--report - writes one report: a batch needs a folder");
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        batch_opts b = {&a, a.out, a.report, names, n_names,
                        c->jobs ? c->jobs : (cores > 0 ? (int)cores : 1), c->shard_i,
                        c->shard_n, a.quiet, tty, optimize_checked};
        return cmd_batch(ctx, &b, c->inputs, c->n_inputs);
    }
    int prc = check_paths(&a);
    if (prc) return prc;
    if (tty) tileopt_ctx_set_progress(ctx, cli_progress, NULL);
    return optimize(ctx, &a, names, n_names);
}

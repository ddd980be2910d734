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

/* Is tok a pass name? Else a usage error naming the option it came from. */
static int check_pass(const char *tok, const char *option) {
    for (size_t i = 0; tileopt_pass_name(i); i++)
        if (strcmp(tileopt_pass_name(i), tok) == 0) return EXIT_OK;
    char known[1024];
    known_passes(known, sizeof known);
    return tool_error(EXIT_USAGE, "unknown pass '%s' in %s (known: %s, or none)", tok, option,
                      known);
}

/* Split --passes into names, checking each ("none" gives an empty list), then
** drop those --skip-passes names. */
static int parse_passes(const char *spec, const char *skip, const char **names, size_t cap,
                        size_t *count, char *storage, size_t storage_cap) {
    *count = 0;
    if (!spec) {
        for (size_t i = 0; tileopt_pass_name(i) && i < cap; i++) names[(*count)++] = tileopt_pass_name(i);
    } else if (strcmp(spec, "none") != 0) {
        snprintf(storage, storage_cap, "%s", spec);
        for (char *tok = strtok(storage, ","); tok; tok = strtok(NULL, ",")) {
            if (check_pass(tok, "--passes")) return EXIT_USAGE;
            if (*count == cap) return tool_error(EXIT_USAGE, "too many passes in --passes");
            names[(*count)++] = tok;
        }
        if (!*count) return tool_error(EXIT_USAGE, "--passes is empty");
    }
    if (!skip) return EXIT_OK;
    char left_out[1024];
    snprintf(left_out, sizeof left_out, "%s", skip);
    size_t kept = *count;
    for (char *tok = strtok(left_out, ","); tok; tok = strtok(NULL, ",")) {
        if (check_pass(tok, "--skip-passes")) return EXIT_USAGE;
        size_t k = 0;
        for (size_t i = 0; i < kept; i++)
            if (strcmp(names[i], tok) != 0) names[k++] = names[i];
        kept = k;
    }
    *count = kept;
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

/* Refuse, before anything is read or written, the paths that would destroy data:
** OUT or the report naming the input, the report naming OUT, and a destination
** that exists but is no regular file (the atomic rename would replace a device
** such as /dev/null with a file, or fail on a folder only after all the work). */
static int check_paths(const opt_args *a) {
    if (cli_same_file(a->in, a->out))
        return tool_error(EXIT_USAGE, "OUT '%s' is the input model: write to another file",
                          a->out);
    /* the files written besides OUT, each checked against what it must not
    ** overwrite */
    const struct { const char *path, *flag, *hint; } dests[] = {
        {a->out, NULL, ""},
        {a->report && strcmp(a->report, "-") ? a->report : NULL, "--report",
         " (--report - writes to stdout)"},
        {a->html, "--html", ""},
    };
    for (size_t i = 0; i < sizeof dests / sizeof dests[0]; i++) {
        struct stat st;
        if (dests[i].path && stat(dests[i].path, &st) == 0 && !S_ISREG(st.st_mode))
            return tool_error(EXIT_FAIL, "'%s' exists and is not a regular file%s",
                              dests[i].path, dests[i].hint);
    }
    for (size_t i = 1; i < sizeof dests / sizeof dests[0]; i++) {
        if (!dests[i].path) continue;
        if (cli_same_file(a->in, dests[i].path))
            return tool_error(EXIT_USAGE, "%s '%s' is the input model", dests[i].flag,
                              dests[i].path);
        for (size_t k = 0; k < i; k++)
            if (dests[k].path && cli_same_file(dests[k].path, dests[i].path))
                return tool_error(EXIT_USAGE, "%s '%s' is the %s", dests[i].flag, dests[i].path,
                                  k ? "report" : "output model");
    }
    return EXIT_OK;
}

/* The page of --html, from the report as it stands: before is the input as
** loaded, after the model the passes made. */
static int write_page(tileopt_ctx *ctx, const opt_args *a, tileopt_model *before,
                      tileopt_model *after) {
    char *text;
    if (tileopt_report_string(ctx, &text) != TILEOPT_OK)
        return tool_error(EXIT_FAIL, "report: out of memory");
    tileopt_status st = tileopt_html_save(ctx, text, strlen(text), before, after, a->html);
    tileopt_free(text);
    return st ? cli_fail(ctx, st, NULL) : EXIT_OK;
}

/* --report naming one of the input's external data files would replace data
** the input reads: refused like the input itself (the files are known once the
** model is loaded; OUT is checked by tileopt_model_check_output). */
static int check_report_path(const tileopt_ctx *ctx, const opt_args *a) {
    if (!a->report || strcmp(a->report, "-") == 0) return EXIT_OK;
    char dir[PATH_MAX];
    const char *slash = strrchr(a->in, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - a->in) : 1, slash ? a->in : ".");
    for (size_t i = 0; i < tileopt_report_data_file_count(ctx, TILEOPT_INPUT); i++) {
        char data[2 * PATH_MAX];
        if (snprintf(data, sizeof data, "%s/%s", dir,
                     tileopt_report_data_file(ctx, TILEOPT_INPUT, i)) >= (int)sizeof data)
            continue;
        if (cli_same_file(data, a->report))
            return tool_error(EXIT_USAGE, "--report '%s' is external data of the input model (%s)",
                              a->report, tileopt_report_data_file(ctx, TILEOPT_INPUT, i));
    }
    return EXIT_OK;
}

/* The output's data files as the report states them, one text. */
static char *output_data_files(const tileopt_ctx *ctx) {
    size_t n = 1;
    for (size_t i = 0; i < tileopt_report_data_file_count(ctx, TILEOPT_OUTPUT); i++)
        n += strlen(tileopt_report_data_file(ctx, TILEOPT_OUTPUT, i)) + 1;
    char *s = malloc(n);
    if (!s) return NULL;
    s[0] = '\0';
    for (size_t i = 0; i < tileopt_report_data_file_count(ctx, TILEOPT_OUTPUT); i++) {
        strcat(s, tileopt_report_data_file(ctx, TILEOPT_OUTPUT, i));
        strcat(s, "/");
    }
    return s;
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
        fprintf(f, "  external data the %s reads:", k ? "output" : "input");
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
    if (v != TILEOPT_VERDICT_NONE) {
        fprintf(f, "  verify: %s%s%s\n", tileopt_verdict_str(v), why ? ": " : "", why ? why : "");
        const char *on = tileopt_report_verify_inputs(ctx);
        if (on) fprintf(f, "  verify inputs: %s\n", on);
    }
}

/* Warnings go to stderr whatever --quiet says: the passes' own, and a verify
** that gave no verdict (which --verify=strict would have failed). */
static void print_warnings(tileopt_ctx *ctx, bool ok) {
    cli_progress_clear();
    for (size_t i = 0; i < tileopt_report_warning_count(ctx); i++)
        fprintf(stderr, "tileopt: warning: %s\n", tileopt_report_warning(ctx, i));
    const char *why;
    if (ok && tileopt_report_verdict(ctx, &why) == TILEOPT_VERDICT_SKIPPED)
        fprintf(stderr, "tileopt: warning: verify gave no verdict, the output is unchecked "
                "(--verify=strict fails instead): %s\n", why ? why : "no reason");
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
    /* a model that cannot be loaded (--input-shape that does not fit it
    ** included) fails the run; OUT naming one of its external data files,
    ** known once it is loaded, is a usage error */
    tileopt_status st = tileopt_model_load(ctx, a->in, &model);
    if (!st && (a->verify || a->html)) st = tileopt_model_load(ctx, a->in, &before);
    if (st) {
        tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
        goto done;
    }
    if ((st = tileopt_model_check_output(ctx, model, a->out))) {
        rc = cli_fail(ctx, st, NULL);
        goto done;
    }
    if (tileopt_report_begin(ctx, model, a->in) != TILEOPT_OK) {
        tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
        goto done;
    }
    if ((rc = check_report_path(ctx, a)) != EXIT_OK) goto done;
    rc = EXIT_FAIL;
    st = tileopt_passes_run(ctx, model, passes, n_passes);
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
    if (a->verify && (st = tileopt_model_verify(ctx, before, model)) != TILEOPT_OK) {
        rc = cli_fail(ctx, st, "verify");
        goto report;
    }
    /* A report file goes first, with the size the output will have: when it
    ** cannot be written the run fails before OUT is touched. A report on stdout
    ** comes after the save, but is made here too, so that it exists whatever
    ** happens after OUT is in place. (Predicting the size walks the whole
    ** model, so a run without a report skips it.) */
    bool file_report = a->report && strcmp(a->report, "-") != 0;
    double predicted = 0;
    char *predicted_files = NULL;
    if (a->report || a->html) {
        if (tileopt_report_end(ctx, model, a->out) != TILEOPT_OK) {
            tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
            goto done;
        }
        if (file_report && write_report(ctx, a->report) != EXIT_OK) goto done;
        /* the page, like the report, before OUT: a page that cannot be
        ** written fails the run with OUT untouched */
        if (a->html && (rc = write_page(ctx, a, before, model)) != EXIT_OK) goto done;
        rc = EXIT_FAIL;
        predicted = output_file_bytes(ctx);
        if (!(predicted_files = output_data_files(ctx))) {
            tool_error(EXIT_FAIL, "out of memory");
            goto done;
        }
    }
    if ((st = tileopt_model_save(ctx, model, a->out)) != TILEOPT_OK) {
        free(predicted_files);
        rc = cli_fail(ctx, st, NULL);
        goto report;
    }
    rc = EXIT_OK;
    /* OUT is in place: the report is rewritten only when the save's size or the
    ** data files OUT reads differ from the prediction (tensors moved to a data
    ** file of OUT's), and a rewrite that fails leaves the first report and a
    ** warning, never a failed run. */
    bool ended = tileopt_report_end(ctx, model, a->out) == TILEOPT_OK, same_files = true;
    if (ended && predicted_files) {
        char *files = output_data_files(ctx);
        same_files = files && strcmp(files, predicted_files) == 0;
        free(files);
    }
    free(predicted_files);
    if (!ended) {
        if (!a->report) { /* nothing to summarize from */
            fprintf(stderr, "tileopt: warning: %s (no summary)\n", tileopt_ctx_errmsg(ctx));
            goto done;
        }
        fprintf(stderr, "tileopt: warning: %s (the report states the predicted output size)\n",
                tileopt_ctx_errmsg(ctx));
    } else if (file_report && (output_file_bytes(ctx) != predicted || !same_files) &&
               tileopt_report_save(ctx, a->report) != TILEOPT_OK) {
        fprintf(stderr, "tileopt: warning: %s (it states the predicted output size)\n",
                tileopt_ctx_errmsg(ctx));
    }
    if (a->report && strcmp(a->report, "-") == 0) write_report(ctx, a->report);
    goto summary;
report:
    tileopt_report_end(ctx, model, a->out);
    if (a->report) write_report(ctx, a->report);
    /* a failed run's page shows how far it got and why (OUT is not written) */
    if (a->html) write_page(ctx, a, before, model);
summary:
    if (rc == EXIT_OK && !a->quiet)
        print_summary(ctx, a, a->report && strcmp(a->report, "-") == 0 ? stderr : stdout);
    print_warnings(ctx, rc == EXIT_OK);
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

/* The command line of `optimize`: one model's options, its inputs, and the
** batch's. */
typedef struct opt_cmd {
    opt_args a;
    char **inputs;
    size_t n_inputs;
    int jobs, shard_i, shard_n; /* 0: not given */
} opt_cmd;

static int parse_args(tileopt_ctx *ctx, const cli_command *cmd, int argc, char **argv,
                      opt_cmd *c);
static int run_optimize(tileopt_ctx *ctx, opt_cmd *c);

int cmd_optimize(tileopt_ctx *ctx, int argc, char **argv) {
    const cli_command *cmd = cli_command_find("optimize");
    if (cli_wants_help(cmd, argc, argv)) return EXIT_OK;
    opt_cmd c = {.inputs = calloc((size_t)argc, sizeof *c.inputs)};
    if (!c.inputs) return tool_error(EXIT_FAIL, "out of memory");
    int rc = parse_args(ctx, cmd, argc, argv, &c);
    if (rc == EXIT_OK) rc = run_optimize(ctx, &c);
    free(c.inputs);
    return rc;
}

/* Each option as given; the library's were set on ctx already. */
static int take_option(void *user, const cli_option *o, const char *value) {
    opt_cmd *c = user;
    opt_args *a = &c->a;
    switch (o->id) {
    case ID_OUTPUT: a->out = value; break;
    case ID_PASSES: a->passes = value; break;
    case ID_SKIP_PASSES: a->skip_passes = value; break;
    case ID_REPORT: a->report = value; break;
    case ID_HTML: a->html = value; break;
    case ID_INFER_SHAPES: a->infer_shapes = true; break;
    case ID_QUIET: a->quiet = true; break;
    case ID_TARGET_OPSET: a->target_asked = true; break;
    case ID_MAX_EVAL_BYTES: a->eval_bytes_asked = true; break;
    case ID_DATA_NAME: a->data_name_asked = true; break;
    case ID_VERIFY_INPUTS: a->verify = true; break;
    case ID_VERIFY:
        if (value && strcmp(value, "strict") != 0)
            return tool_error(EXIT_USAGE, "--verify takes =strict or nothing, not '%s'", value);
        a->verify = true;
        a->strict = a->strict || value;
        break;
    case ID_JOBS: {
        char *end;
        long j = strtol(value, &end, 10);
        if (*end || end == value || j < 1 || j > 4096)
            return tool_error(EXIT_USAGE, "--jobs needs a number of jobs from 1 to 4096");
        c->jobs = (int)j;
        break;
    }
    case ID_SHARD:
        if (!parse_shard(value, &c->shard_i, &c->shard_n))
            return tool_error(EXIT_USAGE, "--shard needs I/N with 0 <= I < N");
        break;
    default: break; /* the library's options, set already */
    }
    return EXIT_OK;
}

static int parse_args(tileopt_ctx *ctx, const cli_command *cmd, int argc, char **argv,
                      opt_cmd *c) {
    int rc = cli_parse(ctx, cmd, argc, argv, take_option, c, c->inputs, &c->n_inputs);
    if (rc) return rc;
    /* strict: a model the evaluator cannot run fails the command */
    if (c->a.strict && tileopt_ctx_set(ctx, "verify-strict", "1") != TILEOPT_OK)
        return tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
    if (!c->n_inputs) return tool_error(EXIT_USAGE, "optimize needs an input model");
    /* onnx-simplifier's form: optimize IN OUT */
    if (!c->a.out && c->n_inputs == 2) c->a.out = c->inputs[--c->n_inputs];
    c->a.in = c->inputs[0];
    if (!c->a.out)
        return tool_error(EXIT_USAGE, c->n_inputs > 2 ? "a batch needs -o OUTDIR"
                                                      : "optimize needs OUT.onnx (a second "
                                                        "operand, or -o)");
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
    int rc = parse_passes(a.passes, a.skip_passes, names, 64, &n_names, storage, sizeof storage);
    if (rc) return rc;
    bool tty = !a.quiet && isatty(STDERR_FILENO);
    if (batch) {
        if (a.report && strcmp(a.report, "-") == 0)
            return tool_error(EXIT_USAGE, "--report - writes one report: a batch needs a folder");
        if (a.data_name_asked)
            return tool_error(EXIT_USAGE, "--data-name names one model's data file: a batch "
                              "writes OUT.data beside each OUT");
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        /* --html names a folder in a batch: each model's page goes below it */
        const char *html_dir = a.html;
        a.html = NULL;
        batch_opts b = {&a, a.out, a.report, html_dir, names, n_names,
                        c->jobs ? c->jobs : (cores > 0 ? (int)cores : 1), c->shard_i,
                        c->shard_n, a.quiet, tty, optimize_checked};
        return cmd_batch(ctx, &b, c->inputs, c->n_inputs);
    }
    int prc = check_paths(&a);
    if (prc) return prc;
    if (tty) tileopt_ctx_set_progress(ctx, cli_progress, NULL);
    return optimize(ctx, &a, names, n_names);
}

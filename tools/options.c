/*
** tools/options.h: the table of commands and options, its lookups, and --help
** printed from it.
*/
#include <string.h>

#include "options.h"

const cli_command cli_commands[] = {
    {"optimize", CMD_OPTIMIZE,
     {"optimize IN.onnx [OUT.onnx] [options]", "optimize IN.onnx -o OUT.onnx [options]",
      "optimize IN... -o OUTDIR [-j N] [--shard I/N] [options]"},
     "Runs the passes on IN and writes OUT atomically; IN is never modified, and OUT "
     "naming IN (however spelled) is refused. OUT is the second operand, as in "
     "onnx-simplifier, or -o. With several inputs, or a folder (searched for *.onnx), "
     "each model is written under OUTDIR at its relative path, in a process of its own; "
     "a failed model is a row of the final table and the exit code is 1. The summary "
     "goes to stdout, warnings and errors to stderr.",
     "*.onnx"},
    {"run", CMD_RUN,
     {"run MODEL.onnx [INPUT.pb|.npy|.npz ...] [--random[=SEED]] [-o OUT.npz|OUTDIR]",
      "run [MODEL.onnx] --test-dir DIR [-o OUTDIR]", NULL},
     "Evaluates MODEL with the built-in evaluator. Inputs: .npz archives (arrays by input "
     "name), .npy files (x.npy is input x), serialized TensorProto files (by their name, "
     "else in order: input_0.pb, input_1.pb, ...; a SequenceProto or OptionalProto where "
     "the input declares one), folders of them, or --random. A missing or mis-shaped "
     "input is refused with the input's name, type and shape.",
     "*.@(onnx|pb|npy|npz)"},
    {"inspect", CMD_INSPECT,
     {"inspect MODEL.onnx... [--json] [--all]", NULL, NULL},
     "Prints opsets, IR version, graph inputs and outputs, node counts per op type, "
     "initializers and the Tile nodes of each model.",
     "*.onnx"},
    {"report", CMD_REPORT,
     {"report REPORT.json IN.onnx OUT.onnx -o PAGE.html", NULL, NULL},
     "Writes the page optimize --html writes, from a report written already (--report) "
     "and the two models it describes: one self-contained HTML file (no network, no "
     "external script, style or font) with the counts before and after, the verify "
     "verdict, and before and after drawings of every region a pass rewrote.",
     "*.@(json|onnx)"},
};
const size_t cli_command_count = sizeof cli_commands / sizeof *cli_commands;

#define OPT CMD_OPTIMIZE
#define LIMIT(id, name, value, lib, help) \
    {id, CMD_EVERY, name, NULL, NULL, value, ARG_REQUIRED, lib, SECTION_LIMITS, COMPLETE_NOTHING, \
     NULL, help}

const cli_option cli_options[] = {
    {ID_HELP, CMD_EVERY, "--help", "-h", NULL, NULL, ARG_NONE, NULL, SECTION_COMMAND, COMPLETE_NOTHING,
     NULL, "print this help and exit"},
    {ID_OUTPUT, OPT | CMD_RUN | CMD_REPORT, "--output", "-o", NULL, "OUT", ARG_REQUIRED, NULL, SECTION_COMMAND,
     COMPLETE_FILE, NULL,
     "optimize: the optimized model (never IN itself), or the output folder of a batch; "
     "run: OUT.npz gets the outputs as one archive, any other OUT is a folder of "
     "output_N.pb (per data set OUT/test_data_set_N/); report: the page (default: "
     "optimize's second operand; run prints the outputs)"},
    {ID_JOBS, OPT, "--jobs", "-j", NULL, "N", ARG_REQUIRED, NULL, SECTION_COMMAND, COMPLETE_NOTHING,
     NULL, "batch: models optimized at once (default: the number of cores)"},
    {ID_SHARD, OPT, "--shard", NULL, NULL, "I/N", ARG_REQUIRED, NULL, SECTION_COMMAND, COMPLETE_NOTHING,
     NULL, "batch: only the I-th (0 to N-1) of N contiguous slices of the sorted model list "
     "(default: all)"},
    {ID_PASSES, OPT, "--passes", NULL, NULL, "LIST", ARG_REQUIRED, NULL, SECTION_COMMAND, COMPLETE_WORDS,
     "upgrade fold fuse gqa none",
     "passes in order, comma-separated, or none (load and save only); an unknown name "
     "lists them all (default: every pass, in the order upgrade, fold, fuse, gqa, then "
     "the simplifications eliminate_* and fuse_*)"},
    {ID_SKIP_PASSES, OPT, "--skip-passes", NULL, NULL, "LIST", ARG_REQUIRED, NULL, SECTION_COMMAND,
     COMPLETE_WORDS, "upgrade fold fuse gqa",
     "passes left out of the list --passes gives, or of the default one, comma-separated "
     "(--skip-passes gqa,fuse_bn_into_conv)"},
    {ID_TARGET_OPSET, OPT, "--target-opset", NULL, NULL, "N", ARG_REQUIRED, "target-opset", SECTION_COMMAND,
     COMPLETE_NOTHING, NULL,
     "the opset upgrade converts to, 1 to 26, up or down (default: the model's own from "
     "opset 7, else 13)"},
    {ID_KEEP_INIT_INPUTS, OPT, "--keep-initializer-inputs", NULL, NULL, NULL, ARG_NONE, "keep-initializer-inputs",
     SECTION_COMMAND, COMPLETE_NOTHING, NULL,
     "keep initializers listed as graph inputs when the IR goes past 3 (default: take them "
     "out)"},
    {ID_FOLD_SCOPE, OPT, "--fold-scope", NULL, NULL, "tile|all", ARG_REQUIRED, "fold-scope", SECTION_COMMAND,
     COMPLETE_WORDS, "tile all",
     "fold Tiles and what feeds them, or every constant node (default all)"},
    {ID_FOLD_LIMIT, OPT, "--fold-limit", NULL, NULL, "SIZE", ARG_REQUIRED, "fold-limit", SECTION_COMMAND,
     COMPLETE_NOTHING, NULL,
     "most bytes one fold may add to the model, what it writes less what goes with it "
     "(default 0: never grow)"},
    {ID_FOLD_MAX_GROWTH, OPT, "--fold-max-growth", NULL, NULL, "K", ARG_REQUIRED, "fold-max-growth",
     SECTION_COMMAND, COMPLETE_NOTHING, NULL,
     "also refuse outputs over K times their constant inputs (default 0: off)"},
    {ID_FUSE_SPLIT, OPT, "--fuse-split", NULL, NULL, NULL, ARG_NONE, "fuse-split", SECTION_COMMAND,
     COMPLETE_NOTHING, NULL,
     "fuse a Tile into a binary op with a full-size operand by reshaping both to broadcast "
     "(default off)"},
    {ID_INPUT_SHAPE, OPT | CMD_RUN | CMD_INSPECT, "--input-shape", NULL, "--overwrite-input-shape", "NAME:D1,D2,...",
     ARG_REQUIRED, "input-shape", SECTION_COMMAND, COMPLETE_NOTHING, NULL,
     "fix a graph input's dims, and each named dim of it everywhere the model declares it "
     "(repeatable; onnx-simplifier's spelling works too) (default none)"},
    {ID_INFER_SHAPES, OPT, "--infer-shapes", NULL, NULL, NULL, ARG_NONE, NULL, SECTION_COMMAND,
     COMPLETE_NOTHING, NULL, "write inferred types and shapes into value_info (default off)"},
    {ID_VERIFY, OPT, "--verify", NULL, NULL, "strict", ARG_OPTIONAL, NULL, SECTION_COMMAND,
     COMPLETE_WORDS, "strict",
     "run IN and OUT on the same inputs and fail on a difference; without a verdict (an op "
     "the evaluator lacks, inputs the model refuses) a warning says so and the run goes on, "
     "=strict fails instead (default off)"},
    {ID_VERIFY_INPUTS, OPT, "--verify-inputs", NULL, NULL, "DIR|FILE", ARG_REQUIRED, "verify-inputs",
     SECTION_COMMAND, COMPLETE_FILE, "*.@(pb|npy|npz)",
     "verify on these inputs, exactly: an .npz, .npy or .pb file, or a folder of them such "
     "as a test_data_set_0 (repeatable; implies --verify) (default: random inputs)"},
    {ID_VERIFY_SHAPE, OPT, "--verify-shape", NULL, NULL, "N|NAME:D1,...", ARG_REQUIRED, "verify-shape",
     SECTION_COMMAND, COMPLETE_NOTHING, NULL,
     "the size every open dim of verify's random inputs takes, or one input's whole shape "
     "(repeatable) (default: 2 on the leading axis, elsewhere 2, 64, then 512 until IN "
     "runs)"},
    {ID_SEED, OPT, "--seed", NULL, NULL, "N", ARG_REQUIRED, "seed", SECTION_COMMAND, COMPLETE_NOTHING,
     NULL, "seed of verify's random inputs (default 1)"},
    {ID_DATA_NAME, OPT, "--data-name", NULL, NULL, "NAME", ARG_REQUIRED, "data-name",
     SECTION_COMMAND, COMPLETE_NOTHING, NULL,
     "the external data file written beside OUT, when OUT needs one (default: OUT's name "
     "and .data; one an earlier run to OUT wrote is replaced, any other file of that name "
     "refused)"},
    {ID_REPORT, OPT, "--report", NULL, NULL, "FILE|DIR|-", ARG_REQUIRED, NULL, SECTION_COMMAND,
     COMPLETE_FILE, "*.json",
     "write the JSON report to FILE, or to stdout (-: the summary then goes to stderr); "
     "for a batch a folder: one report per model and batch.json (default none)"},
    {ID_HTML, OPT, "--html", NULL, NULL, "PAGE.html|DIR", ARG_REQUIRED, NULL, SECTION_COMMAND,
     COMPLETE_FILE, "*.html",
     "write the report as one self-contained HTML page: counts before and after, the "
     "verify verdict, and before and after drawings of every region a pass rewrote; for a "
     "batch a folder: one page per model and index.html (default none)"},
    {ID_QUIET, OPT, "--quiet", "-q", NULL, NULL, ARG_NONE, NULL, SECTION_COMMAND, COMPLETE_NOTHING, NULL,
     "no progress and no summary; warnings and errors still go to stderr (default: progress "
     "on a terminal, summary on stdout)"},
    {ID_RANDOM, CMD_RUN, "--random", NULL, NULL, "SEED", ARG_OPTIONAL, NULL, SECTION_COMMAND,
     COMPLETE_NOTHING, NULL,
     "random inputs of the declared shapes (floats in [-1, 1), integers in [0, 4]; open "
     "dims 2, or as --input-shape fixes them), seeded (default: seed 1 when given)"},
    {ID_TEST_DIR, CMD_RUN, "--test-dir", NULL, NULL, "DIR", ARG_REQUIRED, NULL, SECTION_COMMAND,
     COMPLETE_DIR, NULL,
     "a data set (DIR/input_*.pb, DIR/output_*.pb) or a backend test folder "
     "(DIR/test_data_set_*, and DIR/model.onnx when MODEL is not given): compare the "
     "outputs (floats: rtol 1e-3, atol 1e-7; other types exactly), exit 1 on a mismatch "
     "(default none)"},
    {ID_JSON, CMD_INSPECT, "--json", NULL, NULL, NULL, ARG_NONE, NULL, SECTION_COMMAND,
     COMPLETE_NOTHING, NULL,
     "print one JSON object per model instead, every Tile included (several models: one "
     "array) (default: text)"},
    {ID_ALL, CMD_INSPECT, "--all", NULL, NULL, NULL, ARG_NONE, NULL, SECTION_COMMAND, COMPLETE_NOTHING,
     NULL, "list every Tile (default: the first 10)"},
    LIMIT(ID_LIMIT, "--max-tensor-bytes", "SIZE", "max-tensor-bytes",
          "bytes one evaluated or loaded tensor may take (default 4G)"),
    LIMIT(ID_MAX_EVAL_BYTES, "--max-eval-bytes", "SIZE", "max-eval-bytes",
          "bytes all live evaluator tensors may take (default: a quarter of the memory, or "
          "of the cgroup's limit, shared among a batch's -j workers; at least 256M)"),
    LIMIT(ID_LIMIT, "--max-eval-steps", "N", "max-eval-steps",
          "nodes run plus Loop iterations in one evaluation (default 4194304; 0: no limit)"),
    LIMIT(ID_LIMIT, "--max-depth", "N", "max-depth", "subgraph nesting depth, 1 to 256 (default 64)"),
    LIMIT(ID_LIMIT, "--max-rank", "N", "max-rank", "tensor rank (default 64)"),
};
const size_t cli_option_count = sizeof cli_options / sizeof *cli_options;

const char cli_sizes_text[] =
    "SIZE is a number of bytes with an optional suffix: K, M, G, T (or KiB, MiB, ...) for "
    "powers of 1024, KB, MB, GB, TB for powers of 1000, or 'unlimited'. Long options also "
    "take their value as --name=value.";
const char cli_exit_text[] =
    "Exit status: 0 success, 1 failure (a bad model, an unsupported case, a mismatch), "
    "2 usage (a bad option or value, an output that names the input).";

const cli_command *cli_command_find(const char *name) {
    for (size_t i = 0; i < cli_command_count; i++)
        if (strcmp(cli_commands[i].name, name) == 0) return &cli_commands[i];
    return NULL;
}

static bool spelled(const char *s, const char *arg, size_t len) {
    return s && strlen(s) == len && strncmp(s, arg, len) == 0;
}

const cli_option *cli_option_find(const cli_command *cmd, const char *arg) {
    size_t len = strcspn(arg, "=");
    for (size_t i = 0; i < cli_option_count; i++) {
        const cli_option *o = &cli_options[i];
        if (!(o->commands & cmd->bit)) continue;
        if (spelled(o->name, arg, len) || spelled(o->alias, arg, len) ||
            (spelled(o->short_name, arg, len) && !arg[len]))
            return o;
    }
    return NULL;
}

/* Edits (insert, delete, substitute, swap two neighbours) from a to b, up to 3. */
static size_t distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b);
    if (n > 64 || m > 64 || (n > m ? n - m : m - n) > 3) return 4;
    size_t d[65][65];
    for (size_t i = 0; i <= n; i++) d[i][0] = i;
    for (size_t j = 0; j <= m; j++) d[0][j] = j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

const cli_option *cli_option_near(const cli_command *cmd, const char *arg) {
    char typed[128];
    size_t len = strcspn(arg, "=");
    if (len >= sizeof typed) return NULL;
    memcpy(typed, arg, len);
    typed[len] = '\0';
    const cli_option *best = NULL;
    size_t best_d = 3, prefixed = 0;
    const cli_option *prefix_of = NULL;
    for (size_t i = 0; i < cli_option_count; i++) {
        const cli_option *o = &cli_options[i];
        if (!(o->commands & cmd->bit)) continue;
        const char *names[2] = {o->name, o->alias};
        for (size_t k = 0; k < 2 && names[k]; k++) {
            size_t d = distance(typed, names[k]);
            /* short names are near everything: only long ones are suggested */
            if (d < best_d && len > 3) {
                best_d = d;
                best = o;
            }
            if (len > 3 && strncmp(names[k], typed, len) == 0 && prefix_of != o) {
                prefixed++;
                prefix_of = o;
            }
        }
    }
    /* "--verif" names one option alone: it is that one, whatever the distance */
    return best ? best : prefixed == 1 ? prefix_of : NULL;
}

/* text wrapped to width 80, each line after the first indented by indent,
** the first starting at column col. */
static void wrapped(FILE *f, const char *text, size_t col, size_t indent) {
    const size_t width = 80;
    for (const char *p = text; *p;) {
        size_t word = strcspn(p, " ");
        if (col > indent && col + 1 + word > width) {
            fprintf(f, "\n%*s", (int)indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, word, f);
        col += word;
        p += word;
        while (*p == ' ') p++;
    }
    fputc('\n', f);
}

/* "-o, --output OUT" as help prints an option */
static size_t spelling(const cli_option *o, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "%s%s%s", o->short_name ? o->short_name : "",
                     o->short_name ? ", " : "", o->name);
    if (o->value)
        n += snprintf(buf + n, cap - (size_t)n, o->arg == ARG_OPTIONAL ? "[=%s]" : " %s",
                      o->value);
    if (o->alias) n += snprintf(buf + n, cap - (size_t)n, ", %s", o->alias);
    return (size_t)n;
}

static void print_options(FILE *f, unsigned bit, cli_section section) {
    const size_t column = 28;
    for (size_t i = 0; i < cli_option_count; i++) {
        const cli_option *o = &cli_options[i];
        if (!(o->commands & bit) || o->section != section) continue;
        char s[160];
        size_t n = spelling(o, s, sizeof s);
        fprintf(f, "  %s", s);
        if (n + 2 >= column - 1) {
            fprintf(f, "\n%*s", (int)column, "");
        } else {
            fprintf(f, "%*s", (int)(column - 2 - n), "");
        }
        wrapped(f, o->help, column, column);
    }
}

void cli_print_help(FILE *f, const cli_command *cmd) {
    for (size_t i = 0; i < 3 && cmd->usage[i]; i++)
        fprintf(f, "%s tileopt %s\n", i ? "      " : "usage:", cmd->usage[i]);
    wrapped(f, cmd->about, 0, 0);
    fputs("options:\n", f);
    print_options(f, cmd->bit, SECTION_COMMAND);
    fputs("resource limits (every command):\n", f);
    print_options(f, cmd->bit, SECTION_LIMITS);
    wrapped(f, cli_sizes_text, 0, 0);
    wrapped(f, cli_exit_text, 0, 0);
}

void cli_print_usage(FILE *f) {
    fputs("usage:\n", f);
    for (size_t c = 0; c < cli_command_count; c++)
        for (size_t i = 0; i < 3 && cli_commands[c].usage[i]; i++)
            fprintf(f, "  tileopt %s\n", cli_commands[c].usage[i]);
    fputs("  tileopt --help | -V | --version\n"
          "Each command's options: tileopt COMMAND --help (and man tileopt).\n", f);
}

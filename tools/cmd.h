/*
** The tileopt CLI: one file per command, what they share in cli.c. Like any
** other client, it sees the library only through include/tileopt.h.
*/
#ifndef TILEOPT_CMD_H
#define TILEOPT_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "options.h"
#include "tileopt.h"

/* Exit codes: success, a failure (bad model, I/O, mismatch), a usage error. */
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* What `optimize` was asked for one model. */
typedef struct opt_args {
    const char *in, *out, *passes, *skip_passes, *report, *html;
    bool verify, strict, quiet, infer_shapes, target_asked;
    bool eval_bytes_asked;   /* --max-eval-bytes given: a batch does not share it out */
    bool data_name_asked;    /* --data-name given: one model's, no batch's */
} opt_args;

/* Optimize one model as `optimize` does (paths checked, report, summary). */
typedef int (*optimize_fn)(tileopt_ctx *ctx, const opt_args *a, const char *const *passes,
                           size_t n_passes);

/* `optimize` over many models (cmd_batch.c). */
typedef struct batch_opts {
    const opt_args *common;  /* every option but the paths */
    const char *outdir, *report_dir; /* report_dir: NULL for none */
    const char *html_dir;    /* a page per model and index.html; NULL for none */
    const char *const *passes;
    size_t n_passes;
    int jobs;                /* models at once */
    int shard_i, shard_n;    /* shard_n 0: all models */
    bool quiet, progress;
    optimize_fn one;
} batch_opts;
int cmd_batch(tileopt_ctx *ctx, const batch_opts *b, char *const *inputs, size_t n_inputs);

/* The commands; argv[0] is the command's name. Each returns the exit code. */
int cmd_optimize(tileopt_ctx *ctx, int argc, char **argv);
int cmd_run(tileopt_ctx *ctx, int argc, char **argv);
int cmd_inspect(tileopt_ctx *ctx, int argc, char **argv);
int cmd_report(tileopt_ctx *ctx, int argc, char **argv);

/* Print "tileopt: error: <message>" to stderr and return code (for usage errors,
** code 2, a hint to the command's --help follows). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
int tool_error(int code, const char *fmt, ...);

/* The command being run: usage errors name its --help. */
void cli_set_command(const char *name);

/* With --help or -h among argv (before a "--"): print cmd's help to stdout and
** return true. */
bool cli_wants_help(const cli_command *cmd, int argc, char **argv);

/* Told each option given, in order, with its value (NULL when it has none);
** returns an exit code, 0 to go on. */
typedef int (*cli_handler)(void *user, const cli_option *o, const char *value);

/* Parse argv[1..argc) for cmd by the option table: options that set a library
** option (cli_option.library) are set on ctx, every option is then handed to h,
** and the other arguments are collected into operands (room for argc). Unknown
** options, near misses ("did you mean --fold-scope?"), missing values and bad
** ones are usage errors. Returns the exit code, 0 to go on. */
int cli_parse(tileopt_ctx *ctx, const cli_command *cmd, int argc, char **argv, cli_handler h,
              void *user, char **operands, size_t *n_operands);

/* Print the library's last error (after what:, when given) and return its exit
** code: 2 for a misuse (an argument the library refused), else 1. */
int cli_fail(tileopt_ctx *ctx, tileopt_status st, const char *what);

/* True when a and b name one file, however spelled: ./m.onnx, a symlink, a
** hard link, or the same resolved path when neither exists yet. */
bool cli_same_file(const char *a, const char *b);

/* Progress on a terminal: one line redrawn in place (a tileopt_progress_fn). */
void cli_progress(void *user, const char *what, uint64_t done, uint64_t total);
/* b bytes in human units ("512 B", "1.5 KiB", "2.4 GiB") written into buf. */
const char *cli_human_bytes(double b, char *buf, size_t cap);
/* Erase the progress line if one is shown (before printing anything else). */
void cli_progress_clear(void);

/* Remove the temporary file a save is writing when SIGINT, SIGTERM or SIGHUP
** arrives (signals the caller ignores stay ignored). */
void cli_clean_up_on_signals(tileopt_ctx *ctx);

#endif

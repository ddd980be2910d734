/*
** What the commands share: the error printer, the flags that map onto library
** options, the progress line, and removing a half-written file on a signal.
*/
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

/* Whether the progress line holds text: anything else printed to the terminal
** erases it first, or the two would be glued on one line. */
static bool progress_shown;

void cli_progress_clear(void) {
    if (!progress_shown) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    progress_shown = false;
}

int tool_error(int code, const char *fmt, ...) {
    cli_progress_clear();
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

void cli_clean_up_on_signals(tileopt_ctx *ctx) {
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

const char *cli_human_bytes(double b, char *buf, size_t cap) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    size_t u = 0;
    while (b >= 1024 && u + 1 < sizeof unit / sizeof unit[0]) {
        b /= 1024;
        u++;
    }
    snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
    return buf;
}

/* Progress on a terminal only: a single line redrawn in place, erased when a
** phase reaches its total. Saves count bytes, shown in human units. */
void cli_progress(void *user, const char *what, uint64_t done, uint64_t total) {
    (void)user;
    char d[32], t[32];
    /* the phases the library counts in bytes (tileopt.h lists them) */
    static const char *const in_bytes[] = {"saving", "evaluating", "loading"};
    bool bytes = false;
    for (size_t i = 0; i < sizeof in_bytes / sizeof *in_bytes; i++)
        bytes |= strncmp(what, in_bytes[i], strlen(in_bytes[i])) == 0;
    if (bytes) {
        cli_human_bytes((double)done, d, sizeof d);
        cli_human_bytes((double)total, t, sizeof t);
    } else {
        snprintf(d, sizeof d, "%llu", (unsigned long long)done);
        snprintf(t, sizeof t, "%llu", (unsigned long long)total);
    }
    if (total)
        fprintf(stderr, "\r\033[K%s: %s/%s (%3.0f%%)", what, d, t,
                100.0 * (double)done / (double)total);
    else
        fprintf(stderr, "\r\033[K%s: %s", what, d);
    progress_shown = true;
    if (done == total) cli_progress_clear();
    fflush(stderr);
}

/* The resource limits every command takes, with their defaults. */
static const char limits_help[] =
    "resource limits (every command):\n"
    "  --max-tensor-bytes SIZE  bytes one evaluated or loaded tensor may take (default 4G)\n"
    "  --max-eval-bytes SIZE    bytes all live evaluator tensors may take (default: a\n"
    "                           quarter of the memory, or of the cgroup's limit, shared\n"
    "                           among a batch's -j workers; at least 256M)\n"
    "  --max-eval-steps N       nodes run plus Loop iterations in one evaluation\n"
    "                           (default 4194304; 0: no limit)\n"
    "  --max-depth N            subgraph nesting depth, 1 to 256 (default 64)\n"
    "  --max-rank N             tensor rank (default 64)\n"
    "SIZE is a number of bytes with an optional suffix: K, M, G, T (or KiB, MiB, ...)\n"
    "for powers of 1024, KB, MB, GB, TB for powers of 1000, or 'unlimited'.\n"
    "Long options also take their value as --name=value.\n";

bool cli_wants_help(int argc, char **argv, const char *help) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(help, stdout);
            fputs(limits_help, stdout);
            return true;
        }
    return false;
}

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
    {"--input-shape", "input-shape", true, false},
    {"--data-name", "data-name", true, false},
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
    tileopt_status st = tileopt_ctx_set(ctx, option_flags[k].option, value);
    if (st == TILEOPT_NOMEM) return tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
    if (st != TILEOPT_OK) return tool_error(EXIT_USAGE, "%s", tileopt_ctx_errmsg(ctx));
    return 0;
}

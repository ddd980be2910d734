/*
** What the commands share: the error printer, the parser over the option table
** (options.c), the progress line, and removing a half-written file on a signal.
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

#include "cmd.h"

/* The command being run, for the hint after a usage error. */
static const char *current_command;

void cli_set_command(const char *name) { current_command = name; }

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
    if (code == EXIT_USAGE)
        fprintf(stderr, "(tileopt%s%s --help shows the usage)\n", current_command ? " " : "",
                current_command ? current_command : "");
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


bool cli_wants_help(const cli_command *cmd, int argc, char **argv) {
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cli_print_help(stdout, cmd);
            return true;
        }
    return false;
}

static bool all_digits(const char *s) {
    if (!*s) return false;
    while (*s >= '0' && *s <= '9') s++;
    return !*s;
}

int cli_parse(tileopt_ctx *ctx, const cli_command *cmd, int argc, char **argv, cli_handler h,
              void *user, char **operands, size_t *n_operands) {
    *n_operands = 0;
    bool options_done = false;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!options_done && strcmp(s, "--") == 0) {
            options_done = true;
            continue;
        }
        if (options_done || s[0] != '-' || !s[1]) {
            operands[(*n_operands)++] = argv[i];
            continue;
        }
        const cli_option *o = cli_option_find(cmd, s);
        int len = (int)strcspn(s, "=");
        if (!o) {
            const cli_option *near = cli_option_near(cmd, s);
            if (near)
                return tool_error(EXIT_USAGE, "unknown option '%.*s' for %s (did you mean %s?)",
                                  len, s, cmd->name, near->name);
            return tool_error(EXIT_USAGE, "unknown option '%.*s' for %s", len, s, cmd->name);
        }
        const char *eq = s[1] == '-' && s[len] ? s + len + 1 : NULL;
        const char *value = NULL;
        if (o->arg == ARG_NONE && eq)
            return tool_error(EXIT_USAGE, "%s takes no value", o->name);
        if (o->arg == ARG_REQUIRED) {
            if (eq) value = eq;
            else if (i + 1 < argc) value = argv[++i];
            else return tool_error(EXIT_USAGE, "%.*s needs a value (%s)", len, s, o->value);
        }
        if (o->arg == ARG_OPTIONAL) {
            if (eq) value = eq;
            else if (i + 1 < argc && all_digits(argv[i + 1])) value = argv[++i];
        }
        if (o->library) {
            tileopt_status st = tileopt_ctx_set(ctx, o->library, value ? value : "1");
            if (st == TILEOPT_NOMEM) return tool_error(EXIT_FAIL, "%s", tileopt_ctx_errmsg(ctx));
            if (st != TILEOPT_OK) return tool_error(EXIT_USAGE, "%s", tileopt_ctx_errmsg(ctx));
        }
        int rc = h ? h(user, o, value) : EXIT_OK;
        if (rc) return rc;
    }
    return EXIT_OK;
}

int cli_fail(tileopt_ctx *ctx, tileopt_status st, const char *what) {
    return tool_error(st == TILEOPT_MISUSE ? EXIT_USAGE : EXIT_FAIL, "%s%s%s", what ? what : "",
                      what ? ": " : "", tileopt_ctx_errmsg(ctx));
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

bool cli_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea != eb) return false;
    char ra[PATH_MAX], rb[PATH_MAX];
    return resolve_path(a, ra) && resolve_path(b, rb) && strcmp(ra, rb) == 0;
}


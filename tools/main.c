/*
** The tileopt command line: dispatch. Each command lives in a file of its own
** (cmd_optimize.c, cmd_run.c, cmd_inspect.c, cmd_report.c), its options in the table of
** options.c, and what they share in cli.c; tools/ is the only code that prints
** or exits, and it sees the library only through include/tileopt.h.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static const struct {
    const char *name;
    int (*run)(tileopt_ctx *ctx, int argc, char **argv);
} commands[] = {
    {"optimize", cmd_optimize},
    {"run", cmd_run},
    {"inspect", cmd_inspect},
    {"report", cmd_report},
};

int main(int argc, char **argv) {
    if (argc < 2) return tool_error(EXIT_USAGE, "no command given (optimize, run, inspect, report)");
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        cli_print_usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("tileopt %s\n", tileopt_version());
        return EXIT_OK;
    }
    size_t k = 0, n = sizeof commands / sizeof commands[0];
    while (k < n && strcmp(commands[k].name, cmd) != 0) k++;
    if (k == n)
        return tool_error(EXIT_USAGE, "unknown command '%s' (commands: optimize, run, inspect, report)",
                          cmd);
    cli_set_command(cmd);
    tileopt_ctx *ctx;
    if (tileopt_ctx_new(&ctx) != TILEOPT_OK) return tool_error(EXIT_FAIL, "out of memory");
    cli_clean_up_on_signals(ctx);
    int rc = commands[k].run(ctx, argc - 1, argv + 1);
    tileopt_ctx_free(ctx);
    return rc;
}

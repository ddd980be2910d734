/* Subcommands of the tileopt CLI, one file each, and the shared error printer. */
#ifndef TILEOPT_CMD_H
#define TILEOPT_CMD_H

#include <stdbool.h>

#include "tileopt.h"

/* Print "tileopt: error: <message>" to stderr and return code (for usage errors,
** code 2, a hint to --help follows). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
int tool_error(int code, const char *fmt, ...);

/* `tileopt run ...`; argv[0] is "run". Returns the exit code. */
int cmd_run(tileopt_ctx *ctx, int argc, char **argv);

/* If argv[*i] is a flag that maps onto a library option (`--fold-limit N`, ...;
** with limits_only, just the resource limits `--max-*`), apply it to ctx and step
** *i past its value. Returns -1 when argv[*i] is no such flag, 0 when applied,
** 2 (usage) on a bad value. */
int cmd_option_flag(tileopt_ctx *ctx, int argc, char **argv, int *i, bool limits_only);

#endif

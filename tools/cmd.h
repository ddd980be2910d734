/* Subcommands of the tileopt CLI, one file each, and the shared error printer. */
#ifndef TILEOPT_CMD_H
#define TILEOPT_CMD_H

/* Print "tileopt: error: <message>" to stderr and return code (for usage errors,
** code 2, a hint to --help follows). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
int tool_error(int code, const char *fmt, ...);

/* `tileopt run ...`; argv[0] is "run". Returns the exit code. */
int cmd_run(int argc, char **argv);

#endif

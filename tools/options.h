/*
** The CLI's one table of commands and options. The parser, --help, the man
** page and the shell completions (gen_docs.c, at build time) all read it, so
** they cannot disagree.
*/
#ifndef TILEOPT_OPTIONS_H
#define TILEOPT_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The commands, as bits: an option lists the commands that take it. */
enum { CMD_OPTIMIZE = 1, CMD_RUN = 2, CMD_INSPECT = 4, CMD_REPORT = 8, CMD_EVERY = 15 };

typedef enum cli_arg {
    ARG_NONE,                /* a flag */
    ARG_REQUIRED,            /* --name VALUE or --name=VALUE */
    ARG_OPTIONAL,            /* --name=VALUE, or a number as the next argument */
} cli_arg;

/* What a shell completes an option's value (or a command's operands) with. */
typedef enum cli_complete {
    COMPLETE_NOTHING,
    COMPLETE_FILE,           /* files (the glob narrows them), folders to walk into */
    COMPLETE_DIR,
    COMPLETE_WORDS,          /* the words given */
} cli_complete;

/* Where --help and the man page list an option. */
typedef enum cli_section {
    SECTION_COMMAND,         /* the command's own options */
    SECTION_LIMITS,          /* resource limits every command takes */
} cli_section;

/* Which option: what a command's handler switches on. */
typedef enum cli_id {
    ID_HELP, ID_OUTPUT, ID_JOBS, ID_SHARD, ID_PASSES, ID_SKIP_PASSES, ID_TARGET_OPSET, ID_KEEP_INIT_INPUTS,
    ID_FOLD_SCOPE, ID_FOLD_LIMIT, ID_FOLD_MAX_GROWTH, ID_FUSE_SPLIT, ID_INPUT_SHAPE,
    ID_INFER_SHAPES, ID_VERIFY, ID_VERIFY_INPUTS, ID_VERIFY_SHAPE, ID_SEED, ID_REPORT, ID_HTML, ID_QUIET,
    ID_DATA_NAME, ID_RANDOM, ID_TEST_DIR, ID_JSON, ID_ALL, ID_LIMIT, ID_MAX_EVAL_BYTES,
} cli_id;

typedef struct cli_option {
    cli_id id;
    unsigned commands;       /* CMD_* bits */
    const char *name;        /* "--output" */
    const char *short_name;  /* "-o", or NULL */
    const char *alias;       /* another long spelling (onnxsim's), or NULL */
    const char *value;       /* the value's name in help ("OUT.onnx"), NULL for a flag */
    cli_arg arg;
    const char *library;     /* the tileopt_ctx_set option it sets, or NULL */
    cli_section section;
    cli_complete complete;
    const char *words;       /* COMPLETE_WORDS: the words; COMPLETE_FILE: a glob or NULL */
    const char *help;        /* ends with the default in parentheses */
} cli_option;

typedef struct cli_command {
    const char *name;
    unsigned bit;
    const char *usage[3];    /* after "tileopt ", NULL-terminated */
    const char *about;       /* what it does, a paragraph */
    const char *operands;    /* a glob for the operands' completion */
} cli_command;

extern const cli_option cli_options[];
extern const size_t cli_option_count;
extern const cli_command cli_commands[];
extern const size_t cli_command_count;
/* Text that follows the options: units of sizes, exit codes. */
extern const char cli_sizes_text[];
extern const char cli_exit_text[];

const cli_command *cli_command_find(const char *name);
/* The option argv names for cmd (long, short or alias spelling, without an
** "=VALUE"), or NULL. */
const cli_option *cli_option_find(const cli_command *cmd, const char *arg);
/* The option of cmd whose spelling is nearest to arg, when one is near enough
** to be a typo of it ("--fold-scop"), or NULL. */
const cli_option *cli_option_near(const cli_command *cmd, const char *arg);

/* `tileopt CMD --help`: usage, about, the options and the limits. */
void cli_print_help(FILE *f, const cli_command *cmd);
/* `tileopt --help`: every command's usage. */
void cli_print_usage(FILE *f);

#endif

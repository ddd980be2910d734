/*
** Build-time generator: `gen_docs man|bash|zsh` prints the man page tileopt(1),
** the bash completion or the zsh completion, all from the option table that
** --help prints (options.c), so none of them can disagree with the CLI.
*/
#include <stdio.h>
#include <string.h>

#include "options.h"

/* roff text: a leading '.' or ' would be a request, '\' an escape, '-' in an
** option should stay a minus. */
static void roff(const char *s) {
    if (*s == '.' || *s == '\'') fputs("\\&", stdout);
    for (; *s; s++) {
        if (*s == '\\') fputs("\\e", stdout);
        else if (*s == '-') fputs("\\-", stdout);
        else putchar(*s);
    }
}

static void man_options(unsigned bit, cli_section section) {
    for (size_t i = 0; i < cli_option_count; i++) {
        const cli_option *o = &cli_options[i];
        if (!(o->commands & bit) || o->section != section) continue;
        fputs(".TP\n", stdout);
        if (o->short_name) {
            fputs("\\fB", stdout);
            roff(o->short_name);
            fputs("\\fR, ", stdout);
        }
        fputs("\\fB", stdout);
        roff(o->name);
        fputs("\\fR", stdout);
        if (o->value) {
            fputs(o->arg == ARG_OPTIONAL ? "[=\\fI" : " \\fI", stdout);
            roff(o->value);
            fputs(o->arg == ARG_OPTIONAL ? "\\fR]" : "\\fR", stdout);
        }
        if (o->alias) {
            fputs(", \\fB", stdout);
            roff(o->alias);
            fputs("\\fR", stdout);
        }
        putchar('\n');
        roff(o->help);
        putchar('\n');
    }
}

static void man(void) {
    printf(".TH TILEOPT 1 \"\" \"tileopt\" \"User Commands\"\n");
    puts(".SH NAME\ntileopt \\- optimize ONNX models around the Tile operator");
    puts(".SH SYNOPSIS\n.nf");
    for (size_t c = 0; c < cli_command_count; c++)
        for (size_t i = 0; i < 3 && cli_commands[c].usage[i]; i++) {
            fputs("\\fBtileopt\\fR ", stdout);
            roff(cli_commands[c].usage[i]);
            putchar('\n');
        }
    puts("\\fBtileopt\\fR \\-\\-help | \\-V | \\-\\-version\n.fi");
    puts(".SH DESCRIPTION\ntileopt migrates legacy ONNX models to current opsets, folds Tile and "
         "the shape subgraphs that feed it, fuses Tile into the ops that follow it, and "
         "explains every run in a JSON report. \\fBtileopt COMMAND \\-\\-help\\fR prints what "
         "this page says of COMMAND.");
    puts(".SH COMMANDS");
    for (size_t c = 0; c < cli_command_count; c++) {
        const cli_command *cmd = &cli_commands[c];
        printf(".SS %s\n", cmd->name);
        roff(cmd->about);
        putchar('\n');
        man_options(cmd->bit, SECTION_COMMAND);
    }
    puts(".SH RESOURCE LIMITS\nEvery command takes these.");
    man_options(CMD_EVERY, SECTION_LIMITS);
    puts(".PP");
    roff(cli_sizes_text);
    puts("\n.SH EXIT STATUS");
    roff(cli_exit_text);
    puts("\n.SH SEE ALSO\nThe README of the tileopt source tree and docs/cli.md, the full "
         "reference of the command line; the report's keys: "
         "tests/report.schema.json.");
}

/* Every spelling of the options cmd takes, space-separated. */
static void spellings(unsigned bit) {
    const char *sep = "";
    for (size_t i = 0; i < cli_option_count; i++) {
        const cli_option *o = &cli_options[i];
        if (!(o->commands & bit)) continue;
        const char *names[3] = {o->short_name, o->name, o->alias};
        for (size_t k = 0; k < 3; k++)
            if (names[k]) {
                printf("%s%s", sep, names[k]);
                sep = " ";
            }
    }
}

static void bash(void) {
    puts("# bash completion for tileopt, generated from its option table (gen_docs bash)\n"
         "_tileopt() {\n"
         "    local cur prev cmd\n"
         "    cur=${COMP_WORDS[COMP_CWORD]}\n"
         "    prev=${COMP_WORDS[COMP_CWORD-1]}\n"
         "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
         "        COMPREPLY=($(compgen -W \"optimize run inspect --help -V --version\" -- \"$cur\"))\n"
         "        return\n"
         "    fi\n"
         "    cmd=${COMP_WORDS[1]}\n"
         "    shopt -s extglob\n"
         "    case \"$cmd:$prev\" in");
    for (size_t c = 0; c < cli_command_count; c++)
        for (size_t i = 0; i < cli_option_count; i++) {
            const cli_option *o = &cli_options[i];
            const cli_command *cmd = &cli_commands[c];
            if (!(o->commands & cmd->bit) || o->arg != ARG_REQUIRED) continue;
            const char *names[3] = {o->short_name, o->name, o->alias};
            printf("        ");
            const char *sep = "";
            for (size_t k = 0; k < 3; k++)
                if (names[k]) {
                    printf("%s%s:%s", sep, cmd->name, names[k]);
                    sep = "|";
                }
            printf(")\n            ");
            if (o->complete == COMPLETE_WORDS)
                printf("COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))", o->words);
            else if (o->complete == COMPLETE_DIR)
                printf("COMPREPLY=($(compgen -d -- \"$cur\"))");
            else if (o->complete == COMPLETE_FILE && o->words)
                printf("COMPREPLY=($(compgen -d -- \"$cur\") $(compgen -f -X '!%s' -- \"$cur\"))",
                       o->words);
            else if (o->complete == COMPLETE_FILE)
                printf("COMPREPLY=($(compgen -f -- \"$cur\"))");
            else
                printf("COMPREPLY=()");
            printf("\n            return;;\n");
        }
    puts("    esac\n"
         "    case \"$cmd\" in");
    for (size_t c = 0; c < cli_command_count; c++) {
        const cli_command *cmd = &cli_commands[c];
        printf("        %s)\n            if [[ \"$cur\" == -* ]]; then\n"
               "                COMPREPLY=($(compgen -W \"", cmd->name);
        spellings(cmd->bit);
        printf("\" -- \"$cur\"))\n            else\n"
               "                COMPREPLY=($(compgen -d -- \"$cur\") $(compgen -f -X '!%s' -- "
               "\"$cur\"))\n            fi;;\n",
               cmd->operands);
    }
    puts("    esac\n"
         "}\n"
         "complete -o filenames -F _tileopt tileopt");
}

/* zsh's _arguments spec text: brackets and colons would end its fields. */
static void zsh_text(const char *s, size_t max) {
    for (size_t n = 0; *s && n < max; s++, n++) {
        if (*s == '(' && n > 0 && strncmp(s, "(default", 8) == 0) break;
        if (strchr("[]:'\\", *s)) putchar(' ');
        else putchar(*s);
    }
}

static void zsh_action(const cli_option *o) {
    if (o->arg == ARG_NONE) return;
    fputs(":", stdout);
    zsh_text(o->value, 40);
    switch (o->complete) {
    case COMPLETE_WORDS: printf(":(%s)", o->words); break;
    case COMPLETE_DIR: fputs(":_files -/", stdout); break;
    case COMPLETE_FILE:
        if (o->words) printf(":_files -g \"%s\"", o->words);
        else fputs(":_files", stdout);
        break;
    case COMPLETE_NOTHING: fputs(": ", stdout); break;
    }
}

static void zsh(void) {
    puts("#compdef tileopt\n"
         "# zsh completion for tileopt, generated from its option table (gen_docs zsh)\n"
         "setopt localoptions extendedglob kshglob\n"
         "local -a commands\n"
         "commands=(");
    for (size_t c = 0; c < cli_command_count; c++) {
        printf("  '%s:", cli_commands[c].name);
        zsh_text(cli_commands[c].about, 60);
        puts("'");
    }
    puts(")\n"
         "if (( CURRENT == 2 )); then\n"
         "  _describe command commands\n"
         "  _arguments '(-)'{-V,--version}'[print the version]' '(-)'{-h,--help}'[print the "
         "usage]'\n"
         "  return\n"
         "fi\n"
         "local cmd=$words[2]\n"
         "shift words\n"
         "(( CURRENT-- ))\n"
         "case $cmd in");
    for (size_t c = 0; c < cli_command_count; c++) {
        const cli_command *cmd = &cli_commands[c];
        printf("  %s)\n    _arguments -s \\\n", cmd->name);
        for (size_t i = 0; i < cli_option_count; i++) {
            const cli_option *o = &cli_options[i];
            if (!(o->commands & cmd->bit)) continue;
            const char *names[3] = {o->short_name, o->name, o->alias};
            for (size_t k = 0; k < 3; k++) {
                if (!names[k]) continue;
                /* repeatable options are all the ones the library keeps a list of */
                printf("      '%s%s%s[", o->library ? "*" : "", names[k],
                       o->arg == ARG_OPTIONAL ? "=-" : o->arg == ARG_REQUIRED && k ? "=" : "");
                zsh_text(o->help, 70);
                fputs("]", stdout);
                zsh_action(o);
                fputs("' \\\n", stdout);
            }
        }
        printf("      '*:file:_files -g \"%s\"';;\n", cmd->operands);
    }
    puts("esac");
}

int main(int argc, char **argv) {
    const char *what = argc == 2 ? argv[1] : "";
    if (strcmp(what, "man") == 0) man();
    else if (strcmp(what, "bash") == 0) bash();
    else if (strcmp(what, "zsh") == 0) zsh();
    else {
        fputs("usage: gen_docs man|bash|zsh\n", stderr);
        return 2;
    }
    return ferror(stdout) ? 1 : 0;
}

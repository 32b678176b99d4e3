/*
 * `loadtrace completions bash|zsh`: the shell completion script, written
 * from the program's own tables (cli/commands.c and each command's options,
 * its cli_spec or getopt table), so a completion can never offer an option the command does not
 * parse, nor miss one it does. The build writes both scripts beside the
 * binary and `cmake --install` puts them where bash-completion and zsh
 * look (cli/CMakeLists.txt).
 *
 * What is completed: the command (and the command after `help`), a
 * command's long options after "-", and file names elsewhere, including
 * the value of an option that takes one.
 */
#include "cli/cli_util.h"
#include "cli/commands.h"

#include <stdio.h>
#include <string.h>

static const char completions_usage[] =
    "usage: loadtrace completions bash|zsh\n"
    "\n"
    "Print the shell completion script for bash or zsh (commands, each command's\n"
    "options, and file names), made from the tables the commands parse with.\n"
    "cmake --install puts both in place (share/bash-completion/completions/loadtrace,\n"
    "share/zsh/site-functions/_loadtrace); to try one in the current shell:\n"
    "  source <(loadtrace completions bash)\n";

/* Command i's getopt table: made from its spec, or the one it has; NULL
 * for a command without options. buf has room for CLI_OPTS_MAX + 2. */
static const struct option *options_of(size_t i, struct option *buf)
{
    if (!cli_commands[i].spec)
        return cli_commands[i].options;
    cli_opts_longopts(cli_commands[i].spec, buf);
    return buf;
}

static void bash(FILE *f)
{
    struct option buf[CLI_OPTS_MAX + 2];
    fputs("# bash completion for loadtrace (written by `loadtrace completions bash`)\n"
          "_loadtrace() {\n"
          "    local cur prev cmd opts valued\n"
          "    cur=${COMP_WORDS[COMP_CWORD]}\n"
          "    prev=${COMP_WORDS[COMP_CWORD-1]}\n"
          "    if [ \"$COMP_CWORD\" -eq 1 ] || { [ \"$COMP_CWORD\" -eq 2 ] && "
          "[ \"${COMP_WORDS[1]}\" = help ]; }; then\n"
          "        COMPREPLY=($(compgen -W 'help",
          f);
    for (size_t i = 0; i < cli_n_commands; i++)
        fprintf(f, " %s", cli_commands[i].name);
    fputs("' -- \"$cur\"))\n"
          "        return\n"
          "    fi\n"
          "    cmd=${COMP_WORDS[1]}\n"
          "    case $cmd in\n",
          f);
    for (size_t i = 0; i < cli_n_commands; i++) {
        const struct option *o = options_of(i, buf);
        if (!o)
            continue;
        fprintf(f, "    %s)\n        opts='", cli_commands[i].name);
        for (const struct option *p = o; p->name; p++)
            fprintf(f, "%s--%s%s", p == o ? "" : " ", p->name,
                    p->has_arg == optional_argument ? " --" : "");
        fputs(" --help'\n        valued='", f);
        bool first = true;
        for (const struct option *p = o; p->name; p++)
            if (p->has_arg == required_argument) {
                fprintf(f, "%s--%s", first ? "" : " ", p->name);
                first = false;
            }
        fputs("'\n        ;;\n", f);
    }
    fputs("    *) return ;;\n"
          "    esac\n"
          "    case \" $valued \" in\n"
          "    *\" $prev \"*)\n"
          "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
          "        return ;;\n"
          "    esac\n"
          "    if [[ $cur == -* ]]; then\n"
          "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
          "    else\n"
          "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
          "    fi\n"
          "}\n"
          "complete -o filenames -o bashdefault -F _loadtrace loadtrace\n",
          f);
}

/* A summary for zsh's single quotes: a quote closes and reopens them. */
static void zsh_quoted(FILE *f, const char *s)
{
    for (; *s; s++)
        if (*s == '\'')
            fputs("'\\''", f);
        else if (*s == ':')
            fputs("\\:", f);
        else
            fputc(*s, f);
}

static void zsh(FILE *f)
{
    struct option buf[CLI_OPTS_MAX + 2];
    fputs("#compdef loadtrace\n"
          "# zsh completion for loadtrace (written by `loadtrace completions zsh`)\n"
          "_loadtrace() {\n"
          "    local -a cmds\n"
          "    cmds=(\n",
          f);
    for (size_t i = 0; i < cli_n_commands; i++) {
        fprintf(f, "        '%s:", cli_commands[i].name);
        zsh_quoted(f, cli_commands[i].summary);
        fputs("'\n", f);
    }
    fputs("        'help:print a command'\\''s options'\n"
          "    )\n"
          "    if (( CURRENT == 2 )); then\n"
          "        _describe -t commands 'loadtrace command' cmds\n"
          "        return\n"
          "    fi\n"
          "    case $words[2] in\n"
          "    help)\n"
          "        (( CURRENT == 3 )) && _describe -t commands 'loadtrace command' cmds ;;\n",
          f);
    for (size_t i = 0; i < cli_n_commands; i++) {
        const struct option *o = options_of(i, buf);
        if (!o)
            continue;
        fprintf(f, "    %s)\n        _arguments -S \\\n", cli_commands[i].name);
        for (const struct option *p = o; p->name; p++) {
            if (p->has_arg == required_argument)
                fprintf(f, "            '--%s=:value:_files' \\\n", p->name);
            else if (p->has_arg == optional_argument)
                fprintf(f, "            '--%s=-::value:_files' \\\n", p->name);
            else
                fprintf(f, "            '--%s' \\\n", p->name);
        }
        fputs("            '--help' \\\n            '*:file:_files' ;;\n", f);
    }
    fputs("    esac\n"
          "}\n"
          "_loadtrace \"$@\"\n",
          f);
}

int cmd_completions(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(completions_usage, stdout);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "bash")) {
        bash(stdout);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "zsh")) {
        zsh(stdout);
        return 0;
    }
    cli_error("completions", "expected bash or zsh");
    fputs(completions_usage, stderr);
    return 2;
}

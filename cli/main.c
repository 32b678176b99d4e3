/*
 * loadtrace: the command-line entry point. It only dispatches: every
 * subcommand lives in cli/cmd_*.c, and its work in a library folder.
 * `loadtrace help CMD` is CMD's --help; a mistyped command gets the
 * nearest one.
 */
#include "cli/cli_util.h"
#include "cli/commands.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: loadtrace <command> [options]   (loadtrace help <command>)\n\n"
               "loadtrace records, replays and analyzes LLM inference traffic.\n\ncommands:\n");
    for (size_t i = 0; i < cli_n_commands; i++)
        fprintf(f, "  %-11s %s\n", cli_commands[i].name, cli_commands[i].summary);
}

static const struct cli_command *find(const char *name)
{
    for (size_t i = 0; i < cli_n_commands; i++)
        if (!strcmp(name, cli_commands[i].name))
            return &cli_commands[i];
    return NULL;
}

static int unknown(const char *name)
{
    const char *names[32];
    size_t n = 0;
    for (size_t i = 0; i < cli_n_commands && n < 32; i++)
        names[n++] = cli_commands[i].name;
    const char *near = cli_nearest(name, names, n);
    if (near)
        fprintf(stderr, "loadtrace: unknown command '%s': did you mean '%s'?\n\n", name, near);
    else
        fprintf(stderr, "loadtrace: unknown command '%s'\n\n", name);
    usage(stderr);
    return 2;
}

int main(int argc, char **argv)
{
    opterr = 0; /* cli_bad_option says what went wrong, and what was meant */
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        (!strcmp(argv[1], "help") && argc == 2)) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "help")) {
        if (argc > 3) {
            fprintf(stderr, "loadtrace help: one command at a time (loadtrace help replay)\n");
            return 2;
        }
        const struct cli_command *c = find(argv[2]);
        if (!c)
            return unknown(argv[2]);
        char *args[] = {argv[2], "--help", NULL};
        return c->fn(2, args);
    }
    if (!strcmp(argv[1], "--version")) {
        printf("loadtrace %s\n", LT_VERSION);
        return 0;
    }
    const struct cli_command *c = find(argv[1]);
    if (c)
        return c->fn(argc - 1, argv + 1);
    return unknown(argv[1]);
}

/*
 * loadtrace: the command-line entry point. It only dispatches: every
 * subcommand lives in cli/cmd_*.c, and its work in a library folder.
 */
#include "cli/commands.h"

#include <stdio.h>
#include <string.h>

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"capture", cmd_capture, "record live traffic through a reverse proxy"},
    {"import", cmd_import, "convert a public trace (Azure, BurstGPT, Mooncake, JSON lines)"},
    {"export", cmd_export, "write a trace in another tool's format"},
    {"synth", cmd_synth, "make a synthetic trace, optionally fitted to a real one"},
    {"info", cmd_info, "describe a trace: span, rate, burstiness, lengths, reuse"},
    {"cat", cmd_cat, "print every record as JSON lines"},
    {"replay", cmd_replay, "send a trace's requests to a server (or sim) and record results"},
    {"analyze", cmd_analyze, "summarize results: tables, percentiles, sweep, charts, HTML"},
    {"compare", cmd_compare, "traces: is b representative of a? results: did b beat a?"},
    {"sim", cmd_sim, "run the simulated continuous-batching LLM server"},
    {"sweep", cmd_sweep, "replay one trace against every candidate config and name the best"},
    {"demo", cmd_demo, "show what loadtrace does, on bundled real data, in a minute"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: loadtrace <command> [options]   (loadtrace <command> --help)\n\n"
               "loadtrace records, replays and analyzes LLM inference traffic.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("loadtrace %s\n", LT_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "loadtrace: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}

/*
 * The table of loadtrace's commands: what main dispatches on, what
 * `loadtrace help` lists, and, with each command's getopt table, what the
 * shell completions offer (cli/completions.c), so that none of them can
 * name a command or an option the program does not have.
 */
#include "cli/commands.h"

const struct cli_command cli_commands[] = {
    {"capture", cmd_capture, "record live traffic through a reverse proxy", NULL,
     &cmd_capture_spec},
    {"import", cmd_import, "convert a public trace (Azure, BurstGPT, Mooncake, JSON lines)", NULL,
     &cmd_import_spec},
    {"export", cmd_export, "write a trace in another tool's format", NULL, &cmd_export_spec},
    {"synth", cmd_synth, "make a synthetic trace, optionally fitted to a real one", NULL,
     &cmd_synth_spec},
    {"info", cmd_info, "describe a trace: span, rate, burstiness, lengths, reuse", NULL,
     &cmd_info_spec},
    {"cat", cmd_cat, "print every record as JSON lines", NULL, &cmd_cat_spec},
    {"replay", cmd_replay, "send a trace's requests to a server (or sim) and record results", NULL,
     &cmd_replay_spec},
    {"analyze", cmd_analyze, "summarize results: tables, percentiles, sweep, charts, HTML", NULL,
     &cmd_analyze_spec},
    {"compare", cmd_compare, "traces: is b representative of a? results: did b beat a?", NULL,
     &cmd_compare_spec},
    {"sim", cmd_sim, "run the simulated continuous-batching LLM server", NULL, &cmd_sim_spec},
    {"sweep", cmd_sweep, "replay one trace against every candidate config and name the best", NULL,
     &cmd_sweep_spec},
    {"demo", cmd_demo, "show what loadtrace does, on bundled real data, in a minute", NULL,
     &cmd_demo_spec},
    {"completions", cmd_completions, "print the bash or zsh completion script", NULL, NULL},
};

const size_t cli_n_commands = sizeof cli_commands / sizeof cli_commands[0];

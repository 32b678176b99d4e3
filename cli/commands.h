/*
 * The subcommands of the loadtrace program. Each one parses its arguments
 * into a struct of options, calls its library's *_run(), and returns the
 * process exit code (0 ok, 1 the work failed, 2 bad usage).
 *
 * Adding a command: write cli/cmd_NAME.c with `int cmd_NAME(int, char **)`
 * and its options as a `const struct cli_spec cmd_NAME_spec` (cli/cli_opts.h,
 * which answers --help), declare both here, add it to the table in
 * commands.c and to cli/CMakeLists.txt, and give it a test under tests/cli/.
 */
#ifndef LT_CLI_COMMANDS_H
#define LT_CLI_COMMANDS_H

#include "cli/cli_opts.h"

#include <getopt.h>
#include <stddef.h>

int cmd_import(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_capture(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_sweep(int argc, char **argv);

/* Each command's options, written once: a struct cli_spec (cli/cli_opts.h)
 * that its getopt table, its usage text, the completions and the "did you
 * mean" of a mistyped option are made from. */
extern const struct cli_spec cmd_import_spec, cmd_export_spec, cmd_cat_spec, cmd_info_spec,
    cmd_compare_spec, cmd_analyze_spec, cmd_capture_spec, cmd_synth_spec, cmd_sim_spec,
    cmd_sweep_spec, cmd_demo_spec, cmd_replay_spec;

/* The table of commands (cli/commands.c): main dispatches on it, `help`
 * names them, the completions offer them. */
struct cli_command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
    const struct option *options; /* a command without a spec: its getopt table */
    const struct cli_spec *spec;  /* its options, or NULL (then options, or none) */
};
extern const struct cli_command cli_commands[];
extern const size_t cli_n_commands;

/* `loadtrace completions bash|zsh`: the shell completion script, made
 * from the tables above (cli/completions.c). */
int cmd_completions(int argc, char **argv);

#endif

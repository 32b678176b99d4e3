/*
 * The subcommands of the loadtrace program. Each one parses its arguments
 * into a struct of options, calls its library's *_run(), and returns the
 * process exit code (0 ok, 1 the work failed, 2 bad usage).
 *
 * Adding a command: write cli/cmd_NAME.c with `int cmd_NAME(int, char **)`
 * that answers --help, declare it here, add it to the table in main.c and
 * to cli/CMakeLists.txt, and give it a test under tests/cli/.
 */
#ifndef LT_CLI_COMMANDS_H
#define LT_CLI_COMMANDS_H

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

#endif

/*
 * `loadtrace replay TRACE --find-max rate|concurrency --slo SPEC` on the
 * command line: the options as cmd_replay read them, the search itself
 * (experiments/capacity.h) run with this file's hooks (signals, the
 * dashboard or the progress line, each probe's line), and its answer
 * printed.
 */
#ifndef LT_CLI_REPLAY_SEARCH_H
#define LT_CLI_REPLAY_SEARCH_H

#include "experiments/capacity.h"
#include "replay/replay.h"
#include "sim/sim.h"

#include <stdbool.h>
#include <stdint.h>

/* The search as cmd_replay parsed it: the library's options (their hooks,
 * key and dry run are set by cli_replay_search) and what only the command
 * line has. */
struct cli_search_opts {
    struct lt_capacity_opts cap;
    const char *key_env;
    bool quiet;
    int ui; /* enum cli_ui (cli/ui_dash.h), resolved: the dashboard during the live probes */
};

/* Run the search described by s over the replay options o (trace, output,
 * target and request options as cmd_replay parsed them; the load options
 * are the search's). Prints the answer first on stdout. Returns the exit
 * code: 0 (found, or bounded by --max-probes / --max-time: said so), 1
 * (the work failed, or faults kept the search from an answer), 2 (usage),
 * 130 (stopped by the user). */
int cli_replay_search(const struct lt_replay_opts *o, const struct cli_search_opts *s);

#endif

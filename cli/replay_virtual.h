/*
 * `loadtrace replay TRACE --target sim --virtual`: the replay command's
 * virtual-time path on the command line. The run is experiments/
 * vreplay.h's (the plan a live replay would run, so every load mode means
 * exactly what it means live, against the sim's model); this prints its
 * totals and analyze's summary.
 */
#ifndef LT_CLI_REPLAY_VIRTUAL_H
#define LT_CLI_REPLAY_VIRTUAL_H

#include "replay/replay.h"
#include "sim/sim.h"

#include <stdbool.h>

/* Run every run of o (trace path, output path, load mode and its options,
 * as cmd_replay parsed them) through the sim's model in virtual time with
 * the profile sim->profile (NULL = "default"), write the results file and
 * print the summary unless !summary. Options that only make sense with a
 * live server (faults, log, time scale, natural output lengths) are
 * refused. Returns the exit code: 0, 1 (the work failed) or 2 (usage). */
int cli_replay_virtual(const struct lt_replay_opts *o, const struct lt_sim_opts *sim, bool summary,
                       bool quiet);

#endif

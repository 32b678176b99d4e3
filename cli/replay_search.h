/*
 * `loadtrace replay TRACE --find-max rate|concurrency --slo SPEC` on the
 * command line: the options as cmd_replay read them, the search itself
 * (experiments/capacity.h) run with this file's hooks (signals, the
 * dashboard or the progress line, each probe's line), and its answer
 * printed.
 */
#ifndef LT_CLI_REPLAY_SEARCH_H
#define LT_CLI_REPLAY_SEARCH_H

#include "replay/replay.h"
#include "sim/sim.h"

#include <stdbool.h>
#include <stdint.h>

struct cli_search_opts {
    bool concurrency; /* the axis: closed-loop concurrency, else the trace's rate */
    const char *slo;  /* the spec as given (written in the file) */
    int64_t slo_ttft_us, slo_tpot_us, slo_e2e_us;
    double attain;        /* share that must meet the SLO; 0 = 0.9 */
    double precision;     /* bracket width to stop at; 0 = 0.05 */
    double start;         /* first load; 0 = the trace's own rate, or 1 */
    uint32_t max_probes;  /* per search (live or virtual); 0 = 20 */
    int64_t max_time_us;  /* whole search, wall; 0 = none */
    bool virtual_only;    /* --virtual: search the sim's model only */
    bool virtual_first;   /* search the model first to place the live probes */
    const char *vprofile; /* profile of the virtual search; NULL = the sim's, or default */
    bool target_sim;      /* start the sim in this process */
    const struct lt_sim_opts *sim;
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

/*
 * `mpirun -n N loadtrace replay ...`: replay as an MPI job (docs/replay-mpi.md).
 * Compiled only with -DLT_MPI=ON; the job's bookkeeping is replay/replay_mpi.h.
 */
#ifndef LT_CLI_REPLAY_RANKS_H
#define LT_CLI_REPLAY_RANKS_H

#include "replay/replay.h"

#include <stdbool.h>

/* Run o as one rank of the job: split the trace, agree on each run's start,
 * write RESULTS.rankR, and on rank 0 merge the parts into o->out_path and
 * print the report and the summary (unless !summary). key_env as for
 * --api-key-env. Returns the exit code. */
int cli_replay_ranks(struct lt_replay_opts *o, const char *key_env, bool summary, bool quiet,
                   bool keep_parts);

#endif

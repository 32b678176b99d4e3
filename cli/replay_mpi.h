/*
 * `mpirun -n N loadtrace replay ...`: replay as an MPI job (docs/replay-mpi.md).
 * Compiled only with -DLT_MPI=ON; replay/ knows nothing of MPI, it only
 * takes a part of a split, a run origin and extra run-record keys.
 */
#ifndef LT_CLI_REPLAY_MPI_H
#define LT_CLI_REPLAY_MPI_H

#include "replay/replay.h"

#include <stdbool.h>

/* True when this process was started by mpirun (Open MPI's or PMIx's
 * environment variables are set). */
bool cli_replay_mpi_wanted(void);

/* Run o as one rank of the job: split the trace, agree on each run's start,
 * write RESULTS.rankR, and on rank 0 merge the parts into o->out_path and
 * print the report and the summary (unless !summary). key_env as for
 * --api-key-env. Returns the exit code. */
int cli_replay_mpi(struct lt_replay_opts *o, const char *key_env, bool summary, bool quiet);

#endif

/*
 * Replay as an MPI job (docs/replay-mpi.md): the job's bookkeeping, one
 * rank's view. Compiled only with -DLT_MPI=ON. The replay engine itself
 * knows nothing of MPI: it takes a part of the split (lt_plan_jobs_split), a run
 * origin callback and extra run-record keys, which lt_replay_mpi_part
 * fills in.
 *
 * Usage, on every rank: lt_replay_mpi_start (MPI_Init, the clock offset to
 * rank 0), lt_replay_mpi_part (this rank's options), lt_replay_new and
 * lt_replay_run as usual (or lt_replay_mpi_failed when setup failed),
 * lt_replay_mpi_end (rank 0 merges the parts), lt_replay_mpi_stop.
 */
#ifndef LT_REPLAY_MPI_H
#define LT_REPLAY_MPI_H

#include "replay/replay.h"
#include "base/lt_err.h"

#include <stdbool.h>
#include <stdio.h>

/* True when this process was started by mpirun (Open MPI's or PMIx's
 * environment variables are set). */
bool lt_replay_mpi_wanted(void);

struct lt_replay_mpi;

/* Join the job: MPI_Init, and measure this rank's clock offset to rank 0.
 * note (may be NULL) is told of a rank taken for dead. NULL on failure,
 * after which the caller ends the job with lt_replay_mpi_abort. */
struct lt_replay_mpi *lt_replay_mpi_start(void (*note)(void *ud, const char *msg), void *ud,
                                          struct lt_err *err);
void lt_replay_mpi_abort(void);

int lt_replay_mpi_rank(const struct lt_replay_mpi *m);
int lt_replay_mpi_size(const struct lt_replay_mpi *m);

/* Make o this rank's part of the job: refuse what cannot be split (every
 * rank comes to the same verdict: LT_EINVAL), split the closed-loop levels
 * and the cap, write to RESULTS.rankR (lt_replay_mpi_path), start every run
 * at an instant common to all ranks. */
int lt_replay_mpi_part(struct lt_replay_mpi *m, struct lt_replay_opts *o, struct lt_err *err);
const char *lt_replay_mpi_path(const struct lt_replay_mpi *m);

/* This rank's setup failed: the job gives up its first run. */
void lt_replay_mpi_failed(struct lt_replay_mpi *m);

/* The end of the job (ok: this rank's replay succeeded; ran: it was set
 * up). Rank 0 waits for the others (or takes them for dead) and, when it
 * ran, merges the parts into the original -o path with a report to
 * `report` (may be NULL): returns lt_replay_merge's 0 (complete), 1
 * (partial) or a negative code. Other ranks return 0. */
int lt_replay_mpi_end(struct lt_replay_mpi *m, bool ok, bool ran, FILE *report, struct lt_err *err);

/* Leave the job and free m. Returns true when ranks were lost: MPI was
 * then not finalized (it would wait for the dead) and the process must
 * leave at once (_exit). */
bool lt_replay_mpi_stop(struct lt_replay_mpi *m);

#endif

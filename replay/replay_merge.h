/*
 * Merging the per-rank results files of a replay split over several
 * processes (an MPI job, replay_mpi.c) into one results file that analyze
 * reads like any other; also `loadtrace replay --merge` after a job that
 * was cut short. It reads replay's conventions (the run records' "rank",
 * "ranks" and "planned" keys) with the traces/ reader and writer, and needs
 * no MPI.
 */
#ifndef LT_REPLAY_MERGE_H
#define LT_REPLAY_MERGE_H

#include "base/lt_err.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Merge parts[0..n) (the files of ranks 0..n-1, in rank order; a file that
 * is absent or unreadable is a rank whose requests are all missing) into
 * out_path. Each run gets one run record: the first rank's, with the closed
 * loop concurrency summed over the ranks, and the extra keys "ranks",
 * "merged_ranks" (how many parts held the run), "missing_ranks" (an array
 * of the ranks whose requests are missing in part or in whole) and
 * "missing_requests" (how many: a rank's "planned" minus the results its
 * file holds; -1 when a rank left no run record, so nothing says how many).
 * Every result of every part is copied once; a part cut short (a killed
 * rank) is read up to its last intact frame. A report (per rank: results,
 * schedule lag p50/p99/max, clock offset; then what is missing) goes to
 * `report` when not NULL. Returns 0 when nothing is missing, 1 when the
 * merge is partial, or a negative code with err filled. */
int lt_replay_merge(const char *out_path, const char *const *parts, size_t n, FILE *report,
                    struct lt_err *err);

#endif

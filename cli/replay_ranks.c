/*
 * `mpirun -n N loadtrace replay ...`: one rank of a replay split over an
 * MPI job (docs/replay-mpi.md). The job's bookkeeping is replay/replay_mpi.c;
 * here are the messages and the summary. Compiled only with -DLT_MPI=ON.
 */
#include "cli/replay_ranks.h"

#include "analyze/analyze.h"
#include "cli/cli_util.h"
#include "replay/replay_mpi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_note(void *ud, const char *msg)
{
    (void)ud;
    fprintf(stderr, "loadtrace replay: %s\n", msg);
}

/* Rank 0, after the merge: the merged file's summary. */
static int summarize(const char *path)
{
    struct lt_err err = {0};
    struct lt_analyze_opts ao;
    lt_analyze_opts_init(&ao);
    if (lt_analyze_print_summary(path, &ao, stdout, &err) < 0) {
        cli_error("replay", "summary: %s", err.msg);
        return 1;
    }
    return 0;
}

/* Rank 0, after a complete merge: the parts are the job's scratch, and
 * RESULTS holds every one of their records. After a partial merge they
 * stay, for a later --merge of a part that turns up. */
static void remove_parts(const char *final_path, int size, bool quiet)
{
    int removed = 0;
    for (int k = 0; k < size; k++) {
        char part[4096];
        snprintf(part, sizeof part, "%s.rank%d", final_path, k);
        if (unlink(part) == 0)
            removed++;
        else
            cli_error("replay", "%s: cannot remove the merged part: %s", part, strerror(errno));
    }
    if (!quiet)
        fprintf(stderr,
                "loadtrace replay: merged %d parts into %s and removed them (--keep-parts "
                "keeps them)\n",
                removed, final_path);
}

int cli_replay_ranks(struct lt_replay_opts *o, const char *key_env, bool summary, bool quiet,
                   bool keep_parts)
{
    struct lt_err err = {0};
    struct lt_replay *rp = NULL;
    int status = 1;
    struct lt_replay_mpi *m = lt_replay_mpi_start(on_note, NULL, &err);
    if (!m) {
        cli_error("replay", "%s", err.msg);
        lt_replay_mpi_abort();
        return 1;
    }
    int rank = lt_replay_mpi_rank(m);
    const char *final_path = o->out_path;
    if (lt_replay_mpi_part(m, o, &err) < 0) {
        if (rank == 0 || err.code != LT_EINVAL)
            cli_error("replay", "%s", err.msg);
        lt_replay_mpi_stop(m);
        return err.code == LT_EINVAL ? 2 : 1;
    }
    o->api_key = cli_api_key(key_env, o->api == LT_REPLAY_API_MESSAGES, &o->api_key_bearer_too);

    bool ok = false;
    rp = lt_replay_new(o, &err);
    if (rp && lt_replay_prepare(rp, &err) < 0) {
        lt_replay_free(rp);
        rp = NULL;
    }
    if (!rp) {
        cli_error("replay", "rank %d: %s", rank, err.msg);
        lt_replay_mpi_failed(m);
        status = cli_fail_status(&err);
    } else {
        if (!quiet && rank == 0) {
            struct lt_replay_stats st;
            lt_replay_get_stats(rp, &st);
            fprintf(stderr, "loadtrace replay: %d ranks; model %s; prompt lengths: %s\n",
                    lt_replay_mpi_size(m), st.model, st.calib_how);
        }
        int rc = cli_replay_run(rp, &err);
        struct lt_replay_stats st;
        lt_replay_get_stats(rp, &st);
        if (rc < 0)
            cli_error("replay", "rank %d: %s", rank, err.msg);
        if (!quiet)
            fprintf(stderr,
                    "loadtrace replay: rank %d: %llu requests, %llu ok, %llu errors -> %s\n", rank,
                    (unsigned long long)st.requests, (unsigned long long)st.ok,
                    (unsigned long long)st.errors, lt_replay_mpi_path(m));
        ok = rc == 0;
        status = rc < 0
                     ? 1
                     : cli_replay_status(lt_replay_stopped(rp), st.requests - st.cancelled, st.ok);
    }

    int merged = lt_replay_mpi_end(m, ok, rp != NULL, summary ? stdout : NULL, &err);
    if (rank == 0 && rp) {
        if (merged < 0) {
            cli_error("replay", "merge: %s", err.msg);
            status = 1;
        } else {
            if (merged == 1 && status == 0)
                status = 1; /* a partial result is not a success */
            if (merged == 0 && !keep_parts)
                remove_parts(final_path, lt_replay_mpi_size(m), quiet);
            if (summary && summarize(final_path) != 0)
                status = 1;
        }
    }
    lt_replay_free(rp);
    if (lt_replay_mpi_stop(m)) {
        fflush(NULL);
        _exit(status);
    }
    return status;
}

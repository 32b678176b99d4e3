/*
 * Replay as an MPI job: every rank runs its own replay engine on its part
 * of the trace (lt_plan_jobs_split: whole sessions, balanced), all ranks start
 * each run at one common instant, each writes its own results file
 * (RESULTS.rankR), and rank 0 merges them into RESULTS and prints one
 * report (docs/replay-mpi.md).
 *
 * This is the job's bookkeeping (clocks, heartbeats, the start of each run,
 * the end and the merge); cli/replay_mpi.c composes it with the replay and
 * the summary. MPI is used only here, and only point to point with rank 0, never a
 * collective after the start: a collective with a dead rank blocks for
 * ever, while rank 0 polling with MPI_Iprobe can notice that a rank has
 * gone silent (no heartbeat for DEAD_AFTER) and finish without it. That
 * needs `mpirun --enable-recovery`; without it Open MPI kills the whole job
 * when one rank dies, and `loadtrace replay --merge` rebuilds the partial
 * result from the parts on disk.
 *
 * Common start: once, after MPI_Init, each rank measures its CLOCK_MONOTONIC
 * offset to rank 0's by ping-pong (8 rounds, the one with the shortest round
 * trip kept: offset = t0 - (t1 + t2) / 2). Before each run the ranks report
 * ready to rank 0, which picks an origin START_AHEAD ahead on its clock and
 * sends it; each rank turns it into its own clock with its offset.
 */
#include "replay/replay_mpi.h"

#include "replay/replay_merge.h"
#include "base/lt_buf.h"
#include "traces/lt_mp.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TAG_HB 1      /* heartbeat, rank -> 0 */
#define TAG_READY 2   /* {run, ok}, rank -> 0 */
#define TAG_GO 3      /* origin on rank 0's clock (ns), or -1: give up; 0 -> rank */
#define TAG_DONE 4    /* {requests}, rank -> 0 */
#define TAG_VERDICT 5 /* {ranks missing}, 0 -> rank */
#define TAG_CLK 6     /* clock ping-pong */

#define CLOCK_ROUNDS 8
#define START_AHEAD_NS 200000000LL    /* origin ahead of "go": covers message latency */
#define DEAD_AFTER_NS 15000000000LL   /* a rank silent this long is taken for dead */
#define FIRST_READY_NS 300000000000LL /* setup (trace loading, calibration) may take long */
#define HB_EVERY_NS 1000000000LL

struct lt_replay_mpi {
    int rank, size;
    int64_t offset_ns; /* rank 0's clock minus ours */
    int64_t rtt_ns;
    bool *alive;         /* rank 0: ranks still taken for alive */
    int64_t *last_ns;    /* rank 0: last message from each rank */
    int64_t last_hb;     /* others: last heartbeat sent */
    bool ok;             /* this rank's setup succeeded */
    struct lt_buf extra; /* run record keys: clock offset, round trip */
    char *path;          /* this rank's results file */
    const char *final_path;
    bool missing; /* ranks were lost: MPI_Finalize would wait for them */
    void (*note)(void *ud, const char *msg);
    void *note_ud;
};

static int64_t now_ns(void)
{
    return lt_mono_now().ns;
}

static void nap(void)
{
    struct timespec ts = {0, 1000000}; /* 1 ms: polling, not a hot spin */
    nanosleep(&ts, NULL);
}

bool lt_replay_mpi_wanted(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_SIZE");
}

static void heartbeat(struct lt_replay_mpi *s)
{
    int64_t t = now_ns();
    if (s->rank == 0 || t - s->last_hb < HB_EVERY_NS)
        return;
    s->last_hb = t;
    int x = 0;
    MPI_Send(&x, 1, MPI_INT, 0, TAG_HB, MPI_COMM_WORLD); /* errors: rank 0 is gone */
}

/* Rank 0: take the heartbeats waiting. */
static void drain_hb(struct lt_replay_mpi *s)
{
    int flag = 1;
    while (flag) {
        MPI_Status st;
        if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_HB, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS)
            return;
        if (flag) {
            int x;
            MPI_Recv(&x, 1, MPI_INT, st.MPI_SOURCE, TAG_HB, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            s->last_ns[st.MPI_SOURCE] = now_ns();
        }
    }
}

/* Rank 0: one message `tag` of two int64 from every rank still alive;
 * vals[2k..2k+1] for rank k. A rank silent for `silence` is marked dead. */
static void gather(struct lt_replay_mpi *s, int tag, int64_t *vals, int64_t silence)
{
    bool *got = calloc((size_t)s->size, sizeof *got);
    int64_t t0 = now_ns();
    for (int k = 1; k < s->size; k++)
        if (s->last_ns[k] < t0)
            s->last_ns[k] = t0; /* the silence counts from now */
    for (;;) {
        int pending = 0;
        drain_hb(s);
        for (int k = 1; k < s->size; k++) {
            if (!s->alive[k] || (got && got[k]))
                continue;
            int flag = 0;
            MPI_Iprobe(k, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            if (flag) {
                MPI_Recv(vals + 2 * k, 2, MPI_INT64_T, k, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (got)
                    got[k] = true;
                continue;
            }
            /* A rank stopped (Ctrl-C) between runs reports done instead of
             * ready: it is left out of this run without holding it up; its
             * DONE stays queued for the final gather. */
            if (tag != TAG_DONE &&
                MPI_Iprobe(k, TAG_DONE, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
                flag) {
                vals[2 * k + 1] = 1;
                if (got)
                    got[k] = true;
                continue;
            }
            if (now_ns() - s->last_ns[k] > silence) {
                s->alive[k] = false;
                if (s->note) {
                    char msg[96];
                    snprintf(msg, sizeof msg, "rank %d silent for %.0f s: taken for dead", k,
                             (double)silence / 1e9);
                    s->note(s->note_ud, msg);
                }
                continue;
            }
            pending++;
        }
        if (!pending || !got)
            break;
        nap();
    }
    free(got);
}

/* Others: wait for rank 0's two-int64 message `tag`, heartbeating. */
static void await0(struct lt_replay_mpi *s, int tag, int64_t *v)
{
    for (;;) {
        int flag = 0;
        if (MPI_Iprobe(0, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            v[0] = -1;
            return;
        }
        if (flag) {
            MPI_Recv(v, 2, MPI_INT64_T, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            return;
        }
        heartbeat(s);
        nap();
    }
}

static void measure_clock(struct lt_replay_mpi *s)
{
    if (s->rank == 0) {
        for (int k = 1; k < s->size; k++)
            for (int i = 0; i < CLOCK_ROUNDS; i++) {
                int64_t t1, t0;
                MPI_Recv(&t1, 1, MPI_INT64_T, k, TAG_CLK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                t0 = now_ns();
                MPI_Send(&t0, 1, MPI_INT64_T, k, TAG_CLK, MPI_COMM_WORLD);
            }
        return;
    }
    s->rtt_ns = INT64_MAX;
    for (int i = 0; i < CLOCK_ROUNDS; i++) {
        int64_t t1 = now_ns(), t0;
        MPI_Send(&t1, 1, MPI_INT64_T, 0, TAG_CLK, MPI_COMM_WORLD);
        MPI_Recv(&t0, 1, MPI_INT64_T, 0, TAG_CLK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int64_t t2 = now_ns();
        if (t2 - t1 < s->rtt_ns) {
            s->rtt_ns = t2 - t1;
            s->offset_ns = t0 - (t1 + (t2 - t1) / 2);
        }
    }
}

/* Ready for run `run` (ok: this rank can go on); returns the origin on
 * rank 0's clock, or -1 when the job gives up. */
static int64_t sync_run(struct lt_replay_mpi *s, uint32_t run, bool ok)
{
    int64_t v[2] = {(int64_t)run, ok};
    if (s->rank != 0) {
        MPI_Send(v, 2, MPI_INT64_T, 0, TAG_READY, MPI_COMM_WORLD);
        await0(s, TAG_GO, v);
        return v[0];
    }
    int64_t *vals = calloc(2 * (size_t)s->size, sizeof *vals);
    if (!vals)
        return -1;
    gather(s, TAG_READY, vals, run == 0 ? FIRST_READY_NS : DEAD_AFTER_NS);
    bool all_ok = ok;
    for (int k = 1; k < s->size; k++)
        if (s->alive[k] && !vals[2 * k + 1])
            all_ok = false;
    free(vals);
    int64_t go[2] = {all_ok ? now_ns() + START_AHEAD_NS : -1, 0};
    for (int k = 1; k < s->size; k++)
        if (s->alive[k])
            MPI_Send(go, 2, MPI_INT64_T, k, TAG_GO, MPI_COMM_WORLD);
    return go[0];
}

static int on_run_origin(void *ud, uint32_t run, lt_mono *origin, struct lt_extra *extra,
                         struct lt_err *err)
{
    struct lt_replay_mpi *s = ud;
    int64_t o0 = sync_run(s, run, true);
    if (o0 < 0)
        return lt_errset(err, LT_EINVAL, "run %u: another rank failed; the job gives up", run);
    origin->ns = o0 - s->offset_ns;
    lt_buf_reset(&s->extra);
    struct lt_mp m = {.out = &s->extra};
    lt_mp_cstr(&m, "clock_offset_us");
    lt_mp_int(&m, s->offset_ns / 1000);
    lt_mp_cstr(&m, "clock_rtt_us");
    if (lt_mp_int(&m, s->rank ? s->rtt_ns / 1000 : 0) < 0)
        return lt_errset(err, LT_ENOMEM, "out of memory");
    *extra = (struct lt_extra){.data = (const uint8_t *)s->extra.p, .len = s->extra.len, .n = 2};
    return 0;
}

static void on_progress(void *ud, const struct lt_replay_progress *p)
{
    (void)p;
    struct lt_replay_mpi *s = ud;
    if (s->rank == 0)
        drain_hb(s);
    else
        heartbeat(s);
}

struct lt_replay_mpi *lt_replay_mpi_start(void (*note)(void *ud, const char *msg), void *ud,
                                          struct lt_err *err)
{
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS) {
        lt_errset(err, LT_EIO, "MPI_Init failed");
        return NULL;
    }
    struct lt_replay_mpi *s = calloc(1, sizeof *s);
    if (!s) {
        lt_errset(err, LT_ENOMEM, "out of memory");
        return NULL;
    }
    s->note = note;
    s->note_ud = ud;
    lt_buf_init(&s->extra, 256);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &s->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &s->size);
    s->alive = calloc((size_t)s->size, sizeof *s->alive);
    s->last_ns = calloc((size_t)s->size, sizeof *s->last_ns);
    if (!s->alive || !s->last_ns) {
        free(s->alive);
        free(s->last_ns);
        free(s);
        lt_errset(err, LT_ENOMEM, "out of memory");
        return NULL;
    }
    for (int k = 0; k < s->size; k++)
        s->alive[k] = true;
    measure_clock(s);
    return s;
}

void lt_replay_mpi_abort(void)
{
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int lt_replay_mpi_rank(const struct lt_replay_mpi *s)
{
    return s->rank;
}

int lt_replay_mpi_size(const struct lt_replay_mpi *s)
{
    return s->size;
}

const char *lt_replay_mpi_path(const struct lt_replay_mpi *s)
{
    return s->path;
}

int lt_replay_mpi_part(struct lt_replay_mpi *s, struct lt_replay_opts *o, struct lt_err *err)
{
    /* Every rank checks the same things and so comes to the same verdict. */
    const char *why = NULL;
    if (s->size > LT_PLAN_MAX_PARTS)
        why = "too many ranks";
    if (!strcmp(o->out_path, "-"))
        why = "-o - (standard output) cannot be merged: give a file";
    for (size_t i = 0; i < o->n_levels && !why; i++)
        if (o->levels[i] < (uint32_t)s->size)
            why = "every --concurrency level must be at least the number of ranks (each rank "
                  "keeps at least one request in flight)";
    if (o->max_concurrency && o->max_concurrency < (uint32_t)s->size)
        why = "--max-concurrency must be at least the number of ranks";
    if (why)
        return lt_errset(err, LT_EINVAL, "under mpirun: %s", why);
    size_t plen = strlen(o->out_path) + 32;
    s->path = malloc(plen);
    if (!s->path)
        return lt_errset(err, LT_ENOMEM, "out of memory");
    /* The concurrency is split: rank r gets L / N, and one more if r < L % N. */
    uint32_t n = (uint32_t)s->size, r = (uint32_t)s->rank;
    for (size_t i = 0; i < o->n_levels; i++)
        o->levels[i] = o->levels[i] / n + (r < o->levels[i] % n);
    if (o->max_concurrency)
        o->max_concurrency = o->max_concurrency / n + (r < o->max_concurrency % n);
    s->final_path = o->out_path;
    snprintf(s->path, plen, "%s.rank%d", s->final_path, s->rank);
    o->out_path = s->path;
    o->part = r;
    o->parts = n;
    o->run_origin = on_run_origin;
    o->run_origin_ud = s;
    o->progress = on_progress;
    o->progress_ud = s;
    return 0;
}

void lt_replay_mpi_failed(struct lt_replay_mpi *s)
{
    sync_run(s, 0, false); /* tell rank 0, which tells everyone */
}

/* Rank 0: merge the parts into the final path. */
static int merge(struct lt_replay_mpi *s, FILE *report, struct lt_err *err)
{
    size_t plen = strlen(s->final_path) + 32;
    char **parts = calloc((size_t)s->size, sizeof *parts);
    int m = parts ? 0 : lt_errset(err, LT_ENOMEM, "out of memory");
    for (int k = 0; parts && k < s->size && m == 0; k++) {
        parts[k] = malloc(plen);
        if (parts[k])
            snprintf(parts[k], plen, "%s.rank%d", s->final_path, k);
        else
            m = lt_errset(err, LT_ENOMEM, "out of memory");
    }
    if (m == 0)
        m = lt_replay_merge(s->final_path, (const char *const *)parts, (size_t)s->size, report,
                            err);
    if (parts)
        for (int k = 0; k < s->size; k++)
            free(parts[k]);
    free(parts);
    return m;
}

int lt_replay_mpi_end(struct lt_replay_mpi *s, bool ok, bool ran, FILE *report, struct lt_err *err)
{
    /* The end: everyone reports to rank 0, which merges what it has. */
    int64_t v[2] = {ok, 0};
    int m = 0;
    if (s->rank != 0) {
        MPI_Send(v, 2, MPI_INT64_T, 0, TAG_DONE, MPI_COMM_WORLD);
        await0(s, TAG_VERDICT, v);
        s->missing = v[0] != 0;
        return 0;
    }
    int64_t *vals = calloc(2 * (size_t)s->size, sizeof *vals);
    if (vals)
        gather(s, TAG_DONE, vals, DEAD_AFTER_NS);
    free(vals);
    int dead = 0;
    for (int k = 1; k < s->size; k++)
        dead += !s->alive[k];
    if (ran) /* else setup failed: nothing to merge */
        m = merge(s, report, err);
    s->missing = dead > 0;
    int64_t verdict[2] = {dead, 0};
    for (int k = 1; k < s->size; k++)
        if (s->alive[k])
            MPI_Send(verdict, 2, MPI_INT64_T, k, TAG_VERDICT, MPI_COMM_WORLD);
    return m;
}

bool lt_replay_mpi_stop(struct lt_replay_mpi *s)
{
    bool missing = s->missing;
    free(s->alive);
    free(s->last_ns);
    free(s->path);
    lt_buf_release(&s->extra);
    free(s);
    /* MPI_Finalize waits for every rank, the dead one too: the caller
     * leaves without it (mpirun --enable-recovery accepts that). */
    if (!missing)
        MPI_Finalize();
    return missing;
}

/*
 * The replay plan: which request is sent when, as pure code. One run of a
 * replay is a sequence of sends ("seqs"): seq k sends job order[k] of the
 * trace, due offs[k] µs after the run's origin. The plan owns every rule
 * of when a seq may leave (trace time or open-loop arrivals, a session's
 * later turn waiting for the previous turn's end plus its think time,
 * closed-loop slots, the open-loop concurrency cap, retries and their
 * back-off, the time limit); an engine owns the clock and the requests.
 * Two engines drive it: the curl engine (replay/replay.c) in real time and
 * the sim's model in virtual time (sim/sim_virtual.c). The plan never reads
 * a clock and opens no socket: the engine passes the time, in µs from the
 * run's origin, and the plan calls the engine's send for each seq that
 * leaves. Its one I/O is the trace's: a plan over a loaded trace
 * (lt_plan_jobs_load) reads nothing, one over a streamed trace
 * (lt_plan_jobs_open) reads the file on as it lays seqs out, in
 * lt_plan_init, lt_plan_start, lt_plan_pump and lt_plan_hold (plan_stream.c,
 * through plan_jobs.c), so those may fail with the reader's errors.
 *
 * Seq states:
 *
 *             due, or a closed-loop slot frees
 *   PENDING ----------------------------------------------+
 *     |  |                                                |
 *     |  +-- a session turn, previous turn not DONE       |
 *     |        --> WAITING --(previous DONE + think)------+
 *     |                                                   |
 *     +-- open-loop cap reached --> QUEUED --(slot frees)-+
 *                                                         |
 *     +---------------------------------------------------+
 *     v
 *   SENT (the engine has it) --lt_plan_finish--> DONE
 *     |
 *     +--lt_plan_retry (retries left)--> waits in the retry heap, then
 *        SENT again, or QUEUED behind the cap
 *
 * Every seq of a run ends DONE (lt_plan_finish, or lt_plan_abort when the
 * engine stops). Seqs cut by the window, the duration or another part's
 * split start DONE and are never sent nor recorded.
 *
 * Trace time: seq k sends job k (cut seqs stay in place). Closed and open
 * loop: the trace's jobs in order, repeated when a run asks for more.
 */
#ifndef LT_PLAN_H
#define LT_PLAN_H

#include "plan/plan_jobs.h"
#include "plan/plan_sched.h"
#include "base/lt_err.h"
#include "base/lt_heap.h"
#include "base/lt_vmem.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum lt_plan_mode {
    LT_PLAN_TRACE = 0,       /* the trace's own (transformed) times */
    LT_PLAN_CONCURRENCY = 1, /* closed loop: a fixed number in flight */
    LT_PLAN_RATE = 2,        /* open loop at a rate */
};

enum lt_plan_state {
    LT_PLAN_PENDING = 0,
    LT_PLAN_WAITING = 1,
    LT_PLAN_QUEUED = 2,
    LT_PLAN_SENT = 3,
    LT_PLAN_DONE = 4,
};

struct lt_plan_opts {
    enum lt_plan_mode mode;
    struct lt_plan_sched_tt tt; /* trace time */
    /* closed and open loop: per run; trace time: at most this many (a
     * sample of whole sessions, lt_plan_jobs_sample); 0 = the whole trace */
    uint64_t requests;
    double rate; /* open loop */
    enum lt_arrivals arrivals;
    double cv;
    uint32_t max_concurrency; /* open loop and trace time: cap on in flight; 0 = none */
    int64_t duration_us;      /* open and closed loop time limit; 0 = none */
    uint64_t seed;            /* open-loop arrivals of run r use lt_mix64(seed + r) */
    uint32_t retries;         /* attempts a seq may repeat (lt_plan_retry); 0 = off */
    uint32_t part, parts;     /* parts > 1: only part `part` of lt_plan_jobs_split's deal */
};

/* What the plan asks of its engine. send: seq leaves now (its sched is
 * offs[seq]); a negative code stops the run. stopped (may be NULL): true
 * once the engine is stopping, after which nothing more leaves. */
struct lt_plan_ops {
    int (*send)(void *ud, size_t seq, struct lt_err *err);
    bool (*stopped)(void *ud);
    void *ud;
};

struct lt_plan_item {
    int64_t at;
    size_t seq;
};

/* The plan of the run in progress. Engines read the public fields; only
 * the functions below change them. */
struct lt_plan {
    const struct lt_plan_jobs *jobs;
    struct lt_plan_opts o;
    uint32_t run, level; /* run id; closed loop: seqs in flight */
    size_t nseq;         /* seqs of this run */
    size_t total;        /* seqs that end DONE (closed loop: shrinks at the time limit) */
    size_t done_n;       /* seqs DONE */
    uint64_t planned;    /* seqs this part means to send in this run */
    uint64_t inflight;   /* seqs SENT */
    int64_t sched_end;   /* when the run's last request is due, µs from its origin (a
                          * session's later turns: as the trace had them); -1: unknown,
                          * a closed loop, paced by the server */
    uint32_t *order;     /* job of each seq; NULL when seq k is job (position) k of a streamed
                            trace: read it with lt_plan_job_of */
    int64_t *offs;       /* due time of each seq, µs; its sched once sent */
    uint8_t *state;      /* enum lt_plan_state */
    uint8_t *attempts;   /* retries made, per seq */
    /* What the window or --requests kept (lt_plan_jobs_sample), when they cut
     * the trace: sampled is true and sample says how many requests and
     * sessions of how many. */
    bool sampled;
    struct lt_plan_jobs_sample sample;

    /* internal. What a run holds per request is what bounds a replay's
     * memory (bench/README.md): 14 bytes a seq in trace time (order,
     * offs, state, attempts), 14 + 8 per job in a closed loop, 14 in an
     * open one; a streamed plan only the seqs in play (see below). The
     * heaps and the queue behind a cap grow with what waits in them. */
    struct lt_plan_ops ops;
    size_t cap, cursor;
    bool begun;                        /* closed loop: the origin has passed */
    bool sample_laps;                  /* closed and open loop: --requests was given */
    uint32_t *job_launched, *job_done; /* closed loop: per job, in this run */
    size_t *waitq;                     /* QUEUED seqs, a ring that grows */
    size_t wq_head, wq_len, wq_cap;
    struct lt_heap turns; /* session turns whose time is known (lt_plan_item) */
    struct lt_heap again; /* seqs waiting to be retried (lt_plan_item) */
    uint8_t *mine;        /* split over parts: 1 for this part's jobs; NULL = all */
    /* A streamed trace (lt_plan_jobs_open) in trace time without parts: jobs are read
     * LT_PLAN_LOOKAHEAD seqs ahead of the cursor and laid out as they are read (offs, state); jobs,
     * offs, state and attempts are given back below `low`, the oldest seq not DONE (plan/README.md
     * "Streaming"): only seqs in [low, laid) may be read. */
    bool streamed;
    struct lt_vmem m_offs, m_state, m_attempts;
    struct lt_plan_sched_tt_walk walk0, walk; /* scaled; as it goes */
    size_t kept;                              /* seqs the schedule keeps (the rest are cut) */
    size_t decided, laid;                     /* seqs whose sample is decided; laid out */
    size_t placed;                            /* seqs laid out and kept */
    size_t first_out;                         /* --requests: no session starts at or after it */
    /* an open loop: positions of the trace's laps, those of the whole
     * laps, the seqs kept before the duration, whether the last lap is a
     * sample of whole sessions; its arrivals as they are drawn */
    size_t npos, laps_pos, kept0;
    size_t ncut;                       /* seqs laid out and cut */
    struct lt_plan_jobs_dealer dealer; /* parts: the deal as the trace is read */
    size_t hi_sent; /* a streamed closed loop: seqs below this were sent or passed */
    bool lap_sampled;
    struct lt_plan_sched_arrive arrive;
    int64_t lay_prev; /* offs of the last kept seq laid out */
    int64_t tt_end;   /* a streamed trace time: the last kept seq's offset (-1: none) */
    size_t low, dropped_at, need_edge;
};

/* The job seq sends. */
static inline size_t lt_plan_job_of(const struct lt_plan *p, size_t seq)
{
    return p->order ? p->order[seq] : seq;
}

/* Jobs a streamed plan reads ahead of its cursor. */
#define LT_PLAN_LOOKAHEAD 4096

/* Refuse contradictory options: 0 or LT_EINVAL with err filled. */
int lt_plan_check(const struct lt_plan_opts *o, struct lt_err *err);

/* Check o and size the plan for jobs (kept by reference). Returns 0, or
 * LT_EINVAL / LT_ENOMEM with err filled. */
int lt_plan_init(struct lt_plan *p, const struct lt_plan_jobs *jobs, const struct lt_plan_opts *o,
                 struct lt_err *err);
void lt_plan_release(struct lt_plan *p);

/* Runs of a replay: one per closed-loop level, else one. */
uint32_t lt_plan_runs(const struct lt_plan_opts *o, size_t n_levels);

/* Lay out run `run` (closed loop: with `level` in flight) and reset its
 * state; ops is the engine of this run. */
int lt_plan_start(struct lt_plan *p, uint32_t run, uint32_t level, const struct lt_plan_ops *ops,
                  struct lt_err *err);

/* Send everything due by now_us. */
int lt_plan_pump(struct lt_plan *p, int64_t now_us, struct lt_err *err);

/* When something next falls due (µs), INT64_MAX when only a finish can
 * make anything leave. */
int64_t lt_plan_next_due(const struct lt_plan *p);

/* A sent seq's request is over at end_us and recorded: DONE. Releases the
 * session's next turn and a slot (which may send). */
int lt_plan_finish(struct lt_plan *p, size_t seq, int64_t end_us, struct lt_err *err);

/* A sent seq failed in a way worth repeating at end_us: when retries are
 * left, it is due again after the server's Retry-After (retry_after_us >=
 * 0) or 1 s doubling per attempt, at most 30 s, and 1 is returned (its slot
 * is released, which may send); else 0 and the engine records it. */
int lt_plan_retry(struct lt_plan *p, size_t seq, int64_t end_us, int64_t retry_after_us,
                  struct lt_err *err);

/* The engine stopped: a seq not yet DONE is DONE now, unsent (closed loop:
 * its sched becomes now_us). */
void lt_plan_abort(struct lt_plan *p, size_t seq, int64_t now_us);

/* Make seq's job, state and sched readable (a streamed plan reads and
 * lays out the trace up to it, and gives back what is DONE below it):
 * for an engine that walks every seq from `low`, as one that stops does. */
int lt_plan_hold(struct lt_plan *p, size_t seq, struct lt_err *err);

/* True once every seq of the run is DONE. */
bool lt_plan_over(const struct lt_plan *p);

/* The run record's description of run: mode name, rate, speed, level. */
struct lt_plan_desc {
    const char *mode; /* "trace", "concurrency" or "rate" */
    double rate, speed;
    uint32_t concurrency;
};
void lt_plan_describe(const struct lt_plan *p, struct lt_plan_desc *d);

#endif

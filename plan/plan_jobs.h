/*
 * A trace's requests, loaded for a replay: every record copied out of the
 * reader (messages, blocks and text included), with each session's turns
 * linked (prev/next), so the live replay and the virtual one read a trace
 * the same way and ask for the same lengths.
 */
#ifndef LT_PLAN_JOBS_H
#define LT_PLAN_JOBS_H

#include "base/lt_err.h"
#include "base/lt_u64map.h"
#include "traces/trace_format.h"
#include "traces/trace_media.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One request of the trace, copied out of the reader. A replay holds one
 * per request of the trace (120 bytes, plus the messages, blocks and
 * text a record carries), so the fields are packed: a trace holds at most
 * LT_PLAN_MAX_JOBS requests, and a text at most the reader's value limit. */
struct lt_plan_job {
    uint64_t index; /* record number in the trace */
    int64_t t;      /* trace arrival, µs */
    uint64_t session;
    int64_t think;
    struct lt_msg *msgs;
    uint64_t *blocks;
    char *text;   /* NUL-terminated, or NULL */
    uint32_t has; /* LT_HAS_* bits of the record */
    uint32_t turn;
    uint32_t in, out, reasoning, max_tokens;
    uint32_t n_msgs, n_blocks;
    uint32_t tools_count, tools_tokens;
    int32_t prev; /* job index of the same session's previous turn, -1 if none,
                     LT_PLAN_PREV_GONE when a streamed trace read this turn after the
                     previous one had ended and been dropped (prev_end says when) */
    int32_t next; /* ... and of its next turn, -1 if none (or not read yet) */
    uint32_t text_len;
    /* Trace time: when the previous turn's request ended, + 1; 0 while it
     * has not (or there is none); LT_PLAN_TURN_CUT when the previous turn
     * is not replayed. Set through lt_plan_jobs_turn_over. */
    int64_t prev_end;
};

#define LT_PLAN_PREV_GONE (-2)
#define LT_PLAN_TURN_CUT INT64_MIN       /* the previous turn is not sent (cut by time) */
#define LT_PLAN_TURN_OUT (INT64_MIN + 1) /* ... nor is its session (not in the sample) */

/* Requests a replay may load (job indexes are int32_t). */
#define LT_PLAN_MAX_JOBS ((size_t)INT32_MAX)

struct lt_plan_jobs {
    struct lt_plan_job *v;
    size_t n;
    uint32_t block_tokens; /* the trace header's, 0 if absent */
    /* The jobs' messages, blocks and texts, packed in large slabs (one
     * allocation each would cost the allocator's 16 to 24 bytes of
     * overhead twice per request of a typical trace); freed together by
     * lt_plan_jobs_close. */
    struct lt_plan_slab *slabs;
    /* Where the clients of the few records that say so left (cancel_after,
     * cancel_tokens), by record number, ascending: kept apart so that a
     * job costs nothing for them (lt_plan_job_cancel reads them). */
    struct lt_plan_cancel_rec *cancels;
    size_t n_cancels;
    /* lt_plan_jobs_open: the jobs are read as the run needs them and
     * dropped behind it (the trace streamed); NULL when every job is
     * loaded. See "Streaming" in plan/README.md. */
    struct lt_plan_stream *stream;
    /* What the first reading saw of the arrival times, in record order:
     * the first and the last time >= 0 and how many are >= 0 (a
     * trace-time schedule keeps those: plan_sched.h). */
    int64_t t_first, t_last;
    size_t n_nonneg;
    /* The media parts of the records that have any (traces/trace_media.h),
     * by record number, ascending, kept apart as the cancel points are
     * (lt_plan_job_media reads them). */
    struct lt_plan_media_rec *media;
    size_t n_media, media_cap;
    struct lt_media *media_parts;
    size_t n_media_parts, media_parts_cap;
};

/* One record's media parts: media_parts[first, first + n); bad: its media
 * key could not be read (why, in the message), and its request is to fail
 * alone. */
struct lt_plan_media_rec {
    uint64_t index;
    uint32_t first, n;
    bool bad;
    char why[95];
};

/* Where a request is cancelled (docs/replay.md "Cancellations"): the one
 * rule the live and the virtual replay follow, read from its record.
 *   TOKENS: cancel_tokens >= 1: once that many output tokens came;
 *   TIME:   else cancel_after: that long after the request was sent;
 *   FIRST:  cancel_tokens 0 alone: at the answer's first event, before
 *           any token. */
enum lt_plan_cancel_by {
    LT_PLAN_CANCEL_NONE,
    LT_PLAN_CANCEL_TOKENS,
    LT_PLAN_CANCEL_TIME,
    LT_PLAN_CANCEL_FIRST
};
struct lt_plan_cancel {
    enum lt_plan_cancel_by by;
    uint32_t tokens;  /* TOKENS */
    int64_t after_us; /* TIME */
};
struct lt_plan_cancel_rec {
    uint64_t index; /* the record's number */
    int64_t after;
    uint32_t tokens;
    uint32_t has; /* its LT_HAS_CANCEL_* bits */
};
/* The media of job (one of js's): its parts in *parts, their count
 * returned; NULL and 0 when its record has none. */
const struct lt_plan_media_rec *lt_plan_job_media(const struct lt_plan_jobs *js,
                                                  const struct lt_plan_job *job,
                                                  const struct lt_media **parts);

/* The cancel point of job (one of js's); by NONE when its record has none. */
struct lt_plan_cancel lt_plan_job_cancel(const struct lt_plan_jobs *js,
                                         const struct lt_plan_job *job);

/* Read every record of the trace at path, sessions linked. Fails on an
 * unreadable trace and on one with no requests. */
int lt_plan_jobs_load(struct lt_plan_jobs *js, const char *path, struct lt_err *err);
void lt_plan_jobs_close(struct lt_plan_jobs *js);

/* The trace at path, streamed (plan/README.md "Streaming"): one pass now
 * reads and checks every record but keeps only n, what it saw of the
 * times (t_first, t_last, n_nonneg), the cancel points and the header's
 * block size; v has room for n jobs (address space, not memory),
 * and a job is readable only between lt_plan_jobs_need and the
 * lt_plan_jobs_drop that passes it. A plan over it streams in every mode
 * (plan_stream.c); only a trace the reader sorts at open (order:
 * completion) is held whole, by the reader. Fails like lt_plan_jobs_load. */
int lt_plan_jobs_open(struct lt_plan_jobs *js, const char *path, struct lt_err *err);
/* Make jobs [from, upto) readable, reading the trace on (a streamed trace;
 * a no-op for a loaded one). Sessions are linked as their turns are read:
 * a turn's prev is set, and its previous turn's next when that one is
 * still held; a turn whose previous one is over already gets its prev_end
 * (lt_plan_jobs_turn_over). Asking for a job already dropped starts the reading over. */
int lt_plan_jobs_need(const struct lt_plan_jobs *js, size_t from, size_t upto, struct lt_err *err);
/* A streamed trace read in laps (a loop over it): npos positions, job k
 * of lap l at position l * n + k (v has room for them: address space),
 * each lap's sessions linked anew; lt_plan_jobs_need and _drop then take
 * positions. Before the first need. Returns 0, LT_EINVAL beyond
 * LT_PLAN_MAX_JOBS, LT_ENOMEM. */
int lt_plan_jobs_laps(const struct lt_plan_jobs *js, size_t npos, struct lt_err *err);
/* A streamed trace: jobs below `below` are done with; their memory (whole
 * pages of v, whole slabs) goes back to the system. */
void lt_plan_jobs_drop(const struct lt_plan_jobs *js, size_t below);
/* Jobs held in memory: every job of a loaded trace, the window of a
 * streamed one. */
size_t lt_plan_jobs_held(const struct lt_plan_jobs *js);
/* Jobs [0, this) have been read (every job of a loaded trace). */
size_t lt_plan_jobs_loaded(const struct lt_plan_jobs *js);
/* A streamed trace: back to before the first lt_plan_jobs_need (a run
 * starts over: every job dropped, the turns' ends forgotten). */
void lt_plan_jobs_rewind(const struct lt_plan_jobs *js);
/* What a reading of the records sees of each, in order. */
struct lt_plan_rec_key {
    size_t idx;     /* job index */
    uint64_t index; /* record number */
    int64_t t;
    uint64_t session;
    bool has_session;
    const uint64_t *blocks; /* its prefix blocks */
    uint32_t n_blocks, in, out;
};
/* Every record in order, one call of fn each (the trace read again for a
 * streamed one); fn returns < 0 to stop with that. Returns 0, or what
 * reading or fn failed with. */
int lt_plan_jobs_each(const struct lt_plan_jobs *js,
                      int (*fn)(void *ud, const struct lt_plan_rec_key *k), void *ud,
                      struct lt_err *err);
/* Trace time: job j's request is over (prev_end: its end + 1, or
 * LT_PLAN_TURN_CUT / _OUT when it is not replayed), for its session's next turn:
 * written into the next turn's prev_end when that one is linked, else
 * (a streamed trace that has not read it yet) kept with the session until
 * it is read. */
void lt_plan_jobs_turn_over(const struct lt_plan_jobs *js, size_t j, int64_t prev_end);

/* What a sample kept (lt_plan_jobs_sample): requests and sessions (requests
 * with a session id, by id; a request without one is not counted as a
 * session), of the trace's. */
struct lt_plan_jobs_sample {
    uint64_t requests, sessions;
    uint64_t of_requests, of_sessions;
};

/* A sample of the trace that never cuts a session in half (a
 * session's later turn replayed without its earlier ones, or an earlier
 * one whose answer nothing follows, is no longer the conversation).
 * A session belongs where its first request is and is kept whole or not
 * at all:
 *   - window [win_start_us, win_end_us) (win_end_us 0: no end): the
 *     sessions whose first request arrives in it, with all their turns,
 *     the ones after the window's end included;
 *   - max_requests > 0: then the first sessions in order of their first
 *     request, as many as fit whole in max_requests requests (the first
 *     that does not fit ends the sample, so it stays a slice of time).
 * keep[j] receives 1 for each kept job (n = js->n); s (may be NULL) what
 * was kept. Returns 0, or LT_EUSAGE when max_requests is smaller than the
 * first kept session (nothing would be replayed; the error names its
 * size, the smallest max_requests that keeps it whole). */
int lt_plan_jobs_sample(const struct lt_plan_jobs *js, int64_t win_start_us, int64_t win_end_us,
                        uint64_t max_requests, uint8_t *keep, struct lt_plan_jobs_sample *s,
                        struct lt_err *err);

/* The same rule request by request, for a plan that streams the trace
 * (lt_plan_jobs_sample is built on it). With max_requests, two readings in
 * order: lt_plan_jobs_sampler_count for every request (a session's size), then
 * lt_plan_jobs_sampler_keep for every request; without, the second alone. It
 * holds one entry per session. first_out is the first request whose
 * session did not fit (SIZE_MAX: none), after which no session starts: a
 * session's first request is kept when it falls in the window and comes
 * before first_out, a later one when its first was. */
struct lt_plan_jobs_sampler {
    int64_t ws, we;
    uint64_t max;
    struct lt_u64map sess; /* session -> its requests, then DECIDED | KEPT */
    bool full;
    uint64_t admitted;
    size_t first_out;
    struct lt_plan_jobs_sample sm;
    bool again; /* lt_plan_jobs_sampler_again: every decision made */
};
void lt_plan_jobs_sampler_init(struct lt_plan_jobs_sampler *s, int64_t win_start_us,
                               int64_t win_end_us, uint64_t max_requests);
void lt_plan_jobs_sampler_release(struct lt_plan_jobs_sampler *s);
int lt_plan_jobs_sampler_count(struct lt_plan_jobs_sampler *s, const struct lt_plan_rec_key *k,
                               struct lt_err *err);
/* *keep: whether request k is in the sample. LT_EUSAGE when max_requests
 * is smaller than the first session to keep (the error names its size),
 * LT_ENOMEM. */
int lt_plan_jobs_sampler_keep(struct lt_plan_jobs_sampler *s, const struct lt_plan_rec_key *k,
                              bool *keep, struct lt_err *err);
/* After a whole reading: the next reading's lt_plan_jobs_sampler_keep says the
 * same from what was decided (a session's entry, first_out), with no
 * count first and sm left as it is. */
void lt_plan_jobs_sampler_again(struct lt_plan_jobs_sampler *s);

/* Output tokens asked for when a record says neither out nor max_tokens. */
#define LT_PLAN_DEFAULT_OUT 128

/* The prompt and output lengths a replay asks for (traces/trace_lengths.h). */
void lt_plan_job_lengths(const struct lt_plan_job *job, uint32_t default_out, uint32_t *want_in,
                         uint32_t *want_out);

#define LT_PLAN_MAX_PARTS 4096 /* processes a replay may be split over */

/* The deterministic split of a trace over `parts` processes: out[j] gets
 * the part (0..parts-1) of the j-th of the n jobs. A session (equal
 * `session` ids; a request without one is a session of its own) goes
 * whole to one part, so a conversation never spans parts. Sessions are
 * dealt in the order of their first request, each to the part whose load
 * so far is least (ties: the lowest part), a request weighing
 * 1024 + in + out tokens: balanced in request count and tokens, and over
 * time as well, since the deal follows arrival order. */
void lt_plan_jobs_split(const struct lt_plan_job *jobs, size_t n, uint32_t parts, uint32_t *out);

/* The same deal request by request, for a streamed trace: a session's
 * part kept by its id (one entry per session), the loads as they grow.
 * lt_plan_jobs_split and it share the pick and the weight. */
struct lt_plan_jobs_dealer {
    uint32_t parts;
    uint64_t *load;
    struct lt_u64map sess; /* session -> its part */
};
int lt_plan_jobs_dealer_init(struct lt_plan_jobs_dealer *d, uint32_t parts, struct lt_err *err);
void lt_plan_jobs_dealer_release(struct lt_plan_jobs_dealer *d);
/* The part of the next request in order. Returns it, or LT_ENOMEM. */
int64_t lt_plan_jobs_dealer_next(struct lt_plan_jobs_dealer *d, bool has_session, uint64_t session,
                                 uint32_t in, uint32_t out, struct lt_err *err);

#endif

/*
 * The sim's model in virtual time: a discrete-event driver that sends a
 * run's requests to a fresh lt_sim_model at their scheduled times (or as
 * slots free in a closed loop), with no HTTP and no clock, and writes what
 * a client would have measured as ordinary results records (a run record,
 * then one result per request), so `loadtrace analyze` reads the file like
 * the results of a live replay. An hour of trace takes seconds of CPU.
 *
 * What a request "sees" here is the model's emission times exactly: it is
 * sent at its due time (sched = sent in open loop and trace time; in a
 * closed loop sched = sent = when a slot frees, as the live replay records
 * it), its first byte is its arrival (the sim answers with headers and a
 * role chunk at once), every token is a chunk of one token at its emission
 * time, and the end is the last token. Status 200, finish "length", counts
 * "usage" (the sim always reports usage). A request whose prompt + output
 * exceeds the profile's max_model_len gets the sim's 400 instead.
 *
 * Prefix caching: the live replay synthesizes prompt text from each trace
 * record's prefix blocks (or its session, or nothing shared), and the sim
 * hashes blocks of that text. The driver derives the sim's chained block
 * hashes from the same information, so two requests share sim blocks
 * exactly when their synthesized prompts would share them.
 */
#ifndef LT_SIM_VIRTUAL_H
#define LT_SIM_VIRTUAL_H

#include "sim/sim_profile.h"
#include "traces/lt_err.h"
#include "traces/trace_writer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One request of a run, in send order. Nothing is kept after the call. */
struct lt_sim_vreq {
    uint64_t index;         /* trace index, written as the result's `i` */
    int64_t sched_us;       /* due time, µs from the run origin (ignored in a closed loop) */
    uint32_t in;            /* prompt tokens (>= 1) */
    uint32_t out;           /* output tokens, all emitted (>= 1) */
    const uint64_t *blocks; /* the trace's prefix block hashes, or NULL */
    uint32_t nblocks;
    bool has_session; /* no blocks: a session's turns share their prompt prefix */
    uint64_t session;
    int64_t prev;     /* index in the run's array of the session's previous turn, or -1:
                         this request is then due at max(sched, prev end + think) */
    int64_t think_us; /* with prev: already scaled like the schedule */
};

struct lt_sim_vrun {
    uint32_t id;
    const char *mode;         /* "trace", "concurrency" or "rate" (run record) */
    uint32_t concurrency;     /* > 0: closed loop with this many in flight, in array order */
    uint32_t max_concurrency; /* open loop / trace: cap on in flight; 0 = none. A request
                                 waiting for a slot keeps its sched; sent is when it got one */
    double rate, speed;       /* for the run record; 0 = not set */
    uint64_t warmup;          /* the first `warmup` requests are marked warm-up */
    int64_t duration_us;      /* closed loop: nothing is sent at or after it; 0 = no limit */
    uint32_t block_tokens;    /* size of the trace's blocks; 0 = 512 */
    const char *target;       /* run record's target; NULL = "sim:virtual" */
    const char *model;        /* run record's model; NULL = the profile's name */
};

struct lt_sim_vstats {
    uint64_t requests;   /* results written */
    uint64_t ok;         /* of them, status 200 */
    uint64_t out_tokens; /* tokens emitted */
    uint64_t steps;      /* engine steps */
    uint64_t cached_tokens;
    int64_t model_end_us; /* virtual time of the run's last event */
};

/* Run n requests through a new model with profile p and write the run
 * record and one result per request to w (a results writer). Requests
 * are sent in order of due time (ties in array order). st may be NULL.
 * Returns 0, or a negative LT_E* code with err filled (allocation or
 * writer failure; the file then holds what was written before). */
int lt_sim_virtual_run(const struct lt_sim_profile *p, const struct lt_sim_vreq *reqs, size_t n,
                       const struct lt_sim_vrun *run, struct lt_writer *w, struct lt_sim_vstats *st,
                       struct lt_err *err);

#endif

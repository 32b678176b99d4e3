/*
 * When each request leaves: the pure schedule computations of replay's
 * time-driven modes, kept apart from the event loop so that every mode can
 * be unit-tested without a server.
 *
 * Trace time: the trace's own arrival times, transformed in this order:
 *   1. --window START,END keeps arrivals in [START, END) and moves START to 0;
 *   2. --spread D: k requests whose timestamps were rounded to the same value
 *      t are spread evenly over [t, t + D) (i-th at t + i·D/k);
 *   3. --max-gap G: any idle gap longer than G becomes G;
 *   4. --rate R rescales time so the mean rate is R ((n - 1) / span), which
 *      keeps the burst structure; or --speed X divides time by X;
 *   5. the first kept request is moved to 0 (no idle lead-in);
 *   6. --duration D drops what would leave at or after D.
 *
 * Open loop: arrivals drawn at rate R, Poisson (exponential gaps), gamma
 * with a coefficient of variation CV (shape 1/CV², bursty when CV > 1) or
 * constant; the first at 0.
 */
#ifndef LT_PLAN_SCHED_H
#define LT_PLAN_SCHED_H

#include "base/lt_arrivals.h"
#include "base/lt_err.h"
#include "base/lt_rng.h"

#include <stddef.h>
#include <stdint.h>

/* The latest a schedule may send: 100 years, in µs. Far beyond any real
 * replay, and far enough from INT64_MAX that offsets in ns (offs * 1000
 * added to a monotonic clock) cannot overflow. */
#define LT_PLAN_MAX_OFFSET_US ((int64_t)100 * 366 * 86400 * 1000000)

struct lt_plan_sched_tt {
    double speed;       /* 0 or 1 = real time */
    double rate;        /* 0 = keep the trace's rate */
    int64_t max_gap_us; /* 0 = no limit */
    int64_t win_start_us;
    int64_t win_end_us;  /* 0 = no window end */
    int64_t spread_us;   /* 0 = no spreading */
    int64_t duration_us; /* 0 = no limit */
};

/* t: n arrival times (µs, non-decreasing). keep: NULL, or which requests
 * step 1 keeps instead of the window's own test (lt_plan_jobs_sample: whole
 * sessions; the window still moves START to 0). out[i] receives request
 * i's send offset in µs from the run origin, or -1 when it is dropped. Returns the
 * number kept, or LT_EINVAL (with err) for contradictory options, or for
 * a transformation that would put a send beyond LT_PLAN_MAX_OFFSET_US (the
 * error names the option and its value); it is checked before the
 * arithmetic, so nothing overflows. */
int64_t lt_plan_sched_trace(const int64_t *t, size_t n, const struct lt_plan_sched_tt *o,
                            const uint8_t *keep, int64_t *out, struct lt_err *err);

/* The same transform request by request, for a plan that reads the trace
 * as it goes (plan/README.md "Streaming"); lt_plan_sched_trace is built
 * on it, so both give the same offsets. Steps 2-3 need each group of
 * equal times whole (its size k), and steps 4-6 the first and last time
 * the kept requests have after step 3 and their number (a first pass). */
struct lt_plan_sched_tt_walk {
    struct lt_plan_sched_tt o;
    int64_t shift, prev; /* --max-gap: the shift so far, the previous time (-1: none) */
    int64_t first;       /* steps 4-5 */
    double factor;
};
/* Refuse contradictory or negative options: 0 or LT_EINVAL. */
int lt_plan_sched_tt_check(const struct lt_plan_sched_tt *o, struct lt_err *err);
void lt_plan_sched_tt_walk_init(struct lt_plan_sched_tt_walk *w, const struct lt_plan_sched_tt *o);
/* Steps 2-3 for member m (0-based, in order) of a group of k kept requests
 * at time t (µs from the window's start, >= 0): *x receives the time after
 * --spread and --max-gap. LT_EINVAL when --spread would place a group
 * beyond LT_PLAN_MAX_OFFSET_US. */
int lt_plan_sched_tt_walk_gap(struct lt_plan_sched_tt_walk *w, int64_t t, size_t m, size_t k,
                              int64_t *x, struct lt_err *err);
/* Steps 4-5 from the first and last time after step 3 of the `kept`
 * requests: the factor of --rate or --speed, refused (LT_EINVAL, naming
 * the option) when the span would exceed LT_PLAN_MAX_OFFSET_US. */
int lt_plan_sched_tt_walk_scale(struct lt_plan_sched_tt_walk *w, int64_t first, int64_t last,
                                size_t kept, struct lt_err *err);
/* Steps 4-6 of a time x after step 3: the send offset, or -1 when the
 * duration cuts it. */
int64_t lt_plan_sched_tt_walk_place(const struct lt_plan_sched_tt_walk *w, int64_t x);

/* Open-loop arrivals one at a time (lt_plan_sched_open_loop is built on it). */
struct lt_plan_sched_arrive {
    enum lt_arrivals a;
    double rate, mean, shape, t;
    int64_t duration_us;
    uint64_t i; /* arrivals drawn */
    struct lt_rng rng;
};
/* Returns 0, or LT_EINVAL for a rate that is not a positive number or a
 * gamma CV that is not positive. */
int lt_plan_sched_arrive_init(struct lt_plan_sched_arrive *g, enum lt_arrivals a, double rate,
                              double cv, uint64_t seed, int64_t duration_us, struct lt_err *err);
/* The next arrival in *us: 1, or 0 when it would fall at or after the
 * duration, or LT_EINVAL beyond LT_PLAN_MAX_OFFSET_US without a duration
 * (the error names the rate and the request). */
int lt_plan_sched_arrive_next(struct lt_plan_sched_arrive *g, int64_t *us, struct lt_err *err);

/* Fill out[0..n) with open-loop send offsets (µs) at `rate` requests/s.
 * cv is the gamma coefficient of variation. When duration_us > 0, arrivals
 * at or after it are cut. Returns the number of arrivals (<= n), or
 * LT_EINVAL (a rate so low an arrival would fall beyond
 * LT_PLAN_MAX_OFFSET_US, say). */
int64_t lt_plan_sched_open_loop(enum lt_arrivals a, double rate, double cv, uint64_t seed,
                                int64_t duration_us, int64_t *out, size_t n, struct lt_err *err);

#endif

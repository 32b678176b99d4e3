/*
 * The synthesizer: writes a trace from distributions (`loadtrace synth`), or
 * from a real trace's empirical distributions at any rate and length
 * (`synth --fit`), so that users can scale real traffic up or down.
 *
 * Arrivals: a process of "units" (a single request, or a session of several
 * turns) whose gaps have mean 1 and the chosen shape (constant, exponential =
 * Poisson, gamma with a given CV, or, fitting a real trace, the real gaps
 * themselves replayed in runs of consecutive gaps from random places: a
 * block bootstrap that keeps the real CV, the gap percentiles and the bursts
 * that last up to a run), run in operational time and
 * mapped to real time through the cumulative rate Lambda(t) of the chosen
 * rate shape (flat, linear ramp, diurnal sine), so the shape changes the
 * rate and the gap distribution keeps its CV locally.
 *
 * Output is a pure function of the options (and the fitted file): the same
 * seed gives the same bytes. docs/synth.md describes every option.
 *
 * Memory: without --fit, the sessions in progress (their message list and
 * the state of the arrival process); with --fit, a sample of at most
 * fit_sample records of the real trace (whole sessions, chosen by a hash of
 * the session id), their block ids, about as many of its inter-arrival gaps
 * (a reservoir of runs of 4096), and the set of the real trace's session ids
 * (sessions only).
 */
#ifndef LT_TRACE_SYNTH_H
#define LT_TRACE_SYNTH_H

#include "base/lt_arrivals.h"
#include "base/lt_err.h"
#include "workload/media_mix.h"

#include <stdbool.h>
#include <stdint.h>

/* The highest rate a trace can hold, req/s: its clock counts microseconds,
 * so above it arrivals stop moving. synth and synth --servegen refuse
 * more. */
#define LT_SYNTH_RATE_MAX 1e6

enum lt_shape {
    LT_SHAPE_FLAT = 0,
    LT_SHAPE_RAMP,    /* rate goes linearly from a to b req/s over the duration */
    LT_SHAPE_DIURNAL, /* rate * (1 + b * sin(2 pi t / a)), a = period in s, 0 <= b < 1 */
};

enum lt_len_kind {
    LT_LEN_NONE = 0,
    LT_LEN_FIXED,     /* a */
    LT_LEN_UNIFORM,   /* integers a..b, both included */
    LT_LEN_LOGNORMAL, /* median a, sigma b of the underlying normal; at least 1 */
};

struct lt_len_spec {
    enum lt_len_kind kind;
    double a, b;
};

/* Parse "fixed:N", "uniform:A,B" or "lognormal:MEDIAN,SIGMA". */
int lt_len_spec_parse(const char *s, struct lt_len_spec *l, struct lt_err *err);
/* Parse "flat", "ramp:R0,R1" or "diurnal:PERIOD,AMPLITUDE" (PERIOD a duration
 * such as 24h or 600s). */
int lt_shape_parse(const char *s, enum lt_shape *shape, double *a, double *b, struct lt_err *err);

struct lt_synth_opts {
    uint64_t seed;
    enum lt_arrivals arrivals;
    double cv;           /* for LT_ARR_GAMMA; 0 = the fitted trace's CV */
    double rate;         /* requests per second; 0 = the fitted trace's rate */
    int64_t duration_us; /* stop at this arrival time; 0 = no limit */
    uint64_t requests;   /* stop after this many records; 0 = no limit */
    enum lt_shape shape;
    double shape_a, shape_b;

    struct lt_len_spec in, out; /* prompt (new tokens of each turn) and output */
    double reasoning_share;     /* share of requests with reasoning ... */
    double reasoning_frac;      /* ... and the part of their output it is */
    struct lt_len_spec turns;   /* turns per session; LT_LEN_NONE = no sessions */
    int64_t think_us;           /* mean think time between turns (exponential) */
    double prefix_share;        /* share of sessions starting with a shared prefix ... */
    uint32_t prefix_tokens;     /* ... of this many tokens ... */
    uint32_t prefix_count;      /* ... chosen among this many (0 = 1) */
    uint32_t block_tokens;      /* prefix block size; 0 = no blocks */
    const char *model, *api;    /* written on every record, or NULL */
    int64_t round_us;           /* round arrivals down to a multiple; 0 = no, -1 = as the fit */

    const char *fit;     /* real trace to fit, or NULL */
    uint64_t fit_sample; /* records kept from it at most; 0 = 100000 */

    const char *created; /* header's created; NULL = 1970-01-01T00:00:00Z */
    const char *command; /* the command line, for the header's meta; may be NULL */
    /* --images (workload/media_mix.h): share 0 = none. Generated requests
     * only (a fitted trace keeps its own media). */
    struct lt_media_mix images;
};

struct lt_synth_stats {
    uint64_t records;
    uint64_t units;       /* sessions (or single requests) started */
    double unit_rate;     /* units per second asked of the arrival process */
    double cv;            /* CV of the arrival process's gaps */
    const char *arrivals; /* "constant", "poisson", "gamma" */
    uint64_t fit_records; /* records in the fitted trace */
    uint64_t fit_pool;    /* records kept in the sample */
    uint64_t fit_units;   /* sessions (or requests) in the sample */
    double fit_rate;      /* the fitted trace's mean rate */
    double fit_cv;        /* the fitted trace's unit inter-arrival CV */
    int64_t round_us;     /* rounding applied */
};

/* Write the trace to out_path. Returns 0 or a negative LT_E* code with err
 * filled; st (may be NULL) says what was made. */
int lt_synth_run(const struct lt_synth_opts *o, const char *out_path, struct lt_synth_stats *st,
                 struct lt_err *err);

#endif

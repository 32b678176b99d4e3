/*
 * loadtrace analyze: what a results file says about a server, computed in
 * one streaming pass with memory that does not grow with the number of
 * requests.
 *
 * Every figure follows docs/metrics.md (the formulas of DESIGN.md's "Metric
 * definitions"): per run, the seed table (C, Agg tok/s, Per-req tok/s,
 * Tokens, Wall, Ok), latency distributions (TTFT, TTFC, ITL, TPOT, E2E, each
 * from the send time and, for TTFT, TTFC and E2E, also from the scheduled
 * time: wrk2's coordinated-omission correction), schedule lag, goodput
 * against SLOs, errors by class, token split and phase speeds, prefix-cache
 * hits, realized vs requested lengths, and a time series; across runs, the
 * sweep curves and the saturation knee.
 *
 * Distributions are log-linear histograms (traces/lt_hist.h) with 2^-bits
 * relative precision (bits = 10 by default: every percentile within 0.1 % of
 * a recorded value); time series have a bounded number of buckets (the
 * bucket width doubles when a run outlasts them). Memory is therefore fixed
 * per run, whatever the number of requests.
 *
 * Use: lt_analyze_file() fills a struct lt_analysis; the lt_analyze_write_*
 * functions render it; lt_analysis_release() frees it. Or, for the default
 * terminal report in one call, lt_analyze_print_summary().
 */
#ifndef LT_ANALYZE_H
#define LT_ANALYZE_H

#include "traces/lt_err.h"
#include "traces/lt_hist.h"
#include "traces/trace_format.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum lt_analyze_format {
    LT_ANALYZE_TEXT = 0, /* terminal tables (the default) */
    LT_ANALYZE_CSV = 1,
    LT_ANALYZE_JSON = 2,
};

/* A request counts as sent late when sent - sched exceeds this (1 ms). */
#define LT_ANALYZE_LATE_US 1000

/* Which per-request throughput the seed table shows (both are always
 * computed and in --json / --csv). */
enum lt_analyze_perreq {
    LT_ANALYZE_PERREQ_DECODE = 0, /* mean of (out - 1) / (E2E - TTFT) */
    LT_ANALYZE_PERREQ_E2E = 1,    /* mean of out / E2E */
};

struct lt_analyze_opts {
    /* SLOs for goodput, microseconds; 0 = not given. */
    int64_t slo_ttft_us;
    int64_t slo_tpot_us;
    int64_t slo_e2e_us;
    enum lt_analyze_format format;
    enum lt_analyze_perreq perreq;
    bool include_warmup;  /* count warm-up results too (default: exclude) */
    bool details;         /* text: also tokens, cache, lengths, time series */
    int64_t bucket_us;    /* time-series bucket; 0 = 1 s (doubled as needed) */
    double knee_fraction; /* 0 = 0.5, see docs/metrics.md "Saturation knee" */
    int hist_bits;        /* histogram precision; 0 = 10 */
    int64_t lag_warn_us;  /* warn when schedule lag p99 exceeds it; 0 = 10 ms */
};

/* Fill opts with the defaults (everything above at its 0 meaning). */
void lt_analyze_opts_init(struct lt_analyze_opts *opts);

/* The distributions of a run, in microseconds. The *_S variants are measured
 * from the scheduled time instead of the send time. */
enum lt_analyze_metric {
    LT_AM_TTFT = 0,
    LT_AM_TTFC,
    LT_AM_ITL,
    LT_AM_TPOT,
    LT_AM_E2E,
    LT_AM_TTFT_S,
    LT_AM_TTFC_S,
    LT_AM_E2E_S,
    LT_AM_LAG, /* sent - sched, negative values (early sends) count as 0 */
    LT_AM_COUNT
};

/* Short name of a metric ("ttft", "ttft_sched", ..., "lag"). */
const char *lt_analyze_metric_name(enum lt_analyze_metric m);

#define LT_ANALYZE_ERR_CLASSES 16
#define LT_ANALYZE_ERR_NAME 32
#define LT_ANALYZE_TS_MAX 300 /* time-series buckets per run */
#define LT_ANALYZE_RUNS_MAX 256
#define LT_ANALYZE_PEND 128 /* values gathered per histogram before recording */

struct lt_analyze_errclass {
    char name[LT_ANALYZE_ERR_NAME]; /* err, or "http_NNN", "no_status", "empty", "not_sent" */
    uint64_t n;
};

/* One time-series bucket: [k * width, (k + 1) * width) of the run's clock. */
struct lt_analyze_bucket {
    uint64_t tokens;     /* output tokens that arrived (by chunk time; at end without chunks) */
    uint64_t started;    /* requests sent */
    uint64_t ended;      /* requests that ended (any outcome) */
    uint64_t ok;         /* Ok requests that ended */
    uint64_t errors;     /* non-Ok requests that ended (or were due, if never sent) */
    struct lt_hist *e2e; /* E2E of the Ok requests that ended here (coarse), or NULL */
    struct lt_hist *ttft;
};

struct lt_analyze_ts {
    int64_t width_us;
    double inv_width;   /* private: 1 / width_us (a division per lookup cost more), */
    int64_t last_lo[2]; /* and the last two buckets looked up: [last_lo, */
    uint64_t last_w[2]; /* last_lo + last_w) is b[last_k]; last_w 0: none */
    uint32_t last_k[2];
    uint32_t n; /* buckets in use */
    struct lt_analyze_bucket b[LT_ANALYZE_TS_MAX];
    /* Private: E2E [0] and TTFT [1] values not yet in their bucket's
     * histogram (pend_k: the bucket), recorded in batches; and histograms
     * emptied by merges, for reuse. */
    uint32_t n_pend[2];
    uint32_t pend_k[2][LT_ANALYZE_PEND];
    uint64_t pend_v[2][LT_ANALYZE_PEND];
    uint32_t n_spare;
    struct lt_hist *spare[2 * LT_ANALYZE_TS_MAX];
};

struct lt_analyze_run {
    /* From the run record (have_record false: results named a run that had
     * no run record). */
    bool have_record;
    uint32_t file; /* which input file (0 for the first) */
    uint32_t id;
    char mode[16];
    uint32_t concurrency;
    double rate, speed;
    char target[128];
    char model[128];
    uint32_t warmup_declared; /* the run record's `warmup` */

    uint64_t results;             /* result records of the run */
    uint64_t warmup;              /* of them, warm-up results excluded */
    uint64_t measured;            /* results - warmup */
    uint64_t sent;                /* measured with a send time */
    uint64_t ok;                  /* measured and Ok */
    uint64_t late;                /* measured, sent more than LT_ANALYZE_LATE_US after sched */
    int64_t first_sent, last_end; /* window of the measured requests, us */
    double wall_s;                /* (last_end - first_sent) / 1e6 */

    uint64_t tokens;    /* sum of out over Ok requests */
    uint64_t in_tokens; /* sum of in over Ok requests */
    double agg_tps;     /* tokens / wall_s */
    double perreq_e2e;  /* mean of out / E2E over Ok requests with E2E > 0 */
    uint64_t n_perreq_e2e;
    double perreq_decode; /* mean of (out-1)/(E2E-TTFT), Ok, out >= 2, E2E > TTFT */
    uint64_t n_perreq_decode;
    double sum_e2e_rate, sum_dec_rate; /* private accumulators */

    struct lt_hist *h[LT_AM_COUNT];
    uint64_t negative[LT_AM_COUNT]; /* negative intervals seen (recorded as 0) */
    /* Private: TTFT and TTFT_S of the results whose first content is
     * their first token, which are also their TTFC and TTFC_S: recorded
     * once, added to both at the end (lt_analysis_finish()). */
    struct lt_hist *same[2];
    /* Private: values not yet in h[] (and same[], after them). They are
     * recorded LT_ANALYZE_PEND at a time, one histogram after another,
     * which keeps each histogram's counters in the cache;
     * lt_analysis_finish() records the rest. */
    uint32_t n_pend[LT_AM_COUNT + 2];
    uint64_t pend[LT_AM_COUNT + 2][LT_ANALYZE_PEND];

    /* Goodput: Ok requests meeting every SLO given, from the send time and
     * from the scheduled time; per second of wall. */
    uint64_t good, good_sched;
    double goodput, goodput_sched;

    struct lt_analyze_errclass errs[LT_ANALYZE_ERR_CLASSES];
    uint32_t n_errs;
    uint64_t errs_other; /* classes that did not fit the table */

    /* Token split (Ok requests). content = out - reasoning. */
    uint64_t reasoning, content;
    uint64_t with_reasoning; /* reasoning > 0 */
    uint64_t tool_calls;     /* finish == "tool_calls" */
    double sum_reason_rate, sum_content_rate;
    uint64_t n_reason_rate, n_content_rate;
    double reason_tps;  /* mean of reasoning / (fc - ft) */
    double content_tps; /* mean of (out - reasoning - 1) / (end - fc) */

    /* Prefix cache (Ok requests whose result has `cached`). */
    uint64_t cache_reported, cache_hits; /* results with cached; with cached > 0 */
    uint64_t cached_tokens, cache_in_tokens;

    /* Realized vs requested lengths (Ok requests with both fields). */
    uint64_t n_want_in, in_off;       /* in_off: |in - want_in| > 5 % of want_in */
    double sum_in_dev, sum_in_absdev; /* sums of (in - want_in) / want_in */
    uint64_t n_want_out, out_off;
    double sum_out_dev, sum_out_absdev;

    /* Where token counts came from. */
    uint64_t count_usage, count_chunks, count_unknown;

    struct lt_analyze_ts ts;
};

/* One point of a sweep curve (runs with a concurrency or a rate). */
struct lt_analyze_point {
    uint32_t run; /* index into lt_analysis.runs */
    double x;     /* concurrency or rate */
};

struct lt_analysis {
    char path[512]; /* the first input file */
    uint32_t n_files;
    char source[64];
    struct lt_analyze_opts opts;
    uint32_t n_runs;
    struct lt_analyze_run *runs[LT_ANALYZE_RUNS_MAX];
    uint64_t results, values;

    /* Sweep: runs ordered by x (concurrency if any run has one, else rate). */
    const char *sweep_axis; /* "concurrency", "rate", or NULL (no sweep) */
    uint32_t n_points;
    struct lt_analyze_point points[LT_ANALYZE_RUNS_MAX];
    int knee; /* index into points of the knee, or -1 */
    double knee_fraction;
    /* Private: the run each result names, by id & 63, looked up before the
     * list (results of several runs may alternate). */
    struct lt_analyze_run *run_cache[64];
};

/* Read the results file at path and compute everything. opts may be NULL
 * (defaults). On error, returns a negative LT_E* code with err filled; the
 * analysis then holds what was read before the error and must still be
 * released. */
int lt_analyze_file(const char *path, const struct lt_analyze_opts *opts, struct lt_analysis *a,
                    struct lt_err *err);

/* The incremental form, for tests and for several files: init, then
 * lt_analysis_add_file() for each file (or lt_analysis_next_file() and the
 * items of a file in order), finish. Runs of different files are kept
 * apart even when their ids are equal. */
int lt_analysis_init(struct lt_analysis *a, const struct lt_analyze_opts *opts, struct lt_err *err);
int lt_analysis_add_file(struct lt_analysis *a, const char *path, struct lt_err *err);
void lt_analysis_next_file(struct lt_analysis *a);
int lt_analysis_add_run(struct lt_analysis *a, const struct lt_run *run, struct lt_err *err);
int lt_analysis_add_result(struct lt_analysis *a, const struct lt_result *res, struct lt_err *err);
int lt_analysis_finish(struct lt_analysis *a, struct lt_err *err);
/* Free what a holds; safe on a zeroed or released analysis. */
void lt_analysis_release(struct lt_analysis *a);

/* Render the analysis to out in a.opts.format (text, CSV or JSON). Returns 0
 * or LT_EIO. */
int lt_analyze_write(const struct lt_analysis *a, FILE *out, struct lt_err *err);
int lt_analyze_write_text(const struct lt_analysis *a, FILE *out, struct lt_err *err);
int lt_analyze_write_csv(const struct lt_analysis *a, FILE *out, struct lt_err *err);
int lt_analyze_write_json(const struct lt_analysis *a, FILE *out, struct lt_err *err);

/* What `loadtrace analyze FILE` prints by default: per run the seed table,
 * latency percentiles, errors by class, goodput if SLOs are given, and
 * warnings (schedule lag p99 above opts->lag_warn_us, realized lengths
 * off). opts may be NULL; its format is honoured (text by default). Returns
 * 0 or a negative LT_E* code with err filled. */
int lt_analyze_print_summary(const char *results_path, const struct lt_analyze_opts *opts,
                             FILE *out, struct lt_err *err);

/* Percentile helpers on a run's histogram, in microseconds. */
double lt_analyze_pct(const struct lt_hist *h, double p);

#endif

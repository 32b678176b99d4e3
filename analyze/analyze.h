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
 * Distributions are log-linear histograms (base/lt_hist.h) with 2^-bits
 * relative precision (bits = 10 by default: every percentile within 0.1 % of
 * a recorded value); time series have a bounded number of buckets (the
 * bucket width doubles when a run outlasts them). Memory is therefore fixed
 * per run, whatever the number of requests.
 *
 * Use: lt_analyze_file() fills a struct lt_analyze; the lt_analyze_write_*
 * functions render it; lt_analyze_release() frees it. Or, for the default
 * terminal report in one call, lt_analyze_print_summary().
 */
#ifndef LT_ANALYZE_H
#define LT_ANALYZE_H

#include "base/lt_err.h"
#include "base/lt_hist.h"
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
    /* Read every intact frame of a damaged file (the reader's salvage
     * mode); on_skip (may be NULL) hears of each piece skipped. */
    bool salvage;
    void (*on_skip)(void *ud, const char *what);
    void *skip_ud;
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

#define LT_ANALYZE_ERR_MSGS 32
#define LT_ANALYZE_ERR_MSG 160

/* Failures grouped by class, status and the server's message (the
 * "message" of its error body, else the body's start): what it said. */
struct lt_analyze_errmsg {
    char name[LT_ANALYZE_ERR_NAME]; /* the class, as in errs */
    int32_t status;                 /* HTTP status, 0 when none */
    char msg[LT_ANALYZE_ERR_MSG];
    uint64_t n;
};

/* One time-series bucket: [k * width, (k + 1) * width) of the run's clock. */
struct lt_analyze_bucket {
    uint64_t tokens;  /* output tokens that arrived (by chunk time; at end without chunks) */
    uint64_t started; /* requests sent */
    uint64_t ended;   /* requests that ended (any outcome) */
    uint64_t ok;      /* Ok requests that ended */
    uint64_t errors;  /* non-Ok requests that ended (or were due, if never sent) */
    /* Private: sums of the times (us) of the sends and of the ends counted
     * in started and ended, which give the time-average of requests in
     * flight (lt_analyze_ts_point()). A double: one conversion and one add
     * per result, and no overflow whatever the times. */
    double start_sum, end_sum;
    struct lt_hist *e2e; /* E2E of the Ok requests that ended here (coarse), or NULL */
    struct lt_hist *ttft;
};

struct lt_analyze_ts {
    int64_t width_us;
    int64_t t_last;     /* the latest time counted, us (the last bucket ends there) */
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

    uint64_t results;  /* result records of the run */
    uint64_t warmup;   /* of them, warm-up results excluded */
    uint64_t measured; /* results - warmup - unsent */
    uint64_t unsent;   /* never sent: the replay was stopped first (neither ok nor errors) */
    uint64_t sent;     /* measured with a send time */
    uint64_t ok;       /* measured and Ok */
    /* Measured and cancelled: closed on purpose where the trace's client
     * left (a result's `cancelled`). Neither Ok nor an error: in no
     * latency, token or goodput figure, and not in errs; their output
     * tokens, received until they were closed, in cancelled_tokens. */
    uint64_t cancelled, cancelled_tokens;
    uint64_t late;                /* measured, sent more than LT_ANALYZE_LATE_US after sched */
    int64_t first_sent, last_end; /* window of the measured requests, us */
    int64_t last_sent;            /* the latest send of them, us */
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
     * once, added to both at the end (lt_analyze_finish()). */
    struct lt_hist *same[2];
    /* Private: values not yet in h[] (and same[], after them). They are
     * recorded LT_ANALYZE_PEND at a time, one histogram after another,
     * which keeps each histogram's counters in the cache;
     * lt_analyze_finish() records the rest. */
    uint32_t n_pend[LT_AM_COUNT + 2];
    uint64_t pend[LT_AM_COUNT + 2][LT_ANALYZE_PEND];

    /* Goodput: Ok requests meeting every SLO given, from the send time and
     * from the scheduled time; per second of wall. */
    uint64_t good, good_sched;
    double goodput, goodput_sched;

    struct lt_analyze_errclass errs[LT_ANALYZE_ERR_CLASSES];
    uint32_t n_errs;
    uint64_t errs_other; /* classes that did not fit the table */
    struct lt_analyze_errmsg msgs[LT_ANALYZE_ERR_MSGS];
    uint32_t n_msgs;
    uint64_t msgs_other; /* failures with a message that did not fit the table */

    /* Token split (Ok requests). content = out - reasoning. */
    uint64_t reasoning, content;
    uint64_t with_reasoning; /* reasoning > 0 */
    uint64_t tool_calls;     /* finish == "tool_calls" */
    double sum_reason_rate, sum_content_rate;
    uint64_t n_reason_rate, n_content_rate;
    double reason_tps;  /* mean of reasoning / (fc - ft) */
    double content_tps; /* mean of (out - reasoning - 1) / (end - fc) */

    /* The server's own timings (Ok requests whose result has them: llama.cpp's
     * "timings", or a llama.cpp twin's in a virtual run): requests, and the
     * sums of srv_pf (us) and srv_pf_n (tokens), of srv_dec and srv_dec_n. */
    uint64_t srv_pf_reqs, srv_pf_us, srv_pf_tokens;
    uint64_t srv_dec_reqs, srv_dec_us, srv_dec_tokens;

    /* Prefix cache (Ok requests whose result has `cached`). */
    uint64_t cache_reported, cache_hits; /* results with cached; with cached > 0 */
    uint64_t cached_tokens, cache_in_tokens;

    /* Realized vs requested lengths (Ok requests with both fields). */
    uint64_t n_want_in, in_off;       /* in_off: |in - want_in| > 5 % of want_in */
    double sum_in_dev, sum_in_absdev; /* sums of (in - want_in) / want_in */
    uint64_t n_want_out, out_off;
    double sum_out_dev, sum_out_absdev;

    /* A probe of a capacity search (replay --find-max): the run record's
     * search fields and its verdict record's (an older file's run record
     * has both); search[0] == 0 for any other run. left_out, when not
     * NULL, says why lt_analyze_finish left the probe out of the answer
     * and the capacity table: it has no verdict, or it is of the model's
     * search of the whole trace that chose the window the file's other
     * probes of its engine replay (lt_analyze_is_probe). */
    struct lt_analyze_probe {
        char search[16]; /* "rate" or "concurrency" */
        char engine[8];  /* "live" or "virtual" */
        char verdict[12];
        char slo[96];
        char why[400]; /* a probe stopped early: why */
        bool windowed; /* it replayed a window of the trace (the run record's "window") */
        const char *left_out;
        double load, target, attain, lo, hi;
    } probe;
    /* Where token counts came from. */
    uint64_t count_usage, count_chunks, count_unknown;
    /* The server's side (scrape samples; analyze_server.h), NULL without
     * any; output tokens of every result of the run, warm-up and failed
     * ones included (what the server generated for it); the prefix-cache
     * hit rate the trace predicts (the run record's trace_prefix_hit_ppm),
     * NAN when unknown. */
    struct lt_analyze_server *srv;
    uint64_t out_all;
    double trace_hit;
    double trace_hit_share; /* 1, or the share of prefix chains trace_hit is estimated from */
    /* The run's self-check (its "check" record, analyze_check.c): the load
     * delivered and the client's CPU, summed over the ranks of an MPI run
     * (n_checks of them); n_checks 0 when the file has none. */
    struct lt_check check;
    uint32_t n_checks;
    char stop_by[16]; /* check.stopped_by points here (the reader's copy is gone) */

    struct lt_analyze_ts ts;
    struct lt_analyze_mods *mods; /* the modality split (analyze_media.h); NULL: no results */
    /* A fleet's run (its run record names "replicas"): each replica's
     * figures (analyze_fleet.c); NULL for one target. */
    struct lt_analyze_fleet *fleet;
};

#define LT_ANALYZE_REPLICAS_MAX 256

/* One replica of a fleet's run. */
struct lt_analyze_replica {
    char label[256];
    uint64_t requests, ok, errors; /* measured results it served (cancelled ones aside) */
    uint64_t failed_over;          /* results that failed on it and were served by another */
    uint64_t in_tokens, out_tokens;
    double inflight_mean; /* over the run's wall time */
    uint32_t inflight_peak;
    double ttft_p50, ttft_p99; /* ms, of its Ok results; NAN without */
    /* Prefix-cache hit rate: from its scraped counters (hit_from
     * "metrics"), else its answers' usage ("usage"); hit_from NULL: none. */
    double hit_rate;
    const char *hit_from;
    /* private */
    bool scraped;
    double hits0, queries0, hits1, queries1;
    uint64_t usage_cached, usage_in;
    int64_t (*iv)[2];
    size_t n_iv, cap_iv;
    double *ttft;
    size_t n_ttft, cap_ttft;
};

struct lt_analyze_fleet {
    uint32_t n;
    char route[32];
    bool failover;
    double balance;       /* most requests on one replica over the mean; NAN without any */
    double hit_rate;      /* prefix-cache hits over queries of every scraped replica, else cached
                           * over prompt tokens of their answers' usage; NAN: neither */
    const char *hit_from; /* "metrics", "usage" or NULL */
    uint64_t unknown;     /* results naming a replica the run record does not have */
    struct lt_analyze_replica *r;
};

/* One point of a sweep curve (runs with a concurrency or a rate). */
struct lt_analyze_point {
    uint32_t run; /* index into lt_analyze.runs */
    double x;     /* concurrency or rate */
};

struct lt_analyze {
    char path[512]; /* the first input file */
    uint32_t n_files;
    char source[64];
    struct lt_analyze_opts opts;
    uint32_t n_runs;
    struct lt_analyze_run *runs[LT_ANALYZE_RUNS_MAX];
    uint64_t results, values;
    /* What salvage skipped, over every file: damaged frames (and their
     * compressed bytes) and bad values inside intact frames. */
    uint64_t skipped_frames, skipped_bytes, skipped_values;

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
int lt_analyze_file(const char *path, const struct lt_analyze_opts *opts, struct lt_analyze *a,
                    struct lt_err *err);

/* The incremental form, for tests and for several files: init, then
 * lt_analyze_add_file() for each file (or lt_analyze_next_file() and the
 * items of a file in order), finish. Runs of different files are kept
 * apart even when their ids are equal. */
int lt_analyze_init(struct lt_analyze *a, const struct lt_analyze_opts *opts, struct lt_err *err);
int lt_analyze_add_file(struct lt_analyze *a, const char *path, struct lt_err *err);
void lt_analyze_next_file(struct lt_analyze *a);
int lt_analyze_add_run(struct lt_analyze *a, const struct lt_run *run, struct lt_err *err);
int lt_analyze_add_result(struct lt_analyze *a, const struct lt_result *res, struct lt_err *err);
int lt_analyze_add_scrape(struct lt_analyze *a, const struct lt_scrape *sc, struct lt_err *err);
int lt_analyze_add_check(struct lt_analyze *a, const struct lt_check *k, struct lt_err *err);
int lt_analyze_add_verdict(struct lt_analyze *a, const struct lt_verdict *v, struct lt_err *err);
int lt_analyze_finish(struct lt_analyze *a, struct lt_err *err);
/* Free what a holds; safe on a zeroed or released analysis. */
void lt_analyze_release(struct lt_analyze *a);

/* Render the analysis to out in a.opts.format (text, CSV or JSON). Returns 0
 * or LT_EIO. */
int lt_analyze_write(const struct lt_analyze *a, FILE *out, struct lt_err *err);
int lt_analyze_write_text(const struct lt_analyze *a, FILE *out, struct lt_err *err);
int lt_analyze_write_csv(const struct lt_analyze *a, FILE *out, struct lt_err *err);
int lt_analyze_write_json(const struct lt_analyze *a, FILE *out, struct lt_err *err);

/* What `loadtrace analyze FILE` prints by default: per run the seed table,
 * latency percentiles, errors by class, goodput if SLOs are given, and
 * warnings (schedule lag p99 above opts->lag_warn_us, realized lengths
 * off). opts may be NULL; its format is honoured (text by default). Returns
 * 0 or a negative LT_E* code with err filled. */
int lt_analyze_print_summary(const char *results_path, const struct lt_analyze_opts *opts,
                             FILE *out, struct lt_err *err);

/* One bucket of a run's time series as reports show it. Rates are per
 * second of the bucket's real length: the last bucket ends at the latest
 * time counted, not at the end of its width (and its tokens/s counts at
 * least a hundredth of the width, so that a run ending just after a bucket
 * starts shows no spike). */
struct lt_analyze_ts_point {
    double t_s;          /* start, seconds of the run's clock */
    double len_s;        /* real length, seconds (> 0) */
    double tokens_per_s; /* output tokens that arrived / len_s (>= width / 100) */
    double in_flight;    /* requests in flight, averaged over the bucket's time */
    uint64_t ok, errors; /* requests that ended in the bucket */
    /* Latency percentiles, ms, of the requests that ended (E2E) or got
     * their first token (TTFT) in the bucket; NAN when there were none. */
    double e2e_p50_ms, e2e_p99_ms, ttft_p50_ms, ttft_p99_ms;
};

/* Bucket k (< r->ts.n) of run r's time series. */
void lt_analyze_ts_point(const struct lt_analyze_run *r, uint32_t k, struct lt_analyze_ts_point *p);

/* The requests a capacity probe's attainment is the share of (replay
 * --find-max): the one rule for the search, which judges each probe by it,
 * and for the report of its file. Of the probe's measured requests, those
 * cancelled where the trace's client left neither met the SLO nor failed
 * it, and the faults say nothing of the load: every error class but the
 * load's own (timeout, first_token_timeout) and, in a probe stopped early
 * for saturation (cut; its run record says why), but the requests the stop
 * aborted, which the load caused. judged = measured - cancelled - faults. */
struct lt_analyze_judged {
    uint64_t judged, cancelled, faults;
};
void lt_analyze_probe_judged(const struct lt_analyze_run *r, bool cut, struct lt_analyze_judged *j);

/* The answer of a capacity search in the file, for one engine ("live" or
 * "virtual"): the highest load whose probe met the SLO, the lowest that
 * failed it (0: none), goodput at the former (requests/s meeting the SLO:
 * the probe's attainment of its judged requests), and the probes. Returns
 * false when the file holds no probe of that engine. */
struct lt_analyze_capacity {
    const char *axis, *slo;
    double target;
    double max_ok, min_fail, goodput;
    uint32_t probes;
    int max_run; /* index into lt_analyze.runs of the max_ok probe, -1 = none */
};
bool lt_analyze_capacity(const struct lt_analyze *a, const char *engine,
                         struct lt_analyze_capacity *c);
/* Whether run r is a probe of the file's capacity search with a verdict
 * that counts (after lt_analyze_finish): its search set and nothing left
 * it out. */
static inline bool lt_analyze_is_probe(const struct lt_analyze_run *r)
{
    return r->probe.search[0] && !r->probe.left_out;
}
/* The capacity section: text (a table of probes and the answer), JSON
 * (the value of "capacity", null when no probe), CSV (rows of probes). */
void lt_analyze_capacity_text(const struct lt_analyze *a, FILE *out);
void lt_analyze_capacity_json(const struct lt_analyze *a, FILE *out);

/* A run's self-check (analyze_check.c). Flagged: its delivered load was
 * more than 5 % off what was asked, or its client near saturation. */
#define LT_ANALYZE_FLAG_LEN 300 /* bytes of one flag sentence */
#define LT_ANALYZE_FLAGS_MAX 16 /* flag sentences shown at the top of a report */
bool lt_analyze_check_flagged(const struct lt_analyze_run *r);
/* Up to max sentences "CHECK run N (level): ...", one per flag of each
 * flagged run, saying which figures it makes doubtful; returns how many. */
int lt_analyze_check_flags(const struct lt_analyze *a, char (*w)[LT_ANALYZE_FLAG_LEN], int max);
/* One run's figures: "delivered 49.9 req/s of 50 asked (-0.2 %), ...". */
void lt_analyze_check_line(const struct lt_analyze_run *r, char *buf, size_t n);
/* The same line of one check record (ranks: how many were summed into
 * it), as replay prints it at a run's end. */
void lt_analyze_check_describe(const struct lt_check *k, uint32_t ranks, char *buf, size_t n);
/* An overloaded run, from the server's metrics (analyze_server.c): its
 * waiting queue grew without bound, or most of TTFT is waiting in it;
 * false when neither (or no metrics were scraped). buf: the sentence. */
bool lt_analyze_overload(const struct lt_analyze_run *r, char *buf, size_t n);
/* The figures that verdict is drawn from: both tests, the waiting queue's
 * means over the run's quarters of sends, and Little's law's wait. */
struct lt_analyze_overload {
    bool judged;  /* metrics enough to judge (else every field is unset) */
    bool grew;    /* the queue grew without bound */
    bool waiting; /* TTFT is mostly waiting */
    double quarters[4];
    double waiting_mean, rate, wait_s, ttft_mean_s; /* NAN when not known */
};
bool lt_analyze_overload_eval(const struct lt_analyze_run *r, struct lt_analyze_overload *o);
/* ,"overload": null (not judged) or {"overloaded": bool, ...}. */
void lt_analyze_overload_json(const struct lt_analyze_run *r, FILE *out);
/* A stopped run: "stopped by SIGTERM at 5.7 s: 8807 requests never sent
 * (not errors; the figures are of the 12 sent)". */
void lt_analyze_stop_line(const struct lt_analyze_run *r, char *buf, size_t n);
/* The flags, at the top of the text report (nothing when none), then a
 * line for each stopped run. */
void lt_analyze_check_text(const struct lt_analyze *a, FILE *out);
/* A run's `, "check": {...}` (null without one), and its CSV columns
 * (",rate_asked,...,flag"; empty without one). */
void lt_analyze_check_json(const struct lt_analyze_run *r, FILE *out);
void lt_analyze_check_csv(const struct lt_analyze_run *r, FILE *out);

/* Percentile helpers on a run's histogram, in microseconds. */
double lt_analyze_pct(const struct lt_hist *h, double p);

#endif

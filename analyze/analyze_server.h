/*
 * The server's side of a run: what its metrics endpoint said during the
 * run (the scrape samples of trace-format §2.7), summed up as answers --
 * queue and batch sizes, KV-cache fill, preemptions, the prefix-cache hit
 * rate against the trace's, the server's own latency percentiles, GPU
 * energy per token -- and reconciled with what loadtrace counted.
 * docs/server-metrics.md §7 defines each figure.
 */
#ifndef LT_ANALYZE_SERVER_H
#define LT_ANALYZE_SERVER_H

#include "base/lt_err.h"
#include "traces/trace_format.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define LT_ANALYZE_SRV_POINTS_MAX 65536 /* samples kept per run for p50s and the series */
#define LT_ANALYZE_SRV_BUCKETS 128      /* bounds of a server histogram */
#define LT_ANALYZE_SRV_KV_HIGH 0.9      /* "KV cache nearly full" */
#define LT_ANALYZE_WARN_LEN 300         /* bytes of one warning of the report */

/* The server's counters analyze reads, and its histograms. */
enum lt_srv_counter {
    LT_SRV_PREEMPT = 0,
    LT_SRV_PROMPT,
    LT_SRV_GEN,
    LT_SRV_PQUERIES,
    LT_SRV_PHITS,
    LT_SRV_ENERGY,
    LT_SRV_COUNTERS
};
enum lt_srv_hist { LT_SRV_TTFT = 0, LT_SRV_E2E, LT_SRV_HISTS };

struct lt_analyze_srv_hist {
    bool have;
    uint32_t n;
    double le[LT_ANALYZE_SRV_BUCKETS], cum[LT_ANALYZE_SRV_BUCKETS];
    double sum, count;
};

/* One sample of the gauges; NAN where the page had no value. */
struct lt_analyze_srv_point {
    double t_s;
    double running, waiting, kv, gpu_util, power_w;
};

struct lt_analyze_server {
    char server[16];
    char ep[256]; /* the first endpoint seen */
    uint64_t samples, errors;
    char last_err[160];
    uint32_t n, cap; /* points kept (the first LT_ANALYZE_SRV_POINTS_MAX) */
    struct lt_analyze_srv_point *pts;
    /* counters: the first and last values seen, and when */
    bool have_c[LT_SRV_COUNTERS];
    double first_c[LT_SRV_COUNTERS], last_c[LT_SRV_COUNTERS];
    bool have_t;
    int64_t first_t, last_t; /* us, of the samples with values */
    struct lt_analyze_srv_hist first_h[LT_SRV_HISTS], last_h[LT_SRV_HISTS];
    /* KV above LT_ANALYZE_SRV_KV_HIGH: seconds, from sample to sample */
    double kv_high_s;
    bool have_prev_kv;
    double prev_kv;
    int64_t prev_kv_t;
};

/* The answers (docs/server-metrics.md §7); NAN where unknown. */
struct lt_analyze_srv_stats {
    double running_mean, running_p50, running_max;
    double waiting_mean, waiting_p50, waiting_max;
    double kv_mean, kv_max, kv_high_s, kv_high_frac;
    double preemptions;
    double prompt_tokens, gen_tokens; /* counter deltas over the run */
    double hit_rate;                  /* prefix-cache hits / queries over the run */
    double ttft_p50_ms, ttft_p99_ms, e2e_p50_ms, e2e_p99_ms; /* server histograms */
    double gpu_util_mean, power_mean_w, energy_j, j_per_token;
    double span_s; /* from the first to the last sample with values */
};

/* A run's server figures, empty, for lt_analyze_server_add; NULL when out
 * of memory. lt_analyze_server_free(NULL) is a no-op. */
struct lt_analyze_server *lt_analyze_server_new(void);
/* Add one scrape sample to s. Returns 0 or LT_ENOMEM. */
int lt_analyze_server_add(struct lt_analyze_server *s, const struct lt_scrape *sc,
                          struct lt_err *err);
void lt_analyze_server_free(struct lt_analyze_server *s);
void lt_analyze_server_stats(const struct lt_analyze_server *s, struct lt_analyze_srv_stats *st);
/* The q-quantile (0..1) of the histogram after - before (cumulative
 * counts at the same bounds), interpolated within its bucket as
 * Prometheus' histogram_quantile does; NAN when empty. */
double lt_analyze_srv_quantile(const struct lt_analyze_srv_hist *before,
                               const struct lt_analyze_srv_hist *after, double q);

/* The report's pieces (analyze_report.c calls them): run r's server
 * section in text, its warnings (reconciliation, a warm cache, every
 * scrape failed; returns how many, at most max), its JSON member
 * ("server": {...} or null, after a comma), and the CSV of every series
 * of the analysis. */
struct lt_analyze_run;
struct lt_analyze;
void lt_analyze_server_text(const struct lt_analyze_run *r, FILE *out);
int lt_analyze_server_warnings(const struct lt_analyze_run *r, char (*w)[LT_ANALYZE_WARN_LEN],
                               int max);
void lt_analyze_server_json(const struct lt_analyze_run *r, FILE *out);
/* How the server CSV's first line starts (what --server-csv may replace). */
#define LT_ANALYZE_SERVER_CSV_HEAD "file,run,t_s,"
void lt_analyze_server_csv(const struct lt_analyze *a, FILE *out);

#endif

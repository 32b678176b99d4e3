/*
 * loadtrace compare: two traces (is B representative of A?) or two results
 * files (did B beat A?), with the evidence for every verdict.
 *
 * Traces: per property (inter-arrival times, burstiness, input and output
 * lengths, reasoning share, tool-call rate, turns per session, prefix
 * reuse), the two-sample Kolmogorov-Smirnov statistic D with its asymptotic
 * p-value, the Wasserstein-1 distance normalized by A's mean, the difference
 * of p50/p90/p99, and a verdict against the thresholds of docs/compare.md;
 * the overall verdict is the worst one. Distributions are the log-linear
 * histograms of traces/trace_info.h (exact counts, 0.1 % value precision),
 * so memory does not grow with the number of records, except for
 * trace_info's sets of distinct prefix blocks and sessions.
 *
 * Results: per matched run (same concurrency or rate), the difference B - A
 * of p50 and p99 of TTFT, TPOT and E2E, of Agg and per-request tok/s and of
 * the mean output length, each with a bootstrap confidence interval; when
 * both replayed the same trace, per-request paired differences. The
 * bootstrap and the pairing use a bottom-k sample of each run (the k
 * requests with the smallest hash of their trace index: the same requests
 * in both files when they replayed the same trace), so memory is bounded by
 * k whatever the number of requests.
 */
#ifndef LT_COMPARE_H
#define LT_COMPARE_H

#include "traces/lt_err.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum lt_compare_verdict {
    LT_CMP_SAME = 0,      /* traces: representative; results: no difference that matters */
    LT_CMP_CLOSE = 1,     /* traces: close; results: B better */
    LT_CMP_DIFFERENT = 2, /* traces: not representative; results: B worse */
    LT_CMP_NODATA = 3,    /* a side has no data for it */
};

struct lt_compare_opts {
    bool json;             /* JSON instead of the terminal report */
    const char *plots_dir; /* charts (CDF overlays, QQ plots); NULL = none */
    const char *html_path; /* HTML report; NULL = none */
    uint32_t sample;       /* results: bottom-k sample per run; 0 = 20000 */
    uint32_t bootstrap;    /* results: bootstrap resamples; 0 = 1000 */
    uint64_t seed;         /* bootstrap random seed; 0 = 1 */
    double confidence;     /* results: CI level; 0 = 0.95 */
    double margin;         /* results: relative difference that matters; 0 = 0.05 */
};

/* What a comparison found, for the command to choose its exit code. */
struct lt_compare_summary {
    bool traces;          /* true: traces were compared; false: results */
    int overall;          /* enum lt_compare_verdict: the worst per property (traces) */
    uint32_t properties;  /* properties (traces) or metrics (results) compared */
    uint32_t different;   /* of them, different (traces) or worse (results) */
    uint32_t better;      /* results: metrics where B is better */
    uint32_t charts;      /* charts written */
    bool gnuplot_missing; /* charts asked for but gnuplot is not installed */
    char notes[8][512];   /* gnuplot warnings and other notes for the user */
    uint32_t n_notes;
};

/* Compare the files at path_a and path_b (both traces or both results) and
 * write the report to out. Returns 0 (whatever the verdict), or a negative
 * LT_E* code with err filled. */
int lt_compare_files(const char *path_a, const char *path_b, const struct lt_compare_opts *opts,
                     FILE *out, struct lt_compare_summary *sum, struct lt_err *err);

/* The statistics, exposed for tests. */

/* Two-sample Kolmogorov-Smirnov statistic of two histograms made with the
 * same bits and highest (LT_EINVAL otherwise), with the Wasserstein-1
 * distance (in the histograms' unit, values taken at bucket midpoints). */
struct lt_hist;
int lt_compare_hists(const struct lt_hist *a, const struct lt_hist *b, double *ks, double *w1,
                     struct lt_err *err);
/* Asymptotic p-value of D for sample sizes na and nb (Kolmogorov
 * distribution with Stephens' small-sample correction). */
double lt_compare_ks_pvalue(double d, uint64_t na, uint64_t nb);

#endif

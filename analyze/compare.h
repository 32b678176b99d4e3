/*
 * loadtrace compare: two traces (is B representative of A?) or two results
 * files (did B beat A?), with the evidence for every verdict.
 *
 * Each comparison computes a result struct, which the renderings lay out
 * (text, JSON, charts); lt_compare_files is both steps for the command.
 *
 * Traces (compare_traces.c): per property (inter-arrival times, burstiness,
 * input and output lengths, reasoning share, tool-call rate, turns per
 * session, prefix reuse), the two-sample Kolmogorov-Smirnov statistic D
 * with its asymptotic p-value, the Wasserstein-1 distance normalized by A's
 * mean, the difference of p50/p90/p99, and a verdict against the thresholds
 * of docs/compare.md; the overall verdict is the worst one. Distributions
 * are the log-linear histograms of workload/trace_info.h (exact counts,
 * 0.1 % value precision), so memory does not grow with the number of
 * records, except for trace_info's sets of distinct prefix blocks and
 * sessions.
 *
 * Results (compare_results.c): per matched run (same concurrency or rate),
 * the difference B - A of p50 and p99 of TTFT, TPOT and E2E, of Agg and
 * per-request tok/s and of the mean output length, each with a bootstrap
 * confidence interval; when both replayed the same trace, per-request
 * paired differences. The bootstrap and the pairing use a bottom-k sample
 * of each run (the k requests with the smallest hash of their trace index:
 * the same requests in both files when they replayed the same trace), so
 * memory is bounded by k whatever the number of requests.
 *
 * Twin (compare_twin.c): when B is a prediction of A (a virtual run, target
 * sim:virtual, or --twin), per matched run the error (B - A) / A of p50,
 * p90 and p99 of TTFT, TPOT, ITL and E2E, of throughput and goodput, the
 * KS distance of each distribution, and one verdict against the
 * tolerances below (docs/compare.md, "Twin").
 *
 * Rendering: compare_render.c (text and JSON, schema loadtrace-compare/1)
 * and compare_plot.c (CDF overlays and QQ plots through analyze_plot.h).
 */
#ifndef LT_COMPARE_H
#define LT_COMPARE_H

#include "analyze/analyze.h"
#include "base/lt_err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Every verdict of both comparisons; lt_compare_verdict_name gives the word
 * the reports print. */
enum lt_compare_verdict {
    LT_CMP_NODATA = 0,     /* a side has no data for it */
    LT_CMP_REPRESENTATIVE, /* traces: within the "same" thresholds */
    LT_CMP_CLOSE,          /* traces: within the "close" thresholds */
    LT_CMP_DIFFERENT,      /* traces: beyond them; results: a difference, neither side better */
    LT_CMP_SAME,           /* results: no difference that matters */
    LT_CMP_BETTER,         /* results: B better */
    LT_CMP_WORSE,          /* results: B worse */
    LT_CMP_VERDICTS
};

/* "no data", "representative", "close", "different", "same", "B better",
 * "B worse". */
const char *lt_compare_verdict_name(enum lt_compare_verdict v);

struct lt_compare_opts {
    bool json;             /* JSON instead of the terminal report */
    const char *plots_dir; /* charts (CDF overlays, QQ plots); NULL = none */
    const char *html_path; /* HTML report; NULL = none */
    uint32_t sample;       /* results: bottom-k sample per run; 0 = 20000 */
    uint32_t bootstrap;    /* results: bootstrap resamples; 0 = 1000 */
    uint64_t seed;         /* bootstrap random seed; 0 = 1 */
    double confidence;     /* results: CI level; 0 = 0.95 */
    double margin;         /* results: relative difference that matters; 0 = 0.05 */
    bool salvage;          /* read every intact frame of a damaged file */
    bool twin;             /* results: the twin table even when B is not a virtual run */
    /* results: SLOs for goodput (us; 0 = not given: every Ok request counts) */
    int64_t slo_ttft_us, slo_tpot_us, slo_e2e_us;
    void (*on_skip)(void *ud, const char *what); /* salvage: each piece skipped; may be NULL */
    void *skip_ud;
};

/* What a comparison found, for the command to choose its exit code. */
struct lt_compare_summary {
    bool traces;                     /* true: traces were compared; false: results */
    enum lt_compare_verdict overall; /* traces: the worst per property */
    uint32_t properties;             /* properties (traces) or metrics (results) compared */
    uint32_t different;              /* of them, different (traces); worse or different (results) */
    uint32_t better;                 /* results: metrics where B is better */
    bool twin;                       /* results: the twin table was shown */
    uint32_t twin_misses;            /* of its matched runs, those whose twin verdict failed */
    uint32_t pairs;                  /* results: runs of A matched with a run of B */
    bool traces_differ;              /* results: A and B replayed different traces */
    uint32_t charts;                 /* charts written */
    bool gnuplot_missing;            /* charts asked for but gnuplot is not installed */
    uint64_t skipped[2];             /* salvage: frames plus values skipped in A and in B */
    char notes[8][512];              /* gnuplot warnings and other notes for the user */
    uint32_t n_notes;
};

/* Compare the files at path_a and path_b (both traces or both results) and
 * write the report to out. Returns 0 (whatever the verdict), or a negative
 * LT_E* code with err filled. */
int lt_compare_files(const char *path_a, const char *path_b, const struct lt_compare_opts *opts,
                     FILE *out, struct lt_compare_summary *sum, struct lt_err *err);

/* Options with every 0 replaced by its default (see lt_compare_opts). */
void lt_compare_opts_defaults(struct lt_compare_opts *o);

/* ---- traces ------------------------------------------------------------- */

/* The properties compared, in the order the reports list them. */
enum lt_compare_prop {
    LT_CMPP_INTERARRIVAL,
    LT_CMPP_IN,
    LT_CMPP_OUT,
    LT_CMPP_REASONING,
    LT_CMPP_TURNS,
    LT_CMPP_GAP_CV,
    LT_CMPP_PEAK,
    LT_CMPP_TOOL_RATE,
    LT_CMPP_PREFIX_REUSE,
    LT_CMPP_IMAGE_SHARE,  /* records with images (info's media) */
    LT_CMPP_IMAGE_PIXELS, /* p50 width x p50 height of the images */
    LT_CMPP_COUNT
};

/* How a property is judged: two distributions, or two scalars by their
 * relative or absolute difference. */
enum lt_compare_kind { LT_CMP_DIST, LT_CMP_REL, LT_CMP_ABS };

struct lt_compare_prop_result {
    const char *name;
    const char *unit; /* of the values shown (after scale) */
    enum lt_compare_kind kind;
    /* distributions; ha, hb belong to the comparison */
    const struct lt_hist *ha, *hb;
    double scale; /* histogram unit -> shown unit */
    bool w1_abs;  /* W1 in absolute shown units (shares), not / mean(A) */
    uint64_t na, nb;
    double ks, p, w1n;
    double ks_tol, w1_tol; /* the thresholds used for "representative" */
    double qa[3], qb[3];   /* p50, p90, p99 (shown units) */
    /* scalars (p: the tool-call rate's two-proportion p-value) */
    double va, vb, diff; /* diff: relative (LT_CMP_REL) or absolute (LT_CMP_ABS) */
    enum lt_compare_verdict verdict;
    const char *chart; /* chart name stem, or NULL */
};

/* One side's figures for the report's header. */
struct lt_compare_trace_side {
    const char *path;
    uint64_t records;
    double rate, span_s;
    double fit_rate; /* made by synth --fit at an asked --rate (its header's meta); 0: not */
};

struct lt_compare_tside;

struct lt_compare_traces {
    struct lt_compare_trace_side a, b;
    struct lt_compare_prop_result props[LT_CMPP_COUNT];
    enum lt_compare_verdict overall;  /* the worst of the properties */
    uint32_t compared, different;     /* properties with data; of them, different */
    uint64_t skipped_a, skipped_b;    /* salvage: frames and values skipped in A, in B */
    struct lt_compare_tside *sa, *sb; /* private: what the histograms live in */
};

/* Read both traces (paths are kept, not copied) and judge every property;
 * opts (may be NULL) says whether to salvage damaged files. Returns 0 or a
 * negative LT_E* code with err filled; release t in both cases. */
int lt_compare_traces_compute(struct lt_compare_traces *t, const char *path_a, const char *path_b,
                              const struct lt_compare_opts *opts, struct lt_err *err);
void lt_compare_traces_release(struct lt_compare_traces *t);

/* ---- results ------------------------------------------------------------ */

/* The figures compared per matched run, in the order the reports list them. */
enum lt_compare_metric {
    LT_CMPM_TTFT_P50,
    LT_CMPM_TTFT_P99,
    LT_CMPM_TPOT_P50,
    LT_CMPM_TPOT_P99,
    LT_CMPM_E2E_P50,
    LT_CMPM_E2E_P99,
    LT_CMPM_AGG_TPS,
    LT_CMPM_DECODE_TPS,
    LT_CMPM_OUT_MEAN,
    LT_CMPM_COUNT
};

/* Name ("TTFT p50") and unit ("ms") of a metric. */
const char *lt_compare_metric_name(enum lt_compare_metric m);
const char *lt_compare_metric_unit(enum lt_compare_metric m);

struct lt_compare_metric_result {
    double a, b, diff, rel, lo, hi; /* diff = b - a; rel = diff / a; [lo, hi]: its CI */
    uint64_t na, nb;
    enum lt_compare_verdict verdict; /* same, B better, B worse, different, no data */
};

/* Per-request differences B - A of TTFT, TPOT and E2E (ms) over the
 * requests both samples hold. */
enum { LT_CMP_PAIRED_TTFT, LT_CMP_PAIRED_TPOT, LT_CMP_PAIRED_E2E, LT_CMP_PAIRED_COUNT };
struct lt_compare_paired {
    bool paired;  /* at least half of the smaller sample is in both */
    size_t pairs; /* requests Ok in both */
    size_t n[LT_CMP_PAIRED_COUNT];
    double mean[LT_CMP_PAIRED_COUNT], median[LT_CMP_PAIRED_COUNT];
    double lo[LT_CMP_PAIRED_COUNT], hi[LT_CMP_PAIRED_COUNT]; /* CI of the mean */
    uint64_t faster[LT_CMP_PAIRED_COUNT];                    /* requests where B was faster */
    /* Requests of one index whose asked lengths (want_in, want_out) differ:
     * the runs replayed different traces, so nothing is paired (paired
     * false); the first such request and what each side asked (-1: not
     * recorded). */
    size_t asked_differ;
    uint64_t differ_idx;
    int64_t differ_a[2], differ_b[2];
};

/* The twin's tolerances: |error| of a p50, of a p90 or p99, of throughput
 * or goodput: a twin's prediction is trusted within these (docs/compare.md). */
#define LT_CMP_TWIN_TOL_P50 0.10
#define LT_CMP_TWIN_TOL_TAIL 0.15
#define LT_CMP_TWIN_TOL_RATE 0.05

/* The distributions of the twin table, in its order; ITL is shown and not
 * judged (a live ITL holds the delivery's jitter, which no model has). */
enum { LT_CMP_TWIN_TTFT, LT_CMP_TWIN_TPOT, LT_CMP_TWIN_ITL, LT_CMP_TWIN_E2E, LT_CMP_TWIN_DISTS };

struct lt_compare_twin_dist {
    const char *name; /* "TTFT", ... */
    bool judged;
    uint64_t na, nb;           /* values on each side; 0: no data, nothing judged */
    double a[3], b[3], err[3]; /* p50, p90, p99 (ms) and (b - a) / a */
    double ks;                 /* two-sample KS distance of the distributions */
};

struct lt_compare_twin {
    struct lt_compare_twin_dist d[LT_CMP_TWIN_DISTS];
    double tput_a, tput_b, tput_err; /* Agg tok/s */
    double good_a, good_b, good_err; /* requests/s meeting the SLOs (every Ok one without) */
    /* The server's own timings (llama.cpp's, a llama.cpp twin's), ms a
     * token: prefill (srv_pf over srv_pf_n) and decode (srv_dec over
     * srv_dec_n) summed over each side's Ok requests; NAN on a side without
     * them. Not judged: they say whether a miss is the server's speed. */
    double pf_a, pf_b, pf_err, dec_a, dec_b, dec_err;
    uint32_t judged, misses; /* figures judged; beyond their tolerance */
    char worst[32];          /* the judged figure with the largest |error| / tolerance */
    double worst_err, worst_tol;
};

struct lt_compare_pair {
    const struct lt_analyze_run *ra, *rb; /* belong to the comparison */
    char la[48], lb[48];                  /* "C 16", "rate 2/s", "run 3" */
    struct lt_compare_metric_result m[LT_CMPM_COUNT];
    struct lt_compare_paired paired;
    /* TPOT p50, Agg tok/s and mean output length the same: B performs as
     * A (the synthetic-prompts question) */
    bool same_performance;
    struct lt_compare_twin twin; /* when the results' twin is set */
};

struct lt_compare_rside;

struct lt_compare_results {
    const char *path_a, *path_b;
    uint32_t runs_a, runs_b;
    struct lt_compare_opts o; /* with the defaults filled in */
    /* For each run of A in order: its pair, or -1 when B has no run at the
     * same level. */
    int32_t pair_of[LT_ANALYZE_RUNS_MAX];
    uint32_t id_a[LT_ANALYZE_RUNS_MAX]; /* the run ids of A */
    struct lt_compare_pair *pairs;
    uint32_t n_pairs;
    uint32_t compared, better, worse; /* metrics with data; B better; B worse or different */
    bool twin;                        /* B is a prediction of A: the twin table is shown */
    uint32_t twin_misses;             /* pairs whose twin verdict failed */
    /* A and B replayed different traces: the headers name different files,
     * or one request index asked for different lengths; why, in words. */
    bool traces_differ;
    char traces_why[1280];
    char trace_a[512], trace_b[512];  /* the traces the headers name ("" when none) */
    uint64_t skipped_a, skipped_b;    /* salvage: frames and values skipped in A, in B */
    struct lt_compare_rside *sa, *sb; /* private: the analyses and samples */
};

/* Read both results files (paths kept, not copied), match their runs and
 * compare every pair. Returns 0 or a negative LT_E* code with err filled;
 * release r in both cases. */
int lt_compare_results_compute(struct lt_compare_results *r, const char *path_a, const char *path_b,
                               const struct lt_compare_opts *opts, struct lt_err *err);
void lt_compare_results_release(struct lt_compare_results *r);

/* ---- rendering ---------------------------------------------------------- */

void lt_compare_traces_write_text(const struct lt_compare_traces *t, FILE *out);
void lt_compare_traces_write_json(const struct lt_compare_traces *t, FILE *out);
void lt_compare_results_write_text(const struct lt_compare_results *r, FILE *out);
void lt_compare_results_write_json(const struct lt_compare_results *r, FILE *out);

/* ---- statistics, exposed for tests --------------------------------------- */

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

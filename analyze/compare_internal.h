/*
 * What the parts of compare (compare.c, compare_traces.c,
 * compare_results.c, compare_render.c, compare_plot.c) share and nobody
 * outside analyze/ uses: the judgement of one distribution (also made for
 * the results' latency charts) and the charts of each comparison.
 */
#ifndef LT_COMPARE_INTERNAL_H
#define LT_COMPARE_INTERNAL_H

#include "traces/trace_reader.h"

#include "analyze/analyze_internal.h"
#include "analyze/analyze_plot.h"
#include "analyze/compare.h"

/* Thresholds of the trace verdicts (docs/compare.md): D and W1 / mean(A)
 * for distributions, the relative or absolute difference for scalars. */
#define LT_CMP_KS_SAME 0.10
#define LT_CMP_KS_CLOSE 0.20
#define LT_CMP_W1_SAME 0.10
#define LT_CMP_W1_CLOSE 0.25

/* p50, p90, p99: the percentiles each distribution shows. */
extern const double lt__compare_qps[3];

/* Fill na, nb, ks, p, w1n, the thresholds, qa, qb and the verdict of a
 * distribution property from its ha, hb, scale and w1_abs. */
int lt__compare_eval_dist(struct lt_compare_prop_result *p, struct lt_err *err);

/* The CDF overlay and the QQ plot of every distribution with data (traces)
 * or of TTFT, TPOT and E2E of every matched pair (results). A chart that
 * fails is a note in ctx and an LT_EIO return after the others are made. */
int lt__compare_traces_charts(const struct lt_compare_traces *t, struct lt_plot_ctx *ctx,
                             struct lt_err *err);
int lt__compare_results_charts(const struct lt_compare_results *r, struct lt_plot_ctx *ctx,
                              struct lt_err *err);

/* The twin table of one matched pair (A the truth, B the prediction):
 * errors, KS distances, verdict (compare_twin.c). Returns 0 or LT_EINVAL
 * when the histograms cannot be compared. */
int lt__compare_twin_eval(struct lt_compare_twin *t, const struct lt_analyze_run *ra,
                         const struct lt_analyze_run *rb, struct lt_err *err);

/* The twin table in text and as a JSON object. */
void lt__compare_twin_write_text(const struct lt_compare_twin *t, FILE *out);
void lt__compare_twin_write_json(const struct lt_compare_twin *t, FILE *out);

/* Open a file of the given kind with compare's salvage options (o may be
 * NULL), and how many frames and values salvage skipped in it. */
static inline struct lt_reader *lt__compare_open(const char *path, enum lt_kind kind,
                                                const struct lt_compare_opts *o, struct lt_err *err)
{
    return o ? lt__analyze_open(path, kind, o->salvage, o->on_skip, o->skip_ud, err)
             : lt__analyze_open(path, kind, false, NULL, NULL, err);
}

static inline uint64_t lt__compare_skipped(const struct lt_reader *r)
{
    struct lt_reader_stats st;
    lt_reader_stats(r, &st);
    return st.skipped_frames + st.skipped_values;
}

#endif

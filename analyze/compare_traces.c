/*
 * Is trace B representative of trace A (compare.h)? One streaming pass over
 * each trace into workload/trace_info.h's figures and two histograms of
 * our own (reasoning share, arrivals per second), then a verdict per
 * property against the thresholds of docs/compare.md. Nothing is printed
 * here: compare_render.c and compare_plot.c lay the result out.
 */
#include "analyze/compare_internal.h"
#include "base/lt_hist.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"
#include "workload/trace_info.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REL_SAME 0.15 /* burstiness CV: relative difference */
#define REL_CLOSE 0.35
#define PEAK_SAME 0.25 /* peak-to-mean: relative difference */
#define PEAK_CLOSE 0.50
#define RATE_SAME 0.03 /* tool-call rate: absolute difference */
#define RATE_CLOSE 0.08
#define REUSE_SAME 0.05 /* prefix reuse: absolute difference */
#define REUSE_CLOSE 0.15

const double lt__compare_qps[3] = {50, 90, 99};

/* What each property is, in the order of enum lt_compare_prop. */
static const struct {
    const char *name, *unit, *chart;
    enum lt_compare_kind kind;
    double scale;       /* distributions: histogram unit -> shown unit */
    bool w1_abs;        /* distributions: W1 in shown units, not / mean(A) */
    double same, close; /* scalars: thresholds of the difference */
} prop_defs[LT_CMPP_COUNT] = {
    [LT_CMPP_INTERARRIVAL] = {"inter-arrival", "ms", "interarrival", LT_CMP_DIST, 1e-3},
    [LT_CMPP_IN] = {"input length", "tokens", "in", LT_CMP_DIST, 1},
    [LT_CMPP_OUT] = {"output length", "tokens", "out", LT_CMP_DIST, 1},
    [LT_CMPP_REASONING] = {"reasoning share", "of out", "reasoning", LT_CMP_DIST, 1e-3, true},
    [LT_CMPP_TURNS] = {"turns per session", "requests", "turns", LT_CMP_DIST, 1},
    [LT_CMPP_GAP_CV] = {"burstiness: gap CV", "", NULL, LT_CMP_REL, 0, false, REL_SAME, REL_CLOSE},
    [LT_CMPP_PEAK] = {"burstiness: peak/mean", "", NULL, LT_CMP_REL, 0, false, PEAK_SAME,
                      PEAK_CLOSE},
    [LT_CMPP_TOOL_RATE] = {"tool-call rate", "", NULL, LT_CMP_ABS, 0, false, RATE_SAME, RATE_CLOSE},
    [LT_CMPP_PREFIX_REUSE] = {"prefix reuse", "", NULL, LT_CMP_ABS, 0, false, REUSE_SAME,
                              REUSE_CLOSE},
    [LT_CMPP_IMAGE_SHARE] = {"image share", "", NULL, LT_CMP_ABS, 0, false, RATE_SAME, RATE_CLOSE},
    [LT_CMPP_IMAGE_PIXELS] = {"image size (pixels)", "", NULL, LT_CMP_REL, 0, false, REL_SAME,
                              REL_CLOSE},
};

/* ---- statistics --------------------------------------------------------- */

int lt_compare_hists(const struct lt_hist *a, const struct lt_hist *b, double *ks, double *w1,
                     struct lt_err *err)
{
    *ks = *w1 = 0;
    if (lt_hist_bits(a) != lt_hist_bits(b))
        return lt_errset(err, LT_EINVAL, "compare: histograms of different precision");
    uint64_t na = lt_hist_count(a), nb = lt_hist_count(b);
    if (!na || !nb)
        return 0;
    struct lt_hist_iter ia, ib;
    lt_hist_iter_init(&ia, a);
    lt_hist_iter_init(&ib, b);
    bool ha = lt_hist_iter_next(&ia), hb = lt_hist_iter_next(&ib);
    uint64_t ca = 0, cb = 0;
    double prev_x = 0, prev_gap = 0;
    bool first = true;
    /* Walk the union of non-empty buckets in increasing order; between two
     * consecutive bucket midpoints both CDFs are constant. */
    while (ha || hb) {
        uint64_t lo;
        if (ha && (!hb || ia.lo <= ib.lo))
            lo = ia.lo;
        else
            lo = ib.lo;
        double x = 0;
        if (ha && ia.lo == lo) {
            ca = ia.cum;
            x = ((double)ia.lo + (double)ia.hi) / 2;
            ha = lt_hist_iter_next(&ia);
        }
        if (hb && ib.lo == lo) {
            cb = ib.cum;
            x = ((double)ib.lo + (double)ib.hi) / 2;
            hb = lt_hist_iter_next(&ib);
        }
        if (!first)
            *w1 += prev_gap * (x - prev_x);
        first = false;
        double gap = fabs((double)ca / na - (double)cb / nb);
        if (gap > *ks)
            *ks = gap;
        prev_x = x;
        prev_gap = gap;
    }
    return 0;
}

double lt_compare_ks_pvalue(double d, uint64_t na, uint64_t nb)
{
    if (!na || !nb)
        return NAN;
    double ne = (double)na * nb / ((double)na + nb), s = sqrt(ne);
    double lambda = (s + 0.12 + 0.11 / s) * d;
    if (lambda < 1e-3)
        return 1.0;
    double sum = 0, sign = 1;
    for (int j = 1; j <= 100; j++) {
        double term = sign * exp(-2.0 * j * j * lambda * lambda);
        sum += term;
        if (fabs(term) < 1e-12 * fabs(sum))
            break;
        sign = -sign;
    }
    double p = 2 * sum;
    return p < 0 ? 0 : p > 1 ? 1 : p;
}

/* Two-proportion z-test p-value (normal approximation). */
static double prop_pvalue(uint64_t xa, uint64_t na, uint64_t xb, uint64_t nb)
{
    if (!na || !nb)
        return NAN;
    double pa = (double)xa / na, pb = (double)xb / nb, pp = (double)(xa + xb) / (na + nb);
    double se = sqrt(pp * (1 - pp) * (1.0 / na + 1.0 / nb));
    if (se == 0)
        return pa == pb ? 1.0 : 0.0;
    return erfc(fabs(pa - pb) / se / sqrt(2.0));
}

/* ---- verdicts ------------------------------------------------------------ */

int lt__compare_eval_dist(struct lt_compare_prop_result *p, struct lt_err *err)
{
    p->na = lt_hist_count(p->ha);
    p->nb = lt_hist_count(p->hb);
    if (!p->na || !p->nb) {
        p->verdict = (p->na || p->nb) ? LT_CMP_DIFFERENT : LT_CMP_NODATA;
        return 0;
    }
    double w1;
    int rc = lt_compare_hists(p->ha, p->hb, &p->ks, &w1, err);
    if (rc < 0)
        return rc;
    p->p = lt_compare_ks_pvalue(p->ks, p->na, p->nb);
    double mean_a = lt_hist_mean(p->ha);
    if (p->w1_abs)
        p->w1n = w1 * p->scale;
    else
        p->w1n = mean_a > 0 ? w1 / mean_a : (w1 > 0 ? INFINITY : 0);
    for (int i = 0; i < 3; i++) {
        p->qa[i] = lt_analyze_pct(p->ha, lt__compare_qps[i]) * p->scale;
        p->qb[i] = lt_analyze_pct(p->hb, lt__compare_qps[i]) * p->scale;
    }
    /* A difference smaller than what sampling alone produces cannot count
     * against B: each threshold is at least the statistic's noise level,
     * 1.36 sqrt(1/na + 1/nb) for D (the 5 % critical value) and
     * 2 CV(A) / sqrt(n_e) for W1 / mean(A) (docs/compare.md). */
    double ne = (double)p->na * p->nb / ((double)p->na + p->nb);
    double ks_tol = fmax(LT_CMP_KS_SAME, 1.36 * sqrt(1.0 / p->na + 1.0 / p->nb));
    double cv = mean_a > 0 ? lt_hist_stddev(p->ha) / mean_a : 0;
    double w1_tol = p->w1_abs ? LT_CMP_W1_SAME : fmax(LT_CMP_W1_SAME, 2 * cv / sqrt(ne));
    p->ks_tol = ks_tol;
    p->w1_tol = w1_tol;
    if (p->ks <= ks_tol && p->w1n <= w1_tol)
        p->verdict = LT_CMP_REPRESENTATIVE;
    else if (p->ks <= ks_tol * LT_CMP_KS_CLOSE / LT_CMP_KS_SAME &&
             p->w1n <= w1_tol * LT_CMP_W1_CLOSE / LT_CMP_W1_SAME)
        p->verdict = LT_CMP_CLOSE;
    else
        p->verdict = LT_CMP_DIFFERENT;
    return 0;
}

static void eval_scalar(struct lt_compare_prop_result *p, double same, double close)
{
    if (p->kind == LT_CMP_REL)
        p->diff = p->va > 0 ? (p->vb - p->va) / p->va : (p->vb > 0 ? INFINITY : 0);
    else
        p->diff = p->vb - p->va;
    double d = fabs(p->diff);
    p->verdict = d <= same ? LT_CMP_REPRESENTATIVE : d <= close ? LT_CMP_CLOSE : LT_CMP_DIFFERENT;
}

/* How bad a trace verdict is; no data counts as nothing. */
static int severity(enum lt_compare_verdict v)
{
    return v == LT_CMP_DIFFERENT ? 3 : v == LT_CMP_CLOSE ? 2 : v == LT_CMP_REPRESENTATIVE ? 1 : 0;
}

/* ---- reading ------------------------------------------------------------- */

struct lt_compare_tside {
    struct lt_info info;
    struct lt_hist *share;  /* reasoning / out per request, per mille */
    struct lt_hist *persec; /* arrivals in each second [t_first + k s, t_first + (k+1) s) */
    bool info_ok;
    double fit_rate; /* synth --fit at an asked --rate (the header's meta); 0: not */
};

static int read_trace(struct lt_compare_tside *s, const char *path, const struct lt_compare_opts *o,
                      uint64_t *skipped, struct lt_err *err)
{
    int rc = 0;
    struct lt_reader *r = lt__compare_open(path, LT_KIND_TRACE, o, err);
    if (!r)
        return err && err->code < 0 ? err->code : LT_EIO;
    LT_TRY(lt_info_init(&s->info, lt_reader_header(r)->block_tokens, err));
    s->info_ok = true;
    /* A trace synth fitted at a rate of its own: its gaps are rescaled on
     * purpose, which the verdict must say. */
    const struct lt_header *h = lt_reader_header(r);
    char v[64];
    if (h->source && !strcmp(h->source, "synth:fit") &&
        lt_meta_get(h->meta, h->meta_len, "rate", v, sizeof v))
        s->fit_rate = strtod(v, NULL);
    s->share = lt_hist_new(1000, 10, err);
    if (!s->share) {
        rc = LT_ENOMEM;
        goto out;
    }
    s->persec = lt_hist_new(UINT32_MAX, 10, err);
    if (!s->persec) {
        rc = LT_ENOMEM;
        goto out;
    }
    const struct lt_item *it;
    int n;
    bool any = false;
    int64_t t0 = 0, bin = 0;
    uint64_t in_bin = 0;
    while ((n = lt_reader_next(r, &it, err)) == 1) {
        if (it->type != LT_ITEM_RECORD)
            continue;
        const struct lt_record *rec = &it->rec;
        LT_TRY(lt_info_add(&s->info, rec, err));
        if (!any) {
            any = true;
            t0 = rec->t;
        }
        int64_t b = rec->t >= t0 ? (rec->t - t0) / 1000000 : 0;
        if (b > bin) {
            lt_hist_record(s->persec, in_bin);
            lt_hist_record_n(s->persec, 0, (uint64_t)(b - bin - 1)); /* empty seconds */
            bin = b;
            in_bin = 0;
        }
        in_bin++;
        if ((rec->has & LT_HAS_OUT) && rec->out > 0) {
            uint32_t rs = (rec->has & LT_HAS_REASONING) ? rec->reasoning : 0;
            if (rs > rec->out)
                rs = rec->out;
            lt_hist_record(s->share, (uint64_t)llround(1000.0 * rs / rec->out));
        }
    }
    if (n < 0) {
        rc = n;
        goto out;
    }
    /* The last, partial second is left out: it would understate the rate. */
    if (any && bin == 0)
        lt_hist_record(s->persec, in_bin);
    LT_TRY(lt_info_finish(&s->info, err));
out:
    *skipped = lt__compare_skipped(r);
    lt_reader_close(r);
    if (rc < 0)
        lt_errf(err, rc, "%s", path);
    return rc;
}

static void tside_free(struct lt_compare_tside *s)
{
    if (!s)
        return;
    if (s->info_ok)
        lt_info_release(&s->info);
    lt_hist_free(s->share);
    lt_hist_free(s->persec);
    free(s);
}

/* ---- the comparison ------------------------------------------------------- */

/* The histogram of property i on one side. */
static const struct lt_hist *dist_of(const struct lt_compare_tside *s, enum lt_compare_prop i)
{
    switch (i) {
    case LT_CMPP_INTERARRIVAL:
        return s->info.gaps;
    case LT_CMPP_IN:
        return s->info.in.h;
    case LT_CMPP_OUT:
        return s->info.out.h;
    case LT_CMPP_REASONING:
        return s->share;
    case LT_CMPP_TURNS:
        return s->info.turns;
    default:
        return NULL;
    }
}

/* The scalars, with a verdict of no data where a side cannot say. */
static void eval_scalars(struct lt_compare_traces *t)
{
    const struct lt_info *ia = &t->sa->info, *ib = &t->sb->info;
    const struct lt_hist *pa = t->sa->persec, *pb = t->sb->persec;
    struct lt_compare_prop_result *p = &t->props[LT_CMPP_GAP_CV];
    p->va = ia->gap_cv;
    p->vb = ib->gap_cv;
    eval_scalar(p, REL_SAME, REL_CLOSE);
    if (ia->records < 3 || ib->records < 3)
        p->verdict = LT_CMP_NODATA;

    /* Peak = the 99th percentile of the arrivals per second (the maximum is
     * one extreme value, too noisy to judge on), over the mean per second;
     * one-second peaks mean nothing over a few seconds. */
    p = &t->props[LT_CMPP_PEAK];
    if (ia->span_s >= 10 && ib->span_s >= 10 && lt_hist_mean(pa) > 0 && lt_hist_mean(pb) > 0) {
        p->va = lt_analyze_pct(pa, 99) / lt_hist_mean(pa);
        p->vb = lt_analyze_pct(pb, 99) / lt_hist_mean(pb);
        eval_scalar(p, PEAK_SAME, PEAK_CLOSE);
    } else {
        p->verdict = LT_CMP_NODATA;
    }

    p = &t->props[LT_CMPP_TOOL_RATE];
    p->va = ia->records ? (double)ia->with_calls / ia->records : 0;
    p->vb = ib->records ? (double)ib->with_calls / ib->records : 0;
    eval_scalar(p, RATE_SAME, RATE_CLOSE);
    p->p = prop_pvalue(ia->with_calls, ia->records, ib->with_calls, ib->records);

    p = &t->props[LT_CMPP_PREFIX_REUSE];
    if (ia->blocks && ib->blocks) {
        p->va = (double)ia->blocks_prefix_hit / ia->blocks;
        p->vb = (double)ib->blocks_prefix_hit / ib->blocks;
        eval_scalar(p, REUSE_SAME, REUSE_CLOSE);
    } else {
        p->verdict = (ia->blocks || ib->blocks) ? LT_CMP_DIFFERENT : LT_CMP_NODATA;
    }

    /* media shapes (info's "media"): how many requests carry images, and
     * how large the images are; no data where neither trace has any */
    uint64_t wa = ia->with_one_image + ia->with_many_images;
    uint64_t wb = ib->with_one_image + ib->with_many_images;
    p = &t->props[LT_CMPP_IMAGE_SHARE];
    if (wa || wb) {
        p->va = ia->records ? (double)wa / ia->records : 0;
        p->vb = ib->records ? (double)wb / ib->records : 0;
        eval_scalar(p, RATE_SAME, RATE_CLOSE);
        p->p = prop_pvalue(wa, ia->records, wb, ib->records);
    } else {
        p->verdict = LT_CMP_NODATA;
    }
    p = &t->props[LT_CMPP_IMAGE_PIXELS];
    if (lt_hist_count(ia->image_w) && lt_hist_count(ib->image_w)) {
        p->va =
            (double)lt_hist_value_at(ia->image_w, 50) * (double)lt_hist_value_at(ia->image_h, 50);
        p->vb =
            (double)lt_hist_value_at(ib->image_w, 50) * (double)lt_hist_value_at(ib->image_h, 50);
        eval_scalar(p, REL_SAME, REL_CLOSE);
    } else {
        p->verdict = (lt_hist_count(ia->image_w) || lt_hist_count(ib->image_w)) ? LT_CMP_DIFFERENT
                                                                                : LT_CMP_NODATA;
    }
}

int lt_compare_traces_compute(struct lt_compare_traces *t, const char *path_a, const char *path_b,
                              const struct lt_compare_opts *opts, struct lt_err *err)
{
    int rc = 0;
    memset(t, 0, sizeof *t);
    t->a.path = path_a;
    t->b.path = path_b;
    t->sa = calloc(1, sizeof *t->sa);
    t->sb = calloc(1, sizeof *t->sb);
    if (!t->sa || !t->sb)
        return lt_errset(err, LT_ENOMEM, "compare: out of memory");
    LT_TRY(read_trace(t->sa, path_a, opts, &t->skipped_a, err));
    LT_TRY(read_trace(t->sb, path_b, opts, &t->skipped_b, err));
    const struct lt_info *ia = &t->sa->info, *ib = &t->sb->info;
    t->a = (struct lt_compare_trace_side){path_a, ia->records, ia->rate, ia->span_s, 0};
    t->b =
        (struct lt_compare_trace_side){path_b, ib->records, ib->rate, ib->span_s, t->sb->fit_rate};
    for (int i = 0; i < LT_CMPP_COUNT; i++) {
        struct lt_compare_prop_result *p = &t->props[i];
        *p = (struct lt_compare_prop_result){.name = prop_defs[i].name,
                                             .unit = prop_defs[i].unit,
                                             .kind = prop_defs[i].kind,
                                             .scale = prop_defs[i].scale,
                                             .w1_abs = prop_defs[i].w1_abs,
                                             .chart = prop_defs[i].chart};
        if (p->kind != LT_CMP_DIST)
            continue;
        p->ha = dist_of(t->sa, (enum lt_compare_prop)i);
        p->hb = dist_of(t->sb, (enum lt_compare_prop)i);
        LT_TRY(lt__compare_eval_dist(p, err));
    }
    if (!ia->with_session && !ib->with_session)
        t->props[LT_CMPP_TURNS].verdict = LT_CMP_NODATA;
    eval_scalars(t);

    t->overall = LT_CMP_NODATA;
    for (int i = 0; i < LT_CMPP_COUNT; i++) {
        enum lt_compare_verdict v = t->props[i].verdict;
        if (severity(v) > severity(t->overall))
            t->overall = v;
        t->compared += v != LT_CMP_NODATA;
        t->different += v == LT_CMP_DIFFERENT;
    }
out:
    return rc;
}

void lt_compare_traces_release(struct lt_compare_traces *t)
{
    tside_free(t->sa);
    tside_free(t->sb);
    t->sa = t->sb = NULL;
}

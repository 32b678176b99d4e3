/*
 * loadtrace compare (compare.h): two traces, or two results files, one
 * streaming pass over each, then statistics on bounded summaries:
 * histograms for the traces' distributions, analyze's per-run histograms
 * and a bottom-k sample per run for the results' bootstrap and pairing.
 * docs/compare.md defines every statistic and threshold used here.
 */
#include "analyze/compare.h"
#include "analyze/analyze.h"
#include "analyze/analyze_json.h"
#include "analyze/analyze_plot.h"
#include "traces/lt_buf.h"
#include "traces/lt_hist.h"
#include "traces/lt_rng.h"
#include "traces/trace_info.h"
#include "traces/trace_reader.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Thresholds of the trace verdicts (docs/compare.md). */
#define KS_SAME 0.10
#define KS_CLOSE 0.20
#define W1_SAME 0.10
#define W1_CLOSE 0.25
#define REL_SAME 0.15 /* burstiness CV: relative difference */
#define REL_CLOSE 0.35
#define PEAK_SAME 0.25 /* peak-to-mean: relative difference */
#define PEAK_CLOSE 0.50
#define RATE_SAME 0.03 /* tool-call rate: absolute difference */
#define RATE_CLOSE 0.08
#define REUSE_SAME 0.05 /* prefix reuse: absolute difference */
#define REUSE_CLOSE 0.15

static const char *const trace_words[] = {"representative", "close", "different", "no data"};

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

/* ---- traces ------------------------------------------------------------- */

struct tside {
    const char *path;
    char word[64]; /* name in charts */
    struct lt_info info;
    struct lt_hist *share;  /* reasoning / out per request, per mille */
    struct lt_hist *persec; /* arrivals in each second [t_first + k s, t_first + (k+1) s) */
    bool info_ok;
};

static int read_trace(struct tside *s, struct lt_err *err)
{
    int rc = 0;
    struct lt_reader *r = lt_reader_open_kind(s->path, LT_KIND_TRACE, NULL, err);
    if (!r)
        return err && err->code < 0 ? err->code : LT_EIO;
    LT_TRY(lt_info_init(&s->info, lt_reader_header(r)->block_tokens, err));
    s->info_ok = true;
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
    lt_reader_free(r);
    if (rc < 0)
        lt_errf(err, rc, "%s", s->path);
    return rc;
}

enum pkind { P_DIST, P_REL, P_ABS };

struct prop {
    const char *name;
    const char *unit; /* of the values shown (after scale) */
    enum pkind kind;
    /* distributions */
    const struct lt_hist *ha, *hb;
    double scale; /* histogram unit -> shown unit */
    bool w1_abs;  /* W1 in absolute shown units (shares), not / mean(A) */
    uint64_t na, nb;
    double ks, p, w1n;
    double ks_tol, w1_tol; /* the thresholds used for "representative" */
    double qa[3], qb[3];   /* p50, p90, p99 (shown units) */
    /* scalars */
    double va, vb, diff; /* diff: relative (P_REL) or absolute (P_ABS) */
    int verdict;
    const char *chart; /* chart name stem, or NULL */
};

static const double qps[3] = {50, 90, 99};

static int worse(int a, int b)
{
    if (a == LT_CMP_NODATA)
        return b;
    if (b == LT_CMP_NODATA)
        return a;
    return a > b ? a : b;
}

static int eval_dist(struct prop *p, struct lt_err *err)
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
        p->qa[i] = lt_analyze_pct(p->ha, qps[i]) * p->scale;
        p->qb[i] = lt_analyze_pct(p->hb, qps[i]) * p->scale;
    }
    /* A difference smaller than what sampling alone produces cannot count
     * against B: each threshold is at least the statistic's noise level,
     * 1.36 sqrt(1/na + 1/nb) for D (the 5 % critical value) and
     * 2 CV(A) / sqrt(n_e) for W1 / mean(A) (docs/compare.md). */
    double ne = (double)p->na * p->nb / ((double)p->na + p->nb);
    double ks_tol = fmax(KS_SAME, 1.36 * sqrt(1.0 / p->na + 1.0 / p->nb));
    double cv = mean_a > 0 ? lt_hist_stddev(p->ha) / mean_a : 0;
    double w1_tol = p->w1_abs ? W1_SAME : fmax(W1_SAME, 2 * cv / sqrt(ne));
    p->ks_tol = ks_tol;
    p->w1_tol = w1_tol;
    if (p->ks <= ks_tol && p->w1n <= w1_tol)
        p->verdict = LT_CMP_SAME;
    else if (p->ks <= ks_tol * KS_CLOSE / KS_SAME && p->w1n <= w1_tol * W1_CLOSE / W1_SAME)
        p->verdict = LT_CMP_CLOSE;
    else
        p->verdict = LT_CMP_DIFFERENT;
    return 0;
}

static void eval_scalar(struct prop *p, double same, double close)
{
    if (p->kind == P_REL)
        p->diff = p->va > 0 ? (p->vb - p->va) / p->va : (p->vb > 0 ? INFINITY : 0);
    else
        p->diff = p->vb - p->va;
    double d = fabs(p->diff);
    p->verdict = d <= same ? LT_CMP_SAME : d <= close ? LT_CMP_CLOSE : LT_CMP_DIFFERENT;
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

static void fmt_num(char *buf, size_t n, double v)
{
    if (!isfinite(v))
        snprintf(buf, n, "-");
    else if (fabs(v) >= 100)
        snprintf(buf, n, "%.0f", v);
    else if (fabs(v) >= 10)
        snprintf(buf, n, "%.1f", v);
    else
        snprintf(buf, n, "%.3g", v);
}

static void base_word(char *dst, size_t n, const char *path, const char *fallback)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%s:%s", fallback, b);
    lt_plot_word(dst, n, tmp);
}

static int trace_charts(struct prop *props, int np, const struct tside *A, const struct tside *B,
                        struct lt_plot_ctx *ctx, struct lt_err *err)
{
    int rc = 0, first = 0;
    struct lt_buf d, v;
    lt_buf_init(&d, (size_t)1 << 26);
    lt_buf_init(&v, (size_t)1 << 20);
    for (int i = 0; i < np; i++) {
        struct prop *p = &props[i];
        if (p->kind != P_DIST || !p->chart || !p->na || !p->nb)
            continue;
        char name[LT_PLOT_NAME_LEN], title[160], words[160], xlabel[96];
        uint64_t lo =
            lt_hist_min(p->ha) < lt_hist_min(p->hb) ? lt_hist_min(p->ha) : lt_hist_min(p->hb);
        uint64_t hi =
            lt_hist_max(p->ha) > lt_hist_max(p->hb) ? lt_hist_max(p->ha) : lt_hist_max(p->hb);
        int xlog = !p->w1_abs && (double)hi >= 100.0 * (double)(lo ? lo : 1);
        double floor_v = xlog ? (lo ? (double)lo * p->scale : p->scale) : 0;
        snprintf(xlabel, sizeof xlabel, "%s (%s)", p->name, p->unit);
        snprintf(words, sizeof words, "%s %s", A->word, B->word);
        /* CDF overlay */
        lt_buf_reset(&d);
        lt_buf_reset(&v);
        LT_TRY(lt_plot_cdf_block(&d, p->ha, p->scale, floor_v));
        LT_TRY(lt_plot_cdf_block(&d, p->hb, p->scale, floor_v));
        snprintf(name, sizeof name, "compare_%s_cdf", p->chart);
        snprintf(title, sizeof title, "%s: CDF of A and B (KS D = %.3f)", p->name, p->ks);
        LT_TRY(lt_plot_var(&v, "chart_title", title));
        LT_TRY(lt_plot_var(&v, "xlabel", xlabel));
        LT_TRY(lt_plot_var(&v, "titles", words));
        LT_TRY(lt_buf_printf(&v, "nsets = 2\nxlog = %d\n", xlog));
        LT_TRY(lt_plot_range(&v, "x", fmax((double)lo * p->scale, floor_v),
                             fmax((double)hi * p->scale, floor_v)));
        int c = lt_plot_chart(ctx, name, "cdf", title, v.p, &d, err);
        if (c < 0 && c != LT_EIO) {
            rc = c;
            goto out;
        }
        first = first ? first : c;
        /* QQ */
        lt_buf_reset(&d);
        lt_buf_reset(&v);
        LT_TRY(lt_buf_puts(&d, "# p quantile_a quantile_b\n"));
        double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
        for (int q = 1; q <= 99; q++) {
            double qa = fmax(lt_analyze_pct(p->ha, q) * p->scale, floor_v);
            double qb = fmax(lt_analyze_pct(p->hb, q) * p->scale, floor_v);
            xlo = fmin(xlo, qa);
            xhi = fmax(xhi, qa);
            ylo = fmin(ylo, fmin(qa, qb)); /* y shows B's points and the y = x line */
            yhi = fmax(yhi, fmax(qa, qb));
            LT_TRY(lt_buf_printf(&d, "%d %.9g %.9g\n", q, qa, qb));
        }
        snprintf(name, sizeof name, "compare_%s_qq", p->chart);
        snprintf(title, sizeof title, "%s: quantiles of B against A", p->name);
        LT_TRY(lt_plot_var(&v, "chart_title", title));
        LT_TRY(lt_plot_var(&v, "xlabel", p->unit));
        LT_TRY(lt_plot_var(&v, "title_a", A->word));
        LT_TRY(lt_plot_var(&v, "title_b", B->word));
        LT_TRY(lt_buf_printf(&v, "xlog = %d\n", xlog));
        LT_TRY(lt_plot_range(&v, "x", xlo, xhi));
        LT_TRY(lt_plot_range(&v, "y", ylo, yhi));
        c = lt_plot_chart(ctx, name, "qq", title, v.p, &d, err);
        if (c < 0 && c != LT_EIO) {
            rc = c;
            goto out;
        }
        first = first ? first : c;
    }
    rc = first;
out:
    lt_buf_release(&d);
    lt_buf_release(&v);
    return rc;
}

static void trace_text(FILE *out, const struct tside *A, const struct tside *B,
                       const struct prop *props, int np, int overall)
{
    fprintf(out,
            "compare traces: is B representative of A?\n  A = %s: %llu records, %.1f "
            "req/s over %.0f s\n  B = %s: %llu records, %.1f req/s over %.0f s\n\n",
            A->path, (unsigned long long)A->info.records, A->info.rate, A->info.span_s, B->path,
            (unsigned long long)B->info.records, B->info.rate, B->info.span_s);
    fprintf(out, "%-26s %7s %7s %7s %9s %8s  %-28s %-28s %s\n", "distribution", "n(A)", "n(B)",
            "KS D", "p-value", "W1 norm", "p50 A -> B", "p99 A -> B", "verdict");
    for (int i = 0; i < np; i++) {
        const struct prop *p = &props[i];
        if (p->kind != P_DIST)
            continue;
        char lab[64];
        snprintf(lab, sizeof lab, "%s (%s)", p->name, p->unit);
        if (!p->na || !p->nb) {
            fprintf(out, "%-26s %7llu %7llu %7s %9s %8s  %-28s %-28s %s\n", lab,
                    (unsigned long long)p->na, (unsigned long long)p->nb, "-", "-", "-", "", "",
                    trace_words[p->verdict]);
            continue;
        }
        char a50[16], b50[16], a99[16], b99[16], q50[96], q99[96];
        fmt_num(a50, sizeof a50, p->qa[0]);
        fmt_num(b50, sizeof b50, p->qb[0]);
        fmt_num(a99, sizeof a99, p->qa[2]);
        fmt_num(b99, sizeof b99, p->qb[2]);
        snprintf(q50, sizeof q50, "%s -> %s (%+.0f %%)", a50, b50,
                 p->qa[0] ? 100 * (p->qb[0] - p->qa[0]) / p->qa[0] : 0.0);
        snprintf(q99, sizeof q99, "%s -> %s (%+.0f %%)", a99, b99,
                 p->qa[2] ? 100 * (p->qb[2] - p->qa[2]) / p->qa[2] : 0.0);
        fprintf(out, "%-26s %7llu %7llu %7.3f %9.2g %8.3f  %-28s %-28s %s\n", lab,
                (unsigned long long)p->na, (unsigned long long)p->nb, p->ks, p->p, p->w1n, q50, q99,
                trace_words[p->verdict]);
    }
    fprintf(out, "\n%-22s %12s %12s %12s  %s\n", "figure", "A", "B", "difference", "verdict");
    for (int i = 0; i < np; i++) {
        const struct prop *p = &props[i];
        if (p->kind == P_DIST)
            continue;
        if (p->verdict == LT_CMP_NODATA) {
            fprintf(out, "%-22s %12s %12s %12s  %s\n", p->name, "-", "-", "-", "no data");
            continue;
        }
        char d[32];
        if (p->kind == P_REL)
            snprintf(d, sizeof d, "%+.1f %%", 100 * p->diff);
        else
            snprintf(d, sizeof d, "%+.1f pt", 100 * p->diff);
        if (p->kind == P_ABS)
            fprintf(out, "%-22s %10.1f %% %10.1f %% %12s  %s\n", p->name, 100 * p->va, 100 * p->vb,
                    d, trace_words[p->verdict]);
        else
            fprintf(out, "%-22s %12.3f %12.3f %12s  %s\n", p->name, p->va, p->vb, d,
                    trace_words[p->verdict]);
    }
    fprintf(out, "\noverall: %s",
            overall == LT_CMP_SAME     ? "B is representative of A"
            : overall == LT_CMP_CLOSE  ? "B is close to A (representative "
                                         "with reservations)"
            : overall == LT_CMP_NODATA ? "no data to compare"
                                       : "B is NOT representative of A");
    const char *sep = ": differs in ";
    for (int i = 0; i < np; i++)
        if (props[i].verdict == LT_CMP_DIFFERENT) {
            fprintf(out, "%s%s", sep, props[i].name);
            sep = ", ";
        }
    fprintf(out,
            "\n(thresholds, docs/compare.md: representative when KS D <= %.2f and W1 norm <= "
            "%.2f, or within sampling noise; close up to twice (D) and 2.5 times (W1) that)\n",
            KS_SAME, W1_SAME);
}

static void trace_json(FILE *out, const struct tside *A, const struct tside *B,
                       const struct prop *props, int np, int overall)
{
    fprintf(out, "{\n  \"schema\": \"loadtrace-compare/1\",\n  \"kind\": \"traces\",\n  \"a\": ");
    lt_analyze_jstr(out, A->path);
    fprintf(out, ",\n  \"b\": ");
    lt_analyze_jstr(out, B->path);
    fprintf(out, ",\n  \"records\": [%llu, %llu],\n  \"properties\": [",
            (unsigned long long)A->info.records, (unsigned long long)B->info.records);
    for (int i = 0; i < np; i++) {
        const struct prop *p = &props[i];
        fprintf(out, "%s\n    {\"name\": ", i ? "," : "");
        lt_analyze_jstr(out, p->name);
        fprintf(out, ", \"unit\": ");
        lt_analyze_jstr(out, p->unit);
        fprintf(out, ", \"verdict\": \"%s\"", trace_words[p->verdict]);
        if (p->kind == P_DIST) {
            fprintf(out, ", \"n_a\": %llu, \"n_b\": %llu, \"ks\": ", (unsigned long long)p->na,
                    (unsigned long long)p->nb);
            lt_analyze_jnum(out, p->ks);
            fprintf(out, ", \"p_value\": ");
            lt_analyze_jnum(out, p->na && p->nb ? p->p : NAN);
            fprintf(out, ", \"w1_normalized\": ");
            lt_analyze_jnum(out, p->na && p->nb ? p->w1n : NAN);
            fprintf(out, ", \"ks_threshold\": ");
            lt_analyze_jnum(out, p->na && p->nb ? p->ks_tol : NAN);
            fprintf(out, ", \"w1_threshold\": ");
            lt_analyze_jnum(out, p->na && p->nb ? p->w1_tol : NAN);
            static const char *const qn[3] = {"p50", "p90", "p99"};
            for (int q = 0; q < 3; q++) {
                fprintf(out, ", \"%s\": [", qn[q]);
                lt_analyze_jnum(out, p->qa[q]);
                fprintf(out, ", ");
                lt_analyze_jnum(out, p->qb[q]);
                fprintf(out, "]");
            }
        } else {
            fprintf(out, ", \"a\": ");
            lt_analyze_jnum(out, p->va);
            fprintf(out, ", \"b\": ");
            lt_analyze_jnum(out, p->vb);
            fprintf(out, ", \"difference\": ");
            lt_analyze_jnum(out, p->diff);
            fprintf(out, ", \"difference_kind\": \"%s\"",
                    p->kind == P_REL ? "relative" : "absolute");
            if (p->kind == P_ABS && isfinite(p->p)) {
                fprintf(out, ", \"p_value\": ");
                lt_analyze_jnum(out, p->p);
            }
        }
        fprintf(out, "}");
    }
    fprintf(out, "\n  ],\n  \"overall\": \"%s\"\n}\n", trace_words[overall]);
}

static int compare_traces(const char *pa, const char *pb, const struct lt_compare_opts *o,
                          FILE *out, struct lt_compare_summary *sum, struct lt_plot_ctx *ctx,
                          struct lt_err *err)
{
    int rc = 0;
    struct tside A = {.path = pa}, B = {.path = pb};
    base_word(A.word, sizeof A.word, pa, "A");
    base_word(B.word, sizeof B.word, pb, "B");
    LT_TRY(read_trace(&A, err));
    LT_TRY(read_trace(&B, err));
    const struct lt_info *ia = &A.info, *ib = &B.info;

    struct prop props[9];
    int np = 0;
    memset(props, 0, sizeof props);
    props[np++] = (struct prop){.name = "inter-arrival",
                                .unit = "ms",
                                .kind = P_DIST,
                                .ha = ia->gaps,
                                .hb = ib->gaps,
                                .scale = 1e-3,
                                .chart = "interarrival"};
    props[np++] = (struct prop){.name = "input length",
                                .unit = "tokens",
                                .kind = P_DIST,
                                .ha = ia->in.h,
                                .hb = ib->in.h,
                                .scale = 1,
                                .chart = "in"};
    props[np++] = (struct prop){.name = "output length",
                                .unit = "tokens",
                                .kind = P_DIST,
                                .ha = ia->out.h,
                                .hb = ib->out.h,
                                .scale = 1,
                                .chart = "out"};
    props[np++] = (struct prop){.name = "reasoning share",
                                .unit = "of out",
                                .kind = P_DIST,
                                .ha = A.share,
                                .hb = B.share,
                                .scale = 1e-3,
                                .w1_abs = true,
                                .chart = "reasoning"};
    int turns_at = np;
    props[np++] = (struct prop){.name = "turns per session",
                                .unit = "requests",
                                .kind = P_DIST,
                                .ha = ia->turns,
                                .hb = ib->turns,
                                .scale = 1,
                                .chart = "turns"};
    for (int i = 0; i < np; i++)
        LT_TRY(eval_dist(&props[i], err));
    if (!ia->with_session && !ib->with_session)
        props[turns_at].verdict = LT_CMP_NODATA;

    struct prop *p = &props[np++];
    *p = (struct prop){.name = "burstiness: gap CV",
                       .unit = "",
                       .kind = P_REL,
                       .va = ia->gap_cv,
                       .vb = ib->gap_cv};
    eval_scalar(p, REL_SAME, REL_CLOSE);
    if (ia->records < 3 || ib->records < 3)
        p->verdict = LT_CMP_NODATA;

    p = &props[np++];
    *p = (struct prop){.name = "burstiness: peak/mean", .unit = "", .kind = P_REL};
    /* Peak = the 99th percentile of the arrivals per second (the maximum is
     * one extreme value, too noisy to judge on), over the mean per second. */
    if (ia->span_s >= 10 && ib->span_s >= 10 && lt_hist_mean(A.persec) > 0 &&
        lt_hist_mean(B.persec) > 0) {
        p->va = lt_analyze_pct(A.persec, 99) / lt_hist_mean(A.persec);
        p->vb = lt_analyze_pct(B.persec, 99) / lt_hist_mean(B.persec);
        eval_scalar(p, PEAK_SAME, PEAK_CLOSE);
    } else {
        p->verdict = LT_CMP_NODATA; /* one-second peaks mean nothing over a few seconds */
    }

    p = &props[np++];
    *p = (struct prop){.name = "tool-call rate",
                       .unit = "",
                       .kind = P_ABS,
                       .va = ia->records ? (double)ia->with_calls / ia->records : 0,
                       .vb = ib->records ? (double)ib->with_calls / ib->records : 0};
    eval_scalar(p, RATE_SAME, RATE_CLOSE);
    p->p = prop_pvalue(ia->with_calls, ia->records, ib->with_calls, ib->records);

    p = &props[np++];
    *p = (struct prop){.name = "prefix reuse", .unit = "", .kind = P_ABS};
    if (ia->blocks && ib->blocks) {
        p->va = (double)ia->blocks_prefix_hit / ia->blocks;
        p->vb = (double)ib->blocks_prefix_hit / ib->blocks;
        eval_scalar(p, REUSE_SAME, REUSE_CLOSE);
    } else {
        p->verdict = (ia->blocks || ib->blocks) ? LT_CMP_DIFFERENT : LT_CMP_NODATA;
    }

    int overall = LT_CMP_NODATA;
    for (int i = 0; i < np; i++) {
        overall = worse(overall, props[i].verdict);
        if (props[i].verdict != LT_CMP_NODATA)
            sum->properties++;
        if (props[i].verdict == LT_CMP_DIFFERENT)
            sum->different++;
    }
    sum->traces = true;
    sum->overall = overall;
    if (o->json)
        trace_json(out, &A, &B, props, np, overall);
    else
        trace_text(out, &A, &B, props, np, overall);
    if (ctx)
        rc = trace_charts(props, np, &A, &B, ctx, err);
out:
    if (A.info_ok)
        lt_info_release(&A.info);
    if (B.info_ok)
        lt_info_release(&B.info);
    lt_hist_free(A.share);
    lt_hist_free(B.share);
    lt_hist_free(A.persec);
    lt_hist_free(B.persec);
    return rc;
}

/* ---- results ------------------------------------------------------------ */

struct sent {
    uint64_t hash, idx;
    double ttft, tpot, e2e, dec; /* us; dec: decode tok/s; NAN when absent */
    uint32_t out;
    bool ok;
};

/* Bottom-k sample of one run: the k entries with the smallest hash. */
struct bottomk {
    struct sent *v;
    uint32_t n, k;
    uint64_t thresh; /* entries with hash >= thresh cannot enter */
};

struct rside {
    const char *path;
    struct lt_analysis a;
    bool a_ok;
    struct bottomk bk[LT_ANALYZE_RUNS_MAX];
};

static int cmp_hash(const void *x, const void *y)
{
    const struct sent *p = x, *q = y;
    return p->hash < q->hash ? -1 : p->hash > q->hash;
}

static int bk_add(struct bottomk *b, const struct sent *e)
{
    if (e->hash >= b->thresh)
        return 0;
    if (!b->v) {
        b->v = malloc(sizeof *b->v * 2 * (size_t)b->k);
        if (!b->v)
            return LT_ENOMEM;
    }
    if (b->n == 2 * b->k) {
        qsort(b->v, b->n, sizeof *b->v, cmp_hash);
        b->thresh = b->v[b->k].hash;
        b->n = b->k;
        if (e->hash >= b->thresh)
            return 0;
    }
    b->v[b->n++] = *e;
    return 0;
}

static void bk_finish(struct bottomk *b)
{
    if (!b->n)
        return;
    qsort(b->v, b->n, sizeof *b->v, cmp_hash);
    if (b->n > b->k)
        b->n = b->k;
}

static int read_results(struct rside *s, const struct lt_compare_opts *o, struct lt_err *err)
{
    int rc = 0;
    struct lt_reader *r = lt_reader_open_kind(s->path, LT_KIND_RESULTS, NULL, err);
    if (!r)
        return err && err->code < 0 ? err->code : LT_EIO;
    LT_TRY(lt_analysis_init(&s->a, NULL, err));
    s->a_ok = true;
    lt_analysis_next_file(&s->a);
    snprintf(s->a.path, sizeof s->a.path, "%s", s->path);
    const struct lt_item *it;
    int n;
    while ((n = lt_reader_next(r, &it, err)) == 1) {
        if (it->type == LT_ITEM_RUN) {
            LT_TRY(lt_analysis_add_run(&s->a, &it->run, err));
            continue;
        }
        if (it->type != LT_ITEM_RESULT)
            continue;
        const struct lt_result *res = &it->res;
        LT_TRY(lt_analysis_add_result(&s->a, res, err));
        if (res->warmup)
            continue;
        uint32_t ri = 0;
        while (ri < s->a.n_runs && s->a.runs[ri]->id != res->run)
            ri++;
        struct bottomk *b = &s->bk[ri];
        if (!b->k) {
            b->k = o->sample;
            b->thresh = UINT64_MAX;
        }
        struct sent e = {.hash = lt_mix64(res->index ^ UINT64_C(0x9e3779b97f4a7c15)),
                         .idx = res->index,
                         .ttft = NAN,
                         .tpot = NAN,
                         .e2e = NAN,
                         .dec = NAN,
                         .out = res->out};
        const uint32_t h = res->has;
        e.ok = (h & LT_RHAS_SENT) && (h & LT_RHAS_STATUS) && res->status == 200 && !res->err &&
               (h & LT_RHAS_OUT) && res->out >= 1;
        if (e.ok && (h & LT_RHAS_FIRST_TOKEN))
            e.ttft = (double)(res->first_token - res->sent);
        if (e.ok && (h & LT_RHAS_END))
            e.e2e = (double)(res->end - res->sent);
        if (isfinite(e.ttft) && isfinite(e.e2e) && res->out >= 2) {
            e.tpot = (e.e2e - e.ttft) / (res->out - 1);
            if (e.e2e > e.ttft)
                e.dec = (res->out - 1) / ((e.e2e - e.ttft) / 1e6);
        }
        LT_TRY(bk_add(b, &e));
    }
    if (n < 0) {
        rc = n;
        goto out;
    }
    for (uint32_t i = 0; i < s->a.n_runs; i++)
        bk_finish(&s->bk[i]);
    LT_TRY(lt_analysis_finish(&s->a, err));
out:
    lt_reader_free(r);
    if (rc < 0)
        lt_errf(err, rc, "%s", s->path);
    return rc;
}

static void rside_release(struct rside *s)
{
    for (uint32_t i = 0; i < LT_ANALYZE_RUNS_MAX; i++)
        free(s->bk[i].v);
    if (s->a_ok)
        lt_analysis_release(&s->a);
}

/* k-th smallest (0-based) of v[0..n), reordering v (Hoare's selection). */
static double select_k(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return v[k];
    }
    return v[k];
}

/* Nearest-rank percentile (as analyze) of v[0..n); reorders v. */
static double pct_of(double *v, size_t n, double p)
{
    if (!n)
        return NAN;
    size_t r = (size_t)ceil(p / 100 * n);
    if (r < 1)
        r = 1;
    return select_k(v, n, r - 1);
}

enum bstat { ST_P50, ST_P99, ST_MEAN };

/* Statistic of one resample of src (or of src itself when rng is NULL). */
static double stat_of(const double *src, size_t n, enum bstat st, struct lt_rng *rng, double *tmp)
{
    for (size_t i = 0; i < n; i++)
        tmp[i] = rng ? src[lt_rng_below(rng, n)] : src[i];
    if (st == ST_MEAN) {
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += tmp[i];
        return s / n;
    }
    return pct_of(tmp, n, st == ST_P50 ? 50 : 99);
}

struct rmetric {
    const char *name, *unit;
    int better; /* -1: lower is better, +1: higher is better, 0: neither */
    double a, b, diff, rel, lo, hi;
    uint64_t na, nb;
    int verdict; /* 0 same, 1 B better, 2 B worse, 3 no data; 4 different (neutral) */
};

static const char *const result_words[] = {"same", "B better", "B worse", "no data", "different"};

/* Values of one field of the Ok entries of a sample. */
static size_t gather(const struct bottomk *b, int field, double *dst)
{
    size_t n = 0;
    for (uint32_t i = 0; i < b->n; i++) {
        const struct sent *e = &b->v[i];
        if (!e->ok)
            continue;
        double v = field == 0   ? e->ttft
                   : field == 1 ? e->tpot
                   : field == 2 ? e->e2e
                   : field == 3 ? e->dec
                                : (double)e->out;
        if (isfinite(v))
            dst[n++] = v;
    }
    return n;
}

/* Bootstrap CI of stat(B) - stat(A), scaled: each side's statistic times
 * its factor (1 except for Agg tok/s). */
static void bootstrap(struct rmetric *m, const double *va, size_t na, double fa, const double *vb,
                      size_t nb, double fb, enum bstat st, const struct lt_compare_opts *o,
                      double *tmp, double *diffs)
{
    struct lt_rng rng;
    lt_rng_seed(&rng, o->seed);
    for (uint32_t i = 0; i < o->bootstrap; i++)
        diffs[i] = fb * stat_of(vb, nb, st, &rng, tmp) - fa * stat_of(va, na, st, &rng, tmp);
    double alpha = (1 - o->confidence) / 2;
    m->lo = pct_of(diffs, o->bootstrap, 100 * alpha);
    m->hi = pct_of(diffs, o->bootstrap, 100 * (1 - alpha));
}

static void verdict_of(struct rmetric *m, const struct lt_compare_opts *o)
{
    m->diff = m->b - m->a;
    m->rel = m->a != 0 ? m->diff / m->a : 0;
    bool significant = m->lo > 0 || m->hi < 0;
    if (!significant || fabs(m->rel) < o->margin)
        m->verdict = 0;
    else if (m->better == 0)
        m->verdict = 4;
    else
        m->verdict = (m->diff * m->better > 0) ? 1 : 2;
}

static bool same_level(const struct lt_analyze_run *x, const struct lt_analyze_run *y)
{
    return x->concurrency == y->concurrency && x->rate == y->rate && x->speed == y->speed;
}

static int compare_run_pair(const struct rside *A, uint32_t ia, const struct rside *B, uint32_t ib,
                            const struct lt_compare_opts *o, FILE *out, bool first,
                            struct lt_compare_summary *sum, struct lt_err *err)
{
    int rc = 0;
    const struct lt_analyze_run *ra = A->a.runs[ia], *rb = B->a.runs[ib];
    const struct bottomk *ba = &A->bk[ia], *bb = &B->bk[ib];
    size_t cap = (ba->n > bb->n ? ba->n : bb->n) + 1;
    double *va = malloc(sizeof(double) * cap), *vb = malloc(sizeof(double) * cap);
    double *tmp = malloc(sizeof(double) * cap), *diffs = malloc(sizeof(double) * o->bootstrap);
    if (!va || !vb || !tmp || !diffs) {
        rc = lt_errset(err, LT_ENOMEM, "compare: out of memory");
        goto out;
    }
    struct rmetric ms[9];
    int nm = 0;
    static const struct {
        const char *name;
        enum lt_analyze_metric m;
        int field;
        enum bstat st;
    } lat[] = {{"TTFT p50", LT_AM_TTFT, 0, ST_P50}, {"TTFT p99", LT_AM_TTFT, 0, ST_P99},
               {"TPOT p50", LT_AM_TPOT, 1, ST_P50}, {"TPOT p99", LT_AM_TPOT, 1, ST_P99},
               {"E2E p50", LT_AM_E2E, 2, ST_P50},   {"E2E p99", LT_AM_E2E, 2, ST_P99}};
    for (int i = 0; i < 6; i++) {
        struct rmetric *m = &ms[nm++];
        *m = (struct rmetric){.name = lat[i].name, .unit = "ms", .better = -1};
        size_t na = gather(ba, lat[i].field, va), nb = gather(bb, lat[i].field, vb);
        m->na = lt_hist_count(ra->h[lat[i].m]);
        m->nb = lt_hist_count(rb->h[lat[i].m]);
        if (!na || !nb || !m->na || !m->nb) {
            m->verdict = 3;
            continue;
        }
        /* point estimates from the full histograms, CI from the samples */
        m->a = lt_analyze_pct(ra->h[lat[i].m], lat[i].st == ST_P50 ? 50 : 99) / 1e3;
        m->b = lt_analyze_pct(rb->h[lat[i].m], lat[i].st == ST_P50 ? 50 : 99) / 1e3;
        bootstrap(m, va, na, 1e-3, vb, nb, 1e-3, lat[i].st, o, tmp, diffs);
        verdict_of(m, o);
    }
    /* Agg tok/s = mean out per Ok request * Ok requests / wall. */
    struct rmetric *m = &ms[nm++];
    *m = (struct rmetric){.name = "Agg tok/s",
                          .unit = "tok/s",
                          .better = 1,
                          .a = ra->agg_tps,
                          .b = rb->agg_tps,
                          .na = ra->ok,
                          .nb = rb->ok};
    size_t na = gather(ba, 4, va), nb = gather(bb, 4, vb);
    if (na && nb && ra->wall_s > 0 && rb->wall_s > 0) {
        bootstrap(m, va, na, ra->ok / ra->wall_s, vb, nb, rb->ok / rb->wall_s, ST_MEAN, o, tmp,
                  diffs);
        verdict_of(m, o);
    } else {
        m->verdict = 3;
    }
    m = &ms[nm++];
    *m = (struct rmetric){.name = "Per-req decode tok/s",
                          .unit = "tok/s",
                          .better = 1,
                          .a = ra->perreq_decode,
                          .b = rb->perreq_decode,
                          .na = ra->n_perreq_decode,
                          .nb = rb->n_perreq_decode};
    na = gather(ba, 3, va);
    nb = gather(bb, 3, vb);
    if (na && nb) {
        bootstrap(m, va, na, 1, vb, nb, 1, ST_MEAN, o, tmp, diffs);
        verdict_of(m, o);
    } else {
        m->verdict = 3;
    }
    m = &ms[nm++];
    *m = (struct rmetric){.name = "mean output length",
                          .unit = "tokens",
                          .better = 0,
                          .a = ra->ok ? (double)ra->tokens / ra->ok : 0,
                          .b = rb->ok ? (double)rb->tokens / rb->ok : 0,
                          .na = ra->ok,
                          .nb = rb->ok};
    na = gather(ba, 4, va);
    nb = gather(bb, 4, vb);
    if (na && nb) {
        bootstrap(m, va, na, 1, vb, nb, 1, ST_MEAN, o, tmp, diffs);
        verdict_of(m, o);
    } else {
        m->verdict = 3;
    }
    for (int i = 0; i < nm; i++) {
        if (ms[i].verdict == 3)
            continue;
        sum->properties++;
        if (ms[i].verdict == 2 || ms[i].verdict == 4)
            sum->different++;
        if (ms[i].verdict == 1)
            sum->better++;
    }

    /* Paired differences, when the two samples hold the same requests. */
    size_t pairs = 0;
    double *pd[3] = {NULL, NULL, NULL};
    uint64_t faster[3] = {0, 0, 0};
    size_t np3[3] = {0, 0, 0};
    for (int f = 0; f < 3; f++) {
        pd[f] = malloc(sizeof(double) * cap);
        if (!pd[f]) {
            for (int g = 0; g < f; g++)
                free(pd[g]);
            rc = lt_errset(err, LT_ENOMEM, "compare: out of memory");
            goto out;
        }
    }
    for (uint32_t i = 0, j = 0; i < ba->n && j < bb->n;) {
        const struct sent *x = &ba->v[i], *y = &bb->v[j];
        if (x->hash < y->hash || (x->hash == y->hash && x->idx < y->idx)) {
            i++;
        } else if (y->hash < x->hash || y->idx < x->idx) {
            j++;
        } else {
            if (x->ok && y->ok) {
                pairs++;
                double dv[3] = {y->ttft - x->ttft, y->tpot - x->tpot, y->e2e - x->e2e};
                for (int f = 0; f < 3; f++)
                    if (isfinite(dv[f])) {
                        pd[f][np3[f]++] = dv[f] / 1e3;
                        faster[f] += dv[f] < 0;
                    }
            }
            i++;
            j++;
        }
    }
    size_t smaller = ba->n < bb->n ? ba->n : bb->n;
    bool paired = smaller > 0 && pairs * 2 >= smaller;
    double pmean[3] = {0}, pmed[3] = {0}, plo[3] = {0}, phi[3] = {0};
    if (paired) {
        struct lt_rng rng;
        lt_rng_seed(&rng, o->seed);
        for (int f = 0; f < 3; f++) {
            if (!np3[f])
                continue;
            pmean[f] = stat_of(pd[f], np3[f], ST_MEAN, NULL, tmp);
            for (uint32_t b = 0; b < o->bootstrap; b++)
                diffs[b] = stat_of(pd[f], np3[f], ST_MEAN, &rng, tmp);
            double alpha = (1 - o->confidence) / 2;
            plo[f] = pct_of(diffs, o->bootstrap, 100 * alpha);
            phi[f] = pct_of(diffs, o->bootstrap, 100 * (1 - alpha));
            pmed[f] = pct_of(pd[f], np3[f], 50);
        }
    }

    char la[48], lb[48];
    if (ra->concurrency)
        snprintf(la, sizeof la, "C %u", ra->concurrency);
    else if (ra->rate > 0)
        snprintf(la, sizeof la, "rate %g/s", ra->rate);
    else
        snprintf(la, sizeof la, "run %u", ra->id);
    if (rb->concurrency)
        snprintf(lb, sizeof lb, "C %u", rb->concurrency);
    else if (rb->rate > 0)
        snprintf(lb, sizeof lb, "rate %g/s", rb->rate);
    else
        snprintf(lb, sizeof lb, "run %u", rb->id);
    static const char *const pn[3] = {"TTFT", "TPOT", "E2E"};
    if (o->json) {
        fprintf(out, "%s\n    {\"a_run\": %u, \"b_run\": %u, \"a_label\": ", first ? "" : ",",
                ra->id, rb->id);
        lt_analyze_jstr(out, la);
        fprintf(out, ", \"b_label\": ");
        lt_analyze_jstr(out, lb);
        fprintf(out, ", \"a_ok\": %llu, \"b_ok\": %llu, \"metrics\": [", (unsigned long long)ra->ok,
                (unsigned long long)rb->ok);
        for (int i = 0; i < nm; i++) {
            const struct rmetric *x = &ms[i];
            fprintf(out, "%s\n      {\"name\": ", i ? "," : "");
            lt_analyze_jstr(out, x->name);
            fprintf(out, ", \"unit\": \"%s\", \"a\": ", x->unit);
            lt_analyze_jnum(out, x->a);
            fprintf(out, ", \"b\": ");
            lt_analyze_jnum(out, x->b);
            fprintf(out, ", \"diff\": ");
            lt_analyze_jnum(out, x->verdict == 3 ? NAN : x->diff);
            fprintf(out, ", \"ci\": [");
            lt_analyze_jnum(out, x->verdict == 3 ? NAN : x->lo);
            fprintf(out, ", ");
            lt_analyze_jnum(out, x->verdict == 3 ? NAN : x->hi);
            fprintf(out, "], \"relative\": ");
            lt_analyze_jnum(out, x->verdict == 3 ? NAN : x->rel);
            fprintf(out, ", \"verdict\": \"%s\"}", result_words[x->verdict]);
        }
        fprintf(out, "],\n     \"paired\": ");
        if (!paired) {
            fprintf(out, "null}");
        } else {
            fprintf(out, "{\"pairs\": %zu", pairs);
            for (int f = 0; f < 3; f++) {
                fprintf(out, ", \"%s\": {\"n\": %zu, \"mean_ms\": ", pn[f], np3[f]);
                lt_analyze_jnum(out, pmean[f]);
                fprintf(out, ", \"median_ms\": ");
                lt_analyze_jnum(out, pmed[f]);
                fprintf(out, ", \"ci\": [");
                lt_analyze_jnum(out, plo[f]);
                fprintf(out, ", ");
                lt_analyze_jnum(out, phi[f]);
                fprintf(out, "], \"b_faster\": ");
                lt_analyze_jnum(out, np3[f] ? (double)faster[f] / np3[f] : NAN);
                fprintf(out, "}");
            }
            fprintf(out, "}}");
        }
    } else {
        fprintf(out, "\n%s (A run %u) vs %s (B run %u): %llu and %llu Ok requests\n", la, ra->id,
                lb, rb->id, (unsigned long long)ra->ok, (unsigned long long)rb->ok);
        fprintf(out, "  %-28s %11s %11s %11s   %-25s %8s  %s\n", "metric", "A", "B", "B - A", "CI",
                "change", "verdict");
        for (int i = 0; i < nm; i++) {
            const struct rmetric *x = &ms[i];
            char lab[48];
            snprintf(lab, sizeof lab, "%s (%s)", x->name, x->unit);
            if (x->verdict == 3) {
                fprintf(out, "  %-28s %11s %11s %11s   %-25s %8s  %s\n", lab, "-", "-", "-", "", "",
                        "no data");
                continue;
            }
            char ci[64];
            snprintf(ci, sizeof ci, "[%.4g, %.4g]", x->lo, x->hi);
            fprintf(out, "  %-28s %11.4g %11.4g %+11.4g   %-25s %+7.1f%%  %s\n", lab, x->a, x->b,
                    x->diff, ci, 100 * x->rel, result_words[x->verdict]);
        }
        if (paired) {
            fprintf(out, "  paired (the same %zu requests in both):\n", pairs);
            for (int f = 0; f < 3; f++)
                if (np3[f])
                    fprintf(out,
                            "    %-5s B - A: mean %+.3f ms [%.3f, %.3f], median %+.3f ms; "
                            "B faster for %.0f %%\n",
                            pn[f], pmean[f], plo[f], phi[f], pmed[f], 100.0 * faster[f] / np3[f]);
        }
        /* Is B's performance that of A (the synthetic-prompts question)? */
        bool eq = ms[2].verdict == 0 && ms[6].verdict == 0 && ms[8].verdict == 0;
        fprintf(out,
                "  same performance (TPOT p50, Agg tok/s and mean output length within "
                "%.0f %% or not significantly different): %s\n",
                100 * o->margin, eq ? "yes" : "no");
    }
    for (int f = 0; f < 3; f++)
        free(pd[f]);
out:
    free(va);
    free(vb);
    free(tmp);
    free(diffs);
    return rc;
}

/* CDF overlays and QQ plots of TTFT, TPOT and E2E for one matched pair. */
static int result_charts(const struct lt_analyze_run *ra, const struct lt_analyze_run *rb,
                         const char *pa, const char *pb, struct lt_plot_ctx *ctx,
                         struct lt_err *err)
{
    struct tside A = {.path = pa}, B = {.path = pb};
    base_word(A.word, sizeof A.word, pa, "A");
    base_word(B.word, sizeof B.word, pb, "B");
    struct prop props[3];
    static const struct {
        const char *name, *stem;
        enum lt_analyze_metric m;
    } ms[3] = {
        {"TTFT", "ttft", LT_AM_TTFT}, {"TPOT", "tpot", LT_AM_TPOT}, {"E2E", "e2e", LT_AM_E2E}};
    char stems[3][48];
    for (int i = 0; i < 3; i++) {
        snprintf(stems[i], sizeof stems[i], "%s_a%u_b%u", ms[i].stem, ra->id, rb->id);
        props[i] = (struct prop){.name = ms[i].name,
                                 .unit = "ms",
                                 .kind = P_DIST,
                                 .ha = ra->h[ms[i].m],
                                 .hb = rb->h[ms[i].m],
                                 .scale = 1e-3,
                                 .chart = stems[i]};
        int rc = eval_dist(&props[i], err);
        if (rc < 0)
            return rc;
    }
    return trace_charts(props, 3, &A, &B, ctx, err);
}

static int compare_results(const char *pa, const char *pb, const struct lt_compare_opts *o,
                           FILE *out, struct lt_compare_summary *sum, struct lt_plot_ctx *ctx,
                           struct lt_err *err)
{
    int first_chart = 0;
    int rc = 0;
    struct rside *A = calloc(1, sizeof *A), *B = calloc(1, sizeof *B);
    if (!A || !B) {
        rc = lt_errset(err, LT_ENOMEM, "compare: out of memory");
        goto out;
    }
    A->path = pa;
    B->path = pb;
    LT_TRY(read_results(A, o, err));
    LT_TRY(read_results(B, o, err));
    if (o->json) {
        fprintf(out, "{\n  \"schema\": \"loadtrace-compare/1\",\n  \"kind\": \"results\",\n  "
                     "\"a\": ");
        lt_analyze_jstr(out, pa);
        fprintf(out, ",\n  \"b\": ");
        lt_analyze_jstr(out, pb);
        fprintf(out, ",\n  \"confidence\": ");
        lt_analyze_jnum(out, o->confidence);
        fprintf(out, ", \"bootstrap\": %u, \"sample\": %u, \"margin\": ", o->bootstrap, o->sample);
        lt_analyze_jnum(out, o->margin);
        fprintf(out, ",\n  \"runs\": [");
    } else {
        fprintf(out,
                "compare results: did B beat A?\n  A = %s (%u run%s)\n  B = %s (%u run%s)\n"
                "  %.0f %% bootstrap confidence intervals (%u resamples of up to %u requests "
                "per run); a difference counts when its CI excludes 0 and it exceeds %.0f %%\n",
                pa, A->a.n_runs, A->a.n_runs == 1 ? "" : "s", pb, B->a.n_runs,
                B->a.n_runs == 1 ? "" : "s", 100 * o->confidence, o->bootstrap, o->sample,
                100 * o->margin);
    }
    uint32_t matched = 0;
    for (uint32_t i = 0; i < A->a.n_runs; i++) {
        int j = -1;
        if (A->a.n_runs == 1 && B->a.n_runs == 1)
            j = 0;
        else
            for (uint32_t k = 0; k < B->a.n_runs && j < 0; k++)
                if (same_level(A->a.runs[i], B->a.runs[k]))
                    j = (int)k;
        if (j < 0) {
            if (!o->json)
                fprintf(out, "\nA run %u has no run at the same level in B: skipped\n",
                        A->a.runs[i]->id);
            continue;
        }
        LT_TRY(compare_run_pair(A, i, B, (uint32_t)j, o, out, matched == 0, sum, err));
        matched++;
        if (ctx) {
            int c = result_charts(A->a.runs[i], B->a.runs[j], A->path, B->path, ctx, err);
            if (c < 0 && c != LT_EIO) {
                rc = c;
                goto out;
            }
            first_chart = first_chart ? first_chart : c;
        }
    }
    sum->traces = false;
    if (o->json) {
        fprintf(out, "\n  ],\n  \"better\": %u, \"worse_or_different\": %u, \"compared\": %u\n}\n",
                sum->better, sum->different, sum->properties);
    } else if (matched == 0) {
        fprintf(out, "\nno run of A matches a run of B (same concurrency, rate and speed)\n");
    } else {
        fprintf(out,
                "\nverdict: B is better on %u, worse (or different) on %u, and the same on "
                "%u of %u figures\n",
                sum->better, sum->different, sum->properties - sum->better - sum->different,
                sum->properties);
    }
    rc = first_chart;
out:
    if (A)
        rside_release(A);
    if (B)
        rside_release(B);
    free(A);
    free(B);
    return rc;
}

/* ---- entry ------------------------------------------------------------- */

static int kind_of(const char *path, enum lt_kind *kind, struct lt_err *err)
{
    struct lt_reader *r = lt_reader_open(path, NULL, err);
    if (!r)
        return err && err->code < 0 ? err->code : LT_EIO;
    *kind = lt_reader_header(r)->kind;
    lt_reader_free(r);
    return 0;
}

int lt_compare_files(const char *path_a, const char *path_b, const struct lt_compare_opts *opts,
                     FILE *out, struct lt_compare_summary *sum, struct lt_err *err)
{
    int rc = 0;
    struct lt_compare_opts o = opts ? *opts : (struct lt_compare_opts){0};
    if (!o.sample)
        o.sample = 20000;
    if (!o.bootstrap)
        o.bootstrap = 1000;
    if (!o.seed)
        o.seed = 1;
    if (o.confidence <= 0 || o.confidence >= 1)
        o.confidence = 0.95;
    if (o.margin <= 0)
        o.margin = 0.05;
    memset(sum, 0, sizeof *sum);
    enum lt_kind ka, kb;
    struct lt_plot_ctx *ctx = NULL;
    struct lt_plot_report rep;
    memset(&rep, 0, sizeof rep);
    char *text = NULL;
    size_t text_len = 0;
    FILE *body = NULL;
    char tmpdir[] = "/tmp/loadtrace-plots-XXXXXX";
    LT_TRY(kind_of(path_a, &ka, err));
    LT_TRY(kind_of(path_b, &kb, err));
    if (ka != kb) {
        rc = lt_errset(err, LT_EINVAL,
                       "%s is a %s file but %s is a %s file: compare two traces "
                       "or two results files",
                       path_a, ka == LT_KIND_TRACE ? "trace" : "results", path_b,
                       kb == LT_KIND_TRACE ? "trace" : "results");
        goto out;
    }
    if (o.plots_dir || o.html_path) {
        ctx = calloc(1, sizeof *ctx);
        if (!ctx) {
            rc = lt_errset(err, LT_ENOMEM, "out of memory");
            goto out;
        }
        ctx->rep = &rep;
        ctx->gnuplot = -1;
        if (o.plots_dir) {
            if (mkdir(o.plots_dir, 0777) != 0 && errno != EEXIST) {
                rc = lt_errset(err, LT_EIO, "cannot create the directory %s: %s", o.plots_dir,
                               strerror(errno));
                goto out;
            }
            ctx->dir = o.plots_dir;
        } else {
            if (!mkdtemp(tmpdir)) {
                rc = lt_errset(err, LT_EIO, "cannot create a temporary directory: %s",
                               strerror(errno));
                goto out;
            }
            ctx->dir = tmpdir;
        }
    }
    /* With --html the report is also kept as text for the page. */
    FILE *dst = out;
    if (o.html_path) {
        body = open_memstream(&text, &text_len);
        if (!body) {
            rc = lt_errset(err, LT_ENOMEM, "out of memory");
            goto out;
        }
        dst = body;
    }
    int crc = ka == LT_KIND_TRACE ? compare_traces(path_a, path_b, &o, dst, sum, ctx, err)
                                  : compare_results(path_a, path_b, &o, dst, sum, ctx, err);
    if (body) {
        fclose(body);
        body = NULL;
        if (text)
            fputs(text, out);
    }
    if (crc < 0 && crc != LT_EIO) {
        rc = crc;
        goto out;
    }
    if (o.html_path) {
        FILE *f = fopen(o.html_path, "w");
        if (!f) {
            rc = lt_errset(err, LT_EIO, "cannot create %s: %s", o.html_path, strerror(errno));
            goto out;
        }
        char title[1200];
        snprintf(title, sizeof title, "loadtrace compare: %s vs %s", path_a, path_b);
        int hrc = lt_analyze_write_html(NULL, title, text ? text : "", ctx, f, err);
        if (fclose(f) != 0 && hrc == 0)
            hrc = lt_errset(err, LT_EIO, "cannot write %s", o.html_path);
        LT_TRY(hrc);
    }
    rc = crc;
out:
    if (body)
        fclose(body);
    free(text);
    if (ctx) {
        sum->charts = rep.charts;
        sum->gnuplot_missing = ctx->gnuplot == 0;
        for (uint32_t i = 0; i < rep.n_notes && sum->n_notes < 8; i++)
            snprintf(sum->notes[sum->n_notes++], sizeof sum->notes[0], "%s", rep.notes[i]);
        if (ctx->dir == tmpdir) {
            static const char *const ext[] = {"dat", "gp", "png", "svg"};
            char path[4096];
            for (uint32_t k = 0; k < ctx->n; k++)
                for (int e = 0; e < 4; e++) {
                    snprintf(path, sizeof path, "%s/%s.%s", ctx->dir, ctx->names[k], ext[e]);
                    remove(path);
                }
            rmdir(tmpdir);
        }
        free(ctx);
    }
    return rc;
}

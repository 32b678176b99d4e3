/*
 * The charts of compare (compare.h): for each distribution, the CDFs of A
 * and B overlaid and the QQ plot of B's quantiles against A's, made with
 * analyze's chart writer (analyze_plot.h) from the result structs of
 * compare_traces.c and compare_results.c.
 */
#include "analyze/compare_internal.h"
#include "base/lt_buf.h"
#include "base/lt_hist.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* "A:name" for gnuplot's word(): how the legend names a side. */
static void side_word(char *dst, size_t n, const char *path, const char *side)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%s:%s", side, b);
    lt_plot_word(dst, n, tmp);
}

struct words {
    char a[64], b[64];
};

static void words_of(struct words *w, const char *pa, const char *pb)
{
    side_word(w->a, sizeof w->a, pa, "A");
    side_word(w->b, sizeof w->b, pb, "B");
}

/* A chart that fails with LT_EIO is noted and the others are still made;
 * *first keeps the first such failure. */
static int keep(int c, int *first)
{
    if (c < 0 && c != LT_EIO)
        return c;
    *first = *first ? *first : c;
    return 0;
}

static int cdf_chart(const struct lt_compare_prop_result *p, const struct words *w, double lo,
                     double hi, int xlog, double floor_v, struct lt_buf *d, struct lt_buf *v,
                     struct lt_plot_ctx *ctx, int *first, struct lt_err *err)
{
    int rc = 0;
    char name[LT_PLOT_NAME_LEN], title[160], words[160], xlabel[96];
    snprintf(xlabel, sizeof xlabel, "%s (%s)", p->name, p->unit);
    snprintf(words, sizeof words, "%s %s", w->a, w->b);
    lt_buf_reset(d);
    lt_buf_reset(v);
    LT_TRY(lt_plot_cdf_block(d, p->ha, p->scale, floor_v));
    LT_TRY(lt_plot_cdf_block(d, p->hb, p->scale, floor_v));
    snprintf(name, sizeof name, "compare_%s_cdf", p->chart);
    snprintf(title, sizeof title, "%s: CDF of A and B (KS D = %.3f)", p->name, p->ks);
    LT_TRY(lt_plot_var(v, "chart_title", title));
    LT_TRY(lt_plot_var(v, "xlabel", xlabel));
    LT_TRY(lt_plot_var(v, "titles", words));
    LT_TRY(lt_buf_printf(v, "nsets = 2\nxlog = %d\n", xlog));
    LT_TRY(lt_plot_range(v, "x", fmax(lo * p->scale, floor_v), fmax(hi * p->scale, floor_v)));
    rc = keep(lt_plot_chart(ctx, name, "cdf", title, v->p, d, err), first);
out:
    return rc;
}

static int qq_chart(const struct lt_compare_prop_result *p, const struct words *w, int xlog,
                    double floor_v, struct lt_buf *d, struct lt_buf *v, struct lt_plot_ctx *ctx,
                    int *first, struct lt_err *err)
{
    int rc = 0;
    char name[LT_PLOT_NAME_LEN], title[160];
    lt_buf_reset(d);
    lt_buf_reset(v);
    LT_TRY(lt_buf_puts(d, "# p quantile_a quantile_b\n"));
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (int q = 1; q <= 99; q++) {
        double qa = fmax(lt_analyze_pct(p->ha, q) * p->scale, floor_v);
        double qb = fmax(lt_analyze_pct(p->hb, q) * p->scale, floor_v);
        xlo = fmin(xlo, qa);
        xhi = fmax(xhi, qa);
        ylo = fmin(ylo, fmin(qa, qb)); /* y shows B's points and the y = x line */
        yhi = fmax(yhi, fmax(qa, qb));
        LT_TRY(lt_buf_printf(d, "%d %.9g %.9g\n", q, qa, qb));
    }
    snprintf(name, sizeof name, "compare_%s_qq", p->chart);
    snprintf(title, sizeof title, "%s: quantiles of B against A", p->name);
    LT_TRY(lt_plot_var(v, "chart_title", title));
    LT_TRY(lt_plot_var(v, "xlabel", p->unit));
    LT_TRY(lt_plot_var(v, "title_a", w->a));
    LT_TRY(lt_plot_var(v, "title_b", w->b));
    LT_TRY(lt_buf_printf(v, "xlog = %d\n", xlog));
    LT_TRY(lt_plot_range(v, "x", xlo, xhi));
    LT_TRY(lt_plot_range(v, "y", ylo, yhi));
    rc = keep(lt_plot_chart(ctx, name, "qq", title, v->p, d, err), first);
out:
    return rc;
}

/* Both charts of every distribution of props[0..n) with data on both
 * sides. */
static int dist_charts(const struct lt_compare_prop_result *props, int n, const struct words *w,
                       struct lt_plot_ctx *ctx, struct lt_err *err)
{
    int rc = 0, first = 0;
    struct lt_buf d, v;
    lt_buf_init(&d, (size_t)1 << 26);
    lt_buf_init(&v, (size_t)1 << 20);
    for (int i = 0; i < n; i++) {
        const struct lt_compare_prop_result *p = &props[i];
        if (p->kind != LT_CMP_DIST || !p->chart || !p->na || !p->nb)
            continue;
        uint64_t lo =
            lt_hist_min(p->ha) < lt_hist_min(p->hb) ? lt_hist_min(p->ha) : lt_hist_min(p->hb);
        uint64_t hi =
            lt_hist_max(p->ha) > lt_hist_max(p->hb) ? lt_hist_max(p->ha) : lt_hist_max(p->hb);
        int xlog = !p->w1_abs && (double)hi >= 100.0 * (double)(lo ? lo : 1);
        double floor_v = xlog ? (lo ? (double)lo * p->scale : p->scale) : 0;
        LT_TRY(cdf_chart(p, w, (double)lo, (double)hi, xlog, floor_v, &d, &v, ctx, &first, err));
        LT_TRY(qq_chart(p, w, xlog, floor_v, &d, &v, ctx, &first, err));
    }
    rc = first;
out:
    lt_buf_release(&d);
    lt_buf_release(&v);
    return rc;
}

int lt__compare_traces_charts(const struct lt_compare_traces *t, struct lt_plot_ctx *ctx,
                             struct lt_err *err)
{
    struct words w;
    words_of(&w, t->a.path, t->b.path);
    return dist_charts(t->props, LT_CMPP_COUNT, &w, ctx, err);
}

/* TTFT, TPOT and E2E of one matched pair, judged as distributions for the
 * KS D in the CDF chart's title. */
static int pair_charts(const struct lt_compare_pair *pr, const struct words *w,
                       struct lt_plot_ctx *ctx, struct lt_err *err)
{
    static const struct {
        const char *name, *stem;
        enum lt_analyze_metric m;
    } ms[3] = {
        {"TTFT", "ttft", LT_AM_TTFT}, {"TPOT", "tpot", LT_AM_TPOT}, {"E2E", "e2e", LT_AM_E2E}};
    struct lt_compare_prop_result props[3];
    char stems[3][48];
    for (int i = 0; i < 3; i++) {
        snprintf(stems[i], sizeof stems[i], "%s_a%u_b%u", ms[i].stem, pr->ra->id, pr->rb->id);
        props[i] = (struct lt_compare_prop_result){.name = ms[i].name,
                                                   .unit = "ms",
                                                   .kind = LT_CMP_DIST,
                                                   .ha = pr->ra->h[ms[i].m],
                                                   .hb = pr->rb->h[ms[i].m],
                                                   .scale = 1e-3,
                                                   .chart = stems[i]};
        int rc = lt__compare_eval_dist(&props[i], err);
        if (rc < 0)
            return rc;
    }
    return dist_charts(props, 3, w, ctx, err);
}

int lt__compare_results_charts(const struct lt_compare_results *r, struct lt_plot_ctx *ctx,
                              struct lt_err *err)
{
    struct words w;
    words_of(&w, r->path_a, r->path_b);
    int first = 0;
    for (uint32_t k = 0; k < r->n_pairs; k++) {
        int c = keep(pair_charts(&r->pairs[k], &w, ctx, err), &first);
        if (c < 0)
            return c;
    }
    return first;
}

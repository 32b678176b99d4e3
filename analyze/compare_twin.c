/*
 * The twin table of `loadtrace compare` (compare.h): results B predicted
 * results A (a virtual replay with a fitted profile against a live replay
 * of the same trace at the same load), so the question is not "which is
 * better" but "how far off is the prediction". Per matched run: the error
 * (B - A) / A of p50, p90 and p99 of TTFT, TPOT, ITL and E2E, of
 * throughput and of goodput, the KS distance of each distribution, and one
 * verdict against the tolerances of compare.h (docs/compare.md, "Twin");
 * beside them, not judged, the server's own prefill and decode time a
 * token against the twin's on the same requests, where both sides have
 * them (llama-server's timings, a llama.cpp twin's): a miss where those
 * differ as much is the server's speed on that run, or a cost the twin
 * prices wrong, not the queueing the twin plays.
 * Everything comes from analyze's per-run histograms, so the figures are
 * the ones `loadtrace analyze` prints for each file.
 */
#include "analyze/analyze_json.h"
#include "analyze/compare_internal.h"
#include "base/lt_hist.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    enum lt_analyze_metric h;
    bool judged;
} twin_dists[LT_CMP_TWIN_DISTS] = {
    [LT_CMP_TWIN_TTFT] = {"TTFT", LT_AM_TTFT, true},
    [LT_CMP_TWIN_TPOT] = {"TPOT", LT_AM_TPOT, true},
    [LT_CMP_TWIN_ITL] = {"ITL", LT_AM_ITL, false},
    [LT_CMP_TWIN_E2E] = {"E2E", LT_AM_E2E, true},
};

static const char *const q_names[3] = {"p50", "p90", "p99"};

/* (b - a) / a; NAN when a is not positive (nothing to be relative to). */
static double rel_err(double a, double b)
{
    return a > 0 ? (b - a) / a : NAN;
}

/* ms a token of a server timing's sums (us, tokens); NAN without tokens. */
static double per_token(uint64_t us, uint64_t tokens)
{
    return tokens ? (double)us / 1e3 / (double)tokens : NAN;
}

/* Judge one figure: count it, count a miss, keep the worst. A figure
 * without an error (no data, or A is 0) is not judged. */
static void judge(struct lt_compare_twin *t, const char *name, double err, double tol)
{
    if (!isfinite(err))
        return;
    t->judged++;
    t->misses += fabs(err) > tol;
    if (t->judged == 1 || fabs(err) / tol > fabs(t->worst_err) / t->worst_tol) {
        snprintf(t->worst, sizeof t->worst, "%s", name);
        t->worst_err = err;
        t->worst_tol = tol;
    }
}

int lt__compare_twin_eval(struct lt_compare_twin *t, const struct lt_analyze_run *ra,
                         const struct lt_analyze_run *rb, struct lt_err *err)
{
    memset(t, 0, sizeof *t);
    for (int i = 0; i < LT_CMP_TWIN_DISTS; i++) {
        struct lt_compare_twin_dist *d = &t->d[i];
        const struct lt_hist *ha = ra->h[twin_dists[i].h], *hb = rb->h[twin_dists[i].h];
        d->name = twin_dists[i].name;
        d->judged = twin_dists[i].judged;
        d->na = lt_hist_count(ha);
        d->nb = lt_hist_count(hb);
        for (int q = 0; q < 3; q++)
            d->a[q] = d->b[q] = d->err[q] = NAN;
        d->ks = NAN;
        if (!d->na || !d->nb)
            continue;
        double w1;
        int rc = lt_compare_hists(ha, hb, &d->ks, &w1, err);
        if (rc < 0)
            return rc;
        for (int q = 0; q < 3; q++) {
            d->a[q] = lt_analyze_pct(ha, lt__compare_qps[q]) / 1e3;
            d->b[q] = lt_analyze_pct(hb, lt__compare_qps[q]) / 1e3;
            d->err[q] = rel_err(d->a[q], d->b[q]);
            if (d->judged) {
                char name[32];
                snprintf(name, sizeof name, "%s %s", d->name, q_names[q]);
                judge(t, name, d->err[q], q ? LT_CMP_TWIN_TOL_TAIL : LT_CMP_TWIN_TOL_P50);
            }
        }
    }
    t->tput_a = ra->agg_tps;
    t->tput_b = rb->agg_tps;
    t->tput_err = rel_err(t->tput_a, t->tput_b);
    judge(t, "throughput", t->tput_err, LT_CMP_TWIN_TOL_RATE);
    t->good_a = ra->goodput;
    t->good_b = rb->goodput;
    t->good_err = rel_err(t->good_a, t->good_b);
    judge(t, "goodput", t->good_err, LT_CMP_TWIN_TOL_RATE);
    t->pf_a = per_token(ra->srv_pf_us, ra->srv_pf_tokens);
    t->pf_b = per_token(rb->srv_pf_us, rb->srv_pf_tokens);
    t->pf_err = rel_err(t->pf_a, t->pf_b);
    t->dec_a = per_token(ra->srv_dec_us, ra->srv_dec_tokens);
    t->dec_b = per_token(rb->srv_dec_us, rb->srv_dec_tokens);
    t->dec_err = rel_err(t->dec_a, t->dec_b);
    return 0;
}

/* "%+.1f%%", or "-" for no figure. */
static const char *fmt_err(char *buf, size_t n, double e)
{
    if (isfinite(e))
        snprintf(buf, n, "%+.1f%%", 100 * e);
    else
        snprintf(buf, n, "-");
    return buf;
}

void lt__compare_twin_write_text(const struct lt_compare_twin *t, FILE *out)
{
    char e[3][16];
    fprintf(out, "  twin: B as a prediction of A, error (B - A) / A\n");
    fprintf(out, "    %-6s %10s %10s %7s  %10s %10s %7s  %10s %10s %7s  %6s\n", "(ms)", "A p50",
            "B p50", "error", "A p90", "B p90", "error", "A p99", "B p99", "error", "KS D");
    for (int i = 0; i < LT_CMP_TWIN_DISTS; i++) {
        const struct lt_compare_twin_dist *d = &t->d[i];
        if (!d->na || !d->nb) {
            fprintf(out, "    %-6s no data (A %llu, B %llu values)\n", d->name,
                    (unsigned long long)d->na, (unsigned long long)d->nb);
            continue;
        }
        fprintf(out, "    %-6s %10.4g %10.4g %7s  %10.4g %10.4g %7s  %10.4g %10.4g %7s  %6.3f%s\n",
                d->name, d->a[0], d->b[0], fmt_err(e[0], sizeof e[0], d->err[0]), d->a[1], d->b[1],
                fmt_err(e[1], sizeof e[1], d->err[1]), d->a[2], d->b[2],
                fmt_err(e[2], sizeof e[2], d->err[2]), d->ks, d->judged ? "" : "  (not judged)");
    }
    fprintf(out, "    %-24s A %10.4g  B %10.4g  %7s\n", "throughput (tok/s)", t->tput_a, t->tput_b,
            fmt_err(e[0], sizeof e[0], t->tput_err));
    fprintf(out, "    %-24s A %10.4g  B %10.4g  %7s\n", "goodput (requests/s)", t->good_a,
            t->good_b, fmt_err(e[0], sizeof e[0], t->good_err));
    if (isfinite(t->pf_a) && isfinite(t->pf_b))
        fprintf(out,
                "    %-24s A %10.4g  B %10.4g  %7s  (not judged: the server's own timings "
                "against the twin's, the same requests)\n",
                "server prefill (ms/tok)", t->pf_a, t->pf_b, fmt_err(e[0], sizeof e[0], t->pf_err));
    if (isfinite(t->dec_a) && isfinite(t->dec_b))
        fprintf(out, "    %-24s A %10.4g  B %10.4g  %7s  (not judged)\n", "server decode (ms/tok)",
                t->dec_a, t->dec_b, fmt_err(e[0], sizeof e[0], t->dec_err));
    if (!t->judged)
        fprintf(out, "  twin verdict: no data to judge\n");
    else if (!t->misses)
        fprintf(out,
                "  twin verdict: holds: all %u figures within tolerance (p50 %.0f %%, p90 and "
                "p99 %.0f %%, throughput and goodput %.0f %%); worst %s %s of %.0f %%\n",
                t->judged, 100 * LT_CMP_TWIN_TOL_P50, 100 * LT_CMP_TWIN_TOL_TAIL,
                100 * LT_CMP_TWIN_TOL_RATE, t->worst, fmt_err(e[0], sizeof e[0], t->worst_err),
                100 * t->worst_tol);
    else
        fprintf(out,
                "  twin verdict: misses: %u of %u figures beyond tolerance; worst %s %s "
                "(tolerance %.0f %%)\n",
                t->misses, t->judged, t->worst, fmt_err(e[0], sizeof e[0], t->worst_err),
                100 * t->worst_tol);
}

/* `"key": {"a": A, "b": B, "error": E}` */
static void json_rate(FILE *out, const char *key, double a, double b, double e)
{
    fprintf(out, ", \"%s\": {\"a\": ", key);
    lt_analyze_jnum(out, a);
    fprintf(out, ", \"b\": ");
    lt_analyze_jnum(out, b);
    fprintf(out, ", \"error\": ");
    lt_analyze_jnum(out, e);
    fprintf(out, "}");
}

static void json_triple(FILE *out, const char *key, const double *v)
{
    fprintf(out, ", \"%s\": [", key);
    for (int q = 0; q < 3; q++) {
        fprintf(out, q ? ", " : "");
        lt_analyze_jnum(out, v[q]);
    }
    fprintf(out, "]");
}

void lt__compare_twin_write_json(const struct lt_compare_twin *t, FILE *out)
{
    fprintf(out, "{\"distributions\": [");
    for (int i = 0; i < LT_CMP_TWIN_DISTS; i++) {
        const struct lt_compare_twin_dist *d = &t->d[i];
        fprintf(out, "%s\n        {\"name\": \"%s\", \"unit\": \"ms\", \"judged\": %s, ",
                i ? "," : "", d->name, d->judged ? "true" : "false");
        fprintf(out, "\"n\": [%llu, %llu]", (unsigned long long)d->na, (unsigned long long)d->nb);
        json_triple(out, "a", d->a);
        json_triple(out, "b", d->b);
        json_triple(out, "error", d->err);
        fprintf(out, ", \"ks\": ");
        lt_analyze_jnum(out, d->ks);
        fprintf(out, "}");
    }
    fprintf(out, "]");
    json_rate(out, "throughput", t->tput_a, t->tput_b, t->tput_err);
    json_rate(out, "goodput", t->good_a, t->good_b, t->good_err);
    json_rate(out, "server_prefill_ms_per_token", t->pf_a, t->pf_b, t->pf_err);
    json_rate(out, "server_decode_ms_per_token", t->dec_a, t->dec_b, t->dec_err);
    fprintf(out, ", \"tolerance\": {\"p50\": ");
    lt_analyze_jnum(out, LT_CMP_TWIN_TOL_P50);
    fprintf(out, ", \"p90\": ");
    lt_analyze_jnum(out, LT_CMP_TWIN_TOL_TAIL);
    fprintf(out, ", \"p99\": ");
    lt_analyze_jnum(out, LT_CMP_TWIN_TOL_TAIL);
    fprintf(out, ", \"rate\": ");
    lt_analyze_jnum(out, LT_CMP_TWIN_TOL_RATE);
    fprintf(out, "}, \"judged\": %u, \"misses\": %u, \"verdict\": \"%s\", \"worst\": ", t->judged,
            t->misses,
            !t->judged  ? "no data"
            : t->misses ? "misses"
                        : "holds");
    if (t->judged) {
        fprintf(out, "{\"figure\": ");
        lt_analyze_jstr(out, t->worst);
        fprintf(out, ", \"error\": ");
        lt_analyze_jnum(out, t->worst_err);
        fprintf(out, ", \"tolerance\": ");
        lt_analyze_jnum(out, t->worst_tol);
        fprintf(out, "}");
    } else {
        fprintf(out, "null");
    }
    fprintf(out, "}");
}

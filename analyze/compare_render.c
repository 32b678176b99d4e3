/*
 * The reports of compare (compare.h): the terminal tables and the JSON of
 * schema loadtrace-compare/1 (docs/compare.md), laid out from the result
 * structs of compare_traces.c and compare_results.c with analyze's JSON
 * writers (analyze_json.h). Nothing is computed here but formatting.
 */
#include "analyze/analyze_json.h"
#include "analyze/compare_internal.h"

#include <math.h>
#include <stdio.h>

static const char *const verdict_names[LT_CMP_VERDICTS] = {
    [LT_CMP_NODATA] = "no data", [LT_CMP_REPRESENTATIVE] = "representative",
    [LT_CMP_CLOSE] = "close",    [LT_CMP_DIFFERENT] = "different",
    [LT_CMP_SAME] = "same",      [LT_CMP_BETTER] = "B better",
    [LT_CMP_WORSE] = "B worse",
};

const char *lt_compare_verdict_name(enum lt_compare_verdict v)
{
    return (unsigned)v < LT_CMP_VERDICTS ? verdict_names[v] : "?";
}

/* A figure in the width of a table cell: "-" when there is none, fewer
 * decimals the larger it is. */
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

/* ---- traces --------------------------------------------------------------- */

/* "137 -> 135 (-1 %)": percentile q of A and B. */
static void fmt_change(char *buf, size_t n, const struct lt_compare_prop_result *p, int q)
{
    char a[16], b[16];
    fmt_num(a, sizeof a, p->qa[q]);
    fmt_num(b, sizeof b, p->qb[q]);
    snprintf(buf, n, "%s -> %s (%+.0f %%)", a, b,
             p->qa[q] ? 100 * (p->qb[q] - p->qa[q]) / p->qa[q] : 0.0);
}

static void text_dists(const struct lt_compare_traces *t, FILE *out)
{
    fprintf(out, "%-26s %7s %7s %7s %9s %8s  %-28s %-28s %s\n", "distribution", "n(A)", "n(B)",
            "KS D", "p-value", "W1 norm", "p50 A -> B", "p99 A -> B", "verdict");
    for (int i = 0; i < LT_CMPP_COUNT; i++) {
        const struct lt_compare_prop_result *p = &t->props[i];
        if (p->kind != LT_CMP_DIST)
            continue;
        char lab[64];
        snprintf(lab, sizeof lab, "%s (%s)", p->name, p->unit);
        if (!p->na || !p->nb) {
            fprintf(out, "%-26s %7llu %7llu %7s %9s %8s  %-28s %-28s %s\n", lab,
                    (unsigned long long)p->na, (unsigned long long)p->nb, "-", "-", "-", "", "",
                    lt_compare_verdict_name(p->verdict));
            continue;
        }
        char q50[96], q99[96];
        fmt_change(q50, sizeof q50, p, 0);
        fmt_change(q99, sizeof q99, p, 2);
        fprintf(out, "%-26s %7llu %7llu %7.3f %9.2g %8.3f  %-28s %-28s %s\n", lab,
                (unsigned long long)p->na, (unsigned long long)p->nb, p->ks, p->p, p->w1n, q50, q99,
                lt_compare_verdict_name(p->verdict));
    }
}

static void text_scalars(const struct lt_compare_traces *t, FILE *out)
{
    fprintf(out, "\n%-22s %12s %12s %12s  %s\n", "figure", "A", "B", "difference", "verdict");
    for (int i = 0; i < LT_CMPP_COUNT; i++) {
        const struct lt_compare_prop_result *p = &t->props[i];
        if (p->kind == LT_CMP_DIST)
            continue;
        if (p->verdict == LT_CMP_NODATA) {
            fprintf(out, "%-22s %12s %12s %12s  %s\n", p->name, "-", "-", "-", "no data");
            continue;
        }
        char d[32];
        if (p->kind == LT_CMP_REL)
            snprintf(d, sizeof d, "%+.1f %%", 100 * p->diff);
        else
            snprintf(d, sizeof d, "%+.1f pt", 100 * p->diff);
        if (p->kind == LT_CMP_ABS)
            fprintf(out, "%-22s %10.1f %% %10.1f %% %12s  %s\n", p->name, 100 * p->va, 100 * p->vb,
                    d, lt_compare_verdict_name(p->verdict));
        else
            fprintf(out, "%-22s %12.3f %12.3f %12s  %s\n", p->name, p->va, p->vb, d,
                    lt_compare_verdict_name(p->verdict));
    }
}

void lt_compare_traces_write_text(const struct lt_compare_traces *t, FILE *out)
{
    fprintf(out,
            "compare traces: is B representative of A?\n  A = %s: %llu records, %.1f "
            "req/s over %.0f s\n  B = %s: %llu records, %.1f req/s over %.0f s\n\n",
            t->a.path, (unsigned long long)t->a.records, t->a.rate, t->a.span_s, t->b.path,
            (unsigned long long)t->b.records, t->b.rate, t->b.span_s);
    text_dists(t, out);
    text_scalars(t, out);
    fprintf(out, "\noverall: %s",
            t->overall == LT_CMP_REPRESENTATIVE ? "B is representative of A"
            : t->overall == LT_CMP_CLOSE        ? "B is close to A (representative "
                                                  "with reservations)"
            : t->overall == LT_CMP_NODATA       ? "no data to compare"
                                                : "B is NOT representative of A");
    const char *sep = ": differs in ";
    for (int i = 0; i < LT_CMPP_COUNT; i++)
        if (t->props[i].verdict == LT_CMP_DIFFERENT) {
            fprintf(out, "%s%s", sep, t->props[i].name);
            sep = ", ";
        }
    if (t->b.fit_rate > 0)
        fprintf(out,
                "\n(B was fitted to a rescaled rate: synth --fit --rate %g, where A runs at %.3g "
                "req/s; its inter-arrival times and burstiness are A's shape at another rate, "
                "different by design; synth --fit without --rate keeps A's own)",
                t->b.fit_rate, t->a.rate);
    fprintf(out,
            "\n(thresholds, docs/compare.md: representative when KS D <= %.2f and W1 norm <= "
            "%.2f, or within sampling noise; close up to twice (D) and 2.5 times (W1) that)\n",
            LT_CMP_KS_SAME, LT_CMP_W1_SAME);
}

/* `, "key": [a, b]` */
static void jpair(FILE *out, const char *key, double a, double b)
{
    fprintf(out, ", \"%s\": [", key);
    lt_analyze_jnum(out, a);
    fprintf(out, ", ");
    lt_analyze_jnum(out, b);
    fprintf(out, "]");
}

/* `, "key": v` */
static void jfield(FILE *out, const char *key, double v)
{
    fprintf(out, ", \"%s\": ", key);
    lt_analyze_jnum(out, v);
}

static void json_prop(const struct lt_compare_prop_result *p, FILE *out)
{
    fprintf(out, "{\"name\": ");
    lt_analyze_jstr(out, p->name);
    fprintf(out, ", \"unit\": ");
    lt_analyze_jstr(out, p->unit);
    fprintf(out, ", \"verdict\": \"%s\"", lt_compare_verdict_name(p->verdict));
    if (p->kind == LT_CMP_DIST) {
        bool data = p->na && p->nb;
        fprintf(out, ", \"n_a\": %llu, \"n_b\": %llu", (unsigned long long)p->na,
                (unsigned long long)p->nb);
        jfield(out, "ks", p->ks);
        jfield(out, "p_value", data ? p->p : NAN);
        jfield(out, "w1_normalized", data ? p->w1n : NAN);
        jfield(out, "ks_threshold", data ? p->ks_tol : NAN);
        jfield(out, "w1_threshold", data ? p->w1_tol : NAN);
        static const char *const qn[3] = {"p50", "p90", "p99"};
        for (int q = 0; q < 3; q++)
            jpair(out, qn[q], p->qa[q], p->qb[q]);
    } else {
        jfield(out, "a", p->va);
        jfield(out, "b", p->vb);
        jfield(out, "difference", p->diff);
        fprintf(out, ", \"difference_kind\": \"%s\"",
                p->kind == LT_CMP_REL ? "relative" : "absolute");
        if (p->kind == LT_CMP_ABS && isfinite(p->p))
            jfield(out, "p_value", p->p);
    }
    fprintf(out, "}");
}

void lt_compare_traces_write_json(const struct lt_compare_traces *t, FILE *out)
{
    fprintf(out, "{\n  \"schema\": \"loadtrace-compare/1\",\n  \"kind\": \"traces\",\n  \"a\": ");
    lt_analyze_jstr(out, t->a.path);
    fprintf(out, ",\n  \"b\": ");
    lt_analyze_jstr(out, t->b.path);
    fprintf(out, ",\n  \"records\": [%llu, %llu],\n  \"properties\": [",
            (unsigned long long)t->a.records, (unsigned long long)t->b.records);
    for (int i = 0; i < LT_CMPP_COUNT; i++) {
        fprintf(out, "%s\n    ", i ? "," : "");
        json_prop(&t->props[i], out);
    }
    fprintf(out, "\n  ],\n  \"overall\": \"%s\"\n}\n", lt_compare_verdict_name(t->overall));
}

/* ---- results -------------------------------------------------------------- */

static const char *const paired_names[LT_CMP_PAIRED_COUNT] = {"TTFT", "TPOT", "E2E"};

/* Whether A and B had a different number of cancelled requests: then
 * their figures are over different sets of requests. */
static bool cancelled_differ(const struct lt_compare_pair *p)
{
    return p->ra->cancelled != p->rb->cancelled;
}

static void text_pair(const struct lt_compare_results *r, const struct lt_compare_pair *p,
                      FILE *out)
{
    const struct lt_analyze_run *a = p->ra, *b = p->rb;
    fprintf(out,
            "\n%s (A run %u) vs %s (B run %u): %llu and %llu Ok requests, %llu and %llu errors\n",
            p->la, a->id, p->lb, b->id, (unsigned long long)a->ok, (unsigned long long)b->ok,
            (unsigned long long)lt__analyze_failed(a), (unsigned long long)lt__analyze_failed(b));
    /* As analyze counts them: neither Ok nor errors, in no figure below. */
    if (a->cancelled || b->cancelled)
        fprintf(out,
                "  cancelled (closed where the trace's client left; not errors, in no figure "
                "below): %llu and %llu, %llu and %llu tokens received before\n",
                (unsigned long long)a->cancelled, (unsigned long long)b->cancelled,
                (unsigned long long)a->cancelled_tokens, (unsigned long long)b->cancelled_tokens);
    if (cancelled_differ(p))
        fprintf(out,
                "  NOTE: A and B cancelled a different number of requests (%llu and %llu): "
                "their figures are over different requests (a run with --no-cancel, or "
                "clients that left elsewhere)\n",
                (unsigned long long)a->cancelled, (unsigned long long)b->cancelled);
    fprintf(out, "  %-28s %11s %11s %11s   %-25s %8s  %s\n", "metric", "A", "B", "B - A", "CI",
            "change", "verdict");
    for (int i = 0; i < LT_CMPM_COUNT; i++) {
        const struct lt_compare_metric_result *x = &p->m[i];
        char lab[48];
        snprintf(lab, sizeof lab, "%s (%s)", lt_compare_metric_name((enum lt_compare_metric)i),
                 lt_compare_metric_unit((enum lt_compare_metric)i));
        if (x->verdict == LT_CMP_NODATA) {
            fprintf(out, "  %-28s %11s %11s %11s   %-25s %8s  %s\n", lab, "-", "-", "-", "", "",
                    "no data");
            continue;
        }
        char ci[64];
        snprintf(ci, sizeof ci, "[%.4g, %.4g]", x->lo, x->hi);
        fprintf(out, "  %-28s %11.4g %11.4g %+11.4g   %-25s %+7.1f%%  %s\n", lab, x->a, x->b,
                x->diff, ci, 100 * x->rel, lt_compare_verdict_name(x->verdict));
    }
    const struct lt_compare_paired *pr = &p->paired;
    if (pr->paired) {
        fprintf(out, "  paired (the same %zu requests in both):\n", pr->pairs);
        for (int f = 0; f < LT_CMP_PAIRED_COUNT; f++)
            if (pr->n[f])
                fprintf(out,
                        "    %-5s B - A: mean %+.3f ms [%.3f, %.3f], median %+.3f ms; "
                        "B faster for %.0f %%\n",
                        paired_names[f], pr->mean[f], pr->lo[f], pr->hi[f], pr->median[f],
                        100.0 * pr->faster[f] / pr->n[f]);
    }
    fprintf(out,
            "  same performance (TPOT p50, Agg tok/s and mean output length within "
            "%.0f %% or not significantly different): %s\n",
            100 * r->o.margin, p->same_performance ? "yes" : "no");
    lt__analyze_fleet_compare_text(p->ra, p->rb, out);
    if (r->twin)
        lt__compare_twin_write_text(&p->twin, out);
}

void lt_compare_results_write_text(const struct lt_compare_results *r, FILE *out)
{
    const struct lt_compare_opts *o = &r->o;
    fprintf(out,
            "compare results: did B beat A?\n  A = %s (%u run%s)\n  B = %s (%u run%s)\n"
            "  %.0f %% bootstrap confidence intervals (%u resamples of up to %u requests "
            "per run); a difference counts when its CI excludes 0 and it exceeds %.0f %%\n",
            r->path_a, r->runs_a, r->runs_a == 1 ? "" : "s", r->path_b, r->runs_b,
            r->runs_b == 1 ? "" : "s", 100 * o->confidence, o->bootstrap, o->sample,
            100 * o->margin);
    if (r->traces_differ)
        fprintf(out,
                "NOTE: A and B are replays of different traces (%s): their requests are not "
                "the same, so none are paired, and B is no prediction of A\n",
                r->traces_why);
    for (uint32_t i = 0; i < r->runs_a; i++) {
        if (r->pair_of[i] < 0)
            fprintf(out, "\nA run %u has no run at the same level in B: skipped\n", r->id_a[i]);
        else
            text_pair(r, &r->pairs[r->pair_of[i]], out);
    }
    if (r->n_pairs == 0)
        fprintf(out, "\nno run of A matches a run of B (same concurrency, rate and speed)\n");
    else
        fprintf(out,
                "\nverdict: B is better on %u, worse (or different) on %u, and the same on "
                "%u of %u figures\n",
                r->better, r->worse, r->compared - r->better - r->worse, r->compared);
    uint32_t differ = 0;
    for (uint32_t k = 0; k < r->n_pairs; k++)
        differ += cancelled_differ(&r->pairs[k]);
    if (differ)
        fprintf(out, "cancelled: A and B differ in %u of %u matched runs (see NOTE above)\n",
                differ, r->n_pairs);
    if (r->n_pairs > 0 && r->twin)
        fprintf(out, "twin verdict: %s (%u of %u matched runs within tolerance)\n",
                r->twin_misses ? "misses" : "holds", r->n_pairs - r->twin_misses, r->n_pairs);
}

static void json_metric(enum lt_compare_metric i, const struct lt_compare_metric_result *x,
                        FILE *out)
{
    bool data = x->verdict != LT_CMP_NODATA;
    fprintf(out, "{\"name\": ");
    lt_analyze_jstr(out, lt_compare_metric_name(i));
    fprintf(out, ", \"unit\": \"%s\"", lt_compare_metric_unit(i));
    jfield(out, "a", x->a);
    jfield(out, "b", x->b);
    jfield(out, "diff", data ? x->diff : NAN);
    jpair(out, "ci", data ? x->lo : NAN, data ? x->hi : NAN);
    jfield(out, "relative", data ? x->rel : NAN);
    fprintf(out, ", \"verdict\": \"%s\"}", lt_compare_verdict_name(x->verdict));
}

static void json_paired(const struct lt_compare_paired *pr, FILE *out)
{
    if (!pr->paired) {
        fprintf(out, "null");
        return;
    }
    fprintf(out, "{\"pairs\": %zu", pr->pairs);
    for (int f = 0; f < LT_CMP_PAIRED_COUNT; f++) {
        fprintf(out, ", \"%s\": {\"n\": %zu, \"mean_ms\": ", paired_names[f], pr->n[f]);
        lt_analyze_jnum(out, pr->mean[f]);
        jfield(out, "median_ms", pr->median[f]);
        jpair(out, "ci", pr->lo[f], pr->hi[f]);
        jfield(out, "b_faster", pr->n[f] ? (double)pr->faster[f] / pr->n[f] : NAN);
        fprintf(out, "}");
    }
    fprintf(out, "}");
}

static void json_pair(const struct lt_compare_results *r, const struct lt_compare_pair *p,
                      bool first, FILE *out)
{
    fprintf(out, "%s\n    {\"a_run\": %u, \"b_run\": %u, \"a_label\": ", first ? "" : ",",
            p->ra->id, p->rb->id);
    lt_analyze_jstr(out, p->la);
    fprintf(out, ", \"b_label\": ");
    lt_analyze_jstr(out, p->lb);
    const struct lt_analyze_run *a = p->ra, *b = p->rb;
    fprintf(out,
            ", \"a_ok\": %llu, \"b_ok\": %llu, \"a_errors\": %llu, \"b_errors\": %llu,\n     "
            "\"a_cancelled\": %llu, \"b_cancelled\": %llu, \"a_cancelled_tokens\": %llu, "
            "\"b_cancelled_tokens\": %llu, \"cancelled_differ\": %s,\n     \"metrics\": [",
            (unsigned long long)a->ok, (unsigned long long)b->ok,
            (unsigned long long)lt__analyze_failed(a), (unsigned long long)lt__analyze_failed(b),
            (unsigned long long)a->cancelled, (unsigned long long)b->cancelled,
            (unsigned long long)a->cancelled_tokens, (unsigned long long)b->cancelled_tokens,
            cancelled_differ(p) ? "true" : "false");
    for (int i = 0; i < LT_CMPM_COUNT; i++) {
        fprintf(out, "%s\n      ", i ? "," : "");
        json_metric((enum lt_compare_metric)i, &p->m[i], out);
    }
    fprintf(out, "],\n     \"paired\": ");
    json_paired(&p->paired, out);
    lt__analyze_fleet_compare_json(p->ra, p->rb, out);
    fprintf(out, ",\n     \"twin\": ");
    if (r->twin)
        lt__compare_twin_write_json(&p->twin, out);
    else
        fprintf(out, "null");
    fprintf(out, "}");
}

void lt_compare_results_write_json(const struct lt_compare_results *r, FILE *out)
{
    fprintf(out, "{\n  \"schema\": \"loadtrace-compare/1\",\n  \"kind\": \"results\",\n  "
                 "\"a\": ");
    lt_analyze_jstr(out, r->path_a);
    fprintf(out, ",\n  \"b\": ");
    lt_analyze_jstr(out, r->path_b);
    fprintf(out, ",\n  \"trace_a\": ");
    lt_analyze_jstr(out, r->trace_a);
    fprintf(out, ", \"trace_b\": ");
    lt_analyze_jstr(out, r->trace_b);
    fprintf(out, ", \"traces_differ\": %s, \"traces_why\": ", r->traces_differ ? "true" : "false");
    if (r->traces_differ)
        lt_analyze_jstr(out, r->traces_why);
    else
        fprintf(out, "null");
    fprintf(out, ",\n  \"confidence\": ");
    lt_analyze_jnum(out, r->o.confidence);
    fprintf(out, ", \"bootstrap\": %u, \"sample\": %u, \"margin\": ", r->o.bootstrap, r->o.sample);
    lt_analyze_jnum(out, r->o.margin);
    fprintf(out, ",\n  \"runs\": [");
    for (uint32_t k = 0; k < r->n_pairs; k++)
        json_pair(r, &r->pairs[k], k == 0, out);
    uint32_t differ = 0;
    for (uint32_t k = 0; k < r->n_pairs; k++)
        differ += cancelled_differ(&r->pairs[k]);
    fprintf(out,
            "\n  ],\n  \"better\": %u, \"worse_or_different\": %u, \"compared\": %u,\n"
            "  \"cancelled_differ\": %u,\n  \"twin\": %s, \"twin_misses\": %u\n}\n",
            r->better, r->worse, r->compared, differ, r->twin ? "true" : "false", r->twin_misses);
}

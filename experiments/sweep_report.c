/*
 * The sweep's report: every figure read from the per-config results files
 * through analyze/ (and DIR/sweep.json for what ran and how it ended), the
 * A/B verdicts by compare_results, the Pareto chart by analyze's plotting
 * code. Measured and predicted configs are ranked apart.
 */
#define _DEFAULT_SOURCE
#include "experiments/sweep_internal.h"

#include "analyze/analyze.h"
#include "analyze/analyze_plot.h"
#include "analyze/analyze_server.h"
#include "analyze/compare.h"
#include "base/lt_buf.h"
#include "base/lt_path.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* One config's line of the report. */
struct row {
    const struct lt_sweep_config *k;
    const char *status; /* from sweep.json; "not run" without an entry */
    const char *why, *command, *results;
    bool predicted, have;
    struct lt_analyze *a;
    const struct lt_analyze_run *r; /* the headline run: the capacity probe, or the best level */
    struct lt_analyze_capacity cap;
    bool capacity;
    double tps, goodput;
    double lat[6]; /* TTFT, TPOT, E2E p50 and p99, ms */
    uint64_t errors, ok, measured;
    bool srv;
    struct lt_analyze_srv_stats ss;
    bool front;
    const struct lt_analyze_run *cr; /* the run at the common load, or NULL */
    double clat[6], ctps;
};

/* A percentile of run r's metric m, in ms; NAN without values. */
static double ms(const struct lt_analyze_run *r, int m, double p)
{
    return r->h[m] && lt_hist_count(r->h[m]) ? lt_analyze_pct(r->h[m], p) / 1000.0 : NAN;
}

/* The load every measured config ran (the highest such), where their
 * latencies compare like for like. */
struct common {
    bool have;
    double x;
    const char *axis;
};

/* A run's load: a probe's, else its concurrency, rate or speed. */
static double load_of(const struct lt_analyze_run *r, const char **axis)
{
    if (r->probe.search[0]) {
        *axis = r->probe.search;
        return r->probe.load;
    }
    *axis = r->concurrency ? "concurrency" : r->rate > 0 ? "rate" : "speed";
    return r->concurrency ? (double)r->concurrency : r->rate > 0 ? r->rate : r->speed;
}

static const struct lt_analyze_run *run_at(const struct row *w, double x)
{
    const char *axis;
    for (uint32_t i = 0; w->have && i < w->a->n_runs; i++)
        if (w->a->runs[i]->measured && !w->a->runs[i]->probe.left_out &&
            fabs(load_of(w->a->runs[i], &axis) - x) <= 1e-9 * (1 + x))
            return w->a->runs[i];
    return NULL;
}

static void common_load(struct row *rows, size_t n, struct common *cm)
{
    memset(cm, 0, sizeof *cm);
    const struct row *first = NULL;
    size_t measured = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].have && !rows[i].predicted) {
            measured++;
            if (!first)
                first = &rows[i];
        }
    if (measured < 2)
        return;
    for (uint32_t i = 0; i < first->a->n_runs; i++) {
        const char *axis;
        double x = load_of(first->a->runs[i], &axis);
        bool all = x > 0 && !first->a->runs[i]->probe.left_out; /* a capacity answer's runs */
        for (size_t j = 0; all && j < n; j++)
            if (rows[j].have && !rows[j].predicted && !run_at(&rows[j], x))
                all = false;
        if (all && (!cm->have || x > cm->x)) {
            cm->have = true;
            cm->x = x;
            cm->axis = axis;
        }
    }
    static const int mets[3] = {LT_AM_TTFT, LT_AM_TPOT, LT_AM_E2E};
    for (size_t j = 0; cm->have && j < n; j++) {
        struct row *w = &rows[j];
        if (!(w->cr = run_at(w, cm->x)))
            continue;
        for (int m = 0; m < 3; m++) {
            w->clat[2 * m] = ms(w->cr, mets[m], 50);
            w->clat[2 * m + 1] = ms(w->cr, mets[m], 99);
        }
        w->ctps = w->cr->agg_tps;
    }
}

static void figures(struct row *w, const struct lt_sweep_plan *p)
{
    const struct lt_analyze *a = w->a;
    w->capacity = p->load == LT_SWEEP_FINDMAX &&
                  lt_analyze_capacity(a, w->predicted ? "virtual" : "live", &w->cap);
    const struct lt_analyze_run *best = NULL;
    if (w->capacity && w->cap.max_run >= 0)
        best = a->runs[w->cap.max_run];
    for (uint32_t i = 0; !w->capacity && i < a->n_runs; i++) {
        const struct lt_analyze_run *r = a->runs[i];
        double v = p->slo[0] ? r->goodput : r->agg_tps, bv = 0;
        if (best)
            bv = p->slo[0] ? best->goodput : best->agg_tps;
        if (!best || v > bv)
            best = r;
    }
    w->r = best;
    for (int i = 0; i < 6; i++)
        w->lat[i] = NAN;
    w->tps = w->goodput = NAN;
    if (!best)
        return;
    static const int mets[3] = {LT_AM_TTFT, LT_AM_TPOT, LT_AM_E2E};
    for (int i = 0; i < 3; i++) {
        w->lat[2 * i] = ms(best, mets[i], 50);
        w->lat[2 * i + 1] = ms(best, mets[i], 99);
    }
    w->tps = best->agg_tps;
    w->goodput = w->capacity ? w->cap.goodput : p->slo[0] ? best->goodput : NAN;
    w->ok = best->ok;
    w->measured = best->measured;
    w->errors = best->measured - best->ok - best->cancelled;
    if ((w->srv = best->srv != NULL))
        lt_analyze_server_stats(best->srv, &w->ss);
}

/* The figure configs are ranked by: capacity, else goodput, else tok/s. */
static double score(const struct row *w, const struct lt_sweep_plan *p)
{
    if (!w->have || !w->r || strcmp(w->status, "complete"))
        return -1;
    if (p->load == LT_SWEEP_FINDMAX)
        return w->capacity ? w->cap.max_ok : -1;
    return p->slo[0] ? w->goodput : w->tps;
}

static void pareto(struct row *rows, size_t n, bool predicted)
{
    for (size_t i = 0; i < n; i++) {
        struct row *w = &rows[i];
        if (w->predicted != predicted)
            continue;
        w->front = false;
        if (!w->have || !w->r || !isfinite(w->lat[5]))
            continue;
        bool beaten = false;
        for (size_t j = 0; j < n && !beaten; j++) {
            const struct row *o = &rows[j];
            if (j == i || !o->have || !o->r || o->predicted != predicted || !isfinite(o->lat[5]))
                continue;
            beaten = o->tps >= w->tps && o->lat[5] <= w->lat[5] &&
                     (o->tps > w->tps || o->lat[5] < w->lat[5]);
        }
        w->front = !beaten;
    }
}

/* The best of one kind and the runner-up, indexes or -1. */
static void rank(const struct row *rows, size_t n, bool predicted, const struct lt_sweep_plan *p,
                 int *best, int *second)
{
    *best = *second = -1;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].predicted != predicted || score(&rows[i], p) <= 0)
            continue;
        double s = score(&rows[i], p);
        if (*best < 0 || s > score(&rows[*best], p)) {
            *second = *best;
            *best = (int)i;
        } else if (*second < 0 || s > score(&rows[*second], p))
            *second = (int)i;
    }
}

static const char *unit_of(const struct lt_sweep_plan *p)
{
    return p->load == LT_SWEEP_FINDMAX ? (!strcmp(p->axis, "rate") ? " req/s" : " in flight")
                                       : (p->slo[0] ? " good req/s" : " tok/s");
}

/* "A serves 1.8x B's rate within the SLO ..." and whether it is sure. */
static void evidence(const struct row *rows, int b, int s, const struct lt_sweep_plan *p, char *out,
                     size_t cap)
{
    const struct row *w = &rows[b];
    if (s < 0) {
        snprintf(out, cap, "%s (the only config with a result)", w->k->name);
        return;
    }
    const struct row *o = &rows[s];
    double ratio = score(w, p) / score(o, p);
    if (p->load == LT_SWEEP_FINDMAX) {
        bool sure = o->cap.min_fail > 0 && w->cap.max_ok >= o->cap.min_fail;
        char wh[32] = "not found", oh[32] = "not found";
        if (w->cap.min_fail > 0)
            snprintf(wh, sizeof wh, "%.4g", w->cap.min_fail);
        if (o->cap.min_fail > 0)
            snprintf(oh, sizeof oh, "%.4g", o->cap.min_fail);
        snprintf(out, cap,
                 "%s serves %.2fx %s's %s within the SLO (%.4g against %.4g%s); %s's capacity "
                 "lies in [%.4g, %s) and %s's in [%.4g, %s) (met, failed); the probe at %s's "
                 "capacity met the SLO for %.1f %% of its requests (95 %% interval %.1f-%.1f %%); "
                 "%s",
                 w->k->name, ratio, o->k->name, p->axis, w->cap.max_ok, o->cap.max_ok, unit_of(p),
                 w->k->name, w->cap.max_ok, wh, o->k->name, o->cap.max_ok, oh, w->k->name,
                 100 * w->r->probe.attain, 100 * w->r->probe.lo, 100 * w->r->probe.hi,
                 sure ? "the probes order them: it met the SLO at a load where the runner-up "
                        "failed it (one probe per load: on a noisy machine, repeat the sweep)"
                      : "the probes do not order them: the runner-up did not fail the SLO below "
                        "the best's capacity");
        return;
    }
    snprintf(out, cap, "%s: %.4g%s against %.4g%s for %s (%.2fx)", w->k->name, score(w, p),
             unit_of(p), score(o, p), unit_of(p), o->k->name, ratio);
}

static void num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

static void jstr(FILE *f, const char *s)
{
    json_t *j = json_string(s ? s : "");
    char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    fputs(t ? t : "\"\"", f);
    free(t);
    json_decref(j);
}

static void text_row(FILE *f, const struct row *w, const struct lt_sweep_plan *p)
{
    fprintf(f, "  %-22s %-10s %-11s", w->k->name, w->predicted ? "predicted" : "measured",
            w->status);
    if (w->have && w->capacity && !w->r) {
        fprintf(f, " %8s  no probe met the SLO (%u probes; the lowest load, %.4g, failed it)\n",
                "none", w->cap.probes, w->cap.min_fail);
        return;
    }
    if (!w->have || !w->r) {
        fprintf(f, "  no results%s%s\n", w->why ? ": " : "", w->why ? w->why : "");
        return;
    }
    if (p->load == LT_SWEEP_FINDMAX) {
        if (w->capacity && w->cap.max_ok > 0) {
            char hi[32] = "?";
            if (w->cap.min_fail > 0)
                snprintf(hi, sizeof hi, "%.4g", w->cap.min_fail);
            fprintf(f, " %8.4g [%6.4g,%6s)", w->cap.max_ok, w->cap.max_ok, hi);
        } else
            fprintf(f, " %8s %16s", "none", "");
    }
    fprintf(f, " %9.1f %8.3g", w->tps, w->goodput);
    for (int i = 0; i < 6; i++)
        fprintf(f, " %8.1f", w->lat[i]);
    fprintf(f, " %6llu", (unsigned long long)w->errors);
    if (w->srv)
        fprintf(f, "  run<=%.0f wait<=%.0f kv<=%.0f%% preempt %.0f", w->ss.running_max,
                w->ss.waiting_max, 100 * w->ss.kv_max, w->ss.preemptions);
    fputc('\n', f);
    if (w->why && strcmp(w->status, "complete"))
        fprintf(f, "  %-22s   %s\n", "", w->why);
}

/* A/B against the baseline: compare_results, its verdicts by metric. */
struct ab {
    bool done;
    char err[300];
    uint32_t pairs, better, worse, compared;
    char line[600];
    enum lt_compare_verdict v[LT_CMPM_COUNT];
    double rel[LT_CMPM_COUNT], lo[LT_CMPM_COUNT], hi[LT_CMPM_COUNT], a[LT_CMPM_COUNT],
        b[LT_CMPM_COUNT];
};

static void ab_of(const char *base, const char *res, const struct lt_sweep_plan *p,
                  int64_t const slo[3], struct ab *x)
{
    memset(x, 0, sizeof *x);
    struct lt_compare_opts co = {
        .slo_ttft_us = slo[0], .slo_tpot_us = slo[1], .slo_e2e_us = slo[2]};
    struct lt_compare_results *cr = calloc(1, sizeof *cr);
    struct lt_err err = {0};
    if (!cr) {
        snprintf(x->err, sizeof x->err, "out of memory");
        return;
    }
    if (lt_compare_results_compute(cr, base, res, &co, &err) < 0) {
        lt__sweep_fmt(x->err, sizeof x->err, "%s", err.msg);
    } else {
        x->done = true;
        x->pairs = cr->n_pairs;
        x->better = cr->better;
        x->worse = cr->worse;
        x->compared = cr->compared;
        /* The pair at the highest load both ran: where configs differ most. */
        if (cr->n_pairs) {
            const struct lt_compare_pair *q = &cr->pairs[cr->n_pairs - 1];
            size_t len = (size_t)snprintf(x->line, sizeof x->line, "at %s:", q->la);
            for (int m = 0; m < LT_CMPM_COUNT; m++) {
                x->v[m] = q->m[m].verdict;
                x->rel[m] = q->m[m].rel;
                x->lo[m] = q->m[m].lo;
                x->hi[m] = q->m[m].hi;
                x->a[m] = q->m[m].a;
                x->b[m] = q->m[m].b;
                if (len < sizeof x->line && (m <= LT_CMPM_AGG_TPS))
                    len += (size_t)snprintf(
                        x->line + len, sizeof x->line - len, " %s %s%s", lt_compare_metric_name(m),
                        lt_compare_verdict_name(q->m[m].verdict), m < LT_CMPM_AGG_TPS ? "," : "");
            }
        }
    }
    (void)p;
    lt_compare_results_release(cr);
    free(cr);
}

static int chart(struct row *rows, size_t n, const char *dir, struct lt_plot_report *rep,
                 struct lt_plot_ctx *ctx, struct lt_err *err)
{
    struct lt_buf d, v;
    lt_buf_init(&d, (size_t)1 << 20);
    lt_buf_init(&v, (size_t)1 << 16);
    int rc = 0, measured = 0, predicted = 0;
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (int blk = 0; blk < 3; blk++) {
        LT_TRY(lt_buf_printf(&d, "# %s\n# name agg_tps e2e_p99_ms front\n",
                             blk == 0   ? "measured"
                             : blk == 1 ? "front"
                                        : "predicted"));
        /* the front in order of throughput, so its line runs left to right */
        int order[LT_SWEEP_CONFIGS_MAX];
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            order[m++] = (int)i;
        for (size_t i = 1; i < m; i++)
            for (size_t j = i; j > 0 && rows[order[j]].tps < rows[order[j - 1]].tps; j--) {
                int t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
        for (size_t ii = 0; ii < m; ii++) {
            const struct row *w = &rows[order[ii]];
            if (!w->have || !w->r || !isfinite(w->lat[5]) || !(w->tps > 0) ||
                w->predicted != (blk == 2) || (blk == 1 && !w->front))
                continue;
            char word[LT_SWEEP_NAME];
            lt_plot_word(word, sizeof word, w->k->name);
            LT_TRY(lt_buf_printf(&d, "%s %.6g %.6g %d\n", word, w->tps, w->lat[5], w->front));
            measured += blk == 0;
            predicted += blk == 2;
            xlo = fmin(xlo, w->tps), xhi = fmax(xhi, w->tps);
            ylo = fmin(ylo, w->lat[5]), yhi = fmax(yhi, w->lat[5]);
        }
        LT_TRY(lt_buf_puts(&d, "\n\n"));
    }
    if (!measured) {
        snprintf(rep->notes[rep->n_notes++], sizeof rep->notes[0],
                 "no Pareto chart: no measured config has results");
        goto out;
    }
    LT_TRY(lt_plot_var(&v, "chart_title", "Configs: throughput against E2E p99"));
    LT_TRY(lt_plot_var(&v, "ylab", "E2E p99 (ms, log scale)"));
    LT_TRY(lt_buf_printf(&v, "has_pred = %d\n", predicted > 0));
    LT_TRY(lt_plot_span(&v, "x", xlo, xhi, LT_PLOT_ZERO));
    LT_TRY(lt_plot_span(&v, "y", ylo, yhi, LT_PLOT_LOG | LT_PLOT_TICKS));
    rc = lt_plot_chart(ctx, "sweep_pareto", "sweep",
                       "Each config at its throughput and E2E p99 (capacity probe or fixed load); "
                       "the line joins the measured configs no other beats on both",
                       v.p, &d, err);
out:
    lt_buf_release(&d);
    lt_buf_release(&v);
    (void)dir;
    return rc;
}

static const char *jget(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* A config's figures: the members after its name and status. */
static void figures_json(FILE *f, const struct row *w)
{
    if (w->have && w->r) {
        fprintf(f, ",\n     \"run\": %u, \"measured\": %llu, \"ok\": %llu, \"errors\": %llu",
                w->r->id, (unsigned long long)w->measured, (unsigned long long)w->ok,
                (unsigned long long)w->errors);
        fprintf(f, ", \"agg_tps\": ");
        num(f, w->tps);
        fprintf(f, ", \"goodput\": ");
        num(f, w->goodput);
        static const char *const names[6] = {"ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms",
                                             "tpot_p99_ms", "e2e_p50_ms",  "e2e_p99_ms"};
        for (int m = 0; m < 6; m++) {
            fprintf(f, ", \"%s\": ", names[m]);
            num(f, w->lat[m]);
        }
        fprintf(f, ", \"pareto_front\": %s", w->front ? "true" : "false");
        fprintf(f, ",\n     \"capacity\": ");
        if (w->capacity) {
            fprintf(f, "{\"axis\": ");
            jstr(f, w->cap.axis);
            fprintf(f, ", \"max_ok\": ");
            num(f, w->cap.max_ok > 0 ? w->cap.max_ok : NAN);
            fprintf(f, ", \"min_fail\": ");
            num(f, w->cap.min_fail > 0 ? w->cap.min_fail : NAN);
            fprintf(f, ", \"goodput\": ");
            num(f, w->cap.goodput);
            fprintf(f, ", \"probes\": %u, \"attain\": ", w->cap.probes);
            num(f, w->r->probe.attain);
            fprintf(f, ", \"attain_lo\": ");
            num(f, w->r->probe.lo);
            fprintf(f, ", \"attain_hi\": ");
            num(f, w->r->probe.hi);
            fputc('}', f);
        } else
            fputs("null", f);
        fprintf(f, ",\n     \"server\": ");
        if (w->srv) {
            fprintf(f, "{\"running_max\": ");
            num(f, w->ss.running_max);
            fprintf(f, ", \"waiting_max\": ");
            num(f, w->ss.waiting_max);
            fprintf(f, ", \"kv_max\": ");
            num(f, w->ss.kv_max);
            fprintf(f, ", \"preemptions\": ");
            num(f, w->ss.preemptions);
            fputc('}', f);
        } else
            fputs("null", f);
    } else if (w->have && w->capacity) {
        fprintf(f, ",\n     \"capacity\": {\"axis\": ");
        jstr(f, w->cap.axis);
        fprintf(f, ", \"max_ok\": null, \"min_fail\": ");
        num(f, w->cap.min_fail > 0 ? w->cap.min_fail : NAN);
        fprintf(f, ", \"goodput\": 0, \"probes\": %u}", w->cap.probes);
    }
}

/* Its A/B verdicts against the baseline (nothing when none). */
static void ab_json(FILE *f, const struct ab *x)
{
    if (x->done) {
        fprintf(f,
                ",\n     \"vs_baseline\": {\"pairs\": %u, \"better\": %u, \"worse\": %u, "
                "\"metrics\": {",
                x->pairs, x->better, x->worse);
        for (int m = 0; x->pairs && m < LT_CMPM_COUNT; m++) {
            fprintf(f, "%s\"%s\": {\"verdict\": \"%s\", \"a\": ", m ? ", " : "",
                    lt_compare_metric_name(m), lt_compare_verdict_name(x->v[m]));
            num(f, x->a[m]);
            fprintf(f, ", \"b\": ");
            num(f, x->b[m]);
            fprintf(f, ", \"rel\": ");
            num(f, x->rel[m]);
            fprintf(f, ", \"ci\": [");
            num(f, x->lo[m]);
            fputs(", ", f);
            num(f, x->hi[m]);
            fputs("]}", f);
        }
        fputs("}}", f);
    } else if (x->err[0]) {
        fprintf(f, ",\n     \"vs_baseline\": {\"error\": ");
        jstr(f, x->err);
        fputc('}', f);
    }
}

static void common_json(FILE *f, const struct row *rows, size_t n, const struct common *cm)
{
    fprintf(f, ",\n  \"common_load\": ");
    if (cm->have) {
        fprintf(f, "{\"axis\": ");
        jstr(f, cm->axis);
        fprintf(f, ", \"x\": ");
        num(f, cm->x);
        fprintf(f, ", \"configs\": [");
        int k = 0;
        for (size_t i = 0; i < n; i++) {
            const struct row *w = &rows[i];
            if (!w->cr)
                continue;
            fprintf(f, "%s\n    {\"name\": ", k++ ? "," : "");
            jstr(f, w->k->name);
            fprintf(f, ", \"run\": %u, \"agg_tps\": ", w->cr->id);
            num(f, w->ctps);
            static const char *const names[6] = {"ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms",
                                                 "tpot_p99_ms", "e2e_p50_ms",  "e2e_p99_ms"};
            for (int m = 0; m < 6; m++) {
                fprintf(f, ", \"%s\": ", names[m]);
                num(f, w->clat[m]);
            }
            fputc('}', f);
        }
        fputs("]}", f);
    } else
        fputs("null", f);
}

static void write_json(FILE *f, struct row *rows, size_t n, const struct lt_sweep_plan *p,
                       const struct common *cm, int bm, int bp, const char *ev_m, const char *ev_p,
                       struct ab *abs)
{
    fprintf(f, "{\n  \"schema\": \"loadtrace-sweep-report/1\",\n  \"plan\": ");
    jstr(f, p->path);
    fprintf(f, ",\n  \"trace\": ");
    jstr(f, p->trace);
    fprintf(f, ",\n  \"load\": \"%s\",\n  \"slo\": ",
            p->load == LT_SWEEP_FINDMAX  ? "find-max"
            : p->load == LT_SWEEP_CLOSED ? "closed"
                                         : "fixed");
    jstr(f, p->slo);
    fprintf(f, ",\n  \"configs\": [");
    for (size_t i = 0; i < n; i++) {
        const struct row *w = &rows[i];
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        jstr(f, w->k->name);
        fprintf(f, ", \"kind\": \"%s\", \"status\": ", w->predicted ? "predicted" : "measured");
        jstr(f, w->status);
        fprintf(f, ", \"params\": ");
        jstr(f, w->k->params);
        fprintf(f, ", \"command\": ");
        if (w->command)
            jstr(f, w->command);
        else
            fputs("null", f);
        fprintf(f, ", \"results\": ");
        if (w->have)
            jstr(f, w->results);
        else
            fputs("null", f);
        fprintf(f, ", \"why\": ");
        if (w->why)
            jstr(f, w->why);
        else
            fputs("null", f);
        figures_json(f, w);
        ab_json(f, &abs[i]);
        fputc('}', f);
    }
    fprintf(f, "\n  ],\n  \"best_measured\": ");
    if (bm >= 0) {
        fprintf(f, "{\"name\": ");
        jstr(f, rows[bm].k->name);
        fprintf(f, ", \"evidence\": ");
        jstr(f, ev_m);
        fputc('}', f);
    } else
        fputs("null", f);
    fprintf(f, ",\n  \"best_predicted\": ");
    if (bp >= 0) {
        fprintf(f, "{\"name\": ");
        jstr(f, rows[bp].k->name);
        fprintf(f, ", \"evidence\": ");
        jstr(f, ev_p);
        fputc('}', f);
    } else
        fputs("null", f);
    common_json(f, rows, n, cm);
    fprintf(f, ",\n  \"baseline\": ");
    if (p->baseline[0])
        jstr(f, p->baseline);
    else
        fputs("null", f);
    fputs("\n}\n", f);
}

static void write_text(FILE *f, struct row *rows, size_t n, const struct lt_sweep_plan *p,
                       const struct common *cm, int bm, int bp, const char *ev_m, const char *ev_p,
                       struct ab *abs)
{
    fprintf(f, "sweep of %s: %zu configs, trace %s, load: %s%s%s%s\n\n", p->path, n, p->trace,
            p->load == LT_SWEEP_FINDMAX  ? "the highest "
            : p->load == LT_SWEEP_CLOSED ? "closed loop"
                                         : "fixed",
            p->axis,
            p->load == LT_SWEEP_FINDMAX ? " within the SLO "
            : p->slo[0]                 ? ", SLO "
                                        : "",
            p->slo);
    fprintf(f, "  %-22s %-10s %-11s", "config", "kind", "status");
    if (p->load == LT_SWEEP_FINDMAX)
        fprintf(f, " %8s %16s", "capacity", "[met, failed)");
    fprintf(f, " %9s %8s %8s %8s %8s %8s %8s %8s %6s\n", "tok/s", "goodput", "TTFT p50", "p99",
            "TPOT p50", "p99", "E2E p50", "p99", "errors");
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n; i++)
            if (rows[i].predicted == (pass == 1))
                text_row(f, &rows[i], p);
    fprintf(f, "\n  latencies in ms; %s; errors: measured requests that failed\n",
            p->load == LT_SWEEP_FINDMAX
                ? "tok/s, goodput (req/s within the SLO) and latencies at each config's capacity "
                  "probe"
                : "figures of each config's best run");
    if (cm->have) {
        fprintf(f, "\nat a common load, %s %.4g (the highest every measured config ran):\n",
                cm->axis, cm->x);
        fprintf(f, "  %-22s %-10s %9s %8s %8s %8s %8s %8s %8s\n", "config", "kind", "tok/s",
                "TTFT p50", "p99", "TPOT p50", "p99", "E2E p50", "p99");
        for (size_t i = 0; i < n; i++) {
            if (!rows[i].cr)
                continue;
            fprintf(f, "  %-22s %-10s %9.1f", rows[i].k->name,
                    rows[i].predicted ? "predicted" : "measured", rows[i].ctps);
            for (int m = 0; m < 6; m++)
                fprintf(f, " %8.1f", rows[i].clat[m]);
            fputc('\n', f);
        }
    }
    fprintf(f, "\nbest measured config: %s\n", bm >= 0 ? ev_m : "none (no complete result)");
    if (bp >= 0)
        fprintf(f, "best predicted config (virtual time; a prediction, not a measurement): %s\n",
                ev_p);
    if (p->baseline[0]) {
        fprintf(f, "\nA/B against the baseline %s (loadtrace compare BASELINE CONFIG):\n",
                p->baseline);
        for (size_t i = 0; i < n; i++) {
            if (!strcmp(rows[i].k->name, p->baseline))
                continue;
            if (abs[i].done)
                fprintf(f, "  %-22s %s%u matched runs; %u figures better, %u worse; %s\n",
                        rows[i].k->name, rows[i].predicted ? "(predicted) " : "", abs[i].pairs,
                        abs[i].better, abs[i].worse,
                        abs[i].pairs ? abs[i].line : "no run at a load the baseline ran");
            else
                fprintf(f, "  %-22s not compared: %s\n", rows[i].k->name,
                        abs[i].err[0] ? abs[i].err : "no results");
        }
    }
}

/* Row w of config k: its outcome from sweep.json (cfgs), its figures from
 * its results file. A file analyze cannot read is a note, not a failure. */
static int read_row(struct row *w, const struct lt_sweep_config *k, json_t *cfgs,
                    struct lt_analyze_opts *ao, const struct lt_sweep_plan *p, char (*notes)[512],
                    int n_notes_max, int *n_notes, struct lt_err *err)
{
    w->k = k;
    w->predicted = k->kind == LT_SWEEP_VIRTUAL;
    json_t *e = cfgs ? json_object_get(cfgs, k->name) : NULL;
    w->status = e && jget(e, "status") ? jget(e, "status") : "not run";
    w->why = e ? jget(e, "why") : NULL;
    w->command = e ? (jget(e, "command_run") ? jget(e, "command_run") : jget(e, "command")) : NULL;
    w->results = e ? jget(e, "results") : NULL;
    struct stat sb;
    if (!w->results || stat(w->results, &sb) != 0 || !strcmp(w->status, "running"))
        return 0;
    if (!(w->a = calloc(1, sizeof *w->a)))
        return lt_errset(err, LT_ENOMEM, "out of memory");
    struct lt_err ae = {0};
    ao->salvage = strcmp(w->status, "complete") != 0; /* a dead server's file may end short */
    if (lt_analyze_file(w->results, ao, w->a, &ae) < 0) {
        if (*n_notes < n_notes_max)
            lt__sweep_fmt(notes[(*n_notes)++], 512, "%s: %s", k->name, ae.msg);
        return 0;
    }
    w->have = true;
    figures(w, p);
    return 0;
}

/* Each config against the baseline, when the plan names one. */
static void ab_all(const struct row *rows, size_t n, const struct lt_sweep_plan *p, struct ab *abs)
{
    int bi = -1;
    for (size_t i = 0; p->baseline[0] && i < n; i++)
        if (!strcmp(rows[i].k->name, p->baseline))
            bi = (int)i;
    for (size_t i = 0; bi >= 0 && i < n; i++) {
        if ((int)i == bi)
            continue;
        if (!rows[bi].have)
            snprintf(abs[i].err, sizeof abs[i].err, "the baseline %s has no results", p->baseline);
        else if (rows[i].have)
            ab_of(rows[bi].results, rows[i].results, p, p->slo_us, &abs[i]);
    }
}

/* The charts (a chart that cannot be drawn is a note, not a failure) and
 * report.html around the report's text. */
static int write_html(struct row *rows, size_t n, const char *dir, const char *text,
                      char (*notes)[512], int n_notes_max, int *n_notes, struct lt_err *err)
{
    struct lt_plot_report rep = {0};
    char cdir[1200], path[1200];
    snprintf(cdir, sizeof cdir, "%s/charts", dir);
    struct lt_plot_ctx ctx = {.dir = cdir, .rep = &rep, .gnuplot = -1};
    struct lt_err pe = {0};
    if (lt_plot_make_dir(cdir, &pe) == 0)
        chart(rows, n, dir, &rep, &ctx, &pe);
    if (pe.msg[0] && *n_notes < n_notes_max)
        lt__sweep_fmt(notes[(*n_notes)++], 512, "chart: %s", pe.msg);
    for (uint32_t i = 0; i < rep.n_notes && *n_notes < n_notes_max; i++)
        lt__sweep_fmt(notes[(*n_notes)++], 512, "%s", rep.notes[i]);
    snprintf(path, sizeof path, "%s/report.html", dir);
    struct lt_path_out po;
    int rc = lt_path_out_begin(&po, path, err);
    if (rc >= 0) {
        rc = lt_analyze_write_html(NULL, "loadtrace sweep", text, &ctx, po.f, err);
        if (rc >= 0)
            rc = lt_path_out_commit(&po, err);
        else
            lt_path_out_abort(&po);
    }
    lt_plot_report_release(&rep);
    return rc;
}

int lt_sweep_report(const struct lt_sweep_plan *p, const char *dir, FILE *out, char (*notes)[512],
                    int n_notes_max, int *n_notes, struct lt_err *err)
{
    *n_notes = 0;
    char path[1200];
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    json_t *st = json_load_file(path, 0, NULL);
    json_t *cfgs = st ? json_object_get(st, "configs") : NULL;
    size_t n = p->n_configs;
    struct row *rows = calloc(n, sizeof *rows);
    struct ab *abs = calloc(n, sizeof *abs);
    int rc = 0;
    if (!rows || !abs) {
        rc = lt_errset(err, LT_ENOMEM, "out of memory");
        goto out;
    }
    struct lt_analyze_opts ao;
    lt_analyze_opts_init(&ao);
    ao.slo_ttft_us = p->slo_us[0];
    ao.slo_tpot_us = p->slo_us[1];
    ao.slo_e2e_us = p->slo_us[2];
    for (size_t i = 0; i < n; i++)
        if ((rc = read_row(&rows[i], &p->configs[i], cfgs, &ao, p, notes, n_notes_max, n_notes,
                           err)) < 0)
            goto out;
    struct common cm;
    common_load(rows, n, &cm);
    pareto(rows, n, false);
    pareto(rows, n, true);
    int bm, sm, bp, sp;
    rank(rows, n, false, p, &bm, &sm);
    rank(rows, n, true, p, &bp, &sp);
    char ev_m[1200] = "", ev_p[1200] = "";
    if (bm >= 0)
        evidence(rows, bm, sm, p, ev_m, sizeof ev_m);
    if (bp >= 0)
        evidence(rows, bp, sp, p, ev_p, sizeof ev_p);
    ab_all(rows, n, p, abs);

    /* text, JSON, then the chart and the HTML around the text */
    struct lt_path_out po;
    char *text = NULL;
    size_t text_len = 0;
    FILE *mf = open_memstream(&text, &text_len);
    if (!mf) {
        rc = lt_errset(err, LT_ENOMEM, "out of memory");
        goto out;
    }
    write_text(mf, rows, n, p, &cm, bm, bp, ev_m, ev_p, abs);
    fclose(mf);
    snprintf(path, sizeof path, "%s/report.txt", dir);
    if ((rc = lt_path_out_begin(&po, path, err)) < 0)
        goto out_text;
    fputs(text, po.f);
    if ((rc = lt_path_out_commit(&po, err)) < 0)
        goto out_text;
    snprintf(path, sizeof path, "%s/report.json", dir);
    if ((rc = lt_path_out_begin(&po, path, err)) < 0)
        goto out_text;
    write_json(po.f, rows, n, p, &cm, bm, bp, ev_m, ev_p, abs);
    if ((rc = lt_path_out_commit(&po, err)) < 0)
        goto out_text;
    if (out)
        fputs(text, out);

    rc = write_html(rows, n, dir, text, notes, n_notes_max, n_notes, err);
out_text:
    free(text);
out:
    for (size_t i = 0; rows && i < n; i++)
        if (rows[i].a) {
            lt_analyze_release(rows[i].a);
            free(rows[i].a);
        }
    free(rows);
    free(abs);
    json_decref(st);
    return rc;
}

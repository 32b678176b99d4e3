/*
 * The rendering half of analyze (analyze.h): an analysis as terminal
 * tables, as CSV (one row per run) or as JSON (the schema of
 * docs/analyze-json.md). The terminal report is also what replay prints at
 * the end of a run (lt_analyze_print_summary), so its layout is the one
 * users see most: the seed table first, then each run's latencies.
 *
 * Latencies are kept in microseconds and shown in milliseconds.
 */
#include "analyze/analyze.h"
#include "analyze/analyze_media.h"
#include "analyze/analyze_internal.h"
#include "analyze/analyze_json.h"
#include "analyze/analyze_server.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#define WARN_MAX 64
#define WARN_LEN LT_ANALYZE_WARN_LEN

static const double pcts[] = {50, 90, 95, 99};

/* Rows of the latency table, in the order they are printed. */
static const struct {
    enum lt_analyze_metric m;
    const char *label;
} lat_rows[] = {
    {LT_AM_TTFT, "TTFT"},        {LT_AM_TTFT_S, "TTFT from sched"},
    {LT_AM_TTFC, "TTFC"},        {LT_AM_TTFC_S, "TTFC from sched"},
    {LT_AM_ITL, "ITL"},          {LT_AM_TPOT, "TPOT"},
    {LT_AM_E2E, "E2E"},          {LT_AM_E2E_S, "E2E from sched"},
    {LT_AM_LAG, "schedule lag"},
};

static double ms(double us)
{
    return us / 1000.0;
}

/* The label of a run in the seed table's first column: its concurrency,
 * rate or speed, in at most 8 characters for the usual levels. */
static void run_label(const struct lt_analyze_run *r, char *buf, size_t n)
{
    if (r->probe.search[0] && r->probe.load > 0) /* a probe: its load, live units */
        snprintf(buf, n, "%s %.4g%s", !strcmp(r->probe.engine, "live") ? "live" : "virt",
                 r->probe.load, strcmp(r->probe.search, "concurrency") ? "/s" : "");
    else if (r->concurrency)
        snprintf(buf, n, "%u", r->concurrency);
    else if (r->rate > 0)
        snprintf(buf, n, "%.4g/s", r->rate);
    else if (r->speed > 0)
        snprintf(buf, n, "x%.4g", r->speed);
    else
        snprintf(buf, n, "run %u", r->id);
}

/* The seed table's first column is "C" (the design's table) when every run
 * is a closed loop, "Load" when rates or speeds are among them. */
static const char *label_head(const struct lt_analyze *a)
{
    for (uint32_t i = 0; i < a->n_runs; i++)
        if (!a->runs[i]->concurrency)
            return "Load";
    return "C";
}

static double share(uint64_t part, uint64_t whole)
{
    return whole ? (double)part / whole : 0.0;
}

void lt__analyze_level(const struct lt_analyze_run *r, char *buf, size_t n)
{
    /* a probe of a capacity search: its load, as the capacity table gives
     * it (a virtual probe of a time-scaled model ran at load / scale) */
    if (r->probe.search[0] && r->probe.load > 0) {
        if (!strcmp(r->probe.search, "concurrency"))
            snprintf(buf, n, "%s C=%g", r->probe.engine, r->probe.load);
        else if (r->rate > 0 && fabs(r->rate / r->probe.load - 1) > 1e-6)
            snprintf(buf, n, "%s rate %.4g/s (model %.3g/s)", r->probe.engine, r->probe.load,
                     r->rate);
        else
            snprintf(buf, n, "%s rate %.4g/s", r->probe.engine, r->probe.load);
        return;
    }
    if (r->concurrency)
        snprintf(buf, n, "C=%u", r->concurrency);
    else if (r->rate > 0)
        snprintf(buf, n, "rate %g/s", r->rate);
    else if (r->speed > 0)
        snprintf(buf, n, "speed x%g", r->speed);
    else
        snprintf(buf, n, "run %u", r->id);
}

/* The rest after the sweep's points: a capacity search's probes of the
 * other engine by their load (the search probed them out of order), then
 * the probes its answer left out, the others in file order. */
static bool later_probe(const struct lt_analyze_run *x, const struct lt_analyze_run *y)
{
    if (!x->probe.search[0] || !y->probe.search[0])
        return false;
    bool xo = x->probe.left_out != NULL, yo = y->probe.left_out != NULL;
    if (xo || yo)
        return xo && !yo;
    int e = strcmp(x->probe.engine, y->probe.engine);
    return e != 0 ? e > 0 : x->probe.load > y->probe.load;
}

uint32_t lt__analyze_run_order(const struct lt_analyze *a, uint32_t *order)
{
    uint32_t n = 0;
    bool done[LT_ANALYZE_RUNS_MAX] = {0};
    for (uint32_t i = 0; i < a->n_points; i++) {
        order[n++] = a->points[i].run;
        done[a->points[i].run] = true;
    }
    uint32_t rest = n;
    for (uint32_t i = 0; i < a->n_runs; i++)
        if (!done[i])
            order[n++] = i;
    /* insertion sort: stable, and the runs are few */
    for (uint32_t i = rest + 1; i < n; i++)
        for (uint32_t k = i; k > rest && later_probe(a->runs[order[k - 1]], a->runs[order[k]]);
             k--) {
            uint32_t t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
    return n;
}

void lt__analyze_title(const struct lt_analyze *a, char *buf, size_t n)
{
    size_t len = 0;
    if (a->sweep_axis && a->sweep_axis[0] == 'c')
        len = (size_t)snprintf(buf, n, "Concurrency sweep, C=%g to %g", a->points[0].x,
                               a->points[a->n_points - 1].x);
    else if (a->sweep_axis)
        len = (size_t)snprintf(buf, n, "Request-rate sweep, %g to %g req/s", a->points[0].x,
                               a->points[a->n_points - 1].x);
    else if (a->n_runs == 1) {
        char lev[48];
        lt__analyze_level(a->runs[0], lev, sizeof lev);
        len = (size_t)snprintf(buf, n, "One run at %s", lev);
        if (!a->runs[0]->concurrency && !(a->runs[0]->rate > 0) && !(a->runs[0]->speed > 0))
            len = (size_t)snprintf(buf, n, "One run");
    } else
        len = (size_t)snprintf(buf, n, "%u runs", a->n_runs);
    if (len >= n || a->n_runs == 0)
        return;
    /* model and target, when every run names the same */
    const char *model = a->runs[0]->model, *target = a->runs[0]->target;
    for (uint32_t i = 1; i < a->n_runs; i++) {
        if (strcmp(a->runs[i]->model, model))
            model = "";
        if (strcmp(a->runs[i]->target, target))
            target = "";
    }
    if (*model && *target)
        snprintf(buf + len, n - len, ": %s at %s", model, target);
    else if (*model || *target)
        snprintf(buf + len, n - len, ": %s", *model ? model : target);
}

void lt__analyze_slo_text(const struct lt_analyze_opts *o, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    const int64_t v[3] = {o->slo_ttft_us, o->slo_tpot_us, o->slo_e2e_us};
    static const char *const name[3] = {"TTFT", "TPOT", "E2E"};
    for (int i = 0; i < 3 && len < n; i++)
        if (v[i])
            len += (size_t)snprintf(buf + len, n - len, "%s%s<=%gms", len ? ", " : "", name[i],
                                    (double)v[i] / 1000.0);
}

void lt__analyze_knee_text(const struct lt_analyze *a, char *buf, size_t n)
{
    bool slo = a->opts.slo_ttft_us > 0 || a->opts.slo_tpot_us > 0 || a->opts.slo_e2e_us > 0;
    if (a->knee >= 0)
        snprintf(buf, n,
                 "knee at %s %g: beyond it aggregate tok/s grew by less than %.0f %% of the "
                 "relative load increase while E2E p50 kept growing%s",
                 a->sweep_axis, a->points[a->knee].x, 100 * a->knee_fraction,
                 slo ? ", and goodput grew no more" : "");
    else
        snprintf(buf, n,
                 "no knee: aggregate tok/s kept growing by at least %.0f %% of the load "
                 "increase (or latency did not grow)",
                 100 * a->knee_fraction);
}

/* Every warning of the analysis, one sentence each. */
static int collect_warnings(const struct lt_analyze *a, char (*w)[WARN_LEN], int max)
{
    int n = 0;
#define WARN(...)                                                                                  \
    do {                                                                                           \
        if (n < max)                                                                               \
            snprintf(w[n++], WARN_LEN, __VA_ARGS__);                                               \
    } while (0)
    for (uint32_t i = 0; i < a->n_runs; i++) {
        const struct lt_analyze_run *r = a->runs[i];
        char lab[48];
        lt__analyze_level(r, lab, sizeof lab);
        double lag99 = lt_analyze_pct(r->h[LT_AM_LAG], 99);
        if (lt_hist_count(r->h[LT_AM_LAG]) && lag99 > (double)a->opts.lag_warn_us)
            WARN("run %u (%s): schedule lag p99 is %.1f ms (> %.0f ms): the client did not "
                 "keep up; the 'from sched' latencies are the honest ones",
                 r->id, lab, ms(lag99), ms((double)a->opts.lag_warn_us));
        if (r->n_want_out && share(r->out_off, r->n_want_out) > 0.10)
            WARN("run %u (%s): realized output lengths differ from the trace's want_out by "
                 "more than 5 %% for %.1f %% of requests (mean deviation %+.1f %%)",
                 r->id, lab, 100 * share(r->out_off, r->n_want_out),
                 100 * r->sum_out_dev / r->n_want_out);
        if (r->n_want_in && share(r->in_off, r->n_want_in) > 0.10)
            WARN("run %u (%s): realized prompt lengths differ from the trace's want_in by "
                 "more than 5 %% for %.1f %% of requests (mean deviation %+.1f %%)",
                 r->id, lab, 100 * share(r->in_off, r->n_want_in),
                 100 * r->sum_in_dev / r->n_want_in);
        if (r->count_chunks)
            WARN("run %u (%s): token counts of %llu Ok requests were counted from chunks, "
                 "not taken from the server's usage",
                 r->id, lab, (unsigned long long)r->count_chunks);
        if (!r->have_record)
            WARN("run %u: results name this run but the file has no run record for it", r->id);
        if (r->warmup_declared && r->warmup != r->warmup_declared && !a->opts.include_warmup)
            WARN("run %u (%s): the run record declares %u warm-up requests but %llu results "
                 "are flagged warmup (only flagged results are excluded)",
                 r->id, lab, r->warmup_declared, (unsigned long long)r->warmup);
        uint64_t neg = 0;
        for (int m = 0; m < LT_AM_COUNT; m++)
            if (m != LT_AM_LAG)
                neg += r->negative[m];
        if (neg)
            WARN("run %u (%s): %llu intervals were negative (a time before its start) and "
                 "counted as 0",
                 r->id, lab, (unsigned long long)neg);
        if (r->measured && r->ok == 0)
            WARN("run %u (%s): no request was Ok", r->id, lab);
        if (n < max)
            n += lt_analyze_server_warnings(r, w + n, max - n);
    }
#undef WARN
    return n;
}

/* ---- text ------------------------------------------------------------ */

/* How many times faster than the model the live server ran, from a live
 * and a virtual probe of one search: each probe's speed (or rate) per unit
 * of its load is the trace's own for a live one, times the scale for a
 * virtual one of a time-scaled model (which runs load / scale). 1 when
 * neither says. */
static double probe_scale(const struct lt_analyze_run *x, const struct lt_analyze_run *y)
{
    const struct lt_analyze_run *l = !strcmp(x->probe.engine, "live") ? x : y;
    const struct lt_analyze_run *v = l == x ? y : x;
    if (!(l->probe.load > 0) || !(v->probe.load > 0))
        return 1;
    double lk = l->rate > 0 ? l->rate : l->speed, vk = v->rate > 0 ? v->rate : v->speed;
    if (!(lk > 0) || !(vk > 0))
        return 1;
    return (lk / l->probe.load) / (vk / v->probe.load);
}

bool lt__analyze_engine_break(const struct lt_analyze_run *prev, const struct lt_analyze_run *r,
                             char *buf, size_t n)
{
    if (prev && r->probe.search[0] && r->probe.left_out && !prev->probe.left_out) {
        snprintf(buf, n,
                 "probes left out of the capacity answer below (analyze's capacity "
                 "section says why)");
        return true;
    }
    if (!prev || !lt_analyze_is_probe(prev) || !lt_analyze_is_probe(r) ||
        !strcmp(prev->probe.engine, r->probe.engine))
        return false;
    /* A virtual probe of a time-scaled model ran the model at load /
     * scale, so its tok/s and wall time are the model's own. */
    double scale = probe_scale(prev, r);
    if (fabs(scale - 1) > 1e-6)
        snprintf(buf, n,
                 "%s probes below: the model at 1/%.3g of the load, in its own time (tok/s and "
                 "wall time not comparable with the rows above)",
                 r->probe.engine, scale);
    else
        snprintf(buf, n, "%s probes below", r->probe.engine);
    return true;
}

static void text_seed(const struct lt_analyze *a, FILE *out)
{
    bool dec = a->opts.perreq == LT_ANALYZE_PERREQ_DECODE;
    /* Sweep runs in order of their level, then the others (above). */
    uint32_t order[LT_ANALYZE_RUNS_MAX], n = lt__analyze_run_order(a, order);
    int w = 8; /* the first column as wide as its widest label ("live 22.8/s") */
    for (uint32_t k = 0; k < n; k++) {
        char lab[32];
        run_label(a->runs[order[k]], lab, sizeof lab);
        w = (int)strlen(lab) > w ? (int)strlen(lab) : w;
    }
    fprintf(out, "%*s | %10s | %13s | %10s | %8s | %s\n", w, label_head(a), "Agg tok/s",
            "Per-req tok/s", "Tokens", "Wall(s)", "Ok");
    for (int i = 0; i < w + 1; i++)
        fputc('-', out);
    fprintf(out, "+------------+---------------+------------+----------+------------\n");
    for (uint32_t k = 0; k < n; k++) {
        const struct lt_analyze_run *r = a->runs[order[k]];
        const struct lt_analyze_run *prev = k ? a->runs[order[k - 1]] : NULL;
        char brk[256];
        if (lt__analyze_engine_break(prev, r, brk, sizeof brk))
            fprintf(out, "%*s   %s\n", w, "", brk);
        char lab[32], okb[48];
        run_label(r, lab, sizeof lab);
        snprintf(okb, sizeof okb, "%llu/%llu", (unsigned long long)r->ok,
                 (unsigned long long)r->measured);
        fprintf(out, "%*s | %10.1f | %13.1f | %10llu | %8.2f | %s\n", w, lab, r->agg_tps,
                dec ? r->perreq_decode : r->perreq_e2e, (unsigned long long)r->tokens, r->wall_s,
                okb);
    }
    fprintf(out,
            "Agg tok/s = sum of out over Ok requests / (last end - first send); "
            "Per-req tok/s = %s\n",
            dec ? "mean over Ok requests of (out - 1) / (E2E - TTFT) (decode; --per-req e2e: "
                  "out / E2E)"
                : "mean over Ok requests of out / E2E (--per-req decode: (out - 1) / (E2E - "
                  "TTFT))");
}

/* The k most frequent failure messages of r, most frequent first (ties in
 * the order first seen): their indices in r->msgs. Returns how many. */
static uint32_t top_messages(const struct lt_analyze_run *r, uint32_t *idx, uint32_t k)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->n_msgs; i++) {
        uint32_t j = n < k ? n++ : k;
        if (j == k && r->msgs[i].n <= r->msgs[idx[k - 1]].n)
            continue;
        if (j == k)
            j = k - 1;
        while (j > 0 && r->msgs[idx[j - 1]].n < r->msgs[i].n) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
    return n;
}

static void text_latency(const struct lt_analyze_run *r, FILE *out)
{
    fprintf(out, "  %-17s %9s %9s %9s %9s %9s %9s %9s\n", "latency (ms)", "n", "mean", "p50", "p90",
            "p95", "p99", "max");
    for (size_t i = 0; i < sizeof lat_rows / sizeof lat_rows[0]; i++) {
        const struct lt_hist *h = r->h[lat_rows[i].m];
        uint64_t n = lt_hist_count(h);
        if (n == 0 && lat_rows[i].m != LT_AM_TTFT && lat_rows[i].m != LT_AM_E2E)
            continue;
        fprintf(out, "  %-17s %9llu %9.2f", lat_rows[i].label, (unsigned long long)n,
                ms(lt_hist_mean(h)));
        for (size_t p = 0; p < sizeof pcts / sizeof pcts[0]; p++)
            fprintf(out, " %9.2f", ms(lt_analyze_pct(h, pcts[p])));
        fprintf(out, " %9.2f\n", ms((double)lt_hist_max(h)));
    }
}

static void text_run(const struct lt_analyze *a, const struct lt_analyze_run *r, FILE *out)
{
    char lev[48];
    lt__analyze_level(r, lev, sizeof lev);
    fprintf(out, "\n%s  (run %u", lev, r->id);
    if (a->n_files > 1)
        fprintf(out, " of file %u", r->file + 1);
    fprintf(out, ")");
    if (r->mode[0])
        fprintf(out, "  mode %s", r->mode);
    if (r->target[0])
        fprintf(out, "  target %s", r->target);
    fprintf(out,
            "\n  %llu requests measured (%llu warm-up excluded), %llu Ok, %llu sent >1 ms late\n",
            (unsigned long long)r->measured, (unsigned long long)r->warmup,
            (unsigned long long)r->ok, (unsigned long long)r->late);
    if (r->unsent || (r->n_checks && r->check.stopped_by)) {
        char line[LT_ANALYZE_FLAG_LEN];
        lt_analyze_stop_line(r, line, sizeof line);
        fprintf(out, "  %s\n", line);
    }
    if (r->cancelled)
        fprintf(out,
                "  cancelled: %llu (closed where the trace's client left; not errors), "
                "%llu tokens received before\n",
                (unsigned long long)r->cancelled, (unsigned long long)r->cancelled_tokens);
    /* a virtual run has no client to check: its check record (a stopped
     * one's) says only the stop, above */
    if (r->n_checks && strcmp(r->target, "sim:virtual") != 0) {
        char chk[400];
        lt_analyze_check_line(r, chk, sizeof chk);
        fprintf(out, "  self-check: %s%s\n", chk,
                lt_analyze_check_flagged(r) ? "  <- CHECK (see the top)" : "");
    }
    text_latency(r, out);
    if (lt__analyze_failed(r)) {
        fprintf(out, "  errors:");
        for (uint32_t i = 0; i < r->n_errs; i++)
            fprintf(out, " %s %llu", r->errs[i].name, (unsigned long long)r->errs[i].n);
        if (r->errs_other)
            fprintf(out, " other %llu", (unsigned long long)r->errs_other);
        fprintf(out, "  (%.1f %% of measured)\n", 100 * share(lt__analyze_failed(r), r->measured));
        uint32_t idx[5], n = top_messages(r, idx, 5);
        for (uint32_t i = 0; i < n; i++) {
            const struct lt_analyze_errmsg *m = &r->msgs[idx[i]];
            fprintf(out, "    %6llu  %s", (unsigned long long)m->n, m->name);
            if (m->status && strncmp(m->name, "http_", 5))
                fprintf(out, " (HTTP %d)", (int)m->status);
            fprintf(out, ": %s\n", m->msg);
        }
    }
    const struct lt_analyze_opts *o = &a->opts;
    char slo[128];
    lt__analyze_slo_text(o, slo, sizeof slo);
    if (*slo) {
        fprintf(out, "  goodput (%s", slo);
        fprintf(out,
                "): %.3f req/s, %llu of %llu measured requests; from sched: %.3f req/s, %llu\n",
                r->goodput, (unsigned long long)r->good, (unsigned long long)r->measured,
                r->goodput_sched, (unsigned long long)r->good_sched);
    }
    if (r->ok) {
        fprintf(out,
                "  tokens: out %llu = reasoning %llu + content %llu; %llu requests reasoned, "
                "%llu ended in tool calls",
                (unsigned long long)r->tokens, (unsigned long long)r->reasoning,
                (unsigned long long)r->content, (unsigned long long)r->with_reasoning,
                (unsigned long long)r->tool_calls);
        if (r->n_reason_rate)
            fprintf(out, "; decode tok/s reasoning %.1f", r->reason_tps);
        if (r->n_content_rate)
            fprintf(out, "%s content %.1f", r->n_reason_rate ? "," : "; decode tok/s",
                    r->content_tps);
        fprintf(out, "\n");
    }
    if (r->cache_reported)
        fprintf(out,
                "  prefix cache: %llu of %llu requests hit; %.1f %% of their prompt tokens "
                "cached\n",
                (unsigned long long)r->cache_hits, (unsigned long long)r->cache_reported,
                100 * share(r->cached_tokens, r->cache_in_tokens));
    if (r->n_want_in || r->n_want_out) {
        fprintf(out, "  lengths vs trace:");
        if (r->n_want_in)
            fprintf(out, " in %+.2f %% mean (|dev| %.2f %%, %.1f %% off by >5 %%)",
                    100 * r->sum_in_dev / r->n_want_in, 100 * r->sum_in_absdev / r->n_want_in,
                    100 * share(r->in_off, r->n_want_in));
        if (r->n_want_out)
            fprintf(out, "%s out %+.2f %% mean (|dev| %.2f %%, %.1f %% off by >5 %%)",
                    r->n_want_in ? ";" : "", 100 * r->sum_out_dev / r->n_want_out,
                    100 * r->sum_out_absdev / r->n_want_out,
                    100 * share(r->out_off, r->n_want_out));
        fprintf(out, "\n");
    }
    lt_analyze_media_text(r, out);
    lt_analyze_server_text(r, out);
    lt__analyze_fleet_text(r, out);
}

static void text_timeseries(const struct lt_analyze_run *r, FILE *out)
{
    fprintf(out,
            "  time series (bucket %g s; in flight: time-average; E2E p50 of the requests that "
            "ended):\n  %10s %8s %9s %6s %6s %11s\n",
            r->ts.width_us / 1e6, "t(s)", "tok/s", "in-flight", "Ok", "errors", "E2E-p50(ms)");
    for (uint32_t k = 0; k < r->ts.n; k++) {
        struct lt_analyze_ts_point p;
        lt_analyze_ts_point(r, k, &p);
        fprintf(out, "  %10.1f %8.1f %9.1f %6llu %6llu", p.t_s, p.tokens_per_s, p.in_flight,
                (unsigned long long)p.ok, (unsigned long long)p.errors);
        /* no request ended here: no latency, not a latency of 0 */
        if (isfinite(p.e2e_p50_ms))
            fprintf(out, " %11.1f", p.e2e_p50_ms);
        fprintf(out, "\n");
    }
}

/* The sweep's summary: per level, throughput, the latencies that say what
 * the level costs (p50 and p99), goodput when SLOs are given, and the knee. */
static void text_sweep(const struct lt_analyze *a, FILE *out)
{
    bool dec = a->opts.perreq == LT_ANALYZE_PERREQ_DECODE;
    char slo[128], knee[300];
    lt__analyze_slo_text(&a->opts, slo, sizeof slo);
    fprintf(out, "\nsweep over %s (latencies in ms; per-req tok/s %s%s%s):\n", a->sweep_axis,
            dec ? "decode" : "end to end", *slo ? "; goodput: Ok requests/s meeting " : "", slo);
    fprintf(out, "  %8s %10s %8s %9s %9s %9s %9s %9s %9s", a->sweep_axis[0] == 'c' ? "C" : "rate",
            "agg tok/s", "per-req", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "E2E p50",
            "E2E p99");
    if (*slo)
        fprintf(out, " %9s", "goodput");
    fprintf(out, " %11s\n", "Ok");
    for (uint32_t i = 0; i < a->n_points; i++) {
        const struct lt_analyze_run *r = a->runs[a->points[i].run];
        fprintf(out, "  %8g %10.1f %8.1f", a->points[i].x, r->agg_tps,
                dec ? r->perreq_decode : r->perreq_e2e);
        static const enum lt_analyze_metric m[3] = {LT_AM_TTFT, LT_AM_TPOT, LT_AM_E2E};
        for (int k = 0; k < 3; k++)
            fprintf(out, " %9.2f %9.2f", ms(lt_analyze_pct(r->h[m[k]], 50)),
                    ms(lt_analyze_pct(r->h[m[k]], 99)));
        if (*slo)
            fprintf(out, " %9.3f", r->goodput);
        char okb[48];
        snprintf(okb, sizeof okb, "%llu/%llu", (unsigned long long)r->ok,
                 (unsigned long long)r->measured);
        fprintf(out, " %11s%s\n", okb, (int)i == a->knee ? "  <- knee" : "");
    }
    lt__analyze_knee_text(a, knee, sizeof knee);
    fprintf(out, "  %s\n", knee);
}

int lt_analyze_write_text(const struct lt_analyze *a, FILE *out, struct lt_err *err)
{
    /* The answer first (what was measured, the table per level, the
     * knee), then each run's details, then the warnings. */
    char title[400];
    lt__analyze_title(a, title, sizeof title);
    fprintf(out, "%s\n%s: %u run%s, %llu results", title, a->path, a->n_runs,
            a->n_runs == 1 ? "" : "s", (unsigned long long)a->results);
    if (a->n_files > 1)
        fprintf(out, " from %u files", a->n_files);
    fprintf(out, "\n\n");
    lt_analyze_check_text(a, out); /* a flagged run, before the figures it makes doubtful */
    text_seed(a, out);
    if (a->sweep_axis)
        text_sweep(a, out);
    lt_analyze_capacity_text(a, out);
    uint32_t order[LT_ANALYZE_RUNS_MAX], n = lt__analyze_run_order(a, order);
    for (uint32_t i = 0; i < n; i++) {
        text_run(a, a->runs[order[i]], out);
        if (a->opts.details)
            text_timeseries(a->runs[order[i]], out);
    }
    char w[WARN_MAX][WARN_LEN];
    int nw = collect_warnings(a, w, WARN_MAX);
    if (nw)
        fprintf(out, "\n");
    for (int i = 0; i < nw; i++)
        fprintf(out, "warning: %s\n", w[i]);
    if (ferror(out))
        return lt_errset(err, LT_EIO, "analyze: writing the report failed: %s", strerror(errno));
    return 0;
}

/* ---- CSV --------------------------------------------------------------- */

static void csv_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

int lt_analyze_write_csv(const struct lt_analyze *a, FILE *out, struct lt_err *err)
{
    fprintf(out, "file,run,mode,concurrency,rate,speed,results,warmup,measured,ok,late,tokens,"
                 "wall_s,agg_tps,perreq_decode_tps,perreq_e2e_tps,goodput,goodput_sched,"
                 "reasoning_tokens,content_tokens,cache_hits,cached_tokens,errors");
    /* new columns go after the ones scripts already read by position */
    for (int m = 0; m < LT_AM_COUNT; m++) {
        const char *nm = lt_analyze_metric_name(m);
        fprintf(out, ",%s_n,%s_mean_ms,%s_p50_ms,%s_p90_ms,%s_p95_ms,%s_p99_ms,%s_max_ms", nm, nm,
                nm, nm, nm, nm, nm);
    }
    /* the run's self-check (empty without one), then a capacity search's
     * probe (empty for other runs) */
    fprintf(out, ",check_rate_asked,check_rate_got,check_inflight_asked,check_inflight_got,"
                 "check_cpu_share,check_cpu_us_request,check_cpu_us_token,check");
    fprintf(out,
            ",search,engine,load,attain,attain_lo,attain_hi,verdict,cancelled,cancelled_tokens\n");
    for (uint32_t i = 0; i < a->n_runs; i++) {
        const struct lt_analyze_run *r = a->runs[i];
        fprintf(out, "%u,%u,", r->file, r->id);
        csv_str(out, r->mode);
        fprintf(out,
                ",%u,%g,%g,%llu,%llu,%llu,%llu,%llu,%llu,%.6f,%.3f,%.3f,%.3f,%.4f,%.4f,%llu,%llu,"
                "%llu,%llu,",
                r->concurrency, r->rate, r->speed, (unsigned long long)r->results,
                (unsigned long long)r->warmup, (unsigned long long)r->measured,
                (unsigned long long)r->ok, (unsigned long long)r->late,
                (unsigned long long)r->tokens, r->wall_s, r->agg_tps, r->perreq_decode,
                r->perreq_e2e, r->goodput, r->goodput_sched, (unsigned long long)r->reasoning,
                (unsigned long long)r->content, (unsigned long long)r->cache_hits,
                (unsigned long long)r->cached_tokens);
        /* One quoted field; an error class comes from the file (a server's
         * words), so its quotes are doubled like any other. */
        fputc('"', out);
        for (uint32_t e = 0; e < r->n_errs; e++) {
            if (e)
                fputc(';', out);
            for (const char *c = r->errs[e].name; *c; c++) {
                if (*c == '"')
                    fputc('"', out);
                fputc(*c, out);
            }
            fprintf(out, ":%llu", (unsigned long long)r->errs[e].n);
        }
        fputc('"', out);
        for (int m = 0; m < LT_AM_COUNT; m++) {
            const struct lt_hist *h = r->h[m];
            fprintf(out, ",%llu,%.3f", (unsigned long long)lt_hist_count(h), ms(lt_hist_mean(h)));
            for (size_t p = 0; p < sizeof pcts / sizeof pcts[0]; p++)
                fprintf(out, ",%.3f", ms(lt_analyze_pct(h, pcts[p])));
            fprintf(out, ",%.3f", ms((double)lt_hist_max(h)));
        }
        lt_analyze_check_csv(r, out);
        const struct lt_analyze_probe *p = &r->probe;
        if (p->search[0])
            fprintf(out, ",%s,%s,%.6g,%.6f,%.6f,%.6f,%s", p->search, p->engine, p->load, p->attain,
                    p->lo, p->hi, p->verdict);
        else
            fprintf(out, ",,,,,,,");
        fprintf(out, ",%llu,%llu\n", (unsigned long long)r->cancelled,
                (unsigned long long)r->cancelled_tokens);
    }
    if (ferror(out))
        return lt_errset(err, LT_EIO, "analyze: writing CSV failed: %s", strerror(errno));
    return 0;
}

/* ---- JSON -------------------------------------------------------------- */

static void jdist(FILE *out, const struct lt_hist *h)
{
    fprintf(out, "{\"n\": %llu, \"mean\": ", (unsigned long long)lt_hist_count(h));
    lt_analyze_jnum(out, ms(lt_hist_mean(h)));
    static const char *const names[] = {"p50", "p90", "p95", "p99"};
    for (size_t p = 0; p < sizeof pcts / sizeof pcts[0]; p++) {
        fprintf(out, ", \"%s\": ", names[p]);
        lt_analyze_jnum(out, ms(lt_analyze_pct(h, pcts[p])));
    }
    fprintf(out, ", \"max\": ");
    lt_analyze_jnum(out, ms((double)lt_hist_max(h)));
    fputc('}', out);
}

static void jrun(const struct lt_analyze *a, const struct lt_analyze_run *r, FILE *out)
{
#define U(x) ((unsigned long long)(x))
    fprintf(out, "    {\"file\": %u, \"id\": %u, \"mode\": ", r->file, r->id);
    lt_analyze_jstr(out, r->mode);
    fprintf(out, ", \"concurrency\": %u, \"rate\": ", r->concurrency);
    lt_analyze_jnum(out, r->rate);
    fprintf(out, ", \"speed\": ");
    lt_analyze_jnum(out, r->speed);
    fprintf(out, ", \"target\": ");
    lt_analyze_jstr(out, r->target);
    fprintf(out, ", \"model\": ");
    lt_analyze_jstr(out, r->model);
    fprintf(out,
            ",\n     \"results\": %llu, \"warmup\": %llu, \"measured\": %llu, \"sent\": %llu, "
            "\"ok\": %llu, \"late\": %llu, \"cancelled\": %llu, \"cancelled_tokens\": %llu, "
            "\"tokens\": %llu, \"in_tokens\": %llu, \"wall_s\": ",
            U(r->results), U(r->warmup), U(r->measured), U(r->sent), U(r->ok), U(r->late),
            U(r->cancelled), U(r->cancelled_tokens), U(r->tokens), U(r->in_tokens));
    lt_analyze_jnum(out, r->wall_s);
    fprintf(out, ", \"agg_tps\": ");
    lt_analyze_jnum(out, r->agg_tps);
    fprintf(out, ", \"perreq_tps\": {\"decode\": ");
    lt_analyze_jnum(out, r->perreq_decode);
    fprintf(out, ", \"decode_n\": %llu, \"e2e\": ", U(r->n_perreq_decode));
    lt_analyze_jnum(out, r->perreq_e2e);
    fprintf(out, ", \"e2e_n\": %llu},\n     \"latency_ms\": {", U(r->n_perreq_e2e));
    for (int m = 0; m < LT_AM_COUNT; m++) {
        fprintf(out, "%s\n       \"%s\": ", m ? "," : "", lt_analyze_metric_name(m));
        jdist(out, r->h[m]);
    }
    fprintf(out, "},\n     \"goodput\": {\"good\": %llu, \"per_s\": ", U(r->good));
    lt_analyze_jnum(out, r->goodput);
    fprintf(out, ", \"good_sched\": %llu, \"per_s_sched\": ", U(r->good_sched));
    lt_analyze_jnum(out, r->goodput_sched);
    fprintf(out, "},\n     \"errors\": {");
    for (uint32_t e = 0; e < r->n_errs; e++) {
        fprintf(out, "%s", e ? ", " : "");
        lt_analyze_jstr(out, r->errs[e].name);
        fprintf(out, ": %llu", U(r->errs[e].n));
    }
    if (r->errs_other)
        fprintf(out, "%s\"other\": %llu", r->n_errs ? ", " : "", U(r->errs_other));
    fprintf(out, "},\n     \"error_messages\": [");
    uint32_t top[5], n_top = top_messages(r, top, 5);
    for (uint32_t i = 0; i < n_top; i++) {
        const struct lt_analyze_errmsg *m = &r->msgs[top[i]];
        fprintf(out, "%s{\"class\": ", i ? ", " : "");
        lt_analyze_jstr(out, m->name);
        fprintf(out, ", \"status\": %d, \"message\": ", (int)m->status);
        lt_analyze_jstr(out, m->msg);
        fprintf(out, ", \"n\": %llu}", U(m->n));
    }
    fprintf(out, "]");
    fprintf(out, ",\n     \"error_messages_other\": %llu", U(r->msgs_other));
    fprintf(
        out,
        ",\n     \"tokens_split\": {\"reasoning\": %llu, \"content\": %llu, \"with_reasoning\": "
        "%llu, \"tool_call_requests\": %llu, \"reasoning_tps\": ",
        U(r->reasoning), U(r->content), U(r->with_reasoning), U(r->tool_calls));
    lt_analyze_jnum(out, r->reason_tps);
    fprintf(out, ", \"content_tps\": ");
    lt_analyze_jnum(out, r->content_tps);
    fprintf(out, ", \"count\": {\"usage\": %llu, \"chunks\": %llu, \"unknown\": %llu}},\n",
            U(r->count_usage), U(r->count_chunks), U(r->count_unknown));
    fprintf(out,
            "     \"cache\": {\"reported\": %llu, \"hits\": %llu, \"cached_tokens\": %llu, "
            "\"prompt_tokens\": %llu},\n",
            U(r->cache_reported), U(r->cache_hits), U(r->cached_tokens), U(r->cache_in_tokens));
    fprintf(out, "     \"lengths\": {\"in\": {\"n\": %llu, \"mean_dev\": ", U(r->n_want_in));
    lt_analyze_jnum(out, r->n_want_in ? r->sum_in_dev / r->n_want_in : 0);
    fprintf(out, ", \"mean_absdev\": ");
    lt_analyze_jnum(out, r->n_want_in ? r->sum_in_absdev / r->n_want_in : 0);
    fprintf(out, ", \"off\": %llu}, \"out\": {\"n\": %llu, \"mean_dev\": ", U(r->in_off),
            U(r->n_want_out));
    lt_analyze_jnum(out, r->n_want_out ? r->sum_out_dev / r->n_want_out : 0);
    fprintf(out, ", \"mean_absdev\": ");
    lt_analyze_jnum(out, r->n_want_out ? r->sum_out_absdev / r->n_want_out : 0);
    fprintf(out, ", \"off\": %llu}},\n", U(r->out_off));
    fprintf(out, "     \"timeseries\": {\"bucket_s\": ");
    lt_analyze_jnum(out, r->ts.width_us / 1e6);
    const char *cols[] = {"tokens_per_s", "in_flight",  "ok",          "errors",
                          "e2e_p50_ms",   "e2e_p99_ms", "ttft_p50_ms", "ttft_p99_ms"};
    for (int c = 0; c < 8; c++) {
        fprintf(out, ", \"%s\": [", cols[c]);
        for (uint32_t k = 0; k < r->ts.n; k++) {
            struct lt_analyze_ts_point p;
            lt_analyze_ts_point(r, k, &p);
            double v[] = {p.tokens_per_s, p.in_flight,  (double)p.ok,  (double)p.errors,
                          p.e2e_p50_ms,   p.e2e_p99_ms, p.ttft_p50_ms, p.ttft_p99_ms};
            fprintf(out, "%s", k ? ", " : "");
            lt_analyze_jnum(out, v[c]); /* NAN (nothing ended in the bucket): null */
        }
        fputc(']', out);
    }
    fprintf(out, "}");
    lt_analyze_server_json(r, out);
    lt__analyze_fleet_json(r, out);
    lt_analyze_check_json(r, out);
    lt_analyze_media_json(r, out);
    lt_analyze_overload_json(r, out);
    fprintf(out, "}");
    (void)a;
#undef U
}

int lt_analyze_write_json(const struct lt_analyze *a, FILE *out, struct lt_err *err)
{
    const struct lt_analyze_opts *o = &a->opts;
    fprintf(out, "{\n  \"schema\": \"loadtrace-analyze/1\",\n  \"file\": ");
    lt_analyze_jstr(out, a->path);
    fprintf(out, ",\n  \"files\": %u,\n  \"source\": ", a->n_files);
    lt_analyze_jstr(out, a->source);
    /* Flagged runs first, as in the text: their figures are in doubt. */
    char fl[LT_ANALYZE_FLAGS_MAX][LT_ANALYZE_FLAG_LEN];
    int nf = lt_analyze_check_flags(a, fl, LT_ANALYZE_FLAGS_MAX);
    fprintf(out, ",\n  \"flagged\": [");
    for (int i = 0; i < nf; i++) {
        fprintf(out, "%s\n    ", i ? "," : "");
        lt_analyze_jstr(out, fl[i]);
    }
    fprintf(out, "]");
    fprintf(out, ",\n  \"histogram\": {\"bits\": %d, \"relative_error\": ", o->hist_bits);
    lt_analyze_jnum(out, ldexp(1.0, -o->hist_bits));
    fprintf(out, "},\n  \"slo_ms\": {\"ttft\": ");
    lt_analyze_jnum(out, o->slo_ttft_us ? ms((double)o->slo_ttft_us) : NAN);
    fprintf(out, ", \"tpot\": ");
    lt_analyze_jnum(out, o->slo_tpot_us ? ms((double)o->slo_tpot_us) : NAN);
    fprintf(out, ", \"e2e\": ");
    lt_analyze_jnum(out, o->slo_e2e_us ? ms((double)o->slo_e2e_us) : NAN);
    fprintf(out, "},\n  \"warmup_excluded\": %s,\n  \"runs\": [\n",
            o->include_warmup ? "false" : "true");
    for (uint32_t i = 0; i < a->n_runs; i++) {
        jrun(a, a->runs[i], out);
        fprintf(out, "%s\n", i + 1 < a->n_runs ? "," : "");
    }
    fprintf(out, "  ],\n  \"sweep\": ");
    if (!a->sweep_axis) {
        fprintf(out, "null");
    } else {
        fprintf(out, "{\"axis\": \"%s\", \"knee_fraction\": ", a->sweep_axis);
        lt_analyze_jnum(out, a->knee_fraction);
        fprintf(out, ", \"knee\": ");
        if (a->knee >= 0)
            lt_analyze_jnum(out, a->points[a->knee].x);
        else
            fprintf(out, "null");
        fprintf(out, ", \"points\": [");
        for (uint32_t i = 0; i < a->n_points; i++) {
            const struct lt_analyze_run *r = a->runs[a->points[i].run];
            fprintf(out, "%s\n    {\"run\": %u, \"x\": ", i ? "," : "", a->points[i].run);
            lt_analyze_jnum(out, a->points[i].x);
            fprintf(out, ", \"agg_tps\": ");
            lt_analyze_jnum(out, r->agg_tps);
            fprintf(out, ", \"perreq_decode_tps\": ");
            lt_analyze_jnum(out, r->perreq_decode);
            fprintf(out, ", \"perreq_e2e_tps\": ");
            lt_analyze_jnum(out, r->perreq_e2e);
            static const enum lt_analyze_metric ms_[] = {LT_AM_TTFT, LT_AM_TPOT, LT_AM_E2E};
            for (int m = 0; m < 3; m++) {
                fprintf(out, ", \"%s_p50_ms\": ", lt_analyze_metric_name(ms_[m]));
                lt_analyze_jnum(out, ms(lt_analyze_pct(r->h[ms_[m]], 50)));
                fprintf(out, ", \"%s_p99_ms\": ", lt_analyze_metric_name(ms_[m]));
                lt_analyze_jnum(out, ms(lt_analyze_pct(r->h[ms_[m]], 99)));
            }
            fputc('}', out);
        }
        fprintf(out, "]}");
    }
    fprintf(out, ",\n  \"capacity\": ");
    lt_analyze_capacity_json(a, out);
    char w[WARN_MAX][WARN_LEN];
    int nw = collect_warnings(a, w, WARN_MAX);
    fprintf(out, ",\n  \"warnings\": [");
    for (int i = 0; i < nw; i++) {
        fprintf(out, "%s\n    ", i ? "," : "");
        lt_analyze_jstr(out, w[i]);
    }
    fprintf(out, "]\n}\n");
    if (ferror(out))
        return lt_errset(err, LT_EIO, "analyze: writing JSON failed: %s", strerror(errno));
    return 0;
}

int lt_analyze_write(const struct lt_analyze *a, FILE *out, struct lt_err *err)
{
    switch (a->opts.format) {
    case LT_ANALYZE_CSV:
        return lt_analyze_write_csv(a, out, err);
    case LT_ANALYZE_JSON:
        return lt_analyze_write_json(a, out, err);
    default:
        return lt_analyze_write_text(a, out, err);
    }
}

int lt_analyze_print_summary(const char *results_path, const struct lt_analyze_opts *opts,
                             FILE *out, struct lt_err *err)
{
    struct lt_analyze a;
    int rc = lt_analyze_file(results_path, opts, &a, err);
    if (rc == 0)
        rc = lt_analyze_write(&a, out, err);
    lt_analyze_release(&a);
    return rc;
}

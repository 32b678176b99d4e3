/*
 * The server's side of a run (analyze_server.h): scrape samples folded
 * into per-run figures as they stream by, with bounded memory (the gauges
 * of the first LT_ANALYZE_SRV_POINTS_MAX samples, for medians and the
 * series; first and last values of counters and histograms, whose
 * differences are what happened during the run).
 */
#include "analyze/analyze_server.h"
#include "analyze/analyze.h"
#include "analyze/analyze_json.h"
#include "metrics/prom_map.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const enum lt_prom_canon counter_canon[LT_SRV_COUNTERS] = {
    [LT_SRV_PREEMPT] = LT_PM_PREEMPTIONS, [LT_SRV_PROMPT] = LT_PM_PROMPT_TOKENS,
    [LT_SRV_GEN] = LT_PM_GEN_TOKENS,      [LT_SRV_PQUERIES] = LT_PM_PREFIX_QUERIES,
    [LT_SRV_PHITS] = LT_PM_PREFIX_HITS,   [LT_SRV_ENERGY] = LT_PM_GPU_ENERGY,
};
static const enum lt_prom_canon hist_canon[LT_SRV_HISTS] = {
    [LT_SRV_TTFT] = LT_PM_TTFT,
    [LT_SRV_E2E] = LT_PM_E2E,
};

static bool is(const char *name, enum lt_prom_canon c)
{
    return strcmp(name, lt_prom_map_canon_name(c)) == 0;
}

static void copy_hist(struct lt_analyze_srv_hist *d, const struct lt_scrape_hist *h)
{
    d->have = true;
    d->n = h->n < LT_ANALYZE_SRV_BUCKETS ? h->n : LT_ANALYZE_SRV_BUCKETS;
    memcpy(d->le, h->le, d->n * sizeof *d->le);
    memcpy(d->cum, h->cum, d->n * sizeof *d->cum);
    d->sum = h->sum;
    d->count = h->count;
}

int lt_analyze_server_add(struct lt_analyze_server *s, const struct lt_scrape *sc,
                          struct lt_err *err)
{
    s->samples++;
    if (!s->ep[0] && sc->ep)
        snprintf(s->ep, sizeof s->ep, "%s", sc->ep);
    if (sc->err) {
        s->errors++;
        snprintf(s->last_err, sizeof s->last_err, "%s", sc->err);
        return 0;
    }
    if (sc->server && !s->server[0])
        snprintf(s->server, sizeof s->server, "%s", sc->server);
    struct lt_analyze_srv_point p = {(double)sc->t / 1e6, NAN, NAN, NAN, NAN, NAN};
    bool any = false;
    for (uint32_t i = 0; i < sc->nv; i++) {
        const char *nm = sc->v[i].name;
        double v = sc->v[i].v;
        if (is(nm, LT_PM_RUNNING))
            p.running = v, any = true;
        else if (is(nm, LT_PM_WAITING))
            p.waiting = v, any = true;
        else if (is(nm, LT_PM_KV_USAGE))
            p.kv = v, any = true;
        else if (is(nm, LT_PM_GPU_UTIL))
            p.gpu_util = v, any = true;
        else if (is(nm, LT_PM_GPU_POWER))
            p.power_w = v, any = true;
        for (int c = 0; c < LT_SRV_COUNTERS; c++) {
            if (!is(nm, counter_canon[c]))
                continue;
            if (!s->have_c[c])
                s->first_c[c] = v;
            s->have_c[c] = true;
            s->last_c[c] = v;
            any = true;
        }
    }
    for (uint32_t i = 0; i < sc->nh; i++)
        for (int k = 0; k < LT_SRV_HISTS; k++)
            if (is(sc->h[i].name, hist_canon[k])) {
                if (!s->first_h[k].have)
                    copy_hist(&s->first_h[k], &sc->h[i]);
                copy_hist(&s->last_h[k], &sc->h[i]);
                any = true;
            }
    if (!any)
        return 0;
    if (!s->have_t)
        s->first_t = sc->t;
    s->have_t = true;
    s->last_t = sc->t;
    if (!isnan(p.kv)) {
        if (s->have_prev_kv && s->prev_kv > LT_ANALYZE_SRV_KV_HIGH)
            s->kv_high_s += (double)(sc->t - s->prev_kv_t) / 1e6;
        s->have_prev_kv = true;
        s->prev_kv = p.kv;
        s->prev_kv_t = sc->t;
    }
    if (s->n == LT_ANALYZE_SRV_POINTS_MAX)
        return 0;
    if (s->n == s->cap) {
        uint32_t nc = s->cap ? s->cap * 2 : 256;
        struct lt_analyze_srv_point *q = realloc(s->pts, nc * sizeof *q);
        if (!q)
            return lt_errset(err, LT_ENOMEM, "analyze: out of memory");
        s->pts = q;
        s->cap = nc;
    }
    s->pts[s->n++] = p;
    return 0;
}

struct lt_analyze_server *lt_analyze_server_new(void)
{
    return calloc(1, sizeof(struct lt_analyze_server));
}

void lt_analyze_server_free(struct lt_analyze_server *s)
{
    if (!s)
        return;
    free(s->pts);
    free(s);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Mean, median and max of one gauge over the points that have it. */
static void gauge(const struct lt_analyze_server *s, size_t off, double *mean, double *p50,
                  double *max)
{
    *mean = *p50 = *max = NAN;
    double *v = malloc((s->n ? s->n : 1) * sizeof *v);
    if (!v)
        return;
    uint32_t n = 0;
    double sum = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        double x = *(const double *)(const void *)((const char *)&s->pts[i] + off);
        if (isnan(x))
            continue;
        v[n++] = x;
        sum += x;
    }
    if (n) {
        qsort(v, n, sizeof *v, cmp_double);
        *mean = sum / n;
        *p50 = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
        *max = v[n - 1];
    }
    free(v);
}

double lt_analyze_srv_quantile(const struct lt_analyze_srv_hist *before,
                               const struct lt_analyze_srv_hist *after, double q)
{
    if (!after->have || after->n == 0)
        return NAN;
    bool same = before->have && before->n == after->n &&
                memcmp(before->le, after->le, after->n * sizeof *after->le) == 0;
    double total = after->count - (same ? before->count : 0);
    if (total <= 0)
        return NAN;
    double rank = q * total, prev_cum = 0, prev_le = 0;
    for (uint32_t i = 0; i < after->n; i++) {
        double cum = after->cum[i] - (same ? before->cum[i] : 0);
        if (cum >= rank) {
            double in = cum - prev_cum;
            double f = in > 0 ? (rank - prev_cum) / in : 1;
            return prev_le + (after->le[i] - prev_le) * f;
        }
        prev_cum = cum;
        prev_le = after->le[i];
    }
    return after->le[after->n - 1]; /* in the +Inf bucket: its lower bound */
}

void lt_analyze_server_stats(const struct lt_analyze_server *s, struct lt_analyze_srv_stats *st)
{
    double unused;
    gauge(s, offsetof(struct lt_analyze_srv_point, running), &st->running_mean, &st->running_p50,
          &st->running_max);
    gauge(s, offsetof(struct lt_analyze_srv_point, waiting), &st->waiting_mean, &st->waiting_p50,
          &st->waiting_max);
    gauge(s, offsetof(struct lt_analyze_srv_point, kv), &st->kv_mean, &unused, &st->kv_max);
    gauge(s, offsetof(struct lt_analyze_srv_point, gpu_util), &st->gpu_util_mean, &unused, &unused);
    gauge(s, offsetof(struct lt_analyze_srv_point, power_w), &st->power_mean_w, &unused, &unused);
    st->span_s = (double)(s->last_t - s->first_t) / 1e6;
    st->kv_high_s = isnan(st->kv_max) ? NAN : s->kv_high_s;
    st->kv_high_frac = st->span_s > 0 ? st->kv_high_s / st->span_s : NAN;
#define DELTA(c) (s->have_c[c] ? s->last_c[c] - s->first_c[c] : NAN)
    st->preemptions = DELTA(LT_SRV_PREEMPT);
    st->prompt_tokens = DELTA(LT_SRV_PROMPT);
    st->gen_tokens = DELTA(LT_SRV_GEN);
    double q = DELTA(LT_SRV_PQUERIES), h = DELTA(LT_SRV_PHITS);
    st->hit_rate = q > 0 ? h / q : NAN;
    st->energy_j = DELTA(LT_SRV_ENERGY);
#undef DELTA
    if (isnan(st->energy_j) && !isnan(st->power_mean_w) && st->span_s > 0)
        st->energy_j = st->power_mean_w * st->span_s; /* power sampled, energy not */
    st->j_per_token = st->gen_tokens > 0 ? st->energy_j / st->gen_tokens : NAN;
    st->ttft_p50_ms = 1e3 * lt_analyze_srv_quantile(&s->first_h[0], &s->last_h[0], 0.50);
    st->ttft_p99_ms = 1e3 * lt_analyze_srv_quantile(&s->first_h[0], &s->last_h[0], 0.99);
    st->e2e_p50_ms = 1e3 * lt_analyze_srv_quantile(&s->first_h[1], &s->last_h[1], 0.50);
    st->e2e_p99_ms = 1e3 * lt_analyze_srv_quantile(&s->first_h[1], &s->last_h[1], 0.99);
}

/* ---- the report's server section ------------------------------------- */

#define F(x) (isnan(x) ? 0.0 : (x))

static void text_gauge(FILE *out, const char *name, double mean, double p50, double max)
{
    if (isnan(mean))
        return;
    fprintf(out, "    %-10s mean %.2f  p50 %.2f  max %.2f\n", name, mean, p50, max);
}

void lt_analyze_server_text(const struct lt_analyze_run *r, FILE *out)
{
    const struct lt_analyze_server *s = r->srv;
    if (!s)
        return;
    struct lt_analyze_srv_stats st;
    lt_analyze_server_stats(s, &st);
    fprintf(out, "  server metrics (%s, %s): %llu scrapes, %llu failed%s%s\n",
            s->server[0] ? s->server : "unknown server", s->ep, (unsigned long long)s->samples,
            (unsigned long long)s->errors, s->errors ? "; last: " : "",
            s->errors ? s->last_err : "");
    text_gauge(out, "running", st.running_mean, st.running_p50, st.running_max);
    text_gauge(out, "waiting", st.waiting_mean, st.waiting_p50, st.waiting_max);
    if (!isnan(st.kv_mean))
        fprintf(
            out,
            "    KV cache   mean %.1f %%  max %.1f %%  above 90 %%: %.1f s (%.1f %% of %.1f s)\n",
            100 * st.kv_mean, 100 * st.kv_max, st.kv_high_s, 100 * F(st.kv_high_frac), st.span_s);
    if (!isnan(st.preemptions))
        fprintf(out, "    preemptions %.0f\n", st.preemptions);
    if (!isnan(st.hit_rate) || !isnan(r->trace_hit)) {
        fprintf(out, "    prefix-cache hit rate: server ");
        fprintf(out, isnan(st.hit_rate) ? "-" : "%.1f %%", 100 * st.hit_rate);
        fprintf(out, ", the trace predicts ");
        fprintf(out, isnan(r->trace_hit) ? "-" : "%.1f %%", 100 * r->trace_hit);
        if (!isnan(r->trace_hit) && r->trace_hit_share < 1)
            fprintf(out, " (estimated from 1 in %.0f of its prefix chains)",
                    1 / r->trace_hit_share);
        fprintf(out, "\n");
    }
    double cttft50 = lt_analyze_pct(r->h[LT_AM_TTFT], 50) / 1e3;
    double cttft99 = lt_analyze_pct(r->h[LT_AM_TTFT], 99) / 1e3;
    double ce2e50 = lt_analyze_pct(r->h[LT_AM_E2E], 50) / 1e3;
    double ce2e99 = lt_analyze_pct(r->h[LT_AM_E2E], 99) / 1e3;
    if (!isnan(st.ttft_p50_ms))
        fprintf(out, "    TTFT ms    server p50 %.1f p99 %.1f   client p50 %.1f p99 %.1f\n",
                st.ttft_p50_ms, st.ttft_p99_ms, cttft50, cttft99);
    if (!isnan(st.e2e_p50_ms))
        fprintf(out, "    E2E ms     server p50 %.1f p99 %.1f   client p50 %.1f p99 %.1f\n",
                st.e2e_p50_ms, st.e2e_p99_ms, ce2e50, ce2e99);
    if (!isnan(st.gen_tokens))
        fprintf(out,
                "    tokens     server generated %.0f, loadtrace counted %llu (prompt: server "
                "%.0f)\n",
                st.gen_tokens, (unsigned long long)r->out_all, F(st.prompt_tokens));
    if (!isnan(st.gpu_util_mean))
        fprintf(out, "    GPU        utilisation mean %.1f %%\n", 100 * st.gpu_util_mean);
    if (!isnan(st.j_per_token))
        fprintf(out, "    energy     %.1f J, %.3f J per output token\n", st.energy_j,
                st.j_per_token);
}

/* Warnings: the token counts disagree; the cache was warm. */
int lt_analyze_server_warnings(const struct lt_analyze_run *r, char (*w)[LT_ANALYZE_WARN_LEN],
                               int max)
{
    const struct lt_analyze_server *s = r->srv;
    int n = 0;
    if (!s || max <= 0)
        return 0;
    struct lt_analyze_srv_stats st;
    lt_analyze_server_stats(s, &st);
    double ours = (double)r->out_all;
    if (!isnan(st.gen_tokens) && fabs(st.gen_tokens - ours) > 0.01 * fmax(ours, st.gen_tokens))
        snprintf(w[n++], LT_ANALYZE_WARN_LEN,
                 "run %u: the server generated %.0f tokens during the run (its counter) but "
                 "loadtrace counted %.0f output tokens: %.1f %% apart (other clients, or "
                 "tokens counted differently)",
                 r->id, st.gen_tokens, ours,
                 100 * fabs(st.gen_tokens - ours) / fmax(1, fmax(ours, st.gen_tokens)));
    if (n < max && !isnan(st.hit_rate) && !isnan(r->trace_hit) && st.hit_rate > r->trace_hit + 0.10)
        snprintf(w[n++], LT_ANALYZE_WARN_LEN,
                 "run %u: the server's prefix-cache hit rate (%.1f %%) is far above what the "
                 "trace allows (%.1f %%): the cache was warmed by an earlier run "
                 "(--reset-prefix-cache)",
                 r->id, 100 * st.hit_rate, 100 * r->trace_hit);
    if (n < max && s->samples && s->errors == s->samples)
        snprintf(w[n++], LT_ANALYZE_WARN_LEN, "run %u: every scrape of %.100s failed (%.150s)",
                 r->id, s->ep, s->last_err);
    return n;
}

static void jnum(FILE *out, const char *k, double v, bool comma)
{
    fprintf(out, "%s\"%s\": ", comma ? ", " : "", k);
    lt_analyze_jnum(out, v);
}

void lt_analyze_server_json(const struct lt_analyze_run *r, FILE *out)
{
    const struct lt_analyze_server *s = r->srv;
    fprintf(out, ",\n     \"server\": ");
    if (!s) {
        fprintf(out, "null");
        return;
    }
    struct lt_analyze_srv_stats st;
    lt_analyze_server_stats(s, &st);
    fprintf(out, "{\"name\": ");
    lt_analyze_jstr(out, s->server);
    fprintf(out, ", \"endpoint\": ");
    lt_analyze_jstr(out, s->ep);
    fprintf(out, ", \"scrapes\": %llu, \"failed\": %llu", (unsigned long long)s->samples,
            (unsigned long long)s->errors);
    jnum(out, "running_mean", st.running_mean, true);
    jnum(out, "running_p50", st.running_p50, true);
    jnum(out, "running_max", st.running_max, true);
    jnum(out, "waiting_mean", st.waiting_mean, true);
    jnum(out, "waiting_p50", st.waiting_p50, true);
    jnum(out, "waiting_max", st.waiting_max, true);
    jnum(out, "kv_usage_mean", st.kv_mean, true);
    jnum(out, "kv_usage_max", st.kv_max, true);
    jnum(out, "kv_above_90_s", st.kv_high_s, true);
    jnum(out, "preemptions", st.preemptions, true);
    jnum(out, "prompt_tokens", st.prompt_tokens, true);
    jnum(out, "generation_tokens", st.gen_tokens, true);
    fprintf(out, ", \"client_output_tokens\": %llu", (unsigned long long)r->out_all);
    jnum(out, "prefix_hit_rate", st.hit_rate, true);
    jnum(out, "trace_prefix_hit_rate", r->trace_hit, true);
    jnum(out, "trace_prefix_hit_sampled", r->trace_hit_share, true);
    jnum(out, "ttft_p50_ms", st.ttft_p50_ms, true);
    jnum(out, "ttft_p99_ms", st.ttft_p99_ms, true);
    jnum(out, "e2e_p50_ms", st.e2e_p50_ms, true);
    jnum(out, "e2e_p99_ms", st.e2e_p99_ms, true);
    jnum(out, "gpu_util_mean", st.gpu_util_mean, true);
    jnum(out, "energy_j", st.energy_j, true);
    jnum(out, "j_per_output_token", st.j_per_token, true);
    jnum(out, "span_s", st.span_s, true);
    /* every series: the gauges of each sample */
    static const char *const cols[] = {"t_s",      "running",  "waiting",
                                       "kv_usage", "gpu_util", "power_w"};
    fprintf(out, ", \"series\": {");
    for (int c = 0; c < 6; c++) {
        fprintf(out, "%s\"%s\": [", c ? ", " : "", cols[c]);
        for (uint32_t i = 0; i < s->n; i++) {
            const struct lt_analyze_srv_point *p = &s->pts[i];
            double v[] = {p->t_s, p->running, p->waiting, p->kv, p->gpu_util, p->power_w};
            fprintf(out, "%s", i ? ", " : "");
            lt_analyze_jnum(out, v[c]);
        }
        fputc(']', out);
    }
    fprintf(out, "}}");
}

/* v in the fewest digits that read back the same. */
static void shortest(FILE *out, double v)
{
    char b[40];
    snprintf(b, sizeof b, "%.15g", v);
    if (strtod(b, NULL) != v)
        snprintf(b, sizeof b, "%.17g", v);
    fputs(b, out);
}

/* CSV of every series: file,run,t_s,running,waiting,kv_usage,gpu_util,power_w. */
void lt_analyze_server_csv(const struct lt_analyze *a, FILE *out)
{
    fprintf(out, "file,run,t_s,running,waiting,kv_usage,gpu_util,power_w\n");
    for (uint32_t k = 0; k < a->n_runs; k++) {
        const struct lt_analyze_run *r = a->runs[k];
        if (!r->srv)
            continue;
        for (uint32_t i = 0; i < r->srv->n; i++) {
            const struct lt_analyze_srv_point *p = &r->srv->pts[i];
            fprintf(out, "%u,%u,%.6f", r->file, r->id, p->t_s);
            double v[] = {p->running, p->waiting, p->kv, p->gpu_util, p->power_w};
            for (int c = 0; c < 5; c++) {
                fputc(',', out);
                if (!isnan(v[c]))
                    shortest(out, v[c]);
            }
            fprintf(out, "\n");
        }
    }
}

/* Overload, from the server's own queue: its waiting requests growing
 * over the run's quarters (each quarter's mean above the one before, the
 * last more than twice the first and 4 more: a burst the server absorbs
 * drains instead), or the time a request waits in it (Little's law: the
 * mean queue over the rate requests leave it) being most of the TTFT.
 * Either says the load is beyond what the server serves: the latencies
 * are of a queue, not of the server. Trace time and open loop only. */
bool lt_analyze_overload_eval(const struct lt_analyze_run *r, struct lt_analyze_overload *o)
{
    *o = (struct lt_analyze_overload){
        .waiting_mean = NAN, .rate = NAN, .wait_s = NAN, .ttft_mean_s = NAN};
    const struct lt_analyze_server *s = r->srv;
    /* a closed loop holds its load at its level: whatever queues there is
     * bounded by it, and the level, not the arrivals, is what was asked */
    if (!s || s->n < 8 || r->concurrency > 0)
        return false;
    o->judged = true;
    /* while requests arrived: after the last send the queue drains, which
     * says nothing of whether the arrivals outran the server */
    double *q = o->quarters, t0 = (double)r->first_sent / 1e6, t1 = (double)r->last_sent / 1e6;
    uint32_t c[4] = {0, 0, 0, 0};
    for (uint32_t i = 0; t1 > t0 && i < s->n; i++) {
        double v = s->pts[i].waiting, t = s->pts[i].t_s;
        if (isnan(v) || t < t0 || t > t1)
            continue;
        uint32_t k = (uint32_t)((t - t0) / (t1 - t0) * 4);
        k = k > 3 ? 3 : k;
        q[k] += v;
        c[k]++;
    }
    bool quarters = true;
    for (int k = 0; k < 4; k++) {
        quarters = quarters && c[k] >= 2;
        q[k] = c[k] ? q[k] / c[k] : NAN;
    }
    o->grew = quarters && q[0] < q[1] && q[1] < q[2] && q[2] < q[3] && q[3] > 2 * q[0] + 4;
    struct lt_analyze_srv_stats st;
    lt_analyze_server_stats(s, &st);
    double span = st.span_s;
    o->ttft_mean_s = lt_hist_count(r->h[LT_AM_TTFT]) ? lt_hist_mean(r->h[LT_AM_TTFT]) / 1e6 : NAN;
    o->rate = span > 0 ? (double)r->sent / span : NAN;
    o->waiting_mean = st.waiting_mean;
    o->wait_s = o->rate > 0 && !isnan(st.waiting_mean) ? st.waiting_mean / o->rate : NAN;
    o->waiting = !isnan(o->wait_s) && !isnan(o->ttft_mean_s) && o->wait_s > 0.1 &&
                 o->wait_s > 0.5 * o->ttft_mean_s;
    return o->grew || o->waiting;
}

void lt_analyze_overload_json(const struct lt_analyze_run *r, FILE *out)
{
    struct lt_analyze_overload o;
    bool on = lt_analyze_overload_eval(r, &o);
    fprintf(out, ",\n     \"overload\": ");
    if (!o.judged) {
        fprintf(out, "null");
        return;
    }
    char why[512];
    fprintf(out, "{\"overloaded\": %s, \"queue_grew\": %s, \"ttft_mostly_waiting\": %s, ",
            on ? "true" : "false", o.grew ? "true" : "false", o.waiting ? "true" : "false");
    fprintf(out, "\"waiting_quarters\": [");
    for (int k = 0; k < 4; k++) {
        fprintf(out, "%s", k ? ", " : "");
        lt_analyze_jnum(out, o.quarters[k]);
    }
    fprintf(out, "], \"waiting_mean\": ");
    lt_analyze_jnum(out, o.waiting_mean);
    fprintf(out, ", \"rate_per_s\": ");
    lt_analyze_jnum(out, o.rate);
    fprintf(out, ", \"wait_s\": ");
    lt_analyze_jnum(out, o.wait_s);
    fprintf(out, ", \"ttft_mean_s\": ");
    lt_analyze_jnum(out, o.ttft_mean_s);
    fprintf(out, ", \"why\": ");
    if (on && lt_analyze_overload(r, why, sizeof why))
        lt_analyze_jstr(out, why);
    else
        fprintf(out, "null");
    fputc('}', out);
}

bool lt_analyze_overload(const struct lt_analyze_run *r, char *buf, size_t n)
{
    struct lt_analyze_overload o;
    if (!n || !lt_analyze_overload_eval(r, &o))
        return false;
    bool grew = o.grew, waiting = o.waiting;
    const double *q = o.quarters;
    double wait = o.wait_s, ttft = o.ttft_mean_s, rate = o.rate;
    double waiting_mean = o.waiting_mean;
    size_t u = 0;
    int w = 0;
    if (grew)
        w = snprintf(buf, n,
                     "the server's waiting queue grew without bound (%.3g, %.3g, %.3g, %.3g: means "
                     "of the run's quarters)",
                     q[0], q[1], q[2], q[3]);
    u = w > 0 && (size_t)w < n ? (size_t)w : u;
    if (waiting)
        w = snprintf(buf + u, n - u,
                     "%sTTFT is mostly waiting: the queue (mean %.4g requests at %.3g req/s) holds "
                     "a request about %.3g s of its TTFT mean %.3g s",
                     grew ? ", and " : "", waiting_mean, rate, wait, ttft);
    u = w > 0 && u + (size_t)w < n ? u + (size_t)w : u;
    snprintf(buf + u, n - u,
             "; the load is beyond what this server serves, and the latencies are the queue's "
             "(a lower --speed or --rate, or replay --find-max, finds what it serves)");
    return true;
}

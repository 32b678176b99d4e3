/*
 * The live figures of replay_live.h. Two copies of one set of figures:
 * `eng`, written by the engine as results come (no lock), and `pub`,
 * what readers see, refreshed from eng on the engine's tick under `mu`.
 * A histogram is copied only when it changed since the last tick.
 *
 * The window is a ring of one-second slots keyed by the monotonic second
 * a result was recorded in; a reader merges the slots of the last
 * LT_LIVE_WINDOW_S seconds into its scratch histograms.
 */
#include "replay/replay_live.h"

#include "base/lt_hist.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HIST_HIGHEST (UINT64_C(1) << 36) /* analyze's shape (analyze_stats.c) */
#define HIST_BITS 10
#define T_LIM (INT64_C(1) << 62)
#define NBUCKETS 14

static const char *const class_names[LT_LIVE_CLASSES] = {
    LT_REPLAY_ERR_CONNECT,   LT_REPLAY_ERR_TLS,      LT_REPLAY_ERR_TIMEOUT,
    LT_REPLAY_ERR_TTFT,      LT_REPLAY_ERR_HTTP,     LT_REPLAY_ERR_RATELIMIT,
    LT_REPLAY_ERR_MALFORMED, LT_REPLAY_ERR_STREAM,   LT_REPLAY_ERR_INCOMPLETE,
    LT_REPLAY_ERR_SHORT,     LT_REPLAY_ERR_ABORTED,  LT_REPLAY_ERR_BAD_USAGE,
    LT_REPLAY_ERR_TOO_LARGE, LT_REPLAY_ERR_TRANSFER, "other",
};

/* Prometheus buckets (upper bounds, us) of each metric: first-token and
 * end-to-end times span milliseconds to minutes, token gaps less. */
static const uint64_t le_long[NBUCKETS] = {5000,     10000,    25000,    50000,    100000,
                                           250000,   500000,   1000000,  2500000,  5000000,
                                           10000000, 25000000, 60000000, 120000000};
static const uint64_t le_short[NBUCKETS] = {1000,  2500,  5000,  10000,  15000,  20000,  30000,
                                            40000, 60000, 80000, 100000, 250000, 500000, 1000000};
static const char *const metric_names[LT_LIVE_METRICS] = {"ttft", "tpot", "itl", "e2e"};

static const uint64_t *le_of(int m)
{
    return m == LT_LIVE_TPOT || m == LT_LIVE_ITL ? le_short : le_long;
}

/* Counts of a run, copied whole on each tick. */
struct counts {
    uint64_t results, sent, ok, errors, cancelled, unsent, warmup, out, in;
    uint64_t by_class[LT_LIVE_CLASSES];
};

/* The process's counters for Prometheus: never reset. */
struct totals {
    uint64_t ok, errors, cancelled, unsent, out, in;
    uint64_t by_class[LT_LIVE_CLASSES];
    uint64_t bucket[LT_LIVE_METRICS][NBUCKETS]; /* values <= le (not cumulative here) */
    uint64_t count[LT_LIVE_METRICS];
    double sum_s[LT_LIVE_METRICS];
    uint64_t runs;
};

struct slot {
    int64_t sec; /* monotonic second; INT64_MIN: empty */
    uint64_t results, tokens;
    struct lt_hist *h[LT_LIVE_METRICS];
    bool dirty;
};

struct figs {
    struct counts c;
    struct totals t;
    struct lt_hist *run[LT_LIVE_METRICS];
    bool run_dirty;
    struct slot ring[LT_LIVE_WINDOW_S];
    lt_mono run_start;
};

struct lt_replay_live {
    struct figs eng; /* the engine's */
    pthread_mutex_t mu;
    /* under mu: */
    struct figs pub;
    bool started;
    struct lt_replay_progress p;
    lt_mono p_at;
    double running[LT_LIVE_SERVER_HIST], waiting[LT_LIVE_SERVER_HIST], kv[LT_LIVE_SERVER_HIST];
    uint32_t n_server, server_next;
    char phase_kind[16], phase[160];
    uint32_t phase_index;
    double phase_load;
    struct lt_hist *scratch[LT_LIVE_METRICS]; /* a reader's window */
};

const char *lt_live_class_name(int k)
{
    return k >= 0 && k < LT_LIVE_CLASSES ? class_names[k] : "other";
}

static int class_of(const char *err)
{
    for (int k = 0; k < LT_LIVE_CLASSES - 1; k++)
        if (!strcmp(err, class_names[k]))
            return k;
    return LT_LIVE_CLASSES - 1;
}

static void figs_free(struct figs *f)
{
    for (int m = 0; m < LT_LIVE_METRICS; m++) {
        lt_hist_free(f->run[m]);
        for (int s = 0; s < LT_LIVE_WINDOW_S; s++)
            lt_hist_free(f->ring[s].h[m]);
    }
}

static int figs_init(struct figs *f, struct lt_err *err)
{
    memset(f, 0, sizeof *f);
    for (int m = 0; m < LT_LIVE_METRICS; m++) {
        if (!(f->run[m] = lt_hist_new(HIST_HIGHEST, HIST_BITS, err)))
            return LT_ENOMEM;
        for (int s = 0; s < LT_LIVE_WINDOW_S; s++)
            if (!(f->ring[s].h[m] = lt_hist_new(HIST_HIGHEST, HIST_BITS, err)))
                return LT_ENOMEM;
    }
    for (int s = 0; s < LT_LIVE_WINDOW_S; s++)
        f->ring[s].sec = INT64_MIN;
    return 0;
}

struct lt_replay_live *lt_replay_live_new(struct lt_err *err)
{
    struct lt_replay_live *l = calloc(1, sizeof *l);
    if (!l) {
        lt_errset(err, LT_ENOMEM, "out of memory for the live figures");
        return NULL;
    }
    pthread_mutex_init(&l->mu, NULL);
    bool ok = figs_init(&l->eng, err) == 0 && figs_init(&l->pub, err) == 0;
    for (int m = 0; ok && m < LT_LIVE_METRICS; m++)
        ok = (l->scratch[m] = lt_hist_new(HIST_HIGHEST, HIST_BITS, err)) != NULL;
    if (!ok) {
        lt_replay_live_free(l);
        return NULL;
    }
    return l;
}

void lt_replay_live_free(struct lt_replay_live *l)
{
    if (!l)
        return;
    figs_free(&l->eng);
    figs_free(&l->pub);
    for (int m = 0; m < LT_LIVE_METRICS; m++)
        lt_hist_free(l->scratch[m]);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

/* ---- the engine's side ---- */

static void copy_hist(struct lt_hist *dst, const struct lt_hist *src)
{
    lt_hist_reset(dst);
    lt_hist_merge(dst, src, NULL); /* same shape: cannot fail */
}

/* eng -> pub, what changed; under mu. */
static void publish(struct lt_replay_live *l)
{
    struct figs *e = &l->eng, *p = &l->pub;
    p->c = e->c;
    p->t = e->t;
    p->run_start = e->run_start;
    if (e->run_dirty) {
        for (int m = 0; m < LT_LIVE_METRICS; m++)
            copy_hist(p->run[m], e->run[m]);
        e->run_dirty = false;
    }
    for (int s = 0; s < LT_LIVE_WINDOW_S; s++) {
        struct slot *es = &e->ring[s], *ps = &p->ring[s];
        if (!es->dirty)
            continue;
        ps->sec = es->sec;
        ps->results = es->results;
        ps->tokens = es->tokens;
        for (int m = 0; m < LT_LIVE_METRICS; m++)
            copy_hist(ps->h[m], es->h[m]);
        es->dirty = false;
    }
}

void lt_replay_live_run_begin(struct lt_replay_live *l, const struct lt_replay_progress *p)
{
    struct figs *e = &l->eng;
    memset(&e->c, 0, sizeof e->c);
    for (int m = 0; m < LT_LIVE_METRICS; m++)
        lt_hist_reset(e->run[m]);
    e->run_dirty = true;
    for (int s = 0; s < LT_LIVE_WINDOW_S; s++) {
        struct slot *sl = &e->ring[s];
        sl->sec = INT64_MIN;
        sl->results = sl->tokens = 0;
        for (int m = 0; m < LT_LIVE_METRICS; m++)
            lt_hist_reset(sl->h[m]);
        sl->dirty = true;
    }
    e->run_start = lt_mono_now();
    e->t.runs++;
    pthread_mutex_lock(&l->mu);
    publish(l);
    l->started = true;
    l->p = *p;
    l->p_at = lt_mono_now();
    l->n_server = l->server_next = 0;
    pthread_mutex_unlock(&l->mu);
}

static struct slot *slot_now(struct figs *e, lt_mono now)
{
    int64_t sec = now.ns / 1000000000LL;
    struct slot *sl = &e->ring[sec % LT_LIVE_WINDOW_S];
    if (sl->sec != sec) {
        sl->sec = sec;
        sl->results = sl->tokens = 0;
        for (int m = 0; m < LT_LIVE_METRICS; m++)
            lt_hist_reset(sl->h[m]);
    }
    sl->dirty = true;
    return sl;
}

static int64_t clamp_t(int64_t t)
{
    return t < -T_LIM ? -T_LIM : t >= T_LIM ? T_LIM - 1 : t;
}

/* analyze's rounding of a TPOT to whole microseconds (half up). */
static int64_t round_us(double x)
{
    if (x >= 0 && x < 4611686018427387904.0) {
        int64_t k = (int64_t)x;
        return x - (double)k >= 0.5 ? k + 1 : k;
    }
    return llround(x);
}

static void rec(struct figs *e, struct slot *sl, int m, int64_t v)
{
    uint64_t u = v < 0 ? 0 : (uint64_t)v;
    lt_hist_record(e->run[m], u);
    lt_hist_record(sl->h[m], u);
    const uint64_t *le = le_of(m);
    int b = 0;
    while (b < NBUCKETS && u > le[b])
        b++;
    if (b < NBUCKETS)
        e->t.bucket[m][b]++;
    e->t.count[m]++;
    e->t.sum_s[m] += (double)u / 1e6;
}

void lt_replay_live_result(struct lt_replay_live *l, const struct lt_result *r)
{
    struct figs *e = &l->eng;
    struct slot *sl = slot_now(e, lt_mono_now());
    uint32_t out = (r->has & LT_RHAS_OUT) ? r->out : 0;
    e->c.results++;
    bool sent = r->has & LT_RHAS_SENT;
    sl->results += sent; /* the window's rate is of requests that were sent */
    e->c.sent += sent;
    e->c.out += out;
    e->t.out += out;
    sl->tokens += out;
    if (r->has & LT_RHAS_IN) {
        e->c.in += r->in;
        e->t.in += r->in;
    }
    if (!sent && r->err && !strcmp(r->err, LT_REPLAY_ERR_UNSENT)) {
        e->c.unsent++;
        e->t.unsent++;
        return;
    }
    if (r->cancelled) {
        e->c.cancelled++;
        e->t.cancelled++;
    } else if (r->err) {
        int k = class_of(r->err);
        e->c.errors++;
        e->c.by_class[k]++;
        e->t.errors++;
        e->t.by_class[k]++;
    } else {
        e->c.ok++;
        e->t.ok++;
    }
    if (r->warmup) {
        e->c.warmup++;
        return;
    }
    if (r->cancelled || r->err)
        return;
    /* The latencies of an ok result, as analyze takes them (add_ok). */
    e->run_dirty = true;
    bool h_ft = r->has & LT_RHAS_FIRST_TOKEN, h_end = r->has & LT_RHAS_END;
    int64_t s = clamp_t(r->sent), ttft = h_ft ? clamp_t(r->first_token) - s : 0,
            e2e = h_end ? clamp_t(r->end) - s : 0;
    if (h_ft)
        rec(e, sl, LT_LIVE_TTFT, ttft);
    if (h_end)
        rec(e, sl, LT_LIVE_E2E, e2e);
    if (h_ft && h_end && out >= 2)
        rec(e, sl, LT_LIVE_TPOT, round_us((double)(e2e - ttft) / (out - 1)));
    for (uint32_t k = 1; k < r->n_chunks; k++)
        rec(e, sl, LT_LIVE_ITL, clamp_t(r->chunks[k].t) - clamp_t(r->chunks[k - 1].t));
}

void lt_replay_live_tick(struct lt_replay_live *l, const struct lt_replay_progress *p,
                         const struct lt_live_server *srv)
{
    pthread_mutex_lock(&l->mu);
    publish(l);
    l->p = *p;
    l->p_at = lt_mono_now();
    uint32_t i = l->server_next;
    l->running[i] = srv ? srv->running : NAN;
    l->waiting[i] = srv ? srv->waiting : NAN;
    l->kv[i] = srv ? srv->kv : NAN;
    l->server_next = (i + 1) % LT_LIVE_SERVER_HIST;
    if (l->n_server < LT_LIVE_SERVER_HIST)
        l->n_server++;
    pthread_mutex_unlock(&l->mu);
}

/* ---- readers ---- */

void lt_replay_live_set_phase(struct lt_replay_live *l, const char *kind, uint32_t index,
                              double load, const char *text)
{
    pthread_mutex_lock(&l->mu);
    snprintf(l->phase_kind, sizeof l->phase_kind, "%s", kind ? kind : "");
    snprintf(l->phase, sizeof l->phase, "%s", kind && text ? text : "");
    l->phase_index = index;
    l->phase_load = load;
    pthread_mutex_unlock(&l->mu);
}

static void lat_of(const struct lt_hist *h, struct lt_live_lat *o)
{
    o->n = lt_hist_count(h);
    o->p50_us = o->n ? (double)lt_hist_value_at(h, 50) : 0;
    o->p99_us = o->n ? (double)lt_hist_value_at(h, 99) : 0;
    o->mean_us = lt_hist_mean(h);
    o->max_us = (double)lt_hist_max(h);
}

void lt_replay_live_view(struct lt_replay_live *l, struct lt_live_view *v)
{
    memset(v, 0, sizeof *v);
    lt_mono now = lt_mono_now();
    int64_t sec = now.ns / 1000000000LL;
    pthread_mutex_lock(&l->mu);
    const struct figs *f = &l->pub;
    v->started = l->started;
    v->p = l->p;
    v->since_tick_s = l->started ? (double)lt_mono_diff_ns(now, l->p_at) / 1e9 : 0;
    v->results = f->c.results;
    v->sent = f->c.sent;
    v->ok = f->c.ok;
    v->errors = f->c.errors;
    v->cancelled = f->c.cancelled;
    v->unsent = f->c.unsent;
    v->warmup = f->c.warmup;
    v->out_tokens = f->c.out;
    v->in_tokens = f->c.in;
    memcpy(v->by_class, f->c.by_class, sizeof v->by_class);
    for (int m = 0; m < LT_LIVE_METRICS; m++) {
        lat_of(f->run[m], &v->run[m]);
        lt_hist_reset(l->scratch[m]);
    }
    uint64_t wr = 0, wt = 0;
    for (int s = 0; s < LT_LIVE_WINDOW_S; s++) {
        const struct slot *sl = &f->ring[s];
        if (sl->sec == INT64_MIN || sl->sec <= sec - LT_LIVE_WINDOW_S || sl->sec > sec)
            continue;
        wr += sl->results;
        wt += sl->tokens;
        for (int m = 0; m < LT_LIVE_METRICS; m++)
            lt_hist_merge(l->scratch[m], sl->h[m], NULL);
    }
    for (int m = 0; m < LT_LIVE_METRICS; m++)
        lat_of(l->scratch[m], &v->win[m]);
    /* The window reaches back to the start of the oldest second in it,
     * or to the run's start if that is later. */
    double span = (double)(now.ns % 1000000000LL) / 1e9 + (LT_LIVE_WINDOW_S - 1);
    double run_s = l->started ? (double)lt_mono_diff_ns(now, f->run_start) / 1e9 : 0;
    v->win_s = run_s < span ? run_s : span;
    v->win_rps = v->win_s > 0 ? (double)wr / v->win_s : 0;
    v->win_tps = v->win_s > 0 ? (double)wt / v->win_s : 0;
    uint32_t n = l->n_server,
             first = (l->server_next + LT_LIVE_SERVER_HIST - n) % LT_LIVE_SERVER_HIST;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k = (first + i) % LT_LIVE_SERVER_HIST;
        v->running[i] = l->running[k];
        v->waiting[i] = l->waiting[k];
        v->kv[i] = l->kv[k];
    }
    v->n_server = n;
    snprintf(v->phase, sizeof v->phase, "%s", l->phase);
    pthread_mutex_unlock(&l->mu);
}

/* A label value as the text format wants it: \, " and newline escaped. */
static int put_label(struct lt_buf *b, const char *s)
{
    int rc = 0;
    for (; *s && rc == 0; s++) {
        if (*s == '\\' || *s == '"')
            rc = lt_buf_printf(b, "\\%c", *s);
        else if (*s == '\n')
            rc = lt_buf_puts(b, "\\n");
        else
            rc = lt_buf_append(b, s, 1);
    }
    return rc;
}

static int prom_hist(struct lt_buf *b, const struct totals *t, int m)
{
    const char *n = metric_names[m];
    const char *what[LT_LIVE_METRICS] = {
        "time to first token (first token-bearing chunk - sent) of ok requests",
        "time per output token ((e2e - ttft) / (out - 1)) of ok requests",
        "gaps between the chunks of ok requests",
        "end-to-end time (end - sent) of ok requests",
    };
    int rc = lt_buf_printf(b, "# HELP loadtrace_%s_seconds The client's %s.\n", n, what[m]);
    rc = rc ? rc : lt_buf_printf(b, "# TYPE loadtrace_%s_seconds histogram\n", n);
    const uint64_t *le = le_of(m);
    uint64_t cum = 0;
    for (int k = 0; k < NBUCKETS && rc == 0; k++) {
        cum += t->bucket[m][k];
        rc = lt_buf_printf(b, "loadtrace_%s_seconds_bucket{le=\"%g\"} %llu\n", n,
                           (double)le[k] / 1e6, (unsigned long long)cum);
    }
    rc = rc ? rc
            : lt_buf_printf(b, "loadtrace_%s_seconds_bucket{le=\"+Inf\"} %llu\n", n,
                            (unsigned long long)t->count[m]);
    rc = rc ? rc : lt_buf_printf(b, "loadtrace_%s_seconds_sum %.9g\n", n, t->sum_s[m]);
    rc = rc ? rc
            : lt_buf_printf(b, "loadtrace_%s_seconds_count %llu\n", n,
                            (unsigned long long)t->count[m]);
    return rc;
}

static int prom_gauge(struct lt_buf *b, const char *name, const char *help, double v)
{
    if (!isfinite(v))
        return 0; /* unknown: not served */
    return lt_buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %.9g\n", name, help, name, name, v);
}

int lt_replay_live_prom(struct lt_replay_live *l, struct lt_buf *b)
{
    pthread_mutex_lock(&l->mu);
    const struct totals *t = &l->pub.t;
    const struct lt_replay_progress *p = &l->p;
    int rc = lt_buf_puts(b, "# HELP loadtrace_requests_total Requests recorded, by outcome "
                            "(ok, error, cancelled: closed where the trace's client left, "
                            "unsent: never sent, the run was stopped first).\n"
                            "# TYPE loadtrace_requests_total counter\n");
    rc = rc ? rc
            : lt_buf_printf(b,
                            "loadtrace_requests_total{outcome=\"ok\"} %llu\n"
                            "loadtrace_requests_total{outcome=\"error\"} %llu\n"
                            "loadtrace_requests_total{outcome=\"cancelled\"} %llu\n"
                            "loadtrace_requests_total{outcome=\"unsent\"} %llu\n",
                            (unsigned long long)t->ok, (unsigned long long)t->errors,
                            (unsigned long long)t->cancelled, (unsigned long long)t->unsent);
    rc = rc ? rc
            : lt_buf_puts(b, "# HELP loadtrace_request_errors_total Failed requests, by "
                             "error class (results' err).\n"
                             "# TYPE loadtrace_request_errors_total counter\n");
    for (int k = 0; k < LT_LIVE_CLASSES && rc == 0; k++)
        rc = lt_buf_printf(b, "loadtrace_request_errors_total{class=\"%s\"} %llu\n", class_names[k],
                           (unsigned long long)t->by_class[k]);
    rc = rc ? rc
            : lt_buf_printf(b,
                            "# HELP loadtrace_output_tokens_total Output tokens of the "
                            "requests recorded.\n# TYPE loadtrace_output_tokens_total counter\n"
                            "loadtrace_output_tokens_total %llu\n"
                            "# HELP loadtrace_input_tokens_total Prompt tokens of the requests "
                            "recorded, as the server's usage counted them.\n"
                            "# TYPE loadtrace_input_tokens_total counter\n"
                            "loadtrace_input_tokens_total %llu\n"
                            "# HELP loadtrace_runs_total Runs begun (levels, probes).\n"
                            "# TYPE loadtrace_runs_total counter\nloadtrace_runs_total %llu\n",
                            (unsigned long long)t->out, (unsigned long long)t->in,
                            (unsigned long long)t->runs);
    for (int m = 0; m < LT_LIVE_METRICS && rc == 0; m++)
        rc = prom_hist(b, t, m);
    bool on = l->started;
    rc = rc ? rc
            : prom_gauge(b, "loadtrace_requests_in_flight", "Requests sent and not yet ended.",
                         on ? (double)p->inflight : 0);
    rc = rc ? rc
            : prom_gauge(b, "loadtrace_schedule_lag_seconds",
                         "How late the next due send is now (0: on time).", on ? p->lag_s : 0);
    rc = rc ? rc
            : prom_gauge(b, "loadtrace_run_requests", "Requests the current run will send.",
                         on ? (double)p->total : NAN);
    rc = rc ? rc
            : prom_gauge(b, "loadtrace_run_requests_done",
                         "Requests of the current run recorded (the unsent too).",
                         on ? (double)p->done : NAN);
    rc = rc ? rc
            : prom_gauge(b, "loadtrace_run_elapsed_seconds", "Time since the run's origin.",
                         on ? p->elapsed_s : NAN);
    rc = rc ? rc
            : prom_gauge(b, "loadtrace_run_index", "The current run (0-based).",
                         on ? (double)p->run : NAN);
    rc = rc ? rc
            : prom_gauge(b, "loadtrace_run_concurrency", "The closed loop's level (0: none).",
                         on ? (double)p->level : NAN);
    if (rc == 0 && l->phase_kind[0]) {
        rc = lt_buf_printf(b, "# HELP loadtrace_phase_info What runs now (a probe of a "
                              "capacity search, a config of a sweep).\n"
                              "# TYPE loadtrace_phase_info gauge\nloadtrace_phase_info{kind=\"");
        rc = rc ? rc : put_label(b, l->phase_kind);
        rc = rc ? rc : lt_buf_printf(b, "\",index=\"%u\",what=\"", l->phase_index);
        rc = rc ? rc : put_label(b, l->phase);
        rc = rc ? rc : lt_buf_puts(b, "\"} 1\n");
        rc =
            rc ? rc
               : prom_gauge(b, "loadtrace_phase_load",
                            "The load of the current probe (req/s or concurrency).", l->phase_load);
    }
    pthread_mutex_unlock(&l->mu);
    return rc < 0 ? LT_ENOMEM : 0;
}

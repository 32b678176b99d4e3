/*
 * capture's live figures (capture_live.h). The records' figures are
 * added on the recorder's writer thread under one mutex, into the whole
 * capture's histograms and into one of ten one-second slots (the last
 * 10 s); a frame or a scrape merges the slots under the same mutex. The
 * histograms have analyze's shape (highest 2^36 us, 10 bits), so the
 * percentiles are the ones `loadtrace analyze` would give the trace.
 */
#include "cli/capture_live.h"

#include "base/lt_hist.h"
#include "base/lt_time.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HIST_HIGHEST (1ull << 36)
#define HIST_BITS 10
#define SLOTS 10 /* seconds in the window */

enum { M_TTFT, M_TPOT, M_E2E, M_N };

struct slot {
    int64_t sec; /* seconds since the start this slot counts; -1 none */
    uint64_t records, out;
    struct lt_hist *h[M_N];
};

struct cli_capture_live {
    pthread_mutex_t mu;
    char title[200];
    char state[160];
    char url[300]; /* --live-metrics */
    lt_mono start;
    struct lt_capture *cap;    /* read for each frame, until detached */
    struct lt_capture_live cl; /* the last counters read */
    bool final;
    /* the records the trace took */
    uint64_t records, ok, failed, out_tokens, in_tokens;
    struct lt_hist *run[M_N];
    struct slot slots[SLOTS];
    struct lt_hist *scratch[M_N];
};

static const char *const m_names[M_N] = {"TTFT", "TPOT", "E2E"};

void cli_capture_live_free(struct cli_capture_live *l)
{
    if (!l)
        return;
    for (int m = 0; m < M_N; m++) {
        lt_hist_free(l->run[m]);
        lt_hist_free(l->scratch[m]);
        for (int s = 0; s < SLOTS; s++)
            lt_hist_free(l->slots[s].h[m]);
    }
    pthread_mutex_destroy(&l->mu);
    free(l);
}

struct cli_capture_live *cli_capture_live_new(const char *title, struct lt_err *err)
{
    struct cli_capture_live *l = calloc(1, sizeof *l);
    if (!l) {
        lt_errset(err, LT_ENOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&l->mu, NULL);
    snprintf(l->title, sizeof l->title, "%s", title);
    l->start = lt_mono_now();
    bool ok = true;
    for (int m = 0; m < M_N && ok; m++) {
        ok = (l->run[m] = lt_hist_new(HIST_HIGHEST, HIST_BITS, err)) &&
             (l->scratch[m] = lt_hist_new(HIST_HIGHEST, HIST_BITS, err));
        for (int s = 0; s < SLOTS && ok; s++)
            ok = (l->slots[s].h[m] = lt_hist_new(HIST_HIGHEST, HIST_BITS, err)) != NULL;
    }
    for (int s = 0; s < SLOTS; s++)
        l->slots[s].sec = -1;
    if (!ok) {
        cli_capture_live_free(l);
        return NULL;
    }
    return l;
}

void cli_capture_live_title(struct cli_capture_live *l, const char *title)
{
    pthread_mutex_lock(&l->mu);
    snprintf(l->title, sizeof l->title, "%s", title);
    pthread_mutex_unlock(&l->mu);
}

void cli_capture_live_url(struct cli_capture_live *l, const char *url)
{
    pthread_mutex_lock(&l->mu);
    snprintf(l->url, sizeof l->url, "%s", url);
    pthread_mutex_unlock(&l->mu);
}

void cli_capture_live_attach(struct cli_capture_live *l, struct lt_capture *cap)
{
    pthread_mutex_lock(&l->mu);
    if (!cap && l->cap)
        lt_capture_get_live(l->cap, &l->cl); /* the last look before it goes */
    l->cap = cap;
    pthread_mutex_unlock(&l->mu);
}

void cli_capture_live_final(struct cli_capture_live *l, const struct lt_capture_stats *st)
{
    pthread_mutex_lock(&l->mu);
    l->cl.st = *st;
    l->cl.active = 0;
    l->cl.connections = 0;
    l->cl.backlog = 0;
    l->final = true;
    pthread_mutex_unlock(&l->mu);
}

void cli_capture_live_state(struct cli_capture_live *l, const char *state)
{
    pthread_mutex_lock(&l->mu);
    snprintf(l->state, sizeof l->state, "%s", state ? state : "");
    pthread_mutex_unlock(&l->mu);
}

static double elapsed_s(const struct cli_capture_live *l)
{
    return (double)lt_mono_diff_us(lt_mono_now(), l->start) / 1e6;
}

/* The slot of second `sec`, emptied when it held an older second. */
static struct slot *slot_of(struct cli_capture_live *l, int64_t sec)
{
    struct slot *s = &l->slots[sec % SLOTS];
    if (s->sec != sec) {
        s->sec = sec;
        s->records = s->out = 0;
        for (int m = 0; m < M_N; m++)
            lt_hist_reset(s->h[m]);
    }
    return s;
}

static void put(struct cli_capture_live *l, struct slot *s, int m, int64_t us)
{
    uint64_t v = us > 0 ? (uint64_t)us : 0;
    lt_hist_record(l->run[m], v);
    lt_hist_record(s->h[m], v);
}

void cli_capture_live_record(void *ud, const struct lt_record *r)
{
    struct cli_capture_live *l = ud;
    int64_t sec = lt_mono_diff_us(lt_mono_now(), l->start) / 1000000;
    bool ok = !(r->has & LT_HAS_FAILED);
    uint64_t out = (r->has & LT_HAS_OUT) ? r->out : 0;
    pthread_mutex_lock(&l->mu);
    struct slot *s = slot_of(l, sec < 0 ? 0 : sec);
    l->records++;
    s->records++;
    l->ok += ok;
    l->failed += !ok;
    l->out_tokens += out;
    s->out += out;
    l->in_tokens += (r->has & LT_HAS_IN) ? r->in : 0;
    /* The latencies of the answers that came whole, as analyze takes a
     * trace's: TTFT and E2E as seen at the proxy, TPOT = (E2E - TTFT) /
     * (out - 1). */
    if (ok && (r->has & LT_HAS_ORIG_TTFT))
        put(l, s, M_TTFT, r->orig_ttft);
    if (ok && (r->has & LT_HAS_ORIG_E2E))
        put(l, s, M_E2E, r->orig_e2e);
    if (ok && (r->has & LT_HAS_ORIG_TTFT) && (r->has & LT_HAS_ORIG_E2E) && out > 1)
        put(l, s, M_TPOT, (r->orig_e2e - r->orig_ttft) / (int64_t)(out - 1));
    pthread_mutex_unlock(&l->mu);
}

/* A consistent look, taken under mu: the counters now, the window merged
 * into scratch. */
struct look {
    struct lt_capture_live cl;
    bool final;
    double el, win_s;
    uint64_t records, ok, failed, out_tokens, in_tokens, win_records, win_out;
    struct {
        uint64_t n;
        double p50, p99, sum;
    } run[M_N], win[M_N];
    char state[160];
    char url[300];
};

static void look(struct cli_capture_live *l, struct look *k)
{
    memset(k, 0, sizeof *k);
    pthread_mutex_lock(&l->mu);
    if (l->cap && !l->final)
        lt_capture_get_live(l->cap, &l->cl);
    k->cl = l->cl;
    k->final = l->final;
    k->el = elapsed_s(l);
    int64_t now = (int64_t)k->el;
    /* the window: the seconds now-9 .. now (the current one partly) */
    k->win_s = k->el < SLOTS ? k->el : SLOTS - 1 + (k->el - (double)now);
    for (int m = 0; m < M_N; m++)
        lt_hist_reset(l->scratch[m]);
    for (int i = 0; i < SLOTS; i++) {
        const struct slot *s = &l->slots[i];
        if (s->sec < 0 || s->sec <= now - SLOTS || s->sec > now)
            continue;
        k->win_records += s->records;
        k->win_out += s->out;
        for (int m = 0; m < M_N; m++)
            lt_hist_merge(l->scratch[m], s->h[m], NULL); /* same shape: cannot fail */
    }
    for (int m = 0; m < M_N; m++) {
        k->run[m].n = lt_hist_count(l->run[m]);
        k->run[m].p50 = k->run[m].n ? (double)lt_hist_value_at(l->run[m], 50) : 0;
        k->run[m].p99 = k->run[m].n ? (double)lt_hist_value_at(l->run[m], 99) : 0;
        k->run[m].sum = lt_hist_mean(l->run[m]) * (double)k->run[m].n;
        k->win[m].n = lt_hist_count(l->scratch[m]);
        k->win[m].p50 = k->win[m].n ? (double)lt_hist_value_at(l->scratch[m], 50) : 0;
        k->win[m].p99 = k->win[m].n ? (double)lt_hist_value_at(l->scratch[m], 99) : 0;
    }
    k->records = l->records;
    k->ok = l->ok;
    k->failed = l->failed;
    k->out_tokens = l->out_tokens;
    k->in_tokens = l->in_tokens;
    snprintf(k->state, sizeof k->state, "%s", l->state);
    snprintf(k->url, sizeof k->url, "%s", l->url);
    pthread_mutex_unlock(&l->mu);
}

static void bytes_h(uint64_t b, char *o, size_t n)
{
    if (b < 10 * 1024)
        snprintf(o, n, "%llu B", (unsigned long long)b);
    else if (b < 10ull * 1024 * 1024)
        snprintf(o, n, "%.1f KiB", (double)b / 1024);
    else if (b < 10ull * 1024 * 1024 * 1024)
        snprintf(o, n, "%.1f MiB", (double)b / (1024.0 * 1024));
    else
        snprintf(o, n, "%.2f GiB", (double)b / (1024.0 * 1024 * 1024));
}

static void ms_cell(uint64_t n, double us, char *b, size_t sz)
{
    if (!n)
        snprintf(b, sz, "%10s", "-");
    else
        snprintf(b, sz, "%10.2f", us / 1000.0);
}

int cli_capture_live_render(struct cli_dash *d, void *ud, int w, int h)
{
    (void)h;
    struct cli_capture_live *l = ud;
    struct look k;
    look(l, &k);
    int n = 0;
    const struct lt_capture_stats *st = &k.cl.st;
    char t[300];
    pthread_mutex_lock(&l->mu);
    snprintf(t, sizeof t, " loadtrace capture · %s", l->title);
    pthread_mutex_unlock(&l->mu);
    cli_dash_title_row(d, &n, w, t, k.el);
    cli_dash_row(d, &n, CLI_DASH_PLAIN, "%s", "");
    cli_dash_row(d, &n, CLI_DASH_HEAD, " %s",
                 k.state[0] ? k.state
                 : k.final  ? "stopped"
                            : "recording");
    cli_dash_row(d, &n, CLI_DASH_PLAIN, "%s", "");
    cli_dash_row(d, &n, CLI_DASH_PLAIN,
                 " proxy      connections %llu   in flight %llu   requests %llu   SSE events %llu",
                 (unsigned long long)k.cl.connections, (unsigned long long)k.cl.active,
                 (unsigned long long)st->requests, (unsigned long long)st->chunks);
    cli_dash_row(d, &n, st->dropped || st->lost ? CLI_DASH_BAD : CLI_DASH_GOOD,
                 " recorded   %llu   writer backlog %llu   not recorded %llu   lost %llu",
                 (unsigned long long)st->recorded, (unsigned long long)k.cl.backlog,
                 (unsigned long long)st->dropped, (unsigned long long)st->lost);
    char b[48];
    bytes_h(k.cl.bytes_out, b, sizeof b);
    cli_dash_row(d, &n, CLI_DASH_PLAIN, " relayed    %s to the clients (%llu bytes)", b,
                 (unsigned long long)k.cl.bytes_out);
    cli_dash_row(d, &n, k.failed || st->upstream_failed ? CLI_DASH_BAD : CLI_DASH_PLAIN,
                 " answers    ok %llu   failed %llu   clients gone %llu   upstream failures %llu"
                 "   413 %llu   503 %llu",
                 (unsigned long long)k.ok, (unsigned long long)k.failed,
                 (unsigned long long)st->client_gone, (unsigned long long)st->upstream_failed,
                 (unsigned long long)st->too_large, (unsigned long long)st->busy);
    cli_dash_row(d, &n, CLI_DASH_PLAIN, " tokens     out %llu   in %llu",
                 (unsigned long long)k.out_tokens, (unsigned long long)k.in_tokens);
    double el = k.el > 0 ? k.el : 1e-9, ws = k.win_s > 0 ? k.win_s : 1e-9;
    cli_dash_row(d, &n, CLI_DASH_PLAIN,
                 " throughput last %.0f s: %.2f req/s  %.0f tok/s     whole capture: %.2f req/s"
                 "  %.0f tok/s",
                 k.win_s, (double)k.win_records / ws, (double)k.win_out / ws,
                 (double)k.records / el, (double)k.out_tokens / el);
    cli_dash_row(d, &n, CLI_DASH_PLAIN, "%s", "");
    cli_dash_row(d, &n, CLI_DASH_HEAD, " %-14s %10s %10s %10s %10s %10s", "latency (ms)", "p50 10s",
                 "p99 10s", "p50 all", "p99 all", "count");
    for (int m = 0; m < M_N; m++) {
        char x[4][24];
        ms_cell(k.win[m].n, k.win[m].p50, x[0], sizeof x[0]);
        ms_cell(k.win[m].n, k.win[m].p99, x[1], sizeof x[1]);
        ms_cell(k.run[m].n, k.run[m].p50, x[2], sizeof x[2]);
        ms_cell(k.run[m].n, k.run[m].p99, x[3], sizeof x[3]);
        cli_dash_row(d, &n, CLI_DASH_PLAIN, " %-14s %s %s %s %s %10llu", m_names[m], x[0], x[1],
                     x[2], x[3], (unsigned long long)k.run[m].n);
    }
    cli_dash_row(d, &n, CLI_DASH_DIM, "%s", "");
    cli_dash_row(d, &n, CLI_DASH_DIM,
                 " (TTFT and E2E as seen at the proxy, of the answers that came whole)");
    if (k.url[0])
        cli_dash_row(d, &n, CLI_DASH_DIM, " live metrics on %s", k.url);
    return n;
}

int cli_capture_live_prom(void *ud, struct lt_buf *b)
{
    struct cli_capture_live *l = ud;
    struct look k;
    look(l, &k);
    const struct lt_capture_stats *st = &k.cl.st;
    struct {
        const char *name, *type, *help;
        double v;
    } rows[] = {
        {"requests_total", "counter", "requests proxied (all paths)", (double)st->requests},
        {"records_total", "counter", "records the trace took", (double)k.records},
        {"records_ok_total", "counter", "records of answers that came whole", (double)k.ok},
        {"records_failed_total", "counter", "records of failed or cut answers", (double)k.failed},
        {"not_recorded_total", "counter", "requests not recorded: too many held",
         (double)st->dropped},
        {"sse_events_total", "counter", "SSE events relayed", (double)st->chunks},
        {"bytes_relayed_total", "counter", "response bytes handed to the clients",
         (double)k.cl.bytes_out},
        {"output_tokens_total", "counter", "output tokens of the records", (double)k.out_tokens},
        {"input_tokens_total", "counter", "prompt tokens of the records", (double)k.in_tokens},
        {"upstream_failures_total", "counter", "upstream unreachable or cut",
         (double)st->upstream_failed},
        {"clients_gone_total", "counter", "clients that left before their answer ended",
         (double)st->client_gone},
        {"connections", "gauge", "client connections open", (double)k.cl.connections},
        {"requests_in_flight", "gauge", "requests begun and not finished", (double)k.cl.active},
        {"writer_backlog", "gauge", "finished records waiting for the trace writer",
         (double)k.cl.backlog},
        {"elapsed_seconds", "gauge", "time since capture started", k.el},
    };
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof rows / sizeof rows[0]; i++)
        rc = lt_buf_printf(b,
                           "# HELP loadtrace_capture_%s %s\n# TYPE loadtrace_capture_%s %s\n"
                           "loadtrace_capture_%s %.17g\n",
                           rows[i].name, rows[i].help, rows[i].name, rows[i].type, rows[i].name,
                           rows[i].v);
    static const char *const pn[M_N] = {"ttft", "tpot", "e2e"};
    for (int m = 0; rc == 0 && m < M_N; m++)
        rc = lt_buf_printf(b,
                           "# HELP loadtrace_capture_%s_seconds %s of the whole answers, whole "
                           "capture (p50, p99)\n# TYPE loadtrace_capture_%s_seconds summary\n"
                           "loadtrace_capture_%s_seconds{quantile=\"0.5\"} %.6f\n"
                           "loadtrace_capture_%s_seconds{quantile=\"0.99\"} %.6f\n"
                           "loadtrace_capture_%s_seconds_sum %.6f\n"
                           "loadtrace_capture_%s_seconds_count %llu\n",
                           pn[m], m_names[m], pn[m], pn[m], k.run[m].p50 / 1e6, pn[m],
                           k.run[m].p99 / 1e6, pn[m], k.run[m].sum / 1e6, pn[m],
                           (unsigned long long)k.run[m].n);
    return rc < 0 ? LT_ENOMEM : 0;
}

/*
 * The sweep's dashboard (sweep_live.h). The sweep's thread reports its
 * steps under the mutex; the dashboard's thread draws, and reads the
 * current load's figures from its replay's live page (an HTTP/1.0 GET to
 * loopback, bounded to 300 ms) at most once a frame.
 */
#define _DEFAULT_SOURCE
#include "cli/sweep_live.h"

#include "base/lt_time.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PAGE_MAX (256 * 1024)

struct cfg {
    char name[LT_SWEEP_NAME];
    const char *kind;
    enum lt_sweep_status status;
    bool running, ended;
    char why[160];
    double took_s;
    lt_mono began;
};

/* What the current load's replay serves, as last read. */
struct load {
    bool have;
    double total, done, ok, error, cancelled, inflight, elapsed, out_tokens;
    char phase[160];
};

struct cli_sweep_live {
    pthread_mutex_t mu;
    char title[300];
    lt_mono start;
    struct cfg *cfg;
    size_t n;
    size_t cur;
    bool any;
    enum lt_sweep_step step;
    char what[300];     /* the last sentence of the current config */
    char rlog[1100];    /* the current load's replay log */
    unsigned live_port; /* read from it; 0: not yet */
    struct load load;
    char page[PAGE_MAX];
};

struct cli_sweep_live *cli_sweep_live_new(const struct lt_sweep_plan *p, const char *title,
                                          struct lt_err *err)
{
    struct cli_sweep_live *l = calloc(1, sizeof *l);
    if (l)
        l->cfg = calloc(p->n_configs ? p->n_configs : 1, sizeof *l->cfg);
    if (!l || !l->cfg) {
        free(l);
        lt_errset(err, LT_ENOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&l->mu, NULL);
    snprintf(l->title, sizeof l->title, "%s", title);
    l->start = lt_mono_now();
    l->n = p->n_configs;
    for (size_t i = 0; i < p->n_configs; i++) {
        const struct lt_sweep_config *k = &p->configs[i];
        snprintf(l->cfg[i].name, sizeof l->cfg[i].name, "%s", k->name);
        l->cfg[i].kind = k->kind == LT_SWEEP_LAUNCH    ? "launch"
                         : k->kind == LT_SWEEP_RUNNING ? "running"
                                                       : "virtual";
    }
    return l;
}

void cli_sweep_live_free(struct cli_sweep_live *l)
{
    if (!l)
        return;
    pthread_mutex_destroy(&l->mu);
    free(l->cfg);
    free(l);
}

void cli_sweep_live_progress(void *ud, const struct lt_sweep_progress *p)
{
    struct cli_sweep_live *l = ud;
    if (p->index >= l->n)
        return;
    pthread_mutex_lock(&l->mu);
    struct cfg *c = &l->cfg[p->index];
    l->cur = p->index;
    l->any = true;
    l->step = p->step;
    if (p->step == LT_SWEEP_STEP_BEGIN) {
        c->running = true;
        c->began = lt_mono_now();
        l->what[0] = '\0';
    }
    if (p->step == LT_SWEEP_STEP_LOAD || p->step == LT_SWEEP_STEP_WARMUP) {
        snprintf(l->rlog, sizeof l->rlog, "%s", p->replay_log ? p->replay_log : "");
        l->live_port = 0;
        memset(&l->load, 0, sizeof l->load);
    }
    if (p->step == LT_SWEEP_STEP_END) {
        c->running = false;
        c->ended = true;
        c->status = p->status;
        snprintf(c->why, sizeof c->why, "%s", p->why);
        c->took_s = c->began.ns ? (double)lt_mono_diff_us(lt_mono_now(), c->began) / 1e6 : 0;
    }
    pthread_mutex_unlock(&l->mu);
}

void cli_sweep_live_event(struct cli_sweep_live *l, const char *config, const char *what)
{
    pthread_mutex_lock(&l->mu);
    snprintf(l->what, sizeof l->what, "%s: %s", config, what);
    pthread_mutex_unlock(&l->mu);
}

/* The port in replay's "live metrics on http://127.0.0.1:PORT/metrics"
 * line of its log; 0 while it is not there. */
static unsigned port_in_log(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[1024];
    unsigned port = 0;
    static const char key[] = "live metrics on http://127.0.0.1:";
    while (fgets(line, sizeof line, f)) {
        const char *at = strstr(line, key);
        if (at) {
            port = (unsigned)strtoul(at + sizeof key - 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return port;
}

/* GET /metrics on 127.0.0.1:port into buf; the body's length or -1. */
static ssize_t get_page(unsigned port, char *buf, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    static const char req[] = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    size_t got = 0;
    lt_mono end = lt_mono_add_ns(lt_mono_now(), 300 * 1000000LL);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
        send(fd, req, sizeof req - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof req - 1)) {
        close(fd);
        return -1;
    }
    for (;;) {
        int64_t left = lt_mono_diff_us(end, lt_mono_now()) / 1000;
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&pf, 1, (int)left) <= 0 || got + 1 >= cap)
            break;
        ssize_t n = recv(fd, buf + got, cap - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    char *body = strstr(buf, "\r\n\r\n");
    if (!body)
        return -1;
    body += 4;
    size_t bl = got - (size_t)(body - buf);
    memmove(buf, body, bl + 1);
    return (ssize_t)bl;
}

/* The value of the series that starts with `series ` on the page, or NAN. */
static double series(const char *page, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = page; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, name, nl) && p[nl] == ' ')
            return strtod(p + nl + 1, NULL);
    return NAN;
}

/* Read the current load's page, if it has one; the caller holds mu. */
static void read_load(struct cli_sweep_live *l)
{
    if (l->step != LT_SWEEP_STEP_LOAD || !l->rlog[0])
        return;
    if (!l->live_port)
        l->live_port = port_in_log(l->rlog);
    if (!l->live_port || get_page(l->live_port, l->page, sizeof l->page) < 0)
        return;
    struct load *d = &l->load;
    d->have = true;
    d->total = series(l->page, "loadtrace_run_requests");
    d->done = series(l->page, "loadtrace_run_requests_done");
    d->ok = series(l->page, "loadtrace_requests_total{outcome=\"ok\"}");
    d->error = series(l->page, "loadtrace_requests_total{outcome=\"error\"}");
    d->cancelled = series(l->page, "loadtrace_requests_total{outcome=\"cancelled\"}");
    d->inflight = series(l->page, "loadtrace_requests_in_flight");
    d->elapsed = series(l->page, "loadtrace_run_elapsed_seconds");
    d->out_tokens = series(l->page, "loadtrace_output_tokens_total");
    d->phase[0] = '\0';
    const char *ph = strstr(l->page, "\nloadtrace_phase_info{");
    if (ph) {
        const char *w = strstr(ph, "what=\"");
        const char *e = w ? strchr(w + 6, '"') : NULL;
        if (w && e)
            snprintf(d->phase, sizeof d->phase, "%.*s", (int)(e - w - 6), w + 6);
    }
}

static double nz(double v)
{
    return isfinite(v) ? v : 0;
}

int cli_sweep_live_render(struct cli_dash *d, void *ud, int w, int h)
{
    struct cli_sweep_live *l = ud;
    int n = 0;
    pthread_mutex_lock(&l->mu);
    read_load(l);
    char t[400];
    snprintf(t, sizeof t, " loadtrace sweep · %s", l->title);
    cli_dash_title_row(d, &n, w, t, (double)lt_mono_diff_us(lt_mono_now(), l->start) / 1e6);
    cli_dash_row(d, &n, CLI_DASH_PLAIN, "%s", "");
    size_t done = 0, complete = 0, failed = 0, skipped = 0, other = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (!l->cfg[i].ended)
            continue;
        done++;
        enum lt_sweep_status s = l->cfg[i].status;
        complete += s == LT_SWEEP_COMPLETE;
        failed += s == LT_SWEEP_FAILED;
        skipped += s == LT_SWEEP_SKIPPED;
        other += s != LT_SWEEP_COMPLETE && s != LT_SWEEP_FAILED && s != LT_SWEEP_SKIPPED;
    }
    char bar[1024], head[160];
    snprintf(head, sizeof head, " configs  %zu of %zu done  ", done, l->n);
    cli_dash_bar(d, l->n ? (double)done / (double)l->n : 0, 30, bar, sizeof bar);
    cli_dash_row(d, &n, failed || other ? CLI_DASH_BAD : CLI_DASH_HEAD,
                 "%s%s  %zu complete · %zu failed · %zu skipped · %zu other · %zu to come", head,
                 bar, complete, failed, skipped, other, l->n - done);
    cli_dash_row(d, &n, CLI_DASH_PLAIN, "%s", "");
    cli_dash_row(d, &n, CLI_DASH_HEAD, "   %-24s %-8s %s", "config", "kind", "status");
    /* Room for the list: the rows left less the current config's (6)
     * and the footer; the window follows the current config. */
    int room = h - n - 8;
    room = room < 3 ? 3 : room;
    size_t first = 0;
    if (l->n > (size_t)room && l->cur >= (size_t)room / 2)
        first = l->cur - (size_t)room / 2;
    if (first + (size_t)room > l->n)
        first = l->n > (size_t)room ? l->n - (size_t)room : 0;
    for (size_t i = first; i < l->n && i < first + (size_t)room; i++) {
        const struct cfg *c = &l->cfg[i];
        char st[300];
        if (c->ended)
            snprintf(st, sizeof st, "%s%s%s (%.0f s)", lt_sweep_status_name(c->status),
                     c->why[0] ? ": " : "", c->why, c->took_s);
        else if (c->running)
            snprintf(st, sizeof st, "running: %s",
                     l->step == LT_SWEEP_STEP_LOAD     ? "the load"
                     : l->step == LT_SWEEP_STEP_WARMUP ? "the warm-up"
                                                       : "starting");
        else
            snprintf(st, sizeof st, "to come");
        enum cli_dash_attr a = c->running  ? CLI_DASH_HEAD
                               : !c->ended ? CLI_DASH_DIM
                               : c->status == LT_SWEEP_COMPLETE || c->status == LT_SWEEP_SKIPPED
                                   ? CLI_DASH_GOOD
                                   : CLI_DASH_BAD;
        cli_dash_row(d, &n, a, " %s %-24s %-8s %s", c->running ? ">" : " ", c->name, c->kind, st);
    }
    if (l->n > (size_t)room)
        cli_dash_row(d, &n, CLI_DASH_DIM, "   (%zu configs; those around the current shown)", l->n);
    cli_dash_row(d, &n, CLI_DASH_PLAIN, "%s", "");
    if (l->what[0])
        cli_dash_row(d, &n, CLI_DASH_PLAIN, " now      %s", l->what);
    const struct load *ld = &l->load;
    if (l->any && l->cfg[l->cur].running && l->step == LT_SWEEP_STEP_LOAD) {
        if (!ld->have) {
            cli_dash_row(d, &n, CLI_DASH_DIM,
                         " load     (its replay's live figures are not up yet)");
        } else {
            double tot = nz(ld->total), dn = nz(ld->done);
            cli_dash_bar(d, tot > 0 ? dn / tot : 0, 30, bar, sizeof bar);
            cli_dash_row(d, &n, CLI_DASH_PLAIN, " load     %.0f/%.0f requests  %s  %.0f s", dn, tot,
                         bar, nz(ld->elapsed));
            cli_dash_row(d, &n, nz(ld->error) > 0 ? CLI_DASH_BAD : CLI_DASH_PLAIN,
                         "          ok %.0f   errors %.0f   cancelled %.0f   in flight %.0f   "
                         "tokens out %.0f",
                         nz(ld->ok), nz(ld->error), nz(ld->cancelled), nz(ld->inflight),
                         nz(ld->out_tokens));
            if (ld->phase[0])
                cli_dash_row(d, &n, CLI_DASH_PLAIN, "          %s", ld->phase);
        }
    }
    pthread_mutex_unlock(&l->mu);
    return n;
}

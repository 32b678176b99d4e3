/*
 * A run's self-check, as analyze shows it: the load the run delivered
 * against the load asked for, and what the client itself cost, read from
 * the "check" record replay writes at the end of each run
 * (docs/trace-format.md §2.8; replay/replay_check.c computes it). A run
 * whose delivered load was more than 5 % off, or whose client used 90 %
 * of a core or more, is flagged at the top of every report, before the
 * figures it makes doubtful: measured at another load than the one asked,
 * or with the client's own delays in them. Files written before the
 * record existed have none, and show nothing.
 *
 * An MPI replay's merged file holds one check per rank and run: their
 * counts, rates, in-flight means and CPU add up (the ranks ran side by
 * side), the wall time is the longest, and a flag of any rank flags the
 * run.
 */
#include "analyze/analyze.h"
#include "analyze/analyze_internal.h"
#include "analyze/analyze_json.h"

#include <math.h>
#include <string.h>

void lt__analyze_check_add(struct lt_analyze_run *r, const struct lt_check *k)
{
    struct lt_check *c = &r->check;
    if (r->n_checks++ == 0) {
        *c = *k;
        c->extra = (struct lt_extra){0};
        c->stopped_by = NULL;
        if (k->stopped_by) {
            snprintf(r->stop_by, sizeof r->stop_by, "%s", k->stopped_by);
            c->stopped_by = r->stop_by;
        }
        return;
    }
    c->requests += k->requests;
    c->sent += k->sent;
    c->out_tokens += k->out_tokens;
    c->rate_asked += k->rate_asked;
    c->rate_got += k->rate_got;
    c->inflight_asked += k->inflight_asked;
    c->inflight_got += k->inflight_got;
    c->cpu_s += k->cpu_s;
    c->wall_s = k->wall_s > c->wall_s ? k->wall_s : c->wall_s;
    c->span_s = k->span_s > c->span_s ? k->span_s : c->span_s;
    c->batch = c->batch && k->batch; /* a rank that held its level held the run's */
    c->unsent += k->unsent;
    c->img_checked += k->img_checked;
    c->img_exact += k->img_exact;
    c->img_want += k->img_want;
    c->img_got += k->img_got;
    c->img_unreported += k->img_unreported;
    c->vid_checked += k->vid_checked;
    c->vid_exact += k->vid_exact;
    c->vid_want += k->vid_want;
    c->vid_got += k->vid_got;
    if (k->stopped_by && (!c->stopped_by || k->stopped_at_s < c->stopped_at_s)) {
        snprintf(r->stop_by, sizeof r->stop_by, "%s", k->stopped_by); /* the first rank's */
        c->stopped_by = r->stop_by;
        c->stopped_at_s = k->stopped_at_s;
    }
    c->off = c->off || k->off;
    c->saturated = c->saturated || k->saturated;
}

bool lt_analyze_check_flagged(const struct lt_analyze_run *r)
{
    return r->n_checks && (r->check.off || r->check.saturated);
}

static double cpu_share(const struct lt_check *k)
{
    return k->wall_s > 0 ? k->cpu_s / k->wall_s : 0;
}

/* A rate as measurable: 4 significant digits, whole numbers from 10^4
 * up (never 1.045e+04). */
static const char *rate_str(double v, char *b, size_t n)
{
    snprintf(b, n, v >= 1e4 ? "%.0f" : "%.4g", v);
    return b;
}

static double pct_off(double got, double asked)
{
    return asked > 0 ? 100.0 * (got / asked - 1) : 0;
}

void lt_analyze_check_describe(const struct lt_check *k, uint32_t ranks, char *buf, size_t n)
{
    size_t u = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (u < n) {                                                                               \
            int w_ = snprintf(buf + u, n - u, __VA_ARGS__);                                        \
            u += w_ > 0 ? (size_t)w_ : 0;                                                          \
        }                                                                                          \
    } while (0)
    buf[0] = '\0';
    if (k->batch) {
        /* A batch holds no load: its rate is its send span's, a figure of
         * the client's loop, and its mean in flight only falls as it ends. */
        PUT("a batch of %llu request%s", (unsigned long long)k->sent, k->sent == 1 ? "" : "s");
        if (k->sent > 1)
            PUT(", sent over %.3g ms", 1e3 * k->span_s);
        PUT(" (no more requests than the level: nothing to hold); ");
    } else {
        PUT("delivered ");
        char g[32], a[32];
        if (k->rate_asked > 0)
            PUT("%s req/s of %s asked (%+.1f %%), ", rate_str(k->rate_got, g, sizeof g),
                rate_str(k->rate_asked, a, sizeof a), pct_off(k->rate_got, k->rate_asked));
        else if (k->rate_got > 0)
            PUT("%s req/s, ", rate_str(k->rate_got, g, sizeof g));
        if (k->inflight_asked > 0)
            PUT("%.3g in flight of %.4g asked (%+.1f %%) while the level was held; ",
                k->inflight_got, k->inflight_asked, pct_off(k->inflight_got, k->inflight_asked));
        else
            PUT("%.3g in flight on average; ", k->inflight_got);
    }
    PUT("client CPU %.1f %% of a core", 100 * cpu_share(k));
    if (k->requests)
        PUT(", %.0f us a request", 1e6 * k->cpu_s / (double)k->requests);
    if (k->out_tokens)
        PUT(", %.2f us a token", 1e6 * k->cpu_s / (double)k->out_tokens);
    PUT(" (%llu sent of %llu", (unsigned long long)k->sent, (unsigned long long)k->requests);
    if (ranks > 1)
        PUT(", %u ranks", ranks);
    PUT(")");
    if (k->img_checked)
        PUT("; image tokens vs the server's usage: %llu of %llu requests exact, %llu counted of "
            "%llu recorded (%+.1f %%)",
            (unsigned long long)k->img_exact, (unsigned long long)k->img_checked,
            (unsigned long long)k->img_got, (unsigned long long)k->img_want,
            pct_off((double)k->img_got, (double)k->img_want));
    if (k->vid_checked)
        PUT("; video tokens vs the server's usage: %llu of %llu requests exact, %llu counted of "
            "%llu recorded (%+.1f %%)",
            (unsigned long long)k->vid_exact, (unsigned long long)k->vid_checked,
            (unsigned long long)k->vid_got, (unsigned long long)k->vid_want,
            pct_off((double)k->vid_got, (double)k->vid_want));
    if (k->img_unreported)
        PUT("; %llu requests with images whose usage said no image tokens (not checked)",
            (unsigned long long)k->img_unreported);
#undef PUT
}

void lt_analyze_check_line(const struct lt_analyze_run *r, char *buf, size_t n)
{
    lt_analyze_check_describe(&r->check, r->n_checks, buf, n);
}

int lt_analyze_check_flags(const struct lt_analyze *a, char (*w)[LT_ANALYZE_FLAG_LEN], int max)
{
    int n = 0;
    for (uint32_t i = 0; i < a->n_runs && n < max; i++) {
        const struct lt_analyze_run *r = a->runs[i];
        if (!lt_analyze_check_flagged(r))
            continue;
        const struct lt_check *k = &r->check;
        char lev[48];
        lt__analyze_level(r, lev, sizeof lev);
        if (k->off && n < max) {
            if (k->rate_asked > 0)
                snprintf(w[n++], LT_ANALYZE_FLAG_LEN,
                         "CHECK run %u (%s): the load delivered is more than 5 %% off what was "
                         "asked: %.4g req/s sent of %.4g asked (%+.1f %%); its latencies and "
                         "throughput are of the load delivered, not of the load asked",
                         r->id, lev, k->rate_got, k->rate_asked,
                         pct_off(k->rate_got, k->rate_asked));
            else
                snprintf(w[n++], LT_ANALYZE_FLAG_LEN,
                         "CHECK run %u (%s): the load delivered is more than 5 %% off what was "
                         "asked: %.3g in flight on average of %.4g asked (%+.1f %%) while the "
                         "level was held; its "
                         "latencies and throughput are of the load delivered, not of the load "
                         "asked",
                         r->id, lev, k->inflight_got, k->inflight_asked,
                         pct_off(k->inflight_got, k->inflight_asked));
        }
        if (k->saturated && n < max)
            snprintf(w[n++], LT_ANALYZE_FLAG_LEN,
                     "CHECK run %u (%s): the client was near saturation (%.0f %% of a core): "
                     "its own delays are in its latencies",
                     r->id, lev, 100 * cpu_share(k));
    }
    return n;
}

void lt_analyze_stop_line(const struct lt_analyze_run *r, char *buf, size_t n)
{
    const struct lt_check *k = &r->check;
    size_t u = 0;
    int w;
    if (r->n_checks && k->stopped_by) {
        const char *by = !strcmp(k->stopped_by, "caller") ? "its caller" : k->stopped_by;
        w = snprintf(buf, n, "stopped by %s at %.1f s%s: ", by, k->stopped_at_s,
                     strcmp(r->target, "sim:virtual") ? "" : " of model time");
    } else {
        w = snprintf(buf, n, "stopped: ");
    }
    u = w > 0 && (size_t)w < n ? (size_t)w : n - 1;
    snprintf(buf + u, n - u,
             "%llu requests never sent (not errors: the run ended before their time); the "
             "figures are of the %llu sent",
             (unsigned long long)r->unsent, (unsigned long long)r->sent);
}

void lt_analyze_check_text(const struct lt_analyze *a, FILE *out)
{
    char w[LT_ANALYZE_FLAGS_MAX][LT_ANALYZE_FLAG_LEN];
    int n = lt_analyze_check_flags(a, w, LT_ANALYZE_FLAGS_MAX);
    for (int i = 0; i < n; i++)
        fprintf(out, "%s\n", w[i]);
    for (uint32_t i = 0; i < a->n_runs; i++) {
        const struct lt_analyze_run *r = a->runs[i];
        if (!r->unsent && !(r->n_checks && r->check.stopped_by))
            continue;
        char lev[48], line[LT_ANALYZE_FLAG_LEN];
        lt__analyze_level(r, lev, sizeof lev);
        lt_analyze_stop_line(r, line, sizeof line);
        fprintf(out, "STOPPED run %u (%s): %s\n", r->id, lev, line);
        n++;
    }
    for (uint32_t i = 0; i < a->n_runs; i++) {
        const struct lt_analyze_run *r = a->runs[i];
        char lev[48], line[2 * LT_ANALYZE_FLAG_LEN];
        if (!lt_analyze_overload(r, line, sizeof line))
            continue;
        lt__analyze_level(r, lev, sizeof lev);
        fprintf(out, "OVERLOADED run %u (%s): %s\n", r->id, lev, line);
        n++;
    }
    if (n)
        fputc('\n', out);
}

void lt_analyze_check_json(const struct lt_analyze_run *r, FILE *out)
{
    fprintf(out, ", \"check\": ");
    if (!r->n_checks) {
        fprintf(out, "null");
        return;
    }
    const struct lt_check *k = &r->check;
    fprintf(out, "{\"requests\": %llu, \"sent\": %llu, \"out_tokens\": %llu, \"rate_asked\": ",
            (unsigned long long)k->requests, (unsigned long long)k->sent,
            (unsigned long long)k->out_tokens);
    lt_analyze_jnum(out, k->rate_asked > 0 ? k->rate_asked : NAN);
    fprintf(out, ", \"rate_got\": ");
    lt_analyze_jnum(out, k->rate_got);
    fprintf(out, ", \"inflight_asked\": ");
    lt_analyze_jnum(out, k->inflight_asked > 0 ? k->inflight_asked : NAN);
    fprintf(out, ", \"inflight_got\": ");
    lt_analyze_jnum(out, k->inflight_got);
    fprintf(out, ", \"cpu_s\": ");
    lt_analyze_jnum(out, k->cpu_s);
    fprintf(out, ", \"wall_s\": ");
    lt_analyze_jnum(out, k->wall_s);
    fprintf(out, ", \"cpu_share\": ");
    lt_analyze_jnum(out, cpu_share(k));
    fprintf(out, ", \"cpu_us_per_request\": ");
    lt_analyze_jnum(out, k->requests ? 1e6 * k->cpu_s / (double)k->requests : NAN);
    fprintf(out, ", \"cpu_us_per_token\": ");
    lt_analyze_jnum(out, k->out_tokens ? 1e6 * k->cpu_s / (double)k->out_tokens : NAN);
    fprintf(out, ", \"span_s\": ");
    lt_analyze_jnum(out, k->span_s);
    fprintf(out, ", \"batch\": %s", k->batch ? "true" : "false");
    fprintf(out, ", \"unsent\": %llu, \"stopped_by\": ", (unsigned long long)k->unsent);
    if (k->stopped_by)
        lt_analyze_jstr(out, k->stopped_by);
    else
        fputs("null", out);
    fprintf(out, ", \"stopped_at_s\": ");
    lt_analyze_jnum(out, k->stopped_by ? k->stopped_at_s : NAN);
    fprintf(out, ", \"off\": %s, \"saturated\": %s, \"flagged\": %s, \"reports\": %u}",
            k->off ? "true" : "false", k->saturated ? "true" : "false",
            lt_analyze_check_flagged(r) ? "true" : "false", r->n_checks);
}

void lt_analyze_check_csv(const struct lt_analyze_run *r, FILE *out)
{
    const struct lt_check *k = &r->check;
    if (!r->n_checks) {
        fprintf(out, ",,,,,,,,");
        return;
    }
    fprintf(out, ",%.6g,%.6g,%.6g,%.6g,%.6f,%.3f,%.3f,%s", k->rate_asked, k->rate_got,
            k->inflight_asked, k->inflight_got, cpu_share(k),
            k->requests ? 1e6 * k->cpu_s / (double)k->requests : 0,
            k->out_tokens ? 1e6 * k->cpu_s / (double)k->out_tokens : 0,
            k->off && k->saturated ? "off+saturated"
            : k->off               ? "off"
            : k->saturated         ? "saturated"
                                   : "ok");
}

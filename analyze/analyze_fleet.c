/*
 * A fleet's runs (replay --target URL1,URL2,...; docs/replay.md "Fleets
 * and routing"): the figures of each replica and how evenly the router
 * spread the load. The run record names the replicas in order
 * ("replicas"), each result its replica ("replica": the index); the
 * replicas' own /metrics, where scraped, give each one's prefix-cache hit
 * rate (the hits and queries counters between its first and last scrape
 * of the run), else the hit rate of the usage its answers reported. Files
 * without these keys (one target, or older files) have no fleet: nothing
 * here is shown for them.
 */
#include "analyze/analyze_internal.h"

#include "analyze/analyze_json.h"
#include "metrics/prom_map.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void replica_free(struct lt_analyze_replica *p)
{
    free(p->iv);
    free(p->ttft);
}

void lt__analyze_fleet_free(struct lt_analyze_fleet *f)
{
    if (!f)
        return;
    for (uint32_t i = 0; i < f->n; i++)
        replica_free(&f->r[i]);
    free(f->r);
    free(f);
}

int lt__analyze_fleet_run(struct lt_analyze_run *r, const struct lt_run *run, struct lt_err *err)
{
    char label[256];
    uint32_t n = 0;
    while (n < LT_ANALYZE_REPLICAS_MAX &&
           lt_extra_get_strs(&run->extra, "replicas", n, label, sizeof label))
        n++;
    if (n < 2 || r->fleet)
        return 0;
    struct lt_analyze_fleet *f = calloc(1, sizeof *f);
    if (!f || !(f->r = calloc(n, sizeof *f->r))) {
        free(f);
        return lt_errset(err, LT_ENOMEM, "analyze: out of memory");
    }
    f->n = n;
    for (uint32_t i = 0; i < n; i++)
        lt_extra_get_strs(&run->extra, "replicas", i, f->r[i].label, sizeof f->r[i].label);
    lt_extra_get_str(&run->extra, "route", f->route, sizeof f->route);
    int64_t fo;
    f->failover = lt_extra_get_int(&run->extra, "failover", &fo) && fo;
    r->fleet = f;
    return 0;
}

static int push(void **v, size_t *n, size_t *cap, size_t size, struct lt_err *err)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        void *q = realloc(*v, nc * size);
        if (!q)
            return lt_errset(err, LT_ENOMEM, "analyze: out of memory");
        *v = q;
        *cap = nc;
    }
    return 0;
}

int lt__analyze_fleet_result(struct lt_analyze_run *r, const struct lt_result *res,
                             enum lt__analyze_outcome oc, struct lt_err *err)
{
    struct lt_analyze_fleet *f = r->fleet;
    int64_t i;
    if (!f || !lt_extra_get_int(&res->extra, "replica", &i))
        return 0;
    if (i < 0 || i >= (int64_t)f->n) {
        f->unknown++;
        return 0;
    }
    struct lt_analyze_replica *p = &f->r[i];
    int64_t from;
    if (lt_extra_get_int(&res->extra, "failover_from", &from) && from >= 0 && from < (int64_t)f->n)
        f->r[from].failed_over++;
    if (oc == LT_AO_CANCELLED)
        return 0;
    p->requests++;
    if (oc == LT_AO_ERROR) {
        p->errors++;
    } else {
        p->ok++;
        p->out_tokens += res->out;
        p->in_tokens += res->in;
        if ((res->has & LT_RHAS_CACHED) && (res->has & LT_RHAS_IN)) {
            p->usage_cached += res->cached;
            p->usage_in += res->in;
        }
        if ((res->has & LT_RHAS_FIRST_TOKEN) && res->first_token >= res->sent) {
            int rc = push((void **)&p->ttft, &p->n_ttft, &p->cap_ttft, sizeof *p->ttft, err);
            if (rc < 0)
                return rc;
            p->ttft[p->n_ttft++] = (double)(res->first_token - res->sent) / 1e3;
        }
    }
    if ((res->has & LT_RHAS_SENT) && (res->has & LT_RHAS_END) && res->end >= res->sent) {
        int rc = push((void **)&p->iv, &p->n_iv, &p->cap_iv, sizeof *p->iv, err);
        if (rc < 0)
            return rc;
        p->iv[p->n_iv][0] = res->sent;
        p->iv[p->n_iv][1] = res->end;
        p->n_iv++;
    }
    return 0;
}

bool lt__analyze_fleet_scrape(struct lt_analyze_run *r, const struct lt_scrape *sc)
{
    struct lt_analyze_fleet *f = r->fleet;
    if (!f || !sc->ep)
        return false;
    size_t el = strlen(sc->ep);
    for (uint32_t i = 0; i < f->n; i++) {
        struct lt_analyze_replica *p = &f->r[i];
        size_t ll = strlen(p->label);
        if (el != ll + 8 || strncmp(sc->ep, p->label, ll) || strcmp(sc->ep + ll, "/metrics"))
            continue;
        if (sc->err)
            return true;
        double h = NAN, q = NAN;
        for (uint32_t k = 0; k < sc->nv; k++) {
            if (!strcmp(sc->v[k].name, lt_prom_map_canon_name(LT_PM_PREFIX_HITS)))
                h = sc->v[k].v;
            else if (!strcmp(sc->v[k].name, lt_prom_map_canon_name(LT_PM_PREFIX_QUERIES)))
                q = sc->v[k].v;
        }
        if (!isnan(h) && !isnan(q)) {
            if (!p->scraped) {
                p->hits0 = h;
                p->queries0 = q;
            }
            p->scraped = true;
            p->hits1 = h;
            p->queries1 = q;
        }
        /* Not the server section's: it follows one server, and the
         * replicas' counters mixed would be no one's. */
        return true;
    }
    return false;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static int cmp_ev(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]); /* an end (-1) before a start (+1) at one time */
}
static double pct(const double *v, size_t n, double p)
{
    if (!n)
        return NAN;
    size_t k = (size_t)ceil(p / 100 * (double)n);
    return v[k ? k - 1 : 0];
}

void lt__analyze_fleet_finish(struct lt_analyze_run *r)
{
    struct lt_analyze_fleet *f = r->fleet;
    if (!f)
        return;
    uint64_t sum = 0, max = 0;
    for (uint32_t i = 0; i < f->n; i++) {
        struct lt_analyze_replica *p = &f->r[i];
        sum += p->requests;
        if (p->requests > max)
            max = p->requests;
        qsort(p->ttft, p->n_ttft, sizeof *p->ttft, cmp_dbl);
        p->ttft_p50 = pct(p->ttft, p->n_ttft, 50);
        p->ttft_p99 = pct(p->ttft, p->n_ttft, 99);
        /* In flight: the mean over the run's wall time, and the peak,
         * from the client's send..end of each request. */
        double busy = 0;
        int64_t(*ev)[2] = malloc(2 * p->n_iv * sizeof *ev);
        for (size_t k = 0; k < p->n_iv; k++) {
            busy += (double)(p->iv[k][1] - p->iv[k][0]);
            if (ev) {
                ev[2 * k][0] = p->iv[k][0], ev[2 * k][1] = 1;
                ev[2 * k + 1][0] = p->iv[k][1], ev[2 * k + 1][1] = -1;
            }
        }
        p->inflight_mean = r->wall_s > 0 ? busy / 1e6 / r->wall_s : NAN;
        if (ev) {
            qsort(ev, 2 * p->n_iv, sizeof *ev, cmp_ev);
            int64_t cur = 0;
            for (size_t k = 0; k < 2 * p->n_iv; k++)
                if ((cur += ev[k][1]) > (int64_t)p->inflight_peak)
                    p->inflight_peak = (uint32_t)cur;
            free(ev);
        }
        p->hit_rate = p->scraped && p->queries1 > p->queries0
                          ? (p->hits1 - p->hits0) / (p->queries1 - p->queries0)
                      : p->usage_in ? (double)p->usage_cached / (double)p->usage_in
                                    : NAN;
        p->hit_from = p->scraped && p->queries1 > p->queries0 ? "metrics"
                      : p->usage_in                           ? "usage"
                                                              : NULL;
    }
    double mean = (double)sum / f->n;
    f->balance = mean > 0 ? (double)max / mean : NAN;
    double h = 0, q = 0, uh = 0, uq = 0;
    for (uint32_t i = 0; i < f->n; i++) {
        if (f->r[i].scraped) {
            h += f->r[i].hits1 - f->r[i].hits0;
            q += f->r[i].queries1 - f->r[i].queries0;
        }
        uh += (double)f->r[i].usage_cached;
        uq += (double)f->r[i].usage_in;
    }
    /* The replicas' counters, else (nothing scraped, or a reader that
     * does not read scrapes: compare) their answers' usage. */
    f->hit_rate = q > 0 ? h / q : uq > 0 ? uh / uq : NAN;
    f->hit_from = q > 0 ? "metrics" : uq > 0 ? "usage" : NULL;
}

void lt__analyze_fleet_text(const struct lt_analyze_run *r, FILE *out)
{
    const struct lt_analyze_fleet *f = r->fleet;
    if (!f)
        return;
    fprintf(out, "  fleet: %u replicas, route %s, %s; load balance (max/mean requests) %.2f\n",
            f->n, f->route[0] ? f->route : "?",
            f->failover ? "failover on" : "failures recorded as errors", f->balance);
    if (!isnan(f->hit_rate)) {
        fprintf(out, "    prefix-cache hit rate over the fleet (%s) %.1f %%",
                strcmp(f->hit_from, "metrics") ? "its answers' usage" : "its /metrics",
                100 * f->hit_rate);
        if (!isnan(r->trace_hit))
            fprintf(out, "; the trace predicts %.1f %% on one server with every prefix",
                    100 * r->trace_hit);
        fputc('\n', out);
    }
    fprintf(out, "    %-3s %-32s %8s %8s %10s %10s %9s %6s %9s %9s %8s\n", "#", "replica",
            "requests", "errors", "in tok", "out tok", "inflight", "peak", "TTFT p50", "TTFT p99",
            "hit rate");
    for (uint32_t i = 0; i < f->n; i++) {
        const struct lt_analyze_replica *p = &f->r[i];
        char hit[24] = "-";
        if (p->hit_from)
            snprintf(hit, sizeof hit, "%.1f %%%s", 100 * p->hit_rate,
                     strcmp(p->hit_from, "metrics") ? "*" : "");
        char t50[16] = "-", t99[16] = "-";
        if (!isnan(p->ttft_p50))
            snprintf(t50, sizeof t50, "%.1f", p->ttft_p50);
        if (!isnan(p->ttft_p99))
            snprintf(t99, sizeof t99, "%.1f", p->ttft_p99);
        fprintf(out, "    %-3u %-32.32s %8llu %8llu %10llu %10llu %9.2f %6u %9s %9s %8s",
                (unsigned)i, p->label, (unsigned long long)p->requests,
                (unsigned long long)p->errors, (unsigned long long)p->in_tokens,
                (unsigned long long)p->out_tokens, p->inflight_mean, (unsigned)p->inflight_peak,
                t50, t99, hit);
        if (p->failed_over)
            fprintf(out, "  (%llu failed over from it)", (unsigned long long)p->failed_over);
        fputc('\n', out);
    }
    fprintf(out, "    (TTFT in ms; hit rate from each replica's /metrics, * from its answers' "
                 "usage)\n");
}

void lt__analyze_fleet_json(const struct lt_analyze_run *r, FILE *out)
{
    const struct lt_analyze_fleet *f = r->fleet;
    fprintf(out, ",\n     \"fleet\": ");
    if (!f) {
        fprintf(out, "null");
        return;
    }
    fprintf(out, "{\"route\": ");
    lt_analyze_jstr(out, f->route);
    fprintf(out, ", \"failover\": %s, \"balance\": ", f->failover ? "true" : "false");
    lt_analyze_jnum(out, f->balance);
    fprintf(out, ", \"hit_rate\": ");
    lt_analyze_jnum(out, f->hit_rate);
    fprintf(out, ", \"hit_rate_from\": ");
    if (f->hit_from)
        lt_analyze_jstr(out, f->hit_from);
    else
        fprintf(out, "null");
    fprintf(out, ", \"replicas\": [");
    for (uint32_t i = 0; i < f->n; i++) {
        const struct lt_analyze_replica *p = &f->r[i];
        fprintf(out, "%s\n       {\"url\": ", i ? "," : "");
        lt_analyze_jstr(out, p->label);
        fprintf(out,
                ", \"requests\": %llu, \"ok\": %llu, \"errors\": %llu, \"failed_over\": %llu, "
                "\"in_tokens\": %llu, \"out_tokens\": %llu, \"inflight_mean\": ",
                (unsigned long long)p->requests, (unsigned long long)p->ok,
                (unsigned long long)p->errors, (unsigned long long)p->failed_over,
                (unsigned long long)p->in_tokens, (unsigned long long)p->out_tokens);
        lt_analyze_jnum(out, p->inflight_mean);
        fprintf(out, ", \"inflight_peak\": %u, \"ttft_p50_ms\": ", (unsigned)p->inflight_peak);
        lt_analyze_jnum(out, p->ttft_p50);
        fprintf(out, ", \"ttft_p99_ms\": ");
        lt_analyze_jnum(out, p->ttft_p99);
        fprintf(out, ", \"hit_rate\": ");
        lt_analyze_jnum(out, p->hit_from ? p->hit_rate : NAN);
        fprintf(out, ", \"hit_rate_from\": ");
        if (p->hit_from)
            lt_analyze_jstr(out, p->hit_from);
        else
            fprintf(out, "null");
        fprintf(out, "}");
    }
    fprintf(out, "]}");
}

/* ---- two routers compared (compare A B) ---- */

static void side(const struct lt_analyze_run *r, const char **route, uint32_t *n, double *hit,
                 double *bal)
{
    const struct lt_analyze_fleet *f = r->fleet;
    *route = f && f->route[0] ? f->route : f ? "?" : "one target";
    *n = f ? f->n : 1;
    *hit = f ? f->hit_rate : NAN;
    *bal = f ? f->balance : NAN;
}

static void pct_or_dash(char *buf, size_t n, double v, double scale, const char *unit)
{
    if (isnan(v))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.*f%s", scale > 1 ? 1 : 2, v * scale, unit);
}

void lt__analyze_fleet_compare_text(const struct lt_analyze_run *a, const struct lt_analyze_run *b,
                                    FILE *out)
{
    if (!a->fleet && !b->fleet)
        return;
    const char *ra, *rb;
    uint32_t na, nb;
    double ha, hb, ba, bb;
    side(a, &ra, &na, &ha, &ba);
    side(b, &rb, &nb, &hb, &bb);
    char h1[24], h2[24], b1[24], b2[24];
    pct_or_dash(h1, sizeof h1, ha, 100, " %");
    pct_or_dash(h2, sizeof h2, hb, 100, " %");
    pct_or_dash(b1, sizeof b1, ba, 1, "");
    pct_or_dash(b2, sizeof b2, bb, 1, "");
    fprintf(out,
            "  routers: A %s over %u replicas, B %s over %u: prefix-cache hit rate %s -> %s, "
            "load balance (max/mean) %s -> %s",
            ra, (unsigned)na, rb, (unsigned)nb, h1, h2, b1, b2);
    if (na != nb)
        fprintf(out, "; B uses %u replica%s %s", (unsigned)(na > nb ? na - nb : nb - na),
                (na > nb ? na - nb : nb - na) == 1 ? "" : "s", na > nb ? "fewer" : "more");
    fputc('\n', out);
}

static void jside(const struct lt_analyze_run *r, FILE *out)
{
    const char *route;
    uint32_t n;
    double hit, bal;
    side(r, &route, &n, &hit, &bal);
    fprintf(out, "{\"route\": ");
    lt_analyze_jstr(out, route);
    fprintf(out, ", \"replicas\": %u, \"hit_rate\": ", (unsigned)n);
    lt_analyze_jnum(out, hit);
    fprintf(out, ", \"balance\": ");
    lt_analyze_jnum(out, bal);
    fputc('}', out);
}

void lt__analyze_fleet_compare_json(const struct lt_analyze_run *a, const struct lt_analyze_run *b,
                                    FILE *out)
{
    fprintf(out, ",\n     \"fleet\": ");
    if (!a->fleet && !b->fleet) {
        fprintf(out, "null");
        return;
    }
    uint32_t na = a->fleet ? a->fleet->n : 1, nb = b->fleet ? b->fleet->n : 1;
    fprintf(out, "{\"a\": ");
    jside(a, out);
    fprintf(out, ", \"b\": ");
    jside(b, out);
    fprintf(out, ", \"replicas_saved\": %lld}", (long long)na - (long long)nb);
}

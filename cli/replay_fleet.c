/*
 * The fleet's options (see replay_fleet.h).
 */
#include "cli/replay_fleet.h"

#include "analyze/analyze.h"
#include "cli/cli_util.h"
#include "experiments/replicas.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One target: URL, optionally =W (a weight after the URL's authority). */
static bool add_one(struct cli_fleet *f, const char *s, size_t len, const char *where)
{
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
        len--;
    while (len && (*s == ' ' || *s == '\t'))
        s++, len--;
    if (!len) {
        cli_error("replay", "%s: an empty target", where);
        return false;
    }
    if (f->n >= LT_ROUTE_MAX) {
        cli_error("replay", "%s: more than %d targets", where, LT_ROUTE_MAX);
        return false;
    }
    /* Kept for the process's life (the options point into it): static,
     * so nothing is left to free on any of the command's exits. */
    static char pool[1 << 17];
    static size_t used;
    if (used + len + 1 > sizeof pool) {
        cli_error("replay", "%s: the targets are too long in all", where);
        return false;
    }
    char *t = pool + used;
    memcpy(t, s, len);
    t[len] = '\0';
    used += len + 1;
    uint32_t w = 1;
    /* The weight: "=W" or a second column; a URL's own '=' (a query) sits
     * after a '?', which a base URL does not have. */
    char *sep = strrchr(t, '=');
    char *sp = strpbrk(t, " \t");
    if (sp && (!sep || sp < sep))
        sep = sp;
    if (sep) {
        char *v = sep + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        char *end;
        errno = 0;
        long x = strtol(v, &end, 10);
        if (end == v || *end || errno || x < 1 || x > LT_ROUTE_WEIGHT_MAX) {
            cli_error("replay", "%s: target '%s': the weight must be an integer 1 to %d", where, t,
                      LT_ROUTE_WEIGHT_MAX);
            return false;
        }
        *sep = '\0';
        w = (uint32_t)x;
        f->weighted = true;
    }
    f->urls[f->n] = t;
    f->weights[f->n] = w;
    f->n++;
    return true;
}

bool cli_fleet_add_list(struct cli_fleet *f, const char *list)
{
    const char *p = list;
    for (;;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (!add_one(f, p, len, "--target"))
            return false;
        if (!c)
            return true;
        p = c + 1;
    }
}

bool cli_fleet_add_file(struct cli_fleet *f, const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        cli_error("replay", "--targets %s: %s", path, strerror(errno));
        return false;
    }
    char line[2048], where[1100];
    unsigned ln = 0;
    bool ok = true;
    size_t before = f->n;
    while (ok && fgets(line, sizeof line, fp)) {
        ln++;
        size_t len = strcspn(line, "#\n");
        size_t k = 0;
        while (k < len && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r'))
            k++;
        if (k == len)
            continue;
        snprintf(where, sizeof where, "--targets %.1000s:%u", path, ln);
        ok = add_one(f, line, len, where);
    }
    if (ok && ferror(fp)) {
        cli_error("replay", "--targets %s: %s", path, strerror(errno));
        ok = false;
    }
    fclose(fp);
    if (ok && f->n == before) {
        cli_error("replay", "--targets %s: no target in it", path);
        ok = false;
    }
    return ok;
}

bool cli_fleet_apply(struct cli_fleet *f, struct lt_replay_opts *o, bool virt)
{
    if (f->weighted && !f->route_set)
        f->route.policy = LT_ROUTE_WEIGHTED;
    if (f->weighted && f->route.policy != LT_ROUTE_WEIGHTED) {
        cli_error("replay", "target weights apply to --route weighted, not --route %s",
                  lt_route_name(f->route.policy));
        return false;
    }
    if (f->replicas && !virt) {
        cli_error("replay", "--replicas N is the virtual fleet's (--virtual); live, give the "
                            "replicas with --target URL1,URL2,... or --targets FILE");
        return false;
    }
    if (f->n > 1) {
        o->target = f->urls[0];
        o->targets = f->urls;
        o->n_targets = f->n;
    } else if (f->n == 1) {
        o->target = f->urls[0];
    }
    if (f->route_set && f->n < 2 && !f->replicas && !f->find_replicas) {
        cli_error("replay", "--route chooses among several targets: give --target URL1,URL2,... "
                            "or --targets FILE (or --virtual --replicas N)");
        return false;
    }
    o->route = f->route;
    o->route.weights = f->weighted ? f->weights : NULL;
    if (f->replicas) /* the virtual fleet: N model instances */
        o->route.n = f->replicas;
    if (o->failover && f->n < 2) {
        cli_error("replay", "--failover moves requests to another target: give several");
        return false;
    }
    return true;
}

void cli_fleet_print(const struct lt_replay_opts *o, const struct lt_replay_stats *st)
{
    if (!st->n_replicas)
        return;
    uint64_t sum = 0, max = 0;
    for (size_t i = 0; i < st->n_replicas; i++) {
        sum += st->replicas[i].requests;
        if (st->replicas[i].requests > max)
            max = st->replicas[i].requests;
    }
    double mean = (double)sum / (double)st->n_replicas;
    fprintf(stderr, "loadtrace replay: fleet of %zu, route %s%s; load balance (max/mean) %.2f\n",
            st->n_replicas, lt_route_name(o->route.policy),
            o->failover ? ", --failover: a replica's failure sends its requests to another"
                        : "; a replica's failures are recorded as errors (--failover moves them)",
            mean > 0 ? (double)max / mean : 0);
    for (size_t i = 0; i < st->n_replicas; i++) {
        const struct lt_replay_replica *r = &st->replicas[i];
        char down[160] = "";
        if (r->down_at_us >= 0)
            snprintf(down, sizeof down, "; DOWN at %.2f s, %llu requests failed over from it",
                     (double)r->down_at_us / 1e6, (unsigned long long)r->failed_over);
        fprintf(stderr,
                "loadtrace replay:   replica %zu %s: %llu requests, %llu errors, %llu "
                "output tokens%s\n",
                i, r->label, (unsigned long long)r->requests, (unsigned long long)r->errors,
                (unsigned long long)r->out_tokens, down);
    }
    if (st->route_spilled)
        fprintf(stderr,
                "loadtrace replay:   prefix routing: %llu requests went past their first "
                "replica (its load bound)\n",
                (unsigned long long)st->route_spilled);
}

/* ---- --find-max replicas ---- */

struct replicas_ui {
    const struct lt_replay_opts *o;
    const struct cli_search_opts *s;
    double target;
};

static void on_begin(void *ud, const char *profile)
{
    const struct replicas_ui *u = ud;
    fprintf(stderr,
            "loadtrace replay: --find-max replicas: the fewest %s-routed replicas of profile "
            "%s that serve the trace at %g req/s with %.4g of requests within %s\n",
            lt_route_name(u->o->route.policy), profile, u->o->tt.rate, u->target, u->s->cap.slo);
}

static void on_probe(void *ud, uint32_t n, double attain, double ttft_p99_ms, bool meets)
{
    (void)ud;
    fprintf(stderr,
            "loadtrace replay:   %3u replicas: attainment %.4f, TTFT p99 from sched %.0f ms: %s\n",
            (unsigned)n, attain, ttft_p99_ms, meets ? "meets" : "fails");
}

static void print_replicas(const struct replicas_ui *u, const struct lt_replicas_result *r)
{
    const struct lt_replay_opts *o = u->o;
    const char *route = lt_route_name(o->route.policy);
    if (r->end == LT_REPLICAS_NONE)
        printf("no fleet of up to %u replicas meets the SLO at %g req/s (%u probes; at %u: "
               "attainment %.4f)\n",
               (unsigned)r->lo, o->tt.rate, (unsigned)r->probes, (unsigned)r->lo, r->attain_lo);
    else if (r->end == LT_REPLICAS_MAX_PROBES)
        printf("stopped after %u probes (--max-probes): between %u and %u replicas\n",
               (unsigned)r->probes, (unsigned)r->lo, (unsigned)r->hi);
    else if (r->lo)
        printf("replicas needed: %u (route %s, %g req/s, %s at %.4g): attainment %.4f at %u, "
               "%.4f at %u; TTFT p99 %.0f ms at %u, %.0f ms at %u\n",
               (unsigned)r->hi, route, o->tt.rate, u->s->cap.slo, u->target, r->attain_lo,
               (unsigned)r->lo, r->attain_hi, (unsigned)r->hi, r->p99_lo_ms, (unsigned)r->lo,
               r->p99_hi_ms, (unsigned)r->hi);
    else
        printf("replicas needed: 1 (route %s, %g req/s, %s at %.4g): attainment %.4f at 1; "
               "TTFT p99 %.0f ms\n",
               route, o->tt.rate, u->s->cap.slo, u->target, r->attain_hi, r->p99_hi_ms);
}

int cli_fleet_find_replicas(const struct lt_replay_opts *o, const struct lt_sim_opts *sim,
                            const struct cli_search_opts *s)
{
    struct replicas_ui u = {.o = o, .s = s, .target = s->cap.attain > 0 ? s->cap.attain : 0.9};
    struct lt_replicas_opts ro = {
        .profile = sim->profile,
        .slo_ttft_us = s->cap.slo_ttft_us,
        .slo_tpot_us = s->cap.slo_tpot_us,
        .slo_e2e_us = s->cap.slo_e2e_us,
        .attain = s->cap.attain,
        .max_probes = s->cap.max_probes,
        .dry_run = cli_dry_run(),
        .begin = s->quiet ? NULL : on_begin,
        .probe = s->quiet ? NULL : on_probe,
        .ud = &u,
    };
    struct lt_replicas_result r;
    struct lt_err err = {0};
    if (lt_replicas_search(o, &ro, &r, &err) < 0) {
        cli_error("replay", "%s", err.msg);
        return cli_fail_status(&err);
    }
    if (ro.dry_run)
        return 0;
    print_replicas(&u, &r);
    if (r.end != LT_REPLICAS_FOUND)
        return 1;
    if (!s->quiet)
        fprintf(stderr, "loadtrace replay: the run at %u replicas -> %s\n", (unsigned)r.hi,
                o->out_path);
    return 0;
}

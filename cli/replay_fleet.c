/*
 * The fleet's options (see replay_fleet.h).
 */
#include "cli/replay_fleet.h"

#include "analyze/analyze.h"
#include "cli/cli_util.h"
#include "experiments/vreplay.h"
#include "plan/plan_jobs.h"
#include "sim/sim_profile.h"

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

/* One probe: the virtual fleet of n at o's load into path; its
 * attainment (requests meeting the SLO from their scheduled time, of the
 * judged ones: replay --find-max's rule, analyze.h). */
static int probe_replicas(const struct lt_replay_opts *o, const struct lt_sim_profile *p,
                          const struct lt_plan_jobs *jobs, const struct cli_search_opts *s,
                          uint32_t n, const char *path, double *attain, double *ttft_p99_ms,
                          struct lt_err *err)
{
    struct lt_replay_opts po = *o;
    po.route.n = n;
    po.out_path = path;
    struct lt_sim_vreplay vo;
    lt_vreplay_opts_init(&vo, &po, 1000000);
    vo.levels = NULL; /* a fleet is probed at o's rate, never in a closed loop */
    vo.n_levels = 0;
    struct lt_vreplay_fleet fleet;
    if (lt_vreplay_fleet_init(&fleet, &po, &vo, err) < 0) {
        lt_vreplay_fleet_release(&fleet);
        return err->code;
    }
    struct lt_sim_vstats tot = {0};
    int rc = lt_sim_virtual_replay(p, jobs, &vo, &tot, err);
    lt_vreplay_fleet_release(&fleet);
    if (rc < 0)
        return rc;
    struct lt_analyze_opts ao;
    lt_analyze_opts_init(&ao);
    ao.slo_ttft_us = s->slo_ttft_us;
    ao.slo_tpot_us = s->slo_tpot_us;
    ao.slo_e2e_us = s->slo_e2e_us;
    struct lt_analyze a = {0};
    rc = lt_analyze_file(path, &ao, &a, err);
    if (rc == 0 && a.n_runs < 1)
        rc = lt_errset(err, LT_EFORMAT, "%s: the probe recorded no run", path);
    if (rc == 0) {
        struct lt_analyze_judged j;
        lt_analyze_probe_judged(a.runs[0], false, &j);
        *attain = j.judged ? (double)a.runs[0]->good_sched / (double)j.judged : 0;
        *ttft_p99_ms = lt_hist_value_at(a.runs[0]->h[LT_AM_TTFT_S], 99) / 1e3;
    }
    lt_analyze_release(&a);
    return rc;
}

int cli_fleet_find_replicas(const struct lt_replay_opts *o, const struct lt_sim_opts *sim,
                            const struct cli_search_opts *s)
{
    struct lt_err err = {0};
    struct lt_sim_profile p;
    if (lt_sim_profile_load(&p, sim->profile ? sim->profile : "default", &err) < 0 ||
        lt_sim_profile_check(&p, &err) < 0) {
        cli_error("replay", "%s", err.msg);
        return 2;
    }
    if (cli_dry_run())
        return 0;
    struct lt_plan_jobs jobs = {0};
    if (lt_plan_jobs_open(&jobs, o->trace_path, &err) < 0) {
        cli_error("replay", "%s", err.msg);
        lt_plan_jobs_close(&jobs);
        return 1;
    }
    double target = s->attain > 0 ? s->attain : 0.9;
    uint32_t max_probes = s->max_probes ? s->max_probes : 20;
    /* attainment by fleet size, -1 = not probed */
    static double att[LT_ROUTE_MAX + 1], p99[LT_ROUTE_MAX + 1];
    for (uint32_t i = 0; i <= LT_ROUTE_MAX; i++)
        att[i] = -1;
    char tmp[4096];
    int status = 1;
    uint32_t probes = 0, lo = 0, hi = 0; /* lo: largest failing, hi: smallest meeting */
    if (!s->quiet)
        fprintf(stderr,
                "loadtrace replay: --find-max replicas: the fewest %s-routed replicas of profile "
                "%s that serve the trace at %g req/s with %.4g of requests within %s\n",
                lt_route_name(o->route.policy), p.name, o->tt.rate, target, s->slo);
    /* Grow by doubling until a fleet meets the SLO, then bisect. */
    uint32_t n = 1;
    while (probes < max_probes) {
        snprintf(tmp, sizeof tmp, "%s.replicas-%u.tmp", o->out_path, (unsigned)n);
        int rc = probe_replicas(o, &p, &jobs, s, n, tmp, &att[n], &p99[n], &err);
        probes++;
        if (rc < 0) {
            cli_error("replay", "probe of %u replicas: %s", (unsigned)n, err.msg);
            remove(tmp);
            goto out;
        }
        bool meets = att[n] >= target;
        if (!s->quiet)
            fprintf(stderr,
                    "loadtrace replay:   %3u replicas: attainment %.4f, TTFT p99 from sched "
                    "%.0f ms: %s\n",
                    (unsigned)n, att[n], p99[n], meets ? "meets" : "fails");
        if (meets) {
            if (hi && hi != n) {
                snprintf(tmp, sizeof tmp, "%s.replicas-%u.tmp", o->out_path, (unsigned)hi);
                remove(tmp);
            }
            hi = n;
        } else {
            remove(tmp);
            lo = n;
        }
        if (hi && hi - lo <= 1)
            break;
        if (!hi) {
            if (n == LT_ROUTE_MAX)
                break;
            n = n * 2 > LT_ROUTE_MAX ? LT_ROUTE_MAX : n * 2;
        } else {
            n = lo + (hi - lo) / 2;
        }
    }
    if (!hi) {
        printf("no fleet of up to %u replicas meets the SLO at %g req/s (%u probes; at %u: "
               "attainment %.4f)\n",
               (unsigned)lo, o->tt.rate, (unsigned)probes, (unsigned)lo, att[lo]);
        goto out;
    }
    if (hi - lo > 1) {
        snprintf(tmp, sizeof tmp, "%s.replicas-%u.tmp", o->out_path, (unsigned)hi);
        remove(tmp);
        printf("stopped after %u probes (--max-probes): between %u and %u replicas\n",
               (unsigned)probes, (unsigned)lo, (unsigned)hi);
        goto out;
    }
    snprintf(tmp, sizeof tmp, "%s.replicas-%u.tmp", o->out_path, (unsigned)hi);
    if (rename(tmp, o->out_path) != 0) {
        cli_error("replay", "cannot move %s to %s: %s", tmp, o->out_path, strerror(errno));
        goto out;
    }
    if (lo)
        printf("replicas needed: %u (route %s, %g req/s, %s at %.4g): attainment %.4f at %u, "
               "%.4f at %u; TTFT p99 %.0f ms at %u, %.0f ms at %u\n",
               (unsigned)hi, lt_route_name(o->route.policy), o->tt.rate, s->slo, target, att[lo],
               (unsigned)lo, att[hi], (unsigned)hi, p99[lo], (unsigned)lo, p99[hi], (unsigned)hi);
    else
        printf("replicas needed: 1 (route %s, %g req/s, %s at %.4g): attainment %.4f at 1; "
               "TTFT p99 %.0f ms\n",
               lt_route_name(o->route.policy), o->tt.rate, s->slo, target, att[1], p99[1]);
    if (!s->quiet)
        fprintf(stderr, "loadtrace replay: the run at %u replicas -> %s\n", (unsigned)hi,
                o->out_path);
    status = 0;
out:
    lt_plan_jobs_close(&jobs);
    return status;
}

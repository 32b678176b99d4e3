/*
 * The fewest virtual replicas that meet an SLO (see replicas.h). Each
 * probe is a virtual fleet's run into a file of its own beside the
 * output; the one that answers is renamed to it, the others removed.
 */
#include "experiments/replicas.h"

#include "analyze/analyze.h"
#include "experiments/vreplay.h"
#include "plan/plan_jobs.h"
#include "replay/route.h"
#include "sim/sim_profile.h"
#include "sim/sim_virtual.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct replicas_ctx {
    const struct lt_replay_opts *o;
    const struct lt_replicas_opts *s;
    struct lt_sim_profile p;
    struct lt_plan_jobs jobs;
    /* attainment and TTFT p99 by fleet size, att < 0: not probed */
    double att[LT_ROUTE_MAX + 1], p99[LT_ROUTE_MAX + 1];
};

static void probe_path(const struct replicas_ctx *c, uint32_t n, char *buf, size_t len)
{
    snprintf(buf, len, "%s.replicas-%u.tmp", c->o->out_path, (unsigned)n);
}

static void remove_probe(const struct replicas_ctx *c, uint32_t n)
{
    char tmp[4096];
    probe_path(c, n, tmp, sizeof tmp);
    remove(tmp);
}

/* One probe: the virtual fleet of n at o's load into path; its
 * attainment (requests meeting the SLO from their scheduled time, of the
 * judged ones: replay --find-max's rule, analyze.h). */
static int probe(struct replicas_ctx *c, uint32_t n, const char *path, struct lt_err *err)
{
    struct lt_replay_opts po = *c->o;
    po.route.n = n;
    po.out_path = path;
    struct lt_sim_vreplay vo;
    lt_vreplay_opts_init(&vo, &po, 1000000);
    vo.levels = NULL; /* a fleet is probed at o's rate, never in a closed loop */
    vo.n_levels = 0;
    struct lt_vreplay_fleet fleet;
    int rc = lt_vreplay_fleet_init(&fleet, &po, &vo, err);
    struct lt_sim_vstats tot = {0};
    if (rc == 0)
        rc = lt_sim_virtual_replay(&c->p, &c->jobs, &vo, &tot, err);
    lt_vreplay_fleet_release(&fleet);
    if (rc < 0)
        return rc;
    struct lt_analyze_opts ao;
    lt_analyze_opts_init(&ao);
    ao.slo_ttft_us = c->s->slo_ttft_us;
    ao.slo_tpot_us = c->s->slo_tpot_us;
    ao.slo_e2e_us = c->s->slo_e2e_us;
    struct lt_analyze a = {0};
    rc = lt_analyze_file(path, &ao, &a, err);
    if (rc == 0 && a.n_runs < 1)
        rc = lt_errset(err, LT_EFORMAT, "%s: the probe recorded no run", path);
    if (rc == 0) {
        struct lt_analyze_judged j;
        lt_analyze_probe_judged(a.runs[0], false, &j);
        c->att[n] = j.judged ? (double)a.runs[0]->good_sched / (double)j.judged : 0;
        c->p99[n] = lt_hist_value_at(a.runs[0]->h[LT_AM_TTFT_S], 99) / 1e3;
    }
    lt_analyze_release(&a);
    return rc;
}

/* Grow by doubling until a fleet meets the SLO, then bisect. Returns 0
 * or a negative code. */
static int search(struct replicas_ctx *c, struct lt_replicas_result *r, struct lt_err *err)
{
    const struct lt_replicas_opts *s = c->s;
    double target = s->attain > 0 ? s->attain : 0.9;
    uint32_t max_probes = s->max_probes ? s->max_probes : 20;
    uint32_t n = 1;
    char tmp[4096];
    while (r->probes < max_probes) {
        probe_path(c, n, tmp, sizeof tmp);
        int rc = probe(c, n, tmp, err);
        r->probes++;
        if (rc < 0) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            remove(tmp);
            return lt_errset(err, rc, "probe of %u replicas: %s", (unsigned)n, msg);
        }
        bool meets = c->att[n] >= target;
        if (s->probe)
            s->probe(s->ud, n, c->att[n], c->p99[n], meets);
        if (meets) {
            if (r->hi && r->hi != n)
                remove_probe(c, r->hi);
            r->hi = n;
        } else {
            remove(tmp);
            r->lo = n;
        }
        if (r->hi && r->hi - r->lo <= 1)
            break;
        if (!r->hi && n == LT_ROUTE_MAX)
            break;
        n = !r->hi ? (n * 2 > LT_ROUTE_MAX ? LT_ROUTE_MAX : n * 2) : r->lo + (r->hi - r->lo) / 2;
    }
    return 0;
}

/* How the search ended, and the answer's run moved to the output. */
static int finish(struct replicas_ctx *c, struct lt_replicas_result *r, struct lt_err *err)
{
    r->attain_lo = r->lo ? c->att[r->lo] : 0;
    r->p99_lo_ms = r->lo ? c->p99[r->lo] : 0;
    r->attain_hi = r->hi ? c->att[r->hi] : 0;
    r->p99_hi_ms = r->hi ? c->p99[r->hi] : 0;
    if (!r->hi) {
        r->end = LT_REPLICAS_NONE;
        return 0;
    }
    if (r->hi - r->lo > 1) {
        remove_probe(c, r->hi);
        r->end = LT_REPLICAS_MAX_PROBES;
        return 0;
    }
    char tmp[4096];
    probe_path(c, r->hi, tmp, sizeof tmp);
    if (rename(tmp, c->o->out_path) != 0)
        return lt_errset(err, LT_EIO, "cannot move %s to %s: %s", tmp, c->o->out_path,
                         strerror(errno));
    r->end = LT_REPLICAS_FOUND;
    return 0;
}

int lt_replicas_search(const struct lt_replay_opts *o, const struct lt_replicas_opts *s,
                       struct lt_replicas_result *r, struct lt_err *err)
{
    memset(r, 0, sizeof *r);
    struct replicas_ctx *c = calloc(1, sizeof *c); /* its tables are large */
    if (!c)
        return lt_errset(err, LT_ENOMEM, "out of memory");
    c->o = o;
    c->s = s;
    int rc = 0;
    if (lt_sim_profile_load(&c->p, s->profile ? s->profile : "default", err) < 0 ||
        lt_sim_profile_check(&c->p, err) < 0)
        rc = err->code = LT_EUSAGE; /* the profile named is the caller's to fix */
    else if (!s->dry_run)
        rc = lt_plan_jobs_open(&c->jobs, o->trace_path, err);
    for (uint32_t i = 0; i <= LT_ROUTE_MAX; i++)
        c->att[i] = -1;
    if (rc == 0 && !s->dry_run) {
        if (s->begin)
            s->begin(s->ud, c->p.name);
        rc = search(c, r, err);
        if (rc == 0)
            rc = finish(c, r, err);
    }
    lt_plan_jobs_close(&c->jobs);
    free(c);
    return rc;
}

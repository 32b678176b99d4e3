/*
 * The virtual engine set up from a live replay's options (see vreplay.h).
 */
#include "experiments/vreplay.h"

#include "plan/plan_jobs.h"
#include "sim/sim_profile.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* These functions hold nothing to release: a failure returns at once. */
#define RETURN_IF_FAILED(expr)                                                                     \
    do {                                                                                           \
        int r_ = (expr);                                                                           \
        if (r_ < 0)                                                                                \
            return r_;                                                                             \
    } while (0)

int lt_vreplay_check(const struct lt_replay_opts *o, const struct lt_sim_opts *sim,
                     struct lt_err *err)
{
    if (sim->faults)
        return lt_errset(err, LT_EUSAGE,
                         "--virtual: faults are not simulated in virtual time "
                         "(drop --sim-faults, or replay live against the sim)");
    if (sim->log_path)
        return lt_errset(err, LT_EUSAGE,
                         "--virtual: there is no server log in virtual time (drop --sim-log; "
                         "the results file has every token's emission time)");
    if (sim->time_scale > 0)
        return lt_errset(err, LT_EUSAGE,
                         "--virtual: --sim-time-scale does not apply (virtual time runs as "
                         "fast as the CPU allows)");
    if (o->no_force_length)
        return lt_errset(err, LT_EUSAGE,
                         "--virtual: every request emits exactly its recorded length; "
                         "--no-force-length (natural output lengths) needs a live server");
    return 0;
}

void lt_vreplay_opts_init(struct lt_sim_vreplay *vo, const struct lt_replay_opts *o,
                          int64_t scrape_us)
{
    *vo = (struct lt_sim_vreplay){
        .trace_path = o->trace_path,
        .out_path = o->out_path,
        .levels = o->levels,
        .n_levels = o->n_levels,
        .warmup = o->warmup,
        .default_out = o->default_out,
        .no_cancel = o->no_cancel,
        /* the model's values, as the live sim's /metrics would be scraped */
        .metrics_interval_us = o->server_metrics < 0    ? 0
                               : o->metrics_interval_us ? o->metrics_interval_us
                                                        : scrape_us,
    };
    lt_replay_plan_opts(o, &vo->plan);
}

/* The virtual fleet's router: replay's, through the driver's callbacks. */
static int vpick(void *ud, size_t seq, const struct lt_plan_job *job)
{
    struct lt_route_key k = {.seq = seq,
                             .index = job->index,
                             .session = job->session,
                             .blocks = job->blocks,
                             .n_blocks = job->n_blocks};
    return lt_route_pick(ud, &k);
}

static void vdone(void *ud, int replica)
{
    lt_route_done(ud, replica);
}

int lt_vreplay_fleet_init(struct lt_vreplay_fleet *f, const struct lt_replay_opts *o,
                          struct lt_sim_vreplay *vo, struct lt_err *err)
{
    memset(f, 0, sizeof *f);
    vo->route = NULL;
    if (o->route.n < 2)
        return 0;
    int rc = lt_route_init(&f->route, &o->route, err);
    if (rc < 0)
        return rc;
    f->on = true;
    f->vr = (struct lt_sim_vroute){.n = o->route.n,
                                   .name = lt_route_name(o->route.policy),
                                   .pick = vpick,
                                   .done = vdone,
                                   .ud = &f->route};
    vo->route = &f->vr;
    return 0;
}

void lt_vreplay_fleet_release(struct lt_vreplay_fleet *f)
{
    if (f->on)
        lt_route_release(&f->route);
    f->on = false;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int lt_vreplay_run(const struct lt_replay_opts *o, const struct lt_sim_opts *sim,
                   struct lt_vreplay_run *run, struct lt_err *err)
{
    memset(&run->tot, 0, sizeof run->tot);
    run->profile[0] = '\0';
    run->cpu_s = 0;
    RETURN_IF_FAILED(lt_vreplay_check(o, sim, err));
    struct lt_sim_profile p;
    if (lt_sim_profile_load(&p, sim->profile ? sim->profile : "default", err) < 0 ||
        lt_sim_profile_check(&p, err) < 0) {
        err->code = LT_EUSAGE; /* the profile named is the caller's to fix */
        return LT_EUSAGE;
    }
    snprintf(run->profile, sizeof run->profile, "%s", p.name);
    if (run->dry_run)
        return 0;
    double cpu0 = cpu_seconds();
    struct lt_plan_jobs jobs = {0};
    int rc = lt_plan_jobs_open(&jobs, o->trace_path, err);
    struct lt_sim_vreplay vo;
    lt_vreplay_opts_init(&vo, o, 250000);
    vo.stopped = run->stopped;
    vo.stop_ud = run->stop_ud;
    struct lt_vreplay_fleet fleet = {0};
    if (rc == 0)
        rc = lt_vreplay_fleet_init(&fleet, o, &vo, err);
    if (rc == 0)
        rc = lt_sim_virtual_replay(&p, &jobs, &vo, &run->tot, err);
    lt_vreplay_fleet_release(&fleet);
    lt_plan_jobs_close(&jobs);
    run->cpu_s = cpu_seconds() - cpu0;
    return rc;
}

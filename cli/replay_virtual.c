/*
 * The virtual-time replay (see replay_virtual.h). It refuses what the model
 * cannot honour, loads the sim profile, opens the trace streamed
 * (lt_plan_jobs_open, as the live replay does) and hands every run to the
 * sim's virtual engine (lt_sim_virtual_replay), which drives the same plan
 * (plan/plan.h, with the plan options a live replay would take:
 * lt_replay_plan_opts) against the model and writes the run and result
 * records; then it prints the totals and, if asked, the summary. No
 * thread and no socket; the only clock read is the process's CPU time,
 * for the totals line.
 */
#include "cli/replay_virtual.h"

#include "analyze/analyze.h"
#include "cli/cli_util.h"
#include "experiments/vreplay.h"
#include "plan/plan_jobs.h"
#include "sim/sim_profile.h"
#include "sim/sim_virtual.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_seconds(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int cli_replay_virtual(const struct lt_replay_opts *o, const struct lt_sim_opts *sim, bool summary,
                       bool quiet)
{
    struct lt_err err = {0};
    if (lt_vreplay_check(o, sim, &err) < 0) {
        cli_error("replay", "%s", err.msg);
        return 2;
    }
    struct lt_sim_profile p;
    if (lt_sim_profile_load(&p, sim->profile ? sim->profile : "default", &err) < 0 ||
        lt_sim_profile_check(&p, &err) < 0) {
        cli_error("replay", "%s", err.msg);
        return 2;
    }
    if (cli_dry_run())
        return 0;
    struct lt_plan_jobs tr = {0};
    double cpu0 = cpu_seconds();
    if (lt_plan_jobs_open(&tr, o->trace_path, &err) < 0) {
        cli_error("replay", "%s", err.msg);
        lt_plan_jobs_close(&tr);
        return 1;
    }
    struct lt_sim_vreplay vo;
    lt_vreplay_opts_init(&vo, o, 250000);
    /* Ctrl-C or SIGTERM stops the run as it stops a live one: what ran is
     * kept, what never ran is recorded as never sent */
    vo.stopped = cli_stop_name;
    /* a fleet of model instances behind replay's own router */
    struct lt_vreplay_fleet fleet;
    if (lt_vreplay_fleet_init(&fleet, o, &vo, &err) < 0) {
        cli_error("replay", "%s", err.msg);
        lt_plan_jobs_close(&tr);
        return 2;
    }
    struct lt_sim_vstats tot = {0};
    cli_stop_catch(true);
    int rc = lt_sim_virtual_replay(&p, &tr, &vo, &tot, &err);
    cli_stop_catch(false);
    lt_vreplay_fleet_release(&fleet);
    lt_plan_jobs_close(&tr);
    double cpu = cpu_seconds() - cpu0;
    if (rc < 0) {
        cli_error("replay", "%s", err.msg);
        if (tot.opened && tot.write_failed)
            cli_error("replay",
                      "%llu requests reached %s before the write failed (cat --salvage reads "
                      "them); %llu more were lost with it",
                      (unsigned long long)tot.on_disk, o->out_path,
                      (unsigned long long)(tot.requests - tot.on_disk));
        else if (tot.opened) /* else nothing was written: the plan refused first */
            cli_error("replay", "%llu requests were recorded in %s before the error",
                      (unsigned long long)tot.on_disk, o->out_path);
        return cli_fail_status(&err);
    }
    if (!quiet)
        cli_print_sample("replay", tot.sampled ? &tot.sample : NULL);
    if (!quiet)
        fprintf(stderr,
                "loadtrace replay: virtual time, profile %s: %llu requests, %llu ok, %llu "
                "cancelled, %llu output tokens, %llu cached prompt tokens, %.1f s of model time "
                "in %.2f s of CPU -> %s\n",
                p.name, (unsigned long long)tot.requests, (unsigned long long)tot.ok,
                (unsigned long long)tot.cancelled, (unsigned long long)tot.out_tokens,
                (unsigned long long)tot.cached_tokens, (double)tot.model_end_us / 1e6, cpu,
                o->out_path);
    if (tot.stopped_by)
        fprintf(stderr,
                "loadtrace replay: run %u stopped by %s at %.1f s of model time: %llu requests "
                "never sent (recorded without a send; not errors), %llu in the model recorded "
                "as aborted\n",
                (unsigned)tot.stopped_run, tot.stopped_by, (double)tot.stopped_at_us / 1e6,
                (unsigned long long)tot.unsent, (unsigned long long)tot.aborted);
    int status = cli_replay_status(tot.stopped_by != NULL, tot.requests - tot.cancelled, tot.ok);
    if (summary && strcmp(o->out_path, "-") != 0) {
        struct lt_analyze_opts ao;
        lt_analyze_opts_init(&ao);
        if (lt_analyze_print_summary(o->out_path, &ao, stdout, &err) < 0) {
            cli_error("replay", "summary: %s", err.msg);
            status = 1;
        }
    }
    return status;
}

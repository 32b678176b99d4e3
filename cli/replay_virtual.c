/*
 * The virtual-time replay on the command line (see replay_virtual.h): the
 * run is experiments/vreplay.c's (the options a live replay would take,
 * the model, a virtual fleet); this file catches the signals that stop it
 * and prints its totals and, if asked, the summary.
 */
#include "cli/replay_virtual.h"

#include "analyze/analyze.h"
#include "cli/cli_util.h"
#include "experiments/vreplay.h"

#include <stdio.h>
#include <string.h>

/* A failed run: how much of it reached the file. */
static void print_failed(const struct lt_sim_vstats *tot, const char *out_path)
{
    if (tot->opened && tot->write_failed)
        cli_error("replay",
                  "%llu requests reached %s before the write failed (cat --salvage reads "
                  "them); %llu more were lost with it",
                  (unsigned long long)tot->on_disk, out_path,
                  (unsigned long long)(tot->requests - tot->on_disk));
    else if (tot->opened) /* else nothing was written: the plan refused first */
        cli_error("replay", "%llu requests were recorded in %s before the error",
                  (unsigned long long)tot->on_disk, out_path);
}

static void print_totals(const struct lt_vreplay_run *run, const char *out_path)
{
    const struct lt_sim_vstats *tot = &run->tot;
    cli_print_sample("replay", tot->sampled ? &tot->sample : NULL);
    fprintf(stderr,
            "loadtrace replay: virtual time, profile %s: %llu requests, %llu ok, %llu "
            "cancelled, %llu output tokens, %llu cached prompt tokens, %.1f s of model time "
            "in %.2f s of CPU -> %s\n",
            run->profile, (unsigned long long)tot->requests, (unsigned long long)tot->ok,
            (unsigned long long)tot->cancelled, (unsigned long long)tot->out_tokens,
            (unsigned long long)tot->cached_tokens, (double)tot->model_end_us / 1e6, run->cpu_s,
            out_path);
}

int cli_replay_virtual(const struct lt_replay_opts *o, const struct lt_sim_opts *sim, bool summary,
                       bool quiet)
{
    struct lt_err err = {0};
    /* Ctrl-C or SIGTERM stops the run as it stops a live one: what ran is
     * kept, what never ran is recorded as never sent */
    struct lt_vreplay_run run = {.stopped = cli_stop_name, .dry_run = cli_dry_run()};
    cli_stop_catch(true);
    int rc = lt_vreplay_run(o, sim, &run, &err);
    cli_stop_catch(false);
    if (rc < 0) {
        cli_error("replay", "%s", err.msg);
        print_failed(&run.tot, o->out_path);
        return cli_fail_status(&err);
    }
    if (run.dry_run)
        return 0;
    const struct lt_sim_vstats *tot = &run.tot;
    if (!quiet)
        print_totals(&run, o->out_path);
    if (tot->stopped_by)
        fprintf(stderr,
                "loadtrace replay: run %u stopped by %s at %.1f s of model time: %llu requests "
                "never sent (recorded without a send; not errors), %llu in the model recorded "
                "as aborted\n",
                (unsigned)tot->stopped_run, tot->stopped_by, (double)tot->stopped_at_us / 1e6,
                (unsigned long long)tot->unsent, (unsigned long long)tot->aborted);
    int status =
        cli_replay_status(tot->stopped_by != NULL, tot->requests - tot->cancelled, tot->ok);
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

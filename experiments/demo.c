/*
 * The demo's runs (experiments/demo.h), composed as the commands compose
 * them: synth for the sweep's trace, import for the Azure slice, replay
 * against the embedded sim, analyze for the figures. Outputs are shorter
 * than the published benchmark's 1000 tokens so that the demo fits in a
 * minute; the per-request decode speed does not depend on that, the
 * aggregate does (the prefill of each wave weighs more), and the demo
 * says so.
 */
#include "experiments/demo.h"
#include "replay/replay.h"
#include "sim/sim.h"
#include "workload/trace_synth.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

const uint32_t lt_demo_levels[LT_DEMO_LEVELS] = {1, 4, 16, 32};
const double lt_demo_published_req[LT_DEMO_LEVELS] = {176, 159, 120, 81};
const double lt_demo_published_agg[LT_DEMO_LEVELS] = {172, 542, 1647, 2156};

int lt_demo_start(struct lt_demo *d, const struct lt_demo_opts *o, struct lt_err *err)
{
    memset(d, 0, sizeof *d);
    d->o = *o;
    if (mkdir(o->out, 0755) < 0 && errno != EEXIST)
        return lt_errset(err, LT_EIO, "cannot create %s: %s", o->out, strerror(errno));
    struct lt_sim_opts so = {.host = "127.0.0.1", .profile = "default", .seed = 1};
    d->sim = lt_sim_start(&so, err);
    if (!d->sim)
        return lt_errf(err, err->code ? err->code : LT_EIO, "cannot start the sim");
    snprintf(d->url, sizeof d->url, "http://127.0.0.1:%u", (unsigned)lt_sim_port(d->sim));
    return 0;
}

/* One replay against the sim: the count of Ok requests, or -1. */
static int run_replay(struct lt_demo *d, struct lt_replay_opts *ro, struct lt_err *err)
{
    ro->target = d->url;
    ro->target_label = "sim";
    if (d->stopped)
        return lt_errset(err, LT_EINVAL, "stopped");
    struct lt_replay *rp = lt_replay_new(ro, err);
    if (rp && lt_replay_prepare(rp, err) < 0) {
        lt_replay_free(rp);
        rp = NULL;
    }
    if (!rp)
        return -1;
    d->replay = rp;
    /* A signal between the check above and the store is seen here. */
    int rc = d->stopped ? lt_errset(err, LT_EINVAL, "stopped") : lt_replay_run(rp, err);
    d->replay = NULL;
    struct lt_replay_stats st;
    lt_replay_get_stats(rp, &st);
    lt_replay_free(rp);
    if (d->stopped)
        return lt_errset(err, LT_EINVAL, "stopped");
    return rc < 0 ? -1 : (int)st.ok;
}

int lt_demo_sweep_level(struct lt_demo *d, size_t i, struct lt_err *err)
{
    if (i >= LT_DEMO_LEVELS)
        return lt_errset(err, LT_EINVAL, "the demo's sweep has %d levels", LT_DEMO_LEVELS);
    if (i == 0) {
        /* Identical short-prompt requests, as many as the largest wave. */
        snprintf(d->sweep_trace, sizeof d->sweep_trace, "%s/sweep-trace.lt.zst", d->o.out);
        struct lt_synth_opts sy = {.seed = 1,
                                   .arrivals = LT_ARR_CONSTANT,
                                   .rate = 1,
                                   .requests = lt_demo_levels[LT_DEMO_LEVELS - 1],
                                   .in = {LT_LEN_FIXED, 100, 0},
                                   .out = {LT_LEN_FIXED, d->o.tokens, 0},
                                   .command = "loadtrace demo"};
        if (lt_synth_run(&sy, d->sweep_trace, NULL, err) < 0)
            return -1;
    }
    snprintf(d->sweep_results[i], sizeof d->sweep_results[i], "%s/sweep-c%u.lt.zst", d->o.out,
             (unsigned)lt_demo_levels[i]);
    struct lt_replay_opts ro = {.trace_path = d->sweep_trace,
                                .out_path = d->sweep_results[i],
                                .mode = LT_REPLAY_MODE_CONCURRENCY,
                                .n_levels = 1,
                                .requests = lt_demo_levels[i],
                                .seed = 1};
    ro.levels[0] = lt_demo_levels[i];
    d->ok[i] = run_replay(d, &ro, err);
    return d->ok[i] < 0 ? -1 : 0;
}

static int analyze_files(const char *const *paths, size_t n, struct lt_analyze *a,
                         struct lt_err *err)
{
    struct lt_analyze_opts ao;
    lt_analyze_opts_init(&ao);
    int rc = lt_analyze_init(a, &ao, err);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = lt_analyze_add_file(a, paths[i], err);
    if (rc == 0)
        rc = lt_analyze_finish(a, err);
    return rc;
}

int lt_demo_sweep_analyze(struct lt_demo *d, struct lt_err *err)
{
    const char *list[LT_DEMO_LEVELS];
    for (size_t i = 0; i < LT_DEMO_LEVELS; i++)
        list[i] = d->sweep_results[i];
    return analyze_files(list, LT_DEMO_LEVELS, &d->sweep, err);
}

int lt_demo_azure_import(struct lt_demo *d, struct lt_err *err)
{
    snprintf(d->azure_csv, sizeof d->azure_csv, "%s/AzureLLMInferenceTrace_conv.csv", d->o.samples);
    snprintf(d->azure_trace, sizeof d->azure_trace, "%s/azure-conv.lt.zst", d->o.out);
    snprintf(d->azure_results, sizeof d->azure_results, "%s/azure-results.lt.zst", d->o.out);
    struct lt_import_opts io = {.format = LT_IMPORT_AZURE, .name = d->azure_csv};
    return lt_import_file(d->azure_csv, d->azure_trace, &io, NULL, &d->azure_import, err) < 0 ? -1
                                                                                              : 0;
}

int lt_demo_azure_replay(struct lt_demo *d, struct lt_err *err)
{
    struct lt_replay_opts ra = {.trace_path = d->azure_trace,
                                .out_path = d->azure_results,
                                .mode = LT_REPLAY_MODE_TRACE,
                                .seed = 1};
    ra.tt.win_start_us = 0;
    ra.tt.win_end_us = d->o.azure_window_us;
    ra.tt.rate = d->o.azure_rate;
    if (run_replay(d, &ra, err) < 0)
        return -1;
    const char *list[1] = {d->azure_results};
    return analyze_files(list, 1, &d->azure, err);
}

void lt_demo_interrupt(struct lt_demo *d)
{
    d->stopped = 1;
    struct lt_replay *rp = d->replay;
    if (rp)
        lt_replay_stop(rp);
}

int lt_demo_finish(struct lt_demo *d, struct lt_err *err)
{
    lt_analyze_release(&d->sweep);
    lt_analyze_release(&d->azure);
    int rc = lt_sim_stop_err(d->sim, err);
    d->sim = NULL;
    return rc < 0 ? -1 : 0;
}

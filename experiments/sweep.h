/*
 * loadtrace sweep: the same traffic against every candidate config, and a
 * report that names the best (docs/sweep.md).
 *
 * A plan (a YAML file, parsed by libyaml) names a trace, a load and the
 * configs. A config is a server command (its parameter grid expands it into
 * one config per point), a server already running (a URL), or a virtual
 * config (a sim profile with overrides, answered in virtual time and
 * reported as a prediction). For each config the sweep starts the server on
 * a free loopback port in its own process group, waits for it to be ready,
 * warms it up, runs the load, and stops the group (SIGTERM, then SIGKILL
 * after the grace period). Each load is run by the loadtrace program itself
 * as a child (`loadtrace replay ... -o DIR/NAME.lt.zst`): the composition of
 * a replay lives in cli/ today, and a child is also what keeps a crashing
 * server's partial results intact and Ctrl-C clean. DIR/sweep.json records
 * every config's command, what its server said of itself, and its outcome;
 * a rerun into DIR skips the configs whose results are complete.
 *
 * The report (sweep_report.c) reads only the per-config results files,
 * through analyze/: capacity, goodput and latencies per config, a Pareto
 * chart, the best config with its evidence, and A/B verdicts against the
 * baseline (compare_results).
 */
#ifndef LT_SWEEP_H
#define LT_SWEEP_H

#include "base/lt_err.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define LT_SWEEP_NAME 64
#define LT_SWEEP_CONFIGS_MAX 64
#define LT_SWEEP_ARGS_MAX 48

enum lt_sweep_kind {
    LT_SWEEP_LAUNCH = 0, /* a command the sweep starts and stops */
    LT_SWEEP_RUNNING,    /* a server already running: a URL, no lifecycle */
    LT_SWEEP_VIRTUAL,    /* a sim profile in virtual time: a prediction */
};

/* The load every config gets. */
enum lt_sweep_load { LT_SWEEP_FIXED = 0, LT_SWEEP_CLOSED, LT_SWEEP_FINDMAX };

struct lt_sweep_config {
    char name[LT_SWEEP_NAME];
    enum lt_sweep_kind kind;
    int line;         /* where the plan defines it */
    char params[256]; /* the grid point, "mr=4 tp=2" ("" without a grid) */
    char *command;    /* launch: the shell command, {port} and {loadtrace} unexpanded */
    char **env;       /* launch: "KEY=VALUE" added to the environment */
    size_t n_env;
    uint16_t port;    /* launch: a fixed port; 0 = a free one is picked */
    char url[256];    /* running: the server */
    char health[128]; /* readiness path (default /health) */
    int64_t probe_timeout_us, start_timeout_us, stop_timeout_us;
    char profile[512]; /* virtual: built-in name or profile file */
    char **set;        /* virtual: "key=value" overrides of the profile */
    size_t n_set;
    double time_scale; /* virtual: the model this many times faster (every cost / X), as a
                          sim at --time-scale X; 0 = 1 */
};

struct lt_sweep_plan {
    char path[1024];
    char trace[1024]; /* resolved against the plan's folder */
    enum lt_sweep_load load;
    char slo[128];     /* analyze's --slo syntax ("" = none) */
    int64_t slo_us[3]; /* its TTFT, TPOT, E2E limits (us, 0 = none): the caller parses slo
                          (with the command line's SLO parser) and fills them in */
    char axis[16];     /* find-max: "rate" or "concurrency" */
    uint32_t warmup;   /* warm-up requests before the load (not reported) */
    bool reset_cache;  /* POST /reset_prefix_cache before the load */
    char *load_args[LT_SWEEP_ARGS_MAX]; /* replay's options for the load */
    size_t n_load_args;
    char baseline[LT_SWEEP_NAME]; /* "" = none */
    struct lt_sweep_config *configs;
    size_t n_configs;
};

/* Read and check the plan at path. Errors name the file and line
 * ("plan.yaml:12: ..."): LT_EFORMAT (not YAML, a wrong shape) or
 * LT_EUSAGE (a value that cannot apply). Release p in every case. */
int lt_sweep_plan_load(struct lt_sweep_plan *p, const char *path, struct lt_err *err);
void lt_sweep_plan_release(struct lt_sweep_plan *p);

/* What happened to a config. */
enum lt_sweep_status {
    LT_SWEEP_PENDING = 0,
    LT_SWEEP_COMPLETE,    /* the load ran to its end: results complete */
    LT_SWEEP_PARTIAL,     /* the server died mid-run: the results so far are kept */
    LT_SWEEP_FAILED,      /* no results: the server never started or was never ready */
    LT_SWEEP_INTERRUPTED, /* stopped by the user; run again to resume */
    LT_SWEEP_SKIPPED,     /* complete from an earlier sweep into the same folder */
};
const char *lt_sweep_status_name(enum lt_sweep_status s);

/* Where a sweep is, for a live view (on_progress). */
enum lt_sweep_step {
    LT_SWEEP_STEP_BEGIN,  /* the config starts (its server, if any) */
    LT_SWEEP_STEP_WARMUP, /* its warm-up runs */
    LT_SWEEP_STEP_LOAD,   /* its load runs: replay's stderr goes to replay_log */
    LT_SWEEP_STEP_END,    /* it ended (or was skipped): status, why */
};
struct lt_sweep_progress {
    size_t index, n; /* config index (from 0) of n */
    const char *config;
    enum lt_sweep_step step;
    enum lt_sweep_status status; /* at END */
    const char *why;             /* at END: "" or what happened */
    const char *replay_log;      /* at LOAD */
};

struct lt_sweep_opts {
    const char *dir;             /* where logs, results, sweep.json and the report go */
    const char *exe;             /* the loadtrace program run for each load */
    bool redo;                   /* run every config again, complete or not */
    volatile sig_atomic_t *stop; /* set by the caller's signal handler: stop cleanly */
    /* Progress: one sentence per step of a config (may be NULL). */
    void (*on_event)(void *ud, const char *config, const char *what);
    void *ud;
    /* Each step of each config as it comes (may be NULL). */
    void (*on_progress)(void *ud, const struct lt_sweep_progress *p);
    void *progress_ud;
    /* Options added to each load's replay (and recorded with it), e.g. a
     * --live-metrics that a live view reads. */
    const char *const *load_extra;
    size_t n_load_extra;
};

struct lt_sweep_outcome {
    enum lt_sweep_status status;
    char why[512]; /* failed, partial or interrupted: what happened (the log named) */
};

/* Run every config of p in turn, recording DIR/sweep.json after each.
 * out (n_configs entries) gets each outcome. Returns 0 when every config
 * was run or skipped (some may have failed: see out), 1 when the user
 * stopped it (opts->stop), or a negative LT_E* code when the folder cannot
 * be written. */
int lt_sweep_run(const struct lt_sweep_plan *p, const struct lt_sweep_opts *opts,
                 struct lt_sweep_outcome *out, struct lt_err *err);

/* The report over DIR's results files: DIR/report.txt, DIR/report.json,
 * DIR/report.html and the Pareto chart (DIR/charts/), and the text on out
 * (may be NULL). notes gets gnuplot's notes (charts skipped, missing
 * gnuplot), one sentence each, up to n_notes_max. Returns 0 or a negative
 * LT_E* code. */
int lt_sweep_report(const struct lt_sweep_plan *p, const char *dir, FILE *out, char (*notes)[512],
                    int n_notes_max, int *n_notes, struct lt_err *err);

#endif

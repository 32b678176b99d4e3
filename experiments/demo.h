/*
 * The runs behind `loadtrace demo`: the built-in sim on a free loopback
 * port, a concurrency sweep of closed-loop waves (one wave of C requests a
 * level) against it, a slice of the bundled Azure conversation trace
 * replayed at a scaled rate, and the analyses of both, which the caller
 * prints and charts. Each step is one call so that the caller can say what
 * happens between them; nothing here prints.
 *
 *     lt_demo_start(&d, &o, &err);          the folder, the sim
 *     for i < LT_DEMO_LEVELS:
 *         lt_demo_sweep_level(&d, i, &err); one wave of lt_demo_levels[i]
 *     lt_demo_sweep_analyze(&d, &err);      d.sweep
 *     lt_demo_azure_import(&d, &err);       the bundled CSV as a trace
 *     lt_demo_azure_replay(&d, &err);       a slice of it: d.azure
 *     lt_demo_finish(&d, &err);             the analyses released, the sim stopped
 *
 * lt_demo_interrupt may be called from a signal handler: the replay
 * running ends its requests, and every later step fails at once.
 */
#ifndef LT_EXPERIMENTS_DEMO_H
#define LT_EXPERIMENTS_DEMO_H

#include "analyze/analyze.h"
#include "base/lt_err.h"
#include "workload/trace_import.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* The sweep's concurrency levels, and the published figures the demo
 * shows beside them (Qwen3.5-397B on 8x RTX PRO 6000, 1000-token outputs),
 * which the sim's default profile is calibrated to. */
#define LT_DEMO_LEVELS 4
extern const uint32_t lt_demo_levels[LT_DEMO_LEVELS];
extern const double lt_demo_published_agg[LT_DEMO_LEVELS], lt_demo_published_req[LT_DEMO_LEVELS];

struct lt_demo_opts {
    const char *out;         /* the folder for traces, results and charts (made if missing) */
    const char *samples;     /* the folder holding AzureLLMInferenceTrace_conv.csv */
    uint32_t tokens;         /* output tokens of each sweep request */
    double azure_rate;       /* the Azure slice's replay rate, req/s */
    int64_t azure_window_us; /* how much of the Azure trace is replayed */
};

struct lt_replay;
struct lt_sim;

struct lt_demo {
    struct lt_demo_opts o;
    struct lt_sim *sim;
    char url[64];                   /* the sim's */
    struct lt_analyze sweep, azure; /* the analyses, once their step is done */
    int ok[LT_DEMO_LEVELS];         /* Ok requests of each level's wave */
    char sweep_trace[4096];         /* the sweep's synthetic trace */
    char sweep_results[LT_DEMO_LEVELS][4096];
    char azure_csv[4096], azure_trace[4096], azure_results[4096];
    struct lt_import_stats azure_import; /* what the import of the CSV read */
    struct lt_replay *volatile replay;   /* the one running, for lt_demo_interrupt */
    volatile sig_atomic_t stopped;       /* lt_demo_interrupt was called */
};

/* Make o->out and start the sim (default profile, seed 1) on a free
 * loopback port. On failure nothing is left running. */
int lt_demo_start(struct lt_demo *d, const struct lt_demo_opts *o, struct lt_err *err);

/* The wave of lt_demo_levels[i] requests, closed loop, into
 * d->sweep_results[i] (the synthetic trace is written first, at i == 0);
 * d->ok[i] is how many were Ok. */
int lt_demo_sweep_level(struct lt_demo *d, size_t i, struct lt_err *err);

/* d->sweep: every level's results analyzed together (a sweep). */
int lt_demo_sweep_analyze(struct lt_demo *d, struct lt_err *err);

/* Import the bundled Azure CSV into d->azure_trace (d->azure_import: what
 * it read). */
int lt_demo_azure_import(struct lt_demo *d, struct lt_err *err);

/* Replay the imported trace's first o->azure_window_us at o->azure_rate,
 * and analyze that into d->azure. */
int lt_demo_azure_replay(struct lt_demo *d, struct lt_err *err);

/* Async-signal-safe: stop the replay running and every step after it. */
void lt_demo_interrupt(struct lt_demo *d);

/* Release the analyses and stop the sim; -1 when the sim's log or its
 * threads failed. Safe after any step, a failed lt_demo_start included. */
int lt_demo_finish(struct lt_demo *d, struct lt_err *err);

#endif

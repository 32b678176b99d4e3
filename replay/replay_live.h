/*
 * The live figures of a replay while it runs (docs/dashboard.md): what
 * the final report will say, so far. The engine writes them on its own
 * thread and never waits on a reader; any other thread (the terminal
 * dashboard, the --live-metrics HTTP server) reads a copy.
 *
 * How it stays cheap: each request that ends adds its figures to
 * histograms only the engine touches (one call per result, O(1) per value,
 * no lock). On its housekeeping tick (every 250 ms) the engine copies what
 * changed into a published set under a mutex; readers take the mutex and
 * compute percentiles from the published set. So the per-token path has
 * no lock and no atomic; a reader can delay the engine's tick by the time
 * it holds the mutex (a few merges of 28 KiB histograms), never a send.
 *
 * What counts as in the results: TTFT = first token - sent, E2E = end -
 * sent, TPOT = (E2E - TTFT) / (out - 1), ITL = the gaps between chunks,
 * of ok results outside the warm-up, in histograms of analyze's shape
 * (highest 2^36 us, 10 bits): the run's percentiles here are analyze's.
 *
 * One live object serves any number of replays one after another (the
 * probes of a capacity search): the run's figures start again at each
 * run, the Prometheus counters never do.
 */
#ifndef LT_REPLAY_LIVE_H
#define LT_REPLAY_LIVE_H

#include "base/lt_buf.h"
#include "base/lt_err.h"
#include "base/lt_time.h"
#include "replay/replay.h"
#include "traces/trace_format.h"

#include <stdbool.h>
#include <stdint.h>

enum lt_live_metric { LT_LIVE_TTFT, LT_LIVE_TPOT, LT_LIVE_ITL, LT_LIVE_E2E, LT_LIVE_METRICS };

/* The error classes counted apart (results' err); any other is "other". */
#define LT_LIVE_CLASSES 15
/* The window of the recent figures, in seconds. */
#define LT_LIVE_WINDOW_S 10
/* Samples of the server's gauges kept for the sparklines (one per tick). */
#define LT_LIVE_SERVER_HIST 120

struct lt_live_lat {
    uint64_t n;             /* values */
    double p50_us, p99_us;  /* 0 when n = 0 */
    double mean_us, max_us; /* 0 when n = 0 */
};

/* What a reader is given: plain numbers, its own copy. */
struct lt_live_view {
    bool started;                /* a run has begun */
    struct lt_replay_progress p; /* the engine's last progress report */
    double since_tick_s;         /* how old p is */
    /* the current run, every result recorded so far */
    uint64_t results, sent, ok, errors, cancelled, unsent, warmup;
    uint64_t out_tokens, in_tokens;
    uint64_t by_class[LT_LIVE_CLASSES];      /* errors by class, names in lt_live_class_name */
    struct lt_live_lat run[LT_LIVE_METRICS]; /* over the whole run */
    struct lt_live_lat win[LT_LIVE_METRICS]; /* over the last window */
    double win_s;                            /* the window's span so far (<= 10 s) */
    double win_rps, win_tps;                 /* results and output tokens per second in it */
    /* the server's gauges at each tick, oldest first; NAN: not scraped */
    double running[LT_LIVE_SERVER_HIST], waiting[LT_LIVE_SERVER_HIST], kv[LT_LIVE_SERVER_HIST];
    uint32_t n_server;
    char phase[160]; /* what the caller said it is running (a probe, a config); "" none */
};

/* What the engine knows of the server at a tick; NAN: unknown. */
struct lt_live_server {
    double running, waiting, kv;
};

struct lt_replay_live;

/* A live object; NULL and err filled when out of memory. */
struct lt_replay_live *lt_replay_live_new(struct lt_err *err);
/* Free; NULL is a no-op. No replay may still write to it. */
void lt_replay_live_free(struct lt_replay_live *l);

/* The name of error class k (0 .. LT_LIVE_CLASSES-1). */
const char *lt_live_class_name(int k);

/* ---- the engine's side (its thread only) ---- */

/* A run begins: its figures start from nothing; published at once. */
void lt_replay_live_run_begin(struct lt_replay_live *l, const struct lt_replay_progress *p);
/* A result was recorded (after the results file took it). */
void lt_replay_live_result(struct lt_replay_live *l, const struct lt_result *r);
/* The tick: publish what changed, with the progress and the server's
 * gauges. */
void lt_replay_live_tick(struct lt_replay_live *l, const struct lt_replay_progress *p,
                         const struct lt_live_server *srv);

/* ---- any thread ---- */

/* Say what runs now, e.g. "probe 3 of 20: rate 4.5 req/s" (kind "probe",
 * index 3, load 4.5); kind NULL clears it. Shown by the dashboard and
 * served as loadtrace_phase_info. */
void lt_replay_live_set_phase(struct lt_replay_live *l, const char *kind, uint32_t index,
                              double load, const char *text);
/* A copy of the published figures. */
void lt_replay_live_view(struct lt_replay_live *l, struct lt_live_view *v);
/* The published figures in the Prometheus text format (version 0.0.4),
 * appended to out; the counters and histograms count every run and probe
 * of the process. Returns 0 or LT_ENOMEM. Nothing of a request's content,
 * its headers or the API key is in the live figures to be served. */
int lt_replay_live_prom(struct lt_replay_live *l, struct lt_buf *out);

#endif

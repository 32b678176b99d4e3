/*
 * Fitting a profile to a real server: `loadtrace sim --fit RESULTS...`.
 * The results of live replays hold every token's arrival time, so the
 * server's engine steps can be read back from them: tokens of one step
 * arrive together, a request's first token ends the step that finished its
 * prompt, its later tokens the steps it decoded in. Each step gives one
 * equation of the model's step cost (docs/sim.md, "The timing model"),
 *
 *   T = step_ms + step_ms_per_seq D + decode_ms_per_kv_token K
 *       + [P > 0] prefill_step_ms + prefill_ms_per_seq S
 *       + prefill_ms_per_token P + cached_ms_per_token C,
 *
 * with D, K, S, P, C counted from the timelines, and least squares over all
 * steps (reweighted against outliers) gives the costs with their standard
 * errors. A cost whose column
 * the data cannot tell from the others (no steps that vary it) is reported
 * as not identified, with the load that would identify it. The limits are
 * read from the timelines too (the largest batch seen, and whether anything
 * queued behind it but not beside smaller batches). Deterministic: no
 * sampling, one pass per run.
 */
#ifndef LT_SIM_FIT_H
#define LT_SIM_FIT_H

#include "sim/sim_profile.h"
#include "base/lt_err.h"

#include <stdbool.h>
#include <stdint.h>

enum { LT_SIM_FIT_NCOST = 7, LT_SIM_FIT_NBEND = 7 };

struct lt_sim_fit_opts {
    double time_scale;  /* the server ran X times faster than real time (sim --time-scale); 1 */
    double step_gap_ms; /* tokens closer than this (file time) share a step; 0 = 0.1 */
    struct lt_sim_profile base; /* keys the data cannot identify keep these values */
};

struct lt_sim_fit_param {
    const char *key; /* profile key */
    double value;    /* fitted (or kept from the base profile) */
    double se;       /* standard error; 0 when not identified */
    bool identified;
    bool kept;          /* not identified and never exercised: the base's value */
    const char *needs;  /* when not identified: what load would identify it */
    const char *source; /* "timelines", "base profile" or "folded" (0, in the others) */
};

/* What the server said about itself in a run record (replay's GET /props,
 * /v1/models, /health, /slots; 0 / "" unknown). */
struct lt_sim_fit_word {
    char kind[16];   /* "llama.cpp" */
    char model[128]; /* the model it serves */
    uint32_t slots;  /* sequences it runs at once */
    uint32_t ctx;    /* context per slot */
    uint32_t vocab;
    double rtt_ms; /* the client's measured round trip (model time) */
};

enum { LT_SIM_FIT_MAXRUNS = 64 };

/* One run read, how it was classed and whether its rows were fitted. */
struct lt_sim_fit_run {
    uint32_t file, id;
    const char *cls; /* "stable", "backlogged" or "client-starved" */
    char why[200];   /* the figures behind cls */
    bool used;       /* its rows went into the cost fit */
    uint64_t requests;
    double mean_inflight; /* requests sent and not ended, averaged over the run */
    double cached_share;  /* prompt tokens the server reported cached, of all */
    double trace_hit;     /* the share the trace allows from a cold start; < 0 unknown */
    char cache_state[96]; /* as replay recorded it at the run's start; "" unknown */
    bool cache_warm;      /* cached_share is well above trace_hit: an earlier run warmed it */
    /* The server's own counters over the run (llama.cpp's --metrics, kept
     * by replay --server-metrics-keep '^llamacpp:'), model time: its
     * prompt processing per prompt token it processed, its generation per
     * generated token, its decode calls and busy slots per call. has_metrics:
     * two samples or more, with prompt tokens processed between them. */
    bool has_metrics;
    double m_prefill_ms_per_token, m_gen_ms_per_token, m_busy_per_decode;
    uint64_t m_prompt_tokens, m_decodes;
};

/* Residuals of one kind of row (model time, ms). */
struct lt_sim_fit_resid {
    uint64_t n;
    double rms_ms;  /* root mean square of observed - fitted */
    double mean_ms; /* mean observed step */
    double p50_rel; /* median |observed - fitted| / observed */
    double p90_rel;
};

struct lt_sim_fit {
    struct lt_sim_profile profile; /* the base with the fitted values set */
    struct lt_sim_fit_param cost[LT_SIM_FIT_NCOST];
    uint64_t files, runs, requests, tokens;
    uint64_t steps, steps_used;  /* steps read back; used in the regression */
    uint32_t max_batch;          /* most requests seen in one step */
    bool max_running_identified; /* requests queued behind a full batch, which stayed full */
    /* Steps where a request had waited two step starts and the token
     * budget would have taken it: at the largest batch, and at each of the
     * few sizes below it (mean). A limit lets nothing wait below it and
     * holds the batch at its size while anything waits, so the first is a
     * multiple of the second; requests that reached the server late (a
     * client starved of CPU) seem to wait at any size, about as often at
     * the largest as just below it. */
    uint64_t queued_at_max;
    double queued_below;
    uint32_t max_prefill; /* most prompts finished in one step */
    /* rows: each request's decode time (E2E - TTFT, the sum of its ITLs), and
     * the TTFT of requests that found the server idle */
    struct lt_sim_fit_resid decode, prefill;
    /* The client's share of a TTFT it measured (model time, ms): sending
     * the request and receiving the first chunk, which the server's model
     * does not have. A column of its own, fitted from the TTFT rows, so it
     * stays out of prefill_step_ms; reported, not written to the profile
     * (a virtual replay has no network). identified: TTFT rows existed (a
     * fit below zero is 0, standard error 0). */
    double client_ms, client_se;
    bool client_identified;
    /* The server's word (the first run that recorded it) and where each
     * limit of the profile came from: "server", "timelines" or "base
     * profile". */
    struct lt_sim_fit_word word;
    const char *max_running_src, *kv_src, *ctx_src, *vocab_src, *model_src, *prefill_seqs_src;
    /* The client's share bounded by its measured round trip (word.rtt_ms):
     * the free fit's value was outside [0, bound] and is held there. */
    bool client_bounded;
    double client_free_ms; /* the free fit's value, when bounded */
    /* Runs read, in order (the first LT_SIM_FIT_MAXRUNS), and whether
     * every cost came from runs that were not stable (a guess). */
    struct lt_sim_fit_run run[LT_SIM_FIT_MAXRUNS];
    uint32_t nrun;
    bool guess;
    /* Hook: server metrics (running, waiting, KV usage) recorded beside the
     * results would constrain max_running and kv_tokens directly; results
     * files do not hold them yet, so this stays 0. */
    uint64_t metric_samples;
    /* Bounded memory: the runs were read in segments (each fitted and
     * freed before the next; at most held_max requests held at once), the
     * rows thinned to rows_kept of rows_offered (about 1 in rows_stride),
     * and rows_cut dropped whose window crossed a segment's edge. */
    uint64_t segments, held_max, rows_offered, rows_kept, rows_stride, rows_cut;
    /* prefill_ms_per_token from the server's counters (runs at about one
     * request in flight, where a prompt is processed alone); the TTFT
     * slope, when it was identified too, is kept here as the check. And the
     * spread of the server's own prefill speed over those runs (largest
     * over smallest per-token cost): a server whose speed changed between
     * runs (a machine shared with other work) cannot be predicted by a fit. */
    bool prefill_from_metrics;
    /* the prefill costs (and the curve) from llama-server's per-request
     * prompt_ms (the results' srv_pf) at an idle server instead of the
     * client's TTFTs, which then leave the fit */
    bool prefill_from_timings;
    double ttft_slope, ttft_slope_se;
    bool ttft_slope_identified;
    double metrics_spread;
    /* front_ms_per_token: the part of the TTFT slope the server's counters
     * do not hold (its work per prompt token in front of the engine); set
     * when both were measured and the slope is above the counters' cost by
     * two of its standard errors. */
    bool front_identified;
    double front_ms_per_token;
    /* With the server's timings: the time outside its compute at an idle
     * server (the client's TTFT less the server's prompt time, at no
     * prompt: the median, outside_ms, or the line's intercept where the
     * front's cost per token was identified) less the client's measured
     * round trip, where that is three standard errors above 0 and
     * more than the round trip once more (outside_identified, outside_server_ms and its standard
     * error); the decode windows' time per first token in them beyond the server's prompt time
     * (loop_win_ms: what an admission holds up the other slots); and the split:
     * loop_ms_per_request, the part on the server's main loop (the windows' figure, three standard
     * errors above 0, at most the whole), front_ms_per_request the rest, beside the loop */
    bool outside_identified, loop_identified, loop_win_identified;
    double outside_ms, outside_server_ms, outside_server_se;
    double loop_win_ms, loop_win_se, loop_ms, front_fixed_ms;
    /* the uncached prompt tokens of the idle TTFT rows the prefill's cost
     * (and curve) came from, fewest and most: a prompt beyond extrapolates */
    uint32_t pf_tokens_min, pf_tokens_max;
    /* prefill_ms_per_token_ctx: the TTFTs at an idle server bent up with
     * the prompt (a curve in its tokens' pairs, three standard errors
     * above a line); then the line's part is the TTFT slope */
    bool ctx_identified;
    double ctx_ms, ctx_se;
    double ctx_try_ms, ctx_try_se; /* the curve's fit, identified or not (0: none made) */
    /* The decode step's cost by its batch, where it is not a line: the
     * extra cost (ms, over step_ms + step_ms_per_seq D) of a step of D
     * decoders, D = 2 .. max_batch - 1, from the timelines; bent:
     * one at least was three standard errors from 0, and the profile got
     * step_ms_by_batch (one cost for each batch size up to max_batch).
     * Fitted only for a server that said it has at most
     * LT_SIM_FIT_NBEND + 1 slots (llama.cpp's /props), with the largest
     * batch seen no larger. */
    double bend[LT_SIM_FIT_NBEND], bend_se[LT_SIM_FIT_NBEND];
    bool bend_identified[LT_SIM_FIT_NBEND];
    bool bent;
    bool bends_refused; /* they made a step of more decoders cheaper: the line kept */
    /* The cached prompt tokens per request (mean, standard deviation):
     * when nearly every prompt has about as many (a chat template's common
     * start, cached within a slot), cached_ms_per_token cannot be told
     * from a per-prompt cost, and is kept from the base (cached_same). */
    double cached_mean, cached_sd;
    bool cached_same;
    /* and then their median, the profile's shared_prefix_tokens (the
     * server's own count of cached tokens in its responses) */
    uint32_t cached_median;
    /* The server's speed as it wanders (the profile's speed_cv and
     * speed_tau_ms), from the decodes of closed loops at 1 (speed_n of
     * them): the correlation of each decode's halves' mean gaps
     * (speed_rho), the decodes' mean length and the spread of their mean
     * gaps' logs. Identified: enough decodes and speed_rho two standard
     * errors above 0. Reported, not set in the profile (it keeps the
     * base's): a steady twin predicted a real server's held-out loads
     * nearer. */
    bool speed_identified;
    uint64_t speed_n;
    double speed_rho, speed_cv, speed_tau_ms, speed_decode_ms, speed_req_sd;
};

/* Fit from n results files. Returns 0, or LT_EIO / LT_EFORMAT / LT_ENOMEM /
 * LT_EINVAL (no usable steps) with err filled. */
int lt_sim_fit_files(const char *const *paths, int n, const struct lt_sim_fit_opts *o,
                     struct lt_sim_fit *out, struct lt_err *err);

/* Write out->profile as a profile file, with the fit's figures as comments.
 * Returns 0 or LT_EIO. */
int lt_sim_fit_write(const struct lt_sim_fit *f, const char *path, struct lt_err *err);

#endif

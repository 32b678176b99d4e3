/*
 * loadtrace replay: send a trace's requests to an OpenAI-compatible server
 * and record exactly what happened to each one in a results file
 * (docs/trace-format.md §2.4-2.5).
 *
 * One thread runs one event loop (epoll + timerfd driving libcurl's multi
 * interface, as curl's docs/examples/ephiperfifo.c shows): no thread per
 * request, so ten thousand streams can be in flight at once. Every
 * timestamp is read from CLOCK_MONOTONIC (lt_mono) inside the curl
 * callbacks, as the bytes arrive.
 *
 * Load modes:
 *   trace        requests leave at their (transformed) recorded times; a
 *                later turn of a session also waits for the previous turn's
 *                end plus its think time;
 *   concurrency  closed loop, one run per level of a sweep: a fixed number
 *                of requests in flight, the trace's requests in order;
 *   rate         open loop at a rate with Poisson, gamma or constant
 *                arrivals, optionally capped at max_concurrency in flight
 *                (the time spent waiting for a slot is recorded, as
 *                sent - sched, not hidden).
 *
 * Usage: lt_replay_new (checks the options, reads the trace; no network),
 * lt_replay_prepare (asks the target for its model and calibrates prompt
 * lengths against it, then starts the results file), lt_replay_run (every
 * run, writing the results file as it goes), lt_replay_free. lt_replay_stop may be called from a
 * signal handler: in-flight requests are then recorded as aborted, requests
 * never sent are recorded too, and the file is closed properly.
 *
 * The API key is only ever put in the Authorization header; it is never
 * written to the results file or to an error message.
 */
#ifndef LT_REPLAY_H
#define LT_REPLAY_H

#include "replay/replay_prompt.h"
#include "replay/route.h"
#include "plan/plan.h"
#include "base/lt_err.h"
#include "base/lt_time.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Output tokens asked for when a record says neither out nor max_tokens. */
#define LT_REPLAY_DEFAULT_OUT LT_PLAN_DEFAULT_OUT

/* The load modes, the plan's (plan/plan.h). */
enum lt_replay_mode {
    LT_REPLAY_MODE_TRACE = LT_PLAN_TRACE,
    LT_REPLAY_MODE_CONCURRENCY = LT_PLAN_CONCURRENCY,
    LT_REPLAY_MODE_RATE = LT_PLAN_RATE,
};

/* Error classes written in results' `err`. */
#define LT_REPLAY_ERR_CONNECT "connect"          /* no connection, or closed before any byte */
#define LT_REPLAY_ERR_TLS "tls"                  /* TLS handshake or verification failed */
#define LT_REPLAY_ERR_TIMEOUT "timeout"          /* the per-request timeout expired */
#define LT_REPLAY_ERR_TTFT "first_token_timeout" /* no token within the first-token timeout */
#define LT_REPLAY_ERR_HTTP "http"                /* an HTTP error status */
#define LT_REPLAY_ERR_RATELIMIT "ratelimit"      /* HTTP 429 */
#define LT_REPLAY_ERR_MALFORMED "malformed"      /* a chunk or body that is not what the API says */
#define LT_REPLAY_ERR_STREAM "stream_error"      /* the stream carried an error object */
#define LT_REPLAY_ERR_INCOMPLETE "incomplete"    /* ended without [DONE] or a finish reason */
#define LT_REPLAY_ERR_SHORT "short"              /* fewer tokens than forced */
#define LT_REPLAY_ERR_ABORTED "aborted"          /* stopped by the user (Ctrl-C, SIGTERM) */
#define LT_REPLAY_ERR_UNSENT "unsent" /* never sent: the run was stopped first (not an error) */
#define LT_REPLAY_ERR_BAD_USAGE "bad_usage"         /* usage the chunks received disprove */
#define LT_REPLAY_ERR_TOO_LARGE "request_too_large" /* its body could not be built: never sent */
#define LT_REPLAY_ERR_TRANSFER "transfer"           /* any other transfer failure */
#define LT_REPLAY_ERR_MEDIA "media" /* its media could not be made or sent (err_body says why) */
/* Not an error class: the request was closed on purpose where the trace
 * said its client left (replay_cancel.c); recorded as `cancelled`. */
#define LT_REPLAY_CANCELLED "cancelled"

/* Bytes of a failed request's answer kept in its result (err_body). */
#define LT_REPLAY_ERR_BODY 512

#define LT_REPLAY_MAX_LEVELS 64
#define LT_REPLAY_MAX_HEADERS 32
#define LT_REPLAY_MAX_METRICS_URLS 7

/* Which HTTP client carries the requests (docs/replay.md "HTTP clients"). */
enum lt_replay_client {
    LT_REPLAY_CLIENT_AUTO, /* lean for plain http:// without a proxy, else curl */
    LT_REPLAY_CLIENT_CURL, /* libcurl: TLS, HTTP/2, proxies */
    LT_REPLAY_CLIENT_LEAN, /* replay's own HTTP/1.1 client (plain http only) */
};

/* What a progress callback is told, about the run in progress. */
struct lt_replay_progress {
    uint32_t run;   /* run id (0-based) */
    uint32_t runs;  /* runs in all */
    uint32_t level; /* concurrency of this run (0 if not closed loop) */
    uint64_t done;  /* requests finished, errors included */
    uint64_t total; /* requests this run will send */
    uint64_t errors;
    uint64_t inflight;
    uint64_t out_tokens; /* output tokens received */
    double elapsed_s;    /* since the run's origin */
    double lag_s;        /* how late the next due send is now (0: on time, or none due) */
    double waiting;      /* the target's waiting queue at its last scrape; < 0: unknown */
    bool stopped;        /* the replay was stopped: done counts the unsent too */
    uint64_t unsent;     /* of done, never sent (stopped first) */
    double sched_end_s;  /* when the schedule's last request leaves, since the origin;
                          * < 0: unknown (a closed loop, paced by the server) */
};

/* Totals over the whole replay. */
struct lt_replay_stats {
    uint64_t requests, ok, errors, aborted, ratelimited;
    uint64_t cancelled;      /* closed where the trace's client left (neither ok nor errors) */
    uint64_t unsent;         /* never sent: the replay was stopped first (neither ok nor errors) */
    uint64_t retries;        /* attempts repeated (--retry) */
    uint64_t connects;       /* connections opened (reuse is the rest) */
    const char *http_client; /* "lean" or "curl": the client that carried the requests */
    uint64_t out_tokens;
    /* Prompt length check: requests whose server usage gave `in`, their
     * summed |in - want_in|, summed want_in, and the largest relative
     * error. */
    uint64_t len_checked;
    double len_abs_err, len_want, len_max_rel;
    /* The same for prompts sent as recorded or corpus text, which are not
     * fitted to a length: how far the server's count is from the
     * recorded one (another tokenizer or template), apart. */
    uint64_t text_checked;
    double text_abs_err, text_want, text_max_rel;
    struct lt_replay_calib calib; /* as used */
    char calib_how[224];          /* how the calibration was obtained */
    char model[128];              /* model name used */
    uint32_t runs;
    /* What each run delivered and what the client cost (replay_check.c;
     * also written at the run's end as its "check" record): the first 64. */
    struct lt_check checks[LT_REPLAY_MAX_LEVELS];
    uint32_t n_checks;
    /* server metrics (replay_scrape.c) */
    char scrape_how[512]; /* what is scraped, or why nothing is */
    uint64_t scrapes, scrape_errors;
    /* results whose timeline was thinned to fit the format ("thin": k) */
    uint64_t thinned;
    /* A write to the results file failed: no more was written, and
     * on_disk results reached it whole (the rest of requests were lost). */
    bool write_failed;
    uint64_t on_disk;
    /* Scraped values outside their range (lt_prom_map_canon_range), left
     * out of the samples' values and written under "bad"; the first one. */
    uint64_t scrape_bad;
    char scrape_bad_first[160];
    char reset_how[256]; /* how --reset-prefix-cache reset the cache */
    uint64_t resets;
    /* --window or --requests sampled the trace: what was kept */
    bool sampled;
    struct lt_plan_jobs_sample sample;
    /* The trace's images, made before the run (replay_media.h): distinct
     * shapes, their bytes, the time making them took (outside every
     * latency), shapes made as png for want of their codec, and image
     * parts refused (over --max-image-bytes or the pixel limit). */
    uint64_t media_shapes, media_bytes, media_substituted, media_refused;
    int64_t media_prep_us;
    /* --media-links: the link server's address (empty without), and the
     * GETs it answered with an image and with a 404 */
    char media_links[96];
    uint64_t media_link_gets, media_link_404;
    /* A fleet (opts.n_targets > 1): each replica's totals, n_replicas of
     * them (valid while the replay is); NULL with one target. */
    const struct lt_replay_replica *replicas;
    size_t n_replicas;
    uint64_t route_spilled; /* prefix routing: requests its load bound moved on */
};

/* One replica of a fleet, as the run goes (docs/replay.md "Fleets and
 * routing"). */
struct lt_replay_replica {
    char label[256];      /* its URL without user:password@ */
    uint64_t requests;    /* results recorded as served (or failed) here */
    uint64_t errors;      /* of them, errors */
    uint64_t failed_over; /* requests that failed here and were sent to another (--failover) */
    uint64_t out_tokens;
    int64_t down_at_us; /* --failover: when it was marked down, since the run's origin; -1 */
};

struct lt_replay_opts {
    const char *trace_path;
    const char *out_path; /* NULL: the runs go to the live engine's writer (lt_replay_engine_of) */
    const char *target;   /* base URL, e.g. http://127.0.0.1:8000 (a trailing /v1 is ignored) */
    const char *target_label; /* written in run records; NULL = target */
    const char *model;        /* NULL: discovered from GET /v1/models */
    const char *api_key;      /* NULL = none; never written anywhere */
    bool api_key_bearer_too;  /* Messages: the key also as a bearer token (vLLM's /v1/messages) */
    const char *headers[LT_REPLAY_MAX_HEADERS]; /* extra "Name: value" headers */
    size_t n_headers;
    bool insecure; /* TLS verification off */
    enum lt_replay_client http_client;

    enum lt_replay_mode mode;
    /* trace time */
    struct lt_plan_sched_tt tt;
    /* closed loop */
    uint32_t levels[LT_REPLAY_MAX_LEVELS];
    size_t n_levels;
    uint64_t requests; /* per run; 0 = the whole trace */
    uint64_t warmup;   /* leading requests recorded but excluded */
    /* open loop */
    double rate;
    enum lt_arrivals arrivals;
    double cv;
    uint32_t max_concurrency; /* 0 = no cap */
    int64_t duration_us;      /* open loop / closed loop time limit; 0 = none */
    uint64_t seed;

    /* requests */
    enum lt_replay_api api;
    bool no_stream;
    bool no_force_length;
    bool chunk_usage;
    bool no_token_ids;
    bool synthetic_prompts;
    bool no_calibrate;
    bool no_cancel; /* replay records whose client left mid-stream to completion */
    const char *prompts_path;
    const char *reasoning_effort;
    int thinking;         /* LT_REPLAY_THINK_* of replay_prompt.h */
    uint32_t default_out; /* 0 = LT_REPLAY_DEFAULT_OUT */

    int64_t timeout_us;             /* per request; 0 = 10 minutes */
    int64_t first_token_timeout_us; /* 0 = none */
    int64_t connect_timeout_us;     /* 0 = 10 s */
    uint32_t retries; /* retries of 429, 503 and connect failures (after Retry-After, or
                         1 s doubling up to 30 s); 0 = off. A retried request keeps its
                         scheduled time and records its last attempt. */
    size_t max_line;  /* 0 = 1 MiB: longest SSE line */
    size_t max_body;  /* 0 = 16 MiB: longest non-streamed body */

    /* Server metrics (docs/server-metrics.md §6). */
    int server_metrics; /* 0: scrape the target's /metrics when it serves Prometheus text;
                           1: scrape it (and metrics_urls); -1: scrape nothing */
    const char *metrics_urls[LT_REPLAY_MAX_METRICS_URLS]; /* other exporters */
    size_t n_metrics_urls;
    int64_t metrics_interval_us; /* 0 = 250 ms; at least 10 ms */
    const char *metrics_keep;    /* regex of raw families kept in samples; NULL = none */
    const char *metrics_map;     /* a mapping file (prom_map.h); NULL = the built-in table */
    bool reset_prefix_cache;     /* POST /reset_prefix_cache (or /flush_cache) before each run */

    void (*progress)(void *ud, const struct lt_replay_progress *p);
    /* Told once at each run's start, before anything is sent (its
     * schedule: sched_end_s, total); may be NULL. Same ud. */
    void (*run_begin)(void *ud, const struct lt_replay_progress *p);
    void *progress_ud;
    /* What a step before the run is waiting for, one line without a
     * newline (the model probe of a target that does not answer); may be
     * NULL. */
    void (*note)(void *ud, const char *line);
    void *note_ud;

    /* What an earlier replay of the same target learned before its run
     * (lt_replay_known_new): lt_replay_prepare then takes the model and the
     * prompt calibration from it and asks the target neither again (a
     * capacity search's later probes). NULL: ask. */
    const struct lt_replay_known *known;

    /* One part of a replay split over several processes (the MPI job of
     * cli/replay_ranks.c; replay itself knows nothing of MPI). parts > 1: this
     * process sends only part `part`'s requests, chosen by
     * lt_plan_jobs_split. Every part computes the whole run's schedule (trace
     * time, or open-loop arrivals from the same seed) and keeps its own
     * requests, so together the parts send exactly the single-process
     * schedule. Closed-loop levels and max_concurrency are per part: the
     * caller splits them. Run records then carry the extra keys "rank",
     * "ranks" and "planned" (requests this part meant to send in the run). */
    uint32_t part, parts;
    /* Called before each run, may be NULL: sets *origin, the run's time 0
     * (CLOCK_MONOTONIC; the caller makes it common to all parts), and may
     * add raw msgpack key/value pairs to the run record (*extra, valid
     * until the next call; e.g. the measured clock offset). Returns 0 or a
     * negative code with err filled. */
    int (*run_origin)(void *ud, uint32_t run, lt_mono *origin, struct lt_extra *extra,
                      struct lt_err *err);
    void *run_origin_ud;

    /* The live figures (replay/replay_live.h), kept as the run goes for a
     * dashboard or --live-metrics; NULL: none. The caller owns it; it
     * outlives the replay. */
    struct lt_replay_live *live;
    /* Recorded images larger than this are not made: their requests fail
     * alone ("media"); 0: LT_REPLAY_MAX_IMAGE_BYTES (20 MiB). */
    uint64_t max_image_bytes;
    /* Send images as links to a loopback server of the replay's own
     * (replay_media.h lt_replay_media_serve) instead of data URLs. */
    bool media_links;

    /* A fleet (docs/replay.md "Fleets and routing"): n_targets > 1 base
     * URLs, each request sent to the one the router (route.h) picks, its
     * result saying which ("replica": the index). target is targets[0]:
     * the model is asked of it and the prompts calibrated against it (the
     * replicas serve one config). route.n is set from n_targets;
     * route.weights has n_targets entries or is NULL. A fleet uses libcurl
     * (the lean client holds one host's connections). */
    const char *const *targets;
    size_t n_targets;
    struct lt_route_opts route;
    /* A request that failed on a replica as `connect` or `incomplete`
     * (it is gone, or it died mid-stream): that replica is marked down
     * and the request sent again on another. false: recorded as errors. */
    bool failover;
};

/* The plan options of o (its load mode, schedule, cap, retries and part),
 * for lt_plan_init: the live replay and the virtual one plan alike. */
void lt_replay_plan_opts(const struct lt_replay_opts *o, struct lt_plan_opts *po);

struct lt_replay;
struct lt_replay_known;
struct lt_replay_live;

/* Check the options, read the trace, size the plan, prepare the HTTP
 * machinery and the event loop. No network call. Returns NULL and fills
 * err on failure. */
struct lt_replay *lt_replay_new(const struct lt_replay_opts *opts, struct lt_err *err);

/* The steps that ask the target, run before lt_replay_run: find the model
 * (opts.model, or else GET /v1/models, within the connect timeout and
 * the lesser of timeout_us and 30 s, saying through note what it waits
 * for: the target must serve exactly one), calibrate prompt lengths
 * (its /tokenize, or three one-token requests; never fails), then start
 * the results file. Returns 0 or a negative code with err filled. */
int lt_replay_prepare(struct lt_replay *rp, struct lt_err *err);

/* Run every run, writing the results file (after lt_replay_prepare). Returns 0 (also when stopped:
 * everything is recorded) or a negative code with err filled. */
int lt_replay_run(struct lt_replay *r, struct lt_err *err);

/* Ask the running replay to stop. Async-signal-safe. */
void lt_replay_stop(struct lt_replay *r);
/* The same, saying why: the signal that stopped it (0: the caller, as a
 * capacity search's probe ends). Async-signal-safe. */
void lt_replay_stop_signal(struct lt_replay *r, int sig);
/* True once lt_replay_stop was called. */
bool lt_replay_stopped(const struct lt_replay *r);

void lt_replay_get_stats(const struct lt_replay *r, struct lt_replay_stats *st);

/* A copy of what lt_replay_prepare learned of r's target (the model, the
 * prompt calibration and the token ids it may use), for opts.known of
 * another replay of the same target; NULL when out of memory. */
struct lt_replay_known *lt_replay_known_new(const struct lt_replay *r);
/* Free; NULL is a no-op. */
void lt_replay_known_free(struct lt_replay_known *k);

/* Free; NULL is a no-op. */
void lt_replay_free(struct lt_replay *r);

/* The live engine (plan/plan_engine.h) of r: a replay made without
 * out_path and prepared (lt_replay_prepare then opens no file), whose
 * runs lt_engine_run appends to the writer it is handed. The engine owns
 * r (lt_engine_free frees it; so does a failure here). NULL when out of
 * memory. */
struct lt_engine;
struct lt_engine *lt_replay_engine_of(struct lt_replay *r);
/* The replay a live engine runs (its stats, what it learned of the
 * target); NULL for an engine of another kind. */
struct lt_replay *lt_replay_engine_replay(struct lt_engine *e);

/* The lean HTTP client's response parser (replay_h1.c) over data, read
 * in pieces whose size data's first byte picks; no I/O. For the fuzz
 * target (tests/fuzz/fuzz_h1.c); always returns 0. */
int lt_replay_h1_fuzz(const uint8_t *data, size_t size);

/* Ask GET base/v1/models for the served model names (at most max, copied
 * into names[i][128]). Returns the count or a negative code. */
int lt_replay_list_models(const char *base, const char *api_key, bool insecure, char (*names)[128],
                          int max, struct lt_err *err);

#endif

/*
 * The server-metrics scraper of a live replay (replay_scrape.c): the
 * endpoints, their curl handles and buffers, and the calls replay.c makes
 * from its event loop. Nothing outside replay/ includes this.
 */
#ifndef LT_REPLAY_SCRAPE_INTERNAL_H
#define LT_REPLAY_SCRAPE_INTERNAL_H
#include "base/lt_buf.h"
#include "base/lt_err.h"
#include "base/lt_time.h"
#include "metrics/prom_map.h"
#include "metrics/prom_text.h"
#include "replay/replay.h"
#include "traces/trace_format.h"

#include <curl/curl.h>
#include <regex.h>
#include <stdbool.h>
#include <stdint.h>

/* The target, the other exporters, and up to LT_SCRAPE_REPLICAS_MAX more
 * replicas of a fleet. */
#define LT_SCRAPE_REPLICAS_MAX 32
#define LT_SCRAPE_EPS_MAX (LT_REPLAY_MAX_METRICS_URLS + 1 + LT_SCRAPE_REPLICAS_MAX)

struct lt_replay_scrape_ep {
    char url[1100];
    CURL *easy;
    bool busy;   /* a scrape is in curl's multi handle */
    bool over;   /* the page passed the size limit */
    bool target; /* the target's own /metrics (its headers, its API key) */
    lt_mono sent;
    struct lt_buf page;
    struct lt_prom_values vals;
    struct lt_scrape_val v[LT_PM_SCALARS];
    struct lt_scrape_hist h[LT_PM_HISTS];
    struct lt_buf rawnames;    /* "name{...}\0" of the kept raw series */
    struct lt_scrape_val *raw; /* nraw of them */
    uint32_t nraw, capraw;
    long timeout_ms; /* of the transfer in progress */
    char err[512];   /* as long as an lt_err's message */
};

struct lt_replay_scraper {
    struct lt_replay_scrape_ep ep[LT_SCRAPE_EPS_MAX];
    int n;
    int tfd; /* the interval timerfd, in the replay's epoll set; -1 = none */
    int64_t interval_ns;
    struct curl_slist *plain; /* headers of other exporters: none of the target's */
    struct lt_prom_page pg;
    struct lt_prom_map *map;
    regex_t keep;
    bool has_keep;
    struct lt_buf extra;      /* the run record's extra keys, with trace_prefix_hit_ppm */
    struct lt_buf bad;        /* a sample's extra key "bad": the values out of range */
    double trace_hit;         /* the run's, from lt__replay_scrape_before_run; < 0: unknown */
    unsigned trace_hit_level; /* > 0: trace_hit estimated from 1 in 2^level prefix chains */
    double waiting;           /* the target's waiting queue at its last scrape; < 0: unknown */
    uint8_t *fam_keep;        /* per family of the page: 0 unknown, 1 keep, 2 not */
    size_t fam_cap;
    double running, kv; /* the target's running requests and KV use at its last scrape;
                         * NAN: unknown (the live figures' sparklines) */
};

struct lt_replay;

/* In lt_replay_new, after the engine: the timerfd, the keep regex, the
 * mapping file. No network. */
int lt__replay_scrape_init(struct lt_replay *rp, struct lt_err *err);
void lt__replay_scrape_release(struct lt_replay *rp);
/* In lt_replay_prepare: decide the endpoints (probing the target's
 * /metrics unless told), say what was decided in rp->st.scrape_how. */
int lt__replay_scrape_prepare(struct lt_replay *rp, struct lt_err *err);
/* Before a run's origin is set: the trace's prefix-cache hit rate of the
 * run, and --reset-prefix-cache. */
void lt__replay_scrape_before_run(struct lt_replay *rp);
/* The run record's extra keys plus trace_prefix_hit_ppm, the prefix-cache
 * hit rate the run's trace allows (when scraping and the trace has blocks). */
int lt__replay_scrape_run_extra(struct lt_replay *rp, struct lt_extra *extra, struct lt_err *err);
/* After the run record: scrape at the origin and every interval after. */
void lt__replay_scrape_start(struct lt_replay *rp);
/* The interval timer fired: start a scrape of every idle endpoint. */
void lt__replay_scrape_tick(struct lt_replay *rp);
/* A transfer of the multi handle ended: 1 if it was a scrape (recorded),
 * 0 if not, negative if the sample could not be written. */
int lt__replay_scrape_done(struct lt_replay *rp, CURL *e, CURLcode c, struct lt_err *err);
/* The run is over: stop the timer, drop scrapes in flight, take a last
 * sample of every endpoint (blocking: no request is left to delay). */
int lt__replay_scrape_stop(struct lt_replay *rp, struct lt_err *err);
#endif

/*
 * What the files of the live replay share, and nothing outside replay/
 * includes: a request in flight (struct lt_replay_req) and the replay
 * itself (struct lt_replay). replay.c is the engine (epoll, curl, the
 * plan's clock), replay_record.c writes the run and result records,
 * replay_setup.c builds and frees a replay without any network call, and
 * replay_target.c holds the explicit steps that ask the target (its model,
 * prompt length calibration).
 */
#ifndef LT_REPLAY_INTERNAL_H
#define LT_REPLAY_INTERNAL_H

#include "replay/replay.h"
#include "replay/replay_media.h"

#include "replay/h1_internal.h"
#include "replay/replay_http.h"
#include "replay/scrape_internal.h"
#include "wire/wire_resp.h"
#include "wire/wire_sse.h"
#include "plan/plan.h"
#include "base/lt_buf.h"
#include "base/lt_heap.h"
#include "base/lt_time.h"
#include "base/lt_u64map.h"
#include "plan/plan_engine.h"
#include "traces/trace_writer.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum lt_replay_req_state { RS_IN_CURL, RS_SENT, RS_RECEIVING };

/* Where a request is closed on purpose (replay_cancel.c): its trace's
 * client left mid-stream. */
enum lt_replay_cancel_by { CB_NONE, CB_TOKENS, CB_TIME };
struct lt_replay_cancel_req {
    enum lt_replay_cancel_by by;
    uint32_t tokens;  /* CB_TOKENS: close once this many output tokens came */
    int64_t after_us; /* CB_TIME: close this long after the request was sent */
    lt_mono at;       /* CB_TIME: when, as now known */
    size_t idx;       /* position in the deadline heap; SIZE_MAX: not in it */
};
struct lt_replay_req {
    CURL *easy;
    struct lt_replay *rp;
    struct lt_replay_req *prev, *next; /* in-flight list, or the free list (next) */
    struct lt_replay_req *unsent_next; /* the list of requests that could not be built */
    size_t seq;
    enum lt_replay_req_state state;
    lt_mono sched, added, sent, fb, last, now;
    lt_mono body_t; /* first byte of a non-streamed body */
    bool has_sent, has_fb, headers_seen, is_sse;
    long status;
    size_t head_bytes;      /* response header bytes so far */
    const char *err;        /* set by a callback or the tick */
    int64_t retry_after_us; /* the server's Retry-After, or -1 */
    uint32_t want_in, want_out;
    uint32_t want_img, want_vid; /* the image and video tokens its record says (the check's) */
    struct lt_wire_sse sse;
    struct lt_wire_resp resp;
    struct lt_buf body;         /* request body; curl reads it during the transfer */
    struct lt_buf rbody;        /* a non-streamed response body */
    char cerr[CURL_ERROR_SIZE]; /* curl's words on a failed transfer */
    struct h1_conn *conn;       /* its connection on the lean client (replay_h1.c) */
    bool h1_fresh;              /* sent again on a new connection after a dead reused one */
    struct lt_replay_cancel_req cancel;
    int replica;       /* a fleet's replica serving it; -1: none (one target, or unsent) */
    int failover_from; /* the replica it failed on before (--failover); -1: none */
};

/* The deadlines of the requests to cancel by time (replay_cancel.c). */
struct lt_replay_cancels {
    struct lt_heap due; /* struct lt_replay_req *, earliest first */
    int tfd;            /* a timerfd in the loop's epoll set, armed at the earliest */
    uint64_t seq;       /* tie-break */
};

/* The run's self-check in progress (replay_check.c). */
/* The run's check, kept as it goes (nothing per request of the trace):
 * the span of the sends and of their scheds, the time in flight, and the
 * ends past the latest send so far, which the busy time must clip. */
struct lt_replay_chk {
    uint64_t sent;
    int64_t s0, s1, q0, q1; /* first and last send, first and last sched, µs */
    uint64_t sends;         /* transfers begun so far (retries included) */
    int64_t held;           /* closed loop: when the level-th send left (the plan holds the
                             * level from then to the last send), µs; INT64_MAX before */
    double busy;            /* sum of the time in flight after held, clipped below */
    struct lt_heap over;    /* ends (int64_t) after s1 */
    double cpu0;
    lt_mono t0;
    uint64_t out0, done;
    /* the server's image tokens against the records' (lt_check img_*) */
    uint64_t img_checked, img_exact, img_want, img_got, img_unreported;
    uint64_t vid_checked, vid_exact, vid_want, vid_got; /* ... and video tokens */
};

/* What the target says about itself (replay_server.c); 0 / "" unknown. */
struct lt_replay_word {
    char kind[16];         /* "llama.cpp" when GET /props answered as it does */
    char model[128];       /* the server's model name (alias, or the file's name) */
    int64_t slots;         /* sequences it runs at once (llama.cpp total_slots) */
    int64_t ctx;           /* context per slot (or the model's limit) */
    int64_t vocab;         /* vocabulary size */
    int64_t rtt_us;        /* median round trip of a request it does no work for */
    int warm_slots;        /* slots holding earlier prompts at the run's start; -1 unknown */
    bool silent;           /* GET /props had no answer at all: nothing more is asked */
    char cache_state[200]; /* the run's starting cache state, in words */
    bool models_read;      /* GET /v1/models was read (the model's discovery) */
    int64_t models_ctx;    /* ... its max_model_len (vLLM's context limit) */
    char models_id[128];   /* ... its first model's id */
};

struct lt_replay {
    struct lt_replay_opts o;
    struct lt_plan_jobs trace;
    struct lt_replay_build build;
    struct lt_replay_corpus corpus;
    uint32_t *tok_ids; /* build.ids: token ids the server produced */
    struct lt_replay_http http;
    char base[1024];
    char url[1100];
    char model[128];
    char label[1024]; /* the target as written in files: no user:password@ */

    CURLM *multi;
    int epfd, sched_tfd, tick_tfd;
    lt_mono curl_due; /* when curl wants socket_action(CURL_SOCKET_TIMEOUT) */
    bool curl_due_set;
    int stop_pipe[2];
    volatile sig_atomic_t stop;
    volatile sig_atomic_t stop_sig; /* the signal that stopped it; 0: the caller */
    int64_t stop_at_us;             /* when the loop saw the stop, since the run's origin; -1 */
    struct lt_writer *w;
    /* Run through the engine interface (replay_engine.c): w is the
     * caller's, its run ids start at run_base, and sink is told each run
     * record and result; NULL: lt_replay_run's own file, ids from 0. */
    const struct lt_engine_sink *sink;
    uint32_t run_base;

    /* the run in progress */
    struct lt_plan plan;
    uint32_t run_id, n_runs, level;
    enum lt_replay_mode mode;
    lt_mono origin;
    uint64_t errors_run, out_run, unsent_run;
    bool kick;        /* handles were added: let curl start them now */
    lt_mono next_due; /* when the next send falls due (time-driven modes) */
    bool due_set;
    lt_mono sched_armed;       /* what sched_tfd is set to: 0 nothing, -1 not known */
    struct lt_replay_req head; /* in-flight list sentinel */
    struct lt_replay_req *free_reqs;
    struct lt_replay_req *unsent; /* could not be built: recorded by pump, never sent */
    struct lt_chunk *chunkbuf;
    size_t chunkbuf_cap;
    struct lt_buf res_keys; /* a result's extra keys (lt_results_keys), reused by each */

    struct lt_replay_chk chk;
    struct lt_replay_stats st;
    struct lt_replay_scraper scr;     /* replay_scrape.c */
    struct lt_replay_word word;       /* replay_server.c */
    struct lt_replay_cancels cancels; /* replay_cancel.c */
    struct h1 h1;                     /* the lean HTTP/1.1 client (replay_h1.c) */
    struct lt_replay_media *media;    /* the trace's images (replay_media.c); NULL: none */
    /* Warm-up: the seqs of the run's first o.warmup first sends, in the
     * order they left (a --window starts mid-trace, a session's later
     * turn leaves after later requests: a trace position says neither);
     * a retry of one is still warm-up. */
    struct lt_u64map warm;
    uint64_t warm_sent;

    /* A fleet (opts.n_targets > 1): the router and each replica's URL and
     * totals; n_replicas 0 with one target. */
    struct lt_route router;
    struct lt_replay_replica *replicas;
    char (*replica_url)[1100];
    size_t n_replicas;
    int resend_from; /* send_seq: the request failed over from this replica; -1 */
};

static inline int64_t lt__replay_since_origin_us(const struct lt_replay *rp, lt_mono t)
{
    return lt_mono_diff_us(t, rp->origin);
}

/* replay.c: the event loop's descriptors and curl's multi handle. */
int lt__replay_engine_init(struct lt_replay *rp, struct lt_err *err);
/* ... and their release, with every request still held. */
void lt__replay_engine_release(struct lt_replay *rp);

/* replay.c, shared by both clients (curl's callbacks, replay_h1.c): one
 * response header line (without its line end; Retry-After, the SSE
 * content type); body bytes that arrived at now (0, or -1 with q->err set:
 * abort the transfer); and the end of q's transfer, classed x (a transport
 * failure) or, x NULL, by what arrived; q->err wins over both. */
void lt__replay_header_line(struct lt_replay_req *q, const char *p, size_t len);
int lt__replay_body_bytes(struct lt_replay_req *q, const char *p, size_t len, lt_mono now);
int lt__replay_done(struct lt_replay *rp, struct lt_replay_req *q, const char *x,
                    struct lt_err *err);
/* Take q's transfer off its client, whichever it is: a transfer not over
 * is cut mid-stream (curl drops it; the lean client closes its connection,
 * so the server sees the client go). finish() calls it for every end (a
 * timeout, a stop, a cancellation); one that cancels a request itself
 * calls it, then records the request. */
void lt__replay_transfer_cut(struct lt_replay *rp, struct lt_replay_req *q);

/* replay.c: close one request in flight now, whatever its transport,
 * and finish it with class `why` (the plan is told; its result written). */
int lt__replay_req_close(struct lt_replay *rp, struct lt_replay_req *q, const char *why,
                         lt_mono end_t, struct lt_err *err);

/* replay_cancel.c: replaying a client that left mid-stream (docs/replay.md
 * "Cancellations"). The engine calls these hooks; each is transport-neutral.
 * init/release with the engine (the timerfd joins the epoll set epfd). */
int lt__replay_cancel_init(struct lt_replay *rp, int epfd, struct lt_err *err);
void lt__replay_cancel_release(struct lt_replay *rp);
/* At send: read the job's cancel point and arm the timer for a time one.
 * Returns 0 or LT_ENOMEM. */
int lt__replay_cancel_arm(struct lt_replay *rp, struct lt_replay_req *q,
                          const struct lt_plan_job *job);
/* Before and after each stream event: true when the request is past its
 * token cancel point (q->err is then LT_REPLAY_CANCELLED and the caller
 * stops reading: the write callback ends the transfer). */
bool lt__replay_cancel_tokens_due(struct lt_replay_req *q);
/* The timerfd fired: close every request whose time is up. */
int lt__replay_cancel_fire(struct lt_replay *rp, struct lt_err *err);
/* The request is over (any way): forget its deadline. */
void lt__replay_cancel_disarm(struct lt_replay *rp, struct lt_replay_req *q);
/* Classify: a cancelled request is not an error. */
static inline bool lt__replay_is_cancelled(const char *errclass)
{
    return errclass && errclass[0] == 'c' && !strcmp(errclass, LT_REPLAY_CANCELLED);
}

/* replay_target.c: the model the target serves (checked against
 * opts.model, or the only one it serves) into rp->model; and the prompt
 * length calibration into rp->build.calib and rp->st.calib_how (never
 * fails: uncalibrated, with the reason). Both ask the target. */
int lt__replay_find_model(struct lt_replay *rp, struct lt_err *err);
/* Can a request body of body_len bytes be a prompt of `in` tokens? A
 * token of text is at least a byte, and a chat template adds a few
 * thousand tokens at most (LT_REPLAY_TEMPLATE_MAX): a count beyond that
 * is not a count (docs/metrics.md). */
#define LT_REPLAY_TEMPLATE_MAX 4096
static inline bool lt__replay_prompt_plausible(uint64_t in, size_t body_len)
{
    return in <= (uint64_t)body_len + LT_REPLAY_TEMPLATE_MAX;
}
void lt__replay_calibrate(struct lt_replay *rp);

/* replay_server.c: what the target says about itself into rp->word (in
 * lt_replay_prepare; never fails: what it does not answer stays unknown);
 * before each run, the cache state it starts from (and llama.cpp's slot
 * erase for --reset-prefix-cache unless reset_done: another reset
 * answered); the run record's keys of both (to m, *n counting them).
 * Returns m->rc. */
struct lt_mp;
void lt__replay_server_probe(struct lt_replay *rp);
void lt__replay_server_before_run(struct lt_replay *rp, bool reset_done);
/* ... and what a GET /v1/models answer says of the server (its first
 * model's vocabulary, context and id), so the model's discovery and the
 * server's word share one request. */
struct json_t;
void lt__replay_word_models(struct lt_replay_word *w, const struct json_t *models);
int lt__replay_server_extra(const struct lt_replay *rp, struct lt_mp *m, uint32_t *n);

/* replay_check.c: a run's self-check: started with the run (after the
 * plan is started), told of every result, ended with the run (into
 * st.checks); released with the replay. */
int lt__replay_check_start(struct lt_replay *rp, struct lt_err *err);
/* A request's transfer begins now: its send time, and the check's count
 * of sends (both clients call it where the first byte is about to go). */
void lt__replay_check_sent(struct lt_replay *rp, struct lt_replay_req *q);
void lt__replay_check_result(struct lt_replay *rp, size_t seq, const struct lt_replay_req *q,
                             lt_mono end_t);
/* ... its end: into st.checks, and written to the results file. */
int lt__replay_check_end(struct lt_replay *rp, struct lt_err *err);
/* q's usage against its record's image and video tokens (q->want_img or
 * q->want_vid > 0). */
void lt__replay_check_images(struct lt_replay *rp, const struct lt_replay_req *q);
void lt__replay_check_release(struct lt_replay *rp);

/* The id run_id has in the results file: from run_base on. */
static inline uint32_t lt__replay_rec_run(const struct lt_replay *rp)
{
    return rp->run_base + rp->run_id;
}

/* replay.c: every run of the plan into rp->w (lt_replay_run, and the
 * engine interface's run); the file is neither flushed nor closed. */
int lt__replay_run_all(struct lt_replay *rp, struct lt_err *err);

/* replay_record.c: open the results file (its header); nothing when the
 * engine interface hands a writer in (no out_path). */
int lt__replay_open_results(struct lt_replay *rp, struct lt_err *err);
/* The run record of the run starting now (extra: the
 * run_origin callback's keys), and seq's result (q NULL: never sent). */
int lt__replay_put_run(struct lt_replay *rp, struct lt_extra extra, struct lt_err *err);
int lt__replay_put_result(struct lt_replay *rp, size_t seq, const struct lt_replay_req *q,
                          const char *err, lt_mono end_t, struct lt_err *e);
/* The end of a run: its self-check (replay_check.c) as a "check" record. */
int lt__replay_put_check(struct lt_replay *rp, const struct lt_check *k, struct lt_err *err);

#endif

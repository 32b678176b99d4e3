/*
 * The replay engine: one thread, one epoll loop driving libcurl's multi
 * interface through its socket and timer callbacks (the design of curl's
 * docs/examples/ephiperfifo.c; curl's timeout is epoll_wait's timeout, see
 * on_timer), two timerfds (the next scheduled send, a 250 ms housekeeping
 * tick) and a pipe that lt_replay_stop writes to from a signal handler.
 *
 * A run is a sequence of sends ("seqs"): seq k sends job order[k]; in the
 * time-driven modes it is due at offs[k] µs after the run's origin. Results
 * are written as requests finish, so the file grows as the run goes and a
 * crash loses at most the writer's last second.
 *
 * Request states. Each seq (state[]) and, once handed to curl, its struct req
 * (pooled, one per request in flight) go through:
 *
 *             due, or a closed-loop slot frees
 *   PENDING ----------------------------------------------+
 *     |  |                                                |
 *     |  +-- a session turn, previous turn not DONE       |
 *     |        --> WAITING --(previous DONE + think)------+
 *     |                                                   |
 *     +-- open-loop cap reached --> QUEUED --(slot frees)-+
 *                                                         |
 *     +---------------------------------------------------+
 *     v
 *   IN_CURL --prereq cb--> SENT --first byte (header cb)--> RECEIVING
 *     |                     |                                 |
 *     +---------------------+-------- done or error ----------+--> DONE
 *
 *   transitions besides the arrows:
 *   - any state --stop--> DONE, err "aborted" (without `sent` if never sent);
 *   - SENT, RECEIVING --no token by --first-token-timeout (tick)--> DONE;
 *   - DONE --429/503/connect and --retry left--> PENDING at Retry-After
 *     (the result is written only for the last attempt).
 *
 * Every seq of a run ends DONE with exactly one result record.
 */
#include "replay/replay.h"

#include "replay/replay_http.h"
#include "replay/replay_jobs.h"
#include "replay/replay_resp.h"
#include "replay/replay_sse.h"
#include "traces/lt_buf.h"
#include "traces/lt_rng.h"
#include "traces/lt_time.h"
#include "traces/lt_u64map.h"
#include "traces/trace_json.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define TICK_NS 250000000LL
#define MAX_CHUNKS (1u << 20)

enum req_state { RS_IN_CURL, RS_SENT, RS_RECEIVING };
enum seq_state { SEQ_PENDING = 0, SEQ_WAITING = 1, SEQ_QUEUED = 2, SEQ_LAUNCHED = 3, SEQ_DONE = 4 };

struct req {
    CURL *easy;
    struct lt_replay *rp;
    struct req *prev, *next; /* in-flight list, or the free list (next) */
    size_t seq;
    enum req_state state;
    lt_mono sched, added, sent, fb, last, now;
    lt_mono body_t; /* first byte of a non-streamed body */
    bool has_sent, has_fb, headers_seen, is_sse;
    long status;
    const char *err;        /* set by a callback or the tick */
    int64_t retry_after_us; /* the server's Retry-After, or -1 */
    uint32_t want_in, want_out;
    struct lt_replay_sse sse;
    struct lt_replay_resp resp;
    struct lt_buf body;  /* request body; curl reads it during the transfer */
    struct lt_buf rbody; /* a non-streamed response body */
};

struct heap_item {
    int64_t at;
    size_t seq;
};

struct lt_replay {
    struct lt_replay_opts o;
    struct lt_replay_jobs trace;
    struct lt_replay_build build;
    struct lt_replay_corpus corpus;
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
    struct lt_writer *w;

    /* the run in progress */
    uint32_t run_id, n_runs, level;
    enum lt_replay_mode mode;
    lt_mono origin;
    size_t nseq, cursor, started, done_n, total;
    uint32_t *order;                   /* job of each seq */
    int64_t *offs;                     /* due offset (µs) of each seq; its sched once launched */
    uint8_t *state;                    /* enum seq_state */
    int64_t *job_seq;                  /* seq of each job in a trace-mode run, or -1 */
    int64_t *job_end;                  /* end (µs from origin) of each job's request, or -1 */
    uint32_t *job_launched, *job_done; /* closed loop: per job, in this run */
    size_t *waitq;                     /* queued seqs (open loop cap), a ring */
    size_t wq_head, wq_len;
    struct heap_item *heap; /* session turns whose time is known */
    size_t heap_len;
    struct heap_item *rheap; /* requests waiting to be retried */
    size_t rheap_len;
    uint8_t *attempts; /* retries made, per seq */
    uint64_t inflight, errors_run, out_run;
    bool kick;        /* handles were added: let curl start them now */
    lt_mono next_due; /* when the next send falls due (time-driven modes) */
    bool due_set;
    struct req head; /* in-flight list sentinel */
    struct req *free_reqs;
    struct lt_chunk *chunkbuf;
    size_t chunkbuf_cap;
    uint8_t *mine;           /* split over parts: 1 for this part's jobs; NULL = all */
    uint64_t planned;        /* seqs of this run that this part sends */
    struct lt_buf run_extra; /* extra keys of the run record (parts > 1) */

    struct lt_replay_stats st;
};

/* ---- small helpers ---- */

static int64_t since_origin_us(const struct lt_replay *rp, lt_mono t)
{
    return lt_mono_diff_us(t, rp->origin);
}

static void arm_abs(int fd, lt_mono at)
{
    struct itimerspec its = {0};
    if (at.ns <= 0)
        at.ns = 1;
    its.it_value.tv_sec = (time_t)(at.ns / 1000000000LL);
    its.it_value.tv_nsec = (long)(at.ns % 1000000000LL);
    timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void disarm(int fd)
{
    struct itimerspec its = {0};
    timerfd_settime(fd, 0, &its, NULL);
}

static void drain(int fd)
{
    uint64_t x;
    while (read(fd, &x, sizeof x) > 0)
        ;
}

/* ---- curl's socket and timer callbacks (ephiperfifo's design) ---- */

static int on_socket(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    struct lt_replay *rp = userp;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(rp->epfd, EPOLL_CTL_DEL, s, NULL);
        curl_multi_assign(rp->multi, s, NULL);
        return 0;
    }
    struct epoll_event ev = {0};
    ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
    ev.data.fd = s;
    if (!socketp) {
        if (epoll_ctl(rp->epfd, EPOLL_CTL_ADD, s, &ev) < 0 && errno == EEXIST)
            epoll_ctl(rp->epfd, EPOLL_CTL_MOD, s, &ev);
        /* Any non-NULL pointer marks the socket as known to epoll. */
        curl_multi_assign(rp->multi, s, rp);
    } else {
        epoll_ctl(rp->epfd, EPOLL_CTL_MOD, s, &ev);
    }
    return 0;
}

/* curl's timeout is kept in memory and becomes epoll_wait's timeout
 * (ephiperfifo arms a timerfd instead; curl moves its timeout about twice
 * per request, and a timerfd_settime each time was 40 % of replay's system
 * calls). Millisecond precision is plenty for curl's own timeouts; the
 * schedule keeps its timerfd. 0 means "as soon as possible": socket_action
 * must not be called from inside this callback, so the loop does it. */
static int on_timer(CURLM *m, long timeout_ms, void *userp)
{
    struct lt_replay *rp = userp;
    rp->curl_due_set = timeout_ms >= 0;
    if (timeout_ms >= 0)
        rp->curl_due = lt_mono_add_ns(lt_mono_now(), timeout_ms * 1000000LL);
    return 0;
}

/* ---- per-request callbacks: every timestamp is read here ---- */

static int on_prereq(void *ud, char *ip, char *lip, int port, int lport)
{
    struct req *q = ud;
    q->sent = lt_mono_now();
    q->has_sent = true;
    q->state = RS_SENT;
    return CURL_PREREQFUNC_OK;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    struct req *q = ud;
    size_t len = size * n;
    if (!q->has_fb) {
        q->fb = lt_mono_now();
        q->has_fb = true;
        q->state = RS_RECEIVING;
    }
    if (len >= 5 && !memcmp(p, "HTTP/", 5)) /* a new header block (100, redirect) */
        q->is_sse = false;
    else if (len > 12 && !strncasecmp(p, "retry-after:", 12)) {
        char v[32];
        size_t vl = len - 12 < sizeof v - 1 ? len - 12 : sizeof v - 1;
        memcpy(v, p + 12, vl);
        v[vl] = '\0';
        char *end;
        long secs = strtol(v, &end, 10);
        if (end != v && secs >= 0 && secs <= 3600)
            q->retry_after_us = (int64_t)secs * 1000000;
    } else if (len > 13 && !strncasecmp(p, "content-type:", 13)) {
        const char *v = p + 13, *end = p + len;
        for (; v + 17 <= end; v++)
            if (!strncasecmp(v, "text/event-stream", 17)) {
                q->is_sse = true;
                break;
            }
    }
    return len;
}

static int on_event(void *ud, const char *data, size_t len)
{
    struct req *q = ud;
    return lt_replay_resp_event(&q->resp, data, len, q->now);
}

static size_t on_write(char *p, size_t size, size_t n, void *ud)
{
    struct req *q = ud;
    size_t len = size * n;
    q->now = q->last = lt_mono_now();
    if (!q->has_fb) {
        q->fb = q->now;
        q->has_fb = true;
        q->state = RS_RECEIVING;
    }
    if (!q->headers_seen) {
        q->headers_seen = true;
        curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &q->status);
    }
    bool ok = q->status >= 200 && q->status < 300;
    if (q->is_sse && ok) {
        int rc = lt_replay_sse_feed(&q->sse, p, len, on_event, q);
        if (rc < 0) {
            q->err = LT_REPLAY_ERR_MALFORMED;
            return 0; /* abort the transfer */
        }
        return len;
    }
    if (q->rbody.len + len > q->rbody.max) {
        if (ok) {
            q->err = LT_REPLAY_ERR_MALFORMED;
            return 0;
        }
        return len; /* an error body: its start is enough */
    }
    if (!q->rbody.len && ok)
        q->body_t = q->now; /* a whole answer's tokens all arrive with its first byte */
    if (lt_buf_append(&q->rbody, p, len) < 0) {
        q->err = LT_REPLAY_ERR_MALFORMED;
        return 0;
    }
    return len;
}

/* ---- request pool ---- */

static struct req *req_get(struct lt_replay *rp)
{
    struct req *q = rp->free_reqs;
    if (q) {
        rp->free_reqs = q->next;
        CURL *e = q->easy;
        struct lt_replay_sse sse = q->sse;
        struct lt_replay_resp resp = q->resp;
        struct lt_buf body = q->body, rbody = q->rbody;
        memset(q, 0, sizeof *q);
        q->easy = e;
        q->sse = sse;
        q->resp = resp;
        q->body = body;
        q->rbody = rbody;
        lt_replay_sse_reset(&q->sse);
        lt_replay_resp_reset(&q->resp);
        lt_buf_reset(&q->rbody);
        q->rp = rp;
        return q;
    }
    q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->easy = curl_easy_init();
    if (!q->easy) {
        free(q);
        return NULL;
    }
    q->rp = rp;
    size_t max_line = rp->o.max_line ? rp->o.max_line : (size_t)1 << 20;
    lt_replay_sse_init(&q->sse, max_line, max_line);
    lt_replay_resp_init(&q->resp, MAX_CHUNKS);
    lt_buf_init(&q->body, (size_t)256 << 20);
    lt_buf_init(&q->rbody, rp->o.max_body ? rp->o.max_body : (size_t)16 << 20);
    CURL *e = q->easy;
    lt_replay_http_setup(e, &rp->http);
    curl_easy_setopt(e, CURLOPT_URL, rp->url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, q);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, q);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, q);
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, q);
    /* 1 KiB: SSE events are small, and 10,000 streams must fit in 16 KiB
     * each (bench/README.md); a long stream costs a few more reads. */
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 1024L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
                     (long)((rp->o.timeout_us ? rp->o.timeout_us : 600000000LL) / 1000));
    return q;
}

static void req_put(struct lt_replay *rp, struct req *q)
{
    /* Keep the pool's memory modest: big buffers are not worth keeping. */
    if (q->body.cap > (1u << 20))
        lt_buf_release(&q->body);
    if (q->rbody.cap > (1u << 20))
        lt_buf_release(&q->rbody);
    q->next = rp->free_reqs;
    rp->free_reqs = q;
}

static void req_destroy(struct req *q)
{
    curl_easy_cleanup(q->easy);
    lt_replay_sse_release(&q->sse);
    lt_replay_resp_release(&q->resp);
    lt_buf_release(&q->body);
    lt_buf_release(&q->rbody);
    free(q);
}

/* ---- results ---- */

static int put_result(struct lt_replay *rp, size_t seq, const struct req *q, const char *err,
                      lt_mono end_t, struct lt_err *e)
{
    const struct lt_replay_job *job = &rp->trace.v[rp->order[seq]];
    struct lt_result r = {0};
    r.run = rp->run_id;
    r.index = job->index;
    r.sched = rp->offs[seq];
    r.err = err;
    r.warmup = seq < rp->o.warmup;
    static const uint8_t ctok_usage[] = {0xa4, 'c', 't', 'o', 'k', 0xa5, 'u', 's', 'a', 'g', 'e'};
    static const uint8_t ctok_one[] = {0xa4, 'c', 't', 'o', 'k', 0xa3, 'o', 'n', 'e'};
    uint8_t extra[32]; /* extra keys: "ctok" (how chunk tokens were counted), "retries" */
    if (q) {
        const struct lt_replay_resp *s = &q->resp;
        r.has |= LT_RHAS_WANT_IN | LT_RHAS_WANT_OUT;
        r.want_in = q->want_in;
        r.want_out = q->want_out;
        if (q->has_sent) {
            r.has |= LT_RHAS_SENT;
            r.sent = since_origin_us(rp, q->sent);
        }
        if (q->has_fb) {
            r.has |= LT_RHAS_FIRST_BYTE;
            r.first_byte = since_origin_us(rp, q->fb);
        }
        if (s->has_first_token) {
            r.has |= LT_RHAS_FIRST_TOKEN;
            r.first_token = since_origin_us(rp, s->first_token);
        }
        if (s->has_first_content) {
            r.has |= LT_RHAS_FIRST_CONTENT;
            r.first_content = since_origin_us(rp, s->first_content);
        }
        if (q->has_sent || q->has_fb) {
            r.has |= LT_RHAS_END;
            r.end = since_origin_us(rp, end_t);
        }
        if (q->status) {
            r.has |= LT_RHAS_STATUS;
            r.status = (int32_t)q->status;
        }
        if (s->n_chunks) {
            if (rp->chunkbuf_cap < s->n_chunks) {
                struct lt_chunk *c = realloc(rp->chunkbuf, s->n_chunks * sizeof *c);
                if (!c)
                    return lt_errset(e, LT_ENOMEM, "out of memory");
                rp->chunkbuf = c;
                rp->chunkbuf_cap = s->n_chunks;
            }
            for (uint32_t i = 0; i < s->n_chunks; i++) {
                rp->chunkbuf[i].t = since_origin_us(rp, s->chunks[i].t);
                rp->chunkbuf[i].tokens = s->chunks[i].tokens;
            }
            r.has |= LT_RHAS_CHUNKS;
            r.n_chunks = s->n_chunks;
            r.chunks = rp->chunkbuf;
            const uint8_t *ct = s->chunk_usage ? ctok_usage : ctok_one;
            size_t ctl = s->chunk_usage ? sizeof ctok_usage : sizeof ctok_one;
            memcpy(extra, ct, ctl);
            r.extra.len = ctl;
            r.extra.n = 1;
        }
        if (s->has_usage) {
            r.has |= LT_RHAS_IN | LT_RHAS_OUT | LT_RHAS_REASONING | LT_RHAS_CACHED;
            r.in = s->in;
            r.out = s->out;
            r.reasoning = s->reasoning;
            r.cached = s->cached;
            r.count = "usage";
        } else if (s->n_chunks) {
            r.has |= LT_RHAS_OUT | LT_RHAS_REASONING;
            r.out = s->counted;
            r.reasoning = s->counted_reasoning;
            r.count = "chunks";
        }
        if (s->has_finish)
            r.finish = s->finish;
    }
    if (rp->attempts && rp->attempts[seq]) { /* "retries": n (a positive fixint) */
        static const uint8_t key[] = {0xa7, 'r', 'e', 't', 'r', 'i', 'e', 's'};
        memcpy(extra + r.extra.len, key, sizeof key);
        extra[r.extra.len + sizeof key] = rp->attempts[seq] & 0x7f;
        r.extra.len += sizeof key + 1;
        r.extra.n++;
    }
    r.extra.data = extra;
    return lt_writer_put_result(rp->w, &r, e);
}

/* The error class of a finished transfer. */
static const char *classify(struct lt_replay *rp, struct req *q, CURLcode c)
{
    if (q->err)
        return q->err;
    switch (c) {
    case CURLE_OK:
        break;
    case CURLE_OPERATION_TIMEDOUT:
        return LT_REPLAY_ERR_TIMEOUT;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return LT_REPLAY_ERR_CONNECT;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
        return LT_REPLAY_ERR_TLS;
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
        return q->has_fb ? LT_REPLAY_ERR_INCOMPLETE : LT_REPLAY_ERR_CONNECT;
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING:
        return LT_REPLAY_ERR_MALFORMED;
    default:
        return LT_REPLAY_ERR_TRANSFER;
    }
    if (q->status == 429)
        return LT_REPLAY_ERR_RATELIMIT;
    if (q->status < 200 || q->status >= 300)
        return LT_REPLAY_ERR_HTTP;
    if (q->is_sse) {
        if (lt_replay_sse_finish(&q->sse, on_event, q) < 0)
            return LT_REPLAY_ERR_MALFORMED;
        if (q->resp.error_event)
            return LT_REPLAY_ERR_STREAM;
        if (!q->resp.done && !q->resp.has_finish)
            return LT_REPLAY_ERR_INCOMPLETE;
    } else {
        lt_mono t = q->body_t.ns ? q->body_t : q->last;
        if (lt_replay_resp_body(&q->resp, q->rbody.p ? q->rbody.p : "", q->rbody.len, t) < 0)
            return LT_REPLAY_ERR_MALFORMED;
        if (q->resp.error_event)
            return LT_REPLAY_ERR_STREAM;
    }
    if (rp->build.force_length && lt_replay_resp_out(&q->resp) < q->want_out)
        return LT_REPLAY_ERR_SHORT;
    return NULL;
}

/* ---- scheduling ---- */

/* A binary min-heap of (time, seq). */
static void hpush(struct heap_item *h, size_t *len, int64_t at, size_t seq)
{
    size_t i = (*len)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p].at <= at)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = (struct heap_item){at, seq};
}

static struct heap_item hpop(struct heap_item *h, size_t *len)
{
    struct heap_item top = h[0], last = h[--*len];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *len)
            break;
        if (c + 1 < *len && h[c + 1].at < h[c].at)
            c++;
        if (h[c].at >= last.at)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*len)
        h[i] = last;
    return top;
}

static void heap_push(struct lt_replay *rp, int64_t at, size_t seq)
{
    hpush(rp->heap, &rp->heap_len, at, seq);
}

static struct heap_item heap_pop(struct lt_replay *rp)
{
    return hpop(rp->heap, &rp->heap_len);
}

static int launch(struct lt_replay *rp, size_t seq, struct lt_err *err)
{
    struct req *q = req_get(rp);
    if (!q)
        return lt_errset(err, LT_ENOMEM, "out of memory starting a request");
    const struct lt_replay_job *job = &rp->trace.v[rp->order[seq]];
    q->seq = seq;
    q->state = RS_IN_CURL;
    q->retry_after_us = -1;
    q->sched = lt_mono_add_ns(rp->origin, rp->offs[seq] * 1000);
    int rc = lt_replay_build_body(&q->body, &rp->build, job, &q->want_in, &q->want_out);
    if (rc < 0) {
        req_put(rp, q);
        return lt_errset(err, rc, "cannot build the request for trace record %llu",
                         (unsigned long long)job->index);
    }
    curl_easy_setopt(q->easy, CURLOPT_POSTFIELDS, q->body.p);
    curl_easy_setopt(q->easy, CURLOPT_POSTFIELDSIZE, (long)q->body.len);
    q->added = lt_mono_now();
    if (curl_multi_add_handle(rp->multi, q->easy) != CURLM_OK) {
        req_put(rp, q);
        return lt_errset(err, LT_EIO, "curl refused a request");
    }
    q->next = rp->head.next;
    q->prev = &rp->head;
    rp->head.next->prev = q;
    rp->head.next = q;
    rp->state[seq] = SEQ_LAUNCHED;
    if (!rp->attempts[seq])
        rp->job_launched[rp->order[seq]]++;
    rp->kick = true;
    rp->started++;
    rp->inflight++;
    return 0;
}

/* A seq is due at `at`: send it, or queue it behind the concurrency cap. */
static int due(struct lt_replay *rp, size_t seq, int64_t at, struct lt_err *err)
{
    rp->offs[seq] = at;
    if (rp->o.max_concurrency && rp->inflight >= rp->o.max_concurrency) {
        rp->waitq[(rp->wq_head + rp->wq_len++) % rp->nseq] = seq;
        rp->state[seq] = SEQ_QUEUED;
        return 0;
    }
    return launch(rp, seq, err);
}

/* Time of a session turn whose previous turn ended: its own time, or the
 * previous end plus the think time (scaled like the trace), whichever is
 * later. */
static int64_t turn_time(const struct lt_replay *rp, size_t seq, int64_t prev_end)
{
    const struct lt_replay_job *job = &rp->trace.v[rp->order[seq]];
    double scale = rp->o.tt.speed > 0 ? 1.0 / rp->o.tt.speed : 1.0;
    int64_t think = job->has & LT_HAS_THINK ? (int64_t)((double)job->think * scale) : 0;
    int64_t t = prev_end + (think > 0 ? think : 0);
    return t > rp->offs[seq] ? t : rp->offs[seq];
}

/* Closed loop: a session's turn may start once the previous turn's request
 * of the same lap has finished (a job's n-th launch needs its previous
 * turn's n-th completion; the trace repeats when --requests exceeds it). */
static bool turn_ready(const struct lt_replay *rp, size_t seq)
{
    uint32_t j = rp->order[seq];
    int64_t p = rp->trace.v[j].prev;
    return p < 0 || rp->job_launched[j] < rp->job_done[p];
}

/* The cursor's turn must wait: bring the nearest ready seq of the next 64
 * forward (so order is kept as far as the sessions allow). */
static bool pull_ready(struct lt_replay *rp)
{
    size_t k = rp->cursor;
    for (size_t j = k + 1; j < rp->total && j <= k + 64; j++) {
        if (turn_ready(rp, j)) {
            uint32_t t = rp->order[j];
            memmove(&rp->order[k + 1], &rp->order[k], (j - k) * sizeof *rp->order);
            rp->order[k] = t;
            return true;
        }
    }
    return false;
}

/* Launch everything due by now; arm the schedule timer for what is next. */
static int pump(struct lt_replay *rp, struct lt_err *err)
{
    int rc = 0;
    if (rp->stop)
        return 0;
    int64_t now = since_origin_us(rp, lt_mono_now());
    while (rp->rheap_len && rp->rheap[0].at <= now) {
        struct heap_item h = hpop(rp->rheap, &rp->rheap_len);
        if (rp->o.max_concurrency && rp->inflight >= rp->o.max_concurrency) {
            rp->waitq[(rp->wq_head + rp->wq_len++) % rp->nseq] = h.seq;
            rp->state[h.seq] = SEQ_QUEUED;
        } else {
            LT_TRY(launch(rp, h.seq, err));
        }
    }
    if (rp->mode == LT_REPLAY_MODE_CONCURRENCY) {
        if (now < 0) { /* an origin agreed ahead (run_origin): the loop starts there */
            arm_abs(rp->sched_tfd, rp->origin);
            return 0;
        }
        bool timeup = rp->o.duration_us > 0 && now >= rp->o.duration_us;
        if (timeup && rp->total > rp->cursor) {
            /* Requests never meant to be sent are not recorded. */
            for (size_t k = rp->cursor; k < rp->nseq; k++)
                rp->state[k] = SEQ_DONE;
            rp->total = rp->cursor;
        }
        /* a request waiting to be retried keeps its slot */
        while (!timeup && rp->cursor < rp->total && rp->inflight + rp->rheap_len < rp->level) {
            if (!turn_ready(rp, rp->cursor) && !pull_ready(rp))
                break; /* every candidate waits for its previous turn */
            size_t k = rp->cursor++;
            rp->offs[k] = now;
            LT_TRY(launch(rp, k, err));
        }
        if (rp->rheap_len)
            arm_abs(rp->sched_tfd, lt_mono_add_ns(rp->origin, rp->rheap[0].at * 1000));
        return 0;
    }
    while (rp->cursor < rp->nseq && rp->offs[rp->cursor] <= now) {
        size_t k = rp->cursor++;
        if (rp->state[k] == SEQ_DONE)
            continue; /* cut by the window or duration */
        const struct lt_replay_job *job = &rp->trace.v[rp->order[k]];
        if (rp->mode == LT_REPLAY_MODE_TRACE && job->prev >= 0 && rp->job_seq[job->prev] >= 0) {
            int64_t pe = rp->job_end[job->prev];
            if (pe < 0) {
                rp->state[k] = SEQ_WAITING; /* released when the previous turn ends */
                continue;
            }
            int64_t at = turn_time(rp, k, pe);
            if (at > now) {
                rp->state[k] = SEQ_WAITING;
                heap_push(rp, at, k);
                continue;
            }
            LT_TRY(due(rp, k, at, err));
            continue;
        }
        LT_TRY(due(rp, k, rp->offs[k], err));
    }
    while (rp->heap_len && rp->heap[0].at <= now) {
        struct heap_item h = heap_pop(rp);
        LT_TRY(due(rp, h.seq, h.at, err));
    }
    int64_t next = INT64_MAX;
    if (rp->cursor < rp->nseq)
        next = rp->offs[rp->cursor];
    if (rp->heap_len && rp->heap[0].at < next)
        next = rp->heap[0].at;
    if (rp->rheap_len && rp->rheap[0].at < next)
        next = rp->rheap[0].at;
    rp->due_set = next != INT64_MAX;
    if (rp->due_set) {
        rp->next_due = lt_mono_add_ns(rp->origin, next * 1000);
        arm_abs(rp->sched_tfd, rp->next_due);
    } else {
        disarm(rp->sched_tfd);
    }
out:
    return rc;
}

static void unlink_req(struct req *q)
{
    q->prev->next = q->next;
    q->next->prev = q->prev;
}

/* A request is over: record it, recycle it, let what waited on it go. */
static int finish(struct lt_replay *rp, struct req *q, const char *errclass, lt_mono end_t,
                  struct lt_err *err)
{
    int rc = 0;
    size_t seq = q->seq;
    curl_multi_remove_handle(rp->multi, q->easy);
    unlink_req(q);
    rp->inflight--;
    if (errclass && rp->o.retries && !rp->stop && rp->attempts[seq] < rp->o.retries &&
        rp->attempts[seq] < 255 &&
        (!strcmp(errclass, LT_REPLAY_ERR_RATELIMIT) || !strcmp(errclass, LT_REPLAY_ERR_CONNECT) ||
         (!strcmp(errclass, LT_REPLAY_ERR_HTTP) && q->status == 503))) {
        int64_t delay =
            q->retry_after_us >= 0 ? q->retry_after_us : (int64_t)1000000 << rp->attempts[seq];
        if (delay > 30000000)
            delay = 30000000;
        rp->attempts[seq]++;
        rp->st.retries++;
        hpush(rp->rheap, &rp->rheap_len, since_origin_us(rp, end_t) + delay, seq);
        req_put(rp, q);
        goto release;
    }
    rc = put_result(rp, seq, q, errclass, end_t, err);
    rp->state[seq] = SEQ_DONE;
    rp->job_done[rp->order[seq]]++;
    rp->done_n++;
    uint32_t out = lt_replay_resp_out(&q->resp);
    rp->out_run += out;
    rp->st.requests++;
    rp->st.out_tokens += out;
    if (errclass) {
        rp->errors_run++;
        rp->st.errors++;
        if (!strcmp(errclass, LT_REPLAY_ERR_ABORTED))
            rp->st.aborted++;
        if (!strcmp(errclass, LT_REPLAY_ERR_RATELIMIT))
            rp->st.ratelimited++;
    } else {
        rp->st.ok++;
    }
    if (q->resp.has_usage && q->want_in && q->resp.in) {
        double d = fabs((double)q->resp.in - (double)q->want_in);
        rp->st.len_checked++;
        rp->st.len_abs_err += d;
        rp->st.len_want += q->want_in;
        if (d / q->want_in > rp->st.len_max_rel)
            rp->st.len_max_rel = d / q->want_in;
    }
    int64_t end_us = since_origin_us(rp, end_t);
    uint32_t job = rp->order[seq];
    req_put(rp, q);
    if (rc < 0)
        return rc;
    if (rp->mode == LT_REPLAY_MODE_TRACE && rp->job_end) {
        rp->job_end[job] = end_us;
        /* Release the session's next turn if it was waiting for this one
         * (in trace mode, seq k sends job k). */
        int64_t nx = rp->trace.v[job].next;
        if (nx >= 0 && rp->state[nx] == SEQ_WAITING)
            heap_push(rp, turn_time(rp, (size_t)nx, end_us), (size_t)nx);
    }
release:
    while (!rp->stop && rp->wq_len && rp->inflight < rp->o.max_concurrency) {
        size_t k = rp->waitq[rp->wq_head];
        rp->wq_head = (rp->wq_head + 1) % rp->nseq;
        rp->wq_len--;
        LT_TRY(launch(rp, k, err));
    }
out:
    return rc;
}

static int check_multi(struct lt_replay *rp, struct lt_err *err)
{
    int rc = 0, left;
    CURLMsg *m;
    while ((m = curl_multi_info_read(rp->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        struct req *q = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&q);
        CURLcode c = m->data.result;
        lt_mono end_t = q->has_fb ? q->last : lt_mono_now();
        if (!q->last.ns)
            end_t = lt_mono_now();
        if (!q->headers_seen)
            curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &q->status);
        long nc = 0;
        if (curl_easy_getinfo(q->easy, CURLINFO_NUM_CONNECTS, &nc) == CURLE_OK && nc > 0)
            rp->st.connects += (uint64_t)nc;
        LT_TRY(finish(rp, q, classify(rp, q, c), end_t, err));
    }
out:
    return rc;
}

/* The housekeeping tick: first-token timeouts, the writer's frame clock,
 * the progress callback. */
static int tick(struct lt_replay *rp, struct lt_err *err)
{
    int rc = 0;
    lt_mono now = lt_mono_now();
    int64_t ftt = rp->o.first_token_timeout_us;
    if (ftt > 0) {
        struct req *q = rp->head.next, *next;
        for (; q != &rp->head; q = next) {
            next = q->next;
            lt_mono from = q->has_sent ? q->sent : q->added;
            if (!q->resp.has_first_token && lt_mono_diff_us(now, from) > ftt)
                LT_TRY(finish(rp, q, LT_REPLAY_ERR_TTFT, now, err));
        }
    }
    LT_TRY(lt_writer_tick(rp->w, err));
    if (rp->o.progress) {
        struct lt_replay_progress p = {
            .run = rp->run_id,
            .runs = rp->n_runs,
            .level = rp->level,
            .done = rp->done_n,
            .total = rp->total,
            .errors = rp->errors_run,
            .inflight = rp->inflight,
            .out_tokens = rp->out_run,
            .elapsed_s = (double)lt_mono_diff_ns(now, rp->origin) / 1e9,
        };
        rp->o.progress(rp->o.progress_ud, &p);
    }
out:
    return rc;
}

/* Stop: every request in flight is recorded as aborted with its partial
 * timings, and every seq not yet sent is recorded as never sent. */
static int abort_all(struct lt_replay *rp, struct lt_err *err)
{
    int rc = 0;
    lt_mono now = lt_mono_now();
    while (rp->head.next != &rp->head)
        LT_TRY(finish(rp, rp->head.next, LT_REPLAY_ERR_ABORTED, now, err));
    int64_t now_us = since_origin_us(rp, now);
    for (size_t k = 0; k < rp->total; k++) {
        if (rp->state[k] == SEQ_DONE)
            continue;
        if (rp->mode == LT_REPLAY_MODE_CONCURRENCY)
            rp->offs[k] = now_us;
        LT_TRY(put_result(rp, k, NULL, LT_REPLAY_ERR_ABORTED, now, err));
        rp->state[k] = SEQ_DONE;
        rp->done_n++;
        rp->st.requests++;
        rp->st.errors++;
        rp->st.aborted++;
    }
out:
    return rc;
}

static int loop(struct lt_replay *rp, struct lt_err *err)
{
    int rc = 0, running;
    struct epoll_event evs[256];
    LT_TRY(pump(rp, err));
    while (rp->done_n < rp->total) {
        if (rp->stop) {
            LT_TRY(abort_all(rp, err));
            break;
        }
        int wait_ms = 1000;
        if (rp->curl_due_set) {
            int64_t ns = lt_mono_diff_ns(rp->curl_due, lt_mono_now());
            wait_ms = ns <= 0 ? 0 : ns >= 1000000000LL ? 1000 : (int)((ns + 999999) / 1000000);
        }
        int n = epoll_wait(rp->epfd, evs, 256, wait_ms);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = lt_errset(err, LT_EIO, "epoll_wait: %s", strerror(errno));
            goto out;
        }
        /* Sending on time comes first: if the schedule timer fired, launch
         * what is due before serving any socket of this batch. */
        for (int i = 0; i < n; i++)
            if (evs[i].data.fd == rp->sched_tfd) {
                drain(rp->sched_tfd);
                LT_TRY(pump(rp, err));
                if (rp->kick) {
                    rp->kick = false;
                    curl_multi_socket_action(rp->multi, CURL_SOCKET_TIMEOUT, 0, &running);
                }
                break;
            }
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == rp->sched_tfd) {
                /* handled above */
            } else if (fd == rp->tick_tfd) {
                drain(fd);
                LT_TRY(tick(rp, err));
            } else if (fd == rp->stop_pipe[0]) {
                drain(fd);
            } else {
                int f = (evs[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
                        (evs[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                        (evs[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
                curl_multi_socket_action(rp->multi, fd, f, &running);
                /* A long batch must not hold up a send that fell due
                 * meanwhile (the timerfd would only be seen next wait). */
                if (rp->due_set && lt_mono_diff_ns(lt_mono_now(), rp->next_due) >= 0) {
                    LT_TRY(pump(rp, err));
                    if (rp->kick) {
                        rp->kick = false;
                        curl_multi_socket_action(rp->multi, CURL_SOCKET_TIMEOUT, 0, &running);
                    }
                }
            }
        }
        if (rp->curl_due_set && lt_mono_diff_ns(lt_mono_now(), rp->curl_due) >= 0) {
            rp->curl_due_set = false;
            curl_multi_socket_action(rp->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        LT_TRY(check_multi(rp, err));
        LT_TRY(pump(rp, err));
        if (rp->kick) {
            /* Start new transfers now rather than on curl's next timer
             * round: this is what keeps the schedule lag small. */
            rp->kick = false;
            curl_multi_socket_action(rp->multi, CURL_SOCKET_TIMEOUT, 0, &running);
            LT_TRY(check_multi(rp, err));
        }
    }
out:
    return rc;
}

/* ---- splitting a trace over several processes ---- */

void lt_replay_split(const struct lt_replay_job *jobs, size_t n, uint32_t parts, uint32_t *out)
{
    /* load[] is tiny (one per process): a linear scan per session is fine. */
    uint64_t load[LT_REPLAY_MAX_PARTS] = {0};
    if (parts < 1)
        parts = 1;
    if (parts > LT_REPLAY_MAX_PARTS)
        parts = LT_REPLAY_MAX_PARTS;
    for (size_t j = 0; j < n; j++) {
        uint32_t p = 0;
        if (jobs[j].prev >= 0) {
            p = out[jobs[j].prev]; /* a later turn follows its session */
        } else {
            for (uint32_t k = 1; k < parts; k++)
                if (load[k] < load[p])
                    p = k;
        }
        out[j] = p;
        load[p] += 1024u + (uint64_t)jobs[j].in + jobs[j].out;
    }
}

/* msgpack for the few extra keys of a part's run record: a fixstr key
 * (under 32 bytes) and a uint64 value. */
static size_t mp_str(uint8_t *p, const char *s)
{
    size_t n = strlen(s);
    p[0] = (uint8_t)(0xa0u | n);
    memcpy(p + 1, s, n);
    return n + 1;
}

static size_t mp_uint(uint8_t *p, uint64_t v)
{
    p[0] = 0xcf;
    for (int i = 0; i < 8; i++)
        p[1 + i] = (uint8_t)(v >> (56 - 8 * i));
    return 9;
}

/* ---- runs ---- */

static int run_one(struct lt_replay *rp, struct lt_err *err)
{
    int rc = 0;
    size_t n = rp->trace.n;
    const struct lt_replay_opts *o = &rp->o;
    rp->cursor = rp->started = rp->done_n = 0;
    rp->inflight = rp->errors_run = rp->out_run = 0;
    rp->wq_head = rp->wq_len = rp->heap_len = rp->rheap_len = 0;
    rp->due_set = false;
    rp->build.salt = lt_mix64(o->seed ^ (0x1234567ULL + rp->run_id));

    if (rp->mode == LT_REPLAY_MODE_TRACE) {
        rp->nseq = n;
        for (size_t i = 0; i < n; i++) {
            rp->order[i] = (uint32_t)i;
            rp->job_end[i] = -1;
        }
        int64_t *t = malloc((n ? n : 1) * sizeof *t);
        if (!t)
            return lt_errset(err, LT_ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++)
            t[i] = rp->trace.v[i].t;
        int64_t kept = lt_replay_sched_trace(t, n, &o->tt, rp->offs, err);
        free(t);
        if (kept < 0)
            return (int)kept;
        rp->total = n;
        /* Seqs cut by the window or duration are done already and not
         * recorded: they were never meant to be sent. */
        for (size_t i = 0; i < n; i++) {
            rp->state[i] = rp->offs[i] < 0 ? SEQ_DONE : SEQ_PENDING;
            rp->job_seq[i] = rp->offs[i] < 0 ? -1 : (int64_t)i;
            if (rp->offs[i] < 0)
                rp->done_n++;
        }
        /* offs must be non-decreasing for the cursor: give cut seqs the
         * time of the previous kept one. */
        int64_t prev = 0;
        for (size_t i = 0; i < n; i++) {
            if (rp->offs[i] < 0)
                rp->offs[i] = prev;
            prev = rp->offs[i];
        }
        /* Another part's requests: cut like the window's, after the whole
         * trace was scheduled, so every part keeps the global schedule. */
        if (rp->mine)
            for (size_t i = 0; i < n; i++)
                if (rp->state[i] != SEQ_DONE && !rp->mine[i]) {
                    rp->state[i] = SEQ_DONE;
                    rp->job_seq[i] = -1;
                    rp->done_n++;
                }
    } else {
        uint64_t want = o->requests ? o->requests : n;
        rp->nseq = (size_t)want;
        for (size_t i = 0; i < rp->nseq; i++) {
            rp->order[i] = (uint32_t)(i % n);
            rp->state[i] = SEQ_PENDING;
        }
        rp->total = rp->nseq;
        if (rp->mode == LT_REPLAY_MODE_RATE) {
            int64_t got =
                lt_replay_sched_open(o->arrivals, o->rate, o->cv, lt_mix64(o->seed + rp->run_id),
                                     o->duration_us, rp->offs, rp->nseq, err);
            if (got < 0)
                return (int)got;
            rp->nseq = rp->total = (size_t)got;
        }
        /* Keep this part's seqs of the global sequence (open loop: with
         * their global arrival times). */
        if (rp->mine) {
            size_t k = 0;
            for (size_t i = 0; i < rp->nseq; i++)
                if (rp->mine[rp->order[i]]) {
                    rp->order[k] = rp->order[i];
                    if (rp->mode == LT_REPLAY_MODE_RATE)
                        rp->offs[k] = rp->offs[i];
                    k++;
                }
            rp->nseq = rp->total = k;
        }
    }
    rp->planned = rp->total - rp->done_n;

    memset(rp->attempts, 0, rp->nseq);
    memset(rp->job_launched, 0, rp->trace.n * sizeof *rp->job_launched);
    memset(rp->job_done, 0, rp->trace.n * sizeof *rp->job_done);
    char start[32];
    struct lt_extra extra = {0};
    rp->origin = lt_mono_add_ns(lt_mono_now(), 1000000); /* 1 ms to get going */
    /* A start agreed with other processes, when there are any. */
    if (o->run_origin)
        LT_TRY(o->run_origin(o->run_origin_ud, rp->run_id, &rp->origin, &extra, err));
    lt_wall_rfc3339(start);
    if (o->parts > 1) {
        /* Which part this is, and what it meant to send: what a merge of
         * the parts needs to say which requests a lost part took along. */
        lt_buf_reset(&rp->run_extra);
        uint8_t kv[64];
        size_t kl = 0;
        kl += mp_str(kv + kl, "rank");
        kl += mp_uint(kv + kl, o->part);
        kl += mp_str(kv + kl, "ranks");
        kl += mp_uint(kv + kl, o->parts);
        kl += mp_str(kv + kl, "planned");
        kl += mp_uint(kv + kl, rp->planned);
        if (lt_buf_append(&rp->run_extra, kv, kl) < 0 ||
            (extra.len && lt_buf_append(&rp->run_extra, extra.data, extra.len) < 0)) {
            rc = lt_errset(err, LT_ENOMEM, "out of memory");
            goto out;
        }
        extra.data = (const uint8_t *)rp->run_extra.p;
        extra.len = rp->run_extra.len;
        extra.n += 3;
    }
    struct lt_run run = {
        .id = rp->run_id,
        .mode = rp->mode == LT_REPLAY_MODE_TRACE         ? "trace"
                : rp->mode == LT_REPLAY_MODE_CONCURRENCY ? "concurrency"
                                                         : "rate",
        .concurrency = rp->mode == LT_REPLAY_MODE_CONCURRENCY ? rp->level : 0,
        .rate = rp->mode == LT_REPLAY_MODE_RATE    ? o->rate
                : rp->mode == LT_REPLAY_MODE_TRACE ? o->tt.rate
                                                   : 0,
        .speed = rp->mode == LT_REPLAY_MODE_TRACE && o->tt.speed > 0 ? o->tt.speed : 0,
        .target = rp->label,
        .model = rp->model,
        .start = start,
        .version = LT_VERSION,
        .warmup = (uint32_t)(o->warmup < UINT32_MAX ? o->warmup : UINT32_MAX),
        .extra = extra,
    };
    if (rp->mode == LT_REPLAY_MODE_TRACE && run.speed == 0 && run.rate == 0)
        run.speed = 1;
    LT_TRY(lt_writer_put_run(rp->w, &run, err));
    LT_TRY(lt_writer_flush(rp->w, err));
    struct itimerspec its = {.it_interval = {0, TICK_NS}, .it_value = {0, TICK_NS}};
    timerfd_settime(rp->tick_tfd, 0, &its, NULL);
    LT_TRY(loop(rp, err));
    LT_TRY(tick(rp, err)); /* a last progress report */
out:
    disarm(rp->tick_tfd);
    disarm(rp->sched_tfd);
    return rc;
}

int lt_replay_run(struct lt_replay *rp, struct lt_err *err)
{
    int rc = 0;
    const struct lt_replay_opts *o = &rp->o;
    rp->n_runs = rp->mode == LT_REPLAY_MODE_CONCURRENCY ? (uint32_t)o->n_levels : 1;
    for (uint32_t i = 0; i < rp->n_runs && !rp->stop; i++) {
        rp->run_id = i;
        rp->level = rp->mode == LT_REPLAY_MODE_CONCURRENCY ? o->levels[i] : 0;
        rc = run_one(rp, err);
        rp->st.runs++;
        if (rc < 0)
            break;
    }
    /* A stop between runs still leaves a properly closed file. */
    struct lt_err e2 = {0};
    int crc = lt_writer_close(rp->w, rc < 0 ? &e2 : err);
    rp->w = NULL;
    if (rc == 0 && crc < 0)
        rc = crc;
    return rc;
}

/* ---- setup: trace, model, calibration ---- */

int lt_replay_list_models(const char *base, const char *api_key, bool insecure, char (*names)[128],
                          int max, struct lt_err *err)
{
    int rc = 0;
    struct lt_replay_http h = {.base = base, .insecure = insecure, .connect_timeout_ms = 10000};
    struct lt_buf body;
    lt_buf_init(&body, (size_t)4 << 20);
    json_t *root = NULL;
    long status = 0;
    LT_TRY(lt_replay_http_headers(&h.headers, api_key, NULL, 0, err));
    LT_TRY(lt_replay_http_do(&h, "/v1/models", NULL, &body, &status, 30000, err));
    if (status != 200) {
        rc = lt_errset(err, LT_EFORMAT, "GET /v1/models answered HTTP %ld", status);
        goto out;
    }
    root = json_loadb(body.p ? body.p : "", body.len, 0, NULL);
    json_t *data = json_object_get(root, "data");
    if (!json_is_array(data)) {
        rc = lt_errset(err, LT_EFORMAT, "GET /v1/models: no \"data\" list in the answer");
        goto out;
    }
    size_t i;
    json_t *m;
    json_array_foreach(data, i, m)
    {
        json_t *id = json_object_get(m, "id");
        if (json_is_string(id) && rc < max)
            snprintf(names[rc++], 128, "%s", json_string_value(id));
    }
out:
    json_decref(root);
    curl_slist_free_all(h.headers);
    lt_buf_release(&body);
    return rc;
}

static int find_model(struct lt_replay *rp, struct lt_err *err)
{
    char names[32][128];
    struct lt_err e = {0};
    int n = lt_replay_list_models(rp->base, rp->o.api_key, rp->o.insecure, names, 32, &e);
    if (rp->o.model) {
        snprintf(rp->model, sizeof rp->model, "%s", rp->o.model);
        if (n <= 0)
            return 0; /* no model list (some gateways): trust the user */
        for (int i = 0; i < n; i++)
            if (!strcmp(names[i], rp->o.model))
                return 0;
        char list[1024] = "";
        for (int i = 0; i < n; i++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", names[i]);
        }
        return lt_errset(err, LT_EINVAL, "%s does not serve model '%s'; it serves: %s", rp->label,
                         rp->o.model, list);
    }
    if (n < 0)
        return lt_errset(err, n, "cannot discover the model (%s); give --model", e.msg);
    if (n != 1)
        return lt_errset(err, LT_EINVAL,
                         "%s serves %d models; say which one with --model (e.g. '%s')", rp->label,
                         n, n ? names[0] : "NAME");
    snprintf(rp->model, sizeof rp->model, "%s", names[0]);
    return 0;
}

/* Prompt tokens of a prompt of `msgs` messages (chat) of `words` words each:
 * by the server's /tokenize (vLLM's and the sim's: {"count": N}, with the
 * chat template applied to "messages"), or else by the usage of a real
 * request with max_tokens 1. Returns tokens or a negative code. */
static long probe(struct lt_replay *rp, bool tokenize, int msgs, uint32_t words,
                  struct lt_buf *body, struct lt_buf *resp, struct lt_err *err)
{
    int rc = 0;
    json_t *root = NULL;
    struct lt_replay_job job = {.index = 0x70726f6265ULL, .prev = -1};
    lt_buf_reset(body);
    LT_TRY(lt_buf_puts(body, "{\"model\":"));
    LT_TRY(lt_json_str(body, rp->model, strlen(rp->model)));
    if (rp->build.api == LT_REPLAY_API_CHAT) {
        LT_TRY(lt_buf_puts(body, ",\"messages\":["));
        for (int m = 0; m < msgs; m++) {
            LT_TRY(lt_buf_printf(body, "%s{\"role\":\"%s\",\"content\":\"", m ? "," : "",
                                 m + 1 < msgs ? "system" : "user"));
            LT_TRY(lt_replay_words(body, &rp->build, &job, (uint32_t)m * words, words));
            LT_TRY(lt_buf_puts(body, "\"}"));
        }
        LT_TRY(lt_buf_puts(body, "]"));
    } else {
        LT_TRY(lt_buf_puts(body, ",\"prompt\":\""));
        LT_TRY(lt_replay_words(body, &rp->build, &job, 0, words));
        LT_TRY(lt_buf_puts(body, "\""));
    }
    LT_TRY(lt_buf_puts(body, tokenize ? ",\"add_generation_prompt\":true}"
                                      : ",\"max_tokens\":1,\"stream\":false}"));
    long status = 0;
    LT_TRY(lt_replay_http_do(&rp->http, tokenize ? "/tokenize" : lt_replay_api_path(rp->build.api),
                             body->p, resp, &status, 15000, err));
    if (status != 200) {
        rc = lt_errset(err, LT_EFORMAT, "%s answered HTTP %ld",
                       tokenize ? "/tokenize" : "the calibration probe", status);
        goto out;
    }
    if (tokenize) {
        root = json_loadb(resp->p ? resp->p : "", resp->len, 0, NULL);
        json_t *count = json_object_get(root, "count");
        if (!json_is_integer(count) || json_integer_value(count) <= 0) {
            rc = lt_errset(err, LT_EFORMAT, "/tokenize: no \"count\" in the answer");
            goto out;
        }
        rc = (int)(json_integer_value(count) < INT32_MAX ? json_integer_value(count) : INT32_MAX);
        goto out;
    }
    struct lt_replay_resp r;
    lt_replay_resp_init(&r, 4);
    rc = lt_replay_resp_body(&r, resp->p ? resp->p : "", resp->len, lt_mono_now());
    bool has = r.has_usage;
    uint32_t in = r.in;
    lt_replay_resp_release(&r);
    if (rc < 0 || !has || !in) {
        rc = lt_errset(err, LT_EFORMAT, "calibration probe: no usage.prompt_tokens in the answer");
        goto out;
    }
    rc = (int)(in < INT32_MAX ? in : INT32_MAX);
out:
    json_decref(root);
    return rc;
}

/* Measure what a synthesized word, a request and a message cost in tokens
 * on this server: three prompts (64 words, 128 words, and two messages of
 * 64) counted by its /tokenize, or where it has none by the usage of three
 * one-token requests. */
static void calibrate(struct lt_replay *rp)
{
    struct lt_replay_calib *c = &rp->build.calib;
    *c = (struct lt_replay_calib){.tok_per_word = 1.0};
    if (rp->o.no_calibrate) {
        snprintf(rp->st.calib_how, sizeof rp->st.calib_how, "not calibrated (--no-calibrate)");
        return;
    }
    if (rp->build.api != LT_REPLAY_API_CHAT && rp->build.token_ids) {
        snprintf(rp->st.calib_how, sizeof rp->st.calib_how, "exact (token ids)");
        return;
    }
    if (rp->build.api == LT_REPLAY_API_SGLANG) {
        snprintf(rp->st.calib_how, sizeof rp->st.calib_how, "not calibrated (SGLang text)");
        return;
    }
    struct lt_buf body, resp;
    lt_buf_init(&body, (size_t)1 << 20);
    lt_buf_init(&resp, (size_t)1 << 20);
    struct lt_err e = {0};
    long p1 = -1, p2 = -1, p3 = -1;
    const char *how = "/tokenize";
    bool chat = rp->build.api == LT_REPLAY_API_CHAT;
    for (int tok = 1; tok >= 0; tok--) {
        lt_err_clear(&e);
        p1 = probe(rp, tok, 1, 64, &body, &resp, &e);
        p2 = p1 > 0 ? probe(rp, tok, 1, 128, &body, &resp, &e) : -1;
        p3 = p2 > 0 && chat ? probe(rp, tok, 2, 64, &body, &resp, &e) : 0;
        if (p1 > 0 && p2 > p1 && p3 >= 0)
            break;
        how = "usage probes";
    }
    lt_buf_release(&body);
    lt_buf_release(&resp);
    if (p1 <= 0 || p2 <= p1 || p3 < 0) {
        snprintf(rp->st.calib_how, sizeof rp->st.calib_how, "not calibrated (%.60s)",
                 e.msg[0] ? e.msg : "probes disagree");
        return;
    }
    double tpw = (double)(p2 - p1) / 64.0;
    c->tok_per_word = tpw;
    if (chat) {
        c->per_message = (double)p3 - (double)p1 - 64.0 * tpw;
        c->per_request = (double)p1 - c->per_message - 64.0 * tpw;
    } else {
        c->per_request = (double)p1 - 64.0 * tpw;
    }
    if (c->per_message < 0)
        c->per_message = 0;
    if (c->per_request < 0)
        c->per_request = 0;
    c->calibrated = true;
    snprintf(rp->st.calib_how, sizeof rp->st.calib_how,
             "%s: %.3f tokens/word, +%.1f per request, +%.1f per message", how, tpw, c->per_request,
             c->per_message);
}

static int make_fds(struct lt_replay *rp, struct lt_err *err)
{
    rp->epfd = epoll_create1(EPOLL_CLOEXEC);
    rp->sched_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    rp->tick_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (rp->epfd < 0 || rp->sched_tfd < 0 || rp->tick_tfd < 0 || pipe(rp->stop_pipe) < 0)
        return lt_errset(err, LT_EIO, "cannot create the event loop: %s", strerror(errno));
    int fds[] = {rp->sched_tfd, rp->tick_tfd, rp->stop_pipe[0]};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};
        if (epoll_ctl(rp->epfd, EPOLL_CTL_ADD, fds[i], &ev) < 0)
            return lt_errset(err, LT_EIO, "epoll_ctl: %s", strerror(errno));
    }
    /* The read end must never block the loop, even if drained twice. */
    int fl = fcntl(rp->stop_pipe[0], F_GETFL);
    fcntl(rp->stop_pipe[0], F_SETFL, fl | O_NONBLOCK);
    fl = fcntl(rp->stop_pipe[1], F_GETFL);
    fcntl(rp->stop_pipe[1], F_SETFL, fl | O_NONBLOCK);
    /* Ten thousand streams need ten thousand descriptors. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    return 0;
}

static int check_opts(const struct lt_replay_opts *o, struct lt_err *err)
{
    if (!o->trace_path || !o->out_path || !o->target)
        return lt_errset(err, LT_EINVAL, "a trace, an output file and a target are needed");
    if (o->mode == LT_REPLAY_MODE_CONCURRENCY && !o->n_levels)
        return lt_errset(err, LT_EINVAL, "closed loop needs at least one concurrency level");
    if (o->parts > LT_REPLAY_MAX_PARTS || (o->parts > 1 && o->part >= o->parts))
        return lt_errset(err, LT_EINVAL, "part %u of %u: at most %u parts", o->part, o->parts,
                         LT_REPLAY_MAX_PARTS);
    for (size_t i = 0; i < o->n_levels; i++)
        if (!o->levels[i])
            return lt_errset(err, LT_EINVAL, "a concurrency level must be at least 1");
    if (o->mode == LT_REPLAY_MODE_TRACE && o->tt.speed > 0 && o->tt.speed != 1 && o->tt.rate > 0)
        return lt_errset(err, LT_EINVAL, "--speed and --rate both rescale time: give one");
    if (o->mode == LT_REPLAY_MODE_RATE && !(o->rate > 0))
        return lt_errset(err, LT_EINVAL, "open loop needs --rate R > 0");
    if (strncmp(o->target, "http://", 7) && strncmp(o->target, "https://", 8))
        return lt_errset(err, LT_EINVAL, "--target must be an http:// or https:// URL (or sim)");
    return 0;
}

struct lt_replay *lt_replay_new(const struct lt_replay_opts *opts, struct lt_err *err)
{
    int rc = 0;
    struct lt_replay *rp = NULL;
    if (check_opts(opts, err) < 0)
        return NULL;
    rp = calloc(1, sizeof *rp);
    if (!rp) {
        lt_errset(err, LT_ENOMEM, "out of memory");
        return NULL;
    }
    rp->epfd = rp->sched_tfd = rp->tick_tfd = -1;
    rp->stop_pipe[0] = rp->stop_pipe[1] = -1;
    rp->o = *opts;
    rp->mode = opts->mode;
    rp->head.next = rp->head.prev = &rp->head;
    lt_buf_init(&rp->run_extra, 1 << 16);
    curl_global_init(CURL_GLOBAL_DEFAULT);

    /* base URL without a trailing slash or /v1 */
    snprintf(rp->base, sizeof rp->base, "%s", opts->target);
    size_t bl = strlen(rp->base);
    while (bl && rp->base[bl - 1] == '/')
        rp->base[--bl] = '\0';
    if (bl >= 3 && !strcmp(rp->base + bl - 3, "/v1"))
        rp->base[bl - 3] = '\0';
    rp->http.base = rp->base;
    /* Credentials in the URL (user:password@host) stay out of every file. */
    if (opts->target_label) {
        snprintf(rp->label, sizeof rp->label, "%s", opts->target_label);
    } else {
        const char *sch = strstr(rp->base, "://"), *auth = sch ? sch + 3 : rp->base;
        const char *at = strchr(auth, '@'), *slash = strchr(auth, '/');
        if (at && (!slash || at < slash))
            snprintf(rp->label, sizeof rp->label, "%.*s%s", (int)(auth - rp->base), rp->base,
                     at + 1);
        else
            snprintf(rp->label, sizeof rp->label, "%s", rp->base);
    }
    const char *host = strstr(rp->base, "://");
    host = host ? host + 3 : rp->base;
    rp->http.no_proxy =
        !strncmp(host, "127.", 4) || !strncmp(host, "localhost", 9) || !strncmp(host, "[::1]", 5);
    rp->http.insecure = opts->insecure;
    rp->http.connect_timeout_ms =
        (long)((opts->connect_timeout_us ? opts->connect_timeout_us : 10000000LL) / 1000);
    LT_TRY(lt_replay_http_headers(&rp->http.headers, opts->api_key, opts->headers, opts->n_headers,
                                  err));

    LT_TRY(lt_replay_jobs_load(&rp->trace, rp->o.trace_path, err));
    if (opts->prompts_path)
        LT_TRY(lt_replay_corpus_load(&rp->corpus, opts->prompts_path, err));
    size_t maxseq = rp->trace.n;
    if (opts->mode != LT_REPLAY_MODE_TRACE && opts->requests > maxseq)
        maxseq = (size_t)opts->requests;
    if (opts->mode == LT_REPLAY_MODE_RATE && !opts->requests && opts->duration_us > 0) {
        /* open loop for a duration: as many arrivals as the rate gives */
        double need = opts->rate * (double)opts->duration_us / 1e6 * 1.5 + 100;
        if (need > maxseq && need < 1e8)
            maxseq = (size_t)need;
        rp->o.requests = maxseq;
    }
    rp->order = malloc(maxseq * sizeof *rp->order);
    rp->offs = malloc(maxseq * sizeof *rp->offs);
    rp->state = malloc(maxseq);
    rp->waitq = malloc(maxseq * sizeof *rp->waitq);
    rp->heap = malloc(maxseq * sizeof *rp->heap);
    rp->rheap = malloc(maxseq * sizeof *rp->rheap);
    rp->attempts = calloc(maxseq, 1);
    rp->job_seq = malloc(rp->trace.n * sizeof *rp->job_seq);
    rp->job_end = malloc(rp->trace.n * sizeof *rp->job_end);
    rp->job_launched = malloc(rp->trace.n * sizeof *rp->job_launched);
    rp->job_done = malloc(rp->trace.n * sizeof *rp->job_done);
    if (!rp->order || !rp->offs || !rp->state || !rp->waitq || !rp->heap || !rp->rheap ||
        !rp->attempts || !rp->job_seq || !rp->job_end || !rp->job_launched || !rp->job_done) {
        rc = lt_errset(err, LT_ENOMEM, "out of memory");
        goto out;
    }
    if (opts->parts > 1) {
        uint32_t *part = malloc(rp->trace.n * sizeof *part);
        rp->mine = malloc(rp->trace.n);
        if (!part || !rp->mine) {
            free(part);
            rc = lt_errset(err, LT_ENOMEM, "out of memory");
            goto out;
        }
        lt_replay_split(rp->trace.v, rp->trace.n, opts->parts, part);
        for (size_t j = 0; j < rp->trace.n; j++)
            rp->mine[j] = part[j] == opts->part;
        free(part);
    }

    LT_TRY(find_model(rp, err));
    snprintf(rp->st.model, sizeof rp->st.model, "%s", rp->model);
    rp->build = (struct lt_replay_build){
        .api = opts->api,
        .model = rp->model,
        .stream = !opts->no_stream,
        .force_length = !opts->no_force_length,
        .chunk_usage = opts->chunk_usage,
        .token_ids = !opts->no_token_ids,
        .synthetic = opts->synthetic_prompts,
        .block_tokens = rp->trace.block_tokens ? rp->trace.block_tokens : LT_DEFAULT_BLOCK_TOKENS,
        .default_out = opts->default_out ? opts->default_out : LT_REPLAY_DEFAULT_OUT,
        .reasoning_effort = opts->reasoning_effort,
        .thinking = opts->thinking,
        .corpus = rp->corpus.n ? &rp->corpus : NULL,
    };
    calibrate(rp);
    rp->st.calib = rp->build.calib;
    snprintf(rp->url, sizeof rp->url, "%s%s", rp->base, lt_replay_api_path(opts->api));

    LT_TRY(make_fds(rp, err));
    rp->multi = curl_multi_init();
    if (!rp->multi) {
        rc = lt_errset(err, LT_ENOMEM, "cannot create the curl multi handle");
        goto out;
    }
    curl_multi_setopt(rp->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(rp->multi, CURLMOPT_SOCKETDATA, rp);
    curl_multi_setopt(rp->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(rp->multi, CURLMOPT_TIMERDATA, rp);
    curl_multi_setopt(rp->multi, CURLMOPT_MAXCONNECTS, 20000L);

    const char *mk[] = {"trace", "target"};
    const char *mv[] = {opts->trace_path, rp->label};
    struct lt_buf meta;
    lt_buf_init(&meta, 1 << 16);
    lt_meta_pack(&meta, mk, mv, 2);
    struct lt_header h = {
        .kind = LT_KIND_RESULTS,
        .source = "replay",
        .block_tokens = rp->trace.block_tokens,
        .meta = (const uint8_t *)meta.p,
        .meta_len = meta.len,
    };
    /* Small frames at a fast level: compressing a frame stalls the loop,
     * and a stall is schedule lag. A frame every 200 ms also bounds what a
     * crash can lose well within the format's second. */
    struct lt_writer_opts wo = {.level = 1, .frame_records = 512, .frame_ms = 200};
    rp->w = lt_writer_open(opts->out_path, &h, &wo, err);
    lt_buf_release(&meta);
    if (!rp->w) {
        rc = err ? err->code : LT_EIO;
        goto out;
    }
out:
    if (rc < 0) {
        lt_replay_free(rp);
        return NULL;
    }
    return rp;
}

void lt_replay_stop(struct lt_replay *rp)
{
    rp->stop = 1;
    if (rp->stop_pipe[1] >= 0) {
        ssize_t n = write(rp->stop_pipe[1], "x", 1);
        (void)n;
    }
}

bool lt_replay_stopped(const struct lt_replay *rp)
{
    return rp->stop != 0;
}

void lt_replay_get_stats(const struct lt_replay *rp, struct lt_replay_stats *st)
{
    *st = rp->st;
}

void lt_replay_free(struct lt_replay *rp)
{
    if (!rp)
        return;
    while (rp->head.next && rp->head.next != &rp->head) {
        struct req *q = rp->head.next;
        curl_multi_remove_handle(rp->multi, q->easy);
        unlink_req(q);
        req_destroy(q);
    }
    while (rp->free_reqs) {
        struct req *q = rp->free_reqs;
        rp->free_reqs = q->next;
        req_destroy(q);
    }
    if (rp->multi)
        curl_multi_cleanup(rp->multi);
    if (rp->w)
        lt_writer_close(rp->w, NULL);
    int fds[] = {rp->epfd, rp->sched_tfd, rp->tick_tfd, rp->stop_pipe[0], rp->stop_pipe[1]};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    curl_slist_free_all(rp->http.headers);
    lt_replay_jobs_release(&rp->trace);
    lt_replay_corpus_release(&rp->corpus);
    free(rp->order);
    free(rp->offs);
    free(rp->state);
    free(rp->waitq);
    free(rp->heap);
    free(rp->rheap);
    free(rp->attempts);
    free(rp->job_seq);
    free(rp->job_end);
    free(rp->job_launched);
    free(rp->job_done);
    free(rp->chunkbuf);
    free(rp->mine);
    lt_buf_release(&rp->run_extra);
    free(rp);
}

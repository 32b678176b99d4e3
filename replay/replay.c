/*
 * The replay engine: one thread, one epoll loop driving libcurl's multi
 * interface through its socket and timer callbacks (the design of curl's
 * docs/examples/ephiperfifo.c; curl's timeout is epoll_wait's timeout, see
 * on_timer), two timerfds (the next scheduled send, a 250 ms housekeeping
 * tick) and a pipe that lt_replay_stop writes to from a signal handler.
 *
 * A run is a sequence of sends ("seqs") laid out and released by the plan
 * (plan/plan.h: when each seq is due, sessions, slots, retries): seq k
 * sends job order[k], due offs[k] µs after the run's origin. This engine
 * owns the clock: it tells the plan the time (pump) and what ended
 * (finish), and the plan calls send_seq for each seq that leaves. Results
 * are written as requests finish, so the file grows as the run goes and a
 * crash loses at most the writer's last second.
 *
 * A seq's states in the plan are PENDING, WAITING, QUEUED, SENT and DONE
 * (the diagram is in plan/plan.h). Once SENT, its struct req (pooled, one
 * per request in flight) goes through:
 *
 *   IN_CURL --prereq cb--> SENT --first byte (header cb)--> RECEIVING
 *     |                     |                                 |
 *     +---------------------+-------- done or error ----------+--> finish
 *
 *   finish: the plan's DONE, with exactly one result record; or, on
 *   429/503/connect with --retry left, back to the plan (lt_plan_retry),
 *   due again at Retry-After (the result is written only for the last
 *   attempt). Besides the arrows:
 *   - any state --stop--> DONE, err "aborted" (without `sent` if never sent);
 *   - SENT, RECEIVING --no token by --first-token-timeout (tick)--> finish;
 *   - any state --its trace's client left here (replay_cancel.c: a token
 *     count, or a time since send)--> finish, "cancelled": not an error.
 *
 * Every seq of a run ends DONE with exactly one result record.
 */
#include "replay/replay_internal.h"
#include "replay/replay_live.h"

#include "base/lt_rng.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
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
/* Response headers beyond this are malformed (no API sends a fraction of
 * it); below curl's own limit, so the class is ours, not a cut stream's. */
#define MAX_HEAD_BYTES ((size_t)256 << 10)

_Static_assert((int)LT_REPLAY_MODE_TRACE == (int)LT_PLAN_TRACE &&
                   (int)LT_REPLAY_MODE_CONCURRENCY == (int)LT_PLAN_CONCURRENCY &&
                   (int)LT_REPLAY_MODE_RATE == (int)LT_PLAN_RATE,
               "replay's modes are the plan's");

/* ---- small helpers ---- */

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
    struct lt_replay_req *q = ud;
    lt__replay_check_sent(q->rp, q);
    return CURL_PREREQFUNC_OK;
}

void lt__replay_header_line(struct lt_replay_req *q, const char *p, size_t len)
{
    if (len > 12 && !strncasecmp(p, "retry-after:", 12)) {
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
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    struct lt_replay_req *q = ud;
    size_t len = size * n;
    if (!q->has_fb) {
        q->fb = lt_mono_now();
        q->has_fb = true;
        q->state = RS_RECEIVING;
    }
    q->head_bytes += len;
    if (q->head_bytes > MAX_HEAD_BYTES) {
        q->err = LT_REPLAY_ERR_MALFORMED;
        return 0; /* abort the transfer */
    }
    if (len >= 5 && !memcmp(p, "HTTP/", 5)) /* a new header block (100, redirect) */
        q->is_sse = false;
    else
        lt__replay_header_line(q, p, len);
    return len;
}

static int on_event(void *ud, const char *data, size_t len)
{
    struct lt_replay_req *q = ud;
    /* Past its cancel point, nothing more is read (replay_cancel.c). */
    if (q->cancel.by == CB_TOKENS && lt__replay_cancel_tokens_due(q))
        return 0;
    int rc = lt_wire_resp_event(&q->resp, data, len, q->now);
    if (q->cancel.by == CB_TOKENS)
        lt__replay_cancel_tokens_due(q);
    return rc;
}

int lt__replay_body_bytes(struct lt_replay_req *q, const char *p, size_t len, lt_mono now)
{
    q->now = q->last = now;
    if (!q->has_fb) {
        q->fb = q->now;
        q->has_fb = true;
        q->state = RS_RECEIVING;
    }
    bool ok = q->status >= 200 && q->status < 300;
    if (q->is_sse && ok) {
        if (lt_wire_sse_feed(&q->sse, p, len, on_event, q) < 0) {
            q->err = LT_REPLAY_ERR_MALFORMED;
            return -1;
        }
        if (q->err && lt__replay_is_cancelled(q->err))
            return -1; /* its client left here: end the transfer */
        return 0;
    }
    if (q->rbody.len + len > q->rbody.max) {
        if (ok) {
            q->err = LT_REPLAY_ERR_MALFORMED;
            return -1;
        }
        return 0; /* an error body: its start is enough */
    }
    if (!q->rbody.len && ok)
        q->body_t = q->now; /* a whole answer's tokens all arrive with its first byte */
    if (lt_buf_append(&q->rbody, p, len) < 0) {
        q->err = LT_REPLAY_ERR_MALFORMED;
        return -1;
    }
    return 0;
}

static size_t on_write(char *p, size_t size, size_t n, void *ud)
{
    struct lt_replay_req *q = ud;
    size_t len = size * n;
    lt_mono now = lt_mono_now();
    if (!q->headers_seen) {
        q->headers_seen = true;
        curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &q->status);
    }
    return lt__replay_body_bytes(q, p, len, now) < 0 ? 0 : len; /* 0 aborts the transfer */
}

/* ---- request pool ---- */

static void req_destroy(struct lt_replay_req *q);

static struct lt_replay_req *req_get(struct lt_replay *rp)
{
    struct lt_replay_req *q = rp->free_reqs;
    if (q) {
        rp->free_reqs = q->next;
        CURL *e = q->easy;
        struct lt_wire_sse sse = q->sse;
        struct lt_wire_resp resp = q->resp;
        struct lt_buf body = q->body, rbody = q->rbody;
        memset(q, 0, sizeof *q);
        q->easy = e;
        q->sse = sse;
        q->resp = resp;
        q->body = body;
        q->rbody = rbody;
        lt_wire_sse_reset(&q->sse);
        lt_wire_resp_reset(&q->resp);
        lt_buf_reset(&q->rbody);
        q->rp = rp;
        return q;
    }
    q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->rp = rp;
    size_t max_line = rp->o.max_line ? rp->o.max_line : (size_t)1 << 20;
    lt_wire_sse_init(&q->sse, max_line, max_line);
    lt_wire_resp_init(&q->resp, MAX_CHUNKS);
    lt_buf_init(&q->body, (size_t)256 << 20);
    lt_buf_init(&q->rbody, rp->o.max_body ? rp->o.max_body : (size_t)16 << 20);
    if (rp->h1.on)
        return q; /* the lean client needs no curl handle */
    q->easy = curl_easy_init();
    if (!q->easy) {
        req_destroy(q);
        return NULL;
    }
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
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, q->cerr);
    /* 1 KiB: SSE events are small, and 10,000 streams must fit in 16 KiB
     * each (bench/README.md); a long stream costs a few more reads. */
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 1024L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
                     (long)((rp->o.timeout_us ? rp->o.timeout_us : 600000000LL) / 1000));
    return q;
}

static void req_put(struct lt_replay *rp, struct lt_replay_req *q)
{
    /* Keep the pool's memory modest: big buffers are not worth keeping. */
    if (q->body.cap > (1u << 20))
        lt_buf_release(&q->body);
    if (q->rbody.cap > (1u << 20))
        lt_buf_release(&q->rbody);
    q->next = rp->free_reqs;
    rp->free_reqs = q;
}

static void req_destroy(struct lt_replay_req *q)
{
    curl_easy_cleanup(q->easy);
    lt_wire_sse_release(&q->sse);
    lt_wire_resp_release(&q->resp);
    lt_buf_release(&q->body);
    lt_buf_release(&q->rbody);
    free(q);
}

/* The error class of a curl transfer's end (NULL: it ended well; the
 * answer's content decides, classify_content). The lean client classes
 * its own ends alike (replay_h1.c). */
static const char *classify_curl(const struct lt_replay_req *q, CURLcode c)
{
    switch (c) {
    case CURLE_OK:
        return NULL;
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
    case CURLE_RECV_ERROR:
        /* curl's only sign of bad chunked framing is its message: that is
         * the answer's fault, as the lean client says, not a cut stream */
        if (strstr(q->cerr, "chunked-encoding"))
            return LT_REPLAY_ERR_MALFORMED;
        return q->has_fb ? LT_REPLAY_ERR_INCOMPLETE : LT_REPLAY_ERR_CONNECT;
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
        return q->has_fb ? LT_REPLAY_ERR_INCOMPLETE : LT_REPLAY_ERR_CONNECT;
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING:
        return LT_REPLAY_ERR_MALFORMED;
    default:
        return LT_REPLAY_ERR_TRANSFER;
    }
}

/* The error class of an answer that arrived whole. */
static const char *classify_content(struct lt_replay *rp, struct lt_replay_req *q)
{
    if (q->status == 429)
        return LT_REPLAY_ERR_RATELIMIT;
    if (q->status < 200 || q->status >= 300)
        return LT_REPLAY_ERR_HTTP;
    if (q->is_sse) {
        if (lt_wire_sse_finish(&q->sse, on_event, q) < 0)
            return LT_REPLAY_ERR_MALFORMED;
        if (q->resp.error_event)
            return LT_REPLAY_ERR_STREAM;
        if (!q->resp.done && !q->resp.has_finish)
            return LT_REPLAY_ERR_INCOMPLETE;
    } else {
        lt_mono t = q->body_t.ns ? q->body_t : q->last;
        if (lt_wire_resp_body(&q->resp, q->rbody.p ? q->rbody.p : "", q->rbody.len, t) < 0)
            return LT_REPLAY_ERR_MALFORMED;
        if (q->resp.error_event)
            return LT_REPLAY_ERR_STREAM;
    }
    /* The server's usage must agree with what arrived (docs/metrics.md):
     * no fewer output tokens than the streamed chunks carried (each carries
     * at least one), and, when the length was forced, no more than asked
     * for. Otherwise its figures are not counted as true. */
    const struct lt_wire_resp *r = &q->resp;
    if (r->has_usage && ((q->is_sse && r->out < r->counted) ||
                         (rp->build.force_length && q->want_out && r->out > q->want_out)))
        return LT_REPLAY_ERR_BAD_USAGE;
    /* ... and with what was sent: no more prompt tokens than the body had
     * bytes and a template could add, and no more of them cached. */
    if (r->has_usage && (!lt__replay_prompt_plausible(r->in, q->body.len) || r->cached > r->in))
        return LT_REPLAY_ERR_BAD_USAGE;
    if (rp->build.force_length && lt_wire_resp_out(&q->resp) < q->want_out)
        return LT_REPLAY_ERR_SHORT;
    return NULL;
}

/* ---- the plan's engine ---- */

static void link_req(struct lt_replay *rp, struct lt_replay_req *q)
{
    q->next = rp->head.next;
    q->prev = &rp->head;
    rp->head.next->prev = q;
    rp->head.next = q;
}

/* The plan's send: seq leaves now, on the lean client or as a curl
 * transfer. */
static int send_seq(void *ud, size_t seq, struct lt_err *err)
{
    struct lt_replay *rp = ud;
    struct lt_replay_req *q = req_get(rp);
    if (!q)
        return lt_errset(err, LT_ENOMEM, "out of memory starting a request");
    const struct lt_plan_job *job = &rp->trace.v[lt_plan_job_of(&rp->plan, seq)];
    q->seq = seq;
    if (!rp->plan.attempts[seq] && rp->warm_sent < rp->o.warmup) {
        if (!lt_u64map_upsert(&rp->warm, seq, NULL)) {
            req_put(rp, q);
            return lt_errset(err, LT_ENOMEM, "out of memory starting a request");
        }
        rp->warm_sent++;
    }
    q->cancel.idx = SIZE_MAX;
    q->state = RS_IN_CURL;
    q->retry_after_us = -1;
    q->sched = lt_mono_add_ns(rp->origin, rp->plan.offs[seq] * 1000);
    q->replica = q->failover_from = -1;
    if (rp->n_replicas) {
        /* The router decides from the request alone (and the load): the
         * same seq goes to the same replica in every rank and in the
         * virtual fleet. */
        q->failover_from = rp->resend_from;
        rp->resend_from = -1;
        struct lt_route_key k = {.seq = seq,
                                 .index = job->index,
                                 .session = job->session,
                                 .blocks = job->blocks,
                                 .n_blocks = job->n_blocks};
        q->replica = lt_route_pick(&rp->router, &k);
        if (q->replica < 0) { /* every replica is down: recorded by pump, never sent */
            q->err = LT_REPLAY_ERR_CONNECT;
            q->prev = q->next = q;
            q->unsent_next = rp->unsent;
            rp->unsent = q;
            return 0;
        }
        curl_easy_setopt(q->easy, CURLOPT_URL, rp->replica_url[q->replica]);
    }
    const struct lt_media *parts;
    const struct lt_plan_media_rec *media =
        rp->trace.n_media ? lt_plan_job_media(&rp->trace, job, &parts) : NULL;
    int rc;
    if (media) {
        struct lt_err why;
        rc = lt_replay_media_body(&q->body, &rp->build, rp->media, job, media, parts, &q->want_in,
                                  &q->want_out, &why);
        if (rc == LT_EFORMAT) { /* fails alone, with loadtrace's words */
            lt_plan_job_lengths(job, rp->build.default_out, &q->want_in, &q->want_out);
            q->err = LT_REPLAY_ERR_MEDIA;
            q->prev = q->next = q;
            q->unsent_next = rp->unsent;
            rp->unsent = q;
            lt_buf_reset(&q->body);
            lt_buf_reset(&q->rbody);
            lt_buf_printf(&q->rbody, "loadtrace: not sent: %s", why.msg);
            return 0;
        }
        for (uint32_t i = 0; rc == 0 && i < media->n; i++)
            if (parts[i].kind == LT_MEDIA_IMAGE)
                q->want_img += parts[i].tokens;
            else if (parts[i].kind == LT_MEDIA_VIDEO)
                q->want_vid += parts[i].tokens;
    } else {
        rc = lt_replay_build_body(&q->body, &rp->build, job, &q->want_in, &q->want_out);
    }
    if (rc < 0) {
        /* A record too large to send (its body past the buffer's limit)
         * fails alone: pump records it, and the run goes on. Not here:
         * the plan is in the middle of sending. */
        q->err = LT_REPLAY_ERR_TOO_LARGE;
        q->prev = q->next = q; /* unlinked; finish's unlink is then a no-op */
        q->unsent_next = rp->unsent;
        rp->unsent = q;
        lt_buf_reset(&q->body);
        return 0;
    }
    q->added = lt_mono_now();
    if (rp->h1.on) {
        link_req(rp, q);
        if (lt__replay_cancel_arm(rp, q, job) < 0)
            return lt_errset(err, LT_ENOMEM, "out of memory arming a cancellation");
        return lt__h1_send(rp, q, err);
    }
    curl_easy_setopt(q->easy, CURLOPT_POSTFIELDS, q->body.p);
    curl_easy_setopt(q->easy, CURLOPT_POSTFIELDSIZE, (long)q->body.len);
    if (curl_multi_add_handle(rp->multi, q->easy) != CURLM_OK) {
        req_put(rp, q);
        return lt_errset(err, LT_EIO, "curl refused a request");
    }
    link_req(rp, q);
    rp->kick = true;
    if (lt__replay_cancel_arm(rp, q, job) < 0)
        return lt_errset(err, LT_ENOMEM, "out of memory arming a cancellation");
    return 0;
}

static bool send_stopped(void *ud)
{
    const struct lt_replay *rp = ud;
    return rp->stop != 0;
}

static int finish(struct lt_replay *rp, struct lt_replay_req *q, const char *errclass,
                  lt_mono end_t, struct lt_err *err);

/* Record the requests that could not be built, each with its own error
 * result (finishing one may send, and fail, another: the list is drained
 * to the end). */
static int finish_unsent(struct lt_replay *rp, struct lt_err *err)
{
    while (rp->unsent) {
        struct lt_replay_req *q = rp->unsent;
        rp->unsent = q->unsent_next;
        int rc = finish(rp, q, q->err, lt_mono_now(), err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Let the plan send everything due by now; arm the schedule timer for
 * what is next. */
static int pump(struct lt_replay *rp, struct lt_err *err)
{
    if (rp->stop)
        return 0;
    int rc = lt_plan_pump(&rp->plan, lt__replay_since_origin_us(rp, lt_mono_now()), err);
    if (rc == 0)
        rc = finish_unsent(rp, err);
    if (rc < 0)
        return rc;
    int64_t next = lt_plan_next_due(&rp->plan);
    rp->due_set = next != INT64_MAX;
    /* The timer is set only when what it says changes: a timerfd_settime
     * per loop round was a system call per few tokens on long streams. */
    if (rp->due_set) {
        rp->next_due = lt_mono_add_ns(rp->origin, next * 1000);
        if (rp->sched_armed.ns != rp->next_due.ns) {
            lt_mono_timer_at(rp->sched_tfd, rp->next_due, 0);
            rp->sched_armed = rp->next_due;
        }
    } else if (rp->sched_armed.ns) {
        lt_mono_timer_off(rp->sched_tfd);
        rp->sched_armed.ns = 0;
    }
    return 0;
}

static void unlink_req(struct lt_replay_req *q)
{
    q->prev->next = q->next;
    q->next->prev = q->prev;
}

/* A fleet's replica failed under this request (--failover): no connection
 * at all, or a stream cut before its end. */
static bool failed_over(const char *errclass)
{
    return errclass && (!strcmp(errclass, LT_REPLAY_ERR_CONNECT) ||
                        !strcmp(errclass, LT_REPLAY_ERR_INCOMPLETE));
}

/* 429, 503 and connect failures may be retried (--retry). */
static bool retryable(const char *errclass, long status)
{
    return errclass && (!strcmp(errclass, LT_REPLAY_ERR_RATELIMIT) ||
                        !strcmp(errclass, LT_REPLAY_ERR_CONNECT) ||
                        (!strcmp(errclass, LT_REPLAY_ERR_HTTP) && status == 503));
}

void lt__replay_transfer_cut(struct lt_replay *rp, struct lt_replay_req *q)
{
    if (rp->h1.on)
        lt__h1_detach(rp, q); /* kept alive if its answer was read whole, else closed */
    else
        curl_multi_remove_handle(rp->multi, q->easy);
}

/* A request is over: record it, recycle it, let what waited on it go. */
static int finish(struct lt_replay *rp, struct lt_replay_req *q, const char *errclass,
                  lt_mono end_t, struct lt_err *err)
{
    size_t seq = q->seq;
    int64_t end_us = lt__replay_since_origin_us(rp, end_t);
    lt__replay_transfer_cut(rp, q);
    unlink_req(q);
    lt__replay_cancel_disarm(rp, q);
    if (q->replica >= 0) {
        lt_route_done(&rp->router, q->replica);
        if (rp->o.failover && !rp->stop && failed_over(errclass)) {
            /* The replica is gone or died mid-stream: nothing more goes
             * there, and this request starts again on another (at once:
             * a router retries, it does not wait). */
            struct lt_replay_replica *f = &rp->replicas[q->replica];
            if (!lt_route_is_down(&rp->router, q->replica)) {
                lt_route_down(&rp->router, q->replica);
                f->down_at_us = end_us;
            }
            f->failed_over++;
            rp->resend_from = q->replica;
            req_put(rp, q);
            int rc = send_seq(rp, seq, err);
            rp->resend_from = -1;
            return rc < 0 ? rc : finish_unsent(rp, err);
        }
    }
    if (retryable(errclass, q->status)) {
        int again = lt_plan_retry(&rp->plan, seq, end_us, q->retry_after_us, err);
        if (again) {
            rp->st.retries += again > 0;
            req_put(rp, q);
            return again < 0 ? again : 0;
        }
    }
    int rc = lt__replay_put_result(rp, seq, q, errclass, end_t, err);
    if (rc < 0) { /* not recorded: not counted */
        req_put(rp, q);
        return rc;
    }
    lt__replay_check_result(rp, seq, q, end_t);
    bool bad_usage = errclass && !strcmp(errclass, LT_REPLAY_ERR_BAD_USAGE);
    uint32_t out = bad_usage ? q->resp.counted : lt_wire_resp_out(&q->resp);
    if (q->replica >= 0) {
        struct lt_replay_replica *f = &rp->replicas[q->replica];
        f->requests++;
        f->out_tokens += out;
        f->errors += errclass && !lt__replay_is_cancelled(errclass);
    }
    rp->out_run += out;
    rp->st.requests++;
    rp->st.out_tokens += out;
    if (lt__replay_is_cancelled(errclass)) {
        rp->st.cancelled++;
    } else if (errclass) {
        rp->errors_run++;
        rp->st.errors++;
        if (!strcmp(errclass, LT_REPLAY_ERR_ABORTED))
            rp->st.aborted++;
        if (!strcmp(errclass, LT_REPLAY_ERR_RATELIMIT))
            rp->st.ratelimited++;
    } else {
        rp->st.ok++;
    }
    if (q->resp.has_usage && !bad_usage && !errclass && (q->want_img || q->want_vid))
        lt__replay_check_images(rp, q);
    if (q->resp.has_usage && !bad_usage && q->want_in && q->resp.in) {
        /* Recorded and corpus text is sent as it is, not fitted: its
         * error says what this server makes of it, and teaches the
         * synthesized prompts' correction nothing. */
        const struct lt_plan_job *job = &rp->trace.v[lt_plan_job_of(&rp->plan, seq)];
        bool fitted =
            !(rp->build.corpus && rp->build.corpus->n) && !(job->text && !rp->build.synthetic);
        double d = fabs((double)q->resp.in - (double)q->want_in);
        uint64_t *n = fitted ? &rp->st.len_checked : &rp->st.text_checked;
        double *sum = fitted ? &rp->st.len_abs_err : &rp->st.text_abs_err,
               *want = fitted ? &rp->st.len_want : &rp->st.text_want,
               *max = fitted ? &rp->st.len_max_rel : &rp->st.text_max_rel;
        (*n)++;
        *sum += d;
        *want += q->want_in;
        if (d / q->want_in > *max)
            *max = d / q->want_in;
        if (fitted)
            lt_replay_prompt_learn(&rp->build, q->want_in, q->resp.in);
    }
    req_put(rp, q);
    return lt_plan_finish(&rp->plan, seq, end_us, err);
}

int lt__replay_done(struct lt_replay *rp, struct lt_replay_req *q, const char *x,
                    struct lt_err *err)
{
    lt_mono end_t = q->has_fb && q->last.ns ? q->last : lt_mono_now();
    const char *cls = q->err ? q->err : x ? x : classify_content(rp, q);
    return finish(rp, q, cls, end_t, err);
}

int lt__replay_req_close(struct lt_replay *rp, struct lt_replay_req *q, const char *why,
                         lt_mono end_t, struct lt_err *err)
{
    /* Removing a transfer that has not ended closes its connection
     * (finish: lt__replay_transfer_cut). The lean client knows its status. */
    if (!q->headers_seen && q->has_fb && !rp->h1.on)
        curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &q->status);
    return finish(rp, q, why, end_t, err);
}

static int check_multi(struct lt_replay *rp, struct lt_err *err)
{
    int rc = 0, left;
    CURLMsg *m;
    while ((m = curl_multi_info_read(rp->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        CURLcode c = m->data.result;
        int scraped = lt__replay_scrape_done(rp, m->easy_handle, c, err);
        if (scraped < 0)
            return scraped;
        if (scraped)
            continue;
        struct lt_replay_req *q = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&q);
        if (!q->headers_seen)
            curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &q->status);
        long nc = 0;
        if (curl_easy_getinfo(q->easy, CURLINFO_NUM_CONNECTS, &nc) == CURLE_OK && nc > 0)
            rp->st.connects += (uint64_t)nc;
        LT_TRY(lt__replay_done(rp, q, classify_curl(q, c), err));
    }
out:
    return rc;
}

/* The run's state as the progress callbacks see it. */
static void progress_now(const struct lt_replay *rp, lt_mono now, struct lt_replay_progress *p)
{
    *p = (struct lt_replay_progress){
        .run = rp->run_id,
        .runs = rp->n_runs,
        .level = rp->level,
        .done = rp->plan.done_n,
        .total = rp->plan.total,
        .errors = rp->errors_run,
        .inflight = rp->plan.inflight,
        .out_tokens = rp->out_run,
        .elapsed_s = (double)lt_mono_diff_ns(now, rp->origin) / 1e9,
        .lag_s = rp->due_set && lt_mono_diff_ns(now, rp->next_due) > 0
                     ? (double)lt_mono_diff_ns(now, rp->next_due) / 1e9
                     : 0,
        .waiting = rp->scr.waiting,
        .stopped = rp->stop != 0,
        .unsent = rp->unsent_run,
        .sched_end_s = rp->plan.sched_end >= 0 ? (double)rp->plan.sched_end / 1e6 : -1,
    };
}

/* The housekeeping tick: first-token timeouts, the writer's frame clock,
 * the progress callback. */
static int tick(struct lt_replay *rp, struct lt_err *err)
{
    int rc = 0;
    lt_mono now = lt_mono_now();
    int64_t ftt = rp->o.first_token_timeout_us;
    if (ftt > 0) {
        struct lt_replay_req *q = rp->head.next, *next;
        for (; q != &rp->head; q = next) {
            next = q->next;
            lt_mono from = q->has_sent ? q->sent : q->added;
            if (!q->resp.has_first_token && lt_mono_diff_us(now, from) > ftt) {
                /* The headers may have come without any body yet: keep
                 * their status. */
                if (!q->headers_seen && q->has_fb && !rp->h1.on)
                    curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &q->status);
                LT_TRY(finish(rp, q, LT_REPLAY_ERR_TTFT, now, err));
            }
        }
    }
    LT_TRY(lt_writer_tick(rp->w, err));
    if (rp->o.progress || rp->o.live) {
        struct lt_replay_progress p;
        progress_now(rp, now, &p);
        if (rp->o.live) {
            struct lt_live_server srv = {rp->scr.running,
                                         rp->scr.waiting >= 0 ? rp->scr.waiting : NAN, rp->scr.kv};
            lt_replay_live_tick(rp->o.live, &p, &srv);
        }
        if (rp->o.progress)
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
    LT_TRY(finish_unsent(rp, err));
    while (rp->head.next != &rp->head)
        LT_TRY(finish(rp, rp->head.next, LT_REPLAY_ERR_ABORTED, now, err));
    int64_t now_us = lt__replay_since_origin_us(rp, now);
    rp->stop_at_us = now_us;
    /* Below low every seq is DONE (a streamed plan gave their memory
     * back: they read as PENDING). A streamed plan holds only a window:
     * the rest is read in order to be recorded, and given back behind. */
    for (size_t k = rp->plan.low; k < rp->plan.total; k++) {
        LT_TRY(lt_plan_hold(&rp->plan, k, err));
        if (rp->plan.state[k] == LT_PLAN_DONE)
            continue;
        lt_plan_abort(&rp->plan, k, now_us);
        LT_TRY(lt__replay_put_result(rp, k, NULL, LT_REPLAY_ERR_UNSENT, now, err));
        rp->st.requests++;
        rp->st.unsent++;
        rp->unsent_run++;
    }
out:
    return rc;
}

/* epoll_wait's timeout for a deadline, at most cap ms. */
static int wait_until(lt_mono due, lt_mono now, int cap)
{
    int64_t ns = lt_mono_diff_ns(due, now);
    int ms = ns <= 0 ? 0 : ns >= 1000000000LL ? 1000 : (int)((ns + 999999) / 1000000);
    return ms < cap ? ms : cap;
}

static int loop(struct lt_replay *rp, struct lt_err *err)
{
    int rc = 0, running;
    struct epoll_event evs[256];
    LT_TRY(pump(rp, err));
    while (!lt_plan_over(&rp->plan)) {
        if (rp->stop) {
            LT_TRY(abort_all(rp, err));
            break;
        }
        int wait_ms = 1000;
        lt_mono now = lt_mono_now();
        if (rp->curl_due_set)
            wait_ms = wait_until(rp->curl_due, now, wait_ms);
        if (rp->h1.due_set)
            wait_ms = wait_until(rp->h1.due, now, wait_ms);
        int n = epoll_wait(rp->epfd, evs, 256, wait_ms);
        lt__h1_round(&rp->h1);
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
                rp->sched_armed.ns = -1; /* fired: set it again, whatever is next */
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
            } else if (fd == rp->scr.tfd) {
                lt__replay_scrape_tick(rp);
            } else if (fd == rp->cancels.tfd) {
                LT_TRY(lt__replay_cancel_fire(rp, err));
            } else if ((rc = lt__h1_event(rp, fd, evs[i].events, err)) != 0) {
                if (rc < 0)
                    goto out;
                rc = 0;
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
        if (rp->h1.due_set && lt_mono_diff_ns(lt_mono_now(), rp->h1.due) >= 0)
            LT_TRY(lt__h1_timeouts(rp, err));
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

/* ---- runs ---- */

static int run_one(struct lt_replay *rp, struct lt_err *err)
{
    int rc = 0;
    const struct lt_replay_opts *o = &rp->o;
    rp->errors_run = rp->out_run = rp->unsent_run = 0;
    lt_u64map_release(&rp->warm);
    rp->warm_sent = 0;
    rp->stop_at_us = -1;
    rp->due_set = false;
    rp->sched_armed.ns = -1;
    rp->build.salt = lt_mix64(o->seed ^ (0x1234567ULL + rp->run_id));
    const struct lt_plan_ops ops = {.send = send_seq, .stopped = send_stopped, .ud = rp};
    LT_TRY(lt_plan_start(&rp->plan, rp->run_id, rp->level, &ops, err));
    lt__replay_scrape_before_run(rp);
    struct lt_extra extra = {0};
    rp->origin = lt_mono_add_ns(lt_mono_now(), 1000000); /* 1 ms to get going */
    /* A start agreed with other processes, when there are any. */
    if (o->run_origin)
        LT_TRY(o->run_origin(o->run_origin_ud, rp->run_id, &rp->origin, &extra, err));
    LT_TRY(lt__replay_scrape_run_extra(rp, &extra, err));
    LT_TRY(lt__replay_put_run(rp, extra, err));
    LT_TRY(lt_writer_flush(rp->w, err));
    LT_TRY(lt__replay_check_start(rp, err));
    if (o->run_begin || o->live) { /* before anything is sent: the run's schedule */
        struct lt_replay_progress p;
        progress_now(rp, lt_mono_now(), &p);
        if (o->live)
            lt_replay_live_run_begin(o->live, &p);
        if (o->run_begin)
            o->run_begin(o->progress_ud, &p);
    }
    lt__replay_scrape_start(rp);
    lt_mono_timer_at(rp->tick_tfd, lt_mono_add_ns(lt_mono_now(), TICK_NS), TICK_NS);
    LT_TRY(loop(rp, err));
    LT_TRY(lt__replay_scrape_stop(rp, err));
    LT_TRY(tick(rp, err)); /* a last progress report */
    LT_TRY(lt__replay_check_end(rp, err));
out:
    lt_mono_timer_off(rp->tick_tfd);
    lt_mono_timer_off(rp->sched_tfd);
    return rc;
}

int lt__replay_run_all(struct lt_replay *rp, struct lt_err *err)
{
    int rc = 0;
    const struct lt_replay_opts *o = &rp->o;
    rp->n_runs = lt_plan_runs(&rp->plan.o, o->n_levels);
    for (uint32_t i = 0; i < rp->n_runs && !rp->stop; i++) {
        rp->run_id = i;
        rp->level = rp->mode == LT_REPLAY_MODE_CONCURRENCY ? o->levels[i] : 0;
        rc = run_one(rp, err);
        rp->st.runs++;
        if (rc < 0)
            break;
    }
    return rc;
}

int lt_replay_run(struct lt_replay *rp, struct lt_err *err)
{
    if (!rp->w)
        return lt_errset(err, LT_EINVAL, "lt_replay_prepare was not run");
    int rc = lt__replay_run_all(rp, err);
    /* A stop between runs still leaves a properly closed file. What reached
     * it is known once the last frame is out (or failed). */
    struct lt_err e2 = {0};
    int crc = lt_writer_flush(rp->w, rc < 0 ? &e2 : err);
    rp->st.write_failed = lt_writer_failed(rp->w);
    lt_writer_on_disk(rp->w, &rp->st.on_disk);
    int crc2 = lt_writer_close(rp->w, rc < 0 || crc < 0 ? &e2 : err);
    crc = crc < 0 ? crc : crc2;
    rp->w = NULL;
    if (rc == 0 && crc < 0)
        rc = crc;
    return rc;
}

/* ---- the engine's resources ---- */

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

int lt__replay_engine_init(struct lt_replay *rp, struct lt_err *err)
{
    int rc = make_fds(rp, err);
    if (rc < 0)
        return rc;
    rp->multi = curl_multi_init();
    if (!rp->multi)
        return lt_errset(err, LT_ENOMEM, "cannot create the curl multi handle");
    curl_multi_setopt(rp->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(rp->multi, CURLMOPT_SOCKETDATA, rp);
    curl_multi_setopt(rp->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(rp->multi, CURLMOPT_TIMERDATA, rp);
    curl_multi_setopt(rp->multi, CURLMOPT_MAXCONNECTS, 20000L);
    return lt__replay_cancel_init(rp, rp->epfd, err);
}

void lt__replay_engine_release(struct lt_replay *rp)
{
    lt__replay_scrape_release(rp);
    while (rp->head.next && rp->head.next != &rp->head) {
        struct lt_replay_req *q = rp->head.next;
        lt__replay_transfer_cut(rp, q);
        unlink_req(q);
        req_destroy(q);
    }
    while (rp->unsent) {
        struct lt_replay_req *q = rp->unsent;
        rp->unsent = q->unsent_next;
        req_destroy(q);
    }
    while (rp->free_reqs) {
        struct lt_replay_req *q = rp->free_reqs;
        rp->free_reqs = q->next;
        req_destroy(q);
    }
    lt__h1_release(rp);
    if (rp->multi)
        curl_multi_cleanup(rp->multi);
    lt__replay_cancel_release(rp);
    int fds[] = {rp->epfd, rp->sched_tfd, rp->tick_tfd, rp->stop_pipe[0], rp->stop_pipe[1]};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/*
 * The capture proxy (capture_proxy.h): event loops, a fixed number of
 * threads whatever the connections. In front, libmicrohttpd's own epoll
 * loop (--threads of them); behind, one thread ("the loop") drives every
 * upstream transfer on one libcurl multi handle. MHD's threads never wait:
 * a connection that needs the upstream (its status, or the next bytes of
 * its body) is suspended, and the loop resumes it when curl has news.
 * MHD's threads hand the loop commands (add a transfer, remove it, undo a
 * pause) through a queue and an eventfd; what both sides touch of
 * a connection is guarded by its mutex. Backpressure both ways: past
 * PENDING_SOFT bytes the client has not taken, the transfer is paused
 * (curl holds the rest, TCP holds the upstream), and resumed when the
 * client has taken them; a client is never read faster than it sends.
 * MHD does not watch a suspended connection's socket, so the loop peeks
 * at them every POLL_MS: a client that left cancels its transfer.
 *
 * One request on a connection goes through these states:
 *
 *            uri_log                      body complete
 *   IDLE ------------> NEW --first call--> BODY --------------+
 *     ^                 |                    |                |
 *     |                 | Content-Length     | body over      | forward: curl
 *     |                 | over the limit     | the limit      | transfer handed to
 *     |                 v                    v                v the loop
 *     |               LOCAL <---------------------------- WAIT_HEADERS (suspended
 *     |    (413, or 502 when the upstream    upstream failed  | until the loop has
 *     |     could not be reached)            before a status  | status + headers:
 *     |                 |                                     | response queued)
 *     |                 |                                     v
 *     |                 |                                   RELAY
 *     |                 |                  reader callback: bytes as they come,
 *     |                 |                  suspended when there are none yet;
 *     |                 |                  upstream cut -> client connection cut;
 *     |                 |                  client gone / stop -> upstream cancelled
 *     |                 v                                     |
 *     +------------- (MHD: request completed, or connection closed) <--+
 *                    finalize: the loop removes the transfer (cancelling
 *                    it if still running), stamp the outcome, hand the
 *                    call to the recorder
 *
 * A request leaves WAIT_HEADERS or RELAY early when its client disconnects
 * or capture stops; finalize records why (`err`).
 */
#include "capture/capture_proxy.h"
#include "capture/capture_call.h"
#include "capture/capture_recorder.h"
#include "capture/capture_session.h"
#include "capture/capture_sse.h"
#include "base/lt_buf.h"
#include "base/lt_time.h"
#include "traces/trace_writer.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define URI_MAX ((size_t)64 << 10)
#define RESP_HDRS_MAX ((size_t)256 << 10)
#define PENDING_SOFT ((size_t)256 << 10) /* pause the upstream past this */
#define PENDING_MAX ((size_t)64 << 20)
#define RESP_BODY_MAX ((size_t)32 << 20) /* non-streamed bodies parsed for the record */
#define POLL_MS 100

enum conn_state { ST_IDLE, ST_NEW, ST_BODY, ST_WAIT_HEADERS, ST_RELAY, ST_LOCAL, ST_HEALTH };

struct lt_capture {
    struct lt_capture_opts o;
    char upstream[2048];
    struct lt_capture_call_opts co;
    struct MHD_Daemon *mhd;
    struct lt_writer *w;
    struct lt_capture_recorder *rec;
    lt_mono start;
    pthread_mutex_t sess_mu;
    struct lt_capture_sessions sess;
    atomic_bool stopping;
    atomic_bool draining;          /* lt_capture_quiesce: no new connections */
    atomic_uint_fast64_t n_active; /* requests begun and not finished */
    bool curl_on;                  /* curl_global_init done */
    uint16_t port;
    atomic_uint_fast64_t n_requests, n_chunks, n_client_gone, n_upstream_failed, n_too_large;
    atomic_uint_fast64_t n_busy;
    /* Request bodies held, all connections together (o.max_pending caps
     * them): what many half-sent bodies could otherwise grow without end. */
    atomic_size_t pending;
    /* The upstream loop: one thread, one multi handle for every transfer;
     * MHD's threads hand it commands (add, remove, unpause). */
    CURLM *multi;
    int ep;              /* epoll set of curl's sockets and wake_fd */
    int wake_fd;         /* eventfd: commands are queued, or stop */
    int64_t timer_at_ns; /* curl's timeout (CLOCK_MONOTONIC), -1: none */
    pthread_t loop;
    bool loop_on;
    atomic_bool loop_stop;
    pthread_mutex_t q_mu;
    struct conn *q; /* connections with commands for the loop (q_next) */
    /* Every connection, for the departure check and the stop. */
    pthread_mutex_t conns_mu;
    struct conn *conns;
};

/* Commands for the loop, bits of conn.q_ops: run in this order, which is
 * the only order one request can ask them in. */
enum cmd_op { CMD_ADD = 1, CMD_UNPAUSE = 2, CMD_REMOVE = 4 };

struct conn {
    struct lt_capture *cap;
    struct MHD_Connection *mc;
    int fd;
    struct conn *prev, *next; /* cap->conns */
    /* mu guards what the upstream loop and MHD's thread share: the
     * transfer's state, pending bytes and `suspended`. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool suspended; /* MHD_suspend_connection called, no resume yet */
    bool parked;    /* suspended, or resumed and MHD has not called back yet */
    bool removed;   /* the loop acknowledged CMD_REMOVE */
    unsigned q_ops; /* commands for the loop (cap->q_mu) ... */
    bool queued;    /* ... and c is on cap->q */
    struct conn *q_next;
    bool in_multi; /* the loop's own view (loop thread only) */
    CURL *easy;
    bool easy_added; /* handed to the loop and not yet removed (MHD side) */
    /* The request in progress. */
    enum conn_state st;
    bool begun; /* finalize is owed */
    struct lt_buf uri;
    char method[16];
    bool recorded;
    uint64_t seq;
    struct lt_capture_call *call;
    struct lt_buf body;
    bool too_large;
    bool busy;              /* the bodies held reached max_pending: a 503 */
    size_t counted;         /* bytes of body counted in cap->pending */
    struct lt_buf sendbody; /* the body with include_usage added */
    bool injected;
    struct curl_slist *req_hdrs;
    struct lt_buf sess_hdr;
    bool has_sess_hdr;
    lt_mono sent, first_byte, first_token, last_byte; /* last_byte: the piece being read */
    bool have_first_byte, have_first_token;
    /* The upstream's answer. */
    long status;
    int status_sent;         /* what the client got */
    struct lt_buf resp_hdrs; /* "name\0value\0" pairs */
    bool headers_done;
    int64_t content_length;
    bool is_sse;
    struct lt_capture_sse sse;
    bool sse_on, sse_ended;
    struct lt_buf pending; /* bytes for the client */
    size_t pending_off;
    struct lt_buf resp_body;
    bool resp_body_whole;
    bool paused;
    bool curl_done;
    CURLcode curl_rc;
    bool client_gone;
    bool bad_chunk;
    const char *err;
};

/* ---- small helpers ---------------------------------------------------- */

int lt_capture_new_key(uint64_t *k0, uint64_t *k1, struct lt_err *err)
{
    unsigned char b[16];
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd < 0)
        return lt_errset(err, LT_EIO, "cannot open /dev/urandom: %s", strerror(errno));
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t r = read(fd, b + got, sizeof b - got);
        if (r <= 0) {
            close(fd);
            return lt_errset(err, LT_EIO, "cannot read /dev/urandom");
        }
        got += (size_t)r;
    }
    close(fd);
    *k0 = *k1 = 0;
    for (int i = 0; i < 8; i++) {
        *k0 = (*k0 << 8) | b[i];
        *k1 = (*k1 << 8) | b[8 + i];
    }
    return 0;
}

void lt_capture_url_origin(const char *url, char *out, size_t outsz)
{
    const char *p = strstr(url, "://");
    const char *host = p ? p + 3 : url;
    size_t hl = strcspn(host, "/?#");
    const char *at = memchr(host, '@', hl);
    if (at) {
        hl -= (size_t)(at + 1 - host);
        host = at + 1;
    }
    snprintf(out, outsz, "%.*s%s%.*s", p ? (int)(p - url) : 0, url, p ? "://" : "", (int)hl, host);
}

static bool hop_by_hop(const char *name)
{
    static const char *const hop[] = {
        "connection", "keep-alive",        "proxy-connection", "proxy-authenticate", "te",
        "trailer",    "transfer-encoding", "upgrade",          "content-length",     "host",
        "expect"};
    for (size_t i = 0; i < sizeof hop / sizeof hop[0]; i++)
        if (!strcasecmp(name, hop[i]))
            return true;
    return false;
}

static bool client_left(struct conn *c)
{
    char b;
    ssize_t r = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r == 0)
        return true;
    if (r < 0)
        return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
    return false; /* pipelined bytes of a next request */
}

/* c->mu held: hand the connection back to MHD if it waits for us. */
static void resume_locked(struct conn *c)
{
    if (c->suspended) {
        c->suspended = false;
        MHD_resume_connection(c->mc);
    }
}

/* c->mu held, from an MHD callback: nothing to do until the loop has
 * news (the callback returns as if waiting, and is called again). */
static void suspend_locked(struct conn *c)
{
    c->suspended = c->parked = true;
    MHD_suspend_connection(c->mc);
}

static void wake(struct lt_capture *cap)
{
    uint64_t one = 1;
    ssize_t w = write(cap->wake_fd, &one, sizeof one);
    (void)w; /* a full counter wakes the loop as well */
}

/* A command for the loop: a bit on the connection, and the connection on
 * the loop's queue (nothing to allocate, so posting cannot fail). */
static void post(struct lt_capture *cap, struct conn *c, enum cmd_op op)
{
    pthread_mutex_lock(&cap->q_mu);
    c->q_ops |= (unsigned)op;
    if (!c->queued) {
        c->queued = true;
        c->q_next = cap->q;
        cap->q = c;
    }
    pthread_mutex_unlock(&cap->q_mu);
    wake(cap);
}

/* ---- curl callbacks --------------------------------------------------- */

static bool on_sse_data(void *ud, const char *data, size_t len)
{
    struct conn *c = ud;
    unsigned bits = lt_capture_call_chunk(c->call, data, len);
    atomic_fetch_add(&c->cap->n_chunks, 1);
    if ((bits & LT_CAPTURE_CHUNK_TOKEN) && !c->have_first_token) {
        c->first_token = c->last_byte; /* when the piece holding it arrived */
        c->have_first_token = true;
    }
    if (bits & LT_CAPTURE_CHUNK_BAD)
        c->bad_chunk = true;
    /* Only the usage chunk capture itself asked for is taken out. */
    return c->injected && (bits & LT_CAPTURE_CHUNK_USAGE_ONLY);
}

static size_t header_locked(struct conn *c, char *p, size_t size, size_t nmemb)
{
    size_t n = size * nmemb, len = n;
    while (len && (p[len - 1] == '\n' || p[len - 1] == '\r'))
        len--;
    if (len >= 5 && !memcmp(p, "HTTP/", 5)) {
        /* A new response (after a 100 Continue, say) replaces the last. */
        lt_buf_reset(&c->resp_hdrs);
        const char *sp = memchr(p, ' ', len);
        c->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        c->content_length = -1;
        c->is_sse = false;
        return n;
    }
    if (c->headers_done)
        return n; /* trailers after a chunked body: not forwarded */
    if (len == 0) {
        if (c->status >= 200) {
            c->headers_done = true;
            if (c->is_sse && c->call) {
                lt_capture_sse_init(&c->sse, c->injected, on_sse_data, c);
                c->sse_on = true;
            }
        }
        return n;
    }
    const char *colon = memchr(p, ':', len);
    if (!colon)
        return n;
    size_t nl = (size_t)(colon - p);
    const char *v = colon + 1;
    while (v < p + len && (*v == ' ' || *v == '\t'))
        v++;
    size_t vl = (size_t)(p + len - v);
    char name[64];
    if (nl < sizeof name) {
        memcpy(name, p, nl);
        name[nl] = '\0';
        if (!strcasecmp(name, "content-length"))
            c->content_length = strtoll(v, NULL, 10);
        if (!strcasecmp(name, "content-type") && vl >= 17 &&
            !strncasecmp(v, "text/event-stream", 17))
            c->is_sse = true;
    }
    if (lt_buf_append(&c->resp_hdrs, p, nl) < 0 || lt_buf_append(&c->resp_hdrs, "", 1) < 0 ||
        lt_buf_append(&c->resp_hdrs, v, vl) < 0 || lt_buf_append(&c->resp_hdrs, "", 1) < 0)
        return 0; /* headers beyond the cap: fail the transfer */
    return n;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
    struct conn *c = ud;
    pthread_mutex_lock(&c->mu);
    size_t r = header_locked(c, p, size, nmemb);
    if (c->headers_done)
        resume_locked(c);
    pthread_mutex_unlock(&c->mu);
    return r;
}

static size_t write_locked(struct conn *c, char *p, size_t size, size_t nmemb)
{
    size_t n = size * nmemb;
    if (c->pending_off == c->pending.len) {
        lt_buf_reset(&c->pending);
        c->pending_off = 0;
    } else if (c->pending_off >= c->pending.len / 2) {
        lt_buf_consume(&c->pending, c->pending_off);
        c->pending_off = 0;
    }
    if (c->pending.len > c->pending_off && c->pending.len - c->pending_off + n > PENDING_SOFT) {
        /* The client is slower than the upstream: let curl hold the data. */
        c->paused = true;
        return CURL_WRITEFUNC_PAUSE;
    }
    lt_mono now = lt_mono_now();
    if (!c->have_first_byte) {
        c->first_byte = now;
        c->have_first_byte = true;
    }
    c->last_byte = now;
    int rc;
    if (c->sse_on) {
        rc = lt_capture_sse_feed(&c->sse, p, n, &c->pending);
    } else {
        rc = lt_buf_append(&c->pending, p, n);
        if (c->call && lt_buf_append(&c->resp_body, p, n) < 0)
            c->resp_body_whole = false;
    }
    return rc < 0 ? 0 : n;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    struct conn *c = ud;
    pthread_mutex_lock(&c->mu);
    size_t r = write_locked(c, p, size, nmemb);
    resume_locked(c); /* bytes for the client, or a pause it must undo */
    pthread_mutex_unlock(&c->mu);
    return r;
}

/* ---- the upstream loop ------------------------------------------------ */

static void check_done(struct lt_capture *cap)
{
    CURLMsg *m;
    int q;
    while ((m = curl_multi_info_read(cap->multi, &q)))
        if (m->msg == CURLMSG_DONE) {
            struct conn *c = NULL;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&c);
            CURLcode rc = m->data.result;
            curl_multi_remove_handle(cap->multi, m->easy_handle);
            c->in_multi = false;
            pthread_mutex_lock(&c->mu);
            c->curl_done = true;
            c->curl_rc = rc;
            resume_locked(c);
            pthread_mutex_unlock(&c->mu);
        }
}

static void run_commands(struct lt_capture *cap)
{
    pthread_mutex_lock(&cap->q_mu);
    struct conn *list = cap->q;
    cap->q = NULL;
    pthread_mutex_unlock(&cap->q_mu);
    while (list) {
        struct conn *c = list;
        pthread_mutex_lock(&cap->q_mu);
        list = c->q_next;
        unsigned ops = c->q_ops;
        c->q_ops = 0;
        c->queued = false;
        pthread_mutex_unlock(&cap->q_mu);
        if ((ops & CMD_ADD) && curl_multi_add_handle(cap->multi, c->easy) == CURLM_OK) {
            c->in_multi = true;
        } else if (ops & CMD_ADD) {
            pthread_mutex_lock(&c->mu);
            c->curl_done = true;
            c->curl_rc = CURLE_FAILED_INIT;
            resume_locked(c);
            pthread_mutex_unlock(&c->mu);
        }
        if ((ops & CMD_UNPAUSE) && c->in_multi)
            curl_easy_pause(c->easy, CURLPAUSE_CONT);
        if (ops & CMD_REMOVE) {
            /* Removing a running transfer closes its connection: this is
             * how a departed client's request is cancelled upstream. */
            if (c->in_multi)
                curl_multi_remove_handle(cap->multi, c->easy);
            c->in_multi = false;
            pthread_mutex_lock(&c->mu);
            c->removed = true;
            pthread_cond_signal(&c->cv);
            pthread_mutex_unlock(&c->mu);
        }
    }
}

/* Clients that left while their connection waits for the upstream: MHD
 * does not watch a suspended connection's socket, so the loop does. */
static void check_clients(struct lt_capture *cap)
{
    pthread_mutex_lock(&cap->conns_mu);
    for (struct conn *c = cap->conns; c; c = c->next) {
        pthread_mutex_lock(&c->mu);
        if (c->suspended && client_left(c)) {
            c->client_gone = true;
            resume_locked(c);
        }
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_unlock(&cap->conns_mu);
}

/* curl's sockets, in the loop's epoll set: one system call per event
 * instead of a poll over every transfer. */
static int on_socket(CURL *e, curl_socket_t s, int what, void *ud, void *sockp)
{
    struct lt_capture *cap = ud;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(cap->ep, EPOLL_CTL_DEL, s, NULL);
        return 0;
    }
    struct epoll_event ev = {.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) |
                                       ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u),
                             .data.fd = s};
    if (epoll_ctl(cap->ep, EPOLL_CTL_MOD, s, &ev) < 0 && errno == ENOENT)
        epoll_ctl(cap->ep, EPOLL_CTL_ADD, s, &ev);
    return 0;
}

static int on_timer(CURLM *m, long timeout_ms, void *ud)
{
    struct lt_capture *cap = ud;
    cap->timer_at_ns = timeout_ms < 0 ? -1 : lt_mono_now().ns + (int64_t)timeout_ms * 1000000;
    return 0;
}

static void *loop_main(void *arg)
{
    struct lt_capture *cap = arg;
    lt_mono last_check = lt_mono_now();
    struct epoll_event ev[256];
    int running;
    while (!atomic_load(&cap->loop_stop)) {
        run_commands(cap);
        int64_t now = lt_mono_now().ns;
        int wait = POLL_MS;
        if (cap->timer_at_ns >= 0)
            wait = cap->timer_at_ns <= now ? 0
                   : cap->timer_at_ns - now < (int64_t)POLL_MS * 1000000
                       ? (int)((cap->timer_at_ns - now + 999999) / 1000000)
                       : POLL_MS;
        int n = epoll_wait(cap->ep, ev, 256, wait);
        for (int i = 0; i < n; i++) {
            if (ev[i].data.fd == cap->wake_fd) {
                uint64_t v;
                ssize_t r = read(cap->wake_fd, &v, sizeof v);
                (void)r;
                continue;
            }
            int flags = ((ev[i].events & EPOLLIN) ? CURL_CSELECT_IN : 0) |
                        ((ev[i].events & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
                        ((ev[i].events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
            curl_multi_socket_action(cap->multi, ev[i].data.fd, flags, &running);
        }
        if (cap->timer_at_ns >= 0 && cap->timer_at_ns <= lt_mono_now().ns) {
            cap->timer_at_ns = -1;
            curl_multi_socket_action(cap->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        check_done(cap);
        lt_mono t = lt_mono_now();
        if (lt_mono_diff_us(t, last_check) >= POLL_MS * 1000) {
            check_clients(cap);
            last_check = t;
        }
    }
    run_commands(cap);
    return NULL;
}

static bool must_leave(struct conn *c)
{
    return c->client_gone || atomic_load(&c->cap->stopping);
}

/* ---- MHD side -------------------------------------------------------- */

static enum MHD_Result local_reply(struct conn *c, unsigned status, const char *type,
                                   const char *msg)
{
    char body[512];
    int n = snprintf(body, sizeof body,
                     "{\"error\":{\"message\":\"%s\",\"type\":\"%s\",\"code\":%u}}\n", msg, type,
                     status);
    struct MHD_Response *r =
        MHD_create_response_from_buffer((size_t)n, body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ok = MHD_queue_response(c->mc, status, r);
    MHD_destroy_response(r);
    c->st = ST_LOCAL;
    c->status_sent = (int)status;
    return ok;
}

/* MHD asks for the next bytes: what the loop has queued, or the end; with
 * nothing yet, the connection is suspended until the loop has some. */
static ssize_t reader_locked(struct conn *c, char *buf, size_t max)
{
    for (;;) {
        size_t avail = c->pending.len - c->pending_off;
        if (avail) {
            size_t n = avail < max ? avail : max;
            memcpy(buf, c->pending.p + c->pending_off, n);
            c->pending_off += n;
            return (ssize_t)n;
        }
        if (c->paused) {
            /* The client took everything: let the upstream go on. */
            c->paused = false;
            post(c->cap, c, CMD_UNPAUSE);
        }
        if (c->curl_done) {
            if (c->curl_rc != CURLE_OK) {
                c->err = "upstream_cut";
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
            if (c->sse_on && !c->sse_ended) {
                c->sse_ended = true;
                (void)lt_capture_sse_end(&c->sse, &c->pending);
                continue;
            }
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
        if (must_leave(c))
            return MHD_CONTENT_READER_END_WITH_ERROR;
        suspend_locked(c);
        return 0;
    }
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct conn *c = cls;
    pthread_mutex_lock(&c->mu);
    c->parked = false;
    ssize_t r = reader_locked(c, buf, max);
    pthread_mutex_unlock(&c->mu);
    return r;
}

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    struct conn *c = cls;
    if (!key || hop_by_hop(key))
        return MHD_YES;
    if (!value)
        value = "";
    if (c->cap->o.session_header && !strcasecmp(key, c->cap->o.session_header)) {
        lt_buf_reset(&c->sess_hdr);
        if (lt_buf_puts(&c->sess_hdr, value) == 0)
            c->has_sess_hdr = true;
    }
    struct lt_buf line;
    lt_buf_init(&line, (size_t)1 << 20);
    /* "Name;" is curl's way to send a header with an empty value. */
    int rc = *value ? lt_buf_printf(&line, "%s: %s", key, value) : lt_buf_printf(&line, "%s;", key);
    if (rc == 0) {
        struct curl_slist *l = curl_slist_append(c->req_hdrs, line.p);
        if (l)
            c->req_hdrs = l;
    }
    lt_buf_release(&line);
    return MHD_YES;
}

static int start_upstream(struct conn *c)
{
    struct lt_capture *cap = c->cap;
    struct lt_buf url;
    lt_buf_init(&url, URI_MAX + sizeof cap->upstream);
    int rc = lt_buf_puts(&url, cap->upstream);
    if (rc == 0)
        rc = lt_buf_append(&url, c->uri.p ? c->uri.p : "/", c->uri.len ? c->uri.len : 1);
    if (rc < 0) {
        lt_buf_release(&url);
        return rc;
    }
    if (!c->easy)
        c->easy = curl_easy_init();
    else
        curl_easy_reset(c->easy);
    CURL *e = c->easy;
    if (!e) {
        lt_buf_release(&url);
        return LT_ENOMEM;
    }
    /* Keep curl from adding what the client did not send. */
    bool has_accept = false;
    for (struct curl_slist *l = c->req_hdrs; l; l = l->next)
        if (!strncasecmp(l->data, "accept:", 7) || !strncasecmp(l->data, "accept;", 7))
            has_accept = true;
    if (!has_accept)
        c->req_hdrs = curl_slist_append(c->req_hdrs, "Accept:");
    c->req_hdrs = curl_slist_append(c->req_hdrs, "Expect:");
    curl_easy_setopt(e, CURLOPT_URL, url.p);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->req_hdrs);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(cap->o.connect_timeout_us / 1000));
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    if (cap->o.cacert)
        curl_easy_setopt(e, CURLOPT_CAINFO, cap->o.cacert);
    const struct lt_buf *b = c->injected ? &c->sendbody : &c->body;
    if (!strcmp(c->method, "GET")) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else if (!strcmp(c->method, "HEAD")) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else {
        if (strcmp(c->method, "POST") != 0)
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, c->method);
        if (strcmp(c->method, "POST") == 0 || b->len) {
            curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)b->len);
            curl_easy_setopt(e, CURLOPT_POSTFIELDS, b->p ? b->p : "");
        }
    }
    lt_buf_release(&url); /* curl copied the URL */
    c->content_length = -1;
    curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)c);
    c->sent = lt_mono_now();
    c->st = ST_WAIT_HEADERS;
    c->removed = false;
    c->easy_added = true;
    post(cap, c, CMD_ADD);
    return 0;
}

static enum MHD_Result queue_upstream_response(struct conn *c)
{
    uint64_t size = MHD_SIZE_UNKNOWN;
    if (c->content_length >= 0 && strcmp(c->method, "HEAD") != 0)
        size = (uint64_t)c->content_length;
    struct MHD_Response *r = MHD_create_response_from_callback(size, 64 << 10, reader, c, NULL);
    if (!r)
        return MHD_NO;
    for (size_t off = 0; off < c->resp_hdrs.len;) {
        const char *name = c->resp_hdrs.p + off;
        const char *val = name + strlen(name) + 1;
        off = (size_t)(val - c->resp_hdrs.p) + strlen(val) + 1;
        if (!hop_by_hop(name) && strcasecmp(name, "content-length") != 0)
            MHD_add_response_header(r, name, val);
    }
    c->status_sent = (int)c->status;
    enum MHD_Result ok = MHD_queue_response(c->mc, (unsigned)c->status, r);
    MHD_destroy_response(r);
    c->st = ST_RELAY;
    return ok;
}

static enum MHD_Result upstream_answer(struct conn *c);

/* The whole request is in: record its shape and send it upstream. */
static enum MHD_Result forward(struct conn *c)
{
    struct lt_capture *cap = c->cap;
    MHD_get_connection_values(c->mc, MHD_HEADER_KIND, collect_header, c);
    if (c->call) {
        if (lt_capture_call_request(c->call, c->body.p ? c->body.p : "", c->body.len) < 0 &&
            !c->call->req_json)
            c->err = "bad_json";
        pthread_mutex_lock(&cap->sess_mu);
        (void)lt_capture_sessions_assign(&cap->sess, c->call,
                                         c->has_sess_hdr ? c->sess_hdr.p : NULL, c->sess_hdr.len);
        pthread_mutex_unlock(&cap->sess_mu);
        if (c->recorded)
            lt_capture_recorder_started(cap->rec, c->call);
        struct lt_capture_call *k = c->call;
        if (!cap->o.no_usage && k->req_json && k->stream && !k->usage_asked &&
            !k->has_stream_options &&
            lt_capture_add_usage_option(c->body.p, c->body.len, &c->sendbody) == 0)
            c->injected = true;
    }
    if (start_upstream(c) < 0) {
        c->err = "internal";
        return local_reply(c, 500, "server_error", "capture could not start the upstream request");
    }
    return upstream_answer(c);
}

/* In WAIT_HEADERS: the upstream's status and headers, its failure, or
 * (suspended) a wait for either. */
static enum MHD_Result upstream_answer(struct conn *c)
{
    struct lt_capture *cap = c->cap;
    pthread_mutex_lock(&c->mu);
    c->parked = false;
    bool headers = c->headers_done, done = c->curl_done;
    if (!headers && !done && !must_leave(c)) {
        suspend_locked(c);
        pthread_mutex_unlock(&c->mu);
        return MHD_YES;
    }
    pthread_mutex_unlock(&c->mu);
    if (headers)
        return queue_upstream_response(c);
    if (c->curl_done) {
        /* Nothing came back: the client gets the proxy's 502, as from any
         * gateway whose upstream is down. */
        atomic_fetch_add(&cap->n_upstream_failed, 1);
        c->err = "upstream_connect";
        char msg[256];
        snprintf(msg, sizeof msg, "upstream request failed: %s", curl_easy_strerror(c->curl_rc));
        return local_reply(c, 502, "upstream_error", msg);
    }
    c->err = c->client_gone ? "client_gone" : "shutdown";
    return MHD_NO;
}

/* GET /healthz is capture's own (never forwarded): 200 while it serves,
 * 503 once it drains, with its counters. */
static enum MHD_Result healthz(struct conn *c)
{
    struct lt_capture *cap = c->cap;
    bool draining = atomic_load(&cap->draining) || atomic_load(&cap->stopping);
    char body[512];
    int n = snprintf(body, sizeof body,
                     "{\"status\":\"%s\",\"requests\":%" PRIu64 ",\"active\":%" PRIu64
                     ",\"chunks\":%" PRIu64 ",\"upstream_failed\":%" PRIu64 "}\n",
                     draining ? "draining" : "ok", (uint64_t)atomic_load(&cap->n_requests),
                     (uint64_t)atomic_load(&cap->n_active), (uint64_t)atomic_load(&cap->n_chunks),
                     (uint64_t)atomic_load(&cap->n_upstream_failed));
    struct MHD_Response *r =
        MHD_create_response_from_buffer((size_t)n, body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result ok = MHD_queue_response(c->mc, draining ? 503 : 200, r);
    MHD_destroy_response(r);
    c->st = ST_LOCAL;
    return ok;
}

static void begin_request(struct conn *c, const char *method)
{
    struct lt_capture *cap = c->cap;
    atomic_fetch_add(&cap->n_requests, 1);
    c->begun = true;
    atomic_fetch_add(&cap->n_active, 1);
    snprintf(c->method, sizeof c->method, "%s", method);
    enum lt_capture_api api = lt_capture_api_of(method, c->uri.p ? c->uri.p : "/");
    if (api != LT_CAPTURE_API_NONE) {
        int64_t t;
        if (lt_capture_recorder_arrive(cap->rec, &c->seq, &t) == 0) {
            c->call = lt_capture_call_new(api, &cap->co);
            c->recorded = true;
            if (c->call)
                c->call->t = t;
        }
    }
    lt_buf_init(&c->body, cap->o.max_body);
}

/* The body's bytes are no longer held (the request is over, or refused). */
static void drop_body(struct conn *c)
{
    if (c->counted)
        atomic_fetch_sub(&c->cap->pending, c->counted);
    c->counted = 0;
    lt_buf_release(&c->body);
}

/* Take a piece of c's body if the limits allow: the request's own
 * (--max-body, a 413) and all bodies held together (--max-pending, a 503);
 * past either, the rest is read and dropped. */
static void take_body(struct conn *c, const char *p, size_t n)
{
    struct lt_capture *cap = c->cap;
    if (c->too_large || c->busy)
        return;
    size_t was = atomic_fetch_add(&cap->pending, n);
    if (was + n > cap->o.max_pending || was + n < was) {
        atomic_fetch_sub(&cap->pending, n);
        c->busy = true;
        drop_body(c);
        return;
    }
    c->counted += n;
    if (lt_buf_append(&c->body, p, n) < 0) {
        c->too_large = true;
        drop_body(c);
    }
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *mc, const char *url,
                                 const char *method, const char *version, const char *upload,
                                 size_t *upload_size, void **con_cls)
{
    struct conn *c = *con_cls;
    if (!c)
        return MHD_NO;
    struct lt_capture *cap = c->cap;
    if (c->st == ST_NEW && !strcmp(method, "GET") && c->uri.p && !strcmp(c->uri.p, "/healthz")) {
        /* Answered on the next call, once the request is read: a response
         * queued on the first call makes MHD close the connection. */
        c->st = ST_HEALTH;
        return MHD_YES;
    }
    if (c->st == ST_HEALTH) {
        *upload_size = 0;
        return healthz(c);
    }
    if (c->st == ST_NEW) {
        begin_request(c, method);
        c->st = ST_BODY;
        const char *cl = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > cap->o.max_body) {
            /* Refused before reading a byte of it. */
            c->too_large = true;
            atomic_fetch_add(&cap->n_too_large, 1);
            c->err = "too_large";
            return local_reply(c, 413, "invalid_request_error",
                               "request body is larger than the limit of this proxy");
        }
        return MHD_YES;
    }
    if (c->st == ST_WAIT_HEADERS) /* resumed by the loop */
        return upstream_answer(c);
    if (c->st != ST_BODY)
        return MHD_YES;
    if (*upload_size) {
        take_body(c, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (c->busy) {
        atomic_fetch_add(&cap->n_busy, 1);
        c->err = "busy";
        char msg[160];
        snprintf(msg, sizeof msg,
                 "the request bodies being received hold more than this proxy's limit of %zu "
                 "bytes; retry later",
                 cap->o.max_pending);
        return local_reply(c, 503, "server_error", msg);
    }
    if (c->too_large) {
        atomic_fetch_add(&cap->n_too_large, 1);
        c->err = "too_large";
        return local_reply(c, 413, "invalid_request_error",
                           "request body is larger than the limit of this proxy");
    }
    return forward(c);
}

/* The request is over, one way or another: stamp it and record it. */
static void finalize(struct conn *c, bool completed_ok)
{
    if (!c->begun)
        return;
    c->begun = false;
    struct lt_capture *cap = c->cap;
    atomic_fetch_sub(&cap->n_active, 1);
    bool forwarded = c->easy_added;
    lt_mono gone_t = lt_mono_now();
    if (c->easy_added) {
        /* The loop removes the transfer (cancelling it upstream if it
         * still runs); after its answer it never touches c again. */
        post(cap, c, CMD_REMOVE);
        pthread_mutex_lock(&c->mu);
        while (!c->removed)
            pthread_cond_wait(&c->cv, &c->mu);
        pthread_mutex_unlock(&c->mu);
        c->easy_added = false;
    }
    if (!completed_ok && !c->err)
        c->err = atomic_load(&cap->stopping) ? "shutdown" : "client_gone";
    if (c->err && !strcmp(c->err, "client_gone"))
        atomic_fetch_add(&cap->n_client_gone, 1);
    if (c->err && !strcmp(c->err, "upstream_cut"))
        atomic_fetch_add(&cap->n_upstream_failed, 1);
    struct lt_capture_call *k = c->call;
    if (k) {
        k->status = c->status_sent;
        if (c->headers_done) {
            lt_mono end = c->have_first_byte ? c->last_byte : lt_mono_now();
            k->e2e = lt_mono_diff_us(end, c->sent);
            if (c->have_first_token)
                k->ttft = lt_mono_diff_us(c->first_token, c->sent);
            else if (!c->is_sse && c->have_first_byte && c->status < 300)
                k->ttft = lt_mono_diff_us(c->first_byte, c->sent); /* one answer, one piece */
        }
        if (!c->is_sse && c->resp_body_whole && c->resp_body.len && c->curl_done &&
            c->curl_rc == CURLE_OK)
            (void)lt_capture_call_body(k, c->resp_body.p, c->resp_body.len);
        if (!c->err && c->bad_chunk)
            c->err = "bad_chunk";
        k->err = c->err;
        /* Where the client left, for replay to leave there too (as the
         * proxy noticed it: at its next write, or within POLL_MS while it
         * waited for the upstream). */
        if (forwarded && c->err && !strcmp(c->err, "client_gone"))
            lt_capture_call_client_left(k, lt_mono_diff_us(gone_t, c->sent));
        if (k->has_session) {
            int64_t end_us =
                lt_mono_diff_us(c->have_first_byte ? c->last_byte : lt_mono_now(), cap->start);
            pthread_mutex_lock(&cap->sess_mu);
            lt_capture_sessions_end(&cap->sess, k->session, end_us);
            pthread_mutex_unlock(&cap->sess_mu);
        }
    }
    if (c->recorded)
        lt_capture_recorder_done(cap->rec, c->seq, k);
    c->call = NULL;
    c->recorded = false;
    if (c->sse_on)
        lt_capture_sse_release(&c->sse);
    curl_slist_free_all(c->req_hdrs);
    c->req_hdrs = NULL;
    drop_body(c);
    lt_buf_release(&c->sendbody);
    lt_buf_release(&c->resp_body);
    lt_buf_release(&c->pending);
    lt_buf_reset(&c->resp_hdrs);
    c->st = ST_IDLE;
}

static void reset_request(struct conn *c)
{
    c->st = ST_NEW;
    c->begun = false;
    c->call = NULL;
    c->recorded = false;
    c->too_large = c->busy = c->injected = c->has_sess_hdr = false;
    c->have_first_byte = c->have_first_token = false;
    c->status = 0;
    c->status_sent = 0;
    c->headers_done = false;
    c->content_length = -1;
    c->is_sse = c->sse_on = c->sse_ended = false;
    c->pending_off = 0;
    c->resp_body_whole = true;
    c->paused = c->curl_done = false;
    c->curl_rc = CURLE_OK;
    c->client_gone = c->bad_chunk = false;
    c->err = NULL;
    lt_buf_init(&c->body, 0);
    lt_buf_init(&c->sendbody, PENDING_MAX);
    lt_buf_init(&c->pending, PENDING_MAX);
    lt_buf_init(&c->resp_body, RESP_BODY_MAX);
    lt_buf_reset(&c->resp_hdrs);
    lt_buf_reset(&c->sess_hdr);
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *mc)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct conn *c = ci ? ci->socket_context : NULL;
    if (!c)
        return NULL;
    if (c->begun)
        finalize(c, false);
    reset_request(c);
    lt_buf_reset(&c->uri);
    if (lt_buf_puts(&c->uri, uri) < 0)
        lt_buf_reset(&c->uri);
    return c;
}

static void on_completed(void *cls, struct MHD_Connection *mc, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct conn *c = con_cls ? *con_cls : NULL;
    if (c)
        finalize(c, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK);
}

static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct lt_capture *cap = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        struct conn *c = calloc(1, sizeof *c);
        if (!c)
            return;
        c->cap = cap;
        c->mc = mc;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        c->fd = ci ? ci->connect_fd : -1;
        pthread_mutex_init(&c->mu, NULL);
        pthread_cond_init(&c->cv, NULL);
        lt_buf_init(&c->uri, URI_MAX);
        lt_buf_init(&c->resp_hdrs, RESP_HDRS_MAX);
        lt_buf_init(&c->sess_hdr, 4096);
        c->st = ST_IDLE;
        pthread_mutex_lock(&cap->conns_mu);
        c->next = cap->conns;
        if (cap->conns)
            cap->conns->prev = c;
        cap->conns = c;
        pthread_mutex_unlock(&cap->conns_mu);
        *socket_context = c;
        return;
    }
    struct conn *c = *socket_context;
    if (!c)
        return;
    finalize(c, false);
    if (c->easy)
        curl_easy_cleanup(c->easy);
    pthread_mutex_lock(&cap->conns_mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        cap->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&cap->conns_mu);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    lt_buf_release(&c->uri);
    lt_buf_release(&c->resp_hdrs);
    lt_buf_release(&c->sess_hdr);
    free(c);
    *socket_context = NULL;
}

/* ---- start and stop -------------------------------------------------- */

static int parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len,
                        struct lt_err *err)
{
    char host[256];
    const char *port;
    if (s[0] == '[') {
        const char *e = strchr(s, ']');
        if (!e || e[1] != ':' || (size_t)(e - s - 1) >= sizeof host)
            return lt_errset(err, LT_EINVAL, "--listen %s: expected [ADDRESS]:PORT", s);
        memcpy(host, s + 1, (size_t)(e - s - 1));
        host[e - s - 1] = '\0';
        port = e + 2;
    } else {
        const char *e = strrchr(s, ':');
        if (!e || (size_t)(e - s) >= sizeof host)
            return lt_errset(err, LT_EINVAL, "--listen %s: expected ADDRESS:PORT", s);
        memcpy(host, s, (size_t)(e - s));
        host[e - s] = '\0';
        port = e + 1;
    }
    if (!host[0])
        snprintf(host, sizeof host, "127.0.0.1");
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res = NULL;
    int e = getaddrinfo(host, port, &hints, &res);
    if (e)
        return lt_errset(err, LT_EINVAL, "--listen %s: %s", s, gai_strerror(e));
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

static int open_trace(struct lt_capture *cap, struct lt_err *err)
{
    char origin[512];
    lt_capture_url_origin(cap->o.upstream, origin, sizeof origin);
    const char *keys[] = {"upstream", "tokens", "content", "sessions"};
    const char *vals[] = {origin, "estimated: words at whitespace, ceil(bytes/4) tokens each",
                          cap->o.keep_content ? "kept" : "not kept",
                          cap->o.session_header ? "header" : "inferred"};
    struct lt_buf meta;
    lt_buf_init(&meta, 1 << 16);
    int rc = lt_meta_pack(&meta, keys, vals, 4);
    if (rc < 0) {
        lt_buf_release(&meta);
        return lt_errset(err, rc, "out of memory");
    }
    struct lt_header h = {.kind = LT_KIND_TRACE,
                          .source = "capture",
                          .block_tokens = cap->o.block_tokens,
                          .meta = (const uint8_t *)meta.p,
                          .meta_len = meta.len};
    /* Each record goes out when its request finishes (capture_recorder.h).
     * The recorder ticks every 250 ms: a frame closed once 750 ms old is on
     * disk within a second of its first record. */
    struct lt_writer_opts wo = {.completion_order = true, .frame_ms = 750};
    cap->w = lt_writer_open(cap->o.output, &h, &wo, err);
    lt_buf_release(&meta);
    return cap->w ? 0 : LT_EIO;
}

struct lt_capture *lt_capture_start(const struct lt_capture_opts *o, struct lt_err *err)
{
    int rc = 0;
    struct lt_capture *cap = calloc(1, sizeof *cap);
    if (!cap) {
        lt_errset(err, LT_ENOMEM, "out of memory");
        return NULL;
    }
    cap->ep = cap->wake_fd = -1;
    cap->o = *o;
    if (!cap->o.listen)
        cap->o.listen = "127.0.0.1:8080";
    if (!cap->o.max_body)
        cap->o.max_body = (size_t)32 << 20;
    if (!cap->o.max_pending) {
        cap->o.max_pending = cap->o.max_body > SIZE_MAX / 4 ? SIZE_MAX : cap->o.max_body * 4;
        if (cap->o.max_pending < (size_t)256 << 20)
            cap->o.max_pending = (size_t)256 << 20;
    }
    if (!cap->o.block_tokens)
        cap->o.block_tokens = 512;
    if (!cap->o.max_connections)
        cap->o.max_connections = 16384;
    if (!cap->o.connect_timeout_us)
        cap->o.connect_timeout_us = 10000000;
    pthread_mutex_init(&cap->sess_mu, NULL);
    pthread_mutex_init(&cap->q_mu, NULL);
    pthread_mutex_init(&cap->conns_mu, NULL);
    atomic_init(&cap->stopping, false);
    if (!o->upstream ||
        (strncmp(o->upstream, "http://", 7) && strncmp(o->upstream, "https://", 8))) {
        rc = lt_errset(err, LT_EINVAL, "the upstream must be an http:// or https:// URL");
        goto out;
    }
    if (strpbrk(o->upstream, "?#")) {
        /* The client's path and query are appended to the upstream URL:
         * one of its own would misroute every request. */
        rc = lt_errset(err, LT_EINVAL,
                       "the upstream URL %s has a %s; give scheme://host[:port][/path] only",
                       o->upstream, strchr(o->upstream, '?') ? "query string" : "fragment");
        goto out;
    }
    size_t ul = strlen(o->upstream);
    while (ul && o->upstream[ul - 1] == '/')
        ul--;
    if (ul >= sizeof cap->upstream) {
        rc = lt_errset(err, LT_EINVAL, "the upstream URL is too long");
        goto out;
    }
    memcpy(cap->upstream, o->upstream, ul);
    struct sockaddr_storage ss;
    socklen_t sl;
    LT_TRY(parse_listen(cap->o.listen, &ss, &sl, err));
    LT_TRY(lt_capture_new_key(&cap->co.k0, &cap->co.k1, err));
    cap->co.block_tokens = cap->o.block_tokens;
    cap->co.keep_content = cap->o.keep_content;
    lt_capture_sessions_init(&cap->sess, cap->co.k0, cap->co.k1);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        rc = lt_errset(err, LT_EIO, "libcurl failed to initialize");
        goto out;
    }
    cap->curl_on = true;
    if (!(cap->multi = curl_multi_init())) {
        rc = lt_errset(err, LT_ENOMEM, "libcurl failed to initialize");
        goto out;
    }
    cap->timer_at_ns = -1;
    cap->ep = epoll_create1(EPOLL_CLOEXEC);
    cap->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event wev = {.events = EPOLLIN};
    wev.data.fd = cap->wake_fd;
    if (cap->ep < 0 || cap->wake_fd < 0 ||
        epoll_ctl(cap->ep, EPOLL_CTL_ADD, cap->wake_fd, &wev) < 0) {
        rc = lt_errset(err, LT_EIO, "cannot set up the upstream loop: %s", strerror(errno));
        goto out;
    }
    curl_multi_setopt(cap->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(cap->multi, CURLMOPT_SOCKETDATA, cap);
    curl_multi_setopt(cap->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(cap->multi, CURLMOPT_TIMERDATA, cap);
    LT_TRY(open_trace(cap, err));
    cap->start = lt_mono_now();
    cap->rec = lt_capture_recorder_start(cap->w, cap->start, cap->o.max_held, err);
    if (!cap->rec) {
        rc = LT_ENOMEM;
        goto out;
    }
    int e = pthread_create(&cap->loop, NULL, loop_main, cap);
    if (e) {
        rc = lt_errset(err, LT_EIO, "cannot start the upstream thread: %s", strerror(e));
        goto out;
    }
    cap->loop_on = true;
    /* A fixed number of event-loop threads, whatever the connections:
     * a connection waiting for the upstream is suspended, not blocking. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_SUPPRESS_DATE_NO_CLOCK | MHD_USE_ITC | MHD_USE_TURBO;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    cap->mhd = MHD_start_daemon(
        flags, 0, NULL, NULL, on_access, cap, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_CONNECTION_LIMIT, cap->o.max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)600, MHD_OPTION_NOTIFY_COMPLETED, on_completed, cap, MHD_OPTION_NOTIFY_CONNECTION,
        on_connection, cap, MHD_OPTION_URI_LOG_CALLBACK, on_uri, cap, MHD_OPTION_THREAD_POOL_SIZE,
        cap->o.threads > 1 ? cap->o.threads : 0u, MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
        /* What every connection costs, idle or not (MHD touches all of
         * it): the request line and headers must fit, about 20 KiB. */
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)64 << 10, MHD_OPTION_END);
    if (!cap->mhd) {
        rc = lt_errset(err, LT_EIO, "cannot listen on %s (in use, or not an address of this host)",
                       cap->o.listen);
        goto out;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(cap->mhd, MHD_DAEMON_INFO_BIND_PORT);
    cap->port = di ? di->port : 0;
out:
    if (rc < 0) {
        if (cap->loop_on) {
            atomic_store(&cap->loop_stop, true);
            wake(cap);
            pthread_join(cap->loop, NULL);
        }
        if (cap->multi)
            curl_multi_cleanup(cap->multi);
        if (cap->ep >= 0)
            close(cap->ep);
        if (cap->wake_fd >= 0)
            close(cap->wake_fd);
        pthread_mutex_destroy(&cap->q_mu);
        pthread_mutex_destroy(&cap->conns_mu);
        if (cap->rec)
            lt_capture_recorder_stop(cap->rec, NULL, NULL);
        if (cap->w) {
            lt_writer_close(cap->w, NULL);
            if (strcmp(cap->o.output, "-") != 0)
                remove(cap->o.output); /* nothing was captured */
        }
        if (cap->curl_on)
            curl_global_cleanup();
        lt_capture_sessions_release(&cap->sess);
        pthread_mutex_destroy(&cap->sess_mu);
        free(cap);
        return NULL;
    }
    return cap;
}

uint16_t lt_capture_port(const struct lt_capture *c)
{
    return c->port;
}

void lt_capture_quiesce(struct lt_capture *c)
{
    if (atomic_exchange(&c->draining, true))
        return;
    MHD_socket s = MHD_quiesce_daemon(c->mhd);
    if (s != MHD_INVALID_SOCKET)
        close(s);
}

bool lt_capture_write_failed(const struct lt_capture *c, struct lt_err *err)
{
    return lt_capture_recorder_failed(c->rec, err);
}

uint64_t lt_capture_active(const struct lt_capture *c)
{
    return atomic_load(&c->n_active);
}

void lt_capture_get_stats(const struct lt_capture *c, struct lt_capture_stats *st)
{
    memset(st, 0, sizeof *st);
    st->requests = atomic_load(&c->n_requests);
    st->chunks = atomic_load(&c->n_chunks);
    st->client_gone = atomic_load(&c->n_client_gone);
    st->upstream_failed = atomic_load(&c->n_upstream_failed);
    st->too_large = atomic_load(&c->n_too_large);
    st->busy = atomic_load(&c->n_busy);
}

int lt_capture_stop(struct lt_capture *c, struct lt_capture_stats *st, struct lt_err *err)
{
    if (!c)
        return 0;
    atomic_store(&c->stopping, true);
    /* MHD must not stop with a suspended connection: each is resumed, and
     * sees `stopping` (under its mutex, so it cannot suspend again). A
     * resume takes effect when MHD's loop gets to it: wait until every
     * one has called back (and so cut its request), 5 s at most. */
    for (int tries = 0; tries < 1000; tries++) {
        bool parked = false;
        pthread_mutex_lock(&c->conns_mu);
        for (struct conn *k = c->conns; k; k = k->next) {
            pthread_mutex_lock(&k->mu);
            resume_locked(k);
            parked |= k->parked;
            pthread_mutex_unlock(&k->mu);
        }
        pthread_mutex_unlock(&c->conns_mu);
        if (!parked)
            break;
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
    /* Cuts every request left (the loop still answers removals) and hands
     * its record over. */
    MHD_stop_daemon(c->mhd);
    atomic_store(&c->loop_stop, true);
    wake(c);
    pthread_join(c->loop, NULL);
    curl_multi_cleanup(c->multi);
    close(c->ep);
    close(c->wake_fd);
    pthread_mutex_destroy(&c->q_mu);
    pthread_mutex_destroy(&c->conns_mu);
    struct lt_capture_recorder_stats rs = {0};
    int rc = lt_capture_recorder_stop(c->rec, &rs, err);
    struct lt_err werr = {0};
    int wrc = lt_writer_close(c->w, &werr);
    if (rc == 0 && wrc < 0) {
        rc = wrc;
        if (err)
            *err = werr;
    }
    if (st) {
        lt_capture_get_stats(c, st);
        st->recorded = rs.written;
        st->dropped = rs.dropped;
        st->lost = rs.lost;
        st->changed = rs.changed;
    }
    lt_capture_sessions_release(&c->sess);
    pthread_mutex_destroy(&c->sess_mu);
    curl_global_cleanup();
    free(c);
    return rc;
}

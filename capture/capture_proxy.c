/*
 * The capture proxy (capture_proxy.h): event loops, a fixed number of
 * threads whatever the connections. Each loop (--threads of them) is one
 * thread that drives a libmicrohttpd daemon of its own (no MHD thread:
 * MHD's epoll set sits in the loop's) and a libcurl multi handle of its
 * own on one epoll set, so a chunk read from the upstream is queued,
 * its connection resumed and the chunk written to the client in one turn
 * of one thread: no wake-up of another thread, no lock that anyone else
 * takes. The daemons share the listening socket. MHD's callbacks never
 * wait: a connection that needs the upstream (its status, or the next
 * bytes of its body) is suspended, and curl's callbacks resume it. What
 * curl must not be asked from inside its own callbacks (add a transfer,
 * undo a pause) is queued on the connection and run by the loop after
 * MHD returns. Backpressure both ways: past PENDING_SOFT bytes the
 * client has not taken, the transfer is paused (curl holds the rest, TCP
 * holds the upstream), and resumed when the client has taken them; a
 * client is never read faster than it sends. MHD does not watch a
 * suspended connection's socket, so the loop watches every client's for
 * its peer's close (and peeks at the suspended ones every CHECK_MS): a
 * client that left cancels its transfer.
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
#define PENDING_KEEP ((size_t)2 << 10)   /* kept once drained; more is given back */
#define RESP_BODY_MAX ((size_t)32 << 20) /* non-streamed bodies parsed for the record */
#define POLL_MS 100
/* How often the loop peeks at every suspended client, for a departure its
 * socket did not signal (client_event): pipelined bytes, then a close. */
#define CHECK_MS 1000
/* libmicrohttpd's buffer per connection, idle or not (MHD touches all of
 * it): the request line and headers must fit in it. */
#define MHD_POOL ((size_t)6 << 10)
/* curl's receive buffer per transfer (its default is 16 KiB): every open
 * stream holds one, so 2 KiB instead of 4 is 2 KiB less per stream
 * (32.0-32.5 KiB per open stream against 28.7-30.7, at no CPU cost that
 * the bench could tell from its noise: bench/README.md). An SSE chunk is
 * a few hundred bytes, and curl reads on while the socket has more, so a
 * burst still takes one event. */
#define CURL_BUF ((long)2 << 10)

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
    atomic_uint_fast64_t n_bytes_out; /* response bytes handed to clients */
    /* Request bodies held, all connections together (o.max_pending caps
     * them): what many half-sent bodies could otherwise grow without end. */
    atomic_size_t pending;
    /* The event loops (o.threads of them): each drives its own
     * libmicrohttpd daemon and its own libcurl multi handle on one epoll
     * set, so a chunk goes from curl to the client in the thread that read
     * it; the daemons share one listening socket. */
    struct loop *loops;
    unsigned n_loops;
    int listen_fd;             /* closed once every daemon quiesced */
    atomic_uint n_quiesced;    /* daemons that let go of listen_fd */
    pthread_mutex_t listen_mu; /* closing listen_fd */
    /* Every connection, for the departure check and the stop. */
    pthread_mutex_t conns_mu;
    struct conn *conns;
};

struct loop {
    struct lt_capture *cap;
    struct MHD_Daemon *mhd;
    CURLM *multi;
    int ep;              /* epoll set: curl's sockets, MHD's epoll set, wake_fd */
    int mhd_fd;          /* MHD's epoll set */
    int wake_fd;         /* eventfd: a command from another thread, or stop */
    int64_t timer_at_ns; /* curl's timeout (CLOCK_MONOTONIC), -1: none */
    bool need_run;       /* a connection was resumed: MHD has work */
    bool quiesced;       /* this daemon no longer accepts (loop thread only) */
    pthread_t th;
    bool th_on;
    pthread_mutex_t q_mu;
    struct conn *q; /* connections with commands for the loop (q_next) */
};

/* Commands for the loop, bits of conn.q_ops: run in this order, which is
 * the only order one request can ask them in. */
enum cmd_op { CMD_ADD = 1, CMD_UNPAUSE = 2 };

struct conn {
    struct lt_capture *cap;
    struct loop *lp; /* the loop (and daemon) serving this connection */
    struct MHD_Connection *mc;
    int fd;
    struct conn *prev, *next; /* cap->conns */
    /* Everything of a connection runs on its loop's thread; mu guards
     * what the stop (another thread) reads: `suspended` and `parked`. */
    pthread_mutex_t mu;
    bool suspended; /* MHD_suspend_connection called, no resume yet */
    bool parked;    /* suspended, or resumed and MHD has not called back yet */
    unsigned q_ops; /* commands for the loop (lp->q_mu) ... */
    bool queued;    /* ... and c is on lp->q */
    struct conn *q_next;
    bool in_multi; /* the transfer is in lp->multi */
    CURL *easy;
    bool easy_added; /* handed to the loop and not yet removed */
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
    struct lt_capture_sse *sse; /* while sse_on */
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
        c->lp->need_run = true;
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

static void wake(struct loop *lp)
{
    uint64_t one = 1;
    ssize_t w = write(lp->wake_fd, &one, sizeof one);
    (void)w; /* a full counter wakes the loop as well */
}

/* A command for the loop, run after the callback that asks it returns
 * (curl must not be called from inside its own callbacks): a bit on the
 * connection, and the connection on the loop's queue (nothing to
 * allocate, so posting cannot fail). Only MHD's callbacks post, on the
 * loop's thread, which runs the queue before it next waits: no wake-up. */
static void post(struct conn *c, enum cmd_op op)
{
    struct loop *lp = c->lp;
    pthread_mutex_lock(&lp->q_mu);
    c->q_ops |= (unsigned)op;
    if (!c->queued) {
        c->queued = true;
        c->q_next = lp->q;
        lp->q = c;
    }
    pthread_mutex_unlock(&lp->q_mu);
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
                /* Only a recorded stream has a splitter: an idle
                 * connection does not carry one. */
                if (!(c->sse = malloc(sizeof *c->sse)))
                    return 0; /* fail the transfer: a 502 or a cut */
                lt_capture_sse_init(c->sse, c->injected, on_sse_data, c);
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
        rc = lt_capture_sse_feed(c->sse, p, n, &c->pending);
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

static void check_done(struct loop *lp)
{
    CURLMsg *m;
    int q;
    while ((m = curl_multi_info_read(lp->multi, &q)))
        if (m->msg == CURLMSG_DONE) {
            struct conn *c = NULL;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&c);
            CURLcode rc = m->data.result;
            curl_multi_remove_handle(lp->multi, m->easy_handle);
            c->in_multi = false;
            pthread_mutex_lock(&c->mu);
            c->curl_done = true;
            c->curl_rc = rc;
            resume_locked(c);
            pthread_mutex_unlock(&c->mu);
        }
}

static void run_commands(struct loop *lp)
{
    pthread_mutex_lock(&lp->q_mu);
    struct conn *list = lp->q;
    lp->q = NULL;
    pthread_mutex_unlock(&lp->q_mu);
    while (list) {
        struct conn *c = list;
        pthread_mutex_lock(&lp->q_mu);
        list = c->q_next;
        unsigned ops = c->q_ops;
        c->q_ops = 0;
        c->queued = false;
        pthread_mutex_unlock(&lp->q_mu);
        if ((ops & CMD_ADD) && curl_multi_add_handle(lp->multi, c->easy) == CURLM_OK) {
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
    }
}

/* The request is over: its transfer leaves the multi at once (removing a
 * running transfer closes its connection: this is how a departed
 * client's request is cancelled upstream), and any command it still had
 * queued is dropped, since c may be freed next. On the loop's thread,
 * from an MHD callback: never inside curl's. */
static void remove_transfer(struct conn *c)
{
    struct loop *lp = c->lp;
    pthread_mutex_lock(&lp->q_mu);
    if (c->queued) {
        struct conn **pp = &lp->q;
        while (*pp && *pp != c)
            pp = &(*pp)->q_next;
        if (*pp)
            *pp = c->q_next;
        c->queued = false;
    }
    c->q_ops = 0;
    pthread_mutex_unlock(&lp->q_mu);
    if (c->in_multi)
        curl_multi_remove_handle(lp->multi, c->easy);
    c->in_multi = false;
}

/* Clients that left while their connection waits for the upstream: MHD
 * does not watch a suspended connection's socket, so the loop does. */
static void check_clients(struct loop *lp)
{
    struct lt_capture *cap = lp->cap;
    pthread_mutex_lock(&cap->conns_mu);
    for (struct conn *c = cap->conns; c; c = c->next) {
        if (c->lp != lp)
            continue;
        pthread_mutex_lock(&c->mu);
        if (c->suspended && client_left(c)) {
            c->client_gone = true;
            resume_locked(c);
        }
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_unlock(&cap->conns_mu);
}

/* A client's socket says its peer closed (the loop watches every client
 * socket for that alone, edge-triggered): a connection waiting for the
 * upstream learns at once that its client left, instead of at the next
 * look of check_clients. Events are handled before MHD runs, and MHD
 * frees a connection only inside MHD_run, so c is alive here. */
static void client_event(struct conn *c)
{
    pthread_mutex_lock(&c->mu);
    if (client_left(c)) {
        c->client_gone = true;
        resume_locked(c);
    }
    pthread_mutex_unlock(&c->mu);
}

/* curl's sockets, in the loop's epoll set: one system call per event
 * instead of a poll over every transfer. */
static int on_socket(CURL *e, curl_socket_t s, int what, void *ud, void *sockp)
{
    struct loop *lp = ud;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(lp->ep, EPOLL_CTL_DEL, s, NULL);
        return 0;
    }
    struct epoll_event ev = {.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) |
                                       ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u),
                             .data.u64 = (uint64_t)s << 1};
    if (epoll_ctl(lp->ep, EPOLL_CTL_MOD, s, &ev) < 0 && errno == ENOENT)
        epoll_ctl(lp->ep, EPOLL_CTL_ADD, s, &ev);
    return 0;
}

static int on_timer(CURLM *m, long timeout_ms, void *ud)
{
    struct loop *lp = ud;
    lp->timer_at_ns = timeout_ms < 0 ? -1 : lt_mono_now().ns + (int64_t)timeout_ms * 1000000;
    return 0;
}

/* This daemon stops accepting; the last one to let go of the listening
 * socket closes it. */
static void quiesce_loop(struct loop *lp)
{
    struct lt_capture *cap = lp->cap;
    lp->quiesced = true;
    (void)MHD_quiesce_daemon(lp->mhd);
    if (atomic_fetch_add(&cap->n_quiesced, 1) + 1 == cap->n_loops) {
        pthread_mutex_lock(&cap->listen_mu);
        if (cap->listen_fd >= 0)
            close(cap->listen_fd);
        cap->listen_fd = -1;
        pthread_mutex_unlock(&cap->listen_mu);
    }
}

/* On stop: hand every suspended connection of this loop back to MHD (it
 * sees `stopping` and cuts its request); true while one has not yet
 * been called back. MHD must not stop with a connection suspended. */
static bool resume_all(struct loop *lp)
{
    struct lt_capture *cap = lp->cap;
    bool parked = false;
    pthread_mutex_lock(&cap->conns_mu);
    for (struct conn *c = cap->conns; c; c = c->next) {
        if (c->lp != lp)
            continue;
        pthread_mutex_lock(&c->mu);
        resume_locked(c);
        parked |= c->parked;
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_unlock(&cap->conns_mu);
    return parked;
}

/* One thread: wait on the epoll set, let curl read what came (its
 * callbacks queue the bytes and resume the connections), let MHD write
 * them out and read what clients sent, run the commands that asked for.
 * A turn serves every ready socket, so a burst of chunks costs one wait. */
static void *loop_main(void *arg)
{
    struct loop *lp = arg;
    struct lt_capture *cap = lp->cap;
    lt_mono last_check = lt_mono_now(), stop_at = {0};
    bool stop_seen = false;
    struct epoll_event ev[256];
    int running;
    for (;;) {
        run_commands(lp);
        bool stopping = atomic_load(&cap->stopping);
        if ((stopping || atomic_load(&cap->draining)) && !lp->quiesced)
            quiesce_loop(lp);
        if (stopping) {
            if (!stop_seen) {
                stop_seen = true;
                stop_at = lt_mono_now();
            }
            if (!resume_all(lp) || lt_mono_diff_us(lt_mono_now(), stop_at) > 5000000)
                break;
        }
        int64_t now = lt_mono_now().ns;
        int wait = POLL_MS;
        if (lp->timer_at_ns >= 0)
            wait = lp->timer_at_ns <= now ? 0
                   : lp->timer_at_ns - now < (int64_t)POLL_MS * 1000000
                       ? (int)((lp->timer_at_ns - now + 999999) / 1000000)
                       : POLL_MS;
        MHD_UNSIGNED_LONG_LONG mt;
        if (MHD_get_timeout(lp->mhd, &mt) == MHD_YES && mt < (MHD_UNSIGNED_LONG_LONG)wait)
            wait = (int)mt;
        if (lp->need_run)
            wait = 0;
        if (stopping && wait > 5)
            wait = 5;
        int n = epoll_wait(lp->ep, ev, 256, wait);
        for (int i = 0; i < n; i++) {
            uint64_t tag = ev[i].data.u64;
            if (tag & 1) {
                client_event((struct conn *)(uintptr_t)(tag & ~(uint64_t)1));
                continue;
            }
            int fd = (int)(tag >> 1);
            if (fd == lp->wake_fd) {
                uint64_t v;
                ssize_t r = read(lp->wake_fd, &v, sizeof v);
                (void)r;
                continue;
            }
            if (fd == lp->mhd_fd)
                continue; /* MHD_run below */
            int flags = ((ev[i].events & EPOLLIN) ? CURL_CSELECT_IN : 0) |
                        ((ev[i].events & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
                        ((ev[i].events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
            curl_multi_socket_action(lp->multi, fd, flags, &running);
        }
        if (lp->timer_at_ns >= 0 && lp->timer_at_ns <= lt_mono_now().ns) {
            lp->timer_at_ns = -1;
            curl_multi_socket_action(lp->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        check_done(lp);
        lp->need_run = false;
        MHD_run(lp->mhd);
        lt_mono t = lt_mono_now();
        if (lt_mono_diff_us(t, last_check) >= CHECK_MS * 1000) {
            check_clients(lp);
            last_check = t;
        }
    }
    /* Cuts every request left and hands its record over (finalize, on
     * this thread). */
    MHD_stop_daemon(lp->mhd);
    lp->mhd = NULL;
    run_commands(lp);
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
            atomic_fetch_add_explicit(&c->cap->n_bytes_out, n, memory_order_relaxed);
            if (c->pending_off == c->pending.len && c->pending.cap > PENDING_KEEP) {
                /* A burst is over: a stream between chunks keeps no more
                 * than a chunk's room. */
                lt_buf_release(&c->pending);
                c->pending_off = 0;
            }
            return (ssize_t)n;
        }
        if (c->paused) {
            /* The client took everything: let the upstream go on. */
            c->paused = false;
            post(c, CMD_UNPAUSE);
        }
        if (c->curl_done) {
            if (c->curl_rc != CURLE_OK) {
                c->err = "upstream_cut";
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
            if (c->sse_on && !c->sse_ended) {
                c->sse_ended = true;
                (void)lt_capture_sse_end(c->sse, &c->pending);
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
    /* A handle per request, given back when it ends (finalize): an idle
     * keep-alive connection holds none; the upstream connection stays in
     * the multi's cache for the next. */
    c->easy = curl_easy_init();
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
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, (long)CURL_BUF);
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
    c->easy_added = true;
    post(c, CMD_ADD);
    return 0;
}

static enum MHD_Result queue_upstream_response(struct conn *c)
{
    uint64_t size = MHD_SIZE_UNKNOWN;
    if (c->content_length >= 0 && strcmp(c->method, "HEAD") != 0)
        size = (uint64_t)c->content_length;
    /* MHD allocates (and zeroes) the block with the response, and reads
     * into it only a body of known length: a chunked one goes straight to
     * the connection's write buffer. */
    size_t block = size == MHD_SIZE_UNKNOWN ? 256 : (size_t)16 << 10;
    struct MHD_Response *r = MHD_create_response_from_callback(size, block, reader, c, NULL);
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
        remove_transfer(c);
        c->easy_added = false;
    }
    if (c->easy) {
        curl_easy_cleanup(c->easy);
        c->easy = NULL;
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
         * proxy noticed it: when its socket said so, or at its next
         * write). */
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
    if (c->sse_on) {
        lt_capture_sse_release(c->sse);
        free(c->sse);
        c->sse = NULL;
    }
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
    if (!c)
        return;
    finalize(c, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK);
    /* Between requests a keep-alive connection holds no buffer of its
     * own: what it costs idle is MHD's and this struct. */
    lt_buf_release(&c->uri);
    lt_buf_release(&c->resp_hdrs);
    lt_buf_release(&c->sess_hdr);
}

static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct loop *lp = cls;
    struct lt_capture *cap = lp->cap;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        struct conn *c = calloc(1, sizeof *c);
        if (!c)
            return;
        c->cap = cap;
        c->lp = lp;
        c->mc = mc;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        c->fd = ci ? ci->connect_fd : -1;
        struct epoll_event cev = {.events = EPOLLRDHUP | EPOLLET,
                                  .data.u64 = (uint64_t)(uintptr_t)c | 1};
        if (c->fd >= 0)
            (void)epoll_ctl(lp->ep, EPOLL_CTL_ADD, c->fd, &cev); /* else: check_clients */
        pthread_mutex_init(&c->mu, NULL);
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
    if (c->fd >= 0)
        (void)epoll_ctl(lp->ep, EPOLL_CTL_DEL, c->fd, NULL);
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

static int loop_init(struct loop *lp, struct lt_capture *cap, struct lt_err *err)
{
    lp->cap = cap;
    lp->ep = lp->wake_fd = lp->mhd_fd = -1;
    lp->timer_at_ns = -1;
    pthread_mutex_init(&lp->q_mu, NULL);
    if (!(lp->multi = curl_multi_init()))
        return lt_errset(err, LT_ENOMEM, "libcurl failed to initialize");
    lp->ep = epoll_create1(EPOLL_CLOEXEC);
    lp->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event wev = {.events = EPOLLIN};
    wev.data.u64 = (uint64_t)lp->wake_fd << 1;
    if (lp->ep < 0 || lp->wake_fd < 0 || epoll_ctl(lp->ep, EPOLL_CTL_ADD, lp->wake_fd, &wev) < 0)
        return lt_errset(err, LT_EIO, "cannot set up an event loop: %s", strerror(errno));
    curl_multi_setopt(lp->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(lp->multi, CURLMOPT_SOCKETDATA, lp);
    curl_multi_setopt(lp->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(lp->multi, CURLMOPT_TIMERDATA, lp);
    return 0;
}

/* Loop i's daemon: the first binds the address, the others share its
 * socket. MHD runs no thread of its own; loop_main drives it. */
static int loop_listen(struct loop *lp, unsigned i, const struct sockaddr_storage *ss,
                       struct lt_err *err)
{
    struct lt_capture *cap = lp->cap;
    unsigned flags =
        MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_SUPPRESS_DATE_NO_CLOCK | MHD_USE_TURBO;
    if (ss->ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    unsigned limit = (cap->o.max_connections + cap->n_loops - 1) / cap->n_loops;
    /* What every connection costs, idle or not (MHD touches all of it):
     * the request line and headers must fit in it. */
    size_t pool = MHD_POOL;
    if (i == 0)
        lp->mhd = MHD_start_daemon(
            flags, 0, NULL, NULL, on_access, lp, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)ss,
            MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024, MHD_OPTION_CONNECTION_LIMIT, limit,
            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
            lp, MHD_OPTION_NOTIFY_CONNECTION, on_connection, lp, MHD_OPTION_URI_LOG_CALLBACK,
            on_uri, lp, MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool, MHD_OPTION_END);
    else
        lp->mhd = MHD_start_daemon(
            flags, 0, NULL, NULL, on_access, lp, MHD_OPTION_LISTEN_SOCKET, cap->listen_fd,
            MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600,
            MHD_OPTION_NOTIFY_COMPLETED, on_completed, lp, MHD_OPTION_NOTIFY_CONNECTION,
            on_connection, lp, MHD_OPTION_URI_LOG_CALLBACK, on_uri, lp,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool, MHD_OPTION_END);
    if (!lp->mhd)
        return lt_errset(err, LT_EIO,
                         "cannot listen on %s (in use, or not an address of this host)",
                         cap->o.listen);
    if (i == 0) {
        const union MHD_DaemonInfo *li = MHD_get_daemon_info(lp->mhd, MHD_DAEMON_INFO_LISTEN_FD);
        cap->listen_fd = li ? li->listen_fd : -1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(lp->mhd, MHD_DAEMON_INFO_EPOLL_FD);
    lp->mhd_fd = di ? di->epoll_fd : -1;
    struct epoll_event mev = {.events = EPOLLIN};
    mev.data.u64 = (uint64_t)lp->mhd_fd << 1;
    if (lp->mhd_fd < 0 || epoll_ctl(lp->ep, EPOLL_CTL_ADD, lp->mhd_fd, &mev) < 0)
        return lt_errset(err, LT_EIO, "cannot set up an event loop: %s", strerror(errno));
    return 0;
}

/* Before the loop's thread ran, or after it stopped its daemon. */
static void loop_release(struct loop *lp)
{
    if (lp->mhd) {
        /* Never started: MHD must not close the shared socket. */
        (void)MHD_quiesce_daemon(lp->mhd);
        MHD_stop_daemon(lp->mhd);
    }
    if (lp->multi)
        curl_multi_cleanup(lp->multi);
    if (lp->ep >= 0)
        close(lp->ep);
    if (lp->wake_fd >= 0)
        close(lp->wake_fd);
    pthread_mutex_destroy(&lp->q_mu);
}

struct lt_capture *lt_capture_start(const struct lt_capture_opts *o, struct lt_err *err)
{
    int rc = 0;
    struct lt_capture *cap = calloc(1, sizeof *cap);
    if (!cap) {
        lt_errset(err, LT_ENOMEM, "out of memory");
        return NULL;
    }
    cap->listen_fd = -1;
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
    pthread_mutex_init(&cap->conns_mu, NULL);
    pthread_mutex_init(&cap->listen_mu, NULL);
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
    cap->n_loops = cap->o.threads > 1 ? cap->o.threads : 1;
    if (!(cap->loops = calloc(cap->n_loops, sizeof *cap->loops))) {
        rc = lt_errset(err, LT_ENOMEM, "out of memory");
        goto out;
    }
    for (unsigned i = 0; i < cap->n_loops; i++)
        LT_TRY(loop_init(&cap->loops[i], cap, err));
    LT_TRY(open_trace(cap, err));
    cap->start = lt_mono_now();
    cap->rec = lt_capture_recorder_start(cap->w, cap->start, cap->o.max_held, err);
    if (!cap->rec) {
        rc = LT_ENOMEM;
        goto out;
    }
    if (cap->o.on_record)
        lt_capture_recorder_watch(cap->rec, cap->o.on_record, cap->o.on_record_ud);
    for (unsigned i = 0; i < cap->n_loops; i++)
        LT_TRY(loop_listen(&cap->loops[i], i, &ss, err));
    const union MHD_DaemonInfo *di =
        MHD_get_daemon_info(cap->loops[0].mhd, MHD_DAEMON_INFO_BIND_PORT);
    cap->port = di ? di->port : 0;
    for (unsigned i = 0; i < cap->n_loops; i++) {
        struct loop *lp = &cap->loops[i];
        int e = pthread_create(&lp->th, NULL, loop_main, lp);
        if (e) {
            rc = lt_errset(err, LT_EIO, "cannot start an event-loop thread: %s", strerror(e));
            goto out;
        }
        lp->th_on = true;
    }
out:
    if (rc < 0) {
        atomic_store(&cap->stopping, true);
        for (unsigned i = 0; cap->loops && i < cap->n_loops; i++)
            if (cap->loops[i].th_on) {
                wake(&cap->loops[i]);
                pthread_join(cap->loops[i].th, NULL);
            }
        for (unsigned i = 0; cap->loops && i < cap->n_loops; i++)
            loop_release(&cap->loops[i]);
        if (cap->listen_fd >= 0)
            close(cap->listen_fd);
        free(cap->loops);
        pthread_mutex_destroy(&cap->conns_mu);
        pthread_mutex_destroy(&cap->listen_mu);
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
    /* Each loop lets go of the listening socket on its next turn; the
     * last closes it. Wait for that (2 s at most), so that a new
     * connection is refused once this returns. */
    for (unsigned i = 0; i < c->n_loops; i++)
        wake(&c->loops[i]);
    for (int tries = 0; tries < 2000 && atomic_load(&c->n_quiesced) < c->n_loops; tries++) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
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

void lt_capture_get_live(const struct lt_capture *c, struct lt_capture_live *l)
{
    memset(l, 0, sizeof *l);
    lt_capture_get_stats(c, &l->st);
    uint64_t open;
    lt_capture_recorder_now(c->rec, &l->st.recorded, &l->backlog, &open);
    l->active = atomic_load(&c->n_active);
    l->bytes_out = atomic_load(&c->n_bytes_out);
    /* The list of connections, walked (MHD's own count is not safe to ask
     * from another thread while its loop runs). */
    pthread_mutex_t *mu = (pthread_mutex_t *)&c->conns_mu;
    pthread_mutex_lock(mu);
    for (const struct conn *k = c->conns; k; k = k->next)
        l->connections++;
    pthread_mutex_unlock(mu);
}

int lt_capture_stop(struct lt_capture *c, struct lt_capture_stats *st, struct lt_err *err)
{
    if (!c)
        return 0;
    /* Each loop resumes its suspended connections (they see `stopping`
     * and cut their requests), then stops its daemon, which hands every
     * record left over (loop_main). */
    atomic_store(&c->stopping, true);
    for (unsigned i = 0; i < c->n_loops; i++)
        wake(&c->loops[i]);
    for (unsigned i = 0; i < c->n_loops; i++) {
        pthread_join(c->loops[i].th, NULL);
        c->loops[i].th_on = false;
    }
    for (unsigned i = 0; i < c->n_loops; i++)
        loop_release(&c->loops[i]);
    free(c->loops);
    if (c->listen_fd >= 0)
        close(c->listen_fd);
    pthread_mutex_destroy(&c->conns_mu);
    pthread_mutex_destroy(&c->listen_mu);
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

/*
 * The lean HTTP/1.1 streaming client (h1_internal.h): one non-blocking
 * socket per request in flight, kept alive and reused, on replay's epoll
 * loop, registered level-triggered for EPOLLIN once connected. A readable
 * event costs one recv() into one shared buffer whose bytes are parsed
 * at once (the status line and headers, then a Content-Length, chunked or
 * read-to-close body) and handed to replay.c's lt__replay_body_bytes, the
 * same code the curl path feeds. A connection's states:
 *
 *   CONNECTING --writable, SO_ERROR 0--> ACTIVE (writing, then HEAD, BODY)
 *        |                                  |  body read to its end,
 *        |                                  |  keep-alive: detach
 *        v                                  v
 *     closed <--error, EOF, abort---  ACTIVE       IDLE --lt__h1_send--> ACTIVE
 *                                                   | EOF or bytes: closed
 *
 * A request whose reused connection turns out dead (the server closed it
 * while idle: the write fails, or EOF comes before any byte of the answer)
 * is sent once more on a new connection, as curl does; every other
 * failure is the request's result, classed as the curl path classes it
 * (replay.c: classify_curl): no connection or nothing received `connect`,
 * cut mid-answer `incomplete`, bad framing `malformed`, either timeout
 * `timeout`.
 */
#include "replay/replay_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

#define RBUF_BYTES ((size_t)64 << 10)
/* Response headers beyond this are malformed, as on the curl path. */
#define MAX_HEAD ((size_t)256 << 10)
#define MAX_CHUNK_LINE 4096
#define MAX_TRAILER ((size_t)64 << 10)
/* Interim (1xx) heads one answer may have: a server that sends 102s
 * without end is no answer, however long it keeps it up. */
#define MAX_INTERIM 32

enum c_state { C_CONNECTING, C_ACTIVE, C_IDLE };
enum c_phase { P_HEAD, P_BODY };
enum c_body { B_LENGTH, B_CHUNKED, B_CLOSE };
/* The chunked parser's states: the size line, its end, the data and its
 * CRLF, the trailer lines, the final CRLF. */
enum c_chunk {
    K_SIZE,
    K_EXT,
    K_SIZE_LF,
    K_DATA,
    K_DATA_CR,
    K_DATA_LF,
    K_TLINE0,
    K_TLINE,
    K_END_LF
};

struct h1_conn {
    int fd;
    enum c_state st;
    enum c_phase phase;
    enum c_body body;
    enum c_chunk ks;
    struct lt_replay_req *q;
    struct h1_conn *prev, *next; /* the idle list */
    uint64_t round;              /* the round it was opened in */
    int addr;                    /* which address it connects to */
    lt_mono opened;
    bool reused, got_bytes, keep, complete, want_out;
    uint64_t left; /* body bytes (Content-Length) or chunk bytes still to come */
    size_t kline;  /* bytes of the current chunk-size line or trailer */
    int kdigits;
    size_t trailer;    /* trailer bytes */
    size_t woff, wlen; /* request bytes written, in all */
    char cl[40];       /* "N\r\n\r\n": the end of the head */
    size_t cllen;
    struct lt_buf head; /* response header bytes until the blank line */
    unsigned interim;   /* 1xx heads of this answer so far */
};

/* ---- choosing the client ---- */

static bool env_set(const char *name)
{
    const char *v = getenv(name);
    return v && *v;
}

int lt__h1_choose(struct lt_replay *rp, struct lt_err *err)
{
    const char *b = rp->base;
    bool plain = !strncmp(b, "http://", 7);
    const char *auth = plain ? b + 7 : b;
    size_t alen = strcspn(auth, "/?#");
    bool userinfo = memchr(auth, '@', alen) != NULL;
    /* libcurl takes a proxy from these (HTTP_PROXY in capitals it ignores
     * for http, as a CGI could set it); no_proxy is left to curl. */
    bool proxy = !rp->http.no_proxy &&
                 (env_set("http_proxy") || env_set("all_proxy") || env_set("ALL_PROXY"));
    switch (rp->o.http_client) {
    case LT_REPLAY_CLIENT_CURL:
        return 0;
    case LT_REPLAY_CLIENT_LEAN:
        if (!plain || userinfo)
            return lt_errset(err, LT_EINVAL,
                             "the lean HTTP client speaks plain http:// without user:password@; "
                             "use --http-client curl (or auto) for this target");
        return 1;
    default:
        return plain && !userinfo && !proxy;
    }
}

/* ---- the request head ---- */

int lt__h1_init(struct lt_replay *rp, struct lt_err *err)
{
    struct h1 *h = &rp->h1;
    int rc = 0;
    lt_buf_init(&h->head, 1 << 20);
    h->connect_ns = rp->http.connect_timeout_ms * 1000000LL;
    h->timeout_ns = (rp->o.timeout_us ? rp->o.timeout_us : 600000000LL) * 1000;
    h->good = 0;
    if (!h->on)
        return 0;
    const char *auth = rp->base + 7;
    size_t alen = strcspn(auth, "/?#");
    const char *path = rp->url + 7 + alen;
    /* host and port: [v6]:port, name:port, name */
    const char *hs = auth, *he, *ps = NULL;
    if (*hs == '[') {
        he = memchr(hs, ']', alen);
        if (!he)
            return lt_errset(err, LT_EINVAL, "--target: an IPv6 address without ']'");
        hs++;
        if (he + 1 < auth + alen && he[1] == ':')
            ps = he + 2;
    } else {
        he = memchr(hs, ':', alen);
        if (he)
            ps = he + 1;
        else
            he = auth + alen;
    }
    size_t pl = ps ? (size_t)(auth + alen - ps) : 0;
    if ((size_t)(he - hs) >= sizeof h->host || pl >= sizeof h->port)
        return lt_errset(err, LT_EINVAL, "--target: the host or port is too long");
    memcpy(h->host, hs, (size_t)(he - hs));
    h->host[he - hs] = '\0';
    if (pl) {
        memcpy(h->port, ps, pl);
        h->port[pl] = '\0';
    } else {
        snprintf(h->port, sizeof h->port, "80");
    }
    /* What curl would send: its Host, User-Agent and Accept, then the
     * shared list, where "Name:" removes a header and "Name;" sends it
     * empty (only ours would be removed: none). */
    LT_TRY(lt_buf_printf(&h->head,
                         "POST %s HTTP/1.1\r\nHost: %.*s\r\nUser-Agent: loadtrace/" LT_VERSION
                         "\r\nAccept: */*\r\n",
                         *path ? path : "/", (int)alen, auth));
    for (const struct curl_slist *l = rp->http.headers; l; l = l->next) {
        const char *s = l->data;
        size_t n = strlen(s);
        if (n && s[n - 1] == ':')
            continue;
        if (n && s[n - 1] == ';') {
            LT_TRY(lt_buf_printf(&h->head, "%.*s:\r\n", (int)(n - 1), s));
            continue;
        }
        LT_TRY(lt_buf_printf(&h->head, "%s\r\n", s));
    }
    LT_TRY(lt_buf_puts(&h->head, "Content-Length: "));
    h->rcap = RBUF_BYTES;
    h->rbuf = malloc(h->rcap);
    if (!h->rbuf)
        rc = lt_errset(err, LT_ENOMEM, "out of memory");
out:
    if (rc < 0 && err && err->code == 0)
        rc = lt_errset(err, LT_ENOMEM, "out of memory");
    return rc;
}

void lt__h1_prepare(struct lt_replay *rp)
{
    struct h1 *h = &rp->h1;
    if (!h->on || h->naddr)
        return;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int g = getaddrinfo(h->host, h->port, &hints, &res);
    if (g) {
        snprintf(h->resolve_err, sizeof h->resolve_err, "%s: %s", h->host, gai_strerror(g));
        return;
    }
    for (struct addrinfo *a = res; a && h->naddr < H1_MAX_ADDRS; a = a->ai_next) {
        if (a->ai_addrlen > sizeof h->addr[0])
            continue;
        memcpy(&h->addr[h->naddr], a->ai_addr, a->ai_addrlen);
        h->addrlen[h->naddr++] = a->ai_addrlen;
    }
    freeaddrinfo(res);
    if (!h->naddr)
        snprintf(h->resolve_err, sizeof h->resolve_err, "%s: no address", h->host);
}

/* ---- connections ---- */

static void set_due(struct h1 *h, lt_mono t)
{
    if (!h->due_set || lt_mono_diff_ns(t, h->due) < 0) {
        h->due = t;
        h->due_set = true;
    }
}

static int fd_track(struct h1 *h, int fd, struct h1_conn *c)
{
    if ((size_t)fd >= h->nfd) {
        size_t n = h->nfd ? h->nfd : 256;
        while (n <= (size_t)fd)
            n *= 2;
        struct h1_conn **v = realloc(h->byfd, n * sizeof *v);
        if (!v)
            return -1;
        memset(v + h->nfd, 0, (n - h->nfd) * sizeof *v);
        h->byfd = v;
        h->nfd = n;
    }
    h->byfd[fd] = c;
    return 0;
}

static void idle_unlink(struct h1 *h, struct h1_conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else if (h->idle == c)
        h->idle = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

static void conn_close(struct lt_replay *rp, struct h1_conn *c)
{
    struct h1 *h = &rp->h1;
    if (c->st == C_IDLE)
        idle_unlink(h, c);
    if (c->q)
        c->q->conn = NULL;
    if (c->fd >= 0) {
        epoll_ctl(rp->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        if ((size_t)c->fd < h->nfd)
            h->byfd[c->fd] = NULL;
        close(c->fd);
    }
    lt_buf_release(&c->head);
    free(c);
}

static int watch(struct lt_replay *rp, struct h1_conn *c, bool out, int op)
{
    struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0u), .data.fd = c->fd};
    c->want_out = out;
    return epoll_ctl(rp->epfd, op, c->fd, &ev);
}

/* A new connection to address k for c (its request already set); 0 or a
 * negative errno (the request then fails as `connect`). */
static int conn_open(struct lt_replay *rp, struct h1_conn *c, int k)
{
    struct h1 *h = &rp->h1;
    if (!h->naddr)
        return -EHOSTUNREACH;
    int fd = socket(h->addr[k].ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->fd = fd;
    c->addr = k;
    c->st = C_CONNECTING;
    c->round = h->round;
    c->opened = lt_mono_now();
    if (fd_track(h, fd, c) < 0)
        return -ENOMEM;
    int r = connect(fd, (const struct sockaddr *)&h->addr[k], h->addrlen[k]);
    if (r < 0 && errno != EINPROGRESS)
        return -errno;
    if (watch(rp, c, true, EPOLL_CTL_ADD) < 0)
        return -errno;
    set_due(h, lt_mono_add_ns(c->opened, h->connect_ns));
    return 0;
}

/* A new connection for c: the address that last worked first, then the
 * others; 0, or a negative errno from the last one tried. */
static int open_any(struct lt_replay *rp, struct h1_conn *c)
{
    struct h1 *h = &rp->h1;
    int r = -EHOSTUNREACH;
    for (int i = 0; i < h->naddr; i++) {
        int k = (h->good + i) % h->naddr;
        if (i && c->fd >= 0) { /* the last try left a descriptor behind */
            epoll_ctl(rp->epfd, EPOLL_CTL_DEL, c->fd, NULL);
            if ((size_t)c->fd < h->nfd)
                h->byfd[c->fd] = NULL;
            close(c->fd);
            c->fd = -1;
        }
        if ((r = conn_open(rp, c, k)) == 0)
            return 0;
    }
    return r;
}

/* Ready c (a new or an idle connection) for q's request. */
static void conn_attach(struct h1_conn *c, struct lt_replay_req *q)
{
    c->q = q;
    q->conn = c;
    c->phase = P_HEAD;
    c->got_bytes = c->complete = false;
    c->interim = 0;
    c->keep = true;
    c->woff = 0;
    lt_buf_reset(&c->head);
    int n = snprintf(c->cl, sizeof c->cl, "%zu\r\n\r\n", q->body.len);
    c->cllen = (size_t)n;
    c->wlen = q->rp->h1.head.len + c->cllen + q->body.len;
}

static struct h1_conn *conn_new(void)
{
    struct h1_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->fd = -1;
    lt_buf_init(&c->head, MAX_HEAD + RBUF_BYTES);
    return c;
}

/* ---- ending a request ---- */

/* q's transfer failed with class x (NULL: read what arrived as the curl
 * path would after a clean end). Its connection is closed by finish. */
static int fail(struct lt_replay *rp, struct h1_conn *c, const char *x, struct lt_err *err)
{
    struct lt_replay_req *q = c->q;
    c->complete = false;
    if (rp->h1.in_send) {
        /* The plan is in the middle of sending: the request is recorded
         * by the next pump, as one that could not be built is (replay.c,
         * finish_unsent). */
        if (!q->err)
            q->err = x ? x : LT_REPLAY_ERR_CONNECT;
        lt__h1_detach(rp, q);
        q->prev->next = q->next;
        q->next->prev = q->prev;
        q->prev = q->next = q;
        q->unsent_next = rp->unsent;
        rp->unsent = q;
        return 0;
    }
    return lt__replay_done(rp, q, x, err);
}

/* The answer is complete: keep the connection if the server does. */
static int complete(struct lt_replay *rp, struct h1_conn *c, bool extra, struct lt_err *err)
{
    c->complete = true;
    /* Bytes past the answer, or an answer before the whole request was
     * written: the connection is out of step. */
    if (extra || c->woff < c->wlen)
        c->keep = false;
    return lt__replay_done(rp, c->q, NULL, err);
}

static int write_req(struct lt_replay *rp, struct h1_conn *c, struct lt_err *err);

/* c died before any byte of its answer: a reused connection the server
 * had closed gets one more try on a new one; else the class is x. */
static int retry_or_fail(struct lt_replay *rp, struct h1_conn *c, const char *x, struct lt_err *err)
{
    struct lt_replay_req *q = c->q;
    if (c->reused && !c->got_bytes && !q->h1_fresh) {
        q->h1_fresh = true;
        c->q = NULL;
        q->conn = NULL;
        c->complete = false;
        conn_close(rp, c);
        struct h1_conn *n = conn_new();
        if (!n)
            return lt_errset(err, LT_ENOMEM, "out of memory for a connection");
        conn_attach(n, q);
        int r = open_any(rp, n);
        if (r < 0)
            return fail(rp, n, LT_REPLAY_ERR_CONNECT, err);
        return 0;
    }
    return fail(rp, c, x, err);
}

/* ---- writing ---- */

static int write_req(struct lt_replay *rp, struct h1_conn *c, struct lt_err *err)
{
    struct h1 *h = &rp->h1;
    struct lt_replay_req *q = c->q;
    if (!c->woff) {
        lt__replay_check_sent(rp, q); /* the first byte is about to be written */
    }
    while (c->woff < c->wlen) {
        struct iovec iov[3] = {
            {h->head.p, h->head.len}, {c->cl, c->cllen}, {q->body.p, q->body.len}};
        struct iovec *v = iov;
        int nv = 3;
        size_t skip = c->woff;
        while (nv && skip >= v->iov_len) {
            skip -= v->iov_len;
            v++;
            nv--;
        }
        v->iov_base = (char *)v->iov_base + skip;
        v->iov_len -= skip;
        struct msghdr m = {.msg_iov = v, .msg_iovlen = (size_t)nv};
        ssize_t n = sendmsg(c->fd, &m, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (!c->want_out && watch(rp, c, true, EPOLL_CTL_MOD) < 0)
                    return retry_or_fail(rp, c, LT_REPLAY_ERR_CONNECT, err);
                return 0;
            }
            return retry_or_fail(rp, c, LT_REPLAY_ERR_CONNECT, err);
        }
        c->woff += (size_t)n;
    }
    if (c->want_out && watch(rp, c, false, EPOLL_CTL_MOD) < 0)
        return retry_or_fail(rp, c, LT_REPLAY_ERR_CONNECT, err);
    return 0;
}

static int send_now(struct lt_replay *rp, struct lt_replay_req *q, struct lt_err *err);

int lt__h1_send(struct lt_replay *rp, struct lt_replay_req *q, struct lt_err *err)
{
    rp->h1.in_send = true;
    int rc = send_now(rp, q, err);
    rp->h1.in_send = false;
    return rc;
}

static int send_now(struct lt_replay *rp, struct lt_replay_req *q, struct lt_err *err)
{
    struct h1 *h = &rp->h1;
    set_due(h, lt_mono_add_ns(q->added, h->timeout_ns));
    struct h1_conn *c = h->idle;
    if (c) {
        idle_unlink(h, c);
        c->st = C_ACTIVE;
        c->reused = true;
        conn_attach(c, q);
        return write_req(rp, c, err);
    }
    c = conn_new();
    if (!c)
        return lt_errset(err, LT_ENOMEM, "out of memory for a connection");
    conn_attach(c, q);
    c->reused = false;
    if (open_any(rp, c) < 0)
        return fail(rp, c, LT_REPLAY_ERR_CONNECT, err);
    return 0;
}

/* ---- reading ---- */

/* The status line and the headers in c->head[0, end): 0, or -1 with
 * q->err set (malformed). *interim: a 1xx block, to be skipped. */
static int parse_head(struct h1_conn *c, size_t end, bool *interim)
{
    struct lt_replay_req *q = c->q;
    const char *p = c->head.p, *e = p + end;
    const char *nl = memchr(p, '\n', (size_t)(e - p));
    *interim = false;
    /* status-line = HTTP-version SP 3DIGIT SP [reason]; the SP before an
     * empty reason is often left out, a fourth digit never is. */
    if (!nl || nl - p < 12 || memcmp(p, "HTTP/1.", 7) || (p[7] != '0' && p[7] != '1') ||
        p[8] != ' ' || p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' || p[11] < '0' ||
        p[11] > '9' || (p[12] != ' ' && p[12] != '\r' && p[12] != '\n')) {
        q->err = LT_REPLAY_ERR_MALFORMED;
        return -1;
    }
    bool http10 = p[7] == '0';
    q->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    q->headers_seen = true;
    q->is_sse = false;
    if (q->status >= 100 && q->status < 200) {
        if (++c->interim > MAX_INTERIM) {
            q->err = LT_REPLAY_ERR_MALFORMED;
            return -1;
        }
        *interim = true;
        return 0;
    }
    c->keep = !http10;
    bool chunked = false, has_len = false, te = false;
    uint64_t len = 0;
    for (const char *l = nl + 1; l < e;) {
        const char *le = memchr(l, '\n', (size_t)(e - l));
        if (!le)
            le = e;
        size_t ll = (size_t)(le - l);
        if (ll && l[ll - 1] == '\r')
            ll--;
        if (!ll)
            break;
        lt__replay_header_line(q, l, ll);
        if (ll > 15 && !strncasecmp(l, "content-length:", 15)) {
            const char *v = l + 15, *ve = l + ll;
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            uint64_t x = 0;
            int digits = 0;
            for (; v < ve && *v >= '0' && *v <= '9'; v++, digits++) {
                if (x > (UINT64_MAX - 9) / 10) {
                    digits = 0;
                    break;
                }
                x = x * 10 + (uint64_t)(*v - '0');
            }
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            if (!digits || v != ve || (has_len && x != len)) {
                q->err = LT_REPLAY_ERR_MALFORMED;
                return -1;
            }
            has_len = true;
            len = x;
        } else if (ll > 18 && !strncasecmp(l, "transfer-encoding:", 18)) {
            te = true;
            /* chunked must be the last coding */
            size_t vl = ll - 18;
            const char *v = l + 18;
            while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
                vl--;
            chunked = vl >= 7 && !strncasecmp(v + vl - 7, "chunked", 7);
        } else if (ll > 11 && !strncasecmp(l, "connection:", 11)) {
            for (const char *v = l + 11; v + 5 <= l + ll; v++) {
                if (!strncasecmp(v, "close", 5))
                    c->keep = false;
                else if (http10 && v + 10 <= l + ll && !strncasecmp(v, "keep-alive", 10))
                    c->keep = true;
            }
        }
        l = le + 1;
    }
    c->kdigits = 0;
    c->kline = c->trailer = 0;
    c->left = 0;
    if (te) {
        c->body = chunked ? B_CHUNKED : B_CLOSE;
        c->ks = K_SIZE;
        if (!chunked)
            c->keep = false;
    } else if (has_len) {
        c->body = B_LENGTH;
        c->left = len;
    } else if (q->status == 204 || q->status == 304) {
        c->body = B_LENGTH;
    } else {
        c->body = B_CLOSE;
        c->keep = false;
    }
    return 0;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Body bytes [p, p + n): 1 the answer is complete (*used: bytes it took),
 * 0 more to come, -1 malformed (q->err set) or refused by the response
 * reader (q->err set by it). */
static int body_bytes(struct h1_conn *c, const char *p, size_t n, lt_mono now, size_t *used)
{
    struct lt_replay_req *q = c->q;
    size_t i = 0;
    if (c->body == B_CLOSE) {
        *used = n;
        return n && lt__replay_body_bytes(q, p, n, now) < 0 ? -1 : 0;
    }
    if (c->body == B_LENGTH) {
        size_t take = c->left < n ? (size_t)c->left : n;
        if (take && lt__replay_body_bytes(q, p, take, now) < 0)
            return -1;
        c->left -= take;
        *used = take;
        return c->left == 0;
    }
    while (i < n) {
        char ch = p[i];
        switch (c->ks) {
        case K_SIZE: {
            int v = hexval(ch);
            if (v >= 0) {
                if (c->left >> 56 || ++c->kdigits > 16)
                    goto bad;
                c->left = c->left * 16 + (uint64_t)v;
                i++;
                break;
            }
            if (!c->kdigits)
                goto bad;
            if (ch == ';' || ch == ' ' || ch == '\t')
                c->ks = K_EXT;
            else if (ch == '\r')
                c->ks = K_SIZE_LF;
            else
                goto bad;
            i++;
            break;
        }
        case K_EXT:
            if (++c->kline > MAX_CHUNK_LINE)
                goto bad;
            if (ch == '\r')
                c->ks = K_SIZE_LF;
            i++;
            break;
        case K_SIZE_LF:
            if (ch != '\n')
                goto bad;
            i++;
            c->kline = 0;
            c->kdigits = 0;
            c->ks = c->left ? K_DATA : K_TLINE0;
            break;
        case K_DATA: {
            size_t take = c->left < n - i ? (size_t)c->left : n - i;
            if (lt__replay_body_bytes(q, p + i, take, now) < 0)
                return -1;
            i += take;
            c->left -= take;
            if (!c->left)
                c->ks = K_DATA_CR;
            break;
        }
        case K_DATA_CR:
            if (ch != '\r')
                goto bad;
            c->ks = K_DATA_LF;
            i++;
            break;
        case K_DATA_LF:
            if (ch != '\n')
                goto bad;
            c->ks = K_SIZE;
            i++;
            break;
        case K_TLINE0:
            i++;
            if (ch == '\r') {
                c->ks = K_END_LF;
                break;
            }
            c->ks = K_TLINE;
            /* fall through: the line's first byte counts */
            if (++c->trailer > MAX_TRAILER)
                goto bad;
            break;
        case K_TLINE:
            i++;
            if (++c->trailer > MAX_TRAILER)
                goto bad;
            if (ch == '\n')
                c->ks = K_TLINE0;
            break;
        case K_END_LF:
            if (ch != '\n')
                goto bad;
            *used = i + 1;
            return 1;
        }
    }
    *used = n;
    return 0;
bad:
    q->err = LT_REPLAY_ERR_MALFORMED;
    return -1;
}

/* What parse says of the bytes it was given. */
enum { R_MORE, R_DONE, R_FAIL };

/* Bytes of q's answer, headers then body: R_MORE, R_DONE (*extra: bytes
 * came past the answer's end), R_FAIL (q->err says why), or a negative
 * code (out of memory). No I/O and no end of the request here: the caller
 * (readable, or the fuzz target) acts on the result. */
static int parse(struct h1_conn *c, const char *p, size_t n, lt_mono now, bool *extra,
                 struct lt_err *err)
{
    struct lt_replay_req *q = c->q;
    *extra = false;
    if (!q->has_fb) {
        q->fb = now;
        q->has_fb = true;
        q->state = RS_RECEIVING;
    }
    while (c->phase == P_HEAD) {
        size_t from = c->head.len > 2 ? c->head.len - 2 : 0;
        size_t room = MAX_HEAD + 4 - c->head.len;
        size_t take = n < room ? n : room;
        if (lt_buf_append(&c->head, p, take) < 0)
            return lt_errset(err, LT_ENOMEM, "out of memory for response headers");
        /* The head ends at the first empty line. A line may end in LF
         * alone, its CR left out (RFC 9112 2.2 lets a recipient read so,
         * and curl does): LF [CR] LF. */
        const char *h = c->head.p, *end = NULL;
        for (size_t k = from; k + 2 <= c->head.len && !end; k++) {
            if (h[k] != '\n')
                continue;
            size_t j = k + 1;
            if (h[j] == '\r')
                j++;
            if (j < c->head.len && h[j] == '\n')
                end = h + j + 1;
        }
        if (!end) {
            q->head_bytes = c->head.len;
            if (c->head.len > MAX_HEAD) {
                /* the status, when the first line is there, stays known */
                bool interim;
                (void)parse_head(c, c->head.len, &interim);
                q->err = LT_REPLAY_ERR_MALFORMED;
                return R_FAIL;
            }
            return R_MORE;
        }
        size_t hl = (size_t)(end - h);
        size_t rest_in_p = c->head.len - hl; /* bytes of p past the head */
        bool interim;
        if (parse_head(c, hl, &interim) < 0)
            return R_FAIL;
        q->head_bytes += hl;
        p += take - rest_in_p;
        n -= take - rest_in_p;
        lt_buf_reset(&c->head);
        if (interim)
            continue;
        c->phase = P_BODY;
        if (c->body == B_LENGTH && !c->left) {
            *extra = n > 0;
            return R_DONE;
        }
    }
    size_t used = 0;
    int r = body_bytes(c, p, n, now, &used);
    if (r < 0)
        return R_FAIL;
    *extra = r > 0 && used < n;
    return r > 0 ? R_DONE : R_MORE;
}

static int got(struct lt_replay *rp, struct h1_conn *c, const char *p, size_t n, lt_mono now,
               struct lt_err *err)
{
    bool extra;
    int r = parse(c, p, n, now, &extra, err);
    if (r == R_DONE)
        return complete(rp, c, extra, err);
    if (r == R_FAIL)
        return fail(rp, c, NULL, err);
    return r;
}

/* The server closed (EOF) or reset c. */
static int ended(struct lt_replay *rp, struct h1_conn *c, bool reset, struct lt_err *err)
{
    struct lt_replay_req *q = c->q;
    if (!c->got_bytes)
        return retry_or_fail(rp, c, LT_REPLAY_ERR_CONNECT, err);
    if (c->phase == P_BODY && c->body == B_CLOSE && !reset)
        return complete(rp, c, false, err);
    return fail(rp, c, q->has_fb ? LT_REPLAY_ERR_INCOMPLETE : LT_REPLAY_ERR_CONNECT, err);
}

static int readable(struct lt_replay *rp, struct h1_conn *c, struct lt_err *err)
{
    struct h1 *h = &rp->h1;
    for (int round = 0; round < 4; round++) {
        ssize_t n = recv(c->fd, h->rbuf, h->rcap, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return ended(rp, c, true, err);
        }
        if (n == 0)
            return ended(rp, c, false, err);
        c->got_bytes = true;
        struct lt_replay_req *q = c->q;
        int rc = got(rp, c, h->rbuf, (size_t)n, lt_mono_now(), err);
        /* Once q's answer is over, c may be closed or serving another
         * request: touch neither. */
        if (rc < 0 || q->conn != c || (size_t)n < h->rcap)
            return rc;
    }
    return 0;
}

/* c finished connecting (or failed to). */
static int connected(struct lt_replay *rp, struct h1_conn *c, struct lt_err *err)
{
    struct h1 *h = &rp->h1;
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
        soerr = errno;
    if (soerr) {
        /* another address of the host, if it has one */
        if (c->addr + 1 < h->naddr) {
            struct lt_replay_req *q = c->q;
            c->q = NULL;
            q->conn = NULL;
            int k = c->addr + 1;
            conn_close(rp, c);
            struct h1_conn *n = conn_new();
            if (!n)
                return lt_errset(err, LT_ENOMEM, "out of memory for a connection");
            conn_attach(n, q);
            if (conn_open(rp, n, k) < 0)
                return fail(rp, n, LT_REPLAY_ERR_CONNECT, err);
            return 0;
        }
        return fail(rp, c, LT_REPLAY_ERR_CONNECT, err);
    }
    h->good = c->addr;
    c->st = C_ACTIVE;
    rp->st.connects++; /* as curl counts: connections made */
    return write_req(rp, c, err);
}

int lt__h1_event(struct lt_replay *rp, int fd, uint32_t events, struct lt_err *err)
{
    struct h1 *h = &rp->h1;
    if (!h->on || fd < 0 || (size_t)fd >= h->nfd || !h->byfd[fd])
        return 0;
    struct h1_conn *c = h->byfd[fd];
    /* An event of this round for a descriptor opened in it belongs to the
     * closed connection that had the number before: level-triggered,
     * a true one comes again next round. */
    if (c->round == h->round)
        return 1;
    int rc = 0;
    switch (c->st) {
    case C_IDLE:
        conn_close(rp, c); /* closed by the server, or bytes nobody asked for */
        return 1;
    case C_CONNECTING:
        rc = connected(rp, c, err);
        break;
    case C_ACTIVE: {
        struct lt_replay_req *q = c->q;
        if ((events & EPOLLOUT) && c->woff < c->wlen) {
            rc = write_req(rp, c, err);
            if (rc < 0 || q->conn != c)
                break;
        }
        if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
            rc = readable(rp, c, err);
        break;
    }
    }
    return rc < 0 ? rc : 1;
}

int lt__h1_timeouts(struct lt_replay *rp, struct lt_err *err)
{
    struct h1 *h = &rp->h1;
    lt_mono now = lt_mono_now();
    h->due_set = false;
    struct lt_replay_req *q = rp->head.next, *next;
    for (; q != &rp->head; q = next) {
        next = q->next;
        struct h1_conn *c = q->conn;
        if (!c)
            continue;
        lt_mono total = lt_mono_add_ns(q->added, h->timeout_ns);
        lt_mono due = total;
        if (c->st == C_CONNECTING) {
            lt_mono ct = lt_mono_add_ns(c->opened, h->connect_ns);
            if (lt_mono_diff_ns(ct, total) < 0)
                due = ct;
        }
        if (lt_mono_diff_ns(now, due) >= 0) {
            int rc = fail(rp, c, LT_REPLAY_ERR_TIMEOUT, err);
            if (rc < 0)
                return rc;
        } else {
            set_due(h, due);
        }
    }
    return 0;
}

void lt__h1_detach(struct lt_replay *rp, struct lt_replay_req *q)
{
    struct h1_conn *c = q->conn;
    if (!c)
        return;
    q->conn = NULL;
    c->q = NULL;
    if (!c->complete || !c->keep || c->st != C_ACTIVE) {
        conn_close(rp, c);
        return;
    }
    c->st = C_IDLE;
    c->prev = NULL;
    c->next = rp->h1.idle;
    if (c->next)
        c->next->prev = c;
    rp->h1.idle = c;
    if (c->head.cap > ((size_t)64 << 10))
        lt_buf_release(&c->head);
}

void lt__h1_release(struct lt_replay *rp)
{
    struct h1 *h = &rp->h1;
    while (h->idle)
        conn_close(rp, h->idle);
    for (size_t i = 0; i < h->nfd; i++)
        if (h->byfd[i])
            conn_close(rp, h->byfd[i]);
    free(h->byfd);
    h->byfd = NULL;
    h->nfd = 0;
    free(h->rbuf);
    h->rbuf = NULL;
    lt_buf_release(&h->head);
}

int lt_replay_h1_fuzz(const uint8_t *data, size_t size)
{
    /* A request as the engine would hold it, without the engine. */
    struct lt_replay_req q = {0};
    lt_wire_sse_init(&q.sse, 1 << 16, 1 << 16);
    lt_wire_resp_init(&q.resp, 1 << 12);
    lt_buf_init(&q.rbody, 1 << 16);
    struct h1_conn *c = conn_new();
    if (!c)
        return 0;
    c->st = C_ACTIVE;
    c->q = &q;
    q.conn = c;
    c->phase = P_HEAD;
    c->keep = true;
    /* the first byte picks the size of each read, so that every split of
     * a line, a size or a CRLF across reads is tried */
    size_t step = size ? (size_t)data[0] % 97 + 1 : 1;
    lt_mono now = {0};
    int r = R_MORE;
    bool extra;
    for (size_t off = 1; off < size && r == R_MORE; off += step) {
        size_t n = size - off < step ? size - off : step;
        r = parse(c, (const char *)data + off, n, now, &extra, NULL);
    }
    /* what a clean end of an answer read to its close would do */
    if (r == R_MORE && c->phase == P_BODY && c->body == B_CLOSE)
        r = R_DONE;
    lt_buf_release(&c->head);
    free(c);
    lt_wire_sse_release(&q.sse);
    lt_wire_resp_release(&q.resp);
    lt_buf_release(&q.rbody);
    return 0;
}

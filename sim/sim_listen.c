/*
 * The sim's listener and connections (sim/sim_server_internal.h): the
 * address resolved, the listening socket and the libmicrohttpd daemon on
 * it (started again after a refuse fault), and each request's arrival,
 * body (within --max-body and --max-pending), completion and log line.
 * libmicrohttpd's threads call in here; what a request is answered is
 * sim_server.c's, when it is due the loop's (sim_loop.c).
 */
#include "sim/sim_server_internal.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Take a piece of r's body if the limits allow: the request's own
 * (--max-body, a 413) and all bodies in memory together (max_pending, a 503,
 * so that many half-sent bodies cannot hold unbounded memory). */
static void take_body(struct sreq *r, const char *data, size_t n)
{
    struct lt_sim *s = r->s;
    if (r->too_big || r->busy || r->two_length)
        return;
    pthread_mutex_lock(&s->mu);
    bool room = s->pending <= s->max_pending && n <= s->max_pending - s->pending;
    if (room)
        s->pending += n;
    pthread_mutex_unlock(&s->mu);
    if (!room) {
        r->busy = true;
    } else {
        r->counted += n;
        if (lt_buf_append(&r->body, data, n) < 0)
            r->too_big = true;
    }
    if (r->too_big || r->busy) { /* what was taken is of no more use */
        pthread_mutex_lock(&s->mu);
        s->pending -= r->counted;
        pthread_mutex_unlock(&s->mu);
        r->counted = 0;
        lt_buf_release(&r->body);
    }
}

static enum MHD_Result count_length(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    const char **first = cls;
    if (strcasecmp(key, "Content-Length"))
        return MHD_YES;
    if (!first[0])
        first[0] = value;
    else if (strcmp(first[0], value))
        first[1] = value;
    return MHD_YES;
}

/* Known paths, so the log can name a request's path after the URL is gone. */
static const char *const routes[] = {
    "/health",         "/v1/models",
    "/metrics",        "/reset_prefix_cache",
    "/tokenize",       "/v1/chat/completions",
    "/v1/completions", "/v1/responses",
    "/v1/messages",    "/v1/messages/count_tokens",
    "/props",          "/slots",
    "/v1/embeddings",  "/v1/rerank",
    "/rerank",
};

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    struct lt_sim *s = cls;
    struct sreq *r = *con_cls;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r)
            return MHD_NO;
        r->s = s;
        r->conn = conn;
        r->heap_idx = NO_TIMER;
        r->watch_fd = -1;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
            r->client_port = ntohs(((const struct sockaddr_in *)ci->client_addr)->sin_port);
        else if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET6)
            r->client_port = ntohs(((const struct sockaddr_in6 *)ci->client_addr)->sin6_port);
        r->method = !strcmp(method, "GET") ? "GET" : !strcmp(method, "POST") ? "POST" : "OTHER";
        r->path = "other";
        for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
            if (!strcmp(url, routes[i]))
                r->path = routes[i];
        lt_buf_init(&r->body, s->max_body);
        lt_buf_init(&r->out, (size_t)1 << 20);
        const char *lengths[2] = {NULL, NULL};
        MHD_get_connection_values(conn, MHD_HEADER_KIND, count_length, lengths);
        r->two_length = lengths[1] != NULL;
        pthread_mutex_lock(&s->mu);
        r->next = s->live;
        if (s->live)
            s->live->prev = r;
        s->live = r;
        s->st.streams_open++;
        if (s->st.streams_open > s->st.streams_peak)
            s->st.streams_peak = s->st.streams_open;
        pthread_mutex_unlock(&s->mu);
        *con_cls = r;
        return MHD_YES;
    }
    switch (r->phase) {
    case P_BODY:
        if (*upload_data_size) {
            take_body(r, upload_data, *upload_data_size);
            *upload_data_size = 0;
            return MHD_YES;
        }
        enum MHD_Result ret = lt__sim_route(r, url, method);
        /* The body has been parsed; the answer needs it no more. */
        pthread_mutex_lock(&s->mu);
        s->pending -= r->counted;
        pthread_mutex_unlock(&s->mu);
        r->counted = 0;
        lt_buf_release(&r->body);
        return ret;
    case P_DELAYED: {
        pthread_mutex_lock(&s->mu);
        bool stop = s->stopping, early = lt__sim_now_ns(s) < r->due;
        if (!stop && early)
            lt__sim_suspend(r);
        pthread_mutex_unlock(&s->mu);
        if (stop)
            return MHD_NO;
        if (early)
            return MHD_YES;
        return r->inference ? lt__sim_start_answer(r) : lt__sim_answer_metrics(r);
    }
    case P_CLOSING: /* the listener is shut (or the sim stops): close unanswered */
        return MHD_NO;
    case P_WAITING: {
        pthread_mutex_lock(&s->mu);
        bool stop = s->stopping || r->gone, done = r->model_done;
        if (!stop && !done)
            lt__sim_suspend(r);
        pthread_mutex_unlock(&s->mu);
        if (stop)
            return MHD_NO;
        return done ? lt__sim_answer_full(r) : MHD_YES;
    }
    default:
        return MHD_YES;
    }
}

static void write_log(struct lt_sim *s, struct sreq *r, enum MHD_RequestTerminationCode toe)
{
    struct lt_buf b;
    lt_buf_init(&b, (size_t)1 << 30);
    lt_buf_printf(&b,
                  "{\"method\":\"%s\",\"path\":\"%s\",\"status\":%d,\"arrival_us\":%lld,"
                  "\"end_us\":%lld",
                  r->method, r->path ? r->path : "", r->status, (long long)(r->arrival / 1000),
                  (long long)(r->end / 1000));
    lt_buf_printf(&b, ",\"client_port\":%u", (unsigned)r->client_port);
    if (r->mfault != LT_SIM_MFAULT_NONE)
        lt_buf_printf(&b, ",\"fault\":\"%s\"", lt_sim_mfault_name(r->mfault));
    if (r->inference) {
        lt_buf_printf(&b,
                      ",\"seq\":%llu,\"api\":\"%s\",\"stream\":%s,\"fault\":\"%s\","
                      "\"prompt_tokens\":%u",
                      (unsigned long long)r->seq, lt_sim_api_name(r->call.api),
                      r->call.stream ? "true" : "false", lt_sim_fault_name(r->fault),
                      r->call.toks.n);
        if (r->fault == LT_SIM_FAULT_REFUSE && r->shut >= 0)
            lt_buf_printf(&b, ",\"refused_us\":%lld", (long long)(r->shut / 1000));
        if (r->call.inputs)
            lt_buf_printf(&b, ",\"inputs\":%u", r->call.inputs);
        if (r->call.audio)
            lt_buf_printf(&b, ",\"audio\":%u,\"audio_tokens\":%u", r->call.audio,
                          r->call.audio_tokens);
        if (r->call.images)
            lt_buf_printf(&b, ",\"images\":%u,\"image_tokens\":%u,\"image_bytes\":%llu",
                          r->call.images, r->call.image_tokens,
                          (unsigned long long)r->call.image_bytes);
        if (r->call.videos)
            lt_buf_printf(&b, ",\"videos\":%u,\"video_tokens\":%u", r->call.videos,
                          r->call.video_tokens);
        if (r->call.image_links)
            lt_buf_printf(&b, ",\"image_links\":%u", r->call.image_links);
        if (r->started) {
            if (r->aborted)
                lt_buf_puts(&b, ",\"aborted\":true");
            lt_buf_printf(
                &b,
                ",\"model_us\":%lld,\"id\":\"%s\",\"cached_tokens\":%u,"
                "\"max_tokens\":%u,\"out\":%u,"
                "\"reasoning_tokens\":%u,\"tool_call\":%s,\"finish\":\"%s\","
                "\"emitted\":%u,\"sent\":%u,\"complete\":%s",
                (long long)(r->modeled / 1000), r->id, r->resp.cached_tokens, r->call.max_tokens,
                r->resp.out, r->resp.reasoning, r->resp.tool_call ? "true" : "false",
                r->resp.finish, r->avail, r->call.stream ? r->sent : r->avail,
                toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && r->model_done && !r->cut ? "true"
                                                                                       : "false");
            if (r->avail) /* the model's admission to its batch and its first token */
                lt_buf_printf(&b, ",\"admitted_us\":%lld,\"first_us\":%lld",
                              (long long)(r->admitted_rel / 1000),
                              (long long)(r->first_rel / 1000));
            if (r->avail && r->slot >= 0) /* the slot it ran in (slot_runs) */
                lt_buf_printf(&b, ",\"slot\":%d", (int)r->slot);
            if (r->call.id_slot >= 0) /* the slot it asked for */
                lt_buf_printf(&b, ",\"id_slot\":%lld", (long long)r->call.id_slot);
            lt_buf_puts(&b, ",\"tokens_us\":[");
            for (uint32_t i = 0; i < r->avail; i++)
                lt_buf_printf(&b, i ? ",%lld" : "%lld", (long long)(r->rel[i] / 1000));
            lt_buf_puts(&b, "],\"sent_us\":[");
            uint32_t nsent = r->call.stream ? r->sent : r->phase == P_DONE ? r->avail : 0;
            for (uint32_t i = 0; i < nsent; i++)
                lt_buf_printf(&b, i ? ",%lld" : "%lld", (long long)(r->sent_at[i] / 1000));
            lt_buf_puts(&b, "]");
        }
    }
    lt_buf_puts(&b, "}\n");
    pthread_mutex_lock(&s->log_mu);
    if (fwrite(b.p, 1, b.len, s->log) != b.len)
        s->log_failed = true;
    pthread_mutex_unlock(&s->log_mu);
    lt_buf_release(&b);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct lt_sim *s = cls;
    struct sreq *r = *con_cls;
    if (!r)
        return;
    *con_cls = NULL;
    pthread_mutex_lock(&s->mu);
    r->end = lt__sim_now_ns(s);
    if (r->mreq) {
        lt_sim_model_cancel(s->model, r->mreq);
        r->mreq = NULL;
    }
    lt__sim_timer_cancel(s, r);
    lt__sim_unwatch(s, r);
    if (r->prev)
        r->prev->next = r->next;
    else
        s->live = r->next;
    if (r->next)
        r->next->prev = r->prev;
    s->st.streams_open--;
    s->st.requests++;
    s->pending -= r->counted;
    /* The client closed before the whole answer left (replay's
     * cancellations; not the sim's own cut, nor its stop), seen by the
     * loop's watch or at a write. */
    r->aborted = r->inference && r->started && !r->cut &&
                 (r->gone || (!s->stopping && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK &&
                              toe != MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN));
    s->met.aborted += r->aborted;
    if (r->fault != LT_SIM_FAULT_NONE || r->mfault != LT_SIM_MFAULT_NONE)
        s->st.faults++;
    pthread_mutex_unlock(&s->mu);
    if (s->log)
        write_log(s, r, toe);
    lt_sim_call_release(&r->call);
    lt_buf_release(&r->body);
    lt_buf_release(&r->out);
    free(r->rel);
    free(r->sent_at);
    free(r);
}

/* ---- listening ---- */

static int open_listener(struct lt_sim *s, struct lt_err *err)
{
    int fd = socket(s->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return lt_errset(err, LT_EIO, "socket: %s", strerror(errno));
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&s->addr, s->addrlen) < 0 || listen(fd, 4096) < 0) {
        int e = errno;
        close(fd);
        return lt_errset(err, LT_EIO, "cannot listen on port %u: %s", s->port, strerror(e));
    }
    struct sockaddr_storage got;
    socklen_t gl = sizeof got;
    if (getsockname(fd, (struct sockaddr *)&got, &gl) == 0) {
        uint16_t p = got.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&got)->sin6_port)
                                               : ntohs(((struct sockaddr_in *)&got)->sin_port);
        s->port = p;
        if (s->addr.ss_family == AF_INET6)
            ((struct sockaddr_in6 *)&s->addr)->sin6_port = htons(p);
        else
            ((struct sockaddr_in *)&s->addr)->sin_port = htons(p);
    }
    return fd;
}

/* Open a listener and a daemon on it (the port is fixed after the first). */
int lt__sim_start_daemon(struct lt_sim *s, struct lt_err *err)
{
    if (s->ndm == MAX_DAEMONS)
        return lt_errset(err, LT_ELIMIT, "too many listener restarts");
    int fd = open_listener(s, err);
    if (fd < 0)
        return fd;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
    /* A pool of one is not a pool: libmicrohttpd wants at least two. */
    unsigned pool = s->threads > 1 ? s->threads : 0;
    /* Each connection's memory pool holds the answer's headers, so the
     * bighead fault needs room for its padding (the pool's pages are only
     * touched as they are used). */
    size_t mem = 16384;
    if (s->faults.p[LT_SIM_FAULT_BIGHEAD] > 0)
        mem += (size_t)s->faults.bighead_bytes + 65536;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, fd,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_CONNECTION_LIMIT, s->max_conn,
        MHD_OPTION_CONNECTION_TIMEOUT, 600u, MHD_OPTION_CONNECTION_MEMORY_LIMIT, mem,
        MHD_OPTION_THREAD_POOL_SIZE, pool, MHD_OPTION_END);
    if (!d) {
        close(fd);
        return lt_errset(err, LT_EIO, "libmicrohttpd could not start on port %u", s->port);
    }
    s->dm[s->ndm].d = d;
    s->dm[s->ndm].fd = fd;
    s->ndm++;
    s->listening = true;
    return 0;
}

/* Refuse fault: stop listening now (connections get ECONNREFUSED), keep
 * serving the connections already open. */
void lt__sim_stop_listening(struct lt_sim *s)
{
    struct dmn *d = &s->dm[s->ndm - 1];
    MHD_socket fd = MHD_quiesce_daemon(d->d);
    /* libmicrohttpd says the socket may only be closed after the daemon
     * stops; shutting it down takes it out of LISTEN without freeing the
     * descriptor. */
    if (fd != MHD_INVALID_SOCKET)
        shutdown(fd, SHUT_RDWR);
}

int lt__sim_resolve(struct lt_sim *s, const char *host, uint16_t port, struct lt_err *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    char ps[8];
    snprintf(ps, sizeof ps, "%u", port);
    int g = getaddrinfo(host, ps, &hints, &ai);
    if (g != 0 || !ai)
        return lt_errset(err, LT_EINVAL, "cannot resolve listen address '%s': %s", host,
                         gai_strerror(g));
    memcpy(&s->addr, ai->ai_addr, ai->ai_addrlen);
    s->addrlen = ai->ai_addrlen;
    s->port = port;
    freeaddrinfo(ai);
    return 0;
}

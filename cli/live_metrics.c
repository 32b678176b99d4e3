/*
 * The --live-metrics server: GET /metrics answers the live figures in the
 * Prometheus text format; anything else is 404 (405 for other methods).
 * What it serves is only what replay_live.c renders: counts, times and
 * the phase the caller named, never a prompt, a header or the API key.
 * The socket is bound here (so port 0 gives a free port to report) and
 * handed to libmicrohttpd, which answers from its own polling thread.
 */
#include "cli/live_metrics.h"

#include "base/lt_buf.h"
#include "base/lt_time.h"
#include "cli/cli_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PAGE_MAX (1u << 20)

struct cli_live_http {
    struct MHD_Daemon *d;
    cli_live_page_fn page;
    void *ud;
};

bool cli_live_parse(const char *spec, char *host, size_t host_n, unsigned *port, bool *loopback)
{
    const char *colon = strrchr(spec, ':');
    const char *h = "127.0.0.1", *p = spec;
    size_t hl = strlen(h);
    if (colon) {
        h = spec;
        hl = (size_t)(colon - spec);
        p = colon + 1;
        if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
            h++;
            hl -= 2;
        }
    }
    uint64_t v;
    if (hl == 0 || hl >= host_n || !cli_parse_u64(p, &v) || v > 65535)
        return false;
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = (unsigned)v;
    struct in_addr a4;
    struct in6_addr a6;
    if (!strcmp(host, "localhost"))
        *loopback = true;
    else if (inet_pton(AF_INET, host, &a4) == 1)
        *loopback = (ntohl(a4.s_addr) >> 24) == 127;
    else if (inet_pton(AF_INET6, host, &a6) == 1)
        *loopback = IN6_IS_ADDR_LOOPBACK(&a6);
    else
        *loopback = false; /* a name: it may be anything */
    return true;
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, const char *ctype,
                              const char *body, size_t len, bool copy)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, (void *)body, copy ? MHD_RESPMEM_MUST_COPY : MHD_RESPMEM_MUST_FREE);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", ctype);
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    (void)upload_data;
    struct cli_live_http *h = cls;
    if (!*con_cls) { /* the headers only: answer once the request is whole */
        *con_cls = h;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0; /* a body is not read */
        return MHD_YES;
    }
    static const char text[] = "text/plain; charset=utf-8";
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
        static const char m[] = "only GET /metrics\n";
        return answer(c, 405, text, m, sizeof m - 1, true);
    }
    if (strcmp(url, "/metrics")) {
        static const char m[] = "not found: the live figures are at /metrics\n";
        return answer(c, 404, text, m, sizeof m - 1, true);
    }
    struct lt_buf b;
    lt_buf_init(&b, PAGE_MAX);
    if (h->page(h->ud, &b) < 0) {
        lt_buf_release(&b);
        static const char m[] = "out of memory\n";
        return answer(c, 500, text, m, sizeof m - 1, true);
    }
    /* The buffer is handed over: libmicrohttpd frees it with free(). */
    size_t len = b.len;
    char *page = b.p ? b.p : strdup("");
    if (!page)
        return MHD_NO;
    return answer(c, 200, "text/plain; version=0.0.4; charset=utf-8", page, len, false);
}

static int replay_page(void *ud, struct lt_buf *out)
{
    return lt_replay_live_prom(ud, out);
}

struct cli_live_http *cli_live_http_start(const char *host, unsigned port, struct lt_replay_live *l,
                                          char *url, size_t url_n, struct lt_err *err)
{
    return cli_live_http_start_fn(host, port, replay_page, l, url, url_n, err);
}

struct cli_live_http *cli_live_http_start_fn(const char *host, unsigned port, cli_live_page_fn page,
                                             void *ud, char *url, size_t url_n, struct lt_err *err)
{
    char ps[8];
    snprintf(ps, sizeof ps, "%u", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
                    *ai = NULL;
    int e = getaddrinfo(host, ps, &hints, &ai);
    if (e) {
        lt_errset(err, LT_EINVAL, "--live-metrics %s:%u: %s", host, port, gai_strerror(e));
        return NULL;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0) {
        lt_errset(err, LT_EIO, "--live-metrics: cannot listen on %s:%u: %s", host, port,
                  strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return NULL;
    }
    bool v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    unsigned got = port;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        got = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                             : ((struct sockaddr_in *)&ss)->sin_port);
    struct cli_live_http *h = calloc(1, sizeof *h);
    if (!h) {
        close(fd);
        lt_errset(err, LT_ENOMEM, "out of memory");
        return NULL;
    }
    h->page = page;
    h->ud = ud;
    h->d =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL, on_request,
                         h, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT, 32u,
                         MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
    if (!h->d) {
        close(fd);
        free(h);
        lt_errset(err, LT_EIO, "--live-metrics: libmicrohttpd could not start on port %u", got);
        return NULL;
    }
    snprintf(url, url_n, v6 ? "http://[%s]:%u/metrics" : "http://%s:%u/metrics", host, got);
    return h;
}

void cli_live_hold(int64_t hold_us, bool quiet)
{
    if (!quiet)
        fprintf(stderr,
                "loadtrace replay: live metrics: serving the final figures for %.0f s more "
                "(Ctrl-C ends it)\n",
                (double)hold_us / 1e6);
    cli_stop_catch(true);
    lt_mono end = lt_mono_add_ns(lt_mono_now(), hold_us * 1000);
    while (!cli_stop_signal() && lt_mono_diff_ns(end, lt_mono_now()) > 0) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    cli_stop_catch(false);
}

void cli_live_http_stop(struct cli_live_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d); /* closes the listening socket it was given */
    free(h);
}

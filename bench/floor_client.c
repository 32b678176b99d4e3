/*
 * floor_client: the floor of a streaming client's CPU per token on this
 * machine (bench/README.md, "CPU per streamed token"). It keeps S streams
 * open against an OpenAI-compatible server (the sim), each a chat request
 * for exactly T tokens (ignore_eos), and does for each readable event the
 * least any client must: one recv() into one buffer, and a look at the last
 * bytes for the end of the chunked answer; then it sends the next request
 * on the same connection (keep-alive) until R requests are done. No
 * parsing, no timestamps, no records: what it costs is one recv per event
 * and its share of epoll_wait. Its CPU (this thread's, from the first send
 * to the last answer's end, as replay's self-check measures its engine
 * thread) over R x T tokens is the floor a real client is compared with.
 *
 * Usage: floor_client PORT STREAMS REQUESTS TOKENS MODEL
 * Prints one line: requests, tokens, recvs, cpu_s, wall_s, us per token,
 * recvs per token. Exits 1 on any error (a closed connection, a refused
 * connect): a floor from a broken run is no floor.
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct conn {
    int fd;
    char tail[5]; /* the last bytes received: "0\r\n\r\n" ends an answer */
};

static double now_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL); /* a request is a few hundred bytes: never here */
            continue;
        }
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static long arg(const char *s, long lo, long hi, const char *what)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end || v < lo || v > hi) {
        fprintf(stderr, "floor_client: %s '%s' is not %ld to %ld\n", what, s, lo, hi);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: floor_client PORT STREAMS REQUESTS TOKENS MODEL\n");
        return 2;
    }
    int port = (int)arg(argv[1], 1, 65535, "port");
    int streams = (int)arg(argv[2], 1, 100000, "streams");
    long requests = arg(argv[3], 1, 100000000, "requests");
    long tokens = arg(argv[4], 1, 1000000, "tokens");
    const char *model = argv[5];
    if (requests < streams)
        streams = (int)requests;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    char body[1024], req[2048];
    int bl = snprintf(body, sizeof body,
                      "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"one two "
                      "three four five six seven eight nine ten\"}],\"max_tokens\":%ld,"
                      "\"min_tokens\":%ld,\"ignore_eos\":true,\"stream\":true}",
                      model, tokens, tokens);
    int rl2 = snprintf(req, sizeof req,
                       "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                       "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
                       port, bl, body);
    if (bl >= (int)sizeof body || rl2 >= (int)sizeof req) {
        fprintf(stderr, "floor_client: the model name is too long\n");
        return 2;
    }

    int ep = epoll_create1(0);
    struct conn *cs = calloc((size_t)streams, sizeof *cs);
    char *buf = malloc(65536);
    if (ep < 0 || !cs || !buf) {
        perror("floor_client");
        return 1;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    for (int i = 0; i < streams; i++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
            perror("floor_client: connect");
            return 1;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        cs[i].fd = fd;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &cs[i]};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
            perror("floor_client: epoll_ctl");
            return 1;
        }
    }

    double cpu0 = now_s(CLOCK_THREAD_CPUTIME_ID), wall0 = now_s(CLOCK_MONOTONIC);
    long sent = 0, done = 0, recvs = 0;
    for (int i = 0; i < streams; i++, sent++)
        if (send_all(cs[i].fd, req, (size_t)rl2) < 0) {
            perror("floor_client: send");
            return 1;
        }
    struct epoll_event evs[1024];
    while (done < requests) {
        int n = epoll_wait(ep, evs, 1024, 60000);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "floor_client: nothing for 60 s (%ld of %ld done)\n", done, requests);
            return 1;
        }
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            ssize_t r = recv(c->fd, buf, 65536, 0);
            if (r < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (r <= 0) {
                fprintf(stderr, "floor_client: the server closed a connection (%ld done)\n", done);
                return 1;
            }
            recvs++;
            /* the last 5 bytes, across reads */
            if (r >= 5) {
                memcpy(c->tail, buf + r - 5, 5);
            } else {
                memmove(c->tail, c->tail + r, (size_t)(5 - r));
                memcpy(c->tail + 5 - r, buf, (size_t)r);
            }
            if (memcmp(c->tail, "0\r\n\r\n", 5))
                continue;
            done++;
            memset(c->tail, 0, sizeof c->tail);
            if (sent < requests) {
                if (send_all(c->fd, req, (size_t)rl2) < 0) {
                    perror("floor_client: send");
                    return 1;
                }
                sent++;
            }
        }
    }
    double cpu = now_s(CLOCK_THREAD_CPUTIME_ID) - cpu0, wall = now_s(CLOCK_MONOTONIC) - wall0;
    double toks = (double)requests * (double)tokens;
    printf("requests %ld tokens %.0f recvs %ld cpu_s %.3f wall_s %.2f us_per_token %.3f "
           "recvs_per_token %.3f\n",
           requests, toks, recvs, cpu, wall, cpu / toks * 1e6, (double)recvs / toks);
    for (int i = 0; i < streams; i++)
        close(cs[i].fd);
    free(cs);
    free(buf);
    close(ep);
    return 0;
}

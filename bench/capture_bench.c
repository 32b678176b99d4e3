/*
 * capture_bench: what loadtrace capture costs a client, measured side by
 * side with direct access to the same server in one run. It starts two
 * sims (`fast`: answers at once, so latency differences are the proxy's;
 * and a paced one: 50 tok/s per stream, so throughput is the model's
 * unless the proxy falls behind) and a capture in front of each, as child
 * processes, and drives them with libcurl:
 *
 *   1. added TTFT: sequential streamed requests alternating direct and
 *      through capture, each on a kept-alive connection; p50 and p99 of
 *      the time to the first content chunk, both ways;
 *   2. aggregate streamed tok/s at --streams concurrent streams, direct
 *      and through capture, alternating runs; capture's CPU time per
 *      relayed chunk (utime + stime from /proc, over the capture runs);
 *      and its memory per open stream (peak RSS during a run minus its
 *      RSS before, over the streams; before: after 16 warm-up streams, so
 *      that what is set up once is not counted per stream) and threads
 *      at the peak;
 *      With --relay 1 and --nginx PATH, two more ways in every run, for
 *      scale: the floor relay (relay_main: one recv and one send per
 *      chunk, no HTTP; what no relaying proxy can undercut here) and
 *      nginx as a streaming reverse proxy (spawn_nginx), each with its
 *      CPU per relayed chunk and memory per open stream;
 *   3. --idle N client connections, each having made one keep-alive
 *      request (GET /healthz) and then idle: how many capture holds,
 *      and its threads and RSS while it holds them (the capture of part
 *      1, which has not freed the memory of many streams).
 *
 *   capture_bench LOADTRACE [--requests N] [--streams N] [--out N]
 *                 [--runs N] [--profile FILE] [--dir DIR] [--idle N] [--relay 1] [--nginx PATH]
 */
#include "base/lt_time.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct stream {
    CURL *h;
    int64_t send, first, end;
    uint64_t chunks; /* SSE events received */
    uint64_t tokens; /* content chunks */
    char tail[16];   /* the last bytes seen, to find a marker cut in two */
    bool ok;
};

static int64_t now_ns(void)
{
    return lt_mono_now().ns;
}

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
    struct stream *s = ud;
    size_t len = sz * n;
    /* Markers are short, and a piece boundary may cut one: look in the
     * last few bytes of the previous piece too. */
    char buf[64 * 1024 + 16];
    size_t tl = strlen(s->tail);
    if (len + tl > sizeof buf - 1)
        len = sizeof buf - 1 - tl;
    memcpy(buf, s->tail, tl);
    memcpy(buf + tl, p, len);
    buf[tl + len] = '\0';
    for (const char *q = buf; (q = strstr(q, "data: ")); q += 6)
        if (q + 6 > buf + tl)
            s->chunks++;
    for (const char *q = buf; (q = strstr(q, "\"content\":\" ")); q += 12)
        if (q + 12 > buf + tl) {
            if (!s->tokens)
                s->first = now_ns();
            s->tokens++;
        }
    size_t keep = tl + len < 12 ? tl + len : 12;
    memcpy(s->tail, buf + tl + len - keep, keep);
    s->tail[keep] = '\0';
    return sz * n;
}

static pid_t spawn(char *const argv[])
{
    pid_t pid = fork();
    if (pid == 0) {
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

static int wait_port(const char *path, pid_t pid)
{
    for (int i = 0; i < 400; i++) {
        FILE *f = fopen(path, "r");
        int port = 0;
        if (f) {
            if (fscanf(f, "%d", &port) != 1)
                port = 0;
            fclose(f);
        }
        if (port > 0)
            return port;
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return -1;
        struct timespec ts = {0, 25000000};
        nanosleep(&ts, NULL);
    }
    return -1;
}

static double cpu_s(pid_t pid)
{
    char path[64], buf[2048];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    /* Fields after the command: state is 3rd, utime 14th, stime 15th. */
    if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
        return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
    return 0;
}

/* CPU seconds of every thread of pid, from the scheduler's own clock
 * (/proc/PID/task/TID/schedstat: ns on a CPU), where /proc/PID/stat
 * counts clock ticks: a process that runs in short bursts at a timer's
 * pace (the sim's steps) is counted by ticks as whatever the tick hits.
 * Threads that ended are not counted, so sample before they end. */
static double sched_s(pid_t pid)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    double sum = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            char p2[320];
            snprintf(p2, sizeof p2, "/proc/%d/task/%s/schedstat", (int)pid, e->d_name);
            FILE *f = fopen(p2, "r");
            unsigned long long ns = 0;
            if (f) {
                if (fscanf(f, "%llu", &ns) != 1)
                    ns = 0;
                fclose(f);
            }
            sum += (double)ns / 1e9;
        }
    closedir(d);
    return sum;
}

/* A "Key:" line of /proc/PID/status (kB for memory), 0 if none. */
static long proc_status(pid_t pid, const char *key)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long v = 0;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ':') {
            v = strtol(line + kl + 1, NULL, 10);
            break;
        }
    if (f)
        fclose(f);
    return v;
}

static void setup(struct stream *s, const char *url, const char *body, struct curl_slist *hdr)
{
    if (!s->h)
        s->h = curl_easy_init();
    curl_easy_setopt(s->h, CURLOPT_URL, url);
    curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(s->h, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(s->h, CURLOPT_NOSIGNAL, 1L);
    s->first = s->end = 0;
    s->chunks = s->tokens = 0;
    s->tail[0] = '\0';
    s->send = now_ns();
}

/* The floor of any relaying proxy on this machine: a child process that
 * accepts clients and relays each one's bytes to and from its own
 * connection to the upstream with one epoll loop, one recv() per
 * readable event and one send() of what it read; no HTTP, no parsing,
 * no record. What it costs per chunk is the kernel's loopback TCP (and
 * the loop's epoll_wait): no proxy that reads a chunk and writes it on
 * can cost less. Exits when its parent's SIGTERM comes. */
struct relay_side {
    int fd;
    struct relay_side *peer;
};

static void relay_close(int ep, struct relay_side *a)
{
    struct relay_side *b = a->peer;
    epoll_ctl(ep, EPOLL_CTL_DEL, a->fd, NULL);
    epoll_ctl(ep, EPOLL_CTL_DEL, b->fd, NULL);
    close(a->fd);
    close(b->fd);
    free(a < b ? a : b); /* both sides are one allocation */
}

static void relay_main(int lfd, int up_port)
{
    int ep = epoll_create1(0);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);
    struct epoll_event ev[256];
    static char buf[16384];
    for (;;) {
        int n = epoll_wait(ep, ev, 256, -1);
        for (int i = 0; i < n; i++) {
            struct relay_side *a = ev[i].data.ptr;
            if (!a) {
                int cfd = accept(lfd, NULL, NULL);
                if (cfd < 0)
                    continue;
                int ufd = socket(AF_INET, SOCK_STREAM, 0);
                struct sockaddr_in ua = {.sin_family = AF_INET,
                                         .sin_port = htons((uint16_t)up_port)};
                ua.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                struct relay_side *pair = calloc(2, sizeof *pair);
                if (ufd < 0 || !pair || connect(ufd, (struct sockaddr *)&ua, sizeof ua) < 0) {
                    close(cfd);
                    if (ufd >= 0)
                        close(ufd);
                    free(pair);
                    continue;
                }
                int one = 1;
                setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                setsockopt(ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                pair[0] = (struct relay_side){cfd, &pair[1]};
                pair[1] = (struct relay_side){ufd, &pair[0]};
                for (int k = 0; k < 2; k++) {
                    struct epoll_event e = {.events = EPOLLIN, .data.ptr = &pair[k]};
                    epoll_ctl(ep, EPOLL_CTL_ADD, pair[k].fd, &e);
                }
                continue;
            }
            ssize_t r = recv(a->fd, buf, sizeof buf, MSG_DONTWAIT);
            if (r < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            /* The sockets block on send: a slow reader holds the loop,
             * which a floor may do (the clients read as fast as they can). */
            if (r <= 0 || send(a->peer->fd, buf, (size_t)r, MSG_NOSIGNAL) != r)
                relay_close(ep, a);
        }
    }
}

/* The relay in a child on a free loopback port; its pid, and the port. */
static pid_t spawn_relay(int up_port, int *port)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 4096) < 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &al) < 0)
        return -1;
    *port = ntohs(a.sin_port);
    pid_t pid = fork();
    if (pid == 0) {
        relay_main(lfd, up_port);
        _exit(0);
    }
    close(lfd);
    return pid;
}

/* nginx as a streaming reverse proxy in front of the upstream, one
 * process (no master, one worker's work), as one would run it for LLM
 * streams: no response buffering, HTTP/1.1 keep-alive to the upstream.
 * Its pid and port; -1 if it did not start. */
static pid_t spawn_nginx(const char *bin, const char *dir, int up_port, int *port)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &al) < 0)
        return -1;
    *port = ntohs(a.sin_port);
    close(lfd); /* nginx binds it next: a race another process could win */
    char conf[512], err[512];
    snprintf(conf, sizeof conf, "%s/cb-nginx.conf", dir);
    snprintf(err, sizeof err, "%s/cb-nginx.err", dir);
    FILE *f = fopen(conf, "w");
    if (!f)
        return -1;
    fprintf(f,
            "daemon off; master_process off; worker_processes 1;\n"
            "error_log %s/cb-nginx.err; pid %s/cb-nginx.pid;\n"
            "events { worker_connections 20000; use epoll; }\n"
            "http { access_log off;\n"
            "  client_body_temp_path %s; proxy_temp_path %s;\n"
            "  upstream up { server 127.0.0.1:%d; keepalive 2048; }\n"
            "  server { listen 127.0.0.1:%d; keepalive_requests 100000;\n"
            "    location / { proxy_pass http://up; proxy_http_version 1.1;\n"
            "      proxy_set_header Connection \"\"; proxy_buffering off;\n"
            "      proxy_request_buffering off; } } }\n",
            dir, dir, dir, dir, up_port, *port);
    fclose(f);
    char *na[] = {(char *)bin, "-p", (char *)dir, "-c", conf, "-e", err, NULL};
    pid_t pid = spawn(na);
    for (int i = 0; i < 200; i++) { /* up once it answers a connect */
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        int up = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
        if (fd >= 0)
            close(fd);
        if (up)
            return pid;
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return -1;
        struct timespec ts = {0, 25000000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGTERM);
    return -1;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double pct_ms(int64_t *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    int i = (int)(p * (n - 1) + 0.5);
    return (double)v[i] / 1e6;
}

/* N concurrent streams against url; returns aggregate content tok/s.
 * With watch > 0, the peak RSS (kB) and threads of that process. */
static double run_streams(const char *url, int n, int out, uint64_t *chunks, int *ok, pid_t watch,
                          long *peak_kb, long *peak_threads)
{
    char body[256];
    snprintf(body, sizeof body,
             "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
             "\"max_tokens\":%d,\"ignore_eos\":true,\"stream\":true}",
             out);
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    struct stream *s = calloc((size_t)n, sizeof *s);
    CURLM *m = curl_multi_init();
    curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)n);
    for (int i = 0; i < n; i++) {
        setup(&s[i], url, body, hdr);
        curl_easy_setopt(s[i].h, CURLOPT_PRIVATE, &s[i]);
        curl_multi_add_handle(m, s[i].h);
    }
    int64_t t0 = now_ns(), tend = t0;
    int running = 1;
    while (running) {
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        int q;
        while ((msg = curl_multi_info_read(m, &q))) {
            struct stream *st;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&st);
            st->end = now_ns();
            st->ok = msg->data.result == CURLE_OK;
            if (st->end > tend)
                tend = st->end;
        }
        if (running)
            curl_multi_poll(m, NULL, 0, 100, NULL);
        if (watch > 0) {
            long kb = proc_status(watch, "VmRSS"), th = proc_status(watch, "Threads");
            if (kb > *peak_kb)
                *peak_kb = kb;
            if (th > *peak_threads)
                *peak_threads = th;
        }
    }
    uint64_t tokens = 0;
    *chunks = 0;
    *ok = 0;
    for (int i = 0; i < n; i++) {
        tokens += s[i].tokens;
        *chunks += s[i].chunks;
        *ok += s[i].ok;
        curl_multi_remove_handle(m, s[i].h);
        curl_easy_cleanup(s[i].h);
    }
    curl_multi_cleanup(m);
    curl_slist_free_all(hdr);
    free(s);
    return (double)tokens / ((double)(tend - t0) / 1e9);
}

/* n connections to 127.0.0.1:port, each making one keep-alive request
 * and then idle; how many are still open once all are made. */
static void run_idle(int port, int n, pid_t cap)
{
    int *fd = malloc((size_t)n * sizeof *fd);
    int held = 0, answered = 0;
    long kb0 = proc_status(cap, "VmRSS"), th0 = proc_status(cap, "Threads");
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    int64_t t0 = now_ns();
    for (int i = 0; i < n; i++) {
        fd[i] = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd[i] < 0 || connect(fd[i], (struct sockaddr *)&a, sizeof a) < 0 ||
            send(fd[i], req, sizeof req - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof req - 1)) {
            if (fd[i] >= 0)
                close(fd[i]);
            fd[i] = -1;
            continue;
        }
        struct pollfd p = {fd[i], POLLIN, 0};
        char buf[2048];
        if (poll(&p, 1, 2000) == 1 && recv(fd[i], buf, sizeof buf, 0) > 0)
            answered++;
    }
    double open_s = (double)(now_ns() - t0) / 1e9;
    struct timespec ts = {1, 0};
    nanosleep(&ts, NULL);
    /* Still open: nothing to read, or not the end of the stream. */
    for (int i = 0; i < n; i++) {
        if (fd[i] < 0)
            continue;
        char b;
        ssize_t r = recv(fd[i], &b, 1, MSG_DONTWAIT | MSG_PEEK);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            held++;
    }
    long kb = proc_status(cap, "VmRSS"), th = proc_status(cap, "Threads");
    printf("Idle keep-alive connections (%d asked, each after one GET /healthz)\n", n);
    printf("  answered %d, still held after 1 s %d (opened in %.1f s)\n", answered, held, open_s);
    printf("  capture threads %ld -> %ld, RSS %.1f -> %.1f MiB (%.1f KiB per held connection)\n",
           th0, th, kb0 / 1024.0, kb / 1024.0, held ? (double)(kb - kb0) / held : 0.0);
    for (int i = 0; i < n; i++)
        if (fd[i] >= 0)
            close(fd[i]);
    free(fd);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr,
                "usage: capture_bench LOADTRACE [--requests N] [--streams N] [--out N] "
                "[--runs N] [--profile FILE] [--dir DIR] [--idle N] [--relay 1] [--nginx PATH]\n");
        return 2;
    }
    char *lt = argv[1];
    int requests = 2000, streams = 256, out = 300, runs = 2, idle = 0;
    bool with_relay = false;
    const char *nginx = NULL;
    const char *profile = "bench/sim-paced.profile", *dir = "/tmp";
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--requests"))
            requests = (int)strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--streams"))
            streams = (int)strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--out"))
            out = (int)strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--runs"))
            runs = (int)strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--profile"))
            profile = argv[i + 1];
        else if (!strcmp(argv[i], "--dir"))
            dir = argv[i + 1];
        else if (!strcmp(argv[i], "--idle"))
            idle = (int)strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--relay"))
            with_relay = strcmp(argv[i + 1], "0") != 0;
        else if (!strcmp(argv[i], "--nginx"))
            nginx = argv[i + 1];
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char pf[4][512], url[4][128], trace[2][512], sport[16];
    int cap_port[2] = {0, 0}, sim_port[2] = {0, 0};
    pid_t pid[4];
    const char *profiles[2] = {"fast", profile};
    for (int k = 0; k < 2; k++) {
        snprintf(pf[k], sizeof pf[k], "%s/cb-sim%d.port", dir, k);
        unlink(pf[k]);
        char *sa[] = {lt,    "sim",       "--listen",          "127.0.0.1:0", "--port-file",
                      pf[k], "--profile", (char *)profiles[k], "-q",          NULL};
        pid[k] = spawn(sa);
        int port = wait_port(pf[k], pid[k]);
        if (port < 0) {
            fprintf(stderr, "capture_bench: sim did not start\n");
            return 1;
        }
        sim_port[k] = port;
        snprintf(url[k], sizeof url[k], "http://127.0.0.1:%d/v1/chat/completions", port);
        snprintf(pf[k + 2], sizeof pf[k + 2], "%s/cb-cap%d.port", dir, k);
        snprintf(trace[k], sizeof trace[k], "%s/cb-cap%d.lt.zst", dir, k);
        unlink(pf[k + 2]);
        char up[64];
        snprintf(up, sizeof up, "http://127.0.0.1:%d", port);
        char *ca[] = {lt,           "capture", "--listen", "127.0.0.1:0", "--port-file", pf[k + 2],
                      "--upstream", up,        "-o",       trace[k],      "-q",          NULL};
        pid[k + 2] = spawn(ca);
        port = cap_port[k] = wait_port(pf[k + 2], pid[k + 2]);
        if (port < 0) {
            fprintf(stderr, "capture_bench: capture did not start\n");
            return 1;
        }
        snprintf(url[k + 2], sizeof url[k + 2], "http://127.0.0.1:%d/v1/chat/completions", port);
    }
    (void)sport;

    /* 1. TTFT, alternating, kept-alive connections. */
    int64_t *ttft[2] = {calloc((size_t)requests, 8), calloc((size_t)requests, 8)};
    struct stream s[2] = {{0}, {0}};
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    const char *body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}],"
                       "\"max_tokens\":4,\"ignore_eos\":true,\"stream\":true}";
    int got[2] = {0, 0};
    for (int i = 0; i < 2 * requests; i++) {
        int w = i & 1; /* 0 direct, 1 capture */
        setup(&s[w], url[w == 0 ? 0 : 2], body, hdr);
        if (curl_easy_perform(s[w].h) == CURLE_OK && s[w].first)
            ttft[w][got[w]++] = s[w].first - s[w].send;
    }
    double cpu0 = cpu_s(pid[2]);
    printf("TTFT (sim fast, %d sequential streams each way, alternating)\n", requests);
    double p50d = pct_ms(ttft[0], got[0], 0.5), p99d = pct_ms(ttft[0], got[0], 0.99);
    double p50c = pct_ms(ttft[1], got[1], 0.5), p99c = pct_ms(ttft[1], got[1], 0.99);
    printf("  direct   p50 %.3f ms  p99 %.3f ms  (n=%d)\n", p50d, p99d, got[0]);
    printf("  capture  p50 %.3f ms  p99 %.3f ms  (n=%d)\n", p50c, p99c, got[1]);
    printf("  added    p50 %.3f ms  p99 %.3f ms\n", p50c - p50d, p99c - p99d);
    printf("  capture CPU for these: %.2f s\n", cpu0);

    /* 2. Throughput at N streams, alternating runs. */
    printf("Streams (sim paced 50 tok/s each, %d concurrent, %d tokens each)\n", streams, out);
    uint64_t cap_chunks = 0;
    double cap_cpu = 0, cap_sched = 0, sim_direct = 0;
    uint64_t direct_chunks = 0;
    /* A few streams first, so that what capture sets up once (the trace
     * writer's compression context, curl's and MHD's first allocations)
     * is in the RSS before, not counted per stream. */
    {
        uint64_t wc;
        int wok;
        long wk = 0, wt = 0;
        (void)run_streams(url[3], 16, 20, &wc, &wok, 0, &wk, &wt);
        struct timespec ts = {1, 0}; /* a frame of the trace is written */
        nanosleep(&ts, NULL);
    }
    long rss0 = proc_status(pid[3], "VmRSS"), peak_kb = 0, peak_th = 0;
    /* Other proxies in front of the same paced sim, a way each in every
     * run: the floor relay (--relay 1, relay_main) and nginx (--nginx
     * PATH, spawn_nginx), for scale. */
    struct other {
        const char *name;
        pid_t pid;
        char url[128];
        double sched, sum;
        uint64_t chunks;
        long rss0, peak_kb, peak_th;
    } oth[2];
    int n_oth = 0;
    if (with_relay) {
        int port = 0;
        oth[n_oth] = (struct other){.name = "relay", .pid = spawn_relay(sim_port[1], &port)};
        snprintf(oth[n_oth].url, sizeof oth[n_oth].url, "http://127.0.0.1:%d/v1/chat/completions",
                 port);
        if (oth[n_oth++].pid < 0) {
            fprintf(stderr, "capture_bench: relay did not start\n");
            return 1;
        }
    }
    if (nginx) {
        int port = 0;
        oth[n_oth] =
            (struct other){.name = "nginx", .pid = spawn_nginx(nginx, dir, sim_port[1], &port)};
        snprintf(oth[n_oth].url, sizeof oth[n_oth].url, "http://127.0.0.1:%d/v1/chat/completions",
                 port);
        if (oth[n_oth++].pid < 0) {
            fprintf(stderr, "capture_bench: nginx did not start (%s/cb-nginx.err)\n", dir);
            return 1;
        }
    }
    double sum[2] = {0, 0};
    for (int r = 0; r < runs; r++) {
        for (int w = 0; w < 2 + n_oth; w++) {
            uint64_t chunks;
            int ok;
            struct other *o = w >= 2 ? &oth[w - 2] : NULL;
            double c0 = cpu_s(pid[3]), s0 = sched_s(pid[3]), m0 = sched_s(pid[1]);
            double o0 = o ? sched_s(o->pid) : 0;
            if (o && !o->rss0)
                o->rss0 = proc_status(o->pid, "VmRSS");
            double tps = run_streams(o ? o->url : url[w == 0 ? 1 : 3], streams, out, &chunks, &ok,
                                     o        ? o->pid
                                     : w == 1 ? pid[3]
                                              : 0,
                                     o ? &o->peak_kb : &peak_kb, o ? &o->peak_th : &peak_th);
            double c1 = cpu_s(pid[3]), s1 = sched_s(pid[3]), m1 = sched_s(pid[1]);
            if (w == 0) {
                direct_chunks += chunks;
                sim_direct += m1 - m0;
            }
            if (w == 1) {
                cap_chunks += chunks;
                cap_cpu += c1 - c0;
                cap_sched += s1 - s0;
            }
            if (o) {
                o->chunks += chunks;
                o->sched += sched_s(o->pid) - o0;
                o->sum += tps;
            } else {
                sum[w] += tps;
            }
            printf("  run %d %-8s %9.0f tok/s  ok %d/%d  chunks %llu\n", r + 1,
                   o   ? o->name
                   : w ? "capture"
                       : "direct",
                   tps, ok, streams, (unsigned long long)chunks);
        }
    }
    printf("  capture/direct aggregate tok/s: %.1f %%\n", 100.0 * sum[1] / sum[0]);
    printf("  capture CPU per relayed chunk: %.1f us (%.2f s for %llu chunks)\n",
           cap_chunks ? 1e6 * cap_cpu / (double)cap_chunks : 0.0, cap_cpu,
           (unsigned long long)cap_chunks);
    printf("  capture CPU per relayed chunk (scheduler's clock): %.1f us (%.2f s)\n",
           cap_chunks ? 1e6 * cap_sched / (double)cap_chunks : 0.0, cap_sched);
    for (int k = 0; k < n_oth; k++)
        printf("  %s CPU per relayed chunk (scheduler's clock): %.1f us (%.2f s for %llu chunks); "
               "%s/direct tok/s %.1f %%; memory %.1f KiB per open stream (RSS %.1f -> %.1f MiB, "
               "before its first run: no warm-up)\n",
               oth[k].name, oth[k].chunks ? 1e6 * oth[k].sched / (double)oth[k].chunks : 0.0,
               oth[k].sched, (unsigned long long)oth[k].chunks, oth[k].name,
               100.0 * oth[k].sum / sum[0],
               streams ? (double)(oth[k].peak_kb - oth[k].rss0) / streams : 0.0,
               oth[k].rss0 / 1024.0, oth[k].peak_kb / 1024.0);
    /* For scale: what sending a chunk (and its model step) costs the sim,
     * which does half a relay's socket work. */
    printf("  sim CPU per chunk sent, direct runs (scheduler's clock): %.1f us\n",
           direct_chunks ? 1e6 * sim_direct / (double)direct_chunks : 0.0);
    printf("  capture memory: RSS %.1f MiB before, %.1f MiB at the peak: %.1f KiB per open "
           "stream; %ld threads at the peak\n",
           rss0 / 1024.0, peak_kb / 1024.0, streams ? (double)(peak_kb - rss0) / streams : 0.0,
           peak_th);
    for (int k = 0; k < n_oth; k++) {
        kill(oth[k].pid, SIGTERM);
        waitpid(oth[k].pid, NULL, 0);
    }
    /* On the other capture, which has served only the sequential
     * requests: freed stream memory would hide idle connections' cost. */
    if (idle > 0)
        run_idle(cap_port[0], idle, pid[2]);
    for (int k = 0; k < 4; k++)
        kill(pid[k], SIGTERM);
    for (int k = 0; k < 4; k++)
        waitpid(pid[k], NULL, 0);
    curl_easy_cleanup(s[0].h);
    curl_easy_cleanup(s[1].h);
    curl_slist_free_all(hdr);
    free(ttft[0]);
    free(ttft[1]);
    curl_global_cleanup();
    return 0;
}

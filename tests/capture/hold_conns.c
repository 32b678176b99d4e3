/*
 * hold_conns: N client connections to 127.0.0.1:PORT, each making one
 * keep-alive request and then kept open, for a test to measure what a
 * server holds per idle connection (tests/capture/idle.sh).
 *
 *   hold_conns PORT N GO_FILE
 *
 * Each connection sends a chat completion (non-streamed, 2 tokens) and
 * reads the whole answer. It
 * prints "answered K" (status 200), then "held" and waits until GO_FILE
 * exists (120 s at most), then prints "open M": the connections the server
 * had not closed. Every wait is bounded.
 */
#define _GNU_SOURCE /* strcasestr */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Reads until the answer is whole (its Content-Length, or the last
 * chunk). True with a 200. */
static bool read_answer(int fd)
{
    char buf[16384];
    size_t len = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 10000) != 1)
            return false;
        ssize_t r = recv(fd, buf + len, sizeof buf - 1 - len, 0);
        if (r <= 0)
            return false;
        len += (size_t)r;
        buf[len] = '\0';
        const char *end = strstr(buf, "\r\n\r\n");
        if (!end) {
            if (len == sizeof buf - 1)
                return false;
            continue;
        }
        bool ok = !strncmp(buf, "HTTP/1.1 200", 12);
        size_t head = (size_t)(end + 4 - buf);
        const char *cl = strcasestr(buf, "\r\ncontent-length:");
        if (cl && cl < end) {
            size_t want = (size_t)strtoul(cl + 17, NULL, 10);
            if (len - head >= want)
                return ok;
        } else if (strstr(end, "\r\n0\r\n\r\n")) {
            return ok;
        }
        if (len == sizeof buf - 1)
            return false;
    }
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: hold_conns PORT N GO_FILE\n");
        return 2;
    }
    int port = (int)strtol(argv[1], NULL, 10), n = (int)strtol(argv[2], NULL, 10);
    const char *go = argv[3];
    if (port <= 0 || port > 65535 || n <= 0 || n > 100000) {
        fprintf(stderr, "hold_conns: bad PORT or N\n");
        return 2;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    char body[256], req[512];
    int bl = snprintf(body, sizeof body, "%s",
                      "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                      "\"max_tokens\":2}");
    int rl2 = snprintf(req, sizeof req,
                       "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
                       bl, body);
    int *fd = malloc((size_t)n * sizeof *fd);
    if (!fd)
        return 1;
    int answered = 0;
    for (int i = 0; i < n; i++) {
        fd[i] = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd[i] < 0 || connect(fd[i], (struct sockaddr *)&a, sizeof a) < 0 ||
            send(fd[i], req, (size_t)rl2, MSG_NOSIGNAL) != rl2) {
            if (fd[i] >= 0)
                close(fd[i]);
            fd[i] = -1;
            continue;
        }
        if (read_answer(fd[i]))
            answered++;
    }
    printf("answered %d\nheld\n", answered);
    fflush(stdout);
    for (int t = 0; t < 1200 && access(go, F_OK) != 0; t++) {
        struct timespec ts = {0, 100000000L};
        nanosleep(&ts, NULL);
    }
    int open = 0;
    for (int i = 0; i < n; i++) {
        if (fd[i] < 0)
            continue;
        char b;
        ssize_t r = recv(fd[i], &b, 1, MSG_DONTWAIT | MSG_PEEK);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            open++;
        close(fd[i]);
    }
    printf("open %d\n", open);
    free(fd);
    return 0;
}

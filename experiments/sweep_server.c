/*
 * A config's server, from start to stop: a free loopback port, the command
 * in its own session (so a terminal's Ctrl-C reaches the sweep, which stops
 * the server itself), readiness, and the stop of its whole process group
 * and nothing else.
 */
#define _DEFAULT_SOURCE /* setsid's friends, usleep-free nanosleep, dirent */
#include "experiments/sweep_internal.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

void lt__sweep_nap(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

void lt__sweep_fmt(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
}

int64_t lt__sweep_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int bind_loopback(uint16_t port, uint16_t *got)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int rc = bind(fd, (struct sockaddr *)&a, sizeof a);
    if (rc == 0 && got && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        *got = ntohs(a.sin_port);
    close(fd);
    return rc;
}

int lt__sweep_free_port(uint16_t *port, struct lt_err *err)
{
    if (bind_loopback(0, port) < 0)
        return lt_errset(err, LT_EIO, "no free loopback port: %s", strerror(errno));
    return 0;
}

bool lt__sweep_port_busy(uint16_t port)
{
    return bind_loopback(port, NULL) < 0;
}

/* in with {port} and {loadtrace} filled in. */
static int fill(const char *in, const char *exe, uint16_t port, char *out, size_t cap)
{
    size_t len = 0;
    char num[8];
    snprintf(num, sizeof num, "%u", port);
    for (const char *s = in; *s;) {
        const char *rep = NULL;
        size_t skip = 1;
        if (!strncmp(s, "{port}", 6))
            rep = num, skip = 6;
        else if (!strncmp(s, "{loadtrace}", 11))
            rep = exe, skip = 11;
        size_t n = rep ? strlen(rep) : 1;
        if (len + n + 1 > cap)
            return -1;
        memcpy(out + len, rep ? rep : s, n);
        len += n;
        s += skip;
    }
    out[len] = '\0';
    return 0;
}

/* The environment with k's variables set (replacing those of the same name). */
static char **make_env(const struct lt_sweep_config *k)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **e = calloc(n + k->n_env + 1, sizeof *e);
    if (!e)
        return NULL;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        bool over = false;
        for (size_t j = 0; j < k->n_env && !over; j++) {
            size_t kl = (size_t)(strchr(k->env[j], '=') - k->env[j]);
            over = !strncmp(environ[i], k->env[j], kl + 1);
        }
        if (!over)
            e[m++] = environ[i];
    }
    for (size_t j = 0; j < k->n_env; j++)
        e[m++] = k->env[j];
    return e;
}

int lt__sweep_server_start(const struct lt_sweep_config *k, const char *exe, uint16_t port,
                        const char *log, char *cmd_out, size_t cmd_cap, struct lt__sweep_server *s,
                        struct lt_err *err)
{
    memset(s, 0, sizeof *s);
    if (fill(k->command, exe, port, cmd_out, cmd_cap) < 0)
        return lt_errset(err, LT_ELIMIT, "the command of %s is too long", k->name);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return lt_errset(err, LT_EIO, "%s: %s", log, strerror(errno));
    dprintf(fd, "# loadtrace sweep: starting %s on port %u: %s\n", k->name, port, cmd_out);
    char **env = make_env(k);
    if (!env) {
        close(fd);
        return lt_errset(err, LT_ENOMEM, "out of memory");
    }
    char *argv[] = {"sh", "-c", cmd_out, NULL};
    pid_t pid = fork();
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        setsid();
        if (in >= 0)
            dup2(in, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execve("/bin/sh", argv, env);
        _exit(127);
    }
    int e = errno;
    free(env);
    close(fd);
    if (pid < 0)
        return lt_errset(err, LT_EIO, "cannot start %s: %s", k->name, strerror(e));
    s->pid = pid;
    s->port = port;
    snprintf(s->url, sizeof s->url, "http://127.0.0.1:%u", port);
    return 0;
}

bool lt__sweep_server_exited(struct lt__sweep_server *s)
{
    if (!s->pid || s->exited)
        return s->exited;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)s->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid) {
        s->exited = true;
        s->status = si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
    }
    return s->exited;
}

static size_t collect(char *data, size_t size, size_t n, void *ud)
{
    struct {
        char *buf;
        size_t cap, len;
    } *b = ud;
    size_t all = size * n, room = b->cap - 1 - b->len;
    size_t take = all < room ? all : room;
    memcpy(b->buf + b->len, data, take);
    b->len += take;
    b->buf[b->len] = '\0';
    return all;
}

int lt__sweep_http(const char *url, const char *body, int64_t timeout_us, long *status, char *buf,
                size_t cap)
{
    *status = 0;
    if (cap)
        buf[0] = '\0';
    CURL *h = curl_easy_init();
    if (!h)
        return LT_ENOMEM;
    struct {
        char *buf;
        size_t cap, len;
    } b = {buf, cap, 0};
    char sink[1];
    if (!cap)
        b.buf = sink, b.cap = 1;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout_us / 1000));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_PROXY, "");
    struct curl_slist *hd = NULL;
    if (body) {
        hd = curl_slist_append(hd, "Content-Type: application/json");
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    }
    CURLcode rc = curl_easy_perform(h);
    if (rc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    return rc == CURLE_OK ? 0 : LT_EIO;
}

/* The last line of the log, for an error that names it. */
static void last_line(const char *log, char *out, size_t cap)
{
    out[0] = '\0';
    FILE *f = fopen(log, "rb");
    if (!f)
        return;
    char line[280];
    while (fgets(line, sizeof line, f))
        if (line[0] != '\n' && line[0] != '#') {
            line[strcspn(line, "\n")] = '\0';
            snprintf(out, cap, "%s", line);
        }
    fclose(f);
}

int lt__sweep_wait_ready(const char *base_url, const struct lt_sweep_config *k,
                      struct lt__sweep_server *s, const char *log, volatile sig_atomic_t *stop,
                      struct lt_err *err)
{
    int64_t end = lt__sweep_now_us() + k->start_timeout_us;
    char url[512], body[4096], last[300];
    long st_h = 0, st_m = 0;
    for (;;) {
        if (s && lt__sweep_server_exited(s)) {
            last_line(log, last, sizeof last);
            return lt_errset(err, LT_EIO,
                             "the server exited (status %d) before it was ready; its log %s "
                             "ends: %s",
                             s->status, log, last[0] ? last : "(empty)");
        }
        if (stop && *stop)
            return lt_errset(err, LT_EIO, "stopped while waiting for the server");
        snprintf(url, sizeof url, "%s%s", base_url, k->health);
        if (lt__sweep_http(url, NULL, k->probe_timeout_us, &st_h, NULL, 0) == 0 && st_h / 100 == 2) {
            snprintf(url, sizeof url, "%s/v1/models", base_url);
            if (lt__sweep_http(url, NULL, k->probe_timeout_us, &st_m, body, sizeof body) == 0 &&
                st_m / 100 == 2 && strstr(body, "\"id\""))
                return 0;
        }
        if (lt__sweep_now_us() >= end)
            break;
        lt__sweep_nap(50);
    }
    const char *h = !st_h ? "no answer" : st_h / 100 == 2 ? "ok" : "an error status";
    const char *m = !st_m ? "no answer" : st_m / 100 == 2 ? "no model listed" : "an error status";
    if (!s)
        return lt_errset(
            err, LT_EIO, "%s is not ready after %.0f s (GET %s: %s; GET /v1/models: %s)", base_url,
            (double)k->start_timeout_us / 1e6, k->health, h, st_h / 100 == 2 ? m : "not asked");
    last_line(log, last, sizeof last);
    return lt_errset(err, LT_EIO,
                     "not ready after %.0f s (GET %s: %s; GET /v1/models: %s); see its log %s "
                     "(last line: %s)",
                     (double)k->start_timeout_us / 1e6, k->health, h,
                     st_h / 100 == 2 ? m : "not asked", log, last[0] ? last : "none");
}

/* Whether any process of group pgid is alive, the zombie leader aside. */
static bool group_alive(pid_t pgid)
{
    DIR *d = opendir("/proc");
    if (!d)
        return kill(-pgid, 0) == 0;
    bool alive = false;
    struct dirent *e;
    while (!alive && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[300], buf[512];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *p = strrchr(buf, ')'); /* the name may hold spaces */
        char state = 0;
        long pp = 0, pg = 0;
        if (p && sscanf(p + 1, " %c %ld %ld", &state, &pp, &pg) == 3 && pg == pgid &&
            state != 'Z' && state != 'X')
            alive = true;
    }
    closedir(d);
    return alive;
}

void lt__sweep_server_stop(struct lt__sweep_server *s, int64_t grace_us)
{
    if (!s->pid)
        return;
    bool was_gone = lt__sweep_server_exited(s) && !group_alive(s->pid);
    int64_t t0 = lt__sweep_now_us();
    if (was_gone) {
        snprintf(s->stopped, sizeof s->stopped, "had exited (status %d)", s->status);
    } else {
        kill(-s->pid, SIGTERM);
        while (group_alive(s->pid) && lt__sweep_now_us() - t0 < grace_us)
            lt__sweep_nap(20);
        if (group_alive(s->pid)) {
            kill(-s->pid, SIGKILL);
            for (int i = 0; i < 500 && group_alive(s->pid); i++)
                lt__sweep_nap(10);
            snprintf(s->stopped, sizeof s->stopped,
                     "still running %.1f s after SIGTERM: the group was killed (SIGKILL)",
                     (double)grace_us / 1e6);
        } else
            snprintf(s->stopped, sizeof s->stopped, "stopped by SIGTERM in %.2f s",
                     (double)(lt__sweep_now_us() - t0) / 1e6);
    }
    int st = 0;
    while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR)
        ;
    s->pid = 0;
}

int lt__sweep_child_start(const char *exe, char *const *argv, const char *log, pid_t *pid,
                       struct lt_err *err)
{
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return lt_errset(err, LT_EIO, "%s: %s", log, strerror(errno));
    dprintf(fd, "# loadtrace sweep: running");
    for (size_t i = 0; argv[i]; i++)
        dprintf(fd, " %s", argv[i]);
    dprintf(fd, "\n");
    pid_t p = fork();
    if (p == 0) {
        /* Its own group: the sweep alone decides when it stops. */
        setpgid(0, 0);
        int in = open("/dev/null", O_RDONLY);
        if (in >= 0)
            dup2(in, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execv(exe, argv);
        _exit(127);
    }
    int e = errno;
    close(fd);
    if (p < 0)
        return lt_errset(err, LT_EIO, "cannot run %s: %s", exe, strerror(e));
    *pid = p;
    return 0;
}

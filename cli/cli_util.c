#include "cli/cli_util.h"

#include "replay/replay.h"

#include <errno.h>
#include <signal.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "loadtrace %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

bool cli_parse_u64(const char *s, uint64_t *v)
{
    if (!s || !*s || *s == '-')
        return false;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || *end)
        return false;
    *v = x;
    return true;
}

bool cli_parse_double(const char *s, double *v)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || *end || !isfinite(x))
        return false;
    *v = x;
    return true;
}

bool cli_parse_duration_us(const char *s, int64_t *us)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || end == s || !isfinite(x) || x < 0)
        return false;
    double mult;
    if (!*end || !strcmp(end, "s"))
        mult = 1e6;
    else if (!strcmp(end, "ms"))
        mult = 1e3;
    else if (!strcmp(end, "us"))
        mult = 1;
    else if (!strcmp(end, "m") || !strcmp(end, "min"))
        mult = 60e6;
    else if (!strcmp(end, "h"))
        mult = 3600e6;
    else
        return false;
    double v = x * mult;
    if (v > 9.0e18)
        return false;
    *us = (int64_t)llround(v);
    return true;
}

int cli_parse_u32_list(const char *s, uint32_t *out, int max)
{
    int n = 0;
    const char *p = s;
    while (*p) {
        if (n == max)
            return -1;
        char *end;
        errno = 0;
        unsigned long x = strtoul(p, &end, 10);
        if (errno || end == p || x == 0 || x > UINT32_MAX || (*end && *end != ','))
            return -1;
        out[n++] = (uint32_t)x;
        p = *end ? end + 1 : end;
    }
    return n ? n : -1;
}

bool cli_dry_run(void)
{
    const char *v = getenv("LOADTRACE_DRY_RUN");
    return v && *v && strcmp(v, "0") != 0;
}

bool cli_progress_wanted(void)
{
    return isatty(STDERR_FILENO) == 1;
}

static struct lt_replay *g_replay;

static void on_stop_signal(int sig)
{
    (void)sig;
    if (g_replay)
        lt_replay_stop(g_replay);
}

int cli_replay_run(struct lt_replay *rp, struct lt_err *err)
{
    g_replay = rp;
    struct sigaction sa = {0};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int rc = lt_replay_run(rp, err);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    g_replay = NULL;
    return rc;
}

#include "cli/cli_util.h"

#include "base/lt_dur.h"
#include "plan/plan_jobs.h"
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
    return lt_dur_parse(s, LT_DUR_BARE_S, us, NULL) == 0;
}

bool cli_parse_u64_in(const char *cmd, const char *opt, const char *text, uint64_t lo, uint64_t hi,
                      uint64_t *out)
{
    uint64_t v;
    if (cli_parse_u64(text, &v) && v >= lo && v <= hi) {
        *out = v;
        return true;
    }
    if (hi != UINT64_MAX)
        cli_error(cmd, "%s '%s': expected a whole number from %llu to %llu", opt, text,
                  (unsigned long long)lo, (unsigned long long)hi);
    else if (lo > 0)
        cli_error(cmd, "%s '%s': expected a whole number of at least %llu", opt, text,
                  (unsigned long long)lo);
    else
        cli_error(cmd, "%s '%s': expected a whole number", opt, text);
    return false;
}

bool cli_parse_double_in(const char *cmd, const char *opt, const char *text, double lo, double hi,
                         double *out)
{
    double v;
    if (cli_parse_double(text, &v) && v > lo && v < hi) {
        *out = v;
        return true;
    }
    if (isinf(hi))
        cli_error(cmd, "%s '%s': expected a number above %g", opt, text, lo);
    else
        cli_error(cmd, "%s '%s': expected a number above %g and below %g", opt, text, lo, hi);
    return false;
}

bool cli_parse_duration_in(const char *cmd, const char *opt, const char *text, int64_t lo_us,
                           int64_t *out)
{
    int64_t v;
    struct lt_err err = {0};
    if (lt_dur_parse(text, LT_DUR_BARE_S, &v, &err) < 0) {
        cli_error(cmd, "%s %s", opt, err.msg); /* "OPT 'TEXT' is not a duration ..." */
        return false;
    }
    if (v < lo_us && lo_us == 1) {
        cli_error(cmd, "%s '%s': expected a duration above 0", opt, text);
        return false;
    }
    if (v < lo_us) {
        char least[32];
        lt_dur_format(least, sizeof least, lo_us);
        cli_error(cmd, "%s '%s': expected a duration of at least %s", opt, text, least);
        return false;
    }
    *out = v;
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

int cli_write_port_file(const char *path, unsigned port)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        return -1;
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int bad = fprintf(f, "%u\n", port) < 0;
    bad |= fclose(f) != 0;
    /* Renamed into place so a reader never sees a half-written number. */
    if (bad || rename(tmp, path) != 0)
        return -1;
    return 0;
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
static volatile sig_atomic_t g_stop_sig; /* the signal that stopped the replay */

static void on_stop_signal(int sig)
{
    g_stop_sig = sig;
    if (g_replay)
        lt_replay_stop(g_replay);
}

int cli_replay_run(struct lt_replay *rp, struct lt_err *err)
{
    g_replay = rp;
    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    if (g_stop_sig) /* it came before the run could be told */
        lt_replay_stop(rp);
    int rc = lt_replay_run(rp, err);
    /* back to what was there: a search keeps catching between its probes */
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    g_replay = NULL;
    return rc;
}

void cli_stop_catch(bool on)
{
    struct sigaction sa = {0};
    sa.sa_handler = on ? on_stop_signal : SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int cli_stop_signal(void)
{
    return (int)g_stop_sig;
}

bool cli_parse_slo(const char *s, int64_t *ttft_us, int64_t *tpot_us, int64_t *e2e_us, double *pct)
{
    char buf[256];
    if (strlen(s) >= sizeof buf)
        return false;
    memcpy(buf, s, strlen(s) + 1);
    if (pct)
        *pct = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *val = strchr(tok, '=');
        char *colon = strchr(tok, ':');
        if (colon && pct) { /* "ttft:p99<=2s" */
            char *le = strstr(colon, "<=");
            double p;
            if (!le || colon[1] != 'p')
                return false;
            *le = '\0';
            if (!cli_parse_double(colon + 2, &p) || !(p > 0 && p < 100))
                return false;
            p /= 100;
            if (*pct > 0 && *pct != p)
                return false;
            *pct = p;
            *colon = '\0';
            val = le + 1;
        } else if (!val) {
            return false;
        }
        int64_t us;
        if (!cli_parse_duration_us(val + 1, &us) || us <= 0)
            return false;
        *val = '\0';
        if (!strcmp(tok, "ttft"))
            *ttft_us = us;
        else if (!strcmp(tok, "tpot"))
            *tpot_us = us;
        else if (!strcmp(tok, "e2e"))
            *e2e_us = us;
        else
            return false;
    }
    return true;
}

void cli_print_sample(const char *cmd, const struct lt_plan_sample *s)
{
    if (!s)
        return;
    fprintf(stderr,
            "loadtrace %s: sample: %llu of %llu requests, %llu of %llu sessions, each session "
            "whole (kept where its first request falls)\n",
            cmd, (unsigned long long)s->requests, (unsigned long long)s->of_requests,
            (unsigned long long)s->sessions, (unsigned long long)s->of_sessions);
}

int cli_replay_status(bool stopped, uint64_t requests, uint64_t ok)
{
    if (stopped)
        return 128 + (g_stop_sig ? (int)g_stop_sig : SIGINT);
    if (requests && !ok)
        return 3;
    return ok < requests ? 1 : 0;
}

int cli_fail_status(const struct lt_err *err)
{
    return err && err->code == LT_EUSAGE ? 2 : 1;
}

const char *cli_api_key(const char *key_env, bool anthropic, bool *openai_style)
{
    const char *key = key_env ? getenv(key_env) : NULL;
    *openai_style = true;
    if (!key_env && anthropic) {
        key = getenv("ANTHROPIC_API_KEY");
        *openai_style = !key || !*key;
    }
    if (!key_env && (!key || !*key))
        key = getenv("OPENAI_API_KEY");
    return key && *key ? key : NULL;
}

#include "cli/cli_util.h"

#include "base/lt_dur.h"
#include "plan/plan_jobs.h"
#include "plan/plan_engine.h"
#include "replay/replay.h"

#include <errno.h>
#include <getopt.h>
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

/* Levenshtein distance, for words of options and commands (short): one
 * row of the table on the stack; longer words are never near. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t row[65];
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *cli_nearest(const char *word, const char *const *cands, size_t n)
{
    const char *best = NULL;
    size_t bd = SIZE_MAX, len = strlen(word);
    size_t limit = len / 3 > 2 ? len / 3 : 2;
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(word, cands[i]);
        if (d < bd) {
            bd = d;
            best = cands[i];
        }
    }
    return bd <= limit && bd < len ? best : NULL;
}

int cli_bad_option(const char *cmd, const struct option *opts, char **argv)
{
    /* getopt_long has moved optind past the word it could not use */
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    if (strncmp(arg, "--", 2)) {
        cli_error(cmd,
                  "option -%c is unknown or needs a value (loadtrace help %s lists every option)",
                  optopt > 32 && optopt < 127 ? optopt : '?', cmd);
        return 2;
    }
    char name[128];
    const char *eq = strchr(arg + 2, '=');
    size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
    if (len >= sizeof name)
        len = sizeof name - 1;
    memcpy(name, arg + 2, len);
    name[len] = '\0';
    const char *names[256];
    size_t n = 0, prefixed = 0;
    char cands[512] = "";
    for (const struct option *o = opts; o->name && n < 256; o++) {
        names[n++] = o->name;
        if (!strcmp(o->name, name)) {
            if (o->has_arg == required_argument)
                cli_error(cmd, "option --%s needs a value (loadtrace help %s)", name, cmd);
            else
                cli_error(cmd, "option --%s takes no value (loadtrace help %s)", name, cmd);
            return 2;
        }
        if (len && !strncmp(o->name, name, len)) {
            size_t u = strlen(cands);
            snprintf(cands + u, sizeof cands - u, "%s--%s", prefixed++ ? ", " : "", o->name);
        }
    }
    if (prefixed > 1) {
        cli_error(cmd, "option --%s is ambiguous: %s", name, cands);
        return 2;
    }
    const char *near = cli_nearest(name, names, n);
    if (near)
        cli_error(cmd,
                  "unknown option --%s: did you mean --%s? (loadtrace help %s lists every option)",
                  name, near, cmd);
    else
        cli_error(cmd, "unknown option --%s (loadtrace help %s lists every option)", name, cmd);
    return 2;
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
static struct lt_engine *g_engine;
static volatile sig_atomic_t g_stop_sig; /* the signal that stopped the replay */

static void on_stop_signal(int sig)
{
    g_stop_sig = sig;
    if (g_replay)
        lt_replay_stop_signal(g_replay, sig);
    if (g_engine)
        lt_engine_stop(g_engine, sig);
}

/* Catch SIGINT and SIGTERM into on_stop_signal (old: what was there). */
static void catch_stop(struct sigaction *old_int, struct sigaction *old_term)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, old_int);
    sigaction(SIGTERM, &sa, old_term);
}

int cli_replay_run(struct lt_replay *rp, struct lt_err *err)
{
    g_replay = rp;
    struct sigaction old_int, old_term;
    catch_stop(&old_int, &old_term);
    if (g_stop_sig) /* it came before the run could be told */
        lt_replay_stop(rp);
    int rc = lt_replay_run(rp, err);
    /* back to what was there: a search keeps catching between its probes */
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    g_replay = NULL;
    return rc;
}

int cli_engine_run(struct lt_engine *e, const struct lt_engine_sink *sink, struct lt_err *err)
{
    g_engine = e;
    struct sigaction old_int, old_term;
    catch_stop(&old_int, &old_term);
    if (g_stop_sig) /* it came before the run could be told */
        lt_engine_stop(e, g_stop_sig);
    int rc = lt_engine_run(e, sink, err);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    g_engine = NULL;
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

const char *cli_stop_name(void *ud)
{
    (void)ud;
    int sig = (int)g_stop_sig;
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig ? "a signal" : NULL;
}

bool cli_parse_slo(const char *cmd, const char *s, int64_t *ttft_us, int64_t *tpot_us,
                   int64_t *e2e_us, double *pct)
{
    static const char *const keys[] = {"ttft", "tpot", "e2e"};
    int64_t *const lim[] = {ttft_us, tpot_us, e2e_us};
    const char *form = pct ? "ttft=DUR,tpot=DUR,e2e=DUR or KEY:pP<=DUR (any of them, each once)"
                           : "ttft=DUR,tpot=DUR,e2e=DUR (any of them, each once)";
    char buf[256];
    size_t len = strlen(s);
    if (len >= sizeof buf) {
        cli_error(cmd, "--slo: longer than %zu characters", sizeof buf - 1);
        return false;
    }
    /* An SLO that names no limit would pass every request: "meets it" at any
     * load is no answer. */
    if (!len) {
        cli_error(cmd, "--slo '': names no limit; it wants %s", form);
        return false;
    }
    memcpy(buf, s, len + 1);
    if (pct)
        *pct = 0;
    int64_t got[3] = {0};
    char *tok = buf;
    for (;;) {
        char *comma = strchr(tok, ',');
        if (comma)
            *comma = '\0';
        if (!*tok) {
            cli_error(cmd, "--slo '%s': an empty limit (two commas, or one at an end); it wants %s",
                      s, form);
            return false;
        }
        char *val = strchr(tok, '=');
        char *colon = strchr(tok, ':');
        if (colon && pct && (!val || colon < val)) { /* "ttft:p99<=2s" */
            char *le = strstr(colon, "<=");
            double p;
            if (!le || colon[1] != 'p') {
                cli_error(cmd, "--slo '%s': '%s' is not KEY:pP<=DUR", s, tok);
                return false;
            }
            *le = '\0';
            /* The percentile becomes the share to attain: --attain's range. */
            if (!cli_parse_double(colon + 2, &p) || !(p > 100 * CLI_ATTAIN_MIN) ||
                !(p < 100 * CLI_ATTAIN_MAX)) {
                cli_error(cmd,
                          "--slo '%s': percentile p%s: expected a number above %g and below %g "
                          "(--attain's range, %g to %g)",
                          s, colon + 2, 100 * CLI_ATTAIN_MIN, 100 * CLI_ATTAIN_MAX, CLI_ATTAIN_MIN,
                          CLI_ATTAIN_MAX);
                return false;
            }
            p /= 100;
            if (*pct > 0 && *pct != p) {
                cli_error(cmd, "--slo '%s': names p%g and p%g; one spec takes one percentile", s,
                          100 * *pct, 100 * p);
                return false;
            }
            *pct = p;
            *colon = '\0';
            val = le + 1;
        } else if (!val) {
            cli_error(cmd, "--slo '%s': '%s' has no limit; it wants %s", s, tok, form);
            return false;
        }
        *val = '\0';
        int k = 0;
        while (k < 3 && strcmp(tok, keys[k]))
            k++;
        if (k == 3) {
            cli_error(cmd, "--slo '%s': unknown key '%s'; it wants %s", s, tok, form);
            return false;
        }
        int64_t us;
        if (!cli_parse_duration_us(val + 1, &us) || us <= 0) {
            cli_error(cmd, "--slo '%s': %s limit '%s' is not a duration above 0 (500ms, 2s)", s,
                      tok, val + 1);
            return false;
        }
        if (got[k]) {
            cli_error(cmd, "--slo '%s': %s is given twice; which limit holds?", s, tok);
            return false;
        }
        got[k] = us;
        if (!comma)
            break;
        tok = comma + 1;
    }
    for (int k = 0; k < 3; k++)
        if (got[k])
            *lim[k] = got[k];
    return true;
}

void cli_print_sample(const char *cmd, const struct lt_plan_jobs_sample *s)
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

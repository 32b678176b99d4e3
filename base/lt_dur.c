/*
 * The duration grammar (see lt_dur.h): a number, then a unit looked up in
 * one table, so adding a unit adds it everywhere.
 */
#include "base/lt_dur.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    double us;
} units[] = {
    {"us", 1}, {"ms", 1e3}, {"s", 1e6}, {"m", 60e6}, {"min", 60e6}, {"h", 3600e6}, {"d", 86400e6},
};

static int bad(struct lt_err *err, const char *s, size_t len)
{
    return lt_errset(err, LT_EFORMAT,
                     "'%.*s' is not a duration (a number and a unit: " LT_DUR_UNITS ")",
                     (int)(len > 64 ? 64 : len), s);
}

int lt_dur_scan(const char *s, const char **end, int64_t bare_us, int64_t *us, struct lt_err *err)
{
    char *e;
    errno = 0;
    double x = strtod(s, &e);
    const char *u = e;
    while (isalpha((unsigned char)*u))
        u++;
    if (e == s || errno || !isfinite(x) || x < 0)
        return bad(err, s, (size_t)(u - s));
    size_t n = (size_t)(u - e);
    double mult = n ? -1 : (double)bare_us;
    for (size_t i = 0; n && i < sizeof units / sizeof units[0]; i++)
        if (strlen(units[i].name) == n && !memcmp(units[i].name, e, n))
            mult = units[i].us;
    if (mult < 0)
        return bad(err, s, (size_t)(u - s));
    double v = x * mult;
    if (v > (double)LT_DUR_MAX_US)
        return lt_errset(err, LT_EFORMAT, "'%.*s' is too long a duration (at most 31 years)",
                         (int)(u - s > 64 ? 64 : u - s), s);
    *us = (int64_t)llround(v);
    *end = u;
    return 0;
}

int lt_dur_parse(const char *s, int64_t bare_us, int64_t *us, struct lt_err *err)
{
    const char *end;
    int64_t v;
    if (!s)
        return lt_errset(err, LT_EFORMAT, "a duration is missing");
    int rc = lt_dur_scan(s, &end, bare_us, &v, err);
    if (rc == 0 && *end)
        return bad(err, s, strlen(s));
    if (rc == 0)
        *us = v;
    return rc;
}

int lt_dur_say(char *buf, size_t n, double s)
{
    if (s < 90)
        return snprintf(buf, n, "%.0f s", s);
    if (s < 5400)
        return snprintf(buf, n, "%.1f min", s / 60);
    return snprintf(buf, n, "%.1f h", s / 3600);
}

int lt_dur_format(char *buf, size_t n, int64_t us)
{
    static const struct {
        const char *name;
        int64_t us;
    } by[] = {{"d", INT64_C(86400000000)},
              {"h", INT64_C(3600000000)},
              {"m", 60000000},
              {"s", 1000000},
              {"ms", 1000},
              {"us", 1}};
    size_t i = 0;
    while (us != 0 && us % by[i].us != 0)
        i++;
    if (us == 0)
        i = 3; /* "0s" */
    return snprintf(buf, n, "%lld%s", (long long)(us / by[i].us), by[i].name);
}

#include "base/lt_time.h"
#include "base/lt_err.h"

#include <stdbool.h>

#include <stdio.h>
#include <sys/timerfd.h>
#include <time.h>

lt_mono lt_mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (lt_mono){(int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec};
}

void lt_mono_timer_at(int fd, lt_mono at, int64_t interval_ns)
{
    struct itimerspec its = {0};
    int64_t ns = at.ns > 0 ? at.ns : 1;
    its.it_value.tv_sec = (time_t)(ns / 1000000000);
    its.it_value.tv_nsec = (long)(ns % 1000000000);
    if (interval_ns > 0) {
        its.it_interval.tv_sec = (time_t)(interval_ns / 1000000000);
        its.it_interval.tv_nsec = (long)(interval_ns % 1000000000);
    }
    timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
}

void lt_mono_timer_off(int fd)
{
    struct itimerspec its = {0};
    timerfd_settime(fd, 0, &its, NULL);
}

void lt_wall_rfc3339(char buf[32])
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    /* tm fields are range-limited, but the compiler cannot know: clamp the
     * year so the output provably fits. */
    unsigned year = (unsigned)(tm.tm_year + 1900) % 10000u;
    snprintf(buf, 32, "%04u-%02u-%02uT%02u:%02u:%02u.%06uZ", year, (unsigned)(tm.tm_mon + 1) % 100u,
             (unsigned)tm.tm_mday % 100u, (unsigned)tm.tm_hour % 100u, (unsigned)tm.tm_min % 100u,
             (unsigned)tm.tm_sec % 100u, (unsigned)(ts.tv_nsec / 1000) % 1000000u);
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
 * (Howard Hinnant's days_from_civil), so no timezone state is involved. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
    static const int len[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return len[m - 1] + (m == 2 && leap);
}

static int digits(const char *s, size_t len, size_t *i, int n, int *v)
{
    *v = 0;
    for (int k = 0; k < n; k++, (*i)++) {
        if (*i >= len || s[*i] < '0' || s[*i] > '9')
            return -1;
        *v = *v * 10 + (s[*i] - '0');
    }
    return 0;
}

int lt_parse_datetime_us(const char *s, size_t len, int64_t *us)
{
    size_t i = 0;
    int y, mo, d, h, mi, se;
    if (digits(s, len, &i, 4, &y) || i >= len || s[i++] != '-' || digits(s, len, &i, 2, &mo) ||
        i >= len || s[i++] != '-' || digits(s, len, &i, 2, &d) || i >= len ||
        (s[i] != ' ' && s[i] != 'T') || (++i, digits(s, len, &i, 2, &h)) || i >= len ||
        s[i++] != ':' || digits(s, len, &i, 2, &mi) || i >= len || s[i++] != ':' ||
        digits(s, len, &i, 2, &se))
        return LT_EFORMAT;
    /* A day the month does not have (2023-02-30) is refused, not carried
     * into the next month. */
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || se > 60)
        return LT_EFORMAT;
    int64_t frac_us = 0;
    if (i < len && s[i] == '.') {
        i++;
        int64_t scale = 100000;
        int nd = 0, round_digit = -1;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            if (nd < 6)
                frac_us += (s[i] - '0') * scale, scale /= 10;
            else if (nd == 6)
                round_digit = s[i] - '0';
            nd++, i++;
        }
        if (nd == 0)
            return LT_EFORMAT;
        if (round_digit >= 5)
            frac_us++;
    }
    if (i < len && s[i] == 'Z')
        i++;
    if (i != len)
        return LT_EFORMAT;
    int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
    *us = secs * 1000000 + frac_us;
    return 0;
}

/*
 * Time. Monotonic time (for measuring) has its own type so that it can never
 * be mixed up with wall-clock time (for labelling files and runs) or with the
 * microsecond offsets stored in traces.
 */
#ifndef LT_TIME_H
#define LT_TIME_H

#include <stdint.h>
#include <stddef.h>

/* A reading of CLOCK_MONOTONIC, in nanoseconds. Compare and subtract only
 * with the functions below. */
typedef struct {
    int64_t ns;
} lt_mono;

lt_mono lt_mono_now(void);
static inline int64_t lt_mono_diff_ns(lt_mono later, lt_mono earlier)
{
    return later.ns - earlier.ns;
}
static inline int64_t lt_mono_diff_us(lt_mono later, lt_mono earlier)
{
    return (later.ns - earlier.ns) / 1000;
}
static inline lt_mono lt_mono_add_ns(lt_mono t, int64_t ns)
{
    t.ns += ns;
    return t;
}

/* Arm a CLOCK_MONOTONIC timerfd for the absolute time at (a time at or
 * before the clock's start fires at once: 0 would disarm it), then every
 * interval_ns when that is above 0; and disarm one. One home for the
 * engines' timers (replay's schedule, tick, cancellations and scrapes, the
 * sim's model). */
void lt_mono_timer_at(int fd, lt_mono at, int64_t interval_ns);
void lt_mono_timer_off(int fd);

/* Current wall-clock time as RFC 3339 UTC with microseconds,
 * e.g. "2026-11-29T08:04:22.123456Z". buf must hold 32 bytes. */
void lt_wall_rfc3339(char buf[32]);

/* Parse "YYYY-MM-DD HH:MM:SS[.fffffff]" or the same with 'T' and an optional
 * trailing 'Z' (UTC assumed) into microseconds since the Unix epoch.
 * Any number of fractional digits is accepted; digits past the sixth are
 * rounded. Returns 0, or LT_EFORMAT. */
int lt_parse_datetime_us(const char *s, size_t len, int64_t *us);

#endif

/*
 * Durations as people type them: the one grammar every option, fault spec
 * and shape uses, so "1h" means the same thing wherever a duration goes.
 *
 * A duration is a non-negative decimal number (as strtod reads it: "2",
 * "1.5", "2e3") followed by one unit: us, ms, s, m or min, h, d. A number
 * without a unit is in the caller's default unit (seconds everywhere
 * today). The largest is LT_DUR_MAX_US, about 31 years, so that a duration
 * in nanoseconds still fits in 64 bits with room to add a clock reading.
 */
#ifndef LT_DUR_H
#define LT_DUR_H

#include "base/lt_err.h"

#include <stddef.h>
#include <stdint.h>

#define LT_DUR_MAX_US INT64_C(1000000000000000)
/* The units, for messages and help text. */
#define LT_DUR_UNITS "us, ms, s, m, h or d"

/* Default units of a bare number, in microseconds. */
enum { LT_DUR_BARE_US = 1, LT_DUR_BARE_MS = 1000, LT_DUR_BARE_S = 1000000 };

/* Read a duration at the start of s (it may go on after it: "24h,0.6");
 * *end receives where it stopped. The unit is the run of letters after the
 * number. Returns 0 with *us rounded to the microsecond, or LT_EFORMAT and
 * an error naming the duration's text. */
int lt_dur_scan(const char *s, const char **end, int64_t bare_us, int64_t *us, struct lt_err *err);
/* The whole of s is one duration; otherwise like lt_dur_scan. */
int lt_dur_parse(const char *s, int64_t bare_us, int64_t *us, struct lt_err *err);

/* Write us (>= 0) to buf in the largest unit that holds it exactly
 * ("90s", "1500ms", "2h", "250us", "0s"), text lt_dur_parse reads back
 * to the same value. Returns what snprintf returns. */
int lt_dur_format(char *buf, size_t n, int64_t us);

/* A length of time s (seconds) as a reader takes it in, to a tenth of
 * its unit: "42 s" under 90 s, "2.6 min" under 90 minutes, else "1.5 h".
 * Returns what snprintf returns. */
int lt_dur_say(char *buf, size_t n, double s);

#endif

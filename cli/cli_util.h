/*
 * Small helpers every subcommand shares: reporting errors the same way,
 * parsing the numbers, durations and lists users type, and knowing whether
 * a progress line belongs on stderr.
 */
#ifndef LT_CLI_UTIL_H
#define LT_CLI_UTIL_H

#include <stdbool.h>
#include <stdint.h>

/* Print "loadtrace CMD: message" to stderr. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parse a whole string; false on any trailing garbage or overflow. */
bool cli_parse_u64(const char *s, uint64_t *v);
bool cli_parse_double(const char *s, double *v);
/* A duration such as "500ms", "2s", "1.5m", "1h", "250us"; a bare number
 * is seconds. Result in microseconds. */
bool cli_parse_duration_us(const char *s, int64_t *us);
/* A comma-separated list of positive integers ("1,4,16,32"); at most max. */
int cli_parse_u32_list(const char *s, uint32_t *out, int max);

/* True when LOADTRACE_DRY_RUN is set: a command parses and checks its
 * options, then returns 0 without doing the work. The README test runs
 * every command line of the README this way, so the README cannot rot. */
bool cli_dry_run(void);

/* True when progress lines should be drawn (stderr is a terminal). */
bool cli_progress_wanted(void);

struct lt_replay;
struct lt_err;
/* lt_replay_run(), with SIGINT and SIGTERM stopping the replay (it ends
 * its requests and records every one) instead of killing the process;
 * the default handlers are back when it returns. */
int cli_replay_run(struct lt_replay *rp, struct lt_err *err);

#endif

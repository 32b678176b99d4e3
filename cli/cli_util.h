/*
 * Small helpers every subcommand shares: reporting errors the same way,
 * parsing the numbers, durations and lists users type, writing port files,
 * and knowing whether a progress line belongs on stderr.
 */
#ifndef LT_CLI_UTIL_H
#define LT_CLI_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Print "loadtrace CMD: message" to stderr. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct option;
/* A getopt_long error ('?', with opterr 0) of command cmd, whose table is
 * opts: one line for what went wrong: an option that needs a value, an
 * ambiguous abbreviation (its candidates), or an unknown option with the
 * nearest known one ("did you mean --speed?"), and where the options are
 * listed. Returns 2, the usage error's status. */
int cli_bad_option(const char *cmd, const struct option *opts, char **argv);

/* The candidate nearest to word by edit distance, or NULL when none is
 * near enough to be a plausible typo (at most 2 edits, or a third of the
 * word's length). cands: n strings. */
const char *cli_nearest(const char *word, const char *const *cands, size_t n);

/* Parse SLOs "ttft=500ms,tpot=50ms,e2e=10s" (any of them; analyze's
 * --slo) into limits in microseconds (untouched when not given). With
 * pct non-NULL, the percentile form "ttft:p99<=2s" is accepted too: the
 * limit, and *pct = 0.99, the share of requests that must meet it (every
 * percentile form of one spec must name the same percentile); *pct is 0
 * when the spec has none; the percentile lies in --attain's range
 * (CLI_ATTAIN_MIN..MAX, both excluded). An empty spec, an empty limit, a key
 * given twice or a percentile out of that range is refused: false, with the
 * reason printed for cmd, and no limit touched. */
bool cli_parse_slo(const char *cmd, const char *s, int64_t *ttft_us, int64_t *tpot_us,
                   int64_t *e2e_us, double *pct);
/* The share of requests --attain may ask for (both bounds excluded). */
#define CLI_ATTAIN_MIN 0.01
#define CLI_ATTAIN_MAX 0.9999

/* Parse a whole string; false on any trailing garbage or overflow. */
bool cli_parse_u64(const char *s, uint64_t *v);
bool cli_parse_double(const char *s, double *v);
/* A duration in the one grammar (base/lt_dur.h: "500ms", "2s", "1.5m",
 * "1h", "250us"); a bare number is seconds. Result in microseconds. */
bool cli_parse_duration_us(const char *s, int64_t *us);

/* An option's value: parse text for option opt of command cmd and check its
 * range; on failure print one line naming the option, the text and what
 * was expected ("loadtrace CMD: OPT 'TEXT': expected ...") and return
 * false, so that an option case reads
 *     if (!cli_parse_u64_in("sim", "--threads", optarg, 1, 256, &u))
 *         return 2;
 * *out is written only on success. */
/* A whole number lo <= v <= hi (hi = UINT64_MAX: no upper bound). */
bool cli_parse_u64_in(const char *cmd, const char *opt, const char *text, uint64_t lo, uint64_t hi,
                      uint64_t *out);
/* A finite number lo < v < hi, both bounds excluded (hi = INFINITY: none). */
bool cli_parse_double_in(const char *cmd, const char *opt, const char *text, double lo, double hi,
                         double *out);
/* A duration (as cli_parse_duration_us) of at least lo_us microseconds. */
bool cli_parse_duration_in(const char *cmd, const char *opt, const char *text, int64_t lo_us,
                           int64_t *out);

/* A comma-separated list of positive integers ("1,4,16,32"); at most max. */
int cli_parse_u32_list(const char *s, uint32_t *out, int max);

/* Write "PORT\n" to path for scripts that start a server on port 0 and
 * need the one it got (capture, sim --port-file): written to PATH.tmp and
 * renamed into place. Returns 0 or -1. */
int cli_write_port_file(const char *path, unsigned port);

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
 * the handlers from before are back when it returns. */
int cli_replay_run(struct lt_replay *rp, struct lt_err *err);
/* The same for an engine's run into sink (plan/plan_engine.h): a signal
 * stops e (lt_engine_stop). */
struct lt_engine;
struct lt_engine_sink;
int cli_engine_run(struct lt_engine *e, const struct lt_engine_sink *sink, struct lt_err *err);
/* Catch SIGINT and SIGTERM outside a run too (on), or no longer (off):
 * a capacity search between its probes notes the signal and stops at the
 * next step, saying what it knew. */
void cli_stop_catch(bool on);
/* The signal that asked to stop (SIGINT, SIGTERM), 0 if none came. */
int cli_stop_signal(void);
/* The name of that signal ("SIGINT", "SIGTERM"), NULL before one came: the
 * virtual replay's stopped hook (ud unused). */
const char *cli_stop_name(void *ud);

/* The exit status of a replay that ran to its end or was stopped
 * (docs/cli.md): 128 + the signal that stopped it (130 SIGINT, 143
 * SIGTERM); 3 when none of its requests was ok; 1 when some failed; 0 when
 * every one was ok. Callers leave cancelled requests (closed where the
 * trace's client left) out of `requests`: they did not fail. */
int cli_replay_status(bool stopped, uint64_t requests, uint64_t ok);

/* The exit status of a command whose library call failed with err: 2 when
 * the options cannot apply to the input (LT_EUSAGE: a usage error, which
 * docs/cli.md gives 2), else 1 (the work failed). */
int cli_fail_status(const struct lt_err *err);

/* The line a replay starts with when --window or --requests sampled the
 * trace (plan/plan_jobs.h, lt_plan_jobs_sample): how many requests and
 * sessions were kept, of how many, and that sessions are kept whole.
 * Prints nothing for NULL. */
struct lt_plan_jobs_sample;
void cli_print_sample(const char *cmd, const struct lt_plan_jobs_sample *s);

/* The API key from the environment: the variable key_env names, else
 * ANTHROPIC_API_KEY (when anthropic: the Messages API) and then
 * OPENAI_API_KEY. NULL when unset or empty. *openai_style: it did not come
 * from ANTHROPIC_API_KEY (so the server may be an OpenAI-style one that
 * reads only a bearer token). */
const char *cli_api_key(const char *key_env, bool anthropic, bool *openai_style);

#endif

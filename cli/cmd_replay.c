/*
 * loadtrace replay: send a trace's requests to a server (or to a sim started
 * inside this process) and record what happened in a results file, then
 * print the run's summary through analyze. This file is its options (one
 * table, cli/cli_opts.h), their checks together, and the printing of a
 * live run (the progress line, the totals); the work is in replay/, and
 * the capacity search and the virtual engine's set-up in experiments/.
 */
#include "analyze/analyze.h"
#include "cli/cli_opts.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "base/lt_path.h"
#include "replay/replay_merge.h"
#ifdef LT_MPI
#include "cli/replay_ranks.h"
#include "replay/replay_mpi.h"
#endif
#include "cli/replay_search.h"
#include "cli/replay_virtual.h"
#include "cli/live_metrics.h"
#include "cli/ui_dash.h"
#include "replay/replay_live.h"
#include "cli/replay_fleet.h"
#include "replay/replay.h"
#include "sim/sim.h"

#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    O_TARGET = 256,
    O_MODEL,
    O_API,
    O_KEYENV,
    O_HEADER,
    O_INSECURE,
    O_SPROFILE,
    O_SDIALECT,
    O_SFAULTS,
    O_SLOG,
    O_SSCALE,
    O_SPEED,
    O_RATE,
    O_MAXGAP,
    O_WINDOW,
    O_DURATION,
    O_SPREAD,
    O_CONC,
    O_REQUESTS,
    O_WARMUP,
    O_ARRIVALS,
    O_MAXCONC,
    O_SEED,
    O_SYNTH,
    O_PROMPTS,
    O_NOIDS,
    O_NOFORCE,
    O_NOSTREAM,
    O_CHUNKUSAGE,
    O_EFFORT,
    O_DEFOUT,
    O_NOCALIB,
    O_NOCANCEL,
    O_TIMEOUT,
    O_FTT,
    O_CTIMEOUT,
    O_NOSUMMARY,
    O_RETRY,
    O_THINKING,
    O_VIRTUAL,
    O_MERGE,
    O_KEEP_PARTS,
    O_FINDMAX,
    O_SLO,
    O_ATTAIN,
    O_VFIRST,
    O_MAXPROBES,
    O_MAXTIME,
    O_PRECISION,
    O_SMETRICS,
    O_NOSMETRICS,
    O_MINTERVAL,
    O_MKEEP,
    O_MMAP,
    O_RESETPC,
    O_HCLIENT,
    O_UI,
    O_LIVE,
    O_LIVE_HOLD,
    O_MAXIMG,
    O_MLINKS,
    O_TARGETS,
    O_ROUTE,
    O_FAILOVER,
    O_REPLICAS,
};

/* --http-client and $LOADTRACE_HTTP_CLIENT. */
static bool parse_client(const char *v, enum lt_replay_client *out)
{
    if (!strcmp(v, "auto"))
        *out = LT_REPLAY_CLIENT_AUTO;
    else if (!strcmp(v, "curl"))
        *out = LT_REPLAY_CLIENT_CURL;
    else if (!strcmp(v, "lean"))
        *out = LT_REPLAY_CLIENT_LEAN;
    else
        return false;
    return true;
}

static int bad(const char *opt, const char *val)
{
    cli_error("replay", "%s: invalid value '%s' (see --help)", opt, val);
    return 2;
}

/* Its options, written once (cli/cli_opts.h): the usage, getopt's table,
 * the man page and the completions are made from them. A new option is
 * one line here and one case in the option function of its group. */
static const struct cli_opt replay_opts_table[] = {
    CLI_HEADING("Target:"),
    {"target", 0, "URL|sim", O_TARGET,
     "base URL (http://host:port), or sim: start the\n"
     "simulated server in this process on a free port\n"
     "\t--target URL1,URL2,...  a fleet: several replicas of one config, each request\n"
     "sent to the one --route picks; URL=W states a replica's\n"
     "capacity weight (docs/replay.md \"Fleets and routing\")"},
    {"targets", 0, "FILE", O_TARGETS, "the fleet from a file: \"URL [WEIGHT]\" a line"},
    {"route", 0, "POLICY", O_ROUTE,
     "round-robin (default), least-outstanding, session\n"
     "(sticky), prefix[:K] (consistent hashing of the first\n"
     "K prefix blocks, K=1, with bounded load), weighted"},
    {"failover", 0, NULL, O_FAILOVER,
     "a replica that fails (connect, a cut stream) is marked\n"
     "down and its requests go to another (default: errors)"},
    {"replicas", 0, "N", O_REPLICAS, "with --virtual: N model instances behind --route"},
    {"model", 0, "NAME", O_MODEL,
     "model to ask for, as given (default: the one GET\n"
     "/v1/models lists, asked within --timeout, at most 30 s)"},
    {"api", 0, "API", O_API,
     "chat (default), completions, responses, messages,\n"
     "sglang-generate; responses: OpenAI Responses\n"
     "(/v1/responses), messages: Anthropic Messages\n"
     "(/v1/messages, key sent as x-api-key)\n"
     "\t--api embeddings|rerank  /v1/embeddings or /v1/rerank: each record's messages\n"
     "are its inputs (rerank: a \"query\" and documents);\n"
     "no output, results counted in inputs/s (docs/multimodal.md)"},
    {"api-key-env", 0, "NAME", O_KEYENV,
     "take the API key from this environment variable\n"
     "(default OPENAI_API_KEY; with --api messages\n"
     "ANTHROPIC_API_KEY, sent as x-api-key, else\n"
     "OPENAI_API_KEY, sent as x-api-key and as a bearer token,\n"
     "which vLLM's /v1/messages reads); never give it as an\n"
     "argument"},
    {"header", 0, "'Name: value'", O_HEADER, "extra request header (repeatable)"},
    {"insecure", 0, NULL, O_INSECURE, "do not verify TLS certificates (DANGEROUS)"},
    {"http-client", 0, "auto|curl|lean", O_HCLIENT,
     "which HTTP client sends (default auto, or\n"
     "$LOADTRACE_HTTP_CLIENT): lean is replay's own HTTP/1.1\n"
     "client, for plain http:// without a proxy (auto's\n"
     "choice there); curl (libcurl) for TLS, HTTP/2, proxies"},
    {"sim-profile", 0, "P", O_SPROFILE, "the in-process sim's profile (loadtrace sim --help)"},
    {"profile", 0, "P", O_SPROFILE, "the same as --sim-profile (the server --virtual runs)"},
    {"sim-dialect", 0, "D", O_SDIALECT, "the in-process sim's dialect"},
    {"sim-faults", 0, "SPEC", O_SFAULTS, "faults the in-process sim injects"},
    {"sim-log", 0, "FILE", O_SLOG, "the in-process sim's log"},
    {"sim-time-scale", 0, "X", O_SSCALE, "the in-process sim runs X times faster"},
    {"virtual", 0, NULL, O_VIRTUAL,
     "with --target sim: run the sim's model in virtual time, no\n"
     "HTTP (an hour of trace in seconds); same load flags and\n"
     "results file; --profile P (= --sim-profile) picks the\n"
     "server; no faults, no --no-force-length (docs/sim.md)"},
    CLI_SECTION("Load (trace time is the default: requests leave at their recorded times):"),
    {"speed", 0, "X", O_SPEED, "compress time X times"},
    {"rate", 0, "R", O_RATE, "rescale to a mean of R requests/s, keeping the bursts"},
    {"max-gap", 0, "D", O_MAXGAP, "compress idle gaps longer than D"},
    {"window", 0, "START,END", O_WINDOW,
     "replay only the trace's slice [START, END): the sessions\n"
     "that begin in it, each whole"},
    {"duration", 0, "D", O_DURATION, "stop scheduling after D"},
    {"spread", 0, "D", O_SPREAD,
     "spread requests whose times were rounded to the same\n"
     "value evenly over D"},
    {"concurrency", 0, "1,4,16", O_CONC,
     "closed loop: one run per level, that many requests in\n"
     "flight, the trace's requests in order (timestamps ignored)"},
    {"requests", 0, "N", O_REQUESTS,
     "requests per closed- or open-loop run (default: the trace's);\n"
     "in trace time, a sample: the first sessions that fit whole"},
    {"warmup", 0, "N", O_WARMUP, "the first N requests a run sends are recorded but excluded"},
    {"arrivals", 0, "poisson|gamma:CV|constant", O_ARRIVALS, "open loop at --rate R"},
    {"max-concurrency", 0, "N", O_MAXCONC, "open loop: at most N in flight; the wait is recorded"},
    {"seed", 0, "N", O_SEED, "seed of arrivals and synthesized prompts (default 1)"},
    CLI_SECTION("Requests:"),
    {"synthetic-prompts", 0, NULL, O_SYNTH,
     "synthesize text even where the trace kept prompt text"},
    {"prompts", 0, "FILE", O_PROMPTS,
     "prompts from a corpus (JSON lines: strings, {\"text\"},\n"
     "{\"messages\"}), cut to the recorded lengths"},
    {"no-token-ids", 0, NULL, O_NOIDS, "completions: send text, not token ids"},
    {"no-force-length", 0, NULL, O_NOFORCE, "do not send min_tokens = max_tokens and ignore_eos"},
    {"no-stream", 0, NULL, O_NOSTREAM, "ask for whole answers instead of streams"},
    {"chunk-usage", 0, NULL, O_CHUNKUSAGE,
     "ask for usage in every chunk (vLLM continuous_usage_stats)"},
    {"reasoning-effort", 0, "E", O_EFFORT, "pass reasoning_effort E"},
    {"thinking", 0, "trace|on|off", O_THINKING,
     "chat_template_kwargs.enable_thinking: as the trace\n"
     "record reasoned, or always on or off (default: not sent)"},
    {"default-out", 0, "N", O_DEFOUT, "output length when the trace has none (128)"},
    {"no-calibrate", 0, NULL, O_NOCALIB, "do not probe the server for prompt length calibration"},
    {"no-cancel", 0, NULL, O_NOCANCEL,
     "replay requests whose client left mid-stream (cancel_tokens,\n"
     "cancel_after) to completion instead of cancelling them"},
    {"timeout", 0, "D", O_TIMEOUT, "per-request timeout (default 10m)"},
    {"first-token-timeout", 0, "D", O_FTT, "fail a request with no token after D"},
    {"connect-timeout", 0, "D", O_CTIMEOUT, "(default 10s)"},
    {"retry", 0, "N", O_RETRY,
     "retry 429, 503 and connection failures up to N times,\n"
     "after Retry-After or 1 s doubling (default 0: off); the\n"
     "scheduled time stays, so latency from it includes retries"},
    CLI_SECTION("Capacity (docs/replay.md \"Finding the capacity\"):"),
    {"find-max", 0, "rate|concurrency", O_FINDMAX,
     "search the highest load that meets --slo: rate\n"
     "rescales the trace's arrivals (its bursts kept, as\n"
     "--rate does), concurrency is the closed loop; grows\n"
     "the load until a probe fails, then bisects; every probe\n"
     "is a run of the results file, the answer its meta\n"
     "\t--find-max replicas     with --target sim --rate R: the fewest virtual replicas\n"
     "(--route, --profile) that meet --slo at R; the attainment\n"
     "at N-1 and N on stdout, the run at N in -o"},
    {"slo", 0, "SPEC", O_SLO,
     "ttft=D,tpot=D,e2e=D (analyze's), or ttft:p99<=D,...\n"
     "(the percentile sets --attain)"},
    {"attain", 0, "P", O_ATTAIN, "share of requests that must meet the SLO (0.9)"},
    {"precision", 0, "F", O_PRECISION, "stop when the bracket is within F (0.05; concurrency: 1)"},
    {"virtual-first", 0, "[=PROF]", O_VFIRST,
     "search the sim's model in virtual time first (the\n"
     "profile PROF, or the sim's) to place the live probes"},
    {"max-probes", 0, "N", O_MAXPROBES, "probes per search (20)"},
    {"max-time", 0, "D", O_MAXTIME,
     "bound the whole search: no live probe is scheduled past\n"
     "D, and none starts that would likely end past it"},
    CLI_SECTION("Server metrics (docs/server-metrics.md):"),
    {"server-metrics", 0, "[=URL,...]", O_SMETRICS,
     "scrape the target's /metrics (on by default when it\n"
     "serves Prometheus text) and these other exporters"},
    {"no-server-metrics", 0, NULL, O_NOSMETRICS, "scrape nothing"},
    {"metrics-interval", 0, "D", O_MINTERVAL,
     "time between scrapes (default 250ms, at least 10ms)"},
    {"server-metrics-keep", 0, "REGEX", O_MKEEP, "also record the raw series of matching families"},
    {"server-metrics-map", 0, "FILE", O_MMAP,
     "a mapping file of metric names (added to the table)"},
    {"reset-prefix-cache", 0, NULL, O_RESETPC,
     "reset the server's prefix cache before each run (vLLM\n"
     "POST /reset_prefix_cache, SGLang POST /flush_cache)"},
    CLI_SECTION("Media (docs/multimodal.md):"),
    {"max-image-bytes", 0, "N", O_MAXIMG,
     "recorded images larger than N bytes are not made: their\n"
     "requests fail alone as \"media\" (default 20971520)"},
    {"media-links", 0, NULL, O_MLINKS,
     "send images as links to a server of replay's own on\n"
     "127.0.0.1 (an unguessable path) instead of data URLs"},
    CLI_SECTION("Output:"),
    {"output", 'o', "FILE", 'o', "results file (required)"},
    {"merge", 0, NULL, O_MERGE,
     "merge the per-rank parts of an MPI replay (RESULTS.rankN,\n"
     "given as the operands, in rank order) into -o FILE, e.g.\n"
     "after a rank died; exit 1 when some rank's requests are missing"},
    {"keep-parts", 0, NULL, O_KEEP_PARTS,
     "MPI: keep the ranks' RESULTS.rankR once merged (default:\n"
     "removed after a complete merge, kept after a partial one)"},
    {"no-summary", 0, NULL, O_NOSUMMARY, "do not print the summary"},
    {"quiet", 'q', NULL, 'q', "no progress line"},
    {"ui", 0, "auto|dashboard|line|none", O_UI,
     "while it runs: a full-screen dashboard, the\n"
     "progress line, or nothing (default auto: the dashboard\n"
     "when stderr is a terminal, else the line); q stops it"},
    {"live-metrics", 0, "[HOST:]PORT", O_LIVE,
     "serve the client's live figures in the Prometheus\n"
     "text format on http://HOST:PORT/metrics (HOST default\n"
     "127.0.0.1; port 0: a free one, said on stderr)"},
    {"live-metrics-hold", 0, "D", O_LIVE_HOLD,
     "keep serving the final figures for D after the run\n"
     "(a scraper's last look; Ctrl-C ends it)"},
    {0}};

const struct cli_spec cmd_replay_spec = {
    .cmd = "replay",
    .synopsis =
        "usage: loadtrace replay TRACE.lt.zst --target URL|sim -o RESULTS.lt.zst [options]\n"
        "\n"
        "Send the trace's requests to an OpenAI-compatible server (vLLM, SGLang,\n"
        "llama-server, TGI, a gateway) or to the built-in sim, and record every\n"
        "request's scheduled, sent, first byte, first token, first content and end\n"
        "times, every chunk, the server's usage, status and error class. Then print\n"
        "the summary (loadtrace analyze).\n"
        "\n",
    .opts = replay_opts_table,
    .col = 26,
    .epilogue =
        "Metrics (docs/metrics.md): TTFT = first token-bearing chunk - sent;\n"
        "E2E = last byte - sent; TPOT = (E2E - TTFT) / (out - 1); schedule lag =\n"
        "sent - scheduled. Ctrl-C stops: requests in flight are recorded as aborted.\n"
        "Exit status: 0 every request ok, 1 some failed, 3 none ok, 130 SIGINT,\n"
        "143 SIGTERM, 2 bad usage (docs/cli.md).\n"
        "\n"
        "Several machines: mpirun -n N loadtrace replay ... splits the trace by session\n"
        "over N ranks on a common start, and --concurrency levels over the ranks; rank\n"
        "0 merges the ranks' RESULTS.rankR into RESULTS and removes them (docs/replay-mpi.md).\n"
        "\n"
        "Error classes (results' err): connect, tls, timeout, first_token_timeout,\n"
        "http (an error status), ratelimit (429), malformed (a chunk or body that is\n"
        "not valid), stream_error (an error object in the stream), incomplete (no\n"
        "[DONE] nor finish reason), short (fewer tokens than forced), aborted,\n"
        "request_too_large (a record whose request cannot be built: never sent),\n"
        "bad_usage (usage the chunks received disprove; docs/metrics.md).\n"
        "Prompts are synthesized to the recorded lengths, calibrated against the\n"
        "server's /tokenize, or with three one-token requests where it has none (or\n"
        "exact, as token ids, with --api completions); the end of the run says how\n"
        "far the server's counts were off.\n",
};

struct progress_state {
    bool draw;
    bool drawn;
    bool quiet;
    bool dash;                      /* the dashboard shows the run: no lines while it is up */
    const struct lt_replay_opts *o; /* what was asked, for announce */
};

static void on_note(void *ud, const char *line)
{
    (void)ud;
    cli_error("replay", "%s", line);
}

/* Before a run sends anything: how long its schedule is, so that a run of
 * hours says so before it starts. */
static void announce(void *ud, const struct lt_replay_progress *p)
{
    struct progress_state *ps = ud;
    if (ps->quiet || ps->dash)
        return;
    if (ps->drawn)
        fputs("\n", stderr);
    char span[48];
    const struct lt_replay_opts *o = ps->o;
    if (o && o->mode == LT_REPLAY_MODE_TRACE && o->tt.rate > 0)
        fprintf(stderr,
                "loadtrace replay: --rate %g rescales the whole trace to a mean of %g req/s, its "
                "bursts kept%s\n",
                o->tt.rate, o->tt.rate,
                o->tt.duration_us > 0 ? ": a part of it (--duration) runs at its own rate" : "");
    if (o && o->mode == LT_REPLAY_MODE_TRACE && o->tt.duration_us > 0 && p->sched_end_s >= 0 &&
        p->sched_end_s < 0.9 * (double)o->tt.duration_us / 1e6) {
        char dur[48];
        cli_dash_human_s((double)o->tt.duration_us / 1e6, dur, sizeof dur);
        cli_dash_human_s(p->sched_end_s, span, sizeof span);
        fprintf(stderr,
                "loadtrace replay: --duration %s keeps the schedule's first %s: %llu requests, "
                "the last at %s (%.4g req/s); the next is past %s, so the run ends after about "
                "%s\n",
                dur, dur, (unsigned long long)(p->total - p->done), span,
                p->sched_end_s > 0 && p->total - p->done > 1
                    ? (double)(p->total - p->done - 1) / p->sched_end_s
                    : 0.0,
                dur, span);
    }
    if (p->sched_end_s >= 0) {
        cli_dash_human_s(p->sched_end_s, span, sizeof span);
        fprintf(stderr,
                "loadtrace replay: run %u of %u: %llu requests, the schedule's last leaves at "
                "%s: the run takes about %s, longer if the server falls behind\n",
                p->run + 1, p->runs, (unsigned long long)(p->total - p->done), span, span);
    } else if (p->level) {
        fprintf(stderr,
                "loadtrace replay: run %u of %u: %llu requests, %u at a time: paced by the "
                "server, no schedule to time it by\n",
                p->run + 1, p->runs, (unsigned long long)p->total, p->level);
    }
}

/* The time left: in trace time and open loop the schedule says when the
 * last request leaves (the rate so far would swing with every idle gap
 * of the trace); then the requests in flight. A closed loop is paced by
 * the server: the rate of its finishes so far is all there is. */
static void time_left(const struct lt_replay_progress *p, double el, char *left, size_t n)
{
    if (p->done >= p->total)
        snprintf(left, n, "0s left");
    else if (p->sched_end_s >= 0 && el < p->sched_end_s)
        snprintf(left, n, "%.0fs left in the schedule", p->sched_end_s - el);
    else if (p->sched_end_s >= 0)
        snprintf(left, n, "all sent, %llu to finish", (unsigned long long)(p->total - p->done));
    else if (p->done)
        snprintf(left, n, "~%.0fs left", (double)(p->total - p->done) / ((double)p->done / el));
    else
        snprintf(left, n, "? left");
}

static void on_progress(void *ud, const struct lt_replay_progress *p)
{
    struct progress_state *ps = ud;
    if (!ps->draw)
        return;
    double el = p->elapsed_s > 0 ? p->elapsed_s : 1e-9;
    double rps = (double)p->done / el, tps = (double)p->out_tokens / el;
    char lvl[32] = "";
    if (p->level)
        snprintf(lvl, sizeof lvl, " C=%u", p->level);
    if (p->stopped) {
        /* done counts the unsent too: say what was sent, and that the
         * rest never was */
        fprintf(stderr,
                "\r[run %u/%u%s] stopped at %.0fs: %llu of %llu sent, %llu never sent, %llu "
                "errors\033[K",
                p->run + 1, p->runs, lvl, el, (unsigned long long)(p->done - p->unsent),
                (unsigned long long)p->total, (unsigned long long)p->unsent,
                (unsigned long long)p->errors);
        ps->drawn = true;
        return;
    }
    char left[64];
    time_left(p, el, left, sizeof left);
    fprintf(stderr,
            "\r[run %u/%u%s] %llu/%llu  %.1f req/s  %.0f tok/s  %llu in flight  %llu errors  "
            "%.0fs elapsed  %s\033[K",
            p->run + 1, p->runs, lvl, (unsigned long long)p->done, (unsigned long long)p->total,
            rps, tps, (unsigned long long)p->inflight, (unsigned long long)p->errors, el, left);
    ps->drawn = true;
}

struct replay_cli {
    struct lt_replay_opts o;
    const char *key_env;
    bool target_sim;
    struct lt_sim_opts sim;
    bool summary, quiet;
    bool keep_parts;         /* --keep-parts: MPI parts stay after the merge */
    char metrics_urls[4096]; /* --server-metrics's lists, split in place */
    size_t metrics_used;
    enum cli_ui ui;         /* --ui, resolved */
    const char *live_spec;  /* --live-metrics */
    int64_t live_hold_us;   /* --live-metrics-hold */
    struct cli_fleet fleet; /* --target URL1,URL2, --targets, --route, --replicas */
};

static bool parse_window(const char *s, int64_t *a, int64_t *b)
{
    const char *comma = strchr(s, ',');
    char first[64];
    if (!comma || (size_t)(comma - s) >= sizeof first)
        return false;
    memcpy(first, s, (size_t)(comma - s));
    first[comma - s] = '\0';
    return cli_parse_duration_us(first, a) && cli_parse_duration_us(comma + 1, b) && *b > *a;
}

/* A run's self-check (struct lt_check, traces/trace_format.h): the load it
 * delivered against what was asked, and the client's own CPU. */
static void print_check(const struct lt_check *k)
{
    char line[512];
    lt_analyze_check_describe(k, 1, line, sizeof line);
    fprintf(stderr, "loadtrace replay: run %u: %s\n", (unsigned)k->run, line);
    double share = k->wall_s > 0 ? k->cpu_s / k->wall_s : 0;
    if (k->off)
        fprintf(stderr,
                "loadtrace replay: CHECK run %u: the load delivered is more than 5 %% off what "
                "was asked\n",
                (unsigned)k->run);
    if (k->saturated)
        fprintf(stderr,
                "loadtrace replay: CHECK run %u: the client was near saturation (%.0f %% of a "
                "core): its own delays are in these figures\n",
                (unsigned)k->run, 100.0 * share);
}

/* A step that went well: the next one runs. */
#define GO_ON (-1)

/* The summary of the results file through analyze, unless it is stdout.
 * Returns 0, or 1 after saying why not. */
static int print_summary(const char *path)
{
    struct lt_err err = {0};
    struct lt_analyze_opts ao;
    lt_analyze_opts_init(&ao);
    if (strcmp(path, "-") != 0 && lt_analyze_print_summary(path, &ao, stdout, &err) < 0) {
        cli_error("replay", "summary: %s", err.msg);
        return 1;
    }
    return 0;
}

/* What the run learned before it starts: the sample it keeps, the model
 * and calibration, the metrics it scrapes, the images it made. */
static void print_prepared(const struct lt_replay_stats *st)
{
    cli_print_sample("replay", st->sampled ? &st->sample : NULL);
    fprintf(stderr, "loadtrace replay: model %s; prompt lengths: %s\n", st->model, st->calib_how);
    fprintf(stderr, "loadtrace replay: server metrics: %s\n", st->scrape_how);
    if (st->media_shapes || st->media_refused)
        fprintf(stderr,
                "loadtrace replay: images: %llu shapes made (%llu bytes) in %.3f s before the "
                "run%s; %llu image parts refused (over --max-image-bytes or the pixel limit)\n",
                (unsigned long long)st->media_shapes, (unsigned long long)st->media_bytes,
                (double)st->media_prep_us / 1e6,
                st->media_substituted
                    ? ", some in a stand-in format (png for webp or gif, AVI for video)"
                    : "",
                (unsigned long long)st->media_refused);
}

/* A failed run: how much of it reached the file. */
static void print_failed(const struct lt_replay_stats *st, const char *out_path)
{
    if (st->write_failed)
        cli_error("replay",
                  "%llu requests reached %s before the write failed (cat --salvage reads "
                  "them); %llu more were lost with it",
                  (unsigned long long)st->on_disk, out_path,
                  (unsigned long long)(st->requests - st->on_disk));
    else
        cli_error("replay", "%llu requests were recorded in %s before the error",
                  (unsigned long long)st->requests, out_path);
}

/* The run's totals, and how far the prompts' lengths were off. */
static void print_totals(const struct lt_replay_stats *st, const char *out_path)
{
    char cancelled[96] = "";
    if (st->cancelled) /* where the trace's clients left: neither ok nor errors */
        snprintf(cancelled, sizeof cancelled, ", %llu cancelled",
                 (unsigned long long)st->cancelled);
    if (st->unsent) { /* stopped first: never sent, so no error of the server's */
        size_t u = strlen(cancelled);
        snprintf(cancelled + u, sizeof cancelled - u, ", %llu never sent",
                 (unsigned long long)st->unsent);
    }
    fprintf(stderr,
            "loadtrace replay: %llu requests, %llu ok, %llu errors (%llu aborted, "
            "%llu rate-limited, %llu retries)%s, %llu output tokens, %llu connections "
            "opened (%s client) -> %s\n",
            (unsigned long long)st->requests, (unsigned long long)st->ok,
            (unsigned long long)st->errors, (unsigned long long)st->aborted,
            (unsigned long long)st->ratelimited, (unsigned long long)st->retries, cancelled,
            (unsigned long long)st->out_tokens, (unsigned long long)st->connects,
            st->http_client ? st->http_client : "curl", out_path);
    if (st->len_checked)
        fprintf(stderr,
                "loadtrace replay: prompt lengths vs the server's usage: mean |error| "
                "%.1f tokens (%.2f %%), worst %.1f %% over %llu requests\n",
                st->len_abs_err / (double)st->len_checked,
                st->len_want > 0 ? 100.0 * st->len_abs_err / st->len_want : 0.0,
                100.0 * st->len_max_rel, (unsigned long long)st->len_checked);
    if (st->text_checked)
        fprintf(stderr,
                "loadtrace replay: prompts sent as recorded text vs the server's usage: mean "
                "|error| %.1f tokens (%.2f %%), worst %.1f %% over %llu requests (not fitted "
                "to a length: the difference is this server's tokenizer and template against "
                "the recording's; each result has in and want_in)\n",
                st->text_abs_err / (double)st->text_checked,
                st->text_want > 0 ? 100.0 * st->text_abs_err / st->text_want : 0.0,
                100.0 * st->text_max_rel, (unsigned long long)st->text_checked);
}

/* Each run's self-check and stop, and what else the run noticed. */
static void print_notes(const struct lt_replay_stats *st, const struct lt_replay_opts *o)
{
    for (uint32_t i = 0; i < st->n_checks; i++) {
        const struct lt_check *k = &st->checks[i];
        print_check(k);
        if (k->stopped_by)
            fprintf(stderr,
                    "loadtrace replay: run %u stopped by %s at %.1f s: %llu requests never "
                    "sent (recorded without a send; not errors)\n",
                    (unsigned)k->run,
                    strcmp(k->stopped_by, "caller") ? k->stopped_by : "its caller", k->stopped_at_s,
                    (unsigned long long)k->unsent);
    }
    if (st->media_links[0])
        fprintf(stderr,
                "loadtrace replay: media links: %llu images served from %s, %llu other GETs "
                "refused (404)\n",
                (unsigned long long)st->media_link_gets, st->media_links,
                (unsigned long long)st->media_link_404);
    if (st->scrapes)
        fprintf(stderr, "loadtrace replay: %llu server-metrics scrapes, %llu failed\n",
                (unsigned long long)st->scrapes, (unsigned long long)st->scrape_errors);
    if (st->thinned)
        fprintf(stderr,
                "loadtrace replay: %llu streams had more than %u chunks: their timelines were "
                "thinned to fit the format (\"thin\": chunks merged into one, "
                "docs/trace-format.md 2.5)\n",
                (unsigned long long)st->thinned, LT_RESULT_CHUNKS_MAX);
    if (st->scrape_bad)
        cli_error("replay",
                  "WARNING: %llu scraped values were outside their range (first: %s): left "
                  "out of the server's figures, kept under \"bad\" in the samples",
                  (unsigned long long)st->scrape_bad, st->scrape_bad_first);
    if (o->reset_prefix_cache)
        fprintf(stderr, "loadtrace replay: prefix cache reset before %llu of %u runs (%s)\n",
                (unsigned long long)st->resets, st->runs, st->reset_how);
}

/* What a live run holds: the sim it started, its figures and their
 * server, the engine. */
struct live_run {
    struct lt_sim *sim;
    char url[64];
    struct lt_replay_live *live; /* the dashboard's and --live-metrics' figures */
    struct cli_live_http *http;
    struct lt_replay *rp;
    struct progress_state ps;
};

/* The sim, when it is ours to start, and the API key. Returns GO_ON or
 * the exit status. */
static int start_target(struct replay_cli *c, struct live_run *lr)
{
    struct lt_err err = {0};
    if (c->target_sim) {
        lr->sim = lt_sim_start(&c->sim, &err);
        if (!lr->sim) {
            cli_error("replay", "cannot start the sim: %s", err.msg);
            return 1;
        }
        snprintf(lr->url, sizeof lr->url, "http://127.0.0.1:%u", (unsigned)lt_sim_port(lr->sim));
        c->o.target = lr->url;
        c->o.target_label = "sim";
    }
    if (c->key_env && !getenv(c->key_env)) {
        cli_error("replay", "--api-key-env %s: that environment variable is not set", c->key_env);
        return 1;
    }
    c->o.api_key =
        cli_api_key(c->key_env, c->o.api == LT_REPLAY_API_MESSAGES, &c->o.api_key_bearer_too);
    if (c->o.insecure)
        cli_error("replay", "WARNING: --insecure: TLS certificates are NOT verified; anyone on "
                            "the path can read the prompts and the API key");
    return GO_ON;
}

/* The live figures, for the dashboard and --live-metrics. Returns GO_ON
 * or the exit status. */
static int start_live(struct replay_cli *c, struct live_run *lr)
{
    struct lt_err err = {0};
    if (c->ui != CLI_UI_DASHBOARD && !c->live_spec)
        return GO_ON;
    if (!(lr->live = lt_replay_live_new(&err))) {
        cli_error("replay", "%s", err.msg);
        return 1;
    }
    c->o.live = lr->live;
    if (!c->live_spec)
        return GO_ON;
    char host[256], lurl[300];
    unsigned port;
    bool loop;
    cli_live_parse(c->live_spec, host, sizeof host, &port, &loop); /* checked in parsing */
    if (!(lr->http = cli_live_http_start(host, port, lr->live, lurl, sizeof lurl, &err))) {
        cli_error("replay", "%s", err.msg);
        return 1;
    }
    if (!loop)
        cli_error("replay",
                  "WARNING: --live-metrics %s is not a loopback address: anyone who "
                  "reaches it can read the run's figures (counts and times; never prompts "
                  "or keys)",
                  host);
    if (!c->quiet)
        fprintf(stderr, "loadtrace replay: live metrics on %s\n", lurl);
    return GO_ON;
}

/* The engine set up and prepared (the model asked, prompts calibrated).
 * Returns GO_ON or the exit status. */
static int prepare(struct replay_cli *c, struct live_run *lr)
{
    struct lt_err err = {0};
    lr->ps =
        (struct progress_state){.draw = !c->quiet && c->ui == CLI_UI_LINE && cli_progress_wanted(),
                                .quiet = c->quiet,
                                .o = &c->o};
    c->o.progress = on_progress;
    c->o.run_begin = announce;
    c->o.progress_ud = &lr->ps;
    if (!c->quiet)
        c->o.note = on_note;
    lr->rp = lt_replay_new(&c->o, &err);
    if (lr->rp && lt_replay_prepare(lr->rp, &err) < 0) {
        lt_replay_free(lr->rp);
        lr->rp = NULL;
    }
    if (!lr->rp) {
        cli_error("replay", "%s", err.msg);
        return cli_fail_status(&err);
    }
    return GO_ON;
}

/* The run itself, on the dashboard or with the progress line. Returns
 * the exit status. */
static int run(struct replay_cli *c, struct live_run *lr)
{
    struct lt_err err = {0};
    struct lt_replay_stats st;
    lt_replay_get_stats(lr->rp, &st);
    if (!c->quiet)
        print_prepared(&st);
    struct cli_dash *dash = NULL;
    if (c->ui == CLI_UI_DASHBOARD) {
        if (!(dash = cli_dash_start(lr->live, "replay", &err)))
            cli_error("replay", "no dashboard (%s): the progress line instead", err.msg);
        lr->ps.dash = dash != NULL;
        lr->ps.draw = !dash && !c->quiet && cli_progress_wanted();
    }
    int rc = cli_replay_run(lr->rp, &err);
    cli_dash_stop(dash, stderr); /* its last frame stays on the normal screen */
    lr->ps.dash = false;
    if (lr->ps.drawn)
        fputs("\n", stderr);
    lt_replay_get_stats(lr->rp, &st);
    if (rc < 0) {
        cli_error("replay", "%s", err.msg);
        print_failed(&st, c->o.out_path);
        return 1;
    }
    if (!c->quiet) {
        print_totals(&st, c->o.out_path);
        print_notes(&st, &c->o);
    }
    cli_fleet_print(&c->o, &st); /* even when quiet: a replica that went down is news */
    int status = cli_replay_status(lt_replay_stopped(lr->rp), st.requests - st.cancelled, st.ok);
    if (c->summary && print_summary(c->o.out_path))
        status = 1;
    if (lr->http && c->live_hold_us > 0 && !cli_stop_signal())
        cli_live_hold(c->live_hold_us, c->quiet);
    return status;
}

/* A live replay: the target, the figures, the engine, the run. */
static int replay_main(struct replay_cli *c)
{
    struct live_run lr = {0};
    int status = start_target(c, &lr);
    if (status == GO_ON)
        status = start_live(c, &lr);
    if (status == GO_ON)
        status = prepare(c, &lr);
    if (status == GO_ON)
        status = run(c, &lr);
    cli_live_http_stop(lr.http);
    lt_replay_free(lr.rp);
    lt_replay_live_free(lr.live);
    struct lt_err err = {0};
    if (lr.sim && lt_sim_stop_err(lr.sim, &err) < 0) {
        cli_error("replay", "%s", err.msg);
        status = 1;
    }
    return status;
}

/* What the options say before they are checked together. */
struct replay_args {
    struct replay_cli c;
    bool have_arrivals, virt, merge, find_max;
    struct cli_search_opts so;
    double slo_pct; /* --slo's percentile, 0: none */
    double rate;    /* --rate: trace time's, or the open loop's */
};

/* An option function's answer for an id that is another group's. */
#define NOT_MINE (-1)

static int api_of(const char *v, enum lt_replay_api *api)
{
    static const struct {
        const char *name;
        enum lt_replay_api api;
    } apis[] = {{"chat", LT_REPLAY_API_CHAT},
                {"completions", LT_REPLAY_API_COMPLETIONS},
                {"sglang-generate", LT_REPLAY_API_SGLANG},
                {"responses", LT_REPLAY_API_RESPONSES},
                {"messages", LT_REPLAY_API_MESSAGES},
                {"embeddings", LT_REPLAY_API_EMBEDDINGS},
                {"rerank", LT_REPLAY_API_RERANK}};
    for (size_t i = 0; i < sizeof apis / sizeof apis[0]; i++)
        if (!strcmp(v, apis[i].name)) {
            *api = apis[i].api;
            return 0;
        }
    return bad("--api", v);
}

/* The target, the fleet, the API and the in-process sim. */
static int opt_target(struct replay_args *a, int id, char *arg)
{
    struct replay_cli *c = &a->c;
    struct lt_replay_opts *o = &c->o;
    uint64_t u;
    switch (id) {
    case O_TARGET:
        if (!strcmp(arg, "sim"))
            c->target_sim = true;
        else if (strchr(arg, ',') || strchr(arg, '=') || c->fleet.n)
            return cli_fleet_add_list(&c->fleet, arg) ? 0 : 2;
        else
            o->target = arg;
        return 0;
    case O_TARGETS:
        return cli_fleet_add_file(&c->fleet, arg) ? 0 : 2;
    case O_ROUTE:
        if (!lt_route_parse(arg, &c->fleet.route))
            return bad("--route", arg);
        c->fleet.route_set = true;
        return 0;
    case O_FAILOVER:
        o->failover = true;
        return 0;
    case O_REPLICAS:
        if (!cli_parse_u64_in("replay", "--replicas", arg, 1, LT_ROUTE_MAX, &u))
            return 2;
        c->fleet.replicas = (uint32_t)u;
        return 0;
    case O_MODEL:
        o->model = arg;
        return 0;
    case O_API:
        return api_of(arg, &o->api);
    case O_KEYENV:
        c->key_env = arg;
        return 0;
    case O_HEADER:
        if (o->n_headers == LT_REPLAY_MAX_HEADERS)
            return bad("--header", "too many headers");
        o->headers[o->n_headers++] = arg;
        return 0;
    case O_INSECURE:
        o->insecure = true;
        return 0;
    case O_HCLIENT:
        return parse_client(arg, &o->http_client) ? 0 : bad("--http-client", arg);
    case O_SPROFILE:
        c->sim.profile = arg;
        return 0;
    case O_SDIALECT:
        c->sim.dialect = arg;
        return 0;
    case O_SFAULTS:
        c->sim.faults = arg;
        return 0;
    case O_SLOG:
        c->sim.log_path = arg;
        return 0;
    case O_SSCALE:
        return cli_parse_double_in("replay", "--sim-time-scale", arg, 0, INFINITY,
                                   &c->sim.time_scale)
                   ? 0
                   : 2;
    case O_VIRTUAL:
        a->virt = true;
        return 0;
    }
    return NOT_MINE;
}

/* When the requests leave. */
static int opt_load(struct replay_args *a, int id, char *arg)
{
    struct lt_replay_opts *o = &a->c.o;
    struct lt_err err = {0};
    uint64_t u;
    int64_t us;
    switch (id) {
    case O_SPEED:
        return cli_parse_double_in("replay", "--speed", arg, 0, INFINITY, &o->tt.speed) ? 0 : 2;
    case O_RATE:
        return cli_parse_double_in("replay", "--rate", arg, 0, INFINITY, &a->rate) ? 0 : 2;
    case O_MAXGAP:
        return cli_parse_duration_in("replay", "--max-gap", arg, 1, &o->tt.max_gap_us) ? 0 : 2;
    case O_WINDOW:
        return parse_window(arg, &o->tt.win_start_us, &o->tt.win_end_us) ? 0 : bad("--window", arg);
    case O_DURATION:
        if (!cli_parse_duration_in("replay", "--duration", arg, 1, &us))
            return 2;
        o->duration_us = o->tt.duration_us = us;
        return 0;
    case O_SPREAD:
        return cli_parse_duration_in("replay", "--spread", arg, 1, &o->tt.spread_us) ? 0 : 2;
    case O_CONC: {
        int n = cli_parse_u32_list(arg, o->levels, LT_REPLAY_MAX_LEVELS);
        if (n <= 0)
            return bad("--concurrency", arg);
        o->n_levels = (size_t)n;
        o->mode = LT_REPLAY_MODE_CONCURRENCY;
        return 0;
    }
    case O_REQUESTS:
        return cli_parse_u64_in("replay", "--requests", arg, 1, 100000000, &o->requests) ? 0 : 2;
    case O_WARMUP:
        return cli_parse_u64_in("replay", "--warmup", arg, 0, UINT64_MAX, &o->warmup) ? 0 : 2;
    case O_ARRIVALS:
        if (lt_arrivals_parse(arg, 0, &o->arrivals, &o->cv, &err) < 0) {
            cli_error("replay", "--arrivals %s", err.msg);
            return 2;
        }
        a->have_arrivals = true;
        return 0;
    case O_MAXCONC:
        if (!cli_parse_u64_in("replay", "--max-concurrency", arg, 1, 1000000, &u))
            return 2;
        o->max_concurrency = (uint32_t)u;
        return 0;
    case O_SEED:
        if (!cli_parse_u64_in("replay", "--seed", arg, 0, UINT64_MAX, &o->seed))
            return 2;
        a->c.sim.seed = o->seed;
        return 0;
    }
    return NOT_MINE;
}

/* What each request asks for. */
static int opt_request(struct replay_args *a, int id, char *arg)
{
    struct lt_replay_opts *o = &a->c.o;
    uint64_t u;
    switch (id) {
    case O_SYNTH:
        o->synthetic_prompts = true;
        return 0;
    case O_PROMPTS:
        o->prompts_path = arg;
        return 0;
    case O_NOIDS:
        o->no_token_ids = true;
        return 0;
    case O_NOFORCE:
        o->no_force_length = true;
        return 0;
    case O_NOSTREAM:
        o->no_stream = true;
        return 0;
    case O_CHUNKUSAGE:
        o->chunk_usage = true;
        return 0;
    case O_EFFORT:
        o->reasoning_effort = arg;
        return 0;
    case O_THINKING:
        if (!strcmp(arg, "trace"))
            o->thinking = LT_REPLAY_THINK_TRACE;
        else if (!strcmp(arg, "on"))
            o->thinking = LT_REPLAY_THINK_ON;
        else if (!strcmp(arg, "off"))
            o->thinking = LT_REPLAY_THINK_OFF;
        else
            return bad("--thinking", arg);
        return 0;
    case O_DEFOUT:
        if (!cli_parse_u64_in("replay", "--default-out", arg, 1, 10000000, &u))
            return 2;
        o->default_out = (uint32_t)u;
        return 0;
    case O_NOCALIB:
        o->no_calibrate = true;
        return 0;
    case O_NOCANCEL:
        o->no_cancel = true;
        return 0;
    case O_TIMEOUT:
        return cli_parse_duration_in("replay", "--timeout", arg, 1, &o->timeout_us) ? 0 : 2;
    case O_FTT:
        return cli_parse_duration_in("replay", "--first-token-timeout", arg, 1,
                                     &o->first_token_timeout_us)
                   ? 0
                   : 2;
    case O_CTIMEOUT:
        return cli_parse_duration_in("replay", "--connect-timeout", arg, 1, &o->connect_timeout_us)
                   ? 0
                   : 2;
    case O_RETRY:
        if (!cli_parse_u64_in("replay", "--retry", arg, 0, 100, &u))
            return 2;
        o->retries = (uint32_t)u;
        return 0;
    case O_MAXIMG:
        if (!cli_parse_u64_in("replay", "--max-image-bytes", arg, 1, (uint64_t)1 << 30, &u))
            return 2;
        o->max_image_bytes = u;
        return 0;
    case O_MLINKS:
        o->media_links = true;
        return 0;
    }
    return NOT_MINE;
}

/* The capacity search. */
static int opt_capacity(struct replay_args *a, int id, char *arg)
{
    struct cli_search_opts *so = &a->so;
    uint64_t u;
    switch (id) {
    case O_FINDMAX:
        if (!strcmp(arg, "rate"))
            so->cap.concurrency = false;
        else if (!strcmp(arg, "concurrency"))
            so->cap.concurrency = true;
        else if (!strcmp(arg, "replicas"))
            a->c.fleet.find_replicas = true;
        else
            return bad("--find-max", arg);
        a->find_max = true;
        return 0;
    case O_SLO:
        if (!cli_parse_slo("replay", arg, &so->cap.slo_ttft_us, &so->cap.slo_tpot_us, &so->cap.slo_e2e_us,
                           &a->slo_pct))
            return 2;
        so->cap.slo = arg;
        return 0;
    case O_ATTAIN:
        return cli_parse_double_in("replay", "--attain", arg, CLI_ATTAIN_MIN, CLI_ATTAIN_MAX,
                                   &so->cap.attain)
                   ? 0
                   : 2;
    case O_VFIRST:
        so->cap.virtual_first = true;
        so->cap.vprofile = arg;
        return 0;
    case O_MAXPROBES:
        if (!cli_parse_u64_in("replay", "--max-probes", arg, 1, 64, &u))
            return 2;
        so->cap.max_probes = (uint32_t)u;
        return 0;
    case O_MAXTIME:
        return cli_parse_duration_in("replay", "--max-time", arg, 1, &so->cap.max_time_us) ? 0 : 2;
    case O_PRECISION:
        return cli_parse_double_in("replay", "--precision", arg, 0.001, 1, &so->cap.precision) ? 0 : 2;
    }
    return NOT_MINE;
}

/* --server-metrics[=URL,...]: each URL kept in c's buffer, NUL-terminated
 * after the last. */
static int add_metrics_urls(struct replay_cli *c, const char *arg)
{
    struct lt_replay_opts *o = &c->o;
    o->server_metrics = 1;
    if (!arg || !*arg)
        return 0;
    size_t have = c->metrics_used, len = strlen(arg);
    if (have + len + 1 > sizeof c->metrics_urls)
        return bad("--server-metrics", arg);
    char *list = c->metrics_urls + have;
    memcpy(list, arg, len + 1);
    c->metrics_used += len + 1;
    for (char *url = list, *end; *url; url = end) {
        end = strchr(url, ',');
        if (end)
            *end++ = '\0';
        else
            end = url + strlen(url);
        if (!*url)
            continue;
        if (o->n_metrics_urls == LT_REPLAY_MAX_METRICS_URLS)
            return bad("--server-metrics", arg);
        o->metrics_urls[o->n_metrics_urls++] = url;
    }
    return 0;
}

/* The server's metrics, and what this program writes and shows. */
static int opt_output(struct replay_args *a, int id, char *arg)
{
    struct replay_cli *c = &a->c;
    struct lt_replay_opts *o = &c->o;
    switch (id) {
    case O_SMETRICS:
        return add_metrics_urls(c, arg);
    case O_NOSMETRICS:
        o->server_metrics = -1;
        return 0;
    case O_MINTERVAL:
        return cli_parse_duration_in("replay", "--metrics-interval", arg, 10000,
                                     &o->metrics_interval_us)
                   ? 0
                   : 2;
    case O_MKEEP:
        o->metrics_keep = arg;
        return 0;
    case O_MMAP:
        o->metrics_map = arg;
        return 0;
    case O_RESETPC:
        o->reset_prefix_cache = true;
        return 0;
    case 'o':
        o->out_path = arg;
        return 0;
    case O_MERGE:
        a->merge = true;
        return 0;
    case O_KEEP_PARTS:
        c->keep_parts = true;
        return 0;
    case O_NOSUMMARY:
        c->summary = false;
        return 0;
    case 'q':
        c->quiet = true;
        return 0;
    case O_UI:
        return cli_ui_parse(arg, &c->ui) ? 0 : bad("--ui", arg);
    case O_LIVE: {
        char host[256];
        unsigned port;
        bool loop;
        if (!cli_live_parse(arg, host, sizeof host, &port, &loop))
            return bad("--live-metrics", arg);
        c->live_spec = arg;
        return 0;
    }
    case O_LIVE_HOLD:
        return cli_parse_duration_in("replay", "--live-metrics-hold", arg, 0, &c->live_hold_us) ? 0
                                                                                                : 2;
    }
    return NOT_MINE;
}

/* One option (cli_opts_parse): its group's function takes it. */
static int replay_opt(void *ud, int id, char *arg)
{
    static int (*const groups[])(struct replay_args *, int, char *) = {
        opt_target, opt_load, opt_request, opt_capacity, opt_output};
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        int rc = groups[i](ud, id, arg);
        if (rc != NOT_MINE)
            return rc;
    }
    return 2; /* an id the table has and no group takes: cannot happen */
}

/* The fleet, once every option is read, and the lean client's limit.
 * Returns GO_ON or the exit status. */
static int check_target(struct replay_args *a)
{
    struct replay_cli *c = &a->c;
    struct lt_replay_opts *o = &c->o;
    if (o->target && c->fleet.n) { /* one --target URL, then a list or a file */
        if (!cli_fleet_add_list(&c->fleet, o->target))
            return 2;
        o->target = NULL;
    }
    if (!cli_fleet_apply(&c->fleet, o, a->virt || c->fleet.find_replicas))
        return 2;
    if (o->http_client == LT_REPLAY_CLIENT_LEAN && o->target && strncmp(o->target, "http://", 7)) {
        cli_error("replay",
                  "the lean HTTP client speaks plain http:// only: use --http-client "
                  "curl (or auto) for %.8s... targets",
                  o->target);
        return 2;
    }
    return GO_ON;
}

/* --merge: the parts of an MPI job, merged after the fact (a job cut
 * short). Returns the exit status. */
static int run_merge(struct replay_args *a, char *const *parts, size_t n)
{
    struct lt_err err = {0};
    const char *out = a->c.o.out_path;
    if (!out || n == 0) {
        cli_error("replay", "--merge needs -o RESULTS.lt.zst and the parts, in rank order");
        return 2;
    }
    if (lt_path_not_input(out, (const char *const *)parts, n, &err) < 0) {
        cli_error("replay", "%s", err.msg);
        return 2;
    }
    if (cli_dry_run())
        return 0;
    int m = lt_replay_merge(out, (const char *const *)parts, n, stdout, &err);
    if (m < 0) {
        cli_error("replay", "merge: %s", err.msg);
        return 1;
    }
    if (a->c.summary && print_summary(out))
        return 1;
    return m; /* 1: partial, some rank's requests are missing */
}

/* The trace, the output, the target; nothing written may be an input;
 * the figures' options. Returns GO_ON or the exit status. */
static int check_run(struct replay_args *a, char *const *operands, size_t n)
{
    struct lt_err err = {0};
    struct replay_cli *c = &a->c;
    struct lt_replay_opts *o = &c->o;
    if (n != 1) {
        cli_error("replay", "give exactly one trace file (see --help)");
        return 2;
    }
    o->trace_path = operands[0];
    if (!o->out_path) {
        cli_error("replay", "-o RESULTS.lt.zst is required");
        return 2;
    }
    if (!o->target && !c->target_sim) {
        cli_error("replay", "--target URL|sim is required");
        return 2;
    }
    /* Nothing written may be an input: the results, nor the sim's log. */
    const char *inputs[3];
    size_t n_in = 0;
    inputs[n_in++] = o->trace_path;
    if (o->prompts_path)
        inputs[n_in++] = o->prompts_path;
    bool clash = lt_path_not_input(o->out_path, inputs, n_in, &err) < 0;
    if (!clash && c->sim.log_path) {
        inputs[n_in++] = o->out_path;
        clash = lt_path_not_input(c->sim.log_path, inputs, n_in, &err) < 0;
    }
    if (clash) {
        cli_error("replay", "%s", err.msg);
        return 2;
    }
    if (c->live_hold_us && !c->live_spec) {
        cli_error("replay", "--live-metrics-hold belongs to --live-metrics");
        return 2;
    }
    const char *no_dash = cli_ui_no_dashboard(a->virt);
    if (c->ui == CLI_UI_DASHBOARD && no_dash) {
        cli_error("replay", "--ui dashboard: %s (use --ui line or none)", no_dash);
        return 2;
    }
    if (no_dash && c->ui == CLI_UI_AUTO && !c->quiet && cli_ui_rank0() &&
        cli_ui_resolve(CLI_UI_AUTO) == CLI_UI_DASHBOARD)
        fprintf(stderr, "loadtrace replay: no dashboard: %s\n", no_dash);
    if (no_dash)
        c->ui = CLI_UI_LINE;
    if (c->ui == CLI_UI_DASHBOARD) {
        char why[128];
        if (!cli_ui_dashboard_possible(why, sizeof why)) {
            cli_error("replay", "--ui dashboard: %s (use --ui line or none)", why);
            return 2;
        }
    }
    c->ui = c->quiet ? CLI_UI_NONE : cli_ui_resolve(c->ui);
    return GO_ON;
}

/* --find-max: the search chooses the load, so a load of the user's own
 * would be overruled and is refused. Returns the exit status. */
static int run_find_max(struct replay_args *a)
{
    struct replay_cli *c = &a->c;
    struct lt_replay_opts *o = &c->o;
    struct cli_search_opts *so = &a->so;
    if (!so->cap.slo) {
        cli_error("replay", "--find-max needs --slo (e.g. ttft=2s,tpot=100ms)");
        return 2;
    }
    if (a->slo_pct > 0 && so->cap.attain > 0 && so->cap.attain != a->slo_pct) {
        cli_error("replay", "--slo %s names p%g but --attain says %g", so->cap.slo, 100 * a->slo_pct,
                  so->cap.attain);
        return 2;
    }
    if (a->slo_pct > 0)
        so->cap.attain = a->slo_pct;
    so->quiet = c->quiet;
    if (c->fleet.find_replicas) {
        /* The fleet's size is what is searched, at the load given. */
        if (!c->target_sim || !(a->rate > 0) || a->have_arrivals || o->n_levels) {
            cli_error("replay", "--find-max replicas searches the sim's model in virtual "
                                "time at a load: give --target sim and --rate R");
            return 2;
        }
        o->tt.rate = a->rate;
        return cli_fleet_find_replicas(o, &c->sim, so);
    }
    if (a->have_arrivals || a->rate > 0 || o->tt.speed > 0 || o->n_levels || o->max_concurrency) {
        cli_error("replay", "--find-max chooses the load: drop --rate, --speed, "
                            "--concurrency, --arrivals and --max-concurrency");
        return 2;
    }
    if (a->virt && !c->target_sim) {
        cli_error("replay", "--virtual runs the sim's model: it needs --target sim");
        return 2;
    }
    if (a->virt && (c->sim.faults || c->sim.time_scale > 0)) {
        cli_error("replay", "--virtual: faults and --sim-time-scale need a live sim");
        return 2;
    }
    so->cap.virtual_only = a->virt;
    so->cap.target_sim = c->target_sim;
    so->cap.sim = &c->sim;
    so->key_env = c->key_env;
    so->ui = (int)c->ui;
    return cli_replay_search(o, so);
}

/* The load mode: trace time, open loop (--arrivals) or closed loop
 * (--concurrency), and the options that belong to another. Returns GO_ON
 * or the exit status. */
static int check_load(struct replay_args *a)
{
    struct lt_replay_opts *o = &a->c.o;
    const struct cli_search_opts *so = &a->so;
    if (so->cap.slo || so->cap.attain > 0 || so->cap.virtual_first || so->cap.max_probes || so->cap.max_time_us ||
        so->cap.precision > 0) {
        cli_error("replay", "--slo, --attain, --precision, --virtual-first, --max-probes and "
                            "--max-time belong to --find-max");
        return 2;
    }
    if (a->have_arrivals) {
        if (o->mode == LT_REPLAY_MODE_CONCURRENCY) {
            cli_error("replay", "--arrivals (open loop) and --concurrency (closed loop) "
                                "exclude each other");
            return 2;
        }
        if (!(a->rate > 0)) {
            cli_error("replay", "--arrivals needs --rate R");
            return 2;
        }
        o->mode = LT_REPLAY_MODE_RATE;
        o->rate = a->rate;
    } else if (o->mode == LT_REPLAY_MODE_CONCURRENCY) {
        if (a->rate > 0 || o->tt.speed > 0) {
            cli_error("replay", "--concurrency ignores time: --rate and --speed do not apply");
            return 2;
        }
    } else {
        o->tt.rate = a->rate;
        if (o->max_concurrency) {
            cli_error("replay", "--max-concurrency applies to open loop (--arrivals)");
            return 2;
        }
    }
    return GO_ON;
}

/* The run, on the engine the options name: virtual time, one rank of an
 * MPI job, or live. Returns the exit status. */
static int run_replay(struct replay_args *a)
{
    struct replay_cli *c = &a->c;
    if (a->virt) {
        if (!c->target_sim) {
            cli_error("replay", "--virtual runs the sim's model, not a server: it needs "
                                "--target sim");
            return 2;
        }
        return cli_replay_virtual(&c->o, &c->sim, c->summary, c->quiet);
    }
    if (cli_dry_run())
        return 0;
#ifdef LT_MPI
    /* Started by mpirun: one rank of a split replay (docs/replay-mpi.md). */
    if (lt_replay_mpi_wanted()) {
        if (c->target_sim) {
            cli_error("replay", "under mpirun, give --target URL (start one `loadtrace sim` "
                                "for all ranks), not --target sim");
            return 2;
        }
        return cli_replay_ranks(&c->o, c->key_env, c->summary, c->quiet, c->keep_parts);
    }
#else
    /* N copies of a whole replay writing one file would be nonsense. */
    const char *np = getenv("OMPI_COMM_WORLD_SIZE");
    if (np && strcmp(np, "1") != 0) {
        cli_error("replay", "started by mpirun, but this loadtrace was built without MPI "
                            "(install libopenmpi-dev and rebuild; docs/replay-mpi.md)");
        return 2;
    }
#endif
    return replay_main(c);
}

int cmd_replay(int argc, char **argv)
{
    /* A file past its size limit (RLIMIT_FSIZE) is a failed write, said and
     * survived like a full disk, not a kill. */
    signal(SIGXFSZ, SIG_IGN);
    struct replay_args a = {.c = {.summary = true}};
    a.c.o.seed = 1;
    a.c.sim.seed = 1;
    const char *hc = getenv("LOADTRACE_HTTP_CLIENT");
    if (hc && *hc && !parse_client(hc, &a.c.o.http_client))
        return bad("LOADTRACE_HTTP_CLIENT", hc);
    int rc = cli_opts_parse(&cmd_replay_spec, argc, argv, replay_opt, &a);
    if (rc >= 0)
        return rc;
    char *const *operands = argv + optind;
    size_t n = (size_t)(argc - optind);
    if ((rc = check_target(&a)) != GO_ON)
        return rc;
    if (a.merge)
        return run_merge(&a, operands, n);
    if ((rc = check_run(&a, operands, n)) != GO_ON)
        return rc;
    if (a.find_max)
        return run_find_max(&a);
    if ((rc = check_load(&a)) != GO_ON)
        return rc;
    return run_replay(&a);
}

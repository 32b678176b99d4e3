/*
 * loadtrace replay: send a trace's requests to a server (or to a sim started
 * inside this process) and record what happened in a results file, then
 * print the run's summary through analyze. This file only parses options,
 * composes replay/ with sim/ and analyze/, draws the progress line and turns
 * Ctrl-C into an orderly stop; the work is in replay/.
 */
#include "analyze/analyze.h"
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

static const char replay_usage[] =
    "usage: loadtrace replay TRACE.lt.zst --target URL|sim -o RESULTS.lt.zst [options]\n"
    "\n"
    "Send the trace's requests to an OpenAI-compatible server (vLLM, SGLang,\n"
    "llama-server, TGI, a gateway) or to the built-in sim, and record every\n"
    "request's scheduled, sent, first byte, first token, first content and end\n"
    "times, every chunk, the server's usage, status and error class. Then print\n"
    "the summary (loadtrace analyze).\n"
    "\n"
    "Target:\n"
    "  --target URL|sim        base URL (http://host:port), or sim: start the\n"
    "                          simulated server in this process on a free port\n"
    "  --model NAME            model to ask for, as given (default: the one GET\n"
    "                          /v1/models lists, asked within --timeout, at most 30 s)\n"
    "  --api chat|completions|responses|messages|sglang-generate   (default chat);\n"
    "                          responses: OpenAI Responses (/v1/responses), messages:\n"
    "                          Anthropic Messages (/v1/messages, key sent as x-api-key)\n"
    "  --api embeddings|rerank  /v1/embeddings or /v1/rerank: each record's messages\n"
    "                          are its inputs (rerank: a \"query\" and documents);\n"
    "                          no output, results counted in inputs/s (docs/multimodal.md)\n"
    "  --api-key-env NAME      take the API key from this environment variable\n"
    "                          (default OPENAI_API_KEY; with --api messages\n"
    "                          ANTHROPIC_API_KEY, sent as x-api-key, else\n"
    "                          OPENAI_API_KEY, sent as x-api-key and as a bearer token,\n"
    "                          which vLLM's /v1/messages reads); never give it as an\n"
    "                          argument\n"
    "  --header 'Name: value'  extra request header (repeatable)\n"
    "  --insecure              do not verify TLS certificates (DANGEROUS)\n"
    "  --http-client auto|curl|lean   which HTTP client sends (default auto, or\n"
    "                          $LOADTRACE_HTTP_CLIENT): lean is replay's own HTTP/1.1\n"
    "                          client, for plain http:// without a proxy (auto's\n"
    "                          choice there); curl (libcurl) for TLS, HTTP/2, proxies\n"
    "  --sim-profile P, --sim-dialect D, --sim-faults SPEC, --sim-log FILE,\n"
    "  --sim-time-scale X      options of the in-process sim (see loadtrace sim --help)\n"
    "  --target URL1,URL2,...  a fleet: several replicas of one config, each request\n"
    "                          sent to the one --route picks; URL=W states a replica's\n"
    "                          capacity weight (docs/replay.md \"Fleets and routing\")\n"
    "  --targets FILE          the fleet from a file: \"URL [WEIGHT]\" a line\n"
    "  --route POLICY          round-robin (default), least-outstanding, session\n"
    "                          (sticky), prefix[:K] (consistent hashing of the first\n"
    "                          K prefix blocks, K=1, with bounded load), weighted\n"
    "  --failover              a replica that fails (connect, a cut stream) is marked\n"
    "                          down and its requests go to another (default: errors)\n"
    "  --replicas N            with --virtual: N model instances behind --route\n"
    "  --virtual               with --target sim: run the sim's model in virtual time, no\n"
    "                          HTTP (an hour of trace in seconds); same load flags and\n"
    "                          results file; --profile P (= --sim-profile) picks the\n"
    "                          server; no faults, no --no-force-length (docs/sim.md)\n"
    "\n"
    "Load (trace time is the default: requests leave at their recorded times):\n"
    "  --speed X               compress time X times\n"
    "  --rate R                rescale to a mean of R requests/s, keeping the bursts\n"
    "  --max-gap D             compress idle gaps longer than D\n"
    "  --window START,END      replay only the trace's slice [START, END): the sessions\n"
    "                          that begin in it, each whole\n"
    "  --duration D            stop scheduling after D\n"
    "  --spread D              spread requests whose times were rounded to the same\n"
    "                          value evenly over D\n"
    "  --concurrency 1,4,16    closed loop: one run per level, that many requests in\n"
    "                          flight, the trace's requests in order (timestamps ignored)\n"
    "  --requests N            requests per closed- or open-loop run (default: the trace's);\n"
    "                          in trace time, a sample: the first sessions that fit whole\n"
    "  --warmup N              the first N requests a run sends are recorded but excluded\n"
    "  --arrivals poisson|gamma:CV|constant   open loop at --rate R\n"
    "  --max-concurrency N     open loop: at most N in flight; the wait is recorded\n"
    "  --seed N                seed of arrivals and synthesized prompts (default 1)\n"
    "\n"
    "Requests:\n"
    "  --synthetic-prompts     synthesize text even where the trace kept prompt text\n"
    "  --prompts FILE          prompts from a corpus (JSON lines: strings, {\"text\"},\n"
    "                          {\"messages\"}), cut to the recorded lengths\n"
    "  --no-token-ids          completions: send text, not token ids\n"
    "  --no-force-length       do not send min_tokens = max_tokens and ignore_eos\n"
    "  --no-stream             ask for whole answers instead of streams\n"
    "  --chunk-usage           ask for usage in every chunk (vLLM continuous_usage_stats)\n"
    "  --reasoning-effort E    pass reasoning_effort E\n"
    "  --thinking trace|on|off chat_template_kwargs.enable_thinking: as the trace\n"
    "                          record reasoned, or always on or off (default: not sent)\n"
    "  --default-out N         output length when the trace has none (128)\n"
    "  --no-calibrate          do not probe the server for prompt length calibration\n"
    "  --no-cancel             replay requests whose client left mid-stream (cancel_tokens,\n"
    "                          cancel_after) to completion instead of cancelling them\n"
    "  --timeout D             per-request timeout (default 10m)\n"
    "  --first-token-timeout D fail a request with no token after D\n"
    "  --connect-timeout D     (default 10s)\n"
    "  --retry N               retry 429, 503 and connection failures up to N times,\n"
    "                          after Retry-After or 1 s doubling (default 0: off); the\n"
    "                          scheduled time stays, so latency from it includes retries\n"
    "\n"
    "Capacity (docs/replay.md \"Finding the capacity\"):\n"
    "  --find-max replicas     with --target sim --rate R: the fewest virtual replicas\n"
    "                          (--route, --profile) that meet --slo at R; the attainment\n"
    "                          at N-1 and N on stdout, the run at N in -o\n"
    "  --find-max rate|concurrency   search the highest load that meets --slo: rate\n"
    "                          rescales the trace's arrivals (its bursts kept, as\n"
    "                          --rate does), concurrency is the closed loop; grows\n"
    "                          the load until a probe fails, then bisects; every probe\n"
    "                          is a run of the results file, the answer its meta\n"
    "  --slo SPEC              ttft=D,tpot=D,e2e=D (analyze's), or ttft:p99<=D,...\n"
    "                          (the percentile sets --attain)\n"
    "  --attain P              share of requests that must meet the SLO (0.9)\n"
    "  --precision F           stop when the bracket is within F (0.05; concurrency: 1)\n"
    "  --virtual-first[=PROF]  search the sim's model in virtual time first (the\n"
    "                          profile PROF, or the sim's) to place the live probes\n"
    "  --max-probes N          probes per search (20)\n"
    "  --max-time D            bound the whole search: no live probe is scheduled past\n"
    "                          D, and none starts that would likely end past it\n"
    "\n"
    "Server metrics (docs/server-metrics.md):\n"
    "  --server-metrics[=URL,...]  scrape the target's /metrics (on by default when it\n"
    "                          serves Prometheus text) and these other exporters\n"
    "  --no-server-metrics     scrape nothing\n"
    "  --metrics-interval D    time between scrapes (default 250ms, at least 10ms)\n"
    "  --server-metrics-keep REGEX  also record the raw series of matching families\n"
    "  --server-metrics-map FILE    a mapping file of metric names (added to the table)\n"
    "  --reset-prefix-cache    reset the server's prefix cache before each run (vLLM\n"
    "                          POST /reset_prefix_cache, SGLang POST /flush_cache)\n"
    "\n"
    "Media (docs/multimodal.md):\n"
    "  --max-image-bytes N     recorded images larger than N bytes are not made: their\n"
    "                          requests fail alone as \"media\" (default 20971520)\n"
    "\n"
    "Output:\n"
    "  -o, --output FILE       results file (required)\n"
    "  --merge PART...         merge the per-rank parts of an MPI replay (RESULTS.rankN,\n"
    "                          in rank order) into -o FILE, e.g. after a rank died;\n"
    "                          exit 1 when some rank's requests are missing\n"
    "  --keep-parts            MPI: keep the ranks' RESULTS.rankR once merged (default:\n"
    "                          removed after a complete merge, kept after a partial one)\n"
    "  --no-summary            do not print the summary\n"
    "  -q, --quiet             no progress line\n"
    "  --ui auto|dashboard|line|none   while it runs: a full-screen dashboard, the\n"
    "                          progress line, or nothing (default auto: the dashboard\n"
    "                          when stderr is a terminal, else the line); q stops it\n"
    "  --live-metrics [HOST:]PORT   serve the client's live figures in the Prometheus\n"
    "                          text format on http://HOST:PORT/metrics (HOST default\n"
    "                          127.0.0.1; port 0: a free one, said on stderr)\n"
    "  --live-metrics-hold D   keep serving the final figures for D after the run\n"
    "                          (a scraper's last look; Ctrl-C ends it)\n"
    "  -h, --help              this text\n"
    "\n"
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
    "far the server's counts were off.\n";

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

/* A duration as a person reads it: "42 s", "29 min 10 s", "9 h 48 min". */
static void human_s(double s, char *b, size_t n)
{
    if (s < 90)
        snprintf(b, n, "%.0f s", s);
    else if (s < 5400)
        snprintf(b, n, "%.0f min %02.0f s", floor(s / 60), fmod(s, 60));
    else
        snprintf(b, n, "%.0f h %02.0f min", floor(s / 3600), floor(fmod(s, 3600) / 60));
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
        human_s((double)o->tt.duration_us / 1e6, dur, sizeof dur);
        human_s(p->sched_end_s, span, sizeof span);
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
        human_s(p->sched_end_s, span, sizeof span);
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
    enum cli_ui ui;        /* --ui, resolved */
    const char *live_spec; /* --live-metrics */
    int64_t live_hold_us;  /* --live-metrics-hold */
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

static int replay_main(struct replay_cli *c)
{
    struct lt_err err = {0};
    struct lt_sim *sim = NULL;
    struct lt_replay *rp = NULL;
    int status = 1;
    char url[64];
    struct lt_replay_live *live = NULL; /* the dashboard's and --live-metrics' figures */
    struct cli_live_http *http = NULL;
    if (c->target_sim) {
        sim = lt_sim_start(&c->sim, &err);
        if (!sim) {
            cli_error("replay", "cannot start the sim: %s", err.msg);
            return 1;
        }
        snprintf(url, sizeof url, "http://127.0.0.1:%u", (unsigned)lt_sim_port(sim));
        c->o.target = url;
        c->o.target_label = "sim";
    }
    if (c->key_env && !getenv(c->key_env)) {
        cli_error("replay", "--api-key-env %s: that environment variable is not set", c->key_env);
        goto out;
    }
    c->o.api_key =
        cli_api_key(c->key_env, c->o.api == LT_REPLAY_API_MESSAGES, &c->o.api_key_bearer_too);
    if (c->o.insecure)
        cli_error("replay", "WARNING: --insecure: TLS certificates are NOT verified; anyone on "
                            "the path can read the prompts and the API key");

    struct progress_state ps = {.draw = !c->quiet && c->ui == CLI_UI_LINE && cli_progress_wanted(),
                                .quiet = c->quiet,
                                .o = &c->o};
    if (c->ui == CLI_UI_DASHBOARD || c->live_spec) {
        if (!(live = lt_replay_live_new(&err))) {
            cli_error("replay", "%s", err.msg);
            goto out;
        }
        c->o.live = live;
    }
    if (c->live_spec) {
        char host[256], lurl[300];
        unsigned port;
        bool loop;
        cli_live_parse(c->live_spec, host, sizeof host, &port, &loop); /* checked in parsing */
        if (!(http = cli_live_http_start(host, port, live, lurl, sizeof lurl, &err))) {
            cli_error("replay", "%s", err.msg);
            goto out;
        }
        if (!loop)
            cli_error("replay",
                      "WARNING: --live-metrics %s is not a loopback address: anyone who "
                      "reaches it can read the run's figures (counts and times; never prompts "
                      "or keys)",
                      host);
        if (!c->quiet)
            fprintf(stderr, "loadtrace replay: live metrics on %s\n", lurl);
    }
    c->o.progress = on_progress;
    c->o.run_begin = announce;
    c->o.progress_ud = &ps;
    if (!c->quiet)
        c->o.note = on_note;
    rp = lt_replay_new(&c->o, &err);
    if (rp && lt_replay_prepare(rp, &err) < 0) {
        lt_replay_free(rp);
        rp = NULL;
    }
    if (!rp) {
        cli_error("replay", "%s", err.msg);
        status = cli_fail_status(&err);
        goto out;
    }
    struct lt_replay_stats st;
    lt_replay_get_stats(rp, &st);
    if (!c->quiet)
        cli_print_sample("replay", st.sampled ? &st.sample : NULL);
    if (!c->quiet)
        fprintf(stderr, "loadtrace replay: model %s; prompt lengths: %s\n", st.model, st.calib_how);
    if (!c->quiet)
        fprintf(stderr, "loadtrace replay: server metrics: %s\n", st.scrape_how);
    if (!c->quiet && (st.media_shapes || st.media_refused))
        fprintf(stderr,
                "loadtrace replay: images: %llu shapes made (%llu bytes) in %.3f s before the "
                "run%s; %llu image parts refused (over --max-image-bytes or the pixel limit)\n",
                (unsigned long long)st.media_shapes, (unsigned long long)st.media_bytes,
                (double)st.media_prep_us / 1e6, st.media_substituted ? ", some as png" : "",
                (unsigned long long)st.media_refused);

    struct cli_dash *dash = NULL;
    if (c->ui == CLI_UI_DASHBOARD) {
        if (!(dash = cli_dash_start(live, "replay", &err)))
            cli_error("replay", "no dashboard (%s): the progress line instead", err.msg);
        ps.dash = dash != NULL;
        ps.draw = !dash && !c->quiet && cli_progress_wanted();
    }
    int rc = cli_replay_run(rp, &err);
    cli_dash_stop(dash, stderr); /* its last frame stays on the normal screen */
    ps.dash = false;
    if (ps.drawn)
        fputs("\n", stderr);
    lt_replay_get_stats(rp, &st);
    if (rc < 0) {
        cli_error("replay", "%s", err.msg);
        if (st.write_failed)
            cli_error("replay",
                      "%llu requests reached %s before the write failed (cat --salvage reads "
                      "them); %llu more were lost with it",
                      (unsigned long long)st.on_disk, c->o.out_path,
                      (unsigned long long)(st.requests - st.on_disk));
        else
            cli_error("replay", "%llu requests were recorded in %s before the error",
                      (unsigned long long)st.requests, c->o.out_path);
        status = 1;
        goto out;
    }
    if (!c->quiet) {
        char cancelled[96] = "";
        if (st.cancelled) /* where the trace's clients left: neither ok nor errors */
            snprintf(cancelled, sizeof cancelled, ", %llu cancelled",
                     (unsigned long long)st.cancelled);
        if (st.unsent) { /* stopped first: never sent, so no error of the server's */
            size_t u = strlen(cancelled);
            snprintf(cancelled + u, sizeof cancelled - u, ", %llu never sent",
                     (unsigned long long)st.unsent);
        }
        fprintf(stderr,
                "loadtrace replay: %llu requests, %llu ok, %llu errors (%llu aborted, "
                "%llu rate-limited, %llu retries)%s, %llu output tokens, %llu connections "
                "opened (%s client) -> %s\n",
                (unsigned long long)st.requests, (unsigned long long)st.ok,
                (unsigned long long)st.errors, (unsigned long long)st.aborted,
                (unsigned long long)st.ratelimited, (unsigned long long)st.retries, cancelled,
                (unsigned long long)st.out_tokens, (unsigned long long)st.connects,
                st.http_client ? st.http_client : "curl", c->o.out_path);
        if (st.len_checked)
            fprintf(stderr,
                    "loadtrace replay: prompt lengths vs the server's usage: mean |error| "
                    "%.1f tokens (%.2f %%), worst %.1f %% over %llu requests\n",
                    st.len_abs_err / (double)st.len_checked,
                    st.len_want > 0 ? 100.0 * st.len_abs_err / st.len_want : 0.0,
                    100.0 * st.len_max_rel, (unsigned long long)st.len_checked);
        if (st.text_checked)
            fprintf(stderr,
                    "loadtrace replay: prompts sent as recorded text vs the server's usage: mean "
                    "|error| %.1f tokens (%.2f %%), worst %.1f %% over %llu requests (not fitted "
                    "to a length: the difference is this server's tokenizer and template against "
                    "the recording's; each result has in and want_in)\n",
                    st.text_abs_err / (double)st.text_checked,
                    st.text_want > 0 ? 100.0 * st.text_abs_err / st.text_want : 0.0,
                    100.0 * st.text_max_rel, (unsigned long long)st.text_checked);
        for (uint32_t i = 0; i < st.n_checks; i++) {
            print_check(&st.checks[i]);
            const struct lt_check *k = &st.checks[i];
            if (k->stopped_by)
                fprintf(stderr,
                        "loadtrace replay: run %u stopped by %s at %.1f s: %llu requests never "
                        "sent (recorded without a send; not errors)\n",
                        (unsigned)k->run,
                        strcmp(k->stopped_by, "caller") ? k->stopped_by : "its caller",
                        k->stopped_at_s, (unsigned long long)k->unsent);
        }
        if (st.scrapes)
            fprintf(stderr, "loadtrace replay: %llu server-metrics scrapes, %llu failed\n",
                    (unsigned long long)st.scrapes, (unsigned long long)st.scrape_errors);
        if (st.thinned)
            fprintf(stderr,
                    "loadtrace replay: %llu streams had more than %u chunks: their timelines were "
                    "thinned to fit the format (\"thin\": chunks merged into one, "
                    "docs/trace-format.md 2.5)\n",
                    (unsigned long long)st.thinned, LT_RESULT_CHUNKS_MAX);
        if (st.scrape_bad)
            cli_error("replay",
                      "WARNING: %llu scraped values were outside their range (first: %s): left "
                      "out of the server's figures, kept under \"bad\" in the samples",
                      (unsigned long long)st.scrape_bad, st.scrape_bad_first);
        if (c->o.reset_prefix_cache)
            fprintf(stderr, "loadtrace replay: prefix cache reset before %llu of %u runs (%s)\n",
                    (unsigned long long)st.resets, st.runs, st.reset_how);
    }
    cli_fleet_print(&c->o, &st); /* even when quiet: a replica that went down is news */
    status = cli_replay_status(lt_replay_stopped(rp), st.requests - st.cancelled, st.ok);
    if (c->summary && strcmp(c->o.out_path, "-") != 0) {
        struct lt_analyze_opts ao;
        lt_analyze_opts_init(&ao);
        if (lt_analyze_print_summary(c->o.out_path, &ao, stdout, &err) < 0) {
            cli_error("replay", "summary: %s", err.msg);
            status = 1;
        }
    }
    if (http && c->live_hold_us > 0 && !cli_stop_signal())
        cli_live_hold(c->live_hold_us, c->quiet);
out:
    cli_live_http_stop(http);
    lt_replay_free(rp);
    lt_replay_live_free(live);
    if (sim) {
        if (lt_sim_stop_err(sim, &err) < 0) {
            cli_error("replay", "%s", err.msg);
            status = 1;
        }
    }
    return status;
}

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

/* Its options: getopt_long's table, which the completions and the
 * "did you mean" of a mistyped option read too (cli/commands.h). */
const struct option cmd_replay_options[] = {
    {"target", required_argument, NULL, O_TARGET},
    {"model", required_argument, NULL, O_MODEL},
    {"api", required_argument, NULL, O_API},
    {"api-key-env", required_argument, NULL, O_KEYENV},
    {"header", required_argument, NULL, O_HEADER},
    {"insecure", no_argument, NULL, O_INSECURE},
    {"sim-profile", required_argument, NULL, O_SPROFILE},
    {"sim-dialect", required_argument, NULL, O_SDIALECT},
    {"sim-faults", required_argument, NULL, O_SFAULTS},
    {"sim-log", required_argument, NULL, O_SLOG},
    {"sim-time-scale", required_argument, NULL, O_SSCALE},
    {"speed", required_argument, NULL, O_SPEED},
    {"rate", required_argument, NULL, O_RATE},
    {"max-gap", required_argument, NULL, O_MAXGAP},
    {"window", required_argument, NULL, O_WINDOW},
    {"duration", required_argument, NULL, O_DURATION},
    {"spread", required_argument, NULL, O_SPREAD},
    {"concurrency", required_argument, NULL, O_CONC},
    {"requests", required_argument, NULL, O_REQUESTS},
    {"warmup", required_argument, NULL, O_WARMUP},
    {"arrivals", required_argument, NULL, O_ARRIVALS},
    {"max-concurrency", required_argument, NULL, O_MAXCONC},
    {"seed", required_argument, NULL, O_SEED},
    {"synthetic-prompts", no_argument, NULL, O_SYNTH},
    {"prompts", required_argument, NULL, O_PROMPTS},
    {"no-token-ids", no_argument, NULL, O_NOIDS},
    {"no-force-length", no_argument, NULL, O_NOFORCE},
    {"no-stream", no_argument, NULL, O_NOSTREAM},
    {"chunk-usage", no_argument, NULL, O_CHUNKUSAGE},
    {"reasoning-effort", required_argument, NULL, O_EFFORT},
    {"default-out", required_argument, NULL, O_DEFOUT},
    {"no-calibrate", no_argument, NULL, O_NOCALIB},
    {"no-cancel", no_argument, NULL, O_NOCANCEL},
    {"timeout", required_argument, NULL, O_TIMEOUT},
    {"first-token-timeout", required_argument, NULL, O_FTT},
    {"connect-timeout", required_argument, NULL, O_CTIMEOUT},
    {"retry", required_argument, NULL, O_RETRY},
    {"thinking", required_argument, NULL, O_THINKING},
    {"virtual", no_argument, NULL, O_VIRTUAL},
    {"merge", no_argument, NULL, O_MERGE},
    {"keep-parts", no_argument, NULL, O_KEEP_PARTS},
    {"find-max", required_argument, NULL, O_FINDMAX},
    {"slo", required_argument, NULL, O_SLO},
    {"attain", required_argument, NULL, O_ATTAIN},
    {"virtual-first", optional_argument, NULL, O_VFIRST},
    {"max-probes", required_argument, NULL, O_MAXPROBES},
    {"max-time", required_argument, NULL, O_MAXTIME},
    {"precision", required_argument, NULL, O_PRECISION},
    {"server-metrics", optional_argument, NULL, O_SMETRICS},
    {"no-server-metrics", no_argument, NULL, O_NOSMETRICS},
    {"metrics-interval", required_argument, NULL, O_MINTERVAL},
    {"server-metrics-keep", required_argument, NULL, O_MKEEP},
    {"server-metrics-map", required_argument, NULL, O_MMAP},
    {"reset-prefix-cache", no_argument, NULL, O_RESETPC},
    {"http-client", required_argument, NULL, O_HCLIENT},
    {"max-image-bytes", required_argument, NULL, O_MAXIMG},
    {"profile", required_argument, NULL, O_SPROFILE},
    {"output", required_argument, NULL, 'o'},
    {"no-summary", no_argument, NULL, O_NOSUMMARY},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"ui", required_argument, NULL, O_UI},
    {"live-metrics", required_argument, NULL, O_LIVE},
    {"live-metrics-hold", required_argument, NULL, O_LIVE_HOLD},
    {"targets", required_argument, NULL, O_TARGETS},
    {"route", required_argument, NULL, O_ROUTE},
    {"failover", no_argument, NULL, O_FAILOVER},
    {"replicas", required_argument, NULL, O_REPLICAS},
    {NULL, 0, NULL, 0}};

int cmd_replay(int argc, char **argv)
{
    /* A file past its size limit (RLIMIT_FSIZE) is a failed write, said and
     * survived like a full disk, not a kill. */
    signal(SIGXFSZ, SIG_IGN);
    struct replay_cli c = {.summary = true};
    struct lt_replay_opts *o = &c.o;
    o->seed = 1;
    c.sim.seed = 1;
    bool have_arrivals = false, virt = false, merge = false, find_max = false;
    struct cli_search_opts so = {0};
    double slo_pct = 0;
    double rate = 0;
    uint64_t u;
    int64_t us;
    int ch;
    struct lt_err err = {0};
    const char *hc = getenv("LOADTRACE_HTTP_CLIENT");
    if (hc && *hc && !parse_client(hc, &o->http_client))
        return bad("LOADTRACE_HTTP_CLIENT", hc);
    while ((ch = getopt_long(argc, argv, "ho:q", cmd_replay_options, NULL)) != -1) {
        switch (ch) {
        case O_TARGET:
            if (!strcmp(optarg, "sim"))
                c.target_sim = true;
            else if (strchr(optarg, ',') || strchr(optarg, '=') || c.fleet.n) {
                if (!cli_fleet_add_list(&c.fleet, optarg))
                    return 2;
            } else
                o->target = optarg;
            break;
        case O_TARGETS:
            if (!cli_fleet_add_file(&c.fleet, optarg))
                return 2;
            break;
        case O_ROUTE:
            if (!lt_route_parse(optarg, &c.fleet.route))
                return bad("--route", optarg);
            c.fleet.route_set = true;
            break;
        case O_FAILOVER:
            o->failover = true;
            break;
        case O_REPLICAS:
            if (!cli_parse_u64_in("replay", "--replicas", optarg, 1, LT_ROUTE_MAX, &u))
                return 2;
            c.fleet.replicas = (uint32_t)u;
            break;
        case O_MODEL:
            o->model = optarg;
            break;
        case O_API:
            if (!strcmp(optarg, "chat"))
                o->api = LT_REPLAY_API_CHAT;
            else if (!strcmp(optarg, "completions"))
                o->api = LT_REPLAY_API_COMPLETIONS;
            else if (!strcmp(optarg, "sglang-generate"))
                o->api = LT_REPLAY_API_SGLANG;
            else if (!strcmp(optarg, "responses"))
                o->api = LT_REPLAY_API_RESPONSES;
            else if (!strcmp(optarg, "messages"))
                o->api = LT_REPLAY_API_MESSAGES;
            else if (!strcmp(optarg, "embeddings"))
                o->api = LT_REPLAY_API_EMBEDDINGS;
            else if (!strcmp(optarg, "rerank"))
                o->api = LT_REPLAY_API_RERANK;
            else
                return bad("--api", optarg);
            break;
        case O_KEYENV:
            c.key_env = optarg;
            break;
        case O_HEADER:
            if (o->n_headers == LT_REPLAY_MAX_HEADERS)
                return bad("--header", "too many headers");
            o->headers[o->n_headers++] = optarg;
            break;
        case O_INSECURE:
            o->insecure = true;
            break;
        case O_SPROFILE:
            c.sim.profile = optarg;
            break;
        case O_SDIALECT:
            c.sim.dialect = optarg;
            break;
        case O_SFAULTS:
            c.sim.faults = optarg;
            break;
        case O_SLOG:
            c.sim.log_path = optarg;
            break;
        case O_SSCALE:
            if (!cli_parse_double_in("replay", "--sim-time-scale", optarg, 0, INFINITY,
                                     &c.sim.time_scale))
                return 2;
            break;
        case O_SPEED:
            if (!cli_parse_double_in("replay", "--speed", optarg, 0, INFINITY, &o->tt.speed))
                return 2;
            break;
        case O_RATE:
            if (!cli_parse_double_in("replay", "--rate", optarg, 0, INFINITY, &rate))
                return 2;
            break;
        case O_MAXGAP:
            if (!cli_parse_duration_in("replay", "--max-gap", optarg, 1, &o->tt.max_gap_us))
                return 2;
            break;
        case O_WINDOW:
            if (!parse_window(optarg, &o->tt.win_start_us, &o->tt.win_end_us))
                return bad("--window", optarg);
            break;
        case O_DURATION:
            if (!cli_parse_duration_in("replay", "--duration", optarg, 1, &us))
                return 2;
            o->duration_us = o->tt.duration_us = us;
            break;
        case O_SPREAD:
            if (!cli_parse_duration_in("replay", "--spread", optarg, 1, &o->tt.spread_us))
                return 2;
            break;
        case O_CONC: {
            int n = cli_parse_u32_list(optarg, o->levels, LT_REPLAY_MAX_LEVELS);
            if (n <= 0)
                return bad("--concurrency", optarg);
            o->n_levels = (size_t)n;
            o->mode = LT_REPLAY_MODE_CONCURRENCY;
            break;
        }
        case O_REQUESTS:
            if (!cli_parse_u64_in("replay", "--requests", optarg, 1, 100000000, &o->requests))
                return 2;
            break;
        case O_WARMUP:
            if (!cli_parse_u64_in("replay", "--warmup", optarg, 0, UINT64_MAX, &o->warmup))
                return 2;
            break;
        case O_ARRIVALS:
            if (lt_arrivals_parse(optarg, 0, &o->arrivals, &o->cv, &err) < 0) {
                cli_error("replay", "--arrivals %s", err.msg);
                return 2;
            }
            have_arrivals = true;
            break;
        case O_MAXCONC:
            if (!cli_parse_u64_in("replay", "--max-concurrency", optarg, 1, 1000000, &u))
                return 2;
            o->max_concurrency = (uint32_t)u;
            break;
        case O_SEED:
            if (!cli_parse_u64_in("replay", "--seed", optarg, 0, UINT64_MAX, &o->seed))
                return 2;
            c.sim.seed = o->seed;
            break;
        case O_SYNTH:
            o->synthetic_prompts = true;
            break;
        case O_PROMPTS:
            o->prompts_path = optarg;
            break;
        case O_NOIDS:
            o->no_token_ids = true;
            break;
        case O_NOFORCE:
            o->no_force_length = true;
            break;
        case O_NOSTREAM:
            o->no_stream = true;
            break;
        case O_CHUNKUSAGE:
            o->chunk_usage = true;
            break;
        case O_EFFORT:
            o->reasoning_effort = optarg;
            break;
        case O_DEFOUT:
            if (!cli_parse_u64_in("replay", "--default-out", optarg, 1, 10000000, &u))
                return 2;
            o->default_out = (uint32_t)u;
            break;
        case O_NOCALIB:
            o->no_calibrate = true;
            break;
        case O_NOCANCEL:
            o->no_cancel = true;
            break;
        case O_TIMEOUT:
            if (!cli_parse_duration_in("replay", "--timeout", optarg, 1, &o->timeout_us))
                return 2;
            break;
        case O_FTT:
            if (!cli_parse_duration_in("replay", "--first-token-timeout", optarg, 1,
                                       &o->first_token_timeout_us))
                return 2;
            break;
        case O_CTIMEOUT:
            if (!cli_parse_duration_in("replay", "--connect-timeout", optarg, 1,
                                       &o->connect_timeout_us))
                return 2;
            break;
        case O_RETRY:
            if (!cli_parse_u64_in("replay", "--retry", optarg, 0, 100, &u))
                return 2;
            o->retries = (uint32_t)u;
            break;
        case O_THINKING:
            if (!strcmp(optarg, "trace"))
                o->thinking = LT_REPLAY_THINK_TRACE;
            else if (!strcmp(optarg, "on"))
                o->thinking = LT_REPLAY_THINK_ON;
            else if (!strcmp(optarg, "off"))
                o->thinking = LT_REPLAY_THINK_OFF;
            else
                return bad("--thinking", optarg);
            break;
        case O_VIRTUAL:
            virt = true;
            break;
        case O_SMETRICS:
            o->server_metrics = 1;
            if (optarg && *optarg) {
                /* Split into the buffer: each URL NUL-terminated after the last. */
                size_t have = c.metrics_used, len = strlen(optarg);
                if (have + len + 1 > sizeof c.metrics_urls)
                    return bad("--server-metrics", optarg);
                char *list = c.metrics_urls + have;
                memcpy(list, optarg, len + 1);
                c.metrics_used += len + 1;
                for (char *url = list, *end; *url; url = end) {
                    end = strchr(url, ',');
                    if (end)
                        *end++ = '\0';
                    else
                        end = url + strlen(url);
                    if (!*url)
                        continue;
                    if (o->n_metrics_urls == LT_REPLAY_MAX_METRICS_URLS)
                        return bad("--server-metrics", optarg);
                    o->metrics_urls[o->n_metrics_urls++] = url;
                }
            }
            break;
        case O_NOSMETRICS:
            o->server_metrics = -1;
            break;
        case O_MINTERVAL:
            if (!cli_parse_duration_in("replay", "--metrics-interval", optarg, 10000,
                                       &o->metrics_interval_us))
                return 2;
            break;
        case O_MKEEP:
            o->metrics_keep = optarg;
            break;
        case O_MMAP:
            o->metrics_map = optarg;
            break;
        case O_RESETPC:
            o->reset_prefix_cache = true;
            break;
        case O_MAXIMG:
            if (!cli_parse_u64_in("replay", "--max-image-bytes", optarg, 1, (uint64_t)1 << 30, &u))
                return 2;
            o->max_image_bytes = u;
            break;
        case O_HCLIENT:
            if (!parse_client(optarg, &o->http_client))
                return bad("--http-client", optarg);
            break;
        case O_KEEP_PARTS:
            c.keep_parts = true;
            break;
        case O_MERGE:
            merge = true;
            break;
        case O_FINDMAX:
            if (!strcmp(optarg, "rate"))
                so.concurrency = false;
            else if (!strcmp(optarg, "concurrency"))
                so.concurrency = true;
            else if (!strcmp(optarg, "replicas"))
                c.fleet.find_replicas = true;
            else
                return bad("--find-max", optarg);
            find_max = true;
            break;
        case O_SLO:
            if (!cli_parse_slo("replay", optarg, &so.slo_ttft_us, &so.slo_tpot_us, &so.slo_e2e_us,
                               &slo_pct))
                return 2;
            so.slo = optarg;
            break;
        case O_ATTAIN:
            if (!cli_parse_double_in("replay", "--attain", optarg, CLI_ATTAIN_MIN, CLI_ATTAIN_MAX,
                                     &so.attain))
                return 2;
            break;
        case O_VFIRST:
            so.virtual_first = true;
            so.vprofile = optarg;
            break;
        case O_MAXPROBES:
            if (!cli_parse_u64_in("replay", "--max-probes", optarg, 1, 64, &u))
                return 2;
            so.max_probes = (uint32_t)u;
            break;
        case O_MAXTIME:
            if (!cli_parse_duration_in("replay", "--max-time", optarg, 1, &so.max_time_us))
                return 2;
            break;
        case O_PRECISION:
            if (!cli_parse_double_in("replay", "--precision", optarg, 0.001, 1, &so.precision))
                return 2;
            break;
        case 'o':
            o->out_path = optarg;
            break;
        case O_NOSUMMARY:
            c.summary = false;
            break;
        case 'q':
            c.quiet = true;
            break;
        case 'h':
            fputs(replay_usage, stdout);
            return 0;
        case O_UI:
            if (!cli_ui_parse(optarg, &c.ui))
                return bad("--ui", optarg);
            break;
        case O_LIVE: {
            char host[256];
            unsigned port;
            bool loop;
            if (!cli_live_parse(optarg, host, sizeof host, &port, &loop))
                return bad("--live-metrics", optarg);
            c.live_spec = optarg;
            break;
        }
        case O_LIVE_HOLD:
            if (!cli_parse_duration_in("replay", "--live-metrics-hold", optarg, 0, &c.live_hold_us))
                return 2;
            break;
        default:
            return cli_bad_option("replay", cmd_replay_options, argv);
        }
    }
    if (o->target && c.fleet.n) { /* one --target URL, then a list or a file */
        if (!cli_fleet_add_list(&c.fleet, o->target))
            return 2;
        o->target = NULL;
    }
    if (!cli_fleet_apply(&c.fleet, o, virt || c.fleet.find_replicas))
        return 2;
    if (o->http_client == LT_REPLAY_CLIENT_LEAN && o->target && strncmp(o->target, "http://", 7)) {
        cli_error("replay",
                  "the lean HTTP client speaks plain http:// only: use --http-client "
                  "curl (or auto) for %.8s... targets",
                  o->target);
        return 2;
    }
    if (merge) {
        /* The parts of an MPI job, merged after the fact (a job cut short). */
        if (!o->out_path || optind == argc) {
            cli_error("replay", "--merge needs -o RESULTS.lt.zst and the parts, in rank order");
            return 2;
        }
        if (lt_path_not_input(o->out_path, (const char *const *)argv + optind,
                              (size_t)(argc - optind), &err) < 0) {
            cli_error("replay", "%s", err.msg);
            return 2;
        }
        if (cli_dry_run())
            return 0;
        int m = lt_replay_merge(o->out_path, (const char *const *)argv + optind,
                                (size_t)(argc - optind), stdout, &err);
        if (m < 0) {
            cli_error("replay", "merge: %s", err.msg);
            return 1;
        }
        if (c.summary) {
            struct lt_analyze_opts ao;
            lt_analyze_opts_init(&ao);
            if (lt_analyze_print_summary(o->out_path, &ao, stdout, &err) < 0) {
                cli_error("replay", "summary: %s", err.msg);
                return 1;
            }
        }
        return m; /* 1: partial, some rank's requests are missing */
    }
    if (optind != argc - 1) {
        cli_error("replay", "give exactly one trace file (see --help)");
        return 2;
    }
    o->trace_path = argv[optind];
    if (!o->out_path) {
        cli_error("replay", "-o RESULTS.lt.zst is required");
        return 2;
    }
    if (!o->target && !c.target_sim) {
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
    if (!clash && c.sim.log_path) {
        inputs[n_in++] = o->out_path;
        clash = lt_path_not_input(c.sim.log_path, inputs, n_in, &err) < 0;
    }
    if (clash) {
        cli_error("replay", "%s", err.msg);
        return 2;
    }
    if (c.live_hold_us && !c.live_spec) {
        cli_error("replay", "--live-metrics-hold belongs to --live-metrics");
        return 2;
    }
    const char *no_dash = cli_ui_no_dashboard(virt);
    if (c.ui == CLI_UI_DASHBOARD && no_dash) {
        cli_error("replay", "--ui dashboard: %s (use --ui line or none)", no_dash);
        return 2;
    }
    if (no_dash && c.ui == CLI_UI_AUTO && !c.quiet && cli_ui_rank0() &&
        cli_ui_resolve(CLI_UI_AUTO) == CLI_UI_DASHBOARD)
        fprintf(stderr, "loadtrace replay: no dashboard: %s\n", no_dash);
    if (no_dash)
        c.ui = CLI_UI_LINE;
    if (c.ui == CLI_UI_DASHBOARD) {
        char why[128];
        if (!cli_ui_dashboard_possible(why, sizeof why)) {
            cli_error("replay", "--ui dashboard: %s (use --ui line or none)", why);
            return 2;
        }
    }
    c.ui = c.quiet ? CLI_UI_NONE : cli_ui_resolve(c.ui);
    if (find_max) {
        /* The search chooses the load: a load of the user's own would be
         * overruled, so it is refused. */
        if (!so.slo) {
            cli_error("replay", "--find-max needs --slo (e.g. ttft=2s,tpot=100ms)");
            return 2;
        }
        if (slo_pct > 0 && so.attain > 0 && so.attain != slo_pct) {
            cli_error("replay", "--slo %s names p%g but --attain says %g", so.slo, 100 * slo_pct,
                      so.attain);
            return 2;
        }
        if (slo_pct > 0)
            so.attain = slo_pct;
        if (c.fleet.find_replicas) {
            /* The fleet's size is what is searched, at the load given. */
            if (!c.target_sim || !(rate > 0) || have_arrivals || o->n_levels) {
                cli_error("replay", "--find-max replicas searches the sim's model in virtual "
                                    "time at a load: give --target sim and --rate R");
                return 2;
            }
            o->tt.rate = rate;
            so.quiet = c.quiet;
            return cli_fleet_find_replicas(o, &c.sim, &so);
        }
        if (have_arrivals || rate > 0 || o->tt.speed > 0 || o->n_levels || o->max_concurrency) {
            cli_error("replay", "--find-max chooses the load: drop --rate, --speed, "
                                "--concurrency, --arrivals and --max-concurrency");
            return 2;
        }
        if (virt && !c.target_sim) {
            cli_error("replay", "--virtual runs the sim's model: it needs --target sim");
            return 2;
        }
        if (virt && (c.sim.faults || c.sim.time_scale > 0)) {
            cli_error("replay", "--virtual: faults and --sim-time-scale need a live sim");
            return 2;
        }
        so.virtual_only = virt;
        so.target_sim = c.target_sim;
        so.sim = &c.sim;
        so.key_env = c.key_env;
        so.quiet = c.quiet;
        so.ui = (int)c.ui;
        return cli_replay_search(o, &so);
    } else if (so.slo || so.attain > 0 || so.virtual_first || so.max_probes || so.max_time_us ||
               so.precision > 0) {
        cli_error("replay", "--slo, --attain, --precision, --virtual-first, --max-probes and "
                            "--max-time belong to --find-max");
        return 2;
    }
    if (have_arrivals) {
        if (o->mode == LT_REPLAY_MODE_CONCURRENCY) {
            cli_error("replay", "--arrivals (open loop) and --concurrency (closed loop) "
                                "exclude each other");
            return 2;
        }
        if (!(rate > 0)) {
            cli_error("replay", "--arrivals needs --rate R");
            return 2;
        }
        o->mode = LT_REPLAY_MODE_RATE;
        o->rate = rate;
    } else if (o->mode == LT_REPLAY_MODE_CONCURRENCY) {
        if (rate > 0 || o->tt.speed > 0) {
            cli_error("replay", "--concurrency ignores time: --rate and --speed do not apply");
            return 2;
        }
    } else {
        o->tt.rate = rate;
        if (o->max_concurrency) {
            cli_error("replay", "--max-concurrency applies to open loop (--arrivals)");
            return 2;
        }
    }
    if (virt) {
        if (!c.target_sim) {
            cli_error("replay", "--virtual runs the sim's model, not a server: it needs "
                                "--target sim");
            return 2;
        }
        return cli_replay_virtual(o, &c.sim, c.summary, c.quiet);
    }
    if (cli_dry_run())
        return 0;
#ifdef LT_MPI
    /* Started by mpirun: one rank of a split replay (docs/replay-mpi.md). */
    if (lt_replay_mpi_wanted()) {
        if (c.target_sim) {
            cli_error("replay", "under mpirun, give --target URL (start one `loadtrace sim` "
                                "for all ranks), not --target sim");
            return 2;
        }
        return cli_replay_ranks(o, c.key_env, c.summary, c.quiet, c.keep_parts);
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
    return replay_main(&c);
}

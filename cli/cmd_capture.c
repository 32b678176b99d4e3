/*
 * loadtrace capture: run the recording reverse proxy until SIGINT or
 * SIGTERM, or (--from-log) turn a gateway's request log into a trace. The
 * work is in capture/; this file parses options, waits for the signal and
 * reports.
 */
#include "capture/capture_log.h"
#include "capture/capture_proxy.h"
#include "cli/capture_live.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/live_metrics.h"
#include "cli/ui_dash.h"
#include "base/lt_time.h"

#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>

#define MAX_REDACT 64

struct capture_opts {
    struct lt_capture_opts lib;
    const char *port_file;
    const char *from_log;
    const char *redact[MAX_REDACT];
    int n_redact;
    bool skip_bad;
    bool quiet;
    int64_t grace_us;      /* how long SIGTERM lets requests in flight finish */
    enum cli_ui ui;        /* --ui, resolved */
    const char *live_spec; /* --live-metrics */
};

/* What watches a running proxy: the dashboard and the live metrics page,
 * both fed by one cli_capture_live (NULL when neither was asked for). */
struct capture_watch {
    struct cli_capture_live *live;
    struct cli_live_http *http;
    struct cli_dash *dash;
    char write_failed[700]; /* said on the dashboard, and again after it */
};

static bool parse_size(const char *s, size_t *v)
{
    char *end;
    double d = strtod(s, &end);
    if (end == s || d <= 0)
        return false;
    double mul = 1;
    if (*end == 'k' || *end == 'K')
        mul = 1024;
    else if (*end == 'M' || *end == 'm')
        mul = 1024.0 * 1024;
    else if (*end == 'G' || *end == 'g')
        mul = 1024.0 * 1024 * 1024;
    if (mul != 1)
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || d * mul > 1e15)
        return false;
    *v = (size_t)(d * mul);
    return true;
}

static void on_skip(void *ud, const char *msg)
{
    if (!*(bool *)ud)
        cli_error("capture", "skipped %s", msg);
}

static int run_from_log(const struct capture_opts *o)
{
    bool quiet = o->quiet;
    struct lt_capture_log_opts lo = {.input = o->from_log,
                                     .output = o->lib.output,
                                     .session_header = o->lib.session_header,
                                     .keep_content = o->lib.keep_content,
                                     .block_tokens = o->lib.block_tokens,
                                     .skip_bad = o->skip_bad,
                                     .on_skip = on_skip,
                                     .ud = &quiet};
    struct lt_capture_log_stats st;
    struct lt_err err = {0};
    int rc = lt_capture_from_log(&lo, &st, &err);
    if (rc < 0) {
        cli_error("capture", "%s", err.msg);
        return 1;
    }
    if (!o->quiet)
        fprintf(stderr,
                "loadtrace capture: %" PRIu64 " records from %" PRIu64 " lines (%" PRIu64
                " skipped) written to %s\n",
                st.records, st.lines, st.skipped, o->lib.output);
    return 0;
}

/* Signals are taken by sigwait in this thread only: every thread the
 * proxy starts inherits the blocked mask. */
static void take_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* A file past its size limit (RLIMIT_FSIZE) is a failed write, said and
     * survived like a full disk, not a kill. */
    signal(SIGXFSZ, SIG_IGN);
    /* Two descriptors per stream (client and upstream). */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* The watch's figures come from every record as it is written: the hook
 * is set in lib before the proxy starts. */
static int watch_new(struct capture_watch *w, const struct capture_opts *o, const char *origin,
                     struct lt_capture_opts *lib, struct lt_err *err)
{
    if (o->ui != CLI_UI_DASHBOARD && !o->live_spec)
        return 0;
    if (!(w->live = cli_capture_live_new(origin, err)))
        return -1;
    lib->on_record = cli_capture_live_record;
    lib->on_record_ud = w->live;
    return 0;
}

/* The live page and the dashboard over a proxy that listens on port. A
 * page or a dashboard that cannot start is said, and the capture goes on. */
static void watch_start(struct capture_watch *w, const struct capture_opts *o,
                        struct lt_capture *cap, unsigned port, const char *origin)
{
    if (!w->live)
        return;
    char title[600];
    snprintf(title, sizeof title, "port %u -> %s", port, origin);
    cli_capture_live_title(w->live, title);
    cli_capture_live_attach(w->live, cap);
    struct lt_err err = {0};
    if (o->live_spec) {
        char host[256], lurl[300];
        unsigned lport;
        bool loop;
        cli_live_parse(o->live_spec, host, sizeof host, &lport, &loop); /* checked in parsing */
        if (!(w->http = cli_live_http_start_fn(host, lport, cli_capture_live_prom, w->live, lurl,
                                               sizeof lurl, &err)))
            cli_error("capture", "%s (capture goes on without it)", err.msg);
        else if (!loop)
            cli_error("capture",
                      "WARNING: --live-metrics %s is not a loopback address: anyone who "
                      "reaches it can read capture's figures (counts and times; never prompts, "
                      "headers or keys)",
                      host);
        if (w->http && !o->quiet)
            fprintf(stderr, "loadtrace capture: live metrics on %s\n", lurl);
        if (w->http)
            cli_capture_live_url(w->live, lurl);
    }
    if (o->ui == CLI_UI_DASHBOARD &&
        !(w->dash = cli_dash_start_fn("capture", cli_capture_live_render, w->live,
                                      " q or Ctrl-C stops the capture (as SIGINT: it drains, then "
                                      "closes the trace)",
                                      &err)))
        cli_error("capture", "no dashboard (%s): the lines instead", err.msg);
}

static void watch_state(struct capture_watch *w, const char *state)
{
    if (w->live)
        cli_capture_live_state(w->live, state);
}

/* The proxy stopped (rc its stop's status): the last frame stays on the
 * normal screen, and a failed write said on the dashboard is said again. */
static void watch_end(struct capture_watch *w, const struct lt_capture_stats *st, int rc, int sig)
{
    if (w->live) {
        cli_capture_live_final(w->live, st);
        watch_state(w, rc < 0          ? "stopped: the trace is not whole"
                       : sig == SIGINT ? "stopped (interrupted): the trace is closed"
                                       : "stopped (terminated): the trace is closed");
    }
    cli_dash_stop(w->dash, stderr);
    cli_live_http_stop(w->http);
    cli_capture_live_free(w->live);
    if (w->dash && w->write_failed[0])
        cli_error("capture", "%s", w->write_failed);
}

/* Wait for a signal, and say a failed write of the trace when it happens:
 * the proxy goes on relaying, and nothing more is recorded. */
static int wait_signal(const sigset_t *set, struct lt_capture *cap, struct capture_watch *w)
{
    int sig = 0;
    bool said = false;
    while (sig <= 0) {
        struct timespec tick = {0, 200 * 1000000L};
        sig = sigtimedwait(set, NULL, &tick);
        struct lt_err werr = {0};
        if (!said && lt_capture_write_failed(cap, &werr)) {
            snprintf(w->write_failed, sizeof w->write_failed,
                     "%s; requests from now on are relayed but not recorded (what reached the "
                     "file before stays readable; stop with SIGINT or SIGTERM)",
                     werr.msg);
            if (w->dash)
                watch_state(w, w->write_failed);
            else
                cli_error("capture", "%s", w->write_failed);
            said = true;
        }
    }
    return sig;
}

/* Drain: nothing new, the requests in flight get the grace period; a
 * second signal ends it. */
static void drain(const sigset_t *set, struct lt_capture *cap, int64_t grace_us,
                  struct capture_watch *w)
{
    lt_capture_quiesce(cap);
    lt_mono deadline = lt_mono_add_ns(lt_mono_now(), grace_us * 1000);
    while (lt_capture_active(cap) > 0 && lt_mono_diff_us(deadline, lt_mono_now()) > 0) {
        if (w->live) {
            char m[160];
            snprintf(m, sizeof m,
                     "draining: %llu requests in flight may finish for %.0f s more (a second "
                     "Ctrl-C cuts them)",
                     (unsigned long long)lt_capture_active(cap),
                     (double)lt_mono_diff_us(deadline, lt_mono_now()) / 1e6);
            watch_state(w, m);
        }
        struct timespec ts = {0, 50 * 1000000L};
        if (sigtimedwait(set, NULL, &ts) > 0)
            break;
    }
}

static void say_stopped(int sig, uint64_t at_signal, uint64_t cut,
                        const struct lt_capture_stats *st)
{
    fprintf(stderr,
            "loadtrace capture: drained: %" PRIu64 " requests in flight at the signal, %" PRIu64
            " cut after the grace period\n",
            at_signal, cut);
    fprintf(stderr,
            "loadtrace capture: %s: %" PRIu64 " requests, %" PRIu64 " recorded, %" PRIu64
            " not recorded (too many held), %" PRIu64
            " lost (never finished, or not written), %" PRIu64 " clients gone, %" PRIu64
            " upstream failures, %" PRIu64 " too large, %" PRIu64
            " with values not as sent or text cut (their key `changed`), %" PRIu64
            " refused at the limit of bodies held (503)\n",
            sig == SIGINT ? "interrupted" : "terminated", st->requests, st->recorded, st->dropped,
            st->lost, st->client_gone, st->upstream_failed, st->too_large, st->changed, st->busy);
}

static int run_proxy(const struct capture_opts *o)
{
    sigset_t set;
    take_signals(&set);
    struct lt_err err = {0};
    struct lt_capture_opts lib = o->lib;
    char origin[512];
    lt_capture_url_origin(o->lib.upstream, origin, sizeof origin);
    struct capture_watch w = {0};
    struct lt_capture *cap = NULL;
    if (watch_new(&w, o, origin, &lib, &err) < 0 || !(cap = lt_capture_start(&lib, &err))) {
        cli_error("capture", "%s", err.msg);
        cli_capture_live_free(w.live);
        return 1;
    }
    unsigned port = lt_capture_port(cap);
    if (o->port_file && cli_write_port_file(o->port_file, port) < 0) {
        cli_error("capture", "cannot write the port file %s", o->port_file);
        lt_capture_stop(cap, NULL, NULL);
        cli_capture_live_free(w.live);
        return 1;
    }
    if (!o->quiet)
        fprintf(stderr,
                "loadtrace capture: listening on port %u, forwarding to %s, recording to %s\n",
                port, origin, o->lib.output);
    watch_start(&w, o, cap, port, origin);
    int sig = wait_signal(&set, cap, &w);
    uint64_t at_signal = lt_capture_active(cap);
    drain(&set, cap, o->grace_us, &w);
    uint64_t cut = lt_capture_active(cap);
    struct lt_capture_stats st;
    if (w.live) {
        watch_state(&w, "stopping: writing the last records");
        cli_capture_live_attach(w.live, NULL); /* cap is freed by the stop */
    }
    int rc = lt_capture_stop(cap, &st, &err);
    watch_end(&w, &st, rc, sig);
    if (!o->quiet)
        say_stopped(sig, at_signal, cut, &st);
    if (rc < 0) {
        cli_error("capture", "%s", err.msg);
        return 1;
    }
    return 0;
}

enum {
    O_UPSTREAM = 256,
    O_LISTEN,
    O_PORT_FILE,
    O_SESSION,
    O_REDACT,
    O_KEEP,
    O_NO_USAGE,
    O_MAX_BODY,
    O_BLOCK,
    O_MAX_CONN,
    O_CONNECT,
    O_CACERT,
    O_FROM_LOG,
    O_SKIP_BAD,
    O_GRACE,
    O_THREADS,
    O_MAX_PENDING,
    O_UI,
    O_LIVE
};

/* Its options, written once (cli/cli_opts.h): the usage, getopt's table
 * and the completions are made from them. A new option is a row here and
 * a case in capture_opt. */
static const struct cli_opt capture_opts_table[] = {
    {"upstream", 0, "URL", O_UPSTREAM,
     "the server to forward to (http:// or https://; TLS\n"
     "certificates are always verified)"},
    {"output", 'o', "OUT", 'o', "the trace to write"},
    {"listen", 0, "ADDR:PORT", O_LISTEN,
     "where to listen (default 127.0.0.1:8080; port 0\n"
     "picks a free port; [V6ADDR]:PORT for IPv6)"},
    {"port-file", 0, "FILE", O_PORT_FILE, "write the port to FILE once listening"},
    {"session-header", 0, "NAME", O_SESSION,
     "a request header whose value names the session\n"
     "(default: a request whose messages extend an\n"
     "earlier request's messages continues its session)"},
    {"redact-header", 0, "NAME", O_REDACT,
     "a header that must never be stored (repeatable);\n"
     "capture stores no header at all, and refuses to\n"
     "use a listed header as --session-header"},
    {"keep-content", 0, NULL, O_KEEP,
     "also record prompt text (`text`) and answer text\n"
     "(`out_text`)"},
    {"no-usage", 0, NULL, O_NO_USAGE,
     "do not ask the upstream for usage on streams whose\n"
     "client did not (token counts are then estimated\n"
     "and marked `est`); by default capture asks, and\n"
     "removes the extra usage chunk before the client\n"
     "sees it"},
    {"max-body", 0, "SIZE", O_MAX_BODY,
     "request body limit, bytes with optional k, M or G\n"
     "(default 32M); larger bodies get a 413"},
    {"max-pending", 0, "SIZE", O_MAX_PENDING,
     "all request bodies held at once (default 4 x\n"
     "--max-body, at least 256M); past it a 503"},
    {"block-tokens", 0, "N", O_BLOCK, "prefix block size in estimated tokens (default 512)"},
    {"max-connections", 0, "N", O_MAX_CONN, "concurrent client connections (default 16384)"},
    {"threads", 0, "N", O_THREADS,
     "event-loop threads, each serving its clients and\n"
     "their upstream transfers (default 1)"},
    {"connect-timeout", 0, "DUR", O_CONNECT, "upstream connect timeout (default 10s)"},
    {"grace", 0, "DUR", O_GRACE,
     "on SIGINT or SIGTERM, how long requests in flight\n"
     "may take to finish (default 30s; 0: cut at once)"},
    {"cacert", 0, "FILE", O_CACERT, "CA certificates for an https upstream"},
    {"from-log", 0, "LOG", O_FROM_LOG,
     "read a gateway's JSON-lines request log instead of\n"
     "proxying (- for standard input; keys: see\n"
     "capture/README.md)"},
    {"skip-bad", 0, NULL, O_SKIP_BAD, "--from-log: skip lines that cannot be read"},
    {"ui", 0, "auto|dashboard|line|none", O_UI,
     "while it runs: a full-screen dashboard of\n"
     "connections, records, bytes relayed, the writer's\n"
     "backlog, throughput and TTFT/TPOT/E2E, or the lines\n"
     "(default auto: the dashboard when standard error is\n"
     "a terminal; docs/dashboard.md)"},
    {"live-metrics", 0, "[HOST:]PORT", O_LIVE,
     "serve capture's own figures for Prometheus on\n"
     "http://HOST:PORT/metrics (HOST default 127.0.0.1)"},
    {"quiet", 'q', NULL, 'q', "no messages on stderr but errors"},
    {0}};

const struct cli_spec cmd_capture_spec = {
    .cmd = "capture",
    .synopsis = "usage: loadtrace capture --upstream URL -o OUT.lt.zst [options]\n"
                "       loadtrace capture --from-log LOG.jsonl -o OUT.lt.zst [options]\n"
                "\n"
                "Run a reverse proxy in front of an OpenAI-compatible server: every request\n"
                "and every streamed byte passes through unchanged, and each chat or\n"
                "completions request is recorded (arrival, model, message shape, tools,\n"
                "tool calls, token usage, finish reason, status, TTFT and E2E as seen at the\n"
                "proxy, prefix block hashes, session) as each request finishes (readers see\n"
                "arrival order). SIGINT or SIGTERM drains: no new connections, requests in\n"
                "flight may finish within --grace, then the rest are cut and recorded as\n"
                "such; a second signal cuts at once. The file is readable at any time\n"
                "(frames are closed at least every second). GET /healthz is capture's own.\n"
                "\n"
                "Never recorded: any header (Authorization, api-key, cookies included) and,\n"
                "unless --keep-content, any prompt or answer text. Block hashes and session\n"
                "ids are keyed hashes with a key drawn at start and never stored.\n"
                "\n",
    .opts = capture_opts_table,
    .col = 25,
};

/* A size option's value: false (said why) when it is not one. */
static bool size_opt(const char *opt, const char *arg, const char *example, bool nonzero, size_t *v)
{
    if (parse_size(arg, v) && (*v || !nonzero))
        return true;
    cli_error("capture", "%s %s: expected a size such as %s", opt, arg, example);
    return false;
}

static int capture_opt(void *ud, int id, char *arg)
{
    struct capture_opts *o = ud;
    struct lt_capture_opts *lib = &o->lib;
    uint64_t u;
    switch (id) {
    case O_UPSTREAM:
        lib->upstream = arg;
        break;
    case 'o':
        lib->output = arg;
        break;
    case O_LISTEN:
        lib->listen = arg;
        break;
    case O_PORT_FILE:
        o->port_file = arg;
        break;
    case O_SESSION:
        lib->session_header = arg;
        break;
    case O_REDACT:
        if (o->n_redact == MAX_REDACT) {
            cli_error("capture", "at most %d --redact-header", MAX_REDACT);
            return 2;
        }
        o->redact[o->n_redact++] = arg;
        break;
    case O_KEEP:
        lib->keep_content = true;
        break;
    case O_NO_USAGE:
        lib->no_usage = true;
        break;
    case O_MAX_BODY:
        return size_opt("--max-body", arg, "32M", false, &lib->max_body) ? 0 : 2;
    case O_MAX_PENDING:
        return size_opt("--max-pending", arg, "256M", true, &lib->max_pending) ? 0 : 2;
    case O_BLOCK:
        if (!cli_parse_u64_in("capture", "--block-tokens", arg, 1, 1000000, &u))
            return 2;
        lib->block_tokens = (uint32_t)u;
        break;
    case O_MAX_CONN:
        if (!cli_parse_u64_in("capture", "--max-connections", arg, 1, 1000000, &u))
            return 2;
        lib->max_connections = (unsigned)u;
        break;
    case O_CONNECT:
        if (!cli_parse_duration_in("capture", "--connect-timeout", arg, 1000,
                                   &lib->connect_timeout_us))
            return 2;
        break;
    case O_THREADS:
        if (!cli_parse_u64(arg, &u) || u == 0 || u > 64) {
            cli_error("capture", "--threads %s: expected 1 to 64", arg);
            return 2;
        }
        lib->threads = (unsigned)u;
        break;
    case O_GRACE:
        if (!strcmp(arg, "0")) {
            o->grace_us = 0;
        } else if (!cli_parse_duration_us(arg, &o->grace_us) || o->grace_us < 0) {
            cli_error("capture", "--grace %s: expected a duration such as 30s", arg);
            return 2;
        }
        break;
    case O_CACERT:
        lib->cacert = arg;
        break;
    case O_FROM_LOG:
        o->from_log = arg;
        break;
    case O_SKIP_BAD:
        o->skip_bad = true;
        break;
    case O_UI:
        if (!cli_ui_parse(arg, &o->ui)) {
            cli_error("capture", "--ui %s: expected auto, dashboard, line or none", arg);
            return 2;
        }
        break;
    case O_LIVE: {
        char host[256];
        unsigned port;
        bool loop;
        if (!cli_live_parse(arg, host, sizeof host, &port, &loop)) {
            cli_error("capture", "--live-metrics %s: expected [HOST:]PORT", arg);
            return 2;
        }
        o->live_spec = arg;
        break;
    }
    case 'q':
        o->quiet = true;
        break;
    }
    return 0;
}

/* Whether the watch asked for can be had: a dashboard needs a terminal,
 * and a log read in one go has nothing to watch. Returns 0 or 2. */
static int check_watch(struct capture_opts *o)
{
    if (o->from_log && (o->ui == CLI_UI_DASHBOARD || o->live_spec)) {
        cli_error("capture", "--ui dashboard and --live-metrics watch the proxy; --from-log "
                             "reads a file in one go");
        return 2;
    }
    char why[128];
    if (o->ui == CLI_UI_DASHBOARD && !cli_ui_dashboard_possible(why, sizeof why)) {
        cli_error("capture", "--ui dashboard: %s (use --ui line or none)", why);
        return 2;
    }
    o->ui = o->quiet || o->from_log ? CLI_UI_NONE : cli_ui_resolve(o->ui);
    return 0;
}

int cmd_capture(int argc, char **argv)
{
    struct capture_opts o = {.lib = {.listen = "127.0.0.1:8080"}, .grace_us = 30000000};
    int prc = cli_opts_parse(&cmd_capture_spec, argc, argv, capture_opt, &o);
    if (prc >= 0)
        return prc;
    if (optind != argc || !o.lib.output || (!o.from_log && !o.lib.upstream)) {
        cli_opts_usage(&cmd_capture_spec, stderr);
        return 2;
    }
    for (int i = 0; i < o.n_redact && o.lib.session_header; i++)
        if (!strcasecmp(o.redact[i], o.lib.session_header)) {
            cli_error("capture", "--session-header %s is listed in --redact-header",
                      o.lib.session_header);
            return 2;
        }
    if (check_watch(&o))
        return 2;
    if (cli_dry_run())
        return 0;
    return o.from_log ? run_from_log(&o) : run_proxy(&o);
}

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

static const char capture_usage[] =
    "usage: loadtrace capture --upstream URL -o OUT.lt.zst [options]\n"
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
    "\n"
    "  --upstream URL         the server to forward to (http:// or https://; TLS\n"
    "                         certificates are always verified)\n"
    "  -o, --output OUT       the trace to write\n"
    "  --listen ADDR:PORT     where to listen (default 127.0.0.1:8080; port 0\n"
    "                         picks a free port; [V6ADDR]:PORT for IPv6)\n"
    "  --port-file FILE       write the port to FILE once listening\n"
    "  --session-header NAME  a request header whose value names the session\n"
    "                         (default: a request whose messages extend an\n"
    "                         earlier request's messages continues its session)\n"
    "  --redact-header NAME   a header that must never be stored (repeatable);\n"
    "                         capture stores no header at all, and refuses to\n"
    "                         use a listed header as --session-header\n"
    "  --keep-content         also record prompt text (`text`) and answer text\n"
    "                         (`out_text`)\n"
    "  --no-usage             do not ask the upstream for usage on streams whose\n"
    "                         client did not (token counts are then estimated\n"
    "                         and marked `est`); by default capture asks, and\n"
    "                         removes the extra usage chunk before the client\n"
    "                         sees it\n"
    "  --max-body SIZE        request body limit, bytes with optional k, M or G\n"
    "                         (default 32M); larger bodies get a 413\n"
    "  --max-pending SIZE     all request bodies held at once (default 4 x\n"
    "                         --max-body, at least 256M); past it a 503\n"
    "  --block-tokens N       prefix block size in estimated tokens (default 512)\n"
    "  --max-connections N    concurrent client connections (default 16384)\n"
    "  --threads N            event-loop threads, each serving its clients and\n"
    "                         their upstream transfers (default 1)\n"
    "  --connect-timeout DUR  upstream connect timeout (default 10s)\n"
    "  --grace DUR            on SIGINT or SIGTERM, how long requests in flight\n"
    "                         may take to finish (default 30s; 0: cut at once)\n"
    "  --cacert FILE          CA certificates for an https upstream\n"
    "  --from-log LOG         read a gateway's JSON-lines request log instead of\n"
    "                         proxying (- for standard input; keys: see\n"
    "                         capture/README.md)\n"
    "  --skip-bad             --from-log: skip lines that cannot be read\n"
    "  --ui auto|dashboard|line|none   while it runs: a full-screen dashboard of\n"
    "                         connections, records, bytes relayed, the writer's\n"
    "                         backlog, throughput and TTFT/TPOT/E2E, or the lines\n"
    "                         (default auto: the dashboard when standard error is\n"
    "                         a terminal; docs/dashboard.md)\n"
    "  --live-metrics [HOST:]PORT  serve capture's own figures for Prometheus on\n"
    "                         http://HOST:PORT/metrics (HOST default 127.0.0.1)\n"
    "  -q, --quiet            no messages on stderr but errors\n"
    "  -h, --help             this text\n";

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

static int run_proxy(const struct capture_opts *o)
{
    /* Signals are taken by sigwait in this thread only: every thread the
     * proxy starts inherits the blocked mask. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
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
    struct lt_err err = {0};
    struct lt_capture_opts lib = o->lib;
    char origin[512];
    lt_capture_url_origin(o->lib.upstream, origin, sizeof origin);
    struct cli_capture_live *live = NULL;
    if (o->ui == CLI_UI_DASHBOARD || o->live_spec) {
        if (!(live = cli_capture_live_new(origin, &err))) {
            cli_error("capture", "%s", err.msg);
            return 1;
        }
        lib.on_record = cli_capture_live_record;
        lib.on_record_ud = live;
    }
    struct lt_capture *cap = lt_capture_start(&lib, &err);
    if (!cap) {
        cli_error("capture", "%s", err.msg);
        cli_capture_live_free(live);
        return 1;
    }
    unsigned port = lt_capture_port(cap);
    if (o->port_file && cli_write_port_file(o->port_file, port) < 0) {
        cli_error("capture", "cannot write the port file %s", o->port_file);
        lt_capture_stop(cap, NULL, NULL);
        cli_capture_live_free(live);
        return 1;
    }
    if (!o->quiet)
        fprintf(stderr,
                "loadtrace capture: listening on port %u, forwarding to %s, recording to %s\n",
                port, origin, o->lib.output);
    if (live) {
        char title[600];
        snprintf(title, sizeof title, "port %u -> %s", port, origin);
        cli_capture_live_title(live, title);
        cli_capture_live_attach(live, cap);
    }
    struct cli_live_http *http = NULL;
    if (o->live_spec) {
        char host[256], lurl[300];
        unsigned lport;
        bool loop;
        cli_live_parse(o->live_spec, host, sizeof host, &lport, &loop); /* checked in parsing */
        if (!(http = cli_live_http_start_fn(host, lport, cli_capture_live_prom, live, lurl,
                                            sizeof lurl, &err)))
            cli_error("capture", "%s (capture goes on without it)", err.msg);
        else if (!loop)
            cli_error("capture",
                      "WARNING: --live-metrics %s is not a loopback address: anyone who "
                      "reaches it can read capture's figures (counts and times; never prompts, "
                      "headers or keys)",
                      host);
        if (http && !o->quiet)
            fprintf(stderr, "loadtrace capture: live metrics on %s\n", lurl);
        if (http)
            cli_capture_live_url(live, lurl);
    }
    struct cli_dash *dash = NULL;
    if (o->ui == CLI_UI_DASHBOARD &&
        !(dash = cli_dash_start_fn("capture", cli_capture_live_render, live,
                                   " q or Ctrl-C stops the capture (as SIGINT: it drains, then "
                                   "closes the trace)",
                                   &err)))
        cli_error("capture", "no dashboard (%s): the lines instead", err.msg);
    /* Wait for a signal, and say a failed write of the trace when it
     * happens: the proxy goes on relaying, and nothing more is recorded. */
    int sig = 0;
    bool said = false;
    char write_failed[700] = "";
    while (sig <= 0) {
        struct timespec tick = {0, 200 * 1000000L};
        sig = sigtimedwait(&set, NULL, &tick);
        struct lt_err werr = {0};
        if (!said && lt_capture_write_failed(cap, &werr)) {
            char m[700];
            snprintf(m, sizeof m,
                     "%s; requests from now on are relayed but not recorded (what reached the "
                     "file before stays readable; stop with SIGINT or SIGTERM)",
                     werr.msg);
            if (dash) /* said on the dashboard now, and again after it */
                cli_capture_live_state(live, m);
            else
                cli_error("capture", "%s", m);
            snprintf(write_failed, sizeof write_failed, "%s", m);
            said = true;
        }
    }
    /* Drain: nothing new, the requests in flight get the grace period; a
     * second signal ends it. */
    lt_capture_quiesce(cap);
    uint64_t at_signal = lt_capture_active(cap);
    lt_mono deadline = lt_mono_add_ns(lt_mono_now(), o->grace_us * 1000);
    while (lt_capture_active(cap) > 0 && lt_mono_diff_us(deadline, lt_mono_now()) > 0) {
        if (live) {
            char m[160];
            snprintf(m, sizeof m,
                     "draining: %llu requests in flight may finish for %.0f s more (a second "
                     "Ctrl-C cuts them)",
                     (unsigned long long)lt_capture_active(cap),
                     (double)lt_mono_diff_us(deadline, lt_mono_now()) / 1e6);
            cli_capture_live_state(live, m);
        }
        struct timespec ts = {0, 50 * 1000000L};
        if (sigtimedwait(&set, NULL, &ts) > 0)
            break;
    }
    uint64_t cut = lt_capture_active(cap);
    struct lt_capture_stats st;
    if (live) {
        cli_capture_live_state(live, "stopping: writing the last records");
        cli_capture_live_attach(live, NULL); /* cap is freed by the stop */
    }
    int rc = lt_capture_stop(cap, &st, &err);
    if (live) {
        cli_capture_live_final(live, &st);
        cli_capture_live_state(live, rc < 0          ? "stopped: the trace is not whole"
                                     : sig == SIGINT ? "stopped (interrupted): the trace is closed"
                                                     : "stopped (terminated): the trace is closed");
    }
    cli_dash_stop(dash, stderr); /* its last frame stays on the normal screen */
    cli_live_http_stop(http);
    cli_capture_live_free(live);
    if (dash && write_failed[0])
        cli_error("capture", "%s", write_failed);
    if (!o->quiet)
        fprintf(stderr,
                "loadtrace capture: drained: %" PRIu64 " requests in flight at the signal, %" PRIu64
                " cut after the grace period\n",
                at_signal, cut);
    if (!o->quiet)
        fprintf(stderr,
                "loadtrace capture: %s: %" PRIu64 " requests, %" PRIu64 " recorded, %" PRIu64
                " not recorded (too many held), %" PRIu64
                " lost (never finished, or not written), %" PRIu64 " clients gone, %" PRIu64
                " upstream failures, %" PRIu64 " too large, %" PRIu64
                " with values not as sent or text cut (their key `changed`), %" PRIu64
                " refused at the limit of bodies held (503)\n",
                sig == SIGINT ? "interrupted" : "terminated", st.requests, st.recorded, st.dropped,
                st.lost, st.client_gone, st.upstream_failed, st.too_large, st.changed, st.busy);
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

/* Its options: getopt_long's table, which the completions and the
 * "did you mean" of a mistyped option read too (cli/commands.h). */
const struct option cmd_capture_options[] = {
    {"upstream", required_argument, NULL, O_UPSTREAM},
    {"output", required_argument, NULL, 'o'},
    {"listen", required_argument, NULL, O_LISTEN},
    {"port-file", required_argument, NULL, O_PORT_FILE},
    {"session-header", required_argument, NULL, O_SESSION},
    {"redact-header", required_argument, NULL, O_REDACT},
    {"keep-content", no_argument, NULL, O_KEEP},
    {"no-usage", no_argument, NULL, O_NO_USAGE},
    {"max-body", required_argument, NULL, O_MAX_BODY},
    {"block-tokens", required_argument, NULL, O_BLOCK},
    {"max-connections", required_argument, NULL, O_MAX_CONN},
    {"connect-timeout", required_argument, NULL, O_CONNECT},
    {"cacert", required_argument, NULL, O_CACERT},
    {"from-log", required_argument, NULL, O_FROM_LOG},
    {"skip-bad", no_argument, NULL, O_SKIP_BAD},
    {"grace", required_argument, NULL, O_GRACE},
    {"threads", required_argument, NULL, O_THREADS},
    {"max-pending", required_argument, NULL, O_MAX_PENDING},
    {"ui", required_argument, NULL, O_UI},
    {"live-metrics", required_argument, NULL, O_LIVE},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};

int cmd_capture(int argc, char **argv)
{
    struct capture_opts o = {.lib = {.listen = "127.0.0.1:8080"}, .grace_us = 30000000};
    uint64_t u;
    int c;
    while ((c = getopt_long(argc, argv, "o:qh", cmd_capture_options, NULL)) != -1) {
        switch (c) {
        case O_UPSTREAM:
            o.lib.upstream = optarg;
            break;
        case 'o':
            o.lib.output = optarg;
            break;
        case O_LISTEN:
            o.lib.listen = optarg;
            break;
        case O_PORT_FILE:
            o.port_file = optarg;
            break;
        case O_SESSION:
            o.lib.session_header = optarg;
            break;
        case O_REDACT:
            if (o.n_redact == MAX_REDACT) {
                cli_error("capture", "at most %d --redact-header", MAX_REDACT);
                return 2;
            }
            o.redact[o.n_redact++] = optarg;
            break;
        case O_KEEP:
            o.lib.keep_content = true;
            break;
        case O_NO_USAGE:
            o.lib.no_usage = true;
            break;
        case O_MAX_BODY:
            if (!parse_size(optarg, &o.lib.max_body)) {
                cli_error("capture", "--max-body %s: expected a size such as 32M", optarg);
                return 2;
            }
            break;
        case O_MAX_PENDING:
            if (!parse_size(optarg, &o.lib.max_pending) || !o.lib.max_pending) {
                cli_error("capture", "--max-pending %s: expected a size such as 256M", optarg);
                return 2;
            }
            break;
        case O_BLOCK:
            if (!cli_parse_u64_in("capture", "--block-tokens", optarg, 1, 1000000, &u))
                return 2;
            o.lib.block_tokens = (uint32_t)u;
            break;
        case O_MAX_CONN:
            if (!cli_parse_u64_in("capture", "--max-connections", optarg, 1, 1000000, &u))
                return 2;
            o.lib.max_connections = (unsigned)u;
            break;
        case O_CONNECT:
            if (!cli_parse_duration_in("capture", "--connect-timeout", optarg, 1000,
                                       &o.lib.connect_timeout_us))
                return 2;
            break;
        case O_THREADS:
            if (!cli_parse_u64(optarg, &u) || u == 0 || u > 64) {
                cli_error("capture", "--threads %s: expected 1 to 64", optarg);
                return 2;
            }
            o.lib.threads = (unsigned)u;
            break;
        case O_GRACE:
            if (!strcmp(optarg, "0")) {
                o.grace_us = 0;
            } else if (!cli_parse_duration_us(optarg, &o.grace_us) || o.grace_us < 0) {
                cli_error("capture", "--grace %s: expected a duration such as 30s", optarg);
                return 2;
            }
            break;
        case O_CACERT:
            o.lib.cacert = optarg;
            break;
        case O_FROM_LOG:
            o.from_log = optarg;
            break;
        case O_SKIP_BAD:
            o.skip_bad = true;
            break;
        case O_UI:
            if (!cli_ui_parse(optarg, &o.ui)) {
                cli_error("capture", "--ui %s: expected auto, dashboard, line or none", optarg);
                return 2;
            }
            break;
        case O_LIVE: {
            char host[256];
            unsigned port;
            bool loop;
            if (!cli_live_parse(optarg, host, sizeof host, &port, &loop)) {
                cli_error("capture", "--live-metrics %s: expected [HOST:]PORT", optarg);
                return 2;
            }
            o.live_spec = optarg;
            break;
        }
        case 'q':
            o.quiet = true;
            break;
        case 'h':
            fputs(capture_usage, stdout);
            return 0;
        default:
            return cli_bad_option("capture", cmd_capture_options, argv);
        }
    }
    if (optind != argc || !o.lib.output || (!o.from_log && !o.lib.upstream)) {
        fputs(capture_usage, stderr);
        return 2;
    }
    for (int i = 0; i < o.n_redact && o.lib.session_header; i++)
        if (!strcasecmp(o.redact[i], o.lib.session_header)) {
            cli_error("capture", "--session-header %s is listed in --redact-header",
                      o.lib.session_header);
            return 2;
        }
    if (o.from_log && (o.ui == CLI_UI_DASHBOARD || o.live_spec)) {
        cli_error("capture", "--ui dashboard and --live-metrics watch the proxy; --from-log "
                             "reads a file in one go");
        return 2;
    }
    if (o.ui == CLI_UI_DASHBOARD) {
        char why[128];
        if (!cli_ui_dashboard_possible(why, sizeof why)) {
            cli_error("capture", "--ui dashboard: %s (use --ui line or none)", why);
            return 2;
        }
    }
    o.ui = o.quiet || o.from_log ? CLI_UI_NONE : cli_ui_resolve(o.ui);
    if (cli_dry_run())
        return 0;
    return o.from_log ? run_from_log(&o) : run_proxy(&o);
}

/*
 * loadtrace capture: run the recording reverse proxy until SIGINT or
 * SIGTERM, or (--from-log) turn a gateway's request log into a trace. The
 * work is in capture/; this file parses options, waits for the signal and
 * reports.
 */
#include "capture/capture_log.h"
#include "capture/capture_proxy.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
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
    int64_t grace_us; /* how long SIGTERM lets requests in flight finish */
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
    struct lt_capture *cap = lt_capture_start(&o->lib, &err);
    if (!cap) {
        cli_error("capture", "%s", err.msg);
        return 1;
    }
    unsigned port = lt_capture_port(cap);
    if (o->port_file && cli_write_port_file(o->port_file, port) < 0) {
        cli_error("capture", "cannot write the port file %s", o->port_file);
        lt_capture_stop(cap, NULL, NULL);
        return 1;
    }
    char origin[512];
    lt_capture_url_origin(o->lib.upstream, origin, sizeof origin);
    if (!o->quiet)
        fprintf(stderr,
                "loadtrace capture: listening on port %u, forwarding to %s, recording to %s\n",
                port, origin, o->lib.output);
    /* Wait for a signal, and say a failed write of the trace when it
     * happens: the proxy goes on relaying, and nothing more is recorded. */
    int sig = 0;
    bool said = false;
    while (sig <= 0) {
        struct timespec tick = {0, 200 * 1000000L};
        sig = sigtimedwait(&set, NULL, &tick);
        struct lt_err werr = {0};
        if (!said && lt_capture_write_failed(cap, &werr)) {
            cli_error("capture",
                      "%s; requests from now on are relayed but not recorded (what reached the "
                      "file before stays readable; stop with SIGINT or SIGTERM)",
                      werr.msg);
            said = true;
        }
    }
    /* Drain: nothing new, the requests in flight get the grace period; a
     * second signal ends it. */
    lt_capture_quiesce(cap);
    uint64_t at_signal = lt_capture_active(cap);
    lt_mono deadline = lt_mono_add_ns(lt_mono_now(), o->grace_us * 1000);
    while (lt_capture_active(cap) > 0 && lt_mono_diff_us(deadline, lt_mono_now()) > 0) {
        struct timespec ts = {0, 50 * 1000000L};
        if (sigtimedwait(&set, NULL, &ts) > 0)
            break;
    }
    uint64_t cut = lt_capture_active(cap);
    struct lt_capture_stats st;
    int rc = lt_capture_stop(cap, &st, &err);
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
    O_MAX_PENDING
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
    case 'q':
        o->quiet = true;
        break;
    }
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
    if (cli_dry_run())
        return 0;
    return o.from_log ? run_from_log(&o) : run_proxy(&o);
}

/*
 * --live-metrics: the client's live figures (replay/replay_live.h) served
 * in the Prometheus text format on GET /metrics while a run goes, from
 * libmicrohttpd's own thread (docs/dashboard.md "Prometheus").
 */
#ifndef LT_CLI_LIVE_METRICS_H
#define LT_CLI_LIVE_METRICS_H

#include "base/lt_buf.h"
#include "base/lt_err.h"
#include "replay/replay_live.h"

#include <stdbool.h>
#include <stddef.h>

struct cli_live_http;

/* Parse --live-metrics [HOST:]PORT (PORT alone: 127.0.0.1; [::1]:PORT for
 * IPv6) into host and *port; *loopback says whether HOST is this machine
 * only. false on a malformed value. */
bool cli_live_parse(const char *spec, char *host, size_t host_n, unsigned *port, bool *loopback);

/* Serve l on host:port (port 0: a free one); url gets
 * http://HOST:PORT/metrics. NULL with err filled when it cannot listen. */
struct cli_live_http *cli_live_http_start(const char *host, unsigned port, struct lt_replay_live *l,
                                          char *url, size_t url_n, struct lt_err *err);
/* After the run: keep serving for hold_us, or until SIGINT or SIGTERM
 * (caught meanwhile), saying so on stderr unless quiet. */
/* The same server for a page of the caller's: page appends the text
 * (on libmicrohttpd's thread) and returns 0 or LT_ENOMEM. */
typedef int (*cli_live_page_fn)(void *ud, struct lt_buf *out);
struct cli_live_http *cli_live_http_start_fn(const char *host, unsigned port, cli_live_page_fn page,
                                             void *ud, char *url, size_t url_n, struct lt_err *err);
void cli_live_hold(int64_t hold_us, bool quiet);
/* Stop serving; NULL is a no-op. */
void cli_live_http_stop(struct cli_live_http *h);

#endif

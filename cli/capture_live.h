/*
 * capture's live figures (docs/dashboard.md "capture"): what the proxy
 * counts (lt_capture_get_live) and what the trace gets, record by record
 * (the recorder's watch, on its writer thread), kept here for the
 * dashboard and --live-metrics. Nothing is taken on the threads that
 * relay streams: the records are counted on the writer thread, the
 * proxy's counters are read when a frame or a scrape asks.
 */
#ifndef LT_CLI_CAPTURE_LIVE_H
#define LT_CLI_CAPTURE_LIVE_H

#include "base/lt_buf.h"
#include "base/lt_err.h"
#include "capture/capture_proxy.h"
#include "cli/ui_dash.h"
#include "traces/trace_format.h"

struct cli_capture_live;

/* New figures; title says what runs ("127.0.0.1:8080 -> http://..."). */
struct cli_capture_live *cli_capture_live_new(const char *title, struct lt_err *err);
void cli_capture_live_free(struct cli_capture_live *l);
/* What the title bar says runs. */
void cli_capture_live_title(struct cli_capture_live *l, const char *title);
/* Where --live-metrics serves the page (shown on the dashboard). */
void cli_capture_live_url(struct cli_capture_live *l, const char *url);
/* The proxy whose counters are read (NULL: none any more; the last ones
 * read stay). */
void cli_capture_live_attach(struct cli_capture_live *l, struct lt_capture *cap);
/* The final counters, once lt_capture_stop gave them. */
void cli_capture_live_final(struct cli_capture_live *l, const struct lt_capture_stats *st);
/* The state said on the dashboard ("draining: 3 requests in flight"). */
void cli_capture_live_state(struct cli_capture_live *l, const char *state);
/* lt_capture_opts.on_record: a record the trace took. */
void cli_capture_live_record(void *l, const struct lt_record *rec);
/* A frame (cli_dash_render_fn; ud is the figures). */
int cli_capture_live_render(struct cli_dash *d, void *ud, int w, int h);
/* The Prometheus page (cli_live_page_fn). */
int cli_capture_live_prom(void *ud, struct lt_buf *out);

#endif

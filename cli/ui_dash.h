/*
 * The terminal dashboard of a long run (--ui, docs/dashboard.md): a
 * full-screen view of the live figures (replay/replay_live.h), drawn with
 * ncurses on standard error from a thread of its own, four times a
 * second. The engine never waits for it. `q` stops the run as SIGINT
 * does (it sends SIGINT to this process); Ctrl-C is SIGINT itself. When
 * it closes, its last frame is printed as plain text on the normal screen,
 * so what the run ended with stays above the summary.
 */
#ifndef LT_CLI_UI_DASH_H
#define LT_CLI_UI_DASH_H

#include "base/lt_err.h"
#include "replay/replay_live.h"

#include <stdbool.h>
#include <stdio.h>

/* --ui: auto picks the dashboard when standard error is a terminal (and
 * TERM names one ncurses knows), the progress line otherwise. */
enum cli_ui { CLI_UI_AUTO, CLI_UI_DASHBOARD, CLI_UI_LINE, CLI_UI_NONE };

/* Parse "auto", "dashboard", "line" or "none"; false otherwise. */
bool cli_ui_parse(const char *s, enum cli_ui *ui);
/* auto resolved against this process's standard error. */
enum cli_ui cli_ui_resolve(enum cli_ui ui);
/* Can the dashboard be drawn here (standard error a terminal ncurses
 * knows)? false with why filled. */
bool cli_ui_dashboard_possible(char *why, size_t n);

/* Why a run of this kind draws no dashboard whatever the terminal (a
 * --virtual replay, a rank of an MPI job), or NULL; and whether this
 * process is the first rank (or no rank), the one that says so. */
const char *cli_ui_no_dashboard(bool virtual_run);
bool cli_ui_rank0(void);

struct cli_dash;

/* Take over the terminal and draw l until cli_dash_stop; title names the
 * command ("replay"). NULL with err filled when the terminal cannot be
 * set up (the caller then falls back to the line). */
struct cli_dash *cli_dash_start(struct lt_replay_live *l, const char *title, struct lt_err *err);
/* Add a line to the dashboard's history (a probe and its verdict, a
 * config); any thread. The last few fit on the screen. */
void cli_dash_note(struct cli_dash *d, const char *line);
/* Say what comes after the current run ("bracket 4.0 .. 8.0 req/s");
 * any thread; NULL clears it. */
void cli_dash_status(struct cli_dash *d, const char *line);
/* Draw the last frame, give the terminal back and print that frame to
 * out (plain text; NULL: nothing). NULL is a no-op. */
void cli_dash_stop(struct cli_dash *d, FILE *out);

/* A dashboard whose frame the caller draws (capture, sweep): fn is called
 * on the dashboard's thread at each frame (and once more by
 * cli_dash_stop, for the last frame kept on the normal screen) and adds
 * its rows with cli_dash_row; it returns how many. footer replaces the
 * last line's "q or Ctrl-C stops the run". A terminal smaller than the
 * dashboard needs is said for it. */
enum cli_dash_attr {
    CLI_DASH_PLAIN,
    CLI_DASH_TITLE,
    CLI_DASH_HEAD,
    CLI_DASH_GOOD,
    CLI_DASH_BAD,
    CLI_DASH_DIM
};
typedef int (*cli_dash_render_fn)(struct cli_dash *d, void *ud, int w, int h);
struct cli_dash *cli_dash_start_fn(const char *title, cli_dash_render_fn fn, void *ud,
                                   const char *footer, struct lt_err *err);
void cli_dash_row(struct cli_dash *d, int *n, enum cli_dash_attr a, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The title bar: left, then "N s elapsed" at the right edge of w. */
void cli_dash_title_row(struct cli_dash *d, int *n, int w, const char *left, double elapsed_s);
/* A bar of bw cells, frac of them full, into b. */
void cli_dash_bar(const struct cli_dash *d, double frac, int bw, char *b, size_t n);
bool cli_dash_utf8(const struct cli_dash *d);
const char *cli_dash_title(const struct cli_dash *d);
void cli_dash_human_s(double s, char *b, size_t n);

#endif

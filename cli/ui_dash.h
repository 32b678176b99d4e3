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

#endif

/*
 * The sweep's dashboard (docs/dashboard.md "sweep"): the configs done and
 * to come, from the sweep's progress (experiments/sweep.h on_progress),
 * and the current config's load, from its replay's own --live-metrics
 * page (the child replay serves it on a free loopback port and says where
 * in its log; each frame reads it).
 */
#ifndef LT_CLI_SWEEP_LIVE_H
#define LT_CLI_SWEEP_LIVE_H

#include "base/lt_err.h"
#include "cli/ui_dash.h"
#include "experiments/sweep.h"

struct cli_sweep_live;

struct cli_sweep_live *cli_sweep_live_new(const struct lt_sweep_plan *p, const char *title,
                                          struct lt_err *err);
void cli_sweep_live_free(struct cli_sweep_live *l);
/* lt_sweep_opts.on_progress (ud: the live state). */
void cli_sweep_live_progress(void *ud, const struct lt_sweep_progress *p);
/* lt_sweep_opts.on_event: the last sentence of the current config. */
void cli_sweep_live_event(struct cli_sweep_live *l, const char *config, const char *what);
/* A frame (cli_dash_render_fn). */
int cli_sweep_live_render(struct cli_dash *d, void *ud, int w, int h);

#endif

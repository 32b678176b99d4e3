/*
 * A fleet on the replay command line (docs/replay.md "Fleets and
 * routing"): --target URL1,URL2,... or --targets FILE, each target with
 * an optional capacity weight (URL=W, or a second column), --route
 * POLICY and --failover, into struct lt_replay_opts; and what the run
 * says of each replica at its end.
 */
#ifndef LT_CLI_REPLAY_FLEET_H
#define LT_CLI_REPLAY_FLEET_H

#include "replay/replay.h"
#include "cli/replay_search.h"
#include "replay/route.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cli_fleet {
    const char *urls[LT_ROUTE_MAX];
    uint32_t weights[LT_ROUTE_MAX];
    size_t n;
    bool weighted;  /* some target stated a weight */
    bool route_set; /* --route was given */
    struct lt_route_opts route;
    uint32_t replicas;  /* --replicas N (virtual) */
    bool find_replicas; /* --find-max replicas */
};

/* Add the targets of a comma-separated list (URL or URL=W each). Returns
 * false with the error said (cli_error) on a bad entry. */
bool cli_fleet_add_list(struct cli_fleet *f, const char *list);
/* Add the targets of FILE: one a line, "URL [WEIGHT]" or "URL=WEIGHT";
 * blank lines and # comments skipped. */
bool cli_fleet_add_file(struct cli_fleet *f, const char *path);
/* Into o once every option is read: targets (o->target is the first),
 * the route and weights. Returns false with the error said when the
 * combination makes no sense (a route without a fleet, weights with
 * another policy). */
bool cli_fleet_apply(struct cli_fleet *f, struct lt_replay_opts *o, bool virt);

/* After a fleet's run: one line per replica (requests, errors, tokens,
 * whether it went down and what failed over), and what a failure did. */
void cli_fleet_print(const struct lt_replay_opts *o, const struct lt_replay_stats *st);

/* --find-max replicas --rate R --slo SPEC: the fewest virtual replicas of
 * the sim's profile (sim->profile) behind o's route that meet the SLO at
 * o's load (trace time at o->tt.rate): doubling from 1 until a fleet
 * meets it, then bisecting; the answer's run is written to o->out_path,
 * the answer (with the attainment at N-1 and N) printed on stdout.
 * Returns the exit code. */
int cli_fleet_find_replicas(const struct lt_replay_opts *o, const struct lt_sim_opts *sim,
                            const struct cli_search_opts *s);

#endif

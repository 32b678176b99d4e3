/*
 * The virtual engine set up from a live replay's options: what
 * `replay --virtual`, each virtual probe of a capacity search and each
 * fleet of `--find-max replicas` hand sim/sim_virtual.h, so that a load
 * mode means in virtual time exactly what it means live (the plan is
 * replay's own, lt_replay_plan_opts) and the three cannot drift apart.
 */
#ifndef LT_EXPERIMENTS_VREPLAY_H
#define LT_EXPERIMENTS_VREPLAY_H

#include "replay/replay.h"
#include "replay/route.h"
#include "sim/sim.h"
#include "sim/sim_virtual.h"

#include <stdbool.h>
#include <stdint.h>

/* What a live server would do but the model cannot (faults, a server
 * log, a time scale, natural output lengths): LT_EUSAGE with the
 * sentence, rather than numbers that quietly mean something else; else 0. */
int lt_vreplay_check(const struct lt_replay_opts *o, const struct lt_sim_opts *sim,
                     struct lt_err *err);

/* vo from o: trace and output, the plan, closed-loop levels, warm-up,
 * output lengths, cancels, and the model's metrics every
 * o->metrics_interval_us (scrape_us when o names none; none with
 * --no-server-metrics). The stop hook and the fleet are the caller's. */
void lt_vreplay_opts_init(struct lt_sim_vreplay *vo, const struct lt_replay_opts *o,
                          int64_t scrape_us);

/* A fleet of model instances behind replay's own router (o->route, two
 * or more). */
struct lt_vreplay_fleet {
    bool on; /* a fleet: vo->route points at vr, which this holds */
    struct lt_route route;
    struct lt_sim_vroute vr;
};

/* Set vo->route to a fleet when o names one (else leave it NULL).
 * Returns 0 or a negative code with err filled (the router refused its
 * options). Release f after the run, whatever this returned. */
int lt_vreplay_fleet_init(struct lt_vreplay_fleet *f, const struct lt_replay_opts *o,
                          struct lt_sim_vreplay *vo, struct lt_err *err);
void lt_vreplay_fleet_release(struct lt_vreplay_fleet *f);

/* `replay --virtual`: every run of o through the model of sim->profile
 * (NULL = "default") in virtual time, into o->out_path. */
struct lt_vreplay_run {
    const char *(*stopped)(void *ud); /* as lt_sim_vreplay's; NULL: never stopped */
    void *stop_ud;
    bool dry_run; /* check the options and the profile, and stop there */
    /* filled: */
    char profile[64];         /* the profile's name */
    struct lt_sim_vstats tot; /* the sums over the runs (also on failure: what was written) */
    double cpu_s;             /* the process's CPU time it took */
};

/* Returns 0 or a negative code with err filled: LT_EUSAGE for what the
 * model cannot honour (lt_vreplay_check) or a profile that does not load. */
int lt_vreplay_run(const struct lt_replay_opts *o, const struct lt_sim_opts *sim,
                   struct lt_vreplay_run *run, struct lt_err *err);

#endif

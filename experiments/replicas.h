/*
 * `replay --find-max replicas --target sim --rate R --slo SPEC`: the
 * fewest replicas of the sim's model, behind replay's router, that serve
 * the trace at R with the SLO met, in virtual time (experiments/
 * vreplay.h): doubling from 1 until a fleet meets it, then bisecting. The
 * answer's run is the results file. Nothing is printed: each probe is
 * told to the caller's hook.
 */
#ifndef LT_EXPERIMENTS_REPLICAS_H
#define LT_EXPERIMENTS_REPLICAS_H

#include "replay/replay.h"

#include <stdbool.h>
#include <stdint.h>

struct lt_replicas_opts {
    const char *profile; /* the sim profile; NULL = "default" */
    int64_t slo_ttft_us, slo_tpot_us, slo_e2e_us;
    double attain;       /* share that must meet the SLO; 0 = 0.9 */
    uint32_t max_probes; /* 0 = 20 */
    bool dry_run;        /* check the profile and stop there */
    /* each may be NULL: begin, before the first probe (the profile's
     * name); probe, after each (the fleet's size, its attainment from the
     * scheduled times, its TTFT p99 in ms, whether it meets the SLO) */
    void (*begin)(void *ud, const char *profile);
    void (*probe)(void *ud, uint32_t n, double attain, double ttft_p99_ms, bool meets);
    void *ud;
};

enum lt_replicas_end {
    LT_REPLICAS_FOUND,      /* hi meets, hi - 1 (lo, or none when hi is 1) fails */
    LT_REPLICAS_NONE,       /* no fleet of up to lo replicas meets it */
    LT_REPLICAS_MAX_PROBES, /* stopped between lo and hi */
};

struct lt_replicas_result {
    enum lt_replicas_end end;
    uint32_t lo, hi; /* largest failing (0: none), smallest meeting (0: none) */
    uint32_t probes;
    double attain_lo, attain_hi, p99_lo_ms, p99_hi_ms; /* at lo and hi */
};

/* The search over o (trace, output, route, rate: o->tt.rate) and s.
 * Found: the run at r->hi is written to o->out_path. Returns 0 (r says
 * how it ended) or a negative code with err filled (LT_EUSAGE: a profile
 * that does not load). */
int lt_replicas_search(const struct lt_replay_opts *o, const struct lt_replicas_opts *s,
                       struct lt_replicas_result *r, struct lt_err *err);

#endif

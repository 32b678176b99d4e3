/*
 * `loadtrace replay TRACE --find-max rate|concurrency --slo SPEC`: the
 * capacity search, as a library. plan/plan_search.h decides which load
 * to probe and judges each probe; this composes its two engines, the live
 * replay (replay/replay.h, against a URL or the sim started here) and the
 * sim's model in virtual time (sim/sim_virtual.h, set up by
 * experiments/vreplay.h), both taken through plan/plan_engine.h, judges
 * each probe's SLO attainment from its results as they stream (analyze/'s
 * own analysis, fed by the engine's sink hook) and writes the one results
 * file: every probe a run, the answer in its header's meta
 * (docs/trace-format.md §2.4). It prints nothing: what
 * happens as it goes is told to the caller's event hook, and the answer is
 * in struct lt_capacity_result.
 */
#ifndef LT_EXPERIMENTS_CAPACITY_H
#define LT_EXPERIMENTS_CAPACITY_H

#include "plan/plan_engine.h"
#include "plan/plan_search.h"
#include "replay/replay.h"
#include "replay/replay_live.h"
#include "sim/sim.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum lt_capacity_event_kind {
    LT_CAPACITY_NOTE,        /* a sentence on what the search chose (text) */
    LT_CAPACITY_LIVE_BEGIN,  /* the live probes begin (live_out: the caller's figures) */
    LT_CAPACITY_LIVE_END,    /* ... and are over */
    LT_CAPACITY_PROBE_START, /* a live probe starts (load, requests, planned_s) */
    LT_CAPACITY_PROGRESS,    /* a live probe's engine tick (progress, planned_s) */
    LT_CAPACITY_PROBE_RAN,   /* a live probe's engine is done, judged or not */
    LT_CAPACITY_PROBE,       /* a probe judged (probe, judged, faults, search: the bracket) */
    LT_CAPACITY_PROBE_CUT,   /* ... it had been stopped early, saturated (why, saved_s) */
};

struct lt_capacity_event {
    enum lt_capacity_event_kind kind;
    bool virt;      /* the engine: the model in virtual time, or live */
    uint32_t probe; /* 1-based, per engine */
    double load;
    uint64_t requests; /* PROBE_START: requests the probe replays */
    double planned_s;  /* PROBE_START, PROGRESS: its schedule's length; 0: the server's doing */
    const struct lt_replay_progress *progress; /* PROGRESS */
    const struct lt_search_probe *p;           /* PROBE */
    uint64_t judged, faults;                   /* PROBE */
    const struct lt_search *search;            /* PROBE: the search after it */
    uint32_t live_probes;                      /* PROBE: live probes so far */
    const char *why;                           /* PROBE_CUT: the figures */
    double saved_s;                            /* PROBE_CUT: planned time not spent */
    const char *text;                          /* NOTE */
    /* LIVE_BEGIN: the caller may set *live_out to figures the live probes
     * feed (a dashboard's, replay/replay_live.h); the search sets each
     * probe's phase there and the caller frees it after the search. */
    struct lt_replay_live **live_out;
};

struct lt_capacity_opts {
    bool concurrency; /* the axis: closed-loop concurrency, else the trace's rate */
    const char *slo;  /* the spec as given (written in the file) */
    int64_t slo_ttft_us, slo_tpot_us, slo_e2e_us;
    double attain;        /* share that must meet the SLO; 0 = 0.9 */
    double precision;     /* bracket width to stop at; 0 = 0.05 */
    double start;         /* first load; 0 = the trace's own rate, or 1 */
    uint32_t max_probes;  /* per search (live or virtual); 0 = 20 */
    int64_t max_time_us;  /* whole search, wall; 0 = none */
    bool virtual_only;    /* search the sim's model only */
    bool virtual_first;   /* search the model first to place the live probes */
    const char *vprofile; /* profile of the virtual search; NULL = the sim's, or default */
    bool target_sim;      /* start the sim in this process */
    const struct lt_sim_opts *sim;
    const char *api_key; /* the live probes' key, or NULL */
    bool api_key_bearer_too;
    bool dry_run; /* check the options and the profile, and stop there */
    /* The caller's hooks, each may be NULL. event: what happens, as it
     * happens. stop: polled between probes and by virtual probes: the
     * signal that asks the search to stop, 0 to go on. run: how a live
     * probe's engine is run into sink (a caller that catches signals
     * stops e with them, lt_engine_stop); NULL: lt_engine_run. */
    void (*event)(void *ud, const struct lt_capacity_event *ev);
    int (*stop)(void *ud);
    int (*run)(void *ud, struct lt_engine *e, const struct lt_engine_sink *sink,
               struct lt_err *err);
    void *ud;
};

/* What the search found and did: the caller says it. */
struct lt_capacity_result {
    bool answered;               /* the searches ran: what follows holds their answer, even
                                    when the results file then failed to be written */
    const struct lt_search *ans; /* the answer: &live, or &virt (virtual only) */
    struct lt_search virt, live;
    /* the model's search of the whole trace, when it chose the live
     * probes' window (whole_probes > 0; its probes are the file's first
     * runs, which analyze leaves out of the answer) */
    struct lt_search whole;
    uint32_t whole_probes;
    uint32_t virtual_probes, live_probes;
    uint32_t in_file; /* probes in the results file (runs), judged or not */
    double goodput;   /* at the answer's lo, as analyze gives it */
    double v_goodput; /* at the virtual answer's lo (virtual first) */
    bool vwindow;     /* the virtual answer is of the live probes' window */
    double wall_s, virtual_cpu_s;
    bool stopped;
    int stop_signal;           /* what stopped it, from the stop hook; 0: unknown */
    double cut_load;           /* a stop cut the probe at this load short (not judged) */
    bool cut_virtual;          /* ... a virtual one */
    double max_time_load;      /* --max-time ended the search before a live probe here */
    double max_time_planned_s; /* ... whose schedule was this long */
    uint32_t n_cut;            /* live probes stopped early, saturated */
    double cut_saved_s;        /* planned time they did not spend */
    /* virtual first: a live-only search from the same start, had every
     * probe agreed with the answer (savings set) */
    bool savings;
    double cold_probes, cold_wall_s, saved_probes, saved_wall_s;
};

/* Run the search s over the replay options o (trace, output, target and
 * request options; the load options are the search's), write o->out_path
 * as it goes (opened once the options are checked; removed when the search
 * fails) and fill r. Returns 0 (found, bounded by --max-probes / --max-time, or
 * stopped: r says which) or a negative code with err filled: LT_EUSAGE
 * when the options cannot give an answer (a profile that does not load, a
 * probe too short to judge). */
int lt_capacity_search(const struct lt_replay_opts *o, const struct lt_capacity_opts *s,
                       struct lt_capacity_result *r, struct lt_err *err);

/* Why the search r ended without an answer within its precision, with
 * what it knew, in one sentence ("stopped at --max-probes: the bracket is
 * wider than asked"), into buf. */
void lt_capacity_say_end(const struct lt_capacity_result *r, char *buf, size_t n);

#endif

/*
 * The capacity search as pure code: given the outcome of each probe (a run
 * at one load: how many measured requests met the SLO), which load to try
 * next, the bracket found so far, and when to stop. No engine, no clock:
 * the live replay (cli/replay_search.c with replay/) and the sim's model in
 * virtual time (sim/sim_virtual.h) are both probe runners of this one
 * search, so a live search and a virtual one decide alike.
 *
 * The search grows the load (doubling, or by a smaller factor when a
 * virtual search gave a bracket to start from) until a probe fails, or
 * shrinks it until one meets the SLO, then bisects between the highest
 * load that met it and the lowest that failed until the two are within
 * `precision` of each other. A probe's attainment (good / counted) comes
 * with its Wilson score interval (95 %); a probe whose interval straddles
 * the target is repeated at the same load (the runs pooled) rather than
 * guessed, up to max_repeats times (the repeat runs the same arrivals
 * again: what it adds is the server's own variation); after that the point estimate decides
 * and the probe says it was unsure. A probe whose requests failed for
 * reasons other than load (faults: the share of non-load errors above
 * max_fault_share) decides nothing: it is repeated once, then the search
 * stops and says so, rather than taking faults for the capacity.
 *
 * Given a model's answer (lt_search_confirm: a virtual search's bracket),
 * the live search confirms it rather than searching again: a probe at the
 * model's highest meeting load, then one step (precision) above it when it
 * met, or below when it failed; the two bracket the capacity within the
 * precision when the model was right to a step. Only where the model was
 * wrong by more than a step does it go on in the same direction, each
 * step twice the one before (2, 4, 8 steps, at most `factor`), until a
 * probe disagrees, and bisects from there. While the probes agree with
 * the model, an unsure probe that agrees is not repeated: the model is the
 * second opinion a repeat would have been; one that disagrees is.
 */
#ifndef LT_PLAN_SEARCH_H
#define LT_PLAN_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LT_SEARCH_MAX_PROBES 64

enum lt_search_verdict {
    LT_SEARCH_MEETS = 0,
    LT_SEARCH_FAILS,
    LT_SEARCH_FAULTED,  /* too many non-load errors: says nothing of capacity */
    LT_SEARCH_SATURATED /* over-saturated (queue or lag growing): fails */
};

/* Why the search ended. */
enum lt_search_end {
    LT_SEARCH_RUNNING = 0,
    LT_SEARCH_FOUND, /* bracket within precision */
    LT_SEARCH_MAX_PROBES_HIT,
    LT_SEARCH_MAX_TIME_HIT, /* set by the caller (lt_search_give_up) */
    LT_SEARCH_FAULTS,       /* probes kept failing for non-load reasons */
    LT_SEARCH_FLOOR,        /* even the lowest load tried fails the SLO */
    LT_SEARCH_CEILING,      /* meets at the highest load allowed */
    LT_SEARCH_STOPPED,      /* set by the caller (user stop) */
};

struct lt_search_opts {
    double attain;          /* share of requests that must meet the SLO; 0 = 0.9 */
    double start;           /* first load; 0 = 1 */
    double factor;          /* growth per step before a failure; 0 = 2 */
    double precision;       /* stop when hi <= lo * (1 + precision); 0 = 0.05 */
    bool integer;           /* loads are integers (concurrency): stop when hi - lo <= 1 */
    double min_load;        /* 0 = integer ? 1 : start / 1024 */
    double max_load;        /* 0 = integer ? 65536 : 1e6 */
    uint32_t max_probes;    /* runs in all, repeats included; 0 = 20 */
    uint32_t max_repeats;   /* of an unsure probe; 0 = 1 */
    bool no_repeat;         /* never repeat an unsure probe */
    double max_fault_share; /* 0 = 0.05 */
};

/* One run. n, good, faults as measured; the rest is derived (pooled with
 * the runs before it at the same load, `pooled` of them). */
struct lt_search_probe {
    double load;
    uint64_t n;      /* measured requests counted (faults excluded) */
    uint64_t good;   /* of them, meeting the SLO */
    uint64_t faults; /* requests that failed for non-load reasons */
    bool saturated;
    double goodput;              /* the caller's figure, requests/s meeting the SLO */
    double attain, ci_lo, ci_hi; /* pooled over the repeats */
    uint32_t pooled;             /* runs pooled (1 = this one only) */
    bool unsure;                 /* the interval still straddled the target when decided */
    bool decided;                /* this run (with its pool) decided its load */
    enum lt_search_verdict verdict;
};

/* How the live search stands to the model's answer it was given. */
enum lt_search_model {
    LT_SEARCH_MODEL_NONE = 0, /* no model's answer (lt_search_confirm not called, or no bracket) */
    LT_SEARCH_MODEL_CHECKING, /* every probe so far within a step of the model's answer */
    LT_SEARCH_MODEL_HELD,     /* found within a step of the model's answer */
    LT_SEARCH_MODEL_OFF,      /* off by more than a step: stepped on, then bisected */
};

struct lt_search {
    struct lt_search_opts o;
    double lo, hi;          /* highest load meeting, lowest failing; 0 = none yet */
    double lo_goodput;      /* goodput at lo */
    int lo_probe, hi_probe; /* index of the deciding probes, -1 = none */
    uint32_t n;
    struct lt_search_probe p[LT_SEARCH_MAX_PROBES];
    enum lt_search_end end;
    double next;      /* the load lt_search_next returns */
    uint32_t repeats; /* runs so far at `next` */
    /* lt_search_confirm: the model's bracket, and the size of the last
     * step away from it, in steps of precision (0: at its answer) */
    enum lt_search_model model;
    double model_lo, model_hi;
    uint32_t steps;
};

/* Wilson score interval of good/n at z (1.96: 95 %). n == 0 gives [0, 1]. */
void lt_search_wilson(uint64_t good, uint64_t n, double z, double *lo, double *hi);

/* Requests a probe needs so that the interval's half-width at attainment
 * p is at most half (the binomial normal approximation, z = 1.96). */
uint64_t lt_search_requests_for(double p, double half);

/* The fewest judged requests a probe needs for its interval to tell
 * attainment `attain` apart at all: every one of them meeting the SLO
 * puts the lower end of the interval above attain (35 at 0.9, 59 at
 * 0.95, 381 at 0.99). A probe with fewer decides nothing. */
uint64_t lt_search_min_judged(double attain);

/* A load rounded to what a search of that precision can tell apart: 3
 * significant digits at 5 % (4 at 1 %). The search probes only such
 * loads, so the load it prints is the load it ran. */
double lt_search_round(double x, double precision);

void lt_search_init(struct lt_search *s, const struct lt_search_opts *o);

/* Seed the search with a bracket found elsewhere (a virtual search): the
 * first probe is at lo (or hi / 2 when lo is 0) and the growth factor is
 * the bracket's ratio widened by margin (0 = 10 %), so that one or two live
 * probes bracket the answer when the virtual one was close. */
void lt_search_seed(struct lt_search *s, double lo, double hi, double margin);

/* Confirm a model's bracket (lo meets, hi fails, from a virtual search)
 * with as few probes as it takes (see the top of this file): the first
 * probe at lo. A bracket without both ends (the model met at its ceiling
 * or failed at its floor) seeds the search as lt_search_seed does. */
void lt_search_confirm(struct lt_search *s, double lo, double hi);

/* The load of the next probe: true and *load set, or false when the
 * search has ended (s->end says why). *repeat: the same load again. */
bool lt_search_next(struct lt_search *s, double *load, bool *repeat);

/* Record the run at the load lt_search_next gave. Returns the probe. */
const struct lt_search_probe *lt_search_add(struct lt_search *s, uint64_t n, uint64_t good,
                                            uint64_t faults, bool saturated, double goodput);

/* End the search for a reason of the caller's (max time, a user stop). */
void lt_search_give_up(struct lt_search *s, enum lt_search_end why);

/* Over-saturation, judged while a probe runs, so that a probe far beyond
 * the capacity stops early and saves the rest of its time. The caller
 * adds a sample every so often (the engine's progress tick, 250 ms): the
 * time since the run's start, the requests in flight, the schedule lag
 * (how late the next due send is) and the server's waiting queue when its
 * metrics are scraped (< 0: unknown). A signal grows without bound when
 * the means of the four quarters of the samples so far each exceed the one
 * before and the last is over 4 times the first plus a floor (4 requests;
 * 1 s of lag): lt_search_grew, the rule a finished probe is judged by
 * too, applied as it runs. Judging starts after 2 s and a
 * tenth of the probe's planned span; the probe is saturated when a signal
 * has kept growing so over the last half of the time so far (since t / 2
 * at t), which a burst the server absorbs does not: the queue drains. A
 * closed loop holds its in-flight count and its queue bounded, so its
 * probes are never stopped. */
#define LT_SEARCH_WATCH_MAX 2048
struct lt_search_watch {
    double span_s; /* the probe's planned length; 0: unknown */
    uint32_t n;
    double dt; /* between kept samples (doubles when the buffer is halved) */
    double t[LT_SEARCH_WATCH_MAX], inflight[LT_SEARCH_WATCH_MAX], lag[LT_SEARCH_WATCH_MAX],
        waiting[LT_SEARCH_WATCH_MAX];
    double since[3]; /* per signal: when its growth was first seen unbroken; < 0: not now */
    double t_last;   /* the last sample's time, kept or not */
    bool saturated;
    char why[400]; /* the figures, once saturated */
};
void lt_search_watch_init(struct lt_search_watch *w, double span_s);
/* Add a sample; true once saturated (w->why says why, with the figures). */
bool lt_search_watch_add(struct lt_search_watch *w, double t, double inflight, double lag,
                         double waiting);

/* The one rule of over-saturation: a signal sampled evenly, x[0..n),
 * grew without bound when the means of its four quarters each exceed the
 * one before and the last is over 4 times the first plus floor (4 for
 * requests in flight or a waiting queue, 1 for a lag in seconds). A
 * burst the server absorbs, or a queue that grew and then fell back,
 * did not. Fewer than 8 samples say nothing: false. lt_search_watch
 * applies it as a probe runs; a finished probe is judged by it over its
 * requests in flight (struct lt_search_probe.saturated). */
bool lt_search_grew(const double *x, uint32_t n, double floor);

const char *lt_search_verdict_name(enum lt_search_verdict v);
const char *lt_search_end_name(enum lt_search_end e);

#endif

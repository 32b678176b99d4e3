/*
 * The sim's model in virtual time: a discrete-event driver that sends a
 * run's requests to a fresh lt_sim_model when the replay plan (plan/plan.h)
 * releases them, the same plan the live replay runs, with no HTTP and no
 * clock, and writes what
 * a client would have measured as ordinary results records (a run record,
 * then one result per request), so `loadtrace analyze` reads the file like
 * the results of a live replay. An hour of trace takes seconds of CPU.
 *
 * What a request "sees" here is the model's emission times exactly: it is
 * sent at its due time (sched = sent in open loop and trace time; in a
 * closed loop sched = sent = when a slot frees, as the live replay records
 * it), its first byte is its arrival (the sim answers with headers and a
 * role chunk at once), every token is a chunk of one token at its emission
 * time, and the end is the last token. Status 200, finish "length", counts
 * "usage" (the sim always reports usage). A request whose prompt + output
 * exceeds the profile's max_model_len gets the sim's 400 instead.
 *
 * Prefix caching: the live replay synthesizes prompt text from each trace
 * record's prefix blocks (or its session, or nothing shared), and the sim
 * hashes blocks of that text. The driver derives the sim's chained block
 * hashes from the same information, so two requests share sim blocks
 * exactly when their synthesized prompts would share them.
 */
#ifndef LT_SIM_VIRTUAL_H
#define LT_SIM_VIRTUAL_H

#include "plan/plan.h"
#include "plan/plan_engine.h"
#include "sim/sim_profile.h"
#include "base/lt_err.h"
#include "traces/trace_writer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A virtual fleet's router (docs/replay.md "Fleets and routing"): the
 * driver asks it which of n model instances (each with its own prefix
 * cache) serves a request when the plan sends it, and tells it when that
 * request ended; cli/ hands replay's router (replay/route.h) in, so a
 * live and a virtual fleet route alike. pick returns 0 .. n-1. */
struct lt_sim_vroute {
    uint32_t n;
    const char *name; /* the policy, for the run record */
    int (*pick)(void *ud, size_t seq, const struct lt_plan_job *job);
    void (*done)(void *ud, int replica);
    void *ud;
};

/* What a run's records say besides the plan. */
struct lt_sim_vrun {
    uint64_t warmup;             /* seqs below it are marked warm-up */
    uint32_t default_out;        /* output length when a record has none; 0 = LT_PLAN_DEFAULT_OUT */
    uint32_t block_tokens;       /* size of the trace's blocks; 0 = 512 */
    const char *target;          /* run record's target; NULL = "sim:virtual" */
    const char *model;           /* run record's model; NULL = the profile's name */
    int64_t metrics_interval_us; /* > 0: a scrape sample of the model's values this often
                                    (docs/server-metrics.md §6); 0 = none */
    bool no_cancel; /* run records whose client left (cancel_tokens, cancel_after) to the end */
    /* Polled as the run goes (NULL: never stopped): NULL to go on, or who
     * stopped it ("SIGINT", "SIGTERM", "caller"). A stopped run records
     * every request in the model as aborted at that model time and every
     * one not sent as never sent, and a check record saying when and why,
     * as a stopped live run does. */
    const char *(*stopped)(void *ud);
    void *stop_ud;
    /* A fleet of route->n > 1 instances; NULL: one. Results then say
     * their "replica", the run record the "replicas" ("sim:virtual:I")
     * and the "route", and each instance has its own scrape samples
     * (endpoint "sim:virtual:I/metrics"). */
    const struct lt_sim_vroute *route;
    /* The engine interface's sink (plan/plan_engine.h): record ids from
     * its run_base, and its hooks told each run record and result; NULL:
     * ids from 0, nobody told. Its writer is the w of lt_sim_virtual_run. */
    const struct lt_engine_sink *sink;
};

struct lt_sim_vstats {
    uint64_t requests;   /* results written */
    uint64_t ok;         /* of them, status 200 */
    uint64_t cancelled;  /* of them, closed where the trace's client left (not ok) */
    uint64_t out_tokens; /* tokens emitted */
    uint64_t steps;      /* engine steps */
    uint64_t cached_tokens;
    int64_t model_end_us;         /* virtual time of the run's last event */
    bool opened;                  /* the results file was created */
    bool write_failed;            /* a write to it failed: nothing was written after */
    uint64_t on_disk;             /* results that reached it whole */
    bool sampled;                 /* --window or --requests sampled the trace: */
    struct lt_plan_jobs_sample sample; /* what was kept (lt_plan_jobs_sample) */
    const char *stopped_by;       /* stopped (lt_sim_vrun.stopped): by whom; NULL: ran to the end */
    int64_t stopped_at_us;        /* when, model time since the run's origin */
    uint32_t stopped_run;         /* which run (later runs never started) */
    uint64_t aborted;             /* results in the model when it stopped (errors, "aborted") */
    uint64_t unsent;              /* results never sent (not errors, "unsent") */
};

/* Run `run` of plan (closed loop: `level` in flight) through a new model
 * with profile p, and write the run record and one result per request to
 * w (a results writer). The plan decides when each request leaves, as it
 * does for the live replay; this driver is its clock. st may be NULL.
 * Returns 0, or a negative LT_E* code with err filled (allocation or
 * writer failure; the file then holds what was written before). */
int lt_sim_virtual_run(const struct lt_sim_profile *p, struct lt_plan *plan, uint32_t run,
                       uint32_t level, const struct lt_sim_vrun *vr, struct lt_writer *w,
                       struct lt_sim_vstats *st, struct lt_err *err);

/* A whole replay in virtual time: every run of the plan options (one per
 * closed-loop level) of jobs, written to a new results file. */
struct lt_sim_vreplay {
    const char *trace_path; /* named in the file's header */
    const char *out_path;
    struct lt_plan_opts plan;
    const uint32_t *levels; /* closed loop: one run per level */
    size_t n_levels;
    uint64_t warmup;
    uint32_t default_out;        /* 0 = LT_PLAN_DEFAULT_OUT */
    int64_t metrics_interval_us; /* > 0: scrape samples of the model's values */
    bool no_cancel;
    const char *(*stopped)(void *ud); /* as lt_sim_vrun's; NULL: never stopped */
    void *stop_ud;
    const struct lt_sim_vroute *route; /* a fleet (struct lt_sim_vrun); NULL: one instance */
};

/* The virtual engine (plan/plan_engine.h): every run of o's plan over
 * jobs through the model of profile p (copied), appended to the writer
 * lt_engine_run is handed; o's trace_path and out_path are not used. jobs
 * must outlive it. NULL when out of memory. */
struct lt_engine *lt_sim_engine_for(const struct lt_sim_profile *p, const struct lt_plan_jobs *jobs,
                                    const struct lt_sim_vreplay *o, struct lt_err *err);
/* The sums over the last lt_engine_run of a virtual engine (also on
 * failure: what was written); NULL for an engine of another kind. */
const struct lt_sim_vstats *lt_sim_engine_stats(const struct lt_engine *e);

/* The virtual engine's runs into a new results file, out_path. tot
 * receives the sums over the runs (also on failure: what was written).
 * Returns 0 or a negative code with err filled. */
int lt_sim_virtual_replay(const struct lt_sim_profile *p, const struct lt_plan_jobs *jobs,
                          const struct lt_sim_vreplay *o, struct lt_sim_vstats *tot,
                          struct lt_err *err);

#endif

/*
 * An engine: what runs a replay plan's requests and records what
 * happened to each (docs/trace-format.md §2.4-2.8). Two implement it: the
 * live replay (replay/replay_engine.c, against a server) and the sim's
 * model in virtual time (sim/sim_virtual.c). Whatever composes runs (a
 * capacity search's probes, `replay --virtual`, a fleet's probes) takes
 * an engine through this and does not call either by name.
 *
 * Why here: the plan is what both engines run, both may include plan/ and
 * neither may include the other, and plan/ stands on traces/, whose writer
 * and records an engine's run goes to. traces/ would do as well for the
 * types, but an engine is a runner of plans, not a part of the format.
 *
 * An engine is made with its own options, by the folder that implements
 * it (lt_replay_engine_of: a replay made from its options and prepared;
 * lt_sim_engine_for: a profile, the trace's jobs and the plan's options),
 * so that what runs it needs to know neither. A run is every run of the
 * engine's plan (one per closed-loop level), appended to a writer the
 * caller opened and keeps: the engine writes its run records (ids from
 * run_base on), results, scrape samples and checks there, lets the
 * caller add its own fields to each run record before it is written, and
 * tells the caller each run record and result as it writes them, so that
 * the caller judges the run as it streams and never reads the file back.
 */
#ifndef LT_PLAN_ENGINE_H
#define LT_PLAN_ENGINE_H

#include "base/lt_err.h"
#include "traces/trace_format.h"
#include "traces/trace_writer.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Where an engine's run goes, and who is told what it writes. */
struct lt_engine_sink {
    struct lt_writer *w; /* a results writer, open; the caller's to close */
    uint32_t run_base;   /* the first run record's id in w; the engine's later runs follow */
    /* Each run record before it is put, to add the caller's own fields
     * (a capacity probe's search, load, SLO: struct lt_run), which must
     * stay valid until the run ends; may be NULL. */
    void (*fill_run)(void *ud, struct lt_run *run);
    /* Each run record and each result, as the writer was given it, right
     * after it was put (valid during the call); either may be NULL. */
    void (*on_run)(void *ud, const struct lt_run *run);
    void (*on_result)(void *ud, const struct lt_result *res);
    void *ud;
};

struct lt_engine;

struct lt_engine_ops {
    const char *name; /* "live" or "virtual": a probe's run record says it */
    /* Every run into s. Returns 0 (also when stopped: everything is
     * recorded, the unsent as unsent) or a negative code with err filled.
     * w is flushed before it returns, so that the caller's view of it is
     * what is on disk. */
    int (*run)(struct lt_engine *e, const struct lt_engine_sink *s, struct lt_err *err);
    /* Ask the running engine to stop (sig: the signal that asks, 0: the
     * caller). Async-signal-safe. */
    void (*stop)(struct lt_engine *e, int sig);
    /* Who stopped the last run ("SIGINT", "SIGTERM", "caller"), NULL when
     * it ran to its end. */
    const char *(*stopped)(const struct lt_engine *e);
    /* What the engine holds, released (lt_engine_free then frees e). */
    void (*release)(struct lt_engine *e);
};

/* The first member of each engine's own struct. */
struct lt_engine {
    const struct lt_engine_ops *ops;
};

static inline int lt_engine_run(struct lt_engine *e, const struct lt_engine_sink *s,
                                struct lt_err *err)
{
    return e->ops->run(e, s, err);
}

static inline void lt_engine_stop(struct lt_engine *e, int sig)
{
    e->ops->stop(e, sig);
}

static inline const char *lt_engine_stopped(const struct lt_engine *e)
{
    return e->ops->stopped(e);
}

static inline const char *lt_engine_name(const struct lt_engine *e)
{
    return e->ops->name;
}

/* An engine of ops whose own struct (struct lt_engine first) is size
 * bytes, zeroed: what each engine's constructor starts from. NULL when
 * out of memory. */
static inline struct lt_engine *lt_engine_new(const struct lt_engine_ops *ops, size_t size)
{
    struct lt_engine *e = size >= sizeof *e ? calloc(1, size) : NULL;
    if (e)
        e->ops = ops;
    return e;
}

/* Free; NULL is a no-op. */
static inline void lt_engine_free(struct lt_engine *e)
{
    if (e) {
        e->ops->release(e);
        free(e);
    }
}

#endif

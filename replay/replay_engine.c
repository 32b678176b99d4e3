/*
 * The live replay as an engine (plan/plan_engine.h): its runs appended to
 * a writer the caller hands in, run ids from the caller's base, each run
 * record and result told to the caller as it is written.
 */
#include "replay/replay_internal.h"

#include <signal.h>

struct live_engine {
    struct lt_engine e; /* first: the interface's view */
    struct lt_replay *rp;
};

static struct lt_replay *rp_of(const struct lt_engine *e)
{
    return ((const struct live_engine *)(const void *)e)->rp;
}

static int live_run(struct lt_engine *e, const struct lt_engine_sink *s, struct lt_err *err)
{
    struct lt_replay *rp = rp_of(e);
    if (rp->w)
        return lt_errset(err, LT_EINVAL, "the replay writes a file of its own (out_path)");
    rp->w = s->w;
    rp->sink = s;
    rp->run_base = s->run_base;
    int rc = lt__replay_run_all(rp, err);
    /* What reached the file is known once the frame is out; the file
     * stays the caller's. */
    struct lt_err e2 = {0};
    int frc = lt_writer_flush(rp->w, rc < 0 ? &e2 : err);
    rp->st.write_failed = lt_writer_failed(rp->w);
    lt_writer_on_disk(rp->w, &rp->st.on_disk);
    rp->w = NULL;
    rp->sink = NULL;
    return rc < 0 ? rc : frc;
}

static void live_stop(struct lt_engine *e, int sig)
{
    lt_replay_stop_signal(rp_of(e), sig);
}

static const char *live_stopped(const struct lt_engine *e)
{
    const struct lt_replay *rp = rp_of(e);
    if (!lt_replay_stopped(rp))
        return NULL;
    return rp->stop_sig == SIGINT    ? "SIGINT"
           : rp->stop_sig == SIGTERM ? "SIGTERM"
           : rp->stop_sig > 0        ? "a signal"
                                     : "caller";
}

static void live_release(struct lt_engine *e)
{
    lt_replay_free(rp_of(e));
}

static const struct lt_engine_ops live_ops = {
    .name = "live",
    .run = live_run,
    .stop = live_stop,
    .stopped = live_stopped,
    .release = live_release,
};

struct lt_engine *lt_replay_engine_of(struct lt_replay *rp)
{
    struct live_engine *le = (struct live_engine *)lt_engine_new(&live_ops, sizeof *le);
    if (!le) {
        lt_replay_free(rp);
        return NULL;
    }
    le->rp = rp;
    return &le->e;
}

struct lt_replay *lt_replay_engine_replay(struct lt_engine *e)
{
    return e && e->ops == &live_ops ? rp_of(e) : NULL;
}

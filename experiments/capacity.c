/*
 * The capacity search (see capacity.h). plan/plan_search.h decides
 * which load to probe; this file runs each probe on an engine taken
 * through plan/plan_engine.h, live (replay/, lt_replay_engine_of, against
 * the target) or in virtual time (sim/, lt_sim_engine_for, the sim's
 * model), into a writer it hands the engine. Each probe is judged from
 * its results as they stream: the engine's sink hook feeds a fresh
 * analysis (analyze's own rule, so the search and `analyze` of the file
 * agree), and nothing is read back to judge it; the model's probes that
 * choose the live window write no file at all.
 *
 * The one results file is opened once, when the search starts, and every
 * record is written once, as it goes: each probe is a run (its id the
 * probe's place in the file), its run record holding what is known when
 * it starts (axis, engine, load, SLO, the window it replays; the sink's
 * fill_run hook), its verdict record (docs/trace-format.md §2.9) what its
 * results decided, once judged. A probe cut short by a stop, or judging
 * too few requests to decide anything, keeps its records and has no
 * verdict; analyze leaves it out. The answer follows the last probe, in
 * an answer record (§2.10). A search that fails leaves no file: a file
 * without an answer would read as one.
 *
 * A rate probe of the trace in trace time lasts (n - 1) / rate: the whole
 * trace at the capacity of a slow server can take hours. So a live probe
 * replays a window of the trace, as few requests as its interval needs
 * within a time budget, and says which window, how many and why; with a
 * model (virtual first) the window is the one whose attainment in the
 * model is nearest the whole trace's at the answer, so that the live
 * answer is of the same question. A probe that judged too few requests
 * for its interval to tell the target apart decides nothing: the search
 * refuses it with the reason instead of calling it a failure.
 *
 * Loads are in live units. Against the sim at --sim-time-scale S, the
 * model runs S times faster than it does in virtual time, so a virtual
 * probe of live load L runs the model at rate L / S (concurrency is
 * unchanged) against the SLO's limits times S: a virtual and a live search
 * of one profile then answer the same question.
 */
#include "experiments/capacity.h"

#include "analyze/analyze.h"
#include "base/lt_dur.h"
#include "base/lt_time.h"
#include "experiments/vreplay.h"
#include "plan/plan_engine.h"
#include "plan/plan_jobs.h"
#include "plan/plan_search.h"
#include "sim/sim_profile.h"
#include "sim/sim_virtual.h"
#include "traces/trace_results.h"
#include "traces/trace_writer.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILES (2 * LT_SEARCH_MAX_PROBES)
/* Attainment is measured to +-0.02 (95 % Wilson) where the probe's length
 * is ours to choose (closed loop). */
#define PROBE_HALF_WIDTH 0.02
/* In trace time a probe is as long as the trace's requests at the load:
 * a live one replays as many as measure attainment to +-0.05, or fewer,
 * down to the fewest its interval needs, to last at most this long. */
#define RATE_HALF_WIDTH 0.05
#define LIVE_PROBE_BUDGET_S 120.0
/* scrape samples of the model's values a virtual probe writes, at most */
#define VIRTUAL_SCRAPES 1000
/* windows of the trace the model compares to choose the live one */
#define WINDOW_CANDIDATES 64

/* A judged probe of the search (its verdict written). */
struct probe_rec {
    bool virt;
    double wall_s; /* live: the probe's wall time */
    struct lt_search_probe p;
    char why[400]; /* stopped early for over-saturation: why; "" otherwise */
};

/* A live rate probe watched as it runs (the engine's progress callback):
 * stopped once over-saturated (plan_search.h, lt_search_watch). */
struct search_ctx;
struct probe_watch {
    const struct search_ctx *c; /* the event hook's */
    struct lt_engine *e;        /* the live probe's engine, while it runs */
    struct lt_search_watch w;
    bool watch; /* judge saturation (a rate probe) */
    bool cut;   /* stopped by the watch, not by the user */
    uint32_t probe;
    double planned_s; /* the probe's schedule */
};

/* The part of the trace a live rate probe replays. */
struct probe_window {
    bool set;                 /* else the trace as the options give it */
    int64_t start_us, end_us; /* trace time [start, end); end 0: to the end */
    uint64_t first, n;        /* requests first+1 .. first+n of the trace */
    uint64_t warmup;
    double span_s; /* its trace time */
};

struct search_ctx {
    const struct lt_replay_opts *o;
    const struct lt_capacity_opts *s;
    struct lt_plan_jobs jobs;
    uint64_t warmup, requests;       /* per probe */
    uint64_t min_judged;             /* the fewest a probe's interval needs */
    uint64_t kept;                   /* rate: requests of the trace the options keep */
    double trace_rate;               /* rate: the trace's own mean rate */
    bool user_bounds;                /* --window, --requests or --duration bound each probe */
    struct probe_window win;         /* live rate probes */
    const struct probe_window *vwin; /* virtual probes: NULL, or win */
    struct lt_search whole;          /* the model's search of the whole trace, when win is set */
    uint32_t whole_probes;
    double attain; /* share that must meet the SLO, resolved */
    double vscale; /* live load = virtual load x vscale; SLO x vscale in virtual */
    struct lt_sim_profile prof;
    struct lt_sim *sim;
    char url[64];
    const char *api_key;
    bool bearer_too;
    lt_mono t0;
    struct lt_writer *out; /* the results file */
    uint32_t next_run;     /* the next probe's run id in it */
    char win_desc[160];    /* live rate probes' window, as their run records say it */
    struct probe_rec files[MAX_FILES];
    uint32_t n_files;
    double virtual_cpu_s, live_wall_s;
    double live_over_s;   /* live probes' wall time beyond their schedules */
    double max_time_load; /* --max-time ended the search before a probe here */
    double cut_load;      /* a stop cut the probe at this load short */
    bool cut_virtual;     /* ... a virtual one */
    uint32_t virtual_probes, live_probes;
    bool stopped;
    struct probe_watch pw;
    /* the model and prompt calibration the first live probe learned: the
     * later ones ask the target neither again */
    struct lt_replay_known *known;
    double cut_saved_s; /* planned time the probes stopped early did not spend */
    /* the live probes' figures, when the caller gave some (a dashboard) */
    struct lt_replay_live *live;
};

static void emit(const struct search_ctx *c, const struct lt_capacity_event *ev)
{
    if (c->s->event)
        c->s->event(c->s->ud, ev);
}

/* A sentence for the caller: what the search chose, and why. */
static void note(const struct search_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note(const struct search_ctx *c, const char *fmt, ...)
{
    char text[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    emit(c, &(struct lt_capacity_event){.kind = LT_CAPACITY_NOTE, .text = text});
}

/* The signal that asks the search to stop (the caller's hook), 0: go on. */
static int stop_signal(const struct search_ctx *c)
{
    return c->s->stop ? c->s->stop(c->s->ud) : 0;
}

/* A virtual probe's stop hook (struct lt_sim_vreplay): who stopped it. */
static const char *stopped_by(void *ud)
{
    int sig = stop_signal(ud);
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig ? "a signal" : NULL;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double since_s(lt_mono t0)
{
    return (double)lt_mono_diff_us(lt_mono_now(), t0) / 1e6;
}

/* A probe judged as its results stream: a fresh analysis (analyze's own,
 * fed by the engine's hooks what the writer is given), so that the
 * search and `loadtrace analyze` of the file count the same requests as
 * meeting the SLO. */
/* What a probe's run record says of it from its start. */
struct probe_keys {
    const char *search, *engine, *slo, *window;
    double load, attain_target;
};

struct probe_judge {
    struct lt_analyze a;
    const struct probe_keys *keys;
    uint32_t runs; /* run records written */
    int rc;        /* the first failure of a hook, with err */
    struct lt_err err;
};

static void judge_fill(void *ud, struct lt_run *run)
{
    const struct probe_keys *k = ((struct probe_judge *)ud)->keys;
    run->search = k->search;
    run->engine = k->engine;
    run->load = k->load;
    run->slo = k->slo;
    run->attain_target = k->attain_target;
    run->window = k->window;
}

static void judge_run(void *ud, const struct lt_run *run)
{
    struct probe_judge *pj = ud;
    pj->runs++;
    if (pj->rc == 0)
        pj->rc = lt_analyze_add_run(&pj->a, run, &pj->err);
}

static void judge_result(void *ud, const struct lt_result *res)
{
    struct probe_judge *pj = ud;
    if (pj->rc == 0)
        pj->rc = lt_analyze_add_result(&pj->a, res, &pj->err);
}

/* Begin judging a probe against the SLO times slo_scale; *sink then feeds
 * it and writes to w, its run from run_base, its run record with keys.
 * Release pj with judge_release whatever happens. */
static int judge_begin(struct probe_judge *pj, const struct lt_capacity_opts *s, double slo_scale,
                       struct lt_writer *w, uint32_t run_base, const struct probe_keys *keys,
                       struct lt_engine_sink *sink, struct lt_err *err)
{
    struct lt_analyze_opts ao;
    lt_analyze_opts_init(&ao);
    ao.slo_ttft_us = (int64_t)((double)s->slo_ttft_us * slo_scale);
    ao.slo_tpot_us = (int64_t)((double)s->slo_tpot_us * slo_scale);
    ao.slo_e2e_us = (int64_t)((double)s->slo_e2e_us * slo_scale);
    memset(pj, 0, sizeof *pj);
    pj->keys = keys;
    *sink = (struct lt_engine_sink){.w = w,
                                    .run_base = run_base,
                                    .fill_run = keys ? judge_fill : NULL,
                                    .on_run = judge_run,
                                    .on_result = judge_result,
                                    .ud = pj};
    int rc = lt_analyze_init(&pj->a, &ao, err);
    if (rc == 0)
        lt_analyze_next_file(&pj->a); /* one file's worth, as analyze reads one */
    return rc;
}

static void judge_release(struct probe_judge *pj)
{
    lt_analyze_release(&pj->a);
}

struct probe_out {
    uint64_t n, good, faults;
    uint64_t warmup; /* warm-up results, excluded */
    double goodput;
    bool growing; /* requests in flight grew without bound over the run */
};

/* The verdict's figures of a probe judged as it streamed. cut: the probe
 * was stopped for over-saturation, and the requests it aborted (in
 * flight, or never sent) are the load's doing, not faults. */
static int measure(struct probe_judge *pj, bool cut, struct probe_out *po, uint64_t *measured,
                   struct lt_err *err)
{
    memset(po, 0, sizeof *po);
    int rc = pj->rc;
    if (rc < 0)
        *err = pj->err;
    if (rc == 0)
        rc = lt_analyze_finish(&pj->a, err);
    if (rc == 0 && pj->a.n_runs < 1)
        rc = lt_errset(err, LT_EFORMAT, "the probe recorded no run");
    if (rc < 0)
        return rc;
    const struct lt_analyze_run *r = pj->a.runs[0];
    /* Cancelled requests and faults are out of the count (analyze.h, the
     * rule the report of the file follows too). */
    struct lt_analyze_judged j;
    lt_analyze_probe_judged(r, cut, &j);
    po->faults = j.faults;
    po->n = j.judged;
    *measured = r->measured;
    po->warmup = r->warmup;
    po->good = r->good_sched;
    po->goodput = r->goodput_sched;
    /* Over-saturation (plan_search.h's one rule) over the run's requests
     * in flight. Judged after the probe, and, for a live rate probe, as
     * it runs (struct probe_watch), which also reads the server's queue. */
    uint32_t nb = r->ts.n;
    double *inflight = nb >= 8 ? malloc(nb * sizeof *inflight) : NULL;
    if (nb >= 8 && !inflight)
        return lt_errset(err, LT_ENOMEM, "out of memory");
    for (uint32_t k = 0; inflight && k < nb; k++) {
        struct lt_analyze_ts_point pt;
        lt_analyze_ts_point(r, k, &pt);
        inflight[k] = pt.in_flight;
    }
    po->growing = inflight && lt_search_grew(inflight, nb, 4);
    free(inflight);
    return 0;
}

/* The options of a probe at load (in the engine's units). */
/* win: the window of the trace it replays; NULL or unset: the trace as
 * the options give it. */
static void probe_opts(const struct search_ctx *c, const struct probe_window *win, double load,
                       const char *path, struct lt_replay_opts *o)
{
    *o = *c->o;
    o->out_path = path;
    o->warmup = c->warmup;
    o->progress = NULL;
    if (win && win->set && !c->s->concurrency) {
        /* the whole trace's schedule at this load, of which the window is
         * a slice: its bursts and gaps as they are there, and the load
         * means what it means for the whole trace */
        o->tt.win_start_us = win->start_us;
        o->tt.win_end_us = win->end_us;
        o->warmup = win->warmup;
        o->mode = LT_REPLAY_MODE_TRACE;
        o->tt.rate = 0;
        o->tt.speed = load / c->trace_rate;
        return;
    } else if (!c->o->warmup && !c->s->concurrency && c->o->tt.duration_us > 0) {
        /* 5 % of what the duration holds at this load, not of the trace */
        double held = fmin((double)c->warmup * 20, load * (double)c->o->tt.duration_us / 1e6 + 1);
        o->warmup = (uint64_t)(held / 20);
    }
    if (c->s->concurrency) {
        o->mode = LT_REPLAY_MODE_CONCURRENCY;
        o->levels[0] = (uint32_t)load;
        o->n_levels = 1;
        o->requests = c->requests;
    } else {
        /* Trace time rescaled to a mean rate: the trace's own bursts. */
        o->mode = LT_REPLAY_MODE_TRACE;
        o->tt.rate = load;
        o->tt.speed = 0;
    }
}

static int run_virtual(struct search_ctx *c, const struct probe_window *win, double load,
                       const struct lt_engine_sink *sink, struct lt_err *err)
{
    struct lt_replay_opts o;
    probe_opts(c, win, c->s->concurrency ? load : load / c->vscale, NULL, &o);
    struct lt_sim_vreplay vo;
    lt_vreplay_opts_init(&vo, &o, 250000);
    /* a signal stops a long virtual probe too; the search drops it */
    vo.stopped = stopped_by;
    vo.stop_ud = c;
    /* A probe at a low rate spans hours of model time: at most about
     * VIRTUAL_SCRAPES samples a probe, however long, so that the probes
     * stay as cheap as the search needs them to be. */
    double span_s = c->s->concurrency ? 0
                    : win && win->set
                        ? win->span_s * c->trace_rate / (load / c->vscale)
                        : (double)(c->kept > 1 ? c->kept - 1 : 0) / (load / c->vscale);
    if (vo.metrics_interval_us > 0 &&
        span_s / VIRTUAL_SCRAPES * 1e6 > (double)vo.metrics_interval_us)
        vo.metrics_interval_us = (int64_t)(span_s / VIRTUAL_SCRAPES * 1e6);
    struct lt_engine *e = lt_sim_engine_for(&c->prof, &c->jobs, &vo, err);
    if (!e)
        return err->code;
    int rc = lt_engine_run(e, sink, err);
    if (rc == 0 && lt_engine_stopped(e))
        c->stopped = true;
    lt_engine_free(e);
    return rc;
}

static void on_probe_progress(void *ud, const struct lt_replay_progress *p)
{
    struct probe_watch *pw = ud;
    if (pw->cut || !pw->e)
        return;
    emit(pw->c, &(struct lt_capacity_event){.kind = LT_CAPACITY_PROGRESS,
                                            .probe = pw->probe,
                                            .progress = p,
                                            .planned_s = pw->planned_s});
    if (pw->watch &&
        lt_search_watch_add(&pw->w, p->elapsed_s, (double)p->inflight, p->lag_s, p->waiting)) {
        pw->cut = true;
        lt_engine_stop(pw->e, 0);
    }
}

/* Requests a rate probe replays, and their schedule's length at load. */
static uint64_t probe_requests(const struct search_ctx *c, bool virt)
{
    if (!virt && c->win.set)
        return c->win.n;
    if (c->s->concurrency)
        return c->requests;
    return c->kept;
}

static double planned_s(const struct search_ctx *c, bool virt, double load)
{
    if (c->s->concurrency)
        return 0; /* a closed loop's length is the server's doing */
    uint64_t n = probe_requests(c, virt);
    double t = n > 1 ? (double)(n - 1) / load : 0; /* the mean rate's definition */
    if (!virt && c->win.set) /* a slice of the whole trace's schedule at load */
        t = c->win.span_s * c->trace_rate / load;
    if (c->o->tt.duration_us > 0 && t > (double)c->o->tt.duration_us / 1e6)
        t = (double)c->o->tt.duration_us / 1e6;
    return t;
}

static int run_live(struct search_ctx *c, double load, const struct lt_engine_sink *sink,
                    bool *limited, struct lt_err *err)
{
    struct lt_replay_opts o;
    probe_opts(c, &c->win, load, NULL, &o);
    struct probe_watch *pw = &c->pw;
    pw->e = NULL;
    pw->c = c;
    pw->cut = false;
    pw->probe = c->live_probes + 1;
    pw->planned_s = planned_s(c, false, load);
    pw->watch = !c->s->concurrency;
    lt_search_watch_init(&pw->w, pw->planned_s);
    o.progress = on_probe_progress;
    o.progress_ud = pw;
    o.live = c->live;
    if (c->live) {
        char what[160];
        snprintf(what, sizeof what, "live probe %u: %s %g%s", pw->probe,
                 c->s->concurrency ? "concurrency" : "rate", load,
                 c->s->concurrency ? " in flight" : " req/s");
        lt_replay_live_set_phase(c->live, "probe", pw->probe, load, what);
    }
    if (c->sim) {
        o.target = c->url;
        o.target_label = "sim";
    }
    o.api_key = c->api_key;
    o.api_key_bearer_too = c->bearer_too;
    o.known = c->known;
    *limited = false;
    if (c->s->max_time_us > 0) {
        /* --max-time bounds the probe too: nothing is scheduled past it
         * (a probe it cut measures what it sent). */
        int64_t left = c->s->max_time_us - lt_mono_diff_us(lt_mono_now(), c->t0);
        if (left < 1)
            left = 1;
        *limited = (double)left / 1e6 < pw->planned_s || c->s->concurrency;
        if (!o.duration_us || left < o.duration_us)
            o.duration_us = left;
        if (!o.tt.duration_us || left < o.tt.duration_us)
            o.tt.duration_us = left;
    }
    struct lt_replay *rp = lt_replay_new(&o, err);
    int rc = rp ? lt_replay_prepare(rp, err) : err->code;
    if (rc == 0 && !c->known && !(c->known = lt_replay_known_new(rp)))
        rc = lt_errset(err, LT_ENOMEM, "out of memory");
    struct lt_engine *e = NULL;
    if (rc == 0 && !(e = lt_replay_engine_of(rp)))
        rc = lt_errset(err, LT_ENOMEM, "out of memory");
    if (rc < 0)
        lt_replay_free(rp);
    pw->e = e;
    if (rc == 0)
        rc = c->s->run ? c->s->run(c->s->ud, e, sink, err) : lt_engine_run(e, sink, err);
    emit(c, &(struct lt_capacity_event){
                .kind = LT_CAPACITY_PROBE_RAN, .probe = pw->probe, .load = load});
    if ((e && lt_engine_stopped(e) && !pw->cut) || stop_signal(c))
        c->stopped = true;
    pw->e = NULL;
    lt_engine_free(e);
    return rc < 0 ? rc : 0;
}

/* Why a probe judged fewer requests than its interval needs, in words:
 * what took them, and what to lengthen. */
static void too_few(const struct search_ctx *c, bool virt, double load, const struct probe_out *po,
                    uint64_t measured, struct lt_err *err)
{
    const struct lt_replay_opts *o = c->o;
    uint64_t warm = po->warmup;
    uint64_t sent = measured + warm;
    char what[200];
    size_t u = 0;
    if (o->warmup)
        u = (size_t)snprintf(what, sizeof what, "lower --warmup (%llu) or ",
                             (unsigned long long)o->warmup);
    if (c->s->concurrency || !o->tt.duration_us)
        snprintf(what + u, sizeof what - u, "%s",
                 o->requests ? "raise --requests" : "use a longer trace");
    else
        snprintf(what + u, sizeof what - u,
                 "lengthen --duration (at %g req/s it holds about %.0f requests of the trace a "
                 "probe)",
                 load, load * (double)o->tt.duration_us / 1e6);
    (void)virt;
    if (measured == 0 && warm > 0)
        lt_errset(err, LT_EUSAGE,
                  "at %s %g the probe judged no request: the warm-up took all %llu requests of "
                  "the probe; %s",
                  c->s->concurrency ? "concurrency" : "rate", load, (unsigned long long)sent, what);
    else
        lt_errset(err, c->user_bounds ? LT_EUSAGE : LT_EFORMAT,
                  "at %s %g the probe judged %llu requests (%llu replayed: %llu warm-up, %llu "
                  "cancelled or faults), too few for its interval: at least %llu are needed to "
                  "tell %g of them meeting the SLO apart; %s",
                  c->s->concurrency ? "concurrency" : "rate", load, (unsigned long long)po->n,
                  (unsigned long long)sent, (unsigned long long)warm,
                  (unsigned long long)(measured - po->n), (unsigned long long)c->min_judged,
                  c->attain, what);
}

/* Would a live probe at load end past --max-time? Its schedule, and the
 * time the probes so far took beyond theirs (the last requests' answers,
 * the set-up). */
static bool past_max_time(const struct search_ctx *c, double load)
{
    if (c->s->max_time_us <= 0)
        return false;
    double left = (double)c->s->max_time_us / 1e6 - since_s(c->t0);
    double over = c->live_probes ? c->live_over_s / c->live_probes : 0;
    if (c->s->concurrency)
        return c->live_probes && left < c->live_wall_s / c->live_probes;
    return planned_s(c, false, load) + over > left;
}

/* A judged probe's verdict into the search ls, told, and written after
 * its results (its run's id: run). */
static int add_verdict(struct search_ctx *c, struct lt_search *ls, bool virt, double load, bool cut,
                       uint32_t run, struct probe_rec *f, struct probe_out *pop, struct lt_err *err)
{
    struct probe_out po = *pop;
    const struct lt_capacity_opts *s = c->s;
    double attain = po.n ? (double)po.good / (double)po.n : 0;
    bool saturated = cut || (po.growing && attain < ls->o.attain);
    const struct probe_window *pwin = virt ? c->vwin : &c->win;
    if (!s->concurrency && pwin && pwin->set)
        po.goodput = attain * load; /* the window's own pace is no rate of the trace's */
    const struct lt_search_probe *p =
        lt_search_add(ls, po.n, po.good, po.faults, saturated, po.goodput);
    f->p = *p;
    struct lt_verdict v = {.run = run,
                           .attain = p->attain,
                           .attain_lo = p->ci_lo,
                           .attain_hi = p->ci_hi,
                           .verdict = p->decided || p->verdict == LT_SEARCH_FAULTED
                                          ? lt_search_verdict_name(p->verdict)
                                          : "repeat",
                           .why = f->why[0] ? f->why : NULL};
    /* flushed: the file on disk holds every probe judged so far whole */
    int rc = lt_writer_put_verdict(c->out, &v, err);
    if (rc == 0)
        rc = lt_writer_flush(c->out, err);
    emit(c, &(struct lt_capacity_event){.kind = LT_CAPACITY_PROBE,
                                        .virt = virt,
                                        .probe = virt ? c->virtual_probes : c->live_probes,
                                        .load = load,
                                        .p = p,
                                        .judged = po.n,
                                        .faults = po.faults,
                                        .search = ls,
                                        .live_probes = c->live_probes});
    if (cut)
        emit(c, &(struct lt_capacity_event){.kind = LT_CAPACITY_PROBE_CUT,
                                            .probe = c->live_probes,
                                            .load = load,
                                            .why = f->why,
                                            .saved_s = c->pw.w.span_s > c->pw.w.t_last
                                                           ? c->pw.w.span_s - c->pw.w.t_last
                                                           : 0});
    return rc;
}

/* A results writer at path for the search's records (the results file, or
 * /dev/null for the probes that choose the window), its header's meta
 * what is known before the first probe. NULL with err filled. */
static struct lt_writer *probe_writer(const struct search_ctx *c, const char *path,
                                      struct lt_err *err)
{
    const struct lt_replay_opts *o = c->o;
    const struct lt_capacity_opts *s = c->s;
    char att[32];
    snprintf(att, sizeof att, "%g", c->attain);
    const char *mk[] = {"trace",        "target",          "capacity_axis",
                        "capacity_slo", "capacity_attain", "capacity_engine"};
    const char *mv[] = {o->trace_path,
                        s->target_sim ? "sim" : o->target,
                        s->concurrency ? "concurrency" : "rate",
                        s->slo,
                        att,
                        s->virtual_only ? "virtual" : "live"};
    /* small frames at a fast level, as the live engine's own file: a
     * frame's compression stalls its loop; a search in virtual time
     * alone has no loop to stall, and its file is a third smaller at the
     * defaults */
    struct lt_writer_opts wo = {.level = 1, .frame_records = 512, .frame_ms = 200};
    return lt_results_file(path, mk, mv, sizeof mk / sizeof mk[0], c->jobs.block_tokens,
                           s->virtual_only ? NULL : &wo, err);
}

/* What the run record of a probe at load says from its start, into *k. */
static void probe_keys_of(struct search_ctx *c, bool virt, double load, struct probe_keys *k)
{
    const struct probe_window *w = virt ? c->vwin : &c->win;
    bool windowed = w && w->set && !c->s->concurrency;
    if (windowed)
        snprintf(c->win_desc, sizeof c->win_desc,
                 "requests %llu-%llu of %zu, trace time %.6f-%.6f s",
                 (unsigned long long)w->first + 1, (unsigned long long)(w->first + w->n), c->jobs.n,
                 (double)w->start_us / 1e6, (double)w->start_us / 1e6 + w->span_s);
    *k = (struct probe_keys){.search = c->s->concurrency ? "concurrency" : "rate",
                             .engine = virt ? "virtual" : "live",
                             .slo = c->s->slo,
                             .window = windowed ? c->win_desc : NULL,
                             .load = load,
                             .attain_target = c->attain};
}

/* One search with one engine. Returns 0 or a negative code. */
static int search(struct search_ctx *c, struct lt_search *ls, bool virt, struct lt_err *err)
{
    const struct lt_capacity_opts *s = c->s;
    double load;
    bool repeat;
    while (lt_search_next(ls, &load, &repeat)) {
        if (stop_signal(c)) {
            c->stopped = true;
            lt_search_give_up(ls, LT_SEARCH_STOPPED);
            break;
        }
        if (c->n_files == MAX_FILES) {
            lt_search_give_up(ls, LT_SEARCH_MAX_PROBES_HIT);
            break;
        }
        double t_probe0 = since_s(c->t0);
        if (!virt && past_max_time(c, load)) {
            lt_search_give_up(ls, LT_SEARCH_MAX_TIME_HIT);
            c->max_time_load = load;
            break;
        }
        struct probe_rec *f = &c->files[c->n_files];
        f->virt = virt;
        f->why[0] = '\0';
        c->pw.cut = false;
        if (!virt)
            emit(c, &(struct lt_capacity_event){.kind = LT_CAPACITY_PROBE_START,
                                                .probe = c->live_probes + 1,
                                                .load = load,
                                                .requests = probe_requests(c, false),
                                                .planned_s = planned_s(c, false, load)});
        double cpu0 = cpu_seconds();
        bool limited = false;
        struct probe_judge pj;
        struct lt_engine_sink sink;
        struct probe_keys keys;
        probe_keys_of(c, virt, load, &keys);
        uint32_t run = c->next_run;
        int rc = judge_begin(&pj, s, virt ? c->vscale : 1, c->out, run, &keys, &sink, err);
        if (rc == 0)
            rc = virt ? run_virtual(c, c->vwin, load, &sink, err)
                      : run_live(c, load, &sink, &limited, err);
        c->next_run += pj.runs; /* what the engine wrote stays, judged or not */
        if (virt) {
            c->virtual_cpu_s += cpu_seconds() - cpu0;
            c->virtual_probes++;
        } else {
            f->wall_s = since_s(c->t0) - t_probe0;
            c->live_wall_s += f->wall_s;
            c->live_over_s += fmax(0, f->wall_s - planned_s(c, false, load));
            c->live_probes++;
        }
        if (rc < 0) {
            judge_release(&pj);
            return rc;
        }
        if (c->stopped) { /* a probe cut short says nothing: no verdict */
            judge_release(&pj);
            lt_search_give_up(ls, LT_SEARCH_STOPPED);
            c->cut_load = load;
            c->cut_virtual = virt;
            if (!virt)
                c->live_probes--;
            break;
        }
        bool cut = !virt && c->pw.cut;
        if (cut) {
            snprintf(f->why, sizeof f->why, "%s", c->pw.w.why);
            if (c->pw.w.span_s > c->pw.w.t_last)
                c->cut_saved_s += c->pw.w.span_s - c->pw.w.t_last;
        }
        struct probe_out po;
        uint64_t measured = 0;
        rc = measure(&pj, cut, &po, &measured, err);
        judge_release(&pj);
        if (rc < 0)
            return rc;
        /* Too few to judge: no verdict. Over-saturation stopped early is
         * a verdict of its own; --max-time cutting the probe ends the
         * search; anything else is the options' or the trace's doing. */
        if (po.n < c->min_judged && !cut) {
            if (limited) {
                lt_search_give_up(ls, LT_SEARCH_MAX_TIME_HIT);
                c->max_time_load = load;
                break;
            }
            too_few(c, virt, load, &po, measured, err);
            return err->code;
        }
        c->n_files++;
        if ((rc = add_verdict(c, ls, virt, load, cut, run, f, &po, err)) < 0)
            return rc;
    }
    return 0;
}

/* How many probes a cold search (the defaults, from the same start) would
 * have needed to reach the answer a seeded live search found, had every
 * probe agreed with it: the live-only search virtual-first saves. *wall
 * gets its estimated wall time: a probe of the trace in trace time lasts
 * in inverse proportion to its rate (per_load_s: seconds x req/s, from the
 * live probes); a closed-loop probe, per_probe_s. */
static uint32_t cold_probes(const struct lt_search_opts *o, double lo, bool rate, double per_load_s,
                            double per_probe_s, double *wall)
{
    struct lt_search s;
    lt_search_init(&s, o);
    double load;
    bool rep;
    uint32_t n = 0;
    *wall = 0;
    while (lt_search_next(&s, &load, &rep)) {
        bool meets = load <= lo;
        lt_search_add(&s, 1000, meets ? 1000 : 0, 0, false, 0);
        *wall += rate ? per_load_s / load : per_probe_s;
        n++;
    }
    return n;
}

static const char *end_text(enum lt_search_end e)
{
    switch (e) {
    case LT_SEARCH_FOUND:
        return "found";
    case LT_SEARCH_MAX_PROBES_HIT:
        return "stopped at --max-probes: the bracket is wider than asked";
    case LT_SEARCH_MAX_TIME_HIT:
        return "stopped at --max-time: the bracket is wider than asked";
    case LT_SEARCH_FAULTS:
        return "stopped: probes kept failing for reasons other than load (faults), which say "
               "nothing of the capacity";
    case LT_SEARCH_FLOOR:
        return "even the lowest load tried fails the SLO";
    case LT_SEARCH_CEILING:
        return "meets the SLO at the highest load allowed";
    case LT_SEARCH_STOPPED:
        return "stopped by the user";
    default:
        return lt_search_end_name(e);
    }
}

struct kept_count {
    int64_t ws, we;
    uint64_t n;
};

static int count_kept(void *ud, const struct lt_plan_rec_key *k)
{
    struct kept_count *kc = ud;
    kc->n += k->t >= kc->ws && (kc->we <= 0 || k->t < kc->we);
    return 0;
}

/* ---- the window a live rate probe replays ---- */

/* These functions hold nothing to release: a failure returns at once. */
#define RETURN_IF_FAILED(expr)                                                                     \
    do {                                                                                           \
        int r_ = (expr);                                                                           \
        if (r_ < 0)                                                                                \
            return r_;                                                                             \
    } while (0)

struct key_times {
    const uint64_t *idx; /* ascending */
    int64_t *t;
    size_t n, k;
};

static int key_time(void *ud, const struct lt_plan_rec_key *k)
{
    struct key_times *kt = ud;
    while (kt->k < kt->n && kt->idx[kt->k] == k->idx)
        kt->t[kt->k++] = k->t;
    return 0;
}

/* Arrival times of requests idx[0..n) (ascending), by one reading. */
static int times_at(const struct search_ctx *c, const uint64_t *idx, int64_t *t, size_t n,
                    struct lt_err *err)
{
    struct key_times kt = {.idx = idx, .t = t, .n = n};
    for (size_t k = 0; k < n; k++)
        t[k] = c->jobs.t_last + 1;
    return lt_plan_jobs_each(&c->jobs, key_time, &kt, err);
}

static void window_from(const struct search_ctx *c, uint64_t first, uint64_t n, int64_t t0,
                        int64_t t1, struct probe_window *w)
{
    *w = (struct probe_window){.set = true, .first = first, .n = n, .start_us = t0};
    w->end_us = first + n < c->jobs.n ? t1 : 0;
    if (w->end_us && w->end_us <= t0)
        w->end_us = t0 + 1;
    /* No warm-up: the slice is part of a running trace, and the probes
     * before warmed the server. (--warmup keeps the whole trace:
     * lt_capacity_search.) */
    w->warmup = 0;
    w->span_s = (double)((first + n < c->jobs.n ? t1 : c->jobs.t_last) - t0) / 1e6;
}

/* Attainment in the model of window w at load (live units). */
static int window_attain(struct search_ctx *c, const struct probe_window *w, double load,
                         double *attain, struct lt_err *err)
{
    /* Judged as it streams; its records go nowhere (no file to remove). */
    struct lt_writer *out = probe_writer(c, "/dev/null", err);
    if (!out)
        return err->code;
    struct probe_judge pj;
    struct lt_engine_sink sink;
    int rc = judge_begin(&pj, c->s, c->vscale, out, 0, NULL, &sink, err);
    if (rc == 0)
        rc = run_virtual(c, w, load, &sink, err);
    if (lt_writer_close(out, rc < 0 ? &(struct lt_err){0} : err) < 0 && rc == 0)
        rc = err->code;
    struct probe_out po = {0};
    uint64_t measured = 0;
    if (rc == 0)
        rc = measure(&pj, false, &po, &measured, err);
    judge_release(&pj);
    *attain = rc == 0 && po.n ? (double)po.good / (double)po.n : 0;
    return rc;
}

/* With the model's answer (vs: lo meets, hi fails): of up to
 * WINDOW_CANDIDATES windows of n requests spread over the trace, the one
 * whose attainment in the model at lo and at hi is nearest the whole
 * trace's, preferring those that meet at lo and fail at hi as the whole
 * trace does. */
static int pick_window(struct search_ctx *c, const struct lt_search *vs, uint64_t n, char *why,
                       size_t why_n, struct lt_err *err)
{
    uint64_t firsts[WINDOW_CANDIDATES], idx[2 * WINDOW_CANDIDATES];
    int64_t t[2 * WINDOW_CANDIDATES];
    size_t m = 0;
    uint64_t room = c->jobs.n - n;
    for (uint64_t j = 0; j < WINDOW_CANDIDATES; j++) {
        uint64_t f = room * j / (WINDOW_CANDIDATES - 1);
        if (m && firsts[m - 1] == f)
            continue;
        firsts[m++] = f;
    }
    /* both ends of every window, ascending */
    size_t ni = 0;
    for (size_t k = 0; k < m; k++) {
        idx[ni++] = firsts[k];
        idx[ni++] = firsts[k] + n < c->jobs.n ? firsts[k] + n : c->jobs.n - 1;
    }
    for (size_t a = 1; a < ni; a++) /* insertion sort: nearly sorted already */
        for (size_t b = a; b > 0 && idx[b - 1] > idx[b]; b--) {
            uint64_t x = idx[b];
            idx[b] = idx[b - 1];
            idx[b - 1] = x;
        }
    RETURN_IF_FAILED(times_at(c, idx, t, ni, err));
    double whole[2] = {vs->lo_probe >= 0 ? vs->p[vs->lo_probe].attain : 0,
                       vs->hi_probe >= 0 ? vs->p[vs->hi_probe].attain : 0};
    double loads[2] = {vs->lo, vs->hi};
    double best = INFINITY, best_a[2] = {0, 0};
    bool best_agrees = false;
    struct probe_window bw = {0};
    for (size_t k = 0; k < m; k++) {
        int64_t t0 = 0, t1 = 0;
        for (size_t q = 0; q < ni; q++) {
            if (idx[q] == firsts[k])
                t0 = t[q];
            if (idx[q] == firsts[k] + n)
                t1 = t[q];
        }
        struct probe_window w;
        window_from(c, firsts[k], n, t0, t1, &w);
        /* How far the window is from meeting at lo and failing at hi, as
         * the whole trace does; then how far from the whole trace's. */
        double a[2] = {0, 0}, miss = 0, near = 0;
        for (int e = 0; e < 2; e++) {
            if (!(loads[e] > 0))
                continue;
            RETURN_IF_FAILED(window_attain(c, &w, loads[e], &a[e], err));
            bool meets = a[e] >= c->attain;
            if (meets != (whole[e] >= c->attain))
                miss += fabs(a[e] - c->attain);
            near += fabs(a[e] - whole[e]);
        }
        bool agrees = miss == 0;
        double score = miss * 1e3 + near;
        if (score < best) {
            best = score;
            best_agrees = agrees;
            bw = w;
            best_a[0] = a[0];
            best_a[1] = a[1];
        }
    }
    c->win = bw;
    size_t u = (size_t)snprintf(why, why_n,
                                "of %zu windows of %llu requests spread over the trace, the one "
                                "whose attainment in the model is nearest the whole trace's (",
                                m, (unsigned long long)n);
    for (int e = 0; e < 2 && u < why_n; e++)
        if (loads[e] > 0)
            u += (size_t)snprintf(why + u, why_n - u, "%s%.3f against %.3f at %g req/s",
                                  e && loads[0] > 0 ? ", " : "", best_a[e], whole[e], loads[e]);
    if (u < why_n)
        snprintf(why + u, why_n - u, ")%s",
                 best_agrees ? "" : "; no window meets and fails where the whole trace does");
    return 0;
}

/* How long the live probes will take, before they start. */
static void say_time_plan(const struct search_ctx *c, double first, bool seeded)
{
    char d[32];
    lt_dur_say(d, sizeof d, planned_s(c, false, first));
    if (seeded)
        note(c,
             "a live probe at %g req/s lasts about %s; the live search confirms the model's "
             "answer with 2 of them where it is right to a step (one more for each unsure one "
             "that disagrees with it), more where it is off by more",
             first, d);
    else
        note(c,
             "a live probe at %g req/s, the first load, lasts about %s; each time the load "
             "halves, twice as long",
             first, d);
}

/* Choose what each live rate probe replays: the whole trace when it is
 * short enough, else a window (pick_window with the model; the trace's
 * start without one), and say which, how many requests and why, and how
 * long the probes will take. first: the first live load. */
static int plan_live(struct search_ctx *c, const struct lt_search *vs, double first, bool seeded,
                     struct lt_err *err)
{
    const struct lt_capacity_opts *s = c->s;
    uint64_t n_lo = c->min_judged; /* a window has no warm-up (window_from) */
    uint64_t n_want = lt_search_requests_for(c->attain, RATE_HALF_WIDTH);
    double budget = LIVE_PROBE_BUDGET_S;
    if (s->max_time_us > 0)
        budget = fmin(budget, (double)s->max_time_us / 1e6 / (seeded ? 3 : 6));
    double fit = floor(budget * first) + 1;
    uint64_t n = fit >= (double)n_want ? n_want : fit <= (double)n_lo ? n_lo : (uint64_t)fit;
    char why[600] = "";
    if (c->user_bounds || n >= c->kept) {
        c->win.set = false;
    } else if (vs && (vs->lo > 0 || vs->hi > 0)) {
        RETURN_IF_FAILED(pick_window(c, vs, n, why, sizeof why, err));
    } else {
        int64_t t[2];
        uint64_t idx[2] = {0, n};
        RETURN_IF_FAILED(times_at(c, idx, t, 2, err));
        window_from(c, 0, n, t[0], t[1], &c->win);
        snprintf(why, sizeof why,
                 "the trace's start (no model to choose a window like the whole trace: "
                 "--virtual-first does)");
    }
    uint64_t nn = probe_requests(c, false);
    char dw[32];
    if (c->win.set) {
        note(
            c,
            "live probes replay requests %llu-%llu of the trace's %zu (trace time %.1f-%.1f s): %s",
            (unsigned long long)c->win.first + 1, (unsigned long long)(c->win.first + c->win.n),
            c->jobs.n, (double)c->win.start_us / 1e6, (double)c->win.start_us / 1e6 + c->win.span_s,
            why);
        lt_dur_say(dw, sizeof dw, n_want > 1 ? (double)(n_want - 1) / first : 0);
        if (nn >= n_want)
            note(c,
                 "%llu requests a probe, %llu of them warm-up: %llu judged, "
                 "enough to measure attainment to +-%.2f (the fewest whose interval can tell "
                 "%g apart are %llu)",
                 (unsigned long long)nn, (unsigned long long)c->win.warmup,
                 (unsigned long long)(nn - c->win.warmup), RATE_HALF_WIDTH, c->attain,
                 (unsigned long long)c->min_judged);
        else
            note(c,
                 "%llu requests a probe, %llu of them warm-up: %llu judged "
                 "(the fewest whose interval can tell %g apart are %llu; %llu would measure "
                 "attainment to +-%.2f, but take %s a probe at %g req/s)",
                 (unsigned long long)nn, (unsigned long long)c->win.warmup,
                 (unsigned long long)(nn - c->win.warmup), c->attain,
                 (unsigned long long)c->min_judged, (unsigned long long)n_want, RATE_HALF_WIDTH, dw,
                 first);
    }
    if (!c->win.set || !vs)
        say_time_plan(c, first, seeded);
    return 0;
}

/* The live probes answer for the window: the model is asked the same
 * question (vs, again), and its answer seeds the live search (ls); the
 * whole trace's answer, which chose the window, is kept apart (said, not
 * recorded). Returns 0 or a negative code. */
static int search_window(struct search_ctx *c, const struct lt_search_opts *so,
                         struct lt_search *vs, struct lt_search *ls, bool *seeded,
                         struct lt_err *err)
{
    c->whole = *vs;
    c->whole_probes = c->virtual_probes;
    c->n_files = 0; /* their records stay in the file, before the window's */
    c->virtual_probes = 0;
    c->vwin = &c->win;
    lt_search_init(vs, so);
    vs->o.no_repeat = true;
    lt_search_seed(vs, c->whole.lo, c->whole.hi, 0);
    RETURN_IF_FAILED(search(c, vs, true, err));
    *seeded = vs->end != LT_SEARCH_FAULTS && (vs->lo > 0 || vs->hi > 0);
    lt_search_init(ls, so);
    if (*seeded)
        lt_search_confirm(ls, vs->lo, vs->hi);
    say_time_plan(c, ls->next, *seeded);
    return 0;
}

/* What virtual first saved: a live-only search from the same start, had
 * every probe agreed with the answer found, into r. */
static void savings(const struct search_ctx *c, const struct lt_search *ans,
                    const struct lt_search_opts *so, struct lt_capacity_result *r)
{
    uint32_t decided = 0, unsure_once = 0;
    double load_wall = 0; /* sum of wall x load over the live probes */
    for (uint32_t k = 0; k < ans->n && k < c->n_files; k++) {
        decided += ans->p[k].decided;
        /* decided unsure without a repeat: it agreed with the model,
         * where a live-only search runs it again */
        unsure_once +=
            ans->p[k].decided && ans->p[k].unsure && ans->p[k].pooled == 1 && !ans->o.no_repeat;
    }
    for (uint32_t k = 0; k < c->n_files; k++)
        if (!c->files[k].virt)
            load_wall += c->files[k].wall_s * c->files[k].p.load;
    double mean = c->live_probes ? c->live_wall_s / c->live_probes : 0;
    double cold_wall;
    uint32_t cold = cold_probes(so, ans->lo, !c->s->concurrency,
                                c->live_probes ? load_wall / c->live_probes : 0, mean, &cold_wall);
    /* A live-only search repeats unsure probes as often as this one
     * did, and those this one took the model's word for: scale its
     * decisions by the runs each took here, or would have. */
    double runs_per = decided ? (double)(c->live_probes + unsure_once) / decided : 1;
    r->savings = true;
    r->cold_probes = cold * runs_per;
    r->cold_wall_s = cold_wall * runs_per;
    r->saved_probes = ((double)cold - (double)decided) * runs_per;
    r->saved_wall_s = cold_wall * runs_per - c->live_wall_s - c->virtual_cpu_s;
}

void lt_capacity_say_end(const struct lt_capacity_result *r, char *buf, size_t n)
{
    enum lt_search_end e = r->stopped ? LT_SEARCH_STOPPED : r->ans->end;
    if (e == LT_SEARCH_STOPPED) {
        int sig = r->stop_signal;
        size_t u = (size_t)snprintf(buf, n, "stopped by %s after %u live and %u virtual probes",
                                    sig == SIGTERM  ? "SIGTERM"
                                    : sig == SIGINT ? "SIGINT (the user)"
                                                    : "a signal",
                                    r->live_probes, r->virtual_probes);
        if (r->cut_load > 0 && u < n)
            u += (size_t)snprintf(buf + u, n - u,
                                  " (the %s probe at %g in progress was cut short and is not "
                                  "judged)",
                                  r->cut_virtual ? "virtual" : "live", r->cut_load);
        if (u < n)
            snprintf(buf + u, n - u, "; the bracket above is what the probes before found");
        return;
    }
    if (e == LT_SEARCH_MAX_TIME_HIT && r->max_time_load > 0) {
        char d[32];
        lt_dur_say(d, sizeof d, r->max_time_planned_s);
        snprintf(buf, n,
                 "stopped at --max-time: the next live probe, at %g, would have ended past it "
                 "(its schedule alone: %s)%s",
                 r->max_time_load, d,
                 r->live_probes == 0 && r->virtual_probes
                     ? "; no live probe was run, the virtual answer above stands unchecked"
                 : r->live_probes == 0 ? "; no live probe was run: raise --max-time"
                                       : "; the bracket is wider than asked");
        return;
    }
    snprintf(buf, n, "%s", end_text(e));
}

/* err's sentence after what failed ("virtual probe: ..."), its code kept. */
static int failed(struct lt_err *err, const char *what)
{
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    return lt_errset(err, err->code ? err->code : LT_EIO, "%s: %s", what, msg);
}

/* The model, the trace and the search's options (*so). Returns 0, 1 (a
 * dry run: nothing more to do) or a negative code. */
static int setup(struct search_ctx *c, struct lt_search_opts *so, struct lt_err *err)
{
    const struct lt_replay_opts *o = c->o;
    const struct lt_capacity_opts *s = c->s;
    const char *pname = s->vprofile                 ? s->vprofile
                        : s->sim && s->sim->profile ? s->sim->profile
                                                    : "default";
    if ((s->virtual_only || s->virtual_first) && (lt_sim_profile_load(&c->prof, pname, err) < 0 ||
                                                  lt_sim_profile_check(&c->prof, err) < 0)) {
        err->code = LT_EUSAGE; /* the profile named is the caller's to fix */
        return LT_EUSAGE;
    }
    if (s->dry_run)
        return 1;
    /* streamed: each virtual probe reads the trace as it goes */
    RETURN_IF_FAILED(lt_plan_jobs_open(&c->jobs, o->trace_path, err));
    c->vscale = s->target_sim && s->sim->time_scale > 0 ? s->sim->time_scale : 1;
    c->attain = s->attain > 0 ? s->attain : 0.9;
    *so = (struct lt_search_opts){
        .attain = c->attain,
        .precision = s->precision,
        .integer = s->concurrency,
        .max_probes = s->max_probes,
        .start = s->start,
    };
    if (s->concurrency) {
        uint64_t need = lt_search_requests_for(c->attain, PROBE_HALF_WIDTH);
        c->requests = o->requests ? o->requests : need;
        c->warmup = o->warmup ? o->warmup : c->requests / 20;
        c->requests += o->warmup ? 0 : c->warmup;
        if (!(so->start > 0))
            so->start = 1;
    } else {
        uint64_t n = c->jobs.n;
        if (o->tt.win_start_us > 0 || o->tt.win_end_us > 0) { /* --window: what it keeps */
            struct kept_count kc = {.ws = o->tt.win_start_us, .we = o->tt.win_end_us};
            RETURN_IF_FAILED(lt_plan_jobs_each(&c->jobs, count_kept, &kc, err));
            n = kc.n;
        }
        if (o->requests && o->requests < n)
            n = o->requests;
        c->kept = n;
        c->warmup = o->warmup ? o->warmup : n / 20;
        int64_t span = c->jobs.n > 1 ? c->jobs.t_last - c->jobs.t_first : 0;
        c->trace_rate = span > 0 ? (double)(c->jobs.n - 1) * 1e6 / (double)span : 1;
        if (!(so->start > 0)) /* the trace's own mean rate */
            so->start = c->trace_rate;
    }
    c->min_judged = lt_search_min_judged(c->attain);
    c->user_bounds = o->tt.win_start_us > 0 || o->tt.win_end_us > 0 || o->requests > 0 ||
                     o->tt.duration_us > 0 || o->warmup > 0;
    uint64_t per = probe_requests(c, true);
    /* (with --requests the plan's own sample checks come first: whole
     * sessions may keep fewer; the first probe then says so) */
    if (!o->tt.duration_us && !o->requests && per < c->warmup + c->min_judged)
        /* nothing a probe could judge would decide anything */
        return lt_errset(err, LT_EUSAGE,
                         "a probe replays %llu requests, %llu of them warm-up: its interval "
                         "needs at least %llu judged to tell %g of them meeting the SLO apart; %s",
                         (unsigned long long)per, (unsigned long long)c->warmup,
                         (unsigned long long)c->min_judged, c->attain,
                         s->concurrency || o->requests ? "raise --requests" : "use a longer trace");
    return 0;
}

/* The live search (ls), seeded by the model's (vs) when there is one:
 * the window its probes replay, the sim if it is ours to start, the
 * caller's figures. Returns 0 or a negative code. */
static int search_live(struct search_ctx *c, const struct lt_search_opts *so, struct lt_search *vs,
                       struct lt_search *ls, struct lt_err *err)
{
    const struct lt_capacity_opts *s = c->s;
    bool seeded = s->virtual_first && vs->end != LT_SEARCH_FAULTS && (vs->lo > 0 || vs->hi > 0);
    if (seeded)
        lt_search_confirm(ls, vs->lo, vs->hi);
    if (!s->concurrency && plan_live(c, seeded ? vs : NULL, ls->next, seeded, err) < 0)
        return failed(err, "choosing the live probes' window");
    if (seeded && c->win.set && search_window(c, so, vs, ls, &seeded, err) < 0)
        return failed(err, "virtual probe of the window");
    if (s->target_sim) {
        c->sim = lt_sim_start(s->sim, err);
        if (!c->sim)
            return failed(err, "cannot start the sim");
        snprintf(c->url, sizeof c->url, "http://127.0.0.1:%u", (unsigned)lt_sim_port(c->sim));
    }
    c->api_key = s->api_key;
    c->bearer_too = s->api_key_bearer_too;
    emit(c, &(struct lt_capacity_event){.kind = LT_CAPACITY_LIVE_BEGIN, .live_out = &c->live});
    int rc = search(c, ls, false, err);
    emit(c, &(struct lt_capacity_event){.kind = LT_CAPACITY_LIVE_END});
    return rc < 0 ? failed(err, "live probe") : 0;
}

/* The answer into r. */
static int finish(struct search_ctx *c, const struct lt_search_opts *so,
                  struct lt_capacity_result *r)
{
    const struct lt_capacity_opts *s = c->s;
    const struct lt_search *ans = r->ans = s->virtual_only ? &r->virt : &r->live;
    r->wall_s = since_s(c->t0);
    r->goodput = ans->lo_goodput;
    const struct probe_window *aw = s->virtual_only ? c->vwin : &c->win;
    if (!s->concurrency && aw && aw->set && ans->lo_probe >= 0) /* as analyze gives it */
        r->goodput = ans->p[ans->lo_probe].attain * ans->lo;
    r->vwindow = c->vwin != NULL;
    r->v_goodput = c->vwin && r->virt.lo_probe >= 0
                       ? r->virt.p[r->virt.lo_probe].attain * r->virt.lo
                       : r->virt.lo_goodput;
    r->whole = c->whole;
    r->whole_probes = c->whole_probes;
    r->virtual_probes = c->virtual_probes;
    r->live_probes = c->live_probes;
    r->virtual_cpu_s = c->virtual_cpu_s;
    r->stopped = c->stopped;
    r->stop_signal = stop_signal(c);
    r->cut_load = c->cut_load;
    r->cut_virtual = c->cut_virtual;
    r->max_time_load = c->max_time_load;
    if (c->max_time_load > 0)
        r->max_time_planned_s = planned_s(c, false, c->max_time_load);
    for (uint32_t k = 0; k < c->n_files; k++)
        r->n_cut += c->files[k].why[0] != '\0';
    r->cut_saved_s = c->cut_saved_s;
    r->in_file = c->next_run;
    if (s->virtual_first && !s->virtual_only && ans->lo > 0)
        savings(c, ans, so, r);
    r->answered = true;
    return 0;
}

/* A load of the answer as the file says it: 0 for none. */
static double load_or_0(double v)
{
    return v > 0 && isfinite(v) ? v : 0;
}

/* The answer (r, finish's), after the last probe: what the file could not
 * say before the search ended. */
static int put_answer(struct search_ctx *c, const struct lt_capacity_result *r, struct lt_err *err)
{
    const struct lt_capacity_opts *s = c->s;
    const struct lt_search *ans = r->ans;
    struct lt_answer a = {
        .end = c->stopped ? "stopped" : lt_search_end_name(ans->end),
        .engine = s->virtual_only ? "virtual" : "live",
        .max = load_or_0(ans->lo),
        .fail = load_or_0(ans->hi),
        .goodput = load_or_0(r->goodput),
        .probes = s->virtual_only ? c->virtual_probes : c->live_probes,
        .virtual_probes = c->virtual_probes,
        .wall_s = load_or_0(r->wall_s),
        .virtual_cpu_s = load_or_0(c->virtual_cpu_s),
        .whole_max = c->whole_probes ? load_or_0(c->whole.lo) : 0,
        .whole_fail = c->whole_probes ? load_or_0(c->whole.hi) : 0,
        .probes_saved = r->savings ? load_or_0(r->saved_probes) : 0,
        .wall_s_saved = r->savings ? load_or_0(r->saved_wall_s) : 0,
    };
    return lt_writer_put_answer(c->out, &a, err);
}

int lt_capacity_search(const struct lt_replay_opts *o, const struct lt_capacity_opts *s,
                       struct lt_capacity_result *r, struct lt_err *err)
{
    memset(r, 0, sizeof *r);
    r->ans = &r->live;
    struct search_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return lt_errset(err, LT_ENOMEM, "out of memory");
    c->o = o;
    c->s = s;
    c->t0 = lt_mono_now();
    struct lt_search_opts so;
    int rc = setup(c, &so, err);
    if (rc == 1) {
        rc = 0;
        goto out;
    }
    /* The results file, once the options are known to be good. */
    if (rc == 0 && !(c->out = probe_writer(c, o->out_path, err)))
        rc = failed(err, o->out_path);
    /* Virtual time first: seconds of CPU place the live probes. */
    lt_search_init(&r->virt, &so);
    r->virt.o.no_repeat = true; /* the model is deterministic: a repeat is the same run */
    if (rc == 0 && (s->virtual_only || s->virtual_first) && search(c, &r->virt, true, err) < 0)
        rc = failed(err, "virtual probe");
    lt_search_init(&r->live, &so);
    if (rc == 0 && !s->virtual_only && !c->stopped)
        rc = search_live(c, &so, &r->virt, &r->live, err);
    if (rc == 0)
        rc = finish(c, &so, r);
    if (rc == 0 && put_answer(c, r, err) < 0)
        rc = failed(err, o->out_path);
    if (c->out && lt_writer_close(c->out, rc < 0 ? &(struct lt_err){0} : err) < 0 && rc == 0)
        rc = failed(err, o->out_path);
    if (c->out && rc < 0) /* no answer: no file that could read as one */
        unlink(o->out_path);
out:;
    struct lt_err serr = {0};
    if (c->sim && lt_sim_stop_err(c->sim, &serr) < 0 && rc == 0)
        rc = lt_errset(err, serr.code ? serr.code : LT_EIO, "%s", serr.msg);
    lt_plan_jobs_close(&c->jobs);
    lt_replay_known_free(c->known);
    free(c);
    return rc;
}

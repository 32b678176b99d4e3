/*
 * The capacity search (see replay_search.h). plan/plan_search.h decides
 * which load to probe; this file runs each probe, live (lt_replay against
 * the target) or in virtual time (lt_sim_virtual_replay with the sim's
 * model), into a file of its own, reads its attainment with analyze, and
 * at the end writes one results file: every probe a run (renumbered, with
 * the search's fields: load, attainment and interval, verdict), the answer
 * in the header's meta. The probe files are then removed.
 *
 * Loads are in live units. Against the sim at --sim-time-scale S, the
 * model runs S times faster than it does in virtual time, so a virtual
 * probe of live load L runs the model at rate L / S (concurrency is
 * unchanged) against the SLO's limits times S: a virtual and a live search
 * of one profile then answer the same question.
 */
#include "cli/replay_search.h"

#include "analyze/analyze.h"
#include "base/lt_buf.h"
#include "base/lt_time.h"
#include "cli/cli_util.h"
#include "plan/plan_jobs.h"
#include "plan/plan_search.h"
#include "sim/sim_profile.h"
#include "sim/sim_virtual.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILES (2 * LT_SEARCH_MAX_PROBES)
/* Attainment is measured to +-0.02 (95 % Wilson) where the probe's length
 * is ours to choose (closed loop). */
#define PROBE_HALF_WIDTH 0.02

struct probe_file {
    char path[1024];
    bool virt;
    double wall_s; /* live: the probe's wall time */
    struct lt_search_probe p;
    char why[400]; /* stopped early for over-saturation: why; "" otherwise */
};

/* A live rate probe watched as it runs (the engine's progress callback):
 * stopped once over-saturated (plan_search.h, lt_search_watch). */
struct probe_watch {
    struct lt_replay *rp;
    struct lt_search_watch w;
    bool cut; /* stopped by the watch, not by the user */
};

struct search_ctx {
    const struct lt_replay_opts *o;
    const struct cli_search_opts *s;
    struct lt_plan_jobs jobs;
    uint64_t warmup, requests; /* per probe */
    double attain;             /* share that must meet the SLO, resolved */
    double vscale;             /* live load = virtual load x vscale; SLO x vscale in virtual */
    struct lt_sim_profile prof;
    struct lt_sim *sim;
    char url[64];
    const char *api_key;
    bool bearer_too;
    lt_mono t0;
    struct probe_file files[MAX_FILES];
    uint32_t n_files;
    double virtual_cpu_s, live_wall_s;
    uint32_t virtual_probes, live_probes;
    bool stopped;
    struct probe_watch pw;
    /* the model and prompt calibration the first live probe learned: the
     * later ones ask the target neither again */
    struct lt_replay_known *known;
    double cut_saved_s; /* planned time the probes stopped early did not spend */
};

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

struct probe_out {
    uint64_t n, good, faults;
    double goodput;
    bool growing; /* requests in flight grew without bound over the run */
};

/* cut: the probe was stopped for over-saturation, and the requests it
 * aborted (in flight, or never sent) are the load's doing, not faults. */
static int measure(const char *path, const struct cli_search_opts *s, double slo_scale, bool cut,
                   struct probe_out *po, struct lt_err *err)
{
    struct lt_analyze_opts ao;
    lt_analyze_opts_init(&ao);
    ao.slo_ttft_us = (int64_t)((double)s->slo_ttft_us * slo_scale);
    ao.slo_tpot_us = (int64_t)((double)s->slo_tpot_us * slo_scale);
    ao.slo_e2e_us = (int64_t)((double)s->slo_e2e_us * slo_scale);
    struct lt_analysis a = {0};
    memset(po, 0, sizeof *po);
    int rc = lt_analyze_file(path, &ao, &a, err);
    if (rc == 0 && a.n_runs < 1)
        rc = lt_errset(err, LT_EFORMAT, "%s: the probe recorded no run", path);
    if (rc == 0) {
        const struct lt_analyze_run *r = a.runs[0];
        /* Cancelled requests and faults are out of the count (analyze.h,
         * the rule the report of the file follows too). */
        struct lt_analyze_judged j;
        lt_analyze_probe_judged(r, cut, &j);
        po->faults = j.faults;
        po->n = j.judged;
        po->good = r->good_sched;
        po->goodput = r->goodput_sched;
        /* Over-saturation: the mean in flight over the last quarter of the
         * run is far above the first quarter's (a queue that only grows).
         * Judged after the probe, and, for a live rate probe, as it runs
         * (struct probe_watch), which also reads the server's queue. */
        uint32_t nb = r->ts.n, q = nb / 4;
        if (q >= 2) {
            double first = 0, last = 0;
            for (uint32_t k = 0; k < q; k++) {
                struct lt_analyze_ts_point p0, p1;
                lt_analyze_ts_point(r, k, &p0);
                lt_analyze_ts_point(r, nb - 1 - k, &p1);
                first += p0.in_flight / q;
                last += p1.in_flight / q;
            }
            po->growing = last > 4 * first + 4;
        }
    }
    lt_analysis_release(&a);
    return rc;
}

/* The options of a probe at load (in the engine's units). */
static void probe_opts(const struct search_ctx *c, double load, const char *path,
                       struct lt_replay_opts *o)
{
    *o = *c->o;
    o->out_path = path;
    o->warmup = c->warmup;
    o->progress = NULL;
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

static int run_virtual(struct search_ctx *c, double load, const char *path, struct lt_err *err)
{
    struct lt_replay_opts o;
    probe_opts(c, c->s->concurrency ? load : load / c->vscale, path, &o);
    struct lt_sim_vreplay vo = {
        .trace_path = o.trace_path,
        .out_path = path,
        .levels = o.levels,
        .n_levels = o.n_levels,
        .warmup = o.warmup,
        .default_out = o.default_out,
        .no_cancel = o.no_cancel,
        /* the model's values, as a live probe scrapes the sim's /metrics */
        .metrics_interval_us = o.server_metrics < 0    ? 0
                               : o.metrics_interval_us ? o.metrics_interval_us
                                                       : 250000,
    };
    lt_replay_plan_opts(&o, &vo.plan);
    struct lt_sim_vstats tot = {0};
    return lt_sim_virtual_replay(&c->prof, &c->jobs, &vo, &tot, err);
}

static void on_probe_progress(void *ud, const struct lt_replay_progress *p)
{
    struct probe_watch *pw = ud;
    if (pw->cut || !pw->rp)
        return;
    if (lt_search_watch_add(&pw->w, p->elapsed_s, (double)p->inflight, p->lag_s, p->waiting)) {
        pw->cut = true;
        lt_replay_stop(pw->rp);
    }
}

static int run_live(struct search_ctx *c, double load, const char *path, struct lt_err *err)
{
    struct lt_replay_opts o;
    probe_opts(c, load, path, &o);
    struct probe_watch *pw = &c->pw;
    pw->rp = NULL;
    pw->cut = false;
    if (!c->s->concurrency) {
        /* The trace's span at this rate: (n - 1) / rate, by its definition. */
        lt_search_watch_init(&pw->w, c->jobs.n > 1 ? (double)(c->jobs.n - 1) / load : 0);
        o.progress = on_probe_progress;
        o.progress_ud = pw;
    }
    if (c->sim) {
        o.target = c->url;
        o.target_label = "sim";
    }
    o.api_key = c->api_key;
    o.api_key_bearer_too = c->bearer_too;
    o.known = c->known;
    if (c->s->max_time_us > 0) {
        /* --max-time bounds the probe too: nothing is scheduled past it
         * (a cut probe measures what it sent). */
        int64_t left = c->s->max_time_us - lt_mono_diff_us(lt_mono_now(), c->t0);
        if (left < 1)
            left = 1;
        if (!o.duration_us || left < o.duration_us)
            o.duration_us = left;
        if (!o.tt.duration_us || left < o.tt.duration_us)
            o.tt.duration_us = left;
    }
    struct lt_replay *rp = lt_replay_new(&o, err);
    pw->rp = rp;
    int rc = rp ? lt_replay_prepare(rp, err) : err->code;
    if (rc == 0 && !c->known && !(c->known = lt_replay_known_new(rp)))
        rc = lt_errset(err, LT_ENOMEM, "out of memory");
    if (rc == 0)
        rc = cli_replay_run(rp, err);
    if (rp && lt_replay_stopped(rp) && !pw->cut)
        c->stopped = true;
    pw->rp = NULL;
    lt_replay_free(rp);
    return rc < 0 ? rc : 0;
}

/* One search with one engine. Returns 0 or a negative code. */
static int search(struct search_ctx *c, struct lt_search *ls, bool virt, struct lt_err *err)
{
    const struct cli_search_opts *s = c->s;
    double load;
    bool repeat;
    while (lt_search_next(ls, &load, &repeat)) {
        if (c->n_files == MAX_FILES) {
            lt_search_give_up(ls, LT_SEARCH_MAX_PROBES_HIT);
            break;
        }
        double t_probe0 = since_s(c->t0);
        if (!virt && s->max_time_us > 0 && c->live_probes > 0) {
            /* Would the next probe end past the limit? The mean so far says. */
            double mean = c->live_wall_s / c->live_probes;
            if (t_probe0 + mean > (double)s->max_time_us / 1e6) {
                lt_search_give_up(ls, LT_SEARCH_MAX_TIME_HIT);
                break;
            }
        }
        struct probe_file *f = &c->files[c->n_files];
        snprintf(f->path, sizeof f->path, "%s.probe%u.lt.zst", c->o->out_path, c->n_files);
        f->virt = virt;
        f->why[0] = '\0';
        c->pw.cut = false;
        double cpu0 = cpu_seconds();
        int rc = virt ? run_virtual(c, load, f->path, err) : run_live(c, load, f->path, err);
        c->n_files++;
        if (virt) {
            c->virtual_cpu_s += cpu_seconds() - cpu0;
            c->virtual_probes++;
        } else {
            f->wall_s = since_s(c->t0) - t_probe0;
            c->live_wall_s += f->wall_s;
            c->live_probes++;
        }
        if (rc < 0)
            return rc;
        if (c->stopped) {
            lt_search_give_up(ls, LT_SEARCH_STOPPED);
            c->n_files--; /* a probe cut short says nothing */
            unlink(f->path);
            break;
        }
        bool cut = !virt && c->pw.cut;
        if (cut) {
            snprintf(f->why, sizeof f->why, "%s", c->pw.w.why);
            if (c->pw.w.span_s > c->pw.w.t_last)
                c->cut_saved_s += c->pw.w.span_s - c->pw.w.t_last;
        }
        struct probe_out po;
        double slo_scale = virt ? c->vscale : 1;
        if (measure(f->path, s, slo_scale, cut, &po, err) < 0)
            return err->code;
        double attain = po.n ? (double)po.good / (double)po.n : 0;
        bool saturated = cut || (po.growing && attain < ls->o.attain);
        const struct lt_search_probe *p =
            lt_search_add(ls, po.n, po.good, po.faults, saturated, po.goodput);
        f->p = *p;
        if (!s->quiet)
            fprintf(stderr,
                    "loadtrace replay: %s probe %u: %s %g: %.3f of %llu requests met the SLO "
                    "[%.3f, %.3f] (%llu faults): %s%s\n",
                    virt ? "virtual" : "live", virt ? c->virtual_probes : c->live_probes,
                    s->concurrency ? "concurrency" : "rate", load, p->attain,
                    (unsigned long long)po.n, p->ci_lo, p->ci_hi, (unsigned long long)po.faults,
                    p->decided ? lt_search_verdict_name(p->verdict) : "unsure, again",
                    p->unsure ? " (unsure)" : "");
        if (cut && !s->quiet)
            fprintf(stderr,
                    "loadtrace replay: live probe %u stopped early, saturated: %s; about %.1f s "
                    "of the probe saved\n",
                    c->live_probes, f->why,
                    c->pw.w.span_s > c->pw.w.t_last ? c->pw.w.span_s - c->pw.w.t_last : 0);
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

static void fmt_load(char *buf, size_t n, double v)
{
    if (v > 0)
        snprintf(buf, n, "%.6g", v);
    else
        snprintf(buf, n, "none");
}

/* The one results file: every probe a run, the answer in the meta. */
static int write_results(struct search_ctx *c, const struct lt_search *ans, const char *const *mk,
                         const char *const *mv, size_t nm, struct lt_err *err)
{
    struct lt_buf meta;
    lt_buf_init(&meta, 1 << 16);
    lt_meta_pack(&meta, mk, mv, nm);
    struct lt_header h = {
        .kind = LT_KIND_RESULTS,
        .source = "replay",
        .block_tokens = c->jobs.block_tokens,
        .meta = (const uint8_t *)meta.p,
        .meta_len = meta.len,
    };
    int rc = 0;
    struct lt_writer *w = lt_writer_open(c->o->out_path, &h, NULL, err);
    lt_buf_release(&meta);
    if (!w)
        return err->code ? err->code : LT_EIO;
    (void)ans;
    for (uint32_t k = 0; k < c->n_files && rc == 0; k++) {
        const struct probe_file *f = &c->files[k];
        struct lt_reader *rd = lt_reader_open_kind(f->path, LT_KIND_RESULTS, NULL, err);
        if (!rd) {
            rc = err->code;
            break;
        }
        const struct lt_item *it;
        int n;
        while (rc == 0 && (n = lt_reader_next(rd, &it, err)) > 0) {
            if (it->type == LT_ITEM_RUN) {
                struct lt_run run = it->run;
                run.id = k;
                run.search = c->s->concurrency ? "concurrency" : "rate";
                run.engine = f->virt ? "virtual" : "live";
                run.load = f->p.load;
                run.slo = c->s->slo;
                run.attain_target = c->attain;
                run.attain = f->p.attain;
                run.attain_lo = f->p.ci_lo;
                run.attain_hi = f->p.ci_hi;
                run.verdict = f->p.decided || f->p.verdict == LT_SEARCH_FAULTED
                                  ? lt_search_verdict_name(f->p.verdict)
                                  : "repeat";
                run.why = f->why[0] ? f->why : NULL;
                rc = lt_writer_put_run(w, &run, err);
            } else if (it->type == LT_ITEM_RESULT) {
                struct lt_result res = it->res;
                res.run = k;
                rc = lt_writer_put_result(w, &res, err);
            } else if (it->type == LT_ITEM_SCRAPE) { /* the server's side of the probe */
                struct lt_scrape scr = it->scr;
                scr.run = k;
                rc = lt_writer_put_scrape(w, &scr, err);
            } else if (it->type == LT_ITEM_CHECK) { /* the probe's self-check */
                struct lt_check chk = it->chk;
                chk.run = k;
                rc = lt_writer_put_check(w, &chk, err);
            }
        }
        if (rc == 0 && n < 0)
            rc = n;
        lt_reader_free(rd);
    }
    if (lt_writer_close(w, rc == 0 ? err : &(struct lt_err){0}) < 0 && rc == 0)
        rc = err->code;
    return rc;
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

int cli_replay_search(const struct lt_replay_opts *o, const struct cli_search_opts *s)
{
    struct lt_err err = {0};
    struct search_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        cli_error("replay", "out of memory");
        return 1;
    }
    int status = 1;
    c->o = o;
    c->s = s;
    c->t0 = lt_mono_now();
    bool need_model = s->virtual_only || s->virtual_first;
    const char *pname = s->vprofile                 ? s->vprofile
                        : s->sim && s->sim->profile ? s->sim->profile
                                                    : "default";
    if (need_model && (lt_sim_profile_load(&c->prof, pname, &err) < 0 ||
                       lt_sim_profile_check(&c->prof, &err) < 0)) {
        cli_error("replay", "%s", err.msg);
        status = 2;
        goto out;
    }
    if (cli_dry_run()) {
        status = 0;
        goto out;
    }
    /* streamed: each virtual probe reads the trace as it goes */
    if (lt_plan_jobs_open(&c->jobs, o->trace_path, &err) < 0) {
        cli_error("replay", "%s", err.msg);
        goto out;
    }
    c->vscale = s->target_sim && s->sim->time_scale > 0 ? s->sim->time_scale : 1;
    double attain = s->attain > 0 ? s->attain : 0.9;
    c->attain = attain;
    struct lt_search_opts so = {
        .attain = attain,
        .precision = s->precision,
        .integer = s->concurrency,
        .max_probes = s->max_probes,
        .start = s->start,
    };
    if (s->concurrency) {
        uint64_t need = lt_search_requests_for(attain, PROBE_HALF_WIDTH);
        c->requests = o->requests ? o->requests : need;
        c->warmup = o->warmup ? o->warmup : c->requests / 20;
        c->requests += o->warmup ? 0 : c->warmup;
        if (!(so.start > 0))
            so.start = 1;
    } else {
        c->warmup = o->warmup ? o->warmup : c->jobs.n / 20;
        if (!(so.start > 0)) { /* the trace's own mean rate */
            int64_t span = c->jobs.n > 1 ? c->jobs.t_last - c->jobs.t_first : 0;
            so.start = span > 0 ? (double)(c->jobs.n - 1) * 1e6 / (double)span : 1;
        }
    }

    /* Virtual time first: seconds of CPU place the live probes. */
    struct lt_search vs, ls;
    lt_search_init(&vs, &so);
    vs.o.no_repeat = true; /* the model is deterministic: a repeat is the same run */
    if (need_model) {
        if (search(c, &vs, true, &err) < 0) {
            cli_error("replay", "virtual probe: %s", err.msg);
            status = cli_fail_status(&err);
            goto out;
        }
    }
    lt_search_init(&ls, &so);
    if (!s->virtual_only) {
        if (s->virtual_first && vs.end != LT_SEARCH_FAULTS)
            lt_search_seed(&ls, vs.lo, vs.hi, 0);
        if (s->target_sim) {
            c->sim = lt_sim_start(s->sim, &err);
            if (!c->sim) {
                cli_error("replay", "cannot start the sim: %s", err.msg);
                goto out;
            }
            snprintf(c->url, sizeof c->url, "http://127.0.0.1:%u", (unsigned)lt_sim_port(c->sim));
        }
        if (s->key_env && !getenv(s->key_env)) {
            cli_error("replay", "--api-key-env %s: that environment variable is not set",
                      s->key_env);
            goto out;
        }
        c->api_key = cli_api_key(s->key_env, o->api == LT_REPLAY_API_MESSAGES, &c->bearer_too);
        if (search(c, &ls, false, &err) < 0) {
            cli_error("replay", "live probe: %s", err.msg);
            status = cli_fail_status(&err);
            goto out;
        }
    }
    const struct lt_search *ans = s->virtual_only ? &vs : &ls;
    double wall = since_s(c->t0);

    /* The answer, first. */
    char lo[32], hi[32], gp[32], att[32], probes[32], wall_s[32], vprobes[32], vcpu[32];
    char saved_p[32] = "", saved_s[32] = "";
    fmt_load(lo, sizeof lo, ans->lo);
    fmt_load(hi, sizeof hi, ans->hi);
    snprintf(gp, sizeof gp, "%.6g", ans->lo_goodput);
    snprintf(att, sizeof att, "%g", attain);
    snprintf(probes, sizeof probes, "%u", s->virtual_only ? c->virtual_probes : c->live_probes);
    snprintf(wall_s, sizeof wall_s, "%.3f", wall);
    snprintf(vprobes, sizeof vprobes, "%u", c->virtual_probes);
    snprintf(vcpu, sizeof vcpu, "%.3f", c->virtual_cpu_s);
    const char *unit = s->concurrency ? "in flight" : "req/s";
    printf("capacity (%s, SLO %s for %s of requests, %s): %s %s meets it, %s %s fails it; "
           "goodput %s req/s at %s; %u %s probes, %.1f s\n",
           s->concurrency ? "concurrency" : "rate", s->slo, att,
           s->virtual_only ? "virtual time" : "live", lo, unit, hi, unit, gp, lo,
           s->virtual_only ? c->virtual_probes : c->live_probes,
           s->virtual_only ? "virtual" : "live", wall);
    if (ans->end != LT_SEARCH_FOUND)
        printf("capacity: %s\n", end_text(ans->end));
    uint32_t n_cut = 0;
    for (uint32_t k = 0; k < c->n_files; k++)
        n_cut += c->files[k].why[0] != '\0';
    if (n_cut)
        printf("saturated: %u live probe%s stopped early (requests in flight, the schedule lag "
               "or the server's queue grew without bound), about %.0f s of probing saved\n",
               n_cut, n_cut == 1 ? "" : "s", c->cut_saved_s);
    if (s->virtual_first && !s->virtual_only && ans->lo > 0) {
        /* A live-only search from the same start, had every probe agreed
         * with the answer found. */
        uint32_t decided = 0;
        double load_wall = 0; /* sum of wall x load over the live probes */
        for (uint32_t k = 0; k < ans->n && k < c->n_files; k++)
            decided += ans->p[k].decided;
        for (uint32_t k = 0; k < c->n_files; k++)
            if (!c->files[k].virt)
                load_wall += c->files[k].wall_s * c->files[k].p.load;
        double mean = c->live_probes ? c->live_wall_s / c->live_probes : 0;
        double cold_wall;
        uint32_t cold =
            cold_probes(&so, ans->lo, !s->concurrency,
                        c->live_probes ? load_wall / c->live_probes : 0, mean, &cold_wall);
        /* A live-only search repeats unsure probes as often as this one
         * did: scale its decisions by the runs each took here. */
        double runs_per = decided ? (double)c->live_probes / decided : 1;
        double saved = ((double)cold - (double)decided) * runs_per;
        double saved_wall = cold_wall * runs_per - c->live_wall_s - c->virtual_cpu_s;
        snprintf(saved_p, sizeof saved_p, "%.1f", saved);
        snprintf(saved_s, sizeof saved_s, "%.3f", saved_wall);
        printf("virtual first: %u virtual probes in %.2f s of CPU placed the live probes; a "
               "live-only search from the same start would have needed about %.0f live probes "
               "and %.0f s: %.0f probes and about %.0f s of wall time saved (an estimate; "
               "bench/README.md measures both)\n",
               c->virtual_probes, c->virtual_cpu_s, cold * runs_per, cold_wall * runs_per, saved,
               saved_wall);
    }
    fflush(stdout);
    const char *mk[] = {
        "trace",           "target",          "capacity_axis",     "capacity_slo",
        "capacity_attain", "capacity_max",    "capacity_fail",     "capacity_goodput",
        "capacity_end",    "capacity_probes", "capacity_wall_s",   "capacity_engine",
        "virtual_probes",  "virtual_cpu_s",   "live_probes_saved", "wall_s_saved"};
    const char *mv[] = {o->trace_path,
                        s->target_sim ? "sim" : o->target,
                        s->concurrency ? "concurrency" : "rate",
                        s->slo,
                        att,
                        lo,
                        hi,
                        gp,
                        lt_search_end_name(ans->end),
                        probes,
                        wall_s,
                        s->virtual_only ? "virtual" : "live",
                        vprobes,
                        vcpu,
                        saved_p,
                        saved_s};
    size_t nm = sizeof mk / sizeof mk[0] - (saved_p[0] ? 0 : 2);
    if (write_results(c, ans, mk, mv, nm, &err) < 0) {
        cli_error("replay", "%s: %s", o->out_path, err.msg);
        goto out;
    }
    if (!s->quiet)
        fprintf(stderr, "loadtrace replay: %u probes -> %s\n", c->n_files, o->out_path);
    /* Stopped: 128 + the signal, as a replay (cli_replay_status). */
    status = c->stopped ? cli_replay_status(true, 0, 0) : ans->end == LT_SEARCH_FAULTS ? 1 : 0;
out:
    for (uint32_t k = 0; k < c->n_files; k++)
        unlink(c->files[k].path);
    if (c->sim && lt_sim_stop_err(c->sim, &err) < 0) {
        cli_error("replay", "%s", err.msg);
        status = 1;
    }
    lt_plan_jobs_release(&c->jobs);
    lt_replay_known_free(c->known);
    free(c);
    return status;
}

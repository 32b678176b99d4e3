/*
 * The capacity search on the command line (see replay_search.h): the
 * library (experiments/capacity.h) searches; this file catches the
 * signals that stop it, draws its progress (the dashboard, or a line on a
 * terminal), says each probe, and prints the answer.
 */
#include "cli/replay_search.h"

#include "base/lt_dur.h"
#include "cli/cli_util.h"
#include "cli/ui_dash.h"
#include "experiments/capacity.h"
#include "replay/replay_live.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct search_ui {
    const struct cli_search_opts *s;
    bool draw;  /* the progress line on stderr */
    bool drawn; /* ... and it is there now */
    struct lt_replay_live *live;
    struct cli_dash *dash; /* the live probes' screen; their lines become its history */
};

static void fmt_load(char *buf, size_t n, double v)
{
    if (v > 0)
        snprintf(buf, n, "%.6g", v);
    else
        snprintf(buf, n, "none");
}

static const char *axis(const struct cli_search_opts *s)
{
    return s->cap.concurrency ? "concurrency" : "rate";
}

static void on_live_begin(struct search_ui *u, struct lt_replay_live **live_out)
{
    struct lt_err err = {0};
    if (u->s->ui != CLI_UI_DASHBOARD || u->s->quiet)
        return;
    if (!(u->live = lt_replay_live_new(&err)) ||
        !(u->dash = cli_dash_start(u->live, "replay --find-max", &err))) {
        cli_error("replay", "no dashboard (%s): the progress line instead", err.msg);
        return;
    }
    u->draw = false;
    *live_out = u->live;
}

static void on_progress(struct search_ui *u, const struct lt_capacity_event *ev)
{
    const struct lt_replay_progress *p = ev->progress;
    if (!u->draw)
        return;
    char left[32] = "";
    if (ev->planned_s > p->elapsed_s)
        snprintf(left, sizeof left, ", about %.0f s left", ev->planned_s - p->elapsed_s);
    fprintf(stderr, "\r[live probe %u] %llu/%llu done, %llu in flight, %llu errors, %.0f s%s\033[K",
            ev->probe, (unsigned long long)p->done, (unsigned long long)p->total,
            (unsigned long long)p->inflight, (unsigned long long)p->errors, p->elapsed_s, left);
    u->drawn = true;
}

static void on_probe_start(const struct search_ui *u, const struct lt_capacity_event *ev)
{
    char d[32] = "";
    if (u->dash)
        return;
    if (!u->s->cap.concurrency)
        lt_dur_say(d, sizeof d, ev->planned_s);
    fprintf(stderr, "loadtrace replay: live probe %u: %s %g, %llu requests%s%s\n", ev->probe,
            axis(u->s), ev->load, (unsigned long long)ev->requests, d[0] ? " over about " : "", d);
}

static void on_probe(const struct search_ui *u, const struct lt_capacity_event *ev)
{
    const struct lt_search_probe *p = ev->p;
    const char *verdict = p->decided ? lt_search_verdict_name(p->verdict) : "unsure, again";
    if (u->dash) { /* the dashboard's history of the probes */
        char line[200], lo[32], hi[32];
        snprintf(line, sizeof line, "probe %u: %s %g: %.3f of %llu met the SLO: %s%s", ev->probe,
                 axis(u->s), ev->load, p->attain, (unsigned long long)ev->judged, verdict,
                 p->unsure ? " (unsure)" : "");
        cli_dash_note(u->dash, line);
        fmt_load(lo, sizeof lo, ev->search->lo);
        fmt_load(hi, sizeof hi, ev->search->hi);
        snprintf(line, sizeof line, "bracket: %s meets the SLO, %s fails it (%u live probes)", lo,
                 hi, ev->live_probes);
        cli_dash_status(u->dash, line);
        return;
    }
    fprintf(stderr,
            "loadtrace replay: %s probe %u: %s %g: %.3f of %llu requests met the SLO "
            "[%.3f, %.3f] (%llu faults): %s%s\n",
            ev->virt ? "virtual" : "live", ev->probe, axis(u->s), ev->load, p->attain,
            (unsigned long long)ev->judged, p->ci_lo, p->ci_hi, (unsigned long long)ev->faults,
            verdict, p->unsure ? " (unsure)" : "");
}

static void on_cut(const struct search_ui *u, const struct lt_capacity_event *ev)
{
    if (u->dash) {
        char b[200];
        snprintf(b, sizeof b, "probe %u stopped early, saturated: %.150s", ev->probe, ev->why);
        cli_dash_note(u->dash, b);
        return;
    }
    fprintf(stderr,
            "loadtrace replay: live probe %u stopped early, saturated: %s; about %.1f s of the "
            "probe saved\n",
            ev->probe, ev->why, ev->saved_s);
}

static void on_event(void *ud, const struct lt_capacity_event *ev)
{
    struct search_ui *u = ud;
    if (ev->kind == LT_CAPACITY_LIVE_BEGIN)
        on_live_begin(u, ev->live_out);
    else if (ev->kind == LT_CAPACITY_LIVE_END) {
        cli_dash_stop(u->dash, stderr); /* the probes' history stays on the screen */
        u->dash = NULL;
    } else if (ev->kind == LT_CAPACITY_PROGRESS)
        on_progress(u, ev);
    else if (ev->kind == LT_CAPACITY_PROBE_RAN && u->drawn) {
        fputs("\n", stderr);
        u->drawn = false;
    } else if (u->s->quiet)
        return;
    else if (ev->kind == LT_CAPACITY_NOTE)
        fprintf(stderr, "loadtrace replay: %s\n", ev->text);
    else if (ev->kind == LT_CAPACITY_PROBE_START)
        on_probe_start(u, ev);
    else if (ev->kind == LT_CAPACITY_PROBE)
        on_probe(u, ev);
    else if (ev->kind == LT_CAPACITY_PROBE_CUT)
        on_cut(u, ev);
}

static int stop_hook(void *ud)
{
    (void)ud;
    return cli_stop_signal();
}

static int run_hook(void *ud, struct lt_engine *e, const struct lt_engine_sink *sink,
                    struct lt_err *err)
{
    (void)ud;
    return cli_engine_run(e, sink, err);
}

/* One answer line: "capacity (rate, SLO ... for 0.9 of requests, live): ...". */
static void print_bracket(const struct cli_search_opts *s, const char *where,
                          const struct lt_search *a, double goodput, const char *tail)
{
    char lo[32], hi[32];
    const char *unit = s->cap.concurrency ? "in flight" : "req/s";
    fmt_load(lo, sizeof lo, a->lo);
    fmt_load(hi, sizeof hi, a->hi);
    printf("capacity (%s, SLO %s for %g of requests, %s): %s %s meets it, %s %s fails it", axis(s),
           s->cap.slo, s->cap.attain > 0 ? s->cap.attain : 0.9, where, lo, unit, hi, unit);
    if (goodput >= 0)
        printf("; goodput %.3g req/s at %s", goodput, lo);
    printf("; %s\n", tail);
}

/* What the live probes found of the model's answer (virtual first). */
static void print_confirmed(const struct cli_search_opts *s, const struct lt_capacity_result *r)
{
    const struct lt_search *l = &r->live;
    const char *unit = s->cap.concurrency ? "" : " req/s";
    if (l->model == LT_SEARCH_MODEL_HELD)
        printf("virtual first: the live probes confirmed the model's answer (%g%s) to a step "
               "of the precision: %u live probes\n",
               l->model_lo, unit, r->live_probes);
    else if (l->model == LT_SEARCH_MODEL_OFF)
        printf("virtual first: the model's answer (%g%s) was off by more than a step (live: "
               "%g%s, %+.0f %%); the live search stepped on from it, each step twice the one "
               "before, and bisected: %u live probes\n",
               l->model_lo, unit, l->lo, unit, 100 * (l->lo / l->model_lo - 1), r->live_probes);
}

/* The answer, first, then what else the search knows. */
static void print_answer(const struct cli_search_opts *s, const struct lt_capacity_result *r)
{
    char tail[160];
    uint32_t n = s->cap.virtual_only ? r->virtual_probes : r->live_probes;
    snprintf(tail, sizeof tail, "%u %s probes, %.1f s", n, s->cap.virtual_only ? "virtual" : "live",
             r->wall_s);
    print_bracket(s, s->cap.virtual_only ? "virtual time" : "live", r->ans, r->goodput, tail);
    if (s->cap.virtual_first && !s->cap.virtual_only && r->virtual_probes) {
        snprintf(tail, sizeof tail, "%u virtual probes", r->virtual_probes);
        print_bracket(s, r->vwindow ? "virtual time, the live probes' window" : "virtual time",
                      &r->virt, r->v_goodput, tail);
    }
    if (r->whole_probes) {
        snprintf(tail, sizeof tail,
                 "%u virtual probes (chose the window; in the file, left out of its answer)",
                 r->whole_probes);
        print_bracket(s, "virtual time, the whole trace", &r->whole, -1, tail);
    }
    if (r->ans->end != LT_SEARCH_FOUND || r->stopped) {
        char why[600];
        lt_capacity_say_end(r, why, sizeof why);
        printf("capacity: %s\n", why);
    }
    if (r->n_cut)
        printf("saturated: %u live probe%s stopped early (requests in flight, the schedule lag "
               "or the server's queue grew without bound), about %.0f s of probing saved\n",
               r->n_cut, r->n_cut == 1 ? "" : "s", r->cut_saved_s);
    if (r->savings)
        printf("virtual first: %u virtual probes in %.2f s of CPU placed the live probes; a "
               "live-only search from the same start would have needed about %.0f live probes "
               "and %.0f s: %.0f %s live probes and about %.0f s %s wall time (an estimate; "
               "bench/README.md measures both)\n",
               r->virtual_probes, r->virtual_cpu_s, r->cold_probes, r->cold_wall_s,
               fabs(r->saved_probes), r->saved_probes < -0.5 ? "more" : "fewer",
               fabs(r->saved_wall_s), r->saved_wall_s < -0.5 ? "more" : "less");
    if (r->savings)
        print_confirmed(s, r);
    fflush(stdout);
}

static void capacity_opts(const struct lt_replay_opts *o, const struct cli_search_opts *s,
                          struct search_ui *u, struct lt_capacity_opts *c)
{
    *c = s->cap;
    c->dry_run = cli_dry_run();
    c->event = on_event;
    c->stop = stop_hook;
    c->run = run_hook;
    c->ud = u;
    c->api_key = cli_api_key(s->key_env, o->api == LT_REPLAY_API_MESSAGES, &c->api_key_bearer_too);
}

int cli_replay_search(const struct lt_replay_opts *o, const struct cli_search_opts *s)
{
    if (s->key_env && !s->cap.virtual_only && !cli_dry_run() && !getenv(s->key_env)) {
        cli_error("replay", "--api-key-env %s: that environment variable is not set", s->key_env);
        return 1;
    }
    struct search_ui u = {.s = s,
                          .draw = !s->quiet && s->ui != CLI_UI_NONE && cli_progress_wanted()};
    struct lt_capacity_opts co;
    capacity_opts(o, s, &u, &co);
    struct lt_capacity_result *r = malloc(sizeof *r);
    if (!r) {
        cli_error("replay", "out of memory");
        return 1;
    }
    struct lt_err err = {0};
    cli_stop_catch(true); /* a signal between probes: stop, say what is known */
    int rc = lt_capacity_search(o, &co, r, &err);
    cli_stop_catch(false);
    cli_dash_stop(u.dash, stderr);
    lt_replay_live_free(u.live);
    int status;
    if (rc < 0 && r->answered) /* the answer, though its file failed */
        print_answer(s, r);
    if (rc < 0) {
        cli_error("replay", "%s", err.msg);
        status = cli_fail_status(&err);
    } else if (co.dry_run) {
        status = 0;
    } else {
        print_answer(s, r);
        if (!s->quiet)
            fprintf(stderr, "loadtrace replay: %u probes -> %s\n", r->in_file, o->out_path);
        /* Stopped: 128 + the signal, as a replay (cli_replay_status). */
        status = r->stopped ? cli_replay_status(true, 0, 0) : r->ans->end == LT_SEARCH_FAULTS;
        if (r->stopped && !cli_stop_signal())
            status = 130;
    }
    free(r);
    return status;
}

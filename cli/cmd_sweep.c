/*
 * loadtrace sweep PLAN -o DIR: the same traffic against every candidate
 * config of a plan, and a report naming the best (docs/sweep.md). This
 * file reads the options and prints; experiments/ does the work.
 */
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/sweep_live.h"
#include "cli/ui_dash.h"
#include "experiments/sweep.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop_sig;

static void on_signal(int sig)
{
    stop_sig = sig;
}

struct events {
    bool quiet;
    struct cli_sweep_live *live; /* the dashboard's: the lines go there */
};

static void on_event(void *ud, const char *config, const char *what)
{
    struct events *ev = ud;
    if (ev->live)
        cli_sweep_live_event(ev->live, config, what);
    else if (!ev->quiet)
        fprintf(stderr, "sweep: %s: %s\n", config, what);
}

/* The loadtrace program each load runs: this one. */
static int self_exe(char *buf, size_t cap)
{
    ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    return 0;
}

struct sweep_cli {
    const char *plan_path, *dir;
    bool redo, report_only, quiet;
    enum cli_ui ui;
};

/* Its options, written once (cli/cli_opts.h): the usage, getopt's table
 * and the completions are made from them. A new option is a row here and
 * a case in sweep_opt. */
static const struct cli_opt sweep_opts_table[] = {
    {"output", 'o', "DIR", 'o',
     "the sweep's folder: server logs, results files,\n"
     "sweep.json, the report; running again into it skips the\n"
     "configs whose results are complete"},
    {"redo", 0, NULL, 'r', "run every config again, complete or not"},
    {"report-only", 0, NULL, 'R', "write the report from DIR's results, running nothing"},
    {"ui", 0, "auto|dashboard|line|none", 'U',
     "while it runs: a full-screen dashboard of\n"
     "the configs done and to come and the current load, or the\n"
     "progress lines (default auto: the dashboard when standard\n"
     "error is a terminal; docs/dashboard.md)"},
    {"quiet", 'q', NULL, 'q', "no progress lines on stderr"},
    {0}};

const struct cli_spec cmd_sweep_spec = {
    .cmd = "sweep",
    .synopsis = "usage: loadtrace sweep PLAN.yaml -o DIR [--redo] [--report-only] [-q]\n"
                "\n"
                "Replay the plan's trace under its load against every config of the plan (a\n"
                "server command over a parameter grid, a server already running, or a sim\n"
                "profile answered in virtual time), one at a time: start the server on a free\n"
                "loopback port, wait until it is ready, warm it up, run the load, stop it.\n"
                "Then write DIR/report.txt, report.json and report.html: each config's\n"
                "capacity or figures, a Pareto chart, the best config with its evidence, and\n"
                "A/B verdicts against the baseline (docs/sweep.md).\n"
                "\n",
    .opts = sweep_opts_table,
    .col = 18,
    .epilogue = "Ctrl-C stops the current load and server cleanly; run the same command\n"
                "again to resume. Exit status: 0 every config complete, 1 some failed or\n"
                "ended early, 2 a usage or plan error, 130 stopped by Ctrl-C (143 SIGTERM).\n",
};

static int sweep_opt(void *ud, int id, char *arg)
{
    struct sweep_cli *o = ud;
    switch (id) {
    case 'o':
        o->dir = arg;
        break;
    case 'r':
        o->redo = true;
        break;
    case 'R':
        o->report_only = true;
        break;
    case 'U':
        if (!cli_ui_parse(arg, &o->ui)) {
            cli_error("sweep", "--ui %s: expected auto, dashboard, line or none", arg);
            return 2;
        }
        break;
    case 'q':
        o->quiet = true;
        break;
    }
    return 0;
}

/* Options into o: -1 to go on, else the exit status. */
static int parse_args(struct sweep_cli *o, int argc, char **argv)
{
    int prc = cli_opts_parse(&cmd_sweep_spec, argc, argv, sweep_opt, o);
    if (prc >= 0)
        return prc;
    if (optind + 1 != argc || !o->dir) {
        cli_error("sweep", "wants one PLAN and -o DIR");
        cli_opts_usage(&cmd_sweep_spec, stderr);
        return 2;
    }
    if (o->redo && o->report_only) {
        cli_error("sweep", "--redo runs the configs and --report-only runs none: choose one");
        return 2;
    }
    o->plan_path = argv[optind];
    char why[128];
    if (o->ui == CLI_UI_DASHBOARD && !o->report_only &&
        !cli_ui_dashboard_possible(why, sizeof why)) {
        cli_error("sweep", "--ui dashboard: %s (use --ui line or none)", why);
        return 2;
    }
    o->ui = o->quiet || o->report_only ? CLI_UI_NONE : cli_ui_resolve(o->ui);
    return -1;
}

/* The plan, its SLO parsed: -1 to go on, else the exit status. */
static int load_plan(struct lt_sweep_plan *plan, const char *path)
{
    struct lt_err err = {0};
    if (lt_sweep_plan_load(plan, path, &err) < 0) {
        cli_error("sweep", "%s", err.msg);
        return err.code == LT_EIO ? 1 : 2;
    }
    double pct = 0; /* the percentile form is replay's to judge; goodput counts each request */
    if (plan->slo[0] && !cli_parse_slo("sweep", plan->slo, &plan->slo_us[0], &plan->slo_us[1],
                                       &plan->slo_us[2], &pct)) {
        cli_error("sweep", "%s: slo '%s' is not analyze's --slo (e.g. ttft=1s,tpot=50ms)", path,
                  plan->slo);
        return 2;
    }
    return -1;
}

/* The dashboard over the sweep, when asked for: it reads each load's
 * figures from its replay's own live page, on a free loopback port the
 * replay names in its log. A dashboard that cannot start is said, and the
 * lines are printed instead. */
static struct cli_dash *start_dash(const struct lt_sweep_plan *plan, const char *plan_path,
                                   struct events *ev, struct lt_sweep_opts *so)
{
    static const char *const watch[] = {"--live-metrics", "127.0.0.1:0"};
    struct lt_err err = {0};
    struct cli_dash *dash = NULL;
    if (!(ev->live = cli_sweep_live_new(plan, plan_path, &err)) ||
        !(dash = cli_dash_start_fn("sweep", cli_sweep_live_render, ev->live,
                                   " q or Ctrl-C stops the sweep (as SIGINT: the current "
                                   "load and server stop cleanly; rerun to resume)",
                                   &err))) {
        cli_error("sweep", "no dashboard (%s): the lines instead", err.msg);
        cli_sweep_live_free(ev->live);
        ev->live = NULL;
        return NULL;
    }
    so->on_progress = cli_sweep_live_progress;
    so->progress_ud = ev->live;
    so->load_extra = watch;
    so->n_load_extra = 2;
    return dash;
}

/* Every config, Ctrl-C stopping it cleanly: the exit status so far. */
static int run_all(const struct sweep_cli *o, const struct lt_sweep_plan *plan)
{
    char exe[4096];
    if (self_exe(exe, sizeof exe) < 0) {
        cli_error("sweep", "cannot find the loadtrace program (/proc/self/exe)");
        return 1;
    }
    struct lt_sweep_outcome *out = calloc(plan->n_configs, sizeof *out);
    if (!out) {
        cli_error("sweep", "out of memory");
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    signal(SIGPIPE, SIG_IGN);
    struct events ev = {.quiet = o->quiet};
    struct lt_sweep_opts so = {.dir = o->dir,
                               .exe = exe,
                               .redo = o->redo,
                               .stop = &stop_sig,
                               .on_event = on_event,
                               .ud = &ev};
    struct lt_err err = {0};
    struct cli_dash *dash =
        o->ui == CLI_UI_DASHBOARD ? start_dash(plan, o->plan_path, &ev, &so) : NULL;
    int rc = lt_sweep_run(plan, &so, out, &err), status = 0;
    cli_dash_stop(dash, stderr); /* its last frame stays on the normal screen */
    cli_sweep_live_free(ev.live);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (rc < 0) {
        cli_error("sweep", "%s", err.msg);
        status = cli_fail_status(&err);
    }
    for (size_t i = 0; rc >= 0 && i < plan->n_configs; i++)
        if (out[i].status != LT_SWEEP_COMPLETE && out[i].status != LT_SWEEP_SKIPPED)
            status = 1;
    if (rc == 1) {
        fprintf(stderr,
                "sweep: stopped by signal %d; the configs done are kept in %s. Resume with:\n"
                "    loadtrace sweep %s -o %s\n",
                (int)stop_sig, o->dir, o->plan_path, o->dir);
        status = 128 + (int)stop_sig;
    }
    free(out);
    return status;
}

int cmd_sweep(int argc, char **argv)
{
    struct sweep_cli o = {0};
    int status = parse_args(&o, argc, argv);
    if (status >= 0)
        return status;
    if (cli_dry_run())
        return 0; /* options only, as every command: the plan is the work's input */
    struct lt_sweep_plan plan;
    if ((status = load_plan(&plan, o.plan_path)) >= 0) {
        lt_sweep_plan_release(&plan);
        return status;
    }
    char state[4200];
    snprintf(state, sizeof state, "%s/sweep.json", o.dir);
    status = 0;
    if (o.report_only && access(state, R_OK) != 0) {
        cli_error("sweep", "%s has no sweep.json: nothing to report (run without --report-only)",
                  o.dir);
        lt_sweep_plan_release(&plan);
        return 1;
    }
    if (!o.report_only && (status = run_all(&o, &plan)) != 0 && status != 1 && status < 128) {
        lt_sweep_plan_release(&plan); /* the sweep could not run: no report to write */
        return status;
    }
    char notes[16][512];
    int n_notes = 0;
    struct lt_err err = {0};
    if (lt_sweep_report(&plan, o.dir, stdout, notes, 16, &n_notes, &err) < 0) {
        cli_error("sweep", "report: %s", err.msg);
        status = status ? status : 1;
    } else if (!o.quiet)
        fprintf(stderr, "sweep: wrote %s/report.txt, report.json, report.html\n", o.dir);
    for (int i = 0; i < n_notes; i++)
        fprintf(stderr, "sweep: note: %s\n", notes[i]);
    lt_sweep_plan_release(&plan);
    return status;
}

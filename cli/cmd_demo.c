/*
 * loadtrace demo: what loadtrace is for, in under a minute, with no server
 * of the user's: the built-in sim (default profile: the published
 * Qwen3.5-397B / 8-GPU figures) on a free loopback port, a concurrency
 * sweep 1, 4, 16, 32 (one wave of C requests a level) with the seed table
 * beside the published one, a slice of the bundled Azure conversation
 * trace replayed at a scaled rate with its latency summary, and charts
 * (PNG, SVG, data, gnuplot scripts) and HTML reports. Every figure printed
 * is measured in this run. The runs are experiments/demo.c; this file
 * finds the bundled traces, says each step and prints what they found.
 */
#include "analyze/analyze.h"
#include "analyze/analyze_plot.h"
#include "base/lt_time.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "experiments/demo.h"
#include "sim/sim.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef LT_SAMPLES_DIR
#define LT_SAMPLES_DIR "traces/samples"
#endif

/* Its options, written once (cli/cli_opts.h): the usage, getopt's table
 * and the completions are made from them. A new option is a row here and
 * a case in demo_opt. */
static const struct cli_opt demo_opts_table[] = {
    {"out", 0, "DIR", 'o', "where results, charts and reports go (loadtrace-demo)"},
    {"tokens", 0, "N", 't',
     "output tokens per sweep request (500; the published\n"
     "benchmark used 1000, which takes about a minute more)"},
    {"slice", 0, "S", 'S', "seconds of the Azure trace to replay (12)"},
    {"samples", 0, "DIR", 's',
     "the bundled traces (found next to the program, or\n"
     "traces/samples of the source tree)"},
    {0}};

const struct cli_spec cmd_demo_spec = {
    .cmd = "demo",
    .synopsis = "usage: loadtrace demo [--out DIR] [--tokens N] [--slice S] [--samples DIR]\n"
                "\n"
                "Show what loadtrace does, with no server of yours, in about a minute:\n"
                "start the built-in sim (default profile, calibrated to a published\n"
                "Qwen3.5-397B benchmark on 8 GPUs), run a concurrency sweep 1, 4, 16, 32\n"
                "and print the table C | Agg tok/s | Per-req tok/s | Tokens | Wall(s) | Ok\n"
                "beside the published figures, replay a slice of the bundled Azure LLM\n"
                "inference trace at a scaled rate and print its latency summary, and write\n"
                "charts and HTML reports. Every figure is measured in this run.\n"
                "\n",
    .opts = demo_opts_table,
    .col = 17,
};

static volatile sig_atomic_t stop_requested; /* the signal that stopped the demo */
static struct lt_demo g_demo;                /* the one demo a process runs */

static void on_signal(int sig)
{
    stop_requested = sig;
    lt_demo_interrupt(&g_demo);
}

static void step(int n, const char *what)
{
    fprintf(stderr, "loadtrace demo: [%d/4] %s\n", n, what);
}

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The bundled samples: --samples; else beside the program as installed
 * (BIN/../share/loadtrace/samples, so a relocated or staged install works);
 * else the source tree this binary was built from. */
static const char *find_samples(const char *given)
{
    static char found[4160];
    if (given)
        return given;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    const char *candidates[3] = {NULL, LT_SAMPLES_DIR, "traces/samples"};
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(found, sizeof found, "%s/../share/loadtrace/samples", exe);
            candidates[0] = found;
        }
    }
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        char p[4200];
        if (!candidates[i])
            continue;
        snprintf(p, sizeof p, "%s/AzureLLMInferenceTrace_conv.csv", candidates[i]);
        if (file_exists(p))
            return candidates[i];
    }
    return NULL;
}

/* A step's error, unless the step ended because the demo was stopped. */
static int failed(const struct lt_err *err)
{
    if (!stop_requested)
        cli_error("demo", "%s", err->msg);
    return -1;
}

/* Charts and the HTML report of an analysis; print every file written. */
static int write_report(const struct lt_analyze *a, const char *dir, const char *html)
{
    struct lt_err err = {0};
    struct lt_plot_report rep = {0};
    int rc = lt_analyze_plots(a, dir, html, &rep, &err);
    if (rc < 0)
        cli_error("demo", "charts: %s", err.msg);
    if (!rep.gnuplot_found)
        cli_error("demo", "gnuplot not found: data and scripts written, charts not rendered "
                          "(apt-get install gnuplot-nox)");
    for (uint32_t i = 0; i < rep.n_notes; i++)
        cli_error("demo", "note: %s", rep.notes[i]);
    lt_plot_report_release(&rep);
    /* One line per chart: its PNG, with the SVG, data and script beside it
     * (or the script alone when gnuplot could not render). */
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            size_t n = strlen(e->d_name);
            if (n > 3 && !strcmp(e->d_name + n - 3, ".gp")) {
                char base[1024];
                snprintf(base, sizeof base, "%s/%.*s", dir, (int)(n - 3), e->d_name);
                char png[1100];
                snprintf(png, sizeof png, "%s.png", base);
                if (file_exists(png))
                    printf("  %s.png  (and .svg .dat .gp)\n", base);
                else
                    printf("  %s.gp  (and .dat)\n", base);
            }
        }
        closedir(d);
    }
    if (html && file_exists(html))
        printf("  %s\n", html);
    return rc;
}

/* 2. The sweep, and its table beside the published one. */
static int demo_sweep(struct lt_demo *d)
{
    struct lt_err err = {0};
    step(2, "concurrency sweep 1, 4, 16, 32 (closed loop, 100-token prompts)");
    for (size_t i = 0; i < LT_DEMO_LEVELS; i++) {
        fprintf(stderr, "loadtrace demo:       C=%u: %u requests of %u tokens\n",
                (unsigned)lt_demo_levels[i], (unsigned)lt_demo_levels[i], (unsigned)d->o.tokens);
        if (lt_demo_sweep_level(d, i, &err) < 0)
            return failed(&err);
    }
    if (lt_demo_sweep_analyze(d, &err) < 0)
        return failed(&err);
    printf("\nConcurrency sweep against the sim (measured in this run; per-request tok/s is\n"
           "the decode speed, mean of (out-1)/(E2E-TTFT); outputs of %u tokens):\n\n",
           (unsigned)d->o.tokens);
    if (lt_analyze_write_text(&d->sweep, stdout, &err) < 0)
        return failed(&err);
    printf("\nPublished (Qwen3.5-397B, 8x RTX PRO 6000, 1000-token outputs):\n"
           "   C | Agg tok/s | Per-req tok/s\n");
    for (size_t i = 0; i < LT_DEMO_LEVELS; i++)
        printf("%4u | %9.0f | %13.0f\n", (unsigned)lt_demo_levels[i], lt_demo_published_agg[i],
               lt_demo_published_req[i]);
    if (d->o.tokens < 1000)
        printf("(With %u-token outputs each wave's prefill weighs more, so the aggregate is\n"
               "lower than with the published 1000; `loadtrace demo --tokens 1000` shows that.)\n",
               (unsigned)d->o.tokens);
    for (size_t i = 0; i < LT_DEMO_LEVELS; i++)
        if (d->ok[i] != (int)lt_demo_levels[i])
            cli_error("demo", "C=%u: only %d of %u requests were ok", (unsigned)lt_demo_levels[i],
                      d->ok[i], (unsigned)lt_demo_levels[i]);
    return 0;
}

/* 3. A slice of real production traffic, and its summary. */
static int demo_azure(struct lt_demo *d)
{
    struct lt_err err = {0};
    step(3, "replaying a slice of the Azure LLM inference trace (conversation, 2023)");
    if (lt_demo_azure_import(d, &err) < 0)
        return failed(&err);
    const struct lt_import_stats *ist = &d->azure_import;
    fprintf(stderr,
            "loadtrace demo:       imported %llu requests (%.0f s of traffic) from %s to %s;\n"
            "loadtrace demo:       replaying its first %.0f s at %.1f req/s (burst structure "
            "kept)\n",
            (unsigned long long)ist->records, (double)(ist->last_t - ist->first_t) / 1e6,
            d->azure_csv, d->azure_trace, (double)d->o.azure_window_us / 1e6, d->o.azure_rate);
    if (lt_demo_azure_replay(d, &err) < 0)
        return failed(&err);
    printf("\nAzure conversation trace, first %.0f s replayed at %.1f req/s against the sim:\n\n",
           (double)d->o.azure_window_us / 1e6, d->o.azure_rate);
    if (lt_analyze_write_text(&d->azure, stdout, &err) < 0)
        return failed(&err);
    return 0;
}

/* 4. Charts and reports, and the list of what was written. */
static int demo_reports(const struct lt_demo *d)
{
    char path[4096], html[4096];
    step(4, "writing charts and HTML reports");
    printf("\nFiles written:\n");
    snprintf(path, sizeof path, "%s/sweep", d->o.out);
    snprintf(html, sizeof html, "%s/sweep.html", d->o.out);
    int prc = write_report(&d->sweep, path, html);
    snprintf(path, sizeof path, "%s/azure", d->o.out);
    snprintf(html, sizeof html, "%s/azure.html", d->o.out);
    if (write_report(&d->azure, path, html) < 0 || prc < 0)
        return -1;
    printf("  %s (and the traces and results behind them)\n", d->o.out);
    return 0;
}

static int demo_run(const struct lt_demo_opts *o)
{
    struct lt_err err = {0};
    lt_mono t0 = lt_mono_now();
    step(1, "starting the built-in sim (default profile) on a free loopback port");
    if (lt_demo_start(&g_demo, o, &err) < 0) {
        cli_error("demo", "%s", err.msg);
        lt_demo_finish(&g_demo, NULL);
        return 1;
    }
    fprintf(stderr, "loadtrace demo:       sim serving %s at %s\n",
            lt_sim_profile(g_demo.sim)->model, g_demo.url);
    int status = 1;
    if (demo_sweep(&g_demo) == 0 && demo_azure(&g_demo) == 0 && demo_reports(&g_demo) == 0) {
        fprintf(stderr, "loadtrace demo: done in %.1f s\n",
                (double)lt_mono_diff_ns(lt_mono_now(), t0) / 1e9);
        status = 0;
    }
    if (lt_demo_finish(&g_demo, &err) < 0) {
        cli_error("demo", "%s", err.msg);
        status = 1;
    }
    if (stop_requested) /* 128 + the signal, as replay exits (docs/cli.md) */
        status = 128 + (int)stop_requested;
    return status;
}

static int demo_opt(void *ud, int id, char *arg)
{
    struct lt_demo_opts *o = ud;
    uint64_t u;
    switch (id) {
    case 'o':
        o->out = arg;
        break;
    case 's':
        o->samples = arg;
        break;
    case 't':
        if (!cli_parse_u64_in("demo", "--tokens", arg, 2, 100000, &u))
            return 2;
        o->tokens = (uint32_t)u;
        break;
    case 'S':
        return cli_parse_duration_in("demo", "--slice", arg, 1000000, &o->azure_window_us) ? 0 : 2;
    }
    return 0;
}

int cmd_demo(int argc, char **argv)
{
    struct lt_demo_opts o = {
        .out = "loadtrace-demo", .tokens = 500, .azure_rate = 1.0, .azure_window_us = 12000000};
    int prc = cli_opts_parse(&cmd_demo_spec, argc, argv, demo_opt, &o);
    if (prc >= 0)
        return prc;
    if (optind != argc) {
        cli_opts_usage(&cmd_demo_spec, stderr);
        return 2;
    }
    if (cli_dry_run())
        return 0;
    o.samples = find_samples(o.samples);
    if (!o.samples) {
        cli_error("demo", "cannot find the bundled traces (AzureLLMInferenceTrace_conv.csv); "
                          "run from the source tree or give --samples DIR");
        return 1;
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return demo_run(&o);
}

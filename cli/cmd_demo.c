/*
 * loadtrace demo: what loadtrace is for, in under a minute, with no server
 * of the user's. It composes the libraries exactly as the commands do:
 *
 *   1. start the built-in sim (default profile: the published
 *      Qwen3.5-397B / 8-GPU figures) on a free loopback port;
 *   2. a concurrency sweep 1, 4, 16, 32 (one wave of C requests per level)
 *      and the seed table, beside the published one;
 *   3. import the bundled Azure conversation trace, replay a slice of it at
 *      a scaled rate, and print its latency summary;
 *   4. charts (PNG, SVG, data, gnuplot scripts) and HTML reports.
 *
 * Every figure printed is measured in this run. Outputs are shorter than
 * the published benchmark's 1000 tokens so that the demo fits in a minute;
 * the per-request decode speed does not depend on that, the aggregate does
 * (the prefill of each wave weighs more), and the demo says so.
 */
#include "analyze/analyze.h"
#include "analyze/analyze_plot.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "replay/replay.h"
#include "sim/sim.h"
#include "base/lt_time.h"
#include "workload/trace_import.h"
#include "workload/trace_synth.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef LT_SAMPLES_DIR
#define LT_SAMPLES_DIR "traces/samples"
#endif

struct demo_opts {
    const char *out;     /* output directory */
    const char *samples; /* where the bundled traces are */
    uint32_t tokens;     /* output tokens per sweep request */
    double azure_rate;   /* replay rate of the Azure slice, req/s */
    int64_t azure_window_us;
};

static const char demo_usage[] =
    "usage: loadtrace demo [--out DIR] [--tokens N] [--slice S] [--samples DIR]\n"
    "\n"
    "Show what loadtrace does, with no server of yours, in about a minute:\n"
    "start the built-in sim (default profile, calibrated to a published\n"
    "Qwen3.5-397B benchmark on 8 GPUs), run a concurrency sweep 1, 4, 16, 32\n"
    "and print the table C | Agg tok/s | Per-req tok/s | Tokens | Wall(s) | Ok\n"
    "beside the published figures, replay a slice of the bundled Azure LLM\n"
    "inference trace at a scaled rate and print its latency summary, and write\n"
    "charts and HTML reports. Every figure is measured in this run.\n"
    "\n"
    "  --out DIR      where results, charts and reports go (loadtrace-demo)\n"
    "  --tokens N     output tokens per sweep request (500; the published\n"
    "                 benchmark used 1000, which takes about a minute more)\n"
    "  --slice S      seconds of the Azure trace to replay (12)\n"
    "  --samples DIR  the bundled traces (found next to the program, or\n"
    "                 traces/samples of the source tree)\n"
    "  -h, --help     this text\n";

static const uint32_t levels[] = {1, 4, 16, 32};
static const double pub_req[] = {176, 159, 120, 81}, pub_agg[] = {172, 542, 1647, 2156};
#define NLEVELS (sizeof levels / sizeof levels[0])

static volatile sig_atomic_t stop_requested; /* the signal that stopped the demo */
static struct lt_replay *volatile g_replay;

static void on_signal(int sig)
{
    stop_requested = sig;
    if (g_replay)
        lt_replay_stop(g_replay);
}

static void step(int n, const char *what)
{
    fprintf(stderr, "loadtrace demo: [%d/4] %s\n", n, what);
}

static int make_dir(const char *path)
{
    if (mkdir(path, 0755) == 0 || errno == EEXIST)
        return 0;
    cli_error("demo", "cannot create %s: %s", path, strerror(errno));
    return -1;
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

/* One replay against the running sim; results to out_path. */
static int run_replay(struct lt_replay_opts *ro, const char *url)
{
    struct lt_err err = {0};
    ro->target = url;
    ro->target_label = "sim";
    struct lt_replay *rp = lt_replay_new(ro, &err);
    if (rp && lt_replay_prepare(rp, &err) < 0) {
        lt_replay_free(rp);
        rp = NULL;
    }
    if (!rp) {
        cli_error("demo", "%s", err.msg);
        return -1;
    }
    g_replay = rp;
    int rc = stop_requested ? LT_EINVAL : lt_replay_run(rp, &err);
    g_replay = NULL;
    if (rc < 0 && !stop_requested)
        cli_error("demo", "%s", err.msg);
    struct lt_replay_stats st;
    lt_replay_get_stats(rp, &st);
    lt_replay_free(rp);
    if (stop_requested)
        return -1;
    return rc < 0 ? -1 : (int)st.ok;
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

static int analyze_files(const char *const *paths, size_t n, struct lt_analyze *a)
{
    struct lt_err err = {0};
    struct lt_analyze_opts ao;
    lt_analyze_opts_init(&ao);
    int rc = lt_analyze_init(a, &ao, &err);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = lt_analyze_add_file(a, paths[i], &err);
    if (rc == 0)
        rc = lt_analyze_finish(a, &err);
    if (rc < 0)
        cli_error("demo", "%s", err.msg);
    return rc;
}

static int demo_run(const struct demo_opts *o)
{
    struct lt_err err = {0};
    struct lt_sim *sim = NULL;
    struct lt_analyze sweep = {0}, azure = {0};
    int status = 1;
    char path[4096], url[64];
    lt_mono t0 = lt_mono_now();

    const char *samples = find_samples(o->samples);
    if (!samples) {
        cli_error("demo", "cannot find the bundled traces (AzureLLMInferenceTrace_conv.csv); "
                          "run from the source tree or give --samples DIR");
        return 1;
    }
    if (make_dir(o->out) < 0)
        return 1;

    step(1, "starting the built-in sim (default profile) on a free loopback port");
    struct lt_sim_opts so = {.host = "127.0.0.1", .profile = "default", .seed = 1};
    sim = lt_sim_start(&so, &err);
    if (!sim) {
        cli_error("demo", "cannot start the sim: %s", err.msg);
        return 1;
    }
    snprintf(url, sizeof url, "http://127.0.0.1:%u", (unsigned)lt_sim_port(sim));
    fprintf(stderr, "loadtrace demo:       sim serving %s at %s\n", lt_sim_profile(sim)->model,
            url);

    /* 2. The sweep: a synthetic trace of identical short-prompt requests,
     * one closed-loop run (one wave of C requests) per level. */
    step(2, "concurrency sweep 1, 4, 16, 32 (closed loop, 100-token prompts)");
    char sweep_trace[4096];
    snprintf(sweep_trace, sizeof sweep_trace, "%s/sweep-trace.lt.zst", o->out);
    struct lt_synth_opts sy = {.seed = 1,
                               .arrivals = LT_ARR_CONSTANT,
                               .rate = 1,
                               .requests = levels[NLEVELS - 1],
                               .in = {LT_LEN_FIXED, 100, 0},
                               .out = {LT_LEN_FIXED, o->tokens, 0},
                               .command = "loadtrace demo"};
    if (lt_synth_run(&sy, sweep_trace, NULL, &err) < 0) {
        cli_error("demo", "%s", err.msg);
        goto out;
    }
    char sweep_paths[NLEVELS][4096];
    const char *sweep_list[NLEVELS];
    int ok[NLEVELS];
    for (size_t i = 0; i < NLEVELS; i++) {
        snprintf(sweep_paths[i], sizeof sweep_paths[i], "%s/sweep-c%u.lt.zst", o->out,
                 (unsigned)levels[i]);
        sweep_list[i] = sweep_paths[i];
        struct lt_replay_opts ro = {.trace_path = sweep_trace,
                                    .out_path = sweep_paths[i],
                                    .mode = LT_REPLAY_MODE_CONCURRENCY,
                                    .n_levels = 1,
                                    .requests = levels[i],
                                    .seed = 1};
        ro.levels[0] = levels[i];
        fprintf(stderr, "loadtrace demo:       C=%u: %u requests of %u tokens\n",
                (unsigned)levels[i], (unsigned)levels[i], (unsigned)o->tokens);
        if ((ok[i] = run_replay(&ro, url)) < 0)
            goto out;
    }
    if (analyze_files(sweep_list, NLEVELS, &sweep) < 0)
        goto out;
    printf("\nConcurrency sweep against the sim (measured in this run; per-request tok/s is\n"
           "the decode speed, mean of (out-1)/(E2E-TTFT); outputs of %u tokens):\n\n",
           (unsigned)o->tokens);
    if (lt_analyze_write_text(&sweep, stdout, &err) < 0) {
        cli_error("demo", "%s", err.msg);
        goto out;
    }
    printf("\nPublished (Qwen3.5-397B, 8x RTX PRO 6000, 1000-token outputs):\n"
           "   C | Agg tok/s | Per-req tok/s\n");
    for (size_t i = 0; i < NLEVELS; i++)
        printf("%4u | %9.0f | %13.0f\n", (unsigned)levels[i], pub_agg[i], pub_req[i]);
    if (o->tokens < 1000)
        printf("(With %u-token outputs each wave's prefill weighs more, so the aggregate is\n"
               "lower than with the published 1000; `loadtrace demo --tokens 1000` shows that.)\n",
               (unsigned)o->tokens);
    for (size_t i = 0; i < NLEVELS; i++)
        if (ok[i] != (int)levels[i])
            cli_error("demo", "C=%u: only %d of %u requests were ok", (unsigned)levels[i], ok[i],
                      (unsigned)levels[i]);

    /* 3. A slice of real production traffic. */
    step(3, "replaying a slice of the Azure LLM inference trace (conversation, 2023)");
    char azure_csv[4096], azure_trace[4096], azure_res[4096];
    snprintf(azure_csv, sizeof azure_csv, "%s/AzureLLMInferenceTrace_conv.csv", samples);
    snprintf(azure_trace, sizeof azure_trace, "%s/azure-conv.lt.zst", o->out);
    snprintf(azure_res, sizeof azure_res, "%s/azure-results.lt.zst", o->out);
    struct lt_import_opts io = {.format = LT_IMPORT_AZURE, .name = azure_csv};
    struct lt_import_stats ist;
    if (lt_import_file(azure_csv, azure_trace, &io, NULL, &ist, &err) < 0) {
        cli_error("demo", "%s", err.msg);
        goto out;
    }
    fprintf(stderr,
            "loadtrace demo:       imported %llu requests (%.0f s of traffic) from %s to %s;\n"
            "loadtrace demo:       replaying its first %.0f s at %.1f req/s (burst structure "
            "kept)\n",
            (unsigned long long)ist.records, (double)(ist.last_t - ist.first_t) / 1e6, azure_csv,
            azure_trace, (double)o->azure_window_us / 1e6, o->azure_rate);
    struct lt_replay_opts ra = {
        .trace_path = azure_trace, .out_path = azure_res, .mode = LT_REPLAY_MODE_TRACE, .seed = 1};
    ra.tt.win_start_us = 0;
    ra.tt.win_end_us = o->azure_window_us;
    ra.tt.rate = o->azure_rate;
    if (run_replay(&ra, url) < 0)
        goto out;
    const char *azure_list[1] = {azure_res};
    if (analyze_files(azure_list, 1, &azure) < 0)
        goto out;
    printf("\nAzure conversation trace, first %.0f s replayed at %.1f req/s against the sim:\n\n",
           (double)o->azure_window_us / 1e6, o->azure_rate);
    if (lt_analyze_write_text(&azure, stdout, &err) < 0) {
        cli_error("demo", "%s", err.msg);
        goto out;
    }

    /* 4. Charts and reports. */
    step(4, "writing charts and HTML reports");
    printf("\nFiles written:\n");
    snprintf(path, sizeof path, "%s/sweep", o->out);
    char html[4096];
    snprintf(html, sizeof html, "%s/sweep.html", o->out);
    int prc = write_report(&sweep, path, html);
    snprintf(path, sizeof path, "%s/azure", o->out);
    snprintf(html, sizeof html, "%s/azure.html", o->out);
    if (write_report(&azure, path, html) < 0 || prc < 0)
        goto out;
    printf("  %s (and the traces and results behind them)\n", o->out);
    fprintf(stderr, "loadtrace demo: done in %.1f s\n",
            (double)lt_mono_diff_ns(lt_mono_now(), t0) / 1e9);
    status = 0;
out:
    lt_analyze_release(&sweep);
    lt_analyze_release(&azure);
    if (lt_sim_stop_err(sim, &err) < 0) {
        cli_error("demo", "%s", err.msg);
        status = 1;
    }
    if (stop_requested) /* 128 + the signal, as replay exits (docs/cli.md) */
        status = 128 + (int)stop_requested;
    return status;
}

/* Its options: getopt_long's table, which the completions and the
 * "did you mean" of a mistyped option read too (cli/commands.h). */
const struct option cmd_demo_options[] = {
    {"out", required_argument, NULL, 'o'},     {"tokens", required_argument, NULL, 't'},
    {"samples", required_argument, NULL, 's'}, {"slice", required_argument, NULL, 'S'},
    {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};

int cmd_demo(int argc, char **argv)
{
    struct demo_opts o = {
        .out = "loadtrace-demo", .tokens = 500, .azure_rate = 1.0, .azure_window_us = 12000000};
    uint64_t u;
    int c;
    while ((c = getopt_long(argc, argv, "h", cmd_demo_options, NULL)) != -1) {
        switch (c) {
        case 'o':
            o.out = optarg;
            break;
        case 's':
            o.samples = optarg;
            break;
        case 't':
            if (!cli_parse_u64_in("demo", "--tokens", optarg, 2, 100000, &u))
                return 2;
            o.tokens = (uint32_t)u;
            break;
        case 'S':
            if (!cli_parse_duration_in("demo", "--slice", optarg, 1000000, &o.azure_window_us))
                return 2;
            break;
        case 'h':
            fputs(demo_usage, stdout);
            return 0;
        default:
            return cli_bad_option("demo", cmd_demo_options, argv);
        }
    }
    if (optind != argc) {
        fputs(demo_usage, stderr);
        return 2;
    }
    if (cli_dry_run())
        return 0;
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return demo_run(&o);
}

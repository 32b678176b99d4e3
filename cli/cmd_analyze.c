/*
 * loadtrace analyze: what one or more results files say (the seed table,
 * latency percentiles with and without the coordinated-omission
 * correction, goodput, errors, sweep curves and knee), as terminal tables,
 * CSV or JSON, plus gnuplot charts and an HTML report. The work is in
 * analyze/ (analyze.h, analyze_plot.h); this file parses options.
 */
#include "analyze/analyze.h"
#include "analyze/analyze_plot.h"
#include "analyze/analyze_server.h"
#include "cli/cli_util.h"
#include "base/lt_path.h"
#include "cli/commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void on_skip(void *ud, const char *what)
{
    cli_error("analyze", "skipped: %s", what);
}

enum {
    O_SLO = 256,
    O_PERREQ,
    O_CSV,
    O_JSON,
    O_DETAILS,
    O_BUCKET,
    O_KNEE,
    O_PLOTS,
    O_HTML,
    O_WARMUP,
    O_DIGITS,
    O_SALVAGE,
    O_SERVER_CSV
};

/* Its options, written once (cli/cli_opts.h): the usage, getopt's table
 * and the completions are made from them. */
static const struct cli_opt analyze_opts_table[] = {
    {"slo", 0, "ttft=500ms,tpot=50ms,e2e=10s", O_SLO, "goodput against these objectives"},
    {"per-req", 0, "decode|e2e", O_PERREQ,
     "which per-request tok/s the seed table shows\n"
     "(default decode; both are in --csv and --json)"},
    {"csv", 0, NULL, O_CSV, "one CSV row per run"},
    {"json", 0, NULL, O_JSON, "JSON (schema: docs/analyze-json.md)"},
    {"details", 0, NULL, O_DETAILS, "also print each run's time series"},
    {"bucket", 0, "DURATION", O_BUCKET,
     "time-series bucket (default 1s; doubled when a run\n"
     "needs more than 300 buckets)"},
    {"knee", 0, "F", O_KNEE, "knee threshold fraction (default 0.5)"},
    {"plots", 0, "DIR", O_PLOTS,
     "write every chart: data (.dat), gnuplot script (.gp),\n"
     "PNG and SVG (needs gnuplot; without it, data and\n"
     "scripts only)"},
    {"html", 0, "FILE", O_HTML, "one self-contained HTML report with tables and charts"},
    {"server-csv", 0, "FILE", O_SERVER_CSV,
     "every series of the server's metrics, one row per sample\n"
     "(docs/server-metrics.md §7)"},
    {"include-warmup", 0, NULL, O_WARMUP, "count warm-up results too"},
    {"salvage", 0, NULL, O_SALVAGE,
     "read every intact frame of a damaged file (say on\n"
     "stderr what was skipped) instead of stopping at the\n"
     "first bad one"},
    {"digits", 0, "N", O_DIGITS,
     "histogram precision in significant digits, 1..4\n"
     "(default 3: percentiles within 0.1 %)"},
    {0}};

const struct cli_spec cmd_analyze_spec = {
    .cmd = "analyze",
    .synopsis = "usage: loadtrace analyze [options] RESULTS.lt.zst [MORE.lt.zst ...]\n"
                "\n"
                "Summarize results files (one run, a sweep in one file, or a sweep over\n"
                "several files) in one streaming pass. Warm-up results are excluded.\n"
                "\n",
    .opts = analyze_opts_table,
    .col = 24,
    .epilogue =
        "Definitions (docs/metrics.md); Ok = HTTP 200, no err (the stream ended with\n"
        "[DONE] or a finish reason), out >= 1; latencies are over Ok requests:\n"
        "  TTFT    first token-bearing chunk (ft) - sent\n"
        "  TTFC    first content chunk (fc) - sent\n"
        "  ITL     gaps between consecutive token-bearing chunks\n"
        "  TPOT    (E2E - TTFT) / (out - 1), per request with out >= 2\n"
        "  E2E     end (last byte) - sent\n"
        "  ... from sched: the same from the scheduled time (coordinated omission)\n"
        "  schedule lag   sent - sched; warning when its p99 > 10 ms\n"
        "  Agg tok/s      sum of out (Ok) / (last end - first send), measured window\n"
        "  Per-req tok/s  decode: mean of (out - 1) / (E2E - TTFT); e2e: mean of out / E2E\n"
        "  Goodput        Ok requests meeting every SLO given / wall seconds\n"
        "  Knee           first level past which agg tok/s grows by less than F times\n"
        "                 the relative load increase while E2E p50 still grows\n",
};

/* The options that are not the library's: where the files go. */
struct analyze_cli {
    struct lt_analyze_opts o;
    const char *plots, *html, *server_csv;
};

static int analyze_opt(void *ud, int id, char *arg)
{
    struct analyze_cli *ac = ud;
    struct lt_analyze_opts *o = &ac->o;
    uint64_t u;
    switch (id) {
    case O_SLO:
        if (!cli_parse_slo("analyze", arg, &o->slo_ttft_us, &o->slo_tpot_us, &o->slo_e2e_us, NULL))
            return 2;
        break;
    case O_PERREQ:
        if (!strcmp(arg, "decode"))
            o->perreq = LT_ANALYZE_PERREQ_DECODE;
        else if (!strcmp(arg, "e2e"))
            o->perreq = LT_ANALYZE_PERREQ_E2E;
        else {
            cli_error("analyze", "--per-req wants decode or e2e, not '%s'", arg);
            return 2;
        }
        break;
    case O_CSV:
        o->format = LT_ANALYZE_CSV;
        break;
    case O_JSON:
        o->format = LT_ANALYZE_JSON;
        break;
    case O_DETAILS:
        o->details = true;
        break;
    case O_BUCKET:
        if (!cli_parse_duration_in("analyze", "--bucket", arg, 1, &o->bucket_us))
            return 2;
        break;
    case O_KNEE:
        if (!cli_parse_double_in("analyze", "--knee", arg, 0, 1, &o->knee_fraction))
            return 2;
        break;
    case O_PLOTS:
        ac->plots = arg;
        break;
    case O_SERVER_CSV:
        ac->server_csv = arg;
        break;
    case O_HTML:
        ac->html = arg;
        break;
    case O_WARMUP:
        o->include_warmup = true;
        break;
    case O_SALVAGE:
        o->salvage = true;
        o->on_skip = on_skip;
        break;
    case O_DIGITS:
        if (!cli_parse_u64_in("analyze", "--digits", arg, 1, 4, &u))
            return 2;
        o->hist_bits = lt_hist_bits_for_digits((int)u);
        break;
    }
    return 0;
}

/* The files analyze writes must not take the place of its inputs, nor of
 * a file of another kind: -1 (said why) when one would. */
static int check_outputs(const struct analyze_cli *ac, const char *const *in, size_t n)
{
    struct lt_err err = {0};
    /* The report must not take the place of a results file (`--html
     * a.lt.zst b.lt.zst`, the report's name forgotten) or of any file that
     * is not a report. */
    if (ac->html &&
        (lt_path_not_input(ac->html, in, n, &err) < 0 || lt_path_html_ok(ac->html, &err) < 0)) {
        cli_error("analyze", "--html %s", err.msg);
        return -1;
    }
    if (ac->plots && lt_path_dir_ok(ac->plots, &err) < 0) {
        cli_error("analyze", "--plots %s", err.msg);
        return -1;
    }
    /* The server CSV likewise replaces only a server CSV, never an input. */
    if (ac->server_csv && (lt_path_not_input(ac->server_csv, in, n, &err) < 0 ||
                           lt_path_csv_ok(ac->server_csv, LT_ANALYZE_SERVER_CSV_HEAD, &err) < 0)) {
        cli_error("analyze", "--server-csv %s", err.msg);
        return -1;
    }
    return 0;
}

int cmd_analyze(int argc, char **argv)
{
    struct analyze_cli ac = {.plots = NULL};
    lt_analyze_opts_init(&ac.o);
    int prc = cli_opts_parse(&cmd_analyze_spec, argc, argv, analyze_opt, &ac);
    if (prc >= 0)
        return prc;
    struct lt_analyze_opts o = ac.o;
    const char *plots = ac.plots, *html = ac.html, *server_csv = ac.server_csv;
    if (optind >= argc) {
        cli_opts_usage(&cmd_analyze_spec, stderr);
        return 2;
    }
    if (cli_dry_run())
        return 0;
    if (check_outputs(&ac, (const char *const *)argv + optind, (size_t)(argc - optind)) < 0)
        return 2;
    struct lt_err err = {0};
    struct lt_analyze a;
    int rc = lt_analyze_init(&a, &o, &err);
    for (int i = optind; rc == 0 && i < argc; i++)
        rc = lt_analyze_add_file(&a, argv[i], &err);
    int status = 0;
    if (rc < 0) {
        cli_error("analyze", "%s", err.msg);
        if (a.results)
            cli_error("analyze", "analyzing the %llu results read before the error",
                      (unsigned long long)a.results);
        status = 1;
        if (!a.results) {
            lt_analyze_release(&a);
            return 1;
        }
    }
    if (a.skipped_frames || a.skipped_values)
        status = 1; /* figures were given, but from part of the data */
    if (a.skipped_frames || a.skipped_values)
        cli_error("analyze",
                  "salvaged: skipped %llu damaged frames (%llu bytes) and %llu bad values; the "
                  "figures cover the %llu results that were intact",
                  (unsigned long long)a.skipped_frames, (unsigned long long)a.skipped_bytes,
                  (unsigned long long)a.skipped_values, (unsigned long long)a.results);
    lt_analyze_finish(&a, &err);
    if (lt_analyze_write(&a, stdout, &err) < 0) {
        cli_error("analyze", "%s", err.msg);
        status = 1;
    }
    if (server_csv) {
        struct lt_path_out out;
        int wrc = lt_path_out_begin(&out, server_csv, &err);
        if (wrc == 0) {
            lt_analyze_server_csv(&a, out.f);
            wrc = lt_path_out_commit(&out, &err);
        }
        if (wrc < 0) {
            cli_error("analyze", "--server-csv %s", err.msg);
            status = 1;
        }
    }
    struct lt_plot_report pr = {0};
    if (plots || html) {
        struct lt_err perr = {0};
        if (lt_analyze_plots(&a, plots, html, &pr, &perr) < 0) {
            cli_error("analyze", "%s", perr.msg);
            status = 1;
        }
        for (uint32_t i = 0; i < pr.n_notes; i++)
            cli_error("analyze", "%s", pr.notes[i]);
        if (!pr.gnuplot_found)
            cli_error("analyze", "gnuplot was not found: wrote the data and the scripts only; "
                                 "install it (Debian/Ubuntu: apt-get install gnuplot-nox; "
                                 "macOS: brew install gnuplot) and run gnuplot on each .gp");
    }
    lt_plot_report_release(&pr);
    lt_analyze_release(&a);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("analyze", "writing to standard output failed");
        status = 1;
    }
    return status;
}

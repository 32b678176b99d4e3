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

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char analyze_usage[] =
    "usage: loadtrace analyze [options] RESULTS.lt.zst [MORE.lt.zst ...]\n"
    "\n"
    "Summarize results files (one run, a sweep in one file, or a sweep over\n"
    "several files) in one streaming pass. Warm-up results are excluded.\n"
    "\n"
    "  --slo ttft=500ms,tpot=50ms,e2e=10s   goodput against these objectives\n"
    "  --per-req decode|e2e  which per-request tok/s the seed table shows\n"
    "                        (default decode; both are in --csv and --json)\n"
    "  --csv                 one CSV row per run\n"
    "  --json                JSON (schema: docs/analyze-json.md)\n"
    "  --details             also print each run's time series\n"
    "  --bucket DURATION     time-series bucket (default 1s; doubled when a run\n"
    "                        needs more than 300 buckets)\n"
    "  --knee F              knee threshold fraction (default 0.5)\n"
    "  --plots DIR           write every chart: data (.dat), gnuplot script (.gp),\n"
    "                        PNG and SVG (needs gnuplot; without it, data and\n"
    "                        scripts only)\n"
    "  --html FILE           one self-contained HTML report with tables and charts\n"
    "  --server-csv FILE     every series of the server's metrics, one row per sample\n"
    "                        (docs/server-metrics.md §7)\n"
    "  --include-warmup      count warm-up results too\n"
    "  --salvage             read every intact frame of a damaged file (say on\n"
    "                        stderr what was skipped) instead of stopping at the\n"
    "                        first bad one\n"
    "  --digits N            histogram precision in significant digits, 1..4\n"
    "                        (default 3: percentiles within 0.1 %)\n"
    "  -h, --help            this text\n"
    "\n"
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
    "                 the relative load increase while E2E p50 still grows\n";

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

/* Its options: getopt_long's table, which the completions and the
 * "did you mean" of a mistyped option read too (cli/commands.h). */
const struct option cmd_analyze_options[] = {{"slo", required_argument, NULL, O_SLO},
                                             {"per-req", required_argument, NULL, O_PERREQ},
                                             {"csv", no_argument, NULL, O_CSV},
                                             {"json", no_argument, NULL, O_JSON},
                                             {"details", no_argument, NULL, O_DETAILS},
                                             {"bucket", required_argument, NULL, O_BUCKET},
                                             {"knee", required_argument, NULL, O_KNEE},
                                             {"plots", required_argument, NULL, O_PLOTS},
                                             {"html", required_argument, NULL, O_HTML},
                                             {"include-warmup", no_argument, NULL, O_WARMUP},
                                             {"digits", required_argument, NULL, O_DIGITS},
                                             {"salvage", no_argument, NULL, O_SALVAGE},
                                             {"server-csv", required_argument, NULL, O_SERVER_CSV},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};

int cmd_analyze(int argc, char **argv)
{
    struct lt_analyze_opts o;
    lt_analyze_opts_init(&o);
    const char *plots = NULL, *html = NULL, *server_csv = NULL;
    uint64_t u;
    int c;
    while ((c = getopt_long(argc, argv, "h", cmd_analyze_options, NULL)) != -1) {
        switch (c) {
        case O_SLO:
            if (!cli_parse_slo("analyze", optarg, &o.slo_ttft_us, &o.slo_tpot_us, &o.slo_e2e_us,
                               NULL))
                return 2;
            break;
        case O_PERREQ:
            if (!strcmp(optarg, "decode"))
                o.perreq = LT_ANALYZE_PERREQ_DECODE;
            else if (!strcmp(optarg, "e2e"))
                o.perreq = LT_ANALYZE_PERREQ_E2E;
            else {
                cli_error("analyze", "--per-req wants decode or e2e, not '%s'", optarg);
                return 2;
            }
            break;
        case O_CSV:
            o.format = LT_ANALYZE_CSV;
            break;
        case O_JSON:
            o.format = LT_ANALYZE_JSON;
            break;
        case O_DETAILS:
            o.details = true;
            break;
        case O_BUCKET:
            if (!cli_parse_duration_in("analyze", "--bucket", optarg, 1, &o.bucket_us))
                return 2;
            break;
        case O_KNEE:
            if (!cli_parse_double_in("analyze", "--knee", optarg, 0, 1, &o.knee_fraction))
                return 2;
            break;
        case O_PLOTS:
            plots = optarg;
            break;
        case O_SERVER_CSV:
            server_csv = optarg;
            break;
        case O_HTML:
            html = optarg;
            break;
        case O_WARMUP:
            o.include_warmup = true;
            break;
        case O_SALVAGE:
            o.salvage = true;
            o.on_skip = on_skip;
            break;
        case O_DIGITS:
            if (!cli_parse_u64_in("analyze", "--digits", optarg, 1, 4, &u))
                return 2;
            o.hist_bits = lt_hist_bits_for_digits((int)u);
            break;
        case 'h':
            fputs(analyze_usage, stdout);
            return 0;
        default:
            return cli_bad_option("analyze", cmd_analyze_options, argv);
        }
    }
    if (optind >= argc) {
        fputs(analyze_usage, stderr);
        return 2;
    }
    if (cli_dry_run())
        return 0;
    struct lt_err err = {0};
    /* The report must not take the place of a results file (`--html
     * a.lt.zst b.lt.zst`, the report's name forgotten) or of any file that
     * is not a report. */
    if (html && (lt_path_not_input(html, (const char *const *)argv + optind,
                                   (size_t)(argc - optind), &err) < 0 ||
                 lt_path_html_ok(html, &err) < 0)) {
        cli_error("analyze", "--html %s", err.msg);
        return 2;
    }
    if (plots && lt_path_dir_ok(plots, &err) < 0) {
        cli_error("analyze", "--plots %s", err.msg);
        return 2;
    }
    /* The server CSV likewise replaces only a server CSV, never an input. */
    if (server_csv && (lt_path_not_input(server_csv, (const char *const *)argv + optind,
                                         (size_t)(argc - optind), &err) < 0 ||
                       lt_path_csv_ok(server_csv, LT_ANALYZE_SERVER_CSV_HEAD, &err) < 0)) {
        cli_error("analyze", "--server-csv %s", err.msg);
        return 2;
    }
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

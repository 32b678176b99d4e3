/*
 * loadtrace analyze: what one or more results files say (the seed table,
 * latency percentiles with and without the coordinated-omission
 * correction, goodput, errors, sweep curves and knee), as terminal tables,
 * CSV or JSON, plus gnuplot charts and an HTML report. The work is in
 * analyze/ (analyze.h, analyze_plot.h); this file parses options.
 */
#include "analyze/analyze.h"
#include "analyze/analyze_plot.h"
#include "cli/cli_util.h"
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
    "  --include-warmup      count warm-up results too\n"
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

/* "ttft=500ms,tpot=50ms,e2e=10s" */
static bool parse_slo(const char *s, struct lt_analyze_opts *o)
{
    char buf[256];
    if (strlen(s) >= sizeof buf)
        return false;
    memcpy(buf, s, strlen(s) + 1);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        int64_t us;
        if (!eq || !cli_parse_duration_us(eq + 1, &us) || us <= 0)
            return false;
        *eq = '\0';
        if (!strcmp(tok, "ttft"))
            o->slo_ttft_us = us;
        else if (!strcmp(tok, "tpot"))
            o->slo_tpot_us = us;
        else if (!strcmp(tok, "e2e"))
            o->slo_e2e_us = us;
        else
            return false;
    }
    return true;
}

int cmd_analyze(int argc, char **argv)
{
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
        O_DIGITS
    };
    static const struct option longopts[] = {{"slo", required_argument, NULL, O_SLO},
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
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    struct lt_analyze_opts o;
    lt_analyze_opts_init(&o);
    const char *plots = NULL, *html = NULL;
    uint64_t u;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_SLO:
            if (!parse_slo(optarg, &o)) {
                cli_error("analyze",
                          "--slo wants ttft=DUR,tpot=DUR,e2e=DUR (any of them), "
                          "not '%s'",
                          optarg);
                return 2;
            }
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
            if (!cli_parse_duration_us(optarg, &o.bucket_us) || o.bucket_us <= 0) {
                cli_error("analyze", "--bucket wants a duration such as 1s or 500ms, not '%s'",
                          optarg);
                return 2;
            }
            break;
        case O_KNEE:
            if (!cli_parse_double(optarg, &o.knee_fraction) || o.knee_fraction <= 0 ||
                o.knee_fraction >= 1) {
                cli_error("analyze", "--knee wants a fraction between 0 and 1, not '%s'", optarg);
                return 2;
            }
            break;
        case O_PLOTS:
            plots = optarg;
            break;
        case O_HTML:
            html = optarg;
            break;
        case O_WARMUP:
            o.include_warmup = true;
            break;
        case O_DIGITS:
            if (!cli_parse_u64(optarg, &u) || u < 1 || u > 4) {
                cli_error("analyze", "--digits wants 1..4, not '%s'", optarg);
                return 2;
            }
            o.hist_bits = lt_hist_bits_for_digits((int)u);
            break;
        case 'h':
            fputs(analyze_usage, stdout);
            return 0;
        default:
            fputs(analyze_usage, stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        fputs(analyze_usage, stderr);
        return 2;
    }
    if (cli_dry_run())
        return 0;
    struct lt_err err = {0};
    struct lt_analysis a;
    int rc = lt_analysis_init(&a, &o, &err);
    for (int i = optind; rc == 0 && i < argc; i++)
        rc = lt_analysis_add_file(&a, argv[i], &err);
    int status = 0;
    if (rc < 0) {
        cli_error("analyze", "%s", err.msg);
        if (a.results)
            cli_error("analyze", "analyzing the %llu results read before the error",
                      (unsigned long long)a.results);
        status = 1;
        if (!a.results) {
            lt_analysis_release(&a);
            return 1;
        }
    }
    lt_analysis_finish(&a, &err);
    if (lt_analyze_write(&a, stdout, &err) < 0) {
        cli_error("analyze", "%s", err.msg);
        status = 1;
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
    lt_analysis_release(&a);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("analyze", "writing to standard output failed");
        status = 1;
    }
    return status;
}

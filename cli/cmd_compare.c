/*
 * loadtrace compare A B: two traces (is B representative of A?) or two
 * results files (did B beat A?). The statistics are in analyze/compare.c;
 * this file parses options and chooses the exit code.
 */
#include "analyze/compare.h"
#include "cli/cli_util.h"
#include "cli/commands.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char compare_usage[] =
    "usage: loadtrace compare [options] A.lt.zst B.lt.zst\n"
    "\n"
    "Two traces: is B representative of A? For inter-arrival times, input and\n"
    "output lengths, reasoning share and turns per session: the two-sample\n"
    "Kolmogorov-Smirnov statistic D with its p-value, the Wasserstein-1\n"
    "distance divided by A's mean (W1 norm), p50/p99 of each; for burstiness\n"
    "(gap CV, peak 1-second count / mean), tool-call rate and prefix reuse: the\n"
    "difference. Verdict per property: representative (D <= 0.10 and W1 norm\n"
    "<= 0.10), close (<= 0.20 and <= 0.25), different; overall: the worst.\n"
    "\n"
    "Two results files: did B beat A? For each run of A, the run of B at the\n"
    "same concurrency/rate: B - A of TTFT, TPOT and E2E p50 and p99, Agg and\n"
    "per-request decode tok/s and mean output length, with bootstrap\n"
    "confidence intervals; per-request paired differences when both replayed\n"
    "the same trace. A difference counts when its CI excludes 0 and it exceeds\n"
    "the margin.\n"
    "\n"
    "  --json            JSON (schema loadtrace-compare/1, docs/compare.md)\n"
    "  --plots DIR       CDF overlays and QQ plots (data, gnuplot script, PNG, SVG)\n"
    "  --html FILE       one self-contained HTML page with the report and charts\n"
    "  --confidence C    CI level (default 0.95)\n"
    "  --margin M        relative difference that matters (default 0.05)\n"
    "  --bootstrap N     bootstrap resamples (default 1000)\n"
    "  --sample K        requests sampled per run for the bootstrap (default 20000)\n"
    "  --seed S          bootstrap seed (default 1)\n"
    "  --check           exit 3 when B is not representative (traces) or is worse\n"
    "                    on some figure (results)\n"
    "  -h, --help        this text\n"
    "\n"
    "Definitions and thresholds: docs/compare.md; metrics: docs/metrics.md.\n";

int cmd_compare(int argc, char **argv)
{
    enum { O_JSON = 256, O_PLOTS, O_HTML, O_CONF, O_MARGIN, O_BOOT, O_SAMPLE, O_SEED, O_CHECK };
    static const struct option longopts[] = {{"json", no_argument, NULL, O_JSON},
                                             {"plots", required_argument, NULL, O_PLOTS},
                                             {"html", required_argument, NULL, O_HTML},
                                             {"confidence", required_argument, NULL, O_CONF},
                                             {"margin", required_argument, NULL, O_MARGIN},
                                             {"bootstrap", required_argument, NULL, O_BOOT},
                                             {"sample", required_argument, NULL, O_SAMPLE},
                                             {"seed", required_argument, NULL, O_SEED},
                                             {"check", no_argument, NULL, O_CHECK},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    struct lt_compare_opts o = {0};
    bool check = false;
    uint64_t u;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_JSON:
            o.json = true;
            break;
        case O_PLOTS:
            o.plots_dir = optarg;
            break;
        case O_HTML:
            o.html_path = optarg;
            break;
        case O_CONF:
            if (!cli_parse_double(optarg, &o.confidence) || o.confidence <= 0.5 ||
                o.confidence >= 1) {
                cli_error("compare", "--confidence wants a level such as 0.95, not '%s'", optarg);
                return 2;
            }
            break;
        case O_MARGIN:
            if (!cli_parse_double(optarg, &o.margin) || o.margin <= 0 || o.margin >= 1) {
                cli_error("compare", "--margin wants a fraction such as 0.05, not '%s'", optarg);
                return 2;
            }
            break;
        case O_BOOT:
            if (!cli_parse_u64(optarg, &u) || u < 100 || u > 100000) {
                cli_error("compare", "--bootstrap wants 100..100000, not '%s'", optarg);
                return 2;
            }
            o.bootstrap = (uint32_t)u;
            break;
        case O_SAMPLE:
            if (!cli_parse_u64(optarg, &u) || u < 100 || u > 10000000) {
                cli_error("compare", "--sample wants 100..10000000, not '%s'", optarg);
                return 2;
            }
            o.sample = (uint32_t)u;
            break;
        case O_SEED:
            if (!cli_parse_u64(optarg, &o.seed)) {
                cli_error("compare", "--seed wants a number, not '%s'", optarg);
                return 2;
            }
            break;
        case O_CHECK:
            check = true;
            break;
        case 'h':
            fputs(compare_usage, stdout);
            return 0;
        default:
            fputs(compare_usage, stderr);
            return 2;
        }
    }
    if (optind != argc - 2) {
        fputs(compare_usage, stderr);
        return 2;
    }
    if (cli_dry_run())
        return 0;
    struct lt_err err = {0};
    struct lt_compare_summary sum;
    int rc = lt_compare_files(argv[optind], argv[optind + 1], &o, stdout, &sum, &err);
    for (uint32_t i = 0; i < sum.n_notes; i++)
        cli_error("compare", "%s", sum.notes[i]);
    if (sum.gnuplot_missing)
        cli_error("compare", "gnuplot was not found: wrote the data and the scripts only; "
                             "install it (Debian/Ubuntu: apt-get install gnuplot-nox; "
                             "macOS: brew install gnuplot) and run gnuplot on each .gp");
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("compare", "writing to standard output failed");
        return 1;
    }
    if (rc < 0) {
        cli_error("compare", "%s", err.msg);
        return 1;
    }
    if (check && (sum.traces ? sum.overall == 2 : sum.different > 0))
        return 3;
    return 0;
}

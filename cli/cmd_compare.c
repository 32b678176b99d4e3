/*
 * loadtrace compare A B: two traces (is B representative of A?) or two
 * results files (did B beat A?). The statistics and the reports are in
 * analyze/compare*.c; this file parses options and chooses the exit code.
 */
#include "analyze/compare.h"
#include "workload/servegen.h"
#include "cli/cli_util.h"
#include "base/lt_path.h"
#include "cli/commands.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void on_skip(void *ud, const char *what)
{
    cli_error("compare", "skipped: %s", what);
}

enum {
    O_JSON = 256,
    O_PLOTS,
    O_HTML,
    O_CONF,
    O_MARGIN,
    O_BOOT,
    O_SAMPLE,
    O_SEED,
    O_CHECK,
    O_SALVAGE,
    O_TWIN,
    O_SLO
};

/* Its options, written once (cli/cli_opts.h): the usage, getopt's table
 * and the completions are made from them. */
static const struct cli_opt compare_opts_table[] = {
    {"json", 0, NULL, O_JSON, "JSON (schema loadtrace-compare/1, docs/compare.md)"},
    {"plots", 0, "DIR", O_PLOTS, "CDF overlays and QQ plots (data, gnuplot script, PNG, SVG)"},
    {"html", 0, "FILE", O_HTML, "one self-contained HTML page with the report and charts"},
    {"confidence", 0, "C", O_CONF, "CI level (default 0.95)"},
    {"margin", 0, "M", O_MARGIN, "relative difference that matters (default 0.05)"},
    {"bootstrap", 0, "N", O_BOOT, "bootstrap resamples (default 1000)"},
    {"sample", 0, "K", O_SAMPLE, "requests sampled per run for the bootstrap (default 20000)"},
    {"seed", 0, "S", O_SEED, "bootstrap seed (default 1)"},
    {"salvage", 0, NULL, O_SALVAGE,
     "read every intact frame of damaged files (say on stderr\n"
     "what was skipped) instead of stopping at the first bad one"},
    {"twin", 0, NULL, O_TWIN, "results: the twin table even when B is not a virtual run"},
    {"slo", 0, "ttft=DUR,tpot=DUR,e2e=DUR", O_SLO,
     "results: what goodput counts (default:\nevery Ok request)"},
    {"check", 0, NULL, O_CHECK,
     "exit 3 when B is not representative (traces), is worse\n"
     "on some figure (results), or, with the twin table, when\n"
     "the twin's verdict is not \"holds\" on every matched run"},
    {0}};

const struct cli_spec cmd_compare_spec = {
    .cmd = "compare",
    .synopsis = "usage: loadtrace compare [options] A.lt.zst B.lt.zst\n"
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
                "When B predicted A (B is a virtual replay, target sim:virtual, or --twin):\n"
                "also the twin table: the error (B - A) / A of p50, p90 and p99 of TTFT,\n"
                "TPOT, ITL and E2E, of throughput and goodput, the KS distance of each\n"
                "distribution, and a verdict: holds when every p50 is within 10 %, every\n"
                "p90 and p99 within 15 %, throughput and goodput within 5 % (ITL is shown,\n"
                "not judged).\n"
                "\n"
                "A ServeGen folder and a trace `synth --servegen` made from it: B against\n"
                "a fresh draw (another seed) of the same slice of the folder, i.e. against\n"
                "its windows' rates, gap CVs and length distributions (docs/synth.md).\n"
                "\n",
    .opts = compare_opts_table,
    .col = 20,
    .epilogue = "Definitions and thresholds: docs/compare.md; metrics: docs/metrics.md.\n",
};

/* What compare's options set beyond the library's options. */
struct compare_cli {
    struct lt_compare_opts o;
    bool check;
};

static int compare_opt(void *ud, int id, char *arg)
{
    struct compare_cli *cc = ud;
    struct lt_compare_opts *o = &cc->o;
    uint64_t u;
    switch (id) {
    case O_JSON:
        o->json = true;
        break;
    case O_PLOTS:
        o->plots_dir = arg;
        break;
    case O_HTML:
        o->html_path = arg;
        break;
    case O_CONF:
        if (!cli_parse_double_in("compare", "--confidence", arg, 0.5, 1, &o->confidence))
            return 2;
        break;
    case O_MARGIN:
        if (!cli_parse_double_in("compare", "--margin", arg, 0, 1, &o->margin))
            return 2;
        break;
    case O_BOOT:
        if (!cli_parse_u64_in("compare", "--bootstrap", arg, 100, 100000, &u))
            return 2;
        o->bootstrap = (uint32_t)u;
        break;
    case O_SAMPLE:
        if (!cli_parse_u64_in("compare", "--sample", arg, 100, 10000000, &u))
            return 2;
        o->sample = (uint32_t)u;
        break;
    case O_SEED:
        if (!cli_parse_u64_in("compare", "--seed", arg, 0, UINT64_MAX, &o->seed))
            return 2;
        break;
    case O_CHECK:
        cc->check = true;
        break;
    case O_TWIN:
        o->twin = true;
        break;
    case O_SLO:
        if (!cli_parse_slo("compare", arg, &o->slo_ttft_us, &o->slo_tpot_us, &o->slo_e2e_us, NULL))
            return 2;
        break;
    case O_SALVAGE:
        o->salvage = true;
        o->on_skip = on_skip;
        break;
    }
    return 0;
}

int cmd_compare(int argc, char **argv)
{
    struct compare_cli cc = {0};
    int prc = cli_opts_parse(&cmd_compare_spec, argc, argv, compare_opt, &cc);
    if (prc >= 0)
        return prc;
    struct lt_compare_opts o = cc.o;
    bool check = cc.check;
    if (optind != argc - 2) {
        cli_opts_usage(&cmd_compare_spec, stderr);
        return 2;
    }
    if (cli_dry_run())
        return 0;
    struct lt_err err = {0};
    if (o.html_path &&
        (lt_path_not_input(o.html_path, (const char *const *)argv + optind, 2, &err) < 0 ||
         lt_path_html_ok(o.html_path, &err) < 0)) {
        cli_error("compare", "--html %s", err.msg);
        return 2;
    }
    if (o.plots_dir && lt_path_dir_ok(o.plots_dir, &err) < 0) {
        cli_error("compare", "--plots %s", err.msg);
        return 2;
    }
    /* A ServeGen folder as A: B is compared with a fresh draw of the same
     * slice of the folder (another seed), i.e. with the windows' own rates
     * and distributions. */
    const char *path_a = argv[optind];
    char ref[64] = "";
    struct stat sa;
    if (stat(path_a, &sa) == 0 && S_ISDIR(sa.st_mode)) {
        const char *tmp = getenv("TMPDIR");
        snprintf(ref, sizeof ref, "%.40s/lt-servegen-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        int fd = mkstemp(ref);
        if (fd < 0) {
            cli_error("compare", "cannot make a temporary file: %s", strerror(errno));
            return 1;
        }
        close(fd);
        if (lt_servegen_reference(path_a, argv[optind + 1], ref, o.seed ^ UINT64_C(0x5e47e), &err) <
            0) {
            unlink(ref);
            cli_error("compare", "%s", err.msg);
            return err.code == LT_EINVAL ? 2 : 1;
        }
        path_a = ref;
    }
    struct lt_compare_summary sum;
    int rc = lt_compare_files(path_a, argv[optind + 1], &o, stdout, &sum, &err);
    if (ref[0])
        unlink(ref);
    for (int k = 0; k < 2; k++)
        if (sum.skipped[k])
            cli_error("compare",
                      "salvaged: skipped %llu damaged frames or values of %s; its figures cover "
                      "what was intact",
                      (unsigned long long)sum.skipped[k], argv[optind + k]);
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
    /* --check promises a verdict: results of different traces, or no run
     * of A matched in B, have none to give. */
    if (check && !sum.traces && (sum.traces_differ || !sum.pairs)) {
        cli_error("compare", "--check: %s",
                  sum.traces_differ ? "A and B replayed different traces (see NOTE above)"
                                    : "no run of A matches a run of B: nothing was judged");
        return 3;
    }
    /* With the twin table the question is the prediction's error, not
     * whether B beat A. */
    if (check && (sum.traces ? sum.overall == LT_CMP_DIFFERENT
                  : sum.twin ? sum.twin_misses > 0
                             : sum.different > 0))
        return 3;
    /* Salvaged files gave figures, but from part of the data. */
    return sum.skipped[0] || sum.skipped[1] ? 1 : 0;
}

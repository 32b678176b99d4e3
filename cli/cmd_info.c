/*
 * loadtrace info: what is in a trace, for a person (aligned text with units)
 * or a program (--json, schema in docs/info.md). The figures come from
 * workload/trace_info.c and the layout from analyze/info_render.c; this
 * file parses options and draws the progress line.
 */
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "analyze/info_render.h"

#include <stdio.h>

struct info_opts {
    const char *path;
    bool json;
};

/* The progress line on stderr, when it is a terminal. */
static void on_progress(void *ud, uint64_t records)
{
    *(bool *)ud = true;
    fprintf(stderr, "\rloadtrace info: %llu records...", (unsigned long long)records);
}

static int info_run(const struct info_opts *o)
{
    struct lt_err err = {0};
    struct lt_info info;
    char source[128];
    bool drawn = false;
    int rc = lt_info_compute_progress(o->path, &info, source, sizeof source,
                                      cli_progress_wanted() ? on_progress : NULL, &drawn, &err);
    if (drawn)
        fputs("\r\033[K", stderr);
    if (rc < 0) {
        cli_error("info", "%s", err.msg);
        return 1;
    }
    int status = 0;
    if (o->json) {
        if (lt_info_render_json(stdout, &info, o->path, source, &err) < 0) {
            cli_error("info", "%s", err.msg);
            status = 1;
        }
    } else {
        lt_info_render_text(stdout, &info, o->path, source);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("info", "writing to standard output failed");
        status = 1;
    }
    lt_info_release(&info);
    return status;
}

/* Its options, written once (cli/cli_opts.h): the usage, getopt's table
 * and the completions are made from them. */
static const struct cli_opt info_opts_table[] = {
    {"json", 0, NULL, 'j', "one JSON object instead of text (schema in docs/info.md)"}, {0}};

const struct cli_spec cmd_info_spec = {
    .cmd = "info",
    .synopsis = "usage: loadtrace info [--json] TRACE.lt.zst\n"
                "\n"
                "Describe a trace in one streaming pass: span, request count, mean rate,\n"
                "inter-arrival mean and CV (sd/mean: 0 = evenly spaced, 1 = Poisson, more =\n"
                "bursty), peak requests in one second and one minute, timestamp rounding,\n"
                "input/output/reasoning token percentiles, failed requests, sessions,\n"
                "prefix reuse (share of prompt blocks seen before, unlimited cache), tool\n"
                "calls, reasoning, models and APIs. Definitions: docs/info.md.\n"
                "\n",
    .opts = info_opts_table,
    .col = 14,
};

static int info_opt(void *ud, int id, char *arg)
{
    struct info_opts *o = ud;
    (void)arg;
    if (id == 'j')
        o->json = true;
    return 0;
}

int cmd_info(int argc, char **argv)
{
    struct info_opts o = {0};
    int rc = cli_opts_parse(&cmd_info_spec, argc, argv, info_opt, &o);
    if (rc >= 0)
        return rc;
    if (optind != argc - 1) {
        cli_opts_usage(&cmd_info_spec, stderr);
        return 2;
    }
    o.path = argv[optind];
    if (cli_dry_run())
        return 0;
    return info_run(&o);
}

/*
 * loadtrace export: write a trace in another tool's format (Mooncake JSON
 * lines, or loadtrace's own JSON lines). The work is in
 * workload/trace_export.c (with the file handling: the output is not the
 * input, a failed export leaves no file); this file parses options and
 * reports.
 */
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "workload/trace_export.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct export_opts {
    const char *in;
    const char *out; /* NULL = standard output */
    enum lt_export_format format;
    bool quiet;
};

static const char export_usage[] =
    "usage: loadtrace export --to mooncake|jsonl TRACE.lt.zst [-o FILE]\n"
    "\n"
    "Write a trace in another tool's format, to FILE or standard output.\n"
    "TRACE may be - for standard input.\n"
    "\n"
    "  --to mooncake     Mooncake JSON lines: timestamp (ms, rounded),\n"
    "                    input_length, output_length, hash_ids (512-token blocks).\n"
    "                    Blocks of another size are re-cut into 512-token blocks;\n"
    "                    a record without blocks gets ids used nowhere else (no\n"
    "                    prefix reuse); other keys are dropped; a record without\n"
    "                    in or out is an error. See docs/import.md.\n"
    "  --to jsonl        loadtrace records as JSON lines, header first (what\n"
    "                    `loadtrace cat` prints; `import --from jsonl` reads it)\n"
    "  -o, --output FILE write to FILE instead of standard output\n"
    "  -q, --quiet       no summary line on stderr\n"
    "  -h, --help        this text\n";

static int export_run(const struct export_opts *o)
{
    struct lt_err err = {0};
    struct lt_export_stats st;
    if (lt_export_path(o->in, o->format, o->out, &st, &err) < 0) {
        cli_error("export", "%s", err.msg);
        return 1;
    }
    if (!o->quiet) {
        fprintf(stderr, "loadtrace export: %s: %" PRIu64 " records written to %s", o->in,
                st.records, o->out ? o->out : "standard output");
        if (o->format == LT_EXPORT_MOONCAKE)
            fprintf(stderr,
                    "; %" PRIu64 " without blocks got fresh hash_ids, %" PRIu64
                    " re-cut to 512-token blocks",
                    st.fresh, st.recut);
        fputc('\n', stderr);
    }
    return 0;
}

/* Its options: getopt_long's table, which the completions and the
 * "did you mean" of a mistyped option read too (cli/commands.h). */
const struct option cmd_export_options[] = {{"to", required_argument, NULL, 't'},
                                            {"output", required_argument, NULL, 'o'},
                                            {"quiet", no_argument, NULL, 'q'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};

int cmd_export(int argc, char **argv)
{
    struct export_opts o = {0};
    bool have_to = false;
    int c;
    while ((c = getopt_long(argc, argv, "o:qh", cmd_export_options, NULL)) != -1) {
        switch (c) {
        case 't':
            if (lt_export_format_parse(optarg, &o.format) < 0) {
                cli_error("export", "--to %s: not a format (mooncake, jsonl)", optarg);
                return 2;
            }
            have_to = true;
            break;
        case 'o':
            o.out = strcmp(optarg, "-") ? optarg : NULL;
            break;
        case 'q':
            o.quiet = true;
            break;
        case 'h':
            fputs(export_usage, stdout);
            return 0;
        default:
            return cli_bad_option("export", cmd_export_options, argv);
        }
    }
    if (!have_to || optind != argc - 1) {
        cli_error("export", "%s",
                  !have_to ? "--to FORMAT is required" : "one input TRACE is required");
        fputs(export_usage, stderr);
        return 2;
    }
    o.in = argv[optind];
    if (cli_dry_run())
        return 0;
    return export_run(&o);
}

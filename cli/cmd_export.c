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

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct export_opts {
    const char *in;
    const char *out; /* NULL = standard output */
    enum lt_export_format format;
    bool quiet;
    bool have_to; /* --to was given */
};

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

/* Its options, written once (cli/cli_opts.h): the usage, getopt's table
 * and the completions are made from them. */
static const struct cli_opt export_opts_table[] = {
    {"to", 0, "mooncake", 't',
     "Mooncake JSON lines: timestamp (ms, rounded),\n"
     "input_length, output_length, hash_ids (512-token blocks).\n"
     "Blocks of another size are re-cut into 512-token blocks;\n"
     "a record without blocks gets ids used nowhere else (no\n"
     "prefix reuse); other keys are dropped; a record without\n"
     "in or out is an error. See docs/import.md.\n"
     "\t--to jsonl        loadtrace records as JSON lines, header first (what\n"
     "`loadtrace cat` prints; `import --from jsonl` reads it)"},
    {"output", 'o', "FILE", 'o', "write to FILE instead of standard output"},
    {"quiet", 'q', NULL, 'q', "no summary line on stderr"},
    {0}};

const struct cli_spec cmd_export_spec = {
    .cmd = "export",
    .synopsis = "usage: loadtrace export --to mooncake|jsonl TRACE.lt.zst [-o FILE]\n"
                "\n"
                "Write a trace in another tool's format, to FILE or standard output.\n"
                "TRACE may be - for standard input.\n"
                "\n",
    .opts = export_opts_table,
    .col = 20,
};

static int export_opt(void *ud, int id, char *arg)
{
    struct export_opts *o = ud;
    switch (id) {
    case 't':
        if (lt_export_format_parse(arg, &o->format) < 0) {
            cli_error("export", "--to %s: not a format (mooncake, jsonl)", arg);
            return 2;
        }
        o->have_to = true;
        break;
    case 'o':
        o->out = strcmp(arg, "-") ? arg : NULL;
        break;
    case 'q':
        o->quiet = true;
        break;
    }
    return 0;
}

int cmd_export(int argc, char **argv)
{
    struct export_opts o = {0};
    int rc = cli_opts_parse(&cmd_export_spec, argc, argv, export_opt, &o);
    if (rc >= 0)
        return rc;
    if (!o.have_to || optind != argc - 1) {
        cli_error("export", "%s",
                  !o.have_to ? "--to FORMAT is required" : "one input TRACE is required");
        cli_opts_usage(&cmd_export_spec, stderr);
        return 2;
    }
    o.in = argv[optind];
    if (cli_dry_run())
        return 0;
    return export_run(&o);
}

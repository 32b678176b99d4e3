/*
 * loadtrace cat: every value of a trace or results file as JSON lines,
 * the header first, so `cat | import --from jsonl` restores the file. The
 * lines are workload/trace_export.c's (lt_export_jsonl, also `export --to
 * jsonl`); this file parses options, reads with or without salvage and
 * reports. With -o it writes a loadtrace file instead (lt_export_copy):
 * `cat --salvage -o fixed.lt.zst broken.lt.zst` is how a damaged file's
 * intact values go back into a file that every command reads whole.
 */
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "base/lt_path.h"
#include "traces/trace_reader.h"
#include "workload/trace_export.h"

#include <stdio.h>
#include <string.h>

struct cat_opts {
    const char *path;
    const char *out; /* -o: a loadtrace file, not JSON lines */
    bool header;
    bool salvage;
};

static void on_skip(void *ud, const char *what)
{
    fprintf(stderr, "loadtrace cat: skipped: %s\n", what);
}

/* cat -o: a loadtrace file instead of JSON lines (with --salvage, the
 * repaired copy of a damaged file). */
static int cat_copy(const struct cat_opts *o)
{
    struct lt_err err = {0};
    struct lt_reader_opts ro = {.salvage = o->salvage, .on_skip = on_skip};
    struct lt_export_stats xs;
    struct lt_reader_stats st;
    if (lt_export_copy(o->path, &ro, o->out, &xs, &st, &err) < 0) {
        cli_error("cat", "%s", err.msg);
        if (xs.fault == LT_EXPORT_FAULT_READ && !strcmp(o->out, "-"))
            cli_error("cat", "standard output has the %llu values read before the error",
                      (unsigned long long)xs.records);
        else if (xs.records)
            cli_error("cat", "nothing written (%llu values had been copied)",
                      (unsigned long long)xs.records);
        return 1;
    }
    if (st.skipped_frames || st.skipped_values) {
        cli_error("cat",
                  "salvaged %llu values into %s; skipped %llu damaged frames (%llu bytes) and "
                  "%llu bad values",
                  (unsigned long long)xs.records, o->out, (unsigned long long)st.skipped_frames,
                  (unsigned long long)st.skipped_bytes, (unsigned long long)st.skipped_values);
        return 1;
    }
    return 0;
}

static int cat_run(const struct cat_opts *o)
{
    if (o->out)
        return cat_copy(o);
    struct lt_err err = {0};
    struct lt_reader_opts ro = {.salvage = o->salvage, .on_skip = on_skip};
    struct lt_reader *r = lt_reader_open(o->path, &ro, &err);
    if (!r) {
        cli_error("cat", "%s", err.msg);
        return 1;
    }
    struct lt_export_stats xs;
    struct lt_reader_stats st;
    int status = 0;
    int rc = lt_export_jsonl(r, o->header, o->path, stdout, "standard output", &xs, &err);
    lt_reader_stats(r, &st);
    /* A write error is reported once, below, as for every command. */
    if (rc < 0 && xs.fault == LT_EXPORT_FAULT_ENCODE) {
        cli_error("cat", "%s: cannot print record %llu as JSON", o->path,
                  (unsigned long long)st.values);
        status = 1;
    } else if (rc < 0 && xs.fault == LT_EXPORT_FAULT_READ) {
        cli_error("cat", "%s", err.msg);
        cli_error("cat", "%llu records before the error were printed",
                  (unsigned long long)st.values);
        status = 1;
    }
    if (o->salvage && (st.skipped_frames || st.skipped_values)) {
        cli_error("cat",
                  "salvaged %llu records; skipped %llu damaged frames (%llu bytes) and "
                  "%llu bad records",
                  (unsigned long long)st.values, (unsigned long long)st.skipped_frames,
                  (unsigned long long)st.skipped_bytes, (unsigned long long)st.skipped_values);
        status = 1;
    }
    if (rc < 0 || fflush(stdout) != 0 || ferror(stdout)) {
        if (rc >= 0 || xs.fault == LT_EXPORT_FAULT_WRITE)
            cli_error("cat", "writing to standard output failed");
        status = 1;
    }
    lt_reader_close(r);
    return status;
}

/* Its options, written once (cli/cli_opts.h): the usage, getopt's table
 * and the completions are made from them. */
static const struct cli_opt cat_opts_table[] = {
    {"no-header", 0, NULL, 'H', "leave out the header line"},
    {"salvage", 0, NULL, 's',
     "read every intact frame of a damaged file; say on stderr\nwhat was skipped"},
    {"output", 'o', "F", 'o',
     "write a loadtrace file F (- = standard output) of the same\n"
     "kind and header instead of JSON lines: with --salvage, a\n"
     "repaired copy that analyze, compare and replay read whole.\n"
     "F must not be FILE; it is kept when parts were skipped\n"
     "(exit status 1 says so) and removed on an error"},
    {0}};

const struct cli_spec cmd_cat_spec = {
    .cmd = "cat",
    .synopsis = "usage: loadtrace cat [--no-header] [--salvage] FILE.lt.zst\n"
                "       loadtrace cat --salvage -o REPAIRED.lt.zst FILE.lt.zst\n"
                "\n"
                "Print the file as JSON lines: the header, then every record (trace files)\n"
                "or every run and result record (results files), with the keys and units\n"
                "of docs/trace-format.md. FILE may be - for standard input.\n"
                "\n",
    .opts = cat_opts_table,
    .col = 17,
};

static int cat_opt(void *ud, int id, char *arg)
{
    struct cat_opts *o = ud;
    switch (id) {
    case 'H':
        o->header = false;
        break;
    case 's':
        o->salvage = true;
        break;
    case 'o':
        o->out = arg;
        break;
    }
    return 0;
}

int cmd_cat(int argc, char **argv)
{
    struct cat_opts o = {.header = true};
    int rc = cli_opts_parse(&cmd_cat_spec, argc, argv, cat_opt, &o);
    if (rc >= 0)
        return rc;
    if (optind != argc - 1) {
        cli_opts_usage(&cmd_cat_spec, stderr);
        return 2;
    }
    o.path = argv[optind];
    if (o.out && o.salvage && !strcmp(o.path, "-")) {
        cli_error("cat", "--salvage -o reads the file twice (to count what it skips, then to "
                         "copy): give a file, not standard input");
        return 2;
    }
    if (o.out && !o.header) {
        cli_error("cat", "--no-header is for JSON lines; -o writes a loadtrace file, header first");
        return 2;
    }
    struct lt_err err = {0};
    const char *const in[] = {o.path};
    if (o.out && lt_path_not_input(o.out, in, 1, &err) < 0) {
        cli_error("cat", "%s", err.msg);
        return 2;
    }
    if (cli_dry_run())
        return 0;
    return cat_run(&o);
}

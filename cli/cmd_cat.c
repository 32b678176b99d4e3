/*
 * loadtrace cat: every value of a trace or results file as JSON lines,
 * the header first, so `cat | import --from jsonl` restores the file.
 */
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "traces/lt_buf.h"
#include "traces/trace_json.h"
#include "traces/trace_reader.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

struct cat_opts {
    const char *path;
    bool header;
    bool salvage;
};

static const char cat_usage[] =
    "usage: loadtrace cat [--no-header] [--salvage] FILE.lt.zst\n"
    "\n"
    "Print the file as JSON lines: the header, then every record (trace files)\n"
    "or every run and result record (results files), with the keys and units\n"
    "of docs/trace-format.md. FILE may be - for standard input.\n"
    "\n"
    "  --no-header  leave out the header line\n"
    "  --salvage    read every intact frame of a damaged file; say on stderr\n"
    "               what was skipped\n"
    "  -h, --help   this text\n";

static void on_skip(void *ud, const char *what)
{
    fprintf(stderr, "loadtrace cat: skipped: %s\n", what);
}

static int cat_run(const struct cat_opts *o)
{
    struct lt_err err = {0};
    struct lt_reader_opts ro = {.salvage = o->salvage, .on_skip = on_skip};
    struct lt_reader *r = lt_reader_open(o->path, &ro, &err);
    if (!r) {
        cli_error("cat", "%s", err.msg);
        return 1;
    }
    struct lt_buf line;
    lt_buf_init(&line, (size_t)1 << 30);
    int rc = 0;
    if (o->header) {
        rc = lt_json_header(&line, lt_reader_header(r));
        lt_buf_append(&line, "\n", 1);
    }
    const struct lt_item *it;
    int n;
    while (rc == 0 && (n = lt_reader_next(r, &it, &err)) == 1) {
        rc = lt_json_item(&line, it);
        if (rc == 0)
            rc = lt_buf_append(&line, "\n", 1);
        if (line.len >= 1 << 16) {
            fwrite(line.p, 1, line.len, stdout);
            lt_buf_reset(&line);
        }
    }
    if (line.len)
        fwrite(line.p, 1, line.len, stdout);
    struct lt_reader_stats st;
    lt_reader_stats(r, &st);
    int status = 0;
    if (rc < 0) {
        cli_error("cat", "%s: cannot print record %llu as JSON", o->path,
                  (unsigned long long)st.values);
        status = 1;
    } else if (n < 0) {
        cli_error("cat", "%s", err.msg);
        cli_error("cat", "%llu records before the error were printed",
                  (unsigned long long)st.values);
        status = 1;
    }
    if (o->salvage && (st.skipped_frames || st.skipped_values)) {
        cli_error("cat", "salvaged %llu records; skipped %llu damaged frames (%llu bytes) and "
                  "%llu bad records",
                  (unsigned long long)st.values, (unsigned long long)st.skipped_frames,
                  (unsigned long long)st.skipped_bytes, (unsigned long long)st.skipped_values);
        status = 1;
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("cat", "writing to standard output failed");
        status = 1;
    }
    lt_buf_release(&line);
    lt_reader_free(r);
    return status;
}

int cmd_cat(int argc, char **argv)
{
    static const struct option longopts[] = {{"no-header", no_argument, NULL, 'H'},
                                             {"salvage", no_argument, NULL, 's'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    struct cat_opts o = {.header = true};
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'H': o.header = false; break;
        case 's': o.salvage = true; break;
        case 'h': fputs(cat_usage, stdout); return 0;
        default: fputs(cat_usage, stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fputs(cat_usage, stderr);
        return 2;
    }
    o.path = argv[optind];
    if (cli_dry_run())
        return 0;
    return cat_run(&o);
}

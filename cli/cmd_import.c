/*
 * loadtrace import: convert a public trace (Azure, BurstGPT, Mooncake) or
 * JSON lines of loadtrace records into a .lt.zst trace. The work is in
 * traces/trace_import.c; this file parses options and reports.
 */
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "traces/trace_import.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct import_opts {
    const char *in;
    const char *out;
    struct lt_import_opts lib;
    int level;
    bool quiet;
};

static const char import_usage[] =
    "usage: loadtrace import --from azure|burstgpt|mooncake|jsonl FILE -o OUT.lt.zst\n"
    "\n"
    "Convert a trace into a loadtrace file. FILE may be - for standard input,\n"
    "OUT may be - for standard output. docs/import.md says how each format's\n"
    "columns map to record keys.\n"
    "\n"
    "  --from FORMAT     azure     Azure LLM inference trace CSV (TIMESTAMP,\n"
    "                              ContextTokens, GeneratedTokens)\n"
    "                    burstgpt  BurstGPT CSV (Timestamp, Model, Request tokens,\n"
    "                              Response tokens, ...); rows with 0 response\n"
    "                              tokens are marked failed\n"
    "                    mooncake  Mooncake JSON lines (timestamp in ms,\n"
    "                              input_length, output_length, hash_ids)\n"
    "                    jsonl     loadtrace records as JSON lines, as `loadtrace\n"
    "                              cat` prints them (header line optional)\n"
    "  -o, --output OUT  the trace to write\n"
    "  --sort            sort the input by arrival in memory (default: input out\n"
    "                    of time order is an error)\n"
    "  --skip-bad        skip rows that cannot be parsed, reporting each one\n"
    "                    (default: the first bad row is an error)\n"
    "  --block-tokens N  jsonl without a header line: tokens per block of the\n"
    "                    records' \"blocks\" (needed when they have blocks)\n"
    "  --level N         zstd compression level, 1-19 (default 19: import runs\n"
    "                    once and the file is kept, so it pays to compress hard)\n"
    "  -q, --quiet       no summary line\n"
    "  -h, --help        this text\n"
    "\n"
    "The summary on stderr gives the records written, how many are marked\n"
    "failed, bad rows skipped, and the span from the first to the last arrival.\n";

static void on_skip(void *ud, const char *msg)
{
    cli_error("import", "skipped: %s", msg);
}

static int import_run(const struct import_opts *o)
{
    struct lt_err err = {0};
    struct lt_import_stats st;
    /* Frames close by count and size only, not by the clock: that rule
     * bounds what a crash loses while capturing, and here it would only
     * make the output differ from run to run. */
    struct lt_writer_opts wo = {.frame_ms = 1000000000, .level = o->level};
    int rc = lt_import_file(o->in, o->out, &o->lib, &wo, &st, &err);
    if (rc < 0) {
        cli_error("import", "%s", err.msg);
        if (st.records || st.skipped)
            cli_error("import", "nothing written (%" PRIu64 " records had been read)", st.records);
        return 1;
    }
    if (!o->quiet) {
        double span = (double)(st.last_t - st.first_t) / 1e6;
        fprintf(stderr,
                "loadtrace import: %s: %" PRIu64 " records written to %s, %" PRIu64
                " marked failed, %" PRIu64 " bad rows skipped; span %.6f s (t %" PRId64
                " .. %" PRId64 " us); tokens in %" PRIu64 ", out %" PRIu64 "\n",
                o->in, st.records, o->out, st.failed, st.skipped, st.records ? span : 0.0,
                st.first_t, st.last_t, st.in_sum, st.out_sum);
    }
    return 0;
}

int cmd_import(int argc, char **argv)
{
    static const struct option longopts[] = {{"from", required_argument, NULL, 'f'},
                                             {"output", required_argument, NULL, 'o'},
                                             {"sort", no_argument, NULL, 's'},
                                             {"skip-bad", no_argument, NULL, 'k'},
                                             {"block-tokens", required_argument, NULL, 'b'},
                                             {"level", required_argument, NULL, 'L'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    struct import_opts o = {.lib = {.on_skip = on_skip}, .level = 19};
    bool have_from = false;
    int c;
    uint64_t u;
    while ((c = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (lt_import_format_parse(optarg, &o.lib.format) < 0) {
                cli_error("import",
                          "--from %s: not a format (azure, burstgpt, mooncake, "
                          "jsonl)",
                          optarg);
                return 2;
            }
            have_from = true;
            break;
        case 'o':
            o.out = optarg;
            break;
        case 's':
            o.lib.sort = true;
            break;
        case 'k':
            o.lib.skip_bad = true;
            break;
        case 'b':
            if (!cli_parse_u64(optarg, &u) || u == 0 || u > UINT32_MAX) {
                cli_error("import", "--block-tokens %s: not a positive whole number", optarg);
                return 2;
            }
            o.lib.block_tokens = (uint32_t)u;
            break;
        case 'L':
            if (!cli_parse_u64(optarg, &u) || u < 1 || u > 19) {
                cli_error("import", "--level %s: not a level from 1 to 19", optarg);
                return 2;
            }
            o.level = (int)u;
            break;
        case 'q':
            o.quiet = true;
            break;
        case 'h':
            fputs(import_usage, stdout);
            return 0;
        default:
            fputs(import_usage, stderr);
            return 2;
        }
    }
    if (!have_from || !o.out || optind != argc - 1) {
        cli_error("import", "%s",
                  !have_from ? "--from FORMAT is required"
                  : !o.out   ? "-o OUT.lt.zst is required"
                             : "one input FILE is required");
        fputs(import_usage, stderr);
        return 2;
    }
    o.in = argv[optind];
    o.lib.name = o.in;
    if (cli_dry_run())
        return 0;
    return import_run(&o);
}

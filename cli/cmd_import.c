/*
 * loadtrace import: convert a public trace (Azure, BurstGPT, Mooncake) or
 * JSON lines of loadtrace records into a .lt.zst trace. The work is in
 * workload/ (trace_import.c and the format families behind its table);
 * this file parses options and reports.
 */
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "workload/trace_import.h"

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
    "usage: loadtrace import --from FORMAT FILE -o OUT.lt.zst [--map KEY=EXPR,...]\n"
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
    "                              cat` prints them (header line optional);\n"
    "                              with --map, any JSON lines\n"
    "                    csv       any CSV with a header line, by --map\n"
    "                    tracelab  TraceLab's multi-round agent CSV (session_id,\n"
    "                              arrival_time, round_idx, prefix_len, input_len,\n"
    "                              output_len, tool_wait_after_ms)\n"
    "                    tracelab-jsonl  TraceLab's per-round agent JSON lines\n"
    "  --map KEY=EXPR,.. csv, jsonl: which column or field (a.b.c) gives which\n"
    "                    record key: in=prefix_len+input_len, t=ts:s (units s,\n"
    "                    ms, us, iso), session=conv_id (any name), ...\n"
    "  -o, --output OUT  the trace to write\n"
    "  --sort            sort the input by arrival in memory (default: input out\n"
    "                    of time order is an error)\n"
    "  --skip-bad        skip rows that cannot be parsed, reporting each one\n"
    "                    (default: the first bad row is an error)\n"
    "  --infer-sessions  requests with prefix blocks and no session: link each to\n"
    "                    the earlier request whose blocks it extends, but for a\n"
    "                    last block that grew (its previous turn), so replay keeps\n"
    "                    each conversation's turns in order; none where two fit\n"
    "                    equally. The summary gives the turns per session\n"
    "  --max-context N   clip each request's prompt plus output to N tokens (a\n"
    "                    server's context): the output first; the summary says how\n"
    "                    many were clipped and by how much\n"
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

/* What --infer-sessions found: the links, why the other requests start a
 * session of their own, and how long the sessions are. */
static void report_sessions(const struct lt_import_stats *st)
{
    fprintf(stderr,
            "loadtrace import: inferred %" PRIu64 " sessions from prefix blocks; %" PRIu64
            " requests continue an earlier turn; of the rest, %" PRIu64
            " fit two earlier requests equally, %" PRIu64
            " extend one that already has a next turn, %" PRIu64
            " are not longer than the one they extend\n",
            st->chains, st->chained, st->infer_tied, st->infer_branched, st->infer_shorter);
    if (!st->chains)
        return;
    fprintf(stderr, "loadtrace import: turns per session:");
    const char *sep = " ";
    for (int i = 0; i < LT_IMPORT_TURN_BINS; i++) {
        uint64_t lo = (uint64_t)1 << i, hi = ((uint64_t)1 << (i + 1)) - 1;
        if (lo > st->turns_max)
            break;
        if (i == LT_IMPORT_TURN_BINS - 1)
            fprintf(stderr, "%s%" PRIu64 "+: %" PRIu64, sep, lo, st->turns_hist[i]);
        else if (lo == hi)
            fprintf(stderr, "%s%" PRIu64 ": %" PRIu64, sep, lo, st->turns_hist[i]);
        else
            fprintf(stderr, "%s%" PRIu64 "-%" PRIu64 ": %" PRIu64, sep, lo, hi, st->turns_hist[i]);
        sep = ", ";
    }
    fprintf(stderr, "; longest %" PRIu32 ", mean %.2f\n", st->turns_max,
            (double)(st->chains + st->chained) / (double)st->chains);
}

static int import_run(const struct import_opts *o)
{
    struct lt_err err = {0};
    struct lt_import_stats st = {0}; /* an input that cannot be opened fills none of it */
    struct lt_writer_opts wo = {.level = o->level};
    int rc = lt_import_file(o->in, o->out, &o->lib, &wo, &st, &err);
    if (rc < 0) {
        cli_error("import", "%s", err.msg);
        /* A file is removed on failure; standard output cannot be taken
         * back, and it holds a readable trace of what was read. */
        if (!strcmp(o->out, "-"))
            cli_error("import",
                      "standard output has the %" PRIu64 " records read before the error, "
                      "as a readable trace cut at the error",
                      st.records);
        else if (st.records || st.skipped)
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
        if (o->lib.max_context)
            fprintf(stderr,
                    "loadtrace import: --max-context %u: %" PRIu64 " records clipped, by %" PRIu64
                    " prompt and %" PRIu64 " output tokens\n",
                    o->lib.max_context, st.clipped, st.clipped_in, st.clipped_out);
        if (o->lib.infer_sessions)
            report_sessions(&st);
    }
    return 0;
}

/* Its options: getopt_long's table, which the completions and the
 * "did you mean" of a mistyped option read too (cli/commands.h). */
const struct option cmd_import_options[] = {{"from", required_argument, NULL, 'f'},
                                            {"output", required_argument, NULL, 'o'},
                                            {"sort", no_argument, NULL, 's'},
                                            {"skip-bad", no_argument, NULL, 'k'},
                                            {"block-tokens", required_argument, NULL, 'b'},
                                            {"map", required_argument, NULL, 'm'},
                                            {"infer-sessions", no_argument, NULL, 'I'},
                                            {"max-context", required_argument, NULL, 'C'},
                                            {"level", required_argument, NULL, 'L'},
                                            {"quiet", no_argument, NULL, 'q'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};

int cmd_import(int argc, char **argv)
{
    struct import_opts o = {.lib = {.on_skip = on_skip}, .level = 19};
    bool have_from = false;
    int c;
    uint64_t u;
    while ((c = getopt_long(argc, argv, "o:qh", cmd_import_options, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (lt_import_format_parse(optarg, &o.lib.format) < 0) {
                cli_error("import",
                          "--from %s: not a format (azure, burstgpt, mooncake, "
                          "jsonl, csv, tracelab, tracelab-jsonl)",
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
            if (!cli_parse_u64_in("import", "--block-tokens", optarg, 1, UINT32_MAX, &u))
                return 2;
            o.lib.block_tokens = (uint32_t)u;
            break;
        case 'C':
            if (!cli_parse_u64_in("import", "--max-context", optarg, 1, UINT32_MAX, &u))
                return 2;
            o.lib.max_context = (uint32_t)u;
            break;
        case 'I':
            o.lib.infer_sessions = true;
            break;
        case 'm':
            o.lib.map = optarg;
            break;
        case 'L':
            if (!cli_parse_u64_in("import", "--level", optarg, 1, 19, &u))
                return 2;
            o.level = (int)u;
            break;
        case 'q':
            o.quiet = true;
            break;
        case 'h':
            fputs(import_usage, stdout);
            return 0;
        default:
            return cli_bad_option("import", cmd_import_options, argv);
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
    struct lt_err err = {0};
    if (o.lib.map &&
        (lt_import_map_check(o.lib.map, &err) < 0 ||
         (o.lib.format != LT_IMPORT_CSV && o.lib.format != LT_IMPORT_JSONL &&
          lt_errset(&err, LT_EINVAL, "--map goes with --from csv or --from jsonl") < 0))) {
        cli_error("import", "%s", err.msg);
        return 2;
    }
    if (o.lib.format == LT_IMPORT_CSV && !o.lib.map) {
        cli_error("import", "--from csv needs --map KEY=EXPR,... (docs/import.md)");
        return 2;
    }
    o.in = argv[optind];
    o.lib.name = o.in;
    if (cli_dry_run())
        return 0;
    return import_run(&o);
}

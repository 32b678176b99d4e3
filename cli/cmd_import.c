/*
 * loadtrace import: convert a public trace (Azure, BurstGPT, Mooncake) or
 * JSON lines of loadtrace records into a .lt.zst trace. The work is in
 * workload/ (trace_import.c and the format families behind its table);
 * this file parses options and reports.
 */
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "workload/trace_import.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct import_opts {
    const char *in;
    const char *out;
    struct lt_import_opts lib;
    int level;
    bool quiet;
    bool have_from; /* --from was given */
};

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

/* Its options, written once (cli/cli_opts.h): the usage, getopt's table
 * and the completions are made from them. */
static const struct cli_opt import_opts_table[] = {
    {"from", 0, "FORMAT", 'f',
     "azure     Azure LLM inference trace CSV (TIMESTAMP,\n"
     "          ContextTokens, GeneratedTokens)\n"
     "burstgpt  BurstGPT CSV (Timestamp, Model, Request tokens,\n"
     "          Response tokens, ...); rows with 0 response\n"
     "          tokens are marked failed\n"
     "mooncake  Mooncake JSON lines (timestamp in ms,\n"
     "          input_length, output_length, hash_ids)\n"
     "jsonl     loadtrace records as JSON lines, as `loadtrace\n"
     "          cat` prints them (header line optional);\n"
     "          with --map, any JSON lines\n"
     "csv       any CSV with a header line, by --map\n"
     "tracelab  TraceLab's multi-round agent CSV (session_id,\n"
     "          arrival_time, round_idx, prefix_len, input_len,\n"
     "          output_len, tool_wait_after_ms)\n"
     "tracelab-jsonl  TraceLab's per-round agent JSON lines"},
    {"map", 0, "KEY=EXPR,..", 'm',
     "csv, jsonl: which column or field (a.b.c) gives which\n"
     "record key: in=prefix_len+input_len, t=ts:s (units s,\n"
     "ms, us, iso), session=conv_id (any name), ..."},
    {"output", 'o', "OUT", 'o', "the trace to write"},
    {"sort", 0, NULL, 's',
     "sort the input by arrival in memory (default: input out\n"
     "of time order is an error)"},
    {"skip-bad", 0, NULL, 'k',
     "skip rows that cannot be parsed, reporting each one\n"
     "(default: the first bad row is an error)"},
    {"infer-sessions", 0, NULL, 'I',
     "requests with prefix blocks and no session: link each to\n"
     "the earlier request whose blocks it extends, but for a\n"
     "last block that grew (its previous turn), so replay keeps\n"
     "each conversation's turns in order; none where two fit\n"
     "equally. The summary gives the turns per session"},
    {"max-context", 0, "N", 'C',
     "clip each request's prompt plus output to N tokens (a\n"
     "server's context): the output first; the summary says how\n"
     "many were clipped and by how much"},
    {"block-tokens", 0, "N", 'b',
     "jsonl without a header line: tokens per block of the\n"
     "records' \"blocks\" (needed when they have blocks)"},
    {"level", 0, "N", 'L',
     "zstd compression level, 1-19 (default 19: import runs\n"
     "once and the file is kept, so it pays to compress hard)"},
    {"quiet", 'q', NULL, 'q', "no summary line"},
    {0}};

const struct cli_spec cmd_import_spec = {
    .cmd = "import",
    .synopsis = "usage: loadtrace import --from FORMAT FILE -o OUT.lt.zst [--map KEY=EXPR,...]\n"
                "\n"
                "Convert a trace into a loadtrace file. FILE may be - for standard input,\n"
                "OUT may be - for standard output. docs/import.md says how each format's\n"
                "columns map to record keys.\n"
                "\n",
    .opts = import_opts_table,
    .col = 20,
    .epilogue = "The summary on stderr gives the records written, how many are marked\n"
                "failed, bad rows skipped, and the span from the first to the last arrival.\n",
};

static int import_opt(void *ud, int id, char *arg)
{
    struct import_opts *o = ud;
    uint64_t u;
    switch (id) {
    case 'f':
        if (lt_import_format_parse(arg, &o->lib.format) < 0) {
            cli_error("import",
                      "--from %s: not a format (azure, burstgpt, mooncake, "
                      "jsonl, csv, tracelab, tracelab-jsonl)",
                      arg);
            return 2;
        }
        o->have_from = true;
        break;
    case 'o':
        o->out = arg;
        break;
    case 's':
        o->lib.sort = true;
        break;
    case 'k':
        o->lib.skip_bad = true;
        break;
    case 'b':
        if (!cli_parse_u64_in("import", "--block-tokens", arg, 1, UINT32_MAX, &u))
            return 2;
        o->lib.block_tokens = (uint32_t)u;
        break;
    case 'C':
        if (!cli_parse_u64_in("import", "--max-context", arg, 1, UINT32_MAX, &u))
            return 2;
        o->lib.max_context = (uint32_t)u;
        break;
    case 'I':
        o->lib.infer_sessions = true;
        break;
    case 'm':
        o->lib.map = arg;
        break;
    case 'L':
        if (!cli_parse_u64_in("import", "--level", arg, 1, 19, &u))
            return 2;
        o->level = (int)u;
        break;
    case 'q':
        o->quiet = true;
        break;
    }
    return 0;
}

int cmd_import(int argc, char **argv)
{
    struct import_opts o = {.lib = {.on_skip = on_skip}, .level = 19};
    int rc = cli_opts_parse(&cmd_import_spec, argc, argv, import_opt, &o);
    if (rc >= 0)
        return rc;
    if (!o.have_from || !o.out || optind != argc - 1) {
        cli_error("import", "%s",
                  !o.have_from ? "--from FORMAT is required"
                  : !o.out     ? "-o OUT.lt.zst is required"
                               : "one input FILE is required");
        cli_opts_usage(&cmd_import_spec, stderr);
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

/*
 * Import of public LLM request traces into loadtrace records: the Azure LLM
 * inference traces (CSV), BurstGPT (CSV), Mooncake (JSON lines) and
 * loadtrace's own record schema as JSON lines (what `loadtrace cat`
 * prints), so that anything can be converted with jq. docs/import.md says
 * which source column becomes which record key, and what is assumed.
 *
 * Parsing is separate from writing: the parser hands a header and then
 * records, in arrival order, to a sink, and works on a FILE* or on bytes in
 * memory, so it can be fuzzed and tested without files. lt_import_file() is
 * the whole job: parse, and write a .lt.zst file.
 *
 * Arrival times: for Azure, BurstGPT and Mooncake, t is the time since the
 * first request (the first row, or the earliest with sort). JSON lines keep
 * their t unchanged. Input out of time order is an error naming the line,
 * unless `sort` is set: then every record is held in memory (up to
 * max_sort_bytes) and sorted, ties kept in input order.
 *
 * Bad input: every error names the input, the line and what was wrong.
 * With skip_bad, a row that cannot be parsed is reported through on_skip
 * and counted, and reading goes on; errors that are not about one row
 * (no header, a missing column, input out of order, I/O) still stop.
 */
#ifndef LT_TRACE_IMPORT_H
#define LT_TRACE_IMPORT_H

#include "base/lt_err.h"
#include "traces/trace_format.h"
#include "traces/trace_writer.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum lt_import_format {
    LT_IMPORT_AZURE = 1,
    LT_IMPORT_BURSTGPT = 2,
    LT_IMPORT_MOONCAKE = 3,
    LT_IMPORT_JSONL = 4,
    LT_IMPORT_CSV = 5,            /* any CSV, by a map (opts.map) */
    LT_IMPORT_TRACELAB = 6,       /* TraceLab's multi-round agent CSV */
    LT_IMPORT_TRACELAB_JSONL = 7, /* TraceLab's per-round agent JSON lines */
};

/* "azure", "burstgpt", "mooncake", "jsonl", "csv", "tracelab",
 * "tracelab-jsonl" to the enum; 0 or LT_EINVAL. */
int lt_import_format_parse(const char *s, enum lt_import_format *f);
const char *lt_import_format_name(enum lt_import_format f);

struct lt_import_opts {
    enum lt_import_format format;
    const char *name;      /* the input's name, for messages; its base name goes to meta */
    bool sort;             /* sort by arrival in memory instead of failing */
    bool skip_bad;         /* skip rows that cannot be parsed (each one reported) */
    uint32_t block_tokens; /* JSON lines without a header line: tokens per
                            * block (0 = unknown; records with blocks are then
                            * an error) */
    const char *map;       /* csv, jsonl: KEY=EXPR,... (docs/import.md), or NULL */
    uint32_t max_context;  /* clip in + out to this many tokens; 0 = no */
    bool infer_sessions;   /* link a request without a session to the earlier
                            * one whose blocks it extends, but for a last
                            * block that grew (its previous turn) */
    size_t max_line;       /* longest line or CSV record; 0 = 64 MiB */
    size_t max_sort_bytes; /* memory for sort; 0 = 4 GiB */
    void (*on_skip)(void *ud, const char *msg); /* may be NULL */
    void *ud;
};

/* Whether spec is a valid --map (0), or LT_EINVAL with err saying why. */
int lt_import_map_check(const char *spec, struct lt_err *err);

/* Bins of the turns-per-session distribution: bin i holds the sessions of
 * 2^i to 2^(i+1) - 1 turns, the last one all longer. */
#define LT_IMPORT_TURN_BINS 8

struct lt_import_stats {
    uint64_t records;                         /* handed to the sink */
    uint64_t failed;                          /* of which marked failed (LT_HAS_FAILED) */
    uint64_t skipped;                         /* bad rows skipped (skip_bad) */
    int64_t first_t, last_t;                  /* arrival of the first and the last record, us */
    uint64_t in_sum, out_sum;                 /* prompt and output tokens of the records */
    uint64_t chains;                          /* infer_sessions: sessions made (chains of turns) */
    uint64_t chained;                         /* ... requests linked to an earlier turn, and of
                                               * those that start a session of their own: */
    uint64_t infer_tied;                      /* two earlier requests fit equally */
    uint64_t infer_branched;                  /* the one they extend already has a next turn */
    uint64_t infer_shorter;                   /* their prompt is not longer than that one's */
    uint64_t turns_hist[LT_IMPORT_TURN_BINS]; /* sessions of 1, 2-3, 4-7, ...,
                                               * 128 or more turns */
    uint32_t turns_max;                       /* turns of the longest session */
    uint64_t clipped;                         /* max_context: records clipped ... */
    uint64_t clipped_in;                      /* ... prompt tokens taken off ... */
    uint64_t clipped_out;                     /* ... and output tokens taken off */
};

/* Where parsed values go. header is called once, before the first record
 * (also when there are no records); values are valid only during the call.
 * A negative return stops the import with that code (fill err). */
struct lt_import_sink {
    int (*header)(void *ud, const struct lt_header *h, struct lt_err *err);
    int (*record)(void *ud, const struct lt_record *r, struct lt_err *err);
    void *ud;
};

/* Parse in (read to its end; not closed) or len bytes at data, and hand
 * everything to sink. st (may be NULL) is filled in any case. Returns 0 or
 * a negative LT_E* code with err filled. */
int lt_import_stream(FILE *in, const struct lt_import_opts *o, const struct lt_import_sink *sink,
                     struct lt_import_stats *st, struct lt_err *err);
int lt_import_mem(const void *data, size_t len, const struct lt_import_opts *o,
                  const struct lt_import_sink *sink, struct lt_import_stats *st,
                  struct lt_err *err);

/* Import in_path ("-" = standard input) into a new trace file out_path
 * ("-" = standard output) written with wo (may be NULL). Unless wo sets
 * frame_ms, frames close by count and size only, never by the clock: the
 * same input gives the same bytes however fast it is read. On failure a
 * partly written out_path is removed. */
int lt_import_file(const char *in_path, const char *out_path, const struct lt_import_opts *o,
                   const struct lt_writer_opts *wo, struct lt_import_stats *st, struct lt_err *err);

#endif

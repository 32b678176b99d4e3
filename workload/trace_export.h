/*
 * Export of loadtrace traces into other tools' formats, so a trace can be
 * replayed by them: Mooncake's JSON lines (the common exchange format of
 * trace replayers: timestamp in integer milliseconds, input_length,
 * output_length, hash_ids of 512-token prompt blocks) and loadtrace's own
 * JSON lines (what `cat` prints, of traces and results files alike, and
 * `import --from jsonl` reads back).
 *
 * Mooncake's format has room for less than a loadtrace record; what is
 * kept, what is made up and what is dropped is in docs/import.md:
 *  - timestamp is t rounded to the nearest millisecond;
 *  - hash_ids are the record's blocks when the trace's blocks are 512
 *    tokens; blocks of another size are re-cut into 512-token blocks whose
 *    ids are chained hashes of the original blocks they cover (equal id =
 *    equal prefix, as in Mooncake);
 *  - a record without blocks gets ceil(in / 512) ids used nowhere else, so
 *    a replayer sees no prefix reuse for it (sequential numbers from 0 when
 *    the trace has no blocks at all, else 64-bit hashes of the record's
 *    index);
 *  - every other key is dropped; a record without `in` or `out` is an
 *    error.
 */
#ifndef LT_TRACE_EXPORT_H
#define LT_TRACE_EXPORT_H

#include "base/lt_buf.h"
#include "base/lt_err.h"
#include "traces/trace_format.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum lt_export_format {
    LT_EXPORT_MOONCAKE = 1,
    LT_EXPORT_JSONL = 2,
};

/* "mooncake", "jsonl" to the enum; 0 or LT_EINVAL. */
int lt_export_format_parse(const char *s, enum lt_export_format *f);

/* Where an export stopped: reading the input, encoding a value, or
 * writing the output. */
enum lt_export_fault {
    LT_EXPORT_FAULT_NONE = 0,
    LT_EXPORT_FAULT_READ,
    LT_EXPORT_FAULT_ENCODE,
    LT_EXPORT_FAULT_WRITE,
};

struct lt_export_stats {
    enum lt_export_fault fault; /* of an error return */
    uint64_t records;           /* lines written (header excluded) */
    uint64_t fresh;             /* mooncake: records given made-up hash_ids (no blocks) */
    uint64_t recut;             /* mooncake: records whose blocks were re-cut to 512 tokens */
};

/* State of a Mooncake export across records (for fresh ids). */
struct lt_mooncake_state {
    uint32_t block_tokens; /* of the trace; 0 = the trace has no blocks */
    uint64_t index;        /* records done */
    uint64_t next_fresh;   /* next sequential fresh id */
};

/* Append the Mooncake line of r (with its newline) to out. Returns 0 or
 * a negative code with err filled. */
int lt_export_mooncake_line(struct lt_buf *out, const struct lt_record *r,
                            struct lt_mooncake_state *s, struct lt_export_stats *st,
                            struct lt_err *err);

struct lt_reader;

/* Write the JSON lines of everything r gives (the records of a trace; the
 * runs and results of a results file), after the header's line when header
 * is true, with the keys and units of docs/trace-format.md, to out (not
 * closed). The lines encoded before an error are written too: what was
 * intact is kept. in_name and out_name name the two sides in messages.
 * Returns 0, or a negative LT_E* code with err filled and st->fault set. */
int lt_export_jsonl(struct lt_reader *r, bool header, const char *in_name, FILE *out,
                    const char *out_name, struct lt_export_stats *st, struct lt_err *err);

/* Copy everything the file at in_path holds (records, or runs, results and
 * scrape samples) into a new loadtrace file at out_path ("-" = standard
 * output) under its header (kind, created, source, blocks, meta and
 * unknown keys; the version is the writer's, the lowest that describes
 * what it holds), read with ro (NULL: defaults). With ro->salvage this is
 * the repaired copy of a damaged file: every intact value, in a file that
 * every reader takes whole, whose header counts what was skipped
 * (salvaged_frames, salvaged_bytes, salvaged_values: docs/trace-format.md
 * §1); the input is read twice, the first time to count, and ro->on_skip
 * hears each skip once. A trace in completion order comes out in arrival
 * order (the reader sorts it). out_path must not be in_path (the same file
 * by device and inode). On an error a regular output file is removed
 * (standard output then holds a readable file cut at the error).
 * st->records counts the values written and *rs is the reader's
 * statistics (with salvage, what it skipped). Returns 0, or a negative
 * LT_E* code with err filled and st->fault set. */
struct lt_reader_opts;
struct lt_reader_stats;
int lt_export_copy(const char *in_path, const struct lt_reader_opts *ro, const char *out_path,
                   struct lt_export_stats *st, struct lt_reader_stats *rs, struct lt_err *err);

/* Export the trace at in_path ("-" = standard input) to out (not closed).
 * st may be NULL. Returns 0 or a negative code with err filled. */
int lt_export_file(const char *in_path, enum lt_export_format f, FILE *out, const char *out_name,
                   struct lt_export_stats *st, struct lt_err *err);

/* Export the trace at in_path ("-" = standard input) into the file
 * out_path (NULL or "-" = standard output), which must not be the input. On
 * failure a partly written out_path is removed: half a file would look like
 * a whole one. st may be NULL. Returns 0 or a negative code with err
 * filled. */
int lt_export_path(const char *in_path, enum lt_export_format f, const char *out_path,
                   struct lt_export_stats *st, struct lt_err *err);

#endif

/*
 * Export of loadtrace traces into other tools' formats, so a trace can be
 * replayed by them: Mooncake's JSON lines (the common exchange format of
 * trace replayers: timestamp in integer milliseconds, input_length,
 * output_length, hash_ids of 512-token prompt blocks) and loadtrace's own
 * JSON lines (what `cat` prints, and `import --from jsonl` reads back).
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

#include "traces/lt_buf.h"
#include "traces/lt_err.h"
#include "traces/trace_format.h"

#include <stdint.h>
#include <stdio.h>

enum lt_export_format {
    LT_EXPORT_MOONCAKE = 1,
    LT_EXPORT_JSONL = 2,
};

/* "mooncake", "jsonl" to the enum; 0 or LT_EINVAL. */
int lt_export_format_parse(const char *s, enum lt_export_format *f);

struct lt_export_stats {
    uint64_t records; /* lines written (header excluded) */
    uint64_t fresh;   /* mooncake: records given made-up hash_ids (no blocks) */
    uint64_t recut;   /* mooncake: records whose blocks were re-cut to 512 tokens */
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

/* Export the trace at in_path ("-" = standard input) to out (not closed).
 * st may be NULL. Returns 0 or a negative code with err filled. */
int lt_export_file(const char *in_path, enum lt_export_format f, FILE *out, const char *out_name,
                   struct lt_export_stats *st, struct lt_err *err);

#endif

/*
 * Streaming writer of loadtrace files.
 *
 * Records are packed into an uncompressed frame buffer; the frame is
 * compressed and written out (and the stdio buffer flushed to the kernel)
 * when it holds frame_records records or frame_bytes bytes, when a record is
 * added more than frame_ms after the frame was opened, or when the caller
 * asks (lt_writer_flush, lt_writer_tick). A crash therefore loses at most the
 * frame being filled. Memory is bounded by frame_bytes plus one record.
 *
 * Results go into a result block (docs/trace-format.md §2.6): the results
 * of the open frame are kept as columns and written as one value when the
 * frame closes, which makes them several times smaller and faster to read.
 * A result with unknown keys (extra) is written as its own map, after the
 * block so far, and so is every result with `results_v1`. The order of runs
 * and results is kept.
 *
 * Not thread-safe: one writer, one thread.
 */
#ifndef LT_TRACE_WRITER_H
#define LT_TRACE_WRITER_H

#include "base/lt_err.h"
#include "traces/trace_format.h"

#include <stdbool.h>

struct lt_writer;

struct lt_writer_opts {
    int level;              /* zstd level; 0 = default (3) */
    uint32_t frame_records; /* 0 = default (4096) */
    size_t frame_bytes;     /* 0 = default (4 MiB) */
    int64_t frame_ms;       /* 0 = default (1000) */
    bool results_v1;        /* every result as its own map (format version 1; no scrapes) */
    /* Trace records in the order they are put, not by `t` (the header
     * says `order: completion`; readers sort, docs/trace-format.md §2.3):
     * for a recorder that writes each request when it finishes. */
    bool completion_order;
};

/* Create path ("-" = standard output) and write the header. The header's
 * strings are copied; `created` defaults to now. `version` is not taken
 * from hdr: the writer writes the lowest version that describes what it
 * writes (3 for results files, which may hold result blocks and scrape
 * samples; 1 for trace files and results_v1). opts may be NULL.
 * Returns NULL and fills err on failure. */
struct lt_writer *lt_writer_open(const char *path, const struct lt_header *hdr,
                                 const struct lt_writer_opts *opts, struct lt_err *err);

/* Append a value. Nothing passed in is kept after the call returns. The
 * writer checks the kind: records go to trace files, runs and results to
 * results files. Return 0 or a negative LT_E* code. */
int lt_writer_put_record(struct lt_writer *w, const struct lt_record *rec, struct lt_err *err);
int lt_writer_put_run(struct lt_writer *w, const struct lt_run *run, struct lt_err *err);
int lt_writer_put_result(struct lt_writer *w, const struct lt_result *res, struct lt_err *err);
/* A scrape sample (results files only); its values must be finite. */
int lt_writer_put_scrape(struct lt_writer *w, const struct lt_scrape *s, struct lt_err *err);
/* One value a reader handed out (struct lt_item, trace_reader.h), whatever
 * its type: what copies a file value by value (cat --salvage -o, the
 * reader fuzzer's round trip) calls. */
struct lt_item;
int lt_writer_put_item(struct lt_writer *w, const struct lt_item *it, struct lt_err *err);
/* A run's self-check, at its end (results files only); its figures must be
 * finite. */
int lt_writer_put_check(struct lt_writer *w, const struct lt_check *k, struct lt_err *err);
/* A capacity probe's verdict, after its results (results files only); its
 * figures must be finite and its verdict said. */
int lt_writer_put_verdict(struct lt_writer *w, const struct lt_verdict *v, struct lt_err *err);
/* A capacity search's answer, after its last probe (results files only);
 * its figures must be finite and its end said. */
int lt_writer_put_answer(struct lt_writer *w, const struct lt_answer *a, struct lt_err *err);

/* Close the current frame now, if it holds anything. */
int lt_writer_flush(struct lt_writer *w, struct lt_err *err);
/* Close the current frame if it is older than frame_ms; for writers that
 * may sit idle (call it from a timer at least every frame_ms). */
int lt_writer_tick(struct lt_writer *w, struct lt_err *err);

/* Write the last frame, close the file and free the writer (in every case).
 * Returns 0 or a negative code if anything could not be written. */
int lt_writer_close(struct lt_writer *w, struct lt_err *err);

/* Values written so far (header excluded; each result of a block counts
 * as one), and compressed bytes written. */
uint64_t lt_writer_count(const struct lt_writer *w);
/* Values in frames written to the file whole (what a reader, or salvage
 * after a crash, finds), and of them results (*results, if not NULL): less
 * than lt_writer_count by the open frame, or by the frame a write failed
 * on. */
uint64_t lt_writer_on_disk(const struct lt_writer *w, uint64_t *results);
/* True once a write failed: every put and flush since returns LT_EIO with
 * that error (nothing is written after bytes cut short). */
bool lt_writer_failed(const struct lt_writer *w);
uint64_t lt_writer_bytes(const struct lt_writer *w);

/* A result's timeline fitted to the format (docs/trace-format.md 2.5,
 * `thin`): when c[0..n) holds more than LT_RESULT_CHUNKS_MAX chunks, each
 * run of k consecutive ones becomes one, at its last one's time, with
 * their tokens, k the smallest that fits; in place. Returns the count left
 * and sets *thin to k (1: c untouched). */
uint32_t lt_chunks_thin(struct lt_chunk *c, uint32_t n, uint32_t *thin);
/* (its "thin" key, and every other key of a result, are packed by
 * traces/trace_results.h) */

/* Pack a free-form header meta map from n string pairs into out (a raw
 * msgpack map for lt_header.meta). */
struct lt_buf;
int lt_meta_pack(struct lt_buf *out, const char *const *keys, const char *const *vals, size_t n);

/* The string value of key in a meta map as lt_meta_pack writes it (a map
 * of strings; anything else in it is skipped over only when it is a
 * string), copied into buf (n bytes, NUL-terminated). False when absent,
 * not a string, or the map is of another shape. */
bool lt_meta_get(const uint8_t *meta, size_t len, const char *key, char *buf, size_t n);

#endif

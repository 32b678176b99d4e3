/*
 * Streaming reader of loadtrace files.
 *
 * The reader decompresses one zstd frame at a time, verifies it (zstd's
 * content checksum), then hands out its values one by one. Memory is bounded
 * by the limits below whatever the input: a hostile file gets LT_ELIMIT, not
 * an exhausted machine.
 *
 * Errors name the record (0-based index of the value after the header) and
 * the byte offset of its frame in the file. With `salvage`, a damaged frame
 * is skipped (the reader resynchronises on the next frame), every skip is
 * reported through on_skip, and reading goes on; salvage needs a seekable
 * input.
 *
 * Ownership: the header and every item returned belong to the reader. An
 * item is valid until the next lt_reader_next() or lt_reader_close(); copy
 * what you keep.
 */
#ifndef LT_TRACE_READER_H
#define LT_TRACE_READER_H

#include "base/lt_err.h"
#include "traces/trace_format.h"

#include <stdint.h>

struct lt_reader;

struct lt_reader_opts {
    bool salvage;
    /* A trace in completion order (docs/trace-format.md §2.3) is handed
     * out as stored, not sorted into arrival order. */
    bool file_order;
    /* Hard limits; 0 = the default in parentheses. */
    size_t max_record_bytes; /* one value, packed (16 MiB) */
    size_t max_frame_bytes;  /* one frame, decompressed (64 MiB) */
    uint32_t max_array;      /* elements of any array or map (1,000,000) */
    /* Called for each skipped piece in salvage mode; may be NULL. */
    void (*on_skip)(void *ud, const char *what);
    void *ud;
};

enum lt_item_type {
    LT_ITEM_RECORD = 1,  /* trace record (kind "trace") */
    LT_ITEM_RUN = 2,     /* run record (kind "results") */
    LT_ITEM_RESULT = 3,  /* request result (kind "results") */
    LT_ITEM_SCRAPE = 4,  /* metrics scrape sample (kind "results") */
    LT_ITEM_CHECK = 5,   /* a run's self-check, at its end (kind "results") */
    LT_ITEM_VERDICT = 6, /* a capacity probe's verdict, after its results (kind "results") */
    LT_ITEM_ANSWER = 7,  /* a capacity search's answer, after its last probe (kind "results") */
};

struct lt_item {
    enum lt_item_type type;
    uint64_t index;        /* 0-based index of the value after the header */
    uint64_t frame_offset; /* byte offset in the file of the frame holding it */
    union {
        struct lt_record rec;
        struct lt_run run;
        struct lt_result res;
        struct lt_scrape scr;
        struct lt_check chk;
        struct lt_verdict vrd;
        struct lt_answer ans;
    };
    /* The value's raw msgpack bytes, for tools that copy values unchanged;
     * NULL (0) for a result of a result block, which has none of its own. */
    const uint8_t *raw;
    size_t raw_len;
};

struct lt_reader_stats {
    uint64_t values;         /* values returned (header excluded) */
    uint64_t frames;         /* frames read intact */
    uint64_t bytes_in;       /* compressed bytes consumed */
    uint64_t bytes_out;      /* decompressed bytes of intact frames */
    uint64_t skipped_frames; /* salvage: frames dropped */
    uint64_t skipped_bytes;  /* salvage: compressed bytes dropped */
    uint64_t skipped_values; /* salvage: values dropped inside intact frames */
};

/* Open path ("-" = standard input) and read the header. opts may be NULL.
 * Returns NULL and fills err if the file cannot be opened or does not start
 * with a valid header (missing, damaged, or from a newer format version). */
struct lt_reader *lt_reader_open(const char *path, const struct lt_reader_opts *opts,
                                 struct lt_err *err);
/* The same over bytes in memory (not copied: they must outlive the reader). */
struct lt_reader *lt_reader_open_mem(const void *data, size_t len,
                                     const struct lt_reader_opts *opts, struct lt_err *err);

const struct lt_header *lt_reader_header(const struct lt_reader *r);

/* Read the next value (or the next result of a result block: one item per
 * result). Returns 1 and sets *item, 0 at the clean end of the file, or a
 * negative LT_E* code with err filled (the reader cannot go on, except in
 * salvage mode where errors become skips). */
int lt_reader_next(struct lt_reader *r, const struct lt_item **item, struct lt_err *err);

void lt_reader_stats(const struct lt_reader *r, struct lt_reader_stats *st);

/* Close and free; NULL is a no-op. */
void lt_reader_close(struct lt_reader *r);

/* The integer value of `key` among a record's unknown keys (x as the reader
 * gave it, or packed with traces/lt_mp.h). False when the key is absent or
 * its value is not an integer that fits int64. */
bool lt_extra_get_int(const struct lt_extra *x, const char *key, int64_t *v);

/* The string value of `key` in a header's meta map (as the reader gave
 * it): *s (not NUL-terminated; it belongs to the header) and *n bytes.
 * False when there is no meta, the key is absent, or its value is not a
 * string. */
bool lt_meta_get_str(const struct lt_header *h, const char *key, const char **s, size_t *n);

/* The string value of `key` among a record's unknown keys into buf (cut
 * to size - 1 bytes, NUL-terminated). False when the key is absent or its
 * value is not a string. */
bool lt_extra_get_str(const struct lt_extra *x, const char *key, char *buf, size_t size);
/* The same for the index-th element of an array of strings (a run
 * record's "replicas"). False when the key is absent, its value is not an
 * array, it has no such element, or that element is not a string. */
bool lt_extra_get_strs(const struct lt_extra *x, const char *key, uint32_t index, char *buf,
                       size_t size);

/* Append to out the pairs of x (as the reader gave it, or packed with
 * traces/lt_mp.h) whose key is none of keys[0..nk), raw; *n gets how many.
 * For a writer that replaces keys of a header or record it copies. Returns
 * 0 or a negative LT_E* code (out of room). */
struct lt_buf;
int lt_extra_copy_except(const struct lt_extra *x, const char *const *keys, size_t nk,
                         struct lt_buf *out, uint32_t *n);

/* Open a file that must be of the given kind; a clear error otherwise. */
struct lt_reader *lt_reader_open_kind(const char *path, enum lt_kind kind,
                                      const struct lt_reader_opts *opts, struct lt_err *err);

#endif

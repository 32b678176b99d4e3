/*
 * What the files of the reader share, inside traces/ only: the reader's
 * state, the msgpack scanner and cursor (reader_msgpack.c), the keys and
 * the map decoders (reader_maps.c), and the result blocks
 * (reader_blocks.c). trace_reader.c holds frames, salvage and the public
 * API. The cursor's readers are inline here: they are the decoders' inner
 * loop.
 */
#ifndef LT_READER_INTERNAL_H
#define LT_READER_INTERNAL_H

#include "base/lt_buf.h"
#include "traces/scan_internal.h"
#include "traces/trace_keys.h"
#include "traces/trace_reader.h"

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <zstd.h>

/* A result block that has been checked and is being handed out, one
 * result per lt_reader_next(). */
struct rblock {
    bool on;
    uint32_t n;               /* results in the block */
    uint32_t row;             /* the next one to hand out */
    uint32_t good;            /* results before the first bad one (n when none is) */
    struct lt_err bad;        /* what is wrong with result `good` */
    const uint8_t *col[BC_N]; /* each column's next element; NULL: column absent */
    uint64_t prev_i;          /* i and sched of the result before */
    int64_t prev_sched;
    bool quick_ready;
    uint8_t quick[8][256]; /* quick_len() by enum bkind and lead byte */
};

struct lt_reader {
    FILE *f;
    char *path;
    bool seekable;
    struct lt_reader_opts o;
    uint64_t max_elems; /* elements in one value, all arrays and maps together */

    ZSTD_DCtx *dctx;
    uint8_t *in; /* compressed input window */
    size_t in_cap, in_len, in_pos;
    uint64_t in_off; /* file offset of in[0] */
    bool eof;

    struct lt_buf frame; /* the current frame, decompressed and verified */
    size_t pos;          /* next value's offset in frame */
    uint64_t frame_off;  /* file offset where the current frame starts */

    struct lt_buf arena;  /* arrays and strings of the current item */
    struct lt_buf extra;  /* unknown keys of the current item, repacked */
    struct lt_buf hdrbuf; /* the header's strings and meta, kept */

    struct lt_header hdr;
    struct lt_item item;
    struct rblock blk;     /* the result block being handed out */
    struct lt_buf bstr[LT_BSTR_N]; /* a block's err, finish, count, err_body strings, NUL-terminated */
    struct lt_buf boff[LT_BSTR_N]; /* where each starts in bstr (uint32_t each) */
    uint64_t next_index;   /* index of the next value after the header */
    int64_t last_t;        /* trace records must not go back in time ... */
    bool completion_order; /* ... unless the header says `order: completion` */
    struct lt_reader_stats st;
    bool failed;
};

/* ---- a cursor over one scanned value ---------------------------------- */

/* Reads msgpack straight from the bytes of a value that lt__rd_scan_value() has
 * accepted: every header and payload lies inside the value, so the cursor
 * needs no bounds checks as long as it follows the same grammar. Nothing is
 * allocated; strings come back as pointer and length into the frame. */
struct cur {
    const uint8_t *p;
};

/* Integers, as msgpack-c classifies them: a non-negative value is
 * "positive" whatever its encoding (int8..int64 included). Returns 1 with
 * *u for a non-negative value, -1 with *s for a negative one, 0 (nothing
 * consumed) when the value is not an integer. */
static inline int lt__rd_int(struct cur *c, uint64_t *u, int64_t *s)
{
    uint8_t b = c->p[0];
    int64_t x;
    if (b <= 0x7f) {
        c->p++;
        *u = b;
        return 1;
    }
    if (b >= 0xe0) {
        c->p++;
        *s = (int64_t)b - 256;
        return -1;
    }
    switch (b) {
    case 0xcc:
        *u = c->p[1];
        c->p += 2;
        return 1;
    case 0xcd:
        *u = lt__rd_be(c->p + 1, 2);
        c->p += 3;
        return 1;
    case 0xce:
        *u = lt__rd_be(c->p + 1, 4);
        c->p += 5;
        return 1;
    case 0xcf:
        *u = lt__rd_be(c->p + 1, 8);
        c->p += 9;
        return 1;
    case 0xd0:
        x = (int8_t)c->p[1];
        c->p += 2;
        break;
    case 0xd1:
        x = (int16_t)(uint16_t)lt__rd_be(c->p + 1, 2);
        c->p += 3;
        break;
    case 0xd2:
        x = (int32_t)(uint32_t)lt__rd_be(c->p + 1, 4);
        c->p += 5;
        break;
    case 0xd3:
        x = (int64_t)lt__rd_be(c->p + 1, 8);
        c->p += 9;
        break;
    default:
        return 0;
    }
    if (x >= 0) {
        *u = (uint64_t)x;
        return 1;
    }
    *s = x;
    return -1;
}

/* A string's bytes; false (nothing consumed) when the value is not a str
 * (bin is not a string, as for msgpack-c). */
static inline bool lt__rd_str(struct cur *c, const uint8_t **s, uint32_t *n)
{
    uint8_t b = c->p[0];
    int k;
    if (b >= 0xa0 && b <= 0xbf) {
        *n = b & 0x1f;
        *s = c->p + 1;
        c->p += 1 + *n;
        return true;
    }
    switch (b) {
    case 0xd9:
        k = 1;
        break;
    case 0xda:
        k = 2;
        break;
    case 0xdb:
        k = 4;
        break;
    default:
        return false;
    }
    *n = (uint32_t)lt__rd_be(c->p + 1, k);
    *s = c->p + 1 + k;
    c->p += 1 + k + *n;
    return true;
}

/* An array's (or a map's) element count; false when it is not one. */
static inline bool lt__rd_coll(struct cur *c, bool map, uint32_t *n)
{
    uint8_t b = c->p[0];
    uint8_t fix = map ? 0x80 : 0x90, b16 = map ? 0xde : 0xdc;
    if ((b & 0xf0) == fix) {
        *n = b & 0x0f;
        c->p++;
    } else if (b == b16) {
        *n = (uint32_t)lt__rd_be(c->p + 1, 2);
        c->p += 3;
    } else if (b == b16 + 1) {
        *n = (uint32_t)lt__rd_be(c->p + 1, 4);
        c->p += 5;
    } else {
        return false;
    }
    return true;
}

void lt__rd_skip_value(struct cur *c);

/* ---- map decoders (reader_maps.c; keys: trace_schema.h) ---------------- */

/* decode_result() found "rec": "run": decode the value again as a run. */
#define DEC_IS_RUN 1
/* decode_result() found "rec": "block": the value is a result block. */
#define DEC_IS_BLOCK 2
/* decode_result() found "rec": "scrape": decode the value as a scrape. */
#define DEC_IS_SCRAPE 3
/* decode_result() found "rec": "check": decode the value as a self-check. */
#define DEC_IS_CHECK 4
/* decode_result() found "rec": "verdict": decode the value as a verdict. */
#define DEC_IS_VERDICT 5
/* decode_result() found "rec": "answer": decode the value as an answer. */
#define DEC_IS_ANSWER 6

/* "record N (frame at byte B)" for the value being read (trace_reader.c). */
const char *lt__rd_what(struct lt_reader *r, char buf[96]);

/* Decode the value at it->raw into *it (0, DEC_IS_BLOCK, or a negative
 * code with err filled). */
int lt__rd_decode_value(struct lt_reader *r, struct lt_item *it, struct lt_err *err);

/* Fill r->hdr from the header unpacked in *o (len bytes of the frame). */
int lt__rd_header_of(struct lt_reader *r, const msgpack_object *o, size_t len, struct lt_err *err);

/* ---- result blocks (reader_blocks.c) ---------------------------------- */

int lt__rd_block_begin(struct lt_reader *r, const uint8_t *p, const uint8_t *end, size_t *len,
                      struct lt_err *err);
/* The next result of the block, in r->item: 1, 0 at its end, or the
 * error kept for a bad result. It is static, and called once (from
 * lt_reader_next()): the four files are compiled as one unit
 * (traces/CMakeLists.txt), so the compiler inlines this, the reader's
 * common case, as it did when they were one file (callgrind: 3 % more
 * instructions per result read otherwise). */
static int lt__rd_block_next(struct lt_reader *r, struct lt_err *err);

/* Whether the value at p starts as the writer begins a block (a map whose
 * first key is "rec" with the value "block"): then it is checked by
 * lt__rd_block_begin() alone, with no lt__rd_scan_value() first. */
static inline bool lt__rd_looks_like_block(const uint8_t *p, size_t avail)
{
    static const uint8_t head[] = {0xa3, 'r', 'e', 'c', 0xa5, 'b', 'l', 'o', 'c', 'k'};
    size_t h = (p[0] & 0xf0) == 0x80 ? 1 : p[0] == 0xde ? 3 : 0;
    return h && avail >= h + sizeof head && memcmp(p + h, head, sizeof head) == 0;
}

#endif

/*
 * Streaming reader of loadtrace files (see trace_reader.h for the contract
 * and docs/trace-format.md for the bytes).
 *
 * Reading goes frame by frame:
 *
 *   read compressed bytes --ZSTD_decompressStream--> frame buffer
 *        (until the frame ends and its checksum is verified)
 *   frame buffer --scan (limits)--> one value's bytes --decode--> struct lt_item
 *   frame buffer --block_begin (limits, types)--> result block
 *        --block_next, one result per call--> struct lt_item
 *
 * No value is handed out before its whole frame has been verified, so a
 * damaged frame never yields garbage. Before a value is decoded, a small
 * scanner walks its bytes and enforces the limits (size, depth, element
 * counts), so a hostile length never reaches an allocation, and the decoder
 * after it can read without bounds checks.
 *
 * Why values are decoded straight from the frame bytes: the reader used to
 * msgpack_unpack() each value into a zone (a msgpack_object tree), then walk
 * the tree comparing keys with strlen/memcmp. perf put 38 % of the reading
 * time in msgpack-c, 35 % in that walk and the scan, 21 % in zstd. Now a
 * cursor reads the scanned bytes once: keys are dispatched by length, first
 * byte, then memcmp; strings are copied into the arena (NUL-terminated, as
 * before); unknown keys are copied as their raw bytes; nothing is built.
 * Measured on the bench machine (2-core EPYC VM, one core; old and new
 * readers linked into the same benchmarks and run alternately, 2026-11-29;
 * bench/README.md has the tables):
 *
 *   result records (15 keys), reader alone   1.11-1.32 M/s -> 2.28-2.46 M/s
 *   result records with 8 chunks             0.78-0.80 M/s -> 1.35-1.51 M/s
 *   trace records (t, in, out)               4.4-5.2 M/s   -> 5.5-10.3 M/s
 *
 * What remained was mostly zstd (~37 %: a result record is ~140 bytes
 * decompressed), the scan (~20 %: its cost is the chain from one value's
 * first byte to the next value's address) and the decoder (~30 %).
 * msgpack-c is still what writes (trace_writer.c), renders unknown keys as
 * JSON (trace_json.c), and reads the header, once per file.
 *
 * Result blocks (format version 2) are what made results cheap to read:
 * ~40 bytes of small integers per result instead of ~140 bytes of map, and
 * no key to dispatch per value. A block is checked in one pass that takes
 * the scan's place (block_begin: every element's type and range, bounds,
 * limits, where each column starts, the first bad result); its results are
 * then built one per call from the columns, unchecked (block_next), so a
 * block never needs memory in proportion to its results. Same benchmark,
 * 2026-11-29: reader alone 2.4 M results/s (maps) -> 6.5-6.9 M/s
 * (blocks); bench/README.md has the tables.
 *
 * Checking a column means walking it: where element j + 1 starts is known
 * only once element j's lead byte is read, a chain of loads. So the writer
 * states each column's size (`bytes`); block_begin then jumps from column
 * to column and checks row by row (ck_rows), element j of every column
 * before element j + 1, chains the CPU runs side by side. Blocks without
 * `bytes` are walked column by column, as before. With that, inline
 * decoding of every integer encoding and the writer's stored (not
 * Huffman-coded) literals, the reader alone went from 6.3 to 10.4 M
 * results/s (bench/README.md, stop 11).
 */
#include "traces/trace_reader.h"
#include "traces/lt_buf.h"
#include "traces/trace_keys.h"

#include <errno.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define MAX_RECORD_DEFAULT (16u << 20)
#define MAX_FRAME_DEFAULT (64u << 20)
#define MAX_ARRAY_DEFAULT 1000000u
#define MAX_DEPTH 32
#define WINDOW_LOG_MAX 24 /* 16 MiB decoder window, whatever the frame asks */
#define ZSTD_MAGIC 0xFD2FB528u

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
    uint8_t *in;        /* compressed input window */
    size_t in_cap, in_len, in_pos;
    uint64_t in_off;    /* file offset of in[0] */
    bool eof;

    struct lt_buf frame;   /* the current frame, decompressed and verified */
    size_t pos;            /* next value's offset in frame */
    uint64_t frame_off;    /* file offset where the current frame starts */

    struct lt_buf arena;   /* arrays and strings of the current item */
    struct lt_buf extra;   /* unknown keys of the current item, repacked */
    struct lt_buf hdrbuf;  /* the header's strings and meta, kept */

    struct lt_header hdr;
    struct lt_item item;
    struct rblock blk;     /* the result block being handed out */
    struct lt_buf bstr[3]; /* a block's err, finish, count strings, NUL-terminated */
    struct lt_buf boff[3]; /* where each starts in bstr (uint32_t each) */
    uint64_t next_index;   /* index of the next value after the header */
    int64_t last_t;        /* trace records must not go back in time */
    struct lt_reader_stats st;
    bool failed;
};

/* ---- input ------------------------------------------------------------ */

static uint64_t cur_off(const struct lt_reader *r)
{
    return r->in_off + r->in_pos;
}

/* Refill the input window; returns bytes now available (0 = end of file). */
static int fill(struct lt_reader *r, struct lt_err *err)
{
    if (r->in_pos > 0) {
        memmove(r->in, r->in + r->in_pos, r->in_len - r->in_pos);
        r->in_len -= r->in_pos;
        r->in_off += r->in_pos;
        r->in_pos = 0;
    }
    if (r->eof || r->in_len == r->in_cap)
        return 0;
    size_t n = fread(r->in + r->in_len, 1, r->in_cap - r->in_len, r->f);
    if (n == 0) {
        if (ferror(r->f))
            return lt_errset(err, LT_EIO, "%s: read failed: %s", r->path, strerror(errno));
        r->eof = true;
    }
    r->in_len += n;
    return 0;
}

static int seek_to(struct lt_reader *r, uint64_t off, struct lt_err *err)
{
    if (fseeko(r->f, (off_t)off, SEEK_SET) != 0)
        return lt_errset(err, LT_EIO, "%s: seek failed: %s", r->path, strerror(errno));
    clearerr(r->f);
    r->in_len = r->in_pos = 0;
    r->in_off = off;
    r->eof = false;
    return 0;
}

/* ---- frames ----------------------------------------------------------- */

/* Decompress the next frame into r->frame. Returns 1 when a frame was
 * read, 0 at the clean end of the file, negative on a damaged frame. */
static int read_frame(struct lt_reader *r, struct lt_err *err)
{
    lt_buf_reset(&r->frame);
    r->pos = 0;
    int rc = fill(r, err);
    if (rc < 0)
        return rc;
    if (r->in_len == r->in_pos)
        return 0;
    r->frame_off = cur_off(r);
    ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
    for (;;) {
        if (r->in_pos == r->in_len) {
            if ((rc = fill(r, err)) < 0)
                return rc;
            if (r->in_len == 0)
                return lt_errset(err, LT_ETRUNC,
                                 "%s: truncated: the frame at byte %llu is cut short by the end "
                                 "of the file at byte %llu",
                                 r->path, (unsigned long long)r->frame_off,
                                 (unsigned long long)cur_off(r));
        }
        if (lt_buf_reserve(&r->frame, 1 << 16) < 0)
            return lt_errset(err, LT_ELIMIT,
                             "%s: the frame at byte %llu decompresses to more than %zu bytes",
                             r->path, (unsigned long long)r->frame_off, r->o.max_frame_bytes);
        ZSTD_inBuffer zin = {r->in, r->in_len, r->in_pos};
        ZSTD_outBuffer zout = {r->frame.p, r->frame.cap - 1, r->frame.len};
        size_t z = ZSTD_decompressStream(r->dctx, &zout, &zin);
        r->in_pos = zin.pos;
        r->frame.len = zout.pos;
        if (ZSTD_isError(z))
            return lt_errset(err, LT_EFORMAT, "%s: the frame at byte %llu is corrupt (%s)",
                             r->path, (unsigned long long)r->frame_off, ZSTD_getErrorName(z));
        if (r->frame.len > r->o.max_frame_bytes)
            return lt_errset(err, LT_ELIMIT,
                             "%s: the frame at byte %llu decompresses to more than %zu bytes",
                             r->path, (unsigned long long)r->frame_off, r->o.max_frame_bytes);
        if (z == 0) { /* frame complete, checksum verified */
            r->st.frames++;
            r->st.bytes_out += r->frame.len;
            r->st.bytes_in = cur_off(r);
            return 1;
        }
    }
}

/* Salvage: find the next zstd magic number after the damaged frame and
 * continue there. Returns 1 when one was found, 0 at the end of file. */
static int resync(struct lt_reader *r, struct lt_err *err)
{
    uint64_t bad = r->frame_off;
    int rc = seek_to(r, bad + 1, err);
    if (rc < 0)
        return rc;
    for (;;) {
        if ((rc = fill(r, err)) < 0)
            return rc;
        size_t avail = r->in_len - r->in_pos;
        if (avail < 4) {
            if (r->eof) {
                r->st.skipped_bytes += cur_off(r) + avail - bad;
                r->in_pos = r->in_len;
                return 0;
            }
            continue;
        }
        for (size_t i = r->in_pos; i + 4 <= r->in_len; i++) {
            uint32_t m = (uint32_t)r->in[i] | (uint32_t)r->in[i + 1] << 8 |
                         (uint32_t)r->in[i + 2] << 16 | (uint32_t)r->in[i + 3] << 24;
            if (m == ZSTD_MAGIC) {
                r->in_pos = i;
                r->st.skipped_bytes += cur_off(r) - bad;
                return 1;
            }
        }
        r->in_pos = r->in_len - 3; /* the magic may straddle the refill */
    }
}

/* ---- scanning: the size of one msgpack value, within limits ----------- */

struct scan {
    const uint8_t *p;
    size_t n, i;
    uint64_t elems, max_elems;
    uint32_t max_array;
    int depth0; /* nesting depth of the value scanned (0: a whole value) */
};

static inline uint64_t be(const uint8_t *p, int k)
{
    uint64_t v = 0;
    for (int j = 0; j < k; j++)
        v = v << 8 | p[j];
    return v;
}

/* Bytes that follow each lead byte in a value of fixed size (ints, floats,
 * nil, bools, fixstr, fixext); -1 for the rest (containers, sized strings,
 * bin and ext, and 0xc1). */
static const int8_t fixed_size[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x00 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x10 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x20 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x30 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x40 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x50 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x60 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x70 */
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, /* 0x80 */
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, /* 0x90 */
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, /* 0xa0 */
    16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, /* 0xb0 */
    0, -1, 0, 0, -1, -1, -1, -1, -1, -1, 4, 8, 1, 2, 4, 8, /* 0xc0 */
    1, 2, 4, 8, 2, 3, 5, 9, 17, -1, -1, -1, -1, -1, -1, -1, /* 0xd0 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xe0 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xf0 */
};

/* Find the end of the value at s->p + s->i (setting s->i past it), or
 * return LT_ETRUNC (it runs past s->n), LT_ELIMIT (a container holds more
 * than max_array elements, the value more than max_elems in all, or values
 * nest deeper than MAX_DEPTH) or LT_EFORMAT (0xc1). Iterative, with the
 * number of elements still to see at each open level on a small stack: the
 * order of the checks is the order of the bytes, so the first problem in
 * the value is the one reported. */
static int scan_value(struct scan *s)
{
    uint64_t left[MAX_DEPTH + 1];
    int depth = 0;
    const uint8_t *p = s->p + s->i, *end = s->p + s->n;
    left[0] = 1;
    for (;;) {
        while (left[depth] == 0) {
            if (depth == 0) {
                s->i = (size_t)(p - s->p);
                return 0;
            }
            depth--;
        }
        left[depth]--;
        if (p == end)
            return LT_ETRUNC;
        uint8_t b = *p++;
        uint64_t skip, count;
        int per = 1;
        /* The commonest bytes first, by branches the CPU predicts, so the
         * next value's address need not wait for a table load. */
        if (b <= 0x7f)
            continue;
        if ((b & 0xe0) == 0xa0) {
            if ((size_t)(end - p) < (size_t)(b & 0x1f))
                return LT_ETRUNC;
            p += b & 0x1f;
            continue;
        }
        if (fixed_size[b] >= 0) {
            if ((size_t)(end - p) < (size_t)fixed_size[b])
                return LT_ETRUNC;
            p += fixed_size[b];
            continue;
        }
        if (b <= 0x8f) {
            count = b & 0x0f;
            per = 2;
            goto coll;
        }
        if (b <= 0x9f) {
            count = b & 0x0f;
            goto coll;
        }
        int lenbytes;
        switch (b) {
        case 0xc4: case 0xd9: lenbytes = 1; skip = 0; goto sized;
        case 0xc5: case 0xda: lenbytes = 2; skip = 0; goto sized;
        case 0xc6: case 0xdb: lenbytes = 4; skip = 0; goto sized;
        case 0xc7: lenbytes = 1; skip = 1; goto sized; /* ext: + type byte */
        case 0xc8: lenbytes = 2; skip = 1; goto sized;
        case 0xc9: lenbytes = 4; skip = 1; goto sized;
        case 0xdc: lenbytes = 2; goto sized_coll;
        case 0xdd: lenbytes = 4; goto sized_coll;
        case 0xde: lenbytes = 2; per = 2; goto sized_coll;
        case 0xdf: lenbytes = 4; per = 2; goto sized_coll;
        default: return LT_EFORMAT; /* 0xc1, never used */
        }
    sized:
        if ((size_t)(end - p) < (size_t)lenbytes)
            return LT_ETRUNC;
        skip += be(p, lenbytes);
        p += lenbytes;
        if ((uint64_t)(end - p) < skip)
            return LT_ETRUNC;
        p += skip;
        continue;
    sized_coll:
        if ((size_t)(end - p) < (size_t)lenbytes)
            return LT_ETRUNC;
        count = be(p, lenbytes);
        p += lenbytes;
    coll:
        if (count > s->max_array)
            return LT_ELIMIT;
        count *= (uint64_t)per;
        s->elems += count;
        if (s->elems > s->max_elems)
            return LT_ELIMIT;
        if (count > (uint64_t)(end - p)) /* every element is at least a byte */
            return LT_ETRUNC;
        if (count) {
            if (s->depth0 + depth + 1 > MAX_DEPTH)
                return LT_ELIMIT;
            left[++depth] = count;
        }
    }
}

/* ---- a cursor over one scanned value ---------------------------------- */

/* Reads msgpack straight from the bytes of a value that scan_value() has
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
static inline int rd_int(struct cur *c, uint64_t *u, int64_t *s)
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
    case 0xcc: *u = c->p[1]; c->p += 2; return 1;
    case 0xcd: *u = be(c->p + 1, 2); c->p += 3; return 1;
    case 0xce: *u = be(c->p + 1, 4); c->p += 5; return 1;
    case 0xcf: *u = be(c->p + 1, 8); c->p += 9; return 1;
    case 0xd0: x = (int8_t)c->p[1]; c->p += 2; break;
    case 0xd1: x = (int16_t)(uint16_t)be(c->p + 1, 2); c->p += 3; break;
    case 0xd2: x = (int32_t)(uint32_t)be(c->p + 1, 4); c->p += 5; break;
    case 0xd3: x = (int64_t)be(c->p + 1, 8); c->p += 9; break;
    default: return 0;
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
static inline bool rd_str(struct cur *c, const uint8_t **s, uint32_t *n)
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
    case 0xd9: k = 1; break;
    case 0xda: k = 2; break;
    case 0xdb: k = 4; break;
    default: return false;
    }
    *n = (uint32_t)be(c->p + 1, k);
    *s = c->p + 1 + k;
    c->p += 1 + k + *n;
    return true;
}

/* An array's (or a map's) element count; false when it is not one. */
static inline bool rd_coll(struct cur *c, bool map, uint32_t *n)
{
    uint8_t b = c->p[0];
    uint8_t fix = map ? 0x80 : 0x90, b16 = map ? 0xde : 0xdc;
    if ((b & 0xf0) == fix) {
        *n = b & 0x0f;
        c->p++;
    } else if (b == b16) {
        *n = (uint32_t)be(c->p + 1, 2);
        c->p += 3;
    } else if (b == b16 + 1) {
        *n = (uint32_t)be(c->p + 1, 4);
        c->p += 5;
    } else {
        return false;
    }
    return true;
}

/* Step over one whole value (nested ones included), iteratively. */
static void skip_value(struct cur *c)
{
    uint64_t left = 1;
    while (left) {
        left--;
        uint8_t b = *c->p++;
        if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
            continue;
        if (b <= 0x8f) {
            left += 2u * (b & 0x0f);
            continue;
        }
        if (b <= 0x9f) {
            left += b & 0x0f;
            continue;
        }
        if (b <= 0xbf) {
            c->p += b & 0x1f;
            continue;
        }
        switch (b) {
        case 0xcc: case 0xd0: c->p += 1; break;
        case 0xcd: case 0xd1: c->p += 2; break;
        case 0xca: case 0xce: case 0xd2: c->p += 4; break;
        case 0xcb: case 0xcf: case 0xd3: c->p += 8; break;
        case 0xd4: c->p += 2; break; /* fixext: type byte + data */
        case 0xd5: c->p += 3; break;
        case 0xd6: c->p += 5; break;
        case 0xd7: c->p += 9; break;
        case 0xd8: c->p += 17; break;
        case 0xc4: case 0xd9: c->p += 1 + be(c->p, 1); break;
        case 0xc5: case 0xda: c->p += 2 + be(c->p, 2); break;
        case 0xc6: case 0xdb: c->p += 4 + be(c->p, 4); break;
        case 0xc7: c->p += 1 + 1 + be(c->p, 1); break; /* ext: length, type, data */
        case 0xc8: c->p += 2 + 1 + be(c->p, 2); break;
        case 0xc9: c->p += 4 + 1 + be(c->p, 4); break;
        case 0xdc: left += be(c->p, 2); c->p += 2; break;
        case 0xdd: left += be(c->p, 4); c->p += 4; break;
        case 0xde: left += 2 * be(c->p, 2); c->p += 2; break;
        case 0xdf: left += 2 * be(c->p, 4); c->p += 4; break;
        default: break; /* 0xc1: refused by scan_value */
        }
    }
}

/* ---- keys ------------------------------------------------------------- */

/* Every key any value of format v1 knows, as one number, so a decoder is a
 * switch. Dispatch is by length, then first byte, then the whole key. */
enum key {
    KX_UNKNOWN = 0,
    KX_T, KX_SESSION, KX_TURN, KX_THINK, KX_API, KX_MODEL, KX_IN, KX_CACHED, KX_OUT,
    KX_REASONING, KX_MAX_TOKENS, KX_MSGS, KX_TOOLS, KX_CALLS, KX_BLOCKS, KX_ORIG, KX_STATUS,
    KX_TTFT, KX_E2E, KX_FINISH, KX_TEXT, KX_FAILED, KX_EST,
    KX_REC, KX_RUN, KX_MODE, KX_CONCURRENCY, KX_RATE, KX_SPEED, KX_TARGET, KX_START,
    KX_WARMUP, KX_VERSION,
    KX_I, KX_SCHED, KX_SENT, KX_FB, KX_FT, KX_FC, KX_END, KX_CHUNKS, KX_WANT_IN, KX_WANT_OUT,
    KX_ERR, KX_COUNT, KX_N, KX_BYTES,
};

static enum key key_of(const uint8_t *k, uint32_t n)
{
    /* The length test makes reading past a shorter key impossible; inside
     * a case it is constant and compiles away. */
#define KEY(lit, id)                                                                               \
    if (n == sizeof lit - 1 && k[0] == (uint8_t)lit[0] && memcmp(k, lit, sizeof lit - 1) == 0)  \
    return id
    switch (n) {
    case 1:
        KEY(K_T, KX_T);
        KEY(K_I, KX_I);
        KEY(K_N, KX_N);
        break;
    case 2:
        KEY(K_IN, KX_IN);
        KEY(K_FB, KX_FB);
        KEY(K_FT, KX_FT);
        KEY(K_FC, KX_FC);
        break;
    case 3:
        KEY(K_API, KX_API);
        KEY(K_OUT, KX_OUT);
        KEY(K_E2E, KX_E2E);
        KEY(K_EST, KX_EST);
        KEY(K_REC, KX_REC);
        KEY(K_RUN, KX_RUN);
        KEY(K_END, KX_END);
        KEY(K_ERR, KX_ERR);
        break;
    case 4:
        KEY(K_TURN, KX_TURN);
        KEY(K_MSGS, KX_MSGS);
        KEY(K_ORIG, KX_ORIG);
        KEY(K_TTFT, KX_TTFT);
        KEY(K_TEXT, KX_TEXT);
        KEY(K_MODE, KX_MODE);
        KEY(K_RATE, KX_RATE);
        KEY(K_SENT, KX_SENT);
        break;
    case 5:
        KEY(K_THINK, KX_THINK);
        KEY(K_MODEL, KX_MODEL);
        KEY(K_TOOLS, KX_TOOLS);
        KEY(K_CALLS, KX_CALLS);
        KEY(K_SPEED, KX_SPEED);
        KEY(K_START, KX_START);
        KEY(K_SCHED, KX_SCHED);
        KEY(K_COUNT, KX_COUNT);
        KEY(K_BYTES, KX_BYTES);
        break;
    case 6:
        KEY(K_CACHED, KX_CACHED);
        KEY(K_BLOCKS, KX_BLOCKS);
        KEY(K_STATUS, KX_STATUS);
        KEY(K_FINISH, KX_FINISH);
        KEY(K_FAILED, KX_FAILED);
        KEY(K_TARGET, KX_TARGET);
        KEY(K_WARMUP, KX_WARMUP);
        KEY(K_CHUNKS, KX_CHUNKS);
        break;
    case 7:
        KEY(K_SESSION, KX_SESSION);
        KEY(K_VERSION, KX_VERSION);
        KEY(K_WANT_IN, KX_WANT_IN);
        break;
    case 8:
        KEY(K_WANT_OUT, KX_WANT_OUT);
        break;
    case 9:
        KEY(K_REASONING, KX_REASONING);
        break;
    case 10:
        KEY(K_MAX_TOKENS, KX_MAX_TOKENS);
        break;
    case 11:
        KEY(K_CONCURRENCY, KX_CONCURRENCY);
        break;
    default:
        break;
    }
#undef KEY
    return KX_UNKNOWN;
}

/* ---- decoding values into structs ------------------------------------- */

struct dec {
    struct lt_reader *r;
    struct lt_err *err;
    const char *what; /* "record 12 (frame at byte 345)", made only on error */
    struct cur c;
};

/* decode_result() found "rec": "run": decode the value again as a run. */
#define DEC_IS_RUN 1
/* decode_result() found "rec": "block": the value is a result block. */
#define DEC_IS_BLOCK 2

/* Name the value being decoded, for error messages. Formatting it for every
 * value would cost more than decoding one. */
static const char *what_of(struct lt_reader *r, char buf[96])
{
    snprintf(buf, 96, "record %llu (frame at byte %llu)",
             (unsigned long long)(r->next_index - 1), (unsigned long long)r->frame_off);
    return buf;
}

static int bad(struct dec *d, const char *key, const char *why)
{
    char w[96];
    return lt_errset(d->err, LT_EFORMAT, "%s: %s: key \"%s\" %s", d->r->path,
                     d->what ? d->what : what_of(d->r, w), key, why);
}

static int get_i64_slow(struct dec *d, const char *key, int64_t *v)
{
    uint64_t u = 0;
    int64_t s = 0;
    switch (rd_int(&d->c, &u, &s)) {
    case 1:
        if (u > INT64_MAX)
            return bad(d, key, "is out of range");
        *v = (int64_t)u;
        return 0;
    case -1: *v = s; return 0;
    default: return bad(d, key, "must be an integer");
    }
}

static inline int get_i64(struct dec *d, const char *key, int64_t *v)
{
    uint8_t b = d->c.p[0];
    if (b <= 0x7f) {
        *v = b;
        d->c.p++;
        return 0;
    }
    if (b == 0xce) {
        *v = (int64_t)be(d->c.p + 1, 4);
        d->c.p += 5;
        return 0;
    }
    return get_i64_slow(d, key, v);
}

static int get_u64_slow(struct dec *d, const char *key, uint64_t *v)
{
    int64_t s = 0;
    if (rd_int(&d->c, v, &s) != 1)
        return bad(d, key, "must be a non-negative integer");
    return 0;
}

static inline int get_u64(struct dec *d, const char *key, uint64_t *v)
{
    uint8_t b = d->c.p[0];
    if (b <= 0x7f) {
        *v = b;
        d->c.p++;
        return 0;
    }
    if (b == 0xcd) {
        *v = be(d->c.p + 1, 2);
        d->c.p += 3;
        return 0;
    }
    return get_u64_slow(d, key, v);
}

static inline int get_u32(struct dec *d, const char *key, uint32_t *v)
{
    uint64_t x = 0;
    int rc = get_u64(d, key, &x);
    if (rc < 0)
        return rc;
    if (x > UINT32_MAX)
        return bad(d, key, "is larger than 4294967295");
    *v = (uint32_t)x;
    return 0;
}

static int get_double(struct dec *d, const char *key, double *v)
{
    const uint8_t *p = d->c.p;
    if (p[0] == 0xca) {
        uint32_t bits = (uint32_t)be(p + 1, 4);
        float f;
        memcpy(&f, &bits, sizeof f);
        *v = f;
        d->c.p += 5;
        return 0;
    }
    if (p[0] == 0xcb) {
        uint64_t bits = be(p + 1, 8);
        memcpy(v, &bits, sizeof *v);
        d->c.p += 9;
        return 0;
    }
    uint64_t u = 0;
    int64_t s = 0;
    switch (rd_int(&d->c, &u, &s)) {
    case 1: *v = (double)u; return 0;
    case -1: *v = (double)s; return 0;
    default: return bad(d, key, "must be a number");
    }
}

static int get_bool(struct dec *d, const char *key, bool *v)
{
    uint8_t b = d->c.p[0];
    if (b != 0xc2 && b != 0xc3)
        return bad(d, key, "must be true or false");
    *v = b == 0xc3;
    d->c.p++;
    return 0;
}

/* Bump allocation from the item arena. The arena is sized before decoding
 * (see arena_prepare) so pointers into it stay valid. */
static void *arena_alloc(struct lt_reader *r, size_t n)
{
    size_t a = (r->arena.len + 7) & ~(size_t)7;
    if (a + n > r->arena.cap)
        return NULL;
    r->arena.len = a + n;
    return r->arena.p + a;
}

/* Strings are copied into the arena with a terminator: callers get C
 * strings that live until the next item, as the header promises. */
static int get_str(struct dec *d, const char *key, const char **v, size_t *len)
{
    const uint8_t *s;
    uint32_t n;
    if (!rd_str(&d->c, &s, &n))
        return bad(d, key, "must be a string");
    char *p = arena_alloc(d->r, (size_t)n + 1);
    if (!p)
        return lt_errset(d->err, LT_ENOMEM, "%s: out of memory", d->r->path);
    memcpy(p, s, n);
    p[n] = '\0';
    *v = p;
    if (len)
        *len = n;
    return 0;
}

static int get_array(struct dec *d, const char *key, uint32_t *n)
{
    if (!rd_coll(&d->c, false, n))
        return bad(d, key, "must be an array");
    return 0;
}

/* Keep an unknown key and its value: their bytes, copied as they are, for
 * tools that copy. `key` is where the key starts; the cursor is at the
 * value. */
static int keep_extra(struct dec *d, const uint8_t *key, struct lt_extra *x)
{
    skip_value(&d->c);
    int rc = lt_buf_append(&d->r->extra, key, (size_t)(d->c.p - key));
    if (rc < 0)
        return lt_errset(d->err, rc, "%s: %s: unknown keys too large", d->r->path,
                         what_of(d->r, (char[96]){0}));
    x->n++;
    return 0;
}

static int not_a_string_key(struct dec *d)
{
    return lt_errset(d->err, LT_EFORMAT, "%s: %s has a key that is not a string", d->r->path,
                     what_of(d->r, (char[96]){0}));
}

/* The top-level key at the cursor. A key that is not a string is refused
 * here; decode_value() then names it as the original checks did. */
static inline int get_key(struct dec *d, enum key *id)
{
    const uint8_t *k;
    uint32_t n;
    if (!rd_str(&d->c, &k, &n))
        return not_a_string_key(d);
    *id = key_of(k, n);
    return 0;
}

static int decode_msgs(struct dec *d, struct lt_record *rec)
{
    int rc = 0;
    uint32_t n = 0;
    LT_TRY(get_array(d, K_MSGS, &n));
    struct lt_msg *msgs = arena_alloc(d->r, (size_t)n * sizeof *msgs);
    if (n && !msgs)
        return lt_errset(d->err, LT_ENOMEM, "%s: out of memory", d->r->path);
    for (uint32_t j = 0; j < n; j++) {
        uint32_t two = 0;
        const uint8_t *role;
        uint32_t role_len;
        if (!rd_coll(&d->c, false, &two) || two != 2 || !rd_str(&d->c, &role, &role_len))
            return bad(d, K_MSGS, "must hold [role, tokens] pairs");
        if (role_len > LT_ROLE_MAX)
            return bad(d, K_MSGS, "has a role name longer than 15 bytes");
        memcpy(msgs[j].role, role, role_len);
        msgs[j].role[role_len] = '\0';
        LT_TRY(get_u32(d, K_MSGS, &msgs[j].tokens));
    }
    rec->msgs = msgs;
    rec->n_msgs = n;
    rec->has |= LT_HAS_MSGS;
out:
    return rc;
}

static int decode_orig(struct dec *d, struct lt_record *rec)
{
    int rc = 0;
    uint32_t n = 0;
    if (!rd_coll(&d->c, true, &n))
        return bad(d, K_ORIG, "must be a map");
    for (uint32_t j = 0; j < n; j++) {
        const uint8_t *k;
        uint32_t kn;
        if (!rd_str(&d->c, &k, &kn))
            return bad(d, K_ORIG, "has a key that is not a string");
        int64_t x = 0;
        switch (key_of(k, kn)) {
        case KX_STATUS:
            LT_TRY(get_i64(d, "orig.status", &x));
            if (x < INT32_MIN || x > INT32_MAX)
                return bad(d, "orig.status", "is out of range");
            rec->orig_status = (int32_t)x;
            rec->has |= LT_HAS_ORIG_STATUS;
            break;
        case KX_TTFT:
            LT_TRY(get_i64(d, "orig.ttft", &rec->orig_ttft));
            rec->has |= LT_HAS_ORIG_TTFT;
            break;
        case KX_E2E:
            LT_TRY(get_i64(d, "orig.e2e", &rec->orig_e2e));
            rec->has |= LT_HAS_ORIG_E2E;
            break;
        default: /* other keys of orig are ignored, not kept */
            skip_value(&d->c);
            break;
        }
    }
out:
    return rc;
}

static int decode_record(struct dec *d, uint32_t nkeys, struct lt_record *rec)
{
    int rc = 0;
    bool have_t = false;
    memset(rec, 0, sizeof *rec);
    for (uint32_t i = 0; i < nkeys; i++) {
        const uint8_t *key = d->c.p;
        enum key id = KX_UNKNOWN;
        uint32_t n = 0;
        bool b = false;
        LT_TRY(get_key(d, &id));
        switch (id) {
        case KX_T:
            LT_TRY(get_i64(d, K_T, &rec->t));
            if (rec->t < 0)
                return bad(d, K_T, "must not be negative");
            have_t = true;
            break;
        case KX_SESSION:
            LT_TRY(get_u64(d, K_SESSION, &rec->session));
            rec->has |= LT_HAS_SESSION;
            break;
        case KX_TURN:
            LT_TRY(get_u32(d, K_TURN, &rec->turn));
            rec->has |= LT_HAS_TURN;
            break;
        case KX_THINK:
            LT_TRY(get_i64(d, K_THINK, &rec->think));
            rec->has |= LT_HAS_THINK;
            break;
        case KX_API: LT_TRY(get_str(d, K_API, &rec->api, NULL)); break;
        case KX_MODEL: LT_TRY(get_str(d, K_MODEL, &rec->model, NULL)); break;
        case KX_IN:
            LT_TRY(get_u32(d, K_IN, &rec->in));
            rec->has |= LT_HAS_IN;
            break;
        case KX_CACHED:
            LT_TRY(get_u32(d, K_CACHED, &rec->cached));
            rec->has |= LT_HAS_CACHED;
            break;
        case KX_OUT:
            LT_TRY(get_u32(d, K_OUT, &rec->out));
            rec->has |= LT_HAS_OUT;
            break;
        case KX_REASONING:
            LT_TRY(get_u32(d, K_REASONING, &rec->reasoning));
            rec->has |= LT_HAS_REASONING;
            break;
        case KX_MAX_TOKENS:
            LT_TRY(get_u32(d, K_MAX_TOKENS, &rec->max_tokens));
            rec->has |= LT_HAS_MAX_TOKENS;
            break;
        case KX_MSGS: LT_TRY(decode_msgs(d, rec)); break;
        case KX_TOOLS:
            LT_TRY(get_array(d, K_TOOLS, &n));
            if (n != 2)
                return bad(d, K_TOOLS, "must be [count, tokens]");
            LT_TRY(get_u32(d, K_TOOLS, &rec->tools_count));
            LT_TRY(get_u32(d, K_TOOLS, &rec->tools_tokens));
            rec->has |= LT_HAS_TOOLS;
            break;
        case KX_CALLS: {
            LT_TRY(get_array(d, K_CALLS, &n));
            uint32_t *calls = arena_alloc(d->r, (size_t)n * sizeof *calls);
            if (n && !calls)
                return lt_errset(d->err, LT_ENOMEM, "%s: out of memory", d->r->path);
            for (uint32_t j = 0; j < n; j++)
                LT_TRY(get_u32(d, K_CALLS, &calls[j]));
            rec->calls = calls;
            rec->n_calls = n;
            rec->has |= LT_HAS_CALLS;
            break;
        }
        case KX_BLOCKS: {
            LT_TRY(get_array(d, K_BLOCKS, &n));
            uint64_t *blocks = arena_alloc(d->r, (size_t)n * sizeof *blocks);
            if (n && !blocks)
                return lt_errset(d->err, LT_ENOMEM, "%s: out of memory", d->r->path);
            for (uint32_t j = 0; j < n; j++)
                LT_TRY(get_u64(d, K_BLOCKS, &blocks[j]));
            rec->blocks = blocks;
            rec->n_blocks = n;
            rec->has |= LT_HAS_BLOCKS;
            break;
        }
        case KX_ORIG: LT_TRY(decode_orig(d, rec)); break;
        case KX_FINISH: LT_TRY(get_str(d, K_FINISH, &rec->finish, NULL)); break;
        case KX_TEXT: LT_TRY(get_str(d, K_TEXT, &rec->text, &rec->text_len)); break;
        case KX_FAILED:
            LT_TRY(get_bool(d, K_FAILED, &b));
            if (b)
                rec->has |= LT_HAS_FAILED;
            break;
        case KX_EST:
            LT_TRY(get_bool(d, K_EST, &b));
            if (b)
                rec->has |= LT_HAS_ESTIMATED;
            break;
        default: LT_TRY(keep_extra(d, key, &rec->extra)); break;
        }
    }
    if (!have_t)
        return lt_errset(d->err, LT_EFORMAT, "%s: %s: required key \"t\" is missing", d->r->path,
                         what_of(d->r, (char[96]){0}));
out:
    return rc;
}

static int decode_run(struct dec *d, uint32_t nkeys, struct lt_run *run)
{
    int rc = 0;
    bool have_id = false;
    memset(run, 0, sizeof *run);
    for (uint32_t i = 0; i < nkeys; i++) {
        const uint8_t *key = d->c.p;
        enum key id = KX_UNKNOWN;
        LT_TRY(get_key(d, &id));
        switch (id) {
        case KX_REC: skip_value(&d->c); break;
        case KX_RUN:
            LT_TRY(get_u32(d, K_RUN, &run->id));
            have_id = true;
            break;
        case KX_MODE: LT_TRY(get_str(d, K_MODE, &run->mode, NULL)); break;
        case KX_CONCURRENCY: LT_TRY(get_u32(d, K_CONCURRENCY, &run->concurrency)); break;
        case KX_RATE: LT_TRY(get_double(d, K_RATE, &run->rate)); break;
        case KX_SPEED: LT_TRY(get_double(d, K_SPEED, &run->speed)); break;
        case KX_TARGET: LT_TRY(get_str(d, K_TARGET, &run->target, NULL)); break;
        case KX_MODEL: LT_TRY(get_str(d, K_MODEL, &run->model, NULL)); break;
        case KX_START: LT_TRY(get_str(d, K_START, &run->start, NULL)); break;
        case KX_VERSION: LT_TRY(get_str(d, K_VERSION, &run->version, NULL)); break;
        case KX_WARMUP: LT_TRY(get_u32(d, K_WARMUP, &run->warmup)); break;
        default: LT_TRY(keep_extra(d, key, &run->extra)); break;
        }
    }
    if (!have_id)
        return lt_errset(d->err, LT_EFORMAT, "%s: %s: run record without \"run\"", d->r->path,
                         what_of(d->r, (char[96]){0}));
out:
    return rc;
}

/* Whether the value at the cursor is the string "run"; consumes nothing. */
static bool is_str_run(const struct cur *c)
{
    struct cur t = *c;
    const uint8_t *s;
    uint32_t n;
    return rd_str(&t, &s, &n) && n == 3 && memcmp(s, "run", 3) == 0;
}

static bool is_str_block(const struct cur *c)
{
    struct cur t = *c;
    const uint8_t *s;
    uint32_t n;
    return rd_str(&t, &s, &n) && n == sizeof K_BLOCK - 1 && memcmp(s, K_BLOCK, n) == 0;
}

static int decode_chunks(struct dec *d, uint32_t n, struct lt_result *res)
{
    int rc = 0;
    struct lt_chunk *c = arena_alloc(d->r, (size_t)n * sizeof *c);
    if (n && !c)
        return lt_errset(d->err, LT_ENOMEM, "%s: out of memory", d->r->path);
    int64_t prev = (res->has & LT_RHAS_SENT) ? res->sent : res->sched;
    for (uint32_t j = 0; j < n; j++) {
        int64_t dt = 0;
        LT_TRY(get_i64(d, K_CHUNKS, &dt));
        LT_TRY(get_u32(d, K_CHUNKS, &c[j].tokens));
        /* Wrapping, not undefined, when a hostile file overflows int64. */
        c[j].t = (int64_t)((uint64_t)prev + (uint64_t)dt);
        prev = c[j].t;
    }
    res->chunks = c;
    res->n_chunks = n;
out:
    return rc;
}

/* Returns DEC_IS_RUN, without an error, on "rec": "run". */
static int decode_result(struct dec *d, uint32_t nkeys, struct lt_result *res)
{
    int rc = 0;
    bool have_i = false, have_run = false, have_sched = false;
    const uint8_t *chunks = NULL; /* the first element; decoded once sent is known */
    uint32_t n_chunks = 0;
    memset(res, 0, sizeof *res);
    for (uint32_t i = 0; i < nkeys; i++) {
        const uint8_t *key = d->c.p;
        enum key id = KX_UNKNOWN;
        int64_t x = 0;
        LT_TRY(get_key(d, &id));
        switch (id) {
        case KX_I:
            LT_TRY(get_u64(d, K_I, &res->index));
            have_i = true;
            break;
        case KX_RUN:
            LT_TRY(get_u32(d, K_RUN, &res->run));
            have_run = true;
            break;
        case KX_SCHED:
            LT_TRY(get_i64(d, K_SCHED, &res->sched));
            have_sched = true;
            break;
        case KX_SENT:
            LT_TRY(get_i64(d, K_SENT, &res->sent));
            res->has |= LT_RHAS_SENT;
            break;
        case KX_FB:
            LT_TRY(get_i64(d, K_FB, &res->first_byte));
            res->has |= LT_RHAS_FIRST_BYTE;
            break;
        case KX_FT:
            LT_TRY(get_i64(d, K_FT, &res->first_token));
            res->has |= LT_RHAS_FIRST_TOKEN;
            break;
        case KX_FC:
            LT_TRY(get_i64(d, K_FC, &res->first_content));
            res->has |= LT_RHAS_FIRST_CONTENT;
            break;
        case KX_END:
            LT_TRY(get_i64(d, K_END, &res->end));
            res->has |= LT_RHAS_END;
            break;
        case KX_CHUNKS:
            LT_TRY(get_array(d, K_CHUNKS, &n_chunks));
            if (n_chunks % 2)
                return bad(d, K_CHUNKS, "must hold [dt, tokens] pairs");
            chunks = d->c.p;
            for (uint32_t j = 0; j < n_chunks; j++)
                skip_value(&d->c);
            res->has |= LT_RHAS_CHUNKS;
            break;
        case KX_IN:
            LT_TRY(get_u32(d, K_IN, &res->in));
            res->has |= LT_RHAS_IN;
            break;
        case KX_OUT:
            LT_TRY(get_u32(d, K_OUT, &res->out));
            res->has |= LT_RHAS_OUT;
            break;
        case KX_REASONING:
            LT_TRY(get_u32(d, K_REASONING, &res->reasoning));
            res->has |= LT_RHAS_REASONING;
            break;
        case KX_CACHED:
            LT_TRY(get_u32(d, K_CACHED, &res->cached));
            res->has |= LT_RHAS_CACHED;
            break;
        case KX_WANT_IN:
            LT_TRY(get_u32(d, K_WANT_IN, &res->want_in));
            res->has |= LT_RHAS_WANT_IN;
            break;
        case KX_WANT_OUT:
            LT_TRY(get_u32(d, K_WANT_OUT, &res->want_out));
            res->has |= LT_RHAS_WANT_OUT;
            break;
        case KX_STATUS:
            LT_TRY(get_i64(d, K_STATUS, &x));
            if (x < INT32_MIN || x > INT32_MAX)
                return bad(d, K_STATUS, "is out of range");
            res->status = (int32_t)x;
            res->has |= LT_RHAS_STATUS;
            break;
        case KX_ERR: LT_TRY(get_str(d, K_ERR, &res->err, NULL)); break;
        case KX_FINISH: LT_TRY(get_str(d, K_FINISH, &res->finish, NULL)); break;
        case KX_COUNT: LT_TRY(get_str(d, K_COUNT, &res->count, NULL)); break;
        case KX_WARMUP: LT_TRY(get_bool(d, K_WARMUP, &res->warmup)); break;
        case KX_REC:
            if (is_str_run(&d->c))
                return DEC_IS_RUN;
            if (is_str_block(&d->c))
                return DEC_IS_BLOCK;
            LT_TRY(keep_extra(d, key, &res->extra));
            break;
        default: LT_TRY(keep_extra(d, key, &res->extra)); break;
        }
    }
    if (!have_i || !have_run || !have_sched)
        return lt_errset(d->err, LT_EFORMAT, "%s: %s: result record without \"%s\"", d->r->path,
                         what_of(d->r, (char[96]){0}),
                         !have_i ? K_I : !have_run ? K_RUN : K_SCHED);
    if (chunks) {
        d->c.p = chunks;
        LT_TRY(decode_chunks(d, n_chunks / 2, res));
    }
out:
    return rc;
}

/* ---- values ----------------------------------------------------------- */

/* Check the value at r->pos of the current frame against the limits and
 * find its length. */
static int scan_at(struct lt_reader *r, size_t *len, struct lt_err *err, const char *what)
{
    struct scan s = {.p = (const uint8_t *)r->frame.p + r->pos,
                     .n = r->frame.len - r->pos,
                     .max_elems = r->max_elems,
                     .max_array = r->o.max_array};
    int rc = scan_value(&s);
    if (rc == 0 && s.i > r->o.max_record_bytes)
        rc = LT_ELIMIT;
    if (rc < 0) {
        char wbuf[96];
        if (!what)
            what = what_of(r, wbuf);
        const char *why = rc == LT_ELIMIT    ? "exceeds a reader limit (size, length or depth)"
                          : rc == LT_ETRUNC ? "is cut short (values never span frames)"
                                            : "is not valid msgpack";
        return lt_errset(err, rc == LT_ETRUNC ? LT_EFORMAT : rc,
                         "%s: %s, at offset %zu of the frame's %zu bytes, %s", r->path, what,
                         r->pos, r->frame.len, why);
    }
    *len = s.i;
    return 0;
}

/* Reserve, before decoding, room for everything the value can need, so
 * arena pointers never move during decoding. A value of n bytes has at most
 * n elements, and each becomes at most 24 bytes (struct lt_msg), plus
 * string terminators and alignment. */
static int arena_prepare(struct lt_reader *r, size_t value_len)
{
    lt_buf_reset(&r->arena);
    lt_buf_reset(&r->extra);
    size_t need = value_len * 24 + 64;
    if (r->arena.cap > need)
        return 0;
    return lt_buf_reserve(&r->arena, need);
}

/* Whether every key of the map body at p (n pairs) is a string, and
 * whether one of them is "rec" with the value "run" (or "block"). */
static bool keys_are_strings(const uint8_t *p, uint32_t n, bool *is_run, bool *is_block)
{
    struct cur c = {p};
    *is_run = *is_block = false;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *k;
        uint32_t kn;
        if (!rd_str(&c, &k, &kn))
            return false;
        if (kn == 3 && !memcmp(k, K_REC, 3) && is_str_run(&c))
            *is_run = true;
        if (kn == 3 && !memcmp(k, K_REC, 3) && is_str_block(&c))
            *is_block = true;
        skip_value(&c);
    }
    return true;
}

static int decode_as(struct dec *d, enum lt_item_type type, uint32_t nkeys, struct lt_item *it)
{
    struct lt_reader *r = d->r;
    struct lt_extra *x;
    int rc;
    lt_buf_reset(&r->arena);
    lt_buf_reset(&r->extra);
    it->type = type;
    if (type == LT_ITEM_RECORD) {
        rc = decode_record(d, nkeys, &it->rec);
        x = &it->rec.extra;
    } else if (type == LT_ITEM_RUN) {
        rc = decode_run(d, nkeys, &it->run);
        x = &it->run.extra;
    } else {
        rc = decode_result(d, nkeys, &it->res);
        x = &it->res.extra;
    }
    x->data = (const uint8_t *)r->extra.p;
    x->len = r->extra.len;
    return rc;
}

/* Decode the value at it->raw into *it. A results value is decoded as a
 * result unless it turns out to hold "rec": "run". The checks that look at
 * the whole map first (a key that is not a string, "rec": "run" anywhere)
 * are made again only when decoding failed, so that the error reported is
 * the one they would have given. */
static int decode_value(struct lt_reader *r, struct lt_item *it, struct lt_err *err)
{
    struct dec d = {r, err, NULL, {it->raw}};
    uint32_t nkeys = 0;
    if (!rd_coll(&d.c, true, &nkeys))
        return lt_errset(err, LT_EFORMAT, "%s: %s is not a map", r->path,
                         what_of(r, (char[96]){0}));
    const uint8_t *body = d.c.p;
    bool results = r->hdr.kind != LT_KIND_TRACE;
    int rc = decode_as(&d, results ? LT_ITEM_RESULT : LT_ITEM_RECORD, nkeys, it);
    if (rc == DEC_IS_RUN) {
        d.c.p = body;
        rc = decode_as(&d, LT_ITEM_RUN, nkeys, it);
    }
    if (rc < 0) {
        bool is_run = false, is_block = false;
        if (!keys_are_strings(body, nkeys, &is_run, &is_block))
            return lt_errset(err, LT_EFORMAT, "%s: %s has a key that is not a string", r->path,
                             what_of(r, (char[96]){0}));
        if (results && is_block && !is_run)
            return DEC_IS_BLOCK;
        if (results && is_run && it->type != LT_ITEM_RUN) {
            d.c.p = body;
            rc = decode_as(&d, LT_ITEM_RUN, nkeys, it);
        }
    }
    if (rc == 0 && it->type == LT_ITEM_RECORD) {
        if (it->rec.t < r->last_t)
            return lt_errset(err, LT_EFORMAT,
                             "%s: %s: t=%lld us is earlier than the previous record's "
                             "%lld us; trace records must be in arrival order",
                             r->path, what_of(r, (char[96]){0}), (long long)it->rec.t,
                             (long long)r->last_t);
        r->last_t = it->rec.t;
    }
    return rc;
}

/* ---- result blocks ---------------------------------------------------- */

/* col_int() for the encodings other than fixint and uint 8-32: a call
 * (small enough for col_int() itself to be inlined everywhere), but no
 * longer rd_int()'s general one. Negative ones are common enough: sched
 * deltas of results written as their requests end. */
static uint64_t col_int_rest(const uint8_t **pp)
{
    const uint8_t *p = *pp;
    uint8_t b = p[0];
    if (b >= 0xe0) {
        *pp = p + 1;
        return (uint64_t)((int64_t)b - 256);
    }
    switch (b) {
    case 0xd0: *pp = p + 2; return (uint64_t)(int64_t)(int8_t)p[1];
    case 0xd1: *pp = p + 3; return (uint64_t)(int64_t)(int16_t)(uint16_t)be(p + 1, 2);
    case 0xd2: *pp = p + 5; return (uint64_t)(int64_t)(int32_t)(uint32_t)be(p + 1, 4);
    case 0xcf: /* uint 64 and int 64: the same 8 bytes */
    case 0xd3: *pp = p + 9; return be(p + 1, 8);
    default: *pp = p + 1; return 0; /* not an integer: block_begin lets none through */
    }
}

/* The integer at *pp (checked by block_begin), as 64 bits (two's
 * complement for a negative one). */
static inline uint64_t col_int(const uint8_t **pp)
{
    const uint8_t *p = *pp;
    uint8_t b = p[0];
    if (b <= 0x7f) {
        *pp = p + 1;
        return b;
    }
    if (b == 0xcd) {
        *pp = p + 3;
        return (uint64_t)p[1] << 8 | p[2];
    }
    if (b == 0xce) {
        *pp = p + 5;
        return (uint64_t)p[1] << 24 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 8 | p[4];
    }
    if (b == 0xcc) {
        *pp = p + 2;
        return p[1];
    }
    if (b == 0xd2) { /* int 32: most negative deltas */
        *pp = p + 5;
        return (uint64_t)(int64_t)(int32_t)((uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 |
                                            (uint32_t)p[3] << 8 | p[4]);
    }
    return col_int_rest(pp);
}

/* What a column may hold (docs/trace-format.md §2.6). */
enum bkind {
    BK_DELTA,  /* i, sched: an integer, added modulo 2^64 to the result before's */
    BK_U32R,   /* run: a uint */
    BK_TIME,   /* sent ... end: nil or an integer, added modulo 2^64 to sched */
    BK_CHUNKS, /* nil or [dt, tokens, ...] as in a result map */
    BK_U32,    /* in, out, ...: nil or a uint */
    BK_STATUS, /* nil or an int32 */
    BK_STR,    /* nil, a string, or the number of an earlier string of the column */
    BK_BOOL,   /* nil or a bool */
    BK_N
};
_Static_assert(BK_N <= 8, "struct rblock's quick[] has a row per column kind");

/* What each column may hold. */
static const enum bkind bcol_kind[BC_N] = {
    [BC_I] = BK_DELTA,
    [BC_RUN] = BK_U32R,
    [BC_SCHED] = BK_DELTA,
    [BC_SENT] = BK_TIME,
    [BC_FB] = BK_TIME,
    [BC_FT] = BK_TIME,
    [BC_FC] = BK_TIME,
    [BC_END] = BK_TIME,
    [BC_CHUNKS] = BK_CHUNKS,
    [BC_IN] = BK_U32,
    [BC_OUT] = BK_U32,
    [BC_REASONING] = BK_U32,
    [BC_CACHED] = BK_U32,
    [BC_WANT_IN] = BK_U32,
    [BC_WANT_OUT] = BK_U32,
    [BC_STATUS] = BK_STATUS,
    [BC_ERR] = BK_STR,
    [BC_FINISH] = BK_STR,
    [BC_COUNT] = BK_STR,
    [BC_WARMUP] = BK_BOOL,
};

static int bcol_of(enum key id)
{
    switch (id) {
    case KX_I: return BC_I;
    case KX_RUN: return BC_RUN;
    case KX_SCHED: return BC_SCHED;
    case KX_SENT: return BC_SENT;
    case KX_FB: return BC_FB;
    case KX_FT: return BC_FT;
    case KX_FC: return BC_FC;
    case KX_END: return BC_END;
    case KX_CHUNKS: return BC_CHUNKS;
    case KX_IN: return BC_IN;
    case KX_OUT: return BC_OUT;
    case KX_REASONING: return BC_REASONING;
    case KX_CACHED: return BC_CACHED;
    case KX_WANT_IN: return BC_WANT_IN;
    case KX_WANT_OUT: return BC_WANT_OUT;
    case KX_STATUS: return BC_STATUS;
    case KX_ERR: return BC_ERR;
    case KX_FINISH: return BC_FINISH;
    case KX_COUNT: return BC_COUNT;
    case KX_WARMUP: return BC_WARMUP;
    default: return -1;
    }
}

/* A block is checked in one pass over its bytes, which replaces the scan
 * of scan_value() for it: every read below is bounds-checked against
 * `end`, every count against the limits. The pass finds where each column
 * starts, and the first result (row) that is wrong; the results before it
 * are handed out by block_next() straight from the columns, unchecked. */
struct bcheck {
    struct lt_reader *r;
    const uint8_t *p, *start, *end;
    struct scan s; /* for values of no known shape; s.elems counts all */
    struct rblock *b;
    uint64_t first_index; /* record number of row 0 */
    uint32_t nstr;        /* string elements so far in the column */
};

/* An integer at c->p, bounds-checked: 1 with *u (non-negative), -1 with *s
 * (negative), 0 when it is not one (nothing consumed), LT_ETRUNC. */
static int ck_int(struct bcheck *c, uint64_t *u, int64_t *s)
{
    uint8_t b = *c->p;
    if (b <= 0x7f || b >= 0xe0 || (b >= 0xcc && b <= 0xd3)) {
        if ((size_t)(c->end - c->p) < 1 + (size_t)fixed_size[b])
            return LT_ETRUNC;
        struct cur k = {c->p};
        int rc = rd_int(&k, u, s);
        c->p = k.p;
        return rc;
    }
    return 0;
}

/* An array (map = false) or map header, bounds-checked: 1 with *n, 0 when
 * it is not one, LT_ETRUNC. */
static int ck_coll(struct bcheck *c, bool map, uint32_t *n)
{
    uint8_t b = *c->p;
    size_t need = (b & 0xf0) == (map ? 0x80 : 0x90) ? 1
                  : b == (map ? 0xde : 0xdc)        ? 3
                  : b == (map ? 0xdf : 0xdd)        ? 5
                                                    : 0;
    if (!need)
        return 0;
    if ((size_t)(c->end - c->p) < need)
        return LT_ETRUNC;
    struct cur k = {c->p};
    rd_coll(&k, map, n);
    c->p = k.p;
    return 1;
}

/* A string, bounds-checked: 1 with *s, *n, 0 when it is not one. */
static int ck_str(struct bcheck *c, const uint8_t **s, uint32_t *n)
{
    uint8_t b = *c->p;
    size_t h = (b & 0xe0) == 0xa0 ? 1 : b == 0xd9 ? 2 : b == 0xda ? 3 : b == 0xdb ? 5 : 0;
    if (!h)
        return 0;
    if ((size_t)(c->end - c->p) < h)
        return LT_ETRUNC;
    uint64_t len = h == 1 ? (uint64_t)(b & 0x1f) : be(c->p + 1, (int)h - 1);
    if ((uint64_t)(c->end - c->p - h) < len)
        return LT_ETRUNC;
    *s = c->p + h;
    *n = (uint32_t)len;
    c->p += h + len;
    return 1;
}

/* Step over the value at c->p, whatever it is, within the limits; depth is
 * its nesting depth in the block. */
static int ck_skip(struct bcheck *c, int depth)
{
    if (c->p >= c->end)
        return LT_ETRUNC;
    c->s.i = (size_t)(c->p - c->s.p);
    c->s.depth0 = depth;
    int rc = scan_value(&c->s);
    c->p = c->s.p + c->s.i;
    return rc;
}

static int ck_elems(struct bcheck *c, uint64_t n)
{
    c->s.elems += n;
    return c->s.elems > c->s.max_elems ? LT_ELIMIT : 0;
}

/* Note that row `row` is wrong (the first such row is what counts). */
static void ck_bad(struct bcheck *c, uint64_t row, const char *key, const char *why)
{
    struct rblock *b = c->b;
    if (row >= b->good)
        return;
    b->good = (uint32_t)row;
    lt_errset(&b->bad, LT_EFORMAT,
              "%s: record %llu (frame at byte %llu): key \"%s\" %s (result %llu of a block)",
              c->r->path, (unsigned long long)(c->first_index + row),
              (unsigned long long)c->r->frame_off, key, why, (unsigned long long)row);
}

/* One element of a column: 1 when it is right, 0 when it is wrong (with
 * *why), negative when the block cannot be delimited. */
static int ck_elem(struct bcheck *c, enum bkind kind, const char **why)
{
    uint64_t u = 0;
    int64_t sv = 0;
    int rc;
    if (c->p >= c->end)
        return LT_ETRUNC;
    if (*c->p == 0xc0 && kind != BK_DELTA && kind != BK_U32R) {
        c->p++;
        return 1;
    }
    switch (kind) {
    case BK_DELTA:
    case BK_TIME:
        if ((rc = ck_int(c, &u, &sv)) != 0)
            return rc < -1 ? rc : 1;
        *why = kind == BK_DELTA ? "must hold integers" : "must hold integers or nil";
        return 0;
    case BK_N:
        break;
    case BK_U32R:
    case BK_U32:
        if ((rc = ck_int(c, &u, &sv)) == 1 && u <= UINT32_MAX)
            return 1;
        if (rc < -1)
            return rc;
        *why = kind == BK_U32R ? "must hold integers from 0 to 4294967295"
                               : "must hold integers from 0 to 4294967295, or nil";
        return 0;
    case BK_STATUS:
        rc = ck_int(c, &u, &sv);
        if ((rc == 1 && u <= INT32_MAX) || (rc == -1 && sv >= INT32_MIN))
            return 1;
        if (rc < -1)
            return rc;
        *why = "must hold 32-bit integers or nil";
        return 0;
    case BK_STR: {
        const uint8_t *str;
        uint32_t n;
        if ((rc = ck_str(c, &str, &n)) != 0) {
            c->nstr += rc == 1;
            return rc;
        }
        if ((rc = ck_int(c, &u, &sv)) == 1 && u < c->nstr)
            return 1;
        if (rc < -1)
            return rc;
        *why = "must hold strings, nil, or numbers of earlier strings of the column";
        return 0;
    }
    case BK_BOOL:
        if (*c->p == 0xc2 || *c->p == 0xc3) {
            c->p++;
            return 1;
        }
        *why = "must hold true, false or nil";
        return 0;
    case BK_CHUNKS: {
        uint32_t n = 0;
        if ((rc = ck_coll(c, false, &n)) <= 0) {
            *why = "must hold [dt, tokens, ...] arrays or nil";
            return rc;
        }
        if (n > c->s.max_array)
            return LT_ELIMIT;
        if ((rc = ck_elems(c, n)) < 0)
            return rc;
        if (n % 2) {
            *why = "must hold [dt, tokens] pairs";
            return 0;
        }
        for (uint32_t j = 0; j < n; j += 2) {
            if (c->p >= c->end)
                return LT_ETRUNC;
            rc = ck_int(c, &u, &sv);
            if (rc < -1)
                return rc;
            if (rc == 0 || (rc == 1 && u > INT64_MAX)) {
                *why = "must hold [dt, tokens] pairs of integers";
                return 0;
            }
            if (c->p >= c->end)
                return LT_ETRUNC;
            rc = ck_int(c, &u, &sv);
            if (rc < -1)
                return rc;
            if (rc != 1 || u > UINT32_MAX) {
                *why = "must hold [dt, tokens] pairs of integers";
                return 0;
            }
        }
        return 1;
    }
    }
    return 0;
}

/* The value of `bytes` at c->p: an array of sizes (non-negative integers),
 * with *at its first element and *n their number; n = 0 when the value is
 * not one (the block is then wrong, and its columns are walked). Negative:
 * the block cannot be delimited. */
static int ck_sizes(struct bcheck *c, const uint8_t **at, uint32_t *n)
{
    uint32_t cnt = 0;
    const uint8_t *start = c->p;
    int rc = ck_coll(c, false, &cnt);
    if (rc < 0)
        return rc;
    if (rc == 1 && cnt > c->r->o.max_array)
        return LT_ELIMIT;
    if (rc == 1 && ck_elems(c, cnt) < 0)
        return LT_ELIMIT;
    *at = c->p;
    *n = cnt;
    for (uint32_t j = 0; rc == 1 && j < cnt; j++) {
        uint64_t u;
        int64_t sv;
        if (c->p >= c->end)
            return LT_ETRUNC;
        if ((rc = ck_int(c, &u, &sv)) < -1)
            return rc;
    }
    if (rc != 1) {
        ck_bad(c, 0, K_BYTES, "must be an array of sizes (non-negative integers)");
        *n = 0;
        c->p = start;
        return ck_skip(c, 1);
    }
    return 0;
}

/* For a column of this kind, the size of an element that its lead byte b
 * alone shows to be right, or 0: look closer (ck_elem()). Lead bytes:
 * 0x00-0x7f positive fixint, 0xc0 nil, 0xc2-0xc3 bools, 0xcc-0xcf uint 8-64,
 * 0xd0-0xd3 int 8-64, 0xe0-0xff negative fixint. A string column's positive
 * fixint names an earlier string, which is checked apart; a string itself
 * goes through ck_elem(), which counts it; so do chunks, and the integers
 * whose range depends on the value (a uint32 status, a signed uint).
 * block_begin() looks it up in a table: one lookup per element, since this
 * loop is the chain from each element to the next. */
static uint8_t quick_len(enum bkind kind, unsigned b)
{
    bool ints = kind != BK_STR && kind != BK_BOOL && kind != BK_CHUNKS;
    bool nil_ok = kind != BK_DELTA && kind != BK_U32R && kind != BK_CHUNKS;
    bool neg_ok = kind == BK_DELTA || kind == BK_TIME || kind == BK_STATUS;
    bool wide = kind == BK_DELTA || kind == BK_TIME; /* 64-bit values */
    if (b <= 0x7f)
        return kind != BK_BOOL && kind != BK_CHUNKS;
    if (b == 0xc0)
        return nil_ok;
    if (b == 0xc2 || b == 0xc3)
        return kind == BK_BOOL;
    if (!ints)
        return 0;
    if (b >= 0xe0)
        return neg_ok;
    switch (b) {
    case 0xcc:
        return 2;
    case 0xcd:
        return 3;
    case 0xce:
        return kind == BK_STATUS ? 0 : 5;
    case 0xcf:
        return wide ? 9 : 0;
    case 0xd0:
        return neg_ok ? 2 : 0;
    case 0xd1:
        return neg_ok ? 3 : 0;
    case 0xd2:
        return neg_ok ? 5 : 0;
    case 0xd3:
        return wide ? 9 : 0;
    default:
        return 0;
    }
}

struct scol {                /* a column checked by ck_rows() */
    const uint8_t *pos, *end; /* its next element, and where it must end */
    const uint8_t *ok;        /* quick_len() of its kind */
    uint32_t nstr;            /* string elements so far */
    enum bkind kind;
    int col;
    bool dead; /* an element could not be stepped over: the rest is not read */
};

/* Element `row` of column s the long way (ck_elem()): 1 when it is right
 * (or the column is dead), 0 when it is not (the row is noted bad; the
 * column goes on after it if the element can be stepped over within the
 * column), or LT_ELIMIT. */
static int ck_row_elem(struct bcheck *c, struct scol *s, uint32_t row)
{
    if (s->dead)
        return 1;
    const char *why = "runs past the size that `bytes` gives its column";
    int rc = LT_ETRUNC;
    const uint8_t *at = s->pos;
    if (at < s->end) {
        const uint8_t *block_end = c->end;
        c->p = at;
        c->end = s->end;
        c->nstr = s->nstr;
        rc = ck_elem(c, s->kind, &why);
        c->end = block_end;
        if (rc == 0) { /* wrong: step over it, whatever it is, as a column walk does */
            c->p = at;
            int skip = ck_skip(c, 2);
            if (skip == LT_ELIMIT)
                return LT_ELIMIT;
            if (skip < 0 || c->p > s->end)
                s->dead = true;
        }
        s->pos = c->p;
        s->nstr = c->nstr;
    }
    if (rc == 1)
        return 1;
    if (rc == LT_ELIMIT)
        return LT_ELIMIT;
    if (rc < 0)
        s->dead = true;
    if (s->dead)
        s->pos = s->end;
    ck_bad(c, row, lt_bcol_key[s->col], why);
    return 0;
}

/* Check the columns found through `bytes` (their elements not yet read),
 * row by row: element j of every column, then j + 1. The columns are
 * independent, so the CPU checks several at once, where walking one
 * column is a chain from each element to the next. Every row is read, as
 * a walk would (the first bad one is what counts), so that a limit is
 * found wherever it is passed (LT_ELIMIT: the block fails) and a column's
 * elements are held to end exactly where its size says. */
static int ck_rows(struct bcheck *c, const int *cols, int ncols, const uint8_t *const *col_end)
{
    struct rblock *b = c->b;
    struct scol sc[BC_N];
    int nplain = 0, nall = 0;
    /* the string columns last: only they need the test of a reference */
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < ncols; k++) {
            enum bkind kind = bcol_kind[cols[k]];
            if ((kind == BK_STR) == (pass == 1))
                sc[nall++] = (struct scol){.pos = b->col[cols[k]],
                                           .end = col_end[cols[k]],
                                           .ok = b->quick[kind],
                                           .kind = kind,
                                           .col = cols[k]};
        }
        if (pass == 0)
            nplain = nall;
    }
    for (uint32_t j = 0; j < b->n; j++) {
        /* l - 1 < room: 0 < l <= room, one comparison */
        for (struct scol *s = sc; s < sc + nplain; s++) {
            const uint8_t *at = s->pos;
            if (at < s->end) {
                size_t l = s->ok[*at];
                if (l - 1 < (size_t)(s->end - at)) {
                    s->pos = at + l;
                    continue;
                }
            }
            if (ck_row_elem(c, s, j) < 0)
                return LT_ELIMIT;
        }
        for (struct scol *s = sc + nplain; s < sc + nall; s++) {
            const uint8_t *at = s->pos;
            if (at < s->end && (*at == 0xc0 || (*at <= 0x7f && *at < s->nstr))) {
                s->pos = at + 1; /* nil, or a reference */
                continue;
            }
            if (ck_row_elem(c, s, j) < 0)
                return LT_ELIMIT;
        }
    }
    for (int k = 0; k < nall; k++)
        if (!sc[k].dead && sc[k].pos != sc[k].end)
            ck_bad(c, 0, lt_bcol_key[sc[k].col], "has bytes past its n elements");
    return 0;
}

/* The error of a block that cannot be delimited or passes a limit. */
static int block_fail(struct lt_reader *r, const uint8_t *p, int rc, struct lt_err *err)
{
    const char *what = rc == LT_ELIMIT   ? "exceeds a reader limit (size, length or depth)"
                       : rc == LT_ETRUNC ? "is cut short (values never span frames)"
                                         : "is not valid msgpack";
    return lt_errset(err, rc == LT_ETRUNC ? LT_EFORMAT : rc,
                     "%s: record %llu (frame at byte %llu), a result block at offset %zu of the "
                     "frame's %zu bytes, %s",
                     r->path, (unsigned long long)r->next_index, (unsigned long long)r->frame_off,
                     (size_t)(p - (const uint8_t *)r->frame.p), r->frame.len, what);
}

/* Take col off the list of columns found through `bytes`. */
static void unsize(int *sized, int *n, int col)
{
    for (int k = 0; k < *n; k++)
        if (sized[k] == col)
            sized[k] = sized[--*n];
}

/* Check the block at p (bounded by end) and get it ready to be handed
 * out; *len is its size. Returns 0, or a negative code when the block
 * cannot be delimited or passes a limit (then nothing of it is handed
 * out). Anything else wrong is kept in r->blk and reported when the
 * reader reaches the result it concerns. */
static int block_begin(struct lt_reader *r, const uint8_t *p, const uint8_t *end, size_t *len,
                       struct lt_err *err)
{
    struct rblock *b = &r->blk;
    if (!b->quick_ready) {
        for (int k = 0; k < BK_N; k++)
            for (unsigned v = 0; v < 256; v++)
                b->quick[k][v] = quick_len((enum bkind)k, v);
        b->quick_ready = true;
    }
    memset(b->col, 0, sizeof b->col);
    lt_err_clear(&b->bad);
    b->good = UINT32_MAX;
    b->row = 0;
    b->prev_i = 0;
    b->prev_sched = 0;
    struct bcheck c = {
        .r = r, .p = p, .start = p, .end = end, .b = b, .first_index = r->next_index};
    c.s = (struct scan){
        .p = p, .n = (size_t)(end - p), .max_elems = r->max_elems, .max_array = r->o.max_array};
    uint32_t collen[BC_N] = {0};
    uint64_t n = 0;
    bool have_n = false;
    uint32_t nkeys = 0;
    const char *why = NULL;
    /* `bytes`: the sizes still to be used, one per key that follows it */
    const uint8_t *size_at = NULL;
    uint32_t n_sizes = 0;
    bool have_sizes = false;
    /* the columns found through their size, checked after the key loop */
    const uint8_t *col_end[BC_N];
    int sized[BC_N], n_sized = 0;
    int rc = ck_coll(&c, true, &nkeys);
    if (rc == 0)
        rc = LT_EFORMAT;
    if (rc < 0)
        goto fail;
    if (nkeys > r->o.max_array) {
        rc = LT_ELIMIT;
        goto fail;
    }
    if ((rc = ck_elems(&c, 2 * (uint64_t)nkeys)) < 0)
        goto fail;
    for (uint32_t k = 0; k < nkeys; k++) {
        const uint8_t *key;
        uint32_t kn;
        if (c.p >= c.end) {
            rc = LT_ETRUNC;
            goto fail;
        }
        if ((rc = ck_str(&c, &key, &kn)) <= 0) {
            if (rc == 0 && (rc = ck_skip(&c, 1)) == 0) {
                ck_bad(&c, 0, "?", "is not a string");
                if ((rc = ck_skip(&c, 1)) == 0)
                    continue;
            }
            goto fail;
        }
        enum key id = key_of(key, kn);
        int col = bcol_of(id);
        if (c.p >= c.end) {
            rc = LT_ETRUNC;
            goto fail;
        }
        if (id == KX_BYTES && !have_sizes) {
            if ((rc = ck_sizes(&c, &size_at, &n_sizes)) < 0)
                goto fail;
            have_sizes = true;
            continue;
        }
        const uint8_t *val_end = NULL; /* where the value ends, when `bytes` says */
        if (n_sizes) {
            uint64_t sz = col_int(&size_at);
            n_sizes--;
            if (sz > (uint64_t)(c.end - c.p)) {
                rc = LT_ETRUNC;
                goto fail;
            }
            val_end = c.p + sz;
        }
        if (val_end && col >= 0) {
            uint32_t cnt = 0;
            if ((rc = ck_coll(&c, false, &cnt)) < -1)
                goto fail;
            if (rc != 1 || c.p > val_end) {
                ck_bad(&c, 0, lt_bcol_key[col], "must be an array (a column) of the size given");
                c.p = val_end;
                continue;
            }
            if (cnt > r->o.max_array) {
                rc = LT_ELIMIT;
                goto fail;
            }
            if ((rc = ck_elems(&c, cnt)) < 0)
                goto fail;
            unsize(sized, &n_sized, col); /* a column given twice: the second one counts */
            b->col[col] = c.p;
            collen[col] = cnt;
            col_end[col] = val_end;
            sized[n_sized++] = col;
            c.p = val_end;
            continue;
        }
        if (val_end) { /* n, rec, or a key of a later version, with its size */
            uint64_t u = 0;
            int64_t sv = 0;
            if (id == KX_N && (rc = ck_int(&c, &u, &sv)) == 1) {
                n = u;
                have_n = true;
            } else if (id == KX_N && rc >= -1) {
                ck_bad(&c, 0, K_N, "must be a non-negative integer");
            } else if (id != KX_N && (rc = ck_skip(&c, 1)) < 0) {
                goto fail;
            }
            if (c.p != val_end)
                ck_bad(&c, 0, K_BYTES, "gives a size that is not that of the value it is for");
            c.p = val_end;
            continue;
        }
        if (have_sizes && !n_sizes)
            ck_bad(&c, 0, K_BYTES, "gives fewer sizes than keys follow it");
        if (id == KX_N) {
            uint64_t u = 0;
            int64_t sv = 0;
            const uint8_t *at = c.p;
            if ((rc = ck_int(&c, &u, &sv)) < -1)
                goto fail;
            if (rc == 1) {
                n = u;
                have_n = true;
                continue;
            }
            ck_bad(&c, 0, K_N, "must be a non-negative integer");
            c.p = at;
            if ((rc = ck_skip(&c, 1)) < 0)
                goto fail;
            continue;
        }
        if (col < 0) { /* "rec" (checked by the caller), or a key of a later version */
            if ((rc = ck_skip(&c, 1)) < 0)
                goto fail;
            continue;
        }
        uint32_t cnt = 0;
        if ((rc = ck_coll(&c, false, &cnt)) <= 0) {
            if (rc == 0 && (rc = ck_skip(&c, 1)) == 0) {
                ck_bad(&c, 0, lt_bcol_key[col], "must be an array (a column)");
                continue;
            }
            goto fail;
        }
        if (cnt > r->o.max_array) {
            rc = LT_ELIMIT;
            goto fail;
        }
        if ((rc = ck_elems(&c, cnt)) < 0)
            goto fail;
        unsize(sized, &n_sized, col);
        b->col[col] = c.p;
        collen[col] = cnt;
        const enum bkind kind = bcol_kind[col];
        const uint8_t *ok = b->quick[kind];
        c.nstr = 0;
        /* (Blocks the loadtrace writer makes state their sizes; this walk
         * is for the others, so it stays simple.) */
        for (uint32_t j = 0; j < cnt; j++) {
            const uint8_t *at = c.p;
            if (at < c.end) {
                size_t l = ok[*at];
                if (kind == BK_STR && *at <= 0x7f && *at >= c.nstr)
                    l = 0;
                if (l && l <= (size_t)(c.end - at)) {
                    c.p = at + l;
                    continue;
                }
            }
            if ((rc = ck_elem(&c, kind, &why)) < 0)
                goto fail;
            if (rc == 0) {
                ck_bad(&c, j, lt_bcol_key[col], why);
                c.p = at;
                if ((rc = ck_skip(&c, 2)) < 0)
                    goto fail;
            }
        }
    }
    *len = (size_t)(c.p - p);
    if (*len > r->o.max_record_bytes) {
        rc = LT_ELIMIT;
        goto fail;
    }
    if (n_sizes)
        ck_bad(&c, 0, K_BYTES, "gives more sizes than keys follow it");
    /* Whole-block faults: no result of the block can be trusted. */
    if (!have_n || n > r->o.max_array) {
        ck_bad(&c, 0, K_N, have_n ? "is larger than the array limit" : "is missing");
    } else {
        for (int col = 0; col < BC_N; col++) {
            if (!b->col[col] && col <= BC_SCHED) {
                ck_bad(&c, 0, lt_bcol_key[col], "is missing (a result block needs i, run, sched)");
            } else if (b->col[col] && collen[col] != n) {
                char w[64];
                snprintf(w, sizeof w, "holds %u values, not n = %llu", collen[col],
                         (unsigned long long)n);
                ck_bad(&c, 0, lt_bcol_key[col], w);
            }
        }
    }
    b->n = have_n && n <= r->o.max_array ? (uint32_t)n : 0;
    /* (not after a fault of the whole block: a column may then be short) */
    if (n_sized && b->good > 0 && (rc = ck_rows(&c, sized, n_sized, col_end)) < 0)
        goto fail;
    if (b->good > b->n)
        b->good = b->n;
    /* A block whose whole is wrong still counts as one value lost. */
    if (b->n == 0 && b->good == 0 && b->bad.code)
        b->n = 1;
    b->on = true;
    for (int k = 0; k < 3; k++) {
        lt_buf_reset(&r->bstr[k]);
        lt_buf_reset(&r->boff[k]);
    }
    return 0;
fail:
    return block_fail(r, p, rc, err);
}

/* A string column's element (checked by block_begin): a string is copied,
 * NUL-terminated, and numbered; a number names a string before it. */
static const char *col_str(struct lt_buf *strs, struct lt_buf *offs, const uint8_t **pp, int *rc)
{
    uint8_t b = **pp;
    if ((b & 0xe0) != 0xa0 && b != 0xd9 && b != 0xda && b != 0xdb) { /* any integer encoding */
        uint64_t k = col_int(pp);
        uint32_t off;
        memcpy(&off, offs->p + k * sizeof off, sizeof off);
        return strs->p + off;
    }
    struct cur c = {*pp};
    const uint8_t *s = NULL;
    uint32_t n = 0;
    rd_str(&c, &s, &n);
    *pp = c.p;
    uint32_t off = (uint32_t)strs->len;
    if ((*rc = lt_buf_append(strs, s, n)) < 0 || (*rc = lt_buf_append(strs, "", 1)) < 0 ||
        (*rc = lt_buf_append(offs, &off, sizeof off)) < 0)
        return NULL;
    return strs->p + off;
}

/* Hand out the next result of the block: 1, 0 when the block is done, or
 * the error kept for a bad result. */
static int block_next(struct lt_reader *r, struct lt_item *it, struct lt_err *err)
{
    struct rblock *b = &r->blk;
    if (b->row >= b->n)
        return 0;
    if (b->row == b->good) {
        if (err)
            *err = b->bad;
        return b->bad.code ? b->bad.code : LT_EFORMAT;
    }
    const uint8_t **col = b->col;
    struct lt_result *res = &it->res;
    /* Field by field, each once (a memset of the struct costs more than
     * the rest of the result here): the columns below set or clear theirs. */
    res->n_chunks = 0;
    res->chunks = NULL;
    res->err = res->finish = res->count = NULL;
    res->extra = (struct lt_extra){NULL, 0, 0};
    it->type = LT_ITEM_RESULT;
    it->index = r->next_index++;
    it->frame_offset = r->frame_off;
    it->raw = NULL;
    it->raw_len = 0;
    b->row++;
    res->index = b->prev_i += col_int(&col[BC_I]);
    res->run = (uint32_t)col_int(&col[BC_RUN]);
    b->prev_sched = (int64_t)((uint64_t)b->prev_sched + col_int(&col[BC_SCHED]));
    const int64_t q = res->sched = b->prev_sched;
    uint32_t has = 0;
#define TIME(c, field, bit)                                                                        \
    res->field = 0;                                                                                \
    if (col[c]) {                                                                                  \
        if (*col[c] == 0xc0)                                                                       \
            col[c]++;                                                                              \
        else {                                                                                     \
            res->field = (int64_t)((uint64_t)q + col_int(&col[c]));                                \
            has |= bit;                                                                            \
        }                                                                                          \
    }
#define U32(c, field, bit)                                                                         \
    res->field = 0;                                                                                \
    if (col[c]) {                                                                                  \
        if (*col[c] == 0xc0)                                                                       \
            col[c]++;                                                                              \
        else {                                                                                     \
            res->field = (uint32_t)col_int(&col[c]);                                               \
            has |= bit;                                                                            \
        }                                                                                          \
    }
    TIME(BC_SENT, sent, LT_RHAS_SENT)
    TIME(BC_FB, first_byte, LT_RHAS_FIRST_BYTE)
    TIME(BC_FT, first_token, LT_RHAS_FIRST_TOKEN)
    TIME(BC_FC, first_content, LT_RHAS_FIRST_CONTENT)
    TIME(BC_END, end, LT_RHAS_END)
    U32(BC_IN, in, LT_RHAS_IN)
    U32(BC_OUT, out, LT_RHAS_OUT)
    U32(BC_REASONING, reasoning, LT_RHAS_REASONING)
    U32(BC_CACHED, cached, LT_RHAS_CACHED)
    U32(BC_WANT_IN, want_in, LT_RHAS_WANT_IN)
    U32(BC_WANT_OUT, want_out, LT_RHAS_WANT_OUT)
#undef TIME
#undef U32
    res->status = 0;
    if (col[BC_STATUS]) {
        if (*col[BC_STATUS] == 0xc0) {
            col[BC_STATUS]++;
        } else {
            res->status = (int32_t)col_int(&col[BC_STATUS]);
            has |= LT_RHAS_STATUS;
        }
    }
    res->has = has;
    int rc = 0;
    const char **strs[3] = {&res->err, &res->finish, &res->count};
    for (int k = 0; k < 3; k++) {
        const uint8_t **p = &col[BC_ERR + k];
        if (!*p)
            continue;
        if (**p == 0xc0)
            (*p)++;
        else if (!(*strs[k] = col_str(&r->bstr[k], &r->boff[k], p, &rc)))
            return lt_errset(err, rc, "%s: out of memory", r->path);
    }
    res->warmup = col[BC_WARMUP] && *col[BC_WARMUP]++ == 0xc3;
    if (col[BC_CHUNKS]) {
        if (*col[BC_CHUNKS] == 0xc0) {
            col[BC_CHUNKS]++;
        } else {
            struct cur c = {col[BC_CHUNKS]};
            uint32_t n2 = 0;
            rd_coll(&c, false, &n2);
            uint32_t n = n2 / 2;
            lt_buf_reset(&r->arena);
            if (lt_buf_reserve(&r->arena, (size_t)n * sizeof(struct lt_chunk) + 8) < 0)
                return lt_errset(err, LT_ENOMEM, "%s: out of memory", r->path);
            struct lt_chunk *ch = (struct lt_chunk *)(void *)r->arena.p;
            int64_t prev = (has & LT_RHAS_SENT) ? res->sent : q;
            for (uint32_t j = 0; j < n; j++) {
                ch[j].t = prev = (int64_t)((uint64_t)prev + col_int(&c.p));
                ch[j].tokens = (uint32_t)col_int(&c.p);
            }
            col[BC_CHUNKS] = c.p;
            res->chunks = ch;
            res->n_chunks = n;
            res->has |= LT_RHAS_CHUNKS;
        }
    }
    return 1;
}

/* Whether the value at p starts as the writer begins a block (a map whose
 * first key is "rec" with the value "block"): then it is checked by
 * block_begin() alone, with no scan_value() first. */
static bool looks_like_block(const uint8_t *p, size_t avail)
{
    static const uint8_t head[] = {0xa3, 'r', 'e', 'c', 0xa5, 'b', 'l', 'o', 'c', 'k'};
    size_t h = (p[0] & 0xf0) == 0x80 ? 1 : p[0] == 0xde ? 3 : 0;
    return h && avail >= h + sizeof head && memcmp(p + h, head, sizeof head) == 0;
}

/* The header, read once per file, is unpacked with msgpack-c (its meta and
 * unknown keys are repacked from the object tree). */
static bool obj_is(const msgpack_object *o, const char *s)
{
    size_t n = strlen(s);
    return o->via.str.size == n && memcmp(o->via.str.ptr, s, n) == 0;
}

static int obj_u32(struct dec *d, const char *key, const msgpack_object *o, uint32_t *v)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return bad(d, key, "must be a non-negative integer");
    if (o->via.u64 > UINT32_MAX)
        return bad(d, key, "is larger than 4294967295");
    *v = (uint32_t)o->via.u64;
    return 0;
}

static int header_of(struct lt_reader *r, const msgpack_object *o, size_t len,
                     struct lt_err *err);

static int decode_header(struct lt_reader *r, struct lt_err *err)
{
    int rc = read_frame(r, err);
    if (rc == 0)
        return lt_errset(err, LT_EFORMAT, "%s: not a loadtrace file: it is empty", r->path);
    if (rc < 0)
        return lt_errf(err, rc, "%s: the header cannot be read", r->path);
    size_t len;
    if ((rc = scan_at(r, &len, err, "the header")) < 0)
        return rc;
    msgpack_zone zone;
    if (!msgpack_zone_init(&zone, 8192))
        return lt_errset(err, LT_ENOMEM, "%s: out of memory", r->path);
    msgpack_object o;
    size_t off = 0;
    msgpack_unpack_return ur = msgpack_unpack(r->frame.p + r->pos, len, &off, &zone, &o);
    if (ur != MSGPACK_UNPACK_SUCCESS && ur != MSGPACK_UNPACK_EXTRA_BYTES)
        rc = lt_errset(err, ur == MSGPACK_UNPACK_NOMEM_ERROR ? LT_ENOMEM : LT_EFORMAT,
                       "%s: the header is not valid msgpack", r->path);
    else
        rc = header_of(r, &o, len, err);
    msgpack_zone_destroy(&zone);
    return rc;
}

static int header_of(struct lt_reader *r, const msgpack_object *op, size_t len,
                     struct lt_err *err)
{
    int rc;
    const msgpack_object o = *op;
    struct dec d = {r, err, "the header", {NULL}};
    if (o.type != MSGPACK_OBJECT_MAP)
        return lt_errset(err, LT_EFORMAT, "%s: not a loadtrace file: missing header", r->path);
    /* Header strings are kept for the reader's life, apart from items. */
    if ((rc = lt_buf_reserve(&r->hdrbuf, len * 2 + 64)) < 0)
        return lt_errset(err, rc, "%s: header too large", r->path);
    bool have_format = false, have_version = false, have_kind = false;
    const msgpack_object_map *m = &o.via.map;
    char *hp = r->hdrbuf.p;
    const uint8_t *extra_at = NULL;
    size_t extra_start = 0;
    for (uint32_t i = 0; i < m->size; i++) {
        const msgpack_object *k = &m->ptr[i].key, *v = &m->ptr[i].val;
        if (k->type != MSGPACK_OBJECT_STR)
            return lt_errset(err, LT_EFORMAT, "%s: header has a key that is not a string",
                             r->path);
        if (obj_is(k, K_FORMAT)) {
            if (v->type != MSGPACK_OBJECT_STR || v->via.str.size != strlen(LT_FORMAT_NAME) ||
                memcmp(v->via.str.ptr, LT_FORMAT_NAME, v->via.str.size))
                return lt_errset(err, LT_EFORMAT,
                                 "%s: not a loadtrace file: header format is not \"loadtrace\"",
                                 r->path);
            have_format = true;
        } else if (obj_is(k, K_VERSION)) {
            uint32_t ver = 0;
            if ((rc = obj_u32(&d, K_VERSION, v, &ver)) < 0)
                return rc;
            r->hdr.version = ver;
            have_version = true;
        } else if (obj_is(k, K_KIND) && v->type == MSGPACK_OBJECT_STR) {
            if (obj_is(v, "trace"))
                r->hdr.kind = LT_KIND_TRACE;
            else if (obj_is(v, "results"))
                r->hdr.kind = LT_KIND_RESULTS;
            else
                return lt_errset(err, LT_EFORMAT, "%s: header kind is neither trace nor results",
                                 r->path);
            have_kind = true;
        } else if ((obj_is(k, K_CREATED) || obj_is(k, K_SOURCE)) &&
                   v->type == MSGPACK_OBJECT_STR) {
            memcpy(hp, v->via.str.ptr, v->via.str.size);
            hp[v->via.str.size] = '\0';
            if (obj_is(k, K_CREATED))
                r->hdr.created = hp;
            else
                r->hdr.source = hp;
            hp += v->via.str.size + 1;
        } else if (obj_is(k, K_BLOCK_TOKENS)) {
            if ((rc = obj_u32(&d, K_BLOCK_TOKENS, v, &r->hdr.block_tokens)) < 0)
                return rc;
        } else {
            /* meta and unknown keys: repack and keep */
            msgpack_sbuffer sb;
            msgpack_sbuffer_init(&sb);
            msgpack_packer pk;
            msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
            bool meta = obj_is(k, K_META);
            if (!meta)
                msgpack_pack_object(&pk, *k);
            msgpack_pack_object(&pk, *v);
            uint8_t *dst = (uint8_t *)hp;
            memcpy(dst, sb.data, sb.size);
            hp += sb.size;
            if (meta) {
                r->hdr.meta = dst;
                r->hdr.meta_len = sb.size;
            } else {
                if (!extra_at)
                    extra_at = dst;
                extra_start += sb.size;
                r->hdr.extra.n++;
            }
            msgpack_sbuffer_destroy(&sb);
        }
    }
    if (!have_format)
        return lt_errset(err, LT_EFORMAT, "%s: not a loadtrace file: missing header", r->path);
    if (!have_version || !have_kind)
        return lt_errset(err, LT_EFORMAT, "%s: header without %s", r->path,
                         have_version ? "kind" : "version");
    if (r->hdr.version > LT_FORMAT_VERSION)
        return lt_errset(err, LT_EVERSION,
                         "%s: written with trace format version %u; this loadtrace reads "
                         "version %d and older: upgrade loadtrace",
                         r->path, r->hdr.version, LT_FORMAT_VERSION);
    if (r->hdr.version == 0)
        return lt_errset(err, LT_EFORMAT, "%s: header version 0 is not valid", r->path);
    r->hdr.extra.data = extra_at;
    r->hdr.extra.len = extra_start;
    if (!r->hdr.created)
        r->hdr.created = "";
    if (!r->hdr.source)
        r->hdr.source = "";
    r->pos += len;
    return 0;
}

/* A value that cannot be delimited (or passes a limit): the reader fails,
 * or, salvaging, drops the rest of the frame, since nothing after it can be
 * found either. Returns rc when the reader fails, 0 when it goes on. */
/* After a value or block went wrong: with salvage (and memory), count n
 * values skipped, tell on_skip (`what` when err is NULL) and go on (0);
 * otherwise the reader fails (rc). */
static int skip_or_fail(struct lt_reader *r, int rc, uint64_t n, const char *what,
                        struct lt_err *err)
{
    if (!r->o.salvage || rc == LT_ENOMEM) {
        r->failed = true;
        return rc;
    }
    r->st.skipped_values += n;
    if (r->o.on_skip)
        r->o.on_skip(r->o.ud, err ? err->msg : what);
    return 0;
}

static int drop_frame_rest(struct lt_reader *r, int rc, struct lt_err *err)
{
    if ((rc = skip_or_fail(r, rc, 1, "a damaged value", err)) == 0)
        r->pos = r->frame.len;
    return rc;
}

int lt_reader_next(struct lt_reader *r, const struct lt_item **itemp, struct lt_err *err)
{
    if (r->failed)
        return lt_errset(err, LT_EINVAL, "%s: reading cannot go on after an error", r->path);
    for (;;) {
        if (r->blk.on) {
            int rc = block_next(r, &r->item, err);
            if (rc == 1) {
                r->st.values++;
                *itemp = &r->item;
                return 1;
            }
            r->blk.on = false;
            if (rc == 0)
                continue;
            /* The rest of the block: its columns cannot be trusted. */
            uint64_t rest = r->blk.n - r->blk.row;
            if ((rc = skip_or_fail(r, rc, rest, "a bad result block", err)) < 0)
                return rc;
            r->next_index += rest;
            continue;
        }
        while (r->pos >= r->frame.len) {
            int rc = read_frame(r, err);
            if (rc == 1)
                continue;
            if (rc == 0)
                return 0;
            if (!r->o.salvage || rc == LT_EIO) {
                r->failed = true;
                return rc;
            }
            r->st.skipped_frames++;
            if (r->o.on_skip)
                r->o.on_skip(r->o.ud, err ? err->msg : "a damaged frame");
            rc = resync(r, err);
            if (rc < 0) {
                r->failed = true;
                return rc;
            }
            lt_buf_reset(&r->frame);
            r->pos = 0;
            if (rc == 0)
                return 0;
        }

        size_t len;
        const uint8_t *at = (const uint8_t *)r->frame.p + r->pos;
        if (r->hdr.kind == LT_KIND_RESULTS && looks_like_block(at, r->frame.len - r->pos)) {
            int rc = block_begin(r, at, (const uint8_t *)r->frame.p + r->frame.len, &len, err);
            if (rc == 0) {
                r->pos += len;
                continue;
            }
            r->next_index++;
            if ((rc = drop_frame_rest(r, rc, err)) < 0)
                return rc;
            continue;
        }
        r->next_index++; /* what_of() names next_index - 1 */
        int rc = scan_at(r, &len, err, NULL);
        if (rc < 0) {
            if ((rc = drop_frame_rest(r, rc, err)) < 0)
                return rc;
            continue;
        }
        struct lt_item *it = &r->item; /* decode_value() clears its struct */
        it->index = r->next_index - 1;
        it->frame_offset = r->frame_off;
        it->raw = (const uint8_t *)r->frame.p + r->pos;
        it->raw_len = len;
        r->pos += len;
        if ((rc = arena_prepare(r, len)) < 0) {
            r->failed = true;
            return lt_errset(err, LT_ENOMEM, "%s: out of memory", r->path);
        }
        rc = decode_value(r, it, err);
        if (rc == DEC_IS_BLOCK) { /* a block not laid out as the writer does */
            r->next_index--;
            if ((rc = block_begin(r, it->raw, it->raw + len, &len, err)) == 0)
                continue;
            r->next_index++;
        }
        if (rc < 0) {
            if ((rc = skip_or_fail(r, rc, 1, "a bad value", err)) < 0)
                return rc;
            continue;
        }
        r->st.values++;
        *itemp = it;
        return 1;
    }
}

/* ---- open/close ------------------------------------------------------- */

static struct lt_reader *open_stream(FILE *f, const char *path, bool seekable,
                                     const struct lt_reader_opts *opts, struct lt_err *err)
{
    struct lt_reader *r = calloc(1, sizeof *r);
    if (!r) {
        if (f != stdin)
            fclose(f);
        lt_errset(err, LT_ENOMEM, "out of memory");
        return NULL;
    }
    r->f = f;
    r->seekable = seekable;
    r->o = opts ? *opts : (struct lt_reader_opts){0};
    if (!r->o.max_record_bytes)
        r->o.max_record_bytes = MAX_RECORD_DEFAULT;
    if (!r->o.max_frame_bytes)
        r->o.max_frame_bytes = MAX_FRAME_DEFAULT;
    if (!r->o.max_array)
        r->o.max_array = MAX_ARRAY_DEFAULT;
    r->max_elems = 4ull * r->o.max_array;
    r->path = strdup(path);
    r->in_cap = ZSTD_DStreamInSize();
    r->in = malloc(r->in_cap);
    r->dctx = ZSTD_createDCtx();
    lt_buf_init(&r->frame, r->o.max_frame_bytes + (1 << 16) + 1);
    lt_buf_init(&r->arena, SIZE_MAX);
    lt_buf_init(&r->extra, r->o.max_record_bytes * 2);
    lt_buf_init(&r->hdrbuf, r->o.max_record_bytes * 2 + 64);
    for (int k = 0; k < 3; k++) {
        lt_buf_init(&r->bstr[k], r->o.max_record_bytes * 2);
        lt_buf_init(&r->boff[k], (size_t)r->o.max_array * 4 + 4);
    }
    if (!r->path || !r->in || !r->dctx) {
        lt_errset(err, LT_ENOMEM, "out of memory");
        lt_reader_free(r);
        return NULL;
    }
    ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_windowLogMax, WINDOW_LOG_MAX);
    if (r->o.salvage && !seekable) {
        lt_errset(err, LT_EINVAL, "%s: --salvage needs a file it can seek in, not a pipe", path);
        lt_reader_free(r);
        return NULL;
    }
    /* A friendly word for the commonest mistake: a file of another format. */
    if (fill(r, err) < 0) {
        lt_reader_free(r);
        return NULL;
    }
    if (r->in_len >= 4 && !(r->in[0] == 0x28 && r->in[1] == 0xb5 && r->in[2] == 0x2f &&
                            r->in[3] == 0xfd)) {
        lt_errset(err, LT_EFORMAT,
                  "%s: not a loadtrace file (it does not start with a zstd frame; "
                  "for CSV or JSON lines use `loadtrace import`)",
                  path);
        lt_reader_free(r);
        return NULL;
    }
    if (decode_header(r, err) < 0) {
        lt_reader_free(r);
        return NULL;
    }
    return r;
}

struct lt_reader *lt_reader_open(const char *path, const struct lt_reader_opts *opts,
                                 struct lt_err *err)
{
    FILE *f;
    if (!strcmp(path, "-")) {
        f = stdin;
    } else if (!(f = fopen(path, "rb"))) {
        lt_errset(err, LT_EIO, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    bool seekable = fseeko(f, 0, SEEK_CUR) == 0;
    return open_stream(f, path, seekable, opts, err);
}

struct lt_reader *lt_reader_open_mem(const void *data, size_t len,
                                     const struct lt_reader_opts *opts, struct lt_err *err)
{
    static char empty[1];
    FILE *f = fmemopen(len ? (void *)data : empty, len ? len : 1, "rb");
    if (!f) {
        lt_errset(err, LT_ENOMEM, "cannot open memory stream: %s", strerror(errno));
        return NULL;
    }
    if (!len)
        fgetc(f); /* fmemopen refuses size 0: read past the one dummy byte */
    return open_stream(f, "<memory>", true, opts, err);
}

struct lt_reader *lt_reader_open_kind(const char *path, enum lt_kind kind,
                                      const struct lt_reader_opts *opts, struct lt_err *err)
{
    struct lt_reader *r = lt_reader_open(path, opts, err);
    if (r && r->hdr.kind != kind) {
        lt_errset(err, LT_EFORMAT, "%s: this is a %s file; a %s file is needed here", path,
                  r->hdr.kind == LT_KIND_TRACE ? "trace" : "results",
                  kind == LT_KIND_TRACE ? "trace" : "results");
        lt_reader_free(r);
        return NULL;
    }
    return r;
}

const struct lt_header *lt_reader_header(const struct lt_reader *r)
{
    return &r->hdr;
}

void lt_reader_stats(const struct lt_reader *r, struct lt_reader_stats *st)
{
    *st = r->st;
}

void lt_reader_free(struct lt_reader *r)
{
    if (!r)
        return;
    if (r->f && r->f != stdin)
        fclose(r->f);
    ZSTD_freeDCtx(r->dctx);
    free(r->in);
    free(r->path);
    lt_buf_release(&r->frame);
    lt_buf_release(&r->arena);
    lt_buf_release(&r->extra);
    lt_buf_release(&r->hdrbuf);
    for (int k = 0; k < 3; k++) {
        lt_buf_release(&r->bstr[k]);
        lt_buf_release(&r->boff[k]);
    }
    free(r);
}

/*
 * Streaming reader of loadtrace files (see trace_reader.h for the contract
 * and docs/trace-format.md for the bytes).
 *
 * Reading goes frame by frame:
 *
 *   read compressed bytes --ZSTD_decompressStream--> frame buffer
 *        (until the frame ends and its checksum is verified)
 *   frame buffer --scan (limits)--> one value's bytes --decode--> struct lt_item
 *   frame buffer --lt__rd_block_begin (limits, types)--> result block
 *        --lt__rd_block_next, one result per call--> struct lt_item
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
 * msgpack-c only unpacks free-form values into trees: the header, once
 * per file (its meta and unknown keys are kept as their bytes), and
 * unknown keys rendered as JSON (trace_json.c). Everything that packs
 * msgpack uses traces/lt_mp.h.
 *
 * Result blocks (format version 2) are what made results cheap to read:
 * ~40 bytes of small integers per result instead of ~140 bytes of map, and
 * no key to dispatch per value. A block is checked in one pass that takes
 * the scan's place (lt__rd_block_begin: every element's type and range, bounds,
 * limits, where each column starts, the first bad result); its results are
 * then built one per call from the columns, unchecked (lt__rd_block_next), so a
 * block never needs memory in proportion to its results. Same benchmark,
 * 2026-11-29: reader alone 2.4 M results/s (maps) -> 6.5-6.9 M/s
 * (blocks); bench/README.md has the tables.
 *
 * Checking a column means walking it: where element j + 1 starts is known
 * only once element j's lead byte is read, a chain of loads. So the writer
 * states each column's size (`bytes`); lt__rd_block_begin then jumps from column
 * to column and checks row by row (ck_rows), element j of every column
 * before element j + 1, chains the CPU runs side by side. (Blocks without
 * `bytes`, which no loadtrace writer made after it, are no longer read:
 * a block is wrong as a whole without them.) With that, inline
 * decoding of every integer encoding and the writer's stored (not
 * Huffman-coded) literals, the reader alone went from 6.3 to 10.4 M
 * results/s (bench/README.md, stop 11).
 */
#include "traces/reader_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_RECORD_DEFAULT LT_LIMIT_VALUE_BYTES
#define MAX_FRAME_DEFAULT LT_LIMIT_FRAME_BYTES
#define MAX_ARRAY_DEFAULT LT_LIMIT_ARRAY
#define WINDOW_LOG_MAX 24 /* 16 MiB decoder window, whatever the frame asks */
#define ZSTD_MAGIC 0xFD2FB528u

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
    /* A frame without a content checksum cannot be verified, and no value
     * is handed out unverified (docs/trace-format.md §1): refused, and
     * salvage skips it. Its descriptor is the byte after the magic. */
    const uint8_t *h = r->in + r->in_pos;
    if (r->in_len - r->in_pos >= 5 &&
        ((uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24) ==
            ZSTD_MAGIC &&
        !(h[4] & 0x04))
        return lt_errset(err, LT_EFORMAT,
                         "%s: the frame at byte %llu has no content checksum, so what it holds "
                         "cannot be verified",
                         r->path, (unsigned long long)r->frame_off);
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
            return lt_errset(err, LT_EFORMAT, "%s: the frame at byte %llu is corrupt (%s)", r->path,
                             (unsigned long long)r->frame_off, ZSTD_getErrorName(z));
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

/* ---- values ----------------------------------------------------------- */

/* Check the value at r->pos of the current frame against the limits and
 * find its length. */
static int scan_at(struct lt_reader *r, size_t *len, struct lt_err *err, const char *what)
{
    struct scan s = {.p = (const uint8_t *)r->frame.p + r->pos,
                     .n = r->frame.len - r->pos,
                     .max_elems = r->max_elems,
                     .max_array = r->o.max_array};
    int rc = lt__rd_scan_value(&s);
    if (rc == 0 && s.i > r->o.max_record_bytes)
        rc = LT_ELIMIT;
    if (rc < 0) {
        char wbuf[96];
        if (!what)
            what = lt__rd_what(r, wbuf);
        const char *why = rc == LT_ELIMIT   ? "exceeds a reader limit (size, length or depth)"
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

const char *lt__rd_what(struct lt_reader *r, char buf[96])
{
    snprintf(buf, 96, "record %llu (frame at byte %llu)", (unsigned long long)(r->next_index - 1),
             (unsigned long long)r->frame_off);
    return buf;
}

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
        rc = lt__rd_header_of(r, &o, len, err);
    msgpack_zone_destroy(&zone);
    return rc;
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
            int rc = lt__rd_block_next(r, err);
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
        if (r->hdr.kind == LT_KIND_RESULTS && lt__rd_looks_like_block(at, r->frame.len - r->pos)) {
            int rc =
                lt__rd_block_begin(r, at, (const uint8_t *)r->frame.p + r->frame.len, &len, err);
            if (rc == 0) {
                r->pos += len;
                continue;
            }
            r->next_index++;
            if ((rc = drop_frame_rest(r, rc, err)) < 0)
                return rc;
            continue;
        }
        r->next_index++; /* lt__rd_what() names next_index - 1 */
        int rc = scan_at(r, &len, err, NULL);
        if (rc < 0) {
            if ((rc = drop_frame_rest(r, rc, err)) < 0)
                return rc;
            continue;
        }
        struct lt_item *it = &r->item; /* lt__rd_decode_value() clears its struct */
        it->index = r->next_index - 1;
        it->frame_offset = r->frame_off;
        it->raw = (const uint8_t *)r->frame.p + r->pos;
        it->raw_len = len;
        r->pos += len;
        if ((rc = arena_prepare(r, len)) < 0) {
            r->failed = true;
            return lt_errset(err, LT_ENOMEM, "%s: out of memory", r->path);
        }
        rc = lt__rd_decode_value(r, it, err);
        if (rc == DEC_IS_BLOCK) { /* a block not laid out as the writer does */
            r->next_index--;
            if ((rc = lt__rd_block_begin(r, it->raw, it->raw + len, &len, err)) == 0)
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

/* A record's place in a trace in completion order. */
struct sorted_rec {
    int64_t t;
    uint64_t index; /* its place in the file: equal times keep it */
    size_t off, len;
    bool unfinished; /* `err: "unfinished"` */
};

/* A record of a request that had not finished when it was written: its
 * extra keys hold err = "unfinished" (docs/trace-format.md §2.3). */
static bool is_unfinished(const struct lt_extra *x)
{
    struct cur c = {x->data};
    for (uint32_t i = 0; i < x->n; i++) {
        const uint8_t *k, *v;
        uint32_t kn, vn;
        if (!lt__rd_str(&c, &k, &kn))
            return false;
        if (kn == 3 && !memcmp(k, "err", 3)) {
            struct cur d = c;
            return lt__rd_str(&d, &v, &vn) && vn == 10 && !memcmp(v, "unfinished", 10);
        }
        lt__rd_skip_value(&c);
    }
    return false;
}

static int by_arrival(const void *a, const void *b)
{
    const struct sorted_rec *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* A trace whose header says `order: completion` (a capture writes each
 * request when it finishes) is read whole at open, its records' bytes put
 * in arrival order, and handed out from memory as one frame: every reader
 * gets arrival order, as from any other trace (unless opts.file_order).
 * Memory: the records, decompressed, twice while sorting. */
static int sort_by_arrival(struct lt_reader *r, struct lt_err *err)
{
    int rc = 0;
    struct lt_buf raw, img;
    lt_buf_init(&raw, SIZE_MAX);
    lt_buf_init(&img, SIZE_MAX);
    struct sorted_rec *v = NULL;
    size_t n = 0, cap = 0;
    const struct lt_item *it;
    while ((rc = lt_reader_next(r, &it, err)) == 1) {
        if (it->type != LT_ITEM_RECORD)
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 4096;
            struct sorted_rec *nv = realloc(v, nc * sizeof *nv);
            if (!nv) {
                rc = lt_errset(err, LT_ENOMEM, "%s: out of memory sorting the records", r->path);
                goto out;
            }
            v = nv;
            cap = nc;
        }
        v[n] = (struct sorted_rec){it->rec.t, it->index, raw.len, it->raw_len,
                                   is_unfinished(&it->rec.extra)};
        if ((rc = lt_buf_append(&raw, it->raw, it->raw_len)) < 0) {
            lt_errset(err, rc, "%s: out of memory sorting the records", r->path);
            goto out;
        }
        n++;
    }
    if (rc < 0)
        goto out;
    if (n)
        qsort(v, n, sizeof *v, by_arrival);
    /* An unfinished record gives way to the record of the same request
     * (the same t) written when it finished. */
    for (size_t i = 0; i < n && rc == 0; i++) {
        bool replaced = false;
        for (size_t j = i + 1; v[i].unfinished && j < n && v[j].t == v[i].t && !replaced; j++)
            replaced = !v[j].unfinished;
        for (size_t j = i; v[i].unfinished && j-- > 0 && v[j].t == v[i].t && !replaced;)
            replaced = !v[j].unfinished;
        if (!replaced)
            rc = lt_buf_append(&img, raw.p + v[i].off, v[i].len);
    }
    if (rc < 0) {
        lt_errset(err, rc, "%s: out of memory sorting the records", r->path);
        goto out;
    }
    /* The file is read to its end: the next frame is this image, and
     * after it read_frame finds the end of the file again. */
    lt_buf_release(&r->frame);
    r->frame = img;
    lt_buf_init(&img, 0);
    r->pos = 0;
    r->next_index = 0;
    r->last_t = INT64_MIN;
    r->completion_order = false; /* what comes now is in arrival order */
    r->st.values = 0;
out:
    free(v);
    lt_buf_release(&raw);
    lt_buf_release(&img);
    return rc;
}

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
    /* LT_LIMIT_ELEMS by default, and in the same proportion when the
     * caller lowers max_array */
    r->max_elems = (uint64_t)LT_LIMIT_ELEMS / LT_LIMIT_ARRAY * r->o.max_array;
    r->path = strdup(path);
    r->in_cap = ZSTD_DStreamInSize();
    r->in = malloc(r->in_cap);
    r->dctx = ZSTD_createDCtx();
    lt_buf_init(&r->frame, r->o.max_frame_bytes + (1 << 16) + 1);
    lt_buf_init(&r->arena, SIZE_MAX);
    lt_buf_init(&r->extra, r->o.max_record_bytes * 2);
    lt_buf_init(&r->hdrbuf, r->o.max_record_bytes * 2 + 64);
    for (int k = 0; k < LT_BSTR_N; k++) {
        lt_buf_init(&r->bstr[k], r->o.max_record_bytes * 2);
        lt_buf_init(&r->boff[k], (size_t)r->o.max_array * 4 + 4);
    }
    if (!r->path || !r->in || !r->dctx) {
        lt_errset(err, LT_ENOMEM, "out of memory");
        lt_reader_close(r);
        return NULL;
    }
    ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_windowLogMax, WINDOW_LOG_MAX);
    if (r->o.salvage && !seekable) {
        lt_errset(err, LT_EINVAL, "%s: --salvage needs a file it can seek in, not a pipe", path);
        lt_reader_close(r);
        return NULL;
    }
    /* A friendly word for the commonest mistake: a file of another format. */
    if (fill(r, err) < 0) {
        lt_reader_close(r);
        return NULL;
    }
    if (r->in_len >= 4 &&
        !(r->in[0] == 0x28 && r->in[1] == 0xb5 && r->in[2] == 0x2f && r->in[3] == 0xfd)) {
        lt_errset(err, LT_EFORMAT,
                  "%s: not a loadtrace file (it does not start with a zstd frame; "
                  "for CSV or JSON lines use `loadtrace import`)",
                  path);
        lt_reader_close(r);
        return NULL;
    }
    if (decode_header(r, err) < 0) {
        lt_reader_close(r);
        return NULL;
    }
    if (r->completion_order && !r->o.file_order && sort_by_arrival(r, err) < 0) {
        lt_reader_close(r);
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
        lt_reader_close(r);
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

void lt_reader_close(struct lt_reader *r)
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
    for (int k = 0; k < LT_BSTR_N; k++) {
        lt_buf_release(&r->bstr[k]);
        lt_buf_release(&r->boff[k]);
    }
    free(r);
}

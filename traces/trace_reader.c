/*
 * Streaming reader of loadtrace files (see trace_reader.h for the contract
 * and docs/trace-format.md for the bytes).
 *
 * Reading goes frame by frame:
 *
 *   read compressed bytes --ZSTD_decompressStream--> frame buffer
 *        (until the frame ends and its checksum is verified)
 *   frame buffer --scan (limits)--> one value's bytes --msgpack_unpack--> object
 *        --decode--> struct lt_item
 *
 * No value is handed out before its whole frame has been verified, so a
 * damaged frame never yields garbage. Before msgpack-c sees a value, a small
 * scanner walks its bytes and enforces the limits (size, depth, element
 * counts): msgpack-c allocates arrays from their declared length, and a
 * hostile length must never reach it.
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

    msgpack_zone zone;
    struct lt_buf arena;   /* arrays and strings of the current item */
    struct lt_buf extra;   /* unknown keys of the current item, repacked */
    struct lt_buf hdrbuf;  /* the header's strings and meta, kept */

    struct lt_header hdr;
    struct lt_item item;
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
};

static int scan_value(struct scan *s, int depth);

static int scan_need(struct scan *s, size_t k)
{
    return s->n - s->i >= k ? 0 : LT_ETRUNC;
}

static uint64_t be(const uint8_t *p, int k)
{
    uint64_t v = 0;
    for (int j = 0; j < k; j++)
        v = v << 8 | p[j];
    return v;
}

static int scan_skip(struct scan *s, uint64_t k)
{
    if (s->n - s->i < k)
        return LT_ETRUNC;
    s->i += k;
    return 0;
}

static int scan_items(struct scan *s, uint64_t count, int per, int depth)
{
    if (count > s->max_array)
        return LT_ELIMIT;
    s->elems += count * per;
    if (s->elems > s->max_elems)
        return LT_ELIMIT;
    if (count * per > s->n - s->i) /* every element is at least a byte */
        return LT_ETRUNC;
    for (uint64_t j = 0; j < count * per; j++) {
        int rc = scan_value(s, depth + 1);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int scan_value(struct scan *s, int depth)
{
    if (depth > MAX_DEPTH)
        return LT_ELIMIT;
    if (scan_need(s, 1) < 0)
        return LT_ETRUNC;
    uint8_t b = s->p[s->i++];
    if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
        return 0;
    if (b >= 0x80 && b <= 0x8f)
        return scan_items(s, b & 0x0f, 2, depth);
    if (b >= 0x90 && b <= 0x9f)
        return scan_items(s, b & 0x0f, 1, depth);
    if (b >= 0xa0 && b <= 0xbf)
        return scan_skip(s, b & 0x1f);
    int lenbytes;
    switch (b) {
    case 0xcc: case 0xd0: return scan_skip(s, 1);
    case 0xcd: case 0xd1: return scan_skip(s, 2);
    case 0xca: case 0xce: case 0xd2: return scan_skip(s, 4);
    case 0xcb: case 0xcf: case 0xd3: return scan_skip(s, 8);
    case 0xd4: return scan_skip(s, 2);  /* fixext 1 */
    case 0xd5: return scan_skip(s, 3);
    case 0xd6: return scan_skip(s, 5);
    case 0xd7: return scan_skip(s, 9);
    case 0xd8: return scan_skip(s, 17);
    case 0xc4: case 0xd9: lenbytes = 1; goto blob;
    case 0xc5: case 0xda: lenbytes = 2; goto blob;
    case 0xc6: case 0xdb: lenbytes = 4; goto blob;
    case 0xc7: lenbytes = 1; goto ext;
    case 0xc8: lenbytes = 2; goto ext;
    case 0xc9: lenbytes = 4; goto ext;
    case 0xdc: case 0xde: lenbytes = 2; goto coll;
    case 0xdd: case 0xdf: lenbytes = 4; goto coll;
    default: return LT_EFORMAT; /* 0xc1, never used */
    }
blob:
    if (scan_need(s, lenbytes) < 0)
        return LT_ETRUNC;
    s->i += lenbytes;
    return scan_skip(s, be(s->p + s->i - lenbytes, lenbytes));
ext:
    if (scan_need(s, lenbytes) < 0)
        return LT_ETRUNC;
    s->i += lenbytes;
    return scan_skip(s, be(s->p + s->i - lenbytes, lenbytes) + 1);
coll:
    if (scan_need(s, lenbytes) < 0)
        return LT_ETRUNC;
    s->i += lenbytes;
    return scan_items(s, be(s->p + s->i - lenbytes, lenbytes), (b == 0xde || b == 0xdf) ? 2 : 1,
                      depth);
}

/* ---- decoding objects into structs ------------------------------------ */

struct dec {
    struct lt_reader *r;
    struct lt_err *err;
    const char *what; /* "record 12 (frame at byte 345)", made only on error */
};

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

static bool key_is(const msgpack_object *k, const char *s)
{
    size_t n = strlen(s);
    return k->via.str.size == n && memcmp(k->via.str.ptr, s, n) == 0;
}

static int get_i64(struct dec *d, const char *key, const msgpack_object *o, int64_t *v)
{
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        if (o->via.u64 > INT64_MAX)
            return bad(d, key, "is out of range");
        *v = (int64_t)o->via.u64;
        return 0;
    }
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        *v = o->via.i64;
        return 0;
    }
    return bad(d, key, "must be an integer");
}

static int get_u64(struct dec *d, const char *key, const msgpack_object *o, uint64_t *v)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return bad(d, key, "must be a non-negative integer");
    *v = o->via.u64;
    return 0;
}

static int get_u32(struct dec *d, const char *key, const msgpack_object *o, uint32_t *v)
{
    uint64_t x = 0;
    int rc = get_u64(d, key, o, &x);
    if (rc < 0)
        return rc;
    if (x > UINT32_MAX)
        return bad(d, key, "is larger than 4294967295");
    *v = (uint32_t)x;
    return 0;
}

static int get_double(struct dec *d, const char *key, const msgpack_object *o, double *v)
{
    switch (o->type) {
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: *v = o->via.f64; return 0;
    case MSGPACK_OBJECT_POSITIVE_INTEGER: *v = (double)o->via.u64; return 0;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: *v = (double)o->via.i64; return 0;
    default: return bad(d, key, "must be a number");
    }
}

static int get_bool(struct dec *d, const char *key, const msgpack_object *o, bool *v)
{
    if (o->type != MSGPACK_OBJECT_BOOLEAN)
        return bad(d, key, "must be true or false");
    *v = o->via.boolean;
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

static int get_str(struct dec *d, const char *key, const msgpack_object *o, const char **v,
                   size_t *len)
{
    if (o->type != MSGPACK_OBJECT_STR)
        return bad(d, key, "must be a string");
    char *s = arena_alloc(d->r, o->via.str.size + 1);
    if (!s)
        return lt_errset(d->err, LT_ENOMEM, "%s: out of memory", d->r->path);
    memcpy(s, o->via.str.ptr, o->via.str.size);
    s[o->via.str.size] = '\0';
    *v = s;
    if (len)
        *len = o->via.str.size;
    return 0;
}

static int get_array(struct dec *d, const char *key, const msgpack_object *o,
                     const msgpack_object_array **a)
{
    if (o->type != MSGPACK_OBJECT_ARRAY)
        return bad(d, key, "must be an array");
    *a = &o->via.array;
    return 0;
}

/* Keep an unknown key and its value, repacked, for tools that copy. */
static int keep_extra(struct dec *d, const msgpack_object_kv *kv, struct lt_extra *x)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_object(&pk, kv->key);
    msgpack_pack_object(&pk, kv->val);
    int rc = lt_buf_append(&d->r->extra, sb.data, sb.size);
    msgpack_sbuffer_destroy(&sb);
    if (rc < 0)
        return lt_errset(d->err, rc, "%s: %s: unknown keys too large", d->r->path,
                         what_of(d->r, (char[96]){0}));
    x->n++;
    return 0;
}

static int decode_record(struct dec *d, const msgpack_object_map *m, struct lt_record *rec)
{
    int rc = 0;
    bool have_t = false;
    memset(rec, 0, sizeof *rec);
    for (uint32_t i = 0; i < m->size; i++) {
        const msgpack_object *k = &m->ptr[i].key, *v = &m->ptr[i].val;
        if (key_is(k, K_T)) {
            LT_TRY(get_i64(d, K_T, v, &rec->t));
            if (rec->t < 0)
                return bad(d, K_T, "must not be negative");
            have_t = true;
        } else if (key_is(k, K_SESSION)) {
            LT_TRY(get_u64(d, K_SESSION, v, &rec->session));
            rec->has |= LT_HAS_SESSION;
        } else if (key_is(k, K_TURN)) {
            LT_TRY(get_u32(d, K_TURN, v, &rec->turn));
            rec->has |= LT_HAS_TURN;
        } else if (key_is(k, K_THINK)) {
            LT_TRY(get_i64(d, K_THINK, v, &rec->think));
            rec->has |= LT_HAS_THINK;
        } else if (key_is(k, K_API)) {
            LT_TRY(get_str(d, K_API, v, &rec->api, NULL));
        } else if (key_is(k, K_MODEL)) {
            LT_TRY(get_str(d, K_MODEL, v, &rec->model, NULL));
        } else if (key_is(k, K_IN)) {
            LT_TRY(get_u32(d, K_IN, v, &rec->in));
            rec->has |= LT_HAS_IN;
        } else if (key_is(k, K_CACHED)) {
            LT_TRY(get_u32(d, K_CACHED, v, &rec->cached));
            rec->has |= LT_HAS_CACHED;
        } else if (key_is(k, K_OUT)) {
            LT_TRY(get_u32(d, K_OUT, v, &rec->out));
            rec->has |= LT_HAS_OUT;
        } else if (key_is(k, K_REASONING)) {
            LT_TRY(get_u32(d, K_REASONING, v, &rec->reasoning));
            rec->has |= LT_HAS_REASONING;
        } else if (key_is(k, K_MAX_TOKENS)) {
            LT_TRY(get_u32(d, K_MAX_TOKENS, v, &rec->max_tokens));
            rec->has |= LT_HAS_MAX_TOKENS;
        } else if (key_is(k, K_MSGS)) {
            const msgpack_object_array *a = NULL;
            LT_TRY(get_array(d, K_MSGS, v, &a));
            struct lt_msg *msgs = arena_alloc(d->r, (size_t)a->size * sizeof *msgs);
            if (a->size && !msgs)
                return lt_errset(d->err, LT_ENOMEM, "%s: out of memory", d->r->path);
            for (uint32_t j = 0; j < a->size; j++) {
                const msgpack_object *e = &a->ptr[j];
                if (e->type != MSGPACK_OBJECT_ARRAY || e->via.array.size != 2 ||
                    e->via.array.ptr[0].type != MSGPACK_OBJECT_STR)
                    return bad(d, K_MSGS, "must hold [role, tokens] pairs");
                const msgpack_object_str *role = &e->via.array.ptr[0].via.str;
                if (role->size > LT_ROLE_MAX)
                    return bad(d, K_MSGS, "has a role name longer than 15 bytes");
                memcpy(msgs[j].role, role->ptr, role->size);
                msgs[j].role[role->size] = '\0';
                LT_TRY(get_u32(d, K_MSGS, &e->via.array.ptr[1], &msgs[j].tokens));
            }
            rec->msgs = msgs;
            rec->n_msgs = a->size;
            rec->has |= LT_HAS_MSGS;
        } else if (key_is(k, K_TOOLS)) {
            const msgpack_object_array *a = NULL;
            LT_TRY(get_array(d, K_TOOLS, v, &a));
            if (a->size != 2)
                return bad(d, K_TOOLS, "must be [count, tokens]");
            LT_TRY(get_u32(d, K_TOOLS, &a->ptr[0], &rec->tools_count));
            LT_TRY(get_u32(d, K_TOOLS, &a->ptr[1], &rec->tools_tokens));
            rec->has |= LT_HAS_TOOLS;
        } else if (key_is(k, K_CALLS)) {
            const msgpack_object_array *a = NULL;
            LT_TRY(get_array(d, K_CALLS, v, &a));
            uint32_t *calls = arena_alloc(d->r, (size_t)a->size * sizeof *calls);
            if (a->size && !calls)
                return lt_errset(d->err, LT_ENOMEM, "%s: out of memory", d->r->path);
            for (uint32_t j = 0; j < a->size; j++)
                LT_TRY(get_u32(d, K_CALLS, &a->ptr[j], &calls[j]));
            rec->calls = calls;
            rec->n_calls = a->size;
            rec->has |= LT_HAS_CALLS;
        } else if (key_is(k, K_BLOCKS)) {
            const msgpack_object_array *a = NULL;
            LT_TRY(get_array(d, K_BLOCKS, v, &a));
            uint64_t *blocks = arena_alloc(d->r, (size_t)a->size * sizeof *blocks);
            if (a->size && !blocks)
                return lt_errset(d->err, LT_ENOMEM, "%s: out of memory", d->r->path);
            for (uint32_t j = 0; j < a->size; j++)
                LT_TRY(get_u64(d, K_BLOCKS, &a->ptr[j], &blocks[j]));
            rec->blocks = blocks;
            rec->n_blocks = a->size;
            rec->has |= LT_HAS_BLOCKS;
        } else if (key_is(k, K_ORIG)) {
            if (v->type != MSGPACK_OBJECT_MAP)
                return bad(d, K_ORIG, "must be a map");
            for (uint32_t j = 0; j < v->via.map.size; j++) {
                const msgpack_object_kv *kv = &v->via.map.ptr[j];
                if (kv->key.type != MSGPACK_OBJECT_STR)
                    return bad(d, K_ORIG, "has a key that is not a string");
                int64_t x = 0;
                if (key_is(&kv->key, K_STATUS)) {
                    LT_TRY(get_i64(d, "orig.status", &kv->val, &x));
                    if (x < INT32_MIN || x > INT32_MAX)
                        return bad(d, "orig.status", "is out of range");
                    rec->orig_status = (int32_t)x;
                    rec->has |= LT_HAS_ORIG_STATUS;
                } else if (key_is(&kv->key, K_TTFT)) {
                    LT_TRY(get_i64(d, "orig.ttft", &kv->val, &rec->orig_ttft));
                    rec->has |= LT_HAS_ORIG_TTFT;
                } else if (key_is(&kv->key, K_E2E)) {
                    LT_TRY(get_i64(d, "orig.e2e", &kv->val, &rec->orig_e2e));
                    rec->has |= LT_HAS_ORIG_E2E;
                } /* other keys of orig are ignored, not kept */
            }
        } else if (key_is(k, K_FINISH)) {
            LT_TRY(get_str(d, K_FINISH, v, &rec->finish, NULL));
        } else if (key_is(k, K_TEXT)) {
            LT_TRY(get_str(d, K_TEXT, v, &rec->text, &rec->text_len));
        } else if (key_is(k, K_FAILED)) {
            bool b = false;
            LT_TRY(get_bool(d, K_FAILED, v, &b));
            if (b)
                rec->has |= LT_HAS_FAILED;
        } else if (key_is(k, K_EST)) {
            bool b = false;
            LT_TRY(get_bool(d, K_EST, v, &b));
            if (b)
                rec->has |= LT_HAS_ESTIMATED;
        } else {
            LT_TRY(keep_extra(d, &m->ptr[i], &rec->extra));
        }
    }
    if (!have_t)
        return lt_errset(d->err, LT_EFORMAT, "%s: %s: required key \"t\" is missing", d->r->path,
                         what_of(d->r, (char[96]){0}));
out:
    return rc;
}

static int decode_run(struct dec *d, const msgpack_object_map *m, struct lt_run *run)
{
    int rc = 0;
    bool have_id = false;
    memset(run, 0, sizeof *run);
    for (uint32_t i = 0; i < m->size; i++) {
        const msgpack_object *k = &m->ptr[i].key, *v = &m->ptr[i].val;
        if (key_is(k, K_REC)) {
            continue;
        } else if (key_is(k, K_RUN)) {
            LT_TRY(get_u32(d, K_RUN, v, &run->id));
            have_id = true;
        } else if (key_is(k, K_MODE)) {
            LT_TRY(get_str(d, K_MODE, v, &run->mode, NULL));
        } else if (key_is(k, K_CONCURRENCY)) {
            LT_TRY(get_u32(d, K_CONCURRENCY, v, &run->concurrency));
        } else if (key_is(k, K_RATE)) {
            LT_TRY(get_double(d, K_RATE, v, &run->rate));
        } else if (key_is(k, K_SPEED)) {
            LT_TRY(get_double(d, K_SPEED, v, &run->speed));
        } else if (key_is(k, K_TARGET)) {
            LT_TRY(get_str(d, K_TARGET, v, &run->target, NULL));
        } else if (key_is(k, K_MODEL)) {
            LT_TRY(get_str(d, K_MODEL, v, &run->model, NULL));
        } else if (key_is(k, K_START)) {
            LT_TRY(get_str(d, K_START, v, &run->start, NULL));
        } else if (key_is(k, K_VERSION)) {
            LT_TRY(get_str(d, K_VERSION, v, &run->version, NULL));
        } else if (key_is(k, K_WARMUP)) {
            LT_TRY(get_u32(d, K_WARMUP, v, &run->warmup));
        } else {
            LT_TRY(keep_extra(d, &m->ptr[i], &run->extra));
        }
    }
    if (!have_id)
        return lt_errset(d->err, LT_EFORMAT, "%s: %s: run record without \"run\"", d->r->path,
                         what_of(d->r, (char[96]){0}));
out:
    return rc;
}

static int decode_result(struct dec *d, const msgpack_object_map *m, struct lt_result *res)
{
    int rc = 0;
    bool have_i = false, have_run = false, have_sched = false;
    const msgpack_object_array *chunks = NULL;
    memset(res, 0, sizeof *res);
    for (uint32_t i = 0; i < m->size; i++) {
        const msgpack_object *k = &m->ptr[i].key, *v = &m->ptr[i].val;
        if (key_is(k, K_I)) {
            LT_TRY(get_u64(d, K_I, v, &res->index));
            have_i = true;
        } else if (key_is(k, K_RUN)) {
            LT_TRY(get_u32(d, K_RUN, v, &res->run));
            have_run = true;
        } else if (key_is(k, K_SCHED)) {
            LT_TRY(get_i64(d, K_SCHED, v, &res->sched));
            have_sched = true;
        } else if (key_is(k, K_SENT)) {
            LT_TRY(get_i64(d, K_SENT, v, &res->sent));
            res->has |= LT_RHAS_SENT;
        } else if (key_is(k, K_FB)) {
            LT_TRY(get_i64(d, K_FB, v, &res->first_byte));
            res->has |= LT_RHAS_FIRST_BYTE;
        } else if (key_is(k, K_FT)) {
            LT_TRY(get_i64(d, K_FT, v, &res->first_token));
            res->has |= LT_RHAS_FIRST_TOKEN;
        } else if (key_is(k, K_FC)) {
            LT_TRY(get_i64(d, K_FC, v, &res->first_content));
            res->has |= LT_RHAS_FIRST_CONTENT;
        } else if (key_is(k, K_END)) {
            LT_TRY(get_i64(d, K_END, v, &res->end));
            res->has |= LT_RHAS_END;
        } else if (key_is(k, K_CHUNKS)) {
            LT_TRY(get_array(d, K_CHUNKS, v, &chunks));
            if (chunks->size % 2)
                return bad(d, K_CHUNKS, "must hold [dt, tokens] pairs");
            res->has |= LT_RHAS_CHUNKS;
        } else if (key_is(k, K_IN)) {
            LT_TRY(get_u32(d, K_IN, v, &res->in));
            res->has |= LT_RHAS_IN;
        } else if (key_is(k, K_OUT)) {
            LT_TRY(get_u32(d, K_OUT, v, &res->out));
            res->has |= LT_RHAS_OUT;
        } else if (key_is(k, K_REASONING)) {
            LT_TRY(get_u32(d, K_REASONING, v, &res->reasoning));
            res->has |= LT_RHAS_REASONING;
        } else if (key_is(k, K_CACHED)) {
            LT_TRY(get_u32(d, K_CACHED, v, &res->cached));
            res->has |= LT_RHAS_CACHED;
        } else if (key_is(k, K_WANT_IN)) {
            LT_TRY(get_u32(d, K_WANT_IN, v, &res->want_in));
            res->has |= LT_RHAS_WANT_IN;
        } else if (key_is(k, K_WANT_OUT)) {
            LT_TRY(get_u32(d, K_WANT_OUT, v, &res->want_out));
            res->has |= LT_RHAS_WANT_OUT;
        } else if (key_is(k, K_STATUS)) {
            int64_t x = 0;
            LT_TRY(get_i64(d, K_STATUS, v, &x));
            if (x < INT32_MIN || x > INT32_MAX)
                return bad(d, K_STATUS, "is out of range");
            res->status = (int32_t)x;
            res->has |= LT_RHAS_STATUS;
        } else if (key_is(k, K_ERR)) {
            LT_TRY(get_str(d, K_ERR, v, &res->err, NULL));
        } else if (key_is(k, K_FINISH)) {
            LT_TRY(get_str(d, K_FINISH, v, &res->finish, NULL));
        } else if (key_is(k, K_COUNT)) {
            LT_TRY(get_str(d, K_COUNT, v, &res->count, NULL));
        } else if (key_is(k, K_WARMUP)) {
            LT_TRY(get_bool(d, K_WARMUP, v, &res->warmup));
        } else {
            LT_TRY(keep_extra(d, &m->ptr[i], &res->extra));
        }
    }
    if (!have_i || !have_run || !have_sched)
        return lt_errset(d->err, LT_EFORMAT,
                         "%s: %s: result record without \"%s\"", d->r->path,
                         what_of(d->r, (char[96]){0}),
                         !have_i ? K_I : !have_run ? K_RUN : K_SCHED);
    if (chunks) {
        uint32_t n = chunks->size / 2;
        struct lt_chunk *c = arena_alloc(d->r, (size_t)n * sizeof *c);
        if (n && !c)
            return lt_errset(d->err, LT_ENOMEM, "%s: out of memory", d->r->path);
        int64_t prev = (res->has & LT_RHAS_SENT) ? res->sent : res->sched;
        for (uint32_t j = 0; j < n; j++) {
            int64_t dt = 0;
            LT_TRY(get_i64(d, K_CHUNKS, &chunks->ptr[2 * j], &dt));
            LT_TRY(get_u32(d, K_CHUNKS, &chunks->ptr[2 * j + 1], &c[j].tokens));
            c[j].t = prev + dt;
            prev = c[j].t;
        }
        res->chunks = c;
        res->n_chunks = n;
    }
out:
    return rc;
}

/* ---- values ----------------------------------------------------------- */

/* Find, check and unpack the value at r->pos of the current frame. */
static int unpack_value(struct lt_reader *r, msgpack_object *obj, size_t *len,
                        struct lt_err *err, const char *what)
{
    struct scan s = {(const uint8_t *)r->frame.p + r->pos, r->frame.len - r->pos, 0, 0,
                     r->max_elems, r->o.max_array};
    int rc = scan_value(&s, 0);
    if (rc == 0 && s.i > r->o.max_record_bytes)
        rc = LT_ELIMIT;
    char wbuf[96];
    if (rc < 0) {
        if (!what)
            what = what_of(r, wbuf);
        const char *why = rc == LT_ELIMIT    ? "exceeds a reader limit (size, length or depth)"
                          : rc == LT_ETRUNC ? "is cut short (values never span frames)"
                                            : "is not valid msgpack";
        return lt_errset(err, rc == LT_ETRUNC ? LT_EFORMAT : rc,
                         "%s: %s, at offset %zu of the frame's %zu bytes, %s", r->path, what,
                         r->pos, r->frame.len, why);
    }
    msgpack_zone_clear(&r->zone);
    size_t off = 0;
    msgpack_unpack_return ur =
        msgpack_unpack(r->frame.p + r->pos, s.i, &off, &r->zone, obj);
    if (ur != MSGPACK_UNPACK_SUCCESS && ur != MSGPACK_UNPACK_EXTRA_BYTES)
        return lt_errset(err, ur == MSGPACK_UNPACK_NOMEM_ERROR ? LT_ENOMEM : LT_EFORMAT,
                         "%s: %s is not valid msgpack", r->path, what ? what : what_of(r, wbuf));
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
    return lt_buf_reserve(&r->arena, need);
}

static int decode_header(struct lt_reader *r, struct lt_err *err)
{
    int rc = read_frame(r, err);
    if (rc == 0)
        return lt_errset(err, LT_EFORMAT, "%s: not a loadtrace file: it is empty", r->path);
    if (rc < 0)
        return lt_errf(err, rc, "%s: the header cannot be read", r->path);
    msgpack_object o;
    size_t len;
    if ((rc = unpack_value(r, &o, &len, err, "the header")) < 0)
        return rc;
    struct dec d = {r, err, "the header"};
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
        if (key_is(k, K_FORMAT)) {
            if (v->type != MSGPACK_OBJECT_STR || v->via.str.size != strlen(LT_FORMAT_NAME) ||
                memcmp(v->via.str.ptr, LT_FORMAT_NAME, v->via.str.size))
                return lt_errset(err, LT_EFORMAT,
                                 "%s: not a loadtrace file: header format is not \"loadtrace\"",
                                 r->path);
            have_format = true;
        } else if (key_is(k, K_VERSION)) {
            uint32_t ver = 0;
            if ((rc = get_u32(&d, K_VERSION, v, &ver)) < 0)
                return rc;
            r->hdr.version = ver;
            have_version = true;
        } else if (key_is(k, K_KIND) && v->type == MSGPACK_OBJECT_STR) {
            if (key_is(v, "trace"))
                r->hdr.kind = LT_KIND_TRACE;
            else if (key_is(v, "results"))
                r->hdr.kind = LT_KIND_RESULTS;
            else
                return lt_errset(err, LT_EFORMAT, "%s: header kind is neither trace nor results",
                                 r->path);
            have_kind = true;
        } else if ((key_is(k, K_CREATED) || key_is(k, K_SOURCE)) &&
                   v->type == MSGPACK_OBJECT_STR) {
            memcpy(hp, v->via.str.ptr, v->via.str.size);
            hp[v->via.str.size] = '\0';
            if (key_is(k, K_CREATED))
                r->hdr.created = hp;
            else
                r->hdr.source = hp;
            hp += v->via.str.size + 1;
        } else if (key_is(k, K_BLOCK_TOKENS)) {
            if ((rc = get_u32(&d, K_BLOCK_TOKENS, v, &r->hdr.block_tokens)) < 0)
                return rc;
        } else {
            /* meta and unknown keys: repack and keep */
            msgpack_sbuffer sb;
            msgpack_sbuffer_init(&sb);
            msgpack_packer pk;
            msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
            bool meta = key_is(k, K_META);
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

int lt_reader_next(struct lt_reader *r, const struct lt_item **itemp, struct lt_err *err)
{
    if (r->failed)
        return lt_errset(err, LT_EINVAL, "%s: reading cannot go on after an error", r->path);
    for (;;) {
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

        char what[96];
        msgpack_object o;
        size_t len;
        r->next_index++; /* what_of() names next_index - 1 */
        int rc = unpack_value(r, &o, &len, err, NULL);
        if (rc < 0) {
            if (!r->o.salvage || rc == LT_ENOMEM) {
                r->failed = true;
                return rc;
            }
            /* The rest of this frame cannot be delimited: drop it. */
            r->st.skipped_values++;
            if (r->o.on_skip)
                r->o.on_skip(r->o.ud, err ? err->msg : "a damaged value");
            r->pos = r->frame.len;
            continue;
        }
        struct lt_item *it = &r->item;
        memset(it, 0, sizeof *it);
        it->index = r->next_index - 1;
        it->frame_offset = r->frame_off;
        it->raw = (const uint8_t *)r->frame.p + r->pos;
        it->raw_len = len;
        r->pos += len;
        if ((rc = arena_prepare(r, len)) < 0) {
            r->failed = true;
            return lt_errset(err, LT_ENOMEM, "%s: out of memory", r->path);
        }
        struct dec d = {r, err, NULL};
        if (o.type != MSGPACK_OBJECT_MAP) {
            rc = lt_errset(err, LT_EFORMAT, "%s: %s is not a map", r->path, what_of(r, what));
        } else {
            bool keys_ok = true;
            const msgpack_object_map *m = &o.via.map;
            bool is_run = false;
            for (uint32_t i = 0; i < m->size; i++) {
                if (m->ptr[i].key.type != MSGPACK_OBJECT_STR)
                    keys_ok = false;
                else if (key_is(&m->ptr[i].key, K_REC) &&
                         m->ptr[i].val.type == MSGPACK_OBJECT_STR &&
                         key_is(&m->ptr[i].val, "run"))
                    is_run = true;
            }
            if (!keys_ok) {
                rc = lt_errset(err, LT_EFORMAT, "%s: %s has a key that is not a string", r->path,
                               what_of(r, what));
            } else if (r->hdr.kind == LT_KIND_TRACE) {
                it->type = LT_ITEM_RECORD;
                rc = decode_record(&d, m, &it->rec);
                if (rc == 0 && it->rec.t < r->last_t)
                    rc = lt_errset(err, LT_EFORMAT,
                                   "%s: %s: t=%lld us is earlier than the previous record's "
                                   "%lld us; trace records must be in arrival order",
                                   r->path, what_of(r, what), (long long)it->rec.t,
                                   (long long)r->last_t);
                if (rc == 0)
                    r->last_t = it->rec.t;
                it->rec.extra.data = (const uint8_t *)r->extra.p;
                it->rec.extra.len = r->extra.len;
            } else if (is_run) {
                it->type = LT_ITEM_RUN;
                rc = decode_run(&d, m, &it->run);
                it->run.extra.data = (const uint8_t *)r->extra.p;
                it->run.extra.len = r->extra.len;
            } else {
                it->type = LT_ITEM_RESULT;
                rc = decode_result(&d, m, &it->res);
                it->res.extra.data = (const uint8_t *)r->extra.p;
                it->res.extra.len = r->extra.len;
            }
        }
        if (rc < 0) {
            if (!r->o.salvage || rc == LT_ENOMEM) {
                r->failed = true;
                return rc;
            }
            r->st.skipped_values++;
            if (r->o.on_skip)
                r->o.on_skip(r->o.ud, err ? err->msg : "a bad value");
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
    if (!r->path || !r->in || !r->dctx || !msgpack_zone_init(&r->zone, 8192)) {
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
    msgpack_zone_destroy(&r->zone);
    free(r);
}

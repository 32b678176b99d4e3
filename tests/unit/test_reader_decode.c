/*
 * Unit tests of the reader's value decoder (traces/trace_reader.c), on
 * values written byte by byte: every msgpack int encoding for every integer
 * field, with the range each field's type allows; float 32 and 64; strings
 * of every str encoding; keys that are prefixes of known keys; unknown keys
 * whose values are bin, ext or non-minimal encodings, kept byte for byte;
 * and the checks that look at the whole map (a key that is not a string,
 * "rec": "run" after a bad key, the arrival order).
 *
 * The expected values and errors come from the format's rules (a table of
 * field types below), not from the decoder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "traces/trace_reader.h"

#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* ---- building values by hand ----------------------------------------- */

struct mb {
    uint8_t b[4096];
    size_t n;
};

static void put(struct mb *m, const void *p, size_t n)
{
    assert_true(m->n + n <= sizeof m->b);
    memcpy(m->b + m->n, p, n);
    m->n += n;
}

static void put1(struct mb *m, unsigned x)
{
    uint8_t b = (uint8_t)x;
    put(m, &b, 1);
}

static void put_be(struct mb *m, uint64_t v, int k)
{
    for (int j = k - 1; j >= 0; j--)
        put1(m, (unsigned)(v >> (8 * j)) & 0xff);
}

static void put_str(struct mb *m, const char *s)
{
    size_t n = strlen(s);
    assert_true(n < 32);
    put1(m, 0xa0 | (unsigned)n);
    put(m, s, n);
}

/* An integer: its sign and magnitude. */
struct iv {
    bool neg;
    uint64_t u; /* when !neg */
    int64_t s;  /* when neg */
};

#define POS(x) ((struct iv){false, (uint64_t)(x), 0})
#define NEG(x) ((struct iv){true, 0, (int64_t)(x)})

enum enc { E_PFIX, E_NFIX, E_U8, E_U16, E_U32, E_U64, E_I8, E_I16, E_I32, E_I64, E_COUNT };

/* Write v in encoding e; false when e cannot hold v. */
static bool put_int(struct mb *m, enum enc e, struct iv v)
{
    static const int64_t smin[] = {INT8_MIN, INT16_MIN, INT32_MIN, INT64_MIN};
    static const int64_t smax[] = {INT8_MAX, INT16_MAX, INT32_MAX, INT64_MAX};
    static const uint64_t umax[] = {UINT8_MAX, UINT16_MAX, UINT32_MAX, UINT64_MAX};
    switch (e) {
    case E_PFIX:
        if (v.neg || v.u > 127)
            return false;
        put1(m, (unsigned)v.u);
        return true;
    case E_NFIX:
        if (!v.neg || v.s < -32)
            return false;
        put1(m, (unsigned)(v.s & 0xff));
        return true;
    case E_U8:
    case E_U16:
    case E_U32:
    case E_U64: {
        int k = e - E_U8;
        if (v.neg || v.u > umax[k])
            return false;
        put1(m, 0xcc + (unsigned)k);
        put_be(m, v.u, 1 << k);
        return true;
    }
    default: {
        int k = e - E_I8;
        if (v.neg ? v.s < smin[k] : v.u > (uint64_t)smax[k])
            return false;
        put1(m, 0xd0 + (unsigned)k);
        put_be(m, v.neg ? (uint64_t)v.s : v.u, 1 << k);
        return true;
    }
    }
}

/* A zstd frame as loadtrace writes them: with its content checksum, which
 * the reader requires (docs/trace-format.md §1). */
static size_t zframe(void *dst, size_t cap, const void *src, size_t n, int level)
{
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    size_t z = ZSTD_compress2(c, dst, cap, src, n);
    ZSTD_freeCCtx(c);
    return z;
}

/* A file of the given kind: a header frame, then one frame of `vals`. */
static uint8_t *make_file(enum lt_kind kind, const struct mb *vals, size_t *len)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 3);
    msgpack_pack_str_with_body(&pk, "format", 6);
    msgpack_pack_str_with_body(&pk, "loadtrace", 9);
    msgpack_pack_str_with_body(&pk, "version", 7);
    msgpack_pack_uint32(&pk, 1);
    msgpack_pack_str_with_body(&pk, "kind", 4);
    if (kind == LT_KIND_TRACE)
        msgpack_pack_str_with_body(&pk, "trace", 5);
    else
        msgpack_pack_str_with_body(&pk, "results", 7);
    size_t cap = ZSTD_compressBound(sb.size) + ZSTD_compressBound(vals->n);
    uint8_t *out = malloc(cap);
    assert_non_null(out);
    size_t a = zframe(out, cap, sb.data, sb.size, 1);
    assert_false(ZSTD_isError(a));
    size_t b = zframe(out + a, cap - a, vals->b, vals->n, 1);
    assert_false(ZSTD_isError(b));
    msgpack_sbuffer_destroy(&sb);
    *len = a + b;
    return out;
}

/* Read the one value of a file made of `vals`: 1 and *it on success, or
 * the error code with err filled. The reader is returned for freeing. */
static int read_one(enum lt_kind kind, const struct mb *vals, struct lt_reader **rp,
                    uint8_t **filep, const struct lt_item **it, struct lt_err *err)
{
    size_t len;
    *filep = make_file(kind, vals, &len);
    *rp = lt_reader_open_mem(*filep, len, NULL, err);
    assert_non_null(*rp);
    return lt_reader_next(*rp, it, err);
}

/* ---- integers: every encoding, every field -------------------------- */

enum ftype { F_T, F_I64, F_U64, F_U32, F_STATUS };
enum fwhere { W_TOP, W_ORIG, W_ARRAY1, W_TOOLS, W_MSGS, W_CHUNK_DT, W_CHUNK_TOK };

struct field {
    enum lt_kind kind;
    bool run;         /* a run record (results files) */
    const char *key;  /* top-level key */
    const char *sub;  /* key inside orig */
    const char *name; /* as the error message names it */
    enum ftype type;
    enum fwhere where;
};

static const struct field fields[] = {
    {LT_KIND_TRACE, false, "t", NULL, "t", F_T, W_TOP},
    {LT_KIND_TRACE, false, "session", NULL, "session", F_U64, W_TOP},
    {LT_KIND_TRACE, false, "turn", NULL, "turn", F_U32, W_TOP},
    {LT_KIND_TRACE, false, "think", NULL, "think", F_I64, W_TOP},
    {LT_KIND_TRACE, false, "in", NULL, "in", F_U32, W_TOP},
    {LT_KIND_TRACE, false, "cached", NULL, "cached", F_U32, W_TOP},
    {LT_KIND_TRACE, false, "out", NULL, "out", F_U32, W_TOP},
    {LT_KIND_TRACE, false, "reasoning", NULL, "reasoning", F_U32, W_TOP},
    {LT_KIND_TRACE, false, "max_tokens", NULL, "max_tokens", F_U32, W_TOP},
    {LT_KIND_TRACE, false, "cancel_tokens", NULL, "cancel_tokens", F_U32, W_TOP},
    {LT_KIND_TRACE, false, "calls", NULL, "calls", F_U32, W_ARRAY1},
    {LT_KIND_TRACE, false, "blocks", NULL, "blocks", F_U64, W_ARRAY1},
    {LT_KIND_TRACE, false, "tools", NULL, "tools", F_U32, W_TOOLS},
    {LT_KIND_TRACE, false, "msgs", NULL, "msgs", F_U32, W_MSGS},
    {LT_KIND_TRACE, false, "orig", "status", "orig.status", F_STATUS, W_ORIG},
    {LT_KIND_TRACE, false, "orig", "ttft", "orig.ttft", F_I64, W_ORIG},
    {LT_KIND_TRACE, false, "orig", "e2e", "orig.e2e", F_I64, W_ORIG},
    {LT_KIND_RESULTS, true, "run", NULL, "run", F_U32, W_TOP},
    {LT_KIND_RESULTS, true, "concurrency", NULL, "concurrency", F_U32, W_TOP},
    {LT_KIND_RESULTS, true, "warmup", NULL, "warmup", F_U32, W_TOP},
    {LT_KIND_RESULTS, false, "i", NULL, "i", F_U64, W_TOP},
    {LT_KIND_RESULTS, false, "run", NULL, "run", F_U32, W_TOP},
    {LT_KIND_RESULTS, false, "sched", NULL, "sched", F_I64, W_TOP},
    {LT_KIND_RESULTS, false, "sent", NULL, "sent", F_I64, W_TOP},
    {LT_KIND_RESULTS, false, "fb", NULL, "fb", F_I64, W_TOP},
    {LT_KIND_RESULTS, false, "ft", NULL, "ft", F_I64, W_TOP},
    {LT_KIND_RESULTS, false, "fc", NULL, "fc", F_I64, W_TOP},
    {LT_KIND_RESULTS, false, "end", NULL, "end", F_I64, W_TOP},
    {LT_KIND_RESULTS, false, "in", NULL, "in", F_U32, W_TOP},
    {LT_KIND_RESULTS, false, "out", NULL, "out", F_U32, W_TOP},
    {LT_KIND_RESULTS, false, "reasoning", NULL, "reasoning", F_U32, W_TOP},
    {LT_KIND_RESULTS, false, "cached", NULL, "cached", F_U32, W_TOP},
    {LT_KIND_RESULTS, false, "want_in", NULL, "want_in", F_U32, W_TOP},
    {LT_KIND_RESULTS, false, "want_out", NULL, "want_out", F_U32, W_TOP},
    {LT_KIND_RESULTS, false, "status", NULL, "status", F_STATUS, W_TOP},
    {LT_KIND_RESULTS, false, "chunks", NULL, "chunks", F_I64, W_CHUNK_DT},
    {LT_KIND_RESULTS, false, "chunks", NULL, "chunks", F_U32, W_CHUNK_TOK},
};

/* The field's value as the decoder delivered it. */
static struct iv got_value(const struct field *f, const struct lt_item *it)
{
    const struct lt_record *r = &it->rec;
    const struct lt_result *s = &it->res;
    int64_t x = 0;
    if (f->run) {
        assert_int_equal(it->type, LT_ITEM_RUN);
        if (!strcmp(f->key, "run"))
            return POS(it->run.id);
        if (!strcmp(f->key, "concurrency"))
            return POS(it->run.concurrency);
        return POS(it->run.warmup);
    }
    if (f->kind == LT_KIND_TRACE) {
        switch (f->where) {
        case W_ARRAY1:
            if (!strcmp(f->key, "calls"))
                return assert_int_equal(r->n_calls, 1), POS(r->calls[0]);
            return assert_int_equal(r->n_blocks, 1), POS(r->blocks[0]);
        case W_TOOLS:
            return assert_int_equal(r->tools_tokens, 1), POS(r->tools_count);
        case W_MSGS:
            assert_int_equal(r->n_msgs, 1);
            assert_string_equal(r->msgs[0].role, "user");
            return POS(r->msgs[0].tokens);
        case W_ORIG:
            x = !strcmp(f->sub, "status") ? r->orig_status
                : !strcmp(f->sub, "ttft") ? r->orig_ttft
                                          : r->orig_e2e;
            break;
        default:
            if (!strcmp(f->key, "t"))
                x = r->t;
            else if (!strcmp(f->key, "session"))
                return POS(r->session);
            else if (!strcmp(f->key, "think"))
                x = r->think;
            else
                return POS(!strcmp(f->key, "turn")            ? r->turn
                           : !strcmp(f->key, "in")            ? r->in
                           : !strcmp(f->key, "cached")        ? r->cached
                           : !strcmp(f->key, "out")           ? r->out
                           : !strcmp(f->key, "reasoning")     ? r->reasoning
                           : !strcmp(f->key, "cancel_tokens") ? r->cancel_tokens
                                                              : r->max_tokens);
        }
        return x < 0 ? NEG(x) : POS(x);
    }
    assert_int_equal(it->type, LT_ITEM_RESULT);
    if (f->where == W_CHUNK_DT || f->where == W_CHUNK_TOK) {
        assert_int_equal(s->n_chunks, 1);
        if (f->where == W_CHUNK_TOK)
            return assert_true(s->chunks[0].t == 1), POS(s->chunks[0].tokens);
        x = s->chunks[0].t; /* sched 0, no sent: t = dt */
        assert_int_equal(s->chunks[0].tokens, 1);
    } else if (!strcmp(f->key, "i")) {
        return POS(s->index);
    } else if (!strcmp(f->key, "run")) {
        return POS(s->run);
    } else if (!strcmp(f->key, "status")) {
        x = s->status;
    } else if (!strcmp(f->key, "sched")) {
        x = s->sched;
    } else if (!strcmp(f->key, "sent")) {
        x = s->sent;
    } else if (!strcmp(f->key, "fb")) {
        x = s->first_byte;
    } else if (!strcmp(f->key, "ft")) {
        x = s->first_token;
    } else if (!strcmp(f->key, "fc")) {
        x = s->first_content;
    } else if (!strcmp(f->key, "end")) {
        x = s->end;
    } else {
        return POS(!strcmp(f->key, "in")          ? s->in
                   : !strcmp(f->key, "out")       ? s->out
                   : !strcmp(f->key, "reasoning") ? s->reasoning
                   : !strcmp(f->key, "cached")    ? s->cached
                   : !strcmp(f->key, "want_in")   ? s->want_in
                                                  : s->want_out);
    }
    return x < 0 ? NEG(x) : POS(x);
}

/* What the format's rules say of v for a field of type t: NULL (accepted)
 * or the end of the error message. */
static const char *expected_error(enum ftype t, struct iv v)
{
    switch (t) {
    case F_U64:
        return v.neg ? "must be a non-negative integer" : NULL;
    case F_U32:
        return v.neg              ? "must be a non-negative integer"
               : v.u > UINT32_MAX ? "is larger than 4294967295"
                                  : NULL;
    case F_I64:
        return !v.neg && v.u > INT64_MAX ? "is out of range" : NULL;
    case F_T:
        return !v.neg && v.u > INT64_MAX ? "is out of range"
               : v.neg                   ? "must not be negative"
                                         : NULL;
    case F_STATUS:
        return (v.neg && v.s < INT32_MIN) || (!v.neg && v.u > INT32_MAX) ? "is out of range" : NULL;
    }
    return NULL;
}

/* One value holding field f = v written in encoding e (false when e cannot
 * hold v), with the other keys its record requires. */
static bool build(struct mb *m, const struct field *f, enum enc e, struct iv v)
{
    struct mb val = {.n = 0};
    switch (f->where) {
    case W_TOP:
        if (!put_int(&val, e, v))
            return false;
        break;
    case W_ORIG:
        put1(&val, 0x81);
        put_str(&val, f->sub);
        if (!put_int(&val, e, v))
            return false;
        break;
    case W_ARRAY1:
        put1(&val, 0x91);
        if (!put_int(&val, e, v))
            return false;
        break;
    case W_TOOLS:
        put1(&val, 0x92);
        if (!put_int(&val, e, v))
            return false;
        put1(&val, 1);
        break;
    case W_MSGS:
        put1(&val, 0x91);
        put1(&val, 0x92);
        put_str(&val, "user");
        if (!put_int(&val, e, v))
            return false;
        break;
    case W_CHUNK_DT:
        put1(&val, 0x92);
        if (!put_int(&val, e, v))
            return false;
        put1(&val, 1);
        break;
    case W_CHUNK_TOK:
        put1(&val, 0x92);
        put1(&val, 1);
        if (!put_int(&val, e, v))
            return false;
        break;
    }
    m->n = 0;
    if (f->run) {
        bool own_id = !strcmp(f->key, "run");
        put1(m, 0x80 | (own_id ? 2 : 3));
        put_str(m, "rec");
        put_str(m, "run");
        if (!own_id) {
            put_str(m, "run");
            put1(m, 0);
        }
    } else if (f->kind == LT_KIND_TRACE) {
        bool own_t = !strcmp(f->key, "t");
        put1(m, 0x80 | (own_t ? 1 : 2));
        if (!own_t) {
            put_str(m, "t");
            put1(m, 0);
        }
    } else {
        static const char *req[] = {"i", "run", "sched"};
        int n = 1;
        for (int j = 0; j < 3; j++)
            n += strcmp(f->key, req[j]) != 0;
        put1(m, 0x80 | (unsigned)n);
        for (int j = 0; j < 3; j++) {
            if (strcmp(f->key, req[j])) {
                put_str(m, req[j]);
                put1(m, 0);
            }
        }
    }
    put_str(m, f->key);
    put(m, val.b, val.n);
    return true;
}

static void test_int_encodings(void **state)
{
    static const struct iv vals[] = {
        POS(0),          POS(1),
        POS(127),        POS(128),
        POS(255),        POS(256),
        POS(65535),      POS(65536),
        POS(INT32_MAX),  POS(2147483648u),
        POS(UINT32_MAX), POS(4294967296ull),
        POS(INT64_MAX),  POS(9223372036854775808ull),
        POS(UINT64_MAX), NEG(-1),
        NEG(-32),        NEG(-33),
        NEG(-128),       NEG(-129),
        NEG(-32768),     NEG(-32769),
        NEG(INT32_MIN),  NEG((int64_t)INT32_MIN - 1),
        NEG(INT64_MIN),
    };
    int checked = 0;
    for (size_t fi = 0; fi < sizeof fields / sizeof *fields; fi++) {
        const struct field *f = &fields[fi];
        for (int e = 0; e < E_COUNT; e++) {
            for (size_t vi = 0; vi < sizeof vals / sizeof *vals; vi++) {
                struct mb m;
                if (!build(&m, f, (enum enc)e, vals[vi]))
                    continue;
                struct lt_reader *r;
                uint8_t *file;
                const struct lt_item *it;
                struct lt_err err = {0};
                int rc = read_one(f->kind, &m, &r, &file, &it, &err);
                const char *why = expected_error(f->type, vals[vi]);
                if (why) {
                    if (rc != LT_EFORMAT)
                        fail_msg("%s enc %d value #%zu: rc %d, expected an error", f->name, e, vi,
                                 rc);
                    char want[128];
                    snprintf(want, sizeof want, "record 0 (frame at byte ");
                    assert_non_null(strstr(err.msg, want));
                    snprintf(want, sizeof want, "key \"%s\" %s", f->name, why);
                    if (!strstr(err.msg, want))
                        fail_msg("%s enc %d value #%zu: got \"%s\", want \"%s\"", f->name, e, vi,
                                 err.msg, want);
                } else {
                    if (rc != 1)
                        fail_msg("%s enc %d value #%zu: rc %d: %s", f->name, e, vi, rc, err.msg);
                    struct iv g = got_value(f, it);
                    if (g.neg != vals[vi].neg || (g.neg ? g.s != vals[vi].s : g.u != vals[vi].u))
                        fail_msg("%s enc %d value #%zu: decoded a different value", f->name, e, vi);
                    assert_int_equal(it->raw_len, m.n);
                    assert_memory_equal(it->raw, m.b, m.n);
                    assert_int_equal(lt_reader_next(r, &it, &err), 0);
                }
                lt_reader_close(r);
                free(file);
                checked++;
            }
        }
    }
    assert_true(checked > 2000);
}

/* ---- floats, strings, bools ------------------------------------------ */

/* A run record {"rec": "run", "run": 1, key: <bytes>}. */
static void run_with(struct mb *m, const char *key, const uint8_t *v, size_t n)
{
    m->n = 0;
    put1(m, 0x83);
    put_str(m, "rec");
    put_str(m, "run");
    put_str(m, "run");
    put1(m, 1);
    put_str(m, key);
    put(m, v, n);
}

static void test_floats(void **state)
{
    float f32 = 0.1f;
    uint32_t b32;
    memcpy(&b32, &f32, 4);
    double f64 = 0.1;
    uint64_t b64;
    memcpy(&b64, &f64, 8);
    struct {
        const uint8_t v[9];
        size_t n;
        double want;
    } cases[] = {
        {{0xca, (uint8_t)(b32 >> 24), (uint8_t)(b32 >> 16), (uint8_t)(b32 >> 8), (uint8_t)b32},
         5,
         (double)0.1f},
        {{0xca, 0x3f, 0xc0, 0, 0}, 5, 1.5},
        {{0xcb, (uint8_t)(b64 >> 56), (uint8_t)(b64 >> 48), (uint8_t)(b64 >> 40),
          (uint8_t)(b64 >> 32), (uint8_t)(b64 >> 24), (uint8_t)(b64 >> 16), (uint8_t)(b64 >> 8),
          (uint8_t)b64},
         9,
         0.1},
        {{0x03}, 1, 3.0},
        {{0xff}, 1, -1.0},
        {{0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0}, 9, -9223372036854775808.0},
        {{0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 9, 18446744073709551615.0},
    };
    for (int key = 0; key < 2; key++) {
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
            struct mb m;
            run_with(&m, key ? "speed" : "rate", cases[i].v, cases[i].n);
            struct lt_reader *r;
            uint8_t *file;
            const struct lt_item *it;
            struct lt_err err = {0};
            assert_int_equal(read_one(LT_KIND_RESULTS, &m, &r, &file, &it, &err), 1);
            assert_int_equal(it->type, LT_ITEM_RUN);
            assert_true((key ? it->run.speed : it->run.rate) == cases[i].want);
            lt_reader_close(r);
            free(file);
        }
        static const uint8_t bad_vals[][2] = {{0xa1, 'x'}, {0xc0, 0}, {0xc3, 0}};
        for (int i = 0; i < 3; i++) {
            struct mb m;
            run_with(&m, key ? "speed" : "rate", bad_vals[i], bad_vals[i][0] == 0xa1 ? 2 : 1);
            struct lt_reader *r;
            uint8_t *file;
            const struct lt_item *it;
            struct lt_err err = {0};
            assert_int_equal(read_one(LT_KIND_RESULTS, &m, &r, &file, &it, &err), LT_EFORMAT);
            assert_non_null(strstr(err.msg, key ? "key \"speed\" must be a number"
                                                : "key \"rate\" must be a number"));
            lt_reader_close(r);
            free(file);
        }
    }
}

static void test_strings_and_bools(void **state)
{
    /* "model" in every str encoding; bin is not a string. */
    static const char text[] = "llama-3.1-8b-instruct";
    size_t tn = strlen(text);
    for (int e = 0; e < 5; e++) {
        struct mb m = {.n = 0};
        put1(&m, 0x84);
        put_str(&m, "t");
        put1(&m, 0);
        put_str(&m, "failed");
        put1(&m, 0xc3);
        put_str(&m, "est");
        put1(&m, 0xc2);
        put_str(&m, "model");
        switch (e) {
        case 0:
            put1(&m, 0xa0 | (unsigned)tn);
            break;
        case 1:
            put1(&m, 0xd9), put_be(&m, tn, 1);
            break;
        case 2:
            put1(&m, 0xda), put_be(&m, tn, 2);
            break;
        case 3:
            put1(&m, 0xdb), put_be(&m, tn, 4);
            break;
        case 4:
            put1(&m, 0xc4), put_be(&m, tn, 1);
            break; /* bin 8 */
        }
        put(&m, text, tn);
        struct lt_reader *r;
        uint8_t *file;
        const struct lt_item *it;
        struct lt_err err = {0};
        int rc = read_one(LT_KIND_TRACE, &m, &r, &file, &it, &err);
        if (e < 4) {
            assert_int_equal(rc, 1);
            assert_string_equal(it->rec.model, text); /* NUL-terminated copy */
            assert_true(it->rec.has & LT_HAS_FAILED);
            assert_false(it->rec.has & LT_HAS_ESTIMATED);
        } else {
            assert_int_equal(rc, LT_EFORMAT);
            assert_non_null(strstr(err.msg, "key \"model\" must be a string"));
        }
        lt_reader_close(r);
        free(file);
    }
    /* A bool must be true or false, not 1. */
    struct mb m = {.n = 0};
    put1(&m, 0x82);
    put_str(&m, "t");
    put1(&m, 0);
    put_str(&m, "failed");
    put1(&m, 1);
    struct lt_reader *r;
    uint8_t *file;
    const struct lt_item *it;
    struct lt_err err = {0};
    assert_int_equal(read_one(LT_KIND_TRACE, &m, &r, &file, &it, &err), LT_EFORMAT);
    assert_non_null(strstr(err.msg, "key \"failed\" must be true or false"));
    lt_reader_close(r);
    free(file);
}

/* ---- unknown keys ----------------------------------------------------- */

/* Keys that are prefixes or extensions of known keys are unknown keys, and
 * unknown keys keep their exact bytes: bin, ext, fixext, and encodings
 * that are not the shortest (which repacking would have changed). */
static void test_unknown_keys_bytes(void **state)
{
    struct mb extra = {.n = 0}; /* the unknown pairs, as written */
    put_str(&extra, "tu");
    put1(&extra, 0xc4), put1(&extra, 3), put(&extra, "\x00\xff\x10", 3); /* bin 8 */
    put_str(&extra, "turnx");
    put1(&extra, 0xc7), put1(&extra, 2), put1(&extra, 0x05), put(&extra, "ab", 2); /* ext 8 */
    size_t split = extra.n; /* "turn" and "in" go here in the record */
    put_str(&extra, "");
    put1(&extra, 0xd6), put1(&extra, 0xff), put(&extra, "\x01\x02\x03\x04", 4); /* fixext 4 */
    put_str(&extra, "i");
    put1(&extra, 0xcf), put_be(&extra, 5, 8); /* 5 as uint 64 */
    put_str(&extra, "in_");
    put1(&extra, 0xd9), put1(&extra, 2), put(&extra, "hi", 2); /* str 8 of 2 bytes */
    put_str(&extra, "orig2");
    put1(&extra, 0xde), put_be(&extra, 1, 2), put1(&extra, 0x01), put1(&extra, 0xc0);
    put_str(&extra, "status"); /* known in results, unknown at a record's top */
    put1(&extra, 0xd1), put_be(&extra, 200, 2);

    struct mb m = {.n = 0};
    put1(&m, 0x80 | 10);
    put_str(&m, "t");
    put1(&m, 7);
    put(&m, extra.b, split); /* the "tu" and "turnx" pairs */
    put_str(&m, "turn");
    put1(&m, 3);
    put_str(&m, "in");
    put1(&m, 4);
    put(&m, extra.b + split, extra.n - split);
    assert_int_equal(m.b[1 + 2 + 1 + split], 0xa4); /* "turn" follows the first two pairs */

    struct lt_reader *r;
    uint8_t *file;
    const struct lt_item *it;
    struct lt_err err = {0};
    assert_int_equal(read_one(LT_KIND_TRACE, &m, &r, &file, &it, &err), 1);
    assert_int_equal(it->rec.t, 7);
    assert_int_equal(it->rec.turn, 3);
    assert_int_equal(it->rec.in, 4);
    assert_int_equal(it->rec.has, LT_HAS_TURN | LT_HAS_IN);
    assert_int_equal(it->rec.extra.n, 7);
    assert_int_equal(it->rec.extra.len, extra.n);
    assert_memory_equal(it->rec.extra.data, extra.b, extra.n);
    lt_reader_close(r);
    free(file);

    /* In a result: "int", "ru", "schedx", "e", "rec" with another value. */
    m.n = 0;
    put1(&m, 0x88);
    put_str(&m, "int");
    put1(&m, 1);
    put_str(&m, "i");
    put1(&m, 9);
    put_str(&m, "ru");
    put1(&m, 2);
    put_str(&m, "run");
    put1(&m, 4);
    put_str(&m, "schedx");
    put1(&m, 3);
    put_str(&m, "sched");
    put1(&m, 0xd0), put1(&m, 0xf6); /* -10 as int 8 */
    put_str(&m, "e");
    put1(&m, 0xc3);
    put_str(&m, "rec");
    put_str(&m, "runs");
    assert_int_equal(read_one(LT_KIND_RESULTS, &m, &r, &file, &it, &err), 1);
    assert_int_equal(it->type, LT_ITEM_RESULT);
    assert_int_equal(it->res.index, 9);
    assert_int_equal(it->res.run, 4);
    assert_int_equal(it->res.sched, -10);
    assert_int_equal(it->res.extra.n, 5);
    static const uint8_t want[] = {0xa3, 'i', 'n', 't', 1,    0xa2, 'r', 'u',  2,   0xa6,
                                   's',  'c', 'h', 'e', 'd',  'x',  3,   0xa1, 'e', 0xc3,
                                   0xa3, 'r', 'e', 'c', 0xa4, 'r',  'u', 'n',  's'};
    assert_int_equal(it->res.extra.len, sizeof want);
    assert_memory_equal(it->res.extra.data, want, sizeof want);
    lt_reader_close(r);
    free(file);
}

/* ---- checks over the whole map ---------------------------------------- */

static int read_err(enum lt_kind kind, const struct mb *m, struct lt_err *err,
                    enum lt_item_type *type)
{
    struct lt_reader *r;
    uint8_t *file;
    const struct lt_item *it;
    int rc = read_one(kind, m, &r, &file, &it, err);
    if (rc == 1 && type)
        *type = it->type;
    lt_reader_close(r);
    free(file);
    return rc;
}

static void test_whole_map_checks(void **state)
{
    struct lt_err err = {0};
    enum lt_item_type type = 0;
    /* A key that is not a string is named even after a bad "t". */
    struct mb m = {.n = 0};
    put1(&m, 0x82);
    put_str(&m, "t");
    put_str(&m, "x");
    put1(&m, 5);
    put1(&m, 1);
    assert_int_equal(read_err(LT_KIND_TRACE, &m, &err, NULL), LT_EFORMAT);
    assert_non_null(strstr(err.msg, "record 0 (frame at byte "));
    assert_non_null(strstr(err.msg, "has a key that is not a string"));
    /* "rec": "run" after a key that would be bad in a result: a run. */
    m.n = 0;
    put1(&m, 0x83);
    put_str(&m, "i");
    put_str(&m, "x");
    put_str(&m, "rec");
    put_str(&m, "run");
    put_str(&m, "run");
    put1(&m, 7);
    assert_int_equal(read_err(LT_KIND_RESULTS, &m, &err, &type), 1);
    assert_int_equal(type, LT_ITEM_RUN);
    /* The same with a non-string key after it: the key error. */
    m.b[0] = 0x84;
    put1(&m, 0xc0);
    put1(&m, 1);
    assert_int_equal(read_err(LT_KIND_RESULTS, &m, &err, NULL), LT_EFORMAT);
    assert_non_null(strstr(err.msg, "has a key that is not a string"));
    /* A run without its id; a result without sched; not a map. */
    m.n = 0;
    put1(&m, 0x81);
    put_str(&m, "rec");
    put_str(&m, "run");
    assert_int_equal(read_err(LT_KIND_RESULTS, &m, &err, NULL), LT_EFORMAT);
    assert_non_null(strstr(err.msg, "run record without \"run\""));
    m.n = 0;
    put1(&m, 0x82);
    put_str(&m, "i");
    put1(&m, 0);
    put_str(&m, "run");
    put1(&m, 0);
    assert_int_equal(read_err(LT_KIND_RESULTS, &m, &err, NULL), LT_EFORMAT);
    assert_non_null(strstr(err.msg, "result record without \"sched\""));
    m.n = 0;
    put1(&m, 0x90);
    assert_int_equal(read_err(LT_KIND_TRACE, &m, &err, NULL), LT_EFORMAT);
    assert_non_null(strstr(err.msg, "record 0 (frame at byte"));
    assert_non_null(strstr(err.msg, "is not a map"));
    /* Records out of arrival order. */
    m.n = 0;
    put1(&m, 0x81);
    put_str(&m, "t");
    put1(&m, 5);
    put1(&m, 0x81);
    put_str(&m, "t");
    put1(&m, 3);
    size_t len;
    uint8_t *file = make_file(LT_KIND_TRACE, &m, &len);
    struct lt_reader *r = lt_reader_open_mem(file, len, NULL, &err);
    const struct lt_item *it;
    assert_int_equal(lt_reader_next(r, &it, &err), 1);
    assert_int_equal(lt_reader_next(r, &it, &err), LT_EFORMAT);
    assert_non_null(strstr(err.msg, "record 1 (frame at byte"));
    assert_non_null(strstr(err.msg, "t=3 us is earlier than the previous record's 5 us"));
    lt_reader_close(r);
    free(file);
    /* Shapes: msgs, tools, chunks. */
    static const struct {
        const char *key;
        uint8_t v[8];
        size_t n;
        const char *why;
    } shapes[] = {
        {"msgs", {0x91, 0x91, 0xa1, 'u'}, 4, "must hold [role, tokens] pairs"},
        {"msgs", {0x91, 0x92, 1, 1}, 4, "must hold [role, tokens] pairs"},
        {"msgs", {0x91, 0x92, 0xb0}, 3, NULL}, /* role of 16 bytes, filled below */
        {"tools", {0x91, 1}, 2, "must be [count, tokens]"},
        {"tools", {0x81, 1, 1}, 3, "must be an array"},
        {"orig", {0x91, 1}, 2, "must be a map"},
        {"orig", {0x81, 1, 1}, 3, "has a key that is not a string"},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        m.n = 0;
        put1(&m, 0x82);
        put_str(&m, "t");
        put1(&m, 0);
        put_str(&m, shapes[i].key);
        put(&m, shapes[i].v, shapes[i].n);
        if (!shapes[i].why) {
            put(&m, "0123456789abcdef", 16);
            put1(&m, 1);
        }
        assert_int_equal(read_err(LT_KIND_TRACE, &m, &err, NULL), LT_EFORMAT);
        char want[128];
        snprintf(want, sizeof want, "key \"%s\" %s", shapes[i].key,
                 shapes[i].why ? shapes[i].why : "has a role name longer than 15 bytes");
        if (!strstr(err.msg, want))
            fail_msg("shape %zu: got \"%s\", want \"%s\"", i, err.msg, want);
    }
    m.n = 0;
    put1(&m, 0x84);
    put_str(&m, "i");
    put1(&m, 0);
    put_str(&m, "run");
    put1(&m, 0);
    put_str(&m, "sched");
    put1(&m, 0);
    put_str(&m, "chunks");
    put1(&m, 0x93), put1(&m, 1), put1(&m, 1), put1(&m, 1);
    assert_int_equal(read_err(LT_KIND_RESULTS, &m, &err, NULL), LT_EFORMAT);
    assert_non_null(strstr(err.msg, "key \"chunks\" must hold [dt, tokens] pairs"));
}

/* Scrape samples: "rec": "scrape" anywhere in the map (even after keys a
 * result would refuse), the required keys, and the shapes of v and h. */
static void test_scrape_shapes(void **state)
{
    struct lt_err err = {0};
    enum lt_item_type type = 0;
    struct mb m = {.n = 0};
    put1(&m, 0x85);
    put_str(&m, "t");
    put1(&m, 9);
    put_str(&m, "v");
    put1(&m, 0x81), put_str(&m, "requests_running"), put1(&m, 3);
    put_str(&m, "h");
    put1(&m, 0x81), put_str(&m, "ttft_seconds"), put1(&m, 0x94), put1(&m, 1), put1(&m, 2),
        put1(&m, 1), put1(&m, 2);
    put_str(&m, "rec");
    put_str(&m, "scrape");
    put_str(&m, "run");
    put1(&m, 0);
    assert_int_equal(read_err(LT_KIND_RESULTS, &m, &err, &type), 1);
    assert_int_equal(type, LT_ITEM_SCRAPE);
    /* without t */
    m.n = 0;
    put1(&m, 0x82);
    put_str(&m, "rec");
    put_str(&m, "scrape");
    put_str(&m, "run");
    put1(&m, 0);
    assert_int_equal(read_err(LT_KIND_RESULTS, &m, &err, NULL), LT_EFORMAT);
    assert_non_null(strstr(err.msg, "scrape sample without \"t\""));
    /* h of an odd length; v not a map; a value that is not a number */
    static const struct {
        const char *key;
        uint8_t v[8];
        size_t n;
        const char *why;
    } shapes[] = {
        {"h",
         {0x81, 0xa1, 'x', 0x93, 1, 2, 3},
         7,
         "must hold [sum, count, le, cum, ...] histograms"},
        {"h", {0x91, 1}, 2, "must be a map of names to histograms"},
        {"v", {0x91, 1}, 2, "must be a map of names to numbers"},
        {"v", {0x81, 0xa1, 'x', 0xa1, 'y'}, 5, "must be a number"},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        m.n = 0;
        put1(&m, 0x84);
        put_str(&m, "rec");
        put_str(&m, "scrape");
        put_str(&m, "run");
        put1(&m, 0);
        put_str(&m, "t");
        put1(&m, 0);
        put_str(&m, shapes[i].key);
        put(&m, shapes[i].v, shapes[i].n);
        assert_int_equal(read_err(LT_KIND_RESULTS, &m, &err, NULL), LT_EFORMAT);
        char want[128];
        snprintf(want, sizeof want, "key \"%s\" %s", shapes[i].key, shapes[i].why);
        if (!strstr(err.msg, want))
            fail_msg("shape %zu: got \"%s\", want \"%s\"", i, err.msg, want);
    }
}

/* Chunk times count from sent when it comes after the chunks, and from
 * sched when there is no sent. */
static void test_chunks_after_sent(void **state)
{
    struct mb m = {.n = 0};
    put1(&m, 0x85);
    put_str(&m, "chunks");
    put1(&m, 0x94), put1(&m, 10), put1(&m, 2), put1(&m, 0xd0), put1(&m, 0xfb); /* 10,2,-5, */
    put1(&m, 0xcd), put_be(&m, 300, 2);                                        /* 300 */
    put_str(&m, "i");
    put1(&m, 1);
    put_str(&m, "run");
    put1(&m, 0);
    put_str(&m, "sched");
    put1(&m, 0xcd), put_be(&m, 1000, 2);
    put_str(&m, "sent");
    put1(&m, 0xcd), put_be(&m, 1100, 2);
    struct lt_reader *r;
    uint8_t *file;
    const struct lt_item *it;
    struct lt_err err = {0};
    assert_int_equal(read_one(LT_KIND_RESULTS, &m, &r, &file, &it, &err), 1);
    assert_int_equal(it->res.n_chunks, 2);
    assert_int_equal(it->res.chunks[0].t, 1110);
    assert_int_equal(it->res.chunks[0].tokens, 2);
    assert_int_equal(it->res.chunks[1].t, 1105);
    assert_int_equal(it->res.chunks[1].tokens, 300);
    lt_reader_close(r);
    free(file);

    /* Hostile gaps that overflow int64 wrap (no undefined behaviour). */
    m.n = 0;
    put1(&m, 0x84);
    put_str(&m, "i");
    put1(&m, 1);
    put_str(&m, "run");
    put1(&m, 0);
    put_str(&m, "sched");
    put1(&m, 0xd3), put_be(&m, (uint64_t)INT64_MAX, 8);
    put_str(&m, "chunks");
    put1(&m, 0x92), put1(&m, 0xd3), put_be(&m, (uint64_t)INT64_MAX, 8), put1(&m, 1);
    assert_int_equal(read_one(LT_KIND_RESULTS, &m, &r, &file, &it, &err), 1);
    assert_int_equal(it->res.n_chunks, 1);
    assert_true(it->res.chunks[0].t == -2);
    lt_reader_close(r);
    free(file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int_encodings),     cmocka_unit_test(test_floats),
        cmocka_unit_test(test_strings_and_bools), cmocka_unit_test(test_unknown_keys_bytes),
        cmocka_unit_test(test_whole_map_checks),  cmocka_unit_test(test_chunks_after_sent),
        cmocka_unit_test(test_scrape_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

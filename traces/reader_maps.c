/*
 * The reader's map decoders: a trace record, a run record, a result (and
 * the header, which msgpack-c unpacks once per file), each read straight
 * from the scanned bytes by the cursor, keys dispatched by a switch.
 */
#include "traces/reader_internal.h"

#include <math.h>
#include <stdio.h>

/* ---- decoding values into structs ------------------------------------- */

struct dec {
    struct lt_reader *r;
    struct lt_err *err;
    const char *what; /* "record 12 (frame at byte 345)", made only on error */
    struct cur c;
    const char *in;        /* "orig" while decoding orig's keys: "orig.status" */
    bool results;          /* decoding a result: "rec" may say it is not one */
    const uint8_t *chunks; /* a result's chunks: the first element, decoded once sent is known */
    uint32_t n_chunks;     /* elements */
};

static int bad(struct dec *d, const char *key, const char *why)
{
    char w[96];
    return lt_errset(d->err, LT_EFORMAT, "%s: %s: key \"%s%s%s\" %s", d->r->path,
                     d->what ? d->what : lt__rd_what(d->r, w), d->in ? d->in : "", d->in ? "." : "",
                     key, why);
}

static int get_i64_slow(struct dec *d, const char *key, int64_t *v)
{
    uint64_t u = 0;
    int64_t s = 0;
    switch (lt__rd_int(&d->c, &u, &s)) {
    case 1:
        if (u > INT64_MAX)
            return bad(d, key, "is out of range");
        *v = (int64_t)u;
        return 0;
    case -1:
        *v = s;
        return 0;
    default:
        return bad(d, key, "must be an integer");
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
        *v = (int64_t)lt__rd_be(d->c.p + 1, 4);
        d->c.p += 5;
        return 0;
    }
    return get_i64_slow(d, key, v);
}

static int get_u64_slow(struct dec *d, const char *key, uint64_t *v)
{
    int64_t s = 0;
    if (lt__rd_int(&d->c, v, &s) != 1)
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
        *v = lt__rd_be(d->c.p + 1, 2);
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
        uint32_t bits = (uint32_t)lt__rd_be(p + 1, 4);
        float f;
        memcpy(&f, &bits, sizeof f);
        *v = f;
        d->c.p += 5;
        return 0;
    }
    if (p[0] == 0xcb) {
        uint64_t bits = lt__rd_be(p + 1, 8);
        memcpy(v, &bits, sizeof *v);
        d->c.p += 9;
        return 0;
    }
    uint64_t u = 0;
    int64_t s = 0;
    switch (lt__rd_int(&d->c, &u, &s)) {
    case 1:
        *v = (double)u;
        return 0;
    case -1:
        *v = (double)s;
        return 0;
    default:
        return bad(d, key, "must be a number");
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
    if (!lt__rd_str(&d->c, &s, &n))
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
    if (!lt__rd_coll(&d->c, false, n))
        return bad(d, key, "must be an array");
    return 0;
}

/* Keep an unknown key and its value: their bytes, copied as they are, for
 * tools that copy. `key` is where the key starts; the cursor is at the
 * value. */
static int keep_extra(struct dec *d, const uint8_t *key, struct lt_extra *x)
{
    lt__rd_skip_value(&d->c);
    int rc = lt_buf_append(&d->r->extra, key, (size_t)(d->c.p - key));
    if (rc < 0)
        return lt_errset(d->err, rc, "%s: %s: unknown keys too large", d->r->path,
                         lt__rd_what(d->r, (char[96]){0}));
    x->n++;
    return 0;
}

static int not_a_string_key(struct dec *d)
{
    return lt_errset(d->err, LT_EFORMAT, "%s: %s has a key that is not a string", d->r->path,
                     lt__rd_what(d->r, (char[96]){0}));
}

static int decode_msgs(struct dec *d, struct lt_record *rec)
{
    int rc = 0;
    uint32_t n = 0;
    LT_TRY(get_array(d, lt_schema_record[LT_REC_MSGS].key, &n));
    struct lt_msg *msgs = arena_alloc(d->r, (size_t)n * sizeof *msgs);
    if (n && !msgs)
        return lt_errset(d->err, LT_ENOMEM, "%s: out of memory", d->r->path);
    for (uint32_t j = 0; j < n; j++) {
        uint32_t two = 0;
        const uint8_t *role;
        uint32_t role_len;
        if (!lt__rd_coll(&d->c, false, &two) || two != 2 || !lt__rd_str(&d->c, &role, &role_len))
            return bad(d, "msgs", "must hold [role, tokens] pairs");
        if (role_len > LT_ROLE_MAX)
            return bad(d, "msgs", "has a role name longer than 15 bytes");
        memcpy(msgs[j].role, role, role_len);
        msgs[j].role[role_len] = '\0';
        LT_TRY(get_u32(d, "msgs", &msgs[j].tokens));
    }
    rec->msgs = msgs;
    rec->n_msgs = n;
    rec->has |= LT_HAS_MSGS;
out:
    return rc;
}

/* Whether the value at the cursor is the string k (kn bytes); consumes
 * nothing. */
static inline bool is_str(const struct cur *c, const char *k, uint32_t kn)
{
    struct cur t = *c;
    const uint8_t *s;
    uint32_t n;
    return lt__rd_str(&t, &s, &n) && n == kn && memcmp(s, k, n) == 0;
}
#define IS_STR(c, K) is_str(c, K, sizeof K - 1)

static bool is_str_run(const struct cur *c)
{
    return IS_STR(c, "run");
}

static bool is_str_block(const struct cur *c)
{
    return IS_STR(c, K_BLOCK);
}

static bool is_str_scrape(const struct cur *c)
{
    return IS_STR(c, K_SCRAPE);
}

static int decode_orig(struct dec *d, uint32_t nkeys, struct lt_record *rec);

/* A scrape's {name: float} into the arena; *out stays NULL when empty. */
static int decode_vals(struct dec *d, const char *key, const struct lt_scrape_val **out,
                       uint32_t *nout)
{
    int rc = 0;
    uint32_t n = 0;
    if (!lt__rd_coll(&d->c, true, &n))
        return bad(d, key, "must be a map of names to numbers");
    struct lt_scrape_val *v = arena_alloc(d->r, (size_t)n * sizeof *v);
    if (n && !v)
        return lt_errset(d->err, LT_ENOMEM, "%s: out of memory", d->r->path);
    for (uint32_t j = 0; j < n; j++) {
        LT_TRY(get_str(d, key, &v[j].name, NULL));
        LT_TRY(get_double(d, key, &v[j].v));
    }
    *out = n ? v : NULL;
    *nout = n;
out:
    return rc;
}

/* A scrape's {name: [sum, count, le, cum, ...]} into the arena. */
static int decode_hists(struct dec *d, const char *key, const struct lt_scrape_hist **out,
                        uint32_t *nout)
{
    int rc = 0;
    uint32_t n = 0, m = 0;
    if (!lt__rd_coll(&d->c, true, &n))
        return bad(d, key, "must be a map of names to histograms");
    struct lt_scrape_hist *h = arena_alloc(d->r, (size_t)n * sizeof *h);
    if (n && !h)
        return lt_errset(d->err, LT_ENOMEM, "%s: out of memory", d->r->path);
    for (uint32_t j = 0; j < n; j++) {
        LT_TRY(get_str(d, key, &h[j].name, NULL));
        LT_TRY(get_array(d, key, &m));
        if (m < 2 || m % 2)
            return bad(d, key, "must hold [sum, count, le, cum, ...] histograms");
        LT_TRY(get_double(d, key, &h[j].sum));
        LT_TRY(get_double(d, key, &h[j].count));
        h[j].n = (m - 2) / 2;
        double *le = arena_alloc(d->r, (size_t)h[j].n * sizeof *le);
        double *cum = arena_alloc(d->r, (size_t)h[j].n * sizeof *cum);
        if (h[j].n && (!le || !cum))
            return lt_errset(d->err, LT_ENOMEM, "%s: out of memory", d->r->path);
        for (uint32_t k = 0; k < h[j].n; k++) {
            LT_TRY(get_double(d, key, &le[k]));
            LT_TRY(get_double(d, key, &cum[k]));
        }
        h[j].le = le;
        h[j].cum = cum;
    }
    *out = n ? h : NULL;
    *nout = n;
out:
    return rc;
}

/* The value at the cursor into field f of the struct at base (trace
 * record, run record or result: the table says which), and its `has` bit.
 * Always inlined where f is a constant (one case per field, below), so
 * that each case is compiled for its field's type. */
static inline __attribute__((always_inline)) int get_field(struct dec *d, const struct lt_field *f,
                                                           void *base, uint32_t *has)
{
    int rc = 0;
    char *p = (char *)base + f->off;
    struct lt_record *rec = base;
    int64_t x = 0;
    uint32_t n = 0;
    bool b = false;
    switch ((enum lt_ftype)f->type) {
    case LT_FT_I64:
        LT_TRY(get_i64(d, f->key, (int64_t *)(void *)p));
        if ((f->flags & LT_FF_NONNEG) && *(int64_t *)(void *)p < 0)
            return bad(d, f->key, "must not be negative");
        break;
    case LT_FT_I32:
        LT_TRY(get_i64(d, f->key, &x));
        if (x < INT32_MIN || x > INT32_MAX)
            return bad(d, f->key, "is out of range");
        *(int32_t *)(void *)p = (int32_t)x;
        break;
    case LT_FT_U64:
        LT_TRY(get_u64(d, f->key, (uint64_t *)(void *)p));
        break;
    case LT_FT_U32:
        LT_TRY(get_u32(d, f->key, (uint32_t *)(void *)p));
        break;
    case LT_FT_F64:
        LT_TRY(get_double(d, f->key, (double *)(void *)p));
        if (!isfinite(*(double *)(void *)p)) /* as the writer refuses it */
            return bad(d, f->key, "must be a finite number");
        break;
    case LT_FT_STR:
        LT_TRY(get_str(d, f->key, (const char **)(void *)p, NULL));
        break;
    case LT_FT_TEXT:
        LT_TRY(get_str(d, f->key, &rec->text, &rec->text_len));
        break;
    case LT_FT_FLAG:
        LT_TRY(get_bool(d, f->key, &b));
        if (b)
            *has |= f->bit;
        return 0;
    case LT_FT_BOOL:
        LT_TRY(get_bool(d, f->key, (bool *)(void *)p));
        break;
    case LT_FT_REC:
    case LT_FT_SREC:
    case LT_FT_CREC:
    case LT_FT_VREC:
    case LT_FT_AREC:
        lt__rd_skip_value(&d->c);
        break;
    case LT_FT_VALS:
        LT_TRY(decode_vals(d, f->key, (const struct lt_scrape_val **)(void *)p,
                           (uint32_t *)(void *)(p + sizeof(void *))));
        break;
    case LT_FT_HISTS:
        LT_TRY(decode_hists(d, f->key, (const struct lt_scrape_hist **)(void *)p,
                            (uint32_t *)(void *)(p + sizeof(void *))));
        break;
    case LT_FT_MSGS:
        LT_TRY(decode_msgs(d, rec));
        break;
    case LT_FT_TOOLS:
        LT_TRY(get_array(d, f->key, &n));
        if (n != 2)
            return bad(d, f->key, "must be [count, tokens]");
        LT_TRY(get_u32(d, f->key, &rec->tools_count));
        LT_TRY(get_u32(d, f->key, &rec->tools_tokens));
        break;
    case LT_FT_CALLS: {
        LT_TRY(get_array(d, f->key, &n));
        uint32_t *calls = arena_alloc(d->r, (size_t)n * sizeof *calls);
        if (n && !calls)
            return lt_errset(d->err, LT_ENOMEM, "%s: out of memory", d->r->path);
        for (uint32_t j = 0; j < n; j++)
            LT_TRY(get_u32(d, f->key, &calls[j]));
        rec->calls = calls;
        rec->n_calls = n;
        break;
    }
    case LT_FT_BLOCKS: {
        LT_TRY(get_array(d, f->key, &n));
        uint64_t *blocks = arena_alloc(d->r, (size_t)n * sizeof *blocks);
        if (n && !blocks)
            return lt_errset(d->err, LT_ENOMEM, "%s: out of memory", d->r->path);
        for (uint32_t j = 0; j < n; j++)
            LT_TRY(get_u64(d, f->key, &blocks[j]));
        rec->blocks = blocks;
        rec->n_blocks = n;
        break;
    }
    case LT_FT_ORIG:
        if (!lt__rd_coll(&d->c, true, &n))
            return bad(d, f->key, "must be a map");
        return decode_orig(d, n, rec);
    case LT_FT_CHUNKS:
        /* decoded once the whole map is read: the first dt counts from
         * sent, which may come after */
        LT_TRY(get_array(d, f->key, &n));
        if (n % 2)
            return bad(d, f->key, "must hold [dt, tokens] pairs");
        d->chunks = d->c.p;
        d->n_chunks = n;
        for (uint32_t j = 0; j < n; j++)
            lt__rd_skip_value(&d->c);
        break;
    }
    *has |= f->bit;
out:
    return rc;
}

/* The nkeys pairs of a map at the cursor into the struct at base, field by
 * field of its table (the field found, then its case: both made from the
 * table's list); unknown keys are kept in x (NULL: ignored). seen: a bit
 * per field found. A result map that turns out to be a run record or a
 * block returns DEC_IS_RUN or DEC_IS_BLOCK. */
#define DEC_FIELDS(name, S, LIST, CASE, table, nf)                                                 \
    static int name(struct dec *d, uint32_t nkeys, S *base, uint32_t *has, struct lt_extra *x,     \
                    uint64_t *seen)                                                                \
    {                                                                                              \
        int rc = 0, hint = 0;                                                                      \
        for (uint32_t i = 0; i < nkeys; i++) {                                                     \
            const uint8_t *key = d->c.p, *k;                                                       \
            uint32_t kn;                                                                           \
            bool again = false;                                                                    \
            if (!lt__rd_str(&d->c, &k, &kn))                                                       \
                return key_not_string(d);                                                          \
        find:                                                                                      \
            switch (hint) {                                                                        \
                LIST(CASE)                                                                         \
            default:                                                                               \
                break;                                                                             \
            }                                                                                      \
            /* not at or after the hint: before it, or not at all */                               \
            int j = again ? -1 : lt_schema_find(table, hint < nf ? hint : nf, k, kn, 0);           \
            if (j >= 0) {                                                                          \
                hint = j;                                                                          \
                again = true;                                                                      \
                goto find;                                                                         \
            }                                                                                      \
            /* (LT_TRY keeps only a negative rc: a "rec" it names returns here) */                 \
            if ((rc = unknown_key(d, key, k, kn, x)) != 0)                                         \
                goto out;                                                                          \
        }                                                                                          \
    out:                                                                                           \
        return rc;                                                                                 \
    }
/* A field's case: from the hint on, each key is compared as a constant;
 * the one that matches is decoded, compiled for its type. */
#define DEC_CASE(idx, table)                                                                       \
    case idx:                                                                                      \
        if (kn == table[idx].klen && __builtin_memcmp(k, table[idx].key, table[idx].klen) == 0) {  \
            hint = idx + 1;                                                                        \
            *seen |= (uint64_t)1 << idx;                                                           \
            LT_TRY(get_field(d, &table[idx], base, has));                                          \
            continue;                                                                              \
        }                                                                                          \
        __attribute__((fallthrough));
#define DEC_REC(id, ...) DEC_CASE(LT_REC_##id, lt_schema_record)
#define DEC_RUN(id, ...) DEC_CASE(LT_RUN_##id, lt_schema_run)
#define DEC_RES(id, ...) DEC_CASE(LT_RES_##id, lt_schema_result)
#define DEC_ORIG(id, ...) DEC_CASE(LT_ORIG_##id, lt_schema_orig)
#define DEC_SCR(id, ...) DEC_CASE(LT_SCR_##id, lt_schema_scrape)
#define DEC_CHK(id, ...) DEC_CASE(LT_CHK_##id, lt_schema_check)
#define DEC_VRD(id, ...) DEC_CASE(LT_VRD_##id, lt_schema_verdict)
#define DEC_ANS(id, ...) DEC_CASE(LT_ANS_##id, lt_schema_answer)

static int key_not_string(struct dec *d)
{
    if (!d->in)
        return not_a_string_key(d);
    const char *in = d->in; /* key "orig" has a key that is not a string */
    d->in = NULL;
    return bad(d, in, "has a key that is not a string");
}

/* A key the table does not know: kept in x (NULL: ignored, as in orig),
 * unless it is a result's "rec": "run" or "rec": "block" (returned as
 * DEC_IS_RUN or DEC_IS_BLOCK). `key` is where the key starts; the cursor
 * is at the value. */
static int unknown_key(struct dec *d, const uint8_t *key, const uint8_t *k, uint32_t kn,
                       struct lt_extra *x)
{
    if (d->results && kn == 3 && !memcmp(k, K_REC, 3)) {
        if (is_str_run(&d->c))
            return DEC_IS_RUN;
        if (is_str_block(&d->c))
            return DEC_IS_BLOCK;
        if (is_str_scrape(&d->c))
            return DEC_IS_SCRAPE;
        if (IS_STR(&d->c, K_CHECK))
            return DEC_IS_CHECK;
        if (IS_STR(&d->c, K_VERDICT))
            return DEC_IS_VERDICT;
        if (IS_STR(&d->c, K_ANSWER))
            return DEC_IS_ANSWER;
    }
    if (!x) {
        lt__rd_skip_value(&d->c);
        return 0;
    }
    return keep_extra(d, key, x);
}

DEC_FIELDS(decode_record_fields, struct lt_record, LT_RECORD_FIELDS, DEC_REC, lt_schema_record,
           LT_REC_N)
DEC_FIELDS(decode_run_fields, struct lt_run, LT_RUN_FIELDS, DEC_RUN, lt_schema_run, LT_RUN_N)
DEC_FIELDS(decode_result_fields, struct lt_result, LT_RESULT_FIELDS, DEC_RES, lt_schema_result,
           LT_RES_N)
DEC_FIELDS(decode_scrape_fields, struct lt_scrape, LT_SCRAPE_FIELDS, DEC_SCR, lt_schema_scrape,
           LT_SCR_N)
DEC_FIELDS(decode_check_fields, struct lt_check, LT_CHECK_FIELDS, DEC_CHK, lt_schema_check,
           LT_CHK_N)
DEC_FIELDS(decode_verdict_fields, struct lt_verdict, LT_VERDICT_FIELDS, DEC_VRD, lt_schema_verdict,
           LT_VRD_N)
DEC_FIELDS(decode_answer_fields, struct lt_answer, LT_ANSWER_FIELDS, DEC_ANS, lt_schema_answer,
           LT_ANS_N)
DEC_FIELDS(decode_orig_fields, struct lt_record, LT_ORIG_FIELDS, DEC_ORIG, lt_schema_orig,
           LT_ORIG_N)

/* orig's keys go into the record; other keys of orig are ignored, not
 * kept (docs/trace-format.md §3). */
static int decode_orig(struct dec *d, uint32_t nkeys, struct lt_record *rec)
{
    uint64_t seen = 0;
    bool results = d->results;
    d->in = lt_schema_record[LT_REC_ORIG].key;
    d->results = false;
    int rc = decode_orig_fields(d, nkeys, rec, &rec->has, NULL, &seen);
    d->in = NULL;
    d->results = results;
    return rc;
}

static int decode_record(struct dec *d, uint32_t nkeys, struct lt_record *rec)
{
    uint64_t seen = 0;
    memset(rec, 0, sizeof *rec);
    int rc = decode_record_fields(d, nkeys, rec, &rec->has, &rec->extra, &seen);
    if (rc == 0 && !(seen & (uint64_t)1 << LT_REC_T))
        return lt_errset(d->err, LT_EFORMAT, "%s: %s: required key \"t\" is missing", d->r->path,
                         lt__rd_what(d->r, (char[96]){0}));
    return rc;
}

static int decode_run(struct dec *d, uint32_t nkeys, struct lt_run *run)
{
    uint64_t seen = 0;
    uint32_t has = 0;
    memset(run, 0, sizeof *run);
    int rc = decode_run_fields(d, nkeys, run, &has, &run->extra, &seen);
    if (rc == 0 && !(seen & (uint64_t)1 << LT_RUN_RUN))
        return lt_errset(d->err, LT_EFORMAT, "%s: %s: run record without \"run\"", d->r->path,
                         lt__rd_what(d->r, (char[96]){0}));
    return rc;
}

/* The first field of table f (nf fields) a reader requires that a value
 * (a `what`) lacks, as an error; 0 when it has them all (seen). */
static int need_fields(struct dec *d, const struct lt_field *f, int nf, uint64_t seen,
                       const char *what)
{
    for (int j = 0; j < nf; j++)
        if ((f[j].flags & LT_FF_NEEDED) && !(seen & (uint64_t)1 << j))
            return lt_errset(d->err, LT_EFORMAT, "%s: %s: %s without \"%s\"", d->r->path,
                             lt__rd_what(d->r, (char[96]){0}), what, f[j].key);
    return 0;
}

/* A value of its own (scrape, check, verdict) decoded into *x, zeroed
 * first, its required keys checked. */
#define DECODE_VALUE(name, S, fields, table, nf, what)                                             \
    static int name(struct dec *d, uint32_t nkeys, S *x)                                           \
    {                                                                                              \
        uint64_t seen = 0;                                                                         \
        uint32_t has = 0;                                                                          \
        memset(x, 0, sizeof *x);                                                                   \
        int rc = fields(d, nkeys, x, &has, &x->extra, &seen);                                      \
        return rc == 0 ? need_fields(d, table, nf, seen, what) : rc;                               \
    }
DECODE_VALUE(decode_scrape, struct lt_scrape, decode_scrape_fields, lt_schema_scrape, LT_SCR_N,
             "scrape sample")
DECODE_VALUE(decode_check, struct lt_check, decode_check_fields, lt_schema_check, LT_CHK_N,
             "self-check")

DECODE_VALUE(decode_verdict, struct lt_verdict, decode_verdict_fields, lt_schema_verdict, LT_VRD_N,
             "verdict")
DECODE_VALUE(decode_answer, struct lt_answer, decode_answer_fields, lt_schema_answer, LT_ANS_N,
             "capacity answer")

static int decode_chunks(struct dec *d, uint32_t n, struct lt_result *res)
{
    int rc = 0;
    const char *key = lt_schema_result[LT_RES_CHUNKS].key;
    struct lt_chunk *c = arena_alloc(d->r, (size_t)n * sizeof *c);
    if (n && !c)
        return lt_errset(d->err, LT_ENOMEM, "%s: out of memory", d->r->path);
    int64_t prev = (res->has & LT_RHAS_SENT) ? res->sent : res->sched;
    for (uint32_t j = 0; j < n; j++) {
        int64_t dt = 0;
        LT_TRY(get_i64(d, key, &dt));
        LT_TRY(get_u32(d, key, &c[j].tokens));
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
    uint64_t seen = 0;
    memset(res, 0, sizeof *res);
    d->chunks = NULL;
    d->results = true;
    rc = decode_result_fields(d, nkeys, res, &res->has, &res->extra, &seen);
    d->results = false;
    if (rc < 0)
        goto out;
    if (rc > 0)
        return rc;
    for (int j = LT_RES_I; j <= LT_RES_SCHED; j++)
        if (!(seen & (uint64_t)1 << j))
            return lt_errset(d->err, LT_EFORMAT, "%s: %s: result record without \"%s\"", d->r->path,
                             lt__rd_what(d->r, (char[96]){0}), lt_schema_result[j].key);
    if (d->chunks) {
        d->c.p = d->chunks;
        LT_TRY(decode_chunks(d, d->n_chunks / 2, res));
    }
out:
    return rc;
}

/* Whether every key of the map body at p (n pairs) is a string, and
 * whether one of them is "rec" with the value "run" (or "block", or
 * "scrape"). */
static bool keys_are_strings(const uint8_t *p, uint32_t n, bool *is_run, bool *is_block,
                             bool *is_scrape)
{
    struct cur c = {p};
    *is_run = *is_block = *is_scrape = false;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *k;
        uint32_t kn;
        if (!lt__rd_str(&c, &k, &kn))
            return false;
        if (kn == 3 && !memcmp(k, K_REC, 3) && is_str_run(&c))
            *is_run = true;
        if (kn == 3 && !memcmp(k, K_REC, 3) && is_str_block(&c))
            *is_block = true;
        if (kn == 3 && !memcmp(k, K_REC, 3) && is_str_scrape(&c))
            *is_scrape = true;
        lt__rd_skip_value(&c);
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
    } else if (type == LT_ITEM_SCRAPE) {
        rc = decode_scrape(d, nkeys, &it->scr);
        x = &it->scr.extra;
    } else if (type == LT_ITEM_CHECK) {
        rc = decode_check(d, nkeys, &it->chk);
        x = &it->chk.extra;
    } else if (type == LT_ITEM_VERDICT) {
        rc = decode_verdict(d, nkeys, &it->vrd);
        x = &it->vrd.extra;
    } else if (type == LT_ITEM_ANSWER) {
        rc = decode_answer(d, nkeys, &it->ans);
        x = &it->ans.extra;
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
int lt__rd_decode_value(struct lt_reader *r, struct lt_item *it, struct lt_err *err)
{
    struct dec d = {.r = r, .err = err, .c = {it->raw}};
    uint32_t nkeys = 0;
    if (!lt__rd_coll(&d.c, true, &nkeys))
        return lt_errset(err, LT_EFORMAT, "%s: %s is not a map", r->path,
                         lt__rd_what(r, (char[96]){0}));
    const uint8_t *body = d.c.p;
    bool results = r->hdr.kind != LT_KIND_TRACE;
    int rc = decode_as(&d, results ? LT_ITEM_RESULT : LT_ITEM_RECORD, nkeys, it);
    if (rc == DEC_IS_RUN || rc == DEC_IS_SCRAPE || rc == DEC_IS_CHECK || rc == DEC_IS_VERDICT ||
        rc == DEC_IS_ANSWER) {
        d.c.p = body;
        rc = decode_as(&d,
                       rc == DEC_IS_RUN       ? LT_ITEM_RUN
                       : rc == DEC_IS_SCRAPE  ? LT_ITEM_SCRAPE
                       : rc == DEC_IS_CHECK   ? LT_ITEM_CHECK
                       : rc == DEC_IS_VERDICT ? LT_ITEM_VERDICT
                                              : LT_ITEM_ANSWER,
                       nkeys, it);
    }
    if (rc < 0) {
        bool is_run = false, is_block = false, is_scrape = false;
        if (!keys_are_strings(body, nkeys, &is_run, &is_block, &is_scrape))
            return lt_errset(err, LT_EFORMAT, "%s: %s has a key that is not a string", r->path,
                             lt__rd_what(r, (char[96]){0}));
        if (results && is_block && !is_run)
            return DEC_IS_BLOCK;
        if (results && is_run && it->type != LT_ITEM_RUN) {
            d.c.p = body;
            rc = decode_as(&d, LT_ITEM_RUN, nkeys, it);
        } else if (results && is_scrape && !is_run && it->type != LT_ITEM_SCRAPE) {
            d.c.p = body;
            rc = decode_as(&d, LT_ITEM_SCRAPE, nkeys, it);
        }
    }
    if (rc == 0 && it->type == LT_ITEM_RECORD) {
        if (it->rec.t < r->last_t && !r->completion_order)
            return lt_errset(err, LT_EFORMAT,
                             "%s: %s: t=%lld us is earlier than the previous record's "
                             "%lld us; trace records must be in arrival order",
                             r->path, lt__rd_what(r, (char[96]){0}), (long long)it->rec.t,
                             (long long)r->last_t);
        r->last_t = it->rec.t;
    }
    return rc;
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

int lt__rd_header_of(struct lt_reader *r, const msgpack_object *op, size_t len, struct lt_err *err)
{
    int rc;
    const msgpack_object o = *op;
    struct dec d = {.r = r, .err = err, .what = "the header"};
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
    /* The same map's bytes, pair by pair: meta and unknown keys are kept
     * as they were written (the scan accepted them). */
    struct cur raw = {(const uint8_t *)r->frame.p + r->pos};
    uint32_t npairs = 0;
    lt__rd_coll(&raw, true, &npairs);
    for (uint32_t i = 0; i < m->size; i++) {
        const msgpack_object *k = &m->ptr[i].key, *v = &m->ptr[i].val;
        const uint8_t *kraw = raw.p;
        lt__rd_skip_value(&raw);
        const uint8_t *vraw = raw.p;
        lt__rd_skip_value(&raw);
        if (k->type != MSGPACK_OBJECT_STR)
            return lt_errset(err, LT_EFORMAT, "%s: header has a key that is not a string", r->path);
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
        } else if ((obj_is(k, K_CREATED) || obj_is(k, K_SOURCE)) && v->type == MSGPACK_OBJECT_STR) {
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
            /* meta and unknown keys: kept as their bytes; `order` too, so
             * a tool that copies the header copies the promise with it */
            if (obj_is(k, K_ORDER) && v->type == MSGPACK_OBJECT_STR && obj_is(v, "completion"))
                r->completion_order = true;
            bool meta = obj_is(k, K_META);
            const uint8_t *from = meta ? vraw : kraw;
            size_t size = (size_t)(raw.p - from);
            uint8_t *dst = (uint8_t *)hp;
            memcpy(dst, from, size);
            hp += size;
            if (meta) {
                r->hdr.meta = dst;
                r->hdr.meta_len = size;
            } else {
                if (!extra_at)
                    extra_at = dst;
                extra_start += size;
                r->hdr.extra.n++;
            }
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

bool lt_extra_get_int(const struct lt_extra *x, const char *key, int64_t *v)
{
    /* The bytes were scanned when they were read (or packed by lt_mp), so
     * the cursor needs no bounds here, only the count of pairs. */
    struct cur c = {x->data};
    size_t kl = strlen(key);
    for (uint32_t i = 0; i < x->n && x->len; i++) {
        const uint8_t *k;
        uint32_t kn;
        if (!lt__rd_str(&c, &k, &kn))
            return false;
        if (kn != kl || memcmp(k, key, kl)) {
            lt__rd_skip_value(&c);
            continue;
        }
        uint64_t u;
        int64_t s;
        int r = lt__rd_int(&c, &u, &s);
        if (r > 0 && u <= INT64_MAX)
            *v = (int64_t)u;
        else if (r < 0)
            *v = s;
        return r > 0 ? u <= INT64_MAX : r < 0;
    }
    return false;
}

bool lt_meta_get_str(const struct lt_header *h, const char *key, const char **s, size_t *n)
{
    if (!h->meta || !h->meta_len)
        return false;
    /* Scanned with the header, or packed by lt_meta_pack: no bounds needed
     * beyond the map's count. */
    struct cur c = {h->meta};
    uint32_t pairs;
    if (!lt__rd_coll(&c, true, &pairs))
        return false;
    size_t kl = strlen(key);
    for (uint32_t i = 0; i < pairs; i++) {
        const uint8_t *k, *v;
        uint32_t kn, vn;
        if (!lt__rd_str(&c, &k, &kn))
            return false;
        if (kn != kl || memcmp(k, key, kl)) {
            lt__rd_skip_value(&c);
            continue;
        }
        if (!lt__rd_str(&c, &v, &vn))
            return false;
        *s = (const char *)v;
        *n = vn;
        return true;
    }
    return false;
}

bool lt_extra_get_str(const struct lt_extra *x, const char *key, char *buf, size_t size)
{
    struct cur c = {x->data};
    size_t kl = strlen(key);
    for (uint32_t i = 0; i < x->n && x->len; i++) {
        const uint8_t *k, *v;
        uint32_t kn, vn;
        if (!lt__rd_str(&c, &k, &kn))
            return false;
        if (kn != kl || memcmp(k, key, kl)) {
            lt__rd_skip_value(&c);
            continue;
        }
        if (!lt__rd_str(&c, &v, &vn) || size == 0)
            return false;
        size_t n = vn < size - 1 ? vn : size - 1;
        memcpy(buf, v, n);
        buf[n] = 0;
        return true;
    }
    return false;
}

bool lt_extra_get_strs(const struct lt_extra *x, const char *key, uint32_t index, char *buf,
                       size_t size)
{
    struct cur c = {x->data};
    size_t kl = strlen(key);
    for (uint32_t i = 0; i < x->n && x->len; i++) {
        const uint8_t *k, *v;
        uint32_t kn, vn, n;
        if (!lt__rd_str(&c, &k, &kn))
            return false;
        if (kn != kl || memcmp(k, key, kl)) {
            lt__rd_skip_value(&c);
            continue;
        }
        if (!lt__rd_coll(&c, false, &n) || index >= n || size == 0)
            return false;
        for (uint32_t j = 0; j < index; j++)
            lt__rd_skip_value(&c);
        if (!lt__rd_str(&c, &v, &vn))
            return false;
        size_t m = vn < size - 1 ? vn : size - 1;
        memcpy(buf, v, m);
        buf[m] = 0;
        return true;
    }
    return false;
}

int lt_extra_copy_except(const struct lt_extra *x, const char *const *keys, size_t nk,
                         struct lt_buf *out, uint32_t *n)
{
    struct cur c = {x->data};
    *n = 0;
    for (uint32_t i = 0; i < x->n && x->len; i++) {
        const uint8_t *pair = c.p, *k;
        uint32_t kn;
        if (!lt__rd_str(&c, &k, &kn))
            return LT_EFORMAT;
        lt__rd_skip_value(&c);
        bool drop = false;
        for (size_t j = 0; j < nk && !drop; j++)
            drop = kn == strlen(keys[j]) && !memcmp(k, keys[j], kn);
        if (drop)
            continue;
        int rc = lt_buf_append(out, pair, (size_t)(c.p - pair));
        if (rc < 0)
            return rc;
        (*n)++;
    }
    return 0;
}

/*
 * The reader's result blocks (docs/trace-format.md 2.6): a block is
 * checked in one pass (lt__rd_block_begin: every element's type and range,
 * bounds, limits, where each column starts, the first bad result), then
 * its results are built one per call from the columns (lt__rd_block_next).
 */
#include "traces/reader_internal.h"

#include <stdio.h>

/* ---- result blocks ---------------------------------------------------- */

/* col_int() for the encodings other than fixint and uint 8-32: a call
 * (small enough for col_int() itself to be inlined everywhere), but no
 * longer lt__rd_int()'s general one. Negative ones are common enough: sched
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
    case 0xd0:
        *pp = p + 2;
        return (uint64_t)(int64_t)(int8_t)p[1];
    case 0xd1:
        *pp = p + 3;
        return (uint64_t)(int64_t)(int16_t)(uint16_t)lt__rd_be(p + 1, 2);
    case 0xd2:
        *pp = p + 5;
        return (uint64_t)(int64_t)(int32_t)(uint32_t)lt__rd_be(p + 1, 4);
    case 0xcf: /* uint 64 and int 64: the same 8 bytes */
    case 0xd3:
        *pp = p + 9;
        return lt__rd_be(p + 1, 8);
    default:
        *pp = p + 1;
        return 0; /* not an integer: lt__rd_block_begin lets none through */
    }
}

/* The integer at *pp (checked by lt__rd_block_begin), as 64 bits (two's
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
    [BC_I] = BK_DELTA,        [BC_RUN] = BK_U32R,     [BC_SCHED] = BK_DELTA,
    [BC_SENT] = BK_TIME,      [BC_FB] = BK_TIME,      [BC_FT] = BK_TIME,
    [BC_FC] = BK_TIME,        [BC_END] = BK_TIME,     [BC_CHUNKS] = BK_CHUNKS,
    [BC_IN] = BK_U32,         [BC_OUT] = BK_U32,      [BC_REASONING] = BK_U32,
    [BC_CACHED] = BK_U32,     [BC_WANT_IN] = BK_U32,  [BC_WANT_OUT] = BK_U32,
    [BC_STATUS] = BK_STATUS,  [BC_ERR] = BK_STR,      [BC_FINISH] = BK_STR,
    [BC_COUNT] = BK_STR,      [BC_ERR_BODY] = BK_STR, [BC_WARMUP] = BK_BOOL,
    [BC_CANCELLED] = BK_BOOL,
};

/* A block is checked in one pass over its bytes, which replaces the scan
 * of lt__rd_scan_value() for it: every read below is bounds-checked against
 * `end`, every count against the limits. The pass finds where each column
 * starts, and the first result (row) that is wrong; the results before it
 * are handed out by lt__rd_block_next() straight from the columns, unchecked. */
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
        if ((size_t)(c->end - c->p) < 1 + (size_t)lt__rd_fixed_size[b])
            return LT_ETRUNC;
        struct cur k = {c->p};
        int rc = lt__rd_int(&k, u, s);
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
    lt__rd_coll(&k, map, n);
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
    uint64_t len = h == 1 ? (uint64_t)(b & 0x1f) : lt__rd_be(c->p + 1, (int)h - 1);
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
    int rc = lt__rd_scan_value(&c->s);
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
/* (Not static: called once, it would be inlined into ck_row_elem(), whose
 * common path it then slows: callgrind, ~0.8 % more on results with chunks.) */
int lt__rd_ck_elem(struct bcheck *c, enum bkind kind, const char **why);
int lt__rd_ck_elem(struct bcheck *c, enum bkind kind, const char **why)
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
 * not one (the block is then wrong as a whole). Negative:
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
 * alone shows to be right, or 0: look closer (lt__rd_ck_elem()). Lead bytes:
 * 0x00-0x7f positive fixint, 0xc0 nil, 0xc2-0xc3 bools, 0xcc-0xcf uint 8-64,
 * 0xd0-0xd3 int 8-64, 0xe0-0xff negative fixint. A string column's positive
 * fixint names an earlier string, which is checked apart; a string itself
 * goes through lt__rd_ck_elem(), which counts it; so do chunks, and the integers
 * whose range depends on the value (a uint32 status, a signed uint).
 * lt__rd_block_begin() looks it up in a table: one lookup per element, since this
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

struct scol {                 /* a column checked by ck_rows() */
    const uint8_t *pos, *end; /* its next element, and where it must end */
    const uint8_t *ok;        /* quick_len() of its kind */
    uint32_t nstr;            /* string elements so far */
    enum bkind kind;
    int col;
    bool dead; /* an element could not be stepped over: the rest is not read */
};

/* Element `row` of column s the long way (lt__rd_ck_elem()): 1 when it is right
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
        rc = lt__rd_ck_elem(c, s->kind, &why);
        c->end = block_end;
        if (rc == 0) { /* wrong: step over it, whatever it is */
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
 * a walk along each column would (the first bad one is what counts), so that a limit is
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

/* The column a key of a block names (its result field, trace_schema.h;
 * they come in the table's order, so `hint` is where to look first), or
 * -1; and whether it is "n" or "bytes". Out of line: once per key of a
 * block, and kept out of the checking loops' way. */
static __attribute__((noinline)) int block_key(const uint8_t *key, uint32_t kn, int *hint,
                                               bool *is_n, bool *is_bytes)
{
    int col = lt_schema_find(lt_schema_result, LT_RES_N, key, kn, *hint);
    *is_n = kn == sizeof K_N - 1 && !memcmp(key, K_N, kn);
    *is_bytes = kn == sizeof K_BYTES - 1 && !memcmp(key, K_BYTES, kn);
    if (col >= 0)
        *hint = col + 1;
    return col;
}

/* Check the block at p (bounded by end) and get it ready to be handed
 * out; *len is its size. Returns 0, or a negative code when the block
 * cannot be delimited or passes a limit (then nothing of it is handed
 * out). Anything else wrong is kept in r->blk and reported when the
 * reader reaches the result it concerns. */
int lt__rd_block_begin(struct lt_reader *r, const uint8_t *p, const uint8_t *end, size_t *len,
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
    int hint = 0;
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
        bool is_n, is_bytes;
        int col = block_key(key, kn, &hint, &is_n, &is_bytes);
        if (c.p >= c.end) {
            rc = LT_ETRUNC;
            goto fail;
        }
        if (is_bytes && !have_sizes) {
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
            if (is_n && (rc = ck_int(&c, &u, &sv)) == 1) {
                n = u;
                have_n = true;
            } else if (is_n && rc >= -1) {
                ck_bad(&c, 0, K_N, "must be a non-negative integer");
            } else if (!is_n && (rc = ck_skip(&c, 1)) < 0) {
                goto fail;
            }
            if (c.p != val_end)
                ck_bad(&c, 0, K_BYTES, "gives a size that is not that of the value it is for");
            c.p = val_end;
            continue;
        }
        if (have_sizes && !n_sizes)
            ck_bad(&c, 0, K_BYTES, "gives fewer sizes than keys follow it");
        if (is_n) {
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
        /* A column without a size (past the sizes, "gives fewer sizes"
         * above, or before or without `bytes`): blocks whose columns must
         * be walked to be found are no longer read (docs/trace-format.md
         * 2.6). It is stepped over, within the limits, and the block is
         * wrong as a whole. */
        if (!have_sizes)
            ck_bad(&c, 0, K_BYTES, "is missing (blocks without column sizes are no longer read)");
        if ((rc = ck_skip(&c, 1)) < 0)
            goto fail;
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
    for (int k = 0; k < LT_BSTR_N; k++) {
        lt_buf_reset(&r->bstr[k]);
        lt_buf_reset(&r->boff[k]);
    }
    return 0;
fail:
    return block_fail(r, p, rc, err);
}

/* A string column's element (checked by lt__rd_block_begin): a string is copied,
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
    lt__rd_str(&c, &s, &n);
    *pp = c.p;
    uint32_t off = (uint32_t)strs->len;
    if ((*rc = lt_buf_append(strs, s, n)) < 0 || (*rc = lt_buf_append(strs, "", 1)) < 0 ||
        (*rc = lt_buf_append(offs, &off, sizeof off)) < 0)
        return NULL;
    return strs->p + off;
}

/* Hand out the next result of the block in r->item: 1, 0 when the block
 * is done, or the error kept for a bad result. */
static int lt__rd_block_next(struct lt_reader *r, struct lt_err *err)
{
    struct rblock *b = &r->blk;
    struct lt_item *it = &r->item; /* (a field of r: it cannot alias b) */
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
    res->err = res->finish = res->count = res->err_body = NULL;
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
    const char **strs[LT_BSTR_N] = {&res->err, &res->finish, &res->count, &res->err_body};
    for (int k = 0; k < LT_BSTR_N; k++) {
        const uint8_t **p = &col[BC_ERR + k];
        if (!*p)
            continue;
        if (**p == 0xc0)
            (*p)++;
        else if (!(*strs[k] = col_str(&r->bstr[k], &r->boff[k], p, &rc)))
            return lt_errset(err, rc, "%s: out of memory", r->path);
    }
    res->warmup = col[BC_WARMUP] && *col[BC_WARMUP]++ == 0xc3;
    res->cancelled = col[BC_CANCELLED] && *col[BC_CANCELLED]++ == 0xc3;
    if (col[BC_CHUNKS]) {
        if (*col[BC_CHUNKS] == 0xc0) {
            col[BC_CHUNKS]++;
        } else {
            struct cur c = {col[BC_CHUNKS]};
            uint32_t n2 = 0;
            lt__rd_coll(&c, false, &n2);
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

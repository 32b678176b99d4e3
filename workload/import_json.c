/*
 * The JSON lines importers (import_internal.h has the family's place):
 * Mooncake's traces, loadtrace's own record schema as `cat` prints it
 * (with its header line, optional), any JSON lines by a map, and
 * TraceLab's per-round agent trace, which is a built-in map. Also the
 * readers of JSON values that the map's evaluator shares.
 */
#include "workload/import_internal.h"
#include "base/lt_json.h"
#include "base/lt_lines.h"
#include "traces/trace_schema.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* An unknown key's value nests at most this deep: with the record's own
 * map, that is the reader's LT_LIMIT_DEPTH. */
#define JSON_DEPTH_MAX (LT_LIMIT_DEPTH - 1)

/*
 * jansson keeps integers as long long, and rejects larger ones; but block
 * hashes and session ids are unsigned 64-bit and often above INT64_MAX.
 * Such integers are rewritten, before parsing, as strings that no JSON
 * text can produce without "\u0000": a NUL, 'U', then the digits. Every
 * reader of a JSON value below sees through that (json_u64 and friends),
 * and a line that needs the rewrite and also holds "\u0000" is refused
 * rather than risk mistaking a string for a number.
 */
#define BIG_PREFIX "\\u0000U"

static bool is_num_char(char c)
{
    return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
}

/* An unsigned integer literal above INT64_MAX that fits in 64 bits. */
static bool is_big_uint(const char *p, size_t n)
{
    if (n < 19 || n > 20 || p[0] == '0')
        return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
            return false;
    if (n == 19)
        return memcmp(p, "9223372036854775807", 19) > 0;
    return memcmp(p, "18446744073709551615", 20) <= 0;
}

/* Returns 1 and sets *p, *n to the rewritten line in m->jbuf, 0 when the
 * line needs nothing, or a negative code. */
static int rewrite_big(struct imp *m, const char **p, size_t *n, uint64_t line)
{
    int rc = 0;
    const char *s = *p;
    size_t len = *n;
    bool in_str = false, esc = false, found = false;
    lt_buf_reset(&m->jbuf);
    size_t copied = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_str) {
            if (esc)
                esc = false;
            else if (c == '\\')
                esc = true;
            else if (c == '"')
                in_str = false;
            continue;
        }
        if (c == '"') {
            in_str = true;
            continue;
        }
        if (!is_num_char(c) || (i > 0 && is_num_char(s[i - 1])))
            continue;
        size_t j = i;
        while (j < len && is_num_char(s[j]))
            j++;
        if (is_big_uint(s + i, j - i)) {
            if (!found) {
                for (size_t k = 0; k + 6 <= len; k++)
                    if (!memcmp(s + k, "\\u0000", 6))
                        return lt__imp_row_bad(m, line,
                                           "integers above 9223372036854775807 in a line that also "
                                           "holds \\u0000 are not supported");
                found = true;
            }
            if ((rc = lt_buf_append(&m->jbuf, s + copied, i - copied)) < 0 ||
                (rc = lt_buf_puts(&m->jbuf, "\"" BIG_PREFIX)) < 0 ||
                (rc = lt_buf_append(&m->jbuf, s + i, j - i)) < 0 ||
                (rc = lt_buf_puts(&m->jbuf, "\"")) < 0)
                return lt_errset(m->err, rc, "%s:%llu: line too long", m->name,
                                 (unsigned long long)line);
            copied = j;
        }
        i = j - 1;
    }
    if (!found)
        return 0;
    if ((rc = lt_buf_append(&m->jbuf, s + copied, len - copied)) < 0)
        return lt_errset(m->err, rc, "%s:%llu: line too long", m->name, (unsigned long long)line);
    *p = m->jbuf.p;
    *n = m->jbuf.len;
    return 1;
}

/* A big unsigned integer hidden in a string by rewrite_big. */
bool lt__imp_json_big(const json_t *v, uint64_t *u)
{
    if (!json_is_string(v))
        return false;
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n < 3 || s[0] != '\0' || s[1] != 'U')
        return false;
    uint64_t x = 0;
    for (size_t i = 2; i < n; i++)
        x = x * 10 + (uint64_t)(s[i] - '0');
    *u = x;
    return true;
}

/* Whole numbers: JSON integers, big ones, and reals with no fraction (jq
 * arithmetic can turn integers into reals). */
bool lt__imp_json_u64(const json_t *v, uint64_t max, uint64_t *u)
{
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 0 || (uint64_t)x > max)
            return false;
        *u = (uint64_t)x;
        return true;
    }
    if (lt__imp_json_big(v, u))
        return *u <= max;
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d < 0 || d != floor(d) || d >= 9007199254740992.0 || d > (double)max)
            return false;
        *u = (uint64_t)d;
        return true;
    }
    return false;
}

static bool json_i64(const json_t *v, int64_t *x)
{
    if (json_is_integer(v)) {
        *x = json_integer_value(v);
        return true;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d != floor(d) || fabs(d) >= 9007199254740992.0)
            return false;
        *x = (int64_t)d;
        return true;
    }
    return false;
}

bool lt__imp_json_text(const json_t *v, const char **s, size_t *n)
{
    uint64_t u;
    if (!json_is_string(v) || lt__imp_json_big(v, &u))
        return false;
    *s = json_string_value(v);
    *n = json_string_length(v);
    return true;
}

/* Any JSON value as msgpack, into m->pk.out. */
static int pack_json(struct imp *m, const json_t *v, int depth)
{
    uint64_t u;
    bool coll = json_is_object(v) || json_is_array(v);
    if (coll && depth >= JSON_DEPTH_MAX && (json_object_size(v) || json_array_size(v))) {
        m->why = "nested deeper than 31 levels (the reader's limit is 32, the record included)";
        return LT_ELIMIT; /* an empty one does not count, for the reader */
    }
    if (json_object_size(v) > LT_LIMIT_ARRAY || json_array_size(v) > LT_LIMIT_ARRAY) {
        m->why = "has more than 1,000,000 elements in one array or object (the reader's limit)";
        return LT_ELIMIT;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *k;
        size_t kn;
        json_t *e;
        lt_mp_map(&m->pk, (uint32_t)json_object_size(v));
        json_object_keylen_foreach((json_t *)v, k, kn, e)
        {
            lt__imp_pk_str(m, k, kn);
            int rc = pack_json(m, e, depth + 1);
            if (rc < 0)
                return rc;
        }
        break;
    }
    case JSON_ARRAY:
        lt_mp_array(&m->pk, (uint32_t)json_array_size(v));
        for (size_t i = 0; i < json_array_size(v); i++) {
            int rc = pack_json(m, json_array_get(v, i), depth + 1);
            if (rc < 0)
                return rc;
        }
        break;
    case JSON_STRING:
        if (lt__imp_json_big(v, &u))
            lt_mp_uint(&m->pk, u);
        else
            lt__imp_pk_str(m, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        lt_mp_int(&m->pk, json_integer_value(v));
        break;
    case JSON_REAL:
        lt_mp_double(&m->pk, json_real_value(v));
        break;
    case JSON_TRUE:
        lt_mp_bool(&m->pk, true);
        break;
    case JSON_FALSE:
        lt_mp_bool(&m->pk, false);
        break;
    case JSON_NULL:
        lt_mp_nil(&m->pk);
        break;
    }
    return m->pk.rc;
}

/* An unknown key and its value, kept in the record's extra. */
int lt__imp_json_extra(struct imp *m, uint64_t line, const char *k, size_t kn, const json_t *v)
{
    m->pk.out = &m->extra;
    lt__imp_pk_extra_key(m, k, kn);
    int rc = pack_json(m, v, 0);
    if (rc == LT_ELIMIT)
        return lt__imp_row_bad(m, line, "key \"%.*s\": %s", (int)kn, k, m->why);
    if (rc < 0)
        return lt_errset(m->err, rc, "%s:%llu: out of memory", m->name, (unsigned long long)line);
    m->rec.extra.n++;
    return 0;
}

static int key_bad(struct imp *m, uint64_t line, const char *key, const char *what)
{
    return lt__imp_row_bad(m, line, "key \"%s\": %s", key, what);
}

static int want_u32(struct imp *m, uint64_t line, const char *key, const json_t *v, uint32_t *x)
{
    uint64_t u;
    if (!lt__imp_json_u64(v, UINT32_MAX, &u))
        return key_bad(m, line, key, "must be a whole number from 0 to 4294967295");
    *x = (uint32_t)u;
    return 0;
}

static int want_str(struct imp *m, uint64_t line, const char *key, const json_t *v, const char **s)
{
    size_t n;
    if (!lt__imp_json_text(v, s, &n))
        return key_bad(m, line, key, "must be a string");
    if (strlen(*s) != n)
        return key_bad(m, line, key, "must not contain NUL (\\u0000)");
    return 0;
}

int lt__imp_want_blocks(struct imp *m, uint64_t line, const char *key, const json_t *v)
{
    if (!json_is_array(v))
        return key_bad(m, line, key, "must be an array of block hashes");
    size_t n = json_array_size(v);
    if (n > UINT32_MAX)
        return key_bad(m, line, key, "has too many elements");
    int rc = lt__imp_grow_array(m, (void **)&m->blocks, &m->blocks_cap, n, sizeof *m->blocks);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n; i++)
        if (!lt__imp_json_u64(json_array_get(v, i), UINT64_MAX, &m->blocks[i]))
            return lt__imp_row_bad(m, line,
                               "key \"%s\": element %zu must be a whole number from 0 to "
                               "18446744073709551615",
                               key, i);
    m->rec.blocks = m->blocks;
    m->rec.n_blocks = (uint32_t)n;
    m->rec.has |= LT_HAS_BLOCKS;
    return 0;
}

/* Parse one JSON line into *root (an object). */
static int json_line(struct imp *m, const char *p, size_t n, uint64_t line, json_t **root)
{
    int rc = rewrite_big(m, &p, &n, line);
    if (rc < 0)
        return rc;
    json_error_t je;
    json_t *v = json_loadb(p, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!v)
        return lt__imp_row_bad(m, line, "not valid JSON: %s (at column %d)", je.text, je.column);
    if (!json_is_object(v)) {
        json_decref(v);
        return lt__imp_row_bad(m, line, "not a JSON object");
    }
    *root = v;
    return 0;
}

/* {"timestamp": ms, "input_length": n, "output_length": n, "hash_ids": [...]} */
static int mooncake_row(struct imp *m, const json_t *o, uint64_t line, int64_t *raw)
{
    int rc = 0;
    const char *k;
    size_t kn;
    json_t *v;
    bool have_ts = false;
    lt__imp_rec_begin(m);
    json_object_keylen_foreach((json_t *)o, k, kn, v)
    {
        if (!strcmp(k, "timestamp")) {
            int64_t ms;
            if (json_i64(v, &ms) && ms >= -TIME_MAX_US / 1000 && ms <= TIME_MAX_US / 1000) {
                *raw = ms * 1000;
            } else if (json_is_real(v) && fabs(json_real_value(v)) <= TIME_MAX_US / 1000) {
                *raw = llround(json_real_value(v) * 1000.0);
            } else if (json_is_number(v) || lt__imp_json_big(v, &(uint64_t){0})) {
                return lt__imp_row_bad(m, line,
                                   "key \"timestamp\": %.17g ms is out of range (times are at "
                                   "most %lld ms from 0)",
                                   json_is_number(v) ? json_number_value(v) : 1.8446744073709552e19,
                                   (long long)(TIME_MAX_US / 1000));
            } else {
                return key_bad(m, line, "timestamp", "must be a number (milliseconds)");
            }
            have_ts = true;
        } else if (!strcmp(k, "input_length")) {
            LT_TRY(want_u32(m, line, k, v, &m->rec.in));
            m->rec.has |= LT_HAS_IN;
        } else if (!strcmp(k, "output_length")) {
            LT_TRY(want_u32(m, line, k, v, &m->rec.out));
            m->rec.has |= LT_HAS_OUT;
        } else if (!strcmp(k, "hash_ids")) {
            LT_TRY(lt__imp_want_blocks(m, line, k, v));
        } else {
            LT_TRY(lt__imp_json_extra(m, line, k, kn, v));
        }
    }
    if (!have_ts)
        return lt__imp_row_bad(m, line, "no \"timestamp\"");
    if (!(m->rec.has & LT_HAS_IN))
        return lt__imp_row_bad(m, line, "no \"input_length\"");
    if (!(m->rec.has & LT_HAS_OUT))
        return lt__imp_row_bad(m, line, "no \"output_length\"");
    lt__imp_rec_end(m);
out:
    return rc;
}

/* The first line of `loadtrace cat` output. */
static int jsonl_header(struct imp *m, const json_t *o, uint64_t line)
{
    int rc = 0;
    const char *k, *s;
    size_t kn, sn;
    json_t *v;
    m->hdr.kind = LT_KIND_TRACE;
    m->hdr.version = LT_FORMAT_VERSION;
    json_object_keylen_foreach((json_t *)o, k, kn, v)
    {
        if (!strcmp(k, "format")) {
            if (!lt__imp_json_text(v, &s, &sn) || strcmp(s, LT_FORMAT_NAME))
                return lt__imp_row_bad(m, line, "a header line must have \"format\":\"loadtrace\"");
        } else if (!strcmp(k, "version")) {
            uint64_t ver;
            if (!lt__imp_json_u64(v, UINT32_MAX, &ver) || ver == 0)
                return key_bad(m, line, "version", "must be a positive whole number");
            if (ver > LT_FORMAT_VERSION)
                return lt_errset(m->err, LT_EVERSION,
                                 "%s:%llu: written with trace format version %llu; this "
                                 "loadtrace reads version %d and older: upgrade loadtrace",
                                 m->name, (unsigned long long)line, (unsigned long long)ver,
                                 LT_FORMAT_VERSION);
            m->hdr.version = (uint32_t)ver;
        } else if (!strcmp(k, "kind")) {
            if (!lt__imp_json_text(v, &s, &sn) || (strcmp(s, "trace") && strcmp(s, "results")))
                return key_bad(m, line, "kind", "must be \"trace\"");
            if (!strcmp(s, "results"))
                return lt__imp_row_bad(m, line, "this is a results file; import takes traces only");
        } else if (!strcmp(k, "created") || !strcmp(k, "source")) {
            LT_TRY(want_str(m, line, k, v, &s));
            char **dst = !strcmp(k, "created") ? &m->created : &m->source;
            free(*dst);
            if (!(*dst = strdup(s)))
                return lt_errset(m->err, LT_ENOMEM, "%s: out of memory", m->name);
        } else if (!strcmp(k, "block_tokens")) {
            LT_TRY(want_u32(m, line, k, v, &m->hdr.block_tokens));
        } else {
            bool meta = !strcmp(k, "meta");
            m->pk.out = meta ? &m->meta : &m->hdr_extra;
            m->pk.rc = 0;
            if (!meta)
                lt__imp_pk_str(m, k, kn);
            if ((rc = pack_json(m, v, 0)) < 0)
                return rc == LT_ELIMIT ? key_bad(m, line, k, m->why)
                                       : lt_errset(m->err, rc, "%s: out of memory", m->name);
            if (!meta)
                m->hdr.extra.n++;
        }
    }
    m->hdr.created = m->created;
    m->hdr.source = m->source ? m->source : "";
    m->hdr.meta = m->meta.len ? (const uint8_t *)m->meta.p : NULL;
    m->hdr.meta_len = m->meta.len;
    m->hdr.extra.data = (const uint8_t *)m->hdr_extra.p;
    m->hdr.extra.len = m->hdr_extra.len;
    m->header_given = true;
out:
    return rc;
}

/* A real of 2^53 or more is not known to be exact (9007199254740993.0 is
 * read as ...992): refused, not rounded. */
static int inexact(struct imp *m, uint64_t line, const char *key, const json_t *v)
{
    return lt__imp_row_bad(m, line,
                       "key \"%s\": %.17g is a real number of 2^53 or more, which is not exact: "
                       "write it as an integer",
                       key, json_real_value(v));
}

static int want_i64(struct imp *m, uint64_t line, const char *key, const json_t *v, int64_t *x)
{
    if (!json_i64(v, x)) {
        if (json_is_real(v) && fabs(json_real_value(v)) >= 9007199254740992.0)
            return inexact(m, line, key, v);
        return key_bad(m, line, key, "must be a whole number");
    }
    return 0;
}

/* "msgs": [[role, tokens], ...] */
static int want_msgs(struct imp *m, uint64_t line, const char *k, const json_t *v)
{
    struct lt_record *r = &m->rec;
    if (!json_is_array(v) || json_array_size(v) > UINT32_MAX)
        return key_bad(m, line, k, "must be an array of [role, tokens] pairs");
    size_t n = json_array_size(v);
    int rc = lt__imp_grow_array(m, (void **)&m->msgs, &m->msgs_cap, n, sizeof *m->msgs);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(v, i);
        const char *role;
        size_t rn;
        uint64_t tok;
        if (!json_is_array(e) || json_array_size(e) != 2 ||
            !lt__imp_json_text(json_array_get(e, 0), &role, &rn) ||
            !lt__imp_json_u64(json_array_get(e, 1), UINT32_MAX, &tok))
            return lt__imp_row_bad(m, line,
                               "key \"msgs\": element %zu must be [role, tokens] (a string "
                               "and a whole number)",
                               i);
        if (rn > LT_ROLE_MAX || strlen(role) != rn)
            return lt__imp_row_bad(m, line,
                               "key \"msgs\": element %zu: a role is at most %d bytes, "
                               "without NUL",
                               i, LT_ROLE_MAX);
        memcpy(m->msgs[i].role, role, rn + 1);
        m->msgs[i].tokens = (uint32_t)tok;
    }
    r->msgs = m->msgs;
    r->n_msgs = (uint32_t)n;
    return 0;
}

/* "calls": [tokens, ...] */
static int want_calls(struct imp *m, uint64_t line, const char *k, const json_t *v)
{
    struct lt_record *r = &m->rec;
    if (!json_is_array(v) || json_array_size(v) > UINT32_MAX)
        return key_bad(m, line, k, "must be an array of token counts");
    size_t n = json_array_size(v);
    int rc = lt__imp_grow_array(m, (void **)&m->calls, &m->calls_cap, n, sizeof *m->calls);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        uint64_t x;
        if (!lt__imp_json_u64(json_array_get(v, i), UINT32_MAX, &x))
            return lt__imp_row_bad(m, line,
                               "key \"calls\": element %zu must be a whole number from 0 "
                               "to 4294967295",
                               i);
        m->calls[i] = (uint32_t)x;
    }
    r->calls = m->calls;
    r->n_calls = (uint32_t)n;
    return 0;
}

/* "orig": {status, ttft, e2e}, the keys of the table's orig list */
static int want_orig(struct imp *m, uint64_t line, const char *k, const json_t *v)
{
    struct lt_record *r = &m->rec;
    const char *ok;
    size_t okn;
    json_t *ov;
    if (!json_is_object(v))
        return key_bad(m, line, k, "must be an object {status, ttft, e2e}");
    json_object_keylen_foreach((json_t *)v, ok, okn, ov)
    {
        int64_t x;
        if (json_is_null(ov))
            continue;
        int j = strlen(ok) == okn ? lt_schema_find(lt_schema_orig, LT_ORIG_N, ok, okn, 0) : -1;
        if (j < 0)
            return lt__imp_row_bad(m, line,
                               "key \"orig\": unknown key \"%.*s\" (orig holds status, "
                               "ttft and e2e)",
                               (int)okn, ok);
        const struct lt_field *f = &lt_schema_orig[j];
        if (!json_i64(ov, &x))
            return lt__imp_row_bad(m, line, "key \"orig.%s\": must be a whole number", ok);
        if (f->type == LT_FT_I32) {
            if (x < INT32_MIN || x > INT32_MAX)
                return lt__imp_row_bad(m, line, "key \"orig.%s\": out of range", ok);
            *(int32_t *)(void *)((char *)r + f->off) = (int32_t)x;
        } else {
            *(int64_t *)(void *)((char *)r + f->off) = x;
        }
        r->has |= f->bit;
    }
    return 0;
}

/* One record of loadtrace's own schema (trace_json.c writes it). */
static int jsonl_row(struct imp *m, const json_t *o, uint64_t line, int64_t *raw)
{
    int rc = 0;
    const char *k;
    size_t kn;
    json_t *v;
    bool have_t = false;
    struct lt_record *r = &m->rec;
    lt__imp_rec_begin(m);
    json_object_keylen_foreach((json_t *)o, k, kn, v)
    {
        /* the record's keys are those of the format's table (trace_schema.h) */
        int j = strlen(k) == kn ? lt_schema_find(lt_schema_record, LT_REC_N, k, kn, 0) : -1;
        if (j < 0) {
            LT_TRY(lt__imp_json_extra(m, line, k, kn, v));
            continue;
        }
        const struct lt_field *f = &lt_schema_record[j];
        void *p = (char *)r + f->off;
        if (json_is_null(v) && !(f->flags & LT_FF_NEEDED))
            continue; /* null says "absent" */
        switch ((enum lt_ftype)f->type) {
        case LT_FT_I64:
            /* t is the row's time on its own clock, made t by lt__imp_emit() */
            LT_TRY(want_i64(m, line, k, v, j == LT_REC_T ? raw : (int64_t *)p));
            if ((f->flags & LT_FF_NONNEG) && *(j == LT_REC_T ? raw : (int64_t *)p) < 0)
                return key_bad(m, line, k, "must not be negative");
            have_t |= j == LT_REC_T;
            break;
        case LT_FT_U64:
            if (j == LT_REC_SESSION && json_is_string(v) && !lt__imp_json_big(v, &(uint64_t){0})) {
                /* a session by name: numbered, the name kept in session_id */
                LT_TRY(
                    lt__imp_name_session(m, json_string_value(v), json_string_length(v), line, NULL));
                continue;
            }
            if (!lt__imp_json_u64(v, UINT64_MAX, (uint64_t *)p))
                return json_is_real(v) && json_real_value(v) >= 9007199254740992.0
                           ? inexact(m, line, k, v)
                           : key_bad(m, line, k,
                                     "must be a whole number from 0 to 18446744073709551615");
            break;
        case LT_FT_U32:
            LT_TRY(want_u32(m, line, k, v, (uint32_t *)p));
            break;
        case LT_FT_STR:
            LT_TRY(want_str(m, line, k, v, (const char **)p));
            break;
        case LT_FT_TEXT:
            if (!lt__imp_json_text(v, &r->text, &r->text_len))
                return key_bad(m, line, k, "must be a string");
            break;
        case LT_FT_FLAG:
            if (!json_is_boolean(v))
                return key_bad(m, line, k, "must be true or false");
            if (json_is_true(v))
                r->has |= f->bit;
            continue;
        case LT_FT_MSGS:
            LT_TRY(want_msgs(m, line, k, v));
            break;
        case LT_FT_TOOLS: {
            uint64_t c, t;
            if (!json_is_array(v) || json_array_size(v) != 2 ||
                !lt__imp_json_u64(json_array_get(v, 0), UINT32_MAX, &c) ||
                !lt__imp_json_u64(json_array_get(v, 1), UINT32_MAX, &t))
                return key_bad(m, line, k, "must be [count, tokens] (two whole numbers)");
            r->tools_count = (uint32_t)c;
            r->tools_tokens = (uint32_t)t;
            break;
        }
        case LT_FT_CALLS:
            LT_TRY(want_calls(m, line, k, v));
            break;
        case LT_FT_BLOCKS:
            LT_TRY(lt__imp_want_blocks(m, line, k, v));
            break;
        case LT_FT_ORIG:
            LT_TRY(want_orig(m, line, k, v));
            continue;
        case LT_FT_I32:
        case LT_FT_F64:
        case LT_FT_BOOL:
        case LT_FT_REC:
        case LT_FT_CHUNKS: /* not types of a trace record */
        case LT_FT_SREC:
        case LT_FT_CREC:
        case LT_FT_VREC:
        case LT_FT_AREC:
        case LT_FT_VALS:
        case LT_FT_HISTS:
            break;
        }
        r->has |= f->bit;
    }
    if (!have_t) {
        const char *s;
        size_t sn;
        json_t *f = json_object_get(o, "format");
        if (f && lt__imp_json_text(f, &s, &sn) && !strcmp(s, LT_FORMAT_NAME))
            return lt__imp_row_bad(m, line,
                               "a second header line (only the first line may be one; "
                               "are two files joined?)");
        if (json_object_get(o, "rec") || json_object_get(o, "i"))
            return lt__imp_row_bad(m, line, "a run or result record: import takes traces only");
        return lt__imp_row_bad(m, line, "no \"t\" (arrival, microseconds), which every record needs");
    }
    /* a session named but not numbered gets its number from the name */
    if (r->session_id && !(r->has & LT_HAS_SESSION))
        LT_TRY(lt__imp_name_session(m, r->session_id, strlen(r->session_id), line, NULL));
    lt__imp_rec_end(m);
out:
    return rc;
}

/* A JSON lines format: how a record is read, and whether a first line may
 * be a header line (then records with blocks need one, or --block-tokens). */
struct json_spec {
    int (*row)(struct imp *m, const json_t *o, uint64_t line, int64_t *raw);
    bool header_line;
};

static int import_json(struct imp *m, struct lt_lines *lines)
{
    int rc = 0;
    bool first = true;
    const struct json_spec *spec = m->fmt->spec;
    for (;;) {
        json_decref(m->json);
        m->json = NULL;
        rc = lt_lines_next(lines, NULL, m->err);
        if (rc == 0)
            break;
        if (rc < 0) {
            LT_TRY(lt__imp_row_error(m, rc));
            continue;
        }
        const char *p = lines->line.p;
        size_t n = lines->line.len;
        if (lines->lineno == 1 && n >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3))
            p += 3, n -= 3; /* a UTF-8 byte order mark, as CSV input may have too */
        lt__imp_trim(&p, &n);
        if (n == 0)
            continue; /* a blank line carries nothing */
        uint64_t line = lines->lineno;
        int64_t raw = 0;
        rc = json_line(m, p, n, line, &m->json);
        if (rc == 0 && m->map.n) {
            rc = lt__imp_map_row(m, &(struct msrc){.obj = m->json}, line, &raw);
        } else if (rc == 0 && spec->header_line && first && json_object_get(m->json, "format")) {
            first = false;
            LT_TRY(jsonl_header(m, m->json, line));
            continue;
        } else if (rc == 0) {
            rc = spec->row(m, m->json, line, &raw);
        }
        first = false;
        if (rc < 0) {
            LT_TRY(lt__imp_row_error(m, rc));
            continue;
        }
        /* blocks mean nothing without their size, which the header must
         * give; a header line of the input says it (or not) for itself */
        if (spec->header_line && !m->header_given && !m->o->block_tokens &&
            (m->rec.has & LT_HAS_BLOCKS)) {
            rc = lt_errset(m->err, LT_EFORMAT,
                           "%s:%llu: a record with \"blocks\", but no header line says how "
                           "many tokens a block holds: give --block-tokens N (Mooncake's "
                           "blocks are 512)",
                           m->name, (unsigned long long)line);
            goto out;
        }
        LT_TRY(lt__imp_emit(m, raw, line));
    }
    rc = lt__imp_finish(m);
out:
    json_decref(m->json);
    m->json = NULL;
    return rc;
}

static int json_run(struct imp *m, const struct imp_input *in)
{
    struct lt_lines lines;
    if (in->f)
        lt_lines_init_file(&lines, in->f, m->name, in->max);
    else
        lt_lines_init_mem(&lines, in->data, in->len, m->name, in->max);
    int rc = import_json(m, &lines);
    lt_lines_release(&lines);
    return rc;
}

static const struct json_spec mooncake = {mooncake_row, false}, jsonl = {jsonl_row, true},
                              by_map = {jsonl_row, false};

/* TraceLab's normalized round trace as a map: a round starts at its first
 * timing event, and the tools it called ran for their wall latency before
 * the next. */
static const char tracelab_jsonl_map[] =
    "session=session_id,turn=round_index,model=model,"
    "t=timing_events.0.timestamp|tools.0.emitted_at:iso,cached=prefix_tokens,"
    "in=prefix_tokens+newly_append_tokens,out=output_tokens,"
    "reasoning=reasoning_output_tokens,think_after=tools[].tool_wall_latency_ms:ms";

const struct imp_format lt__imp_format_mooncake = {LT_IMPORT_MOONCAKE, "mooncake", json_run,
                                               &mooncake,          NULL,       IMP_BLOCKS_512};
const struct imp_format lt__imp_format_jsonl = {
    LT_IMPORT_JSONL, "jsonl", json_run, &jsonl, NULL, IMP_MAP_OK | IMP_OWN_CLOCK | IMP_BLOCKS_OPT};
const struct imp_format lt__imp_format_tracelab_jsonl = {
    LT_IMPORT_TRACELAB_JSONL, "tracelab-jsonl", json_run, &by_map, tracelab_jsonl_map, IMP_ROUNDS};

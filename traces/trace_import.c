/*
 * Importers of public trace formats (see trace_import.h for the contract,
 * docs/import.md for the mapping of every source column).
 *
 * One state (struct imp) serves every format. A format's row parser fills
 * imp.rec with pointers into the current row (CSV buffer or JSON tree) and
 * returns the row's arrival time in microseconds on the source's own clock
 * ("raw"); emit() then turns raw times into t (relative to the first
 * record), checks the order, and hands the record on, or, with sort, copies
 * it into memory to be sorted and handed on at the end. The header goes to
 * the sink just before the first record, because the Azure header carries
 * the wall-clock time of the first row.
 *
 * Unknown columns and keys are never dropped: they are packed as msgpack
 * key/value pairs into the record's `extra`, which the writer keeps.
 */
#include "traces/trace_import.h"
#include "traces/csv.h"
#include "traces/lt_buf.h"
#include "traces/lt_lines.h"
#include "traces/lt_time.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SORT_MAX_DEFAULT ((size_t)4 << 30)
#define JSON_DEPTH_MAX 64
#define SHOW_MAX 40 /* bytes of a bad value quoted in a message */

/* A record held for sorting: its copy lives in one allocation, blob. */
struct held {
    int64_t raw;
    uint64_t line;
    uint64_t seq;
    struct lt_record rec;
    void *blob;
};

struct imp {
    const struct lt_import_opts *o;
    const struct lt_import_sink *sink;
    struct lt_import_stats *st;
    struct lt_err *err;
    const char *name;

    /* header */
    struct lt_header hdr;
    bool header_given; /* jsonl: the input's own header line was read */
    bool header_sent;
    char *created, *source; /* jsonl header strings, owned */
    char source_buf[32];    /* "import:FORMAT" */
    struct lt_buf meta;
    struct lt_buf hdr_extra;

    /* time */
    bool rebase; /* t counts from the first record (all but jsonl) */
    bool have_origin;
    int64_t origin;
    int64_t last_raw;
    uint64_t last_line;

    /* the record being built */
    struct lt_record rec;
    struct lt_buf extra;
    msgpack_packer pk;
    struct lt_buf *pk_out; /* where pk writes: extra, meta or hdr_extra */
    int pk_rc;
    uint64_t *blocks;
    size_t blocks_cap;
    struct lt_msg *msgs;
    size_t msgs_cap;
    uint32_t *calls;
    size_t calls_cap;
    json_t *json;       /* the current JSON line's tree, kept until the record is out */
    struct lt_buf jbuf; /* a JSON line rewritten for integers above INT64_MAX */
    struct lt_buf sbuf; /* a CSV record's model name */

    /* sort */
    struct held *held;
    size_t n_held, held_cap, held_bytes;
};

/* ---- small parsers ------------------------------------------------------ */

static void trim(const char **p, size_t *n)
{
    while (*n && (**p == ' ' || **p == '\t'))
        (*p)++, (*n)--;
    while (*n && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t'))
        (*n)--;
}

/* A whole number in [0, max]. Trailing ".0" (pandas writes integer columns
 * with missing values as floats) is accepted; any other fraction is not. */
static bool parse_uint(const char *p, size_t n, uint64_t max, uint64_t *v)
{
    trim(&p, &n);
    size_t i = 0;
    uint64_t x = 0;
    if (!n)
        return false;
    for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
        unsigned d = (unsigned)(p[i] - '0');
        if (x > (max - d) / 10)
            return false;
        x = x * 10 + d;
    }
    if (i == 0)
        return false;
    if (i < n && p[i] == '.') {
        for (i++; i < n && p[i] == '0'; i++)
            ;
    }
    if (i != n)
        return false;
    *v = x;
    return true;
}

/* Digits only, no leading zero: text that an integer prints back as. */
static bool canonical_uint(const char *p, size_t n)
{
    if (!n || (p[0] == '0' && n > 1))
        return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
            return false;
    return true;
}

/* Seconds as a decimal ("118", "0.25") to microseconds, exactly: digits
 * past the sixth after the point are rounded. */
static bool parse_seconds_us(const char *p, size_t n, int64_t *us)
{
    trim(&p, &n);
    size_t i = 0;
    bool neg = false;
    int64_t s = 0, frac = 0, scale = 100000;
    if (i < n && (p[i] == '-' || p[i] == '+'))
        neg = p[i++] == '-';
    size_t d0 = i;
    for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
        if (s > 9000000000000LL) /* keeps s * 1e6 inside int64 */
            return false;
        s = s * 10 + (p[i] - '0');
    }
    bool any = i > d0;
    if (i < n && p[i] == '.') {
        int nd = 0;
        for (i++; i < n && p[i] >= '0' && p[i] <= '9'; i++, nd++) {
            if (nd < 6)
                frac += (p[i] - '0') * scale, scale /= 10;
            else if (nd == 6 && p[i] >= '5')
                frac++;
        }
        any = any || nd > 0;
    }
    if (!any || i != n)
        return false;
    *us = (s * 1000000 + frac) * (neg ? -1 : 1);
    return true;
}

/* Wall-clock microseconds since the epoch as RFC 3339 UTC. */
static void fmt_utc(int64_t us, char buf[40])
{
    time_t sec = (time_t)(us >= 0 ? us / 1000000 : (us - 999999) / 1000000);
    int64_t frac = us - (int64_t)sec * 1000000;
    struct tm tm;
    gmtime_r(&sec, &tm);
    /* clamp each field so the output provably fits */
    snprintf(buf, 40, "%04u-%02u-%02uT%02u:%02u:%02u.%06uZ", (unsigned)(tm.tm_year + 1900) % 10000u,
             (unsigned)(tm.tm_mon + 1) % 100u, (unsigned)tm.tm_mday % 100u,
             (unsigned)tm.tm_hour % 100u, (unsigned)tm.tm_min % 100u, (unsigned)tm.tm_sec % 100u,
             (unsigned)frac % 1000000u);
}

static const char *base_name(const char *path)
{
    if (!strcmp(path, "-"))
        return "stdin";
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Keys of struct lt_record in JSON (trace_json.c); for these, null means
 * absent (jq writes null for a missing key), except t, which is required. */
static bool is_record_key(const char *k)
{
    static const char *const keys[] = {
        "session", "turn",      "think",      "api",    "model", "in",    "cached",
        "out",     "reasoning", "max_tokens", "msgs",   "tools", "calls", "blocks",
        "orig",    "finish",    "text",       "failed", "est",
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(k, keys[i]))
            return true;
    return false;
}

/* ---- msgpack into an lt_buf ---------------------------------------------- */

static int pk_write(void *data, const char *buf, size_t len)
{
    struct imp *m = data;
    int rc = lt_buf_append(m->pk_out, buf, len);
    if (rc < 0 && !m->pk_rc)
        m->pk_rc = rc;
    return rc < 0 ? -1 : 0;
}

static void pk_str(struct imp *m, const char *s, size_t n)
{
    msgpack_pack_str(&m->pk, n);
    msgpack_pack_str_body(&m->pk, s, n);
}

/* A CSV value kept under its column name: an integer when it is written
 * the way an integer prints (so nothing changes on the way back), else the
 * text as it was. */
static void pk_csv_value(struct imp *m, const char *p, size_t n)
{
    size_t i = (n && p[0] == '-') ? 1 : 0;
    bool integer = n > i && n - i <= 18 && (p[i] != '0' || n - i == 1) && !(i && p[i] == '0');
    for (size_t k = i; integer && k < n; k++)
        integer = p[k] >= '0' && p[k] <= '9';
    if (integer)
        msgpack_pack_int64(&m->pk, strtoll(p, NULL, 10));
    else
        pk_str(m, p, n);
}

/* A source column or key kept in extra must not take the name of a record
 * key (a CSV column "in" beside ContextTokens, a Mooncake key "t"): it
 * would be read back as that key, or clash with it. Such names get the
 * format as a prefix ("azure:in"). */
static void pk_extra_key(struct imp *m, const char *k, size_t kn)
{
    if (strlen(k) == kn && (!strcmp(k, "t") || is_record_key(k))) {
        const char *fmt = lt_import_format_name(m->o->format);
        size_t fn = strlen(fmt);
        msgpack_pack_str(&m->pk, fn + 1 + kn);
        msgpack_pack_str_body(&m->pk, fmt, fn);
        msgpack_pack_str_body(&m->pk, ":", 1);
        msgpack_pack_str_body(&m->pk, k, kn);
        return;
    }
    pk_str(m, k, kn);
}

static int extra_csv(struct imp *m, const char *key, const char *p, size_t n)
{
    m->pk_out = &m->extra;
    pk_extra_key(m, key, strlen(key));
    pk_csv_value(m, p, n);
    m->rec.extra.n++;
    return m->pk_rc;
}

/* ---- errors ----------------------------------------------------------------- */

static int row_bad(struct imp *m, uint64_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int row_bad(struct imp *m, uint64_t line, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return lt_errset(m->err, LT_EFORMAT, "%s:%llu: %s", m->name, (unsigned long long)line, what);
}

/* A row error: with skip_bad it is reported and counted, and reading goes
 * on (returns 0); otherwise it stops the import. */
static int row_error(struct imp *m, int rc)
{
    if (!m->o->skip_bad || (rc != LT_EFORMAT && rc != LT_ELIMIT))
        return rc;
    m->st->skipped++;
    if (m->o->on_skip)
        m->o->on_skip(m->o->ud, m->err->msg);
    lt_err_clear(m->err);
    return 0;
}

/* ---- header, order, sort, delivery ---------------------------------------------- */

static int send_header(struct imp *m, bool have_first, int64_t first_raw)
{
    int rc = 0;
    m->header_sent = true;
    if (!m->header_given) {
        const char *fmt = lt_import_format_name(m->o->format);
        snprintf(m->source_buf, sizeof m->source_buf, "import:%s", fmt);
        m->hdr.kind = LT_KIND_TRACE;
        m->hdr.source = m->source_buf;
        if (m->o->format == LT_IMPORT_MOONCAKE)
            m->hdr.block_tokens = LT_DEFAULT_BLOCK_TOKENS;
        else if (m->o->format == LT_IMPORT_JSONL)
            m->hdr.block_tokens = m->o->block_tokens;
        char start[40];
        const char *keys[3] = {"file", "format", "start"};
        const char *vals[3] = {base_name(m->o->name ? m->o->name : "-"), fmt, start};
        size_t n = 2;
        if (m->o->format == LT_IMPORT_AZURE && have_first) {
            fmt_utc(first_raw, start);
            n = 3;
        }
        lt_buf_reset(&m->meta);
        if ((rc = lt_meta_pack(&m->meta, keys, vals, n)) < 0)
            return lt_errset(m->err, rc, "%s: out of memory", m->name);
        m->hdr.meta = (const uint8_t *)m->meta.p;
        m->hdr.meta_len = m->meta.len;
    }
    return m->sink->header ? m->sink->header(m->sink->ud, &m->hdr, m->err) : 0;
}

static int deliver(struct imp *m, const struct lt_record *r)
{
    struct lt_import_stats *st = m->st;
    if (st->records == 0)
        st->first_t = r->t;
    st->last_t = r->t;
    st->records++;
    if (r->has & LT_HAS_FAILED)
        st->failed++;
    if (r->has & LT_HAS_IN)
        st->in_sum += r->in;
    if (r->has & LT_HAS_OUT)
        st->out_sum += r->out;
    return m->sink->record ? m->sink->record(m->sink->ud, r, m->err) : 0;
}

static size_t align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* Copy m->rec, and everything it points to, into one allocation. */
static int hold(struct imp *m, int64_t raw, uint64_t line)
{
    const struct lt_record *r = &m->rec;
    size_t api = r->api ? strlen(r->api) + 1 : 0, model = r->model ? strlen(r->model) + 1 : 0,
           finish = r->finish ? strlen(r->finish) + 1 : 0, text = r->text ? r->text_len + 1 : 0;
    size_t size = align8((size_t)r->n_blocks * sizeof *r->blocks) +
                  align8((size_t)r->n_msgs * sizeof *r->msgs) +
                  align8((size_t)r->n_calls * sizeof *r->calls) + r->extra.len + api + model +
                  finish + text;
    if (m->held_bytes + size + sizeof(struct held) >
        (m->o->max_sort_bytes ? m->o->max_sort_bytes : SORT_MAX_DEFAULT))
        return lt_errset(m->err, LT_ELIMIT,
                         "%s:%llu: sorting holds every record in memory, and this input needs "
                         "more than %zu bytes",
                         m->name, (unsigned long long)line,
                         m->o->max_sort_bytes ? m->o->max_sort_bytes : SORT_MAX_DEFAULT);
    if (m->n_held == m->held_cap) {
        size_t cap = m->held_cap ? m->held_cap * 2 : 1024;
        struct held *h = realloc(m->held, cap * sizeof *h);
        if (!h)
            return lt_errset(m->err, LT_ENOMEM, "%s: out of memory", m->name);
        m->held = h;
        m->held_cap = cap;
    }
    char *blob = size ? malloc(size) : NULL;
    if (size && !blob)
        return lt_errset(m->err, LT_ENOMEM, "%s: out of memory", m->name);
    struct held *h = &m->held[m->n_held];
    *h = (struct held){.raw = raw, .line = line, .seq = m->n_held, .rec = *r, .blob = blob};
    char *p = blob;
#define COPY(field, n)                                                                             \
    do {                                                                                           \
        if ((n) != 0) {                                                                            \
            memcpy(p, r->field, n);                                                                \
            h->rec.field = (void *)p;                                                              \
            p += align8(n);                                                                        \
        }                                                                                          \
    } while (0)
    COPY(blocks, (size_t)r->n_blocks * sizeof *r->blocks);
    COPY(msgs, (size_t)r->n_msgs * sizeof *r->msgs);
    COPY(calls, (size_t)r->n_calls * sizeof *r->calls);
#undef COPY
    if (r->extra.len) {
        memcpy(p, r->extra.data, r->extra.len);
        h->rec.extra.data = (const uint8_t *)p;
        p += r->extra.len;
    }
    const char **strs[4] = {&h->rec.api, &h->rec.model, &h->rec.finish, &h->rec.text};
    size_t lens[4] = {api, model, finish, text};
    for (int i = 0; i < 4; i++) {
        if (!lens[i])
            continue;
        memcpy(p, *strs[i], lens[i] - 1);
        p[lens[i] - 1] = '\0';
        *strs[i] = p;
        p += lens[i];
    }
    m->held_bytes += size + sizeof(struct held);
    m->n_held++;
    return 0;
}

static int by_arrival(const void *a, const void *b)
{
    const struct held *x = a, *y = b;
    if (x->raw != y->raw)
        return x->raw < y->raw ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The record in m->rec is complete: put it in order. */
static int emit(struct imp *m, int64_t raw, uint64_t line)
{
    int rc;
    if (m->o->sort)
        return hold(m, raw, line);
    if (!m->have_origin) {
        m->origin = m->rebase ? raw : 0;
        m->have_origin = true;
        if ((rc = send_header(m, true, raw)) < 0)
            return rc;
    } else if (raw < m->last_raw) {
        return lt_errset(m->err, LT_EFORMAT,
                         "%s:%llu: out of time order: this record arrives %.6f s before the one "
                         "on line %llu (sort the input, or import with --sort to sort it in "
                         "memory)",
                         m->name, (unsigned long long)line, (double)(m->last_raw - raw) / 1e6,
                         (unsigned long long)m->last_line);
    }
    m->last_raw = raw;
    m->last_line = line;
    m->rec.t = raw - m->origin;
    return deliver(m, &m->rec);
}

static int finish(struct imp *m)
{
    int rc = 0;
    if (!m->o->sort)
        return m->header_sent ? 0 : send_header(m, false, 0);
    if (m->n_held)
        qsort(m->held, m->n_held, sizeof *m->held, by_arrival);
    int64_t first = m->n_held ? m->held[0].raw : 0;
    m->origin = m->rebase ? first : 0;
    if ((rc = send_header(m, m->n_held > 0, first)) < 0)
        return rc;
    for (size_t i = 0; i < m->n_held; i++) {
        m->held[i].rec.t = m->held[i].raw - m->origin;
        if ((rc = deliver(m, &m->held[i].rec)) < 0)
            return rc;
    }
    return 0;
}

/* Start a new record. */
static void rec_begin(struct imp *m)
{
    memset(&m->rec, 0, sizeof m->rec);
    lt_buf_reset(&m->extra);
    m->pk_rc = 0;
}

static void rec_end(struct imp *m)
{
    m->rec.extra.data = (const uint8_t *)m->extra.p;
    m->rec.extra.len = m->extra.len;
}

/* ---- CSV: Azure and BurstGPT ------------------------------------------------------- */

enum role {
    R_NONE,     /* kept in extra under its column name */
    R_DATETIME, /* wall clock, "2023-11-16 18:17:03.9799600" */
    R_SECONDS,  /* seconds from the trace start */
    R_IN,
    R_OUT,
    R_MODEL,
    R_TOTAL,   /* in + out: checked, kept only when it disagrees */
    R_SESSION, /* session when an integer, else kept in extra */
};

struct colspec {
    const char *name;
    enum role role;
    bool required;
};

static const struct colspec azure_cols[] = {
    {"TIMESTAMP", R_DATETIME, true},
    {"ContextTokens", R_IN, true},
    {"GeneratedTokens", R_OUT, true},
    {NULL, R_NONE, false},
};

static const struct colspec burstgpt_cols[] = {
    {"Timestamp", R_SECONDS, true},
    {"Model", R_MODEL, false},
    {"Request tokens", R_IN, true},
    {"Response tokens", R_OUT, true},
    {"Total tokens", R_TOTAL, false},
    {"Session ID", R_SESSION, false},
    {NULL, R_NONE, false},
};

struct col {
    enum role role;
    char *name;
};

static int csv_header(struct imp *m, const struct lt_csv_row *row, const struct colspec *spec,
                      struct col **cols_out)
{
    int rc = 0;
    struct col *cols = calloc(row->n, sizeof *cols);
    if (!cols)
        return lt_errset(m->err, LT_ENOMEM, "%s: out of memory", m->name);
    for (uint32_t i = 0; i < row->n; i++) {
        const char *p = row->f[i].p;
        size_t n = row->f[i].len;
        trim(&p, &n);
        if (!(cols[i].name = strndup(p, n))) {
            rc = lt_errset(m->err, LT_ENOMEM, "%s: out of memory", m->name);
            goto out;
        }
        for (uint32_t j = 0; j < i; j++)
            if (!strcasecmp(cols[j].name, cols[i].name)) {
                rc = lt_errset(m->err, LT_EFORMAT, "%s:%llu: column \"%s\" appears twice", m->name,
                               (unsigned long long)row->line, cols[i].name);
                goto out;
            }
        for (const struct colspec *s = spec; s->name; s++)
            if (!strcasecmp(s->name, cols[i].name))
                cols[i].role = s->role;
    }
    for (const struct colspec *s = spec; s->name; s++) {
        if (!s->required)
            continue;
        bool found = false;
        for (uint32_t i = 0; i < row->n && !found; i++)
            found = cols[i].role == s->role;
        if (!found) {
            char have[256] = "";
            size_t k = 0;
            for (uint32_t i = 0; i < row->n && k < sizeof have - 8; i++)
                k += (size_t)snprintf(have + k, sizeof have - k, "%s\"%s\"", i ? ", " : "",
                                      cols[i].name);
            rc = lt_errset(m->err, LT_EFORMAT,
                           "%s:%llu: no column \"%s\" in the header line (it has %s); is the "
                           "input really --from %s?",
                           m->name, (unsigned long long)row->line, s->name, have,
                           lt_import_format_name(m->o->format));
            goto out;
        }
    }
out:
    if (rc < 0) {
        for (uint32_t i = 0; i < row->n; i++)
            free(cols[i].name);
        free(cols);
        cols = NULL;
    }
    *cols_out = cols;
    return rc;
}

/* A buffer of the current row could not grow. */
static int nomem(struct imp *m, int rc, uint64_t line)
{
    if (rc >= 0)
        return rc;
    return lt_errset(m->err, rc, "%s:%llu: %s", m->name, (unsigned long long)line,
                     rc == LT_ELIMIT ? "row too large" : "out of memory");
}

static int csv_count(struct imp *m, const struct lt_csv_row *row, const struct col *c,
                     const struct lt_csv_field *f, uint32_t *v)
{
    uint64_t x;
    if (!parse_uint(f->p, f->len, UINT32_MAX, &x))
        return row_bad(m, row->line,
                       "column \"%s\": \"%.*s\" is not a token count (a whole number from 0 to "
                       "4294967295)",
                       c->name, (int)(f->len < SHOW_MAX ? f->len : SHOW_MAX), f->p);
    *v = (uint32_t)x;
    return 0;
}

static int csv_row(struct imp *m, const struct lt_csv_row *row, const struct col *cols,
                   uint32_t ncols, int64_t *raw)
{
    int rc = 0;
    uint32_t total = 0;
    bool have_total = false;
    rec_begin(m);
    if (row->n != ncols)
        return row_bad(m, row->line,
                       "%u field%s, but the header line has %u (a truncated or malformed row)",
                       row->n, row->n == 1 ? "" : "s", ncols);
    for (uint32_t i = 0; i < ncols; i++) {
        const struct lt_csv_field *f = &row->f[i];
        const struct col *c = &cols[i];
        const char *p = f->p;
        size_t n = f->len;
        trim(&p, &n);
        int show = (int)(f->len < SHOW_MAX ? f->len : SHOW_MAX);
        switch (c->role) {
        case R_DATETIME:
            if (lt_parse_datetime_us(p, n, raw) < 0)
                return row_bad(m, row->line,
                               "column \"%s\": \"%.*s\" is not a date and time "
                               "(YYYY-MM-DD HH:MM:SS[.fraction], UTC)",
                               c->name, show, f->p);
            break;
        case R_SECONDS:
            if (!parse_seconds_us(p, n, raw))
                return row_bad(m, row->line,
                               "column \"%s\": \"%.*s\" is not a time in seconds (a decimal "
                               "number)",
                               c->name, show, f->p);
            break;
        case R_IN:
            LT_TRY(csv_count(m, row, c, f, &m->rec.in));
            m->rec.has |= LT_HAS_IN;
            break;
        case R_OUT:
            LT_TRY(csv_count(m, row, c, f, &m->rec.out));
            m->rec.has |= LT_HAS_OUT;
            break;
        case R_TOTAL:
            LT_TRY(csv_count(m, row, c, f, &total));
            have_total = true;
            break;
        case R_MODEL:
            if (n) {
                lt_buf_reset(&m->sbuf);
                LT_TRY(nomem(m, lt_buf_append(&m->sbuf, p, n), row->line));
                m->rec.model = m->sbuf.p;
            }
            break;
        case R_SESSION: {
            uint64_t s;
            if (canonical_uint(p, n) && parse_uint(p, n, UINT64_MAX, &s)) {
                m->rec.session = s;
                m->rec.has |= LT_HAS_SESSION;
            } else {
                LT_TRY(nomem(m, extra_csv(m, c->name, f->p, f->len), row->line));
            }
            break;
        }
        case R_NONE:
            LT_TRY(nomem(m, extra_csv(m, c->name, f->p, f->len), row->line));
            break;
        }
    }
    if (have_total && (uint64_t)total != (uint64_t)m->rec.in + m->rec.out) {
        for (uint32_t i = 0; i < ncols; i++)
            if (cols[i].role == R_TOTAL) {
                m->pk_out = &m->extra;
                pk_str(m, cols[i].name, strlen(cols[i].name));
                msgpack_pack_uint32(&m->pk, total);
                m->rec.extra.n++;
            }
        LT_TRY(nomem(m, m->pk_rc, row->line));
    }
    /* BurstGPT logs a failed request as a row with no response tokens. */
    if (m->o->format == LT_IMPORT_BURSTGPT && m->rec.out == 0)
        m->rec.has |= LT_HAS_FAILED;
    rec_end(m);
out:
    return rc;
}

static int import_csv(struct imp *m, struct lt_csv *csv)
{
    int rc = 0;
    struct col *cols = NULL;
    uint32_t ncols = 0;
    struct lt_csv_row row;
    const struct colspec *spec = m->o->format == LT_IMPORT_AZURE ? azure_cols : burstgpt_cols;

    /* the header line; a blank line before it is no header */
    rc = lt_csv_next(csv, &row, m->err);
    if (rc == 0) {
        rc = lt_errset(m->err, LT_EFORMAT, "%s: empty input: no header line", m->name);
        goto out;
    }
    if (rc < 0)
        goto out;
    LT_TRY(csv_header(m, &row, spec, &cols));
    ncols = row.n;
    for (;;) {
        rc = lt_csv_next(csv, &row, m->err);
        if (rc == 0)
            break;
        if (rc < 0) {
            LT_TRY(row_error(m, rc));
            continue;
        }
        if (row.n == 1 && row.f[0].len == 0)
            continue; /* a blank line carries nothing */
        int64_t raw = 0;
        rc = csv_row(m, &row, cols, ncols, &raw);
        if (rc < 0) {
            LT_TRY(row_error(m, rc));
            continue;
        }
        LT_TRY(emit(m, raw, row.line));
    }
    rc = finish(m);
out:
    if (cols)
        for (uint32_t i = 0; i < ncols; i++)
            free(cols[i].name);
    free(cols);
    return rc;
}

/* ---- JSON lines: Mooncake and loadtrace's own schema ------------------------------ */

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
                        return row_bad(m, line,
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
static bool json_big(const json_t *v, uint64_t *u)
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
static bool json_u64(const json_t *v, uint64_t max, uint64_t *u)
{
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 0 || (uint64_t)x > max)
            return false;
        *u = (uint64_t)x;
        return true;
    }
    if (json_big(v, u))
        return *u <= max;
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d < 0 || d != floor(d) || d > 9007199254740992.0 || d > (double)max)
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
        if (d != floor(d) || fabs(d) > 9007199254740992.0)
            return false;
        *x = (int64_t)d;
        return true;
    }
    return false;
}

static bool json_text(const json_t *v, const char **s, size_t *n)
{
    uint64_t u;
    if (!json_is_string(v) || json_big(v, &u))
        return false;
    *s = json_string_value(v);
    *n = json_string_length(v);
    return true;
}

/* Any JSON value as msgpack, into m->pk_out. */
static int pack_json(struct imp *m, const json_t *v, int depth)
{
    uint64_t u;
    if (depth > JSON_DEPTH_MAX)
        return LT_ELIMIT;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *k;
        size_t kn;
        json_t *e;
        msgpack_pack_map(&m->pk, (uint32_t)json_object_size(v));
        json_object_keylen_foreach((json_t *)v, k, kn, e)
        {
            pk_str(m, k, kn);
            int rc = pack_json(m, e, depth + 1);
            if (rc < 0)
                return rc;
        }
        break;
    }
    case JSON_ARRAY:
        msgpack_pack_array(&m->pk, (uint32_t)json_array_size(v));
        for (size_t i = 0; i < json_array_size(v); i++) {
            int rc = pack_json(m, json_array_get(v, i), depth + 1);
            if (rc < 0)
                return rc;
        }
        break;
    case JSON_STRING:
        if (json_big(v, &u))
            msgpack_pack_uint64(&m->pk, u);
        else
            pk_str(m, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        msgpack_pack_int64(&m->pk, json_integer_value(v));
        break;
    case JSON_REAL:
        msgpack_pack_double(&m->pk, json_real_value(v));
        break;
    case JSON_TRUE:
        msgpack_pack_true(&m->pk);
        break;
    case JSON_FALSE:
        msgpack_pack_false(&m->pk);
        break;
    case JSON_NULL:
        msgpack_pack_nil(&m->pk);
        break;
    }
    return m->pk_rc;
}

/* An unknown key and its value, kept in the record's extra. */
static int json_extra(struct imp *m, uint64_t line, const char *k, size_t kn, const json_t *v)
{
    m->pk_out = &m->extra;
    pk_extra_key(m, k, kn);
    int rc = pack_json(m, v, 0);
    if (rc == LT_ELIMIT)
        return row_bad(m, line, "key \"%.*s\": nested deeper than %d levels", (int)kn, k,
                       JSON_DEPTH_MAX);
    if (rc < 0)
        return lt_errset(m->err, rc, "%s:%llu: out of memory", m->name, (unsigned long long)line);
    m->rec.extra.n++;
    return 0;
}

static int key_bad(struct imp *m, uint64_t line, const char *key, const char *what)
{
    return row_bad(m, line, "key \"%s\": %s", key, what);
}

static int want_u32(struct imp *m, uint64_t line, const char *key, const json_t *v, uint32_t *x)
{
    uint64_t u;
    if (!json_u64(v, UINT32_MAX, &u))
        return key_bad(m, line, key, "must be a whole number from 0 to 4294967295");
    *x = (uint32_t)u;
    return 0;
}

static int want_str(struct imp *m, uint64_t line, const char *key, const json_t *v, const char **s)
{
    size_t n;
    if (!json_text(v, s, &n))
        return key_bad(m, line, key, "must be a string");
    if (strlen(*s) != n)
        return key_bad(m, line, key, "must not contain NUL (\\u0000)");
    return 0;
}

static int grow_array(struct imp *m, void **arr, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap)
        return 0;
    void *p = realloc(*arr, n * size);
    if (!p)
        return lt_errset(m->err, LT_ENOMEM, "%s: out of memory", m->name);
    *arr = p;
    *cap = n;
    return 0;
}

static int want_blocks(struct imp *m, uint64_t line, const char *key, const json_t *v)
{
    if (!json_is_array(v))
        return key_bad(m, line, key, "must be an array of block hashes");
    size_t n = json_array_size(v);
    if (n > UINT32_MAX)
        return key_bad(m, line, key, "has too many elements");
    int rc = grow_array(m, (void **)&m->blocks, &m->blocks_cap, n, sizeof *m->blocks);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n; i++)
        if (!json_u64(json_array_get(v, i), UINT64_MAX, &m->blocks[i]))
            return row_bad(m, line,
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
        return row_bad(m, line, "not valid JSON: %s (at column %d)", je.text, je.column);
    if (!json_is_object(v)) {
        json_decref(v);
        return row_bad(m, line, "not a JSON object");
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
    rec_begin(m);
    json_object_keylen_foreach((json_t *)o, k, kn, v)
    {
        if (!strcmp(k, "timestamp")) {
            int64_t ms;
            if (json_i64(v, &ms) && ms > -9000000000000000LL && ms < 9000000000000000LL) {
                *raw = ms * 1000;
            } else if (json_is_real(v) && fabs(json_real_value(v)) < 9e15) {
                *raw = llround(json_real_value(v) * 1000.0);
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
            LT_TRY(want_blocks(m, line, k, v));
        } else {
            LT_TRY(json_extra(m, line, k, kn, v));
        }
    }
    if (!have_ts)
        return row_bad(m, line, "no \"timestamp\"");
    if (!(m->rec.has & LT_HAS_IN))
        return row_bad(m, line, "no \"input_length\"");
    if (!(m->rec.has & LT_HAS_OUT))
        return row_bad(m, line, "no \"output_length\"");
    rec_end(m);
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
            if (!json_text(v, &s, &sn) || strcmp(s, LT_FORMAT_NAME))
                return row_bad(m, line, "a header line must have \"format\":\"loadtrace\"");
        } else if (!strcmp(k, "version")) {
            uint64_t ver;
            if (!json_u64(v, UINT32_MAX, &ver) || ver == 0)
                return key_bad(m, line, "version", "must be a positive whole number");
            if (ver > LT_FORMAT_VERSION)
                return lt_errset(m->err, LT_EVERSION,
                                 "%s:%llu: written with trace format version %llu; this "
                                 "loadtrace reads version %d and older: upgrade loadtrace",
                                 m->name, (unsigned long long)line, (unsigned long long)ver,
                                 LT_FORMAT_VERSION);
            m->hdr.version = (uint32_t)ver;
        } else if (!strcmp(k, "kind")) {
            if (!json_text(v, &s, &sn) || (strcmp(s, "trace") && strcmp(s, "results")))
                return key_bad(m, line, "kind", "must be \"trace\"");
            if (!strcmp(s, "results"))
                return row_bad(m, line, "this is a results file; import takes traces only");
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
            m->pk_out = meta ? &m->meta : &m->hdr_extra;
            m->pk_rc = 0;
            if (!meta)
                pk_str(m, k, kn);
            if ((rc = pack_json(m, v, 0)) < 0)
                return rc == LT_ELIMIT ? key_bad(m, line, k, "is nested too deeply")
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

static int want_i64(struct imp *m, uint64_t line, const char *key, const json_t *v, int64_t *x)
{
    if (!json_i64(v, x))
        return key_bad(m, line, key, "must be a whole number");
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
    rec_begin(m);
    json_object_keylen_foreach((json_t *)o, k, kn, v)
    {
        bool known = strlen(k) == kn;
        if (known && json_is_null(v) && is_record_key(k))
            continue; /* null says "absent" */
        if (!known) {
            LT_TRY(json_extra(m, line, k, kn, v));
        } else if (!strcmp(k, "t")) {
            LT_TRY(want_i64(m, line, k, v, raw));
            if (*raw < 0)
                return key_bad(m, line, k, "must not be negative");
            have_t = true;
        } else if (!strcmp(k, "session")) {
            if (!json_u64(v, UINT64_MAX, &r->session))
                return key_bad(m, line, k, "must be a whole number from 0 to 18446744073709551615");
            r->has |= LT_HAS_SESSION;
        } else if (!strcmp(k, "turn")) {
            LT_TRY(want_u32(m, line, k, v, &r->turn));
            r->has |= LT_HAS_TURN;
        } else if (!strcmp(k, "think")) {
            LT_TRY(want_i64(m, line, k, v, &r->think));
            r->has |= LT_HAS_THINK;
        } else if (!strcmp(k, "api")) {
            LT_TRY(want_str(m, line, k, v, &r->api));
        } else if (!strcmp(k, "model")) {
            LT_TRY(want_str(m, line, k, v, &r->model));
        } else if (!strcmp(k, "finish")) {
            LT_TRY(want_str(m, line, k, v, &r->finish));
        } else if (!strcmp(k, "in")) {
            LT_TRY(want_u32(m, line, k, v, &r->in));
            r->has |= LT_HAS_IN;
        } else if (!strcmp(k, "cached")) {
            LT_TRY(want_u32(m, line, k, v, &r->cached));
            r->has |= LT_HAS_CACHED;
        } else if (!strcmp(k, "out")) {
            LT_TRY(want_u32(m, line, k, v, &r->out));
            r->has |= LT_HAS_OUT;
        } else if (!strcmp(k, "reasoning")) {
            LT_TRY(want_u32(m, line, k, v, &r->reasoning));
            r->has |= LT_HAS_REASONING;
        } else if (!strcmp(k, "max_tokens")) {
            LT_TRY(want_u32(m, line, k, v, &r->max_tokens));
            r->has |= LT_HAS_MAX_TOKENS;
        } else if (!strcmp(k, "msgs")) {
            if (!json_is_array(v) || json_array_size(v) > UINT32_MAX)
                return key_bad(m, line, k, "must be an array of [role, tokens] pairs");
            size_t n = json_array_size(v);
            LT_TRY(grow_array(m, (void **)&m->msgs, &m->msgs_cap, n, sizeof *m->msgs));
            for (size_t i = 0; i < n; i++) {
                const json_t *e = json_array_get(v, i);
                const char *role;
                size_t rn;
                uint64_t tok;
                if (!json_is_array(e) || json_array_size(e) != 2 ||
                    !json_text(json_array_get(e, 0), &role, &rn) ||
                    !json_u64(json_array_get(e, 1), UINT32_MAX, &tok))
                    return row_bad(m, line,
                                   "key \"msgs\": element %zu must be [role, tokens] (a string "
                                   "and a whole number)",
                                   i);
                if (rn > LT_ROLE_MAX || strlen(role) != rn)
                    return row_bad(m, line,
                                   "key \"msgs\": element %zu: a role is at most %d bytes, "
                                   "without NUL",
                                   i, LT_ROLE_MAX);
                memcpy(m->msgs[i].role, role, rn + 1);
                m->msgs[i].tokens = (uint32_t)tok;
            }
            r->msgs = m->msgs;
            r->n_msgs = (uint32_t)n;
            r->has |= LT_HAS_MSGS;
        } else if (!strcmp(k, "tools")) {
            uint64_t c, t;
            if (!json_is_array(v) || json_array_size(v) != 2 ||
                !json_u64(json_array_get(v, 0), UINT32_MAX, &c) ||
                !json_u64(json_array_get(v, 1), UINT32_MAX, &t))
                return key_bad(m, line, k, "must be [count, tokens] (two whole numbers)");
            r->tools_count = (uint32_t)c;
            r->tools_tokens = (uint32_t)t;
            r->has |= LT_HAS_TOOLS;
        } else if (!strcmp(k, "calls")) {
            if (!json_is_array(v) || json_array_size(v) > UINT32_MAX)
                return key_bad(m, line, k, "must be an array of token counts");
            size_t n = json_array_size(v);
            LT_TRY(grow_array(m, (void **)&m->calls, &m->calls_cap, n, sizeof *m->calls));
            for (size_t i = 0; i < n; i++) {
                uint64_t x;
                if (!json_u64(json_array_get(v, i), UINT32_MAX, &x))
                    return row_bad(m, line,
                                   "key \"calls\": element %zu must be a whole number from 0 "
                                   "to 4294967295",
                                   i);
                m->calls[i] = (uint32_t)x;
            }
            r->calls = m->calls;
            r->n_calls = (uint32_t)n;
            r->has |= LT_HAS_CALLS;
        } else if (!strcmp(k, "blocks")) {
            LT_TRY(want_blocks(m, line, k, v));
        } else if (!strcmp(k, "orig")) {
            const char *ok;
            size_t okn;
            json_t *ov;
            if (!json_is_object(v))
                return key_bad(m, line, k, "must be an object {status, ttft, e2e}");
            json_object_keylen_foreach(v, ok, okn, ov)
            {
                int64_t x;
                if (json_is_null(ov))
                    continue;
                if (strlen(ok) != okn ||
                    (strcmp(ok, "status") && strcmp(ok, "ttft") && strcmp(ok, "e2e")))
                    return row_bad(m, line,
                                   "key \"orig\": unknown key \"%.*s\" (orig holds status, "
                                   "ttft and e2e)",
                                   (int)okn, ok);
                if (!json_i64(ov, &x))
                    return row_bad(m, line, "key \"orig.%s\": must be a whole number", ok);
                if (!strcmp(ok, "status")) {
                    if (x < INT32_MIN || x > INT32_MAX)
                        return row_bad(m, line, "key \"orig.status\": out of range");
                    r->orig_status = (int32_t)x;
                    r->has |= LT_HAS_ORIG_STATUS;
                } else if (!strcmp(ok, "ttft")) {
                    r->orig_ttft = x;
                    r->has |= LT_HAS_ORIG_TTFT;
                } else {
                    r->orig_e2e = x;
                    r->has |= LT_HAS_ORIG_E2E;
                }
            }
        } else if (!strcmp(k, "text")) {
            if (!json_text(v, &r->text, &r->text_len))
                return key_bad(m, line, k, "must be a string");
        } else if (!strcmp(k, "failed") || !strcmp(k, "est")) {
            if (!json_is_boolean(v))
                return key_bad(m, line, k, "must be true or false");
            if (json_is_true(v))
                r->has |= !strcmp(k, "failed") ? LT_HAS_FAILED : LT_HAS_ESTIMATED;
        } else {
            LT_TRY(json_extra(m, line, k, kn, v));
        }
    }
    if (!have_t) {
        const char *s;
        size_t sn;
        json_t *f = json_object_get(o, "format");
        if (f && json_text(f, &s, &sn) && !strcmp(s, LT_FORMAT_NAME))
            return row_bad(m, line,
                           "a second header line (only the first line may be one; "
                           "are two files joined?)");
        if (json_object_get(o, "rec") || json_object_get(o, "i"))
            return row_bad(m, line, "a run or result record: import takes traces only");
        return row_bad(m, line, "no \"t\" (arrival, microseconds), which every record needs");
    }
    rec_end(m);
out:
    return rc;
}

static int import_json(struct imp *m, struct lt_lines *lines)
{
    int rc = 0;
    bool first = true;
    for (;;) {
        json_decref(m->json);
        m->json = NULL;
        rc = lt_lines_next(lines, NULL, m->err);
        if (rc == 0)
            break;
        if (rc < 0) {
            LT_TRY(row_error(m, rc));
            continue;
        }
        const char *p = lines->line.p;
        size_t n = lines->line.len;
        trim(&p, &n);
        if (n == 0)
            continue; /* a blank line carries nothing */
        uint64_t line = lines->lineno;
        int64_t raw = 0;
        rc = json_line(m, p, n, line, &m->json);
        if (rc == 0 && m->o->format == LT_IMPORT_JSONL && first &&
            json_object_get(m->json, "format")) {
            first = false;
            LT_TRY(jsonl_header(m, m->json, line));
            continue;
        }
        first = false;
        if (rc == 0)
            rc = m->o->format == LT_IMPORT_MOONCAKE ? mooncake_row(m, m->json, line, &raw)
                                                    : jsonl_row(m, m->json, line, &raw);
        if (rc < 0) {
            LT_TRY(row_error(m, rc));
            continue;
        }
        /* blocks mean nothing without their size, which the header must
         * give; a header line of the input says it (or not) for itself */
        if (m->o->format == LT_IMPORT_JSONL && !m->header_given && !m->o->block_tokens &&
            (m->rec.has & LT_HAS_BLOCKS)) {
            rc = lt_errset(m->err, LT_EFORMAT,
                           "%s:%llu: a record with \"blocks\", but no header line says how "
                           "many tokens a block holds: give --block-tokens N (Mooncake's "
                           "blocks are 512)",
                           m->name, (unsigned long long)line);
            goto out;
        }
        LT_TRY(emit(m, raw, line));
    }
    rc = finish(m);
out:
    json_decref(m->json);
    m->json = NULL;
    return rc;
}

/* ---- entry points ------------------------------------------------------------------ */

static const char *const format_names[] = {
    [LT_IMPORT_AZURE] = "azure",
    [LT_IMPORT_BURSTGPT] = "burstgpt",
    [LT_IMPORT_MOONCAKE] = "mooncake",
    [LT_IMPORT_JSONL] = "jsonl",
};

int lt_import_format_parse(const char *s, enum lt_import_format *f)
{
    for (int i = LT_IMPORT_AZURE; i <= LT_IMPORT_JSONL; i++)
        if (!strcmp(s, format_names[i])) {
            *f = (enum lt_import_format)i;
            return 0;
        }
    return LT_EINVAL;
}

const char *lt_import_format_name(enum lt_import_format f)
{
    return f >= LT_IMPORT_AZURE && f <= LT_IMPORT_JSONL ? format_names[f] : "?";
}

/* Runs the import over a FILE* (f) or memory (data, len). */
static int run(FILE *f, const void *data, size_t len, const struct lt_import_opts *o,
               const struct lt_import_sink *sink, struct lt_import_stats *st, struct lt_err *err)
{
    int rc = 0;
    struct lt_import_stats dummy;
    struct imp m = {.o = o, .sink = sink, .st = st ? st : &dummy, .err = err};
    memset(m.st, 0, sizeof *m.st);
    m.name = o->name ? o->name : "-";
    m.rebase = o->format != LT_IMPORT_JSONL;
    size_t max = o->max_line ? o->max_line : LT_LINE_MAX_DEFAULT;
    lt_buf_init(&m.meta, max);
    lt_buf_init(&m.hdr_extra, max);
    lt_buf_init(&m.extra, max);
    lt_buf_init(&m.jbuf, max + max / 2);
    lt_buf_init(&m.sbuf, max);
    msgpack_packer_init(&m.pk, &m, pk_write);
    m.pk_out = &m.extra;

    switch (o->format) {
    case LT_IMPORT_AZURE:
    case LT_IMPORT_BURSTGPT: {
        struct lt_csv csv;
        if (f)
            lt_csv_init_file(&csv, f, m.name, max);
        else
            lt_csv_init_mem(&csv, data, len, m.name, max);
        rc = import_csv(&m, &csv);
        lt_csv_release(&csv);
        break;
    }
    case LT_IMPORT_MOONCAKE:
    case LT_IMPORT_JSONL: {
        struct lt_lines lines;
        if (f)
            lt_lines_init_file(&lines, f, m.name, max);
        else
            lt_lines_init_mem(&lines, data, len, m.name, max);
        rc = import_json(&m, &lines);
        lt_lines_release(&lines);
        break;
    }
    default:
        rc = lt_errset(err, LT_EINVAL, "unknown import format %d", (int)o->format);
        break;
    }

    for (size_t i = 0; i < m.n_held; i++)
        free(m.held[i].blob);
    free(m.held);
    free(m.blocks);
    free(m.msgs);
    free(m.calls);
    free(m.created);
    free(m.source);
    lt_buf_release(&m.meta);
    lt_buf_release(&m.hdr_extra);
    lt_buf_release(&m.extra);
    lt_buf_release(&m.jbuf);
    lt_buf_release(&m.sbuf);
    return rc;
}

int lt_import_stream(FILE *in, const struct lt_import_opts *o, const struct lt_import_sink *sink,
                     struct lt_import_stats *st, struct lt_err *err)
{
    return run(in, NULL, 0, o, sink, st, err);
}

int lt_import_mem(const void *data, size_t len, const struct lt_import_opts *o,
                  const struct lt_import_sink *sink, struct lt_import_stats *st, struct lt_err *err)
{
    return run(NULL, data, len, o, sink, st, err);
}

struct file_sink {
    const char *path;
    const struct lt_writer_opts *wo;
    struct lt_writer *w;
};

static int file_header(void *ud, const struct lt_header *h, struct lt_err *err)
{
    struct file_sink *fs = ud;
    fs->w = lt_writer_open(fs->path, h, fs->wo, err);
    return fs->w ? 0 : err->code ? err->code : LT_EIO;
}

static int file_record(void *ud, const struct lt_record *r, struct lt_err *err)
{
    struct file_sink *fs = ud;
    return lt_writer_put_record(fs->w, r, err);
}

int lt_import_file(const char *in_path, const char *out_path, const struct lt_import_opts *o,
                   const struct lt_writer_opts *wo, struct lt_import_stats *st, struct lt_err *err)
{
    int rc = 0;
    struct lt_err dummy = {0};
    if (!err)
        err = &dummy;
    bool is_stdin = !strcmp(in_path, "-");
    FILE *f = is_stdin ? stdin : fopen(in_path, "rb");
    if (!f)
        return lt_errset(err, LT_EIO, "%s: cannot open: %s", in_path, strerror(errno));
    struct stat si, so;
    if (!is_stdin && strcmp(out_path, "-") && stat(out_path, &so) == 0 &&
        fstat(fileno(f), &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
        fclose(f);
        return lt_errset(err, LT_EINVAL, "%s: the output is the input file", out_path);
    }
    struct lt_import_opts opts = *o;
    if (!opts.name)
        opts.name = in_path;
    struct file_sink fs = {.path = out_path, .wo = wo};
    struct lt_import_sink sink = {file_header, file_record, &fs};
    rc = lt_import_stream(f, &opts, &sink, st, err);
    if (fs.w) {
        int crc = lt_writer_close(fs.w, rc < 0 ? NULL : err);
        if (rc == 0)
            rc = crc;
        if (rc < 0 && strcmp(out_path, "-"))
            unlink(out_path); /* a partial trace would look like a whole one */
    }
    if (!is_stdin)
        fclose(f);
    return rc;
}

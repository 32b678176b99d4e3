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
#include "workload/trace_import.h"
#include "workload/csv.h"
#include "workload/import_internal.h"
#include "workload/session_infer_internal.h"
#include "base/lt_buf.h"
#include "base/lt_json.h"
#include "base/lt_path.h"
#include "base/lt_lines.h"
#include "base/lt_time.h"
#include "base/lt_u64map.h"
#include "traces/lt_mp.h"
#include "traces/trace_schema.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SORT_MAX_DEFAULT ((size_t)4 << 30)
/* An unknown key's value nests at most this deep: with the record's own
 * map, that is the reader's LT_LIMIT_DEPTH. */
#define JSON_DEPTH_MAX (LT_LIMIT_DEPTH - 1)
#define SHOW_MAX 40 /* bytes of a bad value quoted in a message */

/* The row a map reads: a CSV row, or a JSON object. */
struct msrc {
    const struct lt_csv_row *row;
    const json_t *obj;
};

/* A record held for sorting: its copy lives in one allocation, blob. */
struct held {
    int64_t raw;
    uint64_t line;
    uint64_t seq;
    uint64_t group; /* its session's first seq (its own without one): ties in
                     * time keep a session's turns together, in turn order */
    struct lt_record rec;
    void *blob;
    size_t sess;         /* index of its named session, or SIZE_MAX */
    int64_t think_after; /* the wait after its answer (think_after), ... */
    bool has_think_after;
};

/* A session named by the source: its dense id is its index. The name is
 * owned here and outlives every record that points to it (held ones too). */
struct sess {
    char *name;
    int64_t think_next; /* the wait after the last answer, for the next turn */
    bool has_think_next;
    uint64_t first_seq; /* sort: the seq of its first record + 1 (0: none yet) */
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
    struct lt_mp pk; /* packs into extra, meta or hdr_extra */
    uint64_t *blocks;
    size_t blocks_cap;
    struct lt_msg *msgs;
    size_t msgs_cap;
    uint32_t *calls;
    size_t calls_cap;
    json_t *json;       /* the current JSON line's tree, kept until the record is out */
    struct lt_buf jbuf; /* a JSON line rewritten for integers above INT64_MAX */
    struct lt_buf sbuf; /* a CSV record's model name */
    const char *why;    /* what passes a reader limit (pack_json's LT_ELIMIT) */

    /* --map */
    struct lt_map map;  /* n == 0: none */
    struct col *cols;   /* CSV: the header's columns */
    struct lt_buf mstr; /* the current record's strings, NUL-terminated */

    /* sessions by name: each distinct name gets the next integer id */
    struct lt_u64map sess_map; /* hash of the name (probed on) -> index + 1 */
    struct sess *sess;
    size_t n_sess, sess_cap;

    struct session_infer infer; /* infer_sessions */

    /* sort */
    struct held *held;
    size_t n_held, held_cap, held_bytes;
    /* the current record's session (SIZE_MAX: none) and think_after, for a
     * sort that chains think times in the sorted order */
    size_t cur_sess;
    int64_t cur_think_after;
    bool cur_has_think_after;

    /* TraceLab: each (session, round) once, with the line it came on */
    struct lt_u64map rounds; /* session << 32 | round -> line */
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

/* Every time a row gives, on its source's clock, lies within
 * ±TIME_MAX_US (±146,000 years), checked before any arithmetic: then t
 * (a difference of two such times) and every difference a message prints
 * stay inside int64. */
#define TIME_MAX_US ((int64_t)1 << 62)
#define TIME_MAX_S (TIME_MAX_US / 1000000)

/* A decimal number ("118", "0.25") of a unit of 10^-digits s (6: seconds,
 * 3: milliseconds, 0: microseconds) to microseconds, exactly: digits past
 * the microsecond are rounded. 1 on success, 0 when it is not a number, -1
 * when it is one beyond ±TIME_MAX_US. */
static int parse_scaled_us(const char *p, size_t n, int digits, int64_t *us)
{
    trim(&p, &n);
    size_t i = 0;
    bool neg = false, big = false;
    int64_t mult = 1;
    for (int d = 0; d < digits; d++)
        mult *= 10;
    int64_t s = 0, frac = 0, scale = mult / 10, max = TIME_MAX_US / mult;
    if (i < n && (p[i] == '-' || p[i] == '+'))
        neg = p[i++] == '-';
    size_t d0 = i;
    for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
        if (s > max) /* keeps s * mult inside int64; the digits are still read */
            big = true;
        else
            s = s * 10 + (p[i] - '0');
    }
    bool any = i > d0;
    if (i < n && p[i] == '.') {
        int nd = 0;
        for (i++; i < n && p[i] >= '0' && p[i] <= '9'; i++, nd++) {
            if (nd < digits)
                frac += (p[i] - '0') * scale, scale /= 10;
            else if (nd == digits && p[i] >= '5')
                frac++;
        }
        any = any || nd > 0;
    }
    if (!any || i != n)
        return 0;
    if (big || s > max || (s == max && frac > TIME_MAX_US - max * mult))
        return -1;
    *us = (s * mult + frac) * (neg ? -1 : 1);
    return 1;
}

/* Seconds as a decimal to microseconds (parse_scaled_us). */
static int parse_seconds_us(const char *p, size_t n, int64_t *us)
{
    return parse_scaled_us(p, n, 6, us);
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

/* Whether k names a field of a trace record (traces/trace_schema.h). */
static bool is_record_key(const char *k, size_t kn)
{
    return strlen(k) == kn && lt_schema_find(lt_schema_record, LT_REC_N, k, kn, 0) >= 0;
}

/* ---- sessions by name ------------------------------------------------------ */

static uint64_t name_hash(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 0x100000001b3u;
    return h;
}

/* The session named by the n bytes at p: an existing one, or a new one with
 * the next id (0, 1, 2, ... in order of first appearance). Sets the
 * record's session and session_id. NULL when out of memory. */
static struct sess *session_by_name(struct imp *m, const char *p, size_t n)
{
    uint64_t h = name_hash(p, n);
    for (;; h++) { /* a collision of two names moves the second one on */
        bool added;
        uint64_t *v = lt_u64map_upsert(&m->sess_map, h, &added);
        if (!v)
            return NULL;
        if (!added) {
            struct sess *s = &m->sess[*v - 1];
            if (strlen(s->name) != n || memcmp(s->name, p, n))
                continue;
            m->rec.session = *v - 1;
            m->rec.session_id = s->name;
            m->rec.has |= LT_HAS_SESSION;
            return s;
        }
        if (m->n_sess == m->sess_cap) {
            size_t cap = m->sess_cap ? m->sess_cap * 2 : 256;
            struct sess *ns = realloc(m->sess, cap * sizeof *ns);
            if (!ns)
                return NULL;
            m->sess = ns;
            m->sess_cap = cap;
        }
        struct sess *s = &m->sess[m->n_sess];
        *s = (struct sess){.name = strndup(p, n)};
        if (!s->name)
            return NULL;
        *v = ++m->n_sess;
        m->rec.session = m->n_sess - 1;
        m->rec.session_id = s->name;
        m->rec.has |= LT_HAS_SESSION;
        return s;
    }
}

/* session_by_name, with the out-of-memory error named. */
static int name_session(struct imp *m, const char *p, size_t n, uint64_t line, struct sess **out)
{
    struct sess *s = session_by_name(m, p, n);
    if (!s)
        return lt_errset(m->err, LT_ENOMEM, "%s:%llu: out of memory for the session names", m->name,
                         (unsigned long long)line);
    if (out)
        *out = s;
    return 0;
}

/* ---- msgpack into an lt_buf ---------------------------------------------- */

static void pk_str(struct imp *m, const char *s, size_t n)
{
    lt_mp_str(&m->pk, s, n);
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
        lt_mp_int(&m->pk, strtoll(p, NULL, 10));
    else
        pk_str(m, p, n);
}

/* A source column or key kept in extra must not take the name of a record
 * key (a CSV column "in" beside ContextTokens, a Mooncake key "t"): it
 * would be read back as that key, or clash with it. Such names get the
 * format as a prefix ("azure:in"). */
static void pk_extra_key(struct imp *m, const char *k, size_t kn)
{
    if (is_record_key(k, kn)) {
        const char *fmt = lt_import_format_name(m->o->format);
        size_t fn = strlen(fmt);
        lt_mp_str_head(&m->pk, fn + 1 + kn);
        lt_mp_raw(&m->pk, fmt, fn);
        lt_mp_raw(&m->pk, ":", 1);
        lt_mp_raw(&m->pk, k, kn);
        return;
    }
    pk_str(m, k, kn);
}

static int extra_csv(struct imp *m, const char *key, const char *p, size_t n)
{
    m->pk.out = &m->extra;
    pk_extra_key(m, key, strlen(key));
    pk_csv_value(m, p, n);
    m->rec.extra.n++;
    return m->pk.rc;
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
        const char *keys[4] = {"file", "format"};
        const char *vals[4] = {base_name(m->o->name ? m->o->name : "-"), fmt};
        size_t n = 2;
        if (m->o->format == LT_IMPORT_AZURE && have_first) {
            fmt_utc(first_raw, start);
            keys[n] = "start";
            vals[n++] = start;
        }
        if (m->o->map) { /* how the records were made */
            keys[n] = "map";
            vals[n++] = m->o->map;
        }
        if (m->o->infer_sessions) {
            keys[n] = "sessions";
            vals[n++] = "inferred from prefix blocks";
        }
        lt_buf_reset(&m->meta);
        if ((rc = lt_meta_pack(&m->meta, keys, vals, n)) < 0)
            return lt_errset(m->err, rc, "%s: out of memory", m->name);
        m->hdr.meta = (const uint8_t *)m->meta.p;
        m->hdr.meta_len = m->meta.len;
    }
    return m->sink->header ? m->sink->header(m->sink->ud, &m->hdr, m->err) : 0;
}

/* infer_sessions (session_infer.c): think times are not known (the
 * original answers' ends are not in such traces), so none is set: replay
 * sends a turn at its recorded time or when the turn before has been
 * answered, whichever is later. */
static int infer_session(struct imp *m, struct lt_record *r, uint64_t line)
{
    uint64_t session;
    uint32_t turn;
    if (session_infer_add(&m->infer, r->blocks, r->n_blocks, (r->has & LT_HAS_IN) != 0, r->in,
                          &session, &turn) < 0)
        return lt_errset(m->err, LT_ENOMEM, "%s:%llu: out of memory for session inference", m->name,
                         (unsigned long long)line);
    r->session = session;
    r->turn = turn;
    r->has |= LT_HAS_SESSION | LT_HAS_TURN;
    return 0;
}

/*
 * max_context: a server with a context of N tokens refuses a request whose
 * prompt plus output is larger, so such a trace replays as errors there.
 * The output is cut first (the prompt is what the request is about), to
 * what the context leaves; a prompt that alone fills the context keeps
 * N - 1 tokens and 1 of output. cached, reasoning and max_tokens follow,
 * and prefix blocks past the prompt go (they would cover tokens no longer
 * sent). msgs, when present, are left: want_in is then in, which the
 * replay's length rule takes first.
 */
static void clip_context(struct imp *m, struct lt_record *r)
{
    uint64_t n = m->o->max_context, in = r->in, out = r->out;
    if (in + out <= n)
        return;
    uint32_t new_in = in < n ? (uint32_t)in : (uint32_t)(n > 1 ? n - 1 : n);
    uint32_t new_out = (uint32_t)(n - new_in < out ? n - new_in : out);
    m->st->clipped++;
    m->st->clipped_in += in - new_in;
    m->st->clipped_out += out - new_out;
    r->in = new_in;
    r->out = new_out;
    if (r->cached > new_in)
        r->cached = new_in;
    if (r->reasoning > new_out)
        r->reasoning = new_out;
    if ((r->has & LT_HAS_MAX_TOKENS) && r->max_tokens > new_out)
        r->max_tokens = new_out ? new_out : 1;
    uint32_t bt = m->hdr.block_tokens;
    if (bt && r->n_blocks > (new_in + bt - 1) / bt)
        r->n_blocks = (new_in + bt - 1) / bt;
}

/* Hand a record on. A record the writer refuses as past a reader limit
 * (LT_ELIMIT: it wrote nothing) is a bad row, skipped with skip_bad. */
static int deliver(struct imp *m, const struct lt_record *r, uint64_t line)
{
    struct lt_import_stats *st = m->st;
    struct lt_record inferred;
    if (m->o->infer_sessions && !(r->has & LT_HAS_SESSION) && r->n_blocks) {
        inferred = *r;
        int irc = infer_session(m, &inferred, line);
        if (irc < 0)
            return irc;
        r = &inferred;
    }
    if (m->o->max_context && (uint64_t)r->in + r->out > m->o->max_context) {
        if (r != &inferred)
            inferred = *r;
        clip_context(m, &inferred);
        r = &inferred;
    }
    int rc = m->sink->record ? m->sink->record(m->sink->ud, r, m->err) : 0;
    if (rc == LT_ELIMIT)
        return row_error(m, lt_errf(m->err, rc, "%s:%llu", m->name, (unsigned long long)line));
    if (rc < 0)
        return rc;
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
    return 0;
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
           finish = r->finish ? strlen(r->finish) + 1 : 0, text = r->text ? r->text_len + 1 : 0,
           sid = r->session_id ? strlen(r->session_id) + 1 : 0;
    size_t size = align8((size_t)r->n_blocks * sizeof *r->blocks) +
                  align8((size_t)r->n_msgs * sizeof *r->msgs) +
                  align8((size_t)r->n_calls * sizeof *r->calls) + r->extra.len + api + model +
                  finish + text + sid;
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
    *h = (struct held){.raw = raw,
                       .line = line,
                       .seq = m->n_held,
                       .group = m->n_held,
                       .rec = *r,
                       .blob = blob,
                       .sess = m->cur_sess,
                       .think_after = m->cur_think_after,
                       .has_think_after = m->cur_has_think_after};
    if (m->cur_sess != SIZE_MAX) {
        struct sess *s = &m->sess[m->cur_sess];
        if (!s->first_seq)
            s->first_seq = m->n_held + 1;
        h->group = s->first_seq - 1;
    }
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
    const char **strs[5] = {&h->rec.api, &h->rec.model, &h->rec.finish, &h->rec.text,
                            &h->rec.session_id};
    size_t lens[5] = {api, model, finish, text, sid};
    for (int i = 0; i < 5; i++) {
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

/* By arrival; at one time, a session's records together (where its first
 * one was) in turn order, else in input order: TraceLab gives every round
 * of a session the session's arrival, and its rounds need not come in
 * order. A total order, so qsort is stable where it has to be. */
static int by_arrival(const void *a, const void *b)
{
    const struct held *x = a, *y = b;
    if (x->raw != y->raw)
        return x->raw < y->raw ? -1 : 1;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    uint32_t tx = x->rec.has & LT_HAS_TURN ? x->rec.turn : 0,
             ty = y->rec.has & LT_HAS_TURN ? y->rec.turn : 0;
    if (tx != ty)
        return tx < ty ? -1 : 1;
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
    return deliver(m, &m->rec, line);
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
        struct held *h = &m->held[i];
        h->rec.t = h->raw - m->origin;
        /* the wait after the session's previous answer is this turn's think */
        if (h->sess != SIZE_MAX) {
            struct sess *s = &m->sess[h->sess];
            if (s->has_think_next && !(h->rec.has & LT_HAS_THINK)) {
                h->rec.think = s->think_next;
                h->rec.has |= LT_HAS_THINK;
            }
            s->think_next = h->think_after;
            s->has_think_next = h->has_think_after;
        }
        if ((rc = deliver(m, &h->rec, h->line)) < 0)
            return rc;
    }
    return 0;
}

/* Start a new record. */
static void rec_begin(struct imp *m)
{
    memset(&m->rec, 0, sizeof m->rec);
    lt_buf_reset(&m->extra);
    m->pk.rc = 0;
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
        if (!lt_json_utf8_ok(p, n)) {
            rc = lt_errset(m->err, LT_EFORMAT,
                           "%s:%llu: the name of column %u is not valid UTF-8 (convert the file "
                           "to UTF-8, e.g. with iconv)",
                           m->name, (unsigned long long)row->line, i + 1);
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
        /* Strings of a trace are UTF-8 (docs/trace-format.md §2.1): a field
         * kept as text that is not would make `cat`'s JSON lossy. */
        if ((c->role == R_MODEL || c->role == R_SESSION || c->role == R_NONE) &&
            !lt_json_utf8_ok(f->p, f->len))
            return row_bad(m, row->line,
                           "column \"%s\": not valid UTF-8 (convert the file to UTF-8, e.g. "
                           "with iconv)",
                           c->name);
        switch (c->role) {
        case R_DATETIME:
            if (lt_parse_datetime_us(p, n, raw) < 0)
                return row_bad(m, row->line,
                               "column \"%s\": \"%.*s\" is not a date and time "
                               "(YYYY-MM-DD HH:MM:SS[.fraction], UTC)",
                               c->name, show, f->p);
            break;
        case R_SECONDS: {
            int ok = parse_seconds_us(p, n, raw);
            if (ok == 0)
                return row_bad(m, row->line,
                               "column \"%s\": \"%.*s\" is not a time in seconds (a decimal "
                               "number)",
                               c->name, show, f->p);
            if (ok < 0)
                return row_bad(m, row->line,
                               "column \"%s\": %.*s s is out of range (times are at most "
                               "%lld s from 0)",
                               c->name, show, f->p, (long long)TIME_MAX_S);
            break;
        }
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
            } else if (n) {
                /* a UUID or any other name: numbered, the name kept */
                LT_TRY(name_session(m, p, n, row->line, NULL));
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
                m->pk.out = &m->extra;
                pk_str(m, cols[i].name, strlen(cols[i].name));
                lt_mp_uint(&m->pk, total);
                m->rec.extra.n++;
            }
        LT_TRY(nomem(m, m->pk.rc, row->line));
    }
    /* BurstGPT logs a failed request as a row with no response tokens. */
    if (m->o->format == LT_IMPORT_BURSTGPT && m->rec.out == 0)
        m->rec.has |= LT_HAS_FAILED;
    rec_end(m);
out:
    return rc;
}

static int map_row(struct imp *m, const struct msrc *src, uint64_t line, int64_t *raw);

/* Each name of the map to its column; a term none of whose names is a
 * column is an error that lists the columns. */
static int map_columns(struct imp *m, const struct col *cols, uint32_t ncols, uint64_t line)
{
    for (int i = 0; i < m->map.n; i++)
        for (int k = 0; k < m->map.r[i].n; k++) {
            struct lt_map_term *t = &m->map.r[i].t[k];
            bool any = false;
            for (int a = 0; a < t->n_alt; a++)
                for (uint32_t c = 0; c < ncols; c++)
                    if (!strcasecmp(cols[c].name, t->alt[a])) {
                        t->col[a] = (int)c;
                        any = true;
                    }
            if (any)
                continue;
            char have[256] = "";
            size_t h = 0;
            for (uint32_t c = 0; c < ncols && h < sizeof have - 8; c++)
                h += (size_t)snprintf(have + h, sizeof have - h, "%s\"%s\"", c ? ", " : "",
                                      cols[c].name);
            return lt_errset(m->err, LT_EFORMAT,
                             "%s:%llu: --map names column \"%s\", which the header line does not "
                             "have (it has %s)",
                             m->name, (unsigned long long)line, t->alt[0], have);
        }
    return 0;
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
    if (m->map.n) {
        static const struct colspec none[] = {{NULL, R_NONE, false}};
        LT_TRY(csv_header(m, &row, none, &cols));
        ncols = row.n;
        LT_TRY(map_columns(m, cols, ncols, row.line));
        m->cols = cols;
    } else {
        LT_TRY(csv_header(m, &row, spec, &cols));
        ncols = row.n;
    }
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
        if (m->map.n && row.n != ncols)
            rc = row_bad(m, row.line,
                         "%u field%s, but the header line has %u (a truncated or malformed row)",
                         row.n, row.n == 1 ? "" : "s", ncols);
        else if (m->map.n)
            rc = map_row(m, &(struct msrc){.row = &row}, row.line, &raw);
        else
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

static bool json_text(const json_t *v, const char **s, size_t *n)
{
    uint64_t u;
    if (!json_is_string(v) || json_big(v, &u))
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
            pk_str(m, k, kn);
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
        if (json_big(v, &u))
            lt_mp_uint(&m->pk, u);
        else
            pk_str(m, json_string_value(v), json_string_length(v));
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
static int json_extra(struct imp *m, uint64_t line, const char *k, size_t kn, const json_t *v)
{
    m->pk.out = &m->extra;
    pk_extra_key(m, k, kn);
    int rc = pack_json(m, v, 0);
    if (rc == LT_ELIMIT)
        return row_bad(m, line, "key \"%.*s\": %s", (int)kn, k, m->why);
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
            if (json_i64(v, &ms) && ms >= -TIME_MAX_US / 1000 && ms <= TIME_MAX_US / 1000) {
                *raw = ms * 1000;
            } else if (json_is_real(v) && fabs(json_real_value(v)) <= TIME_MAX_US / 1000) {
                *raw = llround(json_real_value(v) * 1000.0);
            } else if (json_is_number(v) || json_big(v, &(uint64_t){0})) {
                return row_bad(m, line,
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
            m->pk.out = meta ? &m->meta : &m->hdr_extra;
            m->pk.rc = 0;
            if (!meta)
                pk_str(m, k, kn);
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
    return row_bad(m, line,
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
    int rc = grow_array(m, (void **)&m->msgs, &m->msgs_cap, n, sizeof *m->msgs);
    if (rc < 0)
        return rc;
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
    return 0;
}

/* "calls": [tokens, ...] */
static int want_calls(struct imp *m, uint64_t line, const char *k, const json_t *v)
{
    struct lt_record *r = &m->rec;
    if (!json_is_array(v) || json_array_size(v) > UINT32_MAX)
        return key_bad(m, line, k, "must be an array of token counts");
    size_t n = json_array_size(v);
    int rc = grow_array(m, (void **)&m->calls, &m->calls_cap, n, sizeof *m->calls);
    if (rc < 0)
        return rc;
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
            return row_bad(m, line,
                           "key \"orig\": unknown key \"%.*s\" (orig holds status, "
                           "ttft and e2e)",
                           (int)okn, ok);
        const struct lt_field *f = &lt_schema_orig[j];
        if (!json_i64(ov, &x))
            return row_bad(m, line, "key \"orig.%s\": must be a whole number", ok);
        if (f->type == LT_FT_I32) {
            if (x < INT32_MIN || x > INT32_MAX)
                return row_bad(m, line, "key \"orig.%s\": out of range", ok);
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
    rec_begin(m);
    json_object_keylen_foreach((json_t *)o, k, kn, v)
    {
        /* the record's keys are those of the format's table (trace_schema.h) */
        int j = strlen(k) == kn ? lt_schema_find(lt_schema_record, LT_REC_N, k, kn, 0) : -1;
        if (j < 0) {
            LT_TRY(json_extra(m, line, k, kn, v));
            continue;
        }
        const struct lt_field *f = &lt_schema_record[j];
        void *p = (char *)r + f->off;
        if (json_is_null(v) && !(f->flags & LT_FF_NEEDED))
            continue; /* null says "absent" */
        switch ((enum lt_ftype)f->type) {
        case LT_FT_I64:
            /* t is the row's time on its own clock, made t by emit() */
            LT_TRY(want_i64(m, line, k, v, j == LT_REC_T ? raw : (int64_t *)p));
            if ((f->flags & LT_FF_NONNEG) && *(j == LT_REC_T ? raw : (int64_t *)p) < 0)
                return key_bad(m, line, k, "must not be negative");
            have_t |= j == LT_REC_T;
            break;
        case LT_FT_U64:
            if (j == LT_REC_SESSION && json_is_string(v) && !json_big(v, &(uint64_t){0})) {
                /* a session by name: numbered, the name kept in session_id */
                LT_TRY(name_session(m, json_string_value(v), json_string_length(v), line, NULL));
                continue;
            }
            if (!json_u64(v, UINT64_MAX, (uint64_t *)p))
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
            if (!json_text(v, &r->text, &r->text_len))
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
                !json_u64(json_array_get(v, 0), UINT32_MAX, &c) ||
                !json_u64(json_array_get(v, 1), UINT32_MAX, &t))
                return key_bad(m, line, k, "must be [count, tokens] (two whole numbers)");
            r->tools_count = (uint32_t)c;
            r->tools_tokens = (uint32_t)t;
            break;
        }
        case LT_FT_CALLS:
            LT_TRY(want_calls(m, line, k, v));
            break;
        case LT_FT_BLOCKS:
            LT_TRY(want_blocks(m, line, k, v));
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
        if (f && json_text(f, &s, &sn) && !strcmp(s, LT_FORMAT_NAME))
            return row_bad(m, line,
                           "a second header line (only the first line may be one; "
                           "are two files joined?)");
        if (json_object_get(o, "rec") || json_object_get(o, "i"))
            return row_bad(m, line, "a run or result record: import takes traces only");
        return row_bad(m, line, "no \"t\" (arrival, microseconds), which every record needs");
    }
    /* a session named but not numbered gets its number from the name */
    if (r->session_id && !(r->has & LT_HAS_SESSION))
        LT_TRY(name_session(m, r->session_id, strlen(r->session_id), line, NULL));
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
        if (lines->lineno == 1 && n >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3))
            p += 3, n -= 3; /* a UTF-8 byte order mark, as CSV input may have too */
        trim(&p, &n);
        if (n == 0)
            continue; /* a blank line carries nothing */
        uint64_t line = lines->lineno;
        int64_t raw = 0;
        rc = json_line(m, p, n, line, &m->json);
        if (rc == 0 && m->map.n) {
            rc = map_row(m, &(struct msrc){.obj = m->json}, line, &raw);
        } else if (rc == 0 && m->o->format == LT_IMPORT_JSONL && first &&
                   json_object_get(m->json, "format")) {
            first = false;
            LT_TRY(jsonl_header(m, m->json, line));
            continue;
        } else if (rc == 0) {
            rc = m->o->format == LT_IMPORT_MOONCAKE ? mooncake_row(m, m->json, line, &raw)
                                                    : jsonl_row(m, m->json, line, &raw);
        }
        first = false;
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

/* ---- any log by mapping (--map; import_internal.h has the language) ------------- */

/* One value of a term in the current row: CSV text, or a JSON value. */
struct mval {
    const char *p; /* text (CSV field, JSON string), or NULL */
    size_t n;
    const json_t *j; /* JSON: the value */
};

/* The value at a dotted path ("usage.prompt_tokens", "events.0.ts") in o:
 * the whole name is tried first as a key, so a key with dots still works. */
static const json_t *json_path(const json_t *o, const char *path, size_t n)
{
    const json_t *v = json_is_object(o) ? json_object_getn(o, path, n) : NULL;
    if (v || !memchr(path, '.', n))
        return v;
    const char *p = path, *e = path + n;
    while (o && p <= e) {
        const char *dot = memchr(p, '.', (size_t)(e - p));
        size_t cn = (size_t)((dot ? dot : e) - p);
        if (json_is_object(o)) {
            o = json_object_getn(o, p, cn);
        } else if (json_is_array(o) && cn && cn < 10) {
            size_t idx = 0;
            for (size_t i = 0; i < cn; i++)
                idx = p[i] >= '0' && p[i] <= '9' ? idx * 10 + (size_t)(p[i] - '0') : SIZE_MAX / 2;
            o = json_array_get(o, idx);
        } else {
            o = NULL;
        }
        if (!dot)
            break;
        p = dot + 1;
    }
    return o;
}

static bool mval_json(const json_t *j, struct mval *v)
{
    if (!j || json_is_null(j))
        return false;
    *v = (struct mval){NULL, 0, j};
    json_text(j, &v->p, &v->n);
    return true;
}

typedef int (*mval_fn)(struct imp *m, const struct mval *v, void *acc);

/* Hand fn each value of term t in the row: the first alternative that is
 * present, and, for a name with "[]." ("tools[].latency_ms"), that name's
 * values in every element of the array. Returns how many values, or a
 * negative code from fn. */
static int term_each(struct imp *m, const struct msrc *s, const struct lt_map_term *t, mval_fn fn,
                     void *acc)
{
    for (int a = 0; a < t->n_alt; a++) {
        struct mval v;
        if (s->row) {
            int c = t->col[a];
            if (c < 0 || (uint32_t)c >= s->row->n)
                continue;
            const char *p = s->row->f[c].p;
            size_t n = s->row->f[c].len;
            trim(&p, &n);
            if (!n)
                continue;
            v = (struct mval){p, n, NULL};
            int rc = fn(m, &v, acc);
            return rc < 0 ? rc : 1;
        }
        const char *name = t->alt[a], *br = strstr(name, "[]");
        if (!br) {
            if (!mval_json(json_path(s->obj, name, strlen(name)), &v))
                continue;
            int rc = fn(m, &v, acc);
            return rc < 0 ? rc : 1;
        }
        const json_t *arr = json_path(s->obj, name, (size_t)(br - name));
        const char *rest = br[2] == '.' ? br + 3 : br + 2;
        if (!json_is_array(arr))
            continue;
        int seen = 0;
        for (size_t i = 0; i < json_array_size(arr); i++) {
            const json_t *e = json_array_get(arr, i);
            if (!mval_json(*rest ? json_path(e, rest, strlen(rest)) : e, &v))
                continue;
            int rc = fn(m, &v, acc);
            if (rc < 0)
                return rc;
            seen = seen < INT32_MAX ? seen + 1 : seen;
        }
        if (seen)
            return seen;
    }
    return 0;
}

/* What a value is being read as, and where the sum goes. */
struct macc {
    const struct lt_map_rule *r;
    uint64_t line;
    const char *key;
    int64_t us;    /* times */
    uint64_t u;    /* counts */
    struct mval v; /* the first value (text keys) */
    bool any;
};

static int show_len(const struct mval *v)
{
    return (int)(v->n < SHOW_MAX ? v->n : SHOW_MAX);
}

static int acc_time(struct imp *m, const struct mval *v, void *ap)
{
    struct macc *a = ap;
    int unit = a->r->unit, ok = 0;
    int digits = unit == LT_MU_S ? 6 : unit == LT_MU_MS ? 3 : 0;
    int64_t us = 0, mult = unit == LT_MU_S ? 1000000 : unit == LT_MU_MS ? 1000 : 1;
    if (v->p && unit == LT_MU_ISO) {
        ok = lt_parse_datetime_us(v->p, v->n, &us) == 0 ? 1 : 0;
        if (ok && (us > TIME_MAX_US || us < -TIME_MAX_US))
            ok = -1;
    } else if (v->p) {
        ok = parse_scaled_us(v->p, v->n, digits, &us);
    } else if (unit != LT_MU_ISO && json_is_integer(v->j)) {
        json_int_t x = json_integer_value(v->j);
        ok = x > TIME_MAX_US / mult || x < -TIME_MAX_US / mult ? -1 : 1;
        us = (int64_t)x * mult;
    } else if (unit != LT_MU_ISO && json_is_real(v->j)) {
        double d = json_real_value(v->j) * (double)mult;
        ok = fabs(d) > (double)TIME_MAX_US ? -1 : 1;
        us = ok > 0 ? llround(d) : 0;
    } else if (json_big(v->j, &(uint64_t){0})) {
        ok = -1;
    }
    if (ok == 0)
        return row_bad(m, a->line, "map %s: \"%.*s\" is not a time in %s", a->key, show_len(v),
                       v->p ? v->p : "(a JSON value)",
                       unit == LT_MU_ISO  ? "ISO 8601 (YYYY-MM-DDTHH:MM:SS[.frac][Z], UTC)"
                       : unit == LT_MU_S  ? "seconds"
                       : unit == LT_MU_MS ? "milliseconds"
                                          : "microseconds");
    if (ok < 0 || (a->us > 0 && us > TIME_MAX_US - a->us) ||
        (a->us < 0 && us < -TIME_MAX_US - a->us))
        return row_bad(m, a->line, "map %s: out of range (times are at most %lld s from 0)", a->key,
                       (long long)TIME_MAX_S);
    a->us += us;
    a->any = true;
    return 0;
}

static int acc_count(struct imp *m, const struct mval *v, void *ap)
{
    struct macc *a = ap;
    uint64_t x;
    bool ok = v->p ? parse_uint(v->p, v->n, UINT32_MAX, &x) : json_u64(v->j, UINT32_MAX, &x);
    if (!ok)
        return row_bad(m, a->line,
                       "map %s: \"%.*s\" is not a token count (a whole number from 0 to "
                       "4294967295)",
                       a->key, show_len(v), v->p ? v->p : "(a JSON value)");
    if (a->u + x > UINT32_MAX)
        return row_bad(m, a->line, "map %s: the sum is above 4294967295", a->key);
    a->u += x;
    a->any = true;
    return 0;
}

static int acc_first(struct imp *m, const struct mval *v, void *ap)
{
    struct macc *a = ap;
    if (!a->any)
        a->v = *v;
    a->any = true;
    return 0;
}

/* A value as text: a string as it is, a JSON number as it prints. The
 * text is copied to m->mstr (CSV fields are not NUL-terminated); the
 * offset of the copy goes to *off. */
static int mval_text(struct imp *m, const struct macc *a, size_t *off)
{
    char num[32];
    const char *p = a->v.p;
    size_t n = a->v.n;
    uint64_t u;
    if (!p) {
        if (json_is_integer(a->v.j))
            n = (size_t)snprintf(num, sizeof num, "%lld", (long long)json_integer_value(a->v.j));
        else if (json_big(a->v.j, &u))
            n = (size_t)snprintf(num, sizeof num, "%" PRIu64, u);
        else
            return row_bad(m, a->line, "map %s: must be a string or a whole number", a->key);
        p = num;
    }
    if (!lt_json_utf8_ok(p, n) || memchr(p, '\0', n))
        return row_bad(m, a->line, "map %s: not valid UTF-8 text without NUL", a->key);
    *off = m->mstr.len;
    int rc = lt_buf_append(&m->mstr, p, n);
    if (rc >= 0)
        rc = lt_buf_append(&m->mstr, "", 1);
    return nomem(m, rc, a->line);
}

static bool truthy(const struct mval *v)
{
    if (v->p)
        return (v->n == 4 && !strncasecmp(v->p, "true", 4)) ||
               (v->n == 3 && !strncasecmp(v->p, "yes", 3)) ||
               (v->n == 1 && (v->p[0] == '1' || v->p[0] == 'y' || v->p[0] == 'Y' ||
                              v->p[0] == 't' || v->p[0] == 'T'));
    return json_is_true(v->j) || (json_is_number(v->j) && json_number_value(v->j) != 0);
}

/* "blocks" from a JSON array, or from CSV text of whole numbers separated
 * by anything else ("1 2 3", "[1, 2, 3]", "1;2;3"). */
static int map_blocks(struct imp *m, const struct macc *a)
{
    if (!a->v.p)
        return want_blocks(m, a->line, a->key, a->v.j);
    size_t n = 0;
    for (size_t i = 0; i < a->v.n;) {
        if (a->v.p[i] < '0' || a->v.p[i] > '9') {
            i++;
            continue;
        }
        uint64_t x = 0;
        size_t j = i;
        for (; j < a->v.n && a->v.p[j] >= '0' && a->v.p[j] <= '9'; j++) {
            if (x > (UINT64_MAX - (unsigned)(a->v.p[j] - '0')) / 10)
                return row_bad(m, a->line, "map %s: a block id above 18446744073709551615", a->key);
            x = x * 10 + (unsigned)(a->v.p[j] - '0');
        }
        int rc = grow_array(m, (void **)&m->blocks, &m->blocks_cap, n < 8 ? 16 : n * 2,
                            sizeof *m->blocks);
        if (rc < 0)
            return rc;
        m->blocks[n++] = x;
        i = j;
    }
    m->rec.blocks = m->blocks;
    m->rec.n_blocks = (uint32_t)n;
    m->rec.has |= LT_HAS_BLOCKS;
    return 0;
}

/* A TraceLab round is one LLM call of its session: a second round of the
 * same index is a bad row, naming the first. */
static int round_once(struct imp *m, const struct sess *sess, uint32_t round, uint64_t line)
{
    uint64_t idx = (uint64_t)(sess - m->sess);
    if (idx > UINT32_MAX)
        return 0; /* past 2^32 sessions the key would not be exact: not checked */
    bool added;
    uint64_t *v = lt_u64map_upsert(&m->rounds, idx << 32 | round, &added);
    if (!v)
        return lt_errset(m->err, LT_ENOMEM, "%s:%llu: out of memory", m->name,
                         (unsigned long long)line);
    if (!added)
        return row_bad(m, line, "session \"%s\" has round %u twice (first on line %llu)",
                       sess->name, round, (unsigned long long)*v);
    *v = line;
    return 0;
}

/* One record by the map, from a CSV row or a JSON object. */
static int map_row(struct imp *m, const struct msrc *src, uint64_t line, int64_t *raw)
{
    int rc = 0;
    struct lt_record *r = &m->rec;
    struct sess *sess = NULL;
    size_t str_off[LT_REC_N];
    bool str_set[LT_REC_N] = {false};
    int64_t think_after = 0;
    bool have_think_after = false;
    rec_begin(m);
    lt_buf_reset(&m->mstr);
    for (int i = 0; i < m->map.n; i++) {
        const struct lt_map_rule *mr = &m->map.r[i];
        const struct lt_field *f = mr->key >= 0 ? &lt_schema_record[mr->key] : NULL;
        struct macc a = {.r = mr, .line = line, .key = f ? f->key : "think_after"};
        enum lt_ftype ft = f ? (enum lt_ftype)f->type : LT_FT_I64;
        mval_fn fn = ft == LT_FT_I64 ? acc_time : ft == LT_FT_U32 ? acc_count : acc_first;
        for (int k = 0; k < mr->n; k++)
            if ((rc = term_each(m, src, &mr->t[k], fn, &a)) < 0)
                return rc;
        if (!a.any) {
            if (mr->key == LT_REC_T)
                return row_bad(m, line, "map t: no value (the row has none of %s)",
                               mr->t[0].alt[0]);
            continue;
        }
        if (!f) {
            think_after = a.us;
            have_think_after = true;
            continue;
        }
        void *p = (char *)r + f->off;
        switch (ft) {
        case LT_FT_I64:
            if (mr->key == LT_REC_T)
                *raw = a.us;
            else
                *(int64_t *)p = a.us;
            break;
        case LT_FT_U32:
            *(uint32_t *)p = (uint32_t)a.u;
            break;
        case LT_FT_U64: { /* session: every id is a name, numbered */
            size_t off;
            LT_TRY(mval_text(m, &a, &off));
            LT_TRY(name_session(m, m->mstr.p + off, strlen(m->mstr.p + off), line, &sess));
            continue;
        }
        case LT_FT_STR:
            LT_TRY(mval_text(m, &a, &str_off[mr->key]));
            str_set[mr->key] = true;
            continue;
        case LT_FT_FLAG:
            if (truthy(&a.v))
                r->has |= f->bit;
            continue;
        case LT_FT_BLOCKS:
            LT_TRY(map_blocks(m, &a));
            continue;
        default:
            continue;
        }
        r->has |= f->bit;
    }
    /* strings point into m->mstr only now that it has stopped growing */
    for (int k = 0; k < LT_REC_N; k++)
        if (str_set[k])
            *(const char **)(void *)((char *)r + lt_schema_record[k].off) = m->mstr.p + str_off[k];
    if (r->session_id && !(r->has & LT_HAS_SESSION))
        LT_TRY(name_session(m, r->session_id, strlen(r->session_id), line, &sess));
    if (sess && (m->o->format == LT_IMPORT_TRACELAB || m->o->format == LT_IMPORT_TRACELAB_JSONL) &&
        (r->has & LT_HAS_TURN))
        LT_TRY(round_once(m, sess, r->turn, line));
    /* the wait after the previous answer of the session is this turn's
     * think; sorted, in the sorted order (finish) */
    m->cur_sess = sess ? (size_t)(sess - m->sess) : SIZE_MAX;
    m->cur_think_after = think_after;
    m->cur_has_think_after = have_think_after;
    if (sess && !m->o->sort) {
        if (sess->has_think_next && !(r->has & LT_HAS_THINK)) {
            r->think = sess->think_next;
            r->has |= LT_HAS_THINK;
        }
        sess->think_next = think_after;
        sess->has_think_next = have_think_after;
    }
    /* what the map does not name is kept */
    if (src->row) {
        for (uint32_t i = 0; i < src->row->n; i++) {
            const char *cn = m->cols[i].name;
            if (lt_map_names(&m->map, cn, strlen(cn)))
                continue;
            if (!lt_json_utf8_ok(src->row->f[i].p, src->row->f[i].len))
                return row_bad(m, line,
                               "column \"%s\": not valid UTF-8 (convert the file to UTF-8, e.g. "
                               "with iconv)",
                               cn);
            LT_TRY(nomem(m, extra_csv(m, cn, src->row->f[i].p, src->row->f[i].len), line));
        }
    } else {
        const char *k;
        size_t kn;
        json_t *v;
        json_object_keylen_foreach((json_t *)src->obj, k, kn, v)
        {
            if (!lt_map_names(&m->map, k, kn))
                LT_TRY(json_extra(m, line, k, kn, v));
        }
    }
    rec_end(m);
out:
    return rc;
}

/* ---- entry points ------------------------------------------------------------------ */

static const char *const format_names[] = {
    [LT_IMPORT_AZURE] = "azure",
    [LT_IMPORT_BURSTGPT] = "burstgpt",
    [LT_IMPORT_MOONCAKE] = "mooncake",
    [LT_IMPORT_JSONL] = "jsonl",
    [LT_IMPORT_CSV] = "csv",
    [LT_IMPORT_TRACELAB] = "tracelab",
    [LT_IMPORT_TRACELAB_JSONL] = "tracelab-jsonl",
};

/* TraceLab (uw-syfi/TraceLab) as maps. The CSV is the one its csv_export
 * writes (id or session_id, input_len, output_len, arrival_time in ms,
 * round_idx, tool_wait_after_ms, prefix_len: prefix_len is the context
 * already cached, input_len what the round appends). The JSON lines are
 * its normalized round trace: a round starts at its first timing event,
 * and the tools it called ran for their wall latency before the next. */
static const char tracelab_map[] =
    "session=session_id|id,turn=round_idx,t=arrival_time:ms,cached=prefix_len,"
    "in=prefix_len+input_len,out=output_len,think_after=tool_wait_after_ms:ms";
static const char tracelab_jsonl_map[] =
    "session=session_id,turn=round_index,model=model,"
    "t=timing_events.0.timestamp|tools.0.emitted_at:iso,cached=prefix_tokens,"
    "in=prefix_tokens+newly_append_tokens,out=output_tokens,"
    "reasoning=reasoning_output_tokens,think_after=tools[].tool_wall_latency_ms:ms";

int lt_import_format_parse(const char *s, enum lt_import_format *f)
{
    for (int i = LT_IMPORT_AZURE; i <= LT_IMPORT_TRACELAB_JSONL; i++)
        if (!strcmp(s, format_names[i])) {
            *f = (enum lt_import_format)i;
            return 0;
        }
    return LT_EINVAL;
}

int lt_import_map_check(const char *spec, struct lt_err *err)
{
    struct lt_map map;
    int rc = lt_map_parse(spec, &map, err);
    if (rc == 0)
        lt_map_release(&map);
    return rc;
}

const char *lt_import_format_name(enum lt_import_format f)
{
    return f >= LT_IMPORT_AZURE && f <= LT_IMPORT_TRACELAB_JSONL ? format_names[f] : "?";
}

/* Runs the import over a FILE* (f) or memory (data, len). */
static int run(FILE *f, const void *data, size_t len, const struct lt_import_opts *o,
               const struct lt_import_sink *sink, struct lt_import_stats *st, struct lt_err *err)
{
    int rc = 0;
    struct lt_import_stats dummy;
    struct lt_import_opts oc = *o;
    struct imp m = {.o = &oc, .sink = sink, .st = st ? st : &dummy, .err = err};
    memset(m.st, 0, sizeof *m.st);
    m.name = o->name ? o->name : "-";
    bool tracelab = o->format == LT_IMPORT_TRACELAB || o->format == LT_IMPORT_TRACELAB_JSONL;
    if (o->map && o->format != LT_IMPORT_CSV && o->format != LT_IMPORT_JSONL)
        return lt_errset(err, LT_EINVAL, "--map goes with --from csv or --from jsonl, not %s",
                         lt_import_format_name(o->format));
    if (o->format == LT_IMPORT_CSV && !o->map)
        return lt_errset(err, LT_EINVAL,
                         "--from csv needs --map KEY=EXPR,... to say which column is what");
    if (o->map || tracelab) {
        rc = lt_map_parse(o->map                            ? o->map
                          : o->format == LT_IMPORT_TRACELAB ? tracelab_map
                                                            : tracelab_jsonl_map,
                          &m.map, err);
        if (rc < 0)
            return rc;
    }
    /* TraceLab files go session by session, not in time order */
    oc.sort = o->sort || tracelab;
    /* a log mapped in is a foreign clock, counted from its first request */
    m.rebase = o->format != LT_IMPORT_JSONL || m.map.n;
    size_t max = o->max_line ? o->max_line : LT_LINE_MAX_DEFAULT;
    lt_buf_init(&m.meta, max);
    lt_buf_init(&m.hdr_extra, max);
    lt_buf_init(&m.extra, max);
    lt_buf_init(&m.jbuf, max + max / 2);
    lt_buf_init(&m.sbuf, max);
    lt_buf_init(&m.mstr, max);
    m.pk = (struct lt_mp){&m.extra, 0};
    lt_u64map_init(&m.sess_map);
    session_infer_init(&m.infer);
    lt_u64map_init(&m.rounds);
    m.cur_sess = SIZE_MAX;

    switch (o->format) {
    case LT_IMPORT_AZURE:
    case LT_IMPORT_BURSTGPT:
    case LT_IMPORT_CSV:
    case LT_IMPORT_TRACELAB: {
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
    case LT_IMPORT_JSONL:
    case LT_IMPORT_TRACELAB_JSONL: {
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
    for (size_t i = 0; i < m.n_sess; i++)
        free(m.sess[i].name);
    free(m.sess);
    lt_u64map_release(&m.sess_map);
    if (o->infer_sessions)
        session_infer_stats(&m.infer, m.st);
    session_infer_release(&m.infer);
    lt_u64map_release(&m.rounds);
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
    lt_buf_release(&m.mstr);
    lt_map_release(&m.map);
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
    if (!is_stdin && strcmp(out_path, "-") && lt_path_same(in_path, out_path)) {
        fclose(f);
        return lt_errset(err, LT_EINVAL, "%s: the output is the input file", out_path);
    }
    struct lt_import_opts opts = *o;
    if (!opts.name)
        opts.name = in_path;
    /* Frames close by count and size only, not by the clock: that rule
     * bounds what a crash loses while capturing, and here it would only
     * make the output differ from run to run. */
    struct lt_writer_opts wopts = wo ? *wo : (struct lt_writer_opts){0};
    if (!wopts.frame_ms)
        wopts.frame_ms = INT64_C(1000000000);
    struct file_sink fs = {.path = out_path, .wo = &wopts};
    struct lt_import_sink sink = {file_header, file_record, &fs};
    rc = lt_import_stream(f, &opts, &sink, st, err);
    if (fs.w) {
        int crc = lt_writer_close(fs.w, rc < 0 ? NULL : err);
        if (rc == 0)
            rc = crc;
        /* A partial trace would look like a whole one; only a regular
         * file is removed, not /dev/full or a pipe. */
        struct stat so;
        if (rc < 0 && strcmp(out_path, "-") && stat(out_path, &so) == 0 && S_ISREG(so.st_mode))
            unlink(out_path);
    }
    if (!is_stdin)
        fclose(f);
    return rc;
}

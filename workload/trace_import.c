/*
 * The importers' shared core (see trace_import.h for the contract,
 * docs/import.md for the mapping of every source column, and
 * import_internal.h for the rooms): the table of formats, the state, and
 * what every format shares.
 *
 * One state (struct imp) serves every format. A format's row parser fills
 * imp.rec with pointers into the current row (CSV buffer or JSON tree) and
 * returns the row's arrival time in microseconds on the source's own clock
 * ("raw"); lt__imp_emit() then turns raw times into t (relative to the first
 * record), checks the order, and hands the record on, or, with sort, copies
 * it into memory to be sorted and handed on at the end (lt__imp_finish). The header goes to
 * the sink just before the first record, because the Azure header carries
 * the wall-clock time of the first row.
 *
 * Unknown columns and keys are never dropped: they are packed as msgpack
 * key/value pairs into the record's `extra`, which the writer keeps.
 */
#include "workload/trace_import.h"
#include "workload/import_internal.h"
#include "base/lt_lines.h"
#include "base/lt_path.h"
#include "base/lt_time.h"
#include "traces/trace_schema.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SORT_MAX_DEFAULT ((size_t)4 << 30)

/* ---- small parsers ------------------------------------------------------ */

void lt__imp_trim(const char **p, size_t *n)
{
    while (*n && (**p == ' ' || **p == '\t'))
        (*p)++, (*n)--;
    while (*n && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t'))
        (*n)--;
}

/* A whole number in [0, max]. Trailing ".0" (pandas writes integer columns
 * with missing values as floats) is accepted; any other fraction is not. */
bool lt__imp_parse_uint(const char *p, size_t n, uint64_t max, uint64_t *v)
{
    lt__imp_trim(&p, &n);
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
bool lt__imp_canonical_uint(const char *p, size_t n)
{
    if (!n || (p[0] == '0' && n > 1))
        return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
            return false;
    return true;
}

/* A decimal number ("118", "0.25") of a unit of 10^-digits s (6: seconds,
 * 3: milliseconds, 0: microseconds) to microseconds, exactly: digits past
 * the microsecond are rounded. 1 on success, 0 when it is not a number, -1
 * when it is one beyond ±TIME_MAX_US. */
int lt__imp_parse_scaled_us(const char *p, size_t n, int digits, int64_t *us)
{
    lt__imp_trim(&p, &n);
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
int lt__imp_parse_seconds_us(const char *p, size_t n, int64_t *us)
{
    return lt__imp_parse_scaled_us(p, n, 6, us);
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
int lt__imp_name_session(struct imp *m, const char *p, size_t n, uint64_t line, struct sess **out)
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

void lt__imp_pk_str(struct imp *m, const char *s, size_t n)
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
        lt__imp_pk_str(m, p, n);
}

/* A source column or key kept in extra must not take the name of a record
 * key (a CSV column "in" beside ContextTokens, a Mooncake key "t"): it
 * would be read back as that key, or clash with it. Such names get the
 * format as a prefix ("azure:in"). */
void lt__imp_pk_extra_key(struct imp *m, const char *k, size_t kn)
{
    if (is_record_key(k, kn)) {
        const char *fmt = m->fmt->name;
        size_t fn = strlen(fmt);
        lt_mp_str_head(&m->pk, fn + 1 + kn);
        lt_mp_raw(&m->pk, fmt, fn);
        lt_mp_raw(&m->pk, ":", 1);
        lt_mp_raw(&m->pk, k, kn);
        return;
    }
    lt__imp_pk_str(m, k, kn);
}

int lt__imp_extra_csv(struct imp *m, const char *key, const char *p, size_t n)
{
    m->pk.out = &m->extra;
    lt__imp_pk_extra_key(m, key, strlen(key));
    pk_csv_value(m, p, n);
    m->rec.extra.n++;
    return m->pk.rc;
}

/* ---- errors ----------------------------------------------------------------- */

int lt__imp_row_bad(struct imp *m, uint64_t line, const char *fmt, ...)
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
int lt__imp_row_error(struct imp *m, int rc)
{
    if (!m->o->skip_bad || (rc != LT_EFORMAT && rc != LT_ELIMIT))
        return rc;
    m->st->skipped++;
    if (m->o->on_skip)
        m->o->on_skip(m->o->ud, m->err->msg);
    lt_err_clear(m->err);
    return 0;
}

/* A buffer of the current row could not grow. */
int lt__imp_nomem(struct imp *m, int rc, uint64_t line)
{
    if (rc >= 0)
        return rc;
    return lt_errset(m->err, rc, "%s:%llu: %s", m->name, (unsigned long long)line,
                     rc == LT_ELIMIT ? "row too large" : "out of memory");
}

int lt__imp_grow_array(struct imp *m, void **arr, size_t *cap, size_t n, size_t size)
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

/* ---- header, order, sort, delivery ---------------------------------------------- */

static int send_header(struct imp *m, bool have_first, int64_t first_raw)
{
    int rc = 0;
    m->header_sent = true;
    if (!m->header_given) {
        const char *fmt = m->fmt->name;
        snprintf(m->source_buf, sizeof m->source_buf, "import:%s", fmt);
        m->hdr.kind = LT_KIND_TRACE;
        m->hdr.source = m->source_buf;
        if (m->fmt->flags & IMP_BLOCKS_512)
            m->hdr.block_tokens = LT_DEFAULT_BLOCK_TOKENS;
        else if (m->fmt->flags & IMP_BLOCKS_OPT)
            m->hdr.block_tokens = m->o->block_tokens;
        char start[40];
        const char *keys[4] = {"file", "format"};
        const char *vals[4] = {base_name(m->o->name ? m->o->name : "-"), fmt};
        size_t n = 2;
        if ((m->fmt->flags & IMP_WALL_START) && have_first) {
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
    if (lt__session_infer_add(&m->infer, r->blocks, r->n_blocks, (r->has & LT_HAS_IN) != 0, r->in,
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
        return lt__imp_row_error(m, lt_errf(m->err, rc, "%s:%llu", m->name, (unsigned long long)line));
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
int lt__imp_emit(struct imp *m, int64_t raw, uint64_t line)
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

int lt__imp_finish(struct imp *m)
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
void lt__imp_rec_begin(struct imp *m)
{
    memset(&m->rec, 0, sizeof m->rec);
    lt_buf_reset(&m->extra);
    m->pk.rc = 0;
}

void lt__imp_rec_end(struct imp *m)
{
    m->rec.extra.data = (const uint8_t *)m->extra.p;
    m->rec.extra.len = m->extra.len;
}

/* ---- entry points ------------------------------------------------------------------ */

/* The formats, each defined by its family's file. */
static const struct imp_format *const formats[] = {
    [LT_IMPORT_AZURE] = &lt__imp_format_azure,
    [LT_IMPORT_BURSTGPT] = &lt__imp_format_burstgpt,
    [LT_IMPORT_MOONCAKE] = &lt__imp_format_mooncake,
    [LT_IMPORT_JSONL] = &lt__imp_format_jsonl,
    [LT_IMPORT_CSV] = &lt__imp_format_csv,
    [LT_IMPORT_TRACELAB] = &lt__imp_format_tracelab,
    [LT_IMPORT_TRACELAB_JSONL] = &lt__imp_format_tracelab_jsonl,
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

static const struct imp_format *format_of(enum lt_import_format f)
{
    return (size_t)f < N_FORMATS ? formats[f] : NULL;
}

int lt_import_format_parse(const char *s, enum lt_import_format *f)
{
    for (size_t i = 0; i < N_FORMATS; i++)
        if (formats[i] && !strcmp(s, formats[i]->name)) {
            *f = formats[i]->id;
            return 0;
        }
    return LT_EINVAL;
}

int lt_import_map_check(const char *spec, struct lt_err *err)
{
    struct lt_map map;
    int rc = lt__map_parse(spec, &map, err);
    if (rc == 0)
        lt__map_release(&map);
    return rc;
}

const char *lt_import_format_name(enum lt_import_format f)
{
    const struct imp_format *fmt = format_of(f);
    return fmt ? fmt->name : "?";
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
    if (!(m.fmt = format_of(o->format)))
        return lt_errset(err, LT_EINVAL, "unknown import format %d", (int)o->format);
    if (o->map && !(m.fmt->flags & IMP_MAP_OK))
        return lt_errset(err, LT_EINVAL, "--map goes with --from csv or --from jsonl, not %s",
                         m.fmt->name);
    if ((m.fmt->flags & IMP_MAP_NEEDED) && !o->map)
        return lt_errset(err, LT_EINVAL,
                         "--from %s needs --map KEY=EXPR,... to say which column is what",
                         m.fmt->name);
    if (o->map || m.fmt->map) {
        rc = lt__map_parse(o->map ? o->map : m.fmt->map, &m.map, err);
        if (rc < 0)
            return rc;
    }
    /* a format that is a map (TraceLab's) goes session by session, not in
     * time order */
    oc.sort = o->sort || m.fmt->map;
    /* a log mapped in is a foreign clock, counted from its first request */
    m.rebase = !(m.fmt->flags & IMP_OWN_CLOCK) || m.map.n;
    size_t max = o->max_line ? o->max_line : LT_LINE_MAX_DEFAULT;
    lt_buf_init(&m.meta, max);
    lt_buf_init(&m.hdr_extra, max);
    lt_buf_init(&m.extra, max);
    lt_buf_init(&m.jbuf, max + max / 2);
    lt_buf_init(&m.sbuf, max);
    lt_buf_init(&m.mstr, max);
    m.pk = (struct lt_mp){&m.extra, 0};
    lt_u64map_init(&m.sess_map);
    lt__session_infer_init(&m.infer);
    lt_u64map_init(&m.rounds);
    m.cur_sess = SIZE_MAX;

    rc = m.fmt->run(&m, &(struct imp_input){f, data, len, max});

    for (size_t i = 0; i < m.n_held; i++)
        free(m.held[i].blob);
    free(m.held);
    for (size_t i = 0; i < m.n_sess; i++)
        free(m.sess[i].name);
    free(m.sess);
    lt_u64map_release(&m.sess_map);
    if (o->infer_sessions)
        lt__session_infer_stats(&m.infer, m.st);
    lt__session_infer_release(&m.infer);
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
    lt__map_release(&m.map);
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
    if (st) /* what the caller reports is true when nothing was read too */
        memset(st, 0, sizeof *st);
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

/*
 * The mapping language of `import --map` (import_internal.h says the
 * grammar, docs/import.md shows it at work): its parser, which only
 * checks and splits the text, and its evaluator, which reads a CSV row
 * (names resolved against the header by import_csv.c) or a JSON object
 * into a record, since that needs the row.
 */
#include "workload/import_internal.h"
#include "base/lt_json.h"
#include "base/lt_time.h"
#include "traces/trace_schema.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const unit_names[] = {
    [LT_MU_S] = "s", [LT_MU_MS] = "ms", [LT_MU_US] = "us", [LT_MU_ISO] = "iso"};

/* The span [p, e) without spaces at either end. */
static void trim(const char **p, const char **e)
{
    while (*p < *e && (**p == ' ' || **p == '\t'))
        (*p)++;
    while (*e > *p && ((*e)[-1] == ' ' || (*e)[-1] == '\t'))
        (*e)--;
}

/* The first c in [p, e) outside double quotes (or the last, with last). */
static const char *find_sep(const char *p, const char *e, char c, bool last)
{
    const char *hit = NULL;
    bool q = false;
    for (; p < e; p++) {
        if (*p == '"')
            q = !q;
        else if (!q && *p == c) {
            hit = p;
            if (!last)
                break;
        }
    }
    return hit;
}

static int bad(struct lt_err *err, const char *what, const char *p, const char *e)
{
    return lt_errset(err, LT_EINVAL, "--map: %s: \"%.*s\"", what, (int)(e - p), p);
}

/* One name, unquoted. Unquoted, it holds none of the grammar's signs: a
 * second ':' or '=' is a slip (t=ts:s:ms), not a name. */
static int name(const char *p, const char *e, char **out, struct lt_err *err)
{
    trim(&p, &e);
    if (e - p >= 2 && *p == '"' && e[-1] == '"')
        p++, e--;
    else if (find_sep(p, e, '"', false))
        return bad(err, "a quote inside a name (quote the whole name)", p, e);
    else if (find_sep(p, e, ':', false) || find_sep(p, e, '=', false))
        return bad(err,
                   "a name holding ':' or '=' (two units, or two '=' in one item? a name "
                   "that holds them is written in double quotes)",
                   p, e);
    if (p == e)
        return bad(err, "an empty name", p, e);
    if (!(*out = strndup(p, (size_t)(e - p))))
        return lt_errset(err, LT_ENOMEM, "--map: out of memory");
    return 0;
}

static int rule(const char *p, const char *e, struct lt_map *m, struct lt_err *err)
{
    int rc = 0;
    const char *eq = find_sep(p, e, '=', false);
    if (!eq)
        return bad(err, "each item is KEY=EXPR", p, e);
    const char *kp = p, *ke = eq;
    trim(&kp, &ke);
    int key = (size_t)(ke - kp) == strlen("think_after") && !memcmp(kp, "think_after", 11)
                  ? LT_MAP_THINK_AFTER
                  : lt_schema_find(lt_schema_record, LT_REC_N, kp, (size_t)(ke - kp), 0);
    enum lt_ftype ft = key >= 0 ? (enum lt_ftype)lt_schema_record[key].type : LT_FT_I64;
    if (key == -1 || !(ft == LT_FT_I64 || ft == LT_FT_U64 || ft == LT_FT_U32 || ft == LT_FT_STR ||
                       ft == LT_FT_FLAG || ft == LT_FT_BLOCKS))
        return bad(err,
                   "not a key a map can give (t, session, session_id, turn, think, "
                   "think_after, api, model, in, cached, out, reasoning, max_tokens, blocks, "
                   "finish, failed, est)",
                   kp, ke);
    if (lt__map_find(m, key))
        return bad(err, "a key given twice", kp, ke);
    if (m->n == LT_MAP_RULES)
        return lt_errset(err, LT_EINVAL, "--map: more than %d keys", LT_MAP_RULES);
    struct lt_map_rule *r = &m->r[m->n++];
    r->key = key;
    p = eq + 1;
    const char *colon = find_sep(p, e, ':', true);
    bool time = ft == LT_FT_I64;
    if (colon) {
        const char *up = colon + 1, *ue = e;
        trim(&up, &ue);
        for (int u = LT_MU_S; u <= LT_MU_ISO; u++)
            if (strlen(unit_names[u]) == (size_t)(ue - up) &&
                !memcmp(unit_names[u], up, (size_t)(ue - up)))
                r->unit = (uint8_t)u;
        if (!r->unit)
            return bad(err, "not a unit (s, ms, us, iso; quote a name that holds ':')", up, ue);
        if (!time)
            return bad(err, "a unit is for times (t, think, think_after)", kp, e);
        e = colon;
    } else if (time) {
        return bad(err, "a time needs a unit (:s, :ms, :us or :iso)", kp, e);
    }
    for (;;) {
        const char *plus = find_sep(p, e, '+', false);
        const char *te = plus ? plus : e;
        if (r->n == LT_MAP_TERMS)
            return bad(err, "more than 8 terms in one sum", kp, e);
        struct lt_map_term *t = &r->t[r->n++];
        for (;;) {
            const char *bar = find_sep(p, te, '|', false);
            const char *ae = bar ? bar : te;
            if (t->n_alt == LT_MAP_ALTS)
                return bad(err, "more than 4 alternatives of one term", p, te);
            t->col[t->n_alt] = -1;
            if ((rc = name(p, ae, &t->alt[t->n_alt++], err)) < 0)
                return rc;
            if (!bar)
                break;
            p = bar + 1;
        }
        if (!plus)
            break;
        p = plus + 1;
    }
    if (r->n > 1 && !(ft == LT_FT_U32 || time))
        return bad(err, "only counts and times are sums", kp, e);
    return 0;
}

int lt__map_parse(const char *spec, struct lt_map *m, struct lt_err *err)
{
    int rc = 0;
    memset(m, 0, sizeof *m);
    const char *p = spec, *end = spec + strlen(spec);
    const char *open = NULL; /* an odd quote leaves the rest of the map one name */
    for (const char *q = spec; q < end; q++)
        if (*q == '"')
            open = open ? NULL : q;
    if (open)
        return lt_errset(err, LT_EINVAL,
                         "--map: the quote before %.*s is not closed (a quoted name ends with "
                         "a quote)",
                         (int)(end - open - 1 > 60 ? 60 : end - open - 1), open + 1);
    while (p < end) {
        const char *comma = find_sep(p, end, ',', false);
        const char *e = comma ? comma : end;
        const char *tp = p, *tq = e;
        trim(&tp, &tq);
        if (tp < tq && (rc = rule(p, e, m, err)) < 0)
            goto out;
        p = comma ? comma + 1 : end;
    }
    if (!lt__map_find(m, LT_REC_T))
        rc = lt_errset(err, LT_EINVAL, "--map: no t=EXPR:UNIT (every record needs an arrival)");
out:
    if (rc < 0)
        lt__map_release(m);
    return rc;
}

void lt__map_release(struct lt_map *m)
{
    for (int i = 0; i < m->n; i++)
        for (int j = 0; j < m->r[i].n; j++)
            for (int k = 0; k < m->r[i].t[j].n_alt; k++)
                free(m->r[i].t[j].alt[k]);
    memset(m, 0, sizeof *m);
}

const struct lt_map_rule *lt__map_find(const struct lt_map *m, int key)
{
    for (int i = 0; i < m->n; i++)
        if (m->r[i].key == key)
            return &m->r[i];
    return NULL;
}

bool lt__map_names(const struct lt_map *m, const char *nm, size_t n)
{
    for (int i = 0; i < m->n; i++)
        for (int j = 0; j < m->r[i].n; j++)
            for (int k = 0; k < m->r[i].t[j].n_alt; k++) {
                const char *a = m->r[i].t[j].alt[k];
                if (strlen(a) == n && !memcmp(a, nm, n))
                    return true;
            }
    return false;
}

/* ---- the evaluator: one record by the map ------------------------------------- */

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
    lt__imp_json_text(j, &v->p, &v->n);
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
            lt__imp_trim(&p, &n);
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
        ok = lt__imp_parse_scaled_us(v->p, v->n, digits, &us);
    } else if (unit != LT_MU_ISO && json_is_integer(v->j)) {
        json_int_t x = json_integer_value(v->j);
        ok = x > TIME_MAX_US / mult || x < -TIME_MAX_US / mult ? -1 : 1;
        us = (int64_t)x * mult;
    } else if (unit != LT_MU_ISO && json_is_real(v->j)) {
        double d = json_real_value(v->j) * (double)mult;
        ok = fabs(d) > (double)TIME_MAX_US ? -1 : 1;
        us = ok > 0 ? llround(d) : 0;
    } else if (lt__imp_json_big(v->j, &(uint64_t){0})) {
        ok = -1;
    }
    if (ok == 0)
        return lt__imp_row_bad(m, a->line, "map %s: \"%.*s\" is not a time in %s", a->key, show_len(v),
                           v->p ? v->p : "(a JSON value)",
                           unit == LT_MU_ISO  ? "ISO 8601 (YYYY-MM-DDTHH:MM:SS[.frac][Z], UTC)"
                           : unit == LT_MU_S  ? "seconds"
                           : unit == LT_MU_MS ? "milliseconds"
                                              : "microseconds");
    if (ok < 0 || (a->us > 0 && us > TIME_MAX_US - a->us) ||
        (a->us < 0 && us < -TIME_MAX_US - a->us))
        return lt__imp_row_bad(m, a->line, "map %s: out of range (times are at most %lld s from 0)",
                           a->key, (long long)TIME_MAX_S);
    a->us += us;
    a->any = true;
    return 0;
}

static int acc_count(struct imp *m, const struct mval *v, void *ap)
{
    struct macc *a = ap;
    uint64_t x;
    bool ok =
        v->p ? lt__imp_parse_uint(v->p, v->n, UINT32_MAX, &x) : lt__imp_json_u64(v->j, UINT32_MAX, &x);
    if (!ok)
        return lt__imp_row_bad(m, a->line,
                           "map %s: \"%.*s\" is not a token count (a whole number from 0 to "
                           "4294967295)",
                           a->key, show_len(v), v->p ? v->p : "(a JSON value)");
    if (a->u + x > UINT32_MAX)
        return lt__imp_row_bad(m, a->line, "map %s: the sum is above 4294967295", a->key);
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
        else if (lt__imp_json_big(a->v.j, &u))
            n = (size_t)snprintf(num, sizeof num, "%" PRIu64, u);
        else
            return lt__imp_row_bad(m, a->line, "map %s: must be a string or a whole number", a->key);
        p = num;
    }
    if (!lt_json_utf8_ok(p, n) || memchr(p, '\0', n))
        return lt__imp_row_bad(m, a->line, "map %s: not valid UTF-8 text without NUL", a->key);
    *off = m->mstr.len;
    int rc = lt_buf_append(&m->mstr, p, n);
    if (rc >= 0)
        rc = lt_buf_append(&m->mstr, "", 1);
    return lt__imp_nomem(m, rc, a->line);
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
        return lt__imp_want_blocks(m, a->line, a->key, a->v.j);
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
                return lt__imp_row_bad(m, a->line, "map %s: a block id above 18446744073709551615",
                                   a->key);
            x = x * 10 + (unsigned)(a->v.p[j] - '0');
        }
        int rc = lt__imp_grow_array(m, (void **)&m->blocks, &m->blocks_cap, n < 8 ? 16 : n * 2,
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
        return lt__imp_row_bad(m, line, "session \"%s\" has round %u twice (first on line %llu)",
                           sess->name, round, (unsigned long long)*v);
    *v = line;
    return 0;
}

/* One record by the map, from a CSV row or a JSON object. */
int lt__imp_map_row(struct imp *m, const struct msrc *src, uint64_t line, int64_t *raw)
{
    int rc = 0;
    struct lt_record *r = &m->rec;
    struct sess *sess = NULL;
    size_t str_off[LT_REC_N];
    bool str_set[LT_REC_N] = {false};
    int64_t think_after = 0;
    bool have_think_after = false;
    lt__imp_rec_begin(m);
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
                return lt__imp_row_bad(m, line, "map t: no value (the row has none of %s)",
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
            LT_TRY(lt__imp_name_session(m, m->mstr.p + off, strlen(m->mstr.p + off), line, &sess));
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
        LT_TRY(lt__imp_name_session(m, r->session_id, strlen(r->session_id), line, &sess));
    if (sess && (m->fmt->flags & IMP_ROUNDS) && (r->has & LT_HAS_TURN))
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
            if (lt__map_names(&m->map, cn, strlen(cn)))
                continue;
            if (!lt_json_utf8_ok(src->row->f[i].p, src->row->f[i].len))
                return lt__imp_row_bad(
                    m, line,
                    "column \"%s\": not valid UTF-8 (convert the file to UTF-8, e.g. "
                    "with iconv)",
                    cn);
            LT_TRY(lt__imp_nomem(m, lt__imp_extra_csv(m, cn, src->row->f[i].p, src->row->f[i].len), line));
        }
    } else {
        const char *k;
        size_t kn;
        json_t *v;
        json_object_keylen_foreach((json_t *)src->obj, k, kn, v)
        {
            if (!lt__map_names(&m->map, k, kn))
                LT_TRY(lt__imp_json_extra(m, line, k, kn, v));
        }
    }
    lt__imp_rec_end(m);
out:
    return rc;
}

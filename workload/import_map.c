/*
 * The parser of `import --map` specifications (import_internal.h says the
 * grammar, docs/import.md shows it at work). It only checks and splits the
 * text; the importer resolves names against a CSV header or a JSON object
 * and converts values, since that needs the row.
 */
#include "workload/import_internal.h"
#include "traces/trace_schema.h"

#include <stdlib.h>
#include <string.h>

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
    if (lt_map_find(m, key))
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

int lt_map_parse(const char *spec, struct lt_map *m, struct lt_err *err)
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
    if (!lt_map_find(m, LT_REC_T))
        rc = lt_errset(err, LT_EINVAL, "--map: no t=EXPR:UNIT (every record needs an arrival)");
out:
    if (rc < 0)
        lt_map_release(m);
    return rc;
}

void lt_map_release(struct lt_map *m)
{
    for (int i = 0; i < m->n; i++)
        for (int j = 0; j < m->r[i].n; j++)
            for (int k = 0; k < m->r[i].t[j].n_alt; k++)
                free(m->r[i].t[j].alt[k]);
    memset(m, 0, sizeof *m);
}

const struct lt_map_rule *lt_map_find(const struct lt_map *m, int key)
{
    for (int i = 0; i < m->n; i++)
        if (m->r[i].key == key)
            return &m->r[i];
    return NULL;
}

bool lt_map_names(const struct lt_map *m, const char *nm, size_t n)
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

/*
 * The CSV importers (import_internal.h has the family's place): the Azure
 * LLM inference traces and BurstGPT by their columns, any CSV by a map,
 * and TraceLab's multi-round agent CSV, which is a built-in map. Every row
 * is checked against the header line; what no column role or map term
 * names is kept in the record's extra under its column name.
 */
#include "workload/import_internal.h"
#include "base/lt_json.h"
#include "base/lt_time.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

static const struct colspec no_cols[] = {{NULL, R_NONE, false}};

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

/* A CSV format: its columns (none: a map says), and whether a row with no
 * response tokens is a failed request (BurstGPT logs them so). */
struct csv_spec {
    const struct colspec *cols;
    bool no_out_failed;
};

static int csv_header(struct imp *m, const struct lt_csv_row *row, const struct colspec *spec,
                      struct imp_col **cols_out)
{
    int rc = 0;
    struct imp_col *cols = calloc(row->n, sizeof *cols);
    if (!cols)
        return lt_errset(m->err, LT_ENOMEM, "%s: out of memory", m->name);
    for (uint32_t i = 0; i < row->n; i++) {
        const char *p = row->f[i].p;
        size_t n = row->f[i].len;
        lt__imp_trim(&p, &n);
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
                           m->name, (unsigned long long)row->line, s->name, have, m->fmt->name);
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

static int csv_count(struct imp *m, const struct lt_csv_row *row, const struct imp_col *c,
                     const struct lt_csv_field *f, uint32_t *v)
{
    uint64_t x;
    if (!lt__imp_parse_uint(f->p, f->len, UINT32_MAX, &x))
        return lt__imp_row_bad(m, row->line,
                           "column \"%s\": \"%.*s\" is not a token count (a whole number from 0 to "
                           "4294967295)",
                           c->name, (int)(f->len < SHOW_MAX ? f->len : SHOW_MAX), f->p);
    *v = (uint32_t)x;
    return 0;
}

static int csv_row(struct imp *m, const struct lt_csv_row *row, const struct imp_col *cols,
                   uint32_t ncols, int64_t *raw)
{
    int rc = 0;
    uint32_t total = 0;
    bool have_total = false;
    lt__imp_rec_begin(m);
    if (row->n != ncols)
        return lt__imp_row_bad(m, row->line,
                           "%u field%s, but the header line has %u (a truncated or malformed row)",
                           row->n, row->n == 1 ? "" : "s", ncols);
    for (uint32_t i = 0; i < ncols; i++) {
        const struct lt_csv_field *f = &row->f[i];
        const struct imp_col *c = &cols[i];
        const char *p = f->p;
        size_t n = f->len;
        lt__imp_trim(&p, &n);
        int show = (int)(f->len < SHOW_MAX ? f->len : SHOW_MAX);
        /* Strings of a trace are UTF-8 (docs/trace-format.md §2.1): a field
         * kept as text that is not would make `cat`'s JSON lossy. */
        if ((c->role == R_MODEL || c->role == R_SESSION || c->role == R_NONE) &&
            !lt_json_utf8_ok(f->p, f->len))
            return lt__imp_row_bad(m, row->line,
                               "column \"%s\": not valid UTF-8 (convert the file to UTF-8, e.g. "
                               "with iconv)",
                               c->name);
        switch (c->role) {
        case R_DATETIME:
            if (lt_parse_datetime_us(p, n, raw) < 0)
                return lt__imp_row_bad(m, row->line,
                                   "column \"%s\": \"%.*s\" is not a date and time "
                                   "(YYYY-MM-DD HH:MM:SS[.fraction], UTC)",
                                   c->name, show, f->p);
            break;
        case R_SECONDS: {
            int ok = lt__imp_parse_seconds_us(p, n, raw);
            if (ok == 0)
                return lt__imp_row_bad(m, row->line,
                                   "column \"%s\": \"%.*s\" is not a time in seconds (a decimal "
                                   "number)",
                                   c->name, show, f->p);
            if (ok < 0)
                return lt__imp_row_bad(m, row->line,
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
                LT_TRY(lt__imp_nomem(m, lt_buf_append(&m->sbuf, p, n), row->line));
                m->rec.model = m->sbuf.p;
            }
            break;
        case R_SESSION: {
            uint64_t s;
            if (lt__imp_canonical_uint(p, n) && lt__imp_parse_uint(p, n, UINT64_MAX, &s)) {
                m->rec.session = s;
                m->rec.has |= LT_HAS_SESSION;
            } else if (n) {
                /* a UUID or any other name: numbered, the name kept */
                LT_TRY(lt__imp_name_session(m, p, n, row->line, NULL));
            } else {
                LT_TRY(lt__imp_nomem(m, lt__imp_extra_csv(m, c->name, f->p, f->len), row->line));
            }
            break;
        }
        case R_NONE:
            LT_TRY(lt__imp_nomem(m, lt__imp_extra_csv(m, c->name, f->p, f->len), row->line));
            break;
        }
    }
    if (have_total && (uint64_t)total != (uint64_t)m->rec.in + m->rec.out) {
        for (uint32_t i = 0; i < ncols; i++)
            if (cols[i].role == R_TOTAL) {
                m->pk.out = &m->extra;
                lt__imp_pk_str(m, cols[i].name, strlen(cols[i].name));
                lt_mp_uint(&m->pk, total);
                m->rec.extra.n++;
            }
        LT_TRY(lt__imp_nomem(m, m->pk.rc, row->line));
    }
    /* BurstGPT logs a failed request as a row with no response tokens. */
    if (((const struct csv_spec *)m->fmt->spec)->no_out_failed && m->rec.out == 0)
        m->rec.has |= LT_HAS_FAILED;
    lt__imp_rec_end(m);
out:
    return rc;
}

/* Each name of the map to its column; a term none of whose names is a
 * column is an error that lists the columns. */
static int map_columns(struct imp *m, const struct imp_col *cols, uint32_t ncols, uint64_t line)
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
    struct imp_col *cols = NULL;
    uint32_t ncols = 0;
    struct lt_csv_row row;
    const struct colspec *spec = ((const struct csv_spec *)m->fmt->spec)->cols;

    /* the header line; a blank line before it is no header */
    rc = lt_csv_next(csv, &row, m->err);
    if (rc == 0) {
        rc = lt_errset(m->err, LT_EFORMAT, "%s: empty input: no header line", m->name);
        goto out;
    }
    if (rc < 0)
        goto out;
    if (m->map.n) {
        LT_TRY(csv_header(m, &row, no_cols, &cols));
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
            LT_TRY(lt__imp_row_error(m, rc));
            continue;
        }
        if (row.n == 1 && row.f[0].len == 0)
            continue; /* a blank line carries nothing */
        int64_t raw = 0;
        if (m->map.n && row.n != ncols)
            rc =
                lt__imp_row_bad(m, row.line,
                            "%u field%s, but the header line has %u (a truncated or malformed row)",
                            row.n, row.n == 1 ? "" : "s", ncols);
        else if (m->map.n)
            rc = lt__imp_map_row(m, &(struct msrc){.row = &row}, row.line, &raw);
        else
            rc = csv_row(m, &row, cols, ncols, &raw);
        if (rc < 0) {
            LT_TRY(lt__imp_row_error(m, rc));
            continue;
        }
        LT_TRY(lt__imp_emit(m, raw, row.line));
    }
    rc = lt__imp_finish(m);
out:
    if (cols)
        for (uint32_t i = 0; i < ncols; i++)
            free(cols[i].name);
    free(cols);
    return rc;
}

static int csv_run(struct imp *m, const struct imp_input *in)
{
    struct lt_csv csv;
    if (in->f)
        lt_csv_init_file(&csv, in->f, m->name, in->max);
    else
        lt_csv_init_mem(&csv, in->data, in->len, m->name, in->max);
    int rc = import_csv(m, &csv);
    lt_csv_release(&csv);
    return rc;
}

static const struct csv_spec azure = {azure_cols, false}, burstgpt = {burstgpt_cols, true},
                             by_map = {no_cols, false};

/* TraceLab (uw-syfi/TraceLab) as a map: the CSV its csv_export writes (id
 * or session_id, input_len, output_len, arrival_time in ms, round_idx,
 * tool_wait_after_ms, prefix_len: prefix_len is the context already
 * cached, input_len what the round appends). */
static const char tracelab_map[] =
    "session=session_id|id,turn=round_idx,t=arrival_time:ms,cached=prefix_len,"
    "in=prefix_len+input_len,out=output_len,think_after=tool_wait_after_ms:ms";

const struct imp_format lt__imp_format_azure = {LT_IMPORT_AZURE, "azure", csv_run,
                                            &azure,          NULL,    IMP_WALL_START};
const struct imp_format lt__imp_format_burstgpt = {LT_IMPORT_BURSTGPT, "burstgpt", csv_run,
                                               &burstgpt,          NULL,       0};
const struct imp_format lt__imp_format_csv = {LT_IMPORT_CSV, "csv", csv_run,
                                          &by_map,       NULL,  IMP_MAP_OK | IMP_MAP_NEEDED};
const struct imp_format lt__imp_format_tracelab = {LT_IMPORT_TRACELAB, "tracelab", csv_run, &by_map,
                                               tracelab_map,       IMP_ROUNDS};

/*
 * RFC 4180 CSV reader on top of the bounded line reader (see csv.h).
 *
 * A record is parsed line by line: when a line ends inside a quoted field,
 * its terminator is put back into the field and the next line continues
 * the record. A format error does not stop at the bad byte: the rest of the
 * record is consumed first, so a caller that skips bad rows resumes at a
 * record boundary.
 */
#include "workload/csv.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum state {
    FIELD_START, /* nothing of this field read yet */
    UNQUOTED,
    QUOTED,
    QUOTE_IN_QUOTED, /* a quote inside a quoted field: end, or the first of "" */
};

void lt_csv_init_file(struct lt_csv *c, FILE *f, const char *name, size_t max)
{
    memset(c, 0, sizeof *c);
    lt_lines_init_file(&c->src, f, name, max);
    lt_buf_init(&c->rec, c->src.line.max);
}

void lt_csv_init_mem(struct lt_csv *c, const void *data, size_t len, const char *name, size_t max)
{
    memset(c, 0, sizeof *c);
    lt_lines_init_mem(&c->src, data, len, name, max);
    lt_buf_init(&c->rec, c->src.line.max);
}

void lt_csv_release(struct lt_csv *c)
{
    lt_lines_release(&c->src);
    lt_buf_release(&c->rec);
    free(c->off);
    free(c->fields);
    c->off = NULL;
    c->fields = NULL;
    c->cap = 0;
}

static int grow(struct lt_csv *c, uint32_t n)
{
    if (n <= c->cap)
        return 0;
    if (n > LT_CSV_MAX_FIELDS)
        return LT_ELIMIT;
    uint32_t cap = c->cap ? c->cap * 2 : 16;
    if (cap > LT_CSV_MAX_FIELDS)
        cap = LT_CSV_MAX_FIELDS;
    size_t *off = realloc(c->off, cap * sizeof *off);
    if (!off)
        return LT_ENOMEM;
    c->off = off;
    struct lt_csv_field *f = realloc(c->fields, cap * sizeof *f);
    if (!f)
        return LT_ENOMEM;
    c->fields = f;
    c->cap = cap;
    return 0;
}

static int bad(struct lt_csv *c, struct lt_err *err, uint32_t field, const char *what)
{
    return lt_errset(err, LT_EFORMAT, "%s:%llu: field %u %s", c->src.name,
                     (unsigned long long)c->src.lineno, field, what);
}

static int too_long(struct lt_csv *c, struct lt_err *err, int rc, uint64_t first)
{
    if (rc == LT_ENOMEM)
        return lt_errset(err, rc, "%s:%llu: out of memory", c->src.name, (unsigned long long)first);
    return lt_errset(err, rc, "%s:%llu: record longer than %zu bytes or with more than %u fields",
                     c->src.name, (unsigned long long)first, c->rec.max, LT_CSV_MAX_FIELDS);
}

/* Start field n at the current end of rec. */
static int begin_field(struct lt_csv *c, uint32_t *n)
{
    int rc = grow(c, *n + 1);
    if (rc == 0)
        c->off[(*n)++] = c->rec.len;
    return rc;
}

/* For a buffer that cannot grow: name the record, and leave. */
#define ROOM(expr)                                                                                 \
    do {                                                                                           \
        if ((rc = (expr)) < 0) {                                                                   \
            rc = too_long(c, err, rc, first);                                                      \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

int lt_csv_next(struct lt_csv *c, struct lt_csv_row *row, struct lt_err *err)
{
    int rc = 0;
    enum state st = FIELD_START;
    uint32_t n = 0;     /* fields started */
    uint64_t first = 0; /* line the record starts on */
    enum lt_line_end end = LT_LINE_EOF;

    lt_buf_reset(&c->rec);
    for (;;) {
        rc = lt_lines_next(&c->src, &end, err);
        if (rc < 0)
            goto out;
        if (rc == 0) {
            if (first) /* inside a quoted field */
                rc = lt_errset(err, LT_ETRUNC,
                               "%s:%llu: field %u: quoted field never ends (the input ends "
                               "inside it; truncated file?)",
                               c->src.name, (unsigned long long)first, n);
            goto out;
        }
        const char *p = c->src.line.p;
        size_t len = c->src.line.len;
        if (!first) {
            first = c->src.lineno;
            if (!c->started && len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3))
                p += 3, len -= 3;
            c->started = true;
        }
        /* a CR before the end of the input with no LF after it: one too
         * many for a CRLF file cut short, so it is dropped */
        if (end == LT_LINE_EOF && len && p[len - 1] == '\r')
            len--;
        size_t run = 0; /* start of the bytes not yet copied into rec */
        for (size_t i = 0; i < len; i++) {
            char ch = p[i];
            if (ch == '\0') {
                rc = bad(c, err, n ? n : 1, "contains a NUL byte");
                goto out;
            }
            /* the first record is where a file of CR-only line ends shows:
             * all of it reads as one line; later, a CR is data as before */
            if (ch == '\r' && st != QUOTED && !c->first_read) {
                rc = lt_errset(err, LT_EFORMAT,
                               "%s:%llu: a carriage return (CR) alone ends a line here: a file "
                               "whose lines end with CR alone (classic Mac OS) is not read; "
                               "convert it to LF line ends, e.g. tr '\\r' '\\n' <IN >OUT",
                               c->src.name, (unsigned long long)c->src.lineno);
                goto out;
            }
            switch (st) {
            case FIELD_START:
                ROOM(begin_field(c, &n));
                if (ch == '"') {
                    st = QUOTED;
                    run = i + 1;
                    break;
                }
                st = UNQUOTED;
                run = i;
                /* fall through */
            case UNQUOTED:
                if (ch == ',') {
                    ROOM(lt_buf_append(&c->rec, p + run, i - run));
                    ROOM(lt_buf_append(&c->rec, "", 1));
                    st = FIELD_START;
                } else if (ch == '"') {
                    rc = bad(c, err, n, "has a quote inside an unquoted field");
                    goto out;
                }
                break;
            case QUOTED:
                if (ch == '"') {
                    ROOM(lt_buf_append(&c->rec, p + run, i - run));
                    st = QUOTE_IN_QUOTED;
                }
                break;
            case QUOTE_IN_QUOTED:
                if (ch == '"') { /* "" is one quote */
                    st = QUOTED;
                    run = i; /* the second quote is copied with what follows */
                } else if (ch == ',') {
                    ROOM(lt_buf_append(&c->rec, "", 1));
                    st = FIELD_START;
                } else {
                    rc = bad(c, err, n, "has text after the closing quote of a quoted field");
                    goto out;
                }
                break;
            }
        }
        if (st == QUOTED) { /* the line break belongs to the field */
            const char *brk = end == LT_LINE_CRLF ? "\r\n" : "\n";
            ROOM(lt_buf_append(&c->rec, p + run, len - run));
            ROOM(lt_buf_append(&c->rec, brk, strlen(brk)));
            continue;
        }
        if (st == FIELD_START) /* "a," or an empty line */
            ROOM(begin_field(c, &n));
        if (st == UNQUOTED)
            ROOM(lt_buf_append(&c->rec, p + run, len - run));
        ROOM(lt_buf_append(&c->rec, "", 1));
        break;
    }
    for (uint32_t k = 0; k < n; k++) {
        size_t next = k + 1 < n ? c->off[k + 1] : c->rec.len;
        c->fields[k].p = c->rec.p + c->off[k];
        c->fields[k].len = next - c->off[k] - 1; /* each field ends with one NUL */
    }
    row->n = n;
    row->f = c->fields;
    row->line = first;
    c->first_read = true;
    rc = 1;
out:
    return rc;
}

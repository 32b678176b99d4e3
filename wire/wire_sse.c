/*
 * Server-sent events framing. The fast path handles a whole line found in
 * the piece curl handed over without copying it; only a line cut by the end
 * of a piece is collected in `line`. Event data is copied once, into `data`,
 * because an event may span several lines and pieces.
 */
#include "wire/wire_sse.h"

#include "base/lt_err.h"

#include <string.h>

void lt_wire_sse_init(struct lt_wire_sse *s, size_t max_line, size_t max_event)
{
    memset(s, 0, sizeof *s);
    lt_buf_init(&s->line, max_line);
    lt_buf_init(&s->data, max_event);
}

void lt_wire_sse_init_passing(struct lt_wire_sse *s, size_t max_line, size_t max_event)
{
    lt_wire_sse_init(s, max_line, max_event);
    s->passing = true;
}

void lt_wire_sse_release(struct lt_wire_sse *s)
{
    lt_buf_release(&s->line);
    lt_buf_release(&s->data);
}

void lt_wire_sse_reset(struct lt_wire_sse *s)
{
    lt_buf_reset(&s->line);
    lt_buf_reset(&s->data);
    s->has_data = 0;
    s->skip_lf = 0;
    s->skip_line = s->skip_event = false;
    s->at = 0;
}

static int dispatch(struct lt_wire_sse *s, lt_wire_sse_fn fn, void *ud)
{
    int rc;
    if (!s->has_data) {
        /* A blank line that ends no event: only a passing reader cares
         * (its held bytes end here). */
        s->skip_event = false;
        rc = s->passing ? fn(ud, NULL, 0) : 0;
        return rc < 0 ? rc : 0;
    }
    s->has_data = 0;
    const char *p = s->data.p ? s->data.p : "";
    size_t len = s->data.len;
    rc = fn(ud, p, len);
    lt_buf_reset(&s->data);
    return rc < 0 ? rc : 0;
}

/* The event being collected outgrew its limit: an error, or for a passing
 * reader an event skipped up to its blank line. */
static int event_too_long(struct lt_wire_sse *s, int rc)
{
    if (!s->passing || rc != LT_ELIMIT)
        return rc;
    s->skip_event = true;
    s->has_data = 0;
    lt_buf_reset(&s->data);
    return 0;
}

/* One complete line, without its terminator. */
static int line(struct lt_wire_sse *s, const char *p, size_t n, lt_wire_sse_fn fn, void *ud)
{
    if (n == 0)
        return dispatch(s, fn, ud);
    if (p[0] == ':' || s->skip_event)
        return 0;
    const char *colon = memchr(p, ':', n);
    size_t flen = colon ? (size_t)(colon - p) : n;
    if (flen != 4 || memcmp(p, "data", 4) != 0)
        return 0;
    const char *v = colon ? colon + 1 : p + n;
    size_t vlen = (size_t)(p + n - v);
    if (vlen && v[0] == ' ') {
        v++;
        vlen--;
    }
    int rc;
    if (s->has_data && (rc = lt_buf_append(&s->data, "\n", 1)) < 0)
        return event_too_long(s, rc);
    s->has_data = 1;
    rc = lt_buf_append(&s->data, v, vlen);
    return rc < 0 ? event_too_long(s, rc) : 0;
}

/* A line outgrew max_line: an error, or for a passing reader a line
 * skipped up to its end. */
static int line_too_long(struct lt_wire_sse *s, int rc)
{
    if (!s->passing || rc != LT_ELIMIT)
        return rc;
    s->skip_line = true;
    lt_buf_reset(&s->line);
    return 0;
}

/* A line ends at nl, within the piece: the line cut by the last piece's
 * end completed, a whole line, or the end of one being skipped. */
static int line_end(struct lt_wire_sse *s, const char *p, const char *nl, lt_wire_sse_fn fn,
                    void *ud)
{
    int rc;
    if (s->skip_line) {
        s->skip_line = false;
        return 0;
    }
    if (s->line.len) {
        rc = lt_buf_append(&s->line, p, (size_t)(nl - p));
        if (rc == 0)
            rc = line(s, s->line.p, s->line.len, fn, ud);
        else if (s->passing && rc == LT_ELIMIT)
            rc = 0; /* an over-long line, skipped */
        lt_buf_reset(&s->line);
        return rc;
    }
    if ((size_t)(nl - p) > s->line.max)
        return s->passing ? 0 : LT_ELIMIT;
    return line(s, p, (size_t)(nl - p), fn, ud);
}

int lt_wire_sse_feed(struct lt_wire_sse *s, const char *p, size_t n, lt_wire_sse_fn fn, void *ud)
{
    const char *start = p, *end = p + n;
    if (s->skip_lf && p < end) {
        if (*p == '\n')
            p++;
        s->skip_lf = 0;
    }
    while (p < end) {
        const char *nl = p;
        while (nl < end && *nl != '\n' && *nl != '\r')
            nl++;
        if (nl == end) {
            /* A line cut by the end of the piece: keep it for the next one. */
            if (s->skip_line)
                return 0;
            if (s->line.len + (size_t)(end - p) > s->line.max)
                return line_too_long(s, LT_ELIMIT);
            return lt_buf_append(&s->line, p, (size_t)(end - p));
        }
        const char *next = nl + 1;
        if (*nl == '\r') {
            if (next == end)
                s->skip_lf = 1;
            else if (*next == '\n')
                next++;
        }
        s->at = (size_t)(next - start);
        int rc = line_end(s, p, nl, fn, ud);
        if (rc < 0)
            return rc;
        p = next;
    }
    return 0;
}

int lt_wire_sse_finish(struct lt_wire_sse *s, lt_wire_sse_fn fn, void *ud)
{
    int rc = 0;
    s->at = 0;
    if (s->line.len && !s->skip_line)
        rc = line(s, s->line.p, s->line.len, fn, ud);
    lt_buf_reset(&s->line);
    s->skip_line = s->skip_event = false;
    if (rc == 0 && s->has_data)
        rc = dispatch(s, fn, ud);
    return rc;
}

/*
 * The server-sent-events splitter of capture (capture_sse.h). It works on
 * whatever pieces curl delivers, so lines and events may be cut anywhere.
 */
#include "capture/capture_sse.h"
#include "traces/lt_err.h"

#include <string.h>

#define LINE_MAX_BYTES ((size_t)8 << 20)
#define EVENT_MAX_BYTES ((size_t)8 << 20)

void lt_capture_sse_init(struct lt_capture_sse *s, bool filter, lt_capture_sse_fn fn, void *ud)
{
    memset(s, 0, sizeof *s);
    s->filter = filter;
    s->on_data = fn;
    s->ud = ud;
    lt_buf_init(&s->line, LINE_MAX_BYTES);
    lt_buf_init(&s->event, EVENT_MAX_BYTES);
}

void lt_capture_sse_release(struct lt_capture_sse *s)
{
    lt_buf_release(&s->line);
    lt_buf_release(&s->event);
}

/* A complete line (terminator removed). Returns true at an event's end. */
static bool line_done(struct lt_capture_sse *s)
{
    size_t n = s->line.len;
    const char *p = s->line.p ? s->line.p : "";
    if (n && p[n - 1] == '\r')
        n--;
    if (s->skip_line) {
        s->skip_line = false;
        lt_buf_reset(&s->line);
        return false;
    }
    bool end = n == 0;
    if (n >= 5 && !memcmp(p, "data:", 5)) {
        size_t off = 5;
        if (off < n && p[off] == ' ')
            off++;
        if (s->on_data && s->on_data(s->ud, p + off, n - off))
            s->drop = true;
    }
    lt_buf_reset(&s->line);
    return end;
}

static int flush_event(struct lt_capture_sse *s, struct lt_buf *out)
{
    int rc = 0;
    if (!s->drop && s->event.len)
        rc = lt_buf_append(out, s->event.p, s->event.len);
    lt_buf_reset(&s->event);
    s->drop = false;
    return rc;
}

int lt_capture_sse_feed(struct lt_capture_sse *s, const char *p, size_t n, struct lt_buf *out)
{
    int rc = 0;
    if (!s->filter)
        LT_TRY(lt_buf_append(out, p, n));
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t seg = nl ? (size_t)(nl - p) + 1 : n;
        if (s->filter) {
            if (lt_buf_append(&s->event, p, seg) < 0) {
                /* Too big to hold: pass it on and stop filtering. */
                LT_TRY(flush_event(s, out));
                LT_TRY(lt_buf_append(out, p, n)); /* the rest of this piece */
                s->filter = false;
            }
        }
        if (!s->skip_line && lt_buf_append(&s->line, p, nl ? seg - 1 : seg) < 0)
            s->skip_line = true;
        if (nl) {
            bool end = line_done(s);
            if (end && s->filter)
                LT_TRY(flush_event(s, out));
        }
        p += seg;
        n -= seg;
    }
    if (!s->filter && s->event.len)
        LT_TRY(flush_event(s, out));
out:
    return rc;
}

int lt_capture_sse_end(struct lt_capture_sse *s, struct lt_buf *out)
{
    if (s->line.len || s->skip_line)
        (void)line_done(s);
    s->drop = false; /* never drop an incomplete event */
    return s->filter ? flush_event(s, out) : 0;
}

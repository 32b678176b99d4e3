/*
 * The server-sent-events splitter of capture (capture_sse.h). It works on
 * whatever pieces curl delivers, so lines and events may be cut anywhere;
 * the framer says where each event ends in the piece (lt_wire_sse_at), and
 * in filter mode the bytes up to there are passed on or dropped at once.
 */
#include "capture/capture_sse.h"
#include "base/lt_err.h"

#include <string.h>

#define LINE_MAX_BYTES ((size_t)8 << 20)
#define EVENT_MAX_BYTES ((size_t)8 << 20)

/* The fate of the LF that may follow a CR which ended both an event and a
 * piece: it belongs to that event. */
enum { LF_HELD, LF_PASS, LF_DROP };

void lt_capture_sse_init(struct lt_capture_sse *s, bool filter, lt_capture_sse_fn fn, void *ud)
{
    memset(s, 0, sizeof *s);
    s->filter = filter;
    s->parse = true;
    s->on_data = fn;
    s->ud = ud;
    lt_wire_sse_init_passing(&s->sse, LINE_MAX_BYTES, EVENT_MAX_BYTES);
    lt_buf_init(&s->event, EVENT_MAX_BYTES);
}

void lt_capture_sse_release(struct lt_capture_sse *s)
{
    lt_wire_sse_release(&s->sse);
    lt_buf_release(&s->event);
}

/* Pass on the held bytes and the piece's bytes up to `to`. */
static int pass(struct lt_capture_sse *s, size_t to)
{
    int rc = 0;
    if (s->event.len)
        rc = lt_buf_append(s->out, s->event.p, s->event.len);
    if (rc == 0 && to > s->from)
        rc = lt_buf_append(s->out, s->piece + s->from, to - s->from);
    lt_buf_reset(&s->event);
    s->from = to;
    return rc;
}

/* One event (data NULL: a blank line that ended no event). */
static int on_event(void *ud, const char *data, size_t len)
{
    struct lt_capture_sse *s = ud;
    bool drop = data && s->on_data && s->on_data(s->ud, data, len);
    if (!s->filter || s->ending)
        return 0;
    size_t at = lt_wire_sse_at(&s->sse);
    if (drop) {
        lt_buf_reset(&s->event);
        s->from = at;
    } else if ((s->out_rc = pass(s, at)) < 0) {
        return s->out_rc;
    }
    s->lf_fate = LF_HELD;
    if (at == s->n && s->piece[at - 1] == '\r')
        s->lf_fate = drop ? LF_DROP : LF_PASS;
    return 0;
}

/* Filter mode: the events of one piece passed on or dropped, the rest held. */
static int filter_piece(struct lt_capture_sse *s, const char *p, size_t n)
{
    if (n == 0)
        return 0;
    s->piece = p;
    s->n = n;
    s->from = 0;
    s->out_rc = 0;
    if (s->sse.skip_lf && n && p[0] == '\n' && s->lf_fate != LF_HELD) {
        if (s->lf_fate == LF_PASS && (s->out_rc = lt_buf_append(s->out, "\n", 1)) < 0)
            return s->out_rc;
        s->from = 1;
    }
    s->lf_fate = LF_HELD;
    if (lt_wire_sse_feed(&s->sse, p, n, on_event, s) < 0) {
        if (s->out_rc < 0)
            return s->out_rc; /* out is full */
        /* The framer failed (out of memory): read no more, hold no more. */
        s->parse = false;
        s->filter = false;
        return pass(s, n);
    }
    if (lt_buf_append(&s->event, p + s->from, n - s->from) < 0) {
        /* Too big to hold: pass it on and stop filtering. */
        s->filter = false;
        return pass(s, n);
    }
    return 0;
}

int lt_capture_sse_feed(struct lt_capture_sse *s, const char *p, size_t n, struct lt_buf *out)
{
    s->out = out;
    if (s->filter)
        return filter_piece(s, p, n);
    int rc = lt_buf_append(out, p, n);
    if (rc < 0)
        return rc;
    if (s->parse && lt_wire_sse_feed(&s->sse, p, n, on_event, s) < 0)
        s->parse = false; /* out of memory: the bytes still go on */
    return 0;
}

int lt_capture_sse_end(struct lt_capture_sse *s, struct lt_buf *out)
{
    s->ending = true; /* never drop an incomplete event */
    if (s->parse)
        (void)lt_wire_sse_finish(&s->sse, on_event, s);
    if (!s->filter)
        return 0;
    s->out = out;
    s->piece = NULL;
    s->n = s->from = 0;
    return pass(s, 0);
}

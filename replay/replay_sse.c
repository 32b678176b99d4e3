/*
 * Server-sent events framing. The fast path handles a whole line found in
 * the piece curl handed over without copying it; only a line cut by the end
 * of a piece is collected in `line`. Event data is copied once, into `data`,
 * because an event may span several lines and pieces.
 */
#include "replay/replay_sse.h"

#include "traces/lt_err.h"

#include <string.h>

void lt_replay_sse_init(struct lt_replay_sse *s, size_t max_line, size_t max_event)
{
    lt_buf_init(&s->line, max_line);
    lt_buf_init(&s->data, max_event);
    s->has_data = 0;
    s->skip_lf = 0;
}

void lt_replay_sse_release(struct lt_replay_sse *s)
{
    lt_buf_release(&s->line);
    lt_buf_release(&s->data);
}

void lt_replay_sse_reset(struct lt_replay_sse *s)
{
    lt_buf_reset(&s->line);
    lt_buf_reset(&s->data);
    s->has_data = 0;
    s->skip_lf = 0;
}

static int dispatch(struct lt_replay_sse *s, lt_replay_sse_fn fn, void *ud)
{
    if (!s->has_data)
        return 0;
    s->has_data = 0;
    const char *p = s->data.p ? s->data.p : "";
    size_t len = s->data.len;
    int rc = fn(ud, p, len);
    lt_buf_reset(&s->data);
    return rc < 0 ? rc : 0;
}

/* One complete line, without its terminator. */
static int line(struct lt_replay_sse *s, const char *p, size_t n, lt_replay_sse_fn fn, void *ud)
{
    if (n == 0)
        return dispatch(s, fn, ud);
    if (p[0] == ':')
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
        return rc;
    s->has_data = 1;
    return lt_buf_append(&s->data, v, vlen);
}

int lt_replay_sse_feed(struct lt_replay_sse *s, const char *p, size_t n, lt_replay_sse_fn fn,
                       void *ud)
{
    const char *end = p + n;
    int rc;
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
            if (s->line.len + (size_t)(end - p) > s->line.max)
                return LT_ELIMIT;
            return lt_buf_append(&s->line, p, (size_t)(end - p));
        }
        if (s->line.len) {
            if ((rc = lt_buf_append(&s->line, p, (size_t)(nl - p))) < 0)
                return rc;
            rc = line(s, s->line.p, s->line.len, fn, ud);
            lt_buf_reset(&s->line);
        } else {
            if ((size_t)(nl - p) > s->line.max)
                return LT_ELIMIT;
            rc = line(s, p, (size_t)(nl - p), fn, ud);
        }
        if (rc < 0)
            return rc;
        if (*nl == '\r') {
            if (nl + 1 == end)
                s->skip_lf = 1;
            else if (nl[1] == '\n')
                nl++;
        }
        p = nl + 1;
    }
    return 0;
}

int lt_replay_sse_finish(struct lt_replay_sse *s, lt_replay_sse_fn fn, void *ud)
{
    int rc = 0;
    if (s->line.len) {
        rc = line(s, s->line.p, s->line.len, fn, ud);
        lt_buf_reset(&s->line);
    }
    if (rc == 0)
        rc = dispatch(s, fn, ud);
    return rc;
}

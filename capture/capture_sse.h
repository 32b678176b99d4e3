/*
 * Server-sent events, as they pass through capture: the bytes go to the
 * client as they arrive, and a copy of each `data:` payload is handed to a
 * callback on the side (to read tokens, usage, finish reason, tool calls).
 *
 * In filter mode (when capture itself asked the upstream for usage the
 * client did not ask for), each event is held until its blank line, and an
 * event the callback marks for dropping (the usage-only chunk) never
 * reaches the client; every other byte goes through unchanged. An event
 * longer than the event cap is passed on and filtering stops, so nothing
 * is ever held without bound.
 *
 * Lines end at LF (a CR before it belongs to the terminator). A line longer
 * than the line cap is passed through but not parsed.
 */
#ifndef LT_CAPTURE_SSE_H
#define LT_CAPTURE_SSE_H

#include "traces/lt_buf.h"

#include <stdbool.h>
#include <stddef.h>

/* Called for each data payload; return true to drop the event (only
 * honoured in filter mode). */
typedef bool (*lt_capture_sse_fn)(void *ud, const char *data, size_t len);

struct lt_capture_sse {
    lt_capture_sse_fn on_data;
    void *ud;
    bool filter;         /* hold events back, drop the marked ones */
    bool drop;           /* the current event is to be dropped */
    bool skip_line;      /* the current line overflowed: not parsed */
    struct lt_buf line;  /* the current line, without its terminator */
    struct lt_buf event; /* filter mode: the current event's bytes */
};

void lt_capture_sse_init(struct lt_capture_sse *s, bool filter, lt_capture_sse_fn fn, void *ud);
void lt_capture_sse_release(struct lt_capture_sse *s);
/* Take n bytes from the upstream; append what the client gets to out.
 * Returns 0 or LT_ELIMIT / LT_ENOMEM (out is full: the caller's cap). */
int lt_capture_sse_feed(struct lt_capture_sse *s, const char *p, size_t n, struct lt_buf *out);
/* The upstream ended: pass on whatever is held (an event without its
 * blank line is the client's to judge) and parse a last unterminated line. */
int lt_capture_sse_end(struct lt_capture_sse *s, struct lt_buf *out);

#endif

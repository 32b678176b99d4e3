/*
 * Server-sent events framing (the WHATWG text/event-stream format) as the
 * OpenAI-compatible servers use it: bytes arrive in arbitrary pieces, lines
 * end in LF, CRLF or CR, `data:` lines accumulate into one event, and a
 * blank line dispatches it. Comments (`:`) and other fields (`event:`,
 * `id:`, `retry:`) carry nothing a reader of these streams needs and are
 * skipped. Replay reads its answers with it; capture's pass-through
 * splitter (capture/capture_sse.h) and its log importer find the events
 * of what they pass on or read with it too, so both see the same events.
 *
 * Everything a server sends is held in bounded buffers: a line longer than
 * max_line, or an event whose data is longer than max_event, is an error
 * (LT_ELIMIT), never a larger allocation. A passing reader (one that
 * forwards the bytes whatever they are, lt_wire_sse_init_passing) skips
 * such a line or event instead, and is told of every event boundary.
 */
#ifndef LT_WIRE_SSE_H
#define LT_WIRE_SSE_H

#include "base/lt_buf.h"

#include <stdbool.h>
#include <stddef.h>

/* Called once per event with its data (the data lines joined by LF,
 * NUL-terminated; owned by the parser, valid during the call). A passing
 * reader is also called with data NULL at a blank line that ends no event
 * (after comments, say, or a skipped event). A negative return stops the
 * parser and is returned by lt_wire_sse_feed. */
typedef int (*lt_wire_sse_fn)(void *ud, const char *data, size_t len);

struct lt_wire_sse {
    struct lt_buf line; /* a line cut by the end of a piece */
    struct lt_buf data; /* data of the event being collected */
    int has_data;       /* a data: line was seen since the last dispatch */
    int skip_lf;        /* the last piece ended in CR: a leading LF is its pair */
    bool passing;       /* limits skip instead of failing; blank lines are told */
    bool skip_line;     /* passing: the rest of an over-long line is skipped */
    bool skip_event;    /* passing: the event being collected outgrew max_event */
    size_t at;          /* bytes of the piece read, through the line just ended */
};

void lt_wire_sse_init(struct lt_wire_sse *s, size_t max_line, size_t max_event);
/* The same for a reader that passes the bytes on (see above). */
void lt_wire_sse_init_passing(struct lt_wire_sse *s, size_t max_line, size_t max_event);
void lt_wire_sse_release(struct lt_wire_sse *s);
/* Forget any partial line or event (the memory is kept for the next stream). */
void lt_wire_sse_reset(struct lt_wire_sse *s);
/* Parse n bytes. Returns 0, LT_ELIMIT, LT_ENOMEM or the callback's negative
 * return. */
int lt_wire_sse_feed(struct lt_wire_sse *s, const char *p, size_t n, lt_wire_sse_fn fn, void *ud);
/* The stream ended: an event left without its blank line is dispatched
 * (servers that omit the last blank line are common enough to forgive).
 * Returns like lt_wire_sse_feed. */
int lt_wire_sse_finish(struct lt_wire_sse *s, lt_wire_sse_fn fn, void *ud);

/* Inside a callback of lt_wire_sse_feed: how many bytes of the piece being
 * fed precede the end of the event (through its blank line's terminator; a
 * CR that ends the piece may still get its LF in the next piece, which then
 * starts with it while skip_lf is set). */
static inline size_t lt_wire_sse_at(const struct lt_wire_sse *s)
{
    return s->at;
}

#endif

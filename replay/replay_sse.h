/*
 * Server-sent events framing (the WHATWG text/event-stream format) as the
 * OpenAI-compatible servers use it: bytes arrive in arbitrary pieces, lines
 * end in LF, CRLF or CR, `data:` lines accumulate into one event, and a
 * blank line dispatches it. Comments (`:`) and other fields (`event:`,
 * `id:`, `retry:`) carry nothing replay needs and are skipped.
 *
 * Everything a server sends is held in bounded buffers: a line longer than
 * max_line, or an event whose data is longer than max_event, is an error
 * (LT_ELIMIT), never a larger allocation.
 */
#ifndef LT_REPLAY_SSE_H
#define LT_REPLAY_SSE_H

#include "traces/lt_buf.h"

#include <stddef.h>

/* Called once per event with its data (the data lines joined by LF,
 * NUL-terminated; owned by the parser, valid during the call). A negative
 * return stops the parser and is returned by lt_replay_sse_feed. */
typedef int (*lt_replay_sse_fn)(void *ud, const char *data, size_t len);

struct lt_replay_sse {
    struct lt_buf line; /* a line cut by the end of a piece */
    struct lt_buf data; /* data of the event being collected */
    int has_data;       /* a data: line was seen since the last dispatch */
    int skip_lf;        /* the last piece ended in CR: a leading LF is its pair */
};

void lt_replay_sse_init(struct lt_replay_sse *s, size_t max_line, size_t max_event);
void lt_replay_sse_release(struct lt_replay_sse *s);
/* Forget any partial line or event (the memory is kept for the next stream). */
void lt_replay_sse_reset(struct lt_replay_sse *s);
/* Parse n bytes. Returns 0, LT_ELIMIT, LT_ENOMEM or the callback's negative
 * return. */
int lt_replay_sse_feed(struct lt_replay_sse *s, const char *p, size_t n, lt_replay_sse_fn fn,
                       void *ud);
/* The stream ended: an event left without its blank line is dispatched
 * (servers that omit the last blank line are common enough to forgive).
 * Returns like lt_replay_sse_feed. */
int lt_replay_sse_finish(struct lt_replay_sse *s, lt_replay_sse_fn fn, void *ud);

#endif

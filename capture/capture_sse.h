/*
 * Server-sent events, as they pass through capture: the bytes go to the
 * client as they arrive, and each event's data is handed to a callback on
 * the side (to read tokens, usage, finish reason, tool calls). The events
 * are found by the one SSE framer (wire/wire_sse.h), the one replay reads
 * its answers with, in its passing mode: an over-long line or event is
 * skipped by the parser, never an error, and every byte still goes on.
 *
 * In filter mode (when capture itself asked the upstream for usage the
 * client did not ask for), each event's bytes are held until its blank
 * line, and an event the callback marks for dropping (the usage-only
 * chunk) never reaches the client; every other byte goes through
 * unchanged. When the held bytes outgrow the event cap they are passed on
 * and filtering stops, so nothing is ever held without bound.
 */
#ifndef LT_CAPTURE_SSE_H
#define LT_CAPTURE_SSE_H

#include "base/lt_buf.h"
#include "wire/wire_sse.h"

#include <stdbool.h>
#include <stddef.h>

/* Called for each event's data; return true to drop the event (only
 * honoured in filter mode). */
typedef bool (*lt_capture_sse_fn)(void *ud, const char *data, size_t len);

struct lt_capture_sse {
    lt_capture_sse_fn on_data;
    void *ud;
    bool filter; /* hold events back, drop the marked ones */
    bool parse;  /* the framer reads on (it stops only out of memory) */
    bool ending; /* the upstream ended: nothing more is dropped */
    int lf_fate; /* what the LF after a CR ending the last piece gets */
    struct lt_wire_sse sse;
    struct lt_buf event; /* filter mode: the current event's bytes */
    /* The piece being fed, in filter mode. */
    const char *piece;
    size_t n, from; /* its length, and its first byte not yet passed or dropped */
    struct lt_buf *out;
    int out_rc; /* an append to out failed in a callback */
};

void lt_capture_sse_init(struct lt_capture_sse *s, bool filter, lt_capture_sse_fn fn, void *ud);
void lt_capture_sse_release(struct lt_capture_sse *s);
/* Take n bytes from the upstream; append what the client gets to out.
 * Returns 0 or LT_ELIMIT / LT_ENOMEM (out is full: the caller's cap). */
int lt_capture_sse_feed(struct lt_capture_sse *s, const char *p, size_t n, struct lt_buf *out);
/* The upstream ended: pass on whatever is held (an event without its
 * blank line is the client's to judge) and read a last unterminated event. */
int lt_capture_sse_end(struct lt_capture_sse *s, struct lt_buf *out);

#endif

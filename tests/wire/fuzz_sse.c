/*
 * libFuzzer target for what a server sends replay: the bytes go through the
 * SSE framing (cut into two pieces where the first byte says) and every
 * event through the chunk scanner and accounting; the same bytes are also
 * read as a whole non-streamed body. Nothing may crash, leak, read out of
 * bounds or grow past the parsers' limits, whatever the server sends.
 */
#include "wire/wire_resp.h"
#include "wire/wire_sse.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_event(void *ud, const char *d, size_t n)
{
    struct lt_wire_resp *r = ud;
    lt_wire_resp_event(r, d, n, (lt_mono){(int64_t)n});
    return 0; /* go on after malformed events too, to reach more code */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lt_wire_sse s;
    struct lt_wire_resp r;
    lt_wire_sse_init(&s, 4096, 8192);
    lt_wire_resp_init(&r, 64);
    size_t cut = size ? data[0] % (size + 1) : 0;
    const char *p = (const char *)data;
    if (lt_wire_sse_feed(&s, p, cut, on_event, &r) == 0 &&
        lt_wire_sse_feed(&s, p + cut, size - cut, on_event, &r) == 0)
        lt_wire_sse_finish(&s, on_event, &r);
    lt_wire_resp_reset(&r);
    lt_wire_resp_body(&r, p, size, (lt_mono){1});
    lt_wire_sse_release(&s);
    lt_wire_resp_release(&r);
    return 0;
}

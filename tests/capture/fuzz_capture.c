/*
 * Fuzz target for capture's parsers of peer data: the SSE splitter (fed in
 * two pieces cut where the input says, in filter mode or not, dropping the
 * usage chunk or nothing: the bytes must pass exactly when nothing is
 * dropped) with every payload going to the streamed-chunk reader, the
 * request-body reader (chat and completions), the whole-body reader, and
 * the record built from what they gathered. The first byte chooses; the
 * rest is the input.
 */
#include "capture/capture_call.h"
#include "capture/capture_sse.h"
#include "traces/trace_format.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool on_data(void *ud, const char *p, size_t n)
{
    unsigned bits = lt_capture_call_chunk(ud, p, n);
    return (bits & LT_CAPTURE_CHUNK_USAGE_ONLY) != 0;
}

static bool keep_all(void *ud, const char *p, size_t n)
{
    lt_capture_call_chunk(ud, p, n);
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    unsigned mode = data[0];
    const char *p = (const char *)data + 2;
    size_t n = size - 2;
    struct lt_capture_call_opts o = {.k0 = 1, .k1 = 2, .block_tokens = 4, .keep_content = mode & 8};
    struct lt_capture_call *c =
        lt_capture_call_new(mode & 16 ? LT_CAPTURE_API_COMPLETIONS : LT_CAPTURE_API_CHAT, &o);
    if (!c)
        return 0;
    switch (mode & 3) {
    case 0: {
        struct lt_capture_sse s;
        struct lt_buf out;
        lt_buf_init(&out, (size_t)1 << 26);
        /* mode & 32: nothing is dropped, so filter mode passes all too. */
        lt_capture_sse_init(&s, mode & 4, mode & 32 ? keep_all : on_data, c);
        size_t cut = n ? data[1] % (n + 1) : 0;
        lt_capture_sse_feed(&s, p, cut, &out);
        lt_capture_sse_feed(&s, p + cut, n - cut, &out);
        lt_capture_sse_end(&s, &out);
        if ((!(mode & 4) || (mode & 32)) && (out.len != n || (n && memcmp(out.p, p, n))))
            abort(); /* pass-through must be exact */
        lt_capture_sse_release(&s);
        lt_buf_release(&out);
        break;
    }
    case 1:
        lt_capture_call_request(c, p, n);
        break;
    default:
        lt_capture_call_body(c, p, n);
        break;
    }
    c->status = 200;
    struct lt_record r;
    lt_capture_call_record(c, &r);
    lt_capture_call_free(c);
    return 0;
}

/*
 * Fuzz target: the lean HTTP client's response parser (replay/replay_h1.c):
 * status lines, headers, 1xx blocks, Content-Length, chunked framing with
 * extensions and trailers, read-to-close bodies, each split across reads
 * at every size (the first byte picks it), feeding the SSE framing and the
 * chunk scanner behind them.
 */
#include "replay/replay.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return lt_replay_h1_fuzz(data, size);
}

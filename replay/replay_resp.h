/*
 * What an OpenAI-compatible server answered, chunk by chunk: which chunks
 * carried tokens and how many, when the first token and the first content
 * arrived, the usage the server reported, the finish reason, and whether the
 * stream ended properly.
 *
 * Servers differ (DESIGN.md, "Servers differ"), and all of these are normal:
 * a first chunk with only the role; usage in its own chunk with empty
 * `choices`, inside the last chunk with choices, in every chunk (vLLM's
 * continuous usage), or not at all; reasoning as `reasoning_content` or
 * `reasoning`; tool calls as deltas; SGLang's /generate with cumulative
 * `text` and `meta_info`; a plain JSON body where a stream was asked.
 *
 * Tokens per chunk: the difference of the server's running completion count
 * when it sends usage with every chunk (`chunk_usage`), else 1 per
 * token-bearing chunk. `out` is the server's usage when it sent one
 * (`has_usage`), else the sum over chunks.
 */
#ifndef LT_REPLAY_RESP_H
#define LT_REPLAY_RESP_H

#include "traces/lt_time.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One token-bearing chunk. */
struct lt_replay_chunk {
    lt_mono t;
    uint32_t tokens;
};

struct lt_replay_resp {
    struct lt_replay_chunk *chunks;
    uint32_t n_chunks, cap_chunks;
    uint32_t max_chunks; /* further chunks add their tokens to the last one */
    lt_mono first_token, first_content;
    bool has_first_token, has_first_content;
    bool done;        /* [DONE] seen */
    bool has_usage;   /* the server reported usage */
    bool chunk_usage; /* ... with its running count, so chunk tokens are exact */
    bool has_finish;
    bool error_event;                    /* the stream carried an {"error": ...} object */
    bool oom;                            /* the chunk list could not grow */
    uint32_t in, out, reasoning, cached; /* usage (valid when has_usage) */
    uint32_t counted;                    /* tokens summed over chunks */
    uint32_t counted_reasoning;          /* chunks that carried reasoning only */
    uint32_t last_usage_out;             /* the running count seen last */
    uint32_t usage_events;               /* events that carried usage */
    size_t sglang_text_len;              /* SGLang /generate: cumulative text seen */
    char finish[24];
};

void lt_replay_resp_init(struct lt_replay_resp *r, uint32_t max_chunks);
/* Forget the answer, keep the chunk memory for the next request. */
void lt_replay_resp_reset(struct lt_replay_resp *r);
void lt_replay_resp_release(struct lt_replay_resp *r);

/* One server-sent event's data, received at `now`. "[DONE]" ends the
 * stream. Returns 0, or LT_EFORMAT when the data is not a JSON object. */
int lt_replay_resp_event(struct lt_replay_resp *r, const char *data, size_t len, lt_mono now);

/* A whole (non-streamed) JSON response body, whose first byte arrived at
 * `t`. Returns 0 or LT_EFORMAT. */
int lt_replay_resp_body(struct lt_replay_resp *r, const char *body, size_t len, lt_mono t);

/* Output tokens: usage if reported, else counted. */
static inline uint32_t lt_replay_resp_out(const struct lt_replay_resp *r)
{
    return r->has_usage ? r->out : r->counted;
}

#endif

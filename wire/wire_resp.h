/*
 * What an OpenAI-compatible server answered, chunk by chunk: which chunks
 * carried tokens and how many, when the first token and the first content
 * arrived, the usage the server reported, the finish reason, and whether the
 * stream ended properly. Replay accounts a whole answer with struct
 * lt_wire_resp; capture asks what each chunk or body said
 * (lt_wire_resp_scan) and keeps its own record of it. Both so apply one
 * rule of what a token-bearing chunk is (the rule behind TTFT,
 * docs/metrics.md), what usage is and what an error object is.
 *
 * Servers differ (DESIGN.md, "Servers differ"), and all of these are normal:
 * a first chunk with only the role; usage in its own chunk with empty
 * `choices`, inside the last chunk with choices, in every chunk (vLLM's
 * continuous usage), or not at all; reasoning as `reasoning_content` or
 * `reasoning`; tool calls as deltas; SGLang's /generate with cumulative
 * `text` and `meta_info`; a plain JSON body where a stream was asked.
 * OpenAI's Responses API (named events: text, reasoning and function-call
 * argument deltas, usage in response.completed) and Anthropic's Messages
 * API (message_start with the prompt's count, content_block_delta,
 * message_delta with the output count and stop reason, message_stop) are
 * read by the same functions; their finish reasons come out in chat's
 * words (lt_wire_resp_finish_norm).
 *
 * Tokens per chunk: the difference of the server's running completion count
 * when it sends usage with every chunk (`chunk_usage`), else 1 per
 * token-bearing chunk. `out` is the server's usage when it sent one
 * (`has_usage`), else the sum over chunks.
 */
#ifndef LT_WIRE_RESP_H
#define LT_WIRE_RESP_H

#include "base/lt_buf.h"
#include "base/lt_time.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* llama-server's own account of one request, its "timings" object (in a
 * whole body at the root; in a stream in the last chunks, beside usage):
 * prompt_n prompt tokens prefilled (the cached ones not counted) in
 * prompt_ms, from the slot's start on the prompt to its first token;
 * predicted_n tokens made in predicted_ms, from the first token to the
 * last; cache_n prompt tokens reused from the slot's cache. Its per-token
 * and per-second fields are these divided, so they are not kept. */
struct lt_wire_timings {
    bool has_prompt_n, has_prompt_ms, has_predicted_n, has_predicted_ms, has_cache_n;
    uint32_t prompt_n, predicted_n, cache_n;
    double prompt_ms, predicted_ms; /* >= 0 */
};

/* What one chunk (or whole body) said, as the scanner found it, before any
 * accounting across chunks. Only the first choice is read (replay always
 * asks for n = 1). Strings point into the scanned text and are still
 * JSON-escaped (lt_wire_resp_unescape decodes them). */
struct lt_wire_resp_said {
    bool content;   /* choices[0] carried content, text, or tool-call deltas */
    bool reasoning; /* ... or reasoning (reasoning_content or reasoning) */
    bool error;     /* an "error" member at the root, not null or a boolean */
    bool usage;     /* a "usage" object at the root */
    uint32_t n_choices;
    bool has_ct, has_pt, has_rt, has_cached; /* usage (or SGLang meta_info) */
    uint32_t ct, pt, rt, cached;
    /* prompt_tokens_details' image_tokens and video_tokens (vLLM with
     * --enable-prompt-tokens-details, SGLang, the sim): of pt */
    bool has_img, has_vid;
    uint32_t img, vid;
    /* Anthropic's cache counts: its input_tokens (pt) counts only what was
     * neither read from nor written to the cache, so the prompt is the sum
     * of the three (lt_wire_resp_said_in). */
    bool has_cache_read, has_cache_write;
    uint32_t cache_read, cache_write;
    bool has_meta;      /* SGLang meta_info */
    bool has_sg_text;   /* SGLang cumulative text */
    size_t sg_text_len; /* its raw (escaped) length: only compared with itself */
    const char *finish; /* finish_reason (or SGLang's finish_reason.type) */
    size_t finish_len;
    const char *text; /* choices[0]'s content (or text); NULL if none */
    size_t text_len;
    const char *reasoning_text; /* reasoning_content, else reasoning; NULL if none */
    size_t reasoning_len;
    bool tool;      /* the content is a tool call's arguments (Responses, Messages) */
    bool stop;      /* Messages' message_stop: the stream's end, as [DONE] */
    bool messages;  /* an Anthropic Messages event */
    bool has_index; /* a root "index" or "output_index" (Responses, Messages) */
    uint32_t index;
    bool timings; /* a "timings" object at the root (llama-server) */
    struct lt_wire_timings tm;
};

/* Called for each element of choices[0]'s tool_calls (in its delta, or its
 * message in a whole body): its position, its "index" if it has a
 * non-negative integer one, and its function's arguments (raw, NULL if
 * none). */
typedef void (*lt_wire_resp_tool_fn)(void *ud, uint32_t pos, bool has_index, uint32_t index,
                                     const char *args, size_t args_len);

/* Scan one chunk's data (whole = false) or a whole JSON body (true: the
 * choice's text is under "message", not "delta"). tool_fn may be NULL.
 * Returns 0, or LT_EFORMAT when it is not one valid JSON object. */
int lt_wire_resp_scan(const char *data, size_t len, bool whole, struct lt_wire_resp_said *said,
                      lt_wire_resp_tool_fn tool_fn, void *ud);
/* The data that ends a stream: "[DONE]" (trailing blanks allowed). */
bool lt_wire_resp_is_done(const char *data, size_t len);
/* Decode a raw JSON string's escapes (as lt_wire_resp_scan checked them)
 * to UTF-8, appended to out; a lone surrogate becomes U+FFFD. Returns 0,
 * LT_EFORMAT, or out's LT_ELIMIT / LT_ENOMEM (out may then hold a part). */
int lt_wire_resp_unescape(const char *raw, size_t n, struct lt_buf *out);

/* A finish reason in chat's words, whatever the API said: Messages'
 * end_turn and stop_sequence are "stop", max_tokens "length", tool_use
 * "tool_calls"; Responses' completed is "stop" (or "tool_calls" when the
 * answer called a function: `tool`), its incomplete reason
 * max_output_tokens "length". Other words are kept. Returns the words
 * (f itself, or a static string) and their length in *len. */
const char *lt_wire_resp_finish_norm(const char *f, size_t n, bool tool, size_t *len);

/* The token-bearing chunk: it carried content, text, a tool-call delta or
 * reasoning (a role-only or empty chunk is not one). */
static inline bool lt_wire_resp_said_tokens(const struct lt_wire_resp_said *s)
{
    return s->content || s->reasoning;
}

/* Usage is a completion count (in usage or SGLang's meta_info). */
static inline bool lt_wire_resp_said_usage(const struct lt_wire_resp_said *s)
{
    return s->has_ct;
}

/* The prompt's tokens a usage said: prompt_tokens (chat, completions),
 * input_tokens (Responses, whose cached_tokens are a part of it), or
 * Anthropic's input_tokens + cache_read_input_tokens +
 * cache_creation_input_tokens. Saturates at UINT32_MAX. */
static inline uint32_t lt_wire_resp_said_in(const struct lt_wire_resp_said *s)
{
    uint64_t in = (uint64_t)s->pt + s->cache_read + s->cache_write;
    return in > UINT32_MAX ? UINT32_MAX : (uint32_t)in;
}

/* One token-bearing chunk. */
struct lt_wire_chunk {
    lt_mono t;
    uint32_t tokens;
};

struct lt_wire_resp {
    struct lt_wire_chunk *chunks;
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
    bool reasoning_unknown;              /* a whole Messages body: its thinking has no count */
    bool tool_seen;                      /* a Responses or Messages tool call was seen */
    bool has_reasoning;                  /* the usage had a reasoning count */
    bool has_cached;                     /* ... and a cached count (cached) */
    bool messages;                       /* an Anthropic Messages stream: reasoning is counted */
    uint32_t in, out, reasoning, cached; /* usage (valid when has_usage) */
    bool has_img, has_vid;               /* the usage said image (video) tokens of in */
    uint32_t img, vid;
    uint32_t counted;           /* tokens summed over chunks */
    uint32_t counted_reasoning; /* chunks that carried reasoning only */
    uint32_t last_usage_out;    /* the running count seen last */
    uint32_t usage_events;      /* events that carried usage */
    size_t sglang_text_len;     /* SGLang /generate: cumulative text seen */
    bool has_timings;           /* llama-server's timings: the last one seen */
    struct lt_wire_timings timings;
    char finish[24];
};

void lt_wire_resp_init(struct lt_wire_resp *r, uint32_t max_chunks);
/* Forget the answer, keep the chunk memory for the next request. */
void lt_wire_resp_reset(struct lt_wire_resp *r);
void lt_wire_resp_release(struct lt_wire_resp *r);

/* One server-sent event's data, received at `now`. "[DONE]" ends the
 * stream. Returns 0, or LT_EFORMAT when the data is not a JSON object. */
int lt_wire_resp_event(struct lt_wire_resp *r, const char *data, size_t len, lt_mono now);

/* A whole (non-streamed) JSON response body, whose first byte arrived at
 * `t`. Returns 0 or LT_EFORMAT. */
int lt_wire_resp_body(struct lt_wire_resp *r, const char *body, size_t len, lt_mono t);

/* Output tokens: usage if reported, else counted. */
static inline uint32_t lt_wire_resp_out(const struct lt_wire_resp *r)
{
    return r->has_usage ? r->out : r->counted;
}

#endif

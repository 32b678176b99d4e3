/*
 * The OpenAI-compatible surface of the sim (chat, completions, and the
 * Responses and Anthropic Messages APIs), without any HTTP: parsing and
 * validating request bodies into a struct lt_sim_call, and rendering the
 * answers (SSE chunks, whole JSON bodies, error bodies) in the chosen
 * dialect. Kept apart from the server so it can be unit tested and so the
 * server file is only about connections and time.
 */
#ifndef LT_SIM_API_H
#define LT_SIM_API_H

#include "sim/sim_profile.h"
#include "sim/sim_tokens.h"
#include "base/lt_buf.h"

#include <stdbool.h>
#include <stdint.h>

/* Chat and completions (OpenAI), Responses (OpenAI's, as vLLM and SGLang
 * serve it at /v1/responses) and Messages (Anthropic's, /v1/messages). */
enum lt_sim_api {
    LT_SIM_CHAT,
    LT_SIM_COMPLETIONS,
    LT_SIM_RESPONSES,
    LT_SIM_MESSAGES,
    LT_SIM_EMBEDDINGS, /* /v1/embeddings: the prompt's prefill, no output */
    LT_SIM_RERANK,     /* /v1/rerank, /rerank: a query against documents, prefill only */
};

/* The API's name in the sim's log ("chat", "completions", "responses",
 * "messages"). */
const char *lt_sim_api_name(enum lt_sim_api api);

/* The variations real servers have in their streams (docs/sim.md). */
struct lt_sim_dialect {
    bool role_chunk;    /* a first chunk with only the role (chat) */
    bool usage_in_last; /* usage rides on the last token chunk, not its own */
    bool reasoning_key; /* "reasoning" instead of "reasoning_content" */
    bool close;         /* Connection: close after every response */
    bool no_tokenize;   /* no /tokenize (404), as servers without one */
    bool http10;        /* HTTP/1.0 answers: no chunks, a stream ends with the connection */
    /* Messages usage: input_tokens is the whole prompt, with no cache
     * counts (vLLM's), instead of Anthropic's split (llama.cpp's too). */
    bool messages_usage_total;
    bool llamacpp;   /* llama-server's own endpoints: /props, /slots, no vLLM reset */
    bool slot_erase; /* llamacpp: POST /slots/ID?action=erase works (else 501) */
    bool text_only;  /* a text-only model: a request with an image is refused */
};

/* Parse "vllm" or a comma list of vllm, role-chunk, no-role-chunk,
 * usage-separate, usage-in-last, reasoning, reasoning_content, close,
 * keep-alive, http10, http11, no-tokenize, tokenize, messages-usage-total,
 * messages-usage-split, llamacpp, slot-erase, text-only, images (later items
 * override). Returns 0 or
 * LT_EFORMAT. */
int lt_sim_dialect_parse(struct lt_sim_dialect *d, const char *spec, struct lt_err *err);

struct lt_sim_call {
    enum lt_sim_api api;
    bool stream, include_usage;
    char *model_json;        /* the model name as a JSON string literal */
    struct lt_sim_toks toks; /* prompt tokens and block hashes */
    uint32_t max_tokens;     /* after defaults: max_model_len - prompt if absent */
    uint32_t min_tokens;
    bool ignore_eos;
    int reasoning; /* -1 not said, 0 off, 1 on */
    double reasoning_fraction;
    bool tool_call;
    char *tool_name_json; /* the function's name as a JSON string literal */
    /* The prompt's images (docs/sim.md "Images"): how many, the tokens
     * they cost (in toks.n too), and their decoded bytes. */
    uint32_t images, image_tokens;
    uint64_t image_bytes;
    uint32_t image_links;          /* of images: loopback links the sim fetched */
    uint32_t audio, audio_tokens;  /* input_audio clips and their tokens (in toks.n too) */
    uint32_t videos, video_tokens; /* video_url parts and their tokens (in toks.n too) */
    uint32_t inputs; /* embeddings: inputs; rerank: documents (docs/sim.md "Embeddings") */
    uint32_t top_n;  /* rerank: results asked for; 0 = all */
    int64_t id_slot; /* llama.cpp's id_slot: the slot asked for; -1 any */
};

/* The tokens of a w x h image by p's rule (docs/sim.md "Images"). */
uint32_t lt_sim_image_tokens(const struct lt_sim_profile *p, uint32_t w, uint32_t h);
/* The tokens of a video of frames w x h frames (docs/sim.md "Video"): its
 * frames merged video_temporal_patch at a time (Qwen2-VL's 2), each group
 * counted as one frame by the image rule, image_base_tokens once. */
uint32_t lt_sim_video_tokens(const struct lt_sim_profile *p, uint32_t w, uint32_t h,
                             uint32_t frames);

/* Parse a request body. Returns 0, or an HTTP status (400) with a message
 * for the client in msg. c must be released even on failure. */
int lt_sim_call_parse(struct lt_sim_call *c, enum lt_sim_api api, const char *body, size_t len,
                      const struct lt_sim_profile *p, char *msg, size_t msgsz);
void lt_sim_call_release(struct lt_sim_call *c);

/* POST /tokenize: the answer body, or an HTTP status with msg. */
int lt_sim_tokenize(struct lt_buf *out, const char *body, size_t len,
                    const struct lt_sim_profile *p, char *msg, size_t msgsz);
/* POST /v1/messages/count_tokens (Anthropic's): {"input_tokens": N}, the
 * prompt a Messages request of this body would have, or an HTTP status
 * with msg. */
int lt_sim_count_tokens(struct lt_buf *out, const char *body, size_t len,
                        const struct lt_sim_profile *p, char *msg, size_t msgsz);

/* The error body real servers send: {"error":{"message":..,"type":..,..}}. */
int lt_sim_error_body(struct lt_buf *out, int status, const char *msg);
/* Anthropic's: {"type":"error","error":{"type":..,"message":..}}. */
int lt_sim_error_body_messages(struct lt_buf *out, int status, const char *msg);

/* Everything the renderer needs to know about one response. */
struct lt_sim_resp {
    const struct lt_sim_dialect *d;
    enum lt_sim_api api;
    const char *id; /* "chatcmpl-12" */
    long long created;
    const char *model_json;
    uint64_t seq;
    uint32_t prompt_tokens, cached_tokens;
    uint32_t out, reasoning; /* reasoning: the first this-many tokens */
    bool tool_call;
    const char *tool_name_json;
    const char *finish; /* "stop", "length" or "tool_calls" */
    bool include_usage;
    /* Faults that keep the JSON valid but make it untrue (sim_faults.h):
     * chat and completions put "choices":"nope" in token chunk
     * bad_choices_at, or in the whole answer; usage claims claimed_out
     * output tokens instead of out (every API). */
    bool bad_choices, claim;
    uint32_t bad_choices_at;
    uint64_t claimed_out;
    bool claim_in; /* usage claims claimed_in prompt tokens (badprompt) */
    uint64_t claimed_in;
    uint32_t image_tokens;  /* of prompt_tokens: usage says them when > 0 */
    uint32_t audio_tokens;  /* of prompt_tokens: usage says them when > 0 */
    uint32_t video_tokens;  /* of prompt_tokens: usage says them when > 0 */
    uint32_t inputs, top_n; /* embeddings and rerank */
    uint32_t embed_dim;
    /* llama-server's "timings" (dialect llamacpp, chat and completions):
     * the model's prefill (admission to first token) and decode (first
     * token to last) in the server's ms, known once the last token is. */
    bool timings;
    double prompt_ms, predicted_ms;
};

/* Responses and Messages streams carry named events (event: lines) and
 * always end with usage; their first event (response.created,
 * message_start) is the head, a new output item or content block is
 * announced with the first token of its block, and the tail is
 * response.completed (or response.incomplete) with the whole response, or
 * content_block_stop, message_delta with usage and message_stop. The .done
 * events of Responses are left out: no reader needs them. */

/* SSE: the chunk before any token (role only; chat with role_chunk). */
int lt_sim_render_head(struct lt_buf *b, const struct lt_sim_resp *r);
/* SSE: the chunk of token i; malformed = broken JSON in its place. */
int lt_sim_render_token(struct lt_buf *b, const struct lt_sim_resp *r, uint32_t i, bool malformed);
/* SSE: what follows the last token (usage chunk if due, then [DONE]). */
int lt_sim_render_tail(struct lt_buf *b, const struct lt_sim_resp *r);
/* The whole non-streaming body. */
int lt_sim_render_full(struct lt_buf *b, const struct lt_sim_resp *r);

#endif

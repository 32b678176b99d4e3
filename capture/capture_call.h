/*
 * One request as capture sees it, from the request body to the end of its
 * response, reduced to the shape a trace record keeps. The proxy and the
 * log importer both fill one of these and hand it to the recorder; nothing
 * here knows about sockets or threads.
 *
 * What is kept: the API, model, max_tokens, the prompt's shape (role and
 * estimated tokens of each message), tool definitions (count, estimated
 * tokens), keyed prefix-block hashes, and from the response the usage
 * (prompt, output, reasoning, cached tokens), the finish reason and each
 * tool call's argument size. Text is kept only when asked (keep_content).
 * Headers are never looked at here, so no secret can reach a record.
 * Responses and Messages prompts are read as the chat turns they are
 * (instructions or system, user and assistant turns, tool calls and their
 * results), so a trace has one shape of prompt whatever the API.
 *
 * Ownership: the call owns every string and array it points to; the record
 * lt_capture_call_record() fills points into the call and is valid until
 * the call is freed.
 */
#ifndef LT_CAPTURE_CALL_H
#define LT_CAPTURE_CALL_H

#include "base/lt_buf.h"
#include "traces/trace_format.h"
#include "traces/trace_media.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum lt_capture_api {
    LT_CAPTURE_API_NONE = 0, /* passed through, not recorded */
    LT_CAPTURE_API_CHAT = 1,
    LT_CAPTURE_API_COMPLETIONS = 2,
    LT_CAPTURE_API_RESPONSES = 3,  /* OpenAI Responses (/v1/responses) */
    LT_CAPTURE_API_MESSAGES = 4,   /* Anthropic Messages (/v1/messages) */
    LT_CAPTURE_API_EMBEDDINGS = 5, /* /v1/embeddings: inputs, no output */
    LT_CAPTURE_API_RERANK = 6,     /* /v1/rerank, /rerank: a query and documents */
};

/* Which API a request path is ("/v1/chat/completions" -> CHAT,
 * "/v1/responses" -> RESPONSES, "/v1/messages" -> MESSAGES); the query
 * string, if any, is ignored. */
enum lt_capture_api lt_capture_api_of(const char *method, const char *path);

struct lt_capture_call_opts {
    uint64_t k0, k1;       /* the capture's secret key (block and session hashes) */
    uint32_t block_tokens; /* 0: no blocks */
    bool keep_content;     /* keep prompt and output text */
};

/* Bits lt_capture_call_chunk returns. */
enum {
    LT_CAPTURE_CHUNK_TOKEN = 1,      /* it carried content, reasoning or a tool-call delta */
    LT_CAPTURE_CHUNK_USAGE_ONLY = 2, /* usage with no choices: the chunk include_usage adds */
    LT_CAPTURE_CHUNK_DONE = 4,       /* "[DONE]" */
    LT_CAPTURE_CHUNK_BAD = 8,        /* not JSON */
};

#define LT_CAPTURE_MAX_CALLS 128
#define LT_CAPTURE_MAX_CHANGES 8

/* Where kept text (`text`, `out_text`) was cut to keep the record within
 * the reader's limit, this ends it (and `changed` says how long it was). */
#define LT_CAPTURE_CUT_MARK "\n[... cut by loadtrace capture]"

/* A value the record does not hold as it was sent (the extra key
 * `changed`, field -> what was sent: a number, or why when it was not
 * one). */
struct lt_capture_change {
    const char *field; /* static */
    int64_t sent;
    const char *why; /* static, or NULL: `sent` is the value */
};

struct lt_capture_call {
    struct lt_capture_call_opts o;
    enum lt_capture_api api;
    /* Set by the recorder or the log importer. */
    int64_t t; /* arrival, us from the trace start */
    bool has_session;
    uint64_t session;
    uint32_t turn;
    int64_t think;
    bool has_think;
    /* Filled from the request body. */
    bool req_json; /* the body was a JSON object */
    bool stream;
    bool usage_asked; /* stream_options.include_usage was true */
    bool has_stream_options;
    char *model;
    bool has_max_tokens;
    uint32_t max_tokens;
    struct lt_msg *msgs;
    uint32_t n_msgs;
    uint64_t *msg_hash; /* msg_hash[i]: keyed hash of messages 0..i */
    bool has_tools;
    uint32_t tools_count, tools_tokens;
    uint32_t in_est; /* estimated prompt tokens */
    uint64_t *blocks;
    uint32_t n_blocks;
    char *text; /* keep_content: the prompt */
    size_t text_len;
    size_t msgs_bytes; /* msgs as packed, at most */
    bool in_unknown;   /* the prompt could not be read: no estimate of `in` */
    /* Filled from the response. */
    bool usage; /* the server's usage was seen */
    uint32_t u_in, u_out, u_reasoning, u_cached;
    bool u_has_reasoning, u_has_cached;
    uint32_t tok_chunks, reason_chunks; /* token-bearing chunks, and of them reasoning */
    uint32_t out_est, reason_est;       /* estimated from text (whole bodies) */
    struct lt_buf *args; /* tool-call arguments by index (LT_CAPTURE_MAX_CALLS), lazily */
    uint32_t n_calls;
    bool in_tool_block;  /* Responses, Messages: a tool call's deltas are being read */
    uint32_t tool_block; /* ... of this output item or content block */
    char finish[24];
    struct lt_buf out_text; /* keep_content: the answer */
    size_t out_text_sent;   /* ... and its bytes as sent (more when cut) */
    struct lt_capture_change changed[LT_CAPTURE_MAX_CHANGES];
    uint32_t n_changed;
    /* What happened. */
    int status;        /* HTTP status the client got (0: none) */
    int64_t ttft, e2e; /* us, -1 when unknown */
    /* The client left before its answer ended (lt_capture_call_client_left):
     * this long after the request was sent (us), having been passed this
     * many output tokens; -1: it did not leave. */
    int64_t cancel_after, cancel_tokens;
    const char *err; /* error class (static string), NULL if none */
    /* Storage for lt_capture_call_record. */
    uint32_t *calls_tok;
    struct lt_buf extra;
    struct lt_buf scratch; /* a decoded string of the answer */
    /* The recorder's, while the request runs (lt_capture_recorder_started). */
    int64_t started_ns;
    bool begun_written;
    struct lt_capture_call *run_prev, *run_next;
    /* The request's media parts (capture_media.h), shapes only: n_media
     * of them, allocated to the count (most requests have none, and a
     * call lives as long as its stream: an array of LT_MEDIA_MAX in every
     * call was 3.5 KiB of each open stream). */
    struct lt_media *media;
    uint32_t n_media;
};

/* Allocate an empty call; NULL when out of memory. */
struct lt_capture_call *lt_capture_call_new(enum lt_capture_api api,
                                            const struct lt_capture_call_opts *o);
void lt_capture_call_free(struct lt_capture_call *c);

/* Read the request body. Returns 0, or LT_EFORMAT when it is not a JSON
 * object (req_json stays false; the request is still recorded). */
int lt_capture_call_request(struct lt_capture_call *c, const char *body, size_t len);
/* Read a parsed request (the log importer has the tree already). */
struct json_t;
int lt_capture_call_request_json(struct lt_capture_call *c, struct json_t *req);

/* One SSE data payload of a streamed response; returns LT_CAPTURE_CHUNK_*
 * bits. */
unsigned lt_capture_call_chunk(struct lt_capture_call *c, const char *data, size_t len);
/* A whole (non-streamed) response body, or its parsed tree. A chunk or a
 * body with an error object sets err to "upstream_error". */
int lt_capture_call_body(struct lt_capture_call *c, const char *body, size_t len);
int lt_capture_call_body_json(struct lt_capture_call *c, struct json_t *resp);
/* Take usage from a usage object (also used by the log importer). */
void lt_capture_call_usage(struct lt_capture_call *c, struct json_t *usage);

/* Note that field is not recorded as sent (sent, or why when not a
 * number); a second note of the same field replaces the first. */
void lt_capture_call_changed(struct lt_capture_call *c, const char *field, int64_t sent,
                             const char *why);

/* Fill rec from the call (pointers into c). A record that would pass the
 * trace reader's limits has its kept text, then its answer text, then its
 * message list cut to fit, each cut noted in `changed`. Returns 0 or
 * LT_ENOMEM. */
int lt_capture_call_record(struct lt_capture_call *c, struct lt_record *rec);

/* The client disconnected after_us after its request was sent (-1: when is
 * unknown), before its answer ended: the record says where (cancel_after,
 * and cancel_tokens, the output tokens of the answer so far: the server's
 * running usage if it sent one, else the token-bearing chunks; a whole
 * answer, which had not come, 0), so that replay can leave at the same
 * point. */
void lt_capture_call_client_left(struct lt_capture_call *c, int64_t after_us);

/* The record of a request that has not finished (`err: "unfinished"`,
 * failed): what the request said, nothing of the answer. Reads only what
 * lt_capture_call_request set, so it may run while the answer is being
 * read on another thread; its extra keys go to extra. Returns 0 or
 * LT_ENOMEM. */
int lt_capture_call_record_unfinished(const struct lt_capture_call *c, struct lt_record *r,
                                      struct lt_buf *extra);

/* The request body with `"stream_options":{"include_usage":true}` added at
 * the front of its top-level object, into out. Returns 0, or LT_EINVAL when
 * the body does not start with an object. */
int lt_capture_add_usage_option(const char *body, size_t len, struct lt_buf *out);

#endif

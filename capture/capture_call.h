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
 *
 * Ownership: the call owns every string and array it points to; the record
 * lt_capture_call_record() fills points into the call and is valid until
 * the call is freed.
 */
#ifndef LT_CAPTURE_CALL_H
#define LT_CAPTURE_CALL_H

#include "traces/lt_buf.h"
#include "traces/trace_format.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum lt_capture_api {
    LT_CAPTURE_API_NONE = 0, /* passed through, not recorded */
    LT_CAPTURE_API_CHAT = 1,
    LT_CAPTURE_API_COMPLETIONS = 2,
};

/* Which API a request path is ("/v1/chat/completions" -> CHAT); the query
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
    /* Filled from the response. */
    bool usage; /* the server's usage was seen */
    uint32_t u_in, u_out, u_reasoning, u_cached;
    bool u_has_reasoning, u_has_cached;
    uint32_t tok_chunks, reason_chunks; /* token-bearing chunks, and of them reasoning */
    uint32_t out_est, reason_est;       /* estimated from text (whole bodies) */
    struct lt_buf *args; /* tool-call arguments by index (LT_CAPTURE_MAX_CALLS), lazily */
    uint32_t n_calls;
    char finish[24];
    struct lt_buf out_text; /* keep_content: the answer */
    /* What happened. */
    int status;        /* HTTP status the client got (0: none) */
    int64_t ttft, e2e; /* us, -1 when unknown */
    const char *err;   /* error class (static string), NULL if none */
    /* Storage for lt_capture_call_record. */
    uint32_t *calls_tok;
    struct lt_buf extra;
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
/* A whole (non-streamed) response body, or its parsed tree. */
int lt_capture_call_body(struct lt_capture_call *c, const char *body, size_t len);
int lt_capture_call_body_json(struct lt_capture_call *c, struct json_t *resp);
/* Take usage from a usage object (also used by the log importer). */
void lt_capture_call_usage(struct lt_capture_call *c, struct json_t *usage);

/* Fill rec from the call (pointers into c). Returns 0 or LT_ENOMEM. */
int lt_capture_call_record(struct lt_capture_call *c, struct lt_record *rec);

/* The request body with `"stream_options":{"include_usage":true}` added at
 * the front of its top-level object, into out. Returns 0, or LT_EINVAL when
 * the body does not start with an object. */
int lt_capture_add_usage_option(const char *body, size_t len, struct lt_buf *out);

#endif

/*
 * loadtrace capture --from-log: request logs that gateways already keep,
 * turned into the trace records the proxy would have written, under the
 * same privacy rules (no header is kept, text only with keep_content,
 * keyed block hashes whose key is drawn per run and never stored).
 *
 * Input: JSON lines, one request per line, in the OpenAI style most
 * gateways log (docs in capture/README.md). The keys looked for:
 *   request   "request" | "request_body" | "body" | "req": the request body
 *             (an object, or a string holding one);
 *   response  "response" | "response_body" | "resp" | "output": the
 *             response body (an object, a string holding one, or the SSE
 *             text of a stream); the OpenAI batch form
 *             {"status_code": S, "body": {...}} is unwrapped;
 *   usage     response.usage, else a top-level "usage";
 *   api       "url" | "path" | "endpoint" (a path), else from the body
 *             ("messages": chat, "prompt": completions);
 *   times     start: "start_time" | "startTime" | "request_time" |
 *             "timestamp" | "time" | "created_at"; end: "end_time" |
 *             "endTime" | "response_time"; first token:
 *             "completion_start_time" | "completionStartTime" |
 *             "first_token_time". A time is RFC 3339 / "YYYY-MM-DD
 *             HH:MM:SS[.f]" (UTC) or a number of seconds, milliseconds or
 *             microseconds since the epoch (told apart by size). Durations
 *             "ttft_ms", "latency_ms", "duration_ms" (ms) or "ttft",
 *             "latency", "duration" (s) stand in for missing times;
 *   status    "status_code" | "status" (a number), else the batch form's.
 *   headers   "headers" | "request_headers": read only for the session
 *             header, never stored.
 * Lines are sorted by start time (in memory, at most max_records).
 */
#ifndef LT_CAPTURE_LOG_H
#define LT_CAPTURE_LOG_H

#include "base/lt_err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lt_capture_log_opts {
    const char *input;          /* the log ("-": standard input) */
    const char *output;         /* the trace file */
    const char *session_header; /* NULL: sessions inferred */
    bool keep_content;
    uint32_t block_tokens; /* 0: 512 */
    bool skip_bad;         /* skip lines that cannot be read (reported) */
    size_t max_records;    /* 0: 4,000,000 */
    void (*on_skip)(void *ud, const char *msg);
    void *ud;
};

struct lt_capture_log_stats {
    uint64_t lines, records, skipped;
};

/* Read the whole log and write the trace. Returns 0 or a negative LT_E*
 * code with err filled (naming the line). */
int lt_capture_from_log(const struct lt_capture_log_opts *o, struct lt_capture_log_stats *st,
                        struct lt_err *err);

#endif

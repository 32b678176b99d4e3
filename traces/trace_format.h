/*
 * The loadtrace file format, version 2, in memory. docs/trace-format.md is
 * the normative description of the bytes; this header is its C mirror.
 *
 * A file is a sequence of zstd frames whose concatenated content is a stream
 * of msgpack maps: one header, then either trace records (kind "trace") or
 * run records and result records (kind "results"); results may be packed as
 * columns into result blocks (version 2), which the reader expands, so a
 * caller sees one struct lt_result per result either way. A frame always
 * holds whole values, so every intact frame of a damaged file can be read.
 *
 * Optional fields are present when their LT_HAS_* bit is set in `has`;
 * strings and arrays are NULL when absent. Keys a reader does not know are
 * kept, as raw msgpack key/value pairs, in `extra`, and a writer writes them
 * back, so tools that copy records never lose what newer tools added.
 */
#ifndef LT_TRACE_FORMAT_H
#define LT_TRACE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LT_FORMAT_NAME "loadtrace"
/* The newest format version this loadtrace reads (and writes, for results
 * files with result blocks; trace files are still written as version 1). */
#define LT_FORMAT_VERSION 2
#define LT_DEFAULT_BLOCK_TOKENS 512

enum lt_kind {
    LT_KIND_TRACE = 1,
    LT_KIND_RESULTS = 2,
};

/* Raw msgpack key/value pairs a reader did not recognise (or a writer wants
 * to add): `n` pairs, `len` bytes, no map header. */
struct lt_extra {
    const uint8_t *data;
    size_t len;
    uint32_t n;
};

struct lt_header {
    enum lt_kind kind;
    uint32_t version;      /* format version the file was written with */
    const char *created;   /* RFC 3339 UTC */
    const char *source;    /* "capture", "import:azure", "synth", "replay", ... */
    uint32_t block_tokens; /* tokens per prefix block; 0 = no blocks */
    const uint8_t *meta;   /* a raw msgpack map (free-form), or NULL */
    size_t meta_len;
    struct lt_extra extra;
};

/* Presence bits of struct lt_record. */
enum {
    LT_HAS_SESSION = 1u << 0,
    LT_HAS_TURN = 1u << 1,
    LT_HAS_THINK = 1u << 2,
    LT_HAS_IN = 1u << 3,
    LT_HAS_CACHED = 1u << 4,
    LT_HAS_OUT = 1u << 5,
    LT_HAS_REASONING = 1u << 6,
    LT_HAS_MAX_TOKENS = 1u << 7,
    LT_HAS_MSGS = 1u << 8,
    LT_HAS_TOOLS = 1u << 9,
    LT_HAS_CALLS = 1u << 10,
    LT_HAS_BLOCKS = 1u << 11,
    LT_HAS_ORIG_STATUS = 1u << 12,
    LT_HAS_ORIG_TTFT = 1u << 13,
    LT_HAS_ORIG_E2E = 1u << 14,
    LT_HAS_FAILED = 1u << 15,    /* the original request failed */
    LT_HAS_ESTIMATED = 1u << 16, /* token counts are estimates, not server usage */
};

#define LT_ROLE_MAX 15

/* One message of a prompt: its role and its length in tokens. */
struct lt_msg {
    char role[LT_ROLE_MAX + 1]; /* "system", "user", "assistant", "tool", ... */
    uint32_t tokens;
};

/* One request of a trace. Times are microseconds. */
struct lt_record {
    uint32_t has;          /* LT_HAS_* bits */
    int64_t t;             /* arrival, from the trace start (required) */
    uint64_t session;      /* conversation id */
    uint32_t turn;         /* 0-based turn within the session */
    int64_t think;         /* previous turn's end to this request */
    const char *api;       /* "chat", "completions", ... or NULL */
    const char *model;     /* or NULL */
    uint32_t in;           /* prompt tokens */
    uint32_t cached;       /* prompt tokens served from a prefix cache */
    uint32_t out;          /* output tokens, all of them */
    uint32_t reasoning;    /* the part of out that was reasoning */
    uint32_t max_tokens;
    uint32_t n_msgs;
    const struct lt_msg *msgs;
    uint32_t tools_count;  /* tool definitions offered ... */
    uint32_t tools_tokens; /* ... and their size in tokens */
    uint32_t n_calls;      /* tool calls in the response ... */
    const uint32_t *calls; /* ... and each one's argument tokens */
    uint32_t n_blocks;
    const uint64_t *blocks; /* prefix block hashes, block_tokens each */
    int32_t orig_status;    /* what the original server answered */
    int64_t orig_ttft;
    int64_t orig_e2e;
    const char *finish;     /* original finish reason, or NULL */
    const char *text;       /* prompt text (only when content was kept), or NULL */
    size_t text_len;
    struct lt_extra extra;
};

/* A run record of a results file: one per run (one concurrency level of a
 * sweep, one rate, one trace-time replay). */
struct lt_run {
    uint32_t id;
    const char *mode;     /* "trace", "concurrency", "rate" */
    uint32_t concurrency; /* 0 = not a closed-loop run */
    double rate;          /* requests/s asked for; 0 = not set */
    double speed;         /* trace-time multiplier; 0 = not set */
    const char *target;   /* URL or "sim" */
    const char *model;
    const char *start;    /* RFC 3339 wall-clock time of the run's time origin */
    const char *version;  /* loadtrace version that ran it */
    uint32_t warmup;      /* leading requests recorded but excluded */
    struct lt_extra extra;
};

/* Presence bits of struct lt_result. */
enum {
    LT_RHAS_SENT = 1u << 0,
    LT_RHAS_FIRST_BYTE = 1u << 1,
    LT_RHAS_FIRST_TOKEN = 1u << 2,
    LT_RHAS_FIRST_CONTENT = 1u << 3,
    LT_RHAS_END = 1u << 4,
    LT_RHAS_IN = 1u << 5,
    LT_RHAS_OUT = 1u << 6,
    LT_RHAS_REASONING = 1u << 7,
    LT_RHAS_CACHED = 1u << 8,
    LT_RHAS_WANT_IN = 1u << 9,
    LT_RHAS_WANT_OUT = 1u << 10,
    LT_RHAS_STATUS = 1u << 11,
    LT_RHAS_CHUNKS = 1u << 12,
};

/* One streamed chunk that carried tokens. */
struct lt_chunk {
    int64_t t;       /* arrival, microseconds from the run's time origin */
    uint32_t tokens; /* tokens it carried */
};

/* What happened to one request in a run. Times are microseconds from the
 * run's time origin; `sched` is always present. */
struct lt_result {
    uint32_t has;     /* LT_RHAS_* bits */
    uint32_t run;     /* id of the run record this belongs to */
    uint64_t index;   /* index of the request's record in the trace */
    int64_t sched;    /* when it was meant to be sent */
    int64_t sent;     /* when its first byte was handed to the socket layer */
    int64_t first_byte;
    int64_t first_token;   /* first token-bearing chunk */
    int64_t first_content; /* first content (not reasoning) chunk */
    int64_t end;           /* last byte */
    uint32_t n_chunks;
    const struct lt_chunk *chunks;
    uint32_t in, out, reasoning, cached; /* as the server reported (or as counted) */
    uint32_t want_in, want_out;          /* what the trace asked for */
    int32_t status;                      /* HTTP status */
    const char *err;    /* error class ("connect", "timeout", "http", ...), NULL if ok */
    const char *finish; /* finish reason */
    const char *count;  /* where token counts came from: "usage" or "chunks" */
    bool warmup;        /* recorded, but excluded from the figures */
    struct lt_extra extra;
};

#endif

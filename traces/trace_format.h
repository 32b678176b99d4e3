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
 * files: result blocks and scrape samples; trace files are still written as
 * version 1). */
#define LT_FORMAT_VERSION 3
#define LT_DEFAULT_BLOCK_TOKENS 512

/* The limits of a file (docs/trace-format.md §1), in one place: the reader
 * refuses a value past them (its defaults; lt_reader_opts may lower them),
 * and the writer refuses to write one, so that whatever loadtrace writes
 * it can read back. */
#define LT_LIMIT_VALUE_BYTES (16u << 20) /* one value, packed */
#define LT_LIMIT_FRAME_BYTES (64u << 20) /* one frame, decompressed */
#define LT_LIMIT_ARRAY 1000000u          /* elements of one array or map */
#define LT_LIMIT_ELEMS 4000000u          /* elements of one value, nested ones included */
#define LT_LIMIT_DEPTH 32                /* nesting of one value, its own map included */
/* The chunks one result can hold: two elements each in one array. */
#define LT_RESULT_CHUNKS_MAX (LT_LIMIT_ARRAY / 2)

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
    LT_HAS_FAILED = 1u << 15,        /* the original request failed */
    LT_HAS_ESTIMATED = 1u << 16,     /* token counts are estimates, not server usage */
    LT_HAS_CANCEL_AFTER = 1u << 17,  /* the client left mid-stream, after ... */
    LT_HAS_CANCEL_TOKENS = 1u << 18, /* ... and after this many output tokens */
};

#define LT_ROLE_MAX 15

/* One message of a prompt: its role and its length in tokens. */
struct lt_msg {
    char role[LT_ROLE_MAX + 1]; /* "system", "user", "assistant", "tool", ... */
    uint32_t tokens;
};

/* One request of a trace. Times are microseconds. */
struct lt_record {
    uint32_t has;           /* LT_HAS_* bits */
    int64_t t;              /* arrival, from the trace start (required) */
    uint64_t session;       /* conversation id */
    const char *session_id; /* the source's own name of the session, or NULL */
    uint32_t turn;          /* 0-based turn within the session */
    int64_t think;          /* previous turn's end to this request */
    const char *api;        /* "chat", "completions", ... or NULL */
    const char *model;      /* or NULL */
    uint32_t in;            /* prompt tokens */
    uint32_t cached;        /* prompt tokens served from a prefix cache */
    uint32_t out;           /* output tokens, all of them */
    uint32_t reasoning;     /* the part of out that was reasoning */
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
    int64_t cancel_after;   /* the client disconnected this long after sending */
    uint32_t cancel_tokens; /* ... having received this many output tokens */
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
    const char *start;   /* RFC 3339 wall-clock time of the run's time origin */
    const char *version; /* loadtrace version that ran it */
    uint32_t warmup;     /* leading requests recorded but excluded */
    /* A probe of a capacity search (replay --find-max; NULL / 0 otherwise):
     * its axis ("rate" or "concurrency"), engine ("live" or "virtual"),
     * load, the SLO and the share that must meet it, and the part of the
     * trace it replays when not the whole (window), all known when it
     * starts. What its results decided comes after them, in its verdict
     * record (struct lt_verdict); a file written before verdict records
     * has those figures here instead: the share that met the SLO, its
     * interval, the verdict and why. */
    const char *search;
    const char *engine;
    double load;
    const char *slo;
    double attain_target;
    const char *window;
    double attain, attain_lo, attain_hi;
    const char *verdict;
    const char *why; /* a probe stopped early: why, with the figures */
    struct lt_extra extra;
};

/* A capacity probe's verdict (kind "results", "rec": "verdict"), written
 * after the probe's results, once they are judged (docs/trace-format.md
 * §2.9): the share of its judged requests that met the SLO (pooled with
 * the repeats before it at this load), its 95 % Wilson interval, the
 * verdict ("meets", "fails", "faulted", "saturated", or "repeat": the
 * interval straddled the target, run again) and, for a probe stopped
 * early, why. A probe without one decided nothing. */
struct lt_verdict {
    uint32_t run;
    double attain, attain_lo, attain_hi;
    const char *verdict;
    const char *why;
    struct lt_extra extra;
};

/* A capacity search's answer (kind "results", "rec": "answer"), written
 * once, after its last probe (docs/trace-format.md §2.10): how it ended
 * ("found", "max-probes", "max-time", "faults", "fails-at-floor",
 * "meets-at-ceiling", "stopped"), the engine whose answer it is ("live",
 * or "virtual" for a search in virtual time alone), the highest load that
 * met the SLO and the lowest that failed it (0: none), goodput at the
 * former, the probes and the time it took, and, when the model's search
 * of the whole trace chose the live probes' window, that search's answer.
 * Virtual first's estimate of what it saved: 0 when it saved nothing. */
struct lt_answer {
    const char *end;
    const char *engine;
    double max, fail, goodput;
    uint32_t probes, virtual_probes;
    double wall_s, virtual_cpu_s;
    double whole_max, whole_fail;
    double probes_saved, wall_s_saved;
    struct lt_extra extra;
};

/* One named value of a scrape sample: a canonical quantity
 * ("requests_running", docs/server-metrics.md) or a raw series
 * ("name{label=\"v\"}"). */
struct lt_scrape_val {
    const char *name;
    double v;
};

/* A histogram of a scrape sample: n cumulative counts cum[] at ascending
 * finite bounds le[] (the +Inf bucket is `count`), in seconds. */
struct lt_scrape_hist {
    const char *name;
    double sum, count;
    uint32_t n;
    const double *le, *cum;
};

/* A scrape sample (kind "results", "rec": "scrape"): one GET of a metrics
 * endpoint during run `run`, at client time t (µs on the run's clock, as
 * a result's sent). A failed scrape has err and no values. */
struct lt_scrape {
    uint32_t run;
    int64_t t;                     /* when the request was sent */
    int64_t dur;                   /* µs from t to the whole page (or the error) */
    const char *ep;                /* the endpoint's URL */
    const char *server;            /* "vllm", "sglang", ... (detected), NULL: unknown */
    const char *err;               /* NULL when the page was read and parsed */
    const struct lt_scrape_val *v; /* canonical scalars; NULL when none */
    uint32_t nv;
    const struct lt_scrape_hist *h; /* canonical histograms; NULL when none */
    uint32_t nh;
    const struct lt_scrape_val *raw; /* --server-metrics-keep series; NULL when none */
    uint32_t nraw;
    struct lt_extra extra;
};

/* A run's self-check (kind "results", "rec": "check"), written at the
 * run's end (docs/trace-format.md §2.8): the load it delivered against
 * the load asked for, and what the client itself cost. */
struct lt_check {
    uint32_t run;
    uint64_t requests;      /* results recorded in the run */
    uint64_t sent;          /* of them, sent */
    uint64_t out_tokens;    /* output tokens received */
    double rate_asked;      /* req/s of the sent requests' schedule; 0 in a closed loop */
    double rate_got;        /* req/s of their sends */
    double inflight_asked;  /* closed loop: the level; 0 in a batch and in trace time */
    double inflight_got;    /* closed loop: mean in flight while the plan held the level */
    double span_s;          /* last send - first send, seconds */
    double cpu_s, wall_s;   /* the client's CPU (its engine thread), and the run's wall time */
    bool off;               /* the delivered load is more than 5 % off what was asked */
    bool saturated;         /* the client used 90 % or more of a core */
    bool batch;             /* closed loop with no more requests than the level: no load to hold */
    uint64_t unsent;        /* stopped: results never sent (neither ok nor errors) */
    double stopped_at_s;    /* stopped: when, since the run's origin */
    const char *stopped_by; /* "SIGINT", "SIGTERM", "caller"; NULL: ran to its end */
    /* The server's image tokens (its usage's prompt_tokens_details) against
     * the records': requests compared, of them equal, and the two totals;
     * requests with recorded image tokens whose usage said none. */
    uint64_t img_checked, img_exact, img_want, img_got, img_unreported;
    uint64_t vid_checked, vid_exact, vid_want, vid_got; /* the same of video tokens */
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
    uint32_t has;   /* LT_RHAS_* bits */
    uint32_t run;   /* id of the run record this belongs to */
    uint64_t index; /* index of the request's record in the trace */
    int64_t sched;  /* when it was meant to be sent */
    int64_t sent;   /* when its first byte was handed to the socket layer */
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
    /* A failed request's answer as the server wrote it (its first 512
     * bytes, printable ASCII; NULL when there was none): its words. */
    const char *err_body;
    bool warmup; /* recorded, but excluded from the figures */
    /* Closed on purpose where the trace's record said its client left
     * (cancel_after, cancel_tokens): not an error (err is NULL), the
     * times and chunks are those received until then. */
    bool cancelled;
    struct lt_extra extra;
};

#endif

/*
 * loadtrace capture: a recording reverse proxy for OpenAI-compatible LLM
 * servers.
 *
 * It listens with libmicrohttpd (one thread per client connection, so a
 * slow client only ever blocks its own thread) and forwards every request,
 * whatever its path, to the upstream with libcurl: method, headers (less
 * the hop-by-hop ones), body, and back the status, headers and body, the
 * body chunk by chunk as it arrives. POST requests to .../chat/completions
 * and .../completions are also recorded, as trace records in arrival order
 * (capture_recorder.h), with the shape capture_call.h describes.
 *
 * Privacy: no header is ever recorded or printed, so Authorization,
 * api-key and cookies cannot leak; prompt and answer text are recorded only
 * with keep_content; prefix blocks and session ids are keyed hashes whose
 * key is drawn at start and never stored; the upstream URL goes into the
 * header's meta as scheme://host:port only (no user, password or query).
 */
#ifndef LT_CAPTURE_PROXY_H
#define LT_CAPTURE_PROXY_H

#include "base/lt_err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lt_record;

struct lt_capture_opts {
    const char *listen;         /* "HOST:PORT" or "[V6]:PORT"; NULL: 127.0.0.1:8080; port 0: any */
    const char *upstream;       /* base URL, http:// or https:// (TLS is always verified); a
                                 * path is a prefix; no query or fragment */
    const char *output;         /* the trace file */
    const char *session_header; /* header naming the session; NULL: inferred */
    const char *cacert;         /* CA bundle for an https upstream; NULL: the system's */
    bool keep_content;          /* record prompt and answer text */
    bool no_usage;              /* never ask the upstream for usage the client did not ask for */
    size_t max_body;            /* request body limit (413 beyond); 0: 32 MiB */
    size_t max_pending;         /* all request bodies held at once (503 beyond);
                                 * 0: 4 x max_body, at least 256 MiB */
    uint32_t block_tokens;      /* prefix block size in estimated tokens; 0: 512 */
    unsigned max_connections;   /* 0: 16384 */
    unsigned threads;           /* event loops (a thread each, clients and upstream); 0: 1 */
    int64_t connect_timeout_us; /* upstream connect timeout; 0: 10 s */
    uint32_t max_held;          /* finished records held for ordering; 0: 65536 */
    /* Each finished record as written, on the writer thread (NULL: none):
     * what a live view counts (capture_recorder.h, watch). */
    void (*on_record)(void *ud, const struct lt_record *rec);
    void *on_record_ud;
};

struct lt_capture_stats {
    uint64_t requests; /* requests proxied (all paths) */
    uint64_t recorded; /* records that reached the file */
    uint64_t dropped;  /* not recorded: too many held */
    uint64_t lost;     /* records that did not reach the file (never finished, or a write failed) */
    uint64_t chunks;   /* SSE events relayed */
    uint64_t client_gone;     /* clients that left before their response ended */
    uint64_t upstream_failed; /* upstream unreachable or cut */
    uint64_t too_large;       /* 413 answers */
    uint64_t busy;            /* 503 answers: the bodies held reached max_pending */
    uint64_t changed;         /* records with values not as sent, or text cut (`changed`) */
};

struct lt_capture;

/* Create the trace file, bind, and start serving in background threads.
 * Returns NULL with err filled on failure. */
struct lt_capture *lt_capture_start(const struct lt_capture_opts *o, struct lt_err *err);
/* The port it listens on (useful with port 0). */
uint16_t lt_capture_port(const struct lt_capture *c);
/* True once a write of the trace failed (err, if not NULL, gets it): from
 * then on requests are relayed but not recorded. */
bool lt_capture_write_failed(const struct lt_capture *c, struct lt_err *err);
/* Counters so far. */
void lt_capture_get_stats(const struct lt_capture *c, struct lt_capture_stats *st);
/* What a live view reads while capture runs: the counters so far (with
 * recorded: written so far), and the state now. Any thread. */
struct lt_capture_live {
    struct lt_capture_stats st;
    uint64_t active;      /* requests begun and not finished */
    uint64_t connections; /* client connections open */
    uint64_t bytes_out;   /* response bytes handed to the clients */
    uint64_t backlog;     /* finished records waiting for the trace writer */
};
void lt_capture_get_live(const struct lt_capture *c, struct lt_capture_live *l);
/* Drain: stop accepting connections (the listening socket is closed;
 * connections already open are still served) and answer /healthz with
 * 503. Requests in flight go on; lt_capture_active says how many. */
void lt_capture_quiesce(struct lt_capture *c);
uint64_t lt_capture_active(const struct lt_capture *c);
/* Stop: requests in progress are cut (and recorded as such), every finished
 * record is written, the file is closed and c is freed. Returns 0 or the
 * first error writing the trace. */
int lt_capture_stop(struct lt_capture *c, struct lt_capture_stats *st, struct lt_err *err);

/* Helpers shared with the log importer. */
/* 128 bits from the system's random source. */
int lt_capture_new_key(uint64_t *k0, uint64_t *k1, struct lt_err *err);
/* "scheme://host[:port]" of url, without user, password, path or query. */
void lt_capture_url_origin(const char *url, char *out, size_t outsz);

#endif

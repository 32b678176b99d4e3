/*
 * Fault injection for the sim: which request gets which failure. Every
 * inference request (POST /v1/chat/completions or /v1/completions) draws
 * one number from a generator seeded by (seed, request sequence number), so
 * a run with the same seed and the same request order fails the same way.
 * The probabilities are bands of [0, 1) in the order of enum lt_sim_fault,
 * so at most one fault hits a request and their sum must be <= 1.
 *
 * Spec: comma-separated items (durations: 250ms, 2s, 1500us; bare = s)
 *   500=P  503=P[:RETRY_S]  429=P[:RETRY_S]   error status with a JSON body
 *   refuse=P[:DUR]          refuse connections for DUR (default 1s), and
 *                           once they are, close this one unanswered
 *   disconnect=P[:N]        cut the stream after N tokens (default 10)
 *   stall=P[:DUR[:N]]       hold the stream for DUR (default 2s) after N
 *                           tokens (default 5)
 *   malformed=P[:N]         token chunk N (default 3) is broken JSON
 *   slow=P[:DUR]            first byte only DUR (default 1s) after arrival
 *   bighead=P[:BYTES]       the answer's headers carry BYTES (default 2 MiB)
 *                           of padding, then the answer as usual
 *   badchoices=P[:N]        token chunk N (default 3), or a whole answer, has
 *                           "choices":"nope" (valid JSON, wrong shape)
 *   badusage=P[:N]          usage claims N output tokens (default 2^64-1)
 *                           whatever was sent
 *   liesize=P[:BYTES]       a whole answer's Content-Length claims BYTES
 *                           (default 100) more than it sends, then the
 *                           connection closes (a stream it hits is sent as
 *                           usual: streams have no length)
 *   badchunk=P[:N]          a stream's HTTP chunk holding token chunk N
 *                           (default 3) has a size line that is not hex
 *                           (the stream is framed by the sim itself, and the
 *                           connection closed after it)
 *   lfhead=P                a stream's head lines end in LF alone, as RFC
 *                           9112 lets a recipient accept (framed by hand,
 *                           as badchunk)
 *   bigstatus=P             a stream's status line says
 *                           2000000000000000000000000000 (framed by hand)
 *   interim=P[:N]           N interim heads "102 Processing" (default 1000)
 *                           before a stream's head (framed by hand)
 *   badprompt=P[:N]         usage claims N prompt tokens (default 2^64-1)
 *                           whatever was sent
 *   seed=N                  generator seed (default: the sim's seed)
 *
 * GET /metrics has faults of its own, drawn per scrape from (seed, scrape
 * number) in a band of their own, so they change no inference request's
 * draw (and the two sums are each at most 1):
 *   metrics-html=P          the page is HTML (200, text/html), as a web UI
 *                           or a login page in front of the server answers
 *   metrics-big=P[:BYTES]   the true page, then comment lines up to BYTES
 *                           (default 8 MiB, at most 64 MiB): over any
 *                           scraper's page limit, valid all the same
 *   metrics-slow=P[:DUR]    the page only DUR (default 30s) after the
 *                           request: an endpoint that does not answer
 *
 * New faults go at the end of the enum, so that a spec without them draws
 * the same faults for the same seed as before.
 */
#ifndef LT_SIM_FAULTS_H
#define LT_SIM_FAULTS_H

/* The most interim heads interim may send before an answer. */
#define LT_SIM_FAULT_INTERIM_MAX 100000u
/* The most padding bighead may add to an answer's headers. */
#define LT_SIM_FAULT_BIGHEAD_MAX (64u << 20)

#include "base/lt_err.h"

#include <stdbool.h>
#include <stdint.h>

enum lt_sim_fault {
    LT_SIM_FAULT_NONE,
    LT_SIM_FAULT_500,
    LT_SIM_FAULT_503,
    LT_SIM_FAULT_429,
    LT_SIM_FAULT_REFUSE,
    LT_SIM_FAULT_DISCONNECT,
    LT_SIM_FAULT_STALL,
    LT_SIM_FAULT_MALFORMED,
    LT_SIM_FAULT_SLOW,
    LT_SIM_FAULT_BIGHEAD,
    LT_SIM_FAULT_BADCHOICES,
    LT_SIM_FAULT_BADUSAGE,
    LT_SIM_FAULT_LIESIZE,
    LT_SIM_FAULT_BADCHUNK,
    LT_SIM_FAULT_LFHEAD,
    LT_SIM_FAULT_BIGSTATUS,
    LT_SIM_FAULT_INTERIM,
    LT_SIM_FAULT_BADPROMPT,
    LT_SIM_FAULT_COUNT
};

/* The answer a GET /metrics is given: the metrics-* items above. */
enum lt_sim_mfault {
    LT_SIM_MFAULT_NONE,
    LT_SIM_MFAULT_HTML,
    LT_SIM_MFAULT_BIG,
    LT_SIM_MFAULT_SLOW,
    LT_SIM_MFAULT_COUNT
};

/* The most bytes metrics-big may make a page. */
#define LT_SIM_MFAULT_BIG_MAX (64u << 20)

struct lt_sim_faults {
    double p[LT_SIM_FAULT_COUNT];
    double mp[LT_SIM_MFAULT_COUNT]; /* metrics faults, their own band */
    uint32_t mbig_bytes;
    int64_t mslow_us;
    bool many;                                 /* some metrics fault has a probability above 0 */
    uint32_t retry_after_503, retry_after_429; /* seconds */
    int64_t refuse_us;
    uint32_t disconnect_after;
    int64_t stall_us;
    uint32_t stall_after;
    uint32_t malformed_after;
    int64_t slow_us;
    uint32_t bighead_bytes;
    uint32_t badchoices_after;
    uint64_t badusage_tokens;
    uint32_t liesize_bytes;
    uint32_t badchunk_after;
    uint32_t interim_heads;
    uint64_t badprompt_tokens;
    uint64_t seed;
    bool seed_set;
    bool any;
};

/* Parse spec (NULL or "" = no faults) into f with the defaults above.
 * Returns 0 or LT_EFORMAT with the offending item in err. */
int lt_sim_faults_parse(struct lt_sim_faults *f, const char *spec, struct lt_err *err);

/* The fault for inference request number seq. */
enum lt_sim_fault lt_sim_faults_pick(const struct lt_sim_faults *f, uint64_t seq);

/* The fault for GET /metrics number seq (from 1). */
enum lt_sim_mfault lt_sim_faults_pick_metrics(const struct lt_sim_faults *f, uint64_t seq);

/* "none", "metrics-html", "metrics-big", "metrics-slow". */
const char *lt_sim_mfault_name(enum lt_sim_mfault k);

/* "none", "500", "503", "429", "refuse", "disconnect", "stall", "malformed", "slow",
 * "bighead", "badchoices", "badusage", "liesize", "badchunk", "lfhead", "bigstatus",
 * "interim", "badprompt". */
const char *lt_sim_fault_name(enum lt_sim_fault k);

#endif

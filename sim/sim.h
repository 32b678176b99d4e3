/*
 * loadtrace sim: a simulated OpenAI-compatible LLM server whose token
 * timing follows the continuous-batching model of sim_model.h. It is a real
 * HTTP server (libmicrohttpd) so that replay, capture and tests talk to it
 * exactly as they would to vLLM or SGLang; it can also be embedded: replay
 * and demo start one inside their own process on a free loopback port.
 *
 * Threads: libmicrohttpd's network threads (one by default, or a pool:
 * opts.threads) parse requests and write streams; one more thread keeps
 * time: it advances the model in real time, resumes suspended streams when
 * their tokens are due and runs the fault timers. One mutex guards the
 * state, so lt_sim_stats and lt_sim_stop may be called from any thread.
 */
#ifndef LT_SIM_H
#define LT_SIM_H

#include "sim/sim_profile.h"
#include "base/lt_err.h"

#include <stddef.h>
#include <stdint.h>

struct lt_sim_opts {
    const char *host;                          /* address to bind; NULL = "127.0.0.1" */
    uint16_t port;                             /* 0 = any free port (see lt_sim_port) */
    const char *profile;                       /* built-in name or profile file; NULL = "default" */
    const struct lt_sim_profile *profile_data; /* used instead of profile if set */
    const char *dialect;                       /* comma list (docs/sim.md); NULL = "vllm" */
    const char *faults;                        /* fault spec (docs/sim.md); NULL = none */
    const char *log_path;                      /* JSON lines of every request; NULL = none */
    double time_scale;                         /* model runs this many times faster; 0 = 1 */
    uint64_t seed;                             /* output lengths and faults */
    size_t max_body;                           /* request body limit, bytes; 0 = 4 MiB */
    size_t max_pending;       /* all bodies in memory at once; 0 = 256 MiB or 4 x max_body */
    unsigned max_connections; /* 0 = 16384 */
    unsigned threads;         /* network threads; 0 = 1 */
};

struct lt_sim;

/* Start a server. Returns NULL and fills err when the options are wrong or
 * the address cannot be bound. The server runs until lt_sim_stop. */
struct lt_sim *lt_sim_start(const struct lt_sim_opts *o, struct lt_err *err);

/* The TCP port the server listens on. */
uint16_t lt_sim_port(const struct lt_sim *s);

/* The profile in use (valid until lt_sim_stop). */
const struct lt_sim_profile *lt_sim_profile(const struct lt_sim *s);

struct lt_sim_stats {
    uint64_t requests;     /* HTTP requests answered or aborted */
    uint64_t streams_open; /* HTTP requests open now (streams included) */
    uint64_t streams_peak;
    uint64_t chunks;       /* token chunks rendered for the network */
    uint64_t late_samples; /* chunks measured for lateness */
    double late_p50_us;    /* socket write time minus model emission time: */
    double late_p99_us;    /* percentiles as base/lt_hist.h defines them */
    double late_max_us;
    uint64_t faults; /* requests that got a fault */
};

void lt_sim_stats(struct lt_sim *s, struct lt_sim_stats *st);

/* Stop serving: open streams are cut, the log is flushed and closed, and
 * everything is freed. NULL is a no-op. Returns nothing; a log write error
 * is reported by lt_sim_stop_err. */
void lt_sim_stop(struct lt_sim *s);

/* Like lt_sim_stop, but returns LT_EIO (with err filled) if the log could
 * not be written completely. */
int lt_sim_stop_err(struct lt_sim *s, struct lt_err *err);

#endif

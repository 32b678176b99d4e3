/*
 * The performance model of a continuous-batching LLM server, as a pure,
 * clock-free discrete-event engine: the caller says what time it is when it
 * adds a request, asks when the next event is, and advances the engine to
 * a time; the engine reports every token it emits through a callback. The
 * HTTP server drives it in real time; `replay --virtual` can drive it in
 * virtual time with no HTTP at all. Times are int64 nanoseconds on the
 * caller's time line (any origin).
 *
 * The model, step by step (docs/sim.md has the full text):
 *   - a step starts when the previous one ends, or when a request arrives
 *     at an idle engine;
 *   - with preempt on, the newest requests are preempted (recompute) until
 *     the KV cache holds one more token for every decoder;
 *   - every decoding request gets one token in the step; the remaining
 *     token budget (batch_tokens - decoders) goes to prompt chunks of
 *     requests already prefilling, then to queued requests admitted in
 *     arrival order while the budget lasts, the batch has fewer than
 *     max_running, fewer than prefill_seqs prompts start in the step and
 *     the KV cache holds the request; the prefix cache says how many of its
 *     prompt tokens need no prefill;
 *   - the step lasts step_ms + step_ms_per_seq * decoders (or
 *     step_ms_by_batch's cost at that batch) +
 *     decode_ms_per_kv_token * the decoders' context tokens, plus
 *     prefill_step_ms + prefill_ms_per_seq * requests starting their prefill
 *     + prefill_ms_per_token * chunk tokens (+ the cached tokens' cost) when
 *     it prefills anything;
 *   - at its end each decoder emits a token and each request whose prompt
 *     is complete emits its first token; finished requests leave the batch;
 *   - a step that admits new requests lasts loop_ms_per_request longer for
 *     each (the server's one main loop takes them before it computes), and
 *     their admission time, from which the server counts its prompt time,
 *     is after that work;
 *   - a request is seen by the engine front_ms_per_request +
 *     front_ms_per_token * its prompt after it is added (work in front of
 *     the engine, which holds up no step);
 *     an engine with only unseen requests waits for the first.
 *
 * Request life:
 *
 *     add        admitted (slot + KV)      prompt done      out reached
 *   ------> QUEUED ---------------> PREFILL -----------> DECODE ---------> (freed)
 *              |                       |                   |
 *              +-------- cancel -------+------- cancel ----+----> (freed at next step)
 */
#ifndef LT_SIM_MODEL_H
#define LT_SIM_MODEL_H

#include "sim/sim_profile.h"
#include "base/lt_err.h"

#include <stdbool.h>
#include <stdint.h>

struct lt_sim_model;
struct lt_sim_mreq;

/* What the caller knows about a request when it arrives. */
struct lt_sim_req {
    uint32_t prompt_tokens;
    uint32_t out_tokens;    /* exactly this many tokens will be emitted (>= 1) */
    const uint64_t *blocks; /* prefix block hashes (chained), may be NULL; copied */
    uint32_t nblocks;
    void *user;            /* handed back in every event */
    uint32_t image_tokens; /* of prompt_tokens: image tokens (the vision encoder's cost) */
    /* slot_runs: the request runs in slot pin_slot (mod the slots) and waits
     * while it is busy, as llama-server's id_slot; later requests pass it */
    bool pinned;
    uint32_t pin_slot;
};

/* One emitted token. */
struct lt_sim_emit {
    void *user;
    int64_t t;              /* emission time (end of the step) */
    uint32_t index;         /* 0 for the first token */
    bool last;              /* the request is finished and freed after this */
    uint32_t cached_tokens; /* prompt tokens that came from the prefix cache */
    int64_t admitted;       /* when the request entered the batch */
    int32_t slot;           /* slot_runs: its slot; -1 without */
};

typedef void (*lt_sim_emit_fn)(void *ud, const struct lt_sim_emit *e);

struct lt_sim_model_stats {
    uint64_t steps;
    uint64_t tokens;
    uint64_t prefill_tokens;
    uint64_t cached_tokens;
    uint32_t running;
    uint32_t queued;
    uint64_t kv_used;
    uint64_t preemptions; /* requests sent back to the queue for KV (preempt = on) */
};

/* A new idle engine with a copy of the profile. NULL with err on failure. */
struct lt_sim_model *lt_sim_model_new(const struct lt_sim_profile *p, struct lt_err *err);
void lt_sim_model_free(struct lt_sim_model *m);

/* Add a request that arrives at time now (not earlier than any time the
 * engine was advanced to). Returns a handle, valid until the event with
 * last = true has been delivered or the request was cancelled; NULL on
 * allocation failure. */
struct lt_sim_mreq *lt_sim_model_add(struct lt_sim_model *m, int64_t now,
                                     const struct lt_sim_req *r, struct lt_err *err);

/* Forget a request (the client went away): it emits nothing more, and its
 * batch slot and KV are freed at the next step boundary. The handle is
 * invalid after this call. */
void lt_sim_model_cancel(struct lt_sim_model *m, struct lt_sim_mreq *q);

/* The time of the next event (end of the current step); INT64_MAX when the
 * engine is idle. */
int64_t lt_sim_model_next(const struct lt_sim_model *m);

/* Complete every step that ends at or before t, calling fn for every token
 * emitted, in time order. Returns the number of tokens emitted. */
uint64_t lt_sim_model_advance(struct lt_sim_model *m, int64_t t, lt_sim_emit_fn fn, void *ud);

void lt_sim_model_stats(const struct lt_sim_model *m, struct lt_sim_model_stats *st);

/* Empty the prefix cache (vLLM's POST /reset_prefix_cache): later
 * requests find none of the blocks of earlier ones. */
void lt_sim_model_reset_prefix(struct lt_sim_model *m);

#endif

/*
 * Profiles of the simulated server: the numbers that describe one server
 * (model name, step costs, batch and memory limits, prefix cache size).
 * A profile is either built in ("default", calibrated to the published
 * Qwen3.5-397B / 8x RTX PRO 6000 table, and "fast", with zero delays for
 * benchmarking clients) or read from a small `key = value` text file so
 * users can describe their own server. docs/sim.md documents every key.
 */
#ifndef LT_SIM_PROFILE_H
#define LT_SIM_PROFILE_H

#include "base/lt_err.h"

#include <stdint.h>

/* The most batch sizes step_ms_by_batch gives a cost for. */
enum { LT_SIM_STEP_BATCH_MAX = 16 };

struct lt_sim_profile {
    char name[64];
    char model[128];             /* model id served on /v1/models */
    double step_ms;              /* a: fixed cost of every engine step */
    double step_ms_per_seq;      /* k: added per decoding request in the step */
    double prefill_step_ms;      /* added once to a step that prefills anything */
    double prefill_ms_per_seq;   /* per request whose prefill starts in the step */
    double prefill_ms_per_token; /* per prompt token prefilled */
    /* per prompt token prefilled and token of the prompt before it
     * (attention in the prefill: a prompt of P tokens pays P (P - 1) / 2
     * of it, so a long prompt costs more per token than a short one) */
    double prefill_ms_per_token_ctx;
    double cached_ms_per_token;    /* per prompt token found in the prefix cache */
    double decode_ms_per_kv_token; /* per token of context of each decoder (attention) */
    /* The decode part of a step by its batch (a CPU's matmul of a few rows
     * is memory bound, so the cost is not a line in the batch): entry D-1
     * is what a step of D decoders costs in place of step_ms +
     * step_ms_per_seq D, for D up to n_step_ms_by_batch; a larger batch
     * costs the last entry plus step_ms_per_seq per decoder beyond it.
     * n_step_ms_by_batch 0: the line. */
    double step_ms_by_batch[LT_SIM_STEP_BATCH_MAX];
    uint32_t n_step_ms_by_batch;
    uint32_t prefill_seqs; /* most prompts starting their prefill in one step */
    int preempt;           /* 1: KV grows as tokens are made, preempt when full */
    uint32_t max_running;  /* most requests in the batch; the rest queue */
    uint64_t kv_tokens;    /* KV capacity; a request reserves prompt + max output */
    uint32_t batch_tokens; /* token budget of a step (chunked prefill) */
    uint32_t block_tokens; /* prefix cache block size, tokens */
    uint32_t cache_blocks; /* prefix cache capacity (LRU), blocks; 0 = off */
    /* A start every prompt shares (a chat template's first tokens), which
     * a server of slots (llama.cpp) keeps in each slot: the first
     * max_running requests after a start or a cache reset prefill it, every
     * later one finds it cached (at least this many cached tokens; the
     * prompt's last token is always computed). 0: none. */
    uint32_t shared_prefix_tokens;
    /* llama-server's slots (sim_slots.h, docs/sim.md "Slots"): with
     * slot_runs 1 the max_running slots each hold a KV stream of their own,
     * a request gets a slot by the server's rule (a cached prompt sharing
     * over slot_similarity of it, else the least recently used), and a
     * step's decoders pay one step_ms_by_batch (or line) cost per run of
     * consecutive slots, not one for the batch. 0: one batch. */
    int slot_runs;
    double slot_similarity;
    uint32_t max_model_len;    /* prompt + output limit; longer is a 400 */
    uint32_t eos_tokens;       /* mean natural output length when EOS is honoured */
    double reasoning_fraction; /* share of the output that is reasoning when on */
    uint32_t vocab;            /* token ids are 0..vocab-1; other ids are refused */
    uint32_t piece_bytes;      /* a word of L bytes is ceil(L / piece_bytes) tokens */
    int reasoning;             /* 1: reason unless the request says not to */
    /* per prompt token, before the engine sees the request (llama-server's
     * chat template and tokenizing in its HTTP threads): it delays the
     * request's first token and holds up no step */
    double front_ms_per_token;
    double front_ms_per_request; /* ... and per request, the same way */
    /* per request, on the server's one main loop (llama-server's
     * update_slots: taking the task, launching its slot): paid at the start
     * of the step that admits the request, so it holds up that step and
     * every running slot's token in it; the server's own prompt time
     * (timings' prompt_ms) starts after it */
    double loop_ms_per_request;
    /* The server's speed wanders (a shared or virtualized machine: another
     * tenant, the host taking the core): with speed_cv > 0 every step's cost
     * is multiplied by exp(cv z - cv^2 / 2), z a stationary Gauss-Markov
     * (Ornstein-Uhlenbeck) process of variance 1 whose correlation falls
     * as exp(-t / speed_tau_ms) (t: the steps' costs and the idle time
     * between them), drawn from speed_seed: the factor's mean over steps is
     * 1 and a seed gives the same steps every time. 0: steady. */
    double speed_cv;
    double speed_tau_ms;
    uint64_t speed_seed;
    /* Images (docs/sim.md "Images"): tokens per image (image_tile 0) or
     * image_base_tokens + image_tokens per image_tile x image_tile tile;
     * the vision encoder's cost per image token, paid in the step that
     * starts the request's prefill; the most pixels an image may have; the
     * side of the square a link (not fetched) counts as. */
    uint32_t image_tile;
    uint32_t image_tokens;
    uint32_t image_base_tokens;
    double image_ms_per_token;
    uint64_t image_max_pixels;
    uint32_t image_link_side;
    uint32_t video_temporal_patch; /* frames merged into one group of video tokens */
    int link_fetch;                /* 1: loopback image and video links are fetched */
    uint32_t embed_dim;            /* the length of an embedding (docs/sim.md "Embeddings") */
    double audio_tokens_per_s;     /* an audio clip's tokens per second (docs/sim.md "Audio") */
};

/* Fill p with the built-in profile called name ("default" or "fast").
 * Returns 0 or LT_EINVAL. */
int lt_sim_profile_builtin(struct lt_sim_profile *p, const char *name, struct lt_err *err);

/* Fill p from name_or_path: a built-in name, or a profile file whose keys
 * override the default profile. Returns 0, LT_EIO, LT_EFORMAT or LT_EINVAL,
 * with the file and line in err. */
int lt_sim_profile_load(struct lt_sim_profile *p, const char *name_or_path, struct lt_err *err);

/* Set one key from its text value, as a profile file line would.
 * Returns 0, LT_EINVAL (unknown key) or LT_EFORMAT (bad value). */
int lt_sim_profile_set(struct lt_sim_profile *p, const char *key, const char *value,
                       struct lt_err *err);

/* Write p as a profile file holding every key, so it reads back the same
 * whatever the default is; note (may be NULL) goes first as # comments,
 * one per line. Returns 0 or LT_EIO. */
int lt_sim_profile_save(const struct lt_sim_profile *p, const char *path, const char *note,
                        struct lt_err *err);

/* The decode part of a step of `decoders` decoding requests: step_ms +
 * step_ms_per_seq per decoder, or step_ms_by_batch where it gives one
 * (a step of no decoder costs step_ms). */
double lt_sim_profile_decode_ms(const struct lt_sim_profile *p, uint32_t decoders);

/* Check that the numbers make sense together. Returns 0 or LT_EINVAL. */
int lt_sim_profile_check(const struct lt_sim_profile *p, struct lt_err *err);

/* What a sim at --time-scale X serves, as a profile: every cost divided by
 * x (> 0), rates of tokens left alone. The one list of the profile's costs
 * in time: a new cost is scaled here. */
void lt_sim_profile_scale(struct lt_sim_profile *p, double x);

#endif

/*
 * llama-server's slots, as far as they price a step (profile key
 * slot_runs; docs/sim.md "Slots"). With -np N and its KV cache not unified
 * (the default), each slot is a KV stream of its own, and llama.cpp splits
 * every batch into micro-batches with split_equal(n_ubatch, sequential):
 * a micro-batch takes one token from each of a run of sequences whose ids
 * follow each other, so decoders on slots 0, 1 and 3 run as two
 * micro-batches ({0, 1} and {3}), each paying a whole pass over the
 * model. A CPU's pass over a micro-batch of 2 can cost more than two of 1
 * (rand-768x10: 21 against 2 x 7.2 ms, bench/README.md), so which slots
 * decode moves the step by tens of per cent where the batch size does not.
 *
 * The batch lists the decoders in slot order, then the prompts' chunks in
 * slot order; a micro-batch starts at the first unused token and takes
 * each later sequence whose id is the last one's + 1. So a run of
 * consecutive decoders is one micro-batch, and a prompt on the slot just
 * after a run adds its first token to it (then the rest of the prompt
 * runs in micro-batches of its own, which the prefill's costs price).
 *
 * The slot a request takes (server-context.cpp get_available_slot): the
 * idle slot whose cached prompt shares the longest prefix with the new
 * prompt, if that share of the prompt is above slot_similarity
 * (--slot-prompt-similarity, 0.1), the first such slot in id order on a
 * tie; else the least recently released idle slot, the highest id among
 * slots never released. Both the sim's engine (sim_model.c) and the fit
 * (sim_fit.c, which reads it back from timelines) use this code.
 */
#ifndef LT_SIM_SLOTS_H
#define LT_SIM_SLOTS_H

#include "sim/sim_profile.h"

#include <stdbool.h>
#include <stdint.h>

/* The most slots slot_runs models (llama-server's -np is far smaller). */
enum { LT_SIM_SLOTS_MAX = 1024 };

/* llama-server's --slot-prompt-similarity by default */
#define LT_SIM_SLOT_SIMILARITY 0.1

struct lt_sim_slot {
    int64_t released; /* when it last finished a request; INT64_MIN never */
    bool busy;
    bool holds; /* holds a prompt (a request finished in it since the last erase) */
};

/* The slot a request of `prompt` tokens gets among n: lcp[i] is the prefix
 * its prompt shares with slot i's cached prompt (read only for idle slots
 * that hold one). Returns the slot, or n when every slot is busy. */
uint32_t lt_sim_slot_pick(const struct lt_sim_slot *s, uint32_t n, const uint32_t *lcp,
                          uint32_t prompt, double similarity);

/* What each slot does in a step, for the split. */
enum { LT_SLOT_IDLE = 0, LT_SLOT_DECODE = 1, LT_SLOT_PROMPT = 2 };

/* The pass holding the decoder on slot `slot` of a step whose slots do
 * role[0..n): its size (its decoders and the prompts whose first token
 * joins it) and its decoders. 0, 0 when that slot does not decode. */
void lt_sim_slot_pass_of(const uint8_t *role, uint32_t n, uint32_t slot, uint32_t *size,
                         uint32_t *dec);

/* The decode part of such a step: the sum of lt_sim_profile_decode_ms over
 * its passes (a step of no decoder: step_ms). */
double lt_sim_slot_decode_ms(const struct lt_sim_profile *p, const uint8_t *role, uint32_t n);

#endif

/*
 * How the sim counts prompt tokens, and what text it generates. The rule is
 * deliberately simple and documented (docs/sim.md) so replay can build a
 * prompt of exactly N tokens and check its calibration against the sim:
 *
 *   - a text is cut at ASCII whitespace into words; a word of L bytes is
 *     ceil(L / P) tokens (pieces of P bytes from its start; P is the
 *     profile's piece_bytes, 4 unless it says otherwise, so a profile with
 *     P = 1 spends several tokens per word as some real tokenizers do);
 *     whitespace costs nothing;
 *   - a chat prompt is, in order: the tools array (if any) as compact JSON
 *     text, then for every message 4 tokens of template plus its content
 *     (a string, or the "text" of each part of a list) plus the compact JSON
 *     of its tool_calls; then 3 tokens that open the assistant's turn;
 *   - a completions prompt given as text is its text; given as token ids it
 *     is that many tokens.
 *
 * Every token also gets an id (a hash of its bytes, below the profile's
 * vocab), so that equal prompt prefixes give equal prefix-cache block hashes
 * and /tokenize can list ids; a token-id prompt with an id outside the
 * vocabulary is refused, as real servers refuse it.
 */
#ifndef LT_SIM_TOKENS_H
#define LT_SIM_TOKENS_H

#include <stddef.h>
#include <stdint.h>

#define LT_SIM_VOCAB 151936u

/* A running count of prompt tokens with chained hashes of every complete
 * block of block_tokens tokens. ids, when not NULL, collects up to ids_cap
 * token ids (for /tokenize). */
struct lt_sim_toks {
    uint32_t n;
    uint64_t h;
    uint32_t block_tokens;
    uint32_t vocab, piece; /* the tokenizer: ids below vocab, pieces of piece bytes */
    uint64_t *blocks;
    uint32_t nblocks, blocks_cap;
    uint32_t *ids;
    uint32_t ids_cap;
    int oom;
};

void lt_sim_toks_init(struct lt_sim_toks *t, uint32_t block_tokens);
/* Use a vocabulary of vocab ids (>= 16) and pieces of piece bytes (1..4)
 * instead of LT_SIM_VOCAB and 4; before the first token. */
void lt_sim_toks_tokenizer(struct lt_sim_toks *t, uint32_t vocab, uint32_t piece);
void lt_sim_toks_release(struct lt_sim_toks *t);
/* Append one token id. */
void lt_sim_toks_id(struct lt_sim_toks *t, uint32_t id);
/* Append the tokens of a text, by the rule above. */
void lt_sim_toks_text(struct lt_sim_toks *t, const char *s, size_t len);
/* Tokens of a text without keeping anything. */
uint32_t lt_sim_count_text(const char *s, size_t len);
/* Id of a named special token (template markers, roles). */
uint32_t lt_sim_special_id(const char *name);

/* The text of generated token i: a short word with a leading space, so
 * that any client can see one token per chunk. Never longer than 8 bytes. */
const char *lt_sim_word(uint32_t i);

#endif

/*
 * What capture knows about tokens without the server's tokenizer: an
 * estimated tokenization, and keyed hashes of fixed-size blocks of it.
 *
 * The estimate is a rule anyone can compute by hand (the same one the sim
 * uses, docs/sim.md): a text is cut at ASCII whitespace into words, and a
 * word of L bytes is ceil(L / 4) tokens, pieces of 4 bytes from its start;
 * whitespace costs nothing. Real tokenizers differ by tens of percent, so
 * counts from it are marked as estimates (`est`) in the trace; what matters
 * for prefix blocks is only that equal text gives equal pieces.
 *
 * Block hashes are SipHash-2-4 with a 128-bit key that is drawn per capture
 * and never stored, chained (each block's hash covers the previous block's
 * hash), so equal hashes at equal positions mean equal prompt prefixes,
 * while without the key a hash says nothing about the text, not even
 * whether two captures saw the same prompt. Hashes keep 53 bits so JSON
 * tools read them exactly (docs/trace-format.md §2.3).
 */
#ifndef LT_CAPTURE_TOKENS_H
#define LT_CAPTURE_TOKENS_H

#include "base/lt_buf.h"

#include <stddef.h>
#include <stdint.h>

#define LT_CAPTURE_HASH_MASK ((UINT64_C(1) << 53) - 1)

/* SipHash-2-4 of n bytes under the key (k0, k1) (the reference algorithm,
 * little-endian words). */
uint64_t lt_capture_siphash(uint64_t k0, uint64_t k1, const void *data, size_t n);

/* Estimated tokens of a text, by the rule above. */
uint32_t lt_capture_count_text(const char *s, size_t len);

/* A running tokenization of one prompt that hashes every complete block of
 * block_tokens tokens. Memory: one block of pieces plus the hashes. */
struct lt_capture_blocks {
    uint64_t k0, k1;
    uint32_t block_tokens;
    uint32_t ntok;     /* tokens in the current block */
    uint32_t total;    /* tokens so far */
    uint64_t prev;     /* hash of the previous block (0 before the first) */
    struct lt_buf cur; /* the current block's pieces, each length-prefixed */
    uint64_t *hashes;  /* hashes of the complete blocks */
    uint32_t n, cap;
    int oom; /* an allocation failed: hashes are incomplete */
};

/* block_tokens = 0 disables hashing (tokens are still counted). */
void lt_capture_blocks_init(struct lt_capture_blocks *b, uint64_t k0, uint64_t k1,
                            uint32_t block_tokens);
void lt_capture_blocks_release(struct lt_capture_blocks *b);
/* Add a text's tokens; returns how many it had. */
uint32_t lt_capture_blocks_text(struct lt_capture_blocks *b, const char *s, size_t len);
/* Add n marker tokens named by a string (a role, a template piece). */
void lt_capture_blocks_marker(struct lt_capture_blocks *b, const char *name, uint32_t n);
/* Add one token given as an id (prompts sent as token ids). */
void lt_capture_blocks_id(struct lt_capture_blocks *b, uint64_t id);
/* Hand the hashes to the caller (free() them); the struct keeps none. */
uint64_t *lt_capture_blocks_take(struct lt_capture_blocks *b, uint32_t *n);

#endif

/*
 * loadtrace's estimate of how many tokens a text is, when no tokenizer is
 * at hand: cut the text at ASCII whitespace into words; a word of L bytes
 * is ceil(L / 4) tokens; whitespace costs nothing. It is the sim's counting
 * rule (docs/sim.md), so replay can build prompts of exact lengths against
 * the sim, and capture's estimate when the upstream gives no usage: one
 * rule, kept here so the two can never drift apart.
 */
#ifndef LT_TOKENS_H
#define LT_TOKENS_H

#include <stddef.h>
#include <stdint.h>

/* True for the bytes the rule cuts words at. */
static inline int lt_tokens_is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Tokens of s[0..len) by the rule above; saturates at UINT32_MAX. */
uint32_t lt_tokens_estimate(const char *s, size_t len);

/* Cut s[0..len) into the rule's tokens and call fn with each one's bytes
 * (1 to 4 of them, in order): the sim names its tokens and capture hashes
 * prefix blocks from exactly the pieces the estimate counts. */
void lt_tokens_each(const char *s, size_t len, void (*fn)(void *ud, const char *p, size_t n),
                    void *ud);

#endif

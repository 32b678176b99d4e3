/*
 * The sim's tokenizer stand-in (see sim_tokens.h for the rule). It is not a
 * real tokenizer on purpose: a rule anyone can compute by hand makes the
 * sim's counts checkable, which is what replay's calibration needs.
 */
#include "sim/sim_tokens.h"
#include "base/lt_tokens.h"
#include "base/lt_rng.h"

#include <stdlib.h>
#include <string.h>

static uint64_t piece_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return lt_mix64(h);
}

uint32_t lt_sim_special_id(const char *name)
{
    return (uint32_t)(piece_hash(name, strlen(name)) % LT_SIM_VOCAB);
}

void lt_sim_toks_init(struct lt_sim_toks *t, uint32_t block_tokens)
{
    memset(t, 0, sizeof *t);
    t->block_tokens = block_tokens ? block_tokens : 64;
    t->vocab = LT_SIM_VOCAB;
    t->piece = 4;
}

void lt_sim_toks_tokenizer(struct lt_sim_toks *t, uint32_t vocab, uint32_t piece)
{
    t->vocab = vocab >= 16 ? vocab : 16;
    t->piece = piece >= 1 && piece <= 4 ? piece : 4;
}

void lt_sim_toks_release(struct lt_sim_toks *t)
{
    free(t->blocks);
    t->blocks = NULL;
    t->nblocks = t->blocks_cap = 0;
}

void lt_sim_toks_id(struct lt_sim_toks *t, uint32_t id)
{
    if (t->ids && t->n < t->ids_cap)
        t->ids[t->n] = id;
    t->n++;
    t->h = lt_mix64(t->h ^ ((uint64_t)id << 20) ^ t->n);
    if (t->n % t->block_tokens)
        return;
    if (t->nblocks == t->blocks_cap) {
        uint32_t nc = t->blocks_cap ? 2 * t->blocks_cap : 16;
        uint64_t *nb = realloc(t->blocks, nc * sizeof *nb);
        if (!nb) {
            t->oom = 1;
            return;
        }
        t->blocks = nb;
        t->blocks_cap = nc;
    }
    t->blocks[t->nblocks++] = t->h;
}

static void text_piece(void *ud, const char *p, size_t n)
{
    struct lt_sim_toks *t = ud;
    lt_sim_toks_id(t, (uint32_t)(piece_hash(p, n) % t->vocab));
}

void lt_sim_toks_text(struct lt_sim_toks *t, const char *s, size_t len)
{
    if (t->piece == 4) { /* the project's own rule (base/lt_tokens.h) */
        lt_tokens_each(s, len, text_piece, t);
        return;
    }
    for (size_t i = 0; i < len;) {
        if (lt_tokens_is_space((unsigned char)s[i])) {
            i++;
            continue;
        }
        size_t n = 0;
        while (n < t->piece && i + n < len && !lt_tokens_is_space((unsigned char)s[i + n]))
            n++;
        text_piece(t, s + i, n);
        i += n;
    }
}

uint32_t lt_sim_count_text(const char *s, size_t len)
{
    return lt_tokens_estimate(s, len);
}

static const char *const words[] = {
    " the", " of",   " and", " to", " in",  " is",  " it",   " that", " for",  " on",
    " as",  " with", " was", " be", " at",  " by",  " this", " are",  " or",   " from",
    " an",  " but",  " not", " we", " can", " all", " one",  " has",  " more", " so",
};

const char *lt_sim_word(uint32_t i)
{
    return words[(i * 7u + i / 30u) % (sizeof words / sizeof words[0])];
}

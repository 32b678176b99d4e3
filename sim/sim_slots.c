/*
 * llama-server's slot choice and its batch split (see sim_slots.h).
 */
#include "sim/sim_slots.h"

uint32_t lt_sim_slot_pick(const struct lt_sim_slot *s, uint32_t n, const uint32_t *lcp,
                          uint32_t prompt, double similarity)
{
    /* by the share of the prompt cached, strictly above the threshold and
     * the best so far (a tie keeps the lower id) */
    if (similarity > 0 && prompt > 0) {
        uint32_t best = n;
        double share_best = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (s[i].busy || !s[i].holds)
                continue;
            double share = (double)lcp[i] / prompt;
            if (share > share_best && share > similarity) {
                share_best = share;
                best = i;
            }
        }
        if (best < n)
            return best;
    }
    /* least recently used; "<=" as the server has it, so among equals
     * (never released) the last one */
    uint32_t best = n;
    for (uint32_t i = 0; i < n; i++)
        if (!s[i].busy && (best == n || s[i].released <= s[best].released))
            best = i;
    return best;
}

/* The next pass from slot *i on: a run of decoders, then the prompts
 * right after it, each giving the run its first token (the scan goes on
 * past the decoders only through prompts). Sets its first slot, size and
 * decoders and moves *i past it; false when no decoder is left. */
static bool next_pass(const uint8_t *role, uint32_t n, uint32_t *i, uint32_t *first, uint32_t *size,
                      uint32_t *dec)
{
    while (*i < n && role[*i] != LT_SLOT_DECODE)
        (*i)++;
    if (*i >= n)
        return false;
    *first = *i;
    uint32_t d = 0, p = 0;
    while (*i < n && role[*i] == LT_SLOT_DECODE) {
        d++;
        (*i)++;
    }
    while (*i < n && role[*i] == LT_SLOT_PROMPT) {
        p++;
        (*i)++;
    }
    *size = d + p;
    *dec = d;
    return true;
}

void lt_sim_slot_pass_of(const uint8_t *role, uint32_t n, uint32_t slot, uint32_t *size,
                         uint32_t *dec)
{
    uint32_t i = 0, first, sz, d;
    *size = *dec = 0;
    while (next_pass(role, n, &i, &first, &sz, &d))
        if (slot >= first && slot < first + d) {
            *size = sz;
            *dec = d;
            return;
        }
}

double lt_sim_slot_decode_ms(const struct lt_sim_profile *p, const uint8_t *role, uint32_t n)
{
    uint32_t i = 0, first, size, dec, passes = 0;
    double ms = 0;
    while (next_pass(role, n, &i, &first, &size, &dec)) {
        ms += lt_sim_profile_decode_ms(p, size);
        passes++;
    }
    return passes ? ms : lt_sim_profile_decode_ms(p, 0);
}

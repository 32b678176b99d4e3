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

uint32_t lt_sim_slot_ubatches(const uint8_t *role, uint32_t n, uint32_t *size, uint32_t *dec)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < n;) {
        if (role[i] != LT_SLOT_DECODE) {
            i++;
            continue;
        }
        uint32_t d = 0;
        while (i < n && role[i] == LT_SLOT_DECODE) {
            d++;
            i++;
        }
        /* the prompts right after the run: each gives the run its first
         * token (the scan goes on past the decoders only through prompts) */
        uint32_t p = 0;
        while (i + p < n && role[i + p] == LT_SLOT_PROMPT)
            p++;
        size[k] = d + p;
        dec[k] = d;
        k++;
        i += p;
    }
    return k;
}

double lt_sim_slot_decode_ms(const struct lt_sim_profile *p, const uint8_t *role, uint32_t n)
{
    uint32_t size[LT_SIM_SLOTS_MAX], dec[LT_SIM_SLOTS_MAX];
    uint32_t k = lt_sim_slot_ubatches(role, n < LT_SIM_SLOTS_MAX ? n : LT_SIM_SLOTS_MAX, size, dec);
    if (k == 0)
        return lt_sim_profile_decode_ms(p, 0);
    double ms = 0;
    for (uint32_t i = 0; i < k; i++)
        ms += lt_sim_profile_decode_ms(p, size[i]);
    return ms;
}

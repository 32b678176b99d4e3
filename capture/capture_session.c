/*
 * Session ids, turns and think times for captured requests
 * (capture_session.h says the rules).
 */
#include "capture/capture_session.h"
#include "capture/capture_tokens.h"
#include "base/lt_err.h"

#include <string.h>

void lt_capture_sessions_init(struct lt_capture_sessions *s, uint64_t k0, uint64_t k1)
{
    memset(s, 0, sizeof *s);
    s->k0 = k0;
    s->k1 = k1;
    s->max_entries = (size_t)1 << 20;
    lt_u64map_init(&s->by_prompt);
    lt_u64map_init(&s->turns);
    lt_u64map_init(&s->ends);
}

void lt_capture_sessions_release(struct lt_capture_sessions *s)
{
    lt_u64map_release(&s->by_prompt);
    lt_u64map_release(&s->turns);
    lt_u64map_release(&s->ends);
}

static void forget_all(struct lt_capture_sessions *s)
{
    lt_capture_sessions_release(s);
    lt_u64map_init(&s->by_prompt);
    lt_u64map_init(&s->turns);
    lt_u64map_init(&s->ends);
}

int lt_capture_sessions_assign(struct lt_capture_sessions *s, struct lt_capture_call *c,
                               const char *hdr, size_t hdr_len)
{
    uint64_t id = 0;
    bool found = false;
    if (s->by_prompt.len > s->max_entries || s->turns.len > s->max_entries)
        forget_all(s);
    if (hdr) {
        id = lt_capture_siphash(s->k0 ^ 0x5e5510, s->k1, hdr, hdr_len) & LT_CAPTURE_HASH_MASK;
        found = lt_u64map_get(&s->turns, id) != NULL;
    } else if (c->n_msgs > 0 && c->msg_hash) { /* (embeddings' inputs are no turns) */
        /* The longest earlier prompt this one extends. */
        for (uint32_t j = c->n_msgs - 1; j >= 1 && !found; j--) {
            uint64_t *v = lt_u64map_get(&s->by_prompt, c->msg_hash[j - 1]);
            if (v) {
                id = *v;
                found = true;
            }
        }
        if (!found)
            id = ++s->next_id;
    } else {
        return 0;
    }
    uint64_t *turn = lt_u64map_upsert(&s->turns, id, NULL);
    if (!turn)
        return LT_ENOMEM;
    c->has_session = true;
    c->session = id;
    c->turn = (uint32_t)*turn;
    (*turn)++;
    uint64_t *end = found ? lt_u64map_get(&s->ends, id) : NULL;
    if (end && *end) {
        int64_t think = c->t - (int64_t)(*end - 1);
        c->has_think = true;
        c->think = think > 0 ? think : 0;
    }
    /* Until this turn ends, the next one has no known think time. */
    if (end)
        *end = 0;
    if (c->n_msgs > 0 && c->msg_hash) {
        uint64_t *p = lt_u64map_upsert(&s->by_prompt, c->msg_hash[c->n_msgs - 1], NULL);
        if (!p)
            return LT_ENOMEM;
        *p = id;
    }
    return 0;
}

void lt_capture_sessions_end(struct lt_capture_sessions *s, uint64_t id, int64_t end_us)
{
    uint64_t *e = lt_u64map_get(&s->ends, id);
    if (!e)
        e = lt_u64map_upsert(&s->ends, id, NULL);
    if (e && end_us >= 0)
        *e = (uint64_t)end_us + 1;
}

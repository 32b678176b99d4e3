#include "traces/trace_lengths.h"

void lt_record_lengths(const struct lt_record *r, uint32_t default_out, uint32_t *want_in,
                       uint32_t *want_out)
{
    uint32_t in = r->has & LT_HAS_IN ? r->in : 0;
    if (!in)
        for (uint32_t m = 0; m < r->n_msgs; m++)
            in += r->msgs[m].tokens;
    uint32_t out = (r->has & LT_HAS_OUT) && r->out                 ? r->out
                   : (r->has & LT_HAS_MAX_TOKENS) && r->max_tokens ? r->max_tokens
                                                                   : default_out;
    *want_in = in ? in : 1;
    *want_out = out ? out : 1;
}

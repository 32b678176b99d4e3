#include "base/lt_tokens.h"

/* The next word of s[0..len) from *i: its start in *w, its length as the
 * result (0: no word left); *i moves past it. */
static size_t next_word(const char *s, size_t len, size_t *i, size_t *w)
{
    while (*i < len && lt_tokens_is_space((unsigned char)s[*i]))
        (*i)++;
    *w = *i;
    while (*i < len && !lt_tokens_is_space((unsigned char)s[*i]))
        (*i)++;
    return *i - *w;
}

uint32_t lt_tokens_estimate(const char *s, size_t len)
{
    uint64_t n = 0;
    size_t i = 0, w, l;
    while ((l = next_word(s, len, &i, &w)) > 0)
        n += (l + 3) / 4;
    return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

void lt_tokens_each(const char *s, size_t len, void (*fn)(void *ud, const char *p, size_t n),
                    void *ud)
{
    size_t i = 0, w, l;
    while ((l = next_word(s, len, &i, &w)) > 0)
        for (size_t p = 0; p < l; p += 4)
            fn(ud, s + w + p, l - p < 4 ? l - p : 4);
}

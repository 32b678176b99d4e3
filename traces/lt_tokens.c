#include "traces/lt_tokens.h"

uint32_t lt_tokens_estimate(const char *s, size_t len)
{
    uint64_t n = 0;
    size_t i = 0;
    while (i < len) {
        while (i < len && lt_tokens_is_space((unsigned char)s[i]))
            i++;
        size_t w = i;
        while (i < len && !lt_tokens_is_space((unsigned char)s[i]))
            i++;
        n += (i - w + 3) / 4;
    }
    return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

void lt_tokens_each(const char *s, size_t len, void (*fn)(void *ud, const char *p, size_t n),
                    void *ud)
{
    size_t i = 0;
    while (i < len) {
        while (i < len && lt_tokens_is_space((unsigned char)s[i]))
            i++;
        size_t w = i;
        while (i < len && !lt_tokens_is_space((unsigned char)s[i]))
            i++;
        for (size_t p = w; p < i; p += 4)
            fn(ud, s + p, i - p < 4 ? i - p : 4);
    }
}

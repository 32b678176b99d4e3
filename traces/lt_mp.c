/*
 * The msgpack encoder (see lt_mp.h): the headers and the float; the
 * integers are inline in the header.
 */
#include "traces/lt_mp.h"

#include <string.h>

/* A header byte for small sizes (fix), else tag + 2 or 4 big-endian bytes
 * (the 1-byte form, str 8, only strings have). */
static int head(struct lt_mp *m, uint8_t fix, uint32_t fix_max, uint8_t tag8, uint8_t tag16,
                uint8_t tag32, uint64_t n)
{
    uint8_t t[5];
    size_t len;
    if (n <= fix_max) {
        t[0] = (uint8_t)(fix | n);
        len = 1;
    } else if (tag8 && n <= 0xff) {
        t[0] = tag8;
        t[1] = (uint8_t)n;
        len = 2;
    } else if (n <= 0xffff) {
        t[0] = tag16;
        t[1] = (uint8_t)(n >> 8);
        t[2] = (uint8_t)n;
        len = 3;
    } else {
        t[0] = tag32;
        for (int j = 0; j < 4; j++)
            t[1 + j] = (uint8_t)(n >> (24 - 8 * j));
        len = 5;
    }
    return lt_mp_raw(m, t, len);
}

int lt_mp_array(struct lt_mp *m, uint32_t n)
{
    return head(m, 0x90, 15, 0, 0xdc, 0xdd, n);
}

int lt_mp_map(struct lt_mp *m, uint32_t n)
{
    return head(m, 0x80, 15, 0, 0xde, 0xdf, n);
}

int lt_mp_str_head(struct lt_mp *m, size_t n)
{
    return head(m, 0xa0, 31, 0xd9, 0xda, 0xdb, n);
}

int lt_mp_str(struct lt_mp *m, const char *s, size_t n)
{
    lt_mp_str_head(m, n);
    return n ? lt_mp_raw(m, s, n) : m->rc;
}

int lt_mp_cstr(struct lt_mp *m, const char *s)
{
    return lt_mp_str(m, s, strlen(s));
}

int lt_mp_double(struct lt_mp *m, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    uint8_t t[9] = {0xcb};
    for (int j = 0; j < 8; j++)
        t[1 + j] = (uint8_t)(u >> (56 - 8 * j));
    return lt_mp_raw(m, t, 9);
}

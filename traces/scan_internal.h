/*
 * The msgpack scanner (reader_msgpack.c), inside traces/ only: how long one
 * value is, within the file's limits (traces/trace_format.h), before
 * anything of it is decoded. The reader scans every value with it; the
 * writer scans what it cannot vouch for (unknown keys, long arrays) with
 * the same limits, so that it never writes a value the reader refuses.
 */
#ifndef LT_SCAN_INTERNAL_H
#define LT_SCAN_INTERNAL_H

#include "traces/trace_format.h"

#include <stddef.h>
#include <stdint.h>

#define MAX_DEPTH LT_LIMIT_DEPTH

struct scan {
    const uint8_t *p;
    size_t n, i;
    uint64_t elems, max_elems;
    uint32_t max_array;
    int depth0; /* nesting depth of the value scanned (0: a whole value) */
};

static inline uint64_t lt__rd_be(const uint8_t *p, int k)
{
    uint64_t v = 0;
    for (int j = 0; j < k; j++)
        v = v << 8 | p[j];
    return v;
}

extern const int8_t lt__rd_fixed_size[256];

/* Find the end of the value at s->p + s->i (setting s->i past it): 0, or
 * LT_ETRUNC, LT_ELIMIT or LT_EFORMAT. */
int lt__rd_scan_value(struct scan *s);

#endif

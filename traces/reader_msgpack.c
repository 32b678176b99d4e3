/*
 * The reader's msgpack scanner: how long one value is, within the limits
 * (size, element counts, depth), before anything of it is decoded; and the
 * cursor's step over a value that the scanner accepted. The cursor's
 * readers (lt__rd_int, lt__rd_str, lt__rd_coll) are inline in reader_internal.h.
 */
#include "traces/reader_internal.h"

/* Bytes that follow each lead byte in a value of fixed size (ints, floats,
 * nil, bools, fixstr, fixext); -1 for the rest (containers, sized strings,
 * bin and ext, and 0xc1). */
const int8_t lt__rd_fixed_size[256] = {
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  /* 0x00 */
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  /* 0x10 */
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  /* 0x20 */
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  /* 0x30 */
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  /* 0x40 */
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  /* 0x50 */
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  /* 0x60 */
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  /* 0x70 */
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, /* 0x80 */
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, /* 0x90 */
    0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, /* 0xa0 */
    16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, /* 0xb0 */
    0,  -1, 0,  0,  -1, -1, -1, -1, -1, -1, 4,  8,  1,  2,  4,  8,  /* 0xc0 */
    1,  2,  4,  8,  2,  3,  5,  9,  17, -1, -1, -1, -1, -1, -1, -1, /* 0xd0 */
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  /* 0xe0 */
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  /* 0xf0 */
};

/* Find the end of the value at s->p + s->i (setting s->i past it), or
 * return LT_ETRUNC (it runs past s->n), LT_ELIMIT (a container holds more
 * than max_array elements, the value more than max_elems in all, or values
 * nest deeper than MAX_DEPTH) or LT_EFORMAT (0xc1). Iterative, with the
 * number of elements still to see at each open level on a small stack: the
 * order of the checks is the order of the bytes, so the first problem in
 * the value is the one reported. */
int lt__rd_scan_value(struct scan *s)
{
    uint64_t left[MAX_DEPTH + 1];
    int depth = 0;
    const uint8_t *p = s->p + s->i, *end = s->p + s->n;
    left[0] = 1;
    for (;;) {
        while (left[depth] == 0) {
            if (depth == 0) {
                s->i = (size_t)(p - s->p);
                return 0;
            }
            depth--;
        }
        left[depth]--;
        if (p == end)
            return LT_ETRUNC;
        uint8_t b = *p++;
        uint64_t skip, count;
        int per = 1;
        /* The commonest bytes first, by branches the CPU predicts, so the
         * next value's address need not wait for a table load. */
        if (b <= 0x7f)
            continue;
        if ((b & 0xe0) == 0xa0) {
            if ((size_t)(end - p) < (size_t)(b & 0x1f))
                return LT_ETRUNC;
            p += b & 0x1f;
            continue;
        }
        if (lt__rd_fixed_size[b] >= 0) {
            if ((size_t)(end - p) < (size_t)lt__rd_fixed_size[b])
                return LT_ETRUNC;
            p += lt__rd_fixed_size[b];
            continue;
        }
        if (b <= 0x8f) {
            count = b & 0x0f;
            per = 2;
            goto coll;
        }
        if (b <= 0x9f) {
            count = b & 0x0f;
            goto coll;
        }
        int lenbytes;
        switch (b) {
        case 0xc4:
        case 0xd9:
            lenbytes = 1;
            skip = 0;
            goto sized;
        case 0xc5:
        case 0xda:
            lenbytes = 2;
            skip = 0;
            goto sized;
        case 0xc6:
        case 0xdb:
            lenbytes = 4;
            skip = 0;
            goto sized;
        case 0xc7:
            lenbytes = 1;
            skip = 1;
            goto sized; /* ext: + type byte */
        case 0xc8:
            lenbytes = 2;
            skip = 1;
            goto sized;
        case 0xc9:
            lenbytes = 4;
            skip = 1;
            goto sized;
        case 0xdc:
            lenbytes = 2;
            goto sized_coll;
        case 0xdd:
            lenbytes = 4;
            goto sized_coll;
        case 0xde:
            lenbytes = 2;
            per = 2;
            goto sized_coll;
        case 0xdf:
            lenbytes = 4;
            per = 2;
            goto sized_coll;
        default:
            return LT_EFORMAT; /* 0xc1, never used */
        }
    sized:
        if ((size_t)(end - p) < (size_t)lenbytes)
            return LT_ETRUNC;
        skip += lt__rd_be(p, lenbytes);
        p += lenbytes;
        if ((uint64_t)(end - p) < skip)
            return LT_ETRUNC;
        p += skip;
        continue;
    sized_coll:
        if ((size_t)(end - p) < (size_t)lenbytes)
            return LT_ETRUNC;
        count = lt__rd_be(p, lenbytes);
        p += lenbytes;
    coll:
        if (count > s->max_array)
            return LT_ELIMIT;
        count *= (uint64_t)per;
        s->elems += count;
        if (s->elems > s->max_elems)
            return LT_ELIMIT;
        if (count > (uint64_t)(end - p)) /* every element is at least a byte */
            return LT_ETRUNC;
        if (count) {
            if (s->depth0 + depth + 1 > MAX_DEPTH)
                return LT_ELIMIT;
            left[++depth] = count;
        }
    }
}

/* Step over one whole value (nested ones included), iteratively. */
void lt__rd_skip_value(struct cur *c)
{
    uint64_t left = 1;
    while (left) {
        left--;
        uint8_t b = *c->p++;
        if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
            continue;
        if (b <= 0x8f) {
            left += 2u * (b & 0x0f);
            continue;
        }
        if (b <= 0x9f) {
            left += b & 0x0f;
            continue;
        }
        if (b <= 0xbf) {
            c->p += b & 0x1f;
            continue;
        }
        switch (b) {
        case 0xcc:
        case 0xd0:
            c->p += 1;
            break;
        case 0xcd:
        case 0xd1:
            c->p += 2;
            break;
        case 0xca:
        case 0xce:
        case 0xd2:
            c->p += 4;
            break;
        case 0xcb:
        case 0xcf:
        case 0xd3:
            c->p += 8;
            break;
        case 0xd4:
            c->p += 2;
            break; /* fixext: type byte + data */
        case 0xd5:
            c->p += 3;
            break;
        case 0xd6:
            c->p += 5;
            break;
        case 0xd7:
            c->p += 9;
            break;
        case 0xd8:
            c->p += 17;
            break;
        case 0xc4:
        case 0xd9:
            c->p += 1 + lt__rd_be(c->p, 1);
            break;
        case 0xc5:
        case 0xda:
            c->p += 2 + lt__rd_be(c->p, 2);
            break;
        case 0xc6:
        case 0xdb:
            c->p += 4 + lt__rd_be(c->p, 4);
            break;
        case 0xc7:
            c->p += 1 + 1 + lt__rd_be(c->p, 1);
            break; /* ext: length, type, data */
        case 0xc8:
            c->p += 2 + 1 + lt__rd_be(c->p, 2);
            break;
        case 0xc9:
            c->p += 4 + 1 + lt__rd_be(c->p, 4);
            break;
        case 0xdc:
            left += lt__rd_be(c->p, 2);
            c->p += 2;
            break;
        case 0xdd:
            left += lt__rd_be(c->p, 4);
            c->p += 4;
            break;
        case 0xde:
            left += 2 * lt__rd_be(c->p, 2);
            c->p += 2;
            break;
        case 0xdf:
            left += 2 * lt__rd_be(c->p, 4);
            c->p += 4;
            break;
        default:
            break; /* 0xc1: refused by lt__rd_scan_value */
        }
    }
}

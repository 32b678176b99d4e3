/*
 * The one msgpack encoder of loadtrace: values appended to an lt_buf, each
 * in its smallest encoding (what msgpack-c's packer writes, byte for byte,
 * so files are unchanged). The writer, the importers and whatever else
 * packs a value (a record's extra keys) use it; msgpack-c only unpacks
 * free-form values (a header, unknown keys rendered as JSON).
 *
 * Errors are sticky, as in a stream: the first failure (the buffer's cap,
 * LT_ENOMEM) is kept in rc, every call returns rc, and what was appended
 * after a failure is not a value: the caller rolls back (out->len) or
 * gives up.
 */
#ifndef LT_MP_H
#define LT_MP_H

#include "base/lt_buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lt_mp {
    struct lt_buf *out;
    int rc; /* 0, or the first negative LT_E* code */
};

/* Raw bytes (an already-packed value or key/value pairs). */
static inline int lt_mp_raw(struct lt_mp *m, const void *p, size_t n)
{
    int rc = lt_buf_append(m->out, p, n);
    if (rc < 0 && !m->rc)
        m->rc = rc;
    return m->rc;
}

/* A non-negative integer, and any integer. Inline: a result block is
 * mostly these. */
static inline int lt_mp_uint(struct lt_mp *m, uint64_t v)
{
    if (v <= 0x7f) {
        uint8_t b = (uint8_t)v;
        return lt_mp_raw(m, &b, 1);
    }
    uint8_t t[9];
    int k = v <= 0xff ? 1 : v <= 0xffff ? 2 : v <= 0xffffffffu ? 4 : 8;
    t[0] = k == 1 ? 0xcc : k == 2 ? 0xcd : k == 4 ? 0xce : 0xcf;
    for (int j = 0; j < k; j++)
        t[1 + j] = (uint8_t)(v >> (8 * (k - 1 - j)));
    return lt_mp_raw(m, t, 1 + (size_t)k);
}

static inline int lt_mp_int(struct lt_mp *m, int64_t v)
{
    if (v >= 0)
        return lt_mp_uint(m, (uint64_t)v);
    if (v >= -32) {
        uint8_t b = (uint8_t)(0xe0 | (v + 32));
        return lt_mp_raw(m, &b, 1);
    }
    uint8_t t[9];
    int k = v >= INT8_MIN ? 1 : v >= INT16_MIN ? 2 : v >= INT32_MIN ? 4 : 8;
    t[0] = k == 1 ? 0xd0 : k == 2 ? 0xd1 : k == 4 ? 0xd2 : 0xd3;
    uint64_t u = (uint64_t)v;
    for (int j = 0; j < k; j++)
        t[1 + j] = (uint8_t)(u >> (8 * (k - 1 - j)));
    return lt_mp_raw(m, t, 1 + (size_t)k);
}

static inline int lt_mp_nil(struct lt_mp *m)
{
    return lt_mp_raw(m, "\xc0", 1);
}

static inline int lt_mp_bool(struct lt_mp *m, bool b)
{
    return lt_mp_raw(m, b ? "\xc3" : "\xc2", 1);
}

/* A float 64. */
int lt_mp_double(struct lt_mp *m, double v);
/* Array and map headers: n elements (n key/value pairs) follow. */
int lt_mp_array(struct lt_mp *m, uint32_t n);
int lt_mp_map(struct lt_mp *m, uint32_t n);
/* A string of n bytes; lt_mp_cstr() takes a C string. */
int lt_mp_str(struct lt_mp *m, const char *s, size_t n);
int lt_mp_cstr(struct lt_mp *m, const char *s);
/* The header of a string of n bytes, whose body the caller appends with
 * lt_mp_raw() (a string made of pieces). */
int lt_mp_str_head(struct lt_mp *m, size_t n);

#endif

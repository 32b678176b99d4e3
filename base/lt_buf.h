/*
 * A growable byte buffer with a hard cap (curl's dynbuf idea): anything a
 * peer or a file sends is collected in one of these, so no input can make
 * loadtrace grow without limit. The content is always NUL-terminated (the
 * terminator is not counted in len), so text can be used as a C string.
 */
#ifndef LT_BUF_H
#define LT_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

struct lt_buf {
    char *p;    /* NULL until the first append */
    size_t len; /* bytes in use */
    size_t cap; /* bytes allocated */
    size_t max; /* hard cap on len; appends past it fail with LT_ELIMIT */
};

/* Initialize an empty buffer that may hold at most max bytes. */
void lt_buf_init(struct lt_buf *b, size_t max);
/* Free the memory; the buffer is empty and may be used again. */
void lt_buf_release(struct lt_buf *b);
/* Forget the content, keep the memory. */
static inline void lt_buf_reset(struct lt_buf *b)
{
    b->len = 0;
    if (b->p)
        b->p[0] = '\0';
}
/* Make room for n more bytes. Returns 0, LT_ELIMIT or LT_ENOMEM. */
int lt_buf_reserve(struct lt_buf *b, size_t n);
/* Append n bytes. Returns 0, LT_ELIMIT or LT_ENOMEM; on failure the
 * buffer is unchanged. Inline when the bytes fit in what is allocated (the
 * writers append a few bytes at a time, millions of times). */
int lt_buf_append_grow(struct lt_buf *b, const void *data, size_t n);
static inline int lt_buf_append(struct lt_buf *b, const void *data, size_t n)
{
    /* room for n bytes and the terminator, and within the cap (len <= max) */
    if (b->cap - b->len > n && n <= b->max - b->len) {
        memcpy(b->p + b->len, data, n);
        b->len += n;
        b->p[b->len] = '\0';
        return 0;
    }
    return lt_buf_append_grow(b, data, n);
}
int lt_buf_puts(struct lt_buf *b, const char *s);
int lt_buf_printf(struct lt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int lt_buf_vprintf(struct lt_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* Drop the first n bytes, moving the rest to the front. */
void lt_buf_consume(struct lt_buf *b, size_t n);

#endif

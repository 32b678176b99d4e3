#include "base/lt_buf.h"
#include "base/lt_err.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lt_buf_init(struct lt_buf *b, size_t max)
{
    b->p = NULL;
    b->len = b->cap = 0;
    b->max = max;
}

void lt_buf_release(struct lt_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

int lt_buf_reserve(struct lt_buf *b, size_t n)
{
    if (n > b->max || b->len > b->max - n)
        return LT_ELIMIT;
    size_t need = b->len + n + 1; /* room for the terminator */
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->p, cap);
    if (!p)
        return LT_ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

int lt_buf_append_grow(struct lt_buf *b, const void *data, size_t n)
{
    int rc = lt_buf_reserve(b, n);
    if (rc < 0)
        return rc;
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int lt_buf_puts(struct lt_buf *b, const char *s)
{
    return lt_buf_append(b, s, strlen(s));
}

int lt_buf_vprintf(struct lt_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return LT_EINVAL;
    if ((size_t)n < sizeof small)
        return lt_buf_append(b, small, (size_t)n);
    int rc = lt_buf_reserve(b, (size_t)n);
    if (rc < 0)
        return rc;
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int lt_buf_printf(struct lt_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = lt_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

void lt_buf_consume(struct lt_buf *b, size_t n)
{
    if (n >= b->len) {
        lt_buf_reset(b);
        return;
    }
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
    b->p[b->len] = '\0';
}

/*
 * The JSON string escaper (see lt_json.h). Runs of bytes that need no
 * escape are copied in one go, since almost every byte of a prompt is one.
 */
#include "base/lt_json.h"

#include <math.h>

/* Bytes below 0x20: the short forms JSON has for \n \r \t, \u00XX for the
 * rest. */
static const char *const ctl[32] = {
    "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007",
    "\\u0008", "\\t",     "\\n",     "\\u000b", "\\u000c", "\\r",     "\\u000e", "\\u000f",
    "\\u0010", "\\u0011", "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017",
    "\\u0018", "\\u0019", "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f",
};

/* The escape for byte c, or NULL if c is copied as it is. */
static const char *escape(unsigned char c)
{
    if (c < 0x20)
        return ctl[c];
    return c == '"' ? "\\\"" : c == '\\' ? "\\\\" : NULL;
}

/* The length of the UTF-8 sequence at s (n bytes left, s[0] >= 0x80), or
 * 0 when it is not a valid one (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t k = c >= 0xc2 && c <= 0xdf   ? 2
               : c >= 0xe0 && c <= 0xef ? 3
               : c >= 0xf0 && c <= 0xf4 ? 4
                                        : 0;
    if (!k || n < k)
        return 0;
    for (size_t j = 1; j < k; j++)
        if ((s[j] & 0xc0) != 0x80)
            return 0;
    if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) || (c == 0xf0 && s[1] < 0x90) ||
        (c == 0xf4 && s[1] > 0x8f))
        return 0;
    return k;
}

bool lt_json_utf8_ok(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = utf8_len(u + i, n - i);
        if (!k)
            return false;
        i += k;
    }
    return true;
}

/* The escape for the byte at s[i] (NULL: copied as it is), and how many
 * bytes it stands for: a valid UTF-8 sequence is copied whole, a byte
 * that is not part of one becomes U+FFFD, so the text is always JSON. */
static const char *escape_at(const unsigned char *s, size_t n, size_t *k)
{
    *k = 1;
    if (s[0] < 0x80)
        return escape(s[0]);
    if ((*k = utf8_len(s, n)) != 0)
        return NULL;
    *k = 1;
    return "\\ufffd";
}

int lt_json_str(struct lt_buf *out, const char *s, size_t n)
{
    if (n == 0) /* s may be NULL then (msgpack-c's empty strings) */
        return lt_buf_append(out, "\"\"", 2);
    int rc = lt_buf_reserve(out, n + 2);
    if (rc == 0)
        rc = lt_buf_append(out, "\"", 1);
    size_t run = 0; /* start of the bytes not yet copied */
    const char *esc;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0, k; i < n && rc == 0; i += k) {
        if (!(esc = escape_at(u + i, n - i, &k)))
            continue;
        rc = lt_buf_append(out, s + run, i - run);
        if (rc == 0)
            rc = lt_buf_puts(out, esc);
        run = i + 1;
    }
    if (rc == 0)
        rc = lt_buf_append(out, s + run, n - run);
    if (rc == 0)
        rc = lt_buf_append(out, "\"", 1);
    return rc;
}

void lt_json_fstr(FILE *f, const char *s, size_t n)
{
    size_t run = 0;
    const char *esc;
    const unsigned char *u = (const unsigned char *)s;
    fputc('"', f);
    for (size_t i = 0, k; i < n; i += k) {
        if (!(esc = escape_at(u + i, n - i, &k)))
            continue;
        fwrite(s + run, 1, i - run, f);
        fputs(esc, f);
        run = i + 1;
    }
    if (n > run)
        fwrite(s + run, 1, n - run, f);
    fputc('"', f);
}

void lt_json_fnum(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.10g", v);
    else
        fputs("null", f);
}

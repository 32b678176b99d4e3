/*
 * Bounded line reader (see lt_lines.h). Input is taken in 64 KiB pieces and
 * searched with memchr, so reading a large trace costs little more than
 * the copy into the line buffer.
 */
#include "base/lt_lines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define READ_CHUNK (64u << 10)

void lt_lines_init_file(struct lt_lines *l, FILE *f, const char *name, size_t max)
{
    memset(l, 0, sizeof *l);
    l->f = f;
    l->name = name;
    lt_buf_init(&l->line, max ? max : LT_LINE_MAX_DEFAULT);
}

void lt_lines_init_mem(struct lt_lines *l, const void *data, size_t len, const char *name,
                       size_t max)
{
    memset(l, 0, sizeof *l);
    l->mem = data;
    l->mem_len = len;
    l->eof = true; /* nothing more to read beyond the memory */
    l->name = name;
    lt_buf_init(&l->line, max ? max : LT_LINE_MAX_DEFAULT);
}

void lt_lines_release(struct lt_lines *l)
{
    free(l->rbuf);
    l->rbuf = NULL;
    lt_buf_release(&l->line);
}

/* Make more input available; 0 when there is none left. */
static int refill(struct lt_lines *l, struct lt_err *err)
{
    if (l->mem_pos < l->mem_len)
        return 1;
    if (l->eof || !l->f)
        return 0;
    if (!l->rbuf && !(l->rbuf = malloc(READ_CHUNK)))
        return lt_errset(err, LT_ENOMEM, "%s: out of memory", l->name);
    size_t n = fread(l->rbuf, 1, READ_CHUNK, l->f);
    if (n < READ_CHUNK) {
        if (ferror(l->f))
            return lt_errset(err, LT_EIO, "%s:%llu: read failed: %s", l->name,
                             (unsigned long long)l->lineno + 1, strerror(errno));
        l->eof = true;
    }
    l->mem = l->rbuf;
    l->mem_len = n;
    l->mem_pos = 0;
    return n > 0;
}

int lt_lines_next(struct lt_lines *l, enum lt_line_end *end, struct lt_err *err)
{
    int rc = 0;
    bool any = false, too_long = false;
    enum lt_line_end how = LT_LINE_EOF;
    lt_buf_reset(&l->line);
    for (;;) {
        if ((rc = refill(l, err)) < 0)
            goto out;
        if (rc == 0)
            break;
        any = true;
        const char *p = l->mem + l->mem_pos;
        size_t avail = l->mem_len - l->mem_pos;
        const char *nl = memchr(p, '\n', avail);
        size_t take = nl ? (size_t)(nl - p) : avail;
        if (!too_long && lt_buf_append(&l->line, p, take) < 0)
            too_long = true; /* keep consuming up to the newline, then report */
        l->mem_pos += take + (nl != NULL);
        if (nl) {
            how = LT_LINE_LF;
            break;
        }
    }
    if (!any) {
        rc = 0;
        goto out;
    }
    l->lineno++;
    if (too_long) {
        rc = lt_errset(err, LT_ELIMIT, "%s:%llu: line longer than %zu bytes", l->name,
                       (unsigned long long)l->lineno, l->line.max);
        lt_buf_reset(&l->line);
        goto out;
    }
    if (how == LT_LINE_LF && l->line.len && l->line.p[l->line.len - 1] == '\r') {
        l->line.p[--l->line.len] = '\0';
        how = LT_LINE_CRLF;
    }
    if (!l->line.p) /* an empty line: give callers a valid empty string */
        lt_buf_append(&l->line, "", 0);
    rc = 1;
out:
    if (end)
        *end = how;
    return rc;
}

/*
 * Lines of text from a FILE* or from bytes in memory, one at a time, with a
 * hard cap on a line's length. The importers stand on it (the CSV reader
 * and the JSON-lines parsers), so that every input, however large or
 * hostile, is read in bounded memory and every error can name its line.
 *
 * A line ends at LF; a CR just before the LF is part of the terminator, not
 * of the line (CRLF files). The last line needs no terminator.
 */
#ifndef LT_LINES_H
#define LT_LINES_H

#include "base/lt_buf.h"
#include "base/lt_err.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define LT_LINE_MAX_DEFAULT ((size_t)64 << 20)

/* How a line ended. */
enum lt_line_end {
    LT_LINE_EOF = 0,  /* the input ended without a terminator */
    LT_LINE_LF = 1,   /* "\n" */
    LT_LINE_CRLF = 2, /* "\r\n" */
};

struct lt_lines {
    FILE *f;         /* NULL when reading memory */
    const char *mem; /* memory input, or the FILE's read buffer */
    size_t mem_len, mem_pos;
    char *rbuf; /* read buffer for f */
    bool eof;
    const char *name;   /* for messages */
    uint64_t lineno;    /* 1-based number of the line last returned */
    struct lt_buf line; /* the line last returned, without terminator */
};

/* Read from f (not closed by lt_lines_release), or from len bytes at data
 * (not copied: they must outlive the reader). name is used in messages and
 * must outlive the reader too. max = 0 means LT_LINE_MAX_DEFAULT. */
void lt_lines_init_file(struct lt_lines *l, FILE *f, const char *name, size_t max);
void lt_lines_init_mem(struct lt_lines *l, const void *data, size_t len, const char *name,
                       size_t max);
void lt_lines_release(struct lt_lines *l);

/* Read the next line into l->line (NUL-terminated, terminator removed).
 * Returns 1, 0 at the end of the input, or LT_EIO / LT_ELIMIT / LT_ENOMEM
 * with err filled ("NAME:LINE: ..."). end (may be NULL) says how the line
 * ended. After LT_ELIMIT the rest of the long line has been consumed, so
 * reading may go on with the next line. */
int lt_lines_next(struct lt_lines *l, enum lt_line_end *end, struct lt_err *err);

#endif

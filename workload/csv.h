/*
 * A small CSV reader (RFC 4180) for the public traces loadtrace imports.
 *
 * Fields are separated by commas and records by LF or CRLF; the last record
 * may lack a terminator. A CR alone outside quotes in the first record is
 * an error that says so: a file of CR-only line ends (classic Mac OS)
 * would read as one line; in later records such a CR is data. A field in double quotes may
 * hold commas, quotes (written twice) and line breaks, which are kept as they were in the file.
 * Anything else is an error that names the line and the field, never a
 * guess: a quote inside an unquoted field, text after a closing quote, a
 * quoted field that never ends, a NUL byte. A UTF-8 byte order mark before
 * the first record is skipped. Memory is bounded: a record (all its lines)
 * may be at most max bytes and have at most LT_CSV_MAX_FIELDS fields.
 */
#ifndef LT_CSV_H
#define LT_CSV_H

#include "base/lt_buf.h"
#include "base/lt_err.h"
#include "base/lt_lines.h"

#include <stdint.h>
#include <stdio.h>

#define LT_CSV_MAX_FIELDS 65536u

struct lt_csv_field {
    const char *p; /* NUL-terminated, quotes removed */
    size_t len;
};

struct lt_csv_row {
    uint32_t n;                   /* fields; an empty line is one empty field */
    const struct lt_csv_field *f; /* valid until the next lt_csv_next */
    uint64_t line;                /* line the record starts on (1-based) */
};

struct lt_csv {
    struct lt_lines src;
    struct lt_buf rec; /* the record's unquoted fields, NUL-separated */
    size_t *off;       /* field start offsets in rec */
    struct lt_csv_field *fields;
    uint32_t cap;
    bool started;    /* the BOM check has been done */
    bool first_read; /* a whole record has been read */
};

/* Read from f (not closed by release) or from len bytes at data (not
 * copied). name (for messages) must outlive the reader. max = 0 means
 * LT_LINE_MAX_DEFAULT (64 MiB). */
void lt_csv_init_file(struct lt_csv *c, FILE *f, const char *name, size_t max);
void lt_csv_init_mem(struct lt_csv *c, const void *data, size_t len, const char *name, size_t max);
void lt_csv_release(struct lt_csv *c);

/* Read the next record. Returns 1 and fills row, 0 at the end of the input,
 * or a negative LT_E* code with err filled ("NAME:LINE: ..."). After
 * LT_EFORMAT or LT_ELIMIT the line holding the error has been consumed, so
 * reading may go on with the next line (to skip bad rows); after LT_ETRUNC
 * the input is exhausted. */
int lt_csv_next(struct lt_csv *c, struct lt_csv_row *row, struct lt_err *err);

#endif

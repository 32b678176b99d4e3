/*
 * Writing JSON by hand: the one string escaper and number form that every
 * JSON loadtrace writes goes through (`cat`, `export`, `info --json`,
 * request bodies, `analyze --json`, `compare --json`), so the same string
 * comes out the same everywhere. Strings are bytes: '"' and '\' are
 * escaped, \n \r \t get their short forms, other bytes below 0x20 become
 * \u00XX, valid UTF-8 is copied as it is, and a byte that is not part of
 * valid UTF-8 becomes \ufffd (U+FFFD, the replacement character): the
 * output is always valid JSON, whatever bytes a file holds (importers
 * refuse such bytes, so loadtrace's own files do not have them).
 */
#ifndef LT_JSON_H
#define LT_JSON_H

#include "base/lt_buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Append the n bytes at s as a JSON string literal, quotes included (s may
 * be NULL when n is 0). Returns 0 or a negative LT_E* code from out. */
int lt_json_str(struct lt_buf *out, const char *s, size_t n);
/* Whether the n bytes at s are valid UTF-8 (RFC 3629). */
bool lt_json_utf8_ok(const char *s, size_t n);
/* The same literal, written to f. */
void lt_json_fstr(FILE *f, const char *s, size_t n);
/* A number with 10 significant digits; JSON has no NaN or infinity, so
 * those are written as null. */
void lt_json_fnum(FILE *f, double v);

#endif

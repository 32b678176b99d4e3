/*
 * The two JSON writing helpers that analyze's and compare's --json output
 * share: base/lt_json.h's, for NUL-terminated strings. Internal to
 * analyze/.
 */
#ifndef LT_ANALYZE_JSON_H
#define LT_ANALYZE_JSON_H

#include "base/lt_json.h"

#include <stdio.h>
#include <string.h>

/* A number; JSON has no NaN or infinity, so those print as null. */
static inline void lt_analyze_jnum(FILE *out, double v)
{
    lt_json_fnum(out, v);
}
/* A string literal, quotes included, with the escapes JSON requires. */
static inline void lt_analyze_jstr(FILE *out, const char *s)
{
    lt_json_fstr(out, s, strlen(s));
}

#endif

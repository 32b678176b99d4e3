/*
 * The two JSON writing helpers that analyze's and compare's --json output
 * share (defined in analyze_report.c). Internal to analyze/.
 */
#ifndef LT_ANALYZE_JSON_H
#define LT_ANALYZE_JSON_H

#include <stdio.h>

/* A number; JSON has no NaN or infinity, so those print as null. */
void lt_analyze_jnum(FILE *out, double v);
/* A string literal, quotes included, with the escapes JSON requires. */
void lt_analyze_jstr(FILE *out, const char *s);

#endif

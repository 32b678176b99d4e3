/*
 * The report of `loadtrace info`: what workload/trace_info.h computed about
 * a trace, as aligned text with units, or as one JSON object (schema in
 * docs/info.md). Rendering only; the figures are lt_info's.
 */
#ifndef LT_INFO_RENDER_H
#define LT_INFO_RENDER_H

#include "base/lt_err.h"
#include "workload/trace_info.h"

#include <stdio.h>

/* Write the text report of in (a finished lt_info) to out; path names the
 * file and source is its header's source ("" = unknown). */
void lt_info_render_text(FILE *out, const struct lt_info *in, const char *path, const char *source);

/* Write the JSON object and its newline to out. Returns 0, or a negative
 * LT_E* code with err filled when the object does not fit in 1 MiB or
 * memory runs out (then nothing is written). */
int lt_info_render_json(FILE *out, const struct lt_info *in, const char *path, const char *source,
                        struct lt_err *err);

#endif

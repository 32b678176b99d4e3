/*
 * The prompt and output lengths a replay asks for, from a trace record.
 * One rule, shared by the live replay's request builder and the virtual
 * replay, so that both send the same work:
 *
 *   prompt  `in`, else the sum of the messages' tokens, else 1;
 *   output  `out`, else `max_tokens`, else default_out; at least 1.
 */
#ifndef LT_TRACE_LENGTHS_H
#define LT_TRACE_LENGTHS_H

#include "traces/trace_format.h"

void lt_record_lengths(const struct lt_record *r, uint32_t default_out, uint32_t *want_in,
                       uint32_t *want_out);

#endif

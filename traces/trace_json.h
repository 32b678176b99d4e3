/*
 * loadtrace values as JSON: the text form of the format, used by `cat`,
 * `export --to jsonl` and `import --from jsonl`. Every key, type and unit is
 * the same as in the msgpack form (docs/trace-format.md), so
 * cat | import --from jsonl round-trips without loss.
 */
#ifndef LT_TRACE_JSON_H
#define LT_TRACE_JSON_H

#include "base/lt_buf.h"
#include "base/lt_err.h"
#include "base/lt_json.h" /* lt_json_str: strings are escaped there */
#include "traces/trace_format.h"
#include "traces/trace_reader.h"

/* Append one JSON object (no newline) for the value to out. Unknown keys
 * kept in `extra` are written too. Returns 0 or a negative LT_E* code. */
int lt_trace_json_header(struct lt_buf *out, const struct lt_header *h);
int lt_trace_json_record(struct lt_buf *out, const struct lt_record *r);
int lt_trace_json_run(struct lt_buf *out, const struct lt_run *r);
int lt_trace_json_result(struct lt_buf *out, const struct lt_result *r);
int lt_trace_json_scrape(struct lt_buf *out, const struct lt_scrape *s);
int lt_trace_json_check(struct lt_buf *out, const struct lt_check *k);
int lt_trace_json_verdict(struct lt_buf *out, const struct lt_verdict *v);
int lt_trace_json_answer(struct lt_buf *out, const struct lt_answer *a);
int lt_trace_json_item(struct lt_buf *out, const struct lt_item *it);

/* Append raw msgpack (one value) as JSON. */
int lt_trace_json_msgpack(struct lt_buf *out, const uint8_t *data, size_t len);

#endif

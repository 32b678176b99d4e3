/*
 * The msgpack keys of the format that are not fields of a record (those
 * are in trace_schema.h's table): the header's and the result block's, and
 * the columns of a result block, named by the result fields of the table.
 * Shared by the writer and the reader (and by nothing else: other modules
 * use the structs). Keep in step with docs/trace-format.md.
 */
#ifndef LT_TRACE_KEYS_H
#define LT_TRACE_KEYS_H

#include "traces/trace_schema.h"

/* header */
#define K_FORMAT "format"
#define K_VERSION "version"
#define K_KIND "kind"
#define K_CREATED "created"
#define K_SOURCE "source"
#define K_BLOCK_TOKENS "block_tokens"
#define K_META "meta"
#define K_ORDER "order" /* "completion": records in completion order (§2.3) */

/* "rec": "run" marks a run record, "rec": "block" a result block */
#define K_REC "rec"

/* result block (docs/trace-format.md §2.6): the columns are named by the
 * result keys */
#define K_BLOCK "block"
#define K_SCRAPE "scrape"
#define K_CHECK "check"
#define K_VERDICT "verdict"
#define K_ANSWER "answer"
#define K_N "n"
#define K_BYTES "bytes" /* the size of each value after it, so columns are found at once */

/* The columns of a result block, in the order the writer writes them: one
 * per result field of trace_schema.h, in its order, so BC_x is LT_RES_x. */
#define LT_BCOL_ID(id, ...) BC_##id = LT_RES_##id,
enum lt_bcol { LT_RESULT_FIELDS(LT_BCOL_ID) BC_N };
/* The string columns, err to err_body, in a row: each has its own table of
 * strings a later element may refer back to. */
#define LT_BSTR_N (BC_ERR_BODY - BC_ERR + 1)
#undef LT_BCOL_ID

#define LT_BCOL_KEY(id, key, ...) key,
static const char *const lt_bcol_key[BC_N] = {LT_RESULT_FIELDS(LT_BCOL_KEY)};
#undef LT_BCOL_KEY

#endif

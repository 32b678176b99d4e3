/*
 * The msgpack map keys of the format (version 2: version 1's and the result
 * block's), in one place, shared by the writer and the reader (and by
 * nothing else: other modules use the structs).
 * Keep in step with docs/trace-format.md.
 */
#ifndef LT_TRACE_KEYS_H
#define LT_TRACE_KEYS_H

/* header */
#define K_FORMAT "format"
#define K_VERSION "version"
#define K_KIND "kind"
#define K_CREATED "created"
#define K_SOURCE "source"
#define K_BLOCK_TOKENS "block_tokens"
#define K_META "meta"

/* trace record */
#define K_T "t"
#define K_SESSION "session"
#define K_TURN "turn"
#define K_THINK "think"
#define K_API "api"
#define K_MODEL "model"
#define K_IN "in"
#define K_CACHED "cached"
#define K_OUT "out"
#define K_REASONING "reasoning"
#define K_MAX_TOKENS "max_tokens"
#define K_MSGS "msgs"
#define K_TOOLS "tools"
#define K_CALLS "calls"
#define K_BLOCKS "blocks"
#define K_ORIG "orig"
#define K_STATUS "status"
#define K_TTFT "ttft"
#define K_E2E "e2e"
#define K_FINISH "finish"
#define K_TEXT "text"
#define K_FAILED "failed"
#define K_EST "est"

/* run record (has K_REC = "run") */
#define K_REC "rec"
#define K_RUN "run"
#define K_MODE "mode"
#define K_CONCURRENCY "concurrency"
#define K_RATE "rate"
#define K_SPEED "speed"
#define K_TARGET "target"
#define K_START "start"
#define K_WARMUP "warmup"

/* result record */
#define K_I "i"
#define K_SCHED "sched"
#define K_SENT "sent"
#define K_FB "fb"
#define K_FT "ft"
#define K_FC "fc"
#define K_END "end"
#define K_CHUNKS "chunks"
#define K_WANT_IN "want_in"
#define K_WANT_OUT "want_out"
#define K_ERR "err"
#define K_COUNT "count"

/* result block (has K_REC = "block"; docs/trace-format.md §2.6): the
 * columns are named by the result keys above */
#define K_BLOCK "block"
#define K_N "n"
#define K_BYTES "bytes" /* the size of each value after it, so columns are found at once */

/* The columns of a result block, in the order the writer writes them, and
 * the result key each is named by. */
enum lt_bcol {
    BC_I, BC_RUN, BC_SCHED, BC_SENT, BC_FB, BC_FT, BC_FC, BC_END, BC_CHUNKS, BC_IN, BC_OUT,
    BC_REASONING, BC_CACHED, BC_WANT_IN, BC_WANT_OUT, BC_STATUS, BC_ERR, BC_FINISH, BC_COUNT,
    BC_WARMUP, BC_N
};

static const char *const lt_bcol_key[BC_N] = {
    K_I,        K_RUN,    K_SCHED, K_SENT,   K_FB,        K_FT,     K_FC,
    K_END,      K_CHUNKS, K_IN,    K_OUT,    K_REASONING, K_CACHED, K_WANT_IN,
    K_WANT_OUT, K_STATUS, K_ERR,   K_FINISH, K_COUNT,     K_WARMUP,
};

#endif

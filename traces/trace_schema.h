/*
 * The fields of the format's values, in one table: each key of a trace
 * record, a run record and a result, its type, where it lives in the
 * struct (trace_format.h), when it is present, and what a reader requires
 * of it. The writer packs, the reader's map decoder decodes, JSON output
 * prints and JSON-lines import parses a value by walking its table, so a
 * new field is one line below (plus, for a result, its block column:
 * result blocks are hand-written for speed, see trace_writer.c and
 * reader_blocks.c, and take their key names from here).
 *
 * The order of a list is the order in which keys are written, in msgpack
 * and in JSON; a result's order is also that of the columns of a result
 * block (enum lt_bcol in trace_keys.h). docs/trace-format.md §2 is the
 * normative description; keep the two in step.
 */
#ifndef LT_TRACE_SCHEMA_H
#define LT_TRACE_SCHEMA_H

#include "traces/trace_format.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How a field is encoded. The first group is handled by every walker
 * alike; the rest have a shape of their own, coded once in each walker. */
enum lt_ftype {
    LT_FT_I64,    /* int64_t; µs */
    LT_FT_I32,    /* int32_t (an HTTP status) */
    LT_FT_U64,    /* uint64_t */
    LT_FT_U32,    /* uint32_t */
    LT_FT_F64,    /* double, finite */
    LT_FT_STR,    /* const char *, NUL-terminated; NULL: absent */
    LT_FT_TEXT,   /* const char * with its length in the next member (text_len) */
    LT_FT_FLAG,   /* a `has` bit, written as true when set */
    LT_FT_BOOL,   /* bool, written when true */
    LT_FT_REC,    /* "rec": "run" (a run record's kind) */
    LT_FT_MSGS,   /* [[role, tokens], ...] */
    LT_FT_TOOLS,  /* [count, tokens] */
    LT_FT_CALLS,  /* [uint, ...] */
    LT_FT_BLOCKS, /* [uint64, ...] */
    LT_FT_ORIG,   /* {status, ttft, e2e} */
    LT_FT_CHUNKS, /* [dt, tokens, ...] */
    LT_FT_SREC,   /* "rec": "scrape" (a scrape sample's kind) */
    LT_FT_VALS,   /* {name: float, ...}; the count in the next member */
    LT_FT_HISTS,  /* {name: [sum, count, le, cum, le, cum, ...]}; the count next */
    LT_FT_CREC,   /* "rec": "check" (a run's self-check) */
    LT_FT_VREC,   /* "rec": "verdict" (a capacity probe's verdict) */
    LT_FT_AREC,   /* "rec": "answer" (a capacity search's answer) */
};

/* Field flags. */
enum {
    LT_FF_ALWAYS = 1u << 0,  /* always written (a NULL string as "") */
    LT_FF_NEEDED = 1u << 1,  /* a reader refuses a value without it */
    LT_FF_NONZERO = 1u << 2, /* present when not 0 (no `has` bit) */
    LT_FF_NONNEG = 1u << 3,  /* must not be negative */
};

struct lt_field {
    const char *key;
    uint8_t klen;
    uint8_t type; /* enum lt_ftype */
    uint16_t off; /* of the member in its struct */
    uint32_t bit; /* the `has` bits that say it is present; 0: see flags and type */
    uint32_t flags;
};

/* X(id, key, type, member, bit, flags) */
#define LT_RECORD_FIELDS(X)                                                                        \
    X(T, "t", I64, t, 0, LT_FF_ALWAYS | LT_FF_NEEDED | LT_FF_NONNEG)                               \
    X(SESSION, "session", U64, session, LT_HAS_SESSION, 0)                                         \
    X(SESSION_ID, "session_id", STR, session_id, 0, 0)                                             \
    X(TURN, "turn", U32, turn, LT_HAS_TURN, 0)                                                     \
    X(THINK, "think", I64, think, LT_HAS_THINK, 0)                                                 \
    X(API, "api", STR, api, 0, 0)                                                                  \
    X(MODEL, "model", STR, model, 0, 0)                                                            \
    X(IN, "in", U32, in, LT_HAS_IN, 0)                                                             \
    X(CACHED, "cached", U32, cached, LT_HAS_CACHED, 0)                                             \
    X(OUT, "out", U32, out, LT_HAS_OUT, 0)                                                         \
    X(REASONING, "reasoning", U32, reasoning, LT_HAS_REASONING, 0)                                 \
    X(MAX_TOKENS, "max_tokens", U32, max_tokens, LT_HAS_MAX_TOKENS, 0)                             \
    X(MSGS, "msgs", MSGS, msgs, LT_HAS_MSGS, 0)                                                    \
    X(TOOLS, "tools", TOOLS, tools_count, LT_HAS_TOOLS, 0)                                         \
    X(CALLS, "calls", CALLS, calls, LT_HAS_CALLS, 0)                                               \
    X(BLOCKS, "blocks", BLOCKS, blocks, LT_HAS_BLOCKS, 0)                                          \
    X(ORIG, "orig", ORIG, orig_status, LT_HAS_ORIG_STATUS | LT_HAS_ORIG_TTFT | LT_HAS_ORIG_E2E, 0) \
    X(CANCEL_AFTER, "cancel_after", I64, cancel_after, LT_HAS_CANCEL_AFTER, LT_FF_NONNEG)          \
    X(CANCEL_TOKENS, "cancel_tokens", U32, cancel_tokens, LT_HAS_CANCEL_TOKENS, 0)                 \
    X(FINISH, "finish", STR, finish, 0, 0)                                                         \
    X(TEXT, "text", TEXT, text, 0, 0)                                                              \
    X(FAILED, "failed", FLAG, has, LT_HAS_FAILED, 0)                                               \
    X(EST, "est", FLAG, has, LT_HAS_ESTIMATED, 0)

#define LT_RUN_FIELDS(X)                                                                           \
    X(REC, "rec", REC, id, 0, LT_FF_ALWAYS)                                                        \
    X(RUN, "run", U32, id, 0, LT_FF_ALWAYS | LT_FF_NEEDED)                                         \
    X(MODE, "mode", STR, mode, 0, LT_FF_ALWAYS)                                                    \
    X(CONCURRENCY, "concurrency", U32, concurrency, 0, LT_FF_NONZERO)                              \
    X(RATE, "rate", F64, rate, 0, 0)                                                               \
    X(SPEED, "speed", F64, speed, 0, 0)                                                            \
    X(TARGET, "target", STR, target, 0, 0)                                                         \
    X(MODEL, "model", STR, model, 0, 0)                                                            \
    X(START, "start", STR, start, 0, 0)                                                            \
    X(VERSION, "version", STR, version, 0, 0)                                                      \
    X(WARMUP, "warmup", U32, warmup, 0, LT_FF_NONZERO)                                             \
    X(SEARCH, "search", STR, search, 0, 0)                                                         \
    X(ENGINE, "engine", STR, engine, 0, 0)                                                         \
    X(LOAD, "load", F64, load, 0, 0)                                                               \
    X(SLO, "slo", STR, slo, 0, 0)                                                                  \
    X(ATTAIN_TARGET, "attain_target", F64, attain_target, 0, 0)                                    \
    X(WINDOW, "window", STR, window, 0, 0)                                                         \
    X(ATTAIN, "attain", F64, attain, 0, 0)                                                         \
    X(ATTAIN_LO, "attain_lo", F64, attain_lo, 0, 0)                                                \
    X(ATTAIN_HI, "attain_hi", F64, attain_hi, 0, 0)                                                \
    X(VERDICT, "verdict", STR, verdict, 0, 0)                                                      \
    X(WHY, "why", STR, why, 0, 0)

/* The order is that of a result block's columns (enum lt_bcol). */
#define LT_RESULT_FIELDS(X)                                                                        \
    X(I, "i", U64, index, 0, LT_FF_ALWAYS | LT_FF_NEEDED)                                          \
    X(RUN, "run", U32, run, 0, LT_FF_ALWAYS | LT_FF_NEEDED)                                        \
    X(SCHED, "sched", I64, sched, 0, LT_FF_ALWAYS | LT_FF_NEEDED)                                  \
    X(SENT, "sent", I64, sent, LT_RHAS_SENT, 0)                                                    \
    X(FB, "fb", I64, first_byte, LT_RHAS_FIRST_BYTE, 0)                                            \
    X(FT, "ft", I64, first_token, LT_RHAS_FIRST_TOKEN, 0)                                          \
    X(FC, "fc", I64, first_content, LT_RHAS_FIRST_CONTENT, 0)                                      \
    X(END, "end", I64, end, LT_RHAS_END, 0)                                                        \
    X(CHUNKS, "chunks", CHUNKS, chunks, LT_RHAS_CHUNKS, 0)                                         \
    X(IN, "in", U32, in, LT_RHAS_IN, 0)                                                            \
    X(OUT, "out", U32, out, LT_RHAS_OUT, 0)                                                        \
    X(REASONING, "reasoning", U32, reasoning, LT_RHAS_REASONING, 0)                                \
    X(CACHED, "cached", U32, cached, LT_RHAS_CACHED, 0)                                            \
    X(WANT_IN, "want_in", U32, want_in, LT_RHAS_WANT_IN, 0)                                        \
    X(WANT_OUT, "want_out", U32, want_out, LT_RHAS_WANT_OUT, 0)                                    \
    X(STATUS, "status", I32, status, LT_RHAS_STATUS, 0)                                            \
    X(ERR, "err", STR, err, 0, 0)                                                                  \
    X(FINISH, "finish", STR, finish, 0, 0)                                                         \
    X(COUNT, "count", STR, count, 0, 0)                                                            \
    X(ERR_BODY, "err_body", STR, err_body, 0, 0)                                                   \
    X(WARMUP, "warmup", BOOL, warmup, 0, 0)                                                        \
    X(CANCELLED, "cancelled", BOOL, cancelled, 0, 0)

/* A scrape sample (struct lt_scrape, docs/trace-format.md §2.7). */
#define LT_SCRAPE_FIELDS(X)                                                                        \
    X(REC, "rec", SREC, run, 0, LT_FF_ALWAYS)                                                      \
    X(RUN, "run", U32, run, 0, LT_FF_ALWAYS | LT_FF_NEEDED)                                        \
    X(T, "t", I64, t, 0, LT_FF_ALWAYS | LT_FF_NEEDED)                                              \
    X(DUR, "dur", I64, dur, 0, LT_FF_ALWAYS)                                                       \
    X(EP, "ep", STR, ep, 0, LT_FF_ALWAYS)                                                          \
    X(SERVER, "server", STR, server, 0, 0)                                                         \
    X(ERR, "err", STR, err, 0, 0)                                                                  \
    X(V, "v", VALS, v, 0, 0)                                                                       \
    X(H, "h", HISTS, h, 0, 0)                                                                      \
    X(RAW, "raw", VALS, raw, 0, 0)

/* A run's self-check, written at its end (struct lt_check,
 * docs/trace-format.md §2.8). */
#define LT_CHECK_FIELDS(X)                                                                         \
    X(REC, "rec", CREC, run, 0, LT_FF_ALWAYS)                                                      \
    X(RUN, "run", U32, run, 0, LT_FF_ALWAYS | LT_FF_NEEDED)                                        \
    X(REQUESTS, "requests", U64, requests, 0, LT_FF_ALWAYS)                                        \
    X(SENT, "sent", U64, sent, 0, LT_FF_ALWAYS)                                                    \
    X(OUT_TOKENS, "out_tokens", U64, out_tokens, 0, LT_FF_ALWAYS)                                  \
    X(RATE_ASKED, "rate_asked", F64, rate_asked, 0, 0)                                             \
    X(RATE_GOT, "rate_got", F64, rate_got, 0, 0)                                                   \
    X(INFLIGHT_ASKED, "inflight_asked", F64, inflight_asked, 0, 0)                                 \
    X(INFLIGHT_GOT, "inflight_got", F64, inflight_got, 0, 0)                                       \
    X(CPU_S, "cpu_s", F64, cpu_s, 0, 0)                                                            \
    X(WALL_S, "wall_s", F64, wall_s, 0, 0)                                                         \
    X(SPAN_S, "span_s", F64, span_s, 0, 0)                                                         \
    X(OFF, "off", BOOL, off, 0, 0)                                                                 \
    X(SATURATED, "saturated", BOOL, saturated, 0, 0)                                               \
    X(BATCH, "batch", BOOL, batch, 0, 0)                                                           \
    X(UNSENT, "unsent", U64, unsent, 0, 0)                                                         \
    X(STOPPED_AT_S, "stopped_at_s", F64, stopped_at_s, 0, 0)                                       \
    X(STOPPED_BY, "stopped_by", STR, stopped_by, 0, 0)                                             \
    X(IMG_CHECKED, "img_checked", U64, img_checked, 0, 0)                                          \
    X(IMG_EXACT, "img_exact", U64, img_exact, 0, 0)                                                \
    X(IMG_WANT, "img_want", U64, img_want, 0, 0)                                                   \
    X(IMG_GOT, "img_got", U64, img_got, 0, 0)                                                      \
    X(IMG_UNREPORTED, "img_unreported", U64, img_unreported, 0, 0)                                 \
    X(VID_CHECKED, "vid_checked", U64, vid_checked, 0, 0)                                          \
    X(VID_EXACT, "vid_exact", U64, vid_exact, 0, 0)                                                \
    X(VID_WANT, "vid_want", U64, vid_want, 0, 0)                                                   \
    X(VID_GOT, "vid_got", U64, vid_got, 0, 0)

/* A capacity probe's verdict, written after its results (struct
 * lt_verdict, docs/trace-format.md §2.9). */
#define LT_VERDICT_FIELDS(X)                                                                       \
    X(REC, "rec", VREC, run, 0, LT_FF_ALWAYS)                                                      \
    X(RUN, "run", U32, run, 0, LT_FF_ALWAYS | LT_FF_NEEDED)                                        \
    X(ATTAIN, "attain", F64, attain, 0, 0)                                                         \
    X(ATTAIN_LO, "attain_lo", F64, attain_lo, 0, 0)                                                \
    X(ATTAIN_HI, "attain_hi", F64, attain_hi, 0, 0)                                                \
    X(VERDICT, "verdict", STR, verdict, 0, LT_FF_ALWAYS | LT_FF_NEEDED)                            \
    X(WHY, "why", STR, why, 0, 0)

/* A capacity search's answer, written after its last probe (struct
 * lt_answer, docs/trace-format.md §2.10). */
#define LT_ANSWER_FIELDS(X)                                                                        \
    X(REC, "rec", AREC, end, 0, LT_FF_ALWAYS)                                                      \
    X(END, "end", STR, end, 0, LT_FF_ALWAYS | LT_FF_NEEDED)                                        \
    X(ENGINE, "engine", STR, engine, 0, 0)                                                         \
    X(MAX, "max", F64, max, 0, 0)                                                                  \
    X(FAIL, "fail", F64, fail, 0, 0)                                                               \
    X(GOODPUT, "goodput", F64, goodput, 0, 0)                                                      \
    X(PROBES, "probes", U32, probes, 0, LT_FF_NONZERO)                                             \
    X(VIRTUAL_PROBES, "virtual_probes", U32, virtual_probes, 0, LT_FF_NONZERO)                     \
    X(WALL_S, "wall_s", F64, wall_s, 0, 0)                                                         \
    X(VIRTUAL_CPU_S, "virtual_cpu_s", F64, virtual_cpu_s, 0, 0)                                    \
    X(WHOLE_MAX, "whole_max", F64, whole_max, 0, 0)                                                \
    X(WHOLE_FAIL, "whole_fail", F64, whole_fail, 0, 0)                                             \
    X(PROBES_SAVED, "live_probes_saved", F64, probes_saved, 0, 0)                                  \
    X(WALL_S_SAVED, "wall_s_saved", F64, wall_s_saved, 0, 0)

/* The keys of `orig` in a trace record, and the `has` bit of each. */
#define LT_ORIG_FIELDS(X)                                                                          \
    X(STATUS, "status", I32, orig_status, LT_HAS_ORIG_STATUS, 0)                                   \
    X(TTFT, "ttft", I64, orig_ttft, LT_HAS_ORIG_TTFT, 0)                                           \
    X(E2E, "e2e", I64, orig_e2e, LT_HAS_ORIG_E2E, 0)

/* The index of each field in its table: LT_REC_T, LT_RUN_MODE, LT_RES_END, ... */
#define LT_SCHEMA_ID(prefix, id) prefix##id,
#define LT_SCHEMA_REC_ID(id, ...) LT_SCHEMA_ID(LT_REC_, id)
#define LT_SCHEMA_RUN_ID(id, ...) LT_SCHEMA_ID(LT_RUN_, id)
#define LT_SCHEMA_RES_ID(id, ...) LT_SCHEMA_ID(LT_RES_, id)
#define LT_SCHEMA_ORIG_ID(id, ...) LT_SCHEMA_ID(LT_ORIG_, id)
#define LT_SCHEMA_SCR_ID(id, ...) LT_SCHEMA_ID(LT_SCR_, id)
#define LT_SCHEMA_CHK_ID(id, ...) LT_SCHEMA_ID(LT_CHK_, id)
#define LT_SCHEMA_VRD_ID(id, ...) LT_SCHEMA_ID(LT_VRD_, id)
#define LT_SCHEMA_ANS_ID(id, ...) LT_SCHEMA_ID(LT_ANS_, id)
enum { LT_RECORD_FIELDS(LT_SCHEMA_REC_ID) LT_REC_N };
enum { LT_RUN_FIELDS(LT_SCHEMA_RUN_ID) LT_RUN_N };
enum { LT_RESULT_FIELDS(LT_SCHEMA_RES_ID) LT_RES_N };
enum { LT_ORIG_FIELDS(LT_SCHEMA_ORIG_ID) LT_ORIG_N };
enum { LT_SCRAPE_FIELDS(LT_SCHEMA_SCR_ID) LT_SCR_N };
enum { LT_CHECK_FIELDS(LT_SCHEMA_CHK_ID) LT_CHK_N };
enum { LT_VERDICT_FIELDS(LT_SCHEMA_VRD_ID) LT_VRD_N };
enum { LT_ANSWER_FIELDS(LT_SCHEMA_ANS_ID) LT_ANS_N };

/* The tables, static in every unit that includes this: a walker that
 * indexes them with a constant (one case per field, made from the lists
 * above) is compiled to the code a hand-written one would be. */
#define LT_SCHEMA_ROW(type_, id, key, ft, member, bit, flags)                                      \
    {key, sizeof key - 1, LT_FT_##ft, offsetof(type_, member), bit, flags},
#define LT_SCHEMA_REC_ROW(...) LT_SCHEMA_ROW(struct lt_record, __VA_ARGS__)
#define LT_SCHEMA_RUN_ROW(...) LT_SCHEMA_ROW(struct lt_run, __VA_ARGS__)
#define LT_SCHEMA_RES_ROW(...) LT_SCHEMA_ROW(struct lt_result, __VA_ARGS__)
#define LT_SCHEMA_SCR_ROW(...) LT_SCHEMA_ROW(struct lt_scrape, __VA_ARGS__)
#define LT_SCHEMA_CHK_ROW(...) LT_SCHEMA_ROW(struct lt_check, __VA_ARGS__)
#define LT_SCHEMA_VRD_ROW(...) LT_SCHEMA_ROW(struct lt_verdict, __VA_ARGS__)
#define LT_SCHEMA_ANS_ROW(...) LT_SCHEMA_ROW(struct lt_answer, __VA_ARGS__)

static const struct lt_field lt_schema_record[LT_REC_N] = {LT_RECORD_FIELDS(LT_SCHEMA_REC_ROW)};
static const struct lt_field lt_schema_run[LT_RUN_N] = {LT_RUN_FIELDS(LT_SCHEMA_RUN_ROW)};
static const struct lt_field lt_schema_result[LT_RES_N] = {LT_RESULT_FIELDS(LT_SCHEMA_RES_ROW)};
static const struct lt_field lt_schema_orig[LT_ORIG_N] = {LT_ORIG_FIELDS(LT_SCHEMA_REC_ROW)};
static const struct lt_field lt_schema_scrape[LT_SCR_N] = {LT_SCRAPE_FIELDS(LT_SCHEMA_SCR_ROW)};
static const struct lt_field lt_schema_check[LT_CHK_N] = {LT_CHECK_FIELDS(LT_SCHEMA_CHK_ROW)};
static const struct lt_field lt_schema_verdict[LT_VRD_N] = {LT_VERDICT_FIELDS(LT_SCHEMA_VRD_ROW)};
static const struct lt_field lt_schema_answer[LT_ANS_N] = {LT_ANSWER_FIELDS(LT_SCHEMA_ANS_ROW)};

/* TEXT's length is the member after it. */
_Static_assert(offsetof(struct lt_record, text_len) ==
                   offsetof(struct lt_record, text) + sizeof(const char *),
               "text_len follows text");
/* VALS' and HISTS' counts are the members after them. */
_Static_assert(offsetof(struct lt_scrape, nv) == offsetof(struct lt_scrape, v) + sizeof(void *),
               "nv follows v");
_Static_assert(offsetof(struct lt_scrape, nh) == offsetof(struct lt_scrape, h) + sizeof(void *),
               "nh follows h");
_Static_assert(offsetof(struct lt_scrape, nraw) == offsetof(struct lt_scrape, raw) + sizeof(void *),
               "nraw follows raw");

/* The count member after a VALS or HISTS pointer at p. */
static inline uint32_t lt_schema_count(const void *p)
{
    return *(const uint32_t *)(const void *)((const char *)p + sizeof(void *));
}

/* The index of the field named by the n bytes at k in a table of nf
 * fields, or -1, looking from `hint` on first (a writer's keys come in
 * the table's order, absent ones skipped), then at the rest. */
static inline int lt_schema_find(const struct lt_field *f, int nf, const void *k, size_t n,
                                 int hint)
{
    for (int i = hint; i < nf; i++)
        if (f[i].klen == n && __builtin_memcmp(f[i].key, k, n) == 0)
            return i;
    for (int i = 0; i < hint && i < nf; i++)
        if (f[i].klen == n && __builtin_memcmp(f[i].key, k, n) == 0)
            return i;
    return -1;
}

/* Whether field f of the struct at base (whose presence bits are has) is
 * present: what the writer writes and JSON prints. */
static inline __attribute__((always_inline)) bool lt_schema_present(const struct lt_field *f,
                                                                    const void *base, uint32_t has)
{
    const char *p = (const char *)base + f->off;
    if (f->flags & LT_FF_ALWAYS)
        return true;
    if (f->bit)
        return (has & f->bit) != 0;
    switch (f->type) {
    case LT_FT_STR:
    case LT_FT_TEXT:
        return *(const char *const *)(const void *)p != NULL;
    case LT_FT_VALS:
    case LT_FT_HISTS:
        return *(const void *const *)(const void *)p != NULL;
    case LT_FT_F64:
        return *(const double *)(const void *)p > 0;
    case LT_FT_BOOL:
        return *(const bool *)(const void *)p;
    case LT_FT_U32:
        return *(const uint32_t *)(const void *)p != 0; /* LT_FF_NONZERO */
    case LT_FT_U64:
        return *(const uint64_t *)(const void *)p != 0; /* absent is 0 */
    default:
        return false;
    }
}

#endif

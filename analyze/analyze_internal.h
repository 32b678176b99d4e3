/*
 * What the renderings of an analysis share (the terminal report, the charts
 * and the HTML page): how a level is named, the order runs are shown in,
 * the title of the whole analysis, and the sweep's summary rows. One
 * definition each, so the table, the chart titles and the page name a run
 * the same way. Internal to analyze/ (defined in analyze_report.c). And how
 * analyze and compare open the files they read, salvage included.
 */
#ifndef LT_ANALYZE_INTERNAL_H
#define LT_ANALYZE_INTERNAL_H

#include "analyze/analyze.h"
#include "traces/trace_reader.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The level of a run as a reader says it: "C=16", "rate 2/s", "speed x2",
 * or "run 3" when the run record gave none. */
void lt__analyze_level(const struct lt_analyze_run *r, char *buf, size_t n);

/* Add a self-check record to its run (analyze_check.c). */
void lt__analyze_check_add(struct lt_analyze_run *r, const struct lt_check *k);

/* The runs in display order (indexes into a->runs): the sweep's points by
 * level, then the other runs in file order, a capacity search's other
 * engine's probes by load. Returns how many (a->n_runs). */
uint32_t lt__analyze_run_order(const struct lt_analyze *a, uint32_t *order);

/* Between two probes of one search, of two engines (order[k - 1] and
 * order[k]): the sentence that heads the second engine's rows ("virtual
 * probes below: the model at 1/20 of the load, in its own time ..."), or
 * false when they are not such a pair. */
bool lt__analyze_engine_break(const struct lt_analyze_run *prev, const struct lt_analyze_run *r,
                             char *buf, size_t n);

/* The title of an analysis: what was measured, not a file name
 * ("Concurrency sweep, C=1 to 32", "Request-rate sweep, 1 to 8 req/s",
 * "One run at C=4"), then the model and target when every run shares them. */
void lt__analyze_title(const struct lt_analyze *a, char *buf, size_t n);

/* The SLOs given, as "TTFT<=100ms, E2E<=2000ms", or "" when none (then
 * there is no goodput to show). */
void lt__analyze_slo_text(const struct lt_analyze_opts *o, char *buf, size_t n);

/* The knee as one sentence (or that there is none), for a sweep. */
void lt__analyze_knee_text(const struct lt_analyze *a, char *buf, size_t n);

/* What a result counts as, the one rule of every figure of analyze and
 * compare: cancelled (closed where its trace's client left: neither Ok nor
 * an error, in no latency, token or goodput figure), else Ok (sent,
 * status 200, no error, at least one output token), else an error. Inline:
 * it runs for every result. */
enum lt__analyze_outcome { LT_AO_ERROR, LT_AO_OK, LT_AO_CANCELLED };
static inline enum lt__analyze_outcome lt__analyze_outcome(const struct lt_result *res)
{
    if (res->cancelled)
        return LT_AO_CANCELLED;
    const uint32_t h = res->has;
    /* an embeddings or rerank answer (its "inputs" key) has no output */
    return (h & LT_RHAS_SENT) && (h & LT_RHAS_STATUS) && res->status == 200 && !res->err &&
                   (((h & LT_RHAS_OUT) && res->out >= 1) ||
                    (res->extra.n && lt_extra_get_int(&res->extra, "inputs", &(int64_t){0})))
               ? LT_AO_OK
               : LT_AO_ERROR;
}

/* The measured requests of a run that failed: neither Ok nor cancelled. */
static inline uint64_t lt__analyze_failed(const struct lt_analyze_run *r)
{
    uint64_t done = r->ok + r->cancelled;
    return r->measured > done ? r->measured - done : 0;
}

/* A fleet's run (analyze_fleet.c): from its run record (nothing when it
 * names no replicas), each result (by outcome oc), each scrape sample
 * (true: it is another replica's, kept out of the server section), the
 * run's end; the text and JSON of its table; free (NULL is a no-op). */
int lt__analyze_fleet_run(struct lt_analyze_run *r, const struct lt_run *run, struct lt_err *err);
int lt__analyze_fleet_result(struct lt_analyze_run *r, const struct lt_result *res,
                             enum lt__analyze_outcome oc, struct lt_err *err);
bool lt__analyze_fleet_scrape(struct lt_analyze_run *r, const struct lt_scrape *sc);
void lt__analyze_fleet_finish(struct lt_analyze_run *r);
void lt__analyze_fleet_text(const struct lt_analyze_run *r, FILE *out);
void lt__analyze_fleet_json(const struct lt_analyze_run *r, FILE *out);
void lt__analyze_fleet_free(struct lt_analyze_fleet *f);
/* Two runs compared (compare A B), either a fleet: the routers, replicas,
 * hit rates and balances, and the replicas B saves; nothing (text) or
 * null (JSON) when neither is a fleet. */
void lt__analyze_fleet_compare_text(const struct lt_analyze_run *a, const struct lt_analyze_run *b,
                                    FILE *out);
void lt__analyze_fleet_compare_json(const struct lt_analyze_run *a, const struct lt_analyze_run *b,
                                    FILE *out);

/* Open a file of the given kind as analyze and compare read it: with
 * salvage, every intact frame of a damaged file, on_skip (may be NULL)
 * hearing of each piece skipped (their --salvage). */
static inline struct lt_reader *lt__analyze_open(const char *path, enum lt_kind kind, bool salvage,
                                                 void (*on_skip)(void *ud, const char *what),
                                                 void *ud, struct lt_err *err)
{
    struct lt_reader_opts ro = {.salvage = salvage, .on_skip = on_skip, .ud = ud};
    return lt_reader_open_kind(path, kind, &ro, err);
}

#endif

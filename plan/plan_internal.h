/*
 * What plan.c (the run state machine) and plan_stream.c (a plan over a
 * streamed trace) share, and nothing outside plan/ sees. Each function
 * here is called only where p->streamed; see plan/README.md "Streaming".
 */
#ifndef LT_PLAN_INTERNAL_H
#define LT_PLAN_INTERNAL_H

#include "plan/plan.h"

/* lt_plan_init of a streamed trace: the readings that size and scale the
 * schedule (none lays anything out). Returns 0 or an LT_E* code. */
int lt__plan_stream_init(struct lt_plan *p, struct lt_err *err);
void lt__plan_stream_release(struct lt_plan *p);
/* lt_plan_start of a streamed trace: the reading from the first record
 * again, and seq 0 laid out. */
int lt__plan_stream_start(struct lt_plan *p, uint32_t run, struct lt_err *err);
/* The run's last due time (struct lt_plan's sched_end), or -1. */
int64_t lt__plan_stream_sched_end(const struct lt_plan *p);
/* Read LT_PLAN_LOOKAHEAD seqs ahead of seq k and lay out through k. */
int lt__plan_stream_ahead(struct lt_plan *p, size_t k, struct lt_err *err);
/* Give back what is DONE below min(upto, the oldest seq in play). */
void lt__plan_stream_give_back(struct lt_plan *p, size_t upto);
/* lt_plan_hold of a streamed plan, seq < nseq. */
int lt__plan_stream_hold(struct lt_plan *p, size_t seq, struct lt_err *err);
/* A closed loop: the seq that leaves next (*seq; the cursor moved past
 * it), 1; 0 when none may (the run's end, or every candidate waits for
 * its previous turn); or an LT_E* code. */
int lt__plan_stream_next_closed(struct lt_plan *p, size_t *seq, struct lt_err *err);
/* A closed loop's time limit: what was not sent is not in the run. */
void lt__plan_stream_time_up(struct lt_plan *p);

#endif

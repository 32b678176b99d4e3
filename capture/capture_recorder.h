/*
 * The recorder: writes finished requests to the trace in arrival order.
 *
 * The trace format wants records in non-decreasing arrival time, but
 * requests finish out of order. Each request takes a place in arrival
 * order when it arrives (lt_capture_recorder_arrive, which also stamps its
 * arrival time); when it finishes, its call is handed over
 * (lt_capture_recorder_done) and held until every earlier place is done.
 * A writer thread writes whatever run of places is ready, and closes a
 * frame at least every second (lt_writer_tick), so a crash loses at most
 * the last second of finished requests.
 *
 * Held records are bounded by max_held places: a request that arrives
 * while max_held places are taken is not recorded (it is still proxied)
 * and is counted in `dropped`.
 *
 * Thread-safe: arrive and done may be called from any thread.
 */
#ifndef LT_CAPTURE_RECORDER_H
#define LT_CAPTURE_RECORDER_H

#include "capture/capture_call.h"
#include "traces/lt_err.h"
#include "traces/lt_time.h"
#include "traces/trace_writer.h"

#include <stdint.h>

struct lt_capture_recorder;

struct lt_capture_recorder_stats {
    uint64_t written; /* records written */
    uint64_t dropped; /* requests not recorded: too many held */
    uint64_t lost;    /* places never completed (at close) or failed to write */
};

/* Start the writer thread on w (still owned by the caller, who closes it
 * after lt_capture_recorder_close). start is time 0 of the trace. */
struct lt_capture_recorder *lt_capture_recorder_new(struct lt_writer *w, lt_mono start,
                                                    uint32_t max_held, struct lt_err *err);
/* Take the next place: *seq for lt_capture_recorder_done, *t the arrival
 * in us. Returns 0, or LT_ELIMIT when too many records are held. */
int lt_capture_recorder_arrive(struct lt_capture_recorder *r, uint64_t *seq, int64_t *t);
/* Place seq is finished; the recorder takes c (NULL: nothing to write). */
void lt_capture_recorder_done(struct lt_capture_recorder *r, uint64_t seq,
                              struct lt_capture_call *c);
/* Write everything finished, stop the thread and free the recorder. Places
 * still open are lost (counted). Returns 0 or the first write error. */
int lt_capture_recorder_close(struct lt_capture_recorder *r, struct lt_capture_recorder_stats *st,
                              struct lt_err *err);

#endif

/*
 * The recorder: writes each request to the trace when it finishes.
 *
 * Requests finish out of order, and one long stream must never hold back
 * the records of the requests that finished behind it (a crash would take
 * them all). So records go to the file in completion order: the writer is
 * opened with `completion_order` (the header says `order: completion`,
 * docs/trace-format.md §2.3) and readers that open a trace by kind get it
 * sorted back into arrival order. Each request is stamped with its arrival
 * time when it arrives (lt_capture_recorder_arrive); its call is handed
 * over when it finishes (lt_capture_recorder_done) and queued for one
 * writer thread, which writes whatever is queued and closes a frame at
 * least every second (lt_writer_tick), so a crash loses at most the last
 * second of finished requests. A request still running after half a
 * second (lt_capture_recorder_started) is also written as it was sent,
 * marked `err: "unfinished"`; its final record replaces that one for
 * readers (docs/trace-format.md §2.3), so a crash leaves the requests in
 * flight in the file too, as begun and unfinished.
 *
 * Bounded by max_held requests recorded at once (in flight or queued): a
 * request that arrives while max_held are taken is not recorded (it is
 * still proxied) and is counted in `dropped`.
 *
 * Thread-safe: arrive and done may be called from any thread.
 */
#ifndef LT_CAPTURE_RECORDER_H
#define LT_CAPTURE_RECORDER_H

#include "capture/capture_call.h"
#include "base/lt_err.h"
#include "base/lt_time.h"
#include "traces/trace_writer.h"

#include <stdint.h>

struct lt_capture_recorder;

struct lt_capture_recorder_stats {
    uint64_t written;    /* records written */
    uint64_t dropped;    /* requests not recorded: too many held */
    uint64_t lost;       /* requests never finished (at close) or failed to write */
    uint64_t changed;    /* records written with values not as sent (`changed`) */
    uint64_t unfinished; /* `err: unfinished` records of requests still running */
};

/* Start the writer thread on w (still owned by the caller, who closes it
 * after lt_capture_recorder_stop; opened with completion_order). start is
 * time 0 of the trace; max_held 0 is 65536. */
struct lt_capture_recorder *lt_capture_recorder_start(struct lt_writer *w, lt_mono start,
                                                      uint32_t max_held, struct lt_err *err);
/* A request arrives: *seq for lt_capture_recorder_done, *t the arrival in
 * us. Returns 0, or LT_ELIMIT when max_held requests are being recorded. */
int lt_capture_recorder_arrive(struct lt_capture_recorder *r, uint64_t *seq, int64_t *t);
/* The request's body is read (c holds what it said): from now until
 * lt_capture_recorder_done, the recorder may write its unfinished record,
 * reading only what the request said while the answer is being read. */
void lt_capture_recorder_started(struct lt_capture_recorder *r, struct lt_capture_call *c);
/* True once a write of the trace failed (err, if not NULL, gets the
 * error): the writer takes nothing more, and the requests from then on
 * are relayed and counted lost. Any thread. */
bool lt_capture_recorder_failed(struct lt_capture_recorder *r, struct lt_err *err);
/* Request seq is finished; the recorder takes c (NULL: nothing to write). */
void lt_capture_recorder_done(struct lt_capture_recorder *r, uint64_t seq,
                              struct lt_capture_call *c);
/* A watcher of what is written (the live dashboard): fn is called on the
 * writer thread with each finished record right after it was put, as the
 * trace has it. Set it before the first request arrives. */
typedef void (*lt_capture_record_fn)(void *ud, const struct lt_record *rec);
void lt_capture_recorder_watch(struct lt_capture_recorder *r, lt_capture_record_fn fn, void *ud);
/* Now: records written so far, finished records waiting for the writer
 * (its backlog), and requests arrived and not finished. Any thread. */
void lt_capture_recorder_now(struct lt_capture_recorder *r, uint64_t *written, uint64_t *queued,
                             uint64_t *open);
/* Write everything finished, stop the thread and free the recorder.
 * Requests still open are lost (counted). Returns 0 or the first write
 * error. */
int lt_capture_recorder_stop(struct lt_capture_recorder *r, struct lt_capture_recorder_stats *st,
                             struct lt_err *err);

#endif

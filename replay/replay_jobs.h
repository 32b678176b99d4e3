/*
 * A trace's requests, loaded for a replay: every record copied out of the
 * reader (messages, blocks and text included), with each session's turns
 * linked (prev/next), so the live replay and the virtual one read a trace
 * the same way and ask for the same lengths.
 */
#ifndef LT_REPLAY_JOBS_H
#define LT_REPLAY_JOBS_H

#include "replay/replay_prompt.h"
#include "traces/lt_err.h"

#include <stddef.h>
#include <stdint.h>

struct lt_replay_jobs {
    struct lt_replay_job *v;
    size_t n;
    uint32_t block_tokens; /* the trace header's, 0 if absent */
};

/* Read every record of the trace at path, sessions linked. Fails on an
 * unreadable trace and on one with no requests. */
int lt_replay_jobs_load(struct lt_replay_jobs *js, const char *path, struct lt_err *err);
void lt_replay_jobs_release(struct lt_replay_jobs *js);

/* The prompt and output lengths a replay asks for (traces/trace_lengths.h). */
void lt_replay_job_lengths(const struct lt_replay_job *job, uint32_t default_out,
                           uint32_t *want_in, uint32_t *want_out);

#endif

/*
 * Sessions of a capture: which requests are turns of one conversation.
 *
 * With a session header (--session-header NAME) the header's value names
 * the session; its keyed hash is the id, so the value itself is never
 * stored. Without one (or on a request that lacks it), a chat request whose messages extend an
 * earlier request's messages (the earlier prompt is a prefix of this one, message by message)
 * continues that request's session; any other chat request starts a new one. `think` is the time
 * from the end of the previous turn's response to this request's arrival, when the previous turn
 * had ended.
 *
 * Memory is bounded: past max_entries known prompts, everything is
 * forgotten and sessions start afresh (a long-idle conversation then
 * looks like a new one). Not thread-safe: the caller serializes.
 */
#ifndef LT_CAPTURE_SESSION_H
#define LT_CAPTURE_SESSION_H

#include "capture/capture_call.h"
#include "base/lt_u64map.h"

#include <stddef.h>
#include <stdint.h>

struct lt_capture_sessions {
    uint64_t k0, k1;
    struct lt_u64map by_prompt; /* keyed hash of a whole prompt -> session id */
    struct lt_u64map turns;     /* session id -> turns seen */
    struct lt_u64map ends;      /* session id -> end of its last turn + 1 (us) */
    uint64_t next_id;
    size_t max_entries;
};

void lt_capture_sessions_init(struct lt_capture_sessions *s, uint64_t k0, uint64_t k1);
void lt_capture_sessions_release(struct lt_capture_sessions *s);
/* Give c its session, turn and think (c->t must be set). hdr is the session
 * header's value, or NULL. Returns 0 or LT_ENOMEM. */
int lt_capture_sessions_assign(struct lt_capture_sessions *s, struct lt_capture_call *c,
                               const char *hdr, size_t hdr_len);
/* The response of a turn of session id ended at end_us. */
void lt_capture_sessions_end(struct lt_capture_sessions *s, uint64_t id, int64_t end_us);

#endif

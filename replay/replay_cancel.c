/*
 * Replaying a client that left mid-stream (docs/replay.md "Cancellations").
 * A trace record with cancel_tokens or cancel_after (capture writes them for
 * a client that disconnected; docs/trace-format.md §2.3) is closed by the
 * replay at the same point, and its result says `cancelled`: not an error,
 * with the times, chunks and tokens received until then.
 *
 * The rule, one point per request, is the plan's (lt_plan_job_cancel,
 * which the virtual replay follows too):
 *   cancel_tokens >= 1      -> close once that many output tokens came
 *                              (stream events after it are not counted);
 *   else cancel_after       -> close that long after the request was sent;
 *   else cancel_tokens == 0 -> close at the stream's first event, before
 *                              any token is counted.
 * A request whose answer ends before its point completes as usual (its
 * client would have had the whole answer). Tokens are what a stream shows;
 * a whole (non-streamed) answer is closed by time only.
 *
 * The engine calls the hooks below; none of them knows the transport. By
 * tokens, the stream reader stops at the point and the transport ends its
 * transfer (curl: the write callback returns 0; the connection is closed).
 * By time, one timerfd in the loop's epoll set is armed at the earliest
 * deadline of a heap of requests, and a due request is closed through
 * lt__replay_req_close (curl: the handle is removed from the multi handle,
 * which closes its connection mid-transfer).
 */
#include "replay/replay_internal.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static bool due_less(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    const struct lt_replay_req *x = *(struct lt_replay_req *const *)a;
    const struct lt_replay_req *y = *(struct lt_replay_req *const *)b;
    if (x->cancel.at.ns != y->cancel.at.ns)
        return x->cancel.at.ns < y->cancel.at.ns;
    return x->seq < y->seq;
}

static void due_moved(void *item, size_t idx, void *ctx)
{
    (void)ctx;
    (*(struct lt_replay_req **)item)->cancel.idx = idx;
}

/* The timerfd at the earliest deadline, or off. */
static void rearm(struct lt_replay *rp)
{
    struct lt_replay_req **top = lt_heap_top(&rp->cancels.due);
    if (top)
        lt_mono_timer_at(rp->cancels.tfd, (*top)->cancel.at, 0);
    else
        lt_mono_timer_off(rp->cancels.tfd);
}

int lt__replay_cancel_init(struct lt_replay *rp, int epfd, struct lt_err *err)
{
    lt_heap_init(&rp->cancels.due, sizeof(struct lt_replay_req *), due_less, due_moved, NULL);
    rp->cancels.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (rp->cancels.tfd < 0)
        return lt_errset(err, LT_EIO, "cannot create the cancel timer: %s", strerror(errno));
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = rp->cancels.tfd};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, rp->cancels.tfd, &ev) < 0)
        return lt_errset(err, LT_EIO, "epoll_ctl: %s", strerror(errno));
    return 0;
}

void lt__replay_cancel_release(struct lt_replay *rp)
{
    lt_heap_release(&rp->cancels.due);
    if (rp->cancels.tfd >= 0)
        close(rp->cancels.tfd);
    rp->cancels.tfd = -1;
}

int lt__replay_cancel_arm(struct lt_replay *rp, struct lt_replay_req *q,
                         const struct lt_plan_job *job)
{
    q->cancel = (struct lt_replay_cancel_req){.by = CB_NONE, .idx = SIZE_MAX};
    if (rp->o.no_cancel)
        return 0;
    struct lt_plan_cancel c = lt_plan_job_cancel(&rp->trace, job);
    if (c.by == LT_PLAN_CANCEL_NONE)
        return 0;
    if (c.by != LT_PLAN_CANCEL_TIME) { /* FIRST: after 0 tokens, at the first event */
        q->cancel.by = CB_TOKENS;
        q->cancel.tokens = c.tokens;
        return 0;
    }
    q->cancel.by = CB_TIME;
    q->cancel.after_us = c.after_us;
    /* From now, the moment it is handed to the transport; the deadline
     * moves to the true send time (q->sent) when the timer fires. */
    q->cancel.at = lt_mono_add_ns(lt_mono_now(), c.after_us * 1000);
    if (lt_heap_push(&rp->cancels.due, &q) < 0)
        return LT_ENOMEM;
    if (q->cancel.idx == 0)
        rearm(rp);
    return 0;
}

bool lt__replay_cancel_tokens_due(struct lt_replay_req *q)
{
    if (q->err && lt__replay_is_cancelled(q->err))
        return true;
    if (q->cancel.by != CB_TOKENS || q->resp.counted < q->cancel.tokens)
        return false;
    /* Only a token event may reach the point: tokens == 0 is the first
     * event of the stream, whatever it carries. */
    q->err = LT_REPLAY_CANCELLED;
    return true;
}

void lt__replay_cancel_disarm(struct lt_replay *rp, struct lt_replay_req *q)
{
    if (q->cancel.by != CB_TIME || q->cancel.idx == SIZE_MAX)
        return;
    bool first = q->cancel.idx == 0;
    lt_heap_remove(&rp->cancels.due, q->cancel.idx, NULL);
    q->cancel.idx = SIZE_MAX;
    if (first)
        rearm(rp);
}

int lt__replay_cancel_fire(struct lt_replay *rp, struct lt_err *err)
{
    uint64_t x;
    while (read(rp->cancels.tfd, &x, sizeof x) > 0)
        ;
    lt_mono now = lt_mono_now();
    struct lt_replay_req **top;
    while ((top = lt_heap_top(&rp->cancels.due)) && (*top)->cancel.at.ns <= now.ns) {
        struct lt_replay_req *q = *top;
        /* Since the request was sent, as capture measured it: a deadline
         * set at hand-over moves by the connect time. One not sent yet (a
         * connect slower than cancel_after, as under load) is looked at
         * again later: closing it now would cancel a request its server
         * never saw, where the trace's client left after sending. */
        lt_mono at = q->has_sent ? lt_mono_add_ns(q->sent, q->cancel.after_us * 1000)
                                 : lt_mono_add_ns(now, (q->cancel.after_us > 1000
                                                            ? q->cancel.after_us
                                                            : 1000) * 1000);
        if (at.ns > now.ns) {
            q->cancel.at = at;
            lt_heap_fix(&rp->cancels.due, q->cancel.idx);
            continue;
        }
        lt_heap_pop(&rp->cancels.due, NULL);
        q->cancel.idx = SIZE_MAX;
        q->err = LT_REPLAY_CANCELLED;
        int rc = lt__replay_req_close(rp, q, LT_REPLAY_CANCELLED, now, err);
        if (rc < 0)
            return rc;
    }
    rearm(rp);
    return 0;
}

/*
 * A run checks itself: the load it delivered against the load asked for,
 * and what the client itself cost. Users of other benchmark clients find
 * out months later that the client, not the server, was the bottleneck;
 * a run of replay says so at its end.
 *
 * Delivered load: in trace time and open loop, the send rate over the
 * span of the sends, (n - 1) / (last sent - first sent), against the rate
 * of the same requests' schedule, (n - 1) / (last sched - first sched):
 * the same draw of arrivals, so a Poisson schedule's own scatter is not
 * counted as an error. In a closed loop, the mean number in flight where
 * the plan could hold the level: from the send that brought it to the
 * level to the last send. Before, the first wave is still leaving; after,
 * no request is left to take a finished one's place, and the ramp down is
 * not the client's doing. A closed loop of no more requests than its
 * level never holds anything: it is a batch, reported as one (how many,
 * sent over what span) and never judged. More than 5 % off is flagged.
 *
 * The client's CPU: getrusage(RUSAGE_THREAD) of the engine's thread (the
 * in-process sim of --target sim runs on threads of its own, which
 * RUSAGE_SELF would count), per request, per output token, and as a share
 * of one core over the run's wall time; 90 % or more of a core is flagged
 * as near saturation: the engine is one thread.
 *
 * The check is printed by the command and written at the run's end as the
 * run's "check" record (replay_record.c, docs/trace-format.md §2.8), which
 * analyze shows.
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include "replay/replay_internal.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define CHECK_OFF 0.05      /* delivered load this far off is flagged */
#define CHECK_SATURATED 0.9 /* share of a core */

static double thread_cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) < 0)
        return 0;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static bool end_before(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    return *(const int64_t *)a < *(const int64_t *)b;
}

int lt__replay_check_start(struct lt_replay *rp, struct lt_err *err)
{
    (void)err;
    struct lt_replay_chk *c = &rp->chk;
    lt_heap_release(&c->over);
    *c = (struct lt_replay_chk){
        .s0 = INT64_MAX, .s1 = INT64_MIN, .q0 = INT64_MAX, .q1 = INT64_MIN, .held = INT64_MAX};
    lt_heap_init(&c->over, sizeof(int64_t), end_before, NULL, NULL);
    c->cpu0 = thread_cpu_s();
    c->t0 = lt_mono_now();
    c->out0 = rp->st.out_tokens;
    return 0;
}

void lt__replay_check_sent(struct lt_replay *rp, struct lt_replay_req *q)
{
    q->sent = lt_mono_now();
    q->has_sent = true;
    q->state = RS_SENT;
    struct lt_replay_chk *c = &rp->chk;
    if (++c->sends == rp->level && rp->mode == LT_REPLAY_MODE_CONCURRENCY)
        c->held = lt__replay_since_origin_us(rp, q->sent);
}

void lt__replay_check_result(struct lt_replay *rp, size_t seq, const struct lt_replay_req *q,
                             lt_mono end_t)
{
    struct lt_replay_chk *c = &rp->chk;
    c->done++;
    if (!q->has_sent)
        return;
    int64_t s = lt__replay_since_origin_us(rp, q->sent), e = lt__replay_since_origin_us(rp, end_t);
    int64_t sched = rp->plan.offs[seq]; /* held: seq is not DONE yet */
    c->sent++;
    c->s0 = s < c->s0 ? s : c->s0;
    c->q0 = sched < c->q0 ? sched : c->q0;
    c->q1 = sched > c->q1 ? sched : c->q1;
    if (s > c->s1) {
        c->s1 = s;
        const int64_t *top;
        while ((top = lt_heap_top(&c->over)) && *top <= s)
            lt_heap_pop(&c->over, NULL);
    }
    /* Only the time after the level was reached counts: a request that
     * ended before it was sent (held still unset) counts nothing. */
    int64_t from = rp->mode != LT_REPLAY_MODE_CONCURRENCY ? s : s > c->held ? s : c->held;
    if (e > from) {
        c->busy += (double)(e - from);
        /* out of memory: its overshoot is kept in the busy time (a tiny
         * error, on a run already short of memory) */
        if (e > c->s1)
            (void)lt_heap_push(&c->over, &e);
    }
}

int lt__replay_check_end(struct lt_replay *rp, struct lt_err *err)
{
    struct lt_replay_chk *c = &rp->chk;
    struct lt_check k = {.run = lt__replay_rec_run(rp)};
    k.cpu_s = thread_cpu_s() - c->cpu0;
    k.wall_s = (double)lt_mono_diff_ns(lt_mono_now(), c->t0) / 1e9;
    k.requests = c->done;
    k.out_tokens = rp->st.out_tokens - c->out0;
    k.sent = c->sent;
    int64_t s0 = c->s0, s1 = c->s1, q0 = c->q0, q1 = c->q1;
    bool closed = rp->mode == LT_REPLAY_MODE_CONCURRENCY;
    if (k.sent >= 1)
        k.span_s = (double)(s1 - s0) / 1e6;
    /* The window judged: the span of the sends, or in a closed loop the
     * part of it where the level was held. What ended after the last
     * send counts up to it. */
    int64_t w0 = closed ? c->held : s0;
    k.batch = closed && k.sent <= rp->level;
    if (k.batch) {
        /* nothing was held, no rate was asked: the span says it all */
    } else if (k.sent >= 2 && s1 > s0) {
        k.rate_got = (double)(k.sent - 1) / ((double)(s1 - s0) / 1e6);
        double busy = c->busy;
        int64_t e;
        while (lt_heap_pop(&c->over, &e))
            busy -= (double)(e - s1);
        if (s1 > w0)
            k.inflight_got = busy / (double)(s1 - w0);
    }
    if (closed) {
        k.inflight_asked = k.batch ? 0 : rp->level;
        k.off = !k.batch && s1 > w0 && fabs(k.inflight_got / k.inflight_asked - 1) > CHECK_OFF;
    } else if (k.sent >= 2 && q1 > q0) {
        k.rate_asked = (double)(k.sent - 1) / ((double)(q1 - q0) / 1e6);
        k.off = k.rate_got > 0 && fabs(k.rate_got / k.rate_asked - 1) > CHECK_OFF;
    }
    k.saturated = k.wall_s > 0 && k.cpu_s / k.wall_s >= CHECK_SATURATED;
    k.img_checked = c->img_checked;
    k.img_exact = c->img_exact;
    k.img_want = c->img_want;
    k.img_got = c->img_got;
    k.img_unreported = c->img_unreported;
    k.vid_checked = c->vid_checked;
    k.vid_exact = c->vid_exact;
    k.vid_want = c->vid_want;
    k.vid_got = c->vid_got;
    if (rp->stop) {
        /* a stopped run: its load was cut, not missed */
        k.unsent = rp->unsent_run;
        k.stopped_at_s = rp->stop_at_us >= 0 ? (double)rp->stop_at_us / 1e6 : k.wall_s;
        k.stopped_by = rp->stop_sig == SIGINT    ? "SIGINT"
                       : rp->stop_sig == SIGTERM ? "SIGTERM"
                       : rp->stop_sig > 0        ? "a signal"
                                                 : "caller";
    }
    if (rp->st.n_checks < LT_REPLAY_MAX_LEVELS)
        rp->st.checks[rp->st.n_checks++] = k;
    return lt__replay_put_check(rp, &k, err);
}

/* Where usage says the prompt's image tokens (prompt_tokens_details.
 * image_tokens: vLLM with --enable-prompt-tokens-details, SGLang, the
 * sim), they are compared with the record's, request by request: how
 * many agree exactly and the totals; a usage that says none is counted
 * apart (the server does not report them: nothing to judge). */
void lt__replay_check_images(struct lt_replay *rp, const struct lt_replay_req *q)
{
    struct lt_replay_chk *c = &rp->chk;
    if (q->want_vid && q->resp.has_vid) { /* video_tokens: vLLM's and SGLang's key too */
        c->vid_checked++;
        c->vid_exact += q->resp.vid == q->want_vid;
        c->vid_want += q->want_vid;
        c->vid_got += q->resp.vid;
    }
    if (!q->want_img)
        return;
    if (!q->resp.has_img) {
        c->img_unreported++;
        return;
    }
    c->img_checked++;
    c->img_exact += q->resp.img == q->want_img;
    c->img_want += q->want_img;
    c->img_got += q->resp.img;
}

void lt__replay_check_release(struct lt_replay *rp)
{
    lt_heap_release(&rp->chk.over);
    memset(&rp->chk, 0, sizeof rp->chk);
}

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
 * counted as an error. In a closed loop, the mean number in flight from
 * the first send to the last (the ramp down after the last send is not
 * the client's doing) against the level (or the requests sent, if fewer).
 * More than 5 % off is flagged.
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

int lt_replay_check_start(struct lt_replay *rp, struct lt_err *err)
{
    struct lt_replay_chk *c = &rp->chk;
    size_t n = rp->plan.total ? rp->plan.total : 1;
    free(c->sent);
    free(c->end);
    c->sent = malloc(n * sizeof *c->sent);
    c->end = malloc(n * sizeof *c->end);
    c->cap = n;
    if (!c->sent || !c->end)
        return lt_errset(err, LT_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        c->sent[i] = -1;
    c->cpu0 = thread_cpu_s();
    c->t0 = lt_mono_now();
    c->out0 = rp->st.out_tokens;
    c->done = 0;
    return 0;
}

void lt_replay_check_result(struct lt_replay *rp, size_t seq, const struct lt_replay_req *q,
                            lt_mono end_t)
{
    struct lt_replay_chk *c = &rp->chk;
    c->done++;
    if (seq >= c->cap || !q->has_sent)
        return;
    c->sent[seq] = lt_replay_since_origin_us(rp, q->sent);
    c->end[seq] = lt_replay_since_origin_us(rp, end_t);
}

int lt_replay_check_end(struct lt_replay *rp, struct lt_err *err)
{
    struct lt_replay_chk *c = &rp->chk;
    struct lt_check k = {.run = rp->run_id};
    k.cpu_s = thread_cpu_s() - c->cpu0;
    k.wall_s = (double)lt_mono_diff_ns(lt_mono_now(), c->t0) / 1e9;
    k.requests = c->done;
    k.out_tokens = rp->st.out_tokens - c->out0;
    int64_t s0 = INT64_MAX, s1 = INT64_MIN, q0 = INT64_MAX, q1 = INT64_MIN;
    size_t n = c->cap < rp->plan.total ? c->cap : rp->plan.total;
    for (size_t i = 0; i < n; i++) {
        if (c->sent[i] < 0)
            continue;
        k.sent++;
        s0 = c->sent[i] < s0 ? c->sent[i] : s0;
        s1 = c->sent[i] > s1 ? c->sent[i] : s1;
        q0 = rp->plan.offs[i] < q0 ? rp->plan.offs[i] : q0;
        q1 = rp->plan.offs[i] > q1 ? rp->plan.offs[i] : q1;
    }
    if (k.sent >= 2 && s1 > s0) {
        k.rate_got = (double)(k.sent - 1) / ((double)(s1 - s0) / 1e6);
        /* The time in flight within [first send, last send]. */
        double busy = 0;
        for (size_t i = 0; i < n; i++)
            if (c->sent[i] >= 0) {
                int64_t e = c->end[i] < s1 ? c->end[i] : s1;
                busy += e > c->sent[i] ? (double)(e - c->sent[i]) : 0;
            }
        k.inflight_got = busy / (double)(s1 - s0);
    }
    if (rp->mode == LT_REPLAY_MODE_CONCURRENCY) {
        k.inflight_asked = rp->level < k.sent ? rp->level : (double)k.sent;
        k.off = k.sent >= 2 && k.inflight_asked > 0 &&
                fabs(k.inflight_got / k.inflight_asked - 1) > CHECK_OFF;
    } else if (k.sent >= 2 && q1 > q0) {
        k.rate_asked = (double)(k.sent - 1) / ((double)(q1 - q0) / 1e6);
        k.off = k.rate_got > 0 && fabs(k.rate_got / k.rate_asked - 1) > CHECK_OFF;
    }
    k.saturated = k.wall_s > 0 && k.cpu_s / k.wall_s >= CHECK_SATURATED;
    if (rp->st.n_checks < LT_REPLAY_MAX_LEVELS)
        rp->st.checks[rp->st.n_checks++] = k;
    return lt_replay_put_check(rp, &k, err);
}

void lt_replay_check_release(struct lt_replay *rp)
{
    free(rp->chk.sent);
    free(rp->chk.end);
    memset(&rp->chk, 0, sizeof rp->chk);
}

/*
 * The replay plan (see plan.h for the seq states). Time-driven runs (trace
 * time, open loop) walk a cursor over the due times, which are
 * non-decreasing, plus two heaps: session turns whose time became known
 * when their previous turn ended, and seqs waiting to be retried. A closed
 * loop walks the cursor as slots free. Everything is sized once, for the
 * largest run, in lt_plan_init. A streamed trace is laid out as it is
 * read and given back behind (plan_stream.c, plan/README.md "Streaming").
 */
#include "plan/plan.h"
#include "plan/plan_internal.h"

#include "base/lt_rng.h"

#include <stdlib.h>
#include <string.h>

#define RETRY_FIRST_US 1000000LL
#define RETRY_MAX_US 30000000LL

/* The two heaps order (time, seq); ties in seq order, so runs repeat
 * exactly. */
static bool before(const void *a, const void *b, void *ctx)
{
    const struct lt_plan_item *x = a, *y = b;
    (void)ctx;
    return x->at < y->at || (x->at == y->at && x->seq < y->seq);
}

/* The heaps grow with what waits in them, not with the run's length. */
static int heap_push(struct lt_heap *h, int64_t at, size_t seq, struct lt_err *err)
{
    const struct lt_plan_item it = {at, seq};
    if (lt_heap_push(h, &it) < 0)
        return lt_errset(err, LT_ENOMEM, "out of memory planning the run");
    return 0;
}

static struct lt_plan_item heap_pop(struct lt_heap *h)
{
    struct lt_plan_item it;
    lt_heap_pop(h, &it);
    return it;
}

/* The first item's time, or INT64_MAX. */
static int64_t heap_next(const struct lt_heap *h)
{
    const struct lt_plan_item *top = lt_heap_top(h);
    return top ? top->at : INT64_MAX;
}

/* ---- setup ---- */

int lt_plan_check(const struct lt_plan_opts *o, struct lt_err *err)
{
    if (o->parts > LT_PLAN_MAX_PARTS || (o->parts > 1 && o->part >= o->parts))
        return lt_errset(err, LT_EINVAL, "part %u of %u: at most %u parts", o->part, o->parts,
                         LT_PLAN_MAX_PARTS);
    if (o->mode == LT_PLAN_TRACE && o->tt.speed > 0 && o->tt.speed != 1 && o->tt.rate > 0)
        return lt_errset(err, LT_EINVAL, "--speed and --rate both rescale time: give one");
    if (o->mode == LT_PLAN_RATE && !(o->rate > 0))
        return lt_errset(err, LT_EINVAL, "open loop needs --rate R > 0");
    /* A loop sends the trace's requests in order and keeps none of its
     * times, so a transformation of them would be dropped without a word. */
    if (o->mode != LT_PLAN_TRACE &&
        (o->tt.win_start_us || o->tt.win_end_us || o->tt.max_gap_us || o->tt.spread_us))
        return lt_errset(err, LT_EUSAGE,
                         "%s sends the trace's requests in order and keeps none of their times: "
                         "--window, --max-gap and --spread do not apply (--requests N keeps "
                         "the first N)",
                         o->mode == LT_PLAN_CONCURRENCY ? "a closed loop (--concurrency)"
                                                        : "an open loop (--arrivals)");
    return 0;
}

static int start_trace(struct lt_plan *p, struct lt_err *err);
static int start_loop(struct lt_plan *p, struct lt_err *err);

int lt_plan_init(struct lt_plan *p, const struct lt_plan_jobs *jobs, const struct lt_plan_opts *o,
                 struct lt_err *err)
{
    memset(p, 0, sizeof *p);
    int rc = lt_plan_check(o, err);
    if (rc < 0)
        return rc;
    p->jobs = jobs;
    p->o = *o;
    size_t n = jobs->n, cap = n ? n : 1;
    if (o->mode != LT_PLAN_TRACE && o->requests > cap)
        cap = (size_t)o->requests;
    p->sample_laps = o->mode != LT_PLAN_TRACE && o->requests;
    if (o->mode == LT_PLAN_RATE && !o->requests && o->duration_us > 0) {
        /* open loop for a duration: as many arrivals as the rate gives */
        double need = o->rate * (double)o->duration_us / 1e6 * 1.5 + 100;
        if (need > cap && need < 1e8)
            cap = (size_t)need;
        p->o.requests = cap;
    }
    p->cap = cap;
    lt_heap_init(&p->turns, sizeof(struct lt_plan_item), before, NULL, NULL);
    lt_heap_init(&p->again, sizeof(struct lt_plan_item), before, NULL, NULL);
    /* A streamed trace (lt_plan_jobs_open) is planned as it is read, in
     * every mode (plan_stream.c); a loaded one is laid out whole here. */
    p->streamed = jobs->stream != NULL;
    if (p->streamed) {
        if ((rc = lt__plan_stream_init(p, err)) < 0)
            lt_plan_release(p);
        return rc;
    }
    p->order = malloc(cap * sizeof *p->order);
    p->offs = malloc(cap * sizeof *p->offs);
    p->state = malloc(cap);
    p->attempts = calloc(cap, 1);
    /* Per job only what the mode reads: laps launched and done in a
     * closed loop. */
    if (o->mode == LT_PLAN_CONCURRENCY &&
        (!(p->job_launched = malloc((n ? n : 1) * sizeof *p->job_launched)) ||
         !(p->job_done = malloc((n ? n : 1) * sizeof *p->job_done))))
        goto oom;
    if (!p->order || !p->offs || !p->state || !p->attempts)
        goto oom;
    if (o->parts > 1) {
        uint32_t *part = malloc((n ? n : 1) * sizeof *part);
        p->mine = malloc(n ? n : 1);
        if (!part || !p->mine) {
            free(part);
            goto oom;
        }
        lt_plan_jobs_split(jobs->v, n, o->parts, part);
        for (size_t j = 0; j < n; j++)
            p->mine[j] = part[j] == o->part;
        free(part);
    }
    /* Lay out the first run once now: a schedule that cannot be laid out
     * (a --speed so small the times overflow, say) is refused before the
     * caller writes anything. lt_plan_start lays out each run again. */
    if (n) {
        rc = o->mode == LT_PLAN_TRACE ? start_trace(p, err) : start_loop(p, err);
        if (rc < 0) {
            lt_plan_release(p);
            return rc;
        }
    }
    return 0;
oom:
    lt_plan_release(p);
    return lt_errset(err, LT_ENOMEM, "out of memory planning %zu requests", cap);
}

void lt_plan_release(struct lt_plan *p)
{
    if (p->dealer.load)
        lt_plan_jobs_dealer_release(&p->dealer);
    if (p->streamed) {
        lt__plan_stream_release(p);
    } else {
        free(p->offs);
        free(p->state);
        free(p->attempts);
    }
    free(p->order);
    free(p->waitq);
    lt_heap_release(&p->turns);
    lt_heap_release(&p->again);
    free(p->job_launched);
    free(p->job_done);
    free(p->mine);
    memset(p, 0, sizeof *p);
}

uint32_t lt_plan_runs(const struct lt_plan_opts *o, size_t n_levels)
{
    return o->mode == LT_PLAN_CONCURRENCY ? (uint32_t)n_levels : 1;
}

/* The end a turn leaves for its session's next turn (struct
 * lt_plan_job's prev_end). */
static int64_t end_mark(int64_t end_us)
{
    return end_us > 0 ? end_us + 1 : 1;
}

/* Trace time: seq k is job k, due at its transformed time; seqs the
 * window, --requests, the duration or the split cut are DONE already. The
 * window and --requests keep whole sessions (lt_plan_jobs_sample); the duration
 * is a time limit and cuts where it falls. (A streamed plan lays out as it
 * reads: lay_out.) */
static int start_trace(struct lt_plan *p, struct lt_err *err)
{
    size_t n = p->jobs->n;
    const struct lt_plan_sched_tt *tt = &p->o.tt;
    p->nseq = p->total = n;
    /* No n-sized temporaries: the times are scheduled in place in offs,
     * and the sample's mask lives in state until the states are set. */
    uint8_t *keep = NULL;
    p->sampled = tt->win_start_us > 0 || tt->win_end_us > 0 || p->o.requests > 0;
    if (p->sampled) {
        int rc = lt_plan_jobs_sample(p->jobs, tt->win_start_us, tt->win_end_us, p->o.requests,
                                     p->state, &p->sample, err);
        if (rc < 0)
            return rc;
        keep = p->state;
    }
    for (size_t i = 0; i < n; i++) {
        p->order[i] = (uint32_t)i;
        p->offs[i] = p->jobs->v[i].t;
        p->jobs->v[i].prev_end = 0; /* the turns' ends of a run before */
    }
    int64_t kept = lt_plan_sched_trace(p->offs, n, tt, keep, p->offs, err);
    if (kept < 0)
        return (int)kept;
    /* offs must be non-decreasing for the cursor: a cut seq takes the time
     * of the previous kept one. Another part's requests are cut like the
     * window's, after the whole trace was scheduled, so every part keeps
     * the global schedule. */
    int64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        bool cut = p->offs[i] < 0 || (p->mine && !p->mine[i]);
        p->state[i] = cut ? LT_PLAN_DONE : LT_PLAN_PENDING;
        if (cut) {
            lt_plan_jobs_turn_over(p->jobs, i, LT_PLAN_TURN_CUT);
            p->done_n++;
        }
        if (p->offs[i] < 0)
            p->offs[i] = prev;
        prev = p->offs[i];
    }
    return 0;
}

/* Closed and open loop: the trace's jobs in order, repeated as needed;
 * open loop with its arrival times (the same seed in every part). When
 * --requests ends a lap part-way, that lap keeps whole sessions only
 * (lt_plan_jobs_sample), so a run may hold fewer than asked. */
static int start_loop(struct lt_plan *p, struct lt_err *err)
{
    size_t n = p->jobs->n;
    size_t want = (size_t)(p->o.requests ? p->o.requests : n);
    size_t laps = want / n, rest = want % n, k = 0;
    for (size_t l = 0; l < laps; l++)
        for (size_t j = 0; j < n; j++)
            p->order[k++] = (uint32_t)j;
    if (rest && p->sample_laps) {
        /* state (cap >= n bytes) holds the mask until the states are set */
        struct lt_plan_jobs_sample sm;
        int rc = lt_plan_jobs_sample(p->jobs, 0, 0, rest, p->state, &sm, err);
        if (rc < 0 && !laps)
            return rc; /* not even one session fits */
        if (rc == 0)
            for (size_t j = 0; j < n; j++)
                if (p->state[j])
                    p->order[k++] = (uint32_t)j;
        if (!laps) {
            p->sampled = true;
            p->sample = sm;
        }
    } else {
        for (size_t j = 0; j < rest; j++)
            p->order[k++] = (uint32_t)j;
    }
    p->nseq = k;
    for (size_t i = 0; i < p->nseq; i++)
        p->state[i] = LT_PLAN_PENDING;
    p->total = p->nseq;
    if (p->o.mode == LT_PLAN_RATE) {
        const struct lt_plan_opts *o = &p->o;
        int64_t got =
            lt_plan_sched_open_loop(o->arrivals, o->rate, o->cv, lt_mix64(o->seed + p->run),
                                    o->duration_us, p->offs, p->nseq, err);
        if (got < 0)
            return (int)got;
        p->nseq = p->total = (size_t)got;
    }
    if (p->mine) {
        k = 0;
        for (size_t i = 0; i < p->nseq; i++)
            if (p->mine[p->order[i]]) {
                p->order[k] = p->order[i];
                if (p->o.mode == LT_PLAN_RATE)
                    p->offs[k] = p->offs[i];
                k++;
            }
        p->nseq = p->total = k;
    }
    return 0;
}

/* When the run's last request is due: the schedule laid out whole (offs
 * never decrease: a cut seq has its predecessor's time), the streamed
 * trace's last kept time, or an open loop's expected last arrival. */
static int64_t sched_end(const struct lt_plan *p)
{
    if (p->o.mode == LT_PLAN_CONCURRENCY || !p->planned)
        return -1;
    if (p->streamed)
        return lt__plan_stream_sched_end(p);
    return p->nseq ? p->offs[p->nseq - 1] : -1;
}

int lt_plan_start(struct lt_plan *p, uint32_t run, uint32_t level, const struct lt_plan_ops *ops,
                  struct lt_err *err)
{
    if (!p->jobs->n)
        return lt_errset(err, LT_EINVAL, "the trace holds no requests");
    p->run = run;
    p->level = level;
    p->ops = *ops;
    p->cursor = p->done_n = 0;
    p->low = p->dropped_at = p->need_edge = 0;
    p->inflight = 0;
    p->wq_head = p->wq_len = 0;
    while (lt_heap_pop(&p->turns, NULL) || lt_heap_pop(&p->again, NULL))
        ; /* a stopped run may leave some */
    p->begun = false;
    int rc = 0;
    if (p->streamed) {
        rc = lt__plan_stream_start(p, run, err);
    } else {
        rc = p->o.mode == LT_PLAN_TRACE ? start_trace(p, err) : start_loop(p, err);
        memset(p->attempts, 0, p->nseq);
    }
    if (rc < 0)
        return rc;
    p->planned = p->total - p->done_n;
    p->sched_end = sched_end(p);
    if (p->job_launched) {
        memset(p->job_launched, 0, p->jobs->n * sizeof *p->job_launched);
        memset(p->job_done, 0, p->jobs->n * sizeof *p->job_done);
    }
    return 0;
}

/* ---- sending ---- */

static bool stopped(const struct lt_plan *p)
{
    return p->ops.stopped && p->ops.stopped(p->ops.ud);
}

static int send(struct lt_plan *p, size_t seq, struct lt_err *err)
{
    p->state[seq] = LT_PLAN_SENT;
    if (seq >= p->hi_sent)
        p->hi_sent = seq + 1;
    if (!p->attempts[seq] && p->job_launched)
        p->job_launched[p->order[seq]]++;
    p->inflight++;
    return p->ops.send(p->ops.ud, seq, err);
}

static bool capped(const struct lt_plan *p)
{
    return p->o.max_concurrency && p->inflight >= p->o.max_concurrency;
}

/* The queue behind the cap grows with what waits in it. */
static int enqueue(struct lt_plan *p, size_t seq, struct lt_err *err)
{
    if (p->wq_len == p->wq_cap) {
        size_t nc = p->wq_cap ? p->wq_cap * 2 : 256;
        size_t *q = malloc(nc * sizeof *q);
        if (!q)
            return lt_errset(err, LT_ENOMEM, "out of memory planning the run");
        for (size_t i = 0; i < p->wq_len; i++)
            q[i] = p->waitq[(p->wq_head + i) % p->wq_cap];
        free(p->waitq);
        p->waitq = q;
        p->wq_cap = nc;
        p->wq_head = 0;
    }
    p->waitq[(p->wq_head + p->wq_len++) % p->wq_cap] = seq;
    p->state[seq] = LT_PLAN_QUEUED;
    return 0;
}

/* seq is due at `at`: send it, or queue it behind the concurrency cap. */
static int due(struct lt_plan *p, size_t seq, int64_t at, struct lt_err *err)
{
    p->offs[seq] = at;
    if (capped(p))
        return enqueue(p, seq, err);
    return send(p, seq, err);
}

/* Think time, scaled like the trace (--speed). */
static int64_t think_us(const struct lt_plan *p, const struct lt_plan_job *job)
{
    double scale = p->o.tt.speed > 0 ? 1.0 / p->o.tt.speed : 1.0;
    int64_t think = job->has & LT_HAS_THINK ? (int64_t)((double)job->think * scale) : 0;
    return think > 0 ? think : 0;
}

/* A session turn whose previous turn ended at prev_end leaves at its own
 * time, or at that end plus its think time, whichever is later. */
static int64_t turn_time(const struct lt_plan *p, size_t seq, int64_t prev_end)
{
    int64_t t = prev_end + think_us(p, &p->jobs->v[lt_plan_job_of(p, seq)]);
    return t > p->offs[seq] ? t : p->offs[seq];
}

/* Closed loop: a session's turn may start once the previous turn's request
 * of the same lap has finished (a job's n-th launch needs its previous
 * turn's n-th completion; the trace repeats when --requests exceeds it). */
static bool turn_ready(const struct lt_plan *p, size_t seq)
{
    uint32_t j = p->order[seq];
    int64_t prev = p->jobs->v[j].prev;
    return prev < 0 || p->job_launched[j] < p->job_done[prev];
}

/* The cursor's turn must wait: bring the nearest ready seq of the next 64
 * forward (so order is kept as far as the sessions allow). */
static bool pull_ready(struct lt_plan *p)
{
    size_t k = p->cursor;
    for (size_t j = k + 1; j < p->total && j <= k + 64; j++) {
        if (turn_ready(p, j)) {
            uint32_t t = p->order[j];
            memmove(&p->order[k + 1], &p->order[k], (j - k) * sizeof *p->order);
            p->order[k] = t;
            return true;
        }
    }
    return false;
}

static int pump_closed(struct lt_plan *p, int64_t now, struct lt_err *err)
{
    int rc = 0;
    if (now < 0) /* an origin agreed ahead: the loop starts there */
        return 0;
    p->begun = true;
    bool timeup = p->o.duration_us > 0 && now >= p->o.duration_us;
    if (timeup && p->streamed && p->total > p->cursor) {
        lt__plan_stream_time_up(p);
    } else if (timeup && p->total > p->cursor) {
        /* Requests never meant to be sent are not recorded. */
        for (size_t k = p->cursor; k < p->nseq; k++)
            p->state[k] = LT_PLAN_DONE;
        p->total = p->cursor;
    }
    /* a request waiting to be retried keeps its slot */
    while (!timeup && p->cursor < p->total && p->inflight + lt_heap_len(&p->again) < p->level) {
        size_t k;
        if (p->streamed) {
            int got = lt__plan_stream_next_closed(p, &k, err);
            LT_TRY(got);
            if (!got)
                break;
        } else {
            if (!turn_ready(p, p->cursor) && !pull_ready(p))
                break; /* every candidate waits for its previous turn */
            k = p->cursor++;
        }
        p->offs[k] = now;
        LT_TRY(send(p, k, err));
    }
out:
    return rc;
}

static int pump_timed(struct lt_plan *p, int64_t now, struct lt_err *err)
{
    int rc = 0;
    for (;;) {
        if (p->streamed)
            LT_TRY(lt__plan_stream_ahead(p, p->cursor, err));
        if (p->cursor >= p->nseq || p->offs[p->cursor] > now)
            break;
        size_t k = p->cursor++;
        if (p->state[k] == LT_PLAN_DONE) {
            /* cut by the window, the duration or the split; a streamed
             * plan gives back behind a long run of them as it passes */
            if (p->streamed && !(k & 1023))
                lt__plan_stream_give_back(p, k);
            continue;
        }
        const struct lt_plan_job *job = &p->jobs->v[lt_plan_job_of(p, k)];
        if (p->o.mode == LT_PLAN_TRACE && job->prev != -1 && job->prev_end != LT_PLAN_TURN_CUT) {
            if (!job->prev_end) {
                p->state[k] = LT_PLAN_WAITING; /* released when the previous turn ends */
                continue;
            }
            int64_t at = turn_time(p, k, job->prev_end - 1);
            if (at > now) {
                p->state[k] = LT_PLAN_WAITING;
                LT_TRY(heap_push(&p->turns, at, k, err));
                continue;
            }
            LT_TRY(due(p, k, at, err));
            continue;
        }
        LT_TRY(due(p, k, p->offs[k], err));
    }
    while (heap_next(&p->turns) <= now) {
        struct lt_plan_item h = heap_pop(&p->turns);
        LT_TRY(due(p, h.seq, h.at, err));
    }
out:
    return rc;
}

int lt_plan_pump(struct lt_plan *p, int64_t now_us, struct lt_err *err)
{
    int rc = 0;
    if (stopped(p))
        return 0;
    if (p->streamed)
        lt__plan_stream_give_back(p, p->cursor);
    while (heap_next(&p->again) <= now_us) {
        struct lt_plan_item h = heap_pop(&p->again);
        if (capped(p))
            LT_TRY(enqueue(p, h.seq, err));
        else
            LT_TRY(send(p, h.seq, err));
    }
    if (p->o.mode == LT_PLAN_CONCURRENCY)
        return pump_closed(p, now_us, err);
    return pump_timed(p, now_us, err);
out:
    return rc;
}

int64_t lt_plan_next_due(const struct lt_plan *p)
{
    int64_t next = INT64_MAX;
    if (p->o.mode == LT_PLAN_CONCURRENCY) {
        if (!p->begun)
            next = 0;
    } else {
        if (p->cursor < p->nseq)
            next = p->offs[p->cursor];
        if (heap_next(&p->turns) < next)
            next = heap_next(&p->turns);
    }
    if (heap_next(&p->again) < next)
        next = heap_next(&p->again);
    return next;
}

/* ---- finishing ---- */

/* A slot freed: what waited behind the cap leaves, in order. */
static int release_slots(struct lt_plan *p, struct lt_err *err)
{
    int rc = 0;
    while (!stopped(p) && p->wq_len && p->inflight < p->o.max_concurrency) {
        size_t k = p->waitq[p->wq_head];
        p->wq_head = (p->wq_head + 1) % p->wq_cap;
        p->wq_len--;
        LT_TRY(send(p, k, err));
    }
out:
    return rc;
}

int lt_plan_finish(struct lt_plan *p, size_t seq, int64_t end_us, struct lt_err *err)
{
    size_t job = lt_plan_job_of(p, seq);
    p->inflight--;
    p->state[seq] = LT_PLAN_DONE;
    if (p->job_done)
        p->job_done[job]++;
    p->done_n++;
    if (p->o.mode == LT_PLAN_TRACE) {
        lt_plan_jobs_turn_over(p->jobs, job, end_mark(end_us));
        /* Release the session's next turn if it was waiting for this one
         * (in trace time, seq k sends job k). */
        int64_t nx = p->jobs->v[job].next;
        if (nx >= 0 && p->state[nx] == LT_PLAN_WAITING) {
            int rc = heap_push(&p->turns, turn_time(p, (size_t)nx, end_us), (size_t)nx, err);
            if (rc < 0)
                return rc;
        }
    }
    return release_slots(p, err);
}

int lt_plan_retry(struct lt_plan *p, size_t seq, int64_t end_us, int64_t retry_after_us,
                  struct lt_err *err)
{
    uint8_t n = p->attempts[seq];
    if (!p->o.retries || stopped(p) || n >= p->o.retries || n >= 255)
        return 0;
    int64_t delay = retry_after_us >= 0 ? retry_after_us : RETRY_FIRST_US << (n < 5 ? n : 5);
    if (delay > RETRY_MAX_US)
        delay = RETRY_MAX_US;
    int rc = heap_push(&p->again, end_us + delay, seq, err);
    if (rc < 0)
        return rc;
    p->attempts[seq]++;
    p->inflight--;
    rc = release_slots(p, err);
    return rc < 0 ? rc : 1;
}

void lt_plan_abort(struct lt_plan *p, size_t seq, int64_t now_us)
{
    if (p->state[seq] == LT_PLAN_DONE)
        return;
    if (p->o.mode == LT_PLAN_CONCURRENCY)
        p->offs[seq] = now_us;
    p->state[seq] = LT_PLAN_DONE;
    p->done_n++;
}

int lt_plan_hold(struct lt_plan *p, size_t seq, struct lt_err *err)
{
    if (!p->streamed || seq >= p->nseq)
        return 0; /* a loaded plan holds every seq */
    return lt__plan_stream_hold(p, seq, err);
}

bool lt_plan_over(const struct lt_plan *p)
{
    return p->done_n >= p->total;
}

void lt_plan_describe(const struct lt_plan *p, struct lt_plan_desc *d)
{
    const struct lt_plan_opts *o = &p->o;
    *d = (struct lt_plan_desc){0};
    switch (o->mode) {
    case LT_PLAN_TRACE:
        d->mode = "trace";
        d->rate = o->tt.rate;
        d->speed = o->tt.speed > 0 ? o->tt.speed : 0;
        if (d->speed == 0 && d->rate == 0)
            d->speed = 1;
        break;
    case LT_PLAN_CONCURRENCY:
        d->mode = "concurrency";
        d->concurrency = p->level;
        break;
    case LT_PLAN_RATE:
        d->mode = "rate";
        d->rate = o->rate;
        break;
    }
}

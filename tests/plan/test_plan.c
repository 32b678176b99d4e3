/*
 * The replay plan's state machine, driven by a fake engine and a clock the
 * test moves by hand: session turns (own time, or the previous end plus
 * the think time scaled by --speed, whichever is later), the open-loop
 * cap, closed-loop slots with sessions, retries and their back-off, the
 * closed loop's time limit, the split over parts, a stop, and the run
 * record's description. The same plan runs the live and the virtual
 * replay, so these are the rules both follow.
 */
#include "plan/plan.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

struct fake {
    size_t sent[64];
    size_t n;
    bool stop;
};

static int fake_send(void *ud, size_t seq, struct lt_err *err)
{
    struct fake *f = ud;
    f->sent[f->n++] = seq;
    return 0;
}

static bool fake_stopped(void *ud)
{
    return ((struct fake *)ud)->stop;
}

/* n jobs at times t[]; sess[i] != 0 puts job i in that session (turns
 * linked in order) with think time think[i]. */
static void make_jobs(struct lt_plan_jobs *js, struct lt_plan_job *v, size_t n, const int64_t *t,
                      const uint64_t *sess, const int64_t *think)
{
    memset(v, 0, n * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        v[i].index = i;
        v[i].t = t[i];
        v[i].in = 10;
        v[i].out = 10;
        v[i].prev = v[i].next = -1;
        if (sess && sess[i]) {
            v[i].has |= LT_HAS_SESSION | LT_HAS_THINK;
            v[i].session = sess[i];
            v[i].think = think ? think[i] : 0;
            for (size_t j = i; j-- > 0;)
                if (sess[j] == sess[i]) {
                    v[i].prev = (int32_t)j;
                    v[j].next = (int32_t)i;
                    break;
                }
        }
    }
    *js = (struct lt_plan_jobs){.v = v, .n = n};
}

static void start(struct lt_plan *p, const struct lt_plan_jobs *js, const struct lt_plan_opts *o,
                  uint32_t level, struct fake *f)
{
    struct lt_err err = {0};
    memset(f, 0, sizeof *f);
    assert_int_equal(lt_plan_init(p, js, o, &err), 0);
    const struct lt_plan_ops ops = {.send = fake_send, .stopped = fake_stopped, .ud = f};
    assert_int_equal(lt_plan_start(p, 0, level, &ops, &err), 0);
}

/* One test's jobs and its plan, started on the fake engine. */
struct rig {
    struct lt_plan_job v[8];
    struct lt_plan_jobs js;
    struct lt_plan p;
    struct fake f;
};

/* n jobs at t[] (sessions and think times as make_jobs takes them), and a
 * plan over them with o at level, started. */
static void rig_start(struct rig *r, size_t n, const int64_t *t, const uint64_t *sess,
                      const int64_t *think, const struct lt_plan_opts *o, uint32_t level)
{
    assert_true(n <= sizeof r->v / sizeof r->v[0]);
    make_jobs(&r->js, r->v, n, t, sess, think);
    start(&r->p, &r->js, o, level, &r->f);
}

/* A later turn leaves at max(its own time, previous end + think). */
static void test_sessions(void **state)
{
    const int64_t t[] = {0, 10, 100, 200};
    const uint64_t s[] = {7, 0, 7, 7};
    const int64_t th[] = {0, 0, 50, 10};
    struct rig r;
    rig_start(&r, 4, t, s, th, &(struct lt_plan_opts){.mode = LT_PLAN_TRACE}, 0);
    struct lt_plan *p = &r.p;
    struct lt_err err = {0};
    assert_int_equal(lt_plan_pump(p, 0, &err), 0);
    assert_int_equal(r.f.n, 1);
    assert_int_equal(r.f.sent[0], 0);
    assert_int_equal(lt_plan_next_due(p), 10);
    assert_int_equal(lt_plan_pump(p, 100, &err), 0);
    assert_int_equal(r.f.n, 2); /* job 1; job 2 waits for job 0 */
    assert_int_equal(r.f.sent[1], 1);
    assert_int_equal(p->state[2], LT_PLAN_WAITING);
    assert_int_equal(lt_plan_finish(p, 0, 300, &err), 0);
    assert_int_equal(lt_plan_next_due(p), 200); /* job 3's own time comes first */
    assert_int_equal(lt_plan_pump(p, 200, &err), 0);
    assert_int_equal(p->state[3], LT_PLAN_WAITING); /* job 2 has not ended */
    assert_int_equal(lt_plan_next_due(p), 350);     /* job 2: 300 + 50 */
    assert_int_equal(lt_plan_pump(p, 349, &err), 0);
    assert_int_equal(r.f.n, 2);
    assert_int_equal(lt_plan_pump(p, 350, &err), 0);
    assert_int_equal(r.f.n, 3);
    assert_int_equal(r.f.sent[2], 2);
    assert_int_equal(p->offs[2], 350); /* its sched */
    /* job 3's own time (200) is past: it leaves at job 2's end + 10 */
    assert_int_equal(lt_plan_finish(p, 2, 360, &err), 0);
    assert_int_equal(lt_plan_next_due(p), 370);
    assert_int_equal(lt_plan_pump(p, 370, &err), 0);
    assert_int_equal(r.f.sent[3], 3);
    assert_int_equal(p->offs[3], 370);
    assert_int_equal(lt_plan_finish(p, 1, 400, &err), 0);
    assert_false(lt_plan_over(p));
    assert_int_equal(lt_plan_finish(p, 3, 500, &err), 0);
    assert_true(lt_plan_over(p));
    assert_int_equal(lt_plan_next_due(p), INT64_MAX);
    lt_plan_release(p);
}

/* --speed scales think times as it scales the trace. */
static void test_think_speed(void **state)
{
    const int64_t t[] = {0, 0};
    const uint64_t s[] = {1, 1};
    const int64_t th[] = {0, 1000};
    struct rig r;
    rig_start(&r, 2, t, s, th, &(struct lt_plan_opts){.mode = LT_PLAN_TRACE, .tt = {.speed = 4}},
              0);
    struct lt_plan *p = &r.p;
    struct lt_err err = {0};
    assert_int_equal(lt_plan_pump(p, 0, &err), 0);
    assert_int_equal(lt_plan_finish(p, 0, 100, &err), 0);
    assert_int_equal(lt_plan_next_due(p), 350); /* 100 + 1000 / 4 */
    lt_plan_release(p);
}

/* The open-loop cap: what comes due beyond it queues, keeps its sched and
 * leaves in order as slots free. */
static void test_cap(void **state)
{
    const int64_t t[] = {0, 0, 5};
    struct rig r;
    rig_start(&r, 3, t, NULL, NULL,
              &(struct lt_plan_opts){.mode = LT_PLAN_TRACE, .max_concurrency = 1}, 0);
    struct lt_plan *p = &r.p;
    struct lt_err err = {0};
    assert_int_equal(lt_plan_pump(p, 10, &err), 0);
    assert_int_equal(r.f.n, 1);
    assert_int_equal(p->state[1], LT_PLAN_QUEUED);
    assert_int_equal(p->state[2], LT_PLAN_QUEUED);
    assert_int_equal(lt_plan_finish(p, 0, 20, &err), 0);
    assert_int_equal(r.f.n, 2);
    assert_int_equal(r.f.sent[1], 1);
    assert_int_equal(p->offs[1], 0);
    assert_int_equal(lt_plan_finish(p, 1, 30, &err), 0);
    assert_int_equal(r.f.sent[2], 2);
    assert_int_equal(p->offs[2], 5);
    lt_plan_release(p);
}

/* A closed loop keeps `level` in flight, in trace order as far as the
 * sessions allow: a turn waits for its previous turn, a later request
 * takes its place; sched is when the slot freed. */
static void test_closed(void **state)
{
    const int64_t t[] = {0, 1, 2};
    const uint64_t s[] = {3, 3, 0};
    struct rig r;
    rig_start(&r, 3, t, s, NULL, &(struct lt_plan_opts){.mode = LT_PLAN_CONCURRENCY}, 2);
    struct lt_plan *p = &r.p;
    struct lt_err err = {0};
    assert_int_equal(lt_plan_next_due(p), 0);
    assert_int_equal(lt_plan_pump(p, -5, &err), 0); /* before the origin */
    assert_int_equal(r.f.n, 0);
    assert_int_equal(lt_plan_pump(p, 0, &err), 0);
    assert_int_equal(r.f.n, 2);
    assert_int_equal(p->order[r.f.sent[0]], 0);
    assert_int_equal(p->order[r.f.sent[1]], 2); /* job 1 waits for job 0 */
    assert_int_equal(lt_plan_next_due(p), INT64_MAX);
    assert_int_equal(lt_plan_finish(p, r.f.sent[0], 40, &err), 0);
    assert_int_equal(lt_plan_pump(p, 40, &err), 0);
    assert_int_equal(r.f.n, 3);
    assert_int_equal(p->order[r.f.sent[2]], 1);
    assert_int_equal(p->offs[r.f.sent[2]], 40);
    lt_plan_release(p);
}

/* --requests beyond the trace repeats it; a time limit cuts what was
 * never sent, which is then not part of the run. */
static void test_closed_limit(void **state)
{
    const int64_t t[] = {0, 1};
    struct rig r;
    rig_start(
        &r, 2, t, NULL, NULL,
        &(struct lt_plan_opts){.mode = LT_PLAN_CONCURRENCY, .requests = 5, .duration_us = 100}, 1);
    struct lt_plan *p = &r.p;
    struct lt_err err = {0};
    assert_int_equal(p->total, 5);
    assert_int_equal(lt_plan_pump(p, 0, &err), 0);
    assert_int_equal(lt_plan_finish(p, 0, 50, &err), 0);
    assert_int_equal(lt_plan_pump(p, 50, &err), 0);
    assert_int_equal(p->order[1], 1);
    assert_int_equal(lt_plan_finish(p, 1, 120, &err), 0);
    assert_int_equal(lt_plan_pump(p, 120, &err), 0);
    assert_int_equal(r.f.n, 2);
    assert_int_equal(p->total, 2);
    assert_true(lt_plan_over(p));
    lt_plan_release(p);
}

/* Retries: 1 s doubling, or the server's Retry-After, at most 30 s; the
 * seq is due again then; none left: the engine records it. */
static void test_retry(void **state)
{
    const int64_t t[] = {0};
    struct rig r;
    rig_start(&r, 1, t, NULL, NULL, &(struct lt_plan_opts){.mode = LT_PLAN_TRACE, .retries = 3}, 0);
    struct lt_plan *p = &r.p;
    struct lt_err err = {0};
    assert_int_equal(lt_plan_pump(p, 0, &err), 0);
    assert_int_equal(lt_plan_retry(p, 0, 10, -1, &err), 1);
    assert_int_equal(p->inflight, 0);
    assert_int_equal(lt_plan_next_due(p), 10 + 1000000);
    assert_int_equal(lt_plan_pump(p, 1000010, &err), 0);
    assert_int_equal(r.f.n, 2);
    assert_int_equal(lt_plan_retry(p, 0, 2000000, -1, &err), 1);
    assert_int_equal(lt_plan_next_due(p), 4000000);
    assert_int_equal(lt_plan_pump(p, 4000000, &err), 0);
    assert_int_equal(lt_plan_retry(p, 0, 5000000, 60000000, &err), 1);
    assert_int_equal(lt_plan_next_due(p), 35000000); /* Retry-After 60 s: 30 s */
    assert_int_equal(lt_plan_pump(p, 35000000, &err), 0);
    assert_int_equal(p->attempts[0], 3);
    assert_int_equal(lt_plan_retry(p, 0, 36000000, -1, &err), 0);
    assert_int_equal(lt_plan_finish(p, 0, 36000000, &err), 0);
    assert_true(lt_plan_over(p));
    assert_int_equal(p->offs[0], 0); /* a retried request keeps its sched */
    lt_plan_release(p);

    start(p, &r.js, &(struct lt_plan_opts){.mode = LT_PLAN_TRACE}, 0, &r.f);
    assert_int_equal(lt_plan_pump(p, 0, &err), 0);
    assert_int_equal(lt_plan_retry(p, 0, 10, -1, &err), 0); /* --retry off */
    lt_plan_release(p);
}

/* Trace time keeps the trace's seqs in place: the window's and another
 * part's are DONE from the start and never sent. */
static void test_cut_and_parts(void **state)
{
    const int64_t t[] = {0, 10, 20, 30};
    struct rig r;
    rig_start(&r, 4, t, NULL, NULL,
              &(struct lt_plan_opts){.mode = LT_PLAN_TRACE, .tt = {.win_start_us = 10}, .parts = 2},
              0);
    struct lt_plan *p = &r.p;
    struct lt_err err = {0};
    uint32_t part[4];
    lt_plan_jobs_split(r.v, 4, 2, part);
    assert_int_equal(p->state[0], LT_PLAN_DONE);
    size_t mine = 0;
    for (size_t i = 1; i < 4; i++)
        mine += part[i] == 0;
    assert_int_equal(p->planned, mine);
    assert_int_equal(lt_plan_pump(p, 1000, &err), 0);
    assert_int_equal(r.f.n, mine);
    for (size_t k = 0; k < r.f.n; k++) {
        assert_int_equal(part[r.f.sent[k]], 0);
        assert_int_equal(p->offs[r.f.sent[k]], t[r.f.sent[k]] - 10);
    }
    lt_plan_release(p);
}

/* Samples keep whole sessions (lt_plan_jobs_sample): a session belongs where
 * its first request is. Jobs (t, session): 0 (0,A) 1 (10,B) 2 (20,-)
 * 3 (30,A) 4 (40,C) 5 (50,C) 6 (60,B). */
static void test_sample(void **state)
{
    const int64_t t[] = {0, 10, 20, 30, 40, 50, 60};
    const uint64_t s[] = {1, 2, 0, 1, 3, 3, 2};
    struct lt_plan_job v[7];
    struct lt_plan_jobs js;
    make_jobs(&js, v, 7, t, s, NULL);
    struct {
        int64_t ws, we;
        uint64_t req;
        const char *keep;
        uint64_t requests, sessions;
    } cases[] = {
        {0, 0, 0, "1111111", 7, 3},
        {10, 45, 0, "0110111", 5, 2}, /* B (its turn at 60 too), the single one, C */
        {25, 55, 0, "0000110", 2, 1}, /* A's turn at 30 began before: left out */
        {0, 0, 5, "1111001", 5, 2},   /* A 2, B 2, the single 1; C would make 7 */
        {0, 0, 6, "1111001", 5, 2},   /* the first that does not fit ends the sample */
        {0, 0, 2, "1001000", 2, 1},   /* A alone; B would make 4 */
        {10, 0, 3, "0110001", 3, 1},  /* the window first, then the count */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint8_t keep[7];
        struct lt_plan_jobs_sample sm;
        struct lt_err err = {0};
        assert_int_equal(
            lt_plan_jobs_sample(&js, cases[c].ws, cases[c].we, cases[c].req, keep, &sm, &err), 0);
        char got[8];
        for (size_t j = 0; j < 7; j++)
            got[j] = keep[j] ? '1' : '0';
        got[7] = '\0';
        assert_string_equal(got, cases[c].keep);
        assert_int_equal(sm.requests, cases[c].requests);
        assert_int_equal(sm.sessions, cases[c].sessions);
        assert_int_equal(sm.of_requests, 7);
        assert_int_equal(sm.of_sessions, 3);
    }
    /* A first session larger than the count: refused, named. */
    uint8_t keep[7];
    struct lt_err err = {0};
    assert_int_equal(lt_plan_jobs_sample(&js, 0, 0, 1, keep, NULL, &err), LT_EUSAGE);
    assert_non_null(strstr(err.msg, "has 2 requests"));
}

/* A closed loop whose --requests ends a lap part-way keeps whole sessions
 * in that lap: 7 jobs, 10 requests = one lap + 3; in the second lap A (2
 * requests) fits and B (2 more) would make 4, so that lap is A alone. */
static void test_closed_lap(void **state)
{
    const int64_t t[] = {0, 10, 20, 30, 40, 50, 60};
    const uint64_t s[] = {1, 2, 0, 1, 3, 3, 2};
    struct lt_plan_job v[7];
    struct lt_plan_jobs js;
    make_jobs(&js, v, 7, t, s, NULL);
    struct lt_plan p;
    struct lt_err err = {0};
    const struct lt_plan_opts o = {.mode = LT_PLAN_CONCURRENCY, .requests = 10};
    assert_int_equal(lt_plan_init(&p, &js, &o, &err), 0);
    struct fake f = {0};
    const struct lt_plan_ops ops = {.send = fake_send, .stopped = fake_stopped, .ud = &f};
    assert_int_equal(lt_plan_start(&p, 0, 1, &ops, &err), 0);
    assert_int_equal(p.nseq, 9);
    const uint32_t want[] = {0, 1, 2, 3, 4, 5, 6, 0, 3};
    for (size_t k = 0; k < 9; k++)
        assert_int_equal(p.order[k], want[k]);
    assert_false(p.sampled); /* a whole lap ran: the trace is not sampled */
    lt_plan_release(&p);
    /* --requests 5: less than one lap, the same sample as trace time */
    const struct lt_plan_opts o5 = {.mode = LT_PLAN_CONCURRENCY, .requests = 5};
    assert_int_equal(lt_plan_init(&p, &js, &o5, &err), 0);
    assert_int_equal(lt_plan_start(&p, 0, 1, &ops, &err), 0);
    assert_int_equal(p.nseq, 5);
    assert_true(p.sampled);
    assert_int_equal(p.sample.sessions, 2);
    lt_plan_release(&p);
}

/* A stop: nothing more leaves, and abort makes the rest DONE. */
static void test_stop(void **state)
{
    const int64_t t[] = {0, 0, 100};
    struct rig r;
    rig_start(&r, 3, t, NULL, NULL,
              &(struct lt_plan_opts){.mode = LT_PLAN_TRACE, .max_concurrency = 1}, 0);
    struct lt_plan *p = &r.p;
    struct lt_err err = {0};
    assert_int_equal(lt_plan_pump(p, 0, &err), 0);
    r.f.stop = true;
    assert_int_equal(lt_plan_finish(p, 0, 5, &err), 0);
    assert_int_equal(r.f.n, 1); /* the queued one stays */
    assert_int_equal(lt_plan_pump(p, 200, &err), 0);
    assert_int_equal(r.f.n, 1);
    for (size_t k = 0; k < p->total; k++)
        lt_plan_abort(p, k, 200);
    assert_true(lt_plan_over(p));
    lt_plan_release(p);
}

/* Open loop: arrivals from the seed, the trace's jobs in order. */
static void test_open(void **state)
{
    const int64_t t[] = {0, 1000000};
    struct rig r;
    rig_start(&r, 2, t, NULL, NULL,
              &(struct lt_plan_opts){
                  .mode = LT_PLAN_RATE, .rate = 10, .arrivals = LT_ARR_CONSTANT, .requests = 5},
              0);
    struct lt_plan *p = &r.p;
    struct lt_err err = {0};
    assert_int_equal(p->total, 5);
    assert_int_equal(lt_plan_pump(p, 250000, &err), 0);
    assert_int_equal(r.f.n, 3); /* at 0, 100 and 200 ms */
    assert_int_equal(p->order[2], 0);
    assert_int_equal(lt_plan_next_due(p), 300000);
    struct lt_plan_desc d;
    lt_plan_describe(p, &d);
    assert_string_equal(d.mode, "rate");
    assert_true(d.rate == 10);
    lt_plan_release(p);
    /* an open loop without a rate, speed with rate: refused */
    assert_int_equal(lt_plan_check(&(struct lt_plan_opts){.mode = LT_PLAN_RATE}, &err), LT_EINVAL);
    assert_int_equal(
        lt_plan_check(&(struct lt_plan_opts){.mode = LT_PLAN_TRACE, .tt = {.speed = 2, .rate = 1}},
                      &err),
        LT_EINVAL);
}

/* The cancel rule, one case per row: which point a record's keys give
 * (docs/replay.md "Cancellations"), found by record number among records
 * that say nothing. */
static void test_cancel_rule(void **state)
{
    (void)state;
    enum { A = LT_HAS_CANCEL_AFTER, K = LT_HAS_CANCEL_TOKENS };
    static const struct {
        uint32_t has;
        int64_t after;
        uint32_t tokens;
        enum lt_plan_cancel_by by;
        uint32_t want_tokens;
        int64_t want_after;
    } rows[] = {
        {0, 0, 0, LT_PLAN_CANCEL_NONE, 0, 0},
        {K, 0, 5, LT_PLAN_CANCEL_TOKENS, 5, 0},
        {A, 250000, 0, LT_PLAN_CANCEL_TIME, 0, 250000},
        {A | K, 250000, 5, LT_PLAN_CANCEL_TOKENS, 5, 0}, /* tokens win */
        {A | K, 250000, 0, LT_PLAN_CANCEL_TIME, 0, 250000},
        {K, 0, 0, LT_PLAN_CANCEL_FIRST, 0, 0},
        {A, 0, 0, LT_PLAN_CANCEL_TIME, 0, 0},
    };
    enum { R = sizeof rows / sizeof rows[0] };
    struct lt_plan_job jobs[2 * R];
    struct lt_plan_cancel_rec recs[R];
    struct lt_plan_jobs js = {.v = jobs, .n = 2 * R, .cancels = recs};
    memset(jobs, 0, sizeof jobs);
    for (size_t k = 0; k < R; k++) {
        jobs[2 * k] = (struct lt_plan_job){.index = 10 * k}; /* says nothing */
        jobs[2 * k + 1] = (struct lt_plan_job){.index = 10 * k + 3, .has = rows[k].has};
        if (rows[k].has)
            recs[js.n_cancels++] = (struct lt_plan_cancel_rec){.index = 10 * k + 3,
                                                               .after = rows[k].after,
                                                               .tokens = rows[k].tokens,
                                                               .has = rows[k].has};
    }
    for (size_t k = 0; k < R; k++) {
        struct lt_plan_cancel c = lt_plan_job_cancel(&js, &jobs[2 * k + 1]);
        assert_int_equal(c.by, rows[k].by);
        assert_int_equal(c.tokens, rows[k].want_tokens);
        assert_true(c.after_us == rows[k].want_after);
        assert_int_equal(lt_plan_job_cancel(&js, &jobs[2 * k]).by, LT_PLAN_CANCEL_NONE);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sessions),      cmocka_unit_test(test_think_speed),
        cmocka_unit_test(test_cap),           cmocka_unit_test(test_closed),
        cmocka_unit_test(test_closed_limit),  cmocka_unit_test(test_retry),
        cmocka_unit_test(test_cut_and_parts), cmocka_unit_test(test_stop),
        cmocka_unit_test(test_open),          cmocka_unit_test(test_cancel_rule),
        cmocka_unit_test(test_sample),        cmocka_unit_test(test_closed_lap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

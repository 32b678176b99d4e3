/*
 * A streamed trace (lt_plan_jobs_open) against the same trace loaded
 * whole (lt_plan_jobs_load): a trace-time run driven by a fake engine
 * (each request ends a fixed latency after it leaves) sends the same seqs
 * at the same times and hands the engine the same jobs (fields, messages,
 * blocks, text, session links), while holding only a window of the jobs;
 * a second run of the same plan reads the trace again and repeats it;
 * open and closed loops, samples and parts of an MPI replay stream too.
 * The plan's own per-request state (offs, state, attempts) is held only
 * for a window too: the pages the system holds for it are counted
 * (mincore), whatever the trace's length. A second trace has what moves
 * times (groups of equal times for --spread, idle gaps for --max-gap) and
 * sessions whose next turn is read only after the
 * previous one ended and was dropped, under --spread, --max-gap, --rate
 * and --duration.
 */
#define _DEFAULT_SOURCE /* mincore */
#include "plan/plan.h"
#include "traces/trace_writer.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define N 40000
#define LATENCY_US 3000

static char path[512];

/* A trace to write at path, named by tag. */
static struct lt_writer *trace_open(const char *tag, uint32_t block_tokens)
{
    const char *dir = getenv("LT_TMP");
    snprintf(path, sizeof path, "%s/stream-%s-%d.lt.zst", dir ? dir : "/tmp", tag, (int)getpid());
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_TRACE, .source = "test", .block_tokens = block_tokens};
    struct lt_writer *w = lt_writer_open(path, &h, NULL, &err);
    assert_non_null(w);
    return w;
}

/* N records 1 ms apart; every 10th of them is a turn of one of 50
 * sessions (so a session's turns are 500 records apart, its earlier turns
 * long dropped when a later one is read), with a think time that makes
 * some turns wait for their previous turn's end. */
static void write_trace(void)
{
    struct lt_err err = {0};
    struct lt_writer *w = trace_open("w", 16);
    for (uint32_t i = 0; i < N; i++) {
        struct lt_msg msgs[2] = {{"system", 5}, {"user", 11 + i % 7}};
        uint64_t blocks[2] = {1000 + i % 13, 77 * (uint64_t)i + 1};
        char text[32];
        int tl = snprintf(text, sizeof text, "prompt %u", i);
        struct lt_record r = {.t = (int64_t)i * 1000,
                              .has = LT_HAS_IN | LT_HAS_OUT | LT_HAS_MSGS | LT_HAS_BLOCKS,
                              .in = 16 + i % 7,
                              .out = 1 + i % 5,
                              .msgs = msgs,
                              .n_msgs = 2,
                              .blocks = blocks,
                              .n_blocks = 1 + i % 2,
                              .text = i % 3 ? NULL : text,
                              .text_len = (size_t)tl};
        if (i % 10 == 0) {
            r.has |= LT_HAS_SESSION | LT_HAS_THINK;
            r.session = 1 + (i / 10) % 50;
            /* every other turn thinks 0.6 s, later than its own time (a
             * turn that thinks every time would fall further behind at
             * each turn, and hold the window open: plan/README.md) */
            r.think = (i / 500) % 2 ? 600000 : 0;
        }
        assert_int_equal(lt_writer_put_record(w, &r, &err), 0);
    }
    assert_int_equal(lt_writer_close(w, &err), 0);
}

/* N records in groups of 3 equal times 1 ms apart, a 20 s idle gap every 3,000 records; every 7th
 * record a turn of one of 1,000 sessions (turns 7,000 records apart, beyond the lookahead: read
 * after the previous turn ended and was dropped), half of them thinking 5 s (later than their own
 * time at --speed 3 and beyond). */
static void write_trace_moving(void)
{
    struct lt_err err = {0};
    struct lt_writer *w = trace_open("m", 0);
    int64_t t = 1000000;
    for (uint32_t i = 0; i < N; i++) {
        if (i > 0 && i % 3 == 0)
            t += i % 3000 == 0 ? 20000000 : 1000;
        struct lt_record r = {
            .t = t, .has = LT_HAS_IN | LT_HAS_OUT, .in = 16 + i % 7, .out = 1 + i % 5};
        if (i % 7 == 0) {
            r.has |= LT_HAS_SESSION | LT_HAS_THINK;
            r.session = 1 + (i / 7) % 1000;
            r.think = (i / 7000) % 2 ? 5000000 : 0;
        }
        assert_int_equal(lt_writer_put_record(w, &r, &err), 0);
    }
    assert_int_equal(lt_writer_close(w, &err), 0);
}

/* N records 1 ms apart, sessions of 5 consecutive turns: a closed
 * loop's next seq is mostly a turn whose previous one is still in flight,
 * and a later session's turn leaves before it. */
static void write_trace_chatty(void)
{
    struct lt_err err = {0};
    struct lt_writer *w = trace_open("c", 0);
    for (uint32_t i = 0; i < N; i++) {
        struct lt_record r = {.t = (int64_t)i * 1000,
                              .has = LT_HAS_IN | LT_HAS_OUT | LT_HAS_SESSION,
                              .in = 16 + i % 7,
                              .out = 1 + i % 5,
                              .session = 1 + i / 5};
        assert_int_equal(lt_writer_put_record(w, &r, &err), 0);
    }
    assert_int_equal(lt_writer_close(w, &err), 0);
}

/* Pages of m the system holds. */
static size_t resident(const struct lt_vmem *m)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = (m->len + page - 1) / page, n = 0;
    unsigned char *v = malloc(pages);
    assert_non_null(v);
    assert_int_equal(mincore(m->p, m->len, v), 0);
    for (size_t i = 0; i < pages; i++)
        n += v[i] & 1;
    free(v);
    return n;
}

struct sent {
    size_t seq;
    int64_t at;
    uint64_t index;
    int64_t t;
    uint32_t in, out, n_msgs, n_blocks, text_len;
    uint64_t msg_tokens, block0, session;
    int32_t prev; /* has a previous turn (a streamed trace may no longer know which) */
};

struct eng {
    struct lt_plan *p;
    struct sent *log;
    size_t n;
    int64_t now;
    size_t *fifo; /* sent seqs in order; each ends LATENCY_US after it left */
    int64_t *end;
    size_t head, tail;
    size_t max_held, max_pages; /* jobs held; pages of offs, state and attempts */
};

static int eng_send(void *ud, size_t seq, struct lt_err *err)
{
    (void)err;
    struct eng *e = ud;
    const struct lt_plan_job *j = &e->p->jobs->v[lt_plan_job_of(e->p, seq)];
    struct sent s;
    memset(&s, 0, sizeof s); /* compared with memcmp: padding included */
    /* a streamed loop numbers its seqs by position in its laps, the cut
     * ones of the last lap included: the job and time are what count */
    s.seq = e->p->o.mode == LT_PLAN_TRACE ? seq : 0;
    s.at = e->p->offs[seq];
    s.index = j->index;
    s.t = j->t;
    s.in = j->in;
    s.out = j->out;
    s.n_msgs = j->n_msgs;
    s.n_blocks = j->n_blocks;
    s.text_len = j->text_len;
    s.block0 = j->n_blocks ? j->blocks[0] : 0;
    s.session = j->session;
    s.prev = j->prev != -1;
    for (uint32_t m = 0; m < j->n_msgs; m++)
        s.msg_tokens += j->msgs[m].tokens * (m + 1);
    if (j->text)
        assert_int_equal(strlen(j->text), j->text_len);
    e->log[e->n++] = s;
    e->fifo[e->tail] = seq;
    e->end[e->tail++] = e->now + LATENCY_US;
    size_t held = lt_plan_jobs_held(e->p->jobs);
    if (held > e->max_held)
        e->max_held = held;
    if (e->p->streamed && e->n % 97 == 0) {
        size_t pages =
            resident(&e->p->m_offs) + resident(&e->p->m_state) + resident(&e->p->m_attempts);
        if (pages > e->max_pages)
            e->max_pages = pages;
    }
    return 0;
}

/* Run p to its end; returns the sends, in order. */
static size_t last_pages; /* the last run's max_pages */

static struct sent *run(struct lt_plan *p, uint32_t r, size_t *n, size_t *max_held)
{
    struct eng e = {.p = p};
    e.log = calloc(4 * N, sizeof *e.log);
    e.fifo = calloc(4 * N, sizeof *e.fifo);
    e.end = calloc(4 * N, sizeof *e.end);
    struct lt_err err = {0};
    const struct lt_plan_ops ops = {.send = eng_send, .ud = &e};
    uint32_t level = p->o.mode == LT_PLAN_CONCURRENCY ? 4 : 0;
    assert_int_equal(lt_plan_start(p, r, level, &ops, &err), 0);
    while (!lt_plan_over(p)) {
        int64_t due = lt_plan_next_due(p);
        int64_t fin = e.head < e.tail ? e.end[e.head] : INT64_MAX;
        assert_true(due != INT64_MAX || fin != INT64_MAX);
        if (fin <= due) {
            e.now = fin;
            assert_int_equal(lt_plan_finish(p, e.fifo[e.head++], fin, &err), 0);
        } else {
            e.now = due;
        }
        assert_int_equal(lt_plan_pump(p, e.now, &err), 0);
    }
    free(e.fifo);
    free(e.end);
    *n = e.n;
    *max_held = e.max_held;
    last_pages = e.max_pages;
    return e.log;
}

static void same_sends(const struct sent *a, const struct sent *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (memcmp(&a[i], &b[i], sizeof a[i]) != 0)
            fail_msg("send %zu differs: seq %zu at %lld (index %llu) vs seq %zu at %lld (index "
                     "%llu)",
                     i, a[i].seq, (long long)a[i].at, (unsigned long long)a[i].index, b[i].seq,
                     (long long)b[i].at, (unsigned long long)b[i].index);
    }
}

static void test_stream_same_as_loaded(void **state)
{
    (void)state;
    write_trace();
    struct lt_err err = {0};
    struct lt_plan_jobs whole, streamed;
    assert_int_equal(lt_plan_jobs_load(&whole, path, &err), 0);
    assert_int_equal(lt_plan_jobs_open(&streamed, path, &err), 0);
    assert_int_equal(streamed.n, N);
    assert_int_equal(streamed.block_tokens, 16);
    assert_int_equal(lt_plan_jobs_held(&streamed), 0);

    struct lt_plan_opts o = {.mode = LT_PLAN_TRACE, .tt = {.speed = 4}};
    struct lt_plan pw, ps;
    assert_int_equal(lt_plan_init(&pw, &whole, &o, &err), 0);
    assert_int_equal(lt_plan_init(&ps, &streamed, &o, &err), 0);
    assert_true(ps.streamed);
    assert_false(pw.streamed);
    assert_int_equal(ps.planned, pw.planned);
    size_t nw, ns, hw, hs;
    struct sent *lw = run(&pw, 0, &nw, &hw);
    struct sent *ls = run(&ps, 0, &ns, &hs);
    assert_int_equal(nw, N);
    assert_int_equal(ns, N);
    same_sends(lw, ls, N);
    /* some session turns waited for their previous turn's end */
    size_t late = 0;
    for (size_t i = 0; i < N; i++)
        late += lw[i].at > lw[i].t / 4;
    assert_true(late > 100);
    /* the loaded trace holds every job; the streamed one a window: the
     * lookahead, what waits, and what is not yet given back */
    print_message("held at most %zu of %d jobs; %zu turns late\n", hs, N, late);
    assert_int_equal(hw, N);
    assert_true(hs <= 2 * LT_PLAN_LOOKAHEAD + 2048);
    assert_true(hs < N / 4);
    /* offs (8 bytes a seq), state and attempts (1 each) for the window:
     * 10 bytes a seq held, in pages of 4 KiB at most 3 partly used */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    print_message("plan state: at most %zu pages (%zu bytes for %d requests)\n", last_pages,
                  last_pages * page, N);
    assert_true(last_pages > 0);
    assert_true(last_pages * page <= 10 * (2 * LT_PLAN_LOOKAHEAD + 2048) + 4 * page);

    /* a second run reads the trace again and repeats the first */
    size_t ns2, hs2;
    struct sent *ls2 = run(&ps, 1, &ns2, &hs2);
    assert_int_equal(ns2, N);
    same_sends(lw, ls2, N);

    free(lw);
    free(ls);
    free(ls2);
    lt_plan_release(&pw);
    lt_plan_release(&ps);
    lt_plan_jobs_close(&whole);
    lt_plan_jobs_close(&streamed);
}

/* What one mode did: the loaded plan's sends (n, the streamed plan's are
 * the same), the jobs the streamed one held at most and read. */
struct outcome {
    struct sent *sends;
    size_t n, held, read;
};

/* Plan mode o on the trace at path loaded whole and streamed, run both,
 * and check that they send the same (seqs, jobs and times) and plan and
 * sample alike. */
static struct outcome compare_mode(const struct lt_plan_opts *o)
{
    struct lt_err err = {0};
    struct lt_plan_jobs whole, streamed;
    assert_int_equal(lt_plan_jobs_load(&whole, path, &err), 0);
    assert_int_equal(lt_plan_jobs_open(&streamed, path, &err), 0);
    struct lt_plan pw, ps;
    assert_int_equal(lt_plan_init(&pw, &whole, o, &err), 0);
    assert_int_equal(lt_plan_init(&ps, &streamed, o, &err), 0);
    assert_true(ps.streamed);
    assert_int_equal(ps.planned, pw.planned);
    assert_int_equal(ps.sampled, pw.sampled);
    assert_memory_equal(&ps.sample, &pw.sample, sizeof ps.sample);
    struct outcome r;
    size_t hw, ns;
    r.sends = run(&pw, 0, &r.n, &hw);
    struct sent *ls = run(&ps, 0, &ns, &r.held);
    r.read = lt_plan_jobs_loaded(&streamed);
    assert_int_equal(r.n, ns);
    assert_true(r.n > 100);
    same_sends(r.sends, ls, r.n);
    free(ls);
    lt_plan_release(&pw);
    lt_plan_release(&ps);
    lt_plan_jobs_close(&whole);
    lt_plan_jobs_close(&streamed);
    return r;
}

/* Times that move (--spread, --max-gap, --rate, --duration) and sessions whose previous turn ended
 * and was dropped before the next was read: the streamed plan sends what the loaded one sends. */
static void test_stream_moving_times(void **state)
{
    (void)state;
    write_trace_moving();
    const struct lt_plan_opts modes[] = {
        {.mode = LT_PLAN_TRACE, .tt = {.speed = 3}},
        {.mode = LT_PLAN_TRACE, .tt = {.spread_us = 900, .max_gap_us = 50000, .speed = 2}},
        {.mode = LT_PLAN_TRACE, .tt = {.rate = 2000, .duration_us = 9000000}},
        {.mode = LT_PLAN_TRACE, .tt = {.spread_us = 2500, .rate = 700, .duration_us = 40000000}},
        {.mode = LT_PLAN_TRACE, .tt = {.duration_us = 45000000}, .max_concurrency = 2},
        /* samples of whole sessions: a window, --requests, both, with the
         * transforms */
        {.mode = LT_PLAN_TRACE, .tt = {.win_start_us = 21000000, .win_end_us = 61000000}},
        {.mode = LT_PLAN_TRACE, .requests = 5000, .tt = {.speed = 5}},
        {.mode = LT_PLAN_TRACE,
         .requests = 20000,
         .tt = {.win_start_us = 2000000, .spread_us = 700, .rate = 900, .duration_us = 15000000}},
        /* open loops: a sample of whole sessions (less than the trace),
         * laps of it and a sample, a duration, gamma arrivals behind a
         * cap */
        {.mode = LT_PLAN_RATE, .rate = 1000, .requests = 3000, .seed = 7},
        {.mode = LT_PLAN_RATE, .rate = 5000, .requests = 100000, .seed = 8},
        {.mode = LT_PLAN_RATE, .rate = 2000, .duration_us = 10000000, .seed = 9},
        {.mode = LT_PLAN_RATE,
         .rate = 3000,
         .arrivals = LT_ARR_GAMMA,
         .cv = 2,
         .requests = 90000,
         .max_concurrency = 3},
        /* closed loops (4 in flight): a sample, laps and a sample, a
         * time limit; a session's turn waits for its previous one */
        {.mode = LT_PLAN_CONCURRENCY, .requests = 3000},
        {.mode = LT_PLAN_CONCURRENCY, .requests = 100000},
        {.mode = LT_PLAN_CONCURRENCY, .duration_us = 7000000},
        /* parts of an MPI replay: whole sessions dealt by load, the
         * global schedule kept */
        {.mode = LT_PLAN_TRACE, .parts = 3, .part = 1, .tt = {.speed = 2}},
        {.mode = LT_PLAN_TRACE,
         .parts = 2,
         .part = 0,
         .requests = 30000,
         .tt = {.spread_us = 500, .rate = 1500, .duration_us = 12000000}},
        /* loops split over parts: laps and a sample, a duration */
        {.mode = LT_PLAN_RATE, .rate = 2000, .requests = 50000, .parts = 3, .part = 2, .seed = 3},
        {.mode = LT_PLAN_RATE, .rate = 2000, .duration_us = 10000000, .parts = 2, .part = 1},
        {.mode = LT_PLAN_RATE,
         .rate = 9000,
         .duration_us = 9000000,
         .requests = 100000,
         .parts = 2,
         .part = 0},
        {.mode = LT_PLAN_CONCURRENCY, .requests = 30000, .parts = 2, .part = 0},
        /* a window late in the trace: some 21,000 requests cut before it,
         * given back as they are passed (the last mode: checked below) */
        {.mode = LT_PLAN_TRACE, .tt = {.win_start_us = 150000000, .win_end_us = 200000000}},
    };
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        struct outcome r = compare_mode(&modes[m]);
        print_message("mode %zu: %zu of %d sent; held at most %zu jobs, %zu pages; %zu read\n", m,
                      r.n, N, r.held, last_pages, r.read);
        if (m == sizeof modes / sizeof *modes - 1)
            assert_true(r.held <= 2 * LT_PLAN_LOOKAHEAD + 2048);
        /* --duration: the cut tail is never read */
        if (modes[m].tt.duration_us)
            assert_true(r.read < N);
        /* (what is held is not checked here: a turn that thinks longer
         * than its gap, as many do once --max-gap or --rate shortens the
         * gaps, pins the window: plan/README.md "Traps") */
        free(r.sends);
    }
    remove(path);
}

/* A closed loop over sessions whose turns follow one another: the
 * streamed plan sends a ready turn ahead of the cursor's waiting one as
 * the loaded plan brings it forward, in the same order. */
static void test_stream_closed_sessions(void **state)
{
    (void)state;
    write_trace_chatty();
    const struct lt_plan_opts modes[] = {
        {.mode = LT_PLAN_CONCURRENCY},
        {.mode = LT_PLAN_CONCURRENCY, .requests = 97003},
        {.mode = LT_PLAN_CONCURRENCY, .duration_us = 7000000},
        {.mode = LT_PLAN_CONCURRENCY, .requests = 50000, .parts = 2, .part = 1},
    };
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        struct outcome r = compare_mode(&modes[m]);
        /* the order of the sends differs from the trace's */
        size_t out_of_order = 0;
        for (size_t i = 1; i < r.n; i++)
            out_of_order += r.sends[i].index < r.sends[i - 1].index;
        print_message("closed %zu: %zu sent, %zu out of the trace's order; held at most %zu\n", m,
                      r.n, out_of_order, r.held);
        assert_true(out_of_order > r.n / 10);
        assert_true(r.held <= 2 * LT_PLAN_LOOKAHEAD + 2048);
        free(r.sends);
    }
    remove(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_same_as_loaded),
        cmocka_unit_test(test_stream_moving_times),
        cmocka_unit_test(test_stream_closed_sessions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Unit tests of analyze (analyze.h): results built by hand with known
 * timings, so every expected figure is computed here from the definitions
 * (docs/metrics.md), independently of the code under test: percentiles,
 * means, Agg and per-request tok/s, goodput, the coordinated-omission
 * corrected figures (equal to the uncorrected ones exactly when no send was
 * late), errors by class, warm-up exclusion and the sweep knee. One case
 * goes through a real file (writer API) and lt_analyze_print_summary.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "analyze/analyze.h"
#include "traces/trace_writer.h"
#include "tests/hist_same.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MS 1000
#define N 100

static void assert_near(double want, double got, double rel)
{
    double tol = fabs(want) * rel + 1e-9;
    if (fabs(want - got) > tol)
        fail_msg("got %.9g, expected %.9g (+- %.3g)", got, want, tol);
}

/* Request k of the basic run: sched k*100 ms, sent sched + late(k), TTFT
 * (k+1) ms, then 10 more tokens 10 ms apart (11 chunks of 1 token). */
struct req {
    struct lt_result res;
    struct lt_chunk ch[11];
};

static void make_req(struct req *q, uint32_t run, uint64_t k, int64_t late)
{
    memset(q, 0, sizeof *q);
    struct lt_result *r = &q->res;
    r->run = run;
    r->index = k;
    r->sched = (int64_t)k * 100 * MS;
    r->sent = r->sched + late;
    r->first_byte = r->sent + (int64_t)(k + 1) * MS - 100;
    r->first_token = r->sent + (int64_t)(k + 1) * MS;
    r->first_content = r->first_token;
    for (int c = 0; c < 11; c++)
        q->ch[c] = (struct lt_chunk){.t = r->first_token + c * 10 * MS, .tokens = 1};
    r->end = q->ch[10].t;
    r->chunks = q->ch;
    r->n_chunks = 11;
    r->in = 1000;
    r->want_in = 1000;
    r->out = 11;
    r->want_out = 11;
    r->status = 200;
    r->finish = "stop";
    r->count = "usage";
    r->has = LT_RHAS_SENT | LT_RHAS_FIRST_BYTE | LT_RHAS_FIRST_TOKEN | LT_RHAS_FIRST_CONTENT |
             LT_RHAS_END | LT_RHAS_CHUNKS | LT_RHAS_IN | LT_RHAS_OUT | LT_RHAS_STATUS |
             LT_RHAS_WANT_IN | LT_RHAS_WANT_OUT;
}

static void add_basic(struct lt_analyze *a, uint32_t run, int64_t late_from_50)
{
    struct lt_run rr = {.id = run, .mode = "concurrency", .concurrency = 1, .target = "sim"};
    assert_int_equal(lt_analyze_add_run(a, &rr, NULL), 0);
    for (uint64_t k = 0; k < N; k++) {
        struct req q;
        make_req(&q, run, k, k >= 50 ? late_from_50 : 0);
        assert_int_equal(lt_analyze_add_result(a, &q.res, NULL), 0);
    }
}

static void test_basic_figures(void **state)
{
    struct lt_analyze a;
    struct lt_analyze_opts o;
    lt_analyze_opts_init(&o);
    o.slo_ttft_us = 50 * MS;
    assert_int_equal(lt_analyze_init(&a, &o, NULL), 0);
    add_basic(&a, 0, 0);
    assert_int_equal(lt_analyze_finish(&a, NULL), 0);
    assert_int_equal(a.n_runs, 1);
    const struct lt_analyze_run *r = a.runs[0];
    assert_int_equal(r->ok, N);
    assert_int_equal(r->late, 0);
    assert_int_equal(r->tokens, 11 * N);

    /* TTFT = 1..100 ms: p50 is the 50th value, p99 the 99th (nearest rank). */
    double rel = ldexp(1, -10);
    assert_near(50 * MS, lt_analyze_pct(r->h[LT_AM_TTFT], 50), rel);
    assert_near(90 * MS, lt_analyze_pct(r->h[LT_AM_TTFT], 90), rel);
    assert_near(99 * MS, lt_analyze_pct(r->h[LT_AM_TTFT], 99), rel);
    assert_int_equal(lt_hist_max(r->h[LT_AM_TTFT]), 100 * MS);
    assert_near(50.5 * MS, lt_hist_mean(r->h[LT_AM_TTFT]), 1e-12);
    /* TPOT = (E2E - TTFT) / (out - 1) = 100 ms / 10; ITL: 10 gaps of 10 ms each. */
    assert_int_equal(lt_hist_min(r->h[LT_AM_TPOT]), 10 * MS);
    assert_int_equal(lt_hist_max(r->h[LT_AM_TPOT]), 10 * MS);
    assert_int_equal(lt_hist_count(r->h[LT_AM_ITL]), 10 * N);
    assert_int_equal(lt_hist_max(r->h[LT_AM_ITL]), 10 * MS);
    /* E2E = TTFT + 100 ms. */
    assert_near(150 * MS, lt_analyze_pct(r->h[LT_AM_E2E], 50), rel);
    assert_int_equal(lt_hist_max(r->h[LT_AM_E2E]), 200 * MS);

    /* Window: first send 0 .. last end 9.9 s + 100 ms + 100 ms. */
    assert_near(10.1, r->wall_s, 1e-12);
    assert_near(1100 / 10.1, r->agg_tps, 1e-12);
    double e2e_mean = 0;
    for (int k = 0; k < N; k++)
        e2e_mean += 11 / ((k + 1 + 100) / 1000.0);
    assert_near(e2e_mean / N, r->perreq_e2e, 1e-12);
    assert_near(100.0, r->perreq_decode, 1e-12); /* 10 tokens in 100 ms */

    /* Goodput: TTFT <= 50 ms for k = 0..49. */
    assert_int_equal(r->good, 50);
    assert_near(50 / 10.1, r->goodput, 1e-12);

    /* No send was late: corrected figures are the uncorrected ones. */
    static const double ps[] = {0, 50, 90, 95, 99, 100};
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(lt_hist_value_at(r->h[LT_AM_TTFT], ps[i]),
                         lt_hist_value_at(r->h[LT_AM_TTFT_S], ps[i]));
        assert_int_equal(lt_hist_value_at(r->h[LT_AM_E2E], ps[i]),
                         lt_hist_value_at(r->h[LT_AM_E2E_S], ps[i]));
    }
    assert_int_equal(r->good_sched, r->good);
    assert_int_equal(lt_hist_max(r->h[LT_AM_LAG]), 0);
    lt_analyze_release(&a);
}

/* TTFT and TTFC, from the send and the scheduled time, for a mix of
 * answers: first content at the first token (analyze records those once
 * for both), after it (reasoning), and none; some first tokens before the
 * send (negative, counted and recorded as 0); more results than analyze
 * gathers before recording. TPOT rounds halves up as llround() does.
 * Expected: every value recorded here, one by one, in histograms of the
 * same precision. */
static void test_ttft_ttfc_mix(void **state)
{
    enum { M = 1000 };
    struct lt_hist *want[LT_AM_COUNT];
    for (int m = 0; m < LT_AM_COUNT; m++)
        assert_non_null(want[m] = lt_hist_new(UINT64_C(1) << 36, 10, NULL));
    uint64_t neg[LT_AM_COUNT] = {0};
    struct lt_analyze a;
    assert_int_equal(lt_analyze_init(&a, NULL, NULL), 0);
    for (int64_t k = 0; k < M; k++) {
        struct lt_result r = {.run = 0, .index = (uint64_t)k, .sched = k * 1000};
        r.sent = r.sched + k % 7;
        r.first_token = k % 50 == 0 ? r.sent - 5 : r.sent + 1000 + 37 * k;
        r.first_content = k % 3 == 1 ? r.first_token + 7 * (k + 1) : r.first_token;
        r.out = 3;
        r.end = r.first_token + 2 * k + 1; /* TPOT (2k + 1) / 2: a half */
        r.status = 200;
        r.has = LT_RHAS_SENT | LT_RHAS_FIRST_TOKEN | LT_RHAS_END | LT_RHAS_OUT | LT_RHAS_STATUS |
                (k % 3 != 2 ? LT_RHAS_FIRST_CONTENT : 0);
        assert_int_equal(lt_analyze_add_result(&a, &r, NULL), 0);
        int64_t v[LT_AM_COUNT] = {0};
        bool has[LT_AM_COUNT] = {0};
        v[LT_AM_TTFT] = r.first_token - r.sent;
        v[LT_AM_TTFT_S] = r.first_token - r.sched;
        has[LT_AM_TTFT] = has[LT_AM_TTFT_S] = true;
        if (k % 3 != 2) {
            v[LT_AM_TTFC] = r.first_content - r.sent;
            v[LT_AM_TTFC_S] = r.first_content - r.sched;
            has[LT_AM_TTFC] = has[LT_AM_TTFC_S] = true;
        }
        v[LT_AM_TPOT] = llround((double)(r.end - r.first_token) / 2);
        has[LT_AM_TPOT] = true;
        for (int m = 0; m < LT_AM_COUNT; m++) {
            if (!has[m])
                continue;
            neg[m] += v[m] < 0;
            lt_hist_record(want[m], v[m] < 0 ? 0 : (uint64_t)v[m]);
        }
    }
    assert_int_equal(lt_analyze_finish(&a, NULL), 0);
    const struct lt_analyze_run *r = a.runs[0];
    static const enum lt_analyze_metric ms[] = {LT_AM_TTFT, LT_AM_TTFT_S, LT_AM_TTFC, LT_AM_TTFC_S,
                                                LT_AM_TPOT};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        assert_same_hist(want[ms[i]], r->h[ms[i]]);
        assert_int_equal(r->negative[ms[i]], neg[ms[i]]);
    }
    assert_int_equal(r->negative[LT_AM_TTFT], M / 50);
    assert_int_equal(lt_hist_count(r->h[LT_AM_TTFC]), M - M / 3);
    /* Finishing again changes nothing. */
    assert_int_equal(lt_analyze_finish(&a, NULL), 0);
    assert_same_hist(want[LT_AM_TTFC], r->h[LT_AM_TTFC]);
    for (int m = 0; m < LT_AM_COUNT; m++)
        lt_hist_free(want[m]);
    lt_analyze_release(&a);
}

/* Times no replay writes (a damaged or hostile file): one before the
 * epoch by 2^62 us counts in the first time-series bucket, not in a
 * bucket a lookup found before, and one near 2^63 us neither overflows
 * (UBSan checks this in CI) nor loses a request. */
static void add_at(struct lt_analyze *a, int64_t sent)
{
    struct lt_result r = {.run = 0,
                          .sched = sent,
                          .sent = sent,
                          .first_token = sent + 10,
                          .end = sent + 1000,
                          .out = 2,
                          .status = 200};
    r.has = LT_RHAS_SENT | LT_RHAS_FIRST_TOKEN | LT_RHAS_END | LT_RHAS_OUT | LT_RHAS_STATUS;
    assert_int_equal(lt_analyze_add_result(a, &r, NULL), 0);
}

/* Self-checks: one run's ranks add up (counts, rates, in flight, CPU; the
 * longest wall time), a flag of one rank flags the run and is said at the
 * top with the figures; a run without a check shows none. */
static void test_self_check(void **state)
{
    (void)state;
    struct lt_analyze a;
    assert_int_equal(lt_analyze_init(&a, NULL, NULL), 0);
    add_basic(&a, 0, 0);
    add_basic(&a, 1, 0);
    struct lt_check k0 = {.run = 0,
                          .requests = 50,
                          .sent = 50,
                          .out_tokens = 550,
                          .inflight_asked = 2,
                          .inflight_got = 1.98,
                          .cpu_s = 0.5,
                          .wall_s = 10};
    struct lt_check k1 = k0;
    k1.inflight_got = 1.5;
    k1.wall_s = 12;
    k1.off = true;
    assert_int_equal(lt_analyze_add_check(&a, &k0, NULL), 0);
    assert_int_equal(lt_analyze_add_check(&a, &k1, NULL), 0);
    assert_int_equal(lt_analyze_finish(&a, NULL), 0);
    const struct lt_analyze_run *r = a.runs[0];
    assert_int_equal(r->n_checks, 2);
    assert_int_equal(r->check.requests, 100);
    assert_int_equal(r->check.out_tokens, 1100);
    assert_true(fabs(r->check.inflight_asked - 4) < 1e-9 &&
                fabs(r->check.inflight_got - 3.48) < 1e-9);
    assert_true(r->check.cpu_s == 1 && r->check.wall_s == 12);
    assert_true(lt_analyze_check_flagged(r));
    assert_false(lt_analyze_check_flagged(a.runs[1]));
    assert_int_equal(a.runs[1]->n_checks, 0);
    char w[4][LT_ANALYZE_FLAG_LEN];
    assert_int_equal(lt_analyze_check_flags(&a, w, 4), 1);
    assert_non_null(strstr(w[0], "CHECK run 0 (C=1): the load delivered is more than 5 % off"));
    assert_non_null(strstr(w[0], "3.48 in flight on average of 4 asked (-13.0 %)"));
    lt_analyze_release(&a);
}

static void test_hostile_times(void **state)
{
    (void)state;
    struct lt_analyze a;
    assert_int_equal(lt_analyze_init(&a, NULL, NULL), 0);
    static const int64_t secs[] = {100, 150, 250};
    for (int k = 0; k < 3; k++)
        add_at(&a, secs[k] * 1000000);
    add_at(&a, INT64_MIN / 2);
    assert_int_equal(lt_analyze_finish(&a, NULL), 0);
    const struct lt_analyze_ts *ts = &a.runs[0]->ts;
    assert_int_equal(ts->width_us, 1000000);
    assert_int_equal(ts->b[0].started, 1);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(ts->b[secs[k]].started, 1);
        assert_int_equal(ts->b[secs[k]].ok, 1);
    }
    lt_analyze_release(&a);

    assert_int_equal(lt_analyze_init(&a, NULL, NULL), 0);
    add_at(&a, 100 * 1000000);
    add_at(&a, INT64_MAX - 2000);
    add_at(&a, 6000000000000000000);
    assert_int_equal(lt_analyze_finish(&a, NULL), 0);
    ts = &a.runs[0]->ts;
    uint64_t started = 0, ok = 0;
    for (uint32_t k = 0; k < ts->n; k++) {
        started += ts->b[k].started;
        ok += ts->b[k].ok;
    }
    assert_int_equal(started, 3);
    assert_int_equal(ok, 3);
    lt_analyze_release(&a);

    /* Times at both ends of 64 bits in one result, and in its chunks:
     * every difference taken is defined (UBSan), and the request counts. */
    assert_int_equal(lt_analyze_init(&a, NULL, NULL), 0);
    struct lt_chunk ch[2] = {{.t = INT64_MIN + 1, .tokens = 1}, {.t = INT64_MAX, .tokens = 1}};
    struct lt_result r = {.run = 0,
                          .sched = INT64_MAX,
                          .sent = INT64_MIN + 5,
                          .first_token = INT64_MAX - 5,
                          .first_content = INT64_MIN,
                          .end = INT64_MAX,
                          .out = 2,
                          .status = 200,
                          .chunks = ch,
                          .n_chunks = 2};
    r.has = LT_RHAS_SENT | LT_RHAS_FIRST_TOKEN | LT_RHAS_FIRST_CONTENT | LT_RHAS_END | LT_RHAS_OUT |
            LT_RHAS_STATUS | LT_RHAS_CHUNKS;
    assert_int_equal(lt_analyze_add_result(&a, &r, NULL), 0);
    assert_int_equal(lt_analyze_finish(&a, NULL), 0);
    assert_int_equal(a.runs[0]->ok, 1);
    assert_int_equal(lt_hist_count(a.runs[0]->h[LT_AM_E2E]), 1);
    lt_analyze_release(&a);
}

static void test_late_sends(void **state)
{
    struct lt_analyze a;
    struct lt_analyze_opts o;
    lt_analyze_opts_init(&o);
    o.slo_ttft_us = 100 * MS;
    assert_int_equal(lt_analyze_init(&a, &o, NULL), 0);
    add_basic(&a, 0, 200 * MS); /* the second half sent 200 ms late */
    assert_int_equal(lt_analyze_finish(&a, NULL), 0);
    const struct lt_analyze_run *r = a.runs[0];
    assert_int_equal(r->late, 50);
    /* Uncorrected TTFT is unchanged: 1..100 ms. */
    assert_near(50 * MS, lt_analyze_pct(r->h[LT_AM_TTFT], 50), ldexp(1, -10));
    assert_int_equal(lt_hist_max(r->h[LT_AM_TTFT]), 100 * MS);
    /* From sched: 1..50 ms, then 251..300 ms. */
    assert_near(50 * MS, lt_analyze_pct(r->h[LT_AM_TTFT_S], 50), ldexp(1, -10));
    assert_near(251 * MS, lt_analyze_pct(r->h[LT_AM_TTFT_S], 51), ldexp(1, -10));
    assert_int_equal(lt_hist_max(r->h[LT_AM_TTFT_S]), 300 * MS);
    assert_int_equal(lt_hist_max(r->h[LT_AM_E2E_S]), 400 * MS);
    assert_near(200 * MS, lt_analyze_pct(r->h[LT_AM_LAG], 99), ldexp(1, -10));
    /* Goodput: all 100 meet TTFT <= 100 ms from the send; only 50 from sched. */
    assert_int_equal(r->good, 100);
    assert_int_equal(r->good_sched, 50);
    /* The lag warning is in the text report. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(lt_analyze_write_text(&a, f, NULL), 0);
    fclose(f);
    assert_non_null(strstr(buf, "schedule lag p99 is 200."));
    free(buf);
    lt_analyze_release(&a);
}

/* Cancelled results (closed where the trace's client left) are neither Ok
 * nor errors: counted apart with their tokens, in no latency or goodput
 * figure, even with an absurd end; a cancelled warm-up stays out. */
static void test_cancelled(void **state)
{
    (void)state;
    struct lt_analyze_opts o;
    lt_analyze_opts_init(&o);
    o.slo_ttft_us = 100 * MS;
    struct lt_analyze a;
    assert_int_equal(lt_analyze_init(&a, &o, NULL), 0);
    add_basic(&a, 3, 0);
    struct req q;
    for (int k = 0; k < 3; k++) {
        make_req(&q, 3, 2000 + (uint64_t)k, 0);
        q.res.cancelled = true;
        q.res.out = 4 + (uint32_t)k; /* 4 + 5 + 6 tokens received */
        q.res.end += 1000000 * MS;
        q.res.warmup = k == 2;
        assert_int_equal(lt_analyze_add_result(&a, &q.res, NULL), 0);
    }
    make_req(&q, 3, 2010, 0);
    q.res.err = "timeout";
    assert_int_equal(lt_analyze_add_result(&a, &q.res, NULL), 0);
    assert_int_equal(lt_analyze_finish(&a, NULL), 0);
    const struct lt_analyze_run *r = a.runs[0];
    assert_int_equal(r->measured, N + 3);
    assert_int_equal(r->ok, N);
    assert_int_equal(r->cancelled, 2);
    assert_int_equal(r->cancelled_tokens, 9);
    assert_int_equal(r->n_errs, 1);
    assert_string_equal(r->errs[0].name, "timeout");
    assert_int_equal(r->errs[0].n, 1);
    assert_int_equal(lt_hist_count(r->h[LT_AM_E2E]), N);
    assert_int_equal(lt_hist_max(r->h[LT_AM_E2E]), 200 * MS);
    assert_int_equal(r->good, N);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(lt_analyze_write_text(&a, f, NULL), 0);
    fclose(f);
    assert_non_null(strstr(buf, "cancelled: 2 (closed where the trace's client left; not errors), "
                                "9 tokens received before"));
    assert_non_null(strstr(buf, "errors: timeout 1  (1.0 % of measured)"));
    free(buf);
    lt_analyze_release(&a);
}

static void test_errors_and_warmup(void **state)
{
    struct lt_analyze a;
    assert_int_equal(lt_analyze_init(&a, NULL, NULL), 0);
    add_basic(&a, 7, 0);
    struct req q;
    /* warm-up: absurd latency, must not show */
    make_req(&q, 7, 1000, 0);
    q.res.warmup = true;
    q.res.end += 1000000 * MS;
    assert_int_equal(lt_analyze_add_result(&a, &q.res, NULL), 0);
    make_req(&q, 7, 1001, 0);
    q.res.err = "timeout";
    assert_int_equal(lt_analyze_add_result(&a, &q.res, NULL), 0);
    make_req(&q, 7, 1002, 0);
    q.res.status = 429;
    assert_int_equal(lt_analyze_add_result(&a, &q.res, NULL), 0);
    make_req(&q, 7, 1003, 0);
    q.res.status = 429;
    assert_int_equal(lt_analyze_add_result(&a, &q.res, NULL), 0);
    make_req(&q, 7, 1004, 0);
    q.res.has &= ~(uint32_t)LT_RHAS_SENT;
    assert_int_equal(lt_analyze_add_result(&a, &q.res, NULL), 0);
    make_req(&q, 7, 1005, 0);
    q.res.out = 0;
    assert_int_equal(lt_analyze_add_result(&a, &q.res, NULL), 0);
    assert_int_equal(lt_analyze_finish(&a, NULL), 0);
    const struct lt_analyze_run *r = a.runs[0];
    assert_int_equal(r->id, 7);
    assert_int_equal(r->results, N + 6);
    assert_int_equal(r->warmup, 1);
    assert_int_equal(r->measured, N + 5);
    assert_int_equal(r->ok, N);
    assert_int_equal(lt_hist_max(r->h[LT_AM_E2E]), 200 * MS);
    struct {
        const char *name;
        uint64_t n;
    } want[] = {{"timeout", 1}, {"http_429", 2}, {"not_sent", 1}, {"empty", 1}};
    assert_int_equal(r->n_errs, 4);
    for (int i = 0; i < 4; i++) {
        assert_string_equal(r->errs[i].name, want[i].name);
        assert_int_equal(r->errs[i].n, want[i].n);
    }
    lt_analyze_release(&a);

    /* An error class with quotes and a comma stays inside its
     * CSV field: quotes doubled, the row whole (RFC 4180). */
    assert_int_equal(lt_analyze_init(&a, NULL, NULL), 0);
    add_basic(&a, 7, 0);
    make_req(&q, 7, 1000, 0);
    q.res.err = "bad \"x\", y";
    assert_int_equal(lt_analyze_add_result(&a, &q.res, NULL), 0);
    assert_int_equal(lt_analyze_finish(&a, NULL), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(lt_analyze_write_csv(&a, f, NULL), 0);
    fclose(f);
    assert_non_null(strstr(buf, ",\"bad \"\"x\"\", y:1\","));
    size_t rows = 0;
    for (char *c = buf; *c; c++)
        rows += *c == '\n';
    assert_int_equal(rows, 2); /* header and one run */
    free(buf);
    lt_analyze_release(&a);
}

/* A sweep with known aggregate throughput: level c has c requests of 100
 * tokens, all sent at 0 and ending together at c * 100 / agg seconds. */
static void test_knee(void **state)
{
    static const struct {
        uint32_t c;
        double agg;
    } lv[] = {{4, 370}, {1, 100}, {8, 400}, {2, 190}}; /* file order need not be sorted */
    struct lt_analyze a;
    assert_int_equal(lt_analyze_init(&a, NULL, NULL), 0);
    for (uint32_t i = 0; i < 4; i++) {
        struct lt_run rr = {.id = i, .mode = "concurrency", .concurrency = lv[i].c};
        assert_int_equal(lt_analyze_add_run(&a, &rr, NULL), 0);
        int64_t e2e = llround(lv[i].c * 100 / lv[i].agg * 1e6);
        for (uint32_t k = 0; k < lv[i].c; k++) {
            struct lt_result r = {.run = i,
                                  .index = k,
                                  .sched = 0,
                                  .sent = 0,
                                  .first_token = e2e / 10,
                                  .end = e2e,
                                  .out = 100,
                                  .status = 200,
                                  .count = "usage",
                                  .has = LT_RHAS_SENT | LT_RHAS_FIRST_TOKEN | LT_RHAS_END |
                                         LT_RHAS_OUT | LT_RHAS_STATUS};
            assert_int_equal(lt_analyze_add_result(&a, &r, NULL), 0);
        }
    }
    assert_int_equal(lt_analyze_finish(&a, NULL), 0);
    assert_string_equal(a.sweep_axis, "concurrency");
    assert_int_equal(a.n_points, 4);
    for (uint32_t i = 0; i < 4; i++)
        assert_near(1u << i, a.points[i].x, 0);
    assert_near(100, a.runs[a.points[0].run]->agg_tps, 1e-6);
    assert_near(400, a.runs[a.points[3].run]->agg_tps, 1e-6);
    /* growth per relative load increase: 0.9, 0.95, 0.08 -> knee at C = 4 */
    assert_int_equal(a.knee, 2);
    lt_analyze_release(&a);

    /* With a stricter fraction nothing changes; with 0.05 there is no knee. */
    struct lt_analyze_opts o;
    lt_analyze_opts_init(&o);
    o.knee_fraction = 0.05;
    assert_int_equal(lt_analyze_init(&a, &o, NULL), 0);
    for (uint32_t i = 0; i < 4; i++) {
        struct lt_run rr = {.id = i, .concurrency = lv[i].c};
        lt_analyze_add_run(&a, &rr, NULL);
        int64_t e2e = llround(lv[i].c * 100 / lv[i].agg * 1e6);
        for (uint32_t k = 0; k < lv[i].c; k++) {
            struct lt_result r = {.run = i,
                                  .sent = 0,
                                  .first_token = 1,
                                  .end = e2e,
                                  .out = 100,
                                  .status = 200,
                                  .has = LT_RHAS_SENT | LT_RHAS_FIRST_TOKEN | LT_RHAS_END |
                                         LT_RHAS_OUT | LT_RHAS_STATUS};
            lt_analyze_add_result(&a, &r, NULL);
        }
    }
    lt_analyze_finish(&a, NULL);
    assert_int_equal(a.knee, -1);
    lt_analyze_release(&a);

    /* The same levels as request rates (open loop): a sweep over rate. */
    assert_int_equal(lt_analyze_init(&a, NULL, NULL), 0);
    for (uint32_t i = 0; i < 4; i++) {
        struct lt_run rr = {.id = i, .mode = "rate", .rate = lv[i].c * 0.5};
        lt_analyze_add_run(&a, &rr, NULL);
        int64_t e2e = llround(lv[i].c * 100 / lv[i].agg * 1e6);
        for (uint32_t k = 0; k < lv[i].c; k++) {
            struct lt_result r = {.run = i,
                                  .sent = 0,
                                  .first_token = 1,
                                  .end = e2e,
                                  .out = 100,
                                  .status = 200,
                                  .has = LT_RHAS_SENT | LT_RHAS_FIRST_TOKEN | LT_RHAS_END |
                                         LT_RHAS_OUT | LT_RHAS_STATUS};
            lt_analyze_add_result(&a, &r, NULL);
        }
    }
    lt_analyze_finish(&a, NULL);
    assert_string_equal(a.sweep_axis, "rate");
    assert_int_equal(a.knee, 2);
    assert_near(2.0, a.points[a.knee].x, 0);
    lt_analyze_release(&a);

    /* With SLOs, no knee before goodput stops growing: levels 1, 4, 8 at
     * 100, 180, 200 tok/s (E2E 1 s, 2.2 s, 4 s). Throughput grows by 27 %
     * of the load from 1 to 4 (a knee at 1 by tokens alone), but goodput
     * with E2E <= 3 s grows from 1 to 1.8 req/s and then falls to 0: the
     * knee is at 4. */
    static const struct {
        uint32_t c;
        double agg;
    } gv[] = {{1, 100}, {4, 180}, {8, 200}};
    for (int with_slo = 0; with_slo < 2; with_slo++) {
        lt_analyze_opts_init(&o);
        o.slo_e2e_us = with_slo ? 3000000 : 0;
        assert_int_equal(lt_analyze_init(&a, &o, NULL), 0);
        for (uint32_t i = 0; i < 3; i++) {
            struct lt_run rr = {.id = i, .mode = "concurrency", .concurrency = gv[i].c};
            lt_analyze_add_run(&a, &rr, NULL);
            int64_t e2e = llround(gv[i].c * 100 / gv[i].agg * 1e6);
            for (uint32_t k = 0; k < gv[i].c; k++) {
                struct lt_result r = {.run = i,
                                      .index = k,
                                      .sent = 0,
                                      .first_token = 1,
                                      .end = e2e,
                                      .out = 100,
                                      .status = 200,
                                      .has = LT_RHAS_SENT | LT_RHAS_FIRST_TOKEN | LT_RHAS_END |
                                             LT_RHAS_OUT | LT_RHAS_STATUS};
                lt_analyze_add_result(&a, &r, NULL);
            }
        }
        assert_int_equal(lt_analyze_finish(&a, NULL), 0);
        if (with_slo) {
            assert_near(1.0, a.runs[0]->goodput, 1e-6);
            assert_near(1.8, a.runs[1]->goodput, 1e-6);
            assert_near(0.0, a.runs[2]->goodput, 1e-6);
        }
        assert_int_equal(a.knee, with_slo ? 1 : 0);
        lt_analyze_release(&a);
    }
}

/* A run longer than LT_ANALYZE_TS_MAX buckets: the bucket width doubles
 * until it fits, and nothing is lost on the way. One request of 10 tokens
 * (no chunks: all tokens at the end) ends every second for 1000 s. */
static void test_timeseries_coarsening(void **state)
{
    struct lt_analyze a;
    assert_int_equal(lt_analyze_init(&a, NULL, NULL), 0);
    for (int64_t k = 0; k < 1000; k++) {
        struct lt_result r = {.run = 0,
                              .index = (uint64_t)k,
                              .sched = k * 1000000,
                              .sent = k * 1000000,
                              .first_token = k * 1000000 + 100000,
                              .end = k * 1000000 + 500000,
                              .out = 10,
                              .status = 200,
                              .has = LT_RHAS_SENT | LT_RHAS_FIRST_TOKEN | LT_RHAS_END |
                                     LT_RHAS_OUT | LT_RHAS_STATUS};
        assert_int_equal(lt_analyze_add_result(&a, &r, NULL), 0);
    }
    assert_int_equal(lt_analyze_finish(&a, NULL), 0);
    const struct lt_analyze_ts *ts = &a.runs[0]->ts;
    assert_int_equal(ts->width_us, 4000000); /* 1 s -> 2 s -> 4 s: 250 buckets */
    assert_int_equal(ts->n, 250);
    uint64_t tokens = 0, ok = 0, started = 0, ended = 0, e2e_n = 0;
    for (uint32_t k = 0; k < ts->n; k++) {
        tokens += ts->b[k].tokens;
        ok += ts->b[k].ok;
        started += ts->b[k].started;
        ended += ts->b[k].ended;
        e2e_n += lt_hist_count(ts->b[k].e2e);
        assert_int_equal(ts->b[k].tokens, 40); /* 4 requests per 4-s bucket */
    }
    assert_int_equal(tokens, 10000);
    assert_int_equal(ok, 1000);
    assert_int_equal(started, 1000);
    assert_int_equal(ended, 1000);
    assert_int_equal(e2e_n, 1000);
    lt_analyze_release(&a);
}

/* Two requests, by hand, 1-s buckets: A sent at 0.25 s, 10 tokens at its
 * end at 1.5 s; B sent at 1.0 s, 20 tokens at 2.4 s, the last time of the
 * run. In flight, averaged over each bucket: 0.75 (A from 0.25), 1.5 (A
 * half, B whole), 1.0 (B for the 0.4 s the last bucket lasts); tokens/s:
 * 0, 10, 20 / 0.4 = 50; E2E p50: none in bucket 0 (nothing ended), 1250 ms,
 * 1400 ms. */
static struct lt_result two_req(uint64_t k, int64_t sent, int64_t end, uint32_t out)
{
    return (struct lt_result){.run = 0,
                              .index = k,
                              .sched = sent,
                              .sent = sent,
                              .first_token = sent + 100000,
                              .end = end,
                              .out = out,
                              .status = 200,
                              .has = LT_RHAS_SENT | LT_RHAS_FIRST_TOKEN | LT_RHAS_END |
                                     LT_RHAS_OUT | LT_RHAS_STATUS};
}

static void test_timeseries_points(void **state)
{
    struct lt_analyze a;
    assert_int_equal(lt_analyze_init(&a, NULL, NULL), 0);
    struct lt_result r = two_req(0, 250000, 1500000, 10);
    assert_int_equal(lt_analyze_add_result(&a, &r, NULL), 0);
    r = two_req(1, 1000000, 2400000, 20);
    assert_int_equal(lt_analyze_add_result(&a, &r, NULL), 0);
    assert_int_equal(lt_analyze_finish(&a, NULL), 0);
    const struct lt_analyze_run *run = a.runs[0];
    assert_int_equal(run->ts.n, 3);
    static const double in_flight[3] = {0.75, 1.5, 1.0}, tps[3] = {0, 10, 50}, len[3] = {1, 1, 0.4};
    static const double e2e[3] = {NAN, 1250, 1400};
    for (uint32_t k = 0; k < 3; k++) {
        struct lt_analyze_ts_point p;
        lt_analyze_ts_point(run, k, &p);
        assert_near(k, p.t_s, 1e-9);
        assert_near(len[k], p.len_s, 1e-9);
        assert_near(in_flight[k], p.in_flight, 1e-9);
        assert_near(tps[k], p.tokens_per_s, 1e-9);
        if (isnan(e2e[k]))
            assert_true(isnan(p.e2e_p50_ms) && isnan(p.e2e_p99_ms));
        else
            assert_near(e2e[k], p.e2e_p50_ms, e2e[k] / 16); /* 5-bit buckets */
    }
    lt_analyze_release(&a);

    /* The same with 1-ms buckets: the 2.4 s need 2400, so the width doubles
     * (to 16 ms: 2.4 s is 300 buckets of 8 ms, one past the last), and the
     * offsets of merged buckets move with them. Whatever the width, the time
     * in flight adds up to A's 1.25 s and B's 1.4 s. The last bucket starts
     * at 2.4 s, B's end: an instant, where nothing is in flight and B's 20
     * tokens count over a hundredth of the width, not over 1 us. */
    struct lt_analyze_opts o;
    lt_analyze_opts_init(&o);
    o.bucket_us = 1000;
    assert_int_equal(lt_analyze_init(&a, &o, NULL), 0);
    r = two_req(0, 250000, 1500000, 10);
    assert_int_equal(lt_analyze_add_result(&a, &r, NULL), 0);
    r = two_req(1, 1000000, 2400000, 20);
    assert_int_equal(lt_analyze_add_result(&a, &r, NULL), 0);
    assert_int_equal(lt_analyze_finish(&a, NULL), 0);
    run = a.runs[0];
    assert_int_equal(run->ts.width_us, 16000);
    double busy = 0, tokens = 0;
    for (uint32_t k = 0; k < run->ts.n; k++) {
        struct lt_analyze_ts_point p;
        lt_analyze_ts_point(run, k, &p);
        busy += p.in_flight * p.len_s;
        tokens += p.tokens_per_s * fmax(p.len_s, 0.00016); /* >= a hundredth of 16 ms */
        /* one request in flight from 0.25 to 1.0 s, two to 1.5 s, then one */
        double t = p.t_s + p.len_s / 2;
        double want = t < 0.25 ? 0 : t < 1.0 ? 1 : t < 1.5 ? 2 : 1;
        bool edge = false; /* a bucket holding a send or an end averages two counts */
        for (int e = 0; e < 4; e++) {
            static const double at[4] = {0.25, 1.0, 1.5, 2.4};
            edge |= p.t_s <= at[e] && at[e] < p.t_s + p.len_s;
        }
        if (!edge)
            assert_near(want, p.in_flight, 1e-9);
    }
    struct lt_analyze_ts_point last;
    lt_analyze_ts_point(run, run->ts.n - 1, &last);
    assert_near(2.4, last.t_s, 1e-9);
    assert_near(0, last.in_flight, 0);
    assert_near(20 / 0.00016, last.tokens_per_s, 1e-9);
    assert_near(1.25 + 1.4, busy, 1e-9);
    assert_near(30, tokens, 1e-9);
    lt_analyze_release(&a);
}

/* Through a real file: the summary replay prints. */
static void test_file_summary(void **state)
{
    char path[1024];
    const char *tmp = getenv("LT_TMP");
    snprintf(path, sizeof path, "%s/test_analyze.lt.zst", tmp ? tmp : ".");
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_RESULTS, .source = "replay"};
    struct lt_writer *w = lt_writer_open(path, &h, NULL, &err);
    assert_non_null(w);
    struct lt_run rr = {.id = 0, .mode = "concurrency", .concurrency = 1};
    assert_int_equal(lt_writer_put_run(w, &rr, &err), 0);
    for (uint64_t k = 0; k < N; k++) {
        struct req q;
        make_req(&q, 0, k, 0);
        assert_int_equal(lt_writer_put_result(w, &q.res, &err), 0);
    }
    assert_int_equal(lt_writer_close(w, &err), 0);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(lt_analyze_print_summary(path, NULL, f, &err), 0);
    fclose(f);
    assert_non_null(strstr(buf, "C |  Agg tok/s | Per-req tok/s |     Tokens |  Wall(s) | Ok"));
    assert_non_null(
        strstr(buf, "       1 |      108.9 |         100.0 |       1100 |    10.10 | 100/100"));
    assert_non_null(strstr(buf, "TTFT from sched"));
    assert_null(strstr(buf, "warning"));
    free(buf);

    assert_true(lt_analyze_print_summary("/nonexistent.lt.zst", NULL, stdout, &err) < 0);
}

/* A capacity search's probes, hand-built: id, engine, load, window,
 * verdict (NULL: none), attainment and interval. */
struct probe_def {
    uint32_t id;
    const char *engine;
    double load;
    const char *window;
    const char *verdict;
    double attain, lo, hi;
};

/* A results file of probes p[0..n) (each a run of N requests) at path:
 * new_format, each probe's verdict in a verdict record after its results
 * (the run record holding only what is known at its start); else, as
 * files were written before verdict records, in its run record. */
static void write_probes(const char *path, const struct probe_def *p, int n, bool new_format)
{
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_RESULTS, .source = "replay"};
    struct lt_writer *w = lt_writer_open(path, &h, NULL, &err);
    assert_non_null(w);
    for (int i = 0; i < n; i++) {
        struct lt_run rr = {.id = p[i].id,
                            .mode = "rate",
                            .rate = p[i].load,
                            .search = "rate",
                            .engine = p[i].engine,
                            .load = p[i].load,
                            .slo = "ttft=50ms",
                            .attain_target = 0.9,
                            .window = p[i].window};
        if (!new_format) {
            rr.attain = p[i].attain;
            rr.attain_lo = p[i].lo;
            rr.attain_hi = p[i].hi;
            rr.verdict = p[i].verdict;
        }
        assert_int_equal(lt_writer_put_run(w, &rr, &err), 0);
        for (uint64_t k = 0; k < N; k++) {
            struct req q;
            make_req(&q, p[i].id, k, 0);
            assert_int_equal(lt_writer_put_result(w, &q.res, &err), 0);
        }
        struct lt_verdict v = {.run = p[i].id,
                               .attain = p[i].attain,
                               .attain_lo = p[i].lo,
                               .attain_hi = p[i].hi,
                               .verdict = p[i].verdict};
        if (new_format && p[i].verdict)
            assert_int_equal(lt_writer_put_verdict(w, &v, &err), 0);
    }
    assert_int_equal(lt_writer_close(w, &err), 0);
}

/* analyze's capacity section of the file at path, text, into a string
 * (the caller frees it); *live and *virt its answers. */
static char *capacity_of(const char *path, struct lt_analyze_capacity *live,
                         struct lt_analyze_capacity *virt)
{
    struct lt_analyze a;
    struct lt_analyze_opts o;
    lt_analyze_opts_init(&o);
    struct lt_err err = {0};
    assert_int_equal(lt_analyze_file(path, &o, &a, &err), 0);
    lt_analyze_capacity(&a, "live", live);
    lt_analyze_capacity(&a, "virtual", virt);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    lt_analyze_capacity_text(&a, f);
    fclose(f);
    lt_analyze_release(&a);
    return buf;
}

/* A search's file with verdict records reads as one whose run records
 * carry the verdicts (the files written before them): the same answer
 * and the same capacity table. A probe without a verdict (cut short) and
 * the model's probes of the whole trace beside its probes of a window are
 * left out of the answer and the table, each said. */
static void test_capacity_verdicts(void **state)
{
    (void)state;
    char old_path[1024], new_path[1024], more_path[1024];
    const char *tmp = getenv("LT_TMP");
    snprintf(old_path, sizeof old_path, "%s/test_analyze_cap_old.lt.zst", tmp ? tmp : ".");
    snprintf(new_path, sizeof new_path, "%s/test_analyze_cap_new.lt.zst", tmp ? tmp : ".");
    snprintf(more_path, sizeof more_path, "%s/test_analyze_cap_more.lt.zst", tmp ? tmp : ".");
    const struct probe_def p[] = {
        {0, "live", 10, NULL, "meets", 0.95, 0.91, 0.98},
        {1, "live", 12, NULL, "fails", 0.5, 0.4, 0.6},
        {2, "live", 11, NULL, "meets", 0.93, 0.905, 0.96},
    };
    write_probes(old_path, p, 3, false);
    write_probes(new_path, p, 3, true);
    struct lt_analyze_capacity ol, ov, nl, nv;
    char *old_text = capacity_of(old_path, &ol, &ov);
    char *new_text = capacity_of(new_path, &nl, &nv);
    assert_int_equal(ol.probes, 3);
    assert_true(ol.max_ok == 11 && ol.min_fail == 12);
    assert_int_equal(ov.probes, 0);
    assert_non_null(strstr(old_text, "max meeting: 11 req/s, lowest failing: 12 req/s"));
    assert_non_null(strstr(old_text, "     2 live"));
    assert_string_equal(old_text, new_text);
    assert_int_equal(nl.probes, 3);
    assert_true(nl.max_ok == ol.max_ok && nl.min_fail == ol.min_fail && nl.goodput == ol.goodput);
    free(old_text);
    free(new_text);

    /* the same search, then a probe cut short (no verdict) and a virtual
     * search of the whole trace (run 4) that chose the window of runs 5-6 */
    const char *win = "requests 1-100 of 400, trace time 0-9.9 s";
    const struct probe_def q[] = {
        p[0],
        p[1],
        p[2],
        {3, "live", 11.5, NULL, NULL, 0, 0, 0},
        {4, "virtual", 20, NULL, "meets", 0.99, 0.95, 1},
        {5, "virtual", 10.5, win, "meets", 0.92, 0.9, 0.95},
        {6, "virtual", 11.5, win, "fails", 0.6, 0.5, 0.7},
    };
    write_probes(more_path, q, 7, true);
    struct lt_analyze_capacity ml, mv;
    char *text = capacity_of(more_path, &ml, &mv);
    assert_true(ml.probes == 3 && ml.max_ok == 11 && ml.min_fail == 12);
    assert_true(mv.probes == 2 && mv.max_ok == 10.5 && mv.min_fail == 11.5);
    assert_non_null(strstr(text, "left out: run 3, live probe at 11.5, no verdict"));
    assert_non_null(strstr(text, "left out: run 4, virtual probe at 20, of the whole trace"));
    assert_null(strstr(text, "     3 live"));
    assert_null(strstr(text, "     4 virtual"));
    assert_non_null(strstr(text, "     5 virtual"));
    free(text);
}

/* A results file whose runs or results make no sense is refused, not
 * analyzed with exit 0 (numbers from such a file would be wrong silently). */
static int analyze_runs(const struct lt_run *runs, int n_runs, const struct lt_result *res,
                        int n_res, struct lt_err *err)
{
    char path[] = "/tmp/lt-test-analyze-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    struct lt_header h = {.kind = LT_KIND_RESULTS, .source = "test"};
    struct lt_writer *w = lt_writer_open(path, &h, NULL, err);
    assert_non_null(w);
    for (int i = 0; i < n_runs; i++)
        assert_int_equal(lt_writer_put_run(w, &runs[i], err), 0);
    for (int i = 0; i < n_res; i++)
        assert_int_equal(lt_writer_put_result(w, &res[i], err), 0);
    assert_int_equal(lt_writer_close(w, err), 0);
    struct lt_analyze a;
    int rc = lt_analyze_file(path, NULL, &a, err);
    lt_analyze_release(&a);
    unlink(path);
    return rc;
}

static void test_file_checks(void **state)
{
    struct lt_run good = {.id = 1, .mode = "concurrency", .concurrency = 1};
    struct lt_result r = {.run = 1, .sched = 10, .sent = 20, .end = 30, .status = 200};
    r.has = LT_RHAS_SENT | LT_RHAS_END | LT_RHAS_STATUS;
    struct lt_err err = {0};
    assert_int_equal(analyze_runs(&good, 1, &r, 1, &err), 0);
    struct lt_run two[2] = {good, good};
    assert_int_equal(analyze_runs(two, 2, &r, 1, &err), LT_EFORMAT);
    assert_non_null(strstr(err.msg, "record 1: a second run record for run 1"));
    struct lt_run odd = {.id = 1, .mode = "sideways"};
    assert_int_equal(analyze_runs(&odd, 1, &r, 1, &err), LT_EFORMAT);
    assert_non_null(strstr(err.msg, "run 1 has mode \"sideways\""));
    struct lt_run other = {.id = 2, .mode = "rate", .rate = 1};
    assert_int_equal(analyze_runs(&other, 1, &r, 1, &err), LT_EFORMAT);
    assert_non_null(strstr(err.msg, "results name run 1, but the file has no run record"));
    r.end = 19;
    assert_int_equal(analyze_runs(&good, 1, &r, 1, &err), LT_EFORMAT);
    assert_non_null(strstr(err.msg, "record 1: \"end\" (19 us) is before \"sent\" (20 us)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic_figures),
        cmocka_unit_test(test_ttft_ttfc_mix),
        cmocka_unit_test(test_late_sends),
        cmocka_unit_test(test_hostile_times),
        cmocka_unit_test(test_errors_and_warmup),
        cmocka_unit_test(test_cancelled),
        cmocka_unit_test(test_knee),
        cmocka_unit_test(test_timeseries_coarsening),
        cmocka_unit_test(test_timeseries_points),
        cmocka_unit_test(test_file_summary),
        cmocka_unit_test(test_file_checks),
        cmocka_unit_test(test_self_check),
        cmocka_unit_test(test_capacity_verdicts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

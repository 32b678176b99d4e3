/*
 * The live figures (replay/replay_live.h) from hand-built results whose
 * figures are worked out here: outcomes and error classes, warm-up and
 * unsent kept out of the latencies, TTFT/TPOT/ITL/E2E percentiles as
 * analyze defines them (values below 2048 us are exact in the
 * histograms), nothing published before the tick, the window, the
 * Prometheus text's exact buckets, and a new run starting the run's
 * figures again while the counters go on.
 */
#include "replay/replay_live.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct lt_chunk chunks[3] = {{1100, 1}, {1300, 1}, {1700, 1}};

/* An ok result: sent at 1000, first token at 1000 + ttft, ends at
 * 1000 + e2e with out tokens. */
static struct lt_result ok_result(int64_t ttft, int64_t e2e, uint32_t out)
{
    struct lt_result r = {0};
    r.has = LT_RHAS_SENT | LT_RHAS_FIRST_TOKEN | LT_RHAS_END | LT_RHAS_OUT;
    r.sent = 1000;
    r.first_token = 1000 + ttft;
    r.end = 1000 + e2e;
    r.out = out;
    return r;
}

static long long series(const char *page, const char *name)
{
    const char *p = page;
    size_t n = strlen(name);
    while ((p = strstr(p, name))) {
        if ((p == page || p[-1] == '\n') && p[n] == ' ')
            return strtoll(p + n + 1, NULL, 10);
        p += n;
    }
    return -1;
}

static void test_figures(void **state)
{
    (void)state;
    struct lt_err err = {0};
    struct lt_replay_live *l = lt_replay_live_new(&err);
    assert_non_null(l);
    struct lt_replay_progress p = {.runs = 1, .total = 8};
    lt_replay_live_run_begin(l, &p);

    /* three ok: TTFT 100, 300, 200; E2E 700, 900, 500; out 4, 5, 3 */
    struct lt_result a = ok_result(100, 700, 4), b = ok_result(300, 900, 5),
                     c = ok_result(200, 500, 3);
    a.has |= LT_RHAS_CHUNKS;
    a.n_chunks = 3;
    a.chunks = chunks; /* gaps 200 and 400 */
    lt_replay_live_result(l, &a);
    lt_replay_live_result(l, &b);
    lt_replay_live_result(l, &c);
    /* a warm-up ok result: counted as ok, not in the latencies */
    struct lt_result w = ok_result(5000, 9000, 2);
    w.warmup = true;
    lt_replay_live_result(l, &w);
    /* errors: two http (one with out tokens), one timeout, one unknown class */
    struct lt_result e1 = ok_result(100, 400, 2), e2 = {0}, e3 = {0}, e4 = {0};
    e1.err = LT_REPLAY_ERR_HTTP;
    e2.has = LT_RHAS_SENT;
    e2.err = LT_REPLAY_ERR_HTTP;
    e3.has = LT_RHAS_SENT;
    e3.err = LT_REPLAY_ERR_TIMEOUT;
    e4.has = LT_RHAS_SENT;
    e4.err = "some_new_class";
    lt_replay_live_result(l, &e1);
    lt_replay_live_result(l, &e2);
    lt_replay_live_result(l, &e3);
    lt_replay_live_result(l, &e4);
    /* cancelled, and never sent */
    struct lt_result k = ok_result(100, 300, 1), u = {0};
    k.cancelled = true;
    u.err = LT_REPLAY_ERR_UNSENT;
    lt_replay_live_result(l, &k);
    lt_replay_live_result(l, &u);

    /* nothing reaches readers before the tick */
    struct lt_live_view v;
    lt_replay_live_view(l, &v);
    assert_int_equal(v.results, 0);

    p.done = 10;
    p.inflight = 3;
    p.lag_s = 0.25;
    struct lt_live_server srv = {7, 2, 0.5};
    lt_replay_live_tick(l, &p, &srv);
    lt_replay_live_view(l, &v);
    assert_int_equal(v.results, 10);
    assert_int_equal(v.sent, 9);
    assert_int_equal(v.ok, 4);
    assert_int_equal(v.errors, 4);
    assert_int_equal(v.cancelled, 1);
    assert_int_equal(v.unsent, 1);
    assert_int_equal(v.warmup, 1);
    assert_int_equal(v.out_tokens, 4 + 5 + 3 + 2 + 2 + 1);
    int http = -1, timeout = -1, other = -1;
    for (int i = 0; i < LT_LIVE_CLASSES; i++) {
        if (!strcmp(lt_live_class_name(i), "http"))
            http = i;
        if (!strcmp(lt_live_class_name(i), "timeout"))
            timeout = i;
        if (!strcmp(lt_live_class_name(i), "other"))
            other = i;
    }
    assert_true(http >= 0 && timeout >= 0 && other >= 0);
    assert_int_equal(v.by_class[http], 2);
    assert_int_equal(v.by_class[timeout], 1);
    assert_int_equal(v.by_class[other], 1);
    /* latencies of the three measured ok: nearest rank */
    assert_int_equal(v.run[LT_LIVE_TTFT].n, 3);
    assert_true(v.run[LT_LIVE_TTFT].p50_us == 200);
    assert_true(v.run[LT_LIVE_TTFT].p99_us == 300);
    assert_true(v.run[LT_LIVE_E2E].p50_us == 700);
    assert_true(v.run[LT_LIVE_E2E].max_us == 900);
    /* TPOT (e2e - ttft) / (out - 1): 200, 150, 150 */
    assert_int_equal(v.run[LT_LIVE_TPOT].n, 3);
    assert_true(v.run[LT_LIVE_TPOT].p50_us == 150);
    assert_true(v.run[LT_LIVE_TPOT].p99_us == 200);
    assert_int_equal(v.run[LT_LIVE_ITL].n, 2);
    assert_true(v.run[LT_LIVE_ITL].p99_us == 400);
    /* all of it came this second: the window holds it all */
    assert_int_equal(v.win[LT_LIVE_TTFT].n, 3);
    assert_true(v.win_rps > 0);
    assert_int_equal(v.p.inflight, 3);
    assert_int_equal(v.n_server, 1);
    assert_true(v.running[0] == 7 && v.waiting[0] == 2 && v.kv[0] == 0.5);

    struct lt_buf page;
    lt_buf_init(&page, 1 << 20);
    lt_replay_live_set_phase(l, "probe", 3, 4.5, "live probe 3: rate \"4.5\"");
    assert_int_equal(lt_replay_live_prom(l, &page), 0);
    assert_int_equal(lt_buf_append(&page, "", 1), 0);
    const char *t = page.p;
    assert_int_equal(series(t, "loadtrace_requests_total{outcome=\"ok\"}"), 4);
    assert_int_equal(series(t, "loadtrace_requests_total{outcome=\"error\"}"), 4);
    assert_int_equal(series(t, "loadtrace_requests_total{outcome=\"cancelled\"}"), 1);
    assert_int_equal(series(t, "loadtrace_requests_total{outcome=\"unsent\"}"), 1);
    assert_int_equal(series(t, "loadtrace_request_errors_total{class=\"http\"}"), 2);
    assert_int_equal(series(t, "loadtrace_output_tokens_total"), 17);
    /* TTFT 100, 300, 200 us: none above 5 ms; TPOT 150-200 us: all <= 1 ms */
    assert_int_equal(series(t, "loadtrace_ttft_seconds_bucket{le=\"0.005\"}"), 3);
    assert_int_equal(series(t, "loadtrace_ttft_seconds_count"), 3);
    assert_int_equal(series(t, "loadtrace_tpot_seconds_bucket{le=\"0.001\"}"), 3);
    assert_int_equal(series(t, "loadtrace_itl_seconds_count"), 2);
    assert_int_equal(series(t, "loadtrace_requests_in_flight"), 3);
    assert_non_null(strstr(t, "loadtrace_phase_info{kind=\"probe\",index=\"3\",what=\"live probe "
                              "3: rate \\\"4.5\\\"\"} 1\n"));

    /* a new run: its figures start again, the counters do not */
    lt_replay_live_run_begin(l, &p);
    lt_replay_live_result(l, &a);
    lt_replay_live_tick(l, &p, NULL);
    lt_replay_live_view(l, &v);
    assert_int_equal(v.results, 1);
    assert_int_equal(v.run[LT_LIVE_TTFT].n, 1);
    assert_true(isnan(v.running[0]));
    lt_buf_reset(&page);
    assert_int_equal(lt_replay_live_prom(l, &page), 0);
    assert_int_equal(lt_buf_append(&page, "", 1), 0);
    assert_int_equal(series(page.p, "loadtrace_requests_total{outcome=\"ok\"}"), 5);
    assert_int_equal(series(page.p, "loadtrace_ttft_seconds_count"), 4);
    assert_int_equal(series(page.p, "loadtrace_runs_total"), 2);
    lt_buf_release(&page);
    lt_replay_live_free(l);
    lt_replay_live_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_figures)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Schedules of the time-driven modes: every trace-time transformation
 * (window, spread, max-gap, rate, speed, duration) on small hand-checked
 * tables, and the open-loop arrival processes against their definitions
 * (count, mean rate, coefficient of variation).
 */
#include "plan/plan_sched.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>
#include <stdlib.h>

static const struct tcase {
    const char *name;
    struct lt_plan_sched_tt o;
    size_t n;
    int64_t in[8];
    int64_t want[8];
    int64_t kept;
} tcases[] = {
    {"identity, moved to 0", {.speed = 0}, 5, {5, 6, 10, 10, 20}, {0, 1, 5, 5, 15}, 5},
    {"speed 2", {.speed = 2}, 4, {0, 10, 20, 40}, {0, 5, 10, 20}, 4},
    {"rate: mean rate 3 req/s over 4 requests = 1 s span",
     {.rate = 3},
     4,
     {0, 1000, 3000, 4000},
     {0, 250000, 750000, 1000000},
     4},
    {"max gap", {.max_gap_us = 10}, 5, {0, 5, 100, 105, 1000}, {0, 5, 15, 20, 30}, 5},
    {"window [10, 30)",
     {.win_start_us = 10, .win_end_us = 30},
     6,
     {0, 10, 20, 29, 30, 40},
     {-1, 0, 10, 19, -1, -1},
     3},
    {"spread 3 equal stamps over 30",
     {.spread_us = 30},
     5,
     {0, 0, 0, 100, 100},
     {0, 10, 20, 100, 115},
     5},
    {"duration", {.duration_us = 20}, 5, {0, 10, 19, 20, 30}, {0, 10, 19, -1, -1}, 3},
    {"window then speed",
     {.win_start_us = 100, .win_end_us = 200, .speed = 10},
     4,
     {50, 100, 150, 190},
     {-1, 0, 5, 9},
     3},
};

static void test_trace_time(void **state)
{
    for (size_t c = 0; c < sizeof tcases / sizeof tcases[0]; c++) {
        const struct tcase *k = &tcases[c];
        size_t n = k->n;
        int64_t out[8];
        struct lt_err err = {0};
        int64_t kept = lt_plan_sched_trace(k->in, n, &k->o, NULL, out, &err);
        if (kept != k->kept)
            fail_msg("%s: kept %lld, want %lld (%s)", k->name, (long long)kept, (long long)k->kept,
                     err.msg);
        for (size_t i = 0; i < n; i++)
            if (out[i] != k->want[i])
                fail_msg("%s: [%zu] = %lld, want %lld", k->name, i, (long long)out[i],
                         (long long)k->want[i]);
    }
}

static void test_trace_time_errors(void **state)
{
    int64_t t[2] = {0, 1}, out[2];
    struct lt_err err = {0};
    struct lt_plan_sched_tt both = {.speed = 2, .rate = 3};
    assert_int_equal(lt_plan_sched_trace(t, 2, &both, NULL, out, &err), LT_EINVAL);
    struct lt_plan_sched_tt win = {.win_start_us = 10, .win_end_us = 5};
    assert_int_equal(lt_plan_sched_trace(t, 2, &win, NULL, out, &err), LT_EINVAL);
    /* Stretching past the schedule's span is refused, naming the value,
     * instead of overflowing into negative (dropped) offsets. */
    int64_t t400[400], out400[400];
    for (int i = 0; i < 400; i++)
        t400[i] = (int64_t)i * 100000;
    struct lt_plan_sched_tt slow = {.speed = 1e-12};
    assert_int_equal(lt_plan_sched_trace(t400, 400, &slow, NULL, out400, &err), LT_EINVAL);
    assert_non_null(strstr(err.msg, "--speed 1e-12"));
    struct lt_plan_sched_tt sane = {.speed = 1e-3}; /* 11 hours: kept, all 400 */
    assert_int_equal(lt_plan_sched_trace(t400, 400, &sane, NULL, out400, &err), 400);
    assert_int_equal(out400[399], (int64_t)399 * 100000 * 1000);
    int64_t o2[4];
    assert_int_equal(lt_plan_sched_open_loop(LT_ARR_CONSTANT, 1e-300, 1, 1, 0, o2, 4, &err),
                     LT_EINVAL);
    assert_non_null(strstr(err.msg, "--rate 1e-300"));
}

static void moments(const int64_t *t, int64_t n, double *rate, double *cv)
{
    double sum = 0, sq = 0;
    for (int64_t i = 1; i < n; i++) {
        double g = (double)(t[i] - t[i - 1]);
        sum += g;
        sq += g * g;
    }
    double mean = sum / (double)(n - 1);
    *rate = 1e6 / mean;
    *cv = sqrt(sq / (double)(n - 1) - mean * mean) / mean;
}

static void test_open_loop(void **state)
{
    enum { N = 20000 };
    int64_t *t = malloc(N * sizeof *t);
    struct lt_err err = {0};
    double rate, cv;
    assert_int_equal(lt_plan_sched_open_loop(LT_ARR_CONSTANT, 100, 0, 1, 0, t, N, &err), N);
    assert_int_equal(t[0], 0);
    assert_int_equal(t[1], 10000);
    assert_int_equal(t[N - 1], (int64_t)(N - 1) * 10000);
    assert_int_equal(lt_plan_sched_open_loop(LT_ARR_POISSON, 100, 0, 1, 0, t, N, &err), N);
    moments(t, N, &rate, &cv);
    assert_true(fabs(rate - 100) < 3);
    assert_true(fabs(cv - 1) < 0.05);
    assert_int_equal(lt_plan_sched_open_loop(LT_ARR_GAMMA, 100, 3, 1, 0, t, N, &err), N);
    moments(t, N, &rate, &cv);
    assert_true(fabs(rate - 100) < 10);
    assert_true(fabs(cv - 3) < 0.3);
    for (int i = 1; i < N; i++)
        assert_true(t[i] >= t[i - 1]);
    /* duration cuts: 1 s at 100/s constant gives 100 arrivals */
    assert_int_equal(lt_plan_sched_open_loop(LT_ARR_CONSTANT, 100, 0, 1, 1000000, t, N, &err), 100);
    assert_int_equal(lt_plan_sched_open_loop(LT_ARR_POISSON, 0, 0, 1, 0, t, N, &err), LT_EINVAL);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_time),
        cmocka_unit_test(test_trace_time_errors),
        cmocka_unit_test(test_open_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * The capacity search (plan/plan_search.h) against a fake server whose
 * attainment at each load is known: it finds the capacity within its
 * precision, repeats a probe whose interval straddles the target, stops on
 * faults instead of taking them for capacity, and a seeded search (a
 * virtual bracket) needs fewer probes than a cold one; a confirming search
 * (a model's answer, lt_search_confirm) ends in 2 probes when the model
 * was right to a step, repeats only an unsure probe that disagrees with
 * it, and still brackets the capacity when the model is 30 % off.
 */
#include "plan/plan_search.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A server that meets the SLO for 99 % of requests below cap, 50 % above. */
static uint32_t run_search(struct lt_search *s, double cap, uint64_t n, double fault_share)
{
    double load;
    bool rep;
    uint32_t probes = 0;
    while (lt_search_next(s, &load, &rep)) {
        double a = load <= cap ? 0.99 : 0.5;
        uint64_t faults = (uint64_t)(fault_share * (double)n);
        lt_search_add(s, n, (uint64_t)(a * (double)n), faults, false, a * load);
        probes++;
    }
    return probes;
}

static void test_wilson(void **state)
{
    (void)state;
    double lo, hi;
    lt_search_wilson(90, 100, 1.96, &lo, &hi);
    assert_true(lo > 0.82 && lo < 0.84); /* 0.8257 */
    assert_true(hi > 0.94 && hi < 0.95); /* 0.9448 */
    lt_search_wilson(0, 0, 1.96, &lo, &hi);
    assert_true(lo == 0 && hi == 1);
    /* 0.9 to +-0.02 needs about 865 requests */
    uint64_t k = lt_search_requests_for(0.9, 0.02);
    assert_true(k >= 860 && k <= 870);
}

/* The fewest judged requests, by hand: n / (n + 1.96^2) > attain. */
static void test_min_judged(void **state)
{
    (void)state;
    assert_int_equal(lt_search_min_judged(0.9), 35);  /* 34/37.84 = 0.8985, 35/38.84 = 0.9011 */
    assert_int_equal(lt_search_min_judged(0.95), 73); /* 72/75.84 = 0.9494, 73/76.84 = 0.9500+ */
    assert_int_equal(lt_search_min_judged(0.99), 381);
    assert_int_equal(lt_search_min_judged(1), 0);
}

/* Loads are rounded to 3 significant digits at 5 %, 4 at 1 %, and a
 * search probes only such loads. */
static void test_round(void **state)
{
    (void)state;
    assert_true(fabs(lt_search_round(2.76507, 0.05) - 2.77) < 1e-12);
    assert_true(fabs(lt_search_round(0.000976562390625, 0.05) - 0.000977) < 1e-15);
    assert_true(fabs(lt_search_round(21.2809, 0.01) - 21.28) < 1e-12);
    assert_true(fabs(lt_search_round(118.884, 0.05) - 119) < 1e-12);
    struct lt_search s;
    struct lt_search_opts o = {.attain = 0.9, .start = 2.566355, .precision = 0.05};
    lt_search_init(&s, &o);
    double load;
    bool rep;
    while (lt_search_next(&s, &load, &rep)) {
        char a[32];
        snprintf(a, sizeof a, "%.3g", load);
        assert_true(load == strtod(a, NULL));
        double att = load <= 0.31 ? 0.99 : 0.5;
        lt_search_add(&s, 1000, (uint64_t)(att * 1000), 0, false, 0);
    }
    assert_int_equal(s.end, LT_SEARCH_FOUND);
    assert_true(s.lo <= 0.31 && s.hi > 0.31 && s.hi <= s.lo * 1.05);
}

static void test_finds_rate(void **state)
{
    (void)state;
    struct lt_search s;
    struct lt_search_opts o = {.attain = 0.9, .start = 1, .precision = 0.05};
    lt_search_init(&s, &o);
    run_search(&s, 37.3, 1000, 0);
    assert_int_equal(s.end, LT_SEARCH_FOUND);
    assert_true(s.lo <= 37.3 && s.hi > 37.3);
    assert_true(s.hi <= s.lo * 1.05);
    assert_true(s.lo_probe >= 0 && s.hi_probe >= 0);
    assert_true(fabs(s.lo_goodput - 0.99 * s.lo) < 1e-9);
}

static void test_finds_concurrency(void **state)
{
    (void)state;
    struct lt_search s;
    struct lt_search_opts o = {.attain = 0.9, .start = 1, .integer = true};
    lt_search_init(&s, &o);
    run_search(&s, 23, 1000, 0);
    assert_int_equal(s.end, LT_SEARCH_FOUND);
    assert_true(s.lo == 23 && s.hi == 24);
}

static void test_shrinks_and_floor(void **state)
{
    (void)state;
    struct lt_search s;
    struct lt_search_opts o = {.start = 100, .min_load = 1};
    lt_search_init(&s, &o);
    run_search(&s, 10, 1000, 0);
    assert_int_equal(s.end, LT_SEARCH_FOUND);
    assert_true(s.lo <= 10 && s.hi > 10);
    lt_search_init(&s, &o);
    run_search(&s, 0.5, 1000, 0);
    assert_int_equal(s.end, LT_SEARCH_FLOOR);
    assert_true(s.lo == 0);
}

static void test_repeats_unsure(void **state)
{
    (void)state;
    struct lt_search s;
    struct lt_search_opts o = {.attain = 0.9, .start = 4, .max_repeats = 2};
    lt_search_init(&s, &o);
    double load;
    bool rep;
    assert_true(lt_search_next(&s, &load, &rep) && !rep);
    /* 18/20 = 0.9: the interval straddles 0.9: same load again */
    const struct lt_search_probe *p = lt_search_add(&s, 20, 18, 0, false, 1);
    assert_false(p->decided);
    assert_true(lt_search_next(&s, &load, &rep) && rep && load == 4);
    p = lt_search_add(&s, 20, 19, 0, false, 1);
    assert_int_equal(p->pooled, 2);
    assert_false(p->decided);
    p = lt_search_add(&s, 20, 19, 0, false, 1);
    assert_true(p->decided && p->unsure); /* 56/60 = 0.933: still straddles, decided by it */
    assert_int_equal(p->verdict, LT_SEARCH_MEETS);
    assert_true(s.lo == 4);
    assert_true(lt_search_next(&s, &load, &rep) && !rep && load == 8);
}

static void test_faults_stop(void **state)
{
    (void)state;
    struct lt_search s;
    struct lt_search_opts o = {.start = 1};
    lt_search_init(&s, &o);
    uint32_t probes = run_search(&s, 40, 1000, 0.2);
    assert_int_equal(s.end, LT_SEARCH_FAULTS);
    assert_int_equal(probes, 2);
    assert_true(s.lo == 0 && s.hi == 0); /* nothing said of capacity */
    assert_int_equal(s.p[0].verdict, LT_SEARCH_FAULTED);
}

static void test_saturated_fails(void **state)
{
    (void)state;
    struct lt_search s;
    struct lt_search_opts o = {.start = 8};
    lt_search_init(&s, &o);
    double load;
    bool rep;
    assert_true(lt_search_next(&s, &load, &rep));
    const struct lt_search_probe *p = lt_search_add(&s, 100, 100, 0, true, 0);
    assert_int_equal(p->verdict, LT_SEARCH_SATURATED);
    assert_true(s.hi == 8 && s.lo == 0);
}

static void test_seeded_saves_probes(void **state)
{
    (void)state;
    struct lt_search cold, warm;
    struct lt_search_opts o = {.start = 1};
    lt_search_init(&cold, &o);
    uint32_t nc = run_search(&cold, 37.3, 1000, 0);
    lt_search_init(&warm, &o);
    lt_search_seed(&warm, 36, 37.8, 0); /* a virtual bracket a little off */
    uint32_t nw = run_search(&warm, 37.3, 1000, 0);
    assert_int_equal(warm.end, LT_SEARCH_FOUND);
    assert_true(warm.lo <= 37.3 && warm.hi > 37.3);
    assert_true(nw < nc);
}

/* One probe at the load the search asks for: n requests, good of them. */
static const struct lt_search_probe *probe_at(struct lt_search *s, double want, bool want_rep,
                                              uint64_t n, uint64_t good)
{
    double load;
    bool rep;
    assert_true(lt_search_next(s, &load, &rep));
    assert_true(fabs(load - want) < 1e-9);
    assert_true(rep == want_rep);
    return lt_search_add(s, n, good, 0, false, 0);
}

/* The model was right: its answer meets, a step above it fails, both
 * unsure (0.926 and 0.884 of 95 straddle 0.9) and neither repeated, since
 * each says what the model said. The step up is rounded down, 37.3 x 1.05
 * = 39.165 to 39.1, so that the bracket is within the precision. */
static void test_confirm_right(void **state)
{
    (void)state;
    struct lt_search s;
    struct lt_search_opts o = {.attain = 0.9, .start = 1, .precision = 0.05};
    lt_search_init(&s, &o);
    lt_search_confirm(&s, 37.3, 39);
    assert_int_equal(s.model, LT_SEARCH_MODEL_CHECKING);
    const struct lt_search_probe *p = probe_at(&s, 37.3, false, 95, 88);
    assert_true(p->decided && p->unsure && p->verdict == LT_SEARCH_MEETS);
    p = probe_at(&s, 39.1, false, 95, 84);
    assert_true(p->decided && p->unsure && p->verdict == LT_SEARCH_FAILS);
    double load;
    bool rep;
    assert_false(lt_search_next(&s, &load, &rep));
    assert_int_equal(s.end, LT_SEARCH_FOUND);
    assert_int_equal(s.n, 2);
    assert_true(s.lo == 37.3 && s.hi == 39.1);
    assert_int_equal(s.model, LT_SEARCH_MODEL_HELD);
}

/* A step below the model: its answer fails for sure, a step below meets,
 * rounded up (36 / 1.05 = 34.29 to 34.3): 2 probes, still held. */
static void test_confirm_step_below(void **state)
{
    (void)state;
    struct lt_search s;
    struct lt_search_opts o = {.attain = 0.9, .start = 1, .precision = 0.05};
    lt_search_init(&s, &o);
    lt_search_confirm(&s, 36, 37.8);
    probe_at(&s, 36, false, 95, 50);
    probe_at(&s, 34.3, false, 95, 95);
    assert_int_equal(s.end, LT_SEARCH_FOUND);
    assert_int_equal(s.n, 2);
    assert_true(s.lo == 34.3 && s.hi == 36);
    assert_int_equal(s.model, LT_SEARCH_MODEL_HELD);
}

/* Noise: the model's answer met the SLO in truth, but its first probe
 * came out under the target (0.884 of 95, unsure) against the model: run
 * again and pooled (0.905 of 190: meets), then the step above fails: 3
 * probes. */
static void test_confirm_noisy_repeat(void **state)
{
    (void)state;
    struct lt_search s;
    struct lt_search_opts o = {.attain = 0.9, .start = 1, .precision = 0.05};
    lt_search_init(&s, &o);
    lt_search_confirm(&s, 36, 37.8);
    const struct lt_search_probe *p = probe_at(&s, 36, false, 95, 84);
    assert_false(p->decided);
    p = probe_at(&s, 36, true, 95, 88);
    assert_true(p->decided && p->unsure && p->verdict == LT_SEARCH_MEETS);
    assert_int_equal(p->pooled, 2);
    probe_at(&s, 37.8, false, 95, 60);
    assert_int_equal(s.end, LT_SEARCH_FOUND);
    assert_int_equal(s.n, 3);
    assert_true(s.lo == 36 && s.hi == 37.8);
    assert_int_equal(s.model, LT_SEARCH_MODEL_HELD);
}

/* The model 30 % off either way (its answer 1.3 or 0.7 times the
 * server's 37.3): it falls back, steps on 1, 2, 4 ... steps from the
 * model's answer and bisects, and brackets the capacity within the
 * precision, as a live-only search does. Its first probes are the
 * model's answer and a step from it. */
static void test_confirm_off(void **state)
{
    (void)state;
    static const double off[] = {1.3, 0.7};
    for (size_t k = 0; k < 2; k++) {
        double cap = 37.3, mlo = lt_search_round(cap * off[k], 0.05);
        struct lt_search s;
        struct lt_search_opts o = {.attain = 0.9, .start = 1, .precision = 0.05};
        lt_search_init(&s, &o);
        lt_search_confirm(&s, mlo, lt_search_round(mlo * 1.04, 0.05));
        uint32_t probes = run_search(&s, cap, 1000, 0);
        assert_int_equal(s.end, LT_SEARCH_FOUND);
        assert_true(s.lo <= cap && s.hi > cap && s.hi <= s.lo * 1.05 * (1 + 1e-9));
        assert_int_equal(s.model, LT_SEARCH_MODEL_OFF);
        assert_true(s.p[0].load == mlo);
        assert_true(off[k] > 1 ? s.p[1].load < mlo : s.p[1].load > mlo);
        assert_true(probes <= 12);
        /* a live-only search from 1 to the same answer */
        struct lt_search cold;
        lt_search_init(&cold, &o);
        uint32_t nc = run_search(&cold, cap, 1000, 0);
        assert_true(cold.lo <= cap && cold.hi > cap);
        assert_true(probes <= nc);
    }
}

/* Concurrency: a step is 1. Right: 2 probes; 30 % low (20 against 26):
 * 20, 21, then 2 and 5 steps on (23, 28), and bisected to 26 / 27. */
static void test_confirm_concurrency(void **state)
{
    (void)state;
    struct lt_search s;
    struct lt_search_opts o = {.attain = 0.9, .start = 1, .integer = true};
    lt_search_init(&s, &o);
    lt_search_confirm(&s, 20, 21);
    assert_int_equal(run_search(&s, 20, 1000, 0), 2);
    assert_true(s.lo == 20 && s.hi == 21 && s.model == LT_SEARCH_MODEL_HELD);
    lt_search_init(&s, &o);
    lt_search_confirm(&s, 20, 21);
    run_search(&s, 26, 1000, 0);
    assert_int_equal(s.end, LT_SEARCH_FOUND);
    assert_true(s.lo == 26 && s.hi == 27 && s.model == LT_SEARCH_MODEL_OFF);
    static const double loads[] = {20, 21, 23, 28};
    for (size_t k = 0; k < 4; k++)
        assert_true(s.p[k].load == loads[k]);
}

/* No bracket from the model (it met at its ceiling): seeded, not
 * confirmed. */
static void test_confirm_no_bracket(void **state)
{
    (void)state;
    struct lt_search s;
    struct lt_search_opts o = {.attain = 0.9, .start = 1, .precision = 0.05};
    lt_search_init(&s, &o);
    lt_search_confirm(&s, 40, 0);
    assert_int_equal(s.model, LT_SEARCH_MODEL_NONE);
    assert_true(s.next == 40);
}

static void test_max_probes(void **state)
{
    (void)state;
    struct lt_search s;
    struct lt_search_opts o = {.start = 1, .max_probes = 3};
    lt_search_init(&s, &o);
    assert_int_equal(run_search(&s, 1000, 1000, 0), 3);
    assert_int_equal(s.end, LT_SEARCH_MAX_PROBES_HIT);
    assert_true(s.lo == 4);
}

/* The watch: a queue that grows from the start is stopped, after 2 s and
 * with the growth seen over the last half of the time; a burst the server
 * absorbs (in flight jumps, then drains) and a steady load never are; a
 * scraped queue alone is enough. */
static void test_watch(void **state)
{
    (void)state;
    static struct lt_search_watch w;
    lt_search_watch_init(&w, 20);
    double t = 0;
    bool sat = false;
    for (int i = 1; i <= 80 && !sat; i++) {
        t = 0.25 * i;
        sat = lt_search_watch_add(&w, t, 10 * t, 0, -1); /* 10 more a second */
    }
    assert_true(sat);
    assert_true(t >= 4 && t < 20);
    assert_non_null(strstr(w.why, "requests in flight grew without bound"));

    lt_search_watch_init(&w, 20); /* a burst of 60 at 3 s, drained in 2 s */
    for (int i = 1; i <= 80; i++) {
        t = 0.25 * i;
        double inf = t >= 3 && t < 5 ? 60 * (5 - t) / 2 : 2;
        assert_false(lt_search_watch_add(&w, t, inf, 0, -1));
    }
    lt_search_watch_init(&w, 20); /* steady */
    for (int i = 1; i <= 80; i++)
        assert_false(lt_search_watch_add(&w, 0.25 * i, 8, 0.001, 1));

    lt_search_watch_init(&w, 20); /* in flight bounded, the server's queue grows */
    sat = false;
    for (int i = 1; i <= 80 && !sat; i++)
        sat = lt_search_watch_add(&w, 0.25 * i, 4, 0, 5 * 0.25 * i);
    assert_true(sat);
    assert_non_null(strstr(w.why, "waiting queue"));
}

/* The one saturation rule, on hand-built series of requests in flight
 * (16 evenly spaced buckets, quarters of 4): a queue that only grows did
 * grow (quarter means 2.5, 6.5, 10.5, 14.5: the last over 4 x 2.5 + 4);
 * one growing as slowly (the last 13.5, not over 4 x 2.5 + 4 = 14) did
 * not; a queue that rose, fell back and rose again did not, though its
 * last quarter (30) is far over 4 x its first (0) + 4; a steady load and
 * a burst the server absorbed did not; 7 samples say nothing. The same
 * series fed to the watch as it runs is stopped only where the rule says
 * so. */
static void test_grew(void **state)
{
    (void)state;
    double up[16], slow[16], dip[16], steady[16], burst[16];
    for (int k = 0; k < 16; k++) {
        up[k] = k + 1;
        slow[k] = k < 4 ? k + 1 : k;
        dip[k] = k < 4 ? 0 : k < 8 ? 20 : k < 12 ? 10 : 30;
        steady[k] = 8;
        burst[k] = k >= 6 && k < 9 ? 60 : 2;
    }
    assert_true(lt_search_grew(up, 16, 4));
    assert_false(lt_search_grew(slow, 16, 4));
    assert_false(lt_search_grew(dip, 16, 4));
    assert_false(lt_search_grew(steady, 16, 4));
    assert_false(lt_search_grew(burst, 16, 4));
    assert_false(lt_search_grew(up, 7, 4));
    assert_true(lt_search_grew(up, 8, 1));  /* 1.5, 3.5, 5.5, 7.5: over 4 x 1.5 + 1 */
    assert_false(lt_search_grew(up, 8, 4)); /* ... but not over 4 x 1.5 + 4 */

    /* the watch, sampled every 0.25 s over a 4 s span: the dipping queue
     * is never stopped, the growing one is */
    static struct lt_search_watch w;
    lt_search_watch_init(&w, 4);
    bool sat = false;
    for (int i = 1; i <= 64 && !sat; i++)
        sat = lt_search_watch_add(&w, 0.25 * i, dip[(i - 1) / 4], 0, -1);
    assert_false(sat);
    lt_search_watch_init(&w, 4);
    for (int i = 1; i <= 64 && !sat; i++)
        sat = lt_search_watch_add(&w, 0.25 * i, 2.5 * i, 0, -1);
    assert_true(sat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wilson),
        cmocka_unit_test(test_min_judged),
        cmocka_unit_test(test_round),
        cmocka_unit_test(test_finds_rate),
        cmocka_unit_test(test_finds_concurrency),
        cmocka_unit_test(test_shrinks_and_floor),
        cmocka_unit_test(test_repeats_unsure),
        cmocka_unit_test(test_faults_stop),
        cmocka_unit_test(test_saturated_fails),
        cmocka_unit_test(test_seeded_saves_probes),
        cmocka_unit_test(test_confirm_right),
        cmocka_unit_test(test_confirm_step_below),
        cmocka_unit_test(test_confirm_noisy_repeat),
        cmocka_unit_test(test_confirm_off),
        cmocka_unit_test(test_confirm_concurrency),
        cmocka_unit_test(test_confirm_no_bracket),
        cmocka_unit_test(test_max_probes),
        cmocka_unit_test(test_watch),
        cmocka_unit_test(test_grew),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Unit tests of compare's statistics (compare.h): the Kolmogorov-Smirnov
 * statistic and Wasserstein-1 distance of histograms on constructed
 * distributions whose answers are known in closed form, and the KS
 * p-value against tabulated critical values of the Kolmogorov
 * distribution; the verdict and metric names; the trace comparison as a
 * result struct (no rendering) on synthetic traces whose answer is known.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "analyze/compare.h"
#include "base/lt_hist.h"
#include "workload/trace_synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tmp_path.h"

static struct lt_hist *range_hist(uint64_t lo, uint64_t hi, uint64_t step)
{
    struct lt_hist *h = lt_hist_new(1u << 20, 10, NULL);
    assert_non_null(h);
    for (uint64_t v = lo; v <= hi; v += step)
        lt_hist_record(h, v);
    return h;
}

static void test_ks_w1_known(void **state)
{
    struct {
        uint64_t alo, ahi, blo, bhi;
        double ks, w1;
    } cases[] = {
        {1, 1000, 1, 1000, 0, 0},           /* identical */
        {1, 1000, 101, 1100, 0.1, 100},     /* shifted by 100: D = 100/1000, W1 = 100 */
        {1, 1000, 501, 1500, 0.5, 500},     /* shifted by half */
        {1, 1000, 2001, 2000 + 1000, 1, 0}, /* disjoint: D = 1 (W1 checked below) */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct lt_hist *a = range_hist(cases[i].alo, cases[i].ahi, 1);
        struct lt_hist *b = range_hist(cases[i].blo, cases[i].bhi, 1);
        double ks, w1;
        assert_int_equal(lt_compare_hists(a, b, &ks, &w1, NULL), 0);
        assert_true(fabs(ks - cases[i].ks) < 1e-9);
        if (i < 3)
            assert_true(fabs(w1 - cases[i].w1) < 1.0); /* bucket midpoints: exact below 2048 */
        else
            assert_true(w1 > 1900 && w1 < 2100); /* distance of the means (2000), 0.1 % buckets */
        /* symmetric */
        double ks2, w12;
        assert_int_equal(lt_compare_hists(b, a, &ks2, &w12, NULL), 0);
        assert_true(fabs(ks - ks2) < 1e-12 && fabs(w1 - w12) < 1e-9);
        lt_hist_free(a);
        lt_hist_free(b);
    }
    /* different precision is refused */
    struct lt_hist *a = lt_hist_new(1000, 7, NULL), *b = lt_hist_new(1000, 8, NULL);
    double ks, w1;
    assert_int_equal(lt_compare_hists(a, b, &ks, &w1, NULL), LT_EINVAL);
    lt_hist_free(a);
    lt_hist_free(b);
}

static void test_ks_pvalue(void **state)
{
    /* With na = nb = 20000, sqrt(ne) = 100 and lambda ~ 100.12 D; the
     * Kolmogorov distribution's tabulated points: Q(1.224) = 0.10,
     * Q(1.358) = 0.05, Q(1.628) = 0.01. */
    struct {
        double lambda, p;
    } tab[] = {{1.224, 0.10}, {1.358, 0.05}, {1.628, 0.01}, {0.5, 0.9639}};
    for (size_t i = 0; i < 4; i++) {
        double d = tab[i].lambda / (100 + 0.12 + 0.11 / 100);
        double p = lt_compare_ks_pvalue(d, 20000, 20000);
        assert_true(fabs(p - tab[i].p) < 0.002);
    }
    assert_true(lt_compare_ks_pvalue(0, 10, 10) == 1.0);
    assert_true(lt_compare_ks_pvalue(1, 1000, 1000) < 1e-100);
    assert_true(isnan(lt_compare_ks_pvalue(0.5, 0, 10)));
}

/* Every verdict has its own word; metrics are named by their enum. */
static void test_names(void **state)
{
    for (int i = 0; i < LT_CMP_VERDICTS; i++) {
        assert_string_not_equal(lt_compare_verdict_name((enum lt_compare_verdict)i), "?");
        for (int j = 0; j < i; j++)
            assert_string_not_equal(lt_compare_verdict_name((enum lt_compare_verdict)i),
                                    lt_compare_verdict_name((enum lt_compare_verdict)j));
    }
    assert_string_equal(lt_compare_verdict_name(LT_CMP_VERDICTS), "?");
    assert_string_equal(lt_compare_verdict_name(LT_CMP_REPRESENTATIVE), "representative");
    assert_string_equal(lt_compare_verdict_name(LT_CMP_BETTER), "B better");
    assert_string_equal(lt_compare_metric_name(LT_CMPM_TPOT_P50), "TPOT p50");
    assert_string_equal(lt_compare_metric_name(LT_CMPM_AGG_TPS), "Agg tok/s");
    assert_string_equal(lt_compare_metric_unit(LT_CMPM_OUT_MEAN), "tokens");
}

static const char *synth(const char *name, uint32_t in, uint32_t turns)
{
    struct lt_synth_opts o = {.seed = 3,
                              .arrivals = LT_ARR_POISSON,
                              .rate = 5,
                              .requests = 600,
                              .in = {LT_LEN_FIXED, in, 0},
                              .out = {LT_LEN_UNIFORM, 10, 90},
                              .turns = {turns ? LT_LEN_FIXED : LT_LEN_NONE, turns, 0},
                              .think_us = 1000000,
                              .block_tokens = 16,
                              .round_us = 0};
    const char *p = tmp_path(name);
    struct lt_err err = {0};
    assert_int_equal(lt_synth_run(&o, p, NULL, &err), 0);
    return p;
}

/* A trace against itself: D = 0 and representative wherever there is
 * data; of two traces of single requests, one with prompts twice as long,
 * the input lengths differ completely (D = 1). */
static void test_traces_result(void **state)
{
    char a[512], b[512], c[512];
    snprintf(a, sizeof a, "%s", synth("cmp-a.lt.zst", 100, 3));
    snprintf(b, sizeof b, "%s", synth("cmp-b.lt.zst", 100, 0));
    snprintf(c, sizeof c, "%s", synth("cmp-c.lt.zst", 200, 0));
    struct lt_err err = {0};
    struct lt_compare_traces t;
    assert_int_equal(lt_compare_traces_compute(&t, a, a, NULL, &err), 0);
    assert_int_equal(t.a.records, 600);
    assert_int_equal(t.different, 0);
    assert_int_equal(t.overall, LT_CMP_REPRESENTATIVE);
    for (int i = 0; i < LT_CMPP_COUNT; i++) {
        const struct lt_compare_prop_result *p = &t.props[i];
        assert_true(p->verdict == LT_CMP_REPRESENTATIVE || p->verdict == LT_CMP_NODATA);
        if (p->kind == LT_CMP_DIST && p->na)
            assert_true(p->ks == 0);
    }
    assert_int_equal(t.props[LT_CMPP_TURNS].verdict, LT_CMP_REPRESENTATIVE);
    assert_string_equal(t.props[LT_CMPP_IN].name, "input length");
    lt_compare_traces_release(&t);

    assert_int_equal(lt_compare_traces_compute(&t, b, c, NULL, &err), 0);
    assert_int_equal(t.props[LT_CMPP_IN].verdict, LT_CMP_DIFFERENT);
    assert_true(t.props[LT_CMPP_IN].ks == 1);
    assert_int_equal(t.props[LT_CMPP_TURNS].verdict, LT_CMP_NODATA);
    assert_int_equal(t.overall, LT_CMP_DIFFERENT);
    lt_compare_traces_release(&t);

    assert_int_not_equal(lt_compare_traces_compute(&t, a, tmp_path("no-such.lt.zst"), NULL, &err),
                         0);
    lt_compare_traces_release(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ks_w1_known),
        cmocka_unit_test(test_ks_pvalue),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_traces_result),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

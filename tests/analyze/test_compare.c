/*
 * Unit tests of compare's statistics (compare.h): the Kolmogorov-Smirnov
 * statistic and Wasserstein-1 distance of histograms on constructed
 * distributions whose answers are known in closed form, and the KS
 * p-value against tabulated critical values of the Kolmogorov
 * distribution.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "analyze/compare.h"
#include "traces/lt_hist.h"

#include <math.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ks_w1_known),
        cmocka_unit_test(test_ks_pvalue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

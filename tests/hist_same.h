/*
 * For tests: two histograms hold the same values (every bucket, count,
 * min, max, clamped values and exact sums). Include after cmocka.h and
 * base/lt_hist.h.
 */
#ifndef LT_TESTS_HIST_SAME_H
#define LT_TESTS_HIST_SAME_H

static void assert_same_hist(const struct lt_hist *a, const struct lt_hist *b)
{
    assert_true(lt_hist_count(a) == lt_hist_count(b));
    assert_true(lt_hist_min(a) == lt_hist_min(b));
    assert_true(lt_hist_max(a) == lt_hist_max(b));
    assert_true(lt_hist_clamped(a) == lt_hist_clamped(b));
    assert_true(lt_hist_mean(a) == lt_hist_mean(b));
    assert_true(lt_hist_stddev(a) == lt_hist_stddev(b));
    struct lt_hist_iter ia, ib;
    lt_hist_iter_init(&ia, a);
    lt_hist_iter_init(&ib, b);
    while (lt_hist_iter_next(&ia)) {
        assert_true(lt_hist_iter_next(&ib));
        assert_true(ia.lo == ib.lo && ia.hi == ib.hi && ia.count == ib.count);
    }
    assert_false(lt_hist_iter_next(&ib));
}

#endif

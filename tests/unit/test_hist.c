/*
 * Unit tests of lt_hist: for a table of distributions and precisions, every
 * percentile the histogram reports is checked against the exact one found by
 * sorting the same values, within the error bound the header promises; and
 * merging, record_n, iteration, clamping and the fixed memory are checked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/lt_hist.h"
#include "base/lt_rng.h"
#include "tests/hist_same.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum dist { D_SMALL_UNIFORM, D_EXP, D_LOGNORMAL, D_CONST, D_POW2, D_ZEROS, D_WIDE };

struct hcase {
    const char *name;
    enum dist dist;
    int bits;
    size_t n;
    uint64_t highest;
};

static const struct hcase cases[] = {
    {"small uniform, exact region", D_SMALL_UNIFORM, 7, 20000, 1u << 20},
    {"exponential us, 2 digits", D_EXP, 7, 50000, UINT64_C(1) << 40},
    {"exponential us, 3 digits", D_EXP, 10, 50000, UINT64_C(1) << 40},
    {"lognormal tokens, 3 digits", D_LOGNORMAL, 10, 30000, UINT32_MAX},
    {"lognormal tokens, coarse", D_LOGNORMAL, 3, 30000, UINT32_MAX},
    {"one value", D_CONST, 7, 1000, 1u << 30},
    {"powers of two and neighbours", D_POW2, 5, 4000, UINT64_MAX},
    {"all zeros", D_ZEROS, 7, 100, 1000},
    {"wide range to 2^62", D_WIDE, 8, 20000, UINT64_MAX},
    {"single sample", D_EXP, 7, 1, UINT64_C(1) << 40},
    {"two samples", D_LOGNORMAL, 7, 2, UINT32_MAX},
};

static const double pcts[] = {0, 0.1, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 100};

static uint64_t draw(enum dist d, struct lt_rng *r, size_t i)
{
    switch (d) {
    case D_SMALL_UNIFORM:
        return lt_rng_below(r, 200);
    case D_EXP:
        return (uint64_t)lt_rng_exp(r, 250000.0);
    case D_LOGNORMAL:
        return (uint64_t)lt_rng_lognormal(r, log(800.0), 1.2);
    case D_CONST:
        return 123456;
    case D_POW2: {
        uint64_t p = UINT64_C(1) << (i % 63);
        return p + (uint64_t)(i % 3) - 1;
    }
    case D_ZEROS:
        return 0;
    case D_WIDE:
        return lt_rng_u64(r) >> (2 + lt_rng_below(r, 60));
    }
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The definition of lt_hist.h, computed on sorted values: the value of rank
 * ceil(p/100 * n). */
static uint64_t exact_pct(const uint64_t *sorted, size_t n, double p)
{
    double x = p / 100.0 * (double)n;
    size_t r = (size_t)x;
    if ((double)r < x * (1 - 1e-12))
        r++;
    if (r < 1)
        r = 1;
    if (r > n)
        r = n;
    return sorted[r - 1];
}

static void check_case(const struct hcase *c)
{
    struct lt_rng rng;
    lt_rng_seed(&rng, 42);
    uint64_t *v = malloc(c->n * sizeof *v);
    assert_non_null(v);
    struct lt_err err = {0};
    struct lt_hist *h = lt_hist_new(c->highest, c->bits, &err);
    assert_non_null(h);
    size_t mem = lt_hist_memory(h);
    double sum = 0;
    for (size_t i = 0; i < c->n; i++) {
        v[i] = draw(c->dist, &rng, i);
        sum += (double)v[i];
        lt_hist_record(h, v[i]);
    }
    assert_int_equal(lt_hist_memory(h), mem);
    qsort(v, c->n, sizeof *v, cmp_u64);
    double mean = sum / (double)c->n, ss = 0;
    for (size_t i = 0; i < c->n; i++)
        ss += ((double)v[i] - mean) * ((double)v[i] - mean);
    double sd = sqrt(ss / (double)c->n);

    assert_int_equal(lt_hist_count(h), c->n);
    assert_true(lt_hist_min(h) == v[0]);
    assert_true(lt_hist_max(h) == v[c->n - 1]);
    assert_true(fabs(lt_hist_mean(h) - mean) <= 1e-9 * fabs(mean) + 1e-9);
    assert_true(fabs(lt_hist_stddev(h) - sd) <= 1e-6 * sd + 1e-6);
    for (size_t k = 0; k < sizeof pcts / sizeof pcts[0]; k++) {
        uint64_t want = exact_pct(v, c->n, pcts[k]);
        uint64_t got = lt_hist_value_at(h, pcts[k]);
        uint64_t slack = want >> c->bits;
        if (got < want || got - want > slack)
            fail_msg("%s: p%g: histogram says %llu, exact %llu (allowed up to +%llu)", c->name,
                     pcts[k], (unsigned long long)got, (unsigned long long)want,
                     (unsigned long long)slack);
        if (want < (UINT64_C(2) << c->bits))
            assert_true(got == want); /* the exact region is exact */
    }
    assert_true(lt_hist_value_at(h, 100) == v[c->n - 1]);

    /* Iteration: ascending, non-overlapping, within precision, counts add up. */
    struct lt_hist_iter it;
    lt_hist_iter_init(&it, h);
    uint64_t cum = 0, prev_hi = 0;
    bool first = true;
    while (lt_hist_iter_next(&it)) {
        assert_true(it.lo <= it.hi);
        assert_true(first || it.lo > prev_hi);
        assert_true(it.hi - it.lo <= it.lo >> c->bits);
        assert_true(it.count > 0);
        cum += it.count;
        assert_true(it.cum == cum);
        prev_hi = it.hi;
        first = false;
    }
    assert_true(cum == c->n);
    lt_hist_free(h);
    free(v);
}

static void test_percentiles_table(void **state)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(&cases[i]);
}

static void test_merge_lossless(void **state)
{
    struct lt_err err = {0};
    struct lt_rng rng;
    lt_rng_seed(&rng, 7);
    struct lt_hist *all = lt_hist_new(UINT64_C(1) << 40, 9, &err);
    struct lt_hist *a = lt_hist_new(UINT64_C(1) << 40, 9, &err);
    struct lt_hist *b = lt_hist_new(UINT64_C(1) << 40, 9, &err);
    assert_true(all && a && b);
    for (int i = 0; i < 40000; i++) {
        uint64_t x = (uint64_t)lt_rng_lognormal(&rng, 10, 2);
        lt_hist_record(all, x);
        lt_hist_record(i % 3 ? a : b, x);
    }
    assert_int_equal(lt_hist_merge(a, b, &err), 0);
    assert_true(lt_hist_count(a) == lt_hist_count(all));
    assert_true(lt_hist_min(a) == lt_hist_min(all));
    assert_true(lt_hist_max(a) == lt_hist_max(all));
    assert_true(fabs(lt_hist_mean(a) - lt_hist_mean(all)) <= 1e-9 * lt_hist_mean(all));
    assert_true(fabs(lt_hist_stddev(a) - lt_hist_stddev(all)) <= 1e-9 * lt_hist_stddev(all));
    struct lt_hist_iter i1, i2;
    lt_hist_iter_init(&i1, a);
    lt_hist_iter_init(&i2, all);
    while (lt_hist_iter_next(&i1)) {
        assert_true(lt_hist_iter_next(&i2));
        assert_true(i1.lo == i2.lo && i1.hi == i2.hi && i1.count == i2.count);
    }
    assert_false(lt_hist_iter_next(&i2));
    for (size_t k = 0; k < sizeof pcts / sizeof pcts[0]; k++)
        assert_true(lt_hist_value_at(a, pcts[k]) == lt_hist_value_at(all, pcts[k]));

    /* Merging an empty histogram changes nothing; different shapes refuse. */
    struct lt_hist *empty = lt_hist_new(UINT64_C(1) << 40, 9, &err);
    assert_int_equal(lt_hist_merge(a, empty, &err), 0);
    assert_true(lt_hist_count(a) == 40000);
    struct lt_hist *other = lt_hist_new(UINT64_C(1) << 40, 8, &err);
    assert_int_equal(lt_hist_merge(a, other, &err), LT_EINVAL);
    assert_true(lt_hist_count(a) == 40000);
    /* Into an empty one: a copy. */
    assert_int_equal(lt_hist_merge(empty, all, &err), 0);
    assert_true(lt_hist_value_at(empty, 50) == lt_hist_value_at(all, 50));
    assert_true(fabs(lt_hist_mean(empty) - lt_hist_mean(all)) <= 1e-9 * lt_hist_mean(all));
    lt_hist_free(all);
    lt_hist_free(a);
    lt_hist_free(b);
    lt_hist_free(empty);
    lt_hist_free(other);
}

static void test_record_n_and_corrected(void **state)
{
    struct lt_err err = {0};
    struct lt_hist *a = lt_hist_new(1u << 30, 7, &err);
    struct lt_hist *b = lt_hist_new(1u << 30, 7, &err);
    for (int i = 0; i < 1000; i++)
        lt_hist_record(a, 5000);
    lt_hist_record(a, 7);
    lt_hist_record_n(b, 5000, 1000);
    lt_hist_record_n(b, 7, 1);
    lt_hist_record_n(b, 99, 0);
    assert_true(lt_hist_count(b) == 1001);
    assert_true(fabs(lt_hist_mean(a) - lt_hist_mean(b)) < 1e-9);
    assert_true(fabs(lt_hist_stddev(a) - lt_hist_stddev(b)) < 1e-9);
    assert_true(lt_hist_value_at(b, 0.05) == 7);
    assert_true(lt_hist_value_at(b, 50) == 5000);

    /* 100 with an expected interval of 30: 100, 70, 40 (HdrHistogram). */
    lt_hist_reset(a);
    lt_hist_record_corrected(a, 100, 30);
    assert_true(lt_hist_count(a) == 3);
    assert_true(lt_hist_min(a) == 40 && lt_hist_max(a) == 100);
    lt_hist_record_corrected(a, 20, 30);
    lt_hist_record_corrected(a, 20, 0);
    assert_true(lt_hist_count(a) == 5);
    lt_hist_free(a);
    lt_hist_free(b);
}

/* Counts past a 16-bit counter's range: exact, also after a reset (the
 * overflow part is cleared lazily) and through merges, clamped values
 * (in the last bucket) included. */
static uint64_t bucket_count(const struct lt_hist *h, uint64_t v)
{
    struct lt_hist_iter it;
    lt_hist_iter_init(&it, h);
    while (lt_hist_iter_next(&it))
        if (it.lo <= v && v <= it.hi)
            return it.count;
    return 0;
}

static void test_wide_counts(void **state)
{
    struct lt_err err = {0};
    struct lt_hist *h = lt_hist_new(1u << 20, 7, &err);
    struct lt_hist *m = lt_hist_new(1u << 20, 7, &err);
    assert_true(h && m);
    for (int i = 0; i < 70000; i++)
        lt_hist_record(h, 1000);
    lt_hist_record_n(h, 1000, UINT64_C(1) << 40);
    assert_true(bucket_count(h, 1000) == 70000 + (UINT64_C(1) << 40));
    lt_hist_reset(h);
    for (int i = 0; i < 70000; i++)
        lt_hist_record(h, 1000);
    assert_true(bucket_count(h, 1000) == 70000);
    lt_hist_record(h, 3);
    lt_hist_record_n(h, 5u << 20, 80000); /* above highest: the last bucket */
    for (int k = 0; k < 2; k++)
        assert_int_equal(lt_hist_merge(m, h, &err), 0);
    assert_true(bucket_count(m, 1000) == 140000);
    assert_true(bucket_count(m, 3) == 2);
    assert_true(bucket_count(m, 1u << 20) == 160000); /* the top bucket holds them */
    assert_true(lt_hist_count(m) == 2 * 150001);
    lt_hist_free(h);
    lt_hist_free(m);
}

/* lt_hist_record_many() is n calls of lt_hist_record(), whatever the
 * batch sizes: every case of the table (values past highest and past 2^32
 * included), a bucket passing 2^8 and 2^16 within one batch, and empty batches. */
static void test_record_many(void **state)
{
    (void)state;
    static const size_t sizes[] = {1, 7, 128, 1000000};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
            struct lt_rng rng;
            lt_rng_seed(&rng, 7);
            uint64_t *v = malloc(cases[c].n * sizeof *v);
            struct lt_hist *one = lt_hist_new(cases[c].highest, cases[c].bits, NULL);
            struct lt_hist *many = lt_hist_new(cases[c].highest, cases[c].bits, NULL);
            assert_true(v && one && many);
            for (size_t i = 0; i < cases[c].n; i++) {
                v[i] = draw(cases[c].dist, &rng, i);
                lt_hist_record(one, v[i]);
            }
            for (size_t i = 0; i < cases[c].n; i += sizes[z]) {
                size_t k = cases[c].n - i < sizes[z] ? cases[c].n - i : sizes[z];
                lt_hist_record_many(many, v + i, k);
                lt_hist_record_many(many, v + i, 0);
            }
            assert_same_hist(one, many);
            lt_hist_free(one);
            lt_hist_free(many);
            free(v);
        }
    }
    enum { N = 70000 };
    static uint64_t same[N];
    struct lt_hist *one = lt_hist_new(1u << 20, 7, NULL);
    struct lt_hist *many = lt_hist_new(1u << 20, 7, NULL);
    assert_true(one && many);
    for (size_t i = 0; i < N; i++) {
        same[i] = i % 5 ? 1000 : (UINT64_C(3) << 40) + i; /* and some clamped */
        lt_hist_record(one, same[i]);
    }
    lt_hist_record_many(many, same, N);
    assert_true(bucket_count(many, 1000) == N - N / 5);
    assert_same_hist(one, many);
    lt_hist_free(one);
    lt_hist_free(many);
}

/* Buckets passing 255 far apart and in any order (the part of the
 * counters past 8 bits is cleared piece by piece, around them): every
 * bucket keeps its exact count, the ones never past 255 included, after a
 * reset too. The histogram is poisoned first: what it held before must
 * never count. */
static void test_overflow_pieces(void **state)
{
    (void)state;
    struct lt_hist *h = lt_hist_new(UINT64_C(1) << 40, 10, NULL);
    assert_non_null(h);
    static const uint64_t vals[] = {5000000000, 3, 70000, 1000000, 2047, 1u << 20};
    static const uint64_t many[] = {300, 256, 1000, 70000, 255, 512};
    for (int round = 0; round < 2; round++) {
        for (int k = 0; k < 6; k++) /* a few of each first: none past 255 */
            lt_hist_record_n(h, vals[k] + 1, 7);
        for (int k = 0; k < 6; k++)
            for (uint64_t j = 0; j < many[k]; j++)
                lt_hist_record(h, vals[k]);
        for (int k = 0; k < 6; k++) {
            uint64_t lo, hi;
            lt_hist_bucket_of(h, vals[k], &lo, &hi);
            uint64_t want = many[k] + (vals[k] + 1 <= hi ? 7 : 0);
            assert_true(bucket_count(h, vals[k]) == want);
            if (vals[k] + 1 > hi)
                assert_true(bucket_count(h, vals[k] + 1) == 7);
        }
        assert_true(lt_hist_count(h) == 300 + 256 + 1000 + 70000 + 255 + 512 + 6 * 7);
        /* poison: large counts everywhere, then start again */
        for (uint64_t v = 1; v < (UINT64_C(1) << 40); v += v / 3 + 1)
            lt_hist_record_n(h, v, 100000);
        lt_hist_reset(h);
        assert_true(lt_hist_count(h) == 0);
    }
    lt_hist_free(h);
}

static void test_limits(void **state)
{
    struct lt_err err = {0};
    assert_null(lt_hist_new(100, 0, &err));
    assert_int_equal(err.code, LT_EINVAL);
    assert_null(lt_hist_new(0, 7, &err));
    assert_null(lt_hist_new(100, LT_HIST_BITS_MAX + 1, &err));
    lt_hist_free(NULL);

    struct lt_hist *h = lt_hist_new(1000, 4, &err);
    assert_non_null(h);
    lt_hist_record(h, 5000);
    lt_hist_record(h, 10);
    assert_true(lt_hist_clamped(h) == 1);
    assert_true(lt_hist_max(h) == 5000);
    assert_true(lt_hist_value_at(h, 100) == 5000);
    assert_true(lt_hist_value_at(h, 50) == 10);
    /* empty */
    lt_hist_reset(h);
    assert_true(lt_hist_count(h) == 0 && lt_hist_min(h) == 0 && lt_hist_max(h) == 0);
    assert_true(lt_hist_value_at(h, 50) == 0);
    assert_true(lt_hist_mean(h) == 0 && lt_hist_stddev(h) == 0);
    lt_hist_free(h);

    /* precision: every bucket is narrower than lo / 2^bits */
    assert_int_equal(lt_hist_bits_for_digits(2), 7);
    assert_int_equal(lt_hist_bits_for_digits(3), 10);
    h = lt_hist_new(UINT64_MAX, 10, &err);
    for (uint64_t v = 1; v < UINT64_MAX / 3; v = v * 3 + 1) {
        uint64_t lo, hi;
        lt_hist_bucket_of(h, v, &lo, &hi);
        assert_true(lo <= v && v <= hi);
        assert_true(hi - lo <= lo >> 10);
    }
    /* memory does not grow with the count */
    size_t mem = lt_hist_memory(h);
    for (uint64_t i = 0; i < 1000000; i++)
        lt_hist_record(h, i * 7919);
    assert_true(lt_hist_memory(h) == mem);
    assert_true(mem < 600 * 1024);
    lt_hist_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_percentiles_table),
        cmocka_unit_test(test_merge_lossless),
        cmocka_unit_test(test_record_n_and_corrected),
        cmocka_unit_test(test_wide_counts),
        cmocka_unit_test(test_record_many),
        cmocka_unit_test(test_overflow_pieces),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

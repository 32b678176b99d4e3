/*
 * The prefix-cache hit rate a sequence of requests allows
 * (traces/trace_hits.h): exact on a hand-built sequence, and, past its
 * bound of distinct blocks, an estimate from a sample of the prefix
 * chains whose error is small and whose memory stays bounded, against a
 * rate known by construction.
 */
#include "traces/trace_hits.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

static void test_hits_exact(void **state)
{
    (void)state;
    struct lt_hits h;
    lt_hits_init(&h, 1000);
    const uint64_t a[] = {1, 2}, b[] = {1, 2, 3}, d[] = {1, 9};
    assert_int_equal(lt_hits_add(&h, a, 2, 32, 16), 0);     /* nothing before it */
    assert_int_equal(lt_hits_add(&h, b, 3, 48, 16), 0);     /* 1 and 2: 32 tokens */
    assert_int_equal(lt_hits_add(&h, NULL, 0, 100, 16), 0); /* no blocks */
    assert_int_equal(lt_hits_add(&h, d, 2, 32, 16), 0);     /* 1 then a miss: 16 */
    assert_int_equal(lt_hits_add(&h, a, 2, 20, 16), 0);     /* 1 and 2, capped at its 20 */
    unsigned level = 99;
    double r = lt_hits_rate(&h, &level);
    assert_int_equal(level, 0);
    assert_true(fabs(r - (32.0 + 16 + 20) / (32 + 48 + 100 + 32 + 20)) < 1e-12);
    lt_hits_release(&h);

    lt_hits_init(&h, 1000);
    assert_true(lt_hits_rate(&h, NULL) < 0); /* no prompt at all */
    lt_hits_release(&h);
}

/* 100,000 two-block chains, each sent twice (the second time 50 requests
 * later: a full hit), and 50,000 requests without blocks of 64 tokens:
 * hits 100,000 x 32 of 200,000 x 32 + 50,000 x 64 tokens, 1/3. With at
 * most 1,000 distinct blocks the chains are sampled (1 in 2^8 or so, some
 * 400 chains): the estimate must stay within 3 points of 1/3, which it
 * misses by far if the kept chains are not weighed against the requests
 * without blocks (0.4 %). */
static void test_hits_sampled(void **state)
{
    (void)state;
    struct lt_hits h;
    lt_hits_init(&h, 1000);
    const uint64_t chains = 100000;
    size_t peak = 0;
    for (uint64_t i = 0; i < chains + 50; i++) {
        if (i < chains) {
            uint64_t c[2] = {i * 2 + 1000003, i * 2 + 1000004};
            assert_int_equal(lt_hits_add(&h, c, 2, 32, 16), 0);
        }
        if (i >= 50) {
            uint64_t c[2] = {(i - 50) * 2 + 1000003, (i - 50) * 2 + 1000004};
            assert_int_equal(lt_hits_add(&h, c, 2, 32, 16), 0);
        }
        if (i % 2 == 0)
            assert_int_equal(lt_hits_add(&h, NULL, 0, 64, 16), 0);
        peak = h.cap > peak ? h.cap : peak;
        assert_true(h.n <= 1000);
    }
    unsigned level = 0;
    double r = lt_hits_rate(&h, &level);
    print_message("estimated %.4f (truth 0.3333) from 1 in %u chains, table of %zu slots\n", r,
                  1u << level, peak);
    assert_true(level >= 5);
    assert_true(fabs(r - 1.0 / 3) < 0.03);
    assert_true(peak <= 2048); /* 1,000 blocks at most 3/4 full */
    lt_hits_release(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hits_exact),
        cmocka_unit_test(test_hits_sampled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * The fleet's router (replay/route.h), against counts computed here:
 * round-robin is seq mod N (mod the replicas up once one is down); session routing keeps every
 * request of a session on one replica, spreads sessions within 25 % of 1/N, and when a replica goes
 * down moves only its own sessions; prefix routing keeps equal first blocks together until the load
 * bound, and the bound holds at every pick (in flight on any replica <= ceil(c * total / N up));
 * weighted routing gives each replica its weight's share, interleaved;
 * least-outstanding picks the emptiest; a fleet all down picks -1.
 */
#include "replay/route.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

static void init(struct lt_route *r, enum lt_route_policy p, uint32_t n, const uint32_t *w)
{
    struct lt_err e = {0};
    struct lt_route_opts o = {.policy = p, .n = n, .weights = w};
    assert_int_equal(lt_route_init(r, &o, &e), 0);
}

static void test_parse(void **state)
{
    (void)state;
    struct lt_route_opts o = {0};
    assert_true(lt_route_parse("round-robin", &o) && o.policy == LT_ROUTE_ROUND_ROBIN);
    assert_true(lt_route_parse("least-outstanding", &o) && o.policy == LT_ROUTE_LEAST_OUTSTANDING);
    assert_true(lt_route_parse("session", &o) && o.policy == LT_ROUTE_SESSION);
    assert_true(lt_route_parse("weighted", &o) && o.policy == LT_ROUTE_WEIGHTED);
    assert_true(lt_route_parse("prefix:4", &o) && o.policy == LT_ROUTE_PREFIX &&
                o.prefix_blocks == 4);
    assert_false(lt_route_parse("prefix:0", &o));
    assert_false(lt_route_parse("prefix:x", &o));
    assert_false(lt_route_parse("random", &o));
    struct lt_route r;
    struct lt_err e = {0};
    struct lt_route_opts bad = {.policy = LT_ROUTE_SESSION, .n = 0};
    assert_int_equal(lt_route_init(&r, &bad, &e), LT_EINVAL);
    uint32_t w[2] = {1, 0};
    struct lt_route_opts badw = {.policy = LT_ROUTE_WEIGHTED, .n = 2, .weights = w};
    assert_int_equal(lt_route_init(&r, &badw, &e), LT_EINVAL);
}

static void test_round_robin(void **state)
{
    (void)state;
    struct lt_route r;
    init(&r, LT_ROUTE_ROUND_ROBIN, 4, NULL);
    for (uint64_t s = 0; s < 100; s++) {
        struct lt_route_key k = {.seq = s, .session = s % 7 + 1};
        assert_int_equal(lt_route_pick(&r, &k), (int)(s % 4));
    }
    lt_route_down(&r, 2);
    unsigned per[4] = {0};
    for (uint64_t s = 0; s < 99; s++) { /* spread over the three up */
        struct lt_route_key k = {.seq = s};
        per[lt_route_pick(&r, &k)]++;
    }
    assert_int_equal(per[0], 33);
    assert_int_equal(per[1], 33);
    assert_int_equal(per[2], 0);
    assert_int_equal(per[3], 33);
    lt_route_release(&r);
}

static void test_session(void **state)
{
    (void)state;
    enum { N = 4, S = 4000 };
    struct lt_route r;
    init(&r, LT_ROUTE_SESSION, N, NULL);
    static int first[S + 1];
    unsigned per[N] = {0};
    for (uint64_t s = 1; s <= S; s++) {
        struct lt_route_key k = {.seq = s * 13, .session = s};
        first[s] = lt_route_pick(&r, &k);
        per[first[s]]++;
    }
    for (int i = 0; i < N; i++) /* within 25 % of S/N */
        assert_true(fabs((double)per[i] - S / N) < 0.25 * S / N);
    /* later turns, at other seqs and loads: the same replica */
    for (uint64_t s = 1; s <= S; s++) {
        struct lt_route_key k = {.seq = s * 7 + 3, .session = s, .index = s + 99};
        assert_int_equal(lt_route_pick(&r, &k), first[s]);
    }
    /* replica 1 goes: its sessions move, no other session does */
    lt_route_down(&r, 1);
    for (uint64_t s = 1; s <= S; s++) {
        struct lt_route_key k = {.seq = s, .session = s};
        int p = lt_route_pick(&r, &k);
        assert_int_not_equal(p, 1);
        if (first[s] != 1)
            assert_int_equal(p, first[s]);
    }
    for (int i = 0; i < N; i++)
        if (i != 1)
            lt_route_down(&r, i);
    struct lt_route_key k = {.seq = 1, .session = 1};
    assert_int_equal(lt_route_pick(&r, &k), -1);
    lt_route_release(&r);
}

static void test_prefix_bound(void **state)
{
    (void)state;
    enum { N = 4 };
    struct lt_route r;
    init(&r, LT_ROUTE_PREFIX, N, NULL);
    /* A hot prefix: every request starts with block 42, none ends. */
    uint64_t blocks[2] = {42, 0};
    int home = -1;
    uint64_t total = 0;
    for (uint64_t s = 0; s < 200; s++) {
        blocks[1] = s;
        struct lt_route_key k = {.seq = s, .blocks = blocks, .n_blocks = 2};
        int p = lt_route_pick(&r, &k);
        assert_true(p >= 0 && p < N);
        if (home < 0)
            home = p;
        total++;
        uint64_t cap = (uint64_t)ceil(1.25 * (double)total / N);
        for (int i = 0; i < N; i++)
            assert_true(r.inflight[i] <= cap);
    }
    assert_true(r.spilled > 0);
    /* Below the bound a prefix stays home: with every request ended, the
     * same first block goes to the first choice again. */
    for (int i = 0; i < N; i++)
        while (r.inflight[i])
            lt_route_done(&r, i);
    struct lt_route_key k = {.seq = 999, .blocks = blocks, .n_blocks = 2};
    assert_int_equal(lt_route_pick(&r, &k), home);
    lt_route_done(&r, home);
    /* only the first block counts (K = 1): another tail, same home */
    uint64_t other[3] = {42, 7, 8};
    struct lt_route_key k2 = {.seq = 5, .blocks = other, .n_blocks = 3};
    assert_int_equal(lt_route_pick(&r, &k2), home);
    lt_route_release(&r);
}

static void test_weighted(void **state)
{
    (void)state;
    const uint32_t w[3] = {5, 1, 2};
    struct lt_route r;
    init(&r, LT_ROUTE_WEIGHTED, 3, w);
    unsigned per[3] = {0};
    int run = 0, last = -1, longest = 0;
    for (uint64_t s = 0; s < 800; s++) {
        struct lt_route_key k = {.seq = s};
        int p = lt_route_pick(&r, &k);
        per[p]++;
        run = p == last ? run + 1 : 1;
        last = p;
        if (run > longest)
            longest = run;
    }
    assert_int_equal(per[0], 500);
    assert_int_equal(per[1], 100);
    assert_int_equal(per[2], 200);
    assert_true(longest <= 2); /* smooth: never five of one in a row */
    lt_route_release(&r);
}

static void test_least_outstanding(void **state)
{
    (void)state;
    struct lt_route r;
    init(&r, LT_ROUTE_LEAST_OUTSTANDING, 3, NULL);
    struct lt_route_key k = {.seq = 0};
    assert_int_equal(lt_route_pick(&r, &k), 0);
    assert_int_equal(lt_route_pick(&r, &k), 1);
    assert_int_equal(lt_route_pick(&r, &k), 2);
    lt_route_done(&r, 1);
    assert_int_equal(lt_route_pick(&r, &k), 1);
    lt_route_done(&r, 2);
    lt_route_done(&r, 0);
    k.seq = 2; /* ties start at seq mod N */
    assert_int_equal(lt_route_pick(&r, &k), 2);
    lt_route_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),    cmocka_unit_test(test_round_robin),
        cmocka_unit_test(test_session),  cmocka_unit_test(test_prefix_bound),
        cmocka_unit_test(test_weighted), cmocka_unit_test(test_least_outstanding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * The split of a trace over the ranks of an MPI replay (lt_plan_jobs_split):
 * a session stays on one part, requests without a session are dealt one by
 * one, the deal is balanced by weight (1024 + in + out) in arrival order,
 * and it is the same every time (each rank computes it on its own).
 */
#include "plan/plan_jobs.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

/* Jobs with prev links as load_trace makes them: session s (0 = none). */
static void make_jobs(struct lt_plan_job *j, const uint64_t *sess, const uint32_t *in, size_t n)
{
    memset(j, 0, n * sizeof *j);
    for (size_t i = 0; i < n; i++) {
        j[i].session = sess[i];
        j[i].in = in ? in[i] : 0;
        j[i].prev = j[i].next = -1;
        for (size_t k = i; sess[i] && k-- > 0;)
            if (sess[k] == sess[i]) {
                j[i].prev = (int64_t)k;
                j[k].next = (int64_t)i;
                break;
            }
    }
}

static void test_no_sessions_round_robin(void **state)
{
    (void)state;
    uint64_t s[6] = {0};
    struct lt_plan_job j[6];
    uint32_t out[6];
    make_jobs(j, s, NULL, 6);
    lt_plan_jobs_split(j, 6, 3, out);
    const uint32_t want[6] = {0, 1, 2, 0, 1, 2}; /* equal weights: least load, lowest part */
    for (int i = 0; i < 6; i++)
        assert_int_equal(want[i], out[i]);
}

static void test_sessions_whole(void **state)
{
    (void)state;
    /* sessions 7, 8, 9 interleaved, 3 turns each, and two lone requests */
    uint64_t s[11] = {7, 8, 7, 0, 9, 8, 7, 9, 8, 0, 9};
    struct lt_plan_job j[11];
    uint32_t out[11];
    make_jobs(j, s, NULL, 11);
    lt_plan_jobs_split(j, 11, 2, out);
    for (int a = 0; a < 11; a++)
        for (int b = 0; b < 11; b++)
            if (s[a] && s[a] == s[b])
                assert_int_equal(out[a], out[b]);
    /* 7 -> 0; 8 -> 1; 7's second turn -> 0 (loads 2:1); lone -> 1 (2:2);
     * 9 -> 0 (lowest of equals) */
    assert_int_equal(0, out[0]);
    assert_int_equal(1, out[1]);
    assert_int_equal(1, out[3]);
    assert_int_equal(0, out[4]);
    /* and the same again */
    uint32_t again[11];
    lt_plan_jobs_split(j, 11, 2, again);
    assert_memory_equal(out, again, sizeof out);
}

static void test_weighted(void **state)
{
    (void)state;
    /* one big request, then small ones: the small ones go elsewhere until
     * the loads even out */
    uint64_t s[5] = {0};
    uint32_t in[5] = {10000, 0, 0, 0, 0};
    struct lt_plan_job j[5];
    uint32_t out[5];
    make_jobs(j, s, in, 5);
    lt_plan_jobs_split(j, 5, 2, out);
    const uint32_t want[5] = {0, 1, 1, 1, 1}; /* 11024 vs 4 x 1024 */
    for (int i = 0; i < 5; i++)
        assert_int_equal(want[i], out[i]);
}

static void test_one_part(void **state)
{
    (void)state;
    uint64_t s[4] = {1, 2, 1, 0};
    struct lt_plan_job j[4];
    uint32_t out[4];
    make_jobs(j, s, NULL, 4);
    lt_plan_jobs_split(j, 4, 1, out);
    for (int i = 0; i < 4; i++)
        assert_int_equal(0, out[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_sessions_round_robin),
        cmocka_unit_test(test_sessions_whole),
        cmocka_unit_test(test_weighted),
        cmocka_unit_test(test_one_part),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

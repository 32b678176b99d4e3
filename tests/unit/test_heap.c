/*
 * Unit tests of lt_heap: random pushes, pops, removals and key changes are
 * checked against a plain array searched for its minimum (the ground
 * truth); items that track their position (the sim server's timers) are
 * checked to always know where they are; value items (time, index) and
 * pointer items are both used.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/lt_err.h"
#include "base/lt_heap.h"
#include "base/lt_rng.h"

#include <stdbool.h>
#include <stdlib.h>

/* ---- value items: (time, index), ties by index ---- */

struct due {
    int64_t at;
    size_t idx;
};

static bool due_less(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    const struct due *x = a, *y = b;
    return x->at < y->at || (x->at == y->at && x->idx < y->idx);
}

static void test_values_against_scan(void **state)
{
    (void)state;
    struct lt_rng rng;
    lt_rng_seed(&rng, 7);
    struct lt_heap h;
    lt_heap_init(&h, sizeof(struct due), due_less, NULL, NULL);
    enum { N = 4000 };
    struct due *ref = calloc(N, sizeof *ref);
    size_t nref = 0, next = 0;
    assert_non_null(ref);
    assert_null(lt_heap_top(&h));
    assert_false(lt_heap_pop(&h, NULL));
    for (int step = 0; step < 20000; step++) {
        bool push = nref == 0 || (nref < N && lt_rng_below(&rng, 3) != 0);
        if (push) {
            /* few distinct times, so ties are common */
            struct due d = {(int64_t)lt_rng_below(&rng, 50), next++};
            assert_int_equal(lt_heap_push(&h, &d), 0);
            ref[nref++] = d;
        } else {
            size_t m = 0;
            for (size_t i = 1; i < nref; i++)
                if (due_less(&ref[i], &ref[m], NULL))
                    m = i;
            const struct due *top = lt_heap_top(&h);
            assert_non_null(top);
            assert_int_equal(top->at, ref[m].at);
            assert_int_equal(top->idx, ref[m].idx);
            struct due got;
            assert_true(lt_heap_pop(&h, &got));
            assert_int_equal(got.at, ref[m].at);
            assert_int_equal(got.idx, ref[m].idx);
            ref[m] = ref[--nref];
        }
        assert_int_equal(lt_heap_len(&h), nref);
    }
    /* drain: strictly increasing */
    struct due prev = {INT64_MIN, 0}, got;
    while (lt_heap_pop(&h, &got)) {
        assert_true(due_less(&prev, &got, NULL));
        prev = got;
        nref--;
    }
    assert_int_equal(nref, 0);
    lt_heap_release(&h);
    free(ref);
}

/* ---- pointer items that know their position ---- */

#define NOWHERE SIZE_MAX

struct timer {
    int64_t at;
    size_t pos;
};

static bool timer_less(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    const struct timer *x = *(struct timer *const *)a, *y = *(struct timer *const *)b;
    return x->at < y->at;
}

static void timer_moved(void *item, size_t idx, void *ctx)
{
    int *calls = ctx;
    (*calls)++;
    (*(struct timer **)item)->pos = idx;
}

static void check_positions(const struct lt_heap *h, const struct timer *t, size_t n)
{
    size_t held = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i].pos == NOWHERE)
            continue;
        held++;
        assert_true(t[i].pos < lt_heap_len(h));
        assert_ptr_equal(*(struct timer **)lt_heap_at(h, t[i].pos), &t[i]);
    }
    assert_int_equal(held, lt_heap_len(h));
    for (size_t i = 1; i < lt_heap_len(h); i++)
        assert_false(timer_less(lt_heap_at(h, i), lt_heap_at(h, (i - 1) / 2), NULL));
}

static void test_tracked_fix_and_remove(void **state)
{
    (void)state;
    enum { N = 300 };
    struct timer t[N];
    for (size_t i = 0; i < N; i++)
        t[i] = (struct timer){0, NOWHERE};
    int calls = 0;
    struct lt_heap h;
    lt_heap_init(&h, sizeof(struct timer *), timer_less, timer_moved, &calls);
    assert_int_equal(lt_heap_reserve(&h, N), 0);
    struct lt_rng rng;
    lt_rng_seed(&rng, 11);
    for (int step = 0; step < 30000; step++) {
        struct timer *x = &t[lt_rng_below(&rng, N)];
        int64_t at = (int64_t)lt_rng_below(&rng, 1000);
        switch (lt_rng_below(&rng, 4)) {
        case 0: /* set: push, or change the key in place */
        case 1:
            x->at = at;
            if (x->pos == NOWHERE)
                assert_int_equal(lt_heap_push(&h, &x), 0);
            else
                lt_heap_fix(&h, x->pos);
            break;
        case 2: /* cancel */
            if (x->pos != NOWHERE) {
                struct timer *out = NULL;
                size_t p = x->pos;
                lt_heap_remove(&h, p, &out);
                assert_ptr_equal(out, x);
                x->pos = NOWHERE;
            }
            break;
        default: { /* pop the earliest: no held timer is earlier */
            struct timer *out = NULL;
            if (!lt_heap_pop(&h, &out))
                break;
            for (size_t i = 0; i < N; i++)
                if (t[i].pos != NOWHERE && &t[i] != out)
                    assert_true(t[i].at >= out->at);
            out->pos = NOWHERE;
        }
        }
        check_positions(&h, t, N);
    }
    assert_true(calls > 0);
    lt_heap_release(&h);
    assert_int_equal(lt_heap_len(&h), 0);
}

/* Removing the last item and fixing an unchanged item are no-ops. */
static void test_edges(void **state)
{
    (void)state;
    struct lt_heap h;
    lt_heap_init(&h, sizeof(struct due), due_less, NULL, NULL);
    for (size_t i = 0; i < 5; i++) {
        struct due d = {(int64_t)(10 - i), i};
        assert_int_equal(lt_heap_push(&h, &d), 0);
    }
    struct due out;
    lt_heap_remove(&h, lt_heap_len(&h) - 1, &out);
    assert_int_equal(lt_heap_len(&h), 4);
    lt_heap_fix(&h, 0);
    const struct due *top = lt_heap_top(&h);
    assert_int_equal(top->at, 6); /* the last position is never the minimum */
    /* a key raised in place sinks */
    ((struct due *)lt_heap_at(&h, 0))->at = 100;
    lt_heap_fix(&h, 0);
    int64_t prev = 0;
    for (size_t i = 0; i < 4; i++) {
        struct due got;
        assert_true(lt_heap_pop(&h, &got));
        assert_true(got.at > prev);
        assert_true(got.at != out.at);
        prev = got.at;
    }
    assert_int_equal(prev, 100);
    assert_false(lt_heap_pop(&h, &out));
    lt_heap_release(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_against_scan),
        cmocka_unit_test(test_tracked_fix_and_remove),
        cmocka_unit_test(test_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

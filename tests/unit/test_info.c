/*
 * Unit tests of trace_info: a small trace written with the writer API, whose
 * every figure (shared timestamps, rounding, gaps, peaks, lengths, sessions,
 * block reuse, names) is worked out by hand in the comments below.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "workload/trace_info.h"
#include "traces/trace_writer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tmp_path.h"

static const int64_t ts[] = {0, 0, 1000, 1000, 1000, 5000, 1000000, 1500000, 61000000};
#define N (sizeof ts / sizeof ts[0])

static void write_trace(const char *path)
{
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_TRACE, .source = "test", .block_tokens = 16};
    struct lt_writer *w = lt_writer_open(path, &h, NULL, &err);
    assert_non_null(w);
    /* blocks: [1,2,3] [1,2,4] [5] [1,2,3,6] [0,5]; 13 ids, 7 distinct;
     * seen before: 2 + 0 + 3 + 1 = 6; as prefix hits: 2 + 0 + 3 + 0 = 5;
     * prompts whose first block was seen: 2 (the 2nd and the 4th). */
    static const uint64_t b0[] = {1, 2, 3}, b1[] = {1, 2, 4}, b2[] = {5}, b3[] = {1, 2, 3, 6},
                          b4[] = {0, 5};
    static const uint64_t *const bl[] = {b0, b1, b2, b3, b4};
    static const uint32_t nb[] = {3, 3, 1, 4, 2};
    static const uint32_t calls[] = {10, 20};
    for (size_t i = 0; i < N; i++) {
        struct lt_record r = {.t = ts[i], .has = LT_HAS_IN | LT_HAS_OUT};
        r.in = (uint32_t)(100 * (i + 1)); /* 100 .. 900 */
        r.out = (uint32_t)(10 * (i + 1)); /* 10 .. 90 */
        if (i < 5) {
            r.has |= LT_HAS_BLOCKS;
            r.blocks = bl[i];
            r.n_blocks = nb[i];
        }
        if (i < 4) { /* session 7: 4 turns; session 9: 2 turns */
            r.has |= LT_HAS_SESSION | LT_HAS_TURN;
            r.session = 7;
            r.turn = (uint32_t)i;
        } else if (i < 6) {
            r.has |= LT_HAS_SESSION;
            r.session = 9;
        }
        if (i == 2 || i == 3) {
            r.has |= LT_HAS_REASONING;
            r.reasoning = i == 2 ? 5 : 0; /* one with reasoning > 0 */
        }
        if (i == 8)
            r.has |= LT_HAS_FAILED;
        if (i == 1 || i == 6) {
            r.has |= LT_HAS_CALLS;
            r.calls = calls;
            r.n_calls = i == 1 ? 2 : 1;
        }
        if (i == 1) {
            r.has |= LT_HAS_TOOLS;
            r.tools_count = 3;
            r.tools_tokens = 400;
        }
        r.model = i < 3 ? "a" : i == 3 ? "b" : NULL;
        r.api = "chat";
        assert_int_equal(lt_writer_put_record(w, &r, &err), 0);
    }
    assert_int_equal(lt_writer_close(w, &err), 0);
}

static void test_figures(void **state)
{
    const char *path = tmp_path("info.lt.zst");
    write_trace(path);
    struct lt_info in;
    struct lt_err err = {0};
    char source[32];
    assert_int_equal(lt_info_compute(path, &in, source, sizeof source, &err), 0);
    assert_string_equal(source, "test");
    assert_int_equal(in.records, N);
    assert_int_equal(in.block_tokens, 16);
    assert_true(in.t_first == 0 && in.t_last == 61000000);
    assert_true(fabs(in.span_s - 61.0) < 1e-12);
    assert_true(fabs(in.rate - 8 / 61.0) < 1e-12);

    /* gaps 0 1000 0 0 4000 995000 500000 59500000 */
    double g[] = {0, 1000, 0, 0, 4000, 995000, 500000, 59500000}, m = 61e6 / 8, ss = 0;
    for (int i = 0; i < 8; i++)
        ss += (g[i] - m) * (g[i] - m);
    assert_true(fabs(in.gap_mean_us - m) < 1e-6);
    assert_true(fabs(in.gap_cv - sqrt(ss / 8) / m) < 1e-9);
    assert_int_equal(lt_hist_count(in.gaps), 8);
    assert_int_equal(in.out_of_order, 0);

    /* second 0 holds 6 arrivals, minute 0 holds 8 */
    assert_int_equal(in.peak_sec, 6);
    assert_true(in.peak_sec_at_s == 0);
    assert_int_equal(in.peak_min, 8);

    /* every t is a multiple of 1 ms; t = 0 twice and t = 1000 three times */
    assert_int_equal(in.granularity_us, 1000);
    assert_int_equal(in.shared_t, 5);
    assert_int_equal(in.max_same_t, 3);
    assert_int_equal(in.distinct_t, 6);

    assert_int_equal(lt_hist_count(in.in.h), N);
    assert_int_equal(in.in.sum, 4500);
    assert_int_equal(lt_hist_value_at(in.in.h, 50), 500);
    assert_int_equal(lt_hist_max(in.out.h), 90);
    assert_int_equal(lt_hist_count(in.reasoning.h), 2);
    assert_int_equal(in.with_reasoning, 1);
    assert_int_equal(in.failed, 1);
    assert_int_equal(in.with_calls, 2);
    assert_int_equal(in.calls, 3);
    assert_int_equal(in.with_tools, 1);

    assert_int_equal(in.with_session, 6);
    assert_int_equal(in.sessions, 2);
    assert_true(fabs(lt_hist_mean(in.turns) - 3.0) < 1e-12);
    assert_int_equal(lt_hist_max(in.turns), 4);

    assert_int_equal(in.with_blocks, 5);
    assert_int_equal(in.blocks, 13);
    assert_int_equal(in.distinct_blocks, 7);
    assert_int_equal(in.blocks_reused, 6);
    assert_int_equal(in.blocks_prefix_hit, 5);
    assert_int_equal(in.records_reusing, 2);

    assert_int_equal(in.n_models, 2);
    assert_string_equal(in.models[0].name, "a");
    assert_int_equal(in.models[0].count, 3);
    assert_int_equal(in.models[1].count, 1);
    assert_int_equal(in.n_apis, 1);
    assert_int_equal(in.apis[0].count, N);
    lt_info_release(&in);
    lt_info_release(&in); /* twice is harmless */
}

static void test_empty_and_single(void **state)
{
    struct lt_info in;
    struct lt_err err = {0};
    assert_int_equal(lt_info_init(&in, 0, &err), 0);
    assert_int_equal(lt_info_finish(&in, &err), 0);
    assert_int_equal(in.records, 0);
    assert_true(in.rate == 0 && in.gap_cv == 0 && in.granularity_us == 0);
    struct lt_record r = {.t = 42};
    assert_int_equal(lt_info_add(&in, &r, &err), 0);
    assert_int_equal(lt_info_finish(&in, &err), 0);
    assert_int_equal(in.records, 1);
    assert_true(in.span_s == 0 && in.rate == 0);
    assert_int_equal(in.peak_sec, 1);
    lt_info_release(&in);

    /* out-of-order arrivals are counted, not turned into negative gaps */
    assert_int_equal(lt_info_init(&in, 0, &err), 0);
    int64_t t[] = {0, 5000000, 4000000, 6000000};
    for (int i = 0; i < 4; i++) {
        r.t = t[i];
        assert_int_equal(lt_info_add(&in, &r, &err), 0);
    }
    assert_int_equal(lt_info_finish(&in, &err), 0);
    assert_int_equal(in.out_of_order, 1);
    assert_int_equal(lt_hist_count(in.gaps), 2);
    lt_info_release(&in);

    assert_int_not_equal(lt_info_compute(tmp_path("no-such.lt.zst"), &in, NULL, 0, &err), 0);
    assert_true(strstr(err.msg, "no-such") != NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_figures),
        cmocka_unit_test(test_empty_and_single),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

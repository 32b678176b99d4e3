/* lt_record_lengths: the prompt and output lengths replay asks for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "traces/trace_lengths.h"

static void test_table(void **state)
{
    static const struct lt_msg msgs[2] = {{"system", 30}, {"user", 70}};
    static const struct {
        struct lt_record r;
        uint32_t default_out, in, out;
    } cases[] = {
        {{.has = LT_HAS_IN | LT_HAS_OUT, .in = 500, .out = 40}, 128, 500, 40},
        {{.has = LT_HAS_MSGS, .msgs = msgs, .n_msgs = 2}, 128, 100, 128},
        {{.has = LT_HAS_IN | LT_HAS_MSGS, .in = 7, .msgs = msgs, .n_msgs = 2}, 128, 7, 128},
        {{.has = LT_HAS_IN, .in = 0, .msgs = msgs, .n_msgs = 2}, 128, 100, 128},
        {{.has = LT_HAS_MAX_TOKENS, .max_tokens = 256}, 128, 1, 256},
        {{.has = LT_HAS_OUT | LT_HAS_MAX_TOKENS, .out = 0, .max_tokens = 9}, 128, 1, 9},
        {{.has = LT_HAS_OUT | LT_HAS_MAX_TOKENS, .out = 3, .max_tokens = 9}, 128, 1, 3},
        {{.has = 0}, 0, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t in, out;
        lt_record_lengths(&cases[i].r, cases[i].default_out, &in, &out);
        assert_int_equal(in, cases[i].in);
        assert_int_equal(out, cases[i].out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_table)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

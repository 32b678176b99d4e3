/*
 * Unit tests of lt_dur, the one duration grammar: a table of texts with the
 * microseconds a person means by them (worked out by hand), texts that are
 * not durations, a duration followed by more text, the error naming the
 * bad text, and the formatter's text read back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/lt_dur.h"

#include <string.h>

static void test_good(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int64_t bare_us, us;
    } cases[] = {
        {"250us", LT_DUR_BARE_S, 250},
        {"500ms", LT_DUR_BARE_S, 500000},
        {"2s", LT_DUR_BARE_S, 2000000},
        {"2", LT_DUR_BARE_S, 2000000},
        {"2", LT_DUR_BARE_MS, 2000},
        {"2", LT_DUR_BARE_US, 2},
        {"1.5m", LT_DUR_BARE_S, 90000000},
        {"10min", LT_DUR_BARE_S, 600000000},
        {"1h", LT_DUR_BARE_S, INT64_C(3600000000)},
        {"1.5h", LT_DUR_BARE_S, INT64_C(5400000000)},
        {"2d", LT_DUR_BARE_S, INT64_C(172800000000)},
        {"0", LT_DUR_BARE_S, 0},
        {"0.0004ms", LT_DUR_BARE_S, 0}, /* rounded to the microsecond */
        {"0.0006ms", LT_DUR_BARE_S, 1},
        {"2e3ms", LT_DUR_BARE_S, 2000000},
        {"1000000000s", LT_DUR_BARE_S, LT_DUR_MAX_US},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t us = -1;
        struct lt_err err = {0};
        assert_int_equal(lt_dur_parse(cases[i].text, cases[i].bare_us, &us, &err), 0);
        assert_int_equal(us, cases[i].us);
    }
}

static void test_bad(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "", "s", "-1s", "1x", "1 s", "1sec", "1hs", "1s ", "nan", "inf", "1e30s", "1000000001s",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t us = 7;
        struct lt_err err = {0};
        assert_int_equal(lt_dur_parse(bad[i], LT_DUR_BARE_S, &us, &err), LT_EFORMAT);
        assert_int_equal(us, 7); /* untouched */
        assert_int_equal(err.code, LT_EFORMAT);
    }
    int64_t us;
    assert_int_equal(lt_dur_parse(NULL, LT_DUR_BARE_S, &us, NULL), LT_EFORMAT);
    struct lt_err err = {0};
    lt_dur_parse("12parsecs", LT_DUR_BARE_S, &us, &err);
    assert_non_null(strstr(err.msg, "'12parsecs' is not a duration"));
    assert_non_null(strstr(err.msg, LT_DUR_UNITS));
}

/* A scan stops after the unit, so a duration can lead a longer spec. */
static void test_scan(void **state)
{
    (void)state;
    const char *end;
    int64_t us;
    assert_int_equal(lt_dur_scan("24h,0.6", &end, LT_DUR_BARE_S, &us, NULL), 0);
    assert_int_equal(us, INT64_C(86400000000));
    assert_string_equal(end, ",0.6");
    assert_int_equal(lt_dur_scan("600,0.5", &end, LT_DUR_BARE_S, &us, NULL), 0);
    assert_int_equal(us, 600000000);
    assert_string_equal(end, ",0.5");
    assert_int_equal(lt_dur_scan("1ms:7", &end, LT_DUR_BARE_S, &us, NULL), 0);
    assert_int_equal(us, 1000);
    assert_string_equal(end, ":7");
    assert_int_equal(lt_dur_scan("3weeks,1", &end, LT_DUR_BARE_S, &us, NULL), LT_EFORMAT);
}

/* The formatter writes the largest exact unit, and parsing it gives the
 * value back. */
/* Each unit's range and its edges. */
static void test_say(void **state)
{
    (void)state;
    static const struct {
        double s;
        const char *want;
    } cases[] = {{0, "0 s"},       {42.4, "42 s"},     {89.4, "89 s"},  {90, "1.5 min"},
                 {156, "2.6 min"}, {5399, "90.0 min"}, {5400, "1.5 h"}, {36000, "10.0 h"}};
    char b[32];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lt_dur_say(b, sizeof b, cases[i].s);
        assert_string_equal(b, cases[i].want);
    }
}

static void test_format(void **state)
{
    (void)state;
    static const struct {
        int64_t us;
        const char *text;
    } cases[] = {
        {0, "0s"},
        {1, "1us"},
        {250, "250us"},
        {1000, "1ms"},
        {1500000, "1500ms"},
        {1000000, "1s"},
        {90000000, "90s"},
        {120000000, "2m"},
        {INT64_C(7200000000), "2h"},
        {INT64_C(86400000000), "1d"},
        {INT64_C(86400000001), "86400000001us"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[32];
        lt_dur_format(buf, sizeof buf, cases[i].us);
        assert_string_equal(buf, cases[i].text);
        int64_t back = -1;
        assert_int_equal(lt_dur_parse(buf, LT_DUR_BARE_S, &back, NULL), 0);
        assert_int_equal(back, cases[i].us);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),   cmocka_unit_test(test_bad), cmocka_unit_test(test_scan),
        cmocka_unit_test(test_format), cmocka_unit_test(test_say),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

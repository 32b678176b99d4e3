/*
 * Unit tests of lt_json: a table of byte strings and the JSON literal each
 * must become (written out by hand), through both the buffer and the FILE
 * writer, which must agree byte for byte; numbers and their null.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/lt_json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static char *file_text(FILE *f, char *buf, size_t cap)
{
    long n = ftell(f);
    rewind(f);
    size_t got = fread(buf, 1, cap - 1, f);
    assert_int_equal((long)got, n);
    buf[got] = '\0';
    return buf;
}

static void test_strings(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        size_t n;
        const char *want;
    } cases[] = {
        {"", 0, "\"\""},
        {"plain", 5, "\"plain\""},
        {"say \"hi\"", 8, "\"say \\\"hi\\\"\""},
        {"a\\b", 3, "\"a\\\\b\""},
        {"l1\nl2\r\tx", 8, "\"l1\\nl2\\r\\tx\""},
        {"\x01\x1f\x7f", 3, "\"\\u0001\\u001f\x7f\""},
        {"nul\0in", 6, "\"nul\\u0000in\""},
        {"caf\xc3\xa9", 5, "\"caf\xc3\xa9\""},
        {"\b\f", 2, "\"\\u0008\\u000c\""},
        /* not UTF-8: each byte outside a valid sequence
         * becomes U+FFFD, so the output is valid JSON */
        {"a\xff", 2, "\"a\\ufffd\""},
        {"\xc3(\xe2\x82\xac", 5, "\"\\ufffd(\xe2\x82\xac\""},
        {"\xe2\x82", 2, "\"\\ufffd\\ufffd\""},
        {"\xc0\xaf\xed\xa0\x80", 5, "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\""},
        {"\xf0\x9f\x98\x80\xf4\x90\x80\x80", 8, "\"\xf0\x9f\x98\x80\\ufffd\\ufffd\\ufffd\\ufffd\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct lt_buf b;
        lt_buf_init(&b, 1 << 16);
        assert_int_equal(lt_json_str(&b, cases[i].in, cases[i].n), 0);
        assert_int_equal(b.len, strlen(cases[i].want));
        assert_memory_equal(b.p, cases[i].want, b.len);
        lt_buf_release(&b);
        FILE *f = tmpfile();
        assert_non_null(f);
        lt_json_fstr(f, cases[i].in, cases[i].n);
        char text[256];
        assert_string_equal(file_text(f, text, sizeof text), cases[i].want);
        fclose(f);
    }
    struct lt_buf b;
    lt_buf_init(&b, 1 << 16);
    assert_int_equal(lt_json_str(&b, NULL, 0), 0); /* msgpack-c's empty strings */
    assert_int_equal(b.len, 2);
    lt_buf_release(&b);
    lt_buf_init(&b, 4); /* the buffer's cap is an error, not an overrun */
    assert_true(lt_json_str(&b, "too long", 8) < 0);
    lt_buf_release(&b);
}

static void test_numbers(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    assert_non_null(f);
    lt_json_fnum(f, 0.1);
    fputc(' ', f);
    lt_json_fnum(f, NAN);
    fputc(' ', f);
    lt_json_fnum(f, -INFINITY);
    fputc(' ', f);
    lt_json_fnum(f, 12345678901.0); /* 10 digits */
    char text[128];
    assert_string_equal(file_text(f, text, sizeof text), "0.1 null null 1.23456789e+10");
    fclose(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_numbers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Unit tests of the CSV reader (workload/csv.c) and the line reader under
 * it: a table of inputs, each with the records it must give (fields joined
 * by '|', each record prefixed by its line number) or the error it must
 * name. Every case runs twice: over memory and over a FILE*.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "workload/csv.h"
#include "base/lt_buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct csv_case {
    const char *name;
    const char *in;
    size_t len;          /* 0 = strlen(in) */
    size_t max;          /* record limit; 0 = default */
    const char *want;    /* "1:a|b;2:c|d;" ... or NULL when an error is expected */
    int err;             /* expected code of the failing call */
    const char *msg;     /* expected part of the message */
    const char *partial; /* records before the error, for error cases */
};

static const struct csv_case cases[] = {
    {"plain LF", "a,b\nc,d\n", 0, 0, "1:a|b;2:c|d;", 0, NULL, NULL},
    {"CRLF", "a,b\r\nc,d\r\n", 0, 0, "1:a|b;2:c|d;", 0, NULL, NULL},
    {"no final newline", "a,b\r\nc,d", 0, 0, "1:a|b;2:c|d;", 0, NULL, NULL},
    {"empty input", "", 0, 0, "", 0, NULL, NULL},
    {"empty fields", ",a,,\n", 0, 0, "1:|a||;", 0, NULL, NULL},
    {"blank line is one empty field", "a\n\nb\n", 0, 0, "1:a;2:;3:b;", 0, NULL, NULL},
    {"quoted comma", "\"a,b\",c\n", 0, 0, "1:a,b|c;", 0, NULL, NULL},
    {"doubled quote", "\"say \"\"hi\"\"\",x\n", 0, 0, "1:say \"hi\"|x;", 0, NULL, NULL},
    {"empty quoted", "\"\",\"\"\n", 0, 0, "1:|;", 0, NULL, NULL},
    {"only a doubled quote", "\"\"\"\"\n", 0, 0, "1:\";", 0, NULL, NULL},
    {"quoted LF kept", "\"a\nb\",c\nd\n", 0, 0, "1:a\nb|c;3:d;", 0, NULL, NULL},
    {"quoted CRLF kept", "\"a\r\nb\",c\r\nd\r\n", 0, 0, "1:a\r\nb|c;3:d;", 0, NULL, NULL},
    {"quoted field over three lines", "\"1\n\n3\"\n", 0, 0, "1:1\n\n3;", 0, NULL, NULL},
    {"spaces are data", " a , b \n", 0, 0, "1: a | b ;", 0, NULL, NULL},
    {"BOM skipped", "\xEF\xBB\xBFTIMESTAMP,x\n1,2\n", 0, 0, "1:TIMESTAMP|x;2:1|2;", 0, NULL, NULL},
    {"BOM only at the start",
     "a\n\xEF\xBB\xBF"
     "b\n",
     0, 0,
     "1:a;2:\xEF\xBB\xBF"
     "b;",
     0, NULL, NULL},
    {"lone CR inside a field", "h\na\rb,c\n", 0, 0, "1:h;2:a\rb|c;", 0, NULL, NULL},
    {"lone CR in the first record: CR-only line ends", "a,b\r1,2\r", 0, 0, NULL, LT_EFORMAT,
     "t:1: a carriage return (CR) alone ends a line here", ""},
    {"CRLF cut short: the last CR dropped", "a,b\r\n1,2\r", 0, 0, "1:a|b;2:1|2;", 0, NULL, NULL},
    {"UTF-8 passes", "h\xC3\xA9,\xE2\x82\xAC\n", 0, 0, "1:h\xC3\xA9|\xE2\x82\xAC;", 0, NULL, NULL},
    {"quote in unquoted field", "ok\na,b\"c\nd\n", 0, 0, NULL, LT_EFORMAT,
     "t:2: field 2 has a quote inside an unquoted field", "1:ok;"},
    {"text after closing quote", "ok\n\"a\"b,c\n", 0, 0, NULL, LT_EFORMAT,
     "t:2: field 1 has text after the closing quote", "1:ok;"},
    {"quote never closed", "x\n\"abc,d\nmore\n", 0, 0, NULL, LT_ETRUNC,
     "t:2: field 1: quoted field never ends", "1:x;"},
    {"NUL byte", "a\nb\0c\n", 6, 0, NULL, LT_EFORMAT, "t:2: field 1 contains a NUL byte", "1:a;"},
    {"line too long", "short\n0123456789abcdef\nok\n", 0, 10, NULL, LT_ELIMIT,
     "t:2: line longer than 10 bytes", "1:short;"},
    {"record over lines too long", "\"0123\n4567\n89ab\"\n", 0, 10, NULL, LT_ELIMIT,
     "t:1: record longer than 10 bytes", ""},
};

/* Read every record as "line:f1|f2;" into out; return the first error. */
static int read_all(struct lt_csv *c, struct lt_buf *out, struct lt_err *err)
{
    struct lt_csv_row row;
    int rc;
    while ((rc = lt_csv_next(c, &row, err)) == 1) {
        lt_buf_printf(out, "%llu:", (unsigned long long)row.line);
        for (uint32_t i = 0; i < row.n; i++) {
            if (i)
                lt_buf_puts(out, "|");
            assert_int_equal(strlen(row.f[i].p), row.f[i].len); /* NUL-terminated fields */
            lt_buf_append(out, row.f[i].p, row.f[i].len);
        }
        lt_buf_puts(out, ";");
    }
    return rc;
}

static void run_case(const struct csv_case *k, bool use_file)
{
    size_t len = k->len ? k->len : strlen(k->in);
    struct lt_csv c;
    FILE *f = NULL;
    if (use_file) {
        f = tmpfile();
        assert_non_null(f);
        assert_int_equal(fwrite(k->in, 1, len, f), len);
        rewind(f);
        lt_csv_init_file(&c, f, "t", k->max);
    } else {
        lt_csv_init_mem(&c, k->in, len, "t", k->max);
    }
    struct lt_buf out;
    lt_buf_init(&out, 1 << 20);
    lt_buf_puts(&out, "");
    struct lt_err err = {0};
    int rc = read_all(&c, &out, &err);
    if (k->want) {
        if (rc != 0)
            print_error("case \"%s\": %s\n", k->name, err.msg);
        assert_int_equal(rc, 0);
        if (strcmp(out.p, k->want))
            print_error("case \"%s\" (%s): got \"%s\"\n", k->name, use_file ? "file" : "mem",
                        out.p);
        assert_string_equal(out.p, k->want);
    } else {
        if (rc != k->err)
            print_error("case \"%s\": rc %d, message \"%s\"\n", k->name, rc, err.msg);
        assert_int_equal(rc, k->err);
        if (!strstr(err.msg, k->msg))
            print_error("case \"%s\": message \"%s\"\n", k->name, err.msg);
        assert_non_null(strstr(err.msg, k->msg));
        assert_true(strncmp(out.p, k->partial, strlen(k->partial)) == 0);
    }
    lt_buf_release(&out);
    lt_csv_release(&c);
    if (f)
        fclose(f);
}

static void test_table_mem(void **state)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i], false);
}

static void test_table_file(void **state)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i], true);
}

/* After a bad record, reading goes on at the next one (for --skip-bad). */
static void test_resume_after_error(void **state)
{
    static const char in[] = "a,b\nx\"y,z\n0123456789abcdef\nc,d\n";
    struct lt_csv c;
    lt_csv_init_mem(&c, in, sizeof in - 1, "t", 12);
    struct lt_csv_row row;
    struct lt_err err = {0};
    assert_int_equal(lt_csv_next(&c, &row, &err), 1);
    assert_int_equal(lt_csv_next(&c, &row, &err), LT_EFORMAT);
    assert_int_equal(lt_csv_next(&c, &row, &err), LT_ELIMIT);
    assert_int_equal(lt_csv_next(&c, &row, &err), 1);
    assert_int_equal(row.line, 4);
    assert_int_equal(row.n, 2);
    assert_string_equal(row.f[1].p, "d");
    assert_int_equal(lt_csv_next(&c, &row, &err), 0);
    lt_csv_release(&c);
}

/* Records far larger than the read chunk, and many fields. */
static void test_large(void **state)
{
    size_t n = 300000;
    char *in = malloc(2 * n + 16);
    assert_non_null(in);
    for (size_t i = 0; i < n; i++)
        in[2 * i] = 'x', in[2 * i + 1] = ',';
    memcpy(in + 2 * n, "end\r\n", 5);
    FILE *f = tmpfile();
    assert_non_null(f);
    fwrite(in, 1, 2 * n + 5, f);
    rewind(f);
    struct lt_csv c;
    lt_csv_init_file(&c, f, "big", 0);
    struct lt_csv_row row;
    struct lt_err err = {0};
    assert_int_equal(lt_csv_next(&c, &row, &err), LT_ELIMIT); /* > LT_CSV_MAX_FIELDS */
    assert_non_null(strstr(err.msg, "big:1:"));
    lt_csv_release(&c);
    in[2 * 60000 - 1] = '\n'; /* a first record of 60000 fields */
    rewind(f);
    fwrite(in, 1, 2 * n + 5, f);
    rewind(f);
    lt_csv_init_file(&c, f, "big", 0);
    assert_int_equal(lt_csv_next(&c, &row, &err), 1);
    assert_int_equal(row.n, 60000);
    assert_string_equal(row.f[59999].p, "x");
    lt_csv_release(&c);
    fclose(f);
    free(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_mem),
        cmocka_unit_test(test_table_file),
        cmocka_unit_test(test_resume_after_error),
        cmocka_unit_test(test_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

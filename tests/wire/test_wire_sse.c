/*
 * SSE framing: every way a stream can be cut into pieces gives the same
 * events; line endings, comments, other fields and multi-line data; the
 * line and event limits.
 */
#include "wire/wire_sse.h"
#include "base/lt_err.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

struct got {
    char text[4096];
    int n;
};

static int collect(void *ud, const char *data, size_t len)
{
    struct got *g = ud;
    size_t l = strlen(g->text);
    snprintf(g->text + l, sizeof g->text - l, "[%.*s]", (int)len, data);
    g->n++;
    return 0;
}

static const struct {
    const char *in;
    const char *want;
} cases[] = {
    {"data: {\"a\":1}\n\ndata: [DONE]\n\n", "[{\"a\":1}][[DONE]]"},
    {"data: x\r\n\r\ndata: y\r\n\r\n", "[x][y]"},
    {"data: x\r\rdata:y\r\r", "[x][y]"},
    {": keep-alive\n\ndata: x\n\n", "[x]"},
    {"event: message\nid: 7\nretry: 10\ndata: x\n\n", "[x]"},
    {"data: a\ndata: b\n\n", "[a\nb]"},
    {"data:nospace\n\n", "[nospace]"},
    {"data\n\n", "[]"},
    {"\n\n\n", ""},
    {"data: last-without-blank-line\n", "[last-without-blank-line]"},
    {"data: cut", "[cut]"},
};

static void test_every_split(void **state)
{
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t n = strlen(cases[c].in);
        for (size_t cut1 = 0; cut1 <= n; cut1++) {
            for (size_t cut2 = cut1; cut2 <= n; cut2 += 3) {
                struct lt_wire_sse s;
                struct got g = {{0}, 0};
                lt_wire_sse_init(&s, 1024, 1024);
                assert_int_equal(lt_wire_sse_feed(&s, cases[c].in, cut1, collect, &g), 0);
                assert_int_equal(lt_wire_sse_feed(&s, cases[c].in + cut1, cut2 - cut1, collect, &g),
                                 0);
                assert_int_equal(lt_wire_sse_feed(&s, cases[c].in + cut2, n - cut2, collect, &g),
                                 0);
                assert_int_equal(lt_wire_sse_finish(&s, collect, &g), 0);
                if (strcmp(g.text, cases[c].want) != 0)
                    fail_msg("case %zu cut %zu/%zu: got %s, want %s", c, cut1, cut2, g.text,
                             cases[c].want);
                lt_wire_sse_release(&s);
            }
        }
    }
}

static void test_limits(void **state)
{
    struct lt_wire_sse s;
    struct got g = {{0}, 0};
    char big[200];
    memset(big, 'x', sizeof big);
    lt_wire_sse_init(&s, 64, 128);
    /* a whole long line in one piece */
    assert_int_equal(lt_wire_sse_feed(&s, big, sizeof big, collect, &g), LT_ELIMIT);
    lt_wire_sse_reset(&s);
    /* a long line collected over pieces */
    for (int i = 0; i < 10; i++) {
        int rc = lt_wire_sse_feed(&s, big, 10, collect, &g);
        if (rc < 0) {
            assert_int_equal(rc, LT_ELIMIT);
            break;
        }
        assert_true(i < 7);
    }
    lt_wire_sse_reset(&s);
    /* an event of many short lines */
    int rc = 0;
    for (int i = 0; i < 100 && rc == 0; i++)
        rc = lt_wire_sse_feed(&s, "data: 0123456789\n", 17, collect, &g);
    assert_int_equal(rc, LT_ELIMIT);
    assert_int_equal(g.n, 0);
    lt_wire_sse_release(&s);
}

static int stop_cb(void *ud, const char *d, size_t n)
{
    return LT_EFORMAT;
}

static void test_callback_error_stops(void **state)
{
    struct lt_wire_sse s;
    lt_wire_sse_init(&s, 64, 64);
    assert_int_equal(lt_wire_sse_feed(&s, "data: x\n\n", 9, stop_cb, NULL), LT_EFORMAT);
    lt_wire_sse_release(&s);
}

struct seen {
    char text[256];
    size_t at[16];
    int n;
    const struct lt_wire_sse *s;
};

static int note(void *ud, const char *data, size_t len)
{
    struct seen *g = ud;
    size_t l = strlen(g->text);
    if (data)
        snprintf(g->text + l, sizeof g->text - l, "[%.*s]", (int)len, data);
    else
        snprintf(g->text + l, sizeof g->text - l, "-");
    if (g->n < 16)
        g->at[g->n++] = lt_wire_sse_at(g->s);
    return 0;
}

static void test_passing(void **state)
{
    /* A passing reader skips what outgrows the limits, and is told where
     * every event and every other blank line ends in the piece. */
    static const char in[] = "data: a\r\n\r\n"                                 /* [a] at 11 */
                             ": ping\n\n"                                      /* - at 19 */
                             "data: this line is far too long for sixteen\n\n" /* - */
                             "data: 0123456789\ndata: 0123456789\n\n"          /* - */
                             "data: b\n\n";
    struct lt_wire_sse s;
    struct seen g = {.s = &s};
    lt_wire_sse_init_passing(&s, 16, 16);
    assert_int_equal(lt_wire_sse_feed(&s, in, sizeof in - 1, note, &g), 0);
    assert_int_equal(lt_wire_sse_finish(&s, note, &g), 0);
    assert_string_equal(g.text, "[a]---[b]");
    assert_int_equal(g.at[0], 11);
    assert_int_equal(g.at[1], 19);
    assert_int_equal(g.at[4], sizeof in - 1);
    /* The same long line cut over pieces. */
    lt_wire_sse_reset(&s);
    memset(&g, 0, sizeof g);
    g.s = &s;
    for (size_t i = 19; i < sizeof in - 1; i += 5)
        assert_int_equal(
            lt_wire_sse_feed(&s, in + i, i + 5 < sizeof in - 1 ? 5 : sizeof in - 1 - i, note, &g),
            0);
    assert_string_equal(g.text, "--[b]");
    lt_wire_sse_release(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_split),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_callback_error_stops),
        cmocka_unit_test(test_passing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

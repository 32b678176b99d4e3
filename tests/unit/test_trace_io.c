/*
 * Unit tests of the trace format: writer and reader round trips, frame
 * closing, and every kind of bad input the reader must name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "traces/lt_buf.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *tmp_path(const char *name)
{
    static char buf[4][512];
    static int k;
    const char *dir = getenv("LT_TMP");
    char *p = buf[k++ % 4];
    snprintf(p, 512, "%s/%s", dir ? dir : "/tmp", name);
    return p;
}

static void test_roundtrip_records(void **state)
{
    const char *path = tmp_path("rt.lt.zst");
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_TRACE, .source = "test", .block_tokens = 512};
    struct lt_writer *w = lt_writer_open(path, &h, NULL, &err);
    assert_non_null(w);
    struct lt_msg msgs[2] = {{"system", 10}, {"user", 90}};
    uint64_t blocks[3] = {1, 2, UINT64_MAX};
    uint32_t calls[2] = {17, 4};
    for (int i = 0; i < 10000; i++) {
        struct lt_record r = {.t = i * 1000, .has = LT_HAS_IN | LT_HAS_OUT, .in = i, .out = 2 * i};
        if (i % 7 == 0) {
            r.has |= LT_HAS_MSGS | LT_HAS_BLOCKS | LT_HAS_CALLS | LT_HAS_SESSION |
                     LT_HAS_ORIG_STATUS | LT_HAS_ORIG_TTFT;
            r.msgs = msgs, r.n_msgs = 2;
            r.blocks = blocks, r.n_blocks = 3;
            r.calls = calls, r.n_calls = 2;
            r.session = 42;
            r.orig_status = 200, r.orig_ttft = 1234;
            r.model = "m1";
            r.text = "hello \"world\"\n", r.text_len = 14;
        }
        assert_int_equal(lt_writer_put_record(w, &r, &err), 0);
    }
    assert_int_equal(lt_writer_close(w, &err), 0);

    struct lt_reader *r = lt_reader_open(path, NULL, &err);
    assert_non_null(r);
    const struct lt_header *rh = lt_reader_header(r);
    assert_int_equal(rh->kind, LT_KIND_TRACE);
    assert_int_equal(rh->version, 1);
    assert_int_equal(rh->block_tokens, 512);
    assert_string_equal(rh->source, "test");
    const struct lt_item *it;
    int i = 0;
    while (lt_reader_next(r, &it, &err) == 1) {
        assert_int_equal(it->type, LT_ITEM_RECORD);
        assert_int_equal(it->index, i);
        assert_int_equal(it->rec.t, i * 1000);
        assert_int_equal(it->rec.in, i);
        assert_int_equal(it->rec.out, 2 * i);
        if (i % 7 == 0) {
            assert_int_equal(it->rec.n_msgs, 2);
            assert_string_equal(it->rec.msgs[1].role, "user");
            assert_int_equal(it->rec.msgs[1].tokens, 90);
            assert_true(it->rec.blocks[2] == UINT64_MAX);
            assert_int_equal(it->rec.calls[0], 17);
            assert_int_equal(it->rec.session, 42);
            assert_int_equal(it->rec.orig_status, 200);
            assert_int_equal(it->rec.orig_ttft, 1234);
            assert_string_equal(it->rec.model, "m1");
            assert_int_equal(it->rec.text_len, 14);
            assert_memory_equal(it->rec.text, "hello \"world\"\n", 14);
        } else {
            assert_int_equal(it->rec.has, LT_HAS_IN | LT_HAS_OUT);
            assert_null(it->rec.model);
        }
        i++;
    }
    assert_int_equal(i, 10000);
    struct lt_reader_stats st;
    lt_reader_stats(r, &st);
    assert_true(st.frames >= 4); /* header + 10000/4096 data frames */
    lt_reader_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

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
#include "traces/trace_json.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

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


/* ---- helpers to build files by hand ---------------------------------- */

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)n + 1);
    assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return p;
}

static void spit(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* Write n simple records, frame_records per frame; return the file's
 * frame offsets (header frame first) in offs[], their count in *nf. */
static void write_simple(const char *path, int n, uint32_t frame_records)
{
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_TRACE, .source = "test"};
    struct lt_writer_opts o = {.frame_records = frame_records};
    struct lt_writer *w = lt_writer_open(path, &h, &o, &err);
    assert_non_null(w);
    for (int i = 0; i < n; i++) {
        struct lt_record r = {.t = i, .has = LT_HAS_IN, .in = (uint32_t)i};
        assert_int_equal(lt_writer_put_record(w, &r, &err), 0);
    }
    assert_int_equal(lt_writer_close(w, &err), 0);
}

static int frame_offsets(const unsigned char *p, size_t len, size_t *offs, int max)
{
    int n = 0;
    size_t off = 0;
    while (off < len && n < max) {
        offs[n++] = off;
        size_t fs = ZSTD_findFrameCompressedSize(p + off, len - off);
        assert_false(ZSTD_isError(fs));
        off += fs;
    }
    return n;
}

/* Read everything; return the number of records and the final rc. */
static int read_all(const char *path, const struct lt_reader_opts *ro, int *nrec,
                    struct lt_err *err)
{
    *nrec = 0;
    struct lt_reader *r = lt_reader_open(path, ro, err);
    if (!r)
        return err->code ? err->code : -100;
    const struct lt_item *it;
    int rc;
    while ((rc = lt_reader_next(r, &it, err)) == 1)
        (*nrec)++;
    lt_reader_free(r);
    return rc;
}

/* A file made of one frame per given msgpack buffer. */
static void write_frames(const char *path, msgpack_sbuffer *bufs, int n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (int i = 0; i < n; i++) {
        size_t bound = ZSTD_compressBound(bufs[i].size);
        void *z = malloc(bound);
        size_t zn = ZSTD_compress(z, bound, bufs[i].data, bufs[i].size, 3);
        assert_false(ZSTD_isError(zn));
        fwrite(z, 1, zn, f);
        free(z);
    }
    fclose(f);
}

static void pk_str(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

static void pack_header(msgpack_sbuffer *sb, unsigned version, const char *format)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 4);
    pk_str(&pk, "format");
    pk_str(&pk, format);
    pk_str(&pk, "version");
    msgpack_pack_uint32(&pk, version);
    pk_str(&pk, "kind");
    pk_str(&pk, "trace");
    pk_str(&pk, "created");
    pk_str(&pk, "2026-11-29T00:00:00Z");
}

/* ---- bad input -------------------------------------------------------- */

static void test_truncated(void **state)
{
    const char *path = tmp_path("trunc.lt.zst");
    write_simple(path, 1000, 100);
    size_t len;
    unsigned char *p = slurp(path, &len);
    size_t offs[64];
    int nf = frame_offsets(p, len, offs, 64);
    assert_int_equal(nf, 11); /* header + 10 data frames */
    /* Cut inside the 4th data frame: the first three frames (300 records)
     * are read, then a truncation error names the frame's byte offset. */
    size_t cut = offs[4] + (offs[5] - offs[4]) / 2;
    const char *tpath = tmp_path("trunc2.lt.zst");
    spit(tpath, p, cut);
    struct lt_err err = {0};
    int n;
    int rc = read_all(tpath, NULL, &n, &err);
    assert_int_equal(rc, LT_ETRUNC);
    assert_int_equal(n, 300);
    char want[64];
    snprintf(want, sizeof want, "frame at byte %zu", offs[4]);
    assert_non_null(strstr(err.msg, want));
    assert_non_null(strstr(err.msg, "truncated"));
    /* Salvage keeps the same 300 and ends cleanly, reporting the skip. */
    struct lt_reader_opts ro = {.salvage = true};
    rc = read_all(tpath, &ro, &n, &err);
    assert_int_equal(rc, 0);
    assert_int_equal(n, 300);
    free(p);
}

static int skips;
static void count_skip(void *ud, const char *what)
{
    skips++;
}

static void test_corrupt_frame_and_salvage(void **state)
{
    const char *path = tmp_path("corrupt.lt.zst");
    write_simple(path, 1000, 100);
    size_t len;
    unsigned char *p = slurp(path, &len);
    size_t offs[64];
    frame_offsets(p, len, offs, 64);
    /* Damage the middle of the 3rd data frame. */
    size_t at = offs[3] + (offs[4] - offs[3]) / 2;
    p[at] ^= 0x5a;
    p[at + 1] ^= 0xa5;
    const char *cpath = tmp_path("corrupt2.lt.zst");
    spit(cpath, p, len);
    struct lt_err err = {0};
    int n;
    int rc = read_all(cpath, NULL, &n, &err);
    assert_true(rc < 0);
    assert_int_equal(n, 200); /* frames 1 and 2 only: no garbage from frame 3 */
    char want[64];
    snprintf(want, sizeof want, "frame at byte %zu", offs[3]);
    assert_non_null(strstr(err.msg, want));

    skips = 0;
    struct lt_reader_opts ro = {.salvage = true, .on_skip = count_skip};
    struct lt_reader *r = lt_reader_open(cpath, &ro, &err);
    assert_non_null(r);
    const struct lt_item *it;
    n = 0;
    int64_t sum = 0;
    while ((rc = lt_reader_next(r, &it, &err)) == 1)
        n++, sum += it->rec.t;
    assert_int_equal(rc, 0);
    assert_int_equal(n, 900);
    /* exactly records 200..299 are missing */
    assert_int_equal(sum, 999 * 1000 / 2 - (200 + 299) * 100 / 2);
    assert_int_equal(skips, 1);
    struct lt_reader_stats st;
    lt_reader_stats(r, &st);
    assert_int_equal(st.skipped_frames, 1);
    assert_int_equal(st.skipped_bytes, offs[4] - offs[3]);
    lt_reader_free(r);
    free(p);
}

static void test_missing_header(void **state)
{
    const char *path = tmp_path("nohdr.lt.zst");
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 1);
    pk_str(&pk, "t");
    msgpack_pack_uint32(&pk, 5);
    write_frames(path, &sb, 1);
    msgpack_sbuffer_destroy(&sb);
    struct lt_err err = {0};
    assert_null(lt_reader_open(path, NULL, &err));
    assert_non_null(strstr(err.msg, "missing header"));
}

static void test_future_version(void **state)
{
    const char *path = tmp_path("v2.lt.zst");
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    pack_header(&sb, 2, "loadtrace");
    write_frames(path, &sb, 1);
    msgpack_sbuffer_destroy(&sb);
    struct lt_err err = {0};
    assert_null(lt_reader_open(path, NULL, &err));
    assert_int_equal(err.code, LT_EVERSION);
    assert_non_null(strstr(err.msg, "version 2"));
    assert_non_null(strstr(err.msg, "upgrade"));
}

static void test_not_zstd_and_empty(void **state)
{
    const char *path = tmp_path("plain.csv");
    spit(path, "TIMESTAMP,ContextTokens\n1,2\n", 28);
    struct lt_err err = {0};
    assert_null(lt_reader_open(path, NULL, &err));
    assert_non_null(strstr(err.msg, "not a loadtrace file"));
    const char *epath = tmp_path("empty.lt.zst");
    spit(epath, "", 0);
    assert_null(lt_reader_open(epath, NULL, &err));
    assert_non_null(strstr(err.msg, "empty"));
    assert_null(lt_reader_open(tmp_path("does-not-exist"), NULL, &err));
    assert_int_equal(err.code, LT_EIO);
}

/* Records whose keys have the wrong type: the error names the record
 * number and the key; salvage skips just that record. */
static void test_wrong_types(void **state)
{
    const char *path = tmp_path("types.lt.zst");
    msgpack_sbuffer sb[2];
    msgpack_sbuffer_init(&sb[0]);
    msgpack_sbuffer_init(&sb[1]);
    pack_header(&sb[0], 1, "loadtrace");
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb[1], msgpack_sbuffer_write);
    for (int i = 0; i < 5; i++) {
        msgpack_pack_map(&pk, 2);
        pk_str(&pk, "t");
        if (i == 3)
            pk_str(&pk, "soon");
        else
            msgpack_pack_uint32(&pk, (uint32_t)i);
        pk_str(&pk, "in");
        msgpack_pack_uint32(&pk, 7);
    }
    msgpack_pack_array(&pk, 0); /* record 5: not a map */
    msgpack_pack_map(&pk, 1);   /* record 6: no t */
    pk_str(&pk, "in");
    msgpack_pack_uint32(&pk, 7);
    write_frames(path, sb, 2);
    struct lt_err err = {0};
    int n;
    int rc = read_all(path, NULL, &n, &err);
    assert_int_equal(rc, LT_EFORMAT);
    assert_int_equal(n, 3);
    assert_non_null(strstr(err.msg, "record 3"));
    assert_non_null(strstr(err.msg, "\"t\""));
    struct lt_reader_opts ro = {.salvage = true};
    rc = read_all(path, &ro, &n, &err);
    assert_int_equal(rc, 0);
    assert_int_equal(n, 4); /* records 3, 5 and 6 skipped */
    msgpack_sbuffer_destroy(&sb[0]);
    msgpack_sbuffer_destroy(&sb[1]);
}

/* A declared array length far beyond the data must be refused before
 * anything is allocated for it. */
static void test_hostile_lengths(void **state)
{
    const char *path = tmp_path("hostile.lt.zst");
    msgpack_sbuffer sb[2];
    msgpack_sbuffer_init(&sb[0]);
    msgpack_sbuffer_init(&sb[1]);
    pack_header(&sb[0], 1, "loadtrace");
    static const unsigned char bomb[] = {0x82, 0xa1, 't', 0x01, 0xa6, 'b', 'l', 'o', 'c', 'k',
                                         's', 0xdd, 0xff, 0xff, 0xff, 0xff, 0x01};
    msgpack_sbuffer_write(&sb[1], (const char *)bomb, sizeof bomb);
    write_frames(path, sb, 2);
    struct lt_err err = {0};
    int n;
    int rc = read_all(path, NULL, &n, &err);
    assert_true(rc < 0);
    assert_int_equal(n, 0);
    assert_non_null(strstr(err.msg, "record 0"));
    /* Deep nesting. */
    msgpack_sbuffer_clear(&sb[1]);
    for (int i = 0; i < 100; i++)
        msgpack_sbuffer_write(&sb[1], "\x91", 1);
    msgpack_sbuffer_write(&sb[1], "\x01", 1);
    write_frames(path, sb, 2);
    rc = read_all(path, NULL, &n, &err);
    assert_int_equal(rc, LT_ELIMIT);
    msgpack_sbuffer_destroy(&sb[0]);
    msgpack_sbuffer_destroy(&sb[1]);
}

static void test_out_of_order(void **state)
{
    const char *path = tmp_path("order.lt.zst");
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_TRACE};
    struct lt_writer *w = lt_writer_open(path, &h, NULL, &err);
    struct lt_record r = {.t = 10};
    assert_int_equal(lt_writer_put_record(w, &r, &err), 0);
    r.t = 5;
    assert_int_equal(lt_writer_put_record(w, &r, &err), LT_EINVAL);
    assert_non_null(strstr(err.msg, "arrival order"));
    r.t = 10;
    assert_int_equal(lt_writer_put_record(w, &r, &err), 0);
    assert_int_equal(lt_writer_close(w, &err), 0);
    /* A results value in a trace file is refused too. */
    w = lt_writer_open(path, &h, NULL, &err);
    struct lt_run run = {.id = 1, .mode = "trace"};
    assert_int_equal(lt_writer_put_run(w, &run, &err), LT_EINVAL);
    lt_writer_close(w, &err);
}

static void test_results_roundtrip(void **state)
{
    const char *path = tmp_path("results.lt.zst");
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_RESULTS, .source = "replay"};
    struct lt_writer *w = lt_writer_open(path, &h, NULL, &err);
    assert_non_null(w);
    struct lt_run run = {.id = 3, .mode = "concurrency", .concurrency = 16, .target = "sim",
                         .model = "m", .start = "2026-11-29T00:00:00Z", .version = "0.1.0",
                         .warmup = 2, .rate = 1.5};
    assert_int_equal(lt_writer_put_run(w, &run, &err), 0);
    struct lt_chunk ch[3] = {{1500, 1}, {1700, 2}, {2500, 1}};
    struct lt_result res = {.has = LT_RHAS_SENT | LT_RHAS_FIRST_BYTE | LT_RHAS_FIRST_TOKEN |
                                   LT_RHAS_END | LT_RHAS_CHUNKS | LT_RHAS_OUT | LT_RHAS_STATUS,
                            .run = 3, .index = 77, .sched = 1000, .sent = 1010,
                            .first_byte = 1400, .first_token = 1500, .end = 2600,
                            .chunks = ch, .n_chunks = 3, .out = 4, .status = 200,
                            .finish = "length", .count = "usage"};
    assert_int_equal(lt_writer_put_result(w, &res, &err), 0);
    struct lt_record rec = {.t = 0};
    assert_int_equal(lt_writer_put_record(w, &rec, &err), LT_EINVAL);
    assert_int_equal(lt_writer_close(w, &err), 0);

    struct lt_reader *r = lt_reader_open_kind(path, LT_KIND_RESULTS, NULL, &err);
    assert_non_null(r);
    const struct lt_item *it;
    assert_int_equal(lt_reader_next(r, &it, &err), 1);
    assert_int_equal(it->type, LT_ITEM_RUN);
    assert_int_equal(it->run.id, 3);
    assert_int_equal(it->run.concurrency, 16);
    assert_int_equal(it->run.warmup, 2);
    assert_true(it->run.rate == 1.5);
    assert_string_equal(it->run.mode, "concurrency");
    assert_int_equal(lt_reader_next(r, &it, &err), 1);
    assert_int_equal(it->type, LT_ITEM_RESULT);
    assert_int_equal(it->res.index, 77);
    assert_int_equal(it->res.n_chunks, 3);
    assert_int_equal(it->res.chunks[0].t, 1500);
    assert_int_equal(it->res.chunks[1].tokens, 2);
    assert_int_equal(it->res.chunks[2].t, 2500);
    assert_int_equal(it->res.end, 2600);
    assert_string_equal(it->res.finish, "length");
    assert_int_equal(lt_reader_next(r, &it, &err), 0);
    lt_reader_free(r);
    assert_null(lt_reader_open_kind(path, LT_KIND_TRACE, NULL, &err));
    assert_non_null(strstr(err.msg, "results file"));
}

/* Keys the reader does not know survive a read-write-read copy. */
static void test_unknown_keys_preserved(void **state)
{
    const char *path = tmp_path("unknown.lt.zst");
    msgpack_sbuffer sb[2];
    msgpack_sbuffer_init(&sb[0]);
    msgpack_sbuffer_init(&sb[1]);
    pack_header(&sb[0], 1, "loadtrace");
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb[1], msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 3);
    pk_str(&pk, "t");
    msgpack_pack_uint32(&pk, 9);
    pk_str(&pk, "future_key");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_int32(&pk, -3);
    pk_str(&pk, "x");
    pk_str(&pk, "in");
    msgpack_pack_uint32(&pk, 4);
    write_frames(path, sb, 2);
    msgpack_sbuffer_destroy(&sb[0]);
    msgpack_sbuffer_destroy(&sb[1]);

    struct lt_err err = {0};
    const char *copy = tmp_path("unknown-copy.lt.zst");
    struct lt_reader *r = lt_reader_open(path, NULL, &err);
    assert_non_null(r);
    struct lt_header h = *lt_reader_header(r);
    struct lt_writer *w = lt_writer_open(copy, &h, NULL, &err);
    const struct lt_item *it;
    assert_int_equal(lt_reader_next(r, &it, &err), 1);
    assert_int_equal(it->rec.extra.n, 1);
    assert_int_equal(lt_writer_put_record(w, &it->rec, &err), 0);
    lt_reader_free(r);
    assert_int_equal(lt_writer_close(w, &err), 0);

    r = lt_reader_open(copy, NULL, &err);
    assert_int_equal(lt_reader_next(r, &it, &err), 1);
    struct lt_buf js;
    lt_buf_init(&js, 1 << 20);
    assert_int_equal(lt_json_record(&js, &it->rec), 0);
    assert_string_equal(js.p, "{\"t\":9,\"in\":4,\"future_key\":[-3,\"x\"]}");
    lt_buf_release(&js);
    lt_reader_free(r);
}

/* Frames close by count, and by age when the writer is ticked. */
static void test_frame_closing(void **state)
{
    const char *path = tmp_path("frames.lt.zst");
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_TRACE};
    struct lt_writer_opts o = {.frame_records = 10, .frame_ms = 1};
    struct lt_writer *w = lt_writer_open(path, &h, &o, &err);
    uint64_t after_header = lt_writer_bytes(w);
    assert_true(after_header > 0); /* the header is on disk at once */
    struct lt_record r = {.t = 1};
    assert_int_equal(lt_writer_put_record(w, &r, &err), 0);
    struct timespec ts = {0, 3 * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_int_equal(lt_writer_tick(w, &err), 0);
    /* The lone record is on disk although the frame was not full. */
    assert_true(lt_writer_bytes(w) > after_header);
    assert_int_equal(file_size(path), (long)lt_writer_bytes(w));
    assert_int_equal(lt_writer_close(w, &err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_records),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_corrupt_frame_and_salvage),
        cmocka_unit_test(test_missing_header),
        cmocka_unit_test(test_future_version),
        cmocka_unit_test(test_not_zstd_and_empty),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_hostile_lengths),
        cmocka_unit_test(test_out_of_order),
        cmocka_unit_test(test_results_roundtrip),
        cmocka_unit_test(test_unknown_keys_preserved),
        cmocka_unit_test(test_frame_closing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

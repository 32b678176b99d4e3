/*
 * Unit tests of the trace format: writer and reader round trips, frame
 * closing, and every kind of bad input the reader must name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/lt_buf.h"
#include "traces/trace_json.h"
#include "traces/lt_mp.h"
#include "traces/trace_reader.h"
#include "traces/trace_results.h"
#include "traces/trace_writer.h"

#include <math.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "tests/tmp_path.h"

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
        if (i % 11 == 5) { /* a client that left mid-stream */
            r.has |= LT_HAS_CANCEL_AFTER | LT_HAS_CANCEL_TOKENS;
            r.cancel_after = 1500000 + i;
            r.cancel_tokens = (uint32_t)i % 13;
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
        } else if (i % 11 != 5) {
            assert_int_equal(it->rec.has, LT_HAS_IN | LT_HAS_OUT);
            assert_null(it->rec.model);
        }
        assert_int_equal(!!(it->rec.has & LT_HAS_CANCEL_AFTER), i % 11 == 5);
        assert_int_equal(!!(it->rec.has & LT_HAS_CANCEL_TOKENS), i % 11 == 5);
        if (i % 11 == 5) {
            assert_true(it->rec.cancel_after == 1500000 + i);
            assert_int_equal(it->rec.cancel_tokens, (uint32_t)i % 13);
        }
        i++;
    }
    assert_int_equal(i, 10000);
    struct lt_reader_stats st;
    lt_reader_stats(r, &st);
    assert_true(st.frames >= 4); /* header + 10000/4096 data frames */
    lt_reader_close(r);
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
    lt_reader_close(r);
    return rc;
}

/* A zstd frame as loadtrace writes them: with its content checksum, which
 * the reader requires (docs/trace-format.md §1). */
static size_t zframe(void *dst, size_t cap, const void *src, size_t n, int level)
{
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    size_t z = ZSTD_compress2(c, dst, cap, src, n);
    ZSTD_freeCCtx(c);
    return z;
}

/* A file made of one frame per given msgpack buffer. */
static void write_frames(const char *path, msgpack_sbuffer *bufs, int n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (int i = 0; i < n; i++) {
        size_t bound = ZSTD_compressBound(bufs[i].size);
        void *z = malloc(bound);
        size_t zn = zframe(z, bound, bufs[i].data, bufs[i].size, 3);
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
    lt_reader_close(r);
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
    /* Version 3 (result blocks, scrape samples) is read; 4 is refused. */
    const char *path = tmp_path("v4.lt.zst");
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    pack_header(&sb, 4, "loadtrace");
    write_frames(path, &sb, 1);
    msgpack_sbuffer_destroy(&sb);
    struct lt_err err = {0};
    assert_null(lt_reader_open(path, NULL, &err));
    assert_int_equal(err.code, LT_EVERSION);
    assert_non_null(strstr(err.msg, "version 4"));
    assert_non_null(strstr(err.msg, "reads version 3 and older"));
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
    static const unsigned char bomb[] = {0x82, 0xa1, 't',  0x01, 0xa6, 'b',  'l',  'o', 'c',
                                         'k',  's',  0xdd, 0xff, 0xff, 0xff, 0xff, 0x01};
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
    struct lt_run run = {.id = 3,
                         .mode = "concurrency",
                         .concurrency = 16,
                         .target = "sim",
                         .model = "m",
                         .start = "2026-11-29T00:00:00Z",
                         .version = "0.1.0",
                         .warmup = 2,
                         .rate = 1.5};
    assert_int_equal(lt_writer_put_run(w, &run, &err), 0);
    struct lt_chunk ch[3] = {{1500, 1}, {1700, 2}, {2500, 1}};
    struct lt_result res = {.has = LT_RHAS_SENT | LT_RHAS_FIRST_BYTE | LT_RHAS_FIRST_TOKEN |
                                   LT_RHAS_END | LT_RHAS_CHUNKS | LT_RHAS_OUT | LT_RHAS_STATUS,
                            .run = 3,
                            .index = 77,
                            .sched = 1000,
                            .sent = 1010,
                            .first_byte = 1400,
                            .first_token = 1500,
                            .end = 2600,
                            .chunks = ch,
                            .n_chunks = 3,
                            .out = 4,
                            .status = 200,
                            .finish = "length",
                            .count = "usage"};
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
    lt_reader_close(r);
    assert_null(lt_reader_open_kind(path, LT_KIND_TRACE, NULL, &err));
    assert_non_null(strstr(err.msg, "results file"));
}

/* A scrape sample between results reads back whole, prints as JSON, and a
 * non-finite value is refused. */
static void test_scrape_roundtrip(void **state)
{
    const char *path = tmp_path("scrape.lt.zst");
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_RESULTS, .source = "replay"};
    struct lt_writer *w = lt_writer_open(path, &h, NULL, &err);
    assert_non_null(w);
    struct lt_run run = {.id = 0, .mode = "trace"};
    assert_int_equal(lt_writer_put_run(w, &run, &err), 0);
    struct lt_result res = {.run = 0, .index = 1, .sched = 5};
    assert_int_equal(lt_writer_put_result(w, &res, &err), 0);
    struct lt_scrape_val v[2] = {{"requests_running", 3}, {"kv_cache_usage", 0.25}};
    double le[2] = {0.1, 1}, cum[2] = {4, 9};
    struct lt_scrape_hist hi = {"ttft", 2.5, 10, 2, le, cum};
    struct lt_scrape_val raw = {"vllm:x{a=\"b\"}", 7};
    struct lt_scrape sc = {.run = 0,
                           .t = 250000,
                           .dur = 900,
                           .ep = "http://h/metrics",
                           .server = "vllm",
                           .v = v,
                           .nv = 2,
                           .h = &hi,
                           .nh = 1,
                           .raw = &raw,
                           .nraw = 1};
    assert_int_equal(lt_writer_put_scrape(w, &sc, &err), 0);
    struct lt_scrape bad = {.run = 0, .t = 1, .ep = "x", .err = "timed out"};
    assert_int_equal(lt_writer_put_scrape(w, &bad, &err), 0);
    struct lt_scrape_val nan = {"x", NAN};
    struct lt_scrape inf = {.run = 0, .t = 1, .ep = "x", .v = &nan, .nv = 1};
    assert_int_equal(lt_writer_put_scrape(w, &inf, &err), LT_EINVAL);
    assert_int_equal(lt_writer_put_result(w, &res, &err), 0);
    assert_int_equal(lt_writer_close(w, &err), 0);
    /* ... and a version-1 results file cannot hold them at all. */
    struct lt_writer_opts v1 = {.results_v1 = true};
    struct lt_writer *w1 = lt_writer_open(tmp_path("scrape-v1.lt.zst"), &h, &v1, &err);
    assert_non_null(w1);
    assert_int_equal(lt_writer_put_scrape(w1, &sc, &err), LT_EINVAL);
    assert_non_null(strstr(err.msg, "version 3"));
    assert_int_equal(lt_writer_close(w1, &err), 0);

    struct lt_reader *r = lt_reader_open_kind(path, LT_KIND_RESULTS, NULL, &err);
    assert_non_null(r);
    /* Scrape samples are a kind of value a version-2 reader misreads (as a
     * result without "i"): a file that may hold them says version 3, so an
     * older loadtrace refuses it as newer instead. */
    assert_int_equal(lt_reader_header(r)->version, 3);
    const struct lt_item *it;
    assert_int_equal(lt_reader_next(r, &it, &err), 1);
    assert_int_equal(it->type, LT_ITEM_RUN);
    assert_int_equal(lt_reader_next(r, &it, &err), 1);
    assert_int_equal(it->type, LT_ITEM_RESULT);
    assert_int_equal(lt_reader_next(r, &it, &err), 1);
    assert_int_equal(it->type, LT_ITEM_SCRAPE);
    assert_int_equal(it->scr.t, 250000);
    assert_int_equal(it->scr.dur, 900);
    assert_string_equal(it->scr.ep, "http://h/metrics");
    assert_string_equal(it->scr.server, "vllm");
    assert_null(it->scr.err);
    assert_int_equal(it->scr.nv, 2);
    assert_string_equal(it->scr.v[1].name, "kv_cache_usage");
    assert_true(it->scr.v[1].v == 0.25);
    assert_int_equal(it->scr.nh, 1);
    assert_int_equal(it->scr.h[0].n, 2);
    assert_true(it->scr.h[0].cum[1] == 9 && it->scr.h[0].le[0] == 0.1 && it->scr.h[0].count == 10);
    assert_int_equal(it->scr.nraw, 1);
    assert_string_equal(it->scr.raw[0].name, "vllm:x{a=\"b\"}");
    struct lt_buf b;
    lt_buf_init(&b, 1 << 20);
    assert_int_equal(lt_trace_json_item(&b, it), 0);
    assert_non_null(strstr(b.p, "\"rec\":\"scrape\""));
    assert_non_null(strstr(b.p, "\"h\":{\"ttft\":[2.5,10,0.1,4,1,9]}"));
    lt_buf_release(&b);
    assert_int_equal(lt_reader_next(r, &it, &err), 1);
    assert_int_equal(it->type, LT_ITEM_SCRAPE);
    assert_string_equal(it->scr.err, "timed out");
    assert_null(it->scr.v);
    assert_int_equal(lt_reader_next(r, &it, &err), 1);
    assert_int_equal(it->type, LT_ITEM_RESULT);
    assert_int_equal(lt_reader_next(r, &it, &err), 0);
    lt_reader_close(r);
}

/* A run's self-check (rec "check", written at the run's end) reads back
 * as LT_ITEM_CHECK, figures and flags as written, an absent float as 0;
 * a non-finite figure is refused; the results around it are unchanged. */
static void test_check_roundtrip(void **state)
{
    (void)state;
    const char *path = tmp_path("check.lt.zst");
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_RESULTS, .source = "replay"};
    struct lt_writer *w = lt_writer_open(path, &h, NULL, &err);
    assert_non_null(w);
    struct lt_run run = {.id = 3, .mode = "rate", .rate = 100};
    assert_int_equal(lt_writer_put_run(w, &run, &err), 0);
    struct lt_result res = {.run = 3, .index = 1, .sched = 5};
    assert_int_equal(lt_writer_put_result(w, &res, &err), 0);
    struct lt_check k = {.run = 3,
                         .requests = 10,
                         .sent = 9,
                         .out_tokens = 40,
                         .rate_asked = 100,
                         .rate_got = 6.5,
                         .inflight_got = 1,
                         .cpu_s = 0.25,
                         .wall_s = 1.5,
                         .off = true};
    assert_int_equal(lt_writer_put_check(w, &k, &err), 0);
    struct lt_check bad = {.run = 3, .cpu_s = NAN};
    assert_int_equal(lt_writer_put_check(w, &bad, &err), LT_EINVAL);
    assert_non_null(strstr(err.msg, "cpu_s"));
    assert_int_equal(lt_writer_put_result(w, &res, &err), 0);
    assert_int_equal(lt_writer_close(w, &err), 0);

    struct lt_reader *r = lt_reader_open_kind(path, LT_KIND_RESULTS, NULL, &err);
    assert_non_null(r);
    const struct lt_item *it;
    assert_int_equal(lt_reader_next(r, &it, &err), 1);
    assert_int_equal(it->type, LT_ITEM_RUN);
    assert_int_equal(lt_reader_next(r, &it, &err), 1);
    assert_int_equal(it->type, LT_ITEM_RESULT);
    assert_int_equal(lt_reader_next(r, &it, &err), 1);
    assert_int_equal(it->type, LT_ITEM_CHECK);
    assert_int_equal(it->chk.run, 3);
    assert_int_equal(it->chk.requests, 10);
    assert_int_equal(it->chk.sent, 9);
    assert_int_equal(it->chk.out_tokens, 40);
    assert_true(it->chk.rate_asked == 100 && it->chk.rate_got == 6.5);
    assert_true(it->chk.inflight_asked == 0 && it->chk.inflight_got == 1);
    assert_true(it->chk.cpu_s == 0.25 && it->chk.wall_s == 1.5);
    assert_true(it->chk.off);
    assert_false(it->chk.saturated);
    struct lt_buf b;
    lt_buf_init(&b, 1 << 20);
    assert_int_equal(lt_trace_json_item(&b, it), 0);
    assert_non_null(strstr(b.p, "{\"rec\":\"check\",\"run\":3,\"requests\":10,\"sent\":9,"));
    assert_non_null(strstr(b.p, "\"off\":true"));
    assert_null(strstr(b.p, "saturated"));
    assert_null(strstr(b.p, "inflight_asked"));
    lt_buf_release(&b);
    assert_int_equal(lt_reader_next(r, &it, &err), 1);
    assert_int_equal(it->type, LT_ITEM_RESULT);
    assert_int_equal(lt_reader_next(r, &it, &err), 0);
    lt_reader_close(r);
}

/* A capacity probe's verdict (rec "verdict", written after its results)
 * reads back as LT_ITEM_VERDICT with what was written, an absent figure
 * as 0, and so does the search's answer (rec "answer", LT_ITEM_ANSWER);
 * the run record's keys known at its start (window among them) read back
 * as written; a verdict without its word, an answer without its end, or a
 * non-finite figure, is refused; a copy (lt_writer_put_item) keeps them;
 * the results around them are unchanged. */
static void test_verdict_roundtrip(void **state)
{
    (void)state;
    const char *path = tmp_path("verdict.lt.zst");
    const char *copy = tmp_path("verdict2.lt.zst");
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_RESULTS, .source = "replay"};
    struct lt_writer *w = lt_writer_open(path, &h, NULL, &err);
    assert_non_null(w);
    struct lt_run run = {.id = 2,
                         .mode = "trace",
                         .speed = 1.5,
                         .search = "rate",
                         .engine = "live",
                         .load = 12.5,
                         .slo = "ttft=1s",
                         .attain_target = 0.9,
                         .window = "requests 1-139 of 400, trace time 0.0-6.9 s"};
    assert_int_equal(lt_writer_put_run(w, &run, &err), 0);
    struct lt_result res = {.run = 2, .index = 1, .sched = 5};
    assert_int_equal(lt_writer_put_result(w, &res, &err), 0);
    struct lt_verdict v = {.run = 2,
                           .attain = 0.875,
                           .attain_hi = 0.95,
                           .verdict = "saturated",
                           .why = "requests in flight grew"};
    assert_int_equal(lt_writer_put_verdict(w, &v, &err), 0);
    struct lt_verdict none = {.run = 2, .attain = 0.5};
    assert_int_equal(lt_writer_put_verdict(w, &none, &err), LT_EINVAL);
    struct lt_verdict bad = {.run = 2, .attain_lo = NAN, .verdict = "meets"};
    assert_int_equal(lt_writer_put_verdict(w, &bad, &err), LT_EINVAL);
    assert_non_null(strstr(err.msg, "attain_lo"));
    assert_int_equal(lt_writer_put_result(w, &res, &err), 0);
    struct lt_answer ans = {.end = "max-probes",
                            .engine = "live",
                            .max = 11,
                            .goodput = 9.5,
                            .probes = 3,
                            .wall_s = 12.25,
                            .whole_max = 12};
    assert_int_equal(lt_writer_put_answer(w, &ans, &err), 0);
    assert_int_equal(lt_writer_put_answer(w, &(struct lt_answer){.max = 1}, &err), LT_EINVAL);
    assert_int_equal(lt_writer_close(w, &err), 0);

    for (int pass = 0; pass < 2; pass++) {
        struct lt_reader *r = lt_reader_open_kind(pass ? copy : path, LT_KIND_RESULTS, NULL, &err);
        assert_non_null(r);
        struct lt_writer *cw = pass ? NULL : lt_writer_open(copy, &h, NULL, &err);
        const struct lt_item *it;
        int types[5] = {LT_ITEM_RUN, LT_ITEM_RESULT, LT_ITEM_VERDICT, LT_ITEM_RESULT,
                        LT_ITEM_ANSWER};
        for (int k = 0; k < 5; k++) {
            assert_int_equal(lt_reader_next(r, &it, &err), 1);
            assert_int_equal(it->type, types[k]);
            if (it->type == LT_ITEM_RUN) {
                assert_string_equal(it->run.window, run.window);
                assert_string_equal(it->run.engine, "live");
                assert_true(it->run.load == 12.5 && it->run.attain_target == 0.9);
                assert_null(it->run.verdict);
            }
            if (it->type == LT_ITEM_VERDICT) {
                assert_int_equal(it->vrd.run, 2);
                assert_true(it->vrd.attain == 0.875 && it->vrd.attain_lo == 0 &&
                            it->vrd.attain_hi == 0.95);
                assert_string_equal(it->vrd.verdict, "saturated");
                assert_string_equal(it->vrd.why, "requests in flight grew");
                struct lt_buf b;
                lt_buf_init(&b, 1 << 20);
                assert_int_equal(lt_trace_json_item(&b, it), 0);
                assert_non_null(
                    strstr(b.p, "{\"rec\":\"verdict\",\"run\":2,\"attain\":0.875,"
                                "\"attain_hi\":0.94999999999999996,\"verdict\":\"saturated\","));
                assert_null(strstr(b.p, "attain_lo"));
                lt_buf_release(&b);
            }
            if (it->type == LT_ITEM_ANSWER) {
                assert_string_equal(it->ans.end, "max-probes");
                assert_string_equal(it->ans.engine, "live");
                assert_true(it->ans.max == 11 && it->ans.fail == 0 && it->ans.goodput == 9.5);
                assert_true(it->ans.probes == 3 && it->ans.virtual_probes == 0);
                assert_true(it->ans.wall_s == 12.25 && it->ans.whole_max == 12);
                struct lt_buf b;
                lt_buf_init(&b, 1 << 20);
                assert_int_equal(lt_trace_json_item(&b, it), 0);
                assert_non_null(strstr(b.p, "{\"rec\":\"answer\",\"end\":\"max-probes\","
                                            "\"engine\":\"live\",\"max\":11,"));
                assert_null(strstr(b.p, "\"fail\""));
                lt_buf_release(&b);
            }
            if (cw)
                assert_int_equal(lt_writer_put_item(cw, it, &err), 0);
        }
        assert_int_equal(lt_reader_next(r, &it, &err), 0);
        lt_reader_close(r);
        if (cw)
            assert_int_equal(lt_writer_close(cw, &err), 0);
    }
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
    lt_reader_close(r);
    assert_int_equal(lt_writer_close(w, &err), 0);

    r = lt_reader_open(copy, NULL, &err);
    assert_int_equal(lt_reader_next(r, &it, &err), 1);
    struct lt_buf js;
    lt_buf_init(&js, 1 << 20);
    assert_int_equal(lt_trace_json_record(&js, &it->rec), 0);
    assert_string_equal(js.p, "{\"t\":9,\"in\":4,\"future_key\":[-3,\"x\"]}");
    lt_buf_release(&js);
    lt_reader_close(r);
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

/* ---- result blocks (docs/trace-format.md §2.6) ------------------------- */

/* Result number i of a set that touches every field, absent ones
 * included: extreme values, negative times, chunks, repeated and distinct
 * strings (more than the writer's string table holds), warm-up. */
/* a + b modulo 2^64: the extreme times below must not overflow here. */
static int64_t wrap_add(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

static struct lt_result block_result(int i, struct lt_chunk *ch, char *sbuf)
{
    struct lt_result r = {
        .run = (uint32_t)(i % 3), .index = (uint64_t)i * 7, .sched = (int64_t)i * 1000 - 5000};
    if (i == 5)
        r.sched = INT64_MIN, r.index = UINT64_MAX;
    if (i == 7)
        r.sched = INT64_MAX;
    if (i % 4 != 1) {
        r.has |= LT_RHAS_SENT;
        r.sent = wrap_add(r.sched, (i % 9) - 4); /* sometimes before sched */
    }
    if (i % 5 != 2) {
        r.has |= LT_RHAS_FIRST_BYTE | LT_RHAS_FIRST_TOKEN | LT_RHAS_END;
        r.first_byte = wrap_add(r.sched, 100 + i);
        r.first_token = wrap_add(r.first_byte, 50);
        r.end = i == 11 ? INT64_MIN : wrap_add(r.first_token, 100000 + i);
    }
    if (i % 3 == 0) {
        r.has |= LT_RHAS_FIRST_CONTENT;
        r.first_content = wrap_add(r.first_token, 7);
    }
    if (i % 6 == 0) {
        int n = i % 12 == 0 ? 0 : 1 + i % 4; /* an empty chunk list too */
        int64_t t = (r.has & LT_RHAS_SENT) ? r.sent : r.sched;
        for (int k = 0; k < n; k++)
            ch[k] = (struct lt_chunk){t = wrap_add(t, 10 * k - 5), (uint32_t)(k + 1)};
        r.has |= LT_RHAS_CHUNKS;
        r.chunks = ch;
        r.n_chunks = (uint32_t)n;
    }
    static const uint32_t bits[] = {LT_RHAS_IN,     LT_RHAS_OUT,     LT_RHAS_REASONING,
                                    LT_RHAS_CACHED, LT_RHAS_WANT_IN, LT_RHAS_WANT_OUT};
    uint32_t *vals[] = {&r.in, &r.out, &r.reasoning, &r.cached, &r.want_in, &r.want_out};
    for (int k = 0; k < 6; k++) {
        if ((i + k) % 4 != 0) {
            r.has |= bits[k];
            *vals[k] = i == 8 ? UINT32_MAX : (uint32_t)(i * (k + 1));
        }
    }
    if (i % 7 != 3) {
        r.has |= LT_RHAS_STATUS;
        r.status = i == 9 ? INT32_MIN : i % 10 == 0 ? 500 : 200;
    }
    if (i % 10 == 0)
        r.err = i % 20 == 0 ? "http" : "timeout";
    if (i % 2) {
        snprintf(sbuf, 64, "reason-%d", i % 50); /* 50 distinct: past the table */
        r.finish = sbuf;
    } else if (i % 4 == 0) {
        r.finish = i % 8 ? "" : "stop";
    }
    r.count = i % 3 ? "usage" : "chunks";
    r.warmup = i < 4;
    r.cancelled = i % 7 == 3;
    return r;
}

/* The same results written with blocks and as plain maps: the reader
 * gives back every field, and both files print the same JSON lines. */
static void test_blocks_roundtrip(void **state)
{
    enum { N = 2000 };
    const char *paths[2] = {tmp_path("blocks.lt.zst"), tmp_path("plain.lt.zst")};
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_RESULTS, .source = "test"};
    for (int v1 = 0; v1 < 2; v1++) {
        struct lt_writer_opts o = {.frame_records = 300, .results_v1 = v1};
        struct lt_writer *w = lt_writer_open(paths[v1], &h, &o, &err);
        assert_non_null(w);
        for (int i = 0; i < N; i++) {
            if (i % 700 == 0) { /* runs between results */
                struct lt_run run = {.id = (uint32_t)i, .mode = "rate", .rate = 2.5};
                assert_int_equal(lt_writer_put_run(w, &run, &err), 0);
            }
            struct lt_chunk ch[8];
            char sbuf[64];
            struct lt_result r = block_result(i, ch, sbuf);
            static const uint8_t x[] = {0xa1, 'x', 0x01}; /* "x": 1 */
            if (i % 333 == 0) /* unknown keys: written as a map of its own */
                r.extra = (struct lt_extra){x, sizeof x, 1};
            assert_int_equal(lt_writer_put_result(w, &r, &err), 0);
        }
        assert_int_equal(lt_writer_count(w), N + 3);
        assert_int_equal(lt_writer_close(w, &err), 0);
    }
    struct lt_reader *rd[2];
    for (int k = 0; k < 2; k++) {
        rd[k] = lt_reader_open(paths[k], NULL, &err);
        assert_non_null(rd[k]);
        assert_int_equal(lt_reader_header(rd[k])->version, k == 0 ? 3 : 1);
    }
    struct lt_buf js[2];
    lt_buf_init(&js[0], 1 << 20);
    lt_buf_init(&js[1], 1 << 20);
    int i = 0, values = 0;
    for (;;) {
        const struct lt_item *it[2];
        int rc0 = lt_reader_next(rd[0], &it[0], &err);
        int rc1 = lt_reader_next(rd[1], &it[1], &err);
        assert_int_equal(rc0, rc1);
        if (rc0 != 1)
            break;
        for (int k = 0; k < 2; k++) {
            lt_buf_reset(&js[k]);
            assert_int_equal(lt_trace_json_item(&js[k], it[k]), 0);
        }
        assert_string_equal(js[0].p, js[1].p);
        assert_int_equal(it[0]->index, it[1]->index);
        assert_int_equal(it[0]->index, values++);
        assert_int_equal(it[0]->type, it[1]->type);
        if (it[0]->type == LT_ITEM_RUN)
            continue;
        struct lt_chunk ch[8];
        char sbuf[64];
        struct lt_result want = block_result(i, ch, sbuf);
        const struct lt_result *got = &it[0]->res;
        assert_int_equal(got->has, want.has);
        assert_true(got->index == want.index);
        assert_int_equal(got->run, want.run);
        assert_true(got->sched == want.sched);
        assert_true(got->sent == (want.has & LT_RHAS_SENT ? want.sent : 0));
        assert_true(got->first_byte == want.first_byte);
        assert_true(got->first_token == want.first_token);
        assert_true(got->first_content == want.first_content);
        assert_true(got->end == want.end);
        assert_int_equal(got->n_chunks, want.n_chunks);
        for (uint32_t k = 0; k < want.n_chunks; k++) {
            assert_true(got->chunks[k].t == want.chunks[k].t);
            assert_int_equal(got->chunks[k].tokens, want.chunks[k].tokens);
        }
        assert_int_equal(got->in, want.in);
        assert_int_equal(got->out, want.out);
        assert_int_equal(got->reasoning, want.reasoning);
        assert_int_equal(got->cached, want.cached);
        assert_int_equal(got->want_in, want.want_in);
        assert_int_equal(got->want_out, want.want_out);
        assert_int_equal(got->status, want.status);
        for (int k = 0; k < 3; k++) {
            const char *g = k == 0 ? got->err : k == 1 ? got->finish : got->count;
            const char *e = k == 0 ? want.err : k == 1 ? want.finish : want.count;
            if (e)
                assert_string_equal(g, e);
            else
                assert_null(g);
        }
        assert_int_equal(got->warmup, want.warmup);
        assert_int_equal(got->cancelled, want.cancelled);
        assert_int_equal(got->extra.n, i % 333 == 0);
        /* Results of a block have no bytes of their own. */
        assert_true(i % 333 == 0 ? it[0]->raw != NULL : it[0]->raw == NULL);
        i++;
    }
    assert_int_equal(i, N);
    lt_buf_release(&js[0]);
    lt_buf_release(&js[1]);
    for (int k = 0; k < 2; k++)
        lt_reader_close(rd[k]);
    /* Blocks are what make results small. */
    assert_true(file_size(paths[0]) * 3 < file_size(paths[1]) * 2);
}

/* A block packed by hand: the given columns (name, then its elements as
 * raw msgpack, count given), n, in a frame after a results header; then a
 * plain result. */
struct col {
    const char *key;
    uint32_t count;
    const char *bytes; /* msgpack elements */
    size_t len;
};

static void pack_results_header(msgpack_sbuffer *sb)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 3);
    pk_str(&pk, "format");
    pk_str(&pk, "loadtrace");
    pk_str(&pk, "version");
    msgpack_pack_uint32(&pk, 2);
    pk_str(&pk, "kind");
    pk_str(&pk, "results");
}

/* With g_bytes, the block states its columns' sizes (`bytes`, as the
 * writer does; after the first g_walked columns, which then have none),
 * the column g_lie_col's off by g_lie, and g_extra_sizes
 * more sizes than keys (negative: fewer). A block without sizes is no
 * longer read (docs/trace-format.md 2.6). */
static bool g_bytes = true;
static int g_lie_col = -1, g_lie, g_extra_sizes, g_walked;

static size_t array_head(uint32_t n)
{
    return n <= 15 ? 1 : n <= 0xffff ? 3 : 5;
}

/* The block, then a plain result, into sb. */
static void pack_block(msgpack_sbuffer *sb, uint64_t n, const struct col *cols, int ncols,
                       bool rec_last)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 2 + ncols + g_bytes);
    if (!rec_last) {
        pk_str(&pk, "rec");
        pk_str(&pk, "block");
    }
    pk_str(&pk, "n");
    msgpack_pack_uint64(&pk, n);
    for (int c = 0; c < ncols; c++) {
        if (g_bytes && c == g_walked) {
            int nsizes = ncols - g_walked + (rec_last ? 1 : 0) + g_extra_sizes;
            pk_str(&pk, "bytes");
            msgpack_pack_array(&pk, (uint32_t)nsizes);
            for (int k = c; k < c + nsizes; k++) {
                size_t sz = k >= ncols ? 6 /* "block" */ : array_head(cols[k].count) + cols[k].len;
                msgpack_pack_uint64(&pk, sz + (uint64_t)(k == g_lie_col ? g_lie : 0));
            }
        }
        pk_str(&pk, cols[c].key);
        msgpack_pack_array(&pk, cols[c].count);
        msgpack_sbuffer_write(sb, cols[c].bytes, cols[c].len);
    }
    if (rec_last) {
        pk_str(&pk, "rec");
        pk_str(&pk, "block");
    }
    /* a plain result after the block */
    msgpack_pack_map(&pk, 3);
    pk_str(&pk, "i");
    msgpack_pack_uint32(&pk, 99);
    pk_str(&pk, "run");
    msgpack_pack_uint32(&pk, 0);
    pk_str(&pk, "sched");
    msgpack_pack_uint32(&pk, 5);
}

static void write_block_file(const char *path, uint64_t n, const struct col *cols, int ncols,
                             bool rec_last)
{
    msgpack_sbuffer sb[2];
    msgpack_sbuffer_init(&sb[0]);
    msgpack_sbuffer_init(&sb[1]);
    pack_results_header(&sb[0]);
    pack_block(&sb[1], n, cols, ncols, rec_last);
    write_frames(path, sb, 2);
    msgpack_sbuffer_destroy(&sb[0]);
    msgpack_sbuffer_destroy(&sb[1]);
}

#define COL(k, n, b)                                                                               \
    {                                                                                              \
        k, n, b, sizeof b - 1                                                                      \
    } /* b: a string literal */

/* Read a hand-made block file strictly and with salvage: how many results
 * came out before the error (and which error), and with salvage. */
static void expect_block(const char *name, uint64_t n, const struct col *cols, int ncols,
                         int want_rc, int want_before, const char *want_msg, int want_salvaged)
{
    const char *path = tmp_path(name);
    write_block_file(path, n, cols, ncols, false);
    struct lt_err err = {0};
    int got;
    int rc = read_all(path, NULL, &got, &err);
    if (rc != want_rc || got != want_before || (want_msg && !strstr(err.msg, want_msg)))
        fail_msg("%s: rc %d, %d results before the error, message: %s", name, rc, got, err.msg);
    struct lt_reader_opts ro = {.salvage = true};
    rc = read_all(path, &ro, &got, &err);
    if (rc != 0 || got != want_salvaged)
        fail_msg("%s with salvage: rc %d, %d results (%s)", name, rc, got, err.msg);
}

static void blocks_bad(void)
{
    /* A good block of 3 (then the plain result): 4 results. */
    struct col good[] = {COL("i", 3, "\x01\x01\x01"), COL("run", 3, "\x00\x00\x00"),
                         COL("sched", 3, "\x0a\x0a\x0a"), COL("out", 3, "\x05\xc0\x07"),
                         COL("finish", 3, "\xa4stop\x00\xc0")};
    expect_block("blk-good.lt.zst", 3, good, 5, 0, 4, NULL, 4);
    /* The same with "rec" last, which the reader finds on its slower path. */
    const char *path = tmp_path("blk-reclast.lt.zst");
    write_block_file(path, 3, good, 5, true);
    struct lt_err err = {0};
    struct lt_reader *r = lt_reader_open(path, NULL, &err);
    assert_non_null(r);
    const struct lt_item *it;
    int64_t sched[3] = {10, 20, 30};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(lt_reader_next(r, &it, &err), 1);
        assert_int_equal(it->index, k);
        assert_int_equal(it->res.index, k + 1);
        assert_int_equal(it->res.sched, sched[k]);
        assert_int_equal(!!(it->res.has & LT_RHAS_OUT), k != 1);
        if (k == 2)
            assert_null(it->res.finish);
        else
            assert_string_equal(it->res.finish, "stop"); /* k = 1: element 0's string */
    }
    assert_int_equal(lt_reader_next(r, &it, &err), 1);
    assert_int_equal(it->index, 3);
    assert_int_equal(it->res.index, 99);
    assert_int_equal(lt_reader_next(r, &it, &err), 0);
    lt_reader_close(r);

    /* References to earlier strings in any integer encoding (int 8,
     * uint 64), and a wide string (str 8). */
    struct col refs[] = {
        COL("i", 4, "\x01\x01\x01\x01"), COL("run", 4, "\x00\x00\x00\x00"),
        COL("sched", 4, "\x0a\x0a\x0a\x0a"),
        COL("count", 4, "\xd9\x05usage\xd0\x00\xcf\x00\x00\x00\x00\x00\x00\x00\x00\x00"),
        COL("out", 4, "\xd0\x05\xd3\x00\x00\x00\x00\x00\x00\x00\x06\x07\x08")};
    path = tmp_path("blk-refs.lt.zst");
    write_block_file(path, 4, refs, 5, false);
    r = lt_reader_open(path, NULL, &err);
    assert_non_null(r);
    for (int k = 0; k < 4; k++) {
        assert_int_equal(lt_reader_next(r, &it, &err), 1);
        assert_string_equal(it->res.count, "usage");
        assert_int_equal(it->res.out, 5 + k);
    }
    assert_int_equal(lt_reader_next(r, &it, &err), 1); /* the plain result */
    assert_int_equal(lt_reader_next(r, &it, &err), 0);
    lt_reader_close(r);

    /* A column shorter than n: nothing of the block is trusted. */
    struct col short_col[] = {COL("i", 3, "\x01\x01\x01"), COL("run", 3, "\x00\x00\x00"),
                              COL("sched", 3, "\x0a\x0a\x0a"), COL("sent", 2, "\x01\x02")};
    expect_block("blk-short.lt.zst", 3, short_col, 4, LT_EFORMAT, 0, "record 0 (frame at byte", 1);
    expect_block("blk-short2.lt.zst", 3, short_col, 4, LT_EFORMAT, 0,
                 "key \"sent\" holds 2 values, not n = 3", 1);
    /* A wrong type at result 2: results 0 and 1 come out first. */
    struct col bad_type[] = {COL("i", 4, "\x01\x01\x01\x01"), COL("run", 4, "\x00\x00\x00\x00"),
                             COL("sched", 4, "\x0a\x0a\x0a\x0a"),
                             COL("out", 4, "\x05\x06\xa1x\x07")};
    expect_block("blk-type.lt.zst", 4, bad_type, 4, LT_EFORMAT, 2, "record 2", 3);
    expect_block("blk-type2.lt.zst", 4, bad_type, 4, LT_EFORMAT, 2, "key \"out\" must hold", 3);
    /* A string column naming a string that is not before it. */
    struct col bad_ref[] = {COL("i", 2, "\x01\x01"), COL("run", 2, "\x00\x00"),
                            COL("sched", 2, "\x0a\x0a"), COL("count", 2, "\x00\xa5usage")};
    expect_block("blk-ref.lt.zst", 2, bad_ref, 4, LT_EFORMAT, 0, "key \"count\"", 1);
    /* Missing sched; n missing is the same fault. */
    struct col no_sched[] = {COL("i", 1, "\x01"), COL("run", 1, "\x00")};
    expect_block("blk-nosched.lt.zst", 1, no_sched, 2, LT_EFORMAT, 0, "\"sched\" is missing", 1);
    /* Chunks that are not pairs, at result 1. */
    struct col bad_chunks[] = {COL("i", 2, "\x01\x01"), COL("run", 2, "\x00\x00"),
                               COL("sched", 2, "\x0a\x0a"),
                               COL("chunks", 2, "\x92\x05\x01\x93\x05\x01\x05")};
    expect_block("blk-chunks.lt.zst", 2, bad_chunks, 4, LT_EFORMAT, 1, "[dt, tokens] pairs", 2);
    /* A hostile n: larger than the array limit, columns of 1. */
    struct col one[] = {COL("i", 1, "\x01"), COL("run", 1, "\x00"), COL("sched", 1, "\x0a")};
    expect_block("blk-hugen.lt.zst", UINT64_C(4000000000), one, 3, LT_EFORMAT, 0, "\"n\"", 1);
    /* A column declaring 2^32 - 1 elements: a limit, before any allocation;
     * the rest of the frame cannot be delimited (salvage drops it). */
    struct col huge[] = {COL("i", UINT32_MAX, "\x01")};
    expect_block("blk-hugecol.lt.zst", 1, huge, 1, LT_ELIMIT, 0, "exceeds a reader limit", 0);
    /* Cut short: a column runs past the end of the frame. The sizes
     * delimit the block: the first two results come out. */
    struct col cut3[] = {COL("i", 5, "\x01\x01"), COL("run", 5, "\x00\x00\x00\x00\x00"),
                         COL("sched", 5, "\x0a\x0a\x0a\x0a\x0a")};
    expect_block("blk-cut3.lt.zst", 5, cut3, 3, LT_EFORMAT, 2, "\"i\" runs past the size", 3);
}

/* Every case above (the columns are found by size, then checked row by
 * row); then what `bytes` itself can get wrong, and a block without it. */
static void test_blocks_bad(void **state)
{
    (void)state;
    blocks_bad();
    struct col good[] = {COL("i", 3, "\x01\x01\x01"), COL("run", 3, "\x00\x00\x00"),
                         COL("sched", 3, "\x0a\x0a\x0a"), COL("out", 3, "\x05\xc0\x07"),
                         COL("finish", 3, "\xa4stop\x00\xc0")};
    /* A column's elements end before its size: bytes that belong to no
     * result, so the whole block is wrong. */
    struct col stray[] = {COL("i", 3, "\x01\x01\x01"), COL("run", 3, "\x00\x00\x00"),
                          COL("sched", 3, "\x0a\x0a\x0a"), COL("out", 3, "\x05\xc0\x07\x08")};
    expect_block("blk-stray.lt.zst", 3, stray, 4, LT_EFORMAT, 0,
                 "key \"out\" has bytes past its n elements", 1);
    /* The last column's size one short: its last element runs past it,
     * so the results before it come out. */
    g_lie_col = 4;
    g_lie = -1;
    /* (the header frame is 53 bytes: 49 and its checksum, which the
     * reader requires) */
    expect_block("blk-lie.lt.zst", 3, good, 5, LT_EFORMAT, 2,
                 "record 2 (frame at byte 53): key \"finish\" runs past the size", 3);
    /* One too long: past the end of the frame, which cannot be delimited. */
    g_lie = 1000;
    expect_block("blk-lie2.lt.zst", 3, good, 5, LT_EFORMAT, 0, "cut short", 0);
    g_lie_col = -1;
    g_lie = 0;
    g_extra_sizes = 1;
    expect_block("blk-more.lt.zst", 3, good, 5, LT_EFORMAT, 0, "gives more sizes than keys", 1);
    g_extra_sizes = -1;
    expect_block("blk-fewer.lt.zst", 3, good, 5, LT_EFORMAT, 0, "gives fewer sizes than keys", 1);
    g_extra_sizes = 0;
    /* Columns before `bytes` have no size: the block is wrong as a
     * whole (blocks whose columns must be walked are no longer read). */
    struct col mixed[] = {COL("i", 4, "\x01\x01\x01\x01"), COL("run", 4, "\x00\x00\x00\x00"),
                          COL("sched", 4, "\x0a\x0a\x0a\x0a"), COL("out", 4, "\x05\x06\x07\x08"),
                          COL("finish", 4, "\xa4stop\x00\x00\x00")};
    g_walked = 4;
    expect_block("blk-mixed.lt.zst", 4, mixed, 5, LT_EFORMAT, 0, "key \"bytes\" is missing", 1);
    g_walked = 0;
    /* No `bytes` at all: the same. */
    g_bytes = false;
    expect_block("blk-nobytes.lt.zst", 4, mixed, 5, LT_EFORMAT, 0,
                 "blocks without column sizes are no longer read", 1);
    g_bytes = true;
    /* No results: a sized column still ends where its size says. */
    struct col none[] = {COL("i", 0, ""), COL("run", 0, ""), COL("sched", 0, "\xc0")};
    expect_block("blk-n0.lt.zst", 0, none, 3, LT_EFORMAT, 0, "key \"sched\" has bytes past", 1);
    /* A second `bytes` after the sizes ran out is a key without a size. */
    struct col twice[] = {COL("i", 1, "\x01"), COL("run", 1, "\x00"), COL("sched", 1, "\x0a"),
                          COL("bytes", 1, "\x05")};
    g_extra_sizes = -1;
    expect_block("blk-bytes2.lt.zst", 1, twice, 4, LT_EFORMAT, 0, "gives fewer sizes", 1);
    g_extra_sizes = 0;
}

/* A limit passed in a column found by size fails the whole block: no
 * result of it is handed out. */
static void test_blocks_limit_sized(void **state)
{
    (void)state;
    struct col cols[] = {COL("i", 3, "\x01\x01\x01"), COL("run", 3, "\x00\x00\x00"),
                         COL("sched", 3, "\x0a\x0a\x0a"),
                         COL("chunks", 3,
                             "\xc0\xc0\xdc\x00\x14\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01"
                             "\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01")};
    struct lt_reader_opts ro = {.max_array = 16};
    { /* with `bytes` (blocks without it are no longer read) */
        const int b = 1;
        const char *path = tmp_path("blk-limit-b.lt.zst");
        write_block_file(path, 3, cols, 4, false);
        struct lt_err err = {0};
        int got;
        int rc = read_all(path, &ro, &got, &err);
        if (rc != LT_ELIMIT || got != 0 || !strstr(err.msg, "limit"))
            fail_msg("bytes %d: rc %d, %d results: %s", b, rc, got, err.msg);
        /* within the limits, the block reads whole */
        rc = read_all(path, NULL, &got, &err);
        if (rc != 0 || got != 4)
            fail_msg("bytes %d, default limits: rc %d, %d results: %s", b, rc, got, err.msg);
    }
}

/* Compress each buffer as a frame, one after another, into out. */
static size_t frames_in_memory(const msgpack_sbuffer *bufs, int n, uint8_t *out, size_t cap)
{
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        size_t zn = zframe(out + len, cap - len, bufs[i].data, bufs[i].size, 1);
        assert_false(ZSTD_isError(zn));
        len += zn;
    }
    return len;
}

/* Every byte of a block that uses every kind of column, replaced in turn
 * by values chosen to break lengths and types: reading, strictly and with salvage, and printing
 * every result as JSON must stay inside the block (ASan checks this in CI), and never hand out more
 * results than there are. */
static void test_blocks_mutated(void **state)
{
    (void)state;
    struct col all[] = {
        COL("i", 3, "\x01\x01\x01"),
        COL("run", 3, "\x00\x00\x00"),
        COL("sched", 3, "\xcd\x01\x00\xd0\xf0\x0a"),
        COL("sent", 3, "\x05\xc0\xcc\xc8"),
        COL("chunks", 3, "\x94\x01\x02\x03\x04\xc0\x92\xcd\x01\x00\x01"),
        COL("out", 3, "\x05\xc0\xce\x00\x01\x00\x00"),
        COL("status", 3, "\xcc\xc8\xd1\xff\x00\xc0"),
        COL("finish", 3, "\xa4stop\x00\xa6length"),
        COL("warmup", 3, "\xc2\xc3\xc0"),
    };
    static const uint8_t with[] = {0x00, 0x01, 0x7f, 0x80, 0x90, 0xa0, 0xc0, 0xc1, 0xc3, 0xcc,
                                   0xcd, 0xce, 0xcf, 0xd0, 0xd3, 0xd9, 0xdc, 0xdd, 0xde, 0xff};
    uint8_t *z = malloc(1 << 16);
    assert_non_null(z);
    { /* with `bytes` (blocks without it are no longer read) */
        const int b = 1;
        msgpack_sbuffer sb[2];
        msgpack_sbuffer_init(&sb[0]);
        msgpack_sbuffer_init(&sb[1]);
        pack_results_header(&sb[0]);
        pack_block(&sb[1], 3, all, (int)(sizeof all / sizeof all[0]), false);
        size_t len = sb[1].size;
        /* the good block first: 3 results and the plain one */
        size_t zn = frames_in_memory(sb, 2, z, 1 << 16);
        struct lt_err err = {0};
        struct lt_reader *r = lt_reader_open_mem(z, zn, NULL, &err);
        assert_non_null(r);
        const struct lt_item *it;
        int got = 0;
        while (lt_reader_next(r, &it, &err) == 1)
            got++;
        if (got != 4)
            fail_msg("the good block (bytes %d) gave %d results: %s", b, got, err.msg);
        lt_reader_close(r);
        struct lt_buf js;
        lt_buf_init(&js, 1 << 20);
        for (size_t at = 0; at < len; at++) {
            uint8_t keep = (uint8_t)sb[1].data[at];
            for (size_t v = 0; v < sizeof with; v++) {
                sb[1].data[at] = (char)with[v];
                zn = frames_in_memory(sb, 2, z, 1 << 16);
                for (int salvage = 0; salvage < 2; salvage++) {
                    struct lt_reader_opts o = {.salvage = salvage, .max_array = 64};
                    r = lt_reader_open_mem(z, zn, &o, &err);
                    assert_non_null(r);
                    got = 0;
                    while (lt_reader_next(r, &it, &err) == 1) {
                        lt_buf_reset(&js);
                        lt_trace_json_item(&js, it);
                        got++;
                    }
                    if (got > 4)
                        fail_msg("byte %zu set to 0x%02x: %d results", at, with[v], got);
                    lt_reader_close(r);
                }
            }
            sb[1].data[at] = (char)keep;
        }
        lt_buf_release(&js);
        msgpack_sbuffer_destroy(&sb[0]);
        msgpack_sbuffer_destroy(&sb[1]);
    }
    free(z);
}

/* A damaged frame of a block-encoded file: salvage keeps every other
 * frame's results, and strict reading stops at the damaged frame. */
static void test_blocks_salvage(void **state)
{
    const char *path = tmp_path("blk-salvage.lt.zst");
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_RESULTS, .source = "test"};
    struct lt_writer_opts o = {.frame_records = 100};
    struct lt_writer *w = lt_writer_open(path, &h, &o, &err);
    assert_non_null(w);
    for (int i = 0; i < 1000; i++) {
        struct lt_result r = {.index = (uint64_t)i, .sched = i, .has = LT_RHAS_OUT, .out = 1};
        assert_int_equal(lt_writer_put_result(w, &r, &err), 0);
    }
    assert_int_equal(lt_writer_close(w, &err), 0);
    size_t len;
    unsigned char *p = slurp(path, &len);
    size_t offs[64];
    assert_int_equal(frame_offsets(p, len, offs, 64), 11); /* header + 10 blocks */
    size_t at = offs[3] + (offs[4] - offs[3]) / 2;
    p[at] ^= 0x5a;
    p[at + 1] ^= 0xa5;
    const char *cpath = tmp_path("blk-salvage2.lt.zst");
    spit(cpath, p, len);
    int n;
    assert_true(read_all(cpath, NULL, &n, &err) < 0);
    assert_int_equal(n, 200);
    struct lt_reader_opts ro = {.salvage = true};
    struct lt_reader *r = lt_reader_open(cpath, &ro, &err);
    assert_non_null(r);
    const struct lt_item *it;
    int64_t sum = 0;
    n = 0;
    int rc;
    while ((rc = lt_reader_next(r, &it, &err)) == 1)
        n++, sum += (int64_t)it->res.index;
    assert_int_equal(rc, 0);
    assert_int_equal(n, 900);
    assert_int_equal(sum, 999 * 1000 / 2 - (200 + 299) * 100 / 2); /* 200..299 lost */
    lt_reader_close(r);
    free(p);
}

/* A frame without a content checksum is refused, since what it holds
 * cannot be verified; salvage skips it. */
static void test_no_checksum(void **state)
{
    const char *path = tmp_path("nosum.lt.zst");
    struct lt_header h = {.kind = LT_KIND_TRACE, .source = "test"};
    struct lt_writer_opts wo = {.frame_records = 1};
    struct lt_err err = {0};
    struct lt_writer *w = lt_writer_open(path, &h, &wo, &err);
    assert_non_null(w);
    for (int i = 0; i < 3; i++)
        assert_int_equal(lt_writer_put_record(w, &(struct lt_record){.t = i}, &err), 0);
    assert_int_equal(lt_writer_close(w, &err), 0);
    /* frame 2 (record 1) compressed again, without its checksum */
    static uint8_t in[4096], out[4096], raw[4096];
    FILE *f = fopen(path, "rb");
    size_t n = fread(in, 1, sizeof in, f), pos = 0, o = 0;
    fclose(f);
    for (int k = 0; pos < n; k++) {
        size_t fs = ZSTD_findFrameCompressedSize(in + pos, n - pos);
        assert_false(ZSTD_isError(fs));
        if (k == 2) {
            size_t d = ZSTD_decompress(raw, sizeof raw, in + pos, fs);
            assert_false(ZSTD_isError(d));
            size_t z = ZSTD_compress(out + o, sizeof out - o, raw, d, 3);
            assert_false(ZSTD_isError(z));
            o += z;
        } else {
            memcpy(out + o, in + pos, fs);
            o += fs;
        }
        pos += fs;
    }
    f = fopen(path, "wb");
    fwrite(out, 1, o, f);
    fclose(f);
    int got;
    assert_int_equal(read_all(path, NULL, &got, &err), LT_EFORMAT);
    assert_int_equal(got, 1);
    assert_non_null(strstr(err.msg, "has no content checksum"));
    struct lt_reader_opts ro = {.salvage = true};
    assert_int_equal(read_all(path, &ro, &got, &err), 0);
    assert_int_equal(got, 2);
}

/* The writer refuses what the reader would, and a run whose rate or speed
 * is not a number; what it wrote reads back. */
static void test_writer_limits(void **state)
{
    const char *path = tmp_path("limits.lt.zst");
    struct lt_header h = {.kind = LT_KIND_TRACE, .source = "test"};
    struct lt_err err = {0};
    struct lt_writer *w = lt_writer_open(path, &h, NULL, &err);
    assert_non_null(w);
    /* an unknown key nested 33 deep with the record's map: [[...[1]...]] */
    static uint8_t x[64];
    size_t k = 0;
    x[k++] = 0xa1, x[k++] = 'x';
    for (int i = 0; i < 32; i++)
        x[k++] = 0x91;
    x[k++] = 0x01;
    struct lt_record r = {.t = 1, .extra = {x, k, 1}};
    assert_int_equal(lt_writer_put_record(w, &r, &err), LT_ELIMIT);
    assert_non_null(strstr(err.msg, "past a reader limit"));
    x[k - 2] = 0x01; /* 31 arrays: as deep as the reader goes */
    r.extra.len = k - 1;
    assert_int_equal(lt_writer_put_record(w, &r, &err), 0);
    uint32_t *calls = calloc(1000001, sizeof *calls);
    struct lt_record c = {.t = 2, .has = LT_HAS_CALLS, .n_calls = 1000001, .calls = calls};
    assert_int_equal(lt_writer_put_record(w, &c, &err), LT_ELIMIT);
    assert_non_null(strstr(err.msg, "more than 1,000,000 elements"));
    c.n_calls = 1000000;
    assert_int_equal(lt_writer_put_record(w, &c, &err), 0);
    free(calls);
    size_t big = (16u << 20) + 1;
    char *text = calloc(1, big);
    struct lt_record t = {.t = 3, .text = text, .text_len = big};
    assert_int_equal(lt_writer_put_record(w, &t, &err), LT_ELIMIT);
    assert_non_null(strstr(err.msg, "larger than 16 MiB"));
    free(text);
    assert_int_equal(lt_writer_put_record(w, &(struct lt_record){.t = 4}, &err), 0);
    assert_int_equal(lt_writer_close(w, &err), 0);
    int got;
    if (read_all(path, NULL, &got, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(got, 3);

    h.kind = LT_KIND_RESULTS;
    w = lt_writer_open(path, &h, NULL, &err);
    assert_non_null(w);
    struct lt_run run = {.id = 1, .mode = "rate", .rate = NAN};
    assert_int_equal(lt_writer_put_run(w, &run, &err), LT_EINVAL);
    assert_non_null(strstr(err.msg, "run 1: rate nan is not a finite number"));
    run.rate = 2, run.speed = INFINITY;
    assert_int_equal(lt_writer_put_run(w, &run, &err), LT_EINVAL);
    run.speed = 0;
    assert_int_equal(lt_writer_put_run(w, &run, &err), 0);
    assert_int_equal(lt_writer_close(w, &err), 0);
    assert_int_equal(read_all(path, NULL, &got, &err), 0);
    assert_int_equal(got, 1);
}

/* lt_extra_get_int: integers found by key past values of every other kind;
 * absent keys, non-integers and integers above int64 are not found. */
/* The one recorder's result keys read back as written: "ctok" ("usage"
 * or "one"), "thin", "retries", the media parts' counts and tokens as
 * the hand-built parts say (two images of 100 and 250 tokens, an audio
 * clip of 40 and a video of 700), "inputs", "replica", "failover_from";
 * a result with none of them has no extra. */
static void test_result_keys(void **state)
{
    (void)state;
    struct lt_media parts[4] = {
        {.kind = LT_MEDIA_IMAGE, .tokens = 100},
        {.kind = LT_MEDIA_AUDIO, .tokens = 40},
        {.kind = LT_MEDIA_IMAGE, .tokens = 250},
        {.kind = LT_MEDIA_VIDEO, .tokens = 700},
    };
    struct lt_buf b;
    lt_buf_init(&b, 1 << 12);
    struct lt_extra x;
    char v[16];
    int64_t k = 0;
    for (int usage = 0; usage < 2; usage++) {
        struct lt_result_keys keys = {.ctok = usage ? LT_CTOK_USAGE : LT_CTOK_ONE,
                                      .thin = 3,
                                      .retries = 2,
                                      .media = parts,
                                      .n_media = 4,
                                      .inputs = 5,
                                      .has_replica = true,
                                      .replica = 200,
                                      .failed_over = true,
                                      .failover_from = 1};
        assert_int_equal(lt_results_keys(&keys, &b, &x), 0);
        assert_int_equal(x.n, 11);
        assert_true(lt_extra_get_str(&x, "ctok", v, sizeof v));
        assert_string_equal(v, usage ? "usage" : "one");
        const struct {
            const char *key;
            int64_t want;
        } ints[] = {{"thin", 3},      {"retries", 2},      {"img", 2},      {"img_tok", 350},
                    {"aud", 1},       {"vid", 1},          {"av_tok", 740}, {"inputs", 5},
                    {"replica", 200}, {"failover_from", 1}};
        for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
            assert_true(lt_extra_get_int(&x, ints[i].key, &k));
            assert_int_equal(k, ints[i].want);
        }
    }
    /* images only: no audio or video keys; a thin of 1 is no key */
    struct lt_result_keys img = {.ctok = LT_CTOK_ONE, .thin = 1, .media = parts, .n_media = 1};
    assert_int_equal(lt_results_keys(&img, &b, &x), 0);
    assert_int_equal(x.n, 3);
    assert_false(lt_extra_get_int(&x, "thin", &k));
    assert_false(lt_extra_get_int(&x, "aud", &k));
    assert_true(lt_extra_get_int(&x, "img_tok", &k));
    assert_int_equal(k, 100);
    assert_int_equal(lt_results_keys(&(struct lt_result_keys){0}, &b, &x), 0);
    assert_int_equal(x.n, 0);
    assert_int_equal(x.len, 0);
    lt_buf_release(&b);
}

/* A run described once reads back with every key: an MPI part's, the
 * calibration's, a fleet's and the caller's own, the start stamped when
 * none was given; a merge's, with a copied run's absent start kept absent. */
static void test_run_desc(void **state)
{
    (void)state;
    const char *path = tmp_path("rundesc.lt.zst");
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_RESULTS, .source = "test"};
    struct lt_writer *w = lt_writer_open(path, &h, NULL, &err);
    assert_non_null(w);
    struct lt_buf own;
    lt_buf_init(&own, 1 << 10);
    struct lt_mp m = {&own, 0};
    lt_mp_cstr(&m, "clock_offset_us"), lt_mp_int(&m, -12);
    const char *reps[] = {"http://a:1", "http://b:2"};
    struct lt_run_desc d = {
        .run = {.id = 0,
                .mode = "rate",
                .rate = 4,
                .target = "http://a:1",
                .extra = {(const uint8_t *)own.p, own.len, 1}},
        .part = 1,
        .parts = 3,
        .planned = 17,
        .calib = "usage probes",
        .calib_err = 2,
        .calib_err_rel = 0.25,
        .replicas = reps,
        .n_replicas = 2,
        .route = "session",
        .failover = true,
    };
    assert_int_equal(lt_results_put_run(w, &d, &err), 0);
    const uint32_t miss[] = {2};
    struct lt_run_desc md = {.run = {.id = 1, .mode = "trace"},
                             .copied = true,
                             .merged = true,
                             .ranks = 3,
                             .merged_ranks = 2,
                             .missing_ranks = miss,
                             .n_missing = 1,
                             .missing_requests = -1};
    assert_int_equal(lt_results_put_run(w, &md, &err), 0);
    assert_int_equal(lt_writer_close(w, &err), 0);
    lt_buf_release(&own);
    struct lt_reader *r = lt_reader_open(path, NULL, &err);
    assert_non_null(r);
    const struct lt_item *it;
    assert_int_equal(lt_reader_next(r, &it, &err), 1);
    assert_int_equal(it->type, LT_ITEM_RUN);
    assert_non_null(it->run.start);
    assert_string_equal(it->run.version, LT_VERSION);
    const struct lt_extra *x = &it->run.extra;
    int64_t k = 0;
    char v[32];
    const struct {
        const char *key;
        int64_t want;
    } ints[] = {
        {"rank", 1}, {"ranks", 3}, {"planned", 17}, {"failover", 1}, {"clock_offset_us", -12}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        assert_true(lt_extra_get_int(x, ints[i].key, &k));
        assert_int_equal(k, ints[i].want);
    }
    assert_true(lt_extra_get_str(x, "calib", v, sizeof v));
    assert_string_equal(v, "usage probes");
    assert_true(lt_extra_get_str(x, "route", v, sizeof v));
    assert_string_equal(v, "session");
    assert_true(lt_extra_get_strs(x, "replicas", 1, v, sizeof v));
    assert_string_equal(v, "http://b:2");
    assert_int_equal(lt_reader_next(r, &it, &err), 1);
    assert_int_equal(it->type, LT_ITEM_RUN);
    assert_null(it->run.start);
    assert_null(it->run.version);
    x = &it->run.extra;
    assert_true(lt_extra_get_int(x, "merged_ranks", &k));
    assert_int_equal(k, 2);
    assert_true(lt_extra_get_int(x, "missing_requests", &k));
    assert_int_equal(k, -1);
    assert_false(lt_extra_get_int(x, "calib_err", &k));
    lt_reader_close(r);
}

static void test_extra_get_int(void **state)
{
    struct lt_buf b;
    lt_buf_init(&b, 1 << 16);
    struct lt_mp m = {&b, 0};
    lt_mp_str(&m, "s", 1), lt_mp_str(&m, "text", 4);
    lt_mp_str(&m, "map", 3), lt_mp_map(&m, 1), lt_mp_str(&m, "a", 1), lt_mp_uint(&m, 9);
    lt_mp_str(&m, "neg", 3), lt_mp_int(&m, -70000);
    lt_mp_str(&m, "big", 3), lt_mp_uint(&m, UINT64_MAX);
    lt_mp_str(&m, "planned", 7), lt_mp_uint(&m, 400);
    assert_int_equal(m.rc, 0);
    struct lt_extra x = {(const uint8_t *)b.p, b.len, 5};
    int64_t v = 0;
    assert_true(lt_extra_get_int(&x, "planned", &v));
    assert_int_equal(v, 400);
    assert_true(lt_extra_get_int(&x, "neg", &v));
    assert_int_equal(v, -70000);
    assert_false(lt_extra_get_int(&x, "big", &v));
    assert_false(lt_extra_get_int(&x, "s", &v));
    assert_false(lt_extra_get_int(&x, "map", &v));
    assert_false(lt_extra_get_int(&x, "a", &v)); /* inside a value, not a key of x */
    assert_false(lt_extra_get_int(&x, "nope", &v));
    lt_buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_checksum),        cmocka_unit_test(test_extra_get_int),
        cmocka_unit_test(test_result_keys),        cmocka_unit_test(test_run_desc),
        cmocka_unit_test(test_writer_limits),      cmocka_unit_test(test_roundtrip_records),
        cmocka_unit_test(test_truncated),          cmocka_unit_test(test_corrupt_frame_and_salvage),
        cmocka_unit_test(test_missing_header),     cmocka_unit_test(test_future_version),
        cmocka_unit_test(test_not_zstd_and_empty), cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_hostile_lengths),    cmocka_unit_test(test_out_of_order),
        cmocka_unit_test(test_results_roundtrip),  cmocka_unit_test(test_unknown_keys_preserved),
        cmocka_unit_test(test_frame_closing),      cmocka_unit_test(test_blocks_roundtrip),
        cmocka_unit_test(test_blocks_bad),         cmocka_unit_test(test_blocks_mutated),
        cmocka_unit_test(test_blocks_limit_sized), cmocka_unit_test(test_blocks_salvage),
        cmocka_unit_test(test_scrape_roundtrip),   cmocka_unit_test(test_check_roundtrip),
        cmocka_unit_test(test_verdict_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

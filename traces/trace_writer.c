/*
 * Streaming writer of loadtrace files (see trace_writer.h for the contract
 * and docs/trace-format.md for the bytes).
 *
 * Values are packed with msgpack-c into an uncompressed frame buffer and the
 * whole frame is compressed in one call when it is closed: one-shot
 * compression is faster than streaming per record, and a frame that is
 * written is complete and checksummed, which is what lets a reader salvage
 * every intact frame of a damaged file.
 *
 * Results are kept as the columns of a result block (docs/trace-format.md
 * §2.6) until the frame closes: one msgpack array per key, times as
 * differences from `sched` and `sched` from the result before, so that most
 * values are one-byte integers and zstd finds the same bytes at the same
 * distance. On bench_analyze's results (13 keys per result) a result took
 * ~140 bytes of msgpack as a map; reading it (zstd and decoding) capped
 * `loadtrace analyze` near 2.5 M results/s on one core.
 *
 * A results file's literals are stored as they are, not Huffman-coded:
 * the file is ~11 % larger, and zstd decompresses it ~1.7x as fast (1.6
 * against 0.93 GB/s on bench_analyze's results), which made analyze ~10 %
 * faster end to end (bench/README.md). Trace files, which are shared and
 * kept, stay as small as zstd makes them.
 */
#include "traces/trace_writer.h"
#include "traces/lt_buf.h"
#include "traces/lt_time.h"
#include "traces/trace_keys.h"

#include <errno.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* for ZSTD_c_literalCompressionMode, an "experimental" parameter: a
 * library that does not know it refuses it, and literals stay coded; any
 * zstd reads the files either way */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#define FRAME_RECORDS_DEFAULT 4096
#define FRAME_BYTES_DEFAULT (4u << 20)
#define FRAME_MS_DEFAULT 1000
#define RECORD_MAX (16u << 20)
/* A block stays well inside the reader's default limits (16 MiB per value,
 * 4,000,000 elements, 1,000,000 per array), whatever frame options the
 * caller chose: past these it is written out and a new one begun. */
#define BLOCK_BYTES_MAX (8u << 20)
#define BLOCK_ELEMS_MAX 1000000u
#define BLOCK_ROWS_MAX 65536u
#define DICT_MAX 32 /* distinct strings a string column refers back to */

/* The open result block: each column's elements, packed. */
struct block {
    struct lt_buf col[BC_N];
    uint32_t present[BC_N]; /* non-nil elements; a column of nils is not written */
    uint32_t n;             /* results */
    uint64_t elems;         /* msgpack elements, nested ones included */
    size_t bytes;           /* of all columns */
    uint64_t prev_i;        /* i and sched of the result before (0 before the first) */
    int64_t prev_sched;
    /* err, finish, count: a string seen before in the column is written as
     * the number of its first string element; strings are copied here,
     * NUL-separated, with their element numbers. */
    struct lt_buf dict[3];
    uint32_t dict_n[3];              /* strings kept */
    uint32_t dict_off[3][DICT_MAX];  /* where each starts in dict */
    uint32_t dict_elem[3][DICT_MAX]; /* its element number */
    uint32_t n_strs[3];              /* string elements written in the column */
};

struct lt_writer {
    FILE *f;
    char *path;
    enum lt_kind kind;
    int level;
    uint32_t frame_records;
    size_t frame_bytes;
    int64_t frame_ns;

    struct lt_buf frame; /* uncompressed content of the open frame */
    uint32_t frame_count;
    lt_mono frame_opened;
    struct lt_buf zbuf; /* compressed frame */
    ZSTD_CCtx *cctx;
    msgpack_packer pk;
    int pack_rc; /* first lt_buf failure seen by the packer callback */

    int64_t last_t; /* trace files are in arrival order */
    uint64_t count;
    uint64_t bytes;

    bool blocks; /* results go into blocks */
    struct block blk;
};

static int pack_write(void *data, const char *buf, size_t len)
{
    struct lt_writer *w = data;
    int rc = lt_buf_append(&w->frame, buf, len);
    if (rc < 0 && !w->pack_rc)
        w->pack_rc = rc;
    return rc < 0 ? -1 : 0;
}

static void pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

static void pack_key(msgpack_packer *pk, const char *k)
{
    pack_str(pk, k);
}

static void pack_kv_int(msgpack_packer *pk, const char *k, int64_t v)
{
    pack_key(pk, k);
    msgpack_pack_int64(pk, v);
}

static void pack_kv_uint(msgpack_packer *pk, const char *k, uint64_t v)
{
    pack_key(pk, k);
    msgpack_pack_uint64(pk, v);
}

static void pack_kv_str(msgpack_packer *pk, const char *k, const char *v)
{
    pack_key(pk, k);
    pack_str(pk, v);
}

static void pack_extra(struct lt_writer *w, const struct lt_extra *x)
{
    if (x->n && x->len)
        pack_write(w, (const char *)x->data, x->len);
}

static int write_all(struct lt_writer *w, const void *p, size_t n, struct lt_err *err)
{
    if (fwrite(p, 1, n, w->f) != n || fflush(w->f) != 0)
        return lt_errset(err, LT_EIO, "%s: write failed: %s", w->path, strerror(errno));
    w->bytes += n;
    return 0;
}

static int block_emit(struct lt_writer *w, struct lt_err *err);

int lt_writer_flush(struct lt_writer *w, struct lt_err *err)
{
    int erc = block_emit(w, err);
    if (erc < 0)
        return erc;
    if (!w->frame.len)
        return 0;
    size_t bound = ZSTD_compressBound(w->frame.len);
    lt_buf_reset(&w->zbuf);
    int rc = lt_buf_reserve(&w->zbuf, bound);
    if (rc < 0)
        return lt_errset(err, rc, "%s: out of memory compressing a frame", w->path);
    size_t z = ZSTD_compress2(w->cctx, w->zbuf.p, bound, w->frame.p, w->frame.len);
    if (ZSTD_isError(z))
        return lt_errset(err, LT_EIO, "%s: zstd: %s", w->path, ZSTD_getErrorName(z));
    lt_buf_reset(&w->frame);
    w->frame_count = 0;
    return write_all(w, w->zbuf.p, z, err);
}

int lt_writer_tick(struct lt_writer *w, struct lt_err *err)
{
    if ((w->frame.len || w->blk.n) &&
        lt_mono_diff_ns(lt_mono_now(), w->frame_opened) >= w->frame_ns)
        return lt_writer_flush(w, err);
    return 0;
}

/* Every value starts here: note when the frame was opened. */
static void begin_value(struct lt_writer *w)
{
    if (!w->frame.len && !w->blk.n)
        w->frame_opened = lt_mono_now();
    w->pack_rc = 0;
}

/* The frame closes when it holds frame_records values (each result of the
 * open block counting as one), frame_bytes bytes (the block's included),
 * or is older than frame_ms. */
static int close_if_full(struct lt_writer *w, struct lt_err *err)
{
    if (w->frame_count >= w->frame_records || w->frame.len + w->blk.bytes >= w->frame_bytes ||
        lt_mono_diff_ns(lt_mono_now(), w->frame_opened) >= w->frame_ns)
        return lt_writer_flush(w, err);
    return 0;
}

/* Every value ends here: roll back a value that did not fit, close the
 * frame when it is full or old. */
static int end_value(struct lt_writer *w, size_t start, struct lt_err *err)
{
    if (w->pack_rc < 0) {
        w->frame.len = start;
        return lt_errset(err, w->pack_rc, "%s: value %llu is larger than %u bytes", w->path,
                         (unsigned long long)w->count, RECORD_MAX);
    }
    w->count++;
    w->frame_count++;
    return close_if_full(w, err);
}

static void pack_header(struct lt_writer *w, const struct lt_header *h)
{
    msgpack_packer *pk = &w->pk;
    char now[32];
    const char *created = h->created;
    if (!created) {
        lt_wall_rfc3339(now);
        created = now;
    }
    uint32_t n = 5 + (h->block_tokens > 0) + (h->meta_len > 0) + h->extra.n;
    msgpack_pack_map(pk, n);
    pack_kv_str(pk, K_FORMAT, LT_FORMAT_NAME);
    pack_kv_uint(pk, K_VERSION, w->blocks ? 2 : 1);
    pack_kv_str(pk, K_KIND, h->kind == LT_KIND_RESULTS ? "results" : "trace");
    pack_kv_str(pk, K_CREATED, created);
    pack_kv_str(pk, K_SOURCE, h->source ? h->source : "");
    if (h->block_tokens)
        pack_kv_uint(pk, K_BLOCK_TOKENS, h->block_tokens);
    if (h->meta_len) {
        pack_key(pk, K_META);
        pack_write(w, (const char *)h->meta, h->meta_len);
    }
    pack_extra(w, &h->extra);
}

struct lt_writer *lt_writer_open(const char *path, const struct lt_header *hdr,
                                 const struct lt_writer_opts *opts, struct lt_err *err)
{
    if (hdr->kind != LT_KIND_TRACE && hdr->kind != LT_KIND_RESULTS) {
        lt_errset(err, LT_EINVAL, "%s: header kind must be trace or results", path);
        return NULL;
    }
    struct lt_writer *w = calloc(1, sizeof *w);
    if (!w) {
        lt_errset(err, LT_ENOMEM, "out of memory");
        return NULL;
    }
    struct lt_writer_opts o = opts ? *opts : (struct lt_writer_opts){0};
    w->kind = hdr->kind;
    w->level = o.level ? o.level : 3;
    w->frame_records = o.frame_records ? o.frame_records : FRAME_RECORDS_DEFAULT;
    w->frame_bytes = o.frame_bytes ? o.frame_bytes : FRAME_BYTES_DEFAULT;
    w->frame_ns = (o.frame_ms ? o.frame_ms : FRAME_MS_DEFAULT) * 1000000;
    w->last_t = INT64_MIN;
    w->blocks = hdr->kind == LT_KIND_RESULTS && !o.results_v1;
    for (int c = 0; c < BC_N; c++)
        lt_buf_init(&w->blk.col[c], BLOCK_BYTES_MAX);
    for (int d = 0; d < 3; d++)
        lt_buf_init(&w->blk.dict[d], BLOCK_BYTES_MAX);
    lt_buf_init(&w->frame, w->frame_bytes + RECORD_MAX);
    lt_buf_init(&w->zbuf, SIZE_MAX);
    w->path = strdup(path);
    w->cctx = ZSTD_createCCtx();
    if (!w->path || !w->cctx) {
        lt_errset(err, LT_ENOMEM, "out of memory");
        goto fail;
    }
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, w->level);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_contentSizeFlag, 1);
    if (hdr->kind == LT_KIND_RESULTS)
        ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_literalCompressionMode, ZSTD_ps_disable);
    if (!strcmp(path, "-")) {
        w->f = stdout;
    } else if (!(w->f = fopen(path, "wb"))) {
        lt_errset(err, LT_EIO, "%s: cannot create: %s", path, strerror(errno));
        goto fail;
    }
    msgpack_packer_init(&w->pk, w, pack_write);
    /* The header gets a frame of its own, so it is on disk at once and a
     * damaged first data frame never takes the header with it. */
    begin_value(w);
    pack_header(w, hdr);
    if (w->pack_rc < 0) {
        lt_errset(err, w->pack_rc, "%s: header too large", path);
        goto fail;
    }
    if (lt_writer_flush(w, err) < 0)
        goto fail;
    return w;
fail:
    if (w->f && w->f != stdout)
        fclose(w->f);
    w->f = NULL;
    for (int c = 0; c < BC_N; c++)
        lt_buf_release(&w->blk.col[c]);
    for (int d = 0; d < 3; d++)
        lt_buf_release(&w->blk.dict[d]);
    lt_buf_release(&w->frame);
    lt_buf_release(&w->zbuf);
    ZSTD_freeCCtx(w->cctx);
    free(w->path);
    free(w);
    return NULL;
}

static int check_kind(struct lt_writer *w, enum lt_kind want, const char *what,
                      struct lt_err *err)
{
    if (w->kind != want)
        return lt_errset(err, LT_EINVAL, "%s: a %s does not belong in a %s file", w->path, what,
                         w->kind == LT_KIND_TRACE ? "trace" : "results");
    return 0;
}

int lt_writer_put_record(struct lt_writer *w, const struct lt_record *r, struct lt_err *err)
{
    int rc = check_kind(w, LT_KIND_TRACE, "trace record", err);
    if (rc < 0)
        return rc;
    if (r->t < 0 || r->t < w->last_t)
        return lt_errset(err, LT_EINVAL,
                         "%s: record %llu: arrival t=%lld us is %s; trace records must be in "
                         "arrival order from t=0",
                         w->path, (unsigned long long)w->count, (long long)r->t,
                         r->t < 0 ? "negative" : "earlier than the previous record's");
    w->last_t = r->t;
    msgpack_packer *pk = &w->pk;
    uint32_t h = r->has;
    int orig = !!(h & (LT_HAS_ORIG_STATUS | LT_HAS_ORIG_TTFT | LT_HAS_ORIG_E2E));
    uint32_t n = 1 + !!(h & LT_HAS_SESSION) + !!(h & LT_HAS_TURN) + !!(h & LT_HAS_THINK) +
                 (r->api != NULL) + (r->model != NULL) + !!(h & LT_HAS_IN) +
                 !!(h & LT_HAS_CACHED) + !!(h & LT_HAS_OUT) + !!(h & LT_HAS_REASONING) +
                 !!(h & LT_HAS_MAX_TOKENS) + !!(h & LT_HAS_MSGS) + !!(h & LT_HAS_TOOLS) +
                 !!(h & LT_HAS_CALLS) + !!(h & LT_HAS_BLOCKS) + orig + (r->finish != NULL) +
                 (r->text != NULL) + !!(h & LT_HAS_FAILED) + !!(h & LT_HAS_ESTIMATED) +
                 r->extra.n;
    size_t start = w->frame.len;
    begin_value(w);
    msgpack_pack_map(pk, n);
    pack_kv_int(pk, K_T, r->t);
    if (h & LT_HAS_SESSION)
        pack_kv_uint(pk, K_SESSION, r->session);
    if (h & LT_HAS_TURN)
        pack_kv_uint(pk, K_TURN, r->turn);
    if (h & LT_HAS_THINK)
        pack_kv_int(pk, K_THINK, r->think);
    if (r->api)
        pack_kv_str(pk, K_API, r->api);
    if (r->model)
        pack_kv_str(pk, K_MODEL, r->model);
    if (h & LT_HAS_IN)
        pack_kv_uint(pk, K_IN, r->in);
    if (h & LT_HAS_CACHED)
        pack_kv_uint(pk, K_CACHED, r->cached);
    if (h & LT_HAS_OUT)
        pack_kv_uint(pk, K_OUT, r->out);
    if (h & LT_HAS_REASONING)
        pack_kv_uint(pk, K_REASONING, r->reasoning);
    if (h & LT_HAS_MAX_TOKENS)
        pack_kv_uint(pk, K_MAX_TOKENS, r->max_tokens);
    if (h & LT_HAS_MSGS) {
        pack_key(pk, K_MSGS);
        msgpack_pack_array(pk, r->n_msgs);
        for (uint32_t i = 0; i < r->n_msgs; i++) {
            msgpack_pack_array(pk, 2);
            pack_str(pk, r->msgs[i].role);
            msgpack_pack_uint32(pk, r->msgs[i].tokens);
        }
    }
    if (h & LT_HAS_TOOLS) {
        pack_key(pk, K_TOOLS);
        msgpack_pack_array(pk, 2);
        msgpack_pack_uint32(pk, r->tools_count);
        msgpack_pack_uint32(pk, r->tools_tokens);
    }
    if (h & LT_HAS_CALLS) {
        pack_key(pk, K_CALLS);
        msgpack_pack_array(pk, r->n_calls);
        for (uint32_t i = 0; i < r->n_calls; i++)
            msgpack_pack_uint32(pk, r->calls[i]);
    }
    if (h & LT_HAS_BLOCKS) {
        pack_key(pk, K_BLOCKS);
        msgpack_pack_array(pk, r->n_blocks);
        for (uint32_t i = 0; i < r->n_blocks; i++)
            msgpack_pack_uint64(pk, r->blocks[i]);
    }
    if (orig) {
        pack_key(pk, K_ORIG);
        msgpack_pack_map(pk, !!(h & LT_HAS_ORIG_STATUS) + !!(h & LT_HAS_ORIG_TTFT) +
                                 !!(h & LT_HAS_ORIG_E2E));
        if (h & LT_HAS_ORIG_STATUS)
            pack_kv_int(pk, K_STATUS, r->orig_status);
        if (h & LT_HAS_ORIG_TTFT)
            pack_kv_int(pk, K_TTFT, r->orig_ttft);
        if (h & LT_HAS_ORIG_E2E)
            pack_kv_int(pk, K_E2E, r->orig_e2e);
    }
    if (r->finish)
        pack_kv_str(pk, K_FINISH, r->finish);
    if (r->text) {
        pack_key(pk, K_TEXT);
        msgpack_pack_str(pk, r->text_len);
        msgpack_pack_str_body(pk, r->text, r->text_len);
    }
    if (h & LT_HAS_FAILED) {
        pack_key(pk, K_FAILED);
        msgpack_pack_true(pk);
    }
    if (h & LT_HAS_ESTIMATED) {
        pack_key(pk, K_EST);
        msgpack_pack_true(pk);
    }
    pack_extra(w, &r->extra);
    return end_value(w, start, err);
}

int lt_writer_put_run(struct lt_writer *w, const struct lt_run *r, struct lt_err *err)
{
    int rc = check_kind(w, LT_KIND_RESULTS, "run record", err);
    if (rc < 0)
        return rc;
    msgpack_packer *pk = &w->pk;
    uint32_t n = 3 + !!r->concurrency + (r->rate > 0) + (r->speed > 0) + !!r->target +
                 !!r->model + !!r->start + !!r->version + !!r->warmup + r->extra.n;
    if ((rc = block_emit(w, err)) < 0) /* results before the run stay before it */
        return rc;
    size_t start = w->frame.len;
    begin_value(w);
    msgpack_pack_map(pk, n);
    pack_kv_str(pk, K_REC, "run");
    pack_kv_uint(pk, K_RUN, r->id);
    pack_kv_str(pk, K_MODE, r->mode ? r->mode : "");
    if (r->concurrency)
        pack_kv_uint(pk, K_CONCURRENCY, r->concurrency);
    if (r->rate > 0) {
        pack_key(pk, K_RATE);
        msgpack_pack_double(pk, r->rate);
    }
    if (r->speed > 0) {
        pack_key(pk, K_SPEED);
        msgpack_pack_double(pk, r->speed);
    }
    if (r->target)
        pack_kv_str(pk, K_TARGET, r->target);
    if (r->model)
        pack_kv_str(pk, K_MODEL, r->model);
    if (r->start)
        pack_kv_str(pk, K_START, r->start);
    if (r->version)
        pack_kv_str(pk, K_VERSION, r->version);
    if (r->warmup)
        pack_kv_uint(pk, K_WARMUP, r->warmup);
    pack_extra(w, &r->extra);
    return end_value(w, start, err);
}

/* ---- result blocks ------------------------------------------------------ */

/* Minimal msgpack encoders into a column, smallest encoding first (what
 * msgpack-c's packer would write, without a callback per byte run). */
static int mp_put(struct lt_buf *b, const uint8_t *p, size_t n)
{
    return lt_buf_append(b, p, n);
}

static int mp_uint(struct lt_buf *b, uint64_t v)
{
    uint8_t t[9];
    if (v <= 0x7f)
        return mp_put(b, (uint8_t[]){(uint8_t)v}, 1);
    int k = v <= 0xff ? 1 : v <= 0xffff ? 2 : v <= 0xffffffffu ? 4 : 8;
    t[0] = k == 1 ? 0xcc : k == 2 ? 0xcd : k == 4 ? 0xce : 0xcf;
    for (int j = 0; j < k; j++)
        t[1 + j] = (uint8_t)(v >> (8 * (k - 1 - j)));
    return mp_put(b, t, 1 + (size_t)k);
}

static int mp_int(struct lt_buf *b, int64_t v)
{
    if (v >= 0)
        return mp_uint(b, (uint64_t)v);
    if (v >= -32)
        return mp_put(b, (uint8_t[]){(uint8_t)(0xe0 | (v + 32))}, 1);
    uint8_t t[9];
    int k = v >= INT8_MIN ? 1 : v >= INT16_MIN ? 2 : v >= INT32_MIN ? 4 : 8;
    t[0] = k == 1 ? 0xd0 : k == 2 ? 0xd1 : k == 4 ? 0xd2 : 0xd3;
    uint64_t u = (uint64_t)v;
    for (int j = 0; j < k; j++)
        t[1 + j] = (uint8_t)(u >> (8 * (k - 1 - j)));
    return mp_put(b, t, 1 + (size_t)k);
}

static int mp_nil(struct lt_buf *b)
{
    return mp_put(b, (const uint8_t *)"\xc0", 1);
}

static int mp_array(struct lt_buf *b, uint32_t n)
{
    if (n <= 15)
        return mp_put(b, (uint8_t[]){(uint8_t)(0x90 | n)}, 1);
    if (n <= 0xffff)
        return mp_put(b, (uint8_t[]){0xdc, (uint8_t)(n >> 8), (uint8_t)n}, 3);
    return mp_put(
        b, (uint8_t[]){0xdd, (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n},
        5);
}

static int mp_str(struct lt_buf *b, const char *s)
{
    size_t n = strlen(s);
    int rc;
    if (n <= 31)
        rc = mp_put(b, (uint8_t[]){(uint8_t)(0xa0 | n)}, 1);
    else if (n <= 0xff)
        rc = mp_put(b, (uint8_t[]){0xd9, (uint8_t)n}, 2);
    else if (n <= 0xffff)
        rc = mp_put(b, (uint8_t[]){0xda, (uint8_t)(n >> 8), (uint8_t)n}, 3);
    else
        rc = mp_put(b,
                    (uint8_t[]){0xdb, (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8),
                                (uint8_t)n},
                    5);
    return rc < 0 ? rc : mp_put(b, (const uint8_t *)s, n);
}

/* Differences are taken modulo 2^64, so every int64 round-trips. */
static int64_t diff64(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a - (uint64_t)b);
}

static int col_time(struct block *k, enum lt_bcol c, bool has, int64_t t, int64_t sched)
{
    if (!has)
        return mp_nil(&k->col[c]);
    k->present[c]++;
    return mp_int(&k->col[c], diff64(t, sched));
}

static int col_u32(struct block *k, enum lt_bcol c, bool has, uint32_t v)
{
    if (!has)
        return mp_nil(&k->col[c]);
    k->present[c]++;
    return mp_uint(&k->col[c], v);
}

static int col_str(struct block *k, enum lt_bcol c, const char *s)
{
    if (!s)
        return mp_nil(&k->col[c]);
    k->present[c]++;
    int d = c - BC_ERR;
    struct lt_buf *b = &k->dict[d];
    for (uint32_t j = 0; j < k->dict_n[d]; j++)
        if (!strcmp(b->p + k->dict_off[d][j], s))
            return mp_uint(&k->col[c], k->dict_elem[d][j]);
    if (k->dict_n[d] < DICT_MAX) {
        size_t off = b->len;
        if (lt_buf_append(b, s, strlen(s) + 1) == 0) {
            k->dict_off[d][k->dict_n[d]] = (uint32_t)off;
            k->dict_elem[d][k->dict_n[d]++] = k->n_strs[d];
        }
    }
    k->n_strs[d]++;
    return mp_str(&k->col[c], s);
}

/* Append one result to the open block's columns; on failure the block is
 * as it was. */
static int block_row(struct block *k, const struct lt_result *r)
{
    size_t len[BC_N], dict_len[3];
    uint32_t present[BC_N], dict_n[3], n_strs[3];
    for (int c = 0; c < BC_N; c++)
        len[c] = k->col[c].len;
    memcpy(present, k->present, sizeof present);
    for (int d = 0; d < 3; d++)
        dict_len[d] = k->dict[d].len;
    memcpy(dict_n, k->dict_n, sizeof dict_n);
    memcpy(n_strs, k->n_strs, sizeof n_strs);
    const uint32_t h = r->has;
    const int64_t q = r->sched;
    int rc = 0;
    rc |= mp_int(&k->col[BC_I], (int64_t)(r->index - k->prev_i));
    rc |= mp_uint(&k->col[BC_RUN], r->run);
    rc |= mp_int(&k->col[BC_SCHED], diff64(q, k->prev_sched));
    rc |= col_time(k, BC_SENT, h & LT_RHAS_SENT, r->sent, q);
    rc |= col_time(k, BC_FB, h & LT_RHAS_FIRST_BYTE, r->first_byte, q);
    rc |= col_time(k, BC_FT, h & LT_RHAS_FIRST_TOKEN, r->first_token, q);
    rc |= col_time(k, BC_FC, h & LT_RHAS_FIRST_CONTENT, r->first_content, q);
    rc |= col_time(k, BC_END, h & LT_RHAS_END, r->end, q);
    if (h & LT_RHAS_CHUNKS) {
        /* As in a result map: [dt, tokens, ...], the first dt from sent
         * (or sched), each next one from the chunk before. */
        struct lt_buf *b = &k->col[BC_CHUNKS];
        rc |= mp_array(b, 2 * r->n_chunks);
        int64_t prev = (h & LT_RHAS_SENT) ? r->sent : q;
        for (uint32_t j = 0; j < r->n_chunks; j++) {
            rc |= mp_int(b, diff64(r->chunks[j].t, prev));
            rc |= mp_uint(b, r->chunks[j].tokens);
            prev = r->chunks[j].t;
        }
        k->present[BC_CHUNKS]++;
    } else {
        rc |= mp_nil(&k->col[BC_CHUNKS]);
    }
    rc |= col_u32(k, BC_IN, h & LT_RHAS_IN, r->in);
    rc |= col_u32(k, BC_OUT, h & LT_RHAS_OUT, r->out);
    rc |= col_u32(k, BC_REASONING, h & LT_RHAS_REASONING, r->reasoning);
    rc |= col_u32(k, BC_CACHED, h & LT_RHAS_CACHED, r->cached);
    rc |= col_u32(k, BC_WANT_IN, h & LT_RHAS_WANT_IN, r->want_in);
    rc |= col_u32(k, BC_WANT_OUT, h & LT_RHAS_WANT_OUT, r->want_out);
    if (h & LT_RHAS_STATUS) {
        rc |= mp_int(&k->col[BC_STATUS], r->status);
        k->present[BC_STATUS]++;
    } else {
        rc |= mp_nil(&k->col[BC_STATUS]);
    }
    rc |= col_str(k, BC_ERR, r->err);
    rc |= col_str(k, BC_FINISH, r->finish);
    rc |= col_str(k, BC_COUNT, r->count);
    if (r->warmup) {
        rc |= mp_put(&k->col[BC_WARMUP], (const uint8_t *)"\xc3", 1);
        k->present[BC_WARMUP]++;
    } else {
        rc |= mp_nil(&k->col[BC_WARMUP]);
    }
    if (rc) { /* the codes are negative: any failure leaves bits set */
        for (int c = 0; c < BC_N; c++)
            k->col[c].len = len[c];
        memcpy(k->present, present, sizeof present);
        for (int d = 0; d < 3; d++)
            k->dict[d].len = dict_len[d];
        memcpy(k->dict_n, dict_n, sizeof dict_n);
        memcpy(k->n_strs, n_strs, sizeof n_strs);
        return LT_ENOMEM;
    }
    size_t bytes = 0;
    for (int c = 0; c < BC_N; c++)
        bytes += k->col[c].len - len[c];
    k->bytes += bytes;
    k->elems += BC_N + ((h & LT_RHAS_CHUNKS) ? 2 * (uint64_t)r->n_chunks : 0);
    k->n++;
    k->prev_i = r->index;
    k->prev_sched = q;
    return 0;
}

/* Write the open block, if it holds anything, as one value at the end of
 * the frame (which stays open). */
static int block_emit(struct lt_writer *w, struct lt_err *err)
{
    struct block *k = &w->blk;
    if (!k->n)
        return 0;
    msgpack_packer *pk = &w->pk;
    uint32_t ncols = 0;
    for (int c = 0; c < BC_N; c++)
        ncols += c <= BC_SCHED || k->present[c] > 0;
    w->pack_rc = 0;
    msgpack_pack_map(pk, 3 + ncols);
    pack_kv_str(pk, K_REC, K_BLOCK);
    pack_kv_uint(pk, K_N, k->n);
    /* Each column's size, its array header included, so that a reader
     * finds every column without reading the ones before it. */
    size_t head = k->n <= 15 ? 1 : k->n <= 0xffff ? 3 : 5;
    pack_key(pk, K_BYTES);
    msgpack_pack_array(pk, ncols);
    for (int c = 0; c < BC_N; c++)
        if (c <= BC_SCHED || k->present[c] > 0)
            msgpack_pack_uint64(pk, head + k->col[c].len);
    for (int c = 0; c < BC_N; c++) {
        if (c > BC_SCHED && !k->present[c])
            continue;
        pack_key(pk, lt_bcol_key[c]);
        msgpack_pack_array(pk, k->n);
        pack_write(w, k->col[c].p, k->col[c].len);
    }
    for (int c = 0; c < BC_N; c++)
        lt_buf_reset(&k->col[c]);
    memset(k->present, 0, sizeof k->present);
    for (int d = 0; d < 3; d++)
        lt_buf_reset(&k->dict[d]);
    memset(k->dict_n, 0, sizeof k->dict_n);
    memset(k->n_strs, 0, sizeof k->n_strs);
    k->n = 0;
    k->elems = 0;
    k->bytes = 0;
    k->prev_i = 0;
    k->prev_sched = 0;
    if (w->pack_rc < 0) /* the block's results are lost; the frame before them is kept */
        return lt_errset(err, w->pack_rc, "%s: a result block does not fit in the frame", w->path);
    return 0;
}

static int put_plain_result(struct lt_writer *w, const struct lt_result *r, struct lt_err *err);

int lt_writer_put_result(struct lt_writer *w, const struct lt_result *r, struct lt_err *err)
{
    int rc = check_kind(w, LT_KIND_RESULTS, "result record", err);
    if (rc < 0)
        return rc;
    /* A result whose row alone could pass the block limits (a very long
     * chunk list) goes as its own map, as do results with unknown keys:
     * a block has no place for them. */
    uint64_t chunk_elems = (r->has & LT_RHAS_CHUNKS) ? 2 * (uint64_t)r->n_chunks : 0;
    size_t row_max = 512 + 18 * (size_t)chunk_elems + (r->err ? strlen(r->err) : 0) +
                     (r->finish ? strlen(r->finish) : 0) + (r->count ? strlen(r->count) : 0);
    if (!w->blocks || r->extra.n || row_max > BLOCK_BYTES_MAX / 2 ||
        chunk_elems > BLOCK_ELEMS_MAX / 2) {
        if ((rc = block_emit(w, err)) < 0)
            return rc;
        return put_plain_result(w, r, err);
    }
    struct block *k = &w->blk;
    if (k->n &&
        (k->n >= BLOCK_ROWS_MAX || k->bytes + row_max > BLOCK_BYTES_MAX ||
         k->elems + BC_N + chunk_elems > BLOCK_ELEMS_MAX) &&
        (rc = block_emit(w, err)) < 0)
        return rc;
    begin_value(w);
    if ((rc = block_row(k, r)) < 0)
        return lt_errset(err, rc, "%s: out of memory for result %llu", w->path,
                         (unsigned long long)w->count);
    w->count++;
    w->frame_count++;
    return close_if_full(w, err);
}

static int put_plain_result(struct lt_writer *w, const struct lt_result *r, struct lt_err *err)
{
    msgpack_packer *pk = &w->pk;
    uint32_t h = r->has;
    uint32_t n = 3 + !!(h & LT_RHAS_SENT) + !!(h & LT_RHAS_FIRST_BYTE) +
                 !!(h & LT_RHAS_FIRST_TOKEN) + !!(h & LT_RHAS_FIRST_CONTENT) +
                 !!(h & LT_RHAS_END) + !!(h & LT_RHAS_CHUNKS) + !!(h & LT_RHAS_IN) +
                 !!(h & LT_RHAS_OUT) + !!(h & LT_RHAS_REASONING) + !!(h & LT_RHAS_CACHED) +
                 !!(h & LT_RHAS_WANT_IN) + !!(h & LT_RHAS_WANT_OUT) + !!(h & LT_RHAS_STATUS) +
                 !!r->err + !!r->finish + !!r->count + !!r->warmup + r->extra.n;
    size_t start = w->frame.len;
    begin_value(w);
    msgpack_pack_map(pk, n);
    pack_kv_uint(pk, K_I, r->index);
    pack_kv_uint(pk, K_RUN, r->run);
    pack_kv_int(pk, K_SCHED, r->sched);
    if (h & LT_RHAS_SENT)
        pack_kv_int(pk, K_SENT, r->sent);
    if (h & LT_RHAS_FIRST_BYTE)
        pack_kv_int(pk, K_FB, r->first_byte);
    if (h & LT_RHAS_FIRST_TOKEN)
        pack_kv_int(pk, K_FT, r->first_token);
    if (h & LT_RHAS_FIRST_CONTENT)
        pack_kv_int(pk, K_FC, r->first_content);
    if (h & LT_RHAS_END)
        pack_kv_int(pk, K_END, r->end);
    if (h & LT_RHAS_CHUNKS) {
        /* Flat [dt, tokens, dt, tokens, ...]; the first dt counts from sent
         * (or sched when the request was never sent), each next one from
         * the chunk before. */
        pack_key(pk, K_CHUNKS);
        msgpack_pack_array(pk, 2 * r->n_chunks);
        int64_t prev = (h & LT_RHAS_SENT) ? r->sent : r->sched;
        for (uint32_t i = 0; i < r->n_chunks; i++) {
            msgpack_pack_int64(pk, diff64(r->chunks[i].t, prev));
            msgpack_pack_uint32(pk, r->chunks[i].tokens);
            prev = r->chunks[i].t;
        }
    }
    if (h & LT_RHAS_IN)
        pack_kv_uint(pk, K_IN, r->in);
    if (h & LT_RHAS_OUT)
        pack_kv_uint(pk, K_OUT, r->out);
    if (h & LT_RHAS_REASONING)
        pack_kv_uint(pk, K_REASONING, r->reasoning);
    if (h & LT_RHAS_CACHED)
        pack_kv_uint(pk, K_CACHED, r->cached);
    if (h & LT_RHAS_WANT_IN)
        pack_kv_uint(pk, K_WANT_IN, r->want_in);
    if (h & LT_RHAS_WANT_OUT)
        pack_kv_uint(pk, K_WANT_OUT, r->want_out);
    if (h & LT_RHAS_STATUS)
        pack_kv_int(pk, K_STATUS, r->status);
    if (r->err)
        pack_kv_str(pk, K_ERR, r->err);
    if (r->finish)
        pack_kv_str(pk, K_FINISH, r->finish);
    if (r->count)
        pack_kv_str(pk, K_COUNT, r->count);
    if (r->warmup) {
        pack_key(pk, K_WARMUP);
        msgpack_pack_true(pk);
    }
    pack_extra(w, &r->extra);
    return end_value(w, start, err);
}

int lt_writer_close(struct lt_writer *w, struct lt_err *err)
{
    if (!w)
        return 0;
    int rc = lt_writer_flush(w, err);
    if (w->f && w->f != stdout) {
        if (fclose(w->f) != 0 && rc == 0)
            rc = lt_errset(err, LT_EIO, "%s: close failed: %s", w->path, strerror(errno));
    } else if (w->f && fflush(w->f) != 0 && rc == 0) {
        rc = lt_errset(err, LT_EIO, "%s: write failed: %s", w->path, strerror(errno));
    }
    for (int c = 0; c < BC_N; c++)
        lt_buf_release(&w->blk.col[c]);
    for (int d = 0; d < 3; d++)
        lt_buf_release(&w->blk.dict[d]);
    lt_buf_release(&w->frame);
    lt_buf_release(&w->zbuf);
    ZSTD_freeCCtx(w->cctx);
    free(w->path);
    free(w);
    return rc;
}

uint64_t lt_writer_count(const struct lt_writer *w)
{
    return w->count;
}

uint64_t lt_writer_bytes(const struct lt_writer *w)
{
    return w->bytes;
}

int lt_meta_pack(struct lt_buf *out, const char *const *keys, const char *const *vals, size_t n)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, n);
    for (size_t i = 0; i < n; i++) {
        pack_str(&pk, keys[i]);
        pack_str(&pk, vals[i]);
    }
    int rc = lt_buf_append(out, sb.data, sb.size);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

/*
 * Streaming writer of loadtrace files (see trace_writer.h for the contract
 * and docs/trace-format.md for the bytes).
 *
 * Values are packed (traces/lt_mp.h) into an uncompressed frame buffer and the
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
#include "traces/trace_reader.h"
#include "base/lt_buf.h"
#include "base/lt_time.h"
#include "traces/lt_mp.h"
#include "traces/scan_internal.h"
#include "traces/trace_keys.h"
#include "traces/trace_schema.h"

#include <errno.h>
#include <math.h>
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
#define RECORD_MAX LT_LIMIT_VALUE_BYTES
/* A frame holds at most frame_bytes and one value more: the reader's frame
 * limit caps frame_bytes. */
#define FRAME_BYTES_MAX (LT_LIMIT_FRAME_BYTES - LT_LIMIT_VALUE_BYTES)
/* A block stays well inside the reader's limits (LT_LIMIT_*: 16 MiB per
 * value, 4,000,000 elements, 1,000,000 per array), whatever frame options
 * the caller chose: past these it is written out and a new one begun. */
#define BLOCK_BYTES_MAX (LT_LIMIT_VALUE_BYTES / 2)
#define BLOCK_ELEMS_MAX (LT_LIMIT_ELEMS / 4)
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
    /* err, finish, count, err_body: a string seen before in the column is written as
     * the number of its first string element; strings are copied here,
     * NUL-separated, with their element numbers. */
    struct lt_buf dict[LT_BSTR_N];
    uint32_t dict_n[LT_BSTR_N];              /* strings kept */
    uint32_t dict_off[LT_BSTR_N][DICT_MAX];  /* where each starts in dict */
    uint32_t dict_elem[LT_BSTR_N][DICT_MAX]; /* its element number */
    uint32_t n_strs[LT_BSTR_N];              /* string elements written in the column */
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
    struct lt_mp mp; /* packs into frame; rc: the value's first failure */

    int64_t last_t;        /* trace files are in arrival order ... */
    bool completion_order; /* ... unless the header says otherwise */
    uint64_t count;
    uint64_t bytes;
    /* What reached the file: values (results among them) of frames written
     * whole; the open frame's are pending. After a failed write the
     * writer takes nothing more (failed: the error, said again). */
    uint64_t pending, pending_results, on_disk, on_disk_results;
    bool putting_result;
    bool failed;
    char failed_msg[256];

    bool blocks; /* results go into blocks */
    struct block blk;
};

static void pack_key(struct lt_writer *w, const char *k)
{
    lt_mp_cstr(&w->mp, k);
}

static void pack_kv_uint(struct lt_writer *w, const char *k, uint64_t v)
{
    pack_key(w, k);
    lt_mp_uint(&w->mp, v);
}

static void pack_kv_str(struct lt_writer *w, const char *k, const char *v)
{
    pack_key(w, k);
    lt_mp_cstr(&w->mp, v);
}

static void pack_extra(struct lt_writer *w, const struct lt_extra *x)
{
    if (x->n && x->len)
        lt_mp_raw(&w->mp, x->data, x->len);
}

static int write_all(struct lt_writer *w, const void *p, size_t n, struct lt_err *err)
{
    if (w->failed)
        return lt_errset(err, LT_EIO, "%s", w->failed_msg);
    if (fwrite(p, 1, n, w->f) != n || fflush(w->f) != 0) {
        /* A frame cut short ends the file: what follows would land after
         * bytes no reader can use (salvage stops at them), so nothing more
         * is written; the frames before it are whole. */
        snprintf(w->failed_msg, sizeof w->failed_msg,
                 "%s: write failed: %s (%llu values reached it, the last frame's %llu did not)",
                 w->path, strerror(errno), (unsigned long long)w->on_disk,
                 (unsigned long long)w->pending);
        w->failed = true;
        return lt_errset(err, LT_EIO, "%s", w->failed_msg);
    }
    w->bytes += n;
    w->on_disk += w->pending;
    w->on_disk_results += w->pending_results;
    w->pending = w->pending_results = 0;
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
    w->mp.rc = 0;
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

/* Why the reader would refuse the value packed at start (NULL: it would
 * not). The known keys have a fixed shape, so only a value with unknown
 * keys (free-form) or long arrays (`longest` elements, or `total` in all)
 * is scanned, with the reader's scanner and limits. */
static const char *past_limit(struct lt_writer *w, size_t start, bool extra, uint64_t longest,
                              uint64_t total)
{
    size_t len = w->frame.len - start;
    if (len > LT_LIMIT_VALUE_BYTES)
        return "is larger than 16 MiB packed";
    if (longest > LT_LIMIT_ARRAY)
        return "has an array of more than 1,000,000 elements";
    if (!extra && total <= 1000)
        return NULL;
    struct scan sc = {.p = (const uint8_t *)w->frame.p + start,
                      .n = len,
                      .max_elems = LT_LIMIT_ELEMS,
                      .max_array = LT_LIMIT_ARRAY};
    if (lt__rd_scan_value(&sc) < 0)
        return "nests deeper than 32 levels or holds more than 1,000,000 elements in an array or "
               "4,000,000 in all";
    return NULL;
}

/* Every value ends here: roll back a value that did not fit, or that the
 * reader would refuse (LT_ELIMIT: nothing is written), close the frame
 * when it is full or old. */
static int end_value(struct lt_writer *w, size_t start, bool extra, uint64_t longest,
                     uint64_t total, struct lt_err *err)
{
    if (w->mp.rc < 0) {
        w->frame.len = start;
        return lt_errset(err, w->mp.rc, "%s: value %llu is larger than %u bytes", w->path,
                         (unsigned long long)w->count, RECORD_MAX);
    }
    const char *why = past_limit(w, start, extra, longest, total);
    if (why) {
        w->frame.len = start;
        return lt_errset(err, LT_ELIMIT,
                         "%s: value %llu %s: past a reader limit (docs/trace-format.md §1), so "
                         "it is not written",
                         w->path, (unsigned long long)w->count, why);
    }
    w->count++;
    w->pending++;
    w->pending_results += w->putting_result;
    w->frame_count++;
    return close_if_full(w, err);
}

static void pack_header(struct lt_writer *w, const struct lt_header *h)
{
    char now[32];
    const char *created = h->created;
    if (!created) {
        lt_wall_rfc3339(now);
        created = now;
    }
    uint32_t n = 5 + (h->block_tokens > 0) + (h->meta_len > 0) + w->completion_order + h->extra.n;
    lt_mp_map(&w->mp, n);
    pack_kv_str(w, K_FORMAT, LT_FORMAT_NAME);
    /* Results files may hold scrape samples (version 3), which a version-2
     * reader would misread as results without `i`; the header is written
     * before anyone knows whether they will come, so every results file
     * but a version-1 one says 3. */
    pack_kv_uint(w, K_VERSION, w->blocks ? 3 : 1);
    pack_kv_str(w, K_KIND, h->kind == LT_KIND_RESULTS ? "results" : "trace");
    pack_kv_str(w, K_CREATED, created);
    pack_kv_str(w, K_SOURCE, h->source ? h->source : "");
    if (h->block_tokens)
        pack_kv_uint(w, K_BLOCK_TOKENS, h->block_tokens);
    if (h->meta_len) {
        pack_key(w, K_META);
        lt_mp_raw(&w->mp, h->meta, h->meta_len);
    }
    if (w->completion_order)
        pack_kv_str(w, K_ORDER, "completion");
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
    if (w->frame_bytes > FRAME_BYTES_MAX)
        w->frame_bytes = FRAME_BYTES_MAX;
    w->frame_ns = (o.frame_ms ? o.frame_ms : FRAME_MS_DEFAULT) * 1000000;
    w->last_t = INT64_MIN;
    w->completion_order = hdr->kind == LT_KIND_TRACE && o.completion_order;
    w->blocks = hdr->kind == LT_KIND_RESULTS && !o.results_v1;
    for (int c = 0; c < BC_N; c++)
        lt_buf_init(&w->blk.col[c], BLOCK_BYTES_MAX);
    for (int d = 0; d < LT_BSTR_N; d++)
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
    w->mp = (struct lt_mp){&w->frame, 0};
    /* The header gets a frame of its own, so it is on disk at once and a
     * damaged first data frame never takes the header with it. */
    begin_value(w);
    pack_header(w, hdr);
    if (w->mp.rc < 0 || past_limit(w, 0, true, 0, 0)) {
        lt_errset(err, w->mp.rc < 0 ? w->mp.rc : LT_ELIMIT,
                  "%s: header too large, or its meta past a reader limit", path);
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
    for (int d = 0; d < LT_BSTR_N; d++)
        lt_buf_release(&w->blk.dict[d]);
    lt_buf_release(&w->frame);
    lt_buf_release(&w->zbuf);
    ZSTD_freeCCtx(w->cctx);
    free(w->path);
    free(w);
    return NULL;
}

/* ---- values as maps, from the table of fields (trace_schema.h) -------- */

static void pack_orig(struct lt_writer *w, const struct lt_record *base, uint32_t has);

/* A field's value, whose key is packed; `base` is the struct. The shapes
 * of their own (arrays, orig, chunks) belong to one struct each. Always
 * inlined where f is a constant (one per field, below), so that each is
 * compiled for its field's type, as hand-written code would be. */
static inline __attribute__((always_inline)) void
pack_value(struct lt_writer *w, const struct lt_field *f, const void *base, uint32_t has)
{
    const char *p = (const char *)base + f->off;
    struct lt_mp *m = &w->mp;
    const struct lt_record *rec = base;
    const struct lt_result *res = base;
    switch ((enum lt_ftype)f->type) {
    case LT_FT_I64:
        lt_mp_int(m, *(const int64_t *)(const void *)p);
        break;
    case LT_FT_I32:
        lt_mp_int(m, *(const int32_t *)(const void *)p);
        break;
    case LT_FT_U64:
        lt_mp_uint(m, *(const uint64_t *)(const void *)p);
        break;
    case LT_FT_U32:
        lt_mp_uint(m, *(const uint32_t *)(const void *)p);
        break;
    case LT_FT_F64:
        lt_mp_double(m, *(const double *)(const void *)p);
        break;
    case LT_FT_STR: {
        const char *str = *(const char *const *)(const void *)p;
        lt_mp_cstr(m, str ? str : "");
        break;
    }
    case LT_FT_TEXT:
        lt_mp_str(m, rec->text, rec->text_len);
        break;
    case LT_FT_FLAG:
    case LT_FT_BOOL:
        lt_mp_bool(m, true);
        break;
    case LT_FT_REC:
        lt_mp_cstr(m, "run");
        break;
    case LT_FT_MSGS:
        lt_mp_array(m, rec->n_msgs);
        for (uint32_t i = 0; i < rec->n_msgs; i++) {
            lt_mp_array(m, 2);
            lt_mp_cstr(m, rec->msgs[i].role);
            lt_mp_uint(m, rec->msgs[i].tokens);
        }
        break;
    case LT_FT_TOOLS:
        lt_mp_array(m, 2);
        lt_mp_uint(m, rec->tools_count);
        lt_mp_uint(m, rec->tools_tokens);
        break;
    case LT_FT_CALLS:
        lt_mp_array(m, rec->n_calls);
        for (uint32_t i = 0; i < rec->n_calls; i++)
            lt_mp_uint(m, rec->calls[i]);
        break;
    case LT_FT_BLOCKS:
        lt_mp_array(m, rec->n_blocks);
        for (uint32_t i = 0; i < rec->n_blocks; i++)
            lt_mp_uint(m, rec->blocks[i]);
        break;
    case LT_FT_ORIG:
        pack_orig(w, rec, has);
        break;
    case LT_FT_SREC:
        lt_mp_cstr(m, K_SCRAPE);
        break;
    case LT_FT_CREC:
        lt_mp_cstr(m, K_CHECK);
        break;
    case LT_FT_VREC:
        lt_mp_cstr(m, K_VERDICT);
        break;
    case LT_FT_AREC:
        lt_mp_cstr(m, K_ANSWER);
        break;
    case LT_FT_VALS: {
        const struct lt_scrape_val *v = *(const struct lt_scrape_val *const *)(const void *)p;
        uint32_t n = lt_schema_count(p);
        lt_mp_map(m, n);
        for (uint32_t i = 0; i < n; i++) {
            lt_mp_cstr(m, v[i].name);
            lt_mp_double(m, v[i].v);
        }
        break;
    }
    case LT_FT_HISTS: {
        const struct lt_scrape_hist *h = *(const struct lt_scrape_hist *const *)(const void *)p;
        uint32_t n = lt_schema_count(p);
        lt_mp_map(m, n);
        for (uint32_t i = 0; i < n; i++) {
            lt_mp_cstr(m, h[i].name);
            lt_mp_array(m, 2 + 2 * h[i].n);
            lt_mp_double(m, h[i].sum);
            lt_mp_double(m, h[i].count);
            for (uint32_t j = 0; j < h[i].n; j++) {
                lt_mp_double(m, h[i].le[j]);
                lt_mp_double(m, h[i].cum[j]);
            }
        }
        break;
    }
    case LT_FT_CHUNKS: {
        /* Flat [dt, tokens, dt, tokens, ...]; the first dt counts from sent
         * (or sched when the request was never sent), each next one from
         * the chunk before. */
        lt_mp_array(m, 2 * res->n_chunks);
        int64_t prev = (has & LT_RHAS_SENT) ? res->sent : res->sched;
        for (uint32_t i = 0; i < res->n_chunks; i++) {
            lt_mp_int(m, (int64_t)((uint64_t)res->chunks[i].t - (uint64_t)prev));
            lt_mp_uint(m, res->chunks[i].tokens);
            prev = res->chunks[i].t;
        }
        break;
    }
    }
}

/* A value as a map: the fields of its table that are present, in the
 * table's order, then its unknown keys. Made from the table's list: one
 * test and one packing per field, each compiled for its field. */
#define PACK_FIELDS(name, S, LIST, COUNT, PACK)                                                    \
    static void name(struct lt_writer *w, const S *base, uint32_t has, const struct lt_extra *x)   \
    {                                                                                              \
        uint32_t n = x ? x->n : 0;                                                                 \
        LIST(COUNT)                                                                                \
        lt_mp_map(&w->mp, n);                                                                      \
        LIST(PACK)                                                                                 \
        if (x)                                                                                     \
            pack_extra(w, x);                                                                      \
    }
#define COUNT_FIELD(idx, table) n += lt_schema_present(&table[idx], base, has);
#define PACK_FIELD(idx, table)                                                                     \
    if (lt_schema_present(&table[idx], base, has)) {                                               \
        lt_mp_str(&w->mp, table[idx].key, table[idx].klen);                                        \
        pack_value(w, &table[idx], base, has);                                                     \
    }
#define COUNT_REC(id, ...) COUNT_FIELD(LT_REC_##id, lt_schema_record)
#define PACK_REC(id, ...) PACK_FIELD(LT_REC_##id, lt_schema_record)
#define COUNT_RUN(id, ...) COUNT_FIELD(LT_RUN_##id, lt_schema_run)
#define PACK_RUN(id, ...) PACK_FIELD(LT_RUN_##id, lt_schema_run)
#define COUNT_RES(id, ...) COUNT_FIELD(LT_RES_##id, lt_schema_result)
#define PACK_RES(id, ...) PACK_FIELD(LT_RES_##id, lt_schema_result)
#define COUNT_SCR(id, ...) COUNT_FIELD(LT_SCR_##id, lt_schema_scrape)
#define PACK_SCR(id, ...) PACK_FIELD(LT_SCR_##id, lt_schema_scrape)
#define COUNT_CHK(id, ...) COUNT_FIELD(LT_CHK_##id, lt_schema_check)
#define PACK_CHK(id, ...) PACK_FIELD(LT_CHK_##id, lt_schema_check)
#define COUNT_VRD(id, ...) COUNT_FIELD(LT_VRD_##id, lt_schema_verdict)
#define PACK_VRD(id, ...) PACK_FIELD(LT_VRD_##id, lt_schema_verdict)
#define COUNT_ANS(id, ...) COUNT_FIELD(LT_ANS_##id, lt_schema_answer)
#define PACK_ANS(id, ...) PACK_FIELD(LT_ANS_##id, lt_schema_answer)
#define COUNT_ORIG(id, ...) COUNT_FIELD(LT_ORIG_##id, lt_schema_orig)
#define PACK_ORIG(id, ...) PACK_FIELD(LT_ORIG_##id, lt_schema_orig)

PACK_FIELDS(pack_record, struct lt_record, LT_RECORD_FIELDS, COUNT_REC, PACK_REC)
PACK_FIELDS(pack_run, struct lt_run, LT_RUN_FIELDS, COUNT_RUN, PACK_RUN)
PACK_FIELDS(pack_result, struct lt_result, LT_RESULT_FIELDS, COUNT_RES, PACK_RES)
PACK_FIELDS(pack_scrape, struct lt_scrape, LT_SCRAPE_FIELDS, COUNT_SCR, PACK_SCR)
PACK_FIELDS(pack_check, struct lt_check, LT_CHECK_FIELDS, COUNT_CHK, PACK_CHK)
PACK_FIELDS(pack_verdict, struct lt_verdict, LT_VERDICT_FIELDS, COUNT_VRD, PACK_VRD)
PACK_FIELDS(pack_answer, struct lt_answer, LT_ANSWER_FIELDS, COUNT_ANS, PACK_ANS)
PACK_FIELDS(pack_orig_fields, struct lt_record, LT_ORIG_FIELDS, COUNT_ORIG, PACK_ORIG)

/* orig: its own map of the record's orig_* fields. */
static void pack_orig(struct lt_writer *w, const struct lt_record *base, uint32_t has)
{
    pack_orig_fields(w, base, has, NULL);
}

static int check_kind(struct lt_writer *w, enum lt_kind want, const char *what, struct lt_err *err)
{
    if (w->failed)
        return lt_errset(err, LT_EIO, "%s", w->failed_msg);
    if (w->kind != want)
        return lt_errset(err, LT_EINVAL, "%s: a %s does not belong in a %s file", w->path, what,
                         w->kind == LT_KIND_TRACE ? "trace" : "results");
    return 0;
}

/* A map value of its own begun: the result block so far emitted first
 * (results put before it stay before it), *start where the value begins. */
static int begin_map(struct lt_writer *w, size_t *start, struct lt_err *err)
{
    int rc = block_emit(w, err);
    if (rc < 0)
        return rc;
    *start = w->frame.len;
    begin_value(w);
    return 0;
}

int lt_writer_put_record(struct lt_writer *w, const struct lt_record *r, struct lt_err *err)
{
    int rc = check_kind(w, LT_KIND_TRACE, "trace record", err);
    if (rc < 0)
        return rc;
    if (r->t < 0 || (r->t < w->last_t && !w->completion_order))
        return lt_errset(err, LT_EINVAL,
                         "%s: record %llu: arrival t=%lld us is %s; trace records must be in "
                         "arrival order from t=0",
                         w->path, (unsigned long long)w->count, (long long)r->t,
                         r->t < 0 ? "negative" : "earlier than the previous record's");
    w->last_t = r->t;
    size_t start = w->frame.len;
    begin_value(w);
    pack_record(w, r, r->has, &r->extra);
    uint64_t longest = r->n_msgs > r->n_calls ? r->n_msgs : r->n_calls;
    if (r->n_blocks > longest)
        longest = r->n_blocks;
    return end_value(w, start, r->extra.n > 0, longest,
                     3 * (uint64_t)r->n_msgs + r->n_calls + r->n_blocks, err);
}

int lt_writer_put_run(struct lt_writer *w, const struct lt_run *r, struct lt_err *err)
{
    int rc = check_kind(w, LT_KIND_RESULTS, "run record", err);
    if (rc < 0)
        return rc;
    /* JSON has no NaN or infinity, and a rate of NaN would vanish (it is
     * not > 0): refused rather than written as something else. */
    if (!isfinite(r->rate) || !isfinite(r->speed))
        return lt_errset(err, LT_EINVAL,
                         "%s: run %u: %s %g is not a finite number (requests per second, or "
                         "0 for none)",
                         w->path, r->id, isfinite(r->rate) ? "speed" : "rate",
                         isfinite(r->rate) ? r->speed : r->rate);
    size_t start;
    if ((rc = begin_map(w, &start, err)) < 0) /* results before the run stay before it */
        return rc;
    pack_run(w, r, 0, &r->extra);
    return end_value(w, start, r->extra.n > 0, 0, 0, err);
}

int lt_writer_put_check(struct lt_writer *w, const struct lt_check *k, struct lt_err *err)
{
    int rc = check_kind(w, LT_KIND_RESULTS, "self-check", err);
    if (rc < 0)
        return rc;
    const double v[] = {k->rate_asked, k->rate_got, k->inflight_asked, k->inflight_got,
                        k->cpu_s,      k->wall_s,   k->span_s};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (!isfinite(v[i]))
            return lt_errset(err, LT_EINVAL, "%s: self-check of run %u: %s is not a finite number",
                             w->path, k->run, lt_schema_check[LT_CHK_RATE_ASKED + i].key);
    size_t start;
    if ((rc = begin_map(w, &start, err)) < 0) /* the run's results stay before it */
        return rc;
    pack_check(w, k, 0, &k->extra);
    return end_value(w, start, k->extra.n > 0, 0, 0, err);
}

int lt_writer_put_verdict(struct lt_writer *w, const struct lt_verdict *v, struct lt_err *err)
{
    int rc = check_kind(w, LT_KIND_RESULTS, "verdict", err);
    if (rc < 0)
        return rc;
    const double f[] = {v->attain, v->attain_lo, v->attain_hi};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (!isfinite(f[i]))
            return lt_errset(err, LT_EINVAL, "%s: verdict of run %u: %s is not a finite number",
                             w->path, v->run, lt_schema_verdict[LT_VRD_ATTAIN + i].key);
    if (!v->verdict || !v->verdict[0])
        return lt_errset(err, LT_EINVAL, "%s: verdict of run %u: no verdict", w->path, v->run);
    size_t start;
    if ((rc = begin_map(w, &start, err)) < 0) /* the run's results stay before it */
        return rc;
    pack_verdict(w, v, 0, &v->extra);
    return end_value(w, start, v->extra.n > 0, 0, 0, err);
}

int lt_writer_put_answer(struct lt_writer *w, const struct lt_answer *a, struct lt_err *err)
{
    int rc = check_kind(w, LT_KIND_RESULTS, "answer", err);
    if (rc < 0)
        return rc;
    const double f[] = {a->max,        a->fail,          a->goodput,
                        a->wall_s,     a->virtual_cpu_s, a->whole_max,
                        a->whole_fail, a->probes_saved,  a->wall_s_saved};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (!isfinite(f[i]))
            return lt_errset(err, LT_EINVAL,
                             "%s: a capacity answer's figure is not a finite number", w->path);
    if (!a->end || !a->end[0])
        return lt_errset(err, LT_EINVAL, "%s: a capacity answer says no end", w->path);
    size_t start;
    if ((rc = begin_map(w, &start, err)) < 0) /* the last probe's results stay before it */
        return rc;
    pack_answer(w, a, 0, &a->extra);
    return end_value(w, start, a->extra.n > 0, 0, 0, err);
}

/* JSON has no NaN or infinity: a scrape's values must be finite. */
static const char *scrape_not_finite(const struct lt_scrape *s)
{
    for (uint32_t i = 0; i < s->nv; i++)
        if (!isfinite(s->v[i].v))
            return s->v[i].name;
    for (uint32_t i = 0; i < s->nraw; i++)
        if (!isfinite(s->raw[i].v))
            return s->raw[i].name;
    for (uint32_t i = 0; i < s->nh; i++) {
        const struct lt_scrape_hist *h = &s->h[i];
        bool ok = isfinite(h->sum) && isfinite(h->count);
        for (uint32_t j = 0; j < h->n && ok; j++)
            ok = isfinite(h->le[j]) && isfinite(h->cum[j]);
        if (!ok)
            return h->name;
    }
    return NULL;
}

int lt_writer_put_scrape(struct lt_writer *w, const struct lt_scrape *s, struct lt_err *err)
{
    int rc = check_kind(w, LT_KIND_RESULTS, "scrape sample", err);
    if (rc < 0)
        return rc;
    if (!w->blocks)
        return lt_errset(err, LT_EINVAL,
                         "%s: a version-1 results file (results_v1) has no scrape samples: they "
                         "are version 3 (docs/trace-format.md §2.7)",
                         w->path);
    const char *bad = scrape_not_finite(s);
    if (bad)
        return lt_errset(err, LT_EINVAL, "%s: scrape of run %u: %s is not a finite number", w->path,
                         s->run, bad);
    size_t start;
    if ((rc = begin_map(w, &start, err)) < 0) /* results before it stay before it */
        return rc;
    pack_scrape(w, s, 0, &s->extra);
    uint64_t longest = s->nv > s->nraw ? s->nv : s->nraw;
    uint64_t total = (uint64_t)s->nv + s->nraw + s->nh;
    for (uint32_t i = 0; i < s->nh; i++) {
        uint64_t n = 2 + 2 * (uint64_t)s->h[i].n;
        total += n;
        if (n > longest)
            longest = n;
    }
    return end_value(w, start, s->extra.n > 0, longest, total, err);
}

/* ---- result blocks ------------------------------------------------------ */

/* A value into a column (a buffer of its own). */
static int mp_uint(struct lt_buf *b, uint64_t v)
{
    return lt_mp_uint(&(struct lt_mp){b, 0}, v);
}

static int mp_int(struct lt_buf *b, int64_t v)
{
    return lt_mp_int(&(struct lt_mp){b, 0}, v);
}

static int mp_nil(struct lt_buf *b)
{
    return lt_mp_nil(&(struct lt_mp){b, 0});
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
    return lt_mp_cstr(&(struct lt_mp){&k->col[c], 0}, s);
}

/* Append one result to the open block's columns; on failure the block is
 * as it was. */
static int block_row(struct block *k, const struct lt_result *r)
{
    size_t len[BC_N], dict_len[LT_BSTR_N];
    uint32_t present[BC_N], dict_n[LT_BSTR_N], n_strs[LT_BSTR_N];
    for (int c = 0; c < BC_N; c++)
        len[c] = k->col[c].len;
    memcpy(present, k->present, sizeof present);
    for (int d = 0; d < LT_BSTR_N; d++)
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
        rc |= lt_mp_array(&(struct lt_mp){b, 0}, 2 * r->n_chunks);
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
    rc |= col_str(k, BC_ERR_BODY, r->err_body);
    if (r->warmup) {
        rc |= lt_mp_bool(&(struct lt_mp){&k->col[BC_WARMUP], 0}, true);
        k->present[BC_WARMUP]++;
    } else {
        rc |= mp_nil(&k->col[BC_WARMUP]);
    }
    if (r->cancelled) {
        rc |= lt_mp_bool(&(struct lt_mp){&k->col[BC_CANCELLED], 0}, true);
        k->present[BC_CANCELLED]++;
    } else {
        rc |= mp_nil(&k->col[BC_CANCELLED]);
    }
    if (rc) { /* the codes are negative: any failure leaves bits set */
        for (int c = 0; c < BC_N; c++)
            k->col[c].len = len[c];
        memcpy(k->present, present, sizeof present);
        for (int d = 0; d < LT_BSTR_N; d++)
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
    uint32_t ncols = 0;
    for (int c = 0; c < BC_N; c++)
        ncols += c <= BC_SCHED || k->present[c] > 0;
    w->mp.rc = 0;
    lt_mp_map(&w->mp, 3 + ncols);
    pack_kv_str(w, K_REC, K_BLOCK);
    pack_kv_uint(w, K_N, k->n);
    /* Each column's size, its array header included, so that a reader
     * finds every column without reading the ones before it. */
    size_t head = k->n <= 15 ? 1 : k->n <= 0xffff ? 3 : 5;
    pack_key(w, K_BYTES);
    lt_mp_array(&w->mp, ncols);
    for (int c = 0; c < BC_N; c++)
        if (c <= BC_SCHED || k->present[c] > 0)
            lt_mp_uint(&w->mp, head + k->col[c].len);
    for (int c = 0; c < BC_N; c++) {
        if (c > BC_SCHED && !k->present[c])
            continue;
        pack_key(w, lt_bcol_key[c]);
        lt_mp_array(&w->mp, k->n);
        lt_mp_raw(&w->mp, k->col[c].p, k->col[c].len);
    }
    for (int c = 0; c < BC_N; c++)
        lt_buf_reset(&k->col[c]);
    memset(k->present, 0, sizeof k->present);
    for (int d = 0; d < LT_BSTR_N; d++)
        lt_buf_reset(&k->dict[d]);
    memset(k->dict_n, 0, sizeof k->dict_n);
    memset(k->n_strs, 0, sizeof k->n_strs);
    k->n = 0;
    k->elems = 0;
    k->bytes = 0;
    k->prev_i = 0;
    k->prev_sched = 0;
    if (w->mp.rc < 0) /* the block's results are lost; the frame before them is kept */
        return lt_errset(err, w->mp.rc, "%s: a result block does not fit in the frame", w->path);
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
                     (r->finish ? strlen(r->finish) : 0) + (r->count ? strlen(r->count) : 0) +
                     (r->err_body ? strlen(r->err_body) : 0);
    if (!w->blocks || r->extra.n || row_max > BLOCK_BYTES_MAX / 2 ||
        chunk_elems > BLOCK_ELEMS_MAX / 2) {
        if ((rc = block_emit(w, err)) < 0)
            return rc;
        w->putting_result = true;
        rc = put_plain_result(w, r, err);
        w->putting_result = false;
        return rc;
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
    w->pending++;
    w->pending_results++;
    w->frame_count++;
    return close_if_full(w, err);
}

static int put_plain_result(struct lt_writer *w, const struct lt_result *r, struct lt_err *err)
{
    uint32_t h = r->has;
    size_t start = w->frame.len;
    begin_value(w);
    pack_result(w, r, h, &r->extra);
    uint64_t chunk_elems = (h & LT_RHAS_CHUNKS) ? 2 * (uint64_t)r->n_chunks : 0;
    return end_value(w, start, r->extra.n > 0, chunk_elems, chunk_elems, err);
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
    for (int d = 0; d < LT_BSTR_N; d++)
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

uint64_t lt_writer_on_disk(const struct lt_writer *w, uint64_t *results)
{
    if (results)
        *results = w->on_disk_results;
    return w->on_disk;
}

bool lt_writer_failed(const struct lt_writer *w)
{
    return w->failed;
}

uint64_t lt_writer_bytes(const struct lt_writer *w)
{
    return w->bytes;
}

int lt_meta_pack(struct lt_buf *out, const char *const *keys, const char *const *vals, size_t n)
{
    struct lt_mp m = {out, 0};
    lt_mp_map(&m, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        lt_mp_cstr(&m, keys[i]);
        lt_mp_cstr(&m, vals[i]);
    }
    return m.rc;
}

/* A msgpack string's length and start at *p (fixstr, str8/16/32); false
 * for anything else or past the end. */
static bool mp_str_at(const uint8_t *m, size_t len, size_t *p, const uint8_t **s, size_t *sl)
{
    if (*p >= len)
        return false;
    uint8_t b = m[*p];
    size_t hdr, l;
    if ((b & 0xe0) == 0xa0) {
        hdr = 1, l = b & 0x1f;
    } else if (b == 0xd9 && *p + 2 <= len) {
        hdr = 2, l = m[*p + 1];
    } else if (b == 0xda && *p + 3 <= len) {
        hdr = 3, l = (size_t)m[*p + 1] << 8 | m[*p + 2];
    } else if (b == 0xdb && *p + 5 <= len) {
        hdr = 5,
        l = (size_t)m[*p + 1] << 24 | (size_t)m[*p + 2] << 16 | (size_t)m[*p + 3] << 8 | m[*p + 4];
    } else {
        return false;
    }
    if (l > len - *p - hdr)
        return false;
    *s = m + *p + hdr;
    *sl = l;
    *p += hdr + l;
    return true;
}

bool lt_meta_get(const uint8_t *meta, size_t len, const char *key, char *buf, size_t n)
{
    if (!meta || !len || !n)
        return false;
    size_t p = 1, count;
    uint8_t b = meta[0];
    if ((b & 0xf0) == 0x80)
        count = b & 0x0f;
    else if (b == 0xde && len >= 3)
        count = (size_t)meta[1] << 8 | meta[2], p = 3;
    else
        return false;
    size_t kl = strlen(key);
    for (size_t i = 0; i < count; i++) {
        const uint8_t *k, *v;
        size_t klen, vlen;
        if (!mp_str_at(meta, len, &p, &k, &klen) || !mp_str_at(meta, len, &p, &v, &vlen))
            return false;
        if (klen == kl && !memcmp(k, key, kl)) {
            size_t c = vlen < n - 1 ? vlen : n - 1;
            memcpy(buf, v, c);
            buf[c] = '\0';
            return true;
        }
    }
    return false;
}

int lt_writer_put_item(struct lt_writer *w, const struct lt_item *it, struct lt_err *err)
{
    switch (it->type) {
    case LT_ITEM_RECORD:
        return lt_writer_put_record(w, &it->rec, err);
    case LT_ITEM_RUN:
        return lt_writer_put_run(w, &it->run, err);
    case LT_ITEM_RESULT:
        return lt_writer_put_result(w, &it->res, err);
    case LT_ITEM_SCRAPE:
        return lt_writer_put_scrape(w, &it->scr, err);
    case LT_ITEM_CHECK:
        return lt_writer_put_check(w, &it->chk, err);
    case LT_ITEM_VERDICT:
        return lt_writer_put_verdict(w, &it->vrd, err);
    case LT_ITEM_ANSWER:
        return lt_writer_put_answer(w, &it->ans, err);
    }
    return lt_errset(err, LT_EFORMAT, "value of unknown type %d", (int)it->type);
}

uint32_t lt_chunks_thin(struct lt_chunk *c, uint32_t n, uint32_t *thin)
{
    uint32_t k =
        n > LT_RESULT_CHUNKS_MAX ? (n + LT_RESULT_CHUNKS_MAX - 1) / LT_RESULT_CHUNKS_MAX : 1;
    *thin = k;
    if (k == 1)
        return n;
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct lt_chunk x = c[i]; /* read before c[m] (m <= i) is written */
        if (i % k == 0)
            c[m++] = (struct lt_chunk){0};
        c[m - 1].t = x.t;
        c[m - 1].tokens += x.tokens;
    }
    return m;
}

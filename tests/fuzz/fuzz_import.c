/*
 * libFuzzer target for the importers and the CSV reader under them: the
 * first byte picks the format and the options (bits 0-1 the format, 2 sort,
 * 3 skip_bad, 4 block_tokens, 5 infer_sessions, 6 the formats that are
 * maps: CSV and JSON lines by a map, TraceLab's two), the rest is the
 * input, parsed in
 * memory with small limits and every record turned into JSON. No input may
 * crash, leak or go past the limits.
 *
 * And the writer-reader round trip: every record the importer hands on is
 * written with the trace writer, and whatever the writer wrote (also when
 * the import stopped half-way) must read back whole, value for value:
 * what loadtrace writes it can read.
 */
#include "base/lt_buf.h"
#include "traces/trace_json.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"
#include "workload/trace_import.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_sink {
    struct lt_buf js;
    const char *path;
    struct lt_writer *w;
};

static int on_header(void *ud, const struct lt_header *h, struct lt_err *err)
{
    struct fuzz_sink *s = ud;
    struct lt_writer_opts wo = {.frame_records = 3}; /* several frames from a small input */
    s->w = lt_writer_open(s->path, h, &wo, err);
    return s->w ? 0 : err->code;
}

static int on_record(void *ud, const struct lt_record *r, struct lt_err *err)
{
    struct fuzz_sink *s = ud;
    lt_buf_reset(&s->js);
    (void)lt_trace_json_record(&s->js,
                               r); /* a record too large for js is not the importer's fault */
    return lt_writer_put_record(s->w, r, err);
}

/* Everything the writer wrote reads back: as many values, no error. */
static void read_back(const char *path, uint64_t written)
{
    struct lt_err err = {0};
    struct lt_reader *rd = lt_reader_open(path, NULL, &err);
    if (!rd) {
        fprintf(stderr, "fuzz_import: the file written cannot be opened: %s\n", err.msg);
        abort();
    }
    const struct lt_item *it;
    uint64_t n = 0;
    int rc;
    while ((rc = lt_reader_next(rd, &it, &err)) == 1)
        n++;
    lt_reader_close(rd);
    if (rc != 0 || n != written) {
        fprintf(stderr, "fuzz_import: wrote %llu values, read %llu back: %s\n",
                (unsigned long long)written, (unsigned long long)n, rc ? err.msg : "");
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static char path[64];
    if (!path[0])
        snprintf(path, sizeof path, "/tmp/fuzz_import.%ld.lt.zst", (long)getpid());
    struct fuzz_sink s = {.path = path};
    lt_buf_init(&s.js, 1 << 20);
    struct lt_import_sink sink = {on_header, on_record, &s};
    /* bit 6: the formats that are maps, one map each */
    static const enum lt_import_format mapped[4] = {LT_IMPORT_CSV, LT_IMPORT_TRACELAB,
                                                    LT_IMPORT_TRACELAB_JSONL, LT_IMPORT_JSONL};
    static const char *const maps[4] = {
        "t=ts:ms,session=s|id,turn=k,in=a+b,out=o,think_after=w:ms,blocks=h,model=\"m:x\"", NULL,
        NULL, "t=ts:iso,session=s.id,turn=k,in=u[].n,out=o,think_after=w:s,failed=f"};
    bool map = (data[0] >> 6) & 1;
    struct lt_import_opts o = {
        .format =
            map ? mapped[data[0] % 4] : (enum lt_import_format)(LT_IMPORT_AZURE + data[0] % 4),
        .map = map ? maps[data[0] % 4] : NULL,
        .name = "fuzz",
        .sort = (data[0] >> 2) & 1,
        .skip_bad = (data[0] >> 3) & 1,
        .block_tokens = (data[0] >> 4) & 1 ? 512 : 0,
        .infer_sessions = (data[0] >> 5) & 1,
        .max_line = 1 << 16,
        .max_sort_bytes = 1 << 22,
    };
    struct lt_err err = {0};
    lt_import_mem(data + 1, size - 1, &o, &sink, NULL, &err);
    if (s.w) {
        uint64_t written = lt_writer_count(s.w);
        if (lt_writer_close(s.w, &err) == 0)
            read_back(path, written);
        unlink(path);
    }
    lt_buf_release(&s.js);
    return 0;
}

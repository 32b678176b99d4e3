/*
 * libFuzzer target for the trace reader: any bytes, read strictly and with
 * salvage, every value turned into JSON. The reader must never crash, leak,
 * or allocate beyond its limits, whatever the input. And what it hands out
 * goes back into a file (`cat --salvage -o` does this with a damaged one):
 * the writer takes every value and the copy reads back, strictly, to the
 * same JSON, value for value.
 */
#include "base/lt_buf.h"
#include "traces/trace_json.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What was read is written and read back the same; a difference is a bug
 * (abort, so the fuzzer and the corpus run stop on it). */
static void check(bool ok, const char *what, const struct lt_err *err)
{
    if (!ok) {
        fprintf(stderr, "fuzz_reader: round trip: %s: %s\n", what, err ? err->msg : "");
        abort();
    }
}

static void copy_through(const uint8_t *data, size_t size, bool salvage)
{
    struct lt_err err = {0};
    struct lt_reader_opts o = {.salvage = salvage,
                               .max_record_bytes = 1 << 16,
                               .max_frame_bytes = 1 << 20,
                               .max_array = 4096};
    struct lt_reader *r = lt_reader_open_mem(data, size, &o, &err);
    if (!r)
        return;
    const char *dir = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/fuzz_reader_copy.%ld.lt.zst", dir && *dir ? dir : "/tmp",
             (long)getpid());
    struct lt_writer *w = lt_writer_open(path, lt_reader_header(r), NULL, &err);
    check(w != NULL, "the writer does not take the header", &err);
    struct lt_buf want;
    lt_buf_init(&want, 1 << 26);
    const struct lt_item *it;
    uint64_t n = 0;
    for (; n < 100000 && lt_reader_next(r, &it, &err) == 1; n++) {
        check(lt_writer_put_item(w, it, &err) == 0, "the writer refuses a value the reader gave", &err);
        lt_trace_json_item(&want, it);
        lt_buf_append(&want, "\n", 1);
    }
    check(lt_writer_close(w, &err) == 0, "closing the copy", &err);
    lt_reader_close(r);
    struct lt_reader_opts strict = {.max_frame_bytes = 1 << 26};
    r = lt_reader_open(path, &strict, &err);
    check(r != NULL, "the copy's header does not read", &err);
    struct lt_buf got;
    lt_buf_init(&got, 1 << 26);
    int rc;
    uint64_t m = 0;
    while ((rc = lt_reader_next(r, &it, &err)) == 1) {
        lt_trace_json_item(&got, it);
        lt_buf_append(&got, "\n", 1);
        m++;
    }
    check(rc == 0, "the copy does not read whole", &err);
    check(m == n, "the copy holds another number of values", NULL);
    check(want.len == got.len && (!want.len || !memcmp(want.p, got.p, want.len)),
          "the copy's values differ", NULL);
    lt_buf_release(&want);
    lt_buf_release(&got);
    lt_reader_close(r);
    unlink(path);
}

static void read_through(const uint8_t *data, size_t size, bool salvage)
{
    struct lt_err err = {0};
    /* Small limits so the fuzzer reaches them quickly. */
    struct lt_reader_opts o = {.salvage = salvage,
                               .max_record_bytes = 1 << 16,
                               .max_frame_bytes = 1 << 20,
                               .max_array = 4096};
    struct lt_reader *r = lt_reader_open_mem(data, size, &o, &err);
    if (!r)
        return;
    struct lt_buf js;
    lt_buf_init(&js, 1 << 22);
    lt_trace_json_header(&js, lt_reader_header(r));
    const struct lt_item *it;
    for (int n = 0; n < 100000 && lt_reader_next(r, &it, &err) == 1; n++) {
        lt_buf_reset(&js);
        lt_trace_json_item(&js, it);
    }
    lt_buf_release(&js);
    lt_reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    read_through(data, size, false);
    read_through(data, size, true);
    copy_through(data, size, true);
    return 0;
}

/*
 * libFuzzer target for the importers and the CSV reader under them: the
 * first byte picks the format (and sort), the rest is the input, parsed in
 * memory with small limits and every record turned into JSON. No input may
 * crash, leak or go past the limits.
 */
#include "traces/lt_buf.h"
#include "traces/trace_import.h"
#include "traces/trace_json.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_record(void *ud, const struct lt_record *r, struct lt_err *err)
{
    struct lt_buf *js = ud;
    lt_buf_reset(js);
    (void)lt_json_record(js, r); /* a record too large for js is not the importer's fault */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    struct lt_buf js;
    lt_buf_init(&js, 1 << 20);
    struct lt_import_sink sink = {NULL, on_record, &js};
    struct lt_import_opts o = {
        .format = (enum lt_import_format)(LT_IMPORT_AZURE + data[0] % 4),
        .name = "fuzz",
        .sort = (data[0] >> 2) & 1,
        .skip_bad = (data[0] >> 3) & 1,
        .block_tokens = (data[0] >> 4) & 1 ? 512 : 0,
        .max_line = 1 << 16,
        .max_sort_bytes = 1 << 22,
    };
    struct lt_err err = {0};
    lt_import_mem(data + 1, size - 1, &o, &sink, NULL, &err);
    lt_buf_release(&js);
    return 0;
}

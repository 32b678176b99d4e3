/*
 * libFuzzer target for the trace reader: any bytes, read strictly and with
 * salvage, every value turned into JSON. The reader must never crash, leak,
 * or allocate beyond its limits, whatever the input.
 */
#include "traces/lt_buf.h"
#include "traces/trace_json.h"
#include "traces/trace_reader.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_through(const uint8_t *data, size_t size, bool salvage)
{
    struct lt_err err = {0};
    /* Small limits so the fuzzer reaches them quickly. */
    struct lt_reader_opts o = {.salvage = salvage, .max_record_bytes = 1 << 16,
                               .max_frame_bytes = 1 << 20, .max_array = 4096};
    struct lt_reader *r = lt_reader_open_mem(data, size, &o, &err);
    if (!r)
        return;
    struct lt_buf js;
    lt_buf_init(&js, 1 << 22);
    lt_json_header(&js, lt_reader_header(r));
    const struct lt_item *it;
    for (int n = 0; n < 100000 && lt_reader_next(r, &it, &err) == 1; n++) {
        lt_buf_reset(&js);
        lt_json_item(&js, it);
    }
    lt_buf_release(&js);
    lt_reader_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    read_through(data, size, false);
    read_through(data, size, true);
    return 0;
}

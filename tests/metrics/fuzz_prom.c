/*
 * libFuzzer target for what a /metrics endpoint (or a user's mapping file)
 * may send: the bytes are parsed as a page with the default limits and
 * with tight ones (so the limit paths run too), the page is mapped with the
 * built-in table, and the same bytes are read as a mapping file. Nothing
 * may crash, leak, read out of bounds or allocate past the limits.
 */
#include "metrics/prom_map.h"
#include "metrics/prom_text.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct lt_prom_values v;
    struct lt_err err;
    struct lt_prom_page pg;
    lt_prom_page_init(&pg, NULL);
    if (lt_prom_parse(&pg, data, size, "fuzz", &err) == 0)
        lt_prom_map_apply(NULL, &pg, &v);
    lt_prom_page_release(&pg);

    struct lt_prom_limits tight = {.samples = 8,
                                   .families = 4,
                                   .labels_per_sample = 3,
                                   .labels = 10,
                                   .name_bytes = 16,
                                   .value_bytes = 16,
                                   .help_bytes = 16};
    lt_prom_page_init(&pg, &tight);
    lt_prom_parse(&pg, data, size, "fuzz", &err);
    lt_prom_page_release(&pg);

    struct lt_prom_map *m;
    if (lt_prom_map_new(&m, &err) == 0) {
        if (lt_prom_map_load_mem(m, (const char *)data, size, "fuzz", &err) == 0) {
            lt_prom_page_init(&pg, NULL);
            static const char page[] =
                "# TYPE h histogram\nh_bucket{le=\"1\"} 1\n"
                "h_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\nx{a=\"b\"} 4\n";
            if (lt_prom_parse(&pg, page, sizeof page - 1, "page", &err) == 0)
                lt_prom_map_apply(m, &pg, &v);
            lt_prom_page_release(&pg);
        }
        lt_prom_map_free(m);
    }
    return 0;
}

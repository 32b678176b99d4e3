/*
 * The mapping language of `import --map` (docs/import.md, "Any log by
 * mapping"), shared inside workload/ by its parser (import_map.c) and the
 * importer that applies it (trace_import.c).
 *
 * A map is KEY=EXPR,...: KEY a record key (traces/trace_schema.h) or
 * think_after; EXPR one or more terms joined by '+', each a column or JSON
 * path with '|'-separated alternatives (the first one present is used),
 * and an optional unit (:s, :ms, :us, :iso) for times. A name holding one
 * of , + = : | or a space at either end is written in double quotes.
 */
#ifndef LT_IMPORT_INTERNAL_H
#define LT_IMPORT_INTERNAL_H

#include "base/lt_err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum lt_map_unit {
    LT_MU_NONE,
    LT_MU_S,
    LT_MU_MS,
    LT_MU_US,
    LT_MU_ISO, /* ISO-8601 / RFC 3339 date and time, UTC */
};

#define LT_MAP_TERMS 8  /* terms of one sum */
#define LT_MAP_ALTS 4   /* alternatives of one term */
#define LT_MAP_RULES 32 /* KEY=EXPR pairs of one map */
/* The key of the wait after a record's answer, which becomes the think
 * time of the session's next record (TraceLab's tool_wait_after_ms). */
#define LT_MAP_THINK_AFTER (-2)

struct lt_map_term {
    char *alt[LT_MAP_ALTS]; /* names, owned */
    uint8_t n_alt;
    int col[LT_MAP_ALTS]; /* CSV: each alternative's column, or -1 */
};

struct lt_map_rule {
    int key;      /* index in lt_schema_record, or LT_MAP_THINK_AFTER */
    uint8_t unit; /* enum lt_map_unit */
    uint8_t n;
    struct lt_map_term t[LT_MAP_TERMS];
};

struct lt_map {
    struct lt_map_rule r[LT_MAP_RULES];
    int n;
};

/* Parse spec into m (zeroed first). Returns 0, or LT_EINVAL with err
 * naming what is wrong; m is released in that case. */
int lt_map_parse(const char *spec, struct lt_map *m, struct lt_err *err);
void lt_map_release(struct lt_map *m);
/* The rule of record key index key, or NULL. */
const struct lt_map_rule *lt_map_find(const struct lt_map *m, int key);
/* Whether name is the whole name of some term alternative of m. */
bool lt_map_names(const struct lt_map *m, const char *name, size_t n);

#endif

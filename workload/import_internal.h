/*
 * Inside the importers (trace_import.h is the contract): the shared core
 * (trace_import.c: the state, order, sort, delivery, sessions by name,
 * errors, the entry points and the table of formats), one file per format
 * family behind that table (import_csv.c: Azure, BurstGPT, any CSV by map,
 * TraceLab's CSV; import_json.c: Mooncake, loadtrace's JSON lines, any
 * JSON lines by map, TraceLab's JSON lines), and the mapping language of
 * `import --map` (import_map.c: its parser and its evaluator), as curl has
 * one file per protocol behind one handler table. Nothing outside
 * workload/ includes this.
 *
 * A map is KEY=EXPR,...: KEY a record key (traces/trace_schema.h) or
 * think_after; EXPR one or more terms joined by '+', each a column or JSON
 * path with '|'-separated alternatives (the first one present is used),
 * and an optional unit (:s, :ms, :us, :iso) for times. A name holding one
 * of , + = : | or a space at either end is written in double quotes.
 */
#ifndef LT_IMPORT_INTERNAL_H
#define LT_IMPORT_INTERNAL_H

#include "base/lt_buf.h"
#include "base/lt_err.h"
#include "base/lt_u64map.h"
#include "traces/lt_mp.h"
#include "traces/trace_format.h"
#include "workload/csv.h"
#include "workload/session_infer_internal.h"
#include "workload/trace_import.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- the mapping language ------------------------------------------------ */

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
int lt__map_parse(const char *spec, struct lt_map *m, struct lt_err *err);
void lt__map_release(struct lt_map *m);
/* The rule of record key index key, or NULL. */
const struct lt_map_rule *lt__map_find(const struct lt_map *m, int key);
/* Whether name is the whole name of some term alternative of m. */
bool lt__map_names(const struct lt_map *m, const char *name, size_t n);

/* ---- the importers ------------------------------------------------------ */

#define SHOW_MAX 40 /* bytes of a bad value quoted in a message */

/* Every time a row gives, on its source's clock, lies within
 * ±TIME_MAX_US (±146,000 years), checked before any arithmetic: then t
 * (a difference of two such times) and every difference a message prints
 * stay inside int64. */
#define TIME_MAX_US ((int64_t)1 << 62)
#define TIME_MAX_S (TIME_MAX_US / 1000000)

struct imp;

/* Where a format reads from: f, or len bytes at data; lines at most max. */
struct imp_input {
    FILE *f;
    const void *data;
    size_t len;
    size_t max;
};

/* What a format's header and order need of the core. */
enum {
    IMP_MAP_OK = 1 << 0,     /* --map may be given */
    IMP_MAP_NEEDED = 1 << 1, /* --map must be given */
    IMP_OWN_CLOCK = 1 << 2,  /* t is kept as given, not counted from the first
                              * record (unless a map reads a foreign clock) */
    IMP_WALL_START = 1 << 3, /* the first row's wall clock goes to meta.start */
    IMP_BLOCKS_512 = 1 << 4, /* blocks of LT_DEFAULT_BLOCK_TOKENS */
    IMP_BLOCKS_OPT = 1 << 5, /* blocks of opts.block_tokens, unless a header
                              * line of the input says */
    IMP_ROUNDS = 1 << 6,     /* each (session, turn) at most once */
};

/* One format: a row of the table in trace_import.c, defined by its family. */
struct imp_format {
    enum lt_import_format id;
    const char *name; /* --from NAME, and "import:NAME" as the source */
    int (*run)(struct imp *m, const struct imp_input *in); /* its family */
    const void *spec; /* the family's own description of the format */
    const char *map;  /* a built-in map (the format is one), or NULL; such a
                       * format is always sorted (its files go by session) */
    unsigned flags;
};

extern const struct imp_format lt__imp_format_azure, lt__imp_format_burstgpt, lt__imp_format_csv,
    lt__imp_format_tracelab, lt__imp_format_mooncake, lt__imp_format_jsonl, lt__imp_format_tracelab_jsonl;

/* A CSV column: its name and what the format reads it as (import_csv.c). */
struct imp_col {
    unsigned role; /* import_csv.c's enum role */
    char *name;
};

/* The row a map reads: a CSV row, or a JSON object. */
struct msrc {
    const struct lt_csv_row *row;
    const json_t *obj;
};

/* A record held for sorting: its copy lives in one allocation, blob. */
struct held {
    int64_t raw;
    uint64_t line;
    uint64_t seq;
    uint64_t group; /* its session's first seq (its own without one): ties in
                     * time keep a session's turns together, in turn order */
    struct lt_record rec;
    void *blob;
    size_t sess;         /* index of its named session, or SIZE_MAX */
    int64_t think_after; /* the wait after its answer (think_after), ... */
    bool has_think_after;
};

/* A session named by the source: its dense id is its index. The name is
 * owned here and outlives every record that points to it (held ones too). */
struct sess {
    char *name;
    int64_t think_next; /* the wait after the last answer, for the next turn */
    bool has_think_next;
    uint64_t first_seq; /* sort: the seq of its first record + 1 (0: none yet) */
};

struct imp {
    const struct lt_import_opts *o;
    const struct imp_format *fmt;
    const struct lt_import_sink *sink;
    struct lt_import_stats *st;
    struct lt_err *err;
    const char *name;

    /* header */
    struct lt_header hdr;
    bool header_given; /* jsonl: the input's own header line was read */
    bool header_sent;
    char *created, *source; /* jsonl header strings, owned */
    char source_buf[32];    /* "import:FORMAT" */
    struct lt_buf meta;
    struct lt_buf hdr_extra;

    /* time */
    bool rebase; /* t counts from the first record (all but jsonl) */
    bool have_origin;
    int64_t origin;
    int64_t last_raw;
    uint64_t last_line;

    /* the record being built */
    struct lt_record rec;
    struct lt_buf extra;
    struct lt_mp pk; /* packs into extra, meta or hdr_extra */
    uint64_t *blocks;
    size_t blocks_cap;
    struct lt_msg *msgs;
    size_t msgs_cap;
    uint32_t *calls;
    size_t calls_cap;
    json_t *json;       /* the current JSON line's tree, kept until the record is out */
    struct lt_buf jbuf; /* a JSON line rewritten for integers above INT64_MAX */
    struct lt_buf sbuf; /* a CSV record's model name */
    const char *why;    /* what passes a reader limit (pack_json's LT_ELIMIT) */

    /* --map */
    struct lt_map map;    /* n == 0: none */
    struct imp_col *cols; /* CSV: the header's columns */
    struct lt_buf mstr;   /* the current record's strings, NUL-terminated */

    /* sessions by name: each distinct name gets the next integer id */
    struct lt_u64map sess_map; /* hash of the name (probed on) -> index + 1 */
    struct sess *sess;
    size_t n_sess, sess_cap;

    struct session_infer infer; /* infer_sessions */

    /* sort */
    struct held *held;
    size_t n_held, held_cap, held_bytes;
    /* the current record's session (SIZE_MAX: none) and think_after, for a
     * sort that chains think times in the sorted order */
    size_t cur_sess;
    int64_t cur_think_after;
    bool cur_has_think_after;

    /* TraceLab: each (session, round) once, with the line it came on */
    struct lt_u64map rounds; /* session << 32 | round -> line */
};

/* ---- the core (trace_import.c) -------------------------------------------- */

/* small parsers */
void lt__imp_trim(const char **p, size_t *n);
bool lt__imp_parse_uint(const char *p, size_t n, uint64_t max, uint64_t *v);
bool lt__imp_canonical_uint(const char *p, size_t n);
int lt__imp_parse_scaled_us(const char *p, size_t n, int digits, int64_t *us);
int lt__imp_parse_seconds_us(const char *p, size_t n, int64_t *us);

/* sessions by name */
int lt__imp_name_session(struct imp *m, const char *p, size_t n, uint64_t line, struct sess **out);

/* msgpack into m->pk */
void lt__imp_pk_str(struct imp *m, const char *s, size_t n);
void lt__imp_pk_extra_key(struct imp *m, const char *k, size_t kn);
int lt__imp_extra_csv(struct imp *m, const char *key, const char *p, size_t n);

/* errors */
int lt__imp_row_bad(struct imp *m, uint64_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int lt__imp_row_error(struct imp *m, int rc);
int lt__imp_nomem(struct imp *m, int rc, uint64_t line);
int lt__imp_grow_array(struct imp *m, void **arr, size_t *cap, size_t n, size_t size);

/* the record: begin, end, and hand on in order */
void lt__imp_rec_begin(struct imp *m);
void lt__imp_rec_end(struct imp *m);
int lt__imp_emit(struct imp *m, int64_t raw, uint64_t line);
int lt__imp_finish(struct imp *m);

/* ---- JSON values (import_json.c), for the map too ----------------------- */

bool lt__imp_json_big(const json_t *v, uint64_t *u);
bool lt__imp_json_u64(const json_t *v, uint64_t max, uint64_t *u);
bool lt__imp_json_text(const json_t *v, const char **s, size_t *n);
int lt__imp_json_extra(struct imp *m, uint64_t line, const char *k, size_t kn, const json_t *v);
int lt__imp_want_blocks(struct imp *m, uint64_t line, const char *key, const json_t *v);

/* ---- the map's evaluator (import_map.c) ---------------------------------- */

/* One record by m->map, from a CSV row or a JSON object, into m->rec. */
int lt__imp_map_row(struct imp *m, const struct msrc *src, uint64_t line, int64_t *raw);

#endif

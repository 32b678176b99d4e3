/*
 * A parser of the Prometheus text exposition format (version 0.0.4), the
 * page an inference server or an exporter serves at GET /metrics.
 *
 * Why our own: replay scrapes the server on its own event loop, so the
 * parser must be small, allocation-bounded and fast, and a page that is
 * HTML, cut short or hostile must become one sentence with a line number,
 * never a crash or an unbounded allocation. docs/server-metrics.md has the
 * grammar accepted and the limits.
 *
 * What is understood: `# HELP name text` (escapes \\ and \n), `# TYPE name
 * counter|gauge|histogram|summary|untyped`, other comments and blank lines
 * (ignored), samples `name{label="value",...} value [timestamp]` with the
 * label-value escapes \\, \" and \n, values in any float form Go's
 * ParseFloat takes (1, -2.5e-3, 0x1p-2, NaN, +Inf, -Inf, Inf), optional
 * integer timestamps in milliseconds, LF or CRLF line ends. Histogram
 * samples NAME_bucket{le=...}, NAME_sum and NAME_count, and summary samples
 * NAME{quantile=...}, NAME_sum and NAME_count, belong to the one family
 * NAME declared by its TYPE line.
 *
 * Whole-page: the page is copied once (up to limits.page_bytes) and every
 * name, label and HELP text points into that copy, unescaped in place.
 */
#ifndef LT_PROM_TEXT_H
#define LT_PROM_TEXT_H

#include "base/lt_err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Default limits (struct lt_prom_limits). A vLLM page is ~50 KiB with
 * ~600 samples; DCGM on 8 GPUs ~100 KiB: the defaults leave a wide margin. */
#define LT_PROM_PAGE_MAX ((size_t)4 << 20) /* bytes of one page */
#define LT_PROM_SAMPLES_MAX 20000          /* sample lines of one page */
#define LT_PROM_FAMILIES_MAX 4096          /* families (names) of one page */
#define LT_PROM_LABELS_PER_SAMPLE_MAX 32   /* labels of one sample */
#define LT_PROM_LABELS_MAX 160000          /* labels of all samples together */
#define LT_PROM_NAME_MAX 256               /* bytes of a metric or label name */
#define LT_PROM_VALUE_MAX 4096             /* bytes of a label value, unescaped */
#define LT_PROM_HELP_MAX 4096              /* bytes of a HELP text, unescaped */

struct lt_prom_limits {
    size_t page_bytes, samples, families, labels_per_sample, labels, name_bytes, value_bytes,
        help_bytes;
};

enum lt_prom_type {
    LT_PROM_UNTYPED = 0,
    LT_PROM_COUNTER,
    LT_PROM_GAUGE,
    LT_PROM_HISTOGRAM,
    LT_PROM_SUMMARY,
};

/* What a sample is within its family. */
enum lt_prom_role {
    LT_PROM_VALUE = 0, /* the value of a counter, gauge or untyped series */
    LT_PROM_BUCKET,    /* histogram NAME_bucket{le=...}: cumulative count; bound in `bound` */
    LT_PROM_SUM,       /* histogram or summary NAME_sum */
    LT_PROM_COUNT,     /* histogram or summary NAME_count */
    LT_PROM_QUANTILE,  /* summary NAME{quantile=...}; the quantile in `bound` */
};

struct lt_prom_label {
    const char *name, *value;
};

struct lt_prom_family {
    const char *name; /* the family name: NAME, not NAME_bucket */
    const char *help; /* NULL without a HELP line */
    enum lt_prom_type type;
    bool declared; /* a TYPE line named it */
    size_t nsamples;
};

struct lt_prom_sample {
    const char *name; /* as written: NAME_bucket, NAME_sum, ... */
    size_t family;    /* index into page.families */
    enum lt_prom_role role;
    const struct lt_prom_label *labels; /* nlabels of them, as written */
    size_t nlabels;
    double value;
    double bound; /* le of a bucket, quantile of a quantile sample; else 0 */
    bool has_ts;
    int64_t ts_ms; /* milliseconds since the epoch, when has_ts */
    uint32_t line; /* 1-based line of the page */
    size_t label0; /* private: its first label in the page's label array */
};

/* A parsed page. Everything in it belongs to the page and lives until the
 * next lt_prom_parse() on it or lt_prom_page_release(). */
struct lt_prom_page {
    struct lt_prom_family *families;
    size_t nfamilies;
    struct lt_prom_sample *samples; /* in page order */
    size_t nsamples;
    /* private */
    struct lt_prom_limits lim;
    char *text;
    struct lt_prom_label *labels;
    size_t nlabels, cap_labels, cap_samples, cap_families;
    uint32_t *index; /* open-addressing table: family index + 1, 0 = empty */
    size_t index_cap;
};

/* The default limits (the LT_PROM_*_MAX above). */
struct lt_prom_limits lt_prom_limits_default(void);

/* An empty page; lim NULL = the defaults, and a 0 field = its default. */
void lt_prom_page_init(struct lt_prom_page *pg, const struct lt_prom_limits *lim);
void lt_prom_page_release(struct lt_prom_page *pg);

/* Parse len bytes of data (not kept) into pg, replacing what it held.
 * name (the URL, a file name) starts error messages: "NAME:LINE: ...".
 * Returns 0; LT_EFORMAT for anything not in the format (HTML, a bad escape,
 * a sample that is not NAME_bucket of its histogram, ...), LT_ETRUNC when
 * the page ends inside a line, LT_ELIMIT past a limit, LT_ENOMEM. On error
 * the page is empty. */
int lt_prom_parse(struct lt_prom_page *pg, const void *data, size_t len, const char *name,
                  struct lt_err *err);

/* The family called name, or NULL. */
const struct lt_prom_family *lt_prom_page_family(const struct lt_prom_page *pg, const char *name);
/* The value of label name of s, or NULL. */
const char *lt_prom_sample_label(const struct lt_prom_sample *s, const char *name);
/* "counter", "gauge", ... */
const char *lt_prom_type_name(enum lt_prom_type t);

#endif

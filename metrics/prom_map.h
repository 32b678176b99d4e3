/*
 * Each server's metric names, mapped to one set of canonical quantities.
 *
 * vLLM calls the KV-cache fill `vllm:kv_cache_usage_perc` (and before 0.9
 * `vllm:gpu_cache_usage_perc`), SGLang `sglang:token_usage`, llama.cpp
 * `llamacpp:kv_cache_usage_ratio`; analyze wants one "KV-cache usage, 0..1"
 * whatever the server. This module holds the one table from server names to
 * canonical ones (docs/server-metrics.md prints it, with the reasons), reads
 * a user's mapping file that adds to or overrides it, detects which server
 * a page comes from, and turns a parsed page (prom_text.h) into a struct of
 * canonical values with a `present` bit per field.
 *
 * Units are converted on the way (percent to a fraction, MiB to bytes, mJ
 * to J); several series of one quantity (engines, GPUs, label sets) are
 * summed, or averaged for fractions (see lt_prom_map_canon_agg); GPU quantities
 * are also kept per GPU (label `gpu`).
 */
#ifndef LT_PROM_MAP_H
#define LT_PROM_MAP_H

#include "base/lt_err.h"
#include "metrics/prom_text.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LT_PROM_MAP_BUCKETS_MAX 128 /* distinct bucket bounds of one mapped histogram */
#define LT_PROM_MAP_GPUS_MAX 16     /* GPUs kept one by one (totals count them all) */
#define LT_PROM_MAP_RULES_MAX 256   /* rules of a mapping file */
#define LT_PROM_MAP_FILTERS_MAX 8   /* label matchers of one rule */
#define LT_PROM_MAP_FILE_MAX 65536  /* bytes of a mapping file */
#define LT_PROM_MAP_LINE_MAX 1024   /* bytes of one line of it */
#define LT_PROM_MAP_GPU_ID_MAX 32   /* bytes of a `gpu` label kept per GPU */

/* The canonical quantities: scalars first, then histograms. */
enum lt_prom_canon {
    LT_PM_RUNNING = 0,     /* requests running (in the batch), gauge */
    LT_PM_WAITING,         /* requests waiting (queued), gauge */
    LT_PM_KV_USAGE,        /* KV-cache usage, 0..1, gauge */
    LT_PM_PREEMPTIONS,     /* preemptions, counter */
    LT_PM_PROMPT_TOKENS,   /* prompt (prefill) tokens, counter */
    LT_PM_GEN_TOKENS,      /* generation (output) tokens, counter */
    LT_PM_PREFIX_QUERIES,  /* prefix-cache queries, in tokens, counter */
    LT_PM_PREFIX_HITS,     /* prefix-cache hits, in tokens, counter */
    LT_PM_PREFIX_HIT_RATE, /* a hit rate the server computes itself, 0..1, gauge */
    LT_PM_GPU_UTIL,        /* GPU utilisation, 0..1, gauge (mean over GPUs) */
    LT_PM_GPU_MEM_USED,    /* GPU memory used, bytes, gauge */
    LT_PM_GPU_POWER,       /* GPU power, W, gauge */
    LT_PM_GPU_ENERGY,      /* GPU energy, J, counter */
    LT_PM_SCALARS,
    LT_PM_TTFT = LT_PM_SCALARS, /* time to first token, s, histogram */
    LT_PM_ITL,                  /* inter-token latency (TPOT), s, histogram */
    LT_PM_E2E,                  /* end-to-end request latency, s, histogram */
    LT_PM_COUNT,
};
#define LT_PM_HISTS (LT_PM_COUNT - LT_PM_SCALARS)

enum lt_prom_server {
    LT_PROM_SERVER_UNKNOWN = 0,
    LT_PROM_SERVER_VLLM,
    LT_PROM_SERVER_SGLANG,
    LT_PROM_SERVER_LLAMACPP,
    LT_PROM_SERVER_TGI,
    LT_PROM_SERVER_DCGM,
};

/* How the series of one quantity are combined. */
enum lt_prom_agg {
    LT_PROM_AGG_SUM = 0,
    LT_PROM_AGG_MEAN,
};

/* A mapped histogram: bucket bounds ascending, cumulative counts, summed
 * over the series (engines, label sets) that matched. */
struct lt_prom_hist {
    size_t nbuckets;
    double le[LT_PROM_MAP_BUCKETS_MAX];
    double cum[LT_PROM_MAP_BUCKETS_MAX];
    double sum, count;
};

struct lt_prom_gpu {
    char id[LT_PROM_MAP_GPU_ID_MAX]; /* the value of label `gpu` */
    uint32_t present;                /* bit 1u << canon */
    double v[LT_PM_SCALARS];         /* only the GPU quantities are set */
};

struct lt_prom_values {
    enum lt_prom_server server; /* detected from the page's names */
    uint32_t present;           /* bit 1u << canon for each quantity found */
    double v[LT_PM_SCALARS];
    struct lt_prom_hist hist[LT_PM_HISTS]; /* [canon - LT_PM_SCALARS] */
    /* Quantities found outside their range (lt_prom_map_canon_range): bit
     * 1u << canon, their present bit 0, the value as it came in bad[]. */
    uint32_t out_of_range;
    double bad[LT_PM_SCALARS];
    /* The metric each quantity came from (valid while the map lives). */
    const char *source[LT_PM_COUNT];
    size_t ngpus;
    bool gpus_truncated; /* more than LT_PROM_MAP_GPUS_MAX GPUs: totals count all */
    struct lt_prom_gpu gpus[LT_PROM_MAP_GPUS_MAX];
};

static inline bool lt_prom_map_has(const struct lt_prom_values *v, enum lt_prom_canon c)
{
    return (v->present >> c) & 1u;
}

/* The canonical name ("requests_running", ...) and unit ("1", "s", "bytes",
 * "W", "J", "tokens", "requests") of c; how its series combine. */
const char *lt_prom_map_canon_name(enum lt_prom_canon c);
const char *lt_prom_map_canon_unit(enum lt_prom_canon c);
enum lt_prom_agg lt_prom_map_canon_agg(enum lt_prom_canon c);
/* The values a scalar c can take, [*lo, *hi]: request counts 0 to
 * LT_PROM_MAP_REQUESTS_MAX, fractions 0 to 1, power 0 to
 * LT_PROM_MAP_WATTS_MAX, counters and bytes 0 and up (finite). A value
 * outside is no server's, whatever the page says (a bug, a wrapped
 * counter, a mapping with the wrong factor). */
void lt_prom_map_canon_range(enum lt_prom_canon c, double *lo, double *hi);
#define LT_PROM_MAP_REQUESTS_MAX 1e9 /* requests one server may hold (running, waiting) */
#define LT_PROM_MAP_WATTS_MAX 1e6    /* watts of the GPUs a page reports */
/* The canonical quantity called name; -1 if none. */
int lt_prom_map_canon_find(const char *name);
/* "vllm", "sglang", "llama.cpp", "tgi", "dcgm", "unknown". */
const char *lt_prom_map_server_name(enum lt_prom_server s);

/* The server whose names most samples of the page carry. */
enum lt_prom_server lt_prom_map_detect(const struct lt_prom_page *pg);

/* A mapping: the built-in table plus the rules of mapping files. */
struct lt_prom_map;

/* A mapping with the built-in table only. Returns 0 or LT_ENOMEM. */
int lt_prom_map_new(struct lt_prom_map **out, struct lt_err *err);
void lt_prom_map_free(struct lt_prom_map *m);
/* Add the rules of a mapping file (format in docs/server-metrics.md); they
 * take precedence over the built-in table and over earlier files. Returns
 * 0, LT_EIO, LT_EFORMAT ("FILE:LINE: ...") or LT_ELIMIT; on error no rule
 * of that file is added. */
int lt_prom_map_load(struct lt_prom_map *m, const char *path, struct lt_err *err);
/* The same from len bytes in memory; name is used in messages. */
int lt_prom_map_load_mem(struct lt_prom_map *m, const char *data, size_t len, const char *name,
                         struct lt_err *err);

/* Fill out with the canonical values of the page. m NULL = the built-in
 * table. A quantity whose metrics the page lacks stays absent (its present
 * bit 0, value 0); so does a histogram with more than
 * LT_PROM_MAP_BUCKETS_MAX bounds, and a scalar outside its range (then
 * flagged in out_of_range, its value in bad[]). Never fails. */
void lt_prom_map_apply(const struct lt_prom_map *m, const struct lt_prom_page *pg,
                       struct lt_prom_values *out);

#endif

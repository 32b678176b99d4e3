/*
 * Traffic from a ServeGen workload folder (alibaba/ServeGen: production
 * workloads of Alibaba Cloud Model Studio, e.g. data/reason/deepseek-r1),
 * for `loadtrace synth --servegen DIR` (docs/synth.md).
 *
 * A folder holds one pair of files per client: chunk-N-trace.csv (one row
 * per 600 s window of the day: start s, rate req/s, gap CV, gap family
 * Gamma or Weibull, and its two parameters, shape then scale) and
 * chunk-N-dataset.json (per coarser window, the distributions of
 * input_tokens, output_tokens and, for reasoning models, reason_ratio, each
 * as the text of a {value: probability} map). Each client's arrivals are
 * drawn window by window from its family, with its shape (so its CV) and a
 * scale that gives its rate; each request's lengths from its client's
 * distributions of the window it falls in.
 *
 * Memory: the folder (each chunk file at most 64 MiB, all of them 1 GiB)
 * and one pending arrival per client, however long the slice: arrivals
 * are drawn as they are written.
 */
#ifndef LT_SERVEGEN_H
#define LT_SERVEGEN_H

#include "base/lt_err.h"

#include <stdint.h>

struct lt_servegen_opts {
    const char *dir;
    int64_t start_s;    /* the slice starts here (s of the day); -1 = the first traffic */
    int64_t duration_s; /* and lasts this long; 0 = 600 */
    double rate;        /* scale the clients' rates to this mean req/s; 0 = as recorded */
    uint64_t requests;  /* stop after this many records; 0 = no limit */
    uint64_t seed;
    const char *created; /* header's created; NULL = 1970-01-01T00:00:00Z */
    const char *command; /* for the header's meta; may be NULL */
};

struct lt_servegen_stats {
    uint64_t records;
    uint32_t clients; /* chunks read */
    uint32_t active;  /* of which with traffic in the slice */
    int64_t start_s, duration_s;
    double recorded_rate; /* the folder's mean rate over the slice, req/s */
    double scale;         /* rate / recorded_rate */
};

/* Write the trace to out_path. Returns 0 or a negative LT_E* code with err
 * filled (LT_EINVAL: the options or the folder are not usable). */
int lt_servegen_run(const struct lt_servegen_opts *o, const char *out_path,
                    struct lt_servegen_stats *st, struct lt_err *err);

/* A fresh draw, with another seed, of the slice of dir that trace (made
 * by lt_servegen_run) was drawn from, written to out_path: what `compare
 * DIR TRACE` compares the trace with. LT_EINVAL when trace does not say
 * its slice. */
int lt_servegen_reference(const char *dir, const char *trace, const char *out_path, uint64_t seed,
                          struct lt_err *err);

#endif

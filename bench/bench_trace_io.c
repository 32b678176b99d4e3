/*
 * Benchmark: writing and reading trace files on one core.
 *
 * Writes N Azure-like records (t, in, out drawn from the shapes of the
 * Azure code trace), then reads them back, each on the calling thread, and
 * prints records per second both ways and the bytes per record. Times come
 * from the monotonic clock around the whole loop, file I/O included (the
 * file sits in the page cache, so this is CPU cost, which is what the
 * target of 2 million records per second is about).
 *
 * usage: bench_trace_io [N] [DIR]
 */
#include "base/lt_rng.h"
#include "base/lt_time.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 5000000;
    const char *dir = argc > 2 ? argv[2] : ".";
    char path[4096];
    snprintf(path, sizeof path, "%s/bench_trace_io.lt.zst", dir);
    struct lt_err err = {0};
    struct lt_rng rng;
    lt_rng_seed(&rng, 1);

    /* Draw the records first, so the timing is the writer's alone. */
    struct lt_record *recs = malloc((size_t)n * sizeof *recs);
    if (!recs)
        return 1;
    int64_t t = 0;
    for (long i = 0; i < n; i++) {
        t += (int64_t)lt_rng_exp(&rng, 20000.0); /* ~50 req/s */
        recs[i] = (struct lt_record){.t = t, .has = LT_HAS_IN | LT_HAS_OUT,
                                     .in = (uint32_t)lt_rng_lognormal(&rng, 7.0, 1.0),
                                     .out = (uint32_t)lt_rng_lognormal(&rng, 3.5, 1.2)};
    }

    struct lt_header h = {.kind = LT_KIND_TRACE, .source = "bench"};
    lt_mono t0 = lt_mono_now();
    struct lt_writer *w = lt_writer_open(path, &h, NULL, &err);
    if (!w) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    for (long i = 0; i < n; i++) {
        if (lt_writer_put_record(w, &recs[i], &err) < 0) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
    }
    uint64_t bytes = lt_writer_bytes(w);
    if (lt_writer_close(w, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    double wsec = lt_mono_diff_ns(lt_mono_now(), t0) / 1e9;

    t0 = lt_mono_now();
    struct lt_reader *r = lt_reader_open(path, NULL, &err);
    if (!r) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const struct lt_item *it;
    long got = 0;
    uint64_t sum = 0;
    int rc;
    while ((rc = lt_reader_next(r, &it, &err)) == 1) {
        got++;
        sum += it->rec.in + it->rec.out;
    }
    lt_reader_close(r);
    double rsec = lt_mono_diff_ns(lt_mono_now(), t0) / 1e9;
    if (rc < 0 || got != n) {
        fprintf(stderr, "read back %ld of %ld: %s\n", got, n, err.msg);
        return 1;
    }
    remove(path);
    free(recs);
    printf("trace_io records=%ld write_rec_per_s=%.0f read_rec_per_s=%.0f "
           "bytes_per_record=%.2f (checksum %llu)\n",
           n, n / wsec, n / rsec, (double)bytes / n, (unsigned long long)sum);
    return 0;
}

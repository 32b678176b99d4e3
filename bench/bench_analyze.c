/*
 * Benchmark: loadtrace analyze's streaming pass on one core, and its memory.
 *
 *   bench_analyze gen FILE N CHUNKS [v1|seq]
 *                                     write N result records (4 runs of a
 *                                     concurrency sweep), each with CHUNKS
 *                                     token-bearing chunks (0 = none), in
 *                                     result blocks (format version 2) or,
 *                                     with v1, one map per result. The
 *                                     runs' results alternate (result i is
 *                                     of run i mod 4), the hardest case
 *                                     for the caches; with seq the runs
 *                                     come one after another, each in the
 *                                     order its requests ended, as replay
 *                                     writes a sweep
 *   bench_analyze run FILE            analyze FILE (read, decompress, unpack,
 *                                     summarize) and print records per
 *                                     second and the process's peak RSS
 *   bench_analyze read FILE           the reader alone (decompress, unpack)
 *   bench_analyze mem N CHUNKS        the summarizing pass alone, on results
 *                                     already decoded in memory
 *
 * The two steps are separate processes so that the peak RSS of `run` is the
 * analysis alone. Time comes from the monotonic clock around
 * lt_analyze_file(), file I/O included (the file sits in the page cache).
 */
#include "analyze/analyze.h"
#include "base/lt_rng.h"
#include "base/lt_time.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* CPU seconds used by this process so far: on a shared machine, CPU time
 * says more about the cost than wall time does. */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int gen(const char *path, long n, int nchunks, bool v1, bool seq)
{
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_RESULTS, .source = "bench"};
    struct lt_writer_opts o = {.results_v1 = v1};
    struct lt_writer *w = lt_writer_open(path, &h, &o, &err);
    if (!w)
        goto fail;
    static const uint32_t levels[] = {1, 4, 16, 32};
    for (uint32_t r = 0; r < 4; r++) {
        struct lt_run run = {.id = r, .mode = "concurrency", .concurrency = levels[r]};
        if (lt_writer_put_run(w, &run, &err) < 0)
            goto fail;
    }
    struct lt_rng rng;
    lt_rng_seed(&rng, 1);
    struct lt_chunk ch[256];
    if (nchunks > 256)
        nchunks = 256;
    int64_t t[4] = {0};
    for (long i = 0; i < n; i++) {
        uint32_t run = seq ? (uint32_t)(i * 4 / n) : (uint32_t)(i & 3);
        struct lt_result r = {.run = run, .index = (uint64_t)i};
        int64_t lag = (int64_t)lt_rng_below(&rng, 200);
        int64_t ttft = 20000 + (int64_t)lt_rng_exp(&rng, 30000);
        uint32_t out = 1 + (uint32_t)lt_rng_exp(&rng, 200);
        int64_t itl = 5000 + 2000 * run;
        /* In order of schedule, or (seq) of end: then the requests' sched
         * times go back and forth, as in a file replay wrote. */
        r.sched = seq ? t[run] - (lag + ttft + itl * out) : t[run];
        r.sent = r.sched + lag;
        r.first_byte = r.sent + ttft - 500;
        r.first_token = r.first_content = r.sent + ttft;
        r.end = r.first_token + itl * out;
        for (int c = 0; c < nchunks; c++)
            ch[c] = (struct lt_chunk){.t = r.first_token + (r.end - r.first_token) * c / nchunks,
                                      .tokens = out / (uint32_t)nchunks + 1};
        r.chunks = nchunks ? ch : NULL;
        r.n_chunks = (uint32_t)nchunks;
        r.in = 1000 + (uint32_t)lt_rng_below(&rng, 3000);
        r.out = out;
        r.want_in = r.in;
        r.want_out = out;
        r.status = 200;
        r.finish = "stop";
        r.count = "usage";
        r.has = LT_RHAS_SENT | LT_RHAS_FIRST_BYTE | LT_RHAS_FIRST_TOKEN | LT_RHAS_FIRST_CONTENT |
                LT_RHAS_END | LT_RHAS_IN | LT_RHAS_OUT | LT_RHAS_WANT_IN | LT_RHAS_WANT_OUT |
                LT_RHAS_STATUS | (nchunks ? LT_RHAS_CHUNKS : 0);
        t[run] += 1000000 / levels[run] / 10;
        if (lt_writer_put_result(w, &r, &err) < 0)
            goto fail;
    }
    if (lt_writer_close(w, &err) < 0)
        goto fail;
    return 0;
fail:
    fprintf(stderr, "bench_analyze: %s\n", err.msg);
    return 1;
}

static int run(const char *path)
{
    struct lt_err err = {0};
    struct lt_analyze a;
    double c0 = cpu_s();
    lt_mono t0 = lt_mono_now();
    int rc = lt_analyze_file(path, NULL, &a, &err);
    lt_mono t1 = lt_mono_now();
    if (rc < 0) {
        fprintf(stderr, "bench_analyze: %s\n", err.msg);
        lt_analyze_release(&a);
        return 1;
    }
    double s = lt_mono_diff_ns(t1, t0) / 1e9, c = cpu_s() - c0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%llu results in %.3f s wall, %.3f s CPU: %.2f M results/s per CPU second; peak RSS "
           "%.1f MiB\n",
           (unsigned long long)a.results, s, c, a.results / c / 1e6, ru.ru_maxrss / 1024.0);
    lt_analyze_release(&a);
    return 0;
}

/* The summarizing pass alone, on results already in memory (what analyze
 * adds to the reader's cost): N results cycled from a table of 4096. */
static int mem(long n, int nchunks)
{
    enum { TABLE = 4096 };
    static struct lt_result tab[TABLE];
    static struct lt_chunk ch[TABLE][16];
    struct lt_rng rng;
    lt_rng_seed(&rng, 1);
    if (nchunks > 16)
        nchunks = 16;
    for (int i = 0; i < TABLE; i++) {
        struct lt_result *r = &tab[i];
        *r = (struct lt_result){.run = (uint32_t)(i & 3), .index = (uint64_t)i};
        r->sched = (int64_t)i * 2500;
        r->sent = r->sched + (int64_t)lt_rng_below(&rng, 200);
        int64_t ttft = 20000 + (int64_t)lt_rng_exp(&rng, 30000);
        r->first_token = r->first_content = r->sent + ttft;
        r->out = 1 + (uint32_t)lt_rng_exp(&rng, 200);
        r->end = r->first_token + 6000 * (int64_t)r->out;
        for (int c = 0; c < nchunks; c++)
            ch[i][c] =
                (struct lt_chunk){.t = r->first_token + (r->end - r->first_token) * c / nchunks,
                                  .tokens = r->out / (uint32_t)nchunks + 1};
        r->chunks = ch[i];
        r->n_chunks = (uint32_t)nchunks;
        r->in = r->want_in = 2000;
        r->want_out = r->out;
        r->status = 200;
        r->count = "usage";
        r->has = LT_RHAS_SENT | LT_RHAS_FIRST_TOKEN | LT_RHAS_FIRST_CONTENT | LT_RHAS_END |
                 LT_RHAS_IN | LT_RHAS_OUT | LT_RHAS_WANT_IN | LT_RHAS_WANT_OUT | LT_RHAS_STATUS |
                 (nchunks ? LT_RHAS_CHUNKS : 0);
    }
    struct lt_analyze a;
    struct lt_err err = {0};
    lt_analyze_init(&a, NULL, &err);
    for (uint32_t r = 0; r < 4; r++) {
        struct lt_run run = {.id = r, .concurrency = 1u << (2 * r)};
        lt_analyze_add_run(&a, &run, &err);
    }
    double c0 = cpu_s();
    for (long i = 0; i < n; i++)
        lt_analyze_add_result(&a, &tab[i & (TABLE - 1)], &err);
    lt_analyze_finish(&a, &err);
    double s = cpu_s() - c0;
    printf("summarize only (%d chunks/result): %ld results in %.3f s CPU: %.2f M results/s\n",
           nchunks, n, s, n / s / 1e6);
    lt_analyze_release(&a);
    return 0;
}

/* The reader alone, for comparison: what analyze adds on top of it. */
static int read_only(const char *path)
{
    struct lt_err err = {0};
    double c0 = cpu_s();
    struct lt_reader *r = lt_reader_open(path, NULL, &err);
    if (!r) {
        fprintf(stderr, "bench_analyze: %s\n", err.msg);
        return 1;
    }
    const struct lt_item *it;
    uint64_t n = 0;
    while (lt_reader_next(r, &it, &err) == 1)
        n++;
    lt_reader_close(r);
    double s = cpu_s() - c0;
    printf("read only: %llu values in %.3f s CPU: %.2f M values/s\n", (unsigned long long)n, s,
           n / s / 1e6);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "mem"))
        return mem(strtol(argv[2], NULL, 10), (int)strtol(argv[3], NULL, 10));
    if (argc == 3 && !strcmp(argv[1], "read"))
        return read_only(argv[2]);
    if ((argc == 5 || (argc == 6 && (!strcmp(argv[5], "v1") || !strcmp(argv[5], "seq")))) &&
        !strcmp(argv[1], "gen"))
        return gen(argv[2], strtol(argv[3], NULL, 10), (int)strtol(argv[4], NULL, 10),
                   argc == 6 && !strcmp(argv[5], "v1"), argc == 6 && !strcmp(argv[5], "seq"));
    if (argc == 3 && !strcmp(argv[1], "run"))
        return run(argv[2]);
    fprintf(stderr,
            "usage: bench_analyze gen FILE N CHUNKS [v1|seq] | run FILE | read FILE | mem N "
            "CHUNKS\n");
    return 2;
}

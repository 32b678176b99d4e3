/*
 * gen_results: results and trace files with known properties, written with
 * the writer API, for the command tests of analyze and compare.
 *
 *   gen_results sweep OUT        concurrency 1, 4, 16, 32, closed loop, with
 *                                the calibrated per-request decode speeds of
 *                                DESIGN.md (176, 159, 120, 81 tok/s), 200
 *                                output tokens each; the knee is at 16
 *   gen_results level C OUT [SEED] [SCALE]  one level of that sweep; SCALE
 *                                multiplies every latency (an A/B config)
 *   gen_results late OUT         one rate run, the second half sent 200 ms late
 *   gen_results one OUT          a single request (degenerate charts)
 *   gen_results gaps OUT         one rate run (2/s) whose time series has
 *                                known holes: 30 requests sent every 0.5 s
 *                                with 3 s of silence after the 12th, 20
 *                                tokens 20 ms apart, one gap of 0 (request 5)
 *                                and one stall of 1.5 s (request 7), an
 *                                HTTP 500 (request 20), and a last end at
 *                                18.131 s, 0.131 s into its bucket
 *   gen_results server OUT       one rate run (2/s, 20 requests of 10 tokens)
 *                                with 21 scrape samples 0.5 s apart: running
 *                                k % 5, waiting k % 3, KV usage 0.95 for
 *                                samples 4..7 (2 s above 90 %) else 0.5,
 *                                generation tokens 1000 + 10 k (a delta of
 *                                200, what the results count), prefix hits
 *                                30 of 100 queried tokens per sample, a TTFT
 *                                histogram of 40 requests, half under
 *                                100 ms, half under 200 ms; one scrape error
 *   gen_results twin OUT SCALE TARGET  one rate run (10/s) against TARGET
 *                                (sim:virtual makes it a prediction): 100
 *                                requests sent k * 100 ms, k = 0..99, each
 *                                with TTFT (k + 1) ms and 11 tokens 10 + k % 10
 *                                ms apart, every latency times SCALE; so
 *                                TTFT p50/p90/p99 are 50/90/99 ms, TPOT and
 *                                ITL 14/18/19 ms (times SCALE)
 *   gen_results trace OUT SEED [const]  a trace: Poisson arrivals at 5/s,
 *                                lognormal lengths, sessions, reasoning; with
 *                                "const", every length is the mean
 */
#include "base/lt_rng.h"
#include "traces/trace_writer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUT_TOKENS 200
#define PER_LEVEL 240

static const struct {
    uint32_t c;
    double decode_tps;
} levels[] = {{1, 176}, {4, 159}, {16, 120}, {32, 81}};

/* LT_GEN_FRAME=N closes a frame every N values, for tests that damage one
 * frame of several. */
static struct lt_writer *open_results(const char *path)
{
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_RESULTS, .source = "replay"};
    const char *fr = getenv("LT_GEN_FRAME");
    struct lt_writer_opts wo = {.frame_records = fr ? (uint32_t)strtoul(fr, NULL, 10) : 0};
    struct lt_writer *w = lt_writer_open(path, &h, &wo, &err);
    if (!w)
        fprintf(stderr, "gen_results: %s\n", err.msg);
    return w;
}

/* Request k of run 0, sent at its sched, answered 200: the first of out
 * tokens (usage's count) at ft, the end at end. */
static struct lt_result answered(uint32_t k, int64_t sent, int64_t ft, int64_t end, uint32_t out)
{
    return (struct lt_result){.run = 0,
                              .index = k,
                              .sched = sent,
                              .sent = sent,
                              .first_token = ft,
                              .end = end,
                              .out = out,
                              .status = 200,
                              .count = "usage",
                              .has = LT_RHAS_SENT | LT_RHAS_FIRST_TOKEN | LT_RHAS_END |
                                     LT_RHAS_OUT | LT_RHAS_STATUS};
}

/* One closed-loop level: c slots, each sending its next request when the
 * previous one ends. */
static int level(struct lt_writer *w, uint32_t run, uint32_t c, double tps, uint64_t seed,
                 double scale)
{
    struct lt_err err = {0};
    struct lt_rng rng;
    lt_rng_seed(&rng, seed + c);
    struct lt_run rr = {.id = run,
                        .mode = "concurrency",
                        .concurrency = c,
                        .target = "sim",
                        .model = "test-model",
                        .version = "gen",
                        .warmup = 2};
    if (lt_writer_put_run(w, &rr, &err) < 0)
        goto fail;
    int64_t slot_free[64] = {0};
    static struct lt_chunk ch[OUT_TOKENS];
    for (uint32_t k = 0; k < PER_LEVEL; k++) {
        uint32_t s = 0;
        for (uint32_t j = 1; j < c; j++)
            if (slot_free[j] < slot_free[s])
                s = j;
        struct lt_result r = {.run = run, .index = k};
        r.sched = r.sent = slot_free[s];
        int64_t ttft = (int64_t)(scale * (40000 + 2000 * c + lt_rng_exp(&rng, 5000)));
        double itl = scale * 1e6 / tps;
        r.first_byte = r.sent + ttft - 1000;
        r.first_token = r.sent + ttft;
        uint32_t reasoning = (k % 4 == 0) ? 50 : 0;
        for (uint32_t t = 0; t < OUT_TOKENS; t++)
            ch[t] = (struct lt_chunk){.t = r.first_token + (int64_t)llround(t * itl), .tokens = 1};
        r.first_content = ch[reasoning].t;
        r.end = ch[OUT_TOKENS - 1].t + 500;
        r.chunks = ch;
        r.n_chunks = OUT_TOKENS;
        r.in = 1000 + (uint32_t)(k % 7) * 100;
        r.want_in = r.in;
        r.out = OUT_TOKENS;
        r.want_out = OUT_TOKENS;
        r.reasoning = reasoning;
        r.cached = (k % 2) ? 512 : 0;
        r.status = 200;
        r.finish = (k % 10 == 5) ? "tool_calls" : "stop";
        r.count = "usage";
        r.warmup = k < 2;
        r.has = LT_RHAS_SENT | LT_RHAS_FIRST_BYTE | LT_RHAS_FIRST_TOKEN | LT_RHAS_FIRST_CONTENT |
                LT_RHAS_END | LT_RHAS_CHUNKS | LT_RHAS_IN | LT_RHAS_OUT | LT_RHAS_REASONING |
                LT_RHAS_CACHED | LT_RHAS_WANT_IN | LT_RHAS_WANT_OUT | LT_RHAS_STATUS;
        if (c == 32 && k % 40 == 7) { /* a few overload errors at the top level */
            r.status = 429;
            r.has &= ~(uint32_t)(LT_RHAS_FIRST_TOKEN | LT_RHAS_FIRST_CONTENT | LT_RHAS_CHUNKS |
                                 LT_RHAS_OUT);
            r.end = r.sent + 2000;
            r.err = "http";
        }
        slot_free[s] = r.end;
        if (lt_writer_put_result(w, &r, &err) < 0)
            goto fail;
    }
    return 0;
fail:
    fprintf(stderr, "gen_results: %s\n", err.msg);
    return 1;
}

static int late(struct lt_writer *w)
{
    struct lt_err err = {0};
    struct lt_run rr = {.id = 0, .mode = "rate", .rate = 10};
    if (lt_writer_put_run(w, &rr, &err) < 0)
        goto fail;
    for (uint32_t k = 0; k < 100; k++) {
        int64_t sent = k * 100000 + (k >= 50 ? 200000 : 0);
        int64_t ft = sent + (k + 1) * 1000;
        struct lt_result r = answered(k, sent, ft, ft + 100000, 11);
        r.sched = k * 100000;
        if (lt_writer_put_result(w, &r, &err) < 0)
            goto fail;
    }
    return 0;
fail:
    fprintf(stderr, "gen_results: %s\n", err.msg);
    return 1;
}

static int gaps(struct lt_writer *w)
{
    struct lt_err err = {0};
    struct lt_run rr = {.id = 0, .mode = "rate", .rate = 2, .target = "sim", .model = "m"};
    if (lt_writer_put_run(w, &rr, &err) < 0)
        goto fail;
    static struct lt_chunk ch[20];
    for (uint32_t k = 0; k < 30; k++) {
        int64_t sent = 100000 + 500000 * (int64_t)k + (k >= 12 ? 3000000 : 0);
        int64_t t = sent + 150000;
        for (uint32_t j = 0; j < 20; j++) {
            if (j > 0)
                t += (k == 5 && j == 3) ? 0 : (k == 7 && j == 10) ? 1500000 : 20000;
            ch[j] = (struct lt_chunk){.t = t, .tokens = 1};
        }
        struct lt_result r = answered(k, sent, sent + 150000, t + 1000, 20);
        r.first_content = r.first_token;
        r.chunks = ch;
        r.n_chunks = 20;
        r.has |= LT_RHAS_FIRST_CONTENT | LT_RHAS_CHUNKS;
        if (k == 20) {
            r.status = 500;
            r.err = "http";
            r.end = r.sent + 30000;
            r.has = LT_RHAS_SENT | LT_RHAS_END | LT_RHAS_STATUS;
        }
        if (lt_writer_put_result(w, &r, &err) < 0)
            goto fail;
    }
    return 0;
fail:
    fprintf(stderr, "gen_results: %s\n", err.msg);
    return 1;
}

static int twin(struct lt_writer *w, double scale, const char *target)
{
    struct lt_err err = {0};
    struct lt_run rr = {.id = 0, .mode = "rate", .rate = 10, .target = target, .model = "m"};
    if (lt_writer_put_run(w, &rr, &err) < 0)
        goto fail;
    static struct lt_chunk ch[11];
    for (uint32_t k = 0; k < 100; k++) {
        int64_t sent = 100000 * (int64_t)k;
        int64_t t = sent + llround(scale * 1000 * (k + 1));
        for (uint32_t j = 0; j < 11; j++) {
            if (j > 0)
                t += llround(scale * 1000 * (10 + k % 10));
            ch[j] = (struct lt_chunk){.t = t, .tokens = 1};
        }
        struct lt_result r = answered(k, sent, ch[0].t, t, 11);
        r.first_content = r.first_token;
        r.chunks = ch;
        r.n_chunks = 11;
        r.has |= LT_RHAS_FIRST_CONTENT | LT_RHAS_CHUNKS;
        if (lt_writer_put_result(w, &r, &err) < 0)
            goto fail;
    }
    return 0;
fail:
    fprintf(stderr, "gen_results: %s\n", err.msg);
    return 1;
}

static int trace(const char *path, uint64_t seed, bool constant)
{
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_TRACE, .source = "test", .block_tokens = 512};
    struct lt_writer *w = lt_writer_open(path, &h, NULL, &err);
    if (!w)
        goto fail;
    struct lt_rng rng;
    lt_rng_seed(&rng, seed);
    double t = 0;
    uint64_t session = 0;
    uint32_t turn = 0;
    uint64_t blocks[64];
    for (uint32_t k = 0; k < 4000; k++) {
        t += lt_rng_exp(&rng, 200000);
        if (turn == 0 || lt_rng_uniform(&rng) < 0.4) {
            session = lt_rng_u64(&rng) >> 12;
            turn = 0;
        }
        struct lt_record r = {.t = (int64_t)t, .session = session, .turn = turn++};
        r.in = constant ? 1500 : (uint32_t)fmin(60000, lt_rng_lognormal(&rng, log(1000), 0.8));
        r.out = constant ? 300 : (uint32_t)fmin(8000, 1 + lt_rng_lognormal(&rng, log(220), 0.7));
        r.reasoning = constant ? 0 : (lt_rng_uniform(&rng) < 0.3 ? r.out / 2 : 0);
        uint32_t calls[1] = {40};
        if (!constant && lt_rng_uniform(&rng) < 0.1) {
            r.calls = calls;
            r.n_calls = 1;
            r.has |= LT_HAS_CALLS;
        }
        uint32_t nb = r.in / 512;
        if (nb > 64)
            nb = 64;
        for (uint32_t b = 0; b < nb; b++)
            blocks[b] = lt_mix64(session * 131 + b) >> 12;
        r.blocks = blocks;
        r.n_blocks = nb;
        r.has |= LT_HAS_SESSION | LT_HAS_TURN | LT_HAS_IN | LT_HAS_OUT | LT_HAS_REASONING |
                 (nb ? LT_HAS_BLOCKS : 0);
        if (lt_writer_put_record(w, &r, &err) < 0)
            goto fail;
    }
    if (lt_writer_close(w, &err) < 0)
        goto fail;
    return 0;
fail:
    fprintf(stderr, "gen_results: %s\n", err.msg);
    return 1;
}

static int server(struct lt_writer *w)
{
    struct lt_err err = {0};
    struct lt_run rr = {.id = 0, .mode = "rate", .rate = 2, .target = "sim", .version = "gen"};
    if (lt_writer_put_run(w, &rr, &err) < 0)
        goto fail;
    for (uint32_t k = 0; k < 21; k++) {
        int64_t t = (int64_t)k * 500000;
        if (k < 20) {
            struct lt_result r = answered(k, t, t + 100000, t + 300000, 10);
            if (lt_writer_put_result(w, &r, &err) < 0)
                goto fail;
        }
        struct lt_scrape_val v[6] = {
            {"requests_running", k % 5},
            {"requests_waiting", k % 3},
            {"kv_cache_usage", k >= 4 && k <= 7 ? 0.95 : 0.5},
            {"generation_tokens_total", 1000 + 10.0 * k},
            {"prefix_cache_queries_total", 100.0 * k},
            {"prefix_cache_hits_total", 30.0 * k},
        };
        double le[2] = {0.1, 0.2}, cum[2] = {k, 2.0 * k};
        struct lt_scrape_hist h = {"ttft_seconds", 0.15 * 2 * k, 2.0 * k, 2, le, cum};
        struct lt_scrape sc = {.run = 0,
                               .t = t,
                               .dur = 800,
                               .ep = "http://sim/metrics",
                               .server = "vllm",
                               .v = v,
                               .nv = 6,
                               .h = &h,
                               .nh = 1};
        if (lt_writer_put_scrape(w, &sc, &err) < 0)
            goto fail;
        if (k == 10) {
            struct lt_scrape bad = {
                .run = 0, .t = t + 1, .ep = "http://dcgm/metrics", .err = "HTTP 503"};
            if (lt_writer_put_scrape(w, &bad, &err) < 0)
                goto fail;
        }
    }
    return 0;
fail:
    fprintf(stderr, "gen_results: %s\n", err.msg);
    return 1;
}

/* The sweep: its four levels as runs 0 to 3 of one file. */
static int sweep(struct lt_writer *w)
{
    int rc = 0;
    for (uint32_t i = 0; i < 4 && rc == 0; i++)
        rc = level(w, i, levels[i].c, levels[i].decode_tps, 1, 1.0);
    return rc;
}

/* A single request: 1 token at 1 ms, 10 more at 11 ms. */
static int one(struct lt_writer *w)
{
    struct lt_err err = {0};
    struct lt_run rr = {.id = 0, .mode = "concurrency", .concurrency = 1};
    struct lt_chunk ch[2] = {{.t = 1000, .tokens = 1}, {.t = 11000, .tokens = 10}};
    struct lt_result r = answered(0, 0, 1000, 11000, 11);
    r.first_content = 1000;
    r.chunks = ch;
    r.n_chunks = 2;
    r.has |= LT_RHAS_FIRST_CONTENT | LT_RHAS_CHUNKS;
    return lt_writer_put_run(w, &rr, &err) < 0 || lt_writer_put_result(w, &r, &err) < 0;
}

/* Ten requests of one run (mode "trace", or "concurrency" for loop-dup),
 * request k sent at 100 k ms, its first token 20 ms later, its end 50 ms
 * later; result 5 (record 6: the run record is record 0) changed by kind
 * into one that cannot be true. */
static int bad(struct lt_writer *w, const char *kind)
{
    struct lt_err err = {0};
    bool loop = !strcmp(kind, "loop-dup");
    struct lt_run rr = {.id = 0, .mode = loop ? "concurrency" : "trace", .concurrency = loop};
    if (lt_writer_put_run(w, &rr, &err) < 0)
        return 1;
    for (uint32_t k = 0; k < 10; k++) {
        int64_t t = 100000 * (int64_t)k;
        struct lt_result r = answered(k, t, t + 20000, t + 50000, 10);
        r.first_content = r.first_token;
        r.has |= LT_RHAS_FIRST_CONTENT;
        if (k == 5) {
            if (!strcmp(kind, "end-ft"))
                r.end = r.first_token - 1;
            else if (!strcmp(kind, "fc-ft"))
                r.first_content = r.first_token - 1;
            else if (!strcmp(kind, "neg"))
                r.sched = -5000000;
            else if (!strcmp(kind, "neg-sent"))
                r.sent = -1;
            else if (!strcmp(kind, "huge"))
                r.end = INT64_MAX;
            else if (!strcmp(kind, "dup") || loop)
                r.index = 4;
            else if (strcmp(kind, "ok"))
                return 2;
        }
        if (lt_writer_put_result(w, &r, &err) < 0) {
            fprintf(stderr, "gen_results: %s\n", err.msg);
            return 1;
        }
    }
    return 0;
}

/* Close w; rc, or 1 if the close failed. */
static int close_results(struct lt_writer *w, int rc)
{
    struct lt_err err = {0};
    return lt_writer_close(w, &err) < 0 ? 1 : rc;
}

int main(int argc, char **argv)
{
    /* The modes that write a results file OUT (argv[2]) with no options. */
    static const struct {
        const char *name;
        int (*write)(struct lt_writer *w);
    } files[] = {
        {"sweep", sweep}, {"late", late}, {"one", one}, {"gaps", gaps}, {"server", server}};
    for (size_t k = 0; argc >= 3 && k < sizeof files / sizeof files[0]; k++)
        if (!strcmp(argv[1], files[k].name)) {
            struct lt_writer *w = open_results(argv[2]);
            return w ? close_results(w, files[k].write(w)) : 1;
        }
    if (argc >= 4 && !strcmp(argv[1], "level")) {
        uint32_t c = (uint32_t)strtoul(argv[2], NULL, 10);
        double tps = 0;
        for (int i = 0; i < 4; i++)
            if (levels[i].c == c)
                tps = levels[i].decode_tps;
        struct lt_writer *w = tps > 0 ? open_results(argv[3]) : NULL;
        if (!w)
            return 1;
        uint64_t seed = argc > 4 ? strtoull(argv[4], NULL, 10) : 1;
        double scale = argc > 5 ? strtod(argv[5], NULL) : 1.0;
        return close_results(w, level(w, 0, c, tps, seed, scale));
    }
    if (argc >= 5 && !strcmp(argv[1], "twin")) {
        struct lt_writer *w = open_results(argv[2]);
        return w ? close_results(w, twin(w, strtod(argv[3], NULL), argv[4])) : 1;
    }
    if (argc >= 4 && !strcmp(argv[1], "bad")) {
        struct lt_writer *w = open_results(argv[3]);
        return w ? close_results(w, bad(w, argv[2])) : 1;
    }
    if (argc >= 4 && !strcmp(argv[1], "trace"))
        return trace(argv[2], strtoull(argv[3], NULL, 10), argc > 4 && !strcmp(argv[4], "const"));
    fprintf(stderr,
            "usage: gen_results sweep|late|one|gaps|server OUT | level C OUT [SEED [SCALE]] | "
            "twin OUT SCALE TARGET | trace OUT SEED [const] | bad KIND OUT\n");
    return 2;
}

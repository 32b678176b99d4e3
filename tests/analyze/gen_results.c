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
 *   gen_results trace OUT SEED [const]  a trace: Poisson arrivals at 5/s,
 *                                lognormal lengths, sessions, reasoning; with
 *                                "const", every length is the mean
 */
#include "traces/lt_rng.h"
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

static struct lt_writer *open_results(const char *path)
{
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_RESULTS, .source = "replay"};
    struct lt_writer *w = lt_writer_open(path, &h, NULL, &err);
    if (!w)
        fprintf(stderr, "gen_results: %s\n", err.msg);
    return w;
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
        struct lt_result r = {.run = 0, .index = k, .sched = k * 100000};
        r.sent = r.sched + (k >= 50 ? 200000 : 0);
        r.first_token = r.sent + (k + 1) * 1000;
        r.end = r.first_token + 100000;
        r.out = 11;
        r.status = 200;
        r.count = "usage";
        r.has = LT_RHAS_SENT | LT_RHAS_FIRST_TOKEN | LT_RHAS_END | LT_RHAS_OUT | LT_RHAS_STATUS;
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

int main(int argc, char **argv)
{
    struct lt_err err = {0};
    int rc = 1;
    if (argc >= 3 && !strcmp(argv[1], "sweep")) {
        struct lt_writer *w = open_results(argv[2]);
        if (!w)
            return 1;
        rc = 0;
        for (uint32_t i = 0; i < 4 && rc == 0; i++)
            rc = level(w, i, levels[i].c, levels[i].decode_tps, 1, 1.0);
        if (lt_writer_close(w, &err) < 0)
            rc = 1;
    } else if (argc >= 4 && !strcmp(argv[1], "level")) {
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
        rc = level(w, 0, c, tps, seed, scale);
        if (lt_writer_close(w, &err) < 0)
            rc = 1;
    } else if (argc >= 3 && !strcmp(argv[1], "one")) {
        struct lt_writer *w = open_results(argv[2]);
        if (!w)
            return 1;
        struct lt_run rr = {.id = 0, .mode = "concurrency", .concurrency = 1};
        struct lt_chunk ch[2] = {{.t = 1000, .tokens = 1}, {.t = 11000, .tokens = 10}};
        struct lt_result r = {.run = 0,
                              .sched = 0,
                              .sent = 0,
                              .first_token = 1000,
                              .first_content = 1000,
                              .end = 11000,
                              .chunks = ch,
                              .n_chunks = 2,
                              .out = 11,
                              .status = 200,
                              .count = "usage",
                              .has = LT_RHAS_SENT | LT_RHAS_FIRST_TOKEN | LT_RHAS_FIRST_CONTENT |
                                     LT_RHAS_END | LT_RHAS_CHUNKS | LT_RHAS_OUT | LT_RHAS_STATUS};
        rc = lt_writer_put_run(w, &rr, &err) < 0 || lt_writer_put_result(w, &r, &err) < 0;
        if (lt_writer_close(w, &err) < 0)
            rc = 1;
    } else if (argc >= 3 && !strcmp(argv[1], "late")) {
        struct lt_writer *w = open_results(argv[2]);
        if (!w)
            return 1;
        rc = late(w);
        if (lt_writer_close(w, &err) < 0)
            rc = 1;
    } else if (argc >= 4 && !strcmp(argv[1], "trace")) {
        rc = trace(argv[2], strtoull(argv[3], NULL, 10), argc > 4 && !strcmp(argv[4], "const"));
    } else {
        fprintf(stderr, "usage: gen_results sweep|late OUT | level C OUT [SEED [SCALE]] | "
                        "trace OUT SEED [const]\n");
        return 2;
    }
    return rc;
}

/*
 * Unit tests of the sim's performance model in virtual time: step costs,
 * batching, queueing on slots and KV, chunked prefill, the prefix cache,
 * cancellation, and the calibration of the default profile against the
 * published Qwen3.5-397B / 8x RTX PRO 6000 table (closed loop).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim/sim_model.h"
#include "sim/sim_profile.h"
#include "base/lt_rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000LL

/* A test profile with round numbers. */
static struct lt_sim_profile prof(void)
{
    struct lt_sim_profile p;
    assert_int_equal(lt_sim_profile_builtin(&p, "default", NULL), 0);
    p.step_ms = 10;
    p.step_ms_per_seq = 1;
    p.prefill_step_ms = 20;
    p.prefill_ms_per_seq = 0;
    p.prefill_ms_per_token = 0.5;
    p.cached_ms_per_token = 0;
    p.max_running = 100;
    p.kv_tokens = 1000000;
    p.batch_tokens = 10000;
    p.block_tokens = 10;
    p.cache_blocks = 100;
    return p;
}

struct rec {
    int64_t t[64];
    uint32_t n;
    bool done;
    uint32_t cached;
    int32_t slot;
};

static void on_emit(void *ud, const struct lt_sim_emit *e)
{
    struct rec *r = e->user;
    assert_int_equal(e->index, r->n);
    if (r->n < 64)
        r->t[r->n] = e->t;
    r->n++;
    r->done = e->last;
    r->cached = e->cached_tokens;
    r->slot = e->slot;
}

static void run_all(struct lt_sim_model *m)
{
    int64_t t;
    while ((t = lt_sim_model_next(m)) != INT64_MAX)
        lt_sim_model_advance(m, t, on_emit, NULL);
}

static struct lt_sim_mreq *add(struct lt_sim_model *m, int64_t now, uint32_t prompt, uint32_t out,
                               const uint64_t *blocks, uint32_t nb, struct rec *r)
{
    struct lt_sim_req q = {
        .prompt_tokens = prompt, .out_tokens = out, .blocks = blocks, .nblocks = nb, .user = r};
    struct lt_sim_mreq *h = lt_sim_model_add(m, now, &q, NULL);
    assert_non_null(h);
    return h;
}

static void test_single_request_timing(void **state)
{
    struct lt_sim_profile p = prof();
    struct lt_sim_model *m = lt_sim_model_new(&p, NULL);
    struct rec r = {0};
    add(m, 5 * MS, 100, 4, NULL, 0, &r);
    run_all(m);
    assert_int_equal(r.n, 4);
    assert_true(r.done);
    /* prefill step: a + P0 + 100 p = 10 + 20 + 50; then a + k per token. */
    assert_int_equal(r.t[0], 5 * MS + 80 * MS);
    assert_int_equal(r.t[1] - r.t[0], 11 * MS);
    assert_int_equal(r.t[3] - r.t[2], 11 * MS);
    lt_sim_model_free(m);
}

static void test_batch_of_four(void **state)
{
    struct lt_sim_profile p = prof();
    struct lt_sim_model *m = lt_sim_model_new(&p, NULL);
    struct rec r[4] = {0};
    add(m, 0, 10, 5, NULL, 0, &r[0]);
    /* The others arrive during the first step: they wait for its end. */
    for (int i = 1; i < 4; i++)
        add(m, 1 * MS, 10, 5, NULL, 0, &r[i]);
    run_all(m);
    /* step 1: r0 prefill (10+20+5 = 35); step 2: r0 decodes, r1..3
     * prefill 30 tokens (10 + 1 + 20 + 15 = 46). */
    assert_int_equal(r[0].t[0], 35 * MS);
    assert_int_equal(r[0].t[1], 81 * MS);
    assert_int_equal(r[1].t[0], 81 * MS);
    /* then all four decode together: 10 + 4 = 14 ms a step */
    assert_int_equal(r[1].t[1] - r[1].t[0], 14 * MS);
    assert_int_equal(r[0].t[2] - r[0].t[1], 14 * MS);
    lt_sim_model_free(m);
}

static void test_max_running_queues(void **state)
{
    struct lt_sim_profile p = prof();
    p.max_running = 2;
    struct lt_sim_model *m = lt_sim_model_new(&p, NULL);
    struct rec r[3] = {0};
    for (int i = 0; i < 3; i++)
        add(m, 0, 10, 3, NULL, 0, &r[i]);
    /* r0 started a step alone; at its end r1 joins, r2 must wait. */
    lt_sim_model_advance(m, lt_sim_model_next(m), on_emit, NULL);
    struct lt_sim_model_stats st;
    lt_sim_model_stats(m, &st);
    assert_int_equal(st.running, 2);
    assert_int_equal(st.queued, 1);
    run_all(m);
    assert_true(r[0].done && r[1].done && r[2].done);
    /* r2 starts only when r0 and r1 have left. */
    assert_true(r[2].t[0] > r[0].t[2]);
    lt_sim_model_free(m);
}

static void test_kv_limit_queues(void **state)
{
    struct lt_sim_profile p = prof();
    p.kv_tokens = 250; /* one request of 100 + 100 fits, not two */
    struct lt_sim_model *m = lt_sim_model_new(&p, NULL);
    struct rec a = {0}, b = {0};
    add(m, 0, 100, 100, NULL, 0, &a);
    add(m, 0, 100, 100, NULL, 0, &b);
    struct lt_sim_model_stats st;
    lt_sim_model_stats(m, &st);
    assert_int_equal(st.running, 1);
    assert_int_equal(st.kv_used, 200);
    run_all(m);
    assert_int_equal(b.n, 100);
    lt_sim_model_stats(m, &st);
    assert_int_equal(st.kv_used, 0);
    lt_sim_model_free(m);
}

static void test_chunked_prefill(void **state)
{
    struct lt_sim_profile p = prof();
    p.batch_tokens = 64;
    struct lt_sim_model *m = lt_sim_model_new(&p, NULL);
    struct rec r = {0};
    add(m, 0, 200, 2, NULL, 0, &r);
    run_all(m);
    /* 64 + 64 + 64 + 8 tokens: four prefill steps of 10 + 20 + 0.5 n */
    assert_int_equal(r.t[0], (4 * 30 + 100) * MS);
    struct lt_sim_model_stats st;
    lt_sim_model_stats(m, &st);
    assert_int_equal(st.steps, 5);
    lt_sim_model_free(m);
}

static void test_prefix_cache_lru(void **state)
{
    struct lt_sim_profile p = prof();
    p.cache_blocks = 4;
    struct lt_sim_model *m = lt_sim_model_new(&p, NULL);
    uint64_t A[3] = {1, 2, 3}, B[3] = {7, 8, 9}, A2[3] = {1, 2, 33};
    struct rec r1 = {0}, r2 = {0}, r3 = {0}, r4 = {0};
    add(m, 0, 35, 1, A, 3, &r1);
    run_all(m);
    assert_int_equal(r1.cached, 0);
    add(m, 1000 * MS, 35, 1, A2, 3, &r2); /* shares two blocks with A */
    run_all(m);
    assert_int_equal(r2.cached, 20);
    assert_true(r2.t[0] - 1000 * MS < r1.t[0]);
    add(m, 2000 * MS, 35, 1, B, 3, &r3); /* evicts the oldest blocks */
    run_all(m);
    add(m, 3000 * MS, 35, 1, A, 3, &r4);
    run_all(m);
    assert_int_equal(r4.cached, 0); /* block 1 was evicted, so no prefix hit */
    lt_sim_model_free(m);
}

static void test_cancel_frees(void **state)
{
    struct lt_sim_profile p = prof();
    struct lt_sim_model *m = lt_sim_model_new(&p, NULL);
    struct rec a = {0}, b = {0};
    struct lt_sim_mreq *ha = add(m, 0, 10, 50, NULL, 0, &a);
    struct lt_sim_mreq *hb = add(m, 0, 10, 50, NULL, 0, &b);
    lt_sim_model_advance(m, 100 * MS, on_emit, NULL);
    uint32_t seen = a.n;
    assert_true(seen > 0);
    lt_sim_model_cancel(m, ha);
    lt_sim_model_cancel(m, hb);
    run_all(m);
    assert_int_equal(a.n, seen);
    struct lt_sim_model_stats st;
    lt_sim_model_stats(m, &st);
    assert_int_equal(st.running, 0);
    assert_int_equal(st.kv_used, 0);
    assert_int_equal(lt_sim_model_next(m), INT64_MAX);
    lt_sim_model_free(m);
}

static void test_fast_profile_is_instant(void **state)
{
    struct lt_sim_profile p;
    assert_int_equal(lt_sim_profile_builtin(&p, "fast", NULL), 0);
    struct lt_sim_model *m = lt_sim_model_new(&p, NULL);
    struct rec r = {0};
    add(m, 42, 1000, 60, NULL, 0, &r);
    lt_sim_model_advance(m, 42, on_emit, NULL);
    assert_int_equal(r.n, 60);
    assert_int_equal(r.t[59], 42);
    lt_sim_model_free(m);
}

/* ---- calibration: closed loop, as the published benchmark ran ---- */

struct client {
    int64_t send, first, end;
    bool done;
};

struct loop {
    struct client *c;
    int sent, total;
    int64_t pend[64];
    int npend;
};

static void on_loop_emit(void *ud, const struct lt_sim_emit *e)
{
    struct loop *l = ud;
    struct client *c = e->user;
    if (e->index == 0)
        c->first = e->t;
    if (e->last) {
        c->end = e->t;
        c->done = true;
        if (l->sent + l->npend < l->total)
            l->pend[l->npend++] = e->t; /* the client sends the next one at once */
    }
}

#define CAL_OUT 1000
#define CAL_PROMPT 100
#define CAL_PER_LEVEL 4 /* requests per level = 4 x concurrency */

/* Run one level in virtual time; per-request decode tok/s (mean of
 * (out-1)/(E2E-TTFT)) and aggregate tok/s (sum out / (last end - first send)). */
static void closed_loop(const struct lt_sim_profile *p, int conc, double *per_req, double *agg)
{
    struct lt_sim_model *m = lt_sim_model_new(p, NULL);
    struct loop l = {.total = conc * CAL_PER_LEVEL};
    l.c = calloc((size_t)l.total, sizeof *l.c);
    for (int i = 0; i < conc; i++)
        l.pend[l.npend++] = 0;
    for (;;) {
        int64_t next = lt_sim_model_next(m);
        if (l.npend && l.pend[0] <= next) {
            int64_t t = l.pend[0];
            memmove(l.pend, l.pend + 1, (size_t)--l.npend * sizeof l.pend[0]);
            lt_sim_model_advance(m, t, on_loop_emit, &l);
            struct client *c = &l.c[l.sent];
            uint64_t blocks[1] = {lt_mix64((uint64_t)l.sent)};
            struct lt_sim_req q = {.prompt_tokens = CAL_PROMPT,
                                   .out_tokens = CAL_OUT,
                                   .blocks = blocks,
                                   .nblocks = 1,
                                   .user = c};
            c->send = t;
            l.sent++;
            assert_non_null(lt_sim_model_add(m, t, &q, NULL));
            continue;
        }
        if (next == INT64_MAX)
            break;
        lt_sim_model_advance(m, next, on_loop_emit, &l);
    }
    double sum = 0;
    int64_t first = INT64_MAX, last = 0;
    for (int i = 0; i < l.total; i++) {
        assert_true(l.c[i].done);
        sum += (CAL_OUT - 1) / ((double)(l.c[i].end - l.c[i].first) / 1e9);
        if (l.c[i].send < first)
            first = l.c[i].send;
        if (l.c[i].end > last)
            last = l.c[i].end;
    }
    *per_req = sum / l.total;
    *agg = (double)l.total * CAL_OUT / ((double)(last - first) / 1e9);
    free(l.c);
    lt_sim_model_free(m);
}

static void test_default_profile_calibration(void **state)
{
    static const int conc[4] = {1, 4, 16, 32};
    static const double pub_req[4] = {176, 159, 120, 81}, pub_agg[4] = {172, 542, 1647, 2156};
    struct lt_sim_profile p;
    assert_int_equal(lt_sim_profile_builtin(&p, "default", NULL), 0);
    printf("  C  per-req (published)      agg (published)\n");
    for (int i = 0; i < 4; i++) {
        double pr, ag;
        closed_loop(&p, conc[i], &pr, &ag);
        printf(" %2d  %6.1f (%3.0f, %+5.1f%%)  %7.1f (%4.0f, %+5.1f%%)\n", conc[i], pr, pub_req[i],
               100 * (pr / pub_req[i] - 1), ag, pub_agg[i], 100 * (ag / pub_agg[i] - 1));
        assert_true(fabs(pr / pub_req[i] - 1) < 0.10);
        assert_true(fabs(ag / pub_agg[i] - 1) < 0.10);
    }
}

static void test_profile_file(void **state)
{
    const char *dir = getenv("LT_TMP");
    char path[512];
    snprintf(path, sizeof path, "%s/p.profile", dir ? dir : "/tmp");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("# my server\nmodel = my/model\nstep_ms = 7.5  # a\nmax_running=8\nreasoning = on\n", f);
    fclose(f);
    struct lt_sim_profile p;
    struct lt_err err = {0};
    assert_int_equal(lt_sim_profile_load(&p, path, &err), 0);
    assert_string_equal(p.model, "my/model");
    assert_true(p.step_ms == 7.5);
    assert_int_equal(p.max_running, 8);
    assert_int_equal(p.reasoning, 1);
    assert_true(p.step_ms_per_seq > 0); /* default kept */
    f = fopen(path, "w");
    fputs("step_ms = 1\nbogus = 3\n", f);
    fclose(f);
    assert_int_equal(lt_sim_profile_load(&p, path, &err), LT_EINVAL);
    assert_non_null(strstr(err.msg, ":2"));
    f = fopen(path, "w");
    fputs("step_ms = fast\n", f);
    fclose(f);
    assert_int_equal(lt_sim_profile_load(&p, path, &err), LT_EFORMAT);
    assert_int_equal(lt_sim_profile_load(&p, "nosuch", &err), LT_EINVAL);
    /* Values no server has, which once gave virtual replays negative times. */
    static const char *const absurd[] = {"step_ms = 1e308\n", "prefill_ms_per_token = 60001\n",
                                         "reasoning_fraction = 2\n",
                                         "step_ms_per_seq = 50000\nmax_running = 100000\n"};
    for (size_t i = 0; i < sizeof absurd / sizeof absurd[0]; i++) {
        f = fopen(path, "w");
        fputs(absurd[i], f);
        fclose(f);
        assert_true(lt_sim_profile_load(&p, path, &err) < 0);
        assert_non_null(strstr(err.msg, i < 3 ? "largest" : "an hour"));
    }
    lt_sim_profile_builtin(&p, "default", &err);
    p.step_ms = 1e308;
    assert_int_equal(lt_sim_profile_check(&p, &err), LT_EINVAL);
    assert_non_null(strstr(err.msg, "step_ms"));
}

/* Short prompts join a step only while prefill_seqs and the token budget
 * allow: 40 arrivals of 10 tokens with prefill_seqs 16 and a budget of 100
 * prefill 10, then 10, ... never all 40 in one step. */
static void test_prefill_admission_limits(void **state)
{
    struct lt_sim_profile p = prof();
    p.prefill_ms_per_seq = 100;
    p.prefill_seqs = 16;
    p.batch_tokens = 100;
    struct lt_sim_model *m = lt_sim_model_new(&p, NULL);
    static struct rec r[40];
    memset(r, 0, sizeof r);
    struct rec first = {0};
    add(m, 0, 10, 3, NULL, 0, &first);
    for (int i = 0; i < 40; i++)
        add(m, 1 * MS, 10, 3, NULL, 0, &r[i]);
    lt_sim_model_advance(m, lt_sim_model_next(m), on_emit, NULL);
    /* step 2: one decoder, 99 tokens of budget: 9 prompts of 10 (the
     * tenth would get a chunk of 9 and is admitted too: 10 start). */
    struct lt_sim_model_stats st;
    lt_sim_model_stats(m, &st);
    assert_int_equal(st.running, 11);
    assert_int_equal(st.queued, 30);
    /* 10 + 1 + 20 + 100 x 10 + 0.5 x 99 */
    assert_int_equal(lt_sim_model_next(m) - first.t[0], (int64_t)(1080.5 * MS));
    lt_sim_model_free(m);
    p.batch_tokens = 10000; /* now prefill_seqs binds */
    m = lt_sim_model_new(&p, NULL);
    memset(r, 0, sizeof r);
    memset(&first, 0, sizeof first);
    add(m, 0, 10, 3, NULL, 0, &first);
    for (int i = 0; i < 40; i++)
        add(m, 1 * MS, 10, 3, NULL, 0, &r[i]);
    lt_sim_model_advance(m, lt_sim_model_next(m), on_emit, NULL);
    lt_sim_model_stats(m, &st);
    assert_int_equal(st.running, 17);
    assert_int_equal(st.queued, 24);
    run_all(m);
    for (int i = 0; i < 40; i++)
        assert_true(r[i].done);
    lt_sim_model_free(m);
}

/* Attention over the KV cache: a decoder's step costs more as its
 * context (prompt + tokens so far) grows. */
static void test_decode_kv_cost(void **state)
{
    struct lt_sim_profile p = prof();
    p.decode_ms_per_kv_token = 0.01;
    struct lt_sim_model *m = lt_sim_model_new(&p, NULL);
    struct rec r = {0};
    add(m, 0, 1000, 4, NULL, 0, &r);
    run_all(m);
    /* prefill: 10 + 20 + 500; decode k with 1000 + k tokens of context:
     * 10 + 1 + 0.01 x (1000 + k) */
    assert_int_equal(r.t[0], 530 * MS);
    assert_int_equal(r.t[1] - r.t[0], (int64_t)(21.01 * MS));
    assert_int_equal(r.t[2] - r.t[1], (int64_t)(21.02 * MS));
    assert_int_equal(r.t[3] - r.t[2], (int64_t)(21.03 * MS));
    lt_sim_model_free(m);
}

/* preempt = on: KV holds only what was computed; when decoders would
 * overflow it the newest request is sent back, recomputes its prompt and
 * output so far, and goes on; every token still comes exactly once. */
static void test_preemption_recomputes(void **state)
{
    struct lt_sim_profile p = prof();
    p.preempt = 1;
    p.kv_tokens = 230; /* two prompts of 100 fit; their outputs of 20 do not */
    struct lt_sim_model *m = lt_sim_model_new(&p, NULL);
    struct rec a = {0}, b = {0};
    add(m, 0, 100, 20, NULL, 0, &a);
    add(m, 0, 100, 20, NULL, 0, &b);
    run_all(m);
    assert_true(a.done && b.done);
    assert_int_equal(a.n, 20);
    assert_int_equal(b.n, 20);
    struct lt_sim_model_stats st;
    lt_sim_model_stats(m, &st);
    assert_true(st.preemptions >= 1);
    assert_int_equal(st.kv_used, 0);
    /* the recomputation (a prefill of 100 + tokens so far) shows in b's
     * timeline as one gap longer than a decode step */
    int64_t longest = 0;
    for (uint32_t i = 1; i < 20; i++)
        if (b.t[i] - b.t[i - 1] > longest)
            longest = b.t[i] - b.t[i - 1];
    assert_true(longest > 50 * MS);
    lt_sim_model_free(m);
    /* off (the default): the second request waits for the first's KV */
    p.preempt = 0;
    m = lt_sim_model_new(&p, NULL);
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    add(m, 0, 100, 20, NULL, 0, &a);
    add(m, 0, 100, 20, NULL, 0, &b);
    run_all(m);
    lt_sim_model_stats(m, &st);
    assert_int_equal(st.preemptions, 0);
    assert_true(b.t[0] > a.t[19]);
    lt_sim_model_free(m);
}

/* The decode step by batch size: two decoders cost step_ms_by_batch[1]
 * (not step_ms + 2 step_ms_per_seq), a batch beyond the table its last
 * entry plus step_ms_per_seq per further decoder. */
static void test_step_by_batch(void **state)
{
    struct lt_sim_profile p = prof(); /* line: 10 + 1 D */
    p.step_ms_by_batch[0] = 12;
    p.step_ms_by_batch[1] = 30;
    p.n_step_ms_by_batch = 2;
    assert_true(lt_sim_profile_decode_ms(&p, 0) == 10);
    assert_true(lt_sim_profile_decode_ms(&p, 2) == 30);
    assert_true(lt_sim_profile_decode_ms(&p, 4) == 32);
    struct lt_sim_model *m = lt_sim_model_new(&p, NULL);
    struct rec a = {0}, b = {0};
    add(m, 0, 100, 3, NULL, 0, &a);
    add(m, 0, 100, 3, NULL, 0, &b);
    run_all(m);
    /* a's prefill alone: 10 + 20 + 0.5 x 100; b's beside a's decode:
     * 12 + 20 + 50; then two decoders: 30; then b alone: 12 */
    assert_int_equal(a.t[0], 80 * MS);
    assert_int_equal(a.t[1] - a.t[0], 82 * MS);
    assert_int_equal(a.t[2] - a.t[1], 30 * MS);
    assert_int_equal(b.t[1] - b.t[0], 30 * MS);
    assert_int_equal(b.t[2] - b.t[1], 12 * MS);
    lt_sim_model_free(m);
}

/* llama-server's slots (slot_runs): a request gets the highest never-used
 * slot, then the lowest that holds a prompt sharing enough of it; a step
 * pays one pass (step_ms_by_batch) per run of consecutive busy slots, and a
 * prompt on the slot just after a run joins its pass. */
static struct lt_sim_profile slot_prof(void)
{
    struct lt_sim_profile p = prof(); /* prefill-only step 10; prefill 20 + 0.5 a token */
    p.max_running = 4;
    p.slot_runs = 1;
    p.cache_blocks = 0;
    const double pass[4] = {7, 21, 22, 23}; /* a CPU's: two rows cost more than two of one */
    memcpy(p.step_ms_by_batch, pass, sizeof pass);
    p.n_step_ms_by_batch = 4;
    return p;
}

static void test_slot_runs(void **state)
{
    struct lt_sim_profile p = slot_prof();
    struct lt_sim_model *m = lt_sim_model_new(&p, NULL);
    struct rec a = {0}, b = {0}, c = {0};
    add(m, 0, 100, 5, NULL, 0, &a); /* slot 3 */
    add(m, 0, 100, 2, NULL, 0, &b); /* slot 2 */
    add(m, 0, 100, 5, NULL, 0, &c); /* slot 1 */
    run_all(m);
    /* a's prefill alone: 10 + 20 + 50 */
    assert_int_equal(a.t[0], 80 * MS);
    /* a decodes on 3 while b and c prefill on 2 and 1 (before it: they join
     * no pass): 7 + 20 + 0.5 x 200 */
    assert_int_equal(b.t[0], 207 * MS);
    assert_int_equal(c.t[0], 207 * MS);
    /* slots 1, 2, 3 in one pass: 22 */
    assert_int_equal(c.t[1] - c.t[0], 22 * MS);
    /* b leaves slot 2: slots 1 and 3 are two passes of one, 7 + 7, where
     * a batch of two would cost 21 */
    assert_int_equal(c.t[2] - c.t[1], 14 * MS);
    assert_int_equal(a.t[3] - a.t[2], 14 * MS);
    assert_int_equal(a.t[4] - a.t[3], 14 * MS);
    assert_int_equal(c.t[4] - c.t[3], 7 * MS); /* c alone */
    lt_sim_model_free(m);

    /* without slots the same requests pay by the batch */
    p.slot_runs = 0;
    m = lt_sim_model_new(&p, NULL);
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(&c, 0, sizeof c);
    add(m, 0, 100, 5, NULL, 0, &a);
    add(m, 0, 100, 2, NULL, 0, &b);
    add(m, 0, 100, 5, NULL, 0, &c);
    run_all(m);
    assert_int_equal(c.t[2] - c.t[1], 21 * MS);
    lt_sim_model_free(m);
}

static void test_slot_choice_and_chain(void **state)
{
    struct lt_sim_profile p = slot_prof();
    p.shared_prefix_tokens = 20; /* 20 of 100: a share of 0.2, above 0.1 */
    struct lt_sim_model *m = lt_sim_model_new(&p, NULL);
    struct rec a = {0}, b = {0}, c = {0}, d = {0};
    add(m, 0, 100, 2, NULL, 0, &a); /* slot 3 */
    add(m, 0, 100, 2, NULL, 0, &b); /* slot 2 */
    run_all(m);
    assert_int_equal(a.cached, 0);
    assert_int_equal(b.cached, 0);
    /* c gets slot 2, the lowest holding a prompt: its 20 cached, 80
     * prefilled: 10 + 20 + 40 */
    int64_t t0 = 1000 * MS;
    add(m, t0, 100, 4, NULL, 0, &c);
    lt_sim_model_advance(m, t0 + 70 * MS, on_emit, NULL);
    assert_int_equal(c.cached, 20);
    assert_int_equal(c.t[0], t0 + 70 * MS);
    /* d arrives as c's first decode starts (7), so gets slot 3 for the
     * step after: its prompt's first token joins c's pass, 21 in place of
     * 7, + 20 + 0.5 x 80 */
    add(m, t0 + 70 * MS, 100, 3, NULL, 0, &d);
    run_all(m);
    assert_int_equal(d.cached, 20);
    assert_int_equal(c.t[1] - c.t[0], 7 * MS);
    assert_int_equal(c.t[2] - c.t[1], 81 * MS);
    assert_int_equal(d.t[0], c.t[2]);
    assert_int_equal(d.t[1] - d.t[0], 21 * MS); /* slots 2 and 3: one pass */
    /* an erase empties the slots: the next prefills the whole prompt */
    lt_sim_model_reset_prefix(m);
    struct rec x = {0};
    add(m, d.t[2] + 100 * MS, 100, 2, NULL, 0, &x);
    run_all(m);
    assert_int_equal(x.cached, 0);
    lt_sim_model_free(m);
}

/* The prompt start each slot keeps: the first max_running requests after a
 * start or a reset prefill it, later ones find it cached. */
static struct lt_sim_mreq *add_pinned(struct lt_sim_model *m, int64_t now, uint32_t out,
                                      uint32_t slot, struct rec *r)
{
    struct lt_sim_req q = {
        .prompt_tokens = 100, .out_tokens = out, .user = r, .pinned = true, .pin_slot = slot};
    struct lt_sim_mreq *h = lt_sim_model_add(m, now, &q, NULL);
    assert_non_null(h);
    return h;
}

/* id_slot: a request pinned to a busy slot waits for it while later ones
 * pass it; one request pinned to each slot from the highest down, then an
 * erase, gives the slots a fresh server's order whatever ran before. */
static void test_slot_pinned(void **state)
{
    struct lt_sim_profile p = slot_prof();
    struct lt_sim_model *m = lt_sim_model_new(&p, NULL);
    struct rec a = {0}, b = {0}, c = {0};
    add_pinned(m, 0, 5, 4, &a); /* slot 4 mod 4: 0 */
    add_pinned(m, 0, 2, 0, &b); /* waits for a */
    add(m, 0, 100, 2, NULL, 0, &c);
    run_all(m);
    assert_int_equal(a.slot, 0);
    assert_int_equal(c.slot, 3);
    assert_int_equal(b.slot, 0);
    assert_true(c.t[0] < a.t[4]);
    assert_true(b.t[0] > a.t[4]);
    /* slots 1 and 2 never used, then 3, then 0: after an erase, three
     * requests at once take 2, 1 and 3 (the least recently used first) */
    lt_sim_model_reset_prefix(m);
    struct rec x[3] = {0};
    for (uint32_t i = 0; i < 3; i++)
        add(m, 1000 * MS, 100, 50, NULL, 0, &x[i]);
    run_all(m);
    assert_int_equal(x[0].slot, 2);
    assert_int_equal(x[1].slot, 1);
    assert_int_equal(x[2].slot, 3);
    /* after one pinned to each slot from the highest down and an erase,
     * they take 3, 2 and 1, as on a server just started */
    struct rec t[4] = {0};
    for (uint32_t i = 0; i < 4; i++) {
        add_pinned(m, (3000 + 1000 * (int64_t)i) * MS, 1, 3 - i, &t[i]);
        run_all(m);
        assert_int_equal(t[i].slot, 3 - i);
    }
    lt_sim_model_reset_prefix(m);
    struct rec z[3] = {0};
    for (uint32_t i = 0; i < 3; i++)
        add(m, 8000 * MS, 100, 50, NULL, 0, &z[i]);
    run_all(m);
    for (uint32_t i = 0; i < 3; i++)
        assert_int_equal(z[i].slot, 3 - i);
    lt_sim_model_free(m);
}

static void test_shared_prefix(void **state)
{
    struct lt_sim_profile p = prof();
    p.max_running = 2;
    p.shared_prefix_tokens = 20;
    p.cache_blocks = 0;
    struct lt_sim_model *m = lt_sim_model_new(&p, NULL);
    struct rec r[4];
    memset(r, 0, sizeof r);
    int64_t now = 0, sent[4];
    for (int i = 0; i < 4; i++) {
        sent[i] = now;
        add(m, now, 100, 2, NULL, 0, &r[i]);
        run_all(m);
        now = r[i].t[1];
    }
    assert_int_equal(r[0].cached, 0);
    assert_int_equal(r[1].cached, 0);
    assert_int_equal(r[2].cached, 20);
    assert_int_equal(r[3].cached, 20);
    /* the third prefills 80 tokens: 10 + 20 + 0.5 x 80 */
    assert_int_equal(r[2].t[0] - sent[2], 70 * MS);
    assert_int_equal(r[1].t[0] - sent[1], 80 * MS);
    lt_sim_model_reset_prefix(m);
    struct rec x = {0};
    add(m, now, 100, 2, NULL, 0, &x);
    run_all(m);
    assert_int_equal(x.cached, 0);
    lt_sim_model_free(m);
}

/* Attention in the prefill: a prompt of P tokens pays P (P - 1) / 2 pairs,
 * and a chunk after s tokens pays c s + c (c - 1) / 2. */
static void test_prefill_ctx(void **state)
{
    struct lt_sim_profile p = prof();
    p.prefill_ms_per_token_ctx = 0.01;
    struct lt_sim_model *m = lt_sim_model_new(&p, NULL);
    struct rec r = {0};
    add(m, 0, 100, 2, NULL, 0, &r);
    run_all(m);
    /* 10 + 20 + 0.5 x 100 + 0.01 x 4950 = 129.5 */
    assert_int_equal(r.t[0], 129500000LL);
    lt_sim_model_free(m);
    p.batch_tokens = 60; /* chunks of 60 and 40: pairs 1770, then 40 x 60 + 780 */
    m = lt_sim_model_new(&p, NULL);
    struct rec c = {0};
    add(m, 0, 100, 2, NULL, 0, &c);
    run_all(m);
    /* (10 + 20 + 30 + 17.7) + (10 + 20 + 20 + 31.8) */
    assert_int_equal(c.t[0], 159500000LL);
    lt_sim_model_free(m);
}

/* step_ms_by_batch in a profile file: a list, "off", and what is refused;
 * it reads back the same from a saved profile. */
static void test_step_by_batch_file(void **state)
{
    struct lt_sim_profile p;
    struct lt_err err = {0};
    lt_sim_profile_builtin(&p, "default", &err);
    assert_int_equal(lt_sim_profile_set(&p, "step_ms_by_batch", "17.8, 34.5 40.3 46.1", &err), 0);
    assert_int_equal(p.n_step_ms_by_batch, 4);
    assert_true(p.step_ms_by_batch[2] == 40.3);
    assert_int_equal(lt_sim_profile_set(&p, "step_ms_by_batch", "1 2 x", &err), LT_EFORMAT);
    assert_non_null(strstr(err.msg, "step_ms_by_batch"));
    assert_int_equal(lt_sim_profile_set(&p, "step_ms_by_batch", "1 -2", &err), LT_EFORMAT);
    assert_int_equal(
        lt_sim_profile_set(&p, "step_ms_by_batch", "1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1", &err),
        LT_EFORMAT);
    assert_non_null(strstr(err.msg, "more than 16"));
    assert_int_equal(p.n_step_ms_by_batch, 4); /* a refused value changes nothing */
    const char *dir = getenv("LT_TMP");
    char path[512];
    snprintf(path, sizeof path, "%s/by_batch.profile", dir ? dir : "/tmp");
    assert_int_equal(lt_sim_profile_save(&p, path, NULL, &err), 0);
    struct lt_sim_profile q;
    assert_int_equal(lt_sim_profile_load(&q, path, &err), 0);
    assert_int_equal(q.n_step_ms_by_batch, 4);
    for (int i = 0; i < 4; i++)
        assert_true(q.step_ms_by_batch[i] == p.step_ms_by_batch[i]);
    assert_int_equal(lt_sim_profile_set(&p, "step_ms_by_batch", "off", &err), 0);
    assert_int_equal(p.n_step_ms_by_batch, 0);
    assert_int_equal(lt_sim_profile_save(&p, path, NULL, &err), 0);
    assert_int_equal(lt_sim_profile_load(&q, path, &err), 0);
    assert_int_equal(q.n_step_ms_by_batch, 0);
}

/* One long decode's gaps, in blocks of WANDER_BLOCK: the first and last
 * token times and the logs of the blocks' mean gaps. */
enum { WANDER_TOKENS = 100000, WANDER_BLOCK = 30 };

struct wander {
    int64_t first, last, block0;
    uint32_t n;
    double s, ss; /* sums of the blocks' logs and their squares */
    uint32_t blocks;
};

static void on_wander(void *ud, const struct lt_sim_emit *e)
{
    struct wander *w = e->user;
    (void)ud;
    if (w->n == 0)
        w->first = w->block0 = e->t;
    else if (w->n % WANDER_BLOCK == 0) {
        double l = log((double)(e->t - w->block0) / WANDER_BLOCK / MS);
        w->s += l;
        w->ss += l * l;
        w->blocks++;
        w->block0 = e->t;
    }
    w->last = e->t;
    w->n++;
}

static struct wander wander_run(const struct lt_sim_profile *p)
{
    struct lt_sim_model *m = lt_sim_model_new(p, NULL);
    assert_non_null(m);
    struct wander w = {0};
    struct lt_sim_req q = {.prompt_tokens = 10, .out_tokens = WANDER_TOKENS, .user = &w};
    assert_non_null(lt_sim_model_add(m, 0, &q, NULL));
    int64_t t;
    while ((t = lt_sim_model_next(m)) != INT64_MAX)
        lt_sim_model_advance(m, t, on_wander, NULL);
    lt_sim_model_free(m);
    assert_int_equal(w.n, WANDER_TOKENS);
    return w;
}

/* speed_cv: a step's cost times a factor whose mean over steps is 1 (so
 * the mean gap is the steady one, which a fit reads), whose logs over a
 * block of steps spread as the process's mean over that time does, and
 * which a seed repeats exactly. */
static void test_speed_wanders(void **state)
{
    (void)state;
    struct lt_sim_profile p = prof();
    struct wander steady = wander_run(&p);
    assert_int_equal(steady.last - steady.first, (int64_t)(WANDER_TOKENS - 1) * 11 * MS);
    p.speed_cv = 0.5;
    p.speed_tau_ms = 300;
    p.speed_seed = 7;
    struct wander a = wander_run(&p), b = wander_run(&p);
    assert_int_equal(a.last, b.last);
    double mean = (double)(a.last - a.first) / (WANDER_TOKENS - 1) / MS;
    if (fabs(mean / 11 - 1) > 0.03)
        fail_msg("mean gap %g ms, steady 11", mean);
    /* a block of 30 steps of 11 ms, x = 330 / 300: the variance of a mean
     * over it is 2 (x - 1 + e^-x) / x^2 of the process's */
    double x = 30 * 11.0 / 300, g = 2 * (x - 1 + exp(-x)) / (x * x);
    double m = a.s / a.blocks, sd = sqrt(a.ss / a.blocks - m * m);
    if (fabs(sd / (p.speed_cv * sqrt(g)) - 1) > 0.15)
        fail_msg("blocks' logs spread %g, the process's mean over them %g", sd,
                 p.speed_cv * sqrt(g));
    p.speed_seed = 8;
    struct wander c = wander_run(&p);
    assert_true(c.last != a.last);
    /* uncorrelated steps (speed_tau_ms 0): the mean is still the steady one */
    p.speed_tau_ms = 0;
    struct wander d = wander_run(&p);
    mean = (double)(d.last - d.first) / (WANDER_TOKENS - 1) / MS;
    if (fabs(mean / 11 - 1) > 0.01)
        fail_msg("mean gap %g ms with uncorrelated steps, steady 11", mean);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_request_timing),
        cmocka_unit_test(test_batch_of_four),
        cmocka_unit_test(test_max_running_queues),
        cmocka_unit_test(test_kv_limit_queues),
        cmocka_unit_test(test_chunked_prefill),
        cmocka_unit_test(test_prefill_admission_limits),
        cmocka_unit_test(test_decode_kv_cost),
        cmocka_unit_test(test_preemption_recomputes),
        cmocka_unit_test(test_prefix_cache_lru),
        cmocka_unit_test(test_cancel_frees),
        cmocka_unit_test(test_fast_profile_is_instant),
        cmocka_unit_test(test_default_profile_calibration),
        cmocka_unit_test(test_profile_file),
        cmocka_unit_test(test_step_by_batch),
        cmocka_unit_test(test_shared_prefix),
        cmocka_unit_test(test_slot_runs),
        cmocka_unit_test(test_slot_choice_and_chain),
        cmocka_unit_test(test_slot_pinned),
        cmocka_unit_test(test_prefill_ctx),
        cmocka_unit_test(test_step_by_batch_file),
        cmocka_unit_test(test_speed_wanders),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

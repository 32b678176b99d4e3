/*
 * Unit tests of sim --fit (sim/sim_fit.c) against a profile it never sees:
 * the model runs a hidden profile in virtual time at two Poisson rates, its
 * token times are written as results files (what a live replay records),
 * and the fit must give the hidden costs back. The client is made to look
 * like a real one: it sends each request CLIENT_MS before the server sees
 * it (what the fit reports as the client's share of a TTFT, and must keep
 * out of the profile), and every 20th request's last token reaches it
 * STALL_MS late (a stalled client: the reweighting must not let those
 * windows pull the costs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim/sim_fit.h"
#include "sim/sim_model.h"
#include "sim/sim_profile.h"
#include "base/lt_rng.h"
#include "traces/trace_writer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NREQ 300
#define MAXOUT 160
#define CLIENT_MS 3.0
#define STALL_MS 150.0

static struct lt_sim_profile hidden(void)
{
    struct lt_sim_profile p;
    assert_int_equal(lt_sim_profile_builtin(&p, "default", NULL), 0);
    p.step_ms = 8;
    p.step_ms_per_seq = 0.2;
    p.decode_ms_per_kv_token = 0.0004;
    p.prefill_step_ms = 15;
    p.prefill_ms_per_seq = 2;
    p.prefill_ms_per_token = 0.02;
    p.cached_ms_per_token = 0.003;
    p.max_running = 1000;
    return p;
}

struct req {
    int64_t arrival; /* ns */
    uint32_t in, out, n;
    int64_t t[MAXOUT];
};

static void on_emit(void *ud, const struct lt_sim_emit *e)
{
    (void)ud;
    struct req *q = e->user;
    q->t[q->n++] = e->t;
}

/* Run the hidden profile on NREQ Poisson arrivals at rate (per s) and write
 * what a client would have recorded to path. */
static void live_run(const char *path, double rate, uint64_t seed)
{
    struct lt_sim_profile p = hidden();
    struct lt_sim_model *m = lt_sim_model_new(&p, NULL);
    assert_non_null(m);
    static struct req reqs[NREQ];
    memset(reqs, 0, sizeof reqs);
    struct lt_rng rng;
    lt_rng_seed(&rng, seed);
    int64_t now = 0;
    for (int i = 0; i < NREQ; i++) {
        now += (int64_t)(lt_rng_exp(&rng, 1e9 / rate));
        int64_t t;
        while ((t = lt_sim_model_next(m)) <= now)
            lt_sim_model_advance(m, t, on_emit, NULL);
        struct req *q = &reqs[i];
        q->arrival = now;
        q->in = 50 + (uint32_t)lt_rng_below(&rng, 1500);
        q->out = 20 + (uint32_t)lt_rng_below(&rng, MAXOUT - 20);
        struct lt_sim_req r = {.prompt_tokens = q->in, .out_tokens = q->out, .user = q};
        assert_non_null(lt_sim_model_add(m, now, &r, NULL));
    }
    int64_t t;
    while ((t = lt_sim_model_next(m)) != INT64_MAX)
        lt_sim_model_advance(m, t, on_emit, NULL);
    lt_sim_model_free(m);

    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_RESULTS, .source = "replay"};
    struct lt_writer *w = lt_writer_open(path, &h, NULL, &err);
    assert_non_null(w);
    struct lt_run run = {.id = 0, .mode = "rate", .rate = rate, .target = "http://x", .model = "m"};
    assert_int_equal(lt_writer_put_run(w, &run, &err), 0);
    static struct lt_chunk ch[MAXOUT];
    for (int i = 0; i < NREQ; i++) {
        struct req *q = &reqs[i];
        assert_int_equal(q->n, q->out);
        for (uint32_t k = 0; k < q->n; k++)
            ch[k] = (struct lt_chunk){.t = q->t[k] / 1000, .tokens = 1};
        if (i % 20 == 7)
            ch[q->n - 1].t += (int64_t)(STALL_MS * 1000);
        int64_t sent = q->arrival / 1000 - (int64_t)(CLIENT_MS * 1000);
        struct lt_result r = {.run = 0,
                              .index = (uint64_t)i,
                              .sched = sent,
                              .sent = sent,
                              .first_token = ch[0].t,
                              .end = ch[q->n - 1].t,
                              .in = q->in,
                              .out = q->out,
                              .status = 200,
                              .count = "usage",
                              .chunks = ch,
                              .n_chunks = q->n,
                              .has = LT_RHAS_SENT | LT_RHAS_FIRST_TOKEN | LT_RHAS_END |
                                     LT_RHAS_CHUNKS | LT_RHAS_IN | LT_RHAS_OUT | LT_RHAS_STATUS};
        assert_int_equal(lt_writer_put_result(w, &r, &err), 0);
    }
    assert_int_equal(lt_writer_close(w, &err), 0);
}

static void test_fit_recovers_hidden_costs(void **state)
{
    (void)state;
    char a[] = "/tmp/lt-test-fit-a-XXXXXX", b[] = "/tmp/lt-test-fit-b-XXXXXX";
    int fa = mkstemp(a), fb = mkstemp(b);
    assert_true(fa >= 0 && fb >= 0);
    close(fa);
    close(fb);
    live_run(a, 2, 1);
    live_run(b, 5, 2);
    struct lt_sim_fit_opts o = {.time_scale = 1, .step_gap_ms = 0.1};
    assert_int_equal(lt_sim_profile_builtin(&o.base, "default", NULL), 0);
    struct lt_sim_fit *f = malloc(sizeof *f);
    assert_non_null(f);
    struct lt_err err = {0};
    const char *paths[] = {a, b};
    int rc = lt_sim_fit_files(paths, 2, &o, f, &err);
    unlink(a);
    unlink(b);
    assert_int_equal(rc, 0);
    struct lt_sim_profile h = hidden();
    const double want[LT_SIM_FIT_NCOST] = {h.step_ms,
                                           h.step_ms_per_seq,
                                           h.decode_ms_per_kv_token,
                                           h.prefill_step_ms,
                                           h.prefill_ms_per_seq,
                                           h.prefill_ms_per_token,
                                           h.cached_ms_per_token};
    /* No prompt here hits the prefix cache: that cost is not exercised
     * (kept from the base); every other one comes back within 1 %. */
    for (int c = 0; c < LT_SIM_FIT_NCOST; c++) {
        const struct lt_sim_fit_param *p = &f->cost[c];
        if (c == LT_SIM_FIT_NCOST - 1) {
            assert_false(p->identified);
            assert_true(p->kept);
            continue;
        }
        assert_true(p->identified);
        if (fabs(p->value / want[c] - 1) > 0.01)
            fail_msg("%s: fitted %g, hidden %g", p->key, p->value, want[c]);
    }
    /* The client's send time is its own column, not prefill cost. */
    assert_true(f->client_identified);
    assert_true(f->prefill.n > 0);
    if (fabs(f->client_ms - CLIENT_MS) > 0.05)
        fail_msg("client share %g ms, expected %g", f->client_ms, CLIENT_MS);
    if (fabs(f->profile.prefill_step_ms - h.prefill_step_ms) > 0.15)
        fail_msg("profile's prefill_step_ms %g, hidden %g", f->profile.prefill_step_ms,
                 h.prefill_step_ms);
    free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_recovers_hidden_costs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

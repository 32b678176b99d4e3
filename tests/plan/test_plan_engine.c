/*
 * The engine interface (plan/plan_engine.h) with both engines behind it:
 * the sim's model in virtual time and the live replay against the sim
 * started here, each run into ONE writer the test opened, at the run id
 * it is handed. Ground truth: the hand-built trace's request count, and
 * for the live engine the sim's own count of the requests it answered;
 * the file read back must hold exactly those, under the right run ids,
 * and the sink's hooks must have been told exactly what the file holds.
 * A stop asked before the run: the virtual engine says who stopped it
 * and no request runs (each recorded as unsent, or aborted).
 */
#include "plan/plan_engine.h"
#include "plan/plan_jobs.h"
#include "replay/replay.h"
#include "sim/sim.h"
#include "sim/sim_profile.h"
#include "sim/sim_virtual.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/tmp_path.h"

#define N 24   /* requests of the hand-built trace */
#define RUNS 4 /* run ids 0..3 */

/* N requests 20 ms apart, 16 tokens in, 4 out. */
static const char *make_trace(void)
{
    const char *path = tmp_path("engine_trace.lt.zst");
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_TRACE, .source = "test"};
    struct lt_writer *w = lt_writer_open(path, &h, NULL, &err);
    assert_non_null(w);
    for (int i = 0; i < N; i++) {
        struct lt_record r = {.t = i * 20000, .has = LT_HAS_IN | LT_HAS_OUT, .in = 16, .out = 4};
        assert_int_equal(lt_writer_put_record(w, &r, &err), 0);
    }
    assert_int_equal(lt_writer_close(w, &err), 0);
    return path;
}

/* What the sink's hooks were told, per run id. */
struct told {
    uint32_t runs[RUNS], results[RUNS], unsent[RUNS], aborted[RUNS];
    uint32_t bad; /* a run id out of range */
};

static void on_run(void *ud, const struct lt_run *run)
{
    struct told *t = ud;
    if (run->id < RUNS)
        t->runs[run->id]++;
    else
        t->bad++;
}

static void on_result(void *ud, const struct lt_result *res)
{
    struct told *t = ud;
    if (res->run >= RUNS) {
        t->bad++;
        return;
    }
    t->results[res->run]++;
    t->unsent[res->run] += res->err && !strcmp(res->err, "unsent");
    t->aborted[res->run] += res->err && !strcmp(res->err, "aborted");
}

/* What the file holds, per run id, and each run record's target. */
struct held {
    uint32_t runs[RUNS], results[RUNS];
    char target[RUNS][128];
};

static void read_back(const char *path, struct held *h)
{
    memset(h, 0, sizeof *h);
    struct lt_err err = {0};
    struct lt_reader *rd = lt_reader_open_kind(path, LT_KIND_RESULTS, NULL, &err);
    assert_non_null(rd);
    const struct lt_item *it;
    int n;
    while ((n = lt_reader_next(rd, &it, &err)) == 1) {
        if (it->type == LT_ITEM_RUN) {
            assert_true(it->run.id < RUNS);
            h->runs[it->run.id]++;
            snprintf(h->target[it->run.id], sizeof h->target[0], "%s",
                     it->run.target ? it->run.target : "");
        } else if (it->type == LT_ITEM_RESULT) {
            assert_true(it->res.run < RUNS);
            h->results[it->res.run]++;
        }
    }
    assert_int_equal(n, 0);
    lt_reader_close(rd);
}

static struct lt_writer *open_results(const char *path)
{
    struct lt_err err = {0};
    struct lt_header h = {.kind = LT_KIND_RESULTS, .source = "replay"};
    struct lt_writer *w = lt_writer_open(path, &h, NULL, &err);
    assert_non_null(w);
    return w;
}

static void replay_opts(struct lt_replay_opts *o, const char *trace, const char *url)
{
    memset(o, 0, sizeof *o);
    o->trace_path = trace;
    o->target = url;
    o->model = "sim"; /* no /v1/models */
    o->mode = LT_REPLAY_MODE_TRACE;
    o->no_calibrate = true;
    o->server_metrics = -1;
    o->seed = 1;
}

/* A virtual engine of o over jobs with the default profile. */
static struct lt_engine *virtual_engine(const struct lt_plan_jobs *jobs,
                                        const struct lt_replay_opts *o)
{
    struct lt_err err = {0};
    struct lt_sim_profile p;
    assert_int_equal(lt_sim_profile_load(&p, "default", &err), 0);
    struct lt_sim_vreplay vo = {0};
    lt_replay_plan_opts(o, &vo.plan);
    struct lt_engine *e = lt_sim_engine_for(&p, jobs, &vo, &err);
    assert_non_null(e);
    assert_string_equal(lt_engine_name(e), "virtual");
    return e;
}

static void test_both_engines_one_writer(void **state)
{
    (void)state;
    const char *trace = make_trace();
    const char *out = tmp_path("engine_out.lt.zst");
    struct lt_err err = {0};
    struct lt_plan_jobs jobs = {0};
    assert_int_equal(lt_plan_jobs_open(&jobs, trace, &err), 0);
    struct lt_sim_opts so = {.profile = "fast", .seed = 1};
    struct lt_sim *sim = lt_sim_start(&so, &err);
    assert_non_null(sim);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", (unsigned)lt_sim_port(sim));
    struct lt_replay_opts o;
    replay_opts(&o, trace, url);

    struct lt_writer *w = open_results(out);
    struct told t = {0};
    /* run 2: the model in virtual time */
    struct lt_engine *v = virtual_engine(&jobs, &o);
    struct lt_engine_sink sink = {
        .w = w, .run_base = 2, .on_run = on_run, .on_result = on_result, .ud = &t};
    assert_int_equal(lt_engine_run(v, &sink, &err), 0);
    assert_null(lt_engine_stopped(v));
    lt_engine_free(v);

    /* run 1: live, against the sim */
    struct lt_replay *rp = lt_replay_new(&o, &err);
    assert_non_null(rp);
    assert_int_equal(lt_replay_prepare(rp, &err), 0);
    struct lt_engine *l = lt_replay_engine_of(rp);
    assert_non_null(l);
    assert_string_equal(lt_engine_name(l), "live");
    assert_ptr_equal(lt_replay_engine_replay(l), rp);
    struct lt_sim_stats s0, s1;
    lt_sim_stats(sim, &s0);
    sink.run_base = 1;
    assert_int_equal(lt_engine_run(l, &sink, &err), 0);
    assert_null(lt_engine_stopped(l));
    /* the sim counts a request when its connection's answer is done,
     * which can be after the client has read all of it: wait (at most 5
     * s) for the last to be counted */
    for (int i = 0; i < 500; i++) {
        lt_sim_stats(sim, &s1);
        if (s1.requests - s0.requests >= N)
            break;
        nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    }
    lt_engine_free(l);
    assert_int_equal(lt_writer_close(w, &err), 0);
    assert_int_equal(lt_sim_stop_err(sim, &err), 0);
    lt_plan_jobs_close(&jobs);

    /* the sim answered exactly the trace's requests for the live run */
    assert_int_equal(s1.requests - s0.requests, N);
    struct held h;
    read_back(out, &h);
    assert_int_equal(t.bad, 0);
    for (uint32_t r = 0; r < RUNS; r++) {
        uint32_t want_runs = r == 1 || r == 2, want_res = want_runs ? N : 0;
        assert_int_equal(h.runs[r], want_runs);
        assert_int_equal(h.results[r], want_res);
        assert_int_equal(t.runs[r], h.runs[r]);
        assert_int_equal(t.results[r], h.results[r]);
    }
    assert_string_equal(h.target[2], "sim:virtual");
    assert_string_equal(h.target[1], url);
}

static void test_virtual_stopped_before(void **state)
{
    (void)state;
    const char *trace = make_trace();
    const char *out = tmp_path("engine_stop.lt.zst");
    struct lt_err err = {0};
    struct lt_plan_jobs jobs = {0};
    assert_int_equal(lt_plan_jobs_open(&jobs, trace, &err), 0);
    struct lt_replay_opts o;
    replay_opts(&o, trace, "http://127.0.0.1:1");
    struct lt_engine *v = virtual_engine(&jobs, &o);
    lt_engine_stop(v, 0);
    struct lt_writer *w = open_results(out);
    struct told t = {0};
    struct lt_engine_sink sink = {.w = w, .on_run = on_run, .on_result = on_result, .ud = &t};
    assert_int_equal(lt_engine_run(v, &sink, &err), 0);
    assert_non_null(lt_engine_stopped(v));
    assert_string_equal(lt_engine_stopped(v), "caller");
    lt_engine_free(v);
    assert_int_equal(lt_writer_close(w, &err), 0);
    lt_plan_jobs_close(&jobs);
    struct held h;
    read_back(out, &h);
    /* every request is accounted for, and none ran: the plan's first
     * send at time 0 went out with the run's start and was aborted, the
     * others never left */
    assert_int_equal(h.runs[0], 1);
    assert_int_equal(h.results[0], N);
    assert_int_equal(t.results[0], N);
    assert_int_equal(t.unsent[0] + t.aborted[0], N);
    assert_true(t.unsent[0] >= N - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_both_engines_one_writer),
        cmocka_unit_test(test_virtual_stopped_before),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

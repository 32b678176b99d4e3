/*
 * Unit tests of the synthesizer: the option parsers (a table of good and bad
 * specs), the same seed giving the same bytes, and the structure of
 * generated sessions: each turn's prompt is the conversation so far, and its
 * block ids repeat every whole block of the turn before (what a prefix cache
 * would reuse), while other sessions share only the system prompt's blocks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "traces/trace_reader.h"
#include "workload/trace_synth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tmp_path.h"

static void test_parse_table(void **state)
{
    static const struct {
        const char *s;
        bool ok;
        enum lt_len_kind kind;
        double a, b;
    } lens[] = {
        {"fixed:100", true, LT_LEN_FIXED, 100, 0},
        {"fixed:0", true, LT_LEN_FIXED, 0, 0},
        {"uniform:5,10", true, LT_LEN_UNIFORM, 5, 10},
        {"uniform:7,7", true, LT_LEN_UNIFORM, 7, 7},
        {"lognormal:800,1.2", true, LT_LEN_LOGNORMAL, 800, 1.2},
        {"fixed:1.5", false, 0, 0, 0},
        {"fixed:-1", false, 0, 0, 0},
        {"fixed:", false, 0, 0, 0},
        {"uniform:10,5", false, 0, 0, 0},
        {"uniform:5", false, 0, 0, 0},
        {"lognormal:0,1", false, 0, 0, 0},
        {"lognormal:100,-1", false, 0, 0, 0},
        {"lognormal:100,1,2", false, 0, 0, 0},
        {"normal:5,1", false, 0, 0, 0},
        {"", false, 0, 0, 0},
    };
    struct lt_err err = {0};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        struct lt_len_spec l;
        int rc = lt_len_spec_parse(lens[i].s, &l, &err);
        if ((rc == 0) != lens[i].ok)
            fail_msg("'%s': expected %s", lens[i].s, lens[i].ok ? "ok" : "an error");
        if (lens[i].ok) {
            assert_int_equal(l.kind, lens[i].kind);
            assert_true(l.a == lens[i].a && l.b == lens[i].b);
        }
    }
    static const struct {
        const char *s;
        bool ok;
        enum lt_arrivals a;
        double cv;
    } arr[] = {
        {"constant", true, LT_ARR_CONSTANT, 0},
        {"poisson", true, LT_ARR_POISSON, 1},
        {"gamma:3.5", true, LT_ARR_GAMMA, 3.5},
        {"empirical", true, LT_ARR_EMPIRICAL, 0},
        {"gamma:fit", true, LT_ARR_GAMMA, 0},
        {"gamma:0", false, 0, 0},
        {"gamma:100", true, LT_ARR_GAMMA, 100},
        {"gamma:0.001", true, LT_ARR_GAMMA, 0.001},
        {"gamma:100.5", false, 0, 0},
        {"gamma:500", false, 0, 0},
        {"gamma:1e-300", false, 0, 0},
        {"gamma:-1", false, 0, 0},
        {"gamma:", false, 0, 0},
        {"gamma", false, 0, 0},
        {"uniform", false, 0, 0},
    };
    for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++) {
        enum lt_arrivals a;
        double cv;
        int rc = lt_arrivals_parse(arr[i].s, LT_ARR_FIT, &a, &cv, &err);
        if ((rc == 0) != arr[i].ok)
            fail_msg("'%s': expected %s", arr[i].s, arr[i].ok ? "ok" : "an error");
        if (arr[i].ok)
            assert_true(a == arr[i].a && cv == arr[i].cv);
    }
    static const struct {
        const char *s;
        bool ok;
        enum lt_shape shape;
        double a, b;
    } shp[] = {
        {"flat", true, LT_SHAPE_FLAT, 0, 0},
        {"ramp:1,100", true, LT_SHAPE_RAMP, 1, 100},
        {"ramp:0,0", false, 0, 0, 0},
        {"diurnal:24h,0.5", true, LT_SHAPE_DIURNAL, 86400, 0.5},
        {"diurnal:600,0", true, LT_SHAPE_DIURNAL, 600, 0},
        {"diurnal:10m,0.9", true, LT_SHAPE_DIURNAL, 600, 0.9},
        {"diurnal:24h,1", false, 0, 0, 0},
        {"diurnal:0,0.5", false, 0, 0, 0},
        {"sine:5", false, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof shp / sizeof shp[0]; i++) {
        enum lt_shape sh;
        double a = 0, b = 0;
        int rc = lt_shape_parse(shp[i].s, &sh, &a, &b, &err);
        if ((rc == 0) != shp[i].ok)
            fail_msg("'%s': expected %s", shp[i].s, shp[i].ok ? "ok" : "an error");
        if (shp[i].ok && shp[i].shape != LT_SHAPE_FLAT)
            assert_true(sh == shp[i].shape && a == shp[i].a && b == shp[i].b);
    }
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *p = malloc(1 << 24);
    assert_non_null(p);
    *len = fread(p, 1, 1 << 24, f);
    fclose(f);
    return p;
}

static struct lt_synth_opts session_opts(uint64_t seed)
{
    struct lt_synth_opts o = {.seed = seed,
                              .arrivals = LT_ARR_POISSON,
                              .rate = 20,
                              .requests = 3000,
                              .block_tokens = 16,
                              .think_us = 2000000,
                              .prefix_share = 1,
                              .prefix_tokens = 40,
                              .prefix_count = 1};
    o.in = (struct lt_len_spec){LT_LEN_UNIFORM, 1, 60};
    o.out = (struct lt_len_spec){LT_LEN_UNIFORM, 1, 50};
    o.turns = (struct lt_len_spec){LT_LEN_FIXED, 4, 0};
    return o;
}

static void test_same_seed_same_bytes(void **state)
{
    struct lt_err err = {0};
    struct lt_synth_opts o = session_opts(5);
    const char *a = tmp_path("syn-a.lt.zst");
    assert_int_equal(lt_synth_run(&o, a, NULL, &err), 0);
    const char *b = tmp_path("syn-b.lt.zst");
    assert_int_equal(lt_synth_run(&o, b, NULL, &err), 0);
    size_t la, lb;
    char *pa = slurp(a, &la), *pb = slurp(b, &lb);
    assert_true(la == lb && memcmp(pa, pb, la) == 0);
    free(pb);
    o.seed = 6;
    assert_int_equal(lt_synth_run(&o, b, NULL, &err), 0);
    pb = slurp(b, &lb);
    assert_false(la == lb && memcmp(pa, pb, la) == 0);
    free(pa);
    free(pb);
}

/* What the test remembers of a session's previous turn. */
struct prev {
    uint64_t session;
    uint32_t turn, in, out, n_blocks;
    uint64_t blocks[64];
};

static void test_session_structure(void **state)
{
    struct lt_err err = {0};
    struct lt_synth_opts o = session_opts(9);
    const char *path = tmp_path("syn-s.lt.zst");
    struct lt_synth_stats st;
    assert_int_equal(lt_synth_run(&o, path, &st, &err), 0);
    assert_int_equal(st.records, 3000);
    struct lt_reader *r = lt_reader_open(path, NULL, &err);
    assert_non_null(r);
    assert_int_equal(lt_reader_header(r)->block_tokens, 16);
    assert_string_equal(lt_reader_header(r)->source, "synth");
    struct prev *prev = calloc(4096, sizeof *prev);
    assert_non_null(prev);
    uint64_t sys_block = 0;
    int64_t last_t = 0;
    uint32_t checked = 0;
    const struct lt_item *it;
    while (lt_reader_next(r, &it, &err) == 1) {
        const struct lt_record *x = &it->rec;
        assert_true(x->t >= last_t);
        last_t = x->t;
        assert_true(x->has & LT_HAS_SESSION);
        assert_true(x->session > 0 && x->session < 4096);
        assert_true(x->n_blocks == (x->in + 15) / 16 && x->n_blocks <= 64);
        /* the 40-token system prompt: its 2 whole blocks are the same everywhere */
        assert_string_equal(x->msgs[0].role, "system");
        assert_int_equal(x->msgs[0].tokens, 40);
        if (!sys_block)
            sys_block = x->blocks[1];
        assert_true(x->blocks[1] == sys_block);
        uint32_t sum = 0;
        for (uint32_t i = 0; i < x->n_msgs; i++)
            sum += x->msgs[i].tokens;
        assert_int_equal(sum, x->in);
        struct prev *p = &prev[x->session];
        if (x->turn == 0) {
            assert_int_equal(x->n_msgs, 2);
            assert_false(x->has & LT_HAS_THINK);
        } else {
            assert_true(x->has & LT_HAS_THINK);
            assert_int_equal(p->turn, x->turn - 1);
            /* system, then user/assistant pairs, then the new user message */
            assert_int_equal(x->n_msgs, 2 + 2 * x->turn);
            assert_string_equal(x->msgs[x->n_msgs - 2].role, "assistant");
            assert_int_equal(x->msgs[x->n_msgs - 2].tokens, p->out);
            assert_true(x->in > p->in + p->out);
            /* every whole block of the previous prompt comes back */
            uint32_t whole = p->in / 16;
            for (uint32_t i = 0; i < whole; i++)
                assert_true(x->blocks[i] == p->blocks[i]);
            /* the previous partial block does not (it now holds more tokens) */
            if (p->in % 16)
                assert_true(x->blocks[whole] != p->blocks[whole]);
            checked++;
        }
        p->session = x->session;
        p->turn = x->turn;
        p->in = x->in;
        p->out = x->out;
        p->n_blocks = x->n_blocks;
        memcpy(p->blocks, x->blocks, x->n_blocks * sizeof *x->blocks);
    }
    assert_true(checked > 1000);
    free(prev);
    lt_reader_close(r);
}

static void test_bad_options(void **state)
{
    struct lt_err err = {0};
    struct lt_synth_opts o = session_opts(1);
    o.rate = 0;
    assert_int_equal(lt_synth_run(&o, tmp_path("bad.lt.zst"), NULL, &err), LT_EINVAL);
    o = session_opts(1);
    o.requests = 0;
    assert_int_equal(lt_synth_run(&o, tmp_path("bad.lt.zst"), NULL, &err), LT_EINVAL);
    o = session_opts(1);
    o.arrivals = LT_ARR_EMPIRICAL;
    assert_int_equal(lt_synth_run(&o, tmp_path("bad.lt.zst"), NULL, &err), LT_EINVAL);
    o = session_opts(1);
    o.fit = tmp_path("no-such.lt.zst");
    o.turns.kind = LT_LEN_NONE;
    o.in.kind = o.out.kind = LT_LEN_NONE;
    o.prefix_tokens = 0;
    assert_true(lt_synth_run(&o, tmp_path("bad.lt.zst"), NULL, &err) < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_table),
        cmocka_unit_test(test_same_seed_same_bytes),
        cmocka_unit_test(test_session_structure),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * The sim speaks what wire reads: every stream and body the sim renders, in
 * each dialect, read back through the SSE framer (whole and cut at every
 * byte) and the response interpreter gives the tokens, reasoning, usage,
 * finish reason and first content the sim meant; its error bodies read as
 * errors, its malformed and badchoices chunks as malformed, and its
 * badusage claim as the usage it says. The renderer stays in sim/
 * (it draws its words from the sim's vocabulary); this test is what keeps
 * the two in agreement.
 */
#include "sim/sim_api.h"
#include "wire/wire_resp.h"
#include "wire/wire_sse.h"
#include "base/lt_err.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

struct reader {
    struct lt_wire_resp resp;
    int64_t events;
    int bad;
};

static int on_event(void *ud, const char *data, size_t len)
{
    struct reader *r = ud;
    if (lt_wire_resp_event(&r->resp, data, len, (lt_mono){r->events++}) < 0)
        r->bad++;
    return 0;
}

/* Read a stream in pieces of `step` bytes (0: whole). */
static void read_stream(struct reader *rd, const struct lt_buf *b, size_t step)
{
    struct lt_wire_sse s;
    lt_wire_sse_init(&s, 1 << 16, 1 << 16);
    lt_wire_resp_init(&rd->resp, 1000);
    rd->events = 0;
    rd->bad = 0;
    size_t n = step ? step : b->len;
    for (size_t i = 0; i < b->len; i += n) {
        size_t k = b->len - i < n ? b->len - i : n;
        assert_int_equal(lt_wire_sse_feed(&s, b->p + i, k, on_event, rd), 0);
    }
    assert_int_equal(lt_wire_sse_finish(&s, on_event, rd), 0);
    lt_wire_sse_release(&s);
}

/* The finish reason, read back in chat's words whatever the API said. */
static const char *finish_of(const struct lt_sim_resp *r)
{
    return r->finish;
}

/* Events before the first token's, and between the last reasoning token's
 * and the first answer token's (the head, item or block announcements). */
static int64_t events_before(const struct lt_sim_resp *r, bool content)
{
    int64_t reasoning = r->api == LT_SIM_COMPLETIONS ? 0 : r->reasoning;
    int64_t n = r->api == LT_SIM_CHAT && r->d->role_chunk ? 1 : 0;
    if (r->api == LT_SIM_RESPONSES)
        n = 2 + (content && reasoning ? 1 : 0);
    if (r->api == LT_SIM_MESSAGES)
        n = 2 + (content && reasoning ? 2 : 0);
    return n + (content ? reasoning : 0);
}

static void check_stream(const struct lt_sim_resp *r, const struct lt_buf *b)
{
    static const size_t steps[] = {0, 1, 7};
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        struct reader rd;
        read_stream(&rd, b, steps[k]);
        const struct lt_wire_resp *w = &rd.resp;
        assert_int_equal(rd.bad, 0);
        assert_true(w->has_usage && !w->error_event);
        assert_true(r->api == LT_SIM_RESPONSES ? w->has_finish && !w->done : w->done);
        assert_int_equal(w->n_chunks, r->out);
        assert_int_equal(w->counted, r->out);
        assert_int_equal(lt_wire_resp_out(w), r->out);
        assert_int_equal(w->in, r->prompt_tokens);
        assert_int_equal(w->cached, r->cached_tokens);
        assert_int_equal(w->reasoning, r->reasoning);
        assert_int_equal(w->counted_reasoning, r->api != LT_SIM_COMPLETIONS ? r->reasoning : 0);
        assert_string_equal(w->finish, finish_of(r));
        /* The first token is the first chunk after the role chunk (or the
         * announcements); the first content comes after the reasoning. */
        assert_true(w->has_first_token && w->has_first_content);
        assert_int_equal(w->first_token.ns, events_before(r, false));
        assert_int_equal(w->first_content.ns, events_before(r, true));
        lt_wire_resp_release(&rd.resp);
    }
}

static void check_full(const struct lt_sim_resp *r, const struct lt_buf *b)
{
    struct lt_wire_resp w;
    lt_wire_resp_init(&w, 10);
    assert_int_equal(lt_wire_resp_body(&w, b->p, b->len, (lt_mono){9}), 0);
    assert_true(w.has_usage && !w.error_event);
    assert_int_equal(lt_wire_resp_out(&w), r->out);
    assert_int_equal(w.n_chunks, 1);
    assert_int_equal(w.in, r->prompt_tokens);
    assert_int_equal(w.reasoning, r->api == LT_SIM_MESSAGES ? 0 : r->reasoning);
    assert_int_equal(w.cached, r->cached_tokens);
    assert_string_equal(w.finish, finish_of(r));
    lt_wire_resp_release(&w);
}

static void test_sim_streams_read_back(void **state)
{
    static const char *const specs[] = {"vllm", "no-role-chunk,usage-in-last,reasoning",
                                        "role-chunk,usage-separate,reasoning_content"};
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        struct lt_sim_dialect d;
        assert_int_equal(lt_sim_dialect_parse(&d, specs[k], NULL), 0);
        static const enum lt_sim_api apis[] = {LT_SIM_CHAT, LT_SIM_COMPLETIONS, LT_SIM_RESPONSES,
                                               LT_SIM_MESSAGES};
        for (size_t a = 0; a < 4; a++) {
            enum lt_sim_api api = apis[a];
            for (int tool = 0; tool < (api != LT_SIM_COMPLETIONS ? 2 : 1); tool++) {
                struct lt_sim_resp r = {.d = &d,
                                        .api = api,
                                        .id = "cmpl-1",
                                        .created = 1,
                                        .model_json = "\"m\"",
                                        .seq = 1,
                                        .prompt_tokens = 5,
                                        .cached_tokens = 3,
                                        .out = 6,
                                        .reasoning = api != LT_SIM_COMPLETIONS ? 2 : 0,
                                        .tool_call = tool,
                                        .tool_name_json = "\"f\"",
                                        .finish = tool ? "tool_calls" : "length",
                                        .include_usage = true};
                struct lt_buf b;
                lt_buf_init(&b, 1 << 20);
                assert_int_equal(lt_sim_render_head(&b, &r), 0);
                for (uint32_t i = 0; i < r.out; i++)
                    assert_int_equal(lt_sim_render_token(&b, &r, i, false), 0);
                assert_int_equal(lt_sim_render_tail(&b, &r), 0);
                check_stream(&r, &b);
                lt_buf_reset(&b);
                assert_int_equal(lt_sim_render_full(&b, &r), 0);
                check_full(&r, &b);
                lt_buf_release(&b);
            }
        }
    }
}

static void test_sim_errors_read_back(void **state)
{
    struct lt_buf b;
    lt_buf_init(&b, 1 << 16);
    assert_int_equal(lt_sim_error_body(&b, 429, "slow \"down\""), 0);
    struct lt_wire_resp_said s;
    assert_int_equal(lt_wire_resp_scan(b.p, b.len, true, &s, NULL, NULL), 0);
    assert_true(s.error);
    assert_false(lt_wire_resp_said_tokens(&s));
    /* The sim's malformed chunk is malformed to the reader too. */
    struct lt_sim_dialect d;
    assert_int_equal(lt_sim_dialect_parse(&d, "vllm", NULL), 0);
    struct lt_sim_resp r = {
        .d = &d, .api = LT_SIM_CHAT, .id = "c", .model_json = "\"m\"", .out = 3, .finish = "stop"};
    lt_buf_reset(&b);
    assert_int_equal(lt_sim_render_token(&b, &r, 1, true), 0);
    struct reader rd;
    read_stream(&rd, &b, 0);
    assert_int_equal(rd.bad, 1);
    lt_wire_resp_release(&rd.resp);
    /* Its badchoices fault ("choices":"nope", valid JSON of the wrong
     * shape) is malformed to the reader too, in a chunk and in a body. */
    r.bad_choices = true;
    r.bad_choices_at = 1;
    lt_buf_reset(&b);
    for (uint32_t i = 0; i < r.out; i++)
        assert_int_equal(lt_sim_render_token(&b, &r, i, false), 0);
    read_stream(&rd, &b, 0);
    assert_int_equal(rd.bad, 1);
    assert_int_equal(rd.resp.counted, 2); /* the other two chunks */
    lt_wire_resp_release(&rd.resp);
    lt_buf_reset(&b);
    assert_int_equal(lt_sim_render_full(&b, &r), 0);
    lt_wire_resp_init(&rd.resp, 1000);
    assert_int_equal(lt_wire_resp_body(&rd.resp, b.p, b.len, (lt_mono){1}), LT_EFORMAT);
    lt_wire_resp_release(&rd.resp);
    /* Its badusage fault: the chunks are true, the usage claims 7. */
    r.bad_choices = false;
    r.include_usage = true;
    r.claim = true;
    r.claimed_out = 7;
    lt_buf_reset(&b);
    assert_int_equal(lt_sim_render_head(&b, &r), 0);
    for (uint32_t i = 0; i < r.out; i++)
        assert_int_equal(lt_sim_render_token(&b, &r, i, false), 0);
    assert_int_equal(lt_sim_render_tail(&b, &r), 0);
    read_stream(&rd, &b, 0);
    assert_int_equal(rd.bad, 0);
    assert_int_equal(rd.resp.counted, 3);
    assert_true(rd.resp.has_usage);
    assert_int_equal(rd.resp.out, 7);
    lt_wire_resp_release(&rd.resp);
    lt_buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_streams_read_back),
        cmocka_unit_test(test_sim_errors_read_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Request building: synthesized prompts have the asked length under the
 * sim's documented token rule (a word of L bytes is ceil(L/4) tokens, 4
 * template tokens a message, 3 a request); requests sharing prefix blocks
 * share their prompt text up to the first different block and differ after
 * it; a session's later turn starts with the earlier turn's prompt; token
 * ids are exact; every body is valid JSON with the output-length settings.
 */
#include "replay/replay_prompt.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <string.h>

/* The sim's rule for text, computed independently here. */
static uint32_t sim_count(const char *s)
{
    uint32_t n = 0;
    while (*s) {
        while (*s == ' ' || *s == '\n' || *s == '\t')
            s++;
        size_t l = 0;
        while (s[l] && s[l] != ' ' && s[l] != '\n' && s[l] != '\t')
            l++;
        n += (uint32_t)((l + 3) / 4);
        s += l;
    }
    return n;
}

static struct lt_replay_build base(void)
{
    struct lt_replay_build b = {
        .api = LT_REPLAY_API_CHAT,
        .model = "m\"odel",
        .stream = true,
        .force_length = true,
        .token_ids = true,
        .block_tokens = 16,
        .default_out = 128,
        .salt = 42,
        .calib = {.tok_per_word = 1, .per_request = 3, .per_message = 4, .calibrated = true},
    };
    return b;
}

static json_t *body(const struct lt_replay_build *b, const struct lt_replay_job *j, uint32_t *win,
                    uint32_t *wout)
{
    struct lt_buf out;
    lt_buf_init(&out, 1 << 24);
    assert_int_equal(lt_replay_build_body(&out, b, j, win, wout), 0);
    json_error_t e;
    json_t *v = json_loads(out.p, 0, &e);
    if (!v)
        fail_msg("not JSON (%s): %s", e.text, out.p);
    lt_buf_release(&out);
    return v;
}

/* Prompt tokens of a chat body under the sim's rule. */
static uint32_t chat_tokens(json_t *v)
{
    json_t *msgs = json_object_get(v, "messages");
    uint32_t n = 3;
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m)
    {
        n += 4 + sim_count(json_string_value(json_object_get(m, "content")));
    }
    return n;
}

static void test_chat_length_and_output(void **state)
{
    struct lt_replay_build b = base();
    uint32_t lens[] = {8, 9, 100, 1000, 5000};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        struct lt_replay_job j = {.index = i,
                                  .has = LT_HAS_IN | LT_HAS_OUT,
                                  .in = lens[i],
                                  .out = 33,
                                  .prev = -1,
                                  .next = -1};
        uint32_t win, wout;
        json_t *v = body(&b, &j, &win, &wout);
        assert_int_equal(win, lens[i]);
        assert_int_equal(wout, 33);
        assert_int_equal(chat_tokens(v), lens[i]);
        assert_int_equal(json_integer_value(json_object_get(v, "max_tokens")), 33);
        assert_int_equal(json_integer_value(json_object_get(v, "min_tokens")), 33);
        assert_true(json_is_true(json_object_get(v, "ignore_eos")));
        assert_true(json_is_true(json_object_get(v, "stream")));
        assert_true(
            json_is_true(json_object_get(json_object_get(v, "stream_options"), "include_usage")));
        assert_string_equal(json_string_value(json_object_get(v, "model")), "m\"odel");
        json_decref(v);
    }
}

static void test_message_shape(void **state)
{
    struct lt_replay_build b = base();
    struct lt_msg msgs[] = {
        {"system", 50}, {"user", 30}, {"assistant", 10}, {"tool", 5}, {"user", 20}};
    struct lt_replay_job j = {.has = LT_HAS_IN | LT_HAS_MSGS,
                              .in = 3 + 5 * 4 + 115,
                              .n_msgs = 5,
                              .msgs = msgs,
                              .prev = -1,
                              .next = -1};
    uint32_t win, wout;
    json_t *v = body(&b, &j, &win, &wout);
    json_t *m = json_object_get(v, "messages");
    assert_int_equal(json_array_size(m), 5);
    assert_string_equal(json_string_value(json_object_get(json_array_get(m, 3), "role")), "tool");
    assert_string_equal(json_string_value(json_object_get(json_array_get(m, 3), "tool_call_id")),
                        "call_0");
    json_t *calls = json_object_get(json_array_get(m, 2), "tool_calls");
    assert_int_equal(json_array_size(calls), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(calls, 0), "id")),
                        "call_0");
    assert_int_equal(chat_tokens(v), j.in);
    assert_int_equal(wout, 128); /* no out in the record: the default */
    json_decref(v);
}

static const char *content_of(json_t *v)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(v, "messages"), 0), "content"));
}

/* Number of leading words two texts share. */
static size_t common_words(const char *a, const char *b)
{
    size_t w = 0, i = 0;
    for (;; i++) {
        if (a[i] != b[i])
            return w;
        if (a[i] == ' ' || !a[i])
            w++;
        if (!a[i])
            return w;
    }
}

static void test_blocks_share_prefixes(void **state)
{
    struct lt_replay_build b = base();
    b.calib.per_request = b.calib.per_message = 0;
    uint64_t b1[] = {11, 12, 13, 14}, b2[] = {11, 12, 99, 100}, b3[] = {77, 12, 13, 14};
    struct lt_replay_job j1 = {.index = 1,
                               .has = LT_HAS_IN | LT_HAS_BLOCKS,
                               .in = 64,
                               .n_blocks = 4,
                               .blocks = b1,
                               .prev = -1,
                               .next = -1};
    struct lt_replay_job j2 = j1, j3 = j1;
    j2.index = 2;
    j2.blocks = b2;
    j3.index = 3;
    j3.blocks = b3;
    uint32_t win, wout;
    json_t *v1 = body(&b, &j1, &win, &wout), *v2 = body(&b, &j2, &win, &wout),
           *v3 = body(&b, &j3, &win, &wout);
    size_t c12 = common_words(content_of(v1), content_of(v2));
    assert_true(c12 >= 32 && c12 < 40); /* two blocks of 16 tokens, then different */
    assert_true(common_words(content_of(v1), content_of(v3)) < 8);
    /* the same request in another run (another salt) gets other text */
    struct lt_replay_build b2s = b;
    b2s.salt = 43;
    json_t *v1b = body(&b2s, &j1, &win, &wout);
    assert_true(common_words(content_of(v1), content_of(v1b)) < 8);
    json_decref(v1);
    json_decref(v2);
    json_decref(v3);
    json_decref(v1b);
}

static void test_session_turns_extend(void **state)
{
    struct lt_replay_build b = base();
    struct lt_replay_job t0 = {.index = 5,
                               .has = LT_HAS_IN | LT_HAS_SESSION,
                               .session = 9,
                               .in = 40,
                               .prev = -1,
                               .next = -1};
    struct lt_replay_job t1 = t0;
    t1.index = 8;
    t1.turn = 1;
    t1.in = 90;
    uint32_t win, wout;
    json_t *v0 = body(&b, &t0, &win, &wout), *v1 = body(&b, &t1, &win, &wout);
    const char *c0 = content_of(v0), *c1 = content_of(v1);
    assert_true(strlen(c1) > strlen(c0));
    assert_memory_equal(c0, c1, strlen(c0));
    json_decref(v0);
    json_decref(v1);
}

static void test_token_ids_and_apis(void **state)
{
    struct lt_replay_build b = base();
    b.api = LT_REPLAY_API_COMPLETIONS;
    struct lt_replay_job j = {
        .index = 1, .has = LT_HAS_IN | LT_HAS_OUT, .in = 777, .out = 5, .prev = -1, .next = -1};
    uint32_t win, wout;
    json_t *v = body(&b, &j, &win, &wout);
    assert_int_equal(json_array_size(json_object_get(v, "prompt")), 777);
    json_decref(v);
    b.token_ids = false;
    b.calib.per_request = 0;
    v = body(&b, &j, &win, &wout);
    assert_int_equal(sim_count(json_string_value(json_object_get(v, "prompt"))), 777);
    json_decref(v);
    b.api = LT_REPLAY_API_SGLANG;
    b.token_ids = true;
    v = body(&b, &j, &win, &wout);
    assert_int_equal(json_array_size(json_object_get(v, "input_ids")), 777);
    json_t *sp = json_object_get(v, "sampling_params");
    assert_int_equal(json_integer_value(json_object_get(sp, "max_new_tokens")), 5);
    assert_int_equal(json_integer_value(json_object_get(sp, "min_new_tokens")), 5);
    json_decref(v);
}

static void test_recorded_text_and_escaping(void **state)
{
    struct lt_replay_build b = base();
    struct lt_replay_job j = {.has = LT_HAS_IN,
                              .in = 5,
                              .text = "say \"hi\"\n\\",
                              .text_len = 10,
                              .prev = -1,
                              .next = -1};
    uint32_t win, wout;
    json_t *v = body(&b, &j, &win, &wout);
    assert_string_equal(content_of(v), "say \"hi\"\n\\");
    json_decref(v);
    b.synthetic = true;
    v = body(&b, &j, &win, &wout);
    assert_string_not_equal(content_of(v), "say \"hi\"\n\\");
    json_decref(v);
}

static void test_tools(void **state)
{
    struct lt_replay_build b = base();
    struct lt_replay_job j = {.has = LT_HAS_IN | LT_HAS_TOOLS,
                              .in = 500,
                              .tools_count = 3,
                              .tools_tokens = 300,
                              .prev = -1,
                              .next = -1};
    uint32_t win, wout;
    json_t *v = body(&b, &j, &win, &wout);
    assert_int_equal(json_array_size(json_object_get(v, "tools")), 3);
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chat_length_and_output),
        cmocka_unit_test(test_message_shape),
        cmocka_unit_test(test_blocks_share_prefixes),
        cmocka_unit_test(test_session_turns_extend),
        cmocka_unit_test(test_token_ids_and_apis),
        cmocka_unit_test(test_recorded_text_and_escaping),
        cmocka_unit_test(test_tools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Request building: synthesized prompts have the asked length under the
 * sim's documented token rule (a word of L bytes is ceil(L/4) tokens, 4
 * template tokens a message, 3 a request); requests sharing prefix blocks
 * share their prompt text up to the first different block and differ after
 * it; a session's later turn starts with the earlier turn's prompt; token
 * ids are exact and drawn only from the ids the server produced; with
 * measured word costs (several tokens a word) lengths are exact word by
 * word; every body is valid JSON with the output-length settings.
 */
#include "replay/replay_http.h"
#include "replay/replay_prompt.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
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

/* Token ids "the server's tokenizer produced": id prompts use only these. */
static const uint32_t pool[] = {7, 11, 300, 511};

/* Tokens of a text when a word costs its length in bytes (pieces of one
 * byte: the sim's piece_bytes = 1, several tokens a word). */
static uint32_t bytes_count(const char *s)
{
    uint32_t n = 0;
    for (; *s; s++)
        n += *s != ' ';
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
        .ids = pool,
        .n_ids = sizeof pool / sizeof pool[0],
    };
    return b;
}

static json_t *body(const struct lt_replay_build *b, const struct lt_plan_job *j, uint32_t *win,
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
        struct lt_plan_job j = {.index = i,
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
    struct lt_plan_job j = {.has = LT_HAS_IN | LT_HAS_MSGS,
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
    struct lt_plan_job j1 = {.index = 1,
                             .has = LT_HAS_IN | LT_HAS_BLOCKS,
                             .in = 64,
                             .n_blocks = 4,
                             .blocks = b1,
                             .prev = -1,
                             .next = -1};
    struct lt_plan_job j2 = j1, j3 = j1;
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
    struct lt_plan_job t0 = {.index = 5,
                             .has = LT_HAS_IN | LT_HAS_SESSION,
                             .session = 9,
                             .in = 40,
                             .prev = -1,
                             .next = -1};
    struct lt_plan_job t1 = t0;
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
    struct lt_plan_job j = {
        .index = 1, .has = LT_HAS_IN | LT_HAS_OUT, .in = 777, .out = 5, .prev = -1, .next = -1};
    uint32_t win, wout;
    json_t *v = body(&b, &j, &win, &wout);
    json_t *ids = json_object_get(v, "prompt");
    assert_int_equal(json_array_size(ids), 777);
    size_t k;
    json_t *id;
    bool seen[4] = {0};
    json_array_foreach(ids, k, id)
    {
        json_int_t x = json_integer_value(id);
        size_t p = 0;
        while (p < 4 && (json_int_t)pool[p] != x)
            p++;
        if (p == 4)
            fail_msg("id %lld is not one the server produced", (long long)x);
        seen[p] = true;
    }
    assert_true(seen[0] && seen[1] && seen[2] && seen[3]);
    json_decref(v);
    /* No ids shown valid (no /tokenize): text, never made-up ids. */
    b.n_ids = 0;
    v = body(&b, &j, &win, &wout);
    assert_true(json_is_string(json_object_get(v, "prompt")));
    json_decref(v);
    b.n_ids = sizeof pool / sizeof pool[0];
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

/* Word by word: with each word's measured cost (here its length, 2 to 4,
 * so no word costs 1), every prompt and every message set is exactly the
 * length asked, small shares included. */
static void test_exact_word_costs(void **state)
{
    struct lt_replay_build b = base();
    b.token_ids = false;
    b.calib.exact_words = true;
    for (unsigned w = 0; w < LT_REPLAY_N_WORDS; w++)
        b.calib.word_cost[w] = (uint8_t)strlen(lt_replay_word(w));
    uint32_t win, wout;
    for (uint32_t in = 9; in < 900; in += 37) { /* content of 2 tokens or more */
        struct lt_plan_job j = {.index = in, .has = LT_HAS_IN, .in = in, .prev = -1, .next = -1};
        b.api = LT_REPLAY_API_CHAT;
        json_t *v = body(&b, &j, &win, &wout);
        assert_int_equal(3 + 4 + bytes_count(content_of(v)), in);
        json_decref(v);
        b.api = LT_REPLAY_API_COMPLETIONS;
        b.calib.per_request = 0;
        v = body(&b, &j, &win, &wout);
        assert_int_equal(bytes_count(json_string_value(json_object_get(v, "prompt"))), in);
        json_decref(v);
        b.calib.per_request = 3;
    }
    b.api = LT_REPLAY_API_CHAT;
    struct lt_msg msgs[] = {{"system", 1}, {"user", 30}, {"assistant", 1}, {"user", 2}};
    for (uint32_t extra = 0; extra < 40; extra++) {
        struct lt_plan_job j = {.index = extra,
                                .has = LT_HAS_IN | LT_HAS_MSGS,
                                .in = 3 + 4 * 4 + 34 + extra,
                                .n_msgs = 4,
                                .msgs = msgs,
                                .prev = -1,
                                .next = -1};
        json_t *v = body(&b, &j, &win, &wout);
        json_t *ms = json_object_get(v, "messages");
        uint32_t n = 3;
        size_t k;
        json_t *m;
        json_array_foreach(ms, k, m)
        {
            n += 4 + bytes_count(json_string_value(json_object_get(m, "content")));
        }
        assert_int_equal(n, j.in);
        json_decref(v);
    }
}

static void test_recorded_text_and_escaping(void **state)
{
    struct lt_replay_build b = base();
    struct lt_plan_job j = {.has = LT_HAS_IN,
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
    struct lt_plan_job j = {.has = LT_HAS_IN | LT_HAS_TOOLS,
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

/* The same turns in the Responses and Messages envelopes: the assistant's
 * tool call and the tool's answer as each API writes them, the length
 * field each names, thinking and reasoning where each puts them. */
static void test_responses_and_messages(void **state)
{
    struct lt_msg msgs[] = {
        {"system", 50}, {"user", 30}, {"assistant", 10}, {"tool", 5}, {"user", 20}};
    struct lt_plan_job j = {.has = LT_HAS_IN | LT_HAS_MSGS | LT_HAS_OUT | LT_HAS_TOOLS,
                            .in = 3 + 5 * 4 + 115 + 60,
                            .out = 9,
                            .n_msgs = 5,
                            .msgs = msgs,
                            .tools_count = 2,
                            .tools_tokens = 60,
                            .prev = -1,
                            .next = -1};
    uint32_t win, wout;
    struct lt_replay_build b = base();
    b.api = LT_REPLAY_API_RESPONSES;
    b.reasoning_effort = "low";
    json_t *v = body(&b, &j, &win, &wout);
    assert_string_equal(lt_replay_api_path(b.api), "/v1/responses");
    assert_int_equal(json_integer_value(json_object_get(v, "max_output_tokens")), 9);
    assert_null(json_object_get(v, "max_tokens"));
    assert_null(json_object_get(v, "stream_options"));
    assert_true(json_is_true(json_object_get(v, "stream")));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(v, "reasoning"), "effort")), "low");
    json_t *in = json_object_get(v, "input");
    assert_int_equal(json_array_size(in), 6); /* 5 turns and the function call */
    assert_string_equal(json_string_value(json_object_get(json_array_get(in, 3), "type")),
                        "function_call");
    assert_string_equal(json_string_value(json_object_get(json_array_get(in, 4), "type")),
                        "function_call_output");
    assert_string_equal(json_string_value(json_object_get(json_array_get(in, 4), "call_id")),
                        "call_0");
    json_t *tools = json_object_get(v, "tools");
    assert_int_equal(json_array_size(tools), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 1), "name")),
                        "tool_1");
    json_decref(v);

    b = base();
    b.api = LT_REPLAY_API_MESSAGES;
    b.thinking = LT_REPLAY_THINK_ON;
    v = body(&b, &j, &win, &wout);
    assert_string_equal(lt_replay_api_path(b.api), "/v1/messages");
    assert_int_equal(json_integer_value(json_object_get(v, "max_tokens")), 9);
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "thinking"), "type")),
                        "enabled");
    assert_int_equal(json_array_size(json_object_get(v, "system")), 1);
    json_t *m = json_object_get(v, "messages");
    assert_int_equal(json_array_size(m), 4); /* the system turn is apart */
    json_t *asst = json_object_get(json_array_get(m, 1), "content");
    assert_string_equal(json_string_value(json_object_get(json_array_get(asst, 1), "type")),
                        "tool_use");
    json_t *res = json_array_get(json_object_get(json_array_get(m, 2), "content"), 0);
    assert_string_equal(json_string_value(json_object_get(res, "type")), "tool_result");
    assert_string_equal(json_string_value(json_object_get(res, "tool_use_id")), "toolu_0");
    assert_string_equal(json_string_value(json_object_get(json_array_get(m, 2), "role")), "user");
    tools = json_object_get(v, "tools");
    assert_non_null(json_object_get(json_array_get(tools, 0), "input_schema"));
    json_decref(v);
    /* Two calls: both results in the one user turn after them. */
    struct lt_msg two[] = {{"user", 30}, {"assistant", 10}, {"tool", 5}, {"tool", 5}, {"user", 9}};
    j.msgs = two;
    j.has &= ~(uint32_t)LT_HAS_TOOLS;
    v = body(&b, &j, &win, &wout);
    m = json_object_get(v, "messages");
    assert_int_equal(json_array_size(m), 4);
    assert_int_equal(json_array_size(json_object_get(json_array_get(m, 1), "content")), 3);
    json_t *both = json_object_get(json_array_get(m, 2), "content");
    assert_int_equal(json_array_size(both), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(both, 1), "tool_use_id")),
                        "toolu_1");
    assert_null(json_object_get(v, "system"));
    json_decref(v);
}

/* The texts of a Responses or Messages body: each turn's content string,
 * or its text blocks'. */
static uint32_t texts_of(json_t *v, const char **first, size_t max)
{
    uint32_t n = 0;
    const char *keys[] = {"system", "messages", "input"};
    for (int k = 0; k < 3; k++) {
        json_t *list = json_object_get(v, keys[k]);
        size_t i, j;
        json_t *m, *blk;
        json_array_foreach(list, i, m)
        {
            json_t *c = json_object_get(m, "content");
            if (!c)
                c = json_object_get(m, "output");
            if (!c && json_object_get(m, "text"))
                c = json_object_get(m, "text");
            if (json_is_string(c) && n < max)
                first[n++] = json_string_value(c);
            json_array_foreach(c, j, blk)
            {
                const char *t = json_string_value(json_object_get(blk, "text"));
                if (!t)
                    t = json_string_value(json_object_get(blk, "content"));
                if (t && n < max)
                    first[n++] = t;
            }
        }
    }
    return n;
}

/* Responses and Messages prompts are filled word by word to the exact
 * count, as chat's are (the measured word costs; the share of each turn
 * its recorded size), and every synthesized text opens with the one fixed
 * word whose cost at a text's start calibration measured. */
static void test_exact_on_every_api(void **state)
{
    struct lt_replay_build b = base();
    b.token_ids = false;
    b.calib.exact_words = true;
    for (unsigned w = 0; w < LT_REPLAY_N_WORDS; w++)
        b.calib.word_cost[w] = (uint8_t)strlen(lt_replay_word(w));
    struct lt_msg msgs[] = {{"system", 20}, {"user", 30}, {"assistant", 10}, {"user", 25}};
    for (int api = 0; api < 3; api++) {
        b.api = api == 0   ? LT_REPLAY_API_CHAT
                : api == 1 ? LT_REPLAY_API_RESPONSES
                           : LT_REPLAY_API_MESSAGES;
        for (uint32_t extra = 0; extra < 60; extra += 7) {
            for (int shaped = 0; shaped < 2; shaped++) {
                uint32_t nm = shaped ? 4 : 1;
                struct lt_plan_job j = {.index = extra,
                                        .has = LT_HAS_IN | (shaped ? LT_HAS_MSGS : 0),
                                        .in = 3 + 4 * nm + 60 + extra,
                                        .n_msgs = shaped ? 4 : 0,
                                        .msgs = msgs,
                                        .prev = -1,
                                        .next = -1};
                uint32_t win, wout;
                json_t *v = body(&b, &j, &win, &wout);
                const char *t[8];
                uint32_t n = texts_of(v, t, 8), tokens = 3;
                assert_int_equal(n, nm);
                for (uint32_t k = 0; k < n; k++) {
                    tokens += 4 + bytes_count(t[k]);
                    size_t fl = strlen(lt_replay_word(LT_REPLAY_FIRST_WORD));
                    assert_memory_equal(t[k], lt_replay_word(LT_REPLAY_FIRST_WORD), fl);
                    assert_true(t[k][fl] == ' ' || t[k][fl] == '\0');
                }
                assert_int_equal(tokens, j.in);
                json_decref(v);
            }
        }
    }
}

/* Recorded chat turns (capture's text) go as turns in each API's shape:
 * chat's as recorded, Responses' items, Messages' system and blocks. */
static void test_recorded_turns(void **state)
{
    static char turns[] =
        "[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":\"hi\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"x\",\"type\":"
        "\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"q\\\":1}\"}}]},"
        "{\"role\":\"tool\",\"content\":\"42\"},{\"role\":\"user\",\"content\":\"and?\"}]";
    struct lt_plan_job j = {.has = LT_HAS_IN,
                            .in = 50,
                            .text = turns,
                            .text_len = sizeof turns - 1,
                            .prev = -1,
                            .next = -1};
    uint32_t win, wout;
    struct lt_replay_build b = base();
    json_t *v = body(&b, &j, &win, &wout);
    json_t *want = json_loads(turns, 0, NULL);
    assert_true(json_equal(json_object_get(v, "messages"), want));
    json_decref(want);
    json_decref(v);
    b.api = LT_REPLAY_API_RESPONSES;
    v = body(&b, &j, &win, &wout);
    json_t *in = json_object_get(v, "input");
    assert_int_equal(json_array_size(in), 5);
    assert_string_equal(json_string_value(json_object_get(json_array_get(in, 0), "role")),
                        "system");
    assert_string_equal(json_string_value(json_object_get(json_array_get(in, 2), "type")),
                        "function_call");
    assert_string_equal(json_string_value(json_object_get(json_array_get(in, 2), "arguments")),
                        "{\"q\":1}");
    assert_string_equal(json_string_value(json_object_get(json_array_get(in, 3), "output")), "42");
    json_decref(v);
    b.api = LT_REPLAY_API_MESSAGES;
    v = body(&b, &j, &win, &wout);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(v, "system"), 0), "text")),
        "be brief");
    json_t *m = json_object_get(v, "messages");
    assert_int_equal(json_array_size(m), 4);
    json_t *use = json_array_get(json_object_get(json_array_get(m, 1), "content"), 0);
    assert_string_equal(json_string_value(json_object_get(use, "type")), "tool_use");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(use, "input"), "q")), 1);
    json_t *res = json_array_get(json_object_get(json_array_get(m, 2), "content"), 0);
    assert_string_equal(json_string_value(json_object_get(res, "type")), "tool_result");
    json_decref(v);
    /* A completions prompt of token ids goes as the ids. */
    static char ids[] = "[5,6,7]";
    struct lt_plan_job c = {
        .has = LT_HAS_IN, .in = 3, .text = ids, .text_len = 7, .prev = -1, .next = -1};
    b.api = LT_REPLAY_API_COMPLETIONS;
    v = body(&b, &c, &win, &wout);
    assert_int_equal(json_array_size(json_object_get(v, "prompt")), 3);
    json_decref(v);
}

/* Messages sends the key as x-api-key with anthropic-version (unless the
 * user gave one); the others as a bearer token. */
static void test_headers(void **state)
{
    struct curl_slist *h = NULL;
    assert_int_equal(lt_replay_http_headers_for(&h, true, false, "k1", NULL, 0, NULL), 0);
    char all[512] = "";
    for (struct curl_slist *p = h; p; p = p->next)
        snprintf(all + strlen(all), sizeof all - strlen(all), "%s|", p->data);
    curl_slist_free_all(h);
    assert_non_null(strstr(all, "|x-api-key: k1|"));
    assert_non_null(strstr(all, "|anthropic-version: 2023-06-01|"));
    assert_null(strstr(all, "Bearer"));
    const char *user[] = {"Anthropic-Version: 2024-01-01"};
    assert_int_equal(lt_replay_http_headers_for(&h, true, false, NULL, user, 1, NULL), 0);
    all[0] = '\0';
    for (struct curl_slist *p = h; p; p = p->next)
        snprintf(all + strlen(all), sizeof all - strlen(all), "%s|", p->data);
    curl_slist_free_all(h);
    assert_null(strstr(all, "2023-06-01"));
    assert_null(strstr(all, "x-api-key"));
    /* A key from OPENAI_API_KEY: also as a bearer token, which vLLM reads. */
    assert_int_equal(lt_replay_http_headers_for(&h, true, true, "k3", NULL, 0, NULL), 0);
    all[0] = '\0';
    for (struct curl_slist *p = h; p; p = p->next)
        snprintf(all + strlen(all), sizeof all - strlen(all), "%s|", p->data);
    curl_slist_free_all(h);
    assert_non_null(strstr(all, "|x-api-key: k3|Authorization: Bearer k3|"));
    assert_int_equal(lt_replay_http_headers(&h, "k2", NULL, 0, NULL), 0);
    assert_string_equal(h->next->next->data, "Authorization: Bearer k2");
    curl_slist_free_all(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chat_length_and_output),
        cmocka_unit_test(test_message_shape),
        cmocka_unit_test(test_blocks_share_prefixes),
        cmocka_unit_test(test_session_turns_extend),
        cmocka_unit_test(test_token_ids_and_apis),
        cmocka_unit_test(test_exact_word_costs),
        cmocka_unit_test(test_recorded_text_and_escaping),
        cmocka_unit_test(test_tools),
        cmocka_unit_test(test_responses_and_messages),
        cmocka_unit_test(test_exact_on_every_api),
        cmocka_unit_test(test_recorded_turns),
        cmocka_unit_test(test_headers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

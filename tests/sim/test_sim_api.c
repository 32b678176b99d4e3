/*
 * Unit tests of the sim's request surface: the prompt token counting rule,
 * prefix block hashes, request validation, rendered chunks (valid JSON in
 * every dialect), the fault spec and the reproducibility of its draw.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim/sim_api.h"
#include "sim/sim_faults.h"
#include "sim/sim_profile.h"
#include "sim/sim_tokens.h"

#include <jansson.h>
#include <string.h>

static void test_count_rule(void **state)
{
    static const struct {
        const char *text;
        uint32_t n;
    } cases[] = {
        {"", 0},          {"   \n\t ", 0},        {"a", 1},
        {"abcd", 1},      {"abcde", 2},           {"hello there worldwide, x", 8},
        {"w w w w w", 5}, {"  lead  trail  ", 3}, {"0123456789abcdef0", 5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(lt_sim_count_text(cases[i].text, strlen(cases[i].text)), cases[i].n);
        struct lt_sim_toks t;
        lt_sim_toks_init(&t, 4);
        lt_sim_toks_text(&t, cases[i].text, strlen(cases[i].text));
        assert_int_equal(t.n, cases[i].n);
        assert_int_equal(t.nblocks, cases[i].n / 4);
        lt_sim_toks_release(&t);
    }
    /* generated words are one token each */
    for (uint32_t i = 0; i < 100; i++)
        assert_int_equal(lt_sim_count_text(lt_sim_word(i), strlen(lt_sim_word(i))), 1);
}

/* Other tokenizers: pieces of 1 to 3 bytes (several tokens per word) and a
 * small vocabulary, counted by hand. */
static void test_other_tokenizers(void **state)
{
    static const struct {
        const char *text;
        uint32_t piece, n;
    } cases[] = {
        {"hello there", 1, 10}, {"hello there", 2, 6},
        {"hello there", 3, 4},  {" a  bc\tdef ", 1, 6},
        {" a  bc\tdef ", 2, 4}, {"", 1, 0},
        {"abcdefg", 3, 3},      {"x", 2, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct lt_sim_toks t;
        uint32_t ids[16];
        lt_sim_toks_init(&t, 4);
        lt_sim_toks_tokenizer(&t, 20, cases[i].piece);
        t.ids = ids;
        t.ids_cap = 16;
        lt_sim_toks_text(&t, cases[i].text, strlen(cases[i].text));
        assert_int_equal(t.n, cases[i].n);
        for (uint32_t k = 0; k < t.n && k < 16; k++)
            assert_true(ids[k] < 20);
        lt_sim_toks_release(&t);
    }
}

static void test_blocks_share_prefixes(void **state)
{
    const char *a = "one two three four five six seven eight nine ten";
    const char *b = "one two three four five six seven eight NINE ten";
    struct lt_sim_toks ta, tb;
    lt_sim_toks_init(&ta, 4);
    lt_sim_toks_init(&tb, 4);
    lt_sim_toks_text(&ta, a, strlen(a));
    lt_sim_toks_text(&tb, b, strlen(b));
    assert_int_equal(ta.nblocks, 3);
    assert_int_equal(tb.nblocks, 3);
    assert_true(ta.blocks[0] == tb.blocks[0]);
    assert_true(ta.blocks[1] == tb.blocks[1]);
    assert_true(ta.blocks[2] != tb.blocks[2]); /* token 9 differs */
    lt_sim_toks_release(&ta);
    lt_sim_toks_release(&tb);
}

static void test_parse_chat(void **state)
{
    struct lt_sim_profile p;
    lt_sim_profile_builtin(&p, "default", NULL);
    struct lt_sim_call c;
    char msg[512];
    const char *body =
        "{\"model\":\"m\\\"q\",\"messages\":[{\"role\":\"user\",\"content\":"
        "[{\"type\":\"text\",\"text\":\"hello there\"},{\"type\":\"image_url\","
        "\"image_url\":{\"url\":\"https://x.invalid/a.png\"}}]}],"
        "\"max_tokens\":7,\"stream\":true,\"stream_options\":{\"include_usage\":true}}";
    assert_int_equal(lt_sim_call_parse(&c, LT_SIM_CHAT, body, strlen(body), &p, msg, sizeof msg),
                     0);
    /* the link is not fetched: a 448 x 448 square, 2 + 16 * 16 tokens */
    assert_int_equal(c.images, 1);
    assert_int_equal(c.image_tokens, 2 + 16 * 16);
    assert_int_equal(c.toks.n, 4 + 4 + 3 + 2 + 16 * 16);
    assert_int_equal(c.max_tokens, 7);
    assert_true(c.stream && c.include_usage);
    assert_string_equal(c.model_json, "\"m\\\"q\"");
    lt_sim_call_release(&c);
    /* no max_tokens: the rest of the context */
    const char *b2 = "{\"prompt\":[1,2,3]}";
    assert_int_equal(lt_sim_call_parse(&c, LT_SIM_COMPLETIONS, b2, strlen(b2), &p, msg, sizeof msg),
                     0);
    assert_int_equal(c.max_tokens, p.max_model_len - 3);
    lt_sim_call_release(&c);
    static const char *const bad[] = {
        "{",
        "{\"messages\":{}}",
        "{\"messages\":[{\"role\":\"user\"}]}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":1.5}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"ignore_eos\":1}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(
            lt_sim_call_parse(&c, LT_SIM_CHAT, bad[i], strlen(bad[i]), &p, msg, sizeof msg), 400);
        assert_true(msg[0] != '\0');
        lt_sim_call_release(&c);
    }
}

/* Responses and Messages: the same turns count as chat's do; their own
 * fields (max_output_tokens, reasoning, thinking, flat tools and their
 * tool_choice) are read; what each API refuses gets a 400. */
static void test_parse_responses_and_messages(void **state)
{
    struct lt_sim_profile p;
    lt_sim_profile_builtin(&p, "default", NULL);
    struct lt_sim_call c;
    char msg[512];
    const char *chat = "{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
                       "{\"role\":\"user\",\"content\":\"hello there\"}]}";
    assert_int_equal(lt_sim_call_parse(&c, LT_SIM_CHAT, chat, strlen(chat), &p, msg, sizeof msg),
                     0);
    uint32_t want = c.toks.n;
    lt_sim_call_release(&c);

    const char *r = "{\"instructions\":\"be brief\",\"input\":\"hello there\","
                    "\"max_output_tokens\":5,\"reasoning\":{\"effort\":\"high\"},"
                    "\"tools\":[{\"type\":\"function\",\"name\":\"f\"}],\"tool_choice\":"
                    "{\"type\":\"function\",\"name\":\"f\"},\"stream\":true}";
    assert_int_equal(lt_sim_call_parse(&c, LT_SIM_RESPONSES, r, strlen(r), &p, msg, sizeof msg), 0);
    assert_true(c.toks.n > want); /* and the tools */
    assert_int_equal(c.max_tokens, 5);
    assert_true(c.reasoning == 1 && c.reasoning_fraction == 0.75);
    assert_true(c.tool_call && c.stream && c.include_usage);
    assert_string_equal(c.tool_name_json, "\"f\"");
    lt_sim_call_release(&c);
    const char *r2 = "{\"instructions\":\"be brief\",\"input\":[{\"role\":\"user\",\"content\":"
                     "[{\"type\":\"input_text\",\"text\":\"hello there\"}]}]}";
    assert_int_equal(lt_sim_call_parse(&c, LT_SIM_RESPONSES, r2, strlen(r2), &p, msg, sizeof msg),
                     0);
    assert_int_equal(c.toks.n, want);
    lt_sim_call_release(&c);

    const char *m = "{\"system\":[{\"type\":\"text\",\"text\":\"be brief\"}],\"messages\":"
                    "[{\"role\":\"user\",\"content\":\"hello there\"}],\"max_tokens\":6,"
                    "\"thinking\":{\"type\":\"disabled\"}}";
    assert_int_equal(lt_sim_call_parse(&c, LT_SIM_MESSAGES, m, strlen(m), &p, msg, sizeof msg), 0);
    assert_int_equal(c.toks.n, want);
    assert_int_equal(c.max_tokens, 6);
    assert_int_equal(c.reasoning, 0);
    assert_false(c.tool_call);
    lt_sim_call_release(&c);
    const char *m2 = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":6,"
                     "\"tools\":[{\"name\":\"g\",\"input_schema\":{}}],\"tool_choice\":"
                     "{\"type\":\"any\"}}";
    assert_int_equal(lt_sim_call_parse(&c, LT_SIM_MESSAGES, m2, strlen(m2), &p, msg, sizeof msg),
                     0);
    assert_true(c.tool_call);
    assert_string_equal(c.tool_name_json, "\"g\"");
    lt_sim_call_release(&c);

    static const struct {
        enum lt_sim_api api;
        const char *body;
    } bad[] = {
        {LT_SIM_RESPONSES, "{\"max_output_tokens\":3}"},
        {LT_SIM_RESPONSES, "{\"input\":[]}"},
        {LT_SIM_RESPONSES, "{\"input\":[{\"role\":\"tool\",\"content\":\"x\"}]}"},
        {LT_SIM_RESPONSES, "{\"input\":\"x\",\"tool_choice\":\"required\"}"},
        {LT_SIM_MESSAGES, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"},
        {LT_SIM_MESSAGES, "{\"messages\":[{\"role\":\"system\",\"content\":\"x\"}],"
                          "\"max_tokens\":1}"},
        {LT_SIM_MESSAGES, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                          "\"max_tokens\":1,\"tool_choice\":\"auto\"}"},
        {LT_SIM_MESSAGES, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                          "\"max_tokens\":1,\"thinking\":{\"type\":\"maybe\"}}"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (lt_sim_call_parse(&c, bad[i].api, bad[i].body, strlen(bad[i].body), &p, msg,
                              sizeof msg) != 400)
            fail_msg("accepted: %s", bad[i].body);
        assert_true(msg[0] != '\0');
        lt_sim_call_release(&c);
    }
    struct lt_buf b;
    lt_buf_init(&b, 1 << 12);
    assert_int_equal(lt_sim_error_body_messages(&b, 429, "slow \"down\""), 0);
    json_t *j = json_loadb(b.p, b.len, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "type")), "error");
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "type")),
                        "rate_limit_error");
    json_decref(j);
    lt_buf_release(&b);
}

static void check_json_chunks(const char *sse, int want)
{
    int n = 0;
    for (const char *l = sse; (l = strstr(l, "data: ")) != NULL; l += 6) {
        const char *end = strstr(l, "\n\n");
        assert_non_null(end);
        if (!strncmp(l + 6, "[DONE]", 6))
            continue;
        json_error_t je;
        json_t *j = json_loadb(l + 6, (size_t)(end - l - 6), 0, &je);
        assert_non_null(j);
        json_decref(j);
        n++;
    }
    assert_int_equal(n, want);
}

/* The usage of a whole answer, as JSON. */
static json_t *full_usage(const struct lt_sim_resp *r)
{
    struct lt_buf b;
    lt_buf_init(&b, 1 << 20);
    assert_int_equal(lt_sim_render_full(&b, r), 0);
    json_t *j = json_loads(b.p, 0, NULL);
    lt_buf_release(&b);
    assert_non_null(j);
    json_t *u = json_incref(json_object_get(j, "usage"));
    json_decref(j);
    return u;
}

static long long ival(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

/* Messages' usage split by the cache as Anthropic and llama.cpp answer (a
 * cached 63-token prompt: input_tokens 1, cache_read_input_tokens 62), in
 * the whole answer and in message_start; vLLM's shape with
 * messages-usage-total; Responses' input_tokens whole, with
 * input_tokens_details.cached_tokens. */
static void test_render_usage_by_api(void **state)
{
    struct lt_sim_dialect d;
    assert_int_equal(lt_sim_dialect_parse(&d, "vllm", NULL), 0);
    struct lt_sim_resp r = {.d = &d,
                            .api = LT_SIM_MESSAGES,
                            .id = "msg_1",
                            .created = 1,
                            .model_json = "\"m\"",
                            .seq = 1,
                            .prompt_tokens = 63,
                            .cached_tokens = 62,
                            .out = 3,
                            .finish = "length",
                            .include_usage = true};
    json_t *u = full_usage(&r);
    assert_int_equal(ival(u, "input_tokens"), 1);
    assert_int_equal(ival(u, "cache_read_input_tokens"), 62);
    assert_int_equal(ival(u, "output_tokens"), 3);
    json_decref(u);
    struct lt_buf b;
    lt_buf_init(&b, 1 << 20);
    assert_int_equal(lt_sim_render_head(&b, &r), 0);
    assert_non_null(strstr(b.p, "\"input_tokens\":1,\"cache_read_input_tokens\":62"));
    lt_buf_release(&b);
    assert_int_equal(lt_sim_dialect_parse(&d, "messages-usage-total", NULL), 0);
    u = full_usage(&r);
    assert_int_equal(ival(u, "input_tokens"), 63);
    assert_null(json_object_get(u, "cache_read_input_tokens"));
    json_decref(u);
    assert_int_equal(lt_sim_dialect_parse(&d, "messages-usage-total,messages-usage-split", NULL),
                     0);
    assert_false(d.messages_usage_total);
    r.api = LT_SIM_RESPONSES;
    r.id = "resp_1";
    u = full_usage(&r);
    assert_int_equal(ival(u, "input_tokens"), 63);
    assert_int_equal(ival(json_object_get(u, "input_tokens_details"), "cached_tokens"), 62);
    json_decref(u);
    /* The badprompt fault's claim, on every API. */
    r.claim_in = true;
    r.claimed_in = UINT64_MAX;
    for (int api = 0; api < 3; api++) {
        r.api = api == 0 ? LT_SIM_CHAT : api == 1 ? LT_SIM_RESPONSES : LT_SIM_MESSAGES;
        struct lt_buf c;
        lt_buf_init(&c, 1 << 20);
        assert_int_equal(lt_sim_render_full(&c, &r), 0);
        assert_non_null(strstr(c.p, "18446744073709551615"));
        lt_buf_release(&c);
    }
}

static void test_render_dialects(void **state)
{
    static const char *const specs[] = {"vllm", "no-role-chunk,usage-in-last,reasoning,close"};
    for (int k = 0; k < 2; k++) {
        struct lt_sim_dialect d;
        assert_int_equal(lt_sim_dialect_parse(&d, specs[k], NULL), 0);
        for (int tool = 0; tool < 2; tool++) {
            struct lt_sim_resp r = {.d = &d,
                                    .api = LT_SIM_CHAT,
                                    .id = "chatcmpl-1",
                                    .created = 1,
                                    .model_json = "\"m\"",
                                    .seq = 1,
                                    .prompt_tokens = 5,
                                    .out = 6,
                                    .reasoning = 2,
                                    .tool_call = tool,
                                    .tool_name_json = "\"f\"",
                                    .finish = tool ? "tool_calls" : "length",
                                    .include_usage = true};
            struct lt_buf b;
            lt_buf_init(&b, 1 << 20);
            lt_sim_render_head(&b, &r);
            for (uint32_t i = 0; i < r.out; i++)
                lt_sim_render_token(&b, &r, i, false);
            lt_sim_render_tail(&b, &r);
            check_json_chunks(b.p, (d.role_chunk ? 1 : 0) + 6 + (d.usage_in_last ? 0 : 1));
            lt_buf_reset(&b);
            lt_sim_render_full(&b, &r);
            json_error_t je;
            json_t *j = json_loads(b.p, 0, &je);
            assert_non_null(j);
            if (tool) {
                const char *args = json_string_value(json_object_get(
                    json_object_get(
                        json_array_get(
                            json_object_get(
                                json_object_get(json_array_get(json_object_get(j, "choices"), 0),
                                                "message"),
                                "tool_calls"),
                            0),
                        "function"),
                    "arguments"));
                assert_non_null(args);
                json_t *a = json_loads(args, 0, &je);
                assert_non_null(a); /* the arguments are JSON too */
                json_decref(a);
            }
            json_decref(j);
            lt_buf_release(&b);
        }
    }
    struct lt_sim_dialect d;
    assert_int_equal(lt_sim_dialect_parse(&d, "vllm,nope", NULL), LT_EFORMAT);
    assert_int_equal(lt_sim_dialect_parse(&d, "http10", NULL), 0);
    assert_true(d.http10);
    assert_int_equal(lt_sim_dialect_parse(&d, "http10,http11", NULL), 0);
    assert_false(d.http10);
}

static void test_faults(void **state)
{
    struct lt_sim_faults f;
    struct lt_err err = {0};
    assert_int_equal(lt_sim_faults_parse(&f, "500=0.2,429=0.3:4,stall=0.1:250ms:7,seed=5", &err),
                     0);
    assert_int_equal(f.retry_after_429, 4);
    assert_int_equal(f.stall_us, 250000);
    assert_int_equal(f.stall_after, 7);
    /* the one duration grammar: hours work here as in every option */
    struct lt_sim_faults g;
    assert_int_equal(lt_sim_faults_parse(&g, "stall=0.1:1h,refuse=0.1:1.5m", &err), 0);
    assert_int_equal(g.stall_us, INT64_C(3600000000));
    assert_int_equal(g.refuse_us, 90000000);
    /* the faults that stand in for servers whose answers are wrong */
    struct lt_sim_faults h;
    assert_int_equal(lt_sim_faults_parse(&h, "bighead=0.1,badchoices=0.1,badusage=0.1", &err), 0);
    assert_int_equal(h.bighead_bytes, 2u << 20);
    assert_int_equal(h.badchoices_after, 3);
    assert_true(h.badusage_tokens == UINT64_MAX);
    assert_int_equal(
        lt_sim_faults_parse(&h, "bighead=0.1:67108864,badchoices=0.1:0,badusage=0.1:7", &err), 0);
    assert_int_equal(h.bighead_bytes, 64u << 20);
    assert_int_equal(h.badchoices_after, 0);
    assert_true(h.badusage_tokens == 7);
    assert_string_equal(lt_sim_fault_name(LT_SIM_FAULT_BADUSAGE), "badusage");
    /* HTTP framing gone wrong */
    assert_int_equal(lt_sim_faults_parse(&h, "liesize=0.1,badchunk=0.1", &err), 0);
    assert_int_equal(h.liesize_bytes, 100);
    assert_int_equal(h.badchunk_after, 3);
    assert_int_equal(lt_sim_faults_parse(&h, "liesize=0.1:7,badchunk=0.1:0", &err), 0);
    assert_int_equal(h.liesize_bytes, 7);
    assert_int_equal(h.badchunk_after, 0);
    assert_int_equal(lt_sim_faults_parse(&h, "liesize=0.1:0", &err), LT_EFORMAT);
    assert_string_equal(lt_sim_fault_name(LT_SIM_FAULT_BADCHUNK), "badchunk");
    int count[LT_SIM_FAULT_COUNT] = {0};
    for (uint64_t seq = 1; seq <= 10000; seq++) {
        enum lt_sim_fault k = lt_sim_faults_pick(&f, seq);
        assert_int_equal(k, lt_sim_faults_pick(&f, seq)); /* reproducible */
        count[k]++;
    }
    assert_in_range(count[LT_SIM_FAULT_500], 1800, 2200);
    assert_in_range(count[LT_SIM_FAULT_429], 2700, 3300);
    assert_in_range(count[LT_SIM_FAULT_STALL], 850, 1150);
    assert_int_equal(count[LT_SIM_FAULT_503], 0);
    static const char *const bad[] = {
        "500", "500=2", "boom=0.1", "500=0.6,503=0.6", "stall=0.1:fast", "seed=x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(lt_sim_faults_parse(&f, bad[i], &err), LT_EFORMAT);
    /* The message blames the part that is wrong, not the probability. */
    static const struct {
        const char *spec, *msg;
    } blame[] = {
        {"stall=0.1:-1s", "fault 'stall': the stall time '-1s' is not a duration"},
        {"stall=0.1:1s:x", "fault 'stall': the tokens before the stall 'x' is not a whole"},
        {"stall=0.1:1s:5:9", "fault 'stall': at most 2 values after ':'"},
        {"429=0.1:abc", "fault '429': the Retry-After seconds 'abc' is not a whole"},
        {"refuse=2:1s", "fault 'refuse': the probability '2' is not 0 to 1"},
        {"500=0.1:3", "fault '500' takes only a probability"},
        {"slow=0.5:soon", "fault 'slow': the delay 'soon' is not a duration"},
        {"disconnect=0.1:-4", "fault 'disconnect': the tokens before the cut '-4'"},
        {"bighead=0.1:67108865", "fault 'bighead': the header bytes '67108865' is more than"},
        {"badusage=0.1:18446744073709551616", "fault 'badusage': the tokens claimed"},
        {"badchoices=0.1:x", "fault 'badchoices': the chunks before the bad one 'x'"},
    };
    for (size_t i = 0; i < sizeof blame / sizeof blame[0]; i++) {
        assert_int_equal(lt_sim_faults_parse(&f, blame[i].spec, &err), LT_EFORMAT);
        if (!strstr(err.msg, blame[i].msg))
            fail_msg("%s: got \"%s\"", blame[i].spec, err.msg);
    }
    assert_int_equal(lt_sim_faults_parse(&f, NULL, &err), 0);
    assert_int_equal(lt_sim_faults_pick(&f, 1), LT_SIM_FAULT_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_count_rule),
        cmocka_unit_test(test_other_tokenizers),
        cmocka_unit_test(test_blocks_share_prefixes),
        cmocka_unit_test(test_parse_chat),
        cmocka_unit_test(test_parse_responses_and_messages),
        cmocka_unit_test(test_render_dialects),
        cmocka_unit_test(test_render_usage_by_api),
        cmocka_unit_test(test_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

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
        "[{\"type\":\"text\",\"text\":\"hello there\"},{\"type\":\"image_url\"}]}],"
        "\"max_tokens\":7,\"stream\":true,\"stream_options\":{\"include_usage\":true}}";
    assert_int_equal(lt_sim_call_parse(&c, LT_SIM_CHAT, body, strlen(body), &p, msg, sizeof msg),
                     0);
    assert_int_equal(c.toks.n, 4 + 4 + 3);
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
    assert_int_equal(lt_sim_faults_parse(&f, NULL, &err), 0);
    assert_int_equal(lt_sim_faults_pick(&f, 1), LT_SIM_FAULT_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_count_rule), cmocka_unit_test(test_blocks_share_prefixes),
        cmocka_unit_test(test_parse_chat), cmocka_unit_test(test_render_dialects),
        cmocka_unit_test(test_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

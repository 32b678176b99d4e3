/*
 * Response accounting across server dialects: which chunks carry tokens,
 * how many, first token vs first content, usage (separate, in the last
 * chunk, in every chunk, absent), finish reasons, SGLang's /generate and
 * whole (non-streamed) bodies. Table-driven: each case is a list of SSE data
 * payloads and the expected accounting.
 */
#include "replay/replay_resp.h"
#include "traces/lt_err.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#define C(content) "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" content "\"}}]}"
#define ROLE "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}"
#define R(key) "{\"choices\":[{\"delta\":{\"" key "\":\"hm\"}}]}"
#define FIN(r) "{\"choices\":[{\"delta\":{},\"finish_reason\":\"" r "\"}]}"
#define USAGE(p, c)                                                                                \
    "{\"choices\":[],\"usage\":{\"prompt_tokens\":" #p ",\"completion_tokens\":" #c                \
    ",\"prompt_tokens_details\":{\"cached_tokens\":2}}}"

static const struct rcase {
    const char *name;
    const char *events[12];
    uint32_t n_chunks, out, in, counted, first_chunk_tokens;
    bool usage, chunk_usage, done, finish, ft_is_fc;
    const char *finish_reason;
} cases[] = {
    {"vllm: role chunk, usage separate",
     {ROLE, C("a"), C("b"), C("c"), FIN("length"), USAGE(10, 3), "[DONE]"},
     3,
     3,
     10,
     3,
     1,
     true,
     false,
     true,
     true,
     true,
     "length"},
    {"usage in the last chunk with choices",
     {C("a"), C("b"),
      "{\"choices\":[{\"delta\":{\"content\":\"c\"},\"finish_reason\":\"stop\"}],\"usage\":{"
      "\"prompt_tokens\":5,\"completion_tokens\":3}}",
      "[DONE]"},
     3,
     3,
     5,
     3,
     1,
     true,
     false,
     true,
     true,
     true,
     "stop"},
    {"no usage at all (counted)",
     {C("a"), C("b"), FIN("stop")},
     2,
     2,
     0,
     2,
     1,
     false,
     false,
     false,
     true,
     true,
     "stop"},
    {"continuous usage (vLLM continuous_usage_stats)",
     {"{\"choices\":[{\"delta\":{\"role\":\"assistant\"}}],\"usage\":{\"prompt_tokens\":7,"
      "\"completion_tokens\":0}}",
      "{\"choices\":[{\"delta\":{\"content\":\"ab\"}}],\"usage\":{\"prompt_tokens\":7,"
      "\"completion_tokens\":2}}",
      "{\"choices\":[{\"delta\":{\"content\":\"c\"}}],\"usage\":{\"prompt_tokens\":7,"
      "\"completion_tokens\":3}}",
      FIN("length"), "[DONE]"},
     2,
     3,
     7,
     3,
     2,
     true,
     true,
     true,
     true,
     true,
     "length"},
    {"reasoning_content then content",
     {R("reasoning_content"), R("reasoning_content"), C("x"), FIN("stop"), USAGE(3, 3), "[DONE]"},
     3,
     3,
     3,
     3,
     1,
     true,
     false,
     true,
     true,
     false,
     "stop"},
    {"reasoning key (llama.cpp, newer vLLM)",
     {R("reasoning"), C("x"), FIN("stop"), "[DONE]"},
     2,
     2,
     0,
     2,
     1,
     false,
     false,
     true,
     true,
     false,
     "stop"},
    {"tool call deltas are content",
     {"{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\"}}]}"
      "}]}",
      FIN("tool_calls"), "[DONE]"},
     1,
     1,
     0,
     1,
     1,
     false,
     false,
     true,
     true,
     true,
     "tool_calls"},
    {"completions text",
     {"{\"choices\":[{\"text\":\" a\"}]}",
      "{\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}]}"},
     1,
     1,
     0,
     1,
     1,
     false,
     false,
     false,
     true,
     true,
     "length"},
    {"sglang generate: cumulative text and meta_info",
     {"{\"text\":\"a\",\"meta_info\":{\"prompt_tokens\":4,\"completion_tokens\":1,\"finish_"
      "reason\":null}}",
      "{\"text\":\"a b "
      "c\",\"meta_info\":{\"prompt_tokens\":4,\"completion_tokens\":3,\"finish_reason\":null}}",
      "{\"text\":\"a b "
      "c\",\"meta_info\":{\"prompt_tokens\":4,\"completion_tokens\":3,\"finish_reason\":{\"type\":"
      "\"length\"}}}",
      "[DONE]"},
     2,
     3,
     4,
     3,
     1,
     true,
     true,
     true,
     true,
     true,
     "length"},
    {"stream ended without [DONE] or finish",
     {C("a"), C("b")},
     2,
     2,
     0,
     2,
     1,
     false,
     false,
     false,
     false,
     true,
     ""},
};

static void test_dialects(void **state)
{
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const struct rcase *k = &cases[c];
        struct lt_replay_resp r;
        lt_replay_resp_init(&r, 1000);
        for (int i = 0; i < 12 && k->events[i]; i++) {
            lt_mono t = {(int64_t)(i + 1) * 1000};
            if (lt_replay_resp_event(&r, k->events[i], strlen(k->events[i]), t) != 0)
                fail_msg("%s: event %d rejected", k->name, i);
        }
        if (r.n_chunks != k->n_chunks || lt_replay_resp_out(&r) != k->out ||
            r.counted != k->counted || r.has_usage != k->usage || r.chunk_usage != k->chunk_usage ||
            r.done != k->done || r.has_finish != k->finish)
            fail_msg("%s: chunks %u out %u counted %u usage %d chunk_usage %d done %d finish %d",
                     k->name, r.n_chunks, lt_replay_resp_out(&r), r.counted, r.has_usage,
                     r.chunk_usage, r.done, r.has_finish);
        if (k->usage)
            assert_int_equal(r.in, k->in);
        assert_int_equal(r.chunks[0].tokens, k->first_chunk_tokens);
        assert_true(r.has_first_token);
        assert_int_equal(r.has_first_content, true);
        if (k->ft_is_fc)
            assert_int_equal(r.first_token.ns, r.first_content.ns);
        else
            assert_true(r.first_token.ns < r.first_content.ns);
        assert_string_equal(r.finish, k->finish_reason);
        lt_replay_resp_release(&r);
    }
}

static void test_role_chunk_is_not_a_token(void **state)
{
    struct lt_replay_resp r;
    lt_replay_resp_init(&r, 10);
    assert_int_equal(lt_replay_resp_event(&r, ROLE, strlen(ROLE), (lt_mono){5}), 0);
    assert_false(r.has_first_token);
    assert_int_equal(r.n_chunks, 0);
    lt_replay_resp_release(&r);
}

static void test_cached_and_reasoning_usage(void **state)
{
    struct lt_replay_resp r;
    lt_replay_resp_init(&r, 10);
    const char *u = "{\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4,"
                    "\"completion_tokens_details\":{\"reasoning_tokens\":3},"
                    "\"prompt_tokens_details\":{\"cached_tokens\":8}}}";
    assert_int_equal(lt_replay_resp_event(&r, u, strlen(u), (lt_mono){1}), 0);
    assert_int_equal(r.reasoning, 3);
    assert_int_equal(r.cached, 8);
    assert_int_equal(r.out, 4);
    lt_replay_resp_release(&r);
}

static void test_malformed(void **state)
{
    struct lt_replay_resp r;
    lt_replay_resp_init(&r, 10);
    assert_int_equal(lt_replay_resp_event(&r, "{\"choices\":[", 12, (lt_mono){1}), LT_EFORMAT);
    assert_int_equal(lt_replay_resp_event(&r, "[1,2]", 5, (lt_mono){1}), LT_EFORMAT);
    const char *e = "{\"error\":{\"message\":\"boom\"}}";
    assert_int_equal(lt_replay_resp_event(&r, e, strlen(e), (lt_mono){1}), 0);
    assert_true(r.error_event);
    lt_replay_resp_release(&r);
}

/* The chunk scanner checks the whole syntax, not only the fields it reads. */
static void test_scanner_syntax(void **state)
{
    static const char *bad[] = {
        "{",
        "{\"choices\":[}",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{\"a\":\"x}",
        "{\"a\":\"\\q\"}",
        "{\"a\":\"\\u12G4\"}",
        "{\"a\":01}",
        "{\"a\":1.}",
        "{\"a\":-}",
        "{\"a\":tru}",
        "{\"a\":1} x",
        "{\"a\":\"tab\there\"}",
        "{\"a\":[1 2]}",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct lt_replay_resp r;
        lt_replay_resp_init(&r, 4);
        if (lt_replay_resp_event(&r, bad[i], strlen(bad[i]), (lt_mono){1}) != LT_EFORMAT)
            fail_msg("accepted: %s", bad[i]);
        lt_replay_resp_release(&r);
    }
    char deep[300];
    size_t n = 0;
    deep[n++] = '{';
    deep[n++] = '"';
    deep[n++] = 'a';
    deep[n++] = '"';
    deep[n++] = ':';
    for (int i = 0; i < 100; i++)
        deep[n++] = '[';
    for (int i = 0; i < 100; i++)
        deep[n++] = ']';
    deep[n++] = '}';
    struct lt_replay_resp r;
    lt_replay_resp_init(&r, 4);
    assert_int_equal(lt_replay_resp_event(&r, deep, n, (lt_mono){1}), LT_EFORMAT);
    /* valid oddities: whitespace, escapes, unicode, numbers, other keys
     * nested like ours, "error": null */
    const char *ok = " {\"id\" : \"x\\\"y\" , \"error\":null, \"n\":[-1.5e3,0,true,false,null,{}],"
                     "\"choices\" : [ { \"delta\" : { \"content\" : \"\\u00e9\\n\" , "
                     "\"x\":{\"content\":\"\"}} } , {\"delta\":{\"content\":\"not first\"}} ] } ";
    assert_int_equal(lt_replay_resp_event(&r, ok, strlen(ok), (lt_mono){1}), 0);
    assert_int_equal(r.n_chunks, 1);
    assert_false(r.error_event);
    /* an empty content in the first choice is no token, even when a later
     * choice has one */
    const char *second =
        "{\"choices\":[{\"delta\":{\"content\":\"\"}},{\"delta\":{\"content\":\"b\"}}]}";
    assert_int_equal(lt_replay_resp_event(&r, second, strlen(second), (lt_mono){2}), 0);
    assert_int_equal(r.n_chunks, 1);
    lt_replay_resp_release(&r);
}

static void test_whole_body(void **state)
{
    struct lt_replay_resp r;
    lt_replay_resp_init(&r, 10);
    const char *b = "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"hi there\"},"
                    "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":12,"
                    "\"completion_tokens\":16}}";
    assert_int_equal(lt_replay_resp_body(&r, b, strlen(b), (lt_mono){77}), 0);
    assert_int_equal(r.n_chunks, 1);
    assert_int_equal(r.chunks[0].tokens, 16);
    assert_int_equal(r.first_token.ns, 77);
    assert_int_equal(r.in, 12);
    assert_string_equal(r.finish, "length");
    lt_replay_resp_release(&r);
}

static void test_chunk_cap(void **state)
{
    struct lt_replay_resp r;
    lt_replay_resp_init(&r, 4);
    for (int i = 0; i < 10; i++)
        assert_int_equal(lt_replay_resp_event(&r, C("a"), strlen(C("a")), (lt_mono){i}), 0);
    assert_int_equal(r.n_chunks, 4);
    assert_int_equal(r.counted, 10);
    assert_int_equal(r.chunks[3].tokens, 7);
    lt_replay_resp_reset(&r);
    assert_int_equal(r.n_chunks, 0);
    lt_replay_resp_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dialects),
        cmocka_unit_test(test_role_chunk_is_not_a_token),
        cmocka_unit_test(test_cached_and_reasoning_usage),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_scanner_syntax),
        cmocka_unit_test(test_whole_body),
        cmocka_unit_test(test_chunk_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

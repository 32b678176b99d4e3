/*
 * Response accounting across server dialects: which chunks carry tokens,
 * how many, first token vs first content, usage (separate, in the last
 * chunk, in every chunk, absent), finish reasons, SGLang's /generate and
 * whole (non-streamed) bodies. Table-driven: each case is a list of SSE data
 * payloads and the expected accounting.
 */
#include "wire/wire_resp.h"
#include "base/lt_err.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
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
        struct lt_wire_resp r;
        lt_wire_resp_init(&r, 1000);
        for (int i = 0; i < 12 && k->events[i]; i++) {
            lt_mono t = {(int64_t)(i + 1) * 1000};
            if (lt_wire_resp_event(&r, k->events[i], strlen(k->events[i]), t) != 0)
                fail_msg("%s: event %d rejected", k->name, i);
        }
        if (r.n_chunks != k->n_chunks || lt_wire_resp_out(&r) != k->out ||
            r.counted != k->counted || r.has_usage != k->usage || r.chunk_usage != k->chunk_usage ||
            r.done != k->done || r.has_finish != k->finish)
            fail_msg("%s: chunks %u out %u counted %u usage %d chunk_usage %d done %d finish %d",
                     k->name, r.n_chunks, lt_wire_resp_out(&r), r.counted, r.has_usage,
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
        lt_wire_resp_release(&r);
    }
}

static void test_role_chunk_is_not_a_token(void **state)
{
    struct lt_wire_resp r;
    lt_wire_resp_init(&r, 10);
    assert_int_equal(lt_wire_resp_event(&r, ROLE, strlen(ROLE), (lt_mono){5}), 0);
    assert_false(r.has_first_token);
    assert_int_equal(r.n_chunks, 0);
    lt_wire_resp_release(&r);
}

static void test_cached_and_reasoning_usage(void **state)
{
    struct lt_wire_resp r;
    lt_wire_resp_init(&r, 10);
    const char *u = "{\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4,"
                    "\"completion_tokens_details\":{\"reasoning_tokens\":3},"
                    "\"prompt_tokens_details\":{\"cached_tokens\":8}}}";
    assert_int_equal(lt_wire_resp_event(&r, u, strlen(u), (lt_mono){1}), 0);
    assert_int_equal(r.reasoning, 3);
    assert_int_equal(r.cached, 8);
    assert_int_equal(r.out, 4);
    lt_wire_resp_release(&r);
}

static void test_malformed(void **state)
{
    struct lt_wire_resp r;
    lt_wire_resp_init(&r, 10);
    assert_int_equal(lt_wire_resp_event(&r, "{\"choices\":[", 12, (lt_mono){1}), LT_EFORMAT);
    assert_int_equal(lt_wire_resp_event(&r, "[1,2]", 5, (lt_mono){1}), LT_EFORMAT);
    const char *e = "{\"error\":{\"message\":\"boom\"}}";
    assert_int_equal(lt_wire_resp_event(&r, e, strlen(e), (lt_mono){1}), 0);
    assert_true(r.error_event);
    lt_wire_resp_release(&r);
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
        struct lt_wire_resp r;
        lt_wire_resp_init(&r, 4);
        if (lt_wire_resp_event(&r, bad[i], strlen(bad[i]), (lt_mono){1}) != LT_EFORMAT)
            fail_msg("accepted: %s", bad[i]);
        lt_wire_resp_release(&r);
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
    struct lt_wire_resp r;
    lt_wire_resp_init(&r, 4);
    assert_int_equal(lt_wire_resp_event(&r, deep, n, (lt_mono){1}), LT_EFORMAT);
    /* valid oddities: whitespace, escapes, unicode, numbers, other keys
     * nested like ours, "error": null */
    const char *ok = " {\"id\" : \"x\\\"y\" , \"error\":null, \"n\":[-1.5e3,0,true,false,null,{}],"
                     "\"choices\" : [ { \"delta\" : { \"content\" : \"\\u00e9\\n\" , "
                     "\"x\":{\"content\":\"\"}} } , {\"delta\":{\"content\":\"not first\"}} ] } ";
    assert_int_equal(lt_wire_resp_event(&r, ok, strlen(ok), (lt_mono){1}), 0);
    assert_int_equal(r.n_chunks, 1);
    assert_false(r.error_event);
    /* an empty content in the first choice is no token, even when a later
     * choice has one */
    const char *second =
        "{\"choices\":[{\"delta\":{\"content\":\"\"}},{\"delta\":{\"content\":\"b\"}}]}";
    assert_int_equal(lt_wire_resp_event(&r, second, strlen(second), (lt_mono){2}), 0);
    assert_int_equal(r.n_chunks, 1);
    lt_wire_resp_release(&r);
}

static void test_whole_body(void **state)
{
    struct lt_wire_resp r;
    lt_wire_resp_init(&r, 10);
    const char *b = "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"hi there\"},"
                    "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":12,"
                    "\"completion_tokens\":16}}";
    assert_int_equal(lt_wire_resp_body(&r, b, strlen(b), (lt_mono){77}), 0);
    assert_int_equal(r.n_chunks, 1);
    assert_int_equal(r.chunks[0].tokens, 16);
    assert_int_equal(r.first_token.ns, 77);
    assert_int_equal(r.in, 12);
    assert_string_equal(r.finish, "length");
    lt_wire_resp_release(&r);
}

static void test_chunk_cap(void **state)
{
    struct lt_wire_resp r;
    lt_wire_resp_init(&r, 4);
    for (int i = 0; i < 10; i++)
        assert_int_equal(lt_wire_resp_event(&r, C("a"), strlen(C("a")), (lt_mono){i}), 0);
    assert_int_equal(r.n_chunks, 4);
    assert_int_equal(r.counted, 10);
    assert_int_equal(r.chunks[3].tokens, 7);
    lt_wire_resp_reset(&r);
    assert_int_equal(r.n_chunks, 0);
    lt_wire_resp_release(&r);
}

struct tools {
    char seen[256];
};

static void note_tool(void *ud, uint32_t pos, bool has_index, uint32_t index, const char *args,
                      size_t n)
{
    struct tools *t = ud;
    size_t l = strlen(t->seen);
    snprintf(t->seen + l, sizeof t->seen - l, "%u:%d:%u:%.*s|", pos, has_index, index,
             args ? (int)n : 4, args ? args : "null");
}

/* Feed the n events ev to r at 0, 1, 2... ns, each accepted; with t, also
 * scan each as capture does, its tool calls noted in t. */
static void feed(struct lt_wire_resp *r, const char *const *ev, size_t n, struct tools *t)
{
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(lt_wire_resp_event(r, ev[i], strlen(ev[i]), (lt_mono){(int64_t)i}), 0);
        struct lt_wire_resp_said s;
        if (t)
            assert_int_equal(lt_wire_resp_scan(ev[i], strlen(ev[i]), false, &s, note_tool, t), 0);
    }
}

/* A whole body b, as capture scans it (s, its tool calls noted in t) and
 * as replay reads it (into r, made with room for 10 chunks, at 9 ns). */
static void read_body(const char *b, size_t n, struct lt_wire_resp_said *s, struct tools *t,
                      struct lt_wire_resp *r)
{
    assert_int_equal(lt_wire_resp_scan(b, n, true, s, note_tool, t), 0);
    lt_wire_resp_init(r, 10);
    assert_int_equal(lt_wire_resp_body(r, b, n, (lt_mono){9}), 0);
}

static void test_said(void **state)
{
    /* What one chunk said, raw: capture keeps its record from this. */
    static const char d[] =
        "{\"choices\":[{\"delta\":{\"reasoning\":\"r1\",\"reasoning_content\":\"r2\","
        "\"content\":\"a\\nb\",\"tool_calls\":[{\"function\":{\"arguments\":\"{\\\"x\\\":\"}},"
        "{\"index\":3,\"function\":{\"name\":\"f\"}},7]},\"finish_reason\":\"stop\"},{}],"
        "\"usage\":{\"prompt_tokens\":5}}";
    struct lt_wire_resp_said s;
    struct tools t = {{0}};
    assert_int_equal(lt_wire_resp_scan(d, sizeof d - 1, false, &s, note_tool, &t), 0);
    assert_true(s.content && s.reasoning && s.usage && !s.error);
    assert_true(lt_wire_resp_said_tokens(&s));
    assert_false(lt_wire_resp_said_usage(&s)); /* no completion count */
    assert_true(s.has_pt && s.pt == 5);
    assert_int_equal(s.n_choices, 2);
    assert_memory_equal(s.text, "a\\nb", s.text_len);
    assert_memory_equal(s.reasoning_text, "r2", s.reasoning_len);
    assert_memory_equal(s.finish, "stop", s.finish_len);
    assert_string_equal(t.seen, "0:0:0:{\\\"x\\\":|1:1:3:null|2:0:0:null|");
    /* A usage-only chunk, an error, [DONE]. */
    static const char u[] = "{\"choices\":[],\"usage\":{\"completion_tokens\":2}}";
    assert_int_equal(lt_wire_resp_scan(u, sizeof u - 1, false, &s, NULL, NULL), 0);
    assert_true(s.usage && s.n_choices == 0 && lt_wire_resp_said_usage(&s));
    assert_false(lt_wire_resp_said_tokens(&s));
    static const char e[] = "{\"error\":\"overloaded\"}";
    assert_int_equal(lt_wire_resp_scan(e, sizeof e - 1, false, &s, NULL, NULL), 0);
    assert_true(s.error);
    assert_true(lt_wire_resp_is_done("[DONE] ", 7));
    assert_false(lt_wire_resp_is_done("[DONE]x", 7));
}

/* OpenAI Responses, streamed as vLLM and SGLang send it: lifecycle events
 * carry no token; reasoning deltas, text deltas and function-call argument
 * deltas do; usage arrives in response.completed. */
static void test_responses_stream(void **state)
{
    static const char *const ev[] = {
        "{\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\","
        "\"object\":\"response\",\"status\":\"in_progress\",\"output\":[],\"usage\":null}}",
        "{\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":"
        "\"reasoning\",\"id\":\"rs_1\"}}",
        "{\"type\":\"response.reasoning_text.delta\",\"output_index\":0,\"delta\":\"hm\"}",
        "{\"type\":\"response.reasoning_summary_text.delta\",\"output_index\":0,\"delta\":\"so\"}",
        "{\"type\":\"response.reasoning.delta\",\"delta\":{\"content\":\"We\"}}",
        "{\"type\":\"response.output_text.delta\",\"output_index\":1,\"delta\":\"\"}",
        "{\"delta\":\"Hi\",\"type\":\"response.output_text.delta\",\"output_index\":1}",
        "{\"type\":\"response.function_call_arguments.delta\",\"output_index\":2,\"delta\":"
        "\"{\\\"q\\\"\"}",
        "{\"type\":\"response.output_text.done\",\"text\":\"Hi\"}",
        "{\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"output\":[{"
        "\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hi\"}]}],"
        "\"usage\":{\"input_tokens\":11,\"output_tokens\":4,\"input_tokens_details\":{"
        "\"cached_tokens\":8},\"output_tokens_details\":{\"reasoning_tokens\":2}}}}",
    };
    struct lt_wire_resp r;
    lt_wire_resp_init(&r, 100);
    feed(&r, ev, sizeof ev / sizeof ev[0], NULL);
    assert_int_equal(r.n_chunks, 5);
    assert_int_equal(r.counted, 5);
    assert_int_equal(r.counted_reasoning, 3);
    assert_int_equal(r.first_token.ns, 2);
    assert_int_equal(r.first_content.ns, 6);
    assert_true(r.has_usage && !r.chunk_usage && !r.done && !r.error_event);
    assert_int_equal(r.in, 11);
    assert_int_equal(r.out, 4);
    assert_int_equal(r.reasoning, 2);
    assert_int_equal(r.cached, 8);
    assert_true(r.has_finish);
    assert_string_equal(r.finish, "tool_calls"); /* completed, having called a function */
    /* Cut off by the token limit; and an error event. */
    static const char inc[] =
        "{\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\","
        "\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"usage\":{"
        "\"input_tokens\":3,\"output_tokens\":9}}}";
    lt_wire_resp_reset(&r);
    assert_int_equal(lt_wire_resp_event(&r, inc, sizeof inc - 1, (lt_mono){1}), 0);
    assert_string_equal(r.finish, "length");
    assert_int_equal(r.out, 9);
    static const char err[] = "{\"type\":\"error\",\"code\":\"server_error\",\"message\":\"x\"}";
    lt_wire_resp_reset(&r);
    assert_int_equal(lt_wire_resp_event(&r, err, sizeof err - 1, (lt_mono){1}), 0);
    assert_true(r.error_event);
    static const char failed[] = "{\"type\":\"response.failed\",\"response\":{\"status\":"
                                 "\"failed\",\"error\":{\"code\":\"server_error\"}}}";
    lt_wire_resp_reset(&r);
    assert_int_equal(lt_wire_resp_event(&r, failed, sizeof failed - 1, (lt_mono){1}), 0);
    assert_true(r.error_event);
    lt_wire_resp_release(&r);
}

/* A whole Responses body: reasoning and answer items, a function call. */
static void test_responses_body(void **state)
{
    static const char b[] =
        "{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"error\":null,"
        "\"output\":[{\"type\":\"reasoning\",\"content\":[{\"type\":\"reasoning_text\","
        "\"text\":\"hm\"}],\"summary\":[]},{\"type\":\"message\",\"content\":[{\"text\":"
        "\"Hi\",\"type\":\"output_text\"}]},{\"type\":\"function_call\",\"name\":\"f\","
        "\"arguments\":\"{}\"}],\"usage\":{\"input_tokens\":5,\"output_tokens\":7,"
        "\"output_tokens_details\":{\"reasoning_tokens\":1}}}";
    struct lt_wire_resp_said s;
    struct tools t = {{0}};
    struct lt_wire_resp r;
    read_body(b, sizeof b - 1, &s, &t, &r);
    assert_true(s.content && s.reasoning && s.tool && !s.error);
    assert_memory_equal(s.text, "Hi", s.text_len);
    assert_memory_equal(s.reasoning_text, "hm", s.reasoning_len);
    assert_string_equal(t.seen, "2:1:2:{}|");
    assert_int_equal(r.n_chunks, 1);
    assert_int_equal(r.chunks[0].tokens, 7);
    assert_int_equal(r.in, 5);
    assert_int_equal(r.reasoning, 1);
    assert_string_equal(r.finish, "tool_calls");
    lt_wire_resp_release(&r);
}

/* Anthropic Messages, streamed: message_start (the prompt's usage only),
 * content blocks of thinking, text and tool use, message_delta with the
 * output count and stop reason, message_stop as the end. */
static void test_messages_stream(void **state)
{
    static const char *const ev[] = {
        "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\","
        "\"role\":\"assistant\",\"content\":[],\"stop_reason\":null,\"usage\":{"
        "\"input_tokens\":21,\"cache_read_input_tokens\":16,\"output_tokens\":1}}}",
        "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":"
        "\"thinking\",\"thinking\":\"\"}}",
        "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\","
        "\"thinking\":\"hm\"}}",
        "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\","
        "\"signature\":\"abc\"}}",
        "{\"type\":\"content_block_stop\",\"index\":0}",
        "{\"type\":\"ping\"}",
        "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\","
        "\"text\":\"Hi\"}}",
        "{\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\","
        "\"id\":\"toolu_1\",\"name\":\"f\",\"input\":{}}}",
        "{\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\","
        "\"partial_json\":\"\"}}",
        "{\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\","
        "\"partial_json\":\"{\\\"q\\\": 1}\"}}",
        "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":"
        "null},\"usage\":{\"output_tokens\":6}}",
        "{\"type\":\"message_stop\"}",
    };
    struct lt_wire_resp r;
    lt_wire_resp_init(&r, 100);
    struct tools t = {{0}};
    feed(&r, ev, sizeof ev / sizeof ev[0], &t);
    assert_string_equal(t.seen, "0:1:2:|0:1:2:{\\\"q\\\": 1}|");
    assert_int_equal(r.n_chunks, 3);
    assert_int_equal(r.counted_reasoning, 1);
    assert_int_equal(r.first_token.ns, 2);
    assert_int_equal(r.first_content.ns, 6);
    assert_true(r.has_usage && r.done && r.has_finish && !r.error_event);
    /* Anthropic's input_tokens is what the cache did not serve: the
     * prompt is it and the cache's counts together. */
    assert_int_equal(r.in, 37);
    assert_int_equal(r.cached, 16);
    assert_int_equal(lt_wire_resp_out(&r), 6);
    assert_string_equal(r.finish, "tool_calls");
    assert_int_equal(r.reasoning, 1); /* no count in the usage: the thinking deltas */
    /* Truncated after message_start: the start's output_tokens is no count. */
    lt_wire_resp_reset(&r);
    assert_int_equal(lt_wire_resp_event(&r, ev[0], strlen(ev[0]), (lt_mono){1}), 0);
    assert_false(r.has_usage);
    assert_int_equal(r.in, 37);
    static const char err[] =
        "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}";
    assert_int_equal(lt_wire_resp_event(&r, err, sizeof err - 1, (lt_mono){2}), 0);
    assert_true(r.error_event);
    lt_wire_resp_release(&r);
}

/* A whole Messages body. */
static void test_messages_body(void **state)
{
    static const char b[] =
        "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":"
        "\"thinking\",\"thinking\":\"hm\",\"signature\":\"\"},{\"type\":\"text\",\"text\":"
        "\"Hi\"},{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{\"q\":1}}],"
        "\"stop_reason\":\"max_tokens\",\"stop_sequence\":null,\"usage\":{\"input_tokens\":4,"
        "\"output_tokens\":8}}";
    struct lt_wire_resp_said s;
    struct tools t = {{0}};
    struct lt_wire_resp r;
    read_body(b, sizeof b - 1, &s, &t, &r);
    assert_true(s.content && s.reasoning && s.tool);
    assert_memory_equal(s.text, "Hi", s.text_len);
    assert_string_equal(t.seen, "2:1:2:{\"q\":1}|");
    assert_int_equal(r.chunks[0].tokens, 8);
    assert_int_equal(r.in, 4);
    assert_false(r.has_cached); /* vLLM's usage says nothing of the cache */
    assert_string_equal(r.finish, "length");
    assert_true(r.reasoning_unknown);
    /* llama.cpp's answer to a cached prompt (input_tokens 1), and
     * Anthropic's with a cache write: the prompt is the sum of the three. */
    static const char c[] =
        "{\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"Hi\"}],"
        "\"stop_reason\":\"end_turn\",\"usage\":{\"cache_read_input_tokens\":62,"
        "\"input_tokens\":1,\"output_tokens\":3}}";
    lt_wire_resp_reset(&r);
    assert_int_equal(lt_wire_resp_body(&r, c, sizeof c - 1, (lt_mono){9}), 0);
    assert_int_equal(r.in, 63);
    assert_int_equal(r.cached, 62);
    assert_true(r.has_cached);
    static const char w[] =
        "{\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"Hi\"}],"
        "\"stop_reason\":\"end_turn\",\"usage\":{\"input_tokens\":5,"
        "\"cache_creation_input_tokens\":2048,\"cache_read_input_tokens\":100,"
        "\"output_tokens\":3}}";
    lt_wire_resp_reset(&r);
    assert_int_equal(lt_wire_resp_body(&r, w, sizeof w - 1, (lt_mono){9}), 0);
    assert_int_equal(r.in, 2153);
    assert_int_equal(r.cached, 100);
    /* Counts past 2^32 saturate, never wrap. */
    static const char big[] =
        "{\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"Hi\"}],"
        "\"stop_reason\":\"end_turn\",\"usage\":{\"input_tokens\":4294967295,"
        "\"cache_read_input_tokens\":4294967295,\"output_tokens\":3}}";
    lt_wire_resp_reset(&r);
    assert_int_equal(lt_wire_resp_body(&r, big, sizeof big - 1, (lt_mono){9}), 0);
    assert_int_equal(r.in, UINT32_MAX);
    static const char e[] =
        "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"no\"}}";
    lt_wire_resp_reset(&r);
    assert_int_equal(lt_wire_resp_body(&r, e, sizeof e - 1, (lt_mono){9}), 0);
    assert_true(r.error_event);
    lt_wire_resp_release(&r);
}

static void test_unescape(void **state)
{
    static const char raw[] =
        "a\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u20ac\\ud83d\\ude00\\ud800x\\u0000";
    static const char want[] = "a\"\\/\b\f\n\r\t\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xef\xbf\xbdx";
    struct lt_buf b;
    lt_buf_init(&b, 64);
    assert_int_equal(lt_wire_resp_unescape(raw, sizeof raw - 1, &b), 0);
    assert_int_equal(b.len, sizeof want); /* and the NUL of \u0000 */
    assert_memory_equal(b.p, want, sizeof want);
    lt_buf_reset(&b);
    assert_int_equal(lt_wire_resp_unescape("\\x", 2, &b), LT_EFORMAT);
    assert_int_equal(lt_wire_resp_unescape("\\u12", 4, &b), LT_EFORMAT);
    lt_buf_release(&b);
}

/* llama-server's timings, in the places and shapes its server-task.cpp
 * writes them: the last token's chunk and the finish chunk of a stream
 * (the last one seen is kept), a whole body's root; times with fractions
 * and exponents, a negative or absent value not taken. */
static void test_llamacpp_timings(void **state)
{
    (void)state;
    struct lt_wire_resp r;
    lt_wire_resp_init(&r, 64);
    static const char *const ev[] = {
        "{\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"role\":\"assistant\","
        "\"content\":null}}],\"created\":1,\"id\":\"chatcmpl-x\",\"object\":\"chat.completion.chunk\"}",
        "{\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\" Once\"}}],"
        "\"object\":\"chat.completion.chunk\"}",
        "{\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\" upon\"}}],"
        "\"object\":\"chat.completion.chunk\",\"timings\":{\"cache_n\":17,\"prompt_n\":40,"
        "\"prompt_ms\":9.5,\"prompt_per_token_ms\":0.2375,\"prompt_per_second\":4210.5,"
        "\"predicted_n\":2,\"predicted_ms\":0.5,\"predicted_per_token_ms\":0.25,"
        "\"predicted_per_second\":4000}}",
        "{\"choices\":[{\"finish_reason\":\"length\",\"index\":0,\"delta\":{}}],"
        "\"object\":\"chat.completion.chunk\",\"usage\":{\"completion_tokens\":2,"
        "\"prompt_tokens\":57,\"total_tokens\":59,\"prompt_tokens_details\":{\"cached_tokens\":17}},"
        "\"timings\":{\"cache_n\":17,\"prompt_n\":40,\"prompt_ms\":12.345678,"
        "\"prompt_per_token_ms\":0.3086,\"prompt_per_second\":3240.1,\"predicted_n\":2,"
        "\"predicted_ms\":1.0625e1,\"predicted_per_token_ms\":5.3,\"predicted_per_second\":188.2}}",
        "[DONE]",
    };
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++)
        assert_int_equal(lt_wire_resp_event(&r, ev[i], strlen(ev[i]), (lt_mono){(int64_t)i}), 0);
    assert_true(r.has_timings);
    assert_true(r.timings.has_prompt_ms && r.timings.has_predicted_ms);
    assert_int_equal(r.timings.prompt_n, 40);
    assert_int_equal(r.timings.predicted_n, 2);
    assert_int_equal(r.timings.cache_n, 17);
    assert_true(r.timings.prompt_ms > 12.345677 && r.timings.prompt_ms < 12.345679);
    assert_true(r.timings.predicted_ms > 10.6249 && r.timings.predicted_ms < 10.6251);
    assert_int_equal(lt_wire_resp_out(&r), 2);

    static const char body[] =
        "{\"choices\":[{\"finish_reason\":\"stop\",\"index\":0,\"message\":{\"role\":\"assistant\","
        "\"content\":\"hi\"}}],\"usage\":{\"completion_tokens\":1,\"prompt_tokens\":5,"
        "\"total_tokens\":6},\"timings\":{\"cache_n\":0,\"prompt_n\":5,\"prompt_ms\":3,"
        "\"predicted_n\":1,\"predicted_ms\":-1.5,\"predicted_per_token_ms\":0}}";
    lt_wire_resp_reset(&r);
    assert_int_equal(lt_wire_resp_body(&r, body, sizeof body - 1, (lt_mono){9}), 0);
    assert_true(r.has_timings);
    assert_true(r.timings.has_prompt_ms && r.timings.prompt_ms == 3.0);
    assert_false(r.timings.has_predicted_ms); /* a negative time is none */
    assert_true(r.timings.has_predicted_n && r.timings.predicted_n == 1);

    /* no timings: none said */
    static const char plain[] = "{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}";
    lt_wire_resp_reset(&r);
    assert_int_equal(lt_wire_resp_event(&r, plain, sizeof plain - 1, (lt_mono){1}), 0);
    assert_false(r.has_timings);
    /* timings that are not an object are skipped, not an error */
    static const char odd[] = "{\"choices\":[],\"timings\":null}";
    assert_int_equal(lt_wire_resp_event(&r, odd, sizeof odd - 1, (lt_mono){2}), 0);
    assert_false(r.has_timings);
    lt_wire_resp_release(&r);
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
        cmocka_unit_test(test_said),
        cmocka_unit_test(test_unescape),
        cmocka_unit_test(test_responses_stream),
        cmocka_unit_test(test_responses_body),
        cmocka_unit_test(test_messages_stream),
        cmocka_unit_test(test_messages_body),
        cmocka_unit_test(test_llamacpp_timings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

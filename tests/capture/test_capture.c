/*
 * Unit tests of capture's parts that need no sockets: SipHash against the
 * reference vectors, the estimated tokenizer, prefix block hashes, the SSE
 * splitter (cut at every byte position), reading request and response
 * bodies into a record's shape, the usage option added to a request,
 * sessions, and the recorder writing out-of-order completions in arrival
 * order (read back with the trace reader).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "capture/capture_call.h"
#include "capture/capture_proxy.h"
#include "capture/capture_recorder.h"
#include "capture/capture_session.h"
#include "capture/capture_sse.h"
#include "capture/capture_tokens.h"
#include "traces/trace_json.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void test_siphash_vectors(void **state)
{
    /* The reference implementation's vectors: key 00..0f, message 00..n-1. */
    uint64_t k0 = UINT64_C(0x0706050403020100), k1 = UINT64_C(0x0f0e0d0c0b0a0908);
    unsigned char m[64];
    for (int i = 0; i < 64; i++)
        m[i] = (unsigned char)i;
    assert_true(lt_capture_siphash(k0, k1, m, 0) == UINT64_C(0x726fdb47dd0e0e31));
    assert_true(lt_capture_siphash(k0, k1, m, 15) == UINT64_C(0xa129ca6149be45e5));
    assert_true(lt_capture_siphash(k0, k1, m, 8) == UINT64_C(0x93f5f5799a932462));
}

static void test_count_text(void **state)
{
    static const struct {
        const char *s;
        uint32_t n;
    } cases[] = {
        {"", 0},           {"a", 1},         {"abcd", 1},
        {"abcde", 2},      {"   ", 0},       {"  hello   world  ", 4},
        {"a\tb\nc\rd", 4}, {"umbrella?", 3}, {"0123456789abcdef", 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(lt_capture_count_text(cases[i].s, strlen(cases[i].s)), cases[i].n);
}

static uint64_t *hash_text(const char *s, uint64_t k0, uint32_t bt, uint32_t *n, uint32_t *tok)
{
    struct lt_capture_blocks b;
    lt_capture_blocks_init(&b, k0, 99, bt);
    lt_capture_blocks_text(&b, s, strlen(s));
    *tok = b.total;
    uint64_t *h = lt_capture_blocks_take(&b, n);
    lt_capture_blocks_release(&b);
    return h;
}

static void test_blocks(void **state)
{
    uint32_t na, nb, nc, nd, ta, tb;
    uint64_t *a = hash_text("aaaa bbbb cccc dddd eeee ffff gggg hhhh iii", 1, 4, &na, &ta);
    uint64_t *b = hash_text("aaaa bbbb cccc dddd eeee ffff XXXX hhhh", 1, 4, &nb, &tb);
    uint64_t *c = hash_text("aaaa bbbb cccc dddd eeee ffff gggg hhhh", 2, 4, &nc, &tb);
    uint64_t *d = hash_text("x x x x x x x x", 1, 4, &nd, &tb);
    assert_int_equal(ta, 9);
    assert_int_equal(na, 2); /* the 9th token is an incomplete block */
    assert_int_equal(nb, 2);
    assert_true(a[0] == b[0]); /* equal prefix */
    assert_true(a[1] != b[1]); /* differs from token 6 */
    assert_true(a[0] != c[0]); /* another key */
    assert_true(d[0] != d[1]); /* chained: position matters */
    for (uint32_t i = 0; i < na; i++)
        assert_true(a[i] < (UINT64_C(1) << 53));
    /* Word boundaries count: "aaaabbbb" is not "aaaa bbbb" ... as tokens
     * they are the same pieces, which is what the estimate says. */
    free(a);
    free(b);
    free(c);
    free(d);
}

/* SSE: collects payloads; drops usage-only ones. */
struct sse_rec {
    char seen[4096];
    size_t n;
};

static bool on_data(void *ud, const char *data, size_t len)
{
    struct sse_rec *r = ud;
    memcpy(r->seen + r->n, data, len);
    r->n += len;
    r->seen[r->n++] = '|';
    return len >= 9 && !memcmp(data, "{\"usage\":", 9);
}

static void test_sse_splits(void **state)
{
    static const char in[] = "data: {\"a\":1}\n\n"
                             "data: {\"a\":2}\r\n\r\n"
                             ": comment\n\n"
                             "data: {\"usage\":{\"prompt_tokens\":3}}\n\n"
                             "data: [DONE]\n\n";
    static const char filtered[] = "data: {\"a\":1}\n\n"
                                   "data: {\"a\":2}\r\n\r\n"
                                   ": comment\n\n"
                                   "data: [DONE]\n\n";
    static const char payloads[] = "{\"a\":1}|{\"a\":2}|{\"usage\":{\"prompt_tokens\":3}}|[DONE]|";
    size_t n = sizeof in - 1;
    for (int filter = 0; filter < 2; filter++) {
        for (size_t cut = 0; cut <= n; cut++) {
            for (size_t cut2 = cut; cut2 <= n; cut2 += 7) {
                struct sse_rec r = {0};
                struct lt_capture_sse s;
                struct lt_buf out;
                lt_buf_init(&out, 1 << 16);
                lt_capture_sse_init(&s, filter, on_data, &r);
                assert_int_equal(lt_capture_sse_feed(&s, in, cut, &out), 0);
                assert_int_equal(lt_capture_sse_feed(&s, in + cut, cut2 - cut, &out), 0);
                assert_int_equal(lt_capture_sse_feed(&s, in + cut2, n - cut2, &out), 0);
                assert_int_equal(lt_capture_sse_end(&s, &out), 0);
                const char *want = filter ? filtered : in;
                assert_int_equal(out.len, strlen(want));
                assert_memory_equal(out.p, want, out.len);
                assert_int_equal(r.n, strlen(payloads));
                assert_memory_equal(r.seen, payloads, r.n);
                lt_capture_sse_release(&s);
                lt_buf_release(&out);
            }
        }
    }
}

static void test_sse_unterminated(void **state)
{
    /* A stream cut inside an event: what came is passed on, never held. */
    static const char in[] = "data: {\"a\":1}\n\ndata: {\"a\":";
    struct sse_rec r = {0};
    struct lt_capture_sse s;
    struct lt_buf out;
    lt_buf_init(&out, 1 << 16);
    lt_capture_sse_init(&s, true, on_data, &r);
    lt_capture_sse_feed(&s, in, sizeof in - 1, &out);
    lt_capture_sse_end(&s, &out);
    assert_int_equal(out.len, sizeof in - 1);
    lt_capture_sse_release(&s);
    lt_buf_release(&out);
}

static void test_sse_crlf_drop(void **state)
{
    /* CRLF and bare-CR line ends cut anywhere: exactly the usage event goes. */
    static const char in[] = "data: {\"a\":1}\r\n\r\n"
                             "data: {\"usage\":{\"prompt_tokens\":3}}\r\n\r\n"
                             ": ping\r\rdata: {\"usage\":{}}\r\r"
                             "data: [DONE]\r\n\r\n";
    static const char filtered[] = "data: {\"a\":1}\r\n\r\n"
                                   ": ping\r\r"
                                   "data: [DONE]\r\n\r\n";
    size_t n = sizeof in - 1;
    for (size_t cut = 0; cut <= n; cut++) {
        for (size_t cut2 = cut; cut2 <= n; cut2++) {
            struct sse_rec r = {0};
            struct lt_capture_sse s;
            struct lt_buf out;
            lt_buf_init(&out, 1 << 16);
            lt_capture_sse_init(&s, true, on_data, &r);
            assert_int_equal(lt_capture_sse_feed(&s, in, cut, &out), 0);
            assert_int_equal(lt_capture_sse_feed(&s, in + cut, cut2 - cut, &out), 0);
            assert_int_equal(lt_capture_sse_feed(&s, in + cut2, n - cut2, &out), 0);
            assert_int_equal(lt_capture_sse_end(&s, &out), 0);
            assert_int_equal(out.len, sizeof filtered - 1);
            assert_memory_equal(out.p, filtered, out.len);
            lt_capture_sse_release(&s);
            lt_buf_release(&out);
        }
    }
}

static const struct lt_capture_call_opts copts = {.k0 = 5, .k1 = 6, .block_tokens = 8};

static void test_request_chat(void **state)
{
    static const char body[] =
        "{\"model\":\"qwen\",\"max_tokens\":77,\"stream\":true,"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],"
        "\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hello there world\"},"
        "{\"type\":\"image_url\",\"image_url\":{\"url\":\"x\"}}]},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"1\"}]},"
        "{\"role\":\"a-role-longer-than-fifteen\",\"content\":\"x\"}]}";
    struct lt_capture_call *c = lt_capture_call_new(LT_CAPTURE_API_CHAT, &copts);
    assert_int_equal(lt_capture_call_request(c, body, sizeof body - 1), 0);
    assert_string_equal(c->model, "qwen");
    assert_true(c->stream && !c->usage_asked && !c->has_stream_options);
    assert_int_equal(c->max_tokens, 77);
    assert_int_equal(c->n_msgs, 4);
    assert_string_equal(c->msgs[0].role, "system");
    assert_int_equal(c->msgs[0].tokens, 1 + 2);     /* "be" "brief" */
    assert_int_equal(c->msgs[1].tokens, 2 + 2 + 2); /* the text parts only */
    assert_string_equal(c->msgs[3].role, "a-role-longer-t");
    assert_int_equal(c->tools_count, 1);
    /* in: tools + 4 per message + contents + 3 */
    uint32_t sum = c->tools_tokens + 3;
    for (uint32_t i = 0; i < c->n_msgs; i++)
        sum += 4 + c->msgs[i].tokens;
    assert_int_equal(c->in_est, sum);
    assert_int_equal(c->n_blocks, c->in_est / 8);
    assert_null(c->text); /* keep_content is off */
    lt_capture_call_free(c);
}

static void test_stream_chunks(void **state)
{
    struct lt_capture_call *c = lt_capture_call_new(LT_CAPTURE_API_CHAT, &copts);
    static const char *chunks[] = {
        "{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}",
        "{\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\"}}]}",
        "{\"choices\":[{\"delta\":{\"reasoning\":\"so\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}",
        "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"f\","
        "\"arguments\":\"{\\\"city\\\":\"}}]}}]}",
        "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
        "\"\\\"Paris\\\"}\"}}]}}]}",
        "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":"
        "\"{}\"}}]}}]}",
        "{\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}",
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7,"
        "\"prompt_tokens_details\":{\"cached_tokens\":4},"
        "\"completion_tokens_details\":{\"reasoning_tokens\":2}}}",
        "[DONE]",
        "{not json",
    };
    static const unsigned want[] = {0, 1, 1, 1, 1, 1, 1, 0, 2, 4, 8};
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++)
        assert_int_equal(lt_capture_call_chunk(c, chunks[i], strlen(chunks[i])), want[i]);
    assert_int_equal(c->tok_chunks, 6);
    assert_int_equal(c->reason_chunks, 2);
    assert_string_equal(c->finish, "tool_calls");
    assert_int_equal(c->n_calls, 2);
    c->status = 200;
    c->t = 5;
    struct lt_record r;
    assert_int_equal(lt_capture_call_record(c, &r), 0);
    assert_int_equal(r.in, 11);
    assert_int_equal(r.out, 7);
    assert_int_equal(r.reasoning, 2);
    assert_int_equal(r.cached, 4);
    assert_false(r.has & LT_HAS_ESTIMATED);
    assert_false(r.has & LT_HAS_FAILED);
    assert_int_equal(r.n_calls, 2);
    assert_int_equal(r.calls[0], lt_capture_count_text("{\"city\":\"Paris\"}", 16));
    assert_int_equal(r.calls[1], 1);
    lt_capture_call_free(c);
}

static void test_body_and_estimates(void **state)
{
    struct lt_capture_call *c = lt_capture_call_new(LT_CAPTURE_API_CHAT, &copts);
    static const char req[] = "{\"messages\":[{\"role\":\"user\",\"content\":\"abcd efgh\"}]}";
    static const char resp[] = "{\"choices\":[{\"message\":{\"content\":\"one two "
                               "three\",\"reasoning_content\":\"aa bb\"},"
                               "\"finish_reason\":\"stop\"}]}";
    assert_int_equal(lt_capture_call_request(c, req, sizeof req - 1), 0);
    assert_int_equal(lt_capture_call_body(c, resp, sizeof resp - 1), 0);
    c->status = 200;
    struct lt_record r;
    assert_int_equal(lt_capture_call_record(c, &r), 0);
    /* No usage: estimates, marked. */
    assert_true(r.has & LT_HAS_ESTIMATED);
    assert_int_equal(r.in, 4 + 2 + 3);
    assert_int_equal(r.out, 4 + 2); /* answer and reasoning */
    assert_int_equal(r.reasoning, 2);
    assert_string_equal(r.finish, "stop");
    /* An error: failed, with its class as an extra key. */
    c->status = 502;
    c->err = "upstream_connect";
    assert_int_equal(lt_capture_call_record(c, &r), 0);
    assert_true(r.has & LT_HAS_FAILED);
    assert_int_equal(r.extra.n, 1);
    lt_capture_call_free(c);
    /* Not JSON at all. */
    c = lt_capture_call_new(LT_CAPTURE_API_COMPLETIONS, &copts);
    assert_int_equal(lt_capture_call_request(c, "{\"prompt\":", 10), LT_EFORMAT);
    assert_false(c->req_json);
    lt_capture_call_free(c);
}

static void test_usage_option(void **state)
{
    static const char body[] = "  {\"stream\":true,\"messages\":[]}";
    struct lt_buf out;
    lt_buf_init(&out, 1 << 16);
    assert_int_equal(lt_capture_add_usage_option(body, sizeof body - 1, &out), 0);
    json_t *j = json_loadb(out.p, out.len, 0, NULL);
    assert_non_null(j);
    assert_true(
        json_is_true(json_object_get(json_object_get(j, "stream_options"), "include_usage")));
    assert_true(json_is_true(json_object_get(j, "stream")));
    json_decref(j);
    assert_int_equal(lt_capture_add_usage_option("[1]", 3, &out), LT_EINVAL);
    lt_buf_release(&out);
}

static void test_api_and_origin(void **state)
{
    assert_int_equal(lt_capture_api_of("POST", "/v1/chat/completions"), LT_CAPTURE_API_CHAT);
    assert_int_equal(lt_capture_api_of("POST", "/v1/chat/completions?x=1"), LT_CAPTURE_API_CHAT);
    assert_int_equal(lt_capture_api_of("POST", "/openai/v1/completions"),
                     LT_CAPTURE_API_COMPLETIONS);
    assert_int_equal(lt_capture_api_of("GET", "/v1/chat/completions"), LT_CAPTURE_API_NONE);
    assert_int_equal(lt_capture_api_of("POST", "/v1/responses"), LT_CAPTURE_API_RESPONSES);
    assert_int_equal(lt_capture_api_of("POST", "/v1/messages?beta=true"), LT_CAPTURE_API_MESSAGES);
    assert_int_equal(lt_capture_api_of("POST", "/v1/embeddings"), LT_CAPTURE_API_EMBEDDINGS);
    assert_int_equal(lt_capture_api_of("POST", "/v1/rerank"), LT_CAPTURE_API_RERANK);
    assert_int_equal(lt_capture_api_of("POST", "/rerank"), LT_CAPTURE_API_RERANK);
    assert_int_equal(lt_capture_api_of("POST", "/v1/audio/speech"), LT_CAPTURE_API_NONE);
    char o[128];
    lt_capture_url_origin("https://user:pw@api.example.com:8443/v1?key=s", o, sizeof o);
    assert_string_equal(o, "https://api.example.com:8443");
    lt_capture_url_origin("http://127.0.0.1:8000", o, sizeof o);
    assert_string_equal(o, "http://127.0.0.1:8000");
}

static struct lt_capture_call *chat_call(const char *msgs, int64_t t)
{
    char body[1024];
    snprintf(body, sizeof body, "{\"messages\":[%s]}", msgs);
    struct lt_capture_call *c = lt_capture_call_new(LT_CAPTURE_API_CHAT, &copts);
    assert_int_equal(lt_capture_call_request(c, body, strlen(body)), 0);
    c->t = t;
    return c;
}

static void test_sessions(void **state)
{
    struct lt_capture_sessions s;
    lt_capture_sessions_init(&s, 1, 2);
    const char *u1 = "{\"role\":\"user\",\"content\":\"a\"}";
    char m2[256], m3[512];
    snprintf(m2, sizeof m2, "%s,{\"role\":\"assistant\",\"content\":\"b\"},%s", u1,
             "{\"role\":\"user\",\"content\":\"c\"}");
    snprintf(m3, sizeof m3, "%s,{\"role\":\"assistant\",\"content\":\"d\"},%s", m2,
             "{\"role\":\"user\",\"content\":\"e\"}");
    struct lt_capture_call *a = chat_call(u1, 100), *b = chat_call(m2, 5000),
                           *c = chat_call(m3, 9000), *d = chat_call(u1, 9500);
    assert_int_equal(lt_capture_sessions_assign(&s, a, NULL, 0), 0);
    lt_capture_sessions_end(&s, a->session, 1000);
    assert_int_equal(lt_capture_sessions_assign(&s, b, NULL, 0), 0);
    assert_int_equal(lt_capture_sessions_assign(&s, c, NULL, 0), 0);
    assert_int_equal(lt_capture_sessions_assign(&s, d, NULL, 0), 0);
    assert_true(a->session == b->session && b->session == c->session);
    assert_int_equal(a->turn, 0);
    assert_int_equal(b->turn, 1);
    assert_int_equal(c->turn, 2);
    assert_false(a->has_think);
    assert_true(b->has_think);
    assert_int_equal(b->think, 4000);
    assert_false(c->has_think);            /* b never ended */
    assert_true(d->session != a->session); /* a repeated first prompt: new conversation */
    struct lt_capture_call *h1 = chat_call(u1, 1), *h2 = chat_call(u1, 2);
    lt_capture_sessions_assign(&s, h1, "conv-1", 6);
    lt_capture_sessions_assign(&s, h2, "conv-1", 6);
    assert_true(h1->session == h2->session && h2->turn == 1);
    assert_true(h1->session < (UINT64_C(1) << 53));
    struct lt_capture_call *all[] = {a, b, c, d, h1, h2};
    for (size_t i = 0; i < 6; i++)
        lt_capture_call_free(all[i]);
    lt_capture_sessions_release(&s);
}

/* The watcher sees each finished record as written, on the writer's
 * thread; lt_capture_recorder_now counts what is open, queued and written. */
struct watched {
    int n;
    uint32_t max_tokens_sum;
};

static void on_watch(void *ud, const struct lt_record *rec)
{
    struct watched *w = ud;
    w->n++;
    w->max_tokens_sum += rec->max_tokens;
}

/* A capture trace in completion order at $LT_TMP/NAME (path gets it). */
static struct lt_writer *open_trace(const char *name, char *path, size_t cap)
{
    const char *tmp = getenv("LT_TMP");
    snprintf(path, cap, "%s/%s", tmp ? tmp : ".", name);
    struct lt_header h = {.kind = LT_KIND_TRACE, .source = "capture"};
    struct lt_writer_opts wo = {.completion_order = true};
    struct lt_err err = {0};
    struct lt_writer *w = lt_writer_open(path, &h, &wo, &err);
    assert_non_null(w);
    return w;
}

static void test_recorder_watch(void **state)
{
    (void)state;
    char path[512];
    struct lt_err err = {0};
    struct lt_writer *w = open_trace("watch.lt.zst", path, sizeof path);
    struct lt_capture_recorder *r = lt_capture_recorder_start(w, lt_mono_now(), 0, &err);
    assert_non_null(r);
    struct watched seen = {0};
    lt_capture_recorder_watch(r, on_watch, &seen);
    uint64_t seq[3], written = 9, queued = 9, open = 9;
    int64_t t[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(lt_capture_recorder_arrive(r, &seq[i], &t[i]), 0);
    lt_capture_recorder_now(r, &written, &queued, &open);
    assert_int_equal(open, 3);
    assert_int_equal(written, 0);
    for (int i = 0; i < 3; i++) {
        struct lt_capture_call *c = lt_capture_call_new(LT_CAPTURE_API_CHAT, &copts);
        c->t = t[i];
        c->status = 200;
        c->has_max_tokens = true;
        c->max_tokens = (uint32_t)(10 + i);
        lt_capture_recorder_done(r, seq[i], c);
    }
    /* the writer takes them within its next wake-up (bounded: 10 s) */
    for (int k = 0; k < 1000; k++) {
        lt_capture_recorder_now(r, &written, &queued, &open);
        if (written == 3)
            break;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(written, 3);
    assert_int_equal(queued, 0);
    assert_int_equal(open, 0);
    struct lt_capture_recorder_stats st;
    assert_int_equal(lt_capture_recorder_stop(r, &st, &err), 0);
    assert_int_equal(lt_writer_close(w, &err), 0);
    assert_int_equal(seen.n, 3);
    assert_int_equal(seen.max_tokens_sum, 10 + 11 + 12);
}

static void test_recorder_order(void **state)
{
    char path[512];
    struct lt_err err = {0};
    struct lt_writer *w = open_trace("recorder.lt.zst", path, sizeof path);
    struct lt_capture_recorder *r = lt_capture_recorder_start(w, lt_mono_now(), 4, &err);
    assert_non_null(r);
    uint64_t seq[5];
    int64_t t[5];
    for (int i = 0; i < 4; i++)
        assert_int_equal(lt_capture_recorder_arrive(r, &seq[i], &t[i]), 0);
    /* Four requests held: the fifth is not recorded. */
    assert_int_equal(lt_capture_recorder_arrive(r, &seq[4], &t[4]), LT_ELIMIT);
    static const int order[] = {3, 1, 0, 2};
    for (int k = 0; k < 4; k++) {
        int i = order[k];
        struct lt_capture_call *c = lt_capture_call_new(LT_CAPTURE_API_CHAT, &copts);
        c->t = t[i];
        c->status = 200;
        c->has_max_tokens = true;
        c->max_tokens = (uint32_t)i;
        lt_capture_recorder_done(r, seq[i], i == 1 ? NULL : c);
        if (i == 1)
            lt_capture_call_free(c);
    }
    struct lt_capture_recorder_stats st;
    assert_int_equal(lt_capture_recorder_stop(r, &st, &err), 0);
    assert_int_equal(st.written, 3);
    assert_int_equal(st.dropped, 1);
    assert_int_equal(lt_writer_close(w, &err), 0);
    /* In the file, each record is where its request finished ... */
    struct lt_reader_opts fo = {.file_order = true};
    struct lt_reader *rd = lt_reader_open(path, &fo, &err);
    assert_non_null(rd);
    const struct lt_item *it;
    static const uint32_t done[] = {3, 0, 2};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(lt_reader_next(rd, &it, &err), 1);
        assert_int_equal(it->rec.max_tokens, done[k]);
    }
    assert_int_equal(lt_reader_next(rd, &it, &err), 0);
    lt_reader_close(rd);
    /* ... and every reader gets arrival order. */
    rd = lt_reader_open(path, NULL, &err);
    assert_non_null(rd);
    static const uint32_t want[] = {0, 2, 3};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(lt_reader_next(rd, &it, &err), 1);
        assert_int_equal(it->rec.max_tokens, want[k]);
        assert_int_equal(it->index, k);
    }
    assert_int_equal(lt_reader_next(rd, &it, &err), 0);
    lt_reader_close(rd);
}

/* Records of the file at path as readers see them, and how many of them
 * are `err: "unfinished"`. */
static int count_records(const char *path, int *unfinished)
{
    struct lt_err err = {0};
    struct lt_reader *rd = lt_reader_open(path, NULL, &err);
    assert_non_null(rd);
    const struct lt_item *it;
    int n = 0;
    *unfinished = 0;
    while (lt_reader_next(rd, &it, &err) == 1) {
        n++;
        if ((it->rec.has & LT_HAS_FAILED) && !(it->rec.has & LT_HAS_ORIG_STATUS))
            (*unfinished)++;
    }
    lt_reader_close(rd);
    return n;
}

/* A request still streaming holds back nobody: the 40 that finish behind
 * it are on disk within a second, before it ends (what a SIGKILL keeps),
 * and so is the long one, as unfinished; its final record replaces that. */
static void test_recorder_long_stream(void **state)
{
    char path[512];
    struct lt_err err = {0};
    struct lt_writer *w = open_trace("recorder_long.lt.zst", path, sizeof path);
    struct lt_capture_recorder *r = lt_capture_recorder_start(w, lt_mono_now(), 0, &err);
    assert_non_null(r);
    uint64_t long_seq, seq;
    int64_t t;
    assert_int_equal(lt_capture_recorder_arrive(r, &long_seq, &t), 0);
    struct lt_capture_call *lc = lt_capture_call_new(LT_CAPTURE_API_CHAT, &copts);
    const char *body = "{\"model\":\"m\",\"max_tokens\":3000,\"messages\":[]}";
    assert_int_equal(lt_capture_call_request(lc, body, strlen(body)), 0);
    lc->t = t;
    lt_capture_recorder_started(r, lc);
    for (int i = 0; i < 40; i++) {
        assert_int_equal(lt_capture_recorder_arrive(r, &seq, &t), 0);
        struct lt_capture_call *c = lt_capture_call_new(LT_CAPTURE_API_CHAT, &copts);
        c->t = t;
        c->status = 200;
        lt_capture_recorder_done(r, seq, c);
    }
    int got = 0, unfinished = 0;
    for (int tries = 0; tries < 30 && got < 41; tries++) {
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
        /* Read the file as a crash would leave it: whatever is on disk. */
        got = count_records(path, &unfinished);
    }
    assert_int_equal(got, 41);
    assert_int_equal(unfinished, 1);
    lc->status = 200;
    lt_capture_recorder_done(r, long_seq, lc);
    struct lt_capture_recorder_stats st;
    assert_int_equal(lt_capture_recorder_stop(r, &st, &err), 0);
    assert_int_equal(st.written, 41);
    assert_int_equal(st.unfinished, 1);
    assert_int_equal(lt_writer_close(w, &err), 0);
    got = count_records(path, &unfinished);
    assert_int_equal(got, 41);
    assert_int_equal(unfinished, 0);
}

/* A call's record written and read back by the trace reader; the value
 * named `changed`.field in its extra keys, as JSON (NULL: none). */
static char *record_back(struct lt_capture_call *c, const char *name, struct lt_record *back,
                         const char *field)
{
    char path[512];
    const char *tmp = getenv("LT_TMP");
    snprintf(path, sizeof path, "%s/%s.lt.zst", tmp ? tmp : ".", name);
    struct lt_header h = {.kind = LT_KIND_TRACE, .source = "capture"};
    struct lt_err err = {0};
    struct lt_writer *w = lt_writer_open(path, &h, NULL, &err);
    assert_non_null(w);
    struct lt_record rec;
    assert_int_equal(lt_capture_call_record(c, &rec), 0);
    assert_int_equal(lt_writer_put_record(w, &rec, &err), 0);
    assert_int_equal(lt_writer_close(w, &err), 0);
    struct lt_reader *rd = lt_reader_open(path, NULL, &err);
    assert_non_null(rd);
    const struct lt_item *it;
    int n = lt_reader_next(rd, &it, &err);
    if (n != 1)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(n, 1);
    *back = it->rec;
    back->msgs = NULL; /* pointers into the reader, gone with it */
    back->text = NULL;
    back->api = back->model = back->finish = NULL;
    back->blocks = NULL;
    back->calls = NULL;
    /* The extra keys as JSON, through the same rule `cat` prints them. */
    struct lt_buf js;
    lt_buf_init(&js, (size_t)64 << 20);
    assert_int_equal(lt_trace_json_record(&js, &it->rec), 0);
    lt_reader_close(rd);
    json_t *o = json_loadb(js.p, js.len, 0, NULL);
    lt_buf_release(&js);
    assert_non_null(o);
    json_t *v = json_object_get(json_object_get(o, "changed"), field);
    char *out = v ? json_dumps(v, JSON_ENCODE_ANY) : NULL;
    json_decref(o);
    return out;
}

/* Values a record cannot hold as sent are left out and named in
 * `changed` with what was sent; no count is estimated from a cut list
 * without saying so. */
static void test_values_as_sent(void **state)
{
    struct lt_record r;
    struct lt_capture_call *c = lt_capture_call_new(LT_CAPTURE_API_CHAT, &copts);
    const char *b1 = "{\"max_tokens\":-3,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    assert_int_equal(lt_capture_call_request(c, b1, strlen(b1)), 0);
    c->status = 200;
    char *v = record_back(c, "neg", &r, "max_tokens");
    assert_string_equal(v, "-3");
    assert_false(r.has & LT_HAS_MAX_TOKENS); /* not 0 */
    free(v);
    lt_capture_call_free(c);

    c = lt_capture_call_new(LT_CAPTURE_API_CHAT, &copts);
    const char *b2 = "{\"max_tokens\":\"many\",\"messages\":5}";
    assert_int_equal(lt_capture_call_request(c, b2, strlen(b2)), 0);
    c->status = 400;
    v = record_back(c, "msgs5", &r, "messages");
    assert_string_equal(v, "\"not a list\"");
    assert_false(r.has & LT_HAS_IN); /* not in: 0 */
    free(v);
    v = record_back(c, "msgs5b", &r, "max_tokens");
    assert_string_equal(v, "\"not an integer\"");
    free(v);
    lt_capture_call_free(c);

    /* 1.1 million messages: the record keeps the reader's million, the
     * estimate covers them all, and `changed` says how many were sent. */
    size_t n = 1100000;
    struct lt_buf body;
    lt_buf_init(&body, (size_t)64 << 20);
    assert_int_equal(lt_buf_puts(&body, "{\"messages\":["), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(lt_buf_puts(&body, i ? ",{}" : "{}"), 0);
    assert_int_equal(lt_buf_puts(&body, "]}"), 0);
    c = lt_capture_call_new(LT_CAPTURE_API_CHAT, &copts);
    assert_int_equal(lt_capture_call_request(c, body.p, body.len), 0);
    lt_buf_release(&body);
    c->status = 200;
    v = record_back(c, "million", &r, "msgs");
    assert_string_equal(v, "1100000");
    free(v);
    assert_int_equal(r.n_msgs, 1000000);
    assert_int_equal(r.in, 4 * n + 3); /* 4 template tokens each, 3 to open the answer */
    /* 8-token blocks of 4.4 million tokens do not fit beside them: the
     * first ones are kept, and `changed` says how many there were. */
    v = record_back(c, "million2", &r, "blocks");
    assert_string_equal(v, "550000");
    free(v);
    assert_true(r.n_blocks > 0 && r.n_blocks < 550000);
    assert_true(r.has & LT_HAS_ESTIMATED);
    lt_capture_call_free(c);
}

/* --keep-content with a prompt past the reader's limit on one record: the
 * text is cut, ends with the mark, and `changed` holds its length as sent;
 * the reader reads the record. */
static void test_keep_content_limit(void **state)
{
    struct lt_capture_call_opts o = copts;
    o.keep_content = true;
    size_t big = (size_t)20 << 20;
    struct lt_buf body;
    lt_buf_init(&body, (size_t)64 << 20);
    assert_int_equal(lt_buf_puts(&body, "{\"messages\":[{\"role\":\"user\",\"content\":\""), 0);
    for (size_t i = 0; i < big / 8; i++)
        assert_int_equal(lt_buf_append(&body, "abcdefg ", 8), 0);
    assert_int_equal(lt_buf_puts(&body, "\"}]}"), 0);
    struct lt_capture_call *c = lt_capture_call_new(LT_CAPTURE_API_CHAT, &o);
    assert_int_equal(lt_capture_call_request(c, body.p, body.len), 0);
    lt_buf_release(&body);
    c->status = 200;
    size_t sent = c->text_len;
    struct lt_record r;
    char *v = record_back(c, "bigtext", &r, "text");
    char want[32];
    snprintf(want, sizeof want, "%zu", sent);
    assert_string_equal(v, want);
    free(v);
    assert_true(c->text_len < ((size_t)16 << 20));
    static const char mark[] = LT_CAPTURE_CUT_MARK;
    assert_memory_equal(c->text + c->text_len - (sizeof mark - 1), mark, sizeof mark - 1);
    assert_int_equal(r.in, 4 + big / 8 * 2 + 3); /* estimated from the whole prompt */
    lt_capture_call_free(c);
}

/* A call lives as long as its stream: its fixed part is what every open
 * stream pays, so the media parts (at most LT_MEDIA_MAX of 56 bytes) are
 * held to their count, none for a text-only request. */
static void test_call_media_held_to_count(void **state)
{
    (void)state;
    assert_true(sizeof(struct lt_capture_call) <= 1024);
    static const char text[] = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
                               "\"content\":\"hello\"}]}";
    struct lt_capture_call *c = lt_capture_call_new(LT_CAPTURE_API_CHAT, &copts);
    assert_int_equal(lt_capture_call_request(c, text, sizeof text - 1), 0);
    assert_int_equal(c->n_media, 0);
    assert_null(c->media);
    lt_capture_call_free(c);
    static const char two[] =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":["
        "{\"type\":\"text\",\"text\":\"look\"},"
        "{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://a.invalid/x.png\"}},"
        "{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://a.invalid/y.png\"}}]}]}";
    c = lt_capture_call_new(LT_CAPTURE_API_CHAT, &copts);
    assert_int_equal(lt_capture_call_request(c, two, sizeof two - 1), 0);
    assert_int_equal(c->n_media, 2);
    assert_non_null(c->media);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(c->media[i].kind, LT_MEDIA_IMAGE);
        assert_true(c->media[i].link);
    }
    lt_capture_call_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_siphash_vectors),
        cmocka_unit_test(test_count_text),
        cmocka_unit_test(test_blocks),
        cmocka_unit_test(test_sse_splits),
        cmocka_unit_test(test_sse_unterminated),
        cmocka_unit_test(test_sse_crlf_drop),
        cmocka_unit_test(test_request_chat),
        cmocka_unit_test(test_stream_chunks),
        cmocka_unit_test(test_body_and_estimates),
        cmocka_unit_test(test_usage_option),
        cmocka_unit_test(test_api_and_origin),
        cmocka_unit_test(test_sessions),
        cmocka_unit_test(test_recorder_order),
        cmocka_unit_test(test_recorder_watch),
        cmocka_unit_test(test_recorder_long_stream),
        cmocka_unit_test(test_values_as_sent),
        cmocka_unit_test(test_keep_content_limit),
        cmocka_unit_test(test_call_media_held_to_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

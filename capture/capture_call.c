/*
 * Reading OpenAI-style request and response bodies into the shape of a
 * trace record (capture_call.h). jansson parses; every size a peer controls
 * is bounded (message count by the body limit, argument and answer text by
 * the caps below).
 */
#include "capture/capture_call.h"
#include "capture/capture_tokens.h"
#include "traces/lt_err.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define ARGS_MAX ((size_t)1 << 20)     /* one tool call's arguments */
#define OUT_TEXT_MAX ((size_t)4 << 20) /* kept answer text */
#define EXTRA_MAX ((size_t)8 << 20)

enum lt_capture_api lt_capture_api_of(const char *method, const char *path)
{
    if (strcmp(method, "POST") != 0)
        return LT_CAPTURE_API_NONE;
    size_t n = strcspn(path, "?#");
    static const char chat[] = "/chat/completions", comp[] = "/completions";
    if (n >= sizeof chat - 1 && !memcmp(path + n - (sizeof chat - 1), chat, sizeof chat - 1))
        return LT_CAPTURE_API_CHAT;
    if (n >= sizeof comp - 1 && !memcmp(path + n - (sizeof comp - 1), comp, sizeof comp - 1))
        return LT_CAPTURE_API_COMPLETIONS;
    return LT_CAPTURE_API_NONE;
}

struct lt_capture_call *lt_capture_call_new(enum lt_capture_api api,
                                            const struct lt_capture_call_opts *o)
{
    struct lt_capture_call *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->o = *o;
    c->api = api;
    c->ttft = c->e2e = -1;
    lt_buf_init(&c->out_text, OUT_TEXT_MAX);
    lt_buf_init(&c->extra, EXTRA_MAX);
    return c;
}

void lt_capture_call_free(struct lt_capture_call *c)
{
    if (!c)
        return;
    free(c->model);
    free(c->msgs);
    free(c->msg_hash);
    free(c->blocks);
    free(c->text);
    for (uint32_t i = 0; c->args && i < LT_CAPTURE_MAX_CALLS; i++)
        lt_buf_release(&c->args[i]);
    free(c->args);
    free(c->calls_tok);
    lt_buf_release(&c->out_text);
    lt_buf_release(&c->extra);
    free(c);
}

static uint32_t clamp_u32(json_int_t v)
{
    if (v < 0)
        return 0;
    return v > (json_int_t)UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* Tokens of a JSON value's compact text, added to the blocks. */
static uint32_t json_tokens(struct lt_capture_blocks *b, const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s)
        return 0;
    uint32_t n = lt_capture_blocks_text(b, s, strlen(s));
    free(s);
    return n;
}

/* A message's content: a string, or a list of parts whose "text" counts. */
static uint32_t content_tokens(struct lt_capture_blocks *b, const json_t *content)
{
    if (json_is_string(content))
        return lt_capture_blocks_text(b, json_string_value(content), json_string_length(content));
    uint32_t n = 0;
    size_t i;
    const json_t *part;
    if (json_is_array(content)) {
        json_array_foreach(content, i, part)
        {
            const json_t *t = json_object_get(part, "text");
            if (json_is_string(t))
                n += lt_capture_blocks_text(b, json_string_value(t), json_string_length(t));
        }
    }
    return n;
}

static int keep_json_text(struct lt_capture_call *c, const json_t *v)
{
    if (!c->o.keep_content || !v)
        return 0;
    if (json_is_string(v)) {
        c->text_len = json_string_length(v);
        c->text = malloc(c->text_len + 1);
        if (!c->text)
            return LT_ENOMEM;
        memcpy(c->text, json_string_value(v), c->text_len);
        c->text[c->text_len] = '\0';
        return 0;
    }
    c->text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!c->text)
        return LT_ENOMEM;
    c->text_len = strlen(c->text);
    return 0;
}

static int read_chat(struct lt_capture_call *c, json_t *req, struct lt_capture_blocks *b)
{
    json_t *tools = json_object_get(req, "tools");
    if (json_is_array(tools) && json_array_size(tools) > 0) {
        c->has_tools = true;
        c->tools_count = (uint32_t)json_array_size(tools);
        c->tools_tokens = json_tokens(b, tools);
    }
    json_t *msgs = json_object_get(req, "messages");
    if (!json_is_array(msgs))
        return 0;
    size_t n = json_array_size(msgs);
    if (n > 1000000)
        n = 1000000; /* the trace reader's array limit */
    c->msgs = calloc(n ? n : 1, sizeof *c->msgs);
    c->msg_hash = calloc(n ? n : 1, sizeof *c->msg_hash);
    if (!c->msgs || !c->msg_hash)
        return LT_ENOMEM;
    uint64_t h = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(msgs, i);
        struct lt_msg *lm = &c->msgs[i];
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!role)
            role = "unknown";
        size_t rl = strlen(role);
        if (rl > LT_ROLE_MAX)
            rl = LT_ROLE_MAX;
        memcpy(lm->role, role, rl);
        lm->role[rl] = '\0';
        /* 4 template tokens per message, as the sim counts them. */
        lt_capture_blocks_marker(b, lm->role, 4);
        uint32_t t = content_tokens(b, json_object_get(m, "content"));
        json_t *tc = json_object_get(m, "tool_calls");
        if (tc && !json_is_null(tc))
            t += json_tokens(b, tc);
        lm->tokens = t;
        /* The chain of message hashes is what session inference compares:
         * keyed, so it says nothing about the text either. */
        char *s = json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        if (!s)
            return LT_ENOMEM;
        size_t sl = strlen(s);
        char *buf = malloc(sl + 8);
        if (!buf) {
            free(s);
            return LT_ENOMEM;
        }
        for (int k = 0; k < 8; k++)
            buf[k] = (char)(h >> (8 * k));
        memcpy(buf + 8, s, sl);
        h = lt_capture_siphash(c->o.k0 ^ 0x5e55, c->o.k1, buf, sl + 8) & LT_CAPTURE_HASH_MASK;
        free(buf);
        free(s);
        c->msg_hash[i] = h;
    }
    c->n_msgs = (uint32_t)n;
    lt_capture_blocks_marker(b, "assistant-open", 3);
    return keep_json_text(c, msgs);
}

static int read_completions(struct lt_capture_call *c, json_t *req, struct lt_capture_blocks *b)
{
    json_t *p = json_object_get(req, "prompt");
    size_t i, j;
    json_t *v, *w;
    if (json_is_string(p)) {
        lt_capture_blocks_text(b, json_string_value(p), json_string_length(p));
    } else if (json_is_array(p)) {
        json_array_foreach(p, i, v)
        {
            if (json_is_integer(v))
                lt_capture_blocks_id(b, (uint64_t)json_integer_value(v));
            else if (json_is_string(v))
                lt_capture_blocks_text(b, json_string_value(v), json_string_length(v));
            else if (json_is_array(v))
                json_array_foreach(v, j, w) if (json_is_integer(w))
                    lt_capture_blocks_id(b, (uint64_t)json_integer_value(w));
        }
    }
    return keep_json_text(c, p);
}

int lt_capture_call_request_json(struct lt_capture_call *c, json_t *req)
{
    int rc = 0;
    struct lt_capture_blocks b;
    lt_capture_blocks_init(&b, c->o.k0, c->o.k1, c->o.block_tokens);
    if (!json_is_object(req)) {
        rc = LT_EFORMAT;
        goto out;
    }
    c->req_json = true;
    const char *model = json_string_value(json_object_get(req, "model"));
    if (model && !(c->model = strdup(model))) {
        rc = LT_ENOMEM;
        goto out;
    }
    json_t *mt = json_object_get(req, "max_completion_tokens");
    if (!json_is_integer(mt))
        mt = json_object_get(req, "max_tokens");
    if (json_is_integer(mt)) {
        c->has_max_tokens = true;
        c->max_tokens = clamp_u32(json_integer_value(mt));
    }
    c->stream = json_is_true(json_object_get(req, "stream"));
    json_t *so = json_object_get(req, "stream_options");
    if (so) {
        c->has_stream_options = true;
        c->usage_asked = json_is_true(json_object_get(so, "include_usage"));
    }
    if (c->api == LT_CAPTURE_API_CHAT)
        LT_TRY(read_chat(c, req, &b));
    else
        LT_TRY(read_completions(c, req, &b));
    c->in_est = b.total;
    c->blocks = lt_capture_blocks_take(&b, &c->n_blocks);
out:
    lt_capture_blocks_release(&b);
    return rc;
}

int lt_capture_call_request(struct lt_capture_call *c, const char *body, size_t len)
{
    json_t *req = json_loadb(body, len, JSON_ALLOW_NUL, NULL);
    if (!req)
        return LT_EFORMAT;
    int rc = lt_capture_call_request_json(c, req);
    json_decref(req);
    return rc;
}

static uint32_t get_u32(const json_t *o, const char *k, bool *has)
{
    const json_t *v = json_object_get(o, k);
    if (!json_is_integer(v))
        return 0;
    if (has)
        *has = true;
    return clamp_u32(json_integer_value(v));
}

void lt_capture_call_usage(struct lt_capture_call *c, json_t *u)
{
    if (!json_is_object(u))
        return;
    bool any = false;
    c->u_in = get_u32(u, "prompt_tokens", &any);
    c->u_out = get_u32(u, "completion_tokens", &any);
    if (!any)
        return;
    c->usage = true;
    json_t *d = json_object_get(u, "completion_tokens_details");
    c->u_reasoning = get_u32(d, "reasoning_tokens", &c->u_has_reasoning);
    d = json_object_get(u, "prompt_tokens_details");
    c->u_cached = get_u32(d, "cached_tokens", &c->u_has_cached);
}

static void take_finish(struct lt_capture_call *c, const json_t *choice)
{
    const char *f = json_string_value(json_object_get(choice, "finish_reason"));
    if (f && *f)
        snprintf(c->finish, sizeof c->finish, "%s", f);
}

static void append_arg(struct lt_capture_call *c, size_t idx, const json_t *tc)
{
    if (idx >= LT_CAPTURE_MAX_CALLS)
        return;
    if (!c->args) {
        c->args = calloc(LT_CAPTURE_MAX_CALLS, sizeof *c->args);
        if (!c->args)
            return;
        for (int i = 0; i < LT_CAPTURE_MAX_CALLS; i++)
            lt_buf_init(&c->args[i], ARGS_MAX);
    }
    if (idx >= c->n_calls)
        c->n_calls = (uint32_t)idx + 1;
    const json_t *a = json_object_get(json_object_get(tc, "function"), "arguments");
    if (json_is_string(a))
        (void)lt_buf_append(&c->args[idx], json_string_value(a), json_string_length(a));
}

static const json_t *reasoning_of(const json_t *o)
{
    const json_t *r = json_object_get(o, "reasoning_content");
    if (!json_is_string(r))
        r = json_object_get(o, "reasoning");
    return json_is_string(r) ? r : NULL;
}

unsigned lt_capture_call_chunk(struct lt_capture_call *c, const char *data, size_t len)
{
    if (len == 6 && !memcmp(data, "[DONE]", 6))
        return LT_CAPTURE_CHUNK_DONE;
    json_t *j = json_loadb(data, len, JSON_ALLOW_NUL, NULL);
    if (!json_is_object(j)) {
        json_decref(j);
        return LT_CAPTURE_CHUNK_BAD;
    }
    unsigned bits = 0;
    json_t *u = json_object_get(j, "usage");
    if (json_is_object(u))
        lt_capture_call_usage(c, u);
    if (json_object_get(j, "error") && !json_object_get(j, "choices"))
        c->err = "upstream_error";
    json_t *choices = json_object_get(j, "choices");
    if (json_is_object(u) && json_array_size(choices) == 0)
        bits |= LT_CAPTURE_CHUNK_USAGE_ONLY;
    bool content = false, reasoning = false;
    size_t i;
    json_t *ch;
    json_array_foreach(choices, i, ch)
    {
        take_finish(c, ch);
        const json_t *text;
        if (c->api == LT_CAPTURE_API_COMPLETIONS) {
            text = json_object_get(ch, "text");
        } else {
            json_t *d = json_object_get(ch, "delta");
            text = json_object_get(d, "content");
            const json_t *r = reasoning_of(d);
            if (r && json_string_length(r) > 0)
                reasoning = true;
            json_t *tcs = json_object_get(d, "tool_calls");
            size_t k;
            json_t *tc;
            json_array_foreach(tcs, k, tc)
            {
                json_t *ix = json_object_get(tc, "index");
                append_arg(c, json_is_integer(ix) ? (size_t)clamp_u32(json_integer_value(ix)) : k,
                           tc);
                content = true;
            }
        }
        if (json_is_string(text) && json_string_length(text) > 0) {
            content = true;
            if (c->o.keep_content)
                (void)lt_buf_append(&c->out_text, json_string_value(text),
                                    json_string_length(text));
        }
    }
    if (content || reasoning) {
        bits |= LT_CAPTURE_CHUNK_TOKEN;
        c->tok_chunks++;
        if (!content)
            c->reason_chunks++;
    }
    json_decref(j);
    return bits;
}

int lt_capture_call_body_json(struct lt_capture_call *c, json_t *resp)
{
    if (!json_is_object(resp))
        return LT_EFORMAT;
    lt_capture_call_usage(c, json_object_get(resp, "usage"));
    size_t i;
    json_t *ch;
    json_array_foreach(json_object_get(resp, "choices"), i, ch)
    {
        take_finish(c, ch);
        const json_t *text;
        if (c->api == LT_CAPTURE_API_COMPLETIONS) {
            text = json_object_get(ch, "text");
        } else {
            json_t *m = json_object_get(ch, "message");
            text = json_object_get(m, "content");
            const json_t *r = reasoning_of(m);
            if (r) {
                uint32_t n = lt_capture_count_text(json_string_value(r), json_string_length(r));
                c->reason_est += n;
                c->out_est += n;
            }
            size_t k;
            json_t *tc;
            json_array_foreach(json_object_get(m, "tool_calls"), k, tc)
                append_arg(c, c->n_calls, tc);
        }
        if (json_is_string(text)) {
            c->out_est += lt_capture_count_text(json_string_value(text), json_string_length(text));
            if (c->o.keep_content)
                (void)lt_buf_append(&c->out_text, json_string_value(text),
                                    json_string_length(text));
        }
    }
    for (uint32_t k = 0; c->args && k < c->n_calls; k++)
        c->out_est += lt_capture_count_text(c->args[k].p ? c->args[k].p : "", c->args[k].len);
    return 0;
}

int lt_capture_call_body(struct lt_capture_call *c, const char *body, size_t len)
{
    json_t *j = json_loadb(body, len, JSON_ALLOW_NUL, NULL);
    if (!j)
        return LT_EFORMAT;
    int rc = lt_capture_call_body_json(c, j);
    json_decref(j);
    return rc;
}

/* msgpack str (the only type the extra keys need). */
static int pack_str(struct lt_buf *b, const char *s, size_t n)
{
    unsigned char h[5];
    size_t hl;
    if (n < 32) {
        h[0] = (unsigned char)(0xa0 | n);
        hl = 1;
    } else if (n <= 0xff) {
        h[0] = 0xd9;
        h[1] = (unsigned char)n;
        hl = 2;
    } else if (n <= 0xffff) {
        h[0] = 0xda;
        h[1] = (unsigned char)(n >> 8);
        h[2] = (unsigned char)n;
        hl = 3;
    } else {
        h[0] = 0xdb;
        for (int i = 0; i < 4; i++)
            h[1 + i] = (unsigned char)(n >> (24 - 8 * i));
        hl = 5;
    }
    int rc = lt_buf_append(b, h, hl);
    return rc < 0 ? rc : lt_buf_append(b, s, n);
}

int lt_capture_call_record(struct lt_capture_call *c, struct lt_record *r)
{
    int rc = 0;
    memset(r, 0, sizeof *r);
    r->t = c->t;
    if (c->has_session) {
        r->has |= LT_HAS_SESSION | LT_HAS_TURN;
        r->session = c->session;
        r->turn = c->turn;
        if (c->has_think) {
            r->has |= LT_HAS_THINK;
            r->think = c->think;
        }
    }
    r->api = c->api == LT_CAPTURE_API_CHAT ? "chat" : "completions";
    r->model = c->model;
    if (c->has_max_tokens) {
        r->has |= LT_HAS_MAX_TOKENS;
        r->max_tokens = c->max_tokens;
    }
    bool answered = c->status >= 200 && c->status < 300;
    if (c->usage) {
        r->has |= LT_HAS_IN | LT_HAS_OUT;
        r->in = c->u_in;
        r->out = c->u_out;
        if (c->u_has_reasoning) {
            r->has |= LT_HAS_REASONING;
            r->reasoning = c->u_reasoning;
        }
        if (c->u_has_cached) {
            r->has |= LT_HAS_CACHED;
            r->cached = c->u_cached;
        }
    } else if (c->req_json) {
        /* No usage: the counts are ours, and say so. */
        r->has |= LT_HAS_IN | LT_HAS_ESTIMATED;
        r->in = c->in_est;
        if (answered || c->tok_chunks) {
            r->has |= LT_HAS_OUT;
            r->out = c->stream ? c->tok_chunks : c->out_est;
            uint32_t re = c->stream ? c->reason_chunks : c->reason_est;
            if (re) {
                r->has |= LT_HAS_REASONING;
                r->reasoning = re;
            }
        }
    }
    if (c->n_msgs) {
        r->has |= LT_HAS_MSGS;
        r->n_msgs = c->n_msgs;
        r->msgs = c->msgs;
    }
    if (c->has_tools) {
        r->has |= LT_HAS_TOOLS;
        r->tools_count = c->tools_count;
        r->tools_tokens = c->tools_tokens;
    }
    if (c->n_calls && c->args) {
        free(c->calls_tok);
        c->calls_tok = calloc(c->n_calls, sizeof *c->calls_tok);
        if (!c->calls_tok)
            return LT_ENOMEM;
        for (uint32_t i = 0; i < c->n_calls; i++)
            c->calls_tok[i] =
                lt_capture_count_text(c->args[i].p ? c->args[i].p : "", c->args[i].len);
        r->has |= LT_HAS_CALLS;
        r->n_calls = c->n_calls;
        r->calls = c->calls_tok;
    }
    if (c->n_blocks) {
        r->has |= LT_HAS_BLOCKS;
        r->n_blocks = c->n_blocks;
        r->blocks = c->blocks;
    }
    if (c->status > 0) {
        r->has |= LT_HAS_ORIG_STATUS;
        r->orig_status = c->status;
    }
    if (c->ttft >= 0) {
        r->has |= LT_HAS_ORIG_TTFT;
        r->orig_ttft = c->ttft;
    }
    if (c->e2e >= 0) {
        r->has |= LT_HAS_ORIG_E2E;
        r->orig_e2e = c->e2e;
    }
    if (c->finish[0])
        r->finish = c->finish;
    if (c->text) {
        r->text = c->text;
        r->text_len = c->text_len;
    }
    if (c->err || !answered)
        r->has |= LT_HAS_FAILED;
    lt_buf_reset(&c->extra);
    uint32_t nx = 0;
    if (c->err) {
        LT_TRY(pack_str(&c->extra, "err", 3));
        LT_TRY(pack_str(&c->extra, c->err, strlen(c->err)));
        nx++;
    }
    if (c->o.keep_content && c->out_text.len) {
        LT_TRY(pack_str(&c->extra, "out_text", 8));
        LT_TRY(pack_str(&c->extra, c->out_text.p, c->out_text.len));
        nx++;
    }
    r->extra.data = (const uint8_t *)c->extra.p;
    r->extra.len = c->extra.len;
    r->extra.n = nx;
out:
    return rc;
}

int lt_capture_add_usage_option(const char *body, size_t len, struct lt_buf *out)
{
    static const char opt[] = "\"stream_options\":{\"include_usage\":true},";
    size_t i = 0;
    while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r'))
        i++;
    if (i >= len || body[i] != '{')
        return LT_EINVAL;
    lt_buf_reset(out);
    int rc = lt_buf_append(out, body, i + 1);
    if (rc == 0)
        rc = lt_buf_append(out, opt, sizeof opt - 1);
    if (rc == 0)
        rc = lt_buf_append(out, body + i + 1, len - i - 1);
    return rc;
}

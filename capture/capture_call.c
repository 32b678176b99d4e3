/*
 * Reading OpenAI-style request and response bodies into the shape of a
 * trace record (capture_call.h). jansson parses requests; answers (chunks
 * and whole bodies) are read by wire's scanner (wire/wire_resp.h), the one
 * replay reads them with, so both agree on which chunks bear tokens, what
 * usage and errors are. Every size a peer controls is bounded (message
 * count by the body limit, argument and answer text by the caps below).
 */
#include "capture/capture_call.h"

#include "capture/capture_media.h"
#include "capture/capture_tokens.h"
#include "base/lt_err.h"
#include "traces/lt_mp.h"
#include "wire/wire_resp.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* The trace reader's limits (traces/trace_format.h): capture never writes
 * a record the reader would refuse. */
#define RECORD_BYTES_MAX ((size_t)LT_LIMIT_VALUE_BYTES)
#define MSGS_MAX ((size_t)LT_LIMIT_ARRAY)
#define ELEMS_MAX ((size_t)LT_LIMIT_ELEMS)
/* Room in a record for everything but msgs, blocks, calls and the texts
 * (fixed keys, model, finish, extras) */
#define RECORD_SLACK ((size_t)64 << 10)
/* One message packed, at most: [role, tokens] (array and string headers,
 * the role, a uint32). */
#define MSG_BYTES(role_len) (7 + (size_t)(role_len))

#define ARGS_MAX ((size_t)1 << 20)     /* one tool call's arguments */
#define OUT_TEXT_MAX ((size_t)4 << 20) /* kept answer text */
#define EXTRA_MAX ((size_t)8 << 20)
#define SCRATCH_MAX ((size_t)32 << 20) /* one decoded answer string: a body's cap */

enum lt_capture_api lt_capture_api_of(const char *method, const char *path)
{
    if (strcmp(method, "POST") != 0)
        return LT_CAPTURE_API_NONE;
    size_t n = strcspn(path, "?#");
    static const struct {
        const char *end;
        enum lt_capture_api api;
    } routes[] = {
        {"/chat/completions", LT_CAPTURE_API_CHAT}, {"/completions", LT_CAPTURE_API_COMPLETIONS},
        {"/responses", LT_CAPTURE_API_RESPONSES},   {"/messages", LT_CAPTURE_API_MESSAGES},
        {"/embeddings", LT_CAPTURE_API_EMBEDDINGS}, {"/rerank", LT_CAPTURE_API_RERANK},
    };
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        size_t k = strlen(routes[i].end);
        if (n >= k && !memcmp(path + n - k, routes[i].end, k))
            return routes[i].api;
    }
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
    c->cancel_after = c->cancel_tokens = -1;
    lt_buf_init(&c->out_text, OUT_TEXT_MAX);
    lt_buf_init(&c->extra, EXTRA_MAX);
    lt_buf_init(&c->scratch, SCRATCH_MAX);
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
    free(c->media);
    lt_buf_release(&c->out_text);
    lt_buf_release(&c->extra);
    lt_buf_release(&c->scratch);
    free(c);
}

void lt_capture_call_changed(struct lt_capture_call *c, const char *field, int64_t sent,
                             const char *why)
{
    uint32_t i = 0;
    while (i < c->n_changed && strcmp(c->changed[i].field, field) != 0)
        i++;
    if (i == LT_CAPTURE_MAX_CHANGES)
        return;
    c->changed[i] = (struct lt_capture_change){field, sent, why};
    if (i == c->n_changed)
        c->n_changed++;
}

/* A cut of a list: its length as sent is what the first cut saw. */
static void note_cut(struct lt_capture_call *c, const char *field, size_t sent)
{
    for (uint32_t i = 0; i < c->n_changed; i++)
        if (!strcmp(c->changed[i].field, field))
            return;
    lt_capture_call_changed(c, field, (int64_t)sent, NULL);
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

/* A chat-shaped prompt: tools, then messages. */
static int read_chat(struct lt_capture_call *c, json_t *req, json_t *msgs,
                     struct lt_capture_blocks *b)
{
    json_t *tools = json_object_get(req, "tools");
    if (json_is_array(tools) && json_array_size(tools) > 0) {
        c->has_tools = true;
        c->tools_count = (uint32_t)json_array_size(tools);
        c->tools_tokens = json_tokens(b, tools);
    }
    if (!json_is_array(msgs)) {
        /* Nothing to estimate the prompt from: no `in` rather than 0. */
        c->in_unknown = true;
        lt_capture_call_changed(c, "messages", 0, msgs ? "not a list" : "absent");
        return 0;
    }
    size_t sent = json_array_size(msgs), n = sent;
    if (n > MSGS_MAX) {
        /* The record keeps the reader's limit of them; the estimate of
         * the prompt and its blocks still cover every message. */
        n = MSGS_MAX;
        note_cut(c, "msgs", sent);
    }
    c->msgs = calloc(n ? n : 1, sizeof *c->msgs);
    c->msg_hash = calloc(n ? n : 1, sizeof *c->msg_hash);
    if (!c->msgs || !c->msg_hash)
        return LT_ENOMEM;
    uint64_t h = 0;
    for (size_t i = 0; i < sent; i++) {
        json_t *m = json_array_get(msgs, i);
        struct lt_msg lm_past = {{0}, 0}, *lm = i < n ? &c->msgs[i] : &lm_past;
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
        if (i >= n)
            continue;
        c->msgs_bytes += MSG_BYTES(rl);
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

/* Append a chat message {role, content[, tool_calls]} to list (content and
 * calls are borrowed: new references are taken). */
static int add_msg(json_t *list, const char *role, json_t *content, json_t *calls)
{
    json_t *m = json_pack("{ss}", "role", role);
    if (!m)
        return LT_ENOMEM;
    if (content)
        json_object_set(m, "content", content);
    if (calls)
        json_object_set(m, "tool_calls", calls);
    return json_array_append_new(list, m) == 0 ? 0 : LT_ENOMEM;
}

/* A tool call as chat writes it, its arguments the JSON text given. */
static json_t *chat_call(json_t *name, const char *args)
{
    json_t *fn = json_pack("{ss}", "arguments", args ? args : "");
    if (fn && json_is_string(name))
        json_object_set(fn, "name", name);
    json_t *call = fn ? json_pack("{so}", "function", fn) : NULL;
    json_t *calls = call ? json_pack("[o]", call) : NULL;
    return calls;
}

/* A Responses prompt as chat's messages: instructions as a system
 * message, input (a string, or message, function_call and
 * function_call_output items) as turns. */
static json_t *responses_msgs(json_t *req)
{
    json_t *out = json_array();
    json_t *ins = json_object_get(req, "instructions");
    json_t *in = json_object_get(req, "input");
    int rc = 0;
    if (!out)
        return NULL;
    if (json_is_string(ins))
        rc = add_msg(out, "system", ins, NULL);
    if (rc == 0 && json_is_string(in))
        rc = add_msg(out, "user", in, NULL);
    size_t i;
    json_t *it;
    if (json_is_array(in)) {
        json_array_foreach(in, i, it)
        {
            if (rc < 0)
                break;
            const char *role = json_string_value(json_object_get(it, "role"));
            const char *type = json_string_value(json_object_get(it, "type"));
            if (type && !strcmp(type, "function_call")) {
                json_t *calls = chat_call(json_object_get(it, "name"),
                                          json_string_value(json_object_get(it, "arguments")));
                rc = calls ? add_msg(out, "assistant", NULL, calls) : LT_ENOMEM;
                json_decref(calls);
            } else if (type && !strcmp(type, "function_call_output")) {
                rc = add_msg(out, "tool", json_object_get(it, "output"), NULL);
            } else {
                rc = add_msg(out, role ? role : "user", json_object_get(it, "content"), NULL);
            }
        }
    }
    if (rc < 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* A Messages prompt as chat's messages: system first; a turn's text
 * blocks are its content, its tool_use blocks its tool calls, and a user
 * turn of tool_result blocks is a tool message. */
static json_t *messages_msgs(json_t *req)
{
    json_t *out = json_array();
    json_t *sys = json_object_get(req, "system");
    json_t *ms = json_object_get(req, "messages");
    int rc = 0;
    if (!out)
        return NULL;
    if (json_is_string(sys) || json_is_array(sys))
        rc = add_msg(out, "system", sys, NULL);
    size_t i, k;
    json_t *m, *blk;
    json_array_foreach(ms, i, m)
    {
        if (rc < 0)
            break;
        const char *role = json_string_value(json_object_get(m, "role"));
        json_t *content = json_object_get(m, "content");
        if (!json_is_array(content)) {
            rc = add_msg(out, role ? role : "user", content, NULL);
            continue;
        }
        json_t *parts = json_array(), *calls = json_array();
        bool results = json_array_size(content) > 0;
        json_array_foreach(content, k, blk)
        {
            const char *type = json_string_value(json_object_get(blk, "type"));
            json_t *text = json_object_get(blk, "text");
            if (!type || strcmp(type, "tool_result"))
                results = false;
            if (type && !strcmp(type, "tool_use")) {
                char *args = json_dumps(json_object_get(blk, "input"),
                                        JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
                json_t *one = chat_call(json_object_get(blk, "name"), args);
                free(args);
                if (one)
                    json_array_extend(calls, one);
                json_decref(one);
            } else if (type && !strcmp(type, "tool_result")) {
                json_t *rc_content = json_object_get(blk, "content");
                if (json_is_string(rc_content))
                    json_array_append_new(parts, json_pack("{sO}", "text", rc_content));
                else if (json_is_array(rc_content))
                    json_array_extend(parts, rc_content);
            } else if (json_is_string(text)) {
                json_array_append_new(parts, json_pack("{sO}", "text", text));
            } else if (json_is_string(json_object_get(blk, "thinking"))) {
                json_array_append_new(parts,
                                      json_pack("{sO}", "text", json_object_get(blk, "thinking")));
            }
        }
        if (!parts || !calls)
            rc = LT_ENOMEM;
        else
            rc = add_msg(out,
                         results ? "tool"
                         : role  ? role
                                 : "user",
                         parts, json_array_size(calls) ? calls : NULL);
        json_decref(parts);
        json_decref(calls);
    }
    if (rc < 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static int read_completions(struct lt_capture_call *c, json_t *req, struct lt_capture_blocks *b)
{
    json_t *p = json_object_get(req, "prompt");
    size_t i, j;
    json_t *v, *w;
    if (!json_is_string(p) && !json_is_array(p)) {
        c->in_unknown = true;
        lt_capture_call_changed(c, "prompt", 0, p ? "not a string or a list" : "absent");
        return 0;
    }
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

/* One input's tokens: a string's estimate, or a list of ids. */
static uint32_t input_tokens(struct lt_capture_blocks *b, const json_t *v)
{
    if (json_is_string(v))
        return lt_capture_blocks_text(b, json_string_value(v), json_string_length(v));
    if (json_is_object(v))
        return input_tokens(b, json_object_get(v, "text"));
    uint32_t n = 0;
    size_t i;
    const json_t *id;
    if (json_is_array(v))
        json_array_foreach(v, i, id) if (json_is_integer(id))
        {
            lt_capture_blocks_id(b, (uint64_t)json_integer_value(id));
            n++;
        }
    return n;
}

/* An embeddings body's inputs, or a rerank body's query and documents, as
 * the record's messages (docs/trace-format.md): role "input" each, or
 * "query" and "document"; their tokens estimated, the server's usage
 * giving the prompt. */
static int read_inputs(struct lt_capture_call *c, json_t *req, struct lt_capture_blocks *b)
{
    bool rerank = c->api == LT_CAPTURE_API_RERANK;
    json_t *list = json_object_get(req, rerank ? "documents" : "input");
    json_t *one = NULL;
    if (!rerank && (json_is_string(list) || (json_is_array(list) && json_array_size(list) &&
                                             json_is_integer(json_array_get(list, 0))))) {
        one = list; /* a single input */
        list = NULL;
    }
    size_t n = one ? 1 : json_is_array(list) ? json_array_size(list) : 0;
    if (!n) {
        c->in_unknown = true;
        lt_capture_call_changed(c, rerank ? "documents" : "input", 0, "absent or empty");
        return 0;
    }
    size_t total = n + (rerank ? 1 : 0);
    if (total > MSGS_MAX) {
        note_cut(c, "msgs", total);
        total = MSGS_MAX;
    }
    c->msgs = calloc(total, sizeof *c->msgs);
    if (!c->msgs)
        return LT_ENOMEM;
    uint32_t k = 0;
    if (rerank) {
        snprintf(c->msgs[k].role, sizeof c->msgs[k].role, "query");
        c->msgs[k++].tokens = input_tokens(b, json_object_get(req, "query"));
    }
    for (size_t i = 0; i < n && k < total; i++) {
        snprintf(c->msgs[k].role, sizeof c->msgs[k].role, rerank ? "document" : "input");
        c->msgs[k++].tokens = input_tokens(b, one ? one : json_array_get(list, i));
    }
    for (uint32_t i = 0; i < k; i++)
        c->msgs_bytes += MSG_BYTES(strlen(c->msgs[i].role));
    c->n_msgs = k;
    return keep_json_text(c, rerank ? req : (one ? one : list));
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
    if (c->api == LT_CAPTURE_API_RESPONSES)
        mt = json_object_get(req, "max_output_tokens");
    if (json_is_integer(mt)) {
        json_int_t v = json_integer_value(mt);
        if (v >= 0 && v <= (json_int_t)UINT32_MAX) {
            c->has_max_tokens = true;
            c->max_tokens = (uint32_t)v;
        } else {
            /* Not a count a record can hold: not recorded, kept here. */
            lt_capture_call_changed(c, "max_tokens", (int64_t)v, NULL);
        }
    } else if (mt && !json_is_null(mt)) {
        lt_capture_call_changed(c, "max_tokens", 0, "not an integer");
    }
    c->stream = json_is_true(json_object_get(req, "stream"));
    /* first, so that nothing after sees a pixel or a link's query */
    struct lt_media media[LT_MEDIA_MAX];
    uint32_t n_media = 0;
    lt_capture_media_scan(req, media, LT_MEDIA_MAX, &n_media);
    c->n_media = 0; /* a request without media keeps none of an earlier one's */
    if (n_media) {
        free(c->media);
        if (!(c->media = malloc(n_media * sizeof *c->media))) {
            rc = LT_ENOMEM;
            goto out;
        }
        memcpy(c->media, media, n_media * sizeof *c->media);
        c->n_media = n_media;
    }
    json_t *so = json_object_get(req, "stream_options");
    if (so) {
        c->has_stream_options = true;
        c->usage_asked = json_is_true(json_object_get(so, "include_usage"));
    }
    if (c->api == LT_CAPTURE_API_RESPONSES || c->api == LT_CAPTURE_API_MESSAGES) {
        /* Their streams end with usage whatever the request says: no
         * stream_options to add. */
        c->usage_asked = true;
        json_t *msgs =
            c->api == LT_CAPTURE_API_RESPONSES ? responses_msgs(req) : messages_msgs(req);
        if (!msgs) {
            rc = LT_ENOMEM;
            goto out;
        }
        rc = read_chat(c, req, msgs, &b);
        json_decref(msgs);
        if (rc < 0)
            goto out;
    } else if (c->api == LT_CAPTURE_API_CHAT) {
        LT_TRY(read_chat(c, req, json_object_get(req, "messages"), &b));
    } else if (c->api == LT_CAPTURE_API_EMBEDDINGS || c->api == LT_CAPTURE_API_RERANK) {
        LT_TRY(read_inputs(c, req, &b));
    } else {
        LT_TRY(read_completions(c, req, &b));
    }
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

/* Usage, by wire's rule (a completion count); reasoning and cached counts
 * are kept as last reported. */
static void take_usage(struct lt_capture_call *c, const struct lt_wire_resp_said *s)
{
    if (s->has_pt) /* Messages' message_start: the prompt's count, no output count yet */
        c->u_in = lt_wire_resp_said_in(s);
    if (s->has_pt && s->has_cached && !lt_wire_resp_said_usage(s)) {
        c->u_cached = s->cached;
        c->u_has_cached = true;
    }
    if (!lt_wire_resp_said_usage(s))
        return;
    c->usage = true;
    if (s->has_pt)
        c->u_in = lt_wire_resp_said_in(s);
    c->u_out = s->ct;
    if (s->has_rt) {
        c->u_reasoning = s->rt;
        c->u_has_reasoning = true;
    }
    if (s->has_cached) {
        c->u_cached = s->cached;
        c->u_has_cached = true;
    }
}

void lt_capture_call_usage(struct lt_capture_call *c, json_t *u)
{
    if (!json_is_object(u))
        return;
    /* Read as the usage of a body, so one rule says what usage is. */
    json_t *w = json_pack("{sO}", "usage", u);
    char *text = w ? json_dumps(w, JSON_COMPACT) : NULL;
    struct lt_wire_resp_said s;
    if (text && lt_wire_resp_scan(text, strlen(text), true, &s, NULL, NULL) == 0)
        take_usage(c, &s);
    free(text);
    json_decref(w);
}

static void take_finish(struct lt_capture_call *c, const struct lt_wire_resp_said *s)
{
    if (!s->finish_len)
        return;
    size_t n;
    const char *f = lt_wire_resp_finish_norm(s->finish, s->finish_len, c->n_calls > 0, &n);
    if (n > sizeof c->finish - 1)
        n = sizeof c->finish - 1;
    memcpy(c->finish, f, n);
    c->finish[n] = '\0';
}

/* A raw JSON string decoded into the scratch buffer; NULL when it does not
 * fit (the caps hold whatever a peer sends). */
static const char *decode(struct lt_capture_call *c, const char *raw, size_t n, size_t *len)
{
    lt_buf_reset(&c->scratch);
    if (lt_wire_resp_unescape(raw, n, &c->scratch) < 0)
        return NULL;
    *len = c->scratch.len;
    return c->scratch.p ? c->scratch.p : "";
}

static void append_arg(struct lt_capture_call *c, size_t idx, const char *args, size_t n)
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
    size_t len;
    const char *a = args ? decode(c, args, n, &len) : NULL;
    if (a)
        (void)lt_buf_append(&c->args[idx], a, len);
}

/* Streamed tool-call deltas: arguments gather by their index. */
static void on_tool_delta(void *ud, uint32_t pos, bool has_index, uint32_t index, const char *args,
                          size_t n)
{
    struct lt_capture_call *c = ud;
    if (c->api == LT_CAPTURE_API_RESPONSES || c->api == LT_CAPTURE_API_MESSAGES) {
        /* Their index is the output item's or content block's, and a
         * call's deltas come together: a new index is the next call. */
        if (!c->in_tool_block || index != c->tool_block) {
            c->in_tool_block = true;
            c->tool_block = index;
            append_arg(c, c->n_calls, args, n);
        } else {
            append_arg(c, c->n_calls - 1, args, n);
        }
        return;
    }
    append_arg(c, has_index ? index : pos, args, n);
}

/* A whole answer's tool calls: one after the other. */
static void on_tool_call(void *ud, uint32_t pos, bool has_index, uint32_t index, const char *args,
                         size_t n)
{
    struct lt_capture_call *c = ud;
    append_arg(c, c->n_calls, args, n);
}

/* The answer's text, up to OUT_TEXT_MAX: past it, the rest is counted,
 * not kept, and the record says so. */
static void keep_text(struct lt_capture_call *c, const char *text, size_t len)
{
    if (!c->o.keep_content || !text)
        return;
    if (c->out_text_sent == c->out_text.len) {
        size_t room = OUT_TEXT_MAX - c->out_text.len;
        if (lt_buf_append(&c->out_text, text, len < room ? len : room) < 0)
            c->out_text_sent++; /* out of memory: the text is cut here */
    }
    c->out_text_sent += len;
}

/* The server's image tokens, where its usage says them (the sim's
 * prompt_tokens_details.image_tokens): an answer's data (a chunk or a whole
 * body) that names them, read only for a request with images. One image
 * gets them all; several share them by their pixels (an image of unknown
 * size as one of LT_MEDIA_SIDE_UNKNOWN square, as replay makes it; rounded
 * so that they add up), the per-image figure no server gives. */
static void take_image_tokens(struct lt_capture_call *c, const char *data, size_t len)
{
    if (!c->n_media || len < 12)
        return;
    bool named = false; /* (memmem is not POSIX) */
    for (size_t i = 0; i + 12 <= len && !named; i++)
        named = data[i] == 'i' && !memcmp(data + i, "image_tokens", 12);
    if (!named)
        return;
    json_t *j = json_loadb(data, len, 0, NULL);
    json_t *u = json_object_get(j, "usage");
    json_t *t = json_object_get(json_object_get(u, "prompt_tokens_details"), "image_tokens");
    if (json_is_integer(t) && json_integer_value(t) > 0 && json_integer_value(t) <= UINT32_MAX) {
        uint64_t total = (uint64_t)json_integer_value(t), px = 0, given = 0;
        uint32_t images = 0, last = 0;
        for (uint32_t i = 0; i < c->n_media; i++)
            if (c->media[i].kind == LT_MEDIA_IMAGE) {
                images++;
                last = i;
                px += (uint64_t)(c->media[i].w ? c->media[i].w : LT_MEDIA_SIDE_UNKNOWN) *
                      (c->media[i].h ? c->media[i].h : LT_MEDIA_SIDE_UNKNOWN);
            }
        for (uint32_t i = 0; images && i < c->n_media; i++) {
            struct lt_media *m = &c->media[i];
            if (m->kind != LT_MEDIA_IMAGE)
                continue;
            uint64_t mine = (uint64_t)(m->w ? m->w : LT_MEDIA_SIDE_UNKNOWN) *
                            (m->h ? m->h : LT_MEDIA_SIDE_UNKNOWN);
            uint64_t k = i == last ? total - given : total * mine / px;
            m->tokens = (uint32_t)k;
            given += k;
        }
    }
    json_decref(j);
}

unsigned lt_capture_call_chunk(struct lt_capture_call *c, const char *data, size_t len)
{
    if (lt_wire_resp_is_done(data, len))
        return LT_CAPTURE_CHUNK_DONE;
    struct lt_wire_resp_said s;
    if (lt_wire_resp_scan(data, len, false, &s, on_tool_delta, c) < 0)
        return LT_CAPTURE_CHUNK_BAD;
    unsigned bits = s.stop ? LT_CAPTURE_CHUNK_DONE : 0;
    take_usage(c, &s);
    if (s.usage)
        take_image_tokens(c, data, len);
    if (s.error)
        c->err = "upstream_error";
    if (s.usage && s.n_choices == 0 &&
        (c->api == LT_CAPTURE_API_CHAT || c->api == LT_CAPTURE_API_COMPLETIONS))
        bits |= LT_CAPTURE_CHUNK_USAGE_ONLY;
    take_finish(c, &s);
    if (c->o.keep_content && s.text_len && !s.tool) {
        size_t n = 0;
        keep_text(c, decode(c, s.text, s.text_len, &n), n);
    }
    if (lt_wire_resp_said_tokens(&s)) {
        bits |= LT_CAPTURE_CHUNK_TOKEN;
        c->tok_chunks++;
        if (!s.content)
            c->reason_chunks++;
    }
    return bits;
}

void lt_capture_call_client_left(struct lt_capture_call *c, int64_t after_us)
{
    c->cancel_after = after_us >= 0 ? after_us : -1;
    if (!c->stream)
        c->cancel_tokens = 0;
    else
        c->cancel_tokens = c->usage && c->u_out > c->tok_chunks ? c->u_out : c->tok_chunks;
}

int lt_capture_call_body(struct lt_capture_call *c, const char *body, size_t len)
{
    struct lt_wire_resp_said s;
    if (lt_wire_resp_scan(body, len, true, &s, on_tool_call, c) < 0)
        return LT_EFORMAT;
    if (s.error)
        c->err = "upstream_error";
    take_usage(c, &s);
    if (s.usage)
        take_image_tokens(c, body, len);
    take_finish(c, &s);
    size_t n = 0;
    const char *t;
    if (s.reasoning_text && (t = decode(c, s.reasoning_text, s.reasoning_len, &n))) {
        uint32_t k = lt_capture_count_text(t, n);
        c->reason_est += k;
        c->out_est += k;
    }
    if (s.text && (t = decode(c, s.text, s.text_len, &n))) {
        c->out_est += lt_capture_count_text(t, n);
        keep_text(c, t, n);
    }
    for (uint32_t k = 0; c->args && k < c->n_calls; k++)
        c->out_est += lt_capture_count_text(c->args[k].p ? c->args[k].p : "", c->args[k].len);
    return 0;
}

int lt_capture_call_body_json(struct lt_capture_call *c, json_t *resp)
{
    if (!json_is_object(resp))
        return LT_EFORMAT;
    /* Read as the text it came as, so one reader says what a body says. */
    char *text = json_dumps(resp, JSON_COMPACT);
    if (!text)
        return LT_ENOMEM;
    int rc = lt_capture_call_body(c, text, strlen(text));
    free(text);
    return rc;
}

/* The extra keys, packed by traces' one msgpack encoder. */
static int pack_str(struct lt_buf *b, const char *s, size_t n)
{
    return lt_mp_str(&(struct lt_mp){b, 0}, s, n);
}

static int pack_i64(struct lt_buf *b, int64_t v)
{
    return lt_mp_int(&(struct lt_mp){b, 0}, v);
}

/* Cut text of *len bytes to at most target bytes, at a UTF-8 boundary,
 * ending with the mark (written over the text, so no room is needed). */
static void cut_text(char *text, size_t *len, size_t target)
{
    static const char mark[] = LT_CAPTURE_CUT_MARK;
    size_t m = sizeof mark - 1;
    if (target >= *len)
        return;
    if (*len < m) {
        *len = 0;
        return;
    }
    size_t keep = target > m ? target - m : 0;
    while (keep > 0 && ((unsigned char)text[keep] & 0xc0) == 0x80)
        keep--;
    memcpy(text + keep, mark, m);
    *len = keep + m;
}

/* Keep the record within the reader's limits on one value: at most
 * MSGS_MAX blocks; then, past the bytes or elements of one value, the
 * prompt's kept text goes first, then the answer's, then blocks from the
 * end, then messages from the end. Each cut is in `changed`. Sizes are
 * upper bounds of the packed bytes. */
static void fit_record(struct lt_capture_call *c)
{
    if (c->n_blocks > MSGS_MAX) {
        note_cut(c, "blocks", c->n_blocks);
        c->n_blocks = MSGS_MAX;
    }
    size_t fixed = RECORD_SLACK + (size_t)c->n_calls * 5 + (c->model ? strlen(c->model) : 0);
    size_t text = c->text ? c->text_len + 5 : 0, out = c->out_text.len ? c->out_text.len + 16 : 0;
    size_t total = fixed + c->msgs_bytes + (size_t)c->n_blocks * 9 + text + out;
    if (total > RECORD_BYTES_MAX && c->text) {
        size_t over = total - RECORD_BYTES_MAX, sent = c->text_len;
        cut_text(c->text, &c->text_len, c->text_len > over ? c->text_len - over : 0);
        lt_capture_call_changed(c, "text", (int64_t)sent, NULL);
        total -= sent - c->text_len;
    }
    if (total > RECORD_BYTES_MAX && c->out_text.len) {
        size_t over = total - RECORD_BYTES_MAX, was = c->out_text.len;
        cut_text(c->out_text.p, &c->out_text.len, was > over ? was - over : 0);
        c->out_text_sent = c->out_text_sent > was ? c->out_text_sent : was + 1;
        total -= was - c->out_text.len;
    }
    if (c->o.keep_content && c->out_text_sent != c->out_text.len)
        lt_capture_call_changed(c, "out_text", (int64_t)c->out_text_sent, NULL);
    size_t elems = 64 + (size_t)c->n_calls + 3 * (size_t)c->n_msgs + c->n_blocks;
    size_t drop = 0;
    if (total > RECORD_BYTES_MAX)
        drop = (total - RECORD_BYTES_MAX + 8) / 9;
    if (elems > ELEMS_MAX && elems - ELEMS_MAX > drop)
        drop = elems - ELEMS_MAX;
    if (drop && c->n_blocks) {
        drop = drop < c->n_blocks ? drop : c->n_blocks;
        note_cut(c, "blocks", c->n_blocks);
        c->n_blocks -= (uint32_t)drop;
        total -= drop * 9;
        elems -= drop;
    }
    if ((total > RECORD_BYTES_MAX || elems > ELEMS_MAX) && c->n_msgs) {
        size_t room = RECORD_BYTES_MAX > total - c->msgs_bytes
                          ? RECORD_BYTES_MAX - (total - c->msgs_bytes)
                          : 0;
        size_t room_e = ELEMS_MAX > elems - 3 * (size_t)c->n_msgs
                            ? (ELEMS_MAX - (elems - 3 * (size_t)c->n_msgs)) / 3
                            : 0;
        uint32_t keep = 0;
        for (size_t used = 0; keep < c->n_msgs && keep < room_e; keep++) {
            used += MSG_BYTES(strlen(c->msgs[keep].role));
            if (used > room)
                break;
        }
        if (keep < c->n_msgs) {
            note_cut(c, "msgs", c->n_msgs);
            c->n_msgs = keep;
        }
    }
}

int lt_capture_call_record(struct lt_capture_call *c, struct lt_record *r)
{
    int rc = 0;
    fit_record(c);
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
    static const char *const api_names[] = {"completions", "chat",       "completions", "responses",
                                            "messages",    "embeddings", "rerank"};
    r->api = api_names[c->api <= LT_CAPTURE_API_RERANK ? c->api : 0];
    if ((c->api == LT_CAPTURE_API_EMBEDDINGS || c->api == LT_CAPTURE_API_RERANK) && !c->usage &&
        c->u_in) { /* their usage is the prompt's alone: no output to count */
        c->usage = true;
        c->u_out = 0;
    }
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
        if (!c->u_has_reasoning && c->api == LT_CAPTURE_API_MESSAGES && c->stream &&
            c->reason_chunks) { /* no count in Anthropic's usage: the thinking deltas */
            r->has |= LT_HAS_REASONING;
            r->reasoning = c->reason_chunks;
        }
    } else if (c->req_json) {
        /* No usage: the counts are ours, and say so (no `in` when there
         * was no prompt to count). */
        r->has |= LT_HAS_ESTIMATED;
        if (!c->in_unknown) {
            r->has |= LT_HAS_IN;
            r->in = c->in_est;
        }
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
    /* A client that left saw only part of the answer: that part is
     * cancel_tokens, and the whole is unknown (out is "all of them"), so a
     * replay asks for max_tokens and leaves at the same point. */
    if (c->cancel_tokens >= 0)
        r->has &= ~(uint32_t)(LT_HAS_OUT | LT_HAS_REASONING);
    if (c->cancel_after >= 0) {
        r->has |= LT_HAS_CANCEL_AFTER;
        r->cancel_after = c->cancel_after;
    }
    if (c->cancel_tokens >= 0) {
        r->has |= LT_HAS_CANCEL_TOKENS;
        r->cancel_tokens =
            (uint32_t)(c->cancel_tokens < UINT32_MAX ? c->cancel_tokens : UINT32_MAX);
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
    if (c->n_changed) {
        LT_TRY(pack_str(&c->extra, "changed", 7));
        LT_TRY(lt_mp_map(&(struct lt_mp){&c->extra, 0}, c->n_changed));
        for (uint32_t i = 0; i < c->n_changed; i++) {
            const struct lt_capture_change *ch = &c->changed[i];
            LT_TRY(pack_str(&c->extra, ch->field, strlen(ch->field)));
            LT_TRY(ch->why ? pack_str(&c->extra, ch->why, strlen(ch->why))
                           : pack_i64(&c->extra, ch->sent));
        }
        nx++;
    }
    if (c->n_media) {
        struct lt_mp mp = {&c->extra, 0};
        LT_TRY(lt_media_pack(&mp, c->media, c->n_media));
        nx++;
    }
    r->extra.data = (const uint8_t *)c->extra.p;
    r->extra.len = c->extra.len;
    r->extra.n = nx;
out:
    return rc;
}

int lt_capture_call_record_unfinished(const struct lt_capture_call *c, struct lt_record *r,
                                      struct lt_buf *extra)
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
    if (c->req_json && !c->in_unknown) {
        r->has |= LT_HAS_IN | LT_HAS_ESTIMATED;
        r->in = c->in_est;
    }
    if (c->has_tools) {
        r->has |= LT_HAS_TOOLS;
        r->tools_count = c->tools_count;
        r->tools_tokens = c->tools_tokens;
    }
    /* The prompt's shape when it is well within the limits (the final
     * record fits the rest: fit_record). */
    if (c->msgs_bytes + (size_t)c->n_blocks * 9 < RECORD_BYTES_MAX / 2 &&
        3 * (size_t)c->n_msgs + c->n_blocks < ELEMS_MAX / 2 && c->n_blocks <= MSGS_MAX) {
        if (c->n_msgs) {
            r->has |= LT_HAS_MSGS;
            r->n_msgs = c->n_msgs;
            r->msgs = c->msgs;
        }
        if (c->n_blocks) {
            r->has |= LT_HAS_BLOCKS;
            r->n_blocks = c->n_blocks;
            r->blocks = c->blocks;
        }
    }
    r->has |= LT_HAS_FAILED;
    lt_buf_reset(extra);
    LT_TRY(pack_str(extra, "err", 3));
    LT_TRY(pack_str(extra, "unfinished", 10));
    r->extra.data = (const uint8_t *)extra->p;
    r->extra.len = extra->len;
    r->extra.n = 1;
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

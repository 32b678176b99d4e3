/*
 * Request parsing (jansson) and response rendering for the sim's OpenAI
 * surface; see sim_api.h. Rendering writes straight into a bounded buffer
 * with printf-style appends: a streamed chunk is rendered once per token
 * per stream, so it must be cheap, and the generated words never need
 * escaping (the model name and tool name are escaped once per request).
 */
#include "sim/sim_api.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lt_sim_dialect_parse(struct lt_sim_dialect *d, const char *spec, struct lt_err *err)
{
    *d = (struct lt_sim_dialect){.role_chunk = true};
    if (!spec || !*spec)
        return 0;
    const char *p = spec;
    while (*p) {
        size_t n = strcspn(p, ",");
        char w[32];
        if (n == 0 || n >= sizeof w)
            return lt_errset(err, LT_EFORMAT, "dialect '%s': bad item", spec);
        memcpy(w, p, n);
        w[n] = '\0';
        if (!strcmp(w, "vllm"))
            *d = (struct lt_sim_dialect){.role_chunk = true};
        else if (!strcmp(w, "role-chunk"))
            d->role_chunk = true;
        else if (!strcmp(w, "no-role-chunk"))
            d->role_chunk = false;
        else if (!strcmp(w, "usage-in-last"))
            d->usage_in_last = true;
        else if (!strcmp(w, "usage-separate"))
            d->usage_in_last = false;
        else if (!strcmp(w, "reasoning"))
            d->reasoning_key = true;
        else if (!strcmp(w, "reasoning_content"))
            d->reasoning_key = false;
        else if (!strcmp(w, "close"))
            d->close = true;
        else if (!strcmp(w, "keep-alive"))
            d->close = false;
        else
            return lt_errset(err, LT_EFORMAT,
                             "unknown dialect item '%s' (vllm, role-chunk, no-role-chunk, "
                             "usage-separate, usage-in-last, reasoning, reasoning_content, "
                             "close, keep-alive)",
                             w);
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}

__attribute__((format(printf, 3, 4))) static int bad(char *msg, size_t msgsz, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msgsz, fmt, ap);
    va_end(ap);
    return 400;
}

static char *json_literal(const char *s)
{
    json_t *j = json_string(s);
    if (!j)
        return NULL;
    char *out = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
    json_decref(j);
    return out;
}

static void toks_json(struct lt_sim_toks *t, const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s) {
        lt_sim_toks_text(t, s, strlen(s));
        free(s);
    } else {
        t->oom = 1;
    }
}

/* Count a chat prompt by the documented rule; 0 or 400 with msg. */
static int count_chat(struct lt_sim_toks *t, const json_t *messages, const json_t *tools, char *msg,
                      size_t msgsz)
{
    if (!json_is_array(messages) || json_array_size(messages) == 0)
        return bad(msg, msgsz, "'messages' must be a non-empty array");
    if (tools)
        toks_json(t, tools);
    uint32_t im_start = lt_sim_special_id("<|im_start|>");
    uint32_t im_end = lt_sim_special_id("<|im_end|>");
    uint32_t nl = lt_sim_special_id("\n");
    size_t i;
    const json_t *m;
    json_array_foreach(messages, i, m)
    {
        if (!json_is_object(m))
            return bad(msg, msgsz, "messages[%zu] must be an object", i);
        const json_t *role = json_object_get(m, "role");
        if (!json_is_string(role))
            return bad(msg, msgsz, "messages[%zu].role must be a string", i);
        const char *rs = json_string_value(role);
        if (strcmp(rs, "system") && strcmp(rs, "user") && strcmp(rs, "assistant") &&
            strcmp(rs, "tool") && strcmp(rs, "developer") && strcmp(rs, "function"))
            return bad(msg, msgsz, "messages[%zu].role '%.40s' is not a known role", i, rs);
        lt_sim_toks_id(t, im_start);
        lt_sim_toks_id(t, lt_sim_special_id(rs));
        lt_sim_toks_id(t, nl);
        const json_t *content = json_object_get(m, "content");
        if (json_is_string(content)) {
            lt_sim_toks_text(t, json_string_value(content), json_string_length(content));
        } else if (json_is_array(content)) {
            size_t k;
            const json_t *part;
            json_array_foreach(content, k, part)
            {
                if (!json_is_object(part) || !json_is_string(json_object_get(part, "type")))
                    return bad(msg, msgsz,
                               "messages[%zu].content[%zu] must be an object with "
                               "a type",
                               i, k);
                const json_t *text = json_object_get(part, "text");
                if (json_is_string(text))
                    lt_sim_toks_text(t, json_string_value(text), json_string_length(text));
            }
        } else if (content && !json_is_null(content)) {
            return bad(msg, msgsz, "messages[%zu].content must be a string, a list or null", i);
        } else if (!json_object_get(m, "tool_calls")) {
            return bad(msg, msgsz, "messages[%zu] has no content", i);
        }
        const json_t *calls = json_object_get(m, "tool_calls");
        if (calls && !json_is_null(calls)) {
            if (!json_is_array(calls))
                return bad(msg, msgsz, "messages[%zu].tool_calls must be a list", i);
            toks_json(t, calls);
        }
        lt_sim_toks_id(t, im_end);
    }
    lt_sim_toks_id(t, im_start);
    lt_sim_toks_id(t, lt_sim_special_id("assistant"));
    lt_sim_toks_id(t, nl);
    return 0;
}

/* Count a completions prompt: text, token ids, or a list of one of either. */
static int count_prompt(struct lt_sim_toks *t, const json_t *prompt, char *msg, size_t msgsz)
{
    if (json_is_array(prompt) && json_array_size(prompt) == 1 &&
        (json_is_string(json_array_get(prompt, 0)) || json_is_array(json_array_get(prompt, 0))))
        prompt = json_array_get(prompt, 0);
    if (json_is_string(prompt)) {
        lt_sim_toks_text(t, json_string_value(prompt), json_string_length(prompt));
    } else if (json_is_array(prompt) && json_array_size(prompt) > 1 &&
               !json_is_integer(json_array_get(prompt, 0))) {
        return bad(msg, msgsz, "batched prompts (a list of several prompts) are not supported");
    } else if (json_is_array(prompt)) {
        size_t i;
        const json_t *v;
        json_array_foreach(prompt, i, v)
        {
            if (!json_is_integer(v) || json_integer_value(v) < 0 ||
                json_integer_value(v) >= (json_int_t)LT_SIM_VOCAB)
                return bad(msg, msgsz, "prompt[%zu] is not a token id (0..%u)", i,
                           LT_SIM_VOCAB - 1);
            lt_sim_toks_id(t, (uint32_t)json_integer_value(v));
        }
    } else if (!prompt) {
        return bad(msg, msgsz, "'prompt' is required");
    } else {
        return bad(msg, msgsz,
                   "'prompt' must be a string, a list of token ids, or a list "
                   "holding one of these (batched prompts are not supported)");
    }
    if (t->n == 0)
        return bad(msg, msgsz, "the prompt is empty");
    return 0;
}

static int get_uint(const json_t *root, const char *key, uint32_t min, int64_t *out, char *msg,
                    size_t msgsz)
{
    const json_t *v = json_object_get(root, key);
    *out = -1;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < (json_int_t)min ||
        json_integer_value(v) > UINT32_MAX)
        return bad(msg, msgsz, "'%s' must be an integer >= %u", key, min);
    *out = json_integer_value(v);
    return 0;
}

static int get_bool(const json_t *root, const char *key, bool *out, char *msg, size_t msgsz)
{
    const json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v))
        return bad(msg, msgsz, "'%s' must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

/* tool_choice: "none" and "auto" never force a call here; "required" calls
 * the first tool, {"type":"function","function":{"name":N}} calls N. */
static int parse_tools(struct lt_sim_call *c, const json_t *root, char *msg, size_t msgsz)
{
    const json_t *tools = json_object_get(root, "tools");
    const json_t *choice = json_object_get(root, "tool_choice");
    if (tools && !json_is_null(tools)) {
        if (!json_is_array(tools))
            return bad(msg, msgsz, "'tools' must be a list");
        size_t i;
        const json_t *tl;
        json_array_foreach(tools, i, tl)
        {
            const json_t *fn = json_object_get(tl, "function");
            if (!json_is_object(tl) || !json_is_string(json_object_get(fn, "name")))
                return bad(msg, msgsz,
                           "tools[%zu] must be {\"type\":\"function\","
                           "\"function\":{\"name\":...}}",
                           i);
        }
    }
    if (!choice || json_is_null(choice))
        return 0;
    size_t ntools = json_is_array(tools) ? json_array_size(tools) : 0;
    const char *name = NULL;
    if (json_is_string(choice)) {
        const char *s = json_string_value(choice);
        if (!strcmp(s, "none") || !strcmp(s, "auto"))
            return 0;
        if (strcmp(s, "required"))
            return bad(msg, msgsz, "'tool_choice' must be none, auto, required or a function");
        if (ntools == 0)
            return bad(msg, msgsz, "tool_choice 'required' needs 'tools'");
        name = json_string_value(
            json_object_get(json_object_get(json_array_get(tools, 0), "function"), "name"));
    } else if (json_is_object(choice)) {
        const json_t *n = json_object_get(json_object_get(choice, "function"), "name");
        if (!json_is_string(n))
            return bad(msg, msgsz, "'tool_choice' must name a function");
        name = json_string_value(n);
        size_t i;
        const json_t *tl;
        bool found = false;
        json_array_foreach(tools, i, tl)
        {
            const char *tn =
                json_string_value(json_object_get(json_object_get(tl, "function"), "name"));
            if (tn && !strcmp(tn, name))
                found = true;
        }
        if (!found)
            return bad(msg, msgsz, "tool_choice names '%.60s', which is not in 'tools'", name);
    } else {
        return bad(msg, msgsz, "'tool_choice' must be a string or an object");
    }
    c->tool_call = true;
    c->tool_name_json = json_literal(name);
    return c->tool_name_json ? 0 : bad(msg, msgsz, "out of memory");
}

static int parse_reasoning(struct lt_sim_call *c, const json_t *root, char *msg, size_t msgsz)
{
    const json_t *eff = json_object_get(root, "reasoning_effort");
    if (eff && !json_is_null(eff)) {
        const char *s = json_string_value(eff);
        if (!s)
            return bad(msg, msgsz, "'reasoning_effort' must be a string");
        if (!strcmp(s, "none")) {
            c->reasoning = 0;
        } else if (!strcmp(s, "low") || !strcmp(s, "minimal")) {
            c->reasoning = 1;
            c->reasoning_fraction = 0.25;
        } else if (!strcmp(s, "medium")) {
            c->reasoning = 1;
            c->reasoning_fraction = 0.5;
        } else if (!strcmp(s, "high")) {
            c->reasoning = 1;
            c->reasoning_fraction = 0.75;
        } else {
            return bad(msg, msgsz, "'reasoning_effort' must be none, low, medium or high");
        }
    }
    const json_t *kw = json_object_get(root, "chat_template_kwargs");
    const json_t *think = json_object_get(kw, "enable_thinking");
    if (think) {
        if (!json_is_boolean(think))
            return bad(msg, msgsz, "'chat_template_kwargs.enable_thinking' must be a boolean");
        c->reasoning = json_is_true(think);
    }
    return 0;
}

int lt_sim_call_parse(struct lt_sim_call *c, enum lt_sim_api api, const char *body, size_t len,
                      const struct lt_sim_profile *p, char *msg, size_t msgsz)
{
    memset(c, 0, sizeof *c);
    c->api = api;
    c->reasoning = -1;
    lt_sim_toks_init(&c->toks, p->block_tokens);
    int rc = 0;
    json_error_t jerr;
    json_t *root = json_loadb(body, len, 0, &jerr);
    if (!root) {
        rc = bad(msg, msgsz, "invalid JSON in request body: %s (line %d, column %d)", jerr.text,
                 jerr.line, jerr.column);
        goto out;
    }
    if (!json_is_object(root)) {
        rc = bad(msg, msgsz, "the request body must be a JSON object");
        goto out;
    }
    const json_t *model = json_object_get(root, "model");
    if (model && !json_is_null(model) && !json_is_string(model)) {
        rc = bad(msg, msgsz, "'model' must be a string");
        goto out;
    }
    c->model_json = json_literal(json_is_string(model) ? json_string_value(model) : p->model);
    if ((rc = get_bool(root, "stream", &c->stream, msg, msgsz)))
        goto out;
    const json_t *so = json_object_get(root, "stream_options");
    if (so && !json_is_null(so)) {
        if (!c->stream) {
            rc = bad(msg, msgsz, "'stream_options' may only be given when 'stream' is true");
            goto out;
        }
        if (!json_is_object(so)) {
            rc = bad(msg, msgsz, "'stream_options' must be an object");
            goto out;
        }
        if ((rc = get_bool(so, "include_usage", &c->include_usage, msg, msgsz)))
            goto out;
    }
    int64_t n, mx, mxc, mn;
    if ((rc = get_uint(root, "n", 1, &n, msg, msgsz)))
        goto out;
    if (n > 1) {
        rc = bad(msg, msgsz, "n > 1 is not supported");
        goto out;
    }
    if ((rc = get_uint(root, "max_tokens", 1, &mx, msg, msgsz)) ||
        (rc = get_uint(root, "max_completion_tokens", 1, &mxc, msg, msgsz)) ||
        (rc = get_uint(root, "min_tokens", 0, &mn, msg, msgsz)) ||
        (rc = get_bool(root, "ignore_eos", &c->ignore_eos, msg, msgsz)))
        goto out;
    if (mx < 0)
        mx = mxc;
    if (api == LT_SIM_CHAT) {
        if ((rc = parse_tools(c, root, msg, msgsz)) || (rc = parse_reasoning(c, root, msg, msgsz)))
            goto out;
        const json_t *tools = json_object_get(root, "tools");
        rc = count_chat(&c->toks, json_object_get(root, "messages"),
                        json_is_array(tools) && json_array_size(tools) ? tools : NULL, msg, msgsz);
    } else {
        rc = count_prompt(&c->toks, json_object_get(root, "prompt"), msg, msgsz);
    }
    if (rc)
        goto out;
    if (c->toks.oom) {
        rc = bad(msg, msgsz, "out of memory counting the prompt");
        goto out;
    }
    uint32_t prompt = c->toks.n;
    if (prompt >= p->max_model_len || (mx > 0 && prompt + (uint64_t)mx > p->max_model_len)) {
        rc = bad(msg, msgsz,
                 "This model's maximum context length is %u tokens. However, you requested "
                 "%llu tokens (%u in the messages, %lld in the completion). Please reduce the "
                 "length of the messages or completion.",
                 p->max_model_len, (unsigned long long)prompt + (mx > 0 ? (uint64_t)mx : 0), prompt,
                 (long long)(mx > 0 ? mx : 0));
        goto out;
    }
    c->max_tokens = mx > 0 ? (uint32_t)mx : p->max_model_len - prompt;
    c->min_tokens = mn > 0 ? (uint32_t)mn : 0;
    if (c->min_tokens > c->max_tokens) {
        rc = bad(msg, msgsz, "min_tokens (%u) must be at most max_tokens (%u)", c->min_tokens,
                 c->max_tokens);
        goto out;
    }
    if (!c->model_json)
        rc = bad(msg, msgsz, "out of memory");
out:
    json_decref(root);
    return rc;
}

void lt_sim_call_release(struct lt_sim_call *c)
{
    free(c->model_json);
    free(c->tool_name_json);
    lt_sim_toks_release(&c->toks);
    c->model_json = c->tool_name_json = NULL;
}

int lt_sim_tokenize(struct lt_buf *out, const char *body, size_t len,
                    const struct lt_sim_profile *p, char *msg, size_t msgsz)
{
    struct lt_sim_toks t;
    lt_sim_toks_init(&t, p->block_tokens);
    int rc = 0;
    json_error_t jerr;
    json_t *root = json_loadb(body, len, 0, &jerr);
    if (!json_is_object(root)) {
        rc = bad(msg, msgsz, "the request body must be a JSON object");
        goto out;
    }
    /* The ids are listed only as far as the body limit lets a prompt go:
     * a token takes at least one byte of body. */
    t.ids_cap = (uint32_t)(len + 16);
    t.ids = malloc(t.ids_cap * sizeof *t.ids);
    if (!t.ids) {
        rc = bad(msg, msgsz, "out of memory");
        goto out;
    }
    const json_t *messages = json_object_get(root, "messages");
    if (messages) {
        const json_t *tools = json_object_get(root, "tools");
        rc = count_chat(&t, messages, json_is_array(tools) && json_array_size(tools) ? tools : NULL,
                        msg, msgsz);
    } else {
        rc = count_prompt(&t, json_object_get(root, "prompt"), msg, msgsz);
    }
    if (rc)
        goto out;
    rc = lt_buf_printf(out, "{\"count\":%u,\"max_model_len\":%u,\"tokens\":[", t.n,
                       p->max_model_len);
    for (uint32_t i = 0; rc == 0 && i < t.n && i < t.ids_cap; i++)
        rc = lt_buf_printf(out, i ? ",%u" : "%u", t.ids[i]);
    if (rc == 0)
        rc = lt_buf_puts(out, "]}");
    if (rc < 0)
        rc = bad(msg, msgsz, "answer too large");
out:
    free(t.ids);
    lt_sim_toks_release(&t);
    json_decref(root);
    return rc;
}

static const char *error_type(int status)
{
    switch (status) {
    case 400:
    case 413:
        return "BadRequestError";
    case 404:
        return "NotFoundError";
    case 405:
        return "MethodNotAllowedError";
    case 429:
        return "RateLimitError";
    case 503:
        return "ServiceUnavailableError";
    default:
        return "InternalServerError";
    }
}

int lt_sim_error_body(struct lt_buf *out, int status, const char *msg)
{
    char *lit = json_literal(msg);
    int rc = lt_buf_printf(out,
                           "{\"error\":{\"message\":%s,\"type\":\"%s\",\"param\":null,"
                           "\"code\":%d}}",
                           lit ? lit : "\"error\"", error_type(status), status);
    free(lit);
    return rc;
}

static int put_usage(struct lt_buf *b, const struct lt_sim_resp *r)
{
    return lt_buf_printf(b,
                         "\"usage\":{\"prompt_tokens\":%u,\"total_tokens\":%llu,"
                         "\"completion_tokens\":%u,\"prompt_tokens_details\":{\"cached_tokens\":"
                         "%u},\"completion_tokens_details\":{\"reasoning_tokens\":%u}}",
                         r->prompt_tokens, (unsigned long long)r->prompt_tokens + r->out, r->out,
                         r->cached_tokens, r->reasoning);
}

static const char *rkey(const struct lt_sim_resp *r)
{
    return r->d->reasoning_key ? "reasoning" : "reasoning_content";
}

static int chunk_open(struct lt_buf *b, const struct lt_sim_resp *r)
{
    if (r->api == LT_SIM_CHAT)
        return lt_buf_printf(b,
                             "data: {\"id\":\"%s\",\"object\":\"chat.completion.chunk\","
                             "\"created\":%lld,\"model\":%s,\"choices\":[",
                             r->id, r->created, r->model_json);
    return lt_buf_printf(b,
                         "data: {\"id\":\"%s\",\"object\":\"text_completion\",\"created\":%lld,"
                         "\"model\":%s,\"choices\":[",
                         r->id, r->created, r->model_json);
}

int lt_sim_render_head(struct lt_buf *b, const struct lt_sim_resp *r)
{
    if (r->api != LT_SIM_CHAT || !r->d->role_chunk)
        return 0;
    int rc = chunk_open(b, r);
    if (rc == 0)
        rc = lt_buf_puts(b, "{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
                            "\"logprobs\":null,\"finish_reason\":null}]}\n\n");
    return rc;
}

/* The piece of the tool call's arguments carried by token i. */
static const char *tool_piece(const struct lt_sim_resp *r, uint32_t i)
{
    uint32_t j = i - r->reasoning, n = r->out - r->reasoning;
    if (j == 0)
        return n == 1 ? "{}" : "{\\\"q\\\": \\\"";
    if (j == n - 1)
        return "\\\"}";
    return lt_sim_word(i);
}

int lt_sim_render_token(struct lt_buf *b, const struct lt_sim_resp *r, uint32_t i, bool malformed)
{
    int rc = chunk_open(b, r);
    if (rc < 0)
        return rc;
    if (malformed)
        return lt_buf_printf(b, "{\"index\":0,\"delta\":{\"content\":\"%s\"\n\n", lt_sim_word(i));
    bool last = i + 1 >= r->out;
    if (r->api == LT_SIM_COMPLETIONS) {
        rc = lt_buf_printf(b, "{\"index\":0,\"text\":\"%s\",\"logprobs\":null,", lt_sim_word(i));
    } else {
        rc = lt_buf_puts(b, "{\"index\":0,\"delta\":{");
        if (rc == 0 && i == 0 && !r->d->role_chunk)
            rc = lt_buf_puts(b, "\"role\":\"assistant\",");
        if (rc < 0)
            return rc;
        if (i < r->reasoning)
            rc = lt_buf_printf(b, "\"%s\":\"%s\"", rkey(r), lt_sim_word(i));
        else if (r->tool_call && i == r->reasoning)
            rc = lt_buf_printf(b,
                               "\"tool_calls\":[{\"index\":0,\"id\":\"call_%llu\",\"type\":"
                               "\"function\",\"function\":{\"name\":%s,\"arguments\":\"%s\"}}]",
                               (unsigned long long)r->seq, r->tool_name_json, tool_piece(r, i));
        else if (r->tool_call)
            rc = lt_buf_printf(b,
                               "\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"%s\"}}]",
                               tool_piece(r, i));
        else
            rc = lt_buf_printf(b, "\"content\":\"%s\"", lt_sim_word(i));
        if (rc == 0)
            rc = lt_buf_puts(b, "},\"logprobs\":null,");
    }
    if (rc == 0 && last)
        rc = lt_buf_printf(b, "\"finish_reason\":\"%s\"}]", r->finish);
    else if (rc == 0)
        rc = lt_buf_puts(b, "\"finish_reason\":null}]");
    if (rc == 0 && last && r->include_usage && r->d->usage_in_last) {
        rc = lt_buf_puts(b, ",");
        if (rc == 0)
            rc = put_usage(b, r);
    }
    if (rc == 0)
        rc = lt_buf_puts(b, "}\n\n");
    return rc;
}

int lt_sim_render_tail(struct lt_buf *b, const struct lt_sim_resp *r)
{
    int rc = 0;
    if (r->include_usage && !r->d->usage_in_last) {
        rc = chunk_open(b, r);
        if (rc == 0)
            rc = lt_buf_puts(b, "],");
        if (rc == 0)
            rc = put_usage(b, r);
        if (rc == 0)
            rc = lt_buf_puts(b, "}\n\n");
    }
    if (rc == 0)
        rc = lt_buf_puts(b, "data: [DONE]\n\n");
    return rc;
}

static int put_words(struct lt_buf *b, uint32_t from, uint32_t to)
{
    int rc = 0;
    for (uint32_t i = from; rc == 0 && i < to; i++)
        rc = lt_buf_puts(b, lt_sim_word(i));
    return rc;
}

int lt_sim_render_full(struct lt_buf *b, const struct lt_sim_resp *r)
{
    int rc;
    if (r->api == LT_SIM_COMPLETIONS) {
        rc = lt_buf_printf(b,
                           "{\"id\":\"%s\",\"object\":\"text_completion\",\"created\":%lld,"
                           "\"model\":%s,\"choices\":[{\"index\":0,\"text\":\"",
                           r->id, r->created, r->model_json);
        if (rc == 0)
            rc = put_words(b, 0, r->out);
        if (rc == 0)
            rc = lt_buf_printf(b, "\",\"logprobs\":null,\"finish_reason\":\"%s\"}],", r->finish);
    } else {
        rc = lt_buf_printf(b,
                           "{\"id\":\"%s\",\"object\":\"chat.completion\",\"created\":%lld,"
                           "\"model\":%s,\"choices\":[{\"index\":0,\"message\":{\"role\":"
                           "\"assistant\",\"content\":",
                           r->id, r->created, r->model_json);
        if (rc == 0 && r->tool_call) {
            rc = lt_buf_puts(b, "null");
        } else if (rc == 0) {
            rc = lt_buf_puts(b, "\"");
            if (rc == 0)
                rc = put_words(b, r->reasoning, r->out);
            if (rc == 0)
                rc = lt_buf_puts(b, "\"");
        }
        if (rc == 0 && r->reasoning) {
            rc = lt_buf_printf(b, ",\"%s\":\"", rkey(r));
            if (rc == 0)
                rc = put_words(b, 0, r->reasoning);
            if (rc == 0)
                rc = lt_buf_puts(b, "\"");
        }
        if (rc == 0 && r->tool_call) {
            rc = lt_buf_printf(b,
                               ",\"tool_calls\":[{\"id\":\"call_%llu\",\"type\":\"function\","
                               "\"function\":{\"name\":%s,\"arguments\":\"",
                               (unsigned long long)r->seq, r->tool_name_json);
            for (uint32_t i = r->reasoning; rc == 0 && i < r->out; i++)
                rc = lt_buf_puts(b, tool_piece(r, i));
            if (rc == 0)
                rc = lt_buf_puts(b, "\"}}]");
        }
        if (rc == 0)
            rc = lt_buf_printf(b, "},\"logprobs\":null,\"finish_reason\":\"%s\"}],", r->finish);
    }
    if (rc == 0)
        rc = put_usage(b, r);
    if (rc == 0)
        rc = lt_buf_puts(b, "}");
    return rc;
}

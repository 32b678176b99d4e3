/*
 * Interpretation of OpenAI-compatible (and SGLang /generate) responses.
 * jansson parses each event; the few fields replay needs are read from the
 * first choice only (replay always asks for n = 1).
 */
#include "replay/replay_resp.h"

#include "traces/lt_err.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lt_replay_resp_init(struct lt_replay_resp *r, uint32_t max_chunks)
{
    memset(r, 0, sizeof *r);
    r->max_chunks = max_chunks ? max_chunks : 1;
}

void lt_replay_resp_reset(struct lt_replay_resp *r)
{
    struct lt_replay_chunk *chunks = r->chunks;
    uint32_t cap = r->cap_chunks, max = r->max_chunks;
    memset(r, 0, sizeof *r);
    r->chunks = chunks;
    r->cap_chunks = cap;
    r->max_chunks = max;
}

void lt_replay_resp_release(struct lt_replay_resp *r)
{
    free(r->chunks);
    memset(r, 0, sizeof *r);
}

static void add_chunk(struct lt_replay_resp *r, lt_mono t, uint32_t tokens)
{
    r->counted += tokens;
    if (r->n_chunks == r->max_chunks || r->oom) {
        if (r->n_chunks)
            r->chunks[r->n_chunks - 1].tokens += tokens;
        return;
    }
    if (r->n_chunks == r->cap_chunks) {
        uint32_t cap = r->cap_chunks ? r->cap_chunks * 2 : 32;
        if (cap > r->max_chunks)
            cap = r->max_chunks;
        struct lt_replay_chunk *c = realloc(r->chunks, cap * sizeof *c);
        if (!c) {
            r->oom = true;
            if (r->n_chunks)
                r->chunks[r->n_chunks - 1].tokens += tokens;
            return;
        }
        r->chunks = c;
        r->cap_chunks = cap;
    }
    r->chunks[r->n_chunks].t = t;
    r->chunks[r->n_chunks].tokens = tokens;
    r->n_chunks++;
}

static uint32_t u32_of(json_t *v)
{
    if (!json_is_integer(v))
        return 0;
    json_int_t x = json_integer_value(v);
    return x < 0 ? 0 : x > (json_int_t)UINT32_MAX ? UINT32_MAX : (uint32_t)x;
}

static bool nonempty_str(json_t *v)
{
    return json_is_string(v) && json_string_length(v) > 0;
}

static void set_finish(struct lt_replay_resp *r, json_t *v)
{
    if (json_is_object(v)) /* SGLang: {"type": "length", ...} */
        v = json_object_get(v, "type");
    if (!json_is_string(v))
        return;
    snprintf(r->finish, sizeof r->finish, "%s", json_string_value(v));
    r->has_finish = true;
}

/* Usage object (OpenAI) or SGLang's meta_info: remember the counts. Returns
 * whether it carried a completion count. */
static bool read_usage(struct lt_replay_resp *r, json_t *u)
{
    if (!json_is_object(u))
        return false;
    json_t *ct = json_object_get(u, "completion_tokens");
    if (!json_is_integer(ct))
        return false;
    r->has_usage = true;
    r->usage_events++;
    r->out = u32_of(ct);
    r->in = u32_of(json_object_get(u, "prompt_tokens"));
    json_t *d = json_object_get(u, "completion_tokens_details");
    if (json_is_object(d))
        r->reasoning = u32_of(json_object_get(d, "reasoning_tokens"));
    json_t *rt = json_object_get(u, "reasoning_tokens");
    if (json_is_integer(rt))
        r->reasoning = u32_of(rt);
    d = json_object_get(u, "prompt_tokens_details");
    if (json_is_object(d))
        r->cached = u32_of(json_object_get(d, "cached_tokens"));
    json_t *c = json_object_get(u, "cached_tokens");
    if (json_is_integer(c))
        r->cached = u32_of(c);
    return true;
}

/* One parsed chunk or body. `whole` is a non-streamed body. */
static void interpret(struct lt_replay_resp *r, json_t *root, lt_mono now, bool whole)
{
    bool content = false, reasoning = false;
    if (json_object_get(root, "error"))
        r->error_event = true;
    uint32_t before = r->last_usage_out;
    bool had_usage = r->usage_events > 0;
    bool usage_here = read_usage(r, json_object_get(root, "usage"));

    json_t *meta = json_object_get(root, "meta_info");
    if (json_is_object(meta)) { /* SGLang /generate */
        usage_here = read_usage(r, meta) || usage_here;
        json_t *text = json_object_get(root, "text");
        if (json_is_string(text) && json_string_length(text) > r->sglang_text_len) {
            content = true;
            r->sglang_text_len = json_string_length(text);
        }
        set_finish(r, json_object_get(meta, "finish_reason"));
    }

    json_t *choices = json_object_get(root, "choices");
    json_t *c0 = json_is_array(choices) ? json_array_get(choices, 0) : NULL;
    if (json_is_object(c0)) {
        json_t *d = json_object_get(c0, whole ? "message" : "delta");
        if (json_is_object(d)) {
            if (nonempty_str(json_object_get(d, "content")))
                content = true;
            json_t *tc = json_object_get(d, "tool_calls");
            if (json_is_array(tc) && json_array_size(tc) > 0)
                content = true;
            if (nonempty_str(json_object_get(d, "reasoning_content")) ||
                nonempty_str(json_object_get(d, "reasoning")))
                reasoning = true;
        }
        if (nonempty_str(json_object_get(c0, "text"))) /* /v1/completions */
            content = true;
        set_finish(r, json_object_get(c0, "finish_reason"));
    }

    if (whole) {
        uint32_t n = r->has_usage ? r->out : (content || reasoning ? 1 : 0);
        if (n) {
            add_chunk(r, now, n);
            r->first_token = r->first_content = now;
            r->has_first_token = r->has_first_content = true;
        }
        return;
    }
    if (usage_here)
        r->last_usage_out = r->out;
    if (!content && !reasoning)
        return;
    uint32_t tokens = 1;
    if (usage_here && had_usage) {
        /* A running count seen before this chunk too: exact per-chunk
         * tokens (vLLM continuous_usage_stats, SGLang meta_info). */
        r->chunk_usage = true;
        tokens = r->out > before ? r->out - before : 1;
    } else if (usage_here && r->n_chunks == 0 && r->counted == 0) {
        /* The first token chunk carries the first running count. */
        tokens = r->out ? r->out : 1;
    }
    add_chunk(r, now, tokens);
    if (!r->has_first_token) {
        r->first_token = now;
        r->has_first_token = true;
    }
    if (content && !r->has_first_content) {
        r->first_content = now;
        r->has_first_content = true;
    }
    if (reasoning && !content)
        r->counted_reasoning += tokens;
}

int lt_replay_resp_event(struct lt_replay_resp *r, const char *data, size_t len, lt_mono now)
{
    while (len && (data[len - 1] == ' ' || data[len - 1] == '\t'))
        len--;
    if (len == 6 && !memcmp(data, "[DONE]", 6)) {
        r->done = true;
        return 0;
    }
    json_t *root = json_loadb(data, len, 0, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        return LT_EFORMAT;
    }
    interpret(r, root, now, false);
    json_decref(root);
    return 0;
}

int lt_replay_resp_body(struct lt_replay_resp *r, const char *body, size_t len, lt_mono t)
{
    json_t *root = json_loadb(body, len, 0, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        return LT_EFORMAT;
    }
    interpret(r, root, t, true);
    json_decref(root);
    return 0;
}

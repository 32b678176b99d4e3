/*
 * libFuzzer target for everything the sim parses from a peer or a user:
 * the first byte picks the parser (chat body, also read as a Responses and
 * a Messages body; completions body, /tokenize
 * body, fault spec, dialect list, profile line), the rest is the input.
 * Bodies that parse are also rendered, streamed and whole, so the renderer
 * sees every shape of request. No input may crash, leak or overflow.
 */
#include "sim/sim_api.h"
#include "sim/sim_faults.h"
#include "sim/sim_profile.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void render(const struct lt_sim_call *c, const struct lt_sim_dialect *d, uint8_t faults)
{
    uint32_t out = c->max_tokens < 40 ? c->max_tokens : 40;
    struct lt_sim_resp r = {.d = d,
                            .api = c->api,
                            .id = "x-1",
                            .created = 1,
                            .model_json = c->model_json,
                            .seq = 1,
                            .prompt_tokens = c->toks.n,
                            .out = out ? out : 1,
                            .reasoning = out > 2 ? 1 : 0,
                            .tool_call = c->tool_call,
                            .tool_name_json = c->tool_name_json,
                            .finish = "stop",
                            .include_usage = c->include_usage,
                            /* the faults that keep the JSON valid */
                            .bad_choices = (faults & 0x80) != 0,
                            .bad_choices_at = 1,
                            .claim = (faults & 0x20) != 0,
                            .claimed_out = UINT64_MAX,
                            .image_tokens = c->image_tokens,
                            .inputs = c->inputs,
                            .top_n = c->top_n,
                            .embed_dim = 4};
    struct lt_buf b;
    lt_buf_init(&b, 1 << 20);
    lt_sim_render_head(&b, &r);
    for (uint32_t i = 0; i < r.out; i++)
        lt_sim_render_token(&b, &r, i, i == 2);
    lt_sim_render_tail(&b, &r);
    lt_buf_reset(&b);
    lt_sim_render_full(&b, &r);
    lt_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    struct lt_sim_profile p;
    lt_sim_profile_builtin(&p, "default", NULL);
    p.link_fetch = 0; /* an input's loopback link must not make the fuzzer wait on a socket */
    p.max_model_len = 4096;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    char msg[512];
    char *text = malloc(len + 1);
    if (!text)
        return 0;
    memcpy(text, body, len);
    text[len] = '\0';
    struct lt_err err = {0};
    switch (data[0] % 6) {
    case 0:
    case 1: {
        struct lt_sim_call c;
        enum lt_sim_api api = data[0] % 6 == 0 ? LT_SIM_CHAT : LT_SIM_COMPLETIONS;
        if (lt_sim_call_parse(&c, api, body, len, &p, msg, sizeof msg) == 0) {
            struct lt_sim_dialect d;
            lt_sim_dialect_parse(
                &d, (data[0] & 0x40) ? "no-role-chunk,usage-in-last,reasoning" : "vllm", NULL);
            render(&c, &d, data[0]);
        }
        lt_sim_call_release(&c);
        /* A chat-shaped body is also a Responses and a Messages body (and
         * any body an embeddings and a rerank one). */
        static const enum lt_sim_api more[] = {LT_SIM_RESPONSES, LT_SIM_MESSAGES, LT_SIM_EMBEDDINGS,
                                               LT_SIM_RERANK};
        for (int k = 0; api == LT_SIM_CHAT && k < 4; k++) {
            struct lt_sim_dialect d = {0};
            if (lt_sim_call_parse(&c, more[k], body, len, &p, msg, sizeof msg) == 0)
                render(&c, &d, data[0]);
            lt_sim_call_release(&c);
        }
        break;
    }
    case 2: {
        struct lt_buf b;
        lt_buf_init(&b, 1 << 20);
        lt_sim_tokenize(&b, body, len, &p, msg, sizeof msg);
        lt_buf_release(&b);
        break;
    }
    case 3: {
        struct lt_sim_faults f;
        if (lt_sim_faults_parse(&f, text, &err) == 0)
            for (uint64_t s = 0; s < 8; s++)
                (void)lt_sim_faults_pick(&f, s);
        break;
    }
    case 4: {
        struct lt_sim_dialect d;
        lt_sim_dialect_parse(&d, text, &err);
        break;
    }
    default: {
        char *eq = strchr(text, '=');
        if (eq) {
            *eq = '\0';
            lt_sim_profile_set(&p, text, eq + 1, &err);
            lt_sim_profile_check(&p, &err);
        }
        break;
    }
    }
    free(text);
    return 0;
}

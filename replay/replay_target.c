/*
 * The steps of a live replay that ask the target before the run, which the
 * caller runs explicitly (lt_replay_prepare): which model it serves (GET
 * /v1/models), and what a synthesized word, a request and a message cost
 * in tokens there (its /tokenize, or the usage of one-token requests).
 */
#include "replay/replay_internal.h"

#include "traces/trace_json.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GET /v1/models with h's settings, within timeout_ms: the names served
 * (at most max), their count, or a negative code. w, when not NULL, takes
 * what the first model's entry says of the server (its vocabulary and
 * context), so that the server's word costs no second request. */
static int list_models(const struct lt_replay_http *h, long timeout_ms, char (*names)[128], int max,
                       struct lt_replay_word *w, struct lt_err *err)
{
    int rc = 0;
    struct lt_buf body;
    lt_buf_init(&body, (size_t)4 << 20);
    json_t *root = NULL;
    long status = 0;
    LT_TRY(lt_replay_http_do(h, "/v1/models", NULL, &body, &status, timeout_ms, err));
    if (status != 200) {
        rc = lt_errset(err, LT_EFORMAT, "GET /v1/models answered HTTP %ld", status);
        goto out;
    }
    root = json_loadb(body.p ? body.p : "", body.len, 0, NULL);
    json_t *data = json_object_get(root, "data");
    if (!json_is_array(data)) {
        rc = lt_errset(err, LT_EFORMAT, "GET /v1/models: no \"data\" list in the answer");
        goto out;
    }
    if (w)
        lt__replay_word_models(w, root);
    size_t i;
    json_t *m;
    json_array_foreach(data, i, m)
    {
        json_t *id = json_object_get(m, "id");
        if (json_is_string(id) && rc < max)
            snprintf(names[rc++], 128, "%s", json_string_value(id));
    }
out:
    json_decref(root);
    lt_buf_release(&body);
    return rc;
}

int lt_replay_list_models(const char *base, const char *api_key, bool insecure, char (*names)[128],
                          int max, struct lt_err *err)
{
    int rc = 0;
    struct lt_replay_http h = {.base = base, .insecure = insecure, .connect_timeout_ms = 10000};
    LT_TRY(lt_replay_http_headers(&h.headers, api_key, NULL, 0, err));
    rc = list_models(&h, 30000, names, max, NULL, err);
out:
    curl_slist_free_all(h.headers);
    return rc;
}

/* The probe's wait, said once a second has gone by and every five after,
 * so a server that accepts and does not answer is not a silent hang. */
struct probe_wait {
    struct lt_replay *rp;
    long limit_ms;
};

static int probe_waiting(void *ud, long ms)
{
    struct probe_wait *w = ud;
    if (w->rp->stop)
        return 1; /* stopped (SIGINT): abandon the probe */
    if (w->rp->o.note && (ms < 2000 || ms / 1000 % 5 == 0)) {
        char line[1400];
        snprintf(line, sizeof line,
                 "waiting for %s to answer GET /v1/models (which model it serves): %ld s of at "
                 "most %ld s (--timeout, --connect-timeout; --model NAME skips this)",
                 w->rp->label, ms / 1000, w->limit_ms / 1000);
        w->rp->o.note(w->rp->o.note_ud, line);
    }
    return 0;
}

/* The longest the model list may take (less when --timeout says less): it
 * is one small answer, not a generation. */
#define PROBE_TIMEOUT_MS 30000

int lt__replay_find_model(struct lt_replay *rp, struct lt_err *err)
{
    /* The user named the model: nothing to ask (a gateway may not list
     * models, and a target that does not answer should not hold the run
     * back before its first request). */
    if (rp->o.model) {
        snprintf(rp->model, sizeof rp->model, "%s", rp->o.model);
        return 0;
    }
    char names[32][128];
    struct lt_err e = {0};
    long limit_ms = PROBE_TIMEOUT_MS;
    if (rp->o.timeout_us && rp->o.timeout_us / 1000 < limit_ms)
        limit_ms = rp->o.timeout_us / 1000 > 0 ? (long)(rp->o.timeout_us / 1000) : 1;
    struct probe_wait pw = {.rp = rp, .limit_ms = limit_ms};
    struct lt_replay_http h = rp->http; /* its headers, TLS, proxy and connect timeout */
    h.waiting = probe_waiting;
    h.waiting_ud = &pw;
    int n = list_models(&h, limit_ms, names, 32, &rp->word, &e);
    if (n < 0)
        return lt_errset(err, n, "cannot discover the model of %s (%s); give --model", rp->label,
                         e.msg);
    if (n != 1)
        return lt_errset(err, LT_EINVAL,
                         "%s serves %d models; say which one with --model (e.g. '%s')", rp->label,
                         n, n ? names[0] : "NAME");
    snprintf(rp->model, sizeof rp->model, "%s", names[0]);
    return 0;
}

/* How a prompt's tokens are counted: the server's /tokenize, Anthropic's
 * /v1/messages/count_tokens, or the usage of a one-token request through
 * the endpoint the run uses (its template as the run will meet it). */
enum count_by { BY_TOKENIZE, BY_COUNT_TOKENS, BY_USAGE };

static const char *count_path(const struct lt_replay *rp, enum count_by by)
{
    return by == BY_TOKENIZE       ? "/tokenize"
           : by == BY_COUNT_TOKENS ? "/v1/messages/count_tokens"
                                   : lt_replay_api_path(rp->build.api);
}

/* The turns of a probe in the API's own shape, as lt_replay_build_body
 * writes them: n texts, the last a user's and those before it system
 * turns (Messages: its "system" blocks). */
static int probe_turns(struct lt_buf *body, enum lt_replay_api api, enum count_by by,
                       const char *const *texts, int n)
{
    int rc = 0;
    if (api == LT_REPLAY_API_MESSAGES && by != BY_TOKENIZE) {
        for (int m = 0; m + 1 < n && rc == 0; m++) {
            rc = lt_buf_puts(body, m ? ",{\"type\":\"text\",\"text\":"
                                     : ",\"system\":[{\"type\":\"text\",\"text\":");
            if (rc == 0)
                rc = lt_json_str(body, texts[m], strlen(texts[m]));
            if (rc == 0)
                rc = lt_buf_puts(body, m + 2 < n ? "}" : "}]");
        }
        if (rc == 0)
            rc = lt_buf_puts(body,
                             ",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
                             "\"text\":");
        if (rc == 0)
            rc = lt_json_str(body, texts[n - 1], strlen(texts[n - 1]));
        return rc ? rc : lt_buf_puts(body, "}]}]");
    }
    bool input = api == LT_REPLAY_API_RESPONSES && by == BY_USAGE;
    rc = lt_buf_puts(body, input ? ",\"input\":[" : ",\"messages\":[");
    for (int m = 0; m < n && rc == 0; m++) {
        rc = lt_buf_printf(body, "%s{%s\"role\":\"%s\",\"content\":", m ? "," : "",
                           input ? "\"type\":\"message\"," : "", m + 1 < n ? "system" : "user");
        if (rc == 0)
            rc = lt_json_str(body, texts[m], strlen(texts[m]));
        if (rc == 0)
            rc = lt_buf_puts(body, "}");
    }
    return rc ? rc : lt_buf_puts(body, "]");
}

/* Prompt tokens of a prompt of n texts (chat-like APIs: one turn each, the
 * last a user's; otherwise texts[0] as the prompt), counted `by`:
 * /tokenize (vLLM's {"prompt"} or {"messages"} with the chat template
 * applied, answering {"count", "tokens"}; llama.cpp's {"content"},
 * answering {"tokens"}), count_tokens ({"input_tokens"}), or the usage of
 * a real request with one output token, read by the API's own rule. With
 * special false, /tokenize is asked not to add BOS and the like, and *ids
 * (when not NULL) receives the ids it listed (malloc'd, *n_ids of them).
 * Returns tokens or a negative code. */
static long count_prompt(struct lt_replay *rp, enum count_by by, const char *const *texts, int n,
                         bool special, uint32_t **ids, size_t *n_ids, struct lt_buf *body,
                         struct lt_buf *resp, struct lt_err *err)
{
    int rc = 0;
    json_t *root = NULL;
    enum lt_replay_api api = rp->build.api;
    bool chat = lt_replay_api_chat_like(api) && !ids, tokenize = by == BY_TOKENIZE;
    const char *sp = special ? "true" : "false";
    lt_buf_reset(body);
    LT_TRY(lt_buf_puts(body, "{\"model\":"));
    LT_TRY(lt_json_str(body, rp->model, strlen(rp->model)));
    if (chat) {
        LT_TRY(probe_turns(body, api, by, texts, n));
    } else {
        LT_TRY(lt_buf_puts(body, tokenize ? ",\"content\":" : ",\"prompt\":"));
        LT_TRY(lt_json_str(body, texts[0], strlen(texts[0])));
        if (tokenize) {
            LT_TRY(lt_buf_puts(body, ",\"prompt\":"));
            LT_TRY(lt_json_str(body, texts[0], strlen(texts[0])));
            LT_TRY(lt_buf_printf(body, ",\"add_special_tokens\":%s,\"add_special\":%s", sp, sp));
        }
    }
    if (tokenize && chat)
        LT_TRY(lt_buf_puts(body, ",\"add_generation_prompt\":true}"));
    else if (by != BY_USAGE)
        LT_TRY(lt_buf_puts(body, "}"));
    else
        LT_TRY(lt_buf_printf(body, ",\"%s\":1,\"stream\":false}",
                             api == LT_REPLAY_API_RESPONSES ? "max_output_tokens" : "max_tokens"));
    long status = 0;
    LT_TRY(lt_replay_http_do(&rp->http, count_path(rp, by), body->p, resp, &status, 15000, err));
    if (status != 200) {
        rc = lt_errset(err, LT_EFORMAT, "%s answered HTTP %ld",
                       by == BY_USAGE ? "the calibration probe" : count_path(rp, by), status);
        goto out;
    }
    if (by != BY_USAGE) {
        root = json_loadb(resp->p ? resp->p : "", resp->len, 0, NULL);
        json_t *count = json_object_get(root, tokenize ? "count" : "input_tokens"),
               *toks = json_object_get(root, "tokens");
        long c = json_is_integer(count) ? (long)json_integer_value(count)
                 : json_is_array(toks)  ? (long)json_array_size(toks)
                                        : -1;
        if (c <= 0) {
            rc = lt_errset(err, LT_EFORMAT,
                           tokenize ? "/tokenize: no \"count\" or \"tokens\" in the answer"
                                    : "count_tokens: no \"input_tokens\" in the answer");
            goto out;
        }
        if (ids && json_is_array(toks)) {
            size_t k;
            json_t *v;
            *ids = malloc((json_array_size(toks) + 1) * sizeof **ids);
            if (!*ids) {
                rc = lt_errset(err, LT_ENOMEM, "out of memory");
                goto out;
            }
            *n_ids = 0;
            json_array_foreach(toks, k, v)
            {
                if (json_is_integer(v) && json_integer_value(v) >= 0 &&
                    json_integer_value(v) <= (json_int_t)UINT32_MAX)
                    (*ids)[(*n_ids)++] = (uint32_t)json_integer_value(v);
            }
        }
        rc = (int)(c < INT32_MAX ? c : INT32_MAX);
        goto out;
    }
    struct lt_wire_resp r;
    lt_wire_resp_init(&r, 4);
    rc = lt_wire_resp_body(&r, resp->p ? resp->p : "", resp->len, lt_mono_now());
    bool has = r.has_usage;
    uint32_t in = r.in;
    lt_wire_resp_release(&r);
    if (rc < 0 || !has || !in || !lt__replay_prompt_plausible(in, body->len)) {
        rc = lt_errset(err, LT_EFORMAT,
                       "calibration probe: no plausible prompt count in the answer's usage");
        goto out;
    }
    rc = (int)in;
out:
    json_decref(root);
    return rc;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The token ids an id prompt may use: those the server's /tokenize lists
 * for the synthesized words (each distinct id once, in rp->tok_ids).
 * Without a /tokenize that lists ids, none: prompts are then text, since
 * an id the server has not shown valid may be outside its vocabulary. */
static int learn_ids(struct lt_replay *rp, struct lt_buf *body, struct lt_buf *resp,
                     struct lt_err *err)
{
    int rc = 0;
    uint32_t *ids = NULL;
    size_t n = 0;
    lt_buf_reset(resp);
    struct lt_buf text;
    lt_buf_init(&text, 1 << 16);
    for (unsigned w = 0; w < LT_REPLAY_N_WORDS && rc == 0; w++)
        rc = lt_buf_printf(&text, "%s%s", w ? " " : "", lt_replay_word(w));
    if (rc == 0) {
        const char *t = text.p;
        rc = (int)count_prompt(rp, BY_TOKENIZE, &t, 1, false, &ids, &n, body, resp, err);
    }
    lt_buf_release(&text);
    if (rc < 0 || !ids || !n) {
        free(ids);
        return rc < 0 ? rc : lt_errset(err, LT_EFORMAT, "/tokenize listed no token ids");
    }
    qsort(ids, n, sizeof *ids, cmp_u32);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || ids[i] != ids[u - 1])
            ids[u++] = ids[i];
    free(rp->tok_ids);
    rp->tok_ids = ids;
    rp->build.ids = ids;
    rp->build.n_ids = u;
    return 0;
}

/* Tokens of each synthesized word on this server, from the counts of
 * "w0" and "w0 w w w w" (a BOS or template the server adds cancels out):
 * 129 counts by /tokenize, count_tokens, or one-token requests. A word
 * whose four copies do not cost four times one (the tokenizer merged
 * across them) is off by the rest: the largest such, per word, is
 * *word_err. */
static int learn_word_costs(struct lt_replay *rp, enum count_by by, struct lt_buf *body,
                            struct lt_buf *resp, double *word_err, struct lt_err *err)
{
    char text[64];
    const char *t = text;
    snprintf(text, sizeof text, "%s", lt_replay_word(LT_REPLAY_FIRST_WORD));
    long base = count_prompt(rp, by, &t, 1, true, NULL, NULL, body, resp, err);
    if (base <= 0)
        return base < 0 ? (int)base : LT_EFORMAT;
    *word_err = 0;
    for (unsigned w = 0; w < LT_REPLAY_N_WORDS; w++) {
        const char *x = lt_replay_word(w);
        snprintf(text, sizeof text, "%s %s %s %s %s", lt_replay_word(LT_REPLAY_FIRST_WORD), x, x, x,
                 x);
        long c = count_prompt(rp, by, &t, 1, true, NULL, NULL, body, resp, err);
        if (c < 0)
            return (int)c;
        long cost = (c - base + 2) / 4;
        if (cost < 1 || cost > 31)
            return lt_errset(err, LT_EFORMAT, "word '%s' counts %ld tokens", x, cost);
        rp->build.calib.word_cost[w] = (uint8_t)cost;
        double off = fabs((double)(c - base - 4 * cost)) / 4.0;
        if (off > *word_err)
            *word_err = off;
    }
    return 0;
}

/* Tokens of words [pos, pos + n) of the calibration prompt, a text of
 * its own (its first word the fixed one). */
static double cost_of(const struct lt_replay *rp, const struct lt_plan_job *job, uint32_t pos,
                      uint32_t n)
{
    double c = 0;
    for (uint32_t j = pos; j < pos + n; j++)
        c +=
            rp->build.calib
                .word_cost[j == pos ? LT_REPLAY_FIRST_WORD : lt_replay_word_at(&rp->build, job, j)];
    return c;
}

/* Prompt tokens of `msgs` turns (chat-like APIs) of `words` synthesized
 * words each, from word position `from`. */
static long probe(struct lt_replay *rp, enum count_by by, int msgs, uint32_t from, uint32_t words,
                  const struct lt_plan_job *job, struct lt_buf *body, struct lt_buf *resp,
                  struct lt_err *err)
{
    struct lt_buf t[2];
    const char *texts[2];
    long rc = 0;
    for (int m = 0; m < 2; m++) {
        lt_buf_init(&t[m], (size_t)1 << 20);
        if (m < msgs && rc == 0)
            rc = lt_replay_words(&t[m], &rp->build, job, from + (uint32_t)m * words, words);
        texts[m] = t[m].p ? t[m].p : "";
    }
    if (rc == 0)
        rc = count_prompt(rp, by, texts, msgs, true, NULL, NULL, body, resp, err);
    for (int m = 0; m < 2; m++)
        lt_buf_release(&t[m]);
    return rc;
}

/* The ways this API's prompts can be counted, best first: a counting
 * endpoint that applies the same template, then the usage of the API's
 * own endpoint. Responses has no counting endpoint anywhere: its template
 * (the input items, as converted) is met only through /v1/responses. */
static int count_ways(enum lt_replay_api api, enum count_by *by)
{
    int n = 0;
    if (api == LT_REPLAY_API_MESSAGES)
        by[n++] = BY_COUNT_TOKENS; /* llama.cpp, vLLM and Anthropic have it */
    else if (api != LT_REPLAY_API_RESPONSES)
        by[n++] = BY_TOKENIZE;
    by[n++] = BY_USAGE;
    return n;
}

/* Learn what the server's tokenizer makes of prompts: the token ids an id
 * prompt may use (its /tokenize); what each synthesized word costs; what a
 * request and a message add (three prompts: 64 words, 128 words, and two
 * messages of 64). Each count is taken the first way this API offers
 * (count_ways); by usage, the closed loop then corrects what the probes
 * missed from each response's usage. A fourth prompt (128 other words),
 * predicted from what was learned and then counted, measures how far the
 * lengths may be off (calib.err). */
void lt__replay_calibrate(struct lt_replay *rp)
{
    struct lt_replay_calib *c = &rp->build.calib;
    *c = (struct lt_replay_calib){.tok_per_word = 1.0, .err = -1};
    struct lt_buf body, resp;
    lt_buf_init(&body, (size_t)1 << 20);
    lt_buf_init(&resp, (size_t)1 << 20);
    struct lt_err e = {0};
    if (lt_replay_api_takes_ids(rp->build.api) && rp->build.token_ids) {
        if (learn_ids(rp, &body, &resp, &e) == 0) {
            c->err = 0;
            snprintf(rp->st.calib_how, sizeof rp->st.calib_how,
                     "exact (token ids: %zu the server's /tokenize produced)", rp->build.n_ids);
            goto out;
        }
        /* No ids shown valid: text prompts, calibrated below. */
    }
    if (rp->o.no_calibrate) {
        snprintf(rp->st.calib_how, sizeof rp->st.calib_how, "not calibrated (--no-calibrate)");
        goto out;
    }
    if (rp->build.api == LT_REPLAY_API_SGLANG) {
        snprintf(rp->st.calib_how, sizeof rp->st.calib_how, "not calibrated (SGLang text)");
        goto out;
    }
    const struct lt_plan_job job = {.index = 0x70726f6265ULL, .prev = -1};
    long p1 = -1, p2 = -1, p3 = -1;
    bool chat = lt_replay_api_chat_like(rp->build.api);
    enum count_by ways[3], by = BY_USAGE;
    int n_ways = count_ways(rp->build.api, ways);
    char why[96] = "probes disagree";
    for (int k = 0; k < n_ways; k++) {
        by = ways[k];
        lt_err_clear(&e);
        p1 = probe(rp, by, 1, 0, 64, &job, &body, &resp, &e);
        p2 = p1 > 0 ? probe(rp, by, 1, 0, 128, &job, &body, &resp, &e) : -1;
        p3 = p2 > 0 && chat ? probe(rp, by, 2, 0, 64, &job, &body, &resp, &e) : 0;
        if (p1 > 0 && p2 > p1 && p3 >= 0)
            break;
        if (e.msg[0])
            snprintf(why, sizeof why, "%.90s", e.msg);
    }
    if (p1 <= 0 || p2 <= p1 || p3 < 0) {
        snprintf(rp->st.calib_how, sizeof rp->st.calib_how, "not calibrated (%.60s)", why);
        goto out;
    }
    const char *how = by == BY_TOKENIZE       ? "/tokenize"
                      : by == BY_COUNT_TOKENS ? "count_tokens"
                                              : "usage probes";
    double tpw = (double)(p2 - p1) / 64.0, c1 = 64.0 * tpw, c2 = 64.0 * tpw, word_err = 0;
    if (learn_word_costs(rp, by, &body, &resp, &word_err, &e) == 0) {
        c->exact_words = true;
        c1 = cost_of(rp, &job, 0, 64);
        c2 = cost_of(rp, &job, 64, 64);
        tpw = 0;
        for (unsigned w = 0; w < LT_REPLAY_N_WORDS; w++)
            tpw += c->word_cost[w];
        tpw /= LT_REPLAY_N_WORDS;
    }
    c->tok_per_word = tpw;
    if (chat) {
        c->per_message = (double)p3 - (double)p1 - c2;
        c->per_request = (double)p1 - c->per_message - c1;
    } else {
        c->per_request = (double)p1 - c1;
    }
    if (c->per_message < 0)
        c->per_message = 0;
    if (c->per_request < 0)
        c->per_request = 0;
    c->calibrated = true;
    c->closed_loop = by == BY_USAGE;
    /* The check: 128 words not probed yet, as the model predicts them. */
    long p4 = probe(rp, by, 1, 128, 128, &job, &body, &resp, &e);
    double want4 = c->per_request + c->per_message +
                   (c->exact_words ? cost_of(rp, &job, 128, 128) : 128.0 * tpw);
    c->err = p4 > 0 ? fabs((double)p4 - want4) : -1;
    c->err_rel = p4 > 0 ? c->err / (double)p4 : -1;
    c->word_err = word_err;
    char errs[96] = "";
    int k = 0;
    if (c->err >= 0)
        k = snprintf(errs, sizeof errs, "; check: %.0f of %ld tokens off", c->err, p4);
    if (word_err > 0 && k >= 0 && (size_t)k < sizeof errs) /* merges across copies of a word */
        snprintf(errs + k, sizeof errs - (size_t)k, "; a word up to %.2f tokens off", word_err);
    snprintf(rp->st.calib_how, sizeof rp->st.calib_how,
             "%s%s: %.3f tokens/word%s, +%.1f per request, +%.1f per message%s", how,
             c->exact_words ? " (word by word)" : "", tpw, c->closed_loop ? ", closed loop" : "",
             c->per_request, c->per_message, errs);
out:
    lt_buf_release(&body);
    lt_buf_release(&resp);
}

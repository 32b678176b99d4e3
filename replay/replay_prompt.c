/*
 * Request bodies, written by hand into an lt_buf (one pass, no JSON tree):
 * building a body is on the per-request path of a benchmark client, and the
 * shapes are fixed. Strings from outside (recorded text, corpus, model
 * name) go through lt_json_str, which escapes them.
 */
#include "replay/replay_prompt.h"
#include "replay/replay_jobs.h"

#include "traces/lt_rng.h"
#include "traces/trace_json.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* Short common English words: one token each in the usual BPE tokenizers
 * (with their leading space), and at most 4 bytes so the sim's rule counts
 * each as one token too. 128 of them: 7 bits of variety per word. */
static const char *const words[128] = {
    "the",  "of",   "and",  "to",   "in",   "is",   "you",  "that", "it",   "he",   "was",  "for",
    "on",   "are",  "as",   "with", "his",  "they", "at",   "be",   "this", "have", "from", "or",
    "one",  "had",  "by",   "word", "but",  "not",  "what", "all",  "were", "we",   "when", "your",
    "can",  "said", "use",  "an",   "each", "she",  "do",   "how",  "if",   "will", "up",   "out",
    "many", "then", "them", "so",   "some", "her",  "make", "like", "him",  "into", "time", "has",
    "look", "two",  "more", "go",   "see",  "no",   "way",  "my",   "than", "been", "call", "who",
    "its",  "now",  "find", "long", "down", "day",  "did",  "get",  "come", "made", "may",  "part",
    "over", "new",  "take", "only", "work", "know", "year", "live", "me",   "back", "give", "most",
    "very", "good", "man",  "our",  "just", "name", "box",  "old",  "any",  "same", "tell", "boy",
    "set",  "put",  "end",  "does", "land", "big",  "high", "such", "act",  "why",  "ask",  "men",
    "read", "need", "hand", "home", "us",   "move", "try",  "kind",
};

const char *lt_replay_api_path(enum lt_replay_api api)
{
    switch (api) {
    case LT_REPLAY_API_COMPLETIONS:
        return "/v1/completions";
    case LT_REPLAY_API_SGLANG:
        return "/generate";
    case LT_REPLAY_API_CHAT:
        break;
    }
    return "/v1/chat/completions";
}

/* Seed of prompt position pos (in words or token ids). */
static uint64_t seed_at(const struct lt_replay_build *b, const struct lt_replay_job *job,
                        uint32_t pos)
{
    if (job->n_blocks) {
        double per_block = (double)(b->block_tokens ? b->block_tokens : LT_DEFAULT_BLOCK_TOKENS);
        if (!b->token_ids && b->calib.tok_per_word > 0)
            per_block /= b->calib.tok_per_word;
        uint64_t blk = (uint64_t)((double)pos / (per_block > 1 ? per_block : 1));
        if (blk < job->n_blocks)
            return lt_mix64(job->blocks[blk] ^ b->salt) ^ 0x5bd1e995u;
        /* Past the recorded blocks: unique to this request. */
        return lt_mix64(job->index ^ lt_mix64(b->salt ^ 0xb10c));
    }
    if (job->has & LT_HAS_SESSION)
        return lt_mix64(job->session ^ lt_mix64(b->salt ^ 0x5e55));
    return lt_mix64(job->index ^ lt_mix64(b->salt ^ 0x1d));
}

int lt_replay_words(struct lt_buf *out, const struct lt_replay_build *b,
                    const struct lt_replay_job *job, uint32_t pos, uint32_t n)
{
    int rc = lt_buf_reserve(out, (size_t)n * 5 + 1);
    if (rc < 0)
        return rc;
    for (uint32_t j = 0; j < n; j++) {
        uint64_t h = lt_mix64(seed_at(b, job, pos + j) + (uint64_t)(pos + j) * 0x9e3779b97f4a7c15u);
        const char *w = words[h & 127];
        size_t len = strlen(w);
        if (j)
            out->p[out->len++] = ' ';
        memcpy(out->p + out->len, w, len);
        out->len += len;
    }
    out->p[out->len] = '\0';
    return 0;
}

static int ids(struct lt_buf *out, const struct lt_replay_build *b, const struct lt_replay_job *job,
               uint32_t n)
{
    int rc = lt_buf_puts(out, "[");
    for (uint32_t j = 0; j < n && rc == 0; j++) {
        uint64_t h = lt_mix64(seed_at(b, job, j) + (uint64_t)j * 0x9e3779b97f4a7c15u);
        rc = lt_buf_printf(out, j ? ",%u" : "%u", (unsigned)(1000 + h % 30000));
    }
    return rc ? rc : lt_buf_puts(out, "]");
}

/* Words for `tokens` tokens at the calibrated rate. */
static uint32_t words_for(const struct lt_replay_build *b, double tokens)
{
    double tpw = b->calib.tok_per_word > 0 ? b->calib.tok_per_word : 1.0;
    double w = floor(tokens / tpw + 0.5);
    return w < 1 ? 1 : w > 4e6 ? 4000000u : (uint32_t)w;
}

/* A JSON string of n synthesized words starting at word position *pos. */
static int words_str(struct lt_buf *out, const struct lt_replay_build *b,
                     const struct lt_replay_job *job, uint32_t *pos, uint32_t n)
{
    int rc = lt_buf_puts(out, "\"");
    if (rc == 0)
        rc = lt_replay_words(out, b, job, *pos, n);
    *pos += n;
    return rc ? rc : lt_buf_puts(out, "\"");
}

/* A corpus text cut to about `tokens` tokens (4 bytes a token, at a word
 * boundary); whole if shorter. */
static int corpus_str(struct lt_buf *out, const char *s, double tokens)
{
    size_t len = strlen(s), cut = (size_t)(tokens > 0 ? tokens * 4 : 4);
    if (cut < len) {
        while (cut > 0 && s[cut] != ' ' && s[cut] != '\n')
            cut--;
        if (cut == 0)
            cut = (size_t)(tokens * 4);
        len = cut;
    }
    return lt_json_str(out, s, len);
}

static int tools_json(struct lt_buf *out, const struct lt_replay_build *b,
                      const struct lt_replay_job *job, uint32_t *pos)
{
    /* Structure costs about 24 tokens a tool; the description fills the
     * rest of the recorded size. */
    int rc = lt_buf_puts(out, ",\"tools\":[");
    uint32_t each = job->tools_tokens / job->tools_count;
    for (uint32_t k = 0; k < job->tools_count && rc == 0; k++) {
        rc = lt_buf_printf(out,
                           "%s{\"type\":\"function\",\"function\":{\"name\":\"tool_%u\","
                           "\"description\":",
                           k ? "," : "", (unsigned)k);
        if (rc == 0)
            rc = words_str(out, b, job, pos, words_for(b, each > 24 ? each - 24 : 1));
        if (rc == 0)
            rc = lt_buf_puts(out, ",\"parameters\":{\"type\":\"object\",\"properties\":{}}}}");
    }
    return rc ? rc : lt_buf_puts(out, "]");
}

static int chat_messages(struct lt_buf *out, const struct lt_replay_build *b,
                         const struct lt_replay_job *job, double budget, uint32_t *pos)
{
    int rc = lt_buf_puts(out, "\"messages\":[");
    if (rc < 0)
        return rc;
    if (job->n_msgs == 0) {
        rc = lt_buf_puts(out, "{\"role\":\"user\",\"content\":");
        if (rc == 0)
            rc = words_str(out, b, job, pos, words_for(b, budget - b->calib.per_message));
        return rc ? rc : lt_buf_puts(out, "}]");
    }
    double recorded = 0;
    for (uint32_t m = 0; m < job->n_msgs; m++)
        recorded += job->msgs[m].tokens;
    double content = budget - b->calib.per_message * job->n_msgs;
    double scale = recorded > 0 && content > 0 ? content / recorded : 1.0;
    uint32_t call = 0;
    for (uint32_t m = 0; m < job->n_msgs && rc == 0; m++) {
        const char *role = job->msgs[m].role;
        bool tool = !strcmp(role, "tool");
        bool after_asst = m > 0 && !strcmp(job->msgs[m - 1].role, "assistant");
        /* A tool message must answer an assistant's tool call; without one
         * before it, servers reject it, so it becomes a user message. */
        if (tool && !after_asst && !(m > 0 && !strcmp(job->msgs[m - 1].role, "tool")))
            role = "user", tool = false;
        rc = lt_buf_printf(out, "%s{\"role\":", m ? "," : "");
        if (rc == 0)
            rc = lt_json_str(out, role, strlen(role));
        if (rc == 0 && tool)
            rc = lt_buf_printf(out, ",\"tool_call_id\":\"call_%u\"", (unsigned)call++);
        if (rc == 0 && !strcmp(role, "assistant") && m + 1 < job->n_msgs &&
            !strcmp(job->msgs[m + 1].role, "tool")) {
            rc = lt_buf_puts(out, ",\"tool_calls\":[");
            for (uint32_t k = m + 1, c = call;
                 rc == 0 && k < job->n_msgs && !strcmp(job->msgs[k].role, "tool"); k++, c++)
                rc = lt_buf_printf(out,
                                   "%s{\"id\":\"call_%u\",\"type\":\"function\","
                                   "\"function\":{\"name\":\"tool_0\",\"arguments\":\"{}\"}}",
                                   k > m + 1 ? "," : "", (unsigned)c);
            if (rc == 0)
                rc = lt_buf_puts(out, "]");
        }
        if (rc == 0)
            rc = lt_buf_puts(out, ",\"content\":");
        if (rc == 0)
            rc = words_str(out, b, job, pos, words_for(b, job->msgs[m].tokens * scale));
        if (rc == 0)
            rc = lt_buf_puts(out, "}");
    }
    return rc ? rc : lt_buf_puts(out, "]");
}

int lt_replay_build_body(struct lt_buf *out, const struct lt_replay_build *b,
                         const struct lt_replay_job *job, uint32_t *want_in, uint32_t *want_out)
{
    int rc = 0;
    lt_buf_reset(out);
    uint32_t in, wout;
    lt_replay_job_lengths(job, b->default_out, &in, &wout);
    *want_out = wout;
    *want_in = in;
    const char *corpus = NULL;
    bool corpus_msgs = false;
    if (b->corpus && b->corpus->n) {
        size_t k = (size_t)(job->index % b->corpus->n);
        corpus = b->corpus->texts[k];
        corpus_msgs = b->corpus->is_messages[k];
    }
    const char *text = !b->synthetic && !corpus && job->text ? job->text : NULL;
    bool use_ids = b->token_ids && !text && !corpus && b->api != LT_REPLAY_API_CHAT;
    uint32_t pos = 0;

    LT_TRY(lt_buf_puts(out, "{"));
    if (b->api != LT_REPLAY_API_SGLANG) {
        LT_TRY(lt_buf_puts(out, "\"model\":"));
        LT_TRY(lt_json_str(out, b->model ? b->model : "", b->model ? strlen(b->model) : 0));
        LT_TRY(lt_buf_puts(out, ","));
    }
    if (b->api == LT_REPLAY_API_CHAT) {
        double budget = (double)in - b->calib.per_request;
        if ((job->has & LT_HAS_TOOLS) && job->tools_count && !text && !corpus)
            budget -= job->tools_tokens;
        if (corpus_msgs) {
            LT_TRY(lt_buf_puts(out, "\"messages\":"));
            LT_TRY(lt_buf_puts(out, corpus));
        } else if (corpus || text) {
            LT_TRY(lt_buf_puts(out, "\"messages\":[{\"role\":\"user\",\"content\":"));
            if (corpus)
                LT_TRY(corpus_str(out, corpus, budget - b->calib.per_message));
            else
                LT_TRY(lt_json_str(out, text, job->text_len));
            LT_TRY(lt_buf_puts(out, "}]"));
        } else {
            LT_TRY(chat_messages(out, b, job, budget, &pos));
            if ((job->has & LT_HAS_TOOLS) && job->tools_count)
                LT_TRY(tools_json(out, b, job, &pos));
        }
    } else {
        const char *key =
            b->api == LT_REPLAY_API_SGLANG ? (use_ids ? "input_ids" : "text") : "prompt";
        LT_TRY(lt_buf_printf(out, "\"%s\":", key));
        if (use_ids)
            LT_TRY(ids(out, b, job, in));
        else if (corpus)
            LT_TRY(corpus_str(out, corpus, in));
        else if (text)
            LT_TRY(lt_json_str(out, text, job->text_len));
        else
            LT_TRY(words_str(out, b, job, &pos, words_for(b, in)));
    }
    if (b->api == LT_REPLAY_API_SGLANG) {
        LT_TRY(lt_buf_printf(out, ",\"sampling_params\":{\"max_new_tokens\":%u", (unsigned)wout));
        if (b->force_length)
            LT_TRY(
                lt_buf_printf(out, ",\"min_new_tokens\":%u,\"ignore_eos\":true", (unsigned)wout));
        LT_TRY(lt_buf_printf(out, "},\"stream\":%s}", b->stream ? "true" : "false"));
        return 0;
    }
    LT_TRY(lt_buf_printf(out, ",\"max_tokens\":%u", (unsigned)wout));
    if (b->force_length)
        LT_TRY(lt_buf_printf(out, ",\"min_tokens\":%u,\"ignore_eos\":true", (unsigned)wout));
    if (b->api == LT_REPLAY_API_CHAT && b->thinking != LT_REPLAY_THINK_UNSET) {
        int on = b->thinking == LT_REPLAY_THINK_ON;
        if (b->thinking == LT_REPLAY_THINK_TRACE)
            on = (job->has & LT_HAS_REASONING) ? job->reasoning > 0 : -1;
        if (on >= 0)
            LT_TRY(lt_buf_printf(out, ",\"chat_template_kwargs\":{\"enable_thinking\":%s}",
                                 on ? "true" : "false"));
    }
    if (b->reasoning_effort) {
        LT_TRY(lt_buf_puts(out, ",\"reasoning_effort\":"));
        LT_TRY(lt_json_str(out, b->reasoning_effort, strlen(b->reasoning_effort)));
    }
    if (b->stream)
        LT_TRY(lt_buf_printf(out, ",\"stream\":true,\"stream_options\":{\"include_usage\":true%s}",
                             b->chunk_usage ? ",\"continuous_usage_stats\":true" : ""));
    LT_TRY(lt_buf_puts(out, "}"));
out:
    return rc;
}

void lt_replay_corpus_release(struct lt_replay_corpus *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->texts[i]);
    free(c->texts);
    free(c->is_messages);
    memset(c, 0, sizeof *c);
}

static int corpus_add(struct lt_replay_corpus *c, size_t *cap, char *s, bool msgs)
{
    if (c->n == *cap) {
        size_t n = *cap ? *cap * 2 : 64;
        char **t = realloc(c->texts, n * sizeof *t);
        if (!t)
            return LT_ENOMEM;
        c->texts = t;
        bool *m = realloc(c->is_messages, n * sizeof *m);
        if (!m)
            return LT_ENOMEM;
        c->is_messages = m;
        *cap = n;
    }
    c->texts[c->n] = s;
    c->is_messages[c->n] = msgs;
    c->n++;
    return 0;
}

int lt_replay_corpus_load(struct lt_replay_corpus *c, const char *path, struct lt_err *err)
{
    memset(c, 0, sizeof *c);
    int rc = 0;
    size_t cap = 0, lineno = 0;
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t lcap = 0;
    if (!f)
        return lt_errset(err, LT_EIO, "%s: cannot open", path);
    ssize_t n;
    while ((n = getline(&line, &lcap, f)) > 0) {
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n == 0)
            continue;
        json_error_t je;
        json_t *v = json_loadb(line, (size_t)n, JSON_DECODE_ANY, &je);
        json_t *s = NULL, *msgs = NULL;
        if (json_is_string(v))
            s = v;
        else if (json_is_object(v)) {
            s = json_object_get(v, "text");
            if (!s)
                s = json_object_get(v, "prompt");
            msgs = json_object_get(v, "messages");
        }
        char *copy = NULL;
        bool is_msgs = false;
        if (json_is_string(s))
            copy = strdup(json_string_value(s));
        else if (json_is_array(msgs)) {
            copy = json_dumps(msgs, JSON_COMPACT);
            is_msgs = true;
        } else {
            json_decref(v);
            rc = lt_errset(err, LT_EFORMAT,
                           "%s:%zu: a prompt line must be a JSON string, or an object with "
                           "\"text\", \"prompt\" or \"messages\"",
                           path, lineno);
            goto out;
        }
        json_decref(v);
        if (!copy || (rc = corpus_add(c, &cap, copy, is_msgs)) < 0) {
            free(copy);
            rc = lt_errset(err, LT_ENOMEM, "%s: out of memory", path);
            goto out;
        }
    }
    if (c->n == 0)
        rc = lt_errset(err, LT_EFORMAT, "%s: no prompts in the file", path);
out:
    free(line);
    fclose(f);
    if (rc < 0)
        lt_replay_corpus_release(c);
    return rc;
}

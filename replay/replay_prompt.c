/*
 * Request bodies, written by hand into an lt_buf (one pass, no JSON tree):
 * building a body is on the per-request path of a benchmark client, and the
 * shapes are fixed. Strings from outside (recorded text, corpus, model
 * name) go through lt_json_str, which escapes them.
 */
#include "replay/replay_prompt.h"
#include "plan/plan_jobs.h"

#include "base/lt_rng.h"
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
    case LT_REPLAY_API_RESPONSES:
        return "/v1/responses";
    case LT_REPLAY_API_MESSAGES:
        return "/v1/messages";
    case LT_REPLAY_API_EMBEDDINGS:
        return "/v1/embeddings";
    case LT_REPLAY_API_RERANK:
        return "/v1/rerank";
    case LT_REPLAY_API_CHAT:
        break;
    }
    return "/v1/chat/completions";
}

/* Seed of prompt position pos (in words or token ids). */
static uint64_t seed_at(const struct lt_replay_build *b, const struct lt_plan_job *job,
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
                    const struct lt_plan_job *job, uint32_t pos, uint32_t n)
{
    int rc = lt_buf_reserve(out, (size_t)n * 5 + 1);
    if (rc < 0)
        return rc;
    for (uint32_t j = 0; j < n; j++) {
        uint64_t h = lt_mix64(seed_at(b, job, pos + j) + (uint64_t)(pos + j) * 0x9e3779b97f4a7c15u);
        const char *w = words[j ? h & 127 : LT_REPLAY_FIRST_WORD];
        size_t len = strlen(w);
        if (j)
            out->p[out->len++] = ' ';
        memcpy(out->p + out->len, w, len);
        out->len += len;
    }
    out->p[out->len] = '\0';
    return 0;
}

const char *lt_replay_word(unsigned i)
{
    return words[i & (LT_REPLAY_N_WORDS - 1)];
}

unsigned lt_replay_word_at(const struct lt_replay_build *b, const struct lt_plan_job *job,
                           uint32_t pos)
{
    return (unsigned)(lt_mix64(seed_at(b, job, pos) + (uint64_t)pos * 0x9e3779b97f4a7c15u) & 127);
}

/* n token ids, each drawn from those the server's tokenizer produced. */
static int ids(struct lt_buf *out, const struct lt_replay_build *b, const struct lt_plan_job *job,
               uint32_t n)
{
    int rc = lt_buf_puts(out, "[");
    for (uint32_t j = 0; j < n && rc == 0; j++) {
        uint64_t h = lt_mix64(seed_at(b, job, j) + (uint64_t)j * 0x9e3779b97f4a7c15u);
        rc = lt_buf_printf(out, j ? ",%u" : "%u", (unsigned)b->ids[h % b->n_ids]);
    }
    return rc ? rc : lt_buf_puts(out, "]");
}

void lt_replay_prompt_learn(struct lt_replay_build *b, uint32_t want, uint32_t got)
{
    if (!b->calib.closed_loop || !want || !got)
        return;
    /* The error of a prompt sent with adjustment a is e0 - a for a true
     * offset e0: a += g (got - want) converges on e0 without overshoot even
     * with many requests in flight on an older a; a tokenizer's scatter
     * (several tokens a word) only jitters it. Bounded, so one odd answer
     * cannot empty the prompts. */
    double a = b->calib.adjust + 0.25 * ((double)got - (double)want);
    double lim = 0.5 * (double)want;
    b->calib.adjust = a > lim ? lim : a < -lim ? -lim : a;
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
                     const struct lt_plan_job *job, uint32_t *pos, uint32_t n)
{
    int rc = lt_buf_puts(out, "\"");
    if (rc == 0)
        rc = lt_replay_words(out, b, job, *pos, n);
    *pos += n;
    return rc ? rc : lt_buf_puts(out, "\"");
}

/* Can r tokens be made of whole words, given the set of word costs
 * (bit c of mask: some word costs c)? Looked at up to `depth` words deep;
 * deeper, some mix will do. */
static bool fillable(uint32_t mask, uint32_t r, int depth)
{
    if (r == 0 || depth == 0)
        return true;
    for (uint32_t c = 1; c < 32 && c <= r; c++)
        if ((mask >> c & 1u) && fillable(mask, r - c, depth - 1))
            return true;
    return false;
}

static bool fits(uint32_t mask, uint8_t c, uint32_t r)
{
    return c && c <= r && (r - c >= 64 || fillable(mask, r - c, 4));
}

/* The share nearest above s (rounded) that whole words of the measured
 * costs can make; s itself without measured costs. */
static double fit_share(const struct lt_replay_build *b, double s)
{
    if (!b->calib.exact_words)
        return s;
    uint32_t mask = 0;
    for (unsigned k = 0; k < LT_REPLAY_N_WORDS; k++)
        if (b->calib.word_cost[k] < 32)
            mask |= 1u << b->calib.word_cost[k];
    mask &= ~1u;
    double r = floor(s + 0.5);
    if (r < 1)
        r = 1;
    for (int i = 0; i < 32 && r < 64 && !fillable(mask, (uint32_t)r, 4); i++)
        r++;
    return r;
}

/* A JSON string of synthesized words costing exactly `tokens` tokens by
 * the measured word costs, from word position *pos: the hashed word at
 * each position, except where it would overshoot or leave a remainder no
 * word fits; there the first word (from the hashed one on) whose cost
 * leaves a remainder that can be filled. Without measured costs, the mean
 * tokens per word (words_for). */
static int fill_str(struct lt_buf *out, const struct lt_replay_build *b,
                    const struct lt_plan_job *job, uint32_t *pos, double tokens, double *spent)
{
    if (!b->calib.exact_words) {
        uint32_t n = words_for(b, tokens);
        if (spent)
            *spent = n * (b->calib.tok_per_word > 0 ? b->calib.tok_per_word : 1.0);
        return words_str(out, b, job, pos, n);
    }
    double t = floor(tokens + 0.5);
    uint32_t r = t < 1 ? 1 : t > 16e6 ? 16000000u : (uint32_t)t;
    double total = 0;
    int rc = lt_buf_reserve(out, (size_t)r * 5 + 3);
    if (rc < 0)
        return rc;
    uint32_t mask = 0;
    for (unsigned k = 0; k < LT_REPLAY_N_WORDS; k++)
        if (b->calib.word_cost[k] < 32)
            mask |= 1u << b->calib.word_cost[k];
    mask &= ~1u;
    out->p[out->len++] = '"';
    bool first = true;
    while (r > 0) {
        unsigned w = first ? LT_REPLAY_FIRST_WORD : lt_replay_word_at(b, job, *pos);
        uint8_t c = b->calib.word_cost[w];
        if (!fits(mask, c, r)) {
            unsigned k = 0;
            for (; k < LT_REPLAY_N_WORDS; k++)
                if (fits(mask, b->calib.word_cost[(w + k) & (LT_REPLAY_N_WORDS - 1)], r))
                    break;
            if (k == LT_REPLAY_N_WORDS) { /* r tokens no word fits: the cheapest word */
                for (unsigned x = 0; x < LT_REPLAY_N_WORDS; x++)
                    if (b->calib.word_cost[x] && b->calib.word_cost[x] < b->calib.word_cost[w])
                        w = x;
            } else {
                w = (w + k) & (LT_REPLAY_N_WORDS - 1);
            }
            c = b->calib.word_cost[w];
        }
        size_t len = strlen(words[w]); /* room reserved: a word costs a token or more */
        if (!first)
            out->p[out->len++] = ' ';
        memcpy(out->p + out->len, words[w], len);
        out->len += len;
        first = false;
        total += c;
        r -= c < r ? c : r;
        (*pos)++;
    }
    out->p[out->len++] = '"';
    out->p[out->len] = '\0';
    if (spent)
        *spent = total;
    return 0;
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
                      const struct lt_plan_job *job, uint32_t *pos)
{
    /* Structure costs about 24 tokens a tool; the description fills the
     * rest of the recorded size. */
    int rc = lt_buf_puts(out, ",\"tools\":[");
    uint32_t each = job->tools_tokens / job->tools_count;
    /* Chat nests the function; Responses and Messages name it flat. */
    const char *open = b->api == LT_REPLAY_API_MESSAGES ? "{"
                       : b->api == LT_REPLAY_API_RESPONSES
                           ? "{\"type\":\"function\","
                           : "{\"type\":\"function\",\"function\":{";
    const char *close =
        b->api == LT_REPLAY_API_MESSAGES ? ",\"input_schema\":" : ",\"parameters\":";
    bool chat = b->api == LT_REPLAY_API_CHAT;
    for (uint32_t k = 0; k < job->tools_count && rc == 0; k++) {
        rc = lt_buf_printf(out, "%s%s\"name\":\"tool_%u\",\"description\":", k ? "," : "", open,
                           (unsigned)k);
        if (rc == 0)
            rc = fill_str(out, b, job, pos, each > 24 ? each - 24 : 1, NULL);
        if (rc == 0)
            rc = lt_buf_printf(out, "%s{\"type\":\"object\",\"properties\":{}}}%s", close,
                               chat ? "}" : "");
    }
    return rc ? rc : lt_buf_puts(out, "]");
}

/* Each message's share of a prompt's content tokens, in targets[m]: its
 * recorded size scaled to the content, rounded so that they sum to it. A
 * share no whole words can make (1 token where no word costs 1) is raised
 * to one they can, and the largest message gives up what that took. */
static void plan_shares(const struct lt_replay_build *b, const struct lt_plan_job *job,
                        double scale, double *targets)
{
    double cum = 0, prev = 0, deficit = 0, big_raw = -1;
    uint32_t big = 0;
    for (uint32_t m = 0; m < job->n_msgs; m++) {
        cum += job->msgs[m].tokens * scale;
        double raw = floor(cum + 0.5) - prev;
        prev += raw;
        targets[m] = raw;
        deficit += fit_share(b, raw) - raw;
        if (raw > big_raw)
            big_raw = raw, big = m;
    }
    deficit -= fit_share(b, big_raw) - big_raw;
    for (uint32_t m = 0; m < job->n_msgs; m++)
        targets[m] = fit_share(b, m == big ? targets[m] - deficit : targets[m]);
}

/* The words of the messages of a prompt, each asked for what its planned
 * total leaves after what the ones written before it spent (in whatever
 * order the API writes them): the prompt's total stays exact. */
struct shares {
    double *targets, planned, done;
    double small[64];
};

static int shares_init(struct shares *sh, const struct lt_replay_build *b,
                       const struct lt_plan_job *job, double content)
{
    double recorded = 0;
    for (uint32_t m = 0; m < job->n_msgs; m++)
        recorded += job->msgs[m].tokens;
    double scale = recorded > 0 && content > 0 ? content / recorded : 1.0;
    sh->planned = sh->done = 0;
    sh->targets = job->n_msgs <= 64 ? sh->small : malloc(job->n_msgs * sizeof *sh->targets);
    if (!sh->targets)
        return LT_ENOMEM;
    plan_shares(b, job, scale, sh->targets);
    return 0;
}

static void shares_release(struct shares *sh)
{
    if (sh->targets != sh->small)
        free(sh->targets);
}

/* A JSON string of message m's words. */
static int share_str(struct lt_buf *out, struct shares *sh, const struct lt_replay_build *b,
                     const struct lt_plan_job *job, uint32_t m, uint32_t *pos)
{
    double spent = 0;
    sh->planned += sh->targets[m];
    int rc = fill_str(out, b, job, pos, sh->planned - sh->done, &spent);
    sh->done += spent;
    return rc;
}

static int chat_messages(struct lt_buf *out, const struct lt_replay_build *b,
                         const struct lt_plan_job *job, double budget, uint32_t *pos)
{
    int rc = lt_buf_puts(out, "\"messages\":[");
    if (rc < 0)
        return rc;
    if (job->n_msgs == 0) {
        rc = lt_buf_puts(out, "{\"role\":\"user\",\"content\":");
        if (rc == 0)
            rc = fill_str(out, b, job, pos, budget - b->calib.per_message, NULL);
        return rc ? rc : lt_buf_puts(out, "}]");
    }
    struct shares sh;
    if (shares_init(&sh, b, job, budget - b->calib.per_message * job->n_msgs) < 0)
        return LT_ENOMEM;
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
            rc = share_str(out, &sh, b, job, m, pos);
        if (rc == 0)
            rc = lt_buf_puts(out, "}");
    }
    shares_release(&sh);
    return rc ? rc : lt_buf_puts(out, "]");
}

/* The Responses API's input: messages as chat's, an assistant's tool calls
 * as function_call items after it, a tool's answer as a
 * function_call_output item. */
static int responses_input(struct lt_buf *out, const struct lt_replay_build *b,
                           const struct lt_plan_job *job, struct shares *sh, uint32_t *pos)
{
    int rc = lt_buf_puts(out, "\"input\":[");
    uint32_t call = 0, answered = 0;
    for (uint32_t m = 0; m < job->n_msgs && rc == 0; m++) {
        const char *role = job->msgs[m].role;
        if (!strcmp(role, "tool") && answered < call) {
            rc = lt_buf_printf(out,
                               "%s{\"type\":\"function_call_output\",\"call_id\":\"call_%u\","
                               "\"output\":",
                               m ? "," : "", (unsigned)answered++);
        } else {
            if (strcmp(role, "system") && strcmp(role, "developer") && strcmp(role, "assistant"))
                role = "user"; /* a tool message with no call before it, or another role */
            /* "type":"message" as OpenAI's spec has it: llama.cpp takes an
             * assistant's turn only so. */
            rc = lt_buf_printf(
                out, "%s{\"type\":\"message\",\"role\":\"%s\",\"content\":", m ? "," : "", role);
        }
        if (rc == 0)
            rc = share_str(out, sh, b, job, m, pos);
        if (rc == 0)
            rc = lt_buf_puts(out, "}");
        if (rc == 0 && !strcmp(role, "assistant"))
            for (uint32_t k = m + 1;
                 rc == 0 && k < job->n_msgs && !strcmp(job->msgs[k].role, "tool"); k++)
                rc = lt_buf_printf(out,
                                   ",{\"type\":\"function_call\",\"call_id\":\"call_%u\","
                                   "\"name\":\"tool_0\",\"arguments\":\"{}\"}",
                                   (unsigned)call++);
    }
    return rc ? rc : lt_buf_puts(out, "]");
}

/* The Messages API's system (the system messages, joined) and messages:
 * user and assistant turns; an assistant's tool calls are tool_use blocks
 * after its text, and the tools' answers one user turn of tool_result
 * blocks (Anthropic wants every result of a turn's calls in the next turn). */
static int messages_list(struct lt_buf *out, const struct lt_replay_build *b,
                         const struct lt_plan_job *job, struct shares *sh, uint32_t *pos)
{
    int rc = 0;
    bool sys = false;
    for (uint32_t m = 0; m < job->n_msgs && rc == 0; m++) {
        if (strcmp(job->msgs[m].role, "system") && strcmp(job->msgs[m].role, "developer"))
            continue;
        if (sys)
            rc = lt_buf_puts(out, ",");
        else
            rc = lt_buf_puts(out, "\"system\":[");
        sys = true;
        if (rc == 0)
            rc = lt_buf_puts(out, "{\"type\":\"text\",\"text\":");
        if (rc == 0)
            rc = share_str(out, sh, b, job, m, pos);
        if (rc == 0)
            rc = lt_buf_puts(out, "}");
    }
    if (rc == 0)
        rc = lt_buf_puts(out, sys ? "],\"messages\":[" : "\"messages\":[");
    uint32_t call = 0, answered = 0, k = 0;
    bool results = false; /* a user turn of tool results is open */
    for (uint32_t m = 0; m < job->n_msgs && rc == 0; m++) {
        const char *role = job->msgs[m].role;
        if (!strcmp(role, "system") || !strcmp(role, "developer"))
            continue;
        bool asst = !strcmp(role, "assistant");
        if (!strcmp(role, "tool") && answered < call) {
            rc = results ? lt_buf_puts(out, ",")
                         : lt_buf_printf(out, "%s{\"role\":\"user\",\"content\":[", k++ ? "," : "");
            results = true;
            if (rc == 0)
                rc = lt_buf_printf(out,
                                   "{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_%u\","
                                   "\"content\":",
                                   (unsigned)answered++);
            if (rc == 0)
                rc = share_str(out, sh, b, job, m, pos);
            if (rc == 0)
                rc = lt_buf_puts(out, "}");
            continue;
        }
        if (results) {
            rc = lt_buf_puts(out, "]}");
            results = false;
        }
        if (rc == 0)
            rc = lt_buf_printf(out, "%s{\"role\":\"%s\",\"content\":[{\"type\":\"text\",\"text\":",
                               k++ ? "," : "", asst ? "assistant" : "user");
        if (rc == 0)
            rc = share_str(out, sh, b, job, m, pos);
        if (rc == 0)
            rc = lt_buf_puts(out, "}");
        for (uint32_t t = m + 1;
             asst && rc == 0 && t < job->n_msgs && !strcmp(job->msgs[t].role, "tool"); t++)
            rc = lt_buf_printf(out,
                               ",{\"type\":\"tool_use\",\"id\":\"toolu_%u\",\"name\":\"tool_0\","
                               "\"input\":{}}",
                               (unsigned)call++);
        if (rc == 0)
            rc = lt_buf_puts(out, "]}");
    }
    if (rc == 0 && results)
        rc = lt_buf_puts(out, "]}");
    return rc ? rc : lt_buf_puts(out, "]");
}

/* Recorded text that is a list of chat turns (capture keeps a chat-like
 * prompt as its messages' JSON, whatever API it came by): the list, or
 * NULL for a text that is not one. */
static json_t *recorded_turns(const char *text, size_t len)
{
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\n'))
        i++;
    if (i == len || text[i] != '[')
        return NULL;
    json_t *v = json_loadb(text, len, 0, NULL);
    size_t k;
    json_t *m;
    if (!json_is_array(v) || json_array_size(v) == 0)
        goto no;
    json_array_foreach(v, k, m)
    {
        if (!json_is_object(m) || !json_is_string(json_object_get(m, "role")))
            goto no;
    }
    return v;
no:
    json_decref(v);
    return NULL;
}

/* Recorded completions text that is a list of token ids. */
static bool recorded_ids(const char *text, size_t len)
{
    if (len == 0 || text[0] != '[')
        return false;
    json_t *v = json_loadb(text, len, 0, NULL);
    bool ids = json_is_array(v) && json_array_size(v) > 0;
    size_t k;
    json_t *x;
    json_array_foreach(v, k, x) ids = ids && json_is_integer(x);
    json_decref(v);
    return ids;
}

static int put_json(struct lt_buf *out, const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    int rc = s ? lt_buf_puts(out, s) : LT_ENOMEM;
    free(s);
    return rc;
}

/* Content as a string: itself, or the text of its parts joined. */
static json_t *content_text(const json_t *c)
{
    if (json_is_string(c))
        return json_incref((json_t *)c);
    json_t *s = json_string("");
    size_t k;
    json_t *p;
    json_array_foreach(c, k, p)
    {
        const char *t = json_string_value(json_object_get(p, "text"));
        if (t && s) {
            size_t n = json_string_length(s) + strlen(t);
            char *j = malloc(n + 1);
            if (j) {
                snprintf(j, n + 1, "%s%s", json_string_value(s), t);
                json_string_setn(s, j, n);
            }
            free(j);
        }
    }
    return s;
}

/* Chat turns in the Responses API's input items (as lt_replay's capture
 * read them back: a tool's answer is a function_call_output, an
 * assistant's calls function_call items) or the Messages API's system and
 * messages (a system turn as "system", tool answers as a user turn of
 * tool_result blocks, calls as tool_use blocks). Chat takes them as they
 * were recorded. */
static int recorded_turns_body(struct lt_buf *out, enum lt_replay_api api, const json_t *turns,
                               const char *text, size_t len)
{
    if (api == LT_REPLAY_API_CHAT) {
        int rc = lt_buf_puts(out, "\"messages\":");
        return rc ? rc : lt_buf_append(out, text, len);
    }
    bool resp = api == LT_REPLAY_API_RESPONSES;
    json_t *list = json_array(), *sys = NULL, *results = NULL;
    unsigned call = 0, answered = 0;
    size_t k;
    json_t *m;
    int rc = list ? 0 : LT_ENOMEM;
    json_array_foreach(turns, k, m)
    {
        if (rc < 0)
            break;
        const char *role = json_string_value(json_object_get(m, "role"));
        json_t *content = json_object_get(m, "content"), *calls = json_object_get(m, "tool_calls");
        char id[32];
        if (!strcmp(role, "tool")) {
            json_t *t = content_text(content);
            snprintf(id, sizeof id, resp ? "call_%u" : "toolu_%u", answered++);
            json_t *item = resp ? json_pack("{s:s,s:s,s:O}", "type", "function_call_output",
                                            "call_id", id, "output", t)
                                : json_pack("{s:s,s:s,s:O}", "type", "tool_result", "tool_use_id",
                                            id, "content", t);
            json_decref(t);
            if (!item) {
                rc = LT_ENOMEM;
                break;
            }
            if (resp) {
                json_array_append_new(list, item);
                continue;
            }
            if (!results) {
                results = json_array();
                json_array_append_new(list,
                                      json_pack("{s:s,s:o}", "role", "user", "content", results));
            }
            json_array_append_new(results, item);
            continue;
        }
        results = NULL;
        if (!resp && (!strcmp(role, "system") || !strcmp(role, "developer"))) {
            if (!sys)
                sys = json_array();
            json_t *t = content_text(content);
            json_array_append_new(sys, json_pack("{s:s,s:o}", "type", "text", "text", t));
            continue;
        }
        if (strcmp(role, "system") && strcmp(role, "developer") && strcmp(role, "assistant"))
            role = "user";
        bool has_text = content && !json_is_null(content) &&
                        !(json_is_string(content) && json_string_length(content) == 0);
        json_t *blocks = resp ? NULL : json_array();
        if (has_text && resp) {
            /* Chat's text parts are Responses' input_text (output_text
             * in an assistant's turn). */
            json_t *parts = json_is_array(content) ? json_deep_copy(content) : NULL;
            size_t q;
            json_t *part;
            json_array_foreach(parts, q, part)
            {
                const char *pt = json_string_value(json_object_get(part, "type"));
                if (pt && !strcmp(pt, "text"))
                    json_object_set_new(
                        part, "type",
                        json_string(strcmp(role, "assistant") ? "input_text" : "output_text"));
            }
            json_array_append_new(list, json_pack("{s:s,s:s,s:O}", "type", "message", "role", role,
                                                  "content", parts ? parts : content));
            json_decref(parts);
        } else if (has_text) {
            if (json_is_string(content))
                json_array_append_new(blocks,
                                      json_pack("{s:s,s:O}", "type", "text", "text", content));
            else
                json_array_extend(blocks, content);
        }
        size_t c;
        json_t *tc;
        json_array_foreach(calls, c, tc)
        {
            json_t *fn = json_object_get(tc, "function");
            const char *name = json_string_value(json_object_get(fn, "name"));
            const char *args = json_string_value(json_object_get(fn, "arguments"));
            snprintf(id, sizeof id, resp ? "call_%u" : "toolu_%u", call++);
            if (resp) {
                json_array_append_new(list, json_pack("{s:s,s:s,s:s,s:s}", "type", "function_call",
                                                      "call_id", id, "name", name ? name : "tool",
                                                      "arguments", args ? args : "{}"));
            } else {
                json_t *input = json_loads(args ? args : "{}", 0, NULL);
                if (!json_is_object(input)) {
                    json_decref(input);
                    input = json_object();
                }
                json_array_append_new(blocks,
                                      json_pack("{s:s,s:s,s:s,s:o}", "type", "tool_use", "id", id,
                                                "name", name ? name : "tool", "input", input));
            }
        }
        if (!resp)
            json_array_append_new(list, json_pack("{s:s,s:o}", "role", role, "content", blocks));
    }
    if (rc == 0 && sys) {
        rc = lt_buf_puts(out, "\"system\":");
        if (rc == 0)
            rc = put_json(out, sys);
        if (rc == 0)
            rc = lt_buf_puts(out, ",");
    }
    if (rc == 0)
        rc = lt_buf_puts(out, resp ? "\"input\":" : "\"messages\":");
    if (rc == 0)
        rc = put_json(out, list);
    json_decref(sys);
    json_decref(list);
    return rc;
}

/* The opening of a prompt of one user turn (recorded text, a corpus text,
 * or words) in the API's envelope: chat's and Messages' messages,
 * Responses' input. */
static int one_turn_open(struct lt_buf *out, enum lt_replay_api api)
{
    if (api == LT_REPLAY_API_RESPONSES)
        return lt_buf_puts(out, "\"input\":[{\"type\":\"message\",\"role\":\"user\",\"content\":");
    return lt_buf_puts(out, "\"messages\":[{\"role\":\"user\",\"content\":");
}

int lt_replay_build_body(struct lt_buf *out, const struct lt_replay_build *b,
                         const struct lt_plan_job *job, uint32_t *want_in, uint32_t *want_out)
{
    int rc = 0;
    if (lt_replay_api_inputs(b->api))
        return lt_replay_embed_body(out, b, job, want_in, want_out);
    lt_buf_reset(out);
    uint32_t in, wout;
    lt_plan_job_lengths(job, b->default_out, &in, &wout);
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
    bool use_ids = b->token_ids && b->n_ids && !text && !corpus && lt_replay_api_takes_ids(b->api);
    uint32_t pos = 0;
    json_t *turns = NULL;

    LT_TRY(lt_buf_puts(out, "{"));
    if (b->api != LT_REPLAY_API_SGLANG) {
        LT_TRY(lt_buf_puts(out, "\"model\":"));
        LT_TRY(lt_json_str(out, b->model ? b->model : "", b->model ? strlen(b->model) : 0));
        LT_TRY(lt_buf_puts(out, ","));
    }
    if (lt_replay_api_chat_like(b->api)) {
        /* Chat-shaped turns (recorded, or a corpus line's messages) go in
         * the API's own shape. */
        const char *tt = corpus_msgs ? corpus : text;
        size_t tl = corpus_msgs ? strlen(corpus) : job->text_len;
        turns = tt && (corpus_msgs || !corpus) ? recorded_turns(tt, tl) : NULL;
        double budget = (double)in - b->calib.per_request - b->calib.adjust;
        if ((job->has & LT_HAS_TOOLS) && job->tools_count && !text && !corpus)
            budget -= job->tools_tokens;
        if (turns) {
            LT_TRY(recorded_turns_body(out, b->api, turns, tt, tl));
        } else if (corpus_msgs) { /* not a list of turns: as the file has it */
            LT_TRY(lt_buf_puts(out,
                               b->api == LT_REPLAY_API_RESPONSES ? "\"input\":" : "\"messages\":"));
            LT_TRY(lt_buf_puts(out, corpus));
        } else if (corpus || text) {
            LT_TRY(one_turn_open(out, b->api));
            if (corpus)
                LT_TRY(corpus_str(out, corpus, budget - b->calib.per_message));
            else
                LT_TRY(lt_json_str(out, text, job->text_len));
            LT_TRY(lt_buf_puts(out, "}]"));
        } else if (b->api == LT_REPLAY_API_CHAT || job->n_msgs == 0) {
            if (b->api == LT_REPLAY_API_CHAT)
                LT_TRY(chat_messages(out, b, job, budget, &pos));
            else {
                LT_TRY(one_turn_open(out, b->api));
                LT_TRY(fill_str(out, b, job, &pos, budget - b->calib.per_message, NULL));
                LT_TRY(lt_buf_puts(out, "}]"));
            }
            if ((job->has & LT_HAS_TOOLS) && job->tools_count)
                LT_TRY(tools_json(out, b, job, &pos));
        } else {
            struct shares sh;
            if (shares_init(&sh, b, job, budget - b->calib.per_message * job->n_msgs) < 0)
                return LT_ENOMEM;
            rc = b->api == LT_REPLAY_API_RESPONSES ? responses_input(out, b, job, &sh, &pos)
                                                   : messages_list(out, b, job, &sh, &pos);
            shares_release(&sh);
            if (rc < 0)
                goto out;
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
        else if (text && recorded_ids(text, job->text_len))
            LT_TRY(lt_buf_append(out, text, job->text_len));
        else if (text)
            LT_TRY(lt_json_str(out, text, job->text_len));
        else
            LT_TRY(fill_str(out, b, job, &pos, (double)in - b->calib.per_request - b->calib.adjust,
                            NULL));
    }
    if (b->api == LT_REPLAY_API_SGLANG) {
        LT_TRY(lt_buf_printf(out, ",\"sampling_params\":{\"max_new_tokens\":%u", (unsigned)wout));
        if (b->force_length)
            LT_TRY(
                lt_buf_printf(out, ",\"min_new_tokens\":%u,\"ignore_eos\":true", (unsigned)wout));
        LT_TRY(lt_buf_printf(out, "},\"stream\":%s}", b->stream ? "true" : "false"));
        return 0;
    }
    LT_TRY(lt_buf_printf(out, ",\"%s\":%u",
                         b->api == LT_REPLAY_API_RESPONSES ? "max_output_tokens" : "max_tokens",
                         (unsigned)wout));
    if (b->force_length) /* vLLM's extensions, on every API it serves */
        LT_TRY(lt_buf_printf(out, ",\"min_tokens\":%u,\"ignore_eos\":true", (unsigned)wout));
    int on = b->thinking == LT_REPLAY_THINK_ON;
    if (b->thinking == LT_REPLAY_THINK_TRACE)
        on = (job->has & LT_HAS_REASONING) ? job->reasoning > 0 : -1;
    if (b->thinking == LT_REPLAY_THINK_UNSET)
        on = -1;
    if (b->api == LT_REPLAY_API_CHAT && on >= 0)
        LT_TRY(lt_buf_printf(out, ",\"chat_template_kwargs\":{\"enable_thinking\":%s}",
                             on ? "true" : "false"));
    if (b->api == LT_REPLAY_API_MESSAGES && on >= 0) /* Anthropic's least budget is 1024 */
        LT_TRY(lt_buf_printf(out,
                             on ? ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":%u}"
                                : ",\"thinking\":{\"type\":\"disabled\"}",
                             (unsigned)(wout > 1025 ? wout - 1 : 1024)));
    if (b->reasoning_effort && b->api == LT_REPLAY_API_RESPONSES) {
        LT_TRY(lt_buf_puts(out, ",\"reasoning\":{\"effort\":"));
        LT_TRY(lt_json_str(out, b->reasoning_effort, strlen(b->reasoning_effort)));
        LT_TRY(lt_buf_puts(out, "}"));
    } else if (b->reasoning_effort && b->api != LT_REPLAY_API_MESSAGES) {
        LT_TRY(lt_buf_puts(out, ",\"reasoning_effort\":"));
        LT_TRY(lt_json_str(out, b->reasoning_effort, strlen(b->reasoning_effort)));
    }
    if (b->stream && !lt_replay_api_takes_ids(b->api) && b->api != LT_REPLAY_API_CHAT)
        LT_TRY(lt_buf_puts(out, ",\"stream\":true")); /* usage always ends the stream */
    else if (b->stream)
        LT_TRY(lt_buf_printf(out, ",\"stream\":true,\"stream_options\":{\"include_usage\":true%s}",
                             b->chunk_usage ? ",\"continuous_usage_stats\":true" : ""));
    LT_TRY(lt_buf_puts(out, "}"));
out:
    json_decref(turns);
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

/*
 * Request building: turning a trace record's shape (prompt length, message
 * roles and sizes, tools, prefix blocks, output length) into the JSON body
 * a server is sent, in the envelope of its API: chat's messages,
 * completions' prompt, SGLang's /generate, OpenAI Responses' input items,
 * Anthropic Messages' system and messages (the prompt's words are the
 * same in all).
 *
 * Prompt text, in order of preference: a prompt from --prompts FILE (cut to
 * the recorded length), the record's own `text` (unless synthetic prompts
 * were asked for), else synthesized words. Synthesized text is a stream of
 * short common words, each one token in usual tokenizers (and exactly one in
 * the sim's rule); word j of a prompt is drawn from a hash of a seed and j,
 * where the seed is
 *   - the prefix block hash covering j, when the record has `blocks`
 *     (equal blocks give equal text, different blocks different text);
 *   - else the session id (a later turn's prompt then starts with the
 *     earlier turns' prompt, as prefix caches saw it in production);
 *   - else the trace index.
 * Every seed is mixed with a per-run salt, so one run of a sweep does not
 * find the previous run's prompts in the server's prefix cache.
 *
 * On /v1/completions (and SGLang's /generate) the prompt can be sent as
 * token ids instead, which is exact on servers that accept them.
 *
 * The length of text in tokens depends on the server's tokenizer and chat
 * template: struct lt_replay_calib says how many tokens a word costs and
 * what a request and a message add, as measured against the server.
 */
#ifndef LT_REPLAY_PROMPT_H
#define LT_REPLAY_PROMPT_H

#include "plan/plan_jobs.h"
#include "base/lt_buf.h"
#include "base/lt_err.h"
#include "traces/trace_format.h"

#include <stdbool.h>
#include <stdint.h>

enum lt_replay_api {
    LT_REPLAY_API_CHAT = 0,
    LT_REPLAY_API_COMPLETIONS = 1,
    LT_REPLAY_API_SGLANG = 2,     /* SGLang's native /generate */
    LT_REPLAY_API_RESPONSES = 3,  /* OpenAI Responses (/v1/responses; vLLM, SGLang) */
    LT_REPLAY_API_MESSAGES = 4,   /* Anthropic Messages (/v1/messages) */
    LT_REPLAY_API_EMBEDDINGS = 5, /* /v1/embeddings: inputs to embed, no output */
    LT_REPLAY_API_RERANK = 6,     /* /v1/rerank: a query and documents, no output */
};

/* The API embeds or ranks inputs: no output, no stream (replay_embed.c). */
static inline bool lt_replay_api_inputs(enum lt_replay_api api)
{
    return api == LT_REPLAY_API_EMBEDDINGS || api == LT_REPLAY_API_RERANK;
}

/* The API's prompt is a list of messages under a chat template (chat,
 * Responses, Messages), not a bare prompt. */
static inline bool lt_replay_api_chat_like(enum lt_replay_api api)
{
    return api != LT_REPLAY_API_COMPLETIONS && api != LT_REPLAY_API_SGLANG &&
           api != LT_REPLAY_API_EMBEDDINGS && api != LT_REPLAY_API_RERANK;
}

/* The API can take the prompt as token ids (completions, /generate). */
static inline bool lt_replay_api_takes_ids(enum lt_replay_api api)
{
    return api == LT_REPLAY_API_COMPLETIONS || api == LT_REPLAY_API_SGLANG;
}

/* Tokens a synthesized prompt costs on the target server. */
struct lt_replay_calib {
    double tok_per_word; /* tokens per synthesized word (1 when uncalibrated) */
    double per_request;  /* template tokens a chat request adds */
    double per_message;  /* template tokens each message adds */
    bool calibrated;
    /* Tokens of each synthesized word (lt_replay_word_cost order), learned
     * from the server's /tokenize or usage: prompts are then filled to an
     * exact count (exact_words), a word at a time, instead of by the mean
     * tokens per word. */
    uint8_t word_cost[128];
    bool exact_words;
    /* Closed loop (no /tokenize): tokens the server was seen to add beyond
     * what was asked, learned from each response's usage and taken off the
     * next prompts' budget (lt_replay_prompt_learn). */
    bool closed_loop;
    double adjust;
    /* How far a prompt's length may be off: |counted - predicted| tokens
     * of a check prompt of 128 words (err_rel: of its count), and the
     * word-by-word probe's largest rest (word_err); -1: not measured. */
    double err, err_rel, word_err;
};

/* A user corpus (--prompts FILE): texts, or chat message arrays as raw
 * JSON. */
struct lt_replay_corpus {
    char **texts;      /* each NUL-terminated */
    bool *is_messages; /* texts[i] is a JSON array of messages */
    size_t n;
};

struct lt_replay_build {
    enum lt_replay_api api;
    const char *model;
    bool stream;
    bool force_length; /* min_tokens = max_tokens and ignore_eos */
    bool chunk_usage;  /* ask for usage in every chunk (vLLM) */
    bool token_ids;    /* completions/generate: prompt as token ids */
    bool synthetic;    /* ignore recorded text */
    uint32_t block_tokens;
    uint32_t default_out;         /* output length when the record has none */
    uint64_t salt;                /* per-run seed */
    const char *reasoning_effort; /* passed through, or NULL */
    /* Thinking on or off (chat_template_kwargs.enable_thinking): */
    enum {
        LT_REPLAY_THINK_UNSET = 0, /* not sent */
        LT_REPLAY_THINK_TRACE = 1, /* on where the record reasoned, off where it says 0 */
        LT_REPLAY_THINK_ON = 2,
        LT_REPLAY_THINK_OFF = 3,
    } thinking;
    struct lt_replay_calib calib;
    const struct lt_replay_corpus *corpus; /* or NULL */
    /* Token ids the server's tokenizer produced (its /tokenize of the
     * synthesized words): id prompts are drawn from these only, never from
     * ids it has not shown valid. Owned by the caller; NULL: no id prompts. */
    const uint32_t *ids;
    size_t n_ids;
};

/* Write the JSON body for job into out (reset first). *want_in and
 * *want_out receive the lengths asked for (0 when unknown).
 * Returns 0, LT_ENOMEM or LT_ELIMIT. */
int lt_replay_build_body(struct lt_buf *out, const struct lt_replay_build *b,
                         const struct lt_plan_job *job, uint32_t *want_in, uint32_t *want_out);

/* Append n synthesized words (space-separated, each preceded by a space
 * except the first when at_start) for positions [pos, pos + n) of a prompt
 * whose seeds are given by the blocks/session/index rule. Exposed for
 * calibration and tests. */
int lt_replay_words(struct lt_buf *out, const struct lt_replay_build *b,
                    const struct lt_plan_job *job, uint32_t pos, uint32_t n);

/* The first word of every synthesized text. A word opening a text may
 * cost other tokens than the same word after a space (a SentencePiece
 * tokenizer reads "many" after a template's newline without its space
 * piece): one fixed word there makes that difference one constant, which
 * calibration measures into the per-message cost. */
#define LT_REPLAY_FIRST_WORD 0u

/* The synthesized words (128) and their count: what calibration measures. */
#define LT_REPLAY_N_WORDS 128
const char *lt_replay_word(unsigned i);
/* Index of the synthesized word at prompt position pos. */
unsigned lt_replay_word_at(const struct lt_replay_build *b, const struct lt_plan_job *job,
                           uint32_t pos);

/* Closed loop: the server counted got prompt tokens for a request that
 * asked for want; move calib.adjust towards the difference (only with
 * calib.closed_loop). */
void lt_replay_prompt_learn(struct lt_replay_build *b, uint32_t want, uint32_t got);

/* The body of an embeddings or rerank request for job (replay_embed.c):
 * its inputs from the record's messages (embeddings: one input each;
 * rerank: role "query" the query, the others documents), or one input of
 * its prompt. *want_in: the tokens the server counts (rerank: the query
 * once per document); *want_out 0. */
int lt_replay_embed_body(struct lt_buf *out, const struct lt_replay_build *b,
                         const struct lt_plan_job *job, uint32_t *want_in, uint32_t *want_out);

/* The URL path of an API ("/v1/chat/completions", ...). */
const char *lt_replay_api_path(enum lt_replay_api api);

/* Load a corpus: JSON lines, each a string, {"text": "..."},
 * {"prompt": "..."} or {"messages": [...]}. Returns 0 or a negative code. */
int lt_replay_corpus_load(struct lt_replay_corpus *c, const char *path, struct lt_err *err);
void lt_replay_corpus_release(struct lt_replay_corpus *c);

#endif

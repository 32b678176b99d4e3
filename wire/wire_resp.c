/*
 * Interpretation of OpenAI-compatible (and SGLang /generate) responses,
 * and of OpenAI Responses and Anthropic Messages events and bodies.
 *
 * Every chunk is parsed by a small single-pass JSON scanner written for this
 * job: it checks the whole value's syntax (so a broken chunk is caught as
 * malformed) but builds no tree and allocates nothing; it only notes the few
 * fields replay and capture need, by where they are (root, first choice,
 * its delta or message and their tool calls, usage or meta_info), and for
 * strings where their raw text is (capture decodes the few it keeps with
 * lt_wire_resp_unescape). A general JSON library spent four fifths of
 * replay's CPU time per chunk building and freeing trees it then threw away.
 * Only the first choice is read (replay always asks for n = 1).
 *
 * Responses and Messages need no API switch: their shapes are apart from
 * chat's (a root "type", "delta", "response", "message", "content" or
 * "output"), so one scanner reads all; a typed event is classified once its
 * "type" is known (typed_event), whatever the order of its keys.
 */
#include "wire/wire_resp.h"

#include "base/lt_err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lt_wire_resp_init(struct lt_wire_resp *r, uint32_t max_chunks)
{
    memset(r, 0, sizeof *r);
    r->max_chunks = max_chunks ? max_chunks : 1;
}

void lt_wire_resp_reset(struct lt_wire_resp *r)
{
    struct lt_wire_chunk *chunks = r->chunks;
    uint32_t cap = r->cap_chunks, max = r->max_chunks;
    memset(r, 0, sizeof *r);
    r->chunks = chunks;
    r->cap_chunks = cap;
    r->max_chunks = max;
}

void lt_wire_resp_release(struct lt_wire_resp *r)
{
    free(r->chunks);
    memset(r, 0, sizeof *r);
}

static void add_chunk(struct lt_wire_resp *r, lt_mono t, uint32_t tokens)
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
        struct lt_wire_chunk *c = realloc(r->chunks, cap * sizeof *c);
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

/* Where a value sits: it says which keys matter. */
enum ctx {
    C_SKIP, /* validate only */
    C_ROOT,
    C_CHOICES, /* the choices array: element 0 matters */
    C_CHOICE,  /* choices[0] */
    C_DELTA,   /* choices[0].delta or .message */
    C_USAGE,   /* usage or meta_info */
    C_CTD,     /* usage.completion_tokens_details */
    C_PTD,     /* usage.prompt_tokens_details */
    C_FINISH,  /* SGLang's finish_reason object */
    C_TOOLS,   /* choices[0].delta.tool_calls (or .message's) */
    C_TOOL,    /* one of them */
    C_FUNC,    /* its function */
    /* OpenAI Responses and Anthropic Messages (see lt_wire_resp_scan): */
    C_MSTART,  /* message_start's message */
    C_INUSAGE, /* its usage: only the prompt's counts (output_tokens there is a start value) */
    C_MDELTA,  /* content_block_delta's (or message_delta's) delta object */
    C_MBLOCKS, /* a whole Messages body's content list */
    C_MBLOCK,  /* one content block */
    C_ROUT,    /* a whole Responses body's output list */
    C_RITEM,   /* one output item */
    C_RPARTS,  /* its content or summary list */
    C_RPART,   /* one part: output_text, reasoning_text, summary_text, refusal */
    C_IDET,    /* incomplete_details */
    C_TIMINGS, /* llama-server's timings */
};

/* Keys the scanner acts on, per context, and what a value there means. */
enum act {
    A_NONE,
    A_CHOICES,
    A_USAGE,
    A_META,
    A_ERROR,
    A_SGTEXT,
    A_DELTA,
    A_CTEXT,
    A_FINISH,
    A_CONTENT,
    A_REASONING_CONTENT,
    A_REASONING,
    A_TOOLCALLS,
    A_TINDEX,
    A_FUNCTION,
    A_ARGS,
    A_PT,
    A_CT,
    A_RT,
    A_CACHED,
    A_IMG,
    A_VID,
    A_CREAD,  /* Anthropic's cache_read_input_tokens: cached, and a part of the prompt */
    A_CWRITE, /* Anthropic's cache_creation_input_tokens: a part of the prompt */
    A_CTD,
    A_PTD,
    A_FTYPE,
    A_TYPE,     /* an event's "type" (Responses, Messages) */
    A_RDELTA,   /* root "delta": a string (Responses) or an object (Messages) */
    A_OINDEX,   /* root "index" / "output_index" */
    A_RESPONSE, /* a Responses event's response object: read as a root */
    A_MESSAGE,  /* message_start's message */
    A_INUSAGE,
    A_MTEXT,  /* a Messages text (delta or block) */
    A_MTHINK, /* ... thinking */
    A_MJSON,  /* ... input_json_delta's partial_json */
    A_MINPUT, /* a tool_use block's input object */
    A_MBLOCKS,
    A_ROUT,
    A_RPARTS,
    A_PTYPE, /* a part's type */
    A_PTEXT, /* a part's text */
    A_IARGS, /* a function_call item's arguments */
    A_STATUS,
    A_IDET,
    A_IREASON,
    A_TIMINGS,
    A_TPN,  /* timings.prompt_n */
    A_TPMS, /* timings.prompt_ms */
    A_TGN,  /* timings.predicted_n */
    A_TGMS, /* timings.predicted_ms */
    A_TCN,  /* timings.cache_n */
};

/* The tool call being read (choices[0]'s tool_calls[i]). */
struct tool {
    bool has_index;
    uint32_t index;
    const char *args;
    size_t args_len;
};

struct js {
    const char *p, *end;
    int depth;
    bool whole;
    bool reasoning_content; /* reasoning_text is reasoning_content's */
    bool has_reason;        /* finish is incomplete_details.reason (over status) */
    const char *type, *delta, *mjson, *ptype, *ptext;
    size_t type_len, delta_len, mjson_len, ptype_len, ptext_len;
    bool has_mjson;
    uint32_t item; /* the Responses output item being read */
    struct lt_wire_resp_said *ci;
    struct tool tool;
    lt_wire_resp_tool_fn tool_fn;
    void *ud;
};

#define JS_MAX_DEPTH 64

static void ws(struct js *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
        s->p++;
}

static bool hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A string at s->p (on its quote): its raw (still escaped) content in *b,
 * *n. Escapes and control characters are checked. */
static int str(struct js *s, const char **b, size_t *n)
{
    const char *c = s->p + 1, *end = s->end;
    *b = c;
    for (; c < end; c++) {
        unsigned char ch = (unsigned char)*c;
        if (ch == '"') {
            *n = (size_t)(c - *b);
            s->p = c + 1;
            return 0;
        }
        if (ch < 0x20)
            return -1;
        if (ch != '\\')
            continue;
        if (++c >= end)
            return -1;
        switch (*c) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
            break;
        case 'u':
            if (end - c < 5 || !hex(c[1]) || !hex(c[2]) || !hex(c[3]) || !hex(c[4]))
                return -1;
            c += 4;
            break;
        default:
            return -1;
        }
    }
    return -1;
}

static int num(struct js *s, uint32_t *v, bool *is_uint)
{
    const char *p = s->p;
    bool neg = false, frac = false;
    uint64_t x = 0;
    if (p < s->end && *p == '-') {
        neg = true;
        p++;
    }
    const char *d = p;
    while (p < s->end && *p >= '0' && *p <= '9') {
        if (x < (1ull << 40))
            x = x * 10 + (uint64_t)(*p - '0');
        p++;
    }
    if (p == d || (*d == '0' && p - d > 1))
        return -1;
    if (p < s->end && *p == '.') {
        frac = true;
        const char *f = ++p;
        while (p < s->end && *p >= '0' && *p <= '9')
            p++;
        if (p == f)
            return -1;
    }
    if (p < s->end && (*p == 'e' || *p == 'E')) {
        frac = true;
        p++;
        if (p < s->end && (*p == '+' || *p == '-'))
            p++;
        const char *e = p;
        while (p < s->end && *p >= '0' && *p <= '9')
            p++;
        if (p == e)
            return -1;
    }
    s->p = p;
    *is_uint = !neg && !frac;
    *v = x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
    return 0;
}

static int lit(struct js *s, const char *w, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n) != 0)
        return -1;
    s->p += n;
    return 0;
}

#define KEY(lit_) (n == sizeof(lit_) - 1 && !memcmp(k, lit_, n))

static enum act key_act(enum ctx c, const char *k, size_t n, bool whole)
{
    switch (c) {
    case C_ROOT:
        if (KEY("choices"))
            return A_CHOICES;
        if (KEY("usage"))
            return A_USAGE;
        if (KEY("meta_info"))
            return A_META;
        if (KEY("error"))
            return A_ERROR;
        if (KEY("text"))
            return A_SGTEXT;
        if (KEY("type"))
            return A_TYPE;
        if (KEY("delta"))
            return A_RDELTA;
        if (KEY("index") || KEY("output_index"))
            return A_OINDEX;
        if (KEY("response"))
            return A_RESPONSE;
        if (KEY("message") && !whole)
            return A_MESSAGE;
        if (KEY("status"))
            return A_STATUS;
        if (KEY("incomplete_details"))
            return A_IDET;
        if (KEY("stop_reason"))
            return A_FINISH;
        if (KEY("timings"))
            return A_TIMINGS;
        /* A whole body's answer; in a stream, response.completed repeats
         * the whole output, which is no new token. */
        if (KEY("content") && whole)
            return A_MBLOCKS;
        if (KEY("output") && whole)
            return A_ROUT;
        break;
    case C_MSTART:
        if (KEY("usage"))
            return A_INUSAGE;
        break;
    case C_INUSAGE:
        if (KEY("input_tokens"))
            return A_PT;
        if (KEY("cache_read_input_tokens"))
            return A_CREAD;
        if (KEY("cache_creation_input_tokens"))
            return A_CWRITE;
        break;
    case C_MDELTA:
    case C_MBLOCK:
        if (KEY("text"))
            return A_MTEXT;
        if (KEY("thinking"))
            return A_MTHINK;
        if (KEY("partial_json") && c == C_MDELTA)
            return A_MJSON;
        if (KEY("input") && c == C_MBLOCK)
            return A_MINPUT;
        if (KEY("stop_reason") && c == C_MDELTA)
            return A_FINISH;
        /* vLLM's early response.reasoning.delta: {"delta":{"content":..}} */
        if (KEY("content") && c == C_MDELTA)
            return A_RDELTA;
        break;
    case C_RITEM:
        if (KEY("content") || KEY("summary"))
            return A_RPARTS;
        if (KEY("arguments"))
            return A_IARGS;
        break;
    case C_RPART:
        if (KEY("type"))
            return A_PTYPE;
        if (KEY("text"))
            return A_PTEXT;
        break;
    case C_IDET:
        if (KEY("reason"))
            return A_IREASON;
        break;
    case C_TIMINGS:
        if (KEY("prompt_n"))
            return A_TPN;
        if (KEY("prompt_ms"))
            return A_TPMS;
        if (KEY("predicted_n"))
            return A_TGN;
        if (KEY("predicted_ms"))
            return A_TGMS;
        if (KEY("cache_n"))
            return A_TCN;
        break;
    case C_CHOICE:
        if (KEY("delta") && !whole)
            return A_DELTA;
        if (KEY("message") && whole)
            return A_DELTA;
        if (KEY("text"))
            return A_CTEXT;
        if (KEY("finish_reason"))
            return A_FINISH;
        break;
    case C_DELTA:
        if (KEY("content"))
            return A_CONTENT;
        if (KEY("reasoning_content"))
            return A_REASONING_CONTENT;
        if (KEY("reasoning"))
            return A_REASONING;
        if (KEY("tool_calls"))
            return A_TOOLCALLS;
        break;
    case C_USAGE:
        if (KEY("prompt_tokens"))
            return A_PT;
        if (KEY("completion_tokens"))
            return A_CT;
        if (KEY("reasoning_tokens"))
            return A_RT;
        if (KEY("cached_tokens"))
            return A_CACHED;
        if (KEY("completion_tokens_details"))
            return A_CTD;
        if (KEY("prompt_tokens_details"))
            return A_PTD;
        if (KEY("finish_reason"))
            return A_FINISH;
        /* The Responses and Messages names of the same counts. */
        if (KEY("input_tokens"))
            return A_PT;
        if (KEY("output_tokens"))
            return A_CT;
        if (KEY("cache_read_input_tokens"))
            return A_CREAD;
        if (KEY("cache_creation_input_tokens"))
            return A_CWRITE;
        if (KEY("output_tokens_details"))
            return A_CTD;
        if (KEY("input_tokens_details"))
            return A_PTD;
        break;
    case C_CTD:
        if (KEY("reasoning_tokens"))
            return A_RT;
        break;
    case C_PTD:
        if (KEY("cached_tokens"))
            return A_CACHED;
        if (KEY("image_tokens"))
            return A_IMG;
        if (KEY("video_tokens"))
            return A_VID;
        break;
    case C_FINISH:
        if (KEY("type"))
            return A_FTYPE;
        break;
    case C_TOOL:
        if (KEY("index"))
            return A_TINDEX;
        if (KEY("function"))
            return A_FUNCTION;
        break;
    case C_FUNC:
        if (KEY("arguments"))
            return A_ARGS;
        break;
    default:
        break;
    }
    return A_NONE;
}

static int value(struct js *s, enum ctx c, enum act a);

static enum ctx ctx_of(enum act a)
{
    switch (a) {
    case A_CHOICES:
        return C_CHOICES;
    case A_USAGE:
    case A_META:
        return C_USAGE;
    case A_DELTA:
        return C_DELTA;
    case A_CTD:
        return C_CTD;
    case A_PTD:
        return C_PTD;
    case A_FINISH:
        return C_FINISH;
    case A_TOOLCALLS:
        return C_TOOLS;
    case A_FUNCTION:
        return C_FUNC;
    case A_RESPONSE:
        return C_ROOT;
    case A_MESSAGE:
        return C_MSTART;
    case A_INUSAGE:
        return C_INUSAGE;
    case A_RDELTA:
        return C_MDELTA;
    case A_MBLOCKS:
        return C_MBLOCKS;
    case A_ROUT:
        return C_ROUT;
    case A_RPARTS:
        return C_RPARTS;
    case A_IDET:
        return C_IDET;
    case A_TIMINGS:
        return C_TIMINGS;
    default:
        return C_SKIP;
    }
}

static int object(struct js *s, enum ctx c)
{
    s->p++;
    ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return 0;
    }
    for (;;) {
        const char *k;
        size_t n;
        if (s->p >= s->end || *s->p != '"' || str(s, &k, &n) < 0)
            return -1;
        ws(s);
        if (s->p >= s->end || *s->p != ':')
            return -1;
        s->p++;
        ws(s);
        enum act a = c == C_SKIP || c == C_CHOICES || c == C_MBLOCKS || c == C_ROUT || c == C_RPARTS
                         ? A_NONE
                         : key_act(c, k, n, s->whole);
        if (value(s, ctx_of(a), a) < 0)
            return -1;
        ws(s);
        if (s->p >= s->end)
            return -1;
        if (*s->p == ',') {
            s->p++;
            ws(s);
            continue;
        }
        if (*s->p != '}')
            return -1;
        s->p++;
        return 0;
    }
}

static int array(struct js *s, enum ctx c, enum act a)
{
    s->p++;
    ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        return 0;
    }
    if (a == A_TOOLCALLS)
        s->ci->content = true; /* a non-empty list of tool-call deltas */
    for (uint32_t i = 0;; i++) {
        enum ctx ec = c == C_CHOICES && i == 0 ? C_CHOICE : C_SKIP;
        if (c == C_TOOLS) {
            ec = C_TOOL;
            memset(&s->tool, 0, sizeof s->tool);
        }
        if (c == C_MBLOCKS) {
            ec = C_MBLOCK;
            s->item = i;
        }
        if (c == C_ROUT) {
            ec = C_RITEM;
            s->item = i;
        }
        if (c == C_RPARTS)
            ec = C_RPART;
        if (value(s, ec, A_NONE) < 0)
            return -1;
        if (c == C_CHOICES && i < UINT32_MAX)
            s->ci->n_choices = i + 1;
        if (c == C_TOOLS && s->tool_fn)
            s->tool_fn(s->ud, i, s->tool.has_index, s->tool.index, s->tool.args, s->tool.args_len);
        ws(s);
        if (s->p >= s->end)
            return -1;
        if (*s->p == ',') {
            s->p++;
            ws(s);
            continue;
        }
        if (*s->p != ']')
            return -1;
        s->p++;
        return 0;
    }
}

static void on_uint(struct js *s, enum act a, uint32_t v)
{
    struct lt_wire_resp_said *ci = s->ci;
    switch (a) {
    case A_TINDEX:
        s->tool.index = v;
        s->tool.has_index = true;
        break;
    case A_PT:
        ci->pt = v;
        ci->has_pt = true;
        break;
    case A_CT:
        ci->ct = v;
        ci->has_ct = true;
        break;
    case A_RT:
        ci->rt = v;
        ci->has_rt = true;
        break;
    case A_CACHED:
        ci->cached = v;
        ci->has_cached = true;
        break;
    case A_IMG:
        ci->img = v;
        ci->has_img = true;
        break;
    case A_VID:
        ci->vid = v;
        ci->has_vid = true;
        break;
    case A_CREAD:
        ci->cache_read = v;
        ci->has_cache_read = true;
        ci->cached = v;
        ci->has_cached = true;
        break;
    case A_CWRITE:
        ci->cache_write = v;
        ci->has_cache_write = true;
        break;
    case A_OINDEX:
        ci->index = v;
        ci->has_index = true;
        break;
    case A_TPN:
        ci->tm.prompt_n = v;
        ci->tm.has_prompt_n = true;
        break;
    case A_TGN:
        ci->tm.predicted_n = v;
        ci->tm.has_predicted_n = true;
        break;
    case A_TCN:
        ci->tm.cache_n = v;
        ci->tm.has_cache_n = true;
        break;
    default:
        break;
    }
}

/* A non-negative JSON number as num() checked it (b to end), as a double:
 * llama-server's times in ms, with their fraction. */
static double num_double(const char *b, const char *end)
{
    double x = 0, scale = 1;
    const char *p = b;
    for (; p < end && *p >= '0' && *p <= '9'; p++)
        x = x * 10 + (*p - '0');
    if (p < end && *p == '.')
        for (p++; p < end && *p >= '0' && *p <= '9'; p++)
            x += (*p - '0') * (scale /= 10);
    if (p < end && (*p == 'e' || *p == 'E')) {
        bool neg = ++p < end && *p == '-';
        int e = 0;
        for (p += p < end && (*p == '-' || *p == '+'); p < end && *p >= '0' && *p <= '9'; p++)
            e = e < 400 ? e * 10 + (*p - '0') : e;
        for (; e > 0; e--)
            x = neg ? x / 10 : x * 10;
    }
    return x;
}

/* timings.prompt_ms and predicted_ms: a negative or non-finite time is
 * not one. */
static void on_ms(struct js *s, enum act a, const char *b)
{
    if (*b == '-')
        return;
    double ms = num_double(b, s->p);
    if (!(ms < 1e15))
        return;
    if (a == A_TPMS) {
        s->ci->tm.prompt_ms = ms;
        s->ci->tm.has_prompt_ms = true;
    } else {
        s->ci->tm.predicted_ms = ms;
        s->ci->tm.has_predicted_ms = true;
    }
}

/* Is a Responses status the end of the answer (not "in_progress" or
 * "queued", which response.created and response.in_progress carry)? */
static bool status_final(const char *b, size_t n)
{
    return !(n == 11 && !memcmp(b, "in_progress", 11)) && !(n == 6 && !memcmp(b, "queued", 6));
}

static void on_string(struct js *s, enum act a, const char *b, size_t n)
{
    struct lt_wire_resp_said *ci = s->ci;
    switch (a) {
    case A_CONTENT:
    case A_CTEXT:
        if (n)
            ci->content = true;
        ci->text = b;
        ci->text_len = n;
        break;
    case A_REASONING_CONTENT:
    case A_REASONING:
        if (n)
            ci->reasoning = true;
        if (a == A_REASONING_CONTENT || !s->reasoning_content) {
            ci->reasoning_text = b;
            ci->reasoning_len = n;
            s->reasoning_content = a == A_REASONING_CONTENT;
        }
        break;
    case A_ARGS:
        s->tool.args = b;
        s->tool.args_len = n;
        break;
    case A_SGTEXT:
        ci->has_sg_text = true;
        ci->sg_text_len = n;
        break;
    case A_FINISH:
    case A_FTYPE:
        ci->finish = b;
        ci->finish_len = n;
        break;
    case A_STATUS:
        if (!s->has_reason && status_final(b, n)) {
            ci->finish = b;
            ci->finish_len = n;
        }
        break;
    case A_IREASON:
        s->has_reason = true;
        ci->finish = b;
        ci->finish_len = n;
        break;
    case A_ERROR:
        ci->error = true;
        break;
    case A_TYPE:
        s->type = b;
        s->type_len = n;
        break;
    case A_RDELTA:
        s->delta = b;
        s->delta_len = n;
        break;
    case A_MTEXT:
        if (n)
            ci->content = true;
        ci->text = b;
        ci->text_len = n;
        break;
    case A_MTHINK:
        if (n)
            ci->reasoning = true;
        ci->reasoning_text = b;
        ci->reasoning_len = n;
        break;
    case A_MJSON:
        s->mjson = b;
        s->mjson_len = n;
        s->has_mjson = true;
        break;
    case A_PTYPE:
        s->ptype = b;
        s->ptype_len = n;
        break;
    case A_PTEXT:
        s->ptext = b;
        s->ptext_len = n;
        break;
    case A_IARGS:
        if (n)
            ci->content = true;
        ci->tool = true;
        if (s->tool_fn)
            s->tool_fn(s->ud, s->item, true, s->item, b, n);
        break;
    default:
        break;
    }
}

/* A whole Messages body's tool_use block: its input object (raw JSON) is
 * the call's arguments. */
static void tool_input(struct js *s, const char *raw, size_t n)
{
    s->ci->content = true;
    s->ci->tool = true;
    if (s->tool_fn)
        s->tool_fn(s->ud, s->item, true, s->item, raw, n);
}

static bool prefix(const char *b, size_t n, const char *lit_)
{
    size_t k = strlen(lit_);
    return n >= k && !memcmp(b, lit_, k);
}

/* A Responses body's content part, once read whole: reasoning_text and
 * summary_text are reasoning, output_text and refusal are the answer. */
static void part_end(struct js *s)
{
    struct lt_wire_resp_said *ci = s->ci;
    if (!s->ptype || !s->ptext)
        return;
    if (prefix(s->ptype, s->ptype_len, "reasoning") || prefix(s->ptype, s->ptype_len, "summary")) {
        if (s->ptext_len)
            ci->reasoning = true;
        ci->reasoning_text = s->ptext;
        ci->reasoning_len = s->ptext_len;
    } else {
        if (s->ptext_len)
            ci->content = true;
        ci->text = s->ptext;
        ci->text_len = s->ptext_len;
    }
}

static int value(struct js *s, enum ctx c, enum act a)
{
    if (s->p >= s->end)
        return -1;
    if (++s->depth > JS_MAX_DEPTH)
        return -1;
    int rc = 0;
    const char *b;
    size_t n;
    uint32_t v;
    bool u;
    /* choices must be a list and usage an object (or null): anything else
     * is a body that is not what the API says, not a short answer. */
    if ((a == A_CHOICES && *s->p != '[' && *s->p != 'n') ||
        (a == A_USAGE && *s->p != '{' && *s->p != 'n'))
        return -1;
    switch (*s->p) {
    case '{':
        if (a == A_ERROR)
            s->ci->error = true;
        if (a == A_META)
            s->ci->has_meta = true;
        if (a == A_USAGE)
            s->ci->usage = true;
        if (a == A_TIMINGS)
            s->ci->timings = true;
        if (c == C_RPART)
            s->ptype = s->ptext = NULL;
        {
            const char *start = s->p;
            rc = object(s, c);
            if (rc == 0 && a == A_MINPUT)
                tool_input(s, start, (size_t)(s->p - start));
        }
        if (rc == 0 && c == C_RPART)
            part_end(s);
        break;
    case '[':
        if (a == A_ERROR)
            s->ci->error = true;
        rc = array(s, c, a);
        break;
    case '"':
        rc = str(s, &b, &n);
        if (rc == 0)
            on_string(s, a, b, n);
        break;
    case 't':
        rc = lit(s, "true", 4);
        break;
    case 'f':
        rc = lit(s, "false", 5);
        break;
    case 'n':
        rc = lit(s, "null", 4);
        break;
    default:
        b = s->p;
        rc = num(s, &v, &u);
        if (rc == 0 && u)
            on_uint(s, a, v);
        if (rc == 0 && (a == A_TPMS || a == A_TGMS))
            on_ms(s, a, b);
        if (rc == 0 && a == A_ERROR)
            s->ci->error = true;
        break;
    }
    s->depth--;
    return rc;
}

#define IS(lit_) (s->type_len == sizeof(lit_) - 1 && !memcmp(s->type, lit_, s->type_len))

/* What a typed event (Responses, Messages) said, now that its type is
 * known whatever the order of its keys. The token-bearing ones: Responses'
 * response.output_text.delta, response.refusal.delta,
 * response.function_call_arguments.delta, response.reasoning_text.delta and
 * response.reasoning_summary_text.delta (and their earlier names
 * response.reasoning.delta and response.reasoning_summary.delta, whose
 * delta early vLLM sent as {"content": ...}) with a non-empty delta; Messages'
 * content_block_delta with non-empty text, thinking or partial_json
 * (content_block_start and response.output_item.added only announce a
 * block: its first tokens follow in a delta). */
static void typed_event(struct js *s)
{
    struct lt_wire_resp_said *ci = s->ci;
    ci->messages = IS("message") || prefix(s->type, s->type_len, "message_") ||
                   prefix(s->type, s->type_len, "content_block_");
    if (IS("error")) {
        ci->error = true;
        return;
    }
    if (IS("message_stop")) {
        ci->stop = true;
        return;
    }
    if (IS("content_block_delta") && s->has_mjson) {
        if (s->mjson_len)
            ci->content = true;
        ci->tool = true;
        if (s->tool_fn)
            s->tool_fn(s->ud, 0, ci->has_index, ci->index, s->mjson, s->mjson_len);
        return;
    }
    if (!s->delta || !prefix(s->type, s->type_len, "response."))
        return;
    if (IS("response.output_text.delta") || IS("response.refusal.delta")) {
        ci->content = s->delta_len > 0;
        ci->text = s->delta;
        ci->text_len = s->delta_len;
    } else if (IS("response.reasoning_text.delta") || IS("response.reasoning_summary_text.delta") ||
               IS("response.reasoning.delta") ||
               IS("response.reasoning_summary.delta")) { /* the last two: earlier names */
        ci->reasoning = s->delta_len > 0;
        ci->reasoning_text = s->delta;
        ci->reasoning_len = s->delta_len;
    } else if (IS("response.function_call_arguments.delta")) {
        ci->content = s->delta_len > 0;
        ci->tool = true;
        if (s->tool_fn)
            s->tool_fn(s->ud, 0, ci->has_index, ci->index, s->delta, s->delta_len);
    }
}

#undef IS

int lt_wire_resp_scan(const char *data, size_t len, bool whole, struct lt_wire_resp_said *said,
                      lt_wire_resp_tool_fn tool_fn, void *ud)
{
    struct js s = {
        .p = data, .end = data + len, .whole = whole, .ci = said, .tool_fn = tool_fn, .ud = ud};
    memset(said, 0, sizeof *said);
    ws(&s);
    if (s.p >= s.end || *s.p != '{' || value(&s, C_ROOT, A_NONE) < 0)
        return LT_EFORMAT;
    ws(&s);
    if (s.p != s.end)
        return LT_EFORMAT;
    if (s.type)
        typed_event(&s);
    return 0;
}

static int hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

static int put_utf8(struct lt_buf *out, uint32_t cp)
{
    char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xc0 | cp >> 6);
        b[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xe0 | cp >> 12);
        b[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        b[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        b[0] = (char)(0xf0 | cp >> 18);
        b[1] = (char)(0x80 | (cp >> 12 & 0x3f));
        b[2] = (char)(0x80 | (cp >> 6 & 0x3f));
        b[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    return lt_buf_append(out, b, n);
}

/* The code point of a \u escape at p (after "\u"), with its low surrogate
 * when one follows; *used: the characters read after the first "\u". */
static int code_point(const char *p, size_t n, size_t *used)
{
    int hi = n >= 4 ? hex4(p) : -1;
    *used = 4;
    if (hi < 0)
        return -1;
    if (hi < 0xd800 || hi > 0xdfff)
        return hi;
    if (hi < 0xdc00 && n >= 10 && p[4] == '\\' && p[5] == 'u') {
        int lo = hex4(p + 6);
        if (lo >= 0xdc00 && lo <= 0xdfff) {
            *used = 10;
            return 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
        }
    }
    return 0xfffd; /* a lone surrogate */
}

int lt_wire_resp_unescape(const char *raw, size_t n, struct lt_buf *out)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *p = raw, *end = raw + n;
    int rc = 0;
    while (p < end && rc == 0) {
        const char *bs = memchr(p, '\\', (size_t)(end - p));
        if (!bs)
            return lt_buf_append(out, p, (size_t)(end - p));
        if (bs > p && (rc = lt_buf_append(out, p, (size_t)(bs - p))) < 0)
            return rc;
        if (end - bs < 2)
            return LT_EFORMAT;
        const char *e = memchr(from, bs[1], sizeof from - 1);
        if (e) {
            rc = lt_buf_append(out, &to[e - from], 1);
            p = bs + 2;
            continue;
        }
        if (bs[1] != 'u')
            return LT_EFORMAT;
        size_t used;
        int cp = code_point(bs + 2, (size_t)(end - bs - 2), &used);
        if (cp < 0)
            return LT_EFORMAT;
        rc = put_utf8(out, (uint32_t)cp);
        p = bs + 2 + used;
    }
    return rc;
}

bool lt_wire_resp_is_done(const char *data, size_t len)
{
    while (len && (data[len - 1] == ' ' || data[len - 1] == '\t'))
        len--;
    return len == 6 && !memcmp(data, "[DONE]", 6);
}

const char *lt_wire_resp_finish_norm(const char *f, size_t n, bool tool, size_t *len)
{
    static const struct {
        const char *from, *to;
    } map[] = {
        {"end_turn", "stop"},       {"stop_sequence", "stop"},       {"max_tokens", "length"},
        {"tool_use", "tool_calls"}, {"max_output_tokens", "length"},
    };
    const char *to = NULL;
    for (size_t i = 0; i < sizeof map / sizeof map[0] && !to; i++)
        if (strlen(map[i].from) == n && !memcmp(f, map[i].from, n))
            to = map[i].to;
    if (n == 9 && !memcmp(f, "completed", 9))
        to = tool ? "tool_calls" : "stop";
    if (!to) {
        *len = n;
        return f;
    }
    *len = strlen(to);
    return to;
}

/* Remember the counts of a usage object (or SGLang's meta_info). Returns
 * whether it carried a completion count. */
static bool take_usage(struct lt_wire_resp *r, const struct lt_wire_resp_said *ci)
{
    if (!lt_wire_resp_said_usage(ci))
        return false;
    r->has_usage = true;
    r->usage_events++;
    r->out = ci->ct;
    if (ci->has_pt)
        r->in = lt_wire_resp_said_in(ci);
    if (ci->has_rt) {
        r->reasoning = ci->rt;
        r->has_reasoning = true;
    }
    if (ci->has_cached) {
        r->cached = ci->cached;
        r->has_cached = true;
    }
    if (ci->has_img) {
        r->img = ci->img;
        r->has_img = true;
    }
    if (ci->has_vid) {
        r->vid = ci->vid;
        r->has_vid = true;
    }
    return true;
}

/* One scanned chunk or body. `whole` is a non-streamed body. */
static void interpret(struct lt_wire_resp *r, struct lt_wire_resp_said *ci, lt_mono now, bool whole)
{
    if (ci->error)
        r->error_event = true;
    uint32_t before = r->last_usage_out;
    bool had_usage = r->usage_events > 0;
    bool usage_here = take_usage(r, ci);
    if (!usage_here && ci->has_pt) { /* message_start: the prompt's counts only */
        r->in = lt_wire_resp_said_in(ci);
        if (ci->has_cached) {
            r->cached = ci->cached;
            r->has_cached = true;
        }
    }
    if (ci->timings) { /* llama-server repeats it: the last is the whole request's */
        r->timings = ci->tm;
        r->has_timings = true;
    }
    if (ci->stop)
        r->done = true;
    if (ci->messages)
        r->messages = true;
    if (ci->has_meta && ci->has_sg_text) { /* SGLang: the text so far */
        ci->content = ci->sg_text_len > r->sglang_text_len;
        if (ci->content)
            r->sglang_text_len = ci->sg_text_len;
    }
    bool bearing = lt_wire_resp_said_tokens(ci);
    if (ci->tool)
        r->tool_seen = true;
    if (ci->finish) {
        size_t n;
        const char *f = lt_wire_resp_finish_norm(ci->finish, ci->finish_len, r->tool_seen, &n);
        if (n > sizeof r->finish - 1)
            n = sizeof r->finish - 1;
        memcpy(r->finish, f, n);
        r->finish[n] = '\0';
        r->has_finish = true;
    }
    if (whole) {
        /* A whole Messages body's thinking has no count. */
        r->reasoning_unknown = ci->messages && !ci->has_rt;
        uint32_t n = r->has_usage ? r->out : (bearing ? 1 : 0);
        if (n) {
            add_chunk(r, now, n);
            r->first_token = r->first_content = now;
            r->has_first_token = r->has_first_content = true;
        }
        return;
    }
    if (usage_here)
        r->last_usage_out = r->out;
    if (!bearing)
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
    if (ci->content && !r->has_first_content) {
        r->first_content = now;
        r->has_first_content = true;
    }
    if (ci->reasoning && !ci->content)
        r->counted_reasoning += tokens;
    /* Anthropic's usage has no reasoning count: the thinking deltas are it. */
    if (r->messages && !r->has_reasoning)
        r->reasoning = r->counted_reasoning;
}

int lt_wire_resp_event(struct lt_wire_resp *r, const char *data, size_t len, lt_mono now)
{
    if (lt_wire_resp_is_done(data, len)) {
        r->done = true;
        return 0;
    }
    struct lt_wire_resp_said ci;
    if (lt_wire_resp_scan(data, len, false, &ci, NULL, NULL) < 0)
        return LT_EFORMAT;
    interpret(r, &ci, now, false);
    return 0;
}

int lt_wire_resp_body(struct lt_wire_resp *r, const char *body, size_t len, lt_mono t)
{
    struct lt_wire_resp_said ci;
    if (lt_wire_resp_scan(body, len, true, &ci, NULL, NULL) < 0)
        return LT_EFORMAT;
    interpret(r, &ci, t, true);
    return 0;
}

/*
 * Interpretation of OpenAI-compatible (and SGLang /generate) responses.
 *
 * Every chunk is parsed by a small single-pass JSON scanner written for this
 * job: it checks the whole value's syntax (so a broken chunk is caught as
 * malformed) but builds no tree and allocates nothing; it only notes the few
 * fields replay needs, by where they are (root, first choice, its delta or
 * message, usage or meta_info). A general JSON library spent four fifths of
 * replay's CPU time per chunk building and freeing trees it then threw away.
 * Only the first choice is read (replay always asks for n = 1).
 */
#include "replay/replay_resp.h"

#include "traces/lt_err.h"

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

/* What one chunk (or body) said. */
struct cinfo {
    bool content, reasoning, error;
    bool has_ct, has_pt, has_rt, has_cached;
    uint32_t ct, pt, rt, cached;
    bool has_meta;   /* SGLang meta_info */
    bool has_text;   /* SGLang cumulative text */
    size_t text_len; /* its raw (escaped) length: only compared with itself */
    const char *finish;
    size_t finish_len;
};

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
    A_REASONING,
    A_TOOLCALLS,
    A_PT,
    A_CT,
    A_RT,
    A_CACHED,
    A_CTD,
    A_PTD,
    A_FTYPE,
};

struct js {
    const char *p, *end;
    int depth;
    bool whole;
    struct cinfo *ci;
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
        if (KEY("reasoning_content") || KEY("reasoning"))
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
        break;
    case C_CTD:
        if (KEY("reasoning_tokens"))
            return A_RT;
        break;
    case C_PTD:
        if (KEY("cached_tokens"))
            return A_CACHED;
        break;
    case C_FINISH:
        if (KEY("type"))
            return A_FTYPE;
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
        enum act a = c == C_SKIP || c == C_CHOICES ? A_NONE : key_act(c, k, n, s->whole);
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
    for (size_t i = 0;; i++) {
        enum ctx ec = c == C_CHOICES && i == 0 ? C_CHOICE : C_SKIP;
        if (value(s, ec, A_NONE) < 0)
            return -1;
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

static void on_uint(struct cinfo *ci, enum act a, uint32_t v)
{
    switch (a) {
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
    default:
        break;
    }
}

static void on_string(struct cinfo *ci, enum act a, const char *b, size_t n)
{
    switch (a) {
    case A_CONTENT:
    case A_CTEXT:
        if (n)
            ci->content = true;
        break;
    case A_REASONING:
        if (n)
            ci->reasoning = true;
        break;
    case A_SGTEXT:
        ci->has_text = true;
        ci->text_len = n;
        break;
    case A_FINISH:
    case A_FTYPE:
        ci->finish = b;
        ci->finish_len = n;
        break;
    case A_ERROR:
        ci->error = true;
        break;
    default:
        break;
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
    switch (*s->p) {
    case '{':
        if (a == A_ERROR)
            s->ci->error = true;
        if (a == A_META)
            s->ci->has_meta = true;
        rc = object(s, c);
        break;
    case '[':
        if (a == A_ERROR)
            s->ci->error = true;
        rc = array(s, c, a);
        break;
    case '"':
        rc = str(s, &b, &n);
        if (rc == 0)
            on_string(s->ci, a, b, n);
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
        rc = num(s, &v, &u);
        if (rc == 0 && u)
            on_uint(s->ci, a, v);
        if (rc == 0 && a == A_ERROR)
            s->ci->error = true;
        break;
    }
    s->depth--;
    return rc;
}

/* Scan a whole JSON object. Returns 0 or LT_EFORMAT. */
static int scan(const char *data, size_t len, bool whole, struct cinfo *ci)
{
    struct js s = {.p = data, .end = data + len, .whole = whole, .ci = ci};
    memset(ci, 0, sizeof *ci);
    ws(&s);
    if (s.p >= s.end || *s.p != '{' || value(&s, C_ROOT, A_NONE) < 0)
        return LT_EFORMAT;
    ws(&s);
    return s.p == s.end ? 0 : LT_EFORMAT;
}

/* Remember the counts of a usage object (or SGLang's meta_info). Returns
 * whether it carried a completion count. */
static bool take_usage(struct lt_replay_resp *r, const struct cinfo *ci)
{
    if (!ci->has_ct)
        return false;
    r->has_usage = true;
    r->usage_events++;
    r->out = ci->ct;
    r->in = ci->pt;
    if (ci->has_rt)
        r->reasoning = ci->rt;
    if (ci->has_cached)
        r->cached = ci->cached;
    return true;
}

/* One scanned chunk or body. `whole` is a non-streamed body. */
static void interpret(struct lt_replay_resp *r, const struct cinfo *ci, lt_mono now, bool whole)
{
    bool content = ci->content, reasoning = ci->reasoning;
    if (ci->error)
        r->error_event = true;
    uint32_t before = r->last_usage_out;
    bool had_usage = r->usage_events > 0;
    bool usage_here = take_usage(r, ci);
    if (ci->has_meta && ci->has_text) { /* SGLang: the text so far */
        content = ci->text_len > r->sglang_text_len;
        if (content)
            r->sglang_text_len = ci->text_len;
    }
    if (ci->finish) {
        size_t n = ci->finish_len < sizeof r->finish - 1 ? ci->finish_len : sizeof r->finish - 1;
        memcpy(r->finish, ci->finish, n);
        r->finish[n] = '\0';
        r->has_finish = true;
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
    struct cinfo ci;
    if (scan(data, len, false, &ci) < 0)
        return LT_EFORMAT;
    interpret(r, &ci, now, false);
    return 0;
}

int lt_replay_resp_body(struct lt_replay_resp *r, const char *body, size_t len, lt_mono t)
{
    struct cinfo ci;
    if (scan(body, len, true, &ci) < 0)
        return LT_EFORMAT;
    interpret(r, &ci, t, true);
    return 0;
}

/*
 * The mapping from each server's metric names to the canonical quantities
 * (prom_map.h), and the user's mapping files that add to it.
 *
 * A rule says: canonical quantity C is metric M (for a scalar, the sample
 * name as written, e.g. `tgi_request_input_length_sum`; for a histogram,
 * the family name), restricted to the series whose labels match, times a
 * factor. For each quantity the rules are tried in order, the user's files
 * (last loaded first) before the built-in table, and the first rule whose
 * metric is on the page wins; so a server that shows an old and a new name
 * for one thing during a deprecation window (vLLM 0.9 shows both
 * gpu_cache_usage_perc and kv_cache_usage_perc) is counted once, by the new
 * name, which comes first in the table. docs/server-metrics.md is this
 * table in prose, with the sources; change both together.
 */
#include "metrics/prom_map.h"

#include "base/lt_buf.h"
#include "base/lt_lines.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rule {
    enum lt_prom_canon canon;
    const char *metric;
    double factor;
    /* only with this sample on the page (SGLang's queries, see below) */
    const char *requires;
    size_t nfilters;
    const char *fname[LT_PROM_MAP_FILTERS_MAX], *fvalue[LT_PROM_MAP_FILTERS_MAX];
    bool none; /* a file's `C = none`: C stays absent */
};

struct lt_prom_map {
    struct rule *rules; /* the files' rules, most recent file first */
    size_t nrules;
    char **strings; /* what the rules point at */
    size_t nstrings;
};

static const struct {
    const char *name, *unit;
    enum lt_prom_agg agg;
} canon_info[LT_PM_COUNT] = {
    [LT_PM_RUNNING] = {"requests_running", "requests", LT_PROM_AGG_SUM},
    [LT_PM_WAITING] = {"requests_waiting", "requests", LT_PROM_AGG_SUM},
    [LT_PM_KV_USAGE] = {"kv_cache_usage", "1", LT_PROM_AGG_MEAN},
    [LT_PM_PREEMPTIONS] = {"preemptions_total", "preemptions", LT_PROM_AGG_SUM},
    [LT_PM_PROMPT_TOKENS] = {"prompt_tokens_total", "tokens", LT_PROM_AGG_SUM},
    [LT_PM_GEN_TOKENS] = {"generation_tokens_total", "tokens", LT_PROM_AGG_SUM},
    [LT_PM_PREFIX_QUERIES] = {"prefix_cache_queries_total", "tokens", LT_PROM_AGG_SUM},
    [LT_PM_PREFIX_HITS] = {"prefix_cache_hits_total", "tokens", LT_PROM_AGG_SUM},
    [LT_PM_PREFIX_HIT_RATE] = {"prefix_cache_hit_rate", "1", LT_PROM_AGG_MEAN},
    [LT_PM_GPU_UTIL] = {"gpu_utilization", "1", LT_PROM_AGG_MEAN},
    [LT_PM_GPU_MEM_USED] = {"gpu_memory_used_bytes", "bytes", LT_PROM_AGG_SUM},
    [LT_PM_GPU_POWER] = {"gpu_power_watts", "W", LT_PROM_AGG_SUM},
    [LT_PM_GPU_ENERGY] = {"gpu_energy_joules_total", "J", LT_PROM_AGG_SUM},
    [LT_PM_TTFT] = {"ttft_seconds", "s", LT_PROM_AGG_SUM},
    [LT_PM_ITL] = {"itl_seconds", "s", LT_PROM_AGG_SUM},
    [LT_PM_E2E] = {"e2e_seconds", "s", LT_PROM_AGG_SUM},
};

/* The built-in table. Within one quantity, newer names before older ones.
 * Sources: each server's documentation and metrics code (see
 * docs/server-metrics.md). */
#define R(c, m, f)                                                                                 \
    {                                                                                              \
        .canon = (c), .metric = (m), .factor = (f)                                                 \
    }
static const struct rule builtin[] = {
    /* vLLM: 0.x "V0" engine and the V1 engine (0.8+). Counters get the
     * _total suffix from prometheus_client. */
    R(LT_PM_RUNNING, "vllm:num_requests_running", 1),
    R(LT_PM_WAITING, "vllm:num_requests_waiting", 1),
    R(LT_PM_KV_USAGE, "vllm:kv_cache_usage_perc", 1), /* "perc" but 0..1 */
    R(LT_PM_KV_USAGE, "vllm:gpu_cache_usage_perc", 1),
    R(LT_PM_PREEMPTIONS, "vllm:num_preemptions_total", 1),
    R(LT_PM_PROMPT_TOKENS, "vllm:prompt_tokens_total", 1),
    R(LT_PM_GEN_TOKENS, "vllm:generation_tokens_total", 1),
    R(LT_PM_PREFIX_QUERIES, "vllm:prefix_cache_queries_total", 1),
    R(LT_PM_PREFIX_QUERIES, "vllm:gpu_prefix_cache_queries_total", 1),
    R(LT_PM_PREFIX_HITS, "vllm:prefix_cache_hits_total", 1),
    R(LT_PM_PREFIX_HITS, "vllm:gpu_prefix_cache_hits_total", 1),
    R(LT_PM_PREFIX_HIT_RATE, "vllm:gpu_prefix_cache_hit_rate", 1),
    R(LT_PM_TTFT, "vllm:time_to_first_token_seconds", 1),
    R(LT_PM_ITL, "vllm:inter_token_latency_seconds", 1),
    R(LT_PM_ITL, "vllm:time_per_output_token_seconds", 1),
    R(LT_PM_E2E, "vllm:e2e_request_latency_seconds", 1),
    /* SGLang (--enable-metrics) */
    R(LT_PM_RUNNING, "sglang:num_running_reqs", 1),
    R(LT_PM_WAITING, "sglang:num_queue_reqs", 1),
    R(LT_PM_KV_USAGE, "sglang:token_usage", 1),
    R(LT_PM_PROMPT_TOKENS, "sglang:prompt_tokens_total", 1),
    R(LT_PM_GEN_TOKENS, "sglang:generation_tokens_total", 1),
    R(LT_PM_PREFIX_HITS, "sglang:cached_tokens_total", 1),
    /* SGLang counts cached and prompt tokens of the same finished requests,
     * so the prompt tokens are the queries, but only next to the hits. */
    {.canon = LT_PM_PREFIX_QUERIES,
     .metric = "sglang:prompt_tokens_total",
     .factor = 1,
     .requires = "sglang:cached_tokens_total"},
    R(LT_PM_PREFIX_HIT_RATE, "sglang:cache_hit_rate", 1),
    R(LT_PM_TTFT, "sglang:time_to_first_token_seconds", 1),
    R(LT_PM_ITL, "sglang:inter_token_latency_seconds", 1),
    R(LT_PM_ITL, "sglang:time_per_output_token_seconds", 1),
    R(LT_PM_E2E, "sglang:e2e_request_latency_seconds", 1),
    /* llama.cpp's llama-server (--metrics) */
    R(LT_PM_RUNNING, "llamacpp:requests_processing", 1),
    R(LT_PM_WAITING, "llamacpp:requests_deferred", 1),
    R(LT_PM_KV_USAGE, "llamacpp:kv_cache_usage_ratio", 1),
    R(LT_PM_PROMPT_TOKENS, "llamacpp:prompt_tokens_total", 1),
    R(LT_PM_GEN_TOKENS, "llamacpp:tokens_predicted_total", 1),
    /* TGI: token counts exist only as per-request histograms; their _sum is
     * the running total over requests (a counter). */
    R(LT_PM_RUNNING, "tgi_batch_current_size", 1),
    R(LT_PM_WAITING, "tgi_queue_size", 1),
    R(LT_PM_PROMPT_TOKENS, "tgi_request_input_length_sum", 1),
    R(LT_PM_GEN_TOKENS, "tgi_request_generated_tokens_sum", 1),
    R(LT_PM_ITL, "tgi_request_mean_time_per_token_duration", 1),
    R(LT_PM_E2E, "tgi_request_duration", 1),
    /* NVIDIA DCGM exporter: percent, MiB, W, mJ */
    R(LT_PM_GPU_UTIL, "DCGM_FI_DEV_GPU_UTIL", 0.01),
    R(LT_PM_GPU_MEM_USED, "DCGM_FI_DEV_FB_USED", 1048576.0),
    R(LT_PM_GPU_POWER, "DCGM_FI_DEV_POWER_USAGE", 1),
    R(LT_PM_GPU_ENERGY, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 0.001),
};
#undef R

const char *lt_prom_map_canon_name(enum lt_prom_canon c)
{
    return (unsigned)c < LT_PM_COUNT ? canon_info[c].name : "?";
}

const char *lt_prom_map_canon_unit(enum lt_prom_canon c)
{
    return (unsigned)c < LT_PM_COUNT ? canon_info[c].unit : "?";
}

enum lt_prom_agg lt_prom_map_canon_agg(enum lt_prom_canon c)
{
    return (unsigned)c < LT_PM_COUNT ? canon_info[c].agg : LT_PROM_AGG_SUM;
}

int lt_prom_map_canon_find(const char *name)
{
    for (int c = 0; c < LT_PM_COUNT; c++)
        if (strcmp(canon_info[c].name, name) == 0)
            return c;
    return -1;
}

static const struct {
    const char *prefix;
    enum lt_prom_server server;
    const char *name;
} servers[] = {
    {"vllm:", LT_PROM_SERVER_VLLM, "vllm"},
    {"sglang:", LT_PROM_SERVER_SGLANG, "sglang"},
    {"llamacpp:", LT_PROM_SERVER_LLAMACPP, "llama.cpp"},
    {"tgi_", LT_PROM_SERVER_TGI, "tgi"},
    {"DCGM_FI_", LT_PROM_SERVER_DCGM, "dcgm"},
};
#define NSERVERS (sizeof servers / sizeof servers[0])

const char *lt_prom_map_server_name(enum lt_prom_server s)
{
    for (size_t i = 0; i < NSERVERS; i++)
        if (servers[i].server == s)
            return servers[i].name;
    return "unknown";
}

enum lt_prom_server lt_prom_map_detect(const struct lt_prom_page *pg)
{
    size_t count[NSERVERS] = {0};
    for (size_t i = 0; i < pg->nsamples; i++)
        for (size_t k = 0; k < NSERVERS; k++)
            if (strncmp(pg->samples[i].name, servers[k].prefix, strlen(servers[k].prefix)) == 0)
                count[k]++;
    size_t best = NSERVERS;
    for (size_t k = 0; k < NSERVERS; k++)
        if (count[k] && (best == NSERVERS || count[k] > count[best]))
            best = k;
    return best == NSERVERS ? LT_PROM_SERVER_UNKNOWN : servers[best].server;
}

/* --- applying ------------------------------------------------------------ */

/* The family that holds samples named `name` (the family itself, or the
 * histogram/summary NAME of NAME_sum / NAME_count / NAME_bucket); -1. */
static long family_of(const struct lt_prom_page *pg, const char *name)
{
    const struct lt_prom_family *f = lt_prom_page_family(pg, name);
    if (f)
        return f - pg->families;
    static const char *const sfx[] = {"_sum", "_count", "_bucket"};
    size_t n = strlen(name);
    for (size_t i = 0; i < 3; i++) {
        size_t sl = strlen(sfx[i]);
        char base[LT_PROM_NAME_MAX + 1];
        if (n <= sl || n - sl > LT_PROM_NAME_MAX || strcmp(name + n - sl, sfx[i]) != 0)
            continue;
        memcpy(base, name, n - sl);
        base[n - sl] = '\0';
        f = lt_prom_page_family(pg, base);
        if (f)
            return f - pg->families;
    }
    return -1;
}

static bool matches(const struct rule *r, const struct lt_prom_sample *s)
{
    for (size_t i = 0; i < r->nfilters; i++) {
        const char *v = lt_prom_sample_label(s, r->fname[i]);
        if (!v || strcmp(v, r->fvalue[i]) != 0)
            return false;
    }
    return true;
}

static bool page_has(const struct lt_prom_page *pg, const char *name)
{
    long f = family_of(pg, name);
    if (f < 0)
        return false;
    for (size_t i = 0; i < pg->nsamples; i++)
        if ((long)pg->samples[i].family == f && strcmp(pg->samples[i].name, name) == 0)
            return true;
    return false;
}

static struct lt_prom_gpu *gpu_slot(struct lt_prom_values *out, const char *id)
{
    for (size_t i = 0; i < out->ngpus; i++)
        if (strcmp(out->gpus[i].id, id) == 0)
            return &out->gpus[i];
    if (out->ngpus == LT_PROM_MAP_GPUS_MAX || strlen(id) >= LT_PROM_MAP_GPU_ID_MAX) {
        out->gpus_truncated = true;
        return NULL;
    }
    struct lt_prom_gpu *g = &out->gpus[out->ngpus++];
    memset(g, 0, sizeof *g);
    snprintf(g->id, sizeof g->id, "%s", id);
    return g;
}

static bool is_gpu_canon(enum lt_prom_canon c)
{
    return c >= LT_PM_GPU_UTIL && c <= LT_PM_GPU_ENERGY;
}

/* A scalar rule: true when it matched a series (NaN series do not count). */
static bool apply_scalar(const struct rule *r, const struct lt_prom_page *pg,
                         struct lt_prom_values *out)
{
    long f = family_of(pg, r->metric);
    if (f < 0 || (r->requires && !page_has(pg, r->requires)))
        return false;
    double total = 0;
    size_t n = 0;
    for (size_t i = 0; i < pg->nsamples; i++) {
        const struct lt_prom_sample *s = &pg->samples[i];
        if ((long)s->family != f || s->role == LT_PROM_BUCKET || s->role == LT_PROM_QUANTILE ||
            strcmp(s->name, r->metric) != 0 || !matches(r, s) || isnan(s->value))
            continue;
        double v = s->value * r->factor;
        total += v;
        n++;
        const char *gid = is_gpu_canon(r->canon) ? lt_prom_sample_label(s, "gpu") : NULL;
        struct lt_prom_gpu *g = gid ? gpu_slot(out, gid) : NULL;
        if (g) {
            g->v[r->canon] += v; /* one series per GPU and field in practice */
            g->present |= 1u << r->canon;
        }
    }
    if (!n)
        return false;
    out->v[r->canon] = canon_info[r->canon].agg == LT_PROM_AGG_MEAN ? total / (double)n : total;
    return true;
}

/* A histogram rule: the family must be a histogram on the page. */
static bool apply_hist(const struct rule *r, const struct lt_prom_page *pg,
                       struct lt_prom_values *out)
{
    const struct lt_prom_family *fam = lt_prom_page_family(pg, r->metric);
    if (!fam || fam->type != LT_PROM_HISTOGRAM)
        return false;
    size_t f = (size_t)(fam - pg->families);
    struct lt_prom_hist *h = &out->hist[r->canon - LT_PM_SCALARS];
    memset(h, 0, sizeof *h);
    bool any = false;
    for (size_t i = 0; i < pg->nsamples; i++) {
        const struct lt_prom_sample *s = &pg->samples[i];
        if (s->family != f || !matches(r, s))
            continue;
        any = true;
        if (s->role == LT_PROM_SUM) {
            h->sum += s->value * r->factor;
        } else if (s->role == LT_PROM_COUNT) {
            h->count += s->value;
        } else if (s->role == LT_PROM_BUCKET) {
            double le = s->bound * r->factor;
            size_t k = 0;
            while (k < h->nbuckets && h->le[k] < le)
                k++;
            if (k == h->nbuckets || h->le[k] != le) {
                if (h->nbuckets == LT_PROM_MAP_BUCKETS_MAX) {
                    memset(h, 0, sizeof *h);
                    return false;
                }
                memmove(&h->le[k + 1], &h->le[k], (h->nbuckets - k) * sizeof h->le[0]);
                memmove(&h->cum[k + 1], &h->cum[k], (h->nbuckets - k) * sizeof h->cum[0]);
                h->le[k] = le;
                h->cum[k] = 0;
                h->nbuckets++;
            }
            h->cum[k] += s->value;
        }
    }
    return any;
}

static bool apply_rule(const struct rule *r, const struct lt_prom_page *pg,
                       struct lt_prom_values *out)
{
    return r->canon < LT_PM_SCALARS ? apply_scalar(r, pg, out) : apply_hist(r, pg, out);
}

void lt_prom_map_apply(const struct lt_prom_map *m, const struct lt_prom_page *pg,
                       struct lt_prom_values *out)
{
    memset(out, 0, sizeof *out);
    out->server = lt_prom_map_detect(pg);
    for (int c = 0; c < LT_PM_COUNT; c++) {
        bool done = false;
        for (size_t i = 0; m && i < m->nrules && !done; i++) {
            const struct rule *r = &m->rules[i];
            if ((int)r->canon != c)
                continue;
            if (r->none || apply_rule(r, pg, out)) {
                done = true;
                if (!r->none)
                    out->source[c] = r->metric;
            }
        }
        for (size_t i = 0; i < sizeof builtin / sizeof builtin[0] && !done; i++) {
            const struct rule *r = &builtin[i];
            if ((int)r->canon == c && apply_rule(r, pg, out)) {
                done = true;
                out->source[c] = r->metric;
            }
        }
        if (!out->source[c])
            continue;
        double lo, hi;
        if (c < LT_PM_SCALARS) {
            lt_prom_map_canon_range((enum lt_prom_canon)c, &lo, &hi);
            if (!(out->v[c] >= lo && out->v[c] <= hi)) {
                /* A value no server can have: flagged and left out, so
                 * no figure is made of it. */
                out->out_of_range |= 1u << c;
                out->bad[c] = out->v[c];
                out->v[c] = 0;
                continue;
            }
        }
        out->present |= 1u << c;
    }
}

void lt_prom_map_canon_range(enum lt_prom_canon c, double *lo, double *hi)
{
    *lo = 0;
    switch (c) {
    case LT_PM_RUNNING:
    case LT_PM_WAITING:
        *hi = LT_PROM_MAP_REQUESTS_MAX;
        break;
    case LT_PM_KV_USAGE:
    case LT_PM_PREFIX_HIT_RATE:
    case LT_PM_GPU_UTIL:
        *hi = 1 + 1e-9; /* a fraction, with room for a server's rounding */
        break;
    case LT_PM_GPU_POWER:
        *hi = LT_PROM_MAP_WATTS_MAX;
        break;
    default: /* counters and bytes: not negative, and finite */
        *hi = DBL_MAX;
        break;
    }
}

/* --- mapping files -------------------------------------------------------- */

int lt_prom_map_new(struct lt_prom_map **out, struct lt_err *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return lt_errset(err, LT_ENOMEM, "out of memory for a metrics mapping");
    return 0;
}

void lt_prom_map_free(struct lt_prom_map *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nstrings; i++)
        free(m->strings[i]);
    free(m->strings);
    free(m->rules);
    free(m);
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    return s;
}

/* A file being read: its rules and strings, added to the map only when the
 * whole file is good. */
struct mfile {
    struct rule rules[LT_PROM_MAP_RULES_MAX];
    size_t nrules;
    char *strings[LT_PROM_MAP_RULES_MAX * (1 + 2 * LT_PROM_MAP_FILTERS_MAX)];
    size_t nstrings;
};

static const char *keep(struct mfile *mf, const char *s)
{
    char *d = strdup(s);
    if (d)
        mf->strings[mf->nstrings++] = d;
    return d;
}

/* `series [* factor]` into r; msg gets the reason on failure. */
static int parse_series(struct mfile *mf, struct rule *r, char *expr, char *msg, size_t msz)
{
    r->factor = 1;
    char *star = strrchr(expr, '*');
    if (star) {
        char *fs = trim(star + 1), *end;
        errno = 0;
        double f = strtod(fs, &end);
        if (*fs && !*end && errno == 0) {
            if (!(f > 0) || !isfinite(f)) {
                snprintf(msg, msz, "the factor '%.40s' is not a positive number", fs);
                return LT_EFORMAT;
            }
            r->factor = f;
            *star = '\0';
            expr = trim(expr);
        }
    }
    /* The series is read by the exposition parser itself, as a sample line. */
    char line[LT_PROM_MAP_LINE_MAX + 8];
    int n = snprintf(line, sizeof line, "%s 0\n", expr);
    if (n < 0 || (size_t)n >= sizeof line) {
        snprintf(msg, msz, "the series is too long");
        return LT_ELIMIT;
    }
    struct lt_prom_limits lim = {.labels_per_sample = LT_PROM_MAP_FILTERS_MAX};
    struct lt_prom_page pg;
    struct lt_err e = {0};
    lt_prom_page_init(&pg, &lim);
    int rc = lt_prom_parse(&pg, line, (size_t)n, "", &e);
    if (rc == 0 && pg.nsamples != 1) {
        rc = LT_EFORMAT;
        snprintf(e.msg, sizeof e.msg, "::no series");
    }
    if (rc < 0) {
        /* e.msg is ":1: reason" */
        const char *why = strchr(e.msg + 1, ':');
        snprintf(msg, msz, "the series '%.100s' is not valid: %.250s", expr,
                 why ? trim((char *)why + 1) : e.msg);
        lt_prom_page_release(&pg);
        return rc == LT_ELIMIT ? rc : LT_EFORMAT;
    }
    const struct lt_prom_sample *s = &pg.samples[0];
    r->metric = keep(mf, s->name);
    r->nfilters = s->nlabels;
    for (size_t i = 0; i < s->nlabels && r->metric; i++) {
        r->fname[i] = keep(mf, s->labels[i].name);
        r->fvalue[i] = keep(mf, s->labels[i].value);
        if (!r->fname[i] || !r->fvalue[i])
            r->metric = NULL;
    }
    lt_prom_page_release(&pg);
    if (!r->metric) {
        snprintf(msg, msz, "out of memory");
        return LT_ENOMEM;
    }
    return 0;
}

static int parse_file(struct mfile *mf, const char *data, size_t len, const char *name,
                      struct lt_err *err)
{
    struct lt_lines ln;
    int rc = 0;
    lt_lines_init_mem(&ln, data, len, name, LT_PROM_MAP_LINE_MAX);
    for (;;) {
        int got = lt_lines_next(&ln, NULL, err);
        if (got < 0) {
            rc = got;
            goto out;
        }
        if (got == 0)
            break;
        unsigned line = (unsigned)ln.lineno;
        char *s = trim(ln.line.p ? ln.line.p : (char *)"");
        if (!*s || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = lt_errset(err, LT_EFORMAT, "%s:%u: a rule is 'canonical = metric', with '='", name,
                           line);
            goto out;
        }
        *eq = '\0';
        char *cname = trim(s), *expr = trim(eq + 1);
        int c = lt_prom_map_canon_find(cname);
        if (c < 0) {
            rc = lt_errset(err, LT_EFORMAT,
                           "%s:%u: '%.100s' is not a canonical name (docs/server-metrics.md "
                           "lists them)",
                           name, line, cname);
            goto out;
        }
        if (mf->nrules == LT_PROM_MAP_RULES_MAX) {
            rc = lt_errset(err, LT_ELIMIT, "%s:%u: more than %d rules", name, line,
                           LT_PROM_MAP_RULES_MAX);
            goto out;
        }
        struct rule *r = &mf->rules[mf->nrules];
        memset(r, 0, sizeof *r);
        r->canon = (enum lt_prom_canon)c;
        if (strcmp(expr, "none") == 0) {
            r->none = true;
        } else {
            char msg[400];
            int prc = parse_series(mf, r, expr, msg, sizeof msg);
            if (prc < 0) {
                rc = lt_errset(err, prc, "%s:%u: %s", name, line, msg);
                goto out;
            }
        }
        mf->nrules++;
    }
out:
    lt_lines_release(&ln);
    return rc;
}

int lt_prom_map_load_mem(struct lt_prom_map *m, const char *data, size_t len, const char *name,
                         struct lt_err *err)
{
    int rc = 0;
    struct mfile *mf = calloc(1, sizeof *mf);
    if (!mf)
        return lt_errset(err, LT_ENOMEM, "%s: out of memory", name);
    if (len > LT_PROM_MAP_FILE_MAX) {
        rc = lt_errset(err, LT_ELIMIT, "%s: a mapping file is at most %d bytes", name,
                       LT_PROM_MAP_FILE_MAX);
        goto out;
    }
    LT_TRY(parse_file(mf, data, len, name, err));
    /* The new file's rules go in front: they win over earlier ones. */
    struct rule *rules = malloc((m->nrules + mf->nrules + 1) * sizeof *rules);
    char **strings = realloc(m->strings, (m->nstrings + mf->nstrings + 1) * sizeof *strings);
    if (strings)
        m->strings = strings;
    if (!rules || !strings) {
        free(rules);
        rc = lt_errset(err, LT_ENOMEM, "%s: out of memory", name);
        goto out;
    }
    memcpy(rules, mf->rules, mf->nrules * sizeof *rules);
    if (m->nrules)
        memcpy(rules + mf->nrules, m->rules, m->nrules * sizeof *rules);
    free(m->rules);
    m->rules = rules;
    m->nrules += mf->nrules;
    memcpy(m->strings + m->nstrings, mf->strings, mf->nstrings * sizeof *strings);
    m->nstrings += mf->nstrings;
    mf->nstrings = 0; /* now the map's */
out:
    for (size_t i = 0; i < mf->nstrings; i++)
        free(mf->strings[i]);
    free(mf);
    return rc;
}

int lt_prom_map_load(struct lt_prom_map *m, const char *path, struct lt_err *err)
{
    int rc = 0;
    struct lt_buf b;
    lt_buf_init(&b, LT_PROM_MAP_FILE_MAX);
    FILE *f = fopen(path, "rb");
    if (!f)
        return lt_errset(err, LT_EIO, "%s: cannot open the mapping file: %s", path,
                         strerror(errno));
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        int arc = lt_buf_append(&b, chunk, n);
        if (arc == LT_ELIMIT) {
            rc = lt_errset(err, LT_ELIMIT, "%s: a mapping file is at most %d bytes", path,
                           LT_PROM_MAP_FILE_MAX);
            goto out;
        }
        if (arc < 0) {
            rc = lt_errset(err, arc, "%s: out of memory", path);
            goto out;
        }
    }
    if (ferror(f)) {
        rc = lt_errset(err, LT_EIO, "%s: cannot read the mapping file", path);
        goto out;
    }
    rc = lt_prom_map_load_mem(m, b.p ? b.p : "", b.len, path, err);
out:
    fclose(f);
    lt_buf_release(&b);
    return rc;
}

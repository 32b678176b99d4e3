/*
 * Built-in profiles and the profile file reader. A profile file is plain
 * text, one `key = value` per line, `#` starts a comment; keys not given
 * keep the default profile's value, so a file says only what differs. A
 * table of keys drives both the reader and lt_sim_profile_set, so adding a
 * key is one line here and one in docs/sim.md.
 */
#include "sim/sim_profile.h"
#include "sim/sim_slots.h"
#include "sim/sim_tokens.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum ktype { K_DOUBLE, K_U32, K_U64, K_STR, K_BOOL, K_TABLE };

struct key {
    const char *name;
    enum ktype type;
    size_t off;
    size_t size; /* for strings */
    double max;  /* for numbers: the largest value accepted */
};

/* A cost of one unit (a step, a request, a token) above a minute describes no
 * server; the whole step is bounded again in lt_sim_profile_check. */
#define MAX_MS 60000.0

#define KD(n, f, hi)                                                                               \
    {                                                                                              \
        n, K_DOUBLE, offsetof(struct lt_sim_profile, f), 0, hi                                     \
    }
#define KU(n, f)                                                                                   \
    {                                                                                              \
        n, K_U32, offsetof(struct lt_sim_profile, f), 0, 0                                         \
    }
#define KL(n, f)                                                                                   \
    {                                                                                              \
        n, K_U64, offsetof(struct lt_sim_profile, f), 0, 0                                         \
    }
#define KB(n, f)                                                                                   \
    {                                                                                              \
        n, K_BOOL, offsetof(struct lt_sim_profile, f), 0, 0                                        \
    }
#define KT(n, f)                                                                                   \
    {                                                                                              \
        n, K_TABLE, offsetof(struct lt_sim_profile, f), 0, MAX_MS                                  \
    }
#define KS(n, f)                                                                                   \
    {                                                                                              \
        n, K_STR, offsetof(struct lt_sim_profile, f), sizeof(((struct lt_sim_profile *)0)->f), 0   \
    }

static const struct key keys[] = {
    KS("name", name),
    KS("model", model),
    KD("step_ms", step_ms, MAX_MS),
    KD("step_ms_per_seq", step_ms_per_seq, MAX_MS),
    KD("prefill_step_ms", prefill_step_ms, MAX_MS),
    KD("prefill_ms_per_seq", prefill_ms_per_seq, MAX_MS),
    KD("prefill_ms_per_token", prefill_ms_per_token, MAX_MS),
    KD("prefill_ms_per_token_ctx", prefill_ms_per_token_ctx, MAX_MS),
    KD("cached_ms_per_token", cached_ms_per_token, MAX_MS),
    KD("decode_ms_per_kv_token", decode_ms_per_kv_token, MAX_MS),
    KT("step_ms_by_batch", step_ms_by_batch),
    KD("front_ms_per_token", front_ms_per_token, MAX_MS),
    KD("front_ms_per_request", front_ms_per_request, MAX_MS),
    KD("loop_ms_per_request", loop_ms_per_request, MAX_MS),
    KD("speed_cv", speed_cv, 2),
    KD("speed_tau_ms", speed_tau_ms, 3600e3),
    KL("speed_seed", speed_seed),
    KU("prefill_seqs", prefill_seqs),
    KB("preempt", preempt),
    KU("max_running", max_running),
    KL("kv_tokens", kv_tokens),
    KU("batch_tokens", batch_tokens),
    KU("block_tokens", block_tokens),
    KU("cache_blocks", cache_blocks),
    KU("shared_prefix_tokens", shared_prefix_tokens),
    KB("slot_runs", slot_runs),
    KD("slot_similarity", slot_similarity, 1),
    KU("max_model_len", max_model_len),
    KU("eos_tokens", eos_tokens),
    KD("reasoning_fraction", reasoning_fraction, 1),
    KB("reasoning", reasoning),
    KU("vocab", vocab),
    KU("piece_bytes", piece_bytes),
    KU("image_tile", image_tile),
    KU("image_tokens", image_tokens),
    KU("image_base_tokens", image_base_tokens),
    KD("image_ms_per_token", image_ms_per_token, MAX_MS),
    KL("image_max_pixels", image_max_pixels),
    KU("image_link_side", image_link_side),
    KU("video_temporal_patch", video_temporal_patch),
    KB("link_fetch", link_fetch),
    KU("embed_dim", embed_dim),
    KD("audio_tokens_per_s", audio_tokens_per_s, 100000),
};

/* The default profile: Qwen3.5-397B on 8x RTX PRO 6000 (PCIe). The step
 * costs were fitted in virtual time to the published table (see
 * docs/sim.md and tests/sim/test_sim_model.c); the limits are those of a
 * typical vLLM deployment of such a model. */
static const struct lt_sim_profile default_profile = {
    .name = "default",
    .model = "Qwen/Qwen3.5-397B-A17B",
    .step_ms = 5.7,
    .step_ms_per_seq = 0.19,
    .prefill_step_ms = 40.0,
    .prefill_ms_per_seq = 85.0,
    .prefill_ms_per_token = 0.05,
    .cached_ms_per_token = 0.05,
    .decode_ms_per_kv_token = 0,
    .prefill_seqs = 16,
    .preempt = 0,
    .max_running = 256,
    .kv_tokens = 1000000,
    .batch_tokens = 8192,
    .block_tokens = 64,
    .cache_blocks = 16384,
    .max_model_len = 262144,
    .slot_similarity = LT_SIM_SLOT_SIMILARITY,
    .eos_tokens = 400,
    .reasoning_fraction = 0.5,
    .reasoning = 0,
    .vocab = LT_SIM_VOCAB,
    .piece_bytes = 4,
    /* Qwen2-VL's rule: a token per 28 x 28 pixels (14-pixel patches
     * merged 2 x 2), between vision start and end markers. */
    .image_tile = 28,
    .image_tokens = 1,
    .image_base_tokens = 2,
    .image_ms_per_token = 0.02,
    .image_max_pixels = 50000000,
    .image_link_side = 448,
    .video_temporal_patch = 2, /* Qwen2-VL merges two frames into one */
    .link_fetch = 1,
    .embed_dim = 1024,
    .audio_tokens_per_s = 25, /* Qwen2-Audio's: one per 40 ms */
};

int lt_sim_profile_builtin(struct lt_sim_profile *p, const char *name, struct lt_err *err)
{
    *p = default_profile;
    if (!strcmp(name, "default"))
        return 0;
    if (!strcmp(name, "fast")) {
        snprintf(p->name, sizeof p->name, "fast");
        snprintf(p->model, sizeof p->model, "loadtrace-sim-fast");
        p->step_ms = p->step_ms_per_seq = 0;
        p->prefill_step_ms = p->prefill_ms_per_seq = p->prefill_ms_per_token = 0;
        p->cached_ms_per_token = p->decode_ms_per_kv_token = 0;
        p->image_ms_per_token = 0;
        p->prefill_seqs = 1000000;
        p->max_running = 1000000;
        p->kv_tokens = UINT64_MAX / 4;
        p->batch_tokens = 1u << 30;
        p->cache_blocks = 0;
        return 0;
    }
    return lt_errset(err, LT_EINVAL, "unknown profile '%s' (built in: default, fast)", name);
}

/* step_ms_by_batch: "off", or up to LT_SIM_STEP_BATCH_MAX costs, the
 * step's at a batch of 1, 2, ..., separated by spaces or commas. */
static int set_table(struct lt_sim_profile *p, const char *key, const char *value, double max,
                     struct lt_err *err)
{
    double t[LT_SIM_STEP_BATCH_MAX];
    uint32_t n = 0;
    if (strcmp(value, "off") != 0) {
        const char *s = value;
        for (;;) {
            while (*s == ' ' || *s == '\t' || *s == ',')
                s++;
            if (!*s)
                break;
            if (n == LT_SIM_STEP_BATCH_MAX)
                return lt_errset(err, LT_EFORMAT, "%s: more than %d costs", key,
                                 LT_SIM_STEP_BATCH_MAX);
            char *end = NULL;
            errno = 0;
            double d = strtod(s, &end);
            if (end == s || errno || !isfinite(d) || d < 0 || d > max ||
                (*end && *end != ' ' && *end != '\t' && *end != ','))
                return lt_errset(err, LT_EFORMAT,
                                 "%s: '%s' is not a list of costs from 0 to %g ms (one a batch "
                                 "size, from 1), or off",
                                 key, value, max);
            t[n++] = d;
            s = end;
        }
        if (n == 0)
            return lt_errset(err, LT_EFORMAT, "%s: no cost given (off for none)", key);
    }
    memcpy(p->step_ms_by_batch, t, n * sizeof t[0]);
    p->n_step_ms_by_batch = n;
    return 0;
}

double lt_sim_profile_decode_ms(const struct lt_sim_profile *p, uint32_t decoders)
{
    uint32_t n = p->n_step_ms_by_batch;
    if (decoders == 0 || n == 0)
        return p->step_ms + p->step_ms_per_seq * decoders;
    if (decoders <= n)
        return p->step_ms_by_batch[decoders - 1];
    return p->step_ms_by_batch[n - 1] + p->step_ms_per_seq * (decoders - n);
}

int lt_sim_profile_set(struct lt_sim_profile *p, const char *key, const char *value,
                       struct lt_err *err)
{
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const struct key *k = &keys[i];
        if (strcmp(k->name, key))
            continue;
        char *base = (char *)p + k->off;
        char *end = NULL;
        errno = 0;
        switch (k->type) {
        case K_STR:
            if (strlen(value) >= k->size || !*value)
                return lt_errset(err, LT_EFORMAT, "%s: must be 1 to %zu characters", key,
                                 k->size - 1);
            /* Names go into JSON answers verbatim, so they may not need escaping. */
            for (const char *c = value; *c; c++)
                if ((unsigned char)*c < 0x20 || *c == '"' || *c == '\\')
                    return lt_errset(err, LT_EFORMAT,
                                     "%s: no quotes, backslashes or control "
                                     "characters",
                                     key);
            memcpy(base, value, strlen(value) + 1);
            return 0;
        case K_TABLE:
            return set_table(p, key, value, k->max, err);
        case K_DOUBLE: {
            double d = strtod(value, &end);
            if (end == value || *end || errno || !isfinite(d) || d < 0)
                return lt_errset(err, LT_EFORMAT, "%s: '%s' is not a number >= 0", key, value);
            if (d > k->max)
                return lt_errset(err, LT_EFORMAT, "%s: '%s' is above the largest value, %g", key,
                                 value, k->max);
            memcpy(base, &d, sizeof d);
            return 0;
        }
        case K_U32:
        case K_U64:
        case K_BOOL: {
            if (k->type == K_BOOL) {
                int b = -1;
                if (!strcmp(value, "1") || !strcmp(value, "on") || !strcmp(value, "true"))
                    b = 1;
                if (!strcmp(value, "0") || !strcmp(value, "off") || !strcmp(value, "false"))
                    b = 0;
                if (b < 0)
                    return lt_errset(err, LT_EFORMAT, "%s: '%s' is not on or off", key, value);
                memcpy(base, &b, sizeof b);
                return 0;
            }
            if (!isdigit((unsigned char)value[0]))
                return lt_errset(err, LT_EFORMAT, "%s: '%s' is not a whole number", key, value);
            unsigned long long v = strtoull(value, &end, 10);
            if (*end || errno || (k->type == K_U32 && v > UINT32_MAX))
                return lt_errset(err, LT_EFORMAT, "%s: '%s' is not a whole number in range", key,
                                 value);
            if (k->type == K_U32) {
                uint32_t u = (uint32_t)v;
                memcpy(base, &u, sizeof u);
            } else {
                uint64_t u = v;
                memcpy(base, &u, sizeof u);
            }
            return 0;
        }
        }
    }
    return lt_errset(err, LT_EINVAL, "unknown profile key '%s'", key);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

int lt_sim_profile_load(struct lt_sim_profile *p, const char *name_or_path, struct lt_err *err)
{
    if (!strchr(name_or_path, '/') && !strchr(name_or_path, '.'))
        return lt_sim_profile_builtin(p, name_or_path, err);
    *p = default_profile;
    snprintf(p->name, sizeof p->name, "file");
    int rc = 0;
    FILE *f = fopen(name_or_path, "r");
    if (!f)
        return lt_errset(err, LT_EIO, "%s: cannot open profile: %s", name_or_path, strerror(errno));
    char line[1024];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            rc = lt_errset(err, LT_EFORMAT, "%s:%d: line too long", name_or_path, lineno);
            goto out;
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *s = trim(line);
        if (!*s)
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = lt_errset(err, LT_EFORMAT, "%s:%d: expected key = value", name_or_path, lineno);
            goto out;
        }
        *eq = '\0';
        rc = lt_sim_profile_set(p, trim(s), trim(eq + 1), err);
        if (rc < 0) {
            lt_errf(err, rc, "%s:%d", name_or_path, lineno);
            goto out;
        }
    }
    rc = lt_sim_profile_check(p, err);
    if (rc < 0)
        lt_errf(err, rc, "%s", name_or_path);
out:
    fclose(f);
    return rc;
}

int lt_sim_profile_save(const struct lt_sim_profile *p, const char *path, const char *note,
                        struct lt_err *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return lt_errset(err, LT_EIO, "%s: cannot write profile: %s", path, strerror(errno));
    for (const char *l = note; l && *l;) {
        const char *nl = strchr(l, '\n');
        int n = nl ? (int)(nl - l) : (int)strlen(l);
        fprintf(f, "# %.*s\n", n, l);
        l += n + (nl != NULL);
    }
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const struct key *k = &keys[i];
        const char *base = (const char *)p + k->off;
        switch (k->type) {
        case K_STR:
            fprintf(f, "%s = %s\n", k->name, base);
            break;
        case K_DOUBLE: {
            double d;
            memcpy(&d, base, sizeof d);
            fprintf(f, "%s = %.9g\n", k->name, d);
            break;
        }
        case K_U32: {
            uint32_t u;
            memcpy(&u, base, sizeof u);
            fprintf(f, "%s = %u\n", k->name, u);
            break;
        }
        case K_U64: {
            uint64_t u;
            memcpy(&u, base, sizeof u);
            fprintf(f, "%s = %llu\n", k->name, (unsigned long long)u);
            break;
        }
        case K_BOOL: {
            int b;
            memcpy(&b, base, sizeof b);
            fprintf(f, "%s = %s\n", k->name, b ? "on" : "off");
            break;
        }
        case K_TABLE:
            fprintf(f, "%s =", k->name);
            for (uint32_t b = 0; b < p->n_step_ms_by_batch; b++)
                fprintf(f, " %.9g", p->step_ms_by_batch[b]);
            fprintf(f, "%s\n", p->n_step_ms_by_batch ? "" : " off");
            break;
        }
    }
    if (fclose(f) != 0)
        return lt_errset(err, LT_EIO, "%s: cannot write profile: %s", path, strerror(errno));
    return 0;
}

int lt_sim_profile_check(const struct lt_sim_profile *p, struct lt_err *err)
{
    if (p->max_running == 0)
        return lt_errset(err, LT_EINVAL, "max_running must be at least 1");
    if (p->prefill_seqs == 0)
        return lt_errset(err, LT_EINVAL, "prefill_seqs must be at least 1");
    if (p->batch_tokens == 0)
        return lt_errset(err, LT_EINVAL, "batch_tokens must be at least 1");
    if (p->block_tokens == 0)
        return lt_errset(err, LT_EINVAL, "block_tokens must be at least 1");
    if (p->max_model_len < 2)
        return lt_errset(err, LT_EINVAL, "max_model_len must be at least 2");
    if (p->kv_tokens < 2)
        return lt_errset(err, LT_EINVAL, "kv_tokens must be at least 2");
    if (p->reasoning_fraction >= 1)
        return lt_errset(err, LT_EINVAL, "reasoning_fraction must be below 1");
    if (p->eos_tokens == 0)
        return lt_errset(err, LT_EINVAL, "eos_tokens must be at least 1");
    if (p->vocab < 16)
        return lt_errset(err, LT_EINVAL, "vocab must be at least 16");
    if (p->piece_bytes < 1 || p->piece_bytes > 4)
        return lt_errset(err, LT_EINVAL, "piece_bytes must be 1 to 4");
    if (p->embed_dim < 1 || p->embed_dim > 65536)
        return lt_errset(err, LT_EINVAL, "embed_dim must be 1 to 65536");
    /* Values set in code (lt_sim_profile_set is not the only way in) get
     * the file's ranges too. */
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        double d;
        if (keys[i].type != K_DOUBLE)
            continue;
        memcpy(&d, (const char *)p + keys[i].off, sizeof d);
        if (!isfinite(d) || d < 0 || d > keys[i].max)
            return lt_errset(err, LT_EINVAL, "%s must be 0 to %g", keys[i].name, keys[i].max);
    }
    if (p->slot_runs && p->max_running > LT_SIM_SLOTS_MAX)
        return lt_errset(err, LT_EINVAL, "slot_runs models at most %d slots (max_running %u)",
                         LT_SIM_SLOTS_MAX, p->max_running);
    if (p->n_step_ms_by_batch > LT_SIM_STEP_BATCH_MAX)
        return lt_errset(err, LT_EINVAL, "step_ms_by_batch holds at most %d costs",
                         LT_SIM_STEP_BATCH_MAX);
    double by_batch = 0;
    for (uint32_t i = 0; i < p->n_step_ms_by_batch; i++) {
        double d = p->step_ms_by_batch[i];
        if (!isfinite(d) || d < 0 || d > MAX_MS)
            return lt_errset(err, LT_EINVAL, "step_ms_by_batch's costs must be 0 to %g", MAX_MS);
        by_batch = fmax(by_batch, d);
    }
    /* The longest step the limits allow: every running request decoding and
     * starting, a full prefill budget and every prompt token of the batch
     * found in the cache. Times are kept in integer nanoseconds, so it must
     * stay far from their range; an hour is already no server. */
    double cached = fmin((double)p->kv_tokens, (double)p->max_running * p->max_model_len);
    /* with slot_runs, every decoder may be a micro-batch of its own */
    double passes = p->slot_runs ? p->max_running : 1;
    double worst = (p->step_ms + by_batch) * passes + p->step_ms_per_seq * p->max_running +
                   p->prefill_step_ms +
                   p->prefill_ms_per_seq * fmin(p->max_running, p->prefill_seqs) +
                   p->prefill_ms_per_token * p->batch_tokens +
                   p->prefill_ms_per_token_ctx * p->batch_tokens * fmin(p->max_model_len, cached) +
                   p->cached_ms_per_token * cached + p->decode_ms_per_kv_token * cached;
    if (worst > 3600e3)
        return lt_errset(err, LT_EINVAL,
                         "a step could last %.3g s (step_ms + step_ms_per_seq x max_running + "
                         "prefill costs x prefill_seqs and batch_tokens + cached_ms_per_token "
                         "and decode_ms_per_kv_token x tokens of the batch); at most an hour",
                         worst / 1e3);
    return 0;
}

void lt_sim_profile_scale(struct lt_sim_profile *p, double x)
{
    double *cost[] = {&p->step_ms,
                      &p->step_ms_per_seq,
                      &p->prefill_step_ms,
                      &p->prefill_ms_per_seq,
                      &p->prefill_ms_per_token,
                      &p->prefill_ms_per_token_ctx,
                      &p->cached_ms_per_token,
                      &p->decode_ms_per_kv_token,
                      &p->front_ms_per_token,
                      &p->loop_ms_per_request,
                      &p->front_ms_per_request,
                      &p->image_ms_per_token,
                      &p->speed_tau_ms};
    for (size_t i = 0; i < sizeof cost / sizeof *cost; i++)
        *cost[i] /= x;
    for (uint32_t i = 0; i < p->n_step_ms_by_batch; i++)
        p->step_ms_by_batch[i] /= x;
}

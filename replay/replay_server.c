/*
 * What the target says about itself, read before the runs and written into
 * every run record (docs/replay.md, "The server's word"): llama.cpp's GET
 * /props (slots, context per slot, model), GET /v1/models' meta (vocabulary,
 * training context), the client's own round trip to the server (GET
 * /health, the share of a TTFT that is not the server's), and the prefix
 * cache state each run starts from (GET /slots; llama.cpp's slot erase for
 * --reset-prefix-cache). A fit (sim --fit) takes its limits from these
 * instead of guessing them from the timelines. Every probe is best effort:
 * a server that answers none of them is replayed all the same.
 */
#include "base/lt_json.h"
#include "replay/replay_internal.h"
#include "traces/lt_mp.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PROBE_MS = 2000, RTT_PROBES = 7 };

/* GET path as JSON; NULL when it did not answer 200 (*status 0: no HTTP
 * answer at all). */
static json_t *get_json(struct lt_replay *rp, const char *path, long *status, struct lt_buf *b)
{
    struct lt_err e = {0};
    lt_buf_reset(b);
    *status = 0;
    if (lt_replay_http_do(&rp->http, path, NULL, b, status, PROBE_MS, &e) < 0) {
        *status = 0;
        return NULL;
    }
    if (*status != 200)
        return NULL;
    return json_loadb(b->p ? b->p : "", b->len, 0, NULL);
}

static int64_t jint(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) > 0 ? (int64_t)json_integer_value(v) : 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The median of RTT_PROBES answers to a request the server does no work
 * for: each on a connection of its own, so it bounds from above what the
 * client and the loopback add to a request on a kept-alive connection. */
static int64_t round_trip_us(struct lt_replay *rp, struct lt_buf *b)
{
    static const char *const paths[] = {"/health", "/v1/models"};
    for (size_t p = 0; p < 2; p++) {
        int64_t t[RTT_PROBES];
        int n = 0;
        for (int i = 0; i < RTT_PROBES; i++) {
            long status = 0;
            struct lt_err e = {0};
            lt_buf_reset(b);
            lt_mono t0 = lt_mono_now();
            if (lt_replay_http_do(&rp->http, paths[p], NULL, b, &status, PROBE_MS, &e) < 0 ||
                status != 200)
                break;
            t[n++] = lt_mono_diff_us(lt_mono_now(), t0);
        }
        if (n == RTT_PROBES) {
            qsort(t, (size_t)n, sizeof t[0], cmp_i64);
            return t[n / 2] > 0 ? t[n / 2] : 1;
        }
    }
    return 0;
}

void lt__replay_word_models(struct lt_replay_word *w, const json_t *models)
{
    const json_t *data = json_object_get(models, "data");
    if (!json_is_array(data) || json_array_size(data) == 0)
        return;
    w->models_read = true;
    const json_t *m = json_array_get(data, 0), *meta = json_object_get(m, "meta");
    w->vocab = jint(meta, "n_vocab");
    w->models_ctx = jint(m, "max_model_len"); /* vLLM's context limit */
    const json_t *id = json_object_get(m, "id");
    if (json_is_string(id))
        snprintf(w->models_id, sizeof w->models_id, "%s", json_string_value(id));
}

void lt__replay_server_probe(struct lt_replay *rp)
{
    struct lt_replay_word *w = &rp->word;
    struct lt_buf b;
    lt_buf_init(&b, (size_t)4 << 20);
    long status;
    json_t *props = get_json(rp, "/props", &status, &b);
    if (!props && status == 0) { /* no answer: a server that hangs costs one timeout */
        w->warm_slots = -1;
        w->silent = true;
        lt_buf_release(&b);
        return;
    }
    if (json_is_object(props) && json_object_get(props, "total_slots")) {
        snprintf(w->kind, sizeof w->kind, "llama.cpp");
        w->slots = jint(props, "total_slots");
        w->ctx = jint(json_object_get(props, "default_generation_settings"), "n_ctx");
        const json_t *alias = json_object_get(props, "model_alias");
        const json_t *path = json_object_get(props, "model_path");
        if (json_is_string(alias) && json_string_length(alias))
            snprintf(w->model, sizeof w->model, "%s", json_string_value(alias));
        else if (json_is_string(path)) {
            const char *s = json_string_value(path), *slash = strrchr(s, '/');
            snprintf(w->model, sizeof w->model, "%s", slash ? slash + 1 : s);
        }
    }
    json_decref(props);
    /* llama.cpp's /v1/models has the vocabulary in each model's meta. The
     * model's discovery has read it already, unless --model skipped the
     * discovery: then it is asked of llama.cpp alone (a server that named
     * no model is not asked what --model was given to avoid). */
    if (!w->models_read && w->kind[0]) {
        json_t *models = get_json(rp, "/v1/models", &status, &b);
        lt__replay_word_models(w, models);
        json_decref(models);
    }
    if (!w->ctx)
        w->ctx = w->models_ctx;
    if (!w->model[0])
        snprintf(w->model, sizeof w->model, "%s", w->models_id);
    w->rtt_us = round_trip_us(rp, &b);
    lt_buf_release(&b);
}

/* llama.cpp's /slots: how many slots hold a request's prompt from before
 * (a slot that served a task keeps its prompt's KV); -1 when it does not
 * answer (started without --slots, or not llama.cpp). */
static int slots_busy_before(struct lt_replay *rp, struct lt_buf *b, int64_t *nslots)
{
    long status;
    json_t *s = get_json(rp, "/slots", &status, b);
    int used = -1;
    *nslots = 0;
    if (json_is_array(s)) {
        used = 0;
        size_t i;
        json_t *slot;
        json_array_foreach(s, i, slot)
        {
            (*nslots)++;
            if (json_object_get(slot, "id_task"))
                used++;
        }
    }
    json_decref(s);
    return used;
}

/* llama.cpp: POST /slots/ID?action=erase for every slot. 1: all erased;
 * 0: refused (why says what to do); -1: not llama.cpp. */
static int erase_slots(struct lt_replay *rp, struct lt_buf *b, char *why, size_t whysz)
{
    struct lt_replay_word *w = &rp->word;
    if (strcmp(w->kind, "llama.cpp") != 0 || w->slots <= 0)
        return -1;
    for (int64_t i = 0; i < w->slots; i++) {
        char path[64];
        snprintf(path, sizeof path, "/slots/%lld?action=erase", (long long)i);
        long status = 0;
        struct lt_err e = {0};
        lt_buf_reset(b);
        if (lt_replay_http_do(&rp->http, path, "{}", b, &status, PROBE_MS, &e) < 0) {
            snprintf(why, whysz, "llama.cpp slot erase failed: %.80s", e.msg);
            return 0;
        }
        if (status == 501) {
            snprintf(why, whysz,
                     "llama.cpp refuses slot erase (HTTP 501): start llama-server with "
                     "--slot-save-path DIR --cache-ram 0, or restart it before each run");
            return 0;
        }
        if (status < 200 || status >= 300) {
            snprintf(why, whysz, "llama.cpp slot erase answered HTTP %ld", status);
            return 0;
        }
    }
    return 1;
}

/* llama.cpp's erase empties a slot's cache but keeps when the slot was
 * last used, and a request that shares no tenth of its prompt with an idle
 * slot's takes the least recently used one (the highest id among equals):
 * the order earlier runs and replay's own probes left would decide where
 * this run's requests go, and so which decoders share a pass, which no fit
 * can see. A one-token request pinned to each slot in turn (id_slot), from
 * the highest id down, and a second erase leave the slots empty and in the
 * order of a server just started. 1: done; 0: not (why says). */
static int order_slots(struct lt_replay *rp, struct lt_buf *b, char *why, size_t whysz)
{
    struct lt_buf body;
    lt_buf_init(&body, 1 << 12);
    int ok = 1;
    for (int64_t i = rp->word.slots - 1; i >= 0 && ok; i--) {
        lt_buf_reset(&body);
        long status = 0;
        struct lt_err e = {0};
        lt_buf_reset(b);
        if (lt_buf_puts(&body, "{\"model\":") < 0 ||
            lt_json_str(&body, rp->model, strlen(rp->model)) < 0 ||
            lt_buf_printf(&body, ",\"prompt\":\"a\",\"max_tokens\":1,\"id_slot\":%lld}",
                          (long long)i) < 0) {
            snprintf(why, whysz, "out of memory");
            ok = 0;
        } else if (lt_replay_http_do(&rp->http, "/v1/completions", body.p, b, &status, 15000, &e) <
                   0) {
            snprintf(why, whysz, "a request pinned to slot %lld failed: %.80s", (long long)i,
                     e.msg);
            ok = 0;
        } else if (status != 200) {
            snprintf(why, whysz, "a request pinned to slot %lld answered HTTP %ld", (long long)i,
                     status);
            ok = 0;
        }
    }
    lt_buf_release(&body);
    return ok ? erase_slots(rp, b, why, whysz) == 1 : 0;
}

void lt__replay_server_before_run(struct lt_replay *rp, bool reset_done)
{
    struct lt_replay_word *w = &rp->word;
    struct lt_buf b;
    lt_buf_init(&b, (size_t)4 << 20);
    int64_t nslots = 0;
    w->cache_state[0] = '\0';
    int used = w->kind[0] ? slots_busy_before(rp, &b, &nslots) : -1;
    w->warm_slots = used;
    if (rp->o.reset_prefix_cache && !reset_done) {
        char why[200] = "";
        int er = erase_slots(rp, &b, why, sizeof why);
        if (er == 1) {
            bool ordered = order_slots(rp, &b, why, sizeof why) == 1;
            snprintf(rp->st.reset_how, sizeof rp->st.reset_how,
                     "llama.cpp POST /slots/ID?action=erase, %lld slots%s%s", (long long)w->slots,
                     ordered ? ", in a fresh server's order" : "; their order unknown: ",
                     ordered ? "" : why);
            snprintf(w->cache_state, sizeof w->cache_state, "%s",
                     ordered ? "reset: the slots empty, in a fresh server's order"
                             : "reset: the slots empty, in an unknown order");
            rp->st.resets++;
            reset_done = true;
        } else if (er == 0) {
            snprintf(rp->st.reset_how, sizeof rp->st.reset_how, "%s", why);
        }
    }
    if (reset_done) {
        if (!w->cache_state[0])
            snprintf(w->cache_state, sizeof w->cache_state, "reset");
    } else if (used == 0)
        snprintf(w->cache_state, sizeof w->cache_state, "cold: no slot has served a request");
    else if (used > 0)
        snprintf(w->cache_state, sizeof w->cache_state,
                 "warm: %d of %lld slots hold earlier prompts", used, (long long)nslots);
    else
        snprintf(w->cache_state, sizeof w->cache_state, "unknown");
    lt_buf_release(&b);
}

int lt__replay_server_extra(const struct lt_replay *rp, struct lt_mp *m, uint32_t *n)
{
    const struct lt_replay_word *w = &rp->word;
    if (w->kind[0]) {
        lt_mp_cstr(m, "server_kind");
        lt_mp_cstr(m, w->kind);
        (*n)++;
    }
    if (w->model[0]) {
        lt_mp_cstr(m, "server_model");
        lt_mp_cstr(m, w->model);
        (*n)++;
    }
    const struct {
        const char *key;
        int64_t v;
    } ints[] = {
        {"server_slots", w->slots},
        {"server_ctx", w->ctx},
        {"server_vocab", w->vocab},
        {"client_rtt_us", w->rtt_us},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (ints[i].v > 0) {
            lt_mp_cstr(m, ints[i].key);
            lt_mp_uint(m, (uint64_t)ints[i].v);
            (*n)++;
        }
    if (w->cache_state[0]) {
        lt_mp_cstr(m, "cache_state");
        lt_mp_cstr(m, w->cache_state);
        (*n)++;
    }
    return m->rc;
}

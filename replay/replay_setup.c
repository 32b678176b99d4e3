/*
 * A live replay built and freed (replay.h): the options checked, the trace
 * read, the plan sized, the HTTP machinery and the event loop prepared, and
 * the results file opened. No network call: the target's model and the
 * prompt length calibration are explicit steps (replay_target.c).
 */
#include "replay/replay_internal.h"

#include "traces/trace_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void lt_replay_plan_opts(const struct lt_replay_opts *o, struct lt_plan_opts *po)
{
    *po = (struct lt_plan_opts){
        .mode = (enum lt_plan_mode)o->mode,
        .tt = o->tt,
        .requests = o->requests,
        .rate = o->rate,
        .arrivals = o->arrivals,
        .cv = o->cv,
        .max_concurrency = o->max_concurrency,
        .duration_us = o->duration_us,
        .seed = o->seed,
        .retries = o->retries,
        .part = o->part,
        .parts = o->parts,
    };
}

static int check_opts(const struct lt_replay_opts *o, struct lt_err *err)
{
    if (!o->trace_path || !o->target)
        return lt_errset(err, LT_EINVAL, "a trace and a target are needed");
    if (o->mode == LT_REPLAY_MODE_CONCURRENCY && !o->n_levels)
        return lt_errset(err, LT_EINVAL, "closed loop needs at least one concurrency level");
    for (size_t i = 0; i < o->n_levels; i++)
        if (!o->levels[i])
            return lt_errset(err, LT_EINVAL, "a concurrency level must be at least 1");
    struct lt_plan_opts po;
    lt_replay_plan_opts(o, &po);
    if (lt_plan_check(&po, err) < 0)
        return err ? err->code : LT_EINVAL;
    if (strncmp(o->target, "http://", 7) && strncmp(o->target, "https://", 8))
        return lt_errset(err, LT_EINVAL, "--target must be an http:// or https:// URL (or sim)");
    for (size_t i = 0; o->n_targets > 1 && i < o->n_targets; i++)
        if (strncmp(o->targets[i], "http://", 7) && strncmp(o->targets[i], "https://", 8))
            return lt_errset(err, LT_EINVAL,
                             "target %zu (%.200s) is not an http:// or https:// URL", i + 1,
                             o->targets[i]);
    if (o->n_targets > LT_ROUTE_MAX)
        return lt_errset(err, LT_EINVAL, "a fleet has at most %d targets, not %zu", LT_ROUTE_MAX,
                         o->n_targets);
    if (o->n_targets > 1 && o->http_client == LT_REPLAY_CLIENT_LEAN)
        return lt_errset(err, LT_EINVAL,
                         "a fleet of targets is carried by libcurl: drop "
                         "--http-client lean");
    return 0;
}

/* A base URL without a trailing slash or /v1, and its label for files:
 * without user:password@. */
static void base_and_label(const char *target, char *base, size_t bsize, char *label, size_t lsize)
{
    snprintf(base, bsize, "%s", target);
    size_t bl = strlen(base);
    while (bl && base[bl - 1] == '/')
        base[--bl] = '\0';
    if (bl >= 3 && !strcmp(base + bl - 3, "/v1"))
        base[bl - 3] = '\0';
    const char *sch = strstr(base, "://"), *auth = sch ? sch + 3 : base;
    const char *at = strchr(auth, '@'), *slash = strchr(auth, '/');
    if (at && (!slash || at < slash))
        snprintf(label, lsize, "%.*s%s", (int)(auth - base), base, at + 1);
    else
        snprintf(label, lsize, "%s", base);
}

/* A fleet: each replica's request URL and label, and the router. */
static int fleet_init(struct lt_replay *rp, struct lt_err *err)
{
    const struct lt_replay_opts *o = &rp->o;
    size_t n = o->n_targets;
    rp->replicas = calloc(n, sizeof *rp->replicas);
    rp->replica_url = calloc(n, sizeof *rp->replica_url);
    if (!rp->replicas || !rp->replica_url)
        return lt_errset(err, LT_ENOMEM, "out of memory");
    rp->n_replicas = n;
    for (size_t i = 0; i < n; i++) {
        char base[1024];
        base_and_label(o->targets[i], base, sizeof base, rp->replicas[i].label,
                       sizeof rp->replicas[i].label);
        snprintf(rp->replica_url[i], sizeof rp->replica_url[i], "%s%s", base,
                 lt_replay_api_path(o->api));
        rp->replicas[i].down_at_us = -1;
    }
    struct lt_route_opts ro = o->route;
    ro.n = (uint32_t)n;
    int rc = lt_route_init(&rp->router, &ro, err);
    if (rc < 0)
        return rc;
    rp->st.replicas = rp->replicas;
    rp->st.n_replicas = n;
    return 0;
}

struct lt_replay *lt_replay_new(const struct lt_replay_opts *opts, struct lt_err *err)
{
    int rc = 0;
    struct lt_replay *rp = NULL;
    if (check_opts(opts, err) < 0)
        return NULL;
    rp = calloc(1, sizeof *rp);
    if (!rp) {
        lt_errset(err, LT_ENOMEM, "out of memory");
        return NULL;
    }
    rp->epfd = rp->sched_tfd = rp->tick_tfd = -1;
    rp->stop_pipe[0] = rp->stop_pipe[1] = -1;
    rp->scr.tfd = -1;
    rp->cancels.tfd = -1;
    rp->o = *opts;
    rp->mode = opts->mode;
    rp->head.next = rp->head.prev = &rp->head;
    lt_buf_init(&rp->res_keys, 1 << 12);
    curl_global_init(CURL_GLOBAL_DEFAULT);

    /* Credentials in the URL (user:password@host) stay out of every file. */
    base_and_label(opts->target, rp->base, sizeof rp->base, rp->label, sizeof rp->label);
    rp->http.base = rp->base;
    if (opts->target_label)
        snprintf(rp->label, sizeof rp->label, "%s", opts->target_label);
    const char *host = strstr(rp->base, "://");
    host = host ? host + 3 : rp->base;
    rp->http.no_proxy =
        !strncmp(host, "127.", 4) || !strncmp(host, "localhost", 9) || !strncmp(host, "[::1]", 5);
    rp->http.insecure = opts->insecure;
    rp->http.connect_timeout_ms =
        (long)((opts->connect_timeout_us ? opts->connect_timeout_us : 10000000LL) / 1000);
    LT_TRY(lt_replay_http_headers_for(&rp->http.headers, opts->api == LT_REPLAY_API_MESSAGES,
                                      opts->api_key_bearer_too, opts->api_key, opts->headers,
                                      opts->n_headers, err));

    LT_TRY(lt_plan_jobs_open(&rp->trace, rp->o.trace_path, err));
    if (opts->prompts_path)
        LT_TRY(lt_replay_corpus_load(&rp->corpus, opts->prompts_path, err));
    struct lt_plan_opts po;
    lt_replay_plan_opts(opts, &po);
    LT_TRY(lt_plan_init(&rp->plan, &rp->trace, &po, err));
    rp->st.sampled = rp->plan.sampled;
    rp->st.sample = rp->plan.sample;

    if (opts->model) /* checked against the target by lt_replay_prepare */
        snprintf(rp->model, sizeof rp->model, "%s", opts->model);
    rp->build = (struct lt_replay_build){
        .api = opts->api,
        .model = rp->model,
        .stream = !opts->no_stream,
        .force_length = !opts->no_force_length,
        .chunk_usage = opts->chunk_usage,
        .token_ids = !opts->no_token_ids,
        .synthetic = opts->synthetic_prompts,
        .block_tokens = rp->trace.block_tokens ? rp->trace.block_tokens : LT_DEFAULT_BLOCK_TOKENS,
        .default_out = opts->default_out ? opts->default_out : LT_REPLAY_DEFAULT_OUT,
        .reasoning_effort = opts->reasoning_effort,
        .thinking = opts->thinking,
        .corpus = rp->corpus.n ? &rp->corpus : NULL,
    };
    struct lt_replay_media_stats ms;
    LT_TRY(lt_replay_media_new(
        &rp->media, &rp->trace,
        opts->max_image_bytes ? opts->max_image_bytes : LT_REPLAY_MAX_IMAGE_BYTES, &ms, err));
    rp->st.media_shapes = ms.shapes;
    rp->st.media_bytes = ms.bytes;
    rp->st.media_substituted = ms.substituted;
    rp->st.media_refused = ms.refused;
    rp->st.media_prep_us = ms.prep_us;
    if (opts->media_links && rp->media) {
        LT_TRY(lt_replay_media_serve(rp->media, err));
        lt_replay_media_link_base(rp->media, rp->st.media_links, sizeof rp->st.media_links);
    }
    rp->build.calib = (struct lt_replay_calib){.tok_per_word = 1.0};
    rp->st.calib = rp->build.calib;
    snprintf(rp->st.calib_how, sizeof rp->st.calib_how, "not calibrated");
    snprintf(rp->url, sizeof rp->url, "%s%s", rp->base, lt_replay_api_path(opts->api));

    rp->resend_from = -1;
    if (opts->n_targets > 1)
        LT_TRY(fleet_init(rp, err));
    rc = lt__h1_choose(rp, err);
    if (rc < 0)
        goto out;
    rp->h1.on = rc == 1 && !rp->n_replicas;
    rc = 0;
    rp->st.http_client = rp->h1.on ? "lean" : "curl";
    LT_TRY(lt__h1_init(rp, err));
    LT_TRY(lt__replay_engine_init(rp, err));
    LT_TRY(lt__replay_scrape_init(rp, err));

out:
    if (rc < 0) {
        lt_replay_free(rp);
        return NULL;
    }
    return rp;
}

struct lt_replay_known {
    char model[128];
    struct lt_replay_calib calib;
    char calib_how[sizeof((struct lt_replay_stats *)0)->calib_how];
    uint32_t *ids;
    size_t n_ids;
    struct lt_replay_word word; /* what the server said of itself */
};

struct lt_replay_known *lt_replay_known_new(const struct lt_replay *rp)
{
    struct lt_replay_known *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    snprintf(k->model, sizeof k->model, "%s", rp->model);
    k->calib = rp->build.calib;
    snprintf(k->calib_how, sizeof k->calib_how, "%s", rp->st.calib_how);
    k->word = rp->word;
    if (rp->build.n_ids) {
        k->ids = malloc(rp->build.n_ids * sizeof *k->ids);
        if (!k->ids) {
            free(k);
            return NULL;
        }
        memcpy(k->ids, rp->build.ids, rp->build.n_ids * sizeof *k->ids);
        k->n_ids = rp->build.n_ids;
    }
    return k;
}

void lt_replay_known_free(struct lt_replay_known *k)
{
    if (!k)
        return;
    free(k->ids);
    free(k);
}

/* The model and the calibration an earlier replay of this target learned. */
static int take_known(struct lt_replay *rp, const struct lt_replay_known *k, struct lt_err *err)
{
    snprintf(rp->model, sizeof rp->model, "%s", k->model);
    rp->build.calib = k->calib;
    snprintf(rp->st.calib_how, sizeof rp->st.calib_how, "%.200s (learned before)", k->calib_how);
    rp->word = k->word;
    if (k->n_ids) {
        uint32_t *ids = malloc(k->n_ids * sizeof *ids);
        if (!ids)
            return lt_errset(err, LT_ENOMEM, "out of memory");
        memcpy(ids, k->ids, k->n_ids * sizeof *ids);
        free(rp->tok_ids);
        rp->tok_ids = ids;
        rp->build.ids = ids;
        rp->build.n_ids = k->n_ids;
    }
    return 0;
}

int lt_replay_prepare(struct lt_replay *rp, struct lt_err *err)
{
    lt__h1_prepare(rp);
    memset(&rp->word, 0, sizeof rp->word);
    int rc = rp->o.known ? take_known(rp, rp->o.known, err) : lt__replay_find_model(rp, err);
    if (rc < 0)
        return rc;
    snprintf(rp->st.model, sizeof rp->st.model, "%s", rp->model);
    if (!rp->o.known)
        lt__replay_calibrate(rp);
    rp->st.calib = rp->build.calib;
    if (!rp->o.known) /* a search's probes ask the server once, with the model */
        lt__replay_server_probe(rp);
    if ((rc = lt__replay_scrape_prepare(rp, err)) < 0)
        return rc;
    return lt__replay_open_results(rp, err);
}

void lt_replay_stop(struct lt_replay *rp)
{
    rp->stop = 1;
    if (rp->stop_pipe[1] >= 0) {
        ssize_t n = write(rp->stop_pipe[1], "x", 1);
        (void)n;
    }
}

void lt_replay_stop_signal(struct lt_replay *rp, int sig)
{
    rp->stop_sig = sig;
    lt_replay_stop(rp);
}

bool lt_replay_stopped(const struct lt_replay *rp)
{
    return rp->stop != 0;
}

void lt_replay_get_stats(const struct lt_replay *rp, struct lt_replay_stats *st)
{
    *st = rp->st;
    st->route_spilled = rp->router.spilled;
    lt_replay_media_link_stats(rp->media, &st->media_link_gets, &st->media_link_404);
    if (rp->w) { /* during the run; at its end lt_replay_run set them */
        st->write_failed = lt_writer_failed(rp->w);
        lt_writer_on_disk(rp->w, &st->on_disk);
    }
}

void lt_replay_free(struct lt_replay *rp)
{
    if (!rp)
        return;
    lt__replay_engine_release(rp);
    lt_replay_media_free(rp->media);
    if (rp->w)
        lt_writer_close(rp->w, NULL);
    curl_slist_free_all(rp->http.headers);
    lt_plan_jobs_close(&rp->trace);
    lt_replay_corpus_release(&rp->corpus);
    free(rp->tok_ids);
    lt__replay_check_release(rp);
    lt_plan_release(&rp->plan);
    free(rp->chunkbuf);
    lt_buf_release(&rp->res_keys);
    lt_u64map_release(&rp->warm);
    lt_route_release(&rp->router);
    free(rp->replicas);
    free(rp->replica_url);
    free(rp);
}

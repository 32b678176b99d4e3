/*
 * The records a live replay writes (docs/trace-format.md §2.4-2.5, 2.8), as
 * traces/trace_results.h packs every engine's: a
 * run record when each run starts, one result per request when it ends,
 * its times relative to the run's origin, and the run's self-check when
 * the run ends (the run record is written before its figures are known).
 */
#include "replay/replay_internal.h"
#include "replay/replay_live.h"

#include "traces/trace_results.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int lt__replay_open_results(struct lt_replay *rp, struct lt_err *err)
{
    if (rp->w || !rp->o.out_path)
        return 0;
    const char *mk[] = {"trace", "target"};
    const char *mv[] = {rp->o.trace_path, rp->label};
    /* Small frames at a fast level: compressing a frame stalls the loop,
     * and a stall is schedule lag. A frame every 200 ms also bounds what a
     * crash can lose well within the format's second. */
    struct lt_writer_opts wo = {.level = 1, .frame_records = 512, .frame_ms = 200};
    rp->w = lt_results_file(rp->o.out_path, mk, mv, 2, rp->trace.block_tokens, &wo, err);
    return rp->w ? 0 : err ? err->code : LT_EIO;
}

int lt__replay_put_run(struct lt_replay *rp, struct lt_extra extra, struct lt_err *err)
{
    const struct lt_replay_opts *o = &rp->o;
    struct lt_plan_desc pd;
    lt_plan_describe(&rp->plan, &pd);
    const struct lt_replay_calib *c = &rp->build.calib;
    const char *labels[LT_ROUTE_MAX];
    size_t nr = rp->n_replicas < LT_ROUTE_MAX ? rp->n_replicas : LT_ROUTE_MAX;
    for (size_t i = 0; i < nr; i++)
        labels[i] = rp->replicas[i].label;
    struct lt_run_desc d = {
        .run = {.id = lt__replay_rec_run(rp),
                .mode = pd.mode,
                .concurrency = pd.concurrency,
                .rate = pd.rate,
                .speed = pd.speed,
                .target = rp->label,
                .model = rp->model,
                .warmup = (uint32_t)(o->warmup < UINT32_MAX ? o->warmup : UINT32_MAX),
                .extra = extra},
        /* which part this is, and what it meant to send: what a merge of
         * the parts needs to say which requests a lost part took along */
        .part = o->part,
        .parts = o->parts,
        .planned = rp->plan.planned,
        /* how the prompt lengths were made, and how far the calibration's
         * own check found them off: what a reader needs to trust `in` */
        .calib = rp->st.calib_how,
        .calib_err = c->err,
        .calib_err_rel = c->err_rel,
        /* a fleet: its replicas in index order (a result's "replica"
         * indexes them), the routing policy and what a failure does */
        .replicas = labels,
        .n_replicas = (uint32_t)nr,
        .route = nr ? lt_route_name(rp->router.o.policy) : NULL,
        .failover = o->failover,
    };
    if (rp->sink && rp->sink->fill_run)
        rp->sink->fill_run(rp->sink->ud, &d.run);
    int rc = lt_results_put_run(rp->w, &d, err);
    if (rc == 0 && rp->sink && rp->sink->on_run)
        rp->sink->on_run(rp->sink->ud, &d.run);
    return rc;
}

/* seq's keys beyond struct lt_result that only the engine knows: its
 * retries, the trace record's media parts (for analyze's modality split),
 * the inputs of an embeddings or rerank request, a fleet's replica. */
static void result_keys(const struct lt_replay *rp, size_t seq, const struct lt_plan_job *job,
                        const struct lt_replay_req *q, struct lt_result_keys *keys)
{
    keys->retries = rp->plan.attempts[seq];
    const struct lt_plan_media_rec *mr =
        rp->trace.n_media ? lt_plan_job_media(&rp->trace, job, &keys->media) : NULL;
    keys->n_media = mr ? mr->n : 0;            /* the parts sent, for analyze's modality split */
    if (lt_replay_api_inputs(rp->build.api)) { /* "inputs": n, for inputs/s */
        uint32_t n = 0;
        for (uint32_t i = 0; i < job->n_msgs; i++)
            n += strcmp(job->msgs[i].role, "query") != 0;
        keys->inputs = n ? n : 1;
    }
    if (q && q->replica >= 0) {
        keys->has_replica = true;
        keys->replica = (uint32_t)q->replica;
        keys->failed_over = q->failover_from >= 0;
        keys->failover_from = keys->failed_over ? (uint32_t)q->failover_from : 0;
    }
}

/* llama-server's own account of the request (its "timings"), as the
 * server said it (trace_results.h names the keys). */
static void timing_keys(const struct lt_wire_timings *t, struct lt_result_keys *keys)
{
    keys->has_srv_pf = t->has_prompt_ms;
    keys->srv_pf_us = (uint64_t)llround(t->prompt_ms * 1000);
    keys->has_srv_pf_n = t->has_prompt_n;
    keys->srv_pf_n = t->prompt_n;
    keys->has_srv_dec = t->has_predicted_ms;
    keys->srv_dec_us = (uint64_t)llround(t->predicted_ms * 1000);
    keys->has_srv_dec_n = t->has_predicted_n;
    keys->srv_dec_n = t->predicted_n;
    keys->has_srv_cache = t->has_cache_n;
    keys->srv_cache = t->cache_n;
}

int lt__replay_put_result(struct lt_replay *rp, size_t seq, const struct lt_replay_req *q,
                          const char *err, lt_mono end_t, struct lt_err *e)
{
    const struct lt_plan_job *job = &rp->trace.v[lt_plan_job_of(&rp->plan, seq)];
    struct lt_result r = {0};
    r.run = lt__replay_rec_run(rp);
    r.index = job->index;
    r.sched = rp->plan.offs[seq];
    /* A request closed where its trace's client left is no error. */
    r.cancelled = lt__replay_is_cancelled(err);
    r.err = r.cancelled ? NULL : err;
    if (r.cancelled)
        err = NULL;
    r.warmup = rp->warm_sent && lt_u64map_get(&rp->warm, seq);
    struct lt_result_keys keys = {0};
    char body[LT_REPLAY_ERR_BODY + 1];
    if (q && err && q->rbody.len) {
        /* The server's words: the start of its answer, kept printable so
         * that every reader and terminal shows it as it is (the request's
         * headers never reach here: this is the response body only). */
        size_t n = q->rbody.len < LT_REPLAY_ERR_BODY ? q->rbody.len : LT_REPLAY_ERR_BODY;
        for (size_t i = 0; i < n; i++) {
            unsigned char ch = (unsigned char)q->rbody.p[i];
            body[i] = ch == '\n' || ch == '\r' || ch == '\t' ? ' '
                      : ch < 32 || ch > 126                  ? '?'
                                                             : (char)ch;
        }
        body[n] = '\0';
        r.err_body = body;
    }
    if (q) {
        const struct lt_wire_resp *s = &q->resp;
        r.has |= LT_RHAS_WANT_IN | LT_RHAS_WANT_OUT;
        r.want_in = q->want_in;
        r.want_out = q->want_out;
        if (q->has_sent) {
            r.has |= LT_RHAS_SENT;
            r.sent = lt__replay_since_origin_us(rp, q->sent);
        }
        if (q->has_fb) {
            r.has |= LT_RHAS_FIRST_BYTE;
            r.first_byte = lt__replay_since_origin_us(rp, q->fb);
        }
        if (s->has_first_token) {
            r.has |= LT_RHAS_FIRST_TOKEN;
            r.first_token = lt__replay_since_origin_us(rp, s->first_token);
        }
        if (s->has_first_content) {
            r.has |= LT_RHAS_FIRST_CONTENT;
            r.first_content = lt__replay_since_origin_us(rp, s->first_content);
        }
        if (q->has_sent || q->has_fb) {
            r.has |= LT_RHAS_END;
            r.end = lt__replay_since_origin_us(rp, end_t);
        }
        if (q->status) {
            r.has |= LT_RHAS_STATUS;
            r.status = (int32_t)q->status;
        }
        /* A whole answer's one "chunk" carries its usage's count: when
         * that count is disproved (bad_usage), nothing received says how
         * many tokens came, so neither chunks nor out are written. */
        bool bad_usage = err && !strcmp(err, LT_REPLAY_ERR_BAD_USAGE);
        bool counts_known = q->is_sse || !bad_usage;
        if (s->n_chunks && counts_known) {
            if (rp->chunkbuf_cap < s->n_chunks) {
                struct lt_chunk *c = realloc(rp->chunkbuf, s->n_chunks * sizeof *c);
                if (!c)
                    return lt_errset(e, LT_ENOMEM, "out of memory");
                rp->chunkbuf = c;
                rp->chunkbuf_cap = s->n_chunks;
            }
            for (uint32_t i = 0; i < s->n_chunks; i++) {
                rp->chunkbuf[i].t = lt__replay_since_origin_us(rp, s->chunks[i].t);
                rp->chunkbuf[i].tokens = s->chunks[i].tokens;
            }
            uint32_t thin;
            uint32_t n = lt_chunks_thin(rp->chunkbuf, s->n_chunks, &thin);
            r.has |= LT_RHAS_CHUNKS;
            r.n_chunks = n;
            r.chunks = rp->chunkbuf;
            keys.ctok = s->chunk_usage ? LT_CTOK_USAGE : LT_CTOK_ONE;
            keys.thin = thin;
            rp->st.thinned += thin > 1;
        }
        /* Usage the chunks disprove (bad_usage) is not written as the
         * count: the chunks are what was received. */
        if (s->has_usage && !bad_usage) {
            r.has |= LT_RHAS_IN | LT_RHAS_OUT | LT_RHAS_REASONING;
            if (s->has_cached) /* no cached count said is not 0 cached */
                r.has |= LT_RHAS_CACHED;
            r.in = s->in;
            r.out = s->out;
            r.reasoning = s->reasoning;
            r.cached = s->cached;
            r.count = "usage";
            if (s->reasoning_unknown)
                r.has &= ~LT_RHAS_REASONING;
        } else if (s->n_chunks && counts_known) {
            r.has |= LT_RHAS_OUT | LT_RHAS_REASONING;
            r.out = s->counted;
            r.reasoning = s->counted_reasoning;
            r.count = "chunks";
        }
        if (s->has_finish)
            r.finish = s->finish;
        if (s->has_timings)
            timing_keys(&s->timings, &keys);
        /* embeddings and rerank: their usage is the prompt's alone */
        if (lt_replay_api_inputs(rp->build.api) && !err && s->in) {
            r.has |= LT_RHAS_IN;
            r.in = s->in;
            r.count = "usage";
        }
    }
    result_keys(rp, seq, job, q, &keys);
    if (lt_results_keys(&keys, &rp->res_keys, &r.extra) < 0)
        return lt_errset(e, LT_ENOMEM, "out of memory");
    int rc = lt_writer_put_result(rp->w, &r, e);
    if (rc == 0 && rp->o.live) /* what was recorded, as the file has it */
        lt_replay_live_result(rp->o.live, &r);
    if (rc == 0 && rp->sink && rp->sink->on_result)
        rp->sink->on_result(rp->sink->ud, &r);
    return rc;
}

int lt__replay_put_check(struct lt_replay *rp, const struct lt_check *k, struct lt_err *err)
{
    return lt_writer_put_check(rp->w, k, err);
}

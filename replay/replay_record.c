/*
 * The records a live replay writes (docs/trace-format.md §2.4-2.5, 2.8): a
 * run record when each run starts, one result per request when it ends,
 * its times relative to the run's origin, and the run's self-check when
 * the run ends (the run record is written before its figures are known).
 */
#include "replay/replay_internal.h"
#include "replay/replay_live.h"

#include "traces/lt_mp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int lt__replay_open_results(struct lt_replay *rp, struct lt_err *err)
{
    if (rp->w)
        return 0;
    const char *mk[] = {"trace", "target"};
    const char *mv[] = {rp->o.trace_path, rp->label};
    struct lt_buf meta;
    lt_buf_init(&meta, 1 << 16);
    lt_meta_pack(&meta, mk, mv, 2);
    struct lt_header h = {
        .kind = LT_KIND_RESULTS,
        .source = "replay",
        .block_tokens = rp->trace.block_tokens,
        .meta = (const uint8_t *)meta.p,
        .meta_len = meta.len,
    };
    /* Small frames at a fast level: compressing a frame stalls the loop,
     * and a stall is schedule lag. A frame every 200 ms also bounds what a
     * crash can lose well within the format's second. */
    struct lt_writer_opts wo = {.level = 1, .frame_records = 512, .frame_ms = 200};
    rp->w = lt_writer_open(rp->o.out_path, &h, &wo, err);
    lt_buf_release(&meta);
    return rp->w ? 0 : err ? err->code : LT_EIO;
}

int lt__replay_put_run(struct lt_replay *rp, struct lt_extra extra, struct lt_err *err)
{
    int rc = 0;
    const struct lt_replay_opts *o = &rp->o;
    char start[32];
    lt_wall_rfc3339(start);
    lt_buf_reset(&rp->run_extra);
    struct lt_mp m = {.out = &rp->run_extra};
    uint32_t n = extra.n;
    if (o->parts > 1) {
        /* Which part this is, and what it meant to send: what a merge of
         * the parts needs to say which requests a lost part took along. */
        lt_mp_cstr(&m, "rank");
        lt_mp_uint(&m, o->part);
        lt_mp_cstr(&m, "ranks");
        lt_mp_uint(&m, o->parts);
        lt_mp_cstr(&m, "planned");
        lt_mp_uint(&m, rp->plan.planned);
        n += 3;
    }
    /* How the prompt lengths were made, and how far the calibration's
     * own check found them off: what a reader needs to trust `in`. */
    const struct lt_replay_calib *c = &rp->build.calib;
    lt_mp_cstr(&m, "calib");
    lt_mp_cstr(&m, rp->st.calib_how);
    n++;
    if (c->err >= 0) {
        lt_mp_cstr(&m, "calib_err");
        lt_mp_double(&m, c->err);
        lt_mp_cstr(&m, "calib_err_rel");
        lt_mp_double(&m, c->err_rel);
        n += 2;
    }
    if (rp->n_replicas) {
        /* A fleet: its replicas in index order (a result's "replica"
         * indexes them), the routing policy and what a failure does. */
        lt_mp_cstr(&m, "replicas");
        lt_mp_array(&m, (uint32_t)rp->n_replicas);
        for (size_t i = 0; i < rp->n_replicas; i++)
            lt_mp_cstr(&m, rp->replicas[i].label);
        lt_mp_cstr(&m, "route");
        lt_mp_cstr(&m, lt_route_name(rp->router.o.policy));
        lt_mp_cstr(&m, "failover"); /* 0 or 1: an integer, as readers take extras */
        lt_mp_uint(&m, o->failover);
        n += 3;
    }
    if ((extra.len ? lt_mp_raw(&m, extra.data, extra.len) : m.rc) < 0) {
        rc = lt_errset(err, LT_ENOMEM, "out of memory");
        goto out;
    }
    extra.data = (const uint8_t *)rp->run_extra.p;
    extra.len = rp->run_extra.len;
    extra.n = n;
    struct lt_plan_desc d;
    lt_plan_describe(&rp->plan, &d);
    struct lt_run run = {
        .id = rp->run_id,
        .mode = d.mode,
        .concurrency = d.concurrency,
        .rate = d.rate,
        .speed = d.speed,
        .target = rp->label,
        .model = rp->model,
        .start = start,
        .version = LT_VERSION,
        .warmup = (uint32_t)(o->warmup < UINT32_MAX ? o->warmup : UINT32_MAX),
        .extra = extra,
    };
    rc = lt_writer_put_run(rp->w, &run, err);
out:
    return rc;
}

/* The audio and video parts sent, for analyze's modality split: "aud"
 * and "vid" (counts) and "av_tok" (their tokens as the trace recorded
 * them), appended to x in buf (its room cap) when the request has any. */
static void put_av(const struct lt_media *parts, uint32_t n, uint8_t *buf, size_t cap,
                   struct lt_extra *x)
{
    uint64_t aud = 0, vid = 0, tok = 0;
    for (uint32_t i = 0; i < n; i++) {
        aud += parts[i].kind == LT_MEDIA_AUDIO;
        vid += parts[i].kind == LT_MEDIA_VIDEO;
        tok += parts[i].kind != LT_MEDIA_IMAGE ? parts[i].tokens : 0;
    }
    if (!aud && !vid)
        return;
    struct lt_buf b;
    lt_buf_init(&b, cap - x->len);
    struct lt_mp m = {.out = &b};
    lt_mp_cstr(&m, "aud");
    lt_mp_uint(&m, aud);
    lt_mp_cstr(&m, "vid");
    lt_mp_uint(&m, vid);
    lt_mp_cstr(&m, "av_tok");
    lt_mp_uint(&m, tok);
    if (m.rc == 0 && b.len <= cap - x->len) {
        memcpy(buf + x->len, b.p, b.len);
        x->len += b.len;
        x->n += 3;
    }
    lt_buf_release(&b);
}

/* llama-server's own account of the request (its "timings"): "srv_pf"
 * and "srv_dec", its prefill (admission to first token) and decode (first
 * token to last) in us, "srv_pf_n" and "srv_dec_n" their tokens,
 * "srv_cache" the prompt tokens it reused. Each only as the server said it. */
static void put_timings(const struct lt_wire_timings *t, uint8_t *buf, size_t cap,
                        struct lt_extra *x)
{
    struct lt_buf b;
    lt_buf_init(&b, cap - x->len);
    struct lt_mp m = {.out = &b};
    uint32_t n = 0;
    if (t->has_prompt_ms) {
        lt_mp_cstr(&m, "srv_pf");
        lt_mp_uint(&m, (uint64_t)llround(t->prompt_ms * 1000));
        n++;
    }
    if (t->has_prompt_n) {
        lt_mp_cstr(&m, "srv_pf_n");
        lt_mp_uint(&m, t->prompt_n);
        n++;
    }
    if (t->has_predicted_ms) {
        lt_mp_cstr(&m, "srv_dec");
        lt_mp_uint(&m, (uint64_t)llround(t->predicted_ms * 1000));
        n++;
    }
    if (t->has_predicted_n) {
        lt_mp_cstr(&m, "srv_dec_n");
        lt_mp_uint(&m, t->predicted_n);
        n++;
    }
    if (t->has_cache_n) {
        lt_mp_cstr(&m, "srv_cache");
        lt_mp_uint(&m, t->cache_n);
        n++;
    }
    if (m.rc == 0 && b.len <= cap - x->len) {
        memcpy(buf + x->len, b.p, b.len);
        x->len += b.len;
        x->n += n;
    }
    lt_buf_release(&b);
}

int lt__replay_put_result(struct lt_replay *rp, size_t seq, const struct lt_replay_req *q,
                          const char *err, lt_mono end_t, struct lt_err *e)
{
    const struct lt_plan_job *job = &rp->trace.v[lt_plan_job_of(&rp->plan, seq)];
    struct lt_result r = {0};
    r.run = rp->run_id;
    r.index = job->index;
    r.sched = rp->plan.offs[seq];
    /* A request closed where its trace's client left is no error. */
    r.cancelled = lt__replay_is_cancelled(err);
    r.err = r.cancelled ? NULL : err;
    if (r.cancelled)
        err = NULL;
    r.warmup = rp->warm_sent && lt_u64map_get(&rp->warm, seq);
    uint8_t extra[256]; /* extra keys: "ctok" (how chunk tokens were counted), "thin", "retries",
                         * "img", "img_tok", "aud", "vid", "av_tok", "inputs", "replica",
                         * "failover_from", the srv_* timings */
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
            r.extra.len = lt_chunks_ctok_key(extra, s->chunk_usage);
            r.extra.n = 1;
            if (thin > 1) {
                r.extra.len += lt_chunks_thin_key(extra + r.extra.len, thin);
                r.extra.n++;
                rp->st.thinned++;
            }
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
            put_timings(&s->timings, extra, sizeof extra, &r.extra);
        /* embeddings and rerank: their usage is the prompt's alone */
        if (lt_replay_api_inputs(rp->build.api) && !err && s->in) {
            r.has |= LT_RHAS_IN;
            r.in = s->in;
            r.count = "usage";
        }
    }
    if (rp->plan.attempts[seq]) { /* "retries": n (a positive fixint) */
        static const uint8_t key[] = {0xa7, 'r', 'e', 't', 'r', 'i', 'e', 's'};
        memcpy(extra + r.extra.len, key, sizeof key);
        extra[r.extra.len + sizeof key] = rp->plan.attempts[seq] & 0x7f;
        r.extra.len += sizeof key + 1;
        r.extra.n++;
    }
    const struct lt_media *parts;
    const struct lt_plan_media_rec *mr =
        rp->trace.n_media ? lt_plan_job_media(&rp->trace, job, &parts) : NULL;
    if (mr && mr->n) { /* the images sent, for analyze's modality split */
        uint64_t tok = 0;
        uint32_t n = lt_media_images(parts, mr->n, &tok);
        static const uint8_t kimg[] = {0xa3, 'i', 'm', 'g'};
        static const uint8_t ktok[] = {0xa7, 'i', 'm', 'g', '_', 't', 'o', 'k', 0xce};
        uint32_t t = tok > UINT32_MAX ? UINT32_MAX : (uint32_t)tok;
        memcpy(extra + r.extra.len, kimg, sizeof kimg);
        extra[r.extra.len + sizeof kimg] = (uint8_t)(n & 0x7f); /* n <= LT_MEDIA_MAX */
        r.extra.len += sizeof kimg + 1;
        memcpy(extra + r.extra.len, ktok, sizeof ktok);
        r.extra.len += sizeof ktok;
        for (int k = 3; k >= 0; k--)
            extra[r.extra.len++] = (uint8_t)(t >> (8 * k));
        r.extra.n += 2;
        put_av(parts, mr->n, extra, sizeof extra, &r.extra);
    }
    if (lt_replay_api_inputs(rp->build.api)) { /* "inputs": n, for inputs/s */
        uint32_t n = 0;
        for (uint32_t i = 0; i < job->n_msgs; i++)
            n += strcmp(job->msgs[i].role, "query") != 0;
        static const uint8_t kin[] = {0xa6, 'i', 'n', 'p', 'u', 't', 's', 0xce};
        memcpy(extra + r.extra.len, kin, sizeof kin);
        r.extra.len += sizeof kin;
        uint32_t v = n ? n : 1;
        for (int k = 3; k >= 0; k--)
            extra[r.extra.len++] = (uint8_t)(v >> (8 * k));
        r.extra.n++;
    }
    if (q && q->replica >= 0) { /* "replica": i, "failover_from": j (uint16 at most) */
        struct lt_buf xb;
        lt_buf_init(&xb, sizeof extra - r.extra.len);
        struct lt_mp m = {.out = &xb};
        lt_mp_cstr(&m, "replica");
        lt_mp_uint(&m, (uint64_t)q->replica);
        if (q->failover_from >= 0) {
            lt_mp_cstr(&m, "failover_from");
            lt_mp_uint(&m, (uint64_t)q->failover_from);
        }
        if (m.rc == 0) {
            memcpy(extra + r.extra.len, xb.p, xb.len);
            r.extra.len += xb.len;
            r.extra.n += q->failover_from >= 0 ? 2 : 1;
        }
        lt_buf_release(&xb);
    }
    r.extra.data = extra;
    int rc = lt_writer_put_result(rp->w, &r, e);
    if (rc == 0 && rp->o.live) /* what was recorded, as the file has it */
        lt_replay_live_result(rp->o.live, &r);
    return rc;
}

int lt__replay_put_check(struct lt_replay *rp, const struct lt_check *k, struct lt_err *err)
{
    return lt_writer_put_check(rp->w, k, err);
}

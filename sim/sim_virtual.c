/*
 * The virtual-time driver (see sim_virtual.h): the clock of a replay plan
 * (plan/plan.h) whose engine is the sim's model. Two event sources: the
 * plan's next due time (lt_plan_next_due: a scheduled send, a session turn
 * released, a retry) and the model's step ends (lt_sim_model_next).
 * Whichever is earlier happens next; on a tie the step ends first, so a
 * request due exactly at a step boundary waits for the next step, as it
 * would on the live server. When a request's last token comes, it is
 * recorded and the plan told (lt_plan_finish), which may release a
 * session's next turn or a slot.
 *
 * A request here is RUNNING (in the model, its token times kept) from the
 * plan's send to its last token, then its result is written and its state
 * freed; everything else about it is the plan's. So this driver holds
 * memory only for what is in the model: a small struct per request sent
 * and not yet done (queued in the model included), and token times only
 * from a request's first token to its last (keeping them for queued
 * requests cost 8 bytes a token: 584 MB at 200,000 requests). Token arrays go back to a pool when
 * their request is done and are reused by the next request that starts emitting: the pool holds at
 * most as many as ever ran at once, and the allocator is not churned with
 * one array per request (under AddressSanitizer, whose quarantine keeps
 * up to 256 MB of freed blocks, that churn alone looked like every
 * request's token times being held).
 *
 * A record whose client left mid-stream (cancel_tokens, cancel_after) is
 * cancelled as the live replay does (replay/replay_cancel.c has the rule):
 * at its token count in on_emit, or at its time since send, a third event
 * source (a heap of deadlines); the model is asked to abort the sequence
 * (lt_sim_model_cancel), which frees its slot and KV at the step's end.
 */
#include "sim/sim_virtual.h"

#include "sim/sim_model.h"
#include "sim/sim_api.h"
#include "base/lt_buf.h"
#include "base/lt_heap.h"
#include "base/lt_rng.h"
#include "base/lt_time.h"
#include "metrics/prom_map.h"
#include "traces/trace_results.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A request sent and not yet done: allocated at the plan's send, freed
 * when its result is written (or, when a cancel deadline of it is still
 * in the heap, when that deadline is dropped). */
struct vq {
    struct vq *prev, *next; /* the live list, so a failed run frees every one */
    size_t seq;
    int64_t sent_us;
    int64_t *tok; /* emission time of each token, ns; from the first token on */
    uint32_t tokcap;
    uint32_t ntok;
    uint32_t cached;
    int64_t admitted_ns;    /* when the model took it into its batch (its first token's event) */
    uint32_t in, out;       /* asked for */
    bool rejected;          /* answered 400 at once (context overflow) */
    struct lt_sim_mreq *mq; /* in the model; NULL once it ended or was cancelled */
    int replica;            /* the fleet's instance serving it (0 with one) */
    bool by_tokens;         /* cancel once cancel_tokens came (0: at the first) */
    uint32_t cancel_tokens;
    bool cancelled;
    int64_t cancel_ns; /* when it was cancelled */
    bool in_heap;      /* a deadline of it is in the cancel heap */
    bool written;      /* its result is written: freed once the heap lets go */
    bool warm;         /* one of the run's first warmup sends */
};

struct vcancel {
    int64_t at_ns; /* sent + cancel_after */
    size_t seq;    /* ties in seq order, so runs repeat exactly */
    struct vq *q;
};

/* A token array not in use, kept for the next request. */
struct tokbuf {
    int64_t *p;
    uint32_t cap;
};

struct vrun {
    const struct lt_sim_profile *p;
    struct lt_plan *plan;
    const struct lt_sim_vrun *vr;
    uint32_t run;
    uint32_t rec_run;         /* the run's id in the file: run, from the sink's base on */
    struct lt_sim_model **ms; /* nm instances (a fleet: vr->route) */
    uint32_t nm;
    struct lt_writer *w;
    int64_t now_ns;
    struct vq **done; /* requests whose last token came (or cancelled) in this step */
    size_t ndone, done_cap;
    struct tokbuf *pool; /* token arrays free for reuse */
    size_t npool, pool_cap;
    size_t inflight; /* requests sent and not yet done */
    struct vq live;  /* head of the list of every struct vq */
    uint64_t *blockbuf;
    size_t blockbuf_cap;
    struct lt_chunk *chunks;
    size_t chunks_cap;
    struct lt_buf keys;     /* a result's extra keys (lt_results_keys), reused by each */
    bool oom;               /* the model emitted more tokens than asked (not expected) */
    uint32_t nomem;         /* an emit found no memory for this many token times */
    int64_t next_sample_ns; /* the next scrape sample (INT64_MAX: none) */
    struct lt_heap cancels; /* struct vcancel, earliest first */
    struct lt_sim_vstats st;
    uint64_t sent;                       /* sends so far: the first vr->warmup are warm-up */
    uint32_t polls;                      /* loop rounds, to ask vr->stopped every few */
    uint64_t out_sent;                   /* output tokens of the requests a stop aborted */
    int64_t first_sent_us, last_sent_us; /* of the run's sends; -1: none yet */
};

static const struct lt_plan_job *job_of(const struct vrun *v, size_t seq)
{
    return &v->plan->jobs->v[lt_plan_job_of(v->plan, seq)];
}

/* q is done (its last token came, it was cancelled, or it was refused):
 * on the list that finish_done writes. false when out of memory. */
static bool push_done(struct vrun *v, struct vq *q)
{
    if (v->ndone == v->done_cap) {
        size_t nc = v->done_cap ? v->done_cap * 2 : 64;
        struct vq **d = realloc(v->done, nc * sizeof *d);
        if (!d)
            return false;
        v->done = d;
        v->done_cap = nc;
    }
    v->done[v->ndone++] = q;
    return true;
}

/* A token array for q's out tokens, from the pool when it has one. */
static bool take_tok(struct vrun *v, struct vq *q)
{
    struct tokbuf b = {0};
    if (v->npool)
        b = v->pool[--v->npool];
    if (b.cap < q->out) {
        int64_t *np = realloc(b.p, (size_t)q->out * sizeof *np);
        if (!np) {
            free(b.p);
            return false;
        }
        b = (struct tokbuf){np, q->out};
    }
    q->tok = b.p;
    q->tokcap = b.cap;
    return true;
}

static void free_vq(struct vq *q)
{
    q->prev->next = q->next;
    q->next->prev = q->prev;
    free(q->tok);
    free(q);
}

/* q's result is written: its token array goes to the pool and the struct
 * is freed, unless a deadline in the cancel heap still points at it. */
static void drop_vq(struct vrun *v, struct vq *q)
{
    if (q->tok) {
        if (v->npool == v->pool_cap) {
            size_t nc = v->pool_cap ? v->pool_cap * 2 : 16;
            struct tokbuf *np = realloc(v->pool, nc * sizeof *np);
            if (np) {
                v->pool = np;
                v->pool_cap = nc;
            }
        }
        if (v->npool < v->pool_cap) {
            v->pool[v->npool++] = (struct tokbuf){q->tok, q->tokcap};
            q->tok = NULL;
        }
    }
    v->inflight--;
    q->written = true;
    if (!q->in_heap)
        free_vq(q);
}

/* ---- prefix blocks ---- */

/* The sim's chained block hashes for request i: sim block k covers prompt
 * tokens [k*B, (k+1)*B) of the sim's block size B. The live replay seeds
 * the synthesized word at position j with the trace block covering j (or
 * with the session, or with the request alone), so the sim block's content
 * is a function of the trace blocks it overlaps and of k. Past the recorded
 * blocks the text is unique to the request, and so is every later block
 * (the hashes are chained). *nb receives the number of blocks put in
 * v->blockbuf (0: no prefix cache). Returns 0 or LT_ENOMEM. */
static int make_blocks(struct vrun *v, const struct vq *q, uint32_t *nb, struct lt_err *err)
{
    const struct lt_plan_job *r = job_of(v, q->seq);
    uint32_t sb = v->p->block_tokens;
    *nb = 0;
    if (!v->p->cache_blocks || !sb)
        return 0;
    uint32_t tb = v->vr->block_tokens ? v->vr->block_tokens : 512;
    uint32_t n = q->in / sb;
    if (!n)
        return 0;
    if (v->blockbuf_cap < n) {
        uint64_t *b = realloc(v->blockbuf, (size_t)n * sizeof *b);
        if (!b)
            return lt_errset(err, LT_ENOMEM, "virtual sim: out of memory");
        v->blockbuf = b;
        v->blockbuf_cap = n;
    }
    uint64_t h = 0x51b0c4a7u;
    bool unique = false;
    for (uint32_t k = 0; k < n; k++) {
        uint64_t c = 0;
        if (!unique && r->n_blocks && r->blocks) {
            uint64_t lo = (uint64_t)k * sb / tb, hi = ((uint64_t)(k + 1) * sb - 1) / tb;
            if (hi >= r->n_blocks) {
                unique = true;
            } else {
                c = lt_mix64(k ^ 0xb10c000000000000ULL);
                for (uint64_t b = lo; b <= hi; b++)
                    c = lt_mix64(c ^ r->blocks[b]);
            }
        } else if (!unique && (r->has & LT_HAS_SESSION)) {
            c = lt_mix64(lt_mix64(r->session ^ 0x5e55) + k);
        } else {
            unique = true;
        }
        if (unique) /* r->index is unique within the trace */
            c = lt_mix64(lt_mix64(r->index ^ 0x1d1d1d) + k);
        h = lt_mix64(h ^ c) + k;
        v->blockbuf[k] = h;
    }
    *nb = n;
    return 0;
}

/* ---- the plan's engine ---- */

/* Its client left at t (ns): the model aborts the sequence, the result
 * is written with the done ones. */
static void cancel_now(struct vrun *v, struct vq *q, int64_t t)
{
    lt_sim_model_cancel(v->ms[q->replica], q->mq);
    q->mq = NULL;
    q->cancelled = true;
    q->cancel_ns = t;
    if (!push_done(v, q))
        v->nomem = 1;
}

/* At send: the record's cancel point, as replay/replay_cancel.c reads it. */
static int arm_cancel(struct vrun *v, struct vq *q)
{
    if (v->vr->no_cancel)
        return 0;
    struct lt_plan_cancel p = lt_plan_job_cancel(v->plan->jobs, job_of(v, q->seq));
    if (p.by == LT_PLAN_CANCEL_NONE)
        return 0;
    if (p.by == LT_PLAN_CANCEL_TOKENS) {
        q->by_tokens = true;
        q->cancel_tokens = p.tokens;
        return 0;
    }
    /* FIRST: the live replay closes at the stream's first event, which the
     * sim sends as the stream opens: at once, here. */
    int64_t after_us = p.by == LT_PLAN_CANCEL_TIME ? p.after_us : 0;
    struct vcancel c = {.at_ns = v->now_ns + after_us * 1000, .seq = q->seq, .q = q};
    if (lt_heap_push(&v->cancels, &c) < 0)
        return LT_ENOMEM;
    q->in_heap = true;
    return 0;
}

/* The next deadline of a request still in the model (stale ones, of
 * requests that ended first, are dropped); INT64_MAX: none. */
static int64_t next_cancel(struct vrun *v)
{
    struct vcancel *c;
    while ((c = lt_heap_top(&v->cancels)) && !c->q->mq) {
        struct vq *q = c->q;
        lt_heap_pop(&v->cancels, NULL);
        q->in_heap = false;
        if (q->written)
            free_vq(q);
    }
    return c ? c->at_ns : INT64_MAX;
}

static bool vcancel_less(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    const struct vcancel *x = a, *y = b;
    return x->at_ns != y->at_ns ? x->at_ns < y->at_ns : x->seq < y->seq;
}

/* The media tokens of job as the live sim counts those the live replay
 * sends (docs/multimodal.md), which its vision (and audio) encoder is
 * charged for: each image of its recorded size (LT_MEDIA_SIDE_UNKNOWN
 * when none) by the profile's rule (lt_sim_image_tokens), each audio clip
 * of its duration in whole ms (as replay makes its WAV) at
 * audio_tokens_per_s, rounded up, each video of the shape replay makes
 * it in (lt_media_video_shape) by lt_sim_video_tokens. *in, the recorded
 * prompt, becomes the prompt the live sim counts: its text (the recorded
 * prompt less the recorded media tokens, at least 1) plus these. */
static uint32_t media_tokens(const struct vrun *v, const struct lt_plan_job *job, uint32_t *in)
{
    const struct lt_media *parts;
    const struct lt_plan_media_rec *rec = lt_plan_job_media(v->plan->jobs, job, &parts);
    if (!rec || rec->bad)
        return 0;
    uint64_t recorded = 0, counted = 0;
    for (uint32_t i = 0; i < rec->n; i++) {
        const struct lt_media *p = &parts[i];
        if (p->kind == LT_MEDIA_IMAGE) {
            counted += lt_sim_image_tokens(v->p, p->w ? p->w : LT_MEDIA_SIDE_UNKNOWN,
                                           p->h ? p->h : LT_MEDIA_SIDE_UNKNOWN);
        } else if (p->kind == LT_MEDIA_AUDIO) {
            int64_t ms = p->dur > 0 ? (p->dur + 999) / 1000 : 1000;
            counted += (uint64_t)ceil((double)ms / 1e3 * v->p->audio_tokens_per_s);
        } else if (p->kind == LT_MEDIA_VIDEO) {
            uint32_t w, h, frames;
            int64_t us;
            lt_media_video_shape(p, &w, &h, &frames, &us);
            counted += lt_sim_video_tokens(v->p, w, h, frames);
        } else {
            continue;
        }
        recorded += p->tokens;
    }
    uint64_t text = *in > recorded ? *in - recorded : 1;
    *in = text + counted > UINT32_MAX ? UINT32_MAX : (uint32_t)(text + counted);
    return counted > UINT32_MAX ? UINT32_MAX : (uint32_t)counted;
}

/* The plan's send: seq goes into the model now. */
static int send_seq(void *ud, size_t i, struct lt_err *err)
{
    struct vrun *v = ud;
    struct vq *q = calloc(1, sizeof *q);
    if (!q)
        return lt_errset(err, LT_ENOMEM, "virtual sim: out of memory");
    q->seq = i;
    /* Warm-up is the run's first sends, not a place in the trace (a
     * --window starts mid-trace); the virtual run has no retries. */
    q->warm = v->sent++ < v->vr->warmup;
    q->next = v->live.next;
    q->prev = &v->live;
    q->next->prev = q;
    v->live.next = q;
    v->inflight++;
    uint32_t def = v->vr->default_out ? v->vr->default_out : LT_PLAN_DEFAULT_OUT;
    lt_plan_job_lengths(job_of(v, i), def, &q->in, &q->out);
    uint32_t media = media_tokens(v, job_of(v, i), &q->in);
    if (!q->in)
        q->in = 1;
    if (!q->out)
        q->out = 1;
    q->sent_us = v->now_ns / 1000;
    if (v->first_sent_us < 0)
        v->first_sent_us = q->sent_us;
    v->last_sent_us = q->sent_us;
    if ((uint64_t)q->in + q->out > v->p->max_model_len) {
        /* The sim answers a context overflow with a plain 400 at once. */
        q->rejected = true;
        if (!push_done(v, q))
            return lt_errset(err, LT_ENOMEM, "virtual sim: out of memory");
        return 0;
    }
    uint32_t nb;
    int rc = make_blocks(v, q, &nb, err);
    if (rc < 0)
        return rc;
    struct lt_sim_req sr = {
        .prompt_tokens = q->in,
        .out_tokens = q->out,
        .blocks = nb ? v->blockbuf : NULL,
        .nblocks = nb,
        .user = q,
        .image_tokens = media, /* the encoders' share, as the live sim's */
    };
    if (v->nm > 1) {
        int r = v->vr->route->pick(v->vr->route->ud, i, job_of(v, i));
        q->replica = r >= 0 && (uint32_t)r < v->nm ? r : 0;
    }
    if (!(q->mq = lt_sim_model_add(v->ms[q->replica], v->now_ns, &sr, err)))
        return err ? err->code : LT_ENOMEM;
    return arm_cancel(v, q);
}

static void on_emit(void *ud, const struct lt_sim_emit *e)
{
    struct vrun *v = ud;
    struct vq *q = e->user;
    /* Token times are kept from the first token on, not from the send: an
     * overloaded run queues many requests, and only the running ones (at
     * most max_running) need them. */
    if (!q->tok && !take_tok(v, q)) {
        v->nomem = q->out;
        return;
    }
    if (q->ntok < q->out)
        q->tok[q->ntok++] = e->t;
    else
        v->oom = true; /* the model emitted more than asked: cannot happen */
    q->cached = e->cached_tokens;
    if (e->index == 0)
        q->admitted_ns = e->admitted;
    if (e->last) {
        q->mq = NULL; /* the model frees it */
        if (!push_done(v, q))
            v->nomem = 1;
    } else if (q->by_tokens && q->ntok >= q->cancel_tokens) {
        cancel_now(v, q, e->t);
    }
}

/* A llama.cpp twin's (slot_runs) account of a whole request, as
 * llama-server's timings would give it and as the live sim's llamacpp
 * dialect sends it (sim_server.c): its prefill from its admission to its
 * first token, its decode from its first token to its last, the prompt
 * tokens prefilled and reused. Beside the live run's, compare sets the
 * server's own speed against the twin's on the same requests
 * (docs/compare.md, "Twin"). */
static void srv_timings(struct lt_result_keys *k, const struct vq *q, const struct lt_result *res)
{
    int64_t admitted_us = q->admitted_ns / 1000;
    uint32_t cached = q->cached < q->in ? q->cached : q->in;
    k->has_srv_pf = k->has_srv_pf_n = k->has_srv_dec = k->has_srv_dec_n = k->has_srv_cache = true;
    k->srv_pf_us = res->first_token > admitted_us ? (uint64_t)(res->first_token - admitted_us) : 0;
    k->srv_dec_us = res->end > res->first_token ? (uint64_t)(res->end - res->first_token) : 0;
    k->srv_pf_n = q->in - cached;
    k->srv_dec_n = q->ntok;
    k->srv_cache = cached;
}

/* Write seq's result res, with the keys the live replay writes beside it
 * (one recorder, traces/trace_results.h): with chunks, "ctok": "one" (a
 * chunk's tokens counted one a chunk, not read from per-chunk usage) and
 * "thin" when the timeline had to be thinned to fit the format (n_chunks:
 * the chunks in v->chunks, thinned here; 0: none); the trace record's
 * media parts, for analyze's modality split (the record's figures, as
 * live writes them); and a fleet's replica (q NULL: never sent, none). */
static int put(struct vrun *v, size_t seq, const struct vq *q, struct lt_result *res,
               uint32_t n_chunks, struct lt_err *err)
{
    struct lt_result_keys k = {0};
    if (n_chunks) {
        res->n_chunks = lt_chunks_thin(v->chunks, n_chunks, &k.thin);
        k.ctok = LT_CTOK_ONE;
    }
    const struct lt_plan_media_rec *mr =
        v->plan->jobs->n_media ? lt_plan_job_media(v->plan->jobs, job_of(v, seq), &k.media) : NULL;
    k.n_media = mr ? mr->n : 0;
    if (q && v->nm > 1) {
        k.has_replica = true;
        k.replica = (uint32_t)q->replica;
    }
    if (q && v->p->slot_runs && res->status == 200 && !res->cancelled && q->ntok)
        srv_timings(&k, q, res);
    if (lt_results_keys(&k, &v->keys, &res->extra) < 0)
        return lt_errset(err, LT_ENOMEM, "virtual sim: out of memory");
    int rc = lt_writer_put_result(v->w, res, err);
    const struct lt_engine_sink *sk = v->vr->sink;
    if (rc == 0 && sk && sk->on_result)
        sk->on_result(sk->ud, res);
    return rc;
}

/* A cancelled request: what its client had until it left, as the live
 * replay records it (no usage came: counted from the chunks). */
static int put_cancelled(struct vrun *v, const struct vq *q, struct lt_result *res,
                         struct lt_err *err)
{
    res->cancelled = true;
    res->status = 200;
    res->end = q->cancel_ns / 1000;
    if (q->ntok) {
        res->has |= LT_RHAS_FIRST_TOKEN | LT_RHAS_FIRST_CONTENT | LT_RHAS_CHUNKS | LT_RHAS_OUT |
                    LT_RHAS_REASONING;
        res->first_token = res->first_content = v->chunks[0].t;
        res->chunks = v->chunks;
        res->out = q->ntok;
        res->count = "chunks";
    }
    int rc = put(v, q->seq, q, res, q->ntok, err);
    if (rc < 0) /* not recorded: not counted */
        return rc;
    v->st.requests++;
    v->st.cancelled++;
    v->st.out_tokens += q->ntok;
    v->st.cached_tokens += q->cached;
    return 0;
}

static int put_result(struct vrun *v, const struct vq *q, struct lt_err *err)
{
    size_t i = q->seq;
    struct lt_result res = {0};
    res.run = v->rec_run;
    res.index = job_of(v, i)->index;
    res.sched = v->plan->offs[i];
    res.sent = q->sent_us;
    res.first_byte = q->sent_us;
    res.has = LT_RHAS_SENT | LT_RHAS_FIRST_BYTE | LT_RHAS_END | LT_RHAS_STATUS | LT_RHAS_WANT_IN |
              LT_RHAS_WANT_OUT;
    res.want_in = q->in;
    res.want_out = q->out;
    res.warmup = q->warm;
    if (q->rejected) {
        res.status = 400;
        res.err = "http";
        res.end = q->sent_us;
        int rc = put(v, i, q, &res, 0, err);
        v->st.requests += rc == 0;
        return rc;
    }
    if (v->chunks_cap < q->ntok) {
        struct lt_chunk *c = realloc(v->chunks, (size_t)q->ntok * sizeof *c);
        if (!c)
            return lt_errset(err, LT_ENOMEM, "virtual sim: out of memory");
        v->chunks = c;
        v->chunks_cap = q->ntok;
    }
    for (uint32_t k = 0; k < q->ntok; k++)
        v->chunks[k] = (struct lt_chunk){.t = q->tok[k] / 1000, .tokens = 1};
    if (q->cancelled)
        return put_cancelled(v, q, &res, err);
    res.has |= LT_RHAS_FIRST_TOKEN | LT_RHAS_FIRST_CONTENT | LT_RHAS_CHUNKS | LT_RHAS_IN |
               LT_RHAS_OUT | LT_RHAS_REASONING | LT_RHAS_CACHED;
    res.first_token = res.first_content = v->chunks[0].t;
    res.end = v->chunks[q->ntok - 1].t;
    res.chunks = v->chunks;
    res.in = q->in;
    res.out = q->ntok;
    res.reasoning = 0;
    res.cached = q->cached;
    res.status = 200;
    res.finish = "length";
    res.count = "usage";
    int rc = put(v, i, q, &res, q->ntok, err);
    if (rc < 0) /* not recorded: not counted */
        return rc;
    v->st.requests++;
    v->st.ok++;
    v->st.out_tokens += q->ntok;
    v->st.cached_tokens += q->cached;
    return 0;
}

/* Write the requests that finished now and tell the plan, which may send
 * what waited on them (an immediate 400 then joins the list); then let the
 * plan fill what it may at this time. */
static int finish_done(struct vrun *v, struct lt_err *err)
{
    int rc = 0;
    size_t k = 0;
    for (;;) {
        for (; k < v->ndone; k++) {
            struct vq *q = v->done[k];
            size_t i = q->seq;
            rc = put_result(v, q, err);
            if (v->nm > 1)
                v->vr->route->done(v->vr->route->ud, q->replica);
            int64_t end_us = q->cancelled ? q->cancel_ns / 1000
                             : q->ntok    ? q->tok[q->ntok - 1] / 1000
                                          : q->sent_us;
            drop_vq(v, q);
            if (rc < 0)
                goto out;
            LT_TRY(lt_plan_finish(v->plan, i, end_us, err));
        }
        LT_TRY(lt_plan_pump(v->plan, v->now_ns / 1000, err));
        if (k == v->ndone)
            break;
    }
    v->ndone = 0;
out:
    return rc;
}

/* A scrape sample of the model's values now, as the live sim's /metrics
 * would give them (sim_metrics.c; no latency histograms): what a live
 * replay records, on the same clock. */
static int put_sample1(struct vrun *v, uint32_t mi, struct lt_err *err)
{
    struct lt_sim_model_stats ms;
    lt_sim_model_stats(v->ms[mi], &ms);
    double prompt = (double)(ms.prefill_tokens + ms.cached_tokens);
    struct lt_scrape_val val[] = {
        {lt_prom_map_canon_name(LT_PM_RUNNING), ms.running},
        {lt_prom_map_canon_name(LT_PM_WAITING), ms.queued},
        {lt_prom_map_canon_name(LT_PM_KV_USAGE),
         v->p->kv_tokens ? (double)ms.kv_used / (double)v->p->kv_tokens : 0},
        {lt_prom_map_canon_name(LT_PM_PREEMPTIONS), (double)ms.preemptions},
        {lt_prom_map_canon_name(LT_PM_PROMPT_TOKENS), prompt},
        {lt_prom_map_canon_name(LT_PM_GEN_TOKENS), (double)ms.tokens},
        {lt_prom_map_canon_name(LT_PM_PREFIX_QUERIES), prompt},
        {lt_prom_map_canon_name(LT_PM_PREFIX_HITS), (double)ms.cached_tokens},
    };
    char ep[48] = "sim:virtual";
    if (v->nm > 1)
        snprintf(ep, sizeof ep, "sim:virtual:%u/metrics", (unsigned)mi);
    struct lt_scrape sc = {
        .run = v->rec_run,
        .t = v->now_ns / 1000,
        .ep = ep,
        .server = "sim",
        .v = val,
        .nv = sizeof val / sizeof val[0],
    };
    return lt_writer_put_scrape(v->w, &sc, err);
}

static int put_sample(struct vrun *v, struct lt_err *err)
{
    for (uint32_t i = 0; i < v->nm; i++) {
        int rc = put_sample1(v, i, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The earliest next step of the instances; INT64_MAX: all idle. */
static int64_t next_step_of(const struct vrun *v)
{
    int64_t t = INT64_MAX;
    for (uint32_t i = 0; i < v->nm; i++) {
        int64_t x = lt_sim_model_next(v->ms[i]);
        if (x < t)
            t = x;
    }
    return t;
}

static int loop(struct vrun *v, struct lt_err *err)
{
    int rc = 0;
    v->now_ns = 0;
    LT_TRY(finish_done(v, err));
    for (;;) {
        /* a stop is asked for at the first round (one asked before the
         * run is seen before anything is sent) and every 256 after: a few
         * µs of model work */
        if (v->vr->stopped && (v->polls++ & 255) == 0 &&
            (v->st.stopped_by = v->vr->stopped(v->vr->stop_ud)) != NULL)
            break;
        int64_t next_step = next_step_of(v);
        int64_t due_us = lt_plan_next_due(v->plan);
        int64_t next_due = due_us == INT64_MAX ? INT64_MAX : due_us * 1000;
        int64_t next_cut = next_cancel(v);
        if (next_step == INT64_MAX && next_due == INT64_MAX)
            break;
        /* A client leaves after the step that ends at the same time: it
         * saw that step's token. */
        if (next_cut < next_step && next_cut < next_due && next_cut <= v->next_sample_ns) {
            v->now_ns = next_cut;
            struct vcancel c;
            while (next_cancel(v) <= v->now_ns && lt_heap_pop(&v->cancels, &c)) {
                c.q->in_heap = false;
                cancel_now(v, c.q, v->now_ns);
            }
            if (v->nomem)
                return lt_errset(err, LT_ENOMEM, "virtual sim: out of memory");
            LT_TRY(finish_done(v, err));
            continue;
        }
        if (v->next_sample_ns < next_step && v->next_sample_ns < next_due) {
            v->now_ns = v->next_sample_ns;
            v->next_sample_ns += v->vr->metrics_interval_us * 1000;
            LT_TRY(put_sample(v, err));
            continue;
        }
        if (next_step <= next_due) {
            v->now_ns = next_step;
            /* every instance due now, in index order (runs repeat exactly) */
            for (uint32_t mi = 0; mi < v->nm; mi++)
                if (lt_sim_model_next(v->ms[mi]) <= v->now_ns)
                    lt_sim_model_advance(v->ms[mi], v->now_ns, on_emit, v);
            if (v->nomem)
                return lt_errset(err, LT_ENOMEM,
                                 "virtual sim: out of memory (%u output tokens, %zu requests in "
                                 "the model)",
                                 v->nomem, v->inflight);
            if (v->oom)
                return lt_errset(err, LT_EINVAL, "virtual sim: the model emitted too many tokens");
        } else {
            v->now_ns = next_due;
        }
        LT_TRY(finish_done(v, err));
    }
    v->st.model_end_us = v->now_ns / 1000;
    if (v->vr->metrics_interval_us > 0)
        LT_TRY(put_sample(v, err)); /* the last one, after the last request */
out:
    return rc;
}

/* A stop: every request in the model is recorded as aborted now, with
 * its first token's time when it had one (as the live replay records one
 * in flight), every seq
 * not sent as never sent, and the check record says who stopped the run,
 * when, and how many were never sent (analyze keeps them out of the
 * errors). */
static int stop_all(struct vrun *v, struct lt_err *err)
{
    int rc = 0;
    int64_t now_us = v->now_ns / 1000;
    for (struct vq *q = v->live.next; q != &v->live; q = q->next) {
        if (q->written || !q->mq)
            continue;
        struct lt_result res = {0};
        res.run = v->rec_run;
        res.index = job_of(v, q->seq)->index;
        res.sched = v->plan->offs[q->seq];
        res.sent = res.first_byte = q->sent_us;
        res.end = now_us;
        res.has =
            LT_RHAS_SENT | LT_RHAS_FIRST_BYTE | LT_RHAS_END | LT_RHAS_WANT_IN | LT_RHAS_WANT_OUT;
        res.want_in = q->in;
        res.want_out = q->out;
        res.warmup = q->warm;
        res.err = "aborted";
        if (q->ntok) {
            res.has |= LT_RHAS_FIRST_TOKEN | LT_RHAS_FIRST_CONTENT;
            res.first_token = res.first_content = q->tok[0] / 1000;
        }
        LT_TRY(put(v, q->seq, q, &res, 0, err));
        v->st.requests++;
        v->st.aborted++;
        v->out_sent += q->ntok;
    }
    for (size_t k = v->plan->low; k < v->plan->total; k++) {
        LT_TRY(lt_plan_hold(v->plan, k, err));
        if (v->plan->state[k] == LT_PLAN_DONE)
            continue;
        bool was_sent = v->plan->state[k] == LT_PLAN_SENT;
        lt_plan_abort(v->plan, k, now_us);
        if (was_sent) /* recorded above as aborted */
            continue;
        struct lt_result res = {0};
        res.run = v->rec_run;
        res.index = job_of(v, k)->index;
        res.sched = v->plan->offs[k];
        res.err = "unsent";
        LT_TRY(put(v, k, NULL, &res, 0, err));
        v->st.requests++;
        v->st.unsent++;
    }
    v->st.stopped_at_us = now_us;
    v->st.stopped_run = v->run;
    v->st.model_end_us = now_us;
    uint64_t sent = v->sent;
    double span = v->first_sent_us >= 0 ? (double)(v->last_sent_us - v->first_sent_us) / 1e6 : 0;
    /* Virtual sends leave exactly at their times: the delivered load is the
     * asked one, and no client CPU is spent on the wire. */
    double rate = span > 0 && sent > 1 && v->plan->o.mode != LT_PLAN_CONCURRENCY
                      ? (double)(sent - 1) / span
                      : 0;
    struct lt_check k = {
        .run = v->rec_run,
        .requests = v->st.requests,
        .sent = sent,
        .out_tokens = v->st.out_tokens + v->out_sent,
        .rate_asked = rate,
        .rate_got = rate,
        .span_s = span,
        .wall_s = (double)now_us / 1e6,
        .unsent = v->st.unsent,
        .stopped_at_s = (double)now_us / 1e6,
        .stopped_by = v->st.stopped_by,
    };
    LT_TRY(lt_writer_put_check(v->w, &k, err));
out:
    return rc;
}

int lt_sim_virtual_run(const struct lt_sim_profile *p, struct lt_plan *plan, uint32_t run,
                       uint32_t level, const struct lt_sim_vrun *vr, struct lt_writer *w,
                       struct lt_sim_vstats *st, struct lt_err *err)
{
    int rc = 0;
    struct vrun v = {.p = p,
                     .plan = plan,
                     .vr = vr,
                     .run = run,
                     .rec_run = run + (vr->sink ? vr->sink->run_base : 0),
                     .w = w,
                     .first_sent_us = -1,
                     .last_sent_us = -1};
    v.live.next = v.live.prev = &v.live;
    lt_buf_init(&v.keys, 1 << 12);
    v.next_sample_ns = vr->metrics_interval_us > 0 ? 0 : INT64_MAX;
    lt_heap_init(&v.cancels, sizeof(struct vcancel), vcancel_less, NULL, NULL);
    const struct lt_plan_ops ops = {.send = send_seq, .ud = &v};
    LT_TRY(lt_plan_start(plan, run, level, &ops, err));
    v.nm = vr->route && vr->route->n > 1 ? vr->route->n : 1;
    if (!(v.ms = calloc(v.nm, sizeof *v.ms))) {
        rc = lt_errset(err, LT_ENOMEM, "virtual sim: out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < v.nm; i++)
        if (!(v.ms[i] = lt_sim_model_new(p, err))) {
            rc = err ? err->code : LT_ENOMEM;
            goto out;
        }
    /* A fleet's run record: its instances and the route, as live. */
    char(*labs)[32] = v.nm > 1 ? calloc(v.nm, sizeof *labs) : NULL;
    const char **labp = v.nm > 1 ? calloc(v.nm, sizeof *labp) : NULL;
    if (v.nm > 1 && (!labs || !labp)) {
        free(labs);
        free(labp);
        rc = lt_errset(err, LT_ENOMEM, "virtual sim: out of memory");
        goto out;
    }
    for (uint32_t i = 0; v.nm > 1 && i < v.nm; i++) {
        snprintf(labs[i], sizeof labs[i], "sim:virtual:%u", (unsigned)i);
        labp[i] = labs[i];
    }
    struct lt_plan_desc d;
    lt_plan_describe(plan, &d);
    struct lt_run_desc rd = {
        .run = {.id = v.rec_run,
                .mode = d.mode,
                .concurrency = d.concurrency,
                .rate = d.rate,
                .speed = d.speed,
                .target = vr->target ? vr->target : "sim:virtual",
                .model = vr->model ? vr->model : p->name,
                .warmup = (uint32_t)(vr->warmup < UINT32_MAX ? vr->warmup : UINT32_MAX)},
        .replicas = labp,
        .n_replicas = v.nm > 1 ? v.nm : 0,
        .route = v.nm > 1 ? vr->route->name : NULL,
    };
    if (vr->sink && vr->sink->fill_run)
        vr->sink->fill_run(vr->sink->ud, &rd.run);
    rc = lt_results_put_run(w, &rd, err);
    if (rc == 0 && vr->sink && vr->sink->on_run)
        vr->sink->on_run(vr->sink->ud, &rd.run);
    free(labs);
    free(labp);
    if (rc < 0)
        goto out;
    LT_TRY(loop(&v, err));
    if (v.st.stopped_by)
        LT_TRY(stop_all(&v, err));
    /* Every seq ends DONE (a closed loop cut by its time limit drops what
     * it never sent, as the live replay does); anything else is a bug. */
    if (!lt_plan_over(plan)) {
        rc = lt_errset(err, LT_EINVAL, "virtual sim: %zu of %zu requests never ran",
                       plan->total - plan->done_n, plan->total);
        goto out;
    }
    for (uint32_t i = 0; i < v.nm; i++) {
        struct lt_sim_model_stats ms;
        lt_sim_model_stats(v.ms[i], &ms);
        v.st.steps += ms.steps;
    }
out:
    if (st)
        *st = v.st;
    /* Every struct vq still held (a failed run's, or one whose deadline
     * outlived it), then the pool. */
    while (v.live.next != &v.live)
        free_vq(v.live.next);
    for (uint32_t i = 0; v.ms && i < v.nm; i++)
        lt_sim_model_free(v.ms[i]);
    free(v.ms);
    lt_heap_release(&v.cancels);
    for (size_t k = 0; k < v.npool; k++)
        free(v.pool[k].p);
    free(v.pool);
    free(v.done);
    free(v.blockbuf);
    free(v.chunks);
    lt_buf_release(&v.keys);
    return rc;
}

/* ---- the virtual engine (plan/plan_engine.h) ---- */

struct virt_engine {
    struct lt_engine e; /* first: the interface's view */
    struct lt_sim_profile prof;
    const struct lt_plan_jobs *jobs;
    struct lt_sim_vreplay o;
    volatile sig_atomic_t stop; /* lt_engine_stop: the signal, or -1 (the caller) */
    struct lt_sim_vstats tot;
    /* lt_sim_virtual_replay: the engine opens o.out_path itself, once the
     * plan has been made, so that options the plan refuses leave no file
     * (and an earlier file of that name as it was); closed by the caller */
    bool own_file;
    struct lt_writer *own_w;
};

static struct virt_engine *ve_of(const struct lt_engine *e)
{
    return (struct virt_engine *)(uintptr_t)e;
}

/* The run's stop hook: the engine's own stop, then the caller's. */
static const char *ve_polled(void *ud)
{
    const struct virt_engine *ve = ud;
    int sig = ve->stop;
    if (sig)
        return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "caller";
    return ve->o.stopped ? ve->o.stopped(ve->o.stop_ud) : NULL;
}

static void add_stats(struct lt_sim_vstats *tot, const struct lt_sim_vstats *st)
{
    tot->requests += st->requests;
    tot->ok += st->ok;
    tot->cancelled += st->cancelled;
    tot->out_tokens += st->out_tokens;
    tot->steps += st->steps;
    tot->cached_tokens += st->cached_tokens;
    tot->model_end_us += st->model_end_us;
    if (st->stopped_by) { /* the later runs never start, as live */
        tot->stopped_by = st->stopped_by;
        tot->stopped_at_us = st->stopped_at_us;
        tot->stopped_run = st->stopped_run;
        tot->aborted = st->aborted;
        tot->unsent = st->unsent;
    }
}

static int ve_run(struct lt_engine *e, const struct lt_engine_sink *s, struct lt_err *err)
{
    struct virt_engine *ve = ve_of(e);
    const struct lt_sim_vreplay *o = &ve->o;
    struct lt_sim_vstats *tot = &ve->tot;
    struct lt_plan plan;
    *tot = (struct lt_sim_vstats){0};
    int rc = lt_plan_init(&plan, ve->jobs, &o->plan, err);
    if (rc < 0)
        return rc;
    tot->sampled = plan.sampled;
    tot->sample = plan.sample;
    struct lt_engine_sink own;
    if (ve->own_file) {
        const char *mk[] = {"trace", "target", "profile"};
        const char *mv[] = {o->trace_path, "sim:virtual", ve->prof.name};
        ve->own_w = lt_results_file(o->out_path, mk, mv, 3, ve->jobs->block_tokens, NULL, err);
        if (!ve->own_w) {
            lt_plan_release(&plan);
            return err ? err->code : LT_EIO;
        }
        tot->opened = true;
        own = *s;
        own.w = ve->own_w;
        s = &own;
    }
    const struct lt_sim_vrun vr = {
        .warmup = o->warmup,
        .default_out = o->default_out,
        .block_tokens = ve->jobs->block_tokens ? ve->jobs->block_tokens : LT_DEFAULT_BLOCK_TOKENS,
        .metrics_interval_us = o->metrics_interval_us,
        .no_cancel = o->no_cancel,
        .stopped = ve_polled,
        .stop_ud = ve,
        .route = o->route,
        .sink = s,
    };
    uint32_t runs = lt_plan_runs(&o->plan, o->n_levels);
    for (uint32_t r = 0; r < runs && rc == 0 && !tot->stopped_by; r++) {
        uint32_t level = o->plan.mode == LT_PLAN_CONCURRENCY ? o->levels[r] : 0;
        struct lt_sim_vstats st;
        rc = lt_sim_virtual_run(&ve->prof, &plan, r, level, &vr, s->w, &st, err);
        add_stats(tot, &st);
    }
    lt_plan_release(&plan);
    /* What is on the file is known only once the last frame is out. */
    struct lt_err e2 = {0};
    int frc = lt_writer_flush(s->w, rc < 0 ? &e2 : err);
    tot->write_failed = lt_writer_failed(s->w);
    lt_writer_on_disk(s->w, &tot->on_disk);
    return rc < 0 ? rc : frc;
}

static void ve_stop(struct lt_engine *e, int sig)
{
    ve_of(e)->stop = sig ? sig : -1;
}

static const char *ve_stopped(const struct lt_engine *e)
{
    return ve_of(e)->tot.stopped_by;
}

static void ve_release(struct lt_engine *e)
{
    (void)e; /* the engine holds nothing of its own: the jobs are the caller's */
}

static const struct lt_engine_ops virtual_ops = {
    .name = "virtual",
    .run = ve_run,
    .stop = ve_stop,
    .stopped = ve_stopped,
    .release = ve_release,
};

struct lt_engine *lt_sim_engine_for(const struct lt_sim_profile *p, const struct lt_plan_jobs *jobs,
                                    const struct lt_sim_vreplay *o, struct lt_err *err)
{
    struct virt_engine *ve = (struct virt_engine *)lt_engine_new(&virtual_ops, sizeof *ve);
    if (!ve) {
        lt_errset(err, LT_ENOMEM, "virtual sim: out of memory");
        return NULL;
    }
    ve->prof = *p;
    ve->jobs = jobs;
    ve->o = *o;
    return &ve->e;
}

const struct lt_sim_vstats *lt_sim_engine_stats(const struct lt_engine *e)
{
    return e && e->ops == &virtual_ops ? &ve_of(e)->tot : NULL;
}

int lt_sim_virtual_replay(const struct lt_sim_profile *p, const struct lt_plan_jobs *jobs,
                          const struct lt_sim_vreplay *o, struct lt_sim_vstats *tot,
                          struct lt_err *err)
{
    *tot = (struct lt_sim_vstats){0};
    struct lt_engine *e = lt_sim_engine_for(p, jobs, o, err);
    if (!e)
        return err ? err->code : LT_ENOMEM;
    struct virt_engine *ve = ve_of(e);
    ve->own_file = true;
    int rc = lt_engine_run(e, &(struct lt_engine_sink){0}, err);
    *tot = ve->tot;
    int crc = 0;
    if (ve->own_w) {
        struct lt_err e2 = {0};
        crc = lt_writer_close(ve->own_w, rc < 0 ? &e2 : err);
    }
    lt_engine_free(e);
    return rc < 0 ? rc : crc;
}

/*
 * The virtual-time driver (see sim_virtual.h): two event sources, the
 * requests coming due (a min-heap of due times, so a session's later turn
 * can be released when its previous turn ends) and the model's step ends
 * (lt_sim_model_next). Whichever is earlier happens next; on a tie the
 * step ends first, so a request due exactly at a step boundary waits for
 * the next step, as it would on the live server. A slot-limited run (a
 * closed loop, or open loop with a cap) keeps a FIFO of requests waiting
 * for a slot, served when a request finishes.
 *
 * Request states:
 *
 *   HELD (waiting for the previous turn) --prev ends--> DUE (in the heap)
 *   DUE --due time, slot free--> RUNNING --last token--> DONE (result written)
 *   DUE --due time, no slot--> WAITING (FIFO) --a slot frees--> RUNNING
 *
 * Memory: a request's token times are kept only while it runs.
 */
#include "sim/sim_virtual.h"

#include "sim/sim_model.h"
#include "traces/lt_rng.h"
#include "traces/lt_time.h"

#include <stdlib.h>
#include <string.h>

enum vstate { V_HELD, V_DUE, V_WAITING, V_RUNNING, V_DONE };

struct vq {
    int64_t sched_us, sent_us;
    int64_t *tok; /* emission time of each token, ns */
    uint32_t ntok;
    uint32_t cached;
    int64_t next_turn; /* request released when this one ends, or -1 */
    uint8_t state;
};

struct heap_item {
    int64_t at_us;
    size_t idx;
};

struct vrun {
    const struct lt_sim_profile *p;
    const struct lt_sim_vreq *reqs;
    const struct lt_sim_vrun *run;
    size_t n;
    struct vq *q;
    struct lt_sim_model *m;
    struct lt_writer *w;
    struct heap_item *heap;
    size_t heap_len;
    size_t *fifo; /* ring of requests waiting for a slot */
    size_t fifo_head, fifo_len;
    size_t *done; /* requests whose last token came in this step */
    size_t ndone;
    uint32_t cap; /* 0 = no limit on requests in flight */
    uint64_t inflight;
    uint64_t *blockbuf;
    size_t blockbuf_cap;
    struct lt_chunk *chunks;
    size_t chunks_cap;
    bool oom; /* an emit callback could not record (not expected: arrays are presized) */
    struct lt_sim_vstats st;
};

/* ---- the due-time heap (ties in array order, so equal times keep the send order) ---- */

static bool before(const struct heap_item *a, const struct heap_item *b)
{
    return a->at_us < b->at_us || (a->at_us == b->at_us && a->idx < b->idx);
}

static void heap_push(struct vrun *v, int64_t at_us, size_t idx)
{
    size_t i = v->heap_len++;
    v->heap[i] = (struct heap_item){at_us, idx};
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!before(&v->heap[i], &v->heap[up]))
            break;
        struct heap_item t = v->heap[i];
        v->heap[i] = v->heap[up];
        v->heap[up] = t;
        i = up;
    }
}

static struct heap_item heap_pop(struct vrun *v)
{
    struct heap_item top = v->heap[0];
    v->heap[0] = v->heap[--v->heap_len];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, s = i;
        if (l < v->heap_len && before(&v->heap[l], &v->heap[s]))
            s = l;
        if (r < v->heap_len && before(&v->heap[r], &v->heap[s]))
            s = r;
        if (s == i)
            break;
        struct heap_item t = v->heap[i];
        v->heap[i] = v->heap[s];
        v->heap[s] = t;
        i = s;
    }
    return top;
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
static int make_blocks(struct vrun *v, size_t i, uint32_t *nb, struct lt_err *err)
{
    const struct lt_sim_vreq *r = &v->reqs[i];
    uint32_t sb = v->p->block_tokens;
    *nb = 0;
    if (!v->p->cache_blocks || !sb)
        return 0;
    uint32_t tb = v->run->block_tokens ? v->run->block_tokens : 512;
    uint32_t n = r->in / sb;
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
        if (!unique && r->nblocks && r->blocks) {
            uint64_t lo = (uint64_t)k * sb / tb, hi = ((uint64_t)(k + 1) * sb - 1) / tb;
            if (hi >= r->nblocks) {
                unique = true;
            } else {
                c = lt_mix64(k ^ 0xb10c000000000000ULL);
                for (uint64_t b = lo; b <= hi; b++)
                    c = lt_mix64(c ^ r->blocks[b]);
            }
        } else if (!unique && r->has_session) {
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

/* ---- sending and finishing ---- */

static int launch(struct vrun *v, size_t i, int64_t now_ns, struct lt_err *err)
{
    struct vq *q = &v->q[i];
    const struct lt_sim_vreq *r = &v->reqs[i];
    q->sent_us = now_ns / 1000;
    if (v->run->concurrency)
        q->sched_us = q->sent_us; /* a closed loop schedules a request when its slot frees */
    q->state = V_RUNNING;
    v->inflight++;
    uint32_t in = r->in ? r->in : 1, out = r->out ? r->out : 1;
    if ((uint64_t)in + out > v->p->max_model_len) {
        /* The sim answers a context overflow with a plain 400 at once. */
        v->done[v->ndone++] = i;
        return 0;
    }
    q->tok = malloc((size_t)out * sizeof *q->tok);
    if (!q->tok)
        return lt_errset(err, LT_ENOMEM, "virtual sim: out of memory (%u output tokens)", out);
    uint32_t nb;
    int rc = make_blocks(v, i, &nb, err);
    if (rc < 0)
        return rc;
    struct lt_sim_req sr = {
        .prompt_tokens = in,
        .out_tokens = out,
        .blocks = nb ? v->blockbuf : NULL,
        .nblocks = nb,
        .user = (void *)(uintptr_t)i,
    };
    if (!lt_sim_model_add(v->m, now_ns, &sr, err))
        return err ? err->code : LT_ENOMEM;
    return 0;
}

static void on_emit(void *ud, const struct lt_sim_emit *e)
{
    struct vrun *v = ud;
    size_t i = (size_t)(uintptr_t)e->user;
    struct vq *q = &v->q[i];
    uint32_t out = v->reqs[i].out ? v->reqs[i].out : 1;
    if (q->tok && q->ntok < out)
        q->tok[q->ntok++] = e->t;
    else
        v->oom = true; /* the model emitted more than asked: cannot happen */
    q->cached = e->cached_tokens;
    if (e->last)
        v->done[v->ndone++] = i;
}

static int put_result(struct vrun *v, size_t i, struct lt_err *err)
{
    struct vq *q = &v->q[i];
    const struct lt_sim_vreq *r = &v->reqs[i];
    uint32_t in = r->in ? r->in : 1, out = r->out ? r->out : 1;
    struct lt_result res = {0};
    res.run = v->run->id;
    res.index = r->index;
    res.sched = q->sched_us;
    res.sent = q->sent_us;
    res.first_byte = q->sent_us;
    res.has = LT_RHAS_SENT | LT_RHAS_FIRST_BYTE | LT_RHAS_END | LT_RHAS_STATUS | LT_RHAS_WANT_IN |
              LT_RHAS_WANT_OUT;
    res.want_in = in;
    res.want_out = out;
    res.warmup = i < v->run->warmup;
    /* "ctok": "one", as the live replay writes it: a chunk's tokens were
     * counted one per chunk, not read from per-chunk usage. */
    static const uint8_t ctok_one[] = {0xa4, 'c', 't', 'o', 'k', 0xa3, 'o', 'n', 'e'};
    if (!q->tok) {
        res.status = 400;
        res.err = "http";
        res.end = q->sent_us;
        v->st.requests++;
        return lt_writer_put_result(v->w, &res, err);
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
    res.has |= LT_RHAS_FIRST_TOKEN | LT_RHAS_FIRST_CONTENT | LT_RHAS_CHUNKS | LT_RHAS_IN |
               LT_RHAS_OUT | LT_RHAS_REASONING | LT_RHAS_CACHED;
    res.first_token = res.first_content = v->chunks[0].t;
    res.end = v->chunks[q->ntok - 1].t;
    res.n_chunks = q->ntok;
    res.chunks = v->chunks;
    res.in = in;
    res.out = q->ntok;
    res.reasoning = 0;
    res.cached = q->cached;
    res.status = 200;
    res.finish = "length";
    res.count = "usage";
    res.extra = (struct lt_extra){.data = ctok_one, .len = sizeof ctok_one, .n = 1};
    v->st.requests++;
    v->st.ok++;
    v->st.out_tokens += q->ntok;
    v->st.cached_tokens += q->cached;
    return lt_writer_put_result(v->w, &res, err);
}

/* Due time of a session's next turn once the previous one ended. */
static int64_t turn_due(const struct vrun *v, size_t i, int64_t prev_end_us)
{
    const struct lt_sim_vreq *r = &v->reqs[i];
    int64_t t = prev_end_us + (r->think_us > 0 ? r->think_us : 0);
    return t > r->sched_us ? t : r->sched_us;
}

/* Closed loop with a time limit: nothing is sent at or after it. */
static bool may_send(const struct vrun *v, int64_t now_ns)
{
    return !(v->run->concurrency && v->run->duration_us > 0 &&
             now_ns / 1000 >= v->run->duration_us);
}

static int fill_slots(struct vrun *v, int64_t now_ns, struct lt_err *err)
{
    int rc = 0;
    while (v->fifo_len && (!v->cap || v->inflight < v->cap) && may_send(v, now_ns)) {
        size_t i = v->fifo[v->fifo_head];
        v->fifo_head = (v->fifo_head + 1) % v->n;
        v->fifo_len--;
        LT_TRY(launch(v, i, now_ns, err));
    }
out:
    return rc;
}

/* Write the requests that finished at now_ns and release what waited on them. */
static int finish_done(struct vrun *v, int64_t now_ns, struct lt_err *err)
{
    int rc = 0;
    /* v->done can grow while slots are refilled (an immediate 400). */
    for (size_t k = 0; k < v->ndone; k++) {
        size_t i = v->done[k];
        struct vq *q = &v->q[i];
        LT_TRY(put_result(v, i, err));
        int64_t end_us = q->ntok ? q->tok[q->ntok - 1] / 1000 : q->sent_us;
        free(q->tok);
        q->tok = NULL;
        q->state = V_DONE;
        v->inflight--;
        if (q->next_turn >= 0) {
            size_t nx = (size_t)q->next_turn;
            v->q[nx].state = V_DUE;
            v->q[nx].sched_us = turn_due(v, nx, end_us);
            heap_push(v, v->q[nx].sched_us, nx);
        }
        LT_TRY(fill_slots(v, now_ns, err));
    }
    v->ndone = 0;
out:
    return rc;
}

static int due_now(struct vrun *v, size_t i, int64_t now_ns, struct lt_err *err)
{
    if (v->cap && v->inflight >= v->cap) {
        v->fifo[(v->fifo_head + v->fifo_len++) % v->n] = i;
        v->q[i].state = V_WAITING;
        return 0;
    }
    return launch(v, i, now_ns, err);
}

static int loop(struct vrun *v, struct lt_err *err)
{
    int rc = 0;
    int64_t now = 0;
    LT_TRY(fill_slots(v, now, err));
    LT_TRY(finish_done(v, now, err));
    for (;;) {
        int64_t next_step = lt_sim_model_next(v->m);
        int64_t next_due = v->heap_len ? v->heap[0].at_us * 1000 : INT64_MAX;
        if (next_step == INT64_MAX && next_due == INT64_MAX)
            break;
        if (next_step <= next_due) {
            now = next_step;
            lt_sim_model_advance(v->m, now, on_emit, v);
            if (v->oom)
                return lt_errset(err, LT_EINVAL, "virtual sim: the model emitted too many tokens");
            LT_TRY(finish_done(v, now, err));
        } else {
            now = next_due;
            while (v->heap_len && v->heap[0].at_us * 1000 == now) {
                struct heap_item h = heap_pop(v);
                LT_TRY(due_now(v, h.idx, now, err));
            }
            LT_TRY(finish_done(v, now, err));
        }
    }
    v->st.model_end_us = now / 1000;
out:
    return rc;
}

int lt_sim_virtual_run(const struct lt_sim_profile *p, const struct lt_sim_vreq *reqs, size_t n,
                       const struct lt_sim_vrun *run, struct lt_writer *w, struct lt_sim_vstats *st,
                       struct lt_err *err)
{
    int rc = 0;
    struct vrun v = {.p = p, .reqs = reqs, .run = run, .n = n, .w = w};
    v.cap = run->concurrency ? run->concurrency : run->max_concurrency;
    size_t nn = n ? n : 1;
    v.q = calloc(nn, sizeof *v.q);
    v.heap = malloc(nn * sizeof *v.heap);
    v.fifo = malloc(nn * sizeof *v.fifo);
    v.done = malloc(nn * sizeof *v.done);
    if (!v.q || !v.heap || !v.fifo || !v.done) {
        rc = lt_errset(err, LT_ENOMEM, "virtual sim: out of memory for %zu requests", n);
        goto out;
    }
    v.m = lt_sim_model_new(p, err);
    if (!v.m) {
        rc = err ? err->code : LT_ENOMEM;
        goto out;
    }

    char start[32];
    lt_wall_rfc3339(start);
    struct lt_run rr = {
        .id = run->id,
        .mode = run->mode ? run->mode : "trace",
        .concurrency = run->concurrency,
        .rate = run->rate,
        .speed = run->speed,
        .target = run->target ? run->target : "sim:virtual",
        .model = run->model ? run->model : p->name,
        .start = start,
        .version = LT_VERSION,
        .warmup = (uint32_t)(run->warmup < UINT32_MAX ? run->warmup : UINT32_MAX),
    };
    LT_TRY(lt_writer_put_run(w, &rr, err));

    for (size_t i = 0; i < n; i++) {
        v.q[i].next_turn = -1;
        v.q[i].sched_us = reqs[i].sched_us;
    }
    if (run->concurrency) {
        /* Closed loop: the array order is the send order; due times and
         * sessions do not apply. */
        for (size_t i = 0; i < n; i++) {
            v.q[i].state = V_WAITING;
            v.fifo[i] = i;
        }
        v.fifo_len = n;
    } else {
        for (size_t i = 0; i < n; i++) {
            int64_t pv = reqs[i].prev;
            if (pv >= 0 && (size_t)pv < i) {
                v.q[i].state = V_HELD;
                v.q[pv].next_turn = (int64_t)i;
            } else {
                v.q[i].state = V_DUE;
                heap_push(&v, reqs[i].sched_us, i);
            }
        }
    }
    LT_TRY(loop(&v, err));
    /* A closed loop cut by its time limit does not record what it never
     * sent, as the live replay does; anything else left over is a bug. */
    if (!run->concurrency) {
        for (size_t i = 0; i < n; i++)
            if (v.q[i].state != V_DONE) {
                rc = lt_errset(err, LT_EINVAL,
                               "virtual sim: request %zu (trace index %llu) never ran", i,
                               (unsigned long long)reqs[i].index);
                goto out;
            }
    }
    struct lt_sim_model_stats ms;
    lt_sim_model_stats(v.m, &ms);
    v.st.steps = ms.steps;
out:
    if (st)
        *st = v.st;
    if (v.q)
        for (size_t i = 0; i < n; i++)
            free(v.q[i].tok);
    lt_sim_model_free(v.m);
    free(v.q);
    free(v.heap);
    free(v.fifo);
    free(v.done);
    free(v.blockbuf);
    free(v.chunks);
    return rc;
}

/*
 * The continuous-batching engine (see sim_model.h for the model and the
 * request states). It keeps no clock of its own: time only moves when the
 * caller advances it, so the same code serves the real-time HTTP server and
 * virtual-time simulation. The prefix cache is an LRU of block hashes in an
 * open-addressing table, so lookups stay O(1) at any capacity.
 */
#include "sim/sim_model.h"
#include "sim/sim_slots.h"
#include "base/lt_rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum mstate { Q_QUEUED, Q_RUNNING };

struct lt_sim_mreq {
    struct lt_sim_mreq *prev, *next; /* queue links while QUEUED */
    void *user;
    int64_t arrival, admitted;
    int64_t ready; /* the engine sees it from then on (arrival + the front's cost) */
    uint32_t prompt, out_target, out_done;
    uint32_t need; /* tokens to prefill: the prompt, or prompt + output so far after a preemption */
    uint32_t prefilled, cached;
    uint64_t kv;    /* KV tokens this request holds while running */
    uint32_t chunk; /* prompt tokens prefilled in the current step */
    bool decode;    /* emits a token at the end of the current step */
    bool charged;   /* the cached tokens' cost was paid */
    bool cancelled;
    bool entered;   /* admitted once (admitted holds when) */
    bool fresh;     /* admitted for the first time in the step being planned */
    uint32_t image; /* of prompt: image tokens, whose encoding the prefill's first step pays */
    uint32_t slot;  /* slot_runs: its slot while running */
    bool pinned;    /* slot_runs: it must run in slot pin (id_slot) */
    uint32_t pin;
    enum mstate state;
    uint32_t nblocks;
    uint64_t blocks[];
};

/* LRU of block hashes: nodes in a pool, a hash table of node indices. */
struct lru {
    uint32_t cap, used;
    uint32_t mask;   /* table size - 1 */
    uint32_t *table; /* node index + 1, 0 = empty */
    uint64_t *key;
    uint32_t *prev, *next; /* UINT32_MAX = none */
    uint32_t head, tail;   /* head = most recent */
};

/* slot_runs: a slot's last prompt, as the slot choice compares it */
struct slot_cache {
    uint64_t *blocks;
    uint32_t nblocks;
    uint32_t prompt; /* its tokens */
};

struct lt_sim_model {
    struct lt_sim_profile p;
    struct lt_sim_mreq *qhead, *qtail;
    uint32_t nqueued;
    struct lt_sim_mreq **run;
    uint32_t nrun, runcap;
    uint64_t kv_used;
    bool busy; /* a step is in progress */
    /* requests admitted since the start or the last cache reset: the
     * shared prefix is in a slot after its first request */
    uint64_t admissions;
    int64_t step_end;
    struct lru lru;
    struct lt_sim_model_stats st;
    /* the speed's process (speed_cv): its value, and the cost before its
     * factor and the end of the step it was last drawn for */
    struct lt_rng speed_rng;
    double speed_z, speed_ms;
    int64_t speed_t;
    /* slot_runs: the slots, and what each one caches of its last prompt
     * (for the slot choice) */
    struct lt_sim_slot *slots;
    struct slot_cache *cache;
    uint32_t *lcp;
    uint8_t *role;
};

#define NONE UINT32_MAX

static int lru_init(struct lru *l, uint32_t cap)
{
    memset(l, 0, sizeof *l);
    l->head = l->tail = NONE;
    if (cap == 0)
        return 0;
    uint32_t size = 16;
    while (size < 2 * (uint64_t)cap && size < (1u << 31))
        size <<= 1;
    l->cap = cap;
    l->mask = size - 1;
    l->table = calloc(size, sizeof *l->table);
    l->key = malloc((size_t)cap * sizeof *l->key);
    l->prev = malloc((size_t)cap * sizeof *l->prev);
    l->next = malloc((size_t)cap * sizeof *l->next);
    if (!l->table || !l->key || !l->prev || !l->next)
        return LT_ENOMEM;
    return 0;
}

static void lru_release(struct lru *l)
{
    free(l->table);
    free(l->key);
    free(l->prev);
    free(l->next);
}

static uint32_t lru_home(const struct lru *l, uint64_t key)
{
    return (uint32_t)(lt_mix64(key) & l->mask);
}

static uint32_t lru_slot(const struct lru *l, uint64_t key)
{
    uint32_t i = lru_home(l, key);
    while (l->table[i] && l->key[l->table[i] - 1] != key)
        i = (i + 1) & l->mask;
    return i;
}

static void lru_unlink(struct lru *l, uint32_t n)
{
    if (l->prev[n] != NONE)
        l->next[l->prev[n]] = l->next[n];
    else
        l->head = l->next[n];
    if (l->next[n] != NONE)
        l->prev[l->next[n]] = l->prev[n];
    else
        l->tail = l->prev[n];
}

static void lru_push_front(struct lru *l, uint32_t n)
{
    l->prev[n] = NONE;
    l->next[n] = l->head;
    if (l->head != NONE)
        l->prev[l->head] = n;
    l->head = n;
    if (l->tail == NONE)
        l->tail = n;
}

/* Linear probing with backward-shift deletion, so no tombstones pile up. */
static void lru_table_delete(struct lru *l, uint32_t i)
{
    l->table[i] = 0;
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & l->mask;
        if (!l->table[j])
            return;
        uint32_t k = lru_home(l, l->key[l->table[j] - 1]);
        bool move = (j > i) ? (k <= i || k > j) : (k <= i && k > j);
        if (move) {
            l->table[i] = l->table[j];
            l->table[j] = 0;
            i = j;
        }
    }
}

static bool lru_contains(const struct lru *l, uint64_t key)
{
    return l->cap && l->table[lru_slot(l, key)] != 0;
}

/* Mark key most recently used, inserting it (and evicting the least
 * recently used block) if it is not there. */
static void lru_touch(struct lru *l, uint64_t key)
{
    if (!l->cap)
        return;
    uint32_t i = lru_slot(l, key);
    if (l->table[i]) {
        uint32_t n = l->table[i] - 1;
        lru_unlink(l, n);
        lru_push_front(l, n);
        return;
    }
    uint32_t n;
    if (l->used < l->cap) {
        n = l->used++;
    } else {
        n = l->tail;
        lru_unlink(l, n);
        lru_table_delete(l, lru_slot(l, l->key[n]));
        i = lru_slot(l, key);
    }
    l->key[n] = key;
    l->table[i] = n + 1;
    lru_push_front(l, n);
}

struct lt_sim_model *lt_sim_model_new(const struct lt_sim_profile *p, struct lt_err *err)
{
    struct lt_sim_model *m = calloc(1, sizeof *m);
    if (!m) {
        lt_errset(err, LT_ENOMEM, "sim model: out of memory");
        return NULL;
    }
    m->p = *p;
    lt_rng_seed(&m->speed_rng, p->speed_seed);
    m->speed_t = INT64_MIN;
    if (p->slot_runs) {
        uint32_t n = p->max_running;
        m->slots = calloc(n, sizeof *m->slots);
        m->cache = calloc(n, sizeof *m->cache);
        m->lcp = calloc(n, sizeof *m->lcp);
        m->role = calloc(n, sizeof *m->role);
        if (!m->slots || !m->cache || !m->lcp || !m->role) {
            lt_sim_model_free(m);
            lt_errset(err, LT_ENOMEM, "sim model: out of memory for %u slots", n);
            return NULL;
        }
        for (uint32_t i = 0; i < n; i++)
            m->slots[i].released = INT64_MIN;
    }
    if (lru_init(&m->lru, p->cache_blocks) < 0) {
        lt_sim_model_free(m);
        lt_errset(err, LT_ENOMEM, "sim model: out of memory for %u cache blocks", p->cache_blocks);
        return NULL;
    }
    return m;
}

void lt_sim_model_free(struct lt_sim_model *m)
{
    if (!m)
        return;
    for (struct lt_sim_mreq *q = m->qhead, *n; q; q = n) {
        n = q->next;
        free(q);
    }
    for (uint32_t i = 0; i < m->nrun; i++)
        free(m->run[i]);
    free(m->run);
    if (m->cache)
        for (uint32_t i = 0; i < m->p.max_running; i++)
            free(m->cache[i].blocks);
    free(m->slots);
    free(m->cache);
    free(m->lcp);
    free(m->role);
    lru_release(&m->lru);
    free(m);
}

static void queue_unlink(struct lt_sim_model *m, struct lt_sim_mreq *q)
{
    if (q->prev)
        q->prev->next = q->next;
    else
        m->qhead = q->next;
    if (q->next)
        q->next->prev = q->prev;
    else
        m->qtail = q->prev;
    m->nqueued--;
}

/* The KV a request takes on admission: its whole prompt + output reserved
 * (no preemption ever needed), or, when the profile preempts, only the
 * tokens it prefills; decoding then grows it a token a step. */
static uint64_t kv_admit(const struct lt_sim_model *m, const struct lt_sim_mreq *q)
{
    if (m->p.preempt)
        return q->need;
    return (uint64_t)q->prompt + q->out_target;
}

static int run_grow(struct lt_sim_model *m)
{
    if (m->nrun < m->runcap)
        return 0;
    uint32_t nc = m->runcap ? 2 * m->runcap : 64;
    struct lt_sim_mreq **nr = realloc(m->run, nc * sizeof *nr);
    if (!nr)
        return LT_ENOMEM;
    m->run = nr;
    m->runcap = nc;
    return 0;
}

/* slot_runs: q leaves its slot at now; the slot keeps q's prompt as its
 * cache (for the next choice), as llama-server's slot keeps its tokens.
 * Out of memory keeps the blocks of the slot's earlier prompt: only the
 * choice of a later slot may differ. */
static void slot_release(struct lt_sim_model *m, const struct lt_sim_mreq *q, int64_t now)
{
    if (!m->slots)
        return;
    struct lt_sim_slot *s = &m->slots[q->slot];
    s->busy = false;
    s->holds = true;
    /* llama-server releases the slots finishing in one step in id order,
     * each at its own clock reading: the lower id is the less recent */
    s->released = now + q->slot;
    struct slot_cache *c = &m->cache[q->slot];
    c->prompt = q->prompt;
    if (q->nblocks == 0) {
        c->nblocks = 0;
        return;
    }
    uint64_t *b = realloc(c->blocks, (size_t)q->nblocks * sizeof *b);
    if (!b)
        return;
    memcpy(b, q->blocks, (size_t)q->nblocks * sizeof *b);
    c->blocks = b;
    c->nblocks = q->nblocks;
}

/* slot_runs: the slot q gets by llama-server's rule; each idle slot's
 * shared prefix with it is the chat template's start (shared_prefix_tokens)
 * or the blocks it has in common with the slot's last prompt. Returns the
 * slot (there is one: fewer than max_running run). */
static uint32_t slot_take(struct lt_sim_model *m, struct lt_sim_mreq *q)
{
    uint32_t n = m->p.max_running;
    for (uint32_t i = 0; i < n; i++) {
        m->lcp[i] = 0;
        if (m->slots[i].busy || !m->slots[i].holds)
            continue;
        const struct slot_cache *c = &m->cache[i];
        uint32_t k = 0;
        while (k < q->nblocks && k < c->nblocks && c->blocks[k] == q->blocks[k])
            k++;
        uint64_t common = (uint64_t)k * m->p.block_tokens;
        if (common < m->p.shared_prefix_tokens)
            common = m->p.shared_prefix_tokens;
        uint32_t cap = q->prompt < c->prompt ? q->prompt : c->prompt;
        m->lcp[i] = common < cap ? (uint32_t)common : cap;
    }
    uint32_t s =
        q->pinned ? q->pin : lt_sim_slot_pick(m->slots, n, m->lcp, q->prompt, m->p.slot_similarity);
    m->slots[s].busy = true;
    q->slot = s;
    return s;
}

static void drop_cancelled(struct lt_sim_model *m, int64_t now)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < m->nrun; i++) {
        struct lt_sim_mreq *q = m->run[i];
        if (q->cancelled) {
            m->kv_used -= q->kv;
            slot_release(m, q, now);
            free(q);
        } else {
            m->run[k++] = q;
        }
    }
    m->nrun = k;
}

/* Recompute preemption, as vLLM does when the KV cache cannot hold the
 * next token of every decoder: the most recently admitted request gives
 * its KV back and goes to the head of the queue; when admitted again it
 * prefills its prompt and the tokens it had generated, then goes on. */
static void preempt_for(struct lt_sim_model *m, uint64_t grow, int64_t now)
{
    while (m->nrun > 1 && m->kv_used + grow > m->p.kv_tokens) {
        struct lt_sim_mreq *q = m->run[--m->nrun];
        if (q->prefilled == q->need && grow > 0)
            grow--;
        m->kv_used -= q->kv;
        slot_release(m, q, now);
        q->kv = 0;
        q->need = q->prompt + q->out_done;
        q->prefilled = q->cached = 0;
        q->charged = false;
        q->state = Q_QUEUED;
        q->prev = NULL;
        q->next = m->qhead;
        if (m->qhead)
            m->qhead->prev = q;
        else
            m->qtail = q;
        m->qhead = q;
        m->nqueued++;
        m->st.preemptions++;
    }
}

/* Admit the queue's head if the step's limits allow it: a slot, KV for it,
 * prompt tokens left in the step's budget and fewer than prefill_seqs
 * prompts started in this step. Returns 1 if admitted, 0 if not, <0. */
static int admit_one(struct lt_sim_model *m, int64_t now, uint64_t budget, uint32_t started)
{
    /* The first request the engine has seen (front_ms_per_token: a later
     * short prompt may be seen before an earlier long one). */
    struct lt_sim_mreq *q = m->qhead;
    /* llama-server defers a task whose slot (id_slot) is busy */
    while (q && (q->ready > now || (q->pinned && m->slots[q->pin].busy)))
        q = q->next;
    if (!q || m->nrun >= m->p.max_running || budget == 0 || started >= m->p.prefill_seqs)
        return 0;
    /* A request bigger than the whole cache still runs alone, so the
     * engine never deadlocks on it. */
    if (m->kv_used + kv_admit(m, q) > m->p.kv_tokens && m->nrun > 0)
        return 0;
    if (run_grow(m) < 0)
        return LT_ENOMEM;
    queue_unlink(m, q);
    uint32_t hits = 0;
    while (hits < q->nblocks && lru_contains(&m->lru, q->blocks[hits]))
        hits++;
    for (uint32_t b = 0; b < q->nblocks; b++)
        lru_touch(&m->lru, q->blocks[b]);
    uint64_t cached = (uint64_t)hits * m->p.block_tokens;
    /* the template's start is cached in a slot that held a prompt: with
     * slots, the one it gets; else any after the first max_running */
    bool holds = m->slots ? m->slots[slot_take(m, q)].holds : m->admissions >= m->p.max_running;
    if (!q->entered) {
        m->admissions++;
        if (holds && cached < m->p.shared_prefix_tokens)
            cached = m->p.shared_prefix_tokens;
    }
    if (cached >= q->prompt)
        cached = q->prompt - 1; /* the last token is always computed */
    q->cached = (uint32_t)cached;
    q->prefilled = q->cached;
    q->state = Q_RUNNING;
    if (!q->entered)
        q->admitted = now;
    q->fresh = !q->entered;
    q->entered = true;
    q->kv = kv_admit(m, q);
    m->kv_used += q->kv;
    m->run[m->nrun++] = q;
    return 1;
}

/* Give q the next chunk of its prompt from the step's budget; counts the
 * request as starting its prefill (and pays its cached tokens) once. */
static void give_chunk(struct lt_sim_mreq *q, uint64_t *budget, uint64_t *prefill, uint64_t *cached,
                       uint32_t *starting, uint64_t *image, double *pairs)
{
    uint32_t rest = q->need - q->prefilled;
    q->chunk = rest < *budget ? rest : (uint32_t)*budget;
    *budget -= q->chunk;
    *prefill += q->chunk;
    /* each chunk token attends to the prompt before it */
    *pairs += (double)q->chunk * q->prefilled + (double)q->chunk * (q->chunk - 1) / 2;
    if (q->chunk && !q->charged) {
        *cached += q->cached;
        *image += q->image;
        (*starting)++;
        q->charged = true;
    }
}

/* The main loop's work for the requests admitted from run[first] on
 * that are new to the batch (not back from a preemption): the loop takes
 * every new task before it builds the batch, so each of their prompts
 * starts (the server's own prompt time) after all of it. Returns it, ms. */
static double loop_admitted(struct lt_sim_model *m, uint32_t first, int64_t now)
{
    uint32_t fresh = 0;
    for (uint32_t i = first; i < m->nrun; i++)
        fresh += m->run[i]->fresh;
    double ms = m->p.loop_ms_per_request * fresh;
    for (uint32_t i = first; i < m->nrun; i++)
        if (m->run[i]->fresh) {
            m->run[i]->admitted = now + (int64_t)llround(ms * 1e6);
            m->run[i]->fresh = false;
        }
    return ms;
}

/* The factor of the cost ms of a step starting at now (speed_cv). The
 * process moves on from its last draw by the last step's cost before its
 * factor and the idle time since that step ended, not by the time the
 * factor made: a slow spell of steps would otherwise last longer, take
 * more of the steps than its share of the process, and lengthen the mean
 * step (by exp(cv^2) at cv 0.5, 28 %). So every step's factor has the
 * process's stationary law, and its mean over steps is 1, the steps'
 * mean cost a fit reads. 1 when steady. */
static double speed_factor(struct lt_sim_model *m, int64_t now, double ms)
{
    const double cv = m->p.speed_cv;
    if (cv <= 0)
        return 1;
    double a = 0;
    if (m->speed_t != INT64_MIN && m->p.speed_tau_ms > 0) {
        double idle = now > m->speed_t ? (double)(now - m->speed_t) / 1e6 : 0;
        a = exp(-(m->speed_ms + idle) / m->p.speed_tau_ms);
    }
    m->speed_z = a * m->speed_z + sqrt(1 - a * a) * lt_rng_normal(&m->speed_rng);
    double f = exp(cv * m->speed_z - cv * cv / 2);
    m->speed_ms = ms;
    m->speed_t = now + (int64_t)llround(ms * f * 1e6);
    return f;
}

/* The decode part of the step planned: by its batch, or with slot_runs
 * by its micro-batches (each run of decoders on consecutive slots, with the
 * prompts right after it that give it their first token). */
static double decode_part_ms(struct lt_sim_model *m, uint32_t decoders)
{
    if (!m->slots)
        return lt_sim_profile_decode_ms(&m->p, decoders);
    memset(m->role, LT_SLOT_IDLE, m->p.max_running);
    for (uint32_t i = 0; i < m->nrun; i++) {
        const struct lt_sim_mreq *q = m->run[i];
        if (q->decode)
            m->role[q->slot] = LT_SLOT_DECODE;
        else if (q->chunk)
            m->role[q->slot] = LT_SLOT_PROMPT;
    }
    return lt_sim_slot_decode_ms(&m->p, m->role, m->p.max_running);
}

/* Plan one step starting at now and set its end. */
static void start_step(struct lt_sim_model *m, int64_t now)
{
    drop_cancelled(m, now);
    if (m->p.preempt) {
        uint64_t grow = 0;
        for (uint32_t i = 0; i < m->nrun; i++)
            grow += m->run[i]->prefilled == m->run[i]->need;
        preempt_for(m, grow, now);
    }
    uint32_t decoders = 0;
    uint64_t ctx = 0;
    for (uint32_t i = 0; i < m->nrun; i++) {
        struct lt_sim_mreq *q = m->run[i];
        q->chunk = 0;
        q->decode = q->prefilled == q->need;
        if (q->decode) {
            decoders++;
            ctx += (uint64_t)q->prompt + q->out_done;
            if (m->p.preempt) {
                q->kv++; /* the KV of the token this step computes */
                m->kv_used++;
            }
        }
    }
    uint64_t budget = m->p.batch_tokens > decoders ? m->p.batch_tokens - decoders : 0;
    if (decoders == 0 && budget == 0)
        budget = 1;
    uint64_t prefill = 0, cached = 0, image = 0;
    uint32_t starting = 0;
    double pairs = 0;
    for (uint32_t i = 0; i < m->nrun && budget > 0; i++)
        if (!m->run[i]->decode)
            give_chunk(m->run[i], &budget, &prefill, &cached, &starting, &image, &pairs);
    /* New prompts join only while the budget lasts: short prompts cannot
     * pile hundreds of prefills into one step and stall every decoder. */
    int rc;
    uint32_t first_new = m->nrun;
    while ((rc = admit_one(m, now, budget, starting)) > 0) {
        struct lt_sim_mreq *q = m->run[m->nrun - 1];
        q->chunk = 0;
        q->decode = false;
        give_chunk(q, &budget, &prefill, &cached, &starting, &image, &pairs);
    }
    double loop_ms = loop_admitted(m, first_new, now);
    if (m->nrun == 0) {
        /* Requests the engine has not seen yet (their front's cost): wake
         * when the first is seen, a step that emits nothing. Out of memory
         * while growing the batch leaves the queue waiting for the next
         * arrival rather than losing requests. */
        int64_t wake = INT64_MAX;
        for (const struct lt_sim_mreq *q = m->qhead; q; q = q->next)
            if (q->ready > now && q->ready < wake)
                wake = q->ready;
        m->busy = rc >= 0 && wake != INT64_MAX;
        m->step_end = wake;
        return;
    }
    double ms = decode_part_ms(m, decoders) + m->p.decode_ms_per_kv_token * (double)ctx;
    if (prefill > 0)
        ms += m->p.prefill_step_ms + m->p.prefill_ms_per_seq * (double)starting +
              m->p.prefill_ms_per_token * (double)prefill + m->p.prefill_ms_per_token_ctx * pairs;
    ms += m->p.cached_ms_per_token * (double)cached;
    ms += m->p.image_ms_per_token * (double)image; /* the vision encoder */
    ms += loop_ms;
    ms *= speed_factor(m, now, ms);
    m->st.steps++;
    m->st.prefill_tokens += prefill;
    m->st.cached_tokens += cached;
    m->busy = true;
    m->step_end = now + (int64_t)llround(ms * 1e6);
}

struct lt_sim_mreq *lt_sim_model_add(struct lt_sim_model *m, int64_t now,
                                     const struct lt_sim_req *r, struct lt_err *err)
{
    struct lt_sim_mreq *q = calloc(1, sizeof *q + (size_t)r->nblocks * sizeof q->blocks[0]);
    if (!q) {
        lt_errset(err, LT_ENOMEM, "sim model: out of memory");
        return NULL;
    }
    q->user = r->user;
    q->arrival = now;
    q->prompt = r->prompt_tokens ? r->prompt_tokens : 1;
    q->ready = now + (int64_t)llround(
                         (m->p.front_ms_per_request + m->p.front_ms_per_token * q->prompt) * 1e6);
    q->image = r->image_tokens < q->prompt ? r->image_tokens : q->prompt;
    q->pinned = r->pinned && m->slots;
    q->pin = m->slots ? r->pin_slot % m->p.max_running : 0;
    q->out_target = r->out_tokens ? r->out_tokens : 1;
    q->need = q->prompt;
    q->nblocks = r->blocks ? r->nblocks : 0;
    if (q->nblocks)
        memcpy(q->blocks, r->blocks, (size_t)q->nblocks * sizeof q->blocks[0]);
    q->state = Q_QUEUED;
    q->prev = m->qtail;
    if (m->qtail)
        m->qtail->next = q;
    else
        m->qhead = q;
    m->qtail = q;
    m->nqueued++;
    if (!m->busy)
        start_step(m, now);
    else if (m->nrun == 0 && q->ready < m->step_end)
        m->step_end = q->ready; /* waiting for the front: this one is seen first */
    return q;
}

void lt_sim_model_cancel(struct lt_sim_model *m, struct lt_sim_mreq *q)
{
    if (!q)
        return;
    if (q->state == Q_QUEUED) {
        queue_unlink(m, q);
        free(q);
        return;
    }
    q->cancelled = true;
}

int64_t lt_sim_model_next(const struct lt_sim_model *m)
{
    return m->busy ? m->step_end : INT64_MAX;
}

uint64_t lt_sim_model_advance(struct lt_sim_model *m, int64_t t, lt_sim_emit_fn fn, void *ud)
{
    uint64_t n = 0;
    while (m->busy && m->step_end <= t) {
        int64_t now = m->step_end;
        uint32_t k = 0;
        for (uint32_t i = 0; i < m->nrun; i++) {
            struct lt_sim_mreq *q = m->run[i];
            bool emit = false;
            if (!q->cancelled) {
                if (q->decode) {
                    emit = true;
                } else if (q->chunk) {
                    q->prefilled += q->chunk;
                    emit = q->prefilled == q->need;
                }
            }
            if (emit) {
                struct lt_sim_emit e = {
                    .user = q->user,
                    .t = now,
                    .index = q->out_done,
                    .last = q->out_done + 1 >= q->out_target,
                    .cached_tokens = q->cached,
                    .admitted = q->admitted,
                    .slot = m->slots ? (int32_t)q->slot : -1,
                };
                q->out_done++;
                n++;
                if (fn)
                    fn(ud, &e);
                if (e.last) {
                    m->kv_used -= q->kv;
                    slot_release(m, q, now);
                    free(q);
                    continue;
                }
            }
            m->run[k++] = q;
        }
        m->nrun = k;
        m->busy = false;
        if (m->nrun || m->qhead)
            start_step(m, now);
    }
    m->st.tokens += n;
    return n;
}

void lt_sim_model_stats(const struct lt_sim_model *m, struct lt_sim_model_stats *st)
{
    *st = m->st;
    st->running = m->nrun;
    st->queued = m->nqueued;
    st->kv_used = m->kv_used;
}

void lt_sim_model_reset_prefix(struct lt_sim_model *m)
{
    struct lru *l = &m->lru;
    if (l->cap)
        memset(l->table, 0, ((size_t)l->mask + 1) * sizeof *l->table);
    l->used = 0;
    l->head = l->tail = NONE;
    m->admissions = 0;
    /* llama-server's erase empties each slot's cache, not its last use */
    if (m->slots)
        for (uint32_t i = 0; i < m->p.max_running; i++)
            m->slots[i].holds = false;
}

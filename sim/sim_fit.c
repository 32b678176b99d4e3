/*
 * sim --fit: read the engine's steps back from results files and fit the
 * profile's step costs by least squares (see sim_fit.h for the idea).
 *
 * A run at a time: every token becomes an event (time, request, index);
 * sorted by time, events closer than step_gap_ms are one step's output. A
 * step starts at the previous step's end when anything was in flight then,
 * else at the first arrival after it. Steps where a prompt may have been
 * prefilled in chunks over several steps (a prompt that cannot fit the
 * step's budget, or one waiting through the step that might be chunking)
 * are left out of the regression: their prefill tokens are not observable.
 * The regression is least squares reweighted by Huber's rule (a live
 * client's few stalled windows would otherwise pull every cost), with a
 * column for the client's share of a TTFT that the profile does not get.
 */
#include "sim/sim_fit.h"
#include "sim/sim_slots.h"
#include "traces/trace_reader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The cost columns, in the order collinear ones are dropped (a later
 * column that adds nothing to the earlier ones is not identified). */
enum { C_STEP, C_SEQ, C_KV, C_PFSTEP, C_PFSEQ, C_PFTOK, C_CACHED, C_CLIENT, C_LOOP, C_BEND };

/* The regression's columns: the profile's costs, then the client's share of
 * a TTFT (1 in TTFT rows only). A TTFT measured by the client holds the
 * send-to-arrival time and the first chunk's delivery, which the server's
 * model does not have; without a column of its own it lands in
 * prefill_step_ms (and, through it, in every prefilling step of a
 * prediction). Decode windows are client times at both ends, so there it
 * cancels. With the server's timings, whose prompt time holds none of the
 * main loop's work on a request before its prompt starts, column C_LOOP
 * counts a decode window's first tokens (0 in the TTFT rows): what each
 * admission holds up the other slots beyond its own prefill step, the
 * serialized part of the time outside the server's compute.
 * Then the bends of the decode cost by batch size: column C_BEND
 * + b counts the steps of b + 2 decoders (the step cost's departure from
 * a line in the batch, at that size). */
enum { NX = LT_SIM_FIT_NCOST + 2 + LT_SIM_FIT_NBEND };

/* Huber's reweighting: rows beyond HUBER_K robust standard deviations
 * count less, over HUBER_ITERS rounds. */
#define HUBER_K 1.345
/* The prefill's curve (prefill_ms_per_token_ctx) is kept where it is this
 * many standard errors above 0. Not fewer: with an intercept and a line
 * beside it over a few-fold range of prompts, a curve at two standard
 * errors is as likely the bend of a CPU's per-token cost (dearer for the
 * shortest prompts, then flat) as attention, and it is extrapolated to
 * longer prompts (bench/README.md, 2026-12-04: rand-768x12's curve at
 * 1.96 s.e., kept at 1.645, made 400-token prompts 11 % dearer, the long
 * trace's TTFT +22 %; the server's own counters said those prompts cost
 * less a token than the fitted ones) */
#define CURVE_T 3.0
enum { HUBER_ITERS = 6 };

/* prefill_from_ttft reads at most this many TTFT rows (the first ones). */
enum { RESID_ROWS_MAX = 4096 };

/* Memory stays bounded whatever the size of the input: a run is read in
 * segments of at most SEG_REQ requests or SEG_TOK tokens (each fitted and
 * freed before the next is read), and the rows of the regression are
 * thinned to every second one each time they reach ROWS_MAX (a million
 * requests of one load tell the seven costs no better than a quarter of a
 * million). A row whose window crosses into the segment before or after it
 * is dropped: it missed that segment's tokens. */
enum { SEG_REQ = 1 << 16, SEG_TOK = 1 << 22, ROWS_MAX = 1 << 18 };

/* max_running is identified when the steps at the largest batch with a
 * request queued behind it are PILE times those at each of the PILE_SIZES
 * sizes below it (on average), and three of their standard deviations (a
 * count's: its square root) and 3 more. */
#define PILE 4.0
enum { PILE_SIZES = 3 };

static const char *const cost_key[LT_SIM_FIT_NCOST] = {
    "step_ms",
    "step_ms_per_seq",
    "decode_ms_per_kv_token",
    "prefill_step_ms",
    "prefill_ms_per_seq",
    "prefill_ms_per_token",
    "cached_ms_per_token",
};

static const char *const cost_needs[LT_SIM_FIT_NCOST] = {
    "any steps at all",
    "steps with different numbers of decoding requests (two loads, or a closed loop at "
    "several concurrencies)",
    "decoding batches whose contexts differ in length at the same batch size (varied prompt "
    "or output lengths)",
    "steps with and without prefill (an open-loop load that is not saturated)",
    "steps that finish several prompts at once (a higher rate or bursts of arrivals)",
    "prompts of different lengths",
    "prompts that hit the prefix cache (a trace with shared prefixes or sessions)",
};

struct freq {
    int64_t sent, first, end; /* microseconds, file time */
    uint32_t in, cached, ntok;
    uint64_t off;   /* first token time in the run's token array */
    bool waiting;   /* in the waiting set of the sweep */
    int64_t srv_pf; /* llama-server's own prompt_ms of it (us, its timings); -1: none said */
    uint64_t step;  /* 1 + the step of its last token in the sweep */
};

struct ev {
    int64_t t;
    uint32_t req, k;
};

struct row {
    double x[NX];
    double y;
    int ttft;       /* 1: a TTFT at an idle server; 0: a request's decode time (E2E - TTFT) */
    uint32_t run;   /* index into the runs read (struct runinfo) */
    double shift;   /* the part of the observed time taken out of y (fixed costs) */
    uint32_t seg;   /* the segment it was read in (struct seg) */
    int64_t w0, w1; /* the window it covers (file time, us) */
    uint64_t h;     /* a hash of its place among the rows offered (thinning) */
    float ind[LT_SIM_FIT_NBEND]; /* steps of 2, 3, ... decoders in it (the bends' hats) */
    double pairs;                /* its prefilled tokens' pairs with the prompt before them
                                    (prefill_ms_per_token_ctx) */
    bool srv;                    /* a TTFT row with the server's own prompt time (its timings) */
    double srv_y; /* ... that time (model ms); y stays the client's TTFT until it is taken */
};

/* A segment of a run as read: its earliest send and latest end, and the
 * run's segments before and after it (NO_SEG: none). */
struct seg {
    int64_t min_sent, max_end;
    uint32_t prev, next;
};

#define NO_SEG UINT32_MAX

struct segs {
    struct seg *s;
    size_t n, cap;
};

/* The server's speed as it wanders (speed_cv, speed_tau_ms), read from
 * closed loops at 1, where each request decodes alone: its decode's mean
 * gap against the model's step at a batch of 1 is the server's speed over
 * it (a client's jitter in one token's time is a small part of a mean over
 * many). A request of SPEED_MIN_GAPS gaps or more: the time of the first
 * half of its gaps, of the second, of all, its prompt, and the gaps. */
struct speed_obs {
    double d1_ms, d2_ms, d_ms; /* model ms */
    uint32_t prompt, gaps;
};

enum { SPEED_MIN_GAPS = 16, SPEED_MIN_REQS = 12, SPEED_MAX_OBS = 1 << 16 };
#define SPEED_MIN_CV 0.01

/* A run as read: what its record said, its self-check, and the figures
 * of its timelines that class it (stable, backlogged, client-starved). */
struct runinfo {
    uint32_t file, id;
    struct lt_sim_fit_word word;
    bool has_word;
    char cache_state[96];
    double trace_hit;     /* < 0: unknown */
    uint32_t concurrency; /* a closed loop's level; 0 an open loop */
    bool has_check, check_saturated, check_off;
    uint64_t requests, in_sum, cached_sum;
    double mean_inflight;
    double ttft_first_ms, ttft_last_ms; /* p50 TTFT of the first and last quarter sent */
    uint32_t segs;                      /* segments read so far */
    /* llama.cpp's counters: the first and last complete sample */
    double mfirst[6], mlast[6];
    uint32_t msamples;
    int64_t t0, t1; /* first send, last end */
    double busy_us; /* the requests' E2E, summed */
    const char *cls;
    char why[200];
    bool used;
    struct speed_obs *sobs; /* closed loops at 1: the decodes read (SPEED_MAX_OBS at most) */
    size_t nsobs, capsobs;
};

struct rows {
    struct row *r;
    size_t n, cap;
    uint64_t seen;   /* rows offered */
    uint64_t stride; /* a power of 2: a row is kept when its h is 0 modulo it */
};

/* splitmix64's finalizer: thinning by a hash of the row's place, not by
 * the place itself, which a closed loop's requests repeat in (every C-th
 * row is the same part of a lockstep batch). */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

#define NBUCKET 33 /* waiting prompts by log2 of their uncached tokens */
enum { CACHED_HIST = 4096 };

static int cmp_ev(const void *a, const void *b)
{
    const struct ev *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->req != y->req)
        return x->req < y->req ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

static const struct freq *g_reqs; /* for the index sorts below (single-threaded) */

static int cmp_sent(const void *a, const void *b)
{
    int64_t x = g_reqs[*(const uint32_t *)a].sent, y = g_reqs[*(const uint32_t *)b].sent;
    return x < y ? -1 : x > y;
}

/* When the server took q up: its first token less its own prompt time
 * (llama.cpp's prompt_ms runs from its admission), else when it was sent. */
static int64_t taken_at(const struct freq *q)
{
    return q->srv_pf >= 0 && q->first - q->srv_pf >= q->sent ? q->first - q->srv_pf : q->sent;
}

static int cmp_taken(const void *a, const void *b)
{
    int64_t x = taken_at(&g_reqs[*(const uint32_t *)a]),
            y = taken_at(&g_reqs[*(const uint32_t *)b]);
    return x < y ? -1 : x > y;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int bucket_of(uint32_t tokens)
{
    int b = 0;
    while (b < NBUCKET - 1 && (1ull << b) <= tokens)
        b++;
    return b; /* tokens < 2^b */
}

static int rows_push(struct rows *rs, const struct row *r)
{
    if (rs->stride == 0)
        rs->stride = 1;
    uint64_t h = mix64(rs->seen++);
    if (h & (rs->stride - 1))
        return 0;
    while (rs->n == ROWS_MAX) { /* thin: keep about every second row, from now on too */
        rs->stride *= 2;
        size_t k = 0;
        for (size_t i = 0; i < rs->n; i++)
            if (!(rs->r[i].h & (rs->stride - 1)))
                rs->r[k++] = rs->r[i];
        rs->n = k;
        if (h & (rs->stride - 1))
            return 0;
    }
    if (rs->n == rs->cap) {
        size_t nc = rs->cap ? 2 * rs->cap : 4096;
        struct row *nr = realloc(rs->r, nc * sizeof *nr);
        if (!nr)
            return LT_ENOMEM;
        rs->r = nr;
        rs->cap = nc;
    }
    rs->r[rs->n] = *r;
    rs->r[rs->n++].h = h;
    return 0;
}

struct run_data {
    struct freq *req;
    size_t nreq, capreq;
    int64_t *tok;
    size_t ntok, captok;
    uint32_t seg; /* the segment being read (index into the fit's segments) */
};

struct limits {
    uint32_t max_batch, max_prefill;
    uint32_t peak_inflight; /* most requests sent and not finished at a step's start */
    uint32_t *queued_full;  /* [batch size]: steps where a request waited two step starts at
                               that size */
    uint32_t cap;
    uint32_t *queued_at_prefill;           /* [prompts finished]: waited with room in the batch */
    uint64_t cached_hist[CACHED_HIST + 1]; /* requests by cached prompt tokens (the last: more) */
};

/* A prompt of `in` tokens with `cached` of them cached: the pairs of a
 * prefilled token and a prompt token before it (what attention in the
 * prefill costs, prefill_ms_per_token_ctx each). */
static double prompt_pairs(uint32_t in, uint32_t cached)
{
    double p = (double)in - cached;
    return p * cached + p * (p - 1) / 2;
}

/* How many of the n sorted times are below t. */
static size_t lower_i64(const int64_t *v, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t upper(const struct ev *ev, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ev[mid].t <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* One row per request: the time from its first token to its last is the
 * sum of the n - 1 steps it decoded in, and the sums of those steps'
 * columns are counted from every token emitted in that window (prefix sums
 * over the sorted tokens), so no step needs to be cut out exactly: a
 * token's jitter only matters at the window's two ends, where it cancels
 * on average. Prefilling steps are counted by first tokens closer than
 * gap_us; a window holding a prompt too long for one step's budget is left
 * out (its chunks are not observable). */
static int window_rows(const struct run_data *rd, const struct ev *ev, const uint32_t *decoders,
                       const uint32_t *ub, size_t nev, double gap_us, double scale, uint32_t budget,
                       uint32_t run_ix, struct rows *rs, struct lt_sim_fit *out)
{
    /* columns, a long-prompt count, the bends, the passes (slots), the pairs */
    enum { N = LT_SIM_FIT_NCOST, PASS = N + 1 + LT_SIM_FIT_NBEND, W = PASS + 2 };
    int rc = 0;
    /* The prefix sums are kept only where a window starts or ends: slot[i]
     * (1-based) says where the sums of the first i tokens go. */
    uint32_t *slot = calloc(nev + 1, sizeof *slot);
    size_t *ends = malloc((rd->nreq ? rd->nreq : 1) * 2 * sizeof *ends);
    double *cum = NULL;
    if (!slot || !ends) {
        rc = LT_ENOMEM;
        goto out;
    }
    for (size_t r = 0; r < rd->nreq; r++) {
        ends[2 * r] = upper(ev, nev, rd->req[r].first);
        ends[2 * r + 1] = upper(ev, nev, rd->req[r].end);
        slot[ends[2 * r]] = slot[ends[2 * r + 1]] = 1;
    }
    uint32_t nslot = 0;
    for (size_t i = 0; i <= nev; i++)
        if (slot[i])
            slot[i] = ++nslot;
    cum = calloc((size_t)nslot * W, sizeof *cum);
    if (!cum) {
        rc = LT_ENOMEM;
        goto out;
    }
    double run[W] = {0};
    int64_t last_first = INT64_MIN;
    for (size_t i = 0;; i++) {
        if (slot[i])
            memcpy(cum + (size_t)(slot[i] - 1) * W, run, sizeof run);
        if (i == nev)
            break;
        const struct freq *q = &rd->req[ev[i].req];
        if (ev[i].k == 0) {
            run[C_PFSEQ] += 1;
            run[C_PFTOK] += q->in - q->cached;
            run[C_CACHED] += q->cached;
            run[W - 1] += prompt_pairs(q->in, q->cached);
            if (last_first == INT64_MIN || (double)(ev[i].t - last_first) > gap_us)
                run[C_PFSTEP] += 1;
            last_first = ev[i].t;
            if (q->in - q->cached >= budget / 2)
                run[N] += 1;
        } else {
            run[C_KV] += (double)q->in + ev[i].k;
            /* each of a step's D decoders holds 1 / D of the step; with
             * slots (ub), each of a pass's decoders 1 / its decoders of
             * that pass, whose size counts the prompts joining it */
            uint32_t d = decoders[i], size = d, held = d;
            if (ub) {
                size = ub[i] >> 16;
                held = ub[i] & 0xffff;
                run[PASS] += 1.0 / held;
            }
            run[C_SEQ] += ub ? (double)size / held : 1;
            if (size >= 2 && size <= LT_SIM_FIT_NBEND + 1)
                run[N + 1 + size - 2] += 1.0 / held;
        }
    }
    for (size_t r = 0; r < rd->nreq; r++) {
        const struct freq *q = &rd->req[r];
        if (q->ntok < 2 || q->end <= q->first)
            continue;
        const double *a = cum + (size_t)(slot[ends[2 * r]] - 1) * W;
        const double *b = cum + (size_t)(slot[ends[2 * r + 1]] - 1) * W;
        if (b[N] > a[N])
            continue;
        struct row w = {{0}, 0, 0, run_ix, 0, rd->seg, q->first, q->end, 0, {0}, 0, false, 0};
        for (int c = 0; c < N; c++)
            w.x[c] = b[c] - a[c];
        for (int k = 0; k < LT_SIM_FIT_NBEND; k++)
            w.x[C_BEND + k] = b[N + 1 + k] - a[N + 1 + k];
        w.pairs = b[W - 1] - a[W - 1];
        w.x[C_STEP] = ub ? b[PASS] - a[PASS] : q->ntok - 1;
        w.y = (double)(q->end - q->first) * scale / 1e3;
        rc = rows_push(rs, &w);
        if (rc < 0)
            break;
        out->steps_used += q->ntok - 1;
    }
out:
    free(slot);
    free(ends);
    free(cum);
    return rc;
}

/* Whether a run's server splits its steps by slots (sim_slots.h): a
 * llama-server that said how many slots it has, few enough for the bends. */
static bool slotted(const struct runinfo *ri)
{
    return ri->has_word && !strcmp(ri->word.kind, "llama.cpp") && ri->word.slots >= 2 &&
           ri->word.slots <= LT_SIM_FIT_NBEND + 1;
}

/* With slots: which slot each request had, by the server's rule played
 * over the run (sim_slots.h: requests take slots in the order the server
 * took them up, by its timings, else as sent, when
 * one is free; a slot's cached prompt shares with a new one what the
 * server reported cached of it, the chat template's start where prompts
 * share no more, so the share picks the lowest slot holding a prompt), and
 * then for each decoded token the pass it was in: ub[k] is the pass's size
 * (its decoders and the prompts finishing beside that join it) << 16 | its
 * decoders. A slot's requests follow each other, so the one in it at a
 * time is found by bisection. The run starts with empty slots after a
 * reset or on a cold server, else with every slot holding a prompt. */
static int slot_passes(const struct run_data *rd, const struct ev *ev, size_t nev,
                       const uint32_t *by_sent, const struct runinfo *ri, uint32_t *ub)
{
    const uint32_t ns = ri->word.slots;
    const size_t nreq = rd->nreq;
    struct lt_sim_slot sl[LT_SIM_FIT_NBEND + 1];
    uint32_t cur[LT_SIM_FIT_NBEND + 1], lcp[LT_SIM_FIT_NBEND + 1], cnt[LT_SIM_FIT_NBEND + 2] = {0};
    bool empty = !strncmp(ri->cache_state, "reset", 5) || !strncmp(ri->cache_state, "cold", 4);
    for (uint32_t i = 0; i < ns; i++)
        sl[i] = (struct lt_sim_slot){INT64_MIN, false, !empty};
    uint32_t *slot_of = malloc((nreq ? nreq : 1) * sizeof *slot_of);
    uint32_t *list = malloc((nreq ? nreq : 1) * sizeof *list);
    int64_t *adm = malloc((nreq ? nreq : 1) * sizeof *adm);
    uint32_t *order = malloc((nreq ? nreq : 1) * sizeof *order);
    if (!slot_of || !list || !adm || !order) {
        free(slot_of);
        free(list);
        free(adm);
        free(order);
        return LT_ENOMEM;
    }
    /* In the order the server took them up, where its timings say when:
     * work in front of its engine (front_ms_per_token) lets a short prompt
     * sent later reach a slot before a long one sent earlier. */
    memcpy(order, by_sent, nreq * sizeof *order);
    g_reqs = rd->req;
    qsort(order, nreq, sizeof *order, cmp_taken);
    for (size_t k = 0; k < nreq; k++) {
        const uint32_t r = order[k];
        const struct freq *q = &rd->req[r];
        int64_t t = taken_at(q);
        for (;;) {
            uint32_t free_n = 0, soonest = ns;
            for (uint32_t i = 0; i < ns; i++) {
                if (sl[i].busy && rd->req[cur[i]].end <= t) {
                    sl[i].busy = false;
                    sl[i].holds = true;
                    sl[i].released = rd->req[cur[i]].end;
                }
                if (!sl[i].busy)
                    free_n++;
                else if (soonest == ns || rd->req[cur[i]].end < rd->req[cur[soonest]].end)
                    soonest = i;
            }
            if (free_n)
                break;
            t = rd->req[cur[soonest]].end; /* it waits for the first to finish */
        }
        for (uint32_t i = 0; i < ns; i++)
            lcp[i] = q->cached;
        uint32_t s = lt_sim_slot_pick(sl, ns, lcp, q->in, LT_SIM_SLOT_SIMILARITY);
        sl[s].busy = true;
        cur[s] = r;
        slot_of[r] = s;
        adm[r] = t;
        cnt[s + 1]++;
    }
    /* each slot's requests in the order they took it */
    for (uint32_t i = 0; i < ns; i++)
        cnt[i + 1] += cnt[i];
    uint32_t fill[LT_SIM_FIT_NBEND + 1];
    memcpy(fill, cnt, sizeof fill);
    for (size_t k = 0; k < nreq; k++)
        list[fill[slot_of[order[k]]]++] = order[k];
    uint8_t role[LT_SIM_FIT_NBEND + 1];
    for (size_t e = 0; e < nev; e++) {
        ub[e] = 0;
        if (ev[e].k == 0)
            continue;
        const struct freq *q = &rd->req[ev[e].req];
        int64_t tp = rd->tok[q->off + ev[e].k - 1], t = ev[e].t;
        int64_t mid = tp + (t - tp) / 2, late = t + (t - tp) / 2;
        for (uint32_t i = 0; i < ns; i++) {
            role[i] = LT_SLOT_IDLE;
            uint32_t lo = cnt[i], hi = cnt[i + 1];
            while (lo < hi) { /* the first that took it after mid */
                uint32_t m = lo + (hi - lo) / 2;
                if (adm[list[m]] <= mid)
                    lo = m + 1;
                else
                    hi = m;
            }
            if (lo == cnt[i])
                continue;
            const struct freq *o = &rd->req[list[lo - 1]];
            if (o->end < mid)
                continue;
            if (o->first < mid)
                role[i] = LT_SLOT_DECODE;
            else if (o->first <= late)
                role[i] = LT_SLOT_PROMPT;
        }
        uint32_t me = slot_of[ev[e].req], size, d;
        role[me] = LT_SLOT_DECODE;
        lt_sim_slot_pass_of(role, ns, me, &size, &d);
        ub[e] = size << 16 | d;
    }
    free(slot_of);
    free(list);
    free(adm);
    free(order);
    return 0;
}

/* The figures that class a run: the requests in flight on average (each
 * request's E2E summed over the run's span), the p50 TTFT of the first and
 * of the last quarter of its requests by send time (a queue that grows
 * through the run makes the second larger), and its cached prompt tokens. */
static int run_figures(const struct run_data *rd, const uint32_t *by_sent, double scale,
                       struct runinfo *ri)
{
    size_t n = rd->nreq;
    ri->requests += n;
    if (n == 0)
        return 0;
    if (ri->segs == 0) {
        ri->t0 = INT64_MAX;
        ri->t1 = INT64_MIN;
    }
    for (size_t i = 0; i < n; i++) {
        const struct freq *q = &rd->req[i];
        ri->t0 = q->sent < ri->t0 ? q->sent : ri->t0;
        ri->t1 = q->end > ri->t1 ? q->end : ri->t1;
        ri->busy_us += (double)(q->end - q->sent);
        ri->in_sum += q->in;
        ri->cached_sum += q->cached;
    }
    ri->mean_inflight = ri->t1 > ri->t0 ? ri->busy_us / (double)(ri->t1 - ri->t0) : 0;
    /* The first quarter from the run's first segment, the last from its
     * last (each segment read overwrites it). */
    int first_part = ri->segs++ == 0 ? 0 : 1;
    size_t quarter = n / 4;
    if (quarter < 2)
        return 0;
    double *t = malloc(quarter * sizeof *t);
    if (!t)
        return LT_ENOMEM;
    for (int part = first_part; part < 2; part++) {
        for (size_t k = 0; k < quarter; k++) {
            const struct freq *q = &rd->req[by_sent[part ? n - quarter + k : k]];
            t[k] = (double)(q->first - q->sent) * scale / 1e3;
        }
        qsort(t, quarter, sizeof *t, cmp_dbl);
        *(part ? &ri->ttft_last_ms : &ri->ttft_first_ms) = t[quarter / 2];
    }
    free(t);
    return 0;
}

/* Read one run's steps (for the limits) and its requests' rows. */
static int fit_run(struct run_data *rd, const struct lt_sim_fit_opts *o, uint32_t run,
                   struct runinfo *ri, struct rows *rs, struct limits *lim, struct lt_sim_fit *out)
{
    int rc = 0;
    size_t nreq = rd->nreq;
    struct ev *ev = malloc((rd->ntok ? rd->ntok : 1) * sizeof *ev);
    uint32_t *by_sent = malloc((nreq ? nreq : 1) * sizeof *by_sent);
    int64_t *ends = malloc((nreq ? nreq : 1) * sizeof *ends);
    uint32_t *decoders = malloc((rd->ntok ? rd->ntok : 1) * sizeof *decoders); /* by event */
    uint32_t *ub = NULL; /* with slots: each decoded token's pass */
    if (!ev || !by_sent || !ends || !decoders) {
        rc = LT_ENOMEM;
        goto out;
    }
    size_t nev = 0;
    for (size_t i = 0; i < nreq; i++) {
        struct freq *q = &rd->req[i];
        for (uint32_t k = 0; k < q->ntok; k++)
            ev[nev++] = (struct ev){rd->tok[q->off + k], (uint32_t)i, k};
        by_sent[i] = (uint32_t)i;
        ends[i] = q->end;
        q->waiting = false;
        q->step = 0;
    }
    qsort(ev, nev, sizeof *ev, cmp_ev);
    g_reqs = rd->req;
    qsort(by_sent, nreq, sizeof *by_sent, cmp_sent);
    qsort(ends, nreq, sizeof *ends, cmp_i64);
    const double gap_us = (o->step_gap_ms > 0 ? o->step_gap_ms : 0.1) * 1e3;
    const double scale = o->time_scale > 0 ? o->time_scale : 1;
    const uint32_t budget = o->base.batch_tokens;
    uint64_t wait_n[NBUCKET] = {0};
    uint64_t nwait = 0, wait_tok = 0; /* waiting requests, their uncached tokens */
    size_t ps = 0, pe = 0;            /* pointers into by_sent and ends */
    size_t oldest = 0;                /* into by_sent: no request before it still waits */
    int64_t prev = INT64_MIN, prev2 = INT64_MIN;
    for (size_t i = 0; i < nev;) {
        /* A step holds tokens close in time, and at most one of each request. */
        size_t j = i;
        uint64_t sid = out->steps + 1;
        while (j < nev && (double)(ev[j].t - ev[i].t) <= gap_us && rd->req[ev[j].req].step != sid) {
            rd->req[ev[j].req].step = sid;
            j++;
        }
        int64_t e = ev[i].t;
        /* When did this step start? */
        size_t sent_before = ps, ended = pe;
        while (sent_before < nreq && rd->req[by_sent[sent_before]].sent <= prev)
            sent_before++;
        while (ended < nreq && ends[ended] <= prev)
            ended++;
        int64_t start;
        bool known = true;
        if (prev != INT64_MIN && sent_before > ended) {
            start = prev;
        } else if (sent_before < nreq) {
            start = rd->req[by_sent[sent_before]].sent;
        } else {
            start = e;
            known = false;
        }
        pe = ended;
        if (sent_before > ended && sent_before - ended > lim->peak_inflight)
            lim->peak_inflight = (uint32_t)(sent_before - ended);
        /* Requests sent by the step's start join the waiting set until
         * their first token. */
        while (ps < nreq && rd->req[by_sent[ps]].sent <= start) {
            struct freq *q = &rd->req[by_sent[ps]];
            if (q->first > prev && q->ntok) {
                q->waiting = true;
                wait_n[bucket_of(q->in - q->cached)]++;
                nwait++;
                wait_tok += q->in - q->cached;
            }
            ps++;
        }
        struct row r = {{0}, 0, 0, run, 0, 0, 0, 0, 0, {0}, 0, false, 0};
        r.x[C_STEP] = 1;
        uint64_t P = 0;
        for (size_t k = i; k < j; k++) {
            struct freq *q = &rd->req[ev[k].req];
            if (ev[k].k == 0) {
                r.x[C_PFSEQ] += 1;
                P += q->in - q->cached;
                r.x[C_CACHED] += q->cached;
                if (q->waiting) {
                    q->waiting = false;
                    wait_n[bucket_of(q->in - q->cached)]--;
                    nwait--;
                    wait_tok -= q->in - q->cached;
                } else {
                    known = false; /* it arrived after the step began (clock jitter) */
                }
            } else {
                r.x[C_SEQ] += 1;
                r.x[C_KV] += (double)q->in + ev[k].k;
            }
        }
        r.x[C_PFTOK] = (double)P;
        r.x[C_PFSTEP] = P > 0;
        uint64_t dec = (uint64_t)r.x[C_SEQ];
        int top = -1;
        for (int b = NBUCKET - 1; b >= 0; b--)
            if (wait_n[b]) {
                top = b;
                break;
            }
        uint64_t top_tokens = top >= 0 ? (1ull << top) : 0;
        bool chunked = P + dec > budget || (top >= 0 && top_tokens + P + dec > budget);
        uint32_t batch = (uint32_t)(dec + (uint64_t)r.x[C_PFSEQ]);
        uint32_t npf = (uint32_t)r.x[C_PFSEQ];
        if (batch > lim->max_batch)
            lim->max_batch = batch;
        if (npf > lim->max_prefill)
            lim->max_prefill = npf;
        /* Queued behind the batch: a request that was there two step
         * starts ago and still is not in (one start missed could be the
         * client's clock ahead of the server's). */
        while (oldest < ps && !rd->req[by_sent[oldest]].waiting)
            oldest++;
        bool old_waiter =
            oldest < ps && prev2 != INT64_MIN && rd->req[by_sent[oldest]].sent <= prev2;
        /* Only when the step's token budget could have taken every waiting
         * prompt is the wait the batch's (or the KV's) doing. */
        if (old_waiter && !chunked && wait_tok + P + dec <= budget) {
            if (batch < lim->cap)
                lim->queued_full[batch]++;
            if (npf < lim->cap)
                lim->queued_at_prefill[npf]++;
        }
        out->steps++;
        (void)known;
        prev2 = start;
        prev = e;
        i = j;
    }
    /* The decoders beside each decoded token: the requests between their
     * first and last token at the middle of its step (from the request's
     * token before). A step's tokens reach the client over a millisecond
     * or more when the server writes them one connection at a time, so a
     * count of tokens close in time splits steps; every request between
     * its first and last token is in every step (no preemption on such a
     * server), so this count does not. */
    int64_t *firsts = malloc((nreq ? nreq : 1) * sizeof *firsts);
    if (!firsts) {
        rc = LT_ENOMEM;
        goto out;
    }
    for (size_t k = 0; k < nreq; k++)
        firsts[k] = rd->req[k].first;
    qsort(firsts, nreq, sizeof *firsts, cmp_i64);
    for (size_t k = 0; k < nev; k++) {
        decoders[k] = 0;
        if (ev[k].k == 0)
            continue;
        const struct freq *q = &rd->req[ev[k].req];
        int64_t mid = rd->tok[q->off + ev[k].k - 1] + (ev[k].t - rd->tok[q->off + ev[k].k - 1]) / 2;
        size_t started = lower_i64(firsts, nreq, mid), ended = lower_i64(ends, nreq, mid);
        decoders[k] = started > ended ? (uint32_t)(started - ended) : 0;
    }
    free(firsts);
    if (slotted(ri)) {
        ub = malloc((nev ? nev : 1) * sizeof *ub);
        if (!ub || (rc = slot_passes(rd, ev, nev, by_sent, ri, ub)) < 0) {
            rc = LT_ENOMEM;
            goto out;
        }
    }
    rc = window_rows(rd, ev, decoders, ub, nev, gap_us, scale, budget, run, rs, out);
    if (rc < 0)
        goto out;
    /* TTFT of a request that found the server idle (everything sent
     * before it had ended): the step that prefills it starts when it
     * arrives, and only prompts sent at the same moment share it. */
    for (size_t k = 0; k < nreq; k++) {
        const struct freq *q = &rd->req[by_sent[k]];
        size_t lo = 0, hi = nreq;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (ends[mid] <= q->sent)
                lo = mid + 1;
            else
                hi = mid;
        }
        bool alone = lo == k && (k + 1 == nreq || rd->req[by_sent[k + 1]].sent > q->first) &&
                     q->in - q->cached + 0u <= budget;
        if (!alone || q->first <= q->sent)
            continue;
        struct row w = {{0}, 0, 1, run, 0, rd->seg, q->sent, q->first, 0, {0}, 0, false, 0};
        w.x[C_STEP] = w.x[C_PFSTEP] = w.x[C_PFSEQ] = 1;
        w.x[C_PFTOK] = q->in - q->cached;
        w.x[C_CACHED] = q->cached;
        w.pairs = prompt_pairs(q->in, q->cached);
        w.x[C_CLIENT] = 1;
        w.y = (double)(q->first - q->sent) * scale / 1e3;
        if (q->srv_pf >= 0) { /* the server's own time: no client in it */
            w.srv = true;
            w.srv_y = (double)q->srv_pf * scale / 1e3;
        }
        rc = rows_push(rs, &w);
        if (rc < 0)
            goto out;
    }
    for (size_t k = 0; k < nreq; k++) {
        out->cached_mean += rd->req[k].cached; /* sums here, moments at the end */
        out->cached_sd += (double)rd->req[k].cached * rd->req[k].cached;
        lim->cached_hist[rd->req[k].cached < CACHED_HIST ? rd->req[k].cached : CACHED_HIST]++;
    }
    rc = run_figures(rd, by_sent, scale, ri);
out:
    free(ev);
    free(by_sent);
    free(ends);
    free(decoders);
    free(ub);
    return rc;
}

static int add_result(struct run_data *rd, const struct lt_result *res)
{
    if (!(res->has & LT_RHAS_CHUNKS) || !res->n_chunks || !(res->has & LT_RHAS_SENT))
        return 0;
    if ((res->has & LT_RHAS_STATUS) && res->status != 200)
        return 0;
    uint32_t ntok = 0;
    for (uint32_t c = 0; c < res->n_chunks; c++)
        ntok += res->chunks[c].tokens ? res->chunks[c].tokens : 1;
    if (rd->nreq == rd->capreq) {
        size_t nc = rd->capreq ? 2 * rd->capreq : 1024;
        struct freq *nr = realloc(rd->req, nc * sizeof *nr);
        if (!nr)
            return LT_ENOMEM;
        rd->req = nr;
        rd->capreq = nc;
    }
    while (rd->ntok + ntok > rd->captok) {
        size_t nc = rd->captok ? 2 * rd->captok : 65536;
        int64_t *nt = realloc(rd->tok, nc * sizeof *nt);
        if (!nt)
            return LT_ENOMEM;
        rd->tok = nt;
        rd->captok = nc;
    }
    struct freq *q = &rd->req[rd->nreq++];
    q->sent = res->sent;
    q->in = (res->has & LT_RHAS_IN) ? res->in : 1;
    if (q->in == 0)
        q->in = 1;
    q->cached = (res->has & LT_RHAS_CACHED) ? res->cached : 0;
    if (q->cached >= q->in)
        q->cached = q->in - 1;
    q->ntok = ntok;
    q->off = rd->ntok;
    for (uint32_t c = 0; c < res->n_chunks; c++)
        for (uint32_t k = 0; k < (res->chunks[c].tokens ? res->chunks[c].tokens : 1); k++)
            rd->tok[rd->ntok++] = res->chunks[c].t;
    q->first = rd->tok[q->off];
    q->end = rd->tok[q->off + ntok - 1];
    int64_t v;
    q->srv_pf = lt_extra_get_int(&res->extra, "srv_pf", &v) && v >= 0 ? v : -1;
    return 0;
}

/* The time outside the server's compute at an idle server, per request:
 * the client's TTFT less the server's own prompt time (its timings) holds
 * the HTTP, template and tokenizing work in front of the engine, the main
 * loop's work on the request before its prompt starts, and the client's
 * round trip. Its median (and that median's standard error), and a line
 * in the request's uncached prompt tokens, a + b P (Huber). */
struct outside {
    size_t n;
    double median, median_se;
    bool line; /* the line was fitted (8 rows or more, prompts of more than one length) */
    double a, a_se, b, b_se;
};

/* y = a + b x over n points, reweighted by Huber's rule as regress does;
 * false when x takes one value or there are fewer than 3 points. */
static bool huber_line(const double *x, const double *y, size_t n, double *a, double *a_se,
                       double *b, double *b_se)
{
    if (n < 3)
        return false;
    double *w = malloc(n * sizeof *w), *res = malloc(n * sizeof *res);
    bool ok = w && res;
    for (size_t k = 0; ok && k < n; k++)
        w[k] = 1;
    double sw = 0, mx = 0, sxx = 0, s2 = 0;
    for (int it = 0; ok && it <= HUBER_ITERS; it++) {
        double sx = 0, sy = 0;
        sw = 0;
        for (size_t k = 0; k < n; k++) {
            sw += w[k];
            sx += w[k] * x[k];
            sy += w[k] * y[k];
        }
        mx = sx / sw;
        double my = sy / sw, sxy = 0;
        sxx = 0;
        for (size_t k = 0; k < n; k++) {
            sxx += w[k] * (x[k] - mx) * (x[k] - mx);
            sxy += w[k] * (x[k] - mx) * (y[k] - my);
        }
        if (sxx <= 0) {
            ok = false;
            break;
        }
        *b = sxy / sxx;
        *a = my - *b * mx;
        s2 = 0;
        for (size_t k = 0; k < n; k++) {
            double e = y[k] - *a - *b * x[k];
            res[k] = fabs(e);
            s2 += w[k] * e * e;
        }
        s2 /= (double)(n - 2);
        qsort(res, n, sizeof res[0], cmp_dbl);
        double scale = 1.4826 * res[n / 2];
        for (size_t k = 0; k < n && scale > 0; k++) {
            double e = fabs(y[k] - *a - *b * x[k]) / scale;
            w[k] = e > HUBER_K ? HUBER_K / e : 1;
        }
    }
    if (ok) {
        *b_se = sqrt(s2 / sxx);
        *a_se = sqrt(s2 * (1 / sw + mx * mx / sxx));
    }
    free(w);
    free(res);
    return ok;
}

/* llama-server's own prompt times, where most requests that found it idle
 * had them (its timings): their TTFT rows are the server's time from the
 * slot's start on the prompt to the first token, which holds neither the
 * client nor the work in front of the engine, so the prefill costs come
 * from them alone; the rows without are dropped. Returns whether. */
static bool prefill_from_ttft(const struct rows *rs, double *slope, double *se);

/* (The client's TTFT slope is read first, into *cl, *cl_slope, *cl_se:
 * beyond the server's own, it is the work in front of the engine; and
 * *o, the time outside the server's compute.) */
static bool prefill_rows_from_timings(struct rows *rs, bool *cl, double *cl_slope, double *cl_se,
                                      struct outside *o)
{
    size_t nttft = 0, nsrv = 0, k = 0;
    for (size_t i = 0; i < rs->n; i++) {
        nttft += rs->r[i].ttft;
        nsrv += rs->r[i].ttft && rs->r[i].srv;
    }
    if (nsrv < 8 || 2 * nsrv < nttft)
        return false;
    *cl = prefill_from_ttft(rs, cl_slope, cl_se);
    double out_ms[RESID_ROWS_MAX], tok[RESID_ROWS_MAX], sorted[RESID_ROWS_MAX];
    size_t nout = 0;
    for (size_t i = 0; i < rs->n; i++) {
        struct row *r = &rs->r[i];
        if (r->ttft && !r->srv)
            continue;
        if (r->ttft && nout < RESID_ROWS_MAX) {
            tok[nout] = r->x[C_PFTOK];
            out_ms[nout++] = r->y - r->srv_y;
        }
        if (r->ttft) {
            r->y = r->srv_y;
            r->x[C_CLIENT] = 0;
        } else {
            r->x[C_LOOP] = r->x[C_PFSEQ];
        }
        rs->r[k++] = *r;
    }
    rs->n = k;
    memset(o, 0, sizeof *o);
    o->n = nout;
    memcpy(sorted, out_ms, nout * sizeof sorted[0]);
    qsort(sorted, nout, sizeof sorted[0], cmp_dbl);
    o->median = nout ? sorted[nout / 2] : 0;
    if (nout >= 2) { /* the median's standard error, from the spread's robust scale */
        for (size_t i = 0; i < nout; i++)
            sorted[i] = fabs(out_ms[i] - o->median);
        qsort(sorted, nout, sizeof sorted[0], cmp_dbl);
        o->median_se = 1.2533 * 1.4826 * sorted[nout / 2] / sqrt((double)nout);
    }
    o->line = nout >= 8 && huber_line(tok, out_ms, nout, &o->a, &o->a_se, &o->b, &o->b_se);
    return true;
}

/* Invert the k x k symmetric positive definite matrix a in place
 * (Gauss-Jordan); returns false if it is singular. */
static bool invert(double *a, int k)
{
    double inv[NX * NX];
    for (int i = 0; i < k; i++)
        for (int j = 0; j < k; j++)
            inv[i * k + j] = i == j;
    for (int c = 0; c < k; c++) {
        int p = c;
        for (int i = c + 1; i < k; i++)
            if (fabs(a[i * k + c]) > fabs(a[p * k + c]))
                p = i;
        if (a[p * k + c] == 0)
            return false;
        for (int j = 0; j < k; j++) {
            double t = a[c * k + j];
            a[c * k + j] = a[p * k + j];
            a[p * k + j] = t;
            t = inv[c * k + j];
            inv[c * k + j] = inv[p * k + j];
            inv[p * k + j] = t;
        }
        double d = a[c * k + c];
        for (int j = 0; j < k; j++) {
            a[c * k + j] /= d;
            inv[c * k + j] /= d;
        }
        for (int i = 0; i < k; i++) {
            if (i == c)
                continue;
            double f = a[i * k + c];
            for (int j = 0; j < k; j++) {
                a[i * k + j] -= f * a[c * k + j];
                inv[i * k + j] -= f * inv[c * k + j];
            }
        }
    }
    memcpy(a, inv, (size_t)k * k * sizeof *a);
    return true;
}

static double *cost_field(struct lt_sim_profile *p, int c)
{
    switch (c) {
    case C_STEP:
        return &p->step_ms;
    case C_SEQ:
        return &p->step_ms_per_seq;
    case C_KV:
        return &p->decode_ms_per_kv_token;
    case C_PFSTEP:
        return &p->prefill_step_ms;
    case C_PFSEQ:
        return &p->prefill_ms_per_seq;
    case C_PFTOK:
        return &p->prefill_ms_per_token;
    default:
        return &p->cached_ms_per_token;
    }
}

static void residuals(const struct rows *rs, const double *beta, int ttft,
                      struct lt_sim_fit_resid *r, double *scratch)
{
    double ss = 0, sum = 0;
    size_t n = 0;
    for (size_t i = 0; i < rs->n; i++) {
        const struct row *w = &rs->r[i];
        if (w->ttft != ttft)
            continue;
        double f = 0;
        for (int c = 0; c < NX; c++)
            f += beta[c] * w->x[c];
        double y = w->y + w->shift; /* as observed */
        ss += (w->y - f) * (w->y - f);
        sum += y;
        scratch[n++] = fabs(w->y - f) / y;
    }
    memset(r, 0, sizeof *r);
    r->n = n;
    if (!n)
        return;
    r->rms_ms = sqrt(ss / (double)n);
    r->mean_ms = sum / (double)n;
    qsort(scratch, n, sizeof *scratch, cmp_dbl);
    r->p50_rel = scratch[n / 2];
    r->p90_rel = scratch[(size_t)(0.9 * (double)(n - 1))];
}

/* The normal equations of the rows, each weighted (Huber) by its residual
 * under beta against its kind's scale; beta NULL: every weight 1. */
static void normal_eq(const struct rows *rs, const double *beta, const double *scale,
                      double xtx[NX][NX], double *xty, double *yty)
{
    memset(xtx, 0, sizeof(double) * NX * NX);
    memset(xty, 0, sizeof(double) * NX);
    *yty = 0;
    for (size_t i = 0; i < rs->n; i++) {
        const struct row *w = &rs->r[i];
        double wt = 1;
        if (beta && scale[w->ttft] > 0) {
            double f = 0;
            for (int c = 0; c < NX; c++)
                f += beta[c] * w->x[c];
            double a = fabs(w->y - f) / scale[w->ttft];
            if (a > HUBER_K)
                wt = HUBER_K / a;
        }
        for (int a = 0; a < NX; a++) {
            xty[a] += wt * w->x[a] * w->y;
            for (int b = 0; b < NX; b++)
                xtx[a][b] += wt * w->x[a] * w->x[b];
        }
        *yty += wt * w->y * w->y;
    }
}

/* Solve for the kept columns. Costs are not negative: while one comes out
 * below zero (a column nearly collinear with others, fitted to noise),
 * drop the most negative relative to its standard error and solve again.
 * m gets the inverse of the kept columns' matrix. */
static bool solve(double xtx[NX][NX], const double *xty, int *keep, int *nk, double *beta,
                  double *m)
{
    for (;;) {
        int k = *nk;
        for (int a = 0; a < k; a++)
            for (int b = 0; b < k; b++)
                m[a * k + b] = xtx[keep[a]][keep[b]];
        if (!invert(m, k))
            return false;
        memset(beta, 0, sizeof(double) * NX);
        for (int a = 0; a < k; a++)
            for (int b = 0; b < k; b++)
                beta[keep[a]] += m[a * k + b] * xty[keep[b]];
        int worst = -1;
        double wt = 0;
        for (int a = 0; a < k; a++) {
            double t = beta[keep[a]] / sqrt(m[a * k + a]);
            /* a bend may be below the line */
            if (keep[a] != C_STEP && keep[a] < C_BEND && t < wt) {
                wt = t;
                worst = a;
            }
        }
        if (worst < 0)
            return true;
        memmove(keep + worst, keep + worst + 1, (size_t)(k - worst - 1) * sizeof keep[0]);
        (*nk)--;
    }
}

/* Each kind's robust scale of the residuals under beta: 1.4826 times the
 * median absolute residual (the standard deviation, were they normal). */
static void resid_scale(const struct rows *rs, const double *beta, double *scale, double *scratch)
{
    for (int kind = 0; kind < 2; kind++) {
        size_t n = 0;
        for (size_t i = 0; i < rs->n; i++) {
            const struct row *w = &rs->r[i];
            if (w->ttft != kind)
                continue;
            double f = 0;
            for (int c = 0; c < NX; c++)
                f += beta[c] * w->x[c];
            scratch[n++] = fabs(w->y - f);
        }
        scale[kind] = 0;
        if (n) {
            qsort(scratch, n, sizeof *scratch, cmp_dbl);
            scale[kind] = 1.4826 * scratch[n / 2];
        }
    }
}

/* Least squares over the rows, dropping columns the earlier ones explain,
 * then reweighted (Huber) so that the few rows a stalled client or a busy
 * machine moved by tens of milliseconds do not pull the costs: a live
 * fit's decode windows are mostly right to 0.1 % and a few are off by 10 %. */
static int regress(const struct rows *rs, const struct lt_sim_fit_opts *o, struct lt_sim_fit *out,
                   struct lt_err *err)
{
    enum { N = NX };
    double xtx[N][N], xty[N], yty;
    normal_eq(rs, NULL, NULL, xtx, xty, &yty);
    int keep[N], nk = 0;
    bool zero[N];
    for (int c = 0; c < N; c++) {
        zero[c] = xtx[c][c] == 0;
        if (zero[c])
            continue;
        /* The column's part the kept ones do not explain, relative to its
         * norm: its squared residual over its squared norm. */
        double m[(N + 1) * (N + 1)];
        int k = nk;
        for (int a = 0; a < k; a++)
            for (int b = 0; b < k; b++)
                m[a * k + b] = xtx[keep[a]][keep[b]];
        double rel = 1;
        if (k > 0 && invert(m, k)) {
            double proj = 0;
            for (int a = 0; a < k; a++)
                for (int b = 0; b < k; b++)
                    proj += xtx[c][keep[a]] * m[a * k + b] * xtx[keep[b]][c];
            rel = (xtx[c][c] - proj) / xtx[c][c];
        }
        if (rel > 1e-7)
            keep[nk++] = c;
    }
    if (rs->n == 0)
        return lt_errset(err, LT_EINVAL,
                         "sim --fit: no request is left to fit: the runs' requests were all set "
                         "aside (their windows crossed the edges of the segments they were read "
                         "in); replay a run of more requests");
    if (rs->n <= (size_t)nk)
        return lt_errset(err, LT_EINVAL,
                         "sim --fit: %zu request%s to tell %d costs apart: a fit needs more "
                         "requests than costs; each successful streamed request of 2 tokens or "
                         "more gives one (replay more requests)",
                         rs->n, rs->n == 1 ? "" : "s", nk);
    double m[N * N], beta[N];
    if (!solve(xtx, xty, keep, &nk, beta, m))
        return lt_errset(err, LT_EINVAL, "sim --fit: the steps do not determine the costs");
    double *scratch = malloc((rs->n ? rs->n : 1) * sizeof *scratch);
    if (!scratch)
        return lt_errset(err, LT_ENOMEM, "sim --fit: out of memory");
    for (int it = 0; it < HUBER_ITERS; it++) {
        double scale[2];
        resid_scale(rs, beta, scale, scratch);
        normal_eq(rs, beta, scale, xtx, xty, &yty);
        if (!solve(xtx, xty, keep, &nk, beta, m)) {
            free(scratch);
            return lt_errset(err, LT_EINVAL, "sim --fit: the steps do not determine the costs");
        }
    }
    double rss = yty;
    for (int a = 0; a < N; a++) {
        rss -= 2 * beta[a] * xty[a];
        for (int b = 0; b < N; b++)
            rss += beta[a] * xtx[a][b] * beta[b];
    }
    double s2 = fmax(rss, 0) / (double)(rs->n - (size_t)nk);
    out->profile = o->base;
    for (int c = 0; c < LT_SIM_FIT_NCOST; c++) {
        struct lt_sim_fit_param *p = &out->cost[c];
        p->key = cost_key[c];
        p->identified = false;
        p->se = 0;
        p->needs = cost_needs[c];
        double *f = cost_field(&out->profile, c);
        if (zero[c]) {
            p->value = *f; /* the data never exercised it: keep the base's */
            p->kept = true;
            continue;
        }
        int a = -1;
        for (int i = 0; i < nk; i++)
            if (keep[i] == c)
                a = i;
        if (a < 0) {
            p->value = 0; /* folded into the columns it cannot be told from */
            *f = 0;
            continue;
        }
        p->identified = true;
        p->value = beta[c];
        p->se = sqrt(s2 * m[a * nk + a]);
        *f = fmax(beta[c], 0);
    }
    /* The client's share of a TTFT: reported, never part of the profile;
     * 0 when it came out negative (the server's own TTFT explains it). */
    out->client_identified = xtx[C_CLIENT][C_CLIENT] > 0;
    for (int a = 0; a < nk; a++)
        if (keep[a] == C_CLIENT) {
            out->client_identified = true;
            out->client_ms = beta[C_CLIENT];
            out->client_se = sqrt(s2 * m[a * nk + a]);
        }
    out->loop_win_identified = false;
    out->loop_win_ms = out->loop_win_se = 0;
    for (int a = 0; a < nk; a++)
        if (keep[a] == C_LOOP) {
            out->loop_win_identified = true;
            out->loop_win_ms = beta[C_LOOP];
            out->loop_win_se = sqrt(s2 * m[a * nk + a]);
        }
    double bclamp[N] = {0};
    for (int c = 0; c < LT_SIM_FIT_NCOST; c++)
        bclamp[c] = out->cost[c].identified ? beta[c] : 0;
    bclamp[C_CLIENT] = out->client_ms;
    bclamp[C_LOOP] = out->loop_win_ms;
    for (int b = 0; b < LT_SIM_FIT_NBEND; b++) {
        out->bend[b] = out->bend_se[b] = 0;
        out->bend_identified[b] = false;
        for (int a = 0; a < nk; a++)
            if (keep[a] == C_BEND + b) {
                out->bend_identified[b] = true;
                out->bend[b] = bclamp[C_BEND + b] = beta[C_BEND + b];
                out->bend_se[b] = sqrt(s2 * m[a * nk + a]);
            }
    }
    residuals(rs, bclamp, 0, &out->decode, scratch);
    residuals(rs, bclamp, 1, &out->prefill, scratch);
    free(scratch);
    return 0;
}

/* The bends: the decode step's cost is the line step_ms + step_ms_per_seq
 * D plus a piecewise-linear part, 0 at a batch of 1 and at the largest
 * batch seen (max_batch), and free at each knot between (a batch size of
 * the active set). Knot j's column is its hat: 1 at j, falling to 0 at the
 * knots (or ends) either side, so a batch size that is no knot gets the
 * cost between its neighbours', not the line's. The rows hold each size's
 * step count (ind[]), from which the hats are summed. */
static double hat(const bool *active, uint32_t max_batch, uint32_t j, uint32_t d)
{
    uint32_t lo = j - 1, hi = j + 1;
    while (lo > 1 && !active[lo - 2])
        lo--;
    while (hi < max_batch && !active[hi - 2])
        hi++;
    if (d <= lo || d >= hi)
        return 0;
    return d <= j ? (double)(d - lo) / (j - lo) : (double)(hi - d) / (hi - j);
}

static void set_hats(struct rows *rs, const bool *active, uint32_t max_batch)
{
    for (size_t i = 0; i < rs->n; i++) {
        struct row *w = &rs->r[i];
        for (uint32_t j = 2; j < 2 + LT_SIM_FIT_NBEND; j++) {
            double x = 0;
            if (active[j - 2])
                for (uint32_t d = 2; d < max_batch && d < 2 + LT_SIM_FIT_NBEND; d++)
                    x += hat(active, max_batch, j, d) * w->ind[d - 2];
            w->x[C_BEND + j - 2] = x;
        }
    }
}

/* A knot needs this many steps of its size: the few that a closed loop at
 * a larger size passes through (its last requests, the steps beside a new
 * prompt) are noise on a loaded machine; a loop at that size gives
 * hundreds. */
#define BEND_MIN_STEPS 200

/* regress with the knots where steps of that size were seen, keeping only
 * those three standard errors from 0: the least sure one leaves (its
 * neighbours' hats widen over it) and the fit is made again, so that a line
 * in the batch stays a line and noise at one size does not become a cost. */
static int regress_bends(struct rows *rs, uint32_t max_batch, const struct lt_sim_fit_opts *o,
                         struct lt_sim_fit *out, struct lt_err *err)
{
    bool active[LT_SIM_FIT_NBEND] = {false};
    double seen[LT_SIM_FIT_NBEND] = {0}; /* a step of D decoders is in D windows */
    for (size_t i = 0; i < rs->n; i++)
        for (int b = 0; b < LT_SIM_FIT_NBEND; b++)
            seen[b] += rs->r[i].ind[b] / (b + 2);
    for (int b = 0; b < LT_SIM_FIT_NBEND; b++)
        active[b] = seen[b] >= BEND_MIN_STEPS;
    for (;;) {
        set_hats(rs, active, max_batch);
        int rc = regress(rs, o, out, err);
        if (rc < 0)
            return rc;
        int worst = -1;
        double wt = 3;
        for (int b = 0; b < LT_SIM_FIT_NBEND; b++) {
            if (!active[b])
                continue;
            double t = out->bend_se[b] > 0 ? fabs(out->bend[b]) / out->bend_se[b] : 0;
            if (!out->bend_identified[b] || t < wt) {
                wt = out->bend_identified[b] ? t : -1;
                worst = b;
            }
        }
        if (worst < 0)
            break;
        active[worst] = false;
    }
    /* A step of more decoders never costs less: a cost by batch size that
     * falls with the batch (beyond 5 %) is the runs' speeds differing (a
     * machine shared with other work), not the server's batch; the line
     * is kept, and the fit says so. */
    bool any = false;
    double prev = -INFINITY;
    bool falls = false;
    for (uint32_t d = 1; d <= max_batch && d <= LT_SIM_FIT_NBEND + 1; d++) {
        double c = out->profile.step_ms + out->profile.step_ms_per_seq * d;
        for (uint32_t j = 2; j < max_batch && j < 2 + LT_SIM_FIT_NBEND; j++)
            if (out->bend_identified[j - 2]) {
                any = true;
                c += out->bend[j - 2] * hat(out->bend_identified, max_batch, j, d);
            }
        falls |= c < 0.95 * prev;
        prev = fmax(prev, c);
    }
    out->bends_refused = any && falls;
    if (!out->bends_refused)
        return 0;
    memset(active, 0, sizeof active);
    set_hats(rs, active, max_batch);
    return regress(rs, o, out, err);
}

/* Each row's step counts by batch size into ind[], for the sizes strictly
 * between 1 and the largest batch seen (max_batch): the line goes through
 * the costs at those two (a bend at the largest size would be the line's
 * slope over again: a request's decode steps all have one decoder or
 * more). A largest batch beyond the bends' sizes leaves them all out: the
 * line holds such a server. */
static void take_bends(struct rows *rs, uint32_t max_batch)
{
    for (size_t i = 0; i < rs->n; i++)
        for (int b = 0; b < LT_SIM_FIT_NBEND; b++) {
            bool on =
                max_batch <= LT_SIM_FIT_NBEND + 1 && (uint32_t)b + 2 < max_batch; /* 0: none */
            rs->r[i].ind[b] = on ? (float)rs->r[i].x[C_BEND + b] : 0;
            rs->r[i].x[C_BEND + b] = 0;
        }
}

/* The prefill cost per prompt token from the TTFTs of requests that found
 * the server idle, against their uncached prompt tokens (a line, Huber
 * reweighted as regress does): a low load's TTFT is mostly the prefill, so
 * the slope is what the prompt's length costs. In the joint fit the decode
 * windows, hundreds of times longer, hold those tokens as a small share,
 * and on a real server's noise could turn the cost negative (and drop it)
 * while the TTFT grew plainly with the prompt. Returns false when the rows
 * cannot tell it: fewer than 8, prompts of one length, or a slope not
 * three standard errors above 0. */
static bool prefill_from_ttft(const struct rows *rs, double *slope, double *se)
{
    double x[RESID_ROWS_MAX], y[RESID_ROWS_MAX], a, a_se;
    size_t n = 0;
    for (size_t i = 0; i < rs->n && n < RESID_ROWS_MAX; i++)
        if (rs->r[i].ttft) {
            x[n] = rs->r[i].x[C_PFTOK];
            y[n++] = rs->r[i].y;
        }
    if (n < 8 || !huber_line(x, y, n, &a, &a_se, slope, se))
        return false;
    return *slope > 0 && *slope > 3 * *se;
}

/* The TTFTs at an idle server against their prompts as a curve, a + b P
 * + c Q (Q: the prefilled tokens' pairs with the prompt before them), Huber
 * reweighted: a prompt's attention makes a long one dearer per token.
 * Each row counts by its error relative to its time: a machine's speed
 * that varies (other work on it) stretches a prompt's time by a factor, so
 * a long prompt's error is as many milliseconds larger, and would hide the
 * curve in an ordinary fit (a real llama-server's 40 idle prompts, 30 to
 * 200 tokens on a loaded machine: the curve at 0.2 of its standard error
 * in milliseconds, 2.7 relative).
 * Returns true when c is three standard errors above 0 (b and c, their
 * standard errors, set), from 12 rows or more. */
static bool curve_fit(const struct rows *rs, int k, double *b, double *b_se, double *c,
                      double *c_se)
{
    double w[RESID_ROWS_MAX];
    size_t idx[RESID_ROWS_MAX];
    size_t n = 0;
    for (size_t i = 0; i < rs->n && n < RESID_ROWS_MAX; i++)
        if (rs->r[i].ttft && rs->r[i].y > 0)
            idx[n++] = i;
    if (n < 12)
        return false;
    for (size_t j = 0; j < n; j++)
        w[j] = 1;
    double beta[3] = {0}, m[9], s2 = 0;
    const int nb = k == 3; /* 1: P has a column (then Q is the third) */
    for (int it = 0; it <= HUBER_ITERS; it++) {
        double xtx[9] = {0}, xty[3] = {0};
        for (size_t j = 0; j < n; j++) {
            const struct row *r = &rs->r[idx[j]];
            double x[3] = {1, r->x[C_PFTOK], r->pairs}, wr = w[j] / (r->y * r->y);
            if (k == 2)
                x[1] = r->pairs;
            for (int a = 0; a < k; a++) {
                xty[a] += wr * x[a] * r->y;
                for (int d = 0; d < k; d++)
                    xtx[a * k + d] += wr * x[a] * x[d];
            }
        }
        memcpy(m, xtx, sizeof m);
        if (!invert(m, k))
            return false;
        for (int a = 0; a < k; a++) {
            beta[a] = 0;
            for (int d = 0; d < k; d++)
                beta[a] += m[a * k + d] * xty[d];
        }
        s2 = 0;
        double e[RESID_ROWS_MAX];
        for (size_t j = 0; j < n; j++) {
            const struct row *r = &rs->r[idx[j]];
            double f = beta[0] + (k == 3 ? beta[1] * r->x[C_PFTOK] : 0) + beta[1 + nb] * r->pairs;
            double d = (r->y - f) / r->y;
            e[j] = fabs(d);
            s2 += w[j] * d * d;
        }
        s2 /= (double)(n - (size_t)k);
        double sorted[RESID_ROWS_MAX];
        memcpy(sorted, e, n * sizeof e[0]);
        qsort(sorted, n, sizeof sorted[0], cmp_dbl);
        double scale = 1.4826 * sorted[n / 2];
        for (size_t j = 0; j < n && scale > 0; j++)
            w[j] = e[j] / scale > HUBER_K ? HUBER_K / (e[j] / scale) : 1;
    }
    *b = k == 3 ? beta[1] : 0;
    *b_se = k == 3 ? sqrt(s2 * m[4]) : 0;
    *c = beta[1 + nb];
    *c_se = sqrt(s2 * m[(1 + nb) * k + 1 + nb]);
    return *c > 0 && *c > CURVE_T * *c_se;
}

/* The curve a + b P + c Q; where its b comes out below 0 (a cost per
 * token no server has: the curve took the line's part too), the curve at
 * b = 0, a + c Q. */
static bool prefill_curve(const struct rows *rs, double *b, double *b_se, double *c, double *c_se)
{
    bool ok = curve_fit(rs, 3, b, b_se, c, c_se);
    if (*b > 0 || !(*c > 0))
        return ok && *b > 0;
    return curve_fit(rs, 2, b, b_se, c, c_se);
}

/* Take the slope's (and the curve's) share out of every row, so the joint
 * fit fits the rest. */
static void remove_prefill(struct rows *rs, double slope, double ctx)
{
    for (size_t i = 0; i < rs->n; i++) {
        rs->r[i].y -= slope * rs->r[i].x[C_PFTOK] + ctx * rs->r[i].pairs;
        rs->r[i].shift += slope * rs->r[i].x[C_PFTOK] + ctx * rs->r[i].pairs;
        rs->r[i].x[C_PFTOK] = 0;
    }
}

static void mark_prefill(struct lt_sim_fit *out, double slope, double se)
{
    struct lt_sim_fit_param *p = &out->cost[C_PFTOK];
    p->identified = true;
    p->kept = false;
    p->value = slope;
    p->se = se;
    *cost_field(&out->profile, C_PFTOK) = slope;
}

/* The profile's step_ms_by_batch from the bends that were identified: the
 * line plus the knots' hats at each batch size up to the largest seen (a
 * larger batch goes on along the line from there). */
static void set_by_batch(struct lt_sim_fit *out)
{
    struct lt_sim_profile *p = &out->profile;
    out->bent = false;
    p->n_step_ms_by_batch = 0;
    for (int b = 0; b < LT_SIM_FIT_NBEND; b++)
        out->bent |= out->bend_identified[b];
    uint32_t n = out->max_batch;
    if (!out->bent || n < 3 || n > LT_SIM_FIT_NBEND + 1)
        return;
    for (uint32_t d = 1; d <= n; d++) {
        double c = p->step_ms + p->step_ms_per_seq * d;
        for (uint32_t j = 2; j < n; j++)
            if (out->bend_identified[j - 2])
                c += out->bend[j - 2] * hat(out->bend_identified, n, j, d);
        p->step_ms_by_batch[d - 1] = fmax(c, 0);
    }
    p->n_step_ms_by_batch = n;
}

static void run_free(struct run_data *rd)
{
    free(rd->req);
    free(rd->tok);
    memset(rd, 0, sizeof *rd);
}

/* llama.cpp's counters, as replay --server-metrics-keep records them. */
static const char *const lcpp_series[6] = {
    "llamacpp:prompt_tokens_total",    "llamacpp:prompt_seconds_total",
    "llamacpp:tokens_predicted_total", "llamacpp:tokens_predicted_seconds_total",
    "llamacpp:n_decode_total",         "llamacpp:n_busy_slots_per_decode",
};

/* One scrape sample of a run: its llama.cpp counters, when all are there. */
static void read_scrape(struct runinfo *r, const struct lt_scrape *sc)
{
    double v[6];
    int got = 0;
    for (int k = 0; k < 6; k++)
        for (uint32_t i = 0; i < sc->nraw; i++)
            if (sc->raw[i].name && !strcmp(sc->raw[i].name, lcpp_series[k]) &&
                isfinite(sc->raw[i].v) && sc->raw[i].v >= 0) {
                v[k] = sc->raw[i].v;
                got++;
                break;
            }
    if (got < 6)
        return;
    if (r->msamples++ == 0)
        memcpy(r->mfirst, v, sizeof v);
    memcpy(r->mlast, v, sizeof v);
}

/* The run's counters between its first and last sample, in model time. */
static void run_metrics(struct lt_sim_fit_run *fr, const struct runinfo *r, double scale)
{
    double d[6];
    for (int k = 0; k < 6; k++)
        d[k] = r->mlast[k] - r->mfirst[k];
    if (r->msamples < 2 || d[0] < 1 || d[1] < 0 || d[2] < 0 || d[3] < 0 || d[4] < 0)
        return;
    fr->has_metrics = true;
    fr->m_prompt_tokens = (uint64_t)d[0];
    fr->m_prefill_ms_per_token = d[1] * 1e3 * scale / d[0];
    fr->m_gen_ms_per_token = d[2] > 0 ? d[3] * 1e3 * scale / d[2] : 0;
    fr->m_decodes = (uint64_t)d[4];
    /* the gauge is busy slots over decode calls since the start */
    double busy = r->mlast[5] * r->mlast[4] - r->mfirst[5] * r->mfirst[4];
    fr->m_busy_per_decode = d[4] > 0 && busy > 0 ? busy / d[4] : 0;
}

/* The run (file, id) among those read, added when new; NULL: no memory. */
static struct runinfo *run_of(struct runinfo **ri, size_t *n, uint32_t file, uint32_t id)
{
    for (size_t k = *n; k-- > 0;)
        if ((*ri)[k].file == file && (*ri)[k].id == id)
            return &(*ri)[k];
    struct runinfo *nr = realloc(*ri, (*n + 1) * sizeof *nr);
    if (!nr)
        return NULL;
    *ri = nr;
    struct runinfo *r = &nr[(*n)++];
    memset(r, 0, sizeof *r);
    r->file = file;
    r->id = id;
    r->trace_hit = -1;
    return r;
}

static uint32_t u32_of(const struct lt_extra *x, const char *key)
{
    int64_t v;
    return lt_extra_get_int(x, key, &v) && v > 0 && v <= UINT32_MAX ? (uint32_t)v : 0;
}

/* What replay recorded in the run record: the server's word, the cache
 * state the run started from, the prefix-cache hit rate its trace allows. */
static void read_run_record(struct runinfo *r, const struct lt_run *run, double scale)
{
    const struct lt_extra *x = &run->extra;
    struct lt_sim_fit_word *w = &r->word;
    lt_extra_get_str(x, "server_kind", w->kind, sizeof w->kind);
    lt_extra_get_str(x, "server_model", w->model, sizeof w->model);
    w->slots = u32_of(x, "server_slots");
    w->ctx = u32_of(x, "server_ctx");
    w->vocab = u32_of(x, "server_vocab");
    w->rtt_ms = u32_of(x, "client_rtt_us") * scale / 1e3;
    r->concurrency = run->concurrency;
    r->has_word = w->kind[0] || w->model[0] || w->slots || w->vocab || w->rtt_ms > 0;
    lt_extra_get_str(x, "cache_state", r->cache_state, sizeof r->cache_state);
    int64_t ppm;
    if (lt_extra_get_int(x, "trace_prefix_hit_ppm", &ppm) && ppm >= 0 && ppm <= 1000000)
        r->trace_hit = (double)ppm / 1e6;
}

/* Class each run before fitting: backlogged when more requests were in
 * flight on average than the server says it runs at once (its slots: a
 * queue stood in front of it, and the costs are read through it); client-
 * starved when its self-check says the client used 90 % or more of a core
 * or delivered a load more than 5 % off the one asked; else stable. The
 * costs come from the stable and the client-starved runs (the fit reads
 * when each request was sent and each token arrived, not the schedule, and
 * its reweighting takes the few windows a stalled client moved), the
 * backlogged ones only when there is nothing else, and then the fit is
 * labelled a guess. Without the server's word on its slots a queue is not
 * told from a batch by this test (the limit's own test in the fit is). */
static void class_runs(struct runinfo *ri, size_t n, struct lt_sim_fit *out)
{
    size_t fed = 0;
    for (size_t k = 0; k < n; k++) {
        struct runinfo *r = &ri[k];
        uint32_t slots = r->word.slots;
        r->cls = "stable";
        snprintf(r->why, sizeof r->why, "%.1f requests in flight on average%s", r->mean_inflight,
                 slots ? "" : "; the server gave no slots to hold it against");
        if (slots && r->mean_inflight > 1.05 * slots) {
            r->cls = "backlogged";
            snprintf(r->why, sizeof r->why,
                     "%.1f requests in flight on average for the server's %u slots: requests "
                     "queued",
                     r->mean_inflight, slots);
        } else if (r->has_check && (r->check_saturated || r->check_off)) {
            r->cls = "client-starved";
            snprintf(r->why, sizeof r->why, "its self-check: %s; used, its sends as they were",
                     r->check_saturated ? "the client used 90 % or more of a core"
                                        : "the load delivered was more than 5 % off the load "
                                          "asked for");
        }
        fed += r->cls[0] != 'b';
    }
    for (size_t k = 0; k < n; k++)
        ri[k].used = fed ? ri[k].cls[0] != 'b' : true;
    out->guess = fed == 0;
}

/* The fewest and most uncached prompt tokens of the idle TTFT rows (the
 * prefill's cost and curve are fitted on them). */
static void prompt_range(const struct rows *rs, struct lt_sim_fit *out)
{
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; i < rs->n; i++)
        if (rs->r[i].ttft) {
            lo = fmin(lo, rs->r[i].x[C_PFTOK]);
            hi = fmax(hi, rs->r[i].x[C_PFTOK]);
        }
    out->pf_tokens_min = hi > 0 ? (uint32_t)lo : 0;
    out->pf_tokens_max = (uint32_t)hi;
}

/* Less than this outside the compute is not told from the client's and
 * the kernel's own variation (split_outside). */
#define OUTSIDE_FLOOR_MS 0.5

/* The time outside the server's compute at an idle server, less the
 * client's own round trip (which bounds the client's share), split in two
 * by the decode windows: llama-server's one main loop takes each new task
 * between two steps, so whatever of that time is the loop's holds up every
 * other slot (the windows' C_LOOP column: loop_ms_per_request, which the
 * twin adds to the step that admits the request); the rest is spent beside
 * the loop (HTTP, template and tokenizing in the server's other threads:
 * front_ms_per_request, which delays only that request). */
static void split_outside(const struct outside *ot, struct lt_sim_fit *out)
{
    out->outside_ms = ot->median;
    double rtt = out->word.rtt_ms;
    if (rtt <= 0 || ot->n < 8)
        return; /* the client's share cannot be told from the server's */
    bool line = out->front_identified && ot->line;
    double v = (line ? ot->a : ot->median) - rtt, se = line ? ot->a_se : ot->median_se;
    /* and beyond one more round trip and OUTSIDE_FLOOR_MS: a loaded
     * client's delivery of the first chunk varies by about that much, and
     * a few tenths of a millisecond in front of the engine move a virtual
     * closed loop's arrivals from one side of a step's start to the other
     * (a sim with none beside its loop measured 0.37 ms +- 0.02 over a
     * 0.2 ms round trip, and taking it moved a held-out C = 2's TPOT by
     * 14 %, in every other run as the round trip varied) */
    if (!(v > 3 * se && v > rtt && v > OUTSIDE_FLOOR_MS))
        return;
    out->outside_identified = true;
    out->outside_server_ms = v;
    out->outside_server_se = se;
    double serial = 0;
    if (out->loop_win_identified && out->loop_win_ms > 3 * out->loop_win_se)
        serial = fmin(out->loop_win_ms, v);
    out->loop_identified = serial > 0;
    out->loop_ms = serial;
    out->front_fixed_ms = v - serial;
}

/* Keep the rows of the runs used. */
static void keep_used_rows(struct rows *rs, const struct runinfo *ri)
{
    size_t k = 0;
    for (size_t i = 0; i < rs->n; i++)
        if (ri[rs->r[i].run].used)
            rs->r[k++] = rs->r[i];
    rs->n = k;
}

/* The prompt tokens the server reported cached against what the run's
 * trace allows from a cold start: a run that started from a cache warmed
 * by an earlier one (the same trace replayed twice) finds far more; a
 * quarter of the prompt is the margin (a chat template's common start is
 * cached in every run). */
static void cache_check(struct lt_sim_fit_run *fr, const struct runinfo *r)
{
    fr->cached_share = r->in_sum ? (double)r->cached_sum / (double)r->in_sum : 0;
    fr->trace_hit = r->trace_hit;
    fr->cache_warm = r->trace_hit >= 0 ? fr->cached_share > r->trace_hit + 0.25
                                       : !strncmp(r->cache_state, "warm", 4);
}

/* A new segment, after prev (NO_SEG: the run's first); its index, or -1
 * when out of memory. */
static int64_t seg_new(struct segs *sg, uint32_t prev)
{
    if (sg->n == sg->cap) {
        size_t nc = sg->cap ? 2 * sg->cap : 16;
        struct seg *ns = realloc(sg->s, nc * sizeof *ns);
        if (!ns)
            return -1;
        sg->s = ns;
        sg->cap = nc;
    }
    sg->s[sg->n] = (struct seg){INT64_MAX, INT64_MIN, prev, NO_SEG};
    if (prev != NO_SEG)
        sg->s[prev].next = (uint32_t)sg->n;
    return (int64_t)sg->n++;
}

/* Keep the decodes of a segment of a closed loop at 1. LT_ENOMEM or 0. */
static int speed_add(struct runinfo *r, const struct run_data *rd, double scale)
{
    for (size_t i = 0; i < rd->nreq && r->nsobs < SPEED_MAX_OBS; i++) {
        const struct freq *q = &rd->req[i];
        if (q->ntok < SPEED_MIN_GAPS + 1)
            continue;
        const int64_t *t = &rd->tok[q->off];
        uint32_t n = q->ntok - 1, h = n / 2;
        struct speed_obs o = {(double)(t[h] - t[0]) / 1e3 * scale,
                              (double)(t[2 * h] - t[h]) / 1e3 * scale,
                              (double)(t[n] - t[0]) / 1e3 * scale, q->in, n};
        if (o.d1_ms <= 0 || o.d2_ms <= 0)
            continue;
        if (r->nsobs == r->capsobs) {
            size_t nc = r->capsobs ? 2 * r->capsobs : 256;
            struct speed_obs *no = realloc(r->sobs, nc * sizeof *no);
            if (!no)
                return LT_ENOMEM;
            r->sobs = no;
            r->capsobs = nc;
        }
        r->sobs[r->nsobs++] = o;
    }
    return 0;
}

/* The correlation of two adjacent means over h of a stationary process of
 * correlation exp(-t / tau), x = h / tau; and the variance of a mean over
 * d, over the process's, x = d / tau. */
static double ou_adjacent(double x)
{
    return (1 - exp(-x)) * (1 - exp(-x)) / (2 * (x - 1 + exp(-x)));
}

static double ou_mean_var(double x)
{
    return 2 * (x - 1 + exp(-x)) / (x * x);
}

/* The correlation of adjacent halves pooled over the decodes read (each
 * a decode of its own length), for a process of correlation time tau ms;
 * *g (if not NULL): the variance of a whole decode's mean, over the
 * process's, averaged over them. */
static double pooled(const struct runinfo *ri, size_t nri, double tau, double *g)
{
    double c = 0, v = 0, w = 0;
    uint64_t n = 0;
    for (size_t k = 0; k < nri; k++)
        for (size_t i = 0; ri[k].used && i < ri[k].nsobs; i++) {
            double d = ri[k].sobs[i].d_ms, x = d / 2 / tau;
            double vh = ou_mean_var(x);
            c += ou_adjacent(x) * vh;
            v += vh;
            w += ou_mean_var(d / tau);
            n++;
        }
    if (g)
        *g = n ? w / (double)n : 0;
    return v > 0 ? c / v : 0;
}

/* What the fitted profile says gaps from + 1 to + n of a decode after a
 * prompt of p tokens take at a batch of 1 (each token's step attends to
 * the context before it). */
static double model_gaps_ms(const struct lt_sim_profile *pr, uint32_t p, uint32_t from, uint32_t n)
{
    double ctx = (double)n * p + (double)n * from + (double)n * (n + 1) / 2;
    return n * lt_sim_profile_decode_ms(pr, 1) + pr->decode_ms_per_kv_token * ctx;
}

/* The speed's process from the closed loops at 1 that were used, each
 * decode against the fitted profile (so that a longer context's dearer
 * steps are not taken for a slow spell): its correlation time from how
 * alike a decode's two halves are (a speed that wanders slowly against a
 * decode's length makes them alike), its spread from how the decodes'
 * means differ, given that time. Identified when enough decodes were read
 * and the halves' correlation is two of its standard errors above 0. */
static void speed_pool(const struct runinfo *ri, size_t nri, struct lt_sim_fit *out)
{
    /* sums of x, y, m (the logs of the halves' and the whole's time over
     * the profile's) and the prompt p, and of their products */
    double sx = 0, sy = 0, sm = 0, sp = 0, sxx = 0, syy = 0, smm = 0, spp = 0;
    double sxy = 0, sxp = 0, syp = 0, smp = 0, sd = 0;
    uint64_t n = 0;
    const struct lt_sim_profile *pr = &out->profile;
    for (size_t k = 0; k < nri; k++)
        for (size_t i = 0; ri[k].used && i < ri[k].nsobs; i++) {
            const struct speed_obs *o = &ri[k].sobs[i];
            uint32_t h = o->gaps / 2;
            double e1 = model_gaps_ms(pr, o->prompt, 0, h), e2 = model_gaps_ms(pr, o->prompt, h, h);
            double e = model_gaps_ms(pr, o->prompt, 0, o->gaps);
            if (e1 <= 0 || e2 <= 0 || e <= 0)
                continue;
            double x = log(o->d1_ms / e1), y = log(o->d2_ms / e2), m = log(o->d_ms / e);
            double p = o->prompt;
            sx += x;
            sy += y;
            sm += m;
            sp += p;
            sxx += x * x;
            syy += y * y;
            smm += m * m;
            spp += p * p;
            sxy += x * y;
            sxp += x * p;
            syp += y * p;
            smp += m * p;
            sd += o->d_ms;
            n++;
        }
    out->speed_n = n;
    if (n < SPEED_MIN_REQS)
        return;
    /* Covariances given the prompt's length: what the profile's cost of a
     * longer context leaves (its fit is least sure of it) is not a spell. */
    double nn = (double)n;
    double vp = spp - sp * sp / nn;
    double cxp = sxp - sx * sp / nn, cyp = syp - sy * sp / nn, cmp = smp - sm * sp / nn;
    double kp = vp > 0 ? 1 / vp : 0;
    double vxx = sxx - sx * sx / nn - cxp * cxp * kp, vyy = syy - sy * sy / nn - cyp * cyp * kp;
    double cxy = sxy - sx * sy / nn - cxp * cyp * kp;
    double vm = (smm - sm * sm / nn - cmp * cmp * kp) / (nn - 2);
    if (vxx <= 0 || vyy <= 0 || vm <= 0)
        return;
    double rho = cxy / sqrt(vxx * vyy);
    out->speed_rho = rho;
    out->speed_req_sd = sqrt(vm);
    out->speed_decode_ms = sd / nn;
    if (rho <= 2 * (1 - rho * rho) / sqrt(nn - 1) || rho >= 1)
        return;
    /* The time whose process gives the pooled correlation seen, over these
     * decodes' own lengths (a mean length would bias it: the correlation is
     * not a line in the length), and the spread that gives their means'. */
    double lo = out->speed_decode_ms * 1e-3, hi = out->speed_decode_ms * 1e3;
    for (int i = 0; i < 60; i++) { /* the correlation grows with the time */
        double mid = sqrt(lo * hi);
        if (pooled(ri, nri, mid, NULL) < rho)
            lo = mid;
        else
            hi = mid;
    }
    double tau = sqrt(lo * hi), g = 0;
    pooled(ri, nri, tau, &g);
    double cv = fmin(sqrt(vm / g), 2);
    if (cv < SPEED_MIN_CV) /* steady for any figure a twin gives */
        return;
    out->speed_identified = true;
    out->speed_tau_ms = tau;
    out->speed_cv = cv;
}

/* Fit the requests of a run read so far as one segment and free them. */
static int fit_segment(struct run_data *rd, uint32_t file, uint32_t id,
                       const struct lt_sim_fit_opts *o, struct runinfo **ri, size_t *nri,
                       struct rows *rs, struct limits *lim, struct segs *sg, struct lt_sim_fit *out)
{
    struct seg *g = &sg->s[rd->seg];
    for (size_t i = 0; i < rd->nreq; i++) {
        g->min_sent = rd->req[i].sent < g->min_sent ? rd->req[i].sent : g->min_sent;
        g->max_end = rd->req[i].end > g->max_end ? rd->req[i].end : g->max_end;
    }
    out->requests += rd->nreq;
    out->tokens += rd->ntok;
    if (rd->nreq > out->held_max)
        out->held_max = rd->nreq;
    out->segments++;
    struct runinfo *x = run_of(ri, nri, file, id);
    int rc = x ? 0 : LT_ENOMEM;
    if (x && x->concurrency == 1)
        rc = speed_add(x, rd, o->time_scale > 0 ? o->time_scale : 1);
    if (rc == 0)
        rc = fit_run(rd, o, (uint32_t)(x - *ri), x, rs, lim, out);
    uint32_t seg = rd->seg;
    run_free(rd);
    rd->seg = seg;
    return rc;
}

/* Drop the rows whose window reaches into the segment before or after
 * theirs: that segment's tokens were not counted in them. */
static void drop_cut_rows(struct rows *rs, const struct segs *sg, struct lt_sim_fit *out)
{
    size_t k = 0;
    for (size_t i = 0; i < rs->n; i++) {
        const struct row *w = &rs->r[i];
        const struct seg *g = &sg->s[w->seg];
        bool cut = (g->prev != NO_SEG && w->w0 < sg->s[g->prev].max_end) ||
                   (g->next != NO_SEG && w->w1 > sg->s[g->next].min_sent);
        if (cut)
            out->rows_cut++;
        else
            rs->r[k++] = *w;
    }
    rs->n = k;
}

int lt_sim_fit_files(const char *const *paths, int n, const struct lt_sim_fit_opts *o,
                     struct lt_sim_fit *out, struct lt_err *err)
{
    int rc = 0;
    memset(out, 0, sizeof *out);
    const double scale = o->time_scale > 0 ? o->time_scale : 1;
    /* 0 is the default (1). Beyond a million either way the costs leave
     * the range a profile holds (a step of an hour, or all of them 0). */
    if (!(o->time_scale >= 0) || o->time_scale > 1e6 || isinf(o->time_scale) ||
        (o->time_scale > 0 && o->time_scale < 1e-6))
        return lt_errset(err, LT_EINVAL,
                         "sim --fit: --time-scale %g cannot be: the server ran between a "
                         "millionth of and a million times real time (sim --time-scale)",
                         o->time_scale);
    struct rows rs = {0};
    struct segs sg = {0};
    struct limits lim = {0};
    lim.cap = 1u << 20;
    lim.queued_full = calloc(lim.cap, sizeof *lim.queued_full);
    lim.queued_at_prefill = calloc(lim.cap, sizeof *lim.queued_at_prefill);
    /* Runs by id within a file; a file's runs are read in one pass. */
    struct run_data *runs = NULL;
    uint32_t *run_ids = NULL;
    size_t nruns = 0;
    struct runinfo *ri = NULL;
    size_t nri = 0;
    uint64_t results = 0, unstreamed = 0, failed = 0, short_ = 0;
    struct lt_reader *r = NULL;
    if (!lim.queued_full || !lim.queued_at_prefill) {
        rc = lt_errset(err, LT_ENOMEM, "sim --fit: out of memory");
        goto out;
    }
    for (int f = 0; f < n; f++) {
        r = lt_reader_open_kind(paths[f], LT_KIND_RESULTS, NULL, err);
        if (!r) {
            rc = err ? err->code : LT_EIO;
            if (rc >= 0)
                rc = LT_EIO;
            goto out;
        }
        out->files++;
        const struct lt_item *it;
        while ((rc = lt_reader_next(r, &it, err)) > 0) {
            if (it->type == LT_ITEM_SCRAPE) {
                struct runinfo *x = run_of(&ri, &nri, (uint32_t)f, it->scr.run);
                if (!x) {
                    rc = lt_errset(err, LT_ENOMEM, "sim --fit: out of memory");
                    goto out;
                }
                if (!it->scr.err)
                    read_scrape(x, &it->scr);
                continue;
            }
            if (it->type == LT_ITEM_RUN || it->type == LT_ITEM_CHECK) {
                uint32_t id = it->type == LT_ITEM_RUN ? it->run.id : it->chk.run;
                struct runinfo *x = run_of(&ri, &nri, (uint32_t)f, id);
                if (!x) {
                    rc = lt_errset(err, LT_ENOMEM, "sim --fit: out of memory");
                    goto out;
                }
                if (it->type == LT_ITEM_RUN) {
                    read_run_record(x, &it->run, scale);
                } else {
                    x->has_check = true;
                    x->check_saturated = it->chk.saturated;
                    x->check_off = it->chk.off;
                }
                continue;
            }
            if (it->type != LT_ITEM_RESULT)
                continue;
            const struct lt_result *res = &it->res;
            results++;
            if (!(res->has & LT_RHAS_CHUNKS) || !res->n_chunks || !(res->has & LT_RHAS_SENT))
                unstreamed++;
            else if ((res->has & LT_RHAS_STATUS) && res->status != 200)
                failed++;
            else if (res->n_chunks < 2 && res->chunks[0].tokens < 2)
                short_++;
            size_t k = 0;
            while (k < nruns && run_ids[k] != res->run)
                k++;
            if (k == nruns) {
                struct run_data *nr = realloc(runs, (nruns + 1) * sizeof *nr);
                uint32_t *ni = nr ? realloc(run_ids, (nruns + 1) * sizeof *ni) : NULL;
                if (nr)
                    runs = nr;
                if (!nr || !ni) {
                    rc = lt_errset(err, LT_ENOMEM, "sim --fit: out of memory");
                    goto out;
                }
                run_ids = ni;
                memset(&runs[nruns], 0, sizeof runs[nruns]);
                int64_t g = seg_new(&sg, NO_SEG);
                if (g < 0) {
                    rc = lt_errset(err, LT_ENOMEM, "sim --fit: out of memory");
                    goto out;
                }
                runs[nruns].seg = (uint32_t)g;
                run_ids[nruns++] = res->run;
            }
            rc = add_result(&runs[k], res);
            if (rc < 0) {
                lt_errset(err, rc, "sim --fit: out of memory");
                goto out;
            }
            if (runs[k].nreq >= SEG_REQ || runs[k].ntok >= SEG_TOK) {
                rc = fit_segment(&runs[k], (uint32_t)f, run_ids[k], o, &ri, &nri, &rs, &lim, &sg,
                                 out);
                int64_t g = rc < 0 ? -1 : seg_new(&sg, runs[k].seg);
                if (g < 0) {
                    rc = lt_errset(err, LT_ENOMEM, "sim --fit: out of memory");
                    goto out;
                }
                runs[k].seg = (uint32_t)g;
            }
        }
        if (rc < 0)
            goto out;
        lt_reader_close(r);
        r = NULL;
        for (size_t k = 0; k < nruns; k++) {
            rc = runs[k].nreq ? fit_segment(&runs[k], (uint32_t)f, run_ids[k], o, &ri, &nri, &rs,
                                            &lim, &sg, out)
                              : 0;
            run_free(&runs[k]);
            if (rc < 0) {
                lt_errset(err, rc, "sim --fit: out of memory");
                goto out;
            }
        }
        out->runs += nruns;
        nruns = 0;
    }
    if (rs.n == 0) {
        rc = lt_errset(err, LT_EINVAL,
                       "sim --fit: nothing to fit: of %llu results, %llu have no streamed token "
                       "times (replay streams by default: not --no-stream), %llu failed, %llu "
                       "have fewer than 2 tokens; the fit needs successful streamed requests of "
                       "2 tokens or more",
                       (unsigned long long)results, (unsigned long long)unstreamed,
                       (unsigned long long)failed, (unsigned long long)short_);
        goto out;
    }
    /* Cached tokens about the same in most prompts (80 % of them within 2
     * tokens or 10 % of the median): their column is a per-prompt count in
     * disguise, and would take the per-prompt costs (a real llama-server
     * gave 41 ms a cached token from the template's 17 cached tokens,
     * 0 in each slot's first prompt). */
    if (out->requests > 0) {
        double m = out->cached_mean / (double)out->requests;
        double v = out->cached_sd / (double)out->requests - m * m;
        out->cached_mean = m;
        out->cached_sd = v > 0 ? sqrt(v) : 0;
        uint64_t half = (out->requests + 1) / 2, acc = 0;
        uint32_t med = 0;
        while (med < CACHED_HIST && (acc += lim.cached_hist[med]) < half)
            med++;
        uint32_t tol = med / 10 > 2 ? med / 10 : 2, near = 0;
        for (uint32_t c = med > tol ? med - tol : 0; c <= med + tol && c < CACHED_HIST; c++)
            near += lim.cached_hist[c];
        out->cached_same = med >= 1 && med < CACHED_HIST && near >= 0.8 * (double)out->requests;
        out->cached_median = out->cached_same ? med : 0;
        if (out->cached_same)
            for (size_t i = 0; i < rs.n; i++)
                rs.r[i].x[C_CACHED] = 0;
    }
    out->rows_offered = rs.seen;
    out->rows_stride = rs.stride;
    out->rows_kept = rs.n;
    drop_cut_rows(&rs, &sg, out);
    class_runs(ri, nri, out);
    keep_used_rows(&rs, ri);
    for (size_t k = 0; k < nri; k++)
        if (ri[k].has_word && !out->word.kind[0] && !out->word.slots) {
            out->word = ri[k].word;
            break;
        }
    double cl_slope = 0, cl_se = 0;
    bool cl = false;
    struct outside ot = {0};
    out->prefill_from_timings = prefill_rows_from_timings(&rs, &cl, &cl_slope, &cl_se, &ot);
    const double outside = ot.median;
    prompt_range(&rs, out);
    double pf_slope = 0, pf_se = 0;
    bool pf = prefill_from_ttft(&rs, &pf_slope, &pf_se);
    const double line_slope = pf_slope; /* the line's, like with the client's line */
    /* A curve, where the TTFTs bend up with the prompt: its linear part is
     * the slope, and the prompts' mean pairs per token (of the TTFT rows)
     * say what of the counters' cost per token the curve holds. */
    double cb = 0, cb_se = 0, cc = 0, cc_se = 0, pairs_per_token = 0;
    bool curve = prefill_curve(&rs, &cb, &cb_se, &cc, &cc_se);
    out->ctx_try_ms = cc;
    out->ctx_try_se = cc_se;
    if (curve) {
        pf = true;
        pf_slope = cb;
        pf_se = cb_se;
        out->ctx_identified = true;
        out->ctx_ms = cc;
        out->ctx_se = cc_se;
        double sp = 0, sq = 0;
        for (size_t i = 0; i < rs.n; i++)
            if (rs.r[i].ttft) {
                sp += rs.r[i].x[C_PFTOK];
                sq += rs.r[i].pairs;
            }
        pairs_per_token = sp > 0 ? sq / sp : 0;
    }
    out->ttft_slope_identified = pf;
    out->ttft_slope = pf_slope;
    out->ttft_slope_se = pf_se;
    /* With the server's timings the TTFT rows hold no front: what the
     * client's TTFT slope has beyond the server's is its front per token. */
    if (out->prefill_from_timings && pf && cl && cl_slope - line_slope > 2 * cl_se) {
        out->front_identified = true;
        out->front_ms_per_token = cl_slope - line_slope;
        out->ttft_slope = cl_slope;
        out->ttft_slope_se = cl_se;
    }
    /* The server's own prompt time per token, where it counted it (runs at
     * about one request in flight: a prompt processed alone, no decoding
     * beside it), wins over the TTFT slope: it holds neither the HTTP
     * request, the chat template and tokenizing in front of the engine,
     * nor the client. */
    double m_s = 0, m_tok = 0, m_lo = INFINITY, m_hi = 0;
    for (size_t k = 0; k < nri; k++) {
        struct lt_sim_fit_run tmp = {0};
        run_metrics(&tmp, &ri[k], scale);
        if (!tmp.has_metrics || !ri[k].used)
            continue;
        /* Like with like: a prompt processed beside decoders takes their
         * share of its steps, so only runs at about one in flight. */
        if (ri[k].mean_inflight <= 1.5) {
            m_lo = fmin(m_lo, tmp.m_prefill_ms_per_token);
            m_hi = fmax(m_hi, tmp.m_prefill_ms_per_token);
            m_s += tmp.m_prefill_ms_per_token * (double)tmp.m_prompt_tokens;
            m_tok += (double)tmp.m_prompt_tokens;
        }
    }
    out->metrics_spread = m_hi > 0 && m_lo > 0 ? m_hi / m_lo : 0;
    /* per-request timings beat the counters' sums of the same times */
    if (m_tok > 0 && !out->prefill_from_timings) {
        pf = true;
        out->prefill_from_metrics = true;
        pf_slope = fmax(m_s / m_tok - out->ctx_ms * pairs_per_token, 0);
        pf_se = 0;
        /* What the TTFT grows by per prompt token beyond the engine's own
         * prefill is spent in front of the engine: it delays that request's
         * first token only, so it leaves the TTFT rows, not the windows. */
        double front = out->ttft_slope - pf_slope;
        if (out->ttft_slope_identified && front > 2 * out->ttft_slope_se) {
            out->front_identified = true;
            out->front_ms_per_token = front;
            for (size_t i = 0; i < rs.n; i++)
                if (rs.r[i].ttft) {
                    rs.r[i].y -= front * rs.r[i].x[C_PFTOK];
                    rs.r[i].shift += front * rs.r[i].x[C_PFTOK];
                }
        }
    }
    if (pf)
        remove_prefill(&rs, pf_slope, out->ctx_ms);
    /* The cost by batch size only for a server that said it runs a few
     * slots (llama.cpp's word): a batcher of hundreds whose largest batch
     * seen was small would get knots fitted to its noise. */
    uint32_t bend_batch =
        out->word.slots && out->word.slots <= LT_SIM_FIT_NBEND + 1 ? lim.max_batch : 0;
    take_bends(&rs, bend_batch);
    rc = regress_bends(&rs, bend_batch, o, out, err);
    if (rc < 0)
        goto out;
    if (pf)
        mark_prefill(out, pf_slope, pf_se);
    /* The client's share cannot be more than its measured round trip (a
     * request on a fresh connection that the server does no work for), nor
     * below 0: held there, the rest of a TTFT is the server's prefill. */
    double bound = out->word.rtt_ms;
    if (out->client_identified && bound > 0 && (out->client_ms > bound || out->client_ms < 0)) {
        double fixed = out->client_ms > bound ? bound : 0;
        out->client_free_ms = out->client_ms;
        for (size_t i = 0; i < rs.n; i++)
            if (rs.r[i].ttft) {
                rs.r[i].y -= fixed;
                rs.r[i].shift += fixed;
                rs.r[i].x[C_CLIENT] = 0;
            }
        rc = regress_bends(&rs, bend_batch, o, out, err);
        if (rc < 0)
            goto out;
        if (pf)
            mark_prefill(out, pf_slope, pf_se);
        out->client_bounded = out->client_identified = true;
        out->client_ms = fixed;
        out->client_se = 0;
    }
    /* With the timings the client's share is measured, not fitted: a
     * TTFT less the server's own prompt time, at most the round trip. */
    if (out->prefill_from_timings) {
        out->client_identified = true;
        out->client_se = 0;
        out->client_ms = fmax(outside, 0);
        if (bound > 0 && outside > bound) {
            out->client_bounded = true;
            out->client_free_ms = outside;
            out->client_ms = bound;
        }
    }
    for (int c = 0; c < LT_SIM_FIT_NCOST; c++) {
        struct lt_sim_fit_param *p = &out->cost[c];
        p->source = p->identified ? "timelines" : p->kept ? "base profile" : "folded";
    }
    if (out->prefill_from_timings && pf)
        out->cost[C_PFTOK].source = "timings (llama.cpp prompt_ms against prompt_n, requests "
                                    "that found the server idle)";
    else if (out->prefill_from_metrics)
        out->cost[C_PFTOK].source = "metrics (llama.cpp prompt_seconds_total over "
                                    "prompt_tokens_total, runs at 1 in flight)";
    else if (pf)
        out->cost[C_PFTOK].source = "timelines (TTFT against prompt length, idle server)";
    out->nrun = 0;
    for (size_t k = 0; k < nri && out->nrun < LT_SIM_FIT_MAXRUNS; k++) {
        struct lt_sim_fit_run *fr = &out->run[out->nrun++];
        fr->file = ri[k].file;
        fr->id = ri[k].id;
        fr->cls = ri[k].cls;
        snprintf(fr->why, sizeof fr->why, "%s", ri[k].why);
        fr->used = ri[k].used;
        fr->requests = ri[k].requests;
        fr->mean_inflight = ri[k].mean_inflight;
        snprintf(fr->cache_state, sizeof fr->cache_state, "%s", ri[k].cache_state);
        cache_check(fr, &ri[k]);
        run_metrics(fr, &ri[k], scale);
    }
    /* Limits: the largest batch seen is max_running when requests queued
     * behind it; else only a lower bound (the base's value stays if larger).
     * A request "waits" in the timelines from its send time, so one that
     * reached the server late (a starved client takes the time, then is
     * descheduled before the write; a loaded server reads and tokenizes
     * slowly) seems to wait behind whatever batch ran then, and a client is
     * starved most when the batch is largest: the largest batch gets such
     * waits too, about as many as the sizes just below it. A real limit
     * lets nothing wait below it and holds the batch at its size for as
     * long as anything waits, so the waits there stand out: a multiple of
     * those at each of the sizes below, beyond their noise. The server's
     * own word, where it gave it, wins. */
    out->max_batch = lim.max_batch;
    out->max_prefill = lim.max_prefill;
    uint32_t m = lim.max_batch < lim.cap ? lim.max_batch : 0;
    out->queued_at_max = lim.queued_full[m];
    uint64_t below = 0;
    uint32_t nbelow = 0;
    for (uint32_t b = m > PILE_SIZES ? m - PILE_SIZES : 1; b < m; b++, nbelow++)
        below += lim.queued_full[b];
    out->queued_below = nbelow ? (double)below / nbelow : 0;
    out->max_running_identified =
        out->queued_at_max >= 3 && lim.peak_inflight > m &&
        (double)out->queued_at_max >= PILE * out->queued_below + 3 * sqrt(out->queued_below) + 3;
    out->max_running_src = "base profile";
    if (out->max_running_identified || lim.max_batch > out->profile.max_running) {
        out->profile.max_running = lim.max_batch ? lim.max_batch : 1;
        out->max_running_src = "timelines";
    }
    out->prefill_seqs_src = "base profile";
    if (lim.max_prefill > out->profile.prefill_seqs) {
        out->profile.prefill_seqs = lim.max_prefill;
        out->prefill_seqs_src = "timelines";
    }
    const struct lt_sim_fit_word *w = &out->word;
    out->kv_src = out->ctx_src = out->vocab_src = out->model_src = "base profile";
    /* llama-server: a KV stream per slot, so its steps split by slots */
    out->profile.slot_runs = 0;
    if (!strcmp(w->kind, "llama.cpp") && w->slots >= 2 && w->slots <= LT_SIM_FIT_NBEND + 1) {
        out->profile.slot_runs = 1;
        out->profile.slot_similarity = LT_SIM_SLOT_SIMILARITY;
    }
    if (w->slots) {
        out->profile.max_running = w->slots;
        out->max_running_src = "server";
        if (out->profile.prefill_seqs > w->slots) {
            out->profile.prefill_seqs = w->slots;
            out->prefill_seqs_src = "server (its slots)";
        }
    }
    if (w->ctx) {
        out->profile.max_model_len = w->ctx;
        out->ctx_src = "server";
        if (w->slots) { /* llama.cpp: each slot holds its own context */
            out->profile.kv_tokens = (uint64_t)w->ctx * w->slots;
            out->kv_src = "server";
        }
    }
    if (w->vocab) {
        out->profile.vocab = w->vocab;
        out->vocab_src = "server";
    }
    if (w->model[0]) {
        snprintf(out->profile.model, sizeof out->profile.model, "%s", w->model);
        out->model_src = "server";
    }
    out->profile.front_ms_per_token = out->front_identified ? out->front_ms_per_token : 0;
    if (out->prefill_from_timings)
        split_outside(&ot, out);
    out->profile.loop_ms_per_request = out->loop_identified ? out->loop_ms : 0;
    out->profile.front_ms_per_request = out->outside_identified ? out->front_fixed_ms : 0;
    out->profile.prefill_ms_per_token_ctx = out->ctx_identified ? out->ctx_ms : 0;
    /* Prompts that all had about as many cached tokens share a start the
     * server keeps (a chat template's, cached in each slot): the twin
     * finds it cached too, or every virtual prompt is that much longer. */
    out->profile.shared_prefix_tokens = out->cached_median;
    set_by_batch(out);
    /* Measured, not set: on llama-server neither twin predicted held-out
     * loads better (bench/README.md: 3 against 8 of 28 figures beyond the
     * targets in one run, 6 against 3 in the next), and a steady one gives
     * one answer where a wandering one gives a draw; so the profile keeps
     * the base's and the user sets the two keys for a twin that wanders. */
    speed_pool(ri, nri, out);
    snprintf(out->profile.name, sizeof out->profile.name, "fitted");
    rc = lt_sim_profile_check(&out->profile, err);
    if (rc < 0) {
        /* Costs no server has come from data that cannot tell them apart:
         * say what it lacks, cost by cost. */
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        char lacks[600] = "";
        size_t used = 0;
        for (int c = 0; c < LT_SIM_FIT_NCOST && used < sizeof lacks; c++)
            if (!out->cost[c].identified && !out->cost[c].kept)
                used += (size_t)snprintf(lacks + used, sizeof lacks - used, "%s%s: %s",
                                         used ? "; " : "", cost_key[c], cost_needs[c]);
        lt_errset(err, LT_EINVAL,
                  "sim --fit: the fitted profile cannot be a server's (%s); the data cannot tell "
                  "its costs apart%s%s",
                  why, used ? ". It lacks " : "", lacks);
    }
out:
    lt_reader_close(r);
    for (size_t k = 0; k < nruns; k++)
        run_free(&runs[k]);
    free(runs);
    free(run_ids);
    for (size_t k = 0; k < nri; k++)
        free(ri[k].sobs);
    free(ri);
    free(rs.r);
    free(sg.s);
    free(lim.queued_full);
    free(lim.queued_at_prefill);
    return rc;
}

int lt_sim_fit_write(const struct lt_sim_fit *f, const char *path, struct lt_err *err)
{
    char note[4096];
    int len = snprintf(note, sizeof note,
                       "fitted by loadtrace sim --fit from %llu requests in %llu runs "
                       "(%llu batch steps; the regression's requests span %llu decode steps, "
                       "a step once per request in it)\n",
                       (unsigned long long)f->requests, (unsigned long long)f->runs,
                       (unsigned long long)f->steps, (unsigned long long)f->steps_used);
    for (int c = 0; c < LT_SIM_FIT_NCOST && len > 0 && (size_t)len < sizeof note; c++) {
        const struct lt_sim_fit_param *p = &f->cost[c];
        if (p->identified)
            len += snprintf(note + len, sizeof note - (size_t)len, "%s = %.6g +- %.2g\n", p->key,
                            p->value, p->se);
        else
            len += snprintf(note + len, sizeof note - (size_t)len, "%s: not identified\n", p->key);
    }
    for (int b = 0; b < LT_SIM_FIT_NBEND && len > 0 && (size_t)len < sizeof note; b++)
        if (f->bend_identified[b])
            len += snprintf(note + len, sizeof note - (size_t)len,
                            "a step of %d decoders: %+.6g +- %.2g against the line\n", b + 2,
                            f->bend[b], f->bend_se[b]);
    if (f->ctx_identified && len > 0 && (size_t)len < sizeof note)
        len += snprintf(note + len, sizeof note - (size_t)len,
                        "prefill_ms_per_token_ctx = %.6g +- %.2g\n", f->ctx_ms, f->ctx_se);
    if (f->outside_identified && len > 0 && (size_t)len < sizeof note)
        len += snprintf(note + len, sizeof note - (size_t)len,
                        "outside the server's compute: %.6g +- %.2g ms a request (an idle TTFT "
                        "less prompt_ms less the round trip); on its loop (the decode windows) "
                        "%.6g +- %.2g: loop_ms_per_request %.6g, front_ms_per_request %.6g\n",
                        f->outside_server_ms, f->outside_server_se, f->loop_win_ms, f->loop_win_se,
                        f->loop_ms, f->front_fixed_ms);
    if (f->pf_tokens_max && len > 0 && (size_t)len < sizeof note)
        len += snprintf(note + len, sizeof note - (size_t)len,
                        "prefill fitted on prompts of %u to %u uncached tokens: beyond, a "
                        "prediction extrapolates\n",
                        f->pf_tokens_min, f->pf_tokens_max);
    if (f->speed_identified && len > 0 && (size_t)len < sizeof note)
        len += snprintf(
            note + len, sizeof note - (size_t)len,
            "the server's speed wanders: speed_cv %.3g, speed_tau_ms %.4g measured "
            "from %llu decodes alone (closed loops at 1, their halves' correlation "
            "%.3f); not set here (steady steps, one answer, did as well): set both for a twin "
            "whose steps wander with it\n",
            f->speed_cv, f->speed_tau_ms, (unsigned long long)f->speed_n, f->speed_rho);
    if (f->cached_median && len > 0 && (size_t)len < sizeof note)
        len += snprintf(note + len, sizeof note - (size_t)len,
                        "shared_prefix_tokens %u: the cached tokens the server reported\n",
                        f->cached_median);
    return lt_sim_profile_save(&f->profile, path, note, err);
}

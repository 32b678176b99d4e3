/*
 * The synthesizer of trace_synth.h.
 *
 * One loop merges two sources of records in arrival order: the arrival
 * process, which starts a new unit (a request, or the first turn of a
 * session), and a heap of sessions in progress, keyed by their next turn's
 * arrival. A unit is either generated (messages drawn from the length
 * distributions) or a copy of a unit sampled from the fitted trace, shifted
 * to its new start and with its ids remapped.
 *
 * Prefix blocks of generated prompts are content hashes: a prompt is a list
 * of segments (shared system prompt, each user and assistant message), and a
 * block's id hashes the previous block's id with the segment pieces it
 * covers, so two prompts get equal block ids exactly as far as their token
 * sequences agree, as in a real prefix cache (a later turn reuses every
 * whole block of the turn before).
 *
 * Fitted block ids are remapped per copy so that reuse keeps its structure:
 * a block that several sampled units share (a common system prompt) keeps
 * one id in every copy, so copies share it as the originals did; a block of
 * one unit only (that session's own history) gets fresh ids in every copy,
 * consistently within the copy, so repeated draws of the same unit do not
 * invent reuse the real trace did not have.
 */
#include "workload/trace_synth.h"

#include "traces/lt_mp.h"
#include "base/lt_buf.h"
#include "base/lt_dur.h"
#include "base/lt_heap.h"
#include "base/lt_rng.h"
#include "base/lt_u64map.h"
#include "workload/trace_info.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIT_SAMPLE_DEFAULT 100000
#define MAX_TOKENS_DRAWN 100000000u /* a length distribution is clamped here */
#define SALT_BLOCK UINT64_C(0x5bd1e9955bd1e995)
#define SALT_SEG UINT64_C(0x2545f4914f6cdd1d)
#define SALT_SAMPLE UINT64_C(0x9e3779b97f4a7c15)
#define SALT_MULTI UINT64_C(0xd6e8feb86659fd93)
#define NAMES_MAX 64
#define TWO_PI 6.283185307179586477

/* ---- option parsing ---------------------------------------------------- */

static bool parse_num(const char *s, const char **end, double *v)
{
    char *e;
    *v = strtod(s, &e);
    if (e == s || !isfinite(*v))
        return false;
    *end = e;
    return true;
}

/* "A" or "A,B" after a prefix; returns the number of values. */
static int parse_pair(const char *s, double *a, double *b)
{
    const char *e;
    if (!parse_num(s, &e, a))
        return 0;
    if (!*e)
        return 1;
    if (*e != ',' || !parse_num(e + 1, &e, b) || *e)
        return 0;
    return 2;
}

/* A period such as "24h", "600s", "10m", "1.5h" or a bare number of
 * seconds (base/lt_dur.h), in seconds; it must be positive. */
static bool parse_seconds(const char *s, const char **end, double *sec)
{
    int64_t us;
    if (lt_dur_scan(s, end, LT_DUR_BARE_S, &us, NULL) < 0 || us <= 0)
        return false;
    *sec = (double)us / 1e6;
    return true;
}

int lt_len_spec_parse(const char *s, struct lt_len_spec *l, struct lt_err *err)
{
    memset(l, 0, sizeof *l);
    int n;
    if (!strncmp(s, "fixed:", 6)) {
        l->kind = LT_LEN_FIXED;
        n = parse_pair(s + 6, &l->a, &l->b);
        if (n == 1 && l->a >= 0 && l->a <= MAX_TOKENS_DRAWN && l->a == floor(l->a))
            return 0;
    } else if (!strncmp(s, "uniform:", 8)) {
        l->kind = LT_LEN_UNIFORM;
        n = parse_pair(s + 8, &l->a, &l->b);
        if (n == 2 && l->a >= 0 && l->b >= l->a && l->b <= MAX_TOKENS_DRAWN &&
            l->a == floor(l->a) && l->b == floor(l->b))
            return 0;
    } else if (!strncmp(s, "lognormal:", 10)) {
        l->kind = LT_LEN_LOGNORMAL;
        n = parse_pair(s + 10, &l->a, &l->b);
        if (n == 2 && l->a >= 1 && l->b >= 0 && l->b <= 10)
            return 0;
    }
    return lt_errset(err, LT_EINVAL,
                     "'%s': a length is fixed:N, uniform:A,B (integers, A <= B) or "
                     "lognormal:MEDIAN,SIGMA (MEDIAN >= 1, 0 <= SIGMA <= 10)",
                     s);
}

int lt_shape_parse(const char *s, enum lt_shape *shape, double *a, double *b, struct lt_err *err)
{
    const char *e;
    if (!strcmp(s, "flat")) {
        *shape = LT_SHAPE_FLAT;
        return 0;
    }
    if (!strncmp(s, "ramp:", 5)) {
        *shape = LT_SHAPE_RAMP;
        if (parse_pair(s + 5, a, b) == 2 && *a >= 0 && *b >= 0 && *a + *b > 0)
            return 0;
    } else if (!strncmp(s, "diurnal:", 8)) {
        *shape = LT_SHAPE_DIURNAL;
        if (parse_seconds(s + 8, &e, a) && *e == ',' && parse_num(e + 1, &e, b) && !*e && *b >= 0 &&
            *b < 1)
            return 0;
    }
    return lt_errset(err, LT_EINVAL,
                     "'%s': a shape is flat, ramp:R0,R1 (req/s, not both 0) or "
                     "diurnal:PERIOD,AMPLITUDE (PERIOD like 24h or 600s, 0 <= AMPLITUDE < 1)",
                     s);
}

static uint32_t draw_len(const struct lt_len_spec *l, struct lt_rng *r)
{
    double v = 0;
    switch (l->kind) {
    case LT_LEN_NONE:
        return 0;
    case LT_LEN_FIXED:
        v = l->a;
        break;
    case LT_LEN_UNIFORM:
        v = l->a + (double)lt_rng_below(r, (uint64_t)(l->b - l->a) + 1);
        break;
    case LT_LEN_LOGNORMAL:
        v = floor(lt_rng_lognormal(r, log(l->a), l->b) + 0.5);
        if (v < 1)
            v = 1;
        break;
    }
    return v > MAX_TOKENS_DRAWN ? MAX_TOKENS_DRAWN : (uint32_t)v;
}

static double len_mean(const struct lt_len_spec *l)
{
    switch (l->kind) {
    case LT_LEN_FIXED:
        return l->a;
    case LT_LEN_UNIFORM:
        return (l->a + l->b) / 2;
    case LT_LEN_LOGNORMAL:
        return l->a * exp(l->b * l->b / 2);
    default:
        return 1;
    }
}

/* ---- empirical gaps ---------------------------------------------------- */

#define GAP_SEG 4096 /* gaps are kept in runs of this many consecutive ones */
#define GAP_RUN 1024 /* and replayed in runs of at most this many */

/* A reservoir of runs of consecutive gaps of the fitted trace. */
struct gapstore {
    double *gaps; /* cap runs of GAP_SEG */
    uint32_t *len;
    size_t cap, n;
    uint64_t offered;
    double *fill; /* the run being collected */
    uint32_t fill_len;
    struct lt_rng rng;
    double mean; /* of the gaps kept */
    /* replay cursor */
    size_t cur;
    uint32_t pos, left;
};

static int gapstore_init(struct gapstore *gs, size_t max_gaps, uint64_t seed)
{
    memset(gs, 0, sizeof *gs);
    gs->cap = max_gaps / GAP_SEG + 1;
    gs->gaps = malloc(gs->cap * GAP_SEG * sizeof *gs->gaps);
    gs->len = calloc(gs->cap, sizeof *gs->len);
    gs->fill = malloc(GAP_SEG * sizeof *gs->fill);
    lt_rng_seed(&gs->rng, lt_mix64(seed ^ UINT64_C(0x6a9)));
    return gs->gaps && gs->len && gs->fill ? 0 : LT_ENOMEM;
}

static void gapstore_release(struct gapstore *gs)
{
    free(gs->gaps);
    free(gs->len);
    free(gs->fill);
    memset(gs, 0, sizeof *gs);
}

static void gapstore_offer(struct gapstore *gs)
{
    if (!gs->fill_len)
        return;
    gs->offered++;
    size_t slot = gs->n < gs->cap ? gs->n++ : (size_t)lt_rng_below(&gs->rng, gs->offered);
    if (slot < gs->cap) {
        memcpy(gs->gaps + slot * GAP_SEG, gs->fill, gs->fill_len * sizeof *gs->fill);
        gs->len[slot] = gs->fill_len;
    }
    gs->fill_len = 0;
}

static void gapstore_add(struct gapstore *gs, double gap)
{
    gs->fill[gs->fill_len++] = gap;
    if (gs->fill_len == GAP_SEG)
        gapstore_offer(gs);
}

/* Close the last run; false if there are no gaps or they are all 0. */
static bool gapstore_finish(struct gapstore *gs)
{
    gapstore_offer(gs);
    double sum = 0;
    uint64_t cnt = 0;
    for (size_t i = 0; i < gs->n; i++)
        for (uint32_t j = 0; j < gs->len[i]; j++)
            sum += gs->gaps[i * GAP_SEG + j];
    for (size_t i = 0; i < gs->n; i++)
        cnt += gs->len[i];
    gs->mean = cnt ? sum / (double)cnt : 0;
    return gs->mean > 0;
}

/* The next gap, in units of the mean gap. Runs wrap around the end of their
 * stored run (a circular block bootstrap), so that every stored gap is
 * equally likely to be replayed and the replayed mean is the stored mean. */
static double gapstore_next(struct gapstore *gs, struct lt_rng *rng)
{
    if (!gs->left) {
        gs->cur = (size_t)lt_rng_below(rng, gs->n);
        gs->pos = (uint32_t)lt_rng_below(rng, gs->len[gs->cur]);
        gs->left = gs->len[gs->cur] < GAP_RUN ? gs->len[gs->cur] : GAP_RUN;
    }
    gs->left--;
    double g = gs->gaps[gs->cur * GAP_SEG + gs->pos];
    gs->pos = gs->pos + 1 < gs->len[gs->cur] ? gs->pos + 1 : 0;
    return g / gs->mean;
}

/* ---- arrivals ---------------------------------------------------------- */

struct arrivals {
    enum lt_arrivals kind;
    double k, theta; /* gamma shape and scale for gaps of mean 1 */
    enum lt_shape shape;
    double rate;          /* requests/s (flat, diurnal) */
    double r0, r1, dur;   /* ramp */
    double period, amp;   /* diurnal */
    double per_unit;      /* requests per unit */
    struct gapstore *emp; /* LT_ARR_EMPIRICAL */
    double s;             /* operational time: expected units so far */
    double t;             /* last arrival, s */
    bool started;
    bool stalled; /* the arrival time can no longer move */
};

/* Expected requests in [0, t] and the rate at t. */
static double cum_rate(const struct arrivals *a, double t, double *rate)
{
    switch (a->shape) {
    case LT_SHAPE_RAMP:
        *rate = a->r0 + (a->r1 - a->r0) * t / a->dur;
        return a->r0 * t + (a->r1 - a->r0) * t * t / (2 * a->dur);
    case LT_SHAPE_DIURNAL: {
        double w = TWO_PI / a->period;
        *rate = a->rate * (1 + a->amp * sin(w * t));
        return a->rate * t + a->rate * a->amp / w * (1 - cos(w * t));
    }
    default:
        *rate = a->rate;
        return a->rate * t;
    }
}

/* The time at which Lambda(t) = x, at or after a->t; INFINITY if never. */
static double inverse_rate(const struct arrivals *a, double x)
{
    double r;
    switch (a->shape) {
    case LT_SHAPE_FLAT:
        return x / a->rate;
    case LT_SHAPE_RAMP: {
        double c = (a->r1 - a->r0) / (2 * a->dur), disc = a->r0 * a->r0 + 4 * c * x;
        if (disc < 0)
            return INFINITY;
        double den = a->r0 + sqrt(disc);
        return den > 0 ? 2 * x / den : INFINITY;
    }
    case LT_SHAPE_DIURNAL: {
        /* Lambda(t) - rate t lies in [0, 2 rate amp / w]: a bracket for
         * Newton's method, which falls back to bisection when it leaves it. */
        double w = TWO_PI / a->period;
        double lo = fmax(a->t, (x - 2 * a->rate * a->amp / w) / a->rate), hi = x / a->rate;
        double t = fmin(fmax(a->t, lo), hi);
        for (int i = 0; i < 200 && hi - lo > 1e-9; i++) {
            double f = cum_rate(a, t, &r) - x;
            if (fabs(f) < 1e-12 * fmax(1, x))
                break;
            if (f > 0)
                hi = t;
            else
                lo = t;
            double tn = r > 0 ? t - f / r : lo - 1;
            t = tn > lo && tn < hi ? tn : (lo + hi) / 2;
        }
        return t;
    }
    }
    return INFINITY;
}

/* Seconds from the trace start to the next unit. */
static double next_arrival(struct arrivals *a, struct lt_rng *rng)
{
    if (!a->started) {
        a->started = true;
        a->t = 0;
        return 0;
    }
    double gap = 1;
    if (a->kind == LT_ARR_POISSON)
        gap = lt_rng_exp(rng, 1.0);
    else if (a->kind == LT_ARR_GAMMA)
        gap = lt_rng_gamma(rng, a->k, a->theta);
    else if (a->kind == LT_ARR_EMPIRICAL)
        gap = gapstore_next(a->emp, rng);
    if (!(a->s + 1 > a->s)) { /* a gap of the mean no longer moves operational time */
        a->stalled = true;
        return INFINITY;
    }
    a->s += gap;
    double t = inverse_rate(a, a->s * a->per_unit);
    if (t < a->t)
        t = a->t;
    a->t = t;
    return t;
}

/* ---- segments and blocks ----------------------------------------------- */

enum { ROLE_SYSTEM, ROLE_USER, ROLE_ASSISTANT };
static const char *const role_names[] = {"system", "user", "assistant"};

struct seg {
    uint64_t id;
    uint32_t tokens;
    int role;
};

/* Block ids of the token sequence made of segs (see the top comment). */
static int seg_blocks(const struct seg *segs, uint32_t n, uint32_t bt, uint64_t **out,
                      uint32_t *cap, uint32_t *nb)
{
    uint64_t prev = SALT_BLOCK, h = 0;
    uint32_t fill = 0;
    *nb = 0;
    for (uint32_t i = 0; i <= n; i++) {
        uint32_t off = 0, len = i < n ? segs[i].tokens : 0;
        while (off < len || (i == n && fill > 0)) {
            if (i < n) {
                uint32_t take = bt - fill < len - off ? bt - fill : len - off;
                h = lt_mix64(h ^ lt_mix64(segs[i].id + ((uint64_t)off << 32)) ^ take);
                fill += take;
                off += take;
            }
            if (fill == bt || i == n) {
                if (*nb == *cap) {
                    uint32_t nc = *cap ? *cap * 2 : 64;
                    uint64_t *p = realloc(*out, nc * sizeof *p);
                    if (!p)
                        return LT_ENOMEM;
                    *out = p;
                    *cap = nc;
                }
                prev = lt_mix64(prev ^ h);
                (*out)[(*nb)++] = prev;
                h = 0;
                fill = 0;
            }
        }
    }
    return 0;
}

/* ---- the fitted sample -------------------------------------------------- */

struct pool_rec {
    uint32_t next; /* the unit's next record, or NO_NEXT */
    int64_t off;   /* arrival after the unit's first record, us */
    int64_t think;
    uint32_t has;
    uint32_t turn, in, cached, out, reasoning, max_tokens, tools_count, tools_tokens;
    uint32_t n_msgs, n_calls, n_blocks;
    size_t msgs_at, calls_at, blocks_at;
    int model, api; /* index in names, or -1 */
};

#define NO_NEXT UINT32_MAX

/* A sampled unit's records are a list through pool_rec.next, because the
 * turns of sessions interleave in a trace. */
struct pool_unit {
    uint32_t first, last, n;
    int64_t t0;
    bool session;
};

struct pool {
    struct pool_rec *recs;
    size_t n_recs, cap_recs;
    struct pool_unit *units;
    size_t n_units, cap_units;
    struct lt_msg *msgs;
    size_t n_msgs, cap_msgs;
    uint32_t *calls;
    size_t n_calls, cap_calls;
    uint64_t *blocks;
    uint8_t *multi; /* per entry of blocks: shared by several units */
    size_t n_blocks, cap_blocks;
    char *names[NAMES_MAX];
    int n_names;
    uint32_t block_tokens;
};

/* Make room for need elements in the array whose pointer is at pp (passed
 * as void *, and read and written with memcpy, so that any element type
 * works without aliasing tricks). The array is unchanged on failure. */
static int grow(void *pp, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 256;
    while (nc < need)
        nc *= 2;
    void *old;
    memcpy(&old, pp, sizeof old);
    void *q = realloc(old, nc * elem);
    if (!q)
        return LT_ENOMEM;
    memcpy(pp, &q, sizeof q);
    *cap = nc;
    return 0;
}

static int name_index(struct pool *p, const char *s)
{
    if (!s)
        return -1;
    for (int i = 0; i < p->n_names; i++)
        if (!strcmp(p->names[i], s))
            return i;
    if (p->n_names == NAMES_MAX)
        return -1;
    char *c = strdup(s);
    if (!c)
        return -1;
    p->names[p->n_names] = c;
    return p->n_names++;
}

static void pool_release(struct pool *p)
{
    free(p->recs);
    free(p->units);
    free(p->msgs);
    free(p->calls);
    free(p->blocks);
    free(p->multi);
    for (int i = 0; i < p->n_names; i++)
        free(p->names[i]);
    memset(p, 0, sizeof *p);
}

static int pool_add(struct pool *p, struct pool_unit *u, const struct lt_record *r)
{
    if (grow(&p->recs, &p->cap_recs, p->n_recs + 1, sizeof *p->recs) < 0 ||
        grow(&p->msgs, &p->cap_msgs, p->n_msgs + r->n_msgs, sizeof *p->msgs) < 0 ||
        grow(&p->calls, &p->cap_calls, p->n_calls + r->n_calls, sizeof *p->calls) < 0)
        return LT_ENOMEM;
    size_t cap = p->cap_blocks;
    if (grow(&p->blocks, &p->cap_blocks, p->n_blocks + r->n_blocks, sizeof *p->blocks) < 0)
        return LT_ENOMEM;
    if (p->cap_blocks != cap) {
        uint8_t *m = realloc(p->multi, p->cap_blocks);
        if (!m)
            return LT_ENOMEM;
        p->multi = m;
    }
    uint32_t idx = (uint32_t)p->n_recs++;
    struct pool_rec *q = &p->recs[idx];
    memset(q, 0, sizeof *q);
    q->next = NO_NEXT;
    if (u->n)
        p->recs[u->last].next = idx;
    else
        u->first = idx;
    u->last = idx;
    q->off = r->t - u->t0;
    q->has = r->has &
             ~(uint32_t)(LT_HAS_ORIG_STATUS | LT_HAS_ORIG_TTFT | LT_HAS_ORIG_E2E | LT_HAS_SESSION);
    q->think = r->think;
    q->turn = r->turn;
    q->in = r->in;
    q->cached = r->cached;
    q->out = r->out;
    q->reasoning = r->reasoning;
    q->max_tokens = r->max_tokens;
    q->tools_count = r->tools_count;
    q->tools_tokens = r->tools_tokens;
    q->n_msgs = (r->has & LT_HAS_MSGS) ? r->n_msgs : 0;
    q->n_calls = (r->has & LT_HAS_CALLS) ? r->n_calls : 0;
    q->n_blocks = (r->has & LT_HAS_BLOCKS) ? r->n_blocks : 0;
    q->msgs_at = p->n_msgs;
    q->calls_at = p->n_calls;
    q->blocks_at = p->n_blocks;
    if (q->n_msgs)
        memcpy(p->msgs + p->n_msgs, r->msgs, q->n_msgs * sizeof *r->msgs);
    if (q->n_calls)
        memcpy(p->calls + p->n_calls, r->calls, q->n_calls * sizeof *r->calls);
    if (q->n_blocks)
        memcpy(p->blocks + p->n_blocks, r->blocks, q->n_blocks * sizeof *r->blocks);
    p->n_msgs += q->n_msgs;
    p->n_calls += q->n_calls;
    p->n_blocks += q->n_blocks;
    q->model = name_index(p, r->model);
    q->api = name_index(p, r->api);
    u->n++;
    return 0;
}

/* Mark the blocks that more than one sampled unit uses. */
static int pool_mark_shared(struct pool *p)
{
    struct lt_u64map owner; /* block id -> unit index + 1, or UINT64_MAX if shared */
    lt_u64map_init(&owner);
    int rc = 0;
    for (size_t u = 0; u < p->n_units; u++) {
        const struct pool_unit *pu = &p->units[u];
        for (uint32_t i = pu->first; i != NO_NEXT; i = p->recs[i].next) {
            const struct pool_rec *q = &p->recs[i];
            for (uint32_t b = 0; b < q->n_blocks; b++) {
                uint64_t *o = lt_u64map_upsert(&owner, p->blocks[q->blocks_at + b], NULL);
                if (!o) {
                    rc = LT_ENOMEM;
                    goto out;
                }
                if (*o == 0)
                    *o = u + 1;
                else if (*o != u + 1)
                    *o = UINT64_MAX;
            }
        }
    }
    for (size_t i = 0; i < p->n_blocks; i++)
        p->multi[i] = *lt_u64map_get(&owner, p->blocks[i]) == UINT64_MAX;
out:
    lt_u64map_release(&owner);
    return rc;
}

struct fit_info {
    uint64_t records;
    double rate;    /* records per second */
    double unit_cv; /* CV of the gaps between unit starts */
    int64_t granularity_us;
    uint32_t block_tokens;
    bool sessions;
};

/* Pass 1: the trace's figures (lt_info), without its blocks: the sample
 * needs no set of every block id. */
static int fit_pass1(const char *path, struct fit_info *fi, struct lt_err *err)
{
    int rc = 0;
    struct lt_info info = {0};
    struct lt_reader *r = lt_reader_open_kind(path, LT_KIND_TRACE, NULL, err);
    if (!r)
        return err ? err->code : LT_EIO;
    LT_TRY(lt_info_init(&info, lt_reader_header(r)->block_tokens, err));
    const struct lt_item *it;
    int n;
    while ((n = lt_reader_next(r, &it, err)) == 1) {
        struct lt_record rec = it->rec;
        rec.has &= ~(uint32_t)LT_HAS_BLOCKS;
        LT_TRY(lt_info_add(&info, &rec, err));
    }
    LT_TRY(n);
    LT_TRY(lt_info_finish(&info, err));
    fi->records = info.records;
    fi->rate = info.rate;
    fi->unit_cv = info.gap_cv;
    fi->granularity_us = info.granularity_us;
    fi->block_tokens = info.block_tokens;
    fi->sessions = info.with_session > 0;
    if (fi->records == 0)
        rc = lt_errset(err, LT_EINVAL, "%s: the trace to fit has no records", path);
out:
    lt_info_release(&info);
    lt_reader_close(r);
    return rc;
}

/* Pass 2: sample whole units with probability keep (a hash of the unit's
 * key decides, so a session is kept or dropped as a whole), at most
 * max_recs records. For session traces, also the CV of the gaps between
 * session starts. */
static int fit_pass2(const char *path, uint64_t seed, double keep, size_t max_recs,
                     struct fit_info *fi, struct pool *p, struct gapstore *gs, struct lt_err *err)
{
    int rc = 0;
    struct lt_u64map seen; /* session id -> pool unit + 1, or 0 if not sampled */
    lt_u64map_init(&seen);
    struct lt_reader *r = lt_reader_open_kind(path, LT_KIND_TRACE, NULL, err);
    if (!r)
        return err ? err->code : LT_EIO;
    uint64_t cut = keep >= 1 ? UINT64_MAX : (uint64_t)(keep * 18446744073709551616.0);
    uint64_t salt = lt_mix64(seed ^ SALT_SAMPLE);
    double gmean = 0, gm2 = 0;
    uint64_t gn = 0;
    int64_t last_start = 0;
    bool any_start = false;
    const struct lt_item *it;
    int n;
    while ((n = lt_reader_next(r, &it, err)) == 1) {
        const struct lt_record *rec = &it->rec;
        bool session = rec->has & LT_HAS_SESSION;
        uint64_t key = session ? rec->session : it->index ^ UINT64_C(0x8000000000000000);
        uint64_t *slot = NULL;
        bool start = true;
        if (session) {
            bool added;
            slot = lt_u64map_upsert(&seen, rec->session, &added);
            if (!slot) {
                rc = lt_errset(err, LT_ENOMEM, "fit: out of memory for the session map");
                goto out;
            }
            start = added;
        }
        if (start) {
            if (any_start && rec->t >= last_start) {
                double g = (double)(rec->t - last_start), d = g - gmean;
                gn++;
                gmean += d / (double)gn;
                gm2 += d * (g - gmean);
                gapstore_add(gs, g);
            }
            any_start = true;
            last_start = rec->t;
        }
        struct pool_unit *u = NULL;
        if (start) {
            if (lt_mix64(key ^ salt) > cut || p->n_recs >= max_recs)
                continue;
            if (grow(&p->units, &p->cap_units, p->n_units + 1, sizeof *p->units) < 0) {
                rc = lt_errset(err, LT_ENOMEM, "fit: out of memory");
                goto out;
            }
            u = &p->units[p->n_units++];
            *u = (struct pool_unit){.t0 = rec->t, .session = session};
            if (slot)
                *slot = p->n_units;
        } else {
            if (*slot == 0)
                continue;
            u = &p->units[*slot - 1];
        }
        if (pool_add(p, u, rec) < 0) {
            rc = lt_errset(err, LT_ENOMEM, "fit: out of memory for the sample");
            goto out;
        }
    }
    if (n < 0) {
        rc = n;
        goto out;
    }
    if (fi->sessions)
        fi->unit_cv = gn && gmean > 0 ? sqrt(gm2 / (double)gn) / gmean : 0;
out:
    lt_reader_close(r);
    lt_u64map_release(&seen);
    return rc;
}

/* ---- the generator ------------------------------------------------------ */

/* A session in progress: generated (segs) or a copy of a sampled unit. */
struct active {
    int64_t t;    /* next turn's arrival, us */
    uint64_t seq; /* ties in t go in start order */
    uint64_t sid;
    uint32_t turn, turns;
    struct seg *segs;
    uint32_t n_segs, cap_segs;
    uint32_t prev_out;
    int64_t think;
    /* fitted copies */
    uint32_t unit, cur; /* the sampled unit, and its next record */
    int64_t base;
    uint64_t draw;
};

struct gen {
    const struct lt_synth_opts *o;
    struct lt_rng rng;
    struct lt_writer *w;
    struct pool pool;
    bool fit;
    bool sessions;
    uint32_t block_tokens;
    int64_t round_us;
    struct lt_heap heap; /* of struct active *, by next turn */
    uint64_t seq;
    uint64_t draws;
    uint64_t records;
    uint64_t pending; /* turns still to come of the sessions in progress */
    uint64_t limit;   /* --requests: records at most, in whole sessions; 0 = none */
    uint64_t *blocks;
    uint32_t cap_blocks;
    struct lt_msg *msgs;
    size_t cap_msgs;
    struct lt_buf extra; /* a record's media key (--images) */
};

/* Sessions in progress pop by their next turn's time, ties in the order
 * they were pushed. */
static bool before(const void *pa, const void *pb, void *ctx)
{
    (void)ctx;
    const struct active *a = *(struct active *const *)pa, *b = *(struct active *const *)pb;
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static struct active *heap_first(const struct gen *g)
{
    struct active **top = lt_heap_top(&g->heap);
    return top ? *top : NULL;
}

static struct active *heap_pop(struct gen *g)
{
    struct active *a = NULL;
    lt_heap_pop(&g->heap, &a);
    return a;
}

static void active_free(struct active *a)
{
    if (a) {
        free(a->segs);
        free(a);
    }
}

static int64_t rounded(const struct gen *g, int64_t t)
{
    return g->round_us > 1 ? t - t % g->round_us : t;
}

static int put(struct gen *g, struct lt_record *r, struct lt_err *err)
{
    r->t = rounded(g, r->t);
    int rc = lt_writer_put_record(g->w, r, err);
    if (rc == 0)
        g->records++;
    return rc;
}

static int add_seg(struct active *a, int role, uint32_t tokens, uint64_t id)
{
    if (a->n_segs == a->cap_segs) {
        uint32_t nc = a->cap_segs ? a->cap_segs * 2 : 8;
        struct seg *s = realloc(a->segs, nc * sizeof *s);
        if (!s)
            return LT_ENOMEM;
        a->segs = s;
        a->cap_segs = nc;
    }
    a->segs[a->n_segs++] = (struct seg){.id = id, .tokens = tokens, .role = role};
    return 0;
}

/* Emit the next turn of a generated session. */
static int emit_generated(struct gen *g, struct active *a, struct lt_err *err)
{
    const struct lt_synth_opts *o = g->o;
    /* Seeded, so that traces made with other seeds share no content. */
    uint64_t sk = lt_mix64(lt_mix64(g->o->seed ^ SALT_SEG) ^ a->sid);
    if (a->turn > 0 && add_seg(a, ROLE_ASSISTANT, a->prev_out, sk + 2 * a->turn - 1) < 0)
        return lt_errset(err, LT_ENOMEM, "synth: out of memory");
    if (add_seg(a, ROLE_USER, draw_len(&o->in, &g->rng), sk + 2 * a->turn) < 0)
        return lt_errset(err, LT_ENOMEM, "synth: out of memory");
    struct lt_record r = {.t = a->t, .has = LT_HAS_IN | LT_HAS_OUT | LT_HAS_MSGS};
    if (grow(&g->msgs, &g->cap_msgs, a->n_segs, sizeof *g->msgs) < 0)
        return lt_errset(err, LT_ENOMEM, "synth: out of memory");
    uint64_t in = 0;
    for (uint32_t i = 0; i < a->n_segs; i++) {
        snprintf(g->msgs[i].role, sizeof g->msgs[i].role, "%s", role_names[a->segs[i].role]);
        g->msgs[i].tokens = a->segs[i].tokens;
        in += a->segs[i].tokens;
    }
    r.in = in > UINT32_MAX ? UINT32_MAX : (uint32_t)in;
    r.msgs = g->msgs;
    r.n_msgs = a->n_segs;
    r.out = draw_len(&o->out, &g->rng);
    if (o->reasoning_share > 0) {
        r.has |= LT_HAS_REASONING;
        if (lt_rng_uniform(&g->rng) < o->reasoning_share) {
            double v = floor(o->reasoning_frac * r.out + 0.5);
            r.reasoning = v > r.out ? r.out : (uint32_t)v;
        }
    }
    if (g->sessions) {
        r.has |= LT_HAS_SESSION | LT_HAS_TURN;
        r.session = a->sid;
        r.turn = a->turn;
        if (a->turn > 0) {
            r.has |= LT_HAS_THINK;
            r.think = a->think;
        }
    }
    if (g->block_tokens) {
        uint32_t nb;
        if (seg_blocks(a->segs, a->n_segs, g->block_tokens, &g->blocks, &g->cap_blocks, &nb) < 0)
            return lt_errset(err, LT_ENOMEM, "synth: out of memory");
        r.has |= LT_HAS_BLOCKS;
        r.blocks = g->blocks;
        r.n_blocks = nb;
    }
    r.model = o->model;
    r.api = o->api;
    a->prev_out = r.out;
    a->turn++;
    if (o->images.share > 0) { /* drawn only when asked: other traces keep their bytes */
        struct lt_media v[LT_MEDIA_MAX];
        uint32_t n;
        uint64_t tok;
        lt_media_mix_draw(&o->images, &g->rng, v, &n, &tok);
        if (n) {
            r.in = r.in + tok > UINT32_MAX ? UINT32_MAX : (uint32_t)(r.in + tok);
            lt_buf_reset(&g->extra);
            struct lt_mp mp = {&g->extra, 0};
            if (lt_media_pack(&mp, v, n) < 0)
                return lt_errset(err, LT_ENOMEM, "synth: out of memory");
            r.extra = (struct lt_extra){(const uint8_t *)g->extra.p, g->extra.len, 1};
        }
    }
    return put(g, &r, err);
}

/* Emit the next record of a copy of a sampled unit. */
static int emit_fitted(struct gen *g, struct active *a, struct lt_err *err)
{
    const struct pool *p = &g->pool;
    const struct pool_unit *u = &p->units[a->unit];
    const struct pool_rec *q = &p->recs[a->cur];
    struct lt_record r = {.t = a->t, .has = q->has};
    r.think = q->think;
    r.turn = q->turn;
    r.in = q->in;
    r.cached = q->cached;
    r.out = q->out;
    r.reasoning = q->reasoning;
    r.max_tokens = q->max_tokens;
    r.tools_count = q->tools_count;
    r.tools_tokens = q->tools_tokens;
    r.n_msgs = q->n_msgs;
    r.msgs = q->n_msgs ? p->msgs + q->msgs_at : NULL;
    r.n_calls = q->n_calls;
    r.calls = q->n_calls ? p->calls + q->calls_at : NULL;
    r.model = q->model >= 0 ? p->names[q->model] : NULL;
    r.api = q->api >= 0 ? p->names[q->api] : NULL;
    if (u->session) {
        r.has |= LT_HAS_SESSION;
        r.session = a->sid;
    }
    if (q->n_blocks) {
        if (q->n_blocks > g->cap_blocks) {
            uint64_t *b = realloc(g->blocks, q->n_blocks * sizeof *b);
            if (!b)
                return lt_errset(err, LT_ENOMEM, "synth: out of memory");
            g->blocks = b;
            g->cap_blocks = q->n_blocks;
        }
        uint64_t own = lt_mix64(lt_mix64(g->o->seed) ^ a->draw);
        for (uint32_t i = 0; i < q->n_blocks; i++) {
            uint64_t id = p->blocks[q->blocks_at + i];
            g->blocks[i] = p->multi[q->blocks_at + i] ? lt_mix64(id ^ SALT_MULTI ^ g->o->seed)
                                                      : lt_mix64(lt_mix64(id) ^ own);
        }
        r.blocks = g->blocks;
        r.n_blocks = q->n_blocks;
    }
    a->turn++;
    a->cur = q->next;
    if (a->cur != NO_NEXT)
        a->t = a->base + p->recs[a->cur].off;
    return put(g, &r, err);
}

/* Whether a unit of n turns fits in the request limit with the turns still
 * to come: a session is never cut in half, so one that would pass the
 * limit is not started (and none after it). */
static bool fits(const struct gen *g, uint64_t n)
{
    return !g->limit || g->records + g->pending + n <= g->limit;
}

/* Start a unit at time t (us): emit its first record; keep it on the heap if
 * it has more. Returns 1, having emitted nothing, when it would not fit in
 * the request limit. */
static int start_unit(struct gen *g, int64_t t, struct lt_err *err)
{
    const struct lt_synth_opts *o = g->o;
    struct active *a = calloc(1, sizeof *a);
    if (!a)
        return lt_errset(err, LT_ENOMEM, "synth: out of memory");
    int rc = 0;
    a->t = t;
    a->seq = g->seq++;
    a->draw = ++g->draws;
    a->sid = a->draw;
    if (g->fit) {
        a->unit = (uint32_t)lt_rng_below(&g->rng, g->pool.n_units);
        a->base = t;
        a->turns = g->pool.units[a->unit].n;
        a->cur = g->pool.units[a->unit].first;
        if (!fits(g, a->turns)) {
            rc = 1;
            goto out;
        }
        LT_TRY(emit_fitted(g, a, err));
    } else {
        a->turns = g->sessions ? draw_len(&o->turns, &g->rng) : 1;
        if (a->turns < 1)
            a->turns = 1;
        if (!fits(g, a->turns)) {
            rc = 1;
            goto out;
        }
        if (o->prefix_tokens && lt_rng_uniform(&g->rng) < o->prefix_share) {
            uint32_t k = (uint32_t)lt_rng_below(&g->rng, o->prefix_count ? o->prefix_count : 1);
            if (add_seg(a, ROLE_SYSTEM, o->prefix_tokens,
                        lt_mix64(lt_mix64(o->seed ^ SALT_BLOCK) ^ k)) < 0) {
                rc = lt_errset(err, LT_ENOMEM, "synth: out of memory");
                goto out;
            }
        }
        LT_TRY(emit_generated(g, a, err));
        if (a->turn < a->turns) {
            a->think = (int64_t)llround(lt_rng_exp(&g->rng, (double)o->think_us));
            a->t += a->think;
        }
    }
    if (a->turn < a->turns) {
        a->seq = g->seq++;
        if (lt_heap_push(&g->heap, &a) < 0) {
            rc = lt_errset(err, LT_ENOMEM, "synth: out of memory");
            goto out;
        }
        g->pending += a->turns - a->turn;
        a = NULL;
    }
out:
    active_free(a);
    return rc;
}

/* Emit the next turn of the earliest session in progress. */
static int continue_unit(struct gen *g, struct lt_err *err)
{
    struct active *a = heap_pop(g);
    int rc = 0;
    g->pending--;
    if (g->fit) {
        LT_TRY(emit_fitted(g, a, err));
    } else {
        LT_TRY(emit_generated(g, a, err));
        if (a->turn < a->turns) {
            a->think = (int64_t)llround(lt_rng_exp(&g->rng, (double)g->o->think_us));
            a->t += a->think;
        }
    }
    if (a->turn < a->turns) {
        a->seq = g->seq++;
        if (lt_heap_push(&g->heap, &a) < 0) {
            rc = lt_errset(err, LT_ENOMEM, "synth: out of memory");
            goto out;
        }
        a = NULL;
    }
out:
    active_free(a);
    return rc;
}

static int check_opts(const struct lt_synth_opts *o, struct lt_err *err)
{
    if (o->shape == LT_SHAPE_RAMP && o->duration_us <= 0)
        return lt_errset(err, LT_EINVAL, "a ramp needs a duration (it spans the duration)");
    if (o->shape != LT_SHAPE_RAMP && !o->fit && !(o->rate > 0))
        return lt_errset(err, LT_EINVAL, "give a rate (requests per second)");
    if (o->shape == LT_SHAPE_RAMP && o->rate > 0)
        return lt_errset(err, LT_EINVAL, "a ramp sets its own rates; leave out the rate");
    if (!o->fit && o->duration_us <= 0 && o->requests == 0)
        return lt_errset(err, LT_EINVAL, "give a duration or a number of requests");
    double peak = o->shape == LT_SHAPE_RAMP      ? fmax(o->shape_a, o->shape_b)
                  : o->shape == LT_SHAPE_DIURNAL ? o->rate * (1 + o->shape_b)
                                                 : o->rate;
    if (!(peak <= LT_SYNTH_RATE_MAX))
        return lt_errset(err, LT_EINVAL,
                         "a rate of %g req/s is more than a trace holds (%g req/s: its clock "
                         "counts microseconds)",
                         peak, LT_SYNTH_RATE_MAX);
    if (o->fit && !strcmp(o->fit, "-"))
        return lt_errset(err, LT_EINVAL, "the trace to fit must be a file: it is read twice");
    if (o->fit &&
        (o->in.kind || o->out.kind || o->turns.kind || o->prefix_tokens || o->reasoning_share > 0))
        return lt_errset(err, LT_EINVAL,
                         "lengths, sessions, prefixes and reasoning come from the fitted trace; "
                         "they cannot be given with a fit");
    if (!o->fit && (!o->in.kind || !o->out.kind))
        return lt_errset(err, LT_EINVAL, "give input and output lengths (or a trace to fit)");
    if (o->reasoning_share < 0 || o->reasoning_share > 1 || o->reasoning_frac < 0 ||
        o->reasoning_frac > 1)
        return lt_errset(err, LT_EINVAL, "reasoning share and fraction must be within 0..1");
    if (o->prefix_share < 0 || o->prefix_share > 1)
        return lt_errset(err, LT_EINVAL, "the prefix share must be within 0..1");
    return 0;
}

int lt_synth_run(const struct lt_synth_opts *o, const char *out_path, struct lt_synth_stats *st,
                 struct lt_err *err)
{
    int rc = 0;
    struct gen g = {.o = o};
    lt_buf_init(&g.extra, (size_t)1 << 16);
    lt_heap_init(&g.heap, sizeof(struct active *), before, NULL, NULL);
    struct gapstore gaps = {0};
    struct lt_synth_stats dummy;
    struct lt_buf meta;
    lt_buf_init(&meta, 1 << 20);
    if (!st)
        st = &dummy;
    memset(st, 0, sizeof *st);
    LT_TRY(check_opts(o, err));
    lt_rng_seed(&g.rng, o->seed);

    struct arrivals arr = {.kind = o->arrivals,
                           .shape = o->shape,
                           .rate = o->rate,
                           .r0 = o->shape_a,
                           .r1 = o->shape_b,
                           .period = o->shape_a,
                           .amp = o->shape_b,
                           .per_unit = 1};
    arr.dur = (double)o->duration_us / 1e6;
    double cv = o->arrivals == LT_ARR_GAMMA ? o->cv : o->arrivals == LT_ARR_CONSTANT ? 0 : 1;
    uint64_t requests = o->requests;
    g.round_us = o->round_us > 0 ? o->round_us : 0;
    g.block_tokens = o->block_tokens;
    g.sessions = o->turns.kind != LT_LEN_NONE;
    if (o->fit) {
        struct fit_info fi = {0};
        LT_TRY(fit_pass1(o->fit, &fi, err));
        size_t max_recs = o->fit_sample ? o->fit_sample : FIT_SAMPLE_DEFAULT;
        /* Aim below the cap, so that the cap (a hard memory bound) almost
         * never cuts the sample short, which would favour the trace's start. */
        double keep = 0.9 * (double)max_recs / (double)fi.records;
        if (fi.records <= max_recs)
            keep = 1;
        if (gapstore_init(&gaps, max_recs, o->seed) < 0) {
            rc = lt_errset(err, LT_ENOMEM, "fit: out of memory for the gaps");
            goto out;
        }
        LT_TRY(fit_pass2(o->fit, o->seed, keep, max_recs, &fi, &g.pool, &gaps, err));
        if (!g.pool.n_units) {
            rc = lt_errset(err, LT_EINVAL, "%s: the sample of the trace is empty", o->fit);
            goto out;
        }
        LT_TRY(pool_mark_shared(&g.pool) < 0 ? lt_errset(err, LT_ENOMEM, "out of memory") : 0);
        g.fit = true;
        g.block_tokens = fi.block_tokens;
        st->fit_records = fi.records;
        st->fit_pool = g.pool.n_recs;
        st->fit_units = g.pool.n_units;
        st->fit_rate = fi.rate;
        st->fit_cv = fi.unit_cv;
        if (!(arr.rate > 0) && o->shape != LT_SHAPE_RAMP) {
            if (!(fi.rate > 0)) {
                rc = lt_errset(err, LT_EINVAL,
                               "%s: all records arrive at once, so there is no rate to fit; "
                               "give one",
                               o->fit);
                goto out;
            }
            if (fi.rate > LT_SYNTH_RATE_MAX) {
                rc = lt_errset(err, LT_EINVAL,
                               "%s: its rate, %g req/s, is more than a synthesized trace holds "
                               "(%g req/s); give a lower --rate",
                               o->fit, fi.rate, LT_SYNTH_RATE_MAX);
                goto out;
            }
            arr.rate = fi.rate;
        }
        if (o->arrivals == LT_ARR_DEFAULT || o->arrivals == LT_ARR_EMPIRICAL) {
            cv = fi.unit_cv;
            arr.kind = gapstore_finish(&gaps) ? LT_ARR_EMPIRICAL : LT_ARR_CONSTANT;
            arr.emp = &gaps;
        }
        if (o->arrivals == LT_ARR_GAMMA && o->cv == 0) {
            cv = fi.unit_cv;
            arr.kind = cv > 0 ? LT_ARR_GAMMA : LT_ARR_CONSTANT;
        }
        if (o->round_us < 0)
            g.round_us = fi.granularity_us > 1 ? fi.granularity_us : 0;
        if (o->duration_us <= 0 && requests == 0)
            requests = fi.records;
        arr.per_unit = (double)g.pool.n_recs / (double)g.pool.n_units;
    } else {
        if (arr.kind == LT_ARR_DEFAULT)
            arr.kind = LT_ARR_POISSON;
        if (arr.kind == LT_ARR_EMPIRICAL || (arr.kind == LT_ARR_GAMMA && o->cv == 0)) {
            rc = lt_errset(err, LT_EINVAL, "%s arrivals need a trace to fit",
                           arr.kind == LT_ARR_EMPIRICAL ? "empirical" : "gamma:fit");
            goto out;
        }
        if (g.sessions)
            arr.per_unit = fmax(1, len_mean(&o->turns));
    }
    if (arr.kind == LT_ARR_GAMMA) {
        arr.k = 1 / (cv * cv);
        arr.theta = cv * cv;
    }
    st->arrivals = lt_arrivals_name(arr.kind);
    st->cv = arr.kind == LT_ARR_CONSTANT ? 0 : arr.kind == LT_ARR_POISSON ? 1 : cv;
    if (arr.kind != LT_ARR_EMPIRICAL)
        gapstore_release(&gaps);
    st->unit_rate = arr.rate / arr.per_unit;
    st->round_us = g.round_us;

    char seed[32], rate[32], cvs[32], nrec[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
    snprintf(rate, sizeof rate, "%.6g", arr.rate);
    snprintf(cvs, sizeof cvs, "%.6g", st->cv);
    snprintf(nrec, sizeof nrec, "%llu", (unsigned long long)st->fit_records);
    const char *keys[] = {"seed", "arrivals", "cv", "rate", "command", "fit", "fit_records"};
    const char *vals[] = {
        seed, st->arrivals, cvs, rate, o->command ? o->command : "", o->fit ? o->fit : "", nrec};
    LT_TRY(lt_meta_pack(&meta, keys, vals, o->fit ? 7 : 5));
    struct lt_header h = {.kind = LT_KIND_TRACE,
                          .created = o->created ? o->created : "1970-01-01T00:00:00Z",
                          .source = o->fit ? "synth:fit" : "synth",
                          .block_tokens = g.block_tokens,
                          .meta = (const uint8_t *)meta.p,
                          .meta_len = meta.len};
    /* Frames are cut by count only, never by the clock, so that the bytes do
     * not depend on how fast this machine is. */
    struct lt_writer_opts wo = {.frame_ms = INT64_C(1000000000)};
    g.w = lt_writer_open(out_path, &h, &wo, err);
    if (!g.w) {
        rc = err ? err->code : LT_EIO;
        goto out;
    }

    /* The arrival process runs on its own generator, so that how lengths are
     * drawn never changes when requests arrive. */
    struct lt_rng arng;
    lt_rng_seed(&arng, lt_mix64(o->seed ^ UINT64_C(0xa11a1)));
    bool more_units = true;
    int64_t next_unit = 0;
    double t_s = next_arrival(&arr, &arng);
    g.limit = requests;
    while (requests == 0 || g.records < requests) {
        if (more_units) {
            if (!isfinite(t_s) || t_s * 1e6 > 9e18 ||
                (o->duration_us > 0 && t_s * 1e6 > (double)o->duration_us))
                more_units = false;
            else
                next_unit = (int64_t)floor(t_s * 1e6);
        }
        struct active *first = heap_first(&g);
        bool have_turn = first && (o->duration_us <= 0 || first->t <= o->duration_us);
        if (!more_units && !have_turn)
            break;
        if (have_turn && (!more_units || first->t <= next_unit)) {
            LT_TRY(continue_unit(&g, err));
        } else {
            if ((rc = start_unit(&g, next_unit, err)) < 0)
                goto out;
            if (rc == 1) { /* the next session would pass --requests */
                rc = 0;
                more_units = false;
                continue;
            }
            st->units++;
            t_s = next_arrival(&arr, &arng);
            if (arr.stalled) {
                rc = lt_errset(err, LT_EINVAL,
                               "the arrival time stopped moving at %.6f s after %llu units: "
                               "this rate and length are too much for a trace",
                               arr.t, (unsigned long long)st->units);
                goto out;
            }
        }
    }
    st->records = g.records;
    rc = lt_writer_close(g.w, err);
    g.w = NULL;
out:
    if (g.w)
        lt_writer_close(g.w, NULL);
    while (lt_heap_len(&g.heap))
        active_free(heap_pop(&g));
    lt_heap_release(&g.heap);
    free(g.blocks);
    free(g.msgs);
    lt_buf_release(&g.extra);
    pool_release(&g.pool);
    gapstore_release(&gaps);
    lt_buf_release(&meta);
    return rc;
}

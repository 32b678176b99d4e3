/*
 * The fleet's router (route.h): consistent hashing on a ring of virtual
 * points, bounded loads, smooth weighted round-robin. Every hash comes
 * from the replica's index and the request's own ids, never from an
 * address or a pointer, so two processes with the same options agree.
 */
#include "replay/route.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Virtual points per replica: with 128 the keys a replica owns are within
 * about 10 % of 1/N (the usual figure for ~100 points). */
#define POINTS 128
/* Points and keys are hashed apart: a session id equal to a point's
 * (replica << 32 | v) must not land on that very point. */
#define RING_SALT 0x6a09e667f3bcc909ULL

static uint64_t mix(uint64_t x)
{
    /* splitmix64's finalizer: every input bit moves every output bit. */
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static const struct {
    const char *name;
    enum lt_route_policy p;
} names[] = {
    {"round-robin", LT_ROUTE_ROUND_ROBIN}, {"least-outstanding", LT_ROUTE_LEAST_OUTSTANDING},
    {"session", LT_ROUTE_SESSION},         {"prefix", LT_ROUTE_PREFIX},
    {"weighted", LT_ROUTE_WEIGHTED},
};

bool lt_route_parse(const char *s, struct lt_route_opts *o)
{
    if (!strncmp(s, "prefix:", 7)) {
        char *end;
        long k = strtol(s + 7, &end, 10);
        if (end == s + 7 || *end || k < 1 || k > 1024)
            return false;
        o->policy = LT_ROUTE_PREFIX;
        o->prefix_blocks = (uint32_t)k;
        return true;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i].name)) {
            o->policy = names[i].p;
            return true;
        }
    return false;
}

const char *lt_route_name(enum lt_route_policy p)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].p == p)
            return names[i].name;
    return "?";
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* One period of smooth weighted round-robin (nginx's): each step every
 * replica gains its weight, the richest is chosen and pays the total.
 * The order interleaves (weights 5,1,1 give a a b a c a a), unlike
 * blocks of the same replica. */
static int build_table(struct lt_route *r, struct lt_err *err)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < r->o.n; i++)
        sum += r->weights[i];
    r->table = malloc(sum * sizeof *r->table);
    int64_t *cur = calloc(r->o.n, sizeof *cur);
    if (!r->table || !cur) {
        free(cur);
        return lt_errset(err, LT_ENOMEM, "out of memory for the router's table");
    }
    for (uint64_t s = 0; s < sum; s++) {
        uint32_t best = 0;
        for (uint32_t i = 0; i < r->o.n; i++) {
            cur[i] += r->weights[i];
            if (cur[i] > cur[best])
                best = i;
        }
        cur[best] -= (int64_t)sum;
        r->table[s] = (uint16_t)best;
    }
    r->n_table = sum;
    free(cur);
    return 0;
}

int lt_route_init(struct lt_route *r, const struct lt_route_opts *o, struct lt_err *err)
{
    memset(r, 0, sizeof *r);
    if (o->n < 1 || o->n > LT_ROUTE_MAX)
        return lt_errset(err, LT_EINVAL, "a fleet has 1 to %d replicas, not %u", LT_ROUTE_MAX,
                         (unsigned)o->n);
    if (o->policy == LT_ROUTE_PREFIX && o->bound != 0 && !(o->bound > 1))
        return lt_errset(err, LT_EINVAL, "the prefix router's load bound must be above 1, not %g",
                         o->bound);
    r->o = *o;
    r->o.weights = NULL;
    if (!r->o.prefix_blocks)
        r->o.prefix_blocks = LT_ROUTE_PREFIX_BLOCKS;
    if (!(r->o.bound > 1))
        r->o.bound = LT_ROUTE_BOUND;
    for (uint32_t i = 0; i < o->n; i++) {
        uint32_t w = o->weights ? o->weights[i] : 1;
        if (w < 1 || w > LT_ROUTE_WEIGHT_MAX)
            return lt_errset(err, LT_EINVAL, "replica %u: weight %u is not 1 to %d", (unsigned)i,
                             (unsigned)w, LT_ROUTE_WEIGHT_MAX);
        r->weights[i] = w;
    }
    r->inflight = calloc(o->n, sizeof *r->inflight);
    r->down = calloc(o->n, sizeof *r->down);
    r->ring = malloc((size_t)o->n * POINTS * sizeof *r->ring);
    if (!r->inflight || !r->down || !r->ring) {
        lt_route_release(r);
        return lt_errset(err, LT_ENOMEM, "out of memory for the router");
    }
    r->n_up = o->n;
    for (uint32_t i = 0; i < o->n; i++)
        for (uint32_t v = 0; v < POINTS; v++)
            r->ring[r->n_ring++] =
                (mix(mix(((uint64_t)i << 32) | v) ^ RING_SALT) & ~(uint64_t)0xff) | i;
    qsort(r->ring, r->n_ring, sizeof *r->ring, cmp_u64);
    if (o->policy == LT_ROUTE_WEIGHTED) {
        int rc = build_table(r, err);
        if (rc < 0) {
            lt_route_release(r);
            return rc;
        }
    }
    return 0;
}

void lt_route_release(struct lt_route *r)
{
    free(r->inflight);
    free(r->down);
    free(r->ring);
    free(r->table);
    r->inflight = NULL;
    r->down = NULL;
    r->ring = NULL;
    r->table = NULL;
}

/* The first ring point at or after h. */
static size_t ring_at(const struct lt_route *r, uint64_t h)
{
    uint64_t want = h & ~(uint64_t)0xff;
    size_t lo = 0, hi = r->n_ring;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->ring[mid] < want)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == r->n_ring ? 0 : lo;
}

/* Walk the ring from h: the first replica up (and, with a cap, below it). */
static int ring_walk(struct lt_route *r, uint64_t h, uint64_t cap)
{
    size_t p = ring_at(r, h);
    int first = -1;
    for (size_t k = 0; k < r->n_ring; k++, p = p + 1 == r->n_ring ? 0 : p + 1) {
        int i = (int)(r->ring[p] & 0xff);
        if (r->down[i])
            continue;
        if (first < 0)
            first = i;
        if (!cap || r->inflight[i] < cap) {
            if (cap && i != first)
                r->spilled++;
            return i;
        }
    }
    return first;
}

static uint64_t session_hash(const struct lt_route_key *k)
{
    return k->session ? mix(k->session) : mix(k->index ^ 0x5bd1e9955bd1e995ULL);
}

int lt_route_pick(struct lt_route *r, const struct lt_route_key *k)
{
    if (!r->n_up)
        return -1;
    uint32_t n = r->o.n;
    int pick = -1;
    switch (r->o.policy) {
    case LT_ROUTE_ROUND_ROBIN: {
        /* seq mod (replicas up), among those up: the same as seq mod N
         * while all are, and a replica's share spread over the rest (not
         * all of it on its neighbour) once one is down. */
        uint64_t want = k->seq % r->n_up;
        for (uint32_t i = 0; i < n && pick < 0; i++)
            if (!r->down[i] && want-- == 0)
                pick = (int)i;
        break;
    }
    case LT_ROUTE_LEAST_OUTSTANDING: {
        uint32_t i = (uint32_t)(k->seq % n); /* one division, not one a replica */
        for (uint32_t j = 0; j < n; j++, i = i + 1 == n ? 0 : i + 1)
            if (!r->down[i] && (pick < 0 || r->inflight[i] < r->inflight[pick]))
                pick = (int)i;
        break;
    }
    case LT_ROUTE_SESSION:
        pick = ring_walk(r, session_hash(k), 0);
        break;
    case LT_ROUTE_PREFIX: {
        uint64_t h;
        if (k->n_blocks) {
            h = 0x243f6a8885a308d3ULL;
            uint32_t m = k->n_blocks < r->o.prefix_blocks ? k->n_blocks : r->o.prefix_blocks;
            for (uint32_t j = 0; j < m; j++)
                h = mix(h ^ k->blocks[j]);
        } else {
            h = session_hash(k);
        }
        uint64_t cap = (uint64_t)ceil(r->o.bound * (double)(r->total + 1) / r->n_up);
        pick = ring_walk(r, h, cap ? cap : 1);
        break;
    }
    case LT_ROUTE_WEIGHTED:
        for (size_t j = 0; j < r->n_table && pick < 0; j++) {
            uint32_t i = r->table[(k->seq + j) % r->n_table];
            if (!r->down[i])
                pick = (int)i;
        }
        break;
    }
    if (pick >= 0) {
        r->inflight[pick]++;
        r->total++;
    }
    return pick;
}

void lt_route_done(struct lt_route *r, int i)
{
    if (i < 0 || (uint32_t)i >= r->o.n || !r->inflight[i])
        return;
    r->inflight[i]--;
    r->total--;
}

void lt_route_down(struct lt_route *r, int i)
{
    if (i < 0 || (uint32_t)i >= r->o.n || r->down[i])
        return;
    r->down[i] = true;
    r->n_up--;
}

/*
 * The router of a fleet (docs/replay.md "Fleets and routing"): which of N
 * replicas serves a request. Pure code, no I/O and no clock, so that the
 * live engine, each MPI rank and the virtual fleet (cli/replay_virtual.c)
 * run the same decisions: a request goes to the same replica wherever it
 * is routed, as long as the policy's state is the same (round-robin,
 * weighted and session routing depend on the request alone; prefix
 * routing also on the load when its bound binds; least-outstanding only
 * on the load).
 *
 * Policies:
 *   round-robin        the request's place in the schedule (seq) mod N (mod
 *                      the replicas up, among them, once one is down):
 *                      every rank of an MPI job agrees without talking;
 *   least-outstanding  fewest requests in flight (ties: the lowest index
 *                      after seq mod N, so ties spread);
 *   session            consistent hashing of the session id (a request
 *                      without one: its record number), so every turn of
 *                      a conversation meets its own cache;
 *   prefix             consistent hashing of the prompt's first K prefix
 *                      blocks (no blocks: as session), with bounded load:
 *                      a replica takes a request only while its in-flight
 *                      count is below ceil(c * (in flight + 1) / N up), else
 *                      the next replica on the ring does (Mirrokni, Thorup
 *                      and Zadimoghaddam, "Consistent Hashing with Bounded
 *                      Loads", 2018), so a hot prefix cannot overload one;
 *   weighted           smooth weighted round-robin by each replica's stated
 *                      capacity (an integer weight), indexed by seq.
 *
 * A replica marked down (lt_route_down: it failed, under --failover) gets
 * nothing more; consistent hashing then moves only its own keys.
 */
#ifndef LT_ROUTE_H
#define LT_ROUTE_H

#include "base/lt_err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum lt_route_policy {
    LT_ROUTE_ROUND_ROBIN,
    LT_ROUTE_LEAST_OUTSTANDING,
    LT_ROUTE_SESSION,
    LT_ROUTE_PREFIX,
    LT_ROUTE_WEIGHTED,
};

#define LT_ROUTE_MAX 256 /* replicas */
#define LT_ROUTE_WEIGHT_MAX 1000
#define LT_ROUTE_BOUND 1.25 /* prefix routing's default load bound c */
#define LT_ROUTE_PREFIX_BLOCKS 1

struct lt_route_opts {
    enum lt_route_policy policy;
    uint32_t n;              /* replicas, 1 .. LT_ROUTE_MAX */
    const uint32_t *weights; /* weighted: n weights 1 .. LT_ROUTE_WEIGHT_MAX; NULL = all 1 */
    uint32_t prefix_blocks;  /* prefix: blocks hashed; 0 = LT_ROUTE_PREFIX_BLOCKS */
    double bound;            /* prefix: c > 1; 0 = LT_ROUTE_BOUND */
};

/* What the router knows of a request. */
struct lt_route_key {
    uint64_t seq;     /* its place in the run's schedule (the same in every rank) */
    uint64_t index;   /* its record number in the trace */
    uint64_t session; /* 0 = none */
    const uint64_t *blocks;
    uint32_t n_blocks;
};

struct lt_route {
    struct lt_route_opts o;
    uint32_t weights[LT_ROUTE_MAX];
    uint32_t *inflight; /* n */
    bool *down;         /* n */
    uint32_t n_up;
    uint64_t total; /* in flight over all replicas */
    uint64_t *ring; /* points: (hash << 8 | replica), sorted */
    size_t n_ring;
    uint16_t *table; /* weighted: one period of the smooth WRR order */
    size_t n_table;
    uint64_t spilled; /* prefix: requests the bound sent past their first choice */
};

/* Parse a policy name ("round-robin", "least-outstanding", "session",
 * "prefix", "prefix:K" (K blocks), "weighted") into o->policy (and
 * o->prefix_blocks). Returns false when it is none of them. */
bool lt_route_parse(const char *s, struct lt_route_opts *o);
/* The policy's name, as parsed. */
const char *lt_route_name(enum lt_route_policy p);

/* Set r up for o (copied; weights too). No I/O. Returns 0, LT_EINVAL
 * (bad options) or LT_ENOMEM, with err filled. */
int lt_route_init(struct lt_route *r, const struct lt_route_opts *o, struct lt_err *err);
void lt_route_release(struct lt_route *r);

/* The replica for k, counted in flight there; -1 when every replica is
 * down. */
int lt_route_pick(struct lt_route *r, const struct lt_route_key *k);
/* A request picked for replica i ended (any way). */
void lt_route_done(struct lt_route *r, int i);
/* Replica i failed: nothing more goes there. */
void lt_route_down(struct lt_route *r, int i);
static inline bool lt_route_is_down(const struct lt_route *r, int i)
{
    return r->down[i];
}

#endif

/*
 * Sessions inferred from prefix blocks (`import --infer-sessions`,
 * docs/import.md "Sessions from prefix blocks"), shared inside workload/
 * by the importer that applies it (trace_import.c) and its tests.
 *
 * Requests are added in arrival order; each is linked to the earlier
 * request it continues, or starts a session of its own. Links go only to
 * requests added before, so the sessions are chains and never cycles.
 */
#ifndef LT_SESSION_INFER_INTERNAL_H
#define LT_SESSION_INFER_INTERNAL_H

#include "base/lt_u64map.h"
#include "workload/trace_import.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Earlier requests of one shape: those whose whole block list hashes to a
 * key (a "full" class), or those of k blocks whose first k - 1 blocks hash
 * to a key (a "group"). Requests that already have a next turn count in
 * all only; the open ones are also summed by index, so that when one open
 * request is left, the sum names it. */
struct infer_class {
    uint64_t all;
    uint64_t open;
    uint64_t open_sum;
};

struct infer_node {
    uint64_t session;
    uint32_t turn;
    uint32_t in;
    uint32_t group; /* its index in groups */
    uint32_t full;  /* its index in fulls */
    bool has_in;
    bool has_child;
};

struct session_infer {
    struct lt_u64map group_map; /* key -> index in groups + 1 */
    struct lt_u64map full_map;  /* key -> index in fulls + 1 */
    struct infer_class *groups, *fulls;
    size_t n_groups, groups_cap, n_fulls, fulls_cap;
    struct infer_node *nodes;
    size_t n_nodes, nodes_cap;
    uint32_t *turns; /* turns of each session made */
    size_t n_sessions, turns_cap;
    uint64_t *hash; /* scratch: the request's prefix hashes */
    size_t hash_cap;
    uint64_t linked, tied, branched, shorter;
};

void lt__session_infer_init(struct session_infer *s);
void lt__session_infer_release(struct session_infer *s);

/* Link the request with blocks b[0..n-1] (n > 0) and prompt in (has_in:
 * whether it is known) to an earlier one, and say its session and turn.
 * Returns 0, or LT_ENOMEM (nothing changed). */
int lt__session_infer_add(struct session_infer *s, const uint64_t *b, uint32_t n, bool has_in,
                      uint32_t in, uint64_t *session, uint32_t *turn);

/* What was found so far: chains, chained, the left-alone counts and the
 * turns per session, into st. */
void lt__session_infer_stats(const struct session_infer *s, struct lt_import_stats *st);

#endif

/*
 * Sessions from prefix blocks. A conversation's next turn sends the
 * previous prompt and answer again plus a new message, so its blocks
 * extend the previous request's blocks, with one exception that real
 * traces (Mooncake's 512-token blocks) show on most turns: the previous
 * prompt's last block was partial, and once the next turn appends to it
 * its content, and so its id, changes. A request R of n blocks therefore
 * continues an earlier request P of k blocks when
 *
 *   full:    P's k blocks are R's first k (k < n), or
 *   partial: P's first k - 1 blocks are R's first k - 1 and P's last block
 *            differs from R's k-th (2 <= k <= n: at least one block is
 *            shared, else any two prompts would match).
 *
 * The candidates are ranked by how much of R they cover: partial at k
 * (k - 1 shared blocks and one more that grew) above full at k - 1, above
 * partial at k - 1, and so on. At the best rank that has any candidate:
 *
 *   exactly one has no next turn yet  -> R is its next turn, unless R's
 *                                        prompt is not longer ("shorter")
 *   none is left (all were continued) -> R is a branch: a session of its own
 *   two or more are left               -> a tie: a session of its own
 *
 * Prefixes are compared by a 64-bit hash of the whole prefix, never by one
 * block id: ids of other traces need not chain ([9,2,3] does not extend
 * [1,2]). Candidates are counted, not listed: each class of requests (same
 * blocks; same blocks but the last) keeps how many there are, how many are
 * open (no next turn yet) and the sum of the open ones' indices, which
 * names the one when one is left. So each request costs one lookup pair
 * per block and memory is a few dozen bytes per request, however many
 * requests share a system prompt.
 */
#include "workload/session_infer_internal.h"
#include "base/lt_err.h"
#include "base/lt_rng.h"

#include <stdlib.h>
#include <string.h>

#define HASH_SEED 0x6c74736573736e31ULL /* the hash of no blocks */

void lt__session_infer_init(struct session_infer *s)
{
    memset(s, 0, sizeof *s);
    lt_u64map_init(&s->group_map);
    lt_u64map_init(&s->full_map);
}

void lt__session_infer_release(struct session_infer *s)
{
    lt_u64map_release(&s->group_map);
    lt_u64map_release(&s->full_map);
    free(s->groups);
    free(s->fulls);
    free(s->nodes);
    free(s->turns);
    free(s->hash);
    memset(s, 0, sizeof *s);
}

/* Room for n + 1 items of size sz in *p. */
static bool grow(void **p, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? *cap : 256;
    while (c <= n) {
        if (c > SIZE_MAX / 2 / sz)
            return false;
        c *= 2;
    }
    void *q = realloc(*p, c * sz);
    if (!q)
        return false;
    *p = q;
    *cap = c;
    return true;
}

static const struct infer_class *find(const struct lt_u64map *map, const struct infer_class *cl,
                                      uint64_t key)
{
    const uint64_t *v = lt_u64map_get(map, key);
    return v && *v ? &cl[*v - 1] : NULL;
}

/* The class of key in map, made if new (cap has room for one more). */
static int class_of(struct lt_u64map *map, struct infer_class *cl, size_t *n, uint64_t key,
                    uint32_t *idx)
{
    uint64_t *v = lt_u64map_upsert(map, key, NULL);
    if (!v)
        return LT_ENOMEM;
    if (!*v) {
        cl[*n] = (struct infer_class){0};
        *v = ++*n;
    }
    *idx = (uint32_t)(*v - 1);
    return 0;
}

enum verdict { NONE, LINK, TIED, BRANCHED };

/* What a rank with `all` candidates, `open` of them open, says. */
static enum verdict judge(uint64_t all, uint64_t open)
{
    if (!all)
        return NONE;
    return open == 1 ? LINK : open ? TIED : BRANCHED;
}

int lt__session_infer_add(struct session_infer *s, const uint64_t *b, uint32_t n, bool has_in,
                      uint32_t in, uint64_t *session, uint32_t *turn)
{
    if (!n || s->n_nodes >= UINT32_MAX - 1)
        return LT_ENOMEM;
    if (!grow((void **)&s->hash, &s->hash_cap, n, sizeof *s->hash) ||
        !grow((void **)&s->nodes, &s->nodes_cap, s->n_nodes, sizeof *s->nodes) ||
        !grow((void **)&s->groups, &s->groups_cap, s->n_groups, sizeof *s->groups) ||
        !grow((void **)&s->fulls, &s->fulls_cap, s->n_fulls, sizeof *s->fulls) ||
        !grow((void **)&s->turns, &s->turns_cap, s->n_sessions, sizeof *s->turns))
        return LT_ENOMEM;
    uint64_t *h = s->hash; /* h[i]: the hash of the first i blocks */
    h[0] = HASH_SEED;
    for (uint32_t i = 0; i < n; i++)
        h[i + 1] = lt_mix64(h[i] ^ lt_mix64(b[i]));

    enum verdict v = NONE;
    uint64_t parent = 0;
    for (uint32_t k = n; k >= 1 && v == NONE; k--) {
        if (k >= 2) { /* partial at k: the group of k-block requests sharing k - 1 */
            const struct infer_class *g = find(&s->group_map, s->groups, h[k - 1]);
            if (g) {
                /* those whose k-th block is R's too are not partial here */
                const struct infer_class *f = find(&s->full_map, s->fulls, h[k]);
                struct infer_class z = {0};
                if (!f)
                    f = &z;
                v = judge(g->all - f->all, g->open - f->open);
                parent = g->open_sum - f->open_sum;
            }
        }
        if (v == NONE && k - 1 >= 1) { /* full at k - 1 */
            const struct infer_class *f = find(&s->full_map, s->fulls, h[k - 1]);
            if (f) {
                v = judge(f->all, f->open);
                parent = f->open_sum;
            }
        }
    }
    if (v == LINK && has_in && s->nodes[parent].has_in && in <= s->nodes[parent].in)
        v = NONE, s->shorter++;

    uint32_t gi, fi;
    int rc;
    if ((rc = class_of(&s->group_map, s->groups, &s->n_groups, h[n - 1], &gi)) < 0 ||
        (rc = class_of(&s->full_map, s->fulls, &s->n_fulls, h[n], &fi)) < 0)
        return rc;

    uint64_t self = s->n_nodes++;
    struct infer_node *c = &s->nodes[self];
    *c = (struct infer_node){.in = in, .has_in = has_in, .group = gi, .full = fi};
    if (v == LINK) {
        struct infer_node *p = &s->nodes[parent];
        p->has_child = true;
        s->groups[p->group].open--, s->groups[p->group].open_sum -= parent;
        s->fulls[p->full].open--, s->fulls[p->full].open_sum -= parent;
        c->session = p->session;
        c->turn = p->turn + 1;
        s->turns[c->session]++;
        s->linked++;
    } else {
        s->tied += v == TIED;
        s->branched += v == BRANCHED;
        c->session = s->n_sessions;
        s->turns[s->n_sessions++] = 1;
    }
    struct infer_class *cl[2] = {&s->groups[gi], &s->fulls[fi]};
    for (int i = 0; i < 2; i++)
        cl[i]->all++, cl[i]->open++, cl[i]->open_sum += self;
    *session = c->session;
    *turn = c->turn;
    return 0;
}

void lt__session_infer_stats(const struct session_infer *s, struct lt_import_stats *st)
{
    st->chains = s->n_sessions;
    st->chained = s->linked;
    st->infer_tied = s->tied;
    st->infer_branched = s->branched;
    st->infer_shorter = s->shorter;
    memset(st->turns_hist, 0, sizeof st->turns_hist);
    st->turns_max = 0;
    for (size_t i = 0; i < s->n_sessions; i++) {
        uint32_t t = s->turns[i];
        int bin = 0;
        while (bin < LT_IMPORT_TURN_BINS - 1 && t >> (bin + 1))
            bin++;
        st->turns_hist[bin]++;
        if (t > st->turns_max)
            st->turns_max = t;
    }
}

/*
 * The prefix-cache hit rate a sequence of requests allows: each request's
 * leading prefix blocks (struct lt_record's blocks) that an earlier
 * request already sent count as hits (an unbounded cache), in prompt
 * tokens, over all prompt tokens. Replay compares it with the rate the
 * server reports (a much higher one means an earlier run warmed the
 * cache).
 *
 * Its memory is bounded: at most `max` distinct blocks are held (5 bytes
 * a slot, at most 3/4 full). Past that, the prefix chains are sampled by
 * their first block: equal blocks mean equal prefixes (docs/trace-format.md
 * §2), so a chain can only hit chains with the same first block. A chain
 * is kept when a hash of its first block has at least `level` trailing
 * zero bits (1 in 2^level); each raise of the level forgets the blocks and
 * tokens of the chains it leaves out, and the kept chains' tokens weigh
 * 2^level against those of requests without blocks, which are all
 * counted. The rate is then an estimate, and lt_hits_rate says so.
 */
#ifndef LT_TRACE_HITS_H
#define LT_TRACE_HITS_H

#include <stddef.h>
#include <stdint.h>

/* Replay's bound: 3 Mi distinct blocks (4 Mi slots, 20 MiB). */
#define LT_HITS_MAX ((size_t)3 << 20)

struct lt_hits {
    uint32_t *v; /* fingerprints, 0 = empty */
    uint8_t *lv; /* the level of each one's chain */
    size_t cap, n, max;
    unsigned level;          /* chains kept: level >= this */
    double hit[65], all[65]; /* prompt tokens of kept chains, by level */
    double flat;             /* prompt tokens of requests without blocks */
};

void lt_hits_init(struct lt_hits *h, size_t max);
void lt_hits_release(struct lt_hits *h);
/* One request, in order: its blocks, its prompt tokens, the tokens of a
 * block. Returns 0, or -1 when out of memory. */
int lt_hits_add(struct lt_hits *h, const uint64_t *blocks, uint32_t n_blocks, uint32_t in,
                uint32_t block_tokens);
/* The rate (0..1), or -1 when no request had a prompt; *level (may be
 * NULL): 0 when every chain counted, else the rate is estimated from 1 in
 * 2^level of them. */
double lt_hits_rate(const struct lt_hits *h, unsigned *level);

#endif

/*
 * The prefix-cache hit rate of a sequence of requests (trace_hits.h).
 */
#include "traces/trace_hits.h"
#include "base/lt_rng.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void lt_hits_init(struct lt_hits *h, size_t max)
{
    memset(h, 0, sizeof *h);
    h->max = max ? max : 1;
}

void lt_hits_release(struct lt_hits *h)
{
    free(h->v);
    free(h->lv);
    memset(h, 0, sizeof *h);
}

static size_t slot(uint32_t fp, size_t cap)
{
    return (size_t)(lt_mix64(fp) & (cap - 1));
}

/* Room for one more fingerprint: the table grown, or once it holds max,
 * the level raised (about half the chains forgotten) until there is. */
static int room(struct lt_hits *h)
{
    while (4 * (h->n + 1) > 3 * h->cap || h->n + 1 > h->max) {
        bool full = h->n + 1 > h->max;
        size_t nc = full ? h->cap : h->cap ? h->cap * 2 : 1 << 10;
        uint32_t *nv = calloc(nc, sizeof *nv);
        uint8_t *nl = malloc(nc);
        if (!nv || !nl) {
            free(nv);
            free(nl);
            return -1;
        }
        h->level += full;
        size_t n = 0;
        for (size_t k = 0; k < h->cap; k++)
            if (h->v[k] && h->lv[k] >= h->level) {
                size_t i = slot(h->v[k], nc);
                while (nv[i])
                    i = (i + 1) & (nc - 1);
                nv[i] = h->v[k];
                nl[i] = h->lv[k];
                n++;
            }
        free(h->v);
        free(h->lv);
        h->v = nv;
        h->lv = nl;
        h->cap = nc;
        h->n = n;
    }
    return 0;
}

int lt_hits_add(struct lt_hits *h, const uint64_t *blocks, uint32_t n_blocks, uint32_t in,
                uint32_t block_tokens)
{
    if (!n_blocks) {
        h->flat += in;
        return 0;
    }
    /* the chain's level: trailing zeros of a hash of its first block
     * (salted: the fingerprints below hash the same ids) */
    uint64_t x = lt_mix64(blocks[0] ^ 0x9e3779b97f4a7c15ULL);
    unsigned l = x ? (unsigned)__builtin_ctzll(x) : 64;
    if (l < h->level)
        return 0; /* a chain left out of the sample */
    bool chain = true;
    uint64_t got = 0;
    for (uint32_t b = 0; b < n_blocks; b++) {
        uint32_t fp = (uint32_t)(lt_mix64(blocks[b]) >> 32);
        fp = fp ? fp : 1;
        if (room(h) < 0)
            return -1;
        if (l < h->level)
            return 0; /* the room made left this chain out */
        size_t i = slot(fp, h->cap);
        while (h->v[i] && h->v[i] != fp)
            i = (i + 1) & (h->cap - 1);
        bool seen = h->v[i] == fp;
        if (!seen) {
            h->v[i] = fp;
            h->lv[i] = (uint8_t)l;
            h->n++;
        }
        if (seen && chain)
            got++;
        else
            chain = false;
    }
    double g = (double)got * block_tokens;
    h->hit[l] += g < in ? g : in;
    h->all[l] += in;
    return 0;
}

double lt_hits_rate(const struct lt_hits *h, unsigned *level)
{
    double hit = 0, all = 0;
    for (unsigned l = h->level; l <= 64; l++) {
        hit += h->hit[l];
        all += h->all[l];
    }
    double w = ldexp(1.0, (int)h->level);
    all = all * w + h->flat;
    if (level)
        *level = h->level;
    return all > 0 ? hit * w / all : -1;
}

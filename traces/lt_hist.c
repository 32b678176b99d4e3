/*
 * The log-linear histogram of lt_hist.h. One flat array of counters: with
 * k bits and shift s = max(0, msb(v) - k), value v lives at index
 * s * 2^k + (v >> s). For s = 0 this is v itself (the exact region below
 * 2^(k+1)); each further s adds 2^k sub-buckets of width 2^s, so indexing
 * is finding the top bit, a shift and an add.
 *
 * Mean and variance are kept exactly beside the buckets (Welford's running
 * update, Chan's formula to combine), so they do not inherit the buckets'
 * rounding and merge without loss.
 */
#include "traces/lt_hist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct lt_hist {
    int bits;
    uint64_t highest;
    size_t n; /* counters */
    uint64_t *counts;
    uint64_t total;
    uint64_t min, max;
    uint64_t clamped;
    double mean, m2; /* Welford: running mean and sum of squared deviations */
};

int lt_hist_bits_for_digits(int digits)
{
    static const int bits[] = {4, 7, 10, 14, 17};
    if (digits < 1)
        digits = 1;
    if (digits > 5)
        digits = 5;
    return bits[digits - 1];
}

/* Index of the highest set bit of v > 0, by binary search (six steps, no
 * compiler builtins). */
static inline int msb_of(uint64_t v)
{
    int n = 0;
    if (v >> 32) {
        v >>= 32;
        n += 32;
    }
    if (v >> 16) {
        v >>= 16;
        n += 16;
    }
    if (v >> 8) {
        v >>= 8;
        n += 8;
    }
    if (v >> 4) {
        v >>= 4;
        n += 4;
    }
    if (v >> 2) {
        v >>= 2;
        n += 2;
    }
    return n + (int)(v >> 1);
}

static inline size_t index_of(int bits, uint64_t v)
{
    if (v < (UINT64_C(2) << bits))
        return (size_t)v;
    int msb = msb_of(v);
    int shift = msb - bits;
    return ((size_t)shift << bits) + (size_t)(v >> shift);
}

static void bounds_of(int bits, size_t i, uint64_t *lo, uint64_t *hi)
{
    if (i < ((size_t)2 << bits)) {
        *lo = *hi = i;
        return;
    }
    int shift = (int)(i >> bits) - 1;
    uint64_t sub = (uint64_t)i - ((uint64_t)shift << bits);
    *lo = sub << shift;
    *hi = *lo + ((UINT64_C(1) << shift) - 1);
}

struct lt_hist *lt_hist_new(uint64_t highest, int bits, struct lt_err *err)
{
    if (bits < LT_HIST_BITS_MIN || bits > LT_HIST_BITS_MAX || highest < 1) {
        lt_errset(err, LT_EINVAL, "histogram: bits must be %d..%d and highest >= 1 (got %d, %llu)",
                  LT_HIST_BITS_MIN, LT_HIST_BITS_MAX, bits, (unsigned long long)highest);
        return NULL;
    }
    struct lt_hist *h = calloc(1, sizeof *h);
    if (!h) {
        lt_errset(err, LT_ENOMEM, "histogram: out of memory");
        return NULL;
    }
    h->bits = bits;
    h->highest = highest;
    h->n = index_of(bits, highest) + 1;
    h->counts = calloc(h->n, sizeof *h->counts);
    if (!h->counts) {
        free(h);
        lt_errset(err, LT_ENOMEM, "histogram: out of memory");
        return NULL;
    }
    lt_hist_reset(h);
    return h;
}

void lt_hist_free(struct lt_hist *h)
{
    if (!h)
        return;
    free(h->counts);
    free(h);
}

void lt_hist_reset(struct lt_hist *h)
{
    memset(h->counts, 0, h->n * sizeof *h->counts);
    h->total = 0;
    h->min = UINT64_MAX;
    h->max = 0;
    h->clamped = 0;
    h->mean = 0;
    h->m2 = 0;
}

void lt_hist_record_n(struct lt_hist *h, uint64_t v, uint64_t n)
{
    if (n == 0)
        return;
    size_t i;
    if (v > h->highest) {
        h->clamped += n;
        i = h->n - 1;
    } else {
        i = index_of(h->bits, v);
    }
    h->counts[i] += n;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
    double nn = (double)n, total = (double)(h->total + n);
    double delta = (double)v - h->mean;
    h->mean += delta * nn / total;
    h->m2 += delta * delta * (double)h->total * nn / total;
    h->total += n;
}

void lt_hist_record(struct lt_hist *h, uint64_t v)
{
    lt_hist_record_n(h, v, 1);
}

void lt_hist_record_corrected(struct lt_hist *h, uint64_t v, uint64_t interval)
{
    lt_hist_record_n(h, v, 1);
    if (interval == 0)
        return;
    for (uint64_t missing = v - (v > interval ? interval : v); missing >= interval;
         missing -= interval)
        lt_hist_record_n(h, missing, 1);
}

int lt_hist_merge(struct lt_hist *dst, const struct lt_hist *src, struct lt_err *err)
{
    if (dst->bits != src->bits || dst->highest != src->highest)
        return lt_errset(err, LT_EINVAL,
                         "histogram merge: different shapes (bits %d/%d, highest %llu/%llu)",
                         dst->bits, src->bits, (unsigned long long)dst->highest,
                         (unsigned long long)src->highest);
    if (src->total == 0)
        return 0;
    for (size_t i = 0; i < dst->n; i++)
        dst->counts[i] += src->counts[i];
    double na = (double)dst->total, nb = (double)src->total, n = na + nb;
    double delta = src->mean - dst->mean;
    dst->mean += delta * nb / n;
    dst->m2 += src->m2 + delta * delta * na * nb / n;
    dst->total += src->total;
    dst->clamped += src->clamped;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
    return 0;
}

uint64_t lt_hist_count(const struct lt_hist *h)
{
    return h->total;
}

uint64_t lt_hist_min(const struct lt_hist *h)
{
    return h->total ? h->min : 0;
}

uint64_t lt_hist_max(const struct lt_hist *h)
{
    return h->max;
}

double lt_hist_mean(const struct lt_hist *h)
{
    return h->mean;
}

double lt_hist_stddev(const struct lt_hist *h)
{
    return h->total ? sqrt(h->m2 / (double)h->total) : 0.0;
}

uint64_t lt_hist_clamped(const struct lt_hist *h)
{
    return h->clamped;
}

int lt_hist_bits(const struct lt_hist *h)
{
    return h->bits;
}

size_t lt_hist_memory(const struct lt_hist *h)
{
    return sizeof *h + h->n * sizeof *h->counts;
}

void lt_hist_bucket_of(const struct lt_hist *h, uint64_t v, uint64_t *lo, uint64_t *hi)
{
    bounds_of(h->bits, index_of(h->bits, v > h->highest ? h->highest : v), lo, hi);
}

/* ceil(p/100 * count), at least 1, at most count; the small tolerance keeps
 * p * count that is an integer in exact arithmetic (99.9 % of 1000) from
 * rounding up past it in floating point. */
static uint64_t rank_of(double p, uint64_t count)
{
    if (!(p > 0))
        return 1;
    if (p >= 100)
        return count;
    double x = p / 100.0 * (double)count;
    uint64_t r = (uint64_t)x;
    if ((double)r < x * (1 - 1e-12))
        r++;
    if (r < 1)
        r = 1;
    if (r > count)
        r = count;
    return r;
}

uint64_t lt_hist_value_at(const struct lt_hist *h, double p)
{
    if (h->total == 0)
        return 0;
    uint64_t want = rank_of(p, h->total), cum = 0;
    if (want == h->total)
        return h->max;
    for (size_t i = 0; i < h->n; i++) {
        cum += h->counts[i];
        if (cum >= want) {
            uint64_t lo, hi;
            bounds_of(h->bits, i, &lo, &hi);
            if (hi > h->max)
                hi = h->max;
            if (hi < h->min)
                hi = h->min;
            return hi;
        }
    }
    return h->max;
}

void lt_hist_iter_init(struct lt_hist_iter *it, const struct lt_hist *h)
{
    memset(it, 0, sizeof *it);
    it->h = h;
}

bool lt_hist_iter_next(struct lt_hist_iter *it)
{
    const struct lt_hist *h = it->h;
    while (it->next < h->n && h->counts[it->next] == 0)
        it->next++;
    if (it->next >= h->n)
        return false;
    size_t i = it->next++;
    bounds_of(h->bits, i, &it->lo, &it->hi);
    if (it->hi > h->max)
        it->hi = h->max;
    if (it->lo < h->min)
        it->lo = h->min;
    it->count = h->counts[i];
    it->cum += it->count;
    return true;
}

/*
 * The log-linear histogram of lt_hist.h. One flat array of counters: with
 * k bits and shift s = max(0, msb(v) - k), value v lives at index
 * s * 2^k + (v >> s). For s = 0 this is v itself (the exact region below
 * 2^(k+1)); each further s adds 2^k sub-buckets of width 2^s, so indexing
 * is finding the top bit, a shift and an add.
 *
 * Mean and variance are kept exactly beside the buckets, as integer sums
 * of the values and of their squares (128 and 192 bits, in 64-bit limbs), so
 * they do not inherit the buckets' rounding and merge without loss: merging
 * adds the sums. Mean and variance are computed from the sums when asked,
 * the variance as (count * sum of squares - sum^2) / count^2 in exact
 * integers, so there is no cancellation; only the final division rounds.
 * This replaced Welford's running update (two floating-point divisions per
 * value, each waiting on the previous value's mean): recording a value below
 * 2^32 once is now a multiplication and a few integer additions. On
 * analyze's summarizing pass (bench_analyze mem, 2026-11-29) that gained
 * 10-20 % with 8 chunks per result and stayed within the noise without:
 * what recording mostly waits on is the cache miss of counts[i] (analyze
 * keeps 9 histograms of ~230 KiB per run).
 *
 * So each counter is split: `lo`, the array recording touches, holds 8
 * bits of it, and `hi` (64 bits) the rest, touched only when a bucket's lo
 * passes 255 (then all of lo moves to hi), so once per 256 values of a
 * bucket at most. Recording's cache footprint is an eighth of that of
 * 64-bit counters: analyze's 4-run benchmark touched ~1.1 MiB of counters,
 * more than the L2 cache, ~280 KiB with 16-bit lo, and ~140 KiB now (which
 * made analyze 2-4 % faster than 16 bits did). Counts stay exact up to
 * 2^64. `hi` is allocated with `lo` (so recording never allocates) and
 * cleared 64 counters at a time, around the buckets that pass 255: its
 * fresh pages cost no memory until then, and only the pages of the
 * buckets in use ever do (clearing all of it when the first bucket passed
 * 255 cost analyze ~10 MiB of page faults on its benchmark).
 */
#include "base/lt_hist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef uint8_t lo_t; /* the hot bits of a counter */
#define LO_MAX UINT8_MAX

struct lt_hist {
    int bits;
    uint64_t highest;
    size_t n; /* counters */
    lo_t *lo; /* each bucket's count is lo[i] + hi[i] */
    uint64_t *hi;
    /* hi[i] holds a count for hi_first <= i < hi_end, and counts as 0
     * elsewhere, whatever it holds: it is cleared a piece at a time, as
     * buckets pass LO_MAX, so a histogram whose values all fall in a few
     * buckets touches few of its pages. */
    size_t hi_first, hi_end;
    uint64_t total;
    uint64_t min, max;
    uint64_t clamped;
    uint64_t sum[2];   /* sum of v * n, 128 bits, least significant limb first */
    uint64_t sumsq[3]; /* sum of v * v * n, 192 bits */
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

/* The same for 0 < v < 2^53, without branches: the exponent of the
 * double, which holds v exactly. The binary search's branches depend on
 * the value, and latencies are random enough for them to mispredict. */
static inline int msb_small(uint64_t v)
{
    double d = (double)v;
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return (int)(b >> 52) - 1023;
}

static inline size_t index_of(int bits, uint64_t v)
{
    if (v < (UINT64_C(2) << bits))
        return (size_t)v;
    int msb = v < (UINT64_C(1) << 53) ? msb_small(v) : msb_of(v);
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

/* ---- exact sums: unsigned integers of 64-bit limbs, least significant
 * first, in portable C (no 128-bit compiler types) ---------------------- */

/* hi:lo = a * b */
static inline void mul64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo)
{
    uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
    *lo = (mid << 32) | (uint32_t)p00;
    *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

/* acc[n] += x[k] (k <= n); the carry out of acc[n-1] is dropped (the sums
 * are sized so that it cannot happen). */
static inline void add_limbs(uint64_t *acc, int n, const uint64_t *x, int k)
{
    uint64_t carry = 0;
    for (int i = 0; i < n; i++) {
        uint64_t a = acc[i], b = i < k ? x[i] : 0;
        uint64_t r = a + b;
        uint64_t c = r < a;
        r += carry;
        c += r < carry;
        acc[i] = r;
        carry = c;
        if (i >= k && !carry)
            break;
    }
}

/* out[na + nb] = a[na] * b[nb] */
static void mul_limbs(const uint64_t *a, int na, const uint64_t *b, int nb, uint64_t *out)
{
    for (int i = 0; i < na + nb; i++)
        out[i] = 0;
    for (int i = 0; i < na; i++) {
        uint64_t carry = 0;
        for (int j = 0; j < nb; j++) {
            uint64_t hi, lo;
            mul64(a[i], b[j], &hi, &lo); /* a*b + carry + out < 2^128 */
            lo += carry;
            hi += lo < carry;
            out[i + j] += lo;
            hi += out[i + j] < lo;
            carry = hi;
        }
        out[i + nb] = carry;
    }
}

static double limbs_to_double(const uint64_t *x, int n)
{
    double d = 0;
    for (int i = n - 1; i >= 0; i--)
        d = d * 18446744073709551616.0 + (double)x[i];
    return d;
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
    /* One block, hi after lo: a large one is mapped fresh, so the pages
     * of hi stay untouched (no memory) until a count passes 255. hi is
     * not cleared before then (add_count() clears the part it needs):
     * analyze makes thousands of small histograms, and clearing
     * their hi cost more than filling them. */
    size_t lo_bytes = (h->n * sizeof *h->lo + 7) & ~(size_t)7;
    char *mem = malloc(lo_bytes + h->n * sizeof *h->hi);
    h->lo = (lo_t *)(void *)mem;
    h->hi = mem ? (uint64_t *)(void *)(mem + lo_bytes) : NULL;
    if (!mem) {
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
    free(h->lo);
    free(h);
}

void lt_hist_reset(struct lt_hist *h)
{
    memset(h->lo, 0, h->n * sizeof *h->lo);
    h->hi_first = h->hi_end = 0; /* hi is cleared when it is next needed */
    h->total = 0;
    h->min = UINT64_MAX;
    h->max = 0;
    h->clamped = 0;
    memset(h->sum, 0, sizeof h->sum);
    memset(h->sumsq, 0, sizeof h->sumsq);
}

static inline bool has_hi(const struct lt_hist *h, size_t i)
{
    return i - h->hi_first < h->hi_end - h->hi_first; /* unsigned: hi_first <= i < hi_end */
}

static inline uint64_t count_at(const struct lt_hist *h, size_t i)
{
    return has_hi(h, i) ? h->hi[i] + h->lo[i] : h->lo[i];
}

/* Make hi[i] hold a count: clear the 64 counters around i that are not
 * yet (and any between them and the range already cleared). */
static void open_hi(struct lt_hist *h, size_t i)
{
    size_t first = i & ~(size_t)63, end = (i | 63) + 1;
    if (end > h->n)
        end = h->n;
    if (h->hi_first == h->hi_end) {
        memset(h->hi + first, 0, (end - first) * sizeof *h->hi);
        h->hi_first = first;
        h->hi_end = end;
        return;
    }
    if (first < h->hi_first) {
        memset(h->hi + first, 0, (h->hi_first - first) * sizeof *h->hi);
        h->hi_first = first;
    }
    if (end > h->hi_end) {
        memset(h->hi + h->hi_end, 0, (end - h->hi_end) * sizeof *h->hi);
        h->hi_end = end;
    }
}

/* counts[i] += n (a bucket's count never passes 2^64). */
static inline void add_count(struct lt_hist *h, size_t i, uint64_t n)
{
    uint64_t s = h->lo[i] + n;
    if (s <= LO_MAX && n <= LO_MAX) {
        h->lo[i] = (lo_t)s;
        return;
    }
    if (!has_hi(h, i))
        open_hi(h, i);
    h->hi[i] += n + h->lo[i];
    h->lo[i] = 0;
}

/* sum += v, sumsq += v * v, for one v below 2^32: v * v fits in 64 bits,
 * so no multiplication of limbs is needed. */
static inline void add_sums_one(struct lt_hist *h, uint64_t v)
{
    uint64_t sq = v * v;
    h->sum[0] += v;
    h->sum[1] += h->sum[0] < v;
    h->sumsq[0] += sq;
    if (h->sumsq[0] < sq && ++h->sumsq[1] == 0)
        h->sumsq[2]++;
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
    add_count(h, i, n);
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
    h->total += n;
    /* The sums cannot overflow: with fewer than 2^64 values in all, the
     * sum of v * n stays below 2^128 and that of v * v * n below 2^192. */
    if (n == 1 && v <= UINT32_MAX) {
        add_sums_one(h, v);
        return;
    }
    uint64_t vn[2], sq[2], sqn[3], lo[2], hi[2];
    mul64(v, n, &vn[1], &vn[0]);
    add_limbs(h->sum, 2, vn, 2);
    mul64(v, v, &sq[1], &sq[0]);
    mul64(sq[0], n, &lo[1], &lo[0]);
    mul64(sq[1], n, &hi[1], &hi[0]);
    sqn[0] = lo[0];
    sqn[1] = lo[1] + hi[0];
    sqn[2] = hi[1] + (sqn[1] < lo[1]);
    add_limbs(h->sumsq, 3, sqn, 3);
}

/* The commonest call, recording one value below 2^32, without the
 * general case's multiplications. */
void lt_hist_record(struct lt_hist *h, uint64_t v)
{
    if (v > h->highest || v > UINT32_MAX) {
        lt_hist_record_n(h, v, 1);
        return;
    }
    size_t i = index_of(h->bits, v);
    lo_t c = h->lo[i];
    if (c != LO_MAX)
        h->lo[i] = (lo_t)(c + 1);
    else
        add_count(h, i, 1);
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
    h->total++;
    add_sums_one(h, v);
}

/* The loop keeps min, max and the sums in registers and adds them to the
 * histogram once; the values below 2^32 (all of them, as a rule) take the
 * fast path of lt_hist_record(). The sums of up to 2^32 such values fit
 * in the local 64-bit sum and 128-bit sum of squares: n is split so. */
void lt_hist_record_many(struct lt_hist *h, const uint64_t *v, size_t n)
{
    const uint64_t lim = h->highest < UINT32_MAX ? h->highest : UINT32_MAX;
    const int bits = h->bits;
    lo_t *lo = h->lo;
    while (n > 0) {
        size_t m = n < UINT32_MAX ? n : UINT32_MAX;
        uint64_t mn = h->min, mx = h->max, cnt = 0, s = 0, q0 = 0, q1 = 0;
        for (size_t k = 0; k < m; k++) {
            uint64_t x = v[k];
            if (x > lim) {
                lt_hist_record_n(h, x, 1);
                continue;
            }
            size_t i = index_of(bits, x);
            lo_t c = lo[i];
            if (c != LO_MAX)
                lo[i] = (lo_t)(c + 1);
            else
                add_count(h, i, 1);
            mn = x < mn ? x : mn;
            mx = x > mx ? x : mx;
            cnt++;
            s += x;
            uint64_t sq = x * x;
            q0 += sq;
            q1 += q0 < sq;
        }
        /* record_n() above may have moved min and max too */
        h->min = mn < h->min ? mn : h->min;
        h->max = mx > h->max ? mx : h->max;
        h->total += cnt;
        uint64_t sv[1] = {s}, qv[2] = {q0, q1};
        add_limbs(h->sum, 2, sv, 1);
        add_limbs(h->sumsq, 3, qv, 2);
        v += m;
        n -= m;
    }
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
    /* Only src's buckets from its min to its max can hold counts (a value
     * above highest counts in the last): analyze merges many small, sparse
     * histograms (the time series'), and walking all their counters was
     * most of the cost of a merge. */
    size_t first = src->min > src->highest ? src->n - 1 : index_of(src->bits, src->min);
    size_t last = src->max > src->highest ? src->n - 1 : index_of(src->bits, src->max);
    for (size_t i = first; i <= last; i++) {
        uint32_t lo = (uint32_t)dst->lo[i] + src->lo[i];
        if (lo <= LO_MAX && !has_hi(src, i)) /* the common case: no hi to touch */
            dst->lo[i] = (lo_t)lo;
        else
            add_count(dst, i, count_at(src, i));
    }
    add_limbs(dst->sum, 2, src->sum, 2);
    add_limbs(dst->sumsq, 3, src->sumsq, 3);
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
    return h->total ? limbs_to_double(h->sum, 2) / (double)h->total : 0.0;
}

double lt_hist_stddev(const struct lt_hist *h)
{
    if (!h->total)
        return 0.0;
    /* count^2 * variance = count * sumsq - sum^2, >= 0, computed exactly */
    uint64_t n[1] = {h->total}, a[4], b[4], d[4];
    mul_limbs(n, 1, h->sumsq, 3, a);
    mul_limbs(h->sum, 2, h->sum, 2, b);
    uint64_t borrow = 0;
    for (int i = 0; i < 4; i++) {
        uint64_t x = a[i] - b[i];
        uint64_t bo = a[i] < b[i];
        bo += x < borrow;
        d[i] = x - borrow;
        borrow = bo;
    }
    if (borrow) /* cannot happen (Cauchy-Schwarz); be safe */
        return 0.0;
    return sqrt(limbs_to_double(d, 4)) / (double)h->total;
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
    return sizeof *h + h->n * (sizeof *h->lo + sizeof *h->hi);
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
        cum += count_at(h, i);
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
    while (it->next < h->n && count_at(h, it->next) == 0)
        it->next++;
    if (it->next >= h->n)
        return false;
    size_t i = it->next++;
    bounds_of(h->bits, i, &it->lo, &it->hi);
    if (it->hi > h->max)
        it->hi = h->max;
    if (it->lo < h->min)
        it->lo = h->min;
    it->count = count_at(h, i);
    it->cum += it->count;
    return true;
}

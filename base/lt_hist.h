/*
 * A log-linear histogram of non-negative integers (token counts,
 * microseconds), in the style of HdrHistogram: every power-of-two range
 * [2^(k+s), 2^(k+s+1)) is cut into 2^k equal sub-buckets of width 2^s, and
 * values below 2^(k+1) get a bucket each. k ("bits") sets the precision:
 *
 *   a value v falls in a bucket [lo, hi] with  hi - lo < v / 2^k,
 *
 * so every value this histogram reports (a percentile, a bucket bound) is
 * within a relative error of 1/2^k of a value that was recorded, and values
 * below 2^(k+1) are exact. bits = 7 gives 2 significant decimal digits
 * (error < 0.8 %), bits = 10 gives 3 (error < 0.1 %); see
 * lt_hist_bits_for_digits().
 *
 * Memory is fixed when the histogram is made, independent of how many values
 * are recorded: at most (log2(highest) - k + 2) * 2^k counters of 9 bytes
 * (bits = 10 up to 2^40: 288 KiB; bits = 7 up to 2^32: 31 KiB), of which
 * recording touches 1 byte per counter (lt_hist.c says why).
 * Recording is O(1) and never allocates. Values above `highest` are counted
 * in the top bucket (and in lt_hist_clamped()); min, max, mean and stddev
 * always use the exact values.
 *
 * Histograms with the same bits and highest merge losslessly (counts add;
 * min, max, mean and variance combine exactly up to floating-point rounding),
 * so per-thread or per-rank histograms can be summed into one report.
 *
 * Percentiles: lt_hist_value_at(h, p) answers the smallest recorded value v
 * such that at least p % of the values are <= v (rank ceil(p/100 * count)),
 * reported as the highest value of v's bucket, clamped to [min, max]; so
 * v <= answer <= v + v / 2^k, and p = 100 gives max exactly (HdrHistogram's
 * "highest equivalent value": the answer never understates a latency).
 *
 * Not thread-safe; give each thread its own and merge.
 */
#ifndef LT_HIST_H
#define LT_HIST_H

#include "base/lt_err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LT_HIST_BITS_MIN 1
#define LT_HIST_BITS_MAX 20

struct lt_hist;

/* Smallest bits whose relative error 1/2^bits is below 10^-digits
 * (digits 1..5). */
int lt_hist_bits_for_digits(int digits);

/* A histogram for values 0..highest (highest >= 1) with the given bits
 * (LT_HIST_BITS_MIN..LT_HIST_BITS_MAX). Returns NULL and fills err on bad
 * arguments or out of memory. */
struct lt_hist *lt_hist_new(uint64_t highest, int bits, struct lt_err *err);
/* Free; NULL is a no-op. */
void lt_hist_free(struct lt_hist *h);
/* Forget every value, keep the configuration and memory. */
void lt_hist_reset(struct lt_hist *h);

void lt_hist_record(struct lt_hist *h, uint64_t v);
/* Record the n values v[0..n-1]: the same as n calls of lt_hist_record(),
 * and faster when n is more than a few (analyze gathers each histogram's
 * values and records them so). */
void lt_hist_record_many(struct lt_hist *h, const uint64_t *v, size_t n);
/* Record v n times (n = 0 records nothing). */
void lt_hist_record_n(struct lt_hist *h, uint64_t v, uint64_t n);
/* Coordinated-omission correction (HdrHistogram's record_corrected_value):
 * record v, and when v exceeds the expected interval between samples, also
 * the latencies the samples that could not be sent would have seen:
 * v - interval, v - 2 interval, ... while above interval. interval 0 = plain
 * record. */
void lt_hist_record_corrected(struct lt_hist *h, uint64_t v, uint64_t interval);

/* Add src's values to dst. Both must have the same bits and highest
 * (LT_EINVAL otherwise, dst unchanged). */
int lt_hist_merge(struct lt_hist *dst, const struct lt_hist *src, struct lt_err *err);

uint64_t lt_hist_count(const struct lt_hist *h);
/* min and max of the values recorded (exact); 0 when empty. */
uint64_t lt_hist_min(const struct lt_hist *h);
uint64_t lt_hist_max(const struct lt_hist *h);
/* Exact mean and population standard deviation; 0 when empty. */
double lt_hist_mean(const struct lt_hist *h);
double lt_hist_stddev(const struct lt_hist *h);
/* Values recorded above `highest` (counted in the top bucket). */
uint64_t lt_hist_clamped(const struct lt_hist *h);
int lt_hist_bits(const struct lt_hist *h);
/* Bytes of memory the histogram holds. */
size_t lt_hist_memory(const struct lt_hist *h);

/* The value at percentile p (0..100), as defined above; 0 when empty. */
uint64_t lt_hist_value_at(const struct lt_hist *h, double p);

/* Lowest and highest value that share v's bucket. */
void lt_hist_bucket_of(const struct lt_hist *h, uint64_t v, uint64_t *lo, uint64_t *hi);

/* Iteration over the non-empty buckets in increasing order (for CDF plots):
 *
 *   struct lt_hist_iter it;
 *   lt_hist_iter_init(&it, h);
 *   while (lt_hist_iter_next(&it))
 *       use(it.lo, it.hi, it.count, it.cum);
 *
 * The histogram must not change during the iteration. */
struct lt_hist_iter {
    const struct lt_hist *h;
    size_t next; /* private */
    uint64_t lo; /* bucket bounds, inclusive (hi clamped to max) */
    uint64_t hi;
    uint64_t count; /* values in the bucket */
    uint64_t cum;   /* values in this and every lower bucket */
};
void lt_hist_iter_init(struct lt_hist_iter *it, const struct lt_hist *h);
bool lt_hist_iter_next(struct lt_hist_iter *it);

#endif

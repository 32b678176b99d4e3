/*
 * A small, fast, seedable random number generator (xoshiro256** seeded by
 * splitmix64) and the distributions loadtrace samples from. Everything that
 * is random in loadtrace (synth, sim faults, prompt text) draws from one of
 * these with a user-visible seed, so runs are reproducible.
 */
#ifndef LT_RNG_H
#define LT_RNG_H

#include <stdint.h>

struct lt_rng {
    uint64_t s[4];
};

void lt_rng_seed(struct lt_rng *r, uint64_t seed);
uint64_t lt_rng_u64(struct lt_rng *r);
/* Uniform in [0, 1). */
double lt_rng_uniform(struct lt_rng *r);
/* Uniform integer in [0, n); n > 0. */
uint64_t lt_rng_below(struct lt_rng *r, uint64_t n);
/* Exponential with the given mean. */
double lt_rng_exp(struct lt_rng *r, double mean);
/* Standard normal (mean 0, sd 1). */
double lt_rng_normal(struct lt_rng *r);
/* Gamma with shape k > 0 and scale theta (Marsaglia and Tsang). */
double lt_rng_gamma(struct lt_rng *r, double k, double theta);
/* Lognormal whose underlying normal has mean mu and sd sigma. */
double lt_rng_lognormal(struct lt_rng *r, double mu, double sigma);

/* 64-bit mixing function (splitmix64's finalizer); a cheap, good hash of an
 * integer. */
uint64_t lt_mix64(uint64_t x);

#endif

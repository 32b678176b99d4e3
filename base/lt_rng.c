#include "base/lt_rng.h"

#include <math.h>

uint64_t lt_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void lt_rng_seed(struct lt_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) {
        seed += 0x9e3779b97f4a7c15ULL;
        r->s[i] = lt_mix64(seed);
    }
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t lt_rng_u64(struct lt_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double lt_rng_uniform(struct lt_rng *r)
{
    return (double)(lt_rng_u64(r) >> 11) * 0x1.0p-53;
}

uint64_t lt_rng_below(struct lt_rng *r, uint64_t n)
{
    /* Lemire's nearly-divisionless method would be faster; rejection keeps
     * it unbiased and simple. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = lt_rng_u64(r);
    while (x >= limit);
    return x % n;
}

double lt_rng_exp(struct lt_rng *r, double mean)
{
    return -mean * log1p(-lt_rng_uniform(r));
}

double lt_rng_normal(struct lt_rng *r)
{
    /* Box-Muller; the second value is thrown away to keep no state. */
    double u1 = lt_rng_uniform(r), u2 = lt_rng_uniform(r);
    return sqrt(-2.0 * log1p(-u1)) * cos(6.283185307179586477 * u2);
}

double lt_rng_gamma(struct lt_rng *r, double k, double theta)
{
    if (k < 1.0) {
        /* Boost: Gamma(k) = Gamma(k+1) * U^(1/k). */
        double u = lt_rng_uniform(r);
        return lt_rng_gamma(r, k + 1.0, theta) * pow(u > 0 ? u : 0x1.0p-53, 1.0 / k);
    }
    double d = k - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = lt_rng_normal(r), v = 1.0 + c * x;
        if (v <= 0)
            continue;
        v = v * v * v;
        double u = lt_rng_uniform(r);
        if (u < 1.0 - 0.0331 * x * x * x * x || log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
            return d * v * theta;
    }
}

double lt_rng_lognormal(struct lt_rng *r, double mu, double sigma)
{
    return exp(mu + sigma * lt_rng_normal(r));
}

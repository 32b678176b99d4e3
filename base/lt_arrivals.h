/*
 * Arrival processes as people type them (`--arrivals`): the one grammar
 * and the one set of limits that `synth` and `replay` (and the virtual
 * replay, the capacity search and a sweep, which pass it on) share, so a
 * spec one command takes the other takes too and means the same.
 *
 *   constant     gaps all 1/rate
 *   poisson      exponential gaps (CV 1)
 *   gamma:CV     gamma gaps, shape 1/CV^2, with sd/mean = CV,
 *                LT_ARR_CV_MIN <= CV <= LT_ARR_CV_MAX
 *   gamma:fit    gamma with a fitted trace's CV    } only where the caller
 *   empirical    a fitted trace's own gaps         } has a fit (LT_ARR_FIT)
 *
 * Why the CV has bounds: below 0.001 the shape 1/CV^2 passes 10^6 (and at
 * 1e-160 it overflows to infinity, whose draws are NaN), where `constant`
 * is what is meant; above 100 the shape is below 10^-4 and almost every
 * gap rounds to zero, the whole run arriving in a few bursts.
 */
#ifndef LT_ARRIVALS_H
#define LT_ARRIVALS_H

#include "base/lt_err.h"

enum lt_arrivals {
    LT_ARR_DEFAULT = 0, /* none given: Poisson; synth with a fit: empirical */
    LT_ARR_CONSTANT,
    LT_ARR_POISSON,
    LT_ARR_GAMMA,
    LT_ARR_EMPIRICAL, /* the fitted trace's own gaps, in runs (fit only) */
};

#define LT_ARR_CV_MIN 0.001
#define LT_ARR_CV_MAX 100.0

/* lt_arrivals_parse's flags: the caller has a fitted trace, so gamma:fit
 * and empirical are accepted. */
#define LT_ARR_FIT 1u

/* Parse s by the grammar above. *cv: CV for gamma:CV, 0 for gamma:fit
 * (the fitted trace's), 1 for poisson, 0 for constant and empirical.
 * Returns 0, or LT_EINVAL with err saying which forms (and limits) are
 * accepted. */
int lt_arrivals_parse(const char *s, unsigned flags, enum lt_arrivals *a, double *cv,
                      struct lt_err *err);

/* The spec's name as the grammar spells it ("poisson" for LT_ARR_DEFAULT). */
const char *lt_arrivals_name(enum lt_arrivals a);

#endif

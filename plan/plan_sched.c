/*
 * Schedule computations (see plan_sched.h for the order of the trace-time
 * transformations). Everything works on microsecond offsets in a caller's
 * array, with no allocation, so a million-request trace costs one pass.
 */
#include "plan/plan_sched.h"

#include "base/lt_rng.h"

#include <math.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int lt_plan_sched_tt_check(const struct lt_plan_sched_tt *o, struct lt_err *err)
{
    if (o->speed < 0 || o->rate < 0 || o->max_gap_us < 0 || o->spread_us < 0 || o->duration_us < 0)
        return lt_errset(err, LT_EINVAL, "speed, rate, gaps and durations must not be negative");
    if (o->speed > 0 && o->speed != 1 && o->rate > 0)
        return lt_errset(err, LT_EINVAL, "--speed and --rate both rescale time: give one");
    if (o->win_end_us > 0 && o->win_end_us <= o->win_start_us)
        return lt_errset(err, LT_EINVAL, "--window: END must be after START");
    if (!isfinite(o->speed) || !isfinite(o->rate))
        return lt_errset(err, LT_EINVAL, "--speed and --rate must be finite numbers");
    if (o->spread_us > LT_PLAN_MAX_OFFSET_US)
        return lt_errset(err, LT_EINVAL, "--spread %.0f s is beyond the %.0f s a schedule may span",
                         (double)o->spread_us / 1e6, (double)LT_PLAN_MAX_OFFSET_US / 1e6);
    return 0;
}

void lt_plan_sched_tt_walk_init(struct lt_plan_sched_tt_walk *w, const struct lt_plan_sched_tt *o)
{
    *w = (struct lt_plan_sched_tt_walk){.o = *o, .prev = -1, .factor = 1.0};
}

int lt_plan_sched_tt_walk_gap(struct lt_plan_sched_tt_walk *w, int64_t t, size_t m, size_t k,
                              int64_t *x, struct lt_err *err)
{
    /* 2. spread a group of equal timestamps evenly over [t, t + D) */
    if (w->o.spread_us > 0) {
        if (t > LT_PLAN_MAX_OFFSET_US)
            return lt_errset(err, LT_EINVAL,
                             "a request at %.0f s of the trace is beyond the %.0f s a "
                             "schedule may span",
                             (double)t / 1e6, (double)LT_PLAN_MAX_OFFSET_US / 1e6);
        t += (int64_t)((double)w->o.spread_us * (double)m / (double)k);
    }
    /* 3. compress idle gaps (a cumulative shift keeps the order) */
    if (w->o.max_gap_us > 0) {
        if (w->prev >= 0 && t - w->prev > w->o.max_gap_us)
            w->shift += t - w->prev - w->o.max_gap_us;
        w->prev = t;
        t -= w->shift;
    }
    *x = t;
    return 0;
}

int lt_plan_sched_tt_walk_scale(struct lt_plan_sched_tt_walk *w, int64_t first, int64_t last,
                                size_t kept, struct lt_err *err)
{
    const struct lt_plan_sched_tt *o = &w->o;
    double factor = 1.0;
    if (o->rate > 0 && kept > 1 && last > first)
        factor = ((double)(kept - 1) / o->rate * 1e6) / (double)(last - first);
    else if (o->speed > 0)
        factor = 1.0 / o->speed;
    /* Range-check the stretched span before any sum or product of it: a
     * tiny --speed or --rate must be refused, not overflow into negative
     * offsets that would silently drop requests. */
    double span = (double)(last - first) * factor;
    if (!(span <= (double)LT_PLAN_MAX_OFFSET_US)) {
        char what[64];
        if (o->rate > 0 && factor != 1.0)
            snprintf(what, sizeof what, "--rate %g", o->rate);
        else if (o->speed > 0 && factor != 1.0)
            snprintf(what, sizeof what, "--speed %g", o->speed);
        else
            snprintf(what, sizeof what, "the trace");
        return lt_errset(err, LT_EINVAL,
                         "%s would spread the requests over %.3g s, beyond the %.0f s "
                         "(100 years) a schedule may span",
                         what, span / 1e6, (double)LT_PLAN_MAX_OFFSET_US / 1e6);
    }
    w->first = first;
    w->factor = factor;
    return 0;
}

int64_t lt_plan_sched_tt_walk_place(const struct lt_plan_sched_tt_walk *w, int64_t x)
{
    int64_t at = (int64_t)llround((double)(x - w->first) * w->factor);
    return w->o.duration_us > 0 && at >= w->o.duration_us ? -1 : at;
}

int64_t lt_plan_sched_trace(const int64_t *t, size_t n, const struct lt_plan_sched_tt *o,
                            const uint8_t *keep, int64_t *out, struct lt_err *err)
{
    int rc = lt_plan_sched_tt_check(o, err);
    if (rc < 0)
        return rc;

    /* 1. window */
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        bool in = keep ? keep[i] && t[i] >= o->win_start_us
                       : t[i] >= o->win_start_us && (o->win_end_us <= 0 || t[i] < o->win_end_us);
        out[i] = in ? t[i] - o->win_start_us : -1;
        kept += in;
    }
    if (!kept)
        return 0;

    /* 2-3. groups of equal times (the ones step 1 dropped in between do
     * not end a group) */
    struct lt_plan_sched_tt_walk w;
    lt_plan_sched_tt_walk_init(&w, o);
    int64_t first = -1, last = -1;
    for (size_t i = 0; i < n;) {
        if (out[i] < 0) {
            i++;
            continue;
        }
        size_t j = i, k = 0;
        while (j < n && (out[j] < 0 || out[j] == out[i])) {
            k += out[j] >= 0;
            j++;
        }
        int64_t base = out[i];
        size_t m = 0;
        for (size_t x = i; x < j; x++)
            if (out[x] >= 0) {
                if ((rc = lt_plan_sched_tt_walk_gap(&w, base, m++, k, &out[x], err)) < 0)
                    return rc;
                if (first < 0)
                    first = out[x];
                last = out[x];
            }
        i = j;
    }

    /* 4-6. rescale, move the first request to 0, cut at the duration */
    if ((rc = lt_plan_sched_tt_walk_scale(&w, first, last, kept, err)) < 0)
        return rc;
    for (size_t i = 0; i < n; i++)
        if (out[i] >= 0) {
            out[i] = lt_plan_sched_tt_walk_place(&w, out[i]);
            kept -= out[i] < 0;
        }
    return (int64_t)kept;
}

int lt_plan_sched_arrive_init(struct lt_plan_sched_arrive *g, enum lt_arrivals a, double rate,
                              double cv, uint64_t seed, int64_t duration_us, struct lt_err *err)
{
    if (!(rate > 0) || !isfinite(rate))
        return lt_errset(err, LT_EINVAL, "the open-loop rate must be a positive number");
    if (a == LT_ARR_GAMMA && !(cv >= LT_ARR_CV_MIN && cv <= LT_ARR_CV_MAX))
        return lt_errset(err, LT_EINVAL, "gamma arrivals need a CV from %g to %g (gamma:CV)",
                         LT_ARR_CV_MIN, LT_ARR_CV_MAX);
    if (a == LT_ARR_EMPIRICAL)
        return lt_errset(err, LT_EINVAL, "empirical arrivals need a fitted trace (synth --fit)");
    *g = (struct lt_plan_sched_arrive){.a = a,
                                       .rate = rate,
                                       .mean = 1e6 / rate,
                                       .shape = a == LT_ARR_GAMMA ? 1.0 / (cv * cv) : 1.0,
                                       .duration_us = duration_us};
    lt_rng_seed(&g->rng, seed);
    return 0;
}

int lt_plan_sched_arrive_next(struct lt_plan_sched_arrive *g, int64_t *us, struct lt_err *err)
{
    if (!(g->t <= (double)LT_PLAN_MAX_OFFSET_US)) {
        if (g->duration_us > 0)
            return 0; /* past any duration too */
        return lt_errset(err, LT_EINVAL,
                         "--rate %g would put request %llu at %.3g s, beyond the %.0f s "
                         "(100 years) a schedule may span",
                         g->rate, (unsigned long long)g->i + 1, g->t / 1e6,
                         (double)LT_PLAN_MAX_OFFSET_US / 1e6);
    }
    int64_t at = (int64_t)llround(g->t);
    if (g->duration_us > 0 && at >= g->duration_us)
        return 0;
    *us = at;
    g->i++;
    switch (g->a) {
    case LT_ARR_DEFAULT:
    case LT_ARR_POISSON:
        g->t += lt_rng_exp(&g->rng, g->mean);
        break;
    case LT_ARR_GAMMA:
        g->t += lt_rng_gamma(&g->rng, g->shape, g->mean / g->shape);
        break;
    case LT_ARR_CONSTANT:
    case LT_ARR_EMPIRICAL: /* refused by lt_plan_sched_arrive_init */
        g->t = (double)g->i * g->mean;
        break;
    }
    return 1;
}

int64_t lt_plan_sched_open_loop(enum lt_arrivals a, double rate, double cv, uint64_t seed,
                                int64_t duration_us, int64_t *out, size_t n, struct lt_err *err)
{
    struct lt_plan_sched_arrive g;
    int rc = lt_plan_sched_arrive_init(&g, a, rate, cv, seed, duration_us, err);
    if (rc < 0)
        return rc;
    size_t i;
    for (i = 0; i < n; i++)
        if ((rc = lt_plan_sched_arrive_next(&g, &out[i], err)) <= 0)
            break;
    return rc < 0 ? rc : (int64_t)i;
}

/*
 * The capacity search (see plan_search.h): a bracket grown, then bisected,
 * over probe outcomes with Wilson intervals. Pure arithmetic; both the
 * live and the virtual probe runners drive it.
 */
#include "plan/plan_search.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define Z95 1.959963984540054

void lt_search_wilson(uint64_t good, uint64_t n, double z, double *lo, double *hi)
{
    if (n == 0) {
        *lo = 0;
        *hi = 1;
        return;
    }
    double nn = (double)n, p = (double)good / nn, z2 = z * z;
    double den = 1 + z2 / nn;
    double mid = (p + z2 / (2 * nn)) / den;
    double half = z * sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn)) / den;
    *lo = mid - half < 0 ? 0 : mid - half;
    *hi = mid + half > 1 ? 1 : mid + half;
}

uint64_t lt_search_requests_for(double p, double half)
{
    if (!(half > 0))
        return 0;
    double n = Z95 * Z95 * p * (1 - p) / (half * half);
    return n < 1 ? 1 : (uint64_t)ceil(n);
}

uint64_t lt_search_min_judged(double attain)
{
    if (!(attain > 0 && attain < 1))
        return 0;
    /* Wilson's lower bound of n out of n is n / (n + z^2) */
    uint64_t n = (uint64_t)ceil(attain * Z95 * Z95 / (1 - attain));
    double lo, hi;
    for (;; n++) {
        lt_search_wilson(n, n, Z95, &lo, &hi);
        if (lo > attain)
            return n;
    }
}

/* x at the digits a search of this precision tells apart (see
 * lt_search_round): dir 0 the nearest, -1 down, +1 up. */
static double round_dir(double x, double precision, int dir)
{
    if (!(x > 0) || !isfinite(x))
        return x;
    /* significant digits that tell apart loads precision / 2 apart (the
     * smallest step of a bisection) wherever the mantissa falls */
    int d = (int)ceil(1 + log10(2 / (precision > 0 ? precision : 0.05)));
    if (d < 3)
        d = 3;
    if (d > 15)
        return x;
    int e = (int)floor(log10(x)) - (d - 1);
    /* an integer over a power of ten (exact up to 1e22): the double
     * nearest the decimal, as strtod reads the printed digits; a quotient
     * a hair off an integer (1.05 x 100) is that integer */
    double p = pow(10, e < 0 ? -e : e);
    double m = e < 0 ? x * p : x / p;
    m = dir < 0 ? floor(m + 1e-9) : dir > 0 ? ceil(m - 1e-9) : round(m);
    return e < 0 ? m / p : m * p;
}

double lt_search_round(double x, double precision)
{
    return round_dir(x, precision, 0);
}

void lt_search_init(struct lt_search *s, const struct lt_search_opts *o)
{
    memset(s, 0, sizeof *s);
    s->o = *o;
    struct lt_search_opts *d = &s->o;
    if (!(d->attain > 0 && d->attain < 1))
        d->attain = 0.9;
    if (!(d->start > 0))
        d->start = 1;
    if (!(d->factor > 1))
        d->factor = 2;
    if (!(d->precision > 0))
        d->precision = 0.05;
    if (!(d->min_load > 0))
        d->min_load = d->integer ? 1 : d->start / 1024;
    if (!(d->max_load > 0))
        d->max_load = d->integer ? 65536 : 1e6;
    if (!d->max_probes || d->max_probes > LT_SEARCH_MAX_PROBES)
        d->max_probes = d->max_probes ? LT_SEARCH_MAX_PROBES : 20;
    if (!d->max_repeats)
        d->max_repeats = 1;
    if (!(d->max_fault_share > 0))
        d->max_fault_share = 0.05;
    if (d->integer) {
        d->start = fmax(1, round(d->start));
    } else { /* the bounds too: a load clamped to one is still a round one */
        d->start = lt_search_round(d->start, d->precision);
        d->min_load = lt_search_round(d->min_load, d->precision);
        d->max_load = lt_search_round(d->max_load, d->precision);
    }
    s->lo_probe = s->hi_probe = -1;
    s->next = d->start;
}

void lt_search_seed(struct lt_search *s, double lo, double hi, double margin)
{
    if (!(margin > 0))
        margin = 0.1;
    if (lo > 0 && hi > lo) {
        s->o.start = lo;
        s->o.factor = fmax(hi / lo * (1 + margin), 1 + 2 * s->o.precision);
    } else if (lo > 0) {
        s->o.start = lo; /* met at the ceiling in virtual time */
    } else if (hi > 0) {
        s->o.start = hi / 2;
    }
    if (s->o.integer)
        s->o.start = fmax(1, round(s->o.start));
    else
        s->o.start = lt_search_round(s->o.start, s->o.precision);
    s->next = s->o.start;
}

void lt_search_confirm(struct lt_search *s, double lo, double hi)
{
    if (!(lo > 0 && hi > lo)) {
        lt_search_seed(s, lo, hi, 0);
        return;
    }
    s->model = LT_SEARCH_MODEL_CHECKING;
    s->model_lo = lo;
    s->model_hi = hi;
    s->steps = 0;
    s->o.start = s->o.integer ? fmax(1, round(lo)) : lt_search_round(lo, s->o.precision);
    s->next = s->o.start;
}

bool lt_search_next(struct lt_search *s, double *load, bool *repeat)
{
    if (s->end != LT_SEARCH_RUNNING)
        return false;
    if (s->n >= s->o.max_probes) {
        s->end = LT_SEARCH_MAX_PROBES_HIT;
        return false;
    }
    *load = s->next;
    *repeat = s->repeats > 0;
    return true;
}

void lt_search_give_up(struct lt_search *s, enum lt_search_end why)
{
    if (s->end == LT_SEARCH_RUNNING)
        s->end = why;
}

static double step_to(const struct lt_search *s, double x)
{
    x = s->o.integer ? round(x) : lt_search_round(x, s->o.precision);
    return fmin(fmax(x, s->o.min_load), s->o.max_load);
}

/* The load s->steps steps of precision from x, up (dir 1) or down (-1),
 * at most a factor o->factor away. Rounded inward, so that one step away
 * stays within the precision: a probe that disagrees there ends the
 * search. A concurrency's first step is 1 (its precision), a later one at
 * least its number of steps. */
static double step_from(const struct lt_search *s, double x, int dir)
{
    const struct lt_search_opts *o = &s->o;
    double f = fmin(pow(1 + o->precision, s->steps), o->factor);
    double y;
    if (o->integer) {
        double far = fmax(1, round(dir > 0 ? x * (o->factor - 1) : x - x / o->factor));
        double d = s->steps <= 1 ? 1 : fmax(s->steps, round(dir > 0 ? x * f - x : x - x / f));
        y = x + dir * fmin(d, far);
    } else {
        y = round_dir(dir > 0 ? x * f : x / f, o->precision, -dir);
        if (dir > 0 ? y <= x : y >= x) /* a step finer than the digits: the next digit */
            y = round_dir(dir > 0 ? x * f : x / f, o->precision, dir);
    }
    return fmin(fmax(y, o->min_load), o->max_load);
}

/* Nothing failed yet (up) or nothing met yet (down), with a model's
 * answer: the first step is one step of precision from it, each further
 * one twice the one before; a second step the same way means the model
 * was off by more than one. */
static void step_on(struct lt_search *s, bool up)
{
    if (s->steps > 0)
        s->model = LT_SEARCH_MODEL_OFF;
    s->steps = s->steps == 0 ? 1 : s->steps < (1u << 20) ? 2 * s->steps : s->steps;
    s->next = step_from(s, up ? s->lo : s->hi, up ? 1 : -1);
}

/* After a decision: the next load, or the end. */
static void choose_next(struct lt_search *s, double load)
{
    const struct lt_search_opts *o = &s->o;
    s->repeats = 0;
    if (s->hi == 0) { /* nothing failed yet: grow */
        if (load >= o->max_load) {
            s->end = LT_SEARCH_CEILING;
            return;
        }
        if (s->model != LT_SEARCH_MODEL_NONE) {
            step_on(s, true);
            return;
        }
        double x = step_to(s, s->lo * o->factor);
        if (o->integer && x <= s->lo)
            x = s->lo + 1;
        s->next = x;
        return;
    }
    if (s->lo == 0) { /* nothing met yet: shrink */
        if (load <= o->min_load) {
            s->end = LT_SEARCH_FLOOR;
            return;
        }
        if (s->model != LT_SEARCH_MODEL_NONE) {
            step_on(s, false);
            return;
        }
        double x = step_to(s, s->hi / o->factor);
        if (o->integer && x >= s->hi)
            x = s->hi - 1;
        s->next = x;
        return;
    }
    /* (a part in 1e9 of slack: a step of exactly the precision is within it) */
    bool done = o->integer ? s->hi - s->lo <= 1 : s->hi <= s->lo * (1 + o->precision) * (1 + 1e-9);
    if (done) {
        s->end = LT_SEARCH_FOUND;
        if (s->model == LT_SEARCH_MODEL_CHECKING)
            s->model = LT_SEARCH_MODEL_HELD;
        return;
    }
    double mid = (s->lo + s->hi) / 2;
    /* rounded, it stays strictly inside: the bracket is wider than
     * precision, and rounding moves it by at most precision / 4 */
    s->next = o->integer ? floor(mid) : lt_search_round(mid, o->precision);
}

/* What the model's answer says of load while the probes agree with it:
 * 1 meets, -1 fails, 0 nothing (between its ends, or no model). */
static int model_says(const struct lt_search *s, double load)
{
    if (s->model != LT_SEARCH_MODEL_CHECKING)
        return 0;
    return load <= s->model_lo ? 1 : load >= s->model_hi ? -1 : 0;
}

const struct lt_search_probe *lt_search_add(struct lt_search *s, uint64_t n, uint64_t good,
                                            uint64_t faults, bool saturated, double goodput)
{
    if (s->n >= LT_SEARCH_MAX_PROBES)
        return NULL;
    const struct lt_search_opts *o = &s->o;
    struct lt_search_probe *p = &s->p[s->n++];
    memset(p, 0, sizeof *p);
    p->load = s->next;
    p->n = n;
    p->good = good;
    p->faults = faults;
    p->saturated = saturated;
    p->goodput = goodput;
    /* Pool with the undecided runs just before at this load. */
    uint64_t pn = 0, pg = 0, pf = 0;
    bool sat = false;
    for (uint32_t k = 0; k <= s->repeats && k < s->n; k++) {
        const struct lt_search_probe *q = &s->p[s->n - 1 - k];
        pn += q->n;
        pg += q->good;
        pf += q->faults;
        sat = sat || q->saturated;
    }
    p->pooled = s->repeats + 1;
    p->attain = pn ? (double)pg / (double)pn : 0;
    lt_search_wilson(pg, pn, Z95, &p->ci_lo, &p->ci_hi);
    double fault_share = pn + pf ? (double)pf / (double)(pn + pf) : 0;
    if (fault_share > o->max_fault_share) {
        p->verdict = LT_SEARCH_FAULTED;
        if (s->repeats < 1)
            s->repeats++;
        else
            s->end = LT_SEARCH_FAULTS;
        return p;
    }
    bool straddles = p->ci_lo < o->attain && p->ci_hi > o->attain;
    bool meets = p->attain >= o->attain && !sat;
    p->verdict = sat ? LT_SEARCH_SATURATED : meets ? LT_SEARCH_MEETS : LT_SEARCH_FAILS;
    /* an unsure probe that says what the model says is not run again:
     * the model was its second opinion */
    int says = model_says(s, p->load);
    bool as_model = says != 0 && (says > 0) == meets;
    if (straddles && !sat && !o->no_repeat && !as_model && s->repeats < o->max_repeats) {
        s->repeats++;
        return p;
    }
    p->decided = true;
    p->unsure = straddles && !sat;
    double load = p->load;
    if (meets) {
        if (s->hi > 0 && load >= s->hi) { /* noise against an earlier failure: trust the newer */
            s->hi = 0;
            s->hi_probe = -1;
        }
        if (load > s->lo) {
            s->lo = load;
            s->lo_goodput = goodput;
            s->lo_probe = (int)(s->n - 1);
        }
    } else {
        if (s->lo > 0 && load <= s->lo) {
            s->lo = 0;
            s->lo_probe = -1;
        }
        if (s->hi == 0 || load < s->hi) {
            s->hi = load;
            s->hi_probe = (int)(s->n - 1);
        }
    }
    choose_next(s, load);
    return p;
}

const char *lt_search_verdict_name(enum lt_search_verdict v)
{
    switch (v) {
    case LT_SEARCH_MEETS:
        return "meets";
    case LT_SEARCH_FAILS:
        return "fails";
    case LT_SEARCH_FAULTED:
        return "faulted";
    case LT_SEARCH_SATURATED:
        return "saturated";
    }
    return "?";
}

const char *lt_search_end_name(enum lt_search_end e)
{
    switch (e) {
    case LT_SEARCH_RUNNING:
        return "running";
    case LT_SEARCH_FOUND:
        return "found";
    case LT_SEARCH_MAX_PROBES_HIT:
        return "max-probes";
    case LT_SEARCH_MAX_TIME_HIT:
        return "max-time";
    case LT_SEARCH_FAULTS:
        return "faults";
    case LT_SEARCH_FLOOR:
        return "fails-at-floor";
    case LT_SEARCH_CEILING:
        return "meets-at-ceiling";
    case LT_SEARCH_STOPPED:
        return "stopped";
    }
    return "?";
}

/* ---- over-saturation, while a probe runs ---- */

void lt_search_watch_init(struct lt_search_watch *w, double span_s)
{
    memset(w, 0, sizeof *w);
    w->span_s = span_s > 0 ? span_s : 0;
    for (int k = 0; k < 3; k++)
        w->since[k] = -1;
}

/* The means of the four quarters of x[0..n). */
static void quarters(const double *x, uint32_t n, double q[4])
{
    for (int k = 0; k < 4; k++) {
        uint32_t a = n * (uint32_t)k / 4, b = n * (uint32_t)(k + 1) / 4;
        double s = 0;
        for (uint32_t i = a; i < b; i++)
            s += x[i];
        q[k] = b > a ? s / (double)(b - a) : 0;
    }
}

static bool growing(const double q[4], double floor)
{
    return q[0] < q[1] && q[1] < q[2] && q[2] < q[3] && q[3] > 4 * q[0] + floor;
}

bool lt_search_grew(const double *x, uint32_t n, double floor)
{
    double q[4];
    if (n < 8)
        return false;
    quarters(x, n, q);
    return growing(q, floor);
}

bool lt_search_watch_add(struct lt_search_watch *w, double t, double inflight, double lag,
                         double waiting)
{
    if (w->saturated)
        return true;
    w->t_last = t;
    if (w->n && t - w->t[w->n - 1] < w->dt)
        return false;                  /* between kept samples: the buffer was halved */
    if (w->n == LT_SEARCH_WATCH_MAX) { /* keep every other sample: still evenly spaced */
        for (uint32_t i = 0; i < w->n / 2; i++) {
            w->t[i] = w->t[2 * i];
            w->inflight[i] = w->inflight[2 * i];
            w->lag[i] = w->lag[2 * i];
            w->waiting[i] = w->waiting[2 * i];
        }
        w->n /= 2;
        w->dt = w->n > 1 ? (w->t[w->n - 1] - w->t[0]) / (double)(w->n - 1) : 0;
    }
    w->t[w->n] = t;
    w->inflight[w->n] = inflight;
    w->lag[w->n] = lag;
    w->waiting[w->n] = waiting < 0 ? 0 : waiting;
    w->n++;
    if (w->n < 8 || t < 2 || t < w->span_s / 10)
        return false;
    static const char *const names[3] = {"requests in flight", "the server's waiting queue",
                                         "the schedule lag (s)"};
    static const double floors[3] = {4, 4, 1};
    const double *xs[3] = {w->inflight, w->waiting, w->lag};
    for (int k = 0; k < 3; k++) {
        double q[4];
        if (k == 1 && waiting < 0) { /* not scraped (now): no judgement */
            w->since[k] = -1;
            continue;
        }
        quarters(xs[k], w->n, q);
        if (!growing(q, floors[k])) {
            w->since[k] = -1;
            continue;
        }
        if (w->since[k] < 0)
            w->since[k] = t;
        if (t < 2 * w->since[k])
            continue;
        w->saturated = true;
        snprintf(w->why, sizeof w->why,
                 "%s grew without bound: %.3g, %.3g, %.3g, %.3g (means of the quarters of "
                 "0-%.1f s), growing since %.1f s; stopped at %.1f s",
                 names[k], q[0], q[1], q[2], q[3], t, w->since[k], t);
        if (w->span_s > 0) {
            size_t u = strlen(w->why);
            snprintf(w->why + u, sizeof w->why - u, " of %.1f s planned", w->span_s);
        }
        return true;
    }
    return false;
}

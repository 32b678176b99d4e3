/*
 * The one parser of arrival specs (lt_arrivals.h has the grammar and why
 * its limits are where they are).
 */
#include "base/lt_arrivals.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int bad(const char *s, unsigned flags, struct lt_err *err)
{
    return lt_errset(err, LT_EINVAL,
                     "'%s': arrivals are constant, poisson or gamma:CV (%g <= CV <= %g)%s", s,
                     LT_ARR_CV_MIN, LT_ARR_CV_MAX,
                     flags & LT_ARR_FIT ? ", or with a fit empirical or gamma:fit"
                                        : " (empirical and gamma:fit need synth --fit)");
}

int lt_arrivals_parse(const char *s, unsigned flags, enum lt_arrivals *a, double *cv,
                      struct lt_err *err)
{
    *cv = 0;
    if (!strcmp(s, "constant")) {
        *a = LT_ARR_CONSTANT;
        return 0;
    }
    if (!strcmp(s, "poisson")) {
        *a = LT_ARR_POISSON;
        *cv = 1;
        return 0;
    }
    if ((flags & LT_ARR_FIT) && !strcmp(s, "gamma:fit")) { /* cv 0: the fitted trace's */
        *a = LT_ARR_GAMMA;
        return 0;
    }
    if ((flags & LT_ARR_FIT) && !strcmp(s, "empirical")) {
        *a = LT_ARR_EMPIRICAL;
        return 0;
    }
    if (!strncmp(s, "gamma:", 6)) {
        char *end;
        double v = strtod(s + 6, &end);
        if (end != s + 6 && !*end && isfinite(v) && v >= LT_ARR_CV_MIN && v <= LT_ARR_CV_MAX) {
            *a = LT_ARR_GAMMA;
            *cv = v;
            return 0;
        }
    }
    return bad(s, flags, err);
}

const char *lt_arrivals_name(enum lt_arrivals a)
{
    switch (a) {
    case LT_ARR_CONSTANT:
        return "constant";
    case LT_ARR_GAMMA:
        return "gamma";
    case LT_ARR_EMPIRICAL:
        return "empirical";
    case LT_ARR_DEFAULT:
    case LT_ARR_POISSON:
        break;
    }
    return "poisson";
}

/*
 * Fault spec parsing and the per-request fault draw (see sim_faults.h).
 * The draw depends only on (seed, sequence number), never on a shared
 * generator's state, so concurrent arrivals cannot change who fails.
 */
#include "sim/sim_faults.h"
#include "traces/lt_rng.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[LT_SIM_FAULT_COUNT] = {
    "none", "500", "503", "429", "refuse", "disconnect", "stall", "malformed", "slow",
};

const char *lt_sim_fault_name(enum lt_sim_fault k)
{
    return (unsigned)k < LT_SIM_FAULT_COUNT ? names[k] : "?";
}

int lt_sim_parse_duration_us(const char *s, int64_t *us)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !isfinite(v) || v < 0)
        return LT_EFORMAT;
    double mul;
    if (!*end || !strcmp(end, "s"))
        mul = 1e6;
    else if (!strcmp(end, "ms"))
        mul = 1e3;
    else if (!strcmp(end, "us"))
        mul = 1;
    else if (!strcmp(end, "m"))
        mul = 60e6;
    else
        return LT_EFORMAT;
    if (v * mul > 1e15)
        return LT_EFORMAT;
    *us = (int64_t)llround(v * mul);
    return 0;
}

static int parse_u32(const char *s, uint32_t *v)
{
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9')
        return LT_EFORMAT;
    unsigned long long x = strtoull(s, &end, 10);
    if (*end || errno || x > UINT32_MAX)
        return LT_EFORMAT;
    *v = (uint32_t)x;
    return 0;
}

/* Split "a:b:c" in place into at most 3 fields; returns the count. */
static int split(char *s, char **f)
{
    int n = 0;
    f[n++] = s;
    for (char *p = s; *p && n < 3; p++)
        if (*p == ':') {
            *p = '\0';
            f[n++] = p + 1;
        }
    return n;
}

static int parse_item(struct lt_sim_faults *f, char *name, char *val)
{
    char *fld[3] = {0};
    if (!strcmp(name, "seed")) {
        char *end;
        errno = 0;
        f->seed = strtoull(val, &end, 10);
        f->seed_set = true;
        return (*val && !*end && !errno) ? 0 : LT_EFORMAT;
    }
    int k;
    for (k = 1; k < LT_SIM_FAULT_COUNT; k++)
        if (!strcmp(name, names[k]))
            break;
    if (k == LT_SIM_FAULT_COUNT)
        return LT_EINVAL;
    int n = split(val, fld);
    char *end;
    errno = 0;
    double p = strtod(fld[0], &end);
    if (end == fld[0] || *end || errno || !(p >= 0 && p <= 1))
        return LT_EFORMAT;
    f->p[k] = p;
    int rc = 0;
    switch (k) {
    case LT_SIM_FAULT_503:
        if (n > 1)
            rc = parse_u32(fld[1], &f->retry_after_503);
        break;
    case LT_SIM_FAULT_429:
        if (n > 1)
            rc = parse_u32(fld[1], &f->retry_after_429);
        break;
    case LT_SIM_FAULT_REFUSE:
        if (n > 1)
            rc = lt_sim_parse_duration_us(fld[1], &f->refuse_us);
        break;
    case LT_SIM_FAULT_DISCONNECT:
        if (n > 1)
            rc = parse_u32(fld[1], &f->disconnect_after);
        break;
    case LT_SIM_FAULT_STALL:
        if (n > 1)
            rc = lt_sim_parse_duration_us(fld[1], &f->stall_us);
        if (!rc && n > 2)
            rc = parse_u32(fld[2], &f->stall_after);
        break;
    case LT_SIM_FAULT_MALFORMED:
        if (n > 1)
            rc = parse_u32(fld[1], &f->malformed_after);
        break;
    case LT_SIM_FAULT_SLOW:
        if (n > 1)
            rc = lt_sim_parse_duration_us(fld[1], &f->slow_us);
        break;
    default:
        if (n > 1)
            rc = LT_EFORMAT;
        break;
    }
    return rc;
}

int lt_sim_faults_parse(struct lt_sim_faults *f, const char *spec, struct lt_err *err)
{
    memset(f, 0, sizeof *f);
    f->retry_after_503 = 1;
    f->retry_after_429 = 1;
    f->refuse_us = 1000000;
    f->disconnect_after = 10;
    f->stall_us = 2000000;
    f->stall_after = 5;
    f->malformed_after = 3;
    f->slow_us = 1000000;
    if (!spec || !*spec)
        return 0;
    char buf[1024];
    if (strlen(spec) >= sizeof buf)
        return lt_errset(err, LT_EFORMAT, "fault spec is too long");
    memcpy(buf, spec, strlen(spec) + 1);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq)
            return lt_errset(err, LT_EFORMAT, "fault '%s': expected NAME=VALUE", item);
        *eq = '\0';
        int rc = parse_item(f, item, eq + 1);
        if (rc == LT_EINVAL)
            return lt_errset(err, LT_EFORMAT,
                             "unknown fault '%s' (500, 503, 429, refuse, disconnect, stall, "
                             "malformed, slow, seed)",
                             item);
        if (rc < 0)
            return lt_errset(err, LT_EFORMAT, "fault '%s': bad value '%s'", item, eq + 1);
    }
    double sum = 0;
    for (int k = 1; k < LT_SIM_FAULT_COUNT; k++)
        sum += f->p[k];
    if (sum > 1 + 1e-9)
        return lt_errset(err, LT_EFORMAT, "fault probabilities add up to %.3f, more than 1", sum);
    f->any = sum > 0;
    return 0;
}

enum lt_sim_fault lt_sim_faults_pick(const struct lt_sim_faults *f, uint64_t seq)
{
    if (!f->any)
        return LT_SIM_FAULT_NONE;
    struct lt_rng r;
    lt_rng_seed(&r, lt_mix64(f->seed ^ lt_mix64(seq + 0x5eed)));
    double u = lt_rng_uniform(&r), acc = 0;
    for (int k = 1; k < LT_SIM_FAULT_COUNT; k++) {
        acc += f->p[k];
        if (f->p[k] > 0 && (u < acc || f->p[k] >= 1))
            return (enum lt_sim_fault)k;
    }
    return LT_SIM_FAULT_NONE;
}

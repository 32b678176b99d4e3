/*
 * Fault spec parsing and the per-request fault draw (see sim_faults.h).
 * The draw depends only on (seed, sequence number), never on a shared
 * generator's state, so concurrent arrivals cannot change who fails.
 */
#include "sim/sim_faults.h"
#include "base/lt_dur.h"
#include "base/lt_rng.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[LT_SIM_FAULT_COUNT] = {
    "none",    "500",       "503",    "429",       "refuse",     "disconnect",
    "stall",   "malformed", "slow",   "bighead",   "badchoices", "badusage",
    "liesize", "badchunk",  "lfhead", "bigstatus", "interim",    "badprompt",
};

static const char *const mnames[LT_SIM_MFAULT_COUNT] = {
    "none",
    "metrics-html",
    "metrics-big",
    "metrics-slow",
};

const char *lt_sim_mfault_name(enum lt_sim_mfault k)
{
    return (unsigned)k < LT_SIM_MFAULT_COUNT ? mnames[k] : "?";
}

const char *lt_sim_fault_name(enum lt_sim_fault k)
{
    return (unsigned)k < LT_SIM_FAULT_COUNT ? names[k] : "?";
}

/* Durations in fault items follow the one grammar; a bare number is
 * seconds. The error names the fault and the field. */
static int parse_dur(const char *fault, const char *what, const char *s, int64_t *us,
                     struct lt_err *err)
{
    struct lt_err e = {0};
    if (lt_dur_parse(s, LT_DUR_BARE_S, us, &e) == 0 && *us >= 0)
        return 0;
    return lt_errset(err, LT_EFORMAT, "fault '%s': the %s '%s' is not a duration (%s)", fault, what,
                     s, LT_DUR_UNITS);
}

/* A whole number of at most max. */
static int parse_uint(const char *fault, const char *what, const char *s, uint64_t max, uint64_t *v,
                      struct lt_err *err)
{
    char *end;
    errno = 0;
    unsigned long long x = 0;
    if (*s >= '0' && *s <= '9')
        x = strtoull(s, &end, 10);
    if (*s < '0' || *s > '9' || *end || errno)
        return lt_errset(err, LT_EFORMAT, "fault '%s': the %s '%s' is not a whole number", fault,
                         what, s);
    if (x > max)
        return lt_errset(err, LT_EFORMAT, "fault '%s': the %s '%s' is more than %llu", fault, what,
                         s, (unsigned long long)max);
    *v = x;
    return 0;
}

static int parse_u32(const char *fault, const char *what, const char *s, uint32_t *v,
                     struct lt_err *err)
{
    uint64_t x;
    int rc = parse_uint(fault, what, s, UINT32_MAX, &x, err);
    if (rc == 0)
        *v = (uint32_t)x;
    return rc;
}

/* Split "a:b:c" in place into at most max + 2 fields (the probability, max
 * values and one too many, so that it is seen); returns the count. */
static int split(char *s, char **f, int max)
{
    int n = 0;
    f[n++] = s;
    for (char *p = s; *p && n < max + 2; p++)
        if (*p == ':') {
            *p = '\0';
            f[n++] = p + 1;
        }
    return n;
}

/* What the fields after the probability mean, per fault (NULL: none). */
static const char *const extra[LT_SIM_FAULT_COUNT][2] = {
    [LT_SIM_FAULT_503] = {"Retry-After seconds", NULL},
    [LT_SIM_FAULT_429] = {"Retry-After seconds", NULL},
    [LT_SIM_FAULT_REFUSE] = {"refusal time", NULL},
    [LT_SIM_FAULT_DISCONNECT] = {"tokens before the cut", NULL},
    [LT_SIM_FAULT_STALL] = {"stall time", "tokens before the stall"},
    [LT_SIM_FAULT_MALFORMED] = {"chunks before the bad one", NULL},
    [LT_SIM_FAULT_SLOW] = {"delay", NULL},
    [LT_SIM_FAULT_BIGHEAD] = {"header bytes", NULL},
    [LT_SIM_FAULT_BADCHOICES] = {"chunks before the bad one", NULL},
    [LT_SIM_FAULT_BADUSAGE] = {"tokens claimed", NULL},
    [LT_SIM_FAULT_LIESIZE] = {"bytes claimed beyond the body", NULL},
    [LT_SIM_FAULT_BADCHUNK] = {"chunks before the bad one", NULL},
    [LT_SIM_FAULT_INTERIM] = {"interim heads", NULL},
    [LT_SIM_FAULT_BADPROMPT] = {"prompt tokens claimed", NULL},
};

static int parse_prob(const char *name, const char *s, double *p, struct lt_err *err)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (end == s || *end || errno || !(x >= 0 && x <= 1))
        return lt_errset(err, LT_EFORMAT, "fault '%s': the probability '%s' is not 0 to 1", name,
                         s);
    *p = x;
    return 0;
}

/* metrics-html=P, metrics-big=P[:BYTES], metrics-slow=P[:DUR]. */
static int parse_metrics_item(struct lt_sim_faults *f, int k, const char *name, char *val,
                              struct lt_err *err)
{
    char *fld[3] = {0};
    int max = k == LT_SIM_MFAULT_HTML ? 0 : 1;
    int n = split(val, fld, max);
    if (n > max + 1)
        return max ? lt_errset(err, LT_EFORMAT, "fault '%s': at most %d values after ':'", name,
                               max)
                   : lt_errset(err, LT_EFORMAT, "fault '%s' takes only a probability", name);
    int rc = parse_prob(name, fld[0], &f->mp[k], err);
    if (rc == 0 && n > 1 && k == LT_SIM_MFAULT_BIG) {
        uint64_t b;
        rc = parse_uint(name, "page bytes", fld[1], LT_SIM_MFAULT_BIG_MAX, &b, err);
        if (rc == 0)
            f->mbig_bytes = (uint32_t)b;
    }
    if (rc == 0 && n > 1 && k == LT_SIM_MFAULT_SLOW)
        rc = parse_dur(name, "delay", fld[1], &f->mslow_us, err);
    return rc;
}

static int parse_item(struct lt_sim_faults *f, char *name, char *val, struct lt_err *err)
{
    char *fld[4] = {0};
    if (!strcmp(name, "seed")) {
        char *end;
        errno = 0;
        f->seed = strtoull(val, &end, 10);
        f->seed_set = true;
        if (*val >= '0' && *val <= '9' && !*end && !errno)
            return 0;
        return lt_errset(err, LT_EFORMAT, "fault 'seed': '%s' is not a whole number", val);
    }
    int k;
    for (k = 1; k < LT_SIM_MFAULT_COUNT; k++)
        if (!strcmp(name, mnames[k]))
            return parse_metrics_item(f, k, name, val, err);
    for (k = 1; k < LT_SIM_FAULT_COUNT; k++)
        if (!strcmp(name, names[k]))
            break;
    if (k == LT_SIM_FAULT_COUNT)
        return lt_errset(
            err, LT_EFORMAT,
            "unknown fault '%s' (500, 503, 429, refuse, disconnect, stall, "
            "malformed, slow, bighead, badchoices, badusage, liesize, badchunk, lfhead, "
            "bigstatus, interim, badprompt, "
            "metrics-html, metrics-big, metrics-slow, seed)",
            name);
    int max = extra[k][1] ? 2 : extra[k][0] ? 1 : 0;
    int n = split(val, fld, max);
    if (n > max + 1)
        return max ? lt_errset(err, LT_EFORMAT, "fault '%s': at most %d values after ':'", name,
                               max)
                   : lt_errset(err, LT_EFORMAT, "fault '%s' takes only a probability", name);
    int rc = parse_prob(name, fld[0], &f->p[k], err);
    if (rc < 0)
        return rc;
    switch (k) {
    case LT_SIM_FAULT_503:
        if (n > 1)
            rc = parse_u32(name, extra[k][0], fld[1], &f->retry_after_503, err);
        break;
    case LT_SIM_FAULT_429:
        if (n > 1)
            rc = parse_u32(name, extra[k][0], fld[1], &f->retry_after_429, err);
        break;
    case LT_SIM_FAULT_REFUSE:
        if (n > 1)
            rc = parse_dur(name, extra[k][0], fld[1], &f->refuse_us, err);
        break;
    case LT_SIM_FAULT_DISCONNECT:
        if (n > 1)
            rc = parse_u32(name, extra[k][0], fld[1], &f->disconnect_after, err);
        break;
    case LT_SIM_FAULT_STALL:
        if (n > 1)
            rc = parse_dur(name, extra[k][0], fld[1], &f->stall_us, err);
        if (!rc && n > 2)
            rc = parse_u32(name, extra[k][1], fld[2], &f->stall_after, err);
        break;
    case LT_SIM_FAULT_MALFORMED:
        if (n > 1)
            rc = parse_u32(name, extra[k][0], fld[1], &f->malformed_after, err);
        break;
    case LT_SIM_FAULT_SLOW:
        if (n > 1)
            rc = parse_dur(name, extra[k][0], fld[1], &f->slow_us, err);
        break;
    case LT_SIM_FAULT_BIGHEAD:
        if (n > 1) {
            uint64_t b;
            rc = parse_uint(name, extra[k][0], fld[1], LT_SIM_FAULT_BIGHEAD_MAX, &b, err);
            if (rc == 0)
                f->bighead_bytes = (uint32_t)b;
        }
        break;
    case LT_SIM_FAULT_BADCHOICES:
        if (n > 1)
            rc = parse_u32(name, extra[k][0], fld[1], &f->badchoices_after, err);
        break;
    case LT_SIM_FAULT_BADUSAGE:
        if (n > 1)
            rc = parse_uint(name, extra[k][0], fld[1], UINT64_MAX, &f->badusage_tokens, err);
        break;
    case LT_SIM_FAULT_LIESIZE:
        if (n > 1)
            rc = parse_u32(name, extra[k][0], fld[1], &f->liesize_bytes, err);
        if (!rc && !f->liesize_bytes)
            rc = lt_errset(err, LT_EFORMAT, "fault '%s': the bytes claimed must be at least 1",
                           name);
        break;
    case LT_SIM_FAULT_BADCHUNK:
        if (n > 1)
            rc = parse_u32(name, extra[k][0], fld[1], &f->badchunk_after, err);
        break;
    case LT_SIM_FAULT_INTERIM:
        if (n > 1) {
            uint64_t h;
            rc = parse_uint(name, extra[k][0], fld[1], LT_SIM_FAULT_INTERIM_MAX, &h, err);
            if (rc == 0)
                f->interim_heads = (uint32_t)h;
        }
        break;
    case LT_SIM_FAULT_BADPROMPT:
        if (n > 1)
            rc = parse_uint(name, extra[k][0], fld[1], UINT64_MAX, &f->badprompt_tokens, err);
        break;
    default:
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
    f->bighead_bytes = 2u << 20;
    f->badchoices_after = 3;
    f->badusage_tokens = UINT64_MAX;
    f->liesize_bytes = 100;
    f->badchunk_after = 3;
    f->interim_heads = 1000;
    f->badprompt_tokens = UINT64_MAX;
    f->mbig_bytes = 8u << 20;
    f->mslow_us = 30000000;
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
        int rc = parse_item(f, item, eq + 1, err);
        if (rc < 0)
            return rc;
    }
    double sum = 0;
    for (int k = 1; k < LT_SIM_FAULT_COUNT; k++)
        sum += f->p[k];
    if (sum > 1 + 1e-9)
        return lt_errset(err, LT_EFORMAT, "fault probabilities add up to %.3f, more than 1", sum);
    f->any = sum > 0;
    double msum = 0;
    for (int k = 1; k < LT_SIM_MFAULT_COUNT; k++)
        msum += f->mp[k];
    if (msum > 1 + 1e-9)
        return lt_errset(err, LT_EFORMAT, "metrics fault probabilities add up to %.3f, more than 1",
                         msum);
    f->many = msum > 0;
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

enum lt_sim_mfault lt_sim_faults_pick_metrics(const struct lt_sim_faults *f, uint64_t seq)
{
    if (!f->many)
        return LT_SIM_MFAULT_NONE;
    /* Another stream than the inference draw's, so that scrapes and
     * requests with the same number do not fail together. */
    struct lt_rng r;
    lt_rng_seed(&r, lt_mix64(f->seed ^ lt_mix64(seq + 0x3e7c5)) ^ 0x6d657472696373ull);
    double u = lt_rng_uniform(&r), acc = 0;
    for (int k = 1; k < LT_SIM_MFAULT_COUNT; k++) {
        acc += f->mp[k];
        if (f->mp[k] > 0 && (u < acc || f->mp[k] >= 1))
            return (enum lt_sim_mfault)k;
    }
    return LT_SIM_MFAULT_NONE;
}

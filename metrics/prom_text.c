/*
 * The Prometheus text exposition format, parsed line by line over one
 * owned copy of the page (see prom_text.h for the grammar).
 *
 * Names, label values and HELP texts are cut out of the copy in place: a
 * token's terminator is overwritten with NUL once it has been read, and an
 * escaped string is rewritten over itself (unescaping only shortens it).
 * So the page costs one copy plus the sample, label and family arrays, each
 * capped by a limit; no input can make it allocate more.
 */
#include "metrics/prom_text.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A parse in progress: the page, where we are, for messages. */
struct pstate {
    struct lt_prom_page *pg;
    const char *name;
    uint32_t line;
    struct lt_err *err;
};

struct lt_prom_limits lt_prom_limits_default(void)
{
    return (struct lt_prom_limits){
        .page_bytes = LT_PROM_PAGE_MAX,
        .samples = LT_PROM_SAMPLES_MAX,
        .families = LT_PROM_FAMILIES_MAX,
        .labels_per_sample = LT_PROM_LABELS_PER_SAMPLE_MAX,
        .labels = LT_PROM_LABELS_MAX,
        .name_bytes = LT_PROM_NAME_MAX,
        .value_bytes = LT_PROM_VALUE_MAX,
        .help_bytes = LT_PROM_HELP_MAX,
    };
}

void lt_prom_page_init(struct lt_prom_page *pg, const struct lt_prom_limits *lim)
{
    memset(pg, 0, sizeof *pg);
    struct lt_prom_limits d = lt_prom_limits_default();
    if (lim) {
#define LT_PROM_PICK(f) d.f = lim->f ? lim->f : d.f
        LT_PROM_PICK(page_bytes);
        LT_PROM_PICK(samples);
        LT_PROM_PICK(families);
        LT_PROM_PICK(labels_per_sample);
        LT_PROM_PICK(labels);
        LT_PROM_PICK(name_bytes);
        LT_PROM_PICK(value_bytes);
        LT_PROM_PICK(help_bytes);
#undef LT_PROM_PICK
    }
    pg->lim = d;
}

/* Forget the content, keep the memory. */
static void page_clear(struct lt_prom_page *pg)
{
    pg->nfamilies = pg->nsamples = pg->nlabels = 0;
    if (pg->index)
        memset(pg->index, 0, pg->index_cap * sizeof *pg->index);
}

void lt_prom_page_release(struct lt_prom_page *pg)
{
    free(pg->families);
    free(pg->samples);
    free(pg->labels);
    free(pg->text);
    free(pg->index);
    struct lt_prom_limits lim = pg->lim;
    memset(pg, 0, sizeof *pg);
    pg->lim = lim;
}

const char *lt_prom_type_name(enum lt_prom_type t)
{
    switch (t) {
    case LT_PROM_COUNTER:
        return "counter";
    case LT_PROM_GAUGE:
        return "gauge";
    case LT_PROM_HISTOGRAM:
        return "histogram";
    case LT_PROM_SUMMARY:
        return "summary";
    case LT_PROM_UNTYPED:
        break;
    }
    return "untyped";
}

__attribute__((format(printf, 3, 4))) static int fail(struct pstate *ps, int code, const char *fmt,
                                                      ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return lt_errset(ps->err, code, "%s:%u: %s", ps->name, (unsigned)ps->line, msg);
}

/* Grow *arr (elements of size sz, *cap of them) to hold one more than n,
 * never past max elements. */
static int grow(void **arr, size_t *cap, size_t n, size_t sz, size_t max)
{
    if (n < *cap)
        return 0;
    if (n >= max)
        return LT_ELIMIT;
    size_t ncap = *cap ? *cap * 2 : 64;
    if (ncap > max)
        ncap = max;
    void *p = realloc(*arr, ncap * sz);
    if (!p)
        return LT_ENOMEM;
    *arr = p;
    *cap = ncap;
    return 0;
}

/* --- the family index: FNV-1a over the name, linear probing ------------- */

static uint64_t hash_name(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* The family whose name is the n bytes at s, or -1. */
static long find_family(const struct lt_prom_page *pg, const char *s, size_t n)
{
    if (!pg->index_cap)
        return -1;
    size_t mask = pg->index_cap - 1;
    for (size_t i = hash_name(s, n) & mask;; i = (i + 1) & mask) {
        uint32_t v = pg->index[i];
        if (!v)
            return -1;
        const char *fn = pg->families[v - 1].name;
        if (strncmp(fn, s, n) == 0 && fn[n] == '\0')
            return (long)v - 1;
    }
}

/* A new untyped family called name (NUL-terminated, in the page copy). */
static int add_family(struct pstate *ps, const char *name, size_t *out)
{
    struct lt_prom_page *pg = ps->pg;
    int rc = grow((void **)&pg->families, &pg->cap_families, pg->nfamilies, sizeof *pg->families,
                  pg->lim.families);
    if (rc == LT_ELIMIT)
        return fail(ps, rc, "more than %zu metric families on one page", pg->lim.families);
    if (rc < 0)
        return fail(ps, rc, "out of memory for the metric families");
    if (!pg->index) {
        /* A power of two at least twice the families limit: probes stay short
         * and the table never fills. */
        size_t cap = 16;
        while (cap < 2 * pg->lim.families)
            cap *= 2;
        pg->index = calloc(cap, sizeof *pg->index);
        if (!pg->index)
            return fail(ps, LT_ENOMEM, "out of memory for the family index");
        pg->index_cap = cap;
    }
    size_t idx = pg->nfamilies++;
    pg->families[idx] = (struct lt_prom_family){.name = name};
    size_t mask = pg->index_cap - 1;
    size_t i = hash_name(name, strlen(name)) & mask;
    while (pg->index[i])
        i = (i + 1) & mask;
    pg->index[i] = (uint32_t)(idx + 1);
    *out = idx;
    return 0;
}

/* --- tokens ------------------------------------------------------------ */

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static const char *skip_blank(const char *p)
{
    while (is_blank(*p))
        p++;
    return p;
}

static bool name_start(char c, bool colon)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}

static bool name_char(char c, bool colon)
{
    return name_start(c, colon) || (c >= '0' && c <= '9');
}

/* The length of the metric name (colon true) or label name at p; 0 if
 * none starts there. */
static size_t name_len(const char *p, bool colon)
{
    if (!name_start(*p, colon))
        return 0;
    size_t n = 1;
    while (name_char(p[n], colon))
        n++;
    return n;
}

/* A float as Go's strconv.ParseFloat (and so Prometheus) reads it; the
 * token at s is NUL-terminated. */
static bool parse_float(const char *s, double *out)
{
    if (!*s)
        return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        /* digits, signs, exponents, hex floats, Inf/NaN; never "nan(...)" */
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              c == '.' || c == '+' || c == '-'))
            return false;
    }
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (*end != '\0' || end == s)
        return false;
    if (errno == ERANGE && isinf(v))
        return false; /* too large for a double: ParseFloat refuses it too */
    *out = v;
    return true;
}

static bool parse_i64(const char *s, int64_t *out)
{
    const char *p = s;
    if (*p == '-' || *p == '+')
        p++;
    if (!*p)
        return false;
    for (const char *q = p; *q; q++)
        if (*q < '0' || *q > '9')
            return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE || *end)
        return false;
    *out = v;
    return true;
}

/* Unescape the string starting at *pp in place up to its closing quote
 * (label value: \\ \" \n) or the end of the line (HELP: \\ \n). On success
 * *pp points after the closing quote (or at the end), and the unescaped
 * string, NUL-terminated, starts where the input did. */
static int unescape(struct pstate *ps, char **pp, bool quoted, size_t max, const char *what)
{
    char *r = *pp, *w = *pp;
    size_t n = 0;
    for (;;) {
        char c = *r;
        if (c == '\0') {
            if (quoted)
                return fail(ps, LT_EFORMAT, "%s has no closing quote", what);
            break;
        }
        if (quoted && c == '"') {
            r++;
            break;
        }
        if (c == '\\') {
            char e = r[1];
            if (e == '\\' || e == 'n' || (quoted && e == '"')) {
                c = e == 'n' ? '\n' : e;
                r++;
            } else if (e == '\0') {
                return fail(ps, LT_EFORMAT, "%s ends in a lone backslash", what);
            } else {
                return fail(ps, LT_EFORMAT,
                            "%s has the escape \\%c, which the format does not have", what, e);
            }
        }
        if (++n > max)
            return fail(ps, LT_ELIMIT, "%s is longer than %zu bytes", what, max);
        *w++ = c;
        r++;
    }
    *w = '\0';
    *pp = r;
    return 0;
}

/* --- lines ------------------------------------------------------------- */

static int type_of(const char *w, enum lt_prom_type *t)
{
    static const struct {
        const char *name;
        enum lt_prom_type t;
    } types[] = {
        {"counter", LT_PROM_COUNTER},     {"gauge", LT_PROM_GAUGE},
        {"histogram", LT_PROM_HISTOGRAM}, {"summary", LT_PROM_SUMMARY},
        {"untyped", LT_PROM_UNTYPED},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(w, types[i].name) == 0) {
            *t = types[i].t;
            return 0;
        }
    return -1;
}

/* "# HELP name text" or "# TYPE name type"; p is after the keyword. */
static int parse_meta(struct pstate *ps, char *p, bool help)
{
    struct lt_prom_page *pg = ps->pg;
    const char *kw = help ? "HELP" : "TYPE";
    if (!is_blank(*p))
        return fail(ps, LT_EFORMAT, "# %s must be followed by a metric name", kw);
    p = (char *)skip_blank(p);
    size_t n = name_len(p, true);
    if (!n)
        return fail(ps, LT_EFORMAT, "# %s is not followed by a metric name", kw);
    if (n > pg->lim.name_bytes)
        return fail(ps, LT_ELIMIT, "a metric name is longer than %zu bytes", pg->lim.name_bytes);
    char *name = p;
    char after = p[n];
    if (after != '\0' && !is_blank(after))
        return fail(ps, LT_EFORMAT, "the metric name after # %s has the character '%c'", kw, after);
    p[n] = '\0';
    p += n + (after != '\0');
    long f = find_family(pg, name, n);
    size_t idx;
    if (f < 0) {
        int rc = add_family(ps, name, &idx);
        if (rc < 0)
            return rc;
    } else {
        idx = (size_t)f;
    }
    struct lt_prom_family *fam = &pg->families[idx];
    if (help) {
        if (fam->help)
            return fail(ps, LT_EFORMAT, "a second HELP line for %s", name);
        p = (char *)skip_blank(p);
        char *text = p;
        int rc = unescape(ps, &p, false, pg->lim.help_bytes, "the HELP text");
        if (rc < 0)
            return rc;
        fam->help = text;
        return 0;
    }
    /* TYPE: one word and nothing after it. */
    p = (char *)skip_blank(p);
    char *w = p;
    while (*p && !is_blank(*p))
        p++;
    char end = *p;
    *p = '\0';
    enum lt_prom_type t;
    if (type_of(w, &t) < 0)
        return fail(ps, LT_EFORMAT, "# TYPE %s has the unknown type '%.40s'", name, w);
    if (end && *skip_blank(p + 1))
        return fail(ps, LT_EFORMAT, "# TYPE %s has text after its type", name);
    if (fam->declared || fam->nsamples)
        return fail(ps, LT_EFORMAT, "%s",
                    fam->nsamples ? "a TYPE line comes after the samples of its metric"
                                  : "a second TYPE line for one metric");
    fam->type = t;
    fam->declared = true;
    return 0;
}

/* The family of sample `name` (n bytes) and its role there. */
static int classify(struct pstate *ps, char *name, size_t n, size_t *fam_out,
                    enum lt_prom_role *role)
{
    struct lt_prom_page *pg = ps->pg;
    static const struct {
        const char *suffix;
        enum lt_prom_role role;
    } sfx[] = {{"_bucket", LT_PROM_BUCKET}, {"_sum", LT_PROM_SUM}, {"_count", LT_PROM_COUNT}};
    for (size_t i = 0; i < 3; i++) {
        size_t sl = strlen(sfx[i].suffix);
        if (n <= sl || memcmp(name + n - sl, sfx[i].suffix, sl) != 0)
            continue;
        long f = find_family(pg, name, n - sl);
        if (f < 0)
            continue;
        enum lt_prom_type t = pg->families[f].type;
        if (t == LT_PROM_HISTOGRAM || (t == LT_PROM_SUMMARY && sfx[i].role != LT_PROM_BUCKET)) {
            *fam_out = (size_t)f;
            *role = sfx[i].role;
            return 0;
        }
    }
    long f = find_family(pg, name, n);
    if (f >= 0) {
        enum lt_prom_type t = pg->families[f].type;
        if (t == LT_PROM_HISTOGRAM)
            return fail(ps, LT_EFORMAT,
                        "%s is a histogram: its samples are %s_bucket, %s_sum and %s_count", name,
                        name, name, name);
        *fam_out = (size_t)f;
        *role = t == LT_PROM_SUMMARY ? LT_PROM_QUANTILE : LT_PROM_VALUE;
        return 0;
    }
    *role = LT_PROM_VALUE;
    return add_family(ps, name, fam_out);
}

/* `{name="value",...}`; p is after the '{'. Labels go to the page's array. */
static int parse_labels(struct pstate *ps, char **pp, size_t *nl)
{
    struct lt_prom_page *pg = ps->pg;
    char *p = *pp;
    size_t first = pg->nlabels;
    *nl = 0;
    for (;;) {
        p = (char *)skip_blank(p);
        if (*p == '}') {
            p++;
            break;
        }
        size_t n = name_len(p, false);
        if (!n)
            return fail(ps, LT_EFORMAT, "%s",
                        *p ? "a label name or '}' was expected in the label set"
                           : "the label set has no closing '}'");
        if (n > pg->lim.name_bytes)
            return fail(ps, LT_ELIMIT, "a label name is longer than %zu bytes", pg->lim.name_bytes);
        char *lname = p;
        p += n;
        char *eq = (char *)skip_blank(p);
        if (*eq != '=')
            return fail(ps, LT_EFORMAT, "label %.*s is not followed by '='", (int)n, lname);
        *p = '\0'; /* ends the name (p is a blank or the '=') */
        p = (char *)skip_blank(eq + 1);
        if (*p != '"')
            return fail(ps, LT_EFORMAT, "the value of label %s does not start with '\"'", lname);
        p++;
        char *value = p;
        char what[LT_PROM_NAME_MAX + 32];
        snprintf(what, sizeof what, "the value of label %s", lname);
        int rc = unescape(ps, &p, true, pg->lim.value_bytes, what);
        if (rc < 0)
            return rc;
        for (size_t i = first; i < pg->nlabels; i++)
            if (strcmp(pg->labels[i].name, lname) == 0)
                return fail(ps, LT_EFORMAT, "label %s appears twice in one label set", lname);
        if (*nl >= pg->lim.labels_per_sample)
            return fail(ps, LT_ELIMIT, "a sample has more than %zu labels",
                        pg->lim.labels_per_sample);
        rc = grow((void **)&pg->labels, &pg->cap_labels, pg->nlabels, sizeof *pg->labels,
                  pg->lim.labels);
        if (rc == LT_ELIMIT)
            return fail(ps, rc, "more than %zu labels on one page", pg->lim.labels);
        if (rc < 0)
            return fail(ps, rc, "out of memory for the labels");
        pg->labels[pg->nlabels++] = (struct lt_prom_label){lname, value};
        (*nl)++;
        p = (char *)skip_blank(p);
        if (*p == ',') {
            p++;
        } else if (*p != '}') {
            return fail(ps, LT_EFORMAT, "%s",
                        *p ? "labels must be separated by ','"
                           : "the label set has no closing '}'");
        }
    }
    *pp = p;
    return 0;
}

static int parse_sample(struct pstate *ps, char *p)
{
    struct lt_prom_page *pg = ps->pg;
    size_t n = name_len(p, true);
    if (!n) {
        if (*p == '<')
            return fail(ps, LT_EFORMAT,
                        "this is HTML, not the Prometheus text format (a line starts with '<')");
        return fail(ps, LT_EFORMAT, "a line must be a sample (a metric name first) or a comment");
    }
    if (n > pg->lim.name_bytes)
        return fail(ps, LT_ELIMIT, "a metric name is longer than %zu bytes", pg->lim.name_bytes);
    char *name = p;
    p += n;
    size_t label0 = pg->nlabels, nl = 0;
    if (*p && *p != '{' && !is_blank(*p))
        return fail(ps, LT_EFORMAT, "a metric name must be followed by '{' or a blank");
    char *brace = (char *)skip_blank(p); /* "name {" is allowed too */
    bool labels = *brace == '{';
    *p = '\0';
    p = brace;
    if (labels) {
        p++;
        int rc = parse_labels(ps, &p, &nl);
        if (rc < 0)
            return rc;
        if (*p && !is_blank(*p))
            return fail(ps, LT_EFORMAT, "the label set of %s must be followed by a blank", name);
    }
    p = (char *)skip_blank(p);
    char *val = p;
    while (*p && !is_blank(*p))
        p++;
    char *ts = NULL;
    if (*p) {
        *p++ = '\0';
        p = (char *)skip_blank(p);
        if (*p) {
            ts = p;
            while (*p && !is_blank(*p))
                p++;
            if (*p) {
                *p++ = '\0';
                if (*skip_blank(p))
                    return fail(ps, LT_EFORMAT, "text after the timestamp of %s", name);
            }
        }
    }
    struct lt_prom_sample s = {.name = name, .nlabels = nl, .line = ps->line};
    if (!*val)
        return fail(ps, LT_EFORMAT, "the sample %s has no value", name);
    if (!parse_float(val, &s.value))
        return fail(ps, LT_EFORMAT, "the value of %s is not a number: '%.40s'", name, val);
    if (ts) {
        if (!parse_i64(ts, &s.ts_ms))
            return fail(ps, LT_EFORMAT,
                        "the timestamp of %s is not an integer of milliseconds: '%.40s'", name, ts);
        s.has_ts = true;
    }
    int rc = classify(ps, name, n, &s.family, &s.role);
    if (rc < 0)
        return rc;
    const char *bl = s.role == LT_PROM_BUCKET ? "le" : s.role == LT_PROM_QUANTILE ? "quantile" : 0;
    if (bl) {
        const char *b = NULL;
        for (size_t i = label0; i < label0 + nl; i++)
            if (strcmp(pg->labels[i].name, bl) == 0)
                b = pg->labels[i].value;
        if (!b)
            return fail(ps, LT_EFORMAT, "%s has no %s label", name, bl);
        if (!parse_float(b, &s.bound) || isnan(s.bound))
            return fail(ps, LT_EFORMAT, "the %s label of %s is not a number: '%.40s'", bl, name, b);
    }
    rc = grow((void **)&pg->samples, &pg->cap_samples, pg->nsamples, sizeof *pg->samples,
              pg->lim.samples);
    if (rc == LT_ELIMIT)
        return fail(ps, rc, "more than %zu samples on one page", pg->lim.samples);
    if (rc < 0)
        return fail(ps, rc, "out of memory for the samples");
    /* labels become a pointer once the label array stops moving */
    s.label0 = label0;
    pg->samples[pg->nsamples++] = s;
    pg->families[s.family].nsamples++;
    return 0;
}

static int parse_line(struct pstate *ps, char *p)
{
    p = (char *)skip_blank(p);
    if (!*p)
        return 0;
    if (*p != '#')
        return parse_sample(ps, p);
    p = (char *)skip_blank(p + 1);
    if (strncmp(p, "HELP", 4) == 0 && (is_blank(p[4]) || !p[4]))
        return parse_meta(ps, p + 4, true);
    if (strncmp(p, "TYPE", 4) == 0 && (is_blank(p[4]) || !p[4]))
        return parse_meta(ps, p + 4, false);
    return 0; /* any other comment */
}

/* A series (name and label set, in any order) is unique on a page, as
 * Prometheus requires: a repeated one would be counted twice when series
 * are summed. Checked once the page is read, with a temporary table twice
 * the size of the samples (so bounded by the samples limit). */
static uint64_t series_hash(const struct lt_prom_sample *s)
{
    uint64_t h = hash_name(s->name, strlen(s->name)), lh = 0;
    for (size_t i = 0; i < s->nlabels; i++) {
        const struct lt_prom_label *l = &s->labels[i];
        /* summed, so that the order of the labels does not matter */
        lh += hash_name(l->name, strlen(l->name)) * 31 + hash_name(l->value, strlen(l->value));
    }
    return h ^ (lh * 1099511628211ull);
}

static bool same_series(const struct lt_prom_sample *a, const struct lt_prom_sample *b)
{
    if (a->nlabels != b->nlabels || strcmp(a->name, b->name) != 0)
        return false;
    for (size_t i = 0; i < a->nlabels; i++) {
        const char *v = lt_prom_sample_label(b, a->labels[i].name);
        if (!v || strcmp(v, a->labels[i].value) != 0)
            return false;
    }
    return true;
}

static int check_unique(struct pstate *ps)
{
    struct lt_prom_page *pg = ps->pg;
    if (pg->nsamples < 2)
        return 0;
    size_t cap = 16;
    while (cap < 2 * pg->nsamples)
        cap *= 2;
    uint32_t *set = calloc(cap, sizeof *set);
    if (!set)
        return fail(ps, LT_ENOMEM, "out of memory for the series index");
    int rc = 0;
    for (size_t k = 0; k < pg->nsamples && rc == 0; k++) {
        const struct lt_prom_sample *s = &pg->samples[k];
        size_t i = series_hash(s) & (cap - 1);
        for (; set[i]; i = (i + 1) & (cap - 1)) {
            const struct lt_prom_sample *o = &pg->samples[set[i] - 1];
            if (same_series(s, o)) {
                ps->line = s->line;
                rc = fail(ps, LT_EFORMAT, "%s repeats the series of line %u (same name and labels)",
                          s->name, (unsigned)o->line);
                break;
            }
        }
        set[i] = (uint32_t)(k + 1);
    }
    free(set);
    return rc;
}

int lt_prom_parse(struct lt_prom_page *pg, const void *data, size_t len, const char *name,
                  struct lt_err *err)
{
    struct pstate ps = {pg, name ? name : "metrics", 0, err};
    int rc = 0;
    page_clear(pg);
    if (len > pg->lim.page_bytes) {
        ps.line = 1;
        return fail(&ps, LT_ELIMIT, "the page is larger than %zu bytes", pg->lim.page_bytes);
    }
    const char *nul = memchr(data, '\0', len);
    if (nul) {
        ps.line = 1;
        for (const char *q = data; q < nul; q++)
            ps.line += *q == '\n';
        return fail(&ps, LT_EFORMAT, "a NUL byte, which text never has");
    }
    char *t = realloc(pg->text, len + 1);
    if (!t)
        return lt_errset(err, LT_ENOMEM, "%s: out of memory for a page of %zu bytes", ps.name, len);
    pg->text = t;
    memcpy(t, data, len);
    t[len] = '\0';
    size_t pos = 0;
    while (pos < len) {
        ps.line++;
        char *lf = memchr(t + pos, '\n', len - pos);
        if (!lf) {
            rc = fail(&ps, LT_ETRUNC, "the page ends inside this line (no final newline)");
            goto out;
        }
        size_t end = (size_t)(lf - t);
        if (end > pos && t[end - 1] == '\r')
            t[end - 1] = '\0';
        t[end] = '\0';
        LT_TRY(parse_line(&ps, t + pos));
        pos = end + 1;
    }
    for (size_t i = 0; i < pg->nsamples; i++)
        pg->samples[i].labels = pg->labels ? pg->labels + pg->samples[i].label0 : NULL;
    LT_TRY(check_unique(&ps));
out:
    if (rc < 0)
        page_clear(pg);
    return rc;
}

const struct lt_prom_family *lt_prom_page_family(const struct lt_prom_page *pg, const char *name)
{
    long f = find_family(pg, name, strlen(name));
    return f < 0 ? NULL : &pg->families[f];
}

const char *lt_prom_sample_label(const struct lt_prom_sample *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (strcmp(s->labels[i].name, name) == 0)
            return s->labels[i].value;
    return NULL;
}

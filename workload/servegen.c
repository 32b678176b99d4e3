/*
 * synth --servegen: a trace drawn from a ServeGen workload folder (see
 * servegen.h for the layout and docs/synth.md for what is drawn how).
 *
 * Everything of the folder is read first (a release's model folder is a
 * few MB); the arrivals of the slice are then drawn client by client,
 * sorted, and written with lengths drawn as they go out.
 */
#include "workload/servegen.h"
#include "base/lt_buf.h"
#include "base/lt_rng.h"
#include "traces/lt_mp.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOWS_MAX 100000 /* rows of one trace.csv */

/* One 600 s window of a client's arrivals. */
struct sg_win {
    int64_t start;
    double rate, cv;
    char family; /* 'G' gamma, 'W' weibull, 'E' exponential (none given) */
    double shape;
};

/* A discrete distribution: values and their cumulative probabilities. */
struct sg_pmf {
    double *v, *cdf;
    size_t n;
};

enum { F_IN, F_OUT, F_RATIO, F_N };
static const char *const field_names[F_N] = {"input_tokens", "output_tokens", "reason_ratio"};

/* The distributions of one dataset window. */
struct sg_dwin {
    int64_t start;
    struct sg_pmf f[F_N];
};

struct sg_client {
    int index; /* N of chunk-N */
    struct sg_win *w;
    size_t nw;
    struct sg_dwin *d;
    size_t nd;
};

struct sg_arrival {
    double t; /* s of the day */
    uint32_t client;
};

static void pmf_free(struct sg_pmf *p)
{
    free(p->v);
    free(p->cdf);
}

static void clients_free(struct sg_client *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < c[i].nd; j++)
            for (int f = 0; f < F_N; f++)
                pmf_free(&c[i].d[j].f[f]);
        free(c[i].d);
        free(c[i].w);
    }
    free(c);
}

/* "{45: 0.0096, 46: 0.0117, ...}" (a Python dict's text) into p. */
static int parse_pmf(const char *s, struct sg_pmf *p, const char *what, struct lt_err *err)
{
    size_t cap = 0;
    double sum = 0;
    const char *q = strchr(s, '{');
    if (!q)
        return lt_errset(err, LT_EINVAL, "%s: not a {value: probability} map", what);
    q++;
    for (;;) {
        while (*q == ' ' || *q == ',' || *q == '\n')
            q++;
        if (*q == '}' || !*q)
            break;
        char *e;
        double v = strtod(q, &e);
        if (e == q || *e != ':')
            return lt_errset(err, LT_EINVAL, "%s: not a {value: probability} map near \"%.20s\"",
                             what, q);
        q = e + 1;
        double pr = strtod(q, &e);
        if (e == q || !(pr >= 0) || !isfinite(v))
            return lt_errset(err, LT_EINVAL, "%s: a bad probability near \"%.20s\"", what, q);
        q = e;
        if (p->n == cap) {
            cap = cap ? cap * 2 : 64;
            double *nv = realloc(p->v, cap * sizeof *nv);
            if (nv)
                p->v = nv;
            double *nc = nv ? realloc(p->cdf, cap * sizeof *nc) : NULL;
            if (!nc)
                return lt_errset(err, LT_ENOMEM, "out of memory");
            p->cdf = nc;
        }
        sum += pr;
        p->v[p->n] = v;
        p->cdf[p->n++] = sum;
    }
    if (p->n && !(sum > 0))
        return lt_errset(err, LT_EINVAL, "%s: the probabilities add up to 0", what);
    for (size_t i = 0; i < p->n; i++)
        p->cdf[i] /= sum;
    return 0;
}

static double pmf_draw(const struct sg_pmf *p, struct lt_rng *rng)
{
    double u = lt_rng_uniform(rng);
    size_t lo = 0, hi = p->n - 1;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->cdf[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return p->v[lo];
}

static int by_dstart(const void *a, const void *b)
{
    const struct sg_dwin *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

static int read_dataset(const char *path, struct sg_client *c, struct lt_err *err)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    int rc = 0;
    if (!root || !json_is_object(root)) {
        rc = lt_errset(err, LT_EINVAL, "%s: not a JSON object (%s, line %d)", path,
                       root ? "another value" : je.text, root ? 0 : je.line);
        goto out;
    }
    c->d = calloc(json_object_size(root) + 1, sizeof *c->d);
    if (!c->d) {
        rc = lt_errset(err, LT_ENOMEM, "out of memory");
        goto out;
    }
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v)
    {
        struct sg_dwin *d = &c->d[c->nd++];
        char *e;
        d->start = strtoll(k, &e, 10);
        if (*e || !json_is_object(v)) {
            rc = lt_errset(err, LT_EINVAL, "%s: key \"%s\" is not a window start in seconds", path,
                           k);
            goto out;
        }
        for (int f = 0; f < F_N; f++) {
            json_t *s = json_object_get(v, field_names[f]);
            char what[600];
            snprintf(what, sizeof what, "%.400s: window %.40s: %s", path, k, field_names[f]);
            if (s && json_is_string(s) &&
                (rc = parse_pmf(json_string_value(s), &d->f[f], what, err)) < 0)
                goto out;
        }
    }
    qsort(c->d, c->nd, sizeof *c->d, by_dstart);
out:
    json_decref(root);
    return rc;
}

static int read_trace(const char *path, struct sg_client *c, struct lt_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return lt_errset(err, LT_EIO, "%s: cannot open: %s", path, strerror(errno));
    char line[512];
    size_t cap = 0, lineno = 0;
    int rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '\n' || line[0] == '\r' || !line[0])
            continue;
        char fam[32] = "";
        long long start;
        double rate, cv, p1 = 0, p2 = 0;
        /* start,rate,cv,family,shape,scale (family may be empty) */
        char *fields[6];
        int nf = 0;
        for (char *p = line; nf < 6;) {
            fields[nf++] = p;
            char *comma = strchr(p, ',');
            if (!comma)
                break;
            *comma = '\0';
            p = comma + 1;
        }
        if (nf < 6 || sscanf(fields[0], "%lld", &start) != 1 ||
            sscanf(fields[1], "%lf", &rate) != 1 || sscanf(fields[2], "%lf", &cv) != 1 ||
            !(rate >= 0) || !isfinite(rate)) {
            rc = lt_errset(err, LT_EINVAL,
                           "%s:%zu: not a ServeGen trace row (start,rate,cv,family,shape,scale)",
                           path, lineno);
            goto out;
        }
        sscanf(fields[3], "%31s", fam);
        sscanf(fields[4], "%lf", &p1);
        sscanf(fields[5], "%lf", &p2);
        if (c->nw == cap) {
            cap = cap ? cap * 2 : 256;
            struct sg_win *nw = cap <= WINDOWS_MAX ? realloc(c->w, cap * sizeof *nw) : NULL;
            if (!nw) {
                rc = lt_errset(err, LT_ENOMEM, "%s: too many rows", path);
                goto out;
            }
            c->w = nw;
        }
        struct sg_win *w = &c->w[c->nw++];
        *w = (struct sg_win){.start = start, .rate = rate, .cv = cv, .shape = p1};
        w->family = !strcmp(fam, "Gamma") && p1 > 0     ? 'G'
                    : !strcmp(fam, "Weibull") && p1 > 0 ? 'W'
                                                        : 'E';
        if (c->nw > 1 && w->start <= w[-1].start) {
            rc = lt_errset(err, LT_EINVAL, "%s:%zu: windows out of order", path, lineno);
            goto out;
        }
    }
out:
    fclose(f);
    return rc;
}

static int by_client(const void *a, const void *b)
{
    const struct sg_client *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

static int read_folder(const char *dir, struct sg_client **out, size_t *n, struct lt_err *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return lt_errset(err, LT_EINVAL, "%s: cannot open the ServeGen folder: %s", dir,
                         strerror(errno));
    struct sg_client *c = NULL;
    size_t nc = 0, cap = 0;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int idx, used = 0;
        if (sscanf(e->d_name, "chunk-%d-trace.csv%n", &idx, &used) != 1 ||
            used != (int)strlen(e->d_name))
            continue;
        if (nc == cap) {
            cap = cap ? cap * 2 : 64;
            struct sg_client *ncl = realloc(c, cap * sizeof *ncl);
            if (!ncl) {
                rc = lt_errset(err, LT_ENOMEM, "out of memory");
                goto out;
            }
            c = ncl;
        }
        c[nc] = (struct sg_client){.index = idx};
        nc++;
        char path[4096];
        snprintf(path, sizeof path, "%s/chunk-%d-trace.csv", dir, idx);
        if ((rc = read_trace(path, &c[nc - 1], err)) < 0)
            goto out;
        snprintf(path, sizeof path, "%s/chunk-%d-dataset.json", dir, idx);
        if ((rc = read_dataset(path, &c[nc - 1], err)) < 0)
            goto out;
    }
    if (!nc)
        rc = lt_errset(err, LT_EINVAL,
                       "%s: no chunk-N-trace.csv here (give a model folder of a ServeGen "
                       "release, e.g. data/reason/deepseek-r1)",
                       dir);
    else
        qsort(c, nc, sizeof *c, by_client);
out:
    closedir(d);
    if (rc < 0) {
        clients_free(c, nc);
        c = NULL;
        nc = 0;
    }
    *out = c;
    *n = nc;
    return rc;
}

/* The end of window i of a client: the next one's start, or 600 s on. */
static int64_t win_end(const struct sg_client *c, size_t i)
{
    return i + 1 < c->nw ? c->w[i + 1].start : c->w[i].start + 600;
}

static double overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
    int64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
    return hi > lo ? (double)(hi - lo) : 0;
}

/* A gap with mean 1/rate, of the window's family and shape. */
static double draw_gap(const struct sg_win *w, double rate, struct lt_rng *rng)
{
    switch (w->family) {
    case 'G':
        return lt_rng_gamma(rng, w->shape, 1.0 / (rate * w->shape));
    case 'W': {
        double scale = 1.0 / (rate * tgamma(1.0 + 1.0 / w->shape));
        double u = lt_rng_uniform(rng);
        return scale * pow(-log(1.0 - u), 1.0 / w->shape);
    }
    default:
        return lt_rng_exp(rng, 1.0 / rate);
    }
}

static int by_time(const void *a, const void *b)
{
    const struct sg_arrival *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->client > y->client) - (x->client < y->client);
}

/* The distribution of field f for time t: the latest dataset window at or
 * before t that has one, else the first that has one after. */
static const struct sg_pmf *pmf_at(const struct sg_client *c, int f, int64_t t)
{
    const struct sg_pmf *best = NULL;
    for (size_t i = 0; i < c->nd; i++) {
        if (!c->d[i].f[f].n)
            continue;
        if (c->d[i].start <= t || !best)
            best = &c->d[i].f[f];
        if (c->d[i].start > t)
            break;
    }
    return best;
}

int lt_servegen_run(const struct lt_servegen_opts *o, const char *out_path,
                    struct lt_servegen_stats *st, struct lt_err *err)
{
    int rc = 0;
    struct lt_servegen_stats dummy;
    struct sg_client *c = NULL;
    size_t nc = 0, na = 0, acap = 0;
    struct sg_arrival *arr = NULL;
    struct lt_writer *w = NULL;
    struct lt_buf meta, extra;
    lt_buf_init(&meta, 1 << 20);
    lt_buf_init(&extra, 1 << 16);
    if (!st)
        st = &dummy;
    memset(st, 0, sizeof *st);
    LT_TRY(read_folder(o->dir, &c, &nc, err));
    st->clients = (uint32_t)nc;

    int64_t dur = o->duration_s > 0 ? o->duration_s : 600, start = o->start_s;
    if (start < 0) { /* the first window with traffic */
        start = INT64_MAX;
        for (size_t i = 0; i < nc; i++)
            for (size_t j = 0; j < c[i].nw; j++)
                if (c[i].w[j].rate > 0 && c[i].w[j].start < start) {
                    start = c[i].w[j].start;
                    break;
                }
        if (start == INT64_MAX) {
            rc = lt_errset(err, LT_EINVAL, "%s: no window has any traffic", o->dir);
            goto out;
        }
    }
    int64_t end = start + dur;
    double expected = 0;
    for (size_t i = 0; i < nc; i++) {
        bool active = false;
        for (size_t j = 0; j < c[i].nw; j++) {
            double ov = overlap(c[i].w[j].start, win_end(&c[i], j), start, end);
            expected += c[i].w[j].rate * ov;
            active |= ov > 0 && c[i].w[j].rate > 0;
        }
        st->active += active;
    }
    st->start_s = start;
    st->duration_s = dur;
    st->recorded_rate = expected / (double)dur;
    if (!(st->recorded_rate > 0)) {
        rc = lt_errset(err, LT_EINVAL,
                       "%s: no traffic from %lld s to %lld s (choose another --window)", o->dir,
                       (long long)start, (long long)end);
        goto out;
    }
    st->scale = o->rate > 0 ? o->rate / st->recorded_rate : 1.0;

    struct lt_rng rng;
    lt_rng_seed(&rng, o->seed);
    for (size_t i = 0; i < nc; i++)
        for (size_t j = 0; j < c[i].nw; j++) {
            const struct sg_win *win = &c[i].w[j];
            double rate = win->rate * st->scale;
            int64_t w0 = win->start > start ? win->start : start;
            int64_t w1 = win_end(&c[i], j) < end ? win_end(&c[i], j) : end;
            if (!(rate > 0) || w1 <= w0)
                continue;
            /* a renewal process in the window, entered at a random point
             * of a gap (the first gap is a uniform share of one) */
            double t = (double)w0 + draw_gap(win, rate, &rng) * lt_rng_uniform(&rng);
            for (; t < (double)w1; t += draw_gap(win, rate, &rng)) {
                if (na == acap) {
                    acap = acap ? acap * 2 : 4096;
                    struct sg_arrival *n2 = realloc(arr, acap * sizeof *n2);
                    if (!n2) {
                        rc = lt_errset(err, LT_ENOMEM, "out of memory for the arrivals");
                        goto out;
                    }
                    arr = n2;
                }
                arr[na++] = (struct sg_arrival){t, (uint32_t)i};
            }
        }
    if (na)
        qsort(arr, na, sizeof *arr, by_time);

    char s_start[32], s_dur[32], s_rate[32], s_seed[32], s_scale[32];
    snprintf(s_start, sizeof s_start, "%lld", (long long)start);
    snprintf(s_dur, sizeof s_dur, "%lld", (long long)dur);
    snprintf(s_rate, sizeof s_rate, "%.6g", st->recorded_rate * st->scale);
    snprintf(s_scale, sizeof s_scale, "%.6g", st->scale);
    snprintf(s_seed, sizeof s_seed, "%llu", (unsigned long long)o->seed);
    const char *dn = strrchr(o->dir, '/');
    dn = dn && dn[1] ? dn + 1 : o->dir;
    const char *keys[] = {"servegen", "window", "duration", "rate", "scale", "seed", "command"};
    const char *vals[] = {
        dn, s_start, s_dur, s_rate, s_scale, s_seed, o->command ? o->command : ""};
    LT_TRY(lt_meta_pack(&meta, keys, vals, 7));
    /* the slice again, as integers a reader finds (lt_servegen_reference) */
    struct lt_mp hx = {&extra, 0};
    lt_mp_cstr(&hx, "servegen_window");
    lt_mp_int(&hx, start);
    lt_mp_cstr(&hx, "servegen_duration");
    lt_mp_int(&hx, dur);
    lt_mp_cstr(&hx, "servegen_rate_ureq");
    lt_mp_int(&hx, llround(st->recorded_rate * st->scale * 1e6));
    if (hx.rc < 0) {
        rc = lt_errset(err, hx.rc, "out of memory");
        goto out;
    }
    struct lt_header h = {.kind = LT_KIND_TRACE,
                          .created = o->created ? o->created : "1970-01-01T00:00:00Z",
                          .source = "synth:servegen",
                          .meta = (const uint8_t *)meta.p,
                          .meta_len = meta.len,
                          .extra = {(const uint8_t *)extra.p, extra.len, 3}};
    struct lt_writer_opts wo = {.frame_ms = INT64_C(1000000000)};
    if (!(w = lt_writer_open(out_path, &h, &wo, err))) {
        rc = err->code ? err->code : LT_EIO;
        goto out;
    }
    for (size_t k = 0; k < na; k++) {
        const struct sg_client *cl = &c[arr[k].client];
        int64_t at = (int64_t)floor(arr[k].t);
        struct lt_record r = {.t = llround((arr[k].t - (double)start) * 1e6)};
        const struct sg_pmf *pin = pmf_at(cl, F_IN, at), *pout = pmf_at(cl, F_OUT, at),
                            *pra = pmf_at(cl, F_RATIO, at);
        if (pin) {
            r.in = (uint32_t)fmin(fmax(pmf_draw(pin, &rng), 0), UINT32_MAX);
            r.has |= LT_HAS_IN;
        }
        if (pout) {
            r.out = (uint32_t)fmin(fmax(pmf_draw(pout, &rng), 0), UINT32_MAX);
            r.has |= LT_HAS_OUT;
            if (pra) {
                double ratio = fmin(fmax(pmf_draw(pra, &rng), 0), 1);
                r.reasoning = (uint32_t)llround(r.out * ratio);
                r.has |= LT_HAS_REASONING;
            }
        }
        /* which client it came from: ServeGen's unit of behaviour */
        lt_buf_reset(&extra);
        struct lt_mp mp = {&extra, 0};
        lt_mp_cstr(&mp, "client");
        lt_mp_int(&mp, cl->index);
        if (mp.rc < 0) {
            rc = lt_errset(err, mp.rc, "out of memory");
            goto out;
        }
        r.extra = (struct lt_extra){(const uint8_t *)extra.p, extra.len, 1};
        LT_TRY(lt_writer_put_record(w, &r, err));
        st->records++;
    }
out:
    if (w) {
        int crc = lt_writer_close(w, rc < 0 ? NULL : err);
        if (rc == 0)
            rc = crc;
    }
    free(arr);
    clients_free(c, nc);
    lt_buf_release(&meta);
    lt_buf_release(&extra);
    return rc;
}

int lt_servegen_reference(const char *dir, const char *trace, const char *out_path, uint64_t seed,
                          struct lt_err *err)
{
    struct lt_reader *r = lt_reader_open_kind(trace, LT_KIND_TRACE, NULL, err);
    if (!r)
        return err->code ? err->code : LT_EIO;
    const struct lt_header *h = lt_reader_header(r);
    int64_t win, dur, rate;
    bool ok = h->source && !strcmp(h->source, "synth:servegen") &&
              lt_extra_get_int(&h->extra, "servegen_window", &win) &&
              lt_extra_get_int(&h->extra, "servegen_duration", &dur) &&
              lt_extra_get_int(&h->extra, "servegen_rate_ureq", &rate);
    lt_reader_free(r);
    if (!ok)
        return lt_errset(err, LT_EINVAL,
                         "%s: not made by synth --servegen (its header does not say which "
                         "slice of the folder it is)",
                         trace);
    struct lt_servegen_opts o = {
        .dir = dir, .start_s = win, .duration_s = dur, .rate = (double)rate / 1e6, .seed = seed};
    return lt_servegen_run(&o, out_path, NULL, err);
}

/*
 * synth --servegen: a trace drawn from a ServeGen workload folder (see
 * servegen.h for the layout and docs/synth.md for what is drawn how).
 *
 * Everything of the folder is read first (a release's model folder is a
 * few MB); the arrivals of the slice are then drawn client by client,
 * sorted, and written with lengths drawn as they go out.
 */
#include "workload/servegen.h"

#include "workload/media_mix.h"
#include "workload/trace_synth.h"
#include "base/lt_buf.h"
#include "base/lt_heap.h"
#include "base/lt_rng.h"
#include "traces/lt_mp.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WINDOWS_MAX 100000  /* rows of one trace.csv */
#define CLIENTS_MAX 100000  /* chunks of one folder */
#define CHUNK_MAX 999999999 /* the N of chunk-N */
/* A release's model folder is a few MB; a file of one chunk larger than
 * this is not one (its JSON tree would take several times its size). */
#define FILE_MAX ((size_t)64 << 20)
#define FOLDER_MAX ((size_t)1 << 30) /* bytes of all chunk files together */
#define LEN_MAX 16777216.0           /* tokens of one prompt or answer */
#define START_MAX 1e10               /* s: a window start (ServeGen's are s of the day) */
/* Gap shapes that draw usable gaps: Gamma CV from 100 down to 0.001, a
 * Weibull's in about the same span. */
#define GAMMA_SHAPE_MIN 1e-4
#define WEIBULL_SHAPE_MIN 0.1
#define SHAPE_MAX 1e6
/* Arrivals in a row that do not move a client's time: its gaps are too
 * small for the time the slice is at. */
#define STALL_MAX 1000000

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

/* The multimodal folders (data/multimodal/mm-image) add the tokens of
 * each request's text, images, audio and video, and how many images, clips
 * and videos it carries. */
enum {
    F_IN,
    F_OUT,
    F_RATIO,
    F_TEXT,
    F_IMG_TOK,
    F_IMG_N,
    F_AUD_TOK,
    F_AUD_N,
    F_VID_TOK,
    F_VID_N,
    F_N
};
static const char *const field_names[F_N] = {
    "input_tokens", "output_tokens", "reason_ratio", "text_tokens",  "image_tokens",
    "image_count",  "audio_tokens",  "audio_count",  "video_tokens", "video_count"};

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
    /* the arrival process, window by window */
    size_t j;     /* the window it is in */
    bool entered; /* ... and has drawn its first arrival there */
    double t;     /* its last arrival, s of the day */
    uint32_t stuck;
};

/* A client's next arrival, in the heap that merges all clients. */
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

/* "{45: 0.0096, 46: 0.0117, ...}" (a Python dict's text) into p. Values of
 * field f must be lengths (whole numbers of tokens, 0 to LEN_MAX) or, for
 * reason_ratio, shares (0 to 1): anything else is refused, not clamped. */
static int parse_pmf(const char *s, int f, struct sg_pmf *p, const char *what, struct lt_err *err)
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
        if (f == F_RATIO ? !(v >= 0 && v <= 1) : !(v >= 0 && v <= LEN_MAX && v == floor(v)))
            return lt_errset(err, LT_EINVAL, "%s: the value %.*s is not %s", what,
                             (int)(e - q < 40 ? e - q : 40), q,
                             f == F_RATIO ? "a share from 0 to 1"
                                          : "a length (a whole number of tokens, 0 to 16777216)");
        q = e + 1;
        double pr = strtod(q, &e);
        if (e == q || !(pr >= 0) || !isfinite(pr))
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
    if (p->n && !(sum > 0 && isfinite(sum)))
        return lt_errset(err, LT_EINVAL, "%s: the probabilities add up to %g", what, sum);
    for (size_t i = 0; i < p->n; i++)
        p->cdf[i] /= sum;
    return 0;
}

/* Open path for reading if it is a regular file of at most FILE_MAX bytes
 * (a FIFO or a device would block or never end): *f and its size, or
 * LT_EINVAL/LT_EIO naming the file. */
static int open_regular(const char *path, FILE **f, size_t *size, struct lt_err *err)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return lt_errset(err, LT_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0)
        rc = lt_errset(err, LT_EIO, "%s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = lt_errset(err, LT_EINVAL, "%s: not a regular file", path);
    else if ((uintmax_t)st.st_size > FILE_MAX)
        rc = lt_errset(err, LT_EINVAL,
                       "%s: %jd bytes, more than the %zu MiB a ServeGen chunk file may have", path,
                       (intmax_t)st.st_size, FILE_MAX >> 20);
    else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0 || !(*f = fdopen(fd, "r")))
        rc = lt_errset(err, LT_EIO, "%s: %s", path, strerror(errno));
    if (rc < 0) {
        close(fd);
        return rc;
    }
    *size = (size_t)st.st_size;
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

static int read_dataset(const char *path, struct sg_client *c, size_t *budget, struct lt_err *err)
{
    json_error_t je;
    json_t *root = NULL;
    FILE *fp;
    size_t size;
    int rc = open_regular(path, &fp, &size, err);
    if (rc < 0)
        return rc;
    if (size > *budget) {
        fclose(fp);
        return lt_errset(err, LT_EINVAL,
                         "%s: the folder's chunk files pass %zu MiB together, more than a "
                         "ServeGen folder has",
                         path, FOLDER_MAX >> 20);
    }
    *budget -= size;
    /* at most the size fstat gave: a file that grows meanwhile is cut */
    char *text = malloc(size + 1);
    size_t got = text ? fread(text, 1, size, fp) : 0;
    bool bad = text && ferror(fp);
    fclose(fp);
    if (!text)
        return lt_errset(err, LT_ENOMEM, "%s: out of memory", path);
    if (bad) {
        free(text);
        return lt_errset(err, LT_EIO, "%s: cannot read", path);
    }
    root = json_loadb(text, got, 0, &je);
    free(text);
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
        errno = 0;
        d->start = strtoll(k, &e, 10);
        if (*e || e == k || errno || d->start < 0 || (double)d->start > START_MAX ||
            !json_is_object(v)) {
            rc = lt_errset(err, LT_EINVAL, "%s: key \"%s\" is not a window start in seconds", path,
                           k);
            goto out;
        }
        for (int f = 0; f < F_N; f++) {
            json_t *s = json_object_get(v, field_names[f]);
            char what[600];
            snprintf(what, sizeof what, "%.400s: window %.40s: %s", path, k, field_names[f]);
            if (s && json_is_string(s) &&
                (rc = parse_pmf(json_string_value(s), f, &d->f[f], what, err)) < 0)
                goto out;
        }
    }
    qsort(c->d, c->nd, sizeof *c->d, by_dstart);
out:
    json_decref(root);
    return rc;
}

static int read_trace(const char *path, struct sg_client *c, size_t *budget, struct lt_err *err)
{
    FILE *f;
    size_t size;
    int rc = open_regular(path, &f, &size, err);
    if (rc < 0)
        return rc;
    if (size > *budget) {
        fclose(f);
        return lt_errset(err, LT_EINVAL,
                         "%s: the folder's chunk files pass %zu MiB together, more than a "
                         "ServeGen folder has",
                         path, FOLDER_MAX >> 20);
    }
    *budget -= size;
    char line[512];
    size_t cap = 0, lineno = 0;
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
        if (start < 0 || (double)start > START_MAX) {
            rc = lt_errset(err, LT_EINVAL, "%s:%zu: a window start of %lld s is out of range", path,
                           lineno, start);
            goto out;
        }
        if (rate > LT_SYNTH_RATE_MAX) {
            rc = lt_errset(err, LT_EINVAL,
                           "%s:%zu: a rate of %g req/s is more than a trace holds (%g req/s: its "
                           "clock counts microseconds)",
                           path, lineno, rate, LT_SYNTH_RATE_MAX);
            goto out;
        }
        sscanf(fields[3], "%31s", fam);
        sscanf(fields[4], "%lf", &p1);
        sscanf(fields[5], "%lf", &p2);
        char family = !fam[0]                   ? 'E'
                      : !strcmp(fam, "Gamma")   ? 'G'
                      : !strcmp(fam, "Weibull") ? 'W'
                                                : 0;
        if (!family) {
            rc = lt_errset(err, LT_EINVAL,
                           "%s:%zu: the family \"%s\" is not one ServeGen fits (Gamma, Weibull, "
                           "or empty for none)",
                           path, lineno, fam);
            goto out;
        }
        double lo = family == 'G' ? GAMMA_SHAPE_MIN : WEIBULL_SHAPE_MIN;
        if (family != 'E' && rate > 0 && !(p1 >= lo && p1 <= SHAPE_MAX)) {
            rc = lt_errset(err, LT_EINVAL,
                           "%s:%zu: a %s shape of %g draws no usable gaps (give %g to %g)", path,
                           lineno, fam, p1, lo, SHAPE_MAX);
            goto out;
        }
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
        *w = (struct sg_win){.start = start, .rate = rate, .cv = cv, .shape = p1, .family = family};
        if (c->nw > 1 && w->start <= w[-1].start) {
            rc = lt_errset(err, LT_EINVAL, "%s:%zu: windows out of order", path, lineno);
            goto out;
        }
    }
    if (ferror(f))
        rc = lt_errset(err, LT_EIO, "%s: cannot read", path);
out:
    fclose(f);
    return rc;
}

/* The N of a file named chunk-N-trace.csv: 1, 0 when the name is not one,
 * -1 when N is out of range (err says so). */
static int chunk_index(const char *dir, const char *name, int *idx, struct lt_err *err)
{
    static const char pre[] = "chunk-", post[] = "-trace.csv";
    size_t n = strlen(name), lp = sizeof pre - 1, ls = sizeof post - 1;
    if (n <= lp + ls || strncmp(name, pre, lp) || strcmp(name + n - ls, post))
        return 0;
    uint64_t v = 0;
    for (size_t i = lp; i < n - ls; i++) {
        if (name[i] < '0' || name[i] > '9')
            return 0;
        if (v <= CHUNK_MAX)
            v = v * 10 + (uint64_t)(name[i] - '0');
    }
    if (v > CHUNK_MAX) {
        lt_errset(err, LT_EINVAL, "%s/%s: the chunk number %.*s is out of range (0 to %d)", dir,
                  name, (int)(n - ls - lp < 40 ? n - ls - lp : 40), name + lp, CHUNK_MAX);
        return -1;
    }
    *idx = (int)v;
    return 1;
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
    size_t budget = FOLDER_MAX;
    while ((e = readdir(d))) {
        int idx = 0, k = chunk_index(dir, e->d_name, &idx, err);
        if (k < 0) {
            rc = err->code;
            goto out;
        }
        if (!k)
            continue;
        if (nc == CLIENTS_MAX) {
            rc = lt_errset(err, LT_EINVAL,
                           "%s: more than %d chunks, more than a ServeGen folder has", dir,
                           CLIENTS_MAX);
            goto out;
        }
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
        if ((rc = read_trace(path, &c[nc - 1], &budget, err)) < 0)
            goto out;
        snprintf(path, sizeof path, "%s/chunk-%d-dataset.json", dir, idx);
        if ((rc = read_dataset(path, &c[nc - 1], &budget, err)) < 0)
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

static bool arrival_before(const void *a, const void *b, void *ctx)
{
    const struct sg_arrival *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t;
    return x->client < y->client;
}

/* Client c's next arrival in [start, end), window by window: each window is
 * a renewal process of its own, entered at a random point of a gap (the
 * first gap is a uniform share of one). 1 with *t, 0 when the client has
 * no more in the slice, LT_EINVAL when its time stopped moving. */
static int client_next(struct sg_client *c, int64_t start, int64_t end, double scale,
                       struct lt_rng *rng, double *t, struct lt_err *err)
{
    for (; c->j < c->nw; c->j++, c->entered = false) {
        const struct sg_win *win = &c->w[c->j];
        if (win->start >= end)
            return 0;
        double rate = win->rate * scale;
        int64_t w0 = win->start > start ? win->start : start;
        int64_t w1 = win_end(c, c->j) < end ? win_end(c, c->j) : end;
        if (!(rate > 0) || w1 <= w0)
            continue;
        double next;
        if (!c->entered) {
            next = (double)w0 + draw_gap(win, rate, rng) * lt_rng_uniform(rng);
            c->entered = true;
            c->stuck = 0;
        } else {
            next = c->t + draw_gap(win, rate, rng);
            c->stuck = next > c->t ? 0 : c->stuck + 1;
            if (c->stuck > STALL_MAX || !(next >= c->t))
                return lt_errset(err, LT_EINVAL,
                                 "chunk-%d: the arrival time stopped moving at %.6f s (window %lld "
                                 "s, %g req/s): its gaps are too small to draw",
                                 c->index, c->t, (long long)win->start, rate);
        }
        if (next < (double)w1) {
            c->t = next;
            *t = next;
            return 1;
        }
    }
    return 0;
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

/* A count drawn from f (which the caller found at t). */
static uint32_t draw_count(const struct sg_client *c, int f, int64_t t, struct lt_rng *rng)
{
    double v = pmf_draw(pmf_at(c, f, t), rng);
    return v <= 0 ? 0 : v >= LT_MEDIA_MAX ? LT_MEDIA_MAX : (uint32_t)v;
}

/* One part's tokens drawn from p (0 without p). */
static uint32_t draw_tokens(const struct sg_pmf *p, struct lt_rng *rng)
{
    if (!p)
        return 0;
    double v = pmf_draw(p, rng);
    return v <= 0 ? 0 : v >= UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* The request's media parts from its client's multimodal distributions
 * at t (docs/synth.md "ServeGen's multimodal folders"), as ServeGen's own
 * generator draws them (servegen/construct.py): each kind's count, then
 * each part's tokens, one draw of the kind's tokens per part (its
 * distribution is of one image, clip or video, not of a request's sum).
 * Without a count distribution a request has one part when its one draw
 * is above 0. An image is given the size that carries its tokens
 * (media_mix.h), an audio clip a duration of 25 tokens a second, a video
 * the pairs of 448 x 448 frames (two a second) whose tokens by Qwen2-VL's
 * rule (2 + 256 a pair) are nearest its draw. Returns the parts' tokens. */
static uint64_t draw_media(const struct sg_client *c, int64_t t, struct lt_rng *rng,
                           struct lt_media *v, uint32_t *n)
{
    *n = 0;
    uint64_t total = 0;
    static const int tok_f[3] = {F_IMG_TOK, F_AUD_TOK, F_VID_TOK};
    static const int cnt_f[3] = {F_IMG_N, F_AUD_N, F_VID_N};
    for (int k = 0; k < 3; k++) {
        const struct sg_pmf *pt = pmf_at(c, tok_f[k], t);
        bool counted = pmf_at(c, cnt_f[k], t) != NULL;
        if (!pt && !counted)
            continue;
        uint32_t first = 0, cnt;
        if (counted) {
            cnt = draw_count(c, cnt_f[k], t, rng);
        } else {
            first = draw_tokens(pt, rng);
            cnt = first > 0;
        }
        if (cnt > LT_MEDIA_MAX - *n)
            cnt = LT_MEDIA_MAX - *n;
        for (uint32_t i = 0; i < cnt; i++) {
            uint32_t mine = !counted && i == 0 ? first : draw_tokens(pt, rng);
            struct lt_media *p = &v[(*n)++];
            memset(p, 0, sizeof *p);
            if (k == 0) {
                lt_media_mix_image_for(mine ? mine : 258, "jpeg", p);
            } else if (k == 1) {
                p->kind = LT_MEDIA_AUDIO;
                snprintf(p->fmt, sizeof p->fmt, "wav");
                p->tokens = mine;
                p->dur = (int64_t)(mine ? mine : 25) * 1000000 / 25;
            } else {
                /* Qwen2-VL's video rule (docs/sim.md "Video"): 2 + 256
                 * tokens per pair of 448 x 448 frames, two frames a second */
                p->kind = LT_MEDIA_VIDEO;
                snprintf(p->fmt, sizeof p->fmt, "mp4");
                uint32_t groups = mine > 130 ? (mine - 2 + 128) / 256 : 1;
                p->w = p->h = 448;
                p->frames = 2 * groups;
                p->dur = (int64_t)p->frames * 500000;
                p->tokens = 2 + 256 * groups;
            }
            total += p->tokens;
        }
    }
    return total;
}

int lt_servegen_run(const struct lt_servegen_opts *o, const char *out_path,
                    struct lt_servegen_stats *st, struct lt_err *err)
{
    int rc = 0;
    struct lt_servegen_stats dummy;
    struct sg_client *c = NULL;
    size_t nc = 0;
    struct lt_heap heap;
    lt_heap_init(&heap, sizeof(struct sg_arrival), arrival_before, NULL, NULL);
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

    for (size_t i = 0; i < nc; i++)
        for (size_t j = 0; j < c[i].nw; j++) {
            double ov = overlap(c[i].w[j].start, win_end(&c[i], j), start, end);
            if (ov > 0 && c[i].w[j].rate * st->scale > LT_SYNTH_RATE_MAX) {
                rc = lt_errset(err, LT_EINVAL,
                               "--rate %g scales chunk-%d's window at %lld s to %g req/s, more "
                               "than a trace holds (%g req/s: its clock counts microseconds)",
                               o->rate, c[i].index, (long long)c[i].w[j].start,
                               c[i].w[j].rate * st->scale, LT_SYNTH_RATE_MAX);
                goto out;
            }
        }

    /* every client's next arrival, merged in time order as they are
     * written: memory is one heap item a client, however long the slice */
    struct lt_rng rng;
    lt_rng_seed(&rng, o->seed);
    if (lt_heap_reserve(&heap, nc) < 0) {
        rc = lt_errset(err, LT_ENOMEM, "out of memory for the arrivals");
        goto out;
    }
    for (size_t i = 0; i < nc; i++) {
        struct sg_arrival a = {.client = (uint32_t)i};
        if ((rc = client_next(&c[i], start, end, st->scale, &rng, &a.t, err)) < 0)
            goto out;
        if (rc == 1)
            lt_heap_push(&heap, &a);
        rc = 0;
    }

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
    struct sg_arrival a;
    while ((!o->requests || st->records < o->requests) && lt_heap_pop(&heap, &a)) {
        struct sg_client *cl = &c[a.client];
        int64_t at = (int64_t)floor(a.t);
        struct lt_record r = {.t = llround((a.t - (double)start) * 1e6)};
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
        struct lt_media parts[LT_MEDIA_MAX];
        uint32_t np = 0;
        uint64_t mtok = draw_media(cl, at, &rng, parts, &np);
        if (np || pmf_at(cl, F_TEXT, at)) {
            /* the prompt is its text and its parts, as servers count it */
            const struct sg_pmf *pt = pmf_at(cl, F_TEXT, at);
            uint64_t text = pt ? (uint64_t)fmin(fmax(pmf_draw(pt, &rng), 0), UINT32_MAX) : r.in;
            uint64_t all = text + mtok;
            r.in = all > UINT32_MAX ? UINT32_MAX : (uint32_t)all;
            r.has |= LT_HAS_IN;
        }
        lt_media_pack(&mp, parts, np);
        if (mp.rc < 0) {
            rc = lt_errset(err, mp.rc, "out of memory");
            goto out;
        }
        r.extra = (struct lt_extra){(const uint8_t *)extra.p, extra.len, np ? 2 : 1};
        LT_TRY(lt_writer_put_record(w, &r, err));
        st->records++;
        if ((rc = client_next(cl, start, end, st->scale, &rng, &a.t, err)) < 0)
            goto out;
        if (rc == 1)
            lt_heap_push(&heap, &a); /* the room its last arrival left */
        rc = 0;
    }
out:
    if (w) {
        int crc = lt_writer_close(w, rc < 0 ? NULL : err);
        if (rc == 0)
            rc = crc;
    }
    lt_heap_release(&heap);
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
    lt_reader_close(r);
    if (!ok)
        return lt_errset(err, LT_EINVAL,
                         "%s: not made by synth --servegen (its header does not say which "
                         "slice of the folder it is)",
                         trace);
    struct lt_servegen_opts o = {
        .dir = dir, .start_s = win, .duration_s = dur, .rate = (double)rate / 1e6, .seed = seed};
    return lt_servegen_run(&o, out_path, NULL, err);
}

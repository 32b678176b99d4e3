/*
 * The accumulating half of analyze (analyze.h): one pass over the run and
 * result records of one or more results files, each result folded into its
 * run's histograms and counters as it is read, so memory is fixed per run.
 * lt_analyze_finish() then derives the figures (rates, means, goodput) and
 * the sweep (points ordered by concurrency or rate, and the knee).
 *
 * Which results count: warm-up results (`warmup: true`) are left out unless
 * asked; latencies, tokens and speeds are taken over the Ok requests only
 * (docs/metrics.md gives the mapping of result fields to Ok); the wall
 * window spans every measured request that was sent.
 */
#include "analyze/analyze.h"
#include "analyze/analyze_internal.h"
#include "analyze/analyze_media.h"
#include "analyze/analyze_server.h"
#include "base/lt_vmem.h"
#include "traces/trace_reader.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HIST_HIGHEST (UINT64_C(1) << 36) /* ~19 hours in us */
#define TS_HIST_BITS 5                   /* percentile-over-time: 3 % is plenty */
#define TS_T_MAX (INT64_C(1) << 52)      /* later times count at this one */
#define SEC_US 1000000.0

static const char *const metric_names[LT_AM_COUNT] = {
    "ttft", "ttfc", "itl", "tpot", "e2e", "ttft_sched", "ttfc_sched", "e2e_sched", "lag",
};

const char *lt_analyze_metric_name(enum lt_analyze_metric m)
{
    return (unsigned)m < LT_AM_COUNT ? metric_names[m] : "?";
}

void lt_analyze_opts_init(struct lt_analyze_opts *opts)
{
    memset(opts, 0, sizeof *opts);
}

double lt_analyze_pct(const struct lt_hist *h, double p)
{
    return h && lt_hist_count(h) ? (double)lt_hist_value_at(h, p) : 0.0;
}

static void copy_str(char *dst, size_t n, const char *src)
{
    if (!src)
        src = "";
    size_t len = strlen(src);
    if (len >= n)
        len = n - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

int lt_analyze_init(struct lt_analyze *a, const struct lt_analyze_opts *opts, struct lt_err *err)
{
    memset(a, 0, sizeof *a);
    if (opts)
        a->opts = *opts;
    if (a->opts.hist_bits == 0)
        a->opts.hist_bits = 10;
    if (a->opts.hist_bits < LT_HIST_BITS_MIN || a->opts.hist_bits > 14)
        return lt_errset(err, LT_EINVAL, "analyze: histogram bits must be 1..14, not %d",
                         a->opts.hist_bits);
    if (a->opts.bucket_us <= 0)
        a->opts.bucket_us = 1000000;
    if (a->opts.knee_fraction <= 0)
        a->opts.knee_fraction = 0.5;
    if (a->opts.lag_warn_us <= 0)
        a->opts.lag_warn_us = 10000;
    a->knee = -1;
    a->knee_fraction = a->opts.knee_fraction;
    return 0;
}

void lt_analyze_next_file(struct lt_analyze *a)
{
    a->n_files++;
}

static void run_free(struct lt_analyze_run *r)
{
    if (!r)
        return;
    for (int m = 0; m < LT_AM_COUNT; m++)
        lt_hist_free(r->h[m]);
    lt_hist_free(r->same[0]);
    lt_hist_free(r->same[1]);
    for (uint32_t i = 0; i < LT_ANALYZE_TS_MAX; i++) {
        lt_hist_free(r->ts.b[i].e2e);
        lt_hist_free(r->ts.b[i].ttft);
    }
    for (uint32_t i = 0; i < r->ts.n_spare; i++)
        lt_hist_free(r->ts.spare[i]);
    lt_analyze_server_free(r->srv);
    lt_analyze_media_release(r);
    lt__analyze_fleet_free(r->fleet);
    free(r);
}

void lt_analyze_release(struct lt_analyze *a)
{
    for (uint32_t i = 0; i < a->n_runs; i++)
        run_free(a->runs[i]);
    a->n_runs = 0;
    memset(a->run_cache, 0, sizeof a->run_cache);
}

static uint32_t cur_file(const struct lt_analyze *a)
{
    return a->n_files ? a->n_files - 1 : 0;
}

/* The run (file, id), made on first sight: results may name a run whose
 * record was lost (salvage) and still deserve a place. */
static int get_run_slow(struct lt_analyze *a, uint32_t id, struct lt_analyze_run **out,
                        struct lt_err *err)
{
    uint32_t file = cur_file(a);
    for (uint32_t i = a->n_runs; i-- > 0;) {
        if (a->runs[i]->id == id && a->runs[i]->file == file) {
            *out = a->run_cache[id & 63] = a->runs[i];
            return 0;
        }
    }
    if (a->n_runs == LT_ANALYZE_RUNS_MAX)
        return lt_errset(err, LT_ELIMIT, "analyze: more than %d runs", LT_ANALYZE_RUNS_MAX);
    struct lt_analyze_run *r = calloc(1, sizeof *r);
    if (!r)
        return lt_errset(err, LT_ENOMEM, "analyze: out of memory");
    r->id = id;
    r->file = file;
    r->first_sent = INT64_MAX;
    r->last_sent = INT64_MIN;
    r->last_end = INT64_MIN;
    r->trace_hit = NAN;
    r->trace_hit_share = 1;
    r->ts.width_us = a->opts.bucket_us;
    r->ts.inv_width = 1.0 / (double)r->ts.width_us;
    for (int m = 0; m < LT_AM_COUNT + 2; m++) {
        struct lt_hist **h = m < LT_AM_COUNT ? &r->h[m] : &r->same[m - LT_AM_COUNT];
        if (!(*h = lt_hist_new(HIST_HIGHEST, a->opts.hist_bits, err))) {
            run_free(r);
            return LT_ENOMEM;
        }
    }
    a->runs[a->n_runs++] = r;
    *out = a->run_cache[id & 63] = r;
    return 0;
}

/* The run's cache test inline (it runs for every result), the rest not. */
static inline int get_run(struct lt_analyze *a, uint32_t id, struct lt_analyze_run **out,
                          struct lt_err *err)
{
    struct lt_analyze_run *c = a->run_cache[id & 63];
    if (c && c->id == id && c->file == cur_file(a)) {
        *out = c;
        return 0;
    }
    return get_run_slow(a, id, out, err);
}

/* What a probe's results decided (its verdict record, or the run record
 * of an older file). */
static void probe_verdict(struct lt_analyze_probe *pr, const struct lt_verdict *v)
{
    copy_str(pr->verdict, sizeof pr->verdict, v->verdict);
    copy_str(pr->why, sizeof pr->why, v->why);
    pr->attain = v->attain;
    pr->lo = v->attain_lo;
    pr->hi = v->attain_hi;
}

int lt_analyze_add_run(struct lt_analyze *a, const struct lt_run *run, struct lt_err *err)
{
    struct lt_analyze_run *r;
    int rc = get_run(a, run->id, &r, err);
    if (rc < 0)
        return rc;
    r->have_record = true;
    copy_str(r->mode, sizeof r->mode, run->mode);
    r->concurrency = run->concurrency;
    r->rate = run->rate;
    r->speed = run->speed;
    copy_str(r->target, sizeof r->target, run->target);
    copy_str(r->model, sizeof r->model, run->model);
    r->warmup_declared = run->warmup;
    if (run->search) {
        struct lt_analyze_probe *pr = &r->probe;
        copy_str(pr->search, sizeof pr->search, run->search);
        copy_str(pr->engine, sizeof pr->engine, run->engine);
        copy_str(pr->slo, sizeof pr->slo, run->slo);
        pr->load = run->load;
        pr->target = run->attain_target;
        pr->windowed = run->window != NULL;
        if (run->verdict) /* a file older than verdict records */
            probe_verdict(pr, &(struct lt_verdict){.attain = run->attain,
                                                   .attain_lo = run->attain_lo,
                                                   .attain_hi = run->attain_hi,
                                                   .verdict = run->verdict,
                                                   .why = run->why});
    }
    int64_t ppm;
    if (lt_extra_get_int(&run->extra, "trace_prefix_hit_ppm", &ppm) && ppm >= 0 && ppm <= 1000000)
        r->trace_hit = (double)ppm / 1e6;
    int64_t lvl;
    if (lt_extra_get_int(&run->extra, "trace_prefix_hit_sampled_level", &lvl) && lvl > 0 &&
        lvl <= 64)
        r->trace_hit_share = ldexp(1.0, -(int)lvl);
    return lt__analyze_fleet_run(r, run, err);
}

int lt_analyze_add_scrape(struct lt_analyze *a, const struct lt_scrape *sc, struct lt_err *err)
{
    struct lt_analyze_run *r;
    int rc = get_run(a, sc->run, &r, err);
    if (rc < 0)
        return rc;
    if (lt__analyze_fleet_scrape(r, sc)) /* a fleet replica's: the fleet table's */
        return 0;
    if (!r->srv && !(r->srv = lt_analyze_server_new()))
        return lt_errset(err, LT_ENOMEM, "analyze: out of memory");
    return lt_analyze_server_add(r->srv, sc, err);
}

int lt_analyze_add_check(struct lt_analyze *a, const struct lt_check *k, struct lt_err *err)
{
    struct lt_analyze_run *r;
    int rc = get_run(a, k->run, &r, err);
    if (rc < 0)
        return rc;
    lt__analyze_check_add(r, k);
    return 0;
}

int lt_analyze_add_verdict(struct lt_analyze *a, const struct lt_verdict *v, struct lt_err *err)
{
    struct lt_analyze_run *r;
    int rc = get_run(a, v->run, &r, err);
    if (rc < 0)
        return rc;
    probe_verdict(&r->probe, v);
    return 0;
}

/* The probes the answer leaves out (lt_analyze_probe.left_out): those
 * without a verdict (cut short by a stop, or judging too few requests to
 * decide anything: their records are in the file, their figures decide
 * nothing), and, of an engine whose probes of a window of the trace are
 * the answer's, those of the whole trace (the model's search that chose
 * the window: another question). */
static void leave_out(struct lt_analyze *a)
{
    for (uint32_t i = 0; i < a->n_runs; i++) {
        struct lt_analyze_probe *p = &a->runs[i]->probe;
        p->left_out = NULL;
        if (p->search[0] && !p->verdict[0])
            p->left_out = "no verdict: cut short, or too few judged requests to decide";
    }
    for (uint32_t i = 0; i < a->n_runs; i++) {
        struct lt_analyze_probe *p = &a->runs[i]->probe;
        if (!p->search[0] || p->windowed || p->left_out)
            continue;
        for (uint32_t k = 0; k < a->n_runs; k++) {
            const struct lt_analyze_run *w = a->runs[k];
            if (w->file == a->runs[i]->file && w->probe.windowed &&
                !strcmp(w->probe.engine, p->engine)) {
                p->left_out = "of the whole trace: the model's search that chose the window the "
                              "other probes replay";
                break;
            }
        }
    }
}

/* ---- time series ---------------------------------------------------- */

enum { TS_E2E = 0, TS_TTFT = 1 }; /* which histogram of a bucket */

static struct lt_hist **ts_slot(struct lt_analyze_bucket *b, int which)
{
    return which == TS_TTFT ? &b->ttft : &b->e2e;
}

/* A bucket's histogram: one a merge emptied, or a new one. (Coarsening
 * empties half of them at a time, and making them anew cost more than
 * filling them.) */
static struct lt_hist *ts_new_hist(struct lt_analyze_ts *ts)
{
    if (ts->n_spare == 0)
        return lt_hist_new(HIST_HIGHEST, TS_HIST_BITS, NULL);
    struct lt_hist *h = ts->spare[--ts->n_spare];
    lt_hist_reset(h);
    return h;
}

/* Record the pending values, each run of values of one bucket in one
 * call. */
static void ts_flush(struct lt_analyze_ts *ts)
{
    for (int w = 0; w < 2; w++) {
        const uint32_t *k = ts->pend_k[w], n = ts->n_pend[w];
        const uint64_t *v = ts->pend_v[w];
        for (uint32_t i = 0, j; i < n; i = j) {
            for (j = i + 1; j < n && k[j] == k[i]; j++)
                ;
            struct lt_hist **h = ts_slot(&ts->b[k[i]], w);
            if (!*h)
                *h = ts_new_hist(ts);
            if (*h) /* out of memory only loses a point of the percentile-over-time chart */
                lt_hist_record_many(*h, v + i, j - i);
        }
        ts->n_pend[w] = 0;
    }
}

/* v into histogram `which` of bucket b, in time: before the buckets
 * change (ts_coarsen()) or the analysis ends (lt_analyze_finish()). */
static inline void ts_rec(struct lt_analyze_ts *ts, int which, const struct lt_analyze_bucket *b,
                          uint64_t v)
{
    uint32_t n = ts->n_pend[which];
    ts->pend_k[which][n] = (uint32_t)(b - ts->b);
    ts->pend_v[which][n] = v;
    ts->n_pend[which] = ++n;
    if (n == LT_ANALYZE_PEND)
        ts_flush(ts);
}

static int merge_into(struct lt_analyze_ts *ts, struct lt_hist **dst, struct lt_hist **src)
{
    if (!*src)
        return 0;
    if (!*dst) {
        *dst = *src;
        *src = NULL;
        return 0;
    }
    int rc = lt_hist_merge(*dst, *src, NULL);
    if (ts->n_spare < sizeof ts->spare / sizeof ts->spare[0])
        ts->spare[ts->n_spare++] = *src;
    else
        lt_hist_free(*src);
    *src = NULL;
    return rc;
}

/* Halve the resolution: bucket j becomes buckets 2j and 2j+1. */
static void ts_coarsen(struct lt_analyze_ts *ts)
{
    ts_flush(ts);
    uint32_t n = 0;
    for (uint32_t j = 0; 2 * j < ts->n; j++) {
        struct lt_analyze_bucket *d = &ts->b[j], *x = &ts->b[2 * j];
        struct lt_analyze_bucket *y = 2 * j + 1 < ts->n ? &ts->b[2 * j + 1] : NULL;
        struct lt_analyze_bucket m = *x;
        x->e2e = x->ttft = NULL;
        if (y) {
            m.tokens += y->tokens;
            m.started += y->started;
            m.ended += y->ended;
            m.ok += y->ok;
            m.errors += y->errors;
            m.start_sum += y->start_sum;
            m.end_sum += y->end_sum;
            merge_into(ts, &m.e2e, &y->e2e);
            merge_into(ts, &m.ttft, &y->ttft);
        }
        *d = m;
        n = j + 1;
    }
    for (uint32_t j = n; j < ts->n; j++)
        memset(&ts->b[j], 0, sizeof ts->b[j]);
    ts->n = n;
    ts->width_us *= 2;
    ts->inv_width = 1.0 / (double)ts->width_us;
    ts->last_w[0] = ts->last_w[1] = 0; /* forget the last lookups */
}

static struct lt_analyze_bucket *ts_find(struct lt_analyze_ts *ts, int64_t t);

/* The bucket of time t. Most times of a result, and of the next, fall in
 * one of the two buckets the last lookups found (a request's start and
 * its end are often in different ones): that test is inline (it runs
 * several times per result), the search is not. */
static inline struct lt_analyze_bucket *ts_at(struct lt_analyze_ts *ts, int64_t t)
{
    if (t > ts->t_last)
        ts->t_last = t;
    /* t - lo < w as unsigned: lo <= t < lo + w in one test (none for w = 0) */
    if ((uint64_t)t - (uint64_t)ts->last_lo[0] < ts->last_w[0])
        return &ts->b[ts->last_k[0]];
    if ((uint64_t)t - (uint64_t)ts->last_lo[1] < ts->last_w[1])
        return &ts->b[ts->last_k[1]];
    return ts_find(ts, t);
}

static struct lt_analyze_bucket *ts_find(struct lt_analyze_ts *ts, int64_t t)
{
    /* Times outside [0, 2^52 us] (0 to 142 years) only come from damaged
     * or hostile files: they count at the nearest end, and the arithmetic
     * below cannot overflow. */
    if (t < 0)
        t = 0;
    if (t > TS_T_MAX)
        t = TS_T_MAX;
    while (t >= ts->width_us * LT_ANALYZE_TS_MAX)
        ts_coarsen(ts);
    /* A multiplication instead of a 64-bit division (this runs several
     * times per result), corrected for rounding at bucket edges. */
    int64_t k = (int64_t)((double)t * ts->inv_width);
    if (k * ts->width_us > t)
        k--;
    else if ((k + 1) * ts->width_us <= t)
        k++;
    if (k >= LT_ANALYZE_TS_MAX)
        k = LT_ANALYZE_TS_MAX - 1;
    if ((uint32_t)k >= ts->n)
        ts->n = (uint32_t)k + 1;
    if (k < LT_ANALYZE_TS_MAX - 1) { /* the last bucket also takes what is past it */
        ts->last_k[1] = ts->last_k[0];
        ts->last_lo[1] = ts->last_lo[0];
        ts->last_w[1] = ts->last_w[0];
        ts->last_k[0] = (uint32_t)k;
        ts->last_lo[0] = k * ts->width_us;
        ts->last_w[0] = (uint64_t)ts->width_us;
    }
    return &ts->b[k];
}

void lt_analyze_ts_point(const struct lt_analyze_run *r, uint32_t k, struct lt_analyze_ts_point *p)
{
    const struct lt_analyze_ts *ts = &r->ts;
    const struct lt_analyze_bucket *b = &ts->b[k];
    double w = (double)ts->width_us, lo = (double)k * w;
    /* In flight at the bucket's start, then each request's share of it:
     * one sent at offset o adds (w - o), one that ended at o removes
     * (w - o). The integral over the bucket, divided by its length. */
    int64_t before = 0;
    for (uint32_t j = 0; j < k; j++)
        before += (int64_t)ts->b[j].started - (int64_t)ts->b[j].ended;
    double len = w;
    if (k + 1 == ts->n && (double)ts->t_last - lo < w) {
        len = (double)ts->t_last - lo;
        if (len < 1)
            len = 1; /* a bucket of an instant: the run ended at its start */
    }
    /* The offsets' sums from the times' sums; times outside the bucket (the
     * last one takes later times, hostile files earlier ones) count at its
     * edges, as ts_find() counts them. */
    double start_off =
        fmin(fmax(b->start_sum - (double)b->started * lo, 0), (double)b->started * w);
    double end_off = fmin(fmax(b->end_sum - (double)b->ended * lo, 0), (double)b->ended * w);
    double busy = (double)before * len + (double)b->started * len - start_off -
                  (double)b->ended * len + end_off;
    p->t_s = lo / SEC_US;
    p->len_s = len / SEC_US;
    /* Tokens over at least a hundredth of the width: the last few chunks of a
     * run that ends just after a bucket starts are no burst of speed. */
    p->tokens_per_s = (double)b->tokens / (fmax(len, w / 100) / SEC_US);
    p->in_flight = busy > 0 ? busy / len : 0;
    p->ok = b->ok;
    p->errors = b->errors;
    const struct lt_hist *h[2] = {b->e2e, b->ttft};
    double *out[2][2] = {{&p->e2e_p50_ms, &p->e2e_p99_ms}, {&p->ttft_p50_ms, &p->ttft_p99_ms}};
    for (int i = 0; i < 2; i++) {
        bool any = h[i] && lt_hist_count(h[i]);
        *out[i][0] = any ? lt_analyze_pct(h[i], 50) / 1e3 : NAN;
        *out[i][1] = any ? lt_analyze_pct(h[i], 99) / 1e3 : NAN;
    }
}

/* ---- results -------------------------------------------------------- */

/* The histogram of pending list m: h[m], or same[] after them. */
static struct lt_hist *pend_hist(struct lt_analyze_run *r, int m)
{
    return m < LT_AM_COUNT ? r->h[m] : r->same[m - LT_AM_COUNT];
}

static inline void pend(struct lt_analyze_run *r, int m, uint64_t v)
{
    uint32_t k = r->n_pend[m];
    r->pend[m][k++] = v;
    if (k == LT_ANALYZE_PEND) {
        lt_hist_record_many(pend_hist(r, m), r->pend[m], k);
        k = 0;
    }
    r->n_pend[m] = k;
}

static inline void rec(struct lt_analyze_run *r, enum lt_analyze_metric m, int64_t v)
{
    if (v < 0) {
        r->negative[m]++;
        v = 0;
    }
    pend(r, m, (uint64_t)v);
}

/* TTFT (sched = false) or TTFT_S of a result whose TTFC (TTFC_S) is the
 * same value. */
static inline void rec_same(struct lt_analyze_run *r, bool sched, int64_t v)
{
    if (v < 0) {
        r->negative[sched ? LT_AM_TTFT_S : LT_AM_TTFT]++;
        r->negative[sched ? LT_AM_TTFC_S : LT_AM_TTFC]++;
        v = 0;
    }
    pend(r, LT_AM_COUNT + sched, (uint64_t)v);
}

/* Record every pending value, and add same[] to both its metrics. */
static int rec_pending(struct lt_analyze_run *r, struct lt_err *err)
{
    for (int m = 0; m < LT_AM_COUNT + 2; m++) {
        lt_hist_record_many(pend_hist(r, m), r->pend[m], r->n_pend[m]);
        r->n_pend[m] = 0;
    }
    ts_flush(&r->ts);
    static const enum lt_analyze_metric to[2][2] = {{LT_AM_TTFT, LT_AM_TTFC},
                                                    {LT_AM_TTFT_S, LT_AM_TTFC_S}};
    for (int s = 0; s < 2; s++) {
        for (int k = 0; k < 2; k++) {
            int rc = lt_hist_merge(r->h[to[s][k]], r->same[s], err);
            if (rc < 0)
                return rc;
        }
        lt_hist_reset(r->same[s]); /* so that finishing again adds nothing */
    }
    return 0;
}

/* Times beyond +-2^62 us (146,000 years) only come from damaged or
 * hostile files. Clamped to that range, no difference of two times can
 * overflow; the test is one comparison for all the times of a result. */
#define T_LIM (INT64_C(1) << 62)

static int64_t clamp_t(int64_t t)
{
    return t < -T_LIM ? -T_LIM : t >= T_LIM ? T_LIM - 1 : t; /* as times_in_range() */
}

static inline bool times_in_range(const struct lt_result *res)
{
    const uint64_t lim = (uint64_t)T_LIM; /* t + lim < 2^63: -lim <= t < lim */
    uint64_t all = ((uint64_t)res->sched + lim) | ((uint64_t)res->sent + lim) |
                   ((uint64_t)res->first_byte + lim) | ((uint64_t)res->first_token + lim) |
                   ((uint64_t)res->first_content + lim) | ((uint64_t)res->end + lim);
    return all < UINT64_C(1) << 63;
}

/* The server's message in an error body: the string value of its first
 * "message" (OpenAI's and vLLM's {"error": {"message": ...}}), "detail"
 * (FastAPI's) or "error" key, unescaped; else the body's start. */
static void err_message(const char *body, char *out, size_t cap)
{
    static const char *const keys[] = {"\"message\"", "\"detail\"", "\"error\""};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        const char *p = strstr(body, keys[k]);
        if (!p)
            continue;
        p += strlen(keys[k]);
        while (*p == ' ')
            p++;
        if (*p++ != ':')
            continue;
        while (*p == ' ')
            p++;
        if (*p++ != '"')
            continue;
        size_t n = 0;
        for (; *p && *p != '"' && n + 1 < cap; p++) {
            if (*p == '\\' && p[1])
                p++;
            out[n++] = *p;
        }
        out[n] = '\0';
        return;
    }
    copy_str(out, cap, body);
}

static void add_message(struct lt_analyze_run *r, const char *name, const struct lt_result *res)
{
    char msg[LT_ANALYZE_ERR_MSG];
    err_message(res->err_body, msg, sizeof msg);
    int32_t status = (res->has & LT_RHAS_STATUS) ? res->status : 0;
    for (uint32_t i = 0; i < r->n_msgs; i++) {
        struct lt_analyze_errmsg *m = &r->msgs[i];
        if (m->status == status && !strcmp(m->name, name) && !strcmp(m->msg, msg)) {
            m->n++;
            return;
        }
    }
    if (r->n_msgs == LT_ANALYZE_ERR_MSGS) {
        r->msgs_other++;
        return;
    }
    struct lt_analyze_errmsg *m = &r->msgs[r->n_msgs++];
    copy_str(m->name, sizeof m->name, name);
    memcpy(m->msg, msg, sizeof msg);
    m->status = status;
    m->n = 1;
}

static void add_error(struct lt_analyze_run *r, const struct lt_result *res, bool sent)
{
    char name[LT_ANALYZE_ERR_NAME];
    if (res->err && !strcmp(res->err, "http") && (res->has & LT_RHAS_STATUS))
        snprintf(name, sizeof name, "http_%d", (int)res->status);
    else if (res->err)
        copy_str(name, sizeof name, res->err);
    else if (!sent)
        copy_str(name, sizeof name, "not_sent");
    else if (!(res->has & LT_RHAS_STATUS))
        copy_str(name, sizeof name, "no_status");
    else if (res->status != 200)
        snprintf(name, sizeof name, "http_%d", (int)res->status);
    else
        copy_str(name, sizeof name, "empty");
    if (res->err_body)
        add_message(r, name, res);
    for (uint32_t i = 0; i < r->n_errs; i++) {
        if (!strcmp(r->errs[i].name, name)) {
            r->errs[i].n++;
            return;
        }
    }
    if (r->n_errs == LT_ANALYZE_ERR_CLASSES) {
        r->errs_other++;
        return;
    }
    memcpy(r->errs[r->n_errs].name, name, sizeof name);
    r->errs[r->n_errs++].n = 1;
}

/* Ok as DESIGN.md defines it: HTTP 200, the stream ended properly (replay
 * records no `err` exactly when [DONE] or a finish reason was seen), and at
 * least one output token. */
/* s equals the literal lit (s may be NULL): inline, where strcmp() is a
 * call, and unrolled, the literal's length being known (this runs for
 * every result). No byte of s past its end is read: the first one that
 * differs stops the test. */
#define str_is(s, lit) str_is_n(s, lit, sizeof lit - 1)
static inline bool str_is_n(const char *s, const char *lit, size_t n)
{
    if (!s)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] != lit[i])
            return false;
    return s[n] == '\0';
}

/* x rounded to the nearest integer, halves away from zero, as llround()
 * but inline for the values a latency takes (0 <= x < 2^62); llround()
 * for the rest. */
static inline int64_t round_us(double x)
{
    if (x >= 0 && x < 4611686018427387904.0) {
        int64_t k = (int64_t)x; /* truncation: x - k is in [0, 1) exactly */
        return x - (double)k >= 0.5 ? k + 1 : k;
    }
    return llround(x);
}

static bool meets_slo(const struct lt_analyze_opts *o, bool has_ttft, int64_t ttft, bool has_tpot,
                      double tpot, bool has_e2e, int64_t e2e)
{
    if (o->slo_ttft_us && (!has_ttft || ttft > o->slo_ttft_us))
        return false;
    /* A one-token answer has no TPOT and cannot miss a TPOT objective. */
    if (o->slo_tpot_us && has_tpot && tpot > (double)o->slo_tpot_us)
        return false;
    if (o->slo_e2e_us && (!has_e2e || e2e > o->slo_e2e_us))
        return false;
    return true;
}

/* A realized length against the one asked (want > 0): counted, and its
 * relative deviation summed; off when it is more than 5 %. A length as
 * asked adds 0 to the sums: no division for it. */
static inline void add_dev(uint32_t got, uint32_t want, uint64_t *n, double *sum, double *abssum,
                           uint64_t *off)
{
    ++*n;
    if (got == want)
        return;
    double d = ((double)got - want) / want;
    *sum += d;
    *abssum += fabs(d);
    *off += fabs(d) > 0.05;
}

/* The server's own account of an Ok request (srv_pf, srv_pf_n, srv_dec,
 * srv_dec_n: trace-format.md), summed where a pair is whole. */
static void add_srv_timings(struct lt_analyze_run *r, const struct lt_result *res)
{
    int64_t us, n;
    if (lt_extra_get_int(&res->extra, "srv_pf", &us) &&
        lt_extra_get_int(&res->extra, "srv_pf_n", &n) && us >= 0 && n >= 0) {
        r->srv_pf_reqs++;
        r->srv_pf_us += (uint64_t)us;
        r->srv_pf_tokens += (uint64_t)n;
    }
    if (lt_extra_get_int(&res->extra, "srv_dec", &us) &&
        lt_extra_get_int(&res->extra, "srv_dec_n", &n) && us >= 0 && n >= 0) {
        r->srv_dec_reqs++;
        r->srv_dec_us += (uint64_t)us;
        r->srv_dec_tokens += (uint64_t)n;
    }
}

static void add_ok(struct lt_analyze *a, struct lt_analyze_run *r, const struct lt_result *res)
{
    const uint32_t has = res->has;
    r->ok++;
    r->tokens += res->out;
    if (has & LT_RHAS_IN)
        r->in_tokens += res->in;
    if (str_is(res->count, "usage"))
        r->count_usage++;
    else if (str_is(res->count, "chunks"))
        r->count_chunks++;
    else
        r->count_unknown++;

    /* Rates are written x * 1e6 / dt, one division where x / (dt / 1e6)
     * made two in a row (this pass makes several per result). */
    const int64_t s = res->sent, q = res->sched;
    bool h_ft = has & LT_RHAS_FIRST_TOKEN, h_fc = has & LT_RHAS_FIRST_CONTENT,
         h_end = has & LT_RHAS_END;
    int64_t ttft = h_ft ? res->first_token - s : 0;
    int64_t e2e = h_end ? res->end - s : 0;
    if (h_ft && h_fc && res->first_content == res->first_token) { /* no reasoning */
        rec_same(r, false, ttft);
        rec_same(r, true, res->first_token - q);
    } else {
        if (h_ft) {
            rec(r, LT_AM_TTFT, ttft);
            rec(r, LT_AM_TTFT_S, res->first_token - q);
        }
        if (h_fc) {
            rec(r, LT_AM_TTFC, res->first_content - s);
            rec(r, LT_AM_TTFC_S, res->first_content - q);
        }
    }
    if (h_end) {
        rec(r, LT_AM_E2E, e2e);
        rec(r, LT_AM_E2E_S, res->end - q);
        if (e2e > 0) {
            r->sum_e2e_rate += res->out * SEC_US / e2e;
            r->n_perreq_e2e++;
        }
    }
    bool h_tpot = h_ft && h_end && res->out >= 2;
    double tpot = 0, dec_rate = -1;
    if (h_tpot) {
        tpot = (double)(e2e - ttft) / (res->out - 1);
        rec(r, LT_AM_TPOT, round_us(tpot));
        if (e2e > ttft) {
            dec_rate = (res->out - 1) * SEC_US / (e2e - ttft);
            r->sum_dec_rate += dec_rate;
            r->n_perreq_decode++;
        }
    }
    for (uint32_t k = 1; k < res->n_chunks; k++)
        rec(r, LT_AM_ITL, clamp_t(res->chunks[k].t) - clamp_t(res->chunks[k - 1].t));

    const struct lt_analyze_opts *o = &a->opts;
    if (!o->slo_ttft_us && !o->slo_tpot_us && !o->slo_e2e_us) { /* no SLO: every one is good */
        r->good++;
        r->good_sched++;
    } else {
        if (meets_slo(o, h_ft, ttft, h_tpot, tpot, h_end, e2e))
            r->good++;
        if (meets_slo(o, h_ft, res->first_token - q, h_tpot, tpot, h_end, res->end - q))
            r->good_sched++;
    }

    uint32_t reasoning = (has & LT_RHAS_REASONING) ? res->reasoning : 0;
    if (reasoning > res->out)
        reasoning = res->out;
    uint32_t content = res->out - reasoning;
    r->reasoning += reasoning;
    r->content += content;
    if (reasoning > 0) {
        r->with_reasoning++;
        if (h_ft && h_fc && res->first_content > res->first_token) {
            r->sum_reason_rate += reasoning * SEC_US / (res->first_content - res->first_token);
            r->n_reason_rate++;
        }
    }
    if (h_fc && h_end && content >= 2 && res->end > res->first_content) {
        /* Without reasoning the content rate is the decode rate, the same
         * numbers in the same formula: no second division. */
        bool same = dec_rate >= 0 && content == res->out && res->first_content == res->first_token;
        r->sum_content_rate +=
            same ? dec_rate : (content - 1) * SEC_US / (res->end - res->first_content);
        r->n_content_rate++;
    }
    if (str_is(res->finish, "tool_calls"))
        r->tool_calls++;

    if (res->extra.n)
        add_srv_timings(r, res);
    if (has & LT_RHAS_CACHED) {
        r->cache_reported++;
        r->cached_tokens += res->cached;
        r->cache_in_tokens += (has & LT_RHAS_IN) ? res->in : 0;
        if (res->cached > 0)
            r->cache_hits++;
    }
    if ((has & LT_RHAS_WANT_IN) && (has & LT_RHAS_IN) && res->want_in > 0)
        add_dev(res->in, res->want_in, &r->n_want_in, &r->sum_in_dev, &r->sum_in_absdev,
                &r->in_off);
    if ((has & LT_RHAS_WANT_OUT) && res->want_out > 0)
        add_dev(res->out, res->want_out, &r->n_want_out, &r->sum_out_dev, &r->sum_out_absdev,
                &r->out_off);

    /* Time series: tokens when their chunks arrived. */
    uint64_t at_end = res->out; /* tokens counted at the end */
    if (res->n_chunks) {
        uint64_t in_chunks = 0;
        for (uint32_t k = 0; k < res->n_chunks; k++) {
            ts_at(&r->ts, res->chunks[k].t)->tokens += res->chunks[k].tokens;
            in_chunks += res->chunks[k].tokens;
        }
        /* usage may count more than the chunks showed: put the rest at the end */
        at_end = res->out > in_chunks ? res->out - in_chunks : 0;
    }
    if (h_end) { /* one lookup: nothing between may move the buckets */
        struct lt_analyze_bucket *b = ts_at(&r->ts, res->end);
        b->tokens += at_end;
        b->ok++;
        ts_rec(&r->ts, TS_E2E, b, e2e < 0 ? 0 : (uint64_t)e2e);
    }
    if (h_ft) {
        struct lt_analyze_bucket *b = ts_at(&r->ts, res->first_token);
        ts_rec(&r->ts, TS_TTFT, b, ttft < 0 ? 0 : (uint64_t)ttft);
    }
}

int lt_analyze_add_result(struct lt_analyze *a, const struct lt_result *res, struct lt_err *err)
{
    struct lt_result clamped;
    if (!times_in_range(res)) {
        clamped = *res;
        clamped.sched = clamp_t(res->sched);
        clamped.sent = clamp_t(res->sent);
        clamped.first_byte = clamp_t(res->first_byte);
        clamped.first_token = clamp_t(res->first_token);
        clamped.first_content = clamp_t(res->first_content);
        clamped.end = clamp_t(res->end);
        res = &clamped;
    }
    struct lt_analyze_run *r;
    int rc = get_run(a, res->run, &r, err);
    if (rc < 0)
        return rc;
    a->results++;
    r->results++;
    if (res->has & LT_RHAS_OUT)
        r->out_all += res->out;
    bool sent = res->has & LT_RHAS_SENT;
    if (!sent && res->err && !strcmp(res->err, "unsent")) {
        /* A stopped replay's requests that never left: no load was put on
         * the server for them, so they are no error of it. */
        r->unsent++;
        return 0;
    }
    if (res->warmup && !a->opts.include_warmup) {
        r->warmup++;
        return 0;
    }
    r->measured++;
    enum lt__analyze_outcome oc = lt__analyze_outcome(res);
    if (r->fleet && (rc = lt__analyze_fleet_result(r, res, oc, err)) < 0)
        return rc;
    if (sent) {
        r->sent++;
        if (res->sent < r->first_sent)
            r->first_sent = res->sent;
        if (res->sent > r->last_sent)
            r->last_sent = res->sent;
        if ((res->has & LT_RHAS_END) && res->end > r->last_end)
            r->last_end = res->end;
        rec(r, LT_AM_LAG, res->sent - res->sched);
        /* Late: sent more than LT_ANALYZE_LATE_US after its schedule. Every
         * send is a little late (the loop's own latency); counting those
         * would call a client that kept up "late". */
        if (res->sent - res->sched > LT_ANALYZE_LATE_US)
            r->late++;
        struct lt_analyze_bucket *b = ts_at(&r->ts, res->sent);
        b->started++;
        b->start_sum += (double)res->sent;
        /* A request recorded without `end` (aborted) leaves the flight at
         * the last time known of it, or it would stay in flight forever. */
        int64_t gone = (res->has & LT_RHAS_END)           ? res->end
                       : (res->has & LT_RHAS_FIRST_TOKEN) ? res->first_token
                       : (res->has & LT_RHAS_FIRST_BYTE)  ? res->first_byte
                                                          : res->sent;
        b = ts_at(&r->ts, gone);
        b->ended++;
        b->end_sum += (double)gone;
    }
    if (oc != LT_AO_CANCELLED &&
        (rc = lt_analyze_media_add(r, res, oc == LT_AO_OK, a->opts.hist_bits, err)) < 0)
        return rc;
    if (oc == LT_AO_CANCELLED) {
        r->cancelled++;
        if (res->has & LT_RHAS_OUT)
            r->cancelled_tokens += res->out;
    } else if (oc == LT_AO_OK) {
        add_ok(a, r, res);
    } else {
        add_error(r, res, sent);
        int64_t when = (res->has & LT_RHAS_END) ? res->end : sent ? res->sent : res->sched;
        ts_at(&r->ts, when)->errors++;
    }
    return 0;
}

/* ---- derived figures and the sweep ----------------------------------- */

static void finish_run(const struct lt_analyze *a, struct lt_analyze_run *r)
{
    if (r->sent && r->last_end > r->first_sent)
        r->wall_s = (r->last_end - r->first_sent) / SEC_US;
    else
        r->wall_s = 0;
    r->agg_tps = r->wall_s > 0 ? r->tokens / r->wall_s : 0;
    r->perreq_e2e = r->n_perreq_e2e ? r->sum_e2e_rate / r->n_perreq_e2e : 0;
    r->perreq_decode = r->n_perreq_decode ? r->sum_dec_rate / r->n_perreq_decode : 0;
    r->goodput = r->wall_s > 0 ? r->good / r->wall_s : 0;
    r->goodput_sched = r->wall_s > 0 ? r->good_sched / r->wall_s : 0;
    r->reason_tps = r->n_reason_rate ? r->sum_reason_rate / r->n_reason_rate : 0;
    r->content_tps = r->n_content_rate ? r->sum_content_rate / r->n_content_rate : 0;
    lt__analyze_fleet_finish(r);
}

static int cmp_points(const void *x, const void *y)
{
    const struct lt_analyze_point *p = x, *q = y;
    if (p->x != q->x)
        return p->x < q->x ? -1 : 1;
    return p->run < q->run ? -1 : p->run > q->run;
}

int lt_analyze_finish(struct lt_analyze *a, struct lt_err *err)
{
    bool any_c = false, any_r = false;
    for (uint32_t i = 0; i < a->n_runs; i++) {
        int rc = rec_pending(a->runs[i], err);
        if (rc < 0)
            return rc;
        finish_run(a, a->runs[i]);
        any_c |= a->runs[i]->concurrency > 0;
        any_r |= a->runs[i]->rate > 0;
    }
    leave_out(a);
    a->n_points = 0;
    a->knee = -1;
    /* A capacity search: the probes of one engine, at their load (live
     * units), so that a virtual probe of a time-scaled model (its rate
     * and times in model time) never sits beside a live one on a curve;
     * live when there are live probes. A probe of a window of the trace
     * ran at a speed: its load is still the whole trace's rate. */
    const char *engine = NULL;
    for (uint32_t i = 0; i < a->n_runs; i++) {
        const struct lt_analyze_probe *p = &a->runs[i]->probe;
        if (lt_analyze_is_probe(a->runs[i]) && (!engine || !strcmp(p->engine, "live"))) {
            engine = p->engine;
            any_c = !strcmp(p->search, "concurrency");
            any_r = !any_c;
        }
    }
    a->sweep_axis = any_c ? "concurrency" : any_r ? "rate" : NULL;
    for (uint32_t i = 0; a->sweep_axis && i < a->n_runs; i++) {
        const struct lt_analyze_run *r = a->runs[i];
        double x = any_c ? r->concurrency : r->rate;
        if (engine) {
            if (!lt_analyze_is_probe(r) || strcmp(r->probe.engine, engine) != 0)
                continue;
            x = r->probe.load;
            /* a repeat at one load: the run that decided it (the last),
             * one point and one label a load */
            bool later = false;
            for (uint32_t k = i + 1; k < a->n_runs && !later; k++)
                later = lt_analyze_is_probe(a->runs[k]) && a->runs[k]->probe.load == x &&
                        !strcmp(a->runs[k]->probe.engine, engine);
            if (later)
                continue;
        }
        if (x > 0 && r->ok > 0)
            a->points[a->n_points++] = (struct lt_analyze_point){.run = i, .x = x};
    }
    qsort(a->points, a->n_points, sizeof a->points[0], cmp_points);
    if (a->n_points < 2) {
        a->sweep_axis = NULL;
        a->n_points = 0;
        return 0;
    }
    /* The knee: the first level past which aggregate throughput grows by
     * less than knee_fraction of the relative load increase while E2E p50
     * keeps growing; with SLOs, also where goodput stops growing: a level
     * past which more requests meet the SLOs is no knee, however little
     * the throughput grew (a batching server's tokens grow slower than
     * its load from the first level on). */
    bool slo = a->opts.slo_ttft_us > 0 || a->opts.slo_tpot_us > 0 || a->opts.slo_e2e_us > 0;
    for (uint32_t i = 0; i + 1 < a->n_points; i++) {
        const struct lt_analyze_run *p = a->runs[a->points[i].run];
        const struct lt_analyze_run *q = a->runs[a->points[i + 1].run];
        double dx = a->points[i + 1].x / a->points[i].x - 1;
        if (dx <= 0 || p->agg_tps <= 0)
            continue;
        double eff = (q->agg_tps / p->agg_tps - 1) / dx;
        double lp = lt_analyze_pct(p->h[LT_AM_E2E], 50), lq = lt_analyze_pct(q->h[LT_AM_E2E], 50);
        if (eff < a->knee_fraction && lq > lp && !(slo && q->goodput > p->goodput)) {
            a->knee = (int)i;
            break;
        }
    }
    (void)err;
    return 0;
}

/* A result's times may lie this far after its run's origin: ten years, far
 * beyond any replay, far below where a time in µs stops being exact as a
 * double (2^53). */
#define TIME_MAX_US (INT64_C(10) * 366 * 86400 * 1000000)
/* Duplicate indexes are looked for among the indexes below this (a bitmap
 * of 32 MiB of address space, touched only where indexes fall). */
#define SEEN_BITS (UINT64_C(1) << 28)

/* What file_check remembers within a file: the indexes a trace-time run
 * has recorded (one run at a time: it starts over when the run changes). */
struct seen {
    struct lt_vmem bits;
    uint32_t run;
    bool any; /* bits holds run's indexes */
};

static int check_times(const char *path, const struct lt_item *it, struct lt_err *err)
{
    const struct lt_result *res = &it->res;
    const struct {
        uint32_t bit;
        const char *key;
        int64_t v;
    } t[] = {{UINT32_MAX, "sched", res->sched},
             {LT_RHAS_SENT, "sent", res->sent},
             {LT_RHAS_FIRST_BYTE, "fb", res->first_byte},
             {LT_RHAS_FIRST_TOKEN, "ft", res->first_token},
             {LT_RHAS_FIRST_CONTENT, "fc", res->first_content},
             {LT_RHAS_END, "end", res->end}};
    unsigned long long rec = (unsigned long long)it->index;
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
        if (t[k].bit != UINT32_MAX && !(res->has & t[k].bit))
            continue;
        if (t[k].v < 0)
            return lt_errset(err, LT_EFORMAT,
                             "%s: record %llu: \"%s\" (%lld us) is before its run's start", path,
                             rec, t[k].key, (long long)t[k].v);
        if (t[k].v > TIME_MAX_US)
            return lt_errset(err, LT_EFORMAT,
                             "%s: record %llu: \"%s\" (%lld us) is more than ten years after its "
                             "run's start",
                             path, rec, t[k].key, (long long)t[k].v);
    }
    /* The order every client sees them in: nothing ends before it was
     * sent, the first content is a token, and the end comes after every
     * chunk. (The first byte and the first token are not held to the send:
     * a client may read them off another clock reading.) */
    const struct {
        uint32_t bl, be; /* later, earlier */
        const char *kl, *ke;
        int64_t l, e;
    } o[] = {
        {LT_RHAS_END, LT_RHAS_SENT, "end", "sent", res->end, res->sent},
        {LT_RHAS_END, LT_RHAS_FIRST_TOKEN, "end", "ft", res->end, res->first_token},
        {LT_RHAS_END, LT_RHAS_FIRST_CONTENT, "end", "fc", res->end, res->first_content},
        {LT_RHAS_FIRST_CONTENT, LT_RHAS_FIRST_TOKEN, "fc", "ft", res->first_content,
         res->first_token},
    };
    for (size_t k = 0; k < sizeof o / sizeof o[0]; k++)
        if ((res->has & o[k].bl) && (res->has & o[k].be) && o[k].l < o[k].e)
            return lt_errset(err, LT_EFORMAT,
                             "%s: record %llu: \"%s\" (%lld us) is before \"%s\" (%lld us)", path,
                             rec, o[k].kl, (long long)o[k].l, o[k].ke, (long long)o[k].e);
    return 0;
}

/* A trace-time run sends each record of its trace at most once, so an
 * index it records twice is no result of a replay (a loop's laps do send
 * one record again: not checked there). */
static int check_index(struct lt_analyze *a, struct seen *sn, const char *path,
                       const struct lt_item *it, struct lt_err *err)
{
    const struct lt_result *res = &it->res;
    const struct lt_analyze_run *run = NULL;
    for (uint32_t i = a->n_runs; i-- > 0 && !run;)
        if (a->runs[i]->file == cur_file(a) && a->runs[i]->id == res->run &&
            a->runs[i]->have_record)
            run = a->runs[i];
    if (!run || strcmp(run->mode, "trace") || res->index >= SEEN_BITS)
        return 0;
    if (!sn->bits.p && lt_vmem_map(&sn->bits, SEEN_BITS / 8) < 0)
        return 0; /* no address space: the check is a help, not a need */
    if (sn->any && sn->run != res->run)
        lt_vmem_clear(&sn->bits);
    sn->run = res->run;
    sn->any = true;
    uint8_t *b = (uint8_t *)sn->bits.p + res->index / 8;
    uint8_t m = (uint8_t)(1u << (res->index % 8));
    if (*b & m)
        return lt_errset(err, LT_EFORMAT,
                         "%s: record %llu: request %llu of the trace is recorded twice in run %u, "
                         "a trace-time run, which sends each request once",
                         path, (unsigned long long)it->index, (unsigned long long)res->index,
                         res->run);
    *b |= m;
    return 0;
}

/* What a file must hold for its figures to mean anything: each run once,
 * in a mode analyze knows, and results that can be true: times from the run's
 * start on, and within ten years of it, in the order they happen (no end
 * before the first token), each request of a trace-time run once. (Results
 * added one by one, as the library allows, are not held to this.) */
static int file_check(struct lt_analyze *a, struct seen *sn, const char *path,
                      const struct lt_item *it, struct lt_err *err)
{
    if (it->type == LT_ITEM_RESULT) {
        int rc = check_times(path, it, err);
        return rc < 0 ? rc : check_index(a, sn, path, it, err);
    }
    if (it->type != LT_ITEM_RUN)
        return 0;
    const struct lt_run *run = &it->run;
    const char *m = run->mode ? run->mode : "";
    if (strcmp(m, "trace") && strcmp(m, "concurrency") && strcmp(m, "rate"))
        return lt_errset(err, LT_EFORMAT,
                         "%s: record %llu: run %u has mode \"%.32s\", which is not trace, "
                         "concurrency or rate",
                         path, (unsigned long long)it->index, run->id, m);
    for (uint32_t i = 0; i < a->n_runs; i++)
        if (a->runs[i]->file == cur_file(a) && a->runs[i]->id == run->id && a->runs[i]->have_record)
            return lt_errset(err, LT_EFORMAT,
                             "%s: record %llu: a second run record for run %u (run ids are "
                             "unique in a file)",
                             path, (unsigned long long)it->index, run->id);
    return 0;
}

int lt_analyze_add_file(struct lt_analyze *a, const char *path, struct lt_err *err)
{
    int rc = 0;
    struct lt_reader *rd = lt__analyze_open(path, LT_KIND_RESULTS, a->opts.salvage, a->opts.on_skip,
                                            a->opts.skip_ud, err);
    if (!rd)
        return err && err->code < 0 ? err->code : LT_EIO;
    lt_analyze_next_file(a);
    if (a->n_files == 1) {
        copy_str(a->path, sizeof a->path, path);
        copy_str(a->source, sizeof a->source, lt_reader_header(rd)->source);
    }
    const struct lt_item *it;
    int n;
    struct seen sn = {0};
    while ((n = lt_reader_next(rd, &it, err)) == 1) {
        a->values++;
        if ((rc = file_check(a, &sn, path, it, err)) < 0)
            goto out;
        if (it->type == LT_ITEM_RUN)
            LT_TRY(lt_analyze_add_run(a, &it->run, err));
        else if (it->type == LT_ITEM_RESULT)
            LT_TRY(lt_analyze_add_result(a, &it->res, err));
        else if (it->type == LT_ITEM_SCRAPE)
            LT_TRY(lt_analyze_add_scrape(a, &it->scr, err));
        else if (it->type == LT_ITEM_CHECK)
            LT_TRY(lt_analyze_add_check(a, &it->chk, err));
        else if (it->type == LT_ITEM_VERDICT)
            LT_TRY(lt_analyze_add_verdict(a, &it->vrd, err));
    }
    if (n < 0) {
        rc = n;
        goto out;
    }
    /* A run record salvage skipped is damage it reports, not a file
     * that names runs it never had; so is one that a repaired copy (`cat
     * --salvage -o`, whose header counts what was skipped) lacks. */
    int64_t lost = 0;
    const struct lt_extra *hx = &lt_reader_header(rd)->extra;
    bool repaired = (lt_extra_get_int(hx, "salvaged_frames", &lost) && lost > 0) ||
                    (lt_extra_get_int(hx, "salvaged_values", &lost) && lost > 0);
    for (uint32_t i = 0; i < a->n_runs && !a->opts.salvage && !repaired; i++)
        if (a->runs[i]->file == cur_file(a) && !a->runs[i]->have_record) {
            rc = lt_errset(err, LT_EFORMAT,
                           "%s: results name run %u, but the file has no run record for it", path,
                           a->runs[i]->id);
            goto out;
        }
out:;
    lt_vmem_release(&sn.bits);
    struct lt_reader_stats st;
    lt_reader_stats(rd, &st);
    a->skipped_frames += st.skipped_frames;
    a->skipped_bytes += st.skipped_bytes;
    a->skipped_values += st.skipped_values;
    lt_reader_close(rd);
    return rc;
}

int lt_analyze_file(const char *path, const struct lt_analyze_opts *opts, struct lt_analyze *a,
                    struct lt_err *err)
{
    int rc = lt_analyze_init(a, opts, err);
    if (rc < 0)
        return rc;
    rc = lt_analyze_add_file(a, path, err);
    int rc2 = lt_analyze_finish(a, err);
    return rc < 0 ? rc : rc2;
}

/*
 * Did results B beat results A (compare.h)? One streaming pass over each
 * file into analyze's per-run histograms (the point estimates) and a
 * bottom-k sample per run (the bootstrap and the pairing), then, for each
 * run of A and the run of B at the same level, every metric of enum
 * lt_compare_metric with its confidence interval and verdict, and the
 * paired per-request differences. Nothing is printed here:
 * compare_render.c and compare_plot.c lay the result out.
 */
#include "analyze/compare_internal.h"
#include "base/lt_hist.h"
#include "base/lt_path.h"
#include "base/lt_rng.h"
#include "traces/trace_reader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The per-request values a sample keeps. */
enum field { F_TTFT, F_TPOT, F_E2E, F_DECODE, F_OUT };

/* What a bootstrap resample is summarized by. */
enum bstat { ST_P50, ST_P99, ST_MEAN };

/* What each metric is, in the order of enum lt_compare_metric. Latencies
 * take their point estimate from analyze's histogram (hist) and their CI
 * from the sample; the others are computed in compare_pair. */
static const struct {
    const char *name, *unit;
    int better; /* -1: lower is better, +1: higher is better, 0: neither */
    enum field field;
    enum bstat st;
    enum lt_analyze_metric hist;
} metric_defs[LT_CMPM_COUNT] = {
    [LT_CMPM_TTFT_P50] = {"TTFT p50", "ms", -1, F_TTFT, ST_P50, LT_AM_TTFT},
    [LT_CMPM_TTFT_P99] = {"TTFT p99", "ms", -1, F_TTFT, ST_P99, LT_AM_TTFT},
    [LT_CMPM_TPOT_P50] = {"TPOT p50", "ms", -1, F_TPOT, ST_P50, LT_AM_TPOT},
    [LT_CMPM_TPOT_P99] = {"TPOT p99", "ms", -1, F_TPOT, ST_P99, LT_AM_TPOT},
    [LT_CMPM_E2E_P50] = {"E2E p50", "ms", -1, F_E2E, ST_P50, LT_AM_E2E},
    [LT_CMPM_E2E_P99] = {"E2E p99", "ms", -1, F_E2E, ST_P99, LT_AM_E2E},
    [LT_CMPM_AGG_TPS] = {"Agg tok/s", "tok/s", 1, F_OUT, ST_MEAN},
    [LT_CMPM_DECODE_TPS] = {"Per-req decode tok/s", "tok/s", 1, F_DECODE, ST_MEAN},
    [LT_CMPM_OUT_MEAN] = {"mean output length", "tokens", 0, F_OUT, ST_MEAN},
};

const char *lt_compare_metric_name(enum lt_compare_metric m)
{
    return (unsigned)m < LT_CMPM_COUNT ? metric_defs[m].name : "?";
}

const char *lt_compare_metric_unit(enum lt_compare_metric m)
{
    return (unsigned)m < LT_CMPM_COUNT ? metric_defs[m].unit : "";
}

/* ---- the bottom-k sample ------------------------------------------------ */

struct sent {
    uint64_t hash, idx;
    double ttft, tpot, e2e, dec; /* us; dec: decode tok/s; NAN when absent */
    uint32_t out;
    int64_t want_in, want_out; /* what the trace asked for; -1 when not recorded */
    bool ok;
};

/* Bottom-k sample of one run: the k entries with the smallest hash. */
struct bottomk {
    struct sent *v;
    uint32_t n, k;
    uint64_t thresh; /* entries with hash >= thresh cannot enter */
};

struct lt_compare_rside {
    struct lt_analyze a;
    bool a_ok;
    struct bottomk bk[LT_ANALYZE_RUNS_MAX];
    char trace[512]; /* the trace its header names ("" when none) */
};

static int cmp_hash(const void *x, const void *y)
{
    const struct sent *p = x, *q = y;
    return p->hash < q->hash ? -1 : p->hash > q->hash;
}

static int bk_add(struct bottomk *b, const struct sent *e)
{
    if (e->hash >= b->thresh)
        return 0;
    if (!b->v) {
        b->v = malloc(sizeof *b->v * 2 * (size_t)b->k);
        if (!b->v)
            return LT_ENOMEM;
    }
    if (b->n == 2 * b->k) {
        qsort(b->v, b->n, sizeof *b->v, cmp_hash);
        b->thresh = b->v[b->k].hash;
        b->n = b->k;
        if (e->hash >= b->thresh)
            return 0;
    }
    b->v[b->n++] = *e;
    return 0;
}

static void bk_finish(struct bottomk *b)
{
    if (!b->n)
        return;
    qsort(b->v, b->n, sizeof *b->v, cmp_hash);
    if (b->n > b->k)
        b->n = b->k;
}

/* One result as a sample entry: Ok as analyze counts it (a cancelled one
 * is not: its latencies end where its client left), and its values. */
static struct sent sent_of(const struct lt_result *res)
{
    struct sent e = {.hash = lt_mix64(res->index ^ UINT64_C(0x9e3779b97f4a7c15)),
                     .idx = res->index,
                     .ttft = NAN,
                     .tpot = NAN,
                     .e2e = NAN,
                     .dec = NAN,
                     .out = res->out};
    const uint32_t h = res->has;
    e.want_in = h & LT_RHAS_WANT_IN ? (int64_t)res->want_in : -1;
    e.want_out = h & LT_RHAS_WANT_OUT ? (int64_t)res->want_out : -1;
    e.ok = lt__analyze_outcome(res) == LT_AO_OK;
    if (e.ok && (h & LT_RHAS_FIRST_TOKEN))
        e.ttft = (double)(res->first_token - res->sent);
    if (e.ok && (h & LT_RHAS_END))
        e.e2e = (double)(res->end - res->sent);
    if (isfinite(e.ttft) && isfinite(e.e2e) && res->out >= 2) {
        e.tpot = (e.e2e - e.ttft) / (res->out - 1);
        if (e.e2e > e.ttft)
            e.dec = (res->out - 1) / ((e.e2e - e.ttft) / 1e6);
    }
    return e;
}

static int read_results(struct lt_compare_rside *s, const char *path,
                        const struct lt_compare_opts *o, uint64_t *skipped, struct lt_err *err)
{
    int rc = 0;
    struct lt_reader *r = lt__compare_open(path, LT_KIND_RESULTS, o, err);
    if (!r)
        return err && err->code < 0 ? err->code : LT_EIO;
    /* The SLOs say what goodput counts (the twin's goodput). */
    struct lt_analyze_opts ao;
    lt_analyze_opts_init(&ao);
    ao.slo_ttft_us = o->slo_ttft_us;
    ao.slo_tpot_us = o->slo_tpot_us;
    ao.slo_e2e_us = o->slo_e2e_us;
    LT_TRY(lt_analyze_init(&s->a, &ao, err));
    s->a_ok = true;
    lt_analyze_next_file(&s->a);
    snprintf(s->a.path, sizeof s->a.path, "%s", path);
    const char *tn;
    size_t tl;
    if (lt_meta_get_str(lt_reader_header(r), "trace", &tn, &tl))
        snprintf(s->trace, sizeof s->trace, "%.*s", (int)(tl < 512 ? tl : 511), tn);
    const struct lt_item *it;
    int n;
    while ((n = lt_reader_next(r, &it, err)) == 1) {
        if (it->type == LT_ITEM_RUN) {
            LT_TRY(lt_analyze_add_run(&s->a, &it->run, err));
            continue;
        }
        if (it->type == LT_ITEM_VERDICT) { /* a capacity probe's: which runs count */
            LT_TRY(lt_analyze_add_verdict(&s->a, &it->vrd, err));
            continue;
        }
        if (it->type != LT_ITEM_RESULT)
            continue;
        const struct lt_result *res = &it->res;
        LT_TRY(lt_analyze_add_result(&s->a, res, err));
        if (res->warmup)
            continue;
        uint32_t ri = 0;
        while (ri < s->a.n_runs && s->a.runs[ri]->id != res->run)
            ri++;
        struct bottomk *b = &s->bk[ri];
        if (!b->k) {
            b->k = o->sample;
            b->thresh = UINT64_MAX;
        }
        struct sent e = sent_of(res);
        LT_TRY(bk_add(b, &e));
    }
    if (n < 0) {
        rc = n;
        goto out;
    }
    for (uint32_t i = 0; i < s->a.n_runs; i++)
        bk_finish(&s->bk[i]);
    LT_TRY(lt_analyze_finish(&s->a, err));
out:
    *skipped = lt__compare_skipped(r);
    lt_reader_close(r);
    if (rc < 0)
        lt_errf(err, rc, "%s", path);
    return rc;
}

static void rside_free(struct lt_compare_rside *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < LT_ANALYZE_RUNS_MAX; i++)
        free(s->bk[i].v);
    if (s->a_ok)
        lt_analyze_release(&s->a);
    free(s);
}

/* ---- statistics ----------------------------------------------------------- */

/* k-th smallest (0-based) of v[0..n), reordering v (Hoare's selection). */
static double select_k(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return v[k];
    }
    return v[k];
}

/* Nearest-rank percentile (as analyze) of v[0..n); reorders v. */
static double pct_of(double *v, size_t n, double p)
{
    if (!n)
        return NAN;
    size_t r = (size_t)ceil(p / 100 * n);
    if (r < 1)
        r = 1;
    return select_k(v, n, r - 1);
}

/* Statistic of one resample of src (or of src itself when rng is NULL). */
static double stat_of(const double *src, size_t n, enum bstat st, struct lt_rng *rng, double *tmp)
{
    for (size_t i = 0; i < n; i++)
        tmp[i] = rng ? src[lt_rng_below(rng, n)] : src[i];
    if (st == ST_MEAN) {
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += tmp[i];
        return s / n;
    }
    return pct_of(tmp, n, st == ST_P50 ? 50 : 99);
}

/* Values of one field of the Ok entries of a sample. */
static size_t gather(const struct bottomk *b, enum field f, double *dst)
{
    size_t n = 0;
    for (uint32_t i = 0; i < b->n; i++) {
        const struct sent *e = &b->v[i];
        if (!e->ok)
            continue;
        double v = f == F_TTFT     ? e->ttft
                   : f == F_TPOT   ? e->tpot
                   : f == F_E2E    ? e->e2e
                   : f == F_DECODE ? e->dec
                                   : (double)e->out;
        if (isfinite(v))
            dst[n++] = v;
    }
    return n;
}

/* Scratch space for one pair: both sides' values, a resample, the
 * bootstrap's statistics, and the three paired differences. */
struct scratch {
    double *va, *vb, *tmp, *diffs, *pd[LT_CMP_PAIRED_COUNT];
};

/* Bootstrap CI of stat(B) - stat(A), scaled: each side's statistic times
 * its factor (1 except for Agg tok/s). */
static void bootstrap(struct lt_compare_metric_result *m, size_t na, double fa, size_t nb,
                      double fb, enum bstat st, const struct lt_compare_opts *o, struct scratch *w)
{
    struct lt_rng rng;
    lt_rng_seed(&rng, o->seed);
    for (uint32_t i = 0; i < o->bootstrap; i++)
        w->diffs[i] =
            fb * stat_of(w->vb, nb, st, &rng, w->tmp) - fa * stat_of(w->va, na, st, &rng, w->tmp);
    double alpha = (1 - o->confidence) / 2;
    m->lo = pct_of(w->diffs, o->bootstrap, 100 * alpha);
    m->hi = pct_of(w->diffs, o->bootstrap, 100 * (1 - alpha));
}

static void verdict_of(struct lt_compare_metric_result *m, int better,
                       const struct lt_compare_opts *o)
{
    m->diff = m->b - m->a;
    m->rel = m->a != 0 ? m->diff / m->a : 0;
    bool significant = m->lo > 0 || m->hi < 0;
    if (!significant || fabs(m->rel) < o->margin)
        m->verdict = LT_CMP_SAME;
    else if (better == 0)
        m->verdict = LT_CMP_DIFFERENT;
    else
        m->verdict = (m->diff * better > 0) ? LT_CMP_BETTER : LT_CMP_WORSE;
}

/* ---- one pair of runs ---------------------------------------------------- */

static void run_label(char *buf, size_t n, const struct lt_analyze_run *r)
{
    if (r->concurrency)
        snprintf(buf, n, "C %u", r->concurrency);
    else if (r->rate > 0)
        snprintf(buf, n, "rate %g/s", r->rate);
    else
        snprintf(buf, n, "run %u", r->id);
}

/* Metric i of the pair; ba, bb are the two runs' samples. */
static void eval_metric(struct lt_compare_pair *p, enum lt_compare_metric i,
                        const struct bottomk *ba, const struct bottomk *bb,
                        const struct lt_compare_opts *o, struct scratch *w)
{
    const struct lt_analyze_run *ra = p->ra, *rb = p->rb;
    struct lt_compare_metric_result *m = &p->m[i];
    size_t na = gather(ba, metric_defs[i].field, w->va),
           nb = gather(bb, metric_defs[i].field, w->vb);
    double fa = 1, fb = 1;
    bool data = na && nb;
    switch (i) {
    case LT_CMPM_AGG_TPS:
        /* Agg tok/s = mean out per Ok request * Ok requests / wall. */
        *m = (struct lt_compare_metric_result){
            .a = ra->agg_tps, .b = rb->agg_tps, .na = ra->ok, .nb = rb->ok};
        data = data && ra->wall_s > 0 && rb->wall_s > 0;
        if (data) {
            fa = ra->ok / ra->wall_s;
            fb = rb->ok / rb->wall_s;
        }
        break;
    case LT_CMPM_DECODE_TPS:
        *m = (struct lt_compare_metric_result){.a = ra->perreq_decode,
                                               .b = rb->perreq_decode,
                                               .na = ra->n_perreq_decode,
                                               .nb = rb->n_perreq_decode};
        break;
    case LT_CMPM_OUT_MEAN:
        *m = (struct lt_compare_metric_result){.a = ra->ok ? (double)ra->tokens / ra->ok : 0,
                                               .b = rb->ok ? (double)rb->tokens / rb->ok : 0,
                                               .na = ra->ok,
                                               .nb = rb->ok};
        break;
    default: {
        /* Latencies: point estimates from the full histograms, the CI
         * from the samples. */
        const struct lt_hist *ha = ra->h[metric_defs[i].hist], *hb = rb->h[metric_defs[i].hist];
        double q = metric_defs[i].st == ST_P50 ? 50 : 99;
        *m = (struct lt_compare_metric_result){.na = lt_hist_count(ha), .nb = lt_hist_count(hb)};
        data = data && m->na && m->nb;
        if (data) {
            m->a = lt_analyze_pct(ha, q) / 1e3;
            m->b = lt_analyze_pct(hb, q) / 1e3;
        }
        fa = fb = 1e-3;
        break;
    }
    }
    if (!data) {
        m->verdict = LT_CMP_NODATA;
        return;
    }
    bootstrap(m, na, fa, nb, fb, metric_defs[i].st, o, w);
    verdict_of(m, metric_defs[i].better, o);
}

/* Paired differences, when the two samples hold the same requests. */
static void eval_paired(struct lt_compare_paired *pr, const struct bottomk *ba,
                        const struct bottomk *bb, const struct lt_compare_opts *o,
                        struct scratch *w)
{
    memset(pr, 0, sizeof *pr);
    for (uint32_t i = 0, j = 0; i < ba->n && j < bb->n;) {
        const struct sent *x = &ba->v[i], *y = &bb->v[j];
        if (x->hash < y->hash || (x->hash == y->hash && x->idx < y->idx)) {
            i++;
        } else if (y->hash < x->hash || y->idx < x->idx) {
            j++;
        } else {
            /* One index of one trace asks for one request: lengths that
             * differ are requests of different traces. */
            if ((x->want_in >= 0 && y->want_in >= 0 && x->want_in != y->want_in) ||
                (x->want_out >= 0 && y->want_out >= 0 && x->want_out != y->want_out)) {
                if (!pr->asked_differ++) {
                    pr->differ_idx = x->idx;
                    pr->differ_a[0] = x->want_in;
                    pr->differ_a[1] = x->want_out;
                    pr->differ_b[0] = y->want_in;
                    pr->differ_b[1] = y->want_out;
                }
            }
            if (x->ok && y->ok) {
                pr->pairs++;
                double dv[LT_CMP_PAIRED_COUNT] = {y->ttft - x->ttft, y->tpot - x->tpot,
                                                  y->e2e - x->e2e};
                for (int f = 0; f < LT_CMP_PAIRED_COUNT; f++)
                    if (isfinite(dv[f])) {
                        w->pd[f][pr->n[f]++] = dv[f] / 1e3;
                        pr->faster[f] += dv[f] < 0;
                    }
            }
            i++;
            j++;
        }
    }
    size_t smaller = ba->n < bb->n ? ba->n : bb->n;
    pr->paired = smaller > 0 && pr->pairs * 2 >= smaller && !pr->asked_differ;
    if (!pr->paired)
        return;
    struct lt_rng rng;
    lt_rng_seed(&rng, o->seed);
    for (int f = 0; f < LT_CMP_PAIRED_COUNT; f++) {
        size_t n = pr->n[f];
        if (!n)
            continue;
        pr->mean[f] = stat_of(w->pd[f], n, ST_MEAN, NULL, w->tmp);
        for (uint32_t b = 0; b < o->bootstrap; b++)
            w->diffs[b] = stat_of(w->pd[f], n, ST_MEAN, &rng, w->tmp);
        double alpha = (1 - o->confidence) / 2;
        pr->lo[f] = pct_of(w->diffs, o->bootstrap, 100 * alpha);
        pr->hi[f] = pct_of(w->diffs, o->bootstrap, 100 * (1 - alpha));
        pr->median[f] = pct_of(w->pd[f], n, 50);
    }
}

static void scratch_free(struct scratch *w)
{
    free(w->va);
    free(w->vb);
    free(w->tmp);
    free(w->diffs);
    for (int f = 0; f < LT_CMP_PAIRED_COUNT; f++)
        free(w->pd[f]);
}

static int compare_pair(struct lt_compare_results *r, struct lt_compare_pair *p, uint32_t ia,
                        uint32_t ib, struct lt_err *err)
{
    const struct bottomk *ba = &r->sa->bk[ia], *bb = &r->sb->bk[ib];
    p->ra = r->sa->a.runs[ia];
    p->rb = r->sb->a.runs[ib];
    run_label(p->la, sizeof p->la, p->ra);
    run_label(p->lb, sizeof p->lb, p->rb);
    size_t cap = (ba->n > bb->n ? ba->n : bb->n) + 1;
    struct scratch w = {.va = malloc(sizeof(double) * cap),
                        .vb = malloc(sizeof(double) * cap),
                        .tmp = malloc(sizeof(double) * cap),
                        .diffs = malloc(sizeof(double) * r->o.bootstrap)};
    bool ok = w.va && w.vb && w.tmp && w.diffs;
    for (int f = 0; f < LT_CMP_PAIRED_COUNT; f++)
        ok = (w.pd[f] = malloc(sizeof(double) * cap)) && ok;
    if (!ok) {
        scratch_free(&w);
        return lt_errset(err, LT_ENOMEM, "compare: out of memory");
    }
    for (int i = 0; i < LT_CMPM_COUNT; i++) {
        eval_metric(p, (enum lt_compare_metric)i, ba, bb, &r->o, &w);
        enum lt_compare_verdict v = p->m[i].verdict;
        if (v == LT_CMP_NODATA)
            continue;
        r->compared++;
        r->worse += v == LT_CMP_WORSE || v == LT_CMP_DIFFERENT;
        r->better += v == LT_CMP_BETTER;
    }
    eval_paired(&p->paired, ba, bb, &r->o, &w);
    p->same_performance = p->m[LT_CMPM_TPOT_P50].verdict == LT_CMP_SAME &&
                          p->m[LT_CMPM_AGG_TPS].verdict == LT_CMP_SAME &&
                          p->m[LT_CMPM_OUT_MEAN].verdict == LT_CMP_SAME;
    scratch_free(&w);
    return 0;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The headers name the trace each run replayed. Names that differ (the
 * file's own name, wherever it was run from) are different traces unless
 * both still exist and are one file: a twin of another trace predicts
 * nothing about this one. */
static void trace_names_differ(struct lt_compare_results *r)
{
    const char *ta = r->sa->trace, *tb = r->sb->trace;
    snprintf(r->trace_a, sizeof r->trace_a, "%s", ta);
    snprintf(r->trace_b, sizeof r->trace_b, "%s", tb);
    if (r->traces_differ || !*ta || !*tb || !strcmp(base_name(ta), base_name(tb)) ||
        lt_path_same(ta, tb))
        return;
    r->traces_differ = true;
    snprintf(r->traces_why, sizeof r->traces_why, "A's header names the trace %s and B's %s", ta,
             tb);
}

static bool same_level(const struct lt_analyze_run *x, const struct lt_analyze_run *y)
{
    return x->concurrency == y->concurrency && x->rate == y->rate && x->speed == y->speed;
}

int lt_compare_results_compute(struct lt_compare_results *r, const char *path_a, const char *path_b,
                               const struct lt_compare_opts *opts, struct lt_err *err)
{
    int rc = 0;
    memset(r, 0, sizeof *r);
    r->path_a = path_a;
    r->path_b = path_b;
    r->o = opts ? *opts : (struct lt_compare_opts){0};
    lt_compare_opts_defaults(&r->o);
    r->sa = calloc(1, sizeof *r->sa);
    r->sb = calloc(1, sizeof *r->sb);
    if (!r->sa || !r->sb)
        return lt_errset(err, LT_ENOMEM, "compare: out of memory");
    LT_TRY(read_results(r->sa, path_a, &r->o, &r->skipped_a, err));
    LT_TRY(read_results(r->sb, path_b, &r->o, &r->skipped_b, err));
    const struct lt_analyze *A = &r->sa->a, *B = &r->sb->a;
    r->runs_a = A->n_runs;
    r->runs_b = B->n_runs;
    if (A->n_runs) {
        r->pairs = calloc(A->n_runs, sizeof *r->pairs);
        if (!r->pairs)
            return lt_errset(err, LT_ENOMEM, "compare: out of memory");
    }
    /* B is a prediction of A when it is a virtual replay (or --twin). */
    r->twin = r->o.twin;
    for (uint32_t k = 0; k < B->n_runs; k++)
        r->twin = r->twin || !strcmp(B->runs[k]->target, "sim:virtual");
    for (uint32_t i = 0; i < A->n_runs; i++) {
        int j = -1;
        if (A->n_runs == 1 && B->n_runs == 1)
            j = 0;
        else
            for (uint32_t k = 0; k < B->n_runs && j < 0; k++)
                if (same_level(A->runs[i], B->runs[k]))
                    j = (int)k;
        r->id_a[i] = A->runs[i]->id;
        r->pair_of[i] = j < 0 ? -1 : (int32_t)r->n_pairs;
        if (j < 0)
            continue;
        struct lt_compare_pair *p = &r->pairs[r->n_pairs++];
        LT_TRY(compare_pair(r, p, i, (uint32_t)j, err));
        if (r->twin) {
            LT_TRY(lt__compare_twin_eval(&p->twin, p->ra, p->rb, err));
            r->twin_misses += p->twin.misses > 0 || p->twin.judged == 0;
        }
        const struct lt_compare_paired *pr = &p->paired;
        if (pr->asked_differ && !r->traces_differ) {
            r->traces_differ = true;
            snprintf(r->traces_why, sizeof r->traces_why,
                     "request %llu of the trace asked for in %lld, out %lld in A's run %u and in "
                     "%lld, out %lld in B's run %u (%zu requests of both samples differ so)",
                     (unsigned long long)pr->differ_idx, (long long)pr->differ_a[0],
                     (long long)pr->differ_a[1], p->ra->id, (long long)pr->differ_b[0],
                     (long long)pr->differ_b[1], p->rb->id, pr->asked_differ);
        }
    }
    trace_names_differ(r);
out:
    return rc;
}

void lt_compare_results_release(struct lt_compare_results *r)
{
    rside_free(r->sa);
    rside_free(r->sb);
    free(r->pairs);
    r->sa = r->sb = NULL;
    r->pairs = NULL;
}

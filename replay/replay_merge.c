/*
 * Merge per-rank replay results into one results file (replay_merge.h).
 *
 * Two passes over the parts: the first collects the run records (and what
 * each rank planned), counts every rank's results per run and its schedule
 * lag; the second writes the header, one merged run record per run, then
 * every part's results as they are (a result names its run, and the format
 * allows a run's results anywhere after its run record). Parts are read in
 * salvage mode so that a rank killed mid-frame still gives everything up to
 * its last intact frame (its writer closes a frame every 200 ms).
 */
#include "replay/replay_merge.h"

#include "base/lt_buf.h"
#include "traces/trace_results.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MERGE_MAX_RUNS 64 /* = LT_REPLAY_MAX_LEVELS: runs of one replay */

struct merged_run {
    bool have;
    char mode[16], target[1024], model[128], start[40], version[40];
    uint32_t conc;
    double rate, speed;
    uint32_t warmup;
};

struct rank_run {
    bool has_run;
    int64_t planned; /* -1: not said */
    uint64_t got;
};

struct rank_info {
    bool readable, cut;
    char why[600];
    bool has_off;
    int64_t clock_off_us;
    uint64_t results;
    int64_t *lag; /* sent - sched, µs, of every sent request */
    size_t nlag, caplag;
    struct rank_run runs[MERGE_MAX_RUNS];
};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void on_skip(void *ud, const char *what)
{
    struct rank_info *ri = ud;
    ri->cut = true;
    if (!ri->why[0])
        snprintf(ri->why, sizeof ri->why, "%s", what);
}

static void copy_str(char *dst, size_t cap, const char *s)
{
    snprintf(dst, cap, "%s", s ? s : "");
}

/* Pass 1 over one part. */
static int scan_part(const char *path, struct rank_info *ri, struct merged_run *runs,
                     struct lt_buf *meta, uint32_t *block_tokens, bool *have_header,
                     struct lt_err *err)
{
    struct lt_reader_opts ro = {.salvage = true, .on_skip = on_skip, .ud = ri};
    struct lt_err e = {0};
    struct lt_reader *r = lt_reader_open_kind(path, LT_KIND_RESULTS, &ro, &e);
    if (!r) {
        snprintf(ri->why, sizeof ri->why, "%s", e.msg);
        return 0;
    }
    ri->readable = true;
    const struct lt_header *h = lt_reader_header(r);
    if (!*have_header) {
        *have_header = true;
        *block_tokens = h->block_tokens;
        if (h->meta_len && lt_buf_append(meta, h->meta, h->meta_len) < 0) {
            lt_reader_close(r);
            return lt_errset(err, LT_ENOMEM, "out of memory");
        }
    }
    const struct lt_item *it;
    int n;
    while ((n = lt_reader_next(r, &it, &e)) == 1) {
        if (it->type == LT_ITEM_RUN) {
            const struct lt_run *run = &it->run;
            if (run->id >= MERGE_MAX_RUNS)
                continue;
            struct rank_run *rr = &ri->runs[run->id];
            struct merged_run *m = &runs[run->id];
            rr->has_run = true;
            if (!lt_extra_get_int(&run->extra, "planned", &rr->planned))
                rr->planned = -1;
            int64_t off;
            if (!ri->has_off && lt_extra_get_int(&run->extra, "clock_offset_us", &off)) {
                ri->has_off = true;
                ri->clock_off_us = off;
            }
            if (!m->have) {
                m->have = true;
                copy_str(m->mode, sizeof m->mode, run->mode);
                copy_str(m->target, sizeof m->target, run->target);
                copy_str(m->model, sizeof m->model, run->model);
                copy_str(m->start, sizeof m->start, run->start);
                copy_str(m->version, sizeof m->version, run->version);
                m->rate = run->rate;
                m->speed = run->speed;
                m->warmup = run->warmup;
            }
            m->conc += run->concurrency;
        } else if (it->type == LT_ITEM_RESULT) {
            const struct lt_result *res = &it->res;
            ri->results++;
            if (res->run < MERGE_MAX_RUNS)
                ri->runs[res->run].got++;
            if (res->has & LT_RHAS_SENT) {
                if (ri->nlag == ri->caplag) {
                    size_t nc = ri->caplag ? ri->caplag * 2 : 4096;
                    int64_t *l = realloc(ri->lag, nc * sizeof *l);
                    if (!l) {
                        lt_reader_close(r);
                        return lt_errset(err, LT_ENOMEM, "out of memory");
                    }
                    ri->lag = l;
                    ri->caplag = nc;
                }
                ri->lag[ri->nlag++] = res->sent - res->sched;
            }
        }
    }
    if (n < 0) { /* not salvageable (e.g. not seekable): keep what was read */
        ri->cut = true;
        snprintf(ri->why, sizeof ri->why, "%s", e.msg);
    }
    lt_reader_close(r);
    return 0;
}

/* Pass 2 over one part: copy its results and its scrape samples. */
static int copy_results(const char *path, struct lt_writer *w, struct lt_err *err)
{
    struct lt_reader_opts ro = {.salvage = true};
    struct lt_err e = {0};
    struct lt_reader *r = lt_reader_open_kind(path, LT_KIND_RESULTS, &ro, &e);
    if (!r)
        return 0; /* already reported as unreadable */
    const struct lt_item *it;
    int n, rc = 0;
    while ((n = lt_reader_next(r, &it, &e)) == 1) {
        if (it->type == LT_ITEM_RESULT)
            rc = lt_writer_put_result(w, &it->res, err);
        else if (it->type == LT_ITEM_SCRAPE)
            rc = lt_writer_put_scrape(w, &it->scr, err);
        else if (it->type == LT_ITEM_CHECK) /* each rank's: one per rank and run */
            rc = lt_writer_put_check(w, &it->chk, err);
        if (rc < 0)
            break;
    }
    lt_reader_close(r);
    return rc;
}

/* Run id's merged record: which ranks' requests are missing and how
 * many (missing_ranks: room for n), said on report too. Returns 1 when
 * some are missing, 0, or a negative code. */
static int put_merged_run(struct lt_writer *w, const struct merged_run *m, uint32_t id,
                          const struct rank_info *ri, size_t n, uint32_t *missing_ranks,
                          FILE *report, struct lt_err *err)
{
    /* What is missing: a rank that left no run record for this run
     * (unknown count), or fewer results than it planned. */
    int64_t missing = 0;
    uint32_t nmiss = 0, merged = 0;
    for (size_t k = 0; k < n; k++) {
        const struct rank_run *rr = &ri[k].runs[id];
        merged += rr->has_run;
        bool miss = !rr->has_run || (rr->planned >= 0 && rr->got < (uint64_t)rr->planned);
        if (!miss)
            continue;
        missing_ranks[nmiss++] = (uint32_t)k;
        if (!rr->has_run || missing < 0)
            missing = -1;
        else
            missing += rr->planned - (int64_t)rr->got;
    }
    struct lt_run_desc d = {
        .run = {.id = id,
                .mode = m->mode,
                .concurrency = m->conc,
                .rate = m->rate,
                .speed = m->speed,
                .target = m->target[0] ? m->target : NULL,
                .model = m->model[0] ? m->model : NULL,
                .start = m->start[0] ? m->start : NULL,
                .version = m->version[0] ? m->version : NULL,
                .warmup = m->warmup},
        .copied = true, /* the parts' start and version, absent when they had none */
        .merged = true,
        .ranks = (uint32_t)n,
        .merged_ranks = merged,
        .missing_ranks = missing_ranks,
        .n_missing = nmiss,
        .missing_requests = missing,
    };
    int rc = lt_results_put_run(w, &d, err);
    if (rc < 0)
        return rc;
    if (nmiss && report) {
        fprintf(report, "loadtrace replay: run %u: INCOMPLETE: ", id);
        if (missing >= 0)
            fprintf(report, "%lld requests missing, of rank", (long long)missing);
        else
            fprintf(report, "requests missing (how many is not known), of rank");
        for (size_t k = 0; k < n; k++) {
            const struct rank_run *rr = &ri[k].runs[id];
            if (!rr->has_run)
                fprintf(report, " %zu (all: no run record)", k);
            else if (rr->planned >= 0 && rr->got < (uint64_t)rr->planned)
                fprintf(report, " %zu (%lld of %lld)", k,
                        (long long)(rr->planned - (int64_t)rr->got), (long long)rr->planned);
        }
        fputs("\n", report);
    }
    return nmiss > 0;
}

int lt_replay_merge(const char *out_path, const char *const *parts, size_t n, FILE *report,
                    struct lt_err *err)
{
    int rc = 0;
    struct rank_info *ri = calloc(n ? n : 1, sizeof *ri);
    struct merged_run *runs = calloc(MERGE_MAX_RUNS, sizeof *runs);
    struct lt_buf meta;
    lt_buf_init(&meta, 1 << 20);
    uint32_t *missing_ranks = calloc(n ? n : 1, sizeof *missing_ranks);
    struct lt_writer *w = NULL;
    bool have_header = false, partial = false;
    uint32_t block_tokens = 0;
    if (!ri || !runs || !missing_ranks) {
        rc = lt_errset(err, LT_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t k = 0; k < n; k++)
        LT_TRY(scan_part(parts[k], &ri[k], runs, &meta, &block_tokens, &have_header, err));
    if (!have_header) {
        rc = lt_errset(err, LT_EIO, "no part could be read (%s: %s)", n ? parts[0] : "-",
                       n ? ri[0].why : "no parts");
        goto out;
    }
    struct lt_header h = {
        .kind = LT_KIND_RESULTS,
        .source = "replay",
        .block_tokens = block_tokens,
        .meta = meta.len ? (const uint8_t *)meta.p : NULL,
        .meta_len = meta.len,
    };
    struct lt_writer_opts wo = {.level = 3};
    w = lt_writer_open(out_path, &h, &wo, err);
    if (!w) {
        rc = err ? err->code : LT_EIO;
        goto out;
    }
    for (uint32_t id = 0; id < MERGE_MAX_RUNS; id++) {
        struct merged_run *m = &runs[id];
        if (!m->have)
            continue;
        int pr = put_merged_run(w, m, id, ri, n, missing_ranks, report, err);
        if (pr < 0) {
            rc = pr;
            goto out;
        }
        partial |= pr > 0;
    }
    for (size_t k = 0; k < n; k++)
        LT_TRY(copy_results(parts[k], w, err));
    rc = lt_writer_close(w, err);
    w = NULL;
    if (rc < 0)
        goto out;
    if (report) {
        fprintf(report, "loadtrace replay: merged %zu ranks -> %s\n", n, out_path);
        fprintf(report, "  rank  results  lag p50 ms  lag p99 ms  lag max ms  clock offset us\n");
        for (size_t k = 0; k < n; k++) {
            struct rank_info *x = &ri[k];
            if (!x->readable) {
                fprintf(report, "  %4zu  (no results: %s)\n", k, x->why);
                continue;
            }
            double p50 = 0, p99 = 0, mx = 0;
            if (x->nlag) {
                qsort(x->lag, x->nlag, sizeof *x->lag, cmp_i64);
                p50 = (double)x->lag[(x->nlag - 1) / 2] / 1e3;
                p99 = (double)x->lag[(size_t)((double)(x->nlag - 1) * 0.99)] / 1e3;
                mx = (double)x->lag[x->nlag - 1] / 1e3;
            }
            fprintf(report, "  %4zu  %7llu  %10.3f  %10.3f  %10.3f  %15lld%s\n", k,
                    (unsigned long long)x->results, p50, p99, mx,
                    (long long)(x->has_off ? x->clock_off_us : 0),
                    x->cut ? "  (file cut short: read up to its last intact frame)" : "");
        }
    }
    rc = partial ? 1 : 0;
out:
    if (w)
        lt_writer_close(w, NULL);
    for (size_t k = 0; ri && k < n; k++)
        free(ri[k].lag);
    free(ri);
    free(runs);
    lt_buf_release(&meta);
    free(missing_ranks);
    return rc;
}

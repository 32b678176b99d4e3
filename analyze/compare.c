/*
 * loadtrace compare (compare.h): which comparison two files ask for, then
 * its two steps, computing (compare_traces.c or compare_results.c) and
 * rendering (compare_render.c, compare_plot.c), with the chart directory
 * and the HTML page around them. docs/compare.md defines every statistic
 * and threshold.
 */
#include "analyze/compare_internal.h"
#include "base/lt_path.h"
#include "traces/trace_reader.h"

#include <stdlib.h>
#include <string.h>

void lt_compare_opts_defaults(struct lt_compare_opts *o)
{
    if (!o->sample)
        o->sample = 20000;
    if (!o->bootstrap)
        o->bootstrap = 1000;
    if (!o->seed)
        o->seed = 1;
    if (o->confidence <= 0 || o->confidence >= 1)
        o->confidence = 0.95;
    if (o->margin <= 0)
        o->margin = 0.05;
}

static int kind_of(const char *path, enum lt_kind *kind, struct lt_err *err)
{
    struct lt_reader *r = lt_reader_open(path, NULL, err);
    if (!r)
        return err && err->code < 0 ? err->code : LT_EIO;
    *kind = lt_reader_header(r)->kind;
    lt_reader_close(r);
    return 0;
}

/* Compute, fill sum, write the report to out and the charts to ctx (may be
 * NULL). A chart that failed gives LT_EIO after everything else is done. */
static int compare_traces(const char *pa, const char *pb, const struct lt_compare_opts *o,
                          FILE *out, struct lt_compare_summary *sum, struct lt_plot_ctx *ctx,
                          struct lt_err *err)
{
    struct lt_compare_traces t;
    int rc = lt_compare_traces_compute(&t, pa, pb, o, err);
    sum->skipped[0] = t.skipped_a;
    sum->skipped[1] = t.skipped_b;
    if (rc == 0) {
        sum->traces = true;
        sum->overall = t.overall;
        sum->properties = t.compared;
        sum->different = t.different;
        if (o->json)
            lt_compare_traces_write_json(&t, out);
        else
            lt_compare_traces_write_text(&t, out);
        if (ctx)
            rc = lt__compare_traces_charts(&t, ctx, err);
    }
    lt_compare_traces_release(&t);
    return rc;
}

static int compare_results(const char *pa, const char *pb, const struct lt_compare_opts *o,
                           FILE *out, struct lt_compare_summary *sum, struct lt_plot_ctx *ctx,
                           struct lt_err *err)
{
    struct lt_compare_results r;
    int rc = lt_compare_results_compute(&r, pa, pb, o, err);
    sum->skipped[0] = r.skipped_a;
    sum->skipped[1] = r.skipped_b;
    if (rc == 0) {
        sum->traces = false;
        sum->properties = r.compared;
        sum->different = r.worse;
        sum->better = r.better;
        sum->twin = r.twin;
        sum->twin_misses = r.twin_misses;
        sum->pairs = r.n_pairs;
        sum->traces_differ = r.traces_differ;
        if (o->json)
            lt_compare_results_write_json(&r, out);
        else
            lt_compare_results_write_text(&r, out);
        if (ctx)
            rc = lt__compare_results_charts(&r, ctx, err);
    }
    lt_compare_results_release(&r);
    return rc;
}

/* The chart context: dir, or a temporary directory for --html alone. */
static int ctx_open(struct lt_plot_ctx **pctx, const struct lt_compare_opts *o, char *tmpdir,
                    struct lt_plot_report *rep, struct lt_err *err)
{
    struct lt_plot_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return lt_errset(err, LT_ENOMEM, "out of memory");
    *pctx = ctx;
    ctx->rep = rep;
    ctx->gnuplot = -1;
    if (o->plots_dir) {
        int rc = lt_plot_make_dir(o->plots_dir, err);
        if (rc < 0)
            return rc;
        ctx->dir = o->plots_dir;
    } else {
        int rc = lt_path_tempdir(tmpdir, 4096, "loadtrace-plots", err);
        if (rc < 0)
            return rc;
        ctx->dir = tmpdir;
        ctx->temp_dir = true; /* the HTML names no file in it */
    }
    return 0;
}

/* Hand the charts' outcome to sum, remove a temporary directory, free. */
static void ctx_close(struct lt_plot_ctx *ctx, const char *tmpdir, const struct lt_plot_report *rep,
                      struct lt_compare_summary *sum)
{
    if (!ctx)
        return;
    sum->charts = rep->charts;
    sum->gnuplot_missing = ctx->gnuplot == 0;
    for (uint32_t i = 0; i < rep->n_notes && sum->n_notes < 8; i++)
        snprintf(sum->notes[sum->n_notes++], sizeof sum->notes[0], "%s", rep->notes[i]);
    if (ctx->dir == tmpdir)
        lt_plot_remove_charts(ctx);
    free(ctx);
}

/* The page is written whole or not at all (lt_path_out); its title names
 * the two files, not their directories, which made it wrap on a phone. */
static int write_html(const char *path_a, const char *path_b, const char *html_path,
                      const char *text, const struct lt_plot_ctx *ctx, struct lt_err *err)
{
    struct lt_path_out o;
    int rc = lt_path_out_begin(&o, html_path, err);
    if (rc < 0)
        return rc;
    char title[1200];
    const char *a = strrchr(path_a, '/'), *b = strrchr(path_b, '/');
    snprintf(title, sizeof title, "loadtrace compare: %s vs %s", a ? a + 1 : path_a,
             b ? b + 1 : path_b);
    rc = lt_analyze_write_html(NULL, title, text ? text : "", ctx, o.f, err);
    if (rc == 0)
        return lt_path_out_commit(&o, err);
    lt_path_out_abort(&o);
    return rc;
}

int lt_compare_files(const char *path_a, const char *path_b, const struct lt_compare_opts *opts,
                     FILE *out, struct lt_compare_summary *sum, struct lt_err *err)
{
    int rc = 0;
    struct lt_compare_opts o = opts ? *opts : (struct lt_compare_opts){0};
    lt_compare_opts_defaults(&o);
    memset(sum, 0, sizeof *sum);
    enum lt_kind ka, kb;
    struct lt_plot_ctx *ctx = NULL;
    struct lt_plot_report rep;
    memset(&rep, 0, sizeof rep);
    char *text = NULL;
    size_t text_len = 0;
    FILE *body = NULL;
    char tmpdir[4096] = "";
    LT_TRY(kind_of(path_a, &ka, err));
    LT_TRY(kind_of(path_b, &kb, err));
    if (ka != kb) {
        rc = lt_errset(err, LT_EINVAL,
                       "%s is a %s file but %s is a %s file: compare two traces "
                       "or two results files",
                       path_a, ka == LT_KIND_TRACE ? "trace" : "results", path_b,
                       kb == LT_KIND_TRACE ? "trace" : "results");
        goto out;
    }
    if (o.twin && ka == LT_KIND_TRACE) {
        rc = lt_errset(err, LT_EINVAL,
                       "--twin compares results with results (a live run and its "
                       "prediction); %s and %s are traces",
                       path_a, path_b);
        goto out;
    }
    if (o.plots_dir || o.html_path)
        LT_TRY(ctx_open(&ctx, &o, tmpdir, &rep, err));
    /* With --html the report is also kept as text for the page. */
    FILE *dst = out;
    if (o.html_path) {
        body = open_memstream(&text, &text_len);
        if (!body) {
            rc = lt_errset(err, LT_ENOMEM, "out of memory");
            goto out;
        }
        dst = body;
    }
    int crc = ka == LT_KIND_TRACE ? compare_traces(path_a, path_b, &o, dst, sum, ctx, err)
                                  : compare_results(path_a, path_b, &o, dst, sum, ctx, err);
    if (body) {
        fclose(body);
        body = NULL;
        if (text)
            fputs(text, out);
    }
    if (crc < 0 && crc != LT_EIO) {
        rc = crc;
        goto out;
    }
    if (o.html_path)
        LT_TRY(write_html(path_a, path_b, o.html_path, text, ctx, err));
    rc = crc;
out:
    if (body)
        fclose(body);
    free(text);
    ctx_close(ctx, tmpdir, &rep, sum);
    return rc;
}

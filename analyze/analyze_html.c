/*
 * The HTML report (analyze_plot.h): one self-contained page, so it can be
 * mailed or attached to a ticket as is. Tables are HTML; charts are the SVG
 * files gnuplot rendered, inlined (no external files, no scripts).
 *
 * The page answers first: under the title, the table of what each level
 * gave and cost (throughput, TTFT/TPOT/E2E p50 and p99, goodput when SLOs
 * are given, Ok) with the knee marked, then the throughput and latency-
 * against-throughput charts. The distributions follow, then each level's
 * details in a collapsible section, then the full text report (also
 * collapsed). It reads on a phone: a viewport, tables that scroll in their
 * own box, charts that keep a legible size and scroll when the screen is
 * narrower.
 */
#include "analyze/analyze_internal.h"
#include "analyze/analyze_plot.h"
#include "analyze/analyze_server.h"
#include "base/lt_buf.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void esc(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '&':
            fputs("&amp;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        default:
            fputc(*s, out);
        }
    }
}

/* Charts are drawn 480 px wide with 12 px text (the SVG; the PNG files are
 * larger): shown up to 700 px wide, and at a phone's width (about 390 px
 * in a level's section) their text is still drawn at 9.5 px or more. */
static const char css[] =
    "*{box-sizing:border-box}\n"
    "body{font-family:system-ui,sans-serif;max-width:1100px;margin:1em auto;color:#111;"
    "padding:0 1em;line-height:1.35}\n"
    "h1{font-size:1.45em;margin:.2em 0}h2{font-size:1.2em;margin:1.4em 0 .4em}\n"
    /* Titles and captions carry file paths, which have no spaces to break at:
     * without this a long path widens the whole page on a phone. */
    "h1,h2,.sub,.note,figcaption,summary{overflow-wrap:anywhere}\n"
    ".sub{color:#444;margin:.2em 0 .8em}.note{color:#444;font-size:90%}\n"
    ".scroll{overflow-x:auto;max-width:100%}\n"
    "table{border-collapse:collapse;margin:.3em 0 .6em;font-variant-numeric:tabular-nums}\n"
    "th,td{border:1px solid #bbb;padding:3px 7px;text-align:right;white-space:nowrap}\n"
    "th{background:#eee;vertical-align:bottom}td.l,th.l{text-align:left}\n"
    "tr.knee td{background:#fff1c2;font-weight:600}\n"
    "p.note{border-left:6px solid #888;padding:.2em .6em;background:#f4f4f4}\n"
    "p.verdict{font-size:1.35em;font-weight:700;margin:.6em 0;padding:.4em .6em;"
    "border-left:6px solid #2b6cb0;background:#eef4fb}\n"
    "figure{margin:1em 0;overflow-x:auto}figcaption{color:#444;font-size:90%}\n"
    "figure svg{display:block;width:100%;max-width:700px;height:auto}\n"
    "details{margin:.5em 0;border:1px solid #ccc;border-radius:4px;padding:.3em .7em}\n"
    "summary{cursor:pointer;font-weight:600}\n"
    "pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:85%}\n"
    ".warn{color:#a00}.answer{font-size:110%;margin:.4em 0 .8em}\n"
    "@media (max-width:600px){body{padding:0 .5em}h1{font-size:1.2em}"
    "th,td{padding:2px 4px;font-size:13px}details{padding:.3em .4em}}\n";

/* A latency in ms from microseconds, or a blank cell when there is none. */
static void cell_ms(FILE *out, const struct lt_hist *h, double p)
{
    if (lt_hist_count(h))
        fprintf(out, "<td>%.1f</td>", lt_analyze_pct(h, p) / 1e3);
    else
        fprintf(out, "<td></td>");
}

/* The summary: one row per level, in the sweep's order, knee marked. */
static void summary(const struct lt_analyze *a, FILE *out)
{
    bool dec = a->opts.perreq == LT_ANALYZE_PERREQ_DECODE;
    const char *axis = !a->sweep_axis ? "Level" : a->sweep_axis[0] == 'c' ? "C" : "Rate (req/s)";
    char slo[128];
    lt__analyze_slo_text(&a->opts, slo, sizeof slo);
    fprintf(out,
            "<div class=scroll>\n<table id=summary>\n<tr><th class=l rowspan=2>%s</th>"
            "<th colspan=2>tok/s</th><th colspan=2>TTFT (ms)</th><th colspan=2>TPOT (ms)</th>"
            "<th colspan=2>E2E (ms)</th>",
            axis);
    if (*slo) {
        fprintf(out, "<th rowspan=2>Goodput (req/s)<br>");
        esc(out, slo);
        fprintf(out, "</th>");
    }
    fprintf(out,
            "<th rowspan=2>Ok</th></tr>\n<tr><th>aggregate</th><th>per req%s</th><th>p50</th>"
            "<th>p99</th><th>p50</th><th>p99</th><th>p50</th><th>p99</th></tr>\n",
            dec ? "" : " (e2e)");
    uint32_t order[LT_ANALYZE_RUNS_MAX], n = lt__analyze_run_order(a, order);
    for (uint32_t k = 0; k < n; k++) {
        const struct lt_analyze_run *r = a->runs[order[k]];
        bool knee = a->knee >= 0 && k == (uint32_t)a->knee && k < a->n_points;
        char brk[256];
        if (k && lt__analyze_engine_break(a->runs[order[k - 1]], r, brk, sizeof brk)) {
            fprintf(out, "<tr><td class=l colspan=%d><i>", 9 + (*slo ? 1 : 0) + 1);
            esc(out, brk);
            fprintf(out, "</i></td></tr>\n");
        }
        char lev[48];
        if (a->sweep_axis && k < a->n_points)
            snprintf(lev, sizeof lev, "%.4g", a->points[k].x);
        else
            lt__analyze_level(r, lev, sizeof lev);
        fprintf(out, "<tr%s><td class=l>", knee ? " class=knee" : "");
        esc(out, lev);
        if (lt_analyze_check_flagged(r)) /* its figures are in doubt: said above the table */
            fprintf(out, " <span class=warn>CHECK</span>");
        fprintf(out, "%s</td><td>%.1f</td><td>%.1f</td>", knee ? " &#9664; knee" : "", r->agg_tps,
                dec ? r->perreq_decode : r->perreq_e2e);
        static const enum lt_analyze_metric m[3] = {LT_AM_TTFT, LT_AM_TPOT, LT_AM_E2E};
        for (int i = 0; i < 3; i++) {
            cell_ms(out, r->h[m[i]], 50);
            cell_ms(out, r->h[m[i]], 99);
        }
        if (*slo)
            fprintf(out, "<td>%.3f</td>", r->goodput);
        fprintf(out, "<td>%llu/%llu</td></tr>\n", (unsigned long long)r->ok,
                (unsigned long long)r->measured);
    }
    fprintf(out, "</table>\n</div>\n");
    if (a->sweep_axis) {
        char knee[300];
        lt__analyze_knee_text(a, knee, sizeof knee);
        knee[0] = (char)(knee[0] == 'k' ? 'K' : knee[0] == 'n' ? 'N' : knee[0]);
        fprintf(out, "<p>");
        esc(out, knee);
        fprintf(out, ".</p>\n");
    }
    fprintf(out,
            "<p class=note>Aggregate tok/s = &Sigma; out over Ok requests / (last end &minus; "
            "first send); per request = mean of %s over Ok requests. Latencies from the send "
            "time; the details below also give them from the scheduled time. Definitions: "
            "docs/metrics.md.</p>\n",
            dec ? "(out &minus; 1) / (E2E &minus; TTFT)" : "out / E2E");
}

/* One level's latency table: every measure at p50..p99, max. */
static void latency_table(const struct lt_analyze_run *r, FILE *out)
{
    static const struct {
        enum lt_analyze_metric m;
        const char *label;
    } rows[] = {{LT_AM_TTFT, "TTFT"},       {LT_AM_TTFT_S, "TTFT from sched"},
                {LT_AM_TTFC, "TTFC"},       {LT_AM_TTFC_S, "TTFC from sched"},
                {LT_AM_ITL, "ITL"},         {LT_AM_TPOT, "TPOT"},
                {LT_AM_E2E, "E2E"},         {LT_AM_E2E_S, "E2E from sched"},
                {LT_AM_LAG, "schedule lag"}};
    static const double ps[] = {50, 90, 95, 99};
    fprintf(out, "<div class=scroll>\n<table>\n<tr><th class=l>latency (ms)</th><th>n</th>"
                 "<th>mean</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>max</th>"
                 "</tr>\n");
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        const struct lt_hist *h = r->h[rows[k].m];
        uint64_t n = lt_hist_count(h);
        fprintf(out, "<tr><td class=l>%s</td><td>%llu</td>", rows[k].label, (unsigned long long)n);
        if (!n) {
            fprintf(out, "<td></td><td></td><td></td><td></td><td></td><td></td></tr>\n");
            continue;
        }
        fprintf(out, "<td>%.2f</td>", lt_hist_mean(h) / 1e3);
        for (int p = 0; p < 4; p++)
            fprintf(out, "<td>%.2f</td>", lt_analyze_pct(h, ps[p]) / 1e3);
        fprintf(out, "<td>%.2f</td></tr>\n", (double)lt_hist_max(h) / 1e3);
    }
    fprintf(out, "</table>\n</div>\n");
}

/* Write an SVG with every id (and every reference to one) prefixed, so that
 * several gnuplot SVGs, which all name their markers gpPt0, gpPt1, ..., can
 * sit in one page without duplicate ids. */
static void put_prefixed(FILE *out, const char *s, const char *prefix)
{
    static const char *const pats[] = {"id='", "id=\"", "href='#", "href=\"#", "url(#"};
    while (*s) {
        size_t k = 0, len = 0;
        for (; k < sizeof pats / sizeof pats[0]; k++) {
            len = strlen(pats[k]);
            if (!strncmp(s, pats[k], len))
                break;
        }
        if (k < sizeof pats / sizeof pats[0]) {
            fwrite(s, 1, len, out);
            fputs(prefix, out);
            s += len;
        } else {
            fputc(*s++, out);
        }
    }
}

static int inline_svg(FILE *out, const char *path, const char *prefix, struct lt_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return lt_errset(err, LT_EIO, "cannot read %s: %s", path, strerror(errno));
    struct lt_buf b;
    lt_buf_init(&b, (size_t)1 << 26);
    char tmp[65536];
    size_t n;
    int rc = 0;
    while (rc == 0 && (n = fread(tmp, 1, sizeof tmp, f)) > 0)
        rc = lt_buf_append(&b, tmp, n);
    fclose(f);
    if (rc == 0 && b.p) {
        /* Drop the XML prolog and doctype: inline SVG starts at <svg. */
        const char *s = strstr(b.p, "<svg");
        put_prefixed(out, s ? s : b.p, prefix);
    }
    lt_buf_release(&b);
    return rc < 0 ? lt_errset(err, rc, "%s is too large to inline", path) : 0;
}

/* Chart k of ctx as a figure: its SVG inline, or why there is none. */
static int figure(FILE *out, const struct lt_plot_ctx *ctx, uint32_t k, struct lt_err *err)
{
    fprintf(out, "<figure id=\"%s\">\n", ctx->names[k]);
    if (ctx->rendered[k]) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.svg", ctx->dir, ctx->names[k]);
        char prefix[24];
        snprintf(prefix, sizeof prefix, "c%u_", k);
        int rc = inline_svg(out, path, prefix, err);
        if (rc < 0)
            return rc;
    } else {
        fprintf(out, "<p class=warn>Not drawn: gnuplot failed. Its data and script are ");
        esc(out, ctx->dir);
        fprintf(out, "/%s.dat and .gp.</p>\n", ctx->names[k]);
    }
    fprintf(out, "<figcaption>");
    esc(out, ctx->captions[k]);
    fprintf(out, "</figcaption>\n</figure>\n");
    return 0;
}

/* The charts of ctx that belong to run (index + 1; 0: the whole analysis)
 * and whose name starts with one of the prefixes (NULL: any). */
static int figures(FILE *out, const struct lt_plot_ctx *ctx, uint32_t run,
                   const char *const *prefixes, bool *done, struct lt_err *err)
{
    for (uint32_t k = 0; ctx && k < ctx->n; k++) {
        /* without gnuplot there is no figure: one note says so (missing()) */
        if (done[k] || ctx->run_of[k] != run || ctx->sparse[k] || ctx->gnuplot == 0)
            continue;
        bool match = !prefixes;
        for (const char *const *p = prefixes; p && *p && !match; p++)
            match = !strncmp(ctx->names[k], *p, strlen(*p));
        if (!match)
            continue;
        done[k] = true;
        int rc = figure(out, ctx, k, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Without gnuplot, one note instead of a figure per chart; it names the
 * chart files only when they are kept (--plots DIR, not a temporary
 * directory that is gone by the time the page is read). */
static void missing(FILE *out, const struct lt_plot_ctx *ctx)
{
    if (!ctx || !ctx->n || ctx->gnuplot != 0)
        return;
    fprintf(out, "<p class=warn>Charts not drawn: gnuplot is not installed (apt-get install "
                 "gnuplot-nox). ");
    if (ctx->temp_dir) {
        fprintf(out, "With --plots DIR, their data and gnuplot scripts are kept.</p>\n");
    } else {
        fprintf(out, "Their data and gnuplot scripts are in ");
        esc(out, ctx->dir);
        fprintf(out, " (NAME.dat, NAME.gp; e.g. %s.dat and .gp).</p>\n", ctx->names[0]);
    }
}

/* Level r's details, collapsed: its latencies, errors and charts over time. */
/* A capacity search's answer and probes (analyze_capacity.c's text), and
 * its chart. */
static int capacity(const struct lt_analyze *a, const struct lt_plot_ctx *ctx, bool *done,
                    FILE *out, struct lt_err *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        return lt_errset(err, LT_ENOMEM, "out of memory");
    lt_analyze_capacity_text(a, mem);
    int rc = fclose(mem) == 0 ? 0 : lt_errset(err, LT_ENOMEM, "out of memory");
    if (rc == 0 && len > 1) {
        fprintf(out, "<h2>Capacity</h2>\n<pre>");
        esc(out, text + 1); /* the text section opens with a blank line */
        fprintf(out, "</pre>\n");
        static const char *const names[] = {"capacity", NULL};
        rc = figures(out, ctx, 0, names, done, err);
    }
    free(text);
    return rc;
}

/* A capacity search's answer, one sentence per engine, under the title: it
 * is what the search was run for, so it is the first thing read; the
 * probes and their chart follow in the Capacity section. */
static void capacity_answer(const struct lt_analyze *a, FILE *out)
{
    static const char *const engines[] = {"live", "virtual"};
    for (int e = 0; e < 2; e++) {
        struct lt_analyze_capacity c;
        if (!lt_analyze_capacity(a, engines[e], &c))
            continue;
        const char *unit = !strcmp(c.axis, "rate") ? " req/s" : " in flight";
        fprintf(out, "<p class=answer id=capacity-answer>Capacity (%s): ", engines[e]);
        if (c.max_ok > 0)
            fprintf(out, "<b>%.4g%s</b> meets", c.max_ok, unit);
        else
            fprintf(out, "<b>no load probed</b> meets");
        fprintf(out, " the SLO ");
        esc(out, c.slo);
        fprintf(out, " for %.3g %% of requests", 100 * c.target);
        if (c.min_fail > 0)
            fprintf(out, "; %.4g%s does not", c.min_fail, unit);
        fprintf(out, " (%u probes; see Capacity below).</p>\n", c.probes);
    }
}

static int level_details(const struct lt_analyze *a, uint32_t ri, const struct lt_plot_ctx *ctx,
                         bool *done, FILE *out, struct lt_err *err)
{
    const struct lt_analyze_run *r = a->runs[ri];
    char lev[48];
    lt__analyze_level(r, lev, sizeof lev);
    fprintf(out, "<details>\n<summary>");
    esc(out, lev);
    fprintf(out, " &mdash; %llu/%llu Ok", (unsigned long long)r->ok,
            (unsigned long long)r->measured);
    if (lt_hist_count(r->h[LT_AM_E2E]))
        fprintf(out, ", E2E p50 %.0f ms", lt_analyze_pct(r->h[LT_AM_E2E], 50) / 1e3);
    fprintf(out, "</summary>\n<p class=note>Run %u", r->id);
    if (a->n_files > 1)
        fprintf(out, " of file %u", r->file + 1);
    if (r->mode[0]) {
        fprintf(out, ", mode ");
        esc(out, r->mode);
    }
    if (r->target[0]) {
        fprintf(out, ", target ");
        esc(out, r->target);
    }
    fprintf(out, "; %llu requests measured (%llu warm-up excluded), %.1f s of wall time.</p>\n",
            (unsigned long long)r->measured, (unsigned long long)r->warmup, r->wall_s);
    latency_table(r, out);
    if (r->n_errs || r->errs_other) {
        fprintf(out, "<p>Errors:");
        for (uint32_t e = 0; e < r->n_errs; e++) {
            fprintf(out, " ");
            esc(out, r->errs[e].name);
            fprintf(out, " %llu", (unsigned long long)r->errs[e].n);
        }
        if (r->errs_other)
            fprintf(out, " other %llu", (unsigned long long)r->errs_other);
        fprintf(out, "</p>\n");
    }
    if (r->srv) { /* the server's side: the text report's section, as it reads there */
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        if (m) {
            lt_analyze_server_text(r, m);
            if (fclose(m) == 0 && buf) {
                fprintf(out, "<pre>");
                esc(out, buf);
                fprintf(out, "</pre>\n");
            }
            free(buf);
        }
    }
    if (r->fleet) { /* a fleet: each replica's row, as the text report has it */
        fprintf(out, "<table>\n<tr><th>#</th><th>replica</th><th>requests</th><th>errors</th>"
                     "<th>in tokens</th><th>out tokens</th><th>in flight</th><th>peak</th>"
                     "<th>TTFT p50 ms</th><th>TTFT p99 ms</th><th>hit rate</th></tr>\n");
        for (uint32_t i = 0; i < r->fleet->n; i++) {
            const struct lt_analyze_replica *p = &r->fleet->r[i];
            fprintf(out, "<tr><td>%u</td><td>", (unsigned)i);
            esc(out, p->label);
            fprintf(out,
                    "</td><td>%llu</td><td>%llu</td><td>%llu</td><td>%llu</td><td>%.2f</td>"
                    "<td>%u</td><td>%.1f</td><td>%.1f</td><td>",
                    (unsigned long long)p->requests, (unsigned long long)p->errors,
                    (unsigned long long)p->in_tokens, (unsigned long long)p->out_tokens,
                    p->inflight_mean, (unsigned)p->inflight_peak, p->ttft_p50, p->ttft_p99);
            if (p->hit_from)
                fprintf(out, "%.1f %% (%s)", 100 * p->hit_rate, p->hit_from);
            else
                fprintf(out, "-");
            fprintf(out, "</td></tr>\n");
        }
        fprintf(out, "</table>\n<p>Fleet: route ");
        esc(out, r->fleet->route[0] ? r->fleet->route : "?");
        fprintf(out, ", %s; load balance (max/mean requests) %.2f.</p>\n",
                r->fleet->failover ? "failover on" : "failures recorded as errors",
                r->fleet->balance);
    }
    /* Charts with too few points are not drawn here; say why. */
    bool short_run = false, few_ends = false;
    for (uint32_t k = 0; ctx && k < ctx->n; k++)
        if (ctx->run_of[k] == ri + 1 && ctx->sparse[k]) {
            short_run |= !strncmp(ctx->names[k], "timeseries", 10);
            few_ends |= !strncmp(ctx->names[k], "pct_time", 8);
        }
    if (short_run)
        fprintf(out,
                "<p class=note>The run is too short for charts over time (%u bucket%s of "
                "%g s); the table above has its figures.</p>\n",
                r->ts.n, r->ts.n == 1 ? "" : "s", r->ts.width_us / 1e6);
    else if (few_ends)
        fprintf(out,
                "<p class=note>Requests ended in fewer than 3 of "
                "the %u buckets: too few points for a chart of latency over time; the table "
                "above has the percentiles.</p>\n",
                r->ts.n);
    int rc = figures(out, ctx, ri + 1, NULL, done, err);
    fprintf(out, "</details>\n");
    return rc;
}

int lt_analyze_write_html(const struct lt_analyze *a, const char *title, const char *pre_text,
                          const struct lt_plot_ctx *ctx, FILE *out, struct lt_err *err)
{
    int rc = 0;
    bool *done = calloc(LT_PLOT_CHARTS_MAX, sizeof *done);
    if (!done)
        return lt_errset(err, LT_ENOMEM, "out of memory");
    fprintf(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                 "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                 "<meta name=\"generator\" content=\"loadtrace " LT_VERSION "\">\n"
                 "<title>");
    esc(out, title);
    fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>", css);
    esc(out, title);
    fprintf(out, "</h1>\n");
    if (a) {
        fprintf(out, "<p class=sub>");
        esc(out, a->path);
        if (a->n_files > 1)
            fprintf(out, " and %u more file%s", a->n_files - 1, a->n_files == 2 ? "" : "s");
        fprintf(out, ": %u run%s, %llu results; warm-up %s.</p>\n", a->n_runs,
                a->n_runs == 1 ? "" : "s", (unsigned long long)a->results,
                a->opts.include_warmup ? "included" : "excluded");
        char fl[LT_ANALYZE_FLAGS_MAX][LT_ANALYZE_FLAG_LEN];
        int nf = lt_analyze_check_flags(a, fl, LT_ANALYZE_FLAGS_MAX);
        for (int i = 0; i < nf; i++) {
            fprintf(out, "<p class=warn>");
            esc(out, fl[i]);
            fprintf(out, "</p>\n");
        }
        /* what the text report says at its top beside the flags: a run
         * stopped before its end, a load beyond the server */
        for (uint32_t i = 0; i < a->n_runs; i++) {
            const struct lt_analyze_run *r = a->runs[i];
            char lev[48], line[2 * LT_ANALYZE_FLAG_LEN];
            lt__analyze_level(r, lev, sizeof lev);
            if (r->unsent || (r->n_checks && r->check.stopped_by)) {
                lt_analyze_stop_line(r, line, sizeof line);
                fprintf(out, "<p class=note>STOPPED run %u (", r->id);
                esc(out, lev);
                fprintf(out, "): ");
                esc(out, line);
                fprintf(out, "</p>\n");
            }
            if (lt_analyze_overload(r, line, sizeof line)) {
                fprintf(out, "<p class=warn>OVERLOADED run %u (", r->id);
                esc(out, lev);
                fprintf(out, "): ");
                esc(out, line);
                fprintf(out, "</p>\n");
            }
        }
        capacity_answer(a, out);
        summary(a, out);
        missing(out, ctx);
        static const char *const sweep[] = {"throughput", "pareto", NULL};
        LT_TRY(figures(out, ctx, 0, sweep, done, err));
        LT_TRY(capacity(a, ctx, done, out, err));
        bool dist = false;
        for (uint32_t k = 0; ctx && k < ctx->n; k++)
            dist |= !done[k] && ctx->run_of[k] == 0 && ctx->gnuplot != 0;
        if (dist) {
            fprintf(out, "<h2>Distributions</h2>\n");
            LT_TRY(figures(out, ctx, 0, NULL, done, err));
        }
        fprintf(out, "<h2>Details per level</h2>\n");
        uint32_t order[LT_ANALYZE_RUNS_MAX], n = lt__analyze_run_order(a, order);
        for (uint32_t i = 0; i < n; i++)
            LT_TRY(level_details(a, order[i], ctx, done, out, err));
        char *buf = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&buf, &len);
        if (!mem) {
            rc = lt_errset(err, LT_ENOMEM, "out of memory");
            goto out;
        }
        struct lt_analyze copy = *a;
        copy.opts.details = true;
        lt_analyze_write_text(&copy, mem, NULL);
        fclose(mem);
        fprintf(out, "<details>\n<summary>Full text report</summary>\n<pre>");
        esc(out, buf ? buf : "");
        fprintf(out, "</pre>\n</details>\n");
        free(buf);
    } else {
        /* compare: its verdict as the page's headline (the text report's
         * "overall:" or "verdict:" line, which a reader must not have to
         * find in the block below), its report, then the charts */
        for (const char *l = pre_text; l && *l;) {
            const char *e = strchr(l, '\n');
            size_t len = e ? (size_t)(e - l) : strlen(l);
            if ((len > 9 && !strncmp(l, "overall: ", 9)) ||
                (len > 9 && !strncmp(l, "verdict: ", 9))) {
                char line[1024];
                size_t c = len - 9 < sizeof line - 1 ? len - 9 : sizeof line - 1;
                memcpy(line, l + 9, c);
                line[c] = '\0';
                fprintf(out, "<p class=verdict id=verdict>");
                esc(out, line);
                fprintf(out, "</p>\n");
            }
            l = e ? e + 1 : l + len;
        }
        if (pre_text) {
            fprintf(out, "<pre id=summary>");
            esc(out, pre_text);
            fprintf(out, "</pre>\n");
        }
        missing(out, ctx);
        LT_TRY(figures(out, ctx, 0, NULL, done, err));
    }
    fprintf(out, "<p><small>Made by loadtrace %s", LT_VERSION);
    if (a)
        fprintf(out, "; histogram precision %.3g %%", 100.0 / (double)(1u << a->opts.hist_bits));
    fprintf(out, ".</small></p>\n</body>\n</html>\n");
out:
    free(done);
    if (rc == 0 && ferror(out))
        rc = lt_errset(err, LT_EIO, "writing the HTML report failed");
    return rc;
}

/*
 * The HTML report (analyze_plot.h): one self-contained page, so it can be
 * mailed or attached to a ticket as is. Tables are HTML; charts are the SVG
 * files gnuplot rendered, inlined (no external files, no scripts); the full
 * terminal report follows in a <pre> for everything the tables leave out.
 */
#include "analyze/analyze_plot.h"
#include "traces/lt_buf.h"

#include <errno.h>
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

static const char css[] =
    "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#111;"
    "padding:0 1em}\n"
    "table{border-collapse:collapse;margin:0.5em 0 1.5em}\n"
    "th,td{border:1px solid #bbb;padding:3px 8px;text-align:right}\n"
    "th{background:#eee}td.l,th.l{text-align:left}\n"
    "figure{margin:1.5em 0}figcaption{color:#444;font-size:90%}\n"
    "svg{max-width:100%;height:auto}\n"
    "pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:85%}\n"
    ".warn{color:#a00}\n";

static void run_label(const struct lt_analyze_run *r, char *buf, size_t n)
{
    if (r->concurrency)
        snprintf(buf, n, "%u", r->concurrency);
    else if (r->rate > 0)
        snprintf(buf, n, "rate %g/s", r->rate);
    else if (r->speed > 0)
        snprintf(buf, n, "x%g", r->speed);
    else
        snprintf(buf, n, "run %u", r->id);
}

static void tables(const struct lt_analysis *a, FILE *out)
{
    fprintf(out, "<h2>Runs</h2>\n<table>\n<tr><th>C</th><th>Agg tok/s</th>"
                 "<th>Per-req tok/s (decode)</th><th>Per-req tok/s (e2e)</th><th>Tokens</th>"
                 "<th>Wall (s)</th><th>Ok</th><th>Goodput (req/s)</th></tr>\n");
    for (uint32_t i = 0; i < a->n_runs; i++) {
        const struct lt_analyze_run *r = a->runs[i];
        char lab[48];
        run_label(r, lab, sizeof lab);
        fprintf(out, "<tr><td>");
        esc(out, lab);
        fprintf(out,
                "</td><td>%.1f</td><td>%.1f</td><td>%.1f</td><td>%llu</td><td>%.2f</td>"
                "<td>%llu/%llu</td><td>%.3f</td></tr>\n",
                r->agg_tps, r->perreq_decode, r->perreq_e2e, (unsigned long long)r->tokens,
                r->wall_s, (unsigned long long)r->ok, (unsigned long long)r->measured, r->goodput);
    }
    fprintf(out, "</table>\n<p>Agg tok/s = &Sigma; out over Ok requests / (last end &minus; first "
                 "send); per-request decode = mean of (out &minus; 1) / (E2E &minus; TTFT); "
                 "per-request e2e = mean of out / E2E. Definitions: docs/metrics.md.</p>\n");
    static const struct {
        enum lt_analyze_metric m;
        const char *label;
    } rows[] = {{LT_AM_TTFT, "TTFT"},       {LT_AM_TTFT_S, "TTFT from sched"},
                {LT_AM_TTFC, "TTFC"},       {LT_AM_TTFC_S, "TTFC from sched"},
                {LT_AM_ITL, "ITL"},         {LT_AM_TPOT, "TPOT"},
                {LT_AM_E2E, "E2E"},         {LT_AM_E2E_S, "E2E from sched"},
                {LT_AM_LAG, "schedule lag"}};
    static const double ps[] = {50, 90, 95, 99};
    for (uint32_t i = 0; i < a->n_runs; i++) {
        const struct lt_analyze_run *r = a->runs[i];
        char lab[48];
        run_label(r, lab, sizeof lab);
        fprintf(out, "<h3>Run %u (C ", r->id);
        esc(out, lab);
        fprintf(out, "): latency, ms</h3>\n<table>\n<tr><th class=l>metric</th><th>n</th>"
                     "<th>mean</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>max</th>"
                     "</tr>\n");
        for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
            const struct lt_hist *h = r->h[rows[k].m];
            fprintf(out, "<tr><td class=l>%s</td><td>%llu</td><td>%.2f</td>", rows[k].label,
                    (unsigned long long)lt_hist_count(h), lt_hist_mean(h) / 1e3);
            for (int p = 0; p < 4; p++)
                fprintf(out, "<td>%.2f</td>", lt_analyze_pct(h, ps[p]) / 1e3);
            fprintf(out, "<td>%.2f</td></tr>\n", (double)lt_hist_max(h) / 1e3);
        }
        fprintf(out, "</table>\n");
        if (r->n_errs) {
            fprintf(out, "<p>Errors:");
            for (uint32_t e = 0; e < r->n_errs; e++) {
                fprintf(out, " ");
                esc(out, r->errs[e].name);
                fprintf(out, " %llu", (unsigned long long)r->errs[e].n);
            }
            fprintf(out, "</p>\n");
        }
    }
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

int lt_analyze_write_html(const struct lt_analysis *a, const char *title, const char *pre_text,
                          const struct lt_plot_ctx *ctx, FILE *out, struct lt_err *err)
{
    int rc = 0;
    fprintf(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>");
    esc(out, title);
    fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>", css);
    esc(out, title);
    fprintf(out, "</h1>\n");
    if (a) {
        fprintf(out, "<p>%u run%s, %llu results; warm-up %s; histogram precision %.3g %%.</p>\n",
                a->n_runs, a->n_runs == 1 ? "" : "s", (unsigned long long)a->results,
                a->opts.include_warmup ? "included" : "excluded",
                100.0 / (double)(1u << a->opts.hist_bits));
        tables(a, out);
    }
    if (ctx && ctx->n) {
        fprintf(out, "<h2>Charts</h2>\n");
        for (uint32_t k = 0; k < ctx->n; k++) {
            fprintf(out, "<figure id=\"%s\">\n", ctx->names[k]);
            if (ctx->rendered[k]) {
                char path[4096];
                snprintf(path, sizeof path, "%s/%s.svg", ctx->dir, ctx->names[k]);
                char prefix[24];
                snprintf(prefix, sizeof prefix, "c%u_", k);
                LT_TRY(inline_svg(out, path, prefix, err));
            } else {
                fprintf(out,
                        "<p class=warn>Not rendered (gnuplot is not installed or failed): "
                        "the data and the script are %s.dat and %s.gp.</p>\n",
                        ctx->names[k], ctx->names[k]);
            }
            fprintf(out, "<figcaption>");
            esc(out, ctx->captions[k]);
            fprintf(out, "</figcaption>\n</figure>\n");
        }
    }
    if (a) {
        char *buf = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&buf, &len);
        if (!mem) {
            rc = lt_errset(err, LT_ENOMEM, "out of memory");
            goto out;
        }
        struct lt_analysis copy = *a;
        copy.opts.details = true;
        lt_analyze_write_text(&copy, mem, NULL);
        fclose(mem);
        fprintf(out, "<h2>Full report</h2>\n<pre>");
        esc(out, buf ? buf : "");
        fprintf(out, "</pre>\n");
        free(buf);
    }
    if (pre_text) {
        fprintf(out, "<pre>");
        esc(out, pre_text);
        fprintf(out, "</pre>\n");
    }
    fprintf(out, "<p><small>Made by loadtrace %s.</small></p>\n</body>\n</html>\n", LT_VERSION);
out:
    if (rc == 0 && ferror(out))
        rc = lt_errset(err, LT_EIO, "writing the HTML report failed");
    return rc;
}

/*
 * Charts of an analysis (analyze_plot.h): the data files, the gnuplot
 * scripts made of a few variables and a template from plots/, and the PNG
 * and SVG that gnuplot renders when it is installed. gnuplot runs as a
 * child process (fork and exec, in the chart directory, so the scripts use
 * relative file names and keep working when the directory is moved); its
 * stderr is captured, because gnuplot reports many problems as warnings
 * with a zero exit status, and a chart with a warning is a broken chart.
 */
#include "analyze/analyze_plot.h"
#include "analyze/analyze_internal.h"
#include "analyze/analyze_server.h"
#include "analyze/plot_templates.h"
#include "base/lt_buf.h"
#include "base/lt_path.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXEC_FAILED "\001loadtrace: exec failed"
#define STDERR_MAX 8192
#define TS_CHART_RUNS 16 /* time-series charts for at most this many runs */

const char *lt_plot_template(const char *name)
{
    for (const struct lt_analyze_tpl *t = lt_analyze_tpls; t->name; t++)
        if (!strcmp(t->name, name))
            return t->text;
    return NULL;
}

void lt_plot_report_release(struct lt_plot_report *r)
{
    (void)r; /* nothing on the heap today; kept for the lifecycle contract */
}

void lt_plot_word(char *dst, size_t n, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < n; i++)
        dst[i] =
            (src[i] == ' ' || src[i] == '"' || src[i] == '\\' || src[i] == '\t' || src[i] == '\n')
                ? '_'
                : src[i];
    dst[i] = '\0';
    if (i == 0 && n > 1) {
        dst[0] = '-';
        dst[1] = '\0';
    }
}

int lt_plot_var(struct lt_buf *vars, const char *key, const char *value)
{
    int rc = lt_buf_printf(vars, "%s = \"", key);
    for (const char *p = value; rc == 0 && *p; p++) {
        if (*p == '"' || *p == '\\')
            rc = lt_buf_printf(vars, "\\%c", *p);
        else if (*p == '\n' || *p == '\r')
            rc = lt_buf_puts(vars, " ");
        else
            rc = lt_buf_append(vars, p, 1);
    }
    return rc ? rc : lt_buf_puts(vars, "\"\n");
}

int lt_plot_range(struct lt_buf *vars, const char *axis, double lo, double hi)
{
    if (!(lo == hi) || !isfinite(lo))
        return 0;
    double a = lo > 0 ? lo / 1.25 : lo - 1, b = lo > 0 ? lo * 1.25 : lo + 1;
    return lt_buf_printf(vars, "%smin = %.9g\n%smax = %.9g\n", axis, a, axis, b);
}

int lt_plot_span(struct lt_buf *vars, const char *axis, double lo, double hi, int flags)
{
    if (!isfinite(lo) || !isfinite(hi) || hi < lo)
        return 0; /* no data: the template's own range */
    double a, b;
    if (flags & LT_PLOT_LOG) {
        if (hi <= 0)
            return 0;
        if (lo <= 0)
            lo = hi / 10;
        a = lo / 1.4;
        b = hi * 1.4;
        if (lo == hi) {
            a = lo / 2;
            b = hi * 2;
        }
        if ((flags & LT_PLOT_TICKS) && b / a < 100) {
            static const double step[] = {1, 2, 5};
            int rc = lt_buf_printf(vars, "%sticks = \"(", axis);
            const char *sep = "";
            for (double dec = pow(10, floor(log10(a))); rc == 0 && dec <= b; dec *= 10)
                for (int i = 0; i < 3 && rc == 0; i++)
                    if (dec * step[i] >= a && dec * step[i] <= b) {
                        rc = lt_buf_printf(vars, "%s%.6g", sep, dec * step[i]);
                        sep = ", ";
                    }
            if (rc == 0)
                rc = lt_buf_puts(vars, ")\"\n");
            if (rc < 0)
                return rc;
        }
    } else if (flags & LT_PLOT_ZERO) {
        a = 0;
        b = hi > 0 ? hi * 1.12 : 1;
    } else {
        double span = hi - lo;
        if (span <= 0)
            span = lo != 0 ? fabs(lo) * 0.4 : 2;
        a = lo - 0.06 * span;
        b = hi + 0.06 * span;
    }
    return lt_buf_printf(vars, "%smin = %.9g\n%smax = %.9g\n", axis, a, axis, b);
}

int lt_plot_cdf_block(struct lt_buf *b, const struct lt_hist *h, double scale, double floor_v)
{
    uint64_t n = lt_hist_count(h);
    int rc = 0;
    if (n) {
        struct lt_hist_iter it;
        lt_hist_iter_init(&it, h);
        double first = fmax((double)lt_hist_min(h) * scale, floor_v);
        rc = lt_buf_printf(b, "%.6g 0\n", first);
        while (rc == 0 && lt_hist_iter_next(&it))
            rc = lt_buf_printf(b, "%.6g %.6g\n", fmax((double)it.hi * scale, floor_v),
                               (double)it.cum / n);
    }
    return rc ? rc : lt_buf_puts(b, "\n\n");
}

/* Whole or not at all: a chart file that fails keeps its last version. */
static int write_file(const char *path, const void *p, size_t len, struct lt_err *err)
{
    struct lt_path_out o;
    int rc = lt_path_out_begin(&o, path, err);
    if (rc < 0)
        return rc;
    if (len && fwrite(p, 1, len, o.f) != len) {
        lt_path_out_abort(&o);
        return lt_errset(err, LT_EIO, "cannot write %s: %s", path, strerror(errno));
    }
    return lt_path_out_commit(&o, err);
}

int lt_plot_run_gnuplot(const char *dir, const char *script, bool *found, struct lt_err *err)
{
    const char *gp = getenv("LT_GNUPLOT");
    if (!gp || !*gp)
        gp = "gnuplot";
    int fds[2];
    if (pipe(fds) != 0)
        return lt_errset(err, LT_EIO, "cannot run gnuplot: pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return lt_errset(err, LT_EIO, "cannot run gnuplot: fork: %s", strerror(errno));
    }
    if (pid == 0) {
        /* Child: only async-signal-safe calls from here on. */
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
        }
        dup2(fds[1], 2);
        close(fds[0]);
        if (chdir(dir) == 0)
            execlp(gp, gp, script, (char *)NULL);
        ssize_t ignored = write(2, EXEC_FAILED, sizeof EXEC_FAILED - 1);
        (void)ignored;
        _exit(127);
    }
    close(fds[1]);
    char buf[STDERR_MAX + 1];
    size_t len = 0;
    for (;;) {
        char tmp[1024];
        ssize_t n = read(fds[0], tmp, sizeof tmp);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        size_t keep = (size_t)n;
        if (keep > STDERR_MAX - len)
            keep = STDERR_MAX - len;
        memcpy(buf + len, tmp, keep);
        len += keep;
    }
    close(fds[0]);
    buf[len] = '\0';
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127 &&
        !strncmp(buf, EXEC_FAILED, sizeof EXEC_FAILED - 1)) {
        *found = false;
        return 0;
    }
    *found = true;
    /* Keep the message on one line. */
    for (size_t i = 0; i < len; i++)
        if (buf[i] == '\n')
            buf[i] = (i + 1 == len) ? '\0' : ' ';
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return lt_errset(err, LT_EIO, "gnuplot %s/%s failed (%s %d): %s", dir, script,
                         WIFEXITED(status) ? "exit status" : "signal",
                         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), buf);
    if (len)
        return lt_errset(err, LT_EIO, "gnuplot %s/%s warned: %s", dir, script, buf);
    return 0;
}

static void note(struct lt_plot_report *rep, const char *msg)
{
    if (rep->n_notes < LT_PLOT_NOTES_MAX)
        snprintf(rep->notes[rep->n_notes++], sizeof rep->notes[0], "%s", msg);
}

/* gnuplot's SVG names the chart "Gnuplot" and every curve "gnuplot_plot_N",
 * which is what a reader sees on hover. Rewrite those titles: the chart's
 * caption, and for each curve the text of its key entry, or no title. The
 * key entry is the first <text> of a group of that id unless it is centred:
 * key texts are aligned left or right, while a curve without a key entry,
 * such as the level labels of a chart, has only centred texts. */
static int svg_titles(const char *path, const char *caption, struct lt_err *err)
{
    static const char plot_id[] = "<g id=\"gnuplot_plot_", plot_title[] = "<title>gnuplot_plot_";
    enum { CURVES = 64 };
    int rc = 0;
    struct lt_buf in, o;
    lt_buf_init(&in, (size_t)1 << 26);
    lt_buf_init(&o, (size_t)1 << 26);
    FILE *f = fopen(path, "r");
    if (!f)
        return lt_errset(err, LT_EIO, "cannot read %s: %s", path, strerror(errno));
    char tmp[65536];
    size_t n;
    while (rc == 0 && (n = fread(tmp, 1, sizeof tmp, f)) > 0)
        rc = lt_buf_append(&in, tmp, n);
    fclose(f);
    if (rc < 0 || !in.p) {
        rc = rc < 0 ? lt_errset(err, rc, "%s is too large", path) : 0;
        goto out;
    }
    const char *text[CURVES] = {0};
    size_t tlen[CURVES] = {0};
    for (const char *g = strstr(in.p, plot_id); g; g = strstr(g + 1, plot_id)) {
        long id = strtol(g + sizeof plot_id - 1, NULL, 10);
        if (id < 1 || id >= CURVES || text[id])
            continue;
        const char *next = strstr(g + 1, plot_id), *t = strstr(g, "<text>");
        if (t && (!next || t < next)) {
            const char *e = strstr(t, "</text>"), *open = t;
            while (open > g && *open != '<')
                open--; /* t's enclosing <g ...>, ending just before it */
            for (open--; open > g && *open != '<'; open--)
                ;
            const char *mid = strstr(open, "text-anchor=\"middle\"");
            bool key = !strncmp(open, "<g ", 3) && !(mid && mid < t);
            if (e && key) {
                text[id] = t + 6;
                tlen[id] = (size_t)(e - t - 6);
            }
        }
    }
    for (const char *p = in.p; rc == 0 && *p;) {
        const char *q = strstr(p, "<title>");
        if (!q) {
            rc = lt_buf_puts(&o, p);
            break;
        }
        LT_TRY(lt_buf_append(&o, p, (size_t)(q - p)));
        const char *e = strstr(q, "</title>");
        if (!e) {
            rc = lt_buf_puts(&o, q);
            break;
        }
        p = e + 8;
        if (!strncmp(q, "<title>Gnuplot</title>", 22)) {
            LT_TRY(lt_buf_puts(&o, "<title>"));
            for (const char *c = caption; *c; c++)
                LT_TRY(*c == '<'   ? lt_buf_puts(&o, "&lt;")
                       : *c == '&' ? lt_buf_puts(&o, "&amp;")
                                   : lt_buf_append(&o, c, 1));
            LT_TRY(lt_buf_puts(&o, "</title>"));
        } else if (!strncmp(q, plot_title, sizeof plot_title - 1)) {
            long id = strtol(q + sizeof plot_title - 1, NULL, 10);
            if (id >= 1 && id < CURVES && text[id]) {
                LT_TRY(lt_buf_puts(&o, "<title>"));
                LT_TRY(lt_buf_append(&o, text[id], tlen[id]));
                LT_TRY(lt_buf_puts(&o, "</title>"));
            }
        } else {
            LT_TRY(lt_buf_append(&o, q, (size_t)(p - q)));
        }
    }
    if (rc == 0)
        rc = write_file(path, o.p, o.len, err);
    else
        rc = lt_errset(err, rc, "%s is too large", path);
out:
    lt_buf_release(&in);
    lt_buf_release(&o);
    return rc;
}

int lt_plot_chart(struct lt_plot_ctx *ctx, const char *name, const char *tpl, const char *caption,
                  const char *vars, const struct lt_buf *data, struct lt_err *err)
{
    int rc = 0;
    char path[4096];
    struct lt_buf script;
    lt_buf_init(&script, (size_t)1 << 24);
    const char *text = lt_plot_template(tpl);
    if (!text)
        return lt_errset(err, LT_EINVAL, "no gnuplot template named %s", tpl);
    if (ctx->n == LT_PLOT_CHARTS_MAX)
        return lt_errset(err, LT_ELIMIT, "more than %d charts", LT_PLOT_CHARTS_MAX);

    snprintf(path, sizeof path, "%s/%s.dat", ctx->dir, name);
    LT_TRY(write_file(path, data->p, data->len, err));
    LT_TRY(lt_buf_printf(&script,
                         "# %s\n# Made by loadtrace analyze from the template plots/%s.gp;"
                         " edit and rerun: gnuplot %s.gp\n",
                         caption, tpl, name));
    LT_TRY(lt_buf_printf(&script, "data = \"%s.dat\"\nout = \"%s\"\n", name, name));
    LT_TRY(lt_buf_puts(&script, vars));
    LT_TRY(lt_buf_puts(&script, "\n"));
    LT_TRY(lt_buf_puts(&script, text));
    snprintf(path, sizeof path, "%s/%s.gp", ctx->dir, name);
    LT_TRY(write_file(path, script.p, script.len, err));

    uint32_t k = ctx->n++;
    snprintf(ctx->names[k], sizeof ctx->names[k], "%s", name);
    snprintf(ctx->captions[k], sizeof ctx->captions[k], "%s", caption);
    ctx->rendered[k] = false;
    ctx->run_of[k] = ctx->cur_run;
    ctx->sparse[k] = ctx->cur_sparse;
    ctx->rep->charts++;
    if (ctx->gnuplot != 0) {
        bool found = true;
        char gpname[LT_PLOT_NAME_LEN + 4];
        snprintf(gpname, sizeof gpname, "%s.gp", name);
        struct lt_err gerr = {0};
        int grc = lt_plot_run_gnuplot(ctx->dir, gpname, &found, &gerr);
        ctx->gnuplot = found;
        ctx->rep->gnuplot_found = found;
        if (grc < 0) {
            note(ctx->rep, gerr.msg);
            rc = lt_errset(err, grc, "%s", gerr.msg);
        } else if (found) {
            snprintf(path, sizeof path, "%s/%s.svg", ctx->dir, name);
            LT_TRY(svg_titles(path, caption, err));
            ctx->rendered[k] = true;
            ctx->rep->rendered++;
        }
    }
out:
    lt_buf_release(&script);
    return rc;
}

/* ---- the charts of an analysis -------------------------------------- */

/* The level of run r as a chart's title for its series (title1, title2, ...
 * in the script, read by the templates with value()). */
static int set_title(struct lt_buf *v, uint32_t i, const struct lt_analyze_run *r)
{
    char key[24], lev[48];
    snprintf(key, sizeof key, "title%u", i);
    lt__analyze_level(r, lev, sizeof lev);
    return lt_plot_var(v, key, lev);
}

/* The level labels the Pareto chart can print without one overprinting
 * another: each sits centred above its E2E p99 point, and is kept when it
 * clears every label kept before it (in level order) in x or in y, as
 * fractions of the axes a character takes on the smaller of the two
 * charts, the HTML's 480x350 SVG (about 1.8 % of the x span wide, 6 % of
 * the log y span high). keep[i] for a->points[i]. */
static void pareto_labels(const struct lt_analyze *a, double xspan, double ydecades, bool *keep)
{
    for (uint32_t i = 0; i < a->n_points; i++) {
        const struct lt_analyze_run *r = a->runs[a->points[i].run];
        char li[32];
        int ni = snprintf(li, sizeof li, "%g", a->points[i].x);
        double xi = r->agg_tps, yi = lt_analyze_pct(r->h[LT_AM_E2E], 99);
        keep[i] = true;
        for (uint32_t k = 0; k < i && keep[i]; k++) {
            if (!keep[k])
                continue;
            const struct lt_analyze_run *q = a->runs[a->points[k].run];
            char lk[32];
            int nk = snprintf(lk, sizeof lk, "%g", a->points[k].x);
            double yk = lt_analyze_pct(q->h[LT_AM_E2E], 99);
            bool apart_x = fabs(xi - q->agg_tps) > 0.018 * xspan * ((ni + nk) / 2.0 + 1);
            bool apart_y =
                !(yi > 0 && yk > 0) || ydecades <= 0 || fabs(log10(yi / yk)) > 0.06 * ydecades;
            keep[i] = apart_x || apart_y;
        }
    }
}

static int sweep_charts(const struct lt_analyze *a, struct lt_plot_ctx *ctx, struct lt_err *err)
{
    int rc = 0;
    struct lt_buf d, v;
    lt_buf_init(&d, (size_t)1 << 26);
    lt_buf_init(&v, (size_t)1 << 20);
    bool *keep = calloc(a->n_points ? a->n_points : 1, sizeof *keep);
    if (!keep) {
        rc = lt_errset(err, LT_ENOMEM, "out of memory");
        goto out;
    }
    LT_TRY(lt_buf_puts(&d, "# level agg_tps perreq_decode_tps perreq_e2e_tps ttft_p50_ms "
                           "ttft_p99_ms tpot_p50_ms tpot_p99_ms e2e_p50_ms e2e_p99_ms label\n"));
    double tlo = INFINITY, thi = -INFINITY, plo = INFINITY, phi = -INFINITY, rhi = 0;
    for (uint32_t i = 0; i < a->n_points; i++) {
        const struct lt_analyze_run *r = a->runs[a->points[i].run];
        static const enum lt_analyze_metric m[3] = {LT_AM_TTFT, LT_AM_TPOT, LT_AM_E2E};
        for (int k = 0; k < 3; k++)
            for (int p = 50; p <= 99; p += 49) {
                double ms_v = lt_analyze_pct(r->h[m[k]], p) / 1e3;
                if (ms_v > 0) {
                    plo = fmin(plo, ms_v);
                    phi = fmax(phi, ms_v);
                }
            }
        tlo = fmin(tlo, r->agg_tps);
        thi = fmax(thi, r->agg_tps);
    }
    if (a->n_points)
        pareto_labels(a, thi > tlo ? thi - tlo : 1, phi > plo ? log10(phi * 3 / plo) : 0, keep);
    tlo = INFINITY, thi = -INFINITY, plo = INFINITY, phi = -INFINITY;
    for (uint32_t i = 0; i < a->n_points; i++) {
        const struct lt_analyze_run *r = a->runs[a->points[i].run];
        double lat[6];
        static const enum lt_analyze_metric m[3] = {LT_AM_TTFT, LT_AM_TPOT, LT_AM_E2E};
        for (int k = 0; k < 3; k++) {
            lat[2 * k] = lt_analyze_pct(r->h[m[k]], 50) / 1e3;
            lat[2 * k + 1] = lt_analyze_pct(r->h[m[k]], 99) / 1e3;
        }
        for (int k = 0; k < 6; k++)
            if (lat[k] > 0) {
                plo = fmin(plo, lat[k]);
                phi = fmax(phi, lat[k]);
            }
        tlo = fmin(tlo, r->agg_tps);
        thi = fmax(thi, r->agg_tps);
        rhi = fmax(rhi, fmax(r->perreq_decode, r->perreq_e2e));
        LT_TRY(lt_buf_printf(&d, "%g %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g %s\n",
                             a->points[i].x, r->agg_tps, r->perreq_decode, r->perreq_e2e, lat[0],
                             lat[1], lat[2], lat[3], lat[4], lat[5], keep[i] ? "1" : "0"));
    }
    bool conc = a->sweep_axis[0] == 'c';
    double lo = a->points[0].x, hi = a->points[a->n_points - 1].x;
    bool xlog = hi / lo >= 8;
    LT_TRY(
        lt_plot_var(&v, "chart_title",
                    conc ? "Throughput against concurrency" : "Throughput against request rate"));
    LT_TRY(lt_plot_var(&v, "xlabel",
                       conc ? "Concurrency (requests in flight)"
                            : "Request rate asked for (requests/s)"));
    LT_TRY(lt_buf_printf(&v, "xlog = %d\nknee = %g\n", xlog ? 1 : 0,
                         a->knee >= 0 ? a->points[a->knee].x : 0.0));
    LT_TRY(lt_plot_span(&v, "x", lo, hi, xlog ? LT_PLOT_LOG : 0));
    LT_TRY(lt_plot_span(&v, "y", 0, thi, LT_PLOT_ZERO));
    LT_TRY(lt_plot_span(&v, "y2", 0, rhi, LT_PLOT_ZERO));
    LT_TRY(lt_plot_chart(ctx, "throughput", "throughput",
                         "Aggregate and per-request tokens/s against the load level", v.p, &d,
                         err));
    lt_buf_reset(&v);
    LT_TRY(lt_plot_var(&v, "chart_title", "Latency against throughput"));
    LT_TRY(lt_plot_span(&v, "x", tlo, thi, 0));
    /* room above the highest point for the level labels over E2E p99 */
    LT_TRY(lt_plot_span(&v, "y", plo, phi * 3, LT_PLOT_LOG | LT_PLOT_TICKS));
    LT_TRY(lt_plot_chart(ctx, "pareto", "pareto",
                         "Latency percentiles against aggregate throughput, one point per level",
                         v.p, &d, err));
out:
    free(keep);
    lt_buf_release(&d);
    lt_buf_release(&v);
    return rc;
}

static int cdf_chart(const struct lt_analyze *a, struct lt_plot_ctx *ctx, enum lt_analyze_metric m,
                     const char *name, const char *title, const char *xlabel, struct lt_err *err)
{
    int rc = 0;
    struct lt_buf d, v;
    lt_buf_init(&d, (size_t)1 << 26);
    lt_buf_init(&v, (size_t)1 << 20);
    uint32_t order[LT_ANALYZE_RUNS_MAX], n = lt__analyze_run_order(a, order), sets = 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t k = 0; k < n && sets < 8; k++) {
        const struct lt_analyze_run *r = a->runs[order[k]];
        if (!lt_hist_count(r->h[m]))
            continue;
        char w[48];
        lt__analyze_level(r, w, sizeof w);
        LT_TRY(lt_buf_printf(&d, "# %s: %s (ms), fraction <= value\n", w, name));
        LT_TRY(lt_plot_cdf_block(&d, r->h[m], 1e-3, 1e-3));
        LT_TRY(set_title(&v, ++sets, r));
        if (lt_hist_min(r->h[m]) < lo)
            lo = lt_hist_min(r->h[m]);
        if (lt_hist_max(r->h[m]) > hi)
            hi = lt_hist_max(r->h[m]);
    }
    if (!sets)
        goto out;
    LT_TRY(lt_plot_var(&v, "chart_title", title));
    LT_TRY(lt_plot_var(&v, "xlabel", xlabel));
    /* log x when the values span more than two decades */
    bool xlog = (double)hi >= 100.0 * (double)(lo ? lo : 1);
    LT_TRY(lt_buf_printf(&v, "nsets = %u\nxlog = %d\n", sets, xlog ? 1 : 0));
    LT_TRY(lt_plot_span(&v, "x", fmax((double)lo * 1e-3, 1e-3), fmax((double)hi * 1e-3, 1e-3),
                        xlog ? LT_PLOT_LOG | LT_PLOT_TICKS : 0));
    LT_TRY(lt_plot_chart(ctx, name, "cdf", title, v.p, &d, err));
out:
    lt_buf_release(&d);
    lt_buf_release(&v);
    return rc;
}

/* The inter-token latency histogram: per run, the fractions of gaps in 20
 * log-spaced bins per decade (from 1 us). The x range fits the data: from
 * the lowest, over the runs, of max(0.5th percentile, a tenth of the
 * median) to the largest gap, where a stall tail is. Gaps far below the
 * median are chunks that arrived together (often a gap of 0): drawn, they
 * would stretch the axis over decades where nothing else is, so they are
 * left of it and the caption says how many. */
static int itl_chart(const struct lt_analyze *a, struct lt_plot_ctx *ctx, struct lt_err *err)
{
    enum { BINS = 200, SETS = 8 };
    int rc = 0;
    struct lt_buf d, v;
    lt_buf_init(&d, (size_t)1 << 26);
    lt_buf_init(&v, (size_t)1 << 20);
    uint32_t order[LT_ANALYZE_RUNS_MAX], n = lt__analyze_run_order(a, order), sets = 0;
    const struct lt_analyze_run *run[SETS];
    static double frac[SETS][BINS]; /* not on the stack: 12.8 KB */
    int bmax[SETS];
    double xlo = INFINITY, xhi = 0, fmin_ = INFINITY, fmax_ = 0;
    for (uint32_t k = 0; k < n && sets < SETS; k++) {
        const struct lt_hist *h = a->runs[order[k]]->h[LT_AM_ITL];
        uint64_t total = lt_hist_count(h);
        if (!total)
            continue;
        double *f = frac[sets];
        memset(f, 0, sizeof frac[0]);
        struct lt_hist_iter it;
        lt_hist_iter_init(&it, h);
        while (lt_hist_iter_next(&it)) {
            double mid = ((double)it.lo + (double)it.hi) / 2;
            int bin = mid < 1 ? 0 : (int)floor(20 * log10(mid));
            if (bin >= BINS)
                bin = BINS - 1;
            f[bin] += (double)it.count / total;
        }
        bmax[sets] = 0;
        for (int b = 0; b < BINS; b++)
            if (f[b] > 0)
                bmax[sets] = b;
        double from = fmax(fmax(lt_analyze_pct(h, 0.5), lt_analyze_pct(h, 50) / 10), 1.0);
        xlo = fmin(xlo, pow(10, floor(20 * log10(from)) / 20.0) / 1e3);
        xhi = fmax(xhi, pow(10, (bmax[sets] + 1) / 20.0) / 1e3);
        run[sets++] = a->runs[order[k]];
    }
    if (!sets)
        goto out;
    int bfrom = (int)floor(20 * log10(xlo * 1e3) + 0.5);
    double left = 0; /* the largest share of a run's gaps left of the axis */
    for (uint32_t s = 0; s < sets; s++) {
        double l = 0;
        int bmin = -1;
        for (int b = 0; b < BINS; b++) {
            if (b < bfrom) {
                l += frac[s][b];
            } else if (frac[s][b] > 0) {
                bmin = bmin < 0 ? b : bmin;
                fmin_ = fmin(fmin_, frac[s][b]);
                fmax_ = fmax(fmax_, frac[s][b]);
            }
        }
        left = fmax(left, l);
        char w[48];
        lt__analyze_level(run[s], w, sizeof w);
        LT_TRY(set_title(&v, s + 1, run[s]));
        /* The outline of the bars (so that even a single bin shows) from
         * the axis' start; empty bins at 0, which the template draws at
         * yfloor (a log axis has no 0). */
        LT_TRY(
            lt_buf_printf(&d, "# %s: bin edge (ms), fraction of gaps in the bin (0: none)\n", w));
        if (bmin < 0) { /* every gap of this run is left of the axis */
            LT_TRY(lt_buf_printf(&d, "%.6g 0\n\n\n", xlo));
            continue;
        }
        LT_TRY(lt_buf_printf(&d, "%.6g 0\n", pow(10, bmin / 20.0) / 1e3));
        for (int b = bmin; b <= bmax[s]; b++)
            LT_TRY(lt_buf_printf(&d, "%.6g %.6g\n%.6g %.6g\n", pow(10, b / 20.0) / 1e3, frac[s][b],
                                 pow(10, (b + 1) / 20.0) / 1e3, frac[s][b]));
        LT_TRY(lt_buf_printf(&d, "%.6g 0\n\n\n", pow(10, (bmax[s] + 1) / 20.0) / 1e3));
    }
    if (!(fmax_ > 0))
        fmin_ = fmax_ = 1;
    LT_TRY(lt_plot_var(&v, "chart_title", "Inter-token latency"));
    LT_TRY(lt_buf_printf(&v, "nsets = %u\n", sets));
    LT_TRY(lt_plot_span(&v, "x", xlo, xhi, LT_PLOT_LOG | LT_PLOT_TICKS));
    /* y: down to a fifth of the smallest fraction drawn (empty bins are
     * drawn there, on the frame: `yfloor`), up with headroom */
    LT_TRY(lt_plot_span(&v, "y", fmin_ / 3.5, fmax_, LT_PLOT_LOG | LT_PLOT_TICKS));
    LT_TRY(lt_buf_printf(&v, "yfloor = %.9g\n", fmin_ / 5));
    char caption[160] = "Histogram of inter-token latency (gaps between token-bearing chunks)";
    if (left > 0)
        snprintf(caption, sizeof caption,
                 "Inter-token latency (gaps between token-bearing chunks); up to %.2g %% of a "
                 "run's gaps, under %.3g ms (chunks that came together), are left of the axis",
                 100 * left, xlo);
    LT_TRY(lt_plot_chart(ctx, "itl_hist", "itl_hist", caption, v.p, &d, err));
out:
    lt_buf_release(&d);
    lt_buf_release(&v);
    return rc;
}

/* Charts over time need this many buckets with data; with fewer (a run of
 * a second or two) the HTML shows the table instead, though the files are
 * still written. */
#define TS_MIN_BUCKETS 3

static int ts_charts(const struct lt_analyze *a, const struct lt_analyze_run *r, uint32_t ri,
                     struct lt_plot_ctx *ctx, struct lt_err *err)
{
    int rc = 0;
    struct lt_buf d, pd, v;
    lt_buf_init(&d, (size_t)1 << 26);
    lt_buf_init(&pd, (size_t)1 << 26);
    lt_buf_init(&v, (size_t)1 << 20);
    if (r->ts.n == 0)
        goto out;
    double w = r->ts.width_us / 1e6;
    uint32_t with_pct = 0, with_e2e = 0;
    double pmin = INFINITY, pmax = -INFINITY, max_tps = 0, max_y2 = 0, t_end = 0;
    LT_TRY(lt_buf_printf(&d,
                         "# bucket %g s (the last one ends with the run)\n# t_s tokens_per_s "
                         "in_flight_avg ok errors\n",
                         w));
    LT_TRY(lt_buf_printf(&pd,
                         "# bucket %g s; NaN: no request ended (E2E) or got its first token "
                         "(TTFT) in the bucket\n# t_mid_s e2e_p50_ms e2e_p99_ms ttft_p50_ms "
                         "ttft_p99_ms\n",
                         w));
    struct lt_analyze_ts_point p = {0};
    for (uint32_t k = 0; k < r->ts.n; k++) {
        lt_analyze_ts_point(r, k, &p);
        double q[4] = {p.e2e_p50_ms, p.e2e_p99_ms, p.ttft_p50_ms, p.ttft_p99_ms};
        bool any = false;
        for (int i = 0; i < 4; i++)
            if (isfinite(q[i]) && q[i] > 0) {
                any = true;
                pmin = fmin(pmin, q[i]);
                pmax = fmax(pmax, q[i]);
            }
        with_pct += any;
        with_e2e += isfinite(p.e2e_p50_ms);
        max_tps = fmax(max_tps, p.tokens_per_s);
        max_y2 = fmax(max_y2, fmax(p.in_flight, (double)p.errors));
        LT_TRY(lt_buf_printf(&d, "%g %.6g %.6g %llu %llu\n", p.t_s, p.tokens_per_s, p.in_flight,
                             (unsigned long long)p.ok, (unsigned long long)p.errors));
        LT_TRY(lt_buf_printf(&pd, "%g", p.t_s + p.len_s / 2));
        for (int i = 0; i < 4; i++)
            LT_TRY(isfinite(q[i]) && q[i] > 0 ? lt_buf_printf(&pd, " %.6g", q[i])
                                              : lt_buf_puts(&pd, " NaN"));
        LT_TRY(lt_buf_puts(&pd, "\n"));
        t_end = p.t_s + p.len_s;
    }
    /* Close the last step at the end of the run. */
    LT_TRY(lt_buf_printf(&d, "%g %.6g %.6g %llu %llu\n", t_end, p.tokens_per_s, p.in_flight,
                         (unsigned long long)p.ok, (unsigned long long)p.errors));
    char lev[48], name[LT_PLOT_NAME_LEN], title[160];
    lt__analyze_level(r, lev, sizeof lev);
    snprintf(name, sizeof name, "timeseries_f%u_run%u", r->file, r->id);
    if (a->n_files <= 1)
        snprintf(name, sizeof name, "timeseries_run%u", r->id);
    snprintf(title, sizeof title, "%s over time, %g s buckets", lev, w);
    ctx->cur_run = ri + 1;
    ctx->cur_sparse = r->ts.n < TS_MIN_BUCKETS;
    LT_TRY(lt_plot_var(&v, "chart_title", title));
    LT_TRY(lt_buf_printf(&v, "xmin = 0\nxmax = %.9g\n", t_end)); /* the run ends at the frame */
    LT_TRY(lt_plot_span(&v, "y", 0, max_tps, LT_PLOT_ZERO));
    LT_TRY(lt_plot_span(&v, "y2", 0, max_y2, LT_PLOT_ZERO));
    LT_TRY(lt_plot_chart(ctx, name, "timeseries", title, v.p, &d, err));
    if (with_pct) {
        lt_buf_reset(&v);
        snprintf(name, sizeof name, "pct_time_f%u_run%u", r->file, r->id);
        if (a->n_files <= 1)
            snprintf(name, sizeof name, "pct_time_run%u", r->id);
        snprintf(title, sizeof title, "%s: latency percentiles over time, %g s buckets", lev, w);
        ctx->cur_sparse = with_e2e < TS_MIN_BUCKETS; /* a line needs points */
        LT_TRY(lt_plot_var(&v, "chart_title", title));
        LT_TRY(lt_buf_printf(&v, "pint = %u\n", with_pct > 40 ? with_pct / 30 : 1));
        LT_TRY(lt_buf_printf(&v, "xmin = 0\nxmax = %.9g\n", t_end));
        LT_TRY(lt_plot_span(&v, "y", pmin, pmax, LT_PLOT_LOG | LT_PLOT_TICKS));
        LT_TRY(lt_plot_chart(ctx, name, "pct_time", title, v.p, &pd, err));
    }
out:
    ctx->cur_run = 0;
    ctx->cur_sparse = false;
    lt_buf_release(&d);
    lt_buf_release(&pd);
    lt_buf_release(&v);
    return rc;
}

/* The client and the server of run r on one time axis (plots/server.gp):
 * made when the run has scrape samples. */
static int server_chart(const struct lt_analyze *a, const struct lt_analyze_run *r, uint32_t ri,
                        struct lt_plot_ctx *ctx, struct lt_err *err)
{
    int rc = 0;
    const struct lt_analyze_server *s = r->srv;
    struct lt_buf d, v;
    lt_buf_init(&d, (size_t)1 << 26);
    lt_buf_init(&v, (size_t)1 << 20);
    if (!s || s->n == 0 || r->ts.n == 0)
        goto out;
    double t_end = 0;
    /* Each panel's highest value, for a range with headroom: no line on
     * the top frame, where it hides, as in the other charts. */
    double max_tps = 0, max_req = 0, max_ttft = 0;
    LT_TRY(lt_buf_puts(&d, "# client: t_s tokens_per_s in_flight ttft_p99_ms\n"));
    struct lt_analyze_ts_point p = {0};
    for (uint32_t k = 0; k < r->ts.n; k++) {
        lt_analyze_ts_point(r, k, &p);
        LT_TRY(lt_buf_printf(&d, "%g %.6g %.6g ", p.t_s, p.tokens_per_s, p.in_flight));
        LT_TRY(isfinite(p.ttft_p99_ms) ? lt_buf_printf(&d, "%.6g\n", p.ttft_p99_ms)
                                       : lt_buf_puts(&d, "NaN\n"));
        t_end = p.t_s + p.len_s;
        max_tps = fmax(max_tps, p.tokens_per_s);
        max_req = fmax(max_req, p.in_flight);
        if (isfinite(p.ttft_p99_ms))
            max_ttft = fmax(max_ttft, p.ttft_p99_ms);
    }
    LT_TRY(lt_buf_puts(&d, "\n\n# server: t_s running waiting kv_usage\n"));
    for (uint32_t i = 0; i < s->n; i++) {
        const struct lt_analyze_srv_point *q = &s->pts[i];
        double c[3] = {q->running, q->waiting, q->kv};
        for (int j = 0; j < 2; j++)
            if (isfinite(c[j]))
                max_req = fmax(max_req, c[j]);
        LT_TRY(lt_buf_printf(&d, "%g", q->t_s));
        for (int j = 0; j < 3; j++)
            LT_TRY(isnan(c[j]) ? lt_buf_puts(&d, " NaN") : lt_buf_printf(&d, " %.6g", c[j]));
        LT_TRY(lt_buf_puts(&d, "\n"));
        t_end = fmax(t_end, q->t_s);
    }
    char lev[48], name[LT_PLOT_NAME_LEN], title[160];
    lt__analyze_level(r, lev, sizeof lev);
    snprintf(name, sizeof name, "server_f%u_run%u", r->file, r->id);
    if (a->n_files <= 1)
        snprintf(name, sizeof name, "server_run%u", r->id);
    snprintf(title, sizeof title, "%s: client and server over time (%s)", lev,
             s->server[0] ? s->server : "server metrics");
    ctx->cur_run = ri + 1;
    ctx->cur_sparse = s->n < 2;
    LT_TRY(lt_plot_var(&v, "chart_title", title));
    LT_TRY(lt_buf_printf(&v, "xmin = 0\nxmax = %.9g\n", t_end > 0 ? t_end : 1));
    LT_TRY(lt_plot_span(&v, "tps", 0, max_tps, LT_PLOT_ZERO));
    LT_TRY(lt_plot_span(&v, "req", 0, max_req, LT_PLOT_ZERO));
    LT_TRY(lt_plot_span(&v, "ttft", 0, max_ttft, LT_PLOT_ZERO));
    LT_TRY(lt_plot_chart(ctx, name, "server", title, v.p, &d, err));
out:
    ctx->cur_run = 0;
    ctx->cur_sparse = false;
    lt_buf_release(&d);
    lt_buf_release(&v);
    return rc;
}

int lt_plot_make_dir(const char *dir, struct lt_err *err)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return lt_errset(err, LT_EIO, "cannot create the directory %s: %s", dir, strerror(errno));
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return lt_errset(err, LT_EIO, "%s is not a directory", dir);
    /* Checked again here, not only by the command before its work: the
     * directory may have filled since. Then marked as loadtrace's, so that
     * charts may replace charts in it later and nothing else. */
    int rc = lt_path_dir_ok(dir, err);
    if (rc < 0)
        return rc;
    char mark[4096];
    if ((size_t)snprintf(mark, sizeof mark, "%s/%s", dir, LT_PATH_CHARTS_MARK) >= sizeof mark)
        return lt_errset(err, LT_EIO, "%s: the name is too long", dir);
    if (stat(mark, &st) == 0)
        return 0;
    static const char text[] =
        "This directory holds charts written by loadtrace (analyze or compare --plots).\n"
        "loadtrace replaces files of its charts' names here; it writes into no other\n"
        "non-empty directory. Delete this file to keep loadtrace from writing here.\n";
    return write_file(mark, text, sizeof text - 1, err);
}

/* Remove what a temporary chart directory holds, then the directory. */
void lt_plot_remove_charts(const struct lt_plot_ctx *ctx)
{
    static const char *const ext[] = {"dat", "gp", "png", "svg"};
    char path[4096];
    for (uint32_t k = 0; k < ctx->n; k++)
        for (int e = 0; e < 4; e++) {
            snprintf(path, sizeof path, "%s/%s.%s", ctx->dir, ctx->names[k], ext[e]);
            unlink(path);
        }
    rmdir(ctx->dir);
}

/* SLO attainment against load, each probe with its interval (a capacity
 * search's file only). */
static int capacity_chart(const struct lt_analyze *a, struct lt_plot_ctx *ctx, struct lt_err *err)
{
    int rc = 0;
    struct lt_analyze_capacity live, virt;
    bool have_live = lt_analyze_capacity(a, "live", &live);
    bool have_virt = lt_analyze_capacity(a, "virtual", &virt);
    if (!have_live && !have_virt)
        return 0;
    const struct lt_analyze_capacity *c = have_live ? &live : &virt;
    struct lt_buf d, v;
    lt_buf_init(&d, (size_t)1 << 20);
    lt_buf_init(&v, (size_t)1 << 16);
    LT_TRY(lt_buf_puts(&d, "# load attain attain_lo attain_hi live\n"));
    double lo = INFINITY, hi = 0;
    for (uint32_t i = 0; i < a->n_runs; i++) {
        const struct lt_analyze_probe *p = &a->runs[i]->probe;
        if (!lt_analyze_is_probe(a->runs[i]))
            continue;
        lo = fmin(lo, p->load);
        hi = fmax(hi, p->load);
        LT_TRY(lt_buf_printf(&d, "%.6g %.6g %.6g %.6g %d\n", p->load, p->attain, p->lo, p->hi,
                             !strcmp(p->engine, "live")));
    }
    bool conc = !strcmp(c->axis, "concurrency");
    LT_TRY(lt_plot_var(&v, "chart_title", "SLO attainment against load"));
    LT_TRY(lt_plot_var(&v, "xlabel",
                       conc ? "Concurrency (requests in flight)"
                            : "Request rate (requests/s, the trace's arrivals rescaled)"));
    LT_TRY(lt_buf_printf(&v, "target = %g\nfound = %g\n", c->target, c->max_ok));
    /* a key entry only for an engine that probed */
    LT_TRY(lt_buf_printf(&v, "has_live = %d\nhas_virtual = %d\n", have_live, have_virt));
    LT_TRY(lt_plot_span(&v, "x", lo, hi, 0));
    LT_TRY(lt_plot_chart(ctx, "capacity", "capacity",
                         "Share of requests meeting the SLO at each probe of the capacity "
                         "search, with its 95 % interval; the target and the maximum found",
                         v.p, &d, err));
out:
    lt_buf_release(&d);
    lt_buf_release(&v);
    return rc;
}

int lt_analyze_plots(const struct lt_analyze *a, const char *dir, const char *html_path,
                     struct lt_plot_report *rep, struct lt_err *err)
{
    int rc = 0;
    char tmpdir[4096];
    struct lt_plot_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return lt_errset(err, LT_ENOMEM, "out of memory");
    memset(rep, 0, sizeof *rep);
    ctx->rep = rep;
    ctx->gnuplot = -1;
    if (dir) {
        LT_TRY(lt_plot_make_dir(dir, err));
        ctx->dir = dir;
    } else {
        LT_TRY(lt_path_tempdir(tmpdir, sizeof tmpdir, "loadtrace-plots", err));
        ctx->dir = tmpdir;
        ctx->temp_dir = true;
    }
    /* A chart that fails is noted; the others are still made. */
    int first = 0;
#define CHART(call)                                                                                \
    do {                                                                                           \
        int c_ = (call);                                                                           \
        if (c_ < 0 && c_ != LT_EIO) {                                                              \
            rc = c_;                                                                               \
            goto out;                                                                              \
        }                                                                                          \
        if (c_ < 0 && !first)                                                                      \
            first = c_;                                                                            \
    } while (0)
    if (a->sweep_axis)
        CHART(sweep_charts(a, ctx, err));
    CHART(capacity_chart(a, ctx, err));
    CHART(cdf_chart(a, ctx, LT_AM_TTFT, "ttft_cdf", "TTFT distribution", "Time to first token (ms)",
                    err));
    CHART(cdf_chart(a, ctx, LT_AM_E2E, "e2e_cdf", "E2E latency distribution",
                    "End-to-end latency (ms)", err));
    CHART(itl_chart(a, ctx, err));
    uint32_t order[LT_ANALYZE_RUNS_MAX], n = lt__analyze_run_order(a, order);
    for (uint32_t k = 0; k < n && k < TS_CHART_RUNS; k++) {
        CHART(ts_charts(a, a->runs[order[k]], order[k], ctx, err));
        CHART(server_chart(a, a->runs[order[k]], order[k], ctx, err));
    }
    if (n > TS_CHART_RUNS)
        note(rep, "time-series charts were made for the first 16 runs only");
#undef CHART
    if (html_path) {
        /* Whole or not at all: a report that fails leaves the last one. */
        struct lt_path_out o;
        LT_TRY(lt_path_out_begin(&o, html_path, err));
        char title[600];
        lt__analyze_title(a, title, sizeof title);
        int hrc = lt_analyze_write_html(a, title, NULL, ctx, o.f, err);
        if (hrc < 0)
            lt_path_out_abort(&o);
        else
            hrc = lt_path_out_commit(&o, err);
        if (hrc < 0) {
            rc = hrc;
            goto out;
        }
    }
    rc = first;
out:
    if (ctx->dir == tmpdir)
        lt_plot_remove_charts(ctx);
    free(ctx);
    return rc;
}

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
#include "analyze/plot_templates.h"
#include "traces/lt_buf.h"

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

static int write_file(const char *path, const void *p, size_t len, struct lt_err *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return lt_errset(err, LT_EIO, "cannot create %s: %s", path, strerror(errno));
    size_t w = len ? fwrite(p, 1, len, f) : 0;
    int bad = w != len || ferror(f);
    if (fclose(f) != 0 || bad)
        return lt_errset(err, LT_EIO, "cannot write %s: %s", path, strerror(errno));
    return 0;
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
            ctx->rendered[k] = true;
            ctx->rep->rendered++;
        }
    }
out:
    lt_buf_release(&script);
    return rc;
}

/* ---- the charts of an analysis -------------------------------------- */

static void run_word(const struct lt_analyze_run *r, char *buf, size_t n)
{
    if (r->concurrency)
        snprintf(buf, n, "C=%u", r->concurrency);
    else if (r->rate > 0)
        snprintf(buf, n, "rate=%g/s", r->rate);
    else if (r->speed > 0)
        snprintf(buf, n, "x%g", r->speed);
    else
        snprintf(buf, n, "run_%u", r->id);
}

/* Runs in display order: the sweep's order, then the rest. */
static uint32_t run_order(const struct lt_analysis *a, uint32_t *order)
{
    uint32_t n = 0;
    bool done[LT_ANALYZE_RUNS_MAX] = {0};
    for (uint32_t i = 0; i < a->n_points; i++) {
        order[n++] = a->points[i].run;
        done[a->points[i].run] = true;
    }
    for (uint32_t i = 0; i < a->n_runs; i++)
        if (!done[i])
            order[n++] = i;
    return n;
}

static int sweep_charts(const struct lt_analysis *a, struct lt_plot_ctx *ctx, struct lt_err *err)
{
    int rc = 0;
    struct lt_buf d, v;
    lt_buf_init(&d, (size_t)1 << 26);
    lt_buf_init(&v, (size_t)1 << 20);
    LT_TRY(lt_buf_puts(&d, "# level agg_tps perreq_decode_tps perreq_e2e_tps ttft_p50_ms "
                           "ttft_p99_ms tpot_p50_ms tpot_p99_ms e2e_p50_ms e2e_p99_ms\n"));
    for (uint32_t i = 0; i < a->n_points; i++) {
        const struct lt_analyze_run *r = a->runs[a->points[i].run];
        LT_TRY(lt_buf_printf(
            &d, "%g %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g\n", a->points[i].x, r->agg_tps,
            r->perreq_decode, r->perreq_e2e, lt_analyze_pct(r->h[LT_AM_TTFT], 50) / 1e3,
            lt_analyze_pct(r->h[LT_AM_TTFT], 99) / 1e3, lt_analyze_pct(r->h[LT_AM_TPOT], 50) / 1e3,
            lt_analyze_pct(r->h[LT_AM_TPOT], 99) / 1e3, lt_analyze_pct(r->h[LT_AM_E2E], 50) / 1e3,
            lt_analyze_pct(r->h[LT_AM_E2E], 99) / 1e3));
    }
    bool conc = a->sweep_axis[0] == 'c';
    double lo = a->points[0].x, hi = a->points[a->n_points - 1].x;
    LT_TRY(
        lt_plot_var(&v, "chart_title",
                    conc ? "Throughput against concurrency" : "Throughput against request rate"));
    LT_TRY(lt_plot_var(&v, "xlabel",
                       conc ? "Concurrency (requests in flight)"
                            : "Request rate asked for (requests/s)"));
    LT_TRY(lt_buf_printf(&v, "xlog = %d\nknee = %g\n", hi / lo >= 8 ? 1 : 0,
                         a->knee >= 0 ? a->points[a->knee].x : 0.0));
    LT_TRY(lt_plot_range(&v, "x", lo, hi));
    LT_TRY(lt_plot_chart(ctx, "throughput", "throughput",
                         "Aggregate and per-request tokens/s against the load level", v.p, &d,
                         err));
    lt_buf_reset(&v);
    LT_TRY(lt_plot_var(&v, "chart_title", "Latency against throughput"));
    double tlo = INFINITY, thi = -INFINITY;
    for (uint32_t i = 0; i < a->n_points; i++) {
        double t = a->runs[a->points[i].run]->agg_tps;
        tlo = fmin(tlo, t);
        thi = fmax(thi, t);
    }
    LT_TRY(lt_plot_range(&v, "x", tlo, thi));
    LT_TRY(lt_plot_chart(ctx, "pareto", "pareto",
                         "Latency percentiles against aggregate throughput, one point per level",
                         v.p, &d, err));
out:
    lt_buf_release(&d);
    lt_buf_release(&v);
    return rc;
}

static int cdf_chart(const struct lt_analysis *a, struct lt_plot_ctx *ctx, enum lt_analyze_metric m,
                     const char *name, const char *title, const char *xlabel, struct lt_err *err)
{
    int rc = 0;
    struct lt_buf d, v, words;
    lt_buf_init(&d, (size_t)1 << 26);
    lt_buf_init(&v, (size_t)1 << 20);
    lt_buf_init(&words, (size_t)1 << 16);
    uint32_t order[LT_ANALYZE_RUNS_MAX], n = run_order(a, order), sets = 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t k = 0; k < n && sets < 8; k++) {
        const struct lt_analyze_run *r = a->runs[order[k]];
        if (!lt_hist_count(r->h[m]))
            continue;
        char w[48];
        run_word(r, w, sizeof w);
        LT_TRY(lt_buf_printf(&d, "# %s: %s (ms), fraction <= value\n", w, name));
        LT_TRY(lt_plot_cdf_block(&d, r->h[m], 1e-3, 1e-3));
        LT_TRY(lt_buf_printf(&words, "%s%s", sets ? " " : "", w));
        if (lt_hist_min(r->h[m]) < lo)
            lo = lt_hist_min(r->h[m]);
        if (lt_hist_max(r->h[m]) > hi)
            hi = lt_hist_max(r->h[m]);
        sets++;
    }
    if (!sets)
        goto out;
    LT_TRY(lt_plot_var(&v, "chart_title", title));
    LT_TRY(lt_plot_var(&v, "xlabel", xlabel));
    LT_TRY(lt_plot_var(&v, "titles", words.p));
    /* log x when the values span more than two decades */
    LT_TRY(lt_buf_printf(&v, "nsets = %u\nxlog = %d\n", sets,
                         (double)hi >= 100.0 * (double)(lo ? lo : 1) ? 1 : 0));
    LT_TRY(lt_plot_range(&v, "x", fmax((double)lo * 1e-3, 1e-3), fmax((double)hi * 1e-3, 1e-3)));
    LT_TRY(lt_plot_chart(ctx, name, "cdf", title, v.p, &d, err));
out:
    lt_buf_release(&d);
    lt_buf_release(&v);
    lt_buf_release(&words);
    return rc;
}

static int itl_chart(const struct lt_analysis *a, struct lt_plot_ctx *ctx, struct lt_err *err)
{
    int rc = 0;
    struct lt_buf d, v, words;
    lt_buf_init(&d, (size_t)1 << 26);
    lt_buf_init(&v, (size_t)1 << 20);
    lt_buf_init(&words, (size_t)1 << 16);
    uint32_t order[LT_ANALYZE_RUNS_MAX], n = run_order(a, order), sets = 0;
    for (uint32_t k = 0; k < n && sets < 8; k++) {
        const struct lt_analyze_run *r = a->runs[order[k]];
        const struct lt_hist *h = r->h[LT_AM_ITL];
        uint64_t total = lt_hist_count(h);
        if (!total)
            continue;
        /* Re-bin onto 20 log-spaced bins per decade (from 1 us). */
        enum { BINS = 200 };
        double frac[BINS] = {0};
        struct lt_hist_iter it;
        lt_hist_iter_init(&it, h);
        while (lt_hist_iter_next(&it)) {
            double mid = ((double)it.lo + (double)it.hi) / 2;
            int bin = mid < 1 ? 0 : (int)floor(20 * log10(mid));
            if (bin >= BINS)
                bin = BINS - 1;
            frac[bin] += (double)it.count / total;
        }
        char w[48];
        run_word(r, w, sizeof w);
        /* The outline of the bars, so that even a single bin shows. */
        int bmin = BINS, bmax = -1;
        for (int b = 0; b < BINS; b++)
            if (frac[b] > 0) {
                bmin = b < bmin ? b : bmin;
                bmax = b;
            }
        LT_TRY(lt_buf_printf(&d, "# %s: bin edge (ms), fraction of gaps in the bin\n", w));
        LT_TRY(lt_buf_printf(&d, "%.6g 0\n", pow(10, bmin / 20.0) / 1e3));
        for (int b = bmin; b <= bmax; b++)
            LT_TRY(lt_buf_printf(&d, "%.6g %.6g\n%.6g %.6g\n", pow(10, b / 20.0) / 1e3, frac[b],
                                 pow(10, (b + 1) / 20.0) / 1e3, frac[b]));
        LT_TRY(lt_buf_printf(&d, "%.6g 0\n\n\n", pow(10, (bmax + 1) / 20.0) / 1e3));
        LT_TRY(lt_buf_printf(&words, "%s%s", sets ? " " : "", w));
        sets++;
    }
    if (!sets)
        goto out;
    LT_TRY(lt_plot_var(&v, "chart_title", "Inter-token latency"));
    LT_TRY(lt_plot_var(&v, "titles", words.p));
    LT_TRY(lt_buf_printf(&v, "nsets = %u\n", sets));
    LT_TRY(lt_plot_chart(ctx, "itl_hist", "itl_hist",
                         "Histogram of inter-token latency (gaps between token-bearing chunks)",
                         v.p, &d, err));
out:
    lt_buf_release(&d);
    lt_buf_release(&v);
    lt_buf_release(&words);
    return rc;
}

static int ts_charts(const struct lt_analysis *a, const struct lt_analyze_run *r,
                     struct lt_plot_ctx *ctx, struct lt_err *err)
{
    int rc = 0;
    struct lt_buf d, v;
    lt_buf_init(&d, (size_t)1 << 26);
    lt_buf_init(&v, (size_t)1 << 20);
    if (r->ts.n == 0)
        goto out;
    double w = r->ts.width_us / 1e6;
    int64_t inflight = 0;
    bool any_pct = false;
    double pmin = INFINITY, pmax = -INFINITY, max_tps = 0, max_y2 = 0;
    LT_TRY(lt_buf_printf(&d,
                         "# bucket %g s\n# t_s tokens_per_s in_flight ok errors e2e_p50_ms "
                         "e2e_p99_ms ttft_p50_ms ttft_p99_ms\n",
                         w));
    for (uint32_t k = 0; k < r->ts.n; k++) {
        const struct lt_analyze_bucket *b = &r->ts.b[k];
        inflight += (int64_t)b->started - (int64_t)b->ended;
        double p[4] = {lt_analyze_pct(b->e2e, 50) / 1e3, lt_analyze_pct(b->e2e, 99) / 1e3,
                       lt_analyze_pct(b->ttft, 50) / 1e3, lt_analyze_pct(b->ttft, 99) / 1e3};
        for (int i = 0; i < 4; i++)
            if (p[i] > 0) {
                any_pct = true;
                pmin = fmin(pmin, p[i]);
                pmax = fmax(pmax, p[i]);
            }
        max_tps = fmax(max_tps, b->tokens / w);
        max_y2 = fmax(max_y2, fmax((double)inflight, (double)b->errors));
        LT_TRY(lt_buf_printf(&d, "%g %.6g %lld %llu %llu %.6g %.6g %.6g %.6g\n", k * w,
                             b->tokens / w, (long long)inflight, (unsigned long long)b->ok,
                             (unsigned long long)b->errors, p[0], p[1], p[2], p[3]));
    }
    /* Close the last step at the end of its bucket. */
    {
        const struct lt_analyze_bucket *b = &r->ts.b[r->ts.n - 1];
        LT_TRY(lt_buf_printf(&d, "%g %.6g %lld %llu %llu NaN NaN NaN NaN\n", r->ts.n * w,
                             b->tokens / w, (long long)inflight, (unsigned long long)b->ok,
                             (unsigned long long)b->errors));
    }
    char word[48], name[LT_PLOT_NAME_LEN], title[160];
    run_word(r, word, sizeof word);
    snprintf(name, sizeof name, "timeseries_f%u_run%u", r->file, r->id);
    if (a->n_files <= 1)
        snprintf(name, sizeof name, "timeseries_run%u", r->id);
    snprintf(title, sizeof title, "Run %u (%s) over time, %g s buckets", r->id, word, w);
    LT_TRY(lt_plot_var(&v, "chart_title", title));
    LT_TRY(lt_plot_range(&v, "y", 0, max_tps));
    LT_TRY(lt_plot_range(&v, "y2", 0, max_y2));
    LT_TRY(lt_plot_chart(ctx, name, "timeseries", title, v.p, &d, err));
    if (any_pct) {
        lt_buf_reset(&v);
        snprintf(name, sizeof name, "pct_time_f%u_run%u", r->file, r->id);
        if (a->n_files <= 1)
            snprintf(name, sizeof name, "pct_time_run%u", r->id);
        snprintf(title, sizeof title, "Run %u (%s): latency percentiles over time", r->id, word);
        LT_TRY(lt_plot_var(&v, "chart_title", title));
        LT_TRY(lt_buf_printf(&v, "bucket = %g\n", w));
        if (r->ts.n == 1)
            LT_TRY(lt_buf_printf(&v, "xmin = %g\nxmax = %g\n", -w / 2, 1.5 * w));
        LT_TRY(lt_plot_range(&v, "y", pmin, pmax));
        LT_TRY(lt_plot_chart(ctx, name, "pct_time", title, v.p, &d, err));
    }
out:
    lt_buf_release(&d);
    lt_buf_release(&v);
    return rc;
}

static int make_dir(const char *dir, struct lt_err *err)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return lt_errset(err, LT_EIO, "cannot create the directory %s: %s", dir, strerror(errno));
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return lt_errset(err, LT_EIO, "%s is not a directory", dir);
    return 0;
}

/* Remove what a temporary chart directory holds, then the directory. */
static void remove_charts(const struct lt_plot_ctx *ctx)
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

int lt_analyze_plots(const struct lt_analysis *a, const char *dir, const char *html_path,
                     struct lt_plot_report *rep, struct lt_err *err)
{
    int rc = 0;
    char tmpdir[] = "/tmp/loadtrace-plots-XXXXXX";
    struct lt_plot_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return lt_errset(err, LT_ENOMEM, "out of memory");
    memset(rep, 0, sizeof *rep);
    ctx->rep = rep;
    ctx->gnuplot = -1;
    if (dir) {
        LT_TRY(make_dir(dir, err));
        ctx->dir = dir;
    } else {
        if (!mkdtemp(tmpdir)) {
            rc = lt_errset(err, LT_EIO, "cannot create a temporary directory: %s", strerror(errno));
            goto out;
        }
        ctx->dir = tmpdir;
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
    CHART(cdf_chart(a, ctx, LT_AM_TTFT, "ttft_cdf", "TTFT distribution", "Time to first token (ms)",
                    err));
    CHART(cdf_chart(a, ctx, LT_AM_E2E, "e2e_cdf", "E2E latency distribution",
                    "End-to-end latency (ms)", err));
    CHART(itl_chart(a, ctx, err));
    uint32_t order[LT_ANALYZE_RUNS_MAX], n = run_order(a, order);
    for (uint32_t k = 0; k < n && k < TS_CHART_RUNS; k++)
        CHART(ts_charts(a, a->runs[order[k]], ctx, err));
    if (n > TS_CHART_RUNS)
        note(rep, "time-series charts were made for the first 16 runs only");
#undef CHART
    if (html_path) {
        FILE *f = fopen(html_path, "w");
        if (!f) {
            rc = lt_errset(err, LT_EIO, "cannot create %s: %s", html_path, strerror(errno));
            goto out;
        }
        char title[600];
        snprintf(title, sizeof title, "loadtrace analyze: %s", a->path);
        int hrc = lt_analyze_write_html(a, title, NULL, ctx, f, err);
        if (fclose(f) != 0 && hrc == 0)
            hrc = lt_errset(err, LT_EIO, "cannot write %s: %s", html_path, strerror(errno));
        if (hrc < 0) {
            rc = hrc;
            goto out;
        }
    }
    rc = first;
out:
    if (ctx->dir == tmpdir)
        remove_charts(ctx);
    free(ctx);
    return rc;
}

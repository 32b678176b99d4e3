/*
 * Charts and the HTML report of an analysis. For every chart, --plots DIR
 * gets the data (NAME.dat, whitespace-separated columns with a commented
 * header), the gnuplot script (NAME.gp: a few `set` lines naming the files,
 * then the template from plots/NAME.gp, which the user may edit and rerun
 * with `gnuplot NAME.gp`) and, when gnuplot is installed, NAME.png and
 * NAME.svg rendered by gnuplot run as a child process. Anything gnuplot
 * writes on stderr is captured and reported as a note (a warning in a
 * template is a bug). The HTML report is one file with the tables and the
 * SVG charts inline.
 */
#ifndef LT_ANALYZE_PLOT_H
#define LT_ANALYZE_PLOT_H

#include "analyze/analyze.h"

#include <stdbool.h>
#include <stdint.h>

#define LT_PLOT_NOTES_MAX 32

/* What happened while rendering: gnuplot found or not, charts written,
 * and notes (gnuplot's stderr, charts skipped for lack of data). */
struct lt_plot_report {
    bool gnuplot_found;
    uint32_t charts;   /* charts whose data and script were written */
    uint32_t rendered; /* of them, rendered to PNG and SVG */
    uint32_t n_notes;
    char notes[LT_PLOT_NOTES_MAX][512];
};
void lt_plot_report_release(struct lt_plot_report *r);

/* Write the charts of an analysis into dir (created if missing) and/or the
 * HTML report to html_path (either may be NULL; with html and no dir, the
 * charts are made in a temporary directory that is removed after). Returns
 * 0, or a negative LT_E* code with err filled when a file cannot be written
 * or gnuplot fails. */
int lt_analyze_plots(const struct lt_analyze *a, const char *dir, const char *html_path,
                     struct lt_plot_report *rep, struct lt_err *err);

/* ---- for analyze/ and compare: one chart at a time ---------------------- */

#define LT_PLOT_CHARTS_MAX 96
#define LT_PLOT_NAME_LEN 64

struct lt_buf;

/* Where charts go and what has been made so far (the HTML report lists the
 * charts in this order). */
struct lt_plot_ctx {
    const char *dir;
    bool temp_dir; /* dir is removed after the HTML is written */
    struct lt_plot_report *rep;
    int gnuplot; /* -1 not tried yet, 0 missing, 1 found */
    /* Set before lt_plot_chart() and copied into the chart's slot: the run
     * a chart belongs to (index into lt_analyze.runs, plus 1; 0: the whole
     * analysis), and whether it has too few points to be worth a figure in
     * the HTML (its files are still written). */
    uint32_t cur_run;
    bool cur_sparse;
    uint32_t n;
    char names[LT_PLOT_CHARTS_MAX][LT_PLOT_NAME_LEN];
    char captions[LT_PLOT_CHARTS_MAX][160];
    bool rendered[LT_PLOT_CHARTS_MAX];
    uint32_t run_of[LT_PLOT_CHARTS_MAX];
    bool sparse[LT_PLOT_CHARTS_MAX];
};

/* Write dir/NAME.dat (data), dir/NAME.gp (vars, then the template tpl) and,
 * with gnuplot, NAME.png and NAME.svg. vars are gnuplot lines (`x = ...`),
 * `data` and `out` are added. A gnuplot failure or warning is a note in
 * ctx->rep and an LT_EIO return. */
int lt_plot_chart(struct lt_plot_ctx *ctx, const char *name, const char *tpl, const char *caption,
                  const char *vars, const struct lt_buf *data, struct lt_err *err);
/* Create the chart directory dir if it is missing; LT_EIO when it cannot
 * be created or is not a directory. */
int lt_plot_make_dir(const char *dir, struct lt_err *err);
/* Remove the charts of ctx (every extension) from ctx->dir, then the
 * directory: the end of a temporary chart directory. */
void lt_plot_remove_charts(const struct lt_plot_ctx *ctx);
/* Append `key = "value"\n` with value quoted for gnuplot. */
int lt_plot_var(struct lt_buf *vars, const char *key, const char *value);
/* Append one data block of a histogram's CDF (value * scale, fraction <=
 * value), ended by two blank lines; values are floored at floor_v (for log
 * axes). Returns 0 or LT_ENOMEM/LT_ELIMIT. */
int lt_plot_cdf_block(struct lt_buf *b, const struct lt_hist *h, double scale, double floor_v);
/* When lo == hi (every value on the axis the same), append `AXISmin = ..`
 * and `AXISmax = ..` (axis "x", "y" or "y2") so the template sets an
 * explicit range instead of gnuplot warning about an empty one. */
int lt_plot_range(struct lt_buf *vars, const char *axis, double lo, double hi);
/* Append `AXISmin = ..` and `AXISmax = ..`: the data's range [lo, hi] with
 * headroom, so that no line lies on the frame. LT_PLOT_ZERO: the axis
 * starts at 0; LT_PLOT_LOG: a log axis (headroom by factors; lo > 0);
 * LT_PLOT_TICKS (with LOG): also `AXISticks = "(1, 2, 5, 10, ...)"` when
 * the range spans less than two decades, where gnuplot would label one
 * decade or none (the templates apply it with eval). */
#define LT_PLOT_ZERO 1
#define LT_PLOT_LOG 2
#define LT_PLOT_TICKS 4
int lt_plot_span(struct lt_buf *vars, const char *axis, double lo, double hi, int flags);
/* A word for gnuplot's word(): spaces and quotes replaced by '_'. */
void lt_plot_word(char *dst, size_t n, const char *src);

/* The HTML report. With an analysis: the title, the summary (a table per
 * level with the knee marked, then the throughput and latency-against-
 * throughput charts), the distributions, then each level's details in a
 * collapsible section (latencies, errors, its charts over time) and the
 * full text report. a may be NULL (compare): the charts of ctx, then
 * pre_text. Charts are the SVGs of ctx inline. */
int lt_analyze_write_html(const struct lt_analyze *a, const char *title, const char *pre_text,
                          const struct lt_plot_ctx *ctx, FILE *out, struct lt_err *err);

/* The gnuplot templates compiled in from plots/ (name without ".gp"), or
 * NULL if there is none by that name. */
const char *lt_plot_template(const char *name);

/* Run gnuplot on script (a path) in directory dir. Returns 0 when it exited
 * 0 and wrote nothing on stderr; LT_EIO otherwise, with its stderr in err.
 * *found tells whether gnuplot could be started at all. */
int lt_plot_run_gnuplot(const char *dir, const char *script, bool *found, struct lt_err *err);

#endif

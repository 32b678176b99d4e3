/*
 * The gnuplot templates of plots/, compiled in (the table is generated at
 * build time by analyze/embed_templates.cmake). Internal to analyze/.
 */
#ifndef LT_PLOT_TEMPLATES_H
#define LT_PLOT_TEMPLATES_H

struct lt_analyze_tpl {
    const char *name; /* file name without ".gp" */
    const char *text;
};

/* Terminated by an entry whose name is NULL. */
extern const struct lt_analyze_tpl lt_analyze_tpls[];

#endif

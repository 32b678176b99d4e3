#include "cli/cli_opts.h"
#include "cli/cli_util.h"

#include <string.h>

static const struct cli_opt help_opt = {"help", 'h', NULL, 'h', "this text"};

static bool optional(const struct cli_opt *o)
{
    return o->arg && o->arg[0] == '[' && o->arg[1] == '='; /* "[=N]", not "[HOST:]PORT" */
}

/* An option with no long name: getopt knows it by its letter only. */
static bool short_only(const struct cli_opt *o)
{
    return !o->name[0] && o->short_name;
}

/* A group's title (CLI_HEADING): no option at all. */
static bool heading(const struct cli_opt *o)
{
    return !o->name[0] && !o->short_name;
}

/* How many options spec has, counted up to one past CLI_OPTS_MAX. */
static size_t count(const struct cli_spec *spec)
{
    size_t n = 0;
    while (spec->opts[n].name && n <= CLI_OPTS_MAX)
        n++;
    return n;
}

size_t cli_opts_longopts(const struct cli_spec *spec, struct option *out)
{
    size_t n = 0, k = 0;
    for (const struct cli_opt *o = spec->opts; o->name && k < CLI_OPTS_MAX; o++, k++) {
        if (!o->name[0])
            continue;
        int has = !o->arg ? no_argument : optional(o) ? optional_argument : required_argument;
        out[n++] = (struct option){o->name, has, NULL, o->id};
    }
    out[n++] = (struct option){help_opt.name, no_argument, NULL, help_opt.id};
    out[n] = (struct option){NULL, 0, NULL, 0};
    return n;
}

/* getopt's string of short options: each letter, with ':' when it takes
 * a value (two when the value is optional). */
static void short_opts(const struct cli_spec *spec, char *out, size_t cap)
{
    size_t n = 0;
    out[n++] = help_opt.short_name;
    for (const struct cli_opt *o = spec->opts; o->name && n + 3 < cap; o++) {
        if (!o->short_name)
            continue;
        out[n++] = o->short_name;
        if (o->arg)
            out[n++] = ':';
        if (optional(o))
            out[n++] = ':';
    }
    out[n] = '\0';
}

static void usage_line(const struct cli_opt *o, int col, FILE *f)
{
    int len = 0;
    if (heading(o)) {
        fprintf(f, "%s\n", o->help);
        return;
    }
    if (short_only(o))
        len = fprintf(f, "  -%c", o->short_name);
    else if (o->short_name)
        len = fprintf(f, "  -%c, --%s", o->short_name, o->name);
    else
        len = fprintf(f, "  --%s", o->name);
    if (o->arg)
        len += fprintf(f, optional(o) ? "%s" : " %s", o->arg);
    fprintf(f, "%*s", len < col ? col - len : 2, "");
    for (const char *s = o->help; *s; s++) {
        fputc(*s, f);
        if (*s == '\n' && s[1] == '\t') {
            fputs("  ", f);
            s++;
        } else if (*s == '\n') {
            fprintf(f, "%*s", col, "");
        }
    }
    fputc('\n', f);
}

void cli_opts_usage(const struct cli_spec *spec, FILE *f)
{
    fputs(spec->synopsis, f);
    for (const struct cli_opt *o = spec->opts; o->name; o++)
        usage_line(o, spec->col, f);
    usage_line(&help_opt, spec->col, f);
    if (spec->epilogue) {
        fputc('\n', f);
        fputs(spec->epilogue, f);
    }
}

int cli_opts_parse(const struct cli_spec *spec, int argc, char **argv, cli_opt_fn fn, void *ud)
{
    struct option lo[CLI_OPTS_MAX + 2];
    char shorts[3 * CLI_OPTS_MAX + 2];
    if (count(spec) > CLI_OPTS_MAX) {
        cli_error(spec->cmd, "has more than %d options: raise CLI_OPTS_MAX", CLI_OPTS_MAX);
        return 1;
    }
    cli_opts_longopts(spec, lo);
    short_opts(spec, shorts, sizeof shorts);
    int c;
    while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
        if (c == help_opt.id) {
            cli_opts_usage(spec, stdout);
            return 0;
        }
        if (c == '?' || c == ':')
            return cli_bad_option(spec->cmd, lo, argv);
        int rc = fn(ud, c, optarg);
        if (rc)
            return rc;
    }
    return -1;
}

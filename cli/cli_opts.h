/*
 * A command's options as one table: each option's name, short alias,
 * value and help lines are written once, in a struct cli_spec, and
 * getopt_long's table, the usage text (`CMD --help`, `loadtrace help CMD`),
 * the shell completions and the "did you mean" of a mistyped option are
 * all made from it, so none of them can name an option the others lack.
 * A command is then its spec, one function that takes one option, and
 * one call:
 *
 *     int rc = cli_opts_parse(&cmd_cat_spec, argc, argv, cat_opt, &o);
 *     if (rc >= 0)
 *         return rc;          (--help printed: 0; a usage error: 2)
 *     ... argv[optind..] are the operands ...
 */
#ifndef LT_CLI_OPTS_H
#define LT_CLI_OPTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* One option. -h/--help is every command's and is not written here. */
struct cli_opt {
    const char *name; /* the long name, without "--"; "" for an option that has
                         only its short alias (sim's -o) */
    char short_name;  /* its one-letter alias ('o' for -o), 0 for none */
    const char *arg;  /* the value's word in the usage ("FILE"), NULL: it takes none;
                         "[=N]": the value may be left out (--opt or --opt=N) */
    int id;           /* what the command's option function is given: the short
                         letter when there is one, else any number the command
                         chooses (a letter, or an enum from 256); never 'h', '?'
                         or ':', which getopt and --help keep */
    const char *help; /* its help; each "\n" starts a line under the first,
                         or, when a tab follows it, at the options' indent
                         (another form of the option: "\t--to jsonl  ...") */
};

/* A row of the table that is no option but the title of the group of
 * options below it in the usage ("arrivals:"), at the margin. */
#define CLI_HEADING(title)                                                                         \
    {                                                                                              \
        "", 0, NULL, 0, title                                                                      \
    }

/* A heading after a blank line ("Load:"), for a usage of many groups. */
#define CLI_SECTION(title) CLI_HEADING("\n" title)

/* A command's options and the text around them in its usage. */
struct cli_spec {
    const char *cmd;            /* "cat": for its error lines */
    const char *synopsis;       /* the usage up to the options (its "usage:" lines,
                                   what it does, a blank line) */
    const struct cli_opt *opts; /* ended by {0} */
    int col;                    /* the column the help text starts in */
    const char *epilogue;       /* after the options (a blank line first), or NULL */
};

/* The most options a spec may have (replay, the largest, has 60); a spec
 * with more is refused by cli_opts_parse, never cut short. */
#define CLI_OPTS_MAX 160

/* getopt_long's table of spec (with --help, ended by a zero entry) into
 * out, which has room for CLI_OPTS_MAX + 2 entries. Returns the count of
 * options, the end entry not counted. */
size_t cli_opts_longopts(const struct cli_spec *spec, struct option *out);

/* Print spec's usage text to f. */
void cli_opts_usage(const struct cli_spec *spec, FILE *f);

/* An option of spec has been read: id and its value (NULL when it takes
 * none, or an optional one was left out). Returns 0 to go on, or the exit
 * status to stop with (2 after printing why the value is wrong). */
typedef int (*cli_opt_fn)(void *ud, int id, char *arg);

/* Read argv's options by spec with getopt_long, calling fn for each.
 * Returns -1 when every option was read (argv[optind..] are the operands);
 * 0 after printing the usage for -h/--help; 2 after a usage error, said in
 * one line (cli_bad_option: needs a value, ambiguous, did you mean); or
 * fn's nonzero status. */
int cli_opts_parse(const struct cli_spec *spec, int argc, char **argv, cli_opt_fn fn, void *ud);

#endif

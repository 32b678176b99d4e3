/*
 * Paths a command writes, checked before anything is written: no command
 * overwrites its own input (the same file by device and inode, whatever
 * name it is given under), and a report overwrites only a report.
 */
#ifndef LT_PATH_H
#define LT_PATH_H

#include "base/lt_err.h"

#include <stdbool.h>
#include <stddef.h>

/* True when a and b both exist and are the same file. */
bool lt_path_same(const char *a, const char *b);

/* 0 when out ("-": standard output) is none of the n inputs; LT_EINVAL with
 * an error naming both otherwise. */
int lt_path_not_input(const char *out, const char *const *inputs, size_t n, struct lt_err *err);

/* 0 when out may be (over)written with an HTML report: it does not exist, is
 * empty, or is an HTML file; LT_EINVAL otherwise (a results file named as
 * the report by mistake, say). */
int lt_path_html_ok(const char *out, struct lt_err *err);

/* 0 when dir may take a command's charts (--plots DIR): it does not exist
 * yet, or is a directory; LT_EINVAL otherwise (a results file named there
 * by mistake, say), before anything is written. */
int lt_path_dir_ok(const char *dir, struct lt_err *err);

/* Create a new private directory $TMPDIR/NAME-XXXXXX (TMPDIR unset: /tmp)
 * and write its path to buf. Returns 0, or LT_EIO with err filled. */
int lt_path_tempdir(char *buf, size_t size, const char *name, struct lt_err *err);

#endif

/*
 * Paths a command writes, checked before anything is written: no command
 * overwrites its own input (the same file by device and inode, whatever
 * name it is given under), and a report overwrites only a report; and the
 * writing of a file in full or not at all (lt_path_out).
 */
#ifndef LT_PATH_H
#define LT_PATH_H

#include "base/lt_err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* True when a and b both exist and are the same file. */
bool lt_path_same(const char *a, const char *b);

/* 0 when out ("-": standard output) is none of the n inputs; LT_EINVAL with
 * an error naming both otherwise. */
int lt_path_not_input(const char *out, const char *const *inputs, size_t n, struct lt_err *err);

/* 0 when out may be (over)written with an HTML report: it does not exist, is
 * empty, or is a report loadtrace wrote (its head names loadtrace as the
 * generator, or its end says "Made by loadtrace"); LT_EINVAL otherwise (a
 * results file named as the report by mistake, or a page of the user's). */
int lt_path_html_ok(const char *out, struct lt_err *err);

/* The file that marks a directory of charts loadtrace made (--plots DIR):
 * in such a directory, charts of the same names are replaced. */
#define LT_PATH_CHARTS_MARK ".loadtrace-charts"

/* 0 when dir may take a command's charts (--plots DIR): it does not exist
 * yet, is empty, or holds LT_PATH_CHARTS_MARK (loadtrace made it);
 * LT_EINVAL otherwise, before anything is written: a results file named
 * there by mistake, or a directory of the user's own files, which charts of
 * the same names would overwrite. */
int lt_path_dir_ok(const char *dir, struct lt_err *err);

/* 0 when out may be (over)written with a CSV output whose first line
 * starts with header: it does not exist, is empty, or is such a CSV file
 * (written by the same option before); LT_EINVAL otherwise. */
int lt_path_csv_ok(const char *out, const char *header, struct lt_err *err);

/* An output written in full or not at all: the bytes go to a new file
 * beside path (the same directory, so the rename is atomic), which commit
 * renames over path; abort, or a failed commit, removes it and path is as
 * it was. A path that is a symbolic link keeps it: the file it names is
 * replaced. The new file takes the old one's permissions. Not for "-" or
 * for paths that are not regular files. */
struct lt_path_out {
    FILE *f;
    const char *path;
    char target[4096]; /* path, or the file a symbolic link path names */
    char tmp[4096];
};
/* Open o->f for path. Returns 0, or LT_EIO with err filled. */
int lt_path_out_begin(struct lt_path_out *o, const char *path, struct lt_err *err);
/* Close o->f and put the file in place of path. Returns 0, or LT_EIO (the
 * new file removed, path untouched). */
int lt_path_out_commit(struct lt_path_out *o, struct lt_err *err);
/* Close and remove the new file; path untouched. A no-op after commit. */
void lt_path_out_abort(struct lt_path_out *o);

/* Create a new private directory $TMPDIR/NAME-XXXXXX (TMPDIR unset: /tmp)
 * and write its path to buf. Returns 0, or LT_EIO with err filled. */
int lt_path_tempdir(char *buf, size_t size, const char *name, struct lt_err *err);

#endif

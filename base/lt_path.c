/*
 * Output paths checked against inputs and against what they hold (see
 * lt_path.h). Only stat and a peek at the first bytes: nothing is opened
 * for writing here.
 */
#include "base/lt_path.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

bool lt_path_same(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

int lt_path_not_input(const char *out, const char *const *inputs, size_t n, struct lt_err *err)
{
    if (!out || !strcmp(out, "-"))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (inputs[i] && strcmp(inputs[i], "-") && lt_path_same(out, inputs[i]))
            return lt_errset(err, LT_EINVAL,
                             "%s: the output is the input file %s; nothing was written", out,
                             inputs[i]);
    return 0;
}

int lt_path_dir_ok(const char *dir, struct lt_err *err)
{
    struct stat st;
    if (stat(dir, &st) != 0 || S_ISDIR(st.st_mode))
        return 0;
    return lt_errset(err, LT_EINVAL, "%s exists and is not a directory; nothing was written", dir);
}

int lt_path_tempdir(char *buf, size_t size, const char *name, struct lt_err *err)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    int n = snprintf(buf, size, "%s/%s-XXXXXX", dir, name);
    if (n < 0 || (size_t)n >= size)
        return lt_errset(err, LT_EIO, "the temporary directory's name is too long: %s", dir);
    if (!mkdtemp(buf))
        return lt_errset(err, LT_EIO, "cannot create a temporary directory in %s: %s", dir,
                         strerror(errno));
    return 0;
}

int lt_path_html_ok(const char *out, struct lt_err *err)
{
    struct stat st;
    if (stat(out, &st) != 0 || (S_ISREG(st.st_mode) && st.st_size == 0))
        return 0;
    if (!S_ISREG(st.st_mode))
        return lt_errset(err, LT_EINVAL, "%s exists and is not a regular file", out);
    char head[64] = {0};
    FILE *f = fopen(out, "rb");
    size_t n = f ? fread(head, 1, sizeof head - 1, f) : 0;
    if (f)
        fclose(f);
    size_t i = 0;
    if (n >= 3 && !memcmp(head, "\xef\xbb\xbf", 3))
        i = 3;
    while (i < n && isspace((unsigned char)head[i]))
        i++;
    if (!strncasecmp(head + i, "<!doctype html", 14) || !strncasecmp(head + i, "<html", 5))
        return 0;
    return lt_errset(err, LT_EINVAL,
                     "%s exists and is not an HTML file; a report overwrites only a report "
                     "(choose another name); nothing was written",
                     out);
}

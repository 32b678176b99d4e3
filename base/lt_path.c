/*
 * Output paths checked against inputs and against what they hold (see
 * lt_path.h): only stat, a directory listing and a peek at the first
 * bytes. The one writer here, lt_path_out, writes a new file and renames
 * it into place, so a failure leaves the old file whole.
 */
#include "base/lt_path.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

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
    if (stat(dir, &st) != 0)
        return 0;
    if (!S_ISDIR(st.st_mode))
        return lt_errset(err, LT_EINVAL, "%s exists and is not a directory; nothing was written",
                         dir);
    DIR *d = opendir(dir);
    if (!d)
        return lt_errset(err, LT_EINVAL, "%s: cannot read the directory: %s", dir, strerror(errno));
    char other[256] = "";
    bool marked = false;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (!strcmp(e->d_name, LT_PATH_CHARTS_MARK))
            marked = true;
        else if (!other[0])
            snprintf(other, sizeof other, "%s", e->d_name);
    }
    closedir(d);
    if (marked || !other[0])
        return 0;
    return lt_errset(err, LT_EINVAL,
                     "%s holds files loadtrace did not write (%s, ...), which charts of the same "
                     "names would overwrite: name a new or empty directory, or one loadtrace "
                     "made (it holds " LT_PATH_CHARTS_MARK "); nothing was written",
                     dir, other);
}

int lt_path_csv_ok(const char *out, const char *header, struct lt_err *err)
{
    struct stat st;
    if (stat(out, &st) != 0 || (S_ISREG(st.st_mode) && st.st_size == 0))
        return 0;
    if (!S_ISREG(st.st_mode))
        return lt_errset(err, LT_EINVAL, "%s exists and is not a regular file", out);
    char head[256] = {0};
    size_t want = strlen(header) < sizeof head - 1 ? strlen(header) : sizeof head - 1;
    FILE *f = fopen(out, "rb");
    size_t n = f ? fread(head, 1, want, f) : 0;
    if (f)
        fclose(f);
    if (n == want && !memcmp(head, header, want))
        return 0;
    return lt_errset(err, LT_EINVAL,
                     "%s exists and is not a CSV file this option wrote (its first line does not "
                     "start with \"%.40s\"); choose another name; nothing was written",
                     out, header);
}

int lt_path_out_begin(struct lt_path_out *o, const char *path, struct lt_err *err)
{
    static unsigned serial;
    o->path = path;
    o->f = NULL;
    /* A link (a report published through one, say) stays a link: what it
     * names is replaced, not the link by a file. */
    struct stat st;
    int n = snprintf(o->target, sizeof o->target, "%s", path);
    if (n < 0 || (size_t)n >= sizeof o->target)
        return lt_errset(err, LT_EIO, "%s: the name is too long", path);
    for (int hops = 0; lstat(o->target, &st) == 0 && S_ISLNK(st.st_mode); hops++) {
        char to[4096], next[4096];
        ssize_t k = readlink(o->target, to, sizeof to - 1);
        if (hops == 40 || k < 0 || (size_t)k >= sizeof to - 1)
            return lt_errset(err, LT_EIO, "%s: cannot follow the link", path);
        to[k] = '\0';
        /* a relative link is relative to the link's own directory */
        const char *slash = strrchr(o->target, '/');
        if (to[0] == '/' || !slash)
            n = snprintf(next, sizeof next, "%s", to);
        else
            n = snprintf(next, sizeof next, "%.*s/%s", (int)(slash - o->target), o->target, to);
        if (n < 0 || (size_t)n >= sizeof next)
            return lt_errset(err, LT_EIO, "%s: the name is too long", path);
        memcpy(o->target, next, (size_t)n + 1);
    }
    bool had = stat(o->target, &st) == 0 && S_ISREG(st.st_mode);
    for (int tries = 0; tries < 100; tries++) {
        n = snprintf(o->tmp, sizeof o->tmp, "%s.tmp-%ld-%u", o->target, (long)getpid(), serial++);
        if (n < 0 || (size_t)n >= sizeof o->tmp)
            return lt_errset(err, LT_EIO, "%s: the name is too long", path);
        /* 0666 less the umask, as the file fopen would have made; or the
         * permissions of the file it replaces (a private report stays so). */
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0)
            return lt_errset(err, LT_EIO, "cannot create %s: %s", o->tmp, strerror(errno));
        if (had && fchmod(fd, st.st_mode & 07777) != 0) {
            int e = errno;
            close(fd);
            unlink(o->tmp);
            return lt_errset(err, LT_EIO, "cannot set the permissions of %s: %s", o->tmp,
                             strerror(e));
        }
        o->f = fdopen(fd, "w");
        if (!o->f) {
            close(fd);
            unlink(o->tmp);
            return lt_errset(err, LT_EIO, "cannot create %s: %s", o->tmp, strerror(errno));
        }
        return 0;
    }
    return lt_errset(err, LT_EIO, "cannot create a new file beside %s", path);
}

int lt_path_out_commit(struct lt_path_out *o, struct lt_err *err)
{
    if (!o->f)
        return lt_errset(err, LT_EIO, "%s: nothing to write", o->path);
    int bad = ferror(o->f) | (fflush(o->f) != 0);
    int e = errno;
    bad |= fclose(o->f) != 0;
    o->f = NULL;
    if (!bad && rename(o->tmp, o->target) == 0)
        return 0;
    if (!bad)
        e = errno;
    unlink(o->tmp);
    return lt_errset(err, LT_EIO, "cannot write %s: %s; it is as it was", o->path, strerror(e));
}

void lt_path_out_abort(struct lt_path_out *o)
{
    if (!o->f)
        return;
    fclose(o->f);
    o->f = NULL;
    unlink(o->tmp);
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

/* Does p[0..n) hold the string s? (memmem is not POSIX.) */
static bool holds(const char *p, size_t n, const char *s)
{
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (p[i] == s[0] && !memcmp(p + i, s, k))
            return true;
    return false;
}

/* Does the file f (HTML) say loadtrace wrote it? Its head names loadtrace
 * as the generator, or (reports before that tag) its last line says "Made
 * by loadtrace". */
static bool by_loadtrace(FILE *f, const char *head, size_t n)
{
    if (holds(head, n, "<meta name=\"generator\" content=\"loadtrace"))
        return true;
    char tail[1024];
    if (fseek(f, -(long)sizeof tail, SEEK_END) != 0 && fseek(f, 0, SEEK_SET) != 0)
        return false;
    size_t k = fread(tail, 1, sizeof tail, f);
    return holds(tail, k, "Made by loadtrace");
}

int lt_path_html_ok(const char *out, struct lt_err *err)
{
    struct stat st;
    if (stat(out, &st) != 0 || (S_ISREG(st.st_mode) && st.st_size == 0))
        return 0;
    if (!S_ISREG(st.st_mode))
        return lt_errset(err, LT_EINVAL, "%s exists and is not a regular file", out);
    char head[1024] = {0};
    FILE *f = fopen(out, "rb");
    size_t n = f ? fread(head, 1, sizeof head - 1, f) : 0;
    size_t i = 0;
    if (n >= 3 && !memcmp(head, "\xef\xbb\xbf", 3))
        i = 3;
    while (i < n && isspace((unsigned char)head[i]))
        i++;
    bool html = !strncasecmp(head + i, "<!doctype html", 14) || !strncasecmp(head + i, "<html", 5);
    bool ours = html && f && by_loadtrace(f, head, n);
    if (f)
        fclose(f);
    if (ours)
        return 0;
    if (html)
        return lt_errset(err, LT_EINVAL,
                         "%s is an HTML file loadtrace did not write; a report overwrites only a "
                         "report (choose another name); nothing was written",
                         out);
    return lt_errset(err, LT_EINVAL,
                     "%s exists and is not an HTML file; a report overwrites only a report "
                     "(choose another name); nothing was written",
                     out);
}

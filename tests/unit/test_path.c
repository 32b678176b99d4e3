/*
 * Unit tests of lt_path: which existing files and directories an output may
 * replace (a report only a report, charts only into a directory loadtrace
 * made or an empty one, a CSV only its own CSV), and lt_path_out's whole or
 * nothing: what a failed or abandoned write leaves (the old file, byte for
 * byte, and no temporary file), which a command's test cannot make happen.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/lt_path.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static int setup(void **state)
{
    (void)state;
    struct lt_err err = {0};
    return lt_path_tempdir(dir, sizeof dir, "lt-test-path", &err);
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *at(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static char *get(const char *path)
{
    static char buf[4096];
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Entries of d other than . and .. */
static int entries(const char *d)
{
    DIR *dp = opendir(d);
    assert_non_null(dp);
    int n = 0;
    for (struct dirent *e; (e = readdir(dp));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(dp);
    return n;
}

static void test_html_ok(void **state)
{
    (void)state;
    struct lt_err err = {0};
    assert_int_equal(lt_path_html_ok(at("none.html"), &err), 0);
    put(at("empty.html"), "");
    assert_int_equal(lt_path_html_ok(at("empty.html"), &err), 0);
    put(at("new.html"), "<!DOCTYPE html>\n<html><head><meta name=\"generator\" content=\"loadtrace "
                        "0.2\">\n<title>x</title></head><body></body></html>\n");
    assert_int_equal(lt_path_html_ok(at("new.html"), &err), 0);
    put(at("old.html"), "\xef\xbb\xbf  <html><body><p><small>Made by loadtrace 0.1.0.</small></p>\n"
                        "</body></html>\n");
    assert_int_equal(lt_path_html_ok(at("old.html"), &err), 0);
    put(at("mine.html"), "<!DOCTYPE html><html><body>our page</body></html>\n");
    assert_int_equal(lt_path_html_ok(at("mine.html"), &err), LT_EINVAL);
    assert_non_null(strstr(err.msg, "is an HTML file loadtrace did not write"));
    put(at("r.lt.zst"), "\x28\xb5\x2f\xfd binary");
    assert_int_equal(lt_path_html_ok(at("r.lt.zst"), &err), LT_EINVAL);
    assert_non_null(strstr(err.msg, "is not an HTML file"));
    assert_int_equal(lt_path_html_ok(dir, &err), LT_EINVAL);
    assert_non_null(strstr(err.msg, "is not a regular file"));
}

static void test_csv_ok(void **state)
{
    (void)state;
    struct lt_err err = {0};
    assert_int_equal(lt_path_csv_ok(at("none.csv"), "file,run,t_s,", &err), 0);
    put(at("s.csv"), "file,run,t_s,running\n");
    assert_int_equal(lt_path_csv_ok(at("s.csv"), "file,run,t_s,", &err), 0);
    put(at("t.csv"), "C,tok/s\n");
    assert_int_equal(lt_path_csv_ok(at("t.csv"), "file,run,t_s,", &err), LT_EINVAL);
    assert_non_null(strstr(err.msg, "is not a CSV file this option wrote"));
    put(at("short.csv"), "file");
    assert_int_equal(lt_path_csv_ok(at("short.csv"), "file,run,t_s,", &err), LT_EINVAL);
}

static void test_dir_ok(void **state)
{
    (void)state;
    struct lt_err err = {0};
    assert_int_equal(lt_path_dir_ok(at("nodir"), &err), 0);
    assert_int_equal(mkdir(at("d"), 0777), 0);
    assert_int_equal(lt_path_dir_ok(at("d"), &err), 0); /* empty */
    put(at("d/throughput.gp"), "mine\n");
    assert_int_equal(lt_path_dir_ok(at("d"), &err), LT_EINVAL);
    assert_non_null(strstr(err.msg, "holds files loadtrace did not write (throughput.gp, ...)"));
    put(at("d/" LT_PATH_CHARTS_MARK), "charts\n");
    assert_int_equal(lt_path_dir_ok(at("d"), &err), 0);
    put(at("f"), "x");
    assert_int_equal(lt_path_dir_ok(at("f"), &err), LT_EINVAL);
    assert_non_null(strstr(err.msg, "exists and is not a directory"));
}

static void test_out(void **state)
{
    (void)state;
    struct lt_err err = {0};
    assert_int_equal(mkdir(at("o"), 0777), 0);
    put(at("o/r.html"), "old\n");
    assert_int_equal(chmod(at("o/r.html"), 0640), 0);
    struct stat before, after;
    assert_int_equal(stat(at("o/r.html"), &before), 0);

    /* abandoned: the old file as it was, nothing else in the directory */
    struct lt_path_out o;
    assert_int_equal(lt_path_out_begin(&o, at("o/r.html"), &err), 0);
    fputs("half of a new one", o.f);
    lt_path_out_abort(&o);
    lt_path_out_abort(&o); /* twice: a no-op */
    assert_string_equal(get(at("o/r.html")), "old\n");
    assert_int_equal(entries(at("o")), 1);

    /* committed: a new file in its place, with the old one's permissions */
    assert_int_equal(lt_path_out_begin(&o, at("o/r.html"), &err), 0);
    fputs("new\n", o.f);
    assert_int_equal(lt_path_out_commit(&o, &err), 0);
    assert_string_equal(get(at("o/r.html")), "new\n");
    assert_int_equal(stat(at("o/r.html"), &after), 0);
    assert_true(after.st_ino != before.st_ino);
    assert_int_equal(after.st_mode & 0777, 0640);
    assert_int_equal(entries(at("o")), 1);

    /* a rename that fails (a directory in the way): reported, the new file
     * removed, the directory untouched */
    assert_int_equal(mkdir(at("o/sub"), 0777), 0);
    put(at("o/sub/keep"), "k");
    assert_int_equal(lt_path_out_begin(&o, at("o/sub"), &err), 0);
    fputs("x", o.f);
    assert_int_equal(lt_path_out_commit(&o, &err), LT_EIO);
    assert_non_null(strstr(err.msg, "it is as it was"));
    assert_int_equal(entries(at("o")), 2);
    assert_string_equal(get(at("o/sub/keep")), "k");

    /* through a link: the link stays, the file it names is replaced */
    assert_int_equal(symlink("r.html", at("o/link.html")), 0);
    assert_int_equal(lt_path_out_begin(&o, at("o/link.html"), &err), 0);
    fputs("linked\n", o.f);
    assert_int_equal(lt_path_out_commit(&o, &err), 0);
    struct stat ls;
    assert_int_equal(lstat(at("o/link.html"), &ls), 0);
    assert_true(S_ISLNK(ls.st_mode));
    assert_string_equal(get(at("o/r.html")), "linked\n");
    assert_int_equal(entries(at("o")), 3);

    /* a directory that cannot be written in: an error, nothing changed */
    assert_int_equal(lt_path_out_begin(&o, at("nosuch/r.html"), &err), LT_EIO);
    assert_non_null(strstr(err.msg, "cannot create"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_html_ok),
        cmocka_unit_test(test_csv_ok),
        cmocka_unit_test(test_dir_ok),
        cmocka_unit_test(test_out),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
